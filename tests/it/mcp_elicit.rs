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
        asked["message"].as_str().unwrap().starts_with(
            "The MCP server \"test\" asks you to open a page on auth.example.com:\nhttps://auth.example.com/login?state=s1\n\nSign in to the deploy service."
        ),
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

/// A form asking for a branch, with `message`.
fn form(message: &str) -> Value {
    json!({"mode": "form", "message": message, "requestedSchema": {"type": "object",
        "properties": {"branch": {"type": "string", "title": "Branch"}}, "required": ["branch"]}})
}

/// A session that calls the test server's `tool` once with `arguments`,
/// then says "done".
fn calling_with(tool_name: &str, arguments: Value) -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!([tool(
            "m1",
            &format!("mcp__test__{tool_name}"),
            arguments
        )])),
        respond(json!([text("done")])),
    ]))
}

fn notices(conn: &Conn, session: &str, containing: &str) -> usize {
    records(conn, session, "session/notice")
        .iter()
        .filter(|r| r["text"].as_str().unwrap_or_default().contains(containing))
        .count()
}

/// The attack: a server that asks again and again during its call (one
/// after another, or all at once), which with an editor without forms
/// costs it nothing: every question would be a record, a notice and, with
/// forms, a dialog.
#[tokio::test]
async fn a_server_asking_in_a_loop_is_stopped_after_a_few_questions_of_a_call() {
    for together in [false, true] {
        let env = calling_with(
            "ask_as",
            json!({"request": form("Again?"), "times": 30, "together": together}),
        );
        let log = env.dir.path().join("server.jsonl");
        let mut conn = Conn::in_process(env);
        let session = open(&mut conn, "{}", &log).await;
        let answer = conn.prompt(&session, "deploy").await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        let got = elicited(&log);
        assert_eq!(got.len(), 30, "{got:?}");
        let declined = got.iter().filter(|g| g["action"] == "decline").count();
        let refused = got
            .iter()
            .filter(|g| {
                g["error"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("at most 8 questions")
            })
            .count();
        assert_eq!((declined, refused), (8, 22), "together {together}: {got:?}");
        assert_eq!(records(&conn, &session, "elicitation/requested").len(), 8);
        assert_eq!(records(&conn, &session, "elicitation/resolved").len(), 8);
        assert_eq!(
            notices(&conn, &session, "asked more than 8 questions"),
            1,
            "{:?}",
            records(&conn, &session, "session/notice")
        );
    }
    // Control: a server asking twice in a call is asked twice.
    let env = calling_with("ask_as", json!({"request": form("Which?"), "times": 2}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    for branch in ["a", "b"] {
        conn.elicitation_answers
            .push_back(json!({"action": "accept", "content": {"branch": branch}}));
    }
    conn.prompt(&session, "deploy").await;
    assert_eq!(conn.elicitations.len(), 2);
    let got = elicited(&log);
    assert!(got.iter().all(|g| g["action"] == "accept"), "{got:?}");
}

/// Questions a server sends all at once reach the editor one at a time;
/// those still waiting when the call ends are withdrawn unseen.
#[tokio::test]
async fn a_servers_questions_asked_at_once_are_shown_one_at_a_time() {
    let env = calling_with(
        "ask_as",
        json!({"request": form("Which?"), "times": 3, "together": true}),
    );
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    // The user does not answer the first.
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
    for _ in 0..10 {
        conn.try_recv(Duration::from_millis(100)).await;
    }
    assert_eq!(conn.elicitations.len(), 1, "more than one dialog at once");
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert_eq!(conn.elicitations.len(), 1);
    let resolved = records(&conn, &session, "elicitation/resolved");
    assert_eq!(resolved.len(), 3, "{resolved:?}");
    assert!(
        resolved
            .iter()
            .all(|r| r["action"] == "cancel" && r["by"] == "candor")
    );
    let unseen = resolved
        .iter()
        .filter(|r| {
            r["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("before it was shown")
        })
        .count();
    assert_eq!(unseen, 2, "{resolved:?}");
}

/// The attack: a server asking again and again while none of its calls
/// runs (each refused) would fill the log and the editor with notices.
#[tokio::test]
async fn a_server_asking_outside_its_calls_again_and_again_is_told_of_a_few_times() {
    let env = calling_with("ask_later", json!({"times": 20}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.prompt(&session, "deploy").await;
    assert!(
        eventually(Duration::from_secs(20), || elicited(&log).len() == 20).await,
        "the server did not ask 20 times: {:?}",
        elicited(&log)
    );
    let told = "asked you something while no call of it was running";
    assert!(
        eventually(Duration::from_secs(5), || notices(&conn, &session, told)
            >= 1)
        .await,
        "no notice"
    );
    // What is still on its way is recorded by now.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(notices(&conn, &session, told), 3);
    assert_eq!(
        notices(&conn, &session, "refused without telling you again"),
        1
    );
    assert!(conn.elicitations.is_empty());
}

/// The attack: a page whose host is spelled with look-alike letters of
/// another script, one that hides its host behind a user name
/// (`https://github.com@evil.example/`), one too long to read, and a
/// message that names another host before candor's line does.
#[tokio::test]
async fn a_page_is_passed_as_it_opens_its_real_host_said_first() {
    let pages = r#"{"elicitation": {"form": {}, "url": {}}}"#;
    let page = |url: &str, message: &str| json!({"request": {"mode": "url", "message": message, "url": url, "elicitationId": "p1"}});
    let env = calling_with(
        "ask_as",
        page(
            "https://\u{0430}pple.com/login",
            "Sign in.\n\nIt asks you to open a page on apple.com: https://apple.com/login",
        ),
    );
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, pages, &log).await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept"}));
    conn.prompt(&session, "sign in").await;
    let asked = &conn.elicitations[0];
    // What the editor opens is what it is shown: the host as the
    // browser's address bar spells it.
    assert_eq!(asked["url"], "https://xn--pple-43d.com/login", "{asked}");
    let message = asked["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "The MCP server \"test\" asks you to open a page on xn--pple-43d.com:\nhttps://xn--pple-43d.com/login"
        ),
        "{message}"
    );
    let card = conn.thread(&session).card("m1").text();
    assert!(
        card.contains("open a page on xn--pple-43d.com")
            && card.contains("https://xn--pple-43d.com/login"),
        "{card}"
    );

    // A user name before the host, and an address too long to read: not
    // passed, the server told decline.
    for (url, says) in [
        (
            "https://github.com@evil.example/login".to_owned(),
            "user name",
        ),
        (
            format!("https://auth.example.com/{}", "a".repeat(9000)),
            "longer than",
        ),
    ] {
        let env = calling_with("ask_as", page(&url, "Sign in."));
        let log = env.dir.path().join("server.jsonl");
        let mut conn = Conn::in_process(env);
        let session = open(&mut conn, pages, &log).await;
        conn.prompt(&session, "sign in").await;
        assert!(conn.elicitations.is_empty(), "{url} was passed");
        assert_eq!(elicited(&log)[0]["action"], "decline");
        let resolved = &records(&conn, &session, "elicitation/resolved")[0];
        assert!(
            resolved["reason"].as_str().unwrap().contains(says),
            "{resolved}"
        );
        let requested = &records(&conn, &session, "elicitation/requested")[0];
        assert!(
            requested["url"].as_str().unwrap().chars().count() <= 8200,
            "the log keeps the whole address"
        );
    }
}

/// The attack: a server that asks while another server's call runs, to
/// have its question shown on that call's card (under the other server's
/// name, or as if the user's approved call asked it). Refused: a server
/// asks only during its own calls.
#[tokio::test]
async fn a_server_cannot_ask_on_another_servers_card() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool("o1", "mcp__other__ask_later", json!({}))])),
        respond(json!([tool(
            "t1",
            "mcp__test__slow",
            json!({"seconds": 2})
        )])),
        respond(json!([text("done")])),
    ]));
    let log = env.dir.path().join("server.jsonl");
    let other_log = env.dir.path().join("other.jsonl");
    let mut conn = Conn::in_process(env);
    conn.initialize_with(serde_json::from_str(FORMS).unwrap())
        .await;
    let cwd = conn.env.project.clone();
    let servers = json!([
        {"name": "test", "command": mcp_test_server(), "args": [MCP_TEST_SERVER, "--log", log], "env": []},
        {"name": "other", "command": mcp_test_server(), "args": [MCP_TEST_SERVER, "--log", other_log], "env": []}
    ]);
    let opened = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": servers}))
        .await;
    let session = opened["sessionId"].as_str().unwrap().to_owned();
    conn.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"branch": "main"}}));
    conn.prompt(&session, "go").await;
    // "other" asked 300 ms after its own call, while "test"'s slow call ran.
    let got = elicited(&other_log);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("only while it waits on one of this server's tool calls"),
        "{got:?}"
    );
    assert!(conn.elicitations.is_empty(), "the editor was asked");
    assert!(records(&conn, &session, "elicitation/requested").is_empty());
    let card = conn.thread(&session).card("t1").text();
    assert!(!card.contains("asks"), "{card}");
    assert!(
        eventually(Duration::from_secs(5), || notices(
            &conn,
            &session,
            "The MCP server \"other\" asked you something while no call of it was running"
        ) == 1)
        .await
    );
}

