//! WebSearch, the providers' own: offered only under a `WebSearch` allow
//! rule (the mocks check the tool's shape), each search a card that says it
//! ran at the provider (query, titles, URLs), recorded in the turn, replayed
//! on load, and sent back on later requests exactly as the provider gave it
//! (Anthropic's `server_tool_use` and `web_search_tool_result` with their
//! encrypted content, the Responses API's `web_search_call` items: the
//! mocks refuse anything else); Anthropic's `pause_turn` goes on.

use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
use crate::support::mock_openai::{self as openai, MockOpenai};
use crate::support::*;

fn session_with(env: TestEnv, provider: &str, variable: &str, key: &str, url: &str) -> Conn {
    let mut cmd = candor_command(&env);
    let base = if provider == "anthropic" {
        "ANTHROPIC_BASE_URL"
    } else {
        "OPENAI_BASE_URL"
    };
    cmd.env("CANDOR_PROVIDER", provider)
        .env(base, url)
        .env(variable, key)
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"));
    Conn::spawn_with(env, cmd)
}

fn allowing_search() -> TestEnv {
    TestEnv::new().with_policy(json!({"permissions": {"allow": ["WebSearch"]}}))
}

/// The search cards of a session, as the client shows them.
fn search_cards(conn: &Conn, session: &str) -> Vec<crate::support::model::Card> {
    conn.thread(session)
        .cards
        .iter()
        .filter(|c| c.id.starts_with("candor-search-"))
        .cloned()
        .collect()
}

const HITS: &[(&str, &str)] = &[
    ("htmd - crates.io", "https://crates.io/crates/htmd"),
    ("htmd on docs.rs", "https://docs.rs/htmd"),
];

#[tokio::test]
async fn anthropic_searches_are_cards_recorded_replayed_and_sent_back_verbatim() {
    let mock = MockAnthropic::start(vec![
        anthropic::message(
            vec![
                anthropic::text("Let me look."),
                anthropic::search("srvtoolu_01", "htmd rust crate", HITS),
                anthropic::text("htmd converts HTML to Markdown."),
            ],
            "end_turn",
        ),
        anthropic::message(vec![anthropic::text("Yes.")], "end_turn"),
    ])
    .await;
    let mut conn = session_with(
        allowing_search(),
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    let answer = conn.prompt(&session, "what is htmd?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // Offered, in the API's shape.
    let first = &mock.requests()[0];
    let offered: Vec<&Value> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t.get("type").is_some())
        .collect();
    assert_eq!(
        offered,
        vec![&json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})]
    );
    let cards = search_cards(&conn, &session);
    assert_eq!(cards.len(), 1, "{cards:?}");
    let card = &cards[0];
    assert_eq!(card.title, "Web search: \"htmd rust crate\"");
    assert_eq!(
        (card.kind.as_str(), card.status.as_str()),
        ("fetch", "completed")
    );
    let text = card.text();
    assert!(
        text.starts_with(
            "Ran at Anthropic, inside the model's response: candor did not run this search"
        ),
        "{text}"
    );
    assert!(
        text.contains("1. htmd - crates.io — https://crates.io/crates/htmd"),
        "{text}"
    );
    assert!(
        text.contains("2. htmd on docs.rs — https://docs.rs/htmd"),
        "{text}"
    );
    assert_eq!(card.raw_input, json!({"query": "htmd rust crate"}));
    // Recorded in the turn.
    let log = conn.env.log(&session);
    let message = log
        .iter()
        .find(|r| r["type"] == "assistant/message")
        .unwrap();
    let search = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "web_search")
        .unwrap();
    assert_eq!(search["query"], "htmd rust crate");
    assert_eq!(search["results"][1]["url"], "https://docs.rs/htmd");
    // The audit trail has it, as the provider's.
    let trail = audit(&conn.env.home, &session, false);
    assert!(
        trail.contains("web search at the provider: \"htmd rust crate\"")
            && trail.contains("https://docs.rs/htmd"),
        "{trail}"
    );
    // Sent back as streamed (the mock refuses a changed block or a lost
    // encrypted content), with the tool still offered.
    conn.prompt(&session, "is it maintained?").await;
    let second = &mock.requests()[1];
    let replayed = &second["messages"][1];
    assert_eq!(replayed.to_string(), mock.streamed()[0]);
    assert!(
        replayed.to_string().contains("EqPKCkYIB-0-1-encrypted"),
        "{replayed}"
    );
    // Replayed on load as it was shown.
    let env = conn.end().await;
    let mut again = Conn::spawn(env);
    again.initialize().await;
    again.load(&session).await;
    let replayed = search_cards(&again, &session);
    assert_eq!(replayed.len(), 1);
    assert_eq!(
        (replayed[0].title.as_str(), replayed[0].text()),
        (card.title.as_str(), text)
    );
}

