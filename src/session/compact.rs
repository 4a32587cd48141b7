//! Compacting a session's history: the model writes a summary of the older
//! part of the conversation, and a `history/compacted` record puts it in
//! that part's place for the model (`history::derive_through`); the log,
//! the cards and a replay keep everything.
//!
//! [`compact`] is one compaction: the span from `compaction::plan`, the
//! summary request from `compaction::summary_request` (the session's system
//! prompt and tools, no tool runs: a call the model makes is ignored),
//! streamed with nothing shown (retries are notices), then the record. A
//! summary request the provider finds too long is asked again shown less
//! (at most 3 tries). A request that fails, is cancelled or gives no text
//! records nothing as compacted. `turn` calls it before a model request
//! that would not fit the budget (`auto`), after a provider's
//! context-length error (`overflow`), and for `/compact [focus]`
//! ([`on_request`], `manual`).

use tokio_util::sync::CancellationToken;

use super::commit::Committer;
use crate::compaction::{self, Budget};
use crate::conversation::{Message, ModelRequest};
use crate::event_log::{CompactTrigger, Event, LogError, NoticeLevel, TurnStop};
use crate::providers::Provider;

/// The window `/compact` plans with when the model's is not known.
pub(crate) const UNKNOWN_WINDOW: u64 = 128_000;

/// How a compaction went.
#[derive(Debug)]
pub(crate) enum Compacted {
    /// Recorded: the summary and the estimated context after it.
    Done {
        summary: String,
        after: u64,
    },
    /// Nothing to compact (why).
    Nothing(String),
    /// The summary request failed; nothing was recorded (why).
    Failed(String),
    Cancelled,
}

/// What one compaction is asked for.
pub(crate) struct Ask<'a> {
    pub(crate) trigger: CompactTrigger,
    pub(crate) focus: Option<&'a str>,
    /// The estimated context of the next request now.
    pub(crate) before: u64,
}

/// Compacts the history now, if there is anything to compact. `base` is
/// the request the session would send next (its system prompt and tools
/// are reused).
pub(crate) async fn compact(
    c: &mut Committer,
    provider: &mut Provider,
    base: &ModelRequest,
    ask: Ask<'_>,
    cancel: &CancellationToken,
) -> Result<Compacted, LogError> {
    if !provider.is_model() {
        return Ok(Compacted::Nothing(
            "no model is configured to write a summary".into(),
        ));
    }
    let budget = provider
        .budget()
        .unwrap_or_else(|| Budget::new(UNKNOWN_WINDOW, None));
    let keep = match ask.trigger {
        // Asked for: keep at most a quarter of what is there now.
        CompactTrigger::Manual => budget.keep().min(ask.before / 4),
        CompactTrigger::Auto | CompactTrigger::Overflow => budget.keep(),
    };
    let Some(plan) = compaction::plan(c.records(), keep) else {
        return Ok(Compacted::Nothing(
            "there is no earlier turn to summarize yet".into(),
        ));
    };
    let strategy = provider.rewrite_strategy();
    let mut shown = budget;
    let mut tries = 0;
    let (turn, elided) = loop {
        tries += 1;
        c.ensure_images(strategy, plan.to);
        let (request, elided) = compaction::summary_request(
            c.records(),
            c.attachments(),
            strategy,
            plan.to,
            base,
            ask.focus,
            plan.kept_prompt.is_some(),
            &shown,
        );
        // Nothing of the summary is shown; retries are notices.
        match super::ask::stream(c, provider, &request, cancel, None, |_, _| Ok(())).await? {
            None => {
                if ask.trigger != CompactTrigger::Manual {
                    c.commit(Event::Notice {
                        level: NoticeLevel::Warning,
                        text: "The compaction was cancelled; nothing was compacted.".into(),
                    })?;
                }
                return Ok(Compacted::Cancelled);
            }
            Some(Ok(turn)) => break (turn, elided),
            Some(Err(e)) if e.is_context_too_long() && tries < 3 => {
                // Shown less next time: half the room.
                shown = Budget {
                    window: shown.limit() / 2 + shown.reserve,
                    reserve: shown.reserve,
                };
            }
            Some(Err(e)) => return Ok(Compacted::Failed(e.to_string())),
        }
    };
    let summary = compaction::cap_summary(&turn.text(), &budget);
    if summary.is_empty() {
        return Ok(Compacted::Failed(
            "the model answered without writing a summary".into(),
        ));
    }
    let after = after_tokens(c, base, &plan, &summary);
    c.commit(Event::HistoryCompacted {
        from: plan.from,
        to: plan.to,
        summary: summary.clone(),
        trigger: ask.trigger,
        focus: ask
            .focus
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_owned),
        tokens_before: ask.before,
        tokens_after: after,
        usage: turn.usage(),
        elided,
        cost: turn.usage().and_then(|u| provider.cost(&u)),
        kept_prompt: plan.kept_prompt,
    })?;
    Ok(Compacted::Done { summary, after })
}

