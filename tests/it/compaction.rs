//! Long sessions continue (issue 17, item 4): a session driven past a small
//! configured window compacts once, and the next request carries the
//! summary then the recent turns verbatim; cards and a replay are unchanged
//! but for the notice; `/compact [focus]` mid-session, twice; a cancelled
//! compaction records nothing; a provider's context-length error leads to a
//! compaction and one retry (Anthropic and Chat Completions mocks, which
//! check the compacted history as the APIs do), and a second one fails the
//! turn clearly.

use candor::config::ApiKey;
use candor::{Config, ProviderSetting};
use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as ant, MockAnthropic};
use crate::support::mock_openai::{self as oai, MockOpenai};
use crate::support::*;

/// The session/update payloads for `session` among `frames`.
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

/// A scripted response that reports usage as a provider would.
fn with_usage(items: Value, input: u64) -> Value {
    json!({"content": items, "usage": {"inputTokens": input, "outputTokens": 100}})
}

/// The configuration of `env` with this context window.
fn windowed(env: &TestEnv, window: Option<u64>) -> Config {
    let mut config = env.config();
    config.env_settings.context_window = window;
    config
}

/// A prompt of about 3 000 tokens (12 000 bytes).
fn big(n: usize) -> String {
    format!("task {n}: {}", "x".repeat(12_000))
}

/// The texts of a model request's messages, in order (`role: text`).
fn texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m["role"].as_str().unwrap() {
            "user" => format!("user: {}", m["text"].as_str().unwrap()),
            "assistant" => format!(
                "assistant: {}",
                m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<String>()
            ),
            other => format!("{other}: {}", m["results"]),
        })
        .collect()
}

fn compactions(log: &[Value]) -> Vec<Value> {
    log.iter()
        .filter(|r| r["type"] == "history/compacted")
        .cloned()
        .collect()
}

/// The script of the long session: five prompts, the fourth of which is
/// past the window; `summary` puts the summary response where the
/// compaction asks for it.
fn long_script(summary: bool) -> Value {
    let mut responses = vec![
        with_usage(
            json!([
                text("Looked at it."),
                tool("b1", "Bash", json!({"command": "echo one"}))
            ]),
            3_000,
        ),
        with_usage(json!([text("One is done.")]), 6_000),
        with_usage(json!([text("Two is done.")]), 10_000),
        // The context is now about 29 100 tokens: with the fourth prompt's
        // 3 000 the next request passes the limit of 30 000.
        with_usage(json!([text("Three is done.")]), 29_000),
        with_usage(json!([text("Four is done.")]), 9_000),
        with_usage(json!([text("Five is done.")]), 10_000),
    ];
    if summary {
        responses.insert(
            4,
            with_usage(
                json!([text(
                    "SUMMARY: the user gave tasks 1 and 2; both are done, echo one printed one."
                )]),
                29_500,
            ),
        );
    }
    script(responses)
}

/// Runs the five prompts; returns the session id.
async fn drive(conn: &mut Conn) -> String {
    let session = conn.ready().await;
    for n in 1..=5 {
        let answer = conn.prompt(&session, &big(n)).await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    }
    session
}

