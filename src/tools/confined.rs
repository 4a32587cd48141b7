//! What a session's commands need to run confined (`protocol/sandbox.md`):
//! candor's own binary as the launcher, the session's private directory
//! (its `TMPDIR`, and the lifeline every launcher of the session holds,
//! so a sandbox ends with the session and with candor, even SIGKILLed),
//! and what this kernel gives (probed once per process). A [`Confiner`]
//! is shared by the session's calls and background shells; its last
//! clone, dropped with the session, removes the directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::sandbox::{Boundary, Launch, Lifeline, Probe, Setup, Watch};

/// How long a launcher has to say whether the boundary holds.
pub const SETUP_WAIT: Duration = Duration::from_secs(10);

/// The session's sandbox runtime (cheap to clone).
#[derive(Debug, Clone)]
pub struct Confiner {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    launcher: Option<PathBuf>,
    /// The session's working directory where its links led when the
    /// session started.
    workdir: PathBuf,
    tmpdir: PathBuf,
    /// Why the session's directory or lifeline could not be made.
    broken: Option<String>,
    // Dropped before the directory holding its socket.
    lifeline: Option<Lifeline>,
    _dir: Option<tempfile::TempDir>,
}

impl Confiner {
    /// The session's directory (`candor-…` in the system's temporary
    /// directory, mode 0700) with `tmp/` (the commands' `TMPDIR`) and the
    /// lifeline's socket. Must be called inside the runtime. A directory
    /// or socket that cannot be made leaves commands unconfined, their
    /// cards saying why. `cwd` is the session's working directory, taken
    /// where its links lead now ([`Confiner::workdir`]).
    pub fn new(launcher: Option<PathBuf>, cwd: &Path) -> Confiner {
        let workdir = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
        let made = tempfile::Builder::new()
            .prefix("candor-")
            .tempdir()
            .map_err(|e| format!("the session's sandbox directory cannot be made: {e}"))
            .and_then(|dir| {
                // Named without links, as every writable root is.
                let real = std::fs::canonicalize(dir.path())
                    .map_err(|e| format!("the session's sandbox directory cannot be read: {e}"))?;
                let tmp = real.join("tmp");
                std::fs::create_dir(&tmp).map_err(|e| {
                    format!("the session's TMPDIR {} cannot be made: {e}", tmp.display())
                })?;
                let lifeline = Lifeline::bind(&dir.path().join("lifeline.sock"))
                    .map_err(|e| format!("the sandbox's lifeline cannot be bound: {e}"))?;
                Ok((dir, tmp, lifeline))
            });
        let inner = match made {
            Ok((dir, tmpdir, lifeline)) => Inner {
                launcher,
                workdir,
                tmpdir,
                broken: None,
                lifeline: Some(lifeline),
                _dir: Some(dir),
            },
            Err(why) => {
                tracing::warn!("{why}; commands run unconfined");
                Inner {
                    launcher,
                    workdir,
                    tmpdir: std::env::temp_dir(),
                    broken: Some(why),
                    lifeline: None,
                    _dir: None,
                }
            }
        };
        Confiner {
            inner: Arc::new(inner),
        }
    }

    /// The session's working directory as its commands' writable root:
    /// where its links led when the session started. A link a command
    /// puts in its place later is not followed (`sandbox::ruleset`).
    pub fn workdir(&self) -> &Path {
        &self.inner.workdir
    }

    /// The commands' `TMPDIR`.
    pub fn tmpdir(&self) -> &Path {
        &self.inner.tmpdir
    }

    /// candor's binary, the launcher, when known and usable.
    pub fn launcher(&self) -> Option<&Path> {
        self.inner
            .launcher
            .as_deref()
            .filter(|_| self.inner.broken.is_none())
    }

    /// What this kernel gives (asked once per process); nothing without a
    /// launcher.
    pub async fn probe(&self) -> &'static Probe {
        static NOTHING: std::sync::OnceLock<Probe> = std::sync::OnceLock::new();
        match self.launcher() {
            Some(launcher) => super::exec::sandbox_probe(launcher).await,
            None => NOTHING.get_or_init(|| {
                Probe::nothing("candor's launcher (its own binary) is not known to this server")
            }),
        }
    }

    /// Asks what the kernel gives now, in the background (once per
    /// process, and not with the sandbox off), so that the session's first
    /// command does not wait for the answer.
    pub fn probe_soon(&self, sandbox: &crate::sandbox::Sandbox) {
        if sandbox.preset != crate::sandbox::Preset::FullAccess {
            let confiner = self.clone();
            tokio::spawn(async move { confiner.probe().await });
        }
    }

    /// The launch of one command in `boundary`, and the watch on its
    /// launcher's reports.
    pub fn launch(&self, boundary: &Boundary) -> Result<(PathBuf, Launch, Watch), String> {
        let launcher = self
            .launcher()
            .ok_or_else(|| {
                self.inner
                    .broken
                    .clone()
                    .unwrap_or_else(|| "candor's launcher is not known".into())
            })?
            .to_owned();
        let lifeline = self
            .inner
            .lifeline
            .as_ref()
            .ok_or("the sandbox's lifeline is not there")?;
        let (token, watch) = lifeline.expect();
        let launch = Launch {
            boundary: boundary.clone(),
            lifeline: Some(lifeline.path().to_owned()),
            token: Some(token),
            proxy: None,
        };
        Ok((launcher, launch, watch))
    }
}

/// Waits for a launcher to say the boundary holds (bounded, and ended by
/// `cancel`): `Ok` when it does, else why not.
pub async fn ready(
    watch: &mut Watch,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(), Option<String>> {
    tokio::select! {
        setup = watch.setup(SETUP_WAIT) => match setup {
            Setup::Ready => Ok(()),
            Setup::Failed(why) => Err(Some(why)),
        },
        _ = cancel.cancelled() => Err(None),
    }
}
