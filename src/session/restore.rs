//! Bringing a stored session back (`session/load`, `session/resume`): what
//! its log says about its settings, and closing what a crash left open.
//!
//! Recovery only appends. A crash can leave, at the end of a log: text the
//! model streamed without its `assistant/message`; tool calls without a
//! `tool/result` (and an MCP server's question without its end); a prompt
//! without its `turn/ended`. Each gets the record
//! a clean stop would have written (an interrupted `assistant/message`, a
//! failed `tool/result` saying `interrupted: candor stopped before this
//! finished`, a `turn/ended` with the error), so every card is terminal,
//! the model's history is well-formed for every provider, and a second
//! load finds nothing to recover.

use std::collections::HashSet;
use std::path::Path;

use super::commit::Committer;
use crate::conversation::{AssistantBlock, ModelStop};
use agent_client_protocol_schema::v1::RequestId;

use crate::event_log::{
    ConfigId, DeltaChannel, Dropped, Event, LogError, Record, ResultStatus, TurnStop, Unqueued, Via,
};
use crate::history::INTERRUPTED;
use crate::interception::policy::{Mode, Rule};

/// The settings a stored session had when it stopped.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Restored {
    pub(crate) mode: Option<Mode>,
    pub(crate) model: Option<String>,
    /// The effort level last chosen (`config/changed` `effort`).
    pub(crate) effort: Option<String>,
    /// "Allow always" grants, as rule texts.
    pub(crate) grants: Vec<String>,
}

pub(crate) fn settings(records: &[Record]) -> Restored {
    let mut restored = Restored::default();
    for record in records {
        match &record.event {
            Event::SessionStarted { model, .. } => restored.model.clone_from(model),
            Event::ConfigChanged {
                config_id: ConfigId::Mode,
                value,
                ..
            } => {
                restored.mode = Mode::from_id(value).or(restored.mode);
            }
            Event::ConfigChanged {
                config_id: ConfigId::Model,
                value,
                ..
            } => {
                restored.model = Some(value.clone());
            }
            Event::ConfigChanged {
                config_id: ConfigId::Effort,
                value,
                ..
            } => {
                restored.effort = Some(value.clone());
            }
            Event::PermissionResolved {
                grant: Some(grant), ..
            } => restored.grants.push(grant.clone()),
            _ => {}
        }
    }
    restored
}

/// The grants as rules (a grant that no longer parses is dropped). An MCP
/// tool's grant is the tool's name alone, a rule of its own.
pub(crate) fn grants(texts: &[String]) -> Vec<Rule> {
    texts
        .iter()
        .filter_map(|t| match t.starts_with("mcp__") && !t.contains('(') {
            true => Rule::parse(t, std::path::Path::new("/"), None).ok(),
            false => Rule::grant(t).ok(),
        })
        .collect()
}

/// Appends what a clean stop would have written; returns how many records.
pub(crate) fn recover(c: &mut Committer) -> Result<usize, LogError> {
    let plan = plan(c.records());
    let count = plan.len();
    for event in plan {
        c.commit(event)?;
    }
    Ok(count)
}

