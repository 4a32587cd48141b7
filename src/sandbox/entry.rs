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
        Some("--init" | spare::INIT | house::INIT) => stage(&rest),
        Some(spare::SPARE) => spare::run(&rest[1..]),
        Some(house::HOUSE) => house::run(&rest[1..]),
        _ => match launch::parse(&rest) {
            Ok((spec, argv)) => launch::run(&spec, argv),
            Err(e) => launch::fail(None, &e),
        },
    })
}

/// A second stage, by its arguments (after the subcommand): a launch's
/// (`--init`), a spare's (`--init-spare`) or a house's (`--house-init`).
/// A first stage runs it in a copy of itself, or starts this binary
/// with them (`launch::start_init`).
pub(super) fn stage(args: &[OsString]) -> ExitCode {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().and_then(|a| a.to_str()) {
        Some("--init") => match launch::parse(rest) {
            Ok((spec, argv)) => init::run(&spec, &argv),
            Err(e) => launch::fail(None, &e),
        },
        Some(spare::INIT) => spare::run_init(rest),
        Some(house::INIT) => house::run_init(rest),
        _ => launch::fail(None, "not a second stage of the sandbox"),
    }
}
