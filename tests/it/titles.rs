//! A session's title after its first turn: asked of the model (no tools
//! offered, nothing streamed), or the first prompt line when the request
//! fails or titles from the model are off; sent as `session_info_update`,
//! recorded, listed, kept on load.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic, Step};
use crate::support::*;

fn info_updates(conn: &Conn) -> Vec<Value> {
    conn.frames
        .iter()
        .filter(|f| {
            f["method"] == "session/update"
                && f["params"]["update"]["sessionUpdate"] == "session_info_update"
        })
        .map(|f| f["params"]["update"].clone())
        .collect()
}

/// Reads frames until a `session_info_update` came (at most 15 s).
async fn await_title(conn: &mut Conn) -> Value {
    for _ in 0..150 {
        if let Some(update) = info_updates(conn).pop() {
            return update;
        }
        conn.try_recv(Duration::from_millis(100)).await;
    }
    panic!("no session_info_update")
}

fn titled(model_titles: bool, mock: &MockAnthropic) -> Conn {
    let env = TestEnv::new();
    let mut cmd = candor_command(&env);
    cmd.env("CANDOR_PROVIDER", "anthropic")
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", anthropic::KEY)
        .env("CANDOR_MODEL", "claude-sonnet-4-5")
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"))
        .env(
            "CANDOR_SESSION_TITLES",
            if model_titles { "model" } else { "prompt" },
        );
    Conn::spawn_with(env, cmd)
}

#[tokio::test]
async fn the_model_titles_the_session_after_its_first_turn_and_the_title_stays() {
    let mock = MockAnthropic::start(vec![
        anthropic::message(vec![anthropic::text("Looking.")], "end_turn"),
        anthropic::message(
            vec![anthropic::text("\"Fix the flaky parser test.\"")],
            "end_turn",
        ),
        anthropic::message(vec![anthropic::text("Done.")], "end_turn"),
    ])
    .await;
    let mut conn = titled(true, &mock);
    let session = conn.ready().await;
    let answer = conn
        .prompt(&session, "the parser test fails one run in ten\nplease fix")
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let update = await_title(&mut conn).await;
    assert_eq!(update["title"], "Fix the flaky parser test");
    // The title request: no tools, the prompt, a small answer, no thinking.
    let request = &mock.requests()[1];
    assert!(request.get("tools").is_none(), "{request}");
    assert!(request.get("thinking").is_none());
    assert!(request["max_tokens"].as_u64().unwrap() <= 64);
    assert!(request["system"].as_str().unwrap().contains("title"));
    assert!(
        request["messages"][0]["content"]
            .to_string()
            .contains("one run in ten")
    );
    // Nothing of it was streamed to the client.
    assert_eq!(conn.thread(&session).agent_text, "Looking.");
    let log = conn.env.log(&session);
    let record = log.iter().find(|r| r["type"] == "session/titled").unwrap();
    assert_eq!(record["source"], "model");
    // A second turn makes no second title.
    conn.prompt(&session, "and the lexer?").await;
    assert_eq!(mock.requests().len(), 3);
    let cwd = conn.env.project.clone();
    let listed = conn.call("session/list", json!({"cwd": cwd})).await;
    assert_eq!(listed["sessions"][0]["title"], "Fix the flaky parser test");
    conn.call("session/close", json!({"sessionId": session}))
        .await;
    let at = conn.frames.len();
    conn.call(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    )
    .await;
    assert!(
        conn.frames[at..]
            .iter()
            .any(
                |f| f["params"]["update"]["sessionUpdate"] == "session_info_update"
                    && f["params"]["update"]["title"] == "Fix the flaky parser test"
            ),
        "the title is replayed on load"
    );
    let log = conn.env.log(&session);
    assert_eq!(
        log.iter().filter(|r| r["type"] == "session/titled").count(),
        1
    );
}

#[tokio::test]
async fn a_failed_title_request_falls_back_to_the_prompt_line_and_never_fails_the_turn() {
    let mock = MockAnthropic::start(vec![
        anthropic::message(vec![anthropic::text("Sure.")], "end_turn"),
        Step::Status {
            status: 400,
            headers: vec![],
            body: anthropic::error_body("invalid_request_error", "no"),
        },
    ])
    .await;
    let mut conn = titled(true, &mock);
    let session = conn.ready().await;
    let answer = conn
        .prompt(&session, "\n  rename the config loader\nthanks")
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let update = await_title(&mut conn).await;
    assert_eq!(update["title"], "rename the config loader");
    let log = conn.env.log(&session);
    let record = log.iter().find(|r| r["type"] == "session/titled").unwrap();
    assert_eq!(record["source"], "prompt");
}

#[tokio::test]
async fn with_model_titles_off_no_request_is_made() {
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("Sure.")],
        "end_turn",
    )])
    .await;
    let mut conn = titled(false, &mock);
    let session = conn.ready().await;
    conn.prompt(&session, "write the changelog").await;
    let update = await_title(&mut conn).await;
    assert_eq!(update["title"], "write the changelog");
    assert_eq!(mock.requests().len(), 1);
}

/// Prompts queued behind the first do not wait for its title, and the
/// title does not wait for all of them: it is recorded at the first
/// boundary between turns after it is made.
#[tokio::test]
async fn a_title_made_while_queued_turns_run_is_recorded_between_them() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("A")])),
        json!({"delayMs": 600, "content": [text("B")]}),
        respond(json!([text("C")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let mut ids = Vec::new();
    for text in ["one", "two", "three"] {
        ids.push(
            conn.send_request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
            )
            .await,
        );
    }
    for id in &ids {
        let answer = conn.response(id).await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    }
    let log = conn.env.log(&session);
    let seq = |kind: &str, text: Option<&str>| {
        log.iter()
            .find(|r| {
                r["type"] == kind && text.is_none_or(|t| r["content"].to_string().contains(t))
            })
            .map(|r| r["seq"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("no {kind} {text:?}: {:?}", types(&log)))
    };
    let titled = seq("session/titled", None);
    assert!(
        titled < seq("user/message", Some("three")),
        "the title waited for every queued turn: {:?}",
        types(&log)
    );
    assert!(seq("turn/ended", None) < titled);
    assert_eq!(
        log.iter().find(|r| r["type"] == "session/titled").unwrap()["title"],
        "one"
    );
}
