//! The session actor: one task per session that owns the log, the
//! presenter and the model, and runs one turn at a time, taking them from
//! the session's line ([`super::queue`]) in the order they arrived.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ClientCapabilities, ElicitationCapabilities, SessionId, StopReason,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::commit::Committer;
use super::handle::{Command, SessionHandle, Started};
use super::kit::SessionKit;
use super::kit::{TurnControl, TurnError};
use super::queue::Queue;
use super::settings;
use super::turn;
use super::{events, restore};
use crate::bridges::{SessionContext, TurnInfo};
use crate::config::Config;
use crate::event_log::{Event, EventLog, FORMAT_VERSION, LogError, NoticeLevel, ReadLog, TurnStop};
use crate::presentation::{Mode, Presenter};
use crate::providers::Provider;
use crate::rpc::Outgoing;
use crate::tools::{ClientLink, FileAccess, Shells};
use crate::transport::Outbox;

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{0}")]
    Policy(String),
}

/// Where a session comes from.
#[derive(Debug)]
pub(crate) enum Origin {
    /// `session/new`: a new log.
    New,
    /// `session/load` (`replay`: the client is sent the conversation) or
    /// `session/resume`: the stored log of session `id`.
    Stored {
        id: String,
        read: ReadLog,
        replay: bool,
    },
}

/// Where a session runs: its directory, and the MCP servers the editor
/// gave it.
pub(crate) struct Place<'a> {
    pub(crate) cwd: PathBuf,
    pub(crate) mcp_servers: &'a [agent_client_protocol_schema::v1::McpServer],
    /// The additional directories the client gave, checked (`crate::roots`).
    pub(crate) roots: Vec<crate::event_log::AddedDirectory>,
    /// The client's system prompt, when it gave one.
    pub(crate) prompt: Option<crate::event_log::ClientPrompt>,
    /// How many invisible characters were taken out of it.
    pub(crate) prompt_hidden: usize,
}

/// Opens a session (a new log with its `session/started`, or a stored one
/// replayed and recovered) and starts its actor.
pub(crate) fn start(
    config: &Config,
    place: Place<'_>,
    origin: Origin,
    outbox: Outbox,
    outgoing: Arc<Outgoing>,
    client: &ClientCapabilities,
    hard_stop: CancellationToken,
) -> Result<Started, StartError> {
    let (cwd, mcp_servers) = (place.cwd, place.mcp_servers);
    let id = match &origin {
        Origin::New => uuid::Uuid::new_v4().to_string(),
        Origin::Stored { id, .. } => id.clone(),
    };
    let log_path = config.sessions_dir().join(format!("{id}.jsonl"));
    // The policy: the policy file's, the user's Claude Code and Codex hooks
    // and rules, and the project's own only when it is trusted. A broken
    // policy file fails the session before it has a log.
    let context = Arc::new(SessionContext::new(
        id.clone(),
        log_path.clone(),
        cwd.clone(),
        config.user_home.clone(),
    ));
    let (built, trust, source) = policy(config, &context, &origin)?;
    let mut policy = built.policy;
    // The additional directories are the project too, for every rule.
    policy.rules.roots = crate::roots::real(&place.roots);
    let mut start_notices = built.notices;
    let (built_agents, family) = (built.agents, family(config, client));
    let (mut log, stored, damaged) = open_log(config, &id, &log_path, origin, &mut start_notices)?;
    let mcp = start_mcp(
        mcp_servers,
        built.mcp,
        (&cwd, client),
        config,
        &mut start_notices,
    );
    log.fail_at(config.log_fails_at);
    let mut provider = Provider::for_session(config, &cwd);
    let presenter = presenter(client, &cwd, stored.is_some());
    let mut committer = Committer::new(SessionId::new(id.clone()), log, presenter, outbox);
    let beginning = Beginning {
        committer: &mut committer,
        provider: &mut provider,
        policy: &mut policy,
        cwd: &cwd,
        notices: &mut start_notices,
        subagents: family.native,
        notices_taken: family.notices,
    };
    let grants = match stored {
        None => beginning.start(&id)?,
        Some(replay) => beginning.restore(replay)?,
    };
    let records = committer.records();
    let asked = (place.roots, place.prompt, place.prompt_hidden);
    let gathering = (damaged.is_none())
        .then(|| environment(config, &cwd, &policy, records, asked, &mut start_notices))
        .flatten();
    // Wake-ups only: a full inbox already holds one.
    let (inbox, commands) = mpsc::channel(8);
    let link = client_link(outgoing, &id, client, config);
    let shells = Shells::default();
    let (view, shared_view) = options(&mut committer, &provider, &policy);
    let (changes, settings) = settings::Inbox::new();
    let kit = SessionKit {
        session_id: id.clone(),
        policy,
        grants,
        client: link.clone(),
        files: FileAccess::new((link.read || link.write).then(|| link.clone())),
        terminal: link.terminal.then(|| link.clone()),
        shells: shells.clone(),
        settings,
        env_file: config.claude.is_some().then(|| context.env_file.clone()),
        config: Arc::new(config.clone()),
        mcp,
        user_commands: Vec::new(),
        trust,
        confiner: crate::tools::confined::Confiner::new(config.launcher.clone(), &cwd),
        view: shared_view.clone(),
        agents: Arc::new(built_agents),
        family,
    };
    // The kernel asked and the house started while the user types.
    super::sandbox::spare_soon(&kit, committer.records());
    let handle = SessionHandle::new(
        id.clone(),
        log_path,
        inbox,
        hard_stop.clone(),
        shells,
        shared_view,
        changes,
    )
    .with_subagents(kit.family.running.clone());
    tracing::info!(session = %id, provider = provider.name(), log = %handle.log_path().display(), "session started");
    let (opened, opening) = Opening::new(start_notices, context, damaged, gathering, source);
    let task = tokio::spawn(run(
        Actor {
            committer,
            provider,
            kit,
            cwd,
            hard_stop,
            queue: handle.queue().clone(),
        },
        commands,
        opening,
    ));
    Ok(Started {
        handle,
        task,
        settings: view,
        opened,
    })
}

