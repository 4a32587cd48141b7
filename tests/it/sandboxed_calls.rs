//! Bash calls through candor itself run in the sandbox (issue 26): the
//! boundary is settled with the call, recorded in `tool/call`, shown on
//! the card and the permission prompt, and held by the kernel; a failure
//! the sandbox caused is explained to the model; the settings users have
//! map onto it, and a repository cannot widen its own. Each escape comes
//! with a control: the same command doing what it tried where the
//! boundary is off or allows it. A kernel without what the sandbox needs
//! fails these loudly (CI's has Landlock and user namespaces).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// Fails loudly where this kernel cannot hold the sandbox.
#[allow(clippy::disallowed_methods)] // the probe of the binary under test
pub(crate) fn require_sandbox() {
    let out = std::process::Command::new(candor_bin())
        .args(["__sandbox", "--probe"])
        .output()
        .unwrap();
    let probe = candor::sandbox::Probe::parse(&out.stdout);
    assert!(
        probe.landlock_abi >= 6
            && probe.user_namespace
            && probe.pid_namespace
            && probe.network_namespace,
        "this kernel lacks what the sandbox needs (Landlock ABI 6+, unprivileged user, PID and network namespaces): {}",
        probe.describe()
    );
}

/// A directory beside the project (outside every writable root).
fn outside(env: &TestEnv) -> PathBuf {
    let dir = env.dir.path().join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `tool/call` record of `id`.
fn call_record(log: &[Value], id: &str) -> Value {
    log.iter()
        .find(|r| r["type"] == "tool/call" && r["toolCallId"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no tool/call for {id}"))
}

/// The text the model was sent as `id`'s result in request `n`.
fn result_text(conn: &Conn, n: usize, id: &str) -> String {
    result_in_request(conn, n, id).to_string()
}

/// The session's config, with the user's candor config file `toml`.
fn with_candor_sandbox(env: TestEnv, toml: &str) -> (TestEnv, candor::Config) {
    let env = env.with_user_config(toml);
    let config = env.config();
    assert!(config.user_settings.is_ok(), "{:?}", config.user_settings);
    (env, config)
}

fn summary(project: &Path) -> String {
    format!(
        "sandbox: writes to {} and $TMPDIR only, network off, processes end with the call",
        project.display()
    )
}

#[tokio::test]
async fn a_bash_call_runs_in_the_boundary_its_card_prompt_and_log_say() {
    require_sandbox();
    let env = TestEnv::new();
    let outside = outside(&env);
    let target = outside.join("x.txt");
    let env = TestEnv {
        script: {
            let path = env.dir.path().join("script.json");
            let s = script(vec![
                respond(json!([tool(
                    "t1",
                    "Bash",
                    json!({"command": format!(
                        "echo in > inside.txt && echo \"tmp=$TMPDIR\" && echo t > \"$TMPDIR/t\" && echo out > {}",
                        target.display()
                    )})
                )])),
                respond(json!([text("done")])),
            ]);
            std::fs::write(&path, s.to_string()).unwrap();
            Some(path)
        },
        ..env
    };
    let project = env.project.clone();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let card = conn.thread(&session).card("t1").clone();
    assert!(card.text().contains(&summary(&project)), "{}", card.text());
    assert_eq!(card.status, "failed");
    // The prompt showed the boundary too.
    let asked = conn.permission_requests[0]["toolCall"].to_string();
    assert!(asked.contains(&summary(&project)), "{asked}");
    // What the log says is what held.
    let log = conn.env.log(&session);
    let call = call_record(&log, "t1");
    assert_eq!(call["sandbox"]["preset"], "workspace-write");
    assert_eq!(call["sandbox"]["network"]["mode"], "off");
    assert_eq!(call["sandbox"]["enforced"]["kind"], "confined");
    assert_eq!(call["sandbox"]["writableRoots"], json!([project]));
    assert!(project.join("inside.txt").exists());
    assert!(!target.exists(), "the write outside the roots went through");
    // The model is told the sandbox refused it, with the path.
    let result = result_text(&conn, 1, "t1");
    assert!(result.contains("tmp="), "{result}");
    assert!(
        result.contains(&format!(
            "the sandbox refused a write to {}",
            target.display()
        )),
        "{result}"
    );
}

/// A session whose model runs `commands` (one Bash call each, ids `c0`…),
/// with the user's candor config `user_toml`; the connection and the session.
async fn run_commands(
    env: TestEnv,
    user_toml: Option<&str>,
    commands: &[String],
) -> (Conn, String) {
    let inputs: Vec<Value> = commands.iter().map(|c| json!({ "command": c })).collect();
    run_inputs(env, user_toml, inputs).await
}

/// [`run_commands`] with whole Bash inputs.
async fn run_inputs(env: TestEnv, user_toml: Option<&str>, inputs: Vec<Value>) -> (Conn, String) {
    let calls: Vec<Value> = inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| tool(&format!("c{i}"), "Bash", input))
        .collect();
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(Value::Array(calls)),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let (env, config) = match user_toml {
        Some(toml) => with_candor_sandbox(env, toml),
        None => {
            let config = env.config();
            (env, config)
        }
    };
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    (conn, session)
}

#[tokio::test]
async fn writes_outside_the_roots_and_into_git_fail_through_candor_and_work_unsandboxed() {
    require_sandbox();
    let escapes = |out: &Path| {
        vec![
            format!(
                "python3 -c \"open('{}/py', 'w').write('x')\"",
                out.display()
            ),
            format!(
                "perl -e 'open(my $f, \">\", \"{}/pl\") or die \"$!\"; print $f \"x\"'",
                out.display()
            ),
            format!("echo x > /proc/self/root{}/proc", out.display()),
            // A rename over a protected file.
            "echo '[y]' > new && mv -f new .git/config".to_owned(),
            format!(
                "echo x > \"$TMPDIR/src\" && cp \"$TMPDIR/src\" {}/cp",
                out.display()
            ),
            format!("ln -s {}/ln link && echo x > link", out.display()),
            format!("cd / && echo x > {}/cd", out.display()),
            "ln .git/config hl && echo '[x]' >> hl".to_owned(),
            "echo ok > inside".to_owned(),
        ]
    };
    let setup = |env: &TestEnv| {
        env.file(".git/config", "[core]\n");
        outside(env)
    };
    // Sandboxed (the default): nothing outside, `.git` unchanged.
    let env = TestEnv::new();
    let out = setup(&env);
    let (conn, _) = run_commands(env, None, &escapes(&out)).await;
    for name in ["py", "pl", "proc", "cp", "ln", "cd"] {
        assert!(!out.join(name).exists(), "{name} escaped the sandbox");
    }
    let git = std::fs::read_to_string(conn.env.project.join(".git/config")).unwrap();
    assert_eq!(git, "[core]\n", "a hard link wrote into .git");
    assert!(
        conn.env.project.join("inside").exists(),
        "the control failed"
    );
    // The control: the same commands with the sandbox off do it all.
    let env = TestEnv::new();
    let out = setup(&env);
    let config = "[sandbox]\nmode = \"full-access\"\n";
    let (conn, session) = run_commands(env, Some(config), &escapes(&out)).await;
    for name in ["py", "pl", "proc", "cp", "ln", "cd"] {
        assert!(out.join(name).exists(), "{name} did not run unsandboxed");
    }
    let git = std::fs::read_to_string(conn.env.project.join(".git/config")).unwrap();
    assert!(git.contains("[y]") && git.contains("[x]"), "{git}");
    let log = conn.env.log(&session);
    let call = call_record(&log, "c0");
    assert_eq!(call["sandbox"]["enforced"]["kind"], "unconfined");
    let card = conn.thread(&session).card("c0").clone();
    assert!(
        card.text()
            .contains("not sandboxed: turned off by your candor config ([sandbox])"),
        "{}",
        card.text()
    );
}

/// A listener on the host's loopback; its port.
fn listener() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

#[tokio::test]
async fn the_network_is_off_for_commands_and_on_when_the_user_says() {
    require_sandbox();
    let (_l, port) = listener();
    let tries = |port: u16| {
        vec![
            format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
            format!(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\""
            ),
        ]
    };
    let (conn, session) = run_commands(TestEnv::new(), None, &tries(port)).await;
    for id in ["c0", "c1"] {
        let card = conn.thread(&session).card(id).clone();
        assert_eq!(card.status, "failed", "{id}: {}", card.text());
        assert!(!card.text().contains("\nconnected"), "{}", card.text());
    }
    // The control: the user turns the network on.
    let env = TestEnv::new();
    let config = "[sandbox]\nnetwork = \"on\"\n";
    let (conn, session) = run_commands(env, Some(config), &tries(port)).await;
    for id in ["c0", "c1"] {
        let card = conn.thread(&session).card(id).clone();
        assert_eq!(card.status, "completed", "{id}: {}", card.text());
        assert!(card.text().contains("network on"), "{}", card.text());
    }
}

#[tokio::test]
async fn what_a_command_leaves_behind_outside_its_scope_ends_with_it() {
    require_sandbox();
    // The stray has half a second to leave its parent and its process
    // group before the call ends, so that only a boundary can catch it.
    let escape =
        "(unset candor_scope; setsid bash -c 'sleep 1.5; echo late > late.txt' > /dev/null 2>&1 &); sleep 0.5; echo started"
            .to_owned();
    let (conn, _) = run_commands(TestEnv::new(), None, std::slice::from_ref(&escape)).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        !conn.env.project.join("late.txt").exists(),
        "a process outlived its call and wrote after the card said done"
    );
    // The control: unsandboxed (and candor not the subreaper, as in this
    // test process), the stray writes.
    let env = TestEnv::new();
    let config = "[sandbox]\nmode = \"full-access\"\n";
    let (conn, _) = run_commands(env, Some(config), &[escape]).await;
    let late = conn.env.project.join("late.txt");
    assert!(
        eventually(Duration::from_secs(5), || late.exists()).await,
        "the control did not write"
    );
}

#[tokio::test]
async fn a_command_asking_to_leave_the_sandbox_is_refused_with_how_the_user_lifts_it() {
    require_sandbox();
    let env = TestEnv::new();
    let out = outside(&env);
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(json!([tool(
            "e",
            "Bash",
            json!({"command": format!("echo x > {}/e", out.display()), "dangerouslyDisableSandbox": true})
        )])),
        respond(json!([text("I will ask.")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    // No permission answer could lift it: nobody was asked.
    assert!(conn.permission_requests.is_empty());
    assert!(!out.join("e").exists());
    let card = conn.thread(&session).card("e").clone();
    assert_eq!(card.status, "failed");
    assert!(
        card.text().contains("Refused by sandbox"),
        "{}",
        card.text()
    );
    let result = result_text(&conn, 1, "e");
    assert!(result.contains("only the user can lift it"), "{result}");
    assert!(result.contains("/sandbox off"), "{result}");
    // With `allowUnsandboxedCommands: false`, it says no escalation exists.
    let env = TestEnv::new();
    std::fs::create_dir_all(env.dir.path().join(".claude")).unwrap();
    std::fs::write(
        env.dir.path().join(".claude/settings.json"),
        json!({"sandbox": {"allowUnsandboxedCommands": false}}).to_string(),
    )
    .unwrap();
    let input = json!({"command": "echo x", "dangerouslyDisableSandbox": true});
    let (conn, _) = run_inputs(env, None, vec![input]).await;
    let result = result_text(&conn, 1, "c0");
    assert!(
        result.contains("allowUnsandboxedCommands is false"),
        "{result}"
    );
    assert!(conn.permission_requests.is_empty());
}

#[tokio::test]
async fn auto_allow_runs_sandboxed_commands_unasked_but_ask_rules_still_ask() {
    require_sandbox();
    let env = TestEnv::new();
    std::fs::create_dir_all(env.dir.path().join(".claude")).unwrap();
    std::fs::write(
        env.dir.path().join(".claude/settings.json"),
        json!({"sandbox": {"autoAllowBashIfSandboxed": true},
               "permissions": {"ask": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"]}})
        .to_string(),
    )
    .unwrap();
    let commands = [
        "echo plain > plain.txt".to_owned(),
        "touch asked.txt".to_owned(),
        "rm -f plain.txt".to_owned(),
    ];
    let (conn, session) = run_commands(env, None, &commands).await;
    // Only the ask rule asked.
    assert_eq!(conn.permission_requests.len(), 1);
    assert!(
        conn.permission_requests[0]["toolCall"]["rawInput"]["command"]
            .as_str()
            .unwrap()
            .starts_with("touch")
    );
    let log = conn.env.log(&session);
    assert_eq!(call_record(&log, "c0")["decision"]["by"], "sandbox");
    assert_eq!(call_record(&log, "c2")["decision"]["outcome"], "deny");
    assert!(conn.env.project.join("plain.txt").exists());
}

#[tokio::test]
async fn a_repository_cannot_widen_its_own_sandbox_before_it_is_trusted() {
    require_sandbox();
    let widen = |env: &TestEnv| {
        env.file(
            ".claude/settings.json",
            &json!({"sandbox": {"enabled": false, "excludedCommands": ["echo"],
                                "filesystem": {"allowWrite": ["/"]},
                                "network": {"allowedDomains": ["evil.example"]}}})
            .to_string(),
        );
        env.file(
            ".codex/config.toml",
            "sandbox_mode = \"danger-full-access\"\n[sandbox_workspace_write]\nnetwork_access = true\n",
        );
        env.file(
            ".candor/config.toml",
            "[sandbox]\nmode = \"full-access\"\nauto_allow = true\n",
        );
        outside(env)
    };
    let env = TestEnv::new();
    let out = widen(&env);
    let project = env.project.clone();
    let command = format!("echo x > {}/w", out.display());
    let (conn, session) = run_commands(env, None, std::slice::from_ref(&command)).await;
    assert!(
        !out.join("w").exists(),
        "the repository widened its sandbox"
    );
    let card = conn.thread(&session).card("c0").clone();
    assert!(card.text().contains(&summary(&project)), "{}", card.text());
    // It still asked: the project's auto_allow did not apply.
    assert_eq!(conn.permission_requests.len(), 1);
    let said = told(&conn).join("\n");
    assert!(said.contains("widen the sandbox"), "{said}");
    // The control: once the user trusts the project, its settings apply.
    let env = TestEnv::new();
    let out = widen(&env);
    env.trust_project();
    let command = format!("echo x > {}/w", out.display());
    let (conn, session) = run_commands(env, None, std::slice::from_ref(&command)).await;
    let card = conn.thread(&session).card("c0").clone();
    assert!(
        out.join("w").exists(),
        "the trusted project's settings did not apply: {} {:?}",
        card.text(),
        told(&conn)
    );
    let card = conn.thread(&session).card("c0").clone();
    assert!(card.text().contains("not sandboxed:"), "{}", card.text());
}

#[tokio::test]
async fn an_excluded_command_runs_outside_only_when_it_is_all_the_line_runs() {
    require_sandbox();
    let env = TestEnv::new();
    let out = outside(&env);
    let o = out.display();
    let commands = [
        // The control: the excluded command alone runs outside.
        format!("touch {o}/alone"),
        // Its first word is excluded, but the line runs more.
        format!("touch {o}/first; python3 -c \"open('{o}/then', 'w')\""),
        // An assignment in front, as Claude Code reads it: still touch.
        format!("FOO=1 touch {o}/assigned"),
        // A variable that changes what runs: not the excluded command.
        format!("PATH=/usr/bin:$PATH touch {o}/path"),
        // Spelled oddly, it is still touch (what runs, not the spelling).
        format!("t''ouch {o}/quoted"),
    ];
    let config = "[sandbox]\nexcluded_commands = [\"touch\"]\n";
    let (conn, session) = run_commands(env, Some(config), &commands).await;
    for name in ["alone", "assigned", "quoted"] {
        assert!(
            out.join(name).exists(),
            "{name}: the excluded command was confined"
        );
    }
    for name in ["first", "then", "path"] {
        assert!(!out.join(name).exists(), "{name} ran outside the sandbox");
    }
    let card = conn.thread(&session).card("c0").clone();
    assert!(
        card.text()
            .contains("not sandboxed: an excluded command (`touch`, sandbox.excludedCommands)"),
        "{}",
        card.text()
    );
    let card = conn.thread(&session).card("c1").clone();
    assert!(
        card.text().contains("sandbox: writes to"),
        "{}",
        card.text()
    );
}

#[tokio::test]
async fn a_background_command_runs_in_the_boundary_too() {
    require_sandbox();
    let env = TestEnv::new();
    let out = outside(&env);
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(json!([tool(
            "b",
            "Bash",
            json!({"command": format!("echo in > bg.txt; echo x > {}/bg", out.display()), "run_in_background": true})
        )])),
        respond(json!([text("started")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let bg = conn.env.project.join("bg.txt");
    assert!(eventually(Duration::from_secs(5), || bg.exists()).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!out.join("bg").exists(), "the background command escaped");
    let log = conn.env.log(&session);
    assert_eq!(
        call_record(&log, "b")["sandbox"]["enforced"]["kind"],
        "confined"
    );
}

/// candor (the binary) running `touch started; sleep 1.5; echo x >
/// finished`, SIGKILLed once the command started; whether `finished`
/// appeared within 4 s after.
async fn killed_mid_command(env: TestEnv) -> bool {
    let path = env.dir.path().join("script.json");
    let s = script(vec![respond(json!([tool(
        "k",
        "Bash",
        json!({"command": "touch started; sleep 1.5; echo x > finished"})
    )]))]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    }
    .with_policy(json!({"mode": "bypassPermissions"}));
    let started = env.project.join("started");
    let finished = env.project.join("finished");
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    )
    .await;
    assert!(
        eventually(Duration::from_secs(10), || started.exists()).await,
        "the command never started"
    );
    conn.child().start_kill().unwrap();
    let _ = conn.child().wait().await;
    eventually(Duration::from_secs(4), || finished.exists()).await
}

#[tokio::test]
async fn when_candor_is_sigkilled_nothing_its_sandboxed_command_started_writes_afterwards() {
    require_sandbox();
    assert!(
        !killed_mid_command(TestEnv::new()).await,
        "the command wrote after candor died"
    );
    // The control: unconfined, the command outlives candor and finishes.
    assert!(
        killed_mid_command(TestEnv::new().unsandboxed()).await,
        "the control did not finish"
    );
}

#[tokio::test]
async fn the_user_lifts_the_sandbox_with_a_command_and_a_loaded_session_keeps_it() {
    require_sandbox();
    let env = TestEnv::new();
    let out = outside(&env);
    let path = env.dir.path().join("script.json");
    let command = format!("echo x > {}/lifted", out.display());
    let s = script(vec![
        respond(json!([tool("l", "Bash", json!({ "command": command }))])),
        respond(json!([text("done")])),
        respond(json!([tool(
            "m",
            "Bash",
            json!({ "command": "echo again" })
        )])),
        respond(json!([text("done again")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.prompt(&session, "/sandbox off").await;
    conn.prompt(&session, "write it").await;
    assert!(out.join("lifted").exists());
    let card = conn.thread(&session).card("l").clone();
    assert!(
        card.text()
            .contains("not sandboxed: turned off by you (/sandbox off)"),
        "{}",
        card.text()
    );
    let log = conn.env.log(&session);
    assert!(
        log.iter().any(|r| r["type"] == "config/changed"
            && r["configId"] == "sandbox"
            && r["value"] == "full-access"),
        "{log:?}"
    );
    // `candor audit` lists the boundary each call ran in.
    let audit = audit(&conn.env.home, &session, false);
    assert!(
        audit.contains("not sandboxed: turned off by you (/sandbox off)"),
        "{audit}"
    );
    let env = conn.end().await;
    // Loaded again, the choice holds, and the replay shows the same card.
    let mut again = Conn::spawn(env);
    again.initialize().await;
    let cwd = again.env.project.clone();
    let id = again
        .send_request(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    again.response(&id).await;
    let replayed = again.thread(&session).card("l").clone();
    assert_eq!(replayed.content, card.content);
    again.prompt(&session, "again").await;
    let log = again.env.log(&session);
    assert_eq!(
        call_record(&log, "m")["sandbox"]["enforced"]["kind"],
        "unconfined"
    );
}

/// A Bash call reading `path` (relative to the project) by another program
/// than `cat`, the path spelled so that no rule could read it off the line.
fn read_by_python(path: &str) -> String {
    let (head, tail) = path.split_at(path.len() / 2);
    format!("python3 -c \"print(open('{head}' + '{tail}').read())\"")
}

#[tokio::test]
async fn what_the_read_deny_rules_deny_no_command_reads_and_a_glob_they_cannot_hold_is_said() {
    require_sandbox();
    let files = [
        ("secret", "SECRET-PLAIN"),
        (".env", "SECRET-ENV"),
        ("keys/id", "SECRET-KEYS"),
        ("sub/.env", "SECRET-SUBENV"),
        ("src/a.pem", "SECRET-PEM"),
    ];
    let setup = |env: &TestEnv| {
        for (name, text) in files {
            let path = env.project.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    };
    let commands: Vec<String> = files.iter().map(|(name, _)| read_by_python(name)).collect();
    let deny = json!({"permissions": {"deny": [
        "Read(./secret)", "Read(.env)", "Read(./keys/**)", "Read(src/*.pem)"
    ]}});
    let env = TestEnv::new().with_policy(deny);
    setup(&env);
    let project = env.project.clone();
    let (conn, session) = run_commands(env, None, &commands).await;
    // What the rules name is hidden from the commands.
    for (i, (name, text)) in files.iter().take(3).enumerate() {
        let id = format!("c{i}");
        let card = conn.thread(&session).card(&id).clone();
        assert!(
            !card.text().contains(text),
            "{name} was read: {}",
            card.text()
        );
        let result = result_text(&conn, 1, &id);
        assert!(!result.contains(text), "{name} reached the model: {result}");
    }
    let log = conn.env.log(&session);
    let call = call_record(&log, "c0");
    let hidden = call["sandbox"]["readDenied"].to_string();
    for path in ["secret", ".env", "keys"] {
        let path = project.join(path);
        assert!(
            hidden.contains(&format!("\"{}\"", path.display())),
            "{hidden}"
        );
    }
    // What they reach but the boundary cannot hold is said, on the card
    // and in the record, not dropped: `.env` deeper than the project's
    // top, and the glob `src/*.pem`.
    let said = call["sandbox"]["enforced"]["downgrades"].to_string();
    assert!(
        said.contains("`Read(.env)` is hidden from commands at")
            && said.contains("not in subdirectories"),
        "{said}"
    );
    assert!(
        said.contains("`Read(src/*.pem)` is a pattern the sandbox cannot hide"),
        "{said}"
    );
    let card = conn.thread(&session).card("c4").clone();
    assert!(
        card.text()
            .contains("; not held for commands: Read(.env) in subdirectories, Read(src/*.pem)"),
        "{}",
        card.text()
    );
    assert!(card.text().contains("SECRET-PEM"), "{}", card.text());

    // The control: without the rules, the same commands read every file.
    let env = TestEnv::new();
    setup(&env);
    let (conn, session) = run_commands(env, None, &commands).await;
    for (i, (name, text)) in files.iter().enumerate() {
        let card = conn.thread(&session).card(&format!("c{i}")).clone();
        assert_eq!(card.status, "completed", "{name}: {}", card.text());
        assert!(card.text().contains(text), "{name}: {}", card.text());
    }
}

/// The attack: two writable roots, one inside the other (an editor's
/// workspace and a folder of it, both given as additional directories; or
/// a root holding the working directory). A command may rename the inner
/// one and put a link to anywhere in its place; the next command's
/// boundary, which the card says writes to the inner root, would then be
/// set up where the link leads.
#[tokio::test]
async fn a_writable_root_a_command_swapped_for_a_link_is_not_followed_out_of_the_boundary() {
    require_sandbox();
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool("ok", "Bash", json!({"command": "echo ok > ../ws/lib/ok"})),
            tool(
                "swap",
                "Bash",
                json!({"command": "cd ../ws && mv lib lib.old && ln -s ../outside lib"})
            ),
            tool(
                "escape",
                "Bash",
                json!({"command": "python3 -c \"open('../ws/lib/pwned', 'w').write('x')\""})
            ),
        ])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let ws = env.dir.path().join("ws");
    std::fs::create_dir_all(ws.join("lib")).unwrap();
    let out = outside(&env);
    let mut conn = Conn::in_process(env);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let opened = conn
        .call(
            "session/new",
            json!({"cwd": cwd, "mcpServers": [], "additionalDirectories": [ws, ws.join("lib")]}),
        )
        .await;
    let session = opened["sessionId"].as_str().unwrap().to_owned();
    conn.prompt(&session, "go").await;
    let log = conn.env.log(&session);
    // Control: the inner root is writable as the card says.
    assert!(ws.join("lib.old/ok").exists(), "the control failed");
    assert_eq!(
        record(&conn, &session, "tool/result", "swap").unwrap()["status"],
        "completed"
    );
    // The escape: nothing written where the link leads, and the command
    // did not run.
    assert!(
        !out.join("pwned").exists(),
        "the boundary followed the link"
    );
    let escape = call_record(&log, "escape");
    assert!(
        escape["sandbox"]["writableRoots"]
            .to_string()
            .contains("ws/lib"),
        "{escape}"
    );
    let result = record(&conn, &session, "tool/result", "escape").unwrap();
    assert_eq!(result["status"], "failed", "{result}");
    assert!(
        result["output"].as_str().unwrap().contains("symbolic link"),
        "{result}"
    );
}

/// The `config_option_update`s received so far: each one's options.
fn option_updates(conn: &Conn) -> Vec<Value> {
    conn.notifications
        .iter()
        .filter(|n| n["params"]["update"]["sessionUpdate"] == "config_option_update")
        .map(|n| n["params"]["update"].clone())
        .collect()
}

#[tokio::test]
async fn the_sandbox_is_an_editor_option_recorded_like_a_mode_and_a_load_keeps_it() {
    require_sandbox();
    let env = TestEnv::new();
    let out = outside(&env);
    let command = format!("echo x > {}/opt", out.display());
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(json!([tool("o", "Bash", json!({ "command": command }))])),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let mut conn = Conn::spawn(env);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let sandbox = config_option(&created, "sandbox");
    assert_eq!(sandbox["currentValue"], "workspace-write", "{created}");
    assert_eq!(sandbox["category"], "_sandbox");
    let ids: Vec<&str> = sandbox["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["read-only", "workspace-write", "full-access"]);
    assert_eq!(config_option(&created, "network")["currentValue"], "off");

    // A value that is not a preset is refused, and nothing is recorded.
    let bad = conn
        .request(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "sandbox", "value": "none"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    // The person picks full access in the editor: recorded, and the next
    // command runs outside, its card saying who lifted it.
    let changed = conn
        .call(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "sandbox", "value": "full-access"}),
        )
        .await;
    assert_eq!(
        config_option(&changed, "sandbox")["currentValue"],
        "full-access"
    );
    conn.prompt(&session, "write it").await;
    assert!(
        out.join("opt").exists(),
        "the option did not lift the sandbox"
    );
    let card = conn.thread(&session).card("o").clone();
    assert!(
        card.text().contains(
            "not sandboxed: turned off by you (the session's Sandbox option: full-access)"
        ),
        "{}",
        card.text()
    );
    let log = conn.env.log(&session);
    let recorded = log
        .iter()
        .find(|r| r["type"] == "config/changed" && r["configId"] == "sandbox")
        .unwrap();
    assert_eq!(recorded["value"], "full-access");
    assert!(recorded.get("via").is_none(), "{recorded}");
    // `/sandbox` typed changes the same setting, and the editor's options
    // follow (a `config_option_update`).
    conn.prompt(&session, "/sandbox read-only").await;
    conn.prompt(&session, "/sandbox network allowlist").await;
    let updates = option_updates(&conn);
    let last = updates.last().expect("no config_option_update");
    assert_eq!(config_option(last, "sandbox")["currentValue"], "read-only");
    assert_eq!(config_option(last, "network")["currentValue"], "allowlist");
    let log = conn.env.log(&session);
    assert!(log.iter().any(|r| r["type"] == "config/changed"
        && r["configId"] == "network"
        && r["value"] == "allowlist"
        && r["via"] == "command"));
    // Loaded again, the session offers what the user last chose.
    let env = conn.end().await;
    let mut again = Conn::spawn(env);
    again.initialize().await;
    let loaded = again.load(&session).await;
    assert_eq!(
        config_option(&loaded, "sandbox")["currentValue"],
        "read-only"
    );
    assert_eq!(
        config_option(&loaded, "network")["currentValue"],
        "allowlist"
    );
}

/// A Bash command fetching `http://{host}:{port}/` through the sandbox's
/// proxy (`NO_PROXY` cleared: 127.0.0.1 stands for the outside here).
fn fetch(host: &str, port: u16) -> String {
    format!(
        "NO_PROXY= no_proxy= python3 -c \"import urllib.request as u; print(u.urlopen('http://{host}:{port}/', timeout=10).read().decode())\""
    )
}

/// A session in `bypassPermissions` (no call asks) whose candor config
/// turns the allowlist on with `domains`; its model runs `commands`.
async fn allowlisted(domains: &str, commands: &[String], answers: &[&str]) -> (Conn, String) {
    let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
    let inputs: Vec<Value> = commands.iter().map(|c| json!({ "command": c })).collect();
    let calls: Vec<Value> = inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| respond(json!([tool(&format!("c{i}"), "Bash", input)])))
        .collect();
    let path = env.dir.path().join("script.json");
    let mut responses = calls;
    responses.push(respond(json!([text("done")])));
    std::fs::write(&path, script(responses).to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let toml = format!("[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [{domains}]\n");
    let (env, config) = with_candor_sandbox(env, &toml);
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.answer_permissions(answers);
    conn.prompt(&session, "go").await;
    (conn, session)
}

/// The `network/decided` records of call `id`.
fn decided(log: &[Value], id: &str) -> Vec<Value> {
    log.iter()
        .filter(|r| r["type"] == "network/decided" && r["toolCallId"] == id)
        .cloned()
        .collect()
}

#[tokio::test]
async fn an_allowlisted_command_reaches_its_domains_and_asks_on_its_card_for_another() {
    require_sandbox();
    let port = http_server();
    let commands = [
        fetch("127.0.0.1", port),
        fetch("localhost", port),
        fetch("localhost", port),
        fetch("localhost", port),
        fetch("localhost", port),
    ];
    let answers = ["allow_once", "reject_once", "allow_always"];
    let (conn, session) = allowlisted("\"127.0.0.1\"", &commands, &answers).await;
    let card = |id: &str| conn.thread(&session).card(id).clone();
    // A listed domain: through, unasked; the card says where it may go.
    let c0 = card("c0");
    assert_eq!(c0.status, "completed", "{}", c0.text());
    assert!(c0.text().contains("hello"), "{}", c0.text());
    assert!(
        c0.text()
            .contains("network only to 127.0.0.1, processes end with the call"),
        "{}",
        c0.text()
    );
    // Another host: asked on the call's own card, three times (once per
    // command), and never for the grant's later command.
    assert_eq!(
        conn.permission_requests.len(),
        3,
        "{:?}",
        conn.permission_requests
    );
    let asked = &conn.permission_requests[0];
    assert_eq!(asked["toolCall"]["toolCallId"], "c1");
    let question = asked["toolCall"].to_string();
    assert!(
        question.contains("Allow network access to localhost?"),
        "{question}"
    );
    assert_eq!(
        asked["toolCall"]["_meta"]["candor"]["network"]["host"],
        "localhost"
    );
    let names: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Allow localhost for this command",
            "Allow localhost for the rest of this session",
            "Refuse"
        ]
    );
    // Allowed once: through, and the card says who let it.
    let c1 = card("c1");
    assert!(c1.text().contains("hello"), "{}", c1.text());
    assert!(
        c1.text().contains(&format!(
            "network: you allowed localhost:{port} for this command"
        )),
        "{}",
        c1.text()
    );
    // Refused: the command is told, and so is the model.
    let c2 = card("c2");
    assert_eq!(c2.status, "failed", "{}", c2.text());
    assert!(!c2.text().contains("hello"), "{}", c2.text());
    assert!(
        c2.text()
            .contains(&format!("network: you refused localhost:{port}"))
    );
    let result = result_text(&conn, 3, "c2");
    assert!(
        result.contains(&format!(
            "[the sandbox's network allowlist refused localhost (port {port}): the user refused it when asked;"
        )),
        "{result}"
    );
    // Allowed for the session: the next command reaches it unasked, and
    // its card names it among the domains.
    assert!(card("c3").text().contains("hello"));
    let c4 = card("c4");
    assert!(c4.text().contains("hello"), "{}", c4.text());
    assert!(
        c4.text().contains("network only to 127.0.0.1, localhost,"),
        "{}",
        c4.text()
    );
    // The log: every host each command reached for, once; the questions
    // and the answers; the grant.
    let log = conn.env.log(&session);
    let d0 = decided(&log, "c0");
    assert_eq!(d0.len(), 1, "{d0:?}");
    assert_eq!(d0[0]["by"], "allowlist");
    assert_eq!(d0[0]["rule"], "127.0.0.1");
    assert!(log.iter().any(|r| r["type"] == "network/requested"
        && r["toolCallId"] == "c1"
        && r["host"] == "localhost"));
    assert_eq!(decided(&log, "c1")[0]["outcome"], "allowed_once");
    assert_eq!(decided(&log, "c2")[0]["allowed"], false);
    assert_eq!(decided(&log, "c3")[0]["grant"], "localhost");
    assert_eq!(decided(&log, "c4")[0]["by"], "allowlist");
    assert_eq!(
        call_record(&log, "c4")["sandbox"]["network"]["domains"],
        json!(["127.0.0.1", "localhost"])
    );
    // `candor audit` lists them under each call.
    let audit = audit(&conn.env.home, &session, false);
    assert!(
        audit.contains(&format!(
            "network: you allowed localhost:{port} for this command"
        )),
        "{audit}"
    );
    assert!(
        audit.contains(&format!(
            "network: 127.0.0.1:{port} allowed by the allowlist (`127.0.0.1`)"
        )),
        "{audit}"
    );
    // A load replays the same cards, and keeps the grant.
    let env = conn.end().await;
    let mut again = Conn::spawn(env);
    again.initialize().await;
    again.load(&session).await;
    for id in ["c1", "c2"] {
        let live_text = conn_card_text(&again, &session, id);
        assert!(
            live_text.contains("network: you"),
            "{id} replayed without its answer: {live_text}"
        );
    }
}

fn conn_card_text(conn: &Conn, session: &str, id: &str) -> String {
    conn.thread(session).card(id).text()
}

#[tokio::test]
async fn a_command_asks_about_a_few_hosts_at_most_and_a_cancel_withdraws_the_question() {
    require_sandbox();
    let port = http_server();
    // Ten hosts no rule names: eight questions, then refused unasked.
    let hosts: Vec<String> = (1..=10).map(|i| format!("h{i}.invalid")).collect();
    let loop_over = hosts
        .iter()
        .map(|h| fetch(h, port) + " || true")
        .collect::<Vec<_>>()
        .join("; ");
    let answers: Vec<&str> = std::iter::repeat_n("reject_once", 10).collect();
    let (conn, session) = allowlisted("", &[loop_over], &answers).await;
    assert_eq!(conn.permission_requests.len(), 8);
    let log = conn.env.log(&session);
    let limited: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "network/decided" && r["by"] == "limit")
        .collect();
    assert_eq!(limited.len(), 2, "{limited:?}");
    let card = conn.thread(&session).card("c0").clone();
    assert!(
        card.text()
            .contains("refused unasked (this command asked about too many hosts)"),
        "{}",
        card.text()
    );
    assert!(
        card.text().contains("network only to domains you allow"),
        "{}",
        card.text()
    );

    // A question left open is withdrawn by a cancel: the connection is
    // refused, and the log says it was never answered.
    let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(json!([tool(
            "w",
            "Bash",
            json!({ "command": fetch("localhost", port) })
        )])),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let (env, config) = with_candor_sandbox(env, "[sandbox]\nnetwork = \"allowlist\"\n");
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.hold_permissions();
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    while conn.permission_requests.is_empty() {
        conn.recv().await;
    }
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answered = conn.response(&id).await;
    assert_eq!(answered["result"]["stopReason"], "cancelled", "{answered}");
    let log = conn.env.log(&session);
    let d = decided(&log, "w");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["allowed"], false);
    assert_eq!(d[0]["by"], "no-answer");
    let card = conn.thread(&session).card("w").clone();
    assert!(!card.text().contains("hello"), "{}", card.text());
}

/// A UDP socket on the host's loopback, waiting briefly for a datagram.
fn udp_listener() -> (std::net::UdpSocket, u16) {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let port = udp.local_addr().unwrap().port();
    (udp, port)
}

/// A Bash command sending a datagram `leak` to the host's `port`.
fn send_udp(port: u16) -> String {
    format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'leak', ('127.0.0.1', {port})); print('sent')\""
    )
}

#[tokio::test]
async fn no_datagram_name_lookup_or_raw_socket_gets_out_with_the_network_off() {
    require_sandbox();
    let (udp, port) = udp_listener();
    let raw = "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print('raw')\"";
    let commands = [
        send_udp(port),
        // A datagram to an address off this machine (TEST-NET-1).
        "python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('192.0.2.1', 53))\"".to_owned(),
        "getent hosts example.com".to_owned(),
        raw.to_owned(),
    ];
    let (conn, session) = run_commands(TestEnv::new(), None, &commands).await;
    let mut buf = [0u8; 16];
    assert!(udp.recv_from(&mut buf).is_err(), "a datagram got out");
    let card = |id: &str| conn.thread(&session).card(id).clone();
    let off = card("c1");
    assert_eq!(off.status, "failed", "{}", off.text());
    assert!(
        off.text().contains("Network is unreachable"),
        "{}",
        off.text()
    );
    assert_eq!(
        card("c2").status,
        "failed",
        "a name resolved: {}",
        card("c2").text()
    );
    let raw_card = card("c3");
    assert_eq!(raw_card.status, "failed", "{}", raw_card.text());
    assert!(!raw_card.text().contains("\nraw"), "{}", raw_card.text());
    // The controls: with the network on, the same datagram arrives; as
    // root, unsandboxed, the raw socket opens.
    let config = "[sandbox]\nnetwork = \"on\"\n";
    let (conn, session) = run_commands(TestEnv::new(), Some(config), &[send_udp(port)]).await;
    let (n, _) = udp
        .recv_from(&mut buf)
        .unwrap_or_else(|e| panic!("{e}: {}", conn.thread(&session).card("c0").text()));
    assert_eq!(&buf[..n], b"leak");
    if nix::unistd::geteuid().is_root() {
        let config = "[sandbox]\nmode = \"full-access\"\n";
        let (conn, session) = run_commands(TestEnv::new(), Some(config), &[raw.to_owned()]).await;
        let card = conn.thread(&session).card("c0").clone();
        assert_eq!(card.status, "completed", "{}", card.text());
    }
}

/// A Bash command sending SIGCONT (harmless) to candor (its pid read from
/// `pid_file`, written once candor runs) and to the editor (`editor`: this
/// test process), printing each `kill`'s status.
fn signal_both(pid_file: &Path, editor: u32) -> String {
    format!(
        "kill -CONT $(cat {}); a=$?; kill -CONT {editor}; b=$?; echo \"candor=$a editor=$b\"",
        pid_file.display()
    )
}

/// candor (the binary: its pid is its own, the editor's is this test's)
/// running `signal_both` in a session with `toml` as the user's candor
/// config, in candor's own process or (`terminal`) the editor's terminal;
/// what the command printed.
async fn signalling(toml: Option<&str>, terminal: bool) -> String {
    let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
    let pid_file = env.dir.path().join("candor.pid");
    let command = signal_both(&pid_file, std::process::id());
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(json!([tool("k", "Bash", json!({ "command": command }))])),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let env = match toml {
        Some(toml) => env.with_user_config(toml),
        None => env,
    };
    let mut conn = Conn::spawn(env);
    let pid = conn.child().id().unwrap();
    std::fs::write(&pid_file, pid.to_string()).unwrap();
    conn.run_terminals();
    conn.initialize_with(json!({ "terminal": terminal })).await;
    let session = conn.new_session().await;
    conn.prompt(&session, "go").await;
    let mut text = conn.thread(&session).card("k").text();
    assert_eq!(
        conn.terminals.len(),
        usize::from(terminal),
        "the command did not run where the test meant"
    );
    for t in conn.terminals.values() {
        if toml.is_none() {
            // The editor ran candor's launcher, not bash itself.
            assert_eq!(t.argv[1], "__sandbox", "{:?}", t.argv);
        }
        text.push_str(&t.output);
    }
    text
}

#[tokio::test]
async fn a_command_cannot_signal_candor_or_the_editor_from_its_own_run_or_the_editors_terminal() {
    require_sandbox();
    for terminal in [false, true] {
        let said = signalling(None, terminal).await;
        assert!(
            said.contains("candor=1 editor=1"),
            "a signal got out (terminal: {terminal}): {said}"
        );
        // The control: unsandboxed, the same signals reach both.
        let said = signalling(Some("[sandbox]\nmode = \"full-access\"\n"), terminal).await;
        assert!(
            said.contains("candor=0 editor=0"),
            "the control (terminal: {terminal}): {said}"
        );
    }
}

#[tokio::test]
async fn an_editor_terminal_command_is_held_by_the_same_boundary() {
    require_sandbox();
    let (udp, port) = udp_listener();
    let run = |toml: Option<&'static str>| async move {
        let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
        let out = outside(&env);
        let command = format!(
            "echo x > {}/term; echo evil >> .git/config; {}",
            out.display(),
            send_udp(port)
        );
        env.file(".git/config", "[core]\n");
        let path = env.dir.path().join("script.json");
        let s = script(vec![
            respond(json!([tool("t", "Bash", json!({ "command": command }))])),
            respond(json!([text("done")])),
        ]);
        std::fs::write(&path, s.to_string()).unwrap();
        let env = TestEnv {
            script: Some(path),
            ..env
        };
        let env = match toml {
            Some(toml) => env.with_user_config(toml),
            None => env,
        };
        let mut conn = Conn::spawn(env);
        conn.run_terminals();
        conn.initialize_with(json!({"terminal": true})).await;
        let session = conn.new_session().await;
        conn.prompt(&session, "go").await;
        assert_eq!(conn.terminals.len(), 1, "no editor terminal ran it");
        let card = conn.thread(&session).card("t").clone();
        let git = std::fs::read_to_string(conn.env.project.join(".git/config")).unwrap();
        (out.join("term").exists(), git, card.text())
    };
    let (wrote, git, card) = run(None).await;
    assert!(!wrote, "the terminal command wrote outside the roots");
    assert_eq!(git, "[core]\n", "the terminal command wrote into .git");
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram got out of the terminal"
    );
    assert!(card.contains("sandbox: writes to"), "{card}");
    // The control: unsandboxed, the same terminal command does all three.
    let (wrote, git, _) = run(Some("[sandbox]\nmode = \"full-access\"\n")).await;
    assert!(wrote && git.contains("evil"));
    let (n, _) = udp.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"leak");
}

/// A command asking to leave the sandbox (`dangerouslyDisableSandbox`) in
/// a session whose editor shows forms, the form answered with `answer`
/// (`null`: no form expected); whether it wrote outside, the connection
/// and the session.
async fn lift_with_form(answer: Option<Value>) -> (bool, Conn, String) {
    let env = TestEnv::new();
    let out = outside(&env);
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(json!([tool(
            "l",
            "Bash",
            json!({"command": format!("echo x > {}/lifted", out.display()), "dangerouslyDisableSandbox": true})
        )])),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let mut conn = Conn::in_process(env);
    let forms = answer.is_some();
    if let Some(answer) = answer {
        conn.elicitation_answers.push_back(answer);
    }
    conn.initialize_with(if forms {
        json!({"elicitation": {"form": {}}})
    } else {
        json!({})
    })
    .await;
    let session = conn.new_session().await;
    conn.prompt(&session, "go").await;
    (out.join("lifted").exists(), conn, session)
}

#[tokio::test]
async fn where_the_editor_shows_forms_the_person_lifts_the_sandbox_for_one_command_in_one() {
    require_sandbox();
    let outside = json!({"action": "accept", "content": {"sandbox": "outside"}});
    let (wrote, conn, session) = lift_with_form(Some(outside)).await;
    assert!(wrote, "the person's answer did not lift the sandbox");
    // Asked in a form scoped to the card, never by a permission request.
    assert!(conn.permission_requests.is_empty());
    assert_eq!(conn.elicitations.len(), 1);
    let form = &conn.elicitations[0];
    assert_eq!(form["toolCallId"], "l", "{form}");
    assert!(
        form["message"]
            .as_str()
            .unwrap()
            .starts_with("Run `echo x > "),
        "{form}"
    );
    let card = conn.thread(&session).card("l").clone();
    assert_eq!(card.status, "completed", "{}", card.text());
    assert!(
        card.text().contains("not sandboxed: it asked to run outside the sandbox (dangerouslyDisableSandbox), and runs only if you lift it in the form"),
        "{}",
        card.text()
    );
    let log = conn.env.log(&session);
    assert_eq!(
        call_record(&log, "l")["sandbox"]["enforced"]["kind"],
        "unconfined"
    );
    assert!(log.iter().any(|r| r["type"] == "permission/resolved"
        && r["toolCallId"] == "l"
        && r["outcome"] == "allowed_once"));
    // Kept, declined, or a form an editor filled in by itself with
    // nothing chosen: the command does not run, and the model is told.
    for answer in [
        json!({"action": "accept", "content": {"sandbox": "inside"}}),
        json!({"action": "accept", "content": {}}),
        json!({"action": "decline"}),
    ] {
        let (wrote, conn, session) = lift_with_form(Some(answer.clone())).await;
        assert!(!wrote, "{answer}: lifted");
        let card = conn.thread(&session).card("l").clone();
        assert_eq!(card.status, "failed", "{answer}: {}", card.text());
        let result = result_text(&conn, 1, "l");
        assert!(result.contains("did not run"), "{result}");
    }
    // The control: without forms, refused unasked, as before.
    let (wrote, conn, _) = lift_with_form(None).await;
    assert!(!wrote);
    assert!(conn.permission_requests.is_empty() && conn.elicitations.is_empty());
}

/// A Bash call running `command` in a session of the candor binary at
/// `program` (bypassing permissions), in candor's own process or
/// (`terminal`) the editor's terminal; what the command printed, and the
/// argv of each terminal the editor ran.
async fn ran_by(
    program: &Path,
    toml: Option<&str>,
    command: &str,
    terminal: bool,
) -> (String, Vec<Vec<String>>) {
    let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        respond(json!([tool("r", "Bash", json!({ "command": command }))])),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let env = match toml {
        Some(toml) => env.with_user_config(toml),
        None => env,
    };
    let cmd = candor_command_at(&env, program);
    let mut conn = Conn::spawn_with(env, cmd);
    conn.run_terminals();
    conn.initialize_with(json!({ "terminal": terminal })).await;
    let session = conn.new_session().await;
    conn.prompt(&session, "go").await;
    let mut said = conn.thread(&session).card("r").text();
    let mut argvs = Vec::new();
    for t in conn.terminals.values() {
        said.push_str(&t.output);
        argvs.push(t.argv.clone());
    }
    assert_eq!(
        argvs.len(),
        usize::from(terminal),
        "the command did not run where the test meant: {said}"
    );
    (said, argvs)
}

/// A command printing the sandbox's init (PID 1's command line: the
/// launcher's binary) and trying a write outside every root.
fn who_launched(outside: &Path) -> String {
    format!(
        "tr '\\0' ' ' < /proc/1/cmdline; echo; echo x > {}/escaped; echo wrote=$?",
        outside.display()
    )
}

#[tokio::test]
async fn the_lean_launcher_runs_both_candors_and_the_editors_commands_and_they_are_confined() {
    require_sandbox();
    let lean = Path::new(candor_bin()).with_file_name("candor-sandbox");
    let outside = tempfile::tempdir().unwrap();
    let command = who_launched(outside.path());
    for terminal in [false, true] {
        let (said, argvs) = ran_by(Path::new(candor_bin()), None, &command, terminal).await;
        // PID 1: the launcher's own init, or the session's house's, once
        // it is ready (`sandbox::house`): the lean launcher either way.
        assert!(
            a_second_stage_of(&said, &lean.display().to_string()),
            "not the lean launcher (terminal: {terminal}): {said}"
        );
        assert!(said.contains("wrote=1"), "terminal: {terminal}: {said}");
        assert!(!outside.path().join("escaped").exists());
        for argv in argvs {
            // The editor was given the lean launcher, by its full path.
            assert_eq!(argv[0], lean.display().to_string(), "{argv:?}");
            assert_eq!(argv[1], "__sandbox", "{argv:?}");
        }
        // The control: with the sandbox off the same write works.
        let (said, _) = ran_by(
            Path::new(candor_bin()),
            Some("[sandbox]\nmode = \"full-access\"\n"),
            &command,
            terminal,
        )
        .await;
        assert!(said.contains("wrote=0"), "the control: {said}");
        std::fs::remove_file(outside.path().join("escaped")).unwrap();
    }
}

/// candor's binary linked into a directory of its own (`CARGO_TARGET_TMPDIR`,
/// on the same file system), with nothing beside it.
fn candor_alone() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let candor = dir.path().join("candor");
    if std::fs::hard_link(candor_bin(), &candor).is_err() {
        std::fs::copy(candor_bin(), &candor).unwrap();
    }
    (dir, candor)
}

#[tokio::test]
async fn without_a_lean_launcher_of_its_build_beside_it_candor_launches_commands_itself_confined() {
    use std::os::unix::fs::PermissionsExt;
    require_sandbox();
    let (dir, candor) = candor_alone();
    let outside = tempfile::tempdir().unwrap();
    let command = who_launched(outside.path());
    // Nothing beside it, then a launcher of another build (it would say
    // so when probed, and leaves a mark if it is ever run otherwise).
    let fake = dir.path().join("candor-sandbox");
    let mark = dir.path().join("fake-ran");
    for stale in [false, true] {
        if stale {
            std::fs::write(
                &fake,
                format!(
                    "#!/bin/sh\nif [ \"$2\" = --probe ]; then echo '{{\"landlockAbi\":7,\"userNamespace\":true,\"mountNamespace\":true,\"pidNamespace\":true,\"networkNamespace\":true,\"seccomp\":true,\"build\":\"0000000000000000\"}}'; exit 0; fi\ntouch {}\n",
                    mark.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        for terminal in [false, true] {
            let (said, argvs) = ran_by(&candor, None, &command, terminal).await;
            // Its own init, or its house's (`sandbox::house`).
            assert!(
                a_second_stage_of(&said, &candor.display().to_string()),
                "not candor itself (stale: {stale}, terminal: {terminal}): {said}"
            );
            assert!(said.contains("wrote=1"), "{said}");
            assert!(!outside.path().join("escaped").exists());
            for argv in argvs {
                assert_eq!(argv[0], candor.display().to_string(), "{argv:?}");
            }
        }
    }
    assert!(!mark.exists(), "the launcher of another build was run");
}

/// The attack: the session's house never says ready (a launcher that
/// hangs, a kernel that stalls). A session's first command waits for its
/// house only a moment (`Confiner::house_settled`), never for the
/// house's own setup bound, and runs in a launcher of its own.
#[tokio::test]
async fn a_house_that_never_gets_ready_does_not_hold_the_sessions_commands() {
    use std::os::unix::fs::PermissionsExt;
    require_sandbox();
    let (dir, candor) = candor_alone();
    // Beside it, the lean launcher of its build, but for the house, which
    // hangs (it would be killed at the house's setup bound, 10 s).
    let lean = Path::new(candor_bin()).with_file_name("candor-sandbox");
    let beside = dir.path().join("candor-sandbox");
    std::fs::write(
        &beside,
        format!(
            "#!/bin/sh\nif [ \"$2\" = --house ]; then exec sleep 60; fi\nexec {} \"$@\"\n",
            lean.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&beside, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command = "tr '\\0' ' ' < /proc/1/cmdline; echo; echo ran=$((40 + 2))";
    let began = std::time::Instant::now();
    let (said, _) = ran_by(&candor, None, command, false).await;
    let took = began.elapsed();
    assert!(said.contains("ran=42"), "{said}");
    // Confined all the same: a launcher's own second stage, not a room.
    assert!(
        a_second_stage_of(&said, &lean.display().to_string()) && !said.contains("--house-init"),
        "{said}"
    );
    assert!(
        took < Duration::from_secs(5),
        "the command waited {took:?} for a house that never got ready: {said}"
    );
}

/// The processes whose working directory is `dir` (where a spare
/// launcher and its init wait; `dir` without links).
pub(crate) fn processes_in(dir: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == dir))
        .collect()
}

/// Whether a card whose command printed its parent's command line shows
/// it ran in a spare: a spare launcher's second stage (a copy of the
/// spare, `--spare`, whose command line it has), or a room of the
/// session's house (a copy of its init, likewise).
pub(crate) fn ran_in_a_spare(card: &str) -> bool {
    card.contains("__sandbox --spare") || card.contains("__sandbox --house-init")
}

/// Whether `said` (PID 1's command line, printed by the command) names a
/// second stage of `program`: a launcher's or a spare's (a copy of it,
/// with its command line), or a house's init.
fn a_second_stage_of(said: &str, program: &str) -> bool {
    [
        format!("{program} __sandbox {{"),
        format!("{program} __sandbox --spare"),
        format!("{program} __sandbox --house-init"),
    ]
    .iter()
    .any(|line| said.contains(line))
}

/// A spare is made for the namespaces of the boundary it was started in:
/// one started with the network on (no network namespace) must not run a
/// command after the user turned the network off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spare_made_with_the_network_on_does_not_run_a_command_after_it_is_turned_off() {
    require_sandbox();
    let env = TestEnv::new()
        .with_policy(json!({"mode": "bypassPermissions"}))
        .with_user_config("[sandbox]\nnetwork = \"on\"\n");
    // The network interfaces the command sees, one `if=<name>` a line.
    // (and what started it: its parent, the launcher's second stage).
    let interfaces = "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; awk -F: 'NR>2{gsub(/ /,\"\",$1); print \"if=\" $1}' /proc/net/dev";
    let path = env.dir.path().join("script.json");
    let s = script(vec![
        json!({"delayMs": 300, "content": [tool("one", "Bash", json!({ "command": interfaces }))]}),
        respond(json!([text("done")])),
        json!({"delayMs": 300, "content": [tool("two", "Bash", json!({ "command": interfaces }))]}),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    conn.prompt(&session, "/sandbox network off").await;
    conn.prompt(&session, "go again").await;
    let thread = conn.thread(&session);
    let seen = |id: &str| -> (String, Vec<String>) {
        let text = thread.card(id).text();
        let names = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("if="))
            .map(str::to_owned)
            .collect();
        (text, names)
    };
    // The control: with the network on, the command shares candor's
    // network (an interface besides `lo`); it ran in a spare, and another
    // was started after it, for the same boundary.
    let (one, names) = seen("one");
    assert!(ran_in_a_spare(&one), "{one}");
    assert!(one.contains("network on"), "{one}");
    assert!(names.iter().any(|n| n != "lo"), "{one}");
    // Turned off: the waiting spare (no network namespace) is let go, and
    // the command sees only its own loopback, in the spare the turn
    // started for the boundary as it now is.
    let (two, names) = seen("two");
    assert_eq!(names, vec!["lo".to_owned()], "{two}");
    assert!(ran_in_a_spare(&two), "{two}");
    assert!(two.contains("network off"), "{two}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_first_command_goes_to_a_spare_started_while_the_model_answers() {
    require_sandbox();
    let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
    let outside = outside(&env);
    let command = format!(
        "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; echo x > {}/w; echo wrote=$?",
        outside.display()
    );
    let path = env.dir.path().join("script.json");
    // The model takes half a second to answer, as a real one takes more.
    let s = script(vec![
        json!({"delayMs": 500, "content": [tool("one", "Bash", json!({ "command": command }))]}),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    };
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let one = conn.thread(&session).card("one").text();
    // The first command ran under a spare's second stage (a room of the
    // session's house once it was ready, else a spare launcher's init),
    // confined like any other: the write outside the project was refused.
    assert!(ran_in_a_spare(&one), "{one}");
    assert!(one.contains("wrote=1"), "{one}");
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
}

#[tokio::test]
async fn the_next_command_goes_to_a_spare_launcher_confined_alike_which_ends_with_candor() {
    require_sandbox();
    for killed in [false, true] {
        let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
        let outside = outside(&env);
        let command = |n: u32| {
            format!(
                "tr '\\0' ' ' < /proc/1/cmdline; echo; echo x > {}/w{n}; echo wrote=$?",
                outside.display()
            )
        };
        let path = env.dir.path().join("script.json");
        let s = script(vec![
            respond(json!([tool(
                "one",
                "Bash",
                json!({ "command": command(1) })
            )])),
            respond(json!([tool(
                "two",
                "Bash",
                json!({ "command": command(2) })
            )])),
            respond(json!([tool(
                "three",
                "Bash",
                json!({ "command": command(3) })
            )])),
            respond(json!([text("done")])),
        ]);
        std::fs::write(&path, s.to_string()).unwrap();
        let env = TestEnv {
            script: Some(path),
            ..env
        };
        let project = env.project.canonicalize().unwrap();
        let mut conn = Conn::spawn(env);
        let session = conn.ready().await;
        conn.prompt(&session, "go").await;
        let thread = conn.thread(&session);
        let (one, two, three) = (
            thread.card("one").text(),
            thread.card("two").text(),
            thread.card("three").text(),
        );
        // The next commands' launchers were waiting, started ahead, in the
        // session's house (`sandbox::house`, its init PID 1) once it was
        // ready; the first one's, started when the prompt came, may or may
        // not be ready before this model's instant answer (the test below
        // waits).
        let ran_in = |card: &str| {
            ["__sandbox {", "__sandbox --spare", "__sandbox --house-init"]
                .iter()
                .any(|init| card.contains(init))
        };
        assert!(ran_in(&one), "{one}");
        assert!(ran_in(&two), "{two}");
        assert!(three.contains("__sandbox --house-init"), "{three}");
        for card in [&one, &two, &three] {
            assert!(card.contains("wrote=1"), "{card}");
        }
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        // A spare waits for the next command, in the project.
        assert!(
            eventually(Duration::from_secs(5), || !processes_in(&project)
                .is_empty())
            .await,
            "no spare launcher waits"
        );
        if killed {
            conn.child().start_kill().unwrap();
            let _ = conn.child().wait().await;
            assert!(
                eventually(Duration::from_secs(5), || processes_in(&project).is_empty()).await,
                "a spare launcher outlived candor, killed: {:?}",
                processes_in(&project)
            );
        } else {
            let _env = conn.end().await;
            assert!(
                eventually(Duration::from_secs(5), || processes_in(&project).is_empty()).await,
                "a spare launcher outlived its session: {:?}",
                processes_in(&project)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_command_is_asked_to_end_before_it_is_killed() {
    require_sandbox();
    // The session's first command (a launcher's, no house yet): its
    // stages block the termination signals they forward, which the
    // command must not inherit, or its `trap … TERM` would never run.
    let env = TestEnv::new().with_policy(json!({"mode": "bypassPermissions"}));
    let project = env.project.clone();
    let path = env.dir.path().join("script.json");
    let command =
        "trap 'echo asked >> asked.txt; exit 0' TERM; echo started; while :; do sleep 0.1; done";
    let s = script(vec![
        respond(json!([tool(
            "t",
            "Bash",
            json!({ "command": command, "timeout": 1000 })
        )])),
        respond(json!([text("done")])),
    ]);
    std::fs::write(&path, s.to_string()).unwrap();
    let mut conn = Conn::spawn(TestEnv {
        script: Some(path),
        ..env
    });
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let card = conn.thread(&session).card("t").text();
    assert!(card.contains("sandbox: writes to"), "{card}");
    assert!(card.contains("started"), "{card}");
    assert_eq!(
        std::fs::read_to_string(project.join("asked.txt")).unwrap_or_default(),
        "asked\n",
        "the command was killed without being asked: {card}"
    );
}
