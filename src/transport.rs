//! The byte streams: newline-delimited JSON in, newline-delimited JSON out.
//!
//! This module owns framing and nothing else. [`LineReader`] splits stdin into
//! lines (bounded by [`MAX_LINE`]); [`spawn_writer`] starts the one task that
//! writes stdout. Every outgoing frame, whatever produced it (a response, a
//! `session/update`, an agent→client request), goes through the single
//! ordered queue behind [`Outbox`], so frames leave in the order they were
//! queued.
//!
//! Architecture invariant: nothing outside the writer task touches the output
//! stream, and the writer never reorders, merges or splits frames.

use std::io;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

/// The process's stdin and stdout as async streams.
///
/// A pipe (what an editor hands its agent) is put in non-blocking mode and
/// driven by the runtime's reactor, so a frame goes from the writer task to
/// `write(2)` with no hand-off; anything else (a file, a terminal) goes
/// through tokio's adapters, which do each read and write on a blocking
/// thread. Non-blocking mode is safe to set because no process candor starts
/// inherits its stdin or stdout (`tools::exec`).
pub fn stdio() -> (
    Box<dyn AsyncRead + Unpin + Send>,
    Box<dyn AsyncWrite + Unpin + Send>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let as_file =
        |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().map(std::fs::File::from);
    let input: Box<dyn AsyncRead + Unpin + Send> =
        match as_file(io::stdin().as_fd()).and_then(pipe::Receiver::from_file) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        };
    let output: Box<dyn AsyncWrite + Unpin + Send> =
        match as_file(io::stdout().as_fd()).and_then(pipe::Sender::from_file) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        };
    (input, output)
}

/// The longest line candor accepts. A longer line is discarded (up to its
/// newline) and answered with `-32600`; reading goes on.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// One framed input line, or the fact that a line was too long and dropped.
#[derive(Debug)]
pub(crate) enum Inbound {
    Line(Bytes),
    TooLong,
}

/// Splits an input stream into lines.
///
/// Written on `AnyDelimiterCodec` from tokio-util rather than `FramedRead`:
/// `FramedRead` ends the stream after the first decode error, and a too-long
/// line must not end the connection. `LinesCodec` is not used because it
/// rejects invalid UTF-8 before we could answer it with a parse error.
pub(crate) struct LineReader<R> {
    inner: R,
    codec: AnyDelimiterCodec,
    buf: BytesMut,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self::with_max_line(inner, MAX_LINE)
    }

    pub(crate) fn with_max_line(inner: R, max: usize) -> Self {
        Self {
            inner,
            codec: AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), b"\n".to_vec(), max),
            buf: BytesMut::with_capacity(64 * 1024),
            eof: false,
        }
    }

    /// The next non-empty line (without its `\n` or `\r\n`), `TooLong` for a
    /// discarded line, or `None` at end of input.
    pub(crate) async fn next(&mut self) -> io::Result<Option<Inbound>> {
        loop {
            let decoded = if self.eof {
                self.codec.decode_eof(&mut self.buf)
            } else {
                self.codec.decode(&mut self.buf)
            };
            match decoded {
                Ok(Some(line)) => {
                    let line = trim_cr(line);
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Ok(Some(Inbound::Line(line)));
                }
                Ok(None) if self.eof => return Ok(None),
                Ok(None) => {}
                Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                    return Ok(Some(Inbound::TooLong));
                }
                Err(AnyDelimiterCodecError::Io(e)) => return Err(e),
            }
            if self.buf.capacity() - self.buf.len() < 8 * 1024 {
                self.buf.reserve(64 * 1024);
            }
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                self.eof = true;
            }
        }
    }
}

fn trim_cr(line: Bytes) -> Bytes {
    if line.last() == Some(&b'\r') {
        line.slice(..line.len() - 1)
    } else {
        line
    }
}

/// The sending side of the single ordered output queue.
///
/// Cloning is cheap. Sending never blocks and never fails loudly: once the
/// writer is gone (the client closed stdout), frames are dropped, which is
/// the only thing left to do with them.
#[derive(Clone, Debug)]
pub(crate) struct Outbox {
    // Unbounded on purpose: producers enqueue synchronously in program order
    // (that is what keeps a `tool_call` ahead of its updates and every update
    // ahead of the prompt response); back-pressure would need an `.await`
    // between "decide" and "enqueue", which is where reordering creeps in.
    tx: mpsc::UnboundedSender<String>,
}

