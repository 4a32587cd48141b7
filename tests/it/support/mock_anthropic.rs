//! A mock of Anthropic's Messages API (`POST /v1/messages`, streamed) that
//! checks requests the way the real API does (`shared/reference/providers.md`
//! §2, §7) and answers with the API's own error texts:
//!
//! - the key (`x-api-key`) and `anthropic-version`;
//! - no unknown fields at the top level or in any block;
//! - every `tool_use` answered by a `tool_result` in the very next (user)
//!   message, results before any other block, no result without its call,
//!   `input` an object;
//! - thinking and redacted thinking exactly as streamed: an assistant message
//!   holding one must be byte-identical to the message the mock streamed;
//!   so must one holding a web search's result (`server_tool_use` and
//!   `web_search_tool_result`, its `encrypted_content` verbatim), and a
//!   request replaying a search must still offer the `web_search` tool;
//! - `tools` entries: custom tools, or the server's `web_search_20250305`.
//!
//! Responses are scripted ([`Step`]) and streamed in the real SSE format.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::mock_http::{MockServer, Reply, Request, frame};

/// The key the mock accepts.
pub const KEY: &str = "sk-ant-test-0123456789abcdef";

/// One block of a scripted message.
#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    /// `input` is the JSON text the model writes, streamed in pieces.
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
    /// A search run by the server: a `server_tool_use` block (its input
    /// streamed) and its `web_search_tool_result` (titles, URLs and
    /// encrypted content per hit, or an error code).
    Search {
        id: String,
        query: String,
        hits: Vec<(String, String)>,
        error: Option<String>,
    },
}

pub fn search(id: &str, query: &str, hits: &[(&str, &str)]) -> Block {
    Block::Search {
        id: id.into(),
        query: query.into(),
        hits: hits
            .iter()
            .map(|(t, u)| ((*t).to_owned(), (*u).to_owned()))
            .collect(),
        error: None,
    }
}

pub fn text(t: &str) -> Block {
    Block::Text(t.into())
}

pub fn thinking(t: &str, signature: &str) -> Block {
    Block::Thinking {
        thinking: t.into(),
        signature: signature.into(),
    }
}

pub fn tool_use(id: &str, name: &str, input: &str) -> Block {
    Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: input.into(),
    }
}

/// What the mock does with one request (after checking it).
#[derive(Debug, Clone)]
pub enum Step {
    /// Streams a message ending with `stop` (`end_turn`, `tool_use`, …).
    Message { blocks: Vec<Block>, stop: String },
    /// Streams a message but cuts the connection after `frames` frames.
    CutAfter {
        blocks: Vec<Block>,
        stop: String,
        frames: usize,
    },
    /// Answers with a status, headers and body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Streams these frames as they are.
    Frames(Vec<String>),
}

pub fn message(blocks: Vec<Block>, stop: &str) -> Step {
    Step::Message {
        blocks,
        stop: stop.into(),
    }
}

/// Anthropic's error body.
pub fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

#[derive(Default)]
struct State {
    steps: VecDeque<Step>,
    bodies: Vec<String>,
    /// signature → thinking text, for every thinking block streamed.
    signatures: HashMap<String, String>,
    redacted: HashSet<String>,
    /// Every web search result's encrypted content streamed.
    encrypted: HashSet<String>,
    /// Every message streamed, as the API expects it back (JSON text).
    streamed: Vec<String>,
    /// Pause between frames.
    gap: Duration,
}

/// A running mock.
pub struct MockAnthropic {
    pub server: MockServer,
    state: Arc<Mutex<State>>,
}

impl MockAnthropic {
    pub async fn start(steps: Vec<Step>) -> MockAnthropic {
        Self::start_paced(steps, Duration::ZERO).await
    }

    /// Like `start`, with `gap` between frames.
    pub async fn start_paced(steps: Vec<Step>, gap: Duration) -> MockAnthropic {
        let state = Arc::new(Mutex::new(State {
            steps: steps.into(),
            gap,
            ..State::default()
        }));
        let s = state.clone();
        let server = MockServer::start(move |req| handle(&mut s.lock().unwrap(), req)).await;
        MockAnthropic { server, state }
    }

    pub fn url(&self) -> String {
        self.server.url.clone()
    }

    /// Adds a step after those the mock started with (a response that
    /// needs what an earlier one showed).
    pub fn push(&self, step: Step) {
        self.state.lock().unwrap().steps.push_back(step);
    }

    /// Every request body received, parsed (key order kept).
    pub fn requests(&self) -> Vec<Value> {
        self.bodies()
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect()
    }

