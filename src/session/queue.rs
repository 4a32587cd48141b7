//! The session's line: prompts that arrive while a turn runs, waiting in
//! the order received, and steering messages for the running turn.
//!
//! [`Queue`] is shared by the dispatcher's handle and the session's actor.
//! The handle puts in what the reader reads, synchronously and in wire
//! order ([`Queue::prompt`], [`Queue::steer`], [`Queue::cancel_request`]),
//! so the order received is the order kept. The actor records each
//! arrival ([`Queue::record`]: `prompt/queued`, `steering/received`,
//! `prompt/unqueued`, `steering/dropped`) as soon as it can: between turns,
//! at every step of a turn, and while a turn waits on the model, a tool or
//! a permission answer ([`Queue::recording`]); a wait it does not watch
//! (a hook, an MCP server starting) is bounded, so a record waits at most
//! that long. It takes the next turn from the line ([`Queue::next`]) and,
//! at each safe boundary of a turn (before a model request), the steering
//! messages to deliver ([`Queue::take_steering`]).
//!
//! A steering message recorded while a turn runs is answered `injected`
//! once recorded (it reaches the model before that turn's next request or,
//! if the turn ends first without being cancelled, in a turn of its own
//! right after). One that finds no turn running opens a turn of its own, in
//! the line with the prompts, and is answered `startedNewTurn` when that
//! turn ends (so its updates come before the answer, as a prompt's do).
//! `failed`: it could not be recorded, or the session ended first. One std mutex, held for a few instructions,
//! never across an `.await` or a write.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{ContentBlock, Error as AcpError, RequestId, StopReason};
use serde::Serialize;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::commit::Committer;
use crate::event_log::{Dropped, Event, LogError, Unqueued, Via};
use crate::sync::lock;

/// Most prompts that wait behind the running turn.
pub(crate) const MAX_QUEUED: usize = 8;

/// Most steering messages that wait for the running turn's next model
/// request.
pub(crate) const MAX_STEERING: usize = 8;

/// How a steering message was taken (`_session/steering`'s `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum SteeringOutcome {
    /// Recorded while a turn ran: the model gets it at that turn's next
    /// safe boundary.
    Injected,
    /// Recorded while no turn ran: it opens a turn of its own.
    StartedNewTurn,
    /// Not recorded (the log failed, or the session ended first).
    Failed,
}

/// A prompt's answer: its turn's stop reason, or why it failed.
pub(crate) type PromptReply = oneshot::Sender<PromptAnswer>;

/// A prompt's answer as the request's task receives it.
#[derive(Debug)]
pub(crate) struct PromptAnswer {
    /// The stop reason, or why the turn failed.
    pub(crate) stop: Result<StopReason, AcpError>,
    /// Told once the response is queued on the wire: the actor waits for
    /// it before the next turn, so a turn's response always goes out
    /// before anything of the turn behind it (the two requests' tasks
    /// would otherwise race to the writer). None for a prompt answered
    /// where nothing waits (taken out of the queue, the session closed).
    pub(crate) written: Option<oneshot::Sender<()>>,
}

impl PromptAnswer {
    /// An answer nothing waits on.
    fn now(stop: Result<StopReason, AcpError>) -> PromptAnswer {
        PromptAnswer {
            stop,
            written: None,
        }
    }
}

/// How long the actor waits for a turn's response to be queued before it
/// starts the next turn anyway (the request's task is only a send away).
const WRITTEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Who is answered when a turn ends.
#[derive(Debug)]
pub(crate) enum Reply {
    /// The prompt's request: the stop reason.
    Prompt(PromptReply),
    /// The steering message that opened the turn: `startedNewTurn`, once
    /// the turn is over, so that its updates all come before the answer,
    /// as a prompt's do.
    Steering(oneshot::Sender<SteeringOutcome>),
}

impl Reply {
    /// Answers with how the turn ended, and returns once the answer is
    /// queued on the wire (bounded by [`WRITTEN_WITHIN`]).
    pub(crate) async fn send(self, answer: Result<StopReason, AcpError>) {
        match self {
            Reply::Prompt(reply) => {
                let (written, queued) = oneshot::channel();
                let answer = PromptAnswer {
                    stop: answer,
                    written: Some(written),
                };
                if reply.send(answer).is_ok() {
                    // An error: the request's task is gone (cancelled by
                    // `$/cancel_request`), nothing to wait for.
                    let _ = tokio::time::timeout(WRITTEN_WITHIN, queued).await;
                }
            }
            Reply::Steering(reply) => {
                let _ = reply.send(SteeringOutcome::StartedNewTurn);
            }
        }
    }
}

