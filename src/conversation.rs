//! The provider-neutral vocabulary of a conversation with a model.
//!
//! Providers turn these into their wire formats and back; the event log
//! stores assistant turns in this form (plus the provider's raw turn, for
//! verbatim replay, once real providers exist); [`crate::history`] derives a
//! list of [`Message`]s from the log. Nothing here knows ACP.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of an assistant turn, in the order the model emitted them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AssistantBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

/// Why the model stopped producing this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelStop {
    /// Finished its answer.
    EndTurn,
    /// Asked for tools; the loop runs them and asks again.
    ToolUse,
    /// Hit the output token limit.
    MaxTokens,
    /// Declined to answer.
    Refusal,
}

/// A complete assistant turn as the model emitted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantTurn {
    pub content: Vec<AssistantBlock>,
    pub stop: ModelStop,
}

impl AssistantTurn {
    /// The tool calls of this turn, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            AssistantBlock::ToolUse { id, name, input } => {
                Some((id.as_str(), name.as_str(), input))
            }
            AssistantBlock::Text { .. } | AssistantBlock::Thinking { .. } => None,
        })
    }
}

/// What the model is told about one finished tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcome {
    pub tool_use_id: String,
    pub content: String,
    pub is_error: bool,
}

/// One message of the history sent to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user said, flattened to text.
    User {
        text: String,
    },
    Assistant(AssistantTurn),
    /// The results of every tool call of the preceding assistant turn, in
    /// the order of the calls.
    ToolResults {
        results: Vec<ToolOutcome>,
    },
}

/// How a hook's rewrite of a call is told to the model when its history is
/// derived (the log itself always keeps the model's call as it wrote it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewriteStrategy {
    /// The model's call is replayed verbatim; its tool result starts with a
    /// note saying a hook rewrote it and giving the arguments that ran. Safe
    /// with every provider (signed or server-bound reasoning included).
    #[default]
    Note,
    /// The effective arguments overlay the call in the replayed assistant
    /// turn. Only for providers that carry no signed reasoning (Chat
    /// Completions, local servers).
    InPlace,
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// Everything a provider needs for one model request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}
