//! `candor harness`: the protocol conformance harness.
//!
//! Runs scenarios (`protocol/scenarios/*.json`, format in
//! `protocol/scenarios/README.md`) against candor (this binary, with the
//! scenario's scripted model) or, with `--agent CMD`, against any ACP agent.
//! Each scenario gets a fresh temporary directory (its files, candor's
//! state) and a fresh agent process. The report has one line per
//! requirement: every expectation of every step, and the client-side
//! invariants ([`client::RULES`]) checked on every frame of the run.
//!
//! Layout: [`scenario`] (the format) → [`client`] (the connection, the
//! client model, the editor-side `fs/*`, `terminal/*` and permission
//! answers) → [`crate::matcher`] (expectations) → [`schema`] (per-method schema
//! validation) → this module (the runner and the report).

pub mod client;
pub mod scenario;
pub mod schema;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use client::{Caps, Conn, RULES};
use scenario::{JSON_LINES_WAIT, MCP_TEST_SERVER, Scenario, Step};
use schema::Schemas;

use crate::matcher;
use crate::tools::exec;

/// How long a step waits for its response.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// What to run, against what.
#[derive(Debug, Clone)]
pub struct Options {
    /// Scenario files or directories; empty: `protocol/scenarios`.
    pub paths: Vec<PathBuf>,
    /// A peer agent command (run through `bash -c`); `None`: candor.
    pub agent: Option<String>,
    /// The candor binary to test when `agent` is `None`, and the one
    /// scenarios start as their MCP test server (`$candor mcp-test-server`,
    /// whatever agent is tested).
    pub candor: PathBuf,
    /// Print every frame of failing scenarios.
    pub verbose: bool,
}

/// How one requirement went.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pass,
    Fail {
        detail: String,
        frame: Option<Value>,
    },
    Skip(String),
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Requirement {
    pub title: String,
    pub outcome: Outcome,
}

/// The report of one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioReport {
    pub name: String,
    pub path: PathBuf,
    pub description: String,
    pub requirements: Vec<Requirement>,
    pub transcript: Vec<(&'static str, Value)>,
    pub stderr: String,
}

impl ScenarioReport {
    pub fn failed(&self) -> usize {
        self.requirements
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Fail { .. }))
            .count()
    }
}

/// Runs everything and prints the report; `Ok(true)` when nothing failed.
pub async fn run(opts: &Options, out: &mut dyn Write) -> io::Result<bool> {
    let schemas = Arc::new(Schemas::embedded().map_err(io::Error::other)?);
    let files = scenario_files(&opts.paths)?;
    if files.is_empty() {
        writeln!(out, "no scenarios found")?;
        return Ok(false);
    }
    let against = match &opts.agent {
        Some(cmd) => format!("agent `{cmd}`"),
        None => format!("candor ({})", opts.candor.display()),
    };
    writeln!(
        out,
        "candor harness: {} scenario(s) against {against}",
        files.len()
    )?;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut failing = Vec::new();
    for path in &files {
        let report = match Scenario::load(path) {
            Ok(s) => run_scenario(&s, path, opts, schemas.clone()).await,
            Err(e) => ScenarioReport {
                name: path.display().to_string(),
                path: path.clone(),
                description: String::new(),
                requirements: vec![Requirement {
                    title: "the scenario file is valid".into(),
                    outcome: Outcome::Fail {
                        detail: e,
                        frame: None,
                    },
                }],
                transcript: Vec::new(),
                stderr: String::new(),
            },
        };
        print_report(&report, opts.verbose, out)?;
        for r in &report.requirements {
            match r.outcome {
                Outcome::Pass => passed += 1,
                Outcome::Fail { .. } => failed += 1,
                Outcome::Skip(_) => skipped += 1,
            }
        }
        if report.failed() > 0 {
            failing.push(report.name.clone());
        }
    }
    writeln!(
        out,
        "\n{} scenario(s), {} requirement(s): {passed} passed, {failed} failed, {skipped} skipped",
        files.len(),
        passed + failed + skipped
    )?;
    if !failing.is_empty() {
        writeln!(out, "failing scenarios: {}", failing.join(", "))?;
    }
    Ok(failed == 0)
}