#[tokio::test]
async fn a_session_past_a_small_window_compacts_once_and_goes_on_from_the_summary() {
    // Window 40 000: reserve 10 000 (a quarter), limit 30 000, turns kept
    // verbatim up to 7 500 tokens.
    let env = TestEnv::scripted(long_script(true));
    let config = windowed(&env, Some(40_000));
    let mut conn = Conn::in_process_with(env, config);
    let session = drive(&mut conn).await;

    let log = conn.env.log(&session);
    let compacted = compactions(&log);
    assert_eq!(compacted.len(), 1, "{compacted:?}");
    let c = &compacted[0];
    assert_eq!(c["trigger"], "auto");
    assert_eq!(c["from"], 0);
    // The span ends right before the third prompt: the third and fourth
    // prompts (about 6 000 tokens) fit the 7 500 kept; the second would not.
    let third = log
        .iter()
        .find(|r| r["type"] == "user/message" && r["content"][0]["text"] == big(3))
        .unwrap();
    assert_eq!(
        c["to"].as_u64().unwrap() + 1,
        third["seq"].as_u64().unwrap()
    );
    assert!(c["tokensBefore"].as_u64().unwrap() > 30_000, "{c}");
    assert!(c["tokensAfter"].as_u64().unwrap() < 30_000, "{c}");
    assert_eq!(c["usage"]["inputTokens"], 29_500);
    assert!(c["summary"].as_str().unwrap().starts_with("SUMMARY: "));

    let requests = conn.env.model_requests();
    assert_eq!(requests.len(), 7);
    // The summary request: the older part, then the instruction; no
    // later turn; the session's tools.
    let ask = texts(&requests[4]);
    assert!(ask[0].starts_with("user: task 1: "));
    assert!(ask.iter().any(|t| t.starts_with("user: task 2: ")));
    assert!(!ask.iter().any(|t| t.contains("task 3: ")));
    assert!(ask.last().unwrap().contains("replaced by a summary"));
    assert_eq!(requests[4]["tools"], requests[3]["tools"]);
    // The next request: the summary, then the recent turns verbatim.
    let next = texts(&requests[5]);
    assert!(next[0].contains("<summary>\nSUMMARY: the user gave tasks 1 and 2"));
    assert_eq!(
        &next[1..],
        [
            format!("user: {}", big(3)),
            "assistant: Three is done.".to_owned(),
            format!("user: {}", big(4)),
        ]
    );
    // It fits the window (4 bytes a token).
    assert!(requests[5].to_string().len() / 4 < 30_000);
    // And the one after still goes on from the same summary.
    let last = texts(&requests[6]);
    assert!(last[0].contains("SUMMARY: the user gave tasks 1 and 2"));
    assert!(last.iter().all(|t| !t.contains("task 1: ")));
    assert_eq!(last.last().unwrap(), &format!("user: {}", big(5)));

    // The client saw a notice and the context after it.
    let shown = updates(&conn.frames, &session);
    let notice = shown
        .iter()
        .position(|u| {
            kind(u) == "agent_message_chunk"
                && unmark(u["content"]["text"].as_str().unwrap()).is_some_and(|t| {
                    t.starts_with("Compacted the conversation (the next request would have filled the context window): about ")
                })
        })
        .expect("a compaction notice");
    assert_eq!(
        shown[notice + 1],
        json!({"sessionUpdate": "usage_update", "used": c["tokensAfter"], "size": 40_000})
    );
}

#[tokio::test]
async fn cards_and_replay_are_unchanged_but_for_the_notice() {
    // The same session without compaction (no window), for comparison.
    // Both unsandboxed: a sandboxed card names its own project and TMPDIR,
    // which differ between the two.
    let control_env = TestEnv::scripted(long_script(false)).unsandboxed();
    let mut control = Conn::in_process(control_env);
    let control_session = drive(&mut control).await;
    let env = TestEnv::scripted(long_script(true)).unsandboxed();
    let config = windowed(&env, Some(40_000));
    let mut conn = Conn::in_process_with(env, config.clone());
    let session = drive(&mut conn).await;

    // Usage differs, and the title comes whenever it is made.
    let no_usage = |u: &Value| kind(u) != "usage_update" && kind(u) != "session_info_update";
    let plain: Vec<Value> = updates(&control.frames, &control_session)
        .into_iter()
        .filter(no_usage)
        .collect();
    let live: Vec<Value> = updates(&conn.frames, &session)
        .into_iter()
        .filter(no_usage)
        .collect();
    let notice = |u: &Value| {
        u["content"]["text"]
            .as_str()
            .and_then(unmark)
            .is_some_and(|t| t.starts_with("Compacted the conversation"))
    };
    let without: Vec<Value> = live.iter().filter(|u| !notice(u)).cloned().collect();
    assert_eq!(live.len(), without.len() + 1);
    assert_eq!(without, plain, "compaction changed what the client saw");
    assert_eq!(conn.thread(&session).card("b1").status, "completed");

    // session/load replays what was shown live, the notice included.
    let shown: Vec<Value> = updates(&conn.frames, &session)
        .into_iter()
        .filter(|u| kind(u) != "available_commands_update")
        .collect();
    let env = conn.end().await;
    let mut again = Conn::in_process_with(env, config);
    again.initialize().await;
    again.load(&session).await;
    let replayed: Vec<Value> = updates(&again.frames, &session)
        .into_iter()
        .filter(|u| kind(u) != "user_message_chunk" && kind(u) != "available_commands_update")
        .collect();
    assert_eq!(
        replayed, shown,
        "the replay differs from what was shown live"
    );
}

