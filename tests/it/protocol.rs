//! The JSON-RPC surface: initialize, errors, bad input. Every bad-input test
//! also shows that the server answers the next request.

use serde_json::{Value, json};

use crate::support::*;

fn error_code(frame: &Value) -> i64 {
    frame["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {frame}"))
}

fn error_text(frame: &Value) -> String {
    format!("{} {}", frame["error"]["message"], frame["error"]["data"])
}

/// After a bad input, candor still answers a normal request.
async fn still_serving(conn: &mut Conn) {
    let result = conn.initialize().await;
    assert_eq!(result["protocolVersion"], 1);
}

#[tokio::test]
async fn initialize_answers_version_1_and_only_true_capabilities() {
    let mut conn = Conn::in_process(TestEnv::new());
    let result = conn.initialize().await;
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(result["agentInfo"]["name"], "candor");
    assert_eq!(result["agentInfo"]["version"], env!("CARGO_PKG_VERSION"));
    let caps = &result["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(
        caps["sessionCapabilities"],
        json!({"list": {}, "delete": {}, "resume": {}, "close": {}, "fork": {},
            "additionalDirectories": {}, "systemPrompt": {"mode": {"override": {}}}})
    );
    assert_eq!(
        caps["promptCapabilities"],
        json!({"image": true, "audio": false, "embeddedContext": true})
    );
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": true}));
    assert_eq!(
        result["authMethods"],
        json!([
            {"id": "anthropic-api-key", "name": "Anthropic API key",
             "description": "Set ANTHROPIC_API_KEY in the environment your editor starts candor with"},
            {"id": "openai-api-key", "name": "OpenAI API key",
             "description": "Set OPENAI_API_KEY in the environment your editor starts candor with"}
        ])
    );
}

#[tokio::test]
async fn protocol_readme_shows_exactly_what_initialize_advertises() {
    // The capabilities block of protocol/README.md, as documented, is the
    // answer a client gets (the version aside, which the document cannot
    // know ahead).
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/README.md"),
    )
    .unwrap();
    let section = &readme[readme.find("## Capabilities candor advertises").unwrap()..];
    let start = section.find("```json\n").unwrap() + "```json\n".len();
    let end = start + section[start..].find("```").unwrap();
    let mut documented: Value = serde_json::from_str(&section[start..end]).unwrap();
    documented["agentInfo"]["version"] = json!(env!("CARGO_PKG_VERSION"));
    let mut conn = Conn::in_process(TestEnv::new());
    let result = conn.initialize().await;
    assert_eq!(result, documented, "protocol/README.md says otherwise");
    // And what it says of `mcpServers` is that they are used.
    assert!(!readme.contains("not used yet"), "protocol/README.md");
}

#[tokio::test]
async fn initialize_answers_1_to_any_other_version() {
    let mut conn = Conn::in_process(TestEnv::new());
    for asked in [0, 2, 9] {
        let result = conn
            .call(
                "initialize",
                json!({"protocolVersion": asked, "clientCapabilities": {}}),
            )
            .await;
        assert_eq!(result["protocolVersion"], 1, "asked for {asked}");
    }
}

