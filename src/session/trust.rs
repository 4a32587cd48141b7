//! A project's own settings that only trust gives (hooks, allow rules, a
//! mode that asks less; `bridges::project_trust` says when the user's own records
//! trust a project) wait for the user, who trusts them by typing:
//!
//! ```text
//! session/new: the policy without them (Trust::Withheld)
//! first prompt that is not a candor command: a notice inside the turn
//!   lists them whole and says how to trust; the prompt runs without them
//! /trust [always] → trust/granted (flushed) → the policy rebuilt with the
//!   project's settings, the project's SessionStart hooks run
//! ```
//!
//! Nothing an editor answers on its own grants trust: no auto-approver
//! types `/trust`, and `candor trust DIR` asks on a terminal. A grant binds
//! to the digest of what it gives (the wants and the project files the
//! hooks run, `bridges::project_trust::Offer`); a loaded or resumed session trusts
//! again what its last `trust/granted` bound to, while the files hold it.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use super::commit::Committer;
use super::events;
use super::kit::{SessionKit, Trust, Withheld};
use crate::bridges::SessionContext;
use crate::bridges::project_trust::{self, Answer, Offer, Standing, Store};
use crate::bridges::session_policy::{Built, build};
use crate::config::Config;
use crate::event_log::{Event, LogError, NoticeLevel, Record};

/// What a session's log says it trusted last (`trust/granted`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Granted {
    pub(crate) digest: String,
    pub(crate) files: BTreeMap<String, String>,
}

/// The last `trust/granted` of `records` for `project`. (An older
/// candor's `trust/resolved` is not one: an editor could answer it alone.)
pub(crate) fn granted(records: &[Record], project: &Path) -> Option<Granted> {
    records.iter().rev().find_map(|r| match &r.event {
        Event::TrustGranted {
            project: p,
            digest,
            files,
            ..
        } if p == project => Some(Granted {
            digest: digest.clone(),
            files: files.clone(),
        }),
        _ => None,
    })
}

/// Builds the session's policy, with the project's settings when the
/// user's records, their remembered answer or this session's `granted`
/// trust them as they are now; else the policy without them, and what
/// waits.
pub(crate) fn start(
    config: &Config,
    context: &Arc<SessionContext>,
    granted: Option<&Granted>,
    source: &'static str,
) -> Result<(Built, Trust), String> {
    let project = &context.project_dir;
    // Most projects want nothing; the user's records are read only when
    // one does.
    let built = build(config, context, false)?;
    if built.wants.is_empty() {
        return Ok((built, Trust::NotNeeded));
    }
    let offer = Offer::new(project, built.wants.clone(), &built.scripts);
    let store = Store::new(&config.home);
    let standing = project_trust::standing(config, &store, project, &offer);
    let by = match &standing {
        Standing::Recorded { by } => Some((by.clone(), true)),
        Standing::Answered { trusted: true } => {
            Some((format!("your answer, in {}", store.path().display()), true))
        }
        _ if granted.is_some_and(|g| g.digest == offer.digest) => {
            Some(("your /trust, for this session".to_owned(), false))
        }
        _ => None,
    };
    if let Some((by, remembered)) = by {
        let trusted = build(config, context, true)?;
        // Applied only if it is still what was trusted (the files may
        // change between two reads).
        if Offer::new(project, trusted.wants.clone(), &trusted.scripts).digest == offer.digest {
            tracing::info!(project = %project.display(), by, "the project is trusted");
            return Ok((
                trusted,
                Trust::Trusted {
                    by,
                    project: project.clone(),
                    offer,
                    remembered,
                },
            ));
        }
    }
    let changed = changed(&store, project, &offer, granted);
    let withheld = Withheld {
        context: context.clone(),
        said: built.notices.iter().map(|(_, t)| t.clone()).collect(),
        told: false,
        refused: standing == Standing::Answered { trusted: false },
        changed,
        source,
        offer,
    };
    Ok((built, Trust::Withheld(Box::new(withheld))))
}

/// Why an earlier trust of the project no longer holds, if one did.
fn changed(
    store: &Store,
    project: &Path,
    offer: &Offer,
    granted: Option<&Granted>,
) -> Option<String> {
    if let Some(g) = granted.filter(|g| g.digest != offer.digest) {
        return Some(format!(
            "You trusted them for this session; since then {}.",
            offer.changes(&g.files).join(", ")
        ));
    }
    let before = store.previous(project).filter(|a| a.trusted)?;
    if before.by.is_none() {
        return Some(
            "candor no longer takes the trust given through an editor's permission prompt (an editor that approves requests on its own gives it blindly).".into(),
        );
    }
    (before.digest != offer.digest).then(|| {
        format!(
            "You trusted this project ({}); since then {}.",
            before.at,
            offer.changes(&before.files).join(", ")
        )
    })
}

