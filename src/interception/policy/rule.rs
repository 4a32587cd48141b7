//! The rule grammar: Claude Code's `Tool` and `Tool(pattern)` read into a
//! [`Rule`] (a Bash rule's command patterns, a path rule's globs anchored
//! at each spelling of its base, a session grant's exact line or path), the
//! configured [`Rules`], the Read deny rules the search tools ask
//! ([`ReadDenies`]), and the star-pattern matching both kinds share. A
//! WebFetch rule names a domain (`WebFetch(domain:example.com)`, or
//! `domain:*.example.com` for its subdomains, as the sandbox's network
//! allowlist reads them).

use std::fmt;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::shell::{self, Piece};
use crate::tools::Tool;

/// One permission rule.
#[derive(Clone)]
pub struct Rule {
    pub(super) text: String,
    pub(super) tool: String,
    /// The tool `tool` names, when it is one of candor's.
    pub(super) known: Option<Tool>,
    pub(super) pattern: Option<Pattern>,
}

#[derive(Clone)]
pub(super) enum Pattern {
    /// A Bash rule: star patterns, any of which may match a command.
    Command(Vec<Vec<Tok>>),
    /// A path rule: the glob anchored at each spelling of its base.
    Path(Vec<PathGlob>),
    /// A grant: exactly this command line.
    ExactCommand(String),
    /// A grant: exactly this path.
    ExactPath(PathBuf),
    /// An `Agent(type)` rule: the subagent types it names.
    Agent(Vec<String>),
    /// A WebFetch rule or grant: `example.com` is that host, `*.example.com`
    /// its subdomains (`sandbox::proxy::Allowlist`'s reading), `*` every
    /// host.
    Domain(crate::sandbox::proxy::Allowlist),
}

/// A path rule's glob, with the literal text it must start and end with
/// (checked first: most paths a command names fail there, without the
/// glob's automaton).
#[derive(Clone)]
pub(super) struct PathGlob {
    matcher: GlobMatcher,
    /// The glob as written, anchored.
    text: String,
    prefix: String,
    suffix: String,
}

impl PathGlob {
    pub(super) fn new(text: &str, matcher: GlobMatcher) -> PathGlob {
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

    pub(super) fn is_match(&self, path: &Path) -> bool {
        let text = path.to_string_lossy();
        text.starts_with(&self.prefix)
            && text.ends_with(&self.suffix)
            && self.matcher.is_match(path)
    }
}

/// A character of a rendered command or command pattern; `Star` is `*` in
/// a pattern and a part known only at run time in a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Tok {
    Ch(char),
    Star,
}

/// A pattern's tokens as text, `*` for a star.
pub(super) fn spelled(toks: &[Tok]) -> String {
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
        let known = Tool::from_name(tool);
        let pattern = match pattern {
            None | Some("") | Some("*") => None,
            Some(p) if known.is_some_and(Tool::runs_commands) => {
                Some(Pattern::Command(command_pattern(p)))
            }
            Some(p) if known == Some(Tool::Agent) => Some(Pattern::Agent(
                p.split(',').map(|t| t.trim().to_owned()).collect(),
            )),
            Some(p) if known.is_some_and(Tool::reaches_web) => domain_pattern(text, p)?,
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
            known,
            pattern,
        })
    }

    /// Reads back a session grant ("allow always"): `Bash(<exact line>)` or
    /// `Tool(<exact absolute path>)`, never a pattern.
    pub fn grant(text: &str) -> Result<Rule, String> {
        let text = text.trim();
        let (tool, inner) = split_rule(text)?;
        let inner = inner.ok_or_else(|| format!("grant {text:?} names nothing"))?;
        let known = Tool::from_name(tool);
        let pattern = if known.is_some_and(Tool::runs_commands) {
            Pattern::ExactCommand(inner.trim().to_owned())
        } else if known.is_some_and(Tool::reaches_web) {
            match domain_pattern(text, inner)? {
                Some(p @ Pattern::Domain(_)) if !inner.contains('*') => p,
                _ => return Err(format!("grant {text:?} names no one domain")),
            }
        } else {
            Pattern::ExactPath(PathBuf::from(inner))
        };
        Ok(Rule {
            text: text.to_owned(),
            tool: tool.to_owned(),
            known,
            pattern: Some(pattern),
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the rule names this tool (`Edit` names every editing tool;
    /// `Read` names the search tools too: [`Tool::ruled_with`]).
    pub(super) fn names(&self, tool: &str) -> bool {
        self.tool == tool
            // `Task` is `Agent`'s older name: a rule on either names both.
            || (self.known == Some(Tool::Agent) && Tool::from_name(tool) == Some(Tool::Agent))
            || self
                .known
                .is_some_and(|k| Tool::from_name(tool).and_then(Tool::ruled_with) == Some(k))
            || mcp_server_rule_names(&self.tool, tool)
    }

    /// Whether this is a rule (or grant) for the tool that runs command
    /// lines.
    pub(super) fn for_commands(&self) -> bool {
        self.known.is_some_and(Tool::runs_commands)
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

    /// Whether an `Agent(type)` rule names the subagent type a call starts.
    pub(super) fn matches_agent(&self, kind: Option<&str>) -> bool {
        match (&self.pattern, kind) {
            (Some(Pattern::Agent(types)), Some(kind)) => types.iter().any(|t| t == kind),
            _ => false,
        }
    }

    /// Whether a WebFetch rule (or grant) names this host.
    pub(super) fn matches_domain(&self, host: &str) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Domain(list)) => list.allows(host).is_some(),
            Some(_) => false,
        }
    }

    /// Whether a path rule (or path grant) matches a path.
    pub(super) fn matches_path(&self, path: &Path) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Path(globs)) => globs.iter().any(|g| g.is_match(path)),
            Some(Pattern::ExactPath(p)) => p == path,
            Some(
                Pattern::Command(_)
                | Pattern::ExactCommand(_)
                | Pattern::Domain(_)
                | Pattern::Agent(_),
            ) => false,
        }
    }
}

