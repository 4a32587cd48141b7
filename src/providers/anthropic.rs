//! Anthropic Messages: `POST {ANTHROPIC_BASE_URL}/v1/messages`, streamed.
//!
//! The stream is reassembled block by block, exactly: `text_delta`s and
//! `thinking_delta`s are concatenated (and streamed to the client as they
//! come), `signature_delta`s concatenated verbatim, `input_json_delta`s
//! concatenated and parsed once when the block stops (key order kept),
//! `redacted_thinking` taken whole from its start event, unknown blocks kept
//! as they started. The result is stored as the raw turn
//! `{"role":"assistant","content":[…]}` and sent back byte for byte in later
//! requests: Anthropic rejects a modified thinking block, and on models that
//! bind thinking to the conversation any change to an earlier turn
//! invalidates it. So hook rewrites are told by a note (`RewriteStrategy::Note`),
//! never by editing a `tool_use`.
//!
//! Tool results go in the next user message, `tool_result` blocks first
//! (text after them), with `input` always an object. Usage comes from
//! `message_start` and the cumulative `message_delta`.

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::http::{Assemble, Failure, Http, header, url};
use super::provider_settings::ProviderSettings;
use super::stream::{ProviderError, StreamDelta};
use crate::conversation::{
    AssistantBlock, AssistantTurn, Image, Message, ModelRequest, ModelStop, ToolOutcome, Usage,
    WireApi,
};

/// `max_tokens` when none is configured (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 16_384;
/// The API version candor speaks.
pub const API_VERSION: &str = "2023-06-01";
/// The server-side web search tool's version.
pub const WEB_SEARCH_TOOL: &str = "web_search_20250305";
/// The most searches one response may run.
pub const WEB_SEARCH_MAX_USES: u32 = 5;

/// A session's Anthropic model.
#[derive(Debug)]
pub struct AnthropicProvider {
    pub(super) settings: ProviderSettings,
    pub(super) http: Http,
}

impl AnthropicProvider {
    pub fn new(settings: ProviderSettings) -> Result<Self, String> {
        let http = Http::new(
            "Anthropic",
            "ANTHROPIC_API_KEY",
            settings.api_key.clone(),
            settings.retry,
        )?;
        Ok(Self { settings, http })
    }

    /// The JSON body of a request.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let s = &self.settings;
        let mut max_tokens = s.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        if let Some(budget) = s.thinking_budget
            && budget >= max_tokens
        {
            max_tokens = budget.saturating_add(4_096);
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(s.model));
        body.insert("max_tokens".into(), json!(max_tokens));
        if !request.system.is_empty() {
            body.insert("system".into(), json!(request.system));
        }
        body.insert("messages".into(), Value::Array(messages(request)));
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "description": t.description, "input_schema": t.input_schema})
            })
            .collect();
        if request.web_search {
            tools.push(json!({"type": WEB_SEARCH_TOOL, "name": "web_search", "max_uses": WEB_SEARCH_MAX_USES}));
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(budget) = s.thinking_budget {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        body.insert("stream".into(), json!(true));
        Value::Object(body)
    }

    /// Runs one request (retrying transient failures), streaming text and
    /// thinking into `deltas`; returns the whole turn or nothing.
    pub async fn stream(
        &self,
        request: &ModelRequest,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, ProviderError> {
        let Some(key) = self.http.key_header("")? else {
            return Err(self.http.missing_key());
        };
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("x-api-key", key);
        header(&mut headers, "anthropic-version", API_VERSION);
        let body = self.request_body(request);
        let url = url(&self.settings.base_url, "/v1/messages");
        self.http
            .stream_turn::<Assembler>(&url, headers, &body, deltas)
            .await
    }
}

/// The `messages` of a request: raw turns verbatim, tool results first in
/// the next user message.
pub fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text, images } => {
                // Images first, then the words (as Anthropic advises).
                let mut blocks: Vec<Value> = images.iter().map(image_block).collect();
                if !text.trim().is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                } else if blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": "(empty message)"}));
                }
                push_user(&mut out, blocks);
            }
            Message::ToolResults { results } => {
                push_user(&mut out, results.iter().map(tool_result).collect());
            }
            Message::Assistant(turn) => match turn.raw(WireApi::Anthropic) {
                Some(raw) => out.push(raw.clone()),
                None => {
                    let content = rebuild(turn);
                    if !content.is_empty() {
                        out.push(json!({"role": "assistant", "content": content}));
                    }
                }
            },
        }
    }
    // One cache breakpoint at the end of the conversation so far: the next
    // request reads everything up to here from the prompt cache.
    if let Some(last) = out.last_mut()
        && last.get("role").and_then(Value::as_str) == Some("user")
        && let Some(block) = last
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|c| c.last_mut())
            .and_then(Value::as_object_mut)
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    out
}

