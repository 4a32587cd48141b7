//! Paths and protected paths: the session's [`Scope`] (the project, the
//! home, directories resolved and listed once per decision), where candor
//! always asks before anything writes ([`protected`], [`protected_write`]),
//! and the words of a Bash line that name a path a deny rule forbids
//! ([`names_denied_path`]).

use std::path::{Path, PathBuf};

use super::rule::{Pattern, Rule, Tok, covers, spelled};
use super::view::View;
use crate::shell::{self, Piece, Runs, Script};
use crate::tools::Tool;

/// What the policy needs to know about the session to judge paths.
pub(super) struct Scope<'a> {
    pub(super) root: &'a Path,
    real_root: PathBuf,
    pub(super) home: Option<&'a Path>,
    /// The session's additional directories, resolved: inside the project
    /// too.
    roots: &'a [PathBuf],
    /// Directories already resolved in this decision (most words of a
    /// line share a few), and directories already listed.
    resolved: std::cell::RefCell<std::collections::HashMap<PathBuf, PathBuf>>,
    listed: std::cell::RefCell<std::collections::HashMap<PathBuf, Vec<(PathBuf, Entry)>>>,
    link_sets:
        std::cell::RefCell<std::collections::HashMap<PathBuf, std::collections::HashSet<PathBuf>>>,
}

impl<'a> Scope<'a> {
    pub(super) fn new(root: &'a Path, home: Option<&'a Path>) -> Scope<'a> {
        Scope {
            root,
            real_root: crate::tools::resolve_links(root),
            home,
            roots: &[],
            resolved: Default::default(),
            listed: Default::default(),
            link_sets: Default::default(),
        }
    }

    /// `tools::resolve_links`, with the parent directory remembered.
    pub(super) fn real(&self, lexical: &Path) -> PathBuf {
        let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) else {
            return crate::tools::resolve_links(lexical);
        };
        let known = self.resolved.borrow().get(parent).cloned();
        let real_parent = match known {
            Some(p) => p,
            None => {
                let p = crate::tools::resolve_links(parent);
                self.resolved
                    .borrow_mut()
                    .insert(parent.to_owned(), p.clone());
                p
            }
        };
        let path = real_parent.join(name);
        // The directory's listing says which of its entries are links.
        let link = self.is_link(&real_parent, &path);
        if link {
            crate::tools::resolve_links(&path)
        } else {
            path
        }
    }

    /// Whether `path`, an entry of `dir`, is a symbolic link (the
    /// directory's links are collected once).
    pub(super) fn is_link(&self, dir: &Path, path: &Path) -> bool {
        if let Some(known) = self.link_sets.borrow().get(dir) {
            return known.contains(path);
        }
        let set: std::collections::HashSet<PathBuf> = self
            .entries(dir)
            .iter()
            .filter(|(_, kind)| *kind == Entry::Link)
            .map(|(p, _)| p.clone())
            .collect();
        let link = set.contains(path);
        self.link_sets.borrow_mut().insert(dir.to_owned(), set);
        link
    }

    /// A directory's entries, listed once (at most 4096).
    pub(super) fn entries(&self, dir: &Path) -> std::cell::Ref<'_, [(PathBuf, Entry)]> {
        if !self.listed.borrow().contains_key(dir) {
            let list: Vec<(PathBuf, Entry)> = std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .take(4096)
                        .map(|e| {
                            let kind = match e.file_type() {
                                Ok(t) if t.is_symlink() => Entry::Link,
                                Ok(t) if t.is_dir() => Entry::Dir,
                                _ => Entry::Other,
                            };
                            (e.path(), kind)
                        })
                        .collect()
                })
                .unwrap_or_default();
            self.listed.borrow_mut().insert(dir.to_owned(), list);
        }
        std::cell::Ref::map(self.listed.borrow(), |m| {
            m.get(dir).map_or(&[][..], |v| v.as_slice())
        })
    }

    /// With the session's additional directories (each resolved).
    pub(super) fn with_roots(mut self, roots: &'a [PathBuf]) -> Scope<'a> {
        self.roots = roots;
        self
    }

    /// Whether `p` is in the project: its working directory or one of
    /// its additional directories.
    pub(super) fn inside(&self, p: &Path) -> bool {
        p.starts_with(self.root)
            || p.starts_with(&self.real_root)
            || self.roots.iter().any(|r| p.starts_with(r))
    }

    /// A path a command names, as written and as it resolves.
    pub(super) fn command_paths(&self, word: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
        let expanded = match (word.strip_prefix("~/"), self.home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ if word == "~" => self.home.map(Path::to_owned).unwrap_or_else(|| word.into()),
            _ => PathBuf::from(word),
        };
        let mut out = Vec::new();
        let bases: Vec<&Path> = if expanded.is_absolute() {
            vec![Path::new("/")]
        } else {
            std::iter::once(self.root)
                .chain(dirs.iter().map(PathBuf::as_path))
                .collect()
        };
        for base in bases {
            let lexical = crate::tools::resolve(base, &expanded.to_string_lossy());
            let real = self.real(&lexical);
            if real != lexical {
                out.push(real);
            }
            // The kernel follows a link before it applies `..` (`q/../x`
            // with `q -> .git/hooks` is `.git/x`): that reading too.
            if expanded
                .components()
                .any(|c| c == std::path::Component::ParentDir)
            {
                let physical = crate::tools::resolve_links(&base.join(&expanded));
                if physical != lexical && !out.contains(&physical) {
                    out.push(physical);
                }
            }
            out.push(lexical);
        }
        out
    }
}