/// The session's subagent limits, and what the client takes of them.
fn family(config: &Config, client: &ClientCapabilities) -> super::kit::Family {
    let notices = client.session.as_ref().is_some_and(|s| s.notices.is_some());
    super::kit::Family::root(
        config.subagents_parallel(),
        config.subagents_live(),
        client.subagents.is_some(),
        notices,
    )
}

/// The session's config options as they start (its mode, model, effort,
/// and sandbox, the user's choices in a stored log included), shared by
/// the dispatcher's handle and the actor; the committer tells the client
/// when a record changes them (`Committer::follow_options`).
fn options(
    committer: &mut Committer,
    provider: &Provider,
    policy: &crate::interception::Policy,
) -> (settings::View, Arc<std::sync::Mutex<settings::View>>) {
    let sandbox = super::sandbox::effective(&policy.sandbox, committer.records());
    let view = settings::View {
        model: provider.model().map(str::to_owned),
        model_choices: provider.model_choices(),
        mode: policy.mode,
        effort: provider.effort(),
        effort_source: provider.effort_source(),
        sandbox: Some((sandbox.preset, sandbox.network)),
    };
    let shared = Arc::new(std::sync::Mutex::new(view.clone()));
    committer.follow_options(super::commit::Options {
        current: Box::new({
            let view = shared.clone();
            move || crate::sync::lock(&view).config_options()
        }),
        sent: view.config_options(),
    });
    (view, shared)
}

/// The session's presenter, for what the client declared it takes
/// (`session.notices`, `session.compaction`); replaying a stored session.
fn presenter(client: &ClientCapabilities, cwd: &std::path::Path, stored: bool) -> Presenter {
    let session = client.session.as_ref();
    let mode = if stored { Mode::Replay } else { Mode::Live };
    Presenter::new(cwd.to_owned(), mode)
        .with_notices(session.is_some_and(|s| s.notices.is_some()))
        .with_compaction(session.is_some_and(|s| s.compaction.is_some()))
        .with_subagents(client.subagents.is_some())
}

