//! `Bash {command, description?, timeout?}`: runs `bash -c <command>` in the
//! session's working directory, in its own process group.
//!
//! stdout and stderr share one pipe, so output keeps the order it was
//! written in (as in a terminal); it is kept, streamed to the card and
//! spilled to a file when huge by [`super::output::Capture`] (bounded
//! memory and log whatever the command prints), and handed to the model
//! capped at [`super::MODEL_OUTPUT_MAX`] characters. A non-zero exit fails the card and
//! is told to the model with its code. `timeout` (milliseconds, default
//! 120 000, at most 600 000) ends the whole process group. When the command
//! itself exits, whatever it left running in its group is ended too, after
//! a short drain of its output ([`DRAIN_AFTER_EXIT`]).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use agent_client_protocol_schema::v1::ToolKind;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::confined::Spared;
use super::context::ToolContext;
use super::exec::{self, ProcessGroup};
use super::files::ClientLink;
use super::output::{Capture, Captured};
use super::output::{ToolOutput, cap_for_model};
use super::running::{InRoom, Running};
use super::tool_event::ToolEvent;
use crate::client::Failed;
use crate::conversation::ToolSpec;
use crate::event_log::{OutputFile, ResultStatus};
use agent_client_protocol_schema::v1::{CreateTerminalRequest, EnvVariable};
use tokio_util::sync::CancellationToken;

/// Default `timeout`, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest accepted `timeout`, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// After the command exits, how long its output pipes are still read.
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// The input, as Claude Code defines it, and what its line will run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    pub command: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// Asks to run outside the sandbox: never granted by a permission
    /// answer (`interception::sandbox`).
    #[serde(default, rename = "dangerouslyDisableSandbox")]
    pub dangerously_disable_sandbox: Option<bool>,
    /// `command` read by [`crate::shell::parse`], once, when the input is
    /// parsed ([`parse`]): what hooks' `if` filters, the rules and the
    /// grant offer judge. Never in the arguments (no one can send it).
    #[serde(skip)]
    script: crate::shell::Script,
}

impl BashInput {
    /// What the line will run, as the shell reads it (parsed once, with
    /// the input).
    pub fn script(&self) -> &crate::shell::Script {
        &self.script
    }
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "Bash".into(),
        description: "Runs a bash command in the project's working directory and returns its combined stdout and stderr. Use it for builds, tests, git and file system operations. Output beyond 30000 characters is elided in the middle. Commands run in a sandbox (by default: writes only inside the project and $TMPDIR, no network, nothing left running after the command): a failure the sandbox caused is said in the result. Only the user can lift the sandbox; if a command needs more, ask them.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run"},
                "description": {"type": "string", "description": "What the command does, in 5-10 words"},
                "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Timeout in milliseconds (default 120000, max 600000)"},
                "dangerouslyDisableSandbox": {"type": "boolean", "description": "Asks to run outside the sandbox. Only the user can lift the sandbox (a call with this set is refused and told how they lift it), so set it only when a command failed because of the sandbox, and then ask the user."}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn parse(input: &Value) -> Result<BashInput, String> {
    let parsed: BashInput = parse_input(Tool::Bash, input)?;
    if parsed.command.trim().is_empty() {
        return Err("invalid Bash input: `command` is empty".into());
    }
    match parsed.timeout {
        Some(0) => return Err("invalid Bash input: `timeout` must be at least 1 ms".into()),
        Some(t) if t > MAX_TIMEOUT_MS => {
            return Err(format!(
                "invalid Bash input: `timeout` is {t} ms; the maximum is {MAX_TIMEOUT_MS} ms"
            ));
        }
        _ => {}
    }
    let script = crate::shell::parse(&parsed.command);
    Ok(BashInput { script, ..parsed })
}

