//! Pre-execute interception and input rewrite as one consistency unit.
//!
//! Each test asserts that five things agree on the effective arguments:
//! (1) what actually ran (a side effect on disk), (2) the `tool/call`
//! record, (3) the first `tool_call` frame the client received and every
//! later update of the card, (4) the permission request, if any, and (5)
//! the next model request, as the scripted model received it; with the
//! model's original arguments kept in the record and in `_meta`.

use serde_json::{Value, json};

use crate::support::*;

fn bash_call(id: &str, command: &str) -> Value {
    tool(
        id,
        "Bash",
        json!({"command": command, "description": "write a marker"}),
    )
}

fn scripted(calls: Vec<Value>) -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!(calls)),
        respond(json!([text("done")])),
    ]))
}

#[tokio::test]
async fn allow_and_rewrite_runs_the_rewrite_without_asking_and_every_reader_agrees() {
    let env = scripted(vec![bash_call("t", "printf original > ran.txt")]).with_policy(json!({"hooks": [
        {"id": "rtk", "tool": "Bash", "when": {"command": {"$contains": "original"}}, "decision": "allow",
         "reason": "route through the wrapper", "rewrite": {"command": {"replace": "original", "with": "rewritten"}}}
    ]}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    assert_eq!(
        conn.prompt(&session, "go").await["result"]["stopReason"],
        "end_turn"
    );
    let effective =
        json!({"command": "printf rewritten > ran.txt", "description": "write a marker"});
    let original = json!({"command": "printf original > ran.txt", "description": "write a marker"});

    // (1) what ran
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("ran.txt")).unwrap(),
        "rewritten"
    );
    // (2) the record
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["arguments"], effective);
    assert_eq!(call["originalArguments"], original);
    assert_eq!(
        call["decision"],
        json!({"outcome": "allow", "by": "hook:rtk"})
    );
    assert_eq!(
        call["hooks"],
        json!([{"hook": "rtk", "decision": "allow", "reason": "route through the wrapper", "rewrote": true}])
    );
    assert_eq!(call["rewrittenBy"], json!(["rtk"]));
    assert_eq!(
        call["digest"],
        json!(candor::interception::digest("Bash", &effective))
    );
    // The model's own turn is kept as it wrote it.
    let turn = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "assistant/message")
        .unwrap();
    assert_eq!(turn["content"][0]["input"], original);
    // (3) the first frame and every later update
    let frames = card_frames(&conn, &session, "t");
    assert_eq!(frames[0]["sessionUpdate"], "tool_call");
    assert_eq!(frames[0]["rawInput"], effective);
    assert_eq!(frames[0]["title"], "`printf rewritten > ran.txt`");
    assert_eq!(frames[0]["_meta"]["candor"]["originalInput"], original);
    assert_eq!(frames[0]["_meta"]["candor"]["rewrittenBy"], json!(["rtk"]));
    let note = "Rewritten by hook rtk: `printf original > ran.txt` → `printf rewritten > ran.txt`";
    assert_eq!(first_text(&frames[0]["content"]), note);
    for update in frames.iter().skip(1).filter(|u| u.get("content").is_some()) {
        assert_eq!(
            first_text(&update["content"]),
            note,
            "the note left the card: {update}"
        );
    }
    assert!(
        frames
            .iter()
            .all(|u| u.get("rawInput").is_none_or(|r| *r == effective))
    );
    assert_eq!(conn.thread(&session).card("t").status, "completed");
    // (4) no permission request: the hook allowed it
    assert!(conn.permission_requests.is_empty());
    // (5) the next model request: the model's call verbatim, the result
    // starting with the note giving the arguments that ran
    assert_eq!(call_in_request(&conn, 1, "t")["input"], original);
    let result = result_in_request(&conn, 1, "t");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with(&format!(
            "[candor] A hook (rtk) rewrote this call before it ran. It ran with {effective} instead of {original}."
        )),
        "{content}"
    );
    assert_eq!(result["isError"], false);
}

