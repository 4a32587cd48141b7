//! The user's subagent definitions, as Claude Code reads them: Markdown
//! files with a frontmatter, the project's `.claude/agents/*.md` (from the
//! session's `cwd`) and the user's `~/.claude/agents/*.md`
//! (`$CLAUDE_CONFIG_DIR` honoured), read while Claude Code's settings are
//! (`CANDOR_CLAUDE_HOOKS`). A project's definition takes the place of the
//! user's (and of a built-in) of the same name, as in Claude Code.
//!
//! Frontmatter: `name`, `description`, `tools` (a comma-separated string
//! or a list; `Agent(type, …)` names the subagents it may start),
//! `disallowedTools`, `model` (`inherit`, an alias or a model id),
//! `permissionMode`, `maxTurns`, `mcpServers` (names of servers the
//! session has; an inline server is not started), `hooks` (a Claude Code
//! hook table for the subagent's calls, added to the user's; `Stop` is
//! the subagent's `SubagentStop`). The body is the subagent's system
//! prompt. Anything else, and what of these candor does not do, is named
//! in [`crate::subagents::Definition::not_honoured`] (a notice when the
//! subagent starts, and `candor doctor`), never dropped in silence.
//!
//! A project's definitions are project settings: one that wants what
//! only trust gives (hooks, a mode that asks less than `default`) is
//! listed in the trust question ([`Loaded::wants`]) and left out until the
//! project is trusted. The frontmatter is read by a small reader of YAML's
//! block style ([`front`]), enough for these keys: no YAML crate is
//! needed for it.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::Config;
use crate::mode::Mode;
use crate::subagents::{Catalog, Definition, Source};

/// The largest definition file read.
const MAX_FILE: u64 = 256 * 1024;
/// Most definition files read in one folder.
const MAX_FILES: usize = 200;

/// The definitions a session may use, and what the project's want.
#[derive(Debug, Default)]
pub struct Loaded {
    pub catalog: Catalog,
    /// What the project's definitions want that only trust gives.
    pub wants: Vec<String>,
    /// The paths their hooks name (trust binds to the project's files).
    pub scripts: Vec<PathBuf>,
}

/// Reads the user's and the project's definitions over the built-ins
/// (the project's that want trust only when `trusted`).
pub fn load(config: &Config, cwd: &Path, trusted: bool) -> Loaded {
    let mut loaded = Loaded {
        catalog: Catalog::built_in(),
        ..Loaded::default()
    };
    let Some(claude) = &config.claude else {
        return loaded;
    };
    if let Some(dir) = &claude.user_dir {
        for def in read_dir(&dir.join("agents"), false, &mut loaded.catalog.problems) {
            put(&mut loaded.catalog, def);
        }
    }
    let project = cwd.join(".claude").join("agents");
    for def in read_dir(&project, true, &mut loaded.catalog.problems) {
        let wants = wants(&def);
        if !wants.is_empty() {
            loaded.wants.extend(wants);
            if !trusted {
                loaded.catalog.problems.push(format!(
                    "The project's subagent {} ({}) waits for your trust in the project (it runs hooks or asks less than default)",
                    def.name,
                    def.source.describe()
                ));
                continue;
            }
        }
        put(&mut loaded.catalog, def);
    }
    loaded
}

/// What a project definition wants that only trust gives.
fn wants(def: &Definition) -> Vec<String> {
    let mut out = Vec::new();
    let at = def.source.describe();
    if let Some(mode) = def.permission_mode.filter(|m| m.asks_less_than_default()) {
        out.push(format!(
            "subagent {} ({at}): permissionMode {} (never more than the session's own mode)",
            def.name,
            mode.id()
        ));
    }
    if let Some(hooks) = &def.hooks {
        out.push(format!(
            "subagent {} ({at}): hooks for its calls: {}",
            def.name,
            serde_json::to_string(hooks).unwrap_or_default()
        ));
    }
    out
}

/// Puts a definition in, in place of one of the same name (what of it
/// candor does not do is said).
fn put(catalog: &mut Catalog, def: Definition) {
    if !def.not_honoured.is_empty() {
        catalog.problems.push(format!(
            "The subagent {} ({}) asks for what candor does not do: {}",
            def.name,
            def.source.describe(),
            def.not_honoured.join("; ")
        ));
    }
    match catalog.definitions.iter_mut().find(|d| d.name == def.name) {
        Some(old) => *old = def,
        None => catalog.definitions.push(def),
    }
}

