//! Test support: a client connection to candor (in-process over duplex pipes,
//! or the built binary over real pipes) that validates every frame it
//! receives against the ACP schema and feeds every update to the client
//! model, plus helpers for scripts and temporary projects.

#![allow(dead_code)] // each test module uses a different part

pub(crate) mod mock_anthropic;
pub(crate) mod mock_http;
pub(crate) mod mock_openai;
pub(crate) mod model;
pub(crate) mod schema;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use candor::{Config, ProviderSetting};

pub(crate) use model::{Model, Thread};

/// The pending-table method of a raw line sent by a test.
const RAW: &str = "<raw line>";

/// How long a test waits for any one frame.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

type Reader = Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>;
type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// What is running on the other end.
enum Agent {
    InProcess {
        task: JoinHandle<()>,
        stop: Option<oneshot::Sender<()>>,
    },
    Process(tokio::process::Child),
}

/// A test client connected to candor.
pub struct Conn {
    tx: Option<Writer>,
    rx: Reader,
    agent: Agent,
    next_id: i64,
    /// Our requests awaiting a response: id → (method, session).
    pending: HashMap<String, (String, Option<String>)>,
    /// Ids that may get one more response than the requests sent under
    /// them (a test that reuses an id on purpose).
    extra_responses: std::collections::HashSet<String>,
    pub model: Model,
    /// Every frame received, in order.
    pub frames: Vec<Value>,
    /// Notifications received and not yet looked at by the test.
    pub notifications: Vec<Value>,
    /// Permission requests received (their params), in order.
    pub permission_requests: Vec<Value>,
    permission_answers: std::collections::VecDeque<String>,
    hold_permissions: bool,
    /// How long the client takes to answer a permission request (none: at
    /// once, as an editor that answers by itself).
    pub permission_delay: Option<Duration>,
    /// Results for the next `elicitation/create` requests, in order
    /// (`{"action": "decline"}` when none is left; `null`: left unanswered).
    pub elicitation_answers: std::collections::VecDeque<Value>,
    /// The `elicitation/create` requests received (their params).
    pub elicitations: Vec<Value>,
    /// The editor terminals candor created (`terminal/*`, once the test
    /// called [`Conn::run_terminals`]): each command as it ran, by id.
    pub terminals: HashMap<String, Terminal>,
    /// Whether `terminal/*` requests are answered (else left unanswered,
    /// as by an editor that never creates the terminal).
    run_terminals: bool,
    /// The environment used (home dir etc.), kept alive with the connection.
    pub env: TestEnv,
}

/// A command run for candor's `terminal/create`, as an editor runs it: the
/// program and arguments given, in the directory given, to its end.
pub struct Terminal {
    /// `[command, args…]` as candor sent them.
    pub argv: Vec<String>,
    pub output: String,
    pub exit_code: Option<i32>,
}