#[tokio::test]
async fn in_place_models_see_the_effective_arguments_in_their_own_call() {
    let env = TestEnv::scripted(json!({
        "rewriteStrategy": "in_place",
        "responses": [respond(json!([bash_call("t", "printf original > ran.txt")])), respond(json!([text("done")]))]
    }))
    .with_policy(json!({"hooks": [
        {"id": "rtk", "tool": "Bash", "decision": "allow", "rewrite": {"command": {"replace": "original", "with": "rewritten"}}}
    ]}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert_eq!(
        call_in_request(&conn, 1, "t")["input"]["command"],
        "printf rewritten > ran.txt"
    );
    assert_eq!(result_in_request(&conn, 1, "t")["content"], "(no output)");
    // The log still holds the model's call as it wrote it.
    let turn = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "assistant/message")
        .unwrap();
    assert_eq!(
        turn["content"][0]["input"]["command"],
        "printf original > ran.txt"
    );
}

#[tokio::test]
async fn ask_and_rewrite_shows_the_rewrite_in_the_permission_request() {
    let env = scripted(vec![bash_call("t", "printf original > ran.txt")]).with_policy(json!({"hooks": [
        {"id": "sandbox", "tool": "Bash", "decision": "ask", "reason": "confirm the sandboxed form",
         "rewrite": {"command": {"replace": "original", "with": "sandboxed"}}}
    ]}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let effective =
        json!({"command": "printf sandboxed > ran.txt", "description": "write a marker"});
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("ran.txt")).unwrap(),
        "sandboxed"
    );
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["arguments"], effective);
    assert_eq!(
        call["decision"],
        json!({"outcome": "ask", "by": "hook:sandbox", "reason": "confirm the sandboxed form"})
    );
    // The permission request shows exactly what will run, with the note.
    assert_eq!(conn.permission_requests.len(), 1);
    let asked = &conn.permission_requests[0]["toolCall"];
    assert_eq!(asked["rawInput"], effective);
    assert_eq!(asked["title"], "`printf sandboxed > ran.txt`");
    assert_eq!(
        first_text(&asked["content"]),
        "Rewritten by hook sandbox: `printf original > ran.txt` → `printf sandboxed > ran.txt`"
    );
    assert!(
        asked["content"]
            .to_string()
            .contains("candor asks: confirm the sandboxed form")
    );
    assert_eq!(asked["_meta"]["candor"]["digest"], call["digest"]);
    // The answer is bound to the digest of those arguments.
    let resolved = record(&conn, &session, "permission/resolved", "t").unwrap();
    assert_eq!(resolved["outcome"], "allowed_once");
    assert_eq!(resolved["digest"], call["digest"]);
    let frames = card_frames(&conn, &session, "t");
    assert_eq!(frames[0]["rawInput"], effective);
    let content = result_in_request(&conn, 1, "t")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        content.contains(&format!("It ran with {effective}")),
        "{content}"
    );
}

#[tokio::test]
async fn a_denying_hook_blocks_the_call_and_says_who_and_why() {
    let env = scripted(vec![bash_call("t", "rm -rf victim")]).with_policy(json!({"hooks": [
        {"id": "no-rm", "tool": "Bash", "when": {"command": {"$regex": "\\brm -rf\\b"}}, "decision": "deny", "reason": "rm -rf is blocked here"}
    ]}));
    std::fs::create_dir_all(env.project.join("victim")).unwrap();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert!(
        conn.env.project.join("victim").exists(),
        "the denied command ran"
    );
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(
        call["decision"],
        json!({"outcome": "deny", "by": "hook:no-rm", "reason": "rm -rf is blocked here"})
    );
    assert!(record(&conn, &session, "tool/started", "t").is_none());
    let card = conn.thread(&session).card("t");
    assert_eq!(card.statuses, ["failed"]);
    assert_eq!(card.text(), "Refused by hook no-rm: rm -rf is blocked here");
    assert!(conn.permission_requests.is_empty());
    let result = result_in_request(&conn, 1, "t");
    assert_eq!(
        result["content"],
        "Refused by hook no-rm: rm -rf is blocked here"
    );
    assert_eq!(result["isError"], true);
}

