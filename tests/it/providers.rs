//! Providers against local mock APIs (`support::mock_anthropic`,
//! `support::mock_openai`) that speak each API's streaming format and check
//! requests as the real APIs do: streaming order, tool calls, thinking and
//! reasoning replayed byte for byte across turns, rewrites (note vs in
//! place), auth errors, retries (429 with retry-after, 5xx, cut streams),
//! malformed events, stop reasons and usage. No network: every mock binds
//! 127.0.0.1:0.

use std::time::{Duration, Instant};

use candor::config::ApiKey;
use candor::conversation::{
    AssistantTurn, Message, ModelRequest, ModelStop, RewriteStrategy, ToolOutcome, ToolSpec,
    WireApi,
};
use candor::event_log::Record;
use candor::history::derive_messages;
use candor::providers::anthropic::AnthropicProvider;
use candor::providers::openai_chat::ChatProvider;
use candor::providers::openai_responses::ResponsesProvider;
use candor::providers::{Provider, ProviderError, ProviderSettings, RetryPolicy, StreamDelta};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::mock_anthropic::{
    self as ant, MockAnthropic, message, text, thinking, tool_use,
};
use crate::support::mock_http::{data_frame, frame};
use crate::support::mock_openai::{self as oai, MockOpenai, chat, responses};

fn fast() -> RetryPolicy {
    RetryPolicy {
        attempts: 5,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(4),
        max_retry_after: Duration::from_secs(5),
    }
}

fn settings(url: &str, key: &str) -> ProviderSettings {
    let mut s = ProviderSettings::new(url, Some(ApiKey::new(key)), "mock-model");
    s.retry = fast();
    s
}

fn anthropic(mock: &MockAnthropic) -> Provider {
    let mut s = settings(&mock.url(), ant::KEY);
    s.thinking_budget = Some(2048);
    Provider::Anthropic(AnthropicProvider::new(s).unwrap())
}

fn openai_chat(mock: &MockOpenai, strategy: RewriteStrategy) -> Provider {
    let mut s = settings(&mock.url(), oai::KEY);
    s.rewrite_strategy = strategy;
    Provider::OpenaiChat(ChatProvider::new(s).unwrap())
}

fn openai_responses(mock: &MockOpenai) -> Provider {
    Provider::OpenaiResponses(ResponsesProvider::new(settings(&mock.url(), oai::KEY)).unwrap())
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "Bash".into(),
        description: "Runs a command.".into(),
        input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    }]
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: "You are candor.".into(),
        messages,
        tools: tools(),
        web_search: false,
    }
}

fn user(text: &str) -> Message {
    Message::user(text)
}

fn results(pairs: &[(&str, &str)]) -> Message {
    Message::ToolResults {
        results: pairs
            .iter()
            .map(|(id, out)| ToolOutcome {
                images: Vec::new(),
                tool_use_id: (*id).into(),
                content: (*out).into(),
                is_error: false,
            })
            .collect(),
    }
}

/// What one `stream` call gave: the result, the deltas and the notices.
struct Run {
    result: Result<AssistantTurn, ProviderError>,
    deltas: Vec<StreamDelta>,
    notices: Vec<String>,
    elapsed: Duration,
}

impl Run {
    fn turn(&self) -> &AssistantTurn {
        match &self.result {
            Ok(t) => t,
            Err(e) => panic!("the request failed: {e}"),
        }
    }

    fn err(&self) -> &ProviderError {
        match &self.result {
            Ok(t) => panic!("expected an error, got {t:?}"),
            Err(e) => e,
        }
    }

