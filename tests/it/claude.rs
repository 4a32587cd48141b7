//! The Claude Code bridge: the user's hooks and permission rules from
//! `.claude/settings*.json`, run by the built binary with Claude Code's
//! meaning, through the fixtures in `tests/fixtures/claude/`.
//!
//! For every hook that decides about a call the tests check what ran, the
//! first card, the permission request (if any), the `tool/call` record and
//! the next model request, as the interception tests do.

use std::path::Path;
use std::time::Duration;

use candor::bridges::runner::HookCommand;
use serde_json::{Value, json};

use crate::support::*;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/claude/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The id candor gives a hook: its command line and its settings file.
fn hook_id(command: &str, args: Option<&[&str]>, source: &str) -> String {
    let hook = HookCommand {
        command: command.into(),
        args: args.map(|a| a.iter().map(|s| s.to_string()).collect()),
        timeout: Duration::from_secs(1),
    };
    format!("{} ({source} settings)", hook.label())
}

/// One command hook for `event`, under `matcher`.
fn hook(event: &str, matcher: &str, handler: Value) -> Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [handler]}]}})
}

fn command(cmd: &str) -> Value {
    json!({"type": "command", "command": cmd})
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// A project with these Claude Code project settings and a scripted model
/// that makes `calls`, then says "done".
fn project(calls: Vec<Value>, settings: Value) -> TestEnv {
    let env = TestEnv::scripted(script(vec![
        respond(json!(calls)),
        respond(json!([text("done")])),
    ]));
    write_json(&env.project.join(".claude/settings.json"), &settings);
    env
}

/// The built candor, with the fixtures' `rtk` and `pnpm` stand-ins on PATH,
/// in a project the user trusts in Claude Code (so its settings apply; the
/// trust tests are in `trust.rs`).
fn spawn(env: TestEnv) -> Conn {
    env.trust_project();
    let mut cmd = candor_command(&env);
    let path = std::env::var("PATH").unwrap_or_default();
    cmd.env("PATH", format!("{}:{path}", fixture("bin")));
    Conn::spawn_with(env, cmd)
}

/// Runs one prompt; returns the connection and the session id.
async fn run(env: TestEnv) -> (Conn, String) {
    let mut conn = spawn(env);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "go").await;
    assert!(response.get("error").is_none(), "{response}");
    (conn, session)
}

fn notices(conn: &Conn) -> Vec<String> {
    told(conn)
}

/// What the call printed, as its `tool/result` records it (the card shows
/// the same inside a console block, under any rewrite note).
fn output(conn: &Conn, session: &str, id: &str) -> String {
    let result =
        record(conn, session, "tool/result", id).unwrap_or_else(|| panic!("no result for {id}"));
    let printed = result["output"].as_str().unwrap_or_default().to_owned();
    let card = conn.thread(session).card(id).text();
    assert!(
        card.contains(printed.trim()),
        "the card {card:?} lacks {printed:?}"
    );
    printed
}

#[tokio::test]
async fn an_rtk_rewrite_is_what_ran_what_the_card_shows_and_what_the_model_is_told() {
    let original = json!({"command": "LANG=C cat notes.txt", "description": "read the notes"});
    let effective =
        json!({"command": "LANG=C rtk read notes.txt", "description": "read the notes"});
    let env = project(
        vec![tool("t", "Bash", original.clone())],
        hook("PreToolUse", "Bash", command(&fixture("rtk.py"))),
    );
    env.file("notes.txt", "remember the milk\n");
    let (conn, session) = run(env).await;
    let id = hook_id(&fixture("rtk.py"), None, "project");
    // What ran: the rtk stand-in.
    let out = output(&conn, &session, "t");
    assert!(
        out.contains("[rtk read]") && out.contains("remember the milk"),
        "{out}"
    );
    // The record: effective arguments, the original beside them, who did it.
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["arguments"], effective);
    assert_eq!(call["originalArguments"], original);
    assert_eq!(call["rewrittenBy"], json!([id]));
    assert_eq!(
        call["hooks"],
        json!([{"hook": id, "decision": "allow", "reason": "RTK auto-rewrite", "rewrote": true}])
    );
    assert_eq!(call["decision"]["by"], format!("hook:{id}"));
    // The first card already shows the rewrite; no prompt (the hook allowed it).
    let frames = card_frames(&conn, &session, "t");
    assert_eq!(frames[0]["sessionUpdate"], "tool_call");
    assert_eq!(frames[0]["rawInput"], effective);
    assert_eq!(frames[0]["title"], "`LANG=C rtk read notes.txt`");
    assert!(conn.permission_requests.is_empty());
    // The model: its own call verbatim, told what ran instead.
    assert_eq!(call_in_request(&conn, 1, "t")["input"], original);
    let result = result_in_request(&conn, 1, "t");
    let told = result["content"].as_str().unwrap();
    assert!(
        told.starts_with(&format!(
            "[candor] A hook ({id}) rewrote this call before it ran. It ran with {effective}"
        )),
        "{told}"
    );
}