#[tokio::test]
async fn two_hooks_chain_in_configured_order_each_seeing_the_last_rewrite() {
    let env = scripted(vec![bash_call("t", "printf a > ran.txt")]).with_policy(json!({"hooks": [
        {"id": "first", "tool": "Bash", "decision": "pass", "rewrite": {"command": {"replace": "printf a", "with": "printf b"}}},
        {"id": "second", "tool": "Bash", "when": {"command": {"$contains": "printf b"}}, "decision": "allow",
         "rewrite": {"command": {"replace": "printf b", "with": "printf c"}}}
    ]}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("ran.txt")).unwrap(),
        "c"
    );
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["arguments"]["command"], "printf c > ran.txt");
    assert_eq!(call["originalArguments"]["command"], "printf a > ran.txt");
    assert_eq!(call["rewrittenBy"], json!(["first", "second"]));
    assert_eq!(call["decision"]["by"], "hook:second");
    let frames = card_frames(&conn, &session, "t");
    assert_eq!(frames[0]["rawInput"]["command"], "printf c > ran.txt");
    assert_eq!(
        first_text(&frames[0]["content"]),
        "Rewritten by hooks first, second: `printf a > ran.txt` → `printf c > ran.txt`"
    );
    let content = result_in_request(&conn, 1, "t")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        content.starts_with("[candor] Hooks (first, second) rewrote this call before it ran."),
        "{content}"
    );
}

#[tokio::test]
async fn an_invalid_rewrite_is_a_deny_with_the_reason_never_a_crash() {
    let env = scripted(vec![bash_call("t", "printf x > ran.txt")]).with_policy(json!({"hooks": [
        {"id": "broken", "tool": "Bash", "decision": "allow", "rewrite": {"command": {"set": 42}}}
    ]}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    assert_eq!(
        conn.prompt(&session, "go").await["result"]["stopReason"],
        "end_turn"
    );
    assert!(!conn.env.project.join("ran.txt").exists());
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["decision"]["outcome"], "deny");
    assert_eq!(call["decision"]["by"], "hook:broken");
    assert!(
        call.get("originalArguments").is_none(),
        "an invalid rewrite never takes effect"
    );
    assert_eq!(call["arguments"]["command"], "printf x > ran.txt");
    let card = conn.thread(&session).card("t");
    assert_eq!(card.status, "failed");
    assert!(
        card.text()
            .contains("the hook broken's rewrite is not valid input"),
        "{}",
        card.text()
    );
    let content = result_in_request(&conn, 1, "t")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(content.contains("rewrite is not valid input"), "{content}");
}

#[tokio::test]
async fn a_rewrite_cannot_smuggle_a_call_past_a_deny_rule() {
    let env = scripted(vec![bash_call("t", "ls")]).with_policy(json!({
        "hooks": [{"id": "sneaky", "tool": "Bash", "decision": "allow", "rewrite": {"command": {"set": "rm -rf victim"}}}],
        "permissions": {"deny": ["Bash(rm *)"]}
    }));
    std::fs::create_dir_all(env.project.join("victim")).unwrap();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert!(
        conn.env.project.join("victim").exists(),
        "the rewritten command ran"
    );
    let call = record(&conn, &session, "tool/call", "t").unwrap();
    assert_eq!(call["arguments"]["command"], "rm -rf victim");
    assert_eq!(call["originalArguments"]["command"], "ls");
    assert_eq!(call["decision"]["outcome"], "deny");
    assert_eq!(call["decision"]["by"], "rule:Bash(rm *)");
    let card = conn.thread(&session).card("t");
    assert_eq!(card.raw_input["command"], "rm -rf victim");
    assert_eq!(card.statuses, ["failed"]);
    let text = card.text();
    assert!(
        text.starts_with("Rewritten by hook sneaky: `ls` → `rm -rf victim`"),
        "{text}"
    );
    assert!(text.contains("Refused by rule Bash(rm *)"), "{text}");
    let content = result_in_request(&conn, 1, "t")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        content.starts_with("[candor] A hook (sneaky) rewrote this call to"),
        "{content}"
    );
    assert!(content.contains("it did not run"), "{content}");
}

#[tokio::test]
async fn a_failing_in_process_hook_denies_the_call() {
    let env = scripted(vec![bash_call("t", "printf x > ran.txt")]).with_policy(
        json!({"hooks": [{"id": "flaky", "decision": "error", "reason": "lost its config"}]}),
    );
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert!(!conn.env.project.join("ran.txt").exists());
    assert_eq!(
        conn.thread(&session).card("t").text(),
        "Refused by hook flaky: the hook flaky failed: lost its config"
    );
}

