//! The Claude Code bridge: the user's Claude Code hooks and permission
//! rules, with Claude Code's meaning (`protocol/hooks.md`, "Claude Code
//! hooks"; the upstream contract is summarised in
//! `shared/reference/hooks.md` §1).
//!
//! Sources, read when a session starts, in this order (the order hooks run
//! in and fold through): the user's `settings.json` (`~/.claude`, or
//! `$CLAUDE_CONFIG_DIR`), the project's `.claude/settings.json`, its
//! `.claude/settings.local.json`, then the managed `managed-settings.json`
//! and `managed-settings.d/*.json` (alphabetically), so an organisation's
//! hooks see the input as the user's hooks left it. Hooks of all sources
//! are combined; a command configured twice for one event runs once (where
//! it first appears, for every matcher it was configured with). Scalar
//! settings (`disableAllHooks`, `permissions.defaultMode`) take the value of
//! the most specific source that sets it: managed, local, project, user.
//!
//! Events: PreToolUse and PostToolUse (through the interception seam),
//! UserPromptSubmit, Stop, SessionStart and SessionEnd (as event hooks).
//! Other events and other hook types are reported once, at session start.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::runner::{self, Exit, HookCommand, HookRun};
use super::{Loaded, Matcher, SessionContext};
use crate::config::ClaudeLocations;
use crate::event_log::ResultStatus;
use crate::interception::events::{EventAnswer, EventFuture, EventHook, EventInput, SessionEvent};
use crate::interception::policy::{Mode, Rule};
use crate::interception::{
    Aside, FinishedCall, HookFailure, HookFuture, PostHookFuture, PostToolDecision, PostToolHook,
    PreToolDecision, PreToolHook, ProposedCall,
};

/// A command hook's timeout when none is configured (Claude Code ≥ 2.1.3).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Which settings file a hook or rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    User,
    Project,
    Local,
    Managed,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
            Source::Local => "local",
            Source::Managed => "managed",
        }
    }
}

/// The settings files of a session in `cwd`, in the order they are read.
pub fn files(locations: &ClaudeLocations, cwd: &Path) -> Vec<(Source, PathBuf)> {
    let mut files = Vec::new();
    if let Some(dir) = &locations.user_dir {
        files.push((Source::User, dir.join("settings.json")));
    }
    files.push((Source::Project, cwd.join(".claude/settings.json")));
    files.push((Source::Local, cwd.join(".claude/settings.local.json")));
    if let Some(dir) = &locations.managed_dir {
        files.push((Source::Managed, dir.join("managed-settings.json")));
        if let Ok(entries) = std::fs::read_dir(dir.join("managed-settings.d")) {
            let mut more: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            more.sort();
            files.extend(more.into_iter().map(|p| (Source::Managed, p)));
        }
    }
    files
}

/// The Claude Code events candor runs hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    Session(SessionEvent),
}

