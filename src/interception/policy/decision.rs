//! The decision: hooks, rules and the mode put together on a call's typed
//! input, in a fixed order ([`decide`]).
//!
//! Rules use Claude Code's syntax: a bare tool name (`Bash`, `Read`) matches
//! every call of the tool; `Tool(pattern)` narrows it. The full decision
//! procedure, with a conformance table run by a test, is
//! `protocol/permissions.md`; in short:
//!
//! * `Bash(…)` rules are matched against each simple command the line can
//!   run, as [`crate::shell`] reads it (pipelines, lists, subshells,
//!   substitutions, `bash -c` strings, commands behind wrappers; names by
//!   basename too, quotes removed). `npm run test:*` is the legacy prefix
//!   form, `git *` a glob (`*` matches anything), anything else exact. A
//!   deny or ask rule matches if it could match any of those commands,
//!   including what candor cannot see (a dynamic name, `eval "$X"`, a
//!   line it cannot parse); an allow rule runs a line only if it covers
//!   every command and nothing in the line is opaque, assigns `PATH`-like
//!   variables or writes a file no Write/Edit allow rule allows.
//! * Path rules (`Read(…)`, `Edit(…)`, `Write(…)`, `Glob(…)`, `Grep(…)`)
//!   are globs (`*` within a directory, `**` across): `//abs` is absolute,
//!   `/p` is relative to the settings' project, `~/p` to the home
//!   directory, `p` or `./p` to the working directory; a pattern with no
//!   `/` matches at any depth (gitignore's rule). `Edit` rules cover every
//!   tool that edits files; `Read` rules also govern Glob and Grep. A path
//!   is judged as written and as it resolves (symlinks followed): the
//!   stricter answer wins.
//!
//! [`decide`] puts hooks, rules and the mode together in a fixed order
//! (documented in `protocol/hooks.md`): a rewrite can never take a call
//! past a deny rule, because rules see the rewritten arguments.

use std::path::Path;

use super::bash::{bash_cover, risky_variable};
use super::paths::{Scope, names_denied_path, protected_write};
use super::rule::{Pattern, Rule, Rules};
use super::view::{View, any_match, view};
use crate::event_log::Verdict;
use crate::interception::subject::Subject;
use crate::mode::Mode;
use crate::shell::Script;
use crate::tools::Tool;

/// What happens to a call after hooks, rules and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Runs without asking.
    Run { by: String },
    /// Asks the user.
    Ask { by: String, reason: Option<String> },
    /// Does not run.
    Deny { by: String, reason: String },
}

/// What the hooks concluded (see [`crate::interception::settle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookVerdict {
    pub verdict: Verdict,
    pub by: Option<String>,
    pub reason: Option<String>,
}

/// Decides a call, in this order: a denying hook; a deny rule; plan mode
/// for a tool that changes things; a protected path; a Bash line naming a
/// path a deny rule forbids; an ask rule; an asking hook; a deny rule that
/// cannot be read; bypassPermissions; an allowing hook; an allow rule or a
/// session grant; then the tool's default (reads inside the project run,
/// edits inside the project run in acceptEdits, everything else asks).
pub fn decide(
    call: Subject<'_>,
    hooks: &HookVerdict,
    mode: Mode,
    rules: &Rules,
    grants: &[Rule],
    root: &Path,
) -> Disposition {
    let known = call.input.tool();
    let d = Deciding {
        tool: call.name,
        known,
        read_only: call.mcp.map_or_else(
            || known.is_some_and(Tool::is_read_only),
            |m| m.reading.runs_unasked(),
        ),
        mcp: call.mcp.is_some(),
        reading: call.mcp.map(|m| m.reading.why.as_str()),
        also: call.mcp_name().filter(|n| n != call.name),
        view: view(&call, root),
        scope: Scope::new(root, rules.home.as_deref()).with_roots(&rules.roots),
        hooks,
        mode,
        rules,
        grants,
    };
    d.denied()
        .or_else(|| d.asked())
        .or_else(|| d.let_through())
        .unwrap_or_else(|| match d.allowed() {
            Ok(run) => run,
            Err(partial) => d.by_default(partial),
        })
}

/// One call being decided, and what it is decided with.
pub(super) struct Deciding<'a> {
    tool: &'a str,
    known: Option<Tool>,
    read_only: bool,
    /// An MCP tool (it says itself whether it changes things).
    mcp: bool,
    /// Why candor reads the MCP tool as it does.
    reading: Option<&'a str>,
    /// The MCP tool's unsanitised name, when it differs from `tool`.
    also: Option<String>,
    view: View<'a>,
    scope: Scope<'a>,
    hooks: &'a HookVerdict,
    mode: Mode,
    rules: &'a Rules,
    grants: &'a [Rule],
}

