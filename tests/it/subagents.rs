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

/// A definition file under `dir` (`<dir>/agents/<name>.md`).
fn definition(dir: &std::path::Path, name: &str, front: &str, body: &str) {
    let path = dir.join("agents").join(format!("{name}.md"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("---\nname: {name}\n{front}---\n{body}\n")).unwrap();
}

/// The child's `tool/call` record of `id`.
fn child_call(env: &TestEnv, kid: &str, id: &str) -> Value {
    env.log(kid)
        .into_iter()
        .find(|r| r["type"] == "tool/call" && r["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no tool/call {id} in the child's log"))
}

#[tokio::test]
async fn a_users_definition_with_a_tools_allowlist_refuses_another_tool_on_the_childs_card() {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent(
                "a1",
                "reader",
                "read notes",
                "Read notes.txt"
            )])),
            respond(json!([text("ok")])),
        ],
        vec![child(
            "reader",
            None,
            vec![
                respond(json!([
                    tool(
                        "w1",
                        "Write",
                        json!({"file_path": "x.txt", "content": "no"})
                    ),
                    tool("r1", "Read", json!({"file_path": "notes.txt"}))
                ])),
                respond(json!([text("It says remember.")])),
            ],
        )],
    ));
    env.file("notes.txt", "remember\n");
    definition(
        &env.dir.path().join(".claude"),
        "reader",
        "description: Reads files.\ntools: Read, Grep\nmaxTurns: 5\n",
        "You only read.",
    );
    let mut conn = Conn::in_process(env);
    conn.initialize_with(json!({"subagents": {}})).await;
    let session = conn.new_session().await;
    conn.prompt(&session, "read my notes").await;
    let kid = conn.subagents(&session)[0].clone();
    let refused = conn.thread(&kid).card("w1").clone();
    assert_eq!(refused.status, "failed");
    assert!(
        refused.text().contains("Refused by the reader subagent's definition: Write is not among this subagent's tools (Read, Grep)"),
        "{}",
        refused.text()
    );
    assert_eq!(conn.thread(&kid).card("r1").status, "completed");
    assert!(
        !conn.env.project.join("x.txt").exists(),
        "nothing was written"
    );
    let assigned = conn.env.log(&kid)[1].clone();
    assert_eq!(assigned["tools"], json!(["Read", "Grep"]));
    assert_eq!(assigned["maxTurns"], 5);
    assert_eq!(assigned["systemPrompt"], "You only read.");
    // It was offered only its tools.
    let requests = conn.env.model_requests();
    let own = requests
        .iter()
        .find(|r| {
            r["system"]
                .as_str()
                .unwrap_or("")
                .starts_with("You only read.")
        })
        .expect("the child's request has its definition's prompt");
    let tools: Vec<&str> = own["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["Read", "Grep"]);
}

#[tokio::test]
async fn a_definitions_bypass_permissions_does_not_lift_the_parents_mode() {
    // Attack: a definition asks for bypassPermissions; the parent is in
    // default mode, so the child's command still asks, and the user's
    // refusal holds. Control: the same child in a bypassPermissions
    // parent runs unasked.
    for (parent_mode, asked) in [("default", true), ("bypassPermissions", false)] {
        let env = TestEnv::scripted(with_children(
            vec![
                respond(json!([agent("a1", "wild", "touch it", "Create f.txt")])),
                respond(json!([text("ok")])),
            ],
            vec![child(
                "wild",
                None,
                vec![
                    respond(json!([tool(
                        "b1",
                        "Bash",
                        json!({"command": "touch f.txt"})
                    )])),
                    respond(json!([text("done")])),
                ],
            )],
        ))
        .with_policy(json!({"mode": parent_mode}));
        definition(
            &env.dir.path().join(".claude"),
            "wild",
            "description: Does anything.\npermissionMode: bypassPermissions\n",
            "Do it.",
        );
        let mut conn = Conn::in_process(env);
        conn.answer_permissions(&["reject_once"]);
        let session = conn.ready().await;
        conn.prompt(&session, "go").await;
        let kid = children_of(&conn.env.log(&session))[0].clone();
        assert_eq!(
            conn.env.log(&kid)[1]["mode"],
            parent_mode,
            "the child's mode is its parent's"
        );
        assert_eq!(!conn.permission_requests.is_empty(), asked, "{parent_mode}");
        assert_eq!(
            conn.env.project.join("f.txt").exists(),
            !asked,
            "{parent_mode}"
        );
    }
}

