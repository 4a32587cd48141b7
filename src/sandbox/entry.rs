//! `candor __sandbox …`: which stage of the sandbox this process is, told
//! by its arguments before anything else runs (`main`'s first call): the
//! launcher ([`launch`]), the init inside the new namespaces ([`init`]),
//! a spare launcher and its init waiting for a session's next command
//! ([`spare`]), the session's house and its init ([`house`]), or the
//! probe ([`probe`]).

use std::ffi::{OsStr, OsString};
use std::process::ExitCode;

use super::launch::{self, SUBCOMMAND};
use super::{house, init, probe, spare};

/// `main`'s first call: runs the launcher (or the probe) when the binary
/// was started as one, and returns its exit code; `None` otherwise.
pub fn main_if_sandbox() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(SUBCOMMAND)) {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    Some(match rest.first().and_then(|a| a.to_str()) {
        Some("--probe") => probe::child(),
        Some("--probe-init") => probe::child_init(),
        Some("--init") => init::run_args(&rest[1..]),
        Some(spare::INIT) => spare::run_init(&rest[1..]),
        Some(house::INIT) => house::run_init(&rest[1..]),
        Some(spare::SPARE) => spare::run(&rest[1..]),
        Some(house::HOUSE) => house::run(&rest[1..]),
        _ => match launch::parse(&rest) {
            Ok((spec, argv)) => launch::run(&spec, argv, init::run_args),
            Err(e) => launch::fail(None, &e),
        },
    })
}
