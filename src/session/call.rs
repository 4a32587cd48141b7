//! One tool call, from the model's proposal to its result.
//!
//! State per call id, each transition a record:
//!
//! ```text
//! proposed (in assistant/message)
//!   → intercepting (hooks, rules, mode: nothing shown yet)
//!   → settled: tool/call (effective arguments; the card appears, already
//!     showing what will run) with decision allow | ask | deny
//!       deny → tool/result failed (the card fails with who refused and why)
//!       ask  → permission/requested → the client is asked, showing the
//!              card → permission/resolved (bound to the arguments' digest)
//!   → running: tool/started, tool/output*
//!   → finished: tool/result
//! ```
//!
//! `tool/call` and `permission/resolved` are flushed to disk before
//! anything runs. A cancel at any point finishes the call as `cancelled`.

use serde_json::Value;
use tokio::sync::mpsc;

use super::commit::Committer;
use super::kit::{KILL_GRACE, SessionKit, TurnControl, TurnError};
use super::permission::{Asked, ask_client};
use crate::event_log::{
    Decision, Event, FileDiff, LogError, NoticeLevel, Outcome, PermissionChoice, PermissionOutcome,
    ResultContent, ResultStatus,
};
use crate::interception::policy::{Disposition, Rule};
use crate::interception::{self, ApprovedCall, Aside, Asides, FinishedCall, HookNote, Settled};
use crate::presentation::describe_decider;
use crate::tools::Elicited;
use crate::tools::{ToolContext, ToolEvent, ToolInput};

/// The probe's place when the kernel was not asked (the sandbox is off).
static NOT_ASKED: std::sync::LazyLock<crate::sandbox::Probe> =
    std::sync::LazyLock::new(|| crate::sandbox::Probe::nothing("not asked: the sandbox is off"));

/// The model is told this when the user says no.
pub(crate) const REFUSED_BY_USER: &str = "The user refused to run this call.";

/// What the turn does once a call is finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    Continue,
    /// A hook ended the turn (`continue: false`).
    Stop {
        hook: String,
        reason: String,
    },
}

/// How far [`settle_call`] took a call.
#[derive(Debug)]
pub(crate) enum Settles {
    /// Finished without running (refused, cancelled): what the turn does.
    Done(Next),
    /// Approved, its `tool/call` (and answer) recorded: to run. `notes`:
    /// what hooks said for its result; `next`: what they asked of the turn.
    Approved {
        call: Box<ApprovedCall>,
        notes: Vec<HookNote>,
        next: Next,
    },
}

/// Settles, presents, (asks,) runs and finishes one tool call.
pub(crate) async fn run_call(
    c: &mut Committer,
    kit: &mut SessionKit,
    id: &str,
    name: &str,
    input: &Value,
    control: &TurnControl,
) -> Result<Next, TurnError> {
    match settle_call(c, kit, id, name, input, control).await? {
        Settles::Done(next) => Ok(next),
        Settles::Approved { call, notes, next } => {
            let ran = execute(c, &call, kit, control, notes).await?;
            Ok(match ran {
                Next::Stop { .. } => ran,
                Next::Continue => next,
            })
        }
    }
}