#[tokio::test]
async fn a_hook_sees_claude_codes_input_and_environment() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool("t", "Bash", json!({"command": "echo hi"}))])),
        respond(json!([text("done")])),
    ]));
    let seen = env.dir.path().join("seen.jsonl");
    let recorder = format!("{} record {}", fixture("events.py"), seen.display());
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"permissions": {"allow": ["Bash(echo *)"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [command(&recorder)]}]}}),
    );
    let (conn, session) = run(env).await;
    let text = std::fs::read_to_string(&seen).unwrap();
    let input: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let project = conn.env.project.display().to_string();
    assert_eq!(input["session_id"], session);
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "echo hi"}));
    assert_eq!(input["tool_use_id"], "t");
    assert_eq!(input["cwd"], project);
    assert_eq!(input["permission_mode"], "default");
    assert_eq!(input["env_project_dir"], project);
    let transcript = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    assert_eq!(input["transcript_path"], transcript.display().to_string());
    // The allow rule from the same settings file let it run unasked.
    assert!(conn.permission_requests.is_empty());
    assert_eq!(conn.thread(&session).card("t").status, "completed");
}

#[tokio::test]
async fn npm_becomes_pnpm_and_is_blocked_outright_in_a_pnpm_project() {
    let settings = hook("PreToolUse", "Bash", command(&fixture("pnpm.py")));
    let env = project(
        vec![tool(
            "t",
            "Bash",
            json!({"command": "npm install left-pad"}),
        )],
        settings.clone(),
    );
    let (conn, session) = run(env).await;
    assert_eq!(output(&conn, &session, "t").trim(), "[pnpm] add left-pad");
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["arguments"]["command"], "pnpm add left-pad");
    assert_eq!(
        card_frames(&conn, &session, "t")[0]["rawInput"]["command"],
        "pnpm add left-pad"
    );

    let env = project(
        vec![tool(
            "t",
            "Bash",
            json!({"command": "npm install left-pad"}),
        )],
        settings,
    );
    env.file("pnpm-lock.yaml", "lockfileVersion: 9\n");
    let (conn, session) = run(env).await;
    let id = hook_id(&fixture("pnpm.py"), None, "project");
    let reason = "BLOCKED: This project uses pnpm, not npm. Use pnpm instead.";
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(
        call["decision"],
        json!({"outcome": "deny", "reason": reason, "by": format!("hook:{id}")})
    );
    assert!(
        record(&conn, &session, "tool/started", "t").is_none(),
        "nothing ran"
    );
    let card = conn.thread(&session).card("t");
    assert_eq!(card.status, "failed");
    assert_eq!(card.text(), format!("Refused by hook {id}: {reason}"));
    let told = result_in_request(&conn, 1, "t");
    assert_eq!(told["content"], format!("Refused by hook {id}: {reason}"));
    assert_eq!(told["isError"], true);
    assert!(conn.permission_requests.is_empty());
}