/// What a directory entry is, as its listing tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    Link,
    Dir,
    Other,
}

/// Why a path is protected: candor always asks before anything writes
/// there (in every mode), because what is written there runs code or
/// changes what candor and the user's tools allow.
pub fn protected(path: &Path, home: Option<&Path>) -> Option<&'static str> {
    use crate::sandbox::protected::{DIRS, FILES, HOME_FILES};
    use std::path::Component;
    for c in path.components() {
        if let Component::Normal(name) = c
            && let Some((_, why)) = DIRS.iter().find(|(d, _)| name == *d)
        {
            return Some(why);
        }
    }
    let name = path.file_name()?.to_str()?;
    if let Some((_, why)) = FILES.iter().find(|(f, _)| *f == name) {
        return Some(why);
    }
    if let Some(h) = home
        && path.parent() == Some(h)
        && HOME_FILES.contains(&name)
    {
        return Some("a shell or tool start-up file in the home directory");
    }
    None
}

/// Why a call that writes is about a protected path.
pub(super) fn protected_write(
    tool: Option<Tool>,
    view: &View<'_>,
    scope: &Scope<'_>,
) -> Option<String> {
    match view {
        View::Paths { all, .. } if tool.is_some_and(Tool::edits_files) => {
            all.iter().find_map(|p| {
                protected(p, scope.home).map(|why| {
                    format!(
                        "{} is a protected path ({why}); candor always asks before changing it",
                        p.display()
                    )
                })
            })
        }
        View::Bash { script, line, .. } => {
            let dirs = script_dirs(script, scope);
            // A write whose target is only known at run time, in a line
            // that spells a protected name (`F=.git/hooks/x; echo > $F`).
            let mut dynamic: Vec<&shell::Word> = script
                .all_redirects()
                .into_iter()
                .filter(|r| r.writes && r.target.text().is_none())
                .map(|r| &r.target)
                .collect();
            for c in script.all_commands() {
                if c.basename().is_some_and(|n| WRITERS.contains(&n.as_str())) {
                    dynamic.extend(c.words.iter().skip(1).filter(|w| w.text().is_none()));
                }
            }
            if let Some(w) = dynamic.first()
                && let Some(name) = PROTECTED_NAMES.iter().find(|n| line.contains(*n))
            {
                return Some(format!(
                    "the command writes to `{}`, known only when it runs, and the command names `{name}`, a protected path; candor always asks before changing it",
                    w.display()
                ));
            }
            // `git config` writes `.git/config` (or `~/.gitconfig`), where a
            // setting (`core.fsmonitor`, `core.pager`) runs code later.
            for c in script.all_commands() {
                if c.basename().as_deref() == Some("git") && git_config_write(&c.words[1..]) {
                    return Some(
                        "the command changes git's configuration (`git config`), where settings run commands later; candor always asks before changing it"
                            .to_owned(),
                    );
                }
            }
            // What a target known only at run time could be, on disk
            // (`.gi?/config`).
            for w in &dynamic {
                for p in expand_on_disk(w, scope) {
                    if let Some(why) = protected(&p, scope.home) {
                        return Some(format!(
                            "the command may change `{}`, a protected path ({why}); candor always asks before changing it",
                            p.display()
                        ));
                    }
                }
            }
            // Redirections, and the arguments of commands that write files.
            let mut targets: Vec<String> = script
                .all_redirects()
                .into_iter()
                .filter(|r| r.writes)
                .filter_map(|r| r.target.text())
                .collect();
            for c in script.all_commands() {
                if c.basename().is_some_and(|n| WRITERS.contains(&n.as_str())) {
                    for w in c.words.iter().skip(1).filter_map(shell::Word::text) {
                        // `of=FILE`, `--target-directory=DIR`
                        if let Some((_, value)) = w.split_once('=') {
                            targets.push(value.to_owned());
                        }
                        // `-t.git/hooks`: a short option's attached value.
                        if let Some(value) = w
                            .strip_prefix("-t")
                            .filter(|v| !v.is_empty() && !w.starts_with("--"))
                        {
                            targets.push(value.to_owned());
                        }
                        if !w.starts_with('-') {
                            targets.push(w);
                        }
                    }
                }
            }
            let mut seen = std::collections::HashSet::new();
            targets.retain(|t| seen.insert(t.clone()));
            if targets.len() * dirs.len().max(1) > MAX_PATH_CHECKS {
                return Some(format!(
                    "the command writes to {} files after changing directory {} times, more than candor checks against protected paths",
                    targets.len(),
                    dirs.len()
                ));
            }
            targets
                .into_iter()
                .find_map(|t| {
                    scope.command_paths(&t, &dirs).into_iter().find_map(|p| {
                        protected(&p, scope.home).map(|why| {
                            format!(
                                "the command may change `{t}`, a protected path ({why}); candor always asks before changing it"
                            )
                        })
                    })
                })
        }
        _ => None,
    }
}

