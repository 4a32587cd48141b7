//! What a subagent's records in its parent's log show (`subagent/started`,
//! `subagent/activity`, `subagent/ended`), in either of two ways:
//!
//! * to a client that takes subagent sessions (`clientCapabilities
//!   .subagents`): the child announced (`subagent_update`, its state
//!   running / requires_action / idle) and referenced on the parent's
//!   `Agent` card (`ToolCallContent::Session`); the child's own records
//!   are its own session's updates (its committer's);
//! * to any other: the parent's `Agent` card carries the child's calls as
//!   content, one line each (its card title and its status), kept up to
//!   date as they run.

use agent_client_protocol_schema::v1::{
    IdleStateUpdate, IdleStopReason, RequiresActionStateUpdate, RunningStateUpdate,
    SessionCancelCapabilities, SessionReference, SessionUpdate, StateUpdate,
    SubagentSessionCapabilities, SubagentUpdate, ToolCallContent, ToolCallUpdateFields,
};

use super::{Presenter, text_content, update};
use crate::event_log::{ChildCallStatus, Event, SubagentOutcome};

/// A subagent's calls as its parent's card shows them.
#[derive(Debug, Default)]
pub(super) struct Lines {
    /// The card's lead before the lines (its own detail).
    base: usize,
    /// Each child call: id, title, status, in the order first seen.
    calls: Vec<(String, String, ChildCallStatus)>,
    /// The child's state last announced (native).
    asking: bool,
}

impl Presenter {
    /// The updates of a subagent record (see the module docs).
    pub(super) fn subagent(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::SubagentStarted {
                tool_call_id,
                session_id,
                agent_type,
                description,
            } => self.subagent_started(tool_call_id, session_id, agent_type, description),
            Event::SubagentActivity {
                tool_call_id,
                session_id,
                child_call_id,
                title,
                status,
            } => self.subagent_activity(tool_call_id, session_id, child_call_id, title, *status),
            Event::SubagentEnded {
                session_id,
                outcome,
                ..
            } if self.subagents => {
                let reason = match outcome {
                    SubagentOutcome::Answered => IdleStopReason::EndTurn,
                    SubagentOutcome::MaxTurns => IdleStopReason::MaxTurnRequests,
                    SubagentOutcome::Cancelled => IdleStopReason::Cancelled,
                    SubagentOutcome::Failed => IdleStopReason::Error(
                        agent_client_protocol_schema::v1::ErrorStopReason::new(),
                    ),
                };
                vec![SessionUpdate::SubagentUpdate(
                    SubagentUpdate::new(session_id.clone()).state(StateUpdate::Idle(
                        IdleStateUpdate::new().stop_reason(reason),
                    )),
                )]
            }
            _ => Vec::new(),
        }
    }

    fn subagent_started(
        &mut self,
        card_id: &str,
        session_id: &str,
        agent_type: &str,
        description: &str,
    ) -> Vec<SessionUpdate> {
        let native = self.subagents;
        let Some(card) = self.open_card(card_id) else {
            return Vec::new();
        };
        let base = card.lead.len();
        if !native {
            self.children.insert(
                card_id.to_owned(),
                Lines {
                    base,
                    ..Lines::default()
                },
            );
            return Vec::new();
        }
        card.lead
            .push(ToolCallContent::Session(SessionReference::new(
                session_id.to_owned(),
            )));
        let content = card.content(Vec::new());
        self.children.insert(
            card_id.to_owned(),
            Lines {
                base,
                ..Lines::default()
            },
        );
        let title = crate::text::shorten(&format!("{agent_type}: {description}"), 120);
        vec![
            SessionUpdate::SubagentUpdate(
                SubagentUpdate::new(session_id.to_owned())
                    .title(title)
                    .description(format!("The {agent_type} subagent"))
                    .capabilities(
                        SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new()),
                    )
                    .state(StateUpdate::Running(RunningStateUpdate::new())),
            ),
            update(card_id, ToolCallUpdateFields::new().content(content)),
        ]
    }

    fn subagent_activity(
        &mut self,
        card_id: &str,
        session_id: &str,
        child_call_id: &str,
        title: &str,
        status: ChildCallStatus,
    ) -> Vec<SessionUpdate> {
        let native = self.subagents;
        let Some(lines) = self.children.get_mut(card_id) else {
            return Vec::new();
        };
        match lines
            .calls
            .iter_mut()
            .find(|(id, _, _)| id == child_call_id)
        {
            Some(line) => {
                line.2 = status;
                if !title.is_empty() {
                    line.1 = title.to_owned();
                }
            }
            None => lines
                .calls
                .push((child_call_id.to_owned(), title.to_owned(), status)),
        }
        if native {
            let asking = lines
                .calls
                .iter()
                .any(|(_, _, s)| *s == ChildCallStatus::Asking);
            if asking == lines.asking {
                return Vec::new();
            }
            lines.asking = asking;
            let state = if asking {
                StateUpdate::RequiresAction(RequiresActionStateUpdate::new())
            } else {
                StateUpdate::Running(RunningStateUpdate::new())
            };
            return vec![SessionUpdate::SubagentUpdate(
                SubagentUpdate::new(session_id.to_owned()).state(state),
            )];
        }
        let text = lines
            .calls
            .iter()
            .map(|(_, title, status)| format!("- {title} — {}", status.name()))
            .collect::<Vec<_>>()
            .join("\n");
        let base = lines.base;
        let Some(card) = self.open_card(card_id) else {
            return Vec::new();
        };
        card.lead.truncate(base);
        card.lead.push(text_content(crate::text::visible(&format!(
            "The subagent's calls:\n{text}"
        ))));
        let content = card.content(card_rest(card));
        // The card's own title again: a permission prompt of the child's,
        // asked on this card, showed the child's call in its place.
        let title = card.shown.title.clone();
        vec![update(
            card_id,
            ToolCallUpdateFields::new().title(title).content(content),
        )]
    }
}

/// What a card shows after its lead while it runs (its output so far).
fn card_rest(card: &super::Card) -> Vec<ToolCallContent> {
    if card.output.is_empty() {
        Vec::new()
    } else {
        vec![text_content(crate::text::fenced(
            &card.output.render(),
            "console",
        ))]
    }
}
