//! Subagents: the `Agent` calls of one model response, each a child
//! session run in parallel (at most `Family::parallel` at once), every one
//! of its calls through the same machinery as the parent's (`turn`'s loop,
//! `call`'s settle → `tool/call` → ask → run → `tool/result`).
//!
//! For each `Agent` call, in the parent's log, in order:
//!
//! ```text
//! tool/call (settled like any call) → [permission] → tool/started
//!   → subagent/started (the child's id) → subagent/activity* (one per
//!     change of a child call: settled, asking, running, finished)
//!   → subagent/ended → tool/result (the child's answer, for the model)
//! ```
//!
//! The child's own log starts with `session/started` naming its parent and
//! `subagent/assigned` (its definition, narrowed: its tools only narrow,
//! its mode is never more than its parent's), then the parent's latest
//! `session/environment`, then its turn. Each child record is appended to
//! the child's log first; what the parent records of it comes after
//! (the child's committer tells the parent, [`Report`]).
//!
//! The child's loop is `turn`'s, given to [`run_batch`] as a [`Runner`]
//! (so this module does not import `turn`, which imports it).

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use agent_client_protocol_schema::v1::SessionId;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::mpsc;

use super::call::{Next, Settles, conclude, finish, settle_call};
use super::commit::{Committer, Observer};
use super::kit::{AskedOn, Family, Place, SessionKit, Trust, TurnControl, TurnError};
use super::settings;
use crate::conversation::AssistantBlock;
use crate::event_log::{
    Assignment, ChildCallStatus, Event, EventLog, FORMAT_VERSION, LogError, NoticeLevel, Outcome,
    ParentRef, Record, ResultStatus, SubagentOutcome, TurnStop,
};
use crate::interception::ApprovedCall;
use crate::interception::HookNote;
use crate::presentation::{Mode as Shown, Presenter};
use crate::providers::Provider;
use crate::subagents::{Definition, Delegate, MAX_DEPTH, ToolScope, narrower};
use crate::tools::{Tool, ToolOutput};

/// Runs a prepared child to its end: the loop `turn` gives.
pub(crate) type Runner = fn(Job) -> Pin<Box<dyn Future<Output = Ended> + Send>>;

/// A child session, ready to run.
pub(crate) struct Job {
    pub(crate) committer: Committer,
    pub(crate) provider: Provider,
    pub(crate) kit: SessionKit,
    pub(crate) control: TurnControl,
    /// The task: the child's first message.
    pub(crate) prompt: String,
    /// The most model requests it may make (`maxTurns`).
    pub(crate) limit: usize,
    /// Its place in the batch.
    index: usize,
    /// Held while it lives (the tree's bound on live subagents).
    _permit: tokio::sync::OwnedSemaphorePermit,
}

/// How a child ended.
#[derive(Debug)]
pub(crate) struct Ended {
    index: usize,
    outcome: SubagentOutcome,
    /// Its final message (or its last words).
    answer: String,
    requests: u32,
    error: Option<String>,
}

/// What a child's committer tells its parent: one of the child's calls
/// changed state.
#[derive(Debug)]
struct Report {
    index: usize,
    child_call_id: String,
    title: String,
    status: ChildCallStatus,
}

/// An `Agent` call approved to run.
struct Approved {
    call: Box<ApprovedCall>,
    notes: Vec<HookNote>,
}

/// A child while it runs: its id, its call, and the way to tell it the
/// parent's mode.
struct Live {
    child_id: String,
    approved: Approved,
    agent_type: String,
    wanted_mode: Option<crate::mode::Mode>,
    settings: mpsc::UnboundedSender<settings::Sent>,
}