    fn text(&self) -> String {
        self.deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    fn thinking(&self) -> String {
        self.deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Thinking(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

async fn run(provider: &mut Provider, request: &ModelRequest) -> Run {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (ntx, mut nrx) = mpsc::unbounded_channel();
    provider.set_notices(Some(ntx));
    let start = Instant::now();
    let result = provider.stream(request, tx).await;
    let elapsed = start.elapsed();
    let deltas = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let notices = std::iter::from_fn(|| nrx.try_recv().ok()).collect();
    Run {
        result,
        deltas,
        notices,
        elapsed,
    }
}

/// Log records, as the session would append them, from JSON (robust to
/// fields other modules add to records).
fn records(events: Vec<Value>) -> Vec<Record> {
    events
        .into_iter()
        .enumerate()
        .map(|(seq, mut e)| {
            e["seq"] = json!(seq);
            e["at"] = json!("2026-11-30T10:00:00.000Z");
            serde_json::from_value(e).unwrap()
        })
        .collect()
}

fn assistant_record(turn: &AssistantTurn) -> Value {
    json!({"type": "assistant/message", "content": turn.content, "stop": turn.stop})
}

/// A call that the hook `rtk` rewrote, ran, and its result.
fn rewritten_call_records(id: &str, original: Value, effective: Value, output: &str) -> Vec<Value> {
    vec![
        json!({"type": "tool/call", "toolCallId": id, "tool": "Bash", "arguments": effective,
               "originalArguments": original, "digest": "sha256:x",
               "decision": {"outcome": "allow", "by": "hook:rtk"}, "rewrittenBy": ["rtk"]}),
        json!({"type": "tool/started", "toolCallId": id}),
        json!({"type": "tool/result", "toolCallId": id, "status": "completed", "output": output, "exitCode": 0}),
    ]
}

// ---------------------------------------------------------------- Anthropic

#[tokio::test]
async fn anthropic_streams_text_in_order_and_reports_usage() {
    let mock = MockAnthropic::start(vec![message(
        vec![text("Hello there, I am a streamed answer.")],
        "end_turn",
    )])
    .await;
    let mut p = anthropic(&mock);
    let r = run(&mut p, &request(vec![user("hi")])).await;
    let turn = r.turn();
    assert_eq!(turn.stop, ModelStop::EndTurn);
    assert_eq!(r.text(), "Hello there, I am a streamed answer.");
    assert!(r.deltas.len() > 3, "text streams in chunks: {:?}", r.deltas);
    assert_eq!(
        serde_json::to_value(&turn.content[0]).unwrap(),
        json!({"type": "text", "text": "Hello there, I am a streamed answer."})
    );
    let usage = turn.usage().unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens
        ),
        (130, 50, 20, 10)
    );
    let body = &mock.requests()[0];
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "You are candor.");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["command"])
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert!(r.notices.is_empty());
}

#[tokio::test]
async fn anthropic_thinking_and_tool_calls_replay_byte_for_byte() {
    let mock = MockAnthropic::start(vec![
        message(
            vec![
                thinking("The user wants files. I should list them.", "sig-AAA/+=="),
                ant::Block::Redacted("opaque-redacted-ciphertext".into()),
                text("Let me look."),
                tool_use(
                    "toolu_01",
                    "Bash",
                    r#"{"command": "ls -la", "description": "list"}"#,
                ),
                tool_use("toolu_02", "Bash", r#"{"command": "pwd"}"#),
            ],
            "tool_use",
        ),
        message(
            vec![
                thinking("Two results; summarise.", "sig-BBB"),
                text("Done."),
            ],
            "end_turn",
        ),
    ])
    .await;
    let mut p = anthropic(&mock);
    let first = run(&mut p, &request(vec![user("list files")])).await;
    let turn = first.turn().clone();
    assert_eq!(turn.stop, ModelStop::ToolUse);
    assert_eq!(
        first.thinking(),
        "The user wants files. I should list them."
    );
    let calls: Vec<_> = turn
        .tool_uses()
        .map(|(id, _, input)| (id.to_owned(), input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "toolu_01".to_owned(),
                json!({"command": "ls -la", "description": "list"})
            ),
            ("toolu_02".to_owned(), json!({"command": "pwd"}))
        ]
    );
    // Through the log and back: the history the session would send.
    let mut log = vec![
        json!({"type": "user/message", "content": [{"type": "text", "text": "list files"}]}),
        assistant_record(&turn),
    ];
    for (id, out) in [("toolu_02", "/p\n"), ("toolu_01", "a\nb\n")] {
        log.push(json!({"type": "tool/started", "toolCallId": id}));
        log.push(json!({"type": "tool/result", "toolCallId": id, "status": "completed", "output": out, "exitCode": 0}));
    }
    let messages = derive_messages(&records(log), p.rewrite_strategy(), &Default::default());
    let second = run(&mut p, &request(messages)).await;
    assert_eq!(second.turn().stop, ModelStop::EndTurn);
    // The mock accepted the replay (thinking unmodified, results first);
    // and the first turn went back exactly as it streamed.
    let body = &mock.bodies()[1];
    let streamed = &mock.streamed()[0];
    assert!(
        body.contains(streamed.as_str()),
        "{body}\nlacks\n{streamed}"
    );
    let sent = &mock.requests()[1]["messages"];
    assert_eq!(
        sent[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "a\nb\n"},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "/p\n", "cache_control": {"type": "ephemeral"}}
        ])
    );
}

