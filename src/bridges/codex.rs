//! The Codex bridge: the user's Codex CLI hooks, with Codex's meaning
//! (`protocol/hooks.md`, "Codex hooks"; the upstream contract is summarised
//! in `shared/reference/hooks.md` §2). It shares the hook table format, the
//! runner and the hook type with the Claude Code bridge (`hook.rs`); what
//! differs is here: where hooks come from, who may run them, what a hook is
//! shown, and what its answer means.
//!
//! Sources, in this order: `$CODEX_HOME/hooks.json`, the `[hooks]` tables
//! of `$CODEX_HOME/config.toml` (`$CODEX_HOME` defaults to `~/.codex`), then
//! the project's `.codex/hooks.json` and `.codex/config.toml`, which load
//! only when the project is trusted (`bridges::project_trust`: by Codex's own
//! `[projects."<path>"] trust_level = "trusted"`, for the project or a
//! directory above it, by Claude Code, or by the user's answer to candor).
//! `[features] hooks = false` (or the older `codex_hooks = false`) turns
//! Codex hooks off.
//!
//! Codex shows hooks only shell calls and file edits: `Bash` with
//! `{command}` alone, and `Write`/`Edit` as `apply_patch` with
//! `{command: <patch>}` (matched by `apply_patch`, `Edit` and `Write`
//! matchers). A rewrite is `allow` with `updatedInput` only; a Bash rewrite
//! replaces the command and keeps candor's other fields; a patch rewrite is
//! turned back into the call it describes, or ignored with a notice.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::hook::{
    CommandHook, Dialect, DialectFuture, HookEvent, Stdout, Table, common_asides, read_stdout,
    specific, stderr_reason, string, tool_fields,
};
use super::loaded::Loaded;
use super::runner::{Exit, HookRun};
use super::session_context::SessionContext;
use crate::config::CodexLocations;
use crate::interception::session_hooks::{EventAnswer, SessionEvent};
use crate::interception::{Aside, HookFailure, PostToolDecision, PreToolDecision};

/// Reads a TOML file as JSON values; `Ok(None)` when it does not exist.
pub(crate) fn read_toml(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let Some(text) = super::settings_file::read_settings(path)? else {
        return Ok(None);
    };
    let table: toml::Table = toml::from_str(&text).map_err(|e| format!("invalid TOML ({e})"))?;
    match serde_json::to_value(table) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err("not a table".into()),
        Err(e) => Err(format!("cannot be read as settings ({e})")),
    }
}

/// Reads a `hooks.json`; `Ok(None)` when it does not exist.
fn read_json(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let Some(text) = super::settings_file::read_settings(path)? else {
        return Ok(None);
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("invalid JSON ({e})")),
    }
}

/// `[features] hooks` (or `codex_hooks`) of a config, if it says.
fn hooks_feature(config: &Map<String, Value>) -> Option<bool> {
    let features = config.get("features")?;
    features
        .get("hooks")
        .or_else(|| features.get("codex_hooks"))
        .and_then(Value::as_bool)
}

/// Whether the user's Codex config trusts `project`: the nearest
/// `[projects."<dir>"]` entry at or above it says `trust_level = "trusted"`.
pub fn trusted(user_config: Option<&Map<String, Value>>, project: &Path) -> bool {
    let Some(projects) = user_config
        .and_then(|c| c.get("projects"))
        .and_then(Value::as_object)
    else {
        return false;
    };
    project
        .ancestors()
        .find_map(|dir| projects.get(dir.to_string_lossy().as_ref()))
        .and_then(|entry| entry.get("trust_level"))
        .and_then(Value::as_str)
        == Some("trusted")
}