/// The `Agent` calls of one model response (`calls`, in order): each
/// settled and recorded like any call, then run in parallel, at most
/// `kit.family.parallel` at once. `model`: the parent's model (a
/// definition's `inherit`). `Some`: a hook ended the turn (who, why).
pub(crate) async fn run_batch(
    c: &mut Committer,
    kit: &mut SessionKit,
    calls: Vec<(String, String, Value)>,
    control: &TurnControl,
    model: Option<String>,
    runner: Runner,
) -> Result<Option<(String, String)>, TurnError> {
    let mut stopped = None;
    let mut waiting = std::collections::VecDeque::new();
    for (id, name, input) in calls {
        control.queue.record(c)?;
        if control.cancel.is_cancelled() {
            finish(
                c,
                &id,
                ResultStatus::Cancelled,
                "cancelled by the user before it ran",
            )?;
            continue;
        }
        let next = match settle_call(c, kit, &id, &name, &input, control).await? {
            Settles::Done(next) => next,
            Settles::Approved { call, notes, next } => {
                waiting.push_back(Approved { call, notes });
                next
            }
        };
        if let (None, Next::Stop { hook, reason }) = (&stopped, next) {
            stopped = Some((hook, reason));
        }
    }
    let mut batch = Batch {
        model,
        runner,
        live: HashMap::new(),
        running: FuturesUnordered::new(),
        reports: mpsc::unbounded_channel(),
        index: 0,
    };
    loop {
        while batch.running.len() < kit.family.parallel
            && let Some(next) = waiting.pop_front()
        {
            if control.cancel.is_cancelled() {
                let text = "cancelled by the user before the subagent started";
                let output = ToolOutput::cancelled(text);
                let stop = conclude(c, &next.call, kit, control, next.notes, output).await?;
                note_stop(&mut stopped, stop);
                continue;
            }
            if let Some(stop) = batch.start(c, kit, control, next).await? {
                note_stop(&mut stopped, stop);
            }
        }
        if batch.running.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            Some(report) = batch.reports.1.recv() => batch.record(c, report)?,
            Some((index, done)) = batch.running.next() => {
                let ended = done.unwrap_or_else(|e| Ended {
                    index,
                    outcome: SubagentOutcome::Failed,
                    answer: String::new(),
                    requests: 0,
                    error: Some(format!("the subagent's task stopped: {e}")),
                });
                let stop = batch.finish(c, kit, control, ended).await?;
                note_stop(&mut stopped, stop);
            }
            true = kit.settings.arrived() => {
                kit.settings.apply(c, &mut kit.policy.mode, None)?;
                batch.tell_mode(kit.policy.mode);
            }
            () = control.queue.arrived() => control.queue.record(c)?,
        }
    }
    Ok(stopped)
}

fn note_stop(stopped: &mut Option<(String, String)>, next: Next) {
    if let (None, Next::Stop { hook, reason }) = (&stopped, next) {
        *stopped = Some((hook, reason));
    }
}

/// A running child: its place, and how its task ended.
type Running = Pin<Box<dyn Future<Output = (usize, Result<Ended, tokio::task::JoinError>)> + Send>>;

/// The children of one batch.
struct Batch {
    model: Option<String>,
    runner: Runner,
    live: HashMap<usize, Live>,
    /// Each running child's task, with its place in the batch (known even
    /// when the task itself could not say).
    running: FuturesUnordered<Running>,
    reports: (
        mpsc::UnboundedSender<Report>,
        mpsc::UnboundedReceiver<Report>,
    ),
    index: usize,
}

