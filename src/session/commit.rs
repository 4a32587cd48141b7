//! The committer: append a fact, then show what it means.
//!
//! [`Committer::commit`] is the only way a session produces
//! `session/update`s: it appends the event to the log and queues the
//! presenter's projection of the appended record. If the append fails,
//! nothing is shown for it. The presenter is given the record with its
//! images' data put back from the content store
//! ([`Attachments::hydrate`](crate::event_log::content::Attachments::hydrate)),
//! so a replayed prompt shows its images as the client sent them: those not
//! held are read from the store for that record only, so a replay never
//! holds a session's images all at once. Before a model request is derived,
//! [`Committer::ensure_images`] loads the images it carries.

use agent_client_protocol_schema::v1::{SessionConfigOption, SessionId, SessionUpdate};

use crate::event_log::{Event, EventLog, LogError, Record};
use crate::presentation::Presenter;
use crate::transport::Outbox;

/// Most rounds of choosing and loading a request's images.
const ENSURE_ROUNDS: usize = 64;

/// A session's log, presenter and connection to the client.
#[derive(Debug)]
pub(crate) struct Committer {
    session_id: SessionId,
    log: EventLog,
    presenter: Presenter,
    outbox: Outbox,
    /// A subagent's log the client is not shown as a session of its own
    /// (its parent's card shows its calls): records are appended and
    /// presented (the presenter keeps its cards) but nothing is sent.
    quiet: bool,
    /// Told of every record appended (a subagent's, for its parent).
    observer: Option<Observer>,
    options: Option<Options>,
}

/// What is told of each record a [`Committer`] appends.
pub(crate) struct Observer(Box<dyn FnMut(&Record) + Send>);

impl Observer {
    pub(crate) fn new(f: impl FnMut(&Record) + Send + 'static) -> Self {
        Self(Box::new(f))
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// The session's config options as the client was last told them, and
/// where they now are (`session::settings::View`, which the dispatcher
/// and the actor update before the record of a change is committed).
pub(crate) struct Options {
    pub(crate) current: Box<dyn Fn() -> Vec<SessionConfigOption> + Send + Sync>,
    pub(crate) sent: Vec<SessionConfigOption>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options").field("sent", &self.sent).finish()
    }
}

impl Committer {
    pub(crate) fn new(
        session_id: SessionId,
        log: EventLog,
        presenter: Presenter,
        outbox: Outbox,
    ) -> Self {
        Self {
            session_id,
            log,
            presenter,
            outbox,
            quiet: false,
            observer: None,
            options: None,
        }
    }

    /// A subagent's committer: `quiet` sends the client nothing (its
    /// parent's card shows its calls); `observer` is told of each record.
    pub(crate) fn for_subagent(mut self, quiet: bool, observer: Option<Observer>) -> Self {
        self.quiet = quiet;
        self.observer = observer;
        self
    }

    /// The session's id.
    pub(crate) fn session_id(&self) -> &str {
        &self.session_id.0
    }

    /// From now on, a record that can change the session's sandbox options
    /// (`config/changed` for `sandbox` or `network`, a command's answer,
    /// `trust/granted`) is followed by a `config_option_update` when the
    /// options are no longer those the client was last given.
    pub(crate) fn follow_options(&mut self, options: Options) {
        self.options = Some(options);
    }

    /// Appends `event` and sends what it means to the client.
    pub(crate) fn commit(&mut self, event: Event) -> Result<(), LogError> {
        self.log.append(event)?;
        self.publish_last();
        Ok(())
    }

    /// Shows the record just appended (and tells the observer of it).
    fn publish_last(&mut self) {
        if let Some(record) = self.log.records().last() {
            if let Some(observer) = &mut self.observer {
                (observer.0)(record);
            }
            let shown = self.log.hydrate(record);
            let mut updates = self.presenter.apply(&shown);
            let changes_options = matches!(
                &record.event,
                Event::ConfigChanged {
                    config_id: crate::event_log::ConfigId::Sandbox
                        | crate::event_log::ConfigId::Network,
                    ..
                } | Event::CommandRan { .. }
                    | Event::TrustGranted { .. }
            );
            if changes_options && let Some(options) = self.options.as_mut() {
                let now = (options.current)();
                if now != options.sent {
                    options.sent.clone_from(&now);
                    updates.push(SessionUpdate::ConfigOptionUpdate(
                        agent_client_protocol_schema::v1::ConfigOptionUpdate::new(now),
                    ));
                }
            }
            if !self.quiet {
                for update in updates {
                    send(&self.outbox, &self.session_id, update);
                }
            }
        }
    }

    /// Keeps an image in the session's content store (on disk when this
    /// returns), for a record about to name it.
    pub(crate) fn store_image(
        &mut self,
        bytes: &[u8],
        mime_type: &str,
    ) -> Result<crate::event_log::StoredImage, LogError> {
        self.log.store_image(bytes, mime_type)
    }

    /// The images the session's records name, as far as they are held
    /// (after [`ensure_images`](Self::ensure_images), every image the
    /// history it was called for carries).
    pub(crate) fn attachments(&self) -> &crate::event_log::content::Attachments {
        self.log.attachments()
    }

