//! What the bridges share: reading a hook table (`{"PreToolUse": [{"matcher",
//! "hooks": [{"type": "command", …}]}]}`, the format Claude Code and Codex
//! both use) into [`CommandHook`]s, and the hook itself, which plugs into
//! the interception seam. What a hook is shown and what its answer means
//! depend on its [`Dialect`], implemented in `claude.rs` and `codex.rs`;
//! this file calls a dialect and never asks which one it is.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::runner::{self, HookCommand, HookRun};
use super::session_context::SessionContext;
use crate::interception::Subject;
use crate::interception::policy::{Mode, Rule};
use crate::interception::session_hooks::EventAnswer;
use crate::interception::session_hooks::{EventFuture, EventHook, EventInput, SessionEvent};
use crate::interception::{
    Aside, FinishedCall, HookFailure, HookFuture, PostHookFuture, PostToolDecision, PostToolHook,
    PreToolDecision, PreToolHook, ProposedCall,
};

/// A command hook's timeout when none is configured (both upstreams).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// One upstream's hook rules: what Claude Code and Codex do differently
/// with the same hook table (each in its own file, `claude.rs`, `codex.rs`).
pub trait Dialect: std::fmt::Debug + Sync {
    /// How notices name the tool (`Claude Code`, `Codex`).
    fn name(&self) -> &'static str;
    /// Characters that keep a matcher a list of exact names.
    fn exact(&self) -> fn(char) -> bool;
    /// Whether handlers may give `args` (exec form) and `if` filters, and
    /// `${CLAUDE_PROJECT_DIR}` is put in.
    fn claude_handlers(&self) -> bool;
    /// The keys a handler's timeout may be given under, and its least value.
    fn timeout(&self) -> (&'static [&'static str], f64);
    /// The names a tool hook's matcher is tried on for a call of `tool`;
    /// empty: this dialect shows hooks no such call.
    fn matched_names(&self, tool: &str) -> Vec<String>;
    /// Its own fields in every input.
    fn add_fields(&self, session: &SessionContext, input: &mut Map<String, Value>);
    /// Its own variables for a hook of `event`.
    fn env(&self, session: &SessionContext, event: HookEvent) -> Vec<(String, String)>;
    /// Whether output starting with `[` is JSON too.
    fn json_arrays(&self) -> bool;
    /// Runs a PreToolUse hook on `call` (`input`: the common fields) and
    /// reads its answer.
    fn pre_tool_use<'a>(
        &'a self,
        hook: &'a CommandHook,
        call: ProposedCall<'a>,
        input: Map<String, Value>,
    ) -> DialectFuture<'a, Result<PreToolDecision, HookFailure>>;
    /// Runs a PostToolUse hook on `call` and reads its answer.
    fn post_tool_use<'a>(
        &'a self,
        hook: &'a CommandHook,
        call: FinishedCall<'a>,
        input: Map<String, Value>,
    ) -> DialectFuture<'a, Result<PostToolDecision, String>>;
    /// What a hook's run on a session event means.
    fn session_event(&self, event: SessionEvent, run: &HookRun) -> EventAnswer;
}

/// A dialect's answer to a tool event, with what the hook said beside it.
pub type DialectFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = (T, Vec<Aside>)> + Send + 'a>>;

/// Whose rules a hook follows.
pub type Flavor = &'static dyn Dialect;

/// The hook events candor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    Session(SessionEvent),
}