pub(crate) fn present(input: &Value, _cwd: &Path) -> Presentation {
    let command = input.get("command").and_then(Value::as_str).unwrap_or("");
    Presentation {
        title: command_title(command),
        kind: ToolKind::Execute,
        locations: Vec::new(),
    }
}

/// Most characters of a command's line a title shows.
const TITLE_MAX: usize = 120;

/// A command as a card title: its first line in backticks, as
/// claude-agent-acp shows it (a client that cuts a title at its first
/// colon, CodeCompanion, keeps one in backticks whole), shortened past
/// [`TITLE_MAX`] characters, and how many lines more it has.
fn command_title(command: &str) -> String {
    let command = command.trim();
    let mut lines = command.lines();
    let first = lines.next().unwrap_or("").trim_end();
    if first.is_empty() {
        return "Bash".to_owned();
    }
    let code = crate::text::inline_code(&crate::text::shorten(first, TITLE_MAX + 1));
    match lines.count() {
        0 => code,
        1 => format!("{code} (+1 more line)"),
        n => format!("{code} (+{n} more lines)"),
    }
}

/// The whole command, for the card's content, when its title shows only
/// part of it (a multi-line command, a long line).
pub(crate) fn detail(input: &Value) -> Option<String> {
    let command = input.get("command").and_then(Value::as_str)?;
    let trimmed = command.trim();
    let partial = trimmed.lines().nth(1).is_some()
        || trimmed
            .lines()
            .next()
            .unwrap_or("")
            .trim_end()
            .chars()
            .count()
            > TITLE_MAX + 1;
    partial.then(|| crate::text::fenced(command, "sh"))
}

/// How the command's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

pub(crate) async fn run(input: &BashInput, cx: ToolContext) -> ToolOutput {
    if let Some(client) = cx.terminal.clone()
        && input.run_in_background != Some(true)
        && terminal_may_launch(&cx)
    {
        return in_terminal(input, &client, cx).await;
    }
    let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    // The command's door of the network allowlist's proxy lives as long as
    // the command.
    let (group, output, door) = match start(&input.command, &cx).await {
        Ok(started) => started,
        Err(failed) => return failed,
    };
    // The next command's spare is made while this one runs and the model
    // answers (`tools::confined::Confiner::spare_soon`), unless this one
    // runs in the foreground in a room, which is the next command's once
    // this one ends.
    if input.run_in_background == Some(true) || !matches!(group, Running::Room(_)) {
        spare_soon(&cx);
    }
    if input.run_in_background == Some(true) {
        let id = cx.shells.adopt(group, output, cx.kill_grace, door);
        return ToolOutput::completed(format!(
            "Started in the background as {id}. Read its output with BashOutput {{\"bash_id\": \"{id}\"}}; stop it with KillShell {{\"shell_id\": \"{id}\"}}. It ends with the session."
        ));
    }
    let mut group = group;
    let mut output = Some(output);
    let mut capture = Capture::new(cx.spill.clone());
    let mut buf = vec![0u8; 16 * 1024];
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut exited: Option<(ExitStatus, Instant)> = None;

    let ending = loop {
        if exited.is_some() && output.is_none() {
            break Ending::Exited;
        }
        let drain_until = exited.map(|(_, at)| at + DRAIN_AFTER_EXIT);
        let flush_at = capture.flush_at();
        tokio::select! {
            n = read_some(&mut output, &mut buf), if output.is_some() => {
                take_chunk(n, &buf, &mut output, &mut capture);
            }
            status = group.wait(), if exited.is_none() => {
                match status {
                    Ok(status) => exited = Some((status, Instant::now())),
                    Err(e) => return ToolOutput::failed(format!("could not wait for bash: {e}")),
                }
            }
            _ = tokio::time::sleep_until(flush_at.unwrap_or(deadline)), if flush_at.is_some() => {
                if let Some(chunk) = capture.flush(false) {
                    let _ = cx.events.send(ToolEvent::Output(chunk));
                }
            }
            _ = tokio::time::sleep_until(drain_until.unwrap_or(deadline)), if drain_until.is_some() => {
                if exited.is_some() {
                    break Ending::Exited;
                }
            }
            _ = tokio::time::sleep_until(deadline), if exited.is_none() => break Ending::TimedOut,
            _ = cx.cancel.cancelled() => break Ending::Cancelled,
            _ = cx.hard_stop.cancelled() => break Ending::Cancelled,
        }
    };
    let status = match (ending, exited) {
        (Ending::Exited, Some((status, _))) => Ok(status),
        _ => group.terminate(cx.kill_grace, &cx.hard_stop).await,
    };
    // Ends anything the command left behind in its group; a room whose
    // command ended and said so is the session's next command's.
    match (&cx.boundary, &cx.confiner) {
        (Some(boundary), Some(confiner)) => confiner.room_back(boundary, group.into_free_room()),
        _ => drop(group),
    }
    // Whatever was written before the end is still in the pipe: take it
    // (bounded in time: a descendant that escaped may keep it open).
    if let Some(pipe) = output.as_mut() {
        let drain = async {
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                capture.push(&buf[..n]);
            }
        };
        let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, drain).await;
    }
    while let Some(chunk) = capture.flush(true) {
        let _ = cx.events.send(ToolEvent::Output(chunk));
    }
    let mut out = finish(capture.finish(), ending, status, timeout_ms);
    explain(&mut out, &cx);
    out
}