impl Outbox {
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    /// Queues one complete JSON-RPC message (no trailing newline).
    pub(crate) fn send_line(&self, line: String) {
        if self.tx.send(line).is_err() {
            tracing::debug!("output closed; dropping a frame");
        }
    }

    /// Queues a notification.
    pub(crate) fn notify<P: Serialize>(&self, method: &str, params: &P) {
        #[derive(Serialize)]
        struct Notification<'a, P> {
            jsonrpc: &'static str,
            method: &'a str,
            params: &'a P,
        }
        match serde_json::to_string(&Notification {
            jsonrpc: "2.0",
            method,
            params,
        }) {
            Ok(line) => self.send_line(line),
            Err(e) => tracing::error!(method, error = %e, "could not serialize a notification"),
        }
    }
}

/// Starts the only task that writes `output`.
///
/// It writes each queued line followed by `\n` and flushes whenever the queue
/// is momentarily empty. When `finish` fires (or every [`Outbox`] is dropped)
/// it writes what is already queued, flushes and ends. With `mirror`, every
/// frame is also copied to stderr as `-> {frame}` (`--log-messages`).
pub(crate) fn spawn_writer<W>(
    mut output: W,
    mut rx: mpsc::UnboundedReceiver<String>,
    mirror: bool,
    mut finish: oneshot::Receiver<()>,
) -> JoinHandle<()>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut broken = false;
        let mut finishing = false;
        loop {
            let line = if finishing {
                rx.recv().await
            } else {
                tokio::select! {
                    biased;
                    line = rx.recv() => line,
                    _ = &mut finish => {
                        // Stop accepting new frames; what is queued still goes out.
                        finishing = true;
                        rx.close();
                        continue;
                    }
                }
            };
            let Some(line) = line else { break };
            if mirror {
                mirror_frame("->", line.as_bytes());
            }
            if broken {
                continue;
            }
            let mut frame = line.into_bytes();
            frame.push(b'\n');
            if let Err(e) = output.write_all(&frame).await {
                tracing::warn!(error = %e, "output stream closed; further frames are dropped");
                broken = true;
                continue;
            }
            if rx.is_empty()
                && let Err(e) = output.flush().await
            {
                tracing::warn!(error = %e, "output stream closed while flushing");
                broken = true;
            }
        }
        if !broken {
            let _ = tokio::time::timeout(Duration::from_millis(200), output.flush()).await;
            let _ = tokio::time::timeout(Duration::from_millis(200), output.shutdown()).await;
        }
    })
}

/// Copies one frame to stderr with its direction (`<-` in, `->` out).
///
/// Written straight to the stderr handle, not through `tracing`, so that
/// `--log-messages` shows frames whatever `RUST_LOG` says.
pub(crate) fn mirror_frame(direction: &str, frame: &[u8]) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(direction.as_bytes());
    let _ = err.write_all(b" ");
    let _ = err.write_all(frame);
    let _ = err.write_all(b"\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::with_max_line(input, max);
        let mut out = Vec::new();
        while let Some(item) = reader.next().await.unwrap() {
            out.push(match item {
                Inbound::Line(l) => String::from_utf8_lossy(&l).into_owned(),
                Inbound::TooLong => "<too long>".to_owned(),
            });
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        assert_eq!(
            lines(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}", 100).await,
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
    }

    #[tokio::test]
    async fn a_too_long_line_is_reported_once_and_reading_goes_on() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\n{\"ok\":true}\n");
        assert_eq!(lines(&input, 20).await, ["<too long>", "{\"ok\":true}"]);
    }

    #[tokio::test]
    async fn writer_keeps_order_and_finishes_with_what_was_queued() {
        let (outbox, rx) = Outbox::new();
        let (finish_tx, finish_rx) = oneshot::channel();
        let (client, mut server) = tokio::io::duplex(1024);
        let writer = spawn_writer(client, rx, false, finish_rx);
        for i in 0..100 {
            outbox.send_line(format!("{{\"n\":{i}}}"));
        }
        finish_tx.send(()).unwrap();
        writer.await.unwrap();
        let mut text = String::new();
        server.read_to_string(&mut text).await.unwrap();
        let got: Vec<_> = text.lines().map(str::to_owned).collect();
        let want: Vec<_> = (0..100).map(|i| format!("{{\"n\":{i}}}")).collect();
        assert_eq!(got, want);
    }
}
