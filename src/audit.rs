//! The audit trail: a session's log as a readable timeline (`candor audit`,
//! and the `/audit` command inside a session).
//!
//! [`timeline`] folds the records into [`Entry`]s: prompts, each tool call
//! with its decision, who decided, every hook's say, the original and
//! effective arguments, the permission answer, how it ended and how long it
//! ran; turn ends, notices, setting changes. [`render`] prints them for
//! people (a diff where a hook rewrote a call); `--json` prints the entries
//! as they are, one JSON array.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use agent_client_protocol_schema::v1::RequestId;

use crate::event_log::{
    Decision, Dropped, Event, NoteKind, NoticeLevel, PermissionOutcome, Record, ResultStatus,
    TrustOutcome, TurnStop, Unqueued, Via,
};
use crate::history::flatten_prompt;
use crate::interception::HookRecord;

/// One line (or block) of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Entry {
    Session {
        at: String,
        session_id: String,
        cwd: String,
        provider: String,
        model: Option<String>,
    },
    /// Where the session worked, as the model was told it: the git branch
    /// and the instruction files loaded (`path`, `bytes`, `cut`).
    Environment {
        at: String,
        platform: String,
        branch: Option<String>,
        instructions: Vec<(String, u64, bool)>,
    },
    Prompt {
        at: String,
        text: String,
        /// Refused by a UserPromptSubmit hook: `(hook, reason)`.
        blocked: Option<(String, String)>,
        /// It waited in the queue, or a steering message opened its turn.
        #[serde(skip_serializing_if = "Option::is_none")]
        via: Option<Via>,
    },
    /// A prompt received while a turn ran: it waited for its own turn.
    Queued {
        at: String,
        request_id: RequestId,
        text: String,
    },
    /// A queued prompt taken out before it ran.
    Unqueued {
        at: String,
        request_id: RequestId,
        reason: Unqueued,
    },
    /// A steering message received (`_session/steering`).
    Steering {
        at: String,
        steering_id: String,
        text: String,
    },
    /// A steering message given to the model here, as a user message.
    SteeringDelivered {
        at: String,
        steering_id: String,
        text: String,
    },
    /// A steering message that never reached the model.
    SteeringDropped {
        at: String,
        steering_id: String,
        reason: Dropped,
    },
    Call(Box<Call>),
    /// An MCP server's question during a call (`elicitation/requested`)
    /// and how it ended (`elicitation/resolved`).
    Elicitation {
        at: String,
        tool_call_id: String,
        elicitation_id: String,
        server: String,
        /// What the card said of it.
        text: String,
        /// What the server was told, and who answered: none when it never
        /// ended (candor stopped).
        action: Option<crate::event_log::ElicitationAction>,
        by: Option<crate::event_log::ElicitationBy>,
        /// What the card said of its end.
        answer: Option<String>,
    },
    /// A web search the provider ran inside the model's response (not a
    /// call candor judged or ran): its query and what it found.
    Search {
        at: String,
        query: String,
        results: Vec<crate::conversation::SearchHit>,
        error: Option<String>,
    },
    Notice {
        at: String,
        level: NoticeLevel,
        text: String,
    },
    Setting {
        at: String,
        setting: String,
        value: String,
    },
    /// What a SessionStart, UserPromptSubmit or Stop hook told the model.
    HookContext {
        at: String,
        event: String,
        hook: String,
        text: String,
        /// Not shown to the user in the session (`suppressOutput`).
        quiet: bool,
    },
    TurnEnded {
        at: String,
        stop_reason: TurnStop,
        error: Option<String>,
    },
    /// The model's history was compacted: records `from..=to` replaced by
    /// `summary` for the model (the log keeps them).
    Compacted {
        at: String,
        trigger: crate::event_log::CompactTrigger,
        focus: Option<String>,
        from: u64,
        to: u64,
        tokens_before: u64,
        tokens_after: u64,
        elided: bool,
        summary: String,
    },
    /// What the session's model requests cost, at the end of the timeline
    /// when any reported its usage: `amount` and `currency` when every one
    /// of them had a known price (`providers::prices`), else none.
    Cost {
        amount: Option<f64>,
        currency: Option<String>,
        text: String,
    },
}

/// A tool call, from its decision to its end.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    pub at: String,
    pub id: String,
    pub tool: String,
    pub decision: Decision,
    pub hooks: Vec<HookRecord>,
    /// What ran (or would have).
    pub arguments: Value,
    /// What the model asked for, when a hook rewrote it.
    pub original_arguments: Option<Value>,
    pub rewritten_by: Vec<String>,
    /// The user's answer, when asked.
    pub permission: Option<PermissionOutcome>,
    pub grant: Option<String>,
    /// How it ended (none: no result recorded).
    pub status: Option<ResultStatus>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// From `tool/started` to `tool/result`.
    pub duration_ms: Option<u64>,
    /// What post-execute hooks said (context for the model, objections,
    /// failures), and hooks' context given with the call.
    pub hook_notes: Vec<crate::interception::HookNote>,
    /// For an MCP tool: its server and the server's name for it.
    pub mcp: Option<crate::event_log::McpTarget>,
    /// For a Bash call: the boundary it ran in (its card line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Boundary>,
    /// For a confined Bash call with a network allowlist: each host it
    /// reached for and how that was decided (`network/decided`), as a line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// For an `Agent` call: the subagent it started, and its own timeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent: Option<Subagent>,
}