impl HookEvent {
    fn parse(name: &str) -> Option<HookEvent> {
        Some(match name {
            "PreToolUse" => HookEvent::PreToolUse,
            "PostToolUse" => HookEvent::PostToolUse,
            "UserPromptSubmit" => HookEvent::Session(SessionEvent::UserPromptSubmit),
            "Stop" => HookEvent::Session(SessionEvent::Stop),
            "SessionStart" => HookEvent::Session(SessionEvent::SessionStart),
            "SessionEnd" => HookEvent::Session(SessionEvent::SessionEnd),
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Session(e) => e.name(),
        }
    }

    fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// Characters that keep a Claude Code matcher a list of exact names.
fn exact(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|')
}

/// When a configured hook runs: its group's matcher and its `if` filter.
#[derive(Debug, Clone)]
struct Condition {
    matcher: Matcher,
    /// The `if` permission rule (tool events only).
    filter: Option<Rule>,
    /// An `if` on an event that is not a tool event: never runs.
    never: bool,
}

/// One command hook for one event, with every place it was configured.
#[derive(Debug)]
pub struct ClaudeHook {
    id: String,
    event: HookEvent,
    command: HookCommand,
    conditions: Vec<Condition>,
    session: Arc<SessionContext>,
}

/// Reads every settings file and builds the session's Claude Code hooks
/// and rules (see the module docs for the order and the precedence).
pub fn load(locations: &ClaudeLocations, session: &Arc<SessionContext>) -> Loaded {
    let mut loaded = Loaded::default();
    let mut settings: Vec<(Source, PathBuf, Map<String, Value>)> = Vec::new();
    for (source, path) in files(locations, &session.project_dir) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                loaded.problems.push(format!(
                    "Claude Code settings {}: cannot be read ({e}); skipped",
                    path.display()
                ));
                continue;
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => settings.push((source, path, map)),
            Ok(_) => loaded.problems.push(format!(
                "Claude Code settings {}: not a JSON object; skipped",
                path.display()
            )),
            Err(e) => loaded.problems.push(format!(
                "Claude Code settings {}: invalid JSON ({e}); skipped",
                path.display()
            )),
        }
    }
    // Scalars: the most specific source that sets one decides.
    let scalar = |key: &str| -> Option<(Source, Value)> {
        settings
            .iter()
            .rev()
            .find_map(|(source, _, map)| map.get(key).map(|v| (*source, v.clone())))
    };
    let disabled = match scalar("disableAllHooks") {
        Some((source, Value::Bool(true))) => Some(source),
        _ => None,
    };
    let managed_only = settings.iter().any(|(s, _, m)| {
        *s == Source::Managed && m.get("allowManagedHooksOnly") == Some(&json!(true))
    });
    let runs = |source: Source| match disabled {
        Some(Source::Managed) => false,
        Some(_) if source != Source::Managed => false,
        _ => !managed_only || source == Source::Managed,
    };
    if disabled.is_some() {
        loaded.remarks.push(format!(
            "Claude Code hooks are off here (disableAllHooks in the {} settings){}",
            disabled.map_or("", Source::name),
            if disabled == Some(Source::Managed) {
                ""
            } else {
                "; managed hooks still run"
            }
        ));
    }
    let mut hooks: Vec<ClaudeHook> = Vec::new();
    let mut unsupported_events = BTreeSet::new();
    let mut unsupported_types = BTreeSet::new();
    for (source, path, map) in &settings {
        read_permissions(&mut loaded, path, map);
        if !runs(*source) {
            continue;
        }
        let Some(events) = map.get("hooks") else {
            continue;
        };
        let Some(events) = events.as_object() else {
            loaded.problems.push(format!(
                "Claude Code settings {}: `hooks` is not an object; its hooks were skipped",
                path.display()
            ));
            continue;
        };
        for (event_name, groups) in events {
            let Some(event) = HookEvent::parse(event_name) else {
                unsupported_events.insert(event_name.clone());
                continue;
            };
            let Some(groups) = groups.as_array() else {
                loaded.problems.push(format!(
                    "Claude Code settings {}: hooks.{event_name} is not a list; skipped",
                    path.display()
                ));
                continue;
            };
            for (g, group) in groups.iter().enumerate() {
                let at = format!("hooks.{event_name}[{g}]");
                let bad = |what: &str| {
                    format!(
                        "Claude Code settings {}: {at}: {what}; skipped",
                        path.display()
                    )
                };
                let matcher_text = match group.get("matcher") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.as_str()),
                    Some(_) => {
                        loaded.problems.push(bad("`matcher` is not a string"));
                        continue;
                    }
                };
                let matcher = match Matcher::parse(matcher_text, exact) {
                    Ok(m) => m,
                    Err(e) => {
                        loaded.problems.push(bad(&e));
                        continue;
                    }
                };
                let Some(handlers) = group.get("hooks").and_then(Value::as_array) else {
                    loaded.problems.push(bad("`hooks` is not a list"));
                    continue;
                };
                for (h, handler) in handlers.iter().enumerate() {
                    let at = format!("{at}.hooks[{h}]");
                    let bad = |what: &str| {
                        format!(
                            "Claude Code settings {}: {at}: {what}; skipped",
                            path.display()
                        )
                    };
                    let kind = handler.get("type").and_then(Value::as_str).unwrap_or("");
                    if kind != "command" {
                        if kind.is_empty() {
                            loaded.problems.push(bad("no `type`"));
                        } else {
                            unsupported_types.insert(kind.to_owned());
                        }
                        continue;
                    }
                    let command = match parse_command(handler, &session.project_dir) {
                        Ok(c) => c,
                        Err(e) => {
                            loaded.problems.push(bad(&e));
                            continue;
                        }
                    };
                    let (filter, never) = match handler.get("if").and_then(Value::as_str) {
                        None => (None, false),
                        Some(_) if !event.is_tool_event() => (None, true),
                        Some(rule) => {
                            match Rule::parse(rule, &session.project_dir, session.home.as_deref()) {
                                Ok(r) => (Some(r), false),
                                Err(e) => {
                                    // Run the hook when unsure, as Claude Code does.
                                    loaded.remarks.push(format!(
                                        "Claude Code settings {}: {at}: its `if` filter cannot be read ({e}); the hook runs for every match",
                                        path.display()
                                    ));
                                    (None, false)
                                }
                            }
                        }
                    };
                    let condition = Condition {
                        matcher: matcher.clone(),
                        filter,
                        never,
                    };
                    match hooks.iter_mut().find(|k| {
                        k.event == event
                            && k.command.command == command.command
                            && k.command.args == command.args
                    }) {
                        Some(existing) => existing.conditions.push(condition),
                        None => hooks.push(ClaudeHook {
                            id: format!("{} ({} settings)", command.label(), source.name()),
                            event,
                            command,
                            conditions: vec![condition],
                            session: session.clone(),
                        }),
                    }
                }
            }
        }
    }
    if !unsupported_events.is_empty() {
        let list: Vec<String> = unsupported_events.into_iter().collect();
        loaded.remarks.push(format!(
            "Claude Code hooks for {} are not run by candor (it runs PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart and SessionEnd)",
            list.join(", ")
        ));
    }
    if !unsupported_types.is_empty() {
        let list: Vec<String> = unsupported_types.into_iter().collect();
        loaded.problems.push(format!(
            "Claude Code hooks of type {} are not supported by candor and were skipped (only `command` hooks run)",
            list.join(", ")
        ));
    }
    if let Some((source, mode)) = scalar_mode(&settings) {
        match mode.as_str().and_then(Mode::from_id) {
            Some(m) => loaded.default_mode = Some(m),
            None => loaded.problems.push(format!(
                "Claude Code {} settings: permissions.defaultMode {mode} is not a mode candor has (default, acceptEdits, plan, bypassPermissions); ignored",
                source.name()
            )),
        }
    }
    for hook in hooks {
        let hook = Arc::new(hook);
        match hook.event {
            HookEvent::PreToolUse => loaded.pre_hooks.push(hook),
            HookEvent::PostToolUse => loaded.post_hooks.push(hook),
            HookEvent::Session(_) => loaded.event_hooks.push(hook),
        }
    }
    loaded
}

