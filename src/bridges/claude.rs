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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::hook::{
    CommandHook, Dialect, DialectFuture, HookEvent, Stdout, Table, common_asides, read_stdout,
    specific, stderr_reason, string, tool_fields,
};
use super::loaded::Loaded;
use super::runner::{Exit, HookRun};
use super::session_context::SessionContext;
use crate::config::ClaudeLocations;
use crate::event_log::ResultStatus;
use crate::interception::policy::Mode;
use crate::interception::session_hooks::{EventAnswer, SessionEvent};
use crate::interception::{Aside, FinishedCall, HookFailure, PostToolDecision, PreToolDecision};

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

/// Reads every settings file and builds the session's Claude Code hooks
/// and rules (see the module docs for the order and the precedence).
///
/// Unless `trusted` (`bridges::project_trust`), the project's files give only what
/// restricts (deny and ask rules, `plan` mode, turning off their own
/// hooks); their hooks, allow rules and a mode that asks less are
/// [`Loaded::wants`], listed whether applied or not.
pub fn load(locations: &ClaudeLocations, session: &Arc<SessionContext>, trusted: bool) -> Loaded {
    let mut loaded = Loaded::default();
    let mut settings: Vec<(Source, PathBuf, Map<String, Value>)> = Vec::new();
    for (source, path) in files(locations, &session.project_dir) {
        let text = match super::settings_file::read_settings(&path) {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(e) => {
                loaded.problems.push(format!(
                    "Claude Code settings {}: {e}; skipped",
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
    // A project's own files (a repository just cloned) turn off only the
    // project's hooks, never the user's own guard hooks or managed ones,
    // and never turn back on what the user turned off.
    let project_file = |s: Source| matches!(s, Source::Project | Source::Local);
    // Scalars: the most specific source that sets one decides.
    let disabled = settings
        .iter()
        .rev()
        .find_map(|(source, _, map)| match map.get("disableAllHooks") {
            Some(Value::Bool(true)) => Some(Some(*source)),
            Some(Value::Bool(false)) if !project_file(*source) => Some(None),
            _ => None,
        })
        .flatten();
    let managed_only = settings.iter().any(|(s, _, m)| {
        *s == Source::Managed && m.get("allowManagedHooksOnly") == Some(&json!(true))
    });
    let runs = |source: Source| {
        let off = match disabled {
            Some(Source::Managed) => true,
            Some(Source::User) => source != Source::Managed,
            Some(_) => project_file(source),
            None => false,
        };
        !off && (!managed_only || source == Source::Managed)
    };
    if let Some(by) = disabled {
        loaded.remarks.push(
            format!(
                "Claude Code hooks {} are off here (disableAllHooks in the {} settings){}",
                if project_file(by) {
                    "of this project"
                } else {
                    ""
                },
                by.name(),
                match by {
                    Source::Managed => "",
                    Source::User => "; managed hooks still run",
                    _ => "; a project's settings never turn off your own or managed hooks",
                }
            )
            .replace("hooks  are", "hooks are"),
        );
    }
    let mut table = Table::default();
    // What the project's files would add: listed always (it is what trust
    // gives, and what the answer binds to), applied only when trusted.
    let mut wanted = Table::default();
    for (source, path, map) in &settings {
        let project = project_file(*source);
        read_permissions(&mut loaded, path, map, project, trusted);
        if let Some(sandbox) = map.get("sandbox").filter(|v| v.is_object()) {
            loaded.sandbox.push(crate::sandbox::Layer::claude(
                path.display().to_string(),
                project,
                sandbox,
                &session.project_dir,
                session.home.as_deref(),
            ));
        }
        if runs(*source)
            && let Some(hooks) = map.get("hooks")
        {
            if project {
                wanted.read(&CLAUDE, hooks, path, source.name(), session);
            }
            if trusted || !project {
                table.read(&CLAUDE, hooks, path, source.name(), session);
            }
        }
    }
    table.finish(&CLAUDE);
    loaded.add(table);
    loaded.wants.extend(wanted.hooks.iter().map(|h| h.wanted()));
    loaded
        .scripts
        .extend(wanted.hooks.iter().flat_map(|h| h.named_paths()));
    read_mode(&mut loaded, &settings, trusted);
    loaded
}

/// The starting mode: the most specific source that sets one, except that
/// a project never sets `bypassPermissions`, and, untrusted, sets only a
/// mode stricter than the user's (`plan`); a looser one is a want.
fn read_mode(
    loaded: &mut Loaded,
    settings: &[(Source, PathBuf, Map<String, Value>)],
    trusted: bool,
) {
    let project_file = |s: Source| matches!(s, Source::Project | Source::Local);
    let pick = |project: bool| {
        settings.iter().rev().find_map(|(source, _, map)| {
            (project_file(*source) == project)
                .then(|| map.get("permissions").and_then(|p| p.get("defaultMode")))
                .flatten()
                .map(|v| (*source, v.clone()))
        })
    };
    let mut mode_of = |(source, value): (Source, Value)| -> Option<(Source, Mode)> {
        let mode = value.as_str().and_then(Mode::from_id);
        if mode.is_none() {
            loaded.problems.push(format!(
                "Claude Code {} settings: permissions.defaultMode {value} is not a mode candor has (default, acceptEdits, plan, bypassPermissions); ignored",
                source.name()
            ));
        }
        mode.map(|m| (source, m))
    };
    let own = pick(false).and_then(&mut mode_of).map(|(_, m)| m);
    let project = pick(true).and_then(&mut mode_of);
    loaded.default_mode = match project {
        // A repository cannot start its sessions with nothing asking.
        Some((source, Mode::BypassPermissions)) => {
            loaded.problems.push(format!(
                "Claude Code {} settings ask for permissions.defaultMode bypassPermissions; a project's own settings cannot turn that on (set it in your user settings, or choose the mode in the editor)",
                source.name()
            ));
            own
        }
        Some((source, m)) => {
            if m.asks_less_than_default() {
                loaded.wants.push(format!(
                    "starting mode: {}  [Claude Code {} settings]",
                    m.id(),
                    source.name()
                ));
            }
            if trusted || m == Mode::Plan {
                Some(m)
            } else {
                own
            }
        }
        None => own,
    };
}

/// The permission rules of one file. A project's allow rules are wants
/// (listed always), applied only when `trusted`.
fn read_permissions(
    loaded: &mut Loaded,
    path: &Path,
    map: &Map<String, Value>,
    project: bool,
    trusted: bool,
) {
    let Some(permissions) = map.get("permissions") else {
        return;
    };
    for key in ["allow", "ask", "deny"] {
        match permissions.get(key) {
            None => {}
            Some(Value::Array(items)) => {
                for item in items {
                    match item.as_str() {
                        Some(rule) if project && key == "allow" && !trusted => {
                            loaded.wants.push(format!("allow rule: {rule}  [{}]", path.display()))
                        }
                        Some(rule) => {
                            if project && key == "allow" {
                                loaded
                                    .wants
                                    .push(format!("allow rule: {rule}  [{}]", path.display()));
                            }
                            let list = match key {
                                "allow" => &mut loaded.allow,
                                "ask" => &mut loaded.ask,
                                _ => &mut loaded.deny,
                            };
                            list.push((rule.to_owned(), path.to_owned()))
                        }
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

/// What a PostToolUse hook is told the tool returned, in Claude Code's
/// shapes where candor has them (`Bash`: `stdout`, `stderr`, `interrupted`,
/// `isImage`; file tools: `filePath`, `success`), else `{output}`.
pub(crate) fn tool_response(call: &FinishedCall<'_>) -> Value {
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
        // Claude Code's `{url, result, …}` (the status and sizes are on
        // candor's card).
        "WebFetch" => json!({
            "url": call.input.get("url").cloned().unwrap_or(Value::Null),
            "result": call.output,
            "success": call.status == ResultStatus::Completed,
        }),
        _ => json!({"output": call.output, "success": call.status == ResultStatus::Completed}),
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
        Exit::Code(0) => match read_stdout(run, &CLAUDE) {
            Stdout::Text(_) => Ok(PreToolDecision::Pass { rewrite: None }),
            Stdout::Invalid(e) => Err(HookFailure::open(e)),
            Stdout::Json(out) => {
                if let Some(text) = string(&out, "systemMessage") {
                    asides.push(Aside::Message {
                        hook: hook.to_owned(),
                        text,
                    });
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
        Exit::Code(0) => match read_stdout(run, &CLAUDE) {
            Stdout::Text(_) => Ok(PostToolDecision::Accept {
                context: None,
                quiet: false,
            }),
            Stdout::Invalid(e) => Err(e),
            Stdout::Json(out) => {
                asides.extend(common_asides(&out, hook));
                match specific(&out, "PostToolUse") {
                    Err(e) => Err(e),
                    Ok(s) => {
                        let context = s.and_then(|s| string(s, "additionalContext"));
                        match out.get("decision").and_then(Value::as_str) {
                            Some("block") => Ok(PostToolDecision::Block {
                                reason: string(&out, "reason")
                                    .unwrap_or_else(|| "the hook objected to this result".into()),
                            }),
                            _ => Ok(PostToolDecision::Accept {
                                context,
                                quiet: out.get("suppressOutput") == Some(&Value::Bool(true)),
                            }),
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
    let blocks = matches!(
        event,
        SessionEvent::UserPromptSubmit | SessionEvent::Stop | SessionEvent::SubagentStop
    );
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
        Exit::Code(0) => match read_stdout(run, &CLAUDE) {
            Stdout::Text(text) => {
                if text_is_context && !text.is_empty() {
                    answer.context = Some(text);
                }
            }
            Stdout::Invalid(e) => answer.notices.push(format!("the hook failed: {e}")),
            Stdout::Json(out) => {
                if let Some(text) = string(&out, "systemMessage") {
                    answer.messages.push(text);
                }
                answer.quiet = out.get("suppressOutput") == Some(&Value::Bool(true));
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

/// Claude Code's hook rules (the [`Dialect`] of hooks read from its settings).
#[derive(Debug)]
pub struct Claude;

/// The Claude Code dialect.
pub static CLAUDE: Claude = Claude;

impl Dialect for Claude {
    fn name(&self) -> &'static str {
        "Claude Code"
    }

    fn exact(&self) -> fn(char) -> bool {
        |c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|')
    }

    fn claude_handlers(&self) -> bool {
        true
    }

    fn timeout(&self) -> (&'static [&'static str], f64) {
        (&["timeout"], 0.0)
    }

    fn matched_names(&self, tool: &str) -> Vec<String> {
        // Claude Code renamed `Task` to `Agent`; a matcher written for
        // either is tried on a call under either name.
        match tool {
            "Agent" | "Task" => vec!["Agent".into(), "Task".into()],
            _ => vec![tool.to_owned()],
        }
    }

    fn add_fields(&self, _session: &SessionContext, _input: &mut Map<String, Value>) {}

    fn env(&self, session: &SessionContext, event: HookEvent) -> Vec<(String, String)> {
        let mut env = vec![(
            "CLAUDE_PROJECT_DIR".to_owned(),
            session.project_dir.display().to_string(),
        )];
        // A SessionStart hook may leave `export` lines for the session's
        // later commands.
        if event == HookEvent::Session(SessionEvent::SessionStart) {
            let file = &session.env_file;
            if !file.exists() {
                // Beside the log, and like it only the user's.
                let _ = std::os::unix::fs::OpenOptionsExt::mode(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .truncate(false)
                        .write(true),
                    0o600,
                )
                .open(file);
            }
            env.push(("CLAUDE_ENV_FILE".to_owned(), file.display().to_string()));
        }
        env
    }

    fn json_arrays(&self) -> bool {
        false
    }

    fn pre_tool_use<'a>(
        &'a self,
        hook: &'a CommandHook,
        call: crate::interception::ProposedCall<'a>,
        mut input: Map<String, Value>,
    ) -> DialectFuture<'a, Result<PreToolDecision, HookFailure>> {
        Box::pin(async move {
            tool_fields(&mut input, call.tool, call.input.clone(), call.id);
            let run = hook.run(input, call.cwd).await;
            pre_tool_use(&run, hook.id_str())
        })
    }

    fn post_tool_use<'a>(
        &'a self,
        hook: &'a CommandHook,
        call: FinishedCall<'a>,
        mut input: Map<String, Value>,
    ) -> DialectFuture<'a, Result<PostToolDecision, String>> {
        Box::pin(async move {
            tool_fields(&mut input, call.tool, call.input.clone(), call.id);
            input.insert("tool_response".into(), tool_response(&call));
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
                Aside::Message {
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
