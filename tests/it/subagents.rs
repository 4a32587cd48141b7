//! Subagents: the `Agent` tool runs a child session whose every call goes
//! through the same interception as the parent's, shown on the parent's
//! card (or, for a client that takes them, as a subagent session), its
//! answer the call's result; recorded in both logs, replayed, audited.

use serde_json::{Value, json};

use crate::support::*;

/// An `Agent` call of the parent's script.
fn agent(id: &str, kind: &str, description: &str, prompt: &str) -> Value {
    tool(
        id,
        "Agent",
        json!({"description": description, "prompt": prompt, "subagent_type": kind}),
    )
}

/// A script with subagent scripts beside the parent's responses.
fn with_children(responses: Vec<Value>, children: Vec<Value>) -> Value {
    json!({"responses": responses, "subagents": children})
}

/// One subagent's script.
fn child(kind: &str, prompt: Option<&str>, responses: Vec<Value>) -> Value {
    let mut c = json!({"type": kind, "responses": responses});
    if let Some(p) = prompt {
        c["prompt"] = json!(p);
    }
    c
}

/// The ids of the subagents a parent log started, in order.
fn children_of(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter(|r| r["type"] == "subagent/started")
        .map(|r| r["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_explore_subagent_answers_and_its_answer_is_the_calls_result() {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent(
                "a1",
                "Explore",
                "find notes",
                "Which files hold notes?"
            )])),
            respond(json!([text("The notes are in notes.txt.")])),
        ],
        vec![child(
            "Explore",
            None,
            vec![
                respond(json!([tool("g1", "Glob", json!({"pattern": "*.txt"}))])),
                respond(json!([text("notes.txt holds the notes.")])),
            ],
        )],
    ));
    env.file("notes.txt", "remember\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let answer = conn.prompt(&session, "where are my notes?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let card = conn.thread(&session).card("a1").clone();
    assert_eq!(card.status, "completed");
    assert_eq!(card.title, "Explore: find notes");
    let shown = card.text();
    assert!(shown.contains("notes.txt holds the notes."), "{shown}");
    assert!(
        shown.contains("*.txt") && shown.contains("done"),
        "the child's call is a line on the card: {shown}"
    );
    // Both logs, each naming the other.
    let log = conn.env.log(&session);
    let kids = children_of(&log);
    assert_eq!(kids.len(), 1);
    let child_log = conn.env.log(&kids[0]);
    assert_eq!(child_log[0]["type"], "session/started");
    assert_eq!(child_log[0]["parent"]["sessionId"], session);
    assert_eq!(child_log[0]["parent"]["toolCallId"], "a1");
    assert_eq!(child_log[1]["type"], "subagent/assigned");
    assert_eq!(child_log[1]["agentType"], "Explore");
    assert!(types(&child_log).contains(&"tool/call".to_owned()));
    let result = log
        .iter()
        .find(|r| r["type"] == "tool/result" && r["toolCallId"] == "a1")
        .unwrap();
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("The Explore subagent finished. Its answer:\n\nnotes.txt holds the notes."),
        "{result}"
    );
    // The child's model got its own history: its system prompt, the task,
    // not the parent's conversation.
    let requests = conn.env.model_requests();
    let child_requests: Vec<&Value> = requests
        .iter()
        .filter(|r| {
            r["system"]
                .as_str()
                .unwrap_or("")
                .contains("read-only exploration subagent")
        })
        .collect();
    assert_eq!(child_requests.len(), 2, "{requests:#?}");
    let first = child_requests[0]["messages"].to_string();
    assert!(first.contains("Which files hold notes?"), "{first}");
    assert!(
        !first.contains("where are my notes?"),
        "the parent's prompt reached the child: {first}"
    );
    let tools: Vec<&str> = child_requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        !tools.contains(&"Write") && !tools.contains(&"Agent"),
        "Explore is read-only: {tools:?}"
    );
}
