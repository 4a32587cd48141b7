//! The dispatcher's handle on a running session ([`SessionHandle`]), and
//! the commands it sends the session's actor ([`Command`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{ContentBlock, Error as AcpError, RequestId};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::queue::{Queue, SteeringOutcome};
use super::settings;
use crate::sync::lock;
use crate::tools::Shells;

/// What the dispatcher tells a session's actor.
#[derive(Debug)]
pub(crate) enum Command {
    /// Something was put in the session's [`Queue`] (a prompt, a steering
    /// message, a prompt withdrawn): wakes the actor between turns (a
    /// running turn watches the queue itself).
    Arrived,
}

/// The dispatcher's handle on a running session.
#[derive(Debug, Clone)]
pub(crate) struct SessionHandle {
    id: String,
    log_path: PathBuf,
    inbox: mpsc::Sender<Command>,
    /// The session's line of turns and steering messages.
    queue: Queue,
    shared: Arc<Shared>,
    /// The session's background shells: a cancel ends them too.
    shells: Shells,
    /// Mode and model changes, to the actor.
    changes: mpsc::UnboundedSender<settings::Sent>,
    /// The session's running subagents (its whole tree), by session id.
    subagents: Subagents,
}

/// Running subagents by session id, each with its cancel token (shared
/// with the session's `Family`).
pub(crate) type Subagents = Arc<Mutex<std::collections::HashMap<String, CancellationToken>>>;

/// State the dispatcher and the actor share. A std mutex, held for a few
/// instructions, never across an `.await`.
#[derive(Debug)]
struct Shared {
    /// Tripped at shutdown: tools stop without a grace period.
    hard_stop: CancellationToken,
    /// The settings as the client last set them (and the user's
    /// `/sandbox`; shared with the actor).
    view: Arc<Mutex<settings::View>>,
}

impl SessionHandle {
    pub(crate) fn new(
        id: String,
        log_path: PathBuf,
        inbox: mpsc::Sender<Command>,
        hard_stop: CancellationToken,
        shells: Shells,
        view: Arc<Mutex<settings::View>>,
        changes: mpsc::UnboundedSender<settings::Sent>,
    ) -> Self {
        Self {
            id,
            log_path,
            inbox,
            queue: Queue::default(),
            shells,
            changes,
            subagents: Subagents::default(),
            shared: Arc::new(Shared { hard_stop, view }),
        }
    }

    /// Shares the session's running subagents (its `Family`'s), for a
    /// client's cancel of one of them.
    pub(crate) fn with_subagents(mut self, subagents: Subagents) -> Self {
        self.subagents = subagents;
        self
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn log_path(&self) -> &std::path::Path {
        &self.log_path
    }

    /// The session's line, which the actor takes its turns from.
    pub(crate) fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Wakes the actor for what was just put in the queue; an error when
    /// the actor is gone.
    fn wake(&self) -> Result<(), AcpError> {
        match self.inbox.try_send(Command::Arrived) {
            // A full inbox already holds a wake-up.
            Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(stopped(&self.id)),
        }
    }

    /// Called by the reader, in wire order, when a `session/prompt` for
    /// this session arrives: it runs now, or waits behind the running turn
    /// (see [`Queue::prompt`]); its cancel token exists from this moment,
    /// so a `session/cancel` right behind it on the wire reaches it. The
    /// answer comes when its own turn ends.
    pub(crate) fn prompt(
        &self,
        request: RequestId,
        content: Vec<ContentBlock>,
    ) -> Result<oneshot::Receiver<crate::session::queue::PromptAnswer>, AcpError> {
        if self.inbox.is_closed() {
            return Err(stopped(&self.id));
        }
        let answer = self.queue.prompt(request, content)?;
        self.wake()?;
        Ok(answer)
    }

    /// Called by the reader, in wire order, for a `_session/steering`
    /// message (see [`Queue::steer`]); answered once it is recorded.
    pub(crate) fn steer(
        &self,
        content: Vec<ContentBlock>,
    ) -> Result<oneshot::Receiver<SteeringOutcome>, AcpError> {
        if self.inbox.is_closed() {
            return Err(stopped(&self.id));
        }
        let answer = self.queue.steer(content)?;
        self.wake()?;
        Ok(answer)
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
        let idle = !self.queue.busy();
        Ok((view.config_options(), idle.then_some(wait)))
    }

    /// `session/cancel`: cancels the running turn (or the prompt read but
    /// not yet started) and the session's background commands; queued
    /// prompts then run.
    pub(crate) fn cancel(&self) {
        self.shells.kill_all();
        self.queue.cancel_running();
    }

    /// `session/cancel` of one of this session's subagents: it ends (its
    /// parent goes on). `false`: none of this session's.
    pub(crate) fn cancel_subagent(&self, id: &str) -> bool {
        match lock(&self.subagents).get(id) {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// `$/cancel_request` for one of this session's prompts: its turn
    /// cancelled, or taken out of the queue. `false`: not here (it ended).
    pub(crate) fn cancel_request(&self, request: &RequestId) -> bool {
        let found = self.queue.cancel_request(request);
        if found {
            let _ = self.wake();
        }
        found
    }

    /// Ends the session's work: the running turn cancelled, queued prompts
    /// answered `cancelled`, background commands ended.
    pub(crate) fn close(&self) {
        self.shells.kill_all();
        self.queue.close();
        let _ = self.wake();
    }

    /// Ends everything and tells tools to stop without grace.
    pub(crate) fn stop(&self) {
        self.close();
        self.shared.hard_stop.cancel();
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
