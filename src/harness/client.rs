//! The harness's ACP client: one agent process, every frame checked.
//!
//! [`Conn`] writes requests and notifications to the agent, reads its
//! frames, validates each one against the schema ([`super::schema`]),
//! applies every `session/update` to a client model that records broken
//! invariants, and answers the agent's requests the way a real editor
//! would: permission prompts from the scenario's answers, `fs/*` on the
//! real files of the scenario's directory, `terminal/*` with real
//! processes. It never panics on what the agent sends: everything odd
//! becomes a [`Violation`].

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::schema::{Schemas, Side};
use crate::tools::exec::{self, ProcessGroup};

/// Something a well-behaved agent would not have sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Which invariant (a short, stable name).
    pub rule: &'static str,
    pub detail: String,
    pub frame: Option<Value>,
}

/// The invariants the client model checks, with their report titles.
pub const RULES: [(&str, &str); 8] = [
    (
        "schema",
        "every frame matches the ACP v1 schema (per method)",
    ),
    ("framing", "stdout carries only JSON-RPC frames"),
    (
        "tool-call-first",
        "a tool_call comes before any update for its id",
    ),
    ("forward-status", "tool call statuses only move forward"),
    (
        "terminal-before-response",
        "every card is terminal before the prompt's response",
    ),
    (
        "no-updates-after-response",
        "no turn updates while no prompt is running",
    ),
    ("one-response", "exactly one response per request"),
    (
        "client-capabilities",
        "the agent only calls client methods the client advertised",
    ),
];

/// What the client advertised.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caps {
    pub read: bool,
    pub write: bool,
    pub terminal: bool,
    /// `elicitation.form`: `elicitation/create` forms.
    pub form: bool,
}

impl Caps {
    pub fn from_client_capabilities(caps: &Value) -> Self {
        Self {
            read: caps["fs"]["readTextFile"] == true,
            write: caps["fs"]["writeTextFile"] == true,
            terminal: caps["terminal"] == true,
            form: caps["elicitation"]["form"].is_object(),
        }
    }
}

/// A card as the client shows it.
#[derive(Debug, Clone)]
pub struct Card {
    pub session: String,
    pub id: String,
    pub state: Value,
    pub statuses: Vec<String>,
}

impl Card {
    fn status(&self) -> &str {
        self.state["status"].as_str().unwrap_or("pending")
    }

    fn terminal(&self) -> bool {
        matches!(self.status(), "completed" | "failed")
    }

