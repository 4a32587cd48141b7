//! The namespaces a confined command runs in, and what the launcher does
//! in them before it starts the command: the user namespace with the
//! user's own uid and gid mapped, a private mount namespace with read-only
//! binds over the protected and write-denied paths and empty, unreadable
//! ones over the read-denied paths, a private `/dev/shm`, a fresh `/proc`
//! for the PID namespace, the loopback interface up in the network
//! namespace, and the capabilities the user namespace gave handed to the
//! second stage and then dropped for good.

use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::CloneFlags;

use super::boundary::Namespaces;

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Unshares the namespaces `ns` asks for (the calling process must be
/// single-threaded) and maps the user's uid and gid to themselves.
pub fn enter(ns: &Namespaces) -> Result<(), String> {
    if !ns.user {
        return Ok(());
    }
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let mut flags = CloneFlags::CLONE_NEWUSER;
    for (on, flag) in [
        (ns.mount, CloneFlags::CLONE_NEWNS),
        (ns.pid, CloneFlags::CLONE_NEWPID),
        (ns.network, CloneFlags::CLONE_NEWNET),
        (ns.ipc, CloneFlags::CLONE_NEWIPC),
    ] {
        if on {
            flags |= flag;
        }
    }
    nix::sched::unshare(flags).map_err(|e| err("unshare", e))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|e| err("setgroups", e))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|e| err("uid_map", e))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|e| err("gid_map", e))?;
    Ok(())
}

/// Mount events stop at the namespace's edge, both ways.
pub fn make_private() -> Result<(), String> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| err("making mounts private", e))
}

/// The flags a remount of `path`'s mount must keep (a user namespace may
/// not clear the ones its parent set).
fn kept_flags(path: &Path) -> MsFlags {
    use nix::sys::statvfs::{FsFlags, statvfs};
    let Ok(stat) = statvfs(path) else {
        return MsFlags::empty();
    };
    let flags = stat.flags();
    let mut kept = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if flags.contains(fs) {
            kept |= ms;
        }
    }
    kept
}

/// Binds `source` over `target` and makes that bind read-only.
fn bind_read_only(source: &Path, target: &Path) -> Result<(), String> {
    let what = format!("read-only bind of {}", target.display());
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| err(&what, e))?;
    let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept_flags(target);
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>).map_err(|e| err(&what, e))
}

/// Makes each existing path of `paths` read-only (a symbolic link is
/// followed: the bind lands where it leads). Returns those bound.
pub fn protect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut bound = Vec::new();
    for path in paths {
        let Ok(real) = std::fs::canonicalize(path) else {
            continue;
        };
        if bound.contains(&real) {
            continue;
        }
        bind_read_only(&real, &real)?;
        bound.push(real);
    }
    Ok(bound)
}

/// A private `/dev/shm` (POSIX shared memory and semaphores work, and
/// nothing is left in the host's). Whether there is one.
pub fn private_shm() -> Result<bool, String> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return Ok(false);
    }
    mount(
        Some("tmpfs"),
        shm,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=1777,size=256m"),
    )
    .map_err(|e| err("private /dev/shm", e))?;
    Ok(true)
}

/// Covers each existing read-denied path with something empty that
/// cannot be read, changed or listed: a read-only tmpfs of mode 000 over
/// a directory, a read-only bind of an empty mode-000 file over anything
/// else (made in a scratch tmpfs on `scratch`, a directory of the
/// namespace's own, let go once bound).
pub fn hide(paths: &[PathBuf], scratch: &Path) -> Result<Vec<PathBuf>, String> {
    let mut hidden = Vec::new();
    let mut blank: Option<PathBuf> = None;
    for path in paths {
        let Ok(real) = std::fs::canonicalize(path) else {
            continue;
        };
        let what = format!("hiding {}", real.display());
        if real.is_dir() {
            mount(
                Some("tmpfs"),
                &real,
                Some("tmpfs"),
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                Some("mode=000,size=4k"),
            )
            .map_err(|e| err(&what, e))?;
        } else {
            let source = match &blank {
                Some(b) => b.clone(),
                None => {
                    let b = blank_file(scratch)?;
                    blank = Some(b.clone());
                    b
                }
            };
            bind_read_only(&source, &real)?;
        }
        hidden.push(real);
    }
    if blank.is_some() {
        umount2(scratch, MntFlags::MNT_DETACH).map_err(|e| err("scratch tmpfs", e))?;
    }
    Ok(hidden)
}