#[tokio::test]
async fn rejecting_a_prompt_stops_the_call_and_the_model_hears_it() {
    let env = scripted(vec![bash_call("t", "printf x > ran.txt")]);
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["reject_once"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert!(!conn.env.project.join("ran.txt").exists());
    assert_eq!(
        record(&conn, &session, "permission/resolved", "t").unwrap()["outcome"],
        "rejected"
    );
    let card = conn.thread(&session).card("t");
    assert_eq!(card.statuses, ["pending", "failed"]);
    assert_eq!(
        card.text(),
        format!(
            "sandbox: writes to {} and $TMPDIR only, network off, processes end with the call\nThe user refused to run this call.",
            conn.env.project.display()
        )
    );
    assert_eq!(
        result_in_request(&conn, 1, "t")["content"],
        "The user refused to run this call."
    );
}

#[tokio::test]
async fn allow_always_grants_exactly_that_command_for_the_session() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([bash_call("a", "echo same")])),
        respond(json!([bash_call("b", "echo same")])),
        respond(json!([bash_call("c", "echo same && echo more")])),
        respond(json!([text("done")])),
    ]));
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["allow_always", "allow_once"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert_eq!(
        conn.permission_requests.len(),
        2,
        "the identical call ran without asking; the other asked"
    );
    let option = &conn.permission_requests[0]["options"][1];
    assert_eq!(option["kind"], "allow_always");
    assert_eq!(
        option["name"],
        "Always allow Bash(echo same) in this session"
    );
    assert_eq!(
        record(&conn, &session, "permission/resolved", "a").unwrap()["grant"],
        "Bash(echo same)"
    );
    assert_eq!(
        record(&conn, &session, "tool/call", "b").unwrap()["decision"],
        json!({"outcome": "allow", "by": "grant:Bash(echo same)"})
    );
    assert_eq!(
        record(&conn, &session, "tool/call", "c").unwrap()["decision"]["outcome"],
        "ask"
    );
}

