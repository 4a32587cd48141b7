//! The record format of a session's event log.
//!
//! A log is a JSONL file, `$CANDOR_HOME/sessions/<sessionId>.jsonl`, one
//! [`Record`] per line, appended and never rewritten:
//!
//! ```text
//! {"seq":0,"at":"2026-11-30T10:00:00.000Z","type":"session/started","sessionId":"…","cwd":"/p","format":1,"candorVersion":"0.1.0","provider":"scripted"}
//! {"seq":1,"at":"…","type":"user/message","content":[{"type":"text","text":"list the files"}]}
//! {"seq":2,"at":"…","type":"assistant/delta","channel":"text","text":"Let me look."}
//! {"seq":3,"at":"…","type":"assistant/message","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"stop":"tool_use"}
//! {"seq":4,"at":"…","type":"tool/call","toolCallId":"toolu_1","tool":"Bash","arguments":{"command":"ls"},"decision":{"outcome":"allow"}}
//! {"seq":5,"at":"…","type":"tool/started","toolCallId":"toolu_1"}
//! {"seq":6,"at":"…","type":"tool/output","toolCallId":"toolu_1","text":"Cargo.toml\nsrc\n"}
//! {"seq":7,"at":"…","type":"tool/result","toolCallId":"toolu_1","status":"completed","output":"Cargo.toml\nsrc\n","exitCode":0}
//! {"seq":8,"at":"…","type":"turn/ended","stopReason":"end_turn"}
//! ```
//!
//! * `seq` starts at 0 and grows by one per record; `at` is RFC 3339 UTC with
//!   milliseconds. Keys are camelCase; `type` names are `noun/verb-ed`.
//! * The set of `type`s is closed ([`Event`]); a reader meeting an unknown
//!   type stops there and reports it rather than guessing.
//! * `format` in `session/started` is [`FORMAT_VERSION`]; it changes when a
//!   record's meaning changes, never silently.
//!
//! The full description, record by record, is `protocol/event-log.md`; a
//! tidy test keeps the two in step.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agent_client_protocol_schema::v1::{ContentBlock, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::AssistantBlock;
use crate::conversation::ModelStop;

/// Version of the record format, written in `session/started`.
pub const FORMAT_VERSION: u32 = 1;

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Position in the log, from 0, contiguous.
    pub seq: u64,
    /// When the record was appended (RFC 3339, UTC, milliseconds).
    pub at: String,
    #[serde(flatten)]
    pub event: Event,
}