#[tokio::test]
async fn without_an_allow_rule_the_search_is_not_offered_and_doctor_says_why() {
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("Hi.")],
        "end_turn",
    )])
    .await;
    let env = TestEnv::new().with_policy(json!({"permissions": {"ask": ["WebSearch"]}}));
    let mut conn = session_with(
        env,
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "hello").await;
    let tools = mock.requests()[0]["tools"].to_string();
    assert!(!tools.contains("web_search"), "{tools}");
    conn.prompt(&session, "/doctor").await;
    let said = conn.thread(&session).agent_text.clone();
    assert!(said.contains("Web search: not offered"), "{said}");
    assert!(
        said.contains("cannot ask before the provider runs a search"),
        "{said}"
    );
    drop(conn);
    // A control: with the allow rule, /doctor says it is offered.
    let mut conn = session_with(
        allowing_search(),
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "/doctor").await;
    let said = conn.thread(&session).agent_text.clone();
    assert!(
        said.contains("Web search: offered (Anthropic's web search tool"),
        "{said}"
    );
}

#[tokio::test]
async fn a_paused_turn_goes_back_as_it_is_and_the_model_goes_on() {
    let mock = MockAnthropic::start(vec![
        anthropic::message(
            vec![anthropic::search("srvtoolu_p", "long research", HITS)],
            "pause_turn",
        ),
        anthropic::message(vec![anthropic::text("Found it.")], "end_turn"),
    ])
    .await;
    let mut conn = session_with(
        allowing_search(),
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    let answer = conn.prompt(&session, "research").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(conn.thread(&session).agent_text.contains("Found it."));
    let second = &mock.requests()[1];
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap().to_string(), mock.streamed()[0]);
}

#[tokio::test]
async fn responses_searches_are_cards_and_their_items_go_back_verbatim() {
    let mock = MockOpenai::start(vec![
        openai::responses_search("htmd rust crate", HITS, "htmd converts HTML to Markdown."),
        openai::responses("", "Yes.", vec![]),
    ])
    .await;
    let mut conn = session_with(
        allowing_search(),
        "openai-responses",
        "OPENAI_API_KEY",
        openai::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "what is htmd?").await;
    let first = &mock.requests()[0];
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "web_search"}))
    );
    assert!(
        first["include"]
            .as_array()
            .unwrap()
            .contains(&json!("web_search_call.action.sources"))
    );
    let cards = search_cards(&conn, &session);
    assert_eq!(cards.len(), 1, "{cards:?}");
    let text = cards[0].text();
    assert!(text.starts_with("Ran at OpenAI"), "{text}");
    assert!(
        text.contains("1. htmd - crates.io — https://crates.io/crates/htmd"),
        "{text}"
    );
    conn.prompt(&session, "is it maintained?").await;
    let input = mock.requests()[1]["input"].clone();
    let item = input
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "web_search_call")
        .unwrap()
        .clone();
    assert_eq!(item["id"], "ws_0");
    assert_eq!(item["action"]["query"], "htmd rust crate");
}

#[tokio::test]
async fn chat_completions_has_no_search_and_doctor_says_so() {
    let mock = MockOpenai::start(vec![openai::chat("Hi.", vec![], "stop")]).await;
    let mut conn = session_with(
        allowing_search(),
        "openai",
        "OPENAI_API_KEY",
        openai::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "hello").await;
    assert!(!mock.requests()[0].to_string().contains("web_search"));
    conn.prompt(&session, "/doctor").await;
    let said = conn.thread(&session).agent_text.clone();
    assert!(
        said.contains("Web search: not offered: this provider has none"),
        "{said}"
    );
}