/// Reads the Codex hook sources of a session (see the module docs); the
/// project's hooks are [`Loaded::wants`], applied only when `trusted`.
pub fn load(locations: &CodexLocations, session: &Arc<SessionContext>, trusted: bool) -> Loaded {
    let mut loaded = Loaded::default();
    let mut table = Table::default();
    let problem =
        |path: &Path, e: String| format!("Codex settings {}: {e}; skipped", path.display());
    let user_config_path = locations.home.as_ref().map(|h| h.join("config.toml"));
    let user_config = match &user_config_path {
        Some(path) => match read_toml(path) {
            Ok(c) => c,
            Err(e) => {
                loaded.problems.push(problem(path, e));
                None
            }
        },
        None => None,
    };
    let project_dir = session.project_dir.join(".codex");
    let project_files = [
        project_dir.join("hooks.json"),
        project_dir.join("config.toml"),
    ];
    // Read whether trusted or not: what trust would give is listed either
    // way (reading a file runs nothing).
    let project_config = match read_toml(&project_files[1]) {
        Ok(c) => c,
        Err(e) => {
            if trusted {
                loaded.problems.push(problem(&project_files[1], e));
            }
            None
        }
    };
    // The sandbox settings count whether the hooks are on or not.
    for (config, path, project) in [
        (&user_config, user_config_path.as_ref(), false),
        (&project_config, Some(&project_files[1]), true),
    ] {
        if let (Some(config), Some(path)) = (config, path) {
            loaded.sandbox.push(crate::sandbox::Layer::codex(
                path.display().to_string(),
                project,
                &Value::Object(config.clone()),
                &session.project_dir,
                session.home.as_deref(),
            ));
        }
    }
    // A project can turn Codex hooks off, never back on.
    let off = |c: &Option<Map<String, Value>>| c.as_ref().and_then(hooks_feature) == Some(false);
    if off(&user_config) || off(&project_config) {
        loaded
            .remarks
            .push("Codex hooks are off here ([features] hooks = false)".into());
        return loaded;
    }
    let read =
        |table: &mut Table, path: &Path, settings: Option<Map<String, Value>>, source: &str| {
            if let Some(hooks) = settings.as_ref().and_then(|s| s.get("hooks")) {
                table.read(&CODEX, hooks, path, source, session);
            }
        };
    if let Some(home) = &locations.home {
        let path = home.join("hooks.json");
        match read_json(&path) {
            Ok(s) => read(&mut table, &path, s, "Codex user"),
            Err(e) => loaded.problems.push(problem(&path, e)),
        }
    }
    if let Some(path) = &user_config_path {
        read(&mut table, path, user_config.clone(), "Codex user");
    }
    let project_hooks = match read_json(&project_files[0]) {
        Ok(s) => s,
        Err(e) => {
            if trusted {
                loaded.problems.push(problem(&project_files[0], e));
            }
            None
        }
    };
    let mut wanted = Table::default();
    read(
        &mut wanted,
        &project_files[0],
        project_hooks.clone(),
        "Codex project",
    );
    read(
        &mut wanted,
        &project_files[1],
        project_config.clone(),
        "Codex project",
    );
    loaded.wants.extend(wanted.hooks.iter().map(|h| h.wanted()));
    loaded
        .scripts
        .extend(wanted.hooks.iter().flat_map(|h| h.named_paths()));
    if trusted {
        read(
            &mut table,
            &project_files[0],
            project_hooks,
            "Codex project",
        );
        read(
            &mut table,
            &project_files[1],
            project_config,
            "Codex project",
        );
    }
    table.finish(&CODEX);
    loaded.add(table);
    loaded
}

/// What a Codex hook is shown of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    /// `Bash` or `apply_patch`.
    pub name: &'static str,
    pub input: Value,
    /// The file's text before the call (for an `apply_patch` of a Write).
    old_text: Option<String>,
}

/// The tool name Codex shows a hook for a candor tool; `None`: Codex runs
/// no tool hooks for it.
pub fn presented_name(tool: &str) -> Option<&'static str> {
    match tool {
        "Bash" => Some("Bash"),
        "Write" | "Edit" => Some("apply_patch"),
        _ => None,
    }
}

/// Lines of a text, without the line breaks; whether it ended with one.
fn lines(text: &str) -> (Vec<&str>, bool) {
    let trailing = text.ends_with('\n');
    let body = text.strip_suffix('\n').unwrap_or(text);
    let lines = if body.is_empty() && !text.is_empty() {
        vec![""]
    } else if body.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    };
    (lines, trailing)
}

