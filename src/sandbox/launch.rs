//! The launcher: `candor __sandbox <launch JSON> -- <program> <args…>`,
//! handled by `main` before anything else starts (no thread, no runtime),
//! so the same path serves a command `tools::exec` spawns and one the
//! editor's terminal runs. Its first stage (this file) connects the
//! lifeline, enters the namespaces, starts the second stage
//! (`sandbox::init`, the same binary again), the init of the new PID
//! namespace, and while that starts binds and hides paths and brings `lo`
//! up; then it tells the second stage, which confines itself and runs the
//! command. The first stage waits for it, forwards a termination request
//! to it, kills it when the lifeline or its parent goes, and exits as the
//! command did.
//!
//! Setup that fails runs nothing: the launcher exits with
//! [`SETUP_FAILED`] and one line on stderr starting [`MESSAGE_PREFIX`],
//! and says `setup-failed` on the lifeline, which (unlike the status and
//! the line, which a command could imitate) only the launcher can say
//! (`protocol/sandbox.md`, "The launcher").

// The launcher is the process `tools::exec` started: it starts its own
// second stage and the command, with std's `Command` (no runtime here).
#![allow(clippy::disallowed_methods)]

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, Write};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal};
use serde::{Deserialize, Serialize};

use super::boundary::{Boundary, Confinement, Namespaces};
use super::lifeline::Report;

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "__sandbox";
/// The launcher's status when the sandbox could not be set up (the
/// command did not run).
pub const SETUP_FAILED: u8 = 125;
/// How the launcher's own line on stderr starts.
pub const MESSAGE_PREFIX: &str = "candor sandbox: ";
/// The variable that carries the first stage's nonce to the second.
pub(super) const NONCE_VAR: &str = "CANDOR_SANDBOX_NONCE";
/// How long the second stage has to confine itself.
const SETUP_WAIT: Duration = Duration::from_secs(10);
/// How long a command has between a termination request and the end of
/// its sandbox.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// What the launcher is given: the boundary (with what to enforce), and
/// where candor listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Launch {
    /// The build of candor that wrote it (`sandbox::launcher::BUILD`): a
    /// launcher of another build refuses it rather than read it otherwise.
    pub build: String,
    pub boundary: Boundary,
    /// candor's lifeline socket (`sandbox::lifeline`): the launcher lives
    /// as long as its connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifeline: Option<PathBuf>,
    /// Names this launch on the lifeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The allowlist proxy's unix socket (`sandbox::proxy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<PathBuf>,
    /// The session's house for this boundary (`sandbox::house`): the
    /// launcher joins its namespaces instead of making its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub house: Option<super::join::HouseRef>,
}

impl Launch {
    /// The arguments that run `argv` in this launch (after the candor
    /// binary's path): `__sandbox <JSON> -- argv…`.
    pub fn args<S: AsRef<OsStr>>(&self, argv: &[S]) -> Result<Vec<OsString>, serde_json::Error> {
        let mut args = vec![
            OsString::from(SUBCOMMAND),
            OsString::from(serde_json::to_string(self)?),
            OsString::from("--"),
        ];
        args.extend(argv.iter().map(|a| a.as_ref().to_owned()));
        Ok(args)
    }
}

/// `<JSON> -- argv…`.
pub(super) fn parse(args: &[OsString]) -> Result<(Launch, Vec<OsString>), String> {
    let usage = || format!("usage: candor {SUBCOMMAND} <launch JSON> -- <program> [args…]");
    let (spec, rest) = args.split_first().ok_or_else(usage)?;
    let spec = spec.to_str().ok_or_else(usage)?;
    let launch: Launch =
        serde_json::from_str(spec).map_err(|e| format!("the launch is not readable: {e}"))?;

    let argv = match rest.split_first() {
        Some((dashes, argv)) if dashes == "--" && !argv.is_empty() => argv.to_vec(),
        _ => return Err(usage()),
    };
    Ok((launch, argv))
}

