//! Asking the user to trust a project whose own settings want hooks, allow
//! rules or a mode that asks less (`bridges::trust` says when a project is
//! trusted without asking).
//!
//! The session starts without those settings and says so. At the first
//! prompt, before anything else of the turn, candor asks once:
//!
//! ```text
//! trust/requested (the card lists every want) → session/request_permission
//!   → trust/resolved (flushed) → trusted: the policy is rebuilt with the
//!     project's settings and the project's SessionStart hooks run
//! ```
//!
//! A remembered answer (`Trust this project`, `Never for these settings`)
//! binds to the digest of the list shown: when the list changes, candor
//! asks again.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use super::call::{Asked, ask_client};
use super::commit::Committer;
use super::context::Gate;
use super::events;
use crate::bridges::SessionContext;
use crate::bridges::policy::{Built, build};
use crate::bridges::trust::{self, Answer, Standing, Store};
use crate::config::Config;
use crate::event_log::{Event, LogError, NoticeLevel, PermissionChoice, TrustOutcome};
use crate::presentation::trust_card_id;

/// A question to ask at the first prompt.
#[derive(Debug)]
pub(crate) struct Consent {
    config: Config,
    context: Arc<SessionContext>,
    wants: Vec<String>,
    digest: String,
    /// The notices already given (not repeated when the policy is rebuilt).
    said: HashSet<String>,
}

/// Builds the session's policy, trusting the project if the user's records
/// do; else, when the project wants something, the question to ask.
pub(crate) fn start(
    config: &Config,
    context: &Arc<SessionContext>,
) -> Result<(Built, Option<Consent>), String> {
    let project = &context.project_dir;
    // Most projects want nothing; the user's records are read only when
    // one does.
    let mut built = build(config, context, false)?;
    if built.wants.is_empty() {
        return Ok((built, None));
    }
    let store = Store::new(&config.home);
    let digest = trust::digest(&built.wants);
    match trust::standing(config, &store, project, &built.wants) {
        Standing::Recorded { by } => {
            tracing::info!(project = %project.display(), by, "the project is trusted");
            return Ok((build(config, context, true)?, None));
        }
        Standing::Answered { trusted: true } => {
            let trusted = build(config, context, true)?;
            // Applied only if it is still what was answered for (the files
            // may change between two reads).
            if trust::digest(&trusted.wants) == digest {
                return Ok((trusted, None));
            }
        }
        Standing::Answered { trusted: false } => {
            let listed = listed(&built.wants);
            built.notices.push((
                NoticeLevel::Info,
                format!(
                    "This project's own settings were not applied (you chose not to trust them; candor asks again if they change, or remove the project from {}):\n{listed}",
                    store.path().display()
                ),
            ));
            return Ok((built, None));
        }
        Standing::Unknown => {}
    }
    built.notices.push((
        NoticeLevel::Warning,
        format!(
            "This project's own settings are not applied until you trust the project; candor asks at your first prompt. They want:\n{}",
            listed(&built.wants)
        ),
    ));
    let consent = Consent {
        config: config.clone(),
        context: context.clone(),
        wants: built.wants.clone(),
        digest,
        said: built.notices.iter().map(|(_, t)| t.clone()).collect(),
    };
    Ok((built, Some(consent)))
}