/// Appends blocks to the user message at the end, or starts one.
fn push_user(out: &mut Vec<Value>, blocks: Vec<Value>) {
    if let Some(last) = out.last_mut()
        && last.get("role").and_then(Value::as_str) == Some("user")
        && let Some(content) = last.get_mut("content").and_then(Value::as_array_mut)
    {
        content.extend(blocks);
        return;
    }
    out.push(json!({"role": "user", "content": blocks}));
}

fn tool_result(r: &ToolOutcome) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), json!("tool_result"));
    block.insert("tool_use_id".into(), json!(r.tool_use_id));
    if !r.images.is_empty() {
        let mut parts = vec![json!({"type": "text", "text": r.content})];
        parts.extend(r.images.iter().map(image_block));
        block.insert("content".into(), Value::Array(parts));
    } else if !r.content.is_empty() {
        block.insert("content".into(), json!(r.content));
    }
    if r.is_error {
        block.insert("is_error".into(), json!(true));
    }
    Value::Object(block)
}

/// An image content block.
fn image_block(i: &Image) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": i.media_type, "data": i.data}})
}

/// An assistant turn without an Anthropic raw turn (another provider's, the
/// scripted model's, or text kept from a cancelled stream), from its neutral
/// blocks. Unsigned thinking cannot be sent and is left out.
fn rebuild(turn: &AssistantTurn) -> Vec<Value> {
    turn.content
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Text { text } if !text.is_empty() => {
                Some(json!({"type": "text", "text": text}))
            }
            AssistantBlock::Thinking {
                thinking,
                signature: Some(signature),
            } => Some(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
            AssistantBlock::ToolUse { id, name, input } => {
                let input = if input.is_object() {
                    input.clone()
                } else {
                    json!({"arguments": input})
                };
                Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
            }
            // A search's results come back encrypted only in the raw turn.
            AssistantBlock::Text { .. }
            | AssistantBlock::Thinking { .. }
            | AssistantBlock::WebSearch { .. }
            | AssistantBlock::Raw { .. } => None,
        })
        .collect()
}

/// One content block as it streams in.
#[derive(Debug)]
struct Block {
    /// The block as it started, with deltas applied.
    value: Map<String, Value>,
    /// Concatenated `input_json_delta`s, parsed when the block stops.
    json: Option<String>,
    /// The input did not parse (only acceptable when the turn hit
    /// `max_tokens`, which cuts a call short).
    incomplete: bool,
}

/// Reassembles one streamed message.
#[derive(Debug, Default)]
pub struct Assembler {
    blocks: Vec<(u64, Block)>,
    usage: Usage,
    saw_usage: bool,
    stop_reason: Option<String>,
    done: bool,
}

impl Assembler {
    fn block(&mut self, http: &Http, event: &str, index: u64) -> Result<&mut Block, Failure> {
        match self.blocks.iter_mut().find(|(i, _)| *i == index) {
            Some((_, b)) => Ok(b),
            None => Err(http.malformed(event, format!("no content block has index {index}"))),
        }
    }

