//! The sandbox's say in a settled call, after the hooks, rules and mode
//! decided (`confine`, called by `session::call` right after `settle`):
//! a Bash call gets the boundary it will run in, settled with its
//! arguments (recorded in `tool/call`, shown on its card and any prompt);
//! a command that asks to leave the sandbox is refused with how the user
//! can lift it (lifting the sandbox comes from the person, never from a
//! permission answer, which some clients give blindly); and a command the
//! rules would only ask about by default runs confined, unasked, when the
//! user chose that (`autoAllowBashIfSandboxed`). `protocol/sandbox.md`,
//! "Permissions".

use std::path::Path;

use super::Settled;
use super::policy::Disposition;
use crate::sandbox::{Boundary, Enforced, Preset, Probe, Sandbox};
use crate::tools::{Tool, ToolInput};

/// Who the sandbox's decisions are by (`decision.by`).
pub const SANDBOX: &str = "sandbox";

/// Where the session's commands run, for [`confine`].
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub cwd: &'a Path,
    /// The session's `TMPDIR`.
    pub tmpdir: &'a Path,
    pub home: Option<&'a Path>,
    /// What this kernel gives.
    pub probe: &'a Probe,
    /// Whether candor's own binary (the launcher) is known.
    pub launcher: bool,
}

/// Gives a Bash call its boundary, and the sandbox's decision (see the
/// module docs). Any other call, and a refused one, is left as it is.
pub fn confine(settled: &mut Settled, sandbox: &Sandbox, place: Place<'_>) {
    if settled.tool != Some(Tool::Bash) || matches!(settled.disposition, Disposition::Deny { .. }) {
        return;
    }
    let Some(ToolInput::Bash(input)) = &settled.input else {
        return;
    };
    let command = input.command.clone();
    let lift = input.dangerously_disable_sandbox == Some(true);
    if lift && sandbox.preset != Preset::FullAccess {
        let reason = escalation(sandbox, place);
        settled.refuse(SANDBOX, reason);
        return;
    }
    let boundary = if let Some(entry) = sandbox.excluded(&command) {
        unconfined(
            sandbox,
            place,
            format!("an excluded command (`{entry}`, sandbox.excludedCommands)"),
        )
    } else if !place.launcher && sandbox.preset != Preset::FullAccess {
        unconfined(
            sandbox,
            place,
            "candor's launcher (its own binary) is not known to this server".into(),
        )
    } else {
        sandbox.boundary(place.cwd, place.tmpdir, place.home, place.probe)
    };
    let confined = boundary.confinement().is_some();
    if !confined
        && sandbox.preset != Preset::FullAccess
        && sandbox.excluded(&command).is_none()
        && sandbox.fail_if_unavailable
    {
        let why = match &boundary.enforced {
            Enforced::Unconfined { reason } => reason.clone(),
            Enforced::Confined(_) => String::new(),
        };
        settled.refuse(
            SANDBOX,
            format!(
                "the sandbox cannot be set up here ({why}), and the settings say to fail rather than run unconfined (failIfUnavailable)"
            ),
        );
        return;
    }
    if confined
        && sandbox.auto_allow
        && matches!(&settled.disposition, Disposition::Ask { by, .. } if by == "default")
    {
        settled.disposition = Disposition::Run { by: SANDBOX.into() };
        settled.grant = None;
    }
    settled.boundary = Some(plain(boundary));
}

/// A boundary that confines nothing, for `reason`.
fn unconfined(sandbox: &Sandbox, place: Place<'_>, reason: String) -> Boundary {
    let mut b = sandbox.boundary(place.cwd, place.tmpdir, place.home, place.probe);
    b.enforced = Enforced::Unconfined { reason };
    b
}

/// What the record says of a command that runs as plain `bash`: no
/// `TMPDIR` of the session's is given to it.
fn plain(mut b: Boundary) -> Boundary {
    if b.confinement().is_none() {
        b.tmpdir = None;
    }
    b
}

/// Why a command asking to run outside the sandbox does not, for the model
/// and the card: what would be lifted, and how the user lifts it.
fn escalation(sandbox: &Sandbox, place: Place<'_>) -> String {
    if !sandbox.allow_unsandboxed {
        return "this session's settings let no command run outside the sandbox (allowUnsandboxedCommands is false). Run the command without dangerouslyDisableSandbox, or tell the user what it needs and why.".into();
    }
    let b = sandbox.boundary(place.cwd, place.tmpdir, place.home, place.probe);
    let mut lifted = vec![match b.preset {
        Preset::ReadOnly => "every write outside $TMPDIR".to_owned(),
        _ => {
            "writes outside the writable roots and to protected paths (.git, .claude, …)".to_owned()
        }
    }];
    if !matches!(b.network, crate::sandbox::Network::On) {
        lifted.push("the network".into());
    }
    lifted.push("the ending of the processes it starts".into());
    format!(
        "running outside the sandbox would lift {} ({}), and only the user can lift it, not a permission answer. Ask the user: they can type `/sandbox off` (this session only; `/sandbox on` restores it), or `/sandbox network on` if it only needs the network, and then you run the command again without dangerouslyDisableSandbox; or set sandbox.enabled to false in their settings.",
        lifted.join(", "),
        sandbox.describe()
    )
}