fn listed(wants: &[String]) -> String {
    wants
        .iter()
        .map(|w| format!("- {}", crate::shell::truncate(w, 2000)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn choice(id: &str, name: &str) -> PermissionChoice {
    PermissionChoice {
        option_id: id.into(),
        kind: id.into(),
        name: name.into(),
    }
}

/// Asks the question; applies a yes. Returns the question when it is to be
/// asked again at the next prompt (the prompt was cancelled).
pub(crate) async fn ask(
    c: &mut Committer,
    gate: &mut Gate,
    consent: Consent,
    source: &str,
    model: Option<&str>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Option<Consent>, LogError> {
    let project: PathBuf = consent.context.project_dir.clone();
    c.commit(Event::TrustRequested {
        project: project.clone(),
        wants: consent.wants.clone(),
        digest: consent.digest.clone(),
    })?;
    let choices = [
        choice("allow_always", "Trust this project"),
        choice("allow_once", "Trust it for this session"),
        choice("reject_once", "Not now"),
        choice("reject_always", "Never for these settings"),
    ];
    let seq = c.records().last().map_or(0, |r| r.seq);
    let asked = match c.permission_card(&trust_card_id(seq)) {
        Some(card) => ask_client(gate, card, &choices, cancel).await,
        None => Asked::Failed("candor lost the card of the question".into()),
    };
    let (outcome, reason) = match asked {
        Asked::Chose(option) => (
            match option.as_str() {
                "allow_always" => TrustOutcome::Trusted,
                "allow_once" => TrustOutcome::TrustedOnce,
                "reject_always" => TrustOutcome::Refused,
                _ => TrustOutcome::NotNow,
            },
            None,
        ),
        Asked::Cancelled => (TrustOutcome::Cancelled, None),
        Asked::Failed(why) => (TrustOutcome::Failed, Some(why)),
    };
    c.commit_durable(Event::TrustResolved {
        digest: consent.digest.clone(),
        outcome,
        reason,
    })
    .await?;
    if matches!(outcome, TrustOutcome::Trusted | TrustOutcome::Refused) {
        let store = Store::new(&consent.config.home);
        let answer = Answer {
            trusted: outcome.trusts(),
            digest: consent.digest.clone(),
            at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        };
        if let Err(e) = store.remember(&project, answer) {
            c.commit(Event::Notice {
                level: NoticeLevel::Warning,
                text: format!(
                    "candor could not remember the answer in {} ({e}); it asks again next session",
                    store.path().display()
                ),
            })?;
        }
    }
    if outcome == TrustOutcome::Cancelled {
        return Ok(Some(consent));
    }
    if !outcome.trusts() {
        return Ok(None);
    }
    apply(c, gate, consent, source, model, cancel).await
}

/// Rebuilds the policy with the project's settings and runs the project's
/// SessionStart hooks (the user's ran when the session opened); applies
/// nothing if the settings no longer want what the user was shown (then
/// the new question, for the next prompt).
async fn apply(
    c: &mut Committer,
    gate: &mut Gate,
    consent: Consent,
    source: &str,
    model: Option<&str>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Option<Consent>, LogError> {
    let built = match build(&consent.config, &consent.context, true) {
        Ok(b) => b,
        Err(e) => {
            c.commit(Event::Notice {
                level: NoticeLevel::Error,
                text: format!(
                    "The project's settings could not be applied: the policy no longer loads ({e}); the session goes on as it was"
                ),
            })?;
            return Ok(None);
        }
    };
    if trust::digest(&built.wants) != consent.digest {
        c.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text: format!(
                "The project's settings changed while candor asked, so none of them was applied; candor asks again at your next prompt. They now want:\n{}",
                listed(&built.wants)
            ),
        })?;
        return Ok((!built.wants.is_empty()).then(|| Consent {
            digest: trust::digest(&built.wants),
            wants: built.wants,
            ..consent
        }));
    }
    for (level, text) in built.notices {
        if !consent.said.contains(&text) {
            c.commit(Event::Notice { level, text })?;
        }
    }
    // The project's MCP servers start now (those of the editor, of the
    // same names, stay).
    gate.mcp.start(built.mcp, &consent.context.project_dir);
    let mut policy = built.policy;
    if policy.mode != gate.policy.mode {
        c.commit(Event::Notice {
            level: NoticeLevel::Info,
            text: format!(
                "The project's starting mode ({}) applies from the next session; choose it in the editor to use it now.",
                policy.mode.id()
            ),
        })?;
        policy.mode = gate.policy.mode;
    }
    let before: HashSet<String> = gate
        .policy
        .event_hooks
        .iter()
        .map(|h| h.id().to_owned())
        .collect();
    gate.policy = policy;
    // Only the hooks trust added run now; then the whole list is back.
    let all = std::mem::take(&mut gate.policy.event_hooks);
    gate.policy.event_hooks = all
        .iter()
        .filter(|h| !before.contains(h.id()))
        .cloned()
        .collect();
    let ran =
        events::session_start(c, gate, &consent.context.project_dir, source, model, cancel).await;
    gate.policy.event_hooks = all;
    ran.map(|()| None)
}
