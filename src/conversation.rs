//! The provider-neutral vocabulary of a conversation with a model.
//!
//! Providers turn these into their wire formats and back; the event log
//! stores assistant turns in this form; [`crate::history`] derives a list of
//! [`Message`]s from the log. Nothing here knows ACP.
//!
//! A turn from a real provider also carries, as its last block, the turn
//! exactly as the provider's API returned it ([`AssistantBlock::Raw`]): the
//! provider replays that verbatim (signed thinking, redacted blocks, fields
//! candor does not model), and the neutral blocks before it are what candor
//! reads (text, thinking to show, tool calls to run). See
//! `protocol/providers.md`.

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
    /// A web search the provider ran itself, inside the turn (Anthropic's
    /// `web_search` server tool, the Responses API's `web_search_call`):
    /// candor neither ran it nor could stop it before it ran; what it was
    /// and what it found, read from the provider's blocks (which the raw
    /// turn keeps, encrypted content and all, for replay).
    WebSearch {
        /// The provider's id of the search.
        id: String,
        query: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        results: Vec<SearchHit>,
        /// Why the search failed, as the provider said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Not content: the whole turn as the provider's API returned it, kept
    /// for verbatim replay, always the last block of a turn from a real
    /// provider. `api` says which wire format `turn` is in; a provider only
    /// replays a raw turn of its own format and falls back to the neutral
    /// blocks otherwise.
    Raw {
        api: WireApi,
        /// Anthropic: the assistant message `{"role":"assistant","content":[…]}`;
        /// Chat Completions: the assistant message object; Responses: the
        /// array of output items.
        turn: Value,
        /// Token counts the provider reported for this request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
}

/// One result of a provider's web search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    #[serde(default)]
    pub title: String,
    pub url: String,
}

/// The wire format a raw turn is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WireApi {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions (and compatible servers).
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// The scripted model (a `raw` block only carries the usage a script
    /// reports; its `turn` is null and never replayed).
    Scripted,
}

/// Token counts of one model request, as the provider reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Every input token, cached ones included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The part of `input_tokens` read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Tokens of the context window this request occupied (what ACP's
    /// `usage_update.used` reports).
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// The provider paused a long turn of its own tools (Anthropic's
    /// `pause_turn`, web searches): the turn is sent back as it is and the
    /// model goes on.
    Paused,
}

/// A complete assistant turn as the model emitted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantTurn {
    pub content: Vec<AssistantBlock>,
    pub stop: ModelStop,
}

impl AssistantTurn {
    /// The turn's text blocks, joined (what it said to the user).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// The tool calls of this turn, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            AssistantBlock::ToolUse { id, name, input } => {
                Some((id.as_str(), name.as_str(), input))
            }
            AssistantBlock::Text { .. }
            | AssistantBlock::Thinking { .. }
            | AssistantBlock::WebSearch { .. }
            | AssistantBlock::Raw { .. } => None,
        })
    }

    /// The provider's raw turn, if it is in the wire format `api`.
    pub fn raw(&self, api: WireApi) -> Option<&Value> {
        self.content.iter().find_map(|b| match b {
            AssistantBlock::Raw { api: a, turn, .. } if *a == api => Some(turn),
            _ => None,
        })
    }

    /// The token counts the provider reported for this turn.
    pub fn usage(&self) -> Option<Usage> {
        self.content.iter().find_map(|b| match b {
            AssistantBlock::Raw { usage, .. } => *usage,
            _ => None,
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
    /// Images the tool answered with (an MCP tool's), sent the way each API
    /// takes images in a tool's answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image for the model: its media type and base64 data (checked: the
/// type is what the bytes are, `crate::media`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    pub media_type: String,
    pub data: String,
}

/// One message of the history sent to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user said, flattened to text, and the images they (or the
    /// files their prompt linked) attached.
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    Assistant(AssistantTurn),
    /// The results of every tool call of the preceding assistant turn, in
    /// the order of the calls.
    ToolResults {
        results: Vec<ToolOutcome>,
    },
}

impl Message {
    /// A user message of text alone.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
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
    pub name: std::borrow::Cow<'static, str>,
    pub description: std::borrow::Cow<'static, str>,
    pub input_schema: Value,
}

/// Everything a provider needs for one model request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// Offer the provider's own web search (where it has one; the
    /// session's `WebSearch` rules decide, `interception::policy::search`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub web_search: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_raw_block_is_kept_last_and_read_back_by_api() {
        let turn: AssistantTurn = serde_json::from_value(json!({
            "content": [
                {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}},
                {"type": "raw", "api": "openai-chat", "turn": {"role": "assistant"},
                 "usage": {"inputTokens": 5, "outputTokens": 2, "cacheReadTokens": 1}}
            ],
            "stop": "tool_use"
        }))
        .unwrap();
        assert_eq!(turn.tool_uses().count(), 1);
        assert_eq!(
            turn.raw(WireApi::OpenaiChat),
            Some(&json!({"role": "assistant"}))
        );
        assert_eq!(turn.raw(WireApi::Anthropic), None);
        let usage = turn.usage().unwrap();
        assert_eq!((usage.context_tokens(), usage.cache_write_tokens), (7, 0));
        let back = serde_json::to_value(&turn).unwrap();
        assert_eq!(
            back["content"][1],
            json!({"type": "raw", "api": "openai-chat", "turn": {"role": "assistant"},
                   "usage": {"inputTokens": 5, "outputTokens": 2, "cacheReadTokens": 1}})
        );
    }
}