    /// Loads from the content store the images the history up to seq
    /// `last` carries (`history::carried`), so that deriving it finds them
    /// held, and returns that history with its images still stand-ins.
    /// When one turns out unavailable or not the size its record gives,
    /// the choice is made again (each time knowing one image more, so a few
    /// rounds at most).
    pub(crate) fn ensure_images(
        &mut self,
        strategy: crate::conversation::RewriteStrategy,
        last: u64,
    ) -> Vec<crate::conversation::Message> {
        let carried = |log: &EventLog| {
            crate::history::carried(log.records(), strategy, log.attachments(), last)
        };
        for _ in 0..ENSURE_ROUNDS {
            let messages = carried(&self.log);
            if !self
                .log
                .ensure_images(&crate::history::wanted_images(&messages))
            {
                // Every image as the choice assumed: the history derived
                // now is the one to send.
                return messages;
            }
        }
        tracing::warn!(
            "the images of a request kept changing as they were loaded; some may be told as unavailable"
        );
        carried(&self.log)
    }

    /// The history the next request carries, its images loaded: what
    /// `history::derive_messages` gives once [`ensure_images`](Self::ensure_images)
    /// ran, folded once.
    pub(crate) fn request_history(
        &mut self,
        strategy: crate::conversation::RewriteStrategy,
    ) -> Vec<crate::conversation::Message> {
        let mut messages = self.ensure_images(strategy, u64::MAX);
        crate::history::put_in_images(&mut messages, self.log.attachments());
        messages
    }

    /// Like [`commit`](Self::commit), and the record is on disk when this
    /// returns: what comes next (running a tool) may depend on it.
    ///
    /// The record's frames are queued between the write and the
    /// `fdatasync`, and this task yields once so the writer can send them
    /// first (the runtime would otherwise keep the just-woken writer for
    /// this worker thread, which the sync blocks): the client sees the card
    /// while the disk works; the tool still waits for the sync.
    pub(crate) async fn commit_durable(&mut self, event: Event) -> Result<(), LogError> {
        self.log.append(event)?;
        self.publish_last();
        tokio::task::yield_now().await;
        self.log.sync()
    }

    /// The records so far.
    /// The log file (outputs too big for it are kept beside it).
    pub(crate) fn log_path(&self) -> &std::path::Path {
        self.log.path()
    }

    pub(crate) fn records(&self) -> &[Record] {
        self.log.records()
    }

    /// What a permission request for this call shows (see
    /// [`Presenter::permission_card`]).
    pub(crate) fn permission_card(
        &self,
        id: &str,
    ) -> Option<agent_client_protocol_schema::v1::ToolCallUpdate> {
        self.presenter.permission_card(id)
    }

    /// What a question about a confined command's connection to `host`
    /// shows (see [`Presenter::network_card`]).
    pub(crate) fn network_card(
        &self,
        id: &str,
        host: &str,
        port: u16,
    ) -> Option<agent_client_protocol_schema::v1::ToolCallUpdate> {
        self.presenter.network_card(id, host, port)
    }

    /// After a log failure: fail every open card so none spins forever.
    /// Runs the presenter over the records already in the log (a loaded
    /// session); with `send`, the client gets the updates (`session/load`),
    /// else they only rebuild the presenter's state (`session/resume`).
    /// The presenter goes live afterwards.
    pub(crate) fn replay(&mut self, send: bool) {
        self.replay_with(send, |_, _| {});
    }

    /// [`replay`](Self::replay), calling `after` with each record once its
    /// updates are sent (a subagent's session is replayed there).
    pub(crate) fn replay_with(&mut self, send: bool, mut after: impl FnMut(&Record, &Outbox)) {
        for record in self.log.records() {
            let updates = self.presenter.apply(&self.log.hydrate(record));
            if send {
                for update in updates {
                    self.send(update);
                }
                after(record, &self.outbox);
            }
        }
        self.presenter.set_mode(crate::presentation::Mode::Live);
    }

    /// A notice that cannot be recorded (the log is damaged and takes no
    /// more records): the one other update not derived from a record.
    pub(crate) fn notify_unrecorded(&mut self, level: crate::event_log::NoticeLevel, text: String) {
        let record = Record {
            seq: self.log.records().len() as u64,
            at: String::new(),
            event: Event::Notice { level, text },
        };
        for update in self.presenter.apply(&record) {
            self.send(update);
        }
    }

    fn send(&self, update: SessionUpdate) {
        if !self.quiet {
            send(&self.outbox, &self.session_id, update);
        }
    }

    pub(crate) fn abandon_open_cards(&mut self, reason: &str) {
        for update in self.presenter.abandon(reason) {
            self.send(update);
        }
    }

    /// The connection's output queue (a subagent's committer sends on it).
    pub(crate) fn outbox(&self) -> &Outbox {
        &self.outbox
    }
}

/// Sends one update of session `session_id`.
pub(crate) fn send(outbox: &Outbox, session_id: &SessionId, update: SessionUpdate) {
    crate::client::session_update(outbox, session_id, update);
}