#[tokio::test]
async fn anthropic_mock_rejects_a_rebuilt_thinking_turn() {
    // Without the raw turn (rebuilt from the neutral blocks, the redacted
    // block lost), the API refuses the history: this is what raw replay
    // prevents.
    let mock = MockAnthropic::start(vec![message(
        vec![
            thinking("hmm", "sig-1"),
            ant::Block::Redacted("secret".into()),
            tool_use("toolu_1", "Bash", r#"{"command":"ls"}"#),
        ],
        "tool_use",
    )])
    .await;
    let mut p = anthropic(&mock);
    let turn = run(&mut p, &request(vec![user("go")])).await.turn().clone();
    let neutral = AssistantTurn {
        content: turn
            .content
            .iter()
            .filter(|b| !matches!(b, candor::conversation::AssistantBlock::Raw { .. }))
            .cloned()
            .collect(),
        stop: turn.stop,
    };
    let r = run(
        &mut p,
        &request(vec![
            user("go"),
            Message::Assistant(neutral),
            results(&[("toolu_1", "x")]),
        ]),
    )
    .await;
    let ProviderError::Rejected { status, detail, .. } = r.err() else {
        panic!("{:?}", r.err())
    };
    assert_eq!(*status, 400);
    assert!(detail.contains("cannot be modified"), "{detail}");
    // Not retried: one request for the first turn, one refused.
    assert_eq!(mock.bodies().len(), 2);
}

#[tokio::test]
async fn anthropic_rewrite_is_a_note_and_the_call_stays_as_written() {
    let mock = MockAnthropic::start(vec![
        message(
            vec![
                thinking("check status", "sig-r"),
                tool_use("toolu_r", "Bash", r#"{"command":"git status"}"#),
            ],
            "tool_use",
        ),
        message(vec![text("Clean.")], "end_turn"),
    ])
    .await;
    let mut p = anthropic(&mock);
    assert_eq!(p.rewrite_strategy(), RewriteStrategy::Note);
    let turn = run(&mut p, &request(vec![user("status?")]))
        .await
        .turn()
        .clone();
    let mut log = vec![
        json!({"type": "user/message", "content": [{"type": "text", "text": "status?"}]}),
        assistant_record(&turn),
    ];
    log.extend(rewritten_call_records(
        "toolu_r",
        json!({"command": "git status"}),
        json!({"command": "rtk git status"}),
        "clean",
    ));
    let messages = derive_messages(&records(log), p.rewrite_strategy(), &Default::default());
    run(&mut p, &request(messages)).await.turn();
    let sent = &mock.requests()[1]["messages"];
    assert_eq!(
        sent[1]["content"][1]["input"],
        json!({"command": "git status"})
    );
    let result = sent[2]["content"][0]["content"].as_str().unwrap();
    assert!(
        result.starts_with("[candor] A hook (rtk) rewrote this call"),
        "{result}"
    );
    assert!(
        result.contains("rtk git status") && result.ends_with("clean"),
        "{result}"
    );
}

#[tokio::test]
async fn anthropic_401_names_the_variable_and_never_the_key() {
    let mock = MockAnthropic::start(vec![]).await;
    let wrong = "sk-ant-WRONG-key-that-must-not-leak";
    let mut p = Provider::Anthropic(AnthropicProvider::new(settings(&mock.url(), wrong)).unwrap());
    let r = run(&mut p, &request(vec![user("hi")])).await;
    let e = r.err();
    assert_eq!(e.auth_variable(), Some("ANTHROPIC_API_KEY"));
    let shown = format!("{e} {e:?} {p:?}");
    assert!(
        shown.contains("ANTHROPIC_API_KEY") && shown.contains("401"),
        "{shown}"
    );
    assert!(
        !shown.contains(wrong) && !shown.contains("WRONG"),
        "{shown}"
    );
    assert_eq!(mock.bodies().len(), 1, "an auth failure is not retried");

    // No key at all: the same error, without a request.
    let mut s = settings(&mock.url(), "");
    s.api_key = None;
    let mut p = Provider::Anthropic(AnthropicProvider::new(s).unwrap());
    let e = run(&mut p, &request(vec![user("hi")]))
        .await
        .result
        .unwrap_err();
    assert!(
        e.to_string().contains("ANTHROPIC_API_KEY is not set")
            || e.to_string().contains("is not set. Set ANTHROPIC_API_KEY"),
        "{e}"
    );
    assert_eq!(mock.bodies().len(), 1);
}

#[tokio::test]
async fn anthropic_429_honours_retry_after_then_succeeds() {
    let mock = MockAnthropic::start(vec![
        ant::Step::Status {
            status: 429,
            headers: vec![("retry-after".into(), "0.3".into())],
            body: ant::error_body(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
        },
        message(vec![text("ok")], "end_turn"),
    ])
    .await;
    let mut p = anthropic(&mock);
    let r = run(&mut p, &request(vec![user("hi")])).await;
    assert_eq!(r.text(), "ok");
    assert!(r.elapsed >= Duration::from_millis(300), "{:?}", r.elapsed);
    assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
    assert!(
        r.notices[0].contains("rate-limiting")
            && r.notices[0].contains("retrying in 0.3 s (attempt 2 of 5)"),
        "{}",
        r.notices[0]
    );
}

#[tokio::test]
async fn anthropic_500_five_times_is_a_clear_error() {
    let step = ant::Step::Status {
        status: 500,
        headers: Vec::new(),
        body: ant::error_body("api_error", "Internal server error"),
    };
    let mock = MockAnthropic::start(vec![step; 6]).await;
    let mut p = anthropic(&mock);
    let r = run(&mut p, &request(vec![user("hi")])).await;
    assert_eq!(
        r.err().to_string(),
        "Anthropic still fails with HTTP 500 after 5 attempts: api_error: Internal server error"
    );
    assert_eq!(r.notices.len(), 4, "{:?}", r.notices);
    assert_eq!(mock.bodies().len(), 5);
}

#[tokio::test]
async fn anthropic_stream_cut_mid_tool_call_is_retried_whole() {
    let blocks = vec![
        text("Running it."),
        tool_use("toolu_c", "Bash", r#"{"command":"cargo test"}"#),
    ];
    // message_start, ping, text start/deltas/stop, tool start, one json piece.
    let mock = MockAnthropic::start(vec![
        ant::Step::CutAfter {
            blocks: blocks.clone(),
            stop: "tool_use".into(),
            frames: 9,
        },
        message(blocks, "tool_use"),
    ])
    .await;
    let mut p = anthropic(&mock);
    let r = run(&mut p, &request(vec![user("test")])).await;
    let turn = r.turn();
    assert_eq!(
        turn.tool_uses().next().unwrap().2,
        &json!({"command": "cargo test"})
    );
    assert_eq!(r.notices.len(), 1);
    assert!(
        r.notices[0].contains("dropped the connection; the answer restarts"),
        "{}",
        r.notices[0]
    );
    // The text streamed twice (once per attempt); the turn holds it once.
    assert_eq!(r.text(), "Running it.Running it.");
    assert_eq!(
        turn.raw(WireApi::Anthropic).unwrap().to_string(),
        mock.streamed()[0]
    );
}

#[tokio::test]
async fn anthropic_stream_cut_every_time_is_a_clear_error_and_no_turn() {
    let blocks = vec![tool_use("toolu_c", "Bash", r#"{"command":"ls"}"#)];
    let cut = ant::Step::CutAfter {
        blocks,
        stop: "tool_use".into(),
        frames: 4,
    };
    let mock = MockAnthropic::start(vec![cut; 5]).await;
    let mut p = anthropic(&mock);
    let e = run(&mut p, &request(vec![user("x")]))
        .await
        .result
        .unwrap_err();
    assert!(
        matches!(e, ProviderError::StreamCut { attempts: 5, .. }),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("the connection to Anthropic failed 5 times"),
        "{e}"
    );
}

#[tokio::test]
async fn anthropic_overloaded_error_event_is_retried() {
    let mock = MockAnthropic::start(vec![
        ant::Step::Frames(vec![
            frame("message_start", &json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})),
            frame("error", &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        ]),
        message(vec![text("fine")], "end_turn"),
    ])
    .await;
    let mut p = anthropic(&mock);
    let r = run(&mut p, &request(vec![user("x")])).await;
    assert_eq!(r.text(), "fine");
    assert!(
        r.notices[0].starts_with("Anthropic is overloaded; retrying"),
        "{:?}",
        r.notices
    );
}

#[tokio::test]
async fn anthropic_malformed_event_is_a_clear_error_not_retried() {
    let mock = MockAnthropic::start(vec![ant::Step::Frames(vec![
        frame("message_start", &json!({"type": "message_start", "message": {}})),
        frame("content_block_start", &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"par\n\n".to_owned(),
        frame("message_stop", &json!({"type": "message_stop"})),
    ])])
    .await;
    let mut p = anthropic(&mock);
    let r = run(&mut p, &request(vec![user("x")])).await;
    let e = r.err().to_string();
    assert!(
        e.starts_with(
            "Anthropic sent a malformed `content_block_delta` event: its data is not JSON"
        ),
        "{e}"
    );
    assert_eq!(mock.bodies().len(), 1);
}

#[tokio::test]
async fn anthropic_stop_reasons_map() {
    let mock = MockAnthropic::start(vec![
        message(vec![text("a long")], "max_tokens"),
        message(vec![text("I can't help with that.")], "refusal"),
        // A call cut short by max_tokens is left out of the turn.
        ant::Step::Frames(vec![
            frame("message_start", &json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})),
            frame("content_block_start", &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}})),
            frame("content_block_delta", &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"ec"}})),
            frame("content_block_stop", &json!({"type": "content_block_stop", "index": 0})),
            frame("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}})),
            frame("message_stop", &json!({"type": "message_stop"})),
        ]),
    ])
    .await;
    let mut p = anthropic(&mock);
    let req = request(vec![user("x")]);
    assert_eq!(run(&mut p, &req).await.turn().stop, ModelStop::MaxTokens);
    assert_eq!(run(&mut p, &req).await.turn().stop, ModelStop::Refusal);
    let cut = run(&mut p, &req).await;
    assert_eq!(cut.turn().stop, ModelStop::MaxTokens);
    assert_eq!(cut.turn().tool_uses().count(), 0);
}

