//! `AskUserQuestion`: the model asks the user through the editor's form
//! (`elicitation/create`), or through a permission prompt when the editor
//! has no forms; declined, dismissed, cancelled, denied and replayed.

use serde_json::{Value, json};

use crate::support::*;

fn question(multi: bool) -> Value {
    json!({"questions": [{
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "One file, no server"},
            {"label": "Postgres", "description": "A server, for many writers"}
        ],
        "multiSelect": multi
    }]})
}

fn asking(multi: bool) -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!([tool("q", "AskUserQuestion", question(multi))])),
        respond(json!([text("Going with it.")])),
    ]))
}

const FORMS: &str = r#"{"elicitation": {"form": {}}}"#;

async fn with_forms(env: TestEnv) -> (Conn, String) {
    let mut conn = Conn::in_process(env);
    conn.initialize_with(serde_json::from_str(FORMS).unwrap())
        .await;
    let session = conn.new_session().await;
    (conn, session)
}

fn told(conn: &Conn) -> Value {
    result_in_request(conn, 1, "q")
}

#[tokio::test]
async fn with_form_elicitation_the_user_answers_in_a_form_scoped_to_the_card() {
    let (mut conn, session) = with_forms(asking(false)).await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"q1": "Postgres"}}));
    let response = conn.prompt(&session, "set it up").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");

    let asked = &conn.elicitations[0];
    assert_eq!(asked["mode"], "form");
    assert_eq!(asked["sessionId"], json!(session));
    assert_eq!(asked["toolCallId"], "q");
    assert_eq!(asked["message"], "Which database should the service use?");
    let field = &asked["requestedSchema"]["properties"]["q1"];
    assert_eq!(field["title"], "Database");
    assert_eq!(field["oneOf"][1]["const"], "Postgres");
    assert_eq!(
        field["oneOf"][1]["description"],
        "A server, for many writers"
    );
    assert_eq!(asked["requestedSchema"]["required"], json!(["q1"]));
    // No permission prompt: asking is the tool's whole job.
    assert!(conn.permission_requests.is_empty());

    let card = conn.thread(&session).card("q");
    assert_eq!(
        card.title,
        "Ask the user: Which database should the service use?"
    );
    assert_eq!(card.status, "completed");
    let shown = card.text();
    assert!(
        shown.contains("**Database**: Which database should the service use?"),
        "{shown}"
    );
    assert!(shown.contains("- SQLite: One file, no server"), "{shown}");
    assert!(shown.contains("\"Postgres\""), "{shown}");

    let result = told(&conn);
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        result.to_string().contains(
            r#"The user answered your questions: \"Which database should the service use?\"=\"Postgres\""#
        ),
        "{result}"
    );
    let logged = record(&conn, &session, "tool/result", "q").unwrap();
    assert!(logged["output"].as_str().unwrap().contains("=\"Postgres\""));
}

