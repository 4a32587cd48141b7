//! The scenario format: a script of client steps and what to expect.
//!
//! Documented for scenario authors in `protocol/scenarios/README.md`.
//! Unknown fields are rejected so that a typo is an error, not a silently
//! skipped expectation.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// One scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Runs only against candor (it needs the scripted model, candor's log
    /// or candor's own wording). Implied by `model` and by log expectations.
    #[serde(default)]
    pub candor_only: bool,
    /// `clientCapabilities` sent by `initialize` steps without params.
    #[serde(default)]
    pub client_capabilities: Option<Value>,
    /// Files created in the session's working directory (a fresh temporary
    /// directory) before the agent starts.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Files created in the user's home directory as candor sees it (the
    /// user's `.claude/settings.json`, `.codex/hooks.json`,
    /// `.codex/config.toml`); `$cwd` in them is the working directory.
    #[serde(default)]
    pub user_files: BTreeMap<String, String>,
    /// Open editor buffers with unsaved changes, by relative path: the
    /// harness's `fs/read_text_file` returns these instead of the disk.
    #[serde(default)]
    pub editor_buffers: BTreeMap<String, String>,
    /// The scripted model's script (`protocol/scripted-model.md`).
    #[serde(default)]
    pub model: Option<Value>,
    /// candor's policy file: hooks, permission rules, mode
    /// (`protocol/hooks.md`).
    #[serde(default)]
    pub policy: Option<Value>,
    /// The MCP servers `newSession` steps send (ACP `McpServer` entries);
    /// `$mcpTestServer` and `$dir` in their strings are replaced.
    #[serde(default)]
    pub mcp_servers: Option<Vec<Value>>,
    pub steps: Vec<Step>,
}

impl Scenario {
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Whether it can only run against candor.
    pub fn needs_candor(&self) -> bool {
        self.candor_only
            || self.model.is_some()
            || self.policy.is_some()
            || self.steps.iter().any(|s| {
                s.expect
                    .as_ref()
                    .is_some_and(|e| e.log.is_some() || e.model_requests.is_some())
            })
    }

    /// Whether it starts the MCP test server (names `$candor`, whose
    /// `mcp-test-server` subcommand is that server, in its servers or in
    /// what a step sends).
    pub fn uses_mcp_test_server(&self) -> bool {
        self.mcp_servers.iter().flatten().any(names_test_server)
            || self.steps.iter().any(|s| {
                [&s.new_session, &s.request, &s.notify]
                    .into_iter()
                    .flatten()
                    .any(names_test_server)
                    || s.send
                        .as_deref()
                        .is_some_and(|line| line.contains(MCP_TEST_SERVER))
            })
    }
}

/// The placeholder for the candor binary running the harness, which
/// scenarios start as their MCP test server (`$candor mcp-test-server …`).
pub const MCP_TEST_SERVER: &str = "$candor";

/// Whether a string of `v` names the MCP test server.
fn names_test_server(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(MCP_TEST_SERVER),
        Value::Array(a) => a.iter().any(names_test_server),
        Value::Object(o) => o.values().any(names_test_server),
        _ => false,
    }
}