/// A turn to run, taken from the line.
#[derive(Debug)]
pub(crate) struct Next {
    pub(crate) content: Vec<ContentBlock>,
    /// How it came to run (none: a prompt that arrived while nothing ran).
    pub(crate) via: Option<Via>,
    pub(crate) cancel: CancellationToken,
    /// Answered when the turn ends; none for a steering message answered
    /// `injected` already (a turn left it to a turn of its own).
    pub(crate) reply: Option<Reply>,
}

/// The line, shared by the session's handle and its actor.
#[derive(Debug, Clone, Default)]
pub(crate) struct Queue {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    line: Mutex<Line>,
    /// Something was put in: the actor records it.
    arrived: Notify,
}

#[derive(Debug, Default)]
struct Line {
    /// The turn the actor runs (or ran last, until it takes the next).
    current: Option<Current>,
    /// Turns waiting, in the order received.
    waiting: VecDeque<Waiting>,
    /// Steering messages for the current turn, in the order received.
    steering: VecDeque<Steer>,
    /// What arrived and is not recorded yet, in the order received.
    unrecorded: VecDeque<Note>,
    /// The session ended: nothing more is taken.
    closed: bool,
}

#[derive(Debug)]
struct Current {
    /// The prompt's request (none for a turn a steering message opened).
    request: Option<RequestId>,
    cancel: CancellationToken,
}

#[derive(Debug)]
enum Waiting {
    Prompt {
        request: RequestId,
        content: Vec<ContentBlock>,
        cancel: CancellationToken,
        reply: PromptReply,
        /// It arrived while a turn ran or others waited (`prompt/queued`);
        /// else it is the next turn, handed to the actor at once.
        queued: bool,
    },
    /// A steering message that found no turn running: a turn of its own.
    Steered {
        steer: Steer,
        cancel: CancellationToken,
    },
}

impl Waiting {
    fn queued(&self) -> bool {
        match self {
            Waiting::Prompt { queued, .. } => *queued,
            Waiting::Steered { .. } => true,
        }
    }

    fn cancel(&self) -> &CancellationToken {
        match self {
            Waiting::Prompt { cancel, .. } | Waiting::Steered { cancel, .. } => cancel,
        }
    }
}

#[derive(Debug)]
struct Steer {
    id: String,
    content: Vec<ContentBlock>,
    /// Answered once recorded.
    reply: Option<oneshot::Sender<SteeringOutcome>>,
    recorded: bool,
}

/// An arrival to record, in order.
#[derive(Debug)]
enum Note {
    Queued {
        request: RequestId,
        text: String,
    },
    Steering {
        id: String,
    },
    Unqueued {
        request: RequestId,
        reason: Unqueued,
    },
    Dropped {
        id: String,
        reason: Dropped,
    },
}

impl Line {
    fn queued(&self) -> usize {
        self.waiting.iter().filter(|w| w.queued()).count()
    }

    /// A steering message never recorded, taken back: its note goes, and it
    /// is answered `failed`.
    fn unrecorded_steer(&mut self, mut steer: Steer) {
        self.unrecorded
            .retain(|n| !matches!(n, Note::Steering { id } if *id == steer.id));
        if let Some(reply) = steer.reply.take() {
            let _ = reply.send(SteeringOutcome::Failed);
        }
    }

    /// A steering message that will not reach the model.
    fn drop_steer(&mut self, steer: Steer, reason: Dropped) {
        if steer.recorded {
            self.unrecorded.push_back(Note::Dropped {
                id: steer.id,
                reason,
            });
        } else {
            self.unrecorded_steer(steer);
        }
    }
}

fn stopped() -> AcpError {
    AcpError::internal_error().data("the session has stopped")
}