/// What the session's line held when candor stopped: each queued prompt
/// that neither ran nor was taken out, and each steering message that
/// neither reached the model nor was dropped, closed as a clean stop
/// would have (`prompt/unqueued`, `steering/dropped`, both `stopped`).
/// Request ids are the client's and start again with each connection, so
/// a queued prompt is matched to its end in order.
fn left_in_line(records: &[Record]) -> Vec<Event> {
    let mut queued: Vec<&RequestId> = Vec::new();
    let mut steering: Vec<&str> = Vec::new();
    let take = |queued: &mut Vec<&RequestId>, id: &RequestId| {
        if let Some(place) = queued.iter().position(|q| *q == id) {
            queued.remove(place);
        }
    };
    for record in records {
        match &record.event {
            Event::PromptQueued { request_id, .. } => queued.push(request_id),
            Event::PromptUnqueued { request_id, .. }
            | Event::UserMessage {
                via: Some(Via::Queue { request_id }),
                ..
            } => take(&mut queued, request_id),
            Event::SteeringReceived { steering_id, .. } => steering.push(steering_id),
            Event::SteeringDelivered { steering_id, .. }
            | Event::SteeringDropped { steering_id, .. }
            | Event::UserMessage {
                via: Some(Via::Steering { steering_id }),
                ..
            } => steering.retain(|s| s != steering_id),
            _ => {}
        }
    }
    let prompts = queued.into_iter().map(|id| Event::PromptUnqueued {
        request_id: id.clone(),
        reason: Unqueued::Stopped,
    });
    let steers = steering.into_iter().map(|id| Event::SteeringDropped {
        steering_id: id.to_owned(),
        reason: Dropped::Stopped,
    });
    prompts.chain(steers).collect()
}

/// A question about a confined command's connection left open
/// (`network/requested` with no `network/decided` for its call and host):
/// closed as not answered, as the command's end would have.
fn open_network_questions(records: &[Record]) -> Vec<Event> {
    let decided: HashSet<(&str, &str)> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::NetworkDecided {
                tool_call_id, host, ..
            } => Some((tool_call_id.as_str(), host.as_str())),
            _ => None,
        })
        .collect();
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::NetworkRequested {
                tool_call_id,
                host,
                port,
                ..
            } if !decided.contains(&(tool_call_id.as_str(), host.as_str())) => {
                Some(Event::NetworkDecided {
                    tool_call_id: tool_call_id.clone(),
                    host: host.clone(),
                    port: *port,
                    allowed: false,
                    by: crate::event_log::NetworkDecider::NoAnswer,
                    rule: None,
                    outcome: Some(crate::event_log::PermissionOutcome::Cancelled),
                    grant: None,
                    reason: Some("candor stopped before the answer".into()),
                })
            }
            _ => None,
        })
        .collect()
}

/// An MCP server's question open when candor stopped: ended, before its
/// call's result, as `cancel` (nobody answered; the server is gone).
fn open_questions(records: &[Record]) -> Vec<Event> {
    let mut open: Vec<(&str, &str)> = Vec::new();
    for record in records {
        match &record.event {
            Event::ElicitationRequested(asked) => {
                open.push((&asked.tool_call_id, &asked.elicitation_id));
            }
            Event::ElicitationResolved(answered) => {
                open.retain(|(_, id)| *id != answered.elicitation_id);
            }
            _ => {}
        }
    }
    open.into_iter()
        .map(|(call, id)| {
            Event::ElicitationResolved(crate::event_log::ElicitationAnswered {
                tool_call_id: call.to_owned(),
                elicitation_id: id.to_owned(),
                action: crate::event_log::ElicitationAction::Cancel,
                by: crate::event_log::ElicitationBy::Candor,
                content: None,
                reason: Some("candor stopped before it was answered".into()),
            })
        })
        .collect()
}

