//! MCP's older HTTP+SSE transport (protocol version 2024-11-05), which rmcp
//! no longer has: a `GET` of the server's URL opens an event stream whose
//! first `endpoint` event names where to `POST` messages; the server's
//! messages arrive as `message` events on the stream. Written on reqwest
//! and eventsource-stream (what the providers use), as an rmcp
//! [`Transport`].
//!
//! Bounds: the stream's events are at most [`MAX_EVENT`] bytes each,
//! counted on the bytes as they arrive (a larger one ends the connection
//! before it is held whole), and at most 64 messages wait to be read. The
//! endpoint must be on the stream's own origin (scheme, host and port), so
//! the entry's headers go nowhere else.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// Most bytes of one event from the server.
const MAX_EVENT: usize = 16 * 1024 * 1024;

/// A connected SSE transport.
pub(crate) struct Sse {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: reqwest::header::HeaderMap,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Sse {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn error(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Opens the event stream at `url` and waits for its `endpoint`.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: reqwest::header::HeaderMap,
) -> Result<Sse, String> {
    let base = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| format!("could not reach {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let mut events = Box::pin(bounded(response.bytes_stream()).eventsource());
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event == "endpoint" => {
                let endpoint = base
                    .join(event.data.trim())
                    .map_err(|e| format!("the endpoint {:?} is not a URL: {e}", event.data))?;
                if endpoint.origin() != base.origin() {
                    return Err(format!(
                        "the server named an endpoint on another origin ({endpoint}); candor sends nothing there"
                    ));
                }
                break endpoint;
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(format!("the event stream failed: {e}")),
            None => return Err("the event stream ended before naming its endpoint".into()),
        }
    };
    let (tx, incoming) = mpsc::channel(64);
    let reader = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let Ok(event) = event else { break };
            if event.event != "message" && !event.event.is_empty() {
                continue;
            }
            match serde_json::from_str(&event.data) {
                Ok(message) => {
                    if tx.send(message).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "an MCP server sent a message candor cannot read")
                }
            }
        }
    });
    Ok(Sse {
        client,
        endpoint,
        headers,
        incoming,
        reader,
    })
}

/// The stream's bytes, ended with an error once more than [`MAX_EVENT`]
/// of them come without the blank line that ends an event.
fn bounded<S>(stream: S) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>>
where
    S: futures_util::Stream<Item = reqwest::Result<bytes::Bytes>>,
{
    let mut pending = 0usize;
    let mut last = 0u8;
    stream.map(move |chunk| {
        let chunk = chunk.map_err(error)?;
        for &b in chunk.iter() {
            if b == b'\n' && last == b'\n' {
                pending = 0;
            } else if b != b'\r' {
                pending += 1;
            }
            if b != b'\r' {
                last = b;
            }
        }
        if pending > MAX_EVENT {
            tracing::warn!("an MCP server's event was over {MAX_EVENT} bytes; the connection ends");
            return Err(error("an event over the size candor takes"));
        }
        Ok(chunk)
    })
}

impl Transport<RoleClient> for Sse {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .timeout(Duration::from_secs(60))
            .json(&item);
        async move {
            let response = request.send().await.map_err(error)?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(error(format!("the server answered {}", response.status())))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}
