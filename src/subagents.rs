//! Subagent definitions and what a child may do, as data (no I/O): the
//! built-in types (`general-purpose`, `Explore`, `Plan`), a session's
//! [`Catalog`] of the types it may start (the built-ins, then the user's
//! and the project's definitions, `bridges::agent_definitions`), and the
//! narrowing every child gets: its [`ToolScope`] (a definition's `tools`
//! and `disallowedTools`, only ever narrower than its parent's) and its
//! mode ([`narrower`]: never more than its parent's). [`Delegate`] is who
//! a child is, for its hooks (`agent_id`, `agent_type`) and its calls'
//! tool checks (`interception::settle`).

use std::path::PathBuf;

use crate::mode::Mode;

/// The deepest a subagent may be: a child of the user's session is 1, its
/// child 2, which may start none.
pub const MAX_DEPTH: u32 = 2;

/// Where a definition comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    BuiltIn,
    /// `~/.claude/agents/*.md`.
    User(PathBuf),
    /// `<project>/.claude/agents/*.md` (a project setting: trust).
    Project(PathBuf),
}

impl Source {
    /// As `subagent/assigned` and `candor doctor` name it.
    pub fn describe(&self) -> String {
        match self {
            Source::BuiltIn => "built-in".to_owned(),
            Source::User(p) | Source::Project(p) => p.display().to_string(),
        }
    }
}

/// One subagent type.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub description: String,
    pub source: Source,
    /// The child's system prompt (the definition's body).
    pub system_prompt: String,
    /// `tools`: the allowlist as written (`Read`, `Bash`, `Agent(Explore)`,
    /// `mcp__server__tool`); `None`: every tool the parent has.
    pub tools: Option<Vec<String>>,
    /// `disallowedTools`.
    pub disallowed_tools: Vec<String>,
    /// `model`: `inherit` (or none), an alias, or a model id.
    pub model: Option<String>,
    /// `permissionMode`, as a mode candor has (never more than the
    /// parent's: [`narrower`]).
    pub permission_mode: Option<Mode>,
    /// `maxTurns`: the most model requests the child may make.
    pub max_turns: Option<u32>,
    /// `hooks`: a Claude Code hook table, added to the user's hooks for the
    /// child's calls.
    pub hooks: Option<serde_json::Value>,
    /// What the definition asks for that candor does not do, each said.
    pub not_honoured: Vec<String>,
}

/// The three built-in types, as Claude Code has them.
pub fn built_ins() -> Vec<Definition> {
    let built_in =
        |name: &str, description: &str, prompt: &str, tools: Option<&[&str]>| Definition {
            name: name.to_owned(),
            description: description.to_owned(),
            source: Source::BuiltIn,
            system_prompt: prompt.to_owned(),
            tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
            disallowed_tools: Vec::new(),
            model: None,
            permission_mode: None,
            max_turns: None,
            hooks: None,
            not_honoured: Vec::new(),
        };
    // Tools that change nothing: no Bash (a command can change anything).
    const READ_ONLY: &[&str] = &["Read", "Glob", "Grep"];
    vec![
        built_in(
            "general-purpose",
            "A general-purpose agent for researching complex questions, searching for code and carrying out multi-step tasks. Use it when a search may take several tries, or a task can be handed off whole.",
            GENERAL_PURPOSE,
            None,
        ),
        built_in(
            "Explore",
            "A fast read-only agent for exploring a codebase: finding files by pattern, searching code for keywords, answering questions about how the code works. Say how thorough it should be.",
            EXPLORE,
            Some(READ_ONLY),
        ),
        Definition {
            permission_mode: Some(Mode::Plan),
            ..built_in(
                "Plan",
                "A read-only agent that researches the codebase and designs an implementation plan: it returns the steps, the files to change and the trade-offs, and changes nothing.",
                PLAN,
                Some(READ_ONLY),
            )
        },
    ]
}

const GENERAL_PURPOSE: &str = "You are a subagent of candor, a coding agent working in the user's editor. Another agent handed you the task below; do it completely with the tools you are given, then answer with what you found or did, in a concise report: your final message is all the other agent receives.

The user sees every call you make as a card with the arguments that actually ran. Hooks and permission rules may rewrite, ask about or refuse a call; work with what ran and never try to get a refused action done another way.";

