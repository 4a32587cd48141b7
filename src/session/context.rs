//! The session's context: what a turn and its calls work with ([`Gate`]:
//! policy, grants, the editor, files, shells, settings), how a turn is
//! controlled ([`TurnControl`]) and how it fails ([`TurnError`]). Its own
//! module, so that `turn`, `call`, `events`, `commands` and `trust` all
//! depend on it and on none of each other in a circle.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::event_log::LogError;
use crate::interception::Policy;
use crate::interception::policy::Rule;
use crate::providers::ProviderError;
use crate::tools::{ClientLink, FileAccess, Shells};

/// What the session's calls go through: its policy, what the user has
/// allowed for the rest of the session, and the way to ask the user.
#[derive(Debug)]
pub(crate) struct Gate {
    pub(crate) session_id: String,
    pub(crate) policy: Policy,
    pub(crate) grants: Vec<Rule>,
    /// The editor (permission requests; `fs/*` and terminals when offered).
    pub(crate) client: ClientLink,
    /// Where file tools read and write (the editor's `fs/*`, or the disk).
    pub(crate) files: FileAccess,
    /// The editor, when it offers terminals.
    pub(crate) terminal: Option<ClientLink>,
    /// The session's background shells.
    pub(crate) shells: Shells,
    /// Mode and model changes from the client.
    pub(crate) settings: super::settings::Inbox,
    /// The session's `CLAUDE_ENV_FILE` (when Claude Code hooks are read).
    pub(crate) env_file: Option<std::path::PathBuf>,
    /// What the session was started with (`/doctor` reports on it).
    pub(crate) config: Arc<crate::config::Config>,
    /// The session's MCP servers.
    pub(crate) mcp: crate::tools::mcp::Servers,
    /// The user's command files, as last read (`session::user_commands`).
    pub(crate) user_commands: Vec<crate::bridges::commands::UserCommand>,
    /// Whether the project's own settings apply (`session::trust`).
    pub(crate) trust: Trust,
    /// The session's sandbox runtime (launcher, `TMPDIR`, lifeline).
    pub(crate) confiner: crate::tools::confined::Confiner,
    /// The session's config options as they now are, shared with the
    /// dispatcher's handle (`/sandbox` and `/trust` change the sandbox's).
    pub(crate) view: Arc<std::sync::Mutex<super::settings::View>>,
}

/// Where the session stands with its project's own settings.
#[derive(Debug)]
pub(crate) enum Trust {
    /// They want nothing that only trust gives.
    NotNeeded,
    /// They apply: `by` says who trusted them; `offer` is what they bind
    /// to; `remembered`: in the user's records or `trust.json`.
    Trusted {
        by: String,
        project: PathBuf,
        offer: crate::bridges::trust::Offer,
        remembered: bool,
    },
    /// They wait for the user's `/trust`.
    Withheld(Box<Withheld>),
}

/// A project's settings waiting for the user's trust.
#[derive(Debug)]
pub(crate) struct Withheld {
    /// What the project's hooks are told of the session (for the rebuild).
    pub(crate) context: Arc<crate::bridges::SessionContext>,
    /// What trusting gives, as last shown or read.
    pub(crate) offer: crate::bridges::trust::Offer,
    /// The notices loading gave when the session opened (not repeated when
    /// the policy is rebuilt).
    pub(crate) said: std::collections::HashSet<String>,
    /// The user was told, in a turn, what waits and how to trust.
    pub(crate) told: bool,
    /// The user said never to these (`trust.json`).
    pub(crate) refused: bool,
    /// Why an earlier trust no longer holds (which files changed), for
    /// the user.
    pub(crate) changed: Option<String>,
    /// SessionStart's `source` for the project's SessionStart hooks when
    /// trusted (`startup`, `resume`).
    pub(crate) source: &'static str,
}

/// Between SIGTERM and SIGKILL for a cancelled command.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

/// What a turn needs besides the committer and the model.
#[derive(Debug, Clone)]
pub(crate) struct TurnControl {
    pub(crate) cwd: PathBuf,
    pub(crate) cancel: CancellationToken,
    pub(crate) hard_stop: CancellationToken,
    /// The session's line: what arrives while the turn runs is recorded
    /// through it, and steering messages come from it.
    pub(crate) queue: super::queue::Queue,
}

/// Why a turn could not finish normally.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TurnError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}
