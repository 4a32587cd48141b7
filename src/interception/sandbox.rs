//! The sandbox's say in a settled call, after the hooks, rules and mode
//! decided (`confine`, called by `session::call` right after `settle`):
//! a Bash call gets the boundary it will run in, settled with its
//! arguments (recorded in `tool/call`, shown on its card and any prompt);
//! a command that asks to leave the sandbox is refused with how the user
//! can lift it (lifting the sandbox comes from the person, never from a
//! permission answer, which some clients give blindly), or, where the
//! editor shows forms, asks the person in one (`session::call`); and a
//! command the
//! rules would only ask about by default runs confined, unasked, when the
//! user chose that (`autoAllowBashIfSandboxed`). `protocol/sandbox.md`,
//! "Permissions".

use std::path::Path;

use super::Settled;
use super::policy::{Disposition, risky_variable};
use crate::sandbox::{Boundary, Enforced, Preset, Probe, Sandbox};
use crate::shell::{Runs, Script, WrapperKind};
use crate::tools::{Tool, ToolInput};

/// Who the sandbox's decisions are by (`decision.by`).
pub const SANDBOX: &str = "sandbox";

// The sandbox's own question about a settled call, beside the sandbox's
// other code (`mod.rs`, which holds `Settled`, imports nothing of this
// file's).
impl Settled {
    /// Whether the call asks to leave the sandbox and only the person's
    /// answer in a form may let it ([`confine`]): it is never asked
    /// through a permission request.
    pub fn lifts_sandbox(&self) -> bool {
        matches!(&self.disposition, Disposition::Ask { by, .. } if by == SANDBOX)
    }
}

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
    /// Whether the editor shows forms (`elicitation.form`): then a
    /// command asking to leave the sandbox may be lifted by the person's
    /// answer in one (a form is filled in by the person; a permission
    /// request may be answered by the editor itself).
    pub forms: bool,
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
    let lift = input.dangerously_disable_sandbox == Some(true);
    if lift && sandbox.preset != Preset::FullAccess {
        if place.forms && sandbox.allow_unsandboxed {
            // Only the person's answer in a form lifts it, for this
            // command (`session::call`); never a permission answer.
            let reason = format!(
                "the command asks to run outside the sandbox: that would lift {}; it runs only if you say so in the form, for this command only",
                lifted(sandbox, place)
            );
            settled.disposition = Disposition::Ask {
                by: SANDBOX.into(),
                reason: Some(reason),
            };
            settled.grant = None;
            settled.boundary = Some(plain(unconfined(
                sandbox,
                place,
                "it asked to run outside the sandbox (dangerouslyDisableSandbox), and runs only if you lift it in the form, for this command".into(),
            )));
            return;
        }
        let reason = escalation(sandbox, place);
        settled.refuse(SANDBOX, reason);
        return;
    }
    let excluded = excluded(sandbox, input.script());
    let boundary = if let Some(entries) = &excluded {
        unconfined(
            sandbox,
            place,
            format!("an excluded command ({entries}, sandbox.excludedCommands)"),
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
        && excluded.is_none()
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

/// The excluded-commands entries a line runs under, when it runs outside
/// the sandbox (`` `docker` ``, for the card): only when *every* command
/// the line can run is one the user excluded, as the shell reads the line
/// (`shell::Script`), never on its spelling. So `docker ps; rm -rf ~/x`
/// stays confined (`rm` is not excluded), while `FOO=1 docker ps`, `env
/// docker ps`, `d''ocker ps` and `bash -c 'docker ps'` run docker alone
/// and are excluded. Nothing is excluded when the line has what candor
/// cannot read (an unreadable part, a dynamic command name, `eval "$X"`,
/// text evaluated as code), assigns a variable that changes what runs
/// (`PATH=./evil:$PATH docker`), or redirects output to a file (the
/// shell's write, not the excluded command's). A command behind `sudo` is
/// not excluded; behind a driver (`xargs`, `find -exec`) both must be.
fn excluded(sandbox: &Sandbox, script: &Script) -> Option<String> {
    if sandbox.excluded_commands.is_empty()
        || script.commands.is_empty()
        || !script.all_opaque().is_empty()
        || !script.all_unreadable().is_empty()
        || script.scripts().iter().any(|s| s.evaluates_text)
        || script.all_assigned().into_iter().any(risky_variable)
        || script.all_redirects().iter().any(|r| r.writes)
    {
        return None;
    }
    let mut entries = Vec::new();
    if !script
        .commands
        .iter()
        .all(|c| excluded_command(sandbox, c, &mut entries))
    {
        return None;
    }
    let mut named: Vec<String> = Vec::new();
    for entry in entries {
        let entry = format!("`{entry}`");
        if !named.contains(&entry) {
            named.push(entry);
        }
    }
    Some(named.join(", "))
}

/// Whether what `command` runs is excluded (see [`excluded`]), the
/// entries that say so added to `entries`.
fn excluded_command<'s>(
    sandbox: &'s Sandbox,
    command: &crate::shell::Command,
    entries: &mut Vec<&'s str>,
) -> bool {
    if command.loose {
        return false;
    }
    let itself = || -> Option<&'s str> {
        let words: Option<Vec<String>> = command.words.iter().map(|w| w.text()).collect();
        sandbox.excluded(&words?)
    };
    match (&command.runs, command.wrapper) {
        (Runs::Itself, _) => itself().map(|e| entries.push(e)).is_some(),
        (Runs::Command(inner), Some(WrapperKind::Transparent)) => {
            excluded_command(sandbox, inner, entries)
        }
        (Runs::Command(inner), Some(WrapperKind::Driver)) => {
            itself().map(|e| entries.push(e)).is_some() && excluded_command(sandbox, inner, entries)
        }
        (Runs::Script(inner), Some(WrapperKind::Interpreter)) => {
            !inner.commands.is_empty()
                && inner
                    .commands
                    .iter()
                    .all(|c| excluded_command(sandbox, c, entries))
        }
        _ => false,
    }
}