/// A fact about the session, in the past tense.
// Records are built once, written, and kept in one Vec per session; the
// size of the largest variant costs nothing worth an extra allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum Event {
    /// The first record of every log.
    #[serde(rename = "session/started")]
    SessionStarted {
        session_id: String,
        cwd: PathBuf,
        format: u32,
        candor_version: String,
        /// Which model provider the session was opened with.
        provider: String,
        /// The model, when the provider has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The model's context window in tokens, when known (for usage).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
        /// A subagent's log: the session and the `Agent` call that started
        /// it (the parent's `subagent/started` names this log back).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<ParentRef>,
    },
    /// Where the session works, as the model is told it: the facts gathered
    /// when the session started (platform, shell, date, directory, git) and
    /// the project's instruction files. The system prompt of every model
    /// request is assembled from the latest of these records
    /// (`session::system`), so a loaded session is sent the same one.
    #[serde(rename = "session/environment")]
    SessionEnvironment(Environment),
    /// Something the user should know that is not part of the conversation
    /// (a retried model request, a configuration problem).
    #[serde(rename = "session/notice")]
    Notice { level: NoticeLevel, text: String },
    /// A session setting changed (`session/set_config_option`,
    /// `session/set_mode`, or a command the user typed: `via`).
    #[serde(rename = "config/changed")]
    ConfigChanged {
        config_id: ConfigId,
        value: String,
        /// How the user changed it, when not through the client's config
        /// options (`session/set_config_option`, `session/set_mode`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<ConfigVia>,
    },
    /// A prompt from the user, as the client sent it (ACP content blocks),
    /// but for its images' data: each image block's `data` is emptied and
    /// the image kept in the content store beside the log, named in
    /// `images` by its block's place and its digest. It opens a turn.
    #[serde(rename = "user/message")]
    UserMessage {
        content: Vec<ContentBlock>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<PromptImage>,
        /// How the prompt came to open its turn when it did not run at
        /// once: it waited in the queue, or it is a steering message that
        /// found no turn running.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        via: Option<Via>,
    },
    /// A `session/prompt` that arrived while a turn ran (or other prompts
    /// waited): it waits, in the order received, for its own turn, which
    /// opens with a `user/message` whose `via` names this request.
    #[serde(rename = "prompt/queued")]
    PromptQueued {
        request_id: RequestId,
        /// The prompt as text (an image is `[image]`); its blocks are
        /// recorded whole by the `user/message` of its turn.
        text: String,
    },
    /// A queued prompt that will not run; its request was answered
    /// `cancelled`.
    #[serde(rename = "prompt/unqueued")]
    PromptUnqueued {
        request_id: RequestId,
        reason: Unqueued,
    },
    /// A `_session/steering` message, recorded before it is answered.
    #[serde(rename = "steering/received")]
    SteeringReceived {
        steering_id: String,
        content: Vec<ContentBlock>,
    },
    /// The steering message was given to the model here, before the model
    /// request that follows (never between a call and its result). The
    /// client is shown it here as the user's message; the model's history
    /// has it here.
    #[serde(rename = "steering/delivered")]
    SteeringDelivered {
        steering_id: String,
        content: Vec<ContentBlock>,
    },
    /// A steering message that never reached the model.
    #[serde(rename = "steering/dropped")]
    SteeringDropped {
        steering_id: String,
        reason: Dropped,
    },
    /// A hook gave the model something to read: context from a
    /// `SessionStart` or `UserPromptSubmit` hook, or a `Stop` hook's reason
    /// for not letting the turn end (the turn goes on).
    #[serde(rename = "hook/context")]
    HookContext {
        /// The hook event: `SessionStart`, `UserPromptSubmit` or `Stop`.
        event: SessionEvent,
        hook: String,
        text: String,
        /// For the model only: the hook asked for it not to be shown
        /// (Claude Code's `suppressOutput`).
        #[serde(default, skip_serializing_if = "is_false")]
        quiet: bool,
    },
    /// A `UserPromptSubmit` hook refused the prompt recorded just before:
    /// the model never sees it, and the turn ends `refusal`.
    #[serde(rename = "prompt/blocked")]
    PromptBlocked { hook: String, reason: String },
    /// The prompt recorded just before was a command candor expanded: an
    /// MCP server's prompt (`/mcp__<server>__<prompt> args`, `server` set)
    /// or one of the user's command files (`/name args`, `source` and
    /// `path` set). `text` is the expansion, what the model is given in
    /// place of what the user typed.
    #[serde(rename = "prompt/expanded")]
    PromptExpanded {
        command: String,
        /// The MCP server that expanded it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        /// Whose command file it is (Claude Code's project or user
        /// commands, or a Codex prompt).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<CommandSource>,
        /// The command file, as read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<PathBuf>,
        text: String,
        /// What the file asked for that candor did not do (for the user).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ignored: Vec<String>,
    },
    /// A resource the prompt linked (`resource_link`), read from the MCP
    /// server that lists it, or for a `file:` link (no `server`) the file
    /// at `path`: the model is given `text`, or the `image`, with the
    /// prompt.
    #[serde(rename = "prompt/resource")]
    PromptResource {
        uri: String,
        /// The MCP server that listed it; none for a `file:` link.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        /// For a `file:` link: the file read (absolute, links resolved).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<PathBuf>,
        #[serde(default)]
        text: String,
        /// A linked image file, kept in the content store.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<StoredImage>,
    },
    /// candor offered the client these slash commands (sent as
    /// `available_commands_update` right after the `session/new` or
    /// `session/load` response).
    #[serde(rename = "commands/offered")]
    CommandsOffered { commands: Vec<OfferedCommand> },
    /// The prompt recorded just before was one of candor's own commands
    /// (`/hooks`, `/audit`): candor answered it without the model, which
    /// never sees the prompt or the answer.
    #[serde(rename = "command/ran")]
    CommandRan { command: String, output: String },
    /// A piece of the model's output as it streamed in. Shown to the user;
    /// not part of the model's history (the `assistant/message` is).
    #[serde(rename = "assistant/delta")]
    AssistantDelta { channel: DeltaChannel, text: String },
    /// The model's turn as it emitted it: text, thinking and tool calls with
    /// the arguments the model wrote, in order. Never edited afterwards.
    #[serde(rename = "assistant/message")]
    AssistantMessage {
        content: Vec<AssistantBlock>,
        stop: ModelStop,
        /// True when the stream was cut short by a cancel: `content` holds
        /// the text received so far and no tool calls.
        #[serde(default, skip_serializing_if = "is_false")]
        interrupted: bool,
        /// The session-unique id candor gave each tool call of `content`,
        /// in order, when one differs from the model's own (a model that
        /// reuses an id, a server that sends none): every record about a
        /// call uses this id; the model's history refers to its own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        call_ids: Vec<String>,
        /// What this request cost, when candor knows the model's prices
        /// (`providers::prices`); absent otherwise, never a guess.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<Cost>,
    },
    /// A tool call, settled: hooks, permission rules and the mode have had
    /// their say. Appended (and, unless refused, flushed to disk) before the
    /// card appears and before anything runs. `arguments` are the effective
    /// arguments: what runs, what the card and a permission prompt show.
    #[serde(rename = "tool/call")]
    ToolCall {
        tool_call_id: String,
        tool: String,
        arguments: Value,
        /// What the model asked for, when hooks rewrote it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        original_arguments: Option<Value>,
        /// `sha256:` of the tool name and the canonical `arguments`.
        #[serde(default)]
        digest: String,
        decision: Decision,
        /// Every hook that ran, in order, with its decision.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        hooks: Vec<HookRecord>,
        /// The hooks whose rewrites are in `arguments`, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rewritten_by: Vec<String>,
        /// For a file tool: the change it would make, computed from the
        /// file as it was when the call was settled (shown on the card and
        /// in a permission prompt).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<FileDiff>,
        /// For an MCP tool: which server and tool (`tool` is the name the
        /// model called), as the card shows them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mcp: Option<McpTarget>,
        /// For a Bash call: the boundary it runs in, settled with the
        /// arguments (`protocol/sandbox.md`, "The `Boundary` record"); the
        /// card's sandbox line is made from it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<crate::sandbox::Boundary>,
    },
    /// candor asked the user whether the call may run (`decision` was `ask`).
    #[serde(rename = "permission/requested")]
    PermissionRequested {
        tool_call_id: String,
        /// The digest of the arguments shown; the answer binds to it.
        digest: String,
        options: Vec<PermissionChoice>,
        /// Asking again because the file changed before the answer: the
        /// change as it would now be (the card shows it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<FileDiff>,
    },
    /// The user's answer (flushed to disk before the call runs).
    #[serde(rename = "permission/resolved")]
    PermissionResolved {
        tool_call_id: String,
        outcome: PermissionOutcome,
        /// The digest of the arguments the answer was given for.
        digest: String,
        /// For a file tool: the `base` of the diff the answer was given for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<String>,
        /// With `allowed_always`: the session rule it added.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A confined command tried to reach a host its network allowlist does
    /// not name: candor asks the user on the call's card
    /// (`session/request_permission`, "Allow network access to HOST?").
    #[serde(rename = "network/requested")]
    NetworkRequested {
        tool_call_id: String,
        host: String,
        port: u16,
        options: Vec<PermissionChoice>,
    },
    /// How a confined command's connection to a host was decided: by its
    /// allowlist, the session's grant, the user's answer, no answer in
    /// time, or the limit on how many hosts a command may ask about. One
    /// record per host a command reaches (the first connection's).
    #[serde(rename = "network/decided")]
    NetworkDecided {
        tool_call_id: String,
        host: String,
        port: u16,
        allowed: bool,
        by: NetworkDecider,
        /// The allowlist rule that named the host (`by: allowlist`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<String>,
        /// The user's answer (`by: user`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<PermissionOutcome>,
        /// With `allowed_always`: the host allowed for the rest of the
        /// session (a later command's allowlist names it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An older candor's question (read in old logs, never written now):
    /// the project's own settings want what only a trusted project may have
    /// (hooks, allow rules, a mode that asks less: `bridges::project_trust`), asked
    /// through a permission request. Its answer no longer restores trust.
    #[serde(rename = "trust/requested")]
    TrustRequested {
        project: PathBuf,
        /// Each hook command, allow rule and mode, as shown.
        wants: Vec<String>,
        /// `sha256:` of `wants`; the answer binds to it.
        digest: String,
    },
    /// The user's answer (flushed before any of the wants applies).
    #[serde(rename = "trust/resolved")]
    TrustResolved {
        digest: String,
        outcome: TrustOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The user typed `/trust` (or `/trust always`): the project's settings
    /// apply from now on in this session, for exactly `wants` and `files`
    /// (flushed before any of them applies). A loaded or resumed session
    /// trusts them again while they are the same (`digest`).
    #[serde(rename = "trust/granted")]
    TrustGranted {
        project: PathBuf,
        /// Each hook command, allow rule and mode, whole.
        wants: Vec<String>,
        /// Each project file the project's hooks run, and what it held
        /// (`sha256:…`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        files: BTreeMap<String, String>,
        /// What the grant binds to (`bridges::project_trust::digest`).
        digest: String,
        /// `/trust always`: remembered in `$CANDOR_HOME/trust.json` too.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        always: bool,
    },
    /// The tool began executing.
    #[serde(rename = "tool/started")]
    ToolStarted { tool_call_id: String },
    /// The command runs in an editor terminal (`terminal/create`); the card
    /// shows that terminal.
    #[serde(rename = "tool/terminal")]
    ToolTerminal {
        tool_call_id: String,
        terminal_id: String,
    },
    /// Output the tool produced while running (already throttled; appended
    /// in order). Shown on the card; the model gets `tool/result.output`.
    #[serde(rename = "tool/output")]
    ToolOutput {
        tool_call_id: String,
        text: String,
        /// Bytes the command printed before `text` that no record holds
        /// (a huge output: `tool/result.outputFile` has them).
        #[serde(default, skip_serializing_if = "is_zero")]
        skipped: u64,
    },
    /// How a tool call ended. Every `tool_use` of an `assistant/message`
    /// gets exactly one, even when it never ran (refused, cancelled).
    #[serde(rename = "tool/result")]
    ToolResult {
        tool_call_id: String,
        status: ResultStatus,
        /// What the model is told.
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        /// What post-execute hooks said about the result.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        hook_notes: Vec<HookNote>,
        /// The change a file tool made.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<FileDiff>,
        /// An output too big for the log: the file beside it holding all
        /// of it (`output` keeps its head and tail).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_file: Option<OutputFile>,
    },
    /// What an MCP tool answered beside its text (images, resource links,
    /// embedded resources, structured content), just before its
    /// `tool/result`: the card shows it, and the model is given it.
    #[serde(rename = "tool/content")]
    ToolContent {
        tool_call_id: String,
        content: Vec<ResultContent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
    },
    /// An MCP server asked the user something (`elicitation/create`)
    /// while serving one of the session's calls: what it asked, as the
    /// editor is asked it (or would have been), before it is asked.
    #[serde(rename = "elicitation/requested")]
    ElicitationRequested(ElicitationAsked),
    /// How an MCP server's question ended: the user's answer (its values
    /// but those that look like secrets), or why candor answered for them.
    #[serde(rename = "elicitation/resolved")]
    ElicitationResolved(ElicitationAnswered),
    /// The model's history was compacted: from now on the model is sent
    /// `summary` in place of the records `from..=to`, then the records
    /// after `to` as before. The log, the cards and a replay keep
    /// everything; only the history changes. A later compaction covers
    /// the earlier one (its span starts at `from` again and its summary
    /// was written from the earlier one).
    #[serde(rename = "history/compacted")]
    HistoryCompacted {
        /// The first record the summary stands for.
        from: u64,
        /// The last record it stands for: the next one opens a user turn
        /// (or, inside a prompt too long to keep whole, a model response
        /// after tool results).
        to: u64,
        /// What the model wrote, for itself to continue from.
        summary: String,
        trigger: CompactTrigger,
        /// `/compact <focus>`: what the user asked the summary to keep.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        focus: Option<String>,
        /// The estimated context of the next request before and after.
        tokens_before: u64,
        tokens_after: u64,
        /// What the provider reported for the summary request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<crate::conversation::Usage>,
        /// What the summary request cost, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<Cost>,
        /// The summary request was shown the older part shortened (long
        /// outputs elided), since it did not fit whole.
        #[serde(default, skip_serializing_if = "is_false")]
        elided: bool,
        /// Inside a prompt too long to keep whole: the records of the
        /// user's request (its `user/message` and what its message is made
        /// of) that stay verbatim, before the summary, though they are
        /// inside `from`…`to`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kept_prompt: Option<SeqSpan>,
    },
    /// The session's title, made once after its first turn (shown as
    /// `session_info_update`, listed by `session/list`, kept on load).
    #[serde(rename = "session/titled")]
    SessionTitled { title: String, source: TitleSource },
    /// The `Agent` call `tool_call_id` started a subagent: a child session
    /// with its own log, `session_id`, whose `session/started` names this
    /// session and call as its parent.
    #[serde(rename = "subagent/started")]
    SubagentStarted {
        tool_call_id: String,
        session_id: String,
        agent_type: String,
        description: String,
    },
    /// One of the subagent's calls changed state, as the child's log
    /// records it (settled, asking, running, finished): what the parent's
    /// card shows of the child's work, one line per child call.
    #[serde(rename = "subagent/activity")]
    SubagentActivity {
        tool_call_id: String,
        session_id: String,
        child_call_id: String,
        /// The child call's card title (its effective command or path).
        title: String,
        status: ChildCallStatus,
    },
    /// The subagent is over; the parent's `tool/result` for the `Agent`
    /// call follows with its answer.
    #[serde(rename = "subagent/ended")]
    SubagentEnded {
        tool_call_id: String,
        session_id: String,
        outcome: SubagentOutcome,
        /// How many model requests it made.
        requests: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// In a subagent's log, right after `session/started`: what it was
    /// given, already narrowed to what its parent has (`protocol/subagents.md`).
    #[serde(rename = "subagent/assigned")]
    SubagentAssigned(Assignment),
    /// The turn is over; `session/prompt` answers from this record.
    #[serde(rename = "turn/ended")]
    TurnEnded {
        stop_reason: TurnStop,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// The session and call that started a subagent (`session/started`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    pub session_id: String,
    pub tool_call_id: String,
    /// 1 for a child of a session the user opened, 2 for its child.
    pub depth: u32,
}

/// A subagent's call as its parent's card shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildCallStatus {
    /// Settled, not started.
    Pending,
    /// Waiting for the user's answer.
    Asking,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl ChildCallStatus {
    pub fn name(self) -> &'static str {
        match self {
            ChildCallStatus::Pending => "pending",
            ChildCallStatus::Asking => "waiting for your answer",
            ChildCallStatus::Running => "running",
            ChildCallStatus::Completed => "done",
            ChildCallStatus::Failed => "failed",
            ChildCallStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the call is over.
    pub fn ended(self) -> bool {
        matches!(
            self,
            ChildCallStatus::Completed | ChildCallStatus::Failed | ChildCallStatus::Cancelled
        )
    }
}

/// How a subagent ended (`subagent/ended`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentOutcome {
    /// Its model answered.
    Answered,
    /// It reached its `maxTurns` before answering.
    MaxTurns,
    Cancelled,
    /// It could not run or finish (the reason is in `error`).
    Failed,
}

/// What a subagent was given (`subagent/assigned`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    /// The definition's name (`general-purpose`, `Explore`, a user's).
    pub agent_type: String,
    /// The `Agent` call's short description.
    pub description: String,
    /// Where the definition came from: `built-in`, or its file.
    pub source: String,
    /// The child's system prompt (the definition's body, or the
    /// built-in's), before the environment and instruction files.
    pub system_prompt: String,
    /// The tools it may call, when narrowed (none: the parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The tools it may never call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disallowed_tools: Vec<String>,
    /// The permission mode it runs in (never more than its parent's).
    pub mode: crate::mode::Mode,
    /// The model it asks, when the provider has models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The most model requests it may make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// The subagent types it may start in turn (its own `Agent` calls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_start: Vec<String>,
    /// What its definition asked for that candor does not do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_honoured: Vec<String>,
}

/// An MCP server's question (`elicitation/requested`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationAsked {
    /// The call the server was serving (the card it is shown on).
    pub tool_call_id: String,
    /// candor's id of this question within the session.
    pub elicitation_id: String,
    /// The server that asks.
    pub server: String,
    pub mode: ElicitationKind,
    /// The server's message, as it sent it.
    pub message: String,
    /// Form mode: the fields asked for (the server's `requestedSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// URL mode: the page the user is asked to open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The fields that look like secrets (a password, a token, a key):
    /// the card says so, and their answers are not kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret: Vec<String>,
}

/// The end of an MCP server's question (`elicitation/resolved`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationAnswered {
    pub tool_call_id: String,
    pub elicitation_id: String,
    /// What the server is told.
    pub action: ElicitationAction,
    /// Who answered: the user (through the editor) or candor, for them.
    pub by: ElicitationBy,
    /// With `accept`: the values given, those of [`ElicitationAsked::secret`]
    /// fields replaced by `"[withheld]"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, Value>>,
    /// Why candor answered (no forms, withdrawn, timed out, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How an MCP server asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationKind {
    /// A form of fields the editor shows.
    Form,
    /// A page the user is asked to open.
    Url,
}

/// What a server is told of its question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
}