#[tokio::test]
async fn a_request_pipelined_right_behind_initialize_is_served() {
    let env = TestEnv::new();
    let cwd = env.project.clone();
    let mut conn = Conn::in_process(env);
    let init = json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {"protocolVersion": 1}});
    let new = json!({"jsonrpc": "2.0", "id": "n", "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}});
    conn.send_raw(&format!("{init}\n{new}")).await;
    let first = conn.recv().await;
    let second = conn.recv().await;
    assert_eq!(first["id"], "i");
    assert_eq!(second["id"], "n");
    assert!(second["result"]["sessionId"].is_string(), "{second}");
}

#[tokio::test]
async fn methods_before_initialize_are_refused_with_a_reason() {
    let env = TestEnv::new();
    let cwd = env.project.clone();
    let mut conn = Conn::in_process(env);
    let frame = conn
        .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    assert_eq!(error_code(&frame), -32600);
    assert!(error_text(&frame).contains("before initialize"), "{frame}");
    let frame = conn
        .request("session/prompt", json!({"sessionId": "x", "prompt": []}))
        .await;
    assert!(error_text(&frame).contains("before initialize"), "{frame}");
    // Notifications before initialize are ignored, not answered.
    conn.notify("session/cancel", json!({"sessionId": "x"}))
        .await;
    still_serving(&mut conn).await;
    let session = conn.new_session().await;
    assert!(!session.is_empty());
}

#[tokio::test]
async fn malformed_json_is_a_parse_error_with_null_id() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.send_raw(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"#)
        .await;
    let frame = conn.recv().await;
    assert_eq!(error_code(&frame), -32700);
    assert_eq!(frame["id"], Value::Null);
    conn.send_raw("\u{feff}not json at all").await;
    assert_eq!(error_code(&conn.recv().await), -32700);
    conn.send_raw("\u{1}\u{2}").await;
    assert_eq!(error_code(&conn.recv().await), -32700);
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn invalid_utf8_is_a_parse_error() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.send_bytes(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"x\":\"\xff\xfe\"}}",
    )
    .await;
    let frame = conn.recv().await;
    assert_eq!(error_code(&frame), -32700, "{frame}");
    // A lone surrogate escape is not a valid string either.
    conn.send_raw(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"\ud800"}}"#)
        .await;
    assert_eq!(error_code(&conn.recv().await), -32700);
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn non_request_json_is_an_invalid_request() {
    let mut conn = Conn::in_process(TestEnv::new());
    for line in [
        "[1,2,3]",
        "42",
        r#""hello""#,
        r#"{"id":5,"method":"initialize","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":6}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":12}"#,
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":"x"}"#,
    ] {
        conn.send_raw(line).await;
        let frame = conn.recv().await;
        assert_eq!(error_code(&frame), -32600, "for {line}: {frame}");
    }
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn unknown_methods_are_not_found() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.initialize().await;
    for method in ["session/teleport", "_vendor/thing", "fs/read_text_file"] {
        let id = conn.send_request_unchecked(method, json!({})).await;
        let frame = conn.response(&id).await;
        assert_eq!(error_code(&frame), -32601, "{method}: {frame}");
    }
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn invalid_params_name_the_problem() {
    let env = TestEnv::new();
    let mut conn = Conn::in_process(env);
    conn.initialize().await;
    let cases = [
        ("session/new", json!({"mcpServers": []}), "cwd"),
        (
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
            "absolute",
        ),
        (
            "session/new",
            json!({"cwd": "/definitely/not/here", "mcpServers": []}),
            "not an existing directory",
        ),
        ("session/new", json!(null), "invalid params"),
        (
            "initialize",
            json!({"protocolVersion": "1.0"}),
            "invalid params",
        ),
        (
            "session/prompt",
            json!({"sessionId": 3, "prompt": []}),
            "invalid params",
        ),
    ];
    for (method, params, expected) in cases {
        let id = conn.send_request_unchecked(method, params.clone()).await;
        let frame = conn.response(&id).await;
        assert_eq!(error_code(&frame), -32602, "{method} {params}: {frame}");
        assert!(
            error_text(&frame).contains(expected),
            "{method} {params}: {frame}"
        );
    }
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn unsupported_prompt_content_is_refused_naming_its_type() {
    let mut conn = Conn::in_process(TestEnv::new());
    let session = conn.ready().await;
    let frame = conn
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        )
        .await;
    // Images are taken, but only one that is what it says it is.
    assert_eq!(error_code(&frame), -32602);
    assert!(
        error_text(&frame).contains("its bytes are not image/png"),
        "{frame}"
    );
    let frame = conn
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}),
        )
        .await;
    assert!(error_text(&frame).contains("audio"), "{frame}");
    // The session is unharmed: a text prompt works (no provider: guidance).
    let frame = conn.prompt(&session, "hello").await;
    assert_eq!(frame["result"]["stopReason"], "end_turn");
}

