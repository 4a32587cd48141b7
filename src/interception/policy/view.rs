//! What the rules look at in a call's typed input ([`View`]: the Bash line
//! and its script, the path as it resolves and as written, or a WebFetch's
//! host), and matching deny and ask rules on it (a Bash line: any command
//! it could run, [`DenyLines`]; also for hooks' `if` filters,
//! [`Rule::matches_call`]).

use std::path::{Path, PathBuf};

use super::rule::{Pattern, Rule, Tok, overlaps, render};
use crate::interception::subject::Subject;
use crate::shell::{self, Piece, Runs, Script};

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

/// Whether a Bash deny/ask rule could match some command of the line.
pub(super) fn bash_hit(rule: &Rule, lines: &DenyLines) -> bool {
    let alts = match &rule.pattern {
        None => return true,
        Some(Pattern::Command(alts)) => alts,
        Some(
            Pattern::ExactCommand(_)
            | Pattern::Path(_)
            | Pattern::ExactPath(_)
            | Pattern::Domain(_)
            | Pattern::Agent(_),
        ) => return false,
    };
    lines.anything
        || lines
            .lines
            .iter()
            .any(|l| alts.iter().any(|a| overlaps(a, l)))
}

/// How many words of a wrapper whose options candor cannot follow are
/// searched for the command it runs; a longer one could be any command.
pub(super) const MAX_LOOSE_WORDS: usize = 64;

/// A Bash line as deny and ask rules see it, rendered once for all rules:
/// every command as written, quoted and by basename (and every suffix of a
/// loose wrapper), and whether the line could run any command at all.
pub(super) struct DenyLines {
    lines: Vec<Vec<Tok>>,
    anything: bool,
}

impl DenyLines {
    pub(super) fn of(script: &Script) -> DenyLines {
        let mut lines = Vec::new();
        let mut anything = false;
        for c in script.all_commands() {
            lines.push(render(&c.words, false, false));
            // The other forms differ only when a word needs quotes or the
            // name has a directory.
            if c.words
                .iter()
                .any(|w| w.as_lit().is_some_and(shell::needs_quotes))
            {
                lines.push(render(&c.words, false, true));
            }
            if c.words.first().is_some_and(|w| {
                w.0.iter()
                    .any(|p| matches!(p, Piece::Lit(s) if s.contains('/')))
            }) {
                lines.push(render(&c.words, true, false));
            }
            if c.loose {
                // Any suffix may be the command the wrapper runs; a long
                // one could hide any command past what is worth rendering.
                if c.words.len() > MAX_LOOSE_WORDS {
                    anything = true;
                } else {
                    for i in 1..c.words.len() {
                        lines.push(render(&c.words[i..], true, false));
                    }
                }
            }
            anything |= matches!(c.runs, Runs::Unknown { anything: true, .. });
        }
        lines.sort();
        lines.dedup();
        // Text evaluated as code, or a line the parser cannot read, could
        // hide any command (`$'\x72m'` spells `rm`).
        anything |= script.scripts().iter().any(|s| s.evaluates_text)
            || !script.all_unreadable().is_empty();
        DenyLines { lines, anything }
    }
}