/// Every definition in `dir` (`*.md`, sorted by name); problems said.
fn read_dir(dir: &Path, project: bool, problems: &mut Vec<String>) -> Vec<Definition> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "md")
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    if paths.len() > MAX_FILES {
        problems.push(format!(
            "{} holds more than {MAX_FILES} subagent definitions; the first {MAX_FILES} were read",
            dir.display()
        ));
        paths.truncate(MAX_FILES);
    }
    let mut out = Vec::new();
    for path in paths {
        let source = if project {
            Source::Project(path.clone())
        } else {
            Source::User(path.clone())
        };
        match read_file(&path, project).and_then(|text| parse(&text, &path, source)) {
            Ok(def) => out.push(def),
            Err(e) => problems.push(format!(
                "The subagent definition {} was skipped: {e}",
                path.display()
            )),
        }
    }
    out
}

/// A definition file's text (a regular file, not a link in a project).
fn read_file(path: &Path, project: bool) -> Result<String, String> {
    use crate::tools::files::{Links, open_regular};
    use std::io::Read as _;
    let links = if project {
        Links::Refuse
    } else {
        Links::Follow
    };
    let (file, _) = open_regular(path, links)?.ok_or_else(|| "it is no longer there".to_owned())?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("it cannot be read ({e})"))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("it is larger than {MAX_FILE} bytes"));
    }
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
    Ok(crate::text::strip_invisible(&text).0)
}

/// A definition from its file's text.
pub fn parse(text: &str, path: &Path, source: Source) -> Result<Definition, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (head, body) = split_front(text).ok_or("it has no frontmatter (--- lines at its top)")?;
    let fields = front(head)?;
    let string = |k: &str| fields.get(k).and_then(Value::as_str).map(str::trim);
    let name = match string("name") {
        Some(n) => n.to_owned(),
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "its name {name:?} is not 1 to 64 ASCII letters, digits, -, _ or ."
        ));
    }
    let description = string("description")
        .filter(|d| !d.is_empty())
        .ok_or("it has no description (the model chooses a subagent by it)")?;
    let mut not_honoured = Vec::new();
    let mut def = Definition {
        name,
        description: crate::text::shorten(description, 1_000),
        source,
        system_prompt: body.trim().to_owned(),
        tools: fields.get("tools").map(tool_list),
        disallowed_tools: fields
            .get("disallowedTools")
            .map(tool_list)
            .unwrap_or_default(),
        model: string("model").filter(|m| !m.is_empty()).map(str::to_owned),
        permission_mode: None,
        max_turns: None,
        hooks: None,
        not_honoured: Vec::new(),
    };
    if let Some(mode) = string("permissionMode") {
        match Mode::from_id(mode) {
            Some(m) => def.permission_mode = Some(m),
            None => not_honoured.push(format!(
                "permissionMode {mode} (candor has default, acceptEdits, plan and bypassPermissions; the subagent runs in its parent's mode)"
            )),
        }
    }
    match fields.get("maxTurns") {
        None => {}
        Some(v) => match v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        {
            Some(n) if n > 0 => def.max_turns = Some(n.min(10_000) as u32),
            _ => not_honoured.push(format!("maxTurns {v} (not a positive number)")),
        },
    }
    if let Some(hooks) = fields.get("hooks") {
        match hooks {
            Value::Object(table) => def.hooks = Some(Value::Object(hooks_for_child(table))),
            other => not_honoured.push(format!("hooks {other} (not a hook table)")),
        }
    }
    if let Some(servers) = fields.get("mcpServers") {
        let inline: Vec<String> = match servers {
            Value::Array(items) => items
                .iter()
                .filter(|i| !i.is_string())
                .map(Value::to_string)
                .collect(),
            Value::Object(map) => map.keys().cloned().collect(),
            Value::String(_) => Vec::new(),
            other => vec![other.to_string()],
        };
        if !inline.is_empty() {
            not_honoured.push(format!(
                "mcpServers defined inline ({}): candor starts no server for a subagent; it has the session's servers",
                inline.join(", ")
            ));
        }
    }
    const KNOWN: &[&str] = &[
        "name",
        "description",
        "tools",
        "disallowedTools",
        "model",
        "permissionMode",
        "maxTurns",
        "hooks",
        "mcpServers",
    ];
    for key in fields.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
        not_honoured.push(format!("{key} (candor does not use it)"));
    }
    def.not_honoured = not_honoured;
    Ok(def)
}