#[tokio::test]
async fn unknown_sessions_are_not_found_naming_the_id() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.initialize().await;
    let frame = conn.prompt("no-such-session", "hi").await;
    assert_eq!(error_code(&frame), -32002);
    assert!(error_text(&frame).contains("no-such-session"), "{frame}");
    // A cancel for an unknown session is ignored.
    conn.notify("session/cancel", json!({"sessionId": "no-such-session"}))
        .await;
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn unknown_notifications_and_stray_responses_are_ignored() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.initialize().await;
    conn.send_raw(r#"{"jsonrpc":"2.0","method":"_vendor/ping","params":{}}"#)
        .await;
    conn.send_raw(r#"{"jsonrpc":"2.0","method":"something/else"}"#)
        .await;
    conn.send_raw(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#)
        .await;
    conn.send_raw(r#"{"jsonrpc":"2.0","id":"zz","error":{"code":1,"message":"x"}}"#)
        .await;
    // The next frame is the answer to the next request: nothing was sent
    // for the lines above.
    let id = conn
        .send_request("initialize", json!({"protocolVersion": 1}))
        .await;
    let frame = conn.recv().await;
    assert_eq!(frame["id"], id, "unexpected frame {frame}");
}

#[tokio::test]
async fn a_line_over_64_mib_is_discarded_and_reading_goes_on() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.initialize().await;
    let mut huge = String::with_capacity(candor::MAX_LINE + 100);
    huge.push_str(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":""#);
    huge.push_str(&"x".repeat(candor::MAX_LINE));
    huge.push_str(r#""}}"#);
    conn.send_raw(&huge).await;
    drop(huge);
    let frame = conn.recv().await;
    assert_eq!(error_code(&frame), -32600);
    assert_eq!(frame["id"], Value::Null);
    assert!(error_text(&frame).contains("longer than"), "{frame}");
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn cancel_request_for_a_running_request_answers_it_cancelled() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.initialize().await;
    // Both lines in one write: the cancel is read before the request's task
    // runs (the test runtime has one thread), so the request is still running.
    let cwd = conn.env.project.clone();
    let request = json!({"jsonrpc": "2.0", "id": "new-1", "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}});
    let cancel =
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "new-1"}});
    conn.send_raw(&format!("{request}\n{cancel}")).await;
    let frame = conn.recv().await;
    assert_eq!(frame["id"], "new-1");
    assert_eq!(error_code(&frame), -32800, "{frame}");
    // Exactly one response for it, and the server goes on.
    still_serving(&mut conn).await;
    assert_eq!(conn.frames.iter().filter(|f| f["id"] == "new-1").count(), 1);
}

#[tokio::test]
async fn cancel_request_for_a_finished_request_changes_nothing() {
    let mut conn = Conn::in_process(TestEnv::new());
    let id = conn
        .send_request("initialize", json!({"protocolVersion": 1}))
        .await;
    conn.response(&id).await;
    conn.notify("$/cancel_request", json!({"requestId": id}))
        .await;
    conn.notify("$/cancel_request", json!({"requestId": "never-sent"}))
        .await;
    still_serving(&mut conn).await;
}

#[tokio::test]
async fn sessions_get_distinct_ids_and_their_own_logs() {
    let mut conn = Conn::in_process(TestEnv::new());
    conn.initialize().await;
    let a = conn.new_session().await;
    let b = conn.new_session().await;
    assert_ne!(a, b);
    for id in [&a, &b] {
        let log = conn.env.log(id);
        assert_eq!(log[0]["type"], "session/started");
        // Then the commands it offered, once the client had its id, and
        // where it works.
        assert!(
            log[1..]
                .iter()
                .all(|r| r["type"] == "commands/offered" || r["type"] == "session/environment"),
            "{log:?}"
        );
        assert_eq!(log[0]["sessionId"], json!(id));
        assert_eq!(log[0]["seq"], 0);
        assert_eq!(log[0]["cwd"], json!(conn.env.project));
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = conn.env.home.join("sessions");
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let file = dir.join(format!("{a}.jsonl"));
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
}
