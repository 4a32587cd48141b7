//! The tools the model can call.
//!
//! Tool names and input shapes are Claude Code's (`Bash {command, …}`,
//! `Read {file_path, …}`), so hooks written for Claude Code match them
//! unchanged. Each tool lives in its own file and supplies:
//!
//! * its [`ToolSpec`] (name, description, JSON input schema for the model);
//! * `validate`: the typed parse of an input (a failure is told to the model);
//! * `present`: a pure function from arguments to the card's title, kind and
//!   locations (no I/O, so a replayed log presents identically);
//! * `run`: executes an [`ApprovedCall`], the only input a tool accepts.
//!
//! Tool failures are data: a failed run produces a [`ToolOutput`] with
//! status `failed` and a message for the model, never an error that ends
//! the turn.

pub mod bash;
pub mod exec;
pub mod read;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol_schema::v1::{ToolCallLocation, ToolKind};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::conversation::ToolSpec;
use crate::event_log::ResultStatus;
use crate::interception::ApprovedCall;

/// The closed set of tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    Bash,
    Read,
}

impl Tool {
    /// Every tool, in the order offered to the model.
    pub const ALL: [Tool; 2] = [Tool::Bash, Tool::Read];

    /// Looks a tool up by its wire name (exact, case-sensitive).
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::Bash => "Bash",
            Tool::Read => "Read",
        }
    }

    /// Whether the tool only looks (runs in plan mode; runs without asking
    /// inside the project).
    pub fn is_read_only(self) -> bool {
        match self {
            Tool::Read => true,
            Tool::Bash => false,
        }
    }

    /// Whether the tool changes files (covered by `Edit(...)` rules and
    /// acceptEdits mode).
    pub fn edits_files(self) -> bool {
        match self {
            Tool::Read | Tool::Bash => false,
        }
    }

    pub fn spec(self) -> ToolSpec {
        match self {
            Tool::Bash => bash::spec(),
            Tool::Read => read::spec(),
        }
    }

    /// Checks an input against the tool's schema; `Err` says what is wrong.
    pub fn validate(self, input: &Value) -> Result<(), String> {
        match self {
            Tool::Bash => bash::parse(input).map(drop),
            Tool::Read => read::parse(input).map(drop),
        }
    }

    /// Card title, kind and locations for these arguments.
    pub fn present(self, input: &Value, cwd: &Path) -> Presentation {
        match self {
            Tool::Bash => bash::present(input, cwd),
            Tool::Read => read::present(input, cwd),
        }
    }

    /// Runs an approved call to completion (or until cancelled).
    pub async fn run(self, call: &ApprovedCall, cx: ToolContext) -> ToolOutput {
        match self {
            Tool::Bash => bash::run(call, cx).await,
            Tool::Read => read::run(call, cx).await,
        }
    }
}

/// The specs of every tool, for a model request.
pub fn specs() -> Vec<ToolSpec> {
    Tool::ALL.into_iter().map(Tool::spec).collect()
}

/// What a card shows about a call before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Presentation {
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<ToolCallLocation>,
}

/// A card for a call to a tool candor does not have.
pub fn present_unknown(name: &str) -> Presentation {
    Presentation {
        title: format!("Unknown tool {name}"),
        kind: ToolKind::Other,
        locations: Vec::new(),
    }
}

/// What a tool gets besides its call.
#[derive(Debug)]
pub struct ToolContext {
    /// The session's working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Tripped when the user cancels the turn: stop, politely.
    pub cancel: CancellationToken,
    /// Tripped at shutdown: stop now (no grace period).
    pub hard_stop: CancellationToken,
    /// How long a cancelled process gets between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Output to show on the card while the tool runs (already throttled).
    pub output: mpsc::UnboundedSender<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub status: ResultStatus,
    /// What the model is told (capped, see [`cap_for_model`]).
    pub text: String,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

impl ToolOutput {
    /// A failure the model should hear about (bad path, not found, …).
    pub fn failed(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Failed,
            text: text.into(),
            exit_code: None,
            signal: None,
        }
    }

    pub fn completed(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Completed,
            text: text.into(),
            exit_code: None,
            signal: None,
        }
    }
}

/// The most text a tool result may hand to the model.
pub const MODEL_OUTPUT_MAX: usize = 30_000;

/// Caps text for the model at [`MODEL_OUTPUT_MAX`] characters, keeping the
/// beginning and the end and saying how much was left out in the middle.
pub fn cap_for_model(text: &str) -> String {
    let total = text.chars().count();
    if total <= MODEL_OUTPUT_MAX {
        return text.to_owned();
    }
    let keep = MODEL_OUTPUT_MAX / 2;
    let head: String = text.chars().take(keep).collect();
    let tail: String = text.chars().skip(total - keep).collect();
    format!(
        "{head}\n\n[… {} characters elided by candor …]\n\n{tail}",
        total - 2 * keep
    )
}

/// Resolves a path argument against the session's working directory.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_owned()
    } else {
        cwd.join(p)
    }
}

/// Parses a tool input into its typed form with a readable error.
fn parse_input<T: serde::de::DeserializeOwned>(tool: Tool, input: &Value) -> Result<T, String> {
    if !input.is_object() {
        return Err(format!("{} input must be a JSON object", tool.name()));
    }
    serde_json::from_value(input.clone()).map_err(|e| format!("invalid {} input: {e}", tool.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_both_ends() {
        let text = format!("{}{}", "a".repeat(20_000), "b".repeat(20_000));
        let capped = cap_for_model(&text);
        assert!(capped.starts_with(&"a".repeat(15_000)));
        assert!(capped.ends_with(&"b".repeat(15_000)));
        assert!(capped.contains("[… 10000 characters elided by candor …]"));
        assert_eq!(cap_for_model("short"), "short");
    }

    #[test]
    fn names_are_exact() {
        assert_eq!(Tool::from_name("Bash"), Some(Tool::Bash));
        assert_eq!(Tool::from_name("bash"), None);
        for tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool));
            assert_eq!(tool.spec().name, tool.name());
        }
    }
}
