//! OpenAI Chat Completions: `POST {OPENAI_BASE_URL}/chat/completions`,
//! streamed; also every compatible server (Ollama, vLLM, llama.cpp,
//! OpenRouter, gateways).
//!
//! The assistant message is reassembled from `chat.completion.chunk`s:
//! `delta.content` concatenated (and streamed), `delta.tool_calls`
//! gathered by `index` with `arguments` concatenated as the string the
//! model wrote, and every other delta field kept for replay (strings
//! concatenated, arrays extended): `reasoning_content` (DeepSeek, which
//! rejects a history without it), `reasoning`, `refusal`, vendor fields.
//! `reasoning_content`/`reasoning` also stream as thinking. Usage comes from
//! the final chunk (`stream_options.include_usage`).
//!
//! The message is stored as the raw turn and replayed verbatim, except
//! under `RewriteStrategy::InPlace` (allowed here: nothing in this API signs
//! or binds a turn): `history` has then overlaid a hook's effective
//! arguments on the neutral `tool_use` blocks, and for each call whose
//! neutral input differs from its raw `arguments` the raw `arguments`
//! string is replaced by the effective input. Under `Note` (the default)
//! the neutral input is the model's own and the raw turn goes out as
//! received. Tool results are `role: "tool"` messages, one per call, in
//! call order.

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::http::{Assemble, Failure, Http, url};
use super::provider_settings::ProviderSettings;
use super::stream::{ProviderError, StreamDelta};
use crate::conversation::{
    AssistantBlock, AssistantTurn, Message, ModelRequest, ModelStop, Usage, WireApi,
};

/// A session's Chat Completions model.
#[derive(Debug)]
pub struct ChatProvider {
    pub(super) settings: ProviderSettings,
    pub(super) http: Http,
}

impl ChatProvider {
    pub fn new(settings: ProviderSettings) -> Result<Self, String> {
        let http = Http::new(
            "OpenAI",
            "OPENAI_API_KEY",
            settings.api_key.clone(),
            settings.retry,
        )?;
        Ok(Self { settings, http })
    }

    /// The JSON body of a request.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let s = &self.settings;
        let mut body = Map::new();
        body.insert("model".into(), json!(s.model));
        body.insert("messages".into(), Value::Array(messages(request)));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.input_schema
                    }})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(max) = s.max_tokens {
            body.insert("max_completion_tokens".into(), json!(max));
        }
        if let Some(effort) = &s.reasoning_effort {
            body.insert("reasoning_effort".into(), json!(effort));
        }
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        Value::Object(body)
    }

    /// Runs one request (retrying transient failures), streaming text and
    /// reasoning into `deltas`; returns the whole turn or nothing.
    pub async fn stream(
        &self,
        request: &ModelRequest,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, ProviderError> {
        let headers = self.http.bearer(&self.settings.base_url)?;
        let body = self.request_body(request);
        let url = url(&self.settings.base_url, "/chat/completions");
        self.http
            .stream_turn::<Assembler>(&url, headers, &body, deltas)
            .await
    }
}

/// The `messages` of a request: the system prompt, then the history, raw
/// turns verbatim (see the module doc for `InPlace`).
pub fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::new();
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        match message {
            Message::User { text, images } if images.is_empty() => {
                out.push(json!({"role": "user", "content": text}));
            }
            Message::User { text, images } => {
                let mut parts = Vec::new();
                if !text.trim().is_empty() {
                    parts.push(json!({"type": "text", "text": text}));
                }
                parts.extend(images.iter().map(image_part));
                out.push(json!({"role": "user", "content": parts}));
            }
            Message::ToolResults { results } => {
                for r in results {
                    out.push(json!({"role": "tool", "tool_call_id": r.tool_use_id, "content": r.content}));
                }
                // A tool message carries text only: images come next, in a
                // user message that says whose they are.
                let images: Vec<Value> = results
                    .iter()
                    .flat_map(|r| {
                        std::iter::once(json!({"type": "text", "text": format!("[candor] The images the tool call {} answered with:", r.tool_use_id)}))
                            .filter(|_| !r.images.is_empty())
                            .chain(r.images.iter().map(image_part))
                    })
                    .collect();
                if !images.is_empty() {
                    out.push(json!({"role": "user", "content": images}));
                }
            }
            Message::Assistant(turn) => out.push(match turn.raw(WireApi::OpenaiChat) {
                Some(raw) => overlay(raw, turn),
                None => rebuild(turn),
            }),
        }
    }
    out
}

