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

/// What a session showed, less its title (a loaded session's title comes
/// with `session/list`, after the replay).
fn untitled(updates: Vec<Value>) -> Vec<Value> {
    updates
        .into_iter()
        .filter(|u| {
            u["sessionUpdate"] != "session_info_update"
                && u["sessionUpdate"] != "user_message_chunk"
        })
        .collect()
}

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/claude/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The user's own Claude Code settings (no trust needed).
fn user_settings(env: &TestEnv, settings: Value) {
    let path = env.dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, settings.to_string()).unwrap();
}

/// A parent that starts one general-purpose child, which runs `echo hi`
/// and answers; the user's PreToolUse hooks record their input and
/// rewrite the command to end with ` WORD`.
fn rewritten_child() -> TestEnv {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent(
                "a1",
                "general-purpose",
                "say hi",
                "Run echo hi and report."
            )])),
            respond(json!([text("It said hi.")])),
        ],
        vec![child(
            "general-purpose",
            None,
            vec![
                respond(json!([tool("b1", "Bash", json!({"command": "echo hi"}))])),
                respond(json!([text("The command printed hi WORD.")])),
            ],
        )],
    ));
    let seen = env.dir.path().join("seen.jsonl");
    let record = format!("{} record {}", fixture("events.py"), seen.display());
    let append = format!("{} append WORD", fixture("events.py"));
    user_settings(
        &env,
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": record},
            {"type": "command", "command": append}
        ]}]}}),
    );
    env
}

#[tokio::test]
async fn a_childs_call_rewritten_by_the_users_hook_agrees_on_its_card_its_log_the_result_and_the_replay()
 {
    let env = rewritten_child();
    let mut conn = Conn::in_process(env);
    conn.initialize_with(json!({"subagents": {}})).await;
    let session = conn.new_session().await;
    let answer = conn.prompt(&session, "say hi through a subagent").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let kids = conn.subagents(&session);
    assert_eq!(kids.len(), 1, "the child was announced");
    let kid = kids[0].clone();
    // The child's card, in its own session, shows what ran.
    let card = conn.thread(&kid).card("b1").clone();
    assert_eq!(card.status, "completed");
    assert_eq!(card.raw_input["command"], "echo hi WORD");
    assert!(card.text().contains("hi WORD"), "{}", card.text());
    // Its permission prompt was asked in its own session, on its own card.
    assert_eq!(
        conn.permission_requests.len(),
        1,
        "{:?}",
        conn.permission_requests
    );
    let asked = &conn.permission_requests[0];
    assert_eq!(asked["sessionId"], kid);
    assert_eq!(asked["toolCall"]["toolCallId"], "b1");
    assert_eq!(asked["toolCall"]["rawInput"]["command"], "echo hi WORD");
    // The parent's card references the child's session.
    let parent_card = conn.thread(&session).card("a1").clone();
    assert!(
        parent_card
            .content
            .iter()
            .any(|c| c["type"] == "session" && c["sessionId"] == kid.as_str()),
        "{:?}",
        parent_card.content
    );
    // The child's log, the parent's result.
    let child_log = conn.env.log(&kid);
    let call = child_log.iter().find(|r| r["type"] == "tool/call").unwrap();
    assert_eq!(call["arguments"]["command"], "echo hi WORD");
    assert_eq!(call["originalArguments"]["command"], "echo hi");
    let log = conn.env.log(&session);
    let result = log
        .iter()
        .find(|r| r["type"] == "tool/result" && r["toolCallId"] == "a1")
        .unwrap();
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("printed hi WORD"),
        "{result}"
    );
    // The hook was told who called, as Claude Code tells it.
    let seen = std::fs::read_to_string(conn.env.dir.path().join("seen.jsonl")).unwrap();
    let input: Value = serde_json::from_str(seen.lines().next().unwrap()).unwrap();
    assert_eq!(input["agent_id"], kid.as_str());
    assert_eq!(input["agent_type"], "general-purpose");
    assert_eq!(input["session_id"], session);
    assert_eq!(input["tool_input"]["command"], "echo hi");
    // The replay shows every session as it was shown live.
    let live_parent = untitled(shown_updates(&conn, &session, 0));
    let live_child = shown_updates(&conn, &kid, 0);
    let env = conn.end().await;
    let mut again = Conn::in_process(env);
    again.initialize_with(json!({"subagents": {}})).await;
    let at = again.frames.len();
    again.load(&session).await;
    let replayed_parent = untitled(shown_updates(&again, &session, at));
    assert_eq!(replayed_parent, live_parent, "the parent's replay differs");
    assert_eq!(
        shown_updates(&again, &kid, at),
        live_child,
        "the child's replay differs"
    );
}

#[tokio::test]
async fn without_subagent_sessions_the_childs_prompt_is_asked_on_the_parents_card_and_the_replay_agrees()
 {
    let env = rewritten_child();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "say hi through a subagent").await;
    assert!(
        conn.subagents(&session).is_empty(),
        "no subagent session for this client"
    );
    let asked = &conn.permission_requests[0];
    assert_eq!(asked["sessionId"], session);
    assert_eq!(
        asked["toolCall"]["toolCallId"], "a1",
        "asked on the parent's card"
    );
    let title = asked["toolCall"]["title"].as_str().unwrap();
    assert!(
        title.starts_with("The general-purpose subagent wants to run"),
        "{title}"
    );
    assert_eq!(asked["toolCall"]["rawInput"]["command"], "echo hi WORD");
    let card = conn.thread(&session).card("a1").clone();
    assert_eq!(
        card.title, "general-purpose: say hi",
        "the card's own title is back"
    );
    assert!(
        card.text().contains("echo hi WORD") && card.text().contains("— done"),
        "{}",
        card.text()
    );
    let live = untitled(shown_updates(&conn, &session, 0));
    let env = conn.end().await;
    let mut again = Conn::in_process(env);
    again.initialize().await;
    let at = again.frames.len();
    again.load(&session).await;
    let replayed = untitled(shown_updates(&again, &session, at));
    assert_eq!(replayed, live, "the replay differs");
}