/// A subagent under the `Agent` call that started it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subagent {
    pub session_id: String,
    pub agent_type: String,
    pub description: String,
    /// How it ended (none: no end recorded).
    pub outcome: Option<crate::event_log::SubagentOutcome>,
    pub requests: Option<u32>,
    /// Its own log's timeline ([`with_subagents`] reads it; empty until then
    /// or when it cannot be read, which `unread` says).
    pub entries: Vec<Entry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
}

/// Reads the log of every subagent `entries` name (under `dir`, as
/// `<id>.jsonl`) into its call's entry, and theirs in turn (two levels at
/// most, as subagents nest).
pub fn with_subagents(entries: &mut [Entry], dir: &std::path::Path) {
    subagents_below(entries, dir, 0);
}

fn subagents_below(entries: &mut [Entry], dir: &std::path::Path, depth: u32) {
    if depth >= crate::subagents::MAX_DEPTH {
        return;
    }
    for entry in entries {
        let Entry::Call(call) = entry else { continue };
        let Some(sub) = &mut call.subagent else {
            continue;
        };
        let path = dir.join(format!("{}.jsonl", sub.session_id));
        match crate::event_log::read_tolerant(&path) {
            Ok(read) => {
                sub.entries = timeline(&read.records);
                subagents_below(&mut sub.entries, dir, depth + 1);
            }
            Err(e) => sub.unread = Some(e.to_string()),
        }
    }
}

/// `candor audit <sessionId|path> [--json]`: finds the log (a path, or a
/// session id under `sessions_dir`, also among deleted sessions), reads it
/// as far as it holds records and writes the timeline to `out`. Problems
/// with the log (a torn last line, damage) are reported on stderr through
/// the returned warnings; a log that cannot be found or read is an `Err`.
pub fn run(
    sessions_dir: &std::path::Path,
    session: &str,
    json: bool,
    out: &mut impl std::io::Write,
) -> Result<Vec<String>, String> {
    let given = std::path::Path::new(session);
    let candidates = [
        given.to_owned(),
        sessions_dir.join(format!("{session}.jsonl")),
        sessions_dir
            .join("deleted")
            .join(format!("{session}.jsonl")),
    ];
    let path = if session.ends_with(".jsonl") || session.contains('/') {
        given.to_owned()
    } else {
        candidates[1..]
            .iter()
            .find(|p| p.is_file())
            .cloned()
            .ok_or_else(|| {
                format!(
                    "no session {session} in {} (give a session id or the path of a log)",
                    sessions_dir.display()
                )
            })?
    };
    let read = crate::event_log::read_tolerant(&path).map_err(|e| e.to_string())?;
    let mut warnings = Vec::new();
    if let Some(len) = read.torn {
        warnings.push(format!(
            "{}: the last line was cut short ({len} bytes, a write interrupted by a crash); left out",
            path.display()
        ));
    }
    if let Some(damage) = &read.corrupt {
        warnings.push(format!("{damage}; the timeline stops there"));
    }
    let mut entries = timeline(&read.records);
    if let Some(dir) = path.parent() {
        with_subagents(&mut entries, dir);
    }
    let text = if json {
        serde_json::to_string_pretty(&entries).map_err(|e| e.to_string())? + "\n"
    } else {
        render(&entries)
    };
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(warnings)
}

fn time(at: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(at).ok()
}

/// The session's start, and where it worked.
fn opening_entry(at: String, event: &Event) -> Option<Entry> {
    Some(match event {
        Event::SessionStarted {
            session_id,
            cwd,
            provider,
            model,
            ..
        } => Entry::Session {
            at,
            session_id: session_id.clone(),
            cwd: cwd.display().to_string(),
            provider: provider.clone(),
            model: model.clone(),
        },
        Event::SessionEnvironment(env) => Entry::Environment {
            at,
            platform: env.platform.clone(),
            branch: env.git.as_ref().and_then(|g| g.branch.clone()),
            instructions: env
                .instructions
                .iter()
                .map(|f| (f.path.display().to_string(), f.bytes, f.cut))
                .collect(),
        },
        _ => return None,
    })
}