impl Batch {
    /// Starts the child of an approved `Agent` call (or finishes the call
    /// when it cannot start: an unknown type, too many alive, a log that
    /// cannot be made). `Some`: what a hook asked of the turn.
    async fn start(
        &mut self,
        c: &mut Committer,
        kit: &mut SessionKit,
        control: &TurnControl,
        next: Approved,
    ) -> Result<Option<Next>, TurnError> {
        let Some(task) = next.call.input().delegation().cloned() else {
            let output = ToolOutput::failed("candor could not read the subagent's task");
            return Ok(Some(
                conclude(c, &next.call, kit, control, next.notes, output).await?,
            ));
        };
        let refused = |why: String| ToolOutput::failed(why);
        let Some(def) = kit.agents.get(&task.subagent_type).cloned() else {
            let names: Vec<&str> = kit
                .agents
                .definitions
                .iter()
                .map(|d| d.name.as_str())
                .collect();
            let output = refused(format!(
                "There is no subagent type {:?}; the types are {}.",
                task.subagent_type,
                names.join(", ")
            ));
            return Ok(Some(
                conclude(c, &next.call, kit, control, next.notes, output).await?,
            ));
        };
        let Ok(permit) = kit.family.live.clone().try_acquire_owned() else {
            let output = refused(format!(
                "This session already has {} subagent(s) running, its limit (subagents_live); wait for their answers before starting more.",
                kit.family.live_max
            ));
            return Ok(Some(
                conclude(c, &next.call, kit, control, next.notes, output).await?,
            ));
        };
        c.commit(Event::ToolStarted {
            tool_call_id: next.call.id().to_owned(),
        })?;
        let index = self.index;
        self.index += 1;
        let made = prepare(
            c,
            kit,
            control,
            Spec {
                call: &next.call,
                def: &def,
                prompt: &task.prompt,
                description: &task.description,
                model: self.model.as_deref(),
            },
            (index, self.reports.0.clone(), permit),
        );
        let (job, settings) = match made {
            Ok(made) => made,
            Err(e) => {
                let output = refused(format!("candor could not start the subagent: {e}"));
                return Ok(Some(
                    conclude(c, &next.call, kit, control, next.notes, output).await?,
                ));
            }
        };
        let child_id = job.committer.session_id().to_owned();
        c.commit(Event::SubagentStarted {
            tool_call_id: next.call.id().to_owned(),
            session_id: child_id.clone(),
            agent_type: def.name.clone(),
            description: task.description.clone(),
        })?;
        crate::sync::lock(&kit.family.running).insert(child_id.clone(), job.control.cancel.clone());
        let task = tokio::spawn((self.runner)(job));
        self.running
            .push(Box::pin(async move { (index, task.await) }));
        self.live.insert(
            index,
            Live {
                child_id,
                approved: next,
                agent_type: def.name.clone(),
                wanted_mode: def.permission_mode,
                settings,
            },
        );
        Ok(None)
    }

    /// Records what a child's committer told of one of its calls.
    fn record(&self, c: &mut Committer, report: Report) -> Result<(), LogError> {
        let Some(live) = self.live.get(&report.index) else {
            return Ok(());
        };
        c.commit(Event::SubagentActivity {
            tool_call_id: live.approved.call.id().to_owned(),
            session_id: live.child_id.clone(),
            child_call_id: report.child_call_id,
            title: report.title,
            status: report.status,
        })
    }

    /// A child ended: what it told last, `subagent/ended`, then the call's
    /// result (its answer, as such, for the model).
    async fn finish(
        &mut self,
        c: &mut Committer,
        kit: &SessionKit,
        control: &TurnControl,
        ended: Ended,
    ) -> Result<Next, TurnError> {
        while let Ok(report) = self.reports.1.try_recv() {
            self.record(c, report)?;
        }
        let Some(live) = self.live.remove(&ended.index) else {
            tracing::error!(error = ?ended.error, "a subagent ended that was not running");
            return Ok(Next::Continue);
        };
        crate::sync::lock(&kit.family.running).remove(&live.child_id);
        c.commit(Event::SubagentEnded {
            tool_call_id: live.approved.call.id().to_owned(),
            session_id: live.child_id.clone(),
            outcome: ended.outcome,
            requests: ended.requests,
            error: ended.error.clone(),
        })?;
        let output = result_for_model(&live.agent_type, &ended);
        let Approved { call, notes } = live.approved;
        conclude(c, &call, kit, control, notes, output).await
    }

    /// Tells every running child the parent's new mode (each takes the
    /// stricter of it and its definition's).
    fn tell_mode(&self, parent: crate::mode::Mode) {
        for live in self.live.values() {
            let (recorded, _) = tokio::sync::oneshot::channel();
            let change = settings::Change::Mode(narrower(parent, live.wanted_mode));
            let _ = live.settings.send(settings::Sent { change, recorded });
        }
    }
}

