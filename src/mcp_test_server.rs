//! The MCP server candor's tests and conformance scenarios start, as the
//! hidden subcommand `candor mcp-test-server` (behind the default cargo
//! feature `mcp-test-server`, so a shipped build can leave it out:
//! `--no-default-features`). Nothing to build by hand: the harness and the
//! tests start it through the candor binary they run.
//!
//! `candor mcp-test-server [--http 127.0.0.1:0 | --sse 127.0.0.1:0]
//!  [--log FILE] [--delay-ms N] [--hang] [--exit-at-start]`
//!
//! Over stdio by default; with `--http`, streamable HTTP (any path); with
//! `--sse`, the older HTTP+SSE transport (`GET /sse`, then `POST` where its
//! `endpoint` event says). The address it listens on is printed as
//! `listening <addr>` on stdout. Every
//! call it receives is appended to `--log` as a JSON line
//! (`{"tool", "arguments"}`; for `huge` and `garbage` also `{"requestId",
//! "for": <tool>}`), and so is a cancellation
//! (`{"cancelled": <tool>}`), so a test can say what the server saw.
//!
//! Tools: `echo {text}` (text), `lookup {key}` (annotated read-only),
//! `picture {}` (an image and a text), `fail {}` (`isError`), `slow
//! {seconds}` (waits, or until cancelled), `grow {}` (adds the tool `extra`
//! and says the list changed), `crash {}` (exits mid-call), `rich {}`
//! (structured content, a resource link, an embedded resource), `huge
//! {mib}` (answers that many MiB of text), `garbage {}` (answers its call
//! with a line that is not JSON, over stdio only, and nothing else). Tools
//! annotated for the permission tests: `lookup` (`readOnlyHint` and
//! `openWorldHint: false`), `fetch` (`readOnlyHint` only), `wipe`
//! (`readOnlyHint` and `destructiveHint`), `browse` (`readOnlyHint` and
//! `openWorldHint: true`). A `notifications/cancelled` is logged as
//! `{"cancelledId": <id>, "reason"}` when it is of a `huge` or `garbage`
//! call (and a `slow` call still running logs `{"cancelled": "slow"}`).
//! A prompt `greet {name}` and a resource `test://readme`.
//!
//! Tools that ask the user (MCP `elicitation/create`) during their call,
//! each logging `{"elicited": <tool>, "action", "content"}` (or `"error"`)
//! and answering with the same: `ask {}` (a form: `branch`), `ask_secret
//! {}` (a form: `user` and an `api_key`), `ask_page {}` (URL mode: a page
//! on `auth.example.com`); `ask_as {request, times, together}` (asks
//! the MCP `elicitation/create` params `request` as given, `times` times,
//! one after another or all at once when `together`, each answer logged
//! as `"elicited": "ask_as"`); and `ask_later {times}`, which answers at
//! once and asks 300 ms later, outside any call, `times` times (logged as
//! `"elicited": "ask_later"`).
//!
//! It is a fixture, not part of the agent: its stdout is its own protocol
//! (MCP over stdio, or the `listening` line), never candor's ACP stream.

#![allow(clippy::print_stdout, clippy::print_stderr)] // a process of its own: its stdout is MCP, its stderr its notes

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A 1×1 transparent PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[derive(Clone)]
struct TestServer {
    log: Option<PathBuf>,
    grown: Arc<AtomicBool>,
    /// The requests of `huge` and `garbage` calls, whose cancellation is
    /// logged by id.
    watched: Arc<std::sync::Mutex<Vec<rmcp::model::RequestId>>>,
}

