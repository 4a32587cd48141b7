//! The tools the model can call.
//!
//! Tool names and input shapes are Claude Code's (`Bash {command, …}`,
//! `Read {file_path, …}`), so hooks written for Claude Code match them
//! unchanged. Each tool lives in its own file and supplies:
//!
//! * its [`ToolSpec`] (name, description, JSON input schema for the model);
//! * `parse`: the typed parse of an input (a failure is told to the model),
//!   done once per input, when the call is settled ([`Tool::accept`]);
//! * `present`: a pure function from arguments to the card's title, kind and
//!   locations (no I/O, so a replayed log presents identically);
//! * `run`: executes a [`ToolInput`] that interception approved (an
//!   `ApprovedCall` carries it; nothing else reaches a tool).
//!
//! Tool failures are data: a failed run produces a [`ToolOutput`] with
//! status `failed` and a message for the model, never an error that ends
//! the turn.

pub mod agent;
pub mod ask_user;
pub mod bash;
pub mod confined;
pub mod edit;
pub mod exec;
pub mod files;
pub mod mcp;
pub mod output;
pub mod read;
pub mod search;
pub mod shells;
pub mod todo;
pub mod web_fetch;
pub mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{ToolCallLocation, ToolKind};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::conversation::ToolSpec;
use crate::event_log::{FileDiff, ResultStatus};
pub use files::{ClientLink, FileAccess};
pub use shells::Shells;

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

    pub fn spec(self) -> ToolSpec {
        match self {
            Tool::Bash => bash::spec(),
            Tool::BashOutput => shells::output_spec(),
            Tool::KillShell => shells::kill_spec(),
            Tool::Read => read::spec(),
            Tool::Write => write::spec(),
            Tool::Edit => edit::spec(),
            Tool::Glob => search::glob_spec(),
            Tool::Grep => search::grep_spec(),
            Tool::TodoWrite => todo::spec(),
            Tool::AskUserQuestion => ask_user::spec(),
            Tool::Agent => agent::spec(),
            Tool::WebFetch => web_fetch::spec(),
        }
    }

    /// A call's arguments as this tool takes them: parsed against its
    /// schema (`Err` says what is wrong) into the typed input (a Bash line
    /// read by the shell parser too), then its path normalized
    /// ([`ToolInput::normalize`]) in the typed input and, from it, in the
    /// arguments. The one parse of these arguments: after it, everything
    /// judges the typed input.
    pub fn accept(self, arguments: &Value, cwd: &Path) -> Result<Accepted, String> {
        let mut input = ToolInput::parse(self, arguments)?;
        let spelled = input.normalize(cwd);
        let mut arguments = arguments.clone();
        if let Some(key) = self.path_key()
            && let Some(path) = input.path()
            && let Some(obj) = arguments.as_object_mut()
        {
            obj.insert(key.to_owned(), Value::String(path.to_owned()));
        }
        // A URL as parsed (scheme and host lower-cased, dots resolved): the
        // one the rules judge and the fetch requests.
        if let ToolInput::WebFetch(i) = &input
            && let Some(obj) = arguments.as_object_mut()
        {
            obj.insert("url".to_owned(), Value::String(i.url.to_string()));
        }
        Ok(Accepted {
            arguments,
            input,
            spelled,
        })
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

    /// Card title, kind and locations for these arguments.
    pub fn present(self, input: &Value, cwd: &Path) -> Presentation {
        match self {
            Tool::Bash => bash::present(input, cwd),
            Tool::BashOutput | Tool::KillShell => shells::present(self, input),
            Tool::Read => read::present(input, cwd),
            Tool::Write | Tool::Edit => write::present(self, input, cwd),
            Tool::Glob | Tool::Grep => search::present(self, input, cwd),
            Tool::TodoWrite => todo::present(input),
            Tool::AskUserQuestion => ask_user::present(input),
            Tool::Agent => agent::present(input),
            Tool::WebFetch => web_fetch::present(input),
        }
    }

    /// What a card shows of the input beside its title, when the title shows
    /// only part of it: a multi-line or long command, whole.
    pub fn detail(self, input: &Value) -> Option<String> {
        match self {
            Tool::Bash => bash::detail(input),
            Tool::AskUserQuestion => ask_user::detail(input),
            Tool::Agent => agent::detail(input),
            Tool::WebFetch => web_fetch::detail(input),
            _ => None,
        }
    }
}