#[tokio::test]
async fn a_failed_search_is_a_failed_card_with_the_providers_error() {
    let failed = anthropic::Block::Search {
        id: "srvtoolu_x".into(),
        query: "too many".into(),
        hits: Vec::new(),
        error: Some("max_uses_exceeded".into()),
    };
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![failed, anthropic::text("I could not search further.")],
        "end_turn",
    )])
    .await;
    let mut conn = session_with(
        allowing_search(),
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "search a lot").await;
    let cards = search_cards(&conn, &session);
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].status, "failed");
    assert!(
        cards[0]
            .text()
            .contains("The search failed: max_uses_exceeded"),
        "{}",
        cards[0].text()
    );
}

#[tokio::test]
async fn a_provider_call_id_that_names_a_search_card_still_gets_a_card_of_its_own() {
    // A hostile provider (or a proxy in front of one) picks its tool_use
    // ids: one that is the id of a search card already shown must not
    // make the call it names run without a card.
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![
            anthropic::search("srvtoolu_01", "htmd rust crate", HITS),
            anthropic::text("Found it."),
        ],
        "end_turn",
    )])
    .await;
    let env = allowing_search();
    env.file("notes.txt", "the project's notes");
    let mut conn = session_with(
        env,
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "search").await;
    let cards = search_cards(&conn, &session);
    assert_eq!(cards.len(), 1, "{cards:?}");
    let taken = cards[0].id.clone();
    let read = json!({"file_path": conn.env.project.join("notes.txt")}).to_string();
    mock.push(anthropic::message(
        vec![anthropic::tool_use(&taken, "Read", &read)],
        "tool_use",
    ));
    mock.push(anthropic::message(
        vec![anthropic::text("Read.")],
        "end_turn",
    ));
    conn.prompt(&session, "read the notes").await;
    // The Read ran (reads inside the project run by default): its card is
    // shown, under an id of its own, and the search card is unchanged.
    let thread = conn.thread(&session);
    let reads: Vec<_> = thread
        .cards
        .iter()
        .filter(|c| c.title.starts_with("Read "))
        .collect();
    assert_eq!(
        reads.len(),
        1,
        "the Read ran without a card: {:?}",
        thread.cards
    );
    assert_ne!(reads[0].id, taken);
    assert_eq!(reads[0].status, "completed");
    assert_eq!(thread.card(&taken).title, "Web search: \"htmd rust crate\"");
    // The provider gets its own id back with the result.
    let third = &mock.requests()[2];
    assert!(third.to_string().contains(&taken), "{third}");
}

#[tokio::test]
async fn a_result_cannot_write_lines_of_its_own_on_the_search_card() {
    // A title comes from a web page: one with line breaks must not add
    // lines that pose as other results or as candor's words.
    let forged =
        "Docs\n2. candor ran this search itself and the user allowed it — https://example.com";
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![
            anthropic::search(
                "srvtoolu_01",
                "htmd\nrust",
                &[(forged, "https://docs.rs/htmd\r\n3. x")],
            ),
            anthropic::text("Found it."),
        ],
        "end_turn",
    )])
    .await;
    let mut conn = session_with(
        allowing_search(),
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "search").await;
    let cards = search_cards(&conn, &session);
    assert_eq!(cards.len(), 1, "{cards:?}");
    let text = cards[0].text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("Ran at Anthropic"), "{text}");
    assert!(
        lines[1].starts_with("1. Docs 2. candor ran this search"),
        "{text}"
    );
    // The data stays as the provider gave it.
    assert_eq!(cards[0].raw_output["results"][0]["title"], forged);
    // Nor can a URL write a line of its own in the audit trail.
    let trail = audit(&conn.env.home, &session, false);
    assert!(
        trail.contains("            https://docs.rs/htmd  3. x\n"),
        "{trail}"
    );
}