/// What the model is told of a child's end: its answer, said as such.
fn result_for_model(agent_type: &str, ended: &Ended) -> ToolOutput {
    let answer = crate::tools::cap_for_model(ended.answer.trim());
    match ended.outcome {
        SubagentOutcome::Answered => ToolOutput::completed(format!(
            "The {agent_type} subagent finished. Its answer:\n\n{answer}"
        )),
        SubagentOutcome::MaxTurns => ToolOutput::failed(format!(
            "The {agent_type} subagent stopped after {} model requests, its limit (maxTurns), before it answered. Its last message:\n\n{answer}",
            ended.requests
        )),
        SubagentOutcome::Cancelled => ToolOutput::cancelled(format!(
            "The {agent_type} subagent was cancelled before it answered."
        )),
        SubagentOutcome::Failed => ToolOutput::failed(format!(
            "The {agent_type} subagent failed: {}",
            ended.error.as_deref().unwrap_or("no reason given")
        )),
    }
}

/// What a child is made of.
struct Spec<'a> {
    call: &'a ApprovedCall,
    def: &'a Definition,
    prompt: &'a str,
    description: &'a str,
    model: Option<&'a str>,
}

/// Makes a child: its log (with its first records), its policy (the
/// parent's, narrowed), its kit, its model, its committer (telling the
/// parent of its calls). Returns it with the way to tell it mode changes.
fn prepare(
    c: &Committer,
    kit: &SessionKit,
    control: &TurnControl,
    spec: Spec<'_>,
    (index, reports, permit): (
        usize,
        mpsc::UnboundedSender<Report>,
        tokio::sync::OwnedSemaphorePermit,
    ),
) -> Result<(Job, mpsc::UnboundedSender<settings::Sent>), LogError> {
    let def = spec.def;
    let child_id = uuid::Uuid::new_v4().to_string();
    let depth = kit.family.depth() + 1;
    let log = EventLog::create(&kit.config.sessions_dir(), &child_id)?;
    let cwd = control.cwd.clone();
    let scope = child_scope(kit, def, depth);
    let delegate = Delegate {
        agent_id: child_id.clone(),
        agent_type: def.name.clone(),
        transcript: log.path().to_owned(),
        tools: scope.clone(),
        depth,
    };
    let (policy, mut notices) = child_policy(c, kit, def, delegate, &cwd);
    let mut provider = Provider::for_session(&kit.config, &cwd);
    let model = choose_model(&mut provider, def, spec.model, &mut notices);
    provider.for_subagent(&def.name, spec.prompt);
    let (settings_tx, inbox) = settings::Inbox::new();
    let child_kit = child_kit(kit, &child_id, policy, spec.call, def, depth, inbox);
    let presenter = Presenter::new(cwd.clone(), Shown::Live)
        .with_notices(kit.family.notices)
        .with_subagents(kit.family.native)
        .echoing_prompts();
    let mut committer = Committer::new(
        SessionId::new(child_id.clone()),
        log,
        presenter,
        c.outbox().clone(),
    )
    .for_subagent(
        !kit.family.native,
        Some(observer(index, reports, cwd.clone())),
    );
    let assignment = Assignment {
        agent_type: def.name.clone(),
        description: spec.description.to_owned(),
        source: def.source.describe(),
        system_prompt: def.system_prompt.clone(),
        tools: scope.listed().map(<[String]>::to_vec),
        disallowed_tools: def.disallowed_tools.clone(),
        mode: child_kit.policy.mode,
        model,
        max_turns: def.max_turns,
        may_start: scope
            .startable(&kit.agents.definitions)
            .iter()
            .map(|d| d.name.clone())
            .collect(),
        not_honoured: def.not_honoured.clone(),
    };
    let parent = ParentRef {
        session_id: c.session_id().to_owned(),
        tool_call_id: spec.call.id().to_owned(),
        depth,
    };
    first_records(
        &mut committer,
        c,
        &provider,
        &cwd,
        parent,
        assignment,
        notices,
    )?;
    let limit = def
        .max_turns
        .map(|n| n as usize)
        .or_else(|| provider.max_turn_requests())
        .unwrap_or(usize::MAX);
    let job = Job {
        committer,
        provider,
        kit: child_kit,
        control: TurnControl {
            cwd,
            cancel: control.cancel.child_token(),
            hard_stop: control.hard_stop.clone(),
            queue: super::queue::Queue::default(),
        },
        prompt: spec.prompt.to_owned(),
        limit,
        index,
        _permit: permit,
    };
    Ok((job, settings_tx))
}

