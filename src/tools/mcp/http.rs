//! Streamable HTTP: rmcp's client on reqwest, with one change. An answer
//! to a request that rmcp's limits refuse (a JSON body, or an event of the
//! response's event stream, over `refusal::MAX_MESSAGE`), or an event of
//! that stream that is not JSON, would end the call with "Transport
//! closed" and no word to the server; here it becomes candor's error
//! answer to that request (`refusal`), which says why, and after which
//! the server is told the call was given up. rmcp's limits stay: nothing
//! larger is held.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::refusal::{self, Scan};

/// reqwest, as rmcp's streamable HTTP client uses it, and candor's
/// reading of answers it cannot take.
#[derive(Clone)]
pub(crate) struct Client(pub(crate) reqwest::Client);

type Posted = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Posted> + Send + '_ {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Posted> + Send + '_ {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Posted> + Send + '_ {
        let id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        async move {
            let posted = self
                .0
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
            let Some(id) = id else { return posted };
            match posted {
                Err(StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                    Ok(StreamableHttpPostResponse::Json(
                        refusal::refusal(id, &refusal::too_large()),
                        None,
                    ))
                }
                Ok(StreamableHttpPostResponse::Sse(events, session)) => Ok(
                    StreamableHttpPostResponse::Sse(answered(events, id), session),
                ),
                posted => posted,
            }
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<Events, StreamableHttpError<Self::Error>>> + Send + '_ {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<Events, StreamableHttpError<Self::Error>>> + Send + '_ {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

/// The event stream answering request `id`, with an event rmcp's limit
/// refused, or one that is not JSON and is no message of the server's own,
/// made candor's refusal of `id` (and the stream ended there).
fn answered(events: Events, id: RequestId) -> Events {
    futures_util::stream::unfold(Some(events), move |events| {
        let id = id.clone();
        async move {
            let mut events = events?;
            let refused = match events.next().await? {
                Err(e) if over_the_limit(&e) => refusal::too_large(),
                Ok(event) => match unreadable(&event) {
                    Some(why) => why,
                    None => return Some((Ok(event), Some(events))),
                },
                Err(e) => return Some((Err(e), Some(events))),
            };
            let message = refusal::refusal(id, &refused);
            let event = Sse {
                event: Some("message".into()),
                data: serde_json::to_string(&message).ok(),
                id: None,
                retry: None,
            };
            Some((Ok(event), None))
        }
    })
    .boxed()
}

/// Whether `error` is rmcp's refusal of an event over its limit (its
/// `BoundedSseStreamError::EventTooLarge`, private, known by its text).
fn over_the_limit(error: &SseError) -> bool {
    matches!(error, SseError::Body(e) if e.to_string().contains("exceeded the maximum size"))
}

/// Why an event's data cannot be read, unless it is a message of the
/// server's own (a request or notification, which rmcp deals with).
fn unreadable(event: &Sse) -> Option<String> {
    let data = event.data.as_deref().filter(|d| !d.trim().is_empty())?;
    let error = serde_json::from_str::<serde::de::IgnoredAny>(data).err()?;
    let mut scan = Scan::default();
    scan.feed(data.as_bytes());
    let own = scan.answers().is_none() && data.contains("\"method\"");
    (!own).then(|| refusal::not_json(&error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_that_is_not_json_is_unreadable_unless_it_is_the_servers_own_message() {
        let event = |data: &str| Sse {
            data: Some(data.into()),
            ..Sse::default()
        };
        assert!(unreadable(&event(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)).is_none());
        assert!(unreadable(&event("")).is_none());
        let why = unreadable(&event(r#"{"jsonrpc":"2.0","id":1,"result":{"#)).unwrap();
        assert!(why.contains("not JSON"), "{why}");
        assert!(
            unreadable(&event(
                r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"#
            ))
            .is_none()
        );
    }
}