/// A call as Codex would show it to a hook.
pub async fn present(tool: &str, input: &Value) -> Presented {
    let text = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or("");
    match tool {
        "Write" | "Edit" => {
            let path = text("file_path");
            let mut patch = String::from("*** Begin Patch\n");
            let mut old_text = None;
            if tool == "Edit" {
                patch.push_str(&format!("*** Update File: {path}\n@@\n"));
                for line in lines(text("old_string")).0 {
                    patch.push_str(&format!("-{line}\n"));
                }
                for line in lines(text("new_string")).0 {
                    patch.push_str(&format!("+{line}\n"));
                }
            } else {
                match tokio::fs::read_to_string(path).await {
                    Ok(old) => {
                        patch.push_str(&format!("*** Update File: {path}\n@@\n"));
                        for line in lines(&old).0 {
                            patch.push_str(&format!("-{line}\n"));
                        }
                        old_text = Some(old);
                    }
                    Err(_) => patch.push_str(&format!("*** Add File: {path}\n")),
                }
                for line in lines(text("content")).0 {
                    patch.push_str(&format!("+{line}\n"));
                }
            }
            patch.push_str("*** End Patch\n");
            Presented {
                name: "apply_patch",
                input: json!({"command": patch}),
                old_text,
            }
        }
        _ => Presented {
            name: "Bash",
            input: json!({"command": text("command")}),
            old_text: None,
        },
    }
}

/// One file's change in a patch.
#[derive(Debug, PartialEq, Eq)]
enum FileChange {
    Add {
        path: String,
        lines: Vec<String>,
    },
    /// Hunks of (old lines, new lines): context lines are in both.
    Update {
        path: String,
        hunks: Vec<(Vec<String>, Vec<String>)>,
    },
}

/// Parses an `apply_patch` patch of exactly one added or updated file.
fn parse_patch(patch: &str) -> Result<FileChange, String> {
    let mut lines = patch.lines().map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim) != Some("*** Begin Patch") {
        return Err("it does not start with `*** Begin Patch`".into());
    }
    let body: Vec<&str> = lines.collect();
    let Some(end) = body.iter().rposition(|l| l.trim() == "*** End Patch") else {
        return Err("it does not end with `*** End Patch`".into());
    };
    let body = &body[..end];
    let Some((header, rest)) = body.split_first() else {
        return Err("it changes no file".into());
    };
    if rest
        .iter()
        .any(|l| l.starts_with("*** ") && !l.starts_with("*** End of File"))
    {
        return Err(
            "it changes more than one file, or moves one; candor applies one file per call".into(),
        );
    }
    if let Some(path) = header.strip_prefix("*** Add File: ") {
        let lines = rest
            .iter()
            .map(|l| l.strip_prefix('+').map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .ok_or("a line of an added file does not start with `+`")?;
        return Ok(FileChange::Add {
            path: path.trim().to_owned(),
            lines,
        });
    }
    let Some(path) = header.strip_prefix("*** Update File: ") else {
        return Err(format!("{header:?} is not an added or updated file"));
    };
    let mut hunks: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for line in rest {
        if line.starts_with("@@") || hunks.is_empty() {
            hunks.push((Vec::new(), Vec::new()));
            if line.starts_with("@@") {
                continue;
            }
        }
        if line.starts_with("*** End of File") {
            continue;
        }
        let Some(hunk) = hunks.last_mut() else {
            continue;
        };
        match line.split_at_checked(1) {
            Some((" ", text)) => {
                hunk.0.push(text.to_owned());
                hunk.1.push(text.to_owned());
            }
            Some(("-", text)) => hunk.0.push(text.to_owned()),
            Some(("+", text)) => hunk.1.push(text.to_owned()),
            _ if line.is_empty() => {
                hunk.0.push(String::new());
                hunk.1.push(String::new());
            }
            _ => return Err(format!("the line {line:?} is not context, `-` or `+`")),
        }
    }
    hunks.retain(|(old, new)| !old.is_empty() || !new.is_empty());
    Ok(FileChange::Update {
        path: path.trim().to_owned(),
        hunks,
    })
}

