//! Prompt turns with the scripted model: what the user sees, what the log
//! holds, and that the first is a projection of the second.

use std::path::Path;
use std::time::Duration;

use candor::conversation::{AssistantBlock, Message};
use candor::presentation::{Mode, Presenter};
use serde_json::{Value, json};

use crate::support::*;

/// The `session/update` payloads candor sent for `session`, in order.
fn sent_updates(conn: &Conn, session: &str) -> Vec<Value> {
    conn.frames
        .iter()
        .filter(|f| f["method"] == "session/update" && f["params"]["sessionId"] == session)
        .map(|f| f["params"]["update"].clone())
        .collect()
}

/// What the presenter derives from the session's log file.
fn projected_updates(conn: &Conn, session: &str) -> Vec<Value> {
    let path = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let records = candor::event_log::read(&path).unwrap();
    let mut presenter = Presenter::new(conn.env.project.clone(), Mode::Live);
    records
        .iter()
        .flat_map(|r| presenter.apply(r))
        .map(|u| serde_json::to_value(u).unwrap())
        .collect()
}

#[tokio::test]
async fn a_turn_with_tools_shows_cards_derived_from_the_log() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            text("Looking around."),
            tool(
                "t1",
                "Bash",
                json!({"command": "echo hello; echo oops >&2; printf 'x'", "description": "Say hello"})
            )
        ])),
        respond(json!([tool(
            "t2",
            "Read",
            json!({"file_path": "notes.txt", "offset": 2, "limit": 1})
        )])),
        respond(json!([text("All done.")])),
    ]));
    env.file("notes.txt", "first\nsecond\nthird\n");
    let notes = env.project.join("notes.txt");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "look around").await;
    assert_eq!(response["result"], json!({"stopReason": "end_turn"}));
    // The response is the last frame: every update came before it.
    assert_eq!(conn.frames.last(), Some(&response));
    // The title is made after the turn, and shown when it is.
    while !conn
        .frames
        .iter()
        .any(|f| f["params"]["update"]["sessionUpdate"] == "session_info_update")
    {
        conn.recv().await;
    }

    let thread = conn.thread(&session);
    assert_eq!(thread.agent_text, "Looking around.All done.");
    let bash = thread.card("t1");
    assert_eq!(bash.title, "`echo hello; echo oops >&2; printf 'x'`");
    assert_eq!(bash.kind, "execute");
    assert_eq!(
        bash.raw_input,
        json!({"command": "echo hello; echo oops >&2; printf 'x'", "description": "Say hello"})
    );
    assert_eq!(bash.statuses.first().map(String::as_str), Some("pending"));
    assert_eq!(bash.statuses[1], "in_progress");
    assert_eq!(bash.status, "completed");
    let shown = bash.text();
    assert!(
        shown.contains("hello") && shown.contains("oops") && shown.contains('x'),
        "{shown}"
    );
    assert_eq!(bash.raw_output, json!({"exitCode": 0}));
    let read = thread.card("t2");
    assert_eq!(read.title, format!("Read {} (lines 2–2)", notes.display()));
    assert_eq!(read.kind, "read");
    assert_eq!(read.locations, vec![json!({"path": notes, "line": 2})]);
    assert_eq!(read.status, "completed");
    assert!(read.text().contains("     2\tsecond"), "{}", read.text());
    assert!(!read.text().contains("first"));

    // Every update the client got is the presenter's projection of the log.
    assert_eq!(
        sent_updates(&conn, &session),
        projected_updates(&conn, &session)
    );

    let log = conn.env.log(&session);
    let kinds = types(&log);
    let call = kinds.iter().position(|k| k == "tool/call").unwrap();
    // A command asks by default: the answer is recorded (bound to the
    // arguments' digest) before the command starts.
    assert_eq!(
        kinds[call + 1..call + 4],
        [
            "permission/requested",
            "permission/resolved",
            "tool/started"
        ],
        "{kinds:?}"
    );
    // The turn ended, then its title was made.
    assert_eq!(kinds[kinds.len() - 2..], ["turn/ended", "session/titled"]);
    assert_eq!(log[log.len() - 2]["stopReason"], "end_turn");
    assert_eq!(log[call]["arguments"], bash.raw_input);
    assert_eq!(
        log[call]["decision"],
        json!({"outcome": "ask", "by": "default",
               "reason": "commands ask before they run (an allow rule, or a session grant from \"Always allow\", lets them run)"})
    );
    assert_eq!(log[call + 2]["outcome"], "allowed_once");
    assert_eq!(log[call + 2]["digest"], log[call]["digest"]);
    let asked = &conn.permission_requests[0];
    assert_eq!(asked["toolCall"]["rawInput"], bash.raw_input);
    assert_eq!(asked["toolCall"]["title"], bash.title);
    // A read inside the project runs without asking.
    let read_call = log
        .iter()
        .find(|r| r["type"] == "tool/call" && r["toolCallId"] == "t2")
        .unwrap();
    assert_eq!(
        read_call["decision"],
        json!({"outcome": "allow", "by": "default"})
    );
    assert_eq!(conn.permission_requests.len(), 1);
    for (i, record) in log.iter().enumerate() {
        assert_eq!(record["seq"], i, "{record}");
    }
}

