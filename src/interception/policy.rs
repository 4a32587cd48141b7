//! Permission rules and session modes, evaluated on the effective arguments.
//!
//! Rules use Claude Code's syntax: a bare tool name (`Bash`, `Read`) matches
//! every call of the tool; `Tool(pattern)` narrows it:
//!
//! * `Bash(…)` matches the command: `npm run test:*` (legacy prefix form:
//!   starts with `npm run test`), `git *` (a glob, `*` matches anything), or
//!   an exact command. A compound command (`a && b; c | d`) is split into
//!   its commands (leading `VAR=value` assignments dropped): a deny or ask
//!   rule matches if it matches any of them; an allow rule (or a grant) must
//!   cover every one of them.
//! * `Read(…)`, `Edit(…)` match the file path as a glob (`*` stays within a
//!   directory, `**` crosses them): `./src/**` or `src/**` relative to the
//!   session root, `/abs/**` absolute, `~/x` in the home directory. `Edit`
//!   rules cover every tool that edits files.
//!
//! [`decide`] puts hooks, rules and the mode together in a fixed order
//! (documented in `protocol/hooks.md`): a rewrite can never take a call
//! past a deny rule, because rules see the rewritten arguments.

use std::fmt;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Verdict;
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
    Command(Regex),
    Path(GlobMatcher),
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

impl Rule {
    /// Parses `Tool` or `Tool(pattern)`; `root` and `home` anchor path patterns.
    pub fn parse(text: &str, root: &Path, home: Option<&Path>) -> Result<Rule, String> {
        let text = text.trim();
        let (tool, pattern) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(format!("rule {text:?}: missing the closing parenthesis"));
                };
                (&text[..open], Some(inner))
            }
        };
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("rule {text:?}: {tool:?} is not a tool name"));
        }
        let pattern = match pattern {
            None | Some("") | Some("*") => None,
            Some(p) if tool == "Bash" => Some(Pattern::Command(
                command_pattern(p).map_err(|e| format!("rule {text:?}: {e}"))?,
            )),
            Some(p) => {
                let absolute = anchor(p, root, home);
                let glob = GlobBuilder::new(&absolute.to_string_lossy())
                    .literal_separator(true)
                    .build()
                    .map_err(|e| format!("rule {text:?}: {e}"))?
                    .compile_matcher();
                Some(Pattern::Path(glob))
            }
        };
        Ok(Rule {
            text: text.to_owned(),
            tool: tool.to_owned(),
            pattern,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the rule names this tool (`Edit` names every editing tool).
    fn names(&self, tool: &str) -> bool {
        self.tool == tool
            || (self.tool == "Edit" && Tool::from_name(tool).is_some_and(Tool::edits_files))
    }

    /// Whether the rule matches `part` of a call (one command of a compound
    /// Bash command, or one file path).
    fn matches_part(&self, part: &str) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Command(re)) => re.is_match(part),
            Some(Pattern::Path(glob)) => glob.is_match(part),
        }
    }
}

/// The glob of a path rule made absolute.
fn anchor(pattern: &str, root: &Path, home: Option<&Path>) -> PathBuf {
    if let Some(rest) = pattern.strip_prefix("~/") {
        return home
            .map(|h| h.join(rest))
            .unwrap_or_else(|| PathBuf::from(pattern));
    }
    let p = Path::new(pattern);
    if p.is_absolute() {
        p.to_owned()
    } else {
        root.join(pattern.strip_prefix("./").unwrap_or(pattern))
    }
}

/// `prefix:*`, a glob with `*`, or an exact command, as an anchored regex.
fn command_pattern(p: &str) -> Result<Regex, regex::Error> {
    let re = if let Some(prefix) = p.strip_suffix(":*") {
        format!("^{}(\\s.*)?$", regex::escape(prefix.trim_end()))
    } else {
        let parts: Vec<String> = p.split('*').map(regex::escape).collect();
        format!("(?s)^{}$", parts.join(".*"))
    };
    Regex::new(&re)
}