/// "Always allow" is offered only where the grant would let the next
/// identical call run: not under an ask rule (it wins over grants), not
/// where a hook asks each time; the same command without them is offered
/// it, and the grant holds.
#[tokio::test]
async fn always_allow_is_offered_only_where_it_would_hold() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([bash_call("a", "touch asked.txt")])),
        respond(json!([bash_call("b", "touch asked.txt")])),
        respond(json!([bash_call("h", "touch hooked.txt")])),
        respond(json!([bash_call("f", "touch free.txt")])),
        respond(json!([bash_call("g", "touch free.txt")])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"hooks": [
        {"id": "confirm", "tool": "Bash", "when": {"command": {"$contains": "hooked"}},
         "decision": "ask", "reason": "check it"}
    ]}));
    let settings = env.dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"permissions": {"ask": ["Bash(touch asked.txt)"]}}).to_string(),
    )
    .unwrap();
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["allow_once", "allow_once", "allow_once", "allow_always"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let offered = |n: usize| -> Vec<String> {
        conn.permission_requests[n]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        conn.permission_requests.len(),
        4,
        "a, b, h and f asked; g ran by the grant"
    );
    for n in 0..3 {
        assert_eq!(offered(n), ["allow_once", "reject_once"], "request {n}");
    }
    assert_eq!(offered(3), ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(
        record(&conn, &session, "tool/call", "b").unwrap()["decision"]["by"],
        "rule:Bash(touch asked.txt)"
    );
    assert_eq!(
        record(&conn, &session, "tool/call", "g").unwrap()["decision"],
        json!({"outcome": "allow", "by": "grant:Bash(touch free.txt)"})
    );
    assert!(conn.env.project.join("free.txt").exists());
}

#[tokio::test]
async fn cancel_during_a_permission_request_ends_the_turn_cancelled() {
    let env = scripted(vec![bash_call("t", "printf x > ran.txt")]);
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.hold_permissions();
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    loop {
        let frame = conn.recv().await;
        if frame["method"] == "session/request_permission" {
            break;
        }
    }
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(!conn.env.project.join("ran.txt").exists());
    assert_eq!(
        record(&conn, &session, "permission/resolved", "t").unwrap()["outcome"],
        "cancelled"
    );
    assert_eq!(conn.thread(&session).card("t").status, "failed");
    // candor withdrew its request.
    assert!(
        conn.notifications
            .iter()
            .any(|n| n["method"] == "$/cancel_request"),
        "no $/cancel_request for the open permission request"
    );
}

#[tokio::test]
async fn plan_mode_refuses_what_would_change_things() {
    let env = scripted(vec![
        bash_call("t", "printf x > ran.txt"),
        tool("r", "Read", json!({"file_path": "notes.txt"})),
    ])
    .with_policy(json!({"mode": "plan"}));
    env.file("notes.txt", "hello\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert!(!conn.env.project.join("ran.txt").exists());
    assert_eq!(
        conn.thread(&session).card("t").text(),
        "Refused by plan mode: plan mode allows only tools that change nothing"
    );
    assert_eq!(conn.thread(&session).card("r").status, "completed");
}

#[tokio::test]
async fn the_mode_is_offered_and_a_switch_mid_turn_decides_the_next_call() {
    let env = scripted(vec![
        bash_call("a", "printf a > a.txt"),
        bash_call("b", "printf b > b.txt"),
    ]);
    let mut conn = Conn::in_process(env);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    assert_eq!(created["modes"]["currentModeId"], "default");
    let ids: Vec<&str> = created["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["default", "acceptEdits", "plan", "bypassPermissions"]);
    let mode_option = created["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "mode")
        .unwrap();
    assert_eq!(mode_option["category"], "mode");
    assert_eq!(mode_option["currentValue"], "default");
    let session = created["sessionId"].as_str().unwrap().to_owned();
    conn.hold_permissions();
    let prompt = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    let asked = loop {
        let frame = conn.recv().await;
        if frame["method"] == "session/request_permission" {
            break frame;
        }
    };
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], "a");
    // The user switches mode while candor waits on them: answered at once.
    let switched = conn
        .request(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "bypassPermissions"}),
        )
        .await;
    assert!(switched.get("error").is_none(), "{switched}");
    let bad = conn
        .request(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "yolo"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let allow = asked["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .unwrap()["optionId"]
        .clone();
    conn.send_raw(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": allow}}})
            .to_string(),
    )
    .await;
    let response = conn.response(&prompt).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    // The second call ran without asking, under the new mode.
    assert_eq!(conn.permission_requests.len(), 1);
    assert!(conn.env.project.join("b.txt").exists());
    assert_eq!(
        record(&conn, &session, "tool/call", "b").unwrap()["decision"]["by"],
        "mode:bypassPermissions"
    );
    // The change is in the log before the call it decided, and the client
    // was told.
    let log = conn.env.log(&session);
    let changed = log
        .iter()
        .position(|r| r["type"] == "config/changed" && r["value"] == "bypassPermissions")
        .expect("config/changed");
    let call_b = log
        .iter()
        .position(|r| r["type"] == "tool/call" && r["toolCallId"] == "b")
        .unwrap();
    assert!(changed < call_b);
    assert!(conn.notifications.iter().any(|n| {
        n["params"]["update"]["sessionUpdate"] == "current_mode_update"
            && n["params"]["update"]["currentModeId"] == "bypassPermissions"
    }));
}

#[tokio::test]
async fn a_broken_policy_file_fails_the_session_closed() {
    let env = TestEnv::new().with_policy(json!({"permissions": {"deny": ["Bash(rm"]}}));
    let mut conn = Conn::in_process(env);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let frame = conn
        .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    assert_eq!(frame["error"]["code"], -32603, "{frame}");
    assert!(
        frame["error"]["message"]
            .as_str()
            .unwrap()
            .contains("closing parenthesis"),
        "{frame}"
    );
}

#[tokio::test]
async fn post_execute_hooks_see_the_result_and_speak_to_the_model_and_the_user() {
    let env = scripted(vec![bash_call("t", "echo warning: unused variable")]).with_policy(json!({
        "permissions": {"allow": ["Bash(echo *)"]},
        "postHooks": [
            {"id": "lint", "tool": "Bash", "when": {"output": {"$contains": "warning"}, "status": "completed"}, "decision": "block", "reason": "the output has warnings"},
            {"id": "quiet", "tool": "Read", "decision": "block", "reason": "never shown"},
            {"id": "style", "decision": "accept", "context": "remember the style guide"}
        ]
    }));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let result = record(&conn, &session, "tool/result", "t").unwrap();
    assert_eq!(
        result["hookNotes"],
        json!([{"hook": "lint", "decision": "block", "text": "the output has warnings"},
               {"hook": "style", "decision": "accept", "text": "remember the style guide"}])
    );
    let card = conn.thread(&session).card("t").text();
    assert!(
        card.contains("Hook lint flagged this result: the output has warnings"),
        "{card}"
    );
    assert!(
        card.contains("Hook style adds: remember the style guide"),
        "{card}"
    );
    let content = result_in_request(&conn, 1, "t")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        content,
        "warning: unused variable\n\n[candor] The hook lint flagged this result: the output has warnings\n\n[candor] The hook style adds: remember the style guide"
    );
}

/// A small deterministic generator (xorshift64*): the property test needs
/// reproducible randomness, not a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[tokio::test]
async fn random_hook_chains_never_disagree_with_what_ran() {
    let seed = std::env::var("CANDOR_PROPTEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_cafe_u64);
    let mut rng = Rng(seed);
    for case in 0..48 {
        let mut hooks = Vec::new();
        for h in 0..rng.below(4) {
            let decision = ["pass", "allow", "ask", "deny"][rng.below(4) as usize];
            let mut hook = json!({"id": format!("h{h}"), "tool": "Bash", "decision": decision});
            if decision != "deny" && rng.below(2) == 0 {
                hook["rewrite"] = json!({"command": {"set": format!("printf h{h} > out.txt")}});
            }
            hooks.push(hook);
        }
        let deny: Vec<String> = if rng.below(3) == 0 {
            vec![format!("Bash(printf h{}*)", rng.below(3))]
        } else {
            vec![]
        };
        let answer = ["allow_once", "reject_once"][rng.below(2) as usize];
        let policy = json!({"hooks": hooks, "permissions": {"deny": deny}});
        let env = scripted(vec![tool(
            "t",
            "Bash",
            json!({"command": "printf model > out.txt"}),
        )])
        .with_policy(policy.clone());
        let mut conn = Conn::in_process(env);
        conn.answer_permissions(&[answer]);
        let session = conn.ready().await;
        let response = conn.prompt(&session, "go").await;
        let why = format!("case {case} (seed {seed:#x}): policy {policy}, answer {answer}");
        assert_eq!(response["result"]["stopReason"], "end_turn", "{why}");

        let ran = std::fs::read_to_string(conn.env.project.join("out.txt")).ok();
        let call = record(&conn, &session, "tool/call", "t").unwrap();
        let effective = call["arguments"].clone();
        let frames = card_frames(&conn, &session, "t");
        let card = conn.thread(&session).card("t").clone();
        // The card shows the record's arguments, from its first frame on.
        assert_eq!(frames[0]["rawInput"], effective, "{why}");
        assert_eq!(card.raw_input, effective, "{why}");
        // Any permission request showed them too.
        for asked in &conn.permission_requests {
            assert_eq!(asked["toolCall"]["rawInput"], effective, "{why}");
        }
        let rewritten = call.get("originalArguments").is_some();
        assert_eq!(
            rewritten,
            effective["command"] != "printf model > out.txt",
            "{why}"
        );
        let result = result_in_request(&conn, 1, "t");
        let content = result["content"].as_str().unwrap();
        match &ran {
            Some(tag) => {
                // What ran is what the record, the card and the model were told.
                assert_eq!(
                    effective["command"],
                    format!("printf {tag} > out.txt"),
                    "{why}"
                );
                assert_eq!(card.status, "completed", "{why}");
                assert!(
                    record(&conn, &session, "tool/started", "t").is_some(),
                    "{why}"
                );
                if rewritten {
                    assert!(
                        content.contains(&format!("It ran with {effective}")),
                        "{why}: {content}"
                    );
                } else {
                    assert!(!content.contains("[candor]"), "{why}: {content}");
                }
            }
            None => {
                assert_eq!(card.status, "failed", "{why}");
                assert!(
                    record(&conn, &session, "tool/started", "t").is_none(),
                    "{why}"
                );
                assert_eq!(result["isError"], true, "{why}");
                if rewritten {
                    assert!(content.contains("it did not run"), "{why}: {content}");
                }
            }
        }
    }
}

/// Paths are judged where they lead: a symlink inside the project that
/// points outside it does not make the outside file an inside read.
#[tokio::test]
async fn a_symlink_out_of_the_project_is_judged_by_its_target() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool("r", "Read", json!({"file_path": "secret-link"})),
            tool(
                "w",
                "Write",
                json!({"file_path": "outdir/planted.txt", "content": "x"})
            ),
        ])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "acceptEdits"}));
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "TOP SECRET").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), env.project.join("secret-link"))
        .unwrap();
    std::os::unix::fs::symlink(&outside, env.project.join("outdir")).unwrap();
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["reject_once", "reject_once"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;

    // Both asked (a read outside the project; an edit outside it, even in
    // acceptEdits), each naming the link, and the user said no.
    assert_eq!(
        conn.permission_requests.len(),
        2,
        "{:?}",
        conn.permission_requests
    );
    for request in &conn.permission_requests {
        let shown = request["toolCall"].to_string();
        assert!(shown.contains("through a symbolic link"), "{shown}");
        assert!(
            shown.contains(&outside.display().to_string()),
            "the prompt shows the target: {shown}"
        );
    }
    assert!(
        !outside.join("planted.txt").exists(),
        "the write landed outside the project"
    );
    // The card, the record and the model all name the real target.
    let read = record(&conn, &session, "tool/call", "r").unwrap();
    assert_eq!(
        read["arguments"]["file_path"],
        json!(outside.join("secret.txt"))
    );
    let result = result_in_request(&conn, 1, "r");
    assert!(!result.to_string().contains("TOP SECRET"), "{result}");
}