/// Who answered an MCP server's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationBy {
    User,
    Candor,
}

/// Where a session's title came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TitleSource {
    /// A short request to the session's model.
    Model,
    /// The first prompt's first line.
    Prompt,
}

/// What a model request cost (`assistant/message`, `history/compacted`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub amount: f64,
    /// ISO 4217 (`USD`).
    pub currency: String,
}

/// Records `from`…`to`, both included, by seq.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqSpan {
    pub from: u64,
    pub to: u64,
}

/// The facts of a `session/environment` record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    /// Operating system and architecture (`linux x86_64`).
    pub platform: String,
    /// The kernel's release (`uname -r`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_release: Option<String>,
    /// The user's login shell (`$SHELL`), when set; the Bash tool runs
    /// `bash` whatever it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// The day the session started, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// The git repository the working directory is in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitFacts>,
    /// The instruction files loaded, in the order the model is given them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<Instructions>,
    /// What could not be gathered or was cut, for `/context` (never sent
    /// to the model).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The directories besides `cwd` the session counts as its project
    /// (ACP `additionalDirectories`, checked by `crate::roots`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<AddedDirectory>,
    /// What the client added to (or put in place of) candor's guidance
    /// (ACP `systemPrompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_prompt: Option<ClientPrompt>,
}