impl Queue {
    fn line(&self) -> std::sync::MutexGuard<'_, Line> {
        lock(&self.shared.line)
    }

    /// A `session/prompt`, as the reader reads it: the next turn when
    /// nothing runs or waits, else queued behind them (at most
    /// [`MAX_QUEUED`]). Returns its answer, to await.
    pub(crate) fn prompt(
        &self,
        request: RequestId,
        content: Vec<ContentBlock>,
    ) -> Result<oneshot::Receiver<PromptAnswer>, AcpError> {
        let mut line = self.line();
        if line.closed {
            return Err(stopped());
        }
        let queued = line.current.is_some() || !line.waiting.is_empty();
        if queued && line.queued() >= MAX_QUEUED {
            return Err(AcpError::invalid_request().data(format!(
                "{MAX_QUEUED} prompts already wait behind the running turn; wait for one to run, or withdraw one with $/cancel_request"
            )));
        }
        let (reply, answer) = oneshot::channel();
        if queued {
            line.unrecorded.push_back(Note::Queued {
                request: request.clone(),
                text: crate::history::flatten_prompt(&content),
            });
        }
        line.waiting.push_back(Waiting::Prompt {
            request,
            content,
            cancel: CancellationToken::new(),
            reply,
            queued,
        });
        drop(line);
        self.shared.arrived.notify_one();
        Ok(answer)
    }

    /// A `_session/steering` message, as the reader reads it: for the
    /// running turn (at most [`MAX_STEERING`] waiting for it), or a turn of
    /// its own when none runs. Returns its answer, given once recorded.
    pub(crate) fn steer(
        &self,
        content: Vec<ContentBlock>,
    ) -> Result<oneshot::Receiver<SteeringOutcome>, AcpError> {
        let mut line = self.line();
        if line.closed {
            return Err(stopped());
        }
        let (reply, answer) = oneshot::channel();
        let steer = Steer {
            id: uuid::Uuid::new_v4().to_string(),
            content,
            reply: Some(reply),
            recorded: false,
        };
        let id = steer.id.clone();
        if line.current.is_some() {
            if line.steering.len() >= MAX_STEERING {
                return Err(AcpError::invalid_request().data(format!(
                    "{MAX_STEERING} steering messages already wait for the running turn's next model request; wait for them to be delivered"
                )));
            }
            line.steering.push_back(steer);
        } else {
            if line.queued() >= MAX_QUEUED {
                return Err(AcpError::invalid_request().data(format!(
                    "{MAX_QUEUED} turns already wait; wait for one to run"
                )));
            }
            line.waiting.push_back(Waiting::Steered {
                steer,
                cancel: CancellationToken::new(),
            });
        }
        line.unrecorded.push_back(Note::Steering { id });
        drop(line);
        self.shared.arrived.notify_one();
        Ok(answer)
    }

    /// `session/cancel`: cancels the running turn (or the one about to
    /// run), never a queued one.
    pub(crate) fn cancel_running(&self) {
        let line = self.line();
        match (&line.current, line.waiting.front()) {
            (Some(current), _) => current.cancel.cancel(),
            (None, Some(next)) if !next.queued() => next.cancel().cancel(),
            _ => {}
        }
    }

    /// `$/cancel_request` for a prompt: its turn cancelled if it runs (or
    /// is about to), or, if it waits in the queue, taken out and answered
    /// `cancelled` (`prompt/unqueued`). `false`: no such prompt here.
    pub(crate) fn cancel_request(&self, request: &RequestId) -> bool {
        let mut line = self.line();
        if let Some(current) = &line.current
            && current.request.as_ref() == Some(request)
        {
            current.cancel.cancel();
            return true;
        }
        let Some(place) = line
            .waiting
            .iter()
            .position(|w| matches!(w, Waiting::Prompt { request: r, .. } if r == request))
        else {
            return false;
        };
        if !line.waiting[place].queued() {
            line.waiting[place].cancel().cancel();
            return true;
        }
        if let Some(Waiting::Prompt { reply, .. }) = line.waiting.remove(place) {
            let _ = reply.send(PromptAnswer::now(Ok(StopReason::Cancelled)));
        }
        line.unrecorded.push_back(Note::Unqueued {
            request: request.clone(),
            reason: Unqueued::Cancelled,
        });
        drop(line);
        self.shared.arrived.notify_one();
        true
    }

    /// The session ends: the running turn is cancelled, every waiting
    /// prompt answered `cancelled` (`prompt/unqueued` for a queued one),
    /// and nothing more is taken.
    pub(crate) fn close(&self) {
        let mut line = self.line();
        line.closed = true;
        if let Some(current) = &line.current {
            current.cancel.cancel();
        }
        let waiting: Vec<Waiting> = line.waiting.drain(..).collect();
        for w in waiting {
            match w {
                Waiting::Prompt {
                    request,
                    reply,
                    queued,
                    ..
                } => {
                    let _ = reply.send(PromptAnswer::now(Ok(StopReason::Cancelled)));
                    if queued {
                        line.unrecorded.push_back(Note::Unqueued {
                            request,
                            reason: Unqueued::Stopped,
                        });
                    }
                }
                Waiting::Steered { steer, .. } => line.drop_steer(steer, Dropped::Stopped),
            }
        }
        drop(line);
        self.shared.arrived.notify_one();
    }

    /// A turn runs or waits (a settings change then takes effect later).
    pub(crate) fn busy(&self) -> bool {
        let line = self.line();
        line.current.is_some() || !line.waiting.is_empty()
    }

    /// Something was put in since this was last awaited.
    pub(crate) async fn arrived(&self) {
        self.shared.arrived.notified().await;
    }

    /// Records every arrival not yet recorded, in the order received, and
    /// answers each steering message once its record is written.
    pub(crate) fn record(&self, c: &mut Committer) -> Result<(), LogError> {
        loop {
            let (event, reply) = {
                let mut line = self.line();
                let Some(note) = line.unrecorded.pop_front() else {
                    return Ok(());
                };
                match note {
                    Note::Queued { request, text } => (
                        Event::PromptQueued {
                            request_id: request,
                            text,
                        },
                        None,
                    ),
                    Note::Unqueued { request, reason } => (
                        Event::PromptUnqueued {
                            request_id: request,
                            reason,
                        },
                        None,
                    ),
                    Note::Dropped { id, reason } => (
                        Event::SteeringDropped {
                            steering_id: id,
                            reason,
                        },
                        None,
                    ),
                    Note::Steering { id } => match line.take_for_record(&id) {
                        Some((content, reply)) => (
                            Event::SteeringReceived {
                                steering_id: id,
                                content,
                            },
                            Some(reply),
                        ),
                        None => continue,
                    },
                }
            };
            let steering = match &event {
                Event::SteeringReceived { steering_id, .. } => Some(steering_id.clone()),
                _ => None,
            };
            match c.commit(event) {
                Ok(()) => {
                    if let Some((Some(reply), outcome)) = reply {
                        let _ = reply.send(outcome);
                    }
                }
                Err(e) => {
                    if let Some((Some(reply), _)) = reply {
                        let _ = reply.send(SteeringOutcome::Failed);
                    }
                    if let Some(id) = steering {
                        self.line().unrecordable(&id);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Runs `work` while recording what arrives meanwhile.
    pub(crate) async fn recording<F: std::future::Future>(
        &self,
        c: &mut Committer,
        work: F,
    ) -> Result<F::Output, LogError> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                out = &mut work => return Ok(out),
                () = self.arrived() => self.record(c)?,
            }
        }
    }

    /// The steering messages recorded for the running turn, taken to be
    /// delivered now (`(id, content)`, in the order received).
    pub(crate) fn take_steering(&self) -> Vec<(String, Vec<ContentBlock>)> {
        let mut line = self.line();
        let (ready, rest): (VecDeque<Steer>, VecDeque<Steer>) =
            line.steering.drain(..).partition(|s| s.recorded);
        line.steering = rest;
        ready.into_iter().map(|s| (s.id, s.content)).collect()
    }

    /// Steering messages wait for the running turn.
    pub(crate) fn has_steering(&self) -> bool {
        !self.line().steering.is_empty()
    }

    /// The running turn was cancelled: the steering messages recorded for
    /// it will not reach the model (`steering/dropped`).
    pub(crate) fn drop_steering(&self, c: &mut Committer) -> Result<(), LogError> {
        self.record(c)?;
        {
            let mut line = self.line();
            let (recorded, rest): (VecDeque<Steer>, VecDeque<Steer>) =
                line.steering.drain(..).partition(|s| s.recorded);
            line.steering = rest;
            for steer in recorded {
                line.drop_steer(steer, Dropped::Cancelled);
            }
        }
        self.record(c)
    }

    /// The next turn, once everything that arrived is recorded: steering
    /// messages the last turn left first (each a turn of its own), then the
    /// line in the order received. `None`: nothing waits (or the session
    /// ended); the session is idle.
    pub(crate) fn next(&self, c: &mut Committer) -> Result<Option<Next>, LogError> {
        loop {
            // Steering the last turn did not deliver: recorded now, they
            // are answered as turns of their own.
            {
                let mut line = self.line();
                while let Some(steer) = line.steering.pop_back() {
                    line.waiting.push_front(Waiting::Steered {
                        steer,
                        cancel: CancellationToken::new(),
                    });
                }
            }
            self.record(c)?;
            let mut line = self.line();
            if !line.steering.is_empty() {
                continue;
            }
            if line.closed {
                line.current = None;
                let waiting: Vec<Waiting> = line.waiting.drain(..).collect();
                for w in waiting {
                    if let Waiting::Steered { steer, .. } = w {
                        line.drop_steer(steer, Dropped::Stopped);
                    }
                }
                let done = line.unrecorded.is_empty();
                drop(line);
                if done {
                    return Ok(None);
                }
                continue;
            }
            // A steering message opens its turn only once recorded.
            if matches!(line.waiting.front(), Some(Waiting::Steered { steer, .. }) if !steer.recorded)
            {
                continue;
            }
            let next = match line.waiting.pop_front() {
                None => None,
                Some(Waiting::Prompt {
                    request,
                    content,
                    cancel,
                    reply,
                    queued,
                }) => {
                    line.current = Some(Current {
                        request: Some(request.clone()),
                        cancel: cancel.clone(),
                    });
                    Some(Next {
                        content,
                        via: queued.then_some(Via::Queue {
                            request_id: request,
                        }),
                        cancel,
                        reply: Some(Reply::Prompt(reply)),
                    })
                }
                Some(Waiting::Steered { steer, cancel }) => {
                    line.current = Some(Current {
                        request: None,
                        cancel: cancel.clone(),
                    });
                    Some(Next {
                        content: steer.content,
                        via: Some(Via::Steering {
                            steering_id: steer.id,
                        }),
                        cancel,
                        reply: steer.reply.map(Reply::Steering),
                    })
                }
            };
            if next.is_none() {
                line.current = None;
            }
            return Ok(next);
        }
    }
}

impl Line {
    /// A steering message about to be recorded: marked so, its content
    /// and, for the running turn, its answer (`injected`). `None`: it is
    /// gone (the session ended).
    #[allow(clippy::type_complexity)]
    fn take_for_record(
        &mut self,
        id: &str,
    ) -> Option<(
        Vec<ContentBlock>,
        (Option<oneshot::Sender<SteeringOutcome>>, SteeringOutcome),
    )> {
        if let Some(s) = self.steering.iter_mut().find(|s| s.id == id) {
            s.recorded = true;
            return Some((
                s.content.clone(),
                (s.reply.take(), SteeringOutcome::Injected),
            ));
        }
        // Answered when the turn it opens ends (`Reply::Steering`).
        self.waiting.iter_mut().find_map(|w| match w {
            Waiting::Steered { steer, .. } if steer.id == id => {
                steer.recorded = true;
                Some((
                    steer.content.clone(),
                    (None, SteeringOutcome::StartedNewTurn),
                ))
            }
            _ => None,
        })
    }

    /// A steering message whose record could not be written: taken out,
    /// and answered `failed`.
    fn unrecordable(&mut self, id: &str) {
        let mut gone = None;
        if let Some(place) = self.steering.iter().position(|s| s.id == id) {
            gone = self.steering.remove(place);
        } else if let Some(place) = self
            .waiting
            .iter()
            .position(|w| matches!(w, Waiting::Steered { steer, .. } if steer.id == id))
            && let Some(Waiting::Steered { steer, .. }) = self.waiting.remove(place)
        {
            gone = Some(steer);
        }
        if let Some(reply) = gone.and_then(|mut s| s.reply.take()) {
            let _ = reply.send(SteeringOutcome::Failed);
        }
    }
}