#[tokio::test]
async fn rm_rf_is_refused_even_in_bypass_mode_by_json_or_by_exit_2() {
    for (args, reason) in [
        (vec![], "Destructive command blocked by hook"),
        (
            vec!["--exit2"],
            "Destructive command blocked by hook (exit 2)",
        ),
    ] {
        let handler = json!({"type": "command", "command": fixture("block-rm.py"), "args": args, "if": "Bash(rm *)"});
        let settings = hook("PreToolUse", "Bash", handler);
        let env = project(
            vec![
                tool("rm", "Bash", json!({"command": "rm -rf build"})),
                tool("echo", "Bash", json!({"command": "echo still here"})),
            ],
            settings,
        );
        // bypassPermissions from the user's own settings (a project's own
        // cannot turn it on).
        write_json(
            &env.dir.path().join(".claude/settings.json"),
            &json!({"permissions": {"defaultMode": "bypassPermissions"}}),
        );
        std::fs::create_dir_all(env.project.join("build")).unwrap();
        let (conn, session) = run(env).await;
        let id = hook_id(&fixture("block-rm.py"), Some(&args), "project");
        assert!(conn.env.project.join("build").is_dir(), "rm ran");
        let call = record(&conn, &session, "tool/call", "rm").unwrap();
        assert_eq!(call["decision"]["outcome"], "deny");
        assert_eq!(call["decision"]["reason"], reason);
        assert_eq!(call["decision"]["by"], format!("hook:{id}"));
        assert_eq!(
            conn.thread(&session).card("rm").text(),
            format!("Refused by hook {id}: {reason}")
        );
        // The `if` filter kept the hook away from a command it is not for;
        // bypass mode ran that one without asking.
        let echo = record(&conn, &session, "tool/call", "echo").unwrap();
        assert!(echo.get("hooks").is_none(), "{echo}");
        assert_eq!(echo["decision"]["by"], "mode:bypassPermissions");
        assert_eq!(output(&conn, &session, "echo").trim(), "still here");
        assert!(conn.permission_requests.is_empty());
    }
}

#[tokio::test]
async fn a_write_to_tmp_is_redirected_into_the_project_and_the_diff_shows_where() {
    let original =
        json!({"file_path": "/tmp/candor-claude-test/report.txt", "content": "all green\n"});
    let env = project(
        vec![tool("w", "Write", original.clone())],
        hook("PreToolUse", "Write", command(&fixture("tmp-redirect.py"))),
    );
    let target = env.project.join("tmp/candor-claude-test/report.txt");
    let (conn, session) = run(env).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "all green\n");
    assert!(!Path::new("/tmp/candor-claude-test/report.txt").exists());
    let call = record(&conn, &session, "tool/call", "w").unwrap();
    assert_eq!(call["arguments"]["file_path"], target.display().to_string());
    assert_eq!(call["arguments"]["content"], "all green\n");
    assert_eq!(call["originalArguments"], original);
    let first = &card_frames(&conn, &session, "w")[0];
    assert_eq!(first["rawInput"]["file_path"], target.display().to_string());
    assert_eq!(first["locations"][0]["path"], target.display().to_string());
    let diff = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .expect("a diff on the first card");
    assert_eq!(diff["path"], target.display().to_string());
    assert!(conn.permission_requests.is_empty(), "the hook allowed it");
}

