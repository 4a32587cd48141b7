//! Model providers: where a [`ModelRequest`] becomes a streamed assistant
//! turn.
//!
//! A provider streams [`StreamDelta`]s (text and thinking as they arrive)
//! into a channel and returns the complete [`AssistantTurn`] as the model
//! emitted it. The session loop logs each delta (the client sees it at once)
//! and then the whole turn. Dropping the returned future cancels the request.
//!
//! The set of providers is closed ([`Provider`]); each lives in its own file:
//! [`anthropic`] (Messages), [`openai_chat`] (Chat Completions and compatible
//! servers), [`openai_responses`] (Responses, stateless), [`scripted`]. The
//! HTTP ones share [`http`]: retries with backoff (each announced as a
//! notice), error classification, the event stream. Each returns its turn
//! with the provider's own JSON as the last block ([`AssistantBlock::Raw`])
//! and replays that verbatim in later requests; `protocol/providers.md`
//! describes what is stored and sent per provider.
//!
//! With nothing configured, [`Provider::Unconfigured`] answers every prompt
//! with a short message saying how to configure a model: it never pretends
//! to be one.
//!
//! This file assembles them ([`Provider`] dispatches to each); what they
//! share is in leaf files they import: `stream` (the deltas and
//! [`ProviderError`]), `provider_settings` ([`ProviderSettings`]), [`http`].

pub mod anthropic;
pub mod effort;
pub mod http;
pub mod openai_chat;
pub mod openai_responses;
pub mod prices;
mod provider_settings;
pub mod scripted;
mod stream;

use std::path::Path;

use tokio::sync::mpsc;

use crate::config::{ApiKey, Config, ModelConfig, ProviderSetting};
use crate::conversation::{
    AssistantBlock, AssistantTurn, ModelRequest, ModelStop, RewriteStrategy,
};

pub use http::RetryPolicy;
pub use provider_settings::{ProviderSettings, is_local_endpoint};
pub use stream::{ProviderError, StreamDelta};

/// The configured model of a session.
#[derive(Debug)]
pub enum Provider {
    Scripted(scripted::ScriptedProvider),
    Anthropic(anthropic::AnthropicProvider),
    OpenaiChat(openai_chat::ChatProvider),
    OpenaiResponses(openai_responses::ResponsesProvider),
    /// No usable model; `reason` says why and how to fix it.
    Unconfigured {
        reason: String,
    },
}

/// The model a provider uses when none is configured.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model the OpenAI providers use when none is configured.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-5";

impl Provider {
    /// The provider a new session gets from the configuration, ignoring
    /// any project config file. Never fails: a broken configuration becomes
    /// [`Provider::Unconfigured`] with the reason, which the user sees at
    /// their first prompt.
    pub fn from_config(config: &Config) -> Provider {
        Self::build(config, config.model_config(None))
    }

    /// The provider of a new session in `cwd`: like [`Provider::from_config`],
    /// with the project's `.candor/config.toml` read now.
    pub fn for_session(config: &Config, cwd: &Path) -> Provider {
        Self::build(config, config.model_config(Some(cwd)))
    }