/// The parts of a call that rules look at: each command of a Bash command
/// line, or the file path of a file tool. Empty when there is nothing to
/// narrow on (the rule's tool name decides alone).
pub fn parts(tool: &str, args: &Value, root: &Path) -> Vec<String> {
    match tool {
        "Bash" => args
            .get("command")
            .and_then(Value::as_str)
            .map(split_commands)
            .unwrap_or_default(),
        _ => args
            .get("file_path")
            .or_else(|| args.get("path"))
            .and_then(Value::as_str)
            .map(|p| vec![crate::tools::resolve(root, p).display().to_string()])
            .unwrap_or_default(),
    }
}

/// Splits a command line into its commands at `;`, `&&`, `||`, `|`, `&`
/// and newlines outside quotes, dropping leading `NAME=value` assignments.
pub fn split_commands(line: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), '\\') => {
                current.push(c);
                if let Some(n) = chars.next() {
                    current.push(n);
                }
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, '\\') => {
                current.push(c);
                if let Some(n) = chars.next() {
                    current.push(n);
                }
            }
            (None, ';' | '\n' | '|' | '&') => {
                if matches!(chars.peek(), Some('&' | '|')) {
                    chars.next();
                }
                commands.push(std::mem::take(&mut current));
            }
            (None, c) => current.push(c),
        }
    }
    commands.push(current);
    commands
        .into_iter()
        .map(|c| strip_assignments(c.trim()))
        .filter(|c| !c.is_empty())
        .collect()
}

fn strip_assignments(command: &str) -> String {
    let mut rest = command;
    loop {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_end];
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if is_assignment && word_end < rest.len() {
            rest = rest[word_end..].trim_start();
        } else {
            return rest.to_owned();
        }
    }
}

/// The configured rules.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
}

impl Rule {
    /// Whether this rule matches the call (as a deny or ask rule would: any
    /// command of a compound Bash command is enough). Claude Code's `if`
    /// filter on hooks uses this.
    pub fn matches_call(&self, tool: &str, args: &Value, root: &Path) -> bool {
        any_match(std::slice::from_ref(self), tool, &parts(tool, args, root)).is_some()
    }
}

/// A rule of `rules` that matches any part of the call.
fn any_match<'r>(rules: &'r [Rule], tool: &str, parts: &[String]) -> Option<&'r Rule> {
    rules
        .iter()
        .find(|r| r.names(tool) && (r.pattern.is_none() || parts.iter().any(|p| r.matches_part(p))))
}

/// A rule that covers every part of the call (an allow needs all).
fn cover<'r>(rules: &'r [Rule], tool: &str, parts: &[String]) -> Option<&'r Rule> {
    if let Some(r) = rules.iter().find(|r| r.names(tool) && r.pattern.is_none()) {
        return Some(r);
    }
    if parts.is_empty() {
        return None;
    }
    let mut first = None;
    for part in parts {
        let rule = rules
            .iter()
            .find(|r| r.names(tool) && r.matches_part(part))?;
        first.get_or_insert(rule);
    }
    first
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

/// What the hooks concluded (see [`super::Interception`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookVerdict {
    pub verdict: Verdict,
    pub by: Option<String>,
    pub reason: Option<String>,
}