/// Everything of a call before it runs: settled, recorded, asked about;
/// an `Agent` call's child runs elsewhere (`super::subagent`), the others
/// in [`run_call`].
pub(crate) async fn settle_call(
    c: &mut Committer,
    kit: &mut SessionKit,
    id: &str,
    name: &str,
    input: &Value,
    control: &TurnControl,
) -> Result<Settles, TurnError> {
    // A mode the client chose while this turn ran decides this call.
    kit.settings.apply(c, &mut kit.policy.mode, None)?;
    let mut settled = tokio::select! {
        s = interception::settle(
            id, name, input, &kit.policy, &kit.grants, &control.cwd, kit.mcp.tool(name),
        ) => s,
        _ = control.cancel.cancelled() => {
            finish(c, id, ResultStatus::Cancelled, "cancelled by the user before it ran")?;
            return Ok(Settles::Done(Next::Continue));
        }
    };
    // A command's boundary is settled with its arguments.
    if settled.tool() == Some(crate::tools::Tool::Bash) {
        let sandbox = super::sandbox::for_calls(kit, c.records());
        // The kernel is asked once per process, and not at all with the
        // sandbox off.
        let probe = if sandbox.preset == crate::sandbox::Preset::FullAccess {
            crate::sandbox::probe::cached().unwrap_or(&NOT_ASKED)
        } else {
            kit.confiner.probe().await
        };
        let place = interception::sandbox::Place {
            cwd: kit.confiner.workdir(),
            tmpdir: kit.confiner.tmpdir(),
            home: kit.config.user_home.as_deref(),
            probe,
            launcher: kit.confiner.launcher().is_some(),
            // A subagent whose questions go to its parent's card does not
            // ask in a form of its own.
            forms: kit.client.elicit_form
                && kit
                    .family
                    .place
                    .as_ref()
                    .and_then(|p| p.asked_on.as_ref())
                    .is_none(),
        };
        interception::sandbox::confine(&mut settled, &sandbox, place);
    }
    // What the hooks said besides deciding: failures and messages reach
    // the user before the card; context goes with the result.
    let mut notes = Vec::new();
    let mut next = Next::Continue;
    for hook in settled.hooks() {
        if let Some(error) = &hook.error {
            c.commit(Event::Notice {
                level: NoticeLevel::Warning,
                text: format!("The hook {} failed and was passed over: {error}", hook.hook),
            })?;
        }
    }
    say_asides(c, settled.asides().to_vec(), &mut notes, &mut next)?;
    Ok(
        match settle_and_record(c, kit, &mut settled, control, notes).await? {
            Settles::Done(Next::Continue) => Settles::Done(next),
            Settles::Approved { call, notes, .. } => Settles::Approved { call, notes, next },
            done => done,
        },
    )
}

/// Commits what hooks said besides their decisions (see [`run_call`]).
fn say_asides(
    c: &mut Committer,
    asides: Vec<Aside>,
    notes: &mut Vec<HookNote>,
    next: &mut Next,
) -> Result<(), TurnError> {
    for aside in asides {
        match aside {
            Aside::Notice { hook, text } => c.commit(Event::Notice {
                level: NoticeLevel::Warning,
                text: format!("{hook}: {text}"),
            })?,
            Aside::Message { hook, text } => c.commit(Event::Notice {
                level: NoticeLevel::Info,
                text: format!("{hook}: {text}"),
            })?,
            Aside::Context { hook, text } => notes.push(HookNote {
                hook,
                decision: crate::event_log::NoteKind::Context,
                text,
            }),
            Aside::StopTurn { hook, reason } => {
                if *next == Next::Continue {
                    *next = Next::Stop { hook, reason };
                }
            }
        }
    }
    Ok(())
}