/// A directory the session counts as its project besides its working
/// directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddedDirectory {
    /// As the client gave it.
    pub path: PathBuf,
    /// Where it leads, when that is elsewhere (a symbolic link): the
    /// directory the rules and the sandbox use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<PathBuf>,
}

impl AddedDirectory {
    /// The directory itself, its links resolved.
    pub fn real(&self) -> &std::path::Path {
        self.resolved.as_deref().unwrap_or(&self.path)
    }
}

/// The client's system prompt (ACP `systemPrompt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientPrompt {
    pub mode: ClientPromptMode,
    /// Its text blocks, joined by blank lines.
    pub text: String,
}

/// How the client's system prompt meets candor's guidance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientPromptMode {
    /// After candor's whole system prompt.
    Append,
    /// In place of candor's guidance (the environment and the instruction
    /// files stay).
    Override,
}

/// What git said about the repository, each part bounded.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitFacts {
    /// The repository's top directory.
    pub root: PathBuf,
    /// The branch checked out, or `HEAD` when detached; absent when git
    /// could not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// `git status --porcelain` lines, the first ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    /// How many more status lines there were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub status_more: u64,
    /// Subjects of the most recent commits, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<String>,
    /// Why some of it is missing (git timed out, failed, is not installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// One instruction file as it was loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Instructions {
    /// The file (as found; its links resolved when read).
    pub path: PathBuf,
    /// Whose file it is.
    pub scope: InstructionScope,
    /// The file whose `@path` imported this one, for an import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_by: Option<PathBuf>,
    /// The text given to the model (cut to the caps, the cut marked).
    pub text: String,
    /// The file's size in bytes.
    pub bytes: u64,
    /// Whether `text` is only the start of the file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// Whose an instruction file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstructionScope {
    /// The user's own (`~/.codex/AGENTS.md`, `~/.claude/CLAUDE.md`).
    User,
    /// The project's (from the repository root down to the working
    /// directory).
    Project,
}