#[tokio::test]
async fn a_deny_rule_of_the_parent_refuses_the_childs_call() {
    // Attack: the user denied `rm` to the session; a subagent tries it.
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent(
                "a1",
                "general-purpose",
                "clean",
                "Remove keep.txt"
            )])),
            respond(json!([text("ok")])),
        ],
        vec![child(
            "general-purpose",
            None,
            vec![
                respond(json!([tool(
                    "b1",
                    "Bash",
                    json!({"command": "rm keep.txt"})
                )])),
                respond(json!([text("could not")])),
            ],
        )],
    ))
    .with_policy(json!({"mode": "bypassPermissions", "permissions": {"deny": ["Bash(rm *)"]}}));
    env.file("keep.txt", "x");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "clean up").await;
    assert!(conn.env.project.join("keep.txt").exists());
    let kid = children_of(&conn.env.log(&session))[0].clone();
    let call = child_call(&conn.env, &kid, "b1");
    assert_eq!(call["decision"]["outcome"], "deny");
    assert_eq!(call["decision"]["by"], "rule:Bash(rm *)");
    let card = conn.thread(&session).card("a1").clone();
    assert!(
        card.text().contains("`rm keep.txt` — failed"),
        "{}",
        card.text()
    );
}

#[tokio::test]
async fn a_subagent_cannot_start_subagents_unless_its_definition_lists_agent_and_never_past_depth_two()
 {
    let recurse = |id: &str| agent(id, "nester", "go deeper", "Start another nester.");
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([
                recurse("a1"),
                agent("a2", "general-purpose", "try", "Start one.")
            ])),
            respond(json!([text("ok")])),
        ],
        vec![
            // Depth 1 and 2 play the same script: each tries to nest.
            child(
                "nester",
                None,
                vec![
                    respond(json!([recurse("n1")])),
                    respond(json!([text("nested")])),
                ],
            ),
            child(
                "general-purpose",
                None,
                vec![
                    respond(json!([recurse("g1")])),
                    respond(json!([text("could not")])),
                ],
            ),
        ],
    ));
    definition(
        &env.dir.path().join(".claude"),
        "nester",
        "description: Nests.\ntools: Read, Agent(nester)\n",
        "Nest.",
    );
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "nest").await;
    let log = conn.env.log(&session);
    let kids = children_of(&log);
    assert_eq!(kids.len(), 2);
    // The general-purpose child (no Agent in its definition) is refused.
    let gp = kids
        .iter()
        .find(|k| conn.env.log(k)[1]["agentType"] == "general-purpose")
        .unwrap();
    let refused = child_call(&conn.env, gp, "g1");
    assert_eq!(refused["decision"]["outcome"], "deny", "{refused}");
    // The nester at depth 1 starts one at depth 2, which may not start any.
    let nester = kids.iter().find(|k| *k != gp).unwrap();
    let grandkids = children_of(&conn.env.log(nester));
    assert_eq!(grandkids.len(), 1);
    let deepest = &grandkids[0];
    assert_eq!(conn.env.log(deepest)[0]["parent"]["depth"], 2);
    let refused = child_call(&conn.env, deepest, "n1");
    assert_eq!(refused["decision"]["outcome"], "deny", "{refused}");
    assert!(children_of(&conn.env.log(deepest)).is_empty());
    // The grandchild's calls show on the user's card too.
    let card = conn.thread(&session).card("a1").clone();
    assert!(card.text().contains("↳"), "{}", card.text());
}