/// One step: exactly one action, its options, and expectations.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    // ---- actions (exactly one) ----
    /// `initialize` with these params (`null`: version 1 and the scenario's
    /// client capabilities).
    #[serde(default, deserialize_with = "present")]
    pub initialize: Option<Value>,
    /// `session/new` in the scenario's directory (params merged over
    /// `{cwd, mcpServers: []}`). The new id becomes `$session`.
    #[serde(default, deserialize_with = "present")]
    pub new_session: Option<Value>,
    /// `session/prompt` on `$session`: a string (one text block) or blocks.
    #[serde(default)]
    pub prompt: Option<Value>,
    /// Any request: `{"method": …, "params": …}`.
    #[serde(default)]
    pub request: Option<Value>,
    /// Any notification: `{"method": …, "params": …}`.
    #[serde(default)]
    pub notify: Option<Value>,
    /// A raw line, sent as is.
    #[serde(default)]
    pub send: Option<String>,
    /// `session/cancel` for `$session`, now.
    #[serde(default)]
    pub cancel: bool,
    /// Waits for the response of the request labelled so.
    #[serde(default, rename = "await")]
    pub await_label: Option<String>,
    /// Closes the agent's stdin (end of input).
    #[serde(default)]
    pub close_input: bool,
    /// Sleeps this long.
    #[serde(default)]
    pub sleep_ms: Option<u64>,

    // ---- options ----
    /// What the report calls this step.
    #[serde(default)]
    pub title: Option<String>,
    /// Labels the request so a later `await` step can wait for it.
    #[serde(default, rename = "as")]
    pub label: Option<String>,
    /// `false`: send and go on without waiting for the response.
    #[serde(default = "yes")]
    pub wait: bool,
    /// Answers to `session/request_permission`, in order: `allow_once`,
    /// `allow_always`, `reject_once`, `reject_always`, `cancelled`, or
    /// `cancel-turn` (send `session/cancel`, then answer `cancelled`).
    #[serde(default)]
    pub permissions: Vec<String>,
    /// Results for the next `elicitation/create` requests, in order (an
    /// `ElicitationResponse`: `{"action": "accept", "content": {…}}`,
    /// `decline`, `cancel`); unscripted ones are declined.
    #[serde(default)]
    pub elicitations: Vec<Value>,
    /// Cancels the prompt when an update matching this arrives, after
    /// `ms`, or once files' JSON lines match.
    #[serde(default)]
    pub cancel_after: Option<CancelAfter>,

    // ---- expectations ----
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// When a step sends `session/cancel` (the first of those given that
/// happens).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CancelAfter {
    /// When a `session/update` whose `update` matches arrives.
    #[serde(default)]
    pub update: Option<Value>,
    /// This long after the step started.
    #[serde(default)]
    pub ms: Option<u64>,
    /// Once the JSON lines of each file named match its matcher (as the
    /// `jsonLines` expectation reads them), e.g. when an MCP server's log
    /// shows the call arrived.
    #[serde(default)]
    pub json_lines: Option<BTreeMap<String, Value>>,
}

fn yes() -> bool {
    true
}

/// Distinguishes a present `null` (`Some(Null)`) from an absent key.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// What a step expects. Every field is one requirement in the report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// Matcher on the response's `result`.
    #[serde(default)]
    pub result: Option<Value>,
    /// Matcher on the response's `error` (e.g. `{"code": -32602}`).
    #[serde(default)]
    pub error: Option<Value>,
    /// The prompt's stop reason.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// The agent's message text of this step (all chunks joined).
    #[serde(default)]
    pub text: Option<Value>,
    /// Updates of this step, an ordered subsequence of matchers.
    #[serde(default)]
    pub updates: Option<Vec<Value>>,
    /// The cards this step created, in order, matched on their final state
    /// (`toolCallId`, `title`, `kind`, `status`, `statuses`, `rawInput`,
    /// `rawOutput`, `content`, `locations`, `text`, `_meta`). The count must match.
    #[serde(default)]
    pub cards: Option<Vec<Value>>,
    /// The requests the agent made of the client during this step
    /// (`{method, params}`), an ordered subsequence of matchers.
    #[serde(default)]
    pub client_requests: Option<Vec<Value>>,
    /// The permission requests of this step, in order (their params).
    #[serde(default)]
    pub permission_requests: Option<Vec<Value>>,
    /// Files in the working directory afterwards: a string (exact content)
    /// or a matcher on the content (`{"$absent": true}`: no such file).
    #[serde(default)]
    pub files: Option<BTreeMap<String, Value>>,
    /// Files of JSON lines (one value a line, such as the MCP test server's
    /// `--log`), by path (relative to the working directory, or under
    /// `$dir`): a matcher on the array of their values. Waits up to
    /// [`JSON_LINES_WAIT`] for it to hold, since a server may still be
    /// writing.
    #[serde(default)]
    pub json_lines: Option<BTreeMap<String, Value>>,
    /// Records of candor's session log (candor only), an ordered
    /// subsequence of matchers.
    #[serde(default)]
    pub log: Option<Vec<Value>>,
    /// The requests candor's scripted model received during this step
    /// (candor only), an ordered subsequence of matchers.
    #[serde(default)]
    pub model_requests: Option<Vec<Value>>,
    /// After `closeInput`: the exit status and how soon.
    #[serde(default)]
    pub exit: Option<ExitExpect>,
    /// The response (or, for `closeInput`, the exit) comes within this many
    /// milliseconds of the step's start.
    #[serde(default)]
    pub within_ms: Option<u64>,
}

/// How long a `jsonLines` expectation waits for its file to match.
pub const JSON_LINES_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How the agent process must end.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExitExpect {
    pub code: i32,
}