/// Why the history was compacted (`history/compacted.trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The next request would have passed the window less the reserve.
    Auto,
    /// The user asked (`/compact`).
    Manual,
    /// The provider answered that the request is too long.
    Overflow,
}

impl CompactTrigger {
    pub fn name(self) -> &'static str {
        match self {
            CompactTrigger::Auto => "auto",
            CompactTrigger::Manual => "manual",
            CompactTrigger::Overflow => "overflow",
        }
    }
}

/// A decision's strength, weakest first: the strictest of a fold wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Allow,
    Ask,
    Deny,
}

/// A post-execute hook's say, as `tool/result` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookNote {
    pub hook: String,
    pub decision: NoteKind,
    pub text: String,
}

/// What a hook's note is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// Accepted the result; its context is told to the model and shown.
    Accept,
    /// Accepted; its context is told to the model, not shown
    /// (`suppressOutput`).
    Quiet,
    /// Context a PreToolUse hook gave with the call.
    Context,
    /// Objected to the result (told to the model; nothing is undone).
    Block,
    /// The hook failed (shown, not told to the model).
    Error,
}

impl NoteKind {
    /// Whether the model is told the note.
    pub fn told_to_model(self) -> bool {
        !matches!(self, NoteKind::Error)
    }
}

/// One hook's say about one call, as the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRecord {
    pub hook: String,
    pub decision: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The hook's rewrite took effect.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewrote: bool,
    /// The hook failed and was passed over (a bridge hook fails open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The events candor runs hooks on, by their Claude Code names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SessionEvent {
    /// A prompt arrived, before the model sees it. A block refuses it.
    UserPromptSubmit,
    /// The model ended its turn. A block makes it go on, told the reason.
    Stop,
    /// The session opened (`source`: `startup` or `resume`).
    SessionStart,
    /// The session is closing (`reason`). Answers are not used.
    SessionEnd,
    /// A subagent starts (`agent_id`, `agent_type`; the matcher is tried on
    /// the type). Its context is given to the subagent.
    SubagentStart,
    /// A subagent's model ended its turn. A block makes it go on.
    SubagentStop,
}