#[tokio::test]
async fn compact_mid_session_with_a_focus_and_again_later() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("Parser read.")])),
        respond(json!([text("Lexer read.")])),
        respond(json!([text("FIRST SUMMARY: parser and lexer were read.")])),
        respond(json!([text("Tests run.")])),
        respond(json!([text("SECOND SUMMARY: parser, lexer, tests.")])),
        respond(json!([text("Still going.")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "read the parser").await;
    conn.prompt(&session, "read the lexer").await;
    let answer = conn.prompt(&session, "/compact the parser bug").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // The focus reached the summary request, which ends with the
    // instruction; the /compact prompt itself is not in it.
    let requests = conn.env.model_requests();
    assert_eq!(requests.len(), 3);
    let ask = texts(&requests[2]);
    assert!(
        ask.last()
            .unwrap()
            .ends_with("keep everything about it: the parser bug")
    );
    assert!(!ask.iter().any(|t| t.contains("/compact")));
    assert!(ask[0].ends_with("read the parser"));
    // The answer shows the summary; the notice gives the figures.
    let thread = conn.thread(&session);
    assert!(
        thread
            .agent_text
            .contains("From now on the model works from this summary and the turns after it:\n\nFIRST SUMMARY: parser and lexer were read.")
    );
    assert!(
        thread
            .notices
            .contains("(on request, focused on: the parser bug)")
    );
    let log = conn.env.log(&session);
    let first = &compactions(&log)[0];
    assert_eq!(first["trigger"], "manual");
    assert_eq!(first["focus"], "the parser bug");
    let ran = log.iter().find(|r| r["type"] == "command/ran").unwrap();
    assert_eq!(ran["command"], "compact");

    // The next prompt goes on from the summary and the turn kept.
    conn.prompt(&session, "run the tests").await;
    let next = texts(&conn.env.model_requests()[3]);
    assert!(next[0].contains("FIRST SUMMARY"));
    assert_eq!(
        &next[1..],
        [
            "user: read the lexer",
            "assistant: Lexer read.",
            "user: run the tests"
        ]
    );

    // A second compaction covers the first: its request starts from the
    // first summary, and what follows has only the second.
    conn.prompt(&session, "/compact").await;
    let requests = conn.env.model_requests();
    let ask = texts(&requests[4]);
    assert!(ask[0].contains("FIRST SUMMARY"));
    assert!(!ask.last().unwrap().contains("focus"));
    conn.prompt(&session, "go on").await;
    let requests = conn.env.model_requests();
    let after = texts(requests.last().unwrap());
    assert!(after[0].contains("SECOND SUMMARY"));
    assert!(after.iter().all(|t| !t.contains("FIRST SUMMARY")));
    let log = conn.env.log(&session);
    assert_eq!(compactions(&log).len(), 2);
    assert_eq!(compactions(&log)[1]["from"], 0);
    // The audit trail shows both.
    let audit = audit(&conn.env.home, &session, false);
    assert_eq!(
        audit.matches("history compacted (manual").count(),
        2,
        "{audit}"
    );
}

#[tokio::test]
async fn compact_with_nothing_before_it_says_so() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("hi")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let answer = conn.prompt(&session, "/compact").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert!(
        conn.thread(&session)
            .agent_text
            .starts_with("Nothing to compact: ")
    );
    assert!(conn.env.model_requests().is_empty());
    assert!(compactions(&conn.env.log(&session)).is_empty());
}

#[tokio::test]
async fn a_cancelled_compaction_records_nothing_compacted() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("One.")])),
        respond(json!([text("Two.")])),
        json!({"delayMs": 30_000, "content": [text("NEVER SEEN")]}),
        respond(json!([text("Three.")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "one").await;
    conn.prompt(&session, "two").await;
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/compact"}]}),
        )
        .await;
    let capture = conn.env.capture.clone();
    let asked = eventually(FRAME_TIMEOUT, || {
        std::fs::read_to_string(&capture).is_ok_and(|t| t.lines().count() == 3)
    })
    .await;
    assert!(asked, "the summary request never started");
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "cancelled"}));
    let log = conn.env.log(&session);
    assert!(compactions(&log).is_empty());
    let ran = log.iter().find(|r| r["type"] == "command/ran").unwrap();
    assert!(
        ran["output"]
            .as_str()
            .unwrap()
            .contains("cancelled; nothing was compacted")
    );
    assert!(!conn.thread(&session).agent_text.contains("NEVER SEEN"));
    // The model still has the whole conversation.
    conn.prompt(&session, "three").await;
    let last = texts(conn.env.model_requests().last().unwrap());
    assert_eq!(
        last,
        [
            "user: one",
            "assistant: One.",
            "user: two",
            "assistant: Two.",
            "user: three"
        ]
    );
}

