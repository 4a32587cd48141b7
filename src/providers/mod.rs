//! Model providers: where a [`ModelRequest`] becomes a streamed assistant
//! turn.
//!
//! A provider streams [`StreamDelta`]s (text and thinking as they arrive)
//! into a channel and returns the complete [`AssistantTurn`] as the model
//! emitted it. The session loop logs each delta (the client sees it at once)
//! and then the whole turn. Dropping the returned future cancels the request.
//!
//! The set of providers is closed ([`Provider`]); each lives in its own file.
//! With nothing configured, [`Provider::Unconfigured`] answers every prompt
//! with a short message saying how to configure a model: it never pretends
//! to be one.

pub mod scripted;

use tokio::sync::mpsc;

use crate::config::{Config, ProviderSetting};
use crate::conversation::{
    AssistantBlock, AssistantTurn, ModelRequest, ModelStop, RewriteStrategy,
};

/// A piece of a turn, as it streams in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    Text(String),
    Thinking(String),
}

/// Why a model request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("the scripted model failed: {0}")]
    Script(String),
}

/// The configured model of a session.
#[derive(Debug)]
pub enum Provider {
    Scripted(scripted::ScriptedProvider),
    /// No usable model; `reason` says why and how to fix it.
    Unconfigured {
        reason: String,
    },
}

impl Provider {
    /// The provider a new session gets from the configuration. Never fails:
    /// a broken configuration becomes [`Provider::Unconfigured`] with the
    /// reason, which the user sees at their first prompt.
    pub fn from_config(config: &Config) -> Provider {
        match &config.provider {
            ProviderSetting::Scripted { script } => match script {
                Some(path) => match scripted::ScriptedProvider::load(path) {
                    Ok(p) => Provider::Scripted(p.capture_to(config.capture.clone())),
                    Err(e) => Provider::Unconfigured {
                        reason: format!("CANDOR_PROVIDER is `scripted`, but {e}."),
                    },
                },
                None => Provider::Unconfigured {
                    reason: "CANDOR_PROVIDER is `scripted`, but CANDOR_SCRIPT does not name a script file.".into(),
                },
            },
            ProviderSetting::NotYetAvailable(name) => Provider::Unconfigured {
                reason: format!(
                    "The `{name}` provider is not available in this version of candor yet; only the scripted provider is."
                ),
            },
            ProviderSetting::Unknown(value) => Provider::Unconfigured {
                reason: format!(
                    "CANDOR_PROVIDER is `{value}`, which candor does not know (expected anthropic, openai, openai-responses or scripted)."
                ),
            },
            ProviderSetting::None => Provider::Unconfigured {
                reason: "No model provider is configured.".into(),
            },
        }
    }

    /// How this provider is told about a hook's rewrite (see
    /// [`RewriteStrategy`]).
    pub fn rewrite_strategy(&self) -> RewriteStrategy {
        match self {
            Provider::Scripted(p) => p.rewrite_strategy(),
            Provider::Unconfigured { .. } => RewriteStrategy::Note,
        }
    }

    /// A short name for logs and the `session/started` record.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Scripted(_) => "scripted",
            Provider::Unconfigured { .. } => "none",
        }
    }

    /// Runs one model request, streaming deltas into `deltas`.
    pub async fn stream(
        &mut self,
        request: &ModelRequest,
        deltas: mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, ProviderError> {
        match self {
            Provider::Scripted(p) => p.stream(request, deltas).await,
            Provider::Unconfigured { reason } => {
                let text = guidance(reason);
                let _ = deltas.send(StreamDelta::Text(text.clone()));
                Ok(AssistantTurn {
                    content: vec![AssistantBlock::Text { text }],
                    stop: ModelStop::EndTurn,
                })
            }
        }
    }
}

/// The message a prompt gets when there is no model to answer it.
pub fn guidance(reason: &str) -> String {
    format!(
        "candor has no model to answer with. {reason}\n\n\
         To try candor without a model, start it with `CANDOR_PROVIDER=scripted` and \
         `CANDOR_SCRIPT=/path/to/script.json` (the format is in `protocol/scripted-model.md`), \
         or run `candor demo` in a terminal. Set these variables in the environment your \
         editor launches candor with; the README shows how for each editor."
    )
}