/// `permissions.defaultMode` from the most specific source that sets it.
fn scalar_mode(settings: &[(Source, PathBuf, Map<String, Value>)]) -> Option<(Source, Value)> {
    settings.iter().rev().find_map(|(source, _, map)| {
        map.get("permissions")
            .and_then(|p| p.get("defaultMode"))
            .map(|v| (*source, v.clone()))
    })
}

fn read_permissions(loaded: &mut Loaded, path: &Path, map: &Map<String, Value>) {
    let Some(permissions) = map.get("permissions") else {
        return;
    };
    for (key, list) in [
        ("allow", &mut loaded.allow),
        ("ask", &mut loaded.ask),
        ("deny", &mut loaded.deny),
    ] {
        match permissions.get(key) {
            None => {}
            Some(Value::Array(items)) => {
                for item in items {
                    match item.as_str() {
                        Some(rule) => list.push((rule.to_owned(), path.to_owned())),
                        None => loaded.problems.push(format!(
                            "Claude Code settings {}: permissions.{key} holds {item}, not a rule; skipped",
                            path.display()
                        )),
                    }
                }
            }
            Some(_) => loaded.problems.push(format!(
                "Claude Code settings {}: permissions.{key} is not a list; skipped",
                path.display()
            )),
        }
    }
}

