//! `/sandbox`: the user's say over the session's sandbox, typed in the
//! prompt (so it comes from the person, never from a permission answer an
//! auto-approving client gives). `/sandbox` shows what a command runs in;
//! `/sandbox off`, `on`, `read-only`, `workspace-write`, and `/sandbox
//! network on|off` change it for the session, each recorded as
//! `config/changed` (`sandbox` or `network`) before it applies. What a
//! call runs in is derived from the settings and those records alone
//! ([`effective`]), so a loaded session keeps the user's choice.

use super::commit::Committer;
use super::kit::{SessionKit, TurnError};
use crate::event_log::{ConfigId, Event, Record};
use crate::sandbox::settings::NetworkMode;
use crate::sandbox::{Preset, Sandbox};

/// The session's sandbox: the settings', with the user's `/sandbox`
/// choices recorded in `records` applied in order.
pub(crate) fn effective(settings: &Sandbox, records: &[Record]) -> Sandbox {
    let mut s = settings.clone();
    for record in records {
        if let Event::ConfigChanged { config_id, value } = &record.event {
            match (config_id, value.as_str()) {
                (ConfigId::Sandbox, v) => {
                    if let Some(p) = preset(v) {
                        s.preset = p;
                        s.preset_by = Some(format!("you (/sandbox {})", word(p)));
                    }
                }
                (ConfigId::Network, "on") => s.network = NetworkMode::On,
                (ConfigId::Network, "off") => s.network = NetworkMode::Off,
                _ => {}
            }
        }
    }
    s
}

fn preset(v: &str) -> Option<Preset> {
    match v {
        "read-only" => Some(Preset::ReadOnly),
        "workspace-write" => Some(Preset::WorkspaceWrite),
        "full-access" => Some(Preset::FullAccess),
        _ => None,
    }
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
        ["off"] | ["full-access"] => Some((ConfigId::Sandbox, "full-access")),
        ["on"] | ["workspace-write"] => Some((ConfigId::Sandbox, "workspace-write")),
        ["read-only"] => Some((ConfigId::Sandbox, "read-only")),
        ["network", "on"] => Some((ConfigId::Network, "on")),
        ["network", "off"] => Some((ConfigId::Network, "off")),
        _ => {
            return Ok("`/sandbox` shows what commands run in; `/sandbox off`, `/sandbox on`, `/sandbox read-only` and `/sandbox network on|off` change it for this session.".into());
        }
    };
    if let Some((config_id, value)) = change {
        c.commit(Event::ConfigChanged {
            config_id,
            value: value.to_owned(),
        })?;
    }
    let mut sandbox = effective(&kit.policy.sandbox, c.records());
    // As a call's: the additional directories are writable roots too.
    sandbox
        .writable_roots
        .extend(kit.policy.rules.roots.iter().cloned());
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