/// An MCP server's question (a new entry) or its end (filling the
/// question's entry).
fn elicitation_entry(entries: &mut Vec<Entry>, at: String, event: &Event) {
    use crate::tools::mcp::elicit::{answered_text, asked_text};
    match event {
        Event::ElicitationRequested(asked) => entries.push(Entry::Elicitation {
            at,
            tool_call_id: asked.tool_call_id.clone(),
            elicitation_id: asked.elicitation_id.clone(),
            server: asked.server.clone(),
            text: asked_text(asked),
            action: None,
            by: None,
            answer: None,
        }),
        Event::ElicitationResolved(answered) => {
            let asked = entries.iter_mut().rev().find(|e| {
                matches!(e, Entry::Elicitation { elicitation_id, .. } if *elicitation_id == answered.elicitation_id)
            });
            if let Some(Entry::Elicitation {
                action, by, answer, ..
            }) = asked
            {
                *action = Some(answered.action);
                *by = Some(answered.by);
                *answer = Some(answered_text(answered));
            }
        }
        _ => {}
    }
}

/// The timeline of a session's records.
pub fn timeline(records: &[Record]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut started: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    let call = |entries: &mut Vec<Entry>, id: &str| call_at(entries, id);
    for record in records {
        let at = record.at.clone();
        match &record.event {
            Event::SessionStarted { .. } | Event::SessionEnvironment(_) => {
                entries.extend(opening_entry(at, &record.event));
            }
            Event::UserMessage { .. }
            | Event::PromptQueued { .. }
            | Event::PromptUnqueued { .. }
            | Event::SteeringReceived { .. }
            | Event::SteeringDelivered { .. }
            | Event::SteeringDropped { .. } => entries.extend(line_entry(at, &record.event)),
            Event::PromptBlocked { hook, reason } => {
                if let Some(Entry::Prompt { blocked, .. }) = entries
                    .iter_mut()
                    .rev()
                    .find(|e| matches!(e, Entry::Prompt { .. }))
                {
                    *blocked = Some((hook.clone(), reason.clone()));
                }
            }
            Event::ToolCall { .. } => entries.extend(call_entry(at, &record.event)),
            Event::PermissionResolved { tool_call_id, .. }
            | Event::NetworkDecided { tool_call_id, .. } => {
                if let Some(i) = call(&mut entries, tool_call_id)
                    && let Entry::Call(c) = &mut entries[i]
                {
                    answered(c, &record.event);
                }
            }
            Event::ToolStarted { tool_call_id } => {
                started.insert(tool_call_id, &record.at);
            }
            Event::ToolResult { tool_call_id, .. } => {
                if let Some(i) = call(&mut entries, tool_call_id)
                    && let Entry::Call(c) = &mut entries[i]
                {
                    finish_call(c, record, started.get(tool_call_id.as_str()).copied());
                }
            }
            Event::Notice { level, text } => entries.push(Entry::Notice {
                at,
                level: *level,
                text: text.clone(),
            }),
            Event::ConfigChanged {
                config_id, value, ..
            } => entries.push(Entry::Setting {
                at,
                setting: config_id.id().to_owned(),
                value: value.clone(),
            }),
            Event::TurnEnded { stop_reason, error } => entries.push(Entry::TurnEnded {
                at,
                stop_reason: *stop_reason,
                error: error.clone(),
            }),
            Event::TrustRequested { .. }
            | Event::TrustResolved { .. }
            | Event::TrustGranted { .. }
            | Event::PromptExpanded { .. }
            | Event::PromptResource { .. } => entries.extend(
                trust_entry(at.clone(), &record.event).or_else(|| prompt_entry(at, &record.event)),
            ),
            Event::HookContext {
                event,
                hook,
                text,
                quiet,
            } => entries.push(Entry::HookContext {
                at,
                event: event.name().to_owned(),
                hook: hook.clone(),
                text: text.clone(),
                quiet: *quiet,
            }),
            Event::HistoryCompacted { .. } => entries.extend(compacted_entry(at, &record.event)),
            Event::SubagentStarted { .. } | Event::SubagentEnded { .. } => {
                subagent_entry(&mut entries, &record.event);
            }
            Event::ElicitationRequested(_) | Event::ElicitationResolved(_) => {
                elicitation_entry(&mut entries, at, &record.event);
            }
            Event::AssistantMessage { content, .. } => entries.extend(searches(&at, content)),
            Event::SessionTitled { .. }
            | Event::CommandsOffered { .. }
            | Event::CommandRan { .. }
            | Event::AssistantDelta { .. }
            | Event::PermissionRequested { .. }
            | Event::NetworkRequested { .. }
            | Event::ToolTerminal { .. }
            | Event::ToolOutput { .. }
            | Event::ToolContent { .. }
            | Event::SubagentActivity { .. }
            | Event::SubagentAssigned(_) => {}
        }
    }
    entries.extend(cost_entry(records));
    entries
}

/// What the user answered about a call (`permission/resolved`), and how
/// a confined command's connections were decided (`network/decided`).
fn answered(c: &mut Call, event: &Event) {
    match event {
        Event::PermissionResolved { outcome, grant, .. } => {
            c.permission = Some(*outcome);
            c.grant.clone_from(grant);
        }
        Event::NetworkDecided { .. } => c.network.extend(crate::event_log::network_line(event)),
        _ => {}
    }
}

