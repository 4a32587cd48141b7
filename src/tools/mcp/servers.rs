//! MCP servers: started with the session, their tools offered to the model
//! as `mcp__<server>__<tool>`, called through the same settle, cards, log
//! and replay as candor's own tools (`tools::ToolInput::Mcp`).
//!
//! [`Servers`] is a session's set. [`Servers::start`] starts every server at
//! once, each on a task of its own, and returns at once: the `session/new`
//! answer never waits for a server. A prompt waits for those still starting
//! up to a bound ([`Servers::wait_ready`]), then goes on without them. A
//! server that fails to start, exits or stops answering is a state
//! ([`State`], shown by `/mcp` with its stderr's tail) and a notice, never a
//! failed session. `notifications/tools/list_changed` re-reads its tools.
//!
//! Stdio servers are started by `tools::exec` (their own process group,
//! provider keys withheld, killed with everything they started when the
//! session ends); HTTP servers are spoken to with reqwest, through rmcp's
//! streamable HTTP client, or over the older HTTP+SSE transport (`sse`,
//! candor's own: rmcp dropped it).
//!
//! Tool names are `names`' (`mcp__<server>__<tool>`, sanitised, a name
//! already taken by an earlier tool, servers in configured order and tools
//! in the server's order, suffixed with its digest).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation, Tool as McpToolDef};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::names::name_for;
use super::spec::{ServerSpec, Transport};

use crate::sync::lock;

/// How long a server may take to answer `initialize` unless its entry says.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one call may take unless the server's entry says.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// How much of a server's stderr is kept (its end).
const STDERR_TAIL: usize = 8 * 1024;
/// Most tools taken from one server.
const MAX_TOOLS: usize = 500;

/// A server's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Starting,
    Ready,
    /// Did not start: why.
    Failed(String),
    /// Was running and ended: how.
    Exited(String),
}

/// One MCP tool as the session offers it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The name the model calls it by (`mcp__<server>__<tool>`, sanitised).
    pub exposed: String,
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    /// `annotations.title`, or the tool's `title`.
    pub title: Option<String>,
    /// The hints of its `annotations`, as the server sent them.
    pub annotations: crate::event_log::McpHints,
    /// What candor takes it to be (`super::annotations`).
    pub reading: super::annotations::Reading,
}

/// A server's prompt, offered as the command `/mcp__<server>__<prompt>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    pub command: String,
    pub server: String,
    pub prompt: String,
    pub description: String,
    /// Argument names, in order; required ones first as the server lists.
    pub arguments: Vec<String>,
}

/// What `/mcp` shows of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub name: String,
    pub source: String,
    pub transport: String,
    pub state: State,
    pub tools: usize,
    pub stderr_tail: String,
    /// How long it took to be ready.
    pub ready_after: Option<Duration>,
}

/// How a call ended.
#[derive(Debug)]
pub enum CallOutcome {
    /// The server's `CallToolResult`, as JSON (MCP's wire shape).
    Done(Value),
    /// It could not be made or did not finish: why.
    Failed(String),
    /// The user cancelled (the server was sent `notifications/cancelled`).
    Cancelled,
}

#[derive(Debug)]
struct Entry {
    spec: ServerSpec,
    live: Mutex<Live>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// What the user is to be told (a question refused), until taken.
    notices: Mutex<Vec<String>>,
    /// Questions asked so far (their ids).
    asked: std::sync::atomic::AtomicU64,
    /// Questions refused outside its calls so far (the user is told of the
    /// first few: `elicit::TOLD_OUTSIDE`).
    refused_outside: std::sync::atomic::AtomicUsize,
}

#[derive(Debug)]
struct Live {
    state: State,
    peer: Option<Peer<RoleClient>>,
    tools: Vec<McpToolDef>,
    prompts: Vec<rmcp::model::Prompt>,
    ready_after: Option<Duration>,
    /// Reported to the user (a notice) since it last changed.
    reported: bool,
    /// Its tools are read again before the next model request: it was
    /// called, and says its list can change.
    relist: bool,
    /// The calls candor waits on: a question the server asks goes to
    /// the latest one's card (`elicit`).
    asking: Vec<Arc<super::elicit::Asker>>,
}