/// Whether the editor's terminal may be given the command: unconfined,
/// or its launcher is one no sandboxed command could have changed
/// (`sandbox::launcher::terminal`). Else candor runs it itself, from its
/// running binary, in the same boundary.
fn terminal_may_launch(cx: &ToolContext) -> bool {
    match cx.boundary.as_ref().filter(|b| b.confinement().is_some()) {
        None => true,
        Some(boundary) => match crate::sandbox::launcher::terminal(boundary) {
            Ok(_) => true,
            Err(why) => {
                tracing::warn!("{why}; the command runs in candor, not the editor's terminal");
                false
            }
        },
    }
}

/// Makes the session's next confined command's spare now
/// (`tools::confined::Confiner::spare_soon`).
fn spare_soon(cx: &ToolContext) {
    if let (Some(boundary), Some(confiner)) = (&cx.boundary, &cx.confiner) {
        confiner.spare_soon(boundary);
    }
}

/// A started command, its output, and its door of the allowlist's proxy
/// (which lives as long as the command).
type Started = (
    Running,
    tokio::net::unix::pipe::Receiver,
    Option<crate::sandbox::Proxy>,
);

/// Starts `command` as the call was settled: through the launcher in its
/// boundary when that confines (and only once the launcher said the
/// boundary holds), else plainly. The failure is the call's result.
async fn start(command: &str, cx: &ToolContext) -> Result<Started, ToolOutput> {
    let confined = cx.boundary.as_ref().filter(|b| b.confinement().is_some());
    let (boundary, confiner) = match (confined, &cx.confiner) {
        (Some(boundary), Some(confiner)) => (boundary, confiner),
        (Some(_), None) => return Err(not_set_up("the session has no sandbox runtime")),
        (None, _) => {
            let spawned = exec::bash(command, &cx.cwd).and_then(|(mut cmd, output)| {
                if let Some(file) = cx.session_env() {
                    cmd.env("BASH_ENV", file);
                }
                Ok((ProcessGroup::spawn(cmd)?, output))
            });
            let (group, output) =
                spawned.map_err(|e| ToolOutput::failed(format!("could not start bash: {e}")))?;
            return Ok((Running::Group(group), output, None));
        }
    };
    // A session's first command may come while its house gets ready.
    confiner.house_settled(boundary, &cx.cancel).await;
    let mut launched = confiner
        .launch_local(boundary, &cx.events)
        .map_err(|why| not_set_up(&why))?;
    let sent = match launched.spare.take() {
        None => None,
        Some(Spared::Launcher(group, output)) => Some(
            send_to_spare(&mut launched, command, cx)
                .await
                .map(|()| (Running::Group(*group), output)),
        ),
        Some(Spared::Room(made)) => Some(enter_room(&mut launched, Err(*made), command, cx).await),
        Some(Spared::Free(room)) => Some(enter_room(&mut launched, Ok(*room), command, cx).await),
    };
    let started = match sent {
        Some(Ok(started)) => Ok(started),
        Some(Err(why)) => {
            // The spare could not take the command (it went away): a
            // launcher of its own.
            tracing::debug!("the spare sandbox launcher was not used: {why}");
            launched = confiner
                .launch_own(boundary, &cx.events)
                .map_err(|why| not_set_up(&why))?;
            spawn_launcher(&launched, command, cx)
        }
        None => spawn_launcher(&launched, command, cx),
    };
    let (mut group, output) =
        started.map_err(|e| ToolOutput::failed(format!("could not start bash: {e}")))?;
    let watch = match &mut group {
        Running::Room(room) => room.watch_mut(),
        Running::Group(_) => &mut launched.watch,
    };
    match super::confined::ready(watch, &cx.cancel).await {
        Ok(()) => {}
        Err(Some(why)) => return Err(not_set_up(&why)),
        Err(None) => {
            return Err(ToolOutput::cancelled(
                "cancelled by the user before the command started",
            ));
        }
    }
    Ok((group, output, launched.door))
}

