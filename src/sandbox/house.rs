//! The session's house: the namespaces a session's confined commands
//! share, made once per boundary instead of once per command
//! (`protocol/sandbox.md`, "The house"). `… __sandbox --house <House
//! JSON>` connects candor's lifeline and says hello, enters new user,
//! mount, PID, network and IPC namespaces, starts its init (`…
//! __sandbox --house-init`, PID 1 of the new PID namespace, which mounts
//! its `/proc`), binds and hides the boundary's paths and brings `lo` up,
//! exactly as a launcher would for one command, and says ready. Then it
//! waits. A launcher given the house's [`HouseRef`](super::HouseRef) joins these
//! namespaces (`sandbox::join`) instead of making its own, and its second stage,
//! started in them, is not an init but the command's subreaper: it
//! confines itself as always (Landlock, seccomp, capabilities), runs the
//! command, and when the command ends, kills whatever it left behind, as
//! the end of a PID namespace of its own would. A process orphaned by a
//! second stage that was killed is the house init's, which kills it at
//! once. When candor lets the house go (another boundary took its place,
//! or the session ended), the house ends once nothing runs in it; it dies
//! with candor.
//!
//! A house is only ever used for the boundary it was made for: candor
//! keeps its [`Boundary`] and the [`Mark`]s of the paths its mounts
//! cover, and gives a launcher the house only for a call whose settled
//! boundary is equal and whose paths are still those files (a protected
//! directory removed and made again outside would not be under the old
//! bind).

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use super::boundary::{Boundary, Confinement};
use super::launch::{SUBCOMMAND, fail, receive, send};
use super::lifeline::Report;

/// The house's option.
pub const HOUSE: &str = "--house";
/// Its init's option.
pub const INIT: &str = "--house-init";
/// How often the house's init looks for orphans to end unasked (a
/// launcher that kills its second stage asks at once: `join::poke`; one
/// killed itself, with its group, cannot, and its second stage dies of
/// it: what that one left must not write for long after the call's end),
/// while anything runs in the house. A look without orphans reads one
/// file.
const ORPHANS_EVERY: Duration = Duration::from_millis(50);
/// How often it looks while nothing runs in the house but a waiting
/// spare's second stage ([`idle`]: an idle session's house wakes once a
/// second).
const IDLE_EVERY: Duration = Duration::from_secs(1);
/// How often a house that was let go looks whether it is empty.
const EMPTY_EVERY: Duration = Duration::from_millis(20);
/// The word candor writes on a house's lifeline to let it go.
pub const RETIRE: &[u8] = b"retire\n";

/// What a house is given on its command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct House {
    /// The build of candor that started it (`sandbox::launcher::BUILD`).
    pub build: String,
    pub lifeline: PathBuf,
    pub token: String,
    /// The boundary its namespaces and mounts are made for.
    pub boundary: Boundary,
    /// The paths its mounts cover, as candor found them: the house
    /// refuses to start when it finds them otherwise.
    pub marks: Vec<Mark>,
}

impl House {
    /// The arguments (after the launcher's path) that start this house.
    pub fn args(&self) -> Result<Vec<OsString>, serde_json::Error> {
        Ok(vec![
            OsString::from(SUBCOMMAND),
            OsString::from(HOUSE),
            OsString::from(serde_json::to_string(self)?),
        ])
    }
}

/// A path a house's mounts cover (bound read-only or hidden), and the
/// file it was (device, inode, and its birth time in nanoseconds, or its
/// last change where the file system keeps no birth; `None`: there was
/// none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub path: PathBuf,
    pub file: Option<(u64, u64, u64)>,
}

/// The marks of what a launcher would bind and hide for `boundary` now.
pub fn marks(boundary: &Boundary) -> Vec<Mark> {
    let mut paths = super::launch::read_only_paths(boundary);
    paths.extend(boundary.read_denied.iter().cloned());
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .map(|path| {
            let file = std::fs::metadata(&path).ok().map(|m| {
                // An inode number is used again at once for a file made
                // after one removed: its birth (else its change) tells
                // them apart.
                let born = m
                    .created()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
                let changed = u64::try_from(m.ctime())
                    .unwrap_or(0)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(u64::try_from(m.ctime_nsec()).unwrap_or(0));
                (m.dev(), m.ino(), born.unwrap_or(changed))
            });
            Mark { path, file }
        })
        .collect()
}