impl SessionEvent {
    pub fn name(self) -> &'static str {
        match self {
            SessionEvent::UserPromptSubmit => "UserPromptSubmit",
            SessionEvent::Stop => "Stop",
            SessionEvent::SessionStart => "SessionStart",
            SessionEvent::SessionEnd => "SessionEnd",
            SessionEvent::SubagentStart => "SubagentStart",
            SessionEvent::SubagentStop => "SubagentStop",
        }
    }
}

/// Who decided a connection of a confined command (`network/decided`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkDecider {
    /// A domain of the command's allowlist (its boundary's).
    Allowlist,
    /// The user allowed the host for the session, earlier.
    Grant,
    /// The user, asked on the call's card.
    User,
    /// The user was asked and the question ended without an answer in
    /// time (or the command ended first).
    NoAnswer,
    /// The command asked about too many hosts; refused unasked.
    Limit,
}

/// A `network/decided` record as one line for people (the call's card and
/// `candor audit`): `network: you allowed example.com:443 for this
/// command`.
pub fn network_line(event: &Event) -> Option<String> {
    let Event::NetworkDecided {
        host,
        port,
        allowed,
        by,
        rule,
        outcome,
        reason,
        ..
    } = event
    else {
        return None;
    };
    let place = format!("{host}:{port}");
    let why = reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    Some(match (by, outcome, allowed) {
        (NetworkDecider::Allowlist, ..) => format!(
            "network: {place} allowed by the allowlist (`{}`)",
            rule.as_deref().unwrap_or(host)
        ),
        (NetworkDecider::Grant, ..) => {
            format!("network: {place} allowed (you allowed {host} for this session)")
        }
        (NetworkDecider::User, Some(PermissionOutcome::AllowedAlways), _) => {
            format!("network: you allowed {host} for the rest of this session ({place})")
        }
        (NetworkDecider::User, _, true) => {
            format!("network: you allowed {place} for this command")
        }
        (NetworkDecider::User, Some(PermissionOutcome::Rejected), false) => {
            format!("network: you refused {place}")
        }
        (NetworkDecider::User, _, false) | (NetworkDecider::NoAnswer, ..) => {
            format!("network: {place} refused, not answered{why}")
        }
        (NetworkDecider::Limit, ..) => {
            format!("network: {place} refused unasked (this command asked about too many hosts)")
        }
    })
}