#[tokio::test]
async fn ask_with_a_rewrite_asks_about_the_rewritten_command() {
    let env = project(
        vec![tool("d", "Bash", json!({"command": "./deploy.sh prod"}))],
        hook("PreToolUse", "Bash", command(&fixture("ask-dry-run.py"))),
    );
    env.file("deploy.sh", "#!/bin/sh\necho \"deploying with: $*\"\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let path = env.project.join("deploy.sh");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (conn, session) = run(env).await;
    assert_eq!(conn.permission_requests.len(), 1);
    let asked = &conn.permission_requests[0]["toolCall"];
    assert_eq!(asked["rawInput"]["command"], "./deploy.sh prod --dry-run");
    assert_eq!(
        card_frames(&conn, &session, "d")[0]["rawInput"]["command"],
        "./deploy.sh prod --dry-run"
    );
    let asked_text = asked.to_string();
    assert!(
        asked_text.contains("deployments run as a dry run first"),
        "{asked_text}"
    );
    assert_eq!(
        output(&conn, &session, "d").trim(),
        "deploying with: prod --dry-run"
    );
    let call = record(&conn, &session, "tool/call", "d").unwrap();
    assert_eq!(call["decision"]["outcome"], "ask");
    assert_eq!(call["arguments"]["command"], "./deploy.sh prod --dry-run");
}

#[tokio::test]
async fn broken_hooks_fail_open_and_the_user_is_told_which_and_why() {
    let cases: Vec<(Value, &str)> = vec![
        (
            command(&format!("{} not-json", fixture("bad.py"))),
            "not valid JSON",
        ),
        (
            command(&format!("{} huge", fixture("bad.py"))),
            "longer than 1 MiB and was cut",
        ),
        (
            json!({"type": "command", "command": format!("{} sleepy", fixture("bad.py")), "timeout": 1}),
            "did not finish within its timeout",
        ),
        (
            command(&format!("{} crash", fixture("bad.py"))),
            "exited with status 1",
        ),
        (
            command("/nonexistent/claude-hook.sh"),
            "exited with status 127",
        ),
    ];
    for (handler, why) in cases {
        let env = project(
            vec![tool("t", "Bash", json!({"command": "echo went ahead"}))],
            hook("PreToolUse", "Bash", handler.clone()),
        );
        let (conn, session) = run(env).await;
        let call = record(&conn, &session, "tool/call", "t").unwrap();
        let error = call["hooks"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains(why), "{handler}: {call}");
        assert_eq!(call["hooks"][0]["decision"], "pass");
        // Fail open: the call went on through the normal flow (it asked,
        // the test's user said yes) and ran.
        assert_eq!(call["decision"]["outcome"], "ask");
        assert_eq!(output(&conn, &session, "t").trim(), "went ahead");
        let told = notices(&conn);
        assert!(
            told.iter()
                .any(|n| n.contains("failed and was passed over") && n.contains(why)),
            "{handler}: {told:?}"
        );
    }
}

#[tokio::test]
async fn misplaced_or_partial_rewrites_never_run() {
    // A top-level updatedInput is ignored (with a notice); the approve stands.
    let env = project(
        vec![tool("t", "Bash", json!({"command": "echo as asked"}))],
        hook(
            "PreToolUse",
            "Bash",
            command(&format!("{} legacy-input", fixture("bad.py"))),
        ),
    );
    let (conn, session) = run(env).await;
    assert_eq!(output(&conn, &session, "t").trim(), "as asked");
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert!(call.get("originalArguments").is_none(), "{call}");
    assert_eq!(call["hooks"][0]["decision"], "allow");
    assert!(
        notices(&conn)
            .iter()
            .any(|n| n.contains("top-level updatedInput was ignored")),
        "{:?}",
        notices(&conn)
    );
    // A rewrite without `command` fails the tool's schema: the call is refused.
    let env = project(
        vec![tool("t", "Bash", json!({"command": "echo never"}))],
        hook(
            "PreToolUse",
            "Bash",
            command(&format!("{} partial-input", fixture("bad.py"))),
        ),
    );
    let (conn, session) = run(env).await;
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["decision"]["outcome"], "deny");
    let reason = call["decision"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("rewrite is not valid input") && reason.contains("command"),
        "{reason}"
    );
    assert_eq!(
        call["arguments"],
        json!({"command": "echo never"}),
        "the bad rewrite never took effect"
    );
    assert!(record(&conn, &session, "tool/started", "t").is_none());
}

#[tokio::test]
async fn a_prompt_hook_can_refuse_a_prompt_or_add_context() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("hello")]))]));
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [
            command(&format!("{} block-secrets", fixture("events.py"))),
            command(&format!("{} context", fixture("events.py"))),
        ]}]}}),
    );
    let mut conn = spawn(env);
    let session = conn.ready().await;
    let refused = conn.prompt(&session, "my password is hunter2").await;
    assert_eq!(refused["result"]["stopReason"], "refusal", "{refused}");
    assert!(
        conn.env.model_requests().is_empty(),
        "the model saw a refused prompt"
    );
    assert!(
        notices(&conn)
            .iter()
            .any(|n| n.contains("blocked this prompt: prompts must not contain passwords")),
        "{:?}",
        notices(&conn)
    );
    let log = conn.env.log(&session);
    assert!(log.iter().any(|r| r["type"] == "prompt/blocked"));
    let answered = conn.prompt(&session, "hi there").await;
    assert_eq!(answered["result"]["stopReason"], "end_turn");
    let request = &conn.env.model_requests()[0];
    let sent = request["messages"].to_string();
    assert!(
        !sent.contains("hunter2"),
        "the refused prompt reached the model: {sent}"
    );
    assert!(sent.contains("hi there"));
    assert!(
        sent.contains("Context from the UserPromptSubmit hook"),
        "{sent}"
    );
    assert!(
        sent.contains("UserPromptSubmit context: branch main"),
        "{sent}"
    );
}