/// Starts a launcher for `command` as `launched` says.
fn spawn_launcher(
    launched: &super::confined::Launched,
    command: &str,
    cx: &ToolContext,
) -> std::io::Result<(Running, tokio::net::unix::pipe::Receiver)> {
    let (mut cmd, output) =
        exec::confined_bash(&launched.launcher, &launched.launch, command, &cx.cwd)?;
    if let Some(file) = cx.session_env() {
        cmd.env("BASH_ENV", file);
    }
    Ok((Running::Group(ProcessGroup::spawn(cmd)?), output))
}

/// Sends `command` to the spare launcher (`sandbox::spare`) `launched`
/// holds, in its launch.
async fn send_to_spare(
    launched: &mut super::confined::Launched,
    command: &str,
    cx: &ToolContext,
) -> Result<(), String> {
    let line = start_line(launched, command, cx)?;
    launched
        .watch
        .send(&line, super::confined::SETUP_WAIT)
        .await
}

/// Sends `command` to a room of the session's house (`sandbox::room`):
/// `Ok`, one free after another command, or `Err`, the one `launched`
/// holds, made so; a new output pipe's writing end, then the start.
async fn enter_room(
    launched: &mut super::confined::Launched,
    room: Result<InRoom, super::running::Made>,
    command: &str,
    cx: &ToolContext,
) -> Result<(Running, tokio::net::unix::pipe::Receiver), String> {
    use tokio::io::AsyncWriteExt as _;
    let line = start_line(launched, command, cx)?;
    let mut room = match room {
        Ok(room) => room,
        Err(made) => {
            let words = launched.watch.writer(super::confined::SETUP_WAIT).await?;
            // The room's watch goes with the command: dropping it ends the
            // room.
            let watch = std::mem::replace(&mut launched.watch, crate::sandbox::Watch::closed());
            InRoom::new(watch, words, made)
        }
    };
    let (output, pipe) = exec::output_pipe().map_err(|e| format!("the output pipe: {e}"))?;
    exec::send_output(room.words(), &pipe)
        .await
        .map_err(|e| format!("handing the room its output: {e}"))?;
    drop(pipe);
    room.words()
        .write_all(&line)
        .await
        .map_err(|e| format!("writing to the room: {e}"))?;
    Ok((Running::Room(room), output))
}

