//! What the client may change while a session runs: its permission mode,
//! its model, the model's effort (`providers::effort`), and the sandbox's
//! preset and network (`protocol/sandbox.md`, "Presets in the editor").
//!
//! A change is validated and answered by the [`SessionHandle`]
//! (super::SessionHandle) at once, against a [`View`] of the settings it
//! shares with the actor, even while a turn runs; the [`Change`] then goes
//! to the actor, which applies it and appends its `config/changed` record
//! when it next can: at once when idle, otherwise before the turn's next
//! model request (both settings) and before its next call is settled (the
//! mode). So a switch to `acceptEdits` in the middle of a turn already
//! decides that turn's next call, and the log says so before that call's
//! `tool/call` record. [`Inbox::apply`] is the one place a change takes
//! effect, at each of those moments; a stored session's settings come
//! back through [`restore`]. Each change carries the word that its record
//! is committed ([`Sent::recorded`]): while no turn runs, the dispatcher
//! waits for it before it answers, so the client gets the
//! `current_mode_update` before the `session/set_mode` (or
//! `session/set_config_option`) response; while a turn runs, the answer
//! goes at once and the update follows when the change takes effect.

use agent_client_protocol_schema::v1::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use tokio::sync::{mpsc, oneshot};

use super::commit::Committer;
use crate::event_log::{Event, LogError};
use crate::interception::policy::Mode;
use crate::providers::Provider;
use crate::sandbox::Preset;
use crate::sandbox::settings::NetworkMode;

/// A setting the client changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Mode(Mode),
    Model(String),
    /// An effort level's id.
    Effort(String),
    /// The sandbox's preset for the session's commands.
    Sandbox(Preset),
    /// The sandbox's network for the session's commands.
    Network(NetworkMode),
}

impl Change {
    /// The `config/changed` record of this change.
    pub(crate) fn record(&self) -> Event {
        match self {
            Change::Mode(mode) => Event::ConfigChanged {
                config_id: crate::event_log::ConfigId::Mode,
                value: mode.id().into(),
                via: None,
            },
            Change::Model(model) => Event::ConfigChanged {
                config_id: crate::event_log::ConfigId::Model,
                value: model.clone(),
                via: None,
            },
            Change::Effort(level) => Event::ConfigChanged {
                config_id: crate::event_log::ConfigId::Effort,
                value: level.clone(),
                via: None,
            },
            Change::Sandbox(preset) => Event::ConfigChanged {
                config_id: crate::event_log::ConfigId::Sandbox,
                value: preset.id().into(),
                via: None,
            },
            Change::Network(network) => Event::ConfigChanged {
                config_id: crate::event_log::ConfigId::Network,
                value: network.id().into(),
                via: None,
            },
        }
    }
}

/// A change on its way to the actor, with the word that it is recorded.
#[derive(Debug)]
pub(crate) struct Sent {
    pub(crate) change: Change,
    /// Told once the change's `config/changed` record is committed (its
    /// update queued).
    pub(crate) recorded: oneshot::Sender<()>,
}