/// Decides a call, in this order: a denying hook; a deny rule; plan mode
/// for a tool that changes things; an ask rule; an asking hook;
/// bypassPermissions; an allowing hook; an allow rule or a session grant;
/// then the tool's default (reads inside the project run, edits inside the
/// project run in acceptEdits, everything else asks).
pub fn decide(
    tool: &str,
    args: &Value,
    hooks: &HookVerdict,
    mode: Mode,
    rules: &Rules,
    grants: &[Rule],
    root: &Path,
) -> Disposition {
    let parts = parts(tool, args, root);
    let hook = || format!("hook:{}", hooks.by.clone().unwrap_or_default());
    if hooks.verdict == Verdict::Deny {
        return Disposition::Deny {
            by: hook(),
            reason: hooks
                .reason
                .clone()
                .unwrap_or_else(|| "a hook blocked this call".into()),
        };
    }
    if let Some(rule) = any_match(&rules.deny, tool, &parts) {
        return Disposition::Deny {
            by: format!("rule:{rule}"),
            reason: format!("the permission rule {rule} denies this call"),
        };
    }
    let known = Tool::from_name(tool);
    let read_only = known.is_some_and(Tool::is_read_only);
    if mode == Mode::Plan && !read_only {
        return Disposition::Deny {
            by: "mode:plan".into(),
            reason: "plan mode allows only tools that change nothing".into(),
        };
    }
    if let Some(rule) = any_match(&rules.ask, tool, &parts) {
        return Disposition::Ask {
            by: format!("rule:{rule}"),
            reason: Some(format!("the permission rule {rule} asks for this call")),
        };
    }
    if hooks.verdict == Verdict::Ask {
        return Disposition::Ask {
            by: hook(),
            reason: hooks.reason.clone(),
        };
    }
    if mode == Mode::BypassPermissions {
        return Disposition::Run {
            by: "mode:bypassPermissions".into(),
        };
    }
    if hooks.verdict == Verdict::Allow {
        return Disposition::Run { by: hook() };
    }
    if let Some(rule) = cover(&rules.allow, tool, &parts) {
        return Disposition::Run {
            by: format!("rule:{rule}"),
        };
    }
    if let Some(rule) = cover(grants, tool, &parts) {
        return Disposition::Run {
            by: format!("grant:{rule}"),
        };
    }
    // Tools without paths (a plan, a background shell's output) are inside
    // by definition.
    // (A command's parts are commands, not paths.)
    let inside = tool == "Bash" || parts.iter().all(|p| Path::new(p).starts_with(root));
    if read_only && inside {
        return Disposition::Run {
            by: "default".into(),
        };
    }
    if mode == Mode::AcceptEdits && known.is_some_and(Tool::edits_files) && inside {
        return Disposition::Run {
            by: "mode:acceptEdits".into(),
        };
    }
    let reason = if !inside {
        "the path is outside the project"
    } else if known.is_some_and(Tool::edits_files) {
        "edits ask before they change a file (acceptEdits mode lets edits inside the project run)"
    } else {
        "commands ask before they run (an allow rule, or a session grant from \"Always allow\", lets them run)"
    };
    let reason = Some(reason.to_owned());
    Disposition::Ask {
        by: "default".into(),
        reason,
    }
}