/// The rest of [`settle_call`]: preview, record, ask.
async fn settle_and_record(
    c: &mut Committer,
    kit: &mut SessionKit,
    settled: &mut Settled,
    control: &TurnControl,
    notes: Vec<HookNote>,
) -> Result<Settles, TurnError> {
    let id = settled.id().to_owned();
    let id = id.as_str();
    let cancelled = |c: &mut Committer, notes: Vec<HookNote>| {
        finish_with(
            c,
            id,
            ResultStatus::Cancelled,
            "cancelled by the user before it ran",
            notes,
        )
        .map(|()| Settles::Done(Next::Continue))
    };
    let approved = |call: ApprovedCall, notes: Vec<HookNote>| Settles::Approved {
        call: Box::new(call),
        notes,
        next: Next::Continue,
    };
    // A file tool shows the change it would make before anyone is asked;
    // a change that cannot be made is refused here, without a prompt. A
    // file candor may not read without asking (outside the project, or
    // under a Read deny rule) is not read before the answer: the card
    // shows the change the arguments propose.
    let mut preview = None;
    let read = !matches!(settled.disposition(), Disposition::Ask { .. })
        || settled
            .input()
            .is_none_or(|input| !kept_from_reading(input, kit, control));
    if !matches!(settled.disposition(), Disposition::Deny { .. })
        && let Some(input) = settled.input()
        && let Some(result) = input.preview(&kit.files, &control.cancel, read).await
    {
        match result {
            Ok(diff) => preview = Some(bounded(diff)),
            Err(_) if control.cancel.is_cancelled() => return cancelled(c, notes),
            Err(reason) => settled.refuse(interception::CANDOR, reason),
        }
    }
    let record = tool_call_record(settled, preview.clone());
    let failed = |c: &mut Committer, text: &str, notes| {
        finish_with(c, id, ResultStatus::Failed, text, notes)
            .map(|()| Settles::Done(Next::Continue))
    };
    match settled.disposition().clone() {
        Disposition::Deny { by, reason } => {
            c.commit(record)?;
            let text = format!("Refused by {}: {reason}", describe_decider(&by));
            failed(c, &text, notes)
        }
        Disposition::Run { .. } => {
            c.commit_durable(record).await?;
            match settled.approve() {
                Some(call) => Ok(approved(call, notes)),
                None => failed(c, "candor could not approve this call", notes),
            }
        }
        Disposition::Ask { .. } if settled.lifts_sandbox() => {
            c.commit_durable(record).await?;
            match super::permission::lift_by_form(c, kit, settled, &control.cancel).await? {
                super::permission::Lifted::Yes(call) => Ok(approved(*call, notes)),
                super::permission::Lifted::No(text) => failed(c, &text, notes),
                super::permission::Lifted::Cancelled => cancelled(c, notes),
            }
        }
        Disposition::Ask { .. } => {
            c.commit_durable(record).await?;
            match ask(c, kit, settled, control, preview).await? {
                Answer::Allowed(call) => Ok(approved(*call, notes)),
                Answer::Refused(text) => failed(c, &text, notes),
                Answer::Cancelled => cancelled(c, notes),
            }
        }
    }
}

/// Whether the file a call would change is one candor does not read
/// before the user answers: outside the project, or denied to Read.
fn kept_from_reading(input: &ToolInput, kit: &SessionKit, control: &TurnControl) -> bool {
    let Some(path) = input.target() else {
        return false;
    };
    let inside = path.starts_with(&control.cwd)
        || kit.policy.rules.roots.iter().any(|r| path.starts_with(r));
    !inside || crate::interception::policy::ReadDenies::of(&kit.policy.rules).denies(path)
}

/// How many times candor asks about one call whose file keeps changing
/// before the answer.
const MAX_ASKS: usize = 3;

/// The `tool/call` record of a settled call.
/// A diff small enough to show (a huge file's texts are left out; the card
/// then shows the path and line only).
fn bounded(diff: FileDiff) -> FileDiff {
    const MAX: usize = 512 * 1024;
    let size = diff.new_text.len() + diff.old_text.as_ref().map_or(0, String::len);
    if size <= MAX {
        diff
    } else {
        FileDiff {
            old_text: Some(String::new()),
            new_text: format!("(the change is {size} bytes; too large to show)"),
            ..diff
        }
    }
}

