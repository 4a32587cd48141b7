//! The seccomp filter a confined command runs under: `io_uring` refused
//! always (its operations would go around the socket filter), and so is
//! setting another process's resource limits (`prlimit64` with a pid: in
//! the session's house, the room that serves the next command and the
//! init every later room is a copy of are the command's uid's, and what
//! they are given the next commands inherit), and, where
//! there is no network namespace to keep the network off, `socket(2)` for
//! every family but `AF_UNIX`; unix sockets too unless the boundary allows
//! them. Refused calls fail with `EPERM`. [`plan`] names the refusals for
//! the record; [`apply`] installs the filter on the calling thread.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

use super::boundary::{Boundary, Network};

const IO_URING: &str = "io_uring";
const INET: &str = "socket(AF_INET, AF_INET6 and every family but AF_UNIX)";
const UNIX: &str = "socket(AF_UNIX)";
const PRLIMIT: &str = "prlimit64 setting another process's limits";

/// What the filter refuses for this boundary (`netns`: the command has
/// its own network namespace).
pub fn plan(boundary: &Boundary, netns: bool) -> Vec<String> {
    let mut refused = vec![IO_URING.to_owned(), PRLIMIT.to_owned()];
    if !netns && boundary.network != Network::On {
        refused.push(INET.to_owned());
    }
    if !boundary.allow_unix_sockets {
        refused.push(UNIX.to_owned());
    }
    refused
}

/// Installs the filter `refused` names on the calling thread (and what it
/// starts). `no_new_privs` must be set.
pub fn apply(refused: &[String]) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("seccomp: {e}");
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail(&e))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    if refused.iter().any(|r| r == PRLIMIT) {
        // `prlimit64(pid, resource, new, old)`: a pid (0 is the caller)
        // and new limits; reading them, or setting one's own
        // (`setrlimit`, `ulimit`), stays.
        let rule = [
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, 0),
            SeccompCondition::new(2, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0),
        ]
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .and_then(SeccompRule::new)
        .map_err(|e| fail(&e))?;
        rules.insert(libc::SYS_prlimit64, vec![rule]);
    }
    let inet = refused.iter().any(|r| r == INET);
    let unix = refused.iter().any(|r| r == UNIX);
    let domain = |op, value: i32| -> Result<SeccompRule, String> {
        let value = u64::try_from(value).map_err(|e| fail(&e))?;
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, op, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(|e| fail(&e))
    };
    match (inet, unix) {
        // Every socket: the whole call.
        (true, true) => {
            rules.insert(libc::SYS_socket, Vec::new());
        }
        (true, false) => {
            rules.insert(
                libc::SYS_socket,
                vec![domain(SeccompCmpOp::Ne, libc::AF_UNIX)?],
            );
        }
        (false, true) => {
            rules.insert(
                libc::SYS_socket,
                vec![domain(SeccompCmpOp::Eq, libc::AF_UNIX)?],
            );
        }
        (false, false) => {}
    }
    let eperm = u32::try_from(libc::EPERM).map_err(|e| fail(&e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(eperm),
        arch,
    )
    .map_err(|e| fail(&e))?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::boundary::Preset;

    #[test]
    fn the_socket_filter_stands_in_for_a_missing_network_namespace() {
        let mut b = Boundary::new(Preset::WorkspaceWrite, vec![], None, None, Network::Off);
        assert_eq!(plan(&b, true), vec![IO_URING, PRLIMIT, UNIX]);
        assert_eq!(plan(&b, false), vec![IO_URING, PRLIMIT, INET, UNIX]);
        b.allow_unix_sockets = true;
        b.network = Network::On;
        assert_eq!(plan(&b, false), vec![IO_URING, PRLIMIT]);
    }
}