#[tokio::test]
async fn the_model_history_is_derived_from_the_log() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            text("Checking."),
            tool("a", "Bash", json!({"command": "echo one"})),
            tool("b", "Bash", json!({"command": "echo two"}))
        ])),
        respond(json!([text("Both ran.")])),
        respond(json!([text("Second answer.")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "first").await;
    conn.prompt(&session, "second").await;
    let path = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let messages = candor::history::derive_messages(
        &candor::event_log::read(&path).unwrap(),
        candor::conversation::RewriteStrategy::Note,
        &Default::default(),
    );
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| match m {
            Message::User { .. } => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResults { .. } => "tool_results",
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool_results",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let Message::Assistant(turn) = &messages[1] else {
        unreachable!()
    };
    assert_eq!(
        turn.content,
        vec![
            AssistantBlock::Text {
                text: "Checking.".into()
            },
            AssistantBlock::ToolUse {
                id: "a".into(),
                name: "Bash".into(),
                input: json!({"command": "echo one"})
            },
            AssistantBlock::ToolUse {
                id: "b".into(),
                name: "Bash".into(),
                input: json!({"command": "echo two"})
            },
        ]
    );
    let Message::ToolResults { results } = &messages[2] else {
        unreachable!()
    };
    assert_eq!(results.len(), 2);
    assert_eq!(
        (results[0].tool_use_id.as_str(), results[0].content.as_str()),
        ("a", "one\n")
    );
    assert_eq!(
        (results[1].tool_use_id.as_str(), results[1].content.as_str()),
        ("b", "two\n")
    );
    assert_eq!(messages[4], Message::user("second"));
}

#[tokio::test]
async fn failures_and_refusals_are_failed_cards_the_model_hears_about() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool(
                "fails",
                "Bash",
                json!({"command": "echo broken >&2; exit 3"})
            ),
            tool("unknown", "Teleport", json!({"to": "mars"})),
            tool("bad", "Bash", json!({"cmd": "ls"})),
            tool("missing", "Read", json!({"file_path": "nope.txt"}))
        ])),
        respond(json!([text("Noted.")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "go").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let thread = conn.thread(&session);

    let fails = thread.card("fails");
    assert_eq!(fails.status, "failed");
    assert!(
        fails.text().contains("broken") && fails.text().contains("Exited with code 3."),
        "{}",
        fails.text()
    );
    assert_eq!(fails.raw_output, json!({"exitCode": 3}));

    let unknown = thread.card("unknown");
    assert_eq!(unknown.statuses, ["failed"]);
    assert_eq!(unknown.title, "Unknown tool Teleport");
    assert_eq!(unknown.raw_input, json!({"to": "mars"}));
    assert!(
        unknown
            .text()
            .starts_with("Refused by candor: candor has no tool named \"Teleport\""),
        "{}",
        unknown.text()
    );

    let bad = thread.card("bad");
    assert_eq!(bad.statuses, ["failed"]);
    assert!(bad.text().contains("unknown field `cmd`"), "{}", bad.text());

    let missing = thread.card("missing");
    assert_eq!(missing.status, "failed");
    assert!(
        missing.text().contains("nope.txt does not exist"),
        "{}",
        missing.text()
    );

    // The model is told each outcome.
    let log = conn.env.log(&session);
    let result = |id: &str| {
        log.iter()
            .find(|r| r["type"] == "tool/result" && r["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no result for {id}"))
            .clone()
    };
    assert_eq!(result("fails")["output"], "broken\n[exit code: 3]");
    assert_eq!(result("fails")["exitCode"], 3);
    assert!(result("unknown")["output"].as_str().unwrap().contains(
        "the tools are Bash, BashOutput, KillShell, Read, Write, Edit, Glob, Grep, TodoWrite, AskUserQuestion"
    ));
    assert_eq!(result("bad")["status"], "failed");
    assert_eq!(result("missing")["status"], "failed");
    // Refused calls are never started.
    assert!(!log.iter().any(|r| r["type"] == "tool/started"
        && (r["toolCallId"] == "unknown" || r["toolCallId"] == "bad")));
}

#[tokio::test]
async fn without_a_model_the_prompt_is_answered_with_guidance() {
    let mut conn = Conn::in_process(TestEnv::new());
    let session = conn.ready().await;
    let response = conn.prompt(&session, "write me a web server").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let text = &conn.thread(&session).agent_text;
    assert!(
        text.contains("candor has no model to answer with"),
        "{text}"
    );
    assert!(text.contains("CANDOR_PROVIDER=scripted"), "{text}");
    assert!(conn.thread(&session).cards.is_empty());
}

#[tokio::test]
async fn a_broken_script_is_explained_not_crashed_on() {
    let mut env = TestEnv::new();
    let path = env.dir.path().join("broken.json");
    std::fs::write(&path, "{\"responses\": [").unwrap();
    env.script = Some(path);
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let text = &conn.thread(&session).agent_text;
    assert!(text.contains("broken.json is not valid"), "{text}");
}

#[tokio::test]
async fn command_output_streams_into_the_card() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "s",
            "Bash",
            json!({"command": "for i in 1 2 3; do echo line$i; sleep 0.3; done"})
        )])),
        respond(json!([text("ok")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let thread = conn.thread(&session);
    let running_outputs: Vec<String> = thread
        .updates
        .iter()
        .filter(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == "s"
                && u.get("status").is_none()
                && u.get("content").is_some()
        })
        .map(|u| {
            u["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| c["content"]["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert!(
        thread.card("s").text().starts_with("sandbox: writes to "),
        "{}",
        thread.card("s").text()
    );
    assert!(
        running_outputs.len() >= 2,
        "output did not stream: {running_outputs:?}"
    );
    // Each update carries everything so far (clients replace the content).
    assert!(running_outputs[0].contains("line1"), "{running_outputs:?}");
    assert!(
        running_outputs.last().unwrap().contains("line1\nline2"),
        "{running_outputs:?}"
    );
    assert!(thread.card("s").text().contains("line1\nline2\nline3"));
}

#[tokio::test]
async fn a_command_past_its_timeout_is_ended_and_the_model_told() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "slow",
            "Bash",
            json!({"command": "echo started; sleep 5", "timeout": 300})
        )])),
        respond(json!([text("ok")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let started = std::time::Instant::now();
    conn.prompt(&session, "go").await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the timeout did not end the command"
    );
    let card = conn.thread(&session).card("slow");
    assert_eq!(card.status, "failed");
    let log = conn.env.log(&session);
    let result = log.iter().find(|r| r["type"] == "tool/result").unwrap();
    assert_eq!(
        result["output"],
        "started\n[timed out after 300 ms; candor ended the command]"
    );
}

#[tokio::test]
async fn stop_reasons_come_from_the_model() {
    let env = TestEnv::scripted(script(vec![
        json!({"content": [text("cut off")], "stop": "max_tokens"}),
        json!({"content": [text("no")], "stop": "refusal"}),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    assert_eq!(
        conn.prompt(&session, "a").await["result"]["stopReason"],
        "max_tokens"
    );
    assert_eq!(
        conn.prompt(&session, "b").await["result"]["stopReason"],
        "refusal"
    );
}

#[tokio::test]
async fn resource_links_and_text_resources_reach_the_model() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("seen")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let frame = conn
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "look at"},
                {"type": "resource_link", "uri": "file:///p/a.rs", "name": "a.rs"},
                {"type": "resource", "resource": {"uri": "file:///p/b.rs", "text": "fn b() {}"}}
            ]}),
        )
        .await;
    assert_eq!(frame["result"]["stopReason"], "end_turn");
    let path = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let messages = candor::history::derive_messages(
        &candor::event_log::read(&path).unwrap(),
        candor::conversation::RewriteStrategy::Note,
        &Default::default(),
    );
    let Message::User { text, .. } = &messages[0] else {
        unreachable!()
    };
    assert_eq!(
        text,
        "look at\n[a.rs](file:///p/a.rs)\n<resource uri=\"file:///p/b.rs\">\nfn b() {}\n</resource>"
    );
    // The log keeps the blocks as the client sent them.
    let log = conn.env.log(&session);
    let prompt = log.iter().find(|r| r["type"] == "user/message").unwrap();
    assert_eq!(prompt["content"][1]["type"], "resource_link");
}