#[tokio::test]
async fn session_start_context_opens_the_first_request_and_comes_after_the_response() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("hello")]))]));
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [command(&format!("{} context", fixture("events.py")))]}],
            "Notification": [{"hooks": [command("true")]}]
        }}),
    );
    let mut conn = spawn(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let first = conn.env.model_requests()[0]["messages"][0].clone();
    let text = first.to_string();
    assert!(
        text.contains("Context from the SessionStart hook"),
        "{text}"
    );
    assert!(text.contains("SessionStart context: branch main"), "{text}");
    // Nothing about the session reached the client before its id did.
    let response_at = conn
        .frames
        .iter()
        .position(|f| f["result"]["sessionId"] == session)
        .unwrap();
    let first_update = conn
        .frames
        .iter()
        .position(|f| f["method"] == "session/update")
        .unwrap();
    assert!(response_at < first_update);
    assert!(
        notices(&conn)
            .iter()
            .any(|n| n.contains("Notification are not run by candor")),
        "{:?}",
        notices(&conn)
    );
}

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_once_and_a_stubborn_one_is_cut_off() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("all done")])),
        respond(json!([text("tests pass, done")])),
    ]));
    let seen = env.dir.path().join("stop.jsonl");
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"hooks": {"Stop": [{"hooks": [
            command(&format!("{} until-tests", fixture("events.py"))),
            command(&format!("{} record {}", fixture("events.py"), seen.display())),
        ]}]}}),
    );
    let mut conn = spawn(env);
    let session = conn.ready().await;
    let done = conn.prompt(&session, "fix it").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let requests = conn.env.model_requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1]["messages"].to_string();
    assert!(
        second.contains("did not let you end the turn yet: run the tests before you stop"),
        "{second}"
    );
    let active: Vec<bool> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["stop_hook_active"]
                .as_bool()
                .unwrap()
        })
        .collect();
    assert_eq!(active, [false, true]);

    let responses = (0..10)
        .map(|i| respond(json!([text(&format!("done {i}"))])))
        .collect();
    let env = TestEnv::scripted(script(responses));
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"hooks": {"Stop": [{"hooks": [command(&format!("{} always-block", fixture("events.py")))]}]}}),
    );
    let mut conn = spawn(env);
    let session = conn.ready().await;
    let done = conn.prompt(&session, "fix it").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(conn.env.model_requests().len(), 6, "1 + 5 continuations");
    assert!(
        notices(&conn)
            .iter()
            .any(|n| n.contains("candor ended the turn"))
    );
}

#[tokio::test]
async fn post_tool_use_hooks_add_context_or_flag_the_result_for_the_model() {
    for (kind, expected) in [
        ("post-context", "adds: the command was: echo hi"),
        (
            "post-block",
            "flagged this result: that output leaks a token",
        ),
    ] {
        let mut settings = hook(
            "PostToolUse",
            "Bash",
            command(&format!("{} {kind}", fixture("events.py"))),
        );
        settings["permissions"] = json!({"allow": ["Bash(echo *)"]});
        let env = project(
            vec![tool("t", "Bash", json!({"command": "echo hi"}))],
            settings,
        );
        let (conn, session) = run(env).await;
        let told = result_in_request(&conn, 1, "t");
        let content = told["content"].as_str().unwrap();
        assert!(content.starts_with("hi"), "{content}");
        assert!(content.contains(expected), "{content}");
        assert!(conn.thread(&session).card("t").text().contains(expected));
    }
}