const EXPLORE: &str = "You are a read-only exploration subagent of candor, a coding agent working in the user's editor. Another agent handed you the question below. Search and read the codebase with Glob, Grep and Read, and answer with what you found: the files and lines that matter and a short explanation. You change nothing. Your final message is all the other agent receives, so make it complete and concise.";

const PLAN: &str = "You are a planning subagent of candor, a coding agent working in the user's editor. Another agent handed you the task below. Research the codebase (Glob, Grep, Read) and end with an implementation plan: numbered steps, the files to change, and the risks and trade-offs. You change nothing. Your final message is the plan, and it is all the other agent receives.";

/// The subagent types a session may start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// Built-ins first, then the user's and the project's definitions (a
    /// project's taking the place of the user's of the same name).
    pub definitions: Vec<Definition>,
    /// What reading them had to say (for notices and `candor doctor`).
    pub problems: Vec<String>,
}

impl Catalog {
    /// Only the built-ins.
    pub fn built_in() -> Catalog {
        Catalog {
            definitions: built_ins(),
            problems: Vec::new(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Definition> {
        self.definitions.iter().find(|d| d.name == name)
    }
}

/// Which tools a child may call: its definition's `tools` and
/// `disallowedTools`, on top of its parent's scope (a child never has more).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolScope {
    /// Each allowlist on the way down (the parent's, then the child's):
    /// a tool must be in every one.
    allow: Vec<Vec<String>>,
    /// Every disallowed entry on the way down.
    deny: Vec<String>,
}

impl ToolScope {
    /// This scope narrowed by a definition's lists.
    pub fn narrowed(&self, tools: Option<&[String]>, disallowed: &[String]) -> ToolScope {
        let mut scope = self.clone();
        if let Some(list) = tools {
            scope.allow.push(list.to_vec());
        }
        scope.deny.extend(disallowed.iter().cloned());
        scope
    }

    /// Why `name` (with `agent_type` for an `Agent` call) may not be
    /// called, or `None` when it may.
    pub fn refuses(&self, name: &str, agent_type: Option<&str>) -> Option<String> {
        let canonical = canonical(name);
        if let Some(entry) = self
            .deny
            .iter()
            .find(|e| entry_matches(e, canonical, agent_type))
        {
            return Some(format!(
                "{name} is disallowed for this subagent (its definition's disallowedTools has {entry})"
            ));
        }
        for list in &self.allow {
            if !list.iter().any(|e| entry_matches(e, canonical, agent_type)) {
                return Some(match agent_type {
                    Some(t) if canonical == "Agent" => format!(
                        "this subagent may not start a {t} subagent (its definition's tools: {})",
                        list.join(", ")
                    ),
                    _ => format!(
                        "{name} is not among this subagent's tools ({})",
                        list.join(", ")
                    ),
                });
            }
        }
        None
    }

    /// Whether the tool may be offered to the model at all (some call of
    /// it could pass).
    pub fn offers(&self, name: &str) -> bool {
        let canonical = canonical(name);
        let bare_deny = self
            .deny
            .iter()
            .any(|e| e == canonical || (canonical == "Agent" && e == "Task"));
        !bare_deny
            && self.allow.iter().all(|list| {
                list.iter().any(|e| {
                    let (tool, _) = split(e);
                    canonical_entry(tool) == canonical || mcp_server_entry(tool, canonical)
                })
            })
    }

    /// The subagent types an `Agent` call in this scope may start, of
    /// `all` (none when `Agent` is not offered).
    pub fn startable<'a>(&self, all: &'a [Definition]) -> Vec<&'a Definition> {
        if !self.offers("Agent") {
            return Vec::new();
        }
        all.iter()
            .filter(|d| self.refuses("Agent", Some(&d.name)).is_none())
            .collect()
    }

    /// The allowlist entries of the innermost definition that has one.
    pub fn listed(&self) -> Option<&[String]> {
        self.allow.last().map(Vec::as_slice)
    }
}

/// `Task` is `Agent`'s older name.
fn canonical(name: &str) -> &str {
    if name == "Task" { "Agent" } else { name }
}

fn canonical_entry(tool: &str) -> &str {
    canonical(tool)
}

/// `Tool(spec)` → (`Tool`, `Some(spec)`).
fn split(entry: &str) -> (&str, Option<&str>) {
    let entry = entry.trim();
    match entry.split_once('(') {
        Some((tool, rest)) => (tool.trim(), Some(rest.trim_end_matches(')').trim())),
        None => (entry, None),
    }
}

