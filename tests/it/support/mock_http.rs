//! A tiny HTTP/1.1 server on 127.0.0.1 for the provider mocks: one request
//! per connection, answered by a handler with a status and a body, or with
//! a server-sent event stream written frame by frame (chunked, each frame
//! flushed, so a client sees it as a real API's stream). A stream can be cut
//! (the connection closes without the final chunk, as a dropped connection
//! looks) and paced; the time each frame's last byte was written is kept,
//! for latency measurements.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the mock received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the mock answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status, extra headers and a body (JSON).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// `200 text/event-stream`: these SSE frames (each a complete
    /// `event:…\ndata:…\n\n` text), `gap` apart; `cut` closes the connection
    /// after them without ending the body.
    Events {
        frames: Vec<String>,
        gap: Duration,
        cut: bool,
    },
    /// A web page (for WebFetch): a status, its content type, extra headers
    /// (`location`) and a body; with `stall`, the first `stall.0` bytes of
    /// the body are sent, then the server waits `stall.1` before the rest.
    Page {
        status: u16,
        content_type: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        stall: Option<(usize, Duration)>,
    },
}

impl Reply {
    pub fn events(frames: Vec<String>) -> Reply {
        Reply::Events {
            frames,
            gap: Duration::ZERO,
            cut: false,
        }
    }

    /// `200` with this content type and body.
    pub fn page(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Page {
            status: 200,
            content_type: content_type.into(),
            headers: Vec::new(),
            body: body.into(),
            stall: None,
        }
    }

    /// A redirect (`status`, e.g. 301) to `location`.
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Page {
            status,
            content_type: "text/html".into(),
            headers: vec![("location".into(), location.into())],
            body: b"<p>moved</p>".to_vec(),
            stall: None,
        }
    }

    pub fn status(status: u16, body: impl Into<String>) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// A running mock server; stops when dropped.
pub struct MockServer {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// When the last byte of each frame was written, in order.
    pub written: Arc<Mutex<Vec<Instant>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    pub async fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let handler: Handler = Arc::new(handler);
        let written = Arc::new(Mutex::new(Vec::new()));
        let log = written.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = handler.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, handler, log).await;
                });
            }
        });
        MockServer { url, written, task }
    }
}

async fn serve(
    mut stream: TcpStream,
    handler: Handler,
    log: Arc<Mutex<Vec<Instant>>>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body =
        String::from_utf8_lossy(&buf[head_end..(head_end + length).min(buf.len())]).into_owned();
    let request = Request {
        method,
        path,
        headers,
        body,
    };
    match handler(&request) {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
        Reply::Page {
            status,
            content_type,
            headers,
            body,
            stall,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Mock\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            let (first, wait) = stall.unwrap_or((body.len(), Duration::ZERO));
            let first = first.min(body.len());
            stream.write_all(&body[..first]).await?;
            stream.flush().await?;
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            stream.write_all(&body[first..]).await?;
        }
        Reply::Events { frames, gap, cut } => {
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
                )
                .await?;
            for (i, frame) in frames.iter().enumerate() {
                if i > 0 && !gap.is_zero() {
                    tokio::time::sleep(gap).await;
                }
                let chunk = format!("{:x}\r\n{frame}\r\n", frame.len());
                stream.write_all(chunk.as_bytes()).await?;
                stream.flush().await?;
                log.lock().unwrap().push(Instant::now());
            }
            if !cut {
                stream.write_all(b"0\r\n\r\n").await?;
            }
        }
    }
    stream.flush().await?;
    stream.shutdown().await?;
    Ok(())
}

/// One SSE frame with an event name.
pub fn frame(event: &str, data: &serde_json::Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// One SSE frame with data only.
pub fn data_frame(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// What an API says of an image it is sent as base64 with a media type:
/// `None` when it takes it (a supported type, valid base64, bytes that are
/// that type), else its complaint. The mocks' own check, independent of
/// candor's.
pub fn image_problem(media_type: &str, data: &str) -> Option<String> {
    use base64::Engine as _;
    let supported = ["image/jpeg", "image/png", "image/gif", "image/webp"];
    if !supported.contains(&media_type) {
        return Some(format!(
            "media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp' (got {media_type:?})"
        ));
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        return Some("The image data is not valid base64.".into());
    };
    let actual = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        "image/jpeg"
    } else if bytes.starts_with(b"GIF8") {
        "image/gif"
    } else if bytes.len() > 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        "image/webp"
    } else {
        return Some("Could not process image".into());
    };
    (actual != media_type)
        .then(|| format!("Image does not match the provided media type {media_type}"))
}

/// [`image_problem`] for a `data:<type>;base64,<data>` URL (the OpenAI
/// APIs' way of sending an image inline).
pub fn data_url_problem(url: &str) -> Option<String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Some(format!("mock: expected a data: URL, got {url:.40}"));
    };
    let Some((media_type, data)) = rest.split_once(";base64,") else {
        return Some("Invalid 'image_url'. Expected a base64-encoded data URL.".into());
    };
    image_problem(media_type, data)
}
