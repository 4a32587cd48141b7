//! The scripted model: deterministic turns from a JSON script.
//!
//! Each model request consumes the next response of the script, in order,
//! across the whole session (a prompt that runs tools makes several
//! requests). The format is documented in `protocol/scripted-model.md`:
//!
//! ```json
//! {"responses": [
//!   {"content": [
//!     {"type": "text", "text": "Let me look."},
//!     {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}
//!   ]},
//!   {"content": [{"type": "text", "text": "Done."}], "chunkDelayMs": 20}
//! ]}
//! ```
//!
//! Text and thinking stream in word-sized chunks, `chunkDelayMs` apart;
//! `{"type": "delay", "ms": N}` pauses the stream where it stands. A
//! `tool_use` without an `id` gets `toolu_<n>`, numbered across the session.
//! When the script has no response left, the model says so and ends the turn.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::stream::{ProviderError, StreamDelta};
use crate::conversation::{
    AssistantBlock, AssistantTurn, ModelRequest, ModelStop, RewriteStrategy, Usage, WireApi,
};

/// A whole script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Script {
    pub responses: Vec<Response>,
    /// How hook rewrites are told to this model (default `note`).
    #[serde(default)]
    pub rewrite_strategy: RewriteStrategy,
    /// The scripts subagents play: the first whose `type` (and `prompt`,
    /// when given) fits a subagent is its script.
    #[serde(default)]
    pub subagents: Vec<SubagentScript>,
}

/// The script of the subagents it fits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubagentScript {
    /// The subagent type (`Explore`, a definition's name).
    #[serde(rename = "type")]
    pub agent_type: String,
    /// Text the subagent's prompt must contain.
    #[serde(default)]
    pub prompt: Option<String>,
    pub responses: Vec<Response>,
}

/// One model response.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Response {
    pub content: Vec<Item>,
    /// Defaults to `tool_use` when the response calls a tool, else `end_turn`.
    #[serde(default)]
    pub stop: Option<ModelStop>,
    /// Pause before the first chunk.
    #[serde(default)]
    pub delay_ms: u64,
    /// Pause between chunks.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Token counts to report for this request, as a real provider does
    /// (`{"inputTokens", "outputTokens"}`).
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// One item of a response.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Item {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        name: String,
        input: Value,
    },
    Delay {
        ms: u64,
    },
}

/// A session's scripted model: the script and how far it has got.
#[derive(Debug)]
pub struct ScriptedProvider {
    script: Script,
    next: usize,
    calls: u64,
    /// Where each request is appended as a JSON line (`CANDOR_CAPTURE`).
    capture: Option<PathBuf>,
    /// The configured `context_window` and `max_tokens` (what compaction
    /// works with; the script itself is not limited by them).
    context_window: Option<u64>,
    max_tokens: Option<u32>,
}

impl ScriptedProvider {
    pub fn new(script: Script) -> Self {
        Self {
            script,
            next: 0,
            calls: 0,
            capture: None,
            context_window: None,
            max_tokens: None,
        }
    }

    /// Takes the configured `context_window` and `max_tokens`.
    pub fn limits(mut self, context_window: Option<u64>, max_tokens: Option<u32>) -> Self {
        self.context_window = context_window;
        self.max_tokens = max_tokens;
        self
    }

    pub fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    pub fn max_tokens(&self) -> Option<u32> {
        self.max_tokens
    }

    /// Appends every request this model receives to `path` (one JSON line
    /// each), so tests can see exactly what a model would have been sent.
    pub fn capture_to(mut self, path: Option<PathBuf>) -> Self {
        self.capture = path;
        self
    }

    pub fn rewrite_strategy(&self) -> RewriteStrategy {
        self.script.rewrite_strategy
    }

    /// This model as a subagent of type `agent_type` given `prompt` plays:
    /// the first subagent script that fits, from its start (none fits: a
    /// script with no response, which says so).
    pub fn for_subagent(&mut self, agent_type: &str, prompt: &str) {
        let fits = self.script.subagents.iter().find(|s| {
            s.agent_type == agent_type && s.prompt.as_deref().is_none_or(|p| prompt.contains(p))
        });
        self.script.responses = fits.map(|s| s.responses.clone()).unwrap_or_default();
        self.script.subagents = Vec::new();
        self.next = 0;
        self.calls = 0;
    }

    /// Goes on where a stored session stopped: `requests` responses were
    /// played, `calls` tool calls were numbered.
    pub fn resume_at(&mut self, requests: usize, calls: u64) {
        self.next = requests;
        self.calls = calls;
    }