fn tool_call_record(s: &Settled, preview: Option<FileDiff>) -> Event {
    let decision = match s.disposition() {
        Disposition::Run { by } => Decision {
            outcome: Outcome::Allow,
            reason: None,
            by: Some(by.clone()),
        },
        Disposition::Ask { by, reason } => Decision {
            outcome: Outcome::Ask,
            reason: reason.clone(),
            by: Some(by.clone()),
        },
        Disposition::Deny { by, reason } => Decision {
            outcome: Outcome::Deny,
            reason: Some(reason.clone()),
            by: Some(by.clone()),
        },
    };
    Event::ToolCall {
        tool_call_id: s.id().to_owned(),
        tool: s.name().to_owned(),
        arguments: s.effective().clone(),
        original_arguments: s.rewritten().then(|| s.original().clone()),
        digest: s.digest().to_owned(),
        decision,
        hooks: s.hooks().to_vec(),
        rewritten_by: s.rewritten_by().to_vec(),
        preview,
        mcp: s.mcp_target(),
        sandbox: s.boundary().cloned(),
    }
}

/// Ends a call that did not run (or whose run is over) with a result the
/// model is told.
pub(crate) fn finish(
    c: &mut Committer,
    id: &str,
    status: ResultStatus,
    text: &str,
) -> Result<(), TurnError> {
    finish_with(c, id, status, text, Vec::new())
}

/// [`finish`] with what hooks said about the call.
fn finish_with(
    c: &mut Committer,
    id: &str,
    status: ResultStatus,
    text: &str,
    hook_notes: Vec<HookNote>,
) -> Result<(), TurnError> {
    c.commit(Event::ToolResult {
        tool_call_id: id.to_owned(),
        status,
        output: text.to_owned(),
        exit_code: None,
        signal: None,
        hook_notes,
        diff: None,
        output_file: None,
    })?;
    Ok(())
}

enum Answer {
    Allowed(Box<ApprovedCall>),
    Refused(String),
    Cancelled,
}

/// Asks the user through `session/request_permission`, showing the card as
/// it is (effective arguments, rewrite note, the diff), and records the
/// answer. A yes to a diff computed on the file binds to that file: if it
/// changed before the answer, candor previews again and asks again.
async fn ask(
    c: &mut Committer,
    kit: &mut SessionKit,
    s: &Settled,
    control: &TurnControl,
    mut shown: Option<FileDiff>,
) -> Result<Answer, TurnError> {
    let mut again = None;
    for _ in 0..MAX_ASKS {
        let (answer, granted) = ask_once(c, kit, s, control, &shown, again.take()).await?;
        let Answer::Allowed(call) = answer else {
            return Ok(answer);
        };
        // An "always" holds only once the yes stands (the file unchanged).
        let grant = |kit: &mut SessionKit| kit.grants.extend(granted.clone());
        let Some(base) = shown.as_ref().and_then(|d| d.base.clone()) else {
            grant(kit);
            return Ok(Answer::Allowed(call));
        };
        let now = match s.input() {
            Some(input) => input.preview(&kit.files, &control.cancel, true).await,
            None => None,
        };
        match now {
            Some(Ok(diff)) if diff.base.as_deref() == Some(base.as_str()) => {
                grant(kit);
                return Ok(Answer::Allowed(Box::new(call.bound_to_file(Some(base)))));
            }
            Some(Ok(diff)) => {
                let diff = bounded(diff);
                shown = Some(diff.clone());
                again = Some(diff);
            }
            Some(Err(_)) if control.cancel.is_cancelled() => return Ok(Answer::Cancelled),
            Some(Err(reason)) => {
                return Ok(Answer::Refused(format!(
                    "the file changed before the answer, and now: {reason}"
                )));
            }
            None => {
                grant(kit);
                return Ok(Answer::Allowed(call));
            }
        }
    }
    Ok(Answer::Refused(format!(
        "the file kept changing while candor asked ({MAX_ASKS} times); nothing was written"
    )))
}

