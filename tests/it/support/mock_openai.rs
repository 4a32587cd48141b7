//! Mocks of OpenAI's Chat Completions (`POST /chat/completions`) and
//! Responses (`POST /responses`) APIs, streamed, that check requests the way
//! the real APIs do (`shared/reference/providers.md` §3, §7) and answer with
//! their error texts:
//!
//! - the key (`Authorization: Bearer`); a wrong key gets OpenAI's 401, which
//!   echoes part of the key (candor must not pass that on);
//! - no unknown request fields;
//! - Chat: every `tool_call_id` answered by `tool` messages right after its
//!   assistant message, `arguments` strings, and (DeepSeek style, when asked)
//!   `reasoning_content` sent back on the messages that had it;
//! - Responses: `store: false`; a `reasoning` item right before the
//!   `function_call` it produced and never last; `encrypted_content`
//!   unchanged; every `function_call` answered by a `function_call_output`,
//!   none without its call; a `web_search_call` item exactly as streamed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::mock_http::{MockServer, Reply, Request, data_frame, frame};

/// The key the mocks accept.
pub const KEY: &str = "sk-test-ABCDEFGH12345678";

/// OpenAI's error body.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

/// One tool call of a scripted response: id, name, `arguments` text.
pub type Call = (&'static str, &'static str, &'static str);

/// What a mock does with one request (after checking it).
#[derive(Debug, Clone)]
pub enum Step {
    /// Chat: streams reasoning (as `reasoning_content`), text and calls,
    /// ending with `finish` (`stop`, `tool_calls`, `length`, …).
    Chat {
        reasoning: String,
        text: String,
        calls: Vec<Call>,
        finish: String,
    },
    /// Responses: streams a reasoning item (when `reasoning` is not empty),
    /// a message with `text` (when not empty) and the calls; `incomplete`
    /// ends it `response.incomplete` with that reason.
    Responses {
        reasoning: String,
        text: String,
        calls: Vec<Call>,
        incomplete: Option<String>,
    },
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// These frames as they are; `cut` drops the connection after them.
    Frames { frames: Vec<String>, cut: bool },
    /// Responses: a `web_search_call` (its query and the sources found,
    /// when the request asked for them), then a message citing the sources
    /// (`url_citation` annotations with their titles).
    ResponsesSearch {
        query: String,
        sources: Vec<(String, String)>,
        text: String,
    },
}

pub fn responses_search(query: &str, sources: &[(&str, &str)], text: &str) -> Step {
    Step::ResponsesSearch {
        query: query.into(),
        sources: sources
            .iter()
            .map(|(t, u)| ((*t).to_owned(), (*u).to_owned()))
            .collect(),
        text: text.into(),
    }
}

pub fn chat(text: &str, calls: Vec<Call>, finish: &str) -> Step {
    Step::Chat {
        reasoning: String::new(),
        text: text.into(),
        calls,
        finish: finish.into(),
    }
}

pub fn responses(reasoning: &str, text: &str, calls: Vec<Call>) -> Step {
    Step::Responses {
        reasoning: reasoning.into(),
        text: text.into(),
        calls,
        incomplete: None,
    }
}

#[derive(Default)]
struct State {
    steps: VecDeque<Step>,
    bodies: Vec<String>,
    /// Chat: tool_call id → the reasoning_content of its message.
    reasoning_of_call: HashMap<String, String>,
    require_reasoning_content: bool,
    /// Responses: reasoning id → encrypted content.
    encrypted: HashMap<String, String>,
    /// Responses: function_call item id → the reasoning item id before it.
    reasoning_before: HashMap<String, String>,
    responses: usize,
    /// Responses: web_search_call id → the item as streamed.
    searches: HashMap<String, Value>,
    /// Whether the last Responses request asked for the search sources.
    wants_sources: bool,
}

/// A running mock of either API.
pub struct MockOpenai {
    pub server: MockServer,
    state: Arc<Mutex<State>>,
}

impl MockOpenai {
    pub async fn start(steps: Vec<Step>) -> MockOpenai {
        Self::start_with(steps, false).await
    }

    /// With `require_reasoning_content`, Chat requests must send
    /// `reasoning_content` back on assistant messages that had it (DeepSeek).
    pub async fn start_with(steps: Vec<Step>, require_reasoning_content: bool) -> MockOpenai {
        let state = Arc::new(Mutex::new(State {
            steps: steps.into(),
            require_reasoning_content,
            ..State::default()
        }));
        let s = state.clone();
        let server = MockServer::start(move |req| handle(&mut s.lock().unwrap(), req)).await;
        MockOpenai { server, state }
    }

    /// The base URL (`…/v1`).
    pub fn url(&self) -> String {
        format!("{}/v1", self.server.url)
    }

    pub fn requests(&self) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .bodies
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect()
    }

    pub fn bodies(&self) -> Vec<String> {
        self.state.lock().unwrap().bodies.clone()
    }
}

