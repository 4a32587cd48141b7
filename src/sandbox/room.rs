//! A room in the session's house (`protocol/sandbox.md`, "Rooms"): the
//! second stage of one confined command, made by the house's init as a
//! copy of itself (`sandbox::fork`) instead of by a launcher started for
//! the command, so a command candor runs in its house costs one process
//! start, the command's own.
//!
//! candor asks the house for a room ahead of the next command, naming
//! the token of a lifeline launch (`room <token>` on the house's
//! lifeline, which its first stage hands on to its init). The room, in
//! every namespace of the house from birth, connects candor's lifeline
//! and says hello with the token, then confines itself exactly as any
//! second stage does (`init::confine`: capabilities, `no_new_privs`,
//! Landlock, seccomp) and becomes the command's subreaper. Then it
//! waits for the command: candor sends one byte carrying the command's
//! output pipe (`SCM_RIGHTS`), then the [`Start`] line. The room checks
//! the start is for this house's boundary, enters the working directory,
//! starts the command in a process group of its own, says ready, and
//! supervises it: `terminate` on the lifeline sends the group `SIGTERM`;
//! the lifeline's end (candor killed the call, let the room go, or died)
//! ends everything below the room at once. When the command ends, the
//! room kills whatever it left behind, then reports how the command
//! ended, and waits for the next command on its lifeline: candor gives
//! a room whose command ended and said so back to the session as its
//! spare (`tools::running::InRoom::free`), so one room serves a
//! session's commands one after another. What a killed room left is its
//! parent's, the house's init, which kills it as soon as the room's end
//! wakes it.

use std::io::{BufRead as _, Read as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::boundary::Boundary;
use super::init::refuse;
use super::launch::{Launch, NONCE_VAR, send};
use super::lifeline::Report;
use super::spare::Start;

/// The word that asks a house for a room: `room <token>` a line.
pub const ASK: &str = "room";
/// What candor writes on a room's lifeline to ask its command to end.
pub const TERMINATE: &[u8] = b"terminate\n";
/// The byte that carries the command's output pipe.
pub const OUTPUT: u8 = b'o';
/// How long a word on the lifeline may take to arrive whole.
const LINE_WAIT: Duration = Duration::from_secs(1);

/// Whether `token` may name a room: a lifeline token (`Lifeline::expect`),
/// hexadecimal, nothing a line could be split on.
pub fn token_fits(token: &str) -> bool {
    !token.is_empty() && token.len() <= 64 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The room's life, in the house's init's copy of itself: the room of
/// the lifeline launch `token` of candor's `lifeline`, for the house's
/// `boundary`, serving each command candor sends until it lets the room
/// go (success), refuses a start (`SETUP_FAILED`), or candor goes
/// (failure).
pub(super) fn run(lifeline: &std::path::Path, boundary: &Boundary, token: &str) -> ExitCode {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // The init's pokes are not the room's: only its children's ends.
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    let _ = mask.thread_block();
    // Before seccomp, which may refuse it a unix socket.
    let mut life = match super::launch::hello(lifeline, token) {
        Ok(life) => life,
        Err(failed) => return failed,
    };
    let Some(c) = boundary.confinement() else {
        return refuse(&mut life, "a room of a house without a boundary");
    };
    let launch = Launch {
        build: super::launcher::BUILD.into(),
        boundary: boundary.clone(),
        lifeline: None,
        token: None,
        proxy: None,
        house: None,
    };
    let own = match super::init::confine(&launch, c, true) {
        Ok(env) => env,
        Err(e) => return refuse(&mut life, &e),
    };
    // Landlock keeps its signals in the room's own domain: what it started.
    let scoped = c.landlock.scopes_signals();
    // Confined ahead; now each command candor sends, one at a time, until
    // it lets the room go.
    loop {
        // A word read with a bound in the last command's supervision must
        // not end the wait for the next.
        let _ = life.set_read_timeout(None);
        let Some(output) = receive_output(&life) else {
            // Let go (or a word that was not the pipe): nothing runs.
            return ExitCode::SUCCESS;
        };
        if let Err(end) = serve(&mut life, boundary, own.clone(), output, scoped) {
            return end;
        }
    }
}

/// Runs one command in the room: reads its start, checks it, enters its
/// working directory, starts it, says ready, supervises it and says how
/// it ended (everything it left ended first). `Err`: the room's end (a
/// start refused, said so; or candor gone).
fn serve(
    life: &mut UnixStream,
    boundary: &Boundary,
    own: Vec<(String, String)>,
    output: OwnedFd,
    scoped: bool,
) -> Result<(), ExitCode> {
    let Ok(stream) = life.try_clone() else {
        return Err(refuse(life, "the lifeline cannot be read"));
    };
    let mut words = std::io::BufReader::new(stream);
    let start = match super::spare::read_start_from(&mut words) {
        Some(Ok(start)) => start,
        Some(Err(e)) => return Err(refuse(life, &e)),
        None => return Err(ExitCode::SUCCESS),
    };
    if let Err(why) = fits(&start, boundary) {
        return Err(refuse(life, &why));
    }
    if let Err(e) = std::env::set_current_dir(&start.cwd) {
        let cwd = start.cwd.display();
        return Err(refuse(life, &format!("the working directory {cwd}: {e}")));
    }
    let command = match spawn(&start, own, output) {
        Ok(pid) => pid,
        Err(e) => return Err(refuse(life, &e)),
    };
    send(life, &Report::Ready);
    match supervise(command, &mut words, scoped) {
        Some(report) => {
            send(life, &report);
            Ok(())
        }
        None => Err(ExitCode::FAILURE),
    }
}

/// The command's output pipe: one [`OUTPUT`] byte carrying a descriptor
/// (`None` at the lifeline's end, or anything else).
fn receive_output(life: &UnixStream) -> Option<OwnedFd> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut byte = [0u8; 1];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        match recvmsg(
            life,
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other.ok()?,
        }
    };
    if got.bytes != 1 || byte[0] != OUTPUT {
        return None;
    }
    let mut fds: Vec<OwnedFd> = control
        .drain()
        .filter_map(|m| match m {
            RecvAncillaryMessage::ScmRights(fds) => Some(fds),
            _ => None,
        })
        .flatten()
        .collect();
    // Exactly one: a second would be kept open by nothing.
    (fds.len() == 1).then(|| fds.pop()).flatten()
}