/// Why `launch` is not this launcher's to run: written by another build.
pub(super) fn foreign(launch: &Launch) -> Option<String> {
    (launch.build != super::launcher::BUILD).then(|| {
        format!(
            "this launcher ({}) is of another build of candor than the one that started it; build both again",
            std::env::current_exe().unwrap_or_default().display()
        )
    })
}

/// Says why setup failed (stderr, and the lifeline if there is one), and
/// the status that goes with it.
pub(super) fn fail(life: Option<&mut UnixStream>, reason: &str) -> ExitCode {
    let line = reason.replace('\n', " ");
    let _ = writeln!(std::io::stderr(), "{MESSAGE_PREFIX}{line}");
    if let Some(life) = life {
        send(life, &Report::SetupFailed { reason: line });
    }
    ExitCode::from(SETUP_FAILED)
}

/// Connects candor's lifeline at `path` and says hello with `token` (the
/// first line of every launcher, spare and house); the connection, or the
/// status of a setup that failed because candor cannot be reached.
pub(super) fn hello(path: &Path, token: &str) -> Result<UnixStream, ExitCode> {
    let mut life = UnixStream::connect(path).map_err(|e| {
        let path = path.display();
        fail(None, &format!("cannot reach candor's lifeline {path}: {e}"))
    })?;
    send(
        &mut life,
        &Report::Hello {
            token: token.to_owned(),
            pid: std::process::id(),
        },
    );
    Ok(life)
}

/// The JSON value a stage is given as its first argument (`None`: there
/// is none, or it is not readable as a `T`).
pub(super) fn argument<T: serde::de::DeserializeOwned>(args: &[OsString]) -> Option<T> {
    serde_json::from_str(args.first()?.to_str()?).ok()
}

/// The read-only binds a launch makes (before the command, or once for a
/// house): the boundary's protected and write-denied paths, and the
/// protected paths found in its writable roots now.
pub(super) fn read_only_paths(boundary: &Boundary) -> Vec<PathBuf> {
    let roots = super::ruleset::write_paths(boundary);
    let mut keep = boundary.protected.clone();
    keep.extend(boundary.write_denied.iter().cloned());
    keep.extend(super::protected::existing(&roots, boundary.home.as_deref()));
    keep
}

/// One report, one line.
pub(super) fn send(stream: &mut UnixStream, report: &Report) {
    if let Ok(mut line) = serde_json::to_vec(report) {
        line.push(b'\n');
        let _ = stream.write_all(&line);
    }
}

/// One report from `stream`, at most 8 KiB.
pub(super) fn receive(reader: &mut std::io::BufReader<UnixStream>) -> Option<Report> {
    use std::io::Read;
    let mut line = Vec::new();
    reader
        .by_ref()
        .take(8 * 1024)
        .read_until(b'\n', &mut line)
        .ok()?;
    serde_json::from_slice(&line).ok()
}

/// The first stage.
pub(super) fn run(
    launch: &Launch,
    argv: Vec<OsString>,
    second: fn(&[OsString]) -> ExitCode,
) -> ExitCode {
    // candor (or the editor) dies: so does the launcher, and with it the
    // namespace.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    super::fork::keep_count();
    let mut life = match &launch.lifeline {
        Some(path) => match hello(path, launch.token.as_deref().unwrap_or_default()) {
            Ok(life) => Some(life),
            Err(failed) => return failed,
        },
        None => None,
    };
    if let Some(why) = foreign(launch) {
        return fail(life.as_mut(), &why);
    }
    let Some(confinement) = launch.boundary.confinement() else {
        return unconfined(life, argv);
    };
    let signals = block_termination();
    let stage = match prepare(launch, confinement, &argv, second) {
        Ok(stage) => stage,
        Err(e) => return fail(life.as_mut(), &e),
    };
    supervise(stage, life, signals)
}

/// A termination request is the command's to answer: the first stage
/// forwards it (`wait_for`) and does not die of it. Blocks those signals
/// and returns them.
pub(super) fn block_termination() -> SigSet {
    let mut signals = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        signals.add(s);
    }
    let _ = signals.thread_block();
    signals
}