/// An image as a content part: a `data:` URL.
fn image_part(i: &crate::conversation::Image) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", i.media_type, i.data)}})
}

/// The raw message with each call's `arguments` replaced where the neutral
/// input differs from them (an `InPlace` rewrite); else unchanged.
fn overlay(raw: &Value, turn: &AssistantTurn) -> Value {
    let mut raw = raw.clone();
    let Some(calls) = raw.get_mut("tool_calls").and_then(Value::as_array_mut) else {
        return raw;
    };
    for call in calls {
        let Some(id) = call.get("id").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        let Some(input) = turn
            .tool_uses()
            .find(|(i, _, _)| *i == id)
            .map(|(_, _, input)| input)
        else {
            continue;
        };
        let Some(arguments) = call.pointer_mut("/function/arguments") else {
            continue;
        };
        let written = arguments.as_str().map(parse_arguments);
        if written.as_ref() != Some(input) {
            *arguments = Value::String(input.to_string());
        }
    }
    raw
}

/// A turn without a Chat Completions raw turn, from its neutral blocks
/// (thinking is not sent).
fn rebuild(turn: &AssistantTurn) -> Value {
    let text: String = turn
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = turn
        .tool_uses()
        .map(|(id, name, input)| {
            let arguments = match input {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    if calls.is_empty() {
        message.insert("content".into(), json!(text));
    } else {
        message.insert(
            "content".into(),
            if text.is_empty() {
                Value::Null
            } else {
                json!(text)
            },
        );
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// The model's `arguments` as a value: the parsed JSON, `{}` when empty,
/// else the string itself (candor's checks then refuse the call).
pub fn parse_arguments(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// One tool call as it streams in.
#[derive(Debug, Default)]
struct Call {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    /// Fields besides `id`, `type` and `function` (kept for replay).
    extra: Map<String, Value>,
}

/// Reassembles one streamed assistant message.
#[derive(Debug, Default)]
pub struct Assembler {
    content: String,
    /// Delta fields other than `role`, `content` and `tool_calls`, merged.
    extra: Map<String, Value>,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

const EVENT: &str = "chat.completion.chunk";

impl Assembler {
    /// Applies one event's data; `true` at `[DONE]`.
    pub(super) fn on_data(
        &mut self,
        http: &Http,
        data: &str,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<bool, Failure> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk = http.parse(EVENT, data)?;
        if let Some(error) = chunk.get("error") {
            return Err(http.stream_error(error));
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: n("/prompt_tokens"),
                output_tokens: n("/completion_tokens"),
                cache_read_tokens: n("/prompt_tokens_details/cached_tokens"),
                cache_write_tokens: 0,
            });
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Err(http.malformed(
                EVENT,
                format!("it has no `choices`: {}", super::http::clip(data)),
            ));
        };
        // candor asks for one choice.
        let Some(choice) = choices.first() else {
            return Ok(false);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta").and_then(Value::as_object) else {
            return Ok(false);
        };
        for (key, value) in delta {
            match (key.as_str(), value) {
                (_, Value::Null) | ("role", _) => {}
                ("content", Value::String(text)) => {
                    if !text.is_empty() {
                        self.content.push_str(text);
                        let _ = deltas.send(StreamDelta::Text(text.clone()));
                    }
                }
                ("tool_calls", Value::Array(calls)) => {
                    for (position, call) in calls.iter().enumerate() {
                        self.on_call(http, position, call)?;
                    }
                }
                ("content" | "tool_calls", other) => {
                    return Err(http.malformed(
                        EVENT,
                        format!("`delta.{key}` is not what the API sends: {other}"),
                    ));
                }
                (key, value) => {
                    if let ("reasoning_content" | "reasoning", Value::String(text)) = (key, value)
                        && !text.is_empty()
                    {
                        let _ = deltas.send(StreamDelta::Thinking(text.clone()));
                    }
                    merge(&mut self.extra, key, value);
                }
            }
        }
        Ok(false)
    }

    fn on_call(&mut self, http: &Http, position: usize, call: &Value) -> Result<(), Failure> {
        let Some(fields) = call.as_object() else {
            return Err(http.malformed(EVENT, "a `tool_calls` entry is not an object"));
        };
        let index = fields
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        let at = match self.calls.iter().position(|c| c.index == index) {
            Some(at) => at,
            None => {
                self.calls.push(Call {
                    index,
                    ..Call::default()
                });
                self.calls.len() - 1
            }
        };
        let acc = &mut self.calls[at];
        for (key, value) in fields {
            match (key.as_str(), value) {
                ("index" | "type", _) | (_, Value::Null) => {}
                ("id", Value::String(id)) => {
                    if acc.id.is_empty() {
                        acc.id = id.clone();
                    }
                }
                ("function", Value::Object(f)) => {
                    if let Some(name) = f.get("name").and_then(Value::as_str)
                        && acc.name.is_empty()
                    {
                        acc.name = name.to_owned();
                    }
                    match f.get("arguments") {
                        Some(Value::String(part)) => acc.arguments.push_str(part),
                        // A few servers send the arguments as an object.
                        Some(Value::Object(o)) if acc.arguments.is_empty() => {
                            acc.arguments = Value::Object(o.clone()).to_string();
                        }
                        _ => {}
                    }
                }
                (key, value) => merge(&mut acc.extra, key, value),
            }
        }
        Ok(())
    }

    /// The whole turn, once the stream has ended properly.
    pub(super) fn finish(self, http: &Http) -> Result<AssistantTurn, Failure> {
        if !self.done && self.finish.is_none() {
            return Err(Failure::cut("the stream ended before `finish_reason`"));
        }
        let mut calls = Vec::new();
        let mut uses = Vec::new();
        for (n, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(http.malformed(
                    EVENT,
                    format!("tool call {} has no function name", call.index),
                ));
            }
            // Some local servers send no id; the one given here is recorded.
            let id = if call.id.is_empty() {
                format!("call_candor_{n}")
            } else {
                call.id
            };
            let mut raw = Map::new();
            raw.insert("id".into(), json!(id));
            raw.insert("type".into(), json!("function"));
            raw.insert(
                "function".into(),
                json!({"name": call.name, "arguments": call.arguments}),
            );
            raw.extend(call.extra);
            calls.push(Value::Object(raw));
            uses.push(AssistantBlock::ToolUse {
                id,
                name: call.name,
                input: parse_arguments(&call.arguments),
            });
        }
        let refusal = self
            .extra
            .get("refusal")
            .and_then(Value::as_str)
            .is_some_and(|r| !r.is_empty());
        let stop = match self.finish.as_deref() {
            _ if refusal => ModelStop::Refusal,
            Some("length") => ModelStop::MaxTokens,
            Some("content_filter") => ModelStop::Refusal,
            _ if !calls.is_empty() => ModelStop::ToolUse,
            _ => ModelStop::EndTurn,
        };
        let reasoning: String = ["reasoning_content", "reasoning"]
            .iter()
            .filter_map(|k| self.extra.get(*k).and_then(Value::as_str))
            .collect();
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        message.insert(
            "content".into(),
            if self.content.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                json!(self.content)
            },
        );
        message.extend(self.extra);
        if !calls.is_empty() {
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut content = Vec::new();
        if !reasoning.is_empty() {
            content.push(AssistantBlock::Thinking {
                thinking: reasoning,
                signature: None,
            });
        }
        if !self.content.is_empty() {
            content.push(AssistantBlock::Text { text: self.content });
        }
        content.extend(uses);
        content.push(AssistantBlock::Raw {
            api: WireApi::OpenaiChat,
            turn: Value::Object(message),
            usage: self.usage,
        });
        Ok(AssistantTurn { content, stop })
    }
}

/// Merges a streamed field: strings concatenate, arrays extend, anything
/// else replaces.
fn merge(into: &mut Map<String, Value>, key: &str, value: &Value) {
    match (into.get_mut(key), value) {
        (Some(Value::String(have)), Value::String(more)) => have.push_str(more),
        (Some(Value::Array(have)), Value::Array(more)) => have.extend(more.iter().cloned()),
        _ => {
            into.insert(key.to_owned(), value.clone());
        }
    }
}

impl Assemble for Assembler {
    fn apply(
        &mut self,
        http: &Http,
        _event: &str,
        data: &str,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<bool, Failure> {
        self.on_data(http, data, deltas)
    }

    fn finish(self, http: &Http) -> Result<AssistantTurn, Failure> {
        Assembler::finish(self, http)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http() -> Http {
        Http::new("OpenAI", "OPENAI_API_KEY", None, Default::default()).unwrap()
    }

    #[test]
    fn reassembles_calls_by_index_and_keeps_unknown_fields() {
        let http = http();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut a = Assembler::default();
        for chunk in [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Hm, "}}]}),
            json!({"choices":[{"index":0,"delta":{"reasoning_content":"ls."}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"Sure."}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Bash","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}}),
        ] {
            assert!(!a.on_data(&http, &chunk.to_string(), &tx).unwrap());
        }
        assert!(a.on_data(&http, "[DONE]", &tx).unwrap());
        let turn = a.finish(&http).unwrap();
        assert_eq!(turn.stop, ModelStop::ToolUse);
        assert_eq!(
            turn.raw(WireApi::OpenaiChat).unwrap().to_string(),
            r#"{"role":"assistant","content":"Sure.","reasoning_content":"Hm, ls.","tool_calls":[{"id":"call_a","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]}"#
        );
        assert_eq!(turn.usage().unwrap().cache_read_tokens, 2);
        let deltas: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(deltas[0], StreamDelta::Thinking("Hm, ".into()));
        assert_eq!(deltas[2], StreamDelta::Text("Sure.".into()));
    }

    #[test]
    fn in_place_overlays_only_changed_arguments() {
        let raw = json!({"role":"assistant","content":null,"tool_calls":[
            {"id":"a","type":"function","function":{"name":"Bash","arguments":"{\"command\": \"git status\"}"}},
            {"id":"b","type":"function","function":{"name":"Bash","arguments":"{\"command\": \"ls\"}"}}
        ]});
        let turn = AssistantTurn {
            content: vec![
                AssistantBlock::ToolUse {
                    id: "a".into(),
                    name: "Bash".into(),
                    input: json!({"command": "rtk git status"}),
                },
                AssistantBlock::ToolUse {
                    id: "b".into(),
                    name: "Bash".into(),
                    input: json!({"command": "ls"}),
                },
            ],
            stop: ModelStop::ToolUse,
        };
        let out = overlay(&raw, &turn);
        assert_eq!(
            out["tool_calls"][0]["function"]["arguments"],
            json!("{\"command\":\"rtk git status\"}")
        );
        // Unchanged calls keep the model's exact string (spacing included).
        assert_eq!(
            out["tool_calls"][1]["function"]["arguments"],
            json!("{\"command\": \"ls\"}")
        );
    }

    #[test]
    fn a_stream_cut_before_finish_is_retried() {
        let http = http();
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut a = Assembler::default();
        a.on_data(
            &http,
            &json!({"choices":[{"index":0,"delta":{"content":"x"}}]}).to_string(),
            &tx,
        )
        .unwrap();
        assert!(matches!(a.finish(&http), Err(Failure::Retry { .. })));
    }
}