/// Whether git's arguments are a `git config` that may write a setting.
pub(super) fn git_config_write(args: &[shell::Word]) -> bool {
    let mut i = 0;
    // Global options before the subcommand; those with a value skip it.
    while let Some(t) = args.get(i).and_then(shell::Word::as_lit) {
        if !t.starts_with('-') {
            break;
        }
        i += if matches!(t, "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace") {
            2
        } else {
            1
        };
    }
    match args.get(i).map(shell::Word::as_lit) {
        Some(Some("config")) => {}
        // A subcommand known only at run time could be `config`.
        Some(None) => return true,
        _ => return false,
    }
    let rest = &args[i + 1..];
    let reads = rest.iter().filter_map(shell::Word::as_lit).any(|t| {
        t.starts_with("--get")
            || t.starts_with("--list")
            || t == "-l"
            || t.starts_with("--show")
            || t == "get"
            || t == "list"
    });
    !reads
}

/// Names of protected places, as they appear in a command line.
pub(super) const PROTECTED_NAMES: [&str; 13] = [
    ".git",
    ".claude",
    ".codex",
    ".candor",
    ".vscode",
    ".idea",
    ".husky",
    ".ssh",
    ".envrc",
    ".mcp.json",
    ".bashrc",
    ".zshrc",
    ".profile",
];

/// Commands that write, create or remove the files they name.
pub(super) const WRITERS: [&str; 18] = [
    "cp", "mv", "tee", "ln", "install", "rsync", "touch", "mkdir", "truncate", "chmod", "chown",
    "patch", "rm", "rmdir", "unlink", "dd", "sed", "perl",
];