    /// Applies one event; `true` when the message is complete.
    pub(super) fn on_event(
        &mut self,
        http: &Http,
        name: &str,
        data: &str,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<bool, Failure> {
        let v = http.parse(name, data)?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(name);
        let index = || {
            v.get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| http.malformed(kind, "it has no `index`"))
        };
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.take_usage(u);
                }
            }
            "content_block_start" => self.block_start(http, kind, index()?, &v, deltas)?,
            "content_block_delta" => self.block_delta(http, kind, index()?, &v, deltas)?,
            "content_block_stop" => self.block_stop(http, kind, index()?)?,
            "message_delta" => {
                if let Some(stop) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(stop.to_owned());
                }
                if let Some(u) = v.get("usage") {
                    self.take_usage(u);
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => {
                return Err(http.stream_error(v.get("error").unwrap_or(&Value::Null)));
            }
            // `ping`, and event types added after this was written.
            _ => {}
        }
        Ok(false)
    }

    /// `content_block_start`: a block opens (a text block may start with
    /// text already).
    fn block_start(
        &mut self,
        http: &Http,
        kind: &str,
        index: u64,
        v: &Value,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<(), Failure> {
        let Some(Value::Object(block)) = v.get("content_block") else {
            return Err(http.malformed(kind, "it has no `content_block` object"));
        };
        if self.blocks.iter().any(|(i, _)| *i == index) {
            return Err(http.malformed(kind, format!("index {index} started twice")));
        }
        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
        if block.get("type").and_then(Value::as_str) == Some("text") && !text.is_empty() {
            let _ = deltas.send(StreamDelta::Text(text.to_owned()));
        }
        self.blocks.push((
            index,
            Block {
                value: block.clone(),
                json: None,
                incomplete: false,
            },
        ));
        Ok(())
    }

    /// `content_block_delta`: text, thinking, a signature, a piece of a
    /// call's input or a citation added to a block.
    fn block_delta(
        &mut self,
        http: &Http,
        kind: &str,
        index: u64,
        v: &Value,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<(), Failure> {
        let Some(delta) = v.get("delta") else {
            return Err(http.malformed(kind, "it has no `delta`"));
        };
        let delta_type = delta.get("type").and_then(Value::as_str).unwrap_or("");
        let field = |name: &str| {
            delta.get(name).and_then(Value::as_str).ok_or_else(|| {
                http.malformed(kind, format!("its `{delta_type}` has no string `{name}`"))
            })
        };
        match delta_type {
            "text_delta" => {
                let text = field("text")?;
                append(&mut self.block(http, kind, index)?.value, "text", text);
                let _ = deltas.send(StreamDelta::Text(text.to_owned()));
            }
            "thinking_delta" => {
                let text = field("thinking")?;
                append(&mut self.block(http, kind, index)?.value, "thinking", text);
                let _ = deltas.send(StreamDelta::Thinking(text.to_owned()));
            }
            "signature_delta" => {
                let sig = field("signature")?;
                append(&mut self.block(http, kind, index)?.value, "signature", sig);
            }
            "input_json_delta" => {
                let part = field("partial_json")?;
                self.block(http, kind, index)?
                    .json
                    .get_or_insert_with(String::new)
                    .push_str(part);
            }
            "citations_delta" => {
                if let Some(citation) = delta.get("citation") {
                    let block = &mut self.block(http, kind, index)?.value;
                    match block.get_mut("citations") {
                        Some(Value::Array(list)) => list.push(citation.clone()),
                        _ => {
                            block.insert("citations".into(), json!([citation]));
                        }
                    }
                }
            }
            other => {
                tracing::debug!(delta = other, "ignoring an unknown Anthropic delta");
            }
        }
        Ok(())
    }

    /// `content_block_stop`: a call's streamed input is parsed (and marked
    /// incomplete when it does not parse to an object).
    fn block_stop(&mut self, http: &Http, kind: &str, index: u64) -> Result<(), Failure> {
        let block = self.block(http, kind, index)?;
        if let Some(json) = block.json.take() {
            let input = if json.trim().is_empty() {
                Ok(json!({}))
            } else {
                serde_json::from_str::<Value>(&json)
            };
            match input {
                Ok(input) if input.is_object() => {
                    block.value.insert("input".into(), input);
                }
                _ => block.incomplete = true,
            }
        }
        Ok(())
    }

    /// Usage fields present in `u` replace what is known (message_delta's
    /// counts are cumulative).
    fn take_usage(&mut self, u: &Value) {
        let n = |name: &str| u.get(name).and_then(Value::as_u64);
        self.saw_usage = true;
        if let Some(read) = n("cache_read_input_tokens") {
            self.usage.cache_read_tokens = read;
        }
        if let Some(write) = n("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = write;
        }
        if let Some(input) = n("input_tokens") {
            // Anthropic's `input_tokens` excludes cached tokens; `Usage`'s
            // includes them.
            self.usage.input_tokens = input;
        }
        if let Some(output) = n("output_tokens") {
            self.usage.output_tokens = output;
        }
    }

    /// The whole turn, once `message_stop` has arrived.
    pub(super) fn finish(mut self, http: &Http) -> Result<AssistantTurn, Failure> {
        if !self.done {
            return Err(Failure::cut(
                "the stream ended before `message_stop`".to_owned(),
            ));
        }
        let stop = match self.stop_reason.as_deref() {
            Some("tool_use") => ModelStop::ToolUse,
            Some("max_tokens" | "model_context_window_exceeded") => ModelStop::MaxTokens,
            Some("refusal") => ModelStop::Refusal,
            Some("pause_turn") => ModelStop::Paused,
            _ => ModelStop::EndTurn,
        };
        self.blocks.sort_by_key(|(i, _)| *i);
        let mut raw = Vec::new();
        let mut content = Vec::new();
        for (_, block) in self.blocks {
            if block.incomplete || block.json.is_some() {
                if stop == ModelStop::MaxTokens {
                    // A call cut short by the token limit cannot run or be
                    // answered; it is left out.
                    tracing::warn!("dropping a tool call cut short by max_tokens");
                    continue;
                }
                return Err(http.malformed(
                    "content_block_stop",
                    format!(
                        "the input of tool call {} is not a JSON object",
                        block.value.get("id").and_then(Value::as_str).unwrap_or("?")
                    ),
                ));
            }
            let str_of = |name: &str| {
                block
                    .value
                    .get(name)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            match block.value.get("type").and_then(Value::as_str) {
                Some("text") => content.push(AssistantBlock::Text {
                    text: str_of("text"),
                }),
                Some("thinking") => {
                    let signature = str_of("signature");
                    content.push(AssistantBlock::Thinking {
                        thinking: str_of("thinking"),
                        signature: (!signature.is_empty()).then_some(signature),
                    });
                }
                Some("tool_use") => {
                    let id = str_of("id");
                    let name = str_of("name");
                    if id.is_empty() || name.is_empty() {
                        return Err(http.malformed(
                            "content_block_start",
                            "a tool_use block has no `id` or `name`",
                        ));
                    }
                    let input = block.value.get("input").cloned().unwrap_or(json!({}));
                    content.push(AssistantBlock::ToolUse { id, name, input });
                }
                Some("server_tool_use") if str_of("name") == "web_search" => {
                    let query = block
                        .value
                        .get("input")
                        .and_then(|i| i.get("query"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    content.push(AssistantBlock::WebSearch {
                        id: str_of("id"),
                        query,
                        results: Vec::new(),
                        error: None,
                    });
                }
                Some("web_search_tool_result") => {
                    search_result(&mut content, &block.value);
                }
                _ => {}
            }
            raw.push(Value::Object(block.value));
        }
        if self.saw_usage {
            self.usage.input_tokens = self
                .usage
                .input_tokens
                .saturating_add(self.usage.cache_read_tokens)
                .saturating_add(self.usage.cache_write_tokens);
        }
        content.push(AssistantBlock::Raw {
            api: WireApi::Anthropic,
            turn: json!({"role": "assistant", "content": raw}),
            usage: self.saw_usage.then_some(self.usage),
        });
        Ok(AssistantTurn { content, stop })
    }
}

/// Puts a `web_search_tool_result`'s titles and URLs (or its error) in
/// the search it answers (its encrypted content stays in the raw turn).
fn search_result(content: &mut [AssistantBlock], block: &Map<String, Value>) {
    let answers = block
        .get("tool_use_id")
        .and_then(Value::as_str)
        .unwrap_or("");
    let Some(AssistantBlock::WebSearch { results, error, .. }) = content
        .iter_mut()
        .find(|b| matches!(b, AssistantBlock::WebSearch { id, .. } if id == answers))
    else {
        return;
    };
    match block.get("content") {
        Some(Value::Array(hits)) => {
            results.extend(hits.iter().filter_map(|h| {
                Some(crate::conversation::SearchHit {
                    title: h
                        .get("title")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    url: h.get("url").and_then(Value::as_str)?.to_owned(),
                })
            }));
        }
        Some(other) => {
            *error = Some(
                other
                    .get("error_code")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned(),
            );
        }
        None => *error = Some("no result".to_owned()),
    }
}

fn append(block: &mut Map<String, Value>, field: &str, text: &str) {
    match block.get_mut(field) {
        Some(Value::String(s)) => s.push_str(text),
        _ => {
            block.insert(field.to_owned(), json!(text));
        }
    }
}

impl Assemble for Assembler {
    fn apply(
        &mut self,
        http: &Http,
        event: &str,
        data: &str,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<bool, Failure> {
        self.on_event(http, event, data, deltas)
    }

    fn finish(self, http: &Http) -> Result<AssistantTurn, Failure> {
        Assembler::finish(self, http)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ToolSpec;

    fn http() -> Http {
        Http::new("Anthropic", "ANTHROPIC_API_KEY", None, Default::default()).unwrap()
    }

    fn run(events: &[(&str, Value)]) -> (Result<AssistantTurn, Failure>, Vec<StreamDelta>) {
        let http = http();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut a = Assembler::default();
        for (name, data) in events {
            match a.on_event(&http, name, &data.to_string(), &tx) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return (Err(e), Vec::new()),
            }
        }
        let turn = a.finish(&http);
        let mut got = Vec::new();
        while let Ok(d) = rx.try_recv() {
            got.push(d);
        }
        (turn, got)
    }

    #[test]
    fn reassembles_thinking_text_and_a_tool_call() {
        let (turn, deltas) = run(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"see."}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"l"}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"s\", \"description\": \"list\"}"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":1}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ]);
        let turn = turn.unwrap();
        assert_eq!(turn.stop, ModelStop::ToolUse);
        assert_eq!(
            deltas,
            vec![
                StreamDelta::Thinking("Let me ".into()),
                StreamDelta::Thinking("see.".into())
            ]
        );
        let raw = turn.raw(WireApi::Anthropic).unwrap();
        assert_eq!(
            raw.to_string(),
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Let me see.","signature":"c2ln"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls","description":"list"}}]}"#
        );
        assert_eq!(
            turn.usage(),
            Some(Usage {
                input_tokens: 15,
                output_tokens: 42,
                cache_read_tokens: 5,
                cache_write_tokens: 0
            })
        );
        assert_eq!(turn.tool_uses().count(), 1);
    }

    #[test]
    fn a_stream_without_message_stop_is_cut() {
        let (turn, _) = run(&[(
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        )]);
        assert!(matches!(turn, Err(Failure::Retry { .. })), "{turn:?}");
    }

    #[test]
    fn a_delta_for_an_unknown_block_is_malformed() {
        let (turn, _) = run(&[(
            "content_block_delta",
            json!({"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}),
        )]);
        let Err(Failure::Fatal(e)) = turn else {
            panic!("{turn:?}")
        };
        assert!(
            e.to_string().contains("malformed `content_block_delta`"),
            "{e}"
        );
    }

    #[test]
    fn tool_results_come_first_and_raw_turns_are_replayed() {
        let raw = json!({"role":"assistant","content":[{"type":"redacted_thinking","data":"xyz"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]});
        let request = ModelRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::Assistant(AssistantTurn {
                    content: vec![
                        AssistantBlock::ToolUse {
                            id: "t1".into(),
                            name: "Bash".into(),
                            input: json!({"command": "ls"}),
                        },
                        AssistantBlock::Raw {
                            api: WireApi::Anthropic,
                            turn: raw.clone(),
                            usage: None,
                        },
                    ],
                    stop: ModelStop::ToolUse,
                }),
                Message::ToolResults {
                    results: vec![ToolOutcome {
                        images: Vec::new(),
                        tool_use_id: "t1".into(),
                        content: "a b".into(),
                        is_error: false,
                    }],
                },
                Message::user("and now?"),
            ],
            tools: vec![ToolSpec {
                name: "Bash".into(),
                description: "run".into(),
                input_schema: json!({"type":"object"}),
            }],
            web_search: false,
        };
        let m = messages(&request);
        assert_eq!(m.len(), 3);
        assert_eq!(m[1], raw);
        assert_eq!(
            m[2],
            json!({"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t1","content":"a b"},
                {"type":"text","text":"and now?","cache_control":{"type":"ephemeral"}}
            ]})
        );
    }
}