/// The scenario files named (directories expand to their `*.json`, sorted).
fn scenario_files(paths: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let defaults = [
        PathBuf::from("protocol/scenarios"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/scenarios"),
    ];
    let paths: Vec<PathBuf> = if paths.is_empty() {
        defaults
            .into_iter()
            .filter(|p| p.is_dir())
            .take(1)
            .collect()
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&path)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else if path.exists() {
            files.push(path);
        } else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: no such file", path.display()),
            ));
        }
    }
    Ok(files)
}

fn print_report(report: &ScenarioReport, verbose: bool, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "\n● {} — {} ({})",
        report.name,
        report.description,
        report.path.display()
    )?;
    for r in &report.requirements {
        match &r.outcome {
            Outcome::Pass => writeln!(out, "  PASS  {}", r.title)?,
            Outcome::Skip(why) => writeln!(out, "  SKIP  {}: {why}", r.title)?,
            Outcome::Fail { detail, frame } => {
                writeln!(out, "  FAIL  {}: {detail}", r.title)?;
                if let Some(frame) = frame {
                    writeln!(out, "        frame: {}", matcher::short_frame(frame))?;
                }
            }
        }
    }
    if report.failed() > 0 && verbose {
        writeln!(out, "  transcript:")?;
        for (dir, frame) in &report.transcript {
            writeln!(out, "    {dir} {frame}")?;
        }
        if !report.stderr.is_empty() {
            writeln!(out, "  agent stderr:")?;
            for line in report.stderr.lines().take(60) {
                writeln!(out, "    {line}")?;
            }
        }
    }
    Ok(())
}

/// Runs one scenario in a fresh directory with a fresh agent.
pub async fn run_scenario(
    s: &Scenario,
    path: &Path,
    opts: &Options,
    schemas: Arc<Schemas>,
) -> ScenarioReport {
    let mut report = ScenarioReport {
        name: s.name.clone(),
        path: path.to_owned(),
        description: s.description.clone(),
        requirements: Vec::new(),
        transcript: Vec::new(),
        stderr: String::new(),
    };
    if opts.agent.is_some() && s.needs_candor() {
        report.requirements.push(Requirement {
            title: "scenario".into(),
            outcome: Outcome::Skip(
                "needs candor (scripted model, session log or candor's wording)".into(),
            ),
        });
        return report;
    }
    let (dir, mut runner) = match set_up(s, opts, schemas) {
        Ok(ready) => ready,
        Err((title, detail)) => {
            report.requirements.push(Requirement {
                title: title.into(),
                outcome: Outcome::Fail {
                    detail,
                    frame: None,
                },
            });
            return report;
        }
    };
    for (i, step) in s.steps.iter().enumerate() {
        runner.step(i + 1, step).await;
    }
    if runner.exited.is_none() {
        runner.conn.finish(Duration::from_secs(3)).await;
    }
    let Runner {
        conn,
        mut requirements,
        ..
    } = runner;
    requirements.extend(invariants(&conn));
    report.requirements = requirements;
    report.transcript = conn.transcript;
    report.stderr = std::fs::read_to_string(dir.path().join(AGENT_STDERR)).unwrap_or_default();
    report
}

/// The candor binary scenarios start as their MCP test server
/// (`$candor mcp-test-server …`): this one's `candor`, absolute (ACP wants
/// an absolute command), when it was built with the `mcp-test-server`
/// feature (the default).
pub fn mcp_test_server(opts: &Options) -> Result<PathBuf, String> {
    if !cfg!(feature = "mcp-test-server") {
        return Err(format!(
            "the scenario starts the MCP test server (`{MCP_TEST_SERVER} mcp-test-server`), which this candor was built without: build it with the default features (the feature `mcp-test-server`)"
        ));
    }
    std::path::absolute(&opts.candor)
        .map_err(|e| format!("the candor binary {}: {e}", opts.candor.display()))
}

/// Where, in a scenario's directory, the agent's stderr goes.
const AGENT_STDERR: &str = "agent.stderr";

