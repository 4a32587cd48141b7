//! Sessions that survive: `session/load` replays exactly what was shown,
//! `session/list`, `resume`, `close` and `delete`, damaged logs, a full
//! disk, candor's own commands and the audit trail.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// The `session/update` payloads for `session` among `frames`.
fn updates(frames: &[Value], session: &str) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| f["method"] == "session/update" && f["params"]["sessionId"] == session)
        .map(|f| f["params"]["update"].clone())
        .collect()
}

fn kind(update: &Value) -> &str {
    update["sessionUpdate"].as_str().unwrap_or("")
}

/// A session with thinking, text, a rewritten command, a read, a plan and
/// an edit the user allowed, over two prompts.
fn rich_session() -> TestEnv {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            {"type": "thinking", "thinking": "Reading first is cheapest."},
            text("Let me look."),
            tool("r", "Read", json!({"file_path": "notes.txt"})),
            tool("b", "Bash", json!({"command": "echo hi", "description": "greet"})),
            tool("p", "TodoWrite", json!({"todos": [
                {"content": "read", "status": "completed", "activeForm": "Reading"},
                {"content": "write", "status": "pending", "activeForm": "Writing"}
            ]}))
        ])),
        respond(json!([text("Done looking.")])),
        respond(json!([tool(
            "w",
            "Write",
            json!({"file_path": "out.txt", "content": "x\n"})
        )])),
        respond(json!([text("Wrote it.")])),
        respond(json!([text("Still here.")])),
    ]))
    .with_policy(json!({"hooks": [
        {"id": "rtk", "tool": "Bash", "decision": "allow",
         "rewrite": {"command": {"replace": "echo hi", "with": "echo hello"}}}
    ]}));
    env.file("notes.txt", "remember\n");
    env
}