/// The start line of `command` in `launched`'s launch.
fn start_line(
    launched: &super::confined::Launched,
    command: &str,
    cx: &ToolContext,
) -> Result<Vec<u8>, String> {
    let mut env = Vec::new();
    if let Some(file) = cx.session_env() {
        let file = file
            .to_str()
            .ok_or("the session's variables file is not UTF-8")?;
        env.push(("BASH_ENV".to_owned(), file.to_owned()));
    }
    let start = crate::sandbox::Start {
        launch: launched.launch.clone(),
        argv: vec!["bash".into(), "-c".into(), command.to_owned()],
        cwd: cx.cwd.clone(),
        env,
    };
    start.line().map_err(|e| e.to_string())
}

/// The result of a call whose sandbox could not be set up: nothing ran.
fn not_set_up(why: &str) -> ToolOutput {
    ToolOutput::failed(format!(
        "The sandbox could not be set up ({why}); the command did not run. Tell the user: it may be this machine's kernel, or candor's settings."
    ))
}

/// A failed command's result says so when the sandbox refused it
/// (`sandbox::explain`): the path or host, and how to ask.
fn explain(out: &mut ToolOutput, cx: &ToolContext) {
    if out.status != ResultStatus::Failed {
        return;
    }
    if let Some(boundary) = &cx.boundary
        && let Some(line) = crate::sandbox::explain(boundary, &cx.cwd, &out.text)
    {
        append_line(&mut out.text, &format!("[{line}]"));
    }
}

/// Most output an editor terminal keeps for candor (`outputByteLimit`).
pub const TERMINAL_OUTPUT_LIMIT: u64 = 1024 * 1024;
/// How long candor waits for the editor to kill, read or release a terminal.
const TERMINAL_CLEANUP: Duration = Duration::from_secs(2);