/// A call's arguments, accepted by its tool ([`Tool::accept`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The arguments, their path absolute, without `..` and with links
    /// followed: what hooks, rules, the card and the log see.
    pub arguments: Value,
    /// The same arguments as the tool's input: what runs.
    pub input: ToolInput,
    /// The path as written (absolute, links not followed) when that
    /// differs from where it leads: rules judge both.
    pub spelled: Option<PathBuf>,
}

/// A call's input, parsed once, when the call is settled (one variant a
/// tool, and one for the tools of MCP servers): what is judged (hooks'
/// `if` filters, rules, the mode, the grant offer), previewed and run. The
/// approved call carries it and runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolInput {
    Bash(bash::BashInput),
    BashOutput(shells::OutputInput),
    KillShell(shells::KillInput),
    Read(read::ReadInput),
    Write(write::WriteInput),
    Edit(edit::EditInput),
    Glob(search::GlobInput),
    Grep(search::GrepInput),
    TodoWrite(todo::TodoInput),
    AskUserQuestion(ask_user::AskInput),
    Agent(agent::AgentInput),
    WebFetch(web_fetch::WebFetchInput),
    /// A tool of one of the session's MCP servers.
    Mcp(mcp::McpInput),
}

impl ToolInput {
    /// Parses `input` as `tool`'s; `Err` says what is wrong.
    pub fn parse(tool: Tool, input: &Value) -> Result<ToolInput, String> {
        Ok(match tool {
            Tool::Bash => ToolInput::Bash(bash::parse(input)?),
            Tool::BashOutput => ToolInput::BashOutput(shells::parse_output(input)?),
            Tool::KillShell => ToolInput::KillShell(shells::parse_kill(input)?),
            Tool::Read => ToolInput::Read(read::parse(input)?),
            Tool::Write => ToolInput::Write(write::parse(input)?),
            Tool::Edit => ToolInput::Edit(edit::parse(input)?),
            Tool::Glob => ToolInput::Glob(search::parse_glob(input)?),
            Tool::Grep => ToolInput::Grep(search::parse_grep(input)?),
            Tool::TodoWrite => ToolInput::TodoWrite(todo::parse(input)?),
            Tool::AskUserQuestion => ToolInput::AskUserQuestion(ask_user::parse(input)?),
            Tool::Agent => ToolInput::Agent(agent::parse(input)?),
            Tool::WebFetch => ToolInput::WebFetch(web_fetch::parse(input)?),
        })
    }

    /// The path the input names, where the tool has one (the field
    /// [`normalize`](Self::normalize) makes absolute).
    fn path_mut(&mut self) -> Option<&mut String> {
        match self {
            ToolInput::Read(i) => Some(&mut i.file_path),
            ToolInput::Write(i) => Some(&mut i.file_path),
            ToolInput::Edit(i) => Some(&mut i.file_path),
            ToolInput::Glob(i) => i.path.as_mut(),
            ToolInput::Grep(i) => i.path.as_mut(),
            ToolInput::Bash(_)
            | ToolInput::BashOutput(_)
            | ToolInput::KillShell(_)
            | ToolInput::TodoWrite(_)
            | ToolInput::AskUserQuestion(_)
            | ToolInput::Agent(_)
            | ToolInput::WebFetch(_)
            | ToolInput::Mcp(_) => None,
        }
    }