/// One permission request and its answer (see [`ask`]); `again`: the diff
/// as it now is, when asking again. With the answer, the session grant an
/// "always" would add.
async fn ask_once(
    c: &mut Committer,
    kit: &mut SessionKit,
    s: &Settled,
    control: &TurnControl,
    shown: &Option<FileDiff>,
    again: Option<FileDiff>,
) -> Result<(Answer, Option<Rule>), TurnError> {
    let id = s.id();
    let digest = s.digest().to_owned();
    // "Always" only where it would hold for the next identical call.
    let grant = s.grant_offer().cloned();
    let mut choices = vec![PermissionChoice {
        option_id: "allow_once".into(),
        kind: "allow_once".into(),
        name: "Allow once".into(),
    }];
    if let Some(rule) = &grant {
        choices.push(PermissionChoice {
            option_id: "allow_always".into(),
            kind: "allow_always".into(),
            name: format!("Always allow {rule} in this session"),
        });
    }
    choices.push(PermissionChoice {
        option_id: "reject_once".into(),
        kind: "reject_once".into(),
        name: "Reject".into(),
    });
    c.commit(Event::PermissionRequested {
        tool_call_id: id.to_owned(),
        digest: digest.clone(),
        options: choices.clone(),
        preview: again,
    })?;
    let Some(card) = c.permission_card(id) else {
        return Ok((
            Answer::Refused("candor lost the card of this call".into()),
            None,
        ));
    };
    // A subagent of a client that does not take subagent sessions asks on
    // its parent's card, naming itself, with its own call inside.
    let (card, session) = match kit.family.place.as_ref().and_then(|p| p.asked_on.as_ref()) {
        Some(on) => (
            super::kit::on_parent_card(card, on, c.session_id()),
            on.session_id.clone(),
        ),
        None => (card, kit.session_id.clone()),
    };
    let failed = |why: String| {
        (
            PermissionOutcome::Failed,
            Some(format!("{why}, so the call did not run")),
        )
    };
    // The user may take a while: what arrives meanwhile is recorded.
    let asked = control
        .queue
        .recording(
            c,
            ask_client(kit, &session, card, &choices, &control.cancel),
        )
        .await?;
    let (outcome, reason) = match asked {
        Asked::Cancelled => (PermissionOutcome::Cancelled, None),
        Asked::Failed(why) => failed(why),
        Asked::Chose(option) => match option.as_str() {
            "allow_once" => (PermissionOutcome::AllowedOnce, None),
            "allow_always" if grant.is_some() => (PermissionOutcome::AllowedAlways, None),
            _ => (PermissionOutcome::Rejected, None),
        },
    };
    let granted = (outcome == PermissionOutcome::AllowedAlways)
        .then(|| grant.clone())
        .flatten();
    c.commit_durable(Event::PermissionResolved {
        tool_call_id: id.to_owned(),
        outcome,
        digest: digest.clone(),
        base: shown.as_ref().and_then(|d| d.base.clone()),
        grant: granted.as_ref().map(|r| r.text().to_owned()),
        reason: reason.clone(),
    })
    .await?;
    let answer = match outcome {
        PermissionOutcome::AllowedOnce | PermissionOutcome::AllowedAlways => {
            match s.approve_answered(&digest) {
                Some(call) => Answer::Allowed(Box::new(call)),
                None => Answer::Refused(
                    "the answer does not match the arguments shown, so the call did not run".into(),
                ),
            }
        }
        PermissionOutcome::Rejected => Answer::Refused(REFUSED_BY_USER.into()),
        PermissionOutcome::Failed => Answer::Refused(reason.unwrap_or_default()),
        PermissionOutcome::Cancelled => Answer::Cancelled,
    };
    Ok((answer, granted))
}

/// What a running tool told the session: a confined command's network
/// (asked about, decided) goes to its [`super::network::Asks`]; the rest
/// is recorded.
fn tool_event(
    c: &mut Committer,
    id: &str,
    e: ToolEvent,
    asks: &mut super::network::Asks<'_>,
) -> Result<(), LogError> {
    match e {
        ToolEvent::NetworkAsk { host, port, reply } => asks.ask(c, host, port, reply),
        ToolEvent::Network(decision) => asks.decided(c, decision),
        other => record_event(c, id, other),
    }
}