/// The records [`recover`] appends (see the module docs).
fn plan(records: &[Record]) -> Vec<Event> {
    let mut events = Vec::new();
    // Calls the model made that have no result.
    let mut answered = HashSet::new();
    for record in records {
        if let Event::ToolResult { tool_call_id, .. } = &record.event {
            answered.insert(tool_call_id.as_str());
        }
    }
    // Text streamed after the last whole model turn, in an unfinished turn.
    let last_turn_start = records
        .iter()
        .rposition(|r| matches!(r.event, Event::UserMessage { .. }));
    let last_turn_end = records
        .iter()
        .rposition(|r| matches!(r.event, Event::TurnEnded { .. }));
    let unfinished = match (last_turn_start, last_turn_end) {
        (Some(start), Some(end)) => start > end,
        (Some(_), None) => true,
        _ => false,
    };
    if unfinished {
        let last_message = records
            .iter()
            .rposition(|r| {
                matches!(
                    r.event,
                    Event::AssistantMessage { .. } | Event::UserMessage { .. }
                )
            })
            .unwrap_or(0);
        let streamed: String = records[last_message..]
            .iter()
            .filter_map(|r| match &r.event {
                Event::AssistantDelta {
                    channel: DeltaChannel::Text,
                    text,
                } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        if !streamed.is_empty() {
            events.push(Event::AssistantMessage {
                content: vec![AssistantBlock::Text { text: streamed }],
                stop: ModelStop::EndTurn,
                interrupted: true,
                call_ids: Vec::new(),
                cost: None,
            });
        }
    }
    events.extend(open_network_questions(records));
    events.extend(subagents_left_open(records));
    events.extend(open_questions(records));
    for record in records {
        if let Event::AssistantMessage {
            content, call_ids, ..
        } = &record.event
        {
            for (_, id) in crate::event_log::record::call_ids_of(content, call_ids) {
                if !answered.contains(id.as_str()) {
                    events.push(Event::ToolResult {
                        tool_call_id: id.clone(),
                        status: ResultStatus::Failed,
                        output: INTERRUPTED.to_owned(),
                        exit_code: None,
                        signal: None,
                        hook_notes: Vec::new(),
                        diff: None,
                        output_file: None,
                    });
                }
            }
        }
    }
    // A trust question left open: no answer was given.
    let resolved: HashSet<&str> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::TrustResolved { digest, .. } => Some(digest.as_str()),
            _ => None,
        })
        .collect();
    for record in records {
        if let Event::TrustRequested { digest, .. } = &record.event
            && !resolved.contains(digest.as_str())
        {
            events.push(Event::TrustResolved {
                digest: digest.clone(),
                outcome: crate::event_log::TrustOutcome::Cancelled,
                reason: Some("candor stopped before the answer".into()),
            });
        }
    }
    if unfinished {
        events.push(Event::TurnEnded {
            stop_reason: TurnStop::Error,
            error: Some("candor stopped before this turn finished".into()),
        });
    }
    events.extend(left_in_line(records));
    events
}

/// Subagents a crash left running: each call of theirs the parent's card
/// showed as not over fails, then the subagent ends (`failed`), before
/// its `Agent` call gets its interrupted result.
fn subagents_left_open(records: &[Record]) -> Vec<Event> {
    use crate::event_log::{ChildCallStatus, SubagentOutcome};
    let mut open: Vec<(String, String)> = Vec::new();
    let mut calls: Vec<(String, String, String, ChildCallStatus)> = Vec::new();
    for record in records {
        match &record.event {
            Event::SubagentStarted {
                tool_call_id,
                session_id,
                ..
            } => open.push((tool_call_id.clone(), session_id.clone())),
            Event::SubagentEnded { session_id, .. } => open.retain(|(_, s)| s != session_id),
            Event::SubagentActivity {
                session_id,
                child_call_id,
                title,
                status,
                ..
            } => match calls
                .iter_mut()
                .find(|(s, c, _, _)| s == session_id && c == child_call_id)
            {
                Some(call) => call.3 = *status,
                None => calls.push((
                    session_id.clone(),
                    child_call_id.clone(),
                    title.clone(),
                    *status,
                )),
            },
            _ => {}
        }
    }
    let mut events = Vec::new();
    for (tool_call_id, session_id) in open {
        for (_, child_call_id, title, _) in calls
            .iter()
            .filter(|(s, _, _, status)| *s == session_id && !status.ended())
        {
            events.push(Event::SubagentActivity {
                tool_call_id: tool_call_id.clone(),
                session_id: session_id.clone(),
                child_call_id: child_call_id.clone(),
                title: title.clone(),
                status: ChildCallStatus::Failed,
            });
        }
        events.push(Event::SubagentEnded {
            tool_call_id,
            session_id,
            outcome: SubagentOutcome::Failed,
            requests: 0,
            error: Some("candor stopped before the subagent finished".into()),
        });
    }
    events
}