/// The web searches the provider ran in a response.
fn searches<'a>(
    at: &'a str,
    content: &'a [crate::conversation::AssistantBlock],
) -> impl Iterator<Item = Entry> + 'a {
    content.iter().filter_map(move |b| match b {
        crate::conversation::AssistantBlock::WebSearch {
            query,
            results,
            error,
            ..
        } => Some(Entry::Search {
            at: at.to_owned(),
            query: query.clone(),
            results: results.clone(),
            error: error.clone(),
        }),
        _ => None,
    })
}

/// A Bash call's boundary line and the hosts its command reached for.
fn render_boundary(out: &mut String, c: &Call) {
    if let Some(boundary) = &c.sandbox {
        let _ = writeln!(out, "            {}", boundary.summary());
    }
    for line in &c.network {
        let _ = writeln!(out, "            {line}");
    }
}

/// Where the call `id` is in `entries`.
fn call_at(entries: &[Entry], id: &str) -> Option<usize> {
    entries
        .iter()
        .rposition(|e| matches!(e, Entry::Call(c) if c.id == id))
}

/// The session's cost, when any request reported its usage.
fn cost_entry(records: &[Record]) -> Option<Entry> {
    let total = crate::providers::prices::Total::of(records);
    if total == crate::providers::prices::Total::default() {
        return None;
    }
    let known = total.known();
    Some(Entry::Cost {
        amount: known.as_ref().map(|c| c.amount),
        currency: known.map(|c| c.currency),
        text: total.describe(),
    })
}

/// The entry of a prompt, or of a record about the session's line: a
/// prompt queued or taken out, a steering message received, delivered or
/// dropped.
fn line_entry(at: String, event: &Event) -> Option<Entry> {
    Some(match event {
        Event::UserMessage { content, via, .. } => Entry::Prompt {
            at,
            text: flatten_prompt(content),
            blocked: None,
            via: via.clone(),
        },
        Event::PromptQueued { request_id, text } => Entry::Queued {
            at,
            request_id: request_id.clone(),
            text: text.clone(),
        },
        Event::PromptUnqueued { request_id, reason } => Entry::Unqueued {
            at,
            request_id: request_id.clone(),
            reason: *reason,
        },
        Event::SteeringReceived {
            steering_id,
            content,
        } => Entry::Steering {
            at,
            steering_id: steering_id.clone(),
            text: flatten_prompt(content),
        },
        Event::SteeringDelivered {
            steering_id,
            content,
        } => Entry::SteeringDelivered {
            at,
            steering_id: steering_id.clone(),
            text: flatten_prompt(content),
        },
        Event::SteeringDropped {
            steering_id,
            reason,
        } => Entry::SteeringDropped {
            at,
            steering_id: steering_id.clone(),
            reason: *reason,
        },
        _ => return None,
    })
}

/// Renders an entry of [`line_entry`].
fn render_line(out: &mut String, entry: &Entry) {
    let (at, what) = match entry {
        Entry::Queued {
            at,
            request_id,
            text,
        } => (
            at,
            format!("prompt queued (request {request_id}): {}", first_line(text)),
        ),
        Entry::Unqueued {
            at,
            request_id,
            reason,
        } => (
            at,
            format!(
                "queued prompt (request {request_id}) taken out: {}",
                match reason {
                    Unqueued::Cancelled => "the client withdrew it",
                    Unqueued::Stopped => "the session ended before it ran",
                }
            ),
        ),
        Entry::Steering {
            at,
            steering_id,
            text,
        } => (
            at,
            format!(
                "steering {} received: {}",
                short(steering_id),
                first_line(text)
            ),
        ),
        Entry::SteeringDelivered {
            at, steering_id, ..
        } => (
            at,
            format!("steering {} given to the model", short(steering_id)),
        ),
        Entry::SteeringDropped {
            at,
            steering_id,
            reason,
        } => (
            at,
            format!(
                "steering {} dropped: {}",
                short(steering_id),
                match reason {
                    Dropped::Cancelled => "the turn was cancelled before the model's next request",
                    Dropped::Stopped => "the session ended first",
                }
            ),
        ),
        Entry::Search {
            at,
            query,
            results,
            error,
        } => {
            // The provider's words on one line each: a line break in them
            // must not write an entry of its own in the trail.
            let line = |t: &str| t.replace(char::is_control, " ");
            let mut said = format!("web search at the provider: {query:?}");
            match error {
                Some(e) => said.push_str(&format!(", failed: {}", line(e))),
                None => {
                    for r in results {
                        said.push_str(&format!("\n            {}", line(&r.url)));
                    }
                }
            }
            (at, said)
        }
        _ => return,
    };
    let _ = writeln!(out, "{}  {what}", clock(at));
}