/// A handler's command, exec-form arguments and timeout, with
/// `${CLAUDE_PROJECT_DIR}` put in.
fn parse_command(handler: &Value, project: &Path) -> Result<HookCommand, String> {
    let project = project.display().to_string();
    let expand = |s: &str| s.replace("${CLAUDE_PROJECT_DIR}", &project);
    let command = match handler.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => expand(c),
        _ => return Err("a command hook needs a non-empty `command` string".into()),
    };
    let args = match handler.get("args") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|a| a.as_str().map(expand))
                .collect::<Option<Vec<String>>>()
                .ok_or("`args` must be a list of strings")?,
        ),
        Some(_) => return Err("`args` must be a list of strings".into()),
    };
    let timeout = match handler.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s.min(86_400.0)),
            _ => return Err("`timeout` must be a positive number of seconds".into()),
        },
    };
    Ok(HookCommand {
        command,
        args,
        timeout,
    })
}

impl ClaudeHook {
    fn tool_applies(&self, tool: &str, input: &Value, root: &Path) -> bool {
        self.conditions.iter().any(|c| {
            !c.never
                && c.matcher.matches(tool)
                && c.filter
                    .as_ref()
                    .is_none_or(|rule| rule.matches_call(tool, input, root))
        })
    }

    /// The fields every event's input has.
    fn input(&self, cwd: &Path, mode: Mode) -> Map<String, Value> {
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session.session_id));
        input.insert(
            "transcript_path".into(),
            json!(self.session.transcript_path.display().to_string()),
        );
        input.insert("cwd".into(), json!(cwd.display().to_string()));
        input.insert("permission_mode".into(), json!(mode.id()));
        input.insert("hook_event_name".into(), json!(self.event.name()));
        input
    }

    async fn run(&self, input: Map<String, Value>, cwd: &Path) -> HookRun {
        let env = [(
            "CLAUDE_PROJECT_DIR".to_owned(),
            self.session.project_dir.display().to_string(),
        )];
        runner::run(&self.command, &Value::Object(input), cwd, &env).await
    }
}

impl PreToolHook for ClaudeHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn applies_to(&self, call: &ProposedCall<'_>) -> bool {
        self.tool_applies(call.tool, call.input, call.cwd)
    }

    fn check<'a>(&'a self, call: ProposedCall<'a>) -> HookFuture<'a> {
        Box::pin(async move {
            let mut input = self.input(call.cwd, call.mode);
            input.insert("tool_name".into(), json!(call.tool));
            input.insert("tool_input".into(), call.input.clone());
            input.insert("tool_use_id".into(), json!(call.id));
            let run = self.run(input, call.cwd).await;
            let (decision, asides) = pre_tool_use(&run, &self.id);
            for aside in asides {
                call.asides.push(aside);
            }
            decision
        })
    }
}

impl PostToolHook for ClaudeHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn applies_to(&self, call: &FinishedCall<'_>) -> bool {
        self.tool_applies(call.tool, call.input, call.cwd)
    }

    fn after<'a>(&'a self, call: FinishedCall<'a>) -> PostHookFuture<'a> {
        Box::pin(async move {
            let mut input = self.input(call.cwd, call.mode);
            input.insert("tool_name".into(), json!(call.tool));
            input.insert("tool_input".into(), call.input.clone());
            input.insert("tool_response".into(), tool_response(&call));
            input.insert("tool_use_id".into(), json!(call.id));
            let run = self.run(input, call.cwd).await;
            let (decision, asides) = post_tool_use(&run, &self.id);
            for aside in asides {
                call.asides.push(aside);
            }
            decision
        })
    }
}