/// Records what a running tool told the session. Its images go to the
/// content store first; the record names them by digest.
fn record_event(c: &mut Committer, id: &str, e: ToolEvent) -> Result<(), LogError> {
    let event = match e {
        // Taken by `tool_event`.
        ToolEvent::NetworkAsk { .. } | ToolEvent::Network(_) => return Ok(()),
        ToolEvent::Output(chunk) => Event::ToolOutput {
            tool_call_id: id.to_owned(),
            text: chunk.text,
            skipped: chunk.skipped,
        },
        ToolEvent::Terminal(terminal_id) => Event::ToolTerminal {
            tool_call_id: id.to_owned(),
            terminal_id,
        },
        // An MCP server's question: in the log before it goes on.
        ToolEvent::Elicitation(what, recorded) => {
            c.commit(match what {
                Elicited::Asked(asked) => Event::ElicitationRequested(asked),
                Elicited::Answered(answered) => Event::ElicitationResolved(answered),
                Elicited::Notice(text) => Event::Notice {
                    level: NoticeLevel::Warning,
                    text,
                },
            })?;
            let _ = recorded.send(());
            return Ok(());
        }
        ToolEvent::Content {
            content,
            structured,
        } => {
            let mut kept = Vec::with_capacity(content.len());
            for block in content {
                match block {
                    ResultContent::Image {
                        mime_type, data, ..
                    } if !data.is_empty() => {
                        // The tools checked it; one that still is not an
                        // image of its type is left out, never stored.
                        match crate::media::decode(&mime_type, &data) {
                            Ok(bytes) => {
                                let stored = c.store_image(&bytes, &mime_type)?;
                                kept.push(ResultContent::Image {
                                    mime_type,
                                    data: String::new(),
                                    digest: Some(stored.digest),
                                    bytes: Some(stored.bytes),
                                });
                            }
                            Err(why) => tracing::warn!(why, "a tool's image was left out"),
                        }
                    }
                    other => kept.push(other),
                }
            }
            Event::ToolContent {
                tool_call_id: id.to_owned(),
                content: kept,
                structured,
            }
        }
    };
    c.commit(event)
}

/// What a WebFetch may reach (the user's `[web]` config) and the judge of
/// a redirect to another host: the session's rules, mode and grants, as
/// they would decide a WebFetch of that URL now (hooks are not asked again:
/// they saw the call). Only a fetch they would run without asking follows
/// the redirect; otherwise the model is given the new URL to fetch in a
/// call of its own, which is judged (and asked about) like any.
fn web_access(kit: &SessionKit, control: &TurnControl) -> crate::tools::web_fetch::WebAccess {
    use crate::interception::policy::{HookVerdict, Subject, decide};
    let access = kit.config.web_access().unwrap_or_default();
    let rules = kit.policy.rules.clone();
    let grants = kit.grants.clone();
    let mode = kit.policy.mode;
    let root = control.cwd.clone();
    let judge = move |url: &reqwest::Url| {
        let input = ToolInput::WebFetch(crate::tools::web_fetch::WebFetchInput {
            url: url.clone(),
            prompt: String::new(),
            offset: None,
        });
        let subject = Subject {
            name: "WebFetch",
            input: &input,
            spelled: None,
            mcp: None,
        };
        let hooks = HookVerdict {
            verdict: crate::event_log::Verdict::Pass,
            by: None,
            reason: None,
        };
        match decide(subject, &hooks, mode, &rules, &grants, &root) {
            Disposition::Run { .. } => Ok(()),
            Disposition::Deny { reason, .. } => Err(format!("refused ({reason})")),
            Disposition::Ask { .. } => Err(format!(
                "no permission rule lets WebFetch reach that host without asking the user, so candor did not follow; call WebFetch with {url} to fetch it (the user is asked)"
            )),
        }
    };
    crate::tools::web_fetch::WebAccess {
        access,
        judge: std::sync::Arc::new(judge),
    }
}

