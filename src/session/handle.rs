//! The dispatcher's handle on a running session ([`SessionHandle`]), and
//! the commands it sends the session's actor ([`Command`]).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{ContentBlock, Error as AcpError, StopReason};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::settings;
use crate::sync::lock;
use crate::tools::Shells;

/// What the dispatcher asks of a session.
#[derive(Debug)]
pub(crate) enum Command {
    /// Run a turn; answer with its stop reason.
    Prompt {
        content: Vec<ContentBlock>,
        cancel: CancellationToken,
        reply: oneshot::Sender<Result<StopReason, AcpError>>,
    },
}

/// The dispatcher's handle on a running session.
#[derive(Debug, Clone)]
pub(crate) struct SessionHandle {
    id: String,
    log_path: PathBuf,
    inbox: mpsc::Sender<Command>,
    shared: Arc<Shared>,
    /// The session's background shells: a cancel ends them too.
    shells: Shells,
    /// Mode and model changes, to the actor.
    changes: mpsc::UnboundedSender<settings::Sent>,
}

/// State the dispatcher and the actor share. Std mutexes: each is held for
/// a few instructions, never across an `.await`.
#[derive(Debug, Default)]
struct Shared {
    /// A turn is running or queued.
    busy: AtomicBool,
    /// Tokens of prompts read from the wire whose turn has not started.
    armed: Mutex<VecDeque<CancellationToken>>,
    /// The running turn's token.
    current: Mutex<Option<CancellationToken>>,
    /// Tripped at shutdown: tools stop without a grace period.
    hard_stop: CancellationToken,
    /// The settings as the client last set them.
    view: Mutex<settings::View>,
}

impl SessionHandle {
    pub(crate) fn new(
        id: String,
        log_path: PathBuf,
        inbox: mpsc::Sender<Command>,
        hard_stop: CancellationToken,
        shells: Shells,
        view: settings::View,
        changes: mpsc::UnboundedSender<settings::Sent>,
    ) -> Self {
        Self {
            id,
            log_path,
            inbox,
            shells,
            changes,
            shared: Arc::new(Shared {
                hard_stop,
                view: Mutex::new(view),
                ..Shared::default()
            }),
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn log_path(&self) -> &std::path::Path {
        &self.log_path
    }

    /// Called by the reader, in wire order, when a `session/prompt` for this
    /// session arrives.
    pub(crate) fn arm_prompt(&self) {
        lock(&self.shared.armed).push_back(CancellationToken::new());
    }

    /// Runs one prompt turn and answers with its stop reason. A second
    /// prompt while one runs is refused at once; the running turn goes on.
    pub(crate) async fn prompt(&self, content: Vec<ContentBlock>) -> Result<StopReason, AcpError> {
        let cancel = lock(&self.shared.armed).pop_front().unwrap_or_default();
        if self.shared.busy.swap(true, Ordering::SeqCst) {
            return Err(AcpError::invalid_request().data(format!(
                "session {} is already running a prompt turn; wait for its response or send session/cancel",
                self.id
            )));
        }
        let _busy = Busy(&self.shared);
        *lock(&self.shared.current) = Some(cancel.clone());
        let (reply, answer) = oneshot::channel();
        let command = Command::Prompt {
            content,
            cancel,
            reply,
        };
        if self.inbox.send(command).await.is_err() {
            return Err(stopped(&self.id));
        }
        answer.await.unwrap_or_else(|_| Err(stopped(&self.id)))
    }

    /// Changes the mode or the model; answers at once with the session's
    /// config options, even while a turn runs (see [`settings`] for when
    /// the change takes effect), and, while no turn runs, with the word
    /// that the change is recorded (its update queued), which the answer
    /// waits for.
    pub(crate) fn change(
        &self,
        change: settings::Change,
    ) -> Result<
        (
            Vec<agent_client_protocol_schema::v1::SessionConfigOption>,
            Option<oneshot::Receiver<()>>,
        ),
        AcpError,
    > {
        let mut view = lock(&self.shared.view);
        view.set(&change)
            .map_err(|reason| AcpError::invalid_params().data(reason))?;
        let (recorded, wait) = oneshot::channel();
        if self
            .changes
            .send(settings::Sent { change, recorded })
            .is_err()
        {
            return Err(stopped(&self.id));
        }
        let idle = !self.shared.busy.load(Ordering::SeqCst);
        Ok((view.config_options(), idle.then_some(wait)))
    }

    /// Cancels the running turn, any prompt read but not yet started, and
    /// the session's background commands.
    pub(crate) fn cancel(&self) {
        self.shells.kill_all();
        for token in lock(&self.shared.armed).iter() {
            token.cancel();
        }
        if let Some(token) = lock(&self.shared.current).as_ref() {
            token.cancel();
        }
    }

    /// Cancels everything and tells tools to stop without grace.
    pub(crate) fn stop(&self) {
        self.cancel();
        self.shared.hard_stop.cancel();
    }
}

/// Clears `busy` when the prompt call ends, however it ends.
struct Busy<'a>(&'a Shared);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *lock(&self.0.current) = None;
        self.0.busy.store(false, Ordering::SeqCst);
    }
}

fn stopped(id: &str) -> AcpError {
    AcpError::internal_error().data(format!("session {id} has stopped"))
}

/// A started session: its handle and the actor task to await at shutdown.
#[derive(Debug)]
pub(crate) struct Started {
    pub(crate) handle: SessionHandle,
    pub(crate) task: JoinHandle<()>,
    /// The session's settings, for `session/new`'s `configOptions` and
    /// `modes`.
    pub(crate) settings: settings::View,
    /// Fire once the `session/new` response is queued: the actor waits for
    /// it before it says anything to the client.
    pub(crate) opened: oneshot::Sender<()>,
}