/// Whether `start` is this room's: of this build, for exactly the
/// house's `boundary`.
fn fits(start: &Start, boundary: &Boundary) -> Result<(), String> {
    if let Some(why) = super::launch::foreign(&start.launch) {
        return Err(why);
    }
    if start.launch.boundary != *boundary {
        return Err("a room of the session's house was sent a command for another boundary".into());
    }
    Ok(())
}

/// Starts the command: `argv` in a process group of its own, `env` and
/// the sandbox's own variables (`own`, which win) added, stdin empty,
/// stdout and stderr the pipe `output`.
#[allow(clippy::disallowed_methods)] // a room is a process `tools::exec` started, through its house
fn spawn(start: &Start, own: Vec<(String, String)>, output: OwnedFd) -> Result<Pid, String> {
    use std::os::unix::process::CommandExt as _;
    let (program, args) = start.argv.split_first().ok_or("no command")?;
    let errors = output
        .try_clone()
        .map_err(|e| format!("the output pipe: {e}"))?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env_remove(NONCE_VAR)
        .envs(start.env.iter().map(|(k, v)| (k, v)))
        .envs(own)
        .stdin(std::process::Stdio::null())
        .stdout(output)
        .stderr(errors)
        .process_group(0);
    let child = super::launch::spawn_unmasked(&mut cmd)
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    drop(cmd);
    let pid = i32::try_from(child.id()).map_err(|_| "the command's pid")?;
    // Reaped below (`supervise`), not by std.
    drop(child);
    Ok(Pid::from_raw(pid))
}

/// Waits for `command` to end, reaping every process that ends below
/// the room meanwhile, and answering candor's words: `terminate` sends
/// the command's process group `SIGTERM`; the lifeline's end kills
/// everything below the room (`None`: no one is left to tell). When the
/// command ends, what it left is killed ([`end_below`]), then how it
/// ended is returned.
fn supervise(
    command: Pid,
    words: &mut std::io::BufReader<UnixStream>,
    scoped: bool,
) -> Option<Report> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    let ended = SignalFd::with_flags(&chld, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).ok();
    let _ = words.get_ref().set_read_timeout(Some(LINE_WAIT));
    loop {
        // Reap first: a command that ended before the signal descriptor
        // was made signalled nothing it can read.
        loop {
            let ended = match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(status) => super::init::end_of(status, command),
                Err(nix::errno::Errno::EINTR) => None,
                // No child left: the command was reaped already.
                Err(_) => Some(super::init::UNKNOWN_END),
            };
            if let Some(report) = ended {
                end_below(scoped);
                return Some(report);
            }
        }
        if words.buffer().is_empty() {
            let mut fds = vec![PollFd::new(words.get_ref().as_fd(), PollFlags::POLLIN)];
            if let Some(fd) = ended.as_ref() {
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
            }
            // Woken by a child's end or candor's word; without the signal
            // descriptor, a look every 50 ms.
            let timeout = match ended {
                Some(_) => PollTimeout::NONE,
                None => PollTimeout::from(50u8),
            };
            let _ = poll(&mut fds, timeout);
            let heard = fds
                .first()
                .and_then(|f| f.revents())
                .is_some_and(|r| !r.is_empty());
            drop(fds);
            if let Some(fd) = ended.as_ref() {
                while let Ok(Some(_)) = fd.read_signal() {}
            }
            if !heard {
                continue;
            }
        }
        let mut line = Vec::new();
        let read = words.by_ref().take(64).read_until(b'\n', &mut line);
        match read {
            Ok(0) => {
                // candor's end: everything below the room ends now.
                end_below(scoped);
                return None;
            }
            Ok(_) if line == TERMINATE => {
                let _ = nix::sys::signal::killpg(command, Signal::SIGTERM);
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                end_below(scoped);
                return None;
            }
        }
    }
}

/// Ends everything below the room, before it says how its command ended
/// (it serves the next one) or ends. With Landlock's signal scope
/// (`scoped`), `kill(-1)` reaches exactly the room's own domain, which is
/// what its commands started (other rooms and the house's init are
/// outside it), all at once: a process that forks on as it goes and never
/// keeps a pid for long outruns a sweep that reads who is below and kills
/// them after, but not this (the kernel sends it to a child still being
/// forked too). Then the sweep reaps them (and, without the scope, is
/// all there is).
fn end_below(scoped: bool) {
    if scoped {
        let _ = nix::sys::signal::kill(Pid::from_raw(-1), Signal::SIGKILL);
    }
    super::init::end_leftovers(&[]);
}
