//! The session's kit: what a turn, its calls and candor's commands work
//! with ([`SessionKit`]: the policy and grants calls are judged by, the
//! editor, files, shells, MCP servers, settings, trust, the sandbox
//! runtime, the view of the session's options shared with its handle, the
//! subagent types and the subagents' [`Family`]), how a turn
//! is controlled ([`TurnControl`]) and how it fails ([`TurnError`]). Its
//! own module, so that `turn`, `call`, `events`, `builtin_commands`,
//! `trust` and `subagent` all depend on it and on none of each other in a
//! circle.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::event_log::LogError;
use crate::interception::Policy;
use crate::interception::policy::Rule;
use crate::providers::ProviderError;
use crate::tools::{ClientLink, FileAccess, Shells};

/// The session's equipment, which its turns, calls and commands work
/// with: its policy, what the user has allowed for the rest of the
/// session, the way to ask the user, where files and commands go, its MCP
/// servers, settings and trust, its options as the client is told of
/// them, the subagents it may start and where it stands among them
/// (`interception` judges the calls).
#[derive(Debug)]
pub(crate) struct SessionKit {
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
    pub(crate) user_commands: Vec<crate::bridges::command_files::UserCommand>,
    /// Whether the project's own settings apply (`session::trust`).
    pub(crate) trust: Trust,
    /// The session's sandbox runtime (launcher, `TMPDIR`, lifeline).
    pub(crate) confiner: crate::tools::confined::Confiner,
    /// The session's config options as they now are, shared with the
    /// dispatcher's handle (`/sandbox` and `/trust` change the sandbox's).
    pub(crate) view: Arc<std::sync::Mutex<super::settings::View>>,
    /// The subagent types this session may start.
    pub(crate) agents: Arc<crate::subagents::Catalog>,
    /// Its subagents' limits, and for a subagent, where it stands.
    pub(crate) family: Family,
}

/// What a session knows of subagents: the limits shared by the whole
/// tree of a session the user opened, and, in a subagent, its place.
#[derive(Debug, Clone)]
pub(crate) struct Family {
    /// How many subagents one model response's `Agent` calls run at once.
    pub(crate) parallel: usize,
    /// Subagents alive in the tree (each holds a permit while it runs).
    pub(crate) live: Arc<tokio::sync::Semaphore>,
    /// How many may be alive at once (the semaphore's size).
    pub(crate) live_max: usize,
    /// The client takes subagent sessions (`clientCapabilities.subagents`):
    /// a child is announced (`subagent_update`) and its calls stream as its
    /// own session's updates.
    pub(crate) native: bool,
    /// The client takes `notice` updates (a subagent's session shows its
    /// notices as its parent's does).
    pub(crate) notices: bool,
    /// The running subagents of the tree, by session id, for a client's
    /// `session/cancel` of one of them.
    pub(crate) running: Arc<std::sync::Mutex<std::collections::HashMap<String, CancellationToken>>>,
    /// In a subagent: who it is and where its permission prompts go.
    pub(crate) place: Option<Place>,
}

/// A subagent's place in its tree.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    /// 1 for a child of the user's session.
    pub(crate) depth: u32,
    /// For a client that does not take subagent sessions: the session and
    /// card its permission prompts are asked on (the user's session's
    /// `Agent` card this subagent works under), and how they name it.
    pub(crate) asked_on: Option<AskedOn>,
}

/// Where a subagent's permission prompts go when the client does not
/// take subagent sessions.
#[derive(Debug, Clone)]
pub(crate) struct AskedOn {
    pub(crate) session_id: String,
    pub(crate) card_id: String,
    /// `the Explore subagent` (`…, started by the general-purpose subagent`).
    pub(crate) label: String,
}

impl Family {
    /// A session the user opened: no place, limits from the config.
    pub(crate) fn root(parallel: usize, live_max: usize, native: bool, notices: bool) -> Family {
        Family {
            parallel: parallel.max(1),
            live: Arc::new(tokio::sync::Semaphore::new(live_max.max(1))),
            live_max: live_max.max(1),
            native,
            notices,
            running: Arc::default(),
            place: None,
        }
    }

    /// How deep this session is (0: the user's).
    pub(crate) fn depth(&self) -> u32 {
        self.place.as_ref().map_or(0, |p| p.depth)
    }
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
        offer: crate::bridges::project_trust::Offer,
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
    pub(crate) offer: crate::bridges::project_trust::Offer,
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

/// A subagent's permission request as its parent's card asks it: the
/// parent's `Agent` card (`on`), titled with the subagent and its call,
/// holding the call's card content; `_meta.candor.subagent` names the
/// subagent's session and call.
pub(crate) fn on_parent_card(
    card: agent_client_protocol_schema::v1::ToolCallUpdate,
    on: &AskedOn,
    child_session: &str,
) -> agent_client_protocol_schema::v1::ToolCallUpdate {
    use agent_client_protocol_schema::v1::{ToolCallUpdate, ToolCallUpdateFields};
    let title = card.fields.title.clone().unwrap_or_default();
    let mut fields =
        ToolCallUpdateFields::new().title(format!("{} wants to run: {title}", on.label));
    fields.content = card.fields.content.clone();
    fields.raw_input = card.fields.raw_input.clone();
    fields.kind = card.fields.kind;
    let mut meta = card.meta.clone().unwrap_or_default();
    let candor = meta
        .entry("candor".to_owned())
        .or_insert_with(|| serde_json::json!({}));
    if let Some(obj) = candor.as_object_mut() {
        obj.insert(
            "subagent".into(),
            serde_json::json!({"sessionId": child_session, "toolCallId": card.tool_call_id.0.as_ref()}),
        );
    }
    ToolCallUpdate::new(on.card_id.clone(), fields).meta(meta)
}
