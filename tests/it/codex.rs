//! The Codex bridge: the user's Codex hooks (`~/.codex`, and a trusted
//! project's `.codex/`), run by the built binary with Codex's meaning,
//! through `tests/fixtures/codex/hook.py`.

use std::path::Path;
use std::time::Duration;

use candor::bridges::runner::HookCommand;
use serde_json::{Value, json};

use crate::support::*;

fn hook_py(args: &str) -> String {
    format!(
        "{}/tests/fixtures/codex/hook.py {args}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn hook_id(command: &str, source: &str) -> String {
    let hook = HookCommand {
        command: command.into(),
        args: None,
        timeout: Duration::from_secs(1),
    };
    format!("{} ({source} settings)", hook.label())
}

fn pre(matcher: &str, command: &str) -> Value {
    json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}})
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `$CODEX_HOME` of a test: `~/.codex` with `HOME` the test's directory.
fn codex_home(env: &TestEnv) -> std::path::PathBuf {
    env.dir.path().join(".codex")
}

/// Trusts the project in the user's Codex config (plus `extra` TOML).
fn trust(env: &TestEnv, extra: &str) {
    write(
        &codex_home(env).join("config.toml"),
        &format!(
            "[projects.{:?}]\ntrust_level = \"trusted\"\n{extra}",
            env.project.display().to_string()
        ),
    );
}

fn scripted(calls: Vec<Value>) -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!(calls)),
        respond(json!([text("done")])),
    ]))
}

async fn run(env: TestEnv) -> (Conn, String) {
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "go").await;
    assert!(response.get("error").is_none(), "{response}");
    (conn, session)
}

fn notices(conn: &Conn) -> String {
    told(conn).join("\n")
}

fn printed(conn: &Conn, session: &str, id: &str) -> String {
    record(conn, session, "tool/result", id).unwrap()["output"]
        .as_str()
        .unwrap()
        .trim()
        .to_owned()
}

#[tokio::test]
async fn a_patch_rewrite_of_an_edit_is_the_edit_that_runs_and_the_diff_shown() {
    let env = scripted(vec![tool(
        "e",
        "Edit",
        json!({"file_path": "a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
    )]);
    env.file("a.rs", "fn main() {\n    let x = 1;\n}\n");
    // The matcher names Edit: Codex matches apply_patch by Edit and Write.
    write(
        &codex_home(&env).join("hooks.json"),
        &pre("Edit", &hook_py("patch-x3")).to_string(),
    );
    let (conn, session) = run(env).await;
    let file = conn.env.project.join("a.rs");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "fn main() {\n    let x = 3; // checked\n}\n"
    );
    let id = hook_id(&hook_py("patch-x3"), "Codex user");
    let call = record(&conn, &session, "tool/call", "e").unwrap();
    assert_eq!(call["arguments"]["new_string"], "let x = 3; // checked");
    assert_eq!(call["originalArguments"]["new_string"], "let x = 2;");
    assert_eq!(call["rewrittenBy"], json!([id]));
    assert_eq!(call["decision"]["by"], format!("hook:{id}"));
    let first = &card_frames(&conn, &session, "e")[0];
    assert_eq!(first["rawInput"]["new_string"], "let x = 3; // checked");
    let diff = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .unwrap();
    assert!(
        diff["newText"]
            .as_str()
            .unwrap()
            .contains("let x = 3; // checked")
    );
    assert!(conn.permission_requests.is_empty(), "the hook allowed it");
    let told = result_in_request(&conn, 1, "e")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        told.starts_with(&format!("[candor] A hook ({id}) rewrote this call")),
        "{told}"
    );
}

#[tokio::test]
async fn codex_hooks_see_bash_as_a_bare_command_with_the_turn_and_model() {
    let env = scripted(vec![
        tool(
            "b",
            "Bash",
            json!({"command": "echo hi", "description": "greet", "timeout": 5000}),
        ),
        tool("r", "Read", json!({"file_path": "notes.txt"})),
    ]);
    env.file("notes.txt", "n\n");
    let seen = env.dir.path().join("seen.jsonl");
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": hook_py(&format!("record {}", seen.display()))}]}]},
                          "permissions": {}});
    write(&codex_home(&env).join("hooks.json"), &settings.to_string());
    let (conn, session) = run(env).await;
    let inputs: Vec<Value> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Only the shell call: Codex runs no tool hooks for reads.
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    let input = &inputs[0];
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "echo hi"}));
    assert_eq!(input["session_id"], session);
    assert_eq!(
        input["model"],
        Value::Null,
        "the scripted provider has no model name"
    );
    assert!(!input["turn_id"].as_str().unwrap().is_empty());
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["permission_mode"], "default");
    assert!(input.get("env_project_dir").is_none());
    assert_eq!(printed(&conn, &session, "b"), "hi");
}

