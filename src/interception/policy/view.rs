//! What the rules look at in a call's typed input ([`View`]: the Bash line
//! and its script, the path as it resolves and as written, or a WebFetch's
//! host), and matching
//! deny and ask rules on it (also for hooks' `if` filters,
//! [`Rule::matches_call`]).

use std::path::{Path, PathBuf};

use super::bash::{DenyLines, bash_hit};
use super::rule::Rule;
use super::subject::Subject;
use crate::shell::Script;

/// What rules look at in a call.
pub(super) enum View<'a> {
    /// A Bash line, read (once, with its input), and rendered for deny
    /// and ask rules (when one is tried).
    Bash {
        script: &'a Script,
        lines: std::cell::OnceCell<DenyLines>,
        line: &'a str,
    },
    /// A file tool's path: `targets` as it resolves (what the tool will
    /// open), `all` with the spellings it was given as well.
    Paths {
        targets: Vec<PathBuf>,
        all: Vec<PathBuf>,
    },
    /// A WebFetch's host (lower-cased, without brackets or a final dot).
    Web { host: String },
    /// A tool without a command or path (for an `Agent` call, the
    /// subagent type it starts, which `Agent(type)` rules name).
    Other(Option<&'a str>),
}

/// What the rules look at in the typed input: the Bash line and its
/// script, or the path (as it resolves, and as written).
pub(super) fn view<'a>(call: &Subject<'a>, root: &Path) -> View<'a> {
    if let Some(bash) = call.input.command() {
        return View::Bash {
            script: bash.script(),
            lines: std::cell::OnceCell::new(),
            line: bash.command.trim(),
        };
    }
    if let Some(fetch) = call.input.web_fetch() {
        return View::Web {
            host: fetch.domain(),
        };
    }
    match call.input.tool() {
        Some(tool) if tool.path_key().is_some() => {
            let targets = match call.input.target() {
                Some(p) => vec![p.to_owned()],
                None if tool.searches() => vec![root.to_owned()],
                None => Vec::new(),
            };
            let mut all = targets.clone();
            all.extend(
                call.spelled
                    .filter(|s| !targets.iter().any(|t| t == s))
                    .map(Path::to_owned),
            );
            View::Paths { targets, all }
        }
        _ => View::Other(call.input.delegation().map(|a| a.subagent_type.as_str())),
    }
}

/// A deny or ask rule of `rules` that matches the call.
pub(super) fn any_match<'r>(rules: &'r [Rule], tool: &str, view: &View<'_>) -> Option<&'r Rule> {
    rules.iter().find(|r| {
        r.names(tool)
            && match view {
                _ if r.pattern.is_none() => true,
                View::Bash { script, lines, .. } => {
                    bash_hit(r, lines.get_or_init(|| DenyLines::of(script)))
                }
                View::Paths { all, .. } => all.iter().any(|p| r.matches_path(p)),
                View::Web { host } => r.matches_domain(host),
                View::Other(kind) => r.matches_agent(*kind),
            }
    })
}

impl Rule {
    /// Whether this rule matches the call as a deny or ask rule would (any
    /// command of a Bash line could match; a path as written or resolved).
    /// Claude Code's `if` filter on hooks uses this; a line the parser
    /// cannot read matches (the hook runs, as Claude Code fails open).
    pub fn matches_call(&self, call: &Subject<'_>, root: &Path) -> bool {
        if !self.names(call.name) {
            return false;
        }
        if self.pattern.is_none() {
            return true;
        }
        match view(call, root) {
            View::Bash { script, lines, .. } => {
                bash_hit(self, lines.get_or_init(|| DenyLines::of(script)))
            }
            View::Paths { all, .. } => all.iter().any(|p| self.matches_path(p)),
            View::Web { host } => self.matches_domain(&host),
            View::Other(kind) => self.matches_agent(kind),
        }
    }
}