    /// The path the input names, as given (before [`Tool::accept`]) or
    /// normalized (after it).
    fn path(&self) -> Option<&str> {
        match self {
            ToolInput::Read(i) => Some(&i.file_path),
            ToolInput::Write(i) => Some(&i.file_path),
            ToolInput::Edit(i) => Some(&i.file_path),
            ToolInput::Glob(i) => i.path.as_deref(),
            ToolInput::Grep(i) => i.path.as_deref(),
            ToolInput::Bash(_)
            | ToolInput::BashOutput(_)
            | ToolInput::KillShell(_)
            | ToolInput::TodoWrite(_)
            | ToolInput::AskUserQuestion(_)
            | ToolInput::Agent(_)
            | ToolInput::WebFetch(_)
            | ToolInput::Mcp(_) => None,
        }
    }

    /// The file or directory the call is about, once accepted: absolute,
    /// without `..`, links followed (what the tool opens). `None` for a
    /// tool without a path, and for a search given none (it searches the
    /// working directory).
    pub fn target(&self) -> Option<&Path> {
        self.path().map(Path::new)
    }

    /// The task, for an `Agent` call.
    pub fn delegation(&self) -> Option<&agent::AgentInput> {
        match self {
            ToolInput::Agent(a) => Some(a),
            _ => None,
        }
    }

    /// A WebFetch call's input.
    pub fn web_fetch(&self) -> Option<&web_fetch::WebFetchInput> {
        match self {
            ToolInput::WebFetch(w) => Some(w),
            _ => None,
        }
    }

    /// The Bash line and what it will run, for a Bash call.
    pub fn command(&self) -> Option<&bash::BashInput> {
        match self {
            ToolInput::Bash(b) => Some(b),
            _ => None,
        }
    }

    /// Makes the input's path absolute (against `cwd`), without `..` and
    /// with symbolic links followed: the file the call is about, which
    /// hooks, rules, the card, the log and the tool itself all see. Returns
    /// the path as written (made absolute, links not followed) when that
    /// differs from where it leads: rules judge both.
    pub fn normalize(&mut self, cwd: &Path) -> Option<PathBuf> {
        let path = self.path_mut()?;
        let lexical = resolve(cwd, path);
        let real = resolve_links(&lexical);
        *path = real.display().to_string();
        (real != lexical).then_some(lexical)
    }

    /// For tools that change a file: the change they would make now, shown
    /// on the card (and in a permission prompt) before they run. `Err` is a
    /// reason the call cannot work (the text to find is not there, …).
    /// Without `read`, the file is not read: the change proposed by the
    /// input alone (`FileDiff::unread`).
    pub async fn preview(
        &self,
        files: &FileAccess,
        cancel: &CancellationToken,
        read: bool,
    ) -> Option<Result<FileDiff, String>> {
        match self {
            ToolInput::Write(i) if !read => Some(Ok(write::proposed(i))),
            ToolInput::Edit(i) if !read => Some(Ok(edit::proposed(i))),
            ToolInput::Write(i) => Some(write::preview(i, files, cancel).await),
            ToolInput::Edit(i) => Some(edit::preview(i, files, cancel).await),
            ToolInput::Bash(_)
            | ToolInput::BashOutput(_)
            | ToolInput::KillShell(_)
            | ToolInput::Read(_)
            | ToolInput::Glob(_)
            | ToolInput::Grep(_)
            | ToolInput::TodoWrite(_)
            | ToolInput::AskUserQuestion(_)
            | ToolInput::Agent(_)
            | ToolInput::WebFetch(_)
            | ToolInput::Mcp(_) => None,
        }
    }

    /// The built-in tool, or `None` for an MCP tool.
    pub fn tool(&self) -> Option<Tool> {
        Some(match self {
            ToolInput::Mcp(_) => return None,
            ToolInput::Bash(_) => Tool::Bash,
            ToolInput::BashOutput(_) => Tool::BashOutput,
            ToolInput::KillShell(_) => Tool::KillShell,
            ToolInput::Read(_) => Tool::Read,
            ToolInput::Write(_) => Tool::Write,
            ToolInput::Edit(_) => Tool::Edit,
            ToolInput::Glob(_) => Tool::Glob,
            ToolInput::Grep(_) => Tool::Grep,
            ToolInput::TodoWrite(_) => Tool::TodoWrite,
            ToolInput::AskUserQuestion(_) => Tool::AskUserQuestion,
            ToolInput::Agent(_) => Tool::Agent,
            ToolInput::WebFetch(_) => Tool::WebFetch,
        })
    }