fn join(lines: &[String], trailing: bool) -> String {
    let mut text = lines.join("\n");
    if trailing && !lines.is_empty() {
        text.push('\n');
    }
    text
}

/// The call a rewritten patch describes, as input for the call's own tool.
fn from_patch(
    tool: &str,
    original: &Value,
    patch: &str,
    presented: &Presented,
) -> Result<Value, String> {
    let change = parse_patch(patch)?;
    let mut input = original.clone();
    let set = |input: &mut Value, key: &str, value: Value| {
        if let Some(obj) = input.as_object_mut() {
            obj.insert(key.into(), value);
        }
    };
    let old = |key: &str| original.get(key).and_then(Value::as_str).unwrap_or("");
    match (tool, change) {
        ("Write", FileChange::Add { path, lines }) => {
            set(&mut input, "file_path", json!(path));
            set(
                &mut input,
                "content",
                json!(join(&lines, lines_trail(old("content")))),
            );
        }
        ("Write", FileChange::Update { path, hunks }) => {
            // Only a whole-file replacement maps back onto a Write.
            let [(old_lines, new_lines)] = hunks.as_slice() else {
                return Err("an update of several hunks cannot be applied to a Write".into());
            };
            let before = presented.old_text.as_deref().map(|t| lines(t).0);
            if before.is_some_and(|b| b != old_lines.iter().map(String::as_str).collect::<Vec<_>>())
            {
                return Err("its hunk does not replace the whole file, as a Write does".into());
            }
            set(&mut input, "file_path", json!(path));
            set(
                &mut input,
                "content",
                json!(join(new_lines, lines_trail(old("content")))),
            );
        }
        ("Edit", FileChange::Update { path, hunks }) => {
            let [(old_lines, new_lines)] = hunks.as_slice() else {
                return Err("an Edit changes one place; the patch has several hunks".into());
            };
            if old_lines.is_empty() {
                return Err("its hunk has nothing to find in the file".into());
            }
            set(&mut input, "file_path", json!(path));
            set(
                &mut input,
                "old_string",
                json!(join(old_lines, lines_trail(old("old_string")))),
            );
            set(
                &mut input,
                "new_string",
                json!(join(new_lines, lines_trail(old("new_string")))),
            );
        }
        ("Edit", FileChange::Add { .. }) => {
            return Err("it adds a file, which an Edit cannot do".into());
        }
        (other, _) => return Err(format!("{other} calls are not patches")),
    }
    Ok(input)
}

fn lines_trail(text: &str) -> bool {
    lines(text).1
}

/// What a Codex PreToolUse hook's run means (Codex's rules: a stricter
/// subset of Claude Code's, failing open on anything it rejects).
pub fn pre_tool_use(
    run: &HookRun,
    hook: &str,
    tool: &str,
    original: &Value,
    presented: &Presented,
) -> (Result<PreToolDecision, HookFailure>, Vec<Aside>) {
    let mut asides = Vec::new();
    let decision = match run.exit {
        Exit::Code(2) if run.stderr.trim().is_empty() => Err(HookFailure::open(
            "it exited with status 2 but wrote nothing on stderr, which does not block in Codex",
        )),
        Exit::Code(2) => Ok(PreToolDecision::Deny {
            reason: stderr_reason(run, ""),
        }),
        Exit::Code(0) => match read_stdout(run, &CODEX) {
            Stdout::Text(_) => Ok(PreToolDecision::Pass { rewrite: None }),
            Stdout::Invalid(e) => Err(HookFailure::open(e)),
            Stdout::Json(out) => pre_decision(&out, hook, tool, original, presented, &mut asides),
        },
        _ => Err(HookFailure::open(run.failure())),
    };
    (decision, asides)
}

fn rejected(what: &str) -> Result<PreToolDecision, HookFailure> {
    Err(HookFailure::open(format!(
        "Codex rejects {what} from a PreToolUse hook, so its answer was ignored"
    )))
}

