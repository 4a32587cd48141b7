//! MCP over a server's stdin and stdout: one JSON-RPC message a line, as
//! rmcp's own stdio transport reads it, except for a line candor cannot
//! take (`refusal`): rmcp drops a line over its cap and skips one that is
//! not JSON without a word, so the call it answered would wait for its
//! timeout; here such a line that answers a request becomes candor's error
//! answer to it.
//!
//! Bounds: a line is held up to `refusal::MAX_MESSAGE` bytes; the rest of a
//! longer one is read past (its id scanned on the way), never kept.
//! `receive` is cancellation safe (rmcp polls it inside a `select!`): what
//! was read of a line stays in the transport until the line ends.

use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ErrorData};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::refusal::{self, MAX_MESSAGE, Scan};

/// A line buffer bigger than this is given back once its line is read.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// A server spoken to over its stdin (`W`) and stdout (`R`).
pub(crate) struct Stdio<R, W> {
    server: String,
    read: BufReader<R>,
    /// What was read of the line so far.
    line: Vec<u8>,
    /// Reading past a line over the cap: its id as far as scanned.
    skipping: Option<Scan>,
    write: Arc<tokio::sync::Mutex<W>>,
}

/// One line read.
enum Line {
    /// Whole, in `Stdio::line`.
    Whole,
    /// Over the cap, read past.
    Over(Scan),
}

impl<R, W> Stdio<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(server: &str, stdout: R, stdin: W) -> Self {
        Self {
            server: server.to_owned(),
            read: BufReader::new(stdout),
            line: Vec::new(),
            skipping: None,
            write: Arc::new(tokio::sync::Mutex::new(stdin)),
        }
    }

    /// The next line; `None` at the end of the stream (or a read error).
    async fn next_line(&mut self) -> Option<Line> {
        loop {
            // The decision is made while `fill_buf`'s borrow lasts, applied
            // after; nothing awaits between reading and consuming.
            let (used, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(server = %self.server, error = %e, "could not read from an MCP server");
                        return None;
                    }
                };
                if available.is_empty() {
                    return None;
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let used = newline.map_or(available.len(), |i| i + 1);
                let piece = &available[..used];
                if let Some(scan) = &mut self.skipping {
                    scan.feed(piece);
                } else if self.line.len().saturating_add(used) > MAX_MESSAGE {
                    let mut scan = Scan::default();
                    scan.feed(&self.line);
                    scan.feed(piece);
                    self.line = Vec::new();
                    self.skipping = Some(scan);
                } else {
                    self.line.extend_from_slice(piece);
                }
                (used, newline.is_some())
            };
            self.read.consume(used);
            if ended {
                return Some(match self.skipping.take() {
                    Some(scan) => Line::Over(scan),
                    None => Line::Whole,
                });
            }
        }
    }

    /// The line read, parsed: a message, candor's refusal of the answer it
    /// was, or nothing to pass on (the answer to send back, for a request
    /// of the server's candor cannot read).
    fn parse(
        &self,
        line: &[u8],
    ) -> (
        Option<RxJsonRpcMessage<RoleClient>>,
        Option<ClientJsonRpcMessage>,
    ) {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            return (None, None);
        }
        let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(text) {
            Ok(message) => return (Some(message), None),
            Err(e) => e,
        };
        let mut scan = Scan::default();
        scan.feed(text);
        if let Some(id) = scan.answers() {
            return (Some(refusal::refusal(id, &refusal::not_json(&error))), None);
        }
        tracing::warn!(server = %self.server, error = %error, "an MCP server sent a line candor cannot read; skipped");
        // A request of the server's that candor cannot read is answered
        // (a notification needs nothing).
        let reply = serde_json::from_slice::<serde_json::Value>(text)
            .ok()
            .filter(|v| v.get("method").is_some())
            .and_then(|v| serde_json::from_value(v.get("id")?.clone()).ok())
            .map(|id| {
                ClientJsonRpcMessage::error(
                    ErrorData::invalid_request(
                        format!("candor cannot read this request: {error}"),
                        None,
                    ),
                    Some(id),
                )
            });
        (None, reply)
    }
}

impl<R, W> Transport<RoleClient> for Stdio<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        let line = serde_json::to_vec(&item);
        async move {
            let mut line = line.map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut stdin = write.lock().await;
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = self.next_line().await?;
            let message = match line {
                Line::Whole => {
                    let (message, reply) = self.parse(&self.line);
                    self.line.clear();
                    if self.line.capacity() > KEEP_CAPACITY {
                        self.line = Vec::new();
                    }
                    if let Some(reply) = reply {
                        // Not awaited here: `receive` may be dropped at
                        // any await.
                        tokio::spawn(self.send(reply));
                    }
                    message
                }
                Line::Over(scan) => match scan.answers() {
                    Some(id) => Some(refusal::refusal(id, &refusal::too_large())),
                    None => {
                        tracing::warn!(server = %self.server, "an MCP server sent a message over {MAX_MESSAGE} bytes that answers no request of candor's; skipped");
                        None
                    }
                },
            };
            if let Some(message) = message {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{JsonRpcMessage, RequestId};

    #[tokio::test]
    async fn a_line_over_the_cap_is_never_held_and_becomes_the_refusal_of_what_it_answers() {
        let (mut server, ours) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        let mut stdio = Stdio::new("s", read, write);
        let writer = tokio::spawn(async move {
            server
                .write_all(br#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":""#)
                .await?;
            let chunk = vec![b'x'; 1024 * 1024];
            for _ in 0..40 {
                server.write_all(&chunk).await?;
            }
            server.write_all(b"\"}]},\"id\":7}\n").await?;
            server
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n")
                .await?;
            Ok::<_, std::io::Error>(server)
        });
        let first = stdio.receive().await;
        let Some(JsonRpcMessage::Error(refused)) = first else {
            panic!("{first:?}");
        };
        assert_eq!(refused.id, Some(RequestId::Number(7)));
        assert!(refused.error.message.contains("over 16 MiB"), "{refused:?}");
        // What was held of it: never more than the cap.
        assert!(
            stdio.line.capacity() <= MAX_MESSAGE,
            "{}",
            stdio.line.capacity()
        );
        let next = stdio.receive().await;
        assert!(
            matches!(&next, Some(JsonRpcMessage::Response(r)) if r.id == RequestId::Number(8)),
            "{next:?}"
        );
        assert!(writer.await.is_ok());
    }

    #[tokio::test]
    async fn a_request_of_the_servers_that_candor_cannot_read_is_answered_and_skipped() {
        let (server, ours) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        let (mut server_read, mut server_write) = tokio::io::split(server);
        let mut stdio = Stdio::new("s", read, write);
        server_write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\",\"params\":7}\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .await
            .unwrap();
        let next = stdio.receive().await;
        assert!(
            matches!(&next, Some(JsonRpcMessage::Response(r)) if r.id == RequestId::Number(1)),
            "{next:?}"
        );
        let mut answer = String::new();
        let mut lines = tokio::io::BufReader::new(&mut server_read);
        lines.read_line(&mut answer).await.unwrap();
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["id"], 3);
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("cannot read")
        );
    }
}