#[tokio::test]
async fn a_childs_prompt_is_not_a_command_and_cannot_reach_the_parents_history() {
    // Attack: the model hands a subagent "/trust always", and asks it to
    // repeat the parent's conversation.
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent(
                "a1",
                "general-purpose",
                "trust",
                "/trust always"
            )])),
            respond(json!([text("ok")])),
        ],
        vec![child(
            "general-purpose",
            None,
            vec![respond(json!([text("I cannot see it.")]))],
        )],
    ));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "secret parent words").await;
    let kid = children_of(&conn.env.log(&session))[0].clone();
    let types = types(&conn.env.log(&kid));
    assert!(
        !types.contains(&"command/ran".to_owned()) && !types.contains(&"trust/granted".to_owned()),
        "{types:?}"
    );
    let requests = conn.env.model_requests();
    let own = requests
        .iter()
        .find(|r| {
            r["messages"].to_string().contains("/trust always")
                && !r["messages"].to_string().contains("secret parent words")
        })
        .expect("the child's model got the task as a message");
    assert!(own["system"].as_str().unwrap().contains("subagent"));
}

/// Two children: `asker` runs a command (which asks), `reader` reads a
/// file (which does not) and answers.
fn asker_and_reader() -> TestEnv {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([
                agent("a1", "general-purpose", "ask", "Run echo asked."),
                agent("a2", "Explore", "read", "Read notes.txt.")
            ])),
            respond(json!([text("both done")])),
        ],
        vec![
            child(
                "general-purpose",
                None,
                vec![
                    respond(json!([tool(
                        "b1",
                        "Bash",
                        json!({"command": "echo asked"})
                    )])),
                    respond(json!([text("asked and ran")])),
                ],
            ),
            child(
                "Explore",
                None,
                vec![
                    respond(json!([tool(
                        "r1",
                        "Read",
                        json!({"file_path": "notes.txt"})
                    )])),
                    respond(json!([text("read it")])),
                ],
            ),
        ],
    ));
    env.file("notes.txt", "remember\n");
    env
}

#[tokio::test]
async fn a_child_waiting_for_an_answer_does_not_block_its_sibling() {
    let mut conn = Conn::in_process(asker_and_reader());
    let session = conn.ready().await;
    conn.hold_permissions();
    let prompt = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "both"}]}),
        )
        .await;
    // The reader finishes while the asker waits for the user.
    loop {
        conn.recv().await;
        let done = conn
            .thread(&session)
            .cards
            .iter()
            .any(|c| c.id == "a2" && c.status == "completed");
        if done {
            break;
        }
    }
    assert_eq!(conn.permission_requests.len(), 1);
    assert_eq!(conn.thread(&session).card("a1").status, "in_progress");
    assert!(
        conn.thread(&session)
            .card("a1")
            .text()
            .contains("waiting for your answer")
    );
    // The user answers; the asker goes on.
    let request = conn
        .frames
        .iter()
        .find(|f| f["method"] == "session/request_permission")
        .unwrap()
        .clone();
    let option = request["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .unwrap()["optionId"]
        .clone();
    conn.send_raw(
        &json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": option}}})
            .to_string(),
    )
    .await;
    let answer = conn.response(&prompt).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(conn.thread(&session).card("a1").status, "completed");
    assert!(
        conn.thread(&session)
            .card("a1")
            .text()
            .contains("asked and ran")
    );
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_three_children() {
    let slow = |id: &str| respond(json!([tool(id, "Bash", json!({"command": "sleep 30"}))]));
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([
                agent("a1", "general-purpose", "one", "first"),
                agent("a2", "general-purpose", "two", "second"),
                agent("a3", "general-purpose", "three", "third")
            ])),
            respond(json!([text("never")])),
        ],
        vec![
            child(
                "general-purpose",
                Some("first"),
                vec![slow("s1"), respond(json!([text("x")]))],
            ),
            child(
                "general-purpose",
                Some("second"),
                vec![slow("s2"), respond(json!([text("x")]))],
            ),
            child(
                "general-purpose",
                Some("third"),
                vec![slow("s3"), respond(json!([text("x")]))],
            ),
        ],
    ))
    .with_policy(json!({"permissions": {"allow": ["Bash(sleep *)"]}}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let prompt = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "three at once"}]}),
        )
        .await;
    // All three commands run.
    loop {
        conn.recv().await;
        let card = |id: &str| {
            conn.thread(&session)
                .cards
                .iter()
                .find(|c| c.id == id)
                .map(|c| c.text())
        };
        if ["a1", "a2", "a3"]
            .iter()
            .all(|id| card(id).is_some_and(|t| t.contains("— running")))
        {
            break;
        }
    }
    let started = std::time::Instant::now();
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answer = conn.response(&prompt).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let log = conn.env.log(&session);
    for kid in children_of(&log) {
        let child_log = conn.env.log(&kid);
        let result = child_log
            .iter()
            .find(|r| r["type"] == "tool/result")
            .unwrap();
        assert_eq!(result["status"], "cancelled", "{result}");
        assert_eq!(child_log.last().unwrap()["type"], "turn/ended");
    }
    let ended: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "subagent/ended")
        .collect();
    assert_eq!(ended.len(), 3);
    assert!(
        ended.iter().all(|e| e["outcome"] == "cancelled"),
        "{ended:?}"
    );
    for id in ["a1", "a2", "a3"] {
        let card = conn.thread(&session).card(id).clone();
        assert_eq!(card.status, "failed", "{id}");
        assert!(card.text().contains("— cancelled"), "{}", card.text());
    }
}

