//! The presenter: what the client sees, as a pure fold over the log.
//!
//! [`Presenter::apply`] takes one [`Record`] and returns the
//! `session/update`s it means. It does no I/O and reads nothing but the
//! records and the session's working directory, so folding a stored log
//! gives the very updates the live session sent (`session/load` replays
//! through the same code). The live session differs in one way the spec
//! asks for: the user's own messages are not echoed back
//! ([`Mode::Live`]); a replay sends them as `user_message_chunk`s.
//!
//! Card rules (checked by the tests' client model):
//! * a `tool_call` is sent once per id, before any `tool_call_update`;
//! * statuses only move forward: `pending → in_progress → completed|failed`;
//! * an update's `content` is the whole accumulated content (clients
//!   replace the list);
//! * nothing is sent for an id after it is terminal, or for an id that
//!   never got a card.

mod subagent;

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandsUpdate, ContentBlock, ContentChunk, CurrentModeUpdate, Diff,
    Notice, NoticeSeverity, Plan, PlanEntry, SessionUpdate, Terminal, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::{Value, json};

use crate::conversation::AssistantBlock;
use crate::event_log::SessionEvent;
use crate::event_log::{
    CompactTrigger, ConfigId, DeltaChannel, Event, FileDiff, NoteKind, NoticeLevel, Outcome,
    Record, ResultContent, ResultStatus, TrustOutcome,
};
use crate::text::{fenced, inline_code};
use crate::tools::{self, Tool};

/// An offered command as ACP sends it, with its input hint when it has one.
fn available_command(c: &crate::event_log::OfferedCommand) -> AvailableCommand {
    use agent_client_protocol_schema::v1::{AvailableCommandInput, UnstructuredCommandInput};
    let command = AvailableCommand::new(c.name.clone(), c.description.clone());
    match &c.hint {
        Some(hint) => command.input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(hint.clone()),
        )),
        None => command,
    }
}

/// What is shown in place of an image whose stored copy cannot be had (a
/// record whose image the log's content store did not give back).
fn unavailable_image(mime_type: &str) -> String {
    format!(
        "[An image ({mime_type}) that is no longer available: its stored copy is missing or damaged]"
    )
}

/// A block of a prompt as a replay shows it (an image no longer available
/// as a line saying so).
fn replayed_block(block: &ContentBlock) -> SessionUpdate {
    let block = match block {
        ContentBlock::Image(image) if image.data.is_empty() => {
            ContentBlock::from(unavailable_image(&image.mime_type))
        }
        block => block.clone(),
    };
    SessionUpdate::UserMessageChunk(ContentChunk::new(block))
}

/// A block of an MCP tool's answer as card content.
fn result_content(c: &ResultContent) -> ToolCallContent {
    use agent_client_protocol_schema::v1::{
        EmbeddedResource, EmbeddedResourceResource, ImageContent, ResourceLink,
        TextResourceContents,
    };
    let block = match c {
        ResultContent::Image {
            mime_type, data, ..
        } if data.is_empty() => ContentBlock::from(unavailable_image(mime_type)),
        ResultContent::Image {
            mime_type, data, ..
        } => ContentBlock::Image(ImageContent::new(data.clone(), mime_type.clone())),
        ResultContent::ResourceLink {
            uri,
            name,
            mime_type,
        } => ContentBlock::ResourceLink(
            ResourceLink::new(name.clone(), uri.clone()).mime_type(mime_type.clone()),
        ),
        ResultContent::Resource {
            uri,
            mime_type,
            text,
        } => ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(
                TextResourceContents::new(
                    text.clone()
                        .unwrap_or_else(|| "(binary content, not shown)".into()),
                    uri.clone(),
                )
                .mime_type(mime_type.clone()),
            ),
        )),
    };
    ToolCallContent::from(block)
}

/// Whether updates go to a live client or replay a stored session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Live,
    Replay,
}

/// Most bytes of tool output a card keeps (the middle is elided beyond).
pub const CARD_OUTPUT_MAX: usize = 256 * 1024;

/// The fold's state.
#[derive(Debug)]
pub struct Presenter {
    cwd: PathBuf,
    mode: Mode,
    cards: HashMap<String, Card>,
    /// Ids of cards that ended (their state is no longer needed).
    ended: std::collections::HashSet<String>,
    /// `TodoWrite` calls waiting for their result: their plan.
    plans: HashMap<String, Vec<PlanEntry>>,
    /// The client advertised `session.notices`.
    notices: bool,
    /// The client takes subagent sessions (`clientCapabilities.subagents`).
    subagents: bool,
    /// The subagents of open `Agent` cards: their calls, as the cards
    /// show them.
    children: HashMap<String, subagent::Lines>,
    /// Prompts are shown live too (a subagent's task: the client did not
    /// send it).
    echo_prompts: bool,
    /// The client advertised `session.compaction`: a compaction is a
    /// `compaction_update`, not a notice.
    compaction: bool,
    /// The model's context window (from `session/started`), for usage.
    context_window: Option<u64>,
    /// What the session's requests cost so far (`usage_update.cost`).
    cost: crate::providers::prices::Total,
    /// Open trust questions: the card of each, by the digest answered.
    trust_cards: HashMap<String, String>,
    /// A turn is open: a `user/message` and no `turn/ended` since.
    in_turn: bool,
    /// Notices recorded while no turn ran, for a client without
    /// `session.notices`: shown when the next turn starts.
    held: Vec<(NoticeLevel, String)>,
    /// Notices past [`MAX_HELD`], counted.
    held_over: usize,
    /// How the agent's message of this turn ends so far.
    message_tail: Tail,
}

/// Most notices held for the next turn (the rest are counted).
const MAX_HELD: usize = 20;

/// How an agent message ends, for what is added after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// At a paragraph's end (or nothing yet).
    Paragraph,
    /// At a line's end.
    Line,
    /// Inside a line.
    Open,
}