/// A text's first line, `…` when more follow.
fn first_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    let more = if text.lines().count() > 1 { " …" } else { "" };
    format!("{first}{more}")
}

/// The start of an id, enough to tell it apart in a session.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// A call's entry completed by its `tool/result` (`started`: when its
/// `tool/started` was).
fn finish_call(c: &mut Call, record: &Record, started: Option<&str>) {
    let Event::ToolResult {
        status,
        exit_code,
        signal,
        hook_notes,
        ..
    } = &record.event
    else {
        return;
    };
    c.hook_notes.clone_from(hook_notes);
    c.status = Some(*status);
    c.exit_code = *exit_code;
    c.signal.clone_from(signal);
    c.duration_ms = started
        .and_then(time)
        .zip(time(&record.at))
        .and_then(|(from, to)| to.duration_since(from).ok())
        .map(|d| d.as_millis() as u64);
}

/// What an MCP tool's server said of it and what candor read (nothing for
/// a log written before candor recorded them).
fn annotations(out: &mut String, mcp: &crate::event_log::McpTarget) {
    let Some(said) = &mcp.annotations else {
        return;
    };
    let hints: Vec<String> = [
        ("readOnlyHint", said.read_only_hint),
        ("destructiveHint", said.destructive_hint),
        ("idempotentHint", said.idempotent_hint),
        ("openWorldHint", said.open_world_hint),
    ]
    .into_iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name} {v}")))
    .collect();
    let said = if hints.is_empty() {
        "none".to_owned()
    } else {
        hints.join(", ")
    };
    let _ = writeln!(
        out,
        "            annotations: {said} (as the server sent them)"
    );
    let _ = writeln!(
        out,
        "            read as: {}, {}{}",
        if mcp.read_only {
            "read-only"
        } else {
            "may change things"
        },
        if mcp.open_world {
            "open-world"
        } else {
            "closed-world"
        },
        mcp.reading
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    );
}

/// The entry of a `tool/call` record.
fn call_entry(at: String, event: &Event) -> Option<Entry> {
    let Event::ToolCall {
        tool_call_id,
        tool,
        arguments,
        original_arguments,
        decision,
        hooks,
        rewritten_by,
        mcp,
        sandbox,
        ..
    } = event
    else {
        return None;
    };
    Some(Entry::Call(Box::new(Call {
        mcp: mcp.clone(),
        at,
        id: tool_call_id.clone(),
        tool: tool.clone(),
        decision: decision.clone(),
        hooks: hooks.clone(),
        arguments: arguments.clone(),
        original_arguments: original_arguments.clone(),
        rewritten_by: rewritten_by.clone(),
        permission: None,
        grant: None,
        status: None,
        exit_code: None,
        signal: None,
        duration_ms: None,
        hook_notes: Vec::new(),
        sandbox: sandbox.clone(),
        network: Vec::new(),
        subagent: None,
    })))
}

/// A subagent's start or end, on the entry of the `Agent` call.
fn subagent_entry(entries: &mut [Entry], event: &Event) {
    match event {
        Event::SubagentStarted {
            tool_call_id,
            session_id,
            agent_type,
            description,
        } => {
            if let Some(i) = call_at(entries, tool_call_id)
                && let Entry::Call(c) = &mut entries[i]
            {
                c.subagent = Some(Subagent {
                    session_id: session_id.clone(),
                    agent_type: agent_type.clone(),
                    description: description.clone(),
                    outcome: None,
                    requests: None,
                    entries: Vec::new(),
                    unread: None,
                });
            }
        }
        Event::SubagentEnded {
            tool_call_id,
            outcome,
            requests,
            ..
        } => {
            if let Some(i) = call_at(entries, tool_call_id)
                && let Entry::Call(c) = &mut entries[i]
                && let Some(sub) = &mut c.subagent
            {
                sub.outcome = Some(*outcome);
                sub.requests = Some(*requests);
            }
        }
        _ => {}
    }
}

/// The entry of a compaction.
fn compacted_entry(at: String, event: &Event) -> Option<Entry> {
    let Event::HistoryCompacted {
        from,
        to,
        summary,
        trigger,
        focus,
        tokens_before,
        tokens_after,
        elided,
        ..
    } = event
    else {
        return None;
    };
    Some(Entry::Compacted {
        at,
        trigger: *trigger,
        focus: focus.clone(),
        from: *from,
        to: *to,
        tokens_before: *tokens_before,
        tokens_after: *tokens_after,
        elided: *elided,
        summary: summary.clone(),
    })
}