/// A scenario's directory (its project, home and user files written) and
/// the runner of its steps, connected to a fresh agent; else which
/// requirement failed, and why.
fn set_up<'a>(
    s: &'a Scenario,
    opts: &Options,
    schemas: Arc<Schemas>,
) -> Result<(tempfile::TempDir, Runner<'a>), (&'static str, String)> {
    let dir =
        tempfile::tempdir().map_err(|e| ("set-up", format!("no temporary directory: {e}")))?;
    let project = dir.path().join("project");
    let home = dir.path().join("home");
    let user_files: std::collections::BTreeMap<String, String> = s
        .user_files
        .iter()
        .map(|(k, v)| (k.clone(), v.replace("$cwd", &project.display().to_string())))
        .collect();
    write_files(&project, &s.files)
        .and_then(|()| write_files(&dir.path().join("user"), &user_files))
        .map_err(|e| ("set-up", format!("cannot write the scenario's files: {e}")))?;
    let mcp_test_server = if s.uses_mcp_test_server() {
        Some(mcp_test_server(opts).map_err(|e| ("the MCP test server is found", e))?)
    } else {
        None
    };
    let stderr_path = dir.path().join(AGENT_STDERR);
    let cmd = agent_command(s, opts, dir.path(), &project, &home, &stderr_path)
        .map_err(|e| ("set-up", e))?;
    let mut conn = Conn::start(cmd, schemas, project.clone())
        .map_err(|e| ("the agent starts", e.to_string()))?;
    conn.caps =
        Caps::from_client_capabilities(s.client_capabilities.as_ref().unwrap_or(&json!({})));
    conn.buffers = s
        .editor_buffers
        .iter()
        .map(|(name, text)| (project.join(name), text.clone()))
        .collect();
    let runner = Runner {
        conn,
        scenario: s,
        session: None,
        labels: HashMap::new(),
        project,
        home,
        dir: dir.path().to_owned(),
        mcp_test_server,
        requests: dir.path().join("requests.jsonl"),
        requirements: Vec::new(),
        exited: None,
    };
    Ok((dir, runner))
}

/// The client-side invariants, as requirements: each rule's violations
/// (the first, and how many more), and requests never answered.
fn invariants(conn: &Conn) -> Vec<Requirement> {
    let mut requirements = Vec::new();
    for (rule, title) in RULES {
        let broken: Vec<&client::Violation> =
            conn.violations.iter().filter(|v| v.rule == rule).collect();
        let outcome = match broken.first() {
            None => Outcome::Pass,
            Some(first) => Outcome::Fail {
                detail: if broken.len() > 1 {
                    format!("{} (and {} more)", first.detail, broken.len() - 1)
                } else {
                    first.detail.clone()
                },
                frame: first.frame.clone(),
            },
        };
        let title = if rule == "schema" {
            format!(
                "invariant: {title} ({} frames in, {} out)",
                conn.frames_in,
                conn.transcript.iter().filter(|(d, _)| *d == "->").count()
            )
        } else {
            format!("invariant: {title}")
        };
        requirements.push(Requirement { title, outcome });
    }
    let unanswered = conn.unanswered();
    requirements.push(Requirement {
        title: "invariant: every request got its response".into(),
        outcome: if unanswered.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Fail {
                detail: format!("never answered: {}", unanswered.join(", ")),
                frame: None,
            }
        },
    });
    requirements
}