/// The way to the editor, as far as the client offered it.
fn client_link(
    outgoing: Arc<Outgoing>,
    id: &str,
    client: &ClientCapabilities,
    config: &Config,
) -> ClientLink {
    ClientLink {
        outgoing,
        session_id: id.to_owned(),
        read: client.fs.read_text_file,
        write: client.fs.write_text_file,
        terminal: client.terminal,
        elicit_form: client
            .elicitation
            .as_ref()
            .is_some_and(ElicitationCapabilities::supports_form),
        elicit_url: client
            .elicitation
            .as_ref()
            .is_some_and(ElicitationCapabilities::supports_url),
        fs_timeout: config.client_fs_timeout,
    }
}

/// The session's policy and where it stands with its project's own
/// settings (a stored session trusts again what it trusted,
/// `trust/granted`, while the files still hold it), and SessionStart's
/// `source`.
fn policy(
    config: &Config,
    context: &Arc<SessionContext>,
    origin: &Origin,
) -> Result<
    (
        crate::bridges::session_policy::Built,
        super::kit::Trust,
        &'static str,
    ),
    StartError,
> {
    let (granted, source) = match origin {
        Origin::New => (None, "startup"),
        Origin::Stored { read, .. } => (
            super::trust::granted(&read.records, &context.project_dir),
            "resume",
        ),
    };
    let (built, trust) = super::trust::start(config, context, granted.as_ref(), source)
        .map_err(StartError::Policy)?;
    Ok((built, trust, source))
}

/// Offers the session's commands (candor's, the MCP servers' prompts,
/// then the user's command files) when they differ from those `offered`
/// last.
fn offer_commands(
    committer: &mut Committer,
    kit: &SessionKit,
    offered: &mut Vec<crate::event_log::OfferedCommand>,
) {
    let mut commands = super::builtin_commands::offered();
    commands.extend(super::prompt_mcp::offered(kit));
    commands.extend(super::user_commands::offered(&kit.user_commands));
    if commands == *offered {
        return;
    }
    *offered = commands.clone();
    if let Err(e) = committer.commit(Event::CommandsOffered { commands }) {
        tracing::warn!(error = %e, "could not offer the session's commands");
    }
}

/// Starts a session's MCP servers, the editor's and the configured ones
/// (one entry a name, see `tools::mcp::choose`); none is waited for here.
fn start_mcp(
    editor: &[agent_client_protocol_schema::v1::McpServer],
    configured: Vec<crate::tools::mcp::ServerSpec>,
    (cwd, client): (&std::path::Path, &ClientCapabilities),
    config: &Config,
    notices: &mut Vec<(NoticeLevel, String)>,
) -> crate::tools::mcp::Servers {
    let (mut specs, problems) = crate::tools::mcp::from_editor(editor);
    notices.extend(problems.into_iter().map(|p| (NoticeLevel::Warning, p)));
    specs.extend(configured);
    // Annotations decide only where the user lets them.
    // A server asks through candor for pages only where the editor opens them.
    let pages = client
        .elicitation
        .as_ref()
        .is_some_and(ElicitationCapabilities::supports_url);
    let servers =
        crate::tools::mcp::Servers::new(config.mcp_trust_annotations()).passing_pages(pages);
    let chosen = crate::tools::mcp::choose(specs);
    servers.shadowed(chosen.shadowed);
    servers.start(chosen.servers, cwd);
    servers
}

/// A new session's log, or a stored one opened (read-only when damaged:
/// why, for the user); `Some(replay)` for a stored one.
fn open_log(
    config: &Config,
    id: &str,
    log_path: &std::path::Path,
    origin: Origin,
    notices: &mut Vec<(NoticeLevel, String)>,
) -> Result<(EventLog, Option<bool>, Option<String>), StartError> {
    let mut damaged = None;
    let (log, stored) = match origin {
        Origin::New => (EventLog::create(&config.sessions_dir(), id)?, None),
        Origin::Stored {
            id: _,
            read,
            replay,
        } => {
            let path = log_path.to_owned();
            if let Some(len) = read.torn {
                notices.push((
                    NoticeLevel::Warning,
                    format!(
                        "The session log's last line was cut short ({len} bytes, a write interrupted by a crash); it never was a record and was removed. Everything before it loaded."
                    ),
                ));
            }
            let log = match read.corrupt {
                None => EventLog::open(&path, read)?,
                Some(damage) => {
                    tracing::warn!(error = %damage, "loading a damaged session log read-only");
                    let reason = damage.to_string();
                    damaged = Some(format!(
                        "{reason}. candor does not append after damage: start a new session to go on"
                    ));
                    EventLog::damaged(&path, read.records, reason)?
                }
            };
            let missing = log.attachments().unavailable();
            if !missing.is_empty() {
                let (digest, why) = missing[0];
                notices.push((
                    NoticeLevel::Warning,
                    format!(
                        "{} image(s) of this session are no longer in its content store (for one, {digest}: {why}); they show as placeholders, and the model is told they are unavailable.",
                        missing.len()
                    ),
                ));
            }
            (log, Some(replay))
        }
    };
    Ok((log, stored, damaged))
}

