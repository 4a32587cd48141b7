//! The one place candor starts processes.
//!
//! Every child runs in its own process group, so that ending it ends
//! everything it started. [`ProcessGroup`] owns a spawned child: dropping it
//! sends SIGKILL to the whole group, so no process outlives the tool call,
//! the turn or candor's shutdown by accident.
//!
//! Architecture invariant: no other module constructs a `Command` (enforced
//! by `disallowed-methods` in `clippy.toml`).

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// Variables a command or hook never inherits from candor: the providers'
/// keys (a repository's hook or a model's command could send them
/// anywhere), and every `CANDOR_*` setting. The user's own config file may
/// let some through (`pass_env`).
const SECRETS: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
];

static PASSED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Sets, once at start-up, the variables the user lets children have
/// although candor would keep them out (the user config's `pass_env`).
pub fn pass_env(names: Vec<String>) {
    let _ = PASSED.set(names);
}

/// Removes what children must not inherit.
fn scrub(cmd: &mut Command) {
    let passed = PASSED.get().map(Vec::as_slice).unwrap_or(&[]);
    let own = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("CANDOR_"));
    for name in SECRETS.iter().map(|s| s.to_string()).chain(own) {
        if !passed.contains(&name) {
            cmd.env_remove(&name);
        }
    }
}

/// `bash -c <script>` in `cwd`, in a new process group, stdin closed, and
/// stdout and stderr both writing into one pipe (as `2>&1` would), so the
/// output keeps the order it was written in. Returns the command and the
/// reading end of that pipe. The command must be spawned (and dropped) for
/// the pipe to reach end of file when the process group is done with it.
pub fn bash(script: &str, cwd: &Path) -> io::Result<(Command, pipe::Receiver)> {
    let (reader, writer) = std::io::pipe()?;
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(true);
    scrub(&mut cmd);
    let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok((cmd, reader))
}

/// An ACP agent process (`candor demo` starts candor itself this way):
/// stdin and stdout piped for frames, stderr passed through, its own
/// process group.
pub fn agent(program: &Path, args: &[&str]) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// A program with arguments (no shell), as a client terminal runs it:
/// stdin closed, stdout and stderr piped, its own process group.
pub fn program(program: &str, args: &[String], cwd: &Path) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// A hook command as Claude Code and Codex run one: `sh -c <command>`
/// (shell form) or a program with arguments (exec form), in `cwd`, with
/// `env` added, stdin piped (the event's JSON), stdout and stderr piped, in
/// its own process group.
pub fn hook(
    command: &str,
    args: Option<&[String]>,
    cwd: &Path,
    env: &[(String, String)],
) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = match args {
        Some(args) => {
            let mut cmd = Command::new(command);
            cmd.args(args);
            cmd
        }
        None => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(command);
            cmd
        }
    };
    scrub(&mut cmd);
    cmd.current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// A child process and its process group.
#[derive(Debug)]
pub struct ProcessGroup {
    child: Child,
    pgid: Option<Pid>,
}

impl ProcessGroup {
    /// Spawns `cmd`, which must come from a constructor of this module.
    pub fn spawn(mut cmd: Command) -> io::Result<Self> {
        let child = cmd.spawn()?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        Ok(Self { child, pgid })
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The leader's process id (also the group id).
    pub fn id(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p.as_raw()).ok())
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            match killpg(pgid, signal) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                Err(e) => {
                    tracing::warn!(pgid = pgid.as_raw(), %signal, error = %e, "could not signal a process group")
                }
            }
        }
    }

    /// Ends the group: SIGTERM, then SIGKILL once `grace` has passed or
    /// `hard_stop` fires, whichever comes first. Returns the leader's status.
    pub async fn terminate(
        &mut self,
        grace: Duration,
        hard_stop: &CancellationToken,
    ) -> io::Result<ExitStatus> {
        self.signal(Signal::SIGTERM);
        let exited = tokio::select! {
            status = self.child.wait() => Some(status),
            _ = tokio::time::sleep(grace) => None,
            _ = hard_stop.cancelled() => None,
        };
        // Whatever the leader did, nothing of the group may stay behind.
        self.signal(Signal::SIGKILL);
        match exited {
            Some(status) => status,
            None => self.child.wait().await,
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// The name of a signal number (`SIGKILL`), or the number.
pub fn signal_name(signal: i32) -> String {
    Signal::try_from(signal)
        .map(|s| s.as_str().to_owned())
        .unwrap_or_else(|_| format!("signal {signal}"))
}