/// `sandbox` as the session's rules shape it: the session's additional
/// directories are writable as its directory is (in the presets that
/// write), and what the user's Read deny rules name is read-denied (what
/// they reach that a boundary cannot hold is said on the card), so no
/// command reads what `Read` may not.
pub fn for_rules(mut sandbox: Sandbox, rules: &super::policy::Rules) -> Sandbox {
    sandbox.writable_roots.extend(rules.roots.iter().cloned());
    for rule in &rules.deny {
        let (paths, not_held) = rule.read_denied_paths();
        sandbox.deny_reads(paths, not_held);
    }
    sandbox
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
    format!(
        "running outside the sandbox would lift {} ({}), and only the user can lift it, not a permission answer. Ask the user: they can type `/sandbox off` (this session only; `/sandbox on` restores it), or `/sandbox network on` if it only needs the network, and then you run the command again without dangerouslyDisableSandbox; or set sandbox.enabled to false in their settings.",
        lifted(sandbox, place),
        sandbox.describe()
    )
}

/// What running outside the sandbox would lift, in words.
fn lifted(sandbox: &Sandbox, place: Place<'_>) -> String {
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
    lifted.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excluding(entries: &[&str]) -> Sandbox {
        Sandbox {
            excluded_commands: entries.iter().map(|e| (*e).to_owned()).collect(),
            ..Sandbox::default()
        }
    }

    fn judged(sandbox: &Sandbox, line: &str) -> Option<String> {
        excluded(sandbox, &crate::shell::parse(line))
    }

    #[test]
    fn a_line_runs_outside_only_when_every_command_it_runs_is_excluded() {
        let s = excluding(&["docker", "git push"]);
        // What an attacker would try: an excluded first word, and more.
        for line in [
            "docker ps; rm -rf ~/x",
            "docker ps && python3 -c 'import os'",
            "docker ps | sh",
            "docker $(rm -rf ~/x)",
            "echo `touch ~/x` && docker ps",
            "PATH=./evil:$PATH docker ps",
            "LD_PRELOAD=./x.so docker ps",
            "docker ps > ~/.bashrc",
            "eval \"$X\"; docker ps",
            "$CMD ps",
            "sudo docker ps",
            "docker() { rm -rf ~/x; }; docker",
            "./docker ps",
            "/tmp/docker ps",
            "dockerd",
            "git status",
            "docker ps (",
            "bash -c 'docker ps; rm -rf ~/x'",
            "xargs docker rm",
        ] {
            assert_eq!(judged(&s, line), None, "`{line}` would run unconfined");
        }
        // The controls: lines that run only excluded commands.
        for (line, entries) in [
            ("docker ps", "`docker`"),
            ("FOO=1 docker ps", "`docker`"),
            ("env FOO=1 docker ps", "`docker`"),
            ("timeout 5 docker ps -a", "`docker`"),
            ("d''ocker ps", "`docker`"),
            ("\"docker\" ps", "`docker`"),
            ("bash -c 'docker ps'", "`docker`"),
            ("docker ps && docker images 2>/dev/null", "`docker`"),
            ("docker ps; git push origin main", "`docker`, `git push`"),
        ] {
            assert_eq!(judged(&s, line).as_deref(), Some(entries), "`{line}`");
        }
        assert_eq!(judged(&excluding(&[]), "docker ps"), None);
    }
}