/// What a session's first records are written with: a new session's
/// start, or a stored one's restoring.
struct Beginning<'a> {
    committer: &'a mut Committer,
    provider: &'a mut Provider,
    policy: &'a mut crate::interception::Policy,
    cwd: &'a std::path::Path,
    notices: &'a mut Vec<(NoticeLevel, String)>,
    /// The client takes subagent sessions (their logs are replayed too).
    subagents: bool,
    /// The client takes `notice` updates.
    notices_taken: bool,
}

impl Beginning<'_> {
    /// A new session's `session/started`; it has no grants yet.
    fn start(self, id: &str) -> Result<Vec<crate::interception::policy::Rule>, StartError> {
        self.committer.commit(Event::SessionStarted {
            session_id: id.to_owned(),
            cwd: self.cwd.to_owned(),
            format: FORMAT_VERSION,
            candor_version: env!("CARGO_PKG_VERSION").to_owned(),
            provider: self.provider.name().to_owned(),
            model: self.provider.model().map(str::to_owned),
            context_window: self.provider.context_window(),
            parent: None,
        })?;
        Ok(Vec::new())
    }

    /// Brings a stored session back: its settings and grants from the
    /// records, the conversation replayed to the client (`replay`), and
    /// what a crash left open closed; all before the response. Returns the
    /// session's grants.
    fn restore(self, replay: bool) -> Result<Vec<crate::interception::policy::Rule>, StartError> {
        // The conversation as the client saw it, then what a crash left
        // open, closed; both before the response.
        let restored = restore::settings(self.committer.records());
        if let Some(Event::SessionStarted { cwd: first, .. }) =
            self.committer.records().first().map(|r| &r.event)
            && first != self.cwd
        {
            self.notices.push((
                NoticeLevel::Info,
                format!(
                    "This session was started in {}; it now works in {} (session/list still files it under the first).",
                    first.display(),
                    self.cwd.display()
                ),
            ));
        }
        settings::restore(
            (
                restored.mode,
                restored.model.as_deref(),
                restored.effort.as_deref(),
            ),
            &mut self.policy.mode,
            self.provider,
        );
        let grants = restore::grants(&restored.grants);
        self.provider.resume(self.committer.records());
        // What a crash left open in its subagents' logs is closed first, so
        // their replay shows it closed.
        let dir = self
            .committer
            .log_path()
            .parent()
            .map(std::path::Path::to_owned);
        if let Some(dir) = &dir {
            let outbox = self.committer.outbox().clone();
            restore::recover_subagents(self.committer.records(), dir, &outbox);
        }
        let (native, notices) = (self.subagents, self.notices_taken);
        self.committer.replay_with(replay, |record, outbox| {
            if native && let Some(dir) = &dir {
                restore::replay_subagent(record, outbox, dir, notices);
            }
        });
        match restore::recover(self.committer) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(records = n, "closed what a crash left open")
            }
            // A damaged log takes no records; the notice says why.
            Err(LogError::Damaged { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(grants)
    }
}

/// What the actor does first, once the client has the session's id.
#[derive(Debug)]
struct Opening {
    /// Fired once the `session/new` response is queued: nothing about the
    /// session may reach the client before it.
    opened: oneshot::Receiver<()>,
    /// What loading the settings had to say.
    notices: Vec<(NoticeLevel, String)>,
    /// What bridge hooks are told about the session and its turn.
    context: Arc<SessionContext>,
    /// The log cannot take records (damaged): why, for the user.
    damaged: Option<String>,
    /// The session's `session/environment`, being gathered.
    gathering: Option<tokio::task::JoinHandle<crate::event_log::Environment>>,
    /// SessionStart's `source`: `startup`, or `resume` for a stored session.
    source: &'static str,
}