/// What a child may call: its parent's scope narrowed by its definition;
/// it starts subagents only when its definition lists `Agent`, and never
/// below the deepest level.
fn child_scope(kit: &SessionKit, def: &Definition, depth: u32) -> ToolScope {
    let parent_scope = kit
        .policy
        .agent
        .as_ref()
        .map(|a| a.tools.clone())
        .unwrap_or_default();
    let scope = parent_scope.narrowed(def.tools.as_deref(), &def.disallowed_tools);
    let lists_agent = def.tools.as_ref().is_some_and(|t| {
        t.iter().any(|e| {
            let tool = e.split('(').next().unwrap_or("").trim();
            tool == "Agent" || tool == "Task"
        })
    });
    if !lists_agent || depth >= MAX_DEPTH {
        scope.narrowed(None, &["Agent".to_owned()])
    } else {
        scope
    }
}

/// The child's policy: its parent's hooks, rules and sandbox (as the user
/// set it, `/sandbox` included), the stricter mode, who it is, and its
/// definition's own hooks after the others. With what to tell the user.
fn child_policy(
    c: &Committer,
    kit: &SessionKit,
    def: &Definition,
    delegate: Delegate,
    cwd: &Path,
) -> (crate::interception::Policy, Vec<String>) {
    let mut policy = kit.policy.clone();
    policy.mode = narrower(kit.policy.mode, def.permission_mode);
    policy.sandbox = super::sandbox::effective(&kit.policy.sandbox, c.records());
    policy.agent = Some(Arc::new(delegate));
    let mut notices: Vec<String> = def
        .not_honoured
        .iter()
        .map(|n| {
            format!(
                "The {} subagent's definition asks for what candor does not do: {n}",
                def.name
            )
        })
        .collect();
    notices.extend(add_definition_hooks(
        &mut policy,
        def,
        kit,
        c.log_path(),
        cwd,
    ));
    (policy, notices)
}

/// The child's kit: the parent's editor, files, servers, grants and
/// limits; its own shells, settings and place.
fn child_kit(
    kit: &SessionKit,
    child_id: &str,
    policy: crate::interception::Policy,
    call: &ApprovedCall,
    def: &Definition,
    depth: u32,
    inbox: settings::Inbox,
) -> SessionKit {
    let asked_on = (!kit.family.native).then(|| {
        match kit.family.place.as_ref().and_then(|p| p.asked_on.clone()) {
            Some(above) => AskedOn {
                label: format!("{} (through the {} subagent)", above.label, def.name),
                ..above
            },
            None => AskedOn {
                session_id: kit.session_id.clone(),
                card_id: call.id().to_owned(),
                label: format!("The {} subagent", def.name),
            },
        }
    });
    SessionKit {
        session_id: if kit.family.native {
            child_id.to_owned()
        } else {
            kit.session_id.clone()
        },
        policy,
        grants: kit.grants.clone(),
        client: kit.client.clone(),
        files: kit.files.clone(),
        terminal: kit.terminal.clone(),
        shells: crate::tools::Shells::default(),
        settings: inbox,
        env_file: kit.env_file.clone(),
        config: kit.config.clone(),
        mcp: kit.mcp.clone(),
        user_commands: Vec::new(),
        trust: Trust::NotNeeded,
        confiner: kit.confiner.clone(),
        // The child's own copy: its options are not offered to a client.
        view: Arc::new(std::sync::Mutex::new(crate::sync::lock(&kit.view).clone())),
        agents: kit.agents.clone(),
        family: Family {
            place: Some(Place { depth, asked_on }),
            ..kit.family.clone()
        },
    }
}

/// A child log's first records: `session/started` naming its parent,
/// `subagent/assigned`, the parent's environment, what to tell the user.
fn first_records(
    committer: &mut Committer,
    c: &Committer,
    provider: &Provider,
    cwd: &Path,
    parent: ParentRef,
    assignment: Assignment,
    notices: Vec<String>,
) -> Result<(), LogError> {
    committer.commit(Event::SessionStarted {
        session_id: committer.session_id().to_owned(),
        cwd: cwd.to_owned(),
        format: FORMAT_VERSION,
        candor_version: env!("CARGO_PKG_VERSION").to_owned(),
        provider: provider.name().to_owned(),
        model: provider.model().map(str::to_owned),
        context_window: provider.context_window(),
        parent: Some(parent),
    })?;
    committer.commit(Event::SubagentAssigned(assignment))?;
    if let Some(env) = super::system::latest(c.records()) {
        committer.commit(Event::SessionEnvironment(env.clone()))?;
    }
    for text in notices {
        committer.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text,
        })?;
    }
    Ok(())
}