/// Runs an unconfined command as the launcher's child, still ended with
/// candor.
fn unconfined(mut life: Option<UnixStream>, argv: Vec<OsString>) -> ExitCode {
    let (program, args) = argv
        .split_first()
        .map_or((OsString::new(), &[][..]), |(p, a)| (p.clone(), a));
    let mut cmd = std::process::Command::new(&program);
    cmd.args(args);
    let mut child = match spawn_unmasked(&mut cmd) {
        Ok(child) => Child::of(child.id()),
        Err(e) => {
            return fail(
                life.as_mut(),
                &format!("cannot run {}: {e}", program.to_string_lossy()),
            );
        }
    };
    if let Some(life) = life.as_mut() {
        send(life, &Report::Ready);
    }
    let report = wait_for(&mut child, life.as_ref(), None, SigSet::empty());
    finish(life, report)
}

/// A command running `sandbox::launcher::RUNNING`, named as the launcher's own (in `ps`,
/// `/proc/…/cmdline`).
pub(super) fn running() -> std::process::Command {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = std::process::Command::new(super::launcher::RUNNING);
    if let Ok(exe) = std::env::current_exe() {
        cmd.arg0(exe);
    }
    cmd
}

/// What the first stage set up, and the second stage starting.
pub(super) struct Stage {
    child: Child,
    listener: UnixListener,
    nonce: String,
}

impl Stage {
    /// Ends the second stage (setup failed here).
    pub(super) fn end(&mut self) {
        self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the second stage to end.
    pub(super) fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait()
    }
}

/// A child of this process by its pid, reaped here: a second stage (a
/// copy of this process, or this binary started again), or a command.
pub(super) struct Child {
    pid: nix::unistd::Pid,
    status: Option<std::process::ExitStatus>,
}

impl Child {
    /// The child whose pid is `pid` (which nothing else reaps).
    pub(super) fn of(pid: u32) -> Child {
        Child {
            pid: nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
            status: None,
        }
    }

    pub(super) fn id(&self) -> u32 {
        u32::try_from(self.pid.as_raw()).unwrap_or(0)
    }

    /// `SIGKILL`, unless it was reaped (its pid may be another's now).
    pub(super) fn kill(&self) {
        if self.status.is_none() {
            let _ = nix::sys::signal::kill(self.pid, Signal::SIGKILL);
        }
    }

    /// How it ended, waiting for it when `block` (`None`: it runs).
    fn reap(&mut self, block: bool) -> std::io::Result<Option<std::process::ExitStatus>> {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let flags = (!block).then_some(WaitPidFlag::WNOHANG);
        loop {
            let status = match waitpid(self.pid, flags) {
                Ok(WaitStatus::Exited(_, code)) => {
                    std::process::ExitStatus::from_raw((code & 0xff) << 8)
                }
                Ok(WaitStatus::Signaled(_, signal, _)) => {
                    std::process::ExitStatus::from_raw(signal as i32)
                }
                Ok(WaitStatus::StillAlive) => return Ok(None),
                Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            self.status = Some(status);
            return Ok(Some(status));
        }
    }

    pub(super) fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.reap(false)
    }

    pub(super) fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.reap(true)?
            .ok_or_else(|| std::io::Error::other("the child did not end"))
    }
}

/// Namespaces (the session's house's when the launch names one that is
/// there), the second stage started, then (while it starts, and unless
/// the house has them) the mounts and `lo`. The second stage waits for
/// the word that they are in place before it confines itself
/// (`supervise`).
fn prepare(
    launch: &Launch,
    c: &Confinement,
    argv: &[OsString],
    second: fn(&[OsString]) -> ExitCode,
) -> Result<Stage, String> {
    let housed = enter(&c.namespaces, launch.house.as_ref())?;
    // The second stage is told the house only when it is in it.
    let inner = Launch {
        lifeline: None,
        token: None,
        house: launch.house.clone().filter(|_| housed),
        ..launch.clone()
    };
    let spec = serde_json::to_string(&inner).map_err(|e| e.to_string())?;
    let mut init = vec![OsString::from("--init"), spec.into(), "--".into()];
    init.extend(argv.iter().cloned());
    let mut stage = start_init(&c.namespaces, init, Second::Copy(second))?;
    if !housed && let Err(e) = mounts(&launch.boundary, c) {
        stage.end();
        return Err(e);
    }
    Ok(stage)
}