// ------------------------------------------------------- Chat Completions

#[tokio::test]
async fn chat_streams_text_and_tool_calls_and_replays_reasoning_content() {
    let mock = MockOpenai::start_with(
        vec![
            oai::Step::Chat {
                reasoning: "Need to list.".into(),
                text: "Listing now.".into(),
                calls: vec![
                    ("call_1", "Bash", r#"{"command": "ls"}"#),
                    ("call_2", "Bash", r#"{"command":"pwd"}"#),
                ],
                finish: "tool_calls".into(),
            },
            chat("Two things.", vec![], "stop"),
        ],
        true,
    )
    .await;
    let mut p = openai_chat(&mock, RewriteStrategy::Note);
    let first = run(&mut p, &request(vec![user("files?")])).await;
    let turn = first.turn().clone();
    assert_eq!(turn.stop, ModelStop::ToolUse);
    assert_eq!(first.text(), "Listing now.");
    assert_eq!(first.thinking(), "Need to list.");
    assert_eq!(turn.usage().unwrap().input_tokens, 120);
    let body = &mock.requests()[0];
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are candor."})
    );
    assert_eq!(body["tools"][0]["function"]["name"], "Bash");

    let messages = vec![
        user("files?"),
        Message::Assistant(turn),
        results(&[("call_1", "a b"), ("call_2", "/p")]),
    ];
    let second = run(&mut p, &request(messages)).await;
    assert_eq!(second.text(), "Two things.");
    let sent = &mock.requests()[1]["messages"];
    assert_eq!(
        sent[2],
        json!({"role": "assistant", "content": "Listing now.", "reasoning_content": "Need to list.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\": \"ls\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"pwd\"}"}}
        ]})
    );
    assert_eq!(
        sent[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "a b"})
    );
    assert_eq!(
        sent[4],
        json!({"role": "tool", "tool_call_id": "call_2", "content": "/p"})
    );
}