/// candor in-process with Anthropic at `mock`.
fn anthropic_conn(mock: &MockAnthropic) -> Conn {
    let env = TestEnv::new();
    let mut config = env.config();
    config.provider = ProviderSetting::Anthropic;
    config.anthropic_api_key = Some(ApiKey::new(ant::KEY));
    config.env_settings.anthropic_base_url = Some(mock.url());
    Conn::in_process_with(env, config)
}

fn too_long() -> ant::Step {
    ant::Step::Status {
        status: 400,
        headers: Vec::new(),
        body: ant::error_body(
            "invalid_request_error",
            "prompt is too long: 208310 tokens > 200000 maximum",
        ),
    }
}

/// The texts of the user messages of an Anthropic request.
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_context_length_error_compacts_and_the_request_is_retried_once() {
    let mock = MockAnthropic::start(vec![
        ant::message(
            vec![
                ant::text("Looking."),
                ant::tool_use("toolu_01", "Bash", r#"{"command": "echo one"}"#),
            ],
            "tool_use",
        ),
        ant::message(vec![ant::text("It printed one.")], "end_turn"),
        ant::message(
            vec![
                ant::text("Again."),
                ant::tool_use("toolu_02", "Bash", r#"{"command": "echo two"}"#),
            ],
            "tool_use",
        ),
        ant::message(vec![ant::text("It printed two.")], "end_turn"),
        too_long(),
        ant::message(
            vec![ant::text("SUMMARY: echo one and echo two ran.")],
            "end_turn",
        ),
        ant::message(vec![ant::text("Three, after compaction.")], "end_turn"),
    ])
    .await;
    let mut conn = anthropic_conn(&mock);
    let session = conn.ready().await;
    conn.prompt(&session, "run one").await;
    conn.prompt(&session, "run two").await;
    let answer = conn.prompt(&session, "run three").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        conn.thread(&session)
            .agent_text
            .ends_with("Three, after compaction.")
    );
    assert!(!conn.thread(&session).agent_text.contains("SUMMARY"));

    let log = conn.env.log(&session);
    let compacted = compactions(&log);
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0]["trigger"], "overflow");
    let requests = mock.requests();
    assert_eq!(requests.len(), 7);
    // The summary request: the first turns (a call and its result) and the
    // instruction after the last answer, tools defined.
    let ask = user_texts(&requests[5]);
    assert_eq!(ask[0], "run one");
    assert!(ask.last().unwrap().contains("replaced by a summary"));
    assert!(!ask.iter().any(|t| t == "run three"));
    assert!(requests[5]["tools"].is_array());
    // The retry (which the mock accepted, so well-formed): the summary,
    // then the turns kept verbatim, their call answered, then the prompt.
    let retry = &requests[6];
    let texts = user_texts(retry);
    assert!(texts[0].contains("SUMMARY: echo one and echo two ran."));
    assert_eq!(texts.last().unwrap(), "run three");
    assert!(!texts.iter().any(|t| t == "run one"));
    assert!(retry["messages"].to_string().contains("toolu_02"));
    assert!(!retry["messages"].to_string().contains("toolu_01"));
    // The client was told, and the cards are as they were.
    let thread = conn.thread(&session);
    assert!(
        thread
            .notices
            .contains("the provider said the request was too long for the model")
    );
    assert_eq!(thread.card("toolu_01").status, "completed");
    assert_eq!(thread.card("toolu_02").status, "completed");
}

