//! What the HTTP providers share: the client, how a failed request is
//! classified, retries with backoff, notices, and the event stream.
//!
//! One request is an *attempt*. An attempt that fails transiently (429,
//! 5xx, overloaded, a connection that drops or a stream that ends before
//! its terminal event) is retried after an exponential backoff with jitter,
//! or after the server's `retry-after`, up to [`RetryPolicy::attempts`]
//! attempts in all; each retry is announced as a notice. Anything else
//! ends the request at once with a [`ProviderError`]. A provider only ever
//! returns a whole turn: a failed attempt leaves nothing behind but the
//! deltas it already streamed.

use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;

use super::stream::{ProviderError, StreamDelta};
use crate::config::ApiKey;
use crate::conversation::AssistantTurn;

/// Builds one streamed answer into a turn, event by event (one per API).
pub(super) trait Assemble: Default {
    /// Applies one server-sent event (its name and data); `true` when the
    /// answer is complete.
    fn apply(
        &mut self,
        http: &Http,
        event: &str,
        data: &str,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<bool, Failure>;

    /// The whole turn, once the stream has ended.
    fn finish(self, http: &Http) -> Result<AssistantTurn, Failure>;
}

/// A response body as server-sent events.
pub(super) type EventStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, Failure>> + Send>>;

/// How failed attempts are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The backoff before the second attempt; it doubles after each.
    pub base_delay: Duration,
    /// The longest backoff.
    pub max_delay: Duration,
    /// The longest `retry-after` candor waits; a server asking for more
    /// ends the request.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The backoff after failed attempt `attempt` (1-based): exponential,
    /// with "equal jitter" (half fixed, half random).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_delay);
        exp / 2 + exp.mul_f64(fastrand::f64() / 2.0)
    }
}

/// A transient failure: worth another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transient {
    RateLimited,
    Overloaded,
    Server(u16),
    StreamCut,
}

/// Why an attempt produced no turn.
#[derive(Debug)]
pub(super) enum Failure {
    Retry {
        kind: Transient,
        detail: String,
        retry_after: Option<Duration>,
    },
    Fatal(ProviderError),
}

impl Failure {
    pub(super) fn cut(detail: impl Into<String>) -> Failure {
        Failure::Retry {
            kind: Transient::StreamCut,
            detail: detail.into(),
            retry_after: None,
        }
    }
}

impl From<ProviderError> for Failure {
    fn from(e: ProviderError) -> Self {
        Failure::Fatal(e)
    }
}