/// A definition's hook table for its subagent: `Stop` is the subagent's
/// own stop (`SubagentStop`), as Claude Code reads it.
fn hooks_for_child(table: &Map<String, Value>) -> Map<String, Value> {
    table
        .iter()
        .map(|(event, groups)| {
            let event = if event == "Stop" {
                "SubagentStop".to_owned()
            } else {
                event.clone()
            };
            (event, groups.clone())
        })
        .collect()
}

/// `tools`: a comma-separated string (commas inside `Agent(a, b)` kept)
/// or a list.
fn tool_list(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        Value::String(s) => {
            let mut out = Vec::new();
            let mut depth = 0usize;
            let mut item = String::new();
            for c in s.chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                if c == ',' && depth == 0 {
                    out.push(std::mem::take(&mut item));
                } else {
                    item.push(c);
                }
            }
            out.push(item);
            out.into_iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The frontmatter (between the `---` lines at the top) and the body.
fn split_front(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// A line of the frontmatter: its indentation and text (comments and
/// blank lines left out).
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// Reads a frontmatter written in YAML's block style into JSON: mappings
/// (`key: value`), sequences (`- item`), nested by indentation; flow
/// lists (`[a, b]`), quoted and plain scalars, numbers and booleans;
/// block scalars (`|`, `>`). Anything else is an error naming the line.
pub fn front(text: &str) -> Result<Map<String, Value>, String> {
    let lines: Vec<Line<'_>> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| Line {
            indent: l.len() - l.trim_start().len(),
            text: l.trim(),
        })
        .collect();
    let mut at = 0;
    match block(&lines, &mut at, 0)? {
        Value::Object(map) if at == lines.len() => Ok(map),
        Value::Object(_) => Err(format!(
            "the frontmatter line {:?} is not where its indentation puts it",
            lines[at].text
        )),
        _ => Err("the frontmatter is not a list of `key: value` lines".into()),
    }
}