/// The subagents a log started (`subagent/started`), by session id.
fn started(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::SubagentStarted { session_id, .. } => Some(session_id.clone()),
            _ => None,
        })
        .collect()
}

/// Closes what a crash left open in the logs of a stored session's
/// subagents, and of theirs, as [`recover`] does for the session's own
/// (nothing is sent: a client sees them through [`replay_subagent`]).
pub(crate) fn recover_subagents(records: &[Record], dir: &Path, outbox: &crate::transport::Outbox) {
    recover_below(records, dir, outbox, 0);
}

fn recover_below(records: &[Record], dir: &Path, outbox: &crate::transport::Outbox, depth: u32) {
    if depth >= crate::subagents::MAX_DEPTH {
        return;
    }
    for id in started(records) {
        let Ok(read) = super::stored::read(dir, &id) else {
            tracing::warn!(subagent = id, "a subagent's log could not be read");
            continue;
        };
        let path = dir.join(format!("{id}.jsonl"));
        let log = match crate::event_log::EventLog::open(&path, read) {
            Ok(log) => log,
            Err(e) => {
                tracing::warn!(subagent = id, error = %e, "a subagent's log could not be opened");
                continue;
            }
        };
        let cwd = match log.records().first().map(|r| &r.event) {
            Some(Event::SessionStarted { cwd, .. }) => cwd.clone(),
            _ => dir.to_owned(),
        };
        let presenter = crate::presentation::Presenter::new(cwd, crate::presentation::Mode::Replay);
        let mut c = Committer::new(
            agent_client_protocol_schema::v1::SessionId::new(id.clone()),
            log,
            presenter,
            outbox.clone(),
        )
        .for_subagent(true, None);
        c.replay(false);
        if let Err(e) = recover(&mut c) {
            tracing::warn!(subagent = id, error = %e, "could not close what a crash left open");
        }
        recover_below(c.records(), dir, outbox, depth + 1);
    }
}

/// For a client that takes subagent sessions: after a stored session's
/// `subagent/started` is replayed, the subagent's own session, from its
/// log, as it was shown live (and its own subagents' after theirs).
pub(crate) fn replay_subagent(
    record: &Record,
    outbox: &crate::transport::Outbox,
    dir: &Path,
    notices: bool,
) {
    replay_below(record, outbox, dir, notices, 0);
}

