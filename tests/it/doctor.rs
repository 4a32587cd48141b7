//! `candor doctor`: what a session in a directory would load, checked over
//! fixture homes, as text and as JSON (`protocol/doctor.md`).

use std::path::Path;

use serde_json::{Value, json};

use crate::support::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs `candor doctor` for the test project; (exit code, JSON, text).
fn doctor(env: &TestEnv, extra: &[(&str, &str)]) -> (i32, Value, String) {
    let script = env.dir.path().join("doctor-script.json");
    std::fs::write(&script, json!({"responses": []}).to_string()).unwrap();
    let run = |json: bool| {
        #[allow(clippy::disallowed_methods)] // the test runs the binary under test
        let mut cmd = std::process::Command::new(candor_bin());
        cmd.arg("doctor")
            .arg("--cwd")
            .arg(&env.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", env.dir.path())
            .env("CANDOR_HOME", &env.home)
            .env("CANDOR_CLAUDE_MANAGED_DIR", env.dir.path().join("managed"))
            .env("CANDOR_PROVIDER", "scripted")
            .env("CANDOR_SCRIPT", &script)
            .env("RUST_LOG", "off");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let out = run(true);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let text = String::from_utf8(run(false).stdout).unwrap();
    (out.status.code().unwrap(), report, text)
}

fn file<'a>(report: &'a Value, tool: &str, source: &str) -> &'a Value {
    report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["tool"] == tool && f["source"] == source)
        .unwrap_or_else(|| panic!("no {tool} {source} in {report}"))
}

