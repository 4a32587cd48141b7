//! What the client may change while a session runs: its permission mode and
//! its model.
//!
//! A change is validated and answered by the [`SessionHandle`]
//! (super::SessionHandle) at once, against a [`View`] of the settings it
//! shares with the actor, even while a turn runs; the [`Change`] then goes
//! to the actor, which applies it and appends its `config/changed` record
//! when it next can: at once when idle, otherwise before the turn's next
//! model request (both settings) and before its next call is settled (the
//! mode). So a switch to `acceptEdits` in the middle of a turn already
//! decides that turn's next call, and the log says so before that call's
//! `tool/call` record.

use agent_client_protocol_schema::v1::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use tokio::sync::mpsc;

use super::commit::Committer;
use crate::event_log::{Event, LogError};
use crate::interception::policy::Mode;

/// A setting the client changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Mode(Mode),
    Model(String),
}

impl Change {
    /// The `config/changed` record of this change.
    pub(crate) fn record(&self) -> Event {
        match self {
            Change::Mode(mode) => Event::ConfigChanged {
                config_id: crate::event_log::ConfigId::Mode,
                value: mode.id().into(),
            },
            Change::Model(model) => Event::ConfigChanged {
                config_id: crate::event_log::ConfigId::Model,
                value: model.clone(),
            },
        }
    }
}

/// The settings as the client last set them.
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    /// The model, when the provider has one.
    pub(crate) model: Option<String>,
    /// The models the user may pick (any name when fewer than two).
    pub(crate) model_choices: Vec<String>,
    pub(crate) mode: Mode,
}

impl View {
    /// Applies `change` if it is allowed; else why not.
    pub(crate) fn set(&mut self, change: &Change) -> Result<(), String> {
        match change {
            Change::Mode(mode) => self.mode = *mode,
            Change::Model(model) => {
                if self.model.is_none() {
                    return Err("this session's model provider has no models to choose from".into());
                }
                let listed = self.model_choices.len() < 2 || self.model_choices.contains(model);
                if model.trim().is_empty() || !listed {
                    return Err(format!(
                        "{model:?} is not a model this session can use; the choices are {}",
                        self.model_choices.join(", ")
                    ));
                }
                self.model = Some(model.clone());
            }
        }
        Ok(())
    }

    /// `session/new`'s (and `session/set_config_option`'s) options: the
    /// mode, and the model when the provider has models.
    pub(crate) fn config_options(&self) -> Vec<SessionConfigOption> {
        let modes: Vec<SessionConfigSelectOption> = Mode::ALL
            .iter()
            .map(|m| {
                SessionConfigSelectOption::new(m.id(), m.name())
                    .description(m.description().to_owned())
            })
            .collect();
        let mut options = vec![
            SessionConfigOption::select("mode", "Mode", self.mode.id(), modes)
                .category(SessionConfigOptionCategory::Mode)
                .description("When candor asks before running a tool".to_owned()),
        ];
        if let Some(current) = &self.model {
            let choices: Vec<SessionConfigSelectOption> = self
                .model_choices
                .iter()
                .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
                .collect();
            options.push(
                SessionConfigOption::select("model", "Model", current.clone(), choices)
                    .category(SessionConfigOptionCategory::Model)
                    .description("The model that answers in this session".to_owned()),
            );
        }
        options
    }

    /// `session/new`'s `modes` (for clients that predate config options).
    pub(crate) fn modes(&self) -> SessionModeState {
        SessionModeState::new(
            self.mode.id(),
            Mode::ALL
                .iter()
                .map(|m| SessionMode::new(m.id(), m.name()).description(m.description().to_owned()))
                .collect(),
        )
    }
}

/// The actor's end of the changes.
#[derive(Debug)]
pub(crate) struct Inbox {
    changes: mpsc::UnboundedReceiver<Change>,
    /// A model change waiting for the next model request.
    pending_model: Option<String>,
}

impl Inbox {
    pub(crate) fn new() -> (mpsc::UnboundedSender<Change>, Inbox) {
        let (tx, changes) = mpsc::unbounded_channel();
        (
            tx,
            Inbox {
                changes,
                pending_model: None,
            },
        )
    }

    /// The next change, when the actor is idle.
    pub(crate) async fn recv(&mut self) -> Option<Change> {
        self.changes.recv().await
    }

    /// Records every change that arrived; applies modes to `mode` at once
    /// and keeps the last model for [`take_model`](Self::take_model).
    pub(crate) fn apply(&mut self, c: &mut Committer, mode: &mut Mode) -> Result<(), LogError> {
        while let Ok(change) = self.changes.try_recv() {
            self.record(change, c, mode)?;
        }
        Ok(())
    }

    /// Records one change and applies it (see [`apply`](Self::apply)).
    pub(crate) fn record(
        &mut self,
        change: Change,
        c: &mut Committer,
        mode: &mut Mode,
    ) -> Result<(), LogError> {
        c.commit(change.record())?;
        match change {
            Change::Mode(m) => *mode = m,
            Change::Model(m) => self.pending_model = Some(m),
        }
        Ok(())
    }

    /// The model the client chose since the last request, if any.
    pub(crate) fn take_model(&mut self) -> Option<String> {
        self.pending_model.take()
    }

    /// Switches `provider` to the model the client chose, if it chose one.
    pub(crate) fn apply_model(&mut self, provider: &mut crate::providers::Provider) {
        if let Some(model) = self.take_model()
            && !provider.set_model(&model)
        {
            tracing::warn!(model, "the provider refused the model");
        }
    }
}