#[tokio::test]
async fn codex_rejects_ask_and_a_quiet_exit_2_and_the_call_goes_on() {
    for (kind, why) in [
        ("ask", "Codex rejects `permissionDecision: \"ask\"`"),
        (
            "exit2-quiet",
            "exited with status 2 but wrote nothing on stderr",
        ),
    ] {
        let env = scripted(vec![tool(
            "t",
            "Bash",
            json!({"command": "echo went ahead"}),
        )]);
        write(
            &codex_home(&env).join("hooks.json"),
            &pre("Bash", &hook_py(kind)).to_string(),
        );
        let (conn, session) = run(env).await;
        let call = record(&conn, &session, "tool/call", "t").unwrap();
        assert!(
            call["hooks"][0]["error"].as_str().unwrap().contains(why),
            "{kind}: {call}"
        );
        assert_eq!(printed(&conn, &session, "t"), "went ahead", "{kind}");
        assert!(notices(&conn).contains(why), "{kind}: {}", notices(&conn));
    }
    // With something on stderr, exit 2 blocks.
    let env = scripted(vec![tool("t", "Bash", json!({"command": "echo never"}))]);
    write(
        &codex_home(&env).join("hooks.json"),
        &pre("Bash", &hook_py("exit2-loud")).to_string(),
    );
    let (conn, session) = run(env).await;
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["decision"]["outcome"], "deny");
    assert_eq!(call["decision"]["reason"], "blocked by the Codex hook");
    assert!(record(&conn, &session, "tool/started", "t").is_none());
}

#[tokio::test]
async fn project_hooks_run_only_in_a_trusted_project() {
    let setup = |trusted: bool| {
        let env = scripted(vec![tool("t", "Bash", json!({"command": "echo ran"}))]);
        write(
            &env.project.join(".codex/hooks.json"),
            &pre("Bash", &hook_py("deny")).to_string(),
        );
        if trusted {
            trust(&env, "");
        }
        env
    };
    // Untrusted: the hook stays off (the call is allowed when asked), and
    // the user is told what waits.
    let mut conn = Conn::spawn(setup(false));
    let session = conn.ready().await;
    conn.answer_permissions(&["allow_once"]);
    conn.prompt(&session, "go").await;
    assert_eq!(printed(&conn, &session, "t"), "ran");
    let told = notices(&conn);
    assert!(
        told.contains("not applied until you trust the project")
            && told.contains(&format!("PreToolUse hook (Bash): {}", hook_py("deny"))),
        "{told}"
    );
    assert_eq!(conn.permission_requests.len(), 1);
    assert_eq!(conn.permission_requests[0]["toolCall"]["toolCallId"], "t");
    // Trusted in Codex's config: no question, the hook decides.
    let (conn, session) = run(setup(true)).await;
    assert_eq!(
        conn.permission_requests.len(),
        0,
        "{:?}",
        conn.permission_requests
    );
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["decision"]["reason"], "not in this repository");
    assert_eq!(
        call["decision"]["by"],
        format!("hook:{}", hook_id(&hook_py("deny"), "Codex project"))
    );
}

#[tokio::test]
async fn toml_hooks_the_feature_switch_and_the_order_with_claude_code() {
    // [hooks] in config.toml; Claude Code's hooks fold first, then Codex's.
    let env = scripted(vec![tool("t", "Bash", json!({"command": "echo start"}))]);
    trust(
        &env,
        &format!(
            "\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = {:?}\ntimeoutSec = 30\n",
            hook_py("append codex")
        ),
    );
    let claude = format!(
        "{}/tests/fixtures/claude/events.py append claude",
        env!("CARGO_MANIFEST_DIR")
    );
    write(
        &env.project.join(".claude/settings.json"),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": claude}]}]}})
            .to_string(),
    );
    let (conn, session) = run(env).await;
    assert_eq!(printed(&conn, &session, "t"), "start claude codex");

    let env = scripted(vec![tool("t", "Bash", json!({"command": "echo start"}))]);
    trust(&env, "\n[features]\nhooks = false\n");
    write(
        &codex_home(&env).join("hooks.json"),
        &pre("Bash", &hook_py("deny")).to_string(),
    );
    let (conn, session) = run(env).await;
    assert_eq!(
        printed(&conn, &session, "t"),
        "start",
        "hooks = false was ignored"
    );
    assert!(notices(&conn).contains("Codex hooks are off here"));
}