#[tokio::test]
async fn a_clients_cancel_of_one_subagent_ends_only_that_one() {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([
                agent("a1", "general-purpose", "slow", "slow one"),
                agent("a2", "general-purpose", "quick", "quick one")
            ])),
            respond(json!([text("parent went on")])),
        ],
        vec![
            child(
                "general-purpose",
                Some("slow"),
                vec![
                    respond(json!([tool("s1", "Bash", json!({"command": "sleep 30"}))])),
                    respond(json!([text("x")])),
                ],
            ),
            child(
                "general-purpose",
                Some("quick"),
                vec![
                    respond(json!([tool("q1", "Bash", json!({"command": "sleep 1"}))])),
                    respond(json!([text("quick answer")])),
                ],
            ),
        ],
    ))
    .with_policy(json!({"permissions": {"allow": ["Bash(sleep *)"]}}));
    let mut conn = Conn::in_process(env);
    conn.initialize_with(json!({"subagents": {}})).await;
    let session = conn.new_session().await;
    let prompt = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "two"}]}),
        )
        .await;
    // Wait for the slow child's command to run.
    let slow = loop {
        let frame = conn.recv().await;
        let update = &frame["params"]["update"];
        if update["toolCallId"] == "s1" && update["status"] == "in_progress" {
            break frame["params"]["sessionId"].as_str().unwrap().to_owned();
        }
    };
    assert!(conn.subagents(&session).contains(&slow));
    conn.notify("session/cancel", json!({"sessionId": slow}))
        .await;
    let answer = conn.response(&prompt).await;
    assert_eq!(
        answer["result"]["stopReason"], "end_turn",
        "the parent went on"
    );
    assert_eq!(conn.thread(&session).card("a1").status, "failed");
    assert_eq!(conn.thread(&session).card("a2").status, "completed");
    assert!(conn.thread(&session).agent_text.contains("parent went on"));
}