/// A session's MCP servers (cheap to clone; every clone is the same set).
#[derive(Debug, Clone, Default)]
pub struct Servers {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    entries: Mutex<Vec<Arc<Entry>>>,
    /// Bumped on every state or tool list change.
    changed: watch::Sender<u64>,
    /// Ends every server.
    stop: CancellationToken,
    shadowed: Mutex<Vec<(String, String, String)>>,
    /// Whether the user lets annotations decide (`mcp_trust_annotations`).
    trust_annotations: bool,
    /// Whether servers are told candor passes pages (URL elicitation):
    /// the editor declared `elicitation.url`.
    pages: std::sync::atomic::AtomicBool,
}

impl Default for Inner {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Inner {
    fn new(trust_annotations: bool) -> Self {
        Self {
            entries: Mutex::new(Vec::new()),
            changed: watch::channel(0).0,
            stop: CancellationToken::new(),
            shadowed: Mutex::new(Vec::new()),
            trust_annotations,
            pages: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Servers {
    /// An empty set whose servers' annotations are taken at their word
    /// (for those the user configured) when `trust_annotations`, else for
    /// none (`super::annotations`).
    pub fn new(trust_annotations: bool) -> Self {
        Self {
            inner: Arc::new(Inner::new(trust_annotations)),
        }
    }

    /// Tells the servers started from now on that candor passes their
    /// pages to the editor (URL elicitation), as well as forms.
    pub fn passing_pages(self, pages: bool) -> Self {
        self.inner
            .pages
            .store(pages, std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// Starts `specs` (each on its own task; returns at once). Servers
    /// already in the set by name are left as they are.
    pub fn start(&self, specs: Vec<ServerSpec>, cwd: &std::path::Path) {
        for spec in specs {
            // `mcp__a__b__c` must say which server it is: `mcp__a` rules
            // would otherwise cover a server named `a__b`.
            let refused = (spec.name.is_empty() || spec.name.contains("__"))
                .then(|| "an MCP server's name may not be empty or contain \"__\"".to_owned());
            let entry = {
                let mut entries = lock(&self.inner.entries);
                if entries.iter().any(|e| e.spec.name == spec.name) {
                    continue;
                }
                let entry = Arc::new(Entry {
                    spec,
                    live: Mutex::new(Live {
                        state: refused.clone().map_or(State::Starting, State::Failed),
                        peer: None,
                        tools: Vec::new(),
                        prompts: Vec::new(),
                        ready_after: None,
                        reported: false,
                        relist: false,
                        asking: Vec::new(),
                    }),
                    stderr: Arc::new(Mutex::new(Vec::new())),
                    notices: Mutex::new(Vec::new()),
                    asked: std::sync::atomic::AtomicU64::new(0),
                    refused_outside: std::sync::atomic::AtomicUsize::new(0),
                });
                entries.push(entry.clone());
                entry
            };
            if refused.is_some() {
                continue;
            }
            let stop = self.inner.stop.child_token();
            let handler = Handler {
                entry: entry.clone(),
                changed: self.inner.changed.clone(),
                pages: self.inner.pages.load(std::sync::atomic::Ordering::Relaxed),
            };
            tokio::spawn(run_server(entry, cwd.to_owned(), stop, handler));
        }
        self.bump();
    }

    /// Notified on every change of a server's state or tools.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Remembers the entries a stronger source shadowed, for `/mcp`.
    pub fn shadowed(&self, shadowed: Vec<(ServerSpec, super::spec::Source)>) {
        lock(&self.inner.shadowed).extend(
            shadowed
                .into_iter()
                .map(|(lost, won)| (lost.name, lost.source.describe(), won.describe())),
        );
    }

    /// `(name, the entry's source, the source that won)` of each entry a
    /// stronger source shadowed.
    pub fn shadowed_entries(&self) -> Vec<(String, String, String)> {
        lock(&self.inner.shadowed).clone()
    }

    /// Ends every server (and whatever they started).
    pub fn stop(&self) {
        self.inner.stop.cancel();
    }

    fn bump(&self) {
        self.inner.changed.send_modify(|n| *n += 1);
    }

    fn entries(&self) -> Vec<Arc<Entry>> {
        lock(&self.inner.entries).clone()
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        lock(&self.inner.entries).is_empty()
    }

    /// Waits until no server is starting, `limit` passed or `cancel`
    /// fired; the names of those still starting.
    pub async fn wait_ready(&self, limit: Duration, cancel: &CancellationToken) -> Vec<String> {
        let mut changes = self.inner.changed.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let starting: Vec<String> = self
                .entries()
                .iter()
                .filter(|e| lock(&e.live).state == State::Starting)
                .map(|e| e.spec.name.clone())
                .collect();
            if starting.is_empty() {
                return starting;
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return starting },
                _ = tokio::time::sleep_until(deadline) => return starting,
                _ = cancel.cancelled() => return starting,
            }
        }
    }

    /// Servers that failed or exited since last asked, with why (each is
    /// told once).
    pub fn take_failures(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for entry in self.entries() {
            let mut live = lock(&entry.live);
            if live.reported {
                continue;
            }
            match &live.state {
                State::Failed(why) => out.push((
                    entry.spec.name.clone(),
                    format!("did not start: {why}{}", tail_note(&entry)),
                )),
                State::Exited(why) => out.push((
                    entry.spec.name.clone(),
                    format!("stopped: {why}{}", tail_note(&entry)),
                )),
                State::Starting | State::Ready => continue,
            }
            live.reported = true;
        }
        out
    }

    /// What the user is to be told of the servers since last asked (a
    /// question refused), each once.
    pub fn take_notices(&self) -> Vec<String> {
        self.entries()
            .iter()
            .flat_map(|e| std::mem::take(&mut *lock(&e.notices)))
            .collect()
    }

    /// Reads again the tools of servers called since (those that say
    /// their list can change): a call may have changed it, and its
    /// `list_changed` may still be on its way.
    pub async fn refresh(&self, cancel: &CancellationToken) {
        for entry in self.entries() {
            if cancel.is_cancelled() {
                return;
            }
            let peer = {
                let mut live = lock(&entry.live);
                if !std::mem::take(&mut live.relist) || live.state != State::Ready {
                    continue;
                }
                live.peer.clone()
            };
            let Some(peer) = peer else { continue };
            let listed = tokio::select! {
                listed = tokio::time::timeout(Duration::from_secs(5), peer.list_all_tools()) => listed,
                _ = cancel.cancelled() => return,
            };
            if let Ok(Ok(tools)) = listed {
                lock(&entry.live).tools = tools;
            }
        }
    }

    /// Every ready server's tools, named (see the module docs).
    pub fn tools(&self) -> Vec<McpTool> {
        let mut out: Vec<McpTool> = Vec::new();
        for entry in self.entries() {
            let live = lock(&entry.live);
            if live.state != State::Ready {
                continue;
            }
            for def in live.tools.iter().take(MAX_TOOLS) {
                let original = format!("mcp__{}__{}", entry.spec.name, def.name);
                let Some(exposed) = name_for(&original, |n| out.iter().any(|t| t.exposed == n))
                else {
                    continue;
                };
                let annotations = def.annotations.as_ref();
                let hints = crate::event_log::McpHints {
                    read_only_hint: annotations.and_then(|a| a.read_only_hint),
                    destructive_hint: annotations.and_then(|a| a.destructive_hint),
                    idempotent_hint: annotations.and_then(|a| a.idempotent_hint),
                    open_world_hint: annotations.and_then(|a| a.open_world_hint),
                };
                let reading = super::annotations::read(&hints, &self.trust(&entry.spec.source));
                out.push(McpTool {
                    exposed,
                    server: entry.spec.name.clone(),
                    tool: def.name.to_string(),
                    description: crate::text::shorten(
                        def.description.as_deref().unwrap_or_default(),
                        4096,
                    ),
                    input_schema: Value::Object((*def.input_schema).clone()),
                    title: annotations
                        .and_then(|a| a.title.clone())
                        .or_else(|| def.title.clone()),
                    annotations: hints,
                    reading,
                });
            }
        }
        out
    }

    /// Whether the annotations of a server from `source` are taken at
    /// their word.
    fn trust(&self, source: &super::spec::Source) -> super::annotations::Trust {
        use super::annotations::Trust;
        match source {
            _ if !self.inner.trust_annotations => Trust::Off,
            super::spec::Source::Project(path) => Trust::Project(path.clone()),
            _ => Trust::Taken,
        }
    }

    /// The tool the model calls `exposed`, if a ready server has it.
    pub fn tool(&self, exposed: &str) -> Option<McpTool> {
        self.tools().into_iter().find(|t| t.exposed == exposed)
    }

    /// Every ready server's prompts, as commands.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        let mut out: Vec<McpPrompt> = Vec::new();
        for entry in self.entries() {
            let live = lock(&entry.live);
            if live.state != State::Ready {
                continue;
            }
            for p in live.prompts.iter().take(MAX_TOOLS) {
                let original = format!("mcp__{}__{}", entry.spec.name, p.name);
                let Some(command) = name_for(&original, |n| out.iter().any(|o| o.command == n))
                else {
                    continue;
                };
                out.push(McpPrompt {
                    command,
                    server: entry.spec.name.clone(),
                    prompt: p.name.to_string(),
                    description: p.description.clone().unwrap_or_default(),
                    arguments: p
                        .arguments
                        .iter()
                        .flatten()
                        .map(|a| a.name.clone())
                        .collect(),
                });
            }
        }
        out
    }

    /// Each server's state, for `/mcp`.
    pub fn status(&self) -> Vec<Status> {
        self.entries()
            .iter()
            .map(|e| {
                let live = lock(&e.live);
                Status {
                    name: e.spec.name.clone(),
                    source: e.spec.source.describe(),
                    transport: e.spec.transport.describe(),
                    state: live.state.clone(),
                    tools: live.tools.len(),
                    stderr_tail: tail(e),
                    ready_after: live.ready_after,
                }
            })
            .collect()
    }

    fn peer(&self, server: &str) -> Result<(Peer<RoleClient>, Duration), String> {
        let entry = self
            .entries()
            .into_iter()
            .find(|e| e.spec.name == server)
            .ok_or_else(|| format!("there is no MCP server {server:?}"))?;
        let mut live = lock(&entry.live);
        let changes = live.peer.as_ref().is_some_and(|p| {
            p.peer_info()
                .and_then(|i| i.capabilities.tools.clone())
                .and_then(|t| t.list_changed)
                == Some(true)
        });
        live.relist |= changes;
        let timeout = entry.spec.tool_timeout.unwrap_or(CALL_TIMEOUT);
        match (&live.state, &live.peer) {
            (State::Ready, Some(peer)) => Ok((peer.clone(), timeout)),
            (State::Failed(why), _) => {
                Err(format!("the MCP server {server:?} did not start: {why}"))
            }
            (State::Exited(why), _) => Err(format!("the MCP server {server:?} stopped: {why}")),
            _ => Err(format!("the MCP server {server:?} is not ready")),
        }
    }

    /// Calls `tool` of `server` with `arguments`; a question the server
    /// asks meanwhile is refused. A cancel sends the server
    /// `notifications/cancelled` (rmcp does, for a request given up).
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        self.call_with(server, tool, arguments, cancel, None).await
    }

    /// [`call`](Self::call), with the way to the user a question the
    /// server asks while it runs goes to (`elicit`); the call ends only
    /// once its questions' ends are recorded.
    pub async fn call_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        asker: Option<Arc<super::elicit::Asker>>,
    ) -> CallOutcome {
        let entry = self.entries().into_iter().find(|e| e.spec.name == server);
        if let (Some(entry), Some(asker)) = (&entry, &asker) {
            lock(&entry.live).asking.push(asker.clone());
        }
        let outcome = self.call_inner(server, tool, arguments, cancel).await;
        if let (Some(entry), Some(asker)) = (&entry, &asker) {
            lock(&entry.live).asking.retain(|a| !Arc::ptr_eq(a, asker));
            asker.close().await;
        }
        outcome
    }