/// Whether the house whose first process is `pid` still has a mount of
/// its own on each path of `marks` that was there (read from its
/// `/proc/<pid>/mountinfo`). A bind goes with the name it was made on:
/// when that name is unlinked and the same file linked again outside
/// (same device, inode and birth), the marks still match while the house
/// no longer covers the path.
pub fn covers(pid: u32, marks: &[Mark]) -> bool {
    let Ok(file) = std::fs::File::open(format!("/proc/{pid}/mountinfo")) else {
        return false;
    };
    let mut info = String::new();
    if file.take(MAX_MOUNTINFO).read_to_string(&mut info).is_err() {
        return false;
    }
    // `id parent major:minor root mount-point …`, with `\ooo` escapes.
    let points: Vec<PathBuf> = info
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape)
        .collect();
    marks
        .iter()
        .filter(|m| m.file.is_some())
        .all(|m| std::fs::canonicalize(&m.path).is_ok_and(|real| points.contains(&real)))
}

/// The longest `mountinfo` read.
const MAX_MOUNTINFO: u64 = 4 * 1024 * 1024;

/// A `mountinfo` field, its octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt as _;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let code = bytes
            .get(i + 1..i + 4)
            .filter(|_| b == b'\\')
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u8::from_str_radix(d, 8).ok());
        match code {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

/// Whether a house can be made for a boundary confined as `c`: in its
/// own user, mount and PID namespaces (else nothing would end what a
/// killed launcher left behind, or keep the house's binds private).
pub fn can_house(c: &Confinement) -> bool {
    c.namespaces.user && c.namespaces.mount && c.namespaces.pid
}

/// `--house <JSON>`: the house's first process.
pub(super) fn run(args: &[OsString]) -> ExitCode {
    // candor goes: so does the house (its init with it, and with the init
    // everything in its PID namespace).
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let Some(house) = super::launch::argument::<House>(args) else {
        return fail(None, "the sandbox house's argument is not readable");
    };
    let mut life = match super::launch::hello(&house.lifeline, &house.token) {
        Ok(life) => life,
        Err(failed) => return failed,
    };
    if house.build != super::launcher::BUILD {
        return fail(Some(&mut life), "a sandbox house of another build");
    }
    let Some(c) = house.boundary.confinement().filter(|c| can_house(c)) else {
        return fail(
            Some(&mut life),
            "a sandbox house needs user, mount and PID namespaces",
        );
    };
    let _signals = super::launch::block_termination();
    // Before the mounts: a hidden path shows another file after them.
    if marks(&house.boundary) != house.marks {
        return fail(
            Some(&mut life),
            "the project's protected or hidden paths changed while the sandbox was set up",
        );
    }
    if let Err(e) = super::launch::enter(&c.namespaces, None) {
        return fail(Some(&mut life), &e);
    }
    // The init is given the house (rooms are made for its boundary, and
    // connect the lifeline), not its token (its command line, which each
    // room's is too, shows in `ps`) or marks.
    let told = House {
        token: String::new(),
        marks: Vec::new(),
        ..house.clone()
    };
    let spec = match serde_json::to_string(&told) {
        Ok(spec) => spec,
        Err(e) => return fail(Some(&mut life), &e.to_string()),
    };
    let mut stage = match super::launch::start_init(
        &c.namespaces,
        vec![INIT.into(), spec.into()],
        super::launch::Second::Exec,
    ) {
        Ok(stage) => stage,
        Err(e) => return fail(Some(&mut life), &e),
    };
    if let Err(e) = super::launch::mounts(&house.boundary, c) {
        stage.end();
        return fail(Some(&mut life), &e);
    }
    let mut status = match super::launch::accept_init(&mut stage) {
        Ok(status) => status,
        Err(e) => {
            stage.end();
            return fail(Some(&mut life), &e);
        }
    };
    match receive(&mut status) {
        Some(Report::Ready) => {}
        Some(Report::SetupFailed { reason }) => {
            stage.end();
            return fail(Some(&mut life), &reason);
        }
        _ => {
            stage.end();
            return fail(Some(&mut life), "the sandbox house's init ended");
        }
    }
    send(&mut life, &Report::Ready);
    // Until candor lets the house go (a word, or the lifeline's end), or
    // its init ends: a PID namespace whose init ended holds no process
    // again, and a house gone is one launchers do not join (candor makes
    // another).
    if !let_go(&mut life, status.get_mut()) {
        // Not waited for: an init ending waits itself until every process
        // of its namespace was reaped, by parents that may be outside
        // (a spare launcher's second stage).
        return ExitCode::FAILURE;
    }
    let _ = status.get_mut().write_all(RETIRE);
    let _ = stage.wait();
    ExitCode::SUCCESS
}

/// Waits for candor's word to let the house go (or its end) on `life`,
/// handing each ask for a room on to the init (`init`), or the end of
/// the init's connection: whether candor let the house go.
fn let_go(life: &mut UnixStream, init: &mut UnixStream) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd as _;
    let mut words = Words::default();
    loop {
        let mut fds = [
            PollFd::new(life.as_fd(), PollFlags::POLLIN),
            PollFd::new(init.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return true,
            Ok(_) => {}
        }
        let ready = |i: usize| {
            fds.get(i)
                .and_then(|f| f.revents())
                .is_some_and(|r| !r.is_empty())
        };
        if ready(1) {
            return false;
        }
        if ready(0) {
            let Some(lines) = words.read(life) else {
                return true;
            };
            for line in lines {
                match Word::of(&line) {
                    Some(Word::Room(_)) => {
                        let _ = init.write_all(&line);
                    }
                    Some(Word::Retire) => return true,
                    None => {}
                }
            }
        }
    }
}

/// A word candor says to a house (and its first stage to the init).
#[derive(Debug, PartialEq, Eq)]
enum Word {
    /// Make a room for the lifeline launch of this token (`sandbox::room`).
    Room(String),
    /// Let the house go.
    Retire,
}

impl Word {
    /// The word of one line (with its newline); `None`: not a word.
    fn of(line: &[u8]) -> Option<Word> {
        if line == RETIRE {
            return Some(Word::Retire);
        }
        let line = std::str::from_utf8(line).ok()?.strip_suffix('\n')?;
        let token = line
            .strip_prefix(super::room::ASK)?
            .strip_prefix(' ')
            .filter(|t| super::room::token_fits(t))?;
        Some(Word::Room(token.to_owned()))
    }
}

/// Lines read off a socket as they come (the longest kept: 128 bytes).
#[derive(Debug, Default)]
struct Words {
    partial: Vec<u8>,
}

impl Words {
    /// What one read brings: the whole lines it completes (`None`: the
    /// socket's end, or an error).
    fn read(&mut self, from: &mut UnixStream) -> Option<Vec<Vec<u8>>> {
        let mut buf = [0u8; 512];
        let n = match from.read(&mut buf) {
            Ok(0) => return None,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(_) => return None,
        };
        self.partial
            .extend_from_slice(buf.get(..n).unwrap_or_default());
        let mut lines = Vec::new();
        while let Some(at) = self.partial.iter().position(|&b| b == b'\n') {
            lines.push(self.partial.drain(..=at).collect());
        }
        // A line longer than any word is nobody's.
        if self.partial.len() > 128 {
            self.partial.clear();
        }
        Some(lines)
    }
}

/// `--house-init <House JSON>`: PID 1 of the house's PID namespace.
pub(super) fn run_init(args: &[OsString]) -> ExitCode {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let mut status = match super::init::connect() {
        Ok(status) => status,
        Err(e) => return fail(None, &e),
    };
    let Some(house) = super::launch::argument::<House>(args) else {
        return super::init::refuse(
            &mut status,
            "the sandbox house's init argument is not readable",
        );
    };
    let set_up = super::namespaces::mount_proc()
        .and_then(|()| super::namespaces::drop_capabilities())
        .and_then(|()| {
            nix::sys::prctl::set_dumpable(false).map_err(|e| format!("PR_SET_DUMPABLE: {e}"))
        });
    if let Err(e) = set_up {
        return super::init::refuse(&mut status, &e);
    }
    // Asked to end orphans by a signal (`poke`), from outside only: the
    // kernel drops a signal an init has no handler for when it comes from
    // inside its namespace. And woken by a room's end, whose orphans are
    // its own.
    let mut asked = nix::sys::signal::SigSet::empty();
    asked.add(Signal::SIGUSR1);
    asked.add(Signal::SIGCHLD);
    let _ = asked.thread_block();
    let pokes = nix::sys::signalfd::SignalFd::with_flags(
        &asked,
        nix::sys::signalfd::SfdFlags::SFD_NONBLOCK | nix::sys::signalfd::SfdFlags::SFD_CLOEXEC,
    );
    let pokes = match pokes {
        Ok(fd) => fd,
        Err(e) => return super::init::refuse(&mut status, &format!("signalfd: {e}")),
    };
    send(&mut status, &Report::Ready);
    let mut retiring = false;
    let mut words = Words::default();
    // The rooms this init made (`sandbox::room`) and that have not ended.
    let mut rooms: Vec<i32> = Vec::new();
    // After a poke, the init looks often for a while whatever it sees (a
    // second stage pokes as its command comes, before it has started it).
    let mut busy_until = std::time::Instant::now();
    loop {
        let busy = busy_until > std::time::Instant::now();
        let asked = if wait(&status, &pokes, retiring, busy || !idle(&rooms)) {
            heard(&mut words, &mut status, &mut retiring)
        } else {
            Vec::new()
        };
        for token in asked {
            match super::fork::alone() {
                Ok(super::fork::Forked::Child) => {
                    // The init's own ends are not the room's.
                    drop(status);
                    drop(pokes);
                    let code = super::room::run(&house.lifeline, &house.boundary, &token);
                    std::process::exit(i32::from(super::launch::number_of(code)));
                }
                Ok(super::fork::Forked::Parent(room)) => rooms.push(room.as_raw()),
                // No room: candor's call waits for its hello in vain, and
                // starts a launcher instead.
                Err(_) => {}
            }
        }
        while let Ok(Some(signal)) = pokes.read_signal() {
            if signal.ssi_signo == Signal::SIGUSR1 as u32 {
                busy_until = std::time::Instant::now() + IDLE_EVERY;
            }
        }
        // Reaped, and any process orphaned here ended: a second stage (or
        // a room) ends its own command's leftovers, so an orphan is one
        // whose second stage or room was killed.
        while let Ok(s) = waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            match s.pid() {
                Some(pid) => rooms.retain(|r| *r != pid.as_raw()),
                None => break,
            }
        }
        // Each orphan and all below it, in rounds until none is left (a
        // level a wake-up would let a deep tree live a second a level).
        super::init::end_leftovers(&rooms);
        if retiring && alone() {
            return ExitCode::SUCCESS;
        }
    }
}