#[tokio::test]
async fn chat_mock_rejects_an_unanswered_call() {
    let mock =
        MockOpenai::start(vec![chat("", vec![("call_x", "Bash", "{}")], "tool_calls")]).await;
    let mut p = openai_chat(&mock, RewriteStrategy::Note);
    let turn = run(&mut p, &request(vec![user("go")])).await.turn().clone();
    let e = run(
        &mut p,
        &request(vec![user("go"), Message::Assistant(turn), user("again")]),
    )
    .await
    .result
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("did not have response messages: call_x"),
        "{e}"
    );
}

async fn chat_rewrite(strategy: RewriteStrategy) -> Value {
    let mock = MockOpenai::start(vec![
        chat(
            "",
            vec![("call_r", "Bash", r#"{"command": "git status"}"#)],
            "tool_calls",
        ),
        chat("Clean.", vec![], "stop"),
    ])
    .await;
    let mut p = openai_chat(&mock, strategy);
    assert_eq!(p.rewrite_strategy(), strategy);
    let turn = run(&mut p, &request(vec![user("status?")]))
        .await
        .turn()
        .clone();
    let mut log = vec![
        json!({"type": "user/message", "content": [{"type": "text", "text": "status?"}]}),
        assistant_record(&turn),
    ];
    log.extend(rewritten_call_records(
        "call_r",
        json!({"command": "git status"}),
        json!({"command": "rtk git status"}),
        "clean",
    ));
    let messages = derive_messages(&records(log), p.rewrite_strategy(), &Default::default());
    run(&mut p, &request(messages)).await.turn();
    mock.requests()[1]["messages"].clone()
}

#[tokio::test]
async fn chat_rewrite_in_place_overlays_the_arguments_string() {
    let sent = chat_rewrite(RewriteStrategy::InPlace).await;
    assert_eq!(
        sent[2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"command\":\"rtk git status\"}")
    );
    assert_eq!(sent[3]["content"], "clean");
}

#[tokio::test]
async fn chat_rewrite_note_keeps_the_models_arguments() {
    let sent = chat_rewrite(RewriteStrategy::Note).await;
    assert_eq!(
        sent[2]["tool_calls"][0]["function"]["arguments"],
        json!("{\"command\": \"git status\"}")
    );
    let result = sent[3]["content"].as_str().unwrap();
    assert!(
        result.starts_with("[candor] A hook (rtk) rewrote this call") && result.ends_with("clean"),
        "{result}"
    );
}

#[tokio::test]
async fn chat_401_does_not_pass_on_the_echoed_key() {
    let mock = MockOpenai::start(vec![]).await;
    let wrong = "sk-proj-LEAKYKEY-abcdefgh9876";
    let mut p = Provider::OpenaiChat(ChatProvider::new(settings(&mock.url(), wrong)).unwrap());
    let e = run(&mut p, &request(vec![user("hi")]))
        .await
        .result
        .unwrap_err();
    let shown = format!("{e} {e:?}");
    assert_eq!(e.auth_variable(), Some("OPENAI_API_KEY"));
    assert!(
        shown.contains("OPENAI_API_KEY") && shown.contains("401"),
        "{shown}"
    );
    for fragment in [wrong, "sk-proj", "9876", "LEAKY"] {
        assert!(!shown.contains(fragment), "{fragment} in {shown}");
    }
}

#[tokio::test]
async fn chat_stop_reasons_and_a_cut_stream() {
    let partial = vec![
        data_frame(&json!({"choices": [{"index": 0, "delta": {"content": "Run"}}]}).to_string()),
        data_frame(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_c", "type": "function", "function": {"name": "Bash", "arguments": "{\"comm"}}]}}]}).to_string()),
    ];
    let mock = MockOpenai::start(vec![
        chat("truncated", vec![], "length"),
        chat("no", vec![], "content_filter"),
        oai::Step::Frames {
            frames: partial,
            cut: true,
        },
        chat(
            "Run",
            vec![("call_c", "Bash", r#"{"command":"ls"}"#)],
            "tool_calls",
        ),
    ])
    .await;
    let mut p = openai_chat(&mock, RewriteStrategy::Note);
    let req = request(vec![user("x")]);
    assert_eq!(run(&mut p, &req).await.turn().stop, ModelStop::MaxTokens);
    assert_eq!(run(&mut p, &req).await.turn().stop, ModelStop::Refusal);
    let r = run(&mut p, &req).await;
    assert_eq!(r.turn().stop, ModelStop::ToolUse);
    assert_eq!(
        r.turn().tool_uses().next().unwrap().2,
        &json!({"command": "ls"})
    );
    assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
}

#[tokio::test]
async fn chat_malformed_chunk_is_a_clear_error() {
    let mock = MockOpenai::start(vec![oai::Step::Frames {
        frames: vec![data_frame("{\"choices\": [")],
        cut: false,
    }])
    .await;
    let mut p = openai_chat(&mock, RewriteStrategy::Note);
    let e = run(&mut p, &request(vec![user("x")]))
        .await
        .result
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("OpenAI sent a malformed `chat.completion.chunk` event"),
        "{e}"
    );
}