    /// Every request body received, as sent.
    pub fn bodies(&self) -> Vec<String> {
        self.state.lock().unwrap().bodies.clone()
    }

    /// Every message streamed, as the API expects it replayed (JSON text).
    pub fn streamed(&self) -> Vec<String> {
        self.state.lock().unwrap().streamed.clone()
    }
}

fn handle(state: &mut State, req: &Request) -> Reply {
    if req.method != "POST" || req.path != "/v1/messages" {
        return Reply::status(404, error_body("not_found_error", "Not found"));
    }
    state.bodies.push(req.body.clone());
    if req.header("x-api-key") != Some(KEY) {
        return Reply::status(401, error_body("authentication_error", "invalid x-api-key"));
    }
    if req.header("anthropic-version").is_none() {
        return Reply::status(
            400,
            error_body(
                "invalid_request_error",
                "anthropic-version: header is required",
            ),
        );
    }
    let body: Value = match serde_json::from_str(&req.body) {
        Ok(b) => b,
        Err(e) => return Reply::status(400, error_body("invalid_request_error", &e.to_string())),
    };
    if let Err(message) = check(state, &body) {
        return Reply::status(400, error_body("invalid_request_error", &message));
    }
    let Some(step) = state.steps.pop_front() else {
        return Reply::status(500, error_body("api_error", "mock: no response scripted"));
    };
    match step {
        Step::Message { blocks, stop } => Reply::Events {
            frames: stream(state, &blocks, &stop),
            gap: state.gap,
            cut: false,
        },
        Step::CutAfter {
            blocks,
            stop,
            frames,
        } => {
            let mut all = stream(state, &blocks, &stop);
            state.streamed.pop();
            all.truncate(frames);
            Reply::Events {
                frames: all,
                gap: state.gap,
                cut: true,
            }
        }
        Step::Status {
            status,
            headers,
            body,
        } => Reply::Status {
            status,
            headers,
            body,
        },
        Step::Frames(frames) => Reply::Events {
            frames,
            gap: state.gap,
            cut: false,
        },
    }
}

/// Splits text into pieces of at most `n` characters.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// The frames of a streamed message; records what it streamed.
fn stream(state: &mut State, blocks: &[Block], stop: &str) -> Vec<String> {
    let n = state.streamed.len();
    let mut frames = vec![
        frame(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": format!("msg_{n}"), "type": "message", "role": "assistant",
                "model": "claude-mock", "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 100, "cache_creation_input_tokens": 10,
                          "cache_read_input_tokens": 20, "output_tokens": 1}
            }}),
        ),
        frame("ping", &json!({"type": "ping"})),
    ];
    let mut expected = Vec::new();
    let mut index = 0;
    for block in blocks {
        if let Block::Search {
            id,
            query,
            hits,
            error,
        } = block
        {
            let input = json!({"query": query}).to_string();
            frames.push(frame(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "server_tool_use", "id": id, "name": "web_search", "input": {}}}),
            ));
            for p in pieces(&input, input.len().div_ceil(2).max(1)) {
                frames.push(frame(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": p}}),
                ));
            }
            frames.push(frame(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
            expected.push(json!({"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}}));
            let content = match error {
                Some(code) => json!({"type": "web_search_tool_result_error", "error_code": code}),
                None => Value::Array(
                    hits.iter()
                        .enumerate()
                        .map(|(i, (title, url))| {
                            let enc = format!("EqPKCkYIB-{n}-{i}-encrypted");
                            state.encrypted.insert(enc.clone());
                            json!({"type": "web_search_result", "title": title, "url": url,
                                   "encrypted_content": enc, "page_age": "April 30, 2026"})
                        })
                        .collect(),
                ),
            };
            let result =
                json!({"type": "web_search_tool_result", "tool_use_id": id, "content": content});
            frames.push(frame(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index + 1, "content_block": result}),
            ));
            frames.push(frame(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index + 1}),
            ));
            expected.push(result);
            index += 2;
            continue;
        }
        let start = |content_block: Value| {
            frame(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": content_block}),
            )
        };
        let delta = |delta: Value| {
            frame(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        match block {
            Block::Text(t) => {
                frames.push(start(json!({"type": "text", "text": ""})));
                for p in pieces(t, 6) {
                    frames.push(delta(json!({"type": "text_delta", "text": p})));
                }
                expected.push(json!({"type": "text", "text": t}));
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                frames.push(start(
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ));
                for p in pieces(thinking, 6) {
                    frames.push(delta(json!({"type": "thinking_delta", "thinking": p})));
                }
                frames.push(delta(
                    json!({"type": "signature_delta", "signature": signature}),
                ));
                state.signatures.insert(signature.clone(), thinking.clone());
                expected.push(
                    json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                );
            }
            Block::Redacted(data) => {
                frames.push(start(json!({"type": "redacted_thinking", "data": data})));
                state.redacted.insert(data.clone());
                expected.push(json!({"type": "redacted_thinking", "data": data}));
            }
            Block::ToolUse { id, name, input } => {
                frames.push(start(
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                ));
                for p in pieces(input, input.len().div_ceil(3).max(1)) {
                    frames.push(delta(
                        json!({"type": "input_json_delta", "partial_json": p}),
                    ));
                }
                let parsed: Value = serde_json::from_str(input).unwrap_or(json!({}));
                expected.push(json!({"type": "tool_use", "id": id, "name": name, "input": parsed}));
            }
            Block::Search { .. } => {}
        }
        frames.push(frame(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    frames.push(frame(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 50}}),
    ));
    frames.push(frame("message_stop", &json!({"type": "message_stop"})));
    state
        .streamed
        .push(json!({"role": "assistant", "content": expected}).to_string());
    frames
}