/// The words the first process said on `status` (its end: the house is
/// let go): `retiring` once it said `retire`, and the tokens of the rooms
/// it asked for before that.
fn heard(words: &mut Words, status: &mut UnixStream, retiring: &mut bool) -> Vec<String> {
    let Some(lines) = words.read(status) else {
        *retiring = true;
        return Vec::new();
    };
    let mut asked = Vec::new();
    for line in lines {
        match Word::of(&line) {
            Some(Word::Retire) => *retiring = true,
            Some(Word::Room(token)) if !*retiring => asked.push(token),
            Some(Word::Room(_)) | None => {}
        }
    }
    asked
}

/// Waits for a poke or a room's end, the first process's words (unless
/// `retiring`, when the last came already) or its end, or the next round
/// (soon when `busy`, else in a second); whether words or the end came.
fn wait(
    status: &UnixStream,
    pokes: &nix::sys::signalfd::SignalFd,
    retiring: bool,
    busy: bool,
) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd as _;
    let every = if retiring {
        EMPTY_EVERY
    } else if busy {
        ORPHANS_EVERY
    } else {
        IDLE_EVERY
    };
    let timeout = PollTimeout::try_from(every).unwrap_or(PollTimeout::MAX);
    let mut fds = vec![PollFd::new(pokes.as_fd(), PollFlags::POLLIN)];
    if !retiring {
        fds.push(PollFd::new(status.as_fd(), PollFlags::POLLIN));
    }
    let _ = poll(&mut fds, timeout);
    fds.get(1)
        .and_then(|f| f.revents())
        .is_some_and(|r| !r.is_empty())
}