/// Enters the namespaces `ns` asks for: the house's, when `house` names
/// one that is there (`sandbox::house`: its mounts are in place), else
/// new ones, with mounts made private. Whether it joined the house.
pub(super) fn enter(
    ns: &Namespaces,
    house: Option<&super::join::HouseRef>,
) -> Result<bool, String> {
    if let Some(house) = house {
        match super::join::enter(house) {
            Ok(()) => return Ok(true),
            Err(super::join::Entering::Failed(why)) => return Err(why),
            // Gone: namespaces of its own, as without a house.
            Err(super::join::Entering::Gone) => {}
        }
    }
    super::namespaces::enter(ns)?;
    if ns.mount {
        super::namespaces::make_private()?;
    }
    Ok(false)
}

/// How a first stage starts its second.
#[derive(Debug, Clone, Copy)]
pub(super) enum Second {
    /// A copy of this process (`sandbox::fork`), which runs this stage
    /// with the arguments after the stage's option: no second start of
    /// the binary. A launcher's and a spare's.
    Copy(fn(&[OsString]) -> ExitCode),
    /// This binary started again, its command line naming the stage (the
    /// house's init: each room, a copy of it, shows that command line,
    /// which must not carry the first stage's token).
    Exec,
}

/// Starts the second stage in the namespaces entered ([`enter`]), given
/// the status socket's nonce: the stage `init` names (its option, then
/// its arguments), in a copy of this process or in this binary started
/// again with `init` after the subcommand (`how`).
pub(super) fn start_init(
    ns: &Namespaces,
    init: Vec<OsString>,
    how: Second,
) -> Result<Stage, String> {
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let address = SocketAddr::from_abstract_name(format!("candor-sandbox-{nonce}"))
        .map_err(|e| format!("the status socket: {e}"))?;
    let listener =
        UnixListener::bind_addr(&address).map_err(|e| format!("the status socket: {e}"))?;
    if let Second::Copy(stage) = how {
        return match super::fork::alone()
            .map_err(|e| format!("starting the sandbox's init: {e}"))?
        {
            super::fork::Forked::Child => {
                drop(listener);
                give_nonce(nonce);
                let code = stage(init.get(1..).unwrap_or_default());
                std::process::exit(i32::from(number_of(code)));
            }
            super::fork::Forked::Parent(pid) => Ok(Stage {
                child: Child::of(u32::try_from(pid.as_raw()).unwrap_or(0)),
                listener,
                nonce,
            }),
        };
    }
    if ns.user {
        super::namespaces::keep_for_init()?;
    }
    // The binary running now, as the kernel holds it: not whatever a
    // command may have put at its path since (`sandbox::launcher`).
    let child = running()
        .arg(SUBCOMMAND)
        .args(init)
        .env(NONCE_VAR, &nonce)
        .spawn()
        .map_err(|e| format!("starting the sandbox's init: {e}"))?;
    Ok(Stage {
        child: Child::of(child.id()),
        listener,
        nonce,
    })
}

/// The nonce a first stage gave its copy of itself (`launch::start_init`).
static NONCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// In a first stage's copy of itself: the status socket's nonce.
fn give_nonce(nonce: String) {
    let _ = NONCE.set(nonce);
}

/// The nonce this process was given as a first stage's copy of itself.
pub(super) fn given_nonce() -> Option<String> {
    NONCE.get().cloned()
}