// ---------------------------------------------------------------- Responses

#[tokio::test]
async fn responses_keep_reasoning_next_to_calls_across_turns() {
    let mock = MockOpenai::start(vec![
        responses(
            "I will list files.",
            "Checking.",
            vec![("call_1", "Bash", r#"{"command":"ls"}"#)],
        ),
        responses(
            "Now summarise.",
            "",
            vec![("call_2", "Bash", r#"{"command":"wc -l a"}"#)],
        ),
        responses("", "Done.", vec![]),
    ])
    .await;
    let mut p = openai_responses(&mock);
    assert_eq!(p.rewrite_strategy(), RewriteStrategy::Note);
    let first = run(&mut p, &request(vec![user("go")])).await;
    assert_eq!(first.thinking(), "I will list files.");
    assert_eq!(first.text(), "Checking.");
    let t1 = first.turn().clone();
    assert_eq!(t1.stop, ModelStop::ToolUse);
    assert_eq!(t1.usage().unwrap().cache_read_tokens, 128);
    let body = &mock.requests()[0];
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["instructions"], "You are candor.");

    let mut history = vec![
        user("go"),
        Message::Assistant(t1.clone()),
        results(&[("call_1", "a\n")]),
    ];
    let t2 = run(&mut p, &request(history.clone())).await.turn().clone();
    history.extend([
        Message::Assistant(t2.clone()),
        results(&[("call_2", "1 a\n")]),
    ]);
    let third = run(&mut p, &request(history)).await;
    assert_eq!(third.text(), "Done.");
    let input = &mock.requests()[2]["input"];
    let raw1 = t1
        .raw(WireApi::OpenaiResponses)
        .unwrap()
        .as_array()
        .unwrap();
    let raw2 = t2
        .raw(WireApi::OpenaiResponses)
        .unwrap()
        .as_array()
        .unwrap();
    let mut expected = vec![
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
    ];
    expected.extend(raw1.iter().cloned());
    expected.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "a\n"}));
    expected.extend(raw2.iter().cloned());
    expected.push(json!({"type": "function_call_output", "call_id": "call_2", "output": "1 a\n"}));
    assert_eq!(input, &Value::Array(expected));
    assert_eq!(raw1[0]["type"], "reasoning");
    assert!(
        raw1[0]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );
}

