//! Provider latency: what candor adds between the provider's bytes and the
//! session seeing them. A local mock (the tests' `mock_http`, on
//! 127.0.0.1) streams a real-format response frame by frame, 2 ms apart, and
//! notes when each frame's last byte was written; the bench notes when each
//! streamed text chunk arrives on the delta channel, and when `stream`
//! returns the whole tool-use turn after the final frame. Both include the
//! loopback hop, HTTP chunk decoding, SSE parsing, JSON parsing and a task
//! wake-up: an upper bound on candor's own share.
//!
//! Run: `cargo bench --bench provider_latency` (release build). Target: under
//! 1 ms per text chunk and for the final turn. Prints the median and p99 per
//! provider.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    unreachable_pub
)]

#[path = "../tests/it/support/mock_http.rs"]
#[allow(dead_code)]
mod mock_http;

use std::time::{Duration, Instant};

use candor::config::ApiKey;
use candor::conversation::{Message, ModelRequest, ToolSpec};
use candor::providers::anthropic::AnthropicProvider;
use candor::providers::openai_chat::ChatProvider;
use candor::providers::openai_responses::ResponsesProvider;
use candor::providers::{Provider, ProviderSettings, StreamDelta};
use mock_http::{MockServer, Reply, data_frame, frame};
use serde_json::json;
use tokio::sync::mpsc;

const CHUNKS: usize = 20;
const RUNS: usize = 30;
const GAP: Duration = Duration::from_millis(2);

/// The frames of one response: `(frames, index of the first text frame)`.
fn anthropic_frames() -> (Vec<String>, usize) {
    let mut f = vec![
        frame(
            "message_start",
            &json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        frame(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for i in 0..CHUNKS {
        f.push(frame("content_block_delta", &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("word{i} ")}})));
    }
    f.push(frame(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ));
    f.push(frame("content_block_start", &json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}})));
    for part in ["{\"command\": ", "\"cargo test", " --all\"}"] {
        f.push(frame("content_block_delta", &json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": part}})));
    }
    f.push(frame(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 1}),
    ));
    f.push(frame("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}})));
    f.push(frame("message_stop", &json!({"type": "message_stop"})));
    (f, 2)
}

fn chat_frames() -> (Vec<String>, usize) {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        data_frame(&json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
    };
    let mut f = vec![chunk(json!({"role": "assistant"}), None)];
    for i in 0..CHUNKS {
        f.push(chunk(json!({"content": format!("word{i} ")}), None));
    }
    f.push(chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": ""}}]}), None));
    for part in ["{\"command\": ", "\"cargo test", " --all\"}"] {
        f.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
            None,
        ));
    }
    f.push(chunk(json!({}), Some("tool_calls")));
    f.push(data_frame("[DONE]"));
    (f, 1)
}

fn responses_frames() -> (Vec<String>, usize) {
    let ev = |name: &str, mut data: serde_json::Value| {
        data["type"] = json!(name);
        frame(name, &data)
    };
    let mut f = vec![ev("response.created", json!({"response": {}}))];
    for i in 0..CHUNKS {
        f.push(ev(
            "response.output_text.delta",
            json!({"output_index": 0, "delta": format!("word{i} ")}),
        ));
    }
    let text: String = (0..CHUNKS).map(|i| format!("word{i} ")).collect();
    f.push(ev("response.output_item.done", json!({"output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}})));
    for part in ["{\"command\": ", "\"cargo test", " --all\"}"] {
        f.push(ev(
            "response.function_call_arguments.delta",
            json!({"output_index": 1, "delta": part}),
        ));
    }
    f.push(ev("response.output_item.done", json!({"output_index": 1, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": "{\"command\": \"cargo test --all\"}"}})));
    f.push(ev(
        "response.completed",
        json!({"response": {"usage": {"input_tokens": 10, "output_tokens": 40}}}),
    ));
    (f, 1)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn show(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{label:<38} median {:>7.1} µs   p99 {:>7.1} µs   max {:>7.1} µs   (n={})",
        percentile(&samples, 0.5).as_secs_f64() * 1e6,
        percentile(&samples, 0.99).as_secs_f64() * 1e6,
        samples.last().unwrap().as_secs_f64() * 1e6,
        samples.len()
    );
}

async fn measure(name: &str, frames: (Vec<String>, usize), make: impl Fn(&str) -> Provider) {
    let (frames, first_text) = frames;
    let reply = Reply::Events {
        frames: frames.clone(),
        gap: GAP,
        cut: false,
    };
    let server = MockServer::start(move |_| reply.clone()).await;
    let base = if name == "Anthropic" {
        server.url.clone()
    } else {
        format!("{}/v1", server.url)
    };
    let mut provider = make(&base);
    let request = ModelRequest {
        system: "bench".into(),
        messages: vec![Message::user("go")],
        tools: vec![ToolSpec {
            name: "Bash".into(),
            description: "Runs a command.".into(),
            input_schema: json!({"type": "object"}),
        }],
        web_search: false,
    };
    let mut chunk_latency = Vec::new();
    let mut turn_latency = Vec::new();
    for _ in 0..RUNS {
        server.written.lock().unwrap().clear();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let receiver = tokio::spawn(async move {
            let mut seen = Vec::new();
            while let Some(d) = rx.recv().await {
                if matches!(d, StreamDelta::Text(_)) {
                    seen.push(Instant::now());
                }
            }
            seen
        });
        let turn = provider.stream(&request, tx).await.unwrap();
        let done = Instant::now();
        assert_eq!(turn.tool_uses().count(), 1);
        let seen = receiver.await.unwrap();
        let written = server.written.lock().unwrap().clone();
        assert_eq!(seen.len(), CHUNKS);
        for (i, at) in seen.iter().enumerate() {
            chunk_latency.push(at.saturating_duration_since(written[first_text + i]));
        }
        turn_latency.push(done.saturating_duration_since(*written.last().unwrap()));
    }
    show(&format!("{name}: text chunk → delta"), chunk_latency);
    show(&format!("{name}: last byte → whole turn"), turn_latency);
}

fn settings(base: &str) -> ProviderSettings {
    ProviderSettings::new(base, Some(ApiKey::new("bench-key")), "bench-model")
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        measure("Anthropic", anthropic_frames(), |b| {
            Provider::Anthropic(AnthropicProvider::new(settings(b)).unwrap())
        })
        .await;
        measure("OpenAI Chat", chat_frames(), |b| {
            Provider::OpenaiChat(ChatProvider::new(settings(b)).unwrap())
        })
        .await;
        measure("OpenAI Responses", responses_frames(), |b| {
            Provider::OpenaiResponses(ResponsesProvider::new(settings(b)).unwrap())
        })
        .await;
    });
}