#[tokio::test]
async fn output_for_the_model_is_capped_but_the_card_keeps_more() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "big",
            "Bash",
            json!({"command": "head -c 40000 /dev/zero | tr '\\0' 'a'; echo; echo END"})
        )])),
        respond(json!([text("ok")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let log = conn.env.log(&session);
    let output = log.iter().find(|r| r["type"] == "tool/result").unwrap()["output"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(output.chars().count() < 30_400, "{}", output.len());
    assert!(output.contains("elided by candor"), "{output}");
    assert!(output.contains("END\n[the output was 40005 bytes; all of it is in "));
    // The whole output is in the file the record names, beside the log.
    let result = log.iter().find(|r| r["type"] == "tool/result").unwrap();
    assert_eq!(result["outputFile"]["bytes"], 40005);
    let file = result["outputFile"]["path"].as_str().unwrap();
    assert!(output.trim_end().ends_with(&format!("{file}]")));
    let whole = std::fs::read_to_string(file).unwrap();
    assert_eq!(whole, format!("{}\nEND\n", "a".repeat(40_000)));
    assert!(
        Path::new(file).starts_with(conn.env.home.join(format!("sessions/{session}.outputs"))),
        "{file}"
    );
    let card = conn.thread(&session).card("big").text();
    assert!(card.matches('a').count() >= 40_000);
}

/// A model that reuses a call id (or a server that sends none, where
/// every response's first call is `call_candor_0`): every call still gets
/// its own card and runs once, and the model is answered under its own id.
#[tokio::test]
async fn a_reused_call_id_gets_its_own_card() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "call_candor_0",
            "Bash",
            json!({"command": "echo first >> ran.txt"})
        )])),
        respond(json!([
            tool(
                "call_candor_0",
                "Bash",
                json!({"command": "echo second >> ran.txt"})
            ),
            tool(
                "call_candor_0",
                "Bash",
                json!({"command": "echo third >> ran.txt"})
            ),
        ])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    assert_eq!(
        conn.prompt(&session, "go").await["result"]["stopReason"],
        "end_turn"
    );
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("ran.txt")).unwrap(),
        "first\nsecond\nthird\n"
    );
    // Three calls, three cards, each announced before it ran.
    let log = conn.env.log(&session);
    let ids: Vec<String> = log
        .iter()
        .filter(|r| r["type"] == "tool/call")
        .map(|r| r["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[0], "call_candor_0");
    assert!(
        ids[1] != ids[0] && ids[2] != ids[1] && ids[2] != ids[0],
        "{ids:?}"
    );
    let thread = conn.thread(&session);
    for id in &ids {
        assert_eq!(thread.card(id).status, "completed", "{id}");
    }
    let third = log
        .iter()
        .find(|r| r["type"] == "tool/call" && r["toolCallId"] == ids[2].as_str())
        .unwrap();
    assert_eq!(third["arguments"]["command"], "echo third >> ran.txt");
    // The model hears back under the ids it used, in its own turns.
    assert_eq!(
        result_in_request(&conn, 1, "call_candor_0")["isError"],
        false
    );
    let requests = conn.env.model_requests();
    let last = requests[2]["messages"].as_array().unwrap();
    let results: Vec<&Value> = last
        .iter()
        .filter(|m| m["role"] == "tool_results")
        .flat_map(|m| m["results"].as_array().unwrap())
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results.iter().all(|r| r["toolUseId"] == "call_candor_0"),
        "{results:?}"
    );
    // Replayed from the log, every call that started was announced first.
    let mut announced = std::collections::HashSet::new();
    let path = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let mut presenter = Presenter::new(conn.env.project.clone(), Mode::Replay);
    for record in candor::event_log::read(&path).unwrap() {
        for update in presenter.apply(&record) {
            let update = serde_json::to_value(update).unwrap();
            if update["sessionUpdate"] == "tool_call" {
                announced.insert(update["toolCallId"].as_str().unwrap().to_owned());
            }
        }
        if let candor::event_log::Event::ToolStarted { tool_call_id } = &record.event {
            assert!(
                announced.contains(tool_call_id),
                "{tool_call_id} started without a card"
            );
        }
    }
    assert_eq!(announced.len(), 3);
}

