//! What every HTTP provider is built from ([`ProviderSettings`]): the
//! endpoint, key, model and limits the configuration gives; and whether an
//! endpoint is a local server ([`is_local_endpoint`]).

use super::http::RetryPolicy;
use super::prices;
use crate::config::ApiKey;
use crate::conversation::RewriteStrategy;

/// What every HTTP provider is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSettings {
    /// Anthropic: without `/v1`; OpenAI: with it (`https://api.openai.com/v1`).
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    pub model: String,
    /// The most tokens one response may have (`max_tokens`,
    /// `max_completion_tokens`, `max_output_tokens`).
    pub max_tokens: Option<u32>,
    /// Anthropic: extended thinking with this budget.
    pub thinking_budget: Option<u32>,
    /// OpenAI: the reasoning effort.
    pub reasoning_effort: Option<String>,
    /// What the configuration set for `thinking_budget` and
    /// `reasoning_effort`: the effort option's default level
    /// ([`effort::Source`](super::effort::Source)); the two above are the
    /// level in effect.
    pub configured_effort: (Option<u32>, Option<String>),
    /// Chat Completions only may use `InPlace`.
    pub rewrite_strategy: RewriteStrategy,
    pub retry: RetryPolicy,
    /// Models offered for the session's model option.
    pub models: Vec<String>,
    pub context_window: Option<u64>,
    pub max_turn_requests: Option<u32>,
    /// The user's price tables (`[prices]`), over candor's.
    pub prices: prices::Overrides,
}

impl ProviderSettings {
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<ApiKey>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            base_url: base_url.into(),
            api_key,
            model: model.into(),
            max_tokens: None,
            thinking_budget: None,
            reasoning_effort: None,
            configured_effort: (None, None),
            rewrite_strategy: RewriteStrategy::Note,
            retry: RetryPolicy::default(),
            models: Vec::new(),
            context_window: None,
            max_turn_requests: None,
            prices: prices::Overrides::new(),
        }
    }
}

/// Whether `url` is a server on this machine or on a private network
/// (loopback, `localhost`, RFC 1918, link-local, IPv6 unique-local): one
/// that is usually run without a key.
pub fn is_local_endpoint(url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => {
            ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
        }
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_unique_local()
                || ip.is_unicast_link_local()
        }
        None => false,
    }
}
