//! The sandbox: a kernel boundary candor can put any command in
//! (`protocol/sandbox.md`).
//!
//! - [`Boundary`] (`boundary`) is the value settled with a call and
//!   recorded: preset, writable roots, `TMPDIR`, read-denied and protected
//!   paths, network, and [`Enforced`], what the kernel will hold; its card
//!   line and what it does not hold come from it alone.
//! - [`Probe`] (`probe`) is what this kernel gives, found once per process
//!   by a child that tries (`tools::exec::sandbox_probe`);
//!   [`Boundary::enforceable`] never claims more.
//! - The launcher (`launch`, then `init`) is the lean `candor-sandbox`
//!   beside candor's binary, or candor's own binary (`launcher` chooses),
//!   run as `… __sandbox <Launch JSON> -- argv…` (`main` hands it over
//!   before anything else starts): it confines itself with namespaces
//!   (`namespaces`), Landlock (`ruleset`) and seccomp (`seccomp`), runs the
//!   command as its child in a PID namespace, and dies with candor
//!   (`lifeline`). Setup that fails runs nothing, and says so on the
//!   lifeline.
//! - A spare launcher (`spare`) is one started ahead, namespaces entered
//!   and its init running, waiting on its lifeline for the command.
//! - The session's house (`house`) holds the namespaces and mounts of one
//!   boundary for all the session's commands in it: a launcher given it
//!   joins them (`join`) instead of making its own, and its second stage
//!   is the command's subreaper.
//! - The network allowlist is a proxy candor runs (`proxy`: the session's
//!   grants and one door a command, whose judge is the user asked on the
//!   command's card), reached from inside only through the forwarder
//!   (`forwarder`).
//! - [`explain()`] tells the model when a failure was the sandbox's doing.
//!
//! This module imports nothing of candor's but `sync`; `tools::exec` and
//! the later wiring build on it.

pub mod boundary;
mod enforceable;
pub mod entry;
pub mod explain;
mod fork;
pub mod forwarder;
pub mod house;
pub mod init;
pub mod join;
pub mod launch;
pub mod launcher;
pub mod lifeline;
pub mod namespaces;
pub mod probe;
pub mod protected;
pub mod proxy;
pub mod room;
pub mod ruleset;
pub mod seccomp;
pub mod settings;
pub mod spare;

pub use boundary::{Boundary, Confinement, Enforced, LandlockRules, Namespaces, Network, Preset};
pub use explain::explain;
pub use house::{House, Mark};
pub use join::HouseRef;
pub use launch::{Launch, MESSAGE_PREFIX, SETUP_FAILED, SUBCOMMAND};
pub use lifeline::{Lifeline, Report, Setup, Watch};
pub use probe::Probe;
pub use proxy::{
    Allowlist, Answer, DecidedBy, Decision, Grants, Judge, Proxy, ProxyConfig, RefuseUnlisted,
};
pub use settings::{Layer, Sandbox};
pub use spare::{Spare, Start};
