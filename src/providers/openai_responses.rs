//! OpenAI Responses: `POST {OPENAI_BASE_URL}/responses`, streamed and
//! stateless (`store: false`, `include: ["reasoning.encrypted_content"]`):
//! every request carries the whole conversation as input items.
//!
//! Text and reasoning summaries stream as they come
//! (`response.output_text.delta`, `response.reasoning_summary_text.delta`,
//! `response.reasoning_text.delta`); the turn itself is the output items as
//! `response.output_item.done` gives them (the `added` copies may be
//! incomplete), in `output_index` order, ended by `response.completed` or
//! `response.incomplete`. The items are the raw turn and go back verbatim:
//! a `reasoning` item (with its `encrypted_content`) stays right before the
//! `function_call` it led to, ids included, or the API refuses the call.
//! Hook rewrites are told by a note (`RewriteStrategy::Note`). Tool results
//! are `function_call_output` items, one per call, in call order.

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::http::{Assemble, Failure, Http, url};
use super::openai_chat::parse_arguments;
use super::provider_settings::ProviderSettings;
use super::stream::{ProviderError, StreamDelta};
use crate::conversation::{
    AssistantBlock, AssistantTurn, Message, ModelRequest, ModelStop, Usage, WireApi,
};

/// A session's Responses model.
#[derive(Debug)]
pub struct ResponsesProvider {
    pub(super) settings: ProviderSettings,
    pub(super) http: Http,
}

impl ResponsesProvider {
    pub fn new(settings: ProviderSettings) -> Result<Self, String> {
        let http = Http::new(
            "OpenAI Responses",
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
        if !request.system.is_empty() {
            body.insert("instructions".into(), json!(request.system));
        }
        body.insert("input".into(), Value::Array(input(request)));
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.input_schema, "strict": false})
            })
            .collect();
        if request.web_search {
            tools.push(json!({"type": "web_search"}));
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(max) = s.max_tokens {
            body.insert("max_output_tokens".into(), json!(max));
        }
        if let Some(effort) = &s.reasoning_effort {
            body.insert(
                "reasoning".into(),
                json!({"effort": effort, "summary": "auto"}),
            );
        }
        body.insert("store".into(), json!(false));
        let mut include = vec!["reasoning.encrypted_content"];
        if request.web_search {
            // The URLs a search found, for its card.
            include.push("web_search_call.action.sources");
        }
        body.insert("include".into(), json!(include));
        body.insert("stream".into(), json!(true));
        Value::Object(body)
    }

    /// Runs one request (retrying transient failures), streaming text and
    /// reasoning summaries into `deltas`; returns the whole turn or nothing.
    pub async fn stream(
        &self,
        request: &ModelRequest,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, ProviderError> {
        let headers = self.http.bearer(&self.settings.base_url)?;
        let body = self.request_body(request);
        let url = url(&self.settings.base_url, "/responses");
        self.http
            .stream_turn::<Assembler>(&url, headers, &body, deltas)
            .await
    }
}

/// The `input` of a request: raw turns' items verbatim, a
/// `function_call_output` for every call.
pub fn input(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text, images } => {
                let mut content = Vec::new();
                if images.is_empty() || !text.trim().is_empty() {
                    content.push(json!({"type": "input_text", "text": text}));
                }
                content.extend(images.iter().map(input_image));
                out.push(json!({"type": "message", "role": "user", "content": content}));
            }
            Message::ToolResults { results } => {
                for r in results {
                    let output = if r.images.is_empty() {
                        json!(r.content)
                    } else {
                        let mut parts = vec![json!({"type": "input_text", "text": r.content})];
                        parts.extend(r.images.iter().map(input_image));
                        Value::Array(parts)
                    };
                    out.push(json!({"type": "function_call_output", "call_id": r.tool_use_id, "output": output}));
                }
            }
            Message::Assistant(turn) => match turn.raw(WireApi::OpenaiResponses) {
                Some(Value::Array(items)) => out.extend(items.iter().cloned()),
                _ => out.extend(rebuild(turn)),
            },
        }
    }
    out
}

/// An image as an input part: a `data:` URL.
fn input_image(i: &crate::conversation::Image) -> Value {
    json!({"type": "input_image", "image_url": format!("data:{};base64,{}", i.media_type, i.data)})
}

/// Items for a turn without a Responses raw turn, from its neutral blocks
/// (thinking is not sent).
fn rebuild(turn: &AssistantTurn) -> Vec<Value> {
    turn.content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::Text { text } if !text.is_empty() => Some(json!({
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]
            })),
            AssistantBlock::ToolUse { id, name, input } => {
                let arguments = match input {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Some(json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments}))
            }
            _ => None,
        })
        .collect()
}

