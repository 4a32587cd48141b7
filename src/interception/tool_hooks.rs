//! The seam every tool-call hook plugs into: what a pre-execute hook is
//! shown ([`ProposedCall`]) and says ([`PreToolDecision`], with [`Aside`]s
//! beside it), what a post-execute hook is shown ([`FinishedCall`]) and
//! says ([`PostToolDecision`]), and how a hook fails ([`HookFailure`]).
//! candor's scripted hooks and the Claude Code and Codex bridges implement
//! [`PreToolHook`] and [`PostToolHook`]; `settle` and `after_execution`
//! run them.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use serde_json::Value;

use super::subject::Subject;
use crate::event_log::Verdict;
use crate::mode::Mode;

/// What one pre-execute hook says about one call.
///
/// `rewrite` replaces the whole input (never merged). With `Deny` a
/// rewrite means nothing, so the variant has none.
#[derive(Debug, Clone, PartialEq)]
pub enum PreToolDecision {
    /// No opinion: rules and the mode decide (the rewrite, if any, applies).
    Pass { rewrite: Option<Value> },
    /// Run without asking; deny and ask rules still apply to the effective
    /// arguments.
    Allow {
        reason: Option<String>,
        rewrite: Option<Value>,
    },
    /// Ask the user, showing the effective (rewritten) arguments.
    Ask {
        reason: Option<String>,
        rewrite: Option<Value>,
    },
    /// Do not run.
    Deny { reason: String },
}

impl PreToolDecision {
    pub(super) fn verdict(&self) -> Verdict {
        match self {
            PreToolDecision::Pass { .. } => Verdict::Pass,
            PreToolDecision::Allow { .. } => Verdict::Allow,
            PreToolDecision::Ask { .. } => Verdict::Ask,
            PreToolDecision::Deny { .. } => Verdict::Deny,
        }
    }

    pub(super) fn parts(self) -> (Option<String>, Option<Value>) {
        match self {
            PreToolDecision::Pass { rewrite } => (None, rewrite),
            PreToolDecision::Allow { reason, rewrite }
            | PreToolDecision::Ask { reason, rewrite } => (reason, rewrite),
            PreToolDecision::Deny { reason } => (Some(reason), None),
        }
    }
}

/// What a hook is shown: a read-only view of the call.
#[derive(Debug, Clone, Copy)]
pub struct ProposedCall<'a> {
    pub id: &'a str,
    pub tool: &'a str,
    /// The effective input so far (the model's, or the previous hook's
    /// rewrite), as JSON: the hook's payload (one of the two places a
    /// call's JSON is read; the other is presenting a logged record).
    pub input: &'a Value,
    /// The same input, typed: what the hook's matcher (`if` filters)
    /// judges.
    pub subject: Subject<'a>,
    /// What the model asked for.
    pub original: &'a Value,
    pub cwd: &'a Path,
    pub mode: Mode,
    /// Where the hook says what is not a decision.
    pub asides: &'a Asides,
    /// The subagent making the call (hooks are told its id and type).
    pub agent: Option<&'a crate::subagents::Delegate>,
}

/// Why a hook could not decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    pub message: String,
    /// `false`: the call is denied (in-process hooks). `true`: the call goes
    /// on as if the hook had said nothing, and the user is told (the Claude
    /// Code and Codex contracts: a broken hook fails open).
    pub fail_open: bool,
}

impl HookFailure {
    pub fn closed(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            fail_open: false,
        }
    }

    pub fn open(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            fail_open: true,
        }
    }
}

/// The future a hook returns: its decision, or why it could not decide.
pub type HookFuture<'a> =
    Pin<Box<dyn Future<Output = Result<PreToolDecision, HookFailure>> + Send + 'a>>;

/// What a hook said besides its decision: a message for the user, context
/// for the model, or a request to end the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aside {
    /// Shown to the user as a warning (something about the hook's answer).
    Notice { hook: String, text: String },
    /// The hook's own message for the user (`systemMessage`), shown as
    /// information.
    Message { hook: String, text: String },
    /// Told to the model next to the call's result.
    Context { hook: String, text: String },
    /// The turn ends once this call is finished.
    StopTurn { hook: String, reason: String },
}

/// Collects asides while hooks run (hooks run concurrently, hence the lock,
/// held only to push or take).
#[derive(Debug, Default)]
pub struct Asides(std::sync::Mutex<Vec<Aside>>);

impl Asides {
    pub fn push(&self, aside: Aside) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(aside);
    }

    pub fn take(&self) -> Vec<Aside> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// A pre-execute hook. candor's scripted hooks implement it; the Claude
/// Code and Codex bridges plug in here too.
pub trait PreToolHook: Send + Sync + fmt::Debug {
    /// The name the card, the log and the audit trail show.
    fn id(&self) -> &str;
    /// Whether the hook runs for this call at all (its matcher). A hook
    /// that does not apply leaves no trace in the record.
    fn applies_to(&self, _call: &ProposedCall<'_>) -> bool {
        true
    }
    /// Decides about one call. An `Err` from an in-process hook denies the
    /// call (a bridge that must fail open returns `Pass` itself).
    fn check<'a>(&'a self, call: ProposedCall<'a>) -> HookFuture<'a>;
}

/// What a post-execute hook says once a call has run.
#[derive(Debug, Clone, PartialEq)]
pub enum PostToolDecision {
    /// Fine; `context`, if any, is added next to the result for the model
    /// (`quiet`: and not shown to the user, Claude Code's `suppressOutput`).
    Accept {
        context: Option<String>,
        quiet: bool,
    },
    /// The result is not acceptable; the reason goes to the model (the call
    /// has run: nothing is undone).
    Block { reason: String },
}

/// What a post-execute hook is shown: the call as it ran, and its result.
#[derive(Debug, Clone, Copy)]
pub struct FinishedCall<'a> {
    pub id: &'a str,
    pub tool: &'a str,
    /// The effective arguments (what ran), as JSON: the hook's payload.
    pub input: &'a Value,
    /// What ran, typed: what the hook's matcher judges.
    pub subject: Subject<'a>,
    /// What the tool returned for the model.
    pub output: &'a str,
    pub status: crate::event_log::ResultStatus,
    pub cwd: &'a Path,
    pub mode: Mode,
    /// Where the hook says what is not a decision (notices, stopping).
    pub asides: &'a Asides,
    /// The subagent that made the call.
    pub agent: Option<&'a crate::subagents::Delegate>,
}

/// The future a post-execute hook returns.
pub type PostHookFuture<'a> =
    Pin<Box<dyn Future<Output = Result<PostToolDecision, String>> + Send + 'a>>;

/// A post-execute hook: sees what ran and what came back.
pub trait PostToolHook: Send + Sync + fmt::Debug {
    fn id(&self) -> &str;
    /// Whether the hook runs for this call (its matcher).
    fn applies_to(&self, _call: &FinishedCall<'_>) -> bool {
        true
    }
    fn after<'a>(&'a self, call: FinishedCall<'a>) -> PostHookFuture<'a>;
}
