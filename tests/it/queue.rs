//! Talking to candor while it works: prompts sent while a turn runs wait in
//! the session's queue and run in the order received, each answered when
//! its own turn ends; `_session/steering` reaches the model before its next
//! request; both are recorded, audited and replayed where they happened.

use serde_json::{Value, json};

use crate::support::*;

/// Reads frames until one satisfies `until`, and returns it; the
/// responses read meanwhile are kept in `answers`, in arrival order.
async fn read_until(conn: &mut Conn, answers: &mut Vec<Value>, until: impl Fn(&Value) -> bool) {
    loop {
        let frame = conn.recv().await;
        if frame.get("method").is_none() && frame.get("id").is_some() {
            answers.push(frame.clone());
        }
        if until(&frame) {
            return;
        }
    }
}

/// Reads until every one of `ids` is answered; the answers, in the order
/// they came (those already in `answers` too).
async fn answers_to(conn: &mut Conn, answers: &mut Vec<Value>, ids: &[&Value]) -> Vec<Value> {
    let all = |answers: &Vec<Value>| ids.iter().all(|id| answers.iter().any(|a| a["id"] == **id));
    while !all(answers) {
        let frame = conn.recv().await;
        if frame.get("method").is_none() && frame.get("id").is_some() {
            answers.push(frame);
        }
    }
    answers
        .iter()
        .filter(|a| ids.iter().any(|id| a["id"] == **id))
        .cloned()
        .collect()
}

/// A tool card went `in_progress`: the tool runs.
fn tool_running(frame: &Value) -> bool {
    frame["method"] == "session/update"
        && frame["params"]["update"]["sessionUpdate"] == "tool_call_update"
        && frame["params"]["update"]["status"] == "in_progress"
}

async fn send_prompt(conn: &mut Conn, session: &str, text: &str) -> Value {
    conn.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
    )
    .await
}

async fn send_steering(conn: &mut Conn, session: &str, text: &str) -> Value {
    conn.send_request(
        "_session/steering",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
    )
    .await
}

/// The position of the first record of `kind` whose fields match `with`.
fn at(log: &[Value], kind: &str, with: impl Fn(&Value) -> bool) -> usize {
    log.iter()
        .position(|r| r["type"] == kind && with(r))
        .unwrap_or_else(|| panic!("no {kind} record: {:#?}", types(log)))
}