#[tokio::test]
async fn a_loaded_session_replays_what_was_shown_and_the_model_goes_on() {
    let mut live = Conn::spawn(rich_session());
    let session = live.ready().await;
    assert_eq!(
        live.prompt(&session, "look").await["result"]["stopReason"],
        "end_turn"
    );
    assert_eq!(
        live.prompt(&session, "write").await["result"]["stopReason"],
        "end_turn"
    );
    let shown: Vec<Value> = updates(&live.frames, &session)
        .into_iter()
        .filter(|u| kind(u) != "available_commands_update")
        .collect();
    assert!(shown.iter().any(|u| kind(u) == "plan"));
    assert!(shown.iter().any(|u| kind(u) == "agent_thought_chunk"));
    let env = live.end().await;

    let mut again = Conn::spawn(env);
    again.initialize().await;
    let cwd = again.env.project.clone();
    let id = again
        .send_request(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    let response = again.response(&id).await;
    assert!(response.get("error").is_none(), "{response}");
    assert_eq!(response["result"]["modes"]["currentModeId"], "default");
    let at = again.frames.len();
    let replayed = updates(&again.frames, &session);
    // The spec's one difference: a replay includes the user's messages.
    let prompts: Vec<&str> = replayed
        .iter()
        .filter(|u| kind(u) == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["look", "write"]);
    let rest: Vec<Value> = replayed
        .into_iter()
        .filter(|u| kind(u) != "user_message_chunk")
        .collect();
    assert_eq!(rest, shown, "the replay differs from what was shown live");
    // The session's commands come after the response, never before.
    loop {
        let frame = again.recv().await;
        if frame["params"]["update"]["sessionUpdate"] == "available_commands_update" {
            break;
        }
    }
    assert!(
        again.frames[..at]
            .iter()
            .all(|f| f["params"]["update"]["sessionUpdate"] != "available_commands_update")
    );
    // The model goes on with the whole history.
    let answer = again.prompt(&session, "anything else?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert!(
        again
            .thread(&session)
            .agent_text
            .ends_with("Wrote it.Still here.")
    );
    let requests = again.env.model_requests();
    let last = requests.last().unwrap()["messages"].to_string();
    for said in [
        "look",
        "Done looking.",
        "write",
        "Wrote it.",
        "anything else?",
        "remember",
    ] {
        assert!(last.contains(said), "{said:?} is missing from {last}");
    }
    // The log only grew.
    let log = again.env.log(&session);
    assert_eq!(
        log.iter()
            .filter(|r| r["type"] == "session/started")
            .count(),
        1
    );
    assert!(
        log.windows(2)
            .all(|w| w[1]["seq"].as_u64() == w[0]["seq"].as_u64().map(|s| s + 1))
    );
}

#[tokio::test]
async fn sessions_are_listed_newest_first_and_close_resume_and_delete_work() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("one")])),
        respond(json!([text("two")])),
        respond(json!([text("three")])),
    ]));
    let mut conn = Conn::spawn(env);
    conn.initialize().await;
    let first = conn.new_session().await;
    conn.prompt(&first, "Fix the parser\nwith details").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = conn.new_session().await;
    conn.prompt(&second, "Write the docs").await;
    // A chat opened and never used (each one an editor opens) is not
    // listed.
    let unused = conn.new_session().await;
    let cwd = conn.env.project.clone();
    let listed = conn.call("session/list", json!({})).await;
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    assert!(sessions.iter().all(|s| s["sessionId"] != unused));
    assert_eq!(sessions[0]["sessionId"], second);
    assert_eq!(sessions[0]["title"], "Write the docs");
    assert_eq!(sessions[1]["title"], "Fix the parser");
    assert_eq!(sessions[1]["cwd"], cwd.display().to_string());
    assert!(sessions[0]["updatedAt"].as_str().unwrap().ends_with('Z'));
    let elsewhere = conn
        .call("session/list", json!({"cwd": "/nonexistent"}))
        .await;
    assert_eq!(elsewhere["sessions"], json!([]));
    // A cursor near 2^64 is a page past the end, not a wrap to the start
    // (nor a crash of the request).
    let far = conn
        .call("session/list", json!({"cursor": u64::MAX.to_string()}))
        .await;
    assert_eq!(far["sessions"], json!([]), "{far}");
    assert!(far.get("nextCursor").is_none_or(|c| c.is_null()), "{far}");

    // Close, then prompt: not open. Resume: open again, without a replay.
    conn.call("session/close", json!({"sessionId": first}))
        .await;
    let closed = conn
        .request(
            "session/prompt",
            json!({"sessionId": first, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(closed["error"]["code"], -32002, "{closed}");
    let before = conn.frames.len();
    let resumed = conn
        .call(
            "session/resume",
            json!({"sessionId": first, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert!(resumed["configOptions"].is_array());
    let response_at = conn.frames.len();
    assert!(
        updates(&conn.frames[before..response_at], &first).is_empty(),
        "resume replayed the conversation"
    );
    assert_eq!(
        conn.prompt(&first, "and now?").await["result"]["stopReason"],
        "end_turn"
    );
    // Each session plays its own script from where it stopped.
    assert_eq!(conn.thread(&first).agent_text, "onetwo");

    // Loading what is open, or what never was: clear errors.
    let open = conn
        .request(
            "session/load",
            json!({"sessionId": first, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert_eq!(open["error"]["code"], -32600, "{open}");
    let missing = conn
        .request(
            "session/load",
            json!({"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let sneaky = conn
        .request(
            "session/load",
            json!({"sessionId": "../../etc/passwd", "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert_eq!(sneaky["error"]["code"], -32002, "{sneaky}");

    // Delete: gone from the list, kept on disk out of the way.
    conn.call("session/delete", json!({"sessionId": second}))
        .await;
    let listed = conn.call("session/list", json!({})).await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    let kept = conn
        .env
        .home
        .join("sessions/deleted")
        .join(format!("{second}.jsonl"));
    assert!(kept.is_file());
}

/// `session/set_mode` and `session/set_config_option` are answered after
/// the `current_mode_update` that shows the change, so a client that asks
/// for the mode right after its answer (acpx's `status`) sees the new one.
#[tokio::test]
async fn a_mode_change_is_shown_before_it_is_answered() {
    let mut conn = Conn::spawn(TestEnv::new());
    let session = conn.ready().await;
    for round in 0..10 {
        for (method, mode, params) in [
            (
                "session/set_mode",
                "acceptEdits",
                json!({"sessionId": session, "modeId": "acceptEdits"}),
            ),
            (
                "session/set_config_option",
                "plan",
                json!({"sessionId": session, "configId": "mode", "value": "plan"}),
            ),
        ] {
            let before = conn.frames.len();
            let id = conn.send_request(method, params).await;
            let response = conn.response(&id).await;
            assert!(response.get("error").is_none(), "{response}");
            let frames = &conn.frames[before..];
            let answered = frames.iter().position(|f| f["id"] == id).unwrap();
            let shown = frames.iter().position(|f| {
                f["method"] == "session/update"
                    && f["params"]["update"]["sessionUpdate"] == "current_mode_update"
                    && f["params"]["update"]["currentModeId"] == mode
            });
            assert!(
                shown.is_some_and(|at| at < answered),
                "round {round}, {method}: the update came after the answer: {frames:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_torn_last_line_is_cut_and_a_damaged_log_loads_read_only() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("hello")])),
        respond(json!([text("again")])),
    ]));
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let env = conn.end().await;
    let path = env.home.join("sessions").join(format!("{session}.jsonl"));
    let whole = std::fs::read(&path).unwrap();
    let mut torn = whole.clone();
    torn.extend_from_slice(br#"{"seq":99,"at":"2026-11-30T10:00:00.000Z","type":"user/mes"#);
    std::fs::write(&path, &torn).unwrap();
    let mut conn = Conn::spawn(env);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    conn.call(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    )
    .await;
    // This client takes no `notice` updates: the notice waits for the
    // next turn, and opens it.
    while conn.try_recv(Duration::from_millis(200)).await.is_some() {}
    assert!(told(&conn).is_empty(), "{:?}", told(&conn));
    conn.prompt(&session, "and now?").await;
    let thread = conn.thread(&session);
    assert!(
        thread.notices.starts_with("> candor (warning): ")
            && thread.notices.contains("last line was cut short"),
        "{}",
        thread.notices
    );
    // The replay's "hello", then this turn's answer after the notice.
    assert_eq!(thread.agent_text, "helloagain");
    let at = |text: &str| {
        thread
            .updates
            .iter()
            .position(|u| {
                u["content"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(text))
            })
            .unwrap()
    };
    assert!(at("last line was cut short") < at("again"));
    let now = std::fs::read(&path).unwrap();
    assert!(now.starts_with(&whole), "a committed record was lost");
    assert!(
        candor::event_log::read(&path).is_ok(),
        "the log is whole again"
    );
    let env = conn.end().await;

    // Damage in the middle: replayed up to it, then read-only.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let damaged_line = 3;
    lines[damaged_line - 1] = "{\"seq\": 2, garbage".into();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    // This client takes `notice` updates: told at once.
    let mut conn = Conn::spawn(env);
    conn.initialize_with(json!({"session": {"notices": {}}}))
        .await;
    let cwd = conn.env.project.clone();
    conn.call(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    )
    .await;
    while conn.try_recv(Duration::from_millis(300)).await.is_some() {}
    let told = told(&conn).join("\n");
    assert!(told.contains("loaded read-only"), "{told}");
    assert!(
        told.contains(&format!(":{damaged_line}: not a valid record")),
        "told: {told:?}"
    );
    let refused = conn
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "more"}]}),
        )
        .await;
    let message = refused["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("damaged"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        lines.join("\n") + "\n",
        "nothing was appended"
    );
}

#[tokio::test]
async fn a_log_that_cannot_be_written_stops_the_turn_before_the_tool_runs() {
    let env = TestEnv::scripted(script(vec![respond(json!([tool(
        "t",
        "Bash",
        json!({"command": "printf ran > ran.txt"})
    )]))]))
    .with_policy(json!({"permissions": {"allow": ["Bash"]}}));
    let mut config = env.config();
    // session/started, commands/offered, user/message, assistant deltas and
    // message: the tool/call record is the one that fails.
    config.log_fails_at = Some(5);
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    let answer = conn.prompt(&session, "go").await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("could not write the session log"),
        "{answer}"
    );
    assert!(
        !conn.env.project.join("ran.txt").exists(),
        "the tool ran without its record"
    );
    // Every card the client saw ended.
    for card in &conn.thread(&session).cards {
        assert!(card.terminal(), "{} is {}", card.id, card.status);
    }
}

#[tokio::test]
async fn hooks_and_audit_commands_answer_without_the_model() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool("t", "Bash", json!({"command": "git status"}))])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({
        "hooks": [{"id": "rtk", "tool": "Bash", "decision": "allow", "reason": "through rtk",
                   "rewrite": {"command": {"replace": "^git ", "with": "echo rtk git "}}}],
        "permissions": {"deny": ["Bash(rm *)"]}
    }));
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    let offered = loop {
        let frame = conn.recv().await;
        if frame["params"]["update"]["sessionUpdate"] == "available_commands_update" {
            break frame["params"]["update"]["availableCommands"].clone();
        }
    };
    let names: Vec<&str> = offered
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "hooks", "doctor", "mcp", "context", "compact", "trust", "sandbox", "audit"
        ]
    );
    conn.prompt(&session, "status").await;
    let requests = conn.env.model_requests().len();
    conn.prompt(&session, "/hooks").await;
    let hooks = conn.thread(&session).agent_text.clone();
    assert!(hooks.contains("1. rtk"), "{hooks}");
    assert!(hooks.contains("deny: Bash(rm *)"), "{hooks}");
    conn.prompt(&session, "/audit").await;
    let audit = conn.thread(&session).agent_text.clone();
    assert!(audit.contains("Bash t  echo rtk git status"), "{audit}");
    assert!(audit.contains("decision: allow by hook:rtk"), "{audit}");
    assert!(audit.contains("-   \"command\": \"git status\""), "{audit}");
    assert_eq!(
        conn.env.model_requests().len(),
        requests,
        "the model was asked"
    );
    // Neither command is in the model's history afterwards.
    let log = conn.env.log(&session);
    assert_eq!(log.iter().filter(|r| r["type"] == "command/ran").count(), 2);
    let history = candor::history::derive_messages(
        &candor::event_log::read(
            &conn
                .env
                .home
                .join("sessions")
                .join(format!("{session}.jsonl")),
        )
        .unwrap(),
        candor::conversation::RewriteStrategy::Note,
        &Default::default(),
    );
    assert!(!format!("{history:?}").contains("/audit"));

    // The same trail from the command line, for people and for machines.
    let env = conn.end().await;
    let run = |json: bool| crate::support::audit(&env.home, &session, json);
    let text = run(false);
    assert!(text.contains(&format!("session {session}")), "{text}");
    assert!(text.contains("prompt: status"), "{text}");
    assert!(
        text.contains("+   \"command\": \"echo rtk git status\""),
        "{text}"
    );
    assert!(text.contains("ended: completed, exit 0, ran "), "{text}");
    let entries: Value = serde_json::from_str(&run(true)).unwrap();
    let call = entries
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "call")
        .unwrap();
    assert_eq!(call["originalArguments"]["command"], "git status");
    assert_eq!(call["arguments"]["command"], "echo rtk git status");
    assert_eq!(call["hooks"][0]["hook"], "rtk");
}

#[tokio::test]
async fn a_session_open_in_another_process_is_not_loaded_twice() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("one")]))]));
    let mut first = Conn::spawn(env);
    let session = first.ready().await;
    first.prompt(&session, "hello").await;
    // A second candor on the same state, while the first holds the session.
    let mut cmd = candor_command(&first.env);
    cmd.env("CANDOR_HOME", &first.env.home);
    let second_env = TestEnv::new();
    let mut second = Conn::spawn_with(second_env, cmd);
    second.initialize().await;
    let cwd = first.env.project.clone();
    let refused = second
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("open in another candor process"),
        "{refused}"
    );
    // Once the first lets go, the second may.
    let env = first.end().await;
    let loaded = second
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": env.project, "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("error").is_none(), "{loaded}");
}