#[tokio::test]
async fn sources_combine_in_order_once_each_and_managed_settings_have_the_last_word() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool("t", "Bash", json!({"command": "echo start"}))])),
        respond(json!([text("done")])),
    ]));
    let append = |word: &str| command(&format!("{} append {word}", fixture("events.py")));
    let shared = env.dir.path().join("shared.jsonl");
    let recorder = command(&format!(
        "{} record {}",
        fixture("events.py"),
        shared.display()
    ));
    let group = |hooks: Vec<Value>| json!({"PreToolUse": [{"matcher": "Bash", "hooks": hooks}]});
    // ~/.claude (HOME is the test's directory), the project, local, managed.
    write_json(
        &env.dir.path().join(".claude/settings.json"),
        &json!({"hooks": group(vec![append("user"), recorder.clone()]), "permissions": {"allow": ["Bash(echo *)"]}}),
    );
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"hooks": group(vec![append("project"), recorder.clone()])}),
    );
    write_json(
        &env.project.join(".claude/settings.local.json"),
        &json!({"hooks": group(vec![append("local")])}),
    );
    write_json(
        &env.dir.path().join("managed/managed-settings.json"),
        &json!({"hooks": group(vec![append("managed")])}),
    );
    let (conn, session) = run(env).await;
    assert_eq!(
        output(&conn, &session, "t").trim(),
        "start user project local managed"
    );
    // The recorder, configured twice, ran once.
    assert_eq!(std::fs::read_to_string(&shared).unwrap().lines().count(), 1);
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["rewrittenBy"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn disable_all_hooks_and_managed_only_are_respected() {
    let append = |word: &str| command(&format!("{} append {word}", fixture("events.py")));
    let group = |word: &str| json!({"PreToolUse": [{"matcher": "Bash", "hooks": [append(word)]}]});
    for (project_extra, managed_extra, expected) in [
        (json!({"disableAllHooks": true}), json!({}), "start managed"),
        (
            json!({}),
            json!({"allowManagedHooksOnly": true}),
            "start managed",
        ),
        (json!({}), json!({"disableAllHooks": true}), "start"),
    ] {
        let env = TestEnv::scripted(script(vec![
            respond(json!([tool("t", "Bash", json!({"command": "echo start"}))])),
            respond(json!([text("done")])),
        ]));
        let mut project_settings =
            json!({"hooks": group("project"), "permissions": {"allow": ["Bash(echo *)"]}});
        project_settings
            .as_object_mut()
            .unwrap()
            .extend(project_extra.as_object().unwrap().clone());
        let mut managed = json!({"hooks": group("managed")});
        managed
            .as_object_mut()
            .unwrap()
            .extend(managed_extra.as_object().unwrap().clone());
        write_json(
            &env.project.join(".claude/settings.json"),
            &project_settings,
        );
        write_json(
            &env.dir.path().join("managed/managed-settings.json"),
            &managed,
        );
        let (conn, session) = run(env).await;
        assert_eq!(
            output(&conn, &session, "t").trim(),
            expected,
            "{project_settings} / {managed}"
        );
    }
}

#[tokio::test]
async fn broken_settings_are_notices_and_everything_else_still_loads() {
    let env = project(
        vec![tool("t", "Bash", json!({"command": "echo start"}))],
        json!({
            "permissions": {"allow": ["Bash(echo *)"], "deny": ["Bash(rm"], "defaultMode": "acceptEdits"},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command"},
                {"type": "http", "url": "http://127.0.0.1:9/hook"},
                command(&format!("{} append project", fixture("events.py"))),
            ]}]}
        }),
    );
    // The user's file is not JSON at all.
    let user = env.dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "{ this is not json").unwrap();
    let mut conn = spawn(env);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    assert_eq!(created["modes"]["currentModeId"], "acceptEdits");
    let session = created["sessionId"].as_str().unwrap().to_owned();
    conn.prompt(&session, "go").await;
    assert_eq!(output(&conn, &session, "t").trim(), "start project");
    let told = notices(&conn).join("\n");
    assert!(
        told.contains(&format!("{}: invalid JSON", user.display())),
        "{told}"
    );
    assert!(
        told.contains("a command hook needs a non-empty `command` string"),
        "{told}"
    );
    assert!(told.contains("of type http are not supported"), "{told}");
    assert!(
        told.contains("the deny rule cannot be read")
            && told.contains("candor asks before every call"),
        "{told}"
    );
}

#[tokio::test]
async fn session_end_hooks_run_when_the_editor_goes_away() {
    let env = TestEnv::scripted(script(vec![]));
    let seen = env.dir.path().join("end.jsonl");
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"hooks": {"SessionEnd": [{"hooks": [command(&format!("{} record {}", fixture("events.py"), seen.display()))]}]}}),
    );
    let mut conn = spawn(env);
    let session = conn.ready().await;
    conn.close_input();
    conn.drain().await;
    let status = conn.child().wait().await.unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&seen).expect("the SessionEnd hook did not run");
    let input: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "SessionEnd");
    assert_eq!(input["reason"], "other");
    assert_eq!(input["session_id"], session);
}