/// Whether nothing runs in the house that the init must look after
/// unasked: no orphan (a child of the init that is not one of its
/// `rooms`), and no process whose parent is outside the namespace (a
/// launcher's second stage: its parent id reads 0 here, which no process
/// started inside can show) has a child in it. What runs in a room is
/// the room's, and a room's end wakes the init (`SIGCHLD`).
fn idle(rooms: &[i32]) -> bool {
    let Some(ps) = super::init::processes() else {
        return false;
    };
    let outside: Vec<i32> = ps
        .iter()
        .filter(|&&(_, ppid)| ppid == 0)
        .map(|&(pid, _)| pid)
        .collect();
    ps.iter().all(|&(pid, ppid)| {
        pid == 1 || !(ppid == 1 && !rooms.contains(&pid) || outside.contains(&ppid))
    })
}

/// Whether the init is the only process left in its PID namespace.
fn alone() -> bool {
    super::init::processes().is_none_or(|ps| ps.iter().all(|&(pid, _)| pid == 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_point_is_read_with_its_escapes_undone() {
        assert_eq!(unescape("/p/my\\040dir"), PathBuf::from("/p/my dir"));
        assert_eq!(unescape("/p/a\\134b"), PathBuf::from("/p/a\\b"));
        // Not an escape: left as it is.
        assert_eq!(unescape("/p/x\\9"), PathBuf::from("/p/x\\9"));
    }

    #[test]
    fn only_the_exact_words_make_a_room_or_let_the_house_go() {
        let token = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            Word::of(format!("room {token}\n").as_bytes()),
            Some(Word::Room(token.to_owned()))
        );
        assert_eq!(Word::of(b"retire\n"), Some(Word::Retire));
        for line in [
            format!("room {token}"),              // no end of line
            format!("room  {token}\n"),           // another spelling
            format!("room {token} x\n"),          // more after the token
            "room ../../x\n".to_owned(),          // not a token
            "room \n".to_owned(),                 // none
            format!("room {}\n", "a".repeat(65)), // longer than a token
            format!("rooms {token}\n"),
            "retire now\n".to_owned(),
        ] {
            assert_eq!(Word::of(line.as_bytes()), None, "{line:?}");
        }
    }

    #[test]
    fn words_are_read_a_line_at_a_time_and_a_line_without_end_is_dropped() {
        let (mut candor, mut house) = UnixStream::pair().unwrap();
        let mut words = Words::default();
        candor.write_all(b"retire\nroo").unwrap();
        assert_eq!(words.read(&mut house), Some(vec![b"retire\n".to_vec()]));
        candor.write_all(b"m 1\n").unwrap();
        assert_eq!(words.read(&mut house), Some(vec![b"room 1\n".to_vec()]));
        // A line longer than any word is dropped, not kept growing.
        candor.write_all(&[b'x'; 300]).unwrap();
        assert_eq!(words.read(&mut house), Some(Vec::new()));
        assert!(words.partial.is_empty());
        drop(candor);
        assert_eq!(words.read(&mut house), None);
    }
}