/// The session settings a client changes (`config/changed.configId`, the
/// ACP config option ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigId {
    Mode,
    Model,
    /// The model's effort level (`providers::effort`).
    Effort,
    /// The sandbox's preset the user chose for the session (`/sandbox`,
    /// or the `sandbox` option): `read-only`, `workspace-write` or
    /// `full-access`.
    Sandbox,
    /// The sandbox's network the user chose for the session
    /// (`/sandbox network on|off`, or the `network` option): `off`,
    /// `allowlist` or `on`.
    Network,
}

/// How a setting was changed when not through the client's config options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigVia {
    /// A command the user typed in a prompt (`/sandbox off`).
    Command,
}

impl ConfigId {
    pub fn id(self) -> &'static str {
        match self {
            ConfigId::Mode => "mode",
            ConfigId::Model => "model",
            ConfigId::Effort => "effort",
            ConfigId::Sandbox => "sandbox",
            ConfigId::Network => "network",
        }
    }
}

/// A slash command candor offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferedCommand {
    pub name: String,
    pub description: String,
    /// What to type after the command (ACP's unstructured input hint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Where a user's command file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandSource {
    /// The project's `.claude/commands/` (Claude Code's project commands).
    Project,
    /// The user's `~/.claude/commands/` (Claude Code's personal commands).
    User,
    /// The user's `$CODEX_HOME/prompts/` (Codex's custom prompts).
    Codex,
}

impl CommandSource {
    /// How descriptions and notices name it.
    pub fn name(self) -> &'static str {
        match self {
            CommandSource::Project => "project",
            CommandSource::User => "user",
            CommandSource::Codex => "codex",
        }
    }
}

/// How much a notice matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// Which stream a delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaChannel {
    Text,
    Thinking,
}

/// The settled decision for a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub outcome: Outcome,
    /// Why, for anything but a plain allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who decided (`candor` for candor's own checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl Decision {
    pub fn allow() -> Self {
        Self {
            outcome: Outcome::Allow,
            reason: None,
            by: None,
        }
    }

    pub fn deny(by: &str, reason: impl Into<String>) -> Self {
        Self {
            outcome: Outcome::Deny,
            reason: Some(reason.into()),
            by: Some(by.to_owned()),
        }
    }
}

/// allow: runs; ask: runs if the user allows it (`permission/resolved`
/// follows); deny: does not run, the card fails with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Allow,
    Ask,
    Deny,
}

/// The MCP server and tool a `tool/call` is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTarget {
    pub server: String,
    /// The server's own name for the tool.
    pub tool: String,
    /// The tool's title, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the server said: the hints of the tool's `annotations`, each
    /// as sent (one it did not send is absent). `None`: a log written
    /// before candor recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpHints>,
    /// What candor takes the tool to be (`tools::mcp::annotations`): it
    /// changes nothing. The card's kind is `read` (`fetch` when it is also
    /// `openWorld`); with `openWorld` false it runs where reads do.
    #[serde(default)]
    pub read_only: bool,
    /// What candor takes the tool to be: it may reach outside (the
    /// network, other systems).
    #[serde(default)]
    pub open_world: bool,
    /// Why candor reads the annotations as it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<String>,
}

/// The hints of an MCP tool's `annotations`, as its server sent them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpHints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// One block of what an MCP tool answered (MCP's content types; text
/// blocks are in the result's `output`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ResultContent {
    /// An image: kept in the content store beside the log (`digest`,
    /// `bytes`; `data` empty); in logs written before the store, base64
    /// inline in `data`.
    #[serde(rename_all = "camelCase")]
    Image {
        mime_type: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        data: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
    },
    /// A link to a resource.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        uri: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource embedded in the answer (its text, when it is text).
    #[serde(rename_all = "camelCase")]
    Resource {
        uri: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
}

/// An image kept in the session's content store
/// (`<sessions>/<sessionId>.content/<hex digits of digest>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredImage {
    /// `sha256:` of the image's bytes (the store file's name).
    pub digest: String,
    pub mime_type: String,
    /// Its size, decoded.
    pub bytes: u64,
}

