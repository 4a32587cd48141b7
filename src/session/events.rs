//! The session's hook events: where a turn and the actor give event hooks
//! their say, and what they record of it.
//!
//! Every answer becomes records: notices (`session/notice`), context for
//! the model (`hook/context`), a refused prompt (`prompt/blocked`). The
//! model's history and the client's updates are projections of those, like
//! everything else.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::commit::Committer;
use super::kit::SessionKit;
use crate::event_log::{Event, LogError, NoticeLevel};
use crate::interception::session_hooks::{EventInput, EventOutcome, SessionEvent, on_event};

/// How many times Stop hooks may send the model back to work in one
/// prompt (a guard against two hooks, or a hook and a model, that never
/// agree).
pub(crate) const MAX_STOP_CONTINUATIONS: usize = 5;

/// How long SessionEnd hooks get, all together (Claude Code's default).
pub(crate) const SESSION_END_BUDGET: Duration = Duration::from_millis(1500);

/// Runs the hooks of `event`, unless cancelled first (`None`).
async fn run(
    kit: &SessionKit,
    event: SessionEvent,
    cwd: &Path,
    subject: Option<&str>,
    fields: Map<String, Value>,
    cancel: &CancellationToken,
) -> Option<EventOutcome> {
    if kit.policy.event_hooks.is_empty() {
        return Some(EventOutcome::default());
    }
    let input = EventInput {
        event,
        cwd,
        mode: kit.policy.mode,
        subject,
        fields: &fields,
    };
    tokio::select! {
        outcome = on_event(&kit.policy.event_hooks, input) => Some(outcome),
        _ = cancel.cancelled() => None,
    }
}

/// Records the notices and context of an outcome.
fn record(c: &mut Committer, event: SessionEvent, outcome: &EventOutcome) -> Result<(), LogError> {
    for (hook, text) in &outcome.notices {
        c.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text: format!("{hook}: {text}"),
        })?;
    }
    for (hook, text) in &outcome.messages {
        c.commit(Event::Notice {
            level: NoticeLevel::Info,
            text: format!("{hook}: {text}"),
        })?;
    }
    for (hook, text) in &outcome.context {
        c.commit(Event::HookContext {
            event,
            hook: hook.clone(),
            text: text.clone(),
            quiet: outcome.quiet.contains(hook),
        })?;
    }
    Ok(())
}

/// SessionStart (`source`: `startup`, or `resume` for a loaded session).
pub(crate) async fn session_start(
    c: &mut Committer,
    kit: &SessionKit,
    cwd: &Path,
    source: &str,
    model: Option<&str>,
    cancel: &CancellationToken,
) -> Result<(), LogError> {
    let mut fields = Map::new();
    fields.insert("source".into(), json!(source));
    if let Some(model) = model {
        fields.insert("model".into(), json!(model));
    }
    if let Some(outcome) = run(
        kit,
        SessionEvent::SessionStart,
        cwd,
        Some(source),
        fields,
        cancel,
    )
    .await
    {
        record(c, SessionEvent::SessionStart, &outcome)?;
    }
    Ok(())
}

/// UserPromptSubmit, right after the prompt's `user/message`. `true`: a
/// hook refused the prompt (recorded as `prompt/blocked`).
pub(crate) async fn prompt_submitted(
    c: &mut Committer,
    kit: &SessionKit,
    cwd: &Path,
    prompt: &str,
    cancel: &CancellationToken,
) -> Result<Option<bool>, LogError> {
    let mut fields = Map::new();
    fields.insert("prompt".into(), json!(prompt));
    let Some(outcome) = run(
        kit,
        SessionEvent::UserPromptSubmit,
        cwd,
        None,
        fields,
        cancel,
    )
    .await
    else {
        return Ok(None);
    };
    record(c, SessionEvent::UserPromptSubmit, &outcome)?;
    if let Some((hook, reason)) = outcome.block {
        c.commit(Event::PromptBlocked { hook, reason })?;
        return Ok(Some(true));
    }
    Ok(Some(false))
}

/// Stop, when the model ended its turn. `Some((hook, reason))`: a hook
/// sends it back to work (recorded as `hook/context` for `Stop`).
pub(crate) async fn stop_requested(
    c: &mut Committer,
    kit: &SessionKit,
    cwd: &Path,
    active: bool,
    last_message: &str,
    cancel: &CancellationToken,
) -> Result<Option<(String, String)>, LogError> {
    let mut fields = Map::new();
    fields.insert("stop_hook_active".into(), json!(active));
    fields.insert("last_assistant_message".into(), json!(last_message));
    // A subagent's stop is SubagentStop, with who it is.
    let agent = kit.policy.agent.clone();
    let event = match &agent {
        Some(a) => {
            fields.insert("agent_id".into(), json!(a.agent_id));
            fields.insert("agent_type".into(), json!(a.agent_type));
            fields.insert(
                "agent_transcript_path".into(),
                json!(a.transcript.display().to_string()),
            );
            SessionEvent::SubagentStop
        }
        None => SessionEvent::Stop,
    };
    let subject = agent.as_ref().map(|a| a.agent_type.as_str());
    let Some(outcome) = run(kit, event, cwd, subject, fields, cancel).await else {
        return Ok(None);
    };
    record(c, event, &outcome)?;
    if let Some((hook, reason)) = outcome.block {
        c.commit(Event::HookContext {
            event,
            hook: hook.clone(),
            text: reason.clone(),
            quiet: false,
        })?;
        return Ok(Some((hook, reason)));
    }
    Ok(None)
}

/// SubagentStart, as a subagent starts (`agent_id`, `agent_type`; the
/// matcher is tried on the type): their context is the subagent's.
pub(crate) async fn subagent_start(
    c: &mut Committer,
    kit: &SessionKit,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Result<(), LogError> {
    let Some(agent) = kit.policy.agent.clone() else {
        return Ok(());
    };
    let mut fields = Map::new();
    fields.insert("agent_id".into(), json!(agent.agent_id));
    fields.insert("agent_type".into(), json!(agent.agent_type));
    let event = SessionEvent::SubagentStart;
    match run(kit, event, cwd, Some(&agent.agent_type), fields, cancel).await {
        Some(outcome) => record(c, event, &outcome),
        None => Ok(()),
    }
}

/// SessionEnd, as the session closes; its hooks get
/// [`SESSION_END_BUDGET`] together, then they are stopped.
pub(crate) async fn session_end(c: &mut Committer, kit: &SessionKit, cwd: &Path, reason: &str) {
    let mut fields = Map::new();
    fields.insert("reason".into(), json!(reason));
    let never = CancellationToken::new();
    let ran = tokio::time::timeout(
        SESSION_END_BUDGET,
        run(
            kit,
            SessionEvent::SessionEnd,
            cwd,
            Some(reason),
            fields,
            &never,
        ),
    )
    .await;
    match ran {
        Ok(Some(outcome)) => {
            if let Err(e) = record(c, SessionEvent::SessionEnd, &outcome) {
                tracing::warn!(error = %e, "could not record what the SessionEnd hooks said");
            }
        }
        Ok(None) => {}
        Err(_) => tracing::warn!(
            "SessionEnd hooks did not finish within {:?} and were stopped",
            SESSION_END_BUDGET
        ),
    }
}