fn handle(state: &mut State, req: &Request) -> Reply {
    let chat = match (req.method.as_str(), req.path.as_str()) {
        ("POST", "/v1/chat/completions") => true,
        ("POST", "/v1/responses") => false,
        _ => return Reply::status(404, error_body("Not found", "invalid_request_error", None)),
    };
    state.bodies.push(req.body.clone());
    if req.header("authorization") != Some(&format!("Bearer {KEY}")) {
        let shown = req
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(|k| {
                format!(
                    "{}****{}",
                    &k[..k.len().min(7)],
                    &k[k.len().saturating_sub(4)..]
                )
            })
            .unwrap_or_default();
        return Reply::status(
            401,
            error_body(
                &format!(
                    "Incorrect API key provided: {shown}. You can find your API key at https://platform.openai.com/account/api-keys."
                ),
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
        );
    }
    let body: Value = match serde_json::from_str(&req.body) {
        Ok(b) => b,
        Err(e) => {
            return Reply::status(
                400,
                error_body(&e.to_string(), "invalid_request_error", None),
            );
        }
    };
    let checked = if chat {
        check_chat(state, &body)
    } else {
        check_responses(state, &body)
    };
    if let Err(message) = checked {
        return Reply::status(400, error_body(&message, "invalid_request_error", None));
    }
    let Some(step) = state.steps.pop_front() else {
        return Reply::status(
            500,
            error_body("mock: no response scripted", "server_error", None),
        );
    };
    match step {
        Step::Chat {
            reasoning,
            text,
            calls,
            finish,
        } => Reply::events(chat_frames(state, &reasoning, &text, &calls, &finish)),
        Step::Responses {
            reasoning,
            text,
            calls,
            incomplete,
        } => Reply::events(response_frames(
            state, &reasoning, &text, &calls, incomplete,
        )),
        Step::Status {
            status,
            headers,
            body,
        } => Reply::Status {
            status,
            headers,
            body,
        },
        Step::ResponsesSearch {
            query,
            sources,
            text,
        } => Reply::events(search_frames(state, &query, &sources, &text)),
        Step::Frames { frames, cut } => Reply::Events {
            frames,
            gap: std::time::Duration::ZERO,
            cut,
        },
    }
}

fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    data_frame(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-mock",
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        .to_string(),
    )
}

fn chat_frames(
    state: &mut State,
    reasoning: &str,
    text: &str,
    calls: &[Call],
    finish: &str,
) -> Vec<String> {
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for p in pieces(reasoning, 5) {
        frames.push(chunk(json!({"reasoning_content": p}), None));
    }
    for p in pieces(text, 5) {
        frames.push(chunk(json!({"content": p}), None));
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        for p in pieces(arguments, arguments.len().div_ceil(3)) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": p}}]}),
                None,
            ));
        }
        if !reasoning.is_empty() {
            state
                .reasoning_of_call
                .insert((*id).to_owned(), reasoning.to_owned());
        }
    }
    frames.push(chunk(json!({}), Some(finish)));
    frames.push(data_frame(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                          "prompt_tokens_details": {"cached_tokens": 64}}})
        .to_string(),
    ));
    frames.push(data_frame("[DONE]"));
    frames
}

const CHAT_TOP: &[&str] = &[
    "model",
    "messages",
    "tools",
    "stream",
    "stream_options",
    "max_completion_tokens",
    "max_tokens",
    "reasoning_effort",
    "temperature",
    "tool_choice",
    "parallel_tool_calls",
    "user",
];