/// Tells the user, once, inside the turn, what waits for their trust and
/// how to give it.
pub(crate) fn tell(c: &mut Committer, kit: &mut SessionKit) -> Result<(), LogError> {
    let Trust::Withheld(w) = &mut kit.trust else {
        return Ok(());
    };
    if w.told {
        return Ok(());
    }
    w.told = true;
    let level = if w.refused {
        NoticeLevel::Info
    } else {
        NoticeLevel::Warning
    };
    let text = question(w);
    c.commit(Event::Notice { level, text })
}

/// What waits, whole, why, and how to trust it (`/hooks`, `/context` and
/// the notice say the same).
fn question(w: &Withheld) -> String {
    let dir = w.context.project_dir.display();
    let (list, cut) = w.offer.render(true);
    let mut text = if w.refused {
        "This project's own settings are not applied: you chose never to trust them (candor says so again when they change).".to_owned()
    } else {
        "This project's own settings are not applied until you trust the project; prompts run without them.".to_owned()
    };
    if let Some(changed) = &w.changed {
        text.push(' ');
        text.push_str(changed);
    }
    text.push_str(" They want:\n");
    text.push_str(&list);
    match (w.offer.blocked(), cut) {
        (Some(why), _) => text.push_str(&format!("{why}.")),
        (None, Some(why)) => text.push_str(&format!(
            "They cannot be trusted from the editor: {why}. Read them in the project's settings, and run `candor trust {dir}` in a terminal, which shows them whole."
        )),
        (None, None) => text.push_str(&format!(
            "To trust them, type `/trust` (for this session) or `/trust always` (remembered until they change), or run `candor trust {dir}` in a terminal. An editor's automatic approval never trusts a project."
        )),
    }
    crate::text::visible(&text)
}

/// What `/hooks` and `/context` say of settings waiting for trust.
pub(crate) fn withheld(trust: &Trust) -> Option<String> {
    match trust {
        Trust::Withheld(w) => Some(format!(
            "**Withheld until you trust the project**\n{}\n",
            question(w)
        )),
        _ => None,
    }
}