/// An image of a prompt: which block of `user/message.content` it is
/// (that block's `data` is empty in the log), and where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptImage {
    /// The block's place in `content`, from 0.
    pub block: usize,
    #[serde(flatten)]
    pub image: StoredImage,
}

/// A change to one text file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: PathBuf,
    /// The text before (`None`: the file did not exist).
    pub old_text: Option<String>,
    pub new_text: String,
    /// The first line (1-based) that differs.
    pub line: u32,
    /// What the diff was computed on: `sha256:` of the file's text, or
    /// `absent` (it did not exist). A permission answer binds to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The file was not read (it is outside the project, or a Read rule
    /// denies it, and candor asks first): the diff is the proposed change
    /// from the arguments alone.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unread: bool,
}

/// One option offered in a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionChoice {
    pub option_id: String,
    /// ACP `PermissionOptionKind`: `allow_once`, `allow_always`, `reject_once`.
    pub kind: String,
    pub name: String,
}

/// How a permission request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOutcome {
    AllowedOnce,
    AllowedAlways,
    Rejected,
    /// The turn was cancelled while the request was open.
    Cancelled,
    /// The client answered with an error, or dismissed the request.
    Failed,
}

/// The answer to a `trust/requested`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustOutcome {
    /// Trusted, and remembered for these wants (`$CANDOR_HOME/trust.json`).
    Trusted,
    /// Trusted for this session only.
    TrustedOnce,
    /// Not now: asked again in the next session.
    NotNow,
    /// Never for these wants (remembered; asked again if they change).
    Refused,
    /// The prompt was cancelled while the question was open; asked again.
    Cancelled,
    /// The client could not ask; treated as not now.
    Failed,
}

impl TrustOutcome {
    pub fn trusts(self) -> bool {
        matches!(self, TrustOutcome::Trusted | TrustOutcome::TrustedOnce)
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// Ran and succeeded.
    Completed,
    /// Ran and failed (non-zero exit, tool error), or was refused.
    Failed,
    /// Stopped or never started because the turn was cancelled.
    Cancelled,
}

/// How a `user/message` came to open its turn, when not straight from its
/// `session/prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Via {
    /// It waited in the queue (`prompt/queued` with this request id).
    Queue { request_id: RequestId },
    /// A steering message (`steering/received` with this id) that found no
    /// turn to join: it opened one.
    Steering { steering_id: String },
}

/// Why a queued prompt was taken out of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Unqueued {
    /// The client withdrew it (`$/cancel_request`).
    Cancelled,
    /// The session ended (closed, candor stopped or crashed) before it ran.
    Stopped,
}

/// Why a steering message never reached the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Dropped {
    /// The turn it was for was cancelled before the model's next request.
    Cancelled,
    /// The session ended (closed, candor stopped or crashed) first.
    Stopped,
}

/// Why a turn ended. The ACP stop reasons, plus `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStop {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
    /// The turn failed (provider or log error); `error` says why and the
    /// prompt was answered with a JSON-RPC error.
    Error,
}

/// Where a huge output went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputFile {
    /// `<sessions>/<sessionId>.outputs/<call>.out`; `None` when it could
    /// not be written (`problem` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Every byte the command printed.
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The tool calls of an `assistant/message`: each call's id in the model's
/// turn and the session-unique id every other record uses for it.
pub fn call_ids_of(
    content: &[crate::conversation::AssistantBlock],
    call_ids: &[String],
) -> Vec<(String, String)> {
    content
        .iter()
        .filter_map(|b| match b {
            crate::conversation::AssistantBlock::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .enumerate()
        .map(|(i, model)| {
            let card = call_ids.get(i).cloned().unwrap_or_else(|| model.clone());
            (model, card)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_round_trip_with_flat_camel_case_fields() {
        let rec = Record {
            seq: 4,
            at: "2026-11-30T10:00:00.000Z".into(),
            event: Event::ToolCall {
                tool_call_id: "toolu_1".into(),
                tool: "Bash".into(),
                arguments: json!({"command": "ls"}),
                original_arguments: None,
                digest: "sha256:00".into(),
                decision: Decision::allow(),
                hooks: Vec::new(),
                rewritten_by: Vec::new(),
                preview: None,
                mcp: None,
                sandbox: None,
            },
        };
        let line = serde_json::to_value(&rec).unwrap();
        assert_eq!(
            line,
            json!({"seq": 4, "at": "2026-11-30T10:00:00.000Z", "type": "tool/call",
                   "toolCallId": "toolu_1", "tool": "Bash", "arguments": {"command": "ls"},
                   "digest": "sha256:00", "decision": {"outcome": "allow"}})
        );
        let back: Record = serde_json::from_value(line).unwrap();
        assert_eq!(back, rec);
    }

    #[test]
    fn unknown_types_are_rejected() {
        let err = serde_json::from_str::<Record>(r#"{"seq":1,"at":"x","type":"tool/teleported"}"#);
        assert!(err.is_err());
    }
}