/// Spawns `cmd` with no signal blocked: a child inherits its parent's
/// mask, and the stages block the termination signals (they forward
/// them) and the house's init the ones it reads, which a command must
/// not inherit (a `trap … TERM` would never run). This process's own
/// mask is back as it was once the child is started.
pub(super) fn spawn_unmasked(
    cmd: &mut std::process::Command,
) -> std::io::Result<std::process::Child> {
    use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};
    let mut kept = SigSet::empty();
    let _ = sigprocmask(
        SigmaskHow::SIG_SETMASK,
        Some(&SigSet::empty()),
        Some(&mut kept),
    );
    let child = cmd.spawn();
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&kept), None);
    child
}

/// The number an exit code stands for (`ExitCode` has no stable way out
/// as a number; it equals the one made from its number).
pub(super) fn number_of(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(1)
}

/// The binds and hidden paths, the private `/dev/shm`, and `lo` up: what
/// must be in place before the command starts (the second stage, started
/// already, confines itself only after them, and enters the working
/// directory again, as the new mounts show it).
pub(super) fn mounts(boundary: &Boundary, c: &Confinement) -> Result<(), String> {
    if c.namespaces.mount {
        super::namespaces::protect(&read_only_paths(boundary))?;
        let scratch = ["/dev/shm", "/tmp", "/mnt"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_dir())
            .unwrap_or_else(|| PathBuf::from("/dev"));
        super::namespaces::hide(&boundary.read_denied, &scratch)?;
        super::namespaces::private_shm()?;
    }
    if c.namespaces.network {
        super::namespaces::loopback_up()?;
    }
    Ok(())
}

/// Tells the second stage the mounts are in place, then [`follow`]s it.
fn supervise(mut stage: Stage, mut life: Option<UnixStream>, signals: SigSet) -> ExitCode {
    let mut status = match accept_init(&mut stage) {
        Ok(reader) => reader,
        Err(e) => {
            stage.end();
            return fail(life.as_mut(), &e);
        }
    };
    // The mounts are in place: the second stage may confine itself.
    send(status.get_mut(), &Report::Ready);
    follow(stage, status, life, signals)
}

/// Waits for the second stage's word (it is confining itself), reports
/// it, then waits for the command's end.
pub(super) fn follow(
    mut stage: Stage,
    mut status: std::io::BufReader<UnixStream>,
    mut life: Option<UnixStream>,
    signals: SigSet,
) -> ExitCode {
    match receive(&mut status) {
        Some(Report::Ready) => {}
        Some(Report::SetupFailed { reason }) => {
            let _ = stage.child.wait();
            return fail(life.as_mut(), &reason);
        }
        _ => {
            stage.end();
            return fail(
                life.as_mut(),
                "the sandbox's init ended before it was set up",
            );
        }
    }
    if let Some(life) = life.as_mut() {
        send(life, &Report::Ready);
    }
    let report = wait_for(&mut stage.child, life.as_ref(), Some(&mut status), signals);
    finish(life, report)
}

/// The second stage's connection, checked by its nonce.
pub(super) fn accept_init(stage: &mut Stage) -> Result<std::io::BufReader<UnixStream>, String> {
    let deadline = Instant::now() + SETUP_WAIT;
    stage
        .listener
        .set_nonblocking(true)
        .map_err(|e| e.to_string())?;
    loop {
        match stage.listener.accept() {
            // Only the second stage: the nonce is in the socket's name,
            // which anyone in the network namespace can read.
            Ok((stream, _)) if !from_child(&stream, &stage.child) => drop(stream),
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(SETUP_WAIT));
                let mut reader = std::io::BufReader::new(stream);
                match receive(&mut reader) {
                    Some(Report::Hello { token, .. }) if token == stage.nonce => return Ok(reader),
                    _ => continue,
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(format!("the status socket: {e}")),
        }
        if let Ok(Some(status)) = stage.child.try_wait() {
            return Err(format!("the sandbox's init ended at once ({status})"));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "the sandbox's init gave no word in {} s",
                SETUP_WAIT.as_secs()
            ));
        }
        // Woken by the connection; a few milliseconds at most, to see
        // whether the second stage is still there.
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        let mut fds = [PollFd::new(stage.listener.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, PollTimeout::from(5u8));
    }
}