/// The model a child asks: `inherit` (or none) the parent's; an alias of
/// the provider's family; a model id. What cannot be followed is said.
fn choose_model(
    provider: &mut Provider,
    def: &Definition,
    parent: Option<&str>,
    notices: &mut Vec<String>,
) -> Option<String> {
    if let Some(parent) = parent {
        provider.set_model(parent);
    }
    let wanted = def.model.as_deref().filter(|m| *m != "inherit");
    if let Some(wanted) = wanted {
        let id = match (provider.name(), wanted) {
            ("anthropic", "sonnet") => Some("claude-sonnet-4-5"),
            ("anthropic", "opus") => Some("claude-opus-4-1"),
            ("anthropic", "haiku") => Some("claude-haiku-4-5"),
            (_, "sonnet" | "opus" | "haiku") => None,
            (_, id) => Some(id),
        };
        match id {
            Some(id) if provider.set_model(id) => {}
            _ if provider.model().is_none() => {}
            _ => notices.push(format!(
                "The {} subagent's definition asks for the model {wanted}, which this session's provider ({}) does not have; it uses {}",
                def.name,
                provider.name(),
                provider.model().unwrap_or("the session's model")
            )),
        }
    }
    provider.model().map(str::to_owned)
}

/// A definition's own hooks join the user's for its child's calls (after
/// them: they add, never replace). Returns what reading them said.
fn add_definition_hooks(
    policy: &mut crate::interception::Policy,
    def: &Definition,
    kit: &SessionKit,
    parent_log: &Path,
    cwd: &Path,
) -> Vec<String> {
    let Some(hooks) = &def.hooks else {
        return Vec::new();
    };
    let context = Arc::new(crate::bridges::SessionContext::new(
        kit.session_id.clone(),
        parent_log.to_owned(),
        cwd.to_owned(),
        kit.config.user_home.clone(),
    ));
    let mut table = crate::bridges::hook::Table::default();
    let file = PathBuf::from(def.source.describe());
    let source = format!("subagent {}", def.name);
    table.read(
        &crate::bridges::claude::CLAUDE,
        hooks,
        &file,
        &source,
        &context,
    );
    table.finish(&crate::bridges::claude::CLAUDE);
    let mut loaded = crate::bridges::Loaded::default();
    loaded.add(table);
    let said: Vec<String> = loaded
        .problems
        .iter()
        .chain(&loaded.remarks)
        .cloned()
        .collect();
    policy.hooks.extend(loaded.pre_hooks);
    policy.post_hooks.extend(loaded.post_hooks);
    policy.event_hooks.extend(loaded.event_hooks);
    said
}