fn from<T: DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl TestServer {
    fn note(&self, line: Value) {
        if let Some(path) = &self.log
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    /// Asks the user what `tool` asks, logs the answer and gives it.
    async fn elicit(&self, tool: &str, peer: &rmcp::Peer<RoleServer>) -> Value {
        let request = Self::question(tool);
        self.elicit_with(tool, request, peer).await
    }

    /// The question `tool` asks.
    fn question(tool: &str) -> Value {
        match tool {
            "ask_secret" => json!({
                "mode": "form",
                "message": "The deploy needs your credentials.",
                "requestedSchema": {"type": "object", "properties": {
                    "user": {"type": "string", "title": "User"},
                    "api_key": {"type": "string", "title": "API key", "description": "Your deploy token"}
                }, "required": ["user", "api_key"]}
            }),
            "ask_page" => json!({
                "mode": "url",
                "message": "Sign in to the deploy service.",
                "url": "https://auth.example.com/login?state=s1",
                "elicitationId": "page-1"
            }),
            _ => json!({
                "mode": "form",
                "message": "Which branch should I deploy?",
                "requestedSchema": {"type": "object", "properties": {
                    "branch": {"type": "string", "title": "Branch"}
                }, "required": ["branch"]}
            }),
        }
    }

    /// Asks the user `request` (MCP `elicitation/create` params) for
    /// `tool`, logs the answer and gives it.
    async fn elicit_with(
        &self,
        tool: &str,
        request: Value,
        peer: &rmcp::Peer<RoleServer>,
    ) -> Value {
        let answer = match from::<rmcp::model::ElicitRequestParams>(request) {
            Ok(params) => match peer.create_elicitation(params).await {
                Ok(result) => json!({"action": result.action, "content": result.content}),
                Err(e) => json!({"error": e.to_string()}),
            },
            Err(e) => json!({"error": e.message}),
        };
        let mut line = json!({"elicited": tool});
        if let (Some(line), Some(answer)) = (line.as_object_mut(), answer.as_object()) {
            line.extend(answer.clone());
        }
        self.note(line);
        answer
    }

    /// `ask_as {request, times, together}`: asks `request` `times` times,
    /// one after another or all at once.
    async fn ask_as(&self, args: &Value, peer: &rmcp::Peer<RoleServer>) -> Value {
        let request = args.get("request").cloned().unwrap_or(json!({}));
        let times = args.get("times").and_then(Value::as_u64).unwrap_or(1);
        let asks = (0..times).map(|_| self.elicit_with("ask_as", request.clone(), peer));
        let answers: Vec<Value> = if args.get("together").and_then(Value::as_bool) == Some(true) {
            futures_util::future::join_all(asks).await
        } else {
            let mut answers = Vec::new();
            for ask in asks {
                answers.push(ask.await);
            }
            answers
        };
        json!({"content": [{"type": "text", "text": format!("asked {} times", answers.len())}]})
    }

    fn tools(&self) -> Value {
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let empty = json!({"type": "object", "properties": {}});
        let mut tools = vec![
            json!({"name": "echo", "description": "Says the text back", "inputSchema": text}),
            json!({"name": "lookup", "description": "Looks a key up", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}, "annotations": {"title": "Look up", "readOnlyHint": true, "openWorldHint": false}}),
            json!({"name": "fetch", "description": "Fetches a URL", "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}, "annotations": {"readOnlyHint": true}}),
            json!({"name": "wipe", "description": "Reads, it says", "inputSchema": empty, "annotations": {"readOnlyHint": true, "destructiveHint": true, "openWorldHint": false}}),
            json!({"name": "browse", "description": "Reads the web", "inputSchema": empty, "annotations": {"readOnlyHint": true, "openWorldHint": true}}),
            json!({"name": "huge", "description": "Answers at length", "inputSchema": {"type": "object", "properties": {"mib": {"type": "number"}}}}),
            json!({"name": "garbage", "description": "Answers what is not JSON", "inputSchema": empty}),
            json!({"name": "picture", "description": "Draws a picture", "inputSchema": empty}),
            json!({"name": "fail", "description": "Always fails", "inputSchema": empty}),
            json!({"name": "slow", "description": "Takes its time", "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}}),
            json!({"name": "grow", "description": "Adds a tool", "inputSchema": empty}),
            json!({"name": "crash", "description": "Exits mid-call", "inputSchema": empty}),
            json!({"name": "rich", "description": "Answers in every shape", "inputSchema": empty}),
            json!({"name": "ask", "description": "Asks the user which branch", "inputSchema": empty}),
            json!({"name": "ask_secret", "description": "Asks the user for an API key", "inputSchema": empty}),
            json!({"name": "ask_page", "description": "Asks the user to sign in on a page", "inputSchema": empty}),
            json!({"name": "ask_later", "description": "Asks the user after its call", "inputSchema": {"type": "object", "properties": {"times": {"type": "integer"}}}}),
            json!({"name": "ask_as", "description": "Asks the user what it is given", "inputSchema": {"type": "object", "properties": {"request": {"type": "object"}, "times": {"type": "integer"}, "together": {"type": "boolean"}}, "required": ["request"]}}),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(
                json!({"name": "extra", "description": "Arrived later", "inputSchema": empty}),
            );
        }
        json!({ "tools": tools })
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        from(self.tools())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request
            .arguments
            .clone()
            .map(Value::Object)
            .unwrap_or(json!({}));
        let name = request.name.to_string();
        self.note(json!({"tool": name, "arguments": args}));
        if name == "huge" || name == "garbage" {
            self.note(json!({"requestId": context.id, "for": name}));
            self.watched
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(context.id.clone());
        }
        let result: Value = match name.as_str() {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                json!({"content": [{"type": "text", "text": format!("echo: {text}")}]})
            }
            "lookup" | "extra" | "fetch" | "wipe" | "browse" => {
                json!({"content": [{"type": "text", "text": format!("{name} ok")}]})
            }
            "picture" => json!({"content": [
                {"type": "text", "text": "a picture"},
                {"type": "image", "data": PNG, "mimeType": "image/png"}
            ]}),
            "fail" => {
                json!({"content": [{"type": "text", "text": "it failed on purpose"}], "isError": true})
            }
            "slow" => {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(30.0);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
                    _ = context.ct.cancelled() => {
                        self.note(json!({"cancelled": "slow"}));
                        return Err(ErrorData::internal_error("cancelled", None));
                    }
                }
                json!({"content": [{"type": "text", "text": "slow done"}]})
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                json!({"content": [{"type": "text", "text": "grown"}]})
            }
            "crash" => {
                eprintln!("mcp_test_server: crashing as asked");
                std::process::exit(3);
            }
            "rich" => json!({
                "content": [
                    {"type": "text", "text": "rich text"},
                    {"type": "resource_link", "uri": "test://readme", "name": "readme", "mimeType": "text/plain"},
                    {"type": "resource", "resource": {"uri": "test://inline", "mimeType": "text/plain", "text": "inline body"}}
                ],
                "structuredContent": {"answer": 42}
            }),
            "ask" | "ask_secret" | "ask_page" => {
                let mut asked = self.elicit(&name, &context.peer).await;
                if name == "ask_secret" {
                    // What a careful server says back: not the secret.
                    asked = json!({"action": asked["action"]});
                }
                json!({"content": [{"type": "text", "text": format!("asked: {asked}")}]})
            }
            "ask_later" => {
                let server = self.clone();
                let peer = context.peer.clone();
                let times = args.get("times").and_then(Value::as_u64).unwrap_or(1);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    for _ in 0..times {
                        server.elicit("ask_later", &peer).await;
                    }
                });
                json!({"content": [{"type": "text", "text": "will ask later"}]})
            }
            "ask_as" => self.ask_as(&args, &context.peer).await,
            "huge" => {
                let mib = args.get("mib").and_then(Value::as_f64).unwrap_or(17.0);
                let text = "x".repeat((mib * 1024.0 * 1024.0) as usize);
                json!({"content": [{"type": "text", "text": text}]})
            }
            "garbage" => {
                // The answer's id, then what no JSON parser takes; written
                // past rmcp (nothing else is being written: the call waits).
                let id = serde_json::to_string(&context.id).unwrap_or_default();
                {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(
                        out,
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"cut"
                    );
                    let _ = out.flush();
                }
                context.ct.cancelled().await;
                return Err(ErrorData::internal_error("cancelled", None));
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(from::<CallToolResult>(result)?.into())
    }

    async fn on_cancelled(
        &self,
        notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        let watched = self
            .watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|id| Some(id) == notification.request_id.as_ref());
        if watched {
            self.note(
                json!({"cancelledId": notification.request_id, "reason": notification.reason}),
            );
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from(json!({"prompts": [{
            "name": "greet",
            "description": "Greets someone",
            "arguments": [{"name": "name", "description": "who", "required": true}]
        }]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request
            .arguments
            .clone()
            .map(Value::Object)
            .unwrap_or(json!({}));
        self.note(json!({"prompt": request.name, "arguments": args}));
        let who = args.get("name").and_then(Value::as_str).unwrap_or("nobody");
        let result: GetPromptResult = from(json!({
            "description": "a greeting",
            "messages": [{"role": "user", "content": {"type": "text", "text": format!("Say hello to {who}.")}}]
        }))?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        from(
            json!({"resources": [{"uri": "test://readme", "name": "readme", "mimeType": "text/plain"}]}),
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.note(json!({"resource": request.uri}));
        let result: ReadResourceResult = from(json!({"contents": [
            {"uri": request.uri, "mimeType": "text/plain", "text": "The readme of the test server."}
        ]}))?;
        Ok(result.into())
    }
}

/// The error of a test server that cannot serve.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Serves as `args` say (the words after `candor mcp-test-server`) until
/// the client goes away.
pub async fn run(args: Vec<String>) -> Result<(), Error> {
    let mut args = args.into_iter();
    let mut http = None;
    let mut sse = None;
    let mut log = None;
    let mut delay = 0;
    let mut hang = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = args.next(),
            "--sse" => sse = args.next(),
            "--log" => log = args.next().map(PathBuf::from),
            "--delay-ms" => delay = args.next().and_then(|d| d.parse().ok()).unwrap_or(0),
            "--hang" => hang = true,
            "--exit-at-start" => {
                eprintln!("mcp_test_server: refusing to start (--exit-at-start)");
                std::process::exit(1);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    eprintln!("mcp_test_server: starting");
    if hang {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let server = TestServer {
        log,
        grown: Arc::new(AtomicBool::new(false)),
        watched: Arc::default(),
    };
    server.note(json!({"started": std::process::id()}));
    match (http, sse) {
        (Some(addr), _) => serve_http(server, &addr).await?,
        (None, Some(addr)) => serve_sse(server, &addr).await?,
        (None, None) => {
            let running = server.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
        }
    }
    Ok(())
}

async fn serve_http(server: TestServer, addr: &str) -> Result<(), Error> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let service: Arc<StreamableHttpService<TestServer, LocalSessionManager>> =
        Arc::new(StreamableHttpService::new(
            move || Ok(server.clone()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        ));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await;
        });
    }
}

/// The server's side of one SSE connection: messages POSTed in, events out.
struct SseSide {
    incoming: tokio::sync::mpsc::Receiver<rmcp::model::ClientJsonRpcMessage>,
    outgoing: tokio::sync::mpsc::Sender<String>,
}

impl rmcp::transport::Transport<RoleServer> for SseSide {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: rmcp::model::ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.outgoing.clone();
        async move {
            let line = serde_json::to_string(&item).map_err(std::io::Error::other)?;
            out.send(format!("event: message\ndata: {line}\n\n"))
                .await
                .map_err(std::io::Error::other)
        }
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::model::ClientJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

type Sessions = Arc<
    std::sync::Mutex<
        std::collections::HashMap<
            u64,
            tokio::sync::mpsc::Sender<rmcp::model::ClientJsonRpcMessage>,
        >,
    >,
>;

/// HTTP+SSE, by hand over TCP (HTTP/1.1, one request a connection).
async fn serve_sse(server: TestServer, addr: &str) -> Result<(), Error> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let sessions: Sessions = Arc::default();
    let mut next = 0u64;
    loop {
        let (stream, _) = listener.accept().await?;
        next += 1;
        let id = next;
        let sessions = sessions.clone();
        let server = server.clone();
        tokio::spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut reader = BufReader::new(read);
            let mut line = String::new();
            if reader.read_line(&mut line).await.is_err() {
                return;
            }
            let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            let mut length = 0;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).await.unwrap_or(0) == 0 || header.trim().is_empty()
                {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            if line.starts_with("GET") {
                let (to_server, incoming) = tokio::sync::mpsc::channel(64);
                let (outgoing, mut events) = tokio::sync::mpsc::channel::<String>(64);
                sessions
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(id, to_server);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\nevent: endpoint\ndata: /message?session={id}\n\n"
                );
                if write.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                tokio::spawn(async move {
                    if let Ok(running) = server.serve(SseSide { incoming, outgoing }).await {
                        let _ = running.waiting().await;
                    }
                });
                while let Some(event) = events.recv().await {
                    if write.write_all(event.as_bytes()).await.is_err() {
                        break;
                    }
                }
                sessions
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&id);
            } else {
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body).await;
                let session = target
                    .split("session=")
                    .nth(1)
                    .and_then(|n| n.parse::<u64>().ok());
                let sender = session.and_then(|s| {
                    sessions
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get(&s)
                        .cloned()
                });
                let status = match (sender, serde_json::from_slice(&body)) {
                    (Some(sender), Ok(message)) => {
                        let _ = sender.send(message).await;
                        "202 Accepted"
                    }
                    _ => "400 Bad Request",
                };
                let _ = write
                    .write_all(
                        format!(
                            "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        )
                        .as_bytes(),
                    )
                    .await;
            }
        });
    }
}