#[tokio::test]
async fn a_multiple_choice_question_takes_several_answers() {
    let (mut conn, session) = with_forms(asking(true)).await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"q1": ["SQLite", "Postgres"]}}));
    conn.prompt(&session, "set it up").await;
    assert_eq!(
        conn.elicitations[0]["requestedSchema"]["properties"]["q1"]["type"],
        "array"
    );
    assert!(told(&conn).to_string().contains(r#"=\"SQLite, Postgres\""#));
}

#[tokio::test]
async fn a_declined_form_tells_the_model_not_to_ask_again() {
    let (mut conn, session) = with_forms(asking(false)).await;
    conn.elicitation_answers
        .push_back(json!({"action": "decline"}));
    conn.prompt(&session, "set it up").await;
    let result = told(&conn);
    assert_eq!(result["isError"], true);
    assert!(
        result
            .to_string()
            .contains("The user declined to answer. Do not ask the same again")
    );
    assert_eq!(conn.thread(&session).card("q").status, "failed");
}

#[tokio::test]
async fn a_dismissed_form_is_cancelled_and_the_model_goes_on() {
    let (mut conn, session) = with_forms(asking(false)).await;
    conn.elicitation_answers
        .push_back(json!({"action": "cancel"}));
    let response = conn.prompt(&session, "set it up").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(told(&conn).to_string().contains("dismissed the question"));
    assert_eq!(
        record(&conn, &session, "tool/result", "q").unwrap()["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn cancelling_the_turn_withdraws_an_open_question() {
    let (mut conn, session) = with_forms(asking(false)).await;
    conn.elicitation_answers.push_back(Value::Null);
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    while conn.elicitations.is_empty() {
        conn.recv().await;
    }
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    // The form was withdrawn, not left open in the editor.
    assert!(
        conn.frames
            .iter()
            .any(|f| f["method"] == "$/cancel_request"),
        "the open elicitation was not withdrawn"
    );
    assert_eq!(
        record(&conn, &session, "tool/result", "q").unwrap()["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn without_forms_a_single_choice_question_is_asked_as_a_permission_prompt() {
    let mut conn = Conn::in_process(asking(false));
    let session = conn.ready().await;
    // A person, who reads before choosing.
    conn.permission_delay = Some(std::time::Duration::from_millis(1500));
    conn.answer_permissions(&["name:SQLite"]);
    conn.prompt(&session, "set it up").await;
    assert!(conn.elicitations.is_empty());
    let asked = &conn.permission_requests[0];
    assert_eq!(asked["toolCall"]["toolCallId"], "q");
    assert_eq!(
        asked["toolCall"]["title"],
        "Database: Which database should the service use?"
    );
    let names: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Don't answer", "SQLite", "Postgres"]);
    assert!(
        asked["options"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["kind"] == "allow_once")
    );
    let result = told(&conn).to_string();
    assert!(result.contains(r#"=\"SQLite\""#), "{result}");
    // Given as the user's likely choice, no more: the channel cannot say.
    assert!(
        result.contains("through permission prompts")
            && result.contains("could have chosen these instead of the user"),
        "{result}"
    );

    // "Don't answer" is a refusal the model hears.
    let mut conn = Conn::in_process(asking(false));
    let session = conn.ready().await;
    conn.permission_delay = Some(std::time::Duration::from_millis(1500));
    conn.answer_permissions(&["name:Don't answer"]);
    conn.prompt(&session, "set it up").await;
    assert!(
        told(&conn)
            .to_string()
            .contains("The question went unanswered")
    );
}

#[tokio::test]
async fn an_editor_that_answers_every_prompt_by_itself_does_not_answer_for_the_user() {
    // The attack: a client that approves every permission request at once,
    // unseen, with its first allow option ("Don't answer").
    let mut conn = Conn::in_process(asking(false));
    let session = conn.ready().await;
    conn.answer_permissions(&["allow_once"]);
    let response = conn.prompt(&session, "set it up").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(conn.permission_requests.len(), 1, "it was asked");
    let result = told(&conn);
    let said = result.to_string();
    // The model is not told the user chose anything.
    assert!(!said.contains("The user answered"), "{said}");
    assert!(!said.contains(r#"=\"SQLite\""#), "{said}");
    assert_eq!(result["isError"], true, "{said}");
    assert!(said.contains("The question went unanswered"), "{said}");
    let card = conn.thread(&session).card("q");
    assert_eq!(card.status, "failed");
    let logged = record(&conn, &session, "tool/result", "q").unwrap();
    assert_eq!(logged["status"], "failed");

    // A client that picks a label by itself, at once, is not taken for
    // the user either.
    let mut conn = Conn::in_process(asking(false));
    let session = conn.ready().await;
    conn.answer_permissions(&["name:SQLite"]);
    conn.prompt(&session, "set it up").await;
    let result = told(&conn);
    let said = result.to_string();
    assert!(!said.contains("The user answered"), "{said}");
    assert_eq!(result["isError"], true, "{said}");
    assert!(
        said.contains("The question was not answered by the user")
            && said.contains(r#"the editor chose \"SQLite\" within"#)
            && said.contains("Treat the question as unanswered"),
        "{said}"
    );
    let card = conn.thread(&session).card("q");
    assert_eq!(card.status, "failed");
    assert!(
        card.text().contains("not answered by the user"),
        "{}",
        card.text()
    );

    // Control: the same answer from a person who took a moment is given
    // (as the user's likely choice).
    let mut conn = Conn::in_process(asking(false));
    let session = conn.ready().await;
    conn.permission_delay = Some(std::time::Duration::from_millis(1500));
    conn.answer_permissions(&["name:SQLite"]);
    conn.prompt(&session, "set it up").await;
    let said = told(&conn).to_string();
    assert!(said.contains("The user answered"), "{said}");
    assert!(said.contains(r#"=\"SQLite\""#), "{said}");
    assert_eq!(conn.thread(&session).card("q").status, "completed");
}

#[tokio::test]
async fn an_editor_that_answers_every_prompt_by_itself_after_a_moment_does_not_answer_for_the_user()
{
    // The attack: a client that approves every permission request by
    // itself, with its first allow option, but only after a moment (a
    // relay, a loaded machine, a countdown), past the 1 s a person needs.
    let mut conn = Conn::in_process(asking(false));
    let session = conn.ready().await;
    conn.permission_delay = Some(std::time::Duration::from_millis(1100));
    conn.answer_permissions(&["allow_once"]);
    conn.prompt(&session, "set it up").await;
    let result = told(&conn);
    let said = result.to_string();
    // The model is not given a label nobody chose.
    assert!(!said.contains("The user answered"), "{said}");
    assert!(!said.contains(r#"=\"SQLite\""#), "{said}");
    assert_eq!(result["isError"], true, "{said}");
    assert!(said.contains("unanswered"), "{said}");

    // Control: a person who reads and picks "SQLite" is heard.
    let mut conn = Conn::in_process(asking(false));
    let session = conn.ready().await;
    conn.permission_delay = Some(std::time::Duration::from_millis(1100));
    conn.answer_permissions(&["name:SQLite"]);
    conn.prompt(&session, "set it up").await;
    let said = told(&conn).to_string();
    assert!(said.contains(r#"=\"SQLite\""#), "{said}");
    assert_eq!(conn.thread(&session).card("q").status, "completed");
}

#[tokio::test]
async fn without_forms_a_multiple_choice_question_is_not_asked_and_the_model_is_told_why() {
    let mut conn = Conn::in_process(asking(true));
    let session = conn.ready().await;
    let response = conn.prompt(&session, "set it up").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(conn.permission_requests.is_empty());
    assert!(conn.elicitations.is_empty());
    let result = told(&conn);
    assert_eq!(result["isError"], true);
    assert!(result.to_string().contains("The user cannot be asked here"));
}

#[tokio::test]
async fn a_deny_rule_and_a_hook_block_the_question_before_anyone_is_asked() {
    for policy in [
        json!({"permissions": {"deny": ["AskUserQuestion"]}}),
        json!({"hooks": [{"id": "quiet", "tool": "AskUserQuestion", "decision": "deny", "reason": "no questions in CI"}]}),
    ] {
        let (mut conn, session) = with_forms(asking(false).with_policy(policy.clone())).await;
        conn.prompt(&session, "set it up").await;
        assert!(conn.elicitations.is_empty(), "{policy}");
        let call = record(&conn, &session, "tool/call", "q").unwrap();
        assert_eq!(call["decision"]["outcome"], "deny", "{policy}");
        assert!(record(&conn, &session, "tool/started", "q").is_none());
        assert_eq!(told(&conn)["isError"], true);
    }
}

#[tokio::test]
async fn a_loaded_session_replays_the_question_and_its_answer() {
    let mut live = Conn::spawn(asking(false));
    live.initialize_with(serde_json::from_str(FORMS).unwrap())
        .await;
    let session = live.new_session().await;
    live.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"q1": "SQLite"}}));
    live.prompt(&session, "set it up").await;
    let shown = live.thread(&session).card("q").text();
    let env = live.end().await;

    let mut again = Conn::spawn(env);
    again.initialize().await;
    again.load(&session).await;
    let card = again.thread(&session).card("q");
    assert_eq!(card.status, "completed");
    assert_eq!(
        card.title,
        "Ask the user: Which database should the service use?"
    );
    assert_eq!(card.text(), shown);
    assert!(card.text().contains(r#"="SQLite""#), "{}", card.text());
    // Nobody is asked again.
    assert!(again.elicitations.is_empty());
}

#[tokio::test]
async fn a_question_open_when_candor_dies_is_closed_on_reload_and_the_model_is_told() {
    use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
    let mut live = Conn::spawn(asking(false));
    live.initialize_with(serde_json::from_str(FORMS).unwrap())
        .await;
    let session = live.new_session().await;
    live.elicitation_answers.push_back(Value::Null);
    live.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "set it up"}]}),
    )
    .await;
    while live.elicitations.is_empty() {
        live.recv().await;
    }
    live.child().start_kill().unwrap();
    let _ = live.child().wait().await;
    let env = live.env;

    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("I will ask again.")],
        "end_turn",
    )])
    .await;
    let mut cmd = candor_command(&env);
    cmd.env_remove("CANDOR_SCRIPT")
        .env("CANDOR_PROVIDER", "anthropic")
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", anthropic::KEY);
    let mut again = Conn::spawn_with(env, cmd);
    again.initialize().await;
    again.load(&session).await;
    assert_eq!(again.thread(&session).card("q").status, "failed");
    let result = record(&again, &session, "tool/result", "q").unwrap();
    assert_eq!(
        result["output"],
        "interrupted: candor stopped before this finished"
    );
    let answer = again.prompt(&session, "continue").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let sent = mock.bodies().join("\n");
    assert!(
        sent.contains("interrupted: candor stopped before this finished"),
        "{sent}"
    );
    // The reloaded session does not ask the dead question again.
    assert!(again.elicitations.is_empty());
}

#[tokio::test]
async fn plan_mode_lets_the_model_ask() {
    let (mut conn, session) = with_forms(asking(false).with_policy(json!({"mode": "plan"}))).await;
    conn.elicitation_answers
        .push_back(json!({"action": "accept", "content": {"q1": "SQLite"}}));
    conn.prompt(&session, "plan it").await;
    assert_eq!(conn.elicitations.len(), 1);
    assert!(told(&conn).to_string().contains(r#"=\"SQLite\""#));
}
