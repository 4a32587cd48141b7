//! Sessions: one actor task per session, owning its log and its state.
//!
//! A [`SessionHandle`] is what the dispatcher holds. It sends commands to
//! the session's actor ([`actor`]), which runs prompt turns one at a time
//! ([`turn`]) and owns the [`Committer`](commit::Committer): the event log
//! plus the presenter that turns each appended record into the
//! `session/update`s the client sees.
//!
//! Cancellation: every prompt gets a [`CancellationToken`] the moment its
//! request is read (see [`SessionHandle::prompt`]), before the request's
//! task even starts, so a `session/cancel` that follows a prompt on the wire
//! always reaches that prompt's turn. A prompt that arrives while a turn
//! runs waits in the session's line ([`queue`]); `session/cancel` cancels
//! the running turn only.

pub(crate) mod actor;
pub(crate) mod ask;
pub(crate) mod attach;
pub(crate) mod builtin_commands;
pub(crate) mod call;
pub(crate) mod commit;
pub(crate) mod compact;
pub(crate) mod environment;
pub(crate) mod events;
pub(crate) mod handle;
pub(crate) mod kit;
pub(crate) mod network;
pub(crate) mod permission;
pub(crate) mod prompt_mcp;
pub(crate) mod queue;
pub(crate) mod restore;
pub(crate) mod sandbox;
pub(crate) mod settings;
pub(crate) mod stored;
pub(crate) mod subagent;
pub(crate) mod system;
pub(crate) mod title;
pub(crate) mod trust;
pub(crate) mod turn;
pub(crate) mod user_commands;

pub(crate) use handle::SessionHandle;
