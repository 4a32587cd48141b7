//! The lifeline between candor and each launcher: a unix socket candor
//! listens on (one per process or session), which every launcher connects
//! to before it confines itself. It carries the launcher's [`Report`]s
//! (hello, ready or why setup failed, how the command ended), which the
//! command cannot forge: only the launcher holds the connection. And it is
//! the launcher's life: when candor dies, even by SIGKILL, the kernel
//! closes candor's end, the launcher reads end of file and kills the whole
//! sandbox.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncBufReadExt as _;
use tokio::net::UnixListener;
use tokio::sync::{mpsc, oneshot};

/// What a launcher tells candor, one JSON object a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "event")]
pub enum Report {
    /// The first line: which launch this is (the token candor gave it).
    Hello { token: String, pid: u32 },
    /// Everything the boundary claims holds; the command is starting.
    Ready,
    /// The boundary could not be set up; the command did not run.
    SetupFailed { reason: String },
    /// The command ended (exit code, or the signal that ended it).
    Exited {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
}

/// The longest line a launcher may send.
const MAX_LINE: usize = 8 * 1024;
/// How long a new connection has to say hello.
const HELLO_WAIT: Duration = Duration::from_secs(5);
/// The most launchers connected at once.
const MAX_CONNECTIONS: usize = 1024;

/// A launch candor waits to hear from: where its reports go, and where
/// the connection to write to it goes once it said hello.
#[derive(Debug)]
struct Waiting {
    reports: mpsc::UnboundedSender<Report>,
    writer: oneshot::Sender<tokio::net::UnixStream>,
    /// The connection ends when the [`Watch`] is dropped (a room,
    /// `sandbox::room`, which no process group of candor's holds).
    bound: bool,
}

type Watchers = Arc<Mutex<HashMap<String, Waiting>>>;

/// candor's end of the lifelines. Dropping it closes every connection,
/// which ends every sandbox started with it.
#[derive(Debug)]
pub struct Lifeline {
    path: PathBuf,
    watchers: Watchers,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Lifeline {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One launch's reports, in order.
#[derive(Debug)]
pub struct Watch {
    reports: mpsc::UnboundedReceiver<Report>,
    writer: Option<oneshot::Receiver<tokio::net::UnixStream>>,
}

/// How a launch went, from its reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setup {
    /// The boundary holds; the command runs.
    Ready,
    /// The command did not run, for this reason.
    Failed(String),
}

impl Watch {
    /// A watch on nothing: no launcher reports on it, nothing is written.
    pub fn closed() -> Watch {
        let (_, reports) = mpsc::unbounded_channel();
        Watch {
            reports,
            writer: None,
        }
    }

    /// Waits (at most `limit`) for the launcher to say whether the boundary
    /// holds. A launcher that goes away or stays silent is a failure.
    pub async fn setup(&mut self, limit: Duration) -> Setup {
        let wait = async {
            loop {
                match self.reports.recv().await {
                    Some(Report::Hello { .. }) => continue,
                    Some(Report::Ready) => return Setup::Ready,
                    Some(Report::SetupFailed { reason }) => return Setup::Failed(reason),
                    Some(Report::Exited { .. }) | None => {
                        return Setup::Failed(
                            "the launcher ended before the sandbox was set up".into(),
                        );
                    }
                }
            }
        };
        tokio::time::timeout(limit, wait).await.unwrap_or_else(|_| {
            Setup::Failed(format!(
                "no word from the launcher in {} ms",
                limit.as_millis()
            ))
        })
    }

    /// Writes `line` to the launcher once it has said hello (a spare
    /// launcher waiting for its command, `sandbox::spare`), within
    /// `limit`. Once per launch.
    pub async fn send(&mut self, line: &[u8], limit: Duration) -> Result<(), String> {
        use tokio::io::AsyncWriteExt as _;
        let writer = self.writer.take().ok_or("already sent")?;
        let write = async {
            let mut stream = writer
                .await
                .map_err(|_| "the launcher went away before it said hello".to_owned())?;
            stream
                .write_all(line)
                .await
                .map_err(|e| format!("writing to the launcher: {e}"))
        };
        tokio::time::timeout(limit, write)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no hello from the launcher in {} ms",
                    limit.as_millis()
                ))
            })
    }

    /// The connection to write to, once the launcher (or room) said
    /// hello, within `limit`. Once per launch.
    pub async fn writer(&mut self, limit: Duration) -> Result<tokio::net::UnixStream, String> {
        let writer = self.writer.take().ok_or("already taken")?;
        tokio::time::timeout(limit, writer)
            .await
            .map_err(|_| format!("no hello in {} ms", limit.as_millis()))?
            .map_err(|_| "it went away before it said hello".to_owned())
    }

    /// The command's end as the launcher saw it (`None`: the launcher went
    /// away without saying, e.g. killed).
    pub async fn exited(&mut self) -> Option<Report> {
        loop {
            match self.reports.recv().await {
                Some(r @ Report::Exited { .. }) => return Some(r),
                Some(_) => continue,
                None => return None,
            }
        }
    }
}

