//! An MCP server's questions to the user (MCP `elicitation/create`):
//! passed to the editor scoped to the call's card and naming the server,
//! answered, declined, refused outside a call, without forms, for a
//! secret, as a page, withdrawn on cancel; recorded, audited, replayed.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    Conn, MCP_TEST_SERVER, TestEnv, audit, card_frames, eventually, mcp_test_server, record,
    respond, script, text, tool,
};

/// What the test server logged, one JSON value a line.
fn seen(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// What the server logged of the questions it asked.
fn elicited(log: &std::path::Path) -> Vec<Value> {
    seen(log)
        .into_iter()
        .filter(|v| v.get("elicited").is_some())
        .collect()
}

fn server(log: &std::path::Path) -> Value {
    json!([{"name": "test", "command": mcp_test_server(),
        "args": [MCP_TEST_SERVER, "--log", log], "env": []}])
}

/// A session that calls the test server's `tool` once, then says "done".
fn calling(tool_name: &str) -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!([tool(
            "m1",
            &format!("mcp__test__{tool_name}"),
            json!({})
        )])),
        respond(json!([text("done")])),
    ]))
}

const FORMS: &str = r#"{"elicitation": {"form": {}}}"#;

/// Opens a session with the test server, the client declaring `caps`.
async fn open(conn: &mut Conn, caps: &str, log: &std::path::Path) -> String {
    conn.initialize_with(serde_json::from_str(caps).unwrap())
        .await;
    let cwd = conn.env.project.clone();
    let result = conn
        .call(
            "session/new",
            json!({"cwd": cwd, "mcpServers": server(log)}),
        )
        .await;
    result["sessionId"].as_str().unwrap().to_owned()
}

fn records(conn: &Conn, session: &str, kind: &str) -> Vec<Value> {
    conn.env
        .log(session)
        .into_iter()
        .filter(|r| r["type"] == kind)
        .collect()
}

fn seq_of(conn: &Conn, session: &str, kind: &str) -> u64 {
    records(conn, session, kind)[0]["seq"].as_u64().unwrap()
}

#[tokio::test]
async fn a_servers_question_is_answered_in_the_editor_on_the_calls_card_recorded_and_replayed() {
    let env = calling("ask");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"branch": "main"}}));
    let answer = conn.prompt(&session, "deploy").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    // The editor was asked, scoped to the call's card, the server named.
    assert_eq!(conn.elicitations.len(), 1);
    let asked = &conn.elicitations[0];
    assert_eq!(asked["mode"], "form");
    assert_eq!(asked["sessionId"], json!(session));
    assert_eq!(asked["toolCallId"], "m1");
    assert_eq!(
        asked["message"],
        "The MCP server \"test\" asks: Which branch should I deploy?"
    );
    assert_eq!(
        asked["requestedSchema"]["properties"]["branch"]["title"],
        "Branch"
    );
    // The server got the user's answer.
    let got = elicited(&log);
    assert_eq!(
        got,
        [json!({"elicited": "ask", "action": "accept", "content": {"branch": "main"}})]
    );
    // Recorded: the question before the editor was asked, its end before
    // the call's result.
    let requested = &records(&conn, &session, "elicitation/requested")[0];
    assert_eq!(requested["toolCallId"], "m1");
    assert_eq!(requested["server"], "test");
    assert_eq!(requested["mode"], "form");
    assert_eq!(requested["message"], "Which branch should I deploy?");
    let resolved = &records(&conn, &session, "elicitation/resolved")[0];
    assert_eq!(resolved["action"], "accept");
    assert_eq!(resolved["by"], "user");
    assert_eq!(resolved["content"], json!({"branch": "main"}));
    assert_eq!(resolved["elicitationId"], requested["elicitationId"]);
    assert!(
        seq_of(&conn, &session, "tool/started") < seq_of(&conn, &session, "elicitation/requested")
    );
    assert!(
        seq_of(&conn, &session, "elicitation/resolved")
            < record(&conn, &session, "tool/result", "m1").unwrap()["seq"]
                .as_u64()
                .unwrap()
    );
    // The card shows who asked what, and the answer.
    let card = conn.thread(&session).card("m1");
    assert_eq!(card.status, "completed");
    let shown = card.text();
    assert!(
        shown.contains("The MCP server \"test\" asks: Which branch should I deploy?"),
        "{shown}"
    );
    assert!(shown.contains("Fields: Branch"), "{shown}");
    assert!(
        shown.contains("The user answered: branch: \"main\""),
        "{shown}"
    );
    // The audit trail lists it.
    let home = conn.env.home.clone();
    let trail = audit(&home, &session, false);
    assert!(trail.contains("question during call m1"), "{trail}");
    assert!(
        trail.contains("The user answered: branch: \"main\""),
        "{trail}"
    );
    let json_trail: Value = serde_json::from_str(&audit(&home, &session, true)).unwrap();
    let entry = json_trail
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "elicitation")
        .unwrap();
    assert_eq!(entry["server"], "test");
    assert_eq!(entry["action"], "accept");

    // A replay shows the same card.
    let shown = card_frames(&conn, &session, "m1");
    let env = conn.end().await;
    let mut again = Conn::in_process(env);
    again.initialize().await;
    again.load(&session).await;
    assert_eq!(card_frames(&again, &session, "m1"), shown);
    assert!(again.elicitations.is_empty(), "a replay asks nobody");
}