fn check_chat(state: &State, body: &Value) -> Result<(), String> {
    let top = body.as_object().ok_or("body must be an object")?;
    for key in top.keys() {
        if !CHAT_TOP.contains(&key.as_str()) {
            return Err(format!("Unrecognized request argument supplied: {key}"));
        }
    }
    let messages = top
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("Missing required parameter: 'messages'.")?;
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        let role = m["role"].as_str().unwrap_or("");
        match role {
            "user" => {
                if let Some(parts) = m["content"].as_array() {
                    for (j, part) in parts.iter().enumerate() {
                        match part["type"].as_str() {
                            Some("text") if part["text"].is_string() => {}
                            Some("image_url") => {
                                if let Some(problem) = super::mock_http::data_url_problem(
                                    part.pointer("/image_url/url")
                                        .and_then(Value::as_str)
                                        .unwrap_or(""),
                                ) {
                                    return Err(format!("messages[{i}].content[{j}]: {problem}"));
                                }
                            }
                            _ => {
                                return Err(format!(
                                    "Invalid value for 'messages[{i}].content[{j}]': {part}"
                                ));
                            }
                        }
                    }
                } else if !m["content"].is_string() {
                    return Err(format!("Invalid type for 'messages[{i}].content'."));
                }
            }
            "system" | "developer" => {}
            "tool" => {
                return Err("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".into());
            }
            "assistant" => {
                let calls = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let mut ids = Vec::new();
                for (j, call) in calls.iter().enumerate() {
                    if !call
                        .pointer("/function/arguments")
                        .is_some_and(Value::is_string)
                    {
                        return Err(format!(
                            "Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': expected a string, but got {} instead.",
                            call.pointer("/function/arguments")
                                .map(kind)
                                .unwrap_or("nothing")
                        ));
                    }
                    let id = call["id"].as_str().unwrap_or("").to_owned();
                    if state.require_reasoning_content
                        && let Some(reasoning) = state.reasoning_of_call.get(&id)
                        && m.get("reasoning_content").and_then(Value::as_str) != Some(reasoning)
                    {
                        return Err("The reasoning_content in the thinking mode must be passed back to the API.".into());
                    }
                    ids.push(id);
                }
                let mut answered = Vec::new();
                while let Some(next) = messages.get(i + 1)
                    && next["role"] == "tool"
                {
                    let id = next["tool_call_id"].as_str().unwrap_or("").to_owned();
                    if !ids.contains(&id) {
                        return Err(format!(
                            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. Unknown tool_call_id: {id}"
                        ));
                    }
                    answered.push(id);
                    i += 1;
                }
                let missing: Vec<&str> = ids
                    .iter()
                    .filter(|id| !answered.contains(id))
                    .map(String::as_str)
                    .collect();
                if !missing.is_empty() {
                    return Err(format!(
                        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                        missing.join(", ")
                    ));
                }
            }
            other => {
                return Err(format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'developer'."
                ));
            }
        }
        i += 1;
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
    }
}