impl EventHook for ClaudeHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn applies_to(&self, input: &EventInput<'_>) -> bool {
        self.event == HookEvent::Session(input.event)
            && self.conditions.iter().any(|c| {
                !c.never
                    && match input.subject {
                        // Events without a matcher ignore the one configured.
                        None => true,
                        Some(subject) => c.matcher.matches(subject),
                    }
            })
    }

    fn run<'a>(&'a self, event: EventInput<'a>) -> EventFuture<'a> {
        Box::pin(async move {
            let mut input = self.input(event.cwd, event.mode);
            input.extend(event.fields.clone());
            let run = ClaudeHook::run(self, input, event.cwd).await;
            session_event(event.event, &run)
        })
    }
}

/// What a PostToolUse hook is told the tool returned, in Claude Code's
/// shapes where candor has them (`Bash`: `stdout`, `stderr`, `interrupted`,
/// `isImage`; file tools: `filePath`, `success`), else `{output}`.
fn tool_response(call: &FinishedCall<'_>) -> Value {
    let interrupted = call.status == ResultStatus::Cancelled;
    match call.tool {
        // candor runs commands with stderr merged into stdout, in order.
        "Bash" => {
            json!({"stdout": call.output, "stderr": "", "interrupted": interrupted, "isImage": false})
        }
        "Write" | "Edit" => json!({
            "filePath": call.input.get("file_path").cloned().unwrap_or(Value::Null),
            "success": call.status == ResultStatus::Completed,
            "output": call.output,
        }),
        _ => json!({"output": call.output, "success": call.status == ResultStatus::Completed}),
    }
}

/// How a run's stdout reads: a JSON object, plain text, or broken JSON.
enum Stdout {
    Json(Map<String, Value>),
    Text(String),
    Invalid(String),
}

fn read_stdout(run: &HookRun) -> Stdout {
    let text = run.stdout.trim_start();
    if !text.starts_with('{') {
        return Stdout::Text(run.stdout.trim().to_owned());
    }
    let cut = if run.truncated {
        " (its output was longer than 1 MiB and was cut)"
    } else {
        ""
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Stdout::Json(map),
        Ok(_) => Stdout::Invalid(format!("its output is not a JSON object{cut}")),
        Err(e) => Stdout::Invalid(format!("its output is not valid JSON ({e}){cut}")),
    }
}

/// `hookSpecificOutput`, checked to be for `event`.
fn specific<'a>(
    out: &'a Map<String, Value>,
    event: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match out.get("hookSpecificOutput") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(s)) => match s.get("hookEventName").and_then(Value::as_str) {
            Some(name) if name == event => Ok(Some(s)),
            Some(name) => Err(format!("its hookSpecificOutput is for {name}, not {event}")),
            None => Err("its hookSpecificOutput has no hookEventName".into()),
        },
        Some(_) => Err("its hookSpecificOutput is not an object".into()),
    }
}