/// A notice as an agent message, for a client without `session.notices`:
/// a quote whose first line starts `candor:` (`candor (warning):`,
/// `candor (error):`), so it reads as candor's word and not the model's in
/// any client that shows Markdown (Zed, CodeCompanion) or not (Emacs
/// agent-shell shows the `>` lines as they are), ended by a blank line.
pub fn marked_notice(level: NoticeLevel, text: &str) -> String {
    let who = match level {
        NoticeLevel::Info => "candor:",
        NoticeLevel::Warning => "candor (warning):",
        NoticeLevel::Error => "candor (error):",
    };
    let mut out = String::with_capacity(text.len() + 32);
    for (i, line) in text.trim_end().lines().enumerate() {
        match (i, line.is_empty()) {
            (0, _) => out.push_str(&format!("> {who} {line}")),
            (_, true) => out.push('>'),
            (_, false) => out.push_str(&format!("> {line}")),
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str(&format!("> {who}\n"));
    }
    out.push('\n');
    out
}

/// A notice's text as ACP's `Notice` takes it: the first line a title that
/// stands alone, the rest (if any) its description.
fn notice_parts(text: &str) -> (String, Option<String>) {
    let text = text.trim();
    let (title, rest) = text.split_once('\n').unwrap_or((text, ""));
    let title = if title.trim().is_empty() {
        "candor".to_owned()
    } else {
        title.trim().to_owned()
    };
    let rest = rest.trim();
    (title, (!rest.is_empty()).then(|| rest.to_owned()))
}

#[derive(Debug)]
struct Card {
    status: ToolCallStatus,
    output: BoundedText,
    /// First in every content list of the card: the "rewritten by" line,
    /// and the whole command when the title shows only part of it.
    lead: Vec<ToolCallContent>,
    /// The card as first shown (for a permission request's `toolCall`).
    shown: ToolCall,
    /// Why candor asks, for a call whose decision was `ask`.
    ask_reason: Option<String>,
    /// The editor terminal the command runs in.
    terminal: Option<String>,
    /// What an MCP tool answered beside its text (`tool/content`).
    extra: Vec<ToolCallContent>,
    /// An MCP server's questions and their ends, after the lead
    /// (`elicitation/requested`, `elicitation/resolved`).
    asked: Vec<ToolCallContent>,
    /// An MCP tool's structured content (the card's `rawOutput`).
    structured: Option<Value>,
}

impl Card {
    /// The card's content: its lead, the server's questions, then `rest`.
    fn content(&self, rest: Vec<ToolCallContent>) -> Vec<ToolCallContent> {
        self.lead
            .iter()
            .chain(&self.asked)
            .cloned()
            .chain(rest)
            .collect()
    }
}

impl Card {
    fn terminal(&self) -> bool {
        matches!(
            self.status,
            ToolCallStatus::Completed | ToolCallStatus::Failed
        )
    }
}

impl Presenter {
    /// A notice: a `notice` update if the client takes them; else, inside a
    /// turn, an agent message marked as candor's ([`marked_notice`]), and
    /// outside one nothing yet: it is held and shown when the next turn
    /// starts (never as a thought, which clients show as the model's, and
    /// never outside a turn, where some clients drop messages or take them
    /// for a turn of their own). Whether a turn is open is the records'
    /// (`user/message` opens one, `turn/ended` ends it), so a replay shows
    /// the notices where live did.
    fn notice(&mut self, level: NoticeLevel, text: String) -> Vec<SessionUpdate> {
        if self.notices {
            let severity = match level {
                NoticeLevel::Info => NoticeSeverity::Info,
                NoticeLevel::Warning => NoticeSeverity::Warning,
                NoticeLevel::Error => NoticeSeverity::Error,
            };
            let (title, description) = notice_parts(&text);
            return vec![SessionUpdate::Notice(
                Notice::new(severity, title).description(description),
            )];
        }
        if self.in_turn {
            return vec![self.message(marked_notice(level, &text))];
        }
        if self.held.iter().any(|(_, held)| *held == text) {
            // Said already, and not shown yet: once is enough.
        } else if self.held.len() < MAX_HELD {
            self.held.push((level, text));
        } else {
            self.held_over += 1;
        }
        Vec::new()
    }

    /// An agent message chunk, its text apart from what the message said
    /// before when that did not end a paragraph.
    fn message(&mut self, text: String) -> SessionUpdate {
        let text = match self.message_tail {
            Tail::Paragraph => text,
            Tail::Line => format!("\n{text}"),
            Tail::Open => format!("\n\n{text}"),
        };
        self.message_tail = Tail::Paragraph;
        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
    }

    /// Notices held while no turn ran, shown now that one started.
    fn release_held(&mut self) -> Vec<SessionUpdate> {
        let held = std::mem::take(&mut self.held);
        let over = std::mem::take(&mut self.held_over);
        let mut updates: Vec<SessionUpdate> = held
            .into_iter()
            .map(|(level, text)| self.message(marked_notice(level, &text)))
            .collect();
        if over > 0 {
            updates.push(self.message(marked_notice(
                NoticeLevel::Info,
                &format!("{over} more notices while no turn ran are in the session's log (`candor audit`)."),
            )));
        }
        updates
    }

    /// Notes how the agent's message so far ends, for a notice after it.
    fn note_message(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.message_tail =
            if text.ends_with("\n\n") || (text == "\n" && self.message_tail != Tail::Open) {
                Tail::Paragraph
            } else if text.ends_with('\n') {
                Tail::Line
            } else {
                Tail::Open
            };
    }

    pub fn new(cwd: PathBuf, mode: Mode) -> Self {
        Self {
            cwd,
            mode,
            cards: HashMap::new(),
            ended: std::collections::HashSet::new(),
            plans: HashMap::new(),
            notices: false,
            subagents: false,
            children: HashMap::new(),
            echo_prompts: false,
            compaction: false,
            context_window: None,
            cost: crate::providers::prices::Total::default(),
            trust_cards: HashMap::new(),
            in_turn: false,
            held: Vec::new(),
            held_over: 0,
            message_tail: Tail::Paragraph,
        }
    }

    /// The session's cost so far for `usage_update`, when known.
    fn cost_so_far(&self) -> Option<agent_client_protocol_schema::v1::Cost> {
        self.cost
            .known()
            .map(|c| agent_client_protocol_schema::v1::Cost::new(c.amount, c.currency))
    }

    /// From now on, present as `mode` (a loaded session goes live once its
    /// records are replayed).
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    /// Whether the client takes `notice` updates (`session.notices`, a
    /// capability of the connection); if not, notices are agent messages
    /// inside turns ([`marked_notice`]).
    pub fn with_notices(mut self, notices: bool) -> Self {
        self.notices = notices;
        self
    }

    /// Whether the client takes subagent sessions: a child is announced
    /// and referenced on its card; else its calls are lines on the card.
    pub fn with_subagents(mut self, subagents: bool) -> Self {
        self.subagents = subagents;
        self
    }

    /// A subagent's session: its task (a `user/message` the client did not
    /// send) is shown live as in a replay.
    pub fn echoing_prompts(mut self) -> Self {
        self.echo_prompts = true;
        self
    }

    /// Whether the client takes `compaction_update`s (`session.compaction`);
    /// if not, a compaction is told in a notice.
    pub fn with_compaction(mut self, compaction: bool) -> Self {
        self.compaction = compaction;
        self
    }

    /// The updates one record means, in order.
    pub fn apply(&mut self, record: &Record) -> Vec<SessionUpdate> {
        match &record.event {
            Event::SessionStarted { context_window, .. } => {
                self.context_window = *context_window;
                Vec::new()
            }
            // The model's, not the editor's (`/context` shows it).
            Event::SessionEnvironment(_) => Vec::new(),
            Event::AssistantMessage { content, .. } => {
                self.cost.add_record(&record.event);
                let usage = content.iter().find_map(|b| match b {
                    AssistantBlock::Raw { usage, .. } => *usage,
                    _ => None,
                });
                let mut updates = self.searches(record.seq, content);
                if let (Some(u), Some(size)) = (usage, self.context_window) {
                    updates.push(SessionUpdate::UsageUpdate(
                        UsageUpdate::new(u.context_tokens(), size).cost(self.cost_so_far()),
                    ));
                }
                updates
            }
            Event::ConfigChanged {
                config_id: ConfigId::Mode,
                value,
                ..
            } => vec![SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                value.clone(),
            ))],
            Event::TurnEnded { .. } => self.turn_ended(),
            Event::ConfigChanged { .. } => Vec::new(),
            Event::SessionTitled { title, .. } => vec![SessionUpdate::SessionInfoUpdate(
                agent_client_protocol_schema::v1::SessionInfoUpdate::new()
                    .title(title.clone())
                    .updated_at(record.at.clone()),
            )],
            Event::HistoryCompacted { .. } => {
                self.cost.add_record(&record.event);
                self.compacted(record)
            }
            Event::PromptExpanded { .. } | Event::PromptResource { .. } => {
                self.prompt_notice(&record.event)
            }
            Event::ToolContent { .. } => self.tool_content(&record.event),
            Event::ElicitationRequested(_) | Event::ElicitationResolved(_) => {
                self.elicitation(&record.event)
            }
            Event::Notice { level, text } => self.notice(*level, text.clone()),
            Event::HookContext { quiet: true, .. } => Vec::new(),
            Event::HookContext {
                event, hook, text, ..
            } => self.hook_context(*event, hook, text),
            Event::CommandsOffered { commands } => match self.mode {
                // A loaded session offers them afresh after its response.
                Mode::Replay => Vec::new(),
                Mode::Live => vec![SessionUpdate::AvailableCommandsUpdate(
                    AvailableCommandsUpdate::new(commands.iter().map(available_command).collect()),
                )],
            },
            Event::CommandRan { output, .. } => {
                self.note_message(output);
                vec![SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    ContentBlock::from(output.clone()),
                ))]
            }
            Event::PromptBlocked { hook, reason } => self.notice(
                NoticeLevel::Error,
                format!("The hook {hook} blocked this prompt: {reason}"),
            ),
            Event::UserMessage { content, via, .. } => self.user_message(content, via.as_ref()),
            Event::SteeringDelivered { .. }
            | Event::SteeringDropped { .. }
            | Event::PromptQueued { .. }
            | Event::PromptUnqueued { .. }
            | Event::SteeringReceived { .. } => self.arrival(&record.event),
            Event::AssistantDelta { channel, text } => {
                if *channel == DeltaChannel::Text {
                    self.note_message(text);
                }
                let chunk = ContentChunk::new(ContentBlock::from(text.clone()));
                vec![match channel {
                    DeltaChannel::Text => SessionUpdate::AgentMessageChunk(chunk),
                    DeltaChannel::Thinking => SessionUpdate::AgentThoughtChunk(chunk),
                }]
            }
            Event::ToolCall { .. } => self.tool_call(record),
            Event::PermissionRequested {
                preview: Some(_), ..
            } => self.asked_again(record),
            Event::PermissionRequested { .. } | Event::PermissionResolved { .. } => Vec::new(),
            Event::NetworkRequested { .. } => Vec::new(),
            Event::NetworkDecided { .. } => self.network_decided(record),
            Event::TrustRequested { .. } => self.trust_requested(record),
            Event::TrustResolved { .. } => self.trust_resolved(record),
            // The `/trust` command's answer says what it did.
            Event::TrustGranted { .. } => Vec::new(),
            Event::ToolTerminal { .. } => self.tool_terminal(record),
            Event::ToolStarted { tool_call_id } => {
                self.advance(tool_call_id, ToolCallStatus::InProgress, |_| {
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress)
                })
            }
            Event::ToolOutput { .. } => self.tool_output(record),
            Event::ToolResult { .. } => self.tool_result(record),
            Event::SubagentStarted { .. }
            | Event::SubagentActivity { .. }
            | Event::SubagentEnded { .. }
            | Event::SubagentAssigned(_) => self.subagent(&record.event),
        }
    }

    /// What a hook told the model, as a notice.
    fn hook_context(&mut self, event: SessionEvent, hook: &str, text: &str) -> Vec<SessionUpdate> {
        let text = if matches!(event, SessionEvent::Stop | SessionEvent::SubagentStop) {
            format!(
                "The {} hook {hook} did not let the turn end: {text}",
                event.name()
            )
        } else {
            format!(
                "The {} hook {hook} added context for the model: {}",
                event.name(),
                crate::text::shorten(text, 301)
            )
        };
        self.notice(NoticeLevel::Info, text)
    }

    /// The turn is over: a notice now waits for the next one.
    fn turn_ended(&mut self) -> Vec<SessionUpdate> {
        self.in_turn = false;
        Vec::new()
    }

    /// A prompt opens a turn: nothing live (the client sent it) but for
    /// one a steering message opened; its blocks in a replay; then the
    /// notices held since the last turn.
    fn user_message(
        &mut self,
        content: &[ContentBlock],
        via: Option<&crate::event_log::Via>,
    ) -> Vec<SessionUpdate> {
        self.in_turn = true;
        self.message_tail = Tail::Paragraph;
        let echo = self.mode == Mode::Replay
            || self.echo_prompts
            || matches!(via, Some(crate::event_log::Via::Steering { .. }));
        let mut updates: Vec<SessionUpdate> = if echo {
            content.iter().map(replayed_block).collect()
        } else {
            Vec::new()
        };
        updates.extend(self.release_held());
        updates
    }

    /// A record of the session's line: a steering message is shown as the
    /// user's where the model got it (live and replayed), or a notice when
    /// it never got there; a queued prompt shows when its turn opens.
    fn arrival(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::SteeringDelivered { content, .. } => {
                self.message_tail = Tail::Paragraph;
                content.iter().map(replayed_block).collect()
            }
            Event::SteeringDropped { reason, .. } => self.notice(
                NoticeLevel::Warning,
                match reason {
                    crate::event_log::Dropped::Cancelled => "A steering message did not reach the model: the turn was cancelled before its next request. Send it again as a prompt if it still holds.",
                    crate::event_log::Dropped::Stopped => "A steering message did not reach the model: the session ended first.",
                }
                .to_owned(),
            ),
            _ => Vec::new(),
        }
    }

    /// A compaction: a notice with the figures, then the context used
    /// from now on (estimated). The summary request itself shows nothing.
    fn compacted(&mut self, record: &Record) -> Vec<SessionUpdate> {
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
        } = &record.event
        else {
            return Vec::new();
        };
        if self.compaction {
            // One update, complete: the record is written once the summary
            // is in. Its id is the record's place in the log.
            let figures = serde_json::json!({
                "trigger": trigger,
                "focus": focus,
                "from": from,
                "to": to,
                "tokensBefore": tokens_before,
                "tokensAfter": tokens_after,
                "contextWindow": self.context_window,
                "elided": elided,
            });
            let mut meta = agent_client_protocol_schema::v1::Meta::new();
            meta.insert("candor".into(), figures);
            let update = agent_client_protocol_schema::v1::CompactionUpdate::new(
                format!("compaction-{}", record.seq),
                agent_client_protocol_schema::v1::CompactionStatus::Completed,
            )
            .summary(vec![ContentBlock::from(summary.clone())])
            .meta(meta);
            let mut updates = vec![SessionUpdate::CompactionUpdate(update)];
            if let Some(size) = self.context_window {
                updates.push(SessionUpdate::UsageUpdate(
                    UsageUpdate::new(*tokens_after, size).cost(self.cost_so_far()),
                ));
            }
            return updates;
        }
        let why = match (trigger, focus) {
            (CompactTrigger::Auto, _) => {
                "the next request would have filled the context window".to_owned()
            }
            (CompactTrigger::Manual, Some(f)) => {
                format!("on request, focused on: {}", crate::text::shorten(f, 200))
            }
            (CompactTrigger::Manual, None) => "on request".to_owned(),
            (CompactTrigger::Overflow, _) => {
                "the provider said the request was too long for the model".to_owned()
            }
        };
        let of = self
            .context_window
            .map(|w| format!(" of {}", crate::text::thousands(w)))
            .unwrap_or_default();
        let shortened = if *elided {
            " (the model was shown that part with long outputs shortened)"
        } else {
            ""
        };
        let text = format!(
            "Compacted the conversation ({why}): about {} → {} tokens{of}. The model now continues from a summary of the earlier part (log records {from}–{to}){shortened} and the recent turns as they were; this conversation, its tool calls and the log are unchanged.",
            crate::text::thousands(*tokens_before),
            crate::text::thousands(*tokens_after),
        );
        let mut updates = self.notice(NoticeLevel::Info, text);
        if let Some(size) = self.context_window {
            updates.push(SessionUpdate::UsageUpdate(
                UsageUpdate::new(*tokens_after, size).cost(self.cost_so_far()),
            ));
        }
        updates
    }

    fn asked_again(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::PermissionRequested {
            tool_call_id,
            preview: Some(diff),
            ..
        } = &record.event
        else {
            return Vec::new();
        };
        // Asked again: the file changed; the card shows the change
        // as it would now be.
        let Some(card) = self.open_card(tool_call_id) else {
            return Vec::new();
        };
        let content = card.content(vec![
            diff_content(diff),
            text_content(
                "The file changed before your answer: this is the change as it would now be."
                    .into(),
            ),
        ]);
        let locations = vec![ToolCallLocation::new(diff.path.clone()).line(diff.line)];
        card.shown.content.clone_from(&content);
        card.shown.locations.clone_from(&locations);
        vec![update(
            tool_call_id,
            ToolCallUpdateFields::new()
                .content(content)
                .locations(locations),
        )]
    }

    /// A confined command's connection: asked (nothing: the question is the
    /// permission request, `network_card`), or decided: what the user answered,
    /// and what was refused, is one more lead line of its card (a
    /// connection its allowlist or a grant let through is in the log and
    /// the audit, not on the card, whose line already says where the
    /// command may connect).
    fn network_decided(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::NetworkDecided {
            tool_call_id,
            allowed,
            by,
            ..
        } = &record.event
        else {
            return Vec::new();
        };
        let shown = !allowed || *by == crate::event_log::NetworkDecider::User;
        let Some(line) = crate::event_log::network_line(&record.event).filter(|_| shown) else {
            return Vec::new();
        };
        let mode = self.mode;
        let Some(card) = self.open_card(tool_call_id) else {
            return Vec::new();
        };
        card.lead.push(text_content(crate::text::visible(&line)));
        let rest = match &card.terminal {
            Some(id) if mode == Mode::Live => vec![terminal_content(id)],
            _ if !card.output.is_empty() => {
                vec![text_content(fenced(&card.output.render(), "console"))]
            }
            _ => Vec::new(),
        };
        let content = card.content(rest);
        vec![update(
            tool_call_id,
            ToolCallUpdateFields::new().content(content),
        )]
    }

    fn tool_terminal(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::ToolTerminal {
            tool_call_id,
            terminal_id,
        } = &record.event
        else {
            return Vec::new();
        };
        let mode = self.mode;
        let Some(card) = self.open_card(tool_call_id) else {
            return Vec::new();
        };
        card.terminal = Some(terminal_id.clone());
        if mode == Mode::Replay {
            // The terminal is gone; the result shows its output.
            return Vec::new();
        }
        let content = card.content(vec![terminal_content(terminal_id)]);
        vec![update(
            tool_call_id,
            ToolCallUpdateFields::new().content(content),
        )]
    }

    fn tool_output(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::ToolOutput {
            tool_call_id,
            text,
            skipped,
        } = &record.event
        else {
            return Vec::new();
        };
        let Some(card) = self.open_card(tool_call_id) else {
            return Vec::new();
        };
        card.output.skip(*skipped);
        card.output.push(text);
        let content = card.content(vec![text_content(fenced(&card.output.render(), "console"))]);
        vec![update(
            tool_call_id,
            ToolCallUpdateFields::new().content(content),
        )]
    }

    /// What an MCP server or a command file gave the prompt, as a notice.
    fn prompt_notice(&mut self, event: &Event) -> Vec<SessionUpdate> {
        let text = match event {
            Event::PromptExpanded {
                command,
                server,
                source,
                path,
                text,
                ignored,
            } => {
                let from = match (server, source, path) {
                    (Some(server), _, _) => format!("by the MCP server {server}"),
                    (None, Some(source), Some(path)) => format!(
                        "from {} ({})",
                        path.strip_prefix(&self.cwd).unwrap_or(path).display(),
                        source.name()
                    ),
                    _ => "by candor".to_owned(),
                };
                let not_done = if ignored.is_empty() {
                    String::new()
                } else {
                    format!(" Not done: {}.", ignored.join("; "))
                };
                format!(
                    "/{command} was expanded {from}.{not_done} The model is given:\n{}",
                    crate::text::shorten(text, 2001)
                )
            }
            Event::PromptResource {
                uri,
                server: Some(server),
                text,
                ..
            } => format!(
                "Attached {uri} from the MCP server {server} ({} characters)",
                text.chars().count()
            ),
            Event::PromptResource {
                uri,
                path,
                text,
                image,
                ..
            } => {
                let shown = path
                    .as_ref()
                    .map_or_else(|| uri.clone(), |p| p.display().to_string());
                match image {
                    Some(i) => format!(
                        "Attached the image {shown} for the model ({}, {})",
                        i.mime_type,
                        crate::media::size(i.bytes)
                    ),
                    None => format!(
                        "Attached {shown} for the model ({} characters)",
                        text.chars().count()
                    ),
                }
            }
            _ => return Vec::new(),
        };
        self.notice(NoticeLevel::Info, text)
    }

    /// The web searches the provider ran in a turn, each a card that is
    /// done when shown (`candor-search-<seq>-<n>`: no call's id begins
    /// `candor-`, `session::turn`): the query, the titles
    /// and URLs it found, and that it ran at the provider.
    fn searches(&mut self, seq: u64, content: &[AssistantBlock]) -> Vec<SessionUpdate> {
        let at = match content.iter().find_map(|b| match b {
            AssistantBlock::Raw { api, .. } => Some(*api),
            _ => None,
        }) {
            Some(crate::conversation::WireApi::Anthropic) => "Anthropic",
            Some(crate::conversation::WireApi::OpenaiResponses) => "OpenAI",
            _ => "the model's provider",
        };
        let mut updates = Vec::new();
        for (n, block) in content.iter().enumerate() {
            let AssistantBlock::WebSearch {
                id,
                query,
                results,
                error,
            } = block
            else {
                continue;
            };
            let card = format!("candor-search-{seq}-{n}");
            if !self.ended.insert(card.clone()) {
                continue;
            }
            let mut lines = vec![format!(
                "Ran at {at}, inside the model's response: candor did not run this search and could not stop it before it ran. Your WebSearch permission rules decide whether the search is offered at all."
            )];
            // What the provider and the pages it found wrote, each on its
            // own line: a line break in a title must not add a line that
            // poses as a result or as candor's words.
            let line = |t: &str| t.replace(char::is_control, " ").trim().to_owned();
            match error {
                Some(e) => lines.push(format!("The search failed: {}", line(e))),
                None if results.is_empty() => lines.push("No results.".into()),
                None => lines.extend(results.iter().enumerate().map(|(i, r)| {
                    let (title, url) = (line(&r.title), line(&r.url));
                    if title.is_empty() {
                        format!("{}. {url}", i + 1)
                    } else {
                        format!("{}. {title} — {url}", i + 1)
                    }
                })),
            }
            let status = if error.is_some() {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            };
            let mut meta = serde_json::Map::new();
            meta.insert(
                "candor".into(),
                json!({"ranAt": "provider", "providerId": id}),
            );
            let title = crate::text::shorten(&query.replace(char::is_control, " "), 100);
            updates.push(SessionUpdate::ToolCall(
                ToolCall::new(card, format!("Web search: \"{title}\""))
                    .name("WebSearch".to_owned())
                    .kind(ToolKind::Fetch)
                    .status(status)
                    .raw_input(json!({ "query": query }))
                    .raw_output(json!({ "results": results, "error": error }))
                    .content(vec![text_content(lines.join("\n"))])
                    .meta(meta),
            ));
        }
        updates
    }

    /// An MCP tool's answer beside its text: kept for the card's end.
    fn tool_content(&mut self, event: &Event) -> Vec<SessionUpdate> {
        if let Event::ToolContent {
            tool_call_id,
            content,
            structured,
        } = event
            && let Some(card) = self.open_card(tool_call_id)
        {
            card.extra = content.iter().map(result_content).collect();
            card.structured = structured.clone();
        }
        Vec::new()
    }

    /// A line about an MCP server's question, added to its call's card.
    fn elicitation(&mut self, event: &Event) -> Vec<SessionUpdate> {
        let (id, line) = match event {
            Event::ElicitationRequested(asked) => {
                (&asked.tool_call_id, tools::mcp::elicit::asked_text(asked))
            }
            Event::ElicitationResolved(answered) => (
                &answered.tool_call_id,
                tools::mcp::elicit::answered_text(answered),
            ),
            _ => return Vec::new(),
        };
        let mode = self.mode;
        let Some(card) = self.open_card(id) else {
            return Vec::new();
        };
        card.asked.push(text_content(line));
        let now = match &card.terminal {
            Some(terminal) if mode == Mode::Live => vec![terminal_content(terminal)],
            _ if !card.output.is_empty() => {
                vec![text_content(fenced(&card.output.render(), "console"))]
            }
            _ => Vec::new(),
        };
        let content = card.content(now);
        vec![update(id, ToolCallUpdateFields::new().content(content))]
    }

    fn tool_call(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::ToolCall {
            tool_call_id,
            tool,
            arguments,
            original_arguments,
            digest,
            decision,
            hooks,
            rewritten_by,
            preview,
            mcp,
            sandbox,
        } = &record.event
        else {
            return Vec::new();
        };
        if self.cards.contains_key(tool_call_id) || self.ended.contains(tool_call_id) {
            return Vec::new();
        }
        let known = Tool::from_name(tool);
        if known.is_some_and(|t| !t.shows_card()) && decision.outcome != Outcome::Deny {
            // The plan tool shows as the session's plan, once it ran.
            if let Some(entries) = tools::todo::plan_entries(arguments) {
                self.plans.insert(tool_call_id.clone(), entries);
            }
            return Vec::new();
        }
        let mut shown = match (known, mcp) {
            (Some(t), _) => t.present(arguments, &self.cwd),
            (None, Some(target)) => tools::present_mcp(target),
            (None, None) => tools::present_unknown(tool),
        };
        if let Some(p) = preview {
            shown.locations = vec![ToolCallLocation::new(p.path.clone()).line(p.line)];
        }
        let note = original_arguments
            .as_ref()
            .map(|original| rewrite_note(original, arguments, rewritten_by));
        let lead: Vec<ToolCallContent> = note
            .into_iter()
            .chain(known.and_then(|t| t.detail(arguments)))
            // Where the command runs, from the boundary it was settled with.
            .chain(sandbox.as_ref().map(crate::sandbox::Boundary::summary))
            .map(text_content)
            .collect();
        let mut content = lead.clone();
        content.extend(preview.as_ref().map(diff_content));
        if preview.as_ref().is_some_and(|p| p.unread) {
            content.push(text_content(
                "candor has not read this file (it is outside the project, or a rule denies reading it): this is the change the call proposes; the file is read once you allow it.".into(),
            ));
        }
        let mut meta = serde_json::Map::new();
        meta.insert("decision".into(), json!(decision));
        meta.insert("digest".into(), json!(digest));
        if let Some(boundary) = sandbox {
            meta.insert("sandbox".into(), json!(boundary));
        }
        if let Some(original) = original_arguments {
            meta.insert("originalInput".into(), original.clone());
            meta.insert("rewrittenBy".into(), json!(rewritten_by));
        }
        if !hooks.is_empty() {
            meta.insert("hooks".into(), json!(hooks));
        }
        let status = match decision.outcome {
            Outcome::Allow | Outcome::Ask => ToolCallStatus::Pending,
            Outcome::Deny => {
                let by = describe_decider(decision.by.as_deref().unwrap_or("candor"));
                let reason = decision.reason.as_deref().unwrap_or("no reason given");
                content.push(text_content(format!("Refused by {by}: {reason}")));
                ToolCallStatus::Failed
            }
        };
        let mut candor = serde_json::Map::new();
        candor.insert("candor".into(), Value::Object(meta));
        let call = ToolCall::new(tool_call_id.clone(), shown.title)
            .name(tool.clone())
            .kind(shown.kind)
            .locations(shown.locations)
            .raw_input(arguments.clone())
            .content(content)
            .meta(candor)
            .status(status);
        let ask_reason = match decision.outcome {
            Outcome::Ask => Some(decision.reason.clone().unwrap_or_else(|| {
                format!(
                    "asked by {}",
                    describe_decider(decision.by.as_deref().unwrap_or("default"))
                )
            })),
            Outcome::Allow | Outcome::Deny => None,
        };
        if matches!(status, ToolCallStatus::Completed | ToolCallStatus::Failed) {
            self.ended.insert(tool_call_id.clone());
            return vec![SessionUpdate::ToolCall(call)];
        }
        self.cards.insert(
            tool_call_id.clone(),
            Card {
                status,
                output: BoundedText::default(),
                lead,
                shown: call.clone(),
                ask_reason,
                terminal: None,
                extra: Vec::new(),
                asked: Vec::new(),
                structured: None,
            },
        );
        vec![SessionUpdate::ToolCall(call)]
    }

    fn trust_requested(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::TrustRequested { wants, digest, .. } = &record.event else {
            return Vec::new();
        };
        let id = trust_card_id(record.seq);
        if self.cards.contains_key(&id) || self.ended.contains(&id) {
            return Vec::new();
        }
        self.trust_cards.insert(digest.clone(), id.clone());
        // Whole (an older candor's card cut each at 2,000 characters).
        let shown: Vec<String> = wants.iter().map(|w| crate::text::visible(w)).collect();
        let content = vec![text_content(format!(
            "This project's own settings want the following. None of it applies until you trust the project (deny and ask rules, and `plan` mode, apply anyway):\n{}",
            fenced(&shown.join("\n"), "text")
        ))];
        let call = ToolCall::new(id.clone(), "Trust this project's settings?")
            .kind(ToolKind::Other)
            .raw_input(json!({ "wants": wants }))
            .content(content)
            .status(ToolCallStatus::Pending);
        self.cards.insert(
            id,
            Card {
                status: ToolCallStatus::Pending,
                output: BoundedText::default(),
                lead: Vec::new(),
                shown: call.clone(),
                ask_reason: None,
                terminal: None,
                extra: Vec::new(),
                asked: Vec::new(),
                structured: None,
            },
        );
        vec![SessionUpdate::ToolCall(call)]
    }

    fn trust_resolved(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::TrustResolved {
            digest,
            outcome,
            reason,
        } = &record.event
        else {
            return Vec::new();
        };
        let Some(id) = self.trust_cards.remove(digest) else {
            return Vec::new();
        };
        let (status, text) = match outcome {
            TrustOutcome::Trusted => (
                ToolCallStatus::Completed,
                "Trusted: the project's settings apply from now on, in this and later sessions (until they change).".to_owned(),
            ),
            TrustOutcome::TrustedOnce => (
                ToolCallStatus::Completed,
                "Trusted for this session: the project's settings apply until it ends.".to_owned(),
            ),
            TrustOutcome::Refused => (
                ToolCallStatus::Failed,
                "Not trusted: candor will not ask again unless these settings change.".to_owned(),
            ),
            TrustOutcome::Cancelled => (
                ToolCallStatus::Failed,
                "Not answered (the prompt was cancelled): candor asks again at your next prompt.".to_owned(),
            ),
            TrustOutcome::NotNow | TrustOutcome::Failed => (
                ToolCallStatus::Failed,
                format!(
                    "Not trusted for now{}: candor asks again in the next session.",
                    reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
                ),
            ),
        };
        self.advance(&id, status, |card| {
            let mut content = card.shown.content.clone();
            content.push(text_content(text));
            ToolCallUpdateFields::new().status(status).content(content)
        })
    }

    fn tool_result(&mut self, record: &Record) -> Vec<SessionUpdate> {
        let Event::ToolResult {
            tool_call_id,
            status,
            output,
            exit_code,
            signal,
            hook_notes,
            diff,
            output_file: _,
        } = &record.event
        else {
            return Vec::new();
        };
        if let Some(entries) = self.plans.remove(tool_call_id) {
            return match status {
                ResultStatus::Completed => vec![SessionUpdate::Plan(Plan::new(entries))],
                ResultStatus::Failed | ResultStatus::Cancelled => Vec::new(),
            };
        }
        let mode = self.mode;
        let wire_status = match status {
            ResultStatus::Completed => ToolCallStatus::Completed,
            ResultStatus::Failed | ResultStatus::Cancelled => ToolCallStatus::Failed,
        };
        self.advance(tool_call_id, wire_status, |card| {
            let mut content = vec![match (&card.terminal, diff) {
                (Some(id), _) if mode == Mode::Live => terminal_content(id),
                (_, Some(d)) => diff_content(d),
                _ if !card.output.is_empty() => {
                    text_content(fenced(&card.output.render(), "console"))
                }
                _ => text_content(match status {
                    ResultStatus::Completed => fenced(output, ""),
                    ResultStatus::Failed | ResultStatus::Cancelled => output.clone(),
                }),
            }];
            content.extend(card.extra.iter().cloned());
            if let Some(trailer) = trailer(*status, *exit_code, signal.as_deref()) {
                content.push(text_content(trailer));
            }
            for note in hook_notes.iter().filter(|n| n.decision != NoteKind::Quiet) {
                let what = match note.decision {
                    NoteKind::Block => "flagged this result",
                    NoteKind::Error => "failed",
                    NoteKind::Accept | NoteKind::Quiet | NoteKind::Context => "adds",
                };
                content.push(text_content(format!(
                    "Hook {} {what}: {}",
                    note.hook, note.text
                )));
            }
            let content = card.content(content);
            let mut raw = serde_json::Map::new();
            if let Some(code) = exit_code {
                raw.insert("exitCode".into(), json!(code));
            }
            if let Some(signal) = signal {
                raw.insert("signal".into(), json!(signal));
            }
            if let Some(structured) = card.structured.clone() {
                raw.insert("structuredContent".into(), structured);
            }
            let mut fields = ToolCallUpdateFields::new()
                .status(wire_status)
                .content(content);
            if let Some(d) = diff {
                fields = fields.locations(vec![ToolCallLocation::new(d.path.clone()).line(d.line)]);
            }
            if raw.is_empty() {
                fields
            } else {
                fields.raw_output(Value::Object(raw))
            }
        })
    }

    /// What a permission request shows: the card as it is, with why candor
    /// asks. `None` for a call that has no open card.
    pub fn permission_card(&self, id: &str) -> Option<ToolCallUpdate> {
        let card = self.cards.get(id).filter(|c| !c.terminal())?;
        let shown = &card.shown;
        let mut content = shown.content.clone();
        if let Some(reason) = &card.ask_reason {
            content.push(text_content(format!("candor asks: {reason}")));
        }
        let fields = ToolCallUpdateFields::new()
            .title(shown.title.clone())
            .kind(shown.kind)
            .status(card.status)
            .content(content)
            .locations(shown.locations.clone())
            .raw_input(shown.raw_input.clone());
        Some(ToolCallUpdate::new(id.to_owned(), fields).meta(shown.meta.clone()))
    }

    /// What the permission request asking whether a confined command may
    /// reach `host` shows: the card as it is, and the question ("Allow
    /// network access to HOST?", as codex-acp asks it), with the host in
    /// `_meta.candor.network`.
    pub fn network_card(&self, id: &str, host: &str, port: u16) -> Option<ToolCallUpdate> {
        let card = self.cards.get(id).filter(|c| !c.terminal())?;
        let shown = &card.shown;
        let mut content = card.lead.clone();
        content.push(text_content(crate::text::visible(&format!(
            "Allow network access to {host}? The command is connecting to {host}:{port}, which its sandbox's allowlist does not name. Allow it for this command, or for the rest of this session."
        ))));
        let mut meta = shown.meta.clone().unwrap_or_default();
        if let Some(Value::Object(candor)) = meta.get_mut("candor") {
            candor.insert("network".into(), json!({"host": host, "port": port}));
        }
        let fields = ToolCallUpdateFields::new()
            .title(shown.title.clone())
            .kind(shown.kind)
            .status(card.status)
            .content(content)
            .locations(shown.locations.clone())
            .raw_input(shown.raw_input.clone());
        Some(ToolCallUpdate::new(id.to_owned(), fields).meta(meta))
    }

    /// Ids of cards that are shown but not terminal.
    pub fn open_cards(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .cards
            .iter()
            .filter(|(_, c)| !c.terminal())
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Fails every open card with `reason`, without a log record. Used only
    /// when the log itself cannot be written, so that the client is never
    /// left with a card spinning forever.
    pub fn abandon(&mut self, reason: &str) -> Vec<SessionUpdate> {
        let ids = self.open_cards();
        ids.iter()
            .flat_map(|id| {
                self.advance(id, ToolCallStatus::Failed, |_| {
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Failed)
                        .content(vec![text_content(reason.to_owned())])
                })
            })
            .collect()
    }

    fn open_card(&mut self, id: &str) -> Option<&mut Card> {
        self.cards.get_mut(id).filter(|c| !c.terminal())
    }

    /// Moves a card forward to `to` with the fields `make` builds; nothing
    /// for unknown or terminal cards.
    fn advance(
        &mut self,
        id: &str,
        to: ToolCallStatus,
        make: impl FnOnce(&Card) -> ToolCallUpdateFields,
    ) -> Vec<SessionUpdate> {
        let Some(card) = self.open_card(id) else {
            return Vec::new();
        };
        let fields = make(card);
        card.status = to;
        if card.terminal() {
            // A card that ended changes no more: only its id is kept (a long
            // session's memory grows with its open cards, not its history).
            self.cards.remove(id);
            self.children.remove(id);
            self.ended.insert(id.to_owned());
        }
        vec![update(id, fields)]
    }
}

