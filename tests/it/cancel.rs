//! `session/cancel` and `$/cancel_request`: the turn stops, every card ends,
//! the prompt answers `cancelled` (never an error), and nothing keeps
//! running.

use std::time::{Duration, Instant};

use candor::conversation::Message;
use serde_json::{Value, json};

use crate::support::*;

fn prompt_params(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// Reads frames until one matches `pred`.
async fn until(conn: &mut Conn, mut pred: impl FnMut(&Value) -> bool) -> Value {
    loop {
        let frame = conn.recv().await;
        if pred(&frame) {
            return frame;
        }
    }
}

#[tokio::test]
async fn cancel_while_the_model_streams_keeps_what_was_said() {
    let env = TestEnv::scripted(script(vec![json!({
        "chunkDelayMs": 150,
        "content": [text("one two three four five six seven eight nine ten eleven twelve")]
    })]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let id = conn
        .send_request("session/prompt", prompt_params(&session, "talk"))
        .await;
    until(&mut conn, |f| {
        f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    })
    .await;
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "cancelled"}));
    let said = conn.thread(&session).agent_text.clone();
    assert!(said.starts_with("one two three "), "{said}");
    assert!(
        !said.contains("twelve"),
        "the stream was not stopped: {said}"
    );
    let log = conn.env.log(&session);
    let message = log
        .iter()
        .find(|r| r["type"] == "assistant/message")
        .unwrap();
    assert_eq!(message["interrupted"], true);
    assert_eq!(message["content"][0]["text"], json!(said));
    let ended = log
        .iter()
        .rev()
        .find(|r| r["type"] == "turn/ended")
        .unwrap();
    assert_eq!(ended["stopReason"], "cancelled");
}

#[tokio::test]
async fn cancel_during_a_command_ends_it_and_every_card() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool(
                "long",
                "Bash",
                json!({"command": "sleep 30 & echo $! > sleep.pid; echo $$ > bash.pid; echo running; wait"})
            ),
            tool("never", "Bash", json!({"command": "touch never-ran"}))
        ])),
        respond(json!([text("after the cancel")])),
    ]));
    // The pids the command writes are the host's only unconfined (the
    // sandbox's PID namespace ends its processes by itself).
    let env = env.unsandboxed();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let id = conn
        .send_request("session/prompt", prompt_params(&session, "run it"))
        .await;
    until(&mut conn, |f| {
        f["params"]["update"]["toolCallId"] == "long"
            && f["params"]["update"]["status"] == "in_progress"
    })
    .await;
    let sleep_pid = read_pid(&conn.env.project.join("sleep.pid")).await;
    let bash_pid = read_pid(&conn.env.project.join("bash.pid")).await;
    assert!(alive(sleep_pid));
    let cancelled_at = Instant::now();
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "cancelled"}));
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(3),
        "cancel took {:?}",
        cancelled_at.elapsed()
    );
    assert!(
        eventually(Duration::from_secs(3), || !alive(sleep_pid)
            && !alive(bash_pid))
        .await,
        "processes outlived the cancel"
    );
    let thread = conn.thread(&session);
    let card = thread.card("long");
    assert_eq!(card.status, "failed");
    assert!(
        card.text().contains("running") && card.text().contains("Cancelled."),
        "{}",
        card.text()
    );
    assert_eq!(thread.cards.len(), 1, "the second call must not get a card");
    assert!(!conn.env.project.join("never-ran").exists());
    let log = conn.env.log(&session);
    let status = |id: &str| {
        log.iter()
            .find(|r| r["type"] == "tool/result" && r["toolCallId"] == id)
            .map(|r| r["status"].clone())
    };
    assert_eq!(status("long"), Some(json!("cancelled")));
    assert_eq!(status("never"), Some(json!("cancelled")));

    // The session goes on, and the model's history answers both calls.
    let next = conn.prompt(&session, "and now?").await;
    assert_eq!(next["result"]["stopReason"], "end_turn");
    assert_eq!(conn.thread(&session).agent_text, "after the cancel");
    let path = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let messages = candor::history::derive_messages(
        &candor::event_log::read(&path).unwrap(),
        candor::conversation::RewriteStrategy::Note,
        &Default::default(),
    );
    let Message::ToolResults { results } = &messages[2] else {
        panic!("{messages:?}")
    };
    let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(ids, ["long", "never"]);
    assert!(results.iter().all(|r| r.is_error));
}