    /// The card as scenarios match it.
    pub fn view(&self) -> Value {
        let mut v = self.state.clone();
        let text: Vec<&str> = v["content"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter_map(|b| b["content"]["text"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let text = text.join("\n");
        if let Some(obj) = v.as_object_mut() {
            obj.remove("sessionUpdate");
            obj.insert("status".into(), json!(self.status()));
            obj.insert("statuses".into(), json!(self.statuses));
            obj.insert("text".into(), json!(text));
        }
        v
    }
}

fn rank(status: &str) -> Option<u8> {
    match status {
        "pending" => Some(0),
        "in_progress" => Some(1),
        "completed" | "failed" => Some(2),
        _ => None,
    }
}

#[derive(Debug, Clone)]
struct Pending {
    method: String,
    session: Option<String>,
}

enum Incoming {
    Frame(Value),
    NotJson(String),
    Eof,
}

/// A terminal the agent created through `terminal/create`.
struct Terminal {
    group: Arc<tokio::sync::Mutex<Option<ProcessGroup>>>,
    output: Arc<Mutex<TermOutput>>,
    exit: watch::Receiver<Option<Value>>,
}

#[derive(Default)]
struct TermOutput {
    bytes: Vec<u8>,
    truncated: bool,
    limit: Option<usize>,
}

impl TermOutput {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if let Some(limit) = self.limit
            && self.bytes.len() > limit
        {
            // Keep the end, cut at a character boundary.
            let mut cut = self.bytes.len() - limit;
            while cut < self.bytes.len() && (self.bytes[cut] & 0xC0) == 0x80 {
                cut += 1;
            }
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }
}

/// A connection to one agent process.
pub struct Conn {
    writer: Option<mpsc::UnboundedSender<String>>,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    child: ProcessGroup,
    schemas: Arc<Schemas>,
    next_id: u64,
    pending: HashMap<String, Pending>,
    answered: HashMap<String, Value>,
    /// Every frame, both directions: `("<-", frame)` from the agent.
    pub transcript: Vec<(&'static str, Value)>,
    pub violations: Vec<Violation>,
    /// Every `session/update` as `(session, update)`, in order.
    pub updates: Vec<(String, Value)>,
    /// Cards in order of their `tool_call`.
    pub cards: Vec<Card>,
    /// Permission requests received (params), in order.
    pub permission_requests: Vec<Value>,
    /// Every request the agent made of the client, `{method, params}`, in order.
    pub client_requests: Vec<Value>,
    permission_answers: VecDeque<String>,
    /// Results for the next `elicitation/create` requests.
    elicitation_answers: VecDeque<Value>,
    running_prompts: HashMap<String, usize>,
    /// Subagent sessions (announced by a `subagent_update` on their
    /// parent): a child's turn updates belong to its parent's prompt.
    parents: HashMap<String, String>,
    pub caps: Caps,
    pub cwd: PathBuf,
    /// Open editor buffers, by absolute path: `fs/read_text_file` returns
    /// these (unsaved changes) rather than the disk.
    pub buffers: HashMap<PathBuf, String>,
    terminals: HashMap<String, Terminal>,
    next_terminal: u64,
    eof: bool,
    /// Frames the agent sent, counted for the report.
    pub frames_in: usize,
}

impl Conn {
    /// Starts the agent process (`cmd` from [`exec::agent`]).
    pub fn start(
        cmd: tokio::process::Command,
        schemas: Arc<Schemas>,
        cwd: PathBuf,
    ) -> std::io::Result<Self> {
        let mut child = ProcessGroup::spawn(cmd)?;
        let stdin = child.child_mut().stdin.take();
        let stdout = child.child_mut().stdout.take();
        let (Some(mut stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(std::io::Error::other(
                "the agent's stdin and stdout must be piped",
            ));
        };
        let (writer, mut lines) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                let mut frame = line.into_bytes();
                frame.push(b'\n');
                if stdin.write_all(&frame).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            // Dropping stdin closes the agent's input.
        });
        let (tx, incoming) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Incoming::Eof);
                        break;
                    }
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line);
                        let text = text.trim_end_matches(['\n', '\r']);
                        if text.trim().is_empty() {
                            continue;
                        }
                        let item = match serde_json::from_str::<Value>(text) {
                            Ok(v) => Incoming::Frame(v),
                            Err(_) => Incoming::NotJson(text.to_owned()),
                        };
                        if tx.send(item).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Self {
            writer: Some(writer),
            incoming,
            child,
            schemas,
            next_id: 0,
            pending: HashMap::new(),
            answered: HashMap::new(),
            transcript: Vec::new(),
            violations: Vec::new(),
            updates: Vec::new(),
            cards: Vec::new(),
            permission_requests: Vec::new(),
            client_requests: Vec::new(),
            permission_answers: VecDeque::new(),
            elicitation_answers: VecDeque::new(),
            running_prompts: HashMap::new(),
            parents: HashMap::new(),
            caps: Caps::default(),
            cwd,
            buffers: HashMap::new(),
            terminals: HashMap::new(),
            next_terminal: 0,
            eof: false,
            frames_in: 0,
        })
    }

    fn violate(&mut self, rule: &'static str, detail: impl Into<String>, frame: Option<&Value>) {
        self.violations.push(Violation {
            rule,
            detail: detail.into(),
            frame: frame.cloned(),
        });
    }

    fn write(&mut self, frame: Value) {
        self.transcript.push(("->", frame.clone()));
        if let Some(w) = &self.writer {
            let _ = w.send(frame.to_string());
        }
    }

    /// Sends a request; `checked` validates its params first (steps that
    /// send the scenario's verbatim input are not checked).
    pub fn request(&mut self, method: &str, params: Value, checked: bool) -> Value {
        if checked && let Err(e) = self.schemas.check_params(method, &params) {
            let frame = json!({"method": method, "params": params});
            self.violate(
                "schema",
                format!("the harness sent invalid params: {e}"),
                Some(&frame),
            );
        }
        let id = json!(self.next_id);
        self.next_id += 1;
        let session = params["sessionId"].as_str().map(str::to_owned);
        // A load replays a conversation before it answers: like a prompt,
        // its updates come before its response and its cards end by then.
        // The client starts the session's view afresh.
        if method == "session/load"
            && let Some(s) = &session
        {
            self.cards.retain(|c| &c.session != s);
        }
        if matches!(
            method,
            "session/prompt" | "session/load" | "_session/steering"
        ) && let Some(s) = &session
        {
            *self.running_prompts.entry(s.clone()).or_default() += 1;
        }
        self.pending.insert(
            id.to_string(),
            Pending {
                method: method.to_owned(),
                session,
            },
        );
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.write(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a raw line. If it is a request, its response is expected.
    pub fn send_raw(&mut self, line: &str) -> Option<Value> {
        let parsed: Option<Value> = serde_json::from_str(line).ok();
        let id = parsed.as_ref().and_then(|v| {
            let is_request = v.get("result").is_none() && v.get("error").is_none();
            v.get("id")
                .filter(|id| (id.is_number() || id.is_string()) && is_request)
                .cloned()
        });
        if let Some(id) = &id {
            self.pending.insert(
                id.to_string(),
                Pending {
                    method: "<raw>".into(),
                    session: None,
                },
            );
        }
        self.transcript
            .push(("->", parsed.unwrap_or_else(|| json!(line))));
        if let Some(w) = &self.writer {
            let _ = w.send(line.to_owned());
        }
        id
    }

    /// Queues answers for the next permission requests.
    pub fn answer_permissions(&mut self, answers: &[String]) {
        self.permission_answers = answers.iter().cloned().collect();
    }

    /// Queues results for the next `elicitation/create` requests.
    pub fn answer_elicitations(&mut self, answers: &[Value]) {
        self.elicitation_answers = answers.iter().cloned().collect();
    }

    /// Closes the agent's input.
    pub fn close_input(&mut self) {
        self.writer = None;
    }

    pub fn is_eof(&self) -> bool {
        self.eof
    }

    /// Handles incoming frames until `deadline`; returns `false` at EOF.
    pub async fn pump_until(&mut self, deadline: Instant) -> bool {
        while !self.eof {
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Err(_) => return true,
                Ok(item) => {
                    self.take(item).await;
                }
            }
        }
        false
    }

    /// Handles one incoming item, waiting at most until `deadline`.
    /// Returns the frame handled, if any.
    pub async fn pump_one(&mut self, deadline: Instant) -> Option<Value> {
        if self.eof {
            return None;
        }
        match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
            Err(_) => None,
            Ok(item) => self.take(item).await,
        }
    }

    async fn take(&mut self, item: Option<Incoming>) -> Option<Value> {
        match item {
            None | Some(Incoming::Eof) => {
                self.eof = true;
                None
            }
            Some(Incoming::NotJson(line)) => {
                self.transcript.push(("<-", json!(line)));
                self.violate(
                    "framing",
                    format!("a stdout line that is not JSON: {line:?}"),
                    None,
                );
                None
            }
            Some(Incoming::Frame(frame)) => {
                self.frames_in += 1;
                self.transcript.push(("<-", frame.clone()));
                self.handle(&frame).await;
                Some(frame)
            }
        }
    }

    /// The response to `id`, if it has arrived (consumed).
    pub fn take_response(&mut self, id: &Value) -> Option<Value> {
        self.answered.remove(&id.to_string())
    }

    /// Waits for the response to `id` until `deadline`.
    pub async fn response(&mut self, id: &Value, deadline: Instant) -> Option<Value> {
        loop {
            if let Some(r) = self.take_response(id) {
                return Some(r);
            }
            self.pump_one(deadline).await?;
        }
    }

    async fn handle(&mut self, frame: &Value) {
        if frame["jsonrpc"] != "2.0" {
            self.violate(
                "framing",
                "a frame without \"jsonrpc\": \"2.0\"",
                Some(frame),
            );
        }
        let method = frame
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (method, frame.get("id")) {
            (Some(method), Some(id)) => self.on_request(&method, id.clone(), frame).await,
            (Some(method), None) => self.on_notification(&method, frame),
            (None, Some(id)) => self.on_response(id, frame),
            (None, None) => self.violate(
                "framing",
                "neither request, notification nor response",
                Some(frame),
            ),
        }
    }

    fn on_response(&mut self, id: &Value, frame: &Value) {
        if id.is_null() {
            // An error about a line the agent could not read an id from.
            match frame.get("error") {
                Some(error) => {
                    if let Err(e) = self.schemas.check_error(error) {
                        self.violate("schema", e, Some(frame));
                    }
                }
                None => self.violate("schema", "a success response with a null id", Some(frame)),
            }
            self.answered.insert(Value::Null.to_string(), frame.clone());
            return;
        }
        let Some(pending) = self.pending.remove(&id.to_string()) else {
            self.violate(
                "one-response",
                format!("a response to id {id}, which is not awaiting one"),
                Some(frame),
            );
            return;
        };
        let check = if pending.method == "<raw>" {
            match frame.get("error") {
                Some(error) => self.schemas.check_error(error),
                None => Ok(()),
            }
        } else {
            self.schemas.check_response(&pending.method, frame)
        };
        if let Err(e) = check {
            self.violate("schema", e, Some(frame));
        }
        if matches!(
            pending.method.as_str(),
            "session/prompt" | "session/load" | "_session/steering"
        ) && let Some(session) = &pending.session
        {
            let running = self.running_prompts.entry(session.clone()).or_default();
            *running = running.saturating_sub(1);
            if *running == 0 {
                let open: Vec<String> = self
                    .cards
                    .iter()
                    .filter(|c| self.root(&c.session) == session.as_str() && !c.terminal())
                    .map(|c| format!("{} ({})", c.id, c.status()))
                    .collect();
                if !open.is_empty() {
                    self.violate(
                        "terminal-before-response",
                        format!(
                            "cards still open when the prompt was answered: {}",
                            open.join(", ")
                        ),
                        Some(frame),
                    );
                }
            }
        }
        self.answered.insert(id.to_string(), frame.clone());
    }

    fn on_notification(&mut self, method: &str, frame: &Value) {
        let params = frame.get("params").cloned().unwrap_or(Value::Null);
        match self.schemas.side(method) {
            Some(Side::Client | Side::Protocol) => {
                if let Err(e) = self.schemas.check_params(method, &params) {
                    self.violate("schema", e, Some(frame));
                }
            }
            Some(Side::Agent) => self.violate(
                "schema",
                format!("{method} is sent by clients, not agents"),
                Some(frame),
            ),
            None => return, // extension notifications are the agent's business
        }
        if method == "session/update" {
            let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
            self.apply_update(&session, &params["update"], frame);
        }
    }

    /// The session the user opened that `session` is, or is a subagent of.
    fn root<'a>(&'a self, mut session: &'a str) -> &'a str {
        for _ in 0..8 {
            match self.parents.get(session) {
                Some(parent) => session = parent,
                None => break,
            }
        }
        session
    }

    fn apply_update(&mut self, session: &str, update: &Value, frame: &Value) {
        self.updates.push((session.to_owned(), update.clone()));
        let kind = update["sessionUpdate"].as_str().unwrap_or("");
        if kind == "subagent_update"
            && let Some(child) = update["sessionId"].as_str()
        {
            self.parents.insert(child.to_owned(), session.to_owned());
        }
        let root = self.root(session).to_owned();
        let turn_update = matches!(
            kind,
            "tool_call"
                | "tool_call_update"
                | "agent_message_chunk"
                | "agent_thought_chunk"
                | "plan"
        );
        if turn_update && self.running_prompts.get(&root).copied().unwrap_or(0) == 0 {
            self.violate(
                "no-updates-after-response",
                format!("{kind} while no prompt is running"),
                Some(frame),
            );
        }
        let id = update["toolCallId"].as_str().unwrap_or_default().to_owned();
        match kind {
            "tool_call" => {
                let status = update["status"].as_str().unwrap_or("pending").to_owned();
                if rank(&status).is_none() {
                    self.violate(
                        "forward-status",
                        format!("unknown status {status:?}"),
                        Some(frame),
                    );
                }
                if let Some(card) = self
                    .cards
                    .iter_mut()
                    .find(|c| c.session == session && c.id == id)
                {
                    // Zed treats a repeated tool_call as an upsert.
                    merge(&mut card.state, update);
                    card.statuses.push(status);
                } else {
                    self.cards.push(Card {
                        session: session.to_owned(),
                        id,
                        state: update.clone(),
                        statuses: vec![status],
                    });
                }
            }
            "tool_call_update" => {
                let Some(index) = self
                    .cards
                    .iter()
                    .position(|c| c.session == session && c.id == id)
                else {
                    self.violate(
                        "tool-call-first",
                        format!("tool_call_update for {id}, which never had a tool_call (Zed shows \"Tool call not found\")"),
                        Some(frame),
                    );
                    return;
                };
                let card = &self.cards[index];
                let before = card.status().to_owned();
                let was_terminal = card.terminal();
                let after = update["status"].as_str().map(str::to_owned);
                let mut problem = None;
                if was_terminal {
                    problem = Some(format!("an update for {id} after it was {before}"));
                } else if let Some(after) = &after {
                    match (rank(&before), rank(after)) {
                        (_, None) => problem = Some(format!("unknown status {after:?}")),
                        (Some(b), Some(a)) if a < b => {
                            problem = Some(format!("{id} went back from {before} to {after}"))
                        }
                        _ => {}
                    }
                }
                if let Some(p) = problem {
                    self.violate("forward-status", p, Some(frame));
                }
                let card = &mut self.cards[index];
                merge(&mut card.state, update);
                if let Some(after) = after {
                    card.statuses.push(after);
                }
            }
            _ => {}
        }
    }

    async fn on_request(&mut self, method: &str, id: Value, frame: &Value) {
        let params = frame.get("params").cloned().unwrap_or(Value::Null);
        self.client_requests
            .push(json!({"method": method, "params": params}));
        match self.schemas.side(method) {
            Some(Side::Client) => {
                if let Err(e) = self.schemas.check_params(method, &params) {
                    self.violate("schema", e, Some(frame));
                }
            }
            _ => {
                self.reply(
                    &id,
                    Err(json!({"code": -32601, "message": format!("method not found: {method}")})),
                );
                return;
            }
        }
        let reply = match method {
            "session/request_permission" => self.on_permission(&params),
            "elicitation/create" => {
                if !self.caps.form {
                    self.violate(
                        "client-capabilities",
                        "elicitation/create without elicitation.form",
                        Some(frame),
                    );
                }
                // Nothing scripted: a careful client declines.
                Ok(self
                    .elicitation_answers
                    .pop_front()
                    .unwrap_or_else(|| json!({"action": "decline"})))
            }
            "fs/read_text_file" => {
                if self.caps.read {
                    read_text_file(&params, &self.buffers)
                } else {
                    self.violate(
                        "client-capabilities",
                        "fs/read_text_file without fs.readTextFile",
                        Some(frame),
                    );
                    Err(json!({"code": -32601, "message": "fs/read_text_file was not advertised"}))
                }
            }
            "fs/write_text_file" => {
                if self.caps.write {
                    write_text_file(&params, &mut self.buffers)
                } else {
                    self.violate(
                        "client-capabilities",
                        "fs/write_text_file without fs.writeTextFile",
                        Some(frame),
                    );
                    Err(json!({"code": -32601, "message": "fs/write_text_file was not advertised"}))
                }
            }
            m if m.starts_with("terminal/") => {
                if !self.caps.terminal {
                    self.violate(
                        "client-capabilities",
                        format!("{m} without the terminal capability"),
                        Some(frame),
                    );
                    Err(json!({"code": -32601, "message": "terminal/* was not advertised"}))
                } else if m == "terminal/wait_for_exit" {
                    // Answered when the process exits, without holding up other frames.
                    return self.wait_for_exit(id, &params);
                } else {
                    self.on_terminal(m, &params).await
                }
            }
            _ => Err(json!({"code": -32601, "message": format!("method not found: {method}")})),
        };
        self.reply(&id, reply);
    }

    fn reply(&mut self, id: &Value, reply: Result<Value, Value>) {
        let frame = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.write(frame);
    }

    fn on_permission(&mut self, params: &Value) -> Result<Value, Value> {
        self.permission_requests.push(params.clone());
        let Some(answer) = self.permission_answers.pop_front() else {
            // Nothing scripted: a careful client says no.
            return Ok(json!({"outcome": {"outcome": "cancelled"}}));
        };
        match answer.as_str() {
            "cancelled" => Ok(json!({"outcome": {"outcome": "cancelled"}})),
            "cancel-turn" => {
                if let Some(session) = params["sessionId"].as_str() {
                    self.notify("session/cancel", json!({"sessionId": session}));
                }
                Ok(json!({"outcome": {"outcome": "cancelled"}}))
            }
            kind => {
                let option = params["options"]
                    .as_array()
                    .and_then(|opts| opts.iter().find(|o| o["kind"] == kind))
                    .and_then(|o| o["optionId"].as_str());
                match option {
                    Some(option) => {
                        Ok(json!({"outcome": {"outcome": "selected", "optionId": option}}))
                    }
                    None => Ok(json!({"outcome": {"outcome": "cancelled"}})),
                }
            }
        }
    }

    async fn on_terminal(&mut self, method: &str, params: &Value) -> Result<Value, Value> {
        let not_found = || Err(json!({"code": -32002, "message": "no such terminal"}));
        match method {
            "terminal/create" => self.create_terminal(params),
            "terminal/output" => {
                let Some(t) = self
                    .terminals
                    .get(params["terminalId"].as_str().unwrap_or(""))
                else {
                    return not_found();
                };
                let out = t.output.lock().unwrap_or_else(PoisonError::into_inner);
                let mut result = json!({
                    "output": String::from_utf8_lossy(&out.bytes),
                    "truncated": out.truncated,
                });
                if let Some(exit) = t.exit.borrow().clone() {
                    result["exitStatus"] = exit;
                }
                Ok(result)
            }
            "terminal/kill" => {
                let Some(t) = self
                    .terminals
                    .get(params["terminalId"].as_str().unwrap_or(""))
                else {
                    return not_found();
                };
                if let Some(group) = t.group.lock().await.as_ref() {
                    group.signal(nix::sys::signal::Signal::SIGKILL);
                }
                Ok(json!({}))
            }
            "terminal/release" => {
                let Some(t) = self
                    .terminals
                    .remove(params["terminalId"].as_str().unwrap_or(""))
                else {
                    return not_found();
                };
                if let Some(group) = t.group.lock().await.as_ref() {
                    group.signal(nix::sys::signal::Signal::SIGKILL);
                }
                Ok(json!({}))
            }
            _ => Err(json!({"code": -32601, "message": format!("method not found: {method}")})),
        }
    }

    fn create_terminal(&mut self, params: &Value) -> Result<Value, Value> {
        let command = params["command"].as_str().unwrap_or_default();
        let args: Vec<String> = params["args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let cwd = params["cwd"]
            .as_str()
            .map(PathBuf::from)
            .unwrap_or_else(|| self.cwd.clone());
        let mut cmd = exec::program(command, &args, &cwd);
        if let Some(env) = params["env"].as_array() {
            for var in env {
                if let (Some(k), Some(v)) = (var["name"].as_str(), var["value"].as_str()) {
                    cmd.env(k, v);
                }
            }
        }
        let mut group = ProcessGroup::spawn(cmd).map_err(
            |e| json!({"code": -32603, "message": format!("cannot start {command}: {e}")}),
        )?;
        let stdout = group.child_mut().stdout.take();
        let stderr = group.child_mut().stderr.take();
        let output = Arc::new(Mutex::new(TermOutput {
            limit: params["outputByteLimit"]
                .as_u64()
                .and_then(|l| usize::try_from(l).ok()),
            ..TermOutput::default()
        }));
        let (exit_tx, exit) = watch::channel(None);
        let group = Arc::new(tokio::sync::Mutex::new(Some(group)));
        let (out2, group2) = (output.clone(), group.clone());
        tokio::spawn(async move {
            let pipes = async {
                let read_all = |mut r: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                                out: Arc<Mutex<TermOutput>>| async move {
                    let mut buf = vec![0u8; 8192];
                    while let Ok(n) = r.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        out.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(&buf[..n]);
                    }
                };
                let a = async {
                    if let Some(s) = stdout {
                        read_all(Box::new(s), out2.clone()).await;
                    }
                };
                let b = async {
                    if let Some(s) = stderr {
                        read_all(Box::new(s), out2.clone()).await;
                    }
                };
                tokio::join!(a, b);
            };
            pipes.await;
            let status = {
                let mut guard = group2.lock().await;
                match guard.as_mut() {
                    Some(g) => g.child_mut().wait().await.ok(),
                    None => None,
                }
            };
            use std::os::unix::process::ExitStatusExt;
            let value = match status {
                Some(s) => match (s.code(), s.signal()) {
                    (Some(code), _) => json!({"exitCode": code}),
                    (None, Some(sig)) => json!({"signal": exec::signal_name(sig)}),
                    _ => json!({}),
                },
                None => json!({}),
            };
            let _ = exit_tx.send(Some(value));
        });
        self.next_terminal += 1;
        let id = format!("term-{}", self.next_terminal);
        self.terminals.insert(
            id.clone(),
            Terminal {
                group,
                output,
                exit,
            },
        );
        Ok(json!({"terminalId": id}))
    }

    fn wait_for_exit(&mut self, id: Value, params: &Value) {
        let Some(t) = self
            .terminals
            .get(params["terminalId"].as_str().unwrap_or(""))
        else {
            self.reply(
                &id,
                Err(json!({"code": -32002, "message": "no such terminal"})),
            );
            return;
        };
        let mut exit = t.exit.clone();
        let Some(writer) = self.writer.clone() else {
            return;
        };
        tokio::spawn(async move {
            let status = loop {
                if let Some(v) = exit.borrow().clone() {
                    break v;
                }
                if exit.changed().await.is_err() {
                    break json!({});
                }
            };
            let frame = json!({"jsonrpc": "2.0", "id": id, "result": status});
            let _ = writer.send(frame.to_string());
        });
    }

    /// Closes input, waits for the agent to exit (up to `within`), kills it
    /// otherwise, and returns its exit code if it exited by itself.
    pub async fn finish(&mut self, within: Duration) -> Option<i32> {
        self.close_input();
        let deadline = Instant::now() + within;
        self.pump_until(deadline).await;
        let exited = tokio::time::timeout_at(deadline, self.child.child_mut().wait()).await;
        for (_, t) in self.terminals.drain() {
            if let Some(group) = t.group.lock().await.as_ref() {
                group.signal(nix::sys::signal::Signal::SIGKILL);
            }
        }
        match exited {
            Ok(Ok(status)) => status.code(),
            _ => None,
        }
    }

    /// Requests still waiting for a response, with their methods.
    pub fn unanswered(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .pending
            .iter()
            .map(|(id, p)| format!("{} (id {id})", p.method))
            .collect();
        v.sort();
        v
    }
}

