//! The closed set of tools ([`Tool`]) and what each says about itself:
//! its name, whether it only reads, edits files, searches, runs command
//! lines, which field names its path, whose rules name it too. The policy
//! asks these instead of keeping lists of names. (What a tool does, its
//! spec, card and run, is its own file's; `tools/mod.rs` dispatches.)

use serde_json::Value;

/// The closed set of tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    Bash,
    BashOutput,
    KillShell,
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    TodoWrite,
    AskUserQuestion,
    Agent,
    WebFetch,
}

impl Tool {
    /// Every tool, in the order offered to the model.
    pub const ALL: [Tool; 12] = [
        Tool::Bash,
        Tool::BashOutput,
        Tool::KillShell,
        Tool::Read,
        Tool::Write,
        Tool::Edit,
        Tool::Glob,
        Tool::Grep,
        Tool::TodoWrite,
        Tool::AskUserQuestion,
        Tool::Agent,
        Tool::WebFetch,
    ];

    /// Looks a tool up by its wire name (exact, case-sensitive; `Task` is
    /// `Agent`'s older name).
    pub fn from_name(name: &str) -> Option<Tool> {
        if name == "Task" {
            return Some(Tool::Agent);
        }
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::Bash => "Bash",
            Tool::BashOutput => "BashOutput",
            Tool::KillShell => "KillShell",
            Tool::Read => "Read",
            Tool::Write => "Write",
            Tool::Edit => "Edit",
            Tool::Glob => "Glob",
            Tool::Grep => "Grep",
            Tool::TodoWrite => "TodoWrite",
            Tool::AskUserQuestion => "AskUserQuestion",
            Tool::Agent => "Agent",
            Tool::WebFetch => "WebFetch",
        }
    }

    /// Whether the tool changes nothing outside candor (runs in plan mode;
    /// runs without asking when its paths are inside the project).
    pub fn is_read_only(self) -> bool {
        match self {
            Tool::Bash | Tool::Write | Tool::Edit => false,
            Tool::BashOutput
            | Tool::KillShell
            | Tool::Read
            | Tool::Glob
            | Tool::Grep
            | Tool::TodoWrite
            | Tool::AskUserQuestion
            // Starting a subagent changes nothing: each of its calls is
            // decided on its own.
            | Tool::Agent => true,
            | Tool::WebFetch => true,
        }
    }

    /// Whether the tool reaches the web: its rules name domains
    /// (`WebFetch(domain:example.com)`), and a domain no rule allows asks,
    /// though the tool changes nothing here.
    pub fn reaches_web(self) -> bool {
        matches!(self, Tool::WebFetch)
    }

    /// Whether the tool changes files (covered by `Edit(...)` rules and
    /// acceptEdits mode).
    pub fn edits_files(self) -> bool {
        matches!(self, Tool::Write | Tool::Edit)
    }

    /// Whether a call gets a card. `TodoWrite` shows as the session's plan
    /// instead (unless it is refused: then its card says why).
    pub fn shows_card(self) -> bool {
        !matches!(self, Tool::TodoWrite)
    }

    /// The field that names the tool's path, if it has one (`file_path`,
    /// or `path` for the search tools).
    pub fn path_key(self) -> Option<&'static str> {
        match self {
            Tool::Read | Tool::Write | Tool::Edit => Some("file_path"),
            Tool::Glob | Tool::Grep => Some("path"),
            Tool::Bash
            | Tool::BashOutput
            | Tool::KillShell
            | Tool::TodoWrite
            | Tool::AskUserQuestion
            | Tool::Agent => None,
            Tool::WebFetch => None,
        }
    }

    /// Whether the tool searches a directory (Glob, Grep): without a path
    /// it searches the working directory.
    pub fn searches(self) -> bool {
        matches!(self, Tool::Glob | Tool::Grep)
    }

    /// Whether the tool runs a command line: its rules' patterns are
    /// commands, not paths.
    pub fn runs_commands(self) -> bool {
        matches!(self, Tool::Bash)
    }

    /// The tool whose rules also name this one: `Edit` rules cover every
    /// tool that edits files, `Read` rules govern the search tools.
    pub fn ruled_with(self) -> Option<Tool> {
        if self.edits_files() {
            Some(Tool::Edit)
        } else if self.searches() {
            Some(Tool::Read)
        } else {
            None
        }
    }
}

/// Parses a tool input into its typed form with a readable error.
pub(super) fn parse_input<T: serde::de::DeserializeOwned>(
    tool: Tool,
    input: &Value,
) -> Result<T, String> {
    if !input.is_object() {
        return Err(format!("{} input must be a JSON object", tool.name()));
    }
    serde_json::from_value(input.clone()).map_err(|e| format!("invalid {} input: {e}", tool.name()))
}