    /// Runs the call to completion (or until cancelled).
    pub async fn run(&self, cx: ToolContext) -> ToolOutput {
        match self {
            ToolInput::Bash(i) => bash::run(i, cx).await,
            ToolInput::BashOutput(i) => shells::output(i, cx).await,
            ToolInput::KillShell(i) => shells::kill(i, cx).await,
            ToolInput::Read(i) => read::run(i, cx).await,
            ToolInput::Write(i) => write::run(i, cx).await,
            ToolInput::Edit(i) => edit::run(i, cx).await,
            ToolInput::Glob(i) => search::glob(i, cx).await,
            ToolInput::Grep(i) => search::grep(i, cx).await,
            ToolInput::TodoWrite(i) => todo::run(i, cx).await,
            ToolInput::AskUserQuestion(i) => ask_user::run(i, cx).await,
            ToolInput::Agent(i) => agent::run(i, cx).await,
            ToolInput::WebFetch(i) => web_fetch::run(i, cx).await,
            ToolInput::Mcp(i) => mcp::run(i, cx).await,
        }
    }
}

/// The specs of every tool, for a model request: candor's own, then the
/// MCP servers' (`mcp__<server>__<tool>`).
pub fn specs(mcp: &[crate::tools::mcp::McpTool]) -> Vec<ToolSpec> {
    let built_in: Vec<(String, String)> = crate::subagents::built_ins()
        .into_iter()
        .map(|d| (d.name, d.description))
        .collect();
    specs_for(mcp, &built_in, |_| true)
}

/// The specs of the tools `offered` lets the model see, with `Agent`
/// offering `agents` (name, description; no `Agent` when there are none).
pub fn specs_for(
    mcp: &[crate::tools::mcp::McpTool],
    agents: &[(String, String)],
    offered: impl Fn(&str) -> bool,
) -> Vec<ToolSpec> {
    let types: Vec<(&str, &str)> = agents
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_str()))
        .collect();
    Tool::ALL
        .into_iter()
        .filter(|t| offered(t.name()) && (*t != Tool::Agent || !types.is_empty()))
        .map(|t| match t {
            Tool::Agent => agent::spec_with(&types),
            other => other.spec(),
        })
        .chain(
            mcp.iter()
                .filter(|t| offered(&t.exposed))
                .map(|t| ToolSpec {
                    name: t.exposed.clone().into(),
                    description: t.description.clone().into(),
                    input_schema: t.input_schema.clone(),
                }),
        )
        .collect()
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

/// A card for a call to an MCP tool: `server: tool`, its kind from the
/// tool's annotations (`read`, `fetch` when it also reaches the outside
/// world, else `other`).
pub fn present_mcp(target: &crate::event_log::McpTarget) -> Presentation {
    // Names are the server's: no control characters, and a card-sized
    // length.
    let clean = |s: &str| crate::text::shorten(&s.replace(char::is_control, " "), 80);
    Presentation {
        title: format!("{}: {}", clean(&target.server), clean(&target.tool)),
        kind: match (target.read_only, target.open_world) {
            (true, true) => ToolKind::Fetch,
            (true, false) => ToolKind::Read,
            (false, _) => ToolKind::Other,
        },
        locations: Vec::new(),
    }
}