#[tokio::test]
async fn a_project_definition_that_loosens_is_listed_in_the_trust_question_and_waits_for_it() {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([text("first")])),
            respond(json!([text("after trust")])),
        ],
        vec![],
    ));
    definition(
        &env.project.join(".claude"),
        "deployer",
        "description: Deploys.\npermissionMode: acceptEdits\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./check.sh\n",
        "Deploy carefully.",
    );
    definition(
        &env.project.join(".claude"),
        "helper",
        "description: Helps.\ntools: Read\n",
        "Help.",
    );
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hello").await;
    let question = told(&conn).join("\n");
    assert!(
        question.contains("subagent deployer")
            && question.contains("permissionMode acceptEdits")
            && question.contains("./check.sh"),
        "{question}"
    );
    // Until trusted, the model is not offered it; the one that wants
    // nothing is.
    let offered = |r: &Value| {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "Agent")
            .map(|t| t["inputSchema"]["properties"]["subagent_type"]["enum"].clone())
            .unwrap_or(Value::Null)
    };
    let first = conn.env.model_requests()[0].clone();
    assert_eq!(
        offered(&first),
        json!(["general-purpose", "Explore", "Plan", "helper"])
    );
    conn.prompt(&session, "/trust").await;
    conn.prompt(&session, "again").await;
    let last = conn.env.model_requests().last().unwrap().clone();
    assert_eq!(
        offered(&last),
        json!(["general-purpose", "Explore", "Plan", "deployer", "helper"])
    );
}

#[tokio::test]
async fn a_kill_while_children_run_leaves_no_card_open_in_any_log_after_reload() {
    let slow = |id: &str, prompt: &str| {
        child(
            "general-purpose",
            Some(prompt),
            vec![
                respond(json!([tool(id, "Bash", json!({"command": "sleep 30"}))])),
                respond(json!([text("x")])),
            ],
        )
    };
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([
                agent("a1", "general-purpose", "one", "first"),
                agent("a2", "general-purpose", "two", "second")
            ])),
            respond(json!([text("after the reload")])),
        ],
        vec![slow("s1", "first"), slow("s2", "second")],
    ))
    .with_policy(json!({"permissions": {"allow": ["Bash(sleep *)"]}}));
    let mut conn = Conn::spawn(env);
    conn.initialize_with(json!({"subagents": {}})).await;
    let session = conn.new_session().await;
    conn.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "two"}]}),
    )
    .await;
    let mut running = 0;
    while running < 2 {
        let frame = conn.recv().await;
        let update = &frame["params"]["update"];
        if update["status"] == "in_progress"
            && matches!(update["toolCallId"].as_str(), Some("s1" | "s2"))
        {
            running += 1;
        }
    }
    conn.child().start_kill().unwrap();
    let _ = conn.child().wait().await;
    let env = conn.env;
    let kids = children_of(&env.committed_log(&session));
    assert_eq!(kids.len(), 2);
    // Reloaded by a client that takes subagent sessions: every card of
    // every session it replays is closed.
    let mut again = Conn::spawn(env);
    again.initialize_with(json!({"subagents": {}})).await;
    again.load(&session).await;
    for id in ["a1", "a2"] {
        assert_eq!(again.thread(&session).card(id).status, "failed", "{id}");
    }
    for kid in &kids {
        let thread = again.thread(kid);
        assert!(!thread.cards.is_empty());
        for card in &thread.cards {
            assert!(card.terminal(), "{kid}: {card:?}");
        }
        let log = again.env.log(kid);
        assert_eq!(log.last().unwrap()["type"], "turn/ended", "{kid}");
    }
    let log = again.env.log(&session);
    let ended: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "subagent/ended")
        .collect();
    assert_eq!(ended.len(), 2);
    assert!(ended.iter().all(|e| e["outcome"] == "failed"));
}