/// The settings as the client last set them.
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    /// The model, when the provider has one.
    pub(crate) model: Option<String>,
    /// The models the user may pick (any name when fewer than two).
    pub(crate) model_choices: Vec<String>,
    pub(crate) mode: Mode,
    /// The effort level in effect, when the model has levels.
    pub(crate) effort: Option<String>,
    /// What the levels come from (they follow the model).
    pub(crate) effort_source: Option<crate::providers::effort::Source>,
    /// The session's sandbox preset and network as they now are (the
    /// settings, then the user's choices in the log).
    pub(crate) sandbox: Option<(Preset, NetworkMode)>,
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
                // As `Provider::set_model`: a level the new model does not
                // take gives way to its default.
                let levels = self.effort_levels();
                if !levels.iter().any(|l| Some(&l.id) == self.effort.as_ref()) {
                    self.effort = self
                        .effort_source
                        .as_ref()
                        .and_then(|s| s.default_level(model))
                        .map(|l| l.id);
                }
            }
            Change::Effort(level) => {
                let levels = self.effort_levels();
                if levels.is_empty() {
                    return Err(format!(
                        "the model {} has no effort levels to choose from",
                        self.model.as_deref().unwrap_or("of this session")
                    ));
                }
                if !levels.iter().any(|l| &l.id == level) {
                    let ids: Vec<&str> = levels.iter().map(|l| l.id.as_str()).collect();
                    return Err(format!(
                        "{level:?} is not an effort level of this model; the levels are {}",
                        ids.join(", ")
                    ));
                }
                self.effort = Some(level.clone());
            }
            Change::Sandbox(preset) => {
                if let Some((p, _)) = self.sandbox.as_mut() {
                    *p = *preset;
                }
            }
            Change::Network(network) => {
                if let Some((_, n)) = self.sandbox.as_mut() {
                    *n = *network;
                }
            }
        }
        Ok(())
    }

    /// The effort levels the current model takes.
    fn effort_levels(&self) -> Vec<crate::providers::effort::Level> {
        match (&self.effort_source, &self.model) {
            (Some(source), Some(model)) => source.levels(model).unwrap_or_default(),
            _ => Vec::new(),
        }
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
        let levels = self.effort_levels();
        if let Some(current) = self.effort.as_ref().filter(|_| !levels.is_empty()) {
            let choices: Vec<SessionConfigSelectOption> = levels
                .into_iter()
                .map(|l| SessionConfigSelectOption::new(l.id, l.name).description(l.description))
                .collect();
            options.push(
                SessionConfigOption::select("effort", "Effort", current.clone(), choices)
                    .category(SessionConfigOptionCategory::ThoughtLevel)
                    .description("How much the model thinks before it answers".to_owned()),
            );
        }
        if let Some((preset, network)) = self.sandbox {
            options.extend(sandbox_options(preset, network));
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

/// The sandbox's two options (`sandbox`, `network`), in their own
/// category (`_sandbox`: the schema has none for it; names starting `_`
/// are free for custom use).
fn sandbox_options(preset: Preset, network: NetworkMode) -> [SessionConfigOption; 2] {
    let category = || SessionConfigOptionCategory::Other("_sandbox".into());
    let presets: Vec<SessionConfigSelectOption> = Preset::ALL
        .into_iter()
        .map(|p| {
            let (name, description) = match p {
                Preset::ReadOnly => ("Read-only", "Commands may write only to their $TMPDIR"),
                Preset::WorkspaceWrite => (
                    "Workspace write",
                    "Commands write inside the project and $TMPDIR; .git and other protected paths stay read-only",
                ),
                Preset::FullAccess => (
                    "Full access",
                    "No sandbox: commands run with everything you can do",
                ),
            };
            SessionConfigSelectOption::new(p.id(), name).description(description.to_owned())
        })
        .collect();
    let networks: Vec<SessionConfigSelectOption> = NetworkMode::ALL
        .into_iter()
        .map(|n| {
            let (name, description) = match n {
                NetworkMode::Off => ("Off", "Commands reach nothing outside"),
                NetworkMode::Allowlist => (
                    "Allowed domains",
                    "Only the domains your settings allow; another one asks you on the command's card",
                ),
                NetworkMode::On => ("On", "Commands reach anything you can"),
            };
            SessionConfigSelectOption::new(n.id(), name).description(description.to_owned())
        })
        .collect();
    [
        SessionConfigOption::select("sandbox", "Sandbox", preset.id(), presets)
            .category(category())
            .description(
                "Where the model's commands may write (each card says what held)".to_owned(),
            ),
        SessionConfigOption::select("network", "Network", network.id(), networks)
            .category(category())
            .description("What the model's commands may reach".to_owned()),
    ]
}

/// The actor's end of the changes, and the one place they take effect
/// ([`apply`](Self::apply); a stored session's settings come back through
/// [`restore`]).
#[derive(Debug)]
pub(crate) struct Inbox {
    changes: mpsc::UnboundedReceiver<Sent>,
    /// A change that arrived while the actor was idle, not applied yet.
    arrived: Option<Sent>,
    /// Model and effort changes waiting for the next model request, in
    /// order.
    pending: Vec<Change>,
}

impl Inbox {
    pub(crate) fn new() -> (mpsc::UnboundedSender<Sent>, Inbox) {
        let (tx, changes) = mpsc::unbounded_channel();
        (
            tx,
            Inbox {
                changes,
                arrived: None,
                pending: Vec::new(),
            },
        )
    }

    /// Waits, while the actor is idle, until a change arrives (`false`:
    /// none ever will); [`apply`](Self::apply) then puts it in effect.
    pub(crate) async fn arrived(&mut self) -> bool {
        match self.changes.recv().await {
            Some(change) => {
                self.arrived = Some(change);
                true
            }
            None => false,
        }
    }

    /// Records every change that arrived (`config/changed`), in order, and
    /// applies it: a mode to `mode` at once, a model to `provider` when one
    /// is given (before a model request, and while idle), else kept until
    /// one is (before a call is settled, where only the mode decides).
    pub(crate) fn apply(
        &mut self,
        c: &mut Committer,
        mode: &mut Mode,
        provider: Option<&mut Provider>,
    ) -> Result<(), LogError> {
        while let Some(Sent { change, recorded }) =
            self.arrived.take().or_else(|| self.changes.try_recv().ok())
        {
            c.commit(change.record())?;
            // The dispatcher may be waiting to answer; it may have gone.
            let _ = recorded.send(());
            match change {
                Change::Mode(m) => *mode = m,
                // Every call's boundary is made from the records.
                Change::Sandbox(_) | Change::Network(_) => {}
                other => self.pending.push(other),
            }
        }
        if let Some(provider) = provider {
            for change in self.pending.drain(..) {
                match change {
                    Change::Model(model) => use_model(provider, &model),
                    Change::Effort(level) => use_effort(provider, &level),
                    Change::Mode(_) | Change::Sandbox(_) | Change::Network(_) => {}
                }
            }
        }
        Ok(())
    }
}

/// A stored session's settings in effect again: its mode on `mode`, its
/// model and effort on `provider` (they are in its log already; nothing is
/// recorded).
pub(crate) fn restore(
    stored: (Option<Mode>, Option<&str>, Option<&str>),
    mode: &mut Mode,
    provider: &mut Provider,
) {
    let (stored_mode, stored_model, stored_effort) = stored;
    if let Some(stored) = stored_mode {
        *mode = stored;
    }
    if let Some(model) = stored_model {
        use_model(provider, model);
    }
    if let Some(level) = stored_effort {
        use_effort(provider, level);
    }
}

/// Puts effort level `level` in effect on `provider`.
fn use_effort(provider: &mut Provider, level: &str) {
    if provider.effort().as_deref() != Some(level) && !provider.set_effort(level) {
        tracing::warn!(level, "the model does not take this effort level");
    }
}

/// Switches `provider` to `model`, when it has a model and another one.
fn use_model(provider: &mut Provider, model: &str) {
    if provider.model().is_some_and(|m| m != model) && !provider.set_model(model) {
        tracing::warn!(model, "the provider refused the model");
    }
}