/// `mcp__server` names every tool of that server.
fn mcp_server_entry(entry: &str, name: &str) -> bool {
    entry.starts_with("mcp__")
        && entry.matches("__").count() == 1
        && name
            .strip_prefix(entry)
            .is_some_and(|rest| rest.starts_with("__"))
}

fn entry_matches(entry: &str, name: &str, agent_type: Option<&str>) -> bool {
    let (tool, spec) = split(entry);
    let tool = canonical_entry(tool);
    if tool != name && !mcp_server_entry(tool, name) {
        return false;
    }
    match (spec, agent_type) {
        (None | Some("" | "*"), _) => true,
        (Some(spec), Some(t)) if name == "Agent" => spec.split(',').any(|s| s.trim() == t),
        // A spec on another tool (`Bash(git *)`) is a permission rule's
        // business, not the tool list's: the tool is listed.
        (Some(_), _) => name != "Agent",
    }
}

/// A child's mode: the stricter of its parent's and its definition's
/// (`plan` < `default` < `acceptEdits` < `bypassPermissions`).
pub fn narrower(parent: Mode, wanted: Option<Mode>) -> Mode {
    let rank = |m: Mode| match m {
        Mode::Plan => 0,
        Mode::Default => 1,
        Mode::AcceptEdits => 2,
        Mode::BypassPermissions => 3,
    };
    match wanted {
        Some(w) if rank(w) < rank(parent) => w,
        _ => parent,
    }
}

/// Who a child is, for its hooks and its calls' checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegate {
    /// The child's session id (Claude Code's `agent_id`).
    pub agent_id: String,
    /// Its type (`agent_type`).
    pub agent_type: String,
    /// Its log (`agent_transcript_path`).
    pub transcript: PathBuf,
    /// What it may call.
    pub tools: ToolScope,
    /// How deep it is (1: a child of the user's session).
    pub depth: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_scope_only_narrows() {
        let root = ToolScope::default();
        assert_eq!(root.refuses("Bash", None), None);
        let child = root.narrowed(Some(&v(&["Read", "Grep"])), &[]);
        assert!(child.refuses("Bash", None).unwrap().contains("not among"));
        assert_eq!(child.refuses("Read", None), None);
        // A grandchild listing Bash does not get it back.
        let grandchild = child.narrowed(Some(&v(&["Bash", "Read"])), &[]);
        assert!(grandchild.refuses("Bash", None).is_some());
        assert_eq!(grandchild.refuses("Read", None), None);
        let denied = root.narrowed(None, &v(&["Write"]));
        assert!(
            denied
                .refuses("Write", None)
                .unwrap()
                .contains("disallowed")
        );
        assert!(!denied.offers("Write") && denied.offers("Read"));
    }

    #[test]
    fn agent_entries_name_the_types_a_child_may_start() {
        let scope = ToolScope::default().narrowed(Some(&v(&["Read", "Agent(Explore)"])), &[]);
        assert_eq!(scope.refuses("Agent", Some("Explore")), None);
        assert_eq!(scope.refuses("Task", Some("Explore")), None);
        assert!(scope.refuses("Agent", Some("general-purpose")).is_some());
        let all = built_ins();
        let names: Vec<&str> = scope
            .startable(&all)
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["Explore"]);
        let none = ToolScope::default().narrowed(Some(&v(&["Read"])), &[]);
        assert!(none.startable(&all).is_empty());
        let mcp = ToolScope::default().narrowed(Some(&v(&["mcp__files"])), &[]);
        assert_eq!(mcp.refuses("mcp__files__read", None), None);
        assert!(mcp.refuses("mcp__filesystem__read", None).is_some());
    }

    #[test]
    fn a_child_mode_is_never_more_than_its_parents() {
        assert_eq!(
            narrower(Mode::Default, Some(Mode::BypassPermissions)),
            Mode::Default
        );
        assert_eq!(
            narrower(Mode::BypassPermissions, Some(Mode::BypassPermissions)),
            Mode::BypassPermissions
        );
        assert_eq!(narrower(Mode::AcceptEdits, Some(Mode::Plan)), Mode::Plan);
        assert_eq!(narrower(Mode::Plan, Some(Mode::AcceptEdits)), Mode::Plan);
        assert_eq!(narrower(Mode::AcceptEdits, None), Mode::AcceptEdits);
    }
}