/// The block starting at `lines[*at]`, indented `indent` or more.
fn block(lines: &[Line<'_>], at: &mut usize, indent: usize) -> Result<Value, String> {
    let Some(first) = lines.get(*at) else {
        return Ok(Value::Null);
    };
    let own = first.indent.max(indent);
    if first.text.starts_with("- ") || first.text == "-" {
        let mut items = Vec::new();
        while let Some(line) = lines.get(*at).filter(|l| l.indent == own) {
            let Some(rest) = line.text.strip_prefix('-') else {
                break;
            };
            let rest = rest.trim_start();
            *at += 1;
            if rest.is_empty() {
                items.push(block(lines, at, own + 1)?);
            } else if key_value(rest).is_some() && !rest.starts_with(['"', '\'', '[']) {
                // `- key: value` starts a mapping whose other keys are
                // indented under the first.
                let mut map = Map::new();
                entry(&mut map, rest, lines, at, own + 1)?;
                if let Some(next) = lines.get(*at).filter(|l| l.indent > own) {
                    let inner = next.indent;
                    while let Some(line) = lines.get(*at).filter(|l| l.indent == inner) {
                        *at += 1;
                        entry(&mut map, line.text, lines, at, inner + 1)?;
                    }
                }
                items.push(Value::Object(map));
            } else {
                items.push(scalar(rest));
            }
        }
        return Ok(Value::Array(items));
    }
    let mut map = Map::new();
    while let Some(line) = lines.get(*at).filter(|l| l.indent == own) {
        if line.text.starts_with("- ") {
            break;
        }
        *at += 1;
        entry(&mut map, line.text, lines, at, own + 1)?;
    }
    Ok(Value::Object(map))
}

/// One `key: value` of a mapping; a value on the lines below when empty.
fn entry(
    map: &mut Map<String, Value>,
    text: &str,
    lines: &[Line<'_>],
    at: &mut usize,
    deeper: usize,
) -> Result<(), String> {
    let (key, value) = key_value(text)
        .ok_or_else(|| format!("the frontmatter line {text:?} is not `key: value`"))?;
    let value = match value {
        "" => match lines.get(*at) {
            Some(next) if next.indent >= deeper => block(lines, at, deeper)?,
            // `key:` then a list at the same indentation (YAML allows it).
            Some(next) if next.text.starts_with("- ") && next.indent + 1 >= deeper => {
                block(lines, at, next.indent)?
            }
            _ => Value::Null,
        },
        "|" | ">" | "|-" | ">-" | "|+" | ">+" => {
            let folded = value.starts_with('>');
            let mut parts = Vec::new();
            while let Some(line) = lines.get(*at).filter(|l| l.indent >= deeper) {
                parts.push(line.text);
                *at += 1;
            }
            Value::String(parts.join(if folded { " " } else { "\n" }))
        }
        v => scalar(v),
    };
    map.insert(key.to_owned(), value);
    Ok(())
}

/// `key: value` (the key may be quoted).
fn key_value(text: &str) -> Option<(&str, &str)> {
    let (key, value) = if let Some(rest) = text.strip_prefix('"') {
        let (key, after) = rest.split_once('"')?;
        (key, after.strip_prefix(':')?)
    } else {
        let (key, value) = text.split_once(':')?;
        if key.contains(' ') && !key.trim().chars().all(|c| c.is_alphanumeric() || c == ' ') {
            return None;
        }
        (key.trim(), value)
    };
    if !value.is_empty() && !value.starts_with(' ') {
        return None;
    }
    Some((key, value.trim()))
}

/// A scalar or a flow list.
fn scalar(text: &str) -> Value {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return Value::Array(
            inner
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(scalar)
                .collect(),
        );
    }
    for q in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(q).and_then(|t| t.strip_suffix(q)) {
            return Value::String(inner.replace("\\\"", "\""));
        }
    }
    match text {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        "null" | "~" => return Value::Null,
        _ => {}
    }
    if let Ok(n) = text.parse::<u64>() {
        return Value::from(n);
    }
    // A comment after a plain scalar.
    let text = text.split(" #").next().unwrap_or(text).trim_end();
    Value::String(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_claude_code_definitions() {
        let text = "---\nname: reviewer\ndescription: Reviews code. Use after changes.\ntools: Read, Grep, Agent(Explore, Plan)\nmodel: inherit\npermissionMode: bypassPermissions\nmaxTurns: 7\ncolor: blue\nhooks:\n  PreToolUse:\n    - matcher: \"Bash\"\n      hooks:\n        - type: command\n          command: \"./check.sh\"\n  Stop:\n    - hooks:\n        - type: command\n          command: echo done\n---\nYou review code.\n";
        let def = parse(
            text,
            Path::new("/p/.claude/agents/reviewer.md"),
            Source::BuiltIn,
        )
        .unwrap();
        assert_eq!(def.name, "reviewer");
        assert_eq!(def.tools.unwrap(), ["Read", "Grep", "Agent(Explore, Plan)"]);
        assert_eq!(def.permission_mode, Some(Mode::BypassPermissions));
        assert_eq!(def.max_turns, Some(7));
        assert_eq!(def.system_prompt, "You review code.");
        assert_eq!(
            def.hooks.unwrap(),
            json!({
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}],
                "SubagentStop": [{"hooks": [{"type": "command", "command": "echo done"}]}]
            })
        );
        assert_eq!(def.not_honoured, ["color (candor does not use it)"]);
    }

    #[test]
    fn lists_and_problems() {
        let def = parse(
            "---\nname: a\ndescription: d\ntools:\n  - Read\n  - Bash\ndisallowedTools: [Write, Edit]\npermissionMode: dontAsk\n---\nbody",
            Path::new("a.md"),
            Source::BuiltIn,
        )
        .unwrap();
        assert_eq!(def.tools.unwrap(), ["Read", "Bash"]);
        assert_eq!(def.disallowed_tools, ["Write", "Edit"]);
        assert!(
            def.not_honoured[0].contains("dontAsk"),
            "{:?}",
            def.not_honoured
        );
        assert!(parse("no front", Path::new("a.md"), Source::BuiltIn).is_err());
        assert!(
            parse("---\nname: a\n---\n", Path::new("a.md"), Source::BuiltIn)
                .unwrap_err()
                .contains("description")
        );
        assert!(
            parse(
                "---\nname: a b\ndescription: d\n---\n",
                Path::new("a.md"),
                Source::BuiltIn
            )
            .is_err()
        );
    }
}
