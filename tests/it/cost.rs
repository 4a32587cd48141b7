//! What the session's requests cost: `usage_update.cost` from the price
//! table or the user's `[prices]`, in the log, `/context` and the audit;
//! no cost at all for a model candor has no price for.

use serde_json::Value;

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
use crate::support::*;

fn usage_updates(conn: &Conn) -> Vec<Value> {
    conn.frames
        .iter()
        .filter(|f| {
            f["method"] == "session/update"
                && f["params"]["update"]["sessionUpdate"] == "usage_update"
        })
        .map(|f| f["params"]["update"].clone())
        .collect()
}

/// The mock reports 100 input tokens, 20 read from the cache, 10 written
/// to it, and 50 output tokens per request.
const ONE_REQUEST_SONNET: f64 = (100.0 * 3.0 + 20.0 * 0.30 + 10.0 * 3.75 + 50.0 * 15.0) / 1e6;

#[tokio::test]
async fn usage_updates_carry_the_sessions_cost_which_the_log_context_and_audit_show() {
    let mock = MockAnthropic::start(vec![
        anthropic::message(vec![anthropic::text("one")], "end_turn"),
        anthropic::message(vec![anthropic::text("two")], "end_turn"),
    ])
    .await;
    let mut conn = anthropic_conn(
        TestEnv::new(),
        &mock.url(),
        "model = \"claude-sonnet-4-5\"\n",
    );
    let session = conn.ready().await;
    conn.prompt(&session, "first").await;
    conn.prompt(&session, "second").await;
    let updates = usage_updates(&conn);
    assert_eq!(updates.len(), 2, "{updates:?}");
    for (n, update) in updates.iter().enumerate() {
        let amount = update["cost"]["amount"].as_f64().unwrap();
        let expected = ONE_REQUEST_SONNET * (n + 1) as f64;
        assert!((amount - expected).abs() < 1e-12, "{update}");
        assert_eq!(update["cost"]["currency"], "USD");
    }
    let log = conn.env.log(&session);
    let costs: Vec<f64> = log
        .iter()
        .filter(|r| r["type"] == "assistant/message")
        .map(|r| r["cost"]["amount"].as_f64().unwrap())
        .collect();
    assert_eq!(costs.len(), 2);
    assert!((costs[0] - ONE_REQUEST_SONNET).abs() < 1e-12);

    conn.prompt(&session, "/context").await;
    let shown = &conn.thread(&session).agent_text;
    assert!(shown.contains("**Cost so far**: $0.0022 (USD)"), "{shown}");

    let text = audit(&conn.env.home, &session, false);
    assert!(
        text.contains("cost of the model requests: $0.0022 (USD)"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&audit(&conn.env.home, &session, true)).unwrap();
    let entry = json
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "cost")
        .unwrap();
    assert!((entry["amount"].as_f64().unwrap() - 2.0 * ONE_REQUEST_SONNET).abs() < 1e-12);
}

#[tokio::test]
async fn a_model_without_a_price_gets_no_cost_until_the_user_gives_one() {
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("ok")],
        "end_turn",
    )])
    .await;
    let mut conn = anthropic_conn(
        TestEnv::new(),
        &mock.url(),
        "model = \"claude-3-opus-latest\"\n",
    );
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let updates = usage_updates(&conn);
    assert_eq!(updates.len(), 1);
    assert!(updates[0].get("cost").is_none(), "a guess: {}", updates[0]);
    let log = conn.env.log(&session);
    assert!(
        log.iter()
            .filter(|r| r["type"] == "assistant/message")
            .all(|r| r.get("cost").is_none())
    );
    let text = audit(&conn.env.home, &session, false);
    assert!(
        text.contains("cost of the model requests: unknown"),
        "{text}"
    );

    // The user's price table prices it (cache prices left out: the mock's
    // cache reads make that request's cost unknown, so give them too).
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("ok")],
        "end_turn",
    )])
    .await;
    let mut conn = anthropic_conn(
        TestEnv::new(),
        &mock.url(),
        "model = \"claude-3-opus-latest\"\n[prices.\"claude-3-opus-latest\"]\ninput = 15.0\noutput = 75.0\ncache_read = 1.5\ncache_write = 18.75\n",
    );
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let updates = usage_updates(&conn);
    let amount = updates[0]["cost"]["amount"].as_f64().unwrap();
    let expected = (100.0 * 15.0 + 20.0 * 1.5 + 10.0 * 18.75 + 50.0 * 75.0) / 1e6;
    assert!((amount - expected).abs() < 1e-12, "{amount}");
}