/// The estimated context of the next request once the span of `plan` is
/// replaced by `summary` (after the request it keeps, if any).
fn after_tokens(c: &Committer, base: &ModelRequest, plan: &compaction::Plan, summary: &str) -> u64 {
    let head = ModelRequest {
        system: base.system.clone(),
        messages: vec![Message::user(crate::history::summary_message(
            summary,
            plan.kept_prompt.is_some(),
        ))],
        tools: base.tools.clone(),
        web_search: base.web_search,
    };
    let records = c.records();
    let kept = records
        .iter()
        .position(|r| r.seq > plan.to)
        .unwrap_or(records.len());
    let request = plan.kept_prompt.map_or(0, |p| {
        let within = |r: &&crate::event_log::Record| p.from <= r.seq && r.seq <= p.to;
        let prompt: Vec<_> = records.iter().filter(within).cloned().collect();
        compaction::appended(&prompt)
    });
    compaction::request_tokens(&head)
        .saturating_add(compaction::appended(&records[kept..]))
        .saturating_add(request)
}

/// What a compaction around a model request did to the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Unchanged,
    Compacted,
    Cancelled,
}

/// Before the model request `next`: compacts when it would not fit the
/// budget. Says so (once a prompt, `warned`) when it cannot, and once a
/// session when the window is too small to work with (the log remembers).
pub(crate) async fn before_request(
    c: &mut Committer,
    provider: &mut Provider,
    next: &ModelRequest,
    cancel: &CancellationToken,
    warned: &mut bool,
) -> Result<Step, LogError> {
    let Some(budget) = provider.budget() else {
        return Ok(Step::Unchanged);
    };
    let before = compaction::estimate(c.records(), next);
    if before <= budget.limit() {
        return Ok(Step::Unchanged);
    }
    if !compaction::workable(next, &budget) {
        let text = format!(
            "The context window ({} tokens) leaves too little room beside candor's system prompt and tools (about {} tokens) for compacting to help; candor does not compact with it. Check `context_window` in the config.",
            crate::text::thousands(budget.window),
            crate::text::thousands(compaction::fixed_tokens(next))
        );
        let told = c
            .records()
            .iter()
            .any(|r| matches!(&r.event, Event::Notice { text: t, .. } if *t == text));
        if !told {
            c.commit(Event::Notice {
                level: NoticeLevel::Warning,
                text,
            })?;
        }
        return Ok(Step::Unchanged);
    }
    let ask = Ask {
        trigger: CompactTrigger::Auto,
        focus: None,
        before,
    };
    match compact(c, provider, next, ask, cancel).await? {
        Compacted::Done { .. } => Ok(Step::Compacted),
        Compacted::Cancelled => Ok(Step::Cancelled),
        Compacted::Nothing(why) | Compacted::Failed(why) => {
            if !*warned {
                *warned = true;
                c.commit(Event::Notice {
                    level: NoticeLevel::Warning,
                    text: format!(
                        "The conversation is close to the model's context window (about {} of {} tokens) and could not be compacted: {why}. The request goes as it is.",
                        crate::text::thousands(before),
                        crate::text::thousands(budget.window)
                    ),
                })?;
            }
            Ok(Step::Unchanged)
        }
    }
}

/// After the provider answered that `next` is too long: compacts (the
/// request is then sent once more). `Unchanged` when it could not (said in
/// a notice; the turn fails with the provider's error).
pub(crate) async fn after_overflow(
    c: &mut Committer,
    provider: &mut Provider,
    next: &ModelRequest,
    cancel: &CancellationToken,
) -> Result<Step, LogError> {
    let ask = Ask {
        trigger: CompactTrigger::Overflow,
        focus: None,
        before: compaction::estimate(c.records(), next),
    };
    match compact(c, provider, next, ask, cancel).await? {
        Compacted::Done { .. } => Ok(Step::Compacted),
        Compacted::Cancelled => Ok(Step::Cancelled),
        Compacted::Nothing(why) | Compacted::Failed(why) => {
            c.commit(Event::Notice {
                level: NoticeLevel::Error,
                text: format!("candor could not compact the conversation: {why}."),
            })?;
            Ok(Step::Unchanged)
        }
    }
}

/// `/compact [focus]`: compacts now and answers with what happened (a
/// `command/ran`; the model is not asked anything else).
pub(crate) async fn on_request(
    c: &mut Committer,
    provider: &mut Provider,
    base: &ModelRequest,
    focus: &str,
    cancel: &CancellationToken,
) -> Result<TurnStop, LogError> {
    let before = compaction::estimate(c.records(), base);
    let focus = Some(focus.trim()).filter(|f| !f.is_empty());
    let ask = Ask {
        trigger: CompactTrigger::Manual,
        focus,
        before,
    };
    let (output, stop) = match compact(c, provider, base, ask, cancel).await? {
        Compacted::Done { summary, after } => (
            format!(
                "Compacted the conversation: about {} → {} tokens. From now on the model works from this summary and the turns after it:\n\n{summary}\n",
                crate::text::thousands(before),
                crate::text::thousands(after)
            ),
            TurnStop::EndTurn,
        ),
        Compacted::Nothing(why) => (format!("Nothing to compact: {why}.\n"), TurnStop::EndTurn),
        Compacted::Failed(why) => (
            format!("The compaction failed, and nothing was compacted: {why}\n"),
            TurnStop::EndTurn,
        ),
        Compacted::Cancelled => (
            "The compaction was cancelled; nothing was compacted.\n".to_owned(),
            TurnStop::Cancelled,
        ),
    };
    c.commit(Event::CommandRan {
        command: "compact".into(),
        output,
    })?;
    Ok(stop)
}
