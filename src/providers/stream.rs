//! What a provider's stream is made of: the deltas it yields as they
//! arrive ([`StreamDelta`]) and why a request failed ([`ProviderError`]).

/// A piece of a turn, as it streams in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    Text(String),
    Thinking(String),
}

/// Why a model request failed. No variant ever holds an API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error("the scripted model failed: {0}")]
    Script(String),
    /// No key, or the provider refused it (HTTP 401/403). Maps to ACP's
    /// "authentication required" (-32000).
    #[error(
        "{provider}: the API key {problem}. Set {variable} to a valid key in the environment candor is started with."
    )]
    Auth {
        provider: &'static str,
        /// The environment variable to set.
        variable: &'static str,
        status: Option<u16>,
        /// What is wrong with the key ("is not set", "was refused (HTTP 401)").
        problem: String,
    },
    /// Still rate-limited (HTTP 429) after every attempt.
    #[error("{provider} is still rate-limiting requests after {attempts} attempts: {detail}")]
    RateLimited {
        provider: &'static str,
        attempts: u32,
        detail: String,
    },
    /// Still overloaded (HTTP 503/529, `overloaded_error`) after every attempt.
    #[error("{provider} is still overloaded after {attempts} attempts: {detail}")]
    Overloaded {
        provider: &'static str,
        attempts: u32,
        detail: String,
    },
    /// Still failing with a server error after every attempt.
    #[error("{provider} still fails with HTTP {status} after {attempts} attempts: {detail}")]
    Server {
        provider: &'static str,
        status: u16,
        attempts: u32,
        detail: String,
    },
    /// The connection failed or the stream ended early on every attempt.
    #[error("the connection to {provider} failed {attempts} times: {detail}")]
    StreamCut {
        provider: &'static str,
        attempts: u32,
        detail: String,
    },
    /// The provider refused the request (another 4xx); not retried.
    #[error("{provider} rejected the request{}: {detail}", http_status(*status))]
    Rejected {
        provider: &'static str,
        /// 0 for an error reported inside the stream.
        status: u16,
        detail: String,
    },
    /// The provider answered that the request does not fit the model's
    /// context window (Anthropic's `prompt is too long`, OpenAI's
    /// `context_length_exceeded`, a compatible server's "maximum context
    /// length"); not retried as it is. The turn compacts the conversation
    /// and tries once more; `after_compaction` says that did not help.
    #[error("{}", context_too_long(provider, detail, *after_compaction))]
    ContextTooLong {
        provider: &'static str,
        /// 0 for an error reported inside the stream.
        status: u16,
        detail: String,
        after_compaction: bool,
    },
    /// An event the provider sent could not be understood; nothing of the
    /// turn was kept.
    #[error("{provider} sent a malformed `{event}` event: {detail}")]
    Malformed {
        provider: &'static str,
        event: String,
        detail: String,
    },
}

fn http_status(status: u16) -> String {
    match status {
        0 => String::new(),
        s => format!(" (HTTP {s})"),
    }
}

fn context_too_long(provider: &str, detail: &str, after_compaction: bool) -> String {
    if after_compaction {
        format!(
            "{provider} says the request is too long for the model's context window ({detail}), also after candor compacted the conversation and retried. What this prompt itself brought in (its own tool output) may be too big: try `/compact` with a focus, a smaller request, or a new session."
        )
    } else {
        format!("{provider} says the request is too long for the model's context window: {detail}")
    }
}

impl ProviderError {
    /// Whether the request failed for being too long for the model (a
    /// compaction may help).
    pub fn is_context_too_long(&self) -> bool {
        matches!(self, ProviderError::ContextTooLong { .. })
    }

    /// The same error, saying it came again after a compaction.
    pub fn after_compaction(self) -> ProviderError {
        match self {
            ProviderError::ContextTooLong {
                provider,
                status,
                detail,
                ..
            } => ProviderError::ContextTooLong {
                provider,
                status,
                detail,
                after_compaction: true,
            },
            other => other,
        }
    }

    /// The environment variable to set, when the request failed for want of
    /// a valid key (ACP `-32000` auth required).
    pub fn auth_variable(&self) -> Option<&'static str> {
        match self {
            ProviderError::Auth { variable, .. } => Some(variable),
            _ => None,
        }
    }
}