#[tokio::test]
async fn responses_mock_rejects_a_call_without_its_reasoning() {
    let mock =
        MockOpenai::start(vec![responses("think", "", vec![("call_1", "Bash", "{}")])]).await;
    let mut p = openai_responses(&mock);
    let turn = run(&mut p, &request(vec![user("go")])).await.turn().clone();
    // Keep the raw items but drop the reasoning one.
    let mut content = turn.content.clone();
    if let Some(candor::conversation::AssistantBlock::Raw {
        turn: Value::Array(items),
        ..
    }) = content.last_mut()
    {
        items.retain(|i| i["type"] != "reasoning");
    }
    let pruned = AssistantTurn {
        content,
        stop: turn.stop,
    };
    let e = run(
        &mut p,
        &request(vec![
            user("go"),
            Message::Assistant(pruned),
            results(&[("call_1", "x")]),
        ]),
    )
    .await
    .result
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("without its required 'reasoning' item: 'rs_0'"),
        "{e}"
    );
}

#[tokio::test]
async fn responses_incomplete_is_max_tokens() {
    let mock = MockOpenai::start(vec![oai::Step::Responses {
        reasoning: String::new(),
        text: "partial".into(),
        calls: vec![],
        incomplete: Some("max_output_tokens".into()),
    }])
    .await;
    let mut p = openai_responses(&mock);
    assert_eq!(
        run(&mut p, &request(vec![user("x")])).await.turn().stop,
        ModelStop::MaxTokens
    );
}