#[tokio::test]
async fn a_second_context_length_error_fails_the_turn_clearly() {
    let mock = MockAnthropic::start(vec![
        ant::message(vec![ant::text("One.")], "end_turn"),
        ant::message(vec![ant::text("Two.")], "end_turn"),
        too_long(),
        ant::message(vec![ant::text("SUMMARY: one.")], "end_turn"),
        too_long(),
    ])
    .await;
    let mut conn = anthropic_conn(&mock);
    let session = conn.ready().await;
    conn.prompt(&session, "one").await;
    conn.prompt(&session, "two").await;
    let answer = conn.prompt(&session, "three").await;
    let message = answer["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("also after candor compacted the conversation and retried"),
        "{answer}"
    );
    let log = conn.env.log(&session);
    assert_eq!(compactions(&log).len(), 1);
    let ended = log.last().unwrap();
    assert_eq!(ended["type"], "turn/ended");
    assert_eq!(ended["stopReason"], "error");
    assert_eq!(mock.requests().len(), 5);
}

#[tokio::test]
async fn chat_completions_context_length_exceeded_compacts_and_retries() {
    let mock = MockOpenai::start(vec![
        oai::chat("One.", vec![], "stop"),
        oai::chat("Two.", vec![], "stop"),
        oai::Step::Status {
            status: 400,
            headers: Vec::new(),
            body: oai::error_body(
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.",
                "invalid_request_error",
                Some("context_length_exceeded"),
            ),
        },
        oai::chat("SUMMARY: one and two.", vec![], "stop"),
        oai::chat("Three.", vec![], "stop"),
    ])
    .await;
    let env = TestEnv::new();
    let mut config = env.config();
    config.provider = ProviderSetting::OpenaiChat;
    config.openai_api_key = Some(ApiKey::new(oai::KEY));
    config.env_settings.openai_base_url = Some(mock.url());
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.prompt(&session, "one").await;
    conn.prompt(&session, "two").await;
    let answer = conn.prompt(&session, "three").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    let retry = requests[4]["messages"].as_array().unwrap();
    assert_eq!(retry[0]["role"], "system");
    assert!(
        retry[1]["content"]
            .as_str()
            .unwrap()
            .contains("SUMMARY: one and two.")
    );
    assert_eq!(retry.last().unwrap()["content"], "three");
}

#[tokio::test]
async fn a_tool_call_in_the_summary_answer_runs_nothing() {
    // A hostile (or confused) model answers the summary request with a
    // call: nothing runs, no card appears, the text is the summary.
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("One.")])),
        respond(json!([text("Two.")])),
        respond(json!([
            text("SUMMARY: one and two."),
            tool("evil", "Bash", json!({"command": "touch pwned"}))
        ])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "one").await;
    conn.prompt(&session, "two").await;
    conn.prompt(&session, "/compact").await;
    assert!(!conn.env.project.join("pwned").exists());
    assert!(conn.thread(&session).cards.is_empty());
    let log = conn.env.log(&session);
    assert!(log.iter().all(|r| r["toolCallId"] != "evil"));
    assert_eq!(compactions(&log)[0]["summary"], "SUMMARY: one and two.");
}

#[tokio::test]
async fn a_window_too_small_for_the_tools_is_not_compacted_with() {
    // A project's config file that sets a tiny window would otherwise have
    // candor ask for a summary before every request.
    let env = TestEnv::scripted(script(vec![
        with_usage(json!([text("One.")]), 50_000),
        with_usage(json!([text("Two.")]), 50_000),
        with_usage(json!([text("Three.")]), 50_000),
    ]));
    env.file(".candor/config.toml", "context_window = 100\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    for p in ["one", "two", "three"] {
        let answer = conn.prompt(&session, p).await;
        assert_eq!(answer["result"]["stopReason"], "end_turn");
    }
    assert_eq!(conn.env.model_requests().len(), 3);
    let log = conn.env.log(&session);
    assert!(compactions(&log).is_empty());
    let warnings = log
        .iter()
        .filter(|r| {
            r["type"] == "session/notice"
                && r["text"]
                    .as_str()
                    .unwrap()
                    .contains("for compacting to help")
        })
        .count();
    assert_eq!(warnings, 1);
}