impl Opening {
    /// What the actor does first, and the word to fire once the session's
    /// response is queued.
    fn new(
        notices: Vec<(NoticeLevel, String)>,
        context: Arc<SessionContext>,
        damaged: Option<String>,
        gathering: Option<tokio::task::JoinHandle<crate::event_log::Environment>>,
        source: &'static str,
    ) -> (oneshot::Sender<()>, Opening) {
        let (opened, opened_rx) = oneshot::channel();
        let opening = Opening {
            opened: opened_rx,
            notices,
            context,
            damaged,
            gathering,
            source,
        };
        (opened, opening)
    }
}

/// How long the actor waits for its `session/new` response to be queued
/// before going on anyway (the request may have been cancelled).
const OPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What the actor owns.
struct Actor {
    committer: Committer,
    provider: Provider,
    kit: SessionKit,
    cwd: PathBuf,
    hard_stop: CancellationToken,
    queue: Queue,
}

/// The actor loop: ends when every handle is gone.
async fn run(actor: Actor, mut commands: mpsc::Receiver<Command>, mut opening: Opening) {
    let Actor {
        mut committer,
        mut provider,
        mut kit,
        cwd,
        hard_stop,
        queue,
    } = actor;
    let _ = tokio::time::timeout(OPEN_WAIT, &mut opening.opened).await;
    if let Some(damage) = &opening.damaged {
        committer.notify_unrecorded(
            NoticeLevel::Error,
            format!("This session was loaded read-only: {damage}"),
        );
    }
    // candor's commands, the MCP servers' prompts and the user's command
    // files, offered again whenever a server's prompts change while the
    // session is idle, or the files changed when a prompt comes.
    let mut mcp_changes = kit.mcp.changes();
    let mut offered = Vec::new();
    let mut file_problems = Vec::new();
    super::user_commands::refresh(&mut committer, &mut kit, &cwd, &mut file_problems);
    offer_commands(&mut committer, &kit, &mut offered);
    begin(
        &mut committer,
        &kit,
        provider.model(),
        &cwd,
        &mut opening,
        &hard_stop,
    )
    .await;
    // The title being made after the first turn (`session::title`).
    let mut titling: Option<tokio::task::JoinHandle<(String, crate::event_log::TitleSource)>> =
        None;
    loop {
        let title_made = async {
            match titling.as_mut() {
                Some(task) => task.await,
                None => std::future::pending().await,
            }
        };
        let command = tokio::select! {
            // A change the client made before a prompt is in effect for it.
            biased;
            made = title_made => {
                titling = None;
                record_title(&mut committer, made);
                continue;
            }
            true = kit.settings.arrived() => {
                // Applied at once, while no turn runs.
                if let Err(e) = kit.settings.apply(&mut committer, &mut kit.policy.mode, Some(&mut provider)) {
                    tracing::error!(error = %e, "could not record a settings change");
                }
                continue;
            }
            command = commands.recv() => match command {
                Some(command) => command,
                None => break,
            },
            Ok(()) = mcp_changes.changed() => {
                offer_commands(&mut committer, &kit, &mut offered);
                // A question a server asked while no call ran.
                for text in kit.mcp.take_notices() {
                    if let Err(e) = committer.commit(Event::Notice { level: NoticeLevel::Warning, text }) {
                        tracing::warn!(error = %e, "could not record a notice");
                    }
                }
                continue;
            }
        };
        match command {
            Command::Arrived => {
                let mut turns = Turns {
                    committer: &mut committer,
                    provider: &mut provider,
                    kit: &mut kit,
                    cwd: &cwd,
                    hard_stop: &hard_stop,
                    queue: &queue,
                    opening: &opening,
                    titling: &mut titling,
                };
                turns.run_line(&mut offered, &mut file_problems).await;
            }
        }
    }
    // Nothing more will run: what waits is answered and recorded.
    if let Some(task) = titling {
        task.abort();
    }
    queue.close();
    if let Err(e) = queue.next(&mut committer) {
        tracing::error!(error = %e, "could not record what was left in the queue");
    }
    events::session_end(&mut committer, &kit, &cwd, "other").await;
    // The session is over: nothing it started may outlive it.
    kit.shells.kill_all();
    kit.mcp.stop();
}