/// The static directories a line changes to, resolved.
pub(super) fn script_dirs(script: &Script, scope: &Scope<'_>) -> Vec<PathBuf> {
    // Each `cd` may start from any earlier one (`cd sub && cd ../config`);
    // a target known only at run time is every directory it could name.
    let mut dirs: Vec<PathBuf> = Vec::new();
    for w in script.all_dirs() {
        let found: Vec<PathBuf> = match w.text() {
            Some(d) => scope.command_paths(&d, &dirs),
            None => {
                let mut any = expand_on_disk(w, scope);
                any.extend(scope.home.map(Path::to_owned));
                any
            }
        };
        for d in found {
            if dirs.len() >= MAX_DIRS {
                break;
            }
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs
}

/// How many directories `cd` may lead to before candor stops following.
pub(super) const MAX_DIRS: usize = 32;

/// How many (path, directory) pairs a line's writes are checked over; past
/// that the line asks.
pub(super) const MAX_PATH_CHECKS: usize = 4096;

/// A word of the line (an argument, an option's value or a redirection)
/// that names a path a path deny rule forbids.
pub(super) fn names_denied_path<'r>(
    script: &Script,
    deny: &'r [Rule],
    scope: &Scope<'_>,
) -> Option<(Option<String>, &'r Rule)> {
    let path_rules: Vec<&Rule> = deny
        .iter()
        .filter(|r| {
            r.known.is_some_and(|t| t.path_key().is_some())
                && matches!(r.pattern, Some(Pattern::Path(_)))
        })
        .collect();
    if path_rules.is_empty() {
        return None;
    }
    // Code candor cannot see, or cannot read, may name any path.
    if !script.all_unreadable().is_empty()
        || script
            .all_commands()
            .iter()
            .any(|c| matches!(c.runs, Runs::Unknown { anything: true, .. }))
    {
        return Some((None, path_rules[0]));
    }
    let dirs = script_dirs(script, scope);
    let mut words: Vec<String> = Vec::new();
    for c in script.all_commands() {
        for w in c.words.iter().skip(1).filter_map(shell::Word::text) {
            if let Some((_, value)) = w.split_once('=').filter(|_| w.starts_with('-')) {
                words.push(value.to_owned());
            } else if !w.starts_with('-') {
                words.push(w);
            }
        }
    }
    words.extend(
        script
            .all_redirects()
            .iter()
            .filter_map(|r| r.target.text()),
    );
    // Each distinct word once, in order.
    let mut seen = std::collections::HashSet::new();
    words.retain(|w| !w.is_empty() && seen.insert(w.clone()));
    if words.len() * (dirs.len() + 1) > MAX_PATH_CHECKS {
        return Some((None, path_rules[0]));
    }
    for w in &words {
        for p in scope.command_paths(w, &dirs) {
            if let Some(rule) = path_rules.iter().find(|r| r.matches_path(&p)) {
                return Some((Some(w.clone()), rule));
            }
        }
    }
    // Words known only at run time (`cat .e*`, `cat $F`): the files they
    // could name, as far as the disk shows them.
    let mut dynamic: Vec<&shell::Word> = Vec::new();
    for c in script.all_commands() {
        dynamic.extend(c.words.iter().skip(1).filter(|w| w.text().is_none()));
    }
    dynamic.extend(
        script
            .all_redirects()
            .into_iter()
            .map(|r| &r.target)
            .filter(|w| w.text().is_none()),
    );
    for w in dynamic {
        for p in expand_on_disk(w, scope) {
            if let Some(rule) = path_rules.iter().find(|r| r.matches_path(&p)) {
                return Some((Some(w.display()), rule));
            }
        }
    }
    None
}

/// The existing files a word with unknown parts could name, its unknown
/// parts taken as `*` (at most four directory levels below its known
/// start and 4096 entries looked at).
pub(super) fn expand_on_disk(word: &shell::Word, scope: &Scope<'_>) -> Vec<PathBuf> {
    // The word as a star pattern (a star here may cross `/`: wider than
    // bash's globs, which only makes more words ask).
    let mut toks: Vec<Tok> = Vec::new();
    for p in &word.0 {
        match p {
            Piece::Lit(s) => toks.extend(s.chars().map(Tok::Ch)),
            Piece::Any => toks.push(Tok::Star),
        }
    }
    let text = spelled(&toks);
    let prefix: Vec<Tok> = match (text.strip_prefix("~/"), scope.home) {
        (Some(_), Some(h)) => {
            toks.drain(..2);
            format!("{}/", h.display()).chars().map(Tok::Ch).collect()
        }
        _ if text.starts_with('/') => Vec::new(),
        _ => format!("{}/", scope.root.display())
            .chars()
            .map(Tok::Ch)
            .collect(),
    };
    let pattern: Vec<Tok> = prefix.into_iter().chain(toks).collect();
    let text = spelled(&pattern);
    let matches = |path: &Path| {
        let chars: Vec<Tok> = path.to_string_lossy().chars().map(Tok::Ch).collect();
        covers(&pattern, &chars)
    };
    // The directory before the first unknown part.
    let star = pattern
        .iter()
        .position(|t| *t == Tok::Star)
        .map_or(text.len(), |i| {
            text.char_indices().nth(i).map_or(text.len(), |(b, _)| b)
        });
    let base = PathBuf::from(&text[..text[..star].rfind('/').map_or(0, |i| i + 1)]);
    let levels = text[star..].matches('/').count() + 1;
    let mut found = Vec::new();
    let mut budget = 4096usize;
    let mut frontier = vec![base];
    for _ in 0..levels.min(4) {
        let mut next = Vec::new();
        for dir in frontier {
            for (path, kind) in scope.entries(&dir).iter() {
                if budget == 0 {
                    return found;
                }
                budget -= 1;
                if matches(path) {
                    found.push(path.clone());
                }
                if *kind == Entry::Dir {
                    next.push(path.clone());
                }
            }
        }
        frontier = next;
    }
    found
}