fn write_files(
    project: &Path,
    files: &std::collections::BTreeMap<String, String>,
) -> io::Result<()> {
    std::fs::create_dir_all(project)?;
    for (name, text) in files {
        let path = project.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}

fn agent_command(
    s: &Scenario,
    opts: &Options,
    dir: &Path,
    project: &Path,
    home: &Path,
    stderr_path: &Path,
) -> Result<tokio::process::Command, String> {
    let mut cmd = match &opts.agent {
        None => {
            let mut cmd = exec::agent(&opts.candor, &[]);
            cmd.env("CANDOR_HOME", home).env("RUST_LOG", "info");
            // The scenario decides the model: a developer's keys or config
            // must not turn a scenario into a network call.
            for var in [
                "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY",
                "CANDOR_MODEL",
                "ANTHROPIC_BASE_URL",
                "OPENAI_BASE_URL",
            ] {
                cmd.env_remove(var);
            }
            // candor's own user config is one of the user's files.
            cmd.env("XDG_CONFIG_HOME", dir.join("user/.config"));
            // Nor may the developer's own Claude Code or Codex hooks join
            // in: a scenario's hooks live in its files and `userFiles`.
            cmd.env("CLAUDE_CONFIG_DIR", dir.join("user/.claude"))
                .env("CODEX_HOME", dir.join("user/.codex"))
                .env_remove("CANDOR_CODEX_HOOKS")
                .env("CANDOR_CLAUDE_MANAGED_DIR", dir.join("claude-managed"))
                .env_remove("CANDOR_CLAUDE_HOOKS");
            cmd.env_remove("CANDOR_PROVIDER")
                .env_remove("CANDOR_SCRIPT");
            if let Some(model) = &s.model {
                let script = dir.join("model.json");
                std::fs::write(&script, with_cwd(model, project).to_string())
                    .map_err(|e| format!("cannot write the model script: {e}"))?;
                cmd.env("CANDOR_PROVIDER", "scripted")
                    .env("CANDOR_SCRIPT", script);
            }
            cmd.env_remove("CANDOR_POLICY")
                .env("CANDOR_CAPTURE", dir.join("requests.jsonl"));
            if let Some(policy) = &s.policy {
                let file = dir.join("policy.json");
                std::fs::write(&file, with_cwd(policy, project).to_string())
                    .map_err(|e| format!("cannot write the policy file: {e}"))?;
                cmd.env("CANDOR_POLICY", file);
            }
            cmd
        }
        Some(agent) => exec::agent(Path::new("bash"), &["-c", &format!("exec {agent}")]),
    };
    let stderr =
        File::create(stderr_path).map_err(|e| format!("cannot capture the agent's stderr: {e}"))?;
    cmd.current_dir(project).stderr(Stdio::from(stderr));
    Ok(cmd)
}

/// Executes a scenario's steps against one connection.
struct Runner<'a> {
    conn: Conn,
    scenario: &'a Scenario,
    session: Option<String>,
    labels: HashMap<String, Value>,
    project: PathBuf,
    home: PathBuf,
    /// The scenario's temporary directory (`$dir`), holding the project.
    dir: PathBuf,
    /// `$candor`, when the scenario names it.
    mcp_test_server: Option<PathBuf>,
    /// Where candor's scripted model copies its requests.
    requests: PathBuf,
    requirements: Vec<Requirement>,
    exited: Option<Option<i32>>,
}