/// The HTTP side of one provider: client, names for messages, key, retry
/// policy and where notices go.
pub(super) struct Http {
    client: reqwest::Client,
    /// The provider as users know it ("Anthropic"), for messages.
    pub(super) label: &'static str,
    /// The environment variable that holds the key.
    pub(super) key_var: &'static str,
    pub(super) key: Option<ApiKey>,
    pub(super) retry: RetryPolicy,
    notices: Option<mpsc::UnboundedSender<String>>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("label", &self.label)
            .field("key", &self.key.as_ref().map(|_| "[redacted]"))
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Http {
    pub(super) fn new(
        label: &'static str,
        key_var: &'static str,
        key: Option<ApiKey>,
        retry: RetryPolicy,
    ) -> Result<Self, String> {
        // reqwest is built without a bundled crypto provider; install ring
        // once per process (a second install is refused, harmlessly).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
        Ok(Self {
            client,
            label,
            key_var,
            key,
            retry,
            notices: None,
        })
    }

    pub(super) fn set_notices(&mut self, sink: Option<mpsc::UnboundedSender<String>>) {
        self.notices = sink;
    }

    /// Tells the user something about the request (a retry): to the notice
    /// sink when there is one, and to the log.
    pub(super) fn notice(&self, text: String) {
        tracing::warn!(provider = self.label, "{text}");
        if let Some(sink) = &self.notices {
            let _ = sink.send(text);
        }
    }

    /// The key as a header value, marked sensitive; `None` when the request
    /// goes without one.
    pub(super) fn key_header(&self, prefix: &str) -> Result<Option<HeaderValue>, ProviderError> {
        let Some(key) = &self.key else {
            return Ok(None);
        };
        let mut value =
            HeaderValue::from_str(&format!("{prefix}{}", key.expose())).map_err(|_| {
                ProviderError::Auth {
                    provider: self.label,
                    variable: self.key_var,
                    status: None,
                    problem: "is not a valid header value".into(),
                }
            })?;
        value.set_sensitive(true);
        Ok(Some(value))
    }

    /// The error for a request that has no key to send.
    pub(super) fn missing_key(&self) -> ProviderError {
        ProviderError::Auth {
            provider: self.label,
            variable: self.key_var,
            status: None,
            problem: "is not set".into(),
        }
    }

    /// Removes the key from text that came back from the server.
    pub(super) fn scrub(&self, text: &str) -> String {
        let mut text = match &self.key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "[redacted]"),
            _ => text.to_owned(),
        };
        if text.len() > 600 {
            let mut end = 600;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push('…');
        }
        text
    }

    /// Sends one streaming request and checks its status.
    pub(super) async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<reqwest::Response, Failure> {
        let body = serde_json::to_vec(body).map_err(|e| {
            Failure::Fatal(ProviderError::Rejected {
                provider: self.label,
                status: 0,
                detail: format!("the request cannot be encoded: {e}"),
            })
        })?;
        let response = self
            .client
            .post(url)
            .headers(headers)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body)
            .send()
            .await
            .map_err(|e| Failure::cut(self.scrub(&format!("the request failed: {}", chain(&e)))))?;
        let status = response.status();
        if status.is_success() {
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            if !content_type.starts_with("text/event-stream") {
                return Err(Failure::Fatal(ProviderError::Malformed {
                    provider: self.label,
                    event: "response".into(),
                    detail: format!(
                        "expected an event stream (text/event-stream), got `{content_type}`"
                    ),
                }));
            }
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let text = error_text(response).await;
        let (kind, message) = error_body(&text);
        let detail = self.scrub(&match (&kind, &message) {
            (Some(k), Some(m)) => format!("{k}: {m}"),
            (None, Some(m)) => m.clone(),
            (Some(k), None) => k.clone(),
            (None, None) if text.trim().is_empty() => format!("HTTP {}", status.as_u16()),
            (None, None) => text.trim().to_owned(),
        });
        let code = status.as_u16();
        if code == 413 || (code == 400 && too_long(&text)) {
            return Err(Failure::Fatal(ProviderError::ContextTooLong {
                provider: self.label,
                status: code,
                detail,
                after_compaction: false,
            }));
        }
        Err(match code {
            401 | 403 => Failure::Fatal(ProviderError::Auth {
                provider: self.label,
                variable: self.key_var,
                status: Some(code),
                // The body is left out: some servers echo part of the key.
                problem: match kind {
                    Some(k) => format!("was refused (HTTP {code}, {})", self.scrub(&k)),
                    None => format!("was refused (HTTP {code})"),
                },
            }),
            429 => Failure::Retry {
                kind: Transient::RateLimited,
                detail,
                retry_after,
            },
            503 | 529 => Failure::Retry {
                kind: Transient::Overloaded,
                detail,
                retry_after,
            },
            408 | 409 | 500..=599 => Failure::Retry {
                kind: Transient::Server(code),
                detail,
                retry_after,
            },
            _ => Failure::Fatal(ProviderError::Rejected {
                provider: self.label,
                status: code,
                detail,
            }),
        })
    }

    /// Decides what follows failed attempt `attempt`: the wait before the
    /// next one (announced as a notice), or the final error.
    pub(super) fn after_failure(
        &self,
        attempt: u32,
        failure: Failure,
    ) -> Result<Duration, ProviderError> {
        let (kind, detail, retry_after) = match failure {
            Failure::Fatal(e) => return Err(e),
            Failure::Retry {
                kind,
                detail,
                retry_after,
            } => (kind, detail, retry_after),
        };
        let too_long = retry_after.is_some_and(|d| d > self.retry.max_retry_after);
        if attempt >= self.retry.attempts || too_long {
            let detail = match retry_after {
                Some(d) if too_long => {
                    format!("{detail} (the server asked to wait {} s)", d.as_secs())
                }
                _ => detail,
            };
            let (provider, attempts) = (self.label, attempt);
            return Err(match kind {
                Transient::RateLimited => ProviderError::RateLimited {
                    provider,
                    attempts,
                    detail,
                },
                Transient::Overloaded => ProviderError::Overloaded {
                    provider,
                    attempts,
                    detail,
                },
                Transient::Server(status) => ProviderError::Server {
                    provider,
                    status,
                    attempts,
                    detail,
                },
                Transient::StreamCut => ProviderError::StreamCut {
                    provider,
                    attempts,
                    detail,
                },
            });
        }
        let wait = retry_after.unwrap_or_else(|| self.retry.backoff(attempt));
        let what = match kind {
            Transient::RateLimited => "is rate-limiting requests (HTTP 429)".to_owned(),
            Transient::Overloaded => "is overloaded".to_owned(),
            Transient::Server(status) => format!("failed (HTTP {status})"),
            Transient::StreamCut => "dropped the connection; the answer restarts".to_owned(),
        };
        self.notice(format!(
            "{} {what}; retrying in {:.1} s (attempt {} of {}).",
            self.label,
            wait.as_secs_f64(),
            attempt + 1,
            self.retry.attempts
        ));
        Ok(wait)
    }

    /// Posts `body` to `url` and assembles the streamed answer with `A`,
    /// retrying transient failures (each retry a notice; a cut stream
    /// starts the whole answer again), until the retry policy gives up.
    pub(super) async fn stream_turn<A: Assemble>(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, ProviderError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.attempt::<A>(url, headers.clone(), body, deltas).await {
                Ok(turn) => return Ok(turn),
                Err(failure) => {
                    let wait = self.after_failure(attempt, failure)?;
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn attempt<A: Assemble>(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        deltas: &mpsc::UnboundedSender<StreamDelta>,
    ) -> Result<AssistantTurn, Failure> {
        let response = self.post(url, headers, body).await?;
        let mut events = self.events(response);
        let mut turn = A::default();
        while let Some(event) = events.next().await {
            let event = event?;
            if turn.apply(self, &event.event, &event.data, deltas)? {
                break;
            }
        }
        turn.finish(self)
    }

    /// The `authorization: Bearer <key>` header of the OpenAI APIs. OpenAI
    /// itself needs the key; a compatible server elsewhere may need none.
    pub(super) fn bearer(&self, base_url: &str) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        match self.key_header("Bearer ")? {
            Some(key) => {
                headers.insert("authorization", key);
            }
            None if base_url.trim_end_matches('/') == crate::config::OPENAI_BASE_URL => {
                return Err(self.missing_key());
            }
            None => {}
        }
        Ok(headers)
    }

    /// The response body as a stream of server-sent events; a transport
    /// error is a cut stream, bytes that are not an event stream are
    /// malformed.
    pub(super) fn events(&self, response: reqwest::Response) -> EventStream {
        let label = self.label;
        let key = self.key.clone();
        let mut bounds = Bounds::default();
        let body = response.bytes_stream().map(move |chunk| {
            let chunk = chunk.map_err(Body::Http)?;
            bounds.take(&chunk).map_err(Body::TooLong)?;
            Ok::<_, Body>(chunk)
        });
        Box::pin(body.eventsource().map(move |item| {
            item.map_err(|e| match e {
                EventStreamError::Transport(Body::TooLong(what)) => {
                    Failure::Fatal(ProviderError::Malformed {
                        provider: label,
                        event: "stream".into(),
                        detail: format!("{what}, so candor stopped reading it"),
                    })
                }
                EventStreamError::Transport(Body::Http(e)) => {
                    let text = format!("the stream broke: {}", chain(&e));
                    Failure::cut(match &key {
                        Some(k) if !k.expose().is_empty() => text.replace(k.expose(), "[redacted]"),
                        _ => text,
                    })
                }
                EventStreamError::Utf8(e) => Failure::Fatal(ProviderError::Malformed {
                    provider: label,
                    event: "stream".into(),
                    detail: format!("not UTF-8: {e}"),
                }),
                EventStreamError::Parser(e) => Failure::Fatal(ProviderError::Malformed {
                    provider: label,
                    event: "stream".into(),
                    detail: format!("not an event stream: {e}"),
                }),
            })
        }))
    }

    /// A malformed-event error for this provider.
    pub(super) fn malformed(&self, event: &str, detail: impl Into<String>) -> Failure {
        Failure::Fatal(ProviderError::Malformed {
            provider: self.label,
            event: event.to_owned(),
            detail: detail.into(),
        })
    }

    /// Parses an event's JSON data.
    pub(super) fn parse(&self, event: &str, data: &str) -> Result<Value, Failure> {
        serde_json::from_str(data).map_err(|e| {
            self.malformed(event, format!("its data is not JSON ({e}): {}", clip(data)))
        })
    }

    /// An error reported inside the stream (`{"type", "message"}` or
    /// `{"code", "message"}`), classified like an HTTP status.
    pub(super) fn stream_error(&self, error: &Value) -> Failure {
        let kind = error
            .get("type")
            .or_else(|| error.get("code"))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_default();
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let detail = self.scrub(&if kind.is_empty() {
            message
        } else {
            format!("{kind}: {message}")
        });
        let transient = |kind| Failure::Retry {
            kind,
            detail: detail.clone(),
            retry_after: None,
        };
        if too_long(&error.to_string()) {
            return Failure::Fatal(ProviderError::ContextTooLong {
                provider: self.label,
                status: 0,
                detail,
                after_compaction: false,
            });
        }
        match kind.as_str() {
            "overloaded_error" | "overloaded" | "server_is_overloaded" | "slow_down" => {
                transient(Transient::Overloaded)
            }
            "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota_temporary" => {
                transient(Transient::RateLimited)
            }
            "api_error" | "server_error" | "internal_error" | "timeout" => {
                transient(Transient::Server(500))
            }
            "authentication_error" | "permission_error" | "invalid_api_key" => {
                Failure::Fatal(ProviderError::Auth {
                    provider: self.label,
                    variable: self.key_var,
                    status: None,
                    problem: format!("was refused ({kind})"),
                })
            }
            _ => Failure::Fatal(ProviderError::Rejected {
                provider: self.label,
                status: 0,
                detail,
            }),
        }
    }
}

/// The longest line of an event stream candor reads: an event's data (a
/// Responses `response.completed` carries the whole response, an Anthropic
/// search result its encrypted content), far past any a provider sends.
/// The stream's parser reads a line again with each piece of it that
/// arrives, so an endless one costs the square of its length: it is cut
/// here.
pub const MAX_EVENT_LINE: usize = 8 << 20;
/// The most bytes of one response read (and recorded, `assistant/message`
/// keeping the raw turn).
pub const MAX_RESPONSE: usize = 256 << 20;

/// The most of an error response's body read: an API's error is a short
/// JSON object; only its first 600 characters are ever shown.
pub const MAX_ERROR_BODY: usize = 64 << 10;
/// The longest wait for an error response's body.
const ERROR_BODY_TIME: Duration = Duration::from_secs(30);

/// The start of an error response's body, up to [`MAX_ERROR_BODY`] bytes
/// and [`ERROR_BODY_TIME`]: a body that goes on (or drips) is cut there,
/// and what came is read as the error.
async fn error_text(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let read = async {
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = MAX_ERROR_BODY - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= MAX_ERROR_BODY {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(ERROR_BODY_TIME, read).await;
    String::from_utf8_lossy(&body).into_owned()
}

/// Why a response body was not read on.
#[derive(Debug)]
enum Body {
    Http(reqwest::Error),
    /// Past [`MAX_EVENT_LINE`] or [`MAX_RESPONSE`]: which.
    TooLong(String),
}

impl std::fmt::Display for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Http(e) => e.fmt(f),
            Body::TooLong(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for Body {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Body::Http(e) => e.source(),
            Body::TooLong(_) => None,
        }
    }
}

/// The bytes of a response so far, and of its current line.
#[derive(Debug, Default)]
struct Bounds {
    line: usize,
    total: usize,
}

impl Bounds {
    /// Counts `chunk`; `Err` says which cap it passed.
    fn take(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.total = self.total.saturating_add(chunk.len());
        if self.total > MAX_RESPONSE {
            return Err(format!("a response longer than {} MiB", MAX_RESPONSE >> 20));
        }
        self.line = match chunk.iter().rposition(|b| matches!(b, b'\n' | b'\r')) {
            Some(end) => chunk.len() - end - 1,
            None => self.line.saturating_add(chunk.len()),
        };
        if self.line > MAX_EVENT_LINE {
            return Err(format!("an event longer than {} MiB", MAX_EVENT_LINE >> 20));
        }
        Ok(())
    }
}

/// Adds a header; names and values here are static and valid.
pub(super) fn header(headers: &mut HeaderMap, name: &'static str, value: &'static str) {
    headers.insert(
        HeaderName::from_static(name),
        HeaderValue::from_static(value),
    );
}

/// The error's message with its causes.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// The error type and message of an API error body (`{"error": {"type" |
/// "code", "message"}}`, as Anthropic and OpenAI send them).
fn error_body(text: &str) -> (Option<String>, Option<String>) {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return (None, None);
    };
    let error = v.get("error").unwrap_or(&v);
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .or_else(|| error.get("code").and_then(Value::as_str))
        .map(str::to_owned);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| error.as_str().map(str::to_owned));
    (kind, message)
}