/// The card of the `trust/requested` record numbered `seq` (`candor-…`,
/// as every card of candor's own: no call's id begins so, `session::turn`).
pub fn trust_card_id(seq: u64) -> String {
    format!("candor-trust-{seq}")
}

fn update(id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_owned(), fields))
}

fn diff_content(d: &FileDiff) -> ToolCallContent {
    ToolCallContent::Diff(
        Diff::new(d.path.clone(), d.new_text.clone()).old_text(d.old_text.clone()),
    )
}

fn terminal_content(id: &str) -> ToolCallContent {
    ToolCallContent::Terminal(Terminal::new(id.to_owned()))
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text))
}

/// Who decided, for a person: `hook:rtk` → `hook rtk`, `mode:plan` →
/// `plan mode`, `rule:Bash(rm *)` → `rule Bash(rm *)`.
pub fn describe_decider(by: &str) -> String {
    match by.split_once(':') {
        Some(("hook", h)) => format!("hook {h}"),
        Some(("rule", r)) => format!("rule {r}"),
        Some(("grant", r)) => format!("session grant {r}"),
        Some(("mode", m)) => format!("{m} mode"),
        Some(("subagent", t)) => format!("the {t} subagent's definition"),
        _ => by.to_owned(),
    }
}

/// The visible line on a rewritten call's card: which hooks, and what
/// changed (the command, for a command).
pub fn rewrite_note(original: &Value, effective: &Value, by: &[String]) -> String {
    let who = match by {
        [one] => format!("hook {one}"),
        many => format!("hooks {}", many.join(", ")),
    };
    let command = |v: &Value| v.get("command").and_then(Value::as_str).map(str::to_owned);
    let others_equal = |a: &Value, b: &Value| {
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("command");
            }
            v
        };
        strip(a) == strip(b)
    };
    match (command(original), command(effective)) {
        (Some(a), Some(b)) if others_equal(original, effective) => {
            format!(
                "Rewritten by {who}: {} → {}",
                inline_code(&a),
                inline_code(&b)
            )
        }
        _ => format!(
            "Rewritten by {who}: {} → {}",
            inline_code(&shorten(&original.to_string())),
            inline_code(&shorten(&effective.to_string()))
        ),
    }
}

