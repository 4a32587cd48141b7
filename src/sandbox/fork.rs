//! The one `fork` without `exec` in candor: the house's init
//! (`sandbox::house`) makes each command's room (`sandbox::room`), and a
//! launcher or spare its second stage (`launch::start_init`), as a copy
//! of itself, which costs a fraction of starting a process again (on the
//! machines measured, starting a binary costs more than half a
//! millisecond before `main`, mostly the dynamic loader's CPU detection).
//!
//! `fork` is `unsafe` because after it only the calling thread exists in
//! the child: a lock another thread held (the allocator's, stdio's) stays
//! held forever. [`alone`] forks only a process that has exactly one
//! thread, read from the kernel (`/proc/self/status`) just before, so no
//! other thread can hold anything; the house's init starts none. This
//! file is the only one allowed `unsafe` (`tests/it/tidy.rs`).

#![allow(unsafe_code)]

use nix::unistd::{ForkResult, Pid};

/// Which side of the fork this is.
#[derive(Debug)]
pub(super) enum Forked {
    /// The copy: it must end with `std::process::exit`, never return
    /// into its parent's loop.
    Child,
    /// The original, and its child's pid.
    Parent(Pid),
}

/// Forks this process, which must have a single thread (else an error
/// says so, and nothing was forked).
pub(super) fn alone() -> Result<Forked, String> {
    match threads() {
        Some(1) => {}
        Some(n) => return Err(format!("cannot copy a process of {n} threads")),
        None => return Err("cannot count this process's threads".into()),
    }
    // SAFETY: the process has one thread (checked just above, and this
    // thread starts none between the check and the call), so no lock is
    // held by a thread the child would not have; the child runs the same
    // single-threaded code.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => Ok(Forked::Child),
        Ok(ForkResult::Parent { child }) => Ok(Forked::Parent(child)),
        Err(e) => Err(format!("fork: {e}")),
    }
}

/// This process's `/proc/self/status`, opened before it joined the
/// session's house: in the house's mount namespace `/proc` is the house's,
/// where a launcher (outside the house's PID namespace) has no entry.
static STATUS: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// Keeps this process's status file open, for [`alone`] to count its
/// threads after it joined other namespaces (a first stage, first thing).
pub(super) fn keep_count() {
    if let Ok(file) = std::fs::File::open("/proc/self/status") {
        let _ = STATUS.set(file);
    }
}

/// The number of threads of this process, as the kernel counts them now
/// (read again through the file [`keep_count`] kept, else opened now).
fn threads() -> Option<usize> {
    let status = match STATUS.get() {
        Some(file) => {
            use std::os::unix::fs::FileExt as _;
            let mut buf = vec![0u8; 16 * 1024];
            let n = file.read_at(&mut buf, 0).ok()?;
            String::from_utf8_lossy(buf.get(..n)?).into_owned()
        }
        None => std::fs::read_to_string("/proc/self/status").ok()?,
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_of_several_threads_is_not_copied() {
        // The test harness runs tests on threads of their own: this
        // process has more than one.
        let _other = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(2)));
        match alone() {
            Err(why) => assert!(why.contains("threads"), "{why}"),
            Ok(Forked::Child) => std::process::exit(1),
            Ok(Forked::Parent(_)) => panic!("a multi-threaded process was forked"),
        }
    }

    #[test]
    fn threads_are_counted() {
        assert!(threads().is_some_and(|n| n >= 1));
    }
}