fn prompt_text(r: &Value) -> String {
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The text of each user message of model request `n`.
fn user_messages(conn: &Conn, n: usize) -> Vec<String> {
    conn.env.model_requests()[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn long_bash() -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!([tool(
            "sleepy",
            "Bash",
            json!({"command": "sleep 1; echo slept"})
        )])),
        respond(json!([text("first is done")])),
        respond(json!([text("second is done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}))
}

#[tokio::test]
async fn a_prompt_sent_during_a_long_bash_call_runs_after_it_with_its_own_response() {
    let mut conn = Conn::in_process(long_bash());
    let session = conn.ready().await;
    let first = send_prompt(&mut conn, &session, "one").await;
    let mut answers = Vec::new();
    read_until(&mut conn, &mut answers, tool_running).await;
    let second = send_prompt(&mut conn, &session, "two").await;
    let got = answers_to(&mut conn, &mut answers, &[&first, &second]).await;
    assert_eq!(
        got[0]["id"], first,
        "the running turn answers first: {got:?}"
    );
    assert_eq!(got[0]["result"]["stopReason"], "end_turn", "{got:?}");
    assert_eq!(got[1]["id"], second);
    assert_eq!(got[1]["result"]["stopReason"], "end_turn", "{got:?}");
    assert_eq!(
        conn.thread(&session).agent_text,
        "first is donesecond is done"
    );

    let log = conn.env.log(&session);
    let queued = at(&log, "prompt/queued", |r| r["requestId"] == second);
    assert_eq!(log[queued]["text"], "two");
    // Recorded when it arrived: while the command still ran.
    let result = at(&log, "tool/result", |r| r["toolCallId"] == "sleepy");
    assert!(queued < result, "{:#?}", types(&log));
    let first_end = at(&log, "turn/ended", |_| true);
    let second_turn = at(&log, "user/message", |r| prompt_text(r) == "two");
    assert!(first_end < second_turn, "{:#?}", types(&log));
    assert_eq!(
        log[second_turn]["via"],
        json!({"kind": "queue", "requestId": second})
    );
    // The model saw the second prompt in a request of its own, after the
    // first turn's answer.
    let requests = conn.env.model_requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(user_messages(&conn, 1), ["one"]);
    assert_eq!(user_messages(&conn, 2), ["one", "two"]);
}

#[tokio::test]
async fn two_queued_prompts_keep_their_order_on_the_wire_in_the_log_and_to_the_model() {
    let env = TestEnv::scripted(script(vec![
        json!({"delayMs": 600, "content": [text("A")]}),
        respond(json!([text("B")])),
        respond(json!([text("C")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let one = send_prompt(&mut conn, &session, "one").await;
    let two = send_prompt(&mut conn, &session, "two").await;
    let three = send_prompt(&mut conn, &session, "three").await;
    let mut answers = Vec::new();
    let got = answers_to(&mut conn, &mut answers, &[&one, &two, &three]).await;
    let order: Vec<&Value> = got.iter().map(|a| &a["id"]).collect();
    assert_eq!(order, [&one, &two, &three]);
    assert!(got.iter().all(|a| a["result"]["stopReason"] == "end_turn"));
    assert_eq!(conn.thread(&session).agent_text, "ABC");
    let log = conn.env.log(&session);
    let queued: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "prompt/queued")
        .map(|r| &r["requestId"])
        .collect();
    assert_eq!(queued, [&two, &three]);
    let prompts: Vec<String> = log
        .iter()
        .filter(|r| r["type"] == "user/message")
        .map(prompt_text)
        .collect();
    assert_eq!(prompts, ["one", "two", "three"]);
    assert_eq!(user_messages(&conn, 2), ["one", "two", "three"]);
}

#[tokio::test]
async fn cancel_ends_the_running_turn_only_and_the_queued_prompt_then_runs() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "long",
            "Bash",
            json!({"command": "sleep 30"})
        )])),
        respond(json!([text("the queued one ran")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let first = send_prompt(&mut conn, &session, "one").await;
    let mut answers = Vec::new();
    read_until(&mut conn, &mut answers, tool_running).await;
    let second = send_prompt(&mut conn, &session, "two").await;
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let got = answers_to(&mut conn, &mut answers, &[&first, &second]).await;
    assert_eq!(got[0]["id"], first);
    assert_eq!(got[0]["result"]["stopReason"], "cancelled", "{got:?}");
    assert_eq!(got[1]["id"], second);
    assert_eq!(got[1]["result"]["stopReason"], "end_turn", "{got:?}");
    assert_eq!(conn.thread(&session).card("long").status, "failed");
    assert_eq!(conn.thread(&session).agent_text, "the queued one ran");
}

#[tokio::test]
async fn the_ninth_queued_prompt_is_refused_at_once_and_the_others_run() {
    let mut responses = vec![json!({"delayMs": 800, "content": [text("0")]})];
    responses.extend((1..=8).map(|n| respond(json!([text(&n.to_string())]))));
    let mut conn = Conn::in_process(TestEnv::scripted(script(responses)));
    let session = conn.ready().await;
    let mut ids = Vec::new();
    for n in 0..=8 {
        ids.push(send_prompt(&mut conn, &session, &format!("p{n}")).await);
    }
    let ninth = send_prompt(&mut conn, &session, "p9").await;
    let refused = conn.response(&ninth).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["data"]
            .as_str()
            .unwrap()
            .contains("8 prompts already wait behind the running turn"),
        "{refused}"
    );
    let mut answers = Vec::new();
    let refs: Vec<&Value> = ids.iter().collect();
    let got = answers_to(&mut conn, &mut answers, &refs).await;
    assert!(
        got.iter().all(|a| a["result"]["stopReason"] == "end_turn"),
        "{got:?}"
    );
    assert_eq!(conn.thread(&session).agent_text, "012345678");
    let log = conn.env.log(&session);
    assert_eq!(
        log.iter().filter(|r| r["type"] == "prompt/queued").count(),
        8
    );
    assert!(!log.iter().any(|r| prompt_text(r) == "p9"));
}

#[tokio::test]
async fn cancel_request_takes_a_queued_prompt_out_and_answers_it_cancelled() {
    let env = TestEnv::scripted(script(vec![
        json!({"delayMs": 800, "content": [text("one ran")]}),
        respond(json!([text(" three ran")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let one = send_prompt(&mut conn, &session, "one").await;
    let two = send_prompt(&mut conn, &session, "two").await;
    let three = send_prompt(&mut conn, &session, "three").await;
    conn.notify("$/cancel_request", json!({"requestId": two}))
        .await;
    let mut answers = Vec::new();
    let got = answers_to(&mut conn, &mut answers, &[&one, &two, &three]).await;
    // Answered at once, while the first turn still ran.
    assert_eq!(got[0]["id"], two, "{got:?}");
    assert_eq!(got[0]["result"]["stopReason"], "cancelled");
    assert_eq!(got[1]["id"], one);
    assert_eq!(
        got[1]["result"]["stopReason"], "end_turn",
        "the running turn went on"
    );
    assert_eq!(got[2]["id"], three);
    assert_eq!(got[2]["result"]["stopReason"], "end_turn");
    assert_eq!(conn.thread(&session).agent_text, "one ran three ran");
    let log = conn.env.log(&session);
    let out = at(&log, "prompt/unqueued", |r| r["requestId"] == two);
    assert_eq!(log[out]["reason"], "cancelled");
    assert!(at(&log, "prompt/queued", |r| r["requestId"] == two) < out);
    assert!(
        !log.iter()
            .any(|r| r["type"] == "user/message" && prompt_text(r) == "two"),
        "the withdrawn prompt ran"
    );
    let audit = audit(&conn.env.home, &session, false);
    assert!(
        audit.contains(&format!("prompt queued (request {two}): two"))
            && audit.contains(&format!(
                "queued prompt (request {two}) taken out: the client withdrew it"
            )),
        "{audit}"
    );
}

fn steered() -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!([tool(
            "look",
            "Bash",
            json!({"command": "sleep 1; echo looked"})
        )])),
        respond(json!([text("switching to python")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}))
}

#[tokio::test]
async fn steering_reaches_the_model_after_the_tool_result_before_its_next_request() {
    let mut conn = Conn::in_process(steered());
    let init = conn.initialize().await;
    assert_eq!(init["_meta"]["steering"]["supported"], true, "{init}");
    let session = conn.new_session().await;
    let prompt = send_prompt(&mut conn, &session, "write the script").await;
    let mut answers = Vec::new();
    read_until(&mut conn, &mut answers, tool_running).await;
    let steer = send_steering(&mut conn, &session, "use python instead").await;
    let got = answers_to(&mut conn, &mut answers, &[&steer, &prompt]).await;
    assert_eq!(
        got[0]["id"], steer,
        "answered before the turn ended: {got:?}"
    );
    assert_eq!(got[0]["result"], json!({"outcome": "injected"}));
    assert_eq!(got[1]["result"]["stopReason"], "end_turn");

    // The model got it after the call's result, not inside the pair.
    let requests = conn.env.model_requests();
    assert_eq!(requests.len(), 2, "no extra model request");
    let messages = requests[1]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool_results", "user"],
        "{messages:?}"
    );
    assert_eq!(
        messages[3]["text"],
        "[candor] The user sent this while you were working:\n\nuse python instead"
    );
    assert!(!requests[0]["messages"].to_string().contains("python"));

    // The client saw it as the user's, where the model got it: after the
    // card ended, before the model's answer.
    let thread = conn.thread(&session);
    assert_eq!(thread.user_text, "use python instead");
    let updates = &thread.updates;
    let shown = updates
        .iter()
        .position(|u| u["sessionUpdate"] == "user_message_chunk")
        .unwrap();
    let done = updates
        .iter()
        .position(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap();
    let answer = updates
        .iter()
        .position(|u| u["sessionUpdate"] == "agent_message_chunk")
        .unwrap();
    assert!(done < shown && shown < answer, "{updates:#?}");

    let log = conn.env.log(&session);
    let received = at(&log, "steering/received", |_| true);
    let result = at(&log, "tool/result", |r| r["toolCallId"] == "look");
    let delivered = at(&log, "steering/delivered", |_| true);
    let reply = log
        .iter()
        .rposition(|r| r["type"] == "assistant/message")
        .unwrap();
    assert!(
        received < result,
        "recorded when it arrived: {:#?}",
        types(&log)
    );
    assert!(
        result < delivered && delivered < reply,
        "{:#?}",
        types(&log)
    );
    assert_eq!(log[received]["steeringId"], log[delivered]["steeringId"]);
    let audit = audit(&conn.env.home, &session, false);
    assert!(
        audit.contains("received: use python instead") && audit.contains("given to the model"),
        "{audit}"
    );
}

#[tokio::test]
async fn steering_sent_while_nothing_runs_starts_a_turn_answered_when_it_ends() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("on it")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let steer = send_steering(&mut conn, &session, "also update the docs").await;
    let answer = conn.response(&steer).await;
    assert_eq!(answer["result"], json!({"outcome": "startedNewTurn"}));
    // Its turn's updates all came before the answer.
    let thread = conn.thread(&session);
    assert_eq!(thread.agent_text, "on it");
    assert_eq!(thread.user_text, "also update the docs");
    let log = conn.env.log(&session);
    let received = at(&log, "steering/received", |_| true);
    let opened = at(&log, "user/message", |_| true);
    assert!(received < opened);
    assert_eq!(
        log[opened]["via"],
        json!({"kind": "steering", "steeringId": log[received]["steeringId"]})
    );
    assert_eq!(user_messages(&conn, 0), ["also update the docs"]);
}

#[tokio::test]
async fn steering_for_a_cancelled_turn_is_dropped_and_the_user_told() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "long",
            "Bash",
            json!({"command": "sleep 30"})
        )])),
        respond(json!([text("never")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let prompt = send_prompt(&mut conn, &session, "go").await;
    let mut answers = Vec::new();
    read_until(&mut conn, &mut answers, tool_running).await;
    let steer = send_steering(&mut conn, &session, "stop that").await;
    let got = answers_to(&mut conn, &mut answers, &[&steer]).await;
    assert_eq!(got[0]["result"]["outcome"], "injected");
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let got = answers_to(&mut conn, &mut answers, &[&prompt]).await;
    assert_eq!(got[0]["result"]["stopReason"], "cancelled");
    assert!(
        told(&conn)
            .iter()
            .any(|n| n.contains("A steering message did not reach the model")),
        "{:?}",
        told(&conn)
    );
    let log = conn.env.log(&session);
    let dropped = at(&log, "steering/dropped", |_| true);
    assert_eq!(log[dropped]["reason"], "cancelled");
    assert!(dropped < at(&log, "turn/ended", |_| true));
    assert_eq!(
        conn.env.model_requests().len(),
        1,
        "the model was not asked again"
    );
}

/// The attack: a UserPromptSubmit hook that keeps secrets from the model is
/// not bypassed by sending the secret as a steering message.
#[tokio::test]
async fn a_prompt_hook_that_blocks_a_prompt_blocks_the_same_words_sent_as_steering() {
    let env = steered();
    let settings = json!({"hooks": {"UserPromptSubmit": [{"hooks": [{
        "type": "command",
        "command": format!("{}/tests/fixtures/claude/events.py block-secrets", env!("CARGO_MANIFEST_DIR")),
    }]}]}});
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::fs::write(
        env.project.join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    env.trust_project();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let prompt = send_prompt(&mut conn, &session, "write the script").await;
    let mut answers = Vec::new();
    read_until(&mut conn, &mut answers, tool_running).await;
    let steer = send_steering(&mut conn, &session, "my password is hunter2").await;
    let got = answers_to(&mut conn, &mut answers, &[&steer, &prompt]).await;
    assert_eq!(
        got[1]["result"]["stopReason"], "end_turn",
        "the turn went on"
    );
    let requests = conn.env.model_requests();
    assert_eq!(requests.len(), 2);
    assert!(
        !requests[1]["messages"].to_string().contains("hunter2"),
        "the blocked steering message reached the model: {}",
        requests[1]["messages"]
    );
    assert!(
        told(&conn)
            .iter()
            .any(|n| n.contains("blocked this prompt: prompts must not contain passwords")),
        "{:?}",
        told(&conn)
    );
}

#[tokio::test]
async fn steering_takes_text_and_links_only_and_an_unknown_session_is_not_found() {
    let mut conn = Conn::in_process(steered());
    let session = conn.ready().await;
    let image = conn
        .request(
            "_session/steering",
            json!({"sessionId": session, "prompt": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]}),
        )
        .await;
    assert_eq!(image["error"]["code"], -32602, "{image}");
    let empty = conn
        .request(
            "_session/steering",
            json!({"sessionId": session, "prompt": []}),
        )
        .await;
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    let unknown = conn
        .request(
            "_session/steering",
            json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    assert!(
        !conn
            .env
            .log(&session)
            .iter()
            .any(|r| r["type"] == "steering/received")
    );
}

#[tokio::test]
async fn a_replay_shows_queued_prompts_and_steering_where_they_happened() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "look",
            "Bash",
            json!({"command": "sleep 1; echo looked"})
        )])),
        respond(json!([text("steered")])),
        respond(json!([text("queued ran")])),
        respond(json!([text("idle steering ran")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut live = Conn::spawn(env);
    let session = live.ready().await;
    let first = send_prompt(&mut live, &session, "one").await;
    let mut answers = Vec::new();
    read_until(&mut live, &mut answers, tool_running).await;
    let steer = send_steering(&mut live, &session, "mid-way").await;
    let second = send_prompt(&mut live, &session, "two").await;
    answers_to(&mut live, &mut answers, &[&first, &steer, &second]).await;
    let idle = send_steering(&mut live, &session, "while idle").await;
    let opened = live.response(&idle).await;
    assert_eq!(opened["result"]["outcome"], "startedNewTurn");
    let env = live.end().await;

    let mut again = Conn::spawn(env);
    again.initialize().await;
    again.load(&session).await;
    let shown: Vec<String> = again
        .thread(&session)
        .updates
        .iter()
        .filter_map(|u| match u["sessionUpdate"].as_str() {
            Some("user_message_chunk") => Some(format!("user: {}", u["content"]["text"].as_str()?)),
            Some("agent_message_chunk") => {
                Some(format!("agent: {}", u["content"]["text"].as_str()?))
            }
            Some("tool_call") => Some("card".to_owned()),
            _ => None,
        })
        .collect();
    let joined = shown.join(" | ");
    let expected = [
        "user: one",
        "card",
        "user: mid-way",
        "agent: steered",
        "user: two",
        "agent: queued ran",
        "user: while idle",
        "agent: idle steering ran",
    ];
    // Each shown once, where the model got it.
    assert_eq!(
        shown.iter().filter(|s| *s == "user: mid-way").count(),
        1,
        "{shown:?}"
    );
    let mut from = 0;
    for want in expected {
        let found = shown[from..]
            .iter()
            .position(|s| s.starts_with(want))
            .unwrap_or_else(|| panic!("{want:?} not in order in the replay: {joined}"));
        from += found + 1;
    }
    // Nothing to close: the queue was empty when the session ended.
    let log = again.env.log(&session);
    assert!(!log.iter().any(|r| r["type"] == "prompt/unqueued"));
}

#[tokio::test]
async fn a_crash_with_prompts_queued_closes_them_on_load() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("unused")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let env = conn.end().await;
    // What a crash leaves: a turn open, a prompt and a steering message
    // waiting.
    let path = env.home.join("sessions").join(format!("{session}.jsonl"));
    let mut log = std::fs::read_to_string(&path).unwrap();
    let next = env.log(&session).len();
    for (n, record) in [
        json!({"type": "user/message", "content": [{"type": "text", "text": "one"}]}),
        json!({"type": "prompt/queued", "requestId": 7, "text": "two"}),
        json!({"type": "steering/received", "steeringId": "s-1", "content": [{"type": "text", "text": "hey"}]}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut record = record;
        record["seq"] = json!(next + n);
        record["at"] = json!("2026-12-02T10:00:00.000Z");
        log.push_str(&format!("{record}\n"));
    }
    std::fs::write(&path, log).unwrap();
    let mut again = Conn::in_process(env);
    again.initialize().await;
    again.load(&session).await;
    let log = again.env.log(&session);
    let out = at(&log, "prompt/unqueued", |r| r["requestId"] == 7);
    assert_eq!(log[out]["reason"], "stopped");
    let dropped = at(&log, "steering/dropped", |r| r["steeringId"] == "s-1");
    assert_eq!(log[dropped]["reason"], "stopped");
}