impl Deciding<'_> {
    /// `: <why candor reads the MCP tool so>`, or nothing.
    pub(super) fn reading_said(&self) -> String {
        self.reading
            .map(|r| format!("; this one: {r}"))
            .unwrap_or_default()
    }

    /// `hook:<id>` of the hook that decided.
    pub(super) fn hook(&self) -> String {
        format!("hook:{}", self.hooks.by.clone().unwrap_or_default())
    }

    /// A denying hook, a deny rule, or plan mode for a tool that changes
    /// things.
    pub(super) fn denied(&self) -> Option<Disposition> {
        if self.hooks.verdict == Verdict::Deny {
            return Some(Disposition::Deny {
                by: self.hook(),
                reason: self
                    .hooks
                    .reason
                    .clone()
                    .unwrap_or_else(|| "a hook blocked this call".into()),
            });
        }
        if let Some(rule) = any_match(&self.rules.deny, self.tool, &self.view).or_else(|| {
            self.also
                .as_deref()
                .and_then(|n| any_match(&self.rules.deny, n, &self.view))
        }) {
            let why = match &self.view {
                View::Bash { script, .. } if !script.all_unreadable().is_empty() => {
                    " (candor cannot read the whole command, and the rule's command may be in it)"
                }
                View::Bash { script, .. } if !script.all_opaque().is_empty() => {
                    " (part of the command is only known when it runs, and could be what the rule denies)"
                }
                _ => "",
            };
            return Some(Disposition::Deny {
                by: format!("rule:{rule}"),
                reason: format!("the permission rule {rule} denies this call{why}"),
            });
        }
        // Plan mode asks for an MCP tool not marked read-only (its server
        // may have marked it wrong either way), and refuses candor's own.
        (self.mode == Mode::Plan && !self.read_only && !self.mcp).then(|| Disposition::Deny {
            by: "mode:plan".into(),
            reason: "plan mode allows only tools that change nothing".into(),
        })
    }

    /// A protected path, a Bash line naming a path a deny rule forbids, an
    /// ask rule, an asking hook, or a deny rule that cannot be read.
    pub(super) fn asked(&self) -> Option<Disposition> {
        let ask = |by: String, reason: Option<String>| Some(Disposition::Ask { by, reason });
        if self.mode == Mode::Plan && !self.read_only && self.mcp {
            return ask(
                "mode:plan".into(),
                Some(format!(
                    "plan mode asks before an MCP tool candor does not read as read-only and closed-world{}",
                    self.reading_said()
                )),
            );
        }
        if let Some(reason) = protected_write(self.known, &self.view, &self.scope) {
            return ask("protected".into(), Some(reason));
        }
        if let View::Bash { script, .. } = &self.view
            && let Some((word, rule)) = names_denied_path(script, &self.rules.deny, &self.scope)
        {
            let reason = match word {
                None => format!(
                    "the command runs code candor cannot see, which may name a path the permission rule {rule} denies"
                ),
                Some(word) => {
                    format!("the command names `{word}`, which the permission rule {rule} denies")
                }
            };
            return ask(format!("rule:{rule}"), Some(reason));
        }
        if let Some(rule) = any_match(&self.rules.ask, self.tool, &self.view).or_else(|| {
            self.also
                .as_deref()
                .and_then(|n| any_match(&self.rules.ask, n, &self.view))
        }) {
            return ask(
                format!("rule:{rule}"),
                Some(format!("the permission rule {rule} asks for this call")),
            );
        }
        if self.hooks.verdict == Verdict::Ask {
            return ask(self.hook(), self.hooks.reason.clone());
        }
        let (tool, known) = (self.tool, self.known);
        let family = known.and_then(Tool::ruled_with).map(Tool::name);
        let (_, text) = self
            .rules
            .broken_deny
            .iter()
            .find(|(t, _)| t == "*" || t == tool || Some(t.as_str()) == family)?;
        ask(
            format!("rule:{text}"),
            Some(format!(
                "the deny rule {text} cannot be read, so candor asks before every call it might have denied"
            )),
        )
    }

    /// bypassPermissions, or an allowing hook.
    pub(super) fn let_through(&self) -> Option<Disposition> {
        if self.mode == Mode::BypassPermissions {
            return Some(Disposition::Run {
                by: "mode:bypassPermissions".into(),
            });
        }
        (self.hooks.verdict == Verdict::Allow).then(|| Disposition::Run { by: self.hook() })
    }

    /// An allow rule or a session grant that covers the call; else why a
    /// rule covered only part of a command, if one did.
    pub(super) fn allowed(&self) -> Result<Disposition, Option<String>> {
        let run = |by: String| Ok(Disposition::Run { by });
        let tool = self.tool;
        match &self.view {
            View::Bash { script, line, .. } => self.allowed_command(script, line),
            View::Paths { targets, .. } => {
                let covers = |r: &&Rule| {
                    r.names(tool)
                        && !targets.is_empty()
                        && targets.iter().all(|p| r.matches_path(p))
                };
                if let Some(rule) = self.rules.allow.iter().find(covers) {
                    return run(format!("rule:{rule}"));
                }
                match self.grants.iter().find(covers) {
                    Some(rule) => run(format!("grant:{rule}")),
                    None => Err(None),
                }
            }
            View::Web { host } => {
                let covers = |r: &&Rule| r.names(tool) && r.matches_domain(host);
                if let Some(rule) = self.rules.allow.iter().find(covers) {
                    return run(format!("rule:{rule}"));
                }
                match self.grants.iter().find(covers) {
                    Some(rule) => run(format!("grant:{rule}")),
                    None => Err(None),
                }
            }
            View::Other(_) => match self
                .rules
                .allow
                .iter()
                .find(|r| r.names(tool) && r.pattern.is_none())
            {
                Some(rule) => run(format!("rule:{rule}")),
                None => match self
                    .grants
                    .iter()
                    .find(|r| r.names(tool) && r.pattern.is_none())
                {
                    Some(rule) => run(format!("grant:{rule}")),
                    None => Err(None),
                },
            },
        }
    }

    /// [`allowed`](Self::allowed) for a Bash line: allow rules that cover
    /// every command in it, or a grant of exactly this line.
    pub(super) fn allowed_command(
        &self,
        script: &Script,
        line: &str,
    ) -> Result<Disposition, Option<String>> {
        let cov = bash_cover(&self.rules.allow, script, &self.scope);
        if cov.gaps.is_empty()
            && let Some(rule) = cov.by
        {
            return Ok(Disposition::Run {
                by: format!("rule:{rule}"),
            });
        }
        if let Some(g) = self.grants.iter().find(|g| {
            g.for_commands() && matches!(&g.pattern, Some(Pattern::ExactCommand(c)) if c == line)
        }) && script.all_opaque().is_empty()
            && !script.all_assigned().iter().any(|n| risky_variable(n))
        {
            return Ok(Disposition::Run {
                by: format!("grant:{g}"),
            });
        }
        if let Some(rule) = cov.by {
            Err(Some(format!(
                "the permission rule {rule} covers part of this command, but it also {}",
                cov.gaps.join("; it also ")
            )))
        } else {
            Err(cov
                .gaps
                .iter()
                .find(|g| g.starts_with("candor cannot read"))
                .map(|gap| format!("commands ask before they run, and {gap}")))
        }
    }

    /// The tool's default: reads inside the project run, edits inside the
    /// project run in acceptEdits, everything else asks (`partial`: why a
    /// rule covered only part of the command).
    pub(super) fn by_default(&self, partial: Option<String>) -> Disposition {
        // Tools without paths (a plan, a background shell's output) are
        // inside by definition; a path is inside only if it is as written
        // and as it resolves.
        let scope = &self.scope;
        let (inside, escapes) = match &self.view {
            View::Paths { all, targets } => (
                all.iter().all(|p| scope.inside(p)),
                targets.iter().any(|p| !scope.inside(p)) && all.iter().any(|p| scope.inside(p)),
            ),
            _ => (true, false),
        };
        let edits = self.known.is_some_and(Tool::edits_files);
        // A domain no rule allows asks: the page leaves nothing here, but
        // the request says what the model asks for to whoever serves it.
        if let View::Web { host } = &self.view {
            return Disposition::Ask {
                by: "default".into(),
                reason: Some(format!(
                    "WebFetch asks before reaching a domain no rule allows: {host} (a rule such as WebFetch(domain:{host}), or \"Always allow\", lets it run)"
                )),
            };
        }
        if self.read_only && inside {
            return Disposition::Run {
                by: "default".into(),
            };
        }
        if self.mode == Mode::AcceptEdits && edits && inside {
            return Disposition::Run {
                by: "mode:acceptEdits".into(),
            };
        }
        let reason = if let Some(p) = partial {
            p
        } else if escapes {
            "the path leads outside the project through a symbolic link".to_owned()
        } else if !inside {
            "the path is outside the project".to_owned()
        } else if edits {
            "edits ask before they change a file (acceptEdits mode lets edits inside the project run)"
                .to_owned()
        } else if self.mcp {
            format!(
                "MCP tools ask before they run unless a server you configured marks them read-only and closed-world{} (an allow rule such as {}, or \"Always allow\", lets it run)",
                self.reading_said(),
                self.tool
            )
        } else {
            "commands ask before they run (an allow rule, or a session grant from \"Always allow\", lets them run)"
                .to_owned()
        };
        Disposition::Ask {
            by: "default".into(),
            reason: Some(reason),
        }
    }
}
