//! `/sandbox`: the user's say over the session's sandbox, typed in the
//! prompt (so it comes from the person, never from a permission answer an
//! auto-approving client gives). `/sandbox` shows what a command runs in;
//! `/sandbox off`, `on`, `read-only`, `workspace-write`, and `/sandbox
//! network on|off|allowlist` change it for the session, each recorded as
//! `config/changed` (`sandbox` or `network`, `via: command`) before it
//! applies; the editor's `sandbox` and `network` config options
//! (`session::settings`) record the same changes. What a call runs in is
//! derived from the settings and those records alone ([`effective`]), so
//! a loaded session keeps the user's choice.

use super::commit::Committer;
use super::kit::{SessionKit, TurnError};
use super::settings::Change;
use crate::event_log::{ConfigId, ConfigVia, Event, Record};
use crate::sandbox::settings::NetworkMode;
use crate::sandbox::{Preset, Sandbox};

/// The session's sandbox: the settings', with the user's choices recorded
/// in `records` (`/sandbox`, the `sandbox` and `network` config options)
/// applied in order, and the hosts the user allowed for the rest of the
/// session (`network/decided` with a `grant`) added to its allowlist.
pub(crate) fn effective(settings: &Sandbox, records: &[Record]) -> Sandbox {
    let mut s = settings.clone();
    for record in records {
        if let Event::ConfigChanged {
            config_id,
            value,
            via,
        } = &record.event
        {
            match config_id {
                ConfigId::Sandbox => {
                    if let Some(p) = Preset::from_id(value) {
                        s.preset = p;
                        s.preset_by = Some(match via {
                            Some(ConfigVia::Command) => format!("you (/sandbox {})", word(p)),
                            None => format!("you (the session's Sandbox option: {})", p.id()),
                        });
                    }
                }
                ConfigId::Network => {
                    if let Some(n) = NetworkMode::from_id(value) {
                        s.network = n;
                    }
                }
                _ => {}
            }
        }
        // A host the user allowed for the rest of the session.
        if let Event::NetworkDecided {
            grant: Some(host), ..
        } = &record.event
        {
            s.grant_host(host);
        }
    }
    s
}

/// What the session's next Bash call is confined by: [`effective`], with
/// the session's additional directories as writable roots and the user's
/// Read deny rules as read-denied paths.
pub(crate) fn for_calls(kit: &SessionKit, records: &[Record]) -> Sandbox {
    crate::interception::sandbox::for_rules(
        effective(&kit.policy.sandbox, records),
        &kit.policy.rules,
    )
}

/// Asks the kernel what it gives (once per process) and starts the
/// session's house, or the spare of its first confined command, in the
/// boundary a Bash call would get now (`tools::confined::Confiner::
/// spare_soon`): when the session starts, and again when a turn does (its
/// sandbox may have changed since); once a command starts, `tools::bash`
/// makes the next one's. It only saves time: a command sends its own
/// settled boundary to the spare, and a spare made for other namespaces
/// than the call's is not used (`sandbox::spare`).
pub(crate) fn spare_soon(kit: &SessionKit, records: &[Record]) {
    let sandbox = for_calls(kit, records);
    if sandbox.preset == Preset::FullAccess || kit.confiner.launcher().is_none() {
        return;
    }
    let confiner = kit.confiner.clone();
    let home = kit.config.user_home.clone();
    tokio::spawn(async move {
        let probe = confiner.probe().await;
        let boundary = sandbox.boundary(
            confiner.workdir(),
            confiner.tmpdir(),
            home.as_deref(),
            probe,
        );
        confiner.spare_soon(&boundary);
    });
}

/// The shared view of the session's options follows its sandbox as it now
/// is (after `/sandbox`, or `/trust` applying a project's sandbox
/// settings), so the next `config_option_update` and option answers say it.
pub(crate) fn refresh_view(kit: &SessionKit, records: &[Record]) {
    let s = effective(&kit.policy.sandbox, records);
    crate::sync::lock(&kit.view).sandbox = Some((s.preset, s.network));
}

fn word(p: Preset) -> &'static str {
    match p {
        Preset::ReadOnly => "read-only",
        Preset::WorkspaceWrite => "on",
        Preset::FullAccess => "off",
    }
}

/// Runs `/sandbox …` (`text` is the whole prompt); its answer.
pub(crate) async fn command(
    c: &mut Committer,
    kit: &SessionKit,
    text: &str,
) -> Result<String, TurnError> {
    let words: Vec<&str> = text.split_whitespace().skip(1).collect();
    let change = match words.as_slice() {
        [] => None,
        ["off"] | ["full-access"] => Some(Change::Sandbox(Preset::FullAccess)),
        ["on"] | ["workspace-write"] => Some(Change::Sandbox(Preset::WorkspaceWrite)),
        ["read-only"] => Some(Change::Sandbox(Preset::ReadOnly)),
        ["network", "on"] => Some(Change::Network(NetworkMode::On)),
        ["network", "off"] => Some(Change::Network(NetworkMode::Off)),
        ["network", "allowlist"] => Some(Change::Network(NetworkMode::Allowlist)),
        _ => {
            return Ok("`/sandbox` shows what commands run in; `/sandbox off`, `/sandbox on`, `/sandbox read-only` and `/sandbox network on|off|allowlist` change it for this session.".into());
        }
    };
    if let Some(change) = &change {
        // The options the client is told of follow (the record's update).
        let _ = crate::sync::lock(&kit.view).set(change);
        let Event::ConfigChanged {
            config_id, value, ..
        } = change.record()
        else {
            return Ok(String::new());
        };
        c.commit(Event::ConfigChanged {
            config_id,
            value,
            via: Some(ConfigVia::Command),
        })?;
    }
    let sandbox = for_calls(kit, c.records());
    let probe = kit.confiner.probe().await;
    let boundary = sandbox.boundary(
        kit.confiner.workdir(),
        kit.confiner.tmpdir(),
        kit.config.user_home.as_deref(),
        probe,
    );
    let mut out = format!(
        "{}The sandbox for this session: {}.\nA command runs with: {}\nThis kernel gives: {}\n",
        if change.is_some() { "Changed. " } else { "" },
        sandbox.describe(),
        boundary.summary(),
        probe.describe()
    );
    for gap in boundary.not_enforced() {
        out.push_str(&format!("- not held: {gap}\n"));
    }
    Ok(crate::text::visible(&out))
}