/// Whether `stream`'s other end is `child` (its credentials, as the
/// kernel took them when it connected, in this process's PID namespace).
fn from_child(stream: &UnixStream, child: &Child) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    getsockopt(stream, PeerCredentials)
        .is_ok_and(|cred| u32::try_from(cred.pid()).is_ok_and(|pid| pid == child.id()))
}

/// `Exited` for a status.
fn exit_report(status: &std::process::ExitStatus) -> Report {
    use std::os::unix::process::ExitStatusExt;
    Report::Exited {
        code: status.code(),
        signal: status.signal(),
    }
}

/// Reports the end and ends the same way (a command killed by a signal:
/// the launcher too, so its parent sees the same).
fn finish(life: Option<UnixStream>, report: Option<Report>) -> ExitCode {
    // In a house, the second stage may have been killed (candor went, or
    // the command did not end when asked): its orphans are ended now.
    super::join::poke();
    if let (Some(mut life), Some(report)) = (life, report.clone()) {
        send(&mut life, &report);
    }
    if let Some(Report::Exited {
        code: None,
        signal: Some(signal),
    }) = report
        && let Ok(sig) = Signal::try_from(signal)
    {
        let _ = SigSet::all().thread_unblock();
        let _ = nix::sys::signal::raise(sig);
    }
    report.as_ref().map_or(ExitCode::FAILURE, status_of)
}

/// The exit status that says what `report` says: the command's code, or
/// 128 and the signal that ended it; a failure for anything else.
pub(super) fn status_of(report: &Report) -> ExitCode {
    match report {
        Report::Exited {
            code: Some(code), ..
        } => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)),
        Report::Exited {
            signal: Some(signal),
            ..
        } => ExitCode::from(u8::try_from((128 + signal) & 0xff).unwrap_or(1)),
        _ => ExitCode::FAILURE,
    }
}