    async fn call_inner(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        let (peer, timeout) = match self.peer(server) {
            Ok(p) => p,
            Err(why) => return CallOutcome::Failed(why),
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        tokio::select! {
            result = tokio::time::timeout(timeout, peer.call_tool(params)) => match result {
                Ok(Ok(result)) => match serde_json::to_value(&result) {
                    Ok(v) => CallOutcome::Done(v),
                    Err(e) => CallOutcome::Failed(format!("the server's answer could not be read: {e}")),
                },
                Ok(Err(e)) => CallOutcome::Failed(failure(&peer, server, "the call", &e).await),
                Err(_) => CallOutcome::Failed(format!(
                    "the MCP server {server:?} did not answer within {}",
                    humantime::format_duration(timeout)
                )),
            },
            _ = cancel.cancelled() => CallOutcome::Cancelled,
        }
    }

    /// Expands a server's prompt: its messages' text, in order.
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let (peer, timeout) = self.peer(server)?;
        let mut params = rmcp::model::GetPromptRequestParams::new(prompt.to_owned());
        params.arguments = Some(arguments);
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, peer.get_prompt(params)) => r,
            _ = cancel.cancelled() => return Err("cancelled".into()),
        };
        let result = match result {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(failure(&peer, server, "the prompt", &e).await),
            Err(_) => return Err(format!("the MCP server {server:?} did not answer")),
        };
        let value = serde_json::to_value(&result).map_err(|e| e.to_string())?;
        let texts: Vec<String> = value
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("content"))
            .map(content_text)
            .collect();
        Ok(texts.join("\n\n"))
    }

    /// Reads a resource (`resources/read`) as text.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let (peer, timeout) = self.peer(server)?;
        let params = rmcp::model::ReadResourceRequestParams::new(uri.to_owned());
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, peer.read_resource(params)) => r,
            _ = cancel.cancelled() => return Err("cancelled".into()),
        };
        match result {
            Ok(Ok(r)) => {
                let value = serde_json::to_value(&r).map_err(|e| e.to_string())?;
                Ok(value
                    .get("contents")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        c.get("text")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .unwrap_or_else(|| "(binary content)".to_owned())
                    })
                    .collect::<Vec<_>>()
                    .join("\n"))
            }
            Ok(Err(e)) => Err(failure(&peer, server, "the read", &e).await),
            Err(_) => Err(format!("the MCP server {server:?} did not answer")),
        }
    }

    /// The server whose resources include `uri`, if one lists it.
    pub async fn resource_server(&self, uri: &str, cancel: &CancellationToken) -> Option<String> {
        for entry in self.entries() {
            if cancel.is_cancelled() {
                return None;
            }
            let peer = {
                let live = lock(&entry.live);
                live.peer.clone().filter(|_| live.state == State::Ready)
            };
            let Some(peer) = peer else { continue };
            let listed = tokio::select! {
                listed = tokio::time::timeout(Duration::from_secs(5), peer.list_all_resources()) => listed,
                _ = cancel.cancelled() => return None,
            };
            if let Ok(Ok(resources)) = listed
                && resources.iter().any(|r| r.uri == uri)
            {
                return Some(entry.spec.name.clone());
            }
        }
        None
    }
}

