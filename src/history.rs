//! The model's history: a pure projection of the log.
//!
//! [`derive_messages`] folds the records into the provider-neutral
//! [`Message`] list a provider sends. It reads `user/message`,
//! `assistant/message` and `tool/result` and nothing else (deltas, cards and
//! lifecycle records are for the client). Assistant turns are replayed as
//! the model emitted them; every tool call is answered right after its turn,
//! in call order, and a call whose result never made it to the log (candor
//! stopped mid-call) is answered as interrupted, so providers always get a
//! well-formed history.

use std::collections::HashMap;

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};

use crate::conversation::{AssistantBlock, AssistantTurn, Message, ModelStop, ToolOutcome};
use crate::event_log::{Event, Record, ResultStatus};

/// What the model is told about a call that has no result in the log.
pub const INTERRUPTED: &str = "interrupted: candor stopped before this finished";

/// The history a provider is sent, derived from the records.
pub fn derive_messages(records: &[Record]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut awaiting: Option<Awaiting> = None;
    for record in records {
        match &record.event {
            Event::UserMessage { content } => {
                flush(&mut awaiting, &mut messages);
                messages.push(Message::User {
                    text: flatten_prompt(content),
                });
            }
            Event::AssistantMessage {
                content,
                stop,
                interrupted,
            } => {
                flush(&mut awaiting, &mut messages);
                let content: Vec<AssistantBlock> = if *interrupted {
                    // Only finished text is kept from a cut-off stream.
                    content
                        .iter()
                        .filter(|b| matches!(b, AssistantBlock::Text { text } if !text.is_empty()))
                        .cloned()
                        .collect()
                } else {
                    content.clone()
                };
                if content.is_empty() {
                    continue;
                }
                let turn = AssistantTurn {
                    content,
                    stop: if *interrupted {
                        ModelStop::EndTurn
                    } else {
                        *stop
                    },
                };
                let calls: Vec<String> = turn.tool_uses().map(|(id, _, _)| id.to_owned()).collect();
                messages.push(Message::Assistant(turn));
                if !calls.is_empty() {
                    awaiting = Some(Awaiting {
                        calls,
                        results: HashMap::new(),
                    });
                }
            }
            Event::ToolResult {
                tool_call_id,
                status,
                output,
                ..
            } => {
                if let Some(a) = awaiting.as_mut() {
                    a.results
                        .entry(tool_call_id.clone())
                        .or_insert(ToolOutcome {
                            tool_use_id: tool_call_id.clone(),
                            content: output.clone(),
                            is_error: *status != ResultStatus::Completed,
                        });
                }
            }
            Event::SessionStarted { .. }
            | Event::AssistantDelta { .. }
            | Event::ToolCall { .. }
            | Event::ToolStarted { .. }
            | Event::ToolOutput { .. }
            | Event::TurnEnded { .. } => {}
        }
    }
    flush(&mut awaiting, &mut messages);
    messages
}

/// Tool calls of the latest assistant turn still collecting results.
struct Awaiting {
    calls: Vec<String>,
    results: HashMap<String, ToolOutcome>,
}

fn flush(awaiting: &mut Option<Awaiting>, messages: &mut Vec<Message>) {
    let Some(mut a) = awaiting.take() else { return };
    let results = a
        .calls
        .iter()
        .map(|id| {
            a.results.remove(id).unwrap_or_else(|| ToolOutcome {
                tool_use_id: id.clone(),
                content: INTERRUPTED.to_owned(),
                is_error: true,
            })
        })
        .collect();
    messages.push(Message::ToolResults { results });
}

/// A prompt's content blocks as text for the model.
pub fn flatten_prompt(content: &[ContentBlock]) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::ResourceLink(link) => format!("[{}]({})", link.name, link.uri),
            ContentBlock::Resource(res) => match &res.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    format!("<resource uri=\"{}\">\n{}\n</resource>", t.uri, t.text)
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    format!("[binary resource {}]", b.uri)
                }
                _ => "[resource]".to_owned(),
            },
            ContentBlock::Image(_) => "[image]".to_owned(),
            ContentBlock::Audio(_) => "[audio]".to_owned(),
            _ => "[unsupported content]".to_owned(),
        })
        .collect();
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::{Decision, TurnStop};
    use serde_json::json;

    fn recs(events: Vec<Event>) -> Vec<Record> {
        events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Record {
                seq: i as u64,
                at: "t".into(),
                event,
            })
            .collect()
    }

    fn tool_use(id: &str) -> AssistantBlock {
        AssistantBlock::ToolUse {
            id: id.into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
        }
    }

    fn result(id: &str, output: &str) -> Event {
        Event::ToolResult {
            tool_call_id: id.into(),
            status: ResultStatus::Completed,
            output: output.into(),
            exit_code: Some(0),
            signal: None,
        }
    }

    #[test]
    fn results_follow_their_turn_in_call_order() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("go")],
            },
            Event::AssistantDelta {
                channel: crate::event_log::DeltaChannel::Text,
                text: "ok".into(),
            },
            Event::AssistantMessage {
                content: vec![tool_use("a"), tool_use("b")],
                stop: ModelStop::ToolUse,
                interrupted: false,
            },
            Event::ToolCall {
                tool_call_id: "b".into(),
                tool: "Bash".into(),
                arguments: json!({}),
                decision: Decision::allow(),
            },
            result("b", "B"),
            result("a", "A"),
            Event::AssistantMessage {
                content: vec![AssistantBlock::Text {
                    text: "done".into(),
                }],
                stop: ModelStop::EndTurn,
                interrupted: false,
            },
            Event::TurnEnded {
                stop_reason: TurnStop::EndTurn,
                error: None,
            },
        ]);
        let messages = derive_messages(&records);
        assert_eq!(messages.len(), 4);
        let Message::ToolResults { results } = &messages[2] else {
            panic!("{messages:?}")
        };
        let order: Vec<_> = results
            .iter()
            .map(|r| (r.tool_use_id.as_str(), r.content.as_str()))
            .collect();
        assert_eq!(order, [("a", "A"), ("b", "B")]);
    }

    #[test]
    fn a_call_without_a_result_is_answered_as_interrupted() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("go")],
            },
            Event::AssistantMessage {
                content: vec![tool_use("a")],
                stop: ModelStop::ToolUse,
                interrupted: false,
            },
        ]);
        let messages = derive_messages(&records);
        let Message::ToolResults { results } = &messages[2] else {
            panic!()
        };
        assert_eq!(results[0].content, INTERRUPTED);
        assert!(results[0].is_error);
    }

    #[test]
    fn an_interrupted_turn_keeps_only_its_text() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("go")],
            },
            Event::AssistantMessage {
                content: vec![
                    AssistantBlock::Thinking {
                        thinking: "hmm".into(),
                        signature: None,
                    },
                    AssistantBlock::Text {
                        text: "partial".into(),
                    },
                ],
                stop: ModelStop::EndTurn,
                interrupted: true,
            },
        ]);
        let messages = derive_messages(&records);
        assert_eq!(
            messages[1],
            Message::Assistant(AssistantTurn {
                content: vec![AssistantBlock::Text {
                    text: "partial".into()
                }],
                stop: ModelStop::EndTurn
            })
        );
    }
}
