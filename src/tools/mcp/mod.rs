//! Calls to MCP tools (`mcp__<server>__<tool>`): settled like every other
//! call; run by sending `tools/call` to the server (`crate::tools::mcp::Servers`).
//!
//! The model is told the answer's text blocks, then each resource link,
//! embedded resource (its text) and the structured content (as JSON), all
//! capped like any tool's output; images go to the model as images (each
//! checked as `crate::media` checks a prompt's: its type, its base64, its
//! bytes' magic; at most [`MAX_IMAGE_BYTES`] of base64 and [`MAX_IMAGES`]
//! a call; beyond, the text says what was left out), kept in the content
//! store beside the log. The card shows the same, through a
//! `tool/content` record. `isError` fails the card.

pub mod annotations;
pub mod elicit;
mod http;
mod names;
pub mod refusal;
pub mod servers;
pub mod spec;
mod sse;
mod stdio;

use serde_json::{Map, Value};

pub use elicit::Asker;
pub use servers::{CallOutcome, McpPrompt, McpTool, Servers, State, Status};
pub use spec::{Chosen, ServerSpec, Source, Transport, choose, from_editor};

use super::context::ToolContext;
use super::output::{ToolOutput, cap_for_model};
use super::tool_event::ToolEvent;
use crate::event_log::{McpTarget, ResultContent};

/// Most base64 bytes of the images of one answer kept (all of them
/// together: the model is sent them with every later request).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Most images of one answer kept.
pub const MAX_IMAGES: usize = 8;
/// Most characters of an embedded resource's text, or of the structured
/// content as JSON, kept for the card and the log (the model's text is
/// capped as any tool output).
pub const MAX_PART: usize = 256 * 1024;

/// An MCP call's input: which tool, and the arguments (a JSON object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpInput {
    pub server: String,
    pub tool: String,
    pub arguments: Map<String, Value>,
}

/// Checks `input` against the tool's input schema and takes it.
pub(crate) fn parse(tool: &McpTool, input: &Value) -> Result<McpInput, String> {
    let Value::Object(arguments) = input else {
        return Err(format!("{} input must be a JSON object", tool.exposed));
    };
    // A schema candor cannot compile is left to the server to apply.
    if let Ok(validator) = jsonschema::validator_for(&tool.input_schema) {
        let errors: Vec<String> = validator
            .iter_errors(input)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !errors.is_empty() {
            return Err(format!(
                "invalid {} input: {}",
                tool.exposed,
                errors.join("; ")
            ));
        }
    }
    Ok(McpInput {
        server: tool.server.clone(),
        tool: tool.tool.clone(),
        arguments: arguments.clone(),
    })
}

/// What a `tool/call` record says of the tool.
pub fn target(tool: &McpTool) -> McpTarget {
    McpTarget {
        server: tool.server.clone(),
        tool: tool.tool.clone(),
        title: tool.title.clone(),
        annotations: Some(tool.annotations.clone()),
        read_only: tool.reading.read_only,
        open_world: tool.reading.open_world,
        reading: Some(tool.reading.why.clone()),
    }
}

pub(crate) async fn run(input: &McpInput, cx: ToolContext) -> ToolOutput {
    let Some(servers) = &cx.mcp else {
        return ToolOutput::failed("this session has no MCP servers");
    };
    // A question the server asks while it works goes on this call's card.
    let asker = std::sync::Arc::new(Asker::new(
        cx.tool_call_id.clone(),
        cx.client.clone(),
        cx.events.clone(),
        &cx.cancel,
    ));
    let outcome = servers
        .call_with(
            &input.server,
            &input.tool,
            input.arguments.clone(),
            &cx.cancel,
            Some(asker),
        )
        .await;
    match outcome {
        CallOutcome::Cancelled => ToolOutput::cancelled("cancelled by the user"),
        CallOutcome::Failed(why) => ToolOutput::failed(why),
        CallOutcome::Done(result) => {
            let answer = read_answer(&result);
            if !answer.content.is_empty() || answer.structured.is_some() {
                let _ = cx.events.send(ToolEvent::Content {
                    content: answer.content,
                    structured: answer.structured,
                });
            }
            let text = cap_for_model(&answer.text);
            if answer.is_error {
                ToolOutput::failed(text)
            } else {
                ToolOutput::completed(text)
            }
        }
    }
}

/// An MCP `CallToolResult` read for the model and the card.
#[derive(Debug, Default, PartialEq)]
struct Answer {
    text: String,
    content: Vec<ResultContent>,
    structured: Option<Value>,
    is_error: bool,
}

