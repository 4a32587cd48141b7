//! The model's effort as a session config option (`thought_level`): the
//! levels the model takes, the request carrying the level, recorded and
//! restored like a model change.

use serde_json::json;

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
use crate::support::mock_openai::{self as openai, MockOpenai};
use crate::support::*;

fn ids(option: &serde_json::Value) -> Vec<String> {
    option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn effort_is_a_thought_level_option_that_the_request_and_a_load_follow() {
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
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let effort = config_option(&created, "effort");
    assert_eq!(effort["category"], "thought_level", "{created}");
    assert_eq!(effort["currentValue"], "off");
    assert_eq!(ids(effort), ["off", "low", "medium", "high"]);
    let session = created["sessionId"].as_str().unwrap().to_owned();

    let bad = conn
        .request(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "effort", "value": "ludicrous"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let changed = conn
        .call(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "effort", "value": "high"}),
        )
        .await;
    assert_eq!(config_option(&changed, "effort")["currentValue"], "high");
    conn.prompt(&session, "think").await;
    let first = &mock.requests()[0];
    assert_eq!(
        first["thinking"],
        json!({"type": "enabled", "budget_tokens": 31_999}),
        "{first}"
    );
    assert!(first["max_tokens"].as_u64().unwrap() > 31_999);
    assert!(
        conn.env
            .log(&session)
            .iter()
            .any(|r| r["type"] == "config/changed"
                && r["configId"] == "effort"
                && r["value"] == "high")
    );

    // Closed and loaded again: the level is back, and requests carry it.
    conn.call("session/close", json!({"sessionId": session}))
        .await;
    let loaded = conn
        .call(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert_eq!(config_option(&loaded, "effort")["currentValue"], "high");
    conn.prompt(&session, "again").await;
    assert_eq!(mock.requests()[1]["thinking"]["budget_tokens"], 31_999);
}

#[tokio::test]
async fn the_configured_budget_is_the_default_and_off_sends_no_thinking() {
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("ok")],
        "end_turn",
    )])
    .await;
    let mut conn = anthropic_conn(
        TestEnv::new(),
        &mock.url(),
        "model = \"claude-opus-4-1\"\nthinking_budget = 2048\n",
    );
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let effort = config_option(&created, "effort");
    assert_eq!(effort["currentValue"], "configured", "{effort}");
    assert_eq!(ids(effort), ["off", "low", "medium", "high", "configured"]);
    let session = created["sessionId"].as_str().unwrap().to_owned();
    conn.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "effort", "value": "off"}),
    )
    .await;
    conn.prompt(&session, "hi").await;
    assert!(mock.requests()[0].get("thinking").is_none());
}

#[tokio::test]
async fn a_model_without_levels_has_no_effort_option() {
    let mock = MockAnthropic::start(vec![]).await;
    let mut conn = anthropic_conn(
        TestEnv::new(),
        &mock.url(),
        "model = \"claude-3-5-haiku-latest\"\n",
    );
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    assert!(config_option(&created, "effort").is_null(), "{created}");
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let refused = conn
        .request(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "effort", "value": "high"}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test]
async fn openai_reasoning_effort_follows_the_option() {
    let mock = MockOpenai::start(vec![openai::chat("ok", vec![], "stop")]).await;
    let env = TestEnv::new();
    let mut cmd = candor_command(&env);
    cmd.env("CANDOR_PROVIDER", "openai")
        .env("CANDOR_MODEL", "gpt-5")
        .env("OPENAI_BASE_URL", mock.url())
        .env("OPENAI_API_KEY", openai::KEY);
    let mut conn = Conn::spawn_with(env, cmd);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let effort = config_option(&created, "effort");
    assert_eq!(effort["currentValue"], "default");
    assert_eq!(ids(effort), ["default", "minimal", "low", "medium", "high"]);
    let session = created["sessionId"].as_str().unwrap().to_owned();
    conn.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "effort", "value": "low"}),
    )
    .await;
    conn.prompt(&session, "hi").await;
    assert_eq!(mock.requests()[0]["reasoning_effort"], "low");
}