/// An empty file of mode 000 in a tmpfs mounted on `scratch`.
fn blank_file(scratch: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    mount(
        Some("tmpfs"),
        scratch,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("mode=700,size=4k"),
    )
    .map_err(|e| err("scratch tmpfs", e))?;
    let file = scratch.join("denied");
    std::fs::write(&file, b"").map_err(|e| err("scratch file", e))?;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000))
        .map_err(|e| err("scratch file", e))?;
    Ok(file)
}

/// A fresh `/proc` for the PID namespace the caller is the init of:
/// only its processes are there.
pub fn mount_proc() -> Result<(), String> {
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| err("mounting /proc", e))
}

/// Hands the second stage what it needs of the user namespace's
/// capabilities across `exec` (as ambient capabilities: the user is not
/// root in it): mounting `/proc` and dropping the bounding set.
pub fn keep_for_init() -> Result<(), String> {
    use rustix::thread::CapabilitySet;
    let wanted = CapabilitySet::SYS_ADMIN | CapabilitySet::SETPCAP;
    let mut sets = rustix::thread::capabilities(None).map_err(|e| err("capget", e))?;
    sets.inheritable |= wanted;
    rustix::thread::set_capabilities(None, sets).map_err(|e| err("capset", e))?;
    for cap in [CapabilitySet::SYS_ADMIN, CapabilitySet::SETPCAP] {
        rustix::thread::configure_capability_in_ambient_set(cap, true)
            .map_err(|e| err("ambient capabilities", e))?;
    }
    Ok(())
}

/// Drops every capability for good: the bounding set (so even a uid-0
/// `exec` gains none), the ambient set, and the thread's own sets.
pub fn drop_capabilities() -> Result<(), String> {
    use rustix::thread::CapabilitySet;
    for bit in 0..64u32 {
        let cap = CapabilitySet::from_bits_retain(1u64 << bit);
        // Past the kernel's last capability the answer is an error.
        if let Ok(true) = rustix::thread::capability_is_in_bounding_set(cap) {
            rustix::thread::remove_capability_from_bounding_set(cap)
                .map_err(|e| err("dropping the bounding set", e))?;
        }
    }
    rustix::thread::clear_ambient_capability_set().map_err(|e| err("ambient capabilities", e))?;
    let none = rustix::thread::CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none).map_err(|e| err("capset", e))
}

/// Brings `lo` up (index 1 in a new network namespace) by an
/// `RTM_NEWLINK` request over rtnetlink, and checks the kernel's answer.
pub fn loopback_up() -> Result<(), String> {
    use nix::sys::socket::{
        AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto,
        socket,
    };
    let fail = |e: nix::Error| err("bringing lo up", e);
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(fail)?;
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_ACK: u16 = 4;
    const IFF_UP: u32 = 1;
    let mut msg = Vec::with_capacity(32);
    msg.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
    msg.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    msg.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // pid
    msg.extend_from_slice(&[0, 0]); // ifi_family AF_UNSPEC, pad
    msg.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    msg.extend_from_slice(&1i32.to_ne_bytes()); // ifi_index: lo
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
    use std::os::fd::AsRawFd;
    sendto(
        fd.as_raw_fd(),
        &msg,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .map_err(fail)?;
    let mut answer = [0u8; 256];
    let n = recv(fd.as_raw_fd(), &mut answer, MsgFlags::empty()).map_err(fail)?;
    // nlmsghdr (16 bytes) of type NLMSG_ERROR (2), then the error code.
    const NLMSG_ERROR: u16 = 2;
    if n >= 20 && u16::from_ne_bytes([answer[4], answer[5]]) == NLMSG_ERROR {
        let code = i32::from_ne_bytes([answer[16], answer[17], answer[18], answer[19]]);
        if code == 0 {
            return Ok(());
        }
        return Err(format!(
            "bringing lo up: {}",
            nix::errno::Errno::from_raw(-code)
        ));
    }
    Err("bringing lo up: no answer from the kernel".into())
}