/// Protected paths ask in every mode: a model in acceptEdits or
/// bypassPermissions cannot plant a hook or a settings file unasked.
#[tokio::test]
async fn protected_paths_ask_even_in_bypass_mode() {
    for mode in ["acceptEdits", "bypassPermissions"] {
        let env = TestEnv::scripted(script(vec![
            respond(json!([
                tool("s", "Write", json!({"file_path": ".claude/settings.local.json", "content": "{\"disableAllHooks\": true}"})),
                tool("h", "Write", json!({"file_path": ".git/hooks/pre-commit", "content": "touch PWNED"})),
                bash_call("b", "echo 'touch PWNED' > .git/hooks/post-checkout"),
            ])),
            respond(json!([text("done")])),
        ]))
        .with_policy(json!({"mode": mode}));
        std::fs::create_dir_all(env.project.join(".git/hooks")).unwrap();
        let mut conn = Conn::in_process(env);
        conn.answer_permissions(&["reject_once", "reject_once", "reject_once"]);
        let session = conn.ready().await;
        conn.prompt(&session, "go").await;
        assert_eq!(conn.permission_requests.len(), 3, "{mode}");
        for request in &conn.permission_requests {
            let shown = request["toolCall"].to_string();
            assert!(shown.contains("protected path"), "{mode}: {shown}");
        }
        let project = &conn.env.project;
        assert!(
            !project.join(".claude/settings.local.json").exists(),
            "{mode}"
        );
        assert!(!project.join(".git/hooks/pre-commit").exists(), "{mode}");
        assert!(!project.join(".git/hooks/post-checkout").exists(), "{mode}");
    }
}

