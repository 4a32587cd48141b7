//! `session/fork`: a new session whose log starts with the parent's
//! records; loading it replays the parent's cards as they were shown,
//! a hook's rewrite included.

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn a_fork_of_a_session_with_a_rewritten_call_replays_the_rewrite() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool("b1", "Bash", json!({"command": "git status"}))])),
        respond(json!([text("Clean.")])),
        respond(json!([text("In the fork.")])),
    ]))
    .with_policy(json!({"hooks": [
        {"id": "rtk", "tool": "Bash", "decision": "allow", "rewrite": {"command": {"replace": "^git status$", "with": "echo rewritten"}}}
    ]}));
    let mut conn = Conn::spawn(env);
    let init = conn.initialize().await;
    assert!(
        init["agentCapabilities"]["sessionCapabilities"]["fork"].is_object(),
        "{init}"
    );
    let parent = conn.new_session().await;
    conn.prompt(&parent, "status?").await;
    let cwd = conn.env.project.clone();
    let forked = conn
        .call(
            "session/fork",
            json!({"sessionId": parent, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    let fork = forked["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, parent);
    assert!(forked["configOptions"].is_array(), "{forked}");
    // The fork's log: the parent's records, its own id, then a notice.
    let log = conn.env.log(&fork);
    assert_eq!(log[0]["sessionId"], fork);
    let call = log.iter().find(|r| r["type"] == "tool/call").unwrap();
    assert_eq!(call["arguments"]["command"], "echo rewritten");
    assert!(
        log.iter()
            .any(|r| r["type"] == "session/notice"
                && r["text"].as_str().unwrap().contains(&parent))
    );
    // The fork goes on by itself.
    let answer = conn.prompt(&fork, "and now?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(conn.thread(&fork).agent_text.contains("In the fork."));
    assert!(
        !conn
            .env
            .log(&parent)
            .iter()
            .any(|r| r["type"] == "user/message" && r["content"][0]["text"] == "and now?")
    );

    // Loaded, the fork replays the parent's card with its rewrite.
    conn.call("session/close", json!({"sessionId": fork})).await;
    let mut again = Conn::spawn(conn.end().await);
    again.initialize().await;
    again
        .call(
            "session/load",
            json!({"sessionId": fork, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    let card = again.thread(&fork).card("b1");
    assert_eq!(card.status, "completed");
    assert!(
        card.text().contains("Rewritten by hook rtk"),
        "{}",
        card.text()
    );
    assert_eq!(card.raw_input["command"], "echo rewritten");

    let unknown = again
        .request(
            "session/fork",
            json!({"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
}