fn shorten(s: &str) -> String {
    crate::text::shorten(s, 301)
}

/// The line under a card's output saying how it ended, when that is not
/// plain from the output: a cancel, a non-zero exit code, a signal. (A
/// failure without either carries its own message as the output.)
fn trailer(status: ResultStatus, exit_code: Option<i32>, signal: Option<&str>) -> Option<String> {
    match (status, exit_code, signal) {
        (ResultStatus::Cancelled, _, _) => Some("Cancelled.".into()),
        (_, Some(0), _) | (_, None, None) => None,
        (_, Some(code), _) => Some(format!("Exited with code {code}.")),
        (_, None, Some(sig)) => Some(format!("Terminated by {sig}.")),
    }
}

/// Text that keeps its first and last [`CARD_OUTPUT_MAX`]/2 bytes and
/// counts what it dropped in between.
#[derive(Debug, Default)]
struct BoundedText {
    head: String,
    tail: String,
    elided: usize,
}

impl BoundedText {
    const HALF: usize = CARD_OUTPUT_MAX / 2;

    fn push(&mut self, mut text: &str) {
        if self.head.len() < Self::HALF {
            let room = text.floor_char_boundary(Self::HALF - self.head.len());
            self.head.push_str(&text[..room]);
            text = &text[room..];
        }
        self.tail.push_str(text);
        if self.tail.len() > Self::HALF {
            let cut = self.tail.ceil_char_boundary(self.tail.len() - Self::HALF);
            self.tail.drain(..cut);
            self.elided += cut;
        }
    }