/// A search is judged on the directory it searches, and a field the tool
/// does not define is refused, never used for a decision.
#[tokio::test]
async fn searches_are_judged_on_their_path_and_extra_fields_are_refused() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool(
                "bogus",
                "Grep",
                json!({"pattern": "root", "path": "/etc", "file_path": "README"})
            ),
            tool("out", "Grep", json!({"pattern": "root", "path": "/etc"})),
            tool("env", "Grep", json!({"pattern": "KEY", "path": ".env"})),
        ])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "plan", "permissions": {"deny": ["Read(./.env)"]}}));
    env.file(".env", "KEY=hunter2");
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["reject_once"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let thread = conn.thread(&session);
    assert!(
        thread
            .card("bogus")
            .text()
            .contains("unknown field `file_path`"),
        "{}",
        thread.card("bogus").text()
    );
    // Outside the project asks, even in plan mode; the user said no.
    assert_eq!(conn.permission_requests.len(), 1);
    assert!(
        conn.permission_requests[0]["toolCall"]
            .to_string()
            .contains("outside the project")
    );
    assert_eq!(thread.card("out").status, "failed");
    // The deny rule on .env stops the search of it.
    let denied = record(&conn, &session, "tool/call", "env").unwrap();
    assert_eq!(denied["decision"]["by"], "rule:Read(./.env)");
    assert!(
        !result_in_request(&conn, 1, "env")
            .to_string()
            .contains("hunter2")
    );
}