/// Records the title made (`session/titled`).
fn record_title(
    committer: &mut Committer,
    made: Result<(String, crate::event_log::TitleSource), tokio::task::JoinError>,
) {
    match made {
        Ok((title, source)) => {
            if let Err(e) = committer.commit(Event::SessionTitled { title, source }) {
                tracing::warn!(error = %e, "could not record the session's title");
            }
        }
        Err(e) => tracing::warn!(error = %e, "making the session's title failed"),
    }
}

/// Starts making the session's title (`session::title`): with a provider
/// of its own for the session's model, when the model may be asked.
fn start_title(
    kit: &SessionKit,
    provider: &Provider,
    cwd: &std::path::Path,
    prompt: String,
    hard_stop: &CancellationToken,
) -> tokio::task::JoinHandle<(String, crate::event_log::TitleSource)> {
    let asked = (kit.config.model_titles() && provider.is_model() && provider.name() != "scripted")
        .then(|| {
            let mut own = Provider::for_session(&kit.config, cwd);
            if let Some(model) = provider.model() {
                own.set_model(model);
            }
            own
        });
    tokio::spawn(super::title::make(asked, prompt, hard_stop.child_token()))
}

/// What the actor runs turns with.
struct Turns<'a> {
    committer: &'a mut Committer,
    provider: &'a mut Provider,
    kit: &'a mut SessionKit,
    cwd: &'a PathBuf,
    hard_stop: &'a CancellationToken,
    queue: &'a Queue,
    opening: &'a Opening,
    /// The title being made after the first turn (`session::title`).
    titling: &'a mut Option<tokio::task::JoinHandle<(String, crate::event_log::TitleSource)>>,
}

impl Turns<'_> {
    /// Runs the turns waiting in the line, one after another, in the order
    /// received, until none waits.
    async fn run_line(
        &mut self,
        offered: &mut Vec<crate::event_log::OfferedCommand>,
        file_problems: &mut Vec<String>,
    ) {
        loop {
            // A title made while the previous turn ran is recorded before
            // the next one starts (a turn running never waits for it).
            if let Some(task) = self.titling.take_if(|t| t.is_finished()) {
                record_title(self.committer, task.await);
            }
            let next = match self.queue.next(self.committer) {
                Ok(Some(next)) => next,
                Ok(None) => return,
                Err(e) => {
                    tracing::error!(error = %e, "could not record what arrived");
                    return;
                }
            };
            super::user_commands::refresh(self.committer, self.kit, self.cwd, file_problems);
            offer_commands(self.committer, self.kit, offered);
            self.opening.context.set_turn(TurnInfo {
                turn_id: uuid::Uuid::new_v4().to_string(),
                model: self.provider.model().map(str::to_owned),
            });
            let control = TurnControl {
                cwd: self.cwd.clone(),
                cancel: next.cancel,
                hard_stop: self.hard_stop.clone(),
                queue: self.queue.clone(),
            };
            let prompt = turn::Prompt {
                content: next.content,
                via: next.via,
            };
            let answer =
                match turn::run(self.committer, self.provider, self.kit, prompt, &control).await {
                    Ok(stop) => Ok(stop_reason(stop)),
                    Err(TurnError::Provider(e)) if e.auth_variable().is_some() => {
                        tracing::warn!(error = %e, "the model needs a key");
                        Err(crate::rpc::Failure::AuthRequired.error(e.to_string()))
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "turn failed");
                        Err(crate::rpc::Failure::Internal.error(format!("the turn failed: {e}")))
                    }
                };
            if let Some(reply) = next.reply {
                reply.send(answer).await;
            }
            if self.titling.is_none()
                && let Some(prompt) = super::title::wanted(self.committer.records())
            {
                *self.titling = Some(start_title(
                    self.kit,
                    self.provider,
                    self.cwd,
                    prompt,
                    self.hard_stop,
                ));
            }
        }
    }
}