/// Waits for `child` to end, and reports how (the second stage's own
/// word from `status` when it gave one, else its exit status). Meanwhile:
/// when candor's end of the lifeline closes, `child` is killed at once
/// (and with it the PID namespace); a termination request (`signals`:
/// SIGTERM, SIGINT, SIGHUP) goes to the launcher's process group, the
/// command included, and `TERM_GRACE` later `child` is killed (the init of
/// a PID namespace ignores signals it has no handler for, so it cannot be
/// asked itself). One thread: after `unshare(CLONE_NEWPID)` the launcher
/// can start no other.
fn wait_for(
    child: &mut Child,
    life: Option<&UnixStream>,
    mut status: Option<&mut std::io::BufReader<UnixStream>>,
    signals: SigSet,
) -> Option<Report> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use std::os::fd::AsFd;
    let mut mask = signals;
    mask.add(Signal::SIGCHLD);
    let _ = mask.thread_block();
    let signalfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).ok();
    let pid = child.id();
    let mut kill_at: Option<Instant> = None;
    let mut reported: Option<Report> = None;
    loop {
        if let Ok(Some(waited)) = child.try_wait() {
            return reported.or_else(|| Some(exit_report(&waited)));
        }
        // A line already read into the buffer is not seen by poll.
        if let Some(reader) = status.as_deref_mut()
            && !reader.buffer().is_empty()
        {
            reported = receive(reader).or(reported);
        }
        let wait = kill_at.map_or(Duration::from_millis(500), |at| {
            at.saturating_duration_since(Instant::now())
        });
        let mut fds: Vec<PollFd> = Vec::new();
        let life_at = life.map(|l| {
            fds.push(PollFd::new(l.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let status_at = status.as_deref().map(|r| {
            fds.push(PollFd::new(r.get_ref().as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let signal_at = signalfd.as_ref().map(|s| {
            fds.push(PollFd::new(s.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
        let _ = poll(&mut fds, timeout);
        let ready = |at: Option<usize>| {
            at.and_then(|i| fds.get(i))
                .and_then(|f| f.revents())
                .is_some_and(|r| !r.is_empty())
        };
        let (life_ready, status_ready, signal_ready) =
            (ready(life_at), ready(status_at), ready(signal_at));
        drop(fds);
        if life_ready && lifeline_closed(life) {
            kill(pid);
            let _ = child.wait();
            // candor is gone: no one to tell.
            return None;
        }
        if status_ready && let Some(reader) = status.as_deref_mut() {
            match receive(reader) {
                Some(report) => reported = Some(report),
                // The second stage's end: nothing more will come.
                None => status = None,
            }
        }
        if signal_ready && let Some(fd) = signalfd.as_ref() {
            while let Ok(Some(info)) = fd.read_signal() {
                let signo = i32::try_from(info.ssi_signo).unwrap_or(0);
                if signo == Signal::SIGCHLD as i32 || kill_at.is_some() {
                    continue;
                }
                if let Ok(sig) = Signal::try_from(signo) {
                    let _ = nix::sys::signal::killpg(nix::unistd::getpgrp(), sig);
                    kill_at = Some(Instant::now() + TERM_GRACE);
                }
            }
        }
        if kill_at.is_some_and(|at| Instant::now() >= at) {
            kill(pid);
        }
    }
}

/// Whether the lifeline has reached its end (candor closed it, or died).
fn lifeline_closed(life: Option<&UnixStream>) -> bool {
    use std::io::Read;
    let Some(mut life) = life else { return false };
    let mut buf = [0u8; 64];
    matches!(life.read(&mut buf), Ok(0) | Err(_))
}

fn kill(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first stage's status socket, its second stage `child`.
    fn stage(child: std::process::Child) -> Stage {
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let address = SocketAddr::from_abstract_name(format!("candor-sandbox-{nonce}")).unwrap();
        Stage {
            child: Child::of(child.id()),
            listener: UnixListener::bind_addr(&address).unwrap(),
            nonce,
        }
    }

    fn hello(nonce: &str) -> UnixStream {
        let address = SocketAddr::from_abstract_name(format!("candor-sandbox-{nonce}")).unwrap();
        let mut stream = UnixStream::connect_addr(&address).unwrap();
        send(
            &mut stream,
            &Report::Hello {
                token: nonce.to_owned(),
                pid: std::process::id(),
            },
        );
        stream
    }

    #[test]
    fn only_the_second_stage_is_heard_on_the_status_socket() {
        // The nonce is in the socket's name, which anyone in the same
        // network namespace reads in /proc/net/unix (a command with the
        // network on and unix sockets allowed, on a kernel whose Landlock
        // does not scope abstract sockets): another process saying hello
        // with it is not taken for the second stage.
        let child = std::process::Command::new("sleep")
            .arg("0.5")
            .spawn()
            .unwrap();
        let mut stage = stage(child);
        let _impostor = hello(&stage.nonce);
        let accepted = accept_init(&mut stage);
        assert!(accepted.is_err(), "an impostor was taken for the init");
        // Control: the second stage itself (here, the child) is heard.
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let script = format!(
            "exec python3 -c 'import socket,json; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0candor-sandbox-{nonce}\"); s.send((json.dumps({{\"event\":\"hello\",\"token\":\"{nonce}\",\"pid\":0}})+\"\\n\").encode()); import time; time.sleep(2)'"
        );
        let address = SocketAddr::from_abstract_name(format!("candor-sandbox-{nonce}")).unwrap();
        let listener = UnixListener::bind_addr(&address).unwrap();
        // Reaped by `stage.end()`.
        let child = std::process::Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .unwrap()
            .id();
        let mut stage = Stage {
            child: Child::of(child),
            listener,
            nonce,
        };
        assert!(accept_init(&mut stage).is_ok());
        stage.end();
    }
}