/// A model that spells its ids like the ones candor makes (`t~2`), or sends
/// empty ones, still gets one card per call, each under a distinct id.
#[tokio::test]
async fn ids_spelled_like_candors_or_empty_stay_distinct() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "t",
            "Bash",
            json!({"command": "echo 1 >> ran.txt"})
        )])),
        respond(json!([
            tool("t", "Bash", json!({"command": "echo 2 >> ran.txt"})),
            tool("t~2", "Bash", json!({"command": "echo 3 >> ran.txt"})),
            tool("", "Bash", json!({"command": "echo 4 >> ran.txt"})),
            tool("", "Bash", json!({"command": "echo 5 >> ran.txt"})),
        ])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("ran.txt")).unwrap(),
        "1\n2\n3\n4\n5\n"
    );
    let ids: Vec<String> = conn
        .env
        .log(&session)
        .iter()
        .filter(|r| r["type"] == "tool/call")
        .map(|r| r["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 5, "{ids:?}");
    let thread = conn.thread(&session);
    for id in &ids {
        assert_eq!(thread.card(id).status, "completed", "{id}");
    }
}

#[tokio::test]
async fn a_long_task_of_300_calls_in_one_prompt_is_not_cut_off() {
    // No `max_turn_requests` by default, as with Claude Code and Codex.
    let mut responses: Vec<Value> = (0..300)
        .map(|i| {
            respond(json!([tool(
                &format!("r{i}"),
                "Read",
                json!({"file_path": "notes.txt"})
            )]))
        })
        .collect();
    responses.push(respond(json!([text("all 300 read")])));
    let env = TestEnv::scripted(script(responses));
    env.file("notes.txt", "a note\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "read it 300 times").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let results = conn
        .env
        .log(&session)
        .into_iter()
        .filter(|r| r["type"] == "tool/result" && r["status"] == "completed")
        .count();
    assert_eq!(results, 300);
    assert_eq!(conn.env.model_requests().len(), 301);
}

/// A command's card title is the command in backticks (so a client that
/// cuts a title at its first colon keeps it whole, as it does for
/// claude-agent-acp's); a multi-line command's title is its first line and
/// how many more it has, and the card, the permission prompt included,
/// shows the whole command throughout; `rawInput` is the arguments as
/// they run.
#[tokio::test]
async fn command_titles_show_whole_and_a_long_command_is_on_the_card() {
    let multi = "printf one\nprintf ' `two`'\nprintf three";
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool(
                "colon",
                "Bash",
                json!({"command": "echo HEAD:refs/heads/main"})
            ),
            tool("multi", "Bash", json!({"command": multi})),
        ])),
        respond(json!([text("done")])),
    ]));
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["allow_once", "allow_once"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let thread = conn.thread(&session);
    assert_eq!(thread.card("colon").title, "`echo HEAD:refs/heads/main`");
    let card = thread.card("multi");
    assert_eq!(card.title, "`printf one` (+2 more lines)");
    assert_eq!(card.raw_input, json!({"command": multi}));
    let whole = format!("```sh\n{multi}\n```");
    assert_eq!(
        card.content[0]["content"]["text"], whole,
        "{:?}",
        card.content
    );
    assert!(card.text().contains("one `two`three"), "{}", card.text());
    let asked = &conn.permission_requests[1]["toolCall"];
    assert_eq!(asked["title"], "`printf one` (+2 more lines)");
    assert_eq!(asked["content"][0]["content"]["text"], whole);
}