fn response_frames(
    state: &mut State,
    reasoning: &str,
    text: &str,
    calls: &[Call],
    incomplete: Option<String>,
) -> Vec<String> {
    let n = state.responses;
    state.responses += 1;
    let mut seq = 0;
    let mut ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        frame(name, &data)
    };
    let mut frames = vec![ev(
        "response.created",
        json!({"response": {"id": format!("resp_{n}"), "status": "in_progress", "output": []}}),
    )];
    let mut output = Vec::new();
    let mut reasoning_id = None;
    if !reasoning.is_empty() {
        let id = format!("rs_{n}");
        let encrypted = format!("gAAAA-encrypted-{n}-{}", reasoning.len());
        let index = output.len();
        frames.push(ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
        ));
        for p in pieces(reasoning, 5) {
            frames.push(ev(
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": p}),
            ));
        }
        let item = json!({"id": id, "type": "reasoning", "summary": [{"type": "summary_text", "text": reasoning}], "encrypted_content": encrypted});
        frames.push(ev(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        state.encrypted.insert(id.clone(), encrypted);
        reasoning_id = Some(id);
        output.push(item);
    }
    if !text.is_empty() {
        let id = format!("msg_{n}");
        let index = output.len();
        frames.push(ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        ));
        for p in pieces(text, 5) {
            frames.push(ev(
                "response.output_text.delta",
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": p}),
            ));
        }
        let item = json!({"id": id, "type": "message", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "annotations": [], "text": text}]});
        frames.push(ev(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        output.push(item);
    }
    for (k, (call_id, name, arguments)) in calls.iter().enumerate() {
        let id = format!("fc_{n}_{k}");
        let index = output.len();
        frames.push(ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "in_progress", "call_id": call_id, "name": name, "arguments": ""}}),
        ));
        for p in pieces(arguments, arguments.len().div_ceil(3)) {
            frames.push(ev(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": p}),
            ));
        }
        let item = json!({"id": id, "type": "function_call", "status": "completed", "arguments": arguments, "call_id": call_id, "name": name});
        frames.push(ev(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
        if let Some(rs) = &reasoning_id {
            state.reasoning_before.insert(id, rs.clone());
        }
        output.push(item);
    }
    let usage = json!({"input_tokens": 200, "input_tokens_details": {"cached_tokens": 128},
                       "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 16}, "total_tokens": 240});
    frames.push(match incomplete {
        Some(reason) => ev(
            "response.incomplete",
            json!({"response": {"id": format!("resp_{n}"), "status": "incomplete",
                                "incomplete_details": {"reason": reason}, "output": output, "usage": usage}}),
        ),
        None => ev(
            "response.completed",
            json!({"response": {"id": format!("resp_{n}"), "status": "completed", "output": output, "usage": usage}}),
        ),
    });
    frames
}

fn search_frames(
    state: &mut State,
    query: &str,
    sources: &[(String, String)],
    text: &str,
) -> Vec<String> {
    let n = state.responses;
    state.responses += 1;
    let mut seq = 0;
    let mut ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        frame(name, &data)
    };
    let id = format!("ws_{n}");
    let mut action = json!({"type": "search", "query": query});
    if state.wants_sources {
        action["sources"] = sources
            .iter()
            .map(|(_, url)| json!({"type": "url", "url": url}))
            .collect();
    }
    let search =
        json!({"id": id, "type": "web_search_call", "status": "completed", "action": action});
    let mut frames = vec![
        ev(
            "response.created",
            json!({"response": {"id": format!("resp_{n}"), "status": "in_progress", "output": []}}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": id, "type": "web_search_call", "status": "in_progress"}}),
        ),
        ev(
            "response.web_search_call.in_progress",
            json!({"output_index": 0, "item_id": id}),
        ),
        ev(
            "response.web_search_call.searching",
            json!({"output_index": 0, "item_id": id}),
        ),
        ev(
            "response.web_search_call.completed",
            json!({"output_index": 0, "item_id": id}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 0, "item": search}),
        ),
    ];
    state.searches.insert(id, search.clone());
    let annotations: Vec<Value> = sources
        .iter()
        .map(|(title, url)| json!({"type": "url_citation", "start_index": 0, "end_index": text.len(), "url": url, "title": title}))
        .collect();
    let message = json!({"id": format!("msg_{n}"), "type": "message", "status": "completed", "role": "assistant",
                         "content": [{"type": "output_text", "annotations": annotations, "text": text}]});
    frames.push(ev("response.output_text.delta", json!({"item_id": format!("msg_{n}"), "output_index": 1, "content_index": 0, "delta": text})));
    frames.push(ev(
        "response.output_item.done",
        json!({"output_index": 1, "item": message}),
    ));
    frames.push(ev(
        "response.completed",
        json!({"response": {"id": format!("resp_{n}"), "status": "completed", "output": [search, message],
               "usage": {"input_tokens": 200, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 40, "total_tokens": 240}}}),
    ));
    frames
}

const RESPONSES_TOP: &[&str] = &[
    "model",
    "input",
    "instructions",
    "tools",
    "stream",
    "store",
    "include",
    "max_output_tokens",
    "reasoning",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "text",
    "truncation",
    "metadata",
    "user",
];

fn item_keys(t: &str) -> Option<&'static [&'static str]> {
    Some(match t {
        "message" => &["type", "role", "content", "id", "status"],
        "function_call" => &["type", "id", "call_id", "name", "arguments", "status"],
        "function_call_output" => &["type", "call_id", "output", "id", "status"],
        "reasoning" => &[
            "type",
            "id",
            "summary",
            "content",
            "encrypted_content",
            "status",
        ],
        "web_search_call" => &["type", "id", "status", "action"],
        _ => return None,
    })
}