    /// Reads and parses a script file; the error names the file and the
    /// problem.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("the script {} cannot be read: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("the script {} is not valid: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str::<Script>(text)
            .map(Self::new)
            .map_err(|e| e.to_string())
    }

    pub(super) async fn stream(
        &mut self,
        request: &ModelRequest,
        deltas: mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, ProviderError> {
        if let Some(path) = &self.capture {
            capture(path, request).map_err(|e| {
                ProviderError::Script(format!(
                    "cannot capture the request to {}: {e}",
                    path.display()
                ))
            })?;
        }
        let Some(response) = self.script.responses.get(self.next).cloned() else {
            let text = format!(
                "[scripted model] The script has no response left (it had {}).",
                self.script.responses.len()
            );
            let _ = deltas.send(StreamDelta::Text(text.clone()));
            return Ok(AssistantTurn {
                content: vec![AssistantBlock::Text { text }],
                stop: ModelStop::EndTurn,
            });
        };
        self.next += 1;
        pause(response.delay_ms).await;
        let mut content = Vec::new();
        let mut first_chunk = true;
        for item in response.content {
            match item {
                Item::Text { text } => {
                    for chunk in chunks(&text) {
                        if !first_chunk {
                            pause(response.chunk_delay_ms).await;
                        }
                        first_chunk = false;
                        let _ = deltas.send(StreamDelta::Text(chunk.to_owned()));
                    }
                    content.push(AssistantBlock::Text { text });
                }
                Item::Thinking {
                    thinking,
                    signature,
                } => {
                    for chunk in chunks(&thinking) {
                        if !first_chunk {
                            pause(response.chunk_delay_ms).await;
                        }
                        first_chunk = false;
                        let _ = deltas.send(StreamDelta::Thinking(chunk.to_owned()));
                    }
                    content.push(AssistantBlock::Thinking {
                        thinking,
                        signature,
                    });
                }
                Item::ToolUse { id, name, input } => {
                    self.calls += 1;
                    let id = id.unwrap_or_else(|| format!("toolu_{:02}", self.calls));
                    content.push(AssistantBlock::ToolUse { id, name, input });
                }
                Item::Delay { ms } => pause(ms).await,
            }
        }
        let calls_tool = content
            .iter()
            .any(|b| matches!(b, AssistantBlock::ToolUse { .. }));
        let stop = response.stop.unwrap_or(if calls_tool {
            ModelStop::ToolUse
        } else {
            ModelStop::EndTurn
        });
        if let Some(usage) = response.usage {
            content.push(AssistantBlock::Raw {
                api: WireApi::Scripted,
                turn: Value::Null,
                usage: Some(usage),
            });
        }
        Ok(AssistantTurn { content, stop })
    }
}

fn capture(path: &Path, request: &ModelRequest) -> std::io::Result<()> {
    use std::io::Write;
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(&line)
}

async fn pause(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// Splits text into chunks of a few words, keeping every character.
fn chunks(text: &str) -> Vec<&str> {
    const WORDS: usize = 3;
    let mut out = Vec::new();
    let mut start = 0;
    let mut words = 0;
    for (i, c) in text.char_indices() {
        if c == ' ' || c == '\n' {
            words += 1;
            if words == WORDS {
                let end = i + c.len_utf8();
                out.push(&text[start..end]);
                start = end;
                words = 0;
            }
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> ModelRequest {
        ModelRequest {
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            web_search: false,
        }
    }

    #[test]
    fn chunks_keep_every_character() {
        let text = "one two three four five\nsix é";
        assert_eq!(chunks(text).concat(), text);
        assert_eq!(chunks(text)[0], "one two three ");
        assert_eq!(chunks(""), Vec::<&str>::new());
    }

    #[tokio::test]
    async fn plays_responses_in_order_then_says_it_ran_out() {
        let mut p = ScriptedProvider::parse(
            &json!({"responses": [
                {"content": [{"type": "text", "text": "a b c d"}, {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]},
                {"content": [{"type": "text", "text": "done"}]}
            ]})
            .to_string(),
        )
        .unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let first = p.stream(&request(), tx.clone()).await.unwrap();
        assert_eq!(first.stop, ModelStop::ToolUse);
        assert_eq!(first.tool_uses().next().unwrap().0, "toolu_01");
        assert_eq!(rx.recv().await, Some(StreamDelta::Text("a b c ".into())));
        assert_eq!(rx.recv().await, Some(StreamDelta::Text("d".into())));
        assert_eq!(
            p.stream(&request(), tx.clone()).await.unwrap().stop,
            ModelStop::EndTurn
        );
        let last = p.stream(&request(), tx).await.unwrap();
        assert!(
            matches!(&last.content[0], AssistantBlock::Text { text } if text.contains("no response left"))
        );
    }

    #[test]
    fn a_bad_script_names_the_problem() {
        let err = ScriptedProvider::parse(r#"{"responses": [{"content": [{"type": "txt"}]}]}"#)
            .unwrap_err();
        assert!(err.contains("unknown variant `txt`"), "{err}");
    }
}