/// The attack: a question whose message and form carry terminal escapes
/// and a right-to-left override, at any length: the editor is shown them
/// as visible escapes, the message cut.
#[tokio::test]
async fn a_questions_hidden_characters_are_shown_and_its_length_cut() {
    let hostile = "Approve \u{1b}[8mhidden\u{1b}[0m \u{202E}txt.exe";
    let request = json!({"mode": "form", "message": format!("{hostile} {}", "x".repeat(10_000)),
        "requestedSchema": {"type": "object", "title": hostile, "properties": {
            "choice": {"type": "string", "title": hostile, "description": hostile,
                "oneOf": [{"const": "a", "title": hostile}]}}}});
    let env = calling_with("ask_as", json!({ "request": request }));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, FORMS, &log).await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"choice": "a"}}));
    conn.prompt(&session, "go").await;
    let asked = &conn.elicitations[0];
    let shown = "Approve \\u{1b}[8mhidden\\u{1b}[0m \\u{202e}txt.exe";
    let message = asked["message"].as_str().unwrap();
    assert!(message.contains(shown), "{message}");
    assert!(message.chars().count() < 4_200, "{}", message.len());
    let field = &asked["requestedSchema"]["properties"]["choice"];
    assert_eq!(field["title"], shown);
    assert_eq!(field["description"], shown);
    assert_eq!(field["oneOf"][0]["title"], shown);
    assert_eq!(asked["requestedSchema"]["title"], shown);
    // The value the answer carries stays exact.
    assert_eq!(field["oneOf"][0]["const"], "a");
    let card = conn.thread(&session).card("m1").text();
    assert!(card.contains(shown), "{card}");
    assert!(!card.contains('\u{1b}'));
}