/// Runs an approved call: `tool/started`, its output, `tool/result`.
async fn execute(
    c: &mut Committer,
    call: &ApprovedCall,
    kit: &SessionKit,
    control: &TurnControl,
    hook_notes: Vec<HookNote>,
) -> Result<Next, TurnError> {
    let id = call.id().to_owned();
    c.commit(Event::ToolStarted {
        tool_call_id: id.clone(),
    })?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cx = ToolContext {
        cwd: control.cwd.clone(),
        cancel: control.cancel.clone(),
        hard_stop: control.hard_stop.clone(),
        kill_grace: KILL_GRACE,
        events: tx,
        files: kit.files.clone(),
        terminal: kit.terminal.clone(),
        shells: kit.shells.clone(),
        read_denies: {
            let denies = crate::interception::policy::ReadDenies::of(&kit.policy.rules);
            crate::tools::ReadFilter::new(move |path| denies.denies(path))
        },
        spill: Some(crate::tools::output::spill_path(c.log_path(), &id)),
        env_file: kit.env_file.clone(),
        file_base: call.file_base().map(str::to_owned),
        mcp: Some(kit.mcp.clone()),
        tool_call_id: id.clone(),
        client: Some(kit.client.clone()),
        boundary: call.boundary().cloned(),
        confiner: Some(kit.confiner.clone()),
        web: call.input().web_fetch().map(|_| web_access(kit, control)),
    };
    let running = call.input().run(cx);
    tokio::pin!(running);
    // A confined command's questions about hosts (`session::network`).
    let mut asks = super::network::Asks::new(&id, kit, &control.cancel);
    let mut output = loop {
        tokio::select! {
            biased;
            Some(e) = rx.recv() => tool_event(c, &id, e, &mut asks)?,
            answered = asks.next(), if !asks.is_empty() => asks.answered(c, answered)?,
            output = &mut running => break output,
            // A prompt or steering message sent while the tool runs.
            () = control.queue.arrived() => control.queue.record(c)?,
        }
    };
    while let Ok(e) = rx.try_recv() {
        tool_event(c, &id, e, &mut asks)?;
    }
    // The model is told of the hosts the sandbox refused.
    for line in asks.finish(c, &output.text).await? {
        if !output.text.is_empty() && !output.text.ends_with('\n') {
            output.text.push('\n');
        }
        output.text.push_str(&line);
    }
    conclude(c, call, kit, control, hook_notes, output).await
}

/// The end of a run: the post-execute hooks' say, then `tool/result`.
pub(crate) async fn conclude(
    c: &mut Committer,
    call: &ApprovedCall,
    kit: &SessionKit,
    control: &TurnControl,
    mut hook_notes: Vec<HookNote>,
    output: crate::tools::ToolOutput,
) -> Result<Next, TurnError> {
    let id = call.id().to_owned();
    let policy = &kit.policy;
    let asides = Asides::default();
    let finished = FinishedCall {
        id: &id,
        tool: call.name(),
        input: call.arguments(),
        subject: call.subject(),
        output: &output.text,
        status: output.status,
        cwd: &control.cwd,
        mode: policy.mode,
        asides: &asides,
        agent: policy.agent.as_deref(),
    };
    // A cancel does not wait for post-execute hooks.
    tokio::select! {
        notes = interception::after_execution(policy, finished) => hook_notes.extend(notes),
        _ = control.cancel.cancelled() => {}
    };
    let mut next = Next::Continue;
    say_asides(c, asides.take(), &mut hook_notes, &mut next)?;
    c.commit(Event::ToolResult {
        tool_call_id: id,
        status: output.status,
        output: output.text,
        exit_code: output.exit_code,
        signal: output.signal,
        hook_notes,
        diff: output.diff.map(bounded),
        output_file: output.file,
    })?;
    Ok(next)
}