/// Shallow merge of an update into a card's state (fields replace).
fn merge(state: &mut Value, update: &Value) {
    if let (Some(s), Some(u)) = (state.as_object_mut(), update.as_object()) {
        for (k, v) in u {
            s.insert(k.clone(), v.clone());
        }
    }
}

/// Reads like an editor: an open buffer (unsaved changes included) wins
/// over the file on disk.
fn read_text_file(params: &Value, buffers: &HashMap<PathBuf, String>) -> Result<Value, Value> {
    let path = Path::new(params["path"].as_str().unwrap_or(""));
    if !path.is_absolute() {
        return Err(json!({"code": -32602, "message": "path must be absolute"}));
    }
    let text = match buffers.get(path) {
        Some(buffer) => buffer.clone(),
        None => std::fs::read_to_string(path)
            .map_err(|e| json!({"code": -32002, "message": format!("{}: {e}", path.display())}))?,
    };
    let line = params["line"].as_u64().unwrap_or(1).max(1) as usize;
    let limit = params["limit"].as_u64().map(|l| l as usize);
    let lines = text.split_inclusive('\n').skip(line - 1);
    let content: String = match limit {
        Some(n) => lines.take(n).collect(),
        None => lines.collect(),
    };
    Ok(json!({"content": content}))
}

/// Writes like an editor that saves: the buffer (if open) and the disk.
fn write_text_file(params: &Value, buffers: &mut HashMap<PathBuf, String>) -> Result<Value, Value> {
    let path = Path::new(params["path"].as_str().unwrap_or(""));
    if !path.is_absolute() {
        return Err(json!({"code": -32602, "message": "path must be absolute"}));
    }
    if let Some(buffer) = buffers.get_mut(path) {
        *buffer = params["content"].as_str().unwrap_or("").to_owned();
    }
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(path, params["content"].as_str().unwrap_or(""))
        .map_err(|e| json!({"code": -32603, "message": format!("{}: {e}", path.display())}))?;
    Ok(json!({}))
}
