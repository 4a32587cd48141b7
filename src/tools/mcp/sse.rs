//! MCP's older HTTP+SSE transport (protocol version 2024-11-05), which rmcp
//! no longer has: a `GET` of the server's URL opens an event stream whose
//! first `endpoint` event names where to `POST` messages; the server's
//! messages arrive as `message` events on the stream. Written on reqwest,
//! with its own reading of the event stream ([`Parser`]), as an rmcp
//! [`Transport`].
//!
//! Bounds: an event's data is held up to `refusal::MAX_MESSAGE` bytes,
//! counted on the bytes as they arrive; a larger event is read past (its
//! JSON-RPC id scanned on the way, `refusal`), and so is a line of another
//! field that long. An event that answers a request but is over the cap or
//! not JSON becomes candor's error answer to that request; the stream goes
//! on. At most 64 messages wait to be read. The endpoint must be on the
//! stream's own origin (scheme, host and port), so the entry's headers go
//! nowhere else.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use super::refusal::{self, MAX_MESSAGE, Scan};

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
    let mut events = Events {
        stream: response.bytes_stream().boxed(),
        parser: Parser::default(),
        ready: VecDeque::new(),
    };
    let endpoint = loop {
        match events.next().await {
            Some(Ok(Event::Whole { kind, data })) if kind == "endpoint" => {
                let data = String::from_utf8_lossy(&data);
                let endpoint = base
                    .join(data.trim())
                    .map_err(|e| format!("the endpoint {data:?} is not a URL: {e}"))?;
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
        while let Some(Ok(event)) = events.next().await {
            let Some(message) = message(event) else {
                continue;
            };
            if tx.send(message).await.is_err() {
                break;
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

/// What a `message` event gives rmcp: the message, candor's refusal of the
/// answer it was, or nothing.
fn message(event: Event) -> Option<RxJsonRpcMessage<RoleClient>> {
    match event {
        Event::Whole { kind, data } if kind == "message" || kind.is_empty() => {
            match serde_json::from_slice(&data) {
                Ok(message) => Some(message),
                Err(e) => {
                    let mut scan = Scan::default();
                    scan.feed(&data);
                    let refused = scan
                        .answers()
                        .map(|id| refusal::refusal(id, &refusal::not_json(&e)));
                    if refused.is_none() {
                        tracing::warn!(error = %e, "an MCP server sent a message candor cannot read; skipped");
                    }
                    refused
                }
            }
        }
        Event::Over { kind, scan } if kind == "message" || kind.is_empty() => {
            let refused = scan
                .answers()
                .map(|id| refusal::refusal(id, &refusal::too_large()));
            if refused.is_none() {
                tracing::warn!(
                    "an MCP server sent an event over {MAX_MESSAGE} bytes that answers no request of candor's; skipped"
                );
            }
            refused
        }
        _ => None,
    }
}

/// The events of a stream.
struct Events {
    stream: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    parser: Parser,
    ready: VecDeque<Event>,
}

impl Events {
    async fn next(&mut self) -> Option<Result<Event, reqwest::Error>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            match self.stream.next().await? {
                Ok(chunk) => self.parser.feed(&chunk, &mut self.ready),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// One event of the stream.
#[derive(Debug)]
enum Event {
    /// Its type (`event:`; empty when none was given) and its data.
    Whole { kind: String, data: Vec<u8> },
    /// Its data was over the cap: read past, scanned.
    Over { kind: String, scan: Scan },
}

/// Whether the line being read is read past, and where its bytes go.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Skip {
    #[default]
    No,
    /// A data line: to the event's scan.
    Data,
    /// Another field: nowhere.
    Other,
}

/// Most bytes of an event's type kept.
const MAX_KIND: usize = 64;

/// Reads an event stream (`text/event-stream`: lines ended by CR, LF or
/// CRLF; `field: value`; a blank line ends an event) holding at most one
/// line and one event's data, each up to [`MAX_MESSAGE`].
#[derive(Debug, Default)]
struct Parser {
    line: Vec<u8>,
    /// The line is over the cap: read past.
    skip: Skip,
    after_cr: bool,
    kind: String,
    data: Vec<u8>,
    has_data: bool,
    /// The event's data went over the cap.
    over: Option<Scan>,
}

impl Parser {
    fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Event>) {
        for &b in chunk {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            match b {
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    self.end_line(out);
                }
                _ if self.skip == Skip::Data => {
                    if let Some(scan) = self.over.as_mut() {
                        scan.feed(&[b]);
                    }
                }
                _ if self.skip == Skip::Other => {}
                _ => {
                    self.line.push(b);
                    // Past `data:`, so the line is known for what it is.
                    if self.line.len() + self.data.len() > MAX_MESSAGE && self.line.len() > 5 {
                        self.go_over();
                    }
                }
            }
        }
    }

    /// The line being read takes the event past the cap.
    fn go_over(&mut self) {
        let line = std::mem::take(&mut self.line);
        let Some(value) = field(&line, b"data") else {
            self.skip = Skip::Other;
            return;
        };
        self.skip = Skip::Data;
        let scan = self.over.get_or_insert_with(|| {
            let mut scan = Scan::default();
            scan.feed(&self.data);
            scan
        });
        if self.has_data {
            scan.feed(b"\n");
        }
        scan.feed(value);
        self.data = Vec::new();
        self.has_data = true;
    }

    fn end_line(&mut self, out: &mut VecDeque<Event>) {
        if std::mem::take(&mut self.skip) != Skip::No {
            return;
        }
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            let kind = std::mem::take(&mut self.kind);
            let data = std::mem::take(&mut self.data);
            match self.over.take() {
                Some(scan) => out.push_back(Event::Over { kind, scan }),
                None if self.has_data => out.push_back(Event::Whole { kind, data }),
                None => {}
            }
            self.has_data = false;
            return;
        }
        if let Some(value) = field(&line, b"data") {
            match self.over.as_mut() {
                Some(scan) => {
                    scan.feed(b"\n");
                    scan.feed(value);
                }
                None => {
                    if self.has_data {
                        self.data.push(b'\n');
                    }
                    self.data.extend_from_slice(value);
                    self.has_data = true;
                }
            }
        } else if let Some(value) = field(&line, b"event") {
            self.kind = crate::text::shorten(&String::from_utf8_lossy(value), MAX_KIND);
        }
    }
}

/// The value of `line` when it is the field `name` (`name: value`, one
/// space after the colon dropped; `name` alone is an empty value).
fn field<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let rest = line.strip_prefix(name)?;
    if rest.is_empty() {
        return Some(rest);
    }
    let value = rest.strip_prefix(b":")?;
    Some(value.strip_prefix(b" ").unwrap_or(value))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<Event> {
        let mut parser = Parser::default();
        let mut out = VecDeque::new();
        for c in chunks {
            parser.feed(c, &mut out);
        }
        out.into()
    }

    fn whole(e: &Event) -> (&str, &[u8]) {
        match e {
            Event::Whole { kind, data } => (kind.as_str(), data.as_slice()),
            Event::Over { .. } => panic!("over: {e:?}"),
        }
    }

    #[test]
    fn events_are_read_as_the_event_stream_format_says_however_they_are_cut() {
        let text = b"event: endpoint\r\ndata: /m?s=1\r\n\r\n: a comment\n\ndata: a\ndata:b\nid: 4\n\n\revent: message\rdata: {}\r\r";
        for size in [1, 3, text.len()] {
            let got = events(&text.chunks(size).collect::<Vec<_>>());
            assert_eq!(got.len(), 3, "{size}: {got:?}");
            assert_eq!(whole(&got[0]), ("endpoint", &b"/m?s=1"[..]));
            assert_eq!(whole(&got[1]), ("", &b"a\nb"[..]));
            assert_eq!(whole(&got[2]), ("message", &b"{}"[..]));
        }
    }

    #[test]
    fn an_event_over_the_cap_is_read_past_its_id_kept_and_the_stream_goes_on() {
        let mut parser = Parser::default();
        let mut out = VecDeque::new();
        parser.feed(
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"result\":{\"t\":\"",
            &mut out,
        );
        let chunk = vec![b'x'; 1024 * 1024];
        for _ in 0..17 {
            parser.feed(&chunk, &mut out);
        }
        assert!(parser.line.len() <= MAX_MESSAGE && parser.data.len() <= MAX_MESSAGE);
        parser.feed(b"\"},\"id\":8}\n\ndata: {\"n\":1}\n\n", &mut out);
        let got: Vec<Event> = out.into();
        assert_eq!(got.len(), 2, "{got:?}");
        match &got[0] {
            Event::Over { kind, scan } => {
                assert_eq!(kind, "message");
                assert_eq!(scan.answers(), Some(rmcp::model::RequestId::Number(8)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(whole(&got[1]), ("", &b"{\"n\":1}"[..]));
    }

    #[test]
    fn an_answer_that_is_not_json_is_refused_and_what_answers_nothing_is_skipped() {
        let refused = message(Event::Whole {
            kind: "message".into(),
            data: br#"{"jsonrpc":"2.0","id":2,"result":{"#.to_vec(),
        });
        let Some(rmcp::model::JsonRpcMessage::Error(e)) = refused else {
            panic!("{refused:?}");
        };
        assert!(e.error.message.contains("not JSON"), "{:?}", e.error);
        assert!(
            message(Event::Whole {
                kind: "message".into(),
                data: b"nonsense".to_vec()
            })
            .is_none()
        );
        assert!(
            message(Event::Whole {
                kind: "other".into(),
                data: b"{}".to_vec()
            })
            .is_none()
        );
    }
}