#[tokio::test]
async fn a_cancel_right_behind_the_prompt_is_not_lost() {
    let env = TestEnv::scripted(script(vec![
        json!({"delayMs": 3000, "content": [text("too late")]}),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let id = conn
        .send_request("session/prompt", prompt_params(&session, "hi"))
        .await;
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let started = Instant::now();
    let response = conn.response(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "cancelled"}));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(conn.model.thread_or_empty(&session).agent_text, "");
}

#[tokio::test]
async fn cancel_request_on_a_prompt_answers_it_once_as_cancelled() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool("s", "Bash", json!({"command": "sleep 20"}))])),
        respond(json!([text("unreached")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let id = conn
        .send_request("session/prompt", prompt_params(&session, "go"))
        .await;
    until(&mut conn, |f| {
        f["params"]["update"]["status"] == "in_progress"
    })
    .await;
    conn.notify("$/cancel_request", json!({"requestId": id}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "cancelled"}));
    // Exactly one response: nothing else arrives for that id.
    conn.initialize().await;
    assert_eq!(
        conn.frames
            .iter()
            .filter(|f| f.get("method").is_none() && f["id"] == id)
            .count(),
        1
    );
}

#[tokio::test]
async fn a_cancel_with_no_turn_running_does_not_touch_the_next_one() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("answered")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.prompt(&session, "hi").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(conn.thread(&session).agent_text, "answered");
}

/// A second request under the id of one still running is refused with an
/// error (and the first goes on and is answered once): ids name running
/// requests, for their answers and for `$/cancel_request`.
#[tokio::test]
async fn a_request_reusing_a_running_id_is_refused() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "t",
            "Bash",
            json!({"command": "sleep 1; echo done"})
        )])),
        respond(json!([text("finished")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    conn.send_duplicate(&id, "session/list", json!({})).await;
    let mut refused = None;
    let answered = loop {
        let frame = conn.recv().await;
        if frame.get("method").is_none() && frame.get("id") == Some(&id) {
            if frame.get("error").is_some() && refused.is_none() {
                refused = Some(frame);
                continue;
            }
            break frame;
        }
    };
    let refused = refused.expect("the duplicate id was not refused");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused.to_string().contains("still running"), "{refused}");
    assert_eq!(answered["result"]["stopReason"], "end_turn", "{answered}");
}

/// An editor that offers terminals but never answers `terminal/create`
/// does not hold the turn: the command's timeout covers the request.
#[tokio::test]
async fn an_editor_that_never_creates_the_terminal_does_not_hold_the_turn() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "t",
            "Bash",
            json!({"command": "echo hi", "timeout": 300})
        )])),
        respond(json!([text("finished")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut conn = Conn::in_process(env);
    conn.initialize_with(json!({"terminal": true})).await;
    let session = conn.new_session().await;
    let started = Instant::now();
    let answer = conn.prompt(&session, "go").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let card = conn.thread(&session).card("t");
    assert_eq!(card.status, "failed");
    assert!(
        card.text().contains("did not create a terminal"),
        "{}",
        card.text()
    );
}

/// An editor that offers `fs/*` but never answers does not hold the turn:
/// the request is withdrawn after the configured wait, and the call fails
/// saying so.
#[tokio::test]
async fn an_editor_that_never_answers_a_file_request_does_not_hold_the_turn() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool("r", "Read", json!({"file_path": "a.txt"}))])),
        respond(json!([text("finished")])),
    ]));
    env.file("a.txt", "hello");
    let mut config = env.config();
    config.client_fs_timeout = Duration::from_millis(300);
    let mut conn = Conn::in_process_with(env, config);
    conn.initialize_with(json!({"fs": {"readTextFile": true, "writeTextFile": true}}))
        .await;
    let session = conn.new_session().await;
    let started = Instant::now();
    let answer = conn.prompt(&session, "go").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let card = conn.thread(&session).card("r");
    assert_eq!(card.status, "failed");
    assert!(
        card.text().contains("did not answer fs/read_text_file"),
        "{}",
        card.text()
    );
}
