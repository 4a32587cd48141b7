//! `Bash {command, description?, timeout?}`: runs `bash -c <command>` in the
//! session's working directory, in its own process group.
//!
//! stdout and stderr share one pipe, so output keeps the order it was
//! written in (as in a terminal); it is streamed to the card (at
//! most one update per [`FLUSH_EVERY`]) and handed to the model capped at
//! [`super::MODEL_OUTPUT_MAX`] characters. A non-zero exit fails the card and
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

use super::exec::{self, ProcessGroup};
use super::{Presentation, Tool, ToolContext, ToolOutput, cap_for_model, parse_input};
use crate::conversation::ToolSpec;
use crate::event_log::ResultStatus;
use crate::interception::ApprovedCall;

/// Default `timeout`, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest accepted `timeout`, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Card updates are sent at most this often while output streams.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// After the command exits, how long its output pipes are still read.
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// The input, as Claude Code defines it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BashInput {
    pub command: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "Bash",
        description: "Runs a bash command in the project's working directory and returns its combined stdout and stderr. Use it for builds, tests, git and file system operations. Output beyond 30000 characters is elided in the middle.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run"},
                "description": {"type": "string", "description": "What the command does, in 5-10 words"},
                "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Timeout in milliseconds (default 120000, max 600000)"}
            },
            "required": ["command"]
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
    if parsed.run_in_background == Some(true) {
        return Err(
            "invalid Bash input: `run_in_background` is not supported by this version of candor; run the command in the foreground".into(),
        );
    }
    Ok(parsed)
}

pub(crate) fn present(input: &Value, _cwd: &Path) -> Presentation {
    let command = input.get("command").and_then(Value::as_str).unwrap_or("");
    Presentation {
        title: command_title(command),
        kind: ToolKind::Execute,
        locations: Vec::new(),
    }
}

/// The first line of a command, shortened for a card title.
fn command_title(command: &str) -> String {
    const MAX: usize = 120;
    let first = command.trim().lines().next().unwrap_or("");
    let multiline = command.trim().lines().nth(1).is_some();
    if first.chars().count() > MAX {
        let cut: String = first.chars().take(MAX).collect();
        format!("{cut}…")
    } else if multiline {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

/// How the command's run ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

pub(crate) async fn run(call: &ApprovedCall, cx: ToolContext) -> ToolOutput {
    let input = match parse(call.arguments()) {
        Ok(input) => input,
        Err(e) => return ToolOutput::failed(e),
    };
    let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    let spawned = exec::bash(&input.command, &cx.cwd)
        .and_then(|(cmd, output)| Ok((ProcessGroup::spawn(cmd)?, output)));
    let (mut group, output) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => return ToolOutput::failed(format!("could not start bash: {e}")),
    };
    let mut output = Some(output);
    let mut all = Vec::new();
    let mut unsent = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut flush_at = Instant::now();
    let mut exited: Option<(ExitStatus, Instant)> = None;

    let ending = loop {
        if let Some((status, _)) = exited
            && output.is_none()
        {
            break Ending::Exited(status);
        }
        let drain_until = exited.map(|(_, at)| at + DRAIN_AFTER_EXIT);
        tokio::select! {
            n = read_some(&mut output, &mut buf), if output.is_some() => {
                take_chunk(n, &buf, &mut output, &mut all, &mut unsent);
            }
            status = group.child_mut().wait(), if exited.is_none() => {
                match status {
                    Ok(status) => exited = Some((status, Instant::now())),
                    Err(e) => return ToolOutput::failed(format!("could not wait for bash: {e}")),
                }
            }
            _ = tokio::time::sleep_until(flush_at), if !unsent.is_empty() => {
                send_complete_utf8(&mut unsent, &cx);
                flush_at = Instant::now() + FLUSH_EVERY;
            }
            _ = tokio::time::sleep_until(drain_until.unwrap_or(deadline)), if drain_until.is_some() => {
                if let Some((status, _)) = exited {
                    break Ending::Exited(status);
                }
            }
            _ = tokio::time::sleep_until(deadline), if exited.is_none() => break Ending::TimedOut,
            _ = cx.cancel.cancelled() => break Ending::Cancelled,
            _ = cx.hard_stop.cancelled() => break Ending::Cancelled,
        }
    };
    let status = match ending {
        Ending::Exited(status) => Ok(status),
        Ending::TimedOut | Ending::Cancelled => group.terminate(cx.kill_grace, &cx.hard_stop).await,
    };
    // Ends anything the command left behind in its group.
    drop(group);
    // Whatever was written before the end is still in the pipe: take it.
    if let Some(pipe) = output.as_mut() {
        let drain = async {
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&buf[..n]);
                unsent.extend_from_slice(&buf[..n]);
            }
        };
        let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, drain).await;
    }
    if !unsent.is_empty() {
        let rest = String::from_utf8_lossy(&unsent).into_owned();
        let _ = cx.output.send(rest);
    }
    finish(&all, ending, status, timeout_ms)
}

fn finish(
    all: &[u8],
    ending: Ending,
    status: std::io::Result<ExitStatus>,
    timeout_ms: u64,
) -> ToolOutput {
    let text = String::from_utf8_lossy(all);
    let mut text = cap_for_model(&text);
    let (exit_code, signal) = match &status {
        Ok(status) => (status.code(), status.signal().map(exec::signal_name)),
        Err(_) => (None, None),
    };
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
        Ending::Exited(_) => match (exit_code, &signal) {
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
    all: &mut Vec<u8>,
    unsent: &mut Vec<u8>,
) {
    match n {
        Ok(0) | Err(_) => *pipe = None,
        Ok(n) => {
            all.extend_from_slice(&buf[..n]);
            unsent.extend_from_slice(&buf[..n]);
        }
    }
}

/// Sends the longest prefix of `unsent` that is complete UTF-8 (a character
/// split across two reads waits for its second half).
fn send_complete_utf8(unsent: &mut Vec<u8>, cx: &ToolContext) {
    let complete = match std::str::from_utf8(unsent) {
        Ok(_) => unsent.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => unsent.len(), // invalid bytes: send them lossily
    };
    if complete == 0 {
        return;
    }
    let chunk: Vec<u8> = unsent.drain(..complete).collect();
    let _ = cx.output.send(String::from_utf8_lossy(&chunk).into_owned());
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
        assert_eq!(command_title("ls -la"), "ls -la");
        assert_eq!(command_title("cd x\nmake"), "cd x …");
        let long = "x".repeat(200);
        assert_eq!(command_title(&long).chars().count(), 121);
    }
}
