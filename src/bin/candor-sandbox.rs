//! `candor-sandbox`: the sandbox's lean launcher. The same code as `candor
//! __sandbox` (`candor::sandbox::entry`: the launcher, then `init`), in a binary that
//! holds nothing else, so that a confined command does not pay for
//! starting all of candor's binary twice (the launcher, then the PID
//! namespace's init). candor uses it when it sits beside candor's own
//! binary and is of the same build (`candor::sandbox::launcher`); it is
//! started by candor, never by hand (`protocol/sandbox.md`, "The
//! launcher").

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    match candor::sandbox::entry::main_if_sandbox() {
        Some(code) => code,
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "usage: candor-sandbox {} <launch JSON> -- <program> [args…] (candor starts it; it is not run by hand)",
                candor::sandbox::SUBCOMMAND
            );
            ExitCode::from(2)
        }
    }
}