/// The child's committer's observer: each change of one of its calls (and
/// of its own subagents' calls, nested under the call that started them)
/// goes to the parent.
fn observer(index: usize, reports: mpsc::UnboundedSender<Report>, cwd: PathBuf) -> Observer {
    let mut titles: HashMap<String, String> = HashMap::new();
    Observer::new(move |record: &Record| {
        let (id, title, status) = match &record.event {
            Event::ToolCall {
                tool_call_id,
                tool,
                arguments,
                decision,
                mcp,
                ..
            } => {
                let title = match (Tool::from_name(tool), mcp) {
                    (Some(t), _) => t.present(arguments, &cwd).title,
                    (None, Some(target)) => crate::tools::present_mcp(target).title,
                    (None, None) => crate::tools::present_unknown(tool).title,
                };
                titles.insert(tool_call_id.clone(), title.clone());
                let status = if decision.outcome == Outcome::Deny {
                    ChildCallStatus::Failed
                } else {
                    ChildCallStatus::Pending
                };
                (tool_call_id.clone(), title, status)
            }
            Event::PermissionRequested { tool_call_id, .. } => {
                (tool_call_id.clone(), String::new(), ChildCallStatus::Asking)
            }
            Event::PermissionResolved {
                tool_call_id,
                outcome:
                    crate::event_log::PermissionOutcome::AllowedOnce
                    | crate::event_log::PermissionOutcome::AllowedAlways,
                ..
            } => (
                tool_call_id.clone(),
                String::new(),
                ChildCallStatus::Pending,
            ),
            Event::ToolStarted { tool_call_id } => (
                tool_call_id.clone(),
                String::new(),
                ChildCallStatus::Running,
            ),
            Event::ToolResult {
                tool_call_id,
                status,
                ..
            } => (
                tool_call_id.clone(),
                String::new(),
                match status {
                    ResultStatus::Completed => ChildCallStatus::Completed,
                    ResultStatus::Failed => ChildCallStatus::Failed,
                    ResultStatus::Cancelled => ChildCallStatus::Cancelled,
                },
            ),
            Event::SubagentActivity {
                tool_call_id,
                child_call_id,
                title,
                status,
                ..
            } => (
                format!("{tool_call_id}/{child_call_id}"),
                format!("↳ {title}"),
                *status,
            ),
            _ => return,
        };
        let title = if title.is_empty() {
            titles.get(&id).cloned().unwrap_or_default()
        } else {
            title
        };
        let _ = reports.send(Report {
            index,
            child_call_id: id,
            title,
            status,
        });
    })
}

/// Before a child's turn: its SubagentStart hooks.
pub(crate) async fn begin(job: &mut Job) -> Result<(), LogError> {
    super::events::subagent_start(
        &mut job.committer,
        &job.kit,
        &job.control.cwd,
        &job.control.cancel,
    )
    .await
}

/// After a child's turn (`result`: how it ended): its answer, and nothing
/// it started left running.
pub(crate) fn end(job: Job, result: Result<TurnStop, TurnError>) -> Ended {
    job.kit.shells.kill_all();
    let records = job.committer.records();
    let requests = records
        .iter()
        .filter(|r| matches!(r.event, Event::AssistantMessage { .. }))
        .count() as u32;
    let answer = records
        .iter()
        .rev()
        .find_map(|r| match &r.event {
            Event::AssistantMessage {
                content,
                interrupted: false,
                ..
            } => Some(
                content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join(""),
            ),
            _ => None,
        })
        .unwrap_or_default();
    let (outcome, error) = match result {
        Ok(TurnStop::EndTurn) => (SubagentOutcome::Answered, None),
        Ok(TurnStop::MaxTurnRequests) => (SubagentOutcome::MaxTurns, None),
        Ok(TurnStop::Cancelled) => (SubagentOutcome::Cancelled, None),
        Ok(TurnStop::MaxTokens) => (
            SubagentOutcome::Failed,
            Some("its model reached its output limit (max_tokens)".to_owned()),
        ),
        Ok(TurnStop::Refusal) => (
            SubagentOutcome::Failed,
            Some("its model refused".to_owned()),
        ),
        Ok(TurnStop::Error) => (SubagentOutcome::Failed, Some("its turn failed".to_owned())),
        Err(e) => (SubagentOutcome::Failed, Some(e.to_string())),
    };
    Ended {
        index: job.index,
        outcome,
        answer,
        requests,
        error,
    }
}

/// The scope a session's own calls have (a subagent's: its definition's).
pub(crate) fn scope(kit: &SessionKit) -> ToolScope {
    kit.policy
        .agent
        .as_ref()
        .map(|a| a.tools.clone())
        .unwrap_or_default()
}

/// The tools a request offers: the session's (a subagent's, only those
/// its definition leaves it), `Agent` with the types it may start.
pub(crate) fn tool_specs(kit: &SessionKit) -> Vec<crate::conversation::ToolSpec> {
    let scope = scope(kit);
    let depth_left = kit.family.depth() < MAX_DEPTH;
    let agents: Vec<(String, String)> = if depth_left {
        scope
            .startable(&kit.agents.definitions)
            .iter()
            .map(|d| (d.name.clone(), d.description.clone()))
            .collect()
    } else {
        Vec::new()
    };
    crate::tools::specs_for(&kit.mcp.tools(), &agents, |name| scope.offers(name))
}
