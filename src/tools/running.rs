//! A command candor started and waits for: a process group it spawned
//! (`tools::exec`), or a command in a room of the session's house
//! (`sandbox::room`), which is not candor's child. Both are waited for,
//! asked to end and killed the same way, so the Bash tool and background
//! shells do not tell them apart; dropping either ends everything it
//! started.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use tokio_util::sync::CancellationToken;

use super::exec::ProcessGroup;
use crate::sandbox::Watch;

/// A started command.
#[derive(Debug)]
pub enum Running {
    /// A process group of candor's (plain `bash`, or a launcher).
    Group(ProcessGroup),
    /// A command in a room of the session's house.
    Room(InRoom),
}

/// A command in a room: the room's lifeline (its reports, and the
/// connection to write to). Dropping it ends the connection, and the room
/// kills everything below it (`Lifeline::expect_room`); a room that has
/// not said how its command ended is killed too (its command may have
/// stopped it: `SIGSTOP` cannot be blocked, and a stopped room hears
/// nothing), and what it leaves is the house init's, which ends it. A
/// room whose command ended and said so, never cut, is free for the
/// session's next command ([`InRoom::free`]).
#[derive(Debug)]
pub struct InRoom {
    watch: Watch,
    words: tokio::net::UnixStream,
    /// The room's process (the lifeline's other end), to kill on drop
    /// unless it reported its command's end.
    room: Option<std::os::fd::OwnedFd>,
    /// How the command ended, once known.
    ended: Option<ExitStatus>,
    /// Whether the room said so (rather than went away).
    reported: bool,
    /// Whether candor cut its lifeline.
    cut: bool,
    made: Made,
}

/// What a room was made with (`sandbox::room`): its lifeline token, its
/// house, and the session's writable roots as they were when it confined
/// itself (`sandbox::ruleset::roots_now`).
#[derive(Debug, Clone)]
pub struct Made {
    pub token: String,
    pub house: crate::sandbox::HouseRef,
    pub roots: Vec<crate::sandbox::ruleset::RootMark>,
}

/// The bound on waiting for a room once its lifeline is cut: the cut
/// ends the connection both ways, so no report is read after it and the
/// command counts as killed (the room kills everything below it).
const CUT_WAIT: Duration = Duration::from_secs(2);

impl InRoom {
    /// The room `made` so whose lifeline is `watch` and `words`, its
    /// command sent.
    pub fn new(watch: Watch, words: tokio::net::UnixStream, made: Made) -> InRoom {
        // The peer as the kernel took it when the room connected; before
        // Linux 6.5, by its pid (it waits for its start now, so that pid
        // is still the room's).
        let room = nix::sys::socket::getsockopt(&words, nix::sys::socket::sockopt::PeerPidfd)
            .ok()
            .or_else(|| {
                let peer = rustix::net::sockopt::socket_peercred(&words).ok()?;
                rustix::process::pidfd_open(peer.pid, rustix::process::PidfdFlags::empty()).ok()
            });
        InRoom {
            watch,
            words,
            room,
            ended: None,
            reported: false,
            cut: false,
            made,
        }
    }

    /// The room, free for another command: its command ended, it said
    /// how (it ended everything the command left, and waits on its
    /// lifeline for the next), and candor never cut it. `None` (and the
    /// room ended) otherwise.
    pub fn free(mut self) -> Option<InRoom> {
        if !self.reported || self.cut {
            return None;
        }
        self.ended = None;
        self.reported = false;
        Some(self)
    }

    /// The connection to write its next command to.
    pub fn words(&mut self) -> &mut tokio::net::UnixStream {
        &mut self.words
    }

    /// What it was made with.
    pub fn made(&self) -> &Made {
        &self.made
    }

    /// Its watch, to wait for its word that the command started.
    pub fn watch_mut(&mut self) -> &mut Watch {
        &mut self.watch
    }

    /// The command's end as the room reported it. A room that went away
    /// without saying was killed: the command with it, by `SIGKILL`.
    async fn wait(&mut self) -> ExitStatus {
        if let Some(status) = self.ended {
            return status;
        }
        use std::os::unix::process::ExitStatusExt as _;
        let report = self.watch.exited().await;
        let status = match report {
            Some(crate::sandbox::Report::Exited {
                code: Some(code), ..
            }) => ExitStatus::from_raw((code & 0xff) << 8),
            Some(crate::sandbox::Report::Exited {
                signal: Some(signal),
                ..
            }) => ExitStatus::from_raw(signal & 0x7f),
            _ => killed(),
        };
        // A room that said how its command ended ended what it left. Gone
        // without a word, or cut by candor (`shutdown` ends the connection
        // both ways), it may still be there, stopped: it is killed when
        // this is dropped.
        self.reported = report.is_some();
        self.ended = Some(status);
        status
    }

    /// Cuts the room's lifeline: it kills everything below it and ends.
    fn cut(&mut self) {
        self.cut = true;
        let _ = rustix::net::shutdown(&self.words, rustix::net::Shutdown::Both);
    }
}

/// The status of a command killed by `SIGKILL`.
fn killed() -> ExitStatus {
    use std::os::unix::process::ExitStatusExt as _;
    ExitStatus::from_raw(nix::sys::signal::Signal::SIGKILL as i32)
}

impl Running {
    /// The room it ran in, free for another command ([`InRoom::free`]);
    /// `None` for a process group, or a room not free (ended).
    pub fn into_free_room(self) -> Option<InRoom> {
        match self {
            Running::Group(_) => None,
            Running::Room(room) => room.free(),
        }
    }

    /// Waits for the command to end (cancel-safe: call it again).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Running::Group(group) => group.child_mut().wait().await,
            Running::Room(room) => Ok(room.wait().await),
        }
    }

    /// Ends the command: `SIGTERM` to its process group, then everything
    /// killed once `grace` has passed or `hard_stop` fires, whichever
    /// comes first. Returns how the command ended.
    pub async fn terminate(
        &mut self,
        grace: Duration,
        hard_stop: &CancellationToken,
    ) -> io::Result<ExitStatus> {
        let room = match self {
            Running::Group(group) => return group.terminate(grace, hard_stop).await,
            Running::Room(room) => room,
        };
        let _ = room.words.write_all(crate::sandbox::room::TERMINATE).await;
        let exited = tokio::select! {
            status = room.wait() => Some(status),
            _ = tokio::time::sleep(grace) => None,
            _ = hard_stop.cancelled() => None,
        };
        // Whatever the command did, nothing it started may stay behind.
        room.cut();
        match exited {
            Some(status) => Ok(status),
            None => Ok(tokio::time::timeout(CUT_WAIT, room.wait())
                .await
                .unwrap_or_else(|_| killed())),
        }
    }
}

impl Drop for InRoom {
    fn drop(&mut self) {
        self.cut();
        // Not heard from: perhaps stopped by its command, which the cut
        // does not wake.
        if !self.reported
            && let Some(room) = &self.room
        {
            let _ = rustix::process::pidfd_send_signal(room, rustix::process::Signal::KILL);
        }
    }
}