/// Something a running tool tells the session.
#[derive(Debug)]
pub enum ToolEvent {
    /// Output to show on the card (already throttled, see `output`).
    Output(output::Chunk),
    /// The command runs in this editor terminal: the card shows it.
    Terminal(String),
    /// What an MCP tool answered beside its text.
    Content {
        content: Vec<crate::event_log::ResultContent>,
        structured: Option<Value>,
    },
    /// An MCP server's question to the user, or how it ended
    /// (`mcp::elicit`): `recorded` is answered once it is in the log, and
    /// nothing goes on before.
    Elicitation(mcp::Elicited, tokio::sync::oneshot::Sender<()>),
    /// A confined command is connecting to a host its network allowlist
    /// does not name: the session asks the user on the call's card and
    /// answers through `reply` (`session::network`).
    NetworkAsk {
        host: String,
        port: u16,
        reply: tokio::sync::oneshot::Sender<crate::sandbox::Answer>,
    },
    /// How the sandbox's proxy decided one of the command's connections.
    Network(crate::sandbox::Decision),
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
    /// What the tool tells the session while it runs.
    pub events: mpsc::UnboundedSender<ToolEvent>,
    /// Where file reads and writes go (the editor, or the disk).
    pub files: FileAccess,
    /// The editor, when it offers terminals (`terminal/*`).
    pub terminal: Option<ClientLink>,
    /// The session's background shells.
    pub shells: Shells,
    /// Files a Read deny rule forbids: searches leave them out.
    pub read_denies: ReadFilter,
    /// Where this call's whole output goes if it is too big to keep
    /// (`output::spill_path`); `None`: nowhere.
    pub spill: Option<PathBuf>,
    /// The session's `CLAUDE_ENV_FILE`: a Bash command's shell reads it
    /// first (as `BASH_ENV`) when SessionStart hooks wrote to it.
    pub env_file: Option<PathBuf>,
    /// For a file tool the user allowed on a diff: the file's `base` then
    /// (the tool writes only while the file is still that).
    pub file_base: Option<String>,
    /// The session's MCP servers (for `ToolInput::Mcp`).
    pub mcp: Option<crate::tools::mcp::Servers>,
    /// The call's id (a question is scoped to its card).
    pub tool_call_id: String,
    /// The editor, to ask the user through (`AskUserQuestion`).
    pub client: Option<ClientLink>,
    /// The boundary the call was settled with (a Bash call): it runs in
    /// exactly that, through the launcher, or not at all.
    pub boundary: Option<crate::sandbox::Boundary>,
    /// The session's sandbox runtime (launcher, `TMPDIR`, lifeline).
    pub confiner: Option<confined::Confiner>,
    /// What a WebFetch may reach and who judges its redirects.
    pub web: Option<web_fetch::WebAccess>,
}

impl ToolContext {
    /// The env file to source, if a hook wrote something in it.
    pub fn session_env(&self) -> Option<&std::path::Path> {
        self.env_file
            .as_deref()
            .filter(|f| std::fs::metadata(f).is_ok_and(|m| m.is_file() && m.len() > 0))
    }
}

/// Which files the session's rules forbid reading, as the search tools
/// ask it (the session builds it from its policy; tools do not know rules).
#[derive(Clone, Default)]
pub struct ReadFilter(Option<Arc<PathTest>>);

/// A test on a path.
type PathTest = dyn Fn(&Path) -> bool + Send + Sync;

impl ReadFilter {
    pub fn new(denies: impl Fn(&Path) -> bool + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(denies)))
    }

    /// Whether reading `path` is denied.
    pub fn denies(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|f| f(path))
    }
}

impl std::fmt::Debug for ReadFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ReadFilter(rules)"
        } else {
            "ReadFilter(none)"
        })
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub status: ResultStatus,
    /// What the model is told (capped, see [`cap_for_model`]).
    pub text: String,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// The change a file tool made.
    pub diff: Option<FileDiff>,
    /// Where an output too big to keep went.
    pub file: Option<crate::event_log::OutputFile>,
}