/// The session grant an "allow always" answer creates: this tool with
/// exactly these arguments' command or path (never "anything").
pub fn grant_for(tool: &str, args: &Value, root: &Path) -> Option<Rule> {
    let text = match tool {
        "Bash" => {
            let command = args.get("command")?.as_str()?.trim();
            // Glob metacharacters in the command must match themselves.
            if command.contains('*') || command.contains('(') || command.contains(')') {
                return None;
            }
            format!("Bash({command})")
        }
        _ => {
            let path = parts(tool, args, root).into_iter().next()?;
            if path.contains(['*', '?', '[', '{', '(', ')']) {
                return None;
            }
            format!("{tool}({path})")
        }
    };
    Rule::parse(&text, root, None).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn decide_with(tool: &str, args: Value, rules: &Rules, mode: Mode) -> Disposition {
        decide(tool, &args, &no_hooks(), mode, rules, &[], Path::new("/p"))
    }

    #[test]
    fn command_rules() {
        let parts = |c: &str| split_commands(c);
        assert_eq!(
            parts("FOO=1 BAR=2 npm test && git status; ls | wc -l"),
            ["npm test", "git status", "ls", "wc -l"]
        );
        assert_eq!(parts("echo 'a; b' && x"), ["echo 'a; b'", "x"]);
        assert!(rule("Bash(npm run test:*)").matches_part("npm run test --watch"));
        assert!(rule("Bash(npm run test:*)").matches_part("npm run test"));
        assert!(!rule("Bash(npm run test:*)").matches_part("npm run testing"));
        assert!(rule("Bash(git *)").matches_part("git push origin main"));
        assert!(!rule("Bash(git *)").matches_part("gitk"));
        assert!(rule("Bash(ls)").matches_part("ls"));
        assert!(!rule("Bash(ls)").matches_part("ls -la"));
    }

    #[test]
    fn path_rules() {
        assert!(rule("Read(./secrets/**)").matches_part("/p/secrets/a/b.txt"));
        assert!(rule("Read(src/*.rs)").matches_part("/p/src/lib.rs"));
        assert!(!rule("Read(src/*.rs)").matches_part("/p/src/a/lib.rs"));
        assert!(rule("Read(~/.ssh/**)").matches_part("/home/u/.ssh/id"));
        assert!(rule("Read(/etc/*)").matches_part("/etc/passwd"));
        assert!(Rule::parse("Bash(x", Path::new("/p"), None).is_err());
        assert!(Rule::parse("Ba sh", Path::new("/p"), None).is_err());
    }

    #[test]
    fn deny_covers_any_part_and_allow_must_cover_all() {
        let rules = Rules {
            allow: vec![rule("Bash(echo *)")],
            ask: vec![],
            deny: vec![rule("Bash(rm *)")],
        };
        let d = decide_with(
            "Bash",
            json!({"command": "echo hi && rm -rf /"}),
            &rules,
            Mode::Default,
        );
        assert!(
            matches!(d, Disposition::Deny { ref by, .. } if by == "rule:Bash(rm *)"),
            "{d:?}"
        );
        let d = decide_with(
            "Bash",
            json!({"command": "echo a; echo b"}),
            &rules,
            Mode::Default,
        );
        assert_eq!(
            d,
            Disposition::Run {
                by: "rule:Bash(echo *)".into()
            }
        );
        let d = decide_with(
            "Bash",
            json!({"command": "echo a; curl x"}),
            &rules,
            Mode::Default,
        );
        assert!(matches!(d, Disposition::Ask { .. }), "{d:?}");
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
            decide_with("Bash", json!({"command": "ls"}), &none, Mode::Default),
            Disposition::Ask { .. }
        ));
        assert!(matches!(
            decide_with("Bash", json!({"command": "ls"}), &none, Mode::Plan),
            Disposition::Deny { .. }
        ));
        assert_eq!(
            decide_with("Read", read_in, &none, Mode::Plan),
            Disposition::Run {
                by: "default".into()
            }
        );
        assert_eq!(
            decide_with(
                "Bash",
                json!({"command": "ls"}),
                &none,
                Mode::BypassPermissions
            ),
            Disposition::Run {
                by: "mode:bypassPermissions".into()
            }
        );
        let deny = Rules {
            deny: vec![rule("Bash")],
            ..Rules::default()
        };
        assert!(matches!(
            decide_with(
                "Bash",
                json!({"command": "ls"}),
                &deny,
                Mode::BypassPermissions
            ),
            Disposition::Deny { .. }
        ));
    }

    #[test]
    fn hooks_slot_into_the_order() {
        let rules = Rules {
            ask: vec![rule("Bash(git push:*)")],
            deny: vec![rule("Bash(rm *)")],
            ..Rules::default()
        };
        let allow = HookVerdict {
            verdict: Verdict::Allow,
            by: Some("h".into()),
            reason: None,
        };
        let d = decide(
            "Bash",
            &json!({"command": "rm -rf x"}),
            &allow,
            Mode::Default,
            &rules,
            &[],
            Path::new("/p"),
        );
        assert!(
            matches!(d, Disposition::Deny { .. }),
            "an allowing hook cannot pass a deny rule"
        );
        let d = decide(
            "Bash",
            &json!({"command": "git push origin"}),
            &allow,
            Mode::Default,
            &rules,
            &[],
            Path::new("/p"),
        );
        assert!(matches!(d, Disposition::Ask { .. }), "nor an ask rule");
        let d = decide(
            "Bash",
            &json!({"command": "ls"}),
            &allow,
            Mode::Default,
            &rules,
            &[],
            Path::new("/p"),
        );
        assert_eq!(
            d,
            Disposition::Run {
                by: "hook:h".into()
            }
        );
    }

    #[test]
    fn grants_name_exactly_what_was_allowed() {
        let g = grant_for("Bash", &json!({"command": "npm test"}), Path::new("/p")).unwrap();
        assert_eq!(g.text(), "Bash(npm test)");
        assert!(g.matches_part("npm test"));
        assert!(!g.matches_part("npm test && rm -rf /"));
        assert!(grant_for("Bash", &json!({"command": "rm *"}), Path::new("/p")).is_none());
        let g = grant_for("Read", &json!({"file_path": "/etc/hosts"}), Path::new("/p")).unwrap();
        assert_eq!(g.text(), "Read(/etc/hosts)");
    }
}