/// What a session records before it takes a prompt, once the client has
/// its id: what loading its settings had to say, where it works
/// (`session/environment`), and what its SessionStart hooks said.
async fn begin(
    committer: &mut Committer,
    kit: &SessionKit,
    model: Option<&str>,
    cwd: &std::path::Path,
    opening: &mut Opening,
    hard_stop: &CancellationToken,
) {
    for (level, text) in std::mem::take(&mut opening.notices) {
        if let Err(e) = committer.commit(Event::Notice { level, text }) {
            tracing::error!(error = %e, "could not record a notice");
        }
    }
    if let Some(gathering) = opening.gathering.take() {
        record_environment(committer, gathering, hard_stop).await;
    }
    // SessionStart hooks write the session's environment afresh (a loaded
    // session's run again, with `source: resume`).
    let _ = std::fs::remove_file(&opening.context.env_file);
    if let Err(e) =
        events::session_start(committer, kit, cwd, opening.source, model, hard_stop).await
    {
        tracing::error!(error = %e, "could not record what the SessionStart hooks said");
    }
}

/// The `session/environment` to record before the first prompt, made
/// while the response goes out: gathered for a new session, or a stored
/// one that has no record of it (an older candor's); for a stored one,
/// the latest record with what the client asked now, when that differs
/// (its additional directories are the ones it gives now, as ACP says,
/// and a notice says which it no longer gives; its system prompt, when it
/// gives one). None: nothing to record.
fn environment(
    config: &Config,
    cwd: &std::path::Path,
    policy: &crate::interception::Policy,
    records: &[crate::event_log::Record],
    (roots, prompt, hidden): (
        Vec<crate::event_log::AddedDirectory>,
        Option<crate::event_log::ClientPrompt>,
        usize,
    ),
    notices: &mut Vec<(NoticeLevel, String)>,
) -> Option<tokio::task::JoinHandle<crate::event_log::Environment>> {
    if hidden > 0 {
        notices.push((
            NoticeLevel::Warning,
            format!(
                "The editor's system prompt for this session held {hidden} invisible characters (Unicode tag or bidirectional control characters, which the model would read and you would not see); they were removed."
            ),
        ));
    }
    let Some(latest) = super::system::latest(records) else {
        let denies = crate::interception::policy::ReadDenies::of(&policy.rules);
        let mut sources = super::environment::Sources::new(config, cwd, denies);
        sources.roots = roots;
        sources.client_prompt = prompt;
        return Some(tokio::spawn(super::environment::gather(sources)));
    };
    let mut now = latest.clone();
    let gone: Vec<String> = latest
        .additional_directories
        .iter()
        .filter(|was| !roots.iter().any(|r| r.real() == was.real()))
        .map(crate::roots::describe)
        .collect();
    if !gone.is_empty() {
        notices.push((
            NoticeLevel::Warning,
            format!(
                "This session had the additional directories {}; the editor did not give them again, so they are no longer part of its project (the model is told).",
                gone.join(", ")
            ),
        ));
    }
    now.additional_directories = roots;
    if prompt.is_some() {
        now.client_prompt = prompt;
    }
    (now != *latest).then(|| tokio::spawn(std::future::ready(now)))
}

/// Records what was gathered about where the session works, before any
/// prompt is taken (gathering is bounded: git has 200 ms).
async fn record_environment(
    committer: &mut Committer,
    gathering: tokio::task::JoinHandle<crate::event_log::Environment>,
    hard_stop: &CancellationToken,
) {
    let environment = tokio::select! {
        gathered = gathering => gathered,
        _ = hard_stop.cancelled() => return,
    };
    match environment {
        Ok(environment) => {
            if let Err(e) = committer.commit(Event::SessionEnvironment(environment)) {
                tracing::error!(error = %e, "could not record the session's environment");
            }
        }
        Err(e) => tracing::error!(error = %e, "gathering the session's environment failed"),
    }
}

/// The ACP stop reason of a turn that ended normally.
fn stop_reason(stop: TurnStop) -> StopReason {
    match stop {
        TurnStop::EndTurn | TurnStop::Error => StopReason::EndTurn,
        TurnStop::MaxTokens => StopReason::MaxTokens,
        TurnStop::MaxTurnRequests => StopReason::MaxTurnRequests,
        TurnStop::Refusal => StopReason::Refusal,
        TurnStop::Cancelled => StopReason::Cancelled,
    }
}