fn pre_decision(
    out: &Map<String, Value>,
    hook: &str,
    tool: &str,
    original: &Value,
    presented: &Presented,
    asides: &mut Vec<Aside>,
) -> Result<PreToolDecision, HookFailure> {
    if out.get("continue") == Some(&Value::Bool(false)) {
        return rejected("`continue: false`");
    }
    for key in ["stopReason", "suppressOutput"] {
        if out.contains_key(key) {
            return rejected(&format!("`{key}`"));
        }
    }
    if let Some(text) = string(out, "systemMessage") {
        asides.push(Aside::Message {
            hook: hook.to_owned(),
            text,
        });
    }
    let empty = Map::new();
    let s = specific(out, "PreToolUse")
        .map_err(HookFailure::open)?
        .unwrap_or(&empty);
    if let Some(text) = string(s, "additionalContext") {
        asides.push(Aside::Context {
            hook: hook.to_owned(),
            text,
        });
    }
    let reason = string(s, "permissionDecisionReason");
    let updated = s.get("updatedInput").filter(|v| !v.is_null());
    match (
        s.get("permissionDecision").and_then(Value::as_str),
        out.get("decision").and_then(Value::as_str),
    ) {
        (Some("deny"), _) if updated.is_some() => rejected("`updatedInput` without `allow`"),
        (Some("deny"), _) => match reason {
            Some(reason) => Ok(PreToolDecision::Deny { reason }),
            None => rejected("`deny` without a reason"),
        },
        (Some("ask"), _) => rejected("`permissionDecision: \"ask\"`"),
        (Some("allow"), _) => {
            let Some(updated) = updated else {
                return rejected("`allow` without `updatedInput`");
            };
            let Some(command) = updated.get("command").and_then(Value::as_str) else {
                return Err(HookFailure::open(
                    "its updatedInput has no string `command`, so it was ignored",
                ));
            };
            if presented.input.get("command").and_then(Value::as_str) == Some(command) {
                return Ok(PreToolDecision::Allow {
                    reason,
                    rewrite: None,
                });
            }
            let rewrite = match presented.name {
                "apply_patch" => from_patch(tool, original, command, presented).map_err(|e| {
                    HookFailure::open(format!(
                        "its rewritten patch cannot be applied to this {tool} call ({e}), so it was ignored"
                    ))
                })?,
                _ => {
                    let mut input = original.clone();
                    if let Some(obj) = input.as_object_mut() {
                        obj.insert("command".into(), json!(command));
                    }
                    input
                }
            };
            Ok(PreToolDecision::Allow {
                reason,
                rewrite: Some(rewrite),
            })
        }
        (Some(other), _) => Err(HookFailure::open(format!(
            "its permissionDecision {other:?} is not allow or deny"
        ))),
        (None, Some("approve")) => rejected("the legacy `decision: \"approve\"`"),
        (None, Some("block")) => match string(out, "reason") {
            Some(reason) => Ok(PreToolDecision::Deny { reason }),
            None => rejected("`decision: \"block\"` without a reason"),
        },
        (None, Some(other)) => Err(HookFailure::open(format!(
            "its decision {other:?} is not block"
        ))),
        (None, None) if updated.is_some() => rejected("`updatedInput` without `allow`"),
        (None, None) if reason.is_some() => rejected("a reason without a decision"),
        (None, None) => Ok(PreToolDecision::Pass { rewrite: None }),
    }
}