    fn build(config: &Config, model: Result<ModelConfig, String>) -> Provider {
        let m = match model {
            Ok(m) => m,
            Err(reason) => {
                return Provider::Unconfigured {
                    reason: format!("{}.", capitalise(&reason)),
                };
            }
        };
        let unconfigured = |reason: String| Provider::Unconfigured { reason };
        let in_place_refused = |name: &str| {
            unconfigured(format!(
                "`rewrite_strategy = \"in_place\"` is only allowed with the `openai` (Chat Completions) provider, not `{name}`: its replayed turns must stay as the model wrote them."
            ))
        };
        let settings = |base_url: &str, key: &Option<ApiKey>, default_model: &str| {
            let mut s = ProviderSettings::new(
                base_url,
                key.clone(),
                m.model.clone().unwrap_or_else(|| default_model.to_owned()),
            );
            s.max_tokens = m.max_tokens;
            s.thinking_budget = m.thinking_budget;
            s.reasoning_effort = m.reasoning_effort.clone();
            s.configured_effort = (m.thinking_budget, m.reasoning_effort.clone());
            s.rewrite_strategy = m.rewrite_strategy.unwrap_or_default();
            s.models = m.models.clone();
            s.context_window = m.context_window;
            s.max_turn_requests = m.max_turn_requests;
            s.prices = config.prices();
            s
        };
        let built = match &m.provider {
            ProviderSetting::Scripted { script } => {
                return match script {
                    Some(path) => match scripted::ScriptedProvider::load(path) {
                        Ok(p) => Provider::Scripted(
                            p.capture_to(config.capture.clone())
                                .limits(m.context_window, m.max_tokens),
                        ),
                        Err(e) => unconfigured(format!("CANDOR_PROVIDER is `scripted`, but {e}.")),
                    },
                    None => unconfigured(
                        "CANDOR_PROVIDER is `scripted`, but CANDOR_SCRIPT does not name a script file."
                            .into(),
                    ),
                };
            }
            ProviderSetting::Anthropic => {
                if m.rewrite_strategy == Some(RewriteStrategy::InPlace) {
                    return in_place_refused("anthropic");
                }
                anthropic::AnthropicProvider::new(settings(
                    &m.anthropic_base_url,
                    &m.anthropic_api_key,
                    DEFAULT_ANTHROPIC_MODEL,
                ))
                .map(Provider::Anthropic)
            }
            ProviderSetting::OpenaiChat => openai_chat::ChatProvider::new(settings(
                &m.openai_base_url,
                &m.openai_api_key,
                DEFAULT_OPENAI_MODEL,
            ))
            .map(Provider::OpenaiChat),
            ProviderSetting::OpenaiResponses => {
                if m.rewrite_strategy == Some(RewriteStrategy::InPlace) {
                    return in_place_refused("openai-responses");
                }
                openai_responses::ResponsesProvider::new(settings(
                    &m.openai_base_url,
                    &m.openai_api_key,
                    DEFAULT_OPENAI_MODEL,
                ))
                .map(Provider::OpenaiResponses)
            }
            ProviderSetting::Unknown(value) => {
                return unconfigured(format!(
                    "The provider is set to `{value}`, which candor does not know (expected anthropic, openai, openai-responses or scripted)."
                ));
            }
            ProviderSetting::None => {
                return unconfigured("No model provider is configured.".into());
            }
        };
        built.unwrap_or_else(|e| unconfigured(format!("{}.", capitalise(&e))))
    }

    /// Where this provider reports retries while a request runs (each a
    /// short sentence for the user). Without a sink they go to the log only.
    pub fn set_notices(&mut self, sink: Option<mpsc::UnboundedSender<String>>) {
        match self {
            Provider::Anthropic(p) => p.http.set_notices(sink),
            Provider::OpenaiChat(p) => p.http.set_notices(sink),
            Provider::OpenaiResponses(p) => p.http.set_notices(sink),
            Provider::Scripted(_) | Provider::Unconfigured { .. } => {}
        }
    }

    /// How this provider is told about a hook's rewrite (see
    /// [`RewriteStrategy`]).
    /// A stored session's model goes on where it stopped: the scripted
    /// model skips the responses its `assistant/message`s already played
    /// (real models need nothing: the history is sent each time).
    pub fn resume(&mut self, records: &[crate::event_log::Record]) {
        if let Provider::Scripted(p) = self {
            let mut requests = 0;
            let mut calls = 0;
            for record in records {
                // A compaction's summary was a response too.
                if let crate::event_log::Event::HistoryCompacted { .. } = &record.event {
                    requests += 1;
                }
                if let crate::event_log::Event::AssistantMessage { content, .. } = &record.event {
                    requests += 1;
                    calls += content
                        .iter()
                        .filter(|b| {
                            matches!(b, crate::conversation::AssistantBlock::ToolUse { .. })
                        })
                        .count() as u64;
                }
            }
            p.resume_at(requests, calls);
        }
    }

    pub fn rewrite_strategy(&self) -> RewriteStrategy {
        match self {
            Provider::Scripted(p) => p.rewrite_strategy(),
            Provider::OpenaiChat(p) => p.settings.rewrite_strategy,
            Provider::Anthropic(_) | Provider::OpenaiResponses(_) => RewriteStrategy::Note,
            Provider::Unconfigured { .. } => RewriteStrategy::Note,
        }
    }