#[tokio::test]
async fn subagent_start_and_stop_hooks_run_and_a_definitions_hooks_add_to_the_users() {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent("a1", "hooked", "say hi", "Run echo hi.")])),
            respond(json!([text("ok")])),
        ],
        vec![child(
            "hooked",
            None,
            vec![
                respond(json!([tool("b1", "Bash", json!({"command": "echo hi"}))])),
                respond(json!([text("said it")])),
            ],
        )],
    ))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let seen = env.dir.path().join("events.jsonl");
    let events = fixture("events.py");
    let record = format!("{events} record {}", seen.display());
    user_settings(
        &env,
        json!({"hooks": {
            "SubagentStart": [{"matcher": "hooked", "hooks": [{"type": "command", "command": record}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": record}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": format!("{events} append USER")}]}]
        }}),
    );
    definition(
        &env.dir.path().join(".claude"),
        "hooked",
        &format!(
            "description: Has hooks.\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: {events} append DEF\n"
        ),
        "Run what you are asked.",
    );
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let kid = children_of(&conn.env.log(&session))[0].clone();
    let call = child_call(&conn.env, &kid, "b1");
    assert_eq!(
        call["arguments"]["command"], "echo hi USER DEF",
        "the user's hook first, the definition's after"
    );
    let inputs: Vec<Value> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = inputs
        .iter()
        .map(|i| i["hook_event_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["SubagentStart", "SubagentStop"]);
    for input in &inputs {
        assert_eq!(input["agent_id"], kid.as_str());
        assert_eq!(input["agent_type"], "hooked");
        assert_eq!(input["session_id"], session);
    }
    assert_eq!(inputs[1]["last_assistant_message"], "said it");
    assert!(
        inputs[1]["agent_transcript_path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{kid}.jsonl"))
    );
}

#[tokio::test]
async fn the_audit_shows_each_childs_calls_under_its_parents_call() {
    let mut conn = Conn::in_process(rewritten_child());
    let session = conn.ready().await;
    conn.prompt(&session, "say hi through a subagent").await;
    let text = audit(&conn.env.home, &session, false);
    let at = text.find("Agent a1").expect("the parent's call");
    let under = &text[at..];
    assert!(
        under.contains("subagent general-purpose (say hi, "),
        "{text}"
    );
    assert!(under.contains("answered after 2 model requests"), "{text}");
    assert!(under.contains("│ ") && under.contains("Bash b1"), "{text}");
    assert!(
        under.contains("echo hi WORD") && under.contains("rewritten by"),
        "{text}"
    );
    assert!(under.contains("asked: allowed_once"), "{text}");
    let json: Value = serde_json::from_str(&audit(&conn.env.home, &session, true)).unwrap();
    let call = json
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "call" && e["id"] == "a1")
        .unwrap();
    let inner = call["subagent"]["entries"].as_array().unwrap();
    let child = inner.iter().find(|e| e["kind"] == "call").unwrap();
    assert_eq!(child["arguments"]["command"], "echo hi WORD");
    assert_eq!(child["originalArguments"]["command"], "echo hi");
}

#[tokio::test]
async fn fields_candor_does_not_honour_are_named_in_a_notice_and_by_the_doctor() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("hi")]))]));
    definition(
        &env.dir.path().join(".claude"),
        "painter",
        "description: Paints.\ncolor: purple\npermissionMode: dontAsk\nmcpServers:\n  - name: inline\n    command: srv\n",
        "Paint.",
    );
    let kernel = candor::sandbox::Probe::nothing("not asked in this test");
    let report = candor::doctor::render(&candor::doctor::report(
        &env.config(),
        &env.project,
        &kernel,
    ));
    assert!(report.contains("painter ["), "{report}");
    assert!(report.contains("not honoured: color"), "{report}");
    assert!(
        report.contains("not honoured: permissionMode dontAsk"),
        "{report}"
    );
    assert!(
        report.contains("not honoured: mcpServers defined inline"),
        "{report}"
    );
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hello").await;
    let said = told(&conn).join("\n");
    assert!(
        said.contains("The subagent painter") && said.contains("color (candor does not use it)"),
        "{said}"
    );
}