/// What a Codex PostToolUse hook's run means.
pub fn post_tool_use(run: &HookRun, hook: &str) -> (Result<PostToolDecision, String>, Vec<Aside>) {
    let mut asides = Vec::new();
    let decision =
        match run.exit {
            Exit::Code(2) if run.stderr.trim().is_empty() => {
                Err("it exited with status 2 but wrote nothing on stderr".to_owned())
            }
            Exit::Code(2) => Ok(PostToolDecision::Block {
                reason: stderr_reason(run, ""),
            }),
            Exit::Code(0) => match read_stdout(run, &CODEX) {
                Stdout::Text(_) => Ok(PostToolDecision::Accept {
                    context: None,
                    quiet: false,
                }),
                Stdout::Invalid(e) => Err(e),
                Stdout::Json(out) => {
                    asides.extend(common_asides(&out, hook));
                    match specific(&out, "PostToolUse") {
                        Err(e) => Err(e),
                        Ok(Some(s)) if s.contains_key("updatedMCPToolOutput") => {
                            Err("Codex rejects updatedMCPToolOutput".to_owned())
                        }
                        Ok(s) => match out.get("decision").and_then(Value::as_str) {
                            Some("block") => match string(&out, "reason") {
                                Some(reason) => Ok(PostToolDecision::Block { reason }),
                                None => Err("Codex rejects `decision: \"block\"` without a reason"
                                    .to_owned()),
                            },
                            _ => Ok(PostToolDecision::Accept {
                                context: s.and_then(|s| string(s, "additionalContext")),
                                quiet: false,
                            }),
                        },
                    }
                }
            },
            _ => Err(run.failure()),
        };
    (decision, asides)
}

/// What a Codex hook's run on a session event means.
pub fn session_event(event: SessionEvent, run: &HookRun) -> EventAnswer {
    let mut answer = EventAnswer::default();
    let blocks = matches!(
        event,
        SessionEvent::UserPromptSubmit | SessionEvent::Stop | SessionEvent::SubagentStop
    );
    match run.exit {
        Exit::Code(2) if run.stderr.trim().is_empty() => answer.notices.push(
            "the hook failed: it exited with status 2 but wrote nothing on stderr, which does not block in Codex".into(),
        ),
        Exit::Code(2) if blocks => answer.block = Some(stderr_reason(run, "")),
        Exit::Code(2) => answer.notices.push(run.stderr.trim().to_owned()),
        Exit::Code(0) => match read_stdout(run, &CODEX) {
            // Codex ignores plain text.
            Stdout::Text(_) => {}
            Stdout::Invalid(e) => answer.notices.push(format!("the hook failed: {e}")),
            Stdout::Json(out) => {
                if let Some(text) = string(&out, "systemMessage") {
                    answer.messages.push(text);
                }
                match specific(&out, event.name()) {
                    Err(e) => answer.notices.push(format!("the hook failed: {e}")),
                    Ok(s) => answer.context = s.and_then(|s| string(s, "additionalContext")),
                }
                if blocks && out.get("decision").and_then(Value::as_str) == Some("block") {
                    match string(&out, "reason") {
                        Some(reason) => answer.block = Some(reason),
                        None => answer.notices.push(
                            "the hook failed: Codex rejects `decision: \"block\"` without a reason".into(),
                        ),
                    }
                }
            }
        },
        _ => answer
            .notices
            .push(format!("the hook failed and was passed over: it {}", run.failure())),
    }
    answer
}

/// Codex's hook rules (the [`Dialect`] of hooks read from its settings).
#[derive(Debug)]
pub struct Codex;

/// The Codex dialect.
pub static CODEX: Codex = Codex;