/// Whether an error (its body, or the error object of an event) says the
/// request is too long for the model's context window: OpenAI's code
/// `context_length_exceeded`, or a message as Anthropic (`prompt is too
/// long: 208310 tokens > 200000 maximum`), OpenAI and compatible servers
/// (`This model's maximum context length is 8192 tokens…`, `Your input
/// exceeds the context window of this model`) word it.
fn too_long(error: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(error) else {
        return false;
    };
    let error = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
    let field = |name: &str| error.get(name).and_then(Value::as_str).unwrap_or("");
    if field("code") == "context_length_exceeded" || field("type") == "context_length_exceeded" {
        return true;
    }
    let message = field("message").to_ascii_lowercase();
    [
        "prompt is too long",
        "maximum context length",
        "context length exceeded",
        "context_length_exceeded",
        "exceeds the context window",
        "context window exceeded",
        "input is too long for requested model",
    ]
    .iter()
    .any(|p| message.contains(p))
}

/// The start of a long text, for error messages.
pub(super) fn clip(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Joins a base URL and a path.
pub(super) fn url(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_or_a_response_past_its_cap_is_not_read_on() {
        let mut b = Bounds::default();
        let piece = vec![b'a'; 1 << 20];
        for _ in 0..8 {
            b.take(&piece).unwrap();
        }
        // A line end resets the line, wherever it is in a piece.
        b.take(b"aaa\ndata: ").unwrap();
        assert_eq!(b.line, 6);
        for _ in 0..7 {
            b.take(&piece).unwrap();
        }
        let e = b.take(&piece).unwrap_err();
        assert_eq!(e, "an event longer than 8 MiB");
        let mut b = Bounds::default();
        let lines = [b"x\r".as_slice(), &piece[..(1 << 20) - 3], b"\n"].concat();
        for _ in 0..256 {
            b.take(&lines).unwrap();
        }
        assert_eq!(b.take(b"x").unwrap_err(), "a response longer than 256 MiB");
    }

    #[test]
    fn backoff_grows_and_stays_capped() {
        let p = RetryPolicy::default();
        for attempt in 1..=8 {
            let d = p.backoff(attempt);
            let exp = (Duration::from_secs(1) * (1 << (attempt - 1))).min(p.max_delay);
            assert!(d >= exp / 2 && d <= exp, "{attempt}: {d:?}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn context_length_errors_are_told_apart() {
        assert!(too_long(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#
        ));
        assert!(too_long(
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
        ));
        assert!(too_long(
            r#"{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}"#
        ));
        assert!(too_long(
            r#"{"object":"error","message":"This model's maximum context length is 131072 tokens. However, you requested 351430 tokens."}"#
        ));
        assert!(!too_long(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1: tool_use ids were found without tool_result blocks"}}"#
        ));
        assert!(!too_long("<html>"));
    }

    #[test]
    fn error_bodies_of_both_apis() {
        assert_eq!(
            error_body(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            (Some("overloaded_error".into()), Some("Overloaded".into()))
        );
        assert_eq!(
            error_body(r#"{"error":{"message":"Bad","type":"invalid_request_error","code":null}}"#),
            (Some("invalid_request_error".into()), Some("Bad".into()))
        );
        assert_eq!(error_body("<html>"), (None, None));
    }
}