/// `/trust` (`always`: `/trust always`): trusts the project's settings as
/// they are now, applies them and says what they are.
pub(crate) async fn grant(
    c: &mut Committer,
    kit: &mut SessionKit,
    always: bool,
    model: Option<&str>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<String, LogError> {
    match std::mem::replace(&mut kit.trust, Trust::NotNeeded) {
        Trust::NotNeeded => Ok(
            "Nothing to trust: this project's settings want nothing that only trust gives (hooks, allow rules, a starting mode that asks less).".into(),
        ),
        Trust::Trusted {
            by,
            project,
            offer,
            remembered,
        } => {
            let mut answer = format!("This project's settings apply already (trusted by {by}).");
            let mut now_remembered = remembered;
            if always && !remembered {
                c.commit_durable(granted_event(&project, &offer, true))
                    .await?;
                now_remembered = remember(c, &kit.config, &project, &offer)?;
                if now_remembered {
                    answer = "Remembered: sessions in this project apply its settings from their start, until they change.".into();
                }
            }
            kit.trust = Trust::Trusted {
                by,
                project,
                offer,
                remembered: now_remembered,
            };
            Ok(answer)
        }
        Trust::Withheld(w) => trust_withheld(c, kit, w, always, model, cancel).await,
    }
}

fn granted_event(project: &Path, offer: &Offer, always: bool) -> Event {
    Event::TrustGranted {
        project: project.to_owned(),
        wants: offer.wants.clone(),
        files: offer.file_digests(),
        digest: offer.digest.clone(),
        always,
    }
}

/// Remembers the trust in `trust.json`; `false` (and a notice) when it
/// cannot be written.
fn remember(
    c: &mut Committer,
    config: &Config,
    project: &Path,
    offer: &Offer,
) -> Result<bool, LogError> {
    let store = Store::new(&config.home);
    let answer = Answer {
        trusted: true,
        digest: offer.digest.clone(),
        at: project_trust::now(),
        by: Some("/trust always".into()),
        files: offer.file_digests(),
    };
    match store.remember(project, answer) {
        Ok(()) => Ok(true),
        Err(e) => {
            c.commit(Event::Notice {
                level: NoticeLevel::Warning,
                text: format!(
                    "candor could not remember the trust in {} ({e}); this session trusts the project, the next one waits for /trust again",
                    store.path().display()
                ),
            })?;
            Ok(false)
        }
    }
}

/// `/trust` of settings that wait: applied only when they can be shown
/// whole and are, as the files are now, what the user was shown (else
/// nothing is, and the answer says what they are now).
async fn trust_withheld(
    c: &mut Committer,
    kit: &mut SessionKit,
    mut w: Box<Withheld>,
    always: bool,
    model: Option<&str>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<String, LogError> {
    let config = kit.config.clone();
    let project = w.context.project_dir.clone();
    let refuse = |kit: &mut SessionKit, w: Box<Withheld>, text: String| {
        kit.trust = Trust::Withheld(w);
        Ok(crate::text::visible(&text))
    };
    let now = match build(&config, &w.context, false) {
        Ok(b) => b,
        Err(e) => {
            return refuse(
                kit,
                w,
                format!("Nothing was trusted: the policy no longer loads ({e})."),
            );
        }
    };
    let offer = Offer::new(&project, now.wants, &now.scripts);
    if offer.wants.is_empty() {
        return Ok("Nothing to trust: this project's settings no longer want anything that only trust gives.".into());
    }
    if w.told && offer.digest != w.offer.digest {
        w.offer = offer;
        w.changed = None;
        let text = format!(
            "Nothing was trusted: the project's settings changed since candor showed them. {}",
            question(&w)
        );
        return refuse(kit, w, text);
    }
    w.offer = offer;
    let (list, cut) = w.offer.render(true);
    if w.offer.blocked().is_some() || cut.is_some() {
        let text = format!("Nothing was trusted. {}", question(&w));
        return refuse(kit, w, text);
    }
    let trusted = match build(&config, &w.context, true) {
        Ok(b) if Offer::new(&project, b.wants.clone(), &b.scripts).digest == w.offer.digest => b,
        Ok(_) => {
            return refuse(
                kit,
                w,
                "Nothing was trusted: the project's settings changed while candor read them; type /trust again to trust them as they are now.".into(),
            );
        }
        Err(e) => {
            return refuse(
                kit,
                w,
                format!(
                    "Nothing was trusted: the policy no longer loads with the project's settings ({e})."
                ),
            );
        }
    };
    c.commit_durable(granted_event(&project, &w.offer, always))
        .await?;
    let remembered = always && remember(c, &config, &project, &w.offer)?;
    apply(c, kit, trusted, &w, model, cancel).await?;
    let scope = if remembered {
        "and remembered until they change (sessions in this project apply them from their start)"
    } else {
        "for this session"
    };
    let text =
        format!("Trusted {scope}: the project's settings apply from now on. They want:\n{list}");
    kit.trust = Trust::Trusted {
        by: if remembered {
            "your /trust always".into()
        } else {
            "your /trust, for this session".into()
        },
        project,
        offer: w.offer,
        remembered,
    };
    Ok(crate::text::visible(&text))
}

/// Applies the project's settings (`built`, read trusted): its MCP
/// servers start, the policy is the rebuilt one (the session's mode
/// stays), and the project's SessionStart hooks run (the user's ran when
/// the session opened).
async fn apply(
    c: &mut Committer,
    kit: &mut SessionKit,
    built: Built,
    w: &Withheld,
    model: Option<&str>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(), LogError> {
    for (level, text) in built.notices {
        if !w.said.contains(&text) {
            c.commit(Event::Notice { level, text })?;
        }
    }
    // The project's MCP servers start now (those of the editor, of the
    // same names, stay).
    kit.mcp.start(built.mcp, &w.context.project_dir);
    // The project's subagent definitions that waited are offered now.
    kit.agents = std::sync::Arc::new(built.agents);
    let mut policy = built.policy;
    if policy.mode != kit.policy.mode {
        c.commit(Event::Notice {
            level: NoticeLevel::Info,
            text: format!(
                "The project's starting mode ({}) applies from the next session; choose it in the editor to use it now.",
                policy.mode.id()
            ),
        })?;
        policy.mode = kit.policy.mode;
    }
    // The session's additional directories stay what the client gave.
    policy.rules.roots = std::mem::take(&mut kit.policy.rules.roots);
    let before: HashSet<String> = kit
        .policy
        .event_hooks
        .iter()
        .map(|h| h.id().to_owned())
        .collect();
    kit.policy = policy;
    // Only the hooks trust added run now; then the whole list is back.
    let all = std::mem::take(&mut kit.policy.event_hooks);
    kit.policy.event_hooks = all
        .iter()
        .filter(|h| !before.contains(h.id()))
        .cloned()
        .collect();
    let ran = events::session_start(c, kit, &w.context.project_dir, w.source, model, cancel).await;
    kit.policy.event_hooks = all;
    ran
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            at: "2026-01-01T00:00:00.000Z".into(),
            event,
        }
    }

    /// Only a `trust/granted` of the session's project restores trust: an
    /// older candor's `trust/resolved` (an editor could answer it alone)
    /// does not, nor a grant for another directory.
    #[test]
    fn only_a_typed_trust_of_this_project_is_restored() {
        let project = Path::new("/p");
        let grant = |project: &str, digest: &str| Event::TrustGranted {
            project: project.into(),
            wants: vec!["hook".into()],
            files: BTreeMap::from([("a.sh".to_owned(), "sha256:1".to_owned())]),
            digest: digest.into(),
            always: false,
        };
        let old = [record(
            0,
            Event::TrustResolved {
                digest: "sha256:old".into(),
                outcome: crate::event_log::TrustOutcome::TrustedOnce,
                reason: None,
            },
        )];
        assert_eq!(granted(&old, project), None);
        let records = [
            record(0, grant("/p", "sha256:first")),
            record(1, grant("/p", "sha256:second")),
            record(2, grant("/elsewhere", "sha256:third")),
        ];
        let restored = granted(&records, project).unwrap();
        assert_eq!(restored.digest, "sha256:second");
        assert_eq!(restored.files["a.sh"], "sha256:1");
    }
}