fn replay_below(
    record: &Record,
    outbox: &crate::transport::Outbox,
    dir: &Path,
    notices: bool,
    depth: u32,
) {
    let Event::SubagentStarted { session_id, .. } = &record.event else {
        return;
    };
    if depth >= crate::subagents::MAX_DEPTH {
        return;
    }
    let Ok(read) = super::stored::read(dir, session_id) else {
        tracing::warn!(
            subagent = session_id,
            "a subagent's log could not be read for the replay"
        );
        return;
    };
    let cwd = match read.records.first().map(|r| &r.event) {
        Some(Event::SessionStarted { cwd, .. }) => cwd.clone(),
        _ => dir.to_owned(),
    };
    let mut presenter = crate::presentation::Presenter::new(cwd, crate::presentation::Mode::Replay)
        .with_notices(notices)
        .with_subagents(true)
        .echoing_prompts();
    let id = agent_client_protocol_schema::v1::SessionId::new(session_id.clone());
    for child in &read.records {
        for update in presenter.apply(child) {
            super::commit::send(outbox, &id, update);
        }
        replay_below(child, outbox, dir, notices, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::event_log::numbered as recs;

    fn tool_use(id: &str) -> AssistantBlock {
        AssistantBlock::ToolUse {
            id: id.into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
        }
    }

    #[test]
    fn a_crash_mid_call_is_closed_as_interrupted_and_the_turn_ended() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![],
                images: vec![],
                via: None,
            },
            Event::AssistantMessage {
                content: vec![tool_use("a"), tool_use("b")],
                stop: ModelStop::ToolUse,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
            Event::ToolResult {
                tool_call_id: "a".into(),
                status: ResultStatus::Completed,
                output: "ok".into(),
                exit_code: Some(0),
                signal: None,
                hook_notes: vec![],
                diff: None,
                output_file: None,
            },
            Event::ToolStarted {
                tool_call_id: "b".into(),
            },
        ]);
        let plan = plan(&records);
        assert_eq!(plan.len(), 2, "{plan:?}");
        assert!(
            matches!(&plan[0], Event::ToolResult { tool_call_id, status: ResultStatus::Failed, output, .. } if tool_call_id == "b" && output == INTERRUPTED)
        );
        assert!(matches!(
            &plan[1],
            Event::TurnEnded {
                stop_reason: TurnStop::Error,
                ..
            }
        ));
        let mut done = records.clone();
        done.extend(recs(plan));
        assert!(
            super::plan(&done).is_empty(),
            "a second load recovers nothing"
        );
    }

    #[test]
    fn a_subagent_left_running_fails_its_open_calls_then_ends_before_its_call() {
        use crate::event_log::{ChildCallStatus, SubagentOutcome};
        let activity = |call: &str, status| Event::SubagentActivity {
            tool_call_id: "a".into(),
            session_id: "kid".into(),
            child_call_id: call.into(),
            title: format!("`{call}`"),
            status,
        };
        let records = recs(vec![
            Event::UserMessage {
                content: vec![],
                images: vec![],
                via: None,
            },
            Event::AssistantMessage {
                content: vec![tool_use("a")],
                stop: ModelStop::ToolUse,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
            Event::SubagentStarted {
                tool_call_id: "a".into(),
                session_id: "kid".into(),
                agent_type: "Explore".into(),
                description: "d".into(),
            },
            activity("done", ChildCallStatus::Pending),
            activity("done", ChildCallStatus::Completed),
            activity("open", ChildCallStatus::Running),
        ]);
        let closed = plan(&records);
        assert!(
            matches!(&closed[0], Event::SubagentActivity { child_call_id, status: ChildCallStatus::Failed, .. } if child_call_id == "open"),
            "{closed:?}"
        );
        assert!(matches!(
            &closed[1],
            Event::SubagentEnded {
                outcome: SubagentOutcome::Failed,
                ..
            }
        ));
        assert!(
            matches!(&closed[2], Event::ToolResult { tool_call_id, .. } if tool_call_id == "a")
        );
        assert!(matches!(closed.last(), Some(Event::TurnEnded { .. })));
        // Nothing more the second time.
        let mut again = records.clone();
        again.extend(recs(closed));
        assert!(plan(&again).is_empty());
    }

    #[test]
    fn an_open_trust_question_is_closed_unanswered() {
        let asked = Event::TrustRequested {
            project: "/p".into(),
            wants: vec!["allow rule: Bash".into()],
            digest: "sha256:ab".into(),
        };
        let closed = plan(&recs(vec![asked.clone()]));
        assert!(
            matches!(&closed[..], [Event::TrustResolved { digest, outcome: crate::event_log::TrustOutcome::Cancelled, .. }] if digest == "sha256:ab"),
            "{closed:?}"
        );
        let answered = Event::TrustResolved {
            digest: "sha256:ab".into(),
            outcome: crate::event_log::TrustOutcome::NotNow,
            reason: None,
        };
        assert!(plan(&recs(vec![asked, answered])).is_empty());
    }

    #[test]
    fn an_mcp_servers_open_question_is_closed_before_its_calls_result() {
        use crate::event_log::{
            ElicitationAction, ElicitationAnswered, ElicitationAsked, ElicitationBy,
            ElicitationKind,
        };
        let asked = Event::ElicitationRequested(ElicitationAsked {
            tool_call_id: "a".into(),
            elicitation_id: "test-1".into(),
            server: "test".into(),
            mode: ElicitationKind::Form,
            message: "Which branch?".into(),
            schema: None,
            url: None,
            secret: Vec::new(),
        });
        let records = recs(vec![
            Event::UserMessage {
                content: vec![],
                images: vec![],
                via: None,
            },
            Event::AssistantMessage {
                content: vec![tool_use("a")],
                stop: ModelStop::ToolUse,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
            Event::ToolStarted {
                tool_call_id: "a".into(),
            },
            asked.clone(),
        ]);
        let closed = plan(&records);
        assert!(
            matches!(&closed[..], [
                Event::ElicitationResolved(ElicitationAnswered { elicitation_id, action: ElicitationAction::Cancel, by: ElicitationBy::Candor, .. }),
                Event::ToolResult { tool_call_id, .. },
                Event::TurnEnded { .. },
            ] if elicitation_id == "test-1" && tool_call_id == "a"),
            "{closed:?}"
        );
        // A second load finds it closed.
        let mut again = records.clone();
        again.extend(recs(closed).into_iter().map(|mut r| {
            r.seq += records.len() as u64;
            r
        }));
        assert!(plan(&again).is_empty());
    }

    #[test]
    fn streamed_text_of_a_cut_turn_becomes_an_interrupted_message() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![],
                images: vec![],
                via: None,
            },
            Event::AssistantDelta {
                channel: DeltaChannel::Text,
                text: "Let me ".into(),
            },
            Event::AssistantDelta {
                channel: DeltaChannel::Text,
                text: "look".into(),
            },
        ]);
        let plan = plan(&records);
        assert!(
            matches!(&plan[0], Event::AssistantMessage { interrupted: true, content, .. }
            if content == &vec![AssistantBlock::Text { text: "Let me look".into() }])
        );
        assert!(matches!(&plan[1], Event::TurnEnded { .. }));
    }

    #[test]
    fn a_network_question_left_open_is_closed_unanswered_before_the_call() {
        let records = recs(vec![
            Event::AssistantMessage {
                content: vec![tool_use("n")],
                stop: ModelStop::ToolUse,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
            Event::NetworkRequested {
                tool_call_id: "n".into(),
                host: "example.com".into(),
                port: 443,
                options: Vec::new(),
            },
        ]);
        let plan = plan(&records);
        assert!(
            matches!(&plan[0], Event::NetworkDecided { host, allowed: false, by: crate::event_log::NetworkDecider::NoAnswer, .. } if host == "example.com"),
            "{plan:?}"
        );
        assert!(matches!(&plan[1], Event::ToolResult { tool_call_id, .. } if tool_call_id == "n"));
        // Closed once: a second load finds nothing more.
        let mut all = records.clone();
        all.extend(recs(plan));
        assert!(open_network_questions(&all).is_empty());
    }

    #[test]
    fn settings_come_back_from_the_records() {
        let records = recs(vec![
            Event::ConfigChanged {
                config_id: ConfigId::Mode,
                value: "acceptEdits".into(),
                via: None,
            },
            Event::ConfigChanged {
                config_id: ConfigId::Model,
                value: "claude-b".into(),
                via: None,
            },
            Event::PermissionResolved {
                tool_call_id: "t".into(),
                outcome: crate::event_log::PermissionOutcome::AllowedAlways,
                digest: String::new(),
                base: None,
                grant: Some("Bash(npm test)".into()),
                reason: None,
            },
        ]);
        assert_eq!(
            settings(&records),
            Restored {
                mode: Some(Mode::AcceptEdits),
                model: Some("claude-b".into()),
                effort: None,
                grants: vec!["Bash(npm test)".into()],
            }
        );
    }
}