/// Runs the command in an editor terminal (`terminal/create` with
/// `bash -c`): the card shows the terminal; the model gets its output.
async fn in_terminal(input: &BashInput, client: &ClientLink, cx: ToolContext) -> ToolOutput {
    let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    // ACP can only set variables in a terminal, not remove them: the keys
    // (which the editor's environment, candor's parent, likely has) are
    // set empty.
    let mut env: Vec<EnvVariable> = exec::withheld_variables()
        .into_iter()
        .map(|name| EnvVariable::new(name, ""))
        .collect();
    if let Some(file) = cx.session_env() {
        env.push(EnvVariable::new("BASH_ENV", file.display().to_string()));
    }
    // The door of the network allowlist's proxy lives as long as the
    // command runs.
    let (program, args, mut watch, _door) = match terminal_command(input, &cx) {
        Ok(command) => command,
        Err(why) => return not_set_up(&why),
    };
    let request = CreateTerminalRequest::new(client.session_id.clone(), program)
        .args(args)
        .cwd(cx.cwd.clone())
        .env(env)
        .output_byte_limit(TERMINAL_OUTPUT_LIMIT);
    // The command's timeout covers the editor's answer too: an editor that
    // never answers `terminal/create` must not hold the turn (the request
    // is withdrawn, as on cancel).
    let started = tokio::time::Instant::now();
    let budget = Duration::from_millis(timeout_ms);
    let id = match client.create_terminal(request, &cx.cancel, budget).await {
        Ok(created) => created.terminal_id.to_string(),
        Err(Failed::TimedOut) => {
            return ToolOutput::failed(format!(
                "the editor did not create a terminal within the command's timeout ({timeout_ms} ms); the command was not run by candor"
            ));
        }
        Err(Failed::Cancelled) => {
            return ToolOutput::cancelled("cancelled by the user (cancelled)");
        }
        Err(e) => {
            return ToolOutput::failed(format!("the editor could not create a terminal: {e}"));
        }
    };
    if let Some(watch) = watch.as_mut() {
        let cleanup = CancellationToken::new();
        match super::confined::ready(watch, &cx.cancel).await {
            Ok(()) => {}
            Err(why) => {
                let _ = client.kill_terminal(&id, &cleanup, TERMINAL_CLEANUP).await;
                let _ = client
                    .release_terminal(&id, &cleanup, TERMINAL_CLEANUP)
                    .await;
                return match why {
                    Some(why) => not_set_up(&why),
                    None => ToolOutput::cancelled("cancelled by the user (cancelled)"),
                };
            }
        }
    }
    let _ = cx.events.send(ToolEvent::Terminal(id.clone()));
    let waited = tokio::select! {
        r = client.wait_for_terminal_exit(&id, &cx.cancel) => Some(r),
        _ = tokio::time::sleep(budget.saturating_sub(started.elapsed())) => None,
    };
    let ending = match &waited {
        Some(Ok(_)) => None,
        Some(Err(_)) if cx.cancel.is_cancelled() => Some(Ending::Cancelled),
        Some(Err(_)) => None,
        None => Some(Ending::TimedOut),
    };
    // Cleanup requests must not be cut short by the turn's cancel, but must
    // not wait forever on an editor that stopped answering either.
    let cleanup = CancellationToken::new();
    if ending.is_some() {
        let _ = client.kill_terminal(&id, &cleanup, TERMINAL_CLEANUP).await;
    }
    let output = client
        .terminal_output(&id, &cleanup, TERMINAL_CLEANUP)
        .await;
    let _ = client
        .release_terminal(&id, &cleanup, TERMINAL_CLEANUP)
        .await;
    let (text, truncated, status) = match output {
        Ok(o) => (o.output, o.truncated, o.exit_status),
        Err(e) => (
            format!("(the editor could not give the output: {e})"),
            false,
            None,
        ),
    };
    let status = status.or_else(|| waited.and_then(Result::ok).map(|w| w.exit_status));
    let exit_code = status
        .as_ref()
        .and_then(|s| s.exit_code)
        .and_then(|c| i32::try_from(c).ok());
    let signal = status.and_then(|s| s.signal);
    let mut out = finish_parts(
        &text,
        ending.unwrap_or(Ending::Exited),
        exit_code,
        signal,
        timeout_ms,
    );
    if truncated {
        out.text = format!(
            "[earlier output was cut by the editor's terminal]\n{}",
            out.text
        );
    }
    explain(&mut out, &cx);
    out
}

/// What the editor's terminal runs: confined, candor's own binary as the
/// launcher, which confines itself exactly as for a command candor starts
/// (and the watch on its reports); else `bash -c`. `Err`: why the
/// sandbox cannot be set up.
type TerminalCommand = (
    String,
    Vec<String>,
    Option<crate::sandbox::Watch>,
    Option<crate::sandbox::Proxy>,
);

fn terminal_command(input: &BashInput, cx: &ToolContext) -> Result<TerminalCommand, String> {
    let confined = cx.boundary.as_ref().filter(|b| b.confinement().is_some());
    match (confined, &cx.confiner) {
        (Some(boundary), Some(confiner)) => {
            let launched = confiner.launch(boundary, &cx.events)?;
            let args = launched
                .launch
                .args(&["bash", "-c", input.command.as_str()])
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            Ok((
                launched.launcher.display().to_string(),
                args,
                Some(launched.watch),
                launched.door,
            ))
        }
        (Some(_), None) => Err("the session has no sandbox runtime".into()),
        (None, _) => Ok((
            "bash".to_owned(),
            vec!["-c".to_owned(), input.command.clone()],
            None,
            None,
        )),
    }
}