    /// `n` bytes were printed here that nobody will see: the tail so far
    /// joins them in the gap.
    fn skip(&mut self, n: u64) {
        if n > 0 {
            self.elided = self
                .elided
                .saturating_add(self.tail.len())
                .saturating_add(usize::try_from(n).unwrap_or(usize::MAX));
            self.tail.clear();
        }
    }

    fn is_empty(&self) -> bool {
        self.head.is_empty()
    }

    fn render(&self) -> String {
        if self.elided == 0 {
            format!("{}{}", self.head, self.tail)
        } else {
            format!(
                "{}\n[… {} bytes not shown …]\n{}",
                self.head, self.elided, self.tail
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::Decision;

    fn rec(seq: u64, event: Event) -> Record {
        Record {
            seq,
            at: "t".into(),
            event,
        }
    }

    fn call_event(id: &str, arguments: Value, decision: Decision) -> Event {
        call_event_of("Bash", id, arguments, decision)
    }

    fn call_event_of(tool: &str, id: &str, arguments: Value, decision: Decision) -> Event {
        Event::ToolCall {
            tool_call_id: id.into(),
            tool: tool.into(),
            digest: crate::interception::digest(tool, &arguments),
            arguments,
            original_arguments: None,
            decision,
            hooks: Vec::new(),
            rewritten_by: Vec::new(),
            preview: None,
            mcp: None,
            sandbox: None,
        }
    }

    fn wire(updates: Vec<SessionUpdate>) -> Vec<Value> {
        updates
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect()
    }

    #[test]
    fn a_tool_call_moves_forward_and_accumulates_output() {
        let mut p = Presenter::new("/p".into(), Mode::Live);
        let id = "toolu_1".to_string();
        let call = p.apply(&rec(
            1,
            call_event(&id, json!({"command": "echo hi"}), Decision::allow()),
        ));
        assert_eq!(
            wire(call),
            vec![
                json!({"sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "`echo hi`",
                        "name": "Bash", "kind": "execute", "rawInput": {"command": "echo hi"},
                        "_meta": {"candor": {"decision": {"outcome": "allow"},
                                             "digest": crate::interception::digest("Bash", &json!({"command": "echo hi"}))}}})
            ]
        );
        let started = p.apply(&rec(
            2,
            Event::ToolStarted {
                tool_call_id: id.clone(),
            },
        ));
        assert_eq!(wire(started)[0]["status"], "in_progress");
        p.apply(&rec(
            3,
            Event::ToolOutput {
                tool_call_id: id.clone(),
                text: "h".into(),
                skipped: 0,
            },
        ));
        let out = p.apply(&rec(
            4,
            Event::ToolOutput {
                tool_call_id: id.clone(),
                text: "i\n".into(),
                skipped: 0,
            },
        ));
        assert_eq!(
            wire(out)[0]["content"][0]["content"]["text"],
            "```console\nhi\n```"
        );
        let done = p.apply(&rec(
            5,
            Event::ToolResult {
                tool_call_id: id.clone(),
                status: ResultStatus::Failed,
                output: "hi\n[exit code: 3]".into(),
                exit_code: Some(3),
                signal: None,
                hook_notes: Vec::new(),
                diff: None,
                output_file: None,
            },
        ));
        let done = wire(done);
        assert_eq!(done[0]["status"], "failed");
        assert_eq!(
            done[0]["content"][1]["content"]["text"],
            "Exited with code 3."
        );
        assert_eq!(done[0]["rawOutput"], json!({"exitCode": 3}));
        // Terminal: later records for the id present nothing.
        assert!(
            p.apply(&rec(6, Event::ToolStarted { tool_call_id: id }))
                .is_empty()
        );
        assert!(p.open_cards().is_empty());
    }

    #[test]
    fn results_without_a_card_present_nothing() {
        let mut p = Presenter::new("/p".into(), Mode::Live);
        let updates = p.apply(&rec(
            1,
            Event::ToolResult {
                tool_call_id: "never-shown".into(),
                status: ResultStatus::Cancelled,
                output: "cancelled".into(),
                exit_code: None,
                signal: None,
                hook_notes: Vec::new(),
                diff: None,
                output_file: None,
            },
        ));
        assert!(updates.is_empty());
    }

    #[test]
    fn a_refused_call_is_a_failed_card_with_the_reason() {
        let mut p = Presenter::new("/p".into(), Mode::Live);
        let updates = wire(p.apply(&rec(
            1,
            call_event_of(
                "Nope",
                "t",
                json!({}),
                Decision::deny("candor", "no such tool"),
            ),
        )));
        assert_eq!(updates[0]["status"], "failed");
        assert_eq!(
            updates[0]["content"][0]["content"]["text"],
            "Refused by candor: no such tool"
        );
    }

    #[test]
    fn user_messages_are_only_replayed() {
        let event = Event::UserMessage {
            images: Vec::new(),
            content: vec![ContentBlock::from("hi")],
            via: None,
        };
        assert!(
            Presenter::new("/".into(), Mode::Live)
                .apply(&rec(1, event.clone()))
                .is_empty()
        );
        assert_eq!(
            Presenter::new("/".into(), Mode::Replay)
                .apply(&rec(1, event))
                .len(),
            1
        );
    }

    #[test]
    fn card_output_is_bounded_with_both_ends_kept() {
        let mut t = BoundedText::default();
        t.push(&"a".repeat(BoundedText::HALF));
        t.push(&"é".repeat(BoundedText::HALF));
        t.push("end");
        let shown = t.render();
        assert!(shown.len() <= CARD_OUTPUT_MAX + 64);
        assert!(shown.starts_with('a') && shown.ends_with("end"));
        assert!(shown.contains("bytes not shown"));
    }

    #[test]
    fn a_rewritten_call_keeps_its_note_on_every_update_and_in_the_permission_card() {
        let mut p = Presenter::new("/p".into(), Mode::Live);
        let original = json!({"command": "git status"});
        let effective = json!({"command": "rtk git status"});
        let event = Event::ToolCall {
            tool_call_id: "t".into(),
            tool: "Bash".into(),
            arguments: effective.clone(),
            original_arguments: Some(original.clone()),
            digest: "sha256:d".into(),
            decision: Decision {
                outcome: Outcome::Ask,
                reason: Some("check it".into()),
                by: Some("hook:rtk".into()),
            },
            hooks: Vec::new(),
            rewritten_by: vec!["rtk".into()],
            preview: None,
            mcp: None,
            sandbox: None,
        };
        let first = wire(p.apply(&rec(1, event)));
        let note = "Rewritten by hook rtk: `git status` → `rtk git status`";
        assert_eq!(first[0]["rawInput"], effective);
        assert_eq!(first[0]["content"][0]["content"]["text"], note);
        assert_eq!(first[0]["_meta"]["candor"]["originalInput"], original);
        let card = serde_json::to_value(p.permission_card("t").unwrap()).unwrap();
        assert_eq!(card["rawInput"], effective);
        assert_eq!(card["content"][0]["content"]["text"], note);
        assert_eq!(
            card["content"][1]["content"]["text"],
            "candor asks: check it"
        );
        assert_eq!(card["_meta"]["candor"]["digest"], "sha256:d");
        p.apply(&rec(
            2,
            Event::ToolStarted {
                tool_call_id: "t".into(),
            },
        ));
        let out = wire(p.apply(&rec(
            3,
            Event::ToolOutput {
                tool_call_id: "t".into(),
                text: "clean\n".into(),
                skipped: 0,
            },
        )));
        assert_eq!(out[0]["content"][0]["content"]["text"], note);
        assert_eq!(
            out[0]["content"][1]["content"]["text"],
            "```console\nclean\n```"
        );
        assert!(p.permission_card("never").is_none());
    }

    #[test]
    fn notes_use_code_spans_the_command_cannot_break() {
        let note = rewrite_note(
            &json!({"command": "echo `a`"}),
            &json!({"command": "echo b"}),
            &["h".into()],
        );
        assert_eq!(note, "Rewritten by hook h: `` echo `a` `` → `echo b`");
        let note = rewrite_note(
            &json!({"file_path": "/a"}),
            &json!({"file_path": "/b"}),
            &["x".into(), "y".into()],
        );
        assert_eq!(
            note,
            "Rewritten by hooks x, y: `{\"file_path\":\"/a\"}` → `{\"file_path\":\"/b\"}`"
        );
    }
}