fn read_answer(result: &Value) -> Answer {
    let structured = result.get("structuredContent").cloned();
    let too_big = structured
        .as_ref()
        .is_some_and(|s| s.to_string().len() > MAX_PART);
    let mut answer = Answer {
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
        structured: if too_big { None } else { structured },
        ..Answer::default()
    };
    let mut parts: Vec<String> = Vec::new();
    let mut images = 0;
    let mut image_bytes = 0;
    let blocks = result.get("content").and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        let text = |k: &str| block.get(k).and_then(Value::as_str).map(str::to_owned);
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.extend(text("text")),
            Some("image") => {
                let (Some(data), Some(mime_type)) = (text("data"), text("mimeType")) else {
                    continue;
                };
                if image_bytes + data.len() > MAX_IMAGE_BYTES || images >= MAX_IMAGES {
                    parts.push(format!(
                        "[candor] An image ({mime_type}, {} bytes of base64) was left out: over candor's limit of {MAX_IMAGES} images and {MAX_IMAGE_BYTES} bytes an answer.",
                        data.len()
                    ));
                    continue;
                }
                // Its type, its base64 and its bytes' magic: an image that is
                // not what it says would make the provider refuse every
                // later request of the session.
                if let Err(why) = crate::media::decode(&mime_type, &data) {
                    parts.push(format!("[candor] An image was left out: {why}."));
                    continue;
                }
                images += 1;
                image_bytes += data.len();
                answer.content.push(ResultContent::Image {
                    mime_type,
                    data,
                    digest: None,
                    bytes: None,
                });
            }
            Some("audio") => parts.push(
                "[candor] The tool answered with audio, which candor does not pass on.".into(),
            ),
            Some("resource_link") => {
                let uri = text("uri").unwrap_or_default();
                let name = text("name").unwrap_or_else(|| uri.clone());
                parts.push(format!("Resource link: {name} <{uri}>"));
                answer.content.push(ResultContent::ResourceLink {
                    uri,
                    name,
                    mime_type: text("mimeType"),
                });
            }
            Some("resource") => {
                let resource = block.get("resource");
                let field = |k: &str| {
                    resource
                        .and_then(|r| r.get(k))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                let uri = field("uri").unwrap_or_default();
                let body = field("text").map(|t| {
                    if t.len() > MAX_PART {
                        format!(
                            "{}\n[candor] The rest was cut: the resource is {} bytes.",
                            crate::text::shorten(&t, MAX_PART / 4),
                            t.len()
                        )
                    } else {
                        t
                    }
                });
                parts.push(match &body {
                    Some(t) => format!("Resource {uri}:\n{t}"),
                    None => format!("Resource {uri} (binary, not shown)"),
                });
                answer.content.push(ResultContent::Resource {
                    uri,
                    mime_type: field("mimeType"),
                    text: body,
                });
            }
            _ => {}
        }
    }
    // A server that answers in text too gives the same as text (MCP asks it
    // to): the model is given the structured content only when there is no
    // text; the card shows both.
    let has_text = blocks
        .into_iter()
        .flatten()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    if let Some(structured) = answer.structured.as_ref().filter(|_| !has_text) {
        parts.push(format!("Structured content: {structured}"));
    } else if too_big {
        parts.push(format!(
            "[candor] The structured content was left out: it is over {MAX_PART} bytes."
        ));
    }
    answer.text = parts.join("\n\n");
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A 1×1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    #[test]
    fn every_kind_of_block_reaches_the_model_or_says_why_not() {
        let answer = read_answer(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "image", "data": PNG, "mimeType": "image/jpeg"},
                {"type": "image", "data": "x".repeat(MAX_IMAGE_BYTES + 1), "mimeType": "image/png"},
                {"type": "resource_link", "uri": "test://a", "name": "a"},
                {"type": "resource", "resource": {"uri": "test://b", "text": "body"}},
                {"type": "unknown"}
            ],
            "structuredContent": {"n": 1},
            "isError": true
        }));
        assert!(answer.is_error);
        assert_eq!(answer.content.len(), 3);
        assert!(answer.text.starts_with("hello"));
        assert!(answer.text.contains("left out"));
        // An image that is not its declared type never reaches the model.
        assert!(
            answer
                .text
                .contains("declared image/jpeg but its bytes are image/png"),
            "{}",
            answer.text
        );
        assert!(answer.text.contains("Resource link: a <test://a>"));
        assert!(answer.text.contains("Resource test://b:\nbody"));
        // Given in text too, the structured content is not repeated.
        assert!(!answer.text.contains("Structured content"));
        let bare = read_answer(&json!({"content": [], "structuredContent": {"n": 1}}));
        assert_eq!(bare.text, "Structured content: {\"n\":1}");
    }

    #[test]
    fn a_server_cannot_make_candor_keep_a_huge_answer() {
        let huge = "x".repeat(10 * MAX_PART);
        let answer = read_answer(&json!({
            "content": [{"type": "resource", "resource": {"uri": "test://big", "text": huge}}],
            "structuredContent": {"blob": huge}
        }));
        let kept = serde_json::to_string(&answer.content).unwrap();
        assert!(kept.len() < MAX_PART, "{} bytes kept", kept.len());
        assert!(answer.structured.is_none());
        assert!(answer.text.contains("structured content was left out"));
        assert!(answer.text.contains("The rest was cut"));
    }

    #[test]
    fn arguments_are_checked_against_the_tools_schema() {
        let tool = McpTool {
            exposed: "mcp__s__t".into(),
            server: "s".into(),
            tool: "t".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            title: None,
            annotations: Default::default(),
            reading: annotations::read(&Default::default(), &annotations::Trust::Taken),
        };
        assert!(parse(&tool, &json!({"n": 1})).is_ok());
        let wrong = parse(&tool, &json!({"n": "one"})).unwrap_err();
        assert!(wrong.contains("/n"), "{wrong}");
        assert!(parse(&tool, &json!({})).is_err());
        assert!(parse(&tool, &json!([1])).is_err());
    }
}