const TOP_LEVEL: &[&str] = &[
    "model",
    "max_tokens",
    "messages",
    "system",
    "tools",
    "stream",
    "thinking",
    "tool_choice",
    "metadata",
    "stop_sequences",
    "temperature",
    "top_p",
    "top_k",
    "service_tier",
];

fn allowed_keys(block_type: &str) -> Option<&'static [&'static str]> {
    Some(match block_type {
        "text" => &["type", "text", "citations", "cache_control"],
        "thinking" => &["type", "thinking", "signature"],
        "redacted_thinking" => &["type", "data"],
        "tool_use" => &["type", "id", "name", "input", "cache_control"],
        "image" => &["type", "source", "cache_control"],
        "tool_result" => &[
            "type",
            "tool_use_id",
            "content",
            "is_error",
            "cache_control",
        ],
        "server_tool_use" => &["type", "id", "name", "input", "cache_control"],
        "web_search_tool_result" => &["type", "tool_use_id", "content", "cache_control"],
        _ => return None,
    })
}

/// Whether the request offers the server's web search tool.
fn offers_search(top: &serde_json::Map<String, Value>) -> bool {
    top.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| t.iter().any(|t| t["type"] == "web_search_20250305"))
}

/// The `tools` entries: custom tools, or the server's web search.
fn check_tools(top: &serde_json::Map<String, Value>) -> Result<(), String> {
    for (i, tool) in top
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let keys: &[&str] = match tool.get("type").and_then(Value::as_str) {
            None | Some("custom") => &[
                "type",
                "name",
                "description",
                "input_schema",
                "cache_control",
            ],
            Some("web_search_20250305") if tool["name"] == "web_search" => &[
                "type",
                "name",
                "max_uses",
                "allowed_domains",
                "blocked_domains",
                "user_location",
                "cache_control",
            ],
            Some(other) => {
                return Err(format!(
                    "tools.{i}: Input tag '{other}' found using 'type' does not match any of the expected tags"
                ));
            }
        };
        for key in tool.as_object().map(|o| o.keys()).into_iter().flatten() {
            if !keys.contains(&key.as_str()) {
                return Err(format!("tools.{i}.{key}: Extra inputs are not permitted"));
            }
        }
    }
    Ok(())
}