impl Dialect for Codex {
    fn name(&self) -> &'static str {
        "Codex"
    }

    fn exact(&self) -> fn(char) -> bool {
        |c| c.is_ascii_alphanumeric() || matches!(c, '_' | '|')
    }

    fn claude_handlers(&self) -> bool {
        false
    }

    fn timeout(&self) -> (&'static [&'static str], f64) {
        (&["timeout", "timeoutSec"], 1.0)
    }

    fn matched_names(&self, tool: &str) -> Vec<String> {
        match presented_name(tool) {
            // apply_patch is matched by Edit and Write matchers too.
            Some("apply_patch") => vec!["apply_patch".into(), "Edit".into(), "Write".into()],
            Some(name) => vec![name.to_owned()],
            None => Vec::new(),
        }
    }

    fn add_fields(&self, session: &SessionContext, input: &mut Map<String, Value>) {
        let turn = session.turn();
        input.insert("turn_id".into(), json!(turn.turn_id));
        input.insert("model".into(), json!(turn.model));
    }

    fn env(&self, _session: &SessionContext, _event: HookEvent) -> Vec<(String, String)> {
        Vec::new()
    }

    fn json_arrays(&self) -> bool {
        true
    }

    fn pre_tool_use<'a>(
        &'a self,
        hook: &'a CommandHook,
        call: crate::interception::ProposedCall<'a>,
        mut input: Map<String, Value>,
    ) -> DialectFuture<'a, Result<PreToolDecision, HookFailure>> {
        Box::pin(async move {
            let presented = present(call.tool, call.input).await;
            tool_fields(&mut input, presented.name, presented.input.clone(), call.id);
            let run = hook.run(input, call.cwd).await;
            pre_tool_use(&run, hook.id_str(), call.tool, call.input, &presented)
        })
    }

    fn post_tool_use<'a>(
        &'a self,
        hook: &'a CommandHook,
        call: crate::interception::FinishedCall<'a>,
        mut input: Map<String, Value>,
    ) -> DialectFuture<'a, Result<PostToolDecision, String>> {
        Box::pin(async move {
            let presented = present(call.tool, call.input).await;
            tool_fields(&mut input, presented.name, presented.input, call.id);
            input.insert("tool_response".into(), json!(call.output));
            let run = hook.run(input, call.cwd).await;
            post_tool_use(&run, hook.id_str())
        })
    }

    fn session_event(&self, event: SessionEvent, run: &HookRun) -> EventAnswer {
        session_event(event, run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::bridges::runner::exited as run;

    fn bash_call() -> (Value, Presented) {
        let original = json!({"command": "npm test", "description": "tests", "timeout": 60000});
        let presented = Presented {
            name: "Bash",
            input: json!({"command": "npm test"}),
            old_text: None,
        };
        (original, presented)
    }

    fn pre(out: Value) -> Result<PreToolDecision, HookFailure> {
        let (original, presented) = bash_call();
        pre_tool_use(
            &run(0, &out.to_string(), ""),
            "h",
            "Bash",
            &original,
            &presented,
        )
        .0
    }

    #[tokio::test]
    async fn codex_sees_bash_as_a_command_and_edits_as_patches() {
        let shown = present(
            "Bash",
            &json!({"command": "ls", "description": "x", "timeout": 5}),
        )
        .await;
        assert_eq!(
            (shown.name, shown.input),
            ("Bash", json!({"command": "ls"}))
        );
        let edit = present(
            "Edit",
            &json!({"file_path": "/p/a.rs", "old_string": "let x = 1;\n", "new_string": "let x = 2;\n"}),
        )
        .await;
        assert_eq!(edit.name, "apply_patch");
        assert_eq!(
            edit.input["command"],
            "*** Begin Patch\n*** Update File: /p/a.rs\n@@\n-let x = 1;\n+let x = 2;\n*** End Patch\n"
        );
        let new_file = present(
            "Write",
            &json!({"file_path": "/nonexistent/n.txt", "content": "a\nb\n"}),
        )
        .await;
        assert_eq!(
            new_file.input["command"],
            "*** Begin Patch\n*** Add File: /nonexistent/n.txt\n+a\n+b\n*** End Patch\n"
        );
    }

    #[test]
    fn only_allow_with_updated_input_rewrites_and_keeps_the_other_fields() {
        let allow = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"command": "pnpm test"}}});
        assert_eq!(
            pre(allow),
            Ok(PreToolDecision::Allow {
                reason: None,
                rewrite: Some(
                    json!({"command": "pnpm test", "description": "tests", "timeout": 60000})
                )
            })
        );
        for (out, why) in [
            (
                json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}),
                "\"ask\"",
            ),
            (
                json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}),
                "`allow` without `updatedInput`",
            ),
            (
                json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "x"}}}),
                "`updatedInput` without `allow`",
            ),
            (
                json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}),
                "`deny` without a reason",
            ),
            (
                json!({"continue": false, "stopReason": "no"}),
                "`continue: false`",
            ),
            (json!({"decision": "approve"}), "approve"),
        ] {
            let Err(failure) = pre(out.clone()) else {
                panic!("{out} was accepted")
            };
            assert!(
                failure.fail_open && failure.message.contains(why),
                "{out}: {failure:?}"
            );
        }
        let partial = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"cmd": "x"}}});
        assert!(matches!(
            pre(partial),
            Err(HookFailure {
                fail_open: true,
                ..
            })
        ));
    }

    #[test]
    fn exit_two_blocks_only_with_something_on_stderr() {
        let (original, presented) = bash_call();
        let quiet = pre_tool_use(&run(2, "", ""), "h", "Bash", &original, &presented).0;
        assert!(
            matches!(
                quiet,
                Err(HookFailure {
                    fail_open: true,
                    ..
                })
            ),
            "{quiet:?}"
        );
        let loud = pre_tool_use(
            &run(2, "", "no npm here\n"),
            "h",
            "Bash",
            &original,
            &presented,
        )
        .0;
        assert_eq!(
            loud,
            Ok(PreToolDecision::Deny {
                reason: "no npm here".into()
            })
        );
    }

    #[tokio::test]
    async fn a_rewritten_patch_becomes_the_edit_it_describes() {
        let original = json!({"file_path": "/p/a.rs", "old_string": "let x = 1;\n", "new_string": "let x = 2;\n", "replace_all": false});
        let presented = present("Edit", &original).await;
        let patch = "*** Begin Patch\n*** Update File: /p/a.rs\n@@\n-let x = 1;\n+let x = 3; // checked\n*** End Patch\n";
        let edit = from_patch("Edit", &original, patch, &presented).unwrap();
        assert_eq!(
            edit,
            json!({"file_path": "/p/a.rs", "old_string": "let x = 1;\n", "new_string": "let x = 3; // checked\n", "replace_all": false})
        );
        let two_files = "*** Begin Patch\n*** Update File: /p/a.rs\n@@\n-a\n+b\n*** Update File: /p/b.rs\n@@\n-c\n+d\n*** End Patch\n";
        assert!(from_patch("Edit", &original, two_files, &presented).is_err());
        assert!(from_patch("Edit", &original, "rm -rf /", &presented).is_err());
    }

    #[test]
    fn session_events_and_post_tool_use_follow_codex() {
        let quiet = session_event(SessionEvent::UserPromptSubmit, &run(2, "", ""));
        assert_eq!(quiet.block, None, "a quiet exit 2 does not block in Codex");
        assert_eq!(quiet.notices.len(), 1);
        let loud = session_event(SessionEvent::UserPromptSubmit, &run(2, "", "no secrets\n"));
        assert_eq!(loud.block.as_deref(), Some("no secrets"));
        let text = session_event(SessionEvent::SessionStart, &run(0, "branch main", ""));
        assert_eq!(text, EventAnswer::default(), "Codex ignores plain text");
        let stop = session_event(
            SessionEvent::Stop,
            &run(0, r#"{"decision":"block","reason":"tests"}"#, ""),
        );
        assert_eq!(stop.block.as_deref(), Some("tests"));
        let (block, _) = post_tool_use(&run(0, r#"{"decision":"block"}"#, ""), "h");
        assert!(block.is_err(), "block without a reason is rejected");
        let (context, _) = post_tool_use(
            &run(
                0,
                r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"ok"}}"#,
                "",
            ),
            "h",
        );
        assert_eq!(
            context,
            Ok(PostToolDecision::Accept {
                context: Some("ok".into()),
                quiet: false,
            })
        );
    }

    #[test]
    fn trust_is_the_nearest_project_entry() {
        let config: Map<String, Value> = serde_json::from_value(json!({"projects": {
            "/work": {"trust_level": "trusted"},
            "/work/scratch": {"trust_level": "untrusted"}
        }}))
        .unwrap();
        assert!(trusted(Some(&config), Path::new("/work/app")));
        assert!(!trusted(Some(&config), Path::new("/work/scratch/x")));
        assert!(!trusted(Some(&config), Path::new("/elsewhere")));
        assert!(!trusted(None, Path::new("/work")));
    }
}