fn check_responses(state: &mut State, body: &Value) -> Result<(), String> {
    let top = body.as_object().ok_or("body must be an object")?;
    state.wants_sources = top
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|i| i.contains(&json!("web_search_call.action.sources")));
    for (i, tool) in top
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        match tool["type"].as_str() {
            Some("function") => {}
            Some("web_search") if tool.as_object().is_some_and(|o| o.len() == 1) => {}
            _ => return Err(format!("Invalid value for 'tools[{i}]': {tool}")),
        }
    }
    for key in top.keys() {
        if !RESPONSES_TOP.contains(&key.as_str()) {
            return Err(format!("Unknown parameter: '{key}'."));
        }
    }
    if top.get("store") != Some(&json!(false)) {
        return Err("mock: candor must send `store: false`".into());
    }
    let input = top
        .get("input")
        .and_then(Value::as_array)
        .ok_or("Missing required parameter: 'input'.")?;
    let mut calls: Vec<String> = Vec::new();
    let mut outputs: Vec<String> = Vec::new();
    for (n, item) in input.iter().enumerate() {
        let t = item["type"].as_str().unwrap_or("");
        let keys = item_keys(t).ok_or(format!("Invalid value: '{t}'. Supported values are: 'message', 'function_call', 'function_call_output', 'reasoning'."))?;
        for key in item.as_object().unwrap().keys() {
            if !keys.contains(&key.as_str()) {
                return Err(format!("Unknown parameter: 'input[{n}].{key}'."));
            }
        }
        let id = item["id"].as_str().unwrap_or("");
        match t {
            "reasoning" => {
                let next = input.get(n + 1);
                let next_type = next.and_then(|x| x["type"].as_str()).unwrap_or("");
                if next.is_none()
                    || next_type == "function_call_output"
                    || (next_type == "message" && next.unwrap()["role"] == "user")
                {
                    return Err(format!(
                        "Item '{id}' of type 'reasoning' was provided without its required following item."
                    ));
                }
                match state.encrypted.get(id) {
                    Some(enc)
                        if item.get("encrypted_content").and_then(Value::as_str) == Some(enc) => {}
                    Some(_) => {
                        return Err(format!(
                            "The encrypted content for item {id} could not be verified. (invalid_encrypted_content)"
                        ));
                    }
                    None => {
                        return Err(format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                        ));
                    }
                }
            }
            "function_call" => {
                if !item["arguments"].is_string() {
                    return Err(format!(
                        "Invalid type for 'input[{n}].arguments': expected a string, but got {} instead.",
                        kind(&item["arguments"])
                    ));
                }
                if let Some(rs) = state.reasoning_before.get(id) {
                    let mut k = n;
                    let mut found = false;
                    while k > 0 {
                        k -= 1;
                        match input[k]["type"].as_str() {
                            Some("reasoning") if input[k]["id"] == json!(rs) => {
                                found = true;
                                break;
                            }
                            Some("function_call") | Some("reasoning") => continue,
                            Some("message") if input[k]["role"] == "assistant" => continue,
                            _ => break,
                        }
                    }
                    if !found {
                        return Err(format!(
                            "Item '{id}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
                        ));
                    }
                }
                calls.push(item["call_id"].as_str().unwrap_or("").to_owned());
            }
            "message" if item["role"] == "user" => {
                for (j, part) in item["content"].as_array().into_iter().flatten().enumerate() {
                    match part["type"].as_str() {
                        Some("input_text") if part["text"].is_string() => {}
                        Some("input_image") => {
                            if let Some(problem) = super::mock_http::data_url_problem(
                                part["image_url"].as_str().unwrap_or(""),
                            ) {
                                return Err(format!("input[{n}].content[{j}]: {problem}"));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "Invalid value: 'input[{n}].content[{j}]': {part}"
                            ));
                        }
                    }
                }
            }
            "web_search_call" => match state.searches.get(id) {
                Some(streamed) if streamed == item => {}
                Some(_) => {
                    return Err(format!(
                        "Item '{id}' of type 'web_search_call' does not match the item the API returned."
                    ));
                }
                None => {
                    return Err(format!(
                        "Item with id '{id}' not found. Items are not persisted when `store` is set to false."
                    ));
                }
            },
            "function_call_output" => {
                let call_id = item["call_id"].as_str().unwrap_or("").to_owned();
                if !calls.contains(&call_id) {
                    return Err(format!(
                        "No tool call found for function call output with call_id {call_id}."
                    ));
                }
                outputs.push(call_id);
            }
            _ => {}
        }
    }
    if let Some(unanswered) = calls.iter().find(|c| !outputs.contains(c)) {
        return Err(format!(
            "No tool output found for function call {unanswered}."
        ));
    }
    Ok(())
}