/// The API's checks, with its error texts.
fn check(state: &State, body: &Value) -> Result<(), String> {
    let Some(top) = body.as_object() else {
        return Err("body: Input should be an object".into());
    };
    check_tools(top)?;
    for key in top.keys() {
        if !TOP_LEVEL.contains(&key.as_str()) {
            return Err(format!("{key}: Extra inputs are not permitted"));
        }
    }
    for required in ["model", "max_tokens", "messages"] {
        if !top.contains_key(required) {
            return Err(format!("{required}: Field required"));
        }
    }
    let messages = top["messages"]
        .as_array()
        .ok_or("messages: Input should be a valid list")?;
    let mut pending: Option<(usize, Vec<String>)> = None;
    for (i, m) in messages.iter().enumerate() {
        let obj = m
            .as_object()
            .ok_or(format!("messages.{i}: Input should be an object"))?;
        for key in obj.keys() {
            if key != "role" && key != "content" {
                return Err(format!(
                    "messages.{i}.{key}: Extra inputs are not permitted"
                ));
            }
        }
        let role = obj.get("role").and_then(Value::as_str).unwrap_or("");
        let content: Vec<Value> = match obj.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => return Err(format!("messages.{i}.content: Field required")),
        };
        for (j, block) in content.iter().enumerate() {
            let t = block.get("type").and_then(Value::as_str).unwrap_or("");
            let Some(keys) = allowed_keys(t) else {
                return Err(format!(
                    "messages.{i}.content.{j}.type: Input tag '{t}' found using 'type' does not match any of the expected tags"
                ));
            };
            for key in block.as_object().unwrap().keys() {
                if !keys.contains(&key.as_str()) {
                    return Err(format!(
                        "messages.{i}.content.{j}.{t}.{key}: Extra inputs are not permitted"
                    ));
                }
            }
            if t == "image" {
                let source = &block["source"];
                if source["type"] != "base64" {
                    return Err(format!(
                        "messages.{i}.content.{j}.image.source: Input tag found using 'type' does not match any of the expected tags: 'base64', 'url'"
                    ));
                }
                if let Some(problem) = super::mock_http::image_problem(
                    source["media_type"].as_str().unwrap_or(""),
                    source["data"].as_str().unwrap_or(""),
                ) {
                    return Err(format!(
                        "messages.{i}.content.{j}.image.source.base64: {problem}"
                    ));
                }
            }
            if t == "text" && block["text"].as_str().is_none_or(|s| s.trim().is_empty()) {
                return Err(format!(
                    "messages.{i}.content.{j}.text: text content blocks must contain non-whitespace text"
                ));
            }
        }
        let results: Vec<(usize, String)> = content
            .iter()
            .enumerate()
            .filter(|(_, b)| b["type"] == "tool_result")
            .map(|(j, b)| (j, b["tool_use_id"].as_str().unwrap_or("").to_owned()))
            .collect();
        let expected = pending.take();
        match (&expected, role) {
            (Some((at, ids)), _) => {
                let answered: Vec<&String> = results.iter().map(|(_, id)| id).collect();
                let missing: Vec<&String> =
                    ids.iter().filter(|id| !answered.contains(id)).collect();
                if role != "user" || !missing.is_empty() {
                    let missing: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                    return Err(format!(
                        "messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                        if missing.is_empty() {
                            ids.join(", ")
                        } else {
                            missing.join(", ")
                        }
                    ));
                }
                for (j, id) in &results {
                    if !ids.contains(id) {
                        return Err(format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                }
                if let Some(first_other) = content.iter().position(|b| b["type"] != "tool_result")
                    && results.iter().any(|(j, _)| *j > first_other)
                {
                    return Err(format!(
                        "messages.{i}: `tool_result` blocks must come first in the user message, before any other content"
                    ));
                }
            }
            (None, _) => {
                if let Some((j, id)) = results.first() {
                    return Err(format!(
                        "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    ));
                }
            }
        }
        if role == "assistant" {
            let mut ids = Vec::new();
            let mut signed = None;
            for (j, block) in content.iter().enumerate() {
                match block["type"].as_str().unwrap_or("") {
                    "tool_use" => {
                        if !block["input"].is_object() {
                            return Err(format!(
                                "messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                            ));
                        }
                        ids.push(block["id"].as_str().unwrap_or("").to_owned());
                    }
                    "thinking" => {
                        let sig = block["signature"].as_str().unwrap_or("");
                        if !state.signatures.contains_key(sig) {
                            return Err(format!(
                                "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                            ));
                        }
                        signed.get_or_insert(j);
                    }
                    "web_search_tool_result" => {
                        for hit in block["content"].as_array().into_iter().flatten() {
                            let enc = hit["encrypted_content"].as_str().unwrap_or("");
                            if !state.encrypted.contains(enc) {
                                return Err(format!(
                                    "messages.{i}.content.{j}: Invalid `encrypted_content` in `web_search_tool_result` block"
                                ));
                            }
                        }
                        if !offers_search(top) {
                            return Err(format!(
                                "messages.{i}.content.{j}: `web_search_tool_result` blocks require the `web_search` tool in `tools`"
                            ));
                        }
                        signed.get_or_insert(j);
                    }
                    "redacted_thinking" => {
                        if !state
                            .redacted
                            .contains(block["data"].as_str().unwrap_or(""))
                        {
                            return Err(format!(
                                "messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
                            ));
                        }
                        signed.get_or_insert(j);
                    }
                    _ => {}
                }
            }
            if let Some(j) = signed
                && !state.streamed.contains(&m.to_string())
            {
                return Err(format!(
                    "messages.{i}.content.{j}: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."
                ));
            }
            if !ids.is_empty() {
                pending = Some((i, ids));
            }
        }
    }
    if let Some((at, ids)) = pending {
        return Err(format!(
            "messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            ids.join(", ")
        ));
    }
    Ok(())
}