#[tokio::test]
async fn a_client_that_declares_compaction_gets_a_compaction_update_not_a_notice() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("Parser read.")])),
        respond(json!([text("SUMMARY: the parser was read.")])),
        respond(json!([text("Going on.")])),
    ]));
    let config = windowed(&env, Some(50_000));
    let mut conn = Conn::in_process_with(env, config);
    conn.initialize_with(json!({"session": {"compaction": {}}}))
        .await;
    let session = conn.new_session().await;
    conn.prompt(&session, "read the parser").await;
    let at = conn.frames.len();
    conn.prompt(&session, "/compact").await;
    let shown = updates(&conn.frames[at..], &session);
    let compaction: Vec<&Value> = shown
        .iter()
        .filter(|u| kind(u) == "compaction_update")
        .collect();
    assert_eq!(compaction.len(), 1, "{shown:?}");
    let update = compaction[0];
    assert_eq!(update["status"], "completed");
    let record = compactions(&conn.env.log(&session))[0].clone();
    let seq = record["seq"].clone();
    assert_eq!(update["compactionId"], format!("compaction-{seq}"));
    assert_eq!(
        update["summary"][0]["text"],
        "SUMMARY: the parser was read."
    );
    let figures = &update["_meta"]["candor"];
    assert_eq!(figures["trigger"], "manual");
    assert_eq!(figures["tokensBefore"], record["tokensBefore"]);
    assert_eq!(figures["tokensAfter"], record["tokensAfter"]);
    assert_eq!(figures["contextWindow"], 50_000);
    assert!(
        !shown.iter().any(|u| kind(u) == "notice"
            || (kind(u) == "agent_message_chunk"
                && u["content"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("> candor"))),
        "the notice as well: {shown:?}"
    );
    let usage = shown.iter().find(|u| kind(u) == "usage_update").unwrap();
    assert_eq!(usage["used"], figures["tokensAfter"]);
}

/// The Anthropic configuration candor in-process uses with `mock`.
fn anthropic_config(env: &TestEnv, mock: &MockAnthropic) -> Config {
    let mut config = env.config();
    config.provider = ProviderSetting::Anthropic;
    config.anthropic_api_key = Some(ApiKey::new(ant::KEY));
    config.env_settings.anthropic_base_url = Some(mock.url());
    config
}