/// The entry of what a prompt was given (an MCP server's expansion, a
/// linked resource or file).
fn prompt_entry(at: String, event: &Event) -> Option<Entry> {
    let text = match event {
        Event::PromptExpanded {
            command,
            server: Some(server),
            text,
            ..
        } => format!("/{command} was expanded by the MCP server {server} to:\n{text}"),
        Event::PromptExpanded {
            command,
            source,
            path,
            text,
            ignored,
            ..
        } => {
            let from = match (source, path) {
                (Some(source), Some(path)) => {
                    format!(" from {} ({})", path.display(), source.name())
                }
                _ => String::new(),
            };
            let not_done = if ignored.is_empty() {
                String::new()
            } else {
                format!(" (not done: {})", ignored.join("; "))
            };
            format!("/{command} was expanded{from}{not_done} to:\n{text}")
        }
        Event::PromptResource {
            uri,
            server: Some(server),
            text,
            ..
        } => format!(
            "attached {uri} from the MCP server {server} ({} characters)",
            text.chars().count()
        ),
        Event::PromptResource {
            uri,
            path,
            text,
            image,
            ..
        } => {
            let file = path
                .as_ref()
                .map_or_else(|| uri.clone(), |p| p.display().to_string());
            match image {
                Some(i) => format!(
                    "attached the image {file} ({}, {}, {})",
                    i.mime_type,
                    crate::media::size(i.bytes),
                    i.digest
                ),
                None => format!("attached {file} ({} characters)", text.chars().count()),
            }
        }
        _ => return None,
    };
    Some(Entry::Notice {
        at,
        level: NoticeLevel::Info,
        text,
    })
}

/// The entry of a trust question or its answer.
fn trust_entry(at: String, event: &Event) -> Option<Entry> {
    let text = match event {
        Event::TrustRequested { wants, .. } => format!(
            "asked the user to trust this project's settings, which want:\n{}",
            wants.join("\n")
        ),
        Event::TrustResolved {
            outcome, reason, ..
        } => format!(
            "the user answered: {}{}",
            trust_answer(*outcome),
            reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        Event::TrustGranted {
            wants,
            files,
            always,
            ..
        } => format!(
            "the user typed /trust{}: this project's settings apply, which want:\n{}{}",
            if *always {
                " always (remembered)"
            } else {
                " (this session)"
            },
            wants.join("\n"),
            files
                .iter()
                .map(|(path, held)| format!("\nand run {path} ({held})"))
                .collect::<String>()
        ),
        _ => return None,
    };
    Some(Entry::Notice {
        at,
        level: NoticeLevel::Info,
        text,
    })
}

fn trust_answer(outcome: TrustOutcome) -> &'static str {
    match outcome {
        TrustOutcome::Trusted => "trust this project (remembered)",
        TrustOutcome::TrustedOnce => "trust it for this session",
        TrustOutcome::NotNow => "not now",
        TrustOutcome::Refused => "never for these settings (remembered)",
        TrustOutcome::Cancelled => "none (the prompt was cancelled)",
        TrustOutcome::Failed => "none (the client could not ask)",
    }
}

/// The clock time of a record (`10:00:01.021`), or its whole stamp.
fn clock(at: &str) -> &str {
    at.split_once('T')
        .map(|(_, t)| t.trim_end_matches('Z'))
        .unwrap_or(at)
}

/// A call's arguments in a line: a command, a path (with a pattern), or
/// the JSON.
fn compact(v: &Value) -> String {
    let text = |k: &str| v.get(k).and_then(Value::as_str);
    match (text("command"), text("file_path"), text("pattern")) {
        (Some(command), _, _) => command.to_owned(),
        (None, Some(path), _) => path.to_owned(),
        (None, None, Some(pattern)) => match text("path") {
            Some(path) => format!("{pattern} in {path}"),
            None => pattern.to_owned(),
        },
        _ => v.to_string(),
    }
}

/// The timeline for people.
fn render_environment(
    out: &mut String,
    at: &str,
    platform: &str,
    branch: Option<&str>,
    instructions: &[(String, u64, bool)],
) {
    let git = branch
        .map(|b| format!(", git branch {b}"))
        .unwrap_or_default();
    let _ = writeln!(out, "{}  environment: {platform}{git}", clock(at));
    for (path, bytes, cut) in instructions {
        let cut = if *cut { ", cut" } else { "" };
        let _ = writeln!(out, "            instructions {path} ({bytes} bytes{cut})");
    }
}

fn render_elicitation(out: &mut String, entry: &Entry) {
    let Entry::Elicitation {
        at,
        tool_call_id,
        text,
        answer,
        ..
    } = entry
    else {
        return;
    };
    let _ = writeln!(out, "{}  question during call {tool_call_id}:", clock(at));
    for line in text.lines() {
        let _ = writeln!(out, "              {line}");
    }
    let _ = writeln!(
        out,
        "              {}",
        answer
            .as_deref()
            .unwrap_or("(never answered: candor stopped first)")
    );
}

