//! candor: a coding agent that speaks the Agent Client Protocol (ACP v1)
//! over stdio. What you see is what ran.
//!
//! # Layout, in data-flow order
//!
//! ```text
//! stdin ─► transport::LineReader ─► dispatch::on_line ─┬─► rpc::Outgoing (responses to our requests)
//!                                                      ├─► notifications (session/cancel, $/cancel_request)
//!                                                      └─► requests: initialize, session/new, session/prompt, …
//!                                                                 │
//!                                                 session::SessionHandle ─► session::actor (one per session)
//!                                                                 │
//!                      session::turn: user/message → providers (model) → interception::settle → tools
//!                                                                 │ every fact
//!                                                                 ▼
//!                      session::commit::Committer ─► event_log (append, fsync before a tool runs)
//!                                                 └─► presentation::Presenter ─► transport::Outbox ─► stdout
//!                      history::derive_messages(log) ─► next model request
//! ```
//!
//! `ARCHITECTURE.md` states the invariants; `protocol/` documents the wire
//! contract and the event-log format.

pub mod audit;
pub mod bridges;
pub mod client;
pub mod compaction;
pub mod config;
pub mod conversation;
pub mod demo;
pub(crate) mod dispatch;
pub mod doctor;
pub mod event_log;
pub mod harness;
pub mod history;
pub mod interception;
pub mod matcher;
#[cfg(feature = "mcp-test-server")]
pub mod mcp_test_server;
pub mod media;
pub mod mode;
pub mod presentation;
pub mod providers;
pub mod roots;
pub(crate) mod rpc;
pub mod sandbox;
pub(crate) mod session;
pub mod shell;
pub mod shown;
pub mod subagents;
pub(crate) mod sync;
pub mod text;
pub mod tools;
pub(crate) mod transport;
pub mod web;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

pub use config::{Config, ProviderSetting};
/// For the `environment` bench: what a new session would tell the model.
pub use session::environment::system_prompt;
pub use transport::{MAX_LINE, stdio};

/// What `candor` with no subcommand says on stderr when a person started
/// it at a terminal (stdin a TTY: no editor is on the other end): what it
/// is and where to go. It still serves, on that terminal.
pub fn terminal_hint(stdin_is_terminal: bool) -> Option<&'static str> {
    stdin_is_terminal.then_some(
        "candor is an ACP agent: an editor starts it and speaks JSON-RPC to it over stdin and stdout (the README shows the set-up for each editor). To see it work, run `candor demo`; for its commands, `candor --help`. It is serving this terminal now: Ctrl-D ends it.",
    )
}

/// How long shutdown waits for sessions to write their last records and
/// run their SessionEnd hooks (which get 1.5 s of it).
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(2000);

/// Serves one ACP connection until `input` ends or `shutdown` resolves.
///
/// Then every running turn is cancelled, child processes are ended, the
/// sessions' last records are written and queued frames are flushed.
pub async fn serve<R, W>(input: R, output: W, config: Config, shutdown: impl Future<Output = ()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, queue) = transport::Outbox::new();
    let (finish, finished) = oneshot::channel();
    let writer = transport::spawn_writer(output, queue, config.log_messages, finished);
    // What the kernel gives the sandbox is asked now, once per process,
    // while the client starts its session (a session asks again and waits
    // for the same answer: `tools::exec::sandbox_probe`); not when
    // candor's own config turns the sandbox off.
    if let Some(launcher) = config.launcher.clone()
        && !config.sandbox_off()
    {
        tokio::spawn(async move { tools::exec::sandbox_probe(&launcher).await });
    }
    let agent = Arc::new(dispatch::Agent::new(config, outbox.clone()));
    let mut reader = transport::LineReader::new(input);
    tokio::pin!(shutdown);
    loop {
        let next = tokio::select! {
            next = reader.next() => next,
            () = &mut shutdown => {
                tracing::info!("shutdown requested");
                break;
            }
        };
        match next {
            Ok(Some(transport::Inbound::Line(line))) => dispatch::on_line(&agent, line),
            Ok(Some(transport::Inbound::TooLong)) => {
                tracing::warn!("discarded an input line longer than {MAX_LINE} bytes");
                outbox.send_line(rpc::error_line(
                    &serde_json::Value::Null,
                    &agent_client_protocol_schema::v1::Error::invalid_request()
                        .data(format!("line longer than {MAX_LINE} bytes discarded")),
                ));
            }
            Ok(None) => {
                tracing::info!("input closed");
                break;
            }
            Err(e) => {
                tracing::warn!(error = %e, "input failed");
                break;
            }
        }
    }
    agent.shutdown(SHUTDOWN_GRACE).await;
    // Nothing a command or hook started outlives candor.
    tools::exec::end_everything();
    // Let request tasks whose turn just ended queue their responses.
    agent.wait_for_requests(Duration::from_millis(200)).await;
    drop(agent);
    let _ = finish.send(());
    let _ = writer.await;
}