    /// Makes this provider a subagent's (the scripted model plays the
    /// script of its type and prompt; a real model needs nothing).
    pub fn for_subagent(&mut self, agent_type: &str, prompt: &str) {
        if let Provider::Scripted(p) = self {
            p.for_subagent(agent_type, prompt);
        }
    }

    /// The provider's own web search, where it has one (named for people):
    /// Anthropic's server tool, the Responses API's `web_search`.
    pub fn web_search(&self) -> Option<&'static str> {
        match self {
            Provider::Anthropic(_) => Some("Anthropic's web search tool (web_search_20250305)"),
            Provider::OpenaiResponses(_) => Some("the OpenAI Responses API's web_search tool"),
            Provider::OpenaiChat(_) | Provider::Scripted(_) | Provider::Unconfigured { .. } => None,
        }
    }

    /// A short name for logs and the `session/started` record.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Scripted(_) => "scripted",
            Provider::Anthropic(_) => "anthropic",
            Provider::OpenaiChat(_) => "openai",
            Provider::OpenaiResponses(_) => "openai-responses",
            Provider::Unconfigured { .. } => "none",
        }
    }

    fn settings(&self) -> Option<&ProviderSettings> {
        match self {
            Provider::Anthropic(p) => Some(&p.settings),
            Provider::OpenaiChat(p) => Some(&p.settings),
            Provider::OpenaiResponses(p) => Some(&p.settings),
            Provider::Scripted(_) | Provider::Unconfigured { .. } => None,
        }
    }

    /// The model requests are sent to (`None` for the scripted model and
    /// without a provider).
    pub fn model(&self) -> Option<&str> {
        self.settings().map(|s| s.model.as_str())
    }

    /// The models a user may pick for this session: the configured list,
    /// with the current model first if the list lacks it.
    pub fn model_choices(&self) -> Vec<String> {
        let Some(s) = self.settings() else {
            return Vec::new();
        };
        let mut choices = s.models.clone();
        if !choices.contains(&s.model) {
            choices.insert(0, s.model.clone());
        }
        choices
    }

    /// Switches the model for the following requests (the session's model
    /// option). Refused (`false`) when there is no model to switch.
    pub fn set_model(&mut self, model: &str) -> bool {
        let settings = match self {
            Provider::Anthropic(p) => &mut p.settings,
            Provider::OpenaiChat(p) => &mut p.settings,
            Provider::OpenaiResponses(p) => &mut p.settings,
            Provider::Scripted(_) | Provider::Unconfigured { .. } => return false,
        };
        if model.trim().is_empty() {
            return false;
        }
        settings.model = model.to_owned();
        // A level the new model does not take gives way to its default.
        if let Some(source) = self.effort_source() {
            let current = self.effort();
            let levels = source.levels(model).unwrap_or_default();
            if !levels.iter().any(|l| Some(&l.id) == current.as_ref()) {
                let setting = match source.default_level(model) {
                    Some(level) => level.setting,
                    None => match source.family {
                        effort::Family::Anthropic => effort::Setting::Budget(None),
                        effort::Family::Openai => effort::Setting::Effort(None),
                    },
                };
                self.apply_effort(setting);
            }
        }
        true
    }

    /// What the session's effort levels come from (`None`: a provider
    /// without any).
    pub fn effort_source(&self) -> Option<effort::Source> {
        let (family, s) = match self {
            Provider::Anthropic(p) => (effort::Family::Anthropic, &p.settings),
            Provider::OpenaiChat(p) => (effort::Family::Openai, &p.settings),
            Provider::OpenaiResponses(p) => (effort::Family::Openai, &p.settings),
            Provider::Scripted(_) | Provider::Unconfigured { .. } => return None,
        };
        let (budget, effort) = s.configured_effort.clone();
        Some(effort::Source {
            family,
            budget,
            effort,
        })
    }

    /// The effort levels the current model takes (empty: no effort option).
    pub fn effort_levels(&self) -> Vec<effort::Level> {
        match (self.effort_source(), self.model()) {
            (Some(source), Some(model)) => source.levels(model).unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The effort level in effect, when the model has levels.
    pub fn effort(&self) -> Option<String> {
        let s = self.settings()?;
        let current = match self.effort_source()?.family {
            effort::Family::Anthropic => effort::Setting::Budget(s.thinking_budget),
            effort::Family::Openai => effort::Setting::Effort(s.reasoning_effort.clone()),
        };
        self.effort_levels()
            .into_iter()
            .find(|l| l.setting == current)
            .map(|l| l.id)
    }

    /// Puts the effort level `id` in effect for the following requests;
    /// refused (`false`) for a level the model does not take.
    pub fn set_effort(&mut self, id: &str) -> bool {
        match self.effort_levels().into_iter().find(|l| l.id == id) {
            Some(level) => {
                self.apply_effort(level.setting);
                true
            }
            None => false,
        }
    }

    fn apply_effort(&mut self, setting: effort::Setting) {
        let settings = match self {
            Provider::Anthropic(p) => &mut p.settings,
            Provider::OpenaiChat(p) => &mut p.settings,
            Provider::OpenaiResponses(p) => &mut p.settings,
            Provider::Scripted(_) | Provider::Unconfigured { .. } => return,
        };
        match setting {
            effort::Setting::Budget(budget) => settings.thinking_budget = budget,
            effort::Setting::Effort(effort) => settings.reasoning_effort = effort,
        }
    }

    /// What a request with `usage` cost at the current model's prices;
    /// `None` when they are not known (never a guess).
    pub fn cost(&self, usage: &crate::conversation::Usage) -> Option<crate::event_log::Cost> {
        let s = self.settings()?;
        let amount = prices::price(&s.model, &s.prices)?.cost(usage)?;
        Some(crate::event_log::Cost {
            amount,
            currency: prices::CURRENCY.to_owned(),
        })
    }

    /// For an auxiliary request (a session's title): the lowest effort
    /// level (no thinking) and at most `max` output tokens.
    pub fn for_aside(&mut self, max: u32) {
        if let Some(lowest) = self.effort_levels().into_iter().next() {
            self.apply_effort(lowest.setting);
        }
        let settings = match self {
            Provider::Anthropic(p) => &mut p.settings,
            Provider::OpenaiChat(p) => &mut p.settings,
            Provider::OpenaiResponses(p) => &mut p.settings,
            Provider::Scripted(_) | Provider::Unconfigured { .. } => return,
        };
        settings.max_tokens = Some(settings.max_tokens.map_or(max, |m| m.min(max)));
    }

    /// The configured limit of model requests per prompt, if any.
    pub fn max_turn_requests(&self) -> Option<usize> {
        self.settings()
            .and_then(|s| s.max_turn_requests)
            .map(|n| n as usize)
    }

    /// The model's context window in tokens, for usage reports: the
    /// configured `context_window`, else Anthropic's 200k.
    pub fn context_window(&self) -> Option<u64> {
        match self {
            Provider::Anthropic(p) => Some(p.settings.context_window.unwrap_or(200_000)),
            Provider::Scripted(p) => p.context_window(),
            _ => self.settings().and_then(|s| s.context_window),
        }
    }

    /// What compaction may fill: the context window less a reserve for the
    /// answer (`compaction::Budget`). `None` without a known window (no
    /// automatic compaction then).
    pub fn budget(&self) -> Option<crate::compaction::Budget> {
        let max_tokens = match self {
            Provider::Scripted(p) => p.max_tokens(),
            _ => self.settings().and_then(|s| s.max_tokens),
        };
        self.context_window()
            .map(|w| crate::compaction::Budget::new(w, max_tokens.map(u64::from)))
    }

    /// Whether a model answers this session (not the guidance of
    /// [`Provider::Unconfigured`]), so it can write a summary.
    pub fn is_model(&self) -> bool {
        !matches!(self, Provider::Unconfigured { .. })
    }

    /// Runs one model request, streaming deltas into `deltas`.
    pub async fn stream(
        &mut self,
        request: &ModelRequest,
        deltas: mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, ProviderError> {
        match self {
            Provider::Scripted(p) => p.stream(request, deltas).await,
            Provider::Anthropic(p) => p.stream(request, &deltas).await,
            Provider::OpenaiChat(p) => p.stream(request, &deltas).await,
            Provider::OpenaiResponses(p) => p.stream(request, &deltas).await,
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

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The message a prompt gets when there is no model to answer it.
pub fn guidance(reason: &str) -> String {
    format!(
        "candor has no model to answer with. {reason}\n\n\
         To use a model, set `ANTHROPIC_API_KEY` (Anthropic), `OPENAI_API_KEY` (OpenAI), or \
         `OPENAI_BASE_URL` alone for a compatible server such as Ollama or vLLM (a local one \
         needs no key: `OPENAI_BASE_URL=http://localhost:11434/v1`), and optionally \
         `CANDOR_PROVIDER` (`anthropic`, `openai`, `openai-responses`) and `CANDOR_MODEL`, in the \
         environment your editor launches candor with, or put the same settings in \
         `~/.config/candor/config.toml` (the README shows how for each editor). To try candor \
         without a model, use `CANDOR_PROVIDER=scripted` with `CANDOR_SCRIPT=/path/to/script.json` \
         (format: `protocol/scripted-model.md`), or run `candor demo` in a terminal."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn provider(vars: &[(&str, &str)]) -> Provider {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Provider::from_config(&Config::from_vars(|k| map.get(k).cloned()))
    }

    #[test]
    fn a_key_picks_the_provider_and_debug_hides_it() {
        let p = provider(&[("ANTHROPIC_API_KEY", "sk-ant-hidden")]);
        assert_eq!(p.name(), "anthropic");
        assert_eq!(p.model(), Some(DEFAULT_ANTHROPIC_MODEL));
        assert_eq!(p.rewrite_strategy(), RewriteStrategy::Note);
        assert!(!format!("{p:?}").contains("sk-ant-hidden"));
        let p = provider(&[("OPENAI_API_KEY", "sk-hidden"), ("CANDOR_MODEL", "gpt-x")]);
        assert_eq!((p.name(), p.model()), ("openai", Some("gpt-x")));
        assert!(!format!("{p:?}").contains("sk-hidden"));
    }

    #[test]
    fn unusable_settings_become_guidance() {
        let Provider::Unconfigured { reason } = provider(&[("CANDOR_PROVIDER", "gpt")]) else {
            panic!()
        };
        assert!(reason.contains("`gpt`"), "{reason}");
        let Provider::Unconfigured { reason } = provider(&[]) else {
            panic!()
        };
        assert!(guidance(&reason).contains("ANTHROPIC_API_KEY"));
    }

    #[test]
    fn in_place_only_for_chat_completions() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("candor/config.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "rewrite_strategy = \"in_place\"\n").unwrap();
        let xdg = dir.path().to_str().unwrap();
        let p = provider(&[("XDG_CONFIG_HOME", xdg), ("OPENAI_API_KEY", "k")]);
        assert_eq!(p.rewrite_strategy(), RewriteStrategy::InPlace);
        let p = provider(&[("XDG_CONFIG_HOME", xdg), ("ANTHROPIC_API_KEY", "k")]);
        assert!(
            matches!(&p, Provider::Unconfigured { reason } if reason.contains("in_place")),
            "{p:?}"
        );
    }

    #[test]
    fn a_broken_project_file_is_named_in_the_guidance() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join(".candor")).unwrap();
        std::fs::write(project.join(".candor/config.toml"), "model = [").unwrap();
        let config = Config::new(PathBuf::from("/tmp/h"), ProviderSetting::None);
        let Provider::Unconfigured { reason } = Provider::for_session(&config, &project) else {
            panic!()
        };
        assert!(
            reason.contains(".candor/config.toml is not valid"),
            "{reason}"
        );
    }

    #[test]
    fn the_model_can_be_switched() {
        let mut p = provider(&[("ANTHROPIC_API_KEY", "k")]);
        assert!(p.set_model("claude-opus-4-1"));
        assert_eq!(p.model(), Some("claude-opus-4-1"));
        assert_eq!(p.model_choices(), vec!["claude-opus-4-1".to_owned()]);
        assert!(!provider(&[]).set_model("x"));
    }
}
