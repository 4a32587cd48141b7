//! What a tool gets besides its call ([`ToolContext`]), and the session's
//! rules as the tools ask them: which files the search tools leave out
//! ([`ReadFilter`]), what a WebFetch may reach and who judges its
//! redirects ([`WebAccess`]). What a tool tells the session while it runs
//! is `tool_event`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::confined;
use super::files::{ClientLink, FileAccess};
use super::shells::Shells;
use super::tool_event::ToolEvent;

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
    pub mcp: Option<super::mcp::servers::Servers>,
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
    pub web: Option<WebAccess>,
}

/// What a WebFetch may reach, and who judges a redirect to another host
/// (the session's rules, as `session::call` builds it: tools do not know
/// rules).
#[derive(Clone)]
pub struct WebAccess {
    pub access: crate::web::Access,
    pub judge: Arc<JudgeFn>,
}

/// Whether the rules let a fetch go on to this URL (`Err`: why not).
pub type JudgeFn = dyn Fn(&Url) -> Result<(), String> + Send + Sync;

impl std::fmt::Debug for WebAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebAccess")
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
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