fn string(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The reason of an exit-2 block: stderr, or a default naming the hook.
fn stderr_reason(run: &HookRun, default: &str) -> String {
    let text = run.stderr.trim();
    if text.is_empty() {
        default.to_owned()
    } else {
        text.to_owned()
    }
}

/// What a PreToolUse hook's run means (Claude Code's rules, §1.5–1.7).
pub fn pre_tool_use(
    run: &HookRun,
    hook: &str,
) -> (Result<PreToolDecision, HookFailure>, Vec<Aside>) {
    let mut asides = Vec::new();
    let notice = |text: String| Aside::Notice {
        hook: hook.to_owned(),
        text,
    };
    let decision = match run.exit {
        Exit::Code(2) => Ok(PreToolDecision::Deny {
            reason: stderr_reason(run, "blocked by the hook (exit status 2)"),
        }),
        Exit::Code(0) => match read_stdout(run) {
            Stdout::Text(_) => Ok(PreToolDecision::Pass { rewrite: None }),
            Stdout::Invalid(e) => Err(HookFailure::open(e)),
            Stdout::Json(out) => {
                if let Some(message) = string(&out, "systemMessage") {
                    asides.push(notice(message));
                }
                if out.contains_key("updatedInput") {
                    asides.push(notice(
                        "its top-level updatedInput was ignored: a rewrite belongs in hookSpecificOutput.updatedInput".into(),
                    ));
                }
                match specific(&out, "PreToolUse") {
                    Err(e) => Err(HookFailure::open(e)),
                    Ok(specific) => pre_decision(&out, specific, hook, &mut asides),
                }
            }
        },
        _ => Err(HookFailure::open(run.failure())),
    };
    (decision, asides)
}

fn pre_decision(
    out: &Map<String, Value>,
    specific: Option<&Map<String, Value>>,
    hook: &str,
    asides: &mut Vec<Aside>,
) -> Result<PreToolDecision, HookFailure> {
    let empty = Map::new();
    let s = specific.unwrap_or(&empty);
    if let Some(text) = string(s, "additionalContext") {
        asides.push(Aside::Context {
            hook: hook.to_owned(),
            text,
        });
    }
    if out.get("continue") == Some(&Value::Bool(false)) {
        let reason =
            string(out, "stopReason").unwrap_or_else(|| "the hook stopped the turn".into());
        asides.push(Aside::StopTurn {
            hook: hook.to_owned(),
            reason: reason.clone(),
        });
        return Ok(PreToolDecision::Deny { reason });
    }
    let rewrite = match s.get("updatedInput") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            return Err(HookFailure::open(
                "its updatedInput is not an object".to_owned(),
            ));
        }
    };
    let reason = string(s, "permissionDecisionReason").or_else(|| string(out, "reason"));
    let ignored = if rewrite.is_some() {
        " (its updatedInput was ignored: a denying hook cannot rewrite)"
    } else {
        ""
    };
    let deny = |reason: Option<String>| PreToolDecision::Deny {
        reason: format!(
            "{}{ignored}",
            reason.unwrap_or_else(|| "denied by the hook".into())
        ),
    };
    match s.get("permissionDecision").and_then(Value::as_str) {
        Some("allow") => Ok(PreToolDecision::Allow { reason, rewrite }),
        Some("ask") => Ok(PreToolDecision::Ask { reason, rewrite }),
        Some("deny") => Ok(deny(reason)),
        Some("defer") => {
            asides.push(Aside::Notice {
                hook: hook.to_owned(),
                text: "permissionDecision \"defer\" works only in Claude Code's print mode; candor treats it as no decision".into(),
            });
            Ok(PreToolDecision::Pass { rewrite })
        }
        Some(other) => Err(HookFailure::open(format!(
            "its permissionDecision {other:?} is not allow, deny, ask or defer"
        ))),
        // The deprecated top-level form.
        None => match out.get("decision").and_then(Value::as_str) {
            Some("approve") => Ok(PreToolDecision::Allow { reason, rewrite }),
            Some("block") => Ok(deny(reason)),
            Some(other) => Err(HookFailure::open(format!(
                "its decision {other:?} is not approve or block"
            ))),
            None => Ok(PreToolDecision::Pass { rewrite }),
        },
    }
}

/// What a PostToolUse hook's run means.
pub fn post_tool_use(run: &HookRun, hook: &str) -> (Result<PostToolDecision, String>, Vec<Aside>) {
    let mut asides = Vec::new();
    let decision = match run.exit {
        Exit::Code(2) => Ok(PostToolDecision::Block {
            reason: stderr_reason(run, "the hook objected to this result (exit status 2)"),
        }),
        Exit::Code(0) => match read_stdout(run) {
            Stdout::Text(_) => Ok(PostToolDecision::Accept { context: None }),
            Stdout::Invalid(e) => Err(e),
            Stdout::Json(out) => {
                if let Some(text) = string(&out, "systemMessage") {
                    asides.push(Aside::Notice {
                        hook: hook.to_owned(),
                        text,
                    });
                }
                if out.get("continue") == Some(&Value::Bool(false)) {
                    asides.push(Aside::StopTurn {
                        hook: hook.to_owned(),
                        reason: string(&out, "stopReason")
                            .unwrap_or_else(|| "the hook stopped the turn".into()),
                    });
                }
                match specific(&out, "PostToolUse") {
                    Err(e) => Err(e),
                    Ok(s) => {
                        let context = s.and_then(|s| string(s, "additionalContext"));
                        match out.get("decision").and_then(Value::as_str) {
                            Some("block") => Ok(PostToolDecision::Block {
                                reason: string(&out, "reason")
                                    .unwrap_or_else(|| "the hook objected to this result".into()),
                            }),
                            _ => Ok(PostToolDecision::Accept { context }),
                        }
                    }
                }
            }
        },
        _ => Err(run.failure()),
    };
    (decision, asides)
}

