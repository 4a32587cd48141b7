//! Hooks on session events that are not about one call: a prompt arriving,
//! the model wanting to stop, the session starting or ending.
//!
//! Every hook that applies to an event runs at once (what one says does not
//! change what the others are shown); their answers are put together in
//! configured order: the first block wins (its reason is the one used),
//! every context and notice is kept.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use serde_json::{Map, Value};

use crate::mode::Mode;

pub use crate::event_log::SessionEvent;

/// What an event hook is shown.
#[derive(Debug, Clone, Copy)]
pub struct EventInput<'a> {
    pub event: SessionEvent,
    pub cwd: &'a Path,
    pub mode: Mode,
    /// What a matcher looks at: `source` (SessionStart), `reason`
    /// (SessionEnd); none for the others.
    pub subject: Option<&'a str>,
    /// The event's own fields, as a hook's input carries them
    /// (`prompt`; `stop_hook_active`, `last_assistant_message`; `source`;
    /// `reason`).
    pub fields: &'a Map<String, Value>,
}

/// One hook's answer to an event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventAnswer {
    /// Block the prompt (UserPromptSubmit) or the stop (Stop), with why.
    pub block: Option<String>,
    /// Context for the model.
    pub context: Option<String>,
    /// Warnings for the user (the hook's failures, its stderr).
    pub notices: Vec<String>,
    /// The hook's own messages for the user (`systemMessage`): information.
    pub messages: Vec<String>,
    /// Its context is for the model only (`suppressOutput`): not shown.
    pub quiet: bool,
}

/// The future an event hook returns.
pub type EventFuture<'a> = Pin<Box<dyn Future<Output = EventAnswer> + Send + 'a>>;

/// A hook on session events. The Claude Code and Codex bridges implement it.
pub trait EventHook: Send + Sync + fmt::Debug {
    /// The name notices and records show.
    fn id(&self) -> &str;
    /// The event it is for.
    fn event(&self) -> SessionEvent;
    /// Whether it runs for this event (its event and matcher).
    fn applies_to(&self, input: &EventInput<'_>) -> bool;
    fn run<'a>(&'a self, input: EventInput<'a>) -> EventFuture<'a>;
}

/// What the hooks of one event said, together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventOutcome {
    /// The first hook (in configured order) that blocked, and why.
    pub block: Option<(String, String)>,
    /// Each hook's context, in configured order.
    pub context: Vec<(String, String)>,
    /// Each hook's notices, in configured order.
    pub notices: Vec<(String, String)>,
    /// Each hook's messages (`systemMessage`), in configured order.
    pub messages: Vec<(String, String)>,
    /// Hooks whose context is not shown to the user (`suppressOutput`).
    pub quiet: Vec<String>,
    /// How many hooks ran.
    pub ran: usize,
}

/// Runs the hooks of `hooks` (the session's event hooks) that apply to
/// `input` and puts their answers together.
pub async fn on_event(
    hooks: &[std::sync::Arc<dyn EventHook>],
    input: EventInput<'_>,
) -> EventOutcome {
    let running = hooks
        .iter()
        .filter(|hook| hook.applies_to(&input))
        .map(|hook| async move { (hook.id().to_owned(), hook.run(input).await) });
    let answers = futures_util::future::join_all(running).await;
    let mut outcome = EventOutcome {
        ran: answers.len(),
        ..EventOutcome::default()
    };
    for (id, answer) in answers {
        if outcome.block.is_none()
            && let Some(reason) = answer.block
        {
            outcome.block = Some((id.clone(), reason));
        }
        if let Some(text) = answer.context.filter(|t| !t.trim().is_empty()) {
            outcome.context.push((id.clone(), text));
        }
        for notice in answer.notices {
            outcome.notices.push((id.clone(), notice));
        }
        for message in answer.messages {
            outcome.messages.push((id.clone(), message));
        }
        if answer.quiet {
            outcome.quiet.push(id.clone());
        }
    }
    outcome
}