#[tokio::test]
async fn a_declined_question_tells_the_server_decline() {
    let env = calling("ask");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.elicitation_answers
        .push_back(json!({"action": "decline"}));
    conn.prompt(&session, "deploy").await;
    assert_eq!(elicited(&log)[0]["action"], "decline");
    let resolved = &records(&conn, &session, "elicitation/resolved")[0];
    assert_eq!(resolved["action"], "decline");
    assert_eq!(resolved["by"], "user");
    assert!(resolved.get("content").is_none());
    assert!(
        conn.thread(&session)
            .card("m1")
            .text()
            .contains("The user declined.")
    );
}

#[tokio::test]
async fn without_forms_the_server_gets_decline_and_the_user_a_notice() {
    let env = calling("ask");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, "{}", &log).await;
    conn.prompt(&session, "deploy").await;
    assert!(conn.elicitations.is_empty(), "the editor cannot show forms");
    assert_eq!(elicited(&log)[0]["action"], "decline");
    // What was asked is on record, and candor's answer with why.
    assert_eq!(records(&conn, &session, "elicitation/requested").len(), 1);
    let resolved = &records(&conn, &session, "elicitation/resolved")[0];
    assert_eq!(resolved["action"], "decline");
    assert_eq!(resolved["by"], "candor");
    assert!(
        resolved["reason"]
            .as_str()
            .unwrap()
            .contains("cannot show forms"),
        "{resolved}"
    );
    let notice = records(&conn, &session, "session/notice")
        .into_iter()
        .map(|r| r["text"].as_str().unwrap().to_owned())
        .find(|t| t.contains("asked you something"))
        .expect("a notice");
    assert!(notice.contains("\"test\""), "{notice}");
    assert!(notice.contains("declined it for you"), "{notice}");
    let shown = conn.thread(&session).card("m1").text();
    assert!(
        shown.contains("candor answered \"decline\" for the user"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_server_cannot_ask_outside_a_call_it_is_serving() {
    let env = calling("ask_later");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.prompt(&session, "deploy").await;
    // The call is over; 300 ms later the server asks.
    assert!(
        eventually(Duration::from_secs(10), || !elicited(&log).is_empty()).await,
        "the server never asked"
    );
    let got = &elicited(&log)[0];
    assert!(
        got["error"]
            .as_str()
            .unwrap_or_default()
            .contains("only while it waits on one of this server's tool calls"),
        "{got}"
    );
    assert!(conn.elicitations.is_empty(), "the editor was asked");
    assert!(records(&conn, &session, "elicitation/requested").is_empty());
    // The user is told, between turns.
    let told = eventually(Duration::from_secs(5), || {
        records(&conn, &session, "session/notice").iter().any(|r| {
            r["text"]
                .as_str()
                .unwrap_or_default()
                .contains("asked you something while no call of it was running")
        })
    })
    .await;
    assert!(told, "no notice: {:?}", conn.env.log(&session));
    // Control: the same server asking during its call reaches the editor.
    let env = calling("ask");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"branch": "dev"}}));
    conn.prompt(&session, "deploy").await;
    assert_eq!(conn.elicitations.len(), 1);
}