/// What a hook's run on a session event means.
pub fn session_event(event: SessionEvent, run: &HookRun) -> EventAnswer {
    let mut answer = EventAnswer::default();
    let blocks = matches!(event, SessionEvent::UserPromptSubmit | SessionEvent::Stop);
    // Plain text on exit 0 is context where Claude Code makes it context.
    let text_is_context = matches!(
        event,
        SessionEvent::UserPromptSubmit | SessionEvent::SessionStart
    );
    match run.exit {
        Exit::Code(2) if blocks => {
            answer.block = Some(stderr_reason(run, "blocked by the hook (exit status 2)"));
        }
        Exit::Code(2) => {
            if !run.stderr.trim().is_empty() {
                answer.notices.push(run.stderr.trim().to_owned());
            }
        }
        Exit::Code(0) => match read_stdout(run) {
            Stdout::Text(text) => {
                if text_is_context && !text.is_empty() {
                    answer.context = Some(text);
                }
            }
            Stdout::Invalid(e) => answer.notices.push(format!("the hook failed: {e}")),
            Stdout::Json(out) => {
                if let Some(text) = string(&out, "systemMessage") {
                    answer.notices.push(text);
                }
                match specific(&out, event.name()) {
                    Err(e) => answer.notices.push(format!("the hook failed: {e}")),
                    Ok(s) => answer.context = s.and_then(|s| string(s, "additionalContext")),
                }
                if blocks {
                    if out.get("decision").and_then(Value::as_str) == Some("block") {
                        answer.block = Some(
                            string(&out, "reason").unwrap_or_else(|| "blocked by the hook".into()),
                        );
                    } else if event == SessionEvent::UserPromptSubmit
                        && out.get("continue") == Some(&Value::Bool(false))
                    {
                        answer.block = Some(
                            string(&out, "stopReason")
                                .unwrap_or_else(|| "the hook stopped the prompt".into()),
                        );
                    }
                }
            }
        },
        _ => answer.notices.push(format!(
            "the hook failed and was passed over: it {}",
            run.failure()
        )),
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            exit: Exit::Code(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            truncated: false,
            duration: Duration::ZERO,
        }
    }

    fn pre(
        code: i32,
        stdout: &str,
        stderr: &str,
    ) -> (Result<PreToolDecision, HookFailure>, Vec<Aside>) {
        pre_tool_use(&run(code, stdout, stderr), "h")
    }

    #[test]
    fn allow_with_updated_input_rewrites_and_the_reason_is_kept() {
        let out = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "RTK auto-rewrite", "updatedInput": {"command": "rtk git status"}}});
        let (d, asides) = pre(0, &out.to_string(), "");
        assert_eq!(
            d,
            Ok(PreToolDecision::Allow {
                reason: Some("RTK auto-rewrite".into()),
                rewrite: Some(json!({"command": "rtk git status"}))
            })
        );
        assert!(asides.is_empty());
    }

    #[test]
    fn exit_two_blocks_with_stderr_and_ignores_stdout() {
        let (d, _) = pre(
            2,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#,
            "BLOCKED: use pnpm\n",
        );
        assert_eq!(
            d,
            Ok(PreToolDecision::Deny {
                reason: "BLOCKED: use pnpm".into()
            })
        );
    }

    #[test]
    fn broken_hooks_fail_open_with_the_reason() {
        let (d, _) = pre(1, "", "boom\nmore");
        assert_eq!(d, Err(HookFailure::open("exited with status 1: boom")));
        let (d, _) = pre(0, "{not json", "");
        assert!(
            matches!(
                d,
                Err(HookFailure {
                    fail_open: true,
                    ..
                })
            ),
            "{d:?}"
        );
        let (d, _) = pre(0, "all good, carry on", "");
        assert_eq!(d, Ok(PreToolDecision::Pass { rewrite: None }));
        let wrong = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}});
        let (d, _) = pre(0, &wrong.to_string(), "");
        assert_eq!(
            d,
            Err(HookFailure::open(
                "its hookSpecificOutput is for PostToolUse, not PreToolUse"
            ))
        );
    }

    #[test]
    fn deny_ignores_a_rewrite_and_says_so_and_legacy_forms_map() {
        let out = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no", "updatedInput": {"command": "x"}}});
        let (d, _) = pre(0, &out.to_string(), "");
        let Ok(PreToolDecision::Deny { reason }) = d else {
            panic!("{d:?}")
        };
        assert!(
            reason.starts_with("no (its updatedInput was ignored"),
            "{reason}"
        );
        let (d, _) = pre(0, r#"{"decision":"block","reason":"legacy no"}"#, "");
        assert_eq!(
            d,
            Ok(PreToolDecision::Deny {
                reason: "legacy no".into()
            })
        );
        let (d, _) = pre(0, r#"{"decision":"approve"}"#, "");
        assert_eq!(
            d,
            Ok(PreToolDecision::Allow {
                reason: None,
                rewrite: None
            })
        );
        // A misplaced updatedInput is ignored, with a notice.
        let (d, asides) = pre(
            0,
            r#"{"decision":"approve","updatedInput":{"command":"y"}}"#,
            "",
        );
        assert_eq!(
            d,
            Ok(PreToolDecision::Allow {
                reason: None,
                rewrite: None
            })
        );
        assert!(
            matches!(&asides[0], Aside::Notice { text, .. } if text.contains("top-level updatedInput"))
        );
    }

    #[test]
    fn a_rewrite_without_a_decision_applies_and_continue_false_stops() {
        let out = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls -la"}}});
        let (d, _) = pre(0, &out.to_string(), "");
        assert_eq!(
            d,
            Ok(PreToolDecision::Pass {
                rewrite: Some(json!({"command": "ls -la"}))
            })
        );
        let (d, asides) = pre(
            0,
            r#"{"continue":false,"stopReason":"out of budget","systemMessage":"bye"}"#,
            "",
        );
        assert_eq!(
            d,
            Ok(PreToolDecision::Deny {
                reason: "out of budget".into()
            })
        );
        assert_eq!(
            asides,
            vec![
                Aside::Notice {
                    hook: "h".into(),
                    text: "bye".into()
                },
                Aside::StopTurn {
                    hook: "h".into(),
                    reason: "out of budget".into()
                }
            ]
        );
    }

    #[test]
    fn session_events_block_and_add_context() {
        let blocked = session_event(
            SessionEvent::UserPromptSubmit,
            &run(2, "", "no secrets in prompts\n"),
        );
        assert_eq!(blocked.block.as_deref(), Some("no secrets in prompts"));
        let context = session_event(SessionEvent::SessionStart, &run(0, "branch: main\n", ""));
        assert_eq!(context.context.as_deref(), Some("branch: main"));
        let stop = session_event(
            SessionEvent::Stop,
            &run(0, r#"{"decision":"block","reason":"tests still fail"}"#, ""),
        );
        assert_eq!(stop.block.as_deref(), Some("tests still fail"));
        let plain_stop = session_event(SessionEvent::Stop, &run(0, "whatever", ""));
        assert_eq!(
            plain_stop,
            EventAnswer::default(),
            "plain text on Stop is not context"
        );
        let failed = session_event(SessionEvent::SessionEnd, &run(7, "", "disk full"));
        assert_eq!(
            failed.notices,
            ["the hook failed and was passed over: it exited with status 7: disk full"]
        );
    }
}