impl ToolOutput {
    /// A failure the model should hear about (bad path, not found, …).
    pub fn failed(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Failed,
            text: text.into(),
            exit_code: None,
            signal: None,
            diff: None,
            file: None,
        }
    }

    pub fn completed(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Completed,
            text: text.into(),
            exit_code: None,
            signal: None,
            diff: None,
            file: None,
        }
    }

    pub fn cancelled(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Cancelled,
            ..Self::failed(text)
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

/// Resolves a path argument against the session's working directory and
/// removes `.` and `..` components (lexically: symlinks are not followed),
/// so that `/p/../etc/passwd` is shown, ruled on and logged as `/etc/passwd`.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    use std::path::Component;
    let joined = cwd.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Follows every symbolic link in an absolute path, as the kernel would
/// when the file is opened, and returns where it leads. Unlike
/// `fs::canonicalize`, a path that does not exist (yet) still resolves:
/// its existing part is followed and the rest appended, so a Write through
/// a symlinked directory, or to a dangling link, is judged where it will
/// land. After 40 links (a loop) the rest is left as it is.
pub fn resolve_links(path: &Path) -> PathBuf {
    use std::collections::VecDeque;
    use std::path::Component;
    let mut pending: VecDeque<PathBuf> = path
        .components()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut out = PathBuf::new();
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        match part.components().next() {
            Some(Component::RootDir | Component::Prefix(_)) => out.push(&part),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Normal(name)) => {
                let next = out.join(name);
                let link = std::fs::symlink_metadata(&next)
                    .ok()
                    .filter(|m| m.file_type().is_symlink())
                    .and_then(|_| std::fs::read_link(&next).ok());
                match link {
                    Some(target) if hops < 40 => {
                        hops += 1;
                        if target.is_absolute() {
                            out = PathBuf::new();
                        }
                        for c in target.components().rev() {
                            pending.push_front(PathBuf::from(c.as_os_str()));
                        }
                    }
                    Some(_) => {
                        out = next;
                        out.extend(pending.drain(..));
                    }
                    None => out = next,
                }
            }
        }
    }
    if out.as_os_str().is_empty() {
        return path.to_owned();
    }
    out
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
    fn paths_resolve_without_dots() {
        assert_eq!(
            resolve(Path::new("/p"), "src/a.rs"),
            PathBuf::from("/p/src/a.rs")
        );
        assert_eq!(resolve(Path::new("/p"), "../x"), PathBuf::from("/x"));
        assert_eq!(
            resolve(Path::new("/p"), "/etc/./a/../passwd"),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(resolve(Path::new("/p"), "/../.."), PathBuf::from("/"));
    }

    #[test]
    fn accepting_normalizes_the_path_in_the_arguments_and_the_input_alike() {
        use serde_json::json;
        let cwd = Path::new("/p");
        for (tool, args) in [
            (Tool::Read, json!({"file_path": "src/../a.rs", "limit": 3})),
            (Tool::Write, json!({"file_path": "a.rs", "content": "x"})),
            (
                Tool::Edit,
                json!({"file_path": "./a.rs", "old_string": "x", "new_string": "y"}),
            ),
            (Tool::Glob, json!({"pattern": "*.rs", "path": "src"})),
            (Tool::Grep, json!({"pattern": "x", "path": "src/.."})),
            (Tool::Glob, json!({"pattern": "*.rs"})),
            (Tool::Bash, json!({"command": "ls"})),
        ] {
            let accepted = tool.accept(&args, cwd).unwrap();
            let mut typed = ToolInput::parse(tool, &args).unwrap();
            typed.normalize(cwd);
            assert_eq!(accepted.input, typed, "{args}");
            assert_eq!(
                accepted.input,
                ToolInput::parse(tool, &accepted.arguments).unwrap(),
                "{args}"
            );
        }
        let read = Tool::Read
            .accept(&json!({"file_path": "a.rs"}), cwd)
            .unwrap();
        assert_eq!(read.arguments, json!({"file_path": "/p/a.rs"}));
        // Checked as written: an empty path is refused, not taken for the
        // working directory.
        assert!(Tool::Read.accept(&json!({"file_path": ""}), cwd).is_err());
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