/// Reassembles one streamed response.
#[derive(Debug, Default)]
pub struct Assembler {
    /// Finished output items by `output_index`.
    items: Vec<(u64, Value)>,
    /// The final `response` object (`response.completed` / `.incomplete`).
    response: Option<Value>,
    done: bool,
}

impl Assembler {
    /// Applies one event; `true` when the response is complete.
    pub(super) fn on_event(
        &mut self,
        http: &Http,
        name: &str,
        data: &str,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<bool, Failure> {
        let v = http.parse(name, data)?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(name);
        let text = |field: &str| {
            v.get(field)
                .and_then(Value::as_str)
                .ok_or_else(|| http.malformed(kind, format!("it has no string `{field}`")))
        };
        match kind {
            "response.output_text.delta" => {
                let _ = deltas.send(StreamDelta::Text(text("delta")?.to_owned()));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let _ = deltas.send(StreamDelta::Thinking(text("delta")?.to_owned()));
            }
            "response.reasoning_summary_part.done" => {
                // Separates summary parts on screen as they do in the item.
                let _ = deltas.send(StreamDelta::Thinking("\n\n".to_owned()));
            }
            "response.output_item.done" => {
                let index = v
                    .get("output_index")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| http.malformed(kind, "it has no `output_index`"))?;
                let Some(item) = v.get("item").filter(|i| i.is_object()) else {
                    return Err(http.malformed(kind, "it has no `item` object"));
                };
                if item.get("type").and_then(Value::as_str) == Some("function_call")
                    && (item.get("call_id").and_then(Value::as_str).is_none()
                        || item.get("name").and_then(Value::as_str).is_none()
                        || item.get("arguments").and_then(Value::as_str).is_none())
                {
                    return Err(http.malformed(
                        kind,
                        "a function_call item lacks `call_id`, `name` or string `arguments`",
                    ));
                }
                self.items.retain(|(i, _)| *i != index);
                self.items.push((index, item.clone()));
            }
            "response.completed" | "response.incomplete" => {
                self.response = Some(v.get("response").cloned().unwrap_or(Value::Null));
                self.done = true;
                return Ok(true);
            }
            "response.failed" => {
                let error = v.pointer("/response/error").cloned().unwrap_or(Value::Null);
                return Err(http.stream_error(&error));
            }
            "error" => {
                return Err(http.stream_error(v.get("error").unwrap_or(&v)));
            }
            _ => {}
        }
        Ok(false)
    }

    /// The whole turn, once the response is complete.
    pub(super) fn finish(mut self, _http: &Http) -> Result<AssistantTurn, Failure> {
        if !self.done {
            return Err(Failure::cut("the stream ended before `response.completed`"));
        }
        let response = self.response.take().unwrap_or(Value::Null);
        if self.items.is_empty()
            && let Some(Value::Array(output)) = response.get("output")
        {
            self.items = output
                .iter()
                .enumerate()
                .map(|(i, item)| (i as u64, item.clone()))
                .collect();
        }
        self.items.sort_by_key(|(i, _)| *i);
        let items: Vec<Value> = self.items.into_iter().map(|(_, item)| item).collect();
        let mut content = Vec::new();
        let mut refused = false;
        for item in &items {
            match item.get("type").and_then(Value::as_str) {
                Some("reasoning") => {
                    let texts = |field: &str| -> Vec<&str> {
                        item.get(field)
                            .and_then(Value::as_array)
                            .map(|parts| {
                                parts
                                    .iter()
                                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                                    .collect()
                            })
                            .unwrap_or_default()
                    };
                    let mut shown = texts("summary");
                    if shown.is_empty() {
                        shown = texts("content");
                    }
                    let thinking = shown.join("\n\n");
                    if !thinking.is_empty() {
                        content.push(AssistantBlock::Thinking {
                            thinking,
                            signature: None,
                        });
                    }
                }
                Some("message") => {
                    for part in item
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        match part.get("type").and_then(Value::as_str) {
                            Some("output_text") => {
                                let text = part.get("text").and_then(Value::as_str).unwrap_or("");
                                content.push(AssistantBlock::Text {
                                    text: text.to_owned(),
                                });
                            }
                            Some("refusal") => {
                                refused = true;
                                let text =
                                    part.get("refusal").and_then(Value::as_str).unwrap_or("");
                                content.push(AssistantBlock::Text {
                                    text: text.to_owned(),
                                });
                            }
                            _ => {}
                        }
                    }
                }
                Some("function_call") => {
                    let field = |f: &str| item.get(f).and_then(Value::as_str).unwrap_or("");
                    content.push(AssistantBlock::ToolUse {
                        id: field("call_id").to_owned(),
                        name: field("name").to_owned(),
                        input: parse_arguments(field("arguments")),
                    });
                }
                Some("web_search_call") => content.push(web_search(item)),
                _ => {}
            }
        }
        titled(&mut content, &items);
        let calls = content
            .iter()
            .any(|b| matches!(b, AssistantBlock::ToolUse { .. }));
        let incomplete = response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str);
        let stop = match incomplete {
            Some("max_output_tokens") => ModelStop::MaxTokens,
            Some("content_filter") => ModelStop::Refusal,
            _ if refused => ModelStop::Refusal,
            _ if calls => ModelStop::ToolUse,
            _ => ModelStop::EndTurn,
        };
        let usage = response.get("usage").filter(|u| u.is_object()).map(|u| {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            Usage {
                input_tokens: n("/input_tokens"),
                output_tokens: n("/output_tokens"),
                cache_read_tokens: n("/input_tokens_details/cached_tokens"),
                cache_write_tokens: 0,
            }
        });
        content.push(AssistantBlock::Raw {
            api: WireApi::OpenaiResponses,
            turn: Value::Array(items),
            usage,
        });
        Ok(AssistantTurn { content, stop })
    }
}

