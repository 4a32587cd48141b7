//! Joining the session's house (`sandbox::house`): a launcher given a
//! [`HouseRef`] opens each namespace the house holds, checks it is that
//! namespace (by inode), and enters them (`setns`), instead of making its
//! own; and, when it ends, asks the house's init to end what its killed
//! second stage left (`poke`). candor reads a house's reference with
//! [`HouseRef::of`].

use std::os::unix::fs::MetadataExt as _;

use nix::sched::CloneFlags;
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::boundary::Confinement;

/// The house's init, as this launcher found it when it joined the house
/// ([`enter`]), to ask it to end orphans ([`poke`]).
static INIT_FOUND: std::sync::OnceLock<std::os::fd::OwnedFd> = std::sync::OnceLock::new();

/// A running house, as a launcher finds it: its process and the
/// namespaces it holds (each `/proc/<pid>/ns/<name>` and its inode). A
/// launcher joins only namespaces whose inodes are these, so a house
/// that ended (its pid used again) is not taken for another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HouseRef {
    pub pid: u32,
    pub namespaces: Vec<(String, u64)>,
}

/// The order a launcher joins them in: the user namespace first (it gives
/// the capabilities the others need), the PID namespace (its children's)
/// last.
const JOINED: [(&str, CloneFlags); 5] = [
    ("user", CloneFlags::CLONE_NEWUSER),
    ("mnt", CloneFlags::CLONE_NEWNS),
    ("net", CloneFlags::CLONE_NEWNET),
    ("ipc", CloneFlags::CLONE_NEWIPC),
    ("pid_for_children", CloneFlags::CLONE_NEWPID),
];

impl HouseRef {
    /// The house whose first process is `pid`, holding the namespaces
    /// `confinement` asks for (read by candor once it said ready).
    pub fn of(pid: u32, c: &Confinement) -> std::io::Result<HouseRef> {
        let mut namespaces = Vec::new();
        for (name, _) in JOINED {
            if wanted(name, c) {
                let inode = std::fs::metadata(format!("/proc/{pid}/ns/{name}"))?.ino();
                namespaces.push((name.to_owned(), inode));
            }
        }
        Ok(HouseRef { pid, namespaces })
    }
}

/// Whether a boundary confined as `c` has namespace `name`.
fn wanted(name: &str, c: &Confinement) -> bool {
    let ns = &c.namespaces;
    match name {
        "user" => ns.user,
        "mnt" => ns.mount,
        "net" => ns.network,
        "ipc" => ns.ipc,
        "pid_for_children" => ns.pid,
        _ => false,
    }
}

/// Why a launcher did not join a house.
#[derive(Debug)]
pub(super) enum Entering {
    /// It is not there (ended, or not what the reference names), or the
    /// working directory is gone: the launcher makes its own namespaces
    /// instead (and says why, when setup then fails).
    Gone,
    /// Joining failed part way: the launcher cannot go on.
    Failed(String),
}

/// Joins the house `house` names (this process must be single-threaded):
/// every namespace opened and checked first, then joined, the user
/// namespace first. Then the working directory is entered again, as the
/// house's mounts show it.
pub(super) fn enter(house: &HouseRef) -> Result<(), Entering> {
    let mut opened = Vec::new();
    for (name, flag) in JOINED {
        let Some((_, inode)) = house.namespaces.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let path = format!("/proc/{}/ns/{name}", house.pid);
        let file = std::fs::File::open(&path).map_err(|_| Entering::Gone)?;
        let found = file.metadata().map_err(|_| Entering::Gone)?.ino();
        // Another namespace: the house ended, and its pid is another's.
        if found != *inode {
            return Err(Entering::Gone);
        }
        opened.push((name, file, flag));
    }
    // A namespace this launcher does not know.
    if opened.len() != house.namespaces.len() {
        return Err(Entering::Gone);
    }
    let cwd = std::env::current_dir().map_err(|_| Entering::Gone)?;
    for (name, file, flag) in opened {
        nix::sched::setns(&file, flag).map_err(|e| {
            Entering::Failed(format!("joining the session's {name} namespace: {e}"))
        })?;
    }
    // The parent-death signal, again after the credentials' change.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // PID 1 in the house's `/proc` (its mounts are this process's now):
    // the house's init, held as a descriptor, which no PID of another
    // namespace can be taken for.
    if let Ok(init) = std::fs::File::open("/proc/1") {
        let _ = INIT_FOUND.set(init.into());
    }
    std::env::set_current_dir(&cwd)
        .map_err(|e| Entering::Failed(format!("the working directory {}: {e}", cwd.display())))
}

/// From a second stage in the house, as its command comes (before it
/// confines itself, after which no signal of its reaches the init): tells
/// the house's init, PID 1 of the namespace, that a command starts, so
/// that it looks for orphans often while the command may run (an idle
/// house's init looks once a second). The init blocks the signal, so the
/// kernel queues it from inside too.
pub(super) fn starting() {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(1), Signal::SIGUSR1);
}

/// Asks the house's init to end the orphans now (this launcher just
/// killed its second stage, the command's subreaper), when this launcher
/// joined a house. A signal from outside the house's PID namespace, which
/// its own processes cannot send its init.
pub(super) fn poke() {
    if let Some(init) = INIT_FOUND.get() {
        let _ = rustix::process::pidfd_send_signal(init, rustix::process::Signal::USR1);
    }
}