pub fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    for entry in entries {
        match entry {
            Entry::Session {
                at,
                session_id,
                cwd,
                provider,
                model,
            } => {
                let _ = writeln!(
                    out,
                    "session {session_id}\n  started {at} in {cwd}, model {provider}{}\n",
                    model
                        .as_deref()
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default()
                );
            }
            Entry::Environment {
                at,
                platform,
                branch,
                instructions,
            } => render_environment(&mut out, at, platform, branch.as_deref(), instructions),
            Entry::Prompt {
                at,
                text,
                blocked,
                via,
            } => {
                let how = match via {
                    None => String::new(),
                    Some(Via::Queue { request_id }) => {
                        format!(" (waited in the queue, request {request_id})")
                    }
                    Some(Via::Steering { steering_id }) => {
                        format!(" (steering {}, no turn was running)", short(steering_id))
                    }
                };
                let _ = writeln!(out, "{}  prompt{how}: {}", clock(at), first_line(text));
                if let Some((hook, reason)) = blocked {
                    let _ = writeln!(out, "            blocked by hook {hook}: {reason}");
                }
            }
            Entry::Queued { .. }
            | Entry::Unqueued { .. }
            | Entry::Steering { .. }
            | Entry::SteeringDelivered { .. }
            | Entry::SteeringDropped { .. }
            | Entry::Search { .. } => render_line(&mut out, entry),
            Entry::Call(c) => render_call(&mut out, c),
            Entry::Elicitation { .. } => render_elicitation(&mut out, entry),
            Entry::Notice { at, level, text } => {
                let level = match level {
                    NoticeLevel::Info => "note",
                    NoticeLevel::Warning => "warning",
                    NoticeLevel::Error => "error",
                };
                let _ = writeln!(out, "{}  {level}: {text}", clock(at));
            }
            Entry::Cost { text, .. } => {
                let _ = writeln!(out, "\ncost of the model requests: {text}");
            }
            Entry::Setting { at, setting, value } => {
                let _ = writeln!(out, "{}  {setting} set to {value}", clock(at));
            }
            Entry::HookContext {
                at,
                event,
                hook,
                text,
                quiet,
            } => {
                let shown = if *quiet {
                    " (not shown to the user)"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "{}  {event} hook {hook} told the model{shown}:",
                    clock(at)
                );
                for line in text.lines() {
                    let _ = writeln!(out, "              {line}");
                }
            }
            Entry::Compacted { .. } => render_compacted(&mut out, entry),
            Entry::TurnEnded {
                at,
                stop_reason,
                error,
            } => {
                let stop = serde_json::to_value(stop_reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let error = error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                let _ = writeln!(out, "{}  turn ended: {stop}{error}\n", clock(at));
            }
        }
    }
    crate::text::visible(&out)
}

fn render_compacted(out: &mut String, entry: &Entry) {
    let Entry::Compacted {
        at,
        trigger,
        focus,
        from,
        to,
        tokens_before,
        tokens_after,
        elided,
        summary,
    } = entry
    else {
        return;
    };
    let focus = focus
        .as_deref()
        .map(|f| format!(", focus: {f}"))
        .unwrap_or_default();
    let elided = if *elided {
        "; the summary request saw it shortened"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "{}  history compacted ({}{focus}): records {from}–{to} replaced for the model by a summary, about {tokens_before} → {tokens_after} tokens{elided}",
        clock(at),
        trigger.name()
    );
    for line in summary.lines() {
        let _ = writeln!(out, "              {line}");
    }
}

fn render_call(out: &mut String, c: &Call) {
    let outcome = serde_json::to_value(c.decision.outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let by = c
        .decision
        .by
        .as_deref()
        .map(|b| format!(" by {b}"))
        .unwrap_or_default();
    let reason = c
        .decision
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}  {} {}  {}\n            decision: {outcome}{by}{reason}",
        clock(&c.at),
        match &c.mcp {
            Some(m) => format!("{} (MCP server {}, tool {})", c.tool, m.server, m.tool),
            None => c.tool.clone(),
        },
        c.id,
        compact(&c.arguments)
    );
    if let Some(mcp) = &c.mcp {
        annotations(out, mcp);
    }
    render_boundary(out, c);
    for hook in &c.hooks {
        let verdict = serde_json::to_value(hook.decision)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut line = format!("            hook {}: {verdict}", hook.hook);
        if hook.rewrote {
            line.push_str(", rewrote the call");
        }
        if let Some(reason) = &hook.reason {
            line.push_str(&format!(" ({reason})"));
        }
        if let Some(error) = &hook.error {
            line.push_str(&format!(" — failed, passed over: {error}"));
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(original) = &c.original_arguments {
        let _ = writeln!(
            out,
            "            rewritten by {}:",
            c.rewritten_by.join(", ")
        );
        let before = serde_json::to_string_pretty(original).unwrap_or_default();
        let after = serde_json::to_string_pretty(&c.arguments).unwrap_or_default();
        let diff = similar::TextDiff::from_lines(&before, &after);
        for change in diff.iter_all_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => "-",
                similar::ChangeTag::Insert => "+",
                similar::ChangeTag::Equal => " ",
            };
            let _ = write!(out, "              {sign} {change}");
            if change.missing_newline() {
                out.push('\n');
            }
        }
    }
    if let Some(answer) = c.permission {
        let answer = serde_json::to_value(answer)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let grant = c
            .grant
            .as_deref()
            .map(|g| format!(" (grant {g})"))
            .unwrap_or_default();
        let _ = writeln!(out, "            asked: {answer}{grant}");
    }
    let ended = match c.status {
        None => "no result recorded".to_owned(),
        Some(status) => {
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let mut s = status;
            if let Some(code) = c.exit_code {
                s.push_str(&format!(", exit {code}"));
            }
            if let Some(signal) = &c.signal {
                s.push_str(&format!(", {signal}"));
            }
            if let Some(ms) = c.duration_ms {
                s.push_str(&format!(", ran {ms} ms"));
            }
            s
        }
    };
    let _ = writeln!(out, "            ended: {ended}");
    for note in &c.hook_notes {
        let what = match note.decision {
            NoteKind::Block => "objected",
            NoteKind::Error => "failed",
            NoteKind::Quiet => "told the model (not shown to the user)",
            NoteKind::Accept | NoteKind::Context => "told the model",
        };
        let _ = writeln!(out, "            hook {} {what}: {}", note.hook, note.text);
    }
    if let Some(sub) = &c.subagent {
        render_subagent(out, sub);
    }
}