/// Why a request to `server` failed, for people. When candor refused the
/// answer (`refusal`), the server is first told the request was given up
/// (`notifications/cancelled`, waited for at most 5 s).
async fn failure(
    peer: &Peer<RoleClient>,
    server: &str,
    what: &str,
    error: &rmcp::service::ServiceError,
) -> String {
    let Some((id, why)) = super::refusal::refused(error) else {
        return format!("the MCP server {server:?} failed {what}: {error}");
    };
    let reason = format!("candor cannot take the answer: {why}");
    let param = rmcp::model::CancelledNotificationParam::new(Some(id), Some(reason));
    let told = tokio::time::timeout(Duration::from_secs(5), peer.notify_cancelled(param)).await;
    let told = if matches!(told, Ok(Ok(()))) {
        "and told the server so"
    } else {
        "(the server could not be told)"
    };
    format!("the MCP server {server:?} sent {why}; candor gave {what} up {told}")
}

/// The text of an MCP content block (a placeholder for what is not text).
fn content_text(c: &Value) -> String {
    match c.get("type").and_then(Value::as_str) {
        Some("text") => c
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        Some("resource") => c
            .get("resource")
            .and_then(|r| r.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("(a resource)")
            .to_owned(),
        Some(other) => format!("({other})"),
        None => String::new(),
    }
}

fn tail(entry: &Entry) -> String {
    let bytes = lock(&entry.stderr).clone();
    String::from_utf8_lossy(&bytes).trim_end().to_owned()
}

fn tail_note(entry: &Entry) -> String {
    let tail = tail(entry);
    let last = tail.lines().last().unwrap_or_default();
    if last.is_empty() {
        String::new()
    } else {
        format!(" (its stderr ends: {})", crate::text::shorten(last, 300))
    }
}

/// Candor as an MCP client: re-reads the tools when told they changed,
/// passes a question asked during a call to the user (`elicit`).
#[derive(Clone)]
struct Handler {
    entry: Arc<Entry>,
    changed: watch::Sender<u64>,
    /// Servers are told candor passes pages (URL elicitation) too.
    pages: bool,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        use rmcp::model::{
            ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
        };
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("candor", env!("CARGO_PKG_VERSION"));
        let mut elicitation =
            ElicitationCapability::new().with_form(FormElicitationCapability::new());
        if self.pages {
            elicitation = elicitation.with_url(UrlElicitationCapability::new());
        }
        info.capabilities.elicitation = Some(elicitation);
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let server = &self.entry.spec.name;
        let asker = lock(&self.entry.live).asking.last().cloned();
        let Some(asker) = asker else {
            let n = self
                .entry
                .refused_outside
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            let (error, notice) = super::elicit::outside_call(server, &request, n);
            if let Some(notice) = notice {
                lock(&self.entry.notices).push(notice);
                self.changed.send_modify(|n| *n += 1);
            }
            return Err(error);
        };
        let n = self
            .entry
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        super::elicit::answer(server, format!("{server}-{n}"), asker, request, &context.ct).await
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        match tokio::time::timeout(Duration::from_secs(10), context.peer.list_all_tools()).await {
            Ok(Ok(tools)) => {
                lock(&self.entry.live).tools = tools;
                self.changed.send_modify(|n| *n += 1);
            }
            _ => {
                tracing::warn!(server = %self.entry.spec.name, "could not re-read the tools of an MCP server")
            }
        }
    }
}