#[tokio::test]
async fn responses_rate_limit_then_failure_event() {
    let mock = MockOpenai::start(vec![
        oai::Step::Status {
            status: 429,
            headers: vec![("retry-after-ms".into(), "20".into())],
            body: oai::error_body("Rate limit reached", "requests", Some("rate_limit_exceeded")),
        },
        oai::Step::Frames {
            frames: vec![frame(
                "response.failed",
                &json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "invalid_prompt", "message": "Invalid prompt"}}}),
            )],
            cut: false,
        },
    ])
    .await;
    let mut p = openai_responses(&mock);
    let r = run(&mut p, &request(vec![user("x")])).await;
    assert!(
        r.notices[0].contains("retrying in 0.0 s (attempt 2 of 5)"),
        "{:?}",
        r.notices
    );
    assert_eq!(
        r.err().to_string(),
        "OpenAI Responses rejected the request: invalid_prompt: Invalid prompt"
    );
}

#[tokio::test]
async fn an_event_longer_than_the_cap_is_refused_not_read_on() {
    // A hostile or broken stream: one event of 9 MiB (a line with no end
    // in sight would otherwise be read on, and kept, without bound).
    let big = |n: usize| {
        vec![
            frame(
                "message_start",
                &json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            ),
            frame(
                "content_block_start",
                &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            frame(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a".repeat(n)}}),
            ),
            frame(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": 0}),
            ),
            frame(
                "message_delta",
                &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
            ),
            frame("message_stop", &json!({"type": "message_stop"})),
        ]
    };
    let mock = MockAnthropic::start(vec![
        ant::Step::Frames(big(9 << 20)),
        ant::Step::Frames(big(1 << 20)),
    ])
    .await;
    let mut p = anthropic(&mock);
    let started = Instant::now();
    let r = run(&mut p, &request(vec![user("x")])).await;
    let e = r.err().to_string();
    assert!(e.contains("an event longer than 8 MiB"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(mock.bodies().len(), 1, "not retried");
    // A control: a long event within the cap is read.
    let r = run(&mut p, &request(vec![user("x")])).await;
    assert_eq!(r.text().len(), 1 << 20);
}

#[tokio::test]
async fn an_error_body_that_never_ends_is_cut_and_its_start_reported() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A hostile or broken server answers 400 with a body that goes on for
    // ever; candor reads its start as the error and stops reading.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0; 64 << 10];
        let _ = socket.read(&mut buf).await;
        let head = "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
        let mut out = head.as_bytes().to_vec();
        out.extend_from_slice(b"9\r\nendless: \r\n");
        if socket.write_all(&out).await.is_err() {
            return;
        }
        let piece = format!("{:x}\r\n{}\r\n", 64 << 10, "x".repeat(64 << 10));
        while socket.write_all(piece.as_bytes()).await.is_ok() {
            counter.fetch_add(64 << 10, std::sync::atomic::Ordering::Relaxed);
        }
    });
    let mut p = Provider::Anthropic(AnthropicProvider::new(settings(&url, ant::KEY)).unwrap());
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        run(&mut p, &request(vec![user("x")])),
    )
    .await
    .expect("the error body is read for ever");
    let e = r.err().to_string();
    assert!(
        e.starts_with("Anthropic rejected the request (HTTP 400): endless: xxx"),
        "{e}"
    );
    assert!(e.ends_with('…'), "{e}");
    // The server's writes stop soon after candor stops reading.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let so_far = sent.load(std::sync::atomic::Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sent.load(std::sync::atomic::Ordering::Relaxed), so_far);
    assert!(so_far < 16 << 20, "{so_far} bytes sent");
}