/// A `web_search_call` item as a search: its query (or the page it opened
/// or searched in) and the sources it found.
fn web_search(item: &Value) -> AssistantBlock {
    let s = |p: &str| item.pointer(p).and_then(Value::as_str).unwrap_or("");
    let query = match s("/action/type") {
        "open_page" => format!("open {}", s("/action/url")),
        "find" | "find_in_page" => {
            format!("find {:?} in {}", s("/action/pattern"), s("/action/url"))
        }
        _ => s("/action/query").to_owned(),
    };
    let results = item
        .pointer("/action/sources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|src| {
            Some(crate::conversation::SearchHit {
                title: src
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                url: src.get("url").and_then(Value::as_str)?.to_owned(),
            })
        })
        .collect();
    AssistantBlock::WebSearch {
        id: s("/id").to_owned(),
        query,
        results,
        error: (s("/status") == "failed").then(|| "the search failed".to_owned()),
    }
}

/// The titles of the sources the answer cites (`url_citation`
/// annotations), put on the searches' results that lack one.
fn titled(content: &mut [AssistantBlock], items: &[Value]) {
    let mut titles = std::collections::HashMap::new();
    for part in items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
        .flat_map(|i| {
            i.get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
    {
        for a in part
            .get("annotations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(url), Some(title)) = (
                a.get("url").and_then(Value::as_str),
                a.get("title").and_then(Value::as_str),
            ) {
                titles
                    .entry(url.to_owned())
                    .or_insert_with(|| title.to_owned());
            }
        }
    }
    for block in content {
        if let AssistantBlock::WebSearch { results, .. } = block {
            for hit in results.iter_mut().filter(|h| h.title.is_empty()) {
                if let Some(title) = titles.get(&hit.url) {
                    hit.title = title.clone();
                }
            }
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

    #[test]
    fn items_come_from_output_item_done_in_order() {
        let http = Http::new(
            "OpenAI Responses",
            "OPENAI_API_KEY",
            None,
            Default::default(),
        )
        .unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut a = Assembler::default();
        let reasoning = json!({"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"ENC"});
        let call = json!({"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"Bash","arguments":"{\"command\":\"ls\"}"});
        for (name, data) in [
            (
                "response.created",
                json!({"type":"response.created","response":{}}),
            ),
            (
                "response.reasoning_summary_text.delta",
                json!({"type":"response.reasoning_summary_text.delta","delta":"Plan."}),
            ),
            (
                "response.output_item.done",
                json!({"type":"response.output_item.done","output_index":1,"item":call}),
            ),
            (
                "response.output_item.done",
                json!({"type":"response.output_item.done","output_index":0,"item":reasoning}),
            ),
        ] {
            assert!(!a.on_event(&http, name, &data.to_string(), &tx).unwrap());
        }
        assert!(a.on_event(&http, "response.completed", &json!({"type":"response.completed","response":{"usage":{"input_tokens":9,"output_tokens":4}}}).to_string(), &tx).unwrap());
        let turn = a.finish(&http).unwrap();
        assert_eq!(turn.stop, ModelStop::ToolUse);
        assert_eq!(
            turn.raw(WireApi::OpenaiResponses).unwrap(),
            &json!([reasoning, call])
        );
        assert_eq!(turn.tool_uses().next().unwrap().0, "call_1");
        assert_eq!(
            rx.try_recv().unwrap(),
            StreamDelta::Thinking("Plan.".into())
        );
        assert_eq!(turn.usage().unwrap().context_tokens(), 13);
    }
}