/// One server's life: start, list, serve until it ends or the session
/// does.
async fn run_server(
    entry: Arc<Entry>,
    cwd: std::path::PathBuf,
    stop: CancellationToken,
    handler: Handler,
) {
    let began = Instant::now();
    let changed = handler.changed.clone();
    let limit = entry.spec.startup_timeout.unwrap_or(START_TIMEOUT);
    let set = |state: State| {
        let mut live = lock(&entry.live);
        live.state = state;
        live.reported = false;
        drop(live);
        changed.send_modify(|n| *n += 1);
    };
    let connected = tokio::select! {
        c = tokio::time::timeout(limit, connect(&entry, handler, &cwd)) => match c {
            Ok(c) => c,
            Err(_) => Err(format!("no answer to initialize within {}", humantime::format_duration(limit))),
        },
        _ = stop.cancelled() => return,
    };
    let (service, mut group) = match connected {
        Ok(c) => c,
        Err(why) => {
            set(State::Failed(why));
            return;
        }
    };
    let peer = service.peer().clone();
    let listing = tokio::time::timeout(limit, async {
        let tools = peer.list_all_tools().await;
        let prompts = match peer
            .peer_info()
            .and_then(|i| i.capabilities.prompts.clone())
        {
            Some(_) => peer.list_all_prompts().await.unwrap_or_default(),
            None => Vec::new(),
        };
        (tools, prompts)
    });
    let listed = tokio::select! {
        listed = listing => listed,
        // The session ended while the server was being listed.
        _ = stop.cancelled() => return,
    };
    match listed {
        Ok((Ok(tools), prompts)) => {
            let mut live = lock(&entry.live);
            live.tools = tools;
            live.prompts = prompts;
            live.peer = Some(peer);
            live.ready_after = Some(began.elapsed());
            drop(live);
            set(State::Ready);
        }
        Ok((Err(e), _)) => {
            set(State::Failed(format!("tools/list failed: {e}")));
            return;
        }
        Err(_) => {
            set(State::Failed("no answer to tools/list".into()));
            return;
        }
    }
    let cancel = service.cancellation_token();
    let why = tokio::select! {
        quit = service.waiting() => match quit {
            Ok(reason) => format!("{reason:?}"),
            Err(e) => e.to_string(),
        },
        _ = stop.cancelled() => {
            cancel.cancel();
            String::new()
        }
    };
    if !stop.is_cancelled() {
        // A process that ended says how; else what the connection said.
        let status = group
            .as_mut()
            .and_then(|g| g.child_mut().try_wait().ok().flatten());
        lock(&entry.live).peer = None;
        set(State::Exited(
            status.map_or(why, crate::tools::exec::describe_status),
        ));
    }
    // Dropping the group kills whatever of the server is left.
    drop(group);
}