/// A WebFetch rule's pattern: `domain:example.com`, `domain:*.example.com`
/// or `domain:*` (every domain: no pattern). Claude Code's form; anything
/// else is refused, so a deny rule that cannot be read fails closed.
fn domain_pattern(text: &str, p: &str) -> Result<Option<Pattern>, String> {
    let Some(domain) = p.trim().strip_prefix("domain:") else {
        return Err(format!(
            "rule {text:?}: a WebFetch rule names a domain, as WebFetch(domain:example.com)"
        ));
    };
    let domain = domain.trim();
    if domain == "*" {
        return Ok(None);
    }
    let body = domain.strip_prefix("*.").unwrap_or(domain);
    let ok = !body.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
    if !ok {
        return Err(format!(
            "rule {text:?}: {domain:?} is not a domain (example.com, or *.example.com for its subdomains)"
        ));
    }
    Ok(Some(Pattern::Domain(
        crate::sandbox::proxy::Allowlist::new(&[domain]),
    )))
}

/// Whether an MCP rule naming a whole server (`mcp__github` or
/// `mcp__github__*`, as Claude Code reads them) names `tool`
/// (`mcp__github__create_issue`).
pub(super) fn mcp_server_rule_names(rule: &str, tool: &str) -> bool {
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

pub(super) fn split_rule(text: &str) -> Result<(&str, Option<&str>), String> {
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
pub(super) fn anchor(pattern: &str, a: Anchors<'_>) -> Vec<PathBuf> {
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
pub(super) fn command_pattern(p: &str) -> Vec<Vec<Tok>> {
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
pub(super) const STAR: char = '\u{E000}';

pub(super) fn glob_tokens(p: &str) -> Vec<Tok> {
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
pub(super) fn render(words: &[shell::Word], basename: bool, quoted: bool) -> Vec<Tok> {
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
pub(super) fn covers(p: &[Tok], t: &[Tok]) -> bool {
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
pub(super) fn overlaps(p: &[Tok], t: &[Tok]) -> bool {
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
    /// The session's additional directories (`crate::roots`), each as it
    /// resolves: paths in them are inside the project, as in its
    /// working directory.
    pub roots: Vec<PathBuf>,
}

impl Rules {
    /// Records a deny rule that cannot be read: it fails closed.
    pub fn deny_unreadable(&mut self, text: &str) {
        let tool = Rule::tool_of(text).unwrap_or("*").to_owned();
        self.broken_deny.push((tool, text.to_owned()));
    }
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
            .filter(|r| r.known == Some(Tool::Read) && matches!(r.pattern, Some(Pattern::Path(_))))
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