impl HookEvent {
    pub fn parse(name: &str) -> Option<HookEvent> {
        Some(match name {
            "PreToolUse" => HookEvent::PreToolUse,
            "PostToolUse" => HookEvent::PostToolUse,
            "UserPromptSubmit" => HookEvent::Session(SessionEvent::UserPromptSubmit),
            "Stop" => HookEvent::Session(SessionEvent::Stop),
            "SessionStart" => HookEvent::Session(SessionEvent::SessionStart),
            "SessionEnd" => HookEvent::Session(SessionEvent::SessionEnd),
            "SubagentStart" => HookEvent::Session(SessionEvent::SubagentStart),
            "SubagentStop" => HookEvent::Session(SessionEvent::SubagentStop),
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
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

/// When a configured hook runs: its group's matcher and its `if` filter.
#[derive(Debug, Clone)]
struct Condition {
    matcher: Matcher,
    /// The `if` permission rule (Claude Code, tool events only).
    filter: Option<Rule>,
    /// An `if` on an event that is not a tool event: never runs.
    never: bool,
}

/// A loaded hook as `candor doctor` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSummary {
    /// `Claude Code` or `Codex`.
    pub tool: String,
    /// The settings it came from (`user`, `project`, `Codex user`, …).
    pub source: String,
    pub event: String,
    /// Each matcher it was configured with (with any `if` filter).
    pub matchers: Vec<String>,
    pub command: String,
    pub timeout_secs: u64,
    /// Why it may never run (a matcher no tool candor offers matches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// One command hook for one event, with every place it was configured.
#[derive(Debug)]
pub struct CommandHook {
    id: String,
    flavor: Flavor,
    event: HookEvent,
    command: HookCommand,
    conditions: Vec<Condition>,
    session: Arc<SessionContext>,
}

/// What reading hook tables found, across a bridge's files.
#[derive(Debug, Default)]
pub struct Table {
    pub hooks: Vec<CommandHook>,
    pub problems: Vec<String>,
    pub remarks: Vec<String>,
    unsupported_events: BTreeSet<String>,
    unsupported_types: BTreeSet<String>,
}

impl Table {
    /// Reads one file's hook table (`hooks`, already parsed) into hooks;
    /// `source` names the file in hook ids (`user`, `project`, …).
    pub fn read(
        &mut self,
        flavor: Flavor,
        hooks: &Value,
        file: &Path,
        source: &str,
        session: &Arc<SessionContext>,
    ) {
        let tool = flavor.name();
        let Some(events) = hooks.as_object() else {
            self.problems.push(format!(
                "{tool} settings {}: `hooks` is not a table; its hooks were skipped",
                file.display()
            ));
            return;
        };
        for (event_name, groups) in events {
            let Some(event) = HookEvent::parse(event_name) else {
                self.unsupported_events.insert(event_name.clone());
                continue;
            };
            let Some(groups) = groups.as_array() else {
                self.problems.push(format!(
                    "{tool} settings {}: hooks.{event_name} is not a list; skipped",
                    file.display()
                ));
                continue;
            };
            for (g, group) in groups.iter().enumerate() {
                let at = format!("hooks.{event_name}[{g}]");
                if let Err(problem) =
                    self.read_group(flavor, event, group, &at, file, source, session)
                {
                    self.problems.push(format!(
                        "{tool} settings {}: {at}{problem}; skipped",
                        file.display()
                    ));
                }
            }
        }
    }

    /// One matcher group. Problems with single handlers are pushed as they
    /// are met (the others still load); an `Err` skips the whole group.
    #[allow(clippy::too_many_arguments)]
    fn read_group(
        &mut self,
        flavor: Flavor,
        event: HookEvent,
        group: &Value,
        at: &str,
        file: &Path,
        source: &str,
        session: &Arc<SessionContext>,
    ) -> Result<(), String> {
        let matcher_text = match group.get("matcher") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(": `matcher` is not a string".into()),
        };
        let matcher = Matcher::parse(matcher_text, flavor.exact()).map_err(|e| format!(": {e}"))?;
        let handlers = group
            .get("hooks")
            .and_then(Value::as_array)
            .ok_or(": `hooks` is not a list")?;
        for (h, handler) in handlers.iter().enumerate() {
            let at = format!("{at}.hooks[{h}]");
            let located = format!("{} settings {}: {at}", flavor.name(), file.display());
            if let Err(problem) =
                self.read_handler(flavor, event, handler, &matcher, &located, source, session)
            {
                self.problems.push(format!("{located}: {problem}; skipped"));
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn read_handler(
        &mut self,
        flavor: Flavor,
        event: HookEvent,
        handler: &Value,
        matcher: &Matcher,
        at: &str,
        source: &str,
        session: &Arc<SessionContext>,
    ) -> Result<(), String> {
        let kind = handler.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "command" {
            if kind.is_empty() {
                return Err("no `type`".into());
            }
            self.unsupported_types.insert(kind.to_owned());
            return Ok(());
        }
        if handler.get("enabled") == Some(&Value::Bool(false)) {
            return Ok(());
        }
        let command = parse_command(flavor, handler, &session.project_dir)?;
        let filter_text = handler
            .get("if")
            .and_then(Value::as_str)
            .filter(|_| flavor.claude_handlers());
        let (filter, never) = match filter_text {
            None => (None, false),
            Some(_) if !event.is_tool_event() => (None, true),
            Some(rule) => {
                match Rule::parse(rule, &session.project_dir, session.home.as_deref()) {
                    Ok(r) => (Some(r), false),
                    Err(e) => {
                        // Run the hook when unsure, as Claude Code does.
                        self.remarks.push(format!(
                            "{at}: its `if` filter cannot be read ({e}); the hook runs for every match"
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
        match self.hooks.iter_mut().find(|k| {
            k.flavor.name() == flavor.name()
                && k.event == event
                && k.command.command == command.command
                && k.command.args == command.args
        }) {
            Some(existing) => existing.conditions.push(condition),
            None => self.hooks.push(CommandHook {
                id: format!("{} ({source} settings)", command.label()),
                flavor,
                event,
                command,
                conditions: vec![condition],
                session: session.clone(),
            }),
        }
        Ok(())
    }

    /// The notices for what was skipped, once per session.
    pub fn finish(&mut self, flavor: Flavor) {
        if !self.unsupported_events.is_empty() {
            let list: Vec<String> = std::mem::take(&mut self.unsupported_events)
                .into_iter()
                .collect();
            self.remarks.push(format!(
                "{} hooks for {} are not run by candor (it runs PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart, SessionEnd, SubagentStart and SubagentStop)",
                flavor.name(),
                list.join(", ")
            ));
        }
        if !self.unsupported_types.is_empty() {
            let list: Vec<String> = std::mem::take(&mut self.unsupported_types)
                .into_iter()
                .collect();
            self.problems.push(format!(
                "{} hooks of type {} are not supported by candor and were skipped (only `command` hooks run)",
                flavor.name(),
                list.join(", ")
            ));
        }
    }
}

/// A handler's command, exec-form arguments (Claude Code only) and
/// timeout; Claude Code's `${CLAUDE_PROJECT_DIR}` is put in.
fn parse_command(flavor: Flavor, handler: &Value, project: &Path) -> Result<HookCommand, String> {
    let project = project.display().to_string();
    let expand = |s: &str| {
        if flavor.claude_handlers() {
            s.replace("${CLAUDE_PROJECT_DIR}", &project)
        } else {
            s.to_owned()
        }
    };
    let command = match handler.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => expand(c),
        _ => return Err("a command hook needs a non-empty `command` string".into()),
    };
    let args = match handler.get("args").filter(|_| flavor.claude_handlers()) {
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
    let (keys, least) = flavor.timeout();
    let configured = keys.iter().find_map(|k| handler.get(*k));
    let timeout = match configured {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => {
                let s = s.max(least);
                Duration::from_secs_f64(s.min(86_400.0))
            }
            _ => return Err("`timeout` must be a positive number of seconds".into()),
        },
    };
    Ok(HookCommand {
        command,
        args,
        timeout,
    })
}

impl CommandHook {
    pub fn event(&self) -> HookEvent {
        self.event
    }

    /// The hook, described for `candor doctor`.
    /// The whole command: shell form as written, exec form as its JSON list.
    fn command_line(&self) -> String {
        match &self.command.args {
            None => self.command.command.clone(),
            Some(args) => {
                let mut all = vec![self.command.command.clone()];
                all.extend(args.iter().cloned());
                serde_json::to_string(&all).unwrap_or_default()
            }
        }
    }

    /// Each matcher it was configured with, with any `if` filter.
    fn matchers(&self) -> Vec<String> {
        self.conditions
            .iter()
            .map(|c| match &c.filter {
                Some(rule) => format!("{} if {}", c.matcher.describe(), rule.text()),
                None => c.matcher.describe(),
            })
            .collect()
    }

    /// The settings it came from, as its id names them.
    fn source(&self) -> &str {
        self.id
            .rsplit_once(" (")
            .map_or("", |(_, s)| s.trim_end_matches(')'))
    }

    pub fn summary(&self) -> HookSummary {
        let command = self.command_line();
        let matchers = self.matchers();
        let tools: Vec<&str> = crate::tools::Tool::ALL
            .iter()
            .map(|t| t.name())
            .chain(["apply_patch"])
            .collect();
        let matches_a_tool = self
            .conditions
            .iter()
            .any(|c| !c.never && tools.iter().any(|t| c.matcher.matches(t)));
        let warning = if !self.event.is_tool_event() || matches_a_tool {
            None
        } else if self
            .conditions
            .iter()
            .any(|c| c.matcher.describe().contains("mcp__"))
        {
            Some("it matches only MCP tools; candor offers none yet, so it never runs".into())
        } else {
            Some(format!(
                "its matcher matches none of candor's tools ({}), so it never runs",
                tools[..tools.len() - 1].join(", ")
            ))
        };
        HookSummary {
            tool: self.flavor.name().to_owned(),
            source: self.source().trim_end_matches(" settings").to_owned(),
            event: self.event.name().to_owned(),
            matchers,
            command,
            timeout_secs: self.command.timeout.as_secs(),
            warning,
        }
    }

    /// What running this hook means, for a user deciding whether to trust
    /// the settings it came from: the event, what it matches, the whole
    /// command (an exec form as its JSON list), its timeout and its source.
    /// Nothing is shortened: an answer binds to the digest of this text.
    pub fn wanted(&self) -> String {
        format!(
            "{} hook ({}): {}  [{}; timeout {} s]",
            self.event.name(),
            self.matchers().join(", "),
            self.command_line(),
            self.source(),
            self.command.timeout.as_secs()
        )
    }

    /// The paths this hook's command names, as candor can see them: every
    /// word of every command the shell would run (the program and its
    /// arguments, also inside `bash -c` strings and behind wrappers) and
    /// every file it reads its input from, with `$CLAUDE_PROJECT_DIR` put
    /// in and relative paths taken from the project (where hooks run). An
    /// exec-form hook names its program and arguments. Which of them are
    /// files of the project, and what they hold, `trust::covered` says.
    pub fn named_paths(&self) -> Vec<std::path::PathBuf> {
        let project = &self.session.project_dir;
        let shown = project.display().to_string();
        let words: Vec<String> = match &self.command.args {
            Some(args) => std::iter::once(self.command.command.clone())
                .chain(args.iter().cloned())
                .collect(),
            None => {
                let line = self
                    .command
                    .command
                    .replace("${CLAUDE_PROJECT_DIR}", &shown)
                    .replace("$CLAUDE_PROJECT_DIR", &shown);
                let script = crate::shell::parse(&line);
                let mut words: Vec<String> = script
                    .all_commands()
                    .into_iter()
                    .flat_map(|c| c.words.iter().filter_map(crate::shell::Word::text))
                    .collect();
                words.extend(
                    script
                        .all_redirects()
                        .into_iter()
                        .filter(|r| !r.writes)
                        .filter_map(|r| r.target.text()),
                );
                words
            }
        };
        let mut paths: Vec<std::path::PathBuf> = Vec::new();
        for word in words {
            if word.is_empty() || word.starts_with('-') || word.contains('\0') {
                continue;
            }
            let path = crate::tools::resolve(project, &word);
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        paths
    }

    fn tool_applies(&self, call: &Subject<'_>, root: &Path) -> bool {
        let names = self.flavor.matched_names(call.name);
        self.conditions.iter().any(|c| {
            !c.never
                && names.iter().any(|n| c.matcher.matches(n))
                && c.filter
                    .as_ref()
                    .is_none_or(|rule| rule.matches_call(call, root))
        })
    }

    /// The fields every event's input has (a subagent's call's also
    /// `agent_id` and `agent_type`, as Claude Code sends them).
    fn input(
        &self,
        cwd: &Path,
        mode: Mode,
        agent: Option<&crate::subagents::Delegate>,
    ) -> Map<String, Value> {
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session.session_id));
        if let Some(agent) = agent {
            input.insert("agent_id".into(), json!(agent.agent_id));
            input.insert("agent_type".into(), json!(agent.agent_type));
        }
        self.flavor.add_fields(&self.session, &mut input);
        input.insert(
            "transcript_path".into(),
            json!(self.session.transcript_path.display().to_string()),
        );
        input.insert("cwd".into(), json!(cwd.display().to_string()));
        input.insert("permission_mode".into(), json!(mode.id()));
        input.insert("hook_event_name".into(), json!(self.event.name()));
        input
    }

    /// Runs the hook's command with `input` on stdin.
    pub(crate) async fn run(&self, input: Map<String, Value>, cwd: &Path) -> HookRun {
        let env = self.flavor.env(&self.session, self.event);
        runner::run(&self.command, &Value::Object(input), cwd, &env).await
    }

    /// The hook's id (its command and settings file).
    pub(crate) fn id_str(&self) -> &str {
        &self.id
    }
}

impl PreToolHook for CommandHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn applies_to(&self, call: &ProposedCall<'_>) -> bool {
        self.tool_applies(&call.subject, call.cwd)
    }

    fn check<'a>(&'a self, call: ProposedCall<'a>) -> HookFuture<'a> {
        Box::pin(async move {
            let input = self.input(call.cwd, call.mode, call.agent);
            let (decision, asides) = self.flavor.pre_tool_use(self, call, input).await;
            for aside in asides {
                call.asides.push(aside);
            }
            decision
        })
    }
}

impl PostToolHook for CommandHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn applies_to(&self, call: &FinishedCall<'_>) -> bool {
        self.tool_applies(&call.subject, call.cwd)
    }

    fn after<'a>(&'a self, call: FinishedCall<'a>) -> PostHookFuture<'a> {
        Box::pin(async move {
            let input = self.input(call.cwd, call.mode, call.agent);
            let (decision, asides) = self.flavor.post_tool_use(self, call, input).await;
            for aside in asides {
                call.asides.push(aside);
            }
            decision
        })
    }
}

impl EventHook for CommandHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn event(&self) -> SessionEvent {
        match self.event {
            HookEvent::Session(event) => event,
            // Tool events are never event hooks (`Loaded::add`).
            HookEvent::PreToolUse | HookEvent::PostToolUse => SessionEvent::SessionStart,
        }
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
            let mut input = self.input(event.cwd, event.mode, None);
            input.extend(event.fields.clone());
            let run = CommandHook::run(self, input, event.cwd).await;
            self.flavor.session_event(event.event, &run)
        })
    }
}

/// How a run's stdout reads: a JSON object, plain text, or broken JSON.
pub(crate) enum Stdout {
    Json(Map<String, Value>),
    Text(String),
    Invalid(String),
}

/// Reads stdout as both upstreams do: JSON when it starts with `{` (Codex:
/// or `[`), else text.
pub(crate) fn read_stdout(run: &HookRun, flavor: Flavor) -> Stdout {
    let text = run.stdout.trim_start();
    let json_like = text.starts_with('{') || (flavor.json_arrays() && text.starts_with('['));
    if !json_like {
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
pub(crate) fn specific<'a>(
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

/// What both upstreams read beside a decision in a JSON answer:
/// `systemMessage` (a message for the user) and `continue: false` with
/// `stopReason` (the turn ends).
pub(crate) fn common_asides(out: &Map<String, Value>, hook: &str) -> Vec<Aside> {
    let mut asides = Vec::new();
    if let Some(text) = string(out, "systemMessage") {
        asides.push(Aside::Message {
            hook: hook.to_owned(),
            text,
        });
    }
    if out.get("continue") == Some(&Value::Bool(false)) {
        asides.push(Aside::StopTurn {
            hook: hook.to_owned(),
            reason: string(out, "stopReason").unwrap_or_else(|| "the hook stopped the turn".into()),
        });
    }
    asides
}

/// The tool fields of a tool event's input.
pub(crate) fn tool_fields(input: &mut Map<String, Value>, name: &str, tool_input: Value, id: &str) {
    input.insert("tool_name".into(), json!(name));
    input.insert("tool_input".into(), tool_input);
    input.insert("tool_use_id".into(), json!(id));
}

/// A non-empty string field.
pub(crate) fn string(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The reason of an exit-2 block: stderr, or `default`.
pub(crate) fn stderr_reason(run: &HookRun, default: &str) -> String {
    let text = run.stderr.trim();
    if text.is_empty() {
        default.to_owned()
    } else {
        text.to_owned()
    }
}
/// Which tool (or source, or reason) names a hook group applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// `*`, empty, or absent.
    All,
    /// Exact names (`Bash`, `Edit|Write`, `Edit, Write`).
    Names(Vec<String>),
    /// Anything else: an unanchored regular expression.
    Regex(Regex),
}

impl Matcher {
    /// Parses a matcher; `exact` says which characters keep it a list of
    /// names (the bridges differ). An invalid expression is an `Err`; the
    /// hook then never matches, as upstream.
    pub fn parse(text: Option<&str>, exact: fn(char) -> bool) -> Result<Matcher, String> {
        let text = text.map(str::trim).unwrap_or("");
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        if text.chars().all(exact) {
            return Ok(Matcher::Names(
                text.split(['|', ','])
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ));
        }
        Regex::new(text)
            .map(Matcher::Regex)
            .map_err(|e| format!("the matcher {text:?} is not a valid regular expression: {e}"))
    }

    /// The matcher as configured: `*`, names joined by `|`, or the
    /// expression.
    pub fn describe(&self) -> String {
        match self {
            Matcher::All => "*".into(),
            Matcher::Names(names) => names.join("|"),
            Matcher::Regex(re) => re.as_str().to_owned(),
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == name),
            Matcher::Regex(re) => re.is_match(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude_exact(c: char) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|')
    }

    #[test]
    fn matchers_follow_claude_code() {
        let m = |t: Option<&str>| Matcher::parse(t, claude_exact).unwrap();
        assert!(
            m(None).matches("Bash") && m(Some("")).matches("Read") && m(Some("*")).matches("x")
        );
        assert!(m(Some("Edit|Write")).matches("Write"));
        assert!(m(Some("Edit, Write")).matches("Edit"));
        assert!(
            !m(Some("Edit|Write")).matches("MultiEdit"),
            "names are exact"
        );
        assert!(
            m(Some("Edit.*")).matches("NotebookEdit"),
            "regexes are unanchored"
        );
        assert!(!m(Some("^Edit$")).matches("NotebookEdit"));
        assert!(m(Some("mcp__memory__.*")).matches("mcp__memory__create"));
        assert!(
            !m(Some("mcp__memory")).matches("mcp__memory__create"),
            "bare is exact"
        );
        assert!(Matcher::parse(Some("(unclosed"), claude_exact).is_err());
    }
}