/// A cloned repository's own settings cannot start its sessions in
/// bypassPermissions, nor switch off the user's own guard hook; the user
/// is told what was not applied.
#[tokio::test]
async fn a_project_cannot_turn_on_bypass_or_turn_off_the_users_hooks() {
    let append = |word: &str| command(&format!("{} append {word}", fixture("events.py")));
    let env = project(
        vec![tool("t", "Bash", json!({"command": "echo start"}))],
        json!({
            "disableAllHooks": true,
            "permissions": {"defaultMode": "bypassPermissions"},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [append("project")]}]}
        }),
    );
    write_json(
        &env.dir.path().join(".claude/settings.json"),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [append("user")]}]}}),
    );
    let mut conn = spawn(env);
    conn.initialize().await;
    let created = conn
        .call(
            "session/new",
            json!({"cwd": conn.env.project, "mcpServers": []}),
        )
        .await;
    assert_eq!(created["modes"]["currentModeId"], "default", "{created}");
    let session = created["sessionId"].as_str().unwrap().to_owned();
    conn.prompt(&session, "go").await;
    // The user's hook ran (the project's, which its own file turned off, did not).
    assert_eq!(output(&conn, &session, "t").trim(), "start user");
    let told = notices(&conn).join("\n");
    assert!(told.contains("cannot turn that on"), "{told}");
    assert!(told.contains("never turn off your own"), "{told}");
}

/// What Claude Code users' hooks rely on besides decisions: a SessionStart
/// hook's `CLAUDE_ENV_FILE` reaches later Bash calls; `systemMessage` is
/// information, not a warning; `suppressOutput` keeps a hook's context
/// from the user but not from the model; `mcp__…` rules are rules; and the
/// audit trail shows the context hooks gave the model.
#[tokio::test]
async fn env_files_messages_quiet_context_mcp_rules_and_the_audit_trail() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "t",
            "Bash",
            json!({"command": "set -u; echo \"greeting=$GREETING\""})
        )])),
        respond(json!([text("done")])),
    ]));
    let ctx = r#"{"suppressOutput": true, "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "the build is red"}}"#;
    let post = r#"{"systemMessage": "formatted the file", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "ran the formatter"}}"#;
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({
            "permissions": {"allow": ["Bash(set -u*)", "mcp__github__*", "mcp__my-server", "mcp__db__query"]},
            "hooks": {
                "SessionStart": [{"hooks": [command("echo 'export GREETING=hello' >> \"$CLAUDE_ENV_FILE\"; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SessionStart\", \"additionalContext\": \"branch main\"}}'")]}],
                "UserPromptSubmit": [{"hooks": [command(&format!("echo '{ctx}'"))]}],
                "PostToolUse": [{"matcher": "Bash", "hooks": [command(&format!("echo '{post}'"))]}]
            }
        }),
    );
    let (conn, session) = run(env).await;
    assert_eq!(output(&conn, &session, "t").trim(), "greeting=hello");
    let log = conn.env.log(&session);
    let notices: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "session/notice")
        .collect();
    assert!(
        notices
            .iter()
            .all(|n| !n["text"].as_str().unwrap().contains("not a tool name")),
        "{notices:?}"
    );
    let message = notices
        .iter()
        .find(|n| n["text"].as_str().unwrap().contains("formatted the file"))
        .expect("the systemMessage was not shown");
    assert_eq!(message["level"], "info");
    // Quiet context: the model has it, the user was not shown it.
    let quiet = log
        .iter()
        .find(|r| r["type"] == "hook/context" && r["event"] == "UserPromptSubmit")
        .unwrap();
    assert_eq!(quiet["quiet"], true);
    assert!(
        conn.env.model_requests()[0]["messages"]
            .to_string()
            .contains("the build is red")
    );
    assert!(!notices_of(&conn).contains("the build is red"));
    // The audit trail has every context the model was given.
    let env = conn.end().await;
    let audit = |json: bool| audit(&env.home, &session, json);
    let text = audit(false);
    for said in ["branch main", "the build is red", "ran the formatter"] {
        assert!(text.contains(said), "{said}: {text}");
    }
    assert!(
        text.contains("told the model (not shown to the user)"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&audit(true)).unwrap();
    let kinds: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "hookContext").count(),
        2,
        "{kinds:?}"
    );
    let call = json
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "call")
        .unwrap();
    assert_eq!(call["hookNotes"][0]["text"], "ran the formatter");
}

fn notices_of(conn: &Conn) -> String {
    notices(conn).join("\n")
}