impl Runner<'_> {
    fn record(&mut self, title: String, result: Result<(), String>, frame: Option<&Value>) {
        let outcome = match result {
            Ok(()) => Outcome::Pass,
            Err(detail) => Outcome::Fail {
                detail,
                frame: frame.cloned(),
            },
        };
        self.requirements.push(Requirement { title, outcome });
    }

    /// `$session`, `$cwd`, `$dir` and `$candor` in every string of
    /// `v`.
    fn substitute(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => {
                let mut s = s
                    .replace("$cwd", &self.project.display().to_string())
                    .replace("$dir", &self.dir.display().to_string());
                if let Some(session) = &self.session {
                    s = s.replace("$session", session);
                }
                if let Some(server) = &self.mcp_test_server {
                    s = s.replace(MCP_TEST_SERVER, &server.display().to_string());
                }
                Value::String(s)
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| self.substitute(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), self.substitute(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    async fn step(&mut self, n: usize, step: &Step) {
        let action = action_name(step);
        let name = match &step.title {
            Some(t) => format!("step {n} ({action}: {t})"),
            None => format!("step {n} ({action})"),
        };
        let started = Instant::now();
        let updates_from = self.conn.updates.len();
        let requests_from = read_lines(&self.requests).len();
        let cards_from = self.conn.cards.len();
        let permissions_from = self.conn.permission_requests.len();
        let client_requests_from = self.conn.client_requests.len();
        if !step.elicitations.is_empty() {
            self.conn.answer_elicitations(&step.elicitations);
        }
        if !step.permissions.is_empty() {
            self.conn.answer_permissions(&step.permissions);
        }

        let Some(awaited) = self.act(&name, step, updates_from, started).await else {
            return;
        };
        if let (Some(label), Some(id)) = (&step.label, &awaited) {
            self.labels.insert(label.clone(), id.clone());
        }
        let Some(id) = awaited.filter(|_| step.wait) else {
            // Not waiting: give the agent a moment, so later steps see what
            // this one caused in order.
            self.conn
                .pump_until(Instant::now() + Duration::from_millis(20))
                .await;
            self.check_common(&name, step, updates_from).await;
            return;
        };
        let response = self.wait_for(&id, step, started).await;
        let elapsed = started.elapsed();
        let Some(response) = response else {
            self.record(
                format!("{name}: a response arrives"),
                Err(format!(
                    "no response within {} s{}",
                    STEP_TIMEOUT.as_secs(),
                    if self.conn.is_eof() {
                        " (the agent closed its output)"
                    } else {
                        ""
                    }
                )),
                None,
            );
            return;
        };
        if step.new_session.is_some()
            && let Some(id) = response["result"]["sessionId"].as_str()
        {
            self.session = Some(id.to_owned());
        }
        let Some(expect) = step.expect.clone() else {
            // No expectations: it must at least not be an error.
            let ok = response.get("error").is_none();
            self.record(
                format!("{name}: succeeds"),
                if ok {
                    Ok(())
                } else {
                    Err(format!(
                        "answered with an error: {}",
                        matcher::short(&response["error"])
                    ))
                },
                Some(&response),
            );
            self.check_common(&name, step, updates_from).await;
            return;
        };
        self.check_response(&name, &expect, &response, elapsed);
        let marks = Marks {
            updates: updates_from,
            requests: requests_from,
            cards: cards_from,
            permissions: permissions_from,
            client_requests: client_requests_from,
        };
        self.check_expectations(&name, &expect, marks);
        self.check_common(&name, step, updates_from).await;
    }

    /// The expectations on the response itself: its result or error, its
    /// stop reason, how soon it came.
    fn check_response(
        &mut self,
        name: &str,
        expect: &scenario::Expect,
        response: &Value,
        elapsed: Duration,
    ) {
        if let Some(want) = &expect.result {
            let got = response.get("result");
            self.record(
                format!("{name}: result"),
                matcher::check(want, got).map_err(|e| error_or(e, response)),
                Some(response),
            );
        }
        if let Some(want) = &expect.error {
            let got = response.get("error");
            let result = match got {
                None => Err(format!(
                    "expected an error, got result {}",
                    matcher::short(&response["result"])
                )),
                Some(_) => matcher::check(want, got),
            };
            self.record(format!("{name}: error"), result, Some(response));
        }
        if let Some(want) = &expect.stop_reason {
            let got = &response["result"]["stopReason"];
            let result = if got == want {
                Ok(())
            } else {
                Err(error_or(
                    format!("expected stopReason {want:?}, got {got}"),
                    response,
                ))
            };
            self.record(
                format!("{name}: stopReason is {want}"),
                result,
                Some(response),
            );
        }
        if let Some(ms) = expect.within_ms {
            let result = if elapsed <= Duration::from_millis(ms) {
                Ok(())
            } else {
                Err(format!("took {} ms", elapsed.as_millis()))
            };
            self.record(
                format!("{name}: answered within {ms} ms"),
                result,
                Some(response),
            );
        }
    }

    /// Sends the step's action; `Some(awaited)`: the response it waits for
    /// (`Some(id)`, or `Null` for a raw line the agent cannot read an id
    /// from); `None`: the step is over already.
    async fn act(
        &mut self,
        name: &str,
        step: &Step,
        updates_from: usize,
        started: Instant,
    ) -> Option<Option<Value>> {
        // What response this step waits for: Some(id) (Null for a raw line
        // the agent cannot read an id from).
        let mut awaited: Option<Value> = None;
        if let Some(params) = &step.initialize {
            let params = if params.is_null() {
                json!({
                    "protocolVersion": 1,
                    "clientCapabilities": self.scenario.client_capabilities.clone().unwrap_or(json!({})),
                    "clientInfo": {"name": "candor-harness", "version": env!("CARGO_PKG_VERSION")}
                })
            } else {
                self.substitute(params)
            };
            if let Some(caps) = params.get("clientCapabilities") {
                self.conn.caps = Caps::from_client_capabilities(caps);
            }
            awaited = Some(self.conn.request(
                "initialize",
                params,
                step.initialize.as_ref().is_some_and(Value::is_null),
            ));
        } else if let Some(extra) = &step.new_session {
            let servers = self
                .scenario
                .mcp_servers
                .as_ref()
                .map(|list| self.substitute(&json!(list)))
                .unwrap_or(json!([]));
            let mut params = json!({"cwd": self.project, "mcpServers": servers});
            if let (Some(p), Some(e)) = (params.as_object_mut(), self.substitute(extra).as_object())
            {
                for (k, v) in e {
                    p.insert(k.clone(), v.clone());
                }
            }
            awaited = Some(self.conn.request("session/new", params, extra.is_null()));
        } else if let Some(prompt) = &step.prompt {
            let blocks = match self.substitute(prompt) {
                Value::String(text) => json!([{"type": "text", "text": text}]),
                other => other,
            };
            let params =
                json!({"sessionId": self.session.clone().unwrap_or_default(), "prompt": blocks});
            awaited = Some(self.conn.request("session/prompt", params, true));
        } else if let Some(request) = &step.request {
            let method = request["method"].as_str().unwrap_or_default().to_owned();
            let params = self.substitute(&request["params"]);
            awaited = Some(self.conn.request(&method, params, false));
        } else if let Some(notification) = &step.notify {
            let method = notification["method"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let params = self.substitute(&notification["params"]);
            self.conn.notify(&method, params);
        } else if let Some(line) = &step.send {
            let line = match self.substitute(&json!(line)) {
                Value::String(s) => s,
                _ => line.clone(),
            };
            awaited = Some(self.conn.send_raw(&line).unwrap_or(Value::Null));
        } else if step.cancel {
            let session = self.session.clone().unwrap_or_default();
            self.conn
                .notify("session/cancel", json!({"sessionId": session}));
        } else if let Some(label) = &step.await_label {
            match self.labels.get(label) {
                Some(id) => awaited = Some(id.clone()),
                None => {
                    self.record(
                        format!("{name}: the awaited request exists"),
                        Err(format!("no request labelled {label:?}")),
                        None,
                    );
                    return None;
                }
            }
        } else if step.close_input {
            let within = Duration::from_millis(
                step.expect
                    .as_ref()
                    .and_then(|e| e.within_ms)
                    .unwrap_or(5000),
            );
            let code = self.conn.finish(within).await;
            self.exited = Some(code);
            self.check_exit(name, step, started, code);
            self.check_common(name, step, updates_from).await;
            return None;
        } else if let Some(ms) = step.sleep_ms {
            self.conn
                .pump_until(Instant::now() + Duration::from_millis(ms))
                .await;
        } else {
            self.record(
                format!("{name}: the step has an action"),
                Err("no action in this step".into()),
                None,
            );
            return None;
        }

        Some(awaited)
    }

    /// Checks what the step's expectations say of its updates, cards and
    /// requests (everything since `from`).
    fn check_expectations(&mut self, name: &str, expect: &scenario::Expect, from: Marks) {
        let (updates_from, requests_from, cards_from, permissions_from, client_requests_from) = (
            from.updates,
            from.requests,
            from.cards,
            from.permissions,
            from.client_requests,
        );
        let session = self.session.clone().unwrap_or_default();
        let step_updates: Vec<Value> = self.conn.updates[updates_from..]
            .iter()
            .filter(|(s, _)| *s == session)
            .map(|(_, u)| u.clone())
            .collect();
        if let Some(want) = &expect.text {
            let text: String = step_updates
                .iter()
                .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
                .filter_map(|u| u["content"]["text"].as_str())
                .collect();
            let got = json!(text);
            self.record(
                format!("{name}: agent text"),
                matcher::check(want, Some(&got)),
                None,
            );
        }
        if let Some(want) = &expect.updates {
            let last = step_updates.last().cloned();
            self.record(
                format!("{name}: updates (in order)"),
                matcher::subsequence(want, &step_updates),
                last.as_ref(),
            );
        }
        if let Some(want) = &expect.cards {
            let cards: Vec<Value> = self.conn.cards[cards_from..]
                .iter()
                .filter(|c| c.session == session)
                .map(client::Card::view)
                .collect();
            let result = if cards.len() != want.len() {
                Err(format!(
                    "expected {} card(s), got {}: {}",
                    want.len(),
                    cards.len(),
                    cards
                        .iter()
                        .map(|c| c["title"].to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            } else {
                want.iter()
                    .zip(&cards)
                    .enumerate()
                    .try_for_each(|(i, (w, c))| {
                        matcher::check(w, Some(c))
                            .map_err(|e| format!("card {i} ({}): {e}", c["toolCallId"]))
                    })
            };
            let frame = cards.last().cloned();
            self.record(format!("{name}: cards"), result, frame.as_ref());
        }
        if let Some(want) = &expect.client_requests {
            let got = self.conn.client_requests[client_requests_from..].to_vec();
            self.record(
                format!("{name}: requests to the client (in order)"),
                matcher::subsequence(want, &got),
                got.last(),
            );
        }
        if let Some(want) = &expect.model_requests {
            let requests = read_lines(&self.requests);
            let step_requests = requests.get(requests_from..).unwrap_or_default();
            self.record(
                format!("{name}: model requests (in order)"),
                matcher::subsequence(want, step_requests),
                step_requests.last(),
            );
        }
        if let Some(want) = &expect.permission_requests {
            let got: Vec<Value> = self.conn.permission_requests[permissions_from..].to_vec();
            let result = if got.len() != want.len() {
                Err(format!(
                    "expected {} permission request(s), got {}",
                    want.len(),
                    got.len()
                ))
            } else {
                want.iter()
                    .zip(&got)
                    .enumerate()
                    .try_for_each(|(i, (w, g))| {
                        matcher::check(w, Some(g)).map_err(|e| format!("request {i}: {e}"))
                    })
            };
            let frame = got.last().cloned();
            self.record(
                format!("{name}: permission requests"),
                result,
                frame.as_ref(),
            );
        }
    }

    /// Waits for the response to `id`, cancelling the turn on the way if the
    /// step says so.
    async fn wait_for(&mut self, id: &Value, step: &Step, started: Instant) -> Option<Value> {
        let deadline = started + STEP_TIMEOUT;
        let cancel = step.cancel_after.clone().unwrap_or_default();
        let (cancel_ms, cancel_on) = (cancel.ms, cancel.update);
        let cancel_lines: Vec<(PathBuf, Value)> = cancel
            .json_lines
            .iter()
            .flatten()
            .map(|(file, want)| (self.scenario_path(file), want.clone()))
            .collect();
        let mut cancelled = step.cancel_after.is_none();
        loop {
            if let Some(r) = self.conn.take_response(id) {
                return Some(r);
            }
            let mut until = deadline;
            if !cancelled && !cancel_lines.is_empty() {
                if cancel_lines
                    .iter()
                    .all(|(path, want)| lines_match(path, want).is_ok())
                {
                    self.send_cancel();
                    cancelled = true;
                    continue;
                }
                until = until.min(Instant::now() + POLL);
            }
            if let (false, Some(ms)) = (cancelled, cancel_ms) {
                let at = started + Duration::from_millis(ms);
                if Instant::now() >= at {
                    self.send_cancel();
                    cancelled = true;
                    continue;
                }
                until = until.min(at);
            }
            match self.conn.pump_one(until).await {
                Some(frame) => {
                    if let (false, Some(want)) = (cancelled, &cancel_on) {
                        let is_update = frame["method"] == "session/update";
                        if is_update
                            && matcher::check(want, Some(&frame["params"]["update"])).is_ok()
                        {
                            self.send_cancel();
                            cancelled = true;
                        }
                    }
                }
                None => {
                    if self.conn.is_eof() || Instant::now() >= deadline {
                        return self.conn.take_response(id);
                    }
                }
            }
        }
    }

    fn send_cancel(&mut self) {
        let session = self.session.clone().unwrap_or_default();
        self.conn
            .notify("session/cancel", json!({"sessionId": session}));
    }

    fn check_exit(&mut self, name: &str, step: &Step, started: Instant, code: Option<i32>) {
        let Some(want) = step.expect.as_ref().and_then(|e| e.exit.clone()) else {
            return;
        };
        let took = started.elapsed();
        let result = match code {
            Some(c) if c == want.code => Ok(()),
            Some(c) => Err(format!("exited with {c}")),
            None => Err(format!(
                "did not exit by itself within {} ms",
                took.as_millis()
            )),
        };
        self.record(
            format!("{name}: exits with status {}", want.code),
            result,
            None,
        );
        if let Some(ms) = step.expect.as_ref().and_then(|e| e.within_ms) {
            self.record(
                format!("{name}: exits within {ms} ms"),
                if code.is_some() && took <= Duration::from_millis(ms) {
                    Ok(())
                } else {
                    Err(format!("took {} ms", took.as_millis()))
                },
                None,
            );
        }
    }

    /// Expectations that do not depend on a response: files and log.
    async fn check_common(&mut self, name: &str, step: &Step, _updates_from: usize) {
        let Some(expect) = &step.expect else { return };
        if let Some(files) = &expect.files {
            for (file, want) in files {
                let path = self.project.join(file);
                let got = std::fs::read_to_string(&path).ok().map(Value::String);
                let result = match want {
                    Value::String(s) => match &got {
                        Some(Value::String(g)) if g == s => Ok(()),
                        Some(g) => Err(format!("content is {}", matcher::short(g))),
                        None => Err("the file does not exist".into()),
                    },
                    m => matcher::check(m, got.as_ref()),
                };
                self.record(format!("{name}: file {file}"), result, None);
            }
        }
        if let Some(files) = &expect.json_lines {
            for (file, want) in files {
                let result = self.await_lines(file, want).await;
                self.record(format!("{name}: JSON lines of {file}"), result, None);
            }
        }
        if let Some(want) = &expect.log {
            let records = self.read_log();
            let result = records.and_then(|r| matcher::subsequence(want, &r));
            self.record(
                format!("{name}: session log records (in order)"),
                result,
                None,
            );
        }
    }

    /// A scenario's path: `$dir`, `$cwd` replaced; relative to the working
    /// directory.
    fn scenario_path(&self, file: &str) -> PathBuf {
        let named = match self.substitute(&json!(file)) {
            Value::String(s) => PathBuf::from(s),
            _ => PathBuf::from(file),
        };
        self.project.join(named)
    }

    /// Waits (handling frames) up to [`JSON_LINES_WAIT`] for the JSON lines
    /// of `file` to match `want`; the last mismatch if they never do.
    async fn await_lines(&mut self, file: &str, want: &Value) -> Result<(), String> {
        let path = self.scenario_path(file);
        let deadline = Instant::now() + JSON_LINES_WAIT;
        loop {
            let result = lines_match(&path, want);
            if result.is_ok() || Instant::now() >= deadline {
                return result;
            }
            let next = Instant::now() + POLL;
            if self.conn.is_eof() {
                tokio::time::sleep_until(next).await;
            } else {
                self.conn.pump_until(next).await;
            }
        }
    }

    fn read_log(&self) -> Result<Vec<Value>, String> {
        let Some(session) = &self.session else {
            return Err("no session".into());
        };
        let path = self.home.join("sessions").join(format!("{session}.jsonl"));
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        text.lines()
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
            })
            .collect()
    }
}

/// `$cwd` in every string of a scenario's model script or policy.
fn with_cwd(v: &Value, project: &Path) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("$cwd", &project.display().to_string())),
        Value::Array(a) => Value::Array(a.iter().map(|x| with_cwd(x, project)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), with_cwd(x, project)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// How often a wait on a file looks at it again.
const POLL: Duration = Duration::from_millis(25);

/// Whether the JSON lines of `path` match `want` (a matcher on the array of
/// them); why not.
fn lines_match(path: &Path, want: &Value) -> Result<(), String> {
    let lines = json_lines(path)?;
    matcher::check(want, Some(&Value::Array(lines)))
}

/// The values of a file's complete JSON lines (a last line without its
/// newline may still be being written and is left out; blank lines are
/// skipped); an error names the file and the line that is not JSON.
fn json_lines(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let complete = text.rsplit_once('\n').map(|(done, _)| done).unwrap_or("");
    complete
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| format!("{}:{}: not JSON: {e}", path.display(), i + 1))
        })
        .collect()
}

/// The JSON lines of a file (none if it does not exist).
fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn error_or(detail: String, response: &Value) -> String {
    match response.get("error") {
        Some(e) => format!("answered with an error: {}", matcher::short(e)),
        None => detail,
    }
}

fn action_name(step: &Step) -> &'static str {
    if step.initialize.is_some() {
        "initialize"
    } else if step.new_session.is_some() {
        "newSession"
    } else if step.prompt.is_some() {
        "prompt"
    } else if step.request.is_some() {
        "request"
    } else if step.notify.is_some() {
        "notify"
    } else if step.send.is_some() {
        "send"
    } else if step.cancel {
        "cancel"
    } else if step.await_label.is_some() {
        "await"
    } else if step.close_input {
        "closeInput"
    } else if step.sleep_ms.is_some() {
        "sleep"
    } else {
        "?"
    }
}

/// Where a step's updates, model requests, cards, permission requests and
/// client requests begin in what the connection has seen.
#[derive(Debug, Clone, Copy)]
struct Marks {
    updates: usize,
    requests: usize,
    cards: usize,
    permissions: usize,
    client_requests: usize,
}
