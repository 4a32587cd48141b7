//! Background shells: `Bash {run_in_background: true}` starts a command and
//! returns at once with an id; `BashOutput {bash_id, filter?}` reads what it
//! wrote since the last read; `KillShell {shell_id}` stops it.
//!
//! Each shell is a local process group (never an editor terminal: it must
//! outlive the call that started it). A session's shells end when the
//! session is cancelled or stops ([`Shells::kill_all`]): nothing candor
//! starts outlives the session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::v1::ToolKind;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::exec;
use super::output::{ToolOutput, cap_for_model};
use super::running::Running;
use crate::conversation::ToolSpec;
use crate::sync::lock;

/// A session's background shells. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct Shells {
    inner: Arc<Mutex<Registry>>,
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    shells: HashMap<String, Arc<Shell>>,
}

#[derive(Debug)]
struct Shell {
    // A std mutex: held to append or take output, never across an await.
    state: Mutex<ShellState>,
    stop: CancellationToken,
    done: tokio::sync::Notify,
}

/// The most unread output a background command keeps; older unread bytes
/// are dropped (and counted) as new ones arrive.
pub const MAX_UNREAD: usize = 1024 * 1024;

#[derive(Debug, Default)]
struct ShellState {
    /// Output not read yet (the newest [`MAX_UNREAD`] bytes of it).
    output: std::collections::VecDeque<u8>,
    /// Unread bytes dropped since the last read.
    dropped: u64,
    /// How it ended: `exit code N`, `SIGNAL`, `killed`.
    ended: Option<String>,
}

impl Shells {
    /// Keeps a command already started (in the sandbox, once its launcher
    /// said ready) as a background shell; returns its id.
    pub fn adopt(
        &self,
        mut group: Running,
        mut pipe: tokio::net::unix::pipe::Receiver,
        grace: Duration,
        door: Option<crate::sandbox::Proxy>,
    ) -> String {
        let id = {
            let mut reg = lock(&self.inner);
            reg.next += 1;
            format!("bash_{}", reg.next)
        };
        let shell = Arc::new(Shell {
            state: Mutex::new(ShellState::default()),
            stop: CancellationToken::new(),
            done: tokio::sync::Notify::new(),
        });
        lock(&self.inner).shells.insert(id.clone(), shell.clone());
        tokio::spawn(async move {
            // The command's door of the network allowlist's proxy lives as
            // long as the command.
            let _door = door;
            let reading = async {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = pipe.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut state = lock(&shell.state);
                    state.output.extend(&buf[..n]);
                    let over = state.output.len().saturating_sub(MAX_UNREAD);
                    if over > 0 {
                        state.output.drain(..over);
                        state.dropped += over as u64;
                    }
                }
            };
            let ended = tokio::select! {
                _ = reading => match group.wait().await {
                    Ok(status) => describe(status),
                    Err(e) => format!("unknown ({e})"),
                },
                _ = shell.stop.cancelled() => {
                    let hard = CancellationToken::new();
                    let _ = group.terminate(grace, &hard).await;
                    "killed".to_owned()
                }
            };
            drop(group);
            lock(&shell.state).ended = Some(ended);
            shell.done.notify_waiters();
        });
        id
    }

    fn get(&self, id: &str) -> Option<Arc<Shell>> {
        lock(&self.inner).shells.get(id).cloned()
    }

    /// Stops every shell of the session.
    pub fn kill_all(&self) {
        for shell in lock(&self.inner).shells.values() {
            shell.stop.cancel();
        }
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => exec::signal_name(sig),
        (None, None) => "unknown".into(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputInput {
    pub bash_id: String,
    #[serde(default)]
    pub filter: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillInput {
    pub shell_id: String,
}

pub(crate) fn output_spec() -> ToolSpec {
    ToolSpec {
        name: "BashOutput".into(),
        description: "Reads the output a background command (started with Bash run_in_background) wrote since the last read, and whether it is still running.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "bash_id": {"type": "string", "description": "The id Bash returned"},
                "filter": {"type": "string", "description": "Only lines matching this regular expression"}
            },
            "required": ["bash_id"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn kill_spec() -> ToolSpec {
    ToolSpec {
        name: "KillShell".into(),
        description: "Stops a background command started with Bash run_in_background.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"shell_id": {"type": "string", "description": "The id Bash returned"}},
            "required": ["shell_id"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn parse_output(input: &Value) -> Result<OutputInput, String> {
    let parsed: OutputInput = parse_input(Tool::BashOutput, input)?;
    if let Some(f) = &parsed.filter {
        regex::Regex::new(f).map_err(|e| format!("invalid BashOutput input: bad filter: {e}"))?;
    }
    Ok(parsed)
}

pub(crate) fn parse_kill(input: &Value) -> Result<KillInput, String> {
    parse_input(Tool::KillShell, input)
}

pub(crate) fn present(tool: Tool, input: &Value) -> Presentation {
    let id = input
        .get("bash_id")
        .or_else(|| input.get("shell_id"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let (title, kind) = if tool == Tool::KillShell {
        (format!("Stop background command {id}"), ToolKind::Execute)
    } else {
        (format!("Output of background command {id}"), ToolKind::Read)
    };
    Presentation {
        title,
        kind,
        locations: Vec::new(),
    }
}

pub(crate) async fn output(input: &OutputInput, shells: &Shells) -> ToolOutput {
    let Some(shell) = shells.get(&input.bash_id) else {
        return ToolOutput::failed(format!("there is no background command {}", input.bash_id));
    };
    let (new, dropped, ended) = {
        let mut state = lock(&shell.state);
        let bytes: Vec<u8> = state.output.drain(..).collect();
        let dropped = std::mem::take(&mut state.dropped);
        (
            String::from_utf8_lossy(&bytes).into_owned(),
            dropped,
            state.ended.clone(),
        )
    };
    let new = match input
        .filter
        .as_deref()
        .and_then(|f| crate::matcher::regex(f).ok())
    {
        Some(re) => new
            .lines()
            .filter(|l| re.is_match(l))
            .collect::<Vec<_>>()
            .join("\n"),
        None => new,
    };
    let status = match ended {
        Some(how) => format!("[{} has ended: {how}]", input.bash_id),
        None => format!("[{} is still running]", input.bash_id),
    };
    let mut body = if new.is_empty() {
        "(no new output)".to_owned()
    } else {
        cap_for_model(new.trim_end_matches('\n'))
    };
    if dropped > 0 {
        body = format!(
            "[{dropped} earlier bytes were dropped unread: candor keeps the newest {MAX_UNREAD}]\n{body}"
        );
    }
    ToolOutput::completed(format!("{body}\n{status}"))
}

/// Stops a background shell, waiting up to `grace` (the session's kill
/// grace) and a second more for it to end.
pub(crate) async fn kill(input: &KillInput, shells: &Shells, grace: Duration) -> ToolOutput {
    let Some(shell) = shells.get(&input.shell_id) else {
        return ToolOutput::failed(format!("there is no background command {}", input.shell_id));
    };
    if let Some(how) = lock(&shell.state).ended.clone() {
        return ToolOutput::completed(format!("{} had already ended: {how}", input.shell_id));
    }
    let done = shell.done.notified();
    shell.stop.cancel();
    let _ = tokio::time::timeout(grace + Duration::from_secs(1), done).await;
    ToolOutput::completed(format!("Stopped {}.", input.shell_id))
}