type Service = RunningService<RoleClient, Handler>;

/// Starts the server's process (stdio) or reaches its URL, and does MCP's
/// `initialize`.
async fn connect(
    entry: &Arc<Entry>,
    handler: Handler,
    cwd: &std::path::Path,
) -> Result<(Service, Option<crate::tools::exec::ProcessGroup>), String> {
    match &entry.spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd: own_cwd,
        } => {
            let dir = own_cwd.as_deref().unwrap_or(cwd);
            let cmd = crate::tools::exec::mcp_server(command, args, env, dir);
            let mut group = crate::tools::exec::ProcessGroup::spawn(cmd)
                .map_err(|e| format!("could not start {command:?}: {e}"))?;
            let child = group.child_mut();
            let (Some(stdout), Some(stdin), stderr) =
                (child.stdout.take(), child.stdin.take(), child.stderr.take())
            else {
                return Err("its pipes could not be set up".into());
            };
            if let Some(mut stderr) = stderr {
                let keep = entry.stderr.clone();
                let name = entry.spec.name.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stderr.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        tracing::debug!(server = %name, stderr = %String::from_utf8_lossy(&buf[..n]), "MCP server");
                        let mut kept = lock(&keep);
                        kept.extend_from_slice(&buf[..n]);
                        let excess = kept.len().saturating_sub(STDERR_TAIL);
                        kept.drain(..excess);
                    }
                });
            }
            let transport = super::stdio::Stdio::new(&entry.spec.name, stdout, stdin);
            let service = handler.serve(transport).await.map_err(initialize_error)?;
            Ok((service, Some(group)))
        }
        Transport::Http { url, headers } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let custom = header_map(headers)?
                .into_iter()
                .filter_map(|(k, v)| Some((k?, v)))
                .collect();
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            let client = super::http::Client(http_client()?);
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let service = handler.serve(transport).await.map_err(initialize_error)?;
            Ok((service, None))
        }
        Transport::Sse { url, headers } => {
            let transport = super::sse::connect(http_client()?, url, header_map(headers)?).await?;
            let service = handler.serve(transport).await.map_err(initialize_error)?;
            Ok((service, None))
        }
    }
}

/// The HTTP client MCP servers are reached with (rustls, as the providers).
fn http_client() -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())
}

/// A server entry's headers, checked.
fn header_map(headers: &[(String, String)]) -> Result<reqwest::header::HeaderMap, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header {name:?}: {e}"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| format!("header {name}: {e}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

fn initialize_error(e: rmcp::service::ClientInitializeError) -> String {
    format!("initialize failed: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_name_that_would_blur_which_server_a_rule_names_is_refused() {
        let servers = Servers::default();
        let spec = ServerSpec {
            name: "github__x".into(),
            source: super::super::Source::Editor,
            transport: Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: Vec::new(),
            },
            startup_timeout: None,
            tool_timeout: None,
        };
        servers.start(vec![spec], std::path::Path::new("/"));
        let status = servers.status();
        assert!(matches!(&status[0].state, State::Failed(why) if why.contains("__")));
    }
}