#[tokio::test]
async fn a_mode_chosen_while_a_child_runs_reaches_it_before_its_next_call() {
    // The user switches the session to plan while the child's first
    // command runs: its next call, a change, is refused by plan mode.
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent("a1", "general-purpose", "work", "Work.")])),
            respond(json!([text("ok")])),
        ],
        vec![child(
            "general-purpose",
            None,
            vec![
                respond(json!([tool("s1", "Bash", json!({"command": "sleep 1"}))])),
                respond(json!([tool(
                    "w1",
                    "Write",
                    json!({"file_path": "f.txt", "content": "x"})
                )])),
                respond(json!([text("done")])),
            ],
        )],
    ))
    .with_policy(json!({"mode": "acceptEdits", "permissions": {"allow": ["Bash(sleep *)"]}}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let prompt = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "work"}]}),
        )
        .await;
    loop {
        conn.recv().await;
        let card = conn
            .thread(&session)
            .cards
            .iter()
            .find(|c| c.id == "a1")
            .map(|c| c.text());
        if card.is_some_and(|t| t.contains("sleep 1` — running")) {
            break;
        }
    }
    let switched = conn
        .request(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "plan"}),
        )
        .await;
    assert!(switched.get("error").is_none(), "{switched}");
    conn.response(&prompt).await;
    assert!(!conn.env.project.join("f.txt").exists());
    let kid = children_of(&conn.env.log(&session))[0].clone();
    let log = conn.env.log(&kid);
    assert!(
        log.iter()
            .any(|r| r["type"] == "config/changed" && r["value"] == "plan"),
        "{:?}",
        types(&log)
    );
    let write = child_call(&conn.env, &kid, "w1");
    assert_eq!(write["decision"]["outcome"], "deny", "{write}");
}

#[tokio::test]
async fn a_child_stops_at_its_max_turns_and_the_model_is_told() {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([agent("a1", "brief", "look", "Look around.")])),
            respond(json!([text("ok")])),
        ],
        vec![child(
            "brief",
            None,
            vec![
                respond(json!([tool("g1", "Glob", json!({"pattern": "*"}))])),
                respond(json!([tool("g2", "Glob", json!({"pattern": "*"}))])),
                respond(json!([text("never")])),
            ],
        )],
    ));
    definition(
        &env.dir.path().join(".claude"),
        "brief",
        "description: Brief.\nmaxTurns: 2\n",
        "Be brief.",
    );
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "look").await;
    let log = conn.env.log(&session);
    let ended = log.iter().find(|r| r["type"] == "subagent/ended").unwrap();
    assert_eq!(ended["outcome"], "max_turns");
    assert_eq!(ended["requests"], 2);
    let result = log
        .iter()
        .find(|r| r["type"] == "tool/result" && r["toolCallId"] == "a1")
        .unwrap();
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("stopped after 2 model requests, its limit (maxTurns)"),
        "{result}"
    );
}

#[tokio::test]
async fn the_live_subagents_of_a_session_are_bounded() {
    let env = TestEnv::scripted(with_children(
        vec![
            respond(json!([
                agent("a1", "general-purpose", "one", "first"),
                agent("a2", "general-purpose", "two", "second")
            ])),
            respond(json!([text("ok")])),
        ],
        vec![
            child(
                "general-purpose",
                Some("first"),
                vec![
                    respond(json!([tool("s1", "Bash", json!({"command": "sleep 0.5"}))])),
                    respond(json!([text("x")])),
                ],
            ),
            child(
                "general-purpose",
                Some("second"),
                vec![respond(json!([text("y")]))],
            ),
        ],
    ))
    .with_policy(json!({"permissions": {"allow": ["Bash(sleep *)"]}}))
    .with_user_config("subagents_live = 1\nsubagents_parallel = 2\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "two").await;
    assert_eq!(conn.thread(&session).card("a1").status, "completed");
    let refused = conn.thread(&session).card("a2").clone();
    assert_eq!(refused.status, "failed");
    assert!(
        refused
            .text()
            .contains("This session already has 1 subagent(s) running"),
        "{}",
        refused.text()
    );
}