/// A call of `echo <word>` as the model makes it.
fn echo_call(id: &str, word: &str) -> ant::Step {
    ant::message(
        vec![
            ant::text(&format!("Running {word}.")),
            ant::tool_use(id, "Bash", &format!(r#"{{"command": "echo {word}"}}"#)),
        ],
        "tool_use",
    )
}

/// The ids of the `tool_use` and of the `tool_result` blocks of a request.
fn call_ids(body: &Value) -> (Vec<String>, Vec<String>) {
    let blocks: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect();
    let ids = |kind: &str, key: &str| {
        blocks
            .iter()
            .filter(|b| b["type"] == kind)
            .map(|b| b[key].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    (ids("tool_use", "id"), ids("tool_result", "tool_use_id"))
}

const REQUEST: &str = "Fix the failing tests in the parser; keep the public API as it is.";

#[tokio::test]
async fn overflow_within_one_prompt_keeps_the_request_verbatim_and_the_latest_pairs() {
    let mock = MockAnthropic::start(vec![
        echo_call("toolu_01", "one"),
        echo_call("toolu_02", "two"),
        echo_call("toolu_03", "three"),
        too_long(),
        ant::message(
            vec![ant::text("SUMMARY: echo one printed one.")],
            "end_turn",
        ),
        ant::message(vec![ant::text("Fixed, after compaction.")], "end_turn"),
        // The next prompt, in the reloaded session.
        ant::message(vec![ant::text("Still fixed.")], "end_turn"),
    ])
    .await;
    let env = TestEnv::new();
    let config = anthropic_config(&env, &mock);
    let mut conn = Conn::in_process_with(env, config.clone());
    let session = conn.ready().await;
    // One prompt, and the calls its work made: no earlier user turn.
    let answer = conn.prompt(&session, REQUEST).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        conn.thread(&session)
            .agent_text
            .ends_with("Fixed, after compaction.")
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    // The summary request: the request and the oldest pair, then the
    // instruction, which says the request stays in view.
    let ask = &requests[4];
    let asked = user_texts(ask);
    assert_eq!(asked[0], REQUEST);
    assert!(
        asked
            .last()
            .unwrap()
            .contains("stays in view word for word")
    );
    assert_eq!(
        call_ids(ask),
        (vec!["toolu_01".into()], vec!["toolu_01".into()])
    );
    // The retry: the user's request word for word, the summary after it,
    // the newest pairs whole (each call with its result, none alone; the
    // mock, which checks as the API does, accepted it).
    let retry = &requests[5];
    let first = user_texts(retry)[0].clone();
    assert!(
        first.starts_with(&format!("{REQUEST}\n\n[candor] ")),
        "{first}"
    );
    assert!(first.contains("SUMMARY: echo one printed one."), "{first}");
    assert_eq!(retry["messages"][0]["role"], "user");
    assert_eq!(retry["messages"][1]["role"], "assistant");
    let (calls, results) = call_ids(retry);
    assert_eq!(calls, ["toolu_02", "toolu_03"]);
    assert_eq!(results, calls);
    assert!(!retry["messages"].to_string().contains("toolu_01"));

    // The log: one overflow compaction, the request kept by its seqs.
    let log = conn.env.log(&session);
    let compacted = compactions(&log);
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0]["trigger"], "overflow");
    let kept = &compacted[0]["keptPrompt"];
    let user = log
        .iter()
        .find(|r| r["type"] == "user/message")
        .unwrap()
        .clone();
    assert_eq!(kept["from"], user["seq"], "{kept}");
    assert!(kept["to"].as_u64().unwrap() < compacted[0]["to"].as_u64().unwrap());
    // The cards are as they were.
    for id in ["toolu_01", "toolu_02", "toolu_03"] {
        assert_eq!(conn.thread(&session).card(id).status, "completed");
    }

    // Replay and model history agree: the session loaded again is sent the
    // same history, then the next prompt.
    let env = conn.end().await;
    let mut again = Conn::in_process_with(env, config);
    again.initialize().await;
    again.load(&session).await;
    for id in ["toolu_01", "toolu_02", "toolu_03"] {
        assert_eq!(again.thread(&session).card(id).status, "completed");
    }
    let answer = again.prompt(&session, "and now?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let next = &mock.requests()[6];
    // (The cache breakpoint moves to the newest message; nothing else.)
    let uncached = |v: &Value| {
        let mut v = v.clone();
        for m in v.as_array_mut().unwrap() {
            for b in m["content"].as_array_mut().unwrap() {
                b.as_object_mut().unwrap().remove("cache_control");
            }
        }
        v
    };
    let messages = uncached(&next["messages"]);
    let before = uncached(&retry["messages"]);
    let before = before.as_array().unwrap();
    assert_eq!(messages.as_array().unwrap()[..before.len()], before[..]);
    assert_eq!(user_texts(next).last().unwrap(), "and now?");
}

#[tokio::test]
async fn overflow_after_the_only_call_of_a_prompt_summarizes_it_and_keeps_the_request() {
    // One call, whose result filled the window: the work is summarized
    // whole, the request stays.
    let mock = MockAnthropic::start(vec![
        echo_call("toolu_01", "one"),
        too_long(),
        ant::message(vec![ant::text("SUMMARY: echo one ran.")], "end_turn"),
        ant::message(vec![ant::text("Done.")], "end_turn"),
    ])
    .await;
    let mut conn = anthropic_conn(&mock);
    let session = conn.ready().await;
    let answer = conn.prompt(&session, REQUEST).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let retry = &requests[3];
    let messages = retry["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{retry}");
    let first = user_texts(retry)[0].clone();
    assert!(
        first.starts_with(&format!("{REQUEST}\n\n[candor] ")),
        "{first}"
    );
    assert!(first.contains("SUMMARY: echo one ran."));
    assert_eq!(call_ids(retry), (Vec::new(), Vec::new()));
}

#[tokio::test]
async fn a_second_overflow_within_one_prompt_fails_the_turn_saying_both_were_tried() {
    let mock = MockAnthropic::start(vec![
        echo_call("toolu_01", "one"),
        echo_call("toolu_02", "two"),
        too_long(),
        ant::message(vec![ant::text("SUMMARY: one ran.")], "end_turn"),
        too_long(),
    ])
    .await;
    let mut conn = anthropic_conn(&mock);
    let session = conn.ready().await;
    let answer = conn.prompt(&session, REQUEST).await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("also after candor compacted the conversation and retried"),
        "{answer}"
    );
    assert_eq!(mock.requests().len(), 5);
    let log = conn.env.log(&session);
    assert_eq!(compactions(&log).len(), 1);
    let ended = log.iter().rfind(|r| r["type"] == "turn/ended").unwrap();
    assert_eq!(ended["stopReason"], "error");
}