impl Lifeline {
    /// Listens at `path` (replacing a stale socket left there).
    pub fn bind(path: &Path) -> std::io::Result<Lifeline> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        let watchers: Watchers = Arc::default();
        let task = tokio::spawn(serve(listener, watchers.clone()));
        Ok(Lifeline {
            path: path.to_owned(),
            watchers,
            task,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A token for one launch (put in its [`super::launch::Launch`]) and
    /// the watch on its reports. A token is claimed by the first
    /// connection that says hello with it, and only once.
    pub fn expect(&self) -> (String, Watch) {
        self.expect_as(false)
    }

    /// [`expect`](Self::expect) for a room (`sandbox::room`): its
    /// connection is ended when the watch is dropped, which ends the room
    /// and everything in it.
    pub fn expect_room(&self) -> (String, Watch) {
        self.expect_as(true)
    }

    fn expect_as(&self, bound: bool) -> (String, Watch) {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let (tx, rx) = mpsc::unbounded_channel();
        let (writer, written) = oneshot::channel();
        let waiting = Waiting {
            reports: tx,
            writer,
            bound,
        };
        let mut watchers = crate::sync::lock(&self.watchers);
        // A launch whose watch was dropped before it said hello (it could
        // not be started, or a spare let go early) is forgotten: its
        // token, if it comes after all, is unknown and not heard.
        watchers.retain(|_, w| !w.reports.is_closed());
        watchers.insert(token.clone(), waiting);
        drop(watchers);
        (
            token,
            Watch {
                reports: rx,
                writer: Some(written),
            },
        )
    }
}

async fn serve(listener: UnixListener, watchers: Watchers) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                if connections.len() >= MAX_CONNECTIONS {
                    tracing::warn!("too many sandbox launchers connected; refusing one");
                    continue;
                }
                connections.spawn(connection(stream, watchers.clone()));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One line of at most [`MAX_LINE`] bytes (`None` at end of file, on an
/// error or a longer line).
async fn bounded_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<String> {
    use tokio::io::AsyncReadExt as _;
    let mut buf = Vec::new();
    let n = reader
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut buf)
        .await
        .ok()?;
    if n == 0 || buf.last() != Some(&b'\n') {
        return None;
    }
    String::from_utf8(buf).ok()
}

/// Reads one launcher's reports until it goes away, holding the
/// connection open (its end is the launcher's life) all the while.
async fn connection(stream: tokio::net::UnixStream, watchers: Watchers) {
    let mut reader = tokio::io::BufReader::new(stream);
    let first = tokio::time::timeout(HELLO_WAIT, bounded_line(&mut reader)).await;
    let Ok(Some(first)) = first else { return };
    let Ok(Report::Hello { token, pid }) = serde_json::from_str::<Report>(&first) else {
        return;
    };
    // Claimed once: a second hello with the same token is not heard.
    let Some(Waiting {
        reports: tx,
        writer,
        bound,
    }) = crate::sync::lock(&watchers).remove(&token)
    else {
        tracing::warn!(
            pid,
            "a sandbox launcher said hello with an unknown or used token"
        );
        return;
    };
    let _ = tx.send(Report::Hello { token, pid });
    // A second descriptor of the connection, to write to the launcher:
    // closing it later ends nothing (the connection ends with this task).
    use std::os::fd::AsFd as _;
    if let Ok(fd) = reader.get_ref().as_fd().try_clone_to_owned()
        && let Ok(stream) =
            tokio::net::UnixStream::from_std(std::os::unix::net::UnixStream::from(fd))
    {
        let _ = writer.send(stream);
    }
    loop {
        let line = tokio::select! {
            line = bounded_line(&mut reader) => line,
            // A room's watch dropped: its end (`shutdown`, which the
            // room reads as the end of its lifeline).
            () = tx.closed(), if bound => {
                let _ = rustix::net::shutdown(reader.get_ref(), rustix::net::Shutdown::Both);
                return;
            }
        };
        let Some(line) = line else { return };
        match serde_json::from_str::<Report>(&line) {
            Ok(report @ (Report::Ready | Report::SetupFailed { .. } | Report::Exited { .. })) => {
                let _ = tx.send(report);
            }
            _ => tracing::warn!(pid, "a sandbox launcher sent an unreadable report"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_launch_whose_watch_was_dropped_before_its_hello_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let lifeline = Lifeline::bind(&dir.path().join("lifeline.sock")).unwrap();
        let (dropped, watch) = lifeline.expect_room();
        drop(watch);
        let (kept, _watch) = lifeline.expect();
        let watchers = crate::sync::lock(&lifeline.watchers);
        assert!(!watchers.contains_key(&dropped), "a dropped launch is kept");
        assert!(
            watchers.contains_key(&kept),
            "a waiting launch is forgotten"
        );
    }
}