/// Every string of `value` a person reads: all but the data of a card
/// (`rawInput`, `rawOutput`, `_meta`, the paths of locations and diffs).
fn read_by_people(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| read_by_people(v, out)),
        Value::Object(map) => {
            for (key, v) in map {
                if !matches!(
                    key.as_str(),
                    "rawInput" | "rawOutput" | "_meta" | "locations" | "path"
                ) {
                    read_by_people(v, out);
                }
            }
        }
        _ => {}
    }
}

/// A conceal sequence (ESC[8m) and a right-to-left override (U+202E) in a
/// command, in a path and in a hook's reason and message: the card, the
/// permission prompt and the notice show them escaped (`\u{1b}[8m`,
/// `\u{202e}`), while what ran is exactly what the model asked for, and
/// the card's `rawInput` and the log keep the exact arguments.
#[tokio::test]
async fn hostile_text_is_shown_escaped_and_runs_unchanged() {
    let command = "printf ok > 'out\u{202E}hs.txt' # \u{1b}[8mhidden\u{1b}[0m";
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool("c", "Bash", json!({"command": command})),
            tool(
                "w",
                "Write",
                json!({"file_path": "notes\u{202E}gpj.exe", "content": "a\u{1b}[8mb\n"})
            ),
        ])),
        respond(json!([text("done")])),
    ]));
    // The user's own hook asks, with a reason and a message that hide
    // things.
    let answer = json!({
        "systemMessage": "look \u{1b}[8mhere\u{1b}[0m \u{202E}txt.exe",
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                               "permissionDecisionReason": "why \u{1b}[8mnot\u{1b}[0m \u{202E}gnp.exe"}
    });
    let hook = env.dir.path().join("hook.json");
    std::fs::write(&hook, answer.to_string()).unwrap();
    let settings = env.dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("cat {}", hook.display())}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let mut conn = Conn::spawn(env);
    conn.answer_permissions(&["allow_once", "allow_once"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    // What ran is what the model asked for.
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("out\u{202E}hs.txt")).unwrap(),
        "ok"
    );
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("notes\u{202E}gpj.exe")).unwrap(),
        "a\u{1b}[8mb\n"
    );
    assert_eq!(
        record(&conn, &session, "tool/call", "c").unwrap()["arguments"]["command"],
        command
    );
    // The card and the prompt show it escaped, and keep the data exact.
    let card = conn.thread(&session).card("c");
    assert_eq!(
        card.title,
        "`printf ok > 'out\\u{202e}hs.txt' # \\u{1b}[8mhidden\\u{1b}[0m`"
    );
    assert_eq!(card.raw_input["command"], command);
    let asked = &conn.permission_requests[0]["toolCall"];
    assert_eq!(asked["title"], card.title.as_str());
    assert_eq!(asked["rawInput"]["command"], command);
    assert!(
        asked["content"]
            .to_string()
            .contains("why \\\\u{1b}[8mnot\\\\u{1b}[0m \\\\u{202e}gnp.exe"),
        "{}",
        asked["content"]
    );
    let write = conn.thread(&session).card("w");
    assert!(
        write.title.ends_with("notes\\u{202e}gpj.exe"),
        "{}",
        write.title
    );
    assert!(
        write.locations[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("notes\u{202E}gpj.exe")
    );
    let told = told(&conn).join("\n");
    assert!(
        told.contains("look \\u{1b}[8mhere\\u{1b}[0m \\u{202e}txt.exe"),
        "{told}"
    );
    // Nothing a person reads holds the characters themselves.
    let mut texts = Vec::new();
    for frame in conn.frames.iter().filter(|f| f.get("method").is_some()) {
        read_by_people(&frame["params"], &mut texts);
    }
    let raw: Vec<&String> = texts
        .iter()
        .filter(|t| t.contains('\u{1b}') || t.contains('\u{202E}'))
        .collect();
    assert!(raw.is_empty(), "shown unescaped: {raw:?}");
}