/// A subagent under its `Agent` call: how it ended, then its own
/// timeline, indented.
fn render_subagent(out: &mut String, sub: &Subagent) {
    let ended = match sub.outcome {
        None => "no end recorded".to_owned(),
        Some(o) => {
            let o = serde_json::to_value(o)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{o} after {} model requests", sub.requests.unwrap_or(0))
        }
    };
    let _ = writeln!(
        out,
        "            subagent {} ({}, {}): {ended}",
        sub.agent_type, sub.description, sub.session_id
    );
    if let Some(why) = &sub.unread {
        let _ = writeln!(out, "            its log could not be read: {why}");
        return;
    }
    let inner = render(&sub.entries);
    for line in inner.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "            │ {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::Outcome;
    use serde_json::json;

    fn rec(seq: u64, at: &str, event: Event) -> Record {
        Record {
            seq,
            at: at.into(),
            event,
        }
    }

    #[test]
    fn a_rewritten_call_reads_as_a_diff_with_its_decision_and_duration() {
        let records = vec![
            rec(
                0,
                "2026-11-30T10:00:00.000Z",
                Event::UserMessage {
                    content: vec![],
                    images: vec![],
                    via: None,
                },
            ),
            rec(
                1,
                "2026-11-30T10:00:01.000Z",
                Event::ToolCall {
                    tool_call_id: "t".into(),
                    tool: "Bash".into(),
                    arguments: json!({"command": "rtk git status"}),
                    original_arguments: Some(json!({"command": "git status"})),
                    digest: String::new(),
                    decision: Decision {
                        outcome: Outcome::Allow,
                        reason: None,
                        by: Some("hook:rtk".into()),
                    },
                    hooks: vec![HookRecord {
                        hook: "rtk".into(),
                        decision: crate::interception::Verdict::Allow,
                        reason: Some("RTK auto-rewrite".into()),
                        rewrote: true,
                        error: None,
                    }],
                    rewritten_by: vec!["rtk".into()],
                    preview: None,
                    mcp: None,
                    sandbox: None,
                },
            ),
            rec(
                2,
                "2026-11-30T10:00:01.010Z",
                Event::ToolStarted {
                    tool_call_id: "t".into(),
                },
            ),
            rec(
                3,
                "2026-11-30T10:00:01.250Z",
                Event::ToolResult {
                    tool_call_id: "t".into(),
                    status: ResultStatus::Completed,
                    output: "clean".into(),
                    exit_code: Some(0),
                    signal: None,
                    hook_notes: vec![],
                    diff: None,
                    output_file: None,
                },
            ),
        ];
        let entries = timeline(&records);
        let Entry::Call(call) = &entries[1] else {
            panic!("{entries:?}")
        };
        assert_eq!(call.duration_ms, Some(240));
        let text = render(&entries);
        assert!(text.contains("Bash t  rtk git status"), "{text}");
        assert!(text.contains("decision: allow by hook:rtk"), "{text}");
        assert!(
            text.contains("hook rtk: allow, rewrote the call (RTK auto-rewrite)"),
            "{text}"
        );
        assert!(text.contains("-   \"command\": \"git status\""), "{text}");
        assert!(
            text.contains("+   \"command\": \"rtk git status\""),
            "{text}"
        );
        assert!(
            text.contains("ended: completed, exit 0, ran 240 ms"),
            "{text}"
        );
        let json = serde_json::to_value(&entries).unwrap();
        assert_eq!(json[1]["kind"], "call");
        assert_eq!(
            json[1]["originalArguments"],
            json!({"command": "git status"})
        );
    }
}