fn finish(
    captured: Captured,
    ending: Ending,
    status: std::io::Result<ExitStatus>,
    timeout_ms: u64,
) -> ToolOutput {
    let (exit_code, signal) = match &status {
        Ok(status) => (status.code(), status.signal().map(exec::signal_name)),
        Err(_) => (None, None),
    };
    let mut out = finish_parts(&captured.text, ending, exit_code, signal, timeout_ms);
    if captured.file.is_some() || captured.problem.is_some() {
        let line = match (&captured.file, &captured.problem) {
            (Some(path), None) => format!(
                "[the output was {} bytes; all of it is in {}]",
                captured.total,
                path.display()
            ),
            (_, Some(why)) => format!("[the output was {} bytes; {why}]", captured.total),
            (None, None) => String::new(),
        };
        append_line(&mut out.text, &line);
        out.file = Some(OutputFile {
            path: captured.file,
            bytes: captured.total,
            problem: captured.problem,
        });
    }
    out
}

/// The model's text and the status, from the output and how it ended.
fn finish_parts(
    output: &str,
    ending: Ending,
    exit_code: Option<i32>,
    signal: Option<String>,
    timeout_ms: u64,
) -> ToolOutput {
    let mut text = cap_for_model(output);
    let outcome = match ending {
        Ending::Cancelled => {
            append_line(
                &mut text,
                "[cancelled by the user; candor ended the command]",
            );
            ResultStatus::Cancelled
        }
        Ending::TimedOut => {
            append_line(
                &mut text,
                &format!("[timed out after {timeout_ms} ms; candor ended the command]"),
            );
            ResultStatus::Failed
        }
        Ending::Exited => match (exit_code, &signal) {
            (Some(0), _) => ResultStatus::Completed,
            (Some(code), _) => {
                append_line(&mut text, &format!("[exit code: {code}]"));
                ResultStatus::Failed
            }
            (None, Some(sig)) => {
                append_line(&mut text, &format!("[terminated by {sig}]"));
                ResultStatus::Failed
            }
            (None, None) => ResultStatus::Failed,
        },
    };
    if text.is_empty() {
        text = "(no output)".to_owned();
    }
    ToolOutput {
        status: outcome,
        text,
        exit_code,
        signal,
        diff: None,
        file: None,
    }
}

fn append_line(text: &mut String, line: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
}

/// Reads from an optional pipe; `None` never resolves (the `select!` arm is
/// disabled by its condition anyway).
async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

fn take_chunk<R>(
    n: std::io::Result<usize>,
    buf: &[u8],
    pipe: &mut Option<R>,
    capture: &mut Capture,
) {
    match n {
        Ok(0) | Err(_) => *pipe = None,
        Ok(n) => capture.push(&buf[..n]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_like_the_schema_says() {
        assert!(parse(&json!({"command": "ls"})).is_ok());
        assert!(parse(&json!({"command": "ls", "timeout": 600_000})).is_ok());
        let err = |v: Value| parse(&v).unwrap_err();
        assert!(err(json!({})).contains("missing field `command`"));
        assert!(err(json!({"command": 3})).contains("invalid type"));
        assert!(err(json!({"command": "  "})).contains("empty"));
        assert!(err(json!({"command": "ls", "timeout": 600_001})).contains("maximum"));
        assert!(err(json!("ls")).contains("must be a JSON object"));
    }

    #[test]
    fn titles_show_the_command() {
        assert_eq!(command_title("ls -la"), "`ls -la`");
        assert_eq!(
            command_title("git push origin HEAD:refs/heads/main --force"),
            "`git push origin HEAD:refs/heads/main --force`"
        );
        assert_eq!(command_title("echo `date`"), "`` echo `date` ``");
        assert_eq!(command_title("cd x\nmake"), "`cd x` (+1 more line)");
        assert_eq!(command_title("a\nb\nc\n"), "`a` (+2 more lines)");
        let long = "x".repeat(500);
        assert_eq!(command_title(&long).chars().count(), 123);
        assert_eq!(detail(&serde_json::json!({"command": "ls"})), None);
        assert_eq!(
            detail(&serde_json::json!({"command": "cd x\nmake"})).as_deref(),
            Some("```sh\ncd x\nmake\n```")
        );
        assert!(detail(&serde_json::json!({ "command": long })).is_some());
    }
}
