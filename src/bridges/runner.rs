//! Runs one command hook the way Claude Code and Codex do, and says what
//! happened; what that *means* is each bridge's business.
//!
//! The command starts in its own process group (`tools::exec::hook`), gets
//! the event's JSON on stdin followed by end of file (a hook that does not
//! read it is fine), and has its stdout and stderr captured, each up to
//! [`MAX_OUTPUT`]; beyond that the rest is read and dropped and the run is
//! marked `truncated`. At its timeout the whole group is killed. Dropping
//! the future (a cancelled turn) kills the group too.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::tools::exec::{self, ProcessGroup};

/// The most of stdout (and of stderr) a hook run keeps.
pub const MAX_OUTPUT: usize = 1024 * 1024;

/// How long the output pipes are drained after the hook exited (a process
/// it left behind may hold them open).
const DRAIN: Duration = Duration::from_millis(500);

/// A command hook, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// Shell form: the command line for `sh -c`. Exec form: the program.
    pub command: String,
    /// Exec form: the arguments (no shell).
    pub args: Option<Vec<String>>,
    pub timeout: Duration,
}

impl HookCommand {
    /// How the hook is named to the user: its command line, its middle
    /// elided past 80 characters (the script's name is at the end).
    pub fn label(&self) -> String {
        let mut text = self.command.clone();
        if let Some(args) = &self.args {
            for a in args {
                text.push(' ');
                text.push_str(a);
            }
        }
        crate::text::elide_middle(&text, 24, 55)
    }
}

/// How a hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by a signal it did not ask for (not the timeout).
    Signal(String),
    /// Ran past its timeout and was killed.
    TimedOut,
    /// Could not be started at all.
    NotStarted(String),
}

/// What one run of a hook produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    /// stdout or stderr was longer than [`MAX_OUTPUT`] and was cut.
    pub truncated: bool,
    pub duration: Duration,
}

impl HookRun {
    /// The run as a short failure description (`exited with status 1: …`),
    /// for a notice.
    pub fn failure(&self) -> String {
        let first_line = |s: &str| {
            s.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(|l| format!(": {}", shorten(l, 200)))
                .unwrap_or_default()
        };
        match &self.exit {
            Exit::Code(code) => format!("exited with status {code}{}", first_line(&self.stderr)),
            Exit::Signal(signal) => format!("was killed by {signal}{}", first_line(&self.stderr)),
            Exit::TimedOut => format!(
                "did not finish within its timeout ({:.0} s) and was stopped",
                self.duration.as_secs_f64()
            ),
            Exit::NotStarted(e) => format!("could not be started: {e}"),
        }
    }
}

/// Runs `hook` with `input` on stdin, in `cwd`, with `env` added.
pub async fn run(
    hook: &HookCommand,
    input: &Value,
    cwd: &Path,
    env: &[(String, String)],
) -> HookRun {
    let started = Instant::now();
    let not_started = |e: String| HookRun {
        exit: Exit::NotStarted(e),
        stdout: String::new(),
        stderr: String::new(),
        truncated: false,
        duration: started.elapsed(),
    };
    let cmd = exec::hook(&hook.command, hook.args.as_deref(), cwd, env);
    let mut group = match ProcessGroup::spawn(cmd) {
        Ok(g) => g,
        Err(e) => return not_started(e.to_string()),
    };
    let child = group.child_mut();
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return not_started("its standard streams could not be set up".into());
    };
    let mut payload = input.to_string().into_bytes();
    payload.push(b'\n');
    // A hook may exit without reading its input: a broken pipe is fine.
    let feed = async move {
        let _ = stdin.write_all(&payload).await;
        let _ = stdin.shutdown().await;
    };
    let (out_buf, err_buf) = (Captured::default(), Captured::default());
    let out = tokio::spawn(read_capped(stdout, out_buf.clone()));
    let err = tokio::spawn(read_capped(stderr, err_buf.clone()));
    let waited = tokio::time::timeout(hook.timeout, async {
        let (_, status) = tokio::join!(feed, group.child_mut().wait());
        status
    })
    .await;
    let exit = match waited {
        Err(_) => Exit::TimedOut,
        Ok(Err(e)) => Exit::NotStarted(format!("could not wait for it: {e}")),
        Ok(Ok(status)) => match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(exec::signal_name(signal)),
            (None, None) => Exit::NotStarted("it ended without a status".into()),
        },
    };
    // Whatever it left behind goes with it.
    group.signal(Signal::SIGKILL);
    // A process that escaped the group (`setsid`) may hold the pipes open:
    // the answer is what the hook wrote by the time it exited and the pipes
    // were drained, not nothing.
    let collect = |mut task: tokio::task::JoinHandle<()>, buf: Captured| async move {
        if tokio::time::timeout(DRAIN, &mut task).await.is_err() {
            task.abort();
            tracing::debug!(
                "a hook's output pipe stayed open after it exited; using what it wrote"
            );
        }
        buf.take()
    };
    let ((stdout, cut_out), (stderr, cut_err)) =
        tokio::join!(collect(out, out_buf), collect(err, err_buf));
    HookRun {
        exit,
        stdout,
        stderr,
        truncated: cut_out || cut_err,
        duration: started.elapsed(),
    }
}