#[tokio::test]
async fn a_secret_goes_to_the_server_alone_and_the_card_says_which_server_wants_it() {
    let env = calling("ask_secret");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.elicitation_answers.push_back(
        json!({"action": "accept", "content": {"user": "ana", "api_key": "sk-live-4242"}}),
    );
    conn.prompt(&session, "deploy").await;
    let message = conn.elicitations[0]["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("The MCP server \"test\" asks: The deploy needs your credentials."),
        "{message}"
    );
    assert!(
        message.contains("looks like a secret (api_key)")
            && message.contains("Answer only if you trust \"test\""),
        "{message}"
    );
    // The server has it.
    assert_eq!(elicited(&log)[0]["content"]["api_key"], "sk-live-4242");
    // The log, the card and the model do not.
    let resolved = &records(&conn, &session, "elicitation/resolved")[0];
    assert_eq!(
        resolved["content"],
        json!({"user": "ana", "api_key": "[withheld]"})
    );
    assert_eq!(
        records(&conn, &session, "elicitation/requested")[0]["secret"],
        json!(["api_key"])
    );
    let whole = std::fs::read_to_string(
        conn.env
            .home
            .join("sessions")
            .join(format!("{session}.jsonl")),
    )
    .unwrap();
    assert!(!whole.contains("sk-live-4242"), "the secret is in the log");
    let shown = conn.thread(&session).card("m1").text();
    assert!(shown.contains("API key (looks like a secret)"), "{shown}");
    assert!(shown.contains("goes to \"test\" alone"), "{shown}");
    assert!(!shown.contains("sk-live-4242"));
    assert!(
        !conn
            .env
            .model_requests()
            .iter()
            .any(|r| r.to_string().contains("sk-live-4242"))
    );
}

#[tokio::test]
async fn a_page_is_passed_only_to_an_editor_that_opens_pages() {
    let env = calling("ask_page");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(
        &mut conn,
        r#"{"elicitation": {"form": {}, "url": {}}}"#,
        &log,
    )
    .await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept"}));
    conn.prompt(&session, "deploy").await;
    let asked = &conn.elicitations[0];
    assert_eq!(asked["mode"], "url");
    assert_eq!(asked["url"], "https://auth.example.com/login?state=s1");
    assert_eq!(asked["elicitationId"], "page-1");
    assert_eq!(asked["toolCallId"], "m1");
    assert!(
        asked["message"]
            .as_str()
            .unwrap()
            .contains("It asks you to open a page on auth.example.com"),
        "{asked}"
    );
    assert_eq!(elicited(&log)[0]["action"], "accept");

    // An editor with forms only: the server is told decline.
    let env = calling("ask_page");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.prompt(&session, "deploy").await;
    assert!(conn.elicitations.is_empty());
    assert_eq!(elicited(&log)[0]["action"], "decline");
    let resolved = &records(&conn, &session, "elicitation/resolved")[0];
    assert!(
        resolved["reason"]
            .as_str()
            .unwrap()
            .contains("cannot open pages"),
        "{resolved}"
    );
}

#[tokio::test]
async fn cancelling_the_turn_withdraws_the_servers_open_question() {
    let env = calling("ask");
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    // The user never answers.
    conn.elicitation_answers.push_back(Value::Null);
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "deploy"}]}),
        )
        .await;
    while conn.elicitations.is_empty() {
        conn.recv().await;
    }
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(
        conn.frames
            .iter()
            .any(|f| f["method"] == "$/cancel_request"),
        "the open question was not withdrawn"
    );
    let resolved = &records(&conn, &session, "elicitation/resolved")[0];
    assert_eq!(resolved["action"], "cancel");
    assert_eq!(resolved["by"], "candor");
    assert!(
        seq_of(&conn, &session, "elicitation/resolved")
            < record(&conn, &session, "tool/result", "m1").unwrap()["seq"]
                .as_u64()
                .unwrap()
    );
    assert_eq!(
        record(&conn, &session, "tool/result", "m1").unwrap()["status"],
        "cancelled"
    );
}