#[test]
fn a_clean_setup_is_not_broken_and_says_where_things_are() {
    let env = TestEnv::new();
    let (code, report, text) = doctor(&env, &[]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(report["format"], 1);
    assert_eq!(report["provider"]["name"], "scripted");
    assert_eq!(report["trust"]["state"], "not needed");
    assert_eq!(report["mode"], "default");
    assert_eq!(
        report["candor"]["sessions"],
        json!(env.home.join("sessions"))
    );
    assert_eq!(file(&report, "Claude Code", "user")["status"], "missing");
    assert!(text.contains("Nothing is broken."), "{text}");
}

#[test]
fn a_broken_settings_file_is_an_error_with_its_line_and_column() {
    let env = TestEnv::new();
    write(
        &env.dir.path().join(".claude/settings.json"),
        "{\n  \"hooks\": {,\n}\n",
    );
    let (code, report, text) = doctor(&env, &[]);
    assert_eq!(code, 1, "{text}");
    let user = file(&report, "Claude Code", "user");
    assert_eq!(user["status"], "error");
    let detail = user["detail"].as_str().unwrap();
    assert!(detail.contains("line 2, column 13"), "{detail}");
    assert!(text.contains("Something above is broken."), "{text}");
}

#[test]
fn an_untrusted_project_lists_what_it_wants_and_what_waits() {
    let env = TestEnv::new();
    write(
        &env.project.join(".claude/settings.json"),
        &json!({"permissions": {"allow": ["Bash"], "deny": ["Read(.env)"]},
                "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}})
        .to_string(),
    );
    let (code, report, text) = doctor(&env, &[]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(report["trust"]["state"], "untrusted");
    let wants = report["trust"]["wants"].to_string();
    assert!(
        wants.contains("allow rule: Bash") && wants.contains("./guard.sh"),
        "{wants}"
    );
    assert!(
        file(&report, "Claude Code", "project")["detail"]
            .as_str()
            .unwrap()
            .contains("not trusted"),
        "{report}"
    );
    // What restricts applies already; what loosens waits.
    let rules = report["rules"].to_string();
    assert!(
        rules.contains("Read(.env)") && !rules.contains("\"Bash\""),
        "{rules}"
    );
    assert!(report["hooks"].as_array().unwrap().is_empty());
    assert!(text.contains("withheld: allow rule: Bash"), "{text}");
    // Trusted in Claude Code: applied.
    env.trust_project();
    let (_, report, _) = doctor(&env, &[]);
    assert_eq!(report["trust"]["state"], "trusted");
    assert!(
        report["trust"]["by"]
            .as_str()
            .unwrap()
            .contains("Claude Code")
    );
    assert_eq!(report["hooks"][0]["command"], "./guard.sh");
    assert_eq!(report["hooks"][0]["matchers"], json!(["Bash"]));
}

#[test]
fn a_disabled_bridge_and_a_hook_that_matches_nothing_are_said() {
    let env = TestEnv::new();
    write(
        &env.dir.path().join(".claude/settings.json"),
        &json!({"hooks": {"PreToolUse": [
            {"matcher": "NotebookEdit", "hooks": [{"type": "command", "command": "./fetch-guard.sh"}]},
            {"matcher": "mcp__github__.*", "hooks": [{"type": "command", "command": "./gh.sh"}]},
            {"matcher": "Edit|MultiEdit", "hooks": [{"type": "command", "command": "./fmt.sh"}]}
        ]}})
        .to_string(),
    );
    let (_, report, text) = doctor(&env, &[]);
    let hooks = report["hooks"].as_array().unwrap();
    let warning = |cmd: &str| {
        hooks
            .iter()
            .find(|h| h["command"] == cmd)
            .unwrap()
            .get("warning")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    assert!(
        warning("./fetch-guard.sh")
            .unwrap()
            .contains("none of candor's tools")
    );
    assert!(warning("./gh.sh").unwrap().contains("MCP"));
    assert_eq!(warning("./fmt.sh"), None);
    assert!(text.contains("warning: its matcher matches none"), "{text}");
    let (_, report, _) = doctor(&env, &[("CANDOR_CLAUDE_HOOKS", "0")]);
    let claude = file(&report, "Claude Code", "all");
    assert_eq!(claude["status"], "skipped");
    assert!(
        claude["detail"]
            .as_str()
            .unwrap()
            .contains("CANDOR_CLAUDE_HOOKS=0")
    );
    assert!(report["hooks"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn slash_doctor_shows_the_same_in_the_editor() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("unused")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "/doctor").await;
    let shown = &conn.thread(&session).agent_text;
    assert!(
        shown.contains("Settings files") && shown.contains("Project trust"),
        "{shown}"
    );
    assert!(conn.env.model_requests().is_empty(), "the model was asked");
}

#[test]
fn mcp_servers_and_instruction_files_are_listed() {
    let env = TestEnv::new();
    write(
        &env.dir.path().join(".claude.json"),
        &json!({"mcpServers": {"docs": {"command": "docs-server", "args": ["--stdio"]}}})
            .to_string(),
    );
    env.file("AGENTS.md", "Run the tests.\n");
    env.file("CLAUDE.md", "See @docs/style.md and @../outside.md\n");
    env.file("docs/style.md", "Tabs.\n");
    std::fs::write(env.dir.path().join("outside.md"), "x\n").unwrap();
    let (code, report, text) = doctor(&env, &[]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(report["mcpServers"][0]["name"], "docs", "{report}");
    let transport = report["mcpServers"][0]["transport"].as_str().unwrap();
    assert_eq!(transport, "stdio: docs-server --stdio");
    let paths: Vec<&str> = report["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert!(paths[0].ends_with("/AGENTS.md"), "{paths:?}");
    assert!(paths[1].ends_with("/CLAUDE.md"), "{paths:?}");
    assert!(paths[2].ends_with("/docs/style.md"), "{paths:?}");
    assert!(
        report["instructionNotes"]
            .to_string()
            .contains("outside the project"),
        "{report}"
    );
    assert!(
        text.contains("docs: stdio: docs-server --stdio (from "),
        "{text}"
    );
    assert!(
        text.contains("docs/style.md (6 bytes, imported by "),
        "{text}"
    );
}

#[test]
fn a_local_server_needs_no_key_and_the_user_config_is_listed() {
    // OPENAI_BASE_URL alone, at a server on this machine, and no key:
    // prompts work, so nothing is broken.
    let env = TestEnv::new();
    let local = [
        ("CANDOR_PROVIDER", ""),
        ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
    ];
    let (code, report, text) = doctor(&env, &local);
    assert_eq!(code, 0, "{text}");
    assert_eq!(report["provider"]["name"], "openai");
    assert_eq!(report["provider"]["keyPresent"], false);
    assert_eq!(report["provider"]["keyNeeded"], false);
    assert_eq!(report["provider"]["problem"], Value::Null);
    assert!(
        text.contains("$OPENAI_API_KEY (not set: a local server needs none)"),
        "{text}"
    );
    assert!(text.contains("Nothing is broken."), "{text}");
    // A server elsewhere does want one.
    let remote = [
        ("CANDOR_PROVIDER", ""),
        ("OPENAI_BASE_URL", "https://openrouter.example/api/v1"),
    ];
    let (code, report, _) = doctor(&env, &remote);
    assert_eq!(code, 1);
    assert_eq!(report["provider"]["keyNeeded"], true);
    assert!(
        report["provider"]["problem"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY is not set")
    );

    // The user's config.toml is listed among the settings files: missing,
    // then loaded once it sets the provider (and the endpoint: no key).
    let user_file = env.dir.path().join(".config/candor/config.toml");
    let (_, report, _) = doctor(&env, &[]);
    assert_eq!(file(&report, "candor", "user")["status"], "missing");
    assert_eq!(file(&report, "candor", "user")["path"], json!(user_file));
    write(
        &user_file,
        "provider = \"openai\"\nopenai_base_url = \"http://localhost:8080/v1\"\n",
    );
    let (code, report, text) = doctor(&env, &[("CANDOR_PROVIDER", "")]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(file(&report, "candor", "user")["status"], "loaded");
    assert_eq!(report["provider"]["name"], "openai");
    assert!(
        text.contains(&format!("loaded   candor user {}", user_file.display())),
        "{text}"
    );
}

/// What `candor __sandbox --probe` says of this kernel (without the build
/// the answering binary names, which is not the kernel's).
#[allow(clippy::disallowed_methods)] // the probe of the binary under test
fn kernel() -> Value {
    let out = std::process::Command::new(candor_bin())
        .args(["__sandbox", "--probe"])
        .output()
        .unwrap();
    let mut answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let build = answer.as_object_mut().unwrap().remove("build");
    assert_eq!(build, Some(json!(candor::sandbox::launcher::BUILD)));
    answer
}

#[test]
fn doctor_says_what_the_kernel_gives_and_what_a_command_runs_in() {
    let env = TestEnv::new();
    let (code, report, text) = doctor(&env, &[]);
    assert_eq!(code, 0, "{text}");
    let sandbox = &report["sandbox"];
    // The kernel as the launcher's probe finds it.
    assert_eq!(sandbox["kernel"], kernel(), "{sandbox}");
    let abi = sandbox["kernel"]["landlockAbi"].as_u64().unwrap();
    assert!(
        abi >= 6 && sandbox["kernel"]["userNamespace"] == true,
        "this kernel lacks what the sandbox needs (Landlock ABI 6+, user namespaces): {sandbox}"
    );
    assert!(
        sandbox["kernelSummary"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "Landlock ABI {abi}, user, mount, PID, network namespaces"
            )),
        "{sandbox}"
    );
    assert_eq!(sandbox["preset"], "workspace-write");
    assert_eq!(sandbox["network"], "off");
    assert_eq!(sandbox["boundary"]["enforced"]["kind"], "confined");
    // HOME is the test's directory, so the project is `~/project`.
    let line =
        "sandbox: writes to ~/project and $TMPDIR only, network off, processes end with the call";
    assert_eq!(sandbox["runsWith"], line, "{sandbox}");
    assert!(
        text.contains("\nSandbox\n  kernel    Landlock ABI"),
        "{text}"
    );
    assert!(text.contains(&format!("  commands  {line}")), "{text}");
    assert!(text.contains("  - not held: reads:"), "{text}");
    // The lean launcher built beside candor launches its commands.
    let lean = Path::new(candor_bin()).with_file_name("candor-sandbox");
    assert_eq!(sandbox["launcher"], lean.display().to_string(), "{sandbox}");
    assert!(
        text.contains(&format!("  launcher  {}\n", lean.display())),
        "{text}"
    );

    // The settings change what a command runs in, and doctor says so.
    write(
        &env.dir.path().join(".config/candor/config.toml"),
        "[sandbox]\nmode = \"read-only\"\nnetwork = \"allowlist\"\nallowed_domains = [\"github.com\"]\n",
    );
    let (_, report, text) = doctor(&env, &[]);
    let sandbox = &report["sandbox"];
    assert_eq!(sandbox["preset"], "read-only");
    assert_eq!(sandbox["allowedDomains"], json!(["github.com"]));
    assert!(
        sandbox["runsWith"]
            .as_str()
            .unwrap()
            .starts_with("sandbox: writes to $TMPDIR only, network only to github.com"),
        "{sandbox}"
    );
    assert!(
        text.contains("settings  read-only, network only to github.com"),
        "{text}"
    );
    write(
        &env.dir.path().join(".config/candor/config.toml"),
        "[sandbox]\nmode = \"full-access\"\n",
    );
    let (_, report, _) = doctor(&env, &[]);
    assert_eq!(
        report["sandbox"]["runsWith"],
        "not sandboxed: turned off by your candor config ([sandbox])"
    );
}

#[tokio::test]
async fn slash_doctor_says_what_this_sessions_commands_run_in() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("unused")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "/doctor").await;
    let shown = conn.thread(&session).agent_text.clone();
    assert!(shown.contains("\nSandbox\n  kernel    "), "{shown}");
    assert!(shown.contains("  commands  sandbox: writes to"), "{shown}");
    // The user's own choice for the session is what /doctor reports.
    conn.prompt(&session, "/sandbox off").await;
    conn.prompt(&session, "/doctor").await;
    let shown = conn.thread(&session).agent_text.clone();
    assert!(
        shown.contains("  commands  not sandboxed: turned off by you (/sandbox off)"),
        "{shown}"
    );
}