/// What a hook wrote on one stream so far (shared with the task reading
/// it, so that what was read survives a reader that never sees the end).
#[derive(Debug, Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<(Vec<u8>, bool)>>);

impl Captured {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<u8>, bool)> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take(&self) -> (String, bool) {
        let (bytes, cut) = std::mem::take(&mut *self.lock());
        (String::from_utf8_lossy(&bytes).into_owned(), cut)
    }
}

/// Reads a stream to its end into `into`, keeping at most [`MAX_OUTPUT`]
/// bytes.
async fn read_capped(mut stream: impl AsyncRead + Unpin, into: Captured) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut kept = into.lock();
                let room = MAX_OUTPUT.saturating_sub(kept.0.len());
                if n > room {
                    kept.1 = true;
                }
                kept.0.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// A run that exited with `code` (tests of what answers mean).
#[cfg(test)]
pub(crate) fn exited(code: i32, stdout: &str, stderr: &str) -> HookRun {
    HookRun {
        exit: Exit::Code(code),
        stdout: stdout.into(),
        stderr: stderr.into(),
        truncated: false,
        duration: Duration::ZERO,
    }
}

/// `text` cut to `max` characters with an ellipsis.
pub use crate::text::shorten;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shell(command: &str, timeout_ms: u64) -> HookCommand {
        HookCommand {
            command: command.into(),
            args: None,
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[tokio::test]
    async fn the_hook_reads_its_input_and_its_streams_and_status_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let run = run(
            &shell("cat; echo oops >&2; exit 3", 5000),
            &json!({"a": 1}),
            dir.path(),
            &[],
        )
        .await;
        assert_eq!(run.exit, Exit::Code(3));
        assert_eq!(run.stdout, "{\"a\":1}\n");
        assert_eq!(run.stderr, "oops\n");
        assert_eq!(run.failure(), "exited with status 3: oops");
    }

    #[tokio::test]
    async fn exec_form_runs_without_a_shell_and_gets_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let hook = HookCommand {
            command: "printenv".into(),
            args: Some(vec!["PROJECT".into()]),
            timeout: Duration::from_secs(5),
        };
        let run = run(
            &hook,
            &json!({}),
            dir.path(),
            &[("PROJECT".into(), "/p".into())],
        )
        .await;
        assert_eq!((run.exit, run.stdout.as_str()), (Exit::Code(0), "/p\n"));
    }

    #[tokio::test]
    async fn a_hook_past_its_timeout_is_killed_with_what_it_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child.pid");
        let command = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let run = run(&shell(&command, 300), &json!({}), dir.path(), &[]).await;
        assert_eq!(run.exit, Exit::TimedOut);
        assert!(run.duration < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut gone = false;
        for _ in 0..50 {
            // Gone, or a zombie waiting for init to reap it.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')) {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone, "the hook's background sleep outlived it");
    }

    #[tokio::test]
    async fn an_answer_stands_when_an_escaped_child_keeps_the_pipe_open() {
        // The hook prints its decision, leaves a `setsid` child holding its
        // stdout, and exits 2: the answer and the exit are what count.
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("escaped.pid");
        let command = format!(
            "echo '{{\"decision\": \"block\", \"reason\": \"no\"}}'; echo why >&2; setsid sh -c 'echo $$ > {}; exec sleep 5' & sleep 0.2; exit 2",
            marker.display()
        );
        let started = Instant::now();
        let run = run(&shell(&command, 10_000), &json!({}), dir.path(), &[]).await;
        assert_eq!(run.exit, Exit::Code(2));
        assert!(run.stdout.contains("\"decision\": \"block\""), "{run:?}");
        assert!(run.stderr.contains("why"), "{run:?}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        if let Ok(pid) = std::fs::read_to_string(&marker) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid.trim().parse().unwrap_or(0)),
                Signal::SIGKILL,
            );
        }
    }

    #[tokio::test]
    async fn huge_output_is_cut_and_a_missing_program_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let run_big = run(
            &shell("head -c 3000000 /dev/zero | tr '\\\\0' x", 10_000),
            &json!({}),
            dir.path(),
            &[],
        )
        .await;
        assert_eq!(run_big.stdout.len(), MAX_OUTPUT);
        assert!(run_big.truncated);
        let missing = HookCommand {
            command: "/nonexistent/hook".into(),
            args: Some(vec![]),
            timeout: Duration::from_secs(5),
        };
        let run_missing = run(&missing, &json!({}), dir.path(), &[]).await;
        assert!(
            matches!(run_missing.exit, Exit::NotStarted(_)),
            "{run_missing:?}"
        );
    }
}