/// A temporary home (for logs) and project directory.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub script: Option<PathBuf>,
    /// `CANDOR_POLICY`.
    pub policy: Option<PathBuf>,
    /// Where the scripted model copies its requests (`CANDOR_CAPTURE`).
    pub capture: PathBuf,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        let capture = dir.path().join("requests.jsonl");
        Self {
            dir,
            home,
            project,
            script: None,
            policy: None,
            capture,
        }
    }

    /// With a policy file (hooks, permission rules, mode).
    pub fn with_policy(mut self, policy: Value) -> Self {
        let path = self.dir.path().join("policy.json");
        std::fs::write(&path, policy.to_string()).unwrap();
        self.policy = Some(path);
        self
    }

    /// The model requests the scripted model received, in order.
    pub fn model_requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.capture)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// With a scripted model playing `script`.
    pub fn scripted(script: Value) -> Self {
        let mut env = Self::new();
        let path = env.dir.path().join("script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        env.script = Some(path);
        env
    }

    pub fn config(&self) -> Config {
        let provider = match &self.script {
            Some(path) => ProviderSetting::Scripted {
                script: Some(path.clone()),
            },
            None => ProviderSetting::None,
        };
        let mut config = Config::new(self.home.clone(), provider);
        // As the built binary sees it with HOME at the test's directory.
        config.claude = Some(candor::config::ClaudeLocations {
            user_dir: Some(self.dir.path().join(".claude")),
            managed_dir: Some(self.dir.path().join("managed")),
            global_file: Some(self.dir.path().join(".claude.json")),
        });
        config.policy = self.policy.clone();
        config.capture = Some(self.capture.clone());
        // As `candor_command`: a mock model is asked only what a test scripts.
        config.env_settings.session_titles = Some("prompt".into());
        // The user's candor config file, where the binary reads it.
        config.user_settings = candor::config::Settings::load(&self.user_config());
        // The sandbox's launcher, as the server has it (its own binary).
        config.launcher = Some(env!("CARGO_BIN_EXE_candor").into());
        config
    }

    /// The user's candor config file (`$HOME/.config/candor/config.toml`).
    pub fn user_config(&self) -> PathBuf {
        self.dir.path().join(".config/candor/config.toml")
    }

    /// Writes the user's candor config file.
    pub fn with_user_config(self, toml: &str) -> Self {
        let path = self.user_config();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, toml).unwrap();
        self
    }

    /// With the sandbox turned off by the user (`[sandbox] mode =
    /// "full-access"`): for tests of what candor does with processes it
    /// does not confine (their pids are the host's).
    pub fn unsandboxed(self) -> Self {
        self.with_user_config("[sandbox]\nmode = \"full-access\"\n")
    }

    /// Writes a file in the project.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.project.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Marks the project trusted as Claude Code does (`~/.claude.json`), so
    /// its own settings apply without candor asking.
    pub fn trust_project(&self) {
        let trusted =
            json!({"projects": {self.project.to_string_lossy(): {"hasTrustDialogAccepted": true}}});
        std::fs::write(self.dir.path().join(".claude.json"), trusted.to_string()).unwrap();
    }

    /// The records a session's log holds whole, as JSON: what a candor
    /// killed by SIGKILL committed (a record it was writing then is a
    /// torn last line, which a load cuts).
    pub fn committed_log(&self, session: &str) -> Vec<Value> {
        let path = self.home.join("sessions").join(format!("{session}.jsonl"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let whole = text.rfind('\n').map_or("", |end| &text[..end]);
        whole
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The records of a session's log, as JSON.
    pub fn log(&self, session: &str) -> Vec<Value> {
        let path = self.home.join("sessions").join(format!("{session}.jsonl"));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Every notice candor showed on this connection, as its text: a
/// `notice` update's title and description, or an agent message marked
/// `> candor: …` (for a client without `session.notices`) with its marks
/// taken off. Fails on a notice sent as a thought.
pub fn told(conn: &Conn) -> Vec<String> {
    conn.notifications
        .iter()
        .filter_map(|n| {
            let u = &n["params"]["update"];
            let said = u["content"]["text"].as_str().unwrap_or("");
            match u["sessionUpdate"].as_str() {
                Some("agent_thought_chunk") => {
                    assert!(!said.starts_with("[candor]"), "a notice as a thought: {u}");
                    None
                }
                Some("agent_message_chunk") => unmark(said),
                Some("notice") => Some(match u["description"].as_str() {
                    Some(d) => format!("{}\n{d}", u["title"].as_str().unwrap_or("")),
                    None => u["title"].as_str().unwrap_or("").to_owned(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// The text of a notice shown as a marked agent message (`None` for any
/// other message).
pub fn unmark(message: &str) -> Option<String> {
    let quoted = message.trim_start_matches('\n').trim_end();
    let first = quoted.lines().next()?;
    let rest = ["> candor: ", "> candor (warning): ", "> candor (error): "]
        .iter()
        .find_map(|mark| first.strip_prefix(mark))?;
    let mut text = rest.to_owned();
    for line in quoted.lines().skip(1) {
        text.push('\n');
        text.push_str(
            line.strip_prefix("> ")
                .unwrap_or(line.trim_start_matches('>')),
        );
    }
    Some(text)
}

/// `candor audit <session> [--json]` against the state in `home`.
pub fn audit(home: &Path, session: &str, json: bool) -> String {
    #[allow(clippy::disallowed_methods)] // the test runs the binary under test
    let mut cmd = std::process::Command::new(candor_bin());
    cmd.args(["audit", session])
        .env("CANDOR_HOME", home)
        .env("RUST_LOG", "off");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The candor binary under test.
pub fn candor_bin() -> &'static str {
    env!("CARGO_BIN_EXE_candor")
}

/// The MCP test server's command: the candor binary under test, whose
/// hidden subcommand [`MCP_TEST_SERVER`] it is (`src/mcp_test_server.rs`).
pub fn mcp_test_server() -> PathBuf {
    PathBuf::from(candor_bin())
}

/// The first argument of every [`mcp_test_server`] command.
pub const MCP_TEST_SERVER: &str = "mcp-test-server";

/// A `tokio` command for the candor binary with a clean environment.
pub fn candor_command(env: &TestEnv) -> tokio::process::Command {
    candor_command_at(env, Path::new(candor_bin()))
}

/// [`candor_command`] for the candor binary at `program` (a copy or link
/// of the one under test, placed elsewhere).
#[allow(clippy::disallowed_methods)] // tests start the binary under test
pub fn candor_command_at(env: &TestEnv, program: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path())
        .env("CANDOR_HOME", &env.home)
        .env("CANDOR_CLAUDE_MANAGED_DIR", env.dir.path().join("managed"))
        .env("RUST_LOG", "debug")
        // Titles from the first prompt line: a test's mock model is asked
        // only what the test scripts (`titles.rs` turns this back on).
        .env("CANDOR_SESSION_TITLES", "prompt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(script) = &env.script {
        cmd.env("CANDOR_PROVIDER", "scripted")
            .env("CANDOR_SCRIPT", script);
    }
    if let Some(policy) = &env.policy {
        cmd.env("CANDOR_POLICY", policy);
    }
    cmd.env("CANDOR_CAPTURE", &env.capture);
    cmd
}

impl Conn {
    /// candor served in this process over in-memory pipes.
    pub fn in_process(env: TestEnv) -> Self {
        let config = env.config();
        Self::in_process_with(env, config)
    }

    /// Like [`in_process`](Self::in_process), with this configuration.
    pub fn in_process_with(env: TestEnv, config: candor::Config) -> Self {
        let (client_side, server_side) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_side);
        let (client_read, client_write) = tokio::io::split(client_side);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(candor::serve(
            server_read,
            server_write,
            config,
            async move {
                let _ = stopped.await;
            },
        ));
        Self::new(
            Box::new(client_write),
            Box::new(client_read),
            Agent::InProcess {
                task,
                stop: Some(stop),
            },
            env,
        )
    }

    /// The built binary over real pipes.
    pub fn spawn(env: TestEnv) -> Self {
        let cmd = candor_command(&env);
        Self::spawn_with(env, cmd)
    }

    pub fn spawn_with(env: TestEnv, mut cmd: tokio::process::Command) -> Self {
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        Self::new(
            Box::new(stdin),
            Box::new(stdout),
            Agent::Process(child),
            env,
        )
    }

    fn new(tx: Writer, rx: Box<dyn AsyncRead + Unpin + Send>, agent: Agent, env: TestEnv) -> Self {
        Self {
            tx: Some(tx),
            rx: BufReader::new(rx).lines(),
            agent,
            next_id: 0,
            pending: HashMap::new(),
            extra_responses: Default::default(),
            model: Model::default(),
            frames: Vec::new(),
            notifications: Vec::new(),
            permission_requests: Vec::new(),
            permission_answers: Default::default(),
            hold_permissions: false,
            permission_delay: None,
            elicitation_answers: Default::default(),
            elicitations: Vec::new(),
            terminals: HashMap::new(),
            run_terminals: false,
            env,
        }
    }

    /// From now on, answers `terminal/*` requests as an editor would (see
    /// `answer_terminal`); advertise `terminal` too.
    pub fn run_terminals(&mut self) {
        self.run_terminals = true;
    }

    /// Answers a `terminal/*` request as a (simple) editor: `create` runs
    /// the command to its end at once (stdout and stderr together, its
    /// environment as given), and the others report on it.
    async fn answer_terminal(&mut self, frame: &Value) {
        let params = &frame["params"];
        let id = params["terminalId"].as_str().unwrap_or("").to_owned();
        let method = frame["method"].as_str().unwrap_or("");
        let result = match method {
            "terminal/create" => {
                let command = params["command"].as_str().unwrap().to_owned();
                let args: Vec<String> = params["args"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default();
                #[allow(clippy::disallowed_methods)] // the test is the editor
                let mut cmd = tokio::process::Command::new(&command);
                cmd.args(&args).stdin(Stdio::null());
                if let Some(cwd) = params["cwd"].as_str() {
                    cmd.current_dir(cwd);
                }
                for var in params["env"].as_array().into_iter().flatten() {
                    cmd.env(
                        var["name"].as_str().unwrap(),
                        var["value"].as_str().unwrap(),
                    );
                }
                let out = cmd.output().await.unwrap();
                let id = format!("term-{}", self.terminals.len() + 1);
                let mut argv = vec![command];
                argv.extend(args);
                self.terminals.insert(
                    id.clone(),
                    Terminal {
                        argv,
                        output: format!(
                            "{}{}",
                            String::from_utf8_lossy(&out.stdout),
                            String::from_utf8_lossy(&out.stderr)
                        ),
                        exit_code: out.status.code(),
                    },
                );
                json!({ "terminalId": id })
            }
            "terminal/wait_for_exit" => {
                json!({"exitCode": self.terminals.get(&id).and_then(|t| t.exit_code)})
            }
            "terminal/output" => {
                let t = self.terminals.get(&id);
                json!({
                    "output": t.map(|t| t.output.clone()).unwrap_or_default(),
                    "truncated": false,
                    "exitStatus": {"exitCode": t.and_then(|t| t.exit_code)},
                })
            }
            // `terminal/kill`, `terminal/release`.
            _ => json!({}),
        };
        let reply = json!({"jsonrpc": "2.0", "id": frame["id"], "result": result});
        if self.tx.is_some() {
            self.send_raw(&reply.to_string()).await;
        }
    }

    /// Writes one raw line (no validation: for malformed input).
    pub async fn send_raw(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    /// Writes raw bytes followed by a newline. If they carry an id, a
    /// response to it is expected (whatever the line was).
    pub async fn send_bytes(&mut self, line: &[u8]) {
        for part in line.split(|&b| b == b'\n') {
            if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(part)
                && let Some(id) = obj.get("id").filter(|id| id.is_number() || id.is_string())
                && !obj.contains_key("result")
                && !obj.contains_key("error")
            {
                self.pending
                    .entry(id.to_string())
                    .or_insert((RAW.to_owned(), None));
            }
        }
        let tx = self.tx.as_mut().expect("input already closed");
        tx.write_all(line).await.unwrap();
        tx.write_all(b"\n").await.unwrap();
        tx.flush().await.unwrap();
    }

    /// Sends a second request under an id that is still running (an error
    /// answer to it is expected besides the first request's answer).
    pub async fn send_duplicate(&mut self, id: &Value, method: &str, params: Value) {
        self.extra_responses.insert(id.to_string());
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let tx = self.tx.as_mut().expect("input already closed");
        tx.write_all(line.to_string().as_bytes()).await.unwrap();
        tx.write_all(b"\n").await.unwrap();
        tx.flush().await.unwrap();
    }

    /// Sends a request (params validated against the schema) and returns its id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> Value {
        schema::schemas()
            .check_params(method, &params)
            .unwrap_or_else(|e| panic!("the test sent an invalid request: {e}"));
        self.send_request_unchecked(method, params).await
    }

    /// Sends a request without validating it (for bad-params tests).
    pub async fn send_request_unchecked(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        let session = params["sessionId"].as_str().map(str::to_owned);
        // A load replays a conversation: like a prompt, its updates come
        // before its response, and its cards are all terminal by then. So
        // does a steering message that opens a turn of its own.
        if matches!(
            method,
            "session/prompt" | "session/load" | "_session/steering"
        ) && let Some(s) = &session
        {
            self.model.prompt_sent(s);
        }
        self.pending
            .insert(id.to_string(), (method.to_owned(), session));
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&line.to_string()).await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        schema::schemas()
            .check_params(method, &params)
            .unwrap_or_else(|e| panic!("the test sent an invalid notification: {e}"));
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&line.to_string()).await;
    }

    /// The next frame, validated and applied to the model.
    pub async fn recv(&mut self) -> Value {
        self.try_recv(FRAME_TIMEOUT).await.unwrap_or_else(|| {
            panic!(
                "no frame from candor within {FRAME_TIMEOUT:?}; received so far: {:#?}",
                self.frames
            )
        })
    }

    /// The next frame within `within`, or `None` (also at end of output).
    pub async fn try_recv(&mut self, within: Duration) -> Option<Value> {
        let line = match tokio::time::timeout(within, self.rx.next_line()).await {
            Err(_) | Ok(Ok(None)) => return None,
            Ok(Ok(Some(line))) => line,
            Ok(Err(e)) => panic!("reading from candor failed: {e}"),
        };
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("candor wrote a line that is not JSON ({e}): {line:?}"));
        self.observe(&frame);
        self.frames.push(frame.clone());
        if frame["method"] == "session/request_permission" && frame.get("id").is_some() {
            self.answer_permission(&frame).await;
        }
        if self.run_terminals
            && frame["method"]
                .as_str()
                .is_some_and(|m| m.starts_with("terminal/"))
            && frame.get("id").is_some()
        {
            self.answer_terminal(&frame).await;
        }
        if frame["method"] == "elicitation/create" && frame.get("id").is_some() {
            self.elicitations.push(frame["params"].clone());
            let result = self
                .elicitation_answers
                .pop_front()
                .unwrap_or_else(|| json!({"action": "decline"}));
            let reply = json!({"jsonrpc": "2.0", "id": frame["id"], "result": result});
            // A `null` answer leaves the form open (a user who walked away).
            if self.tx.is_some() && !result.is_null() {
                self.send_raw(&reply.to_string()).await;
            }
        }
        Some(frame)
    }

    /// Answers a permission request like a user would: with the next
    /// scripted answer (default `allow_once`), recording the request.
    async fn answer_permission(&mut self, frame: &Value) {
        self.permission_requests.push(frame["params"].clone());
        if self.hold_permissions {
            return;
        }
        if let Some(delay) = self.permission_delay {
            // A person reading the prompt before answering.
            tokio::time::sleep(delay).await;
        }
        let answer = self
            .permission_answers
            .pop_front()
            .unwrap_or_else(|| "allow_once".into());
        let outcome = if answer == "cancelled" {
            json!({"outcome": "cancelled"})
        } else {
            // `name:<name>`: the option a person picks by what it says;
            // else the first of a kind, as an editor answering by itself.
            let option = frame["params"]["options"]
                .as_array()
                .and_then(|o| {
                    o.iter().find(|o| match answer.strip_prefix("name:") {
                        Some(name) => o["name"] == name,
                        None => o["kind"] == answer.as_str(),
                    })
                })
                .unwrap_or_else(|| panic!("no {answer} option in {frame}"));
            json!({"outcome": "selected", "optionId": option["optionId"]})
        };
        let reply = json!({"jsonrpc": "2.0", "id": frame["id"], "result": {"outcome": outcome}});
        if self.tx.is_some() {
            self.send_raw(&reply.to_string()).await;
        }
    }

    /// Leaves permission requests unanswered (as a user who walked away).
    pub fn hold_permissions(&mut self) {
        self.hold_permissions = true;
    }

    /// Answers permission requests again (after [`hold_permissions`]).
    pub fn release_permissions(&mut self) {
        self.hold_permissions = false;
    }

    /// Answers for the next permission requests, in order (`allow_once`,
    /// `allow_always`, `reject_once`: the first option of that kind;
    /// `name:<name>`: the option named so; `cancelled`); then
    /// `allow_once`.
    pub fn answer_permissions(&mut self, answers: &[&str]) {
        self.permission_answers = answers.iter().map(|a| a.to_string()).collect();
    }

    fn observe(&mut self, frame: &Value) {
        assert_eq!(
            frame["jsonrpc"], "2.0",
            "frame without jsonrpc 2.0: {frame}"
        );
        let schemas = schema::schemas();
        match (frame.get("method").and_then(Value::as_str), frame.get("id")) {
            (Some(method), Some(_)) => {
                assert_eq!(
                    schemas.side(method),
                    Some(schema::Side::Client),
                    "candor sent a request the client does not handle: {frame}"
                );
                schemas
                    .check_params(method, &frame["params"])
                    .unwrap_or_else(|e| panic!("{e}: {frame}"));
            }
            (Some(method), None) => {
                assert!(
                    matches!(
                        schemas.side(method),
                        Some(schema::Side::Client | schema::Side::Protocol)
                    ),
                    "candor sent a notification the client does not handle: {frame}"
                );
                schemas
                    .check_params(method, &frame["params"])
                    .unwrap_or_else(|e| panic!("{e}: {frame}"));
                if method == "session/update" {
                    let session = frame["params"]["sessionId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    self.model.apply(&session, &frame["params"]["update"]);
                }
                self.notifications.push(frame.clone());
            }
            (None, Some(id)) => {
                if id.is_null() {
                    // An error for a line candor could not read an id from.
                    let error = frame.get("error").unwrap_or_else(|| {
                        panic!("null-id response that is not an error: {frame}")
                    });
                    schemas
                        .check_error(error)
                        .unwrap_or_else(|e| panic!("{e}: {frame}"));
                    return;
                }
                if frame.get("error").is_some() && self.extra_responses.remove(&id.to_string()) {
                    return;
                }
                let Some((method, session)) = self.pending.remove(&id.to_string()) else {
                    panic!(
                        "a response for id {id} that is not pending (second response, or never asked): {frame}"
                    );
                };
                if method == RAW {
                    // A hand-written line: only the error shape can be checked.
                    if let Some(error) = frame.get("error") {
                        schemas
                            .check_error(error)
                            .unwrap_or_else(|e| panic!("{e}: {frame}"));
                    }
                } else {
                    schemas
                        .check_response(&method, frame)
                        .unwrap_or_else(|e| panic!("{e}: {frame}"));
                }
                if matches!(
                    method.as_str(),
                    "session/prompt" | "session/load" | "_session/steering"
                ) && let Some(s) = session
                {
                    self.model.prompt_answered(&s);
                }
            }
            (None, None) => {
                panic!("a frame that is neither request, notification nor response: {frame}")
            }
        }
    }

    /// Reads frames until the response to `id` arrives and returns it.
    pub async fn response(&mut self, id: &Value) -> Value {
        loop {
            let frame = self.recv().await;
            if frame.get("method").is_none() && frame.get("id") == Some(id) {
                return frame;
            }
        }
    }

    /// Sends a request and waits for its response frame.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(&id).await
    }

    /// Like [`request`](Self::request), expecting a result.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let frame = self.request(method, params).await;
        assert!(frame.get("error").is_none(), "{method} failed: {frame}");
        frame["result"].clone()
    }

    /// `session/load` of `session` in this connection's project, expecting
    /// a result (the replay arrives before it and is in the thread model).
    pub async fn load(&mut self, session: &str) -> Value {
        let cwd = self.env.project.clone();
        self.call(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        )
        .await
    }

    pub async fn initialize(&mut self) -> Value {
        self.initialize_with(json!({})).await
    }

    /// `initialize` offering these client capabilities.
    pub async fn initialize_with(&mut self, capabilities: Value) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities, "clientInfo": {"name": "candor-tests", "version": "0"}}),
        )
        .await
    }

    /// Opens a session in the test project and returns its id.
    pub async fn new_session(&mut self) -> String {
        let cwd = self.env.project.clone();
        let result = self
            .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        result["sessionId"].as_str().unwrap().to_owned()
    }

    /// initialize + session/new.
    pub async fn ready(&mut self) -> String {
        self.initialize().await;
        self.new_session().await
    }

    /// Sends a text prompt and returns the response frame.
    pub async fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    pub fn thread(&self, session: &str) -> &Thread {
        self.model.thread(session)
    }

    /// The subagent sessions announced under `session` (`subagent_update`).
    pub fn subagents(&self, session: &str) -> Vec<String> {
        self.model.children(session)
    }

    /// Closes candor's input (end of file).
    pub fn close_input(&mut self) {
        self.tx = None;
    }

    /// Reads what is left of the output until end of file.
    pub async fn drain(&mut self) -> Vec<Value> {
        let mut rest = Vec::new();
        while let Some(frame) = self.try_recv(FRAME_TIMEOUT).await {
            rest.push(frame);
        }
        rest
    }

    /// Ends the connection as an editor closing would (end of input, then
    /// the agent's exit) and gives back its environment, for another
    /// connection to the same state.
    pub async fn end(mut self) -> TestEnv {
        // Shut down, not only dropped: an in-process connection's duplex
        // reads end of file only then.
        if let Some(mut tx) = self.tx.take() {
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut tx).await;
        }
        self.drain().await;
        match &mut self.agent {
            Agent::Process(child) => {
                let _ = tokio::time::timeout(FRAME_TIMEOUT, child.wait()).await;
            }
            Agent::InProcess { task, .. } => {
                let _ = tokio::time::timeout(FRAME_TIMEOUT, task).await;
            }
        }
        self.env
    }

    /// The child process (process connections only).
    pub fn child(&mut self) -> &mut tokio::process::Child {
        match &mut self.agent {
            Agent::Process(child) => child,
            Agent::InProcess { .. } => panic!("not a process connection"),
        }
    }

    /// Triggers the in-process server's shutdown future and waits for it.
    pub async fn stop_in_process(&mut self) {
        if let Agent::InProcess { task, stop } = &mut self.agent {
            if let Some(stop) = stop.take() {
                let _ = stop.send(());
            }
            tokio::time::timeout(FRAME_TIMEOUT, task)
                .await
                .unwrap()
                .unwrap();
        }
    }
}

/// A scripted model response with the given content items.
pub fn respond(items: Value) -> Value {
    json!({"content": items})
}

/// A text item.
pub fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// A tool_use item with an explicit id.
pub fn tool(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// A whole script.
pub fn script(responses: Vec<Value>) -> Value {
    json!({"responses": responses})
}

/// The `type`s of a log, in order.
pub fn types(log: &[Value]) -> Vec<String> {
    log.iter()
        .map(|r| r["type"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether a process with this pid is still alive (not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits until `cond` holds, up to `within`.
pub async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads a pid written by a test command into `path`.
pub async fn read_pid(path: &Path) -> u32 {
    assert!(
        eventually(FRAME_TIMEOUT, || std::fs::read_to_string(path)
            .is_ok_and(|s| s.trim().parse::<u32>().is_ok()))
        .await,
        "the command never wrote its pid to {}",
        path.display()
    );
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

// What tests look at in a session: its cards, records and model requests.

/// The session/update payloads for one tool call, in order.
pub fn card_frames(conn: &Conn, session: &str, id: &str) -> Vec<Value> {
    conn.frames
        .iter()
        .filter(|f| f["method"] == "session/update" && f["params"]["sessionId"] == session)
        .map(|f| f["params"]["update"].clone())
        .filter(|u| u["toolCallId"] == id)
        .collect()
}

pub fn record(conn: &Conn, session: &str, kind: &str, id: &str) -> Option<Value> {
    conn.env
        .log(session)
        .into_iter()
        .find(|r| r["type"] == kind && r["toolCallId"] == id)
}

/// The first text block of a content list.
pub fn first_text(content: &Value) -> String {
    content[0]["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The tool result the model was sent for `id` in the model request `n`.
pub fn result_in_request(conn: &Conn, n: usize, id: &str) -> Value {
    let requests = conn.env.model_requests();
    let request = requests
        .get(n)
        .unwrap_or_else(|| panic!("no model request {n}: {requests:?}"));
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool_results")
        .flat_map(|m| m["results"].as_array().unwrap().clone())
        .find(|r| r["toolUseId"] == id)
        .unwrap_or_else(|| panic!("no result for {id} in {request}"))
}

/// The model's own call `id`, as replayed in the model request `n`.
pub fn call_in_request(conn: &Conn, n: usize, id: &str) -> Value {
    let requests = conn.env.model_requests();
    requests[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .find(|b| b["type"] == "tool_use" && b["id"] == id)
        .unwrap_or_else(|| panic!("no call {id} in request {n}"))
}

/// candor (the binary) configured for Anthropic at `url` (a mock), with
/// the user config file `config` (`$XDG_CONFIG_HOME/candor/config.toml`).
pub fn anthropic_conn(env: TestEnv, url: &str, config: &str) -> Conn {
    let dir = env.dir.path().join("config/candor");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let mut cmd = candor_command(&env);
    cmd.env("CANDOR_PROVIDER", "anthropic")
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", mock_anthropic::KEY)
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"));
    Conn::spawn_with(env, cmd)
}

/// The config option `id` of a response's `configOptions`.
pub fn config_option<'a>(response: &'a Value, id: &str) -> &'a Value {
    response["configOptions"]
        .as_array()
        .and_then(|options| options.iter().find(|o| o["id"] == id))
        .unwrap_or(&Value::Null)
}

/// A local HTTP server (the "outside") answering `hello` to every request,
/// on its own thread; its port.
pub fn http_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n",
            );
        }
    });
    port
}

/// The updates for `session` from frame `from` on, less the commands
/// offered (a loaded session offers them afresh).
pub fn shown_updates(conn: &Conn, session: &str, from: usize) -> Vec<Value> {
    conn.frames[from..]
        .iter()
        .filter(|f| f["method"] == "session/update" && f["params"]["sessionId"] == session)
        .map(|f| f["params"]["update"].clone())
        .filter(|u| u["sessionUpdate"] != "available_commands_update")
        .collect()
}
