//! Compaction bookkeeping, all pure: how much of the context window the
//! next model request takes ([`estimate`]), when that is too much
//! ([`Budget`]), where the part of the conversation a summary replaces ends
//! ([`plan`]), and the request that asks the model for that summary
//! ([`summary_request`]). `session::compact` runs it; `history` applies the
//! `history/compacted` record it leads to.
//!
//! **The estimate.** The last request's usage, as the provider reported it
//! (input and output tokens of the latest `assistant/message` after the
//! latest compaction), plus an estimate of what the log appended since (tool
//! results, prompts, hook context, the model's turns). Without a reported
//! usage (the first request, a provider that reports none, the first request
//! after a compaction) the whole request is estimated. Estimates count text
//! as 4 bytes a token ([`BYTES_PER_TOKEN`]), each image as
//! [`IMAGE_TOKENS`], and [`MESSAGE_TOKENS`] for each message's framing; a
//! raw provider turn is not counted again beside its neutral blocks, nor a
//! thinking block's signature.
//!
//! **The budget.** A request may take the window less a reserve for the
//! answer: the configured `max_tokens` (at most half the window), else
//! [`DEFAULT_RESERVE`] (at most a quarter of the window). The recent turns
//! kept verbatim take at most a quarter of that ([`Budget::keep`]).
//!
//! **The span.** A summary stands for everything from the start of the
//! conversation to the end of its span; what follows is kept verbatim. The
//! span ends right before a `user/message` (whole user turns are kept: the
//! earliest such boundary whose kept part fits [`Budget::keep`]); when not
//! even the current prompt fits (a session of one prompt and many calls),
//! inside it: right before a model response of the current prompt that
//! follows tool results, or after its latest results (never between a call
//! and its result), keeping the user's request verbatim (`kept_prompt`: its
//! `user/message` and what its message is made of) with the latest
//! call/result pairs that fit beside it; when nothing fits, at the latest
//! boundary. Either way the history is the summary (a user message, or
//! after the kept request in its message) then well-formed messages, for
//! every provider. A span must take in something the last summary did not.
//!
//! **The summary request.** The history of the span as a provider would be
//! sent it (the earlier summary first, if any: a second compaction replaces
//! it too), with the session's system prompt and tools (a cached prefix,
//! and history with tool calls needs them), then an instruction. If it does
//! not fit the budget, the span's messages are shortened in steps: tool
//! outputs to 2 000 characters and other texts to 8 000, thinking and raw
//! provider turns left out (they would be invalid once edited); then 300
//! and 2 000; then the oldest messages are left out, from a user message
//! on. The earlier summary and the instruction are never cut.

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};

use crate::conversation::{AssistantBlock, Message, ModelRequest, RewriteStrategy};
use crate::event_log::content::Attachments;
use crate::event_log::{Event, Record, SeqSpan};
use crate::history;

/// Bytes of text per token, for estimates.
pub const BYTES_PER_TOKEN: u64 = 4;
/// Tokens an image is counted as (Anthropic's figure for an image of about
/// 1 100 × 1 100 pixels; a larger one is scaled down to about that).
pub const IMAGE_TOKENS: u64 = 1_600;
/// Tokens of framing counted for each message.
pub const MESSAGE_TOKENS: u64 = 4;
/// The reserve for the answer when no `max_tokens` is configured (what
/// candor asks Anthropic for by default).
pub const DEFAULT_RESERVE: u64 = 16_384;

/// How much of the window a request may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub window: u64,
    pub reserve: u64,
}

impl Budget {
    /// The budget of a model with this window and, if configured, this
    /// most tokens an answer may have.
    pub fn new(window: u64, max_tokens: Option<u64>) -> Budget {
        let reserve = match max_tokens {
            Some(m) => m.min(window / 2),
            None => DEFAULT_RESERVE.min(window / 4),
        };
        Budget { window, reserve }
    }

    /// The most tokens a request may take: past it, candor compacts.
    pub fn limit(&self) -> u64 {
        self.window.saturating_sub(self.reserve)
    }

    /// The most tokens the turns kept verbatim may take.
    pub fn keep(&self) -> u64 {
        self.limit() / 4
    }
}

/// Tokens of `bytes` bytes of text.
pub fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Counts what is written to it (a JSON value's size without building it).
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of `value` as JSON, counted without building it.
pub fn json_bytes(value: &impl serde::Serialize) -> usize {
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The estimated tokens of the next request: the latest reported usage
/// since the latest compaction plus what was appended after it, else the
/// whole of `request` (the request as it would be sent).
pub fn estimate(records: &[Record], request: &ModelRequest) -> u64 {
    for (i, record) in records.iter().enumerate().rev() {
        match &record.event {
            Event::HistoryCompacted { .. } => break,
            Event::AssistantMessage { content, .. } => {
                if let Some(usage) = usage_of(content) {
                    return usage
                        .context_tokens()
                        .saturating_add(appended(&records[i + 1..]));
                }
            }
            _ => {}
        }
    }
    request_tokens(request)
}

fn usage_of(content: &[AssistantBlock]) -> Option<crate::conversation::Usage> {
    content.iter().find_map(|b| match b {
        AssistantBlock::Raw { usage, .. } => *usage,
        _ => None,
    })
}

/// The estimated tokens these records add to the model's history.
pub fn appended(records: &[Record]) -> u64 {
    records
        .iter()
        .map(|r| record_tokens(&r.event))
        .fold(0, u64::saturating_add)
}

/// The estimated tokens one record adds to the model's history.
pub fn record_tokens(event: &Event) -> u64 {
    match event {
        Event::UserMessage { content, .. } | Event::SteeringDelivered { content, .. } => {
            prompt_tokens(content) + MESSAGE_TOKENS
        }
        // The notes around hook context and resources, about 80 bytes.
        Event::PromptResource {
            text,
            image: Some(_),
            ..
        } => tokens(text.len() + 80) + IMAGE_TOKENS,
        Event::HookContext { text, .. }
        | Event::PromptExpanded { text, .. }
        | Event::PromptResource { text, .. } => tokens(text.len() + 80),
        Event::AssistantMessage {
            content,
            interrupted,
            ..
        } => assistant_tokens(content, *interrupted) + MESSAGE_TOKENS,
        Event::ToolResult {
            output, hook_notes, ..
        } => {
            let notes: usize = hook_notes.iter().map(|n| n.text.len() + 60).sum();
            tokens(output.len() + notes) + MESSAGE_TOKENS
        }
        Event::ToolContent { content, .. } => {
            let images = content
                .iter()
                .filter(|c| matches!(c, crate::event_log::ResultContent::Image { .. }))
                .count();
            images as u64 * IMAGE_TOKENS
        }
        Event::SessionStarted { .. }
        | Event::SessionEnvironment(_)
        | Event::ElicitationRequested(_)
        | Event::ElicitationResolved(_)
        | Event::Notice { .. }
        | Event::ConfigChanged { .. }
        | Event::PromptBlocked { .. }
        | Event::CommandsOffered { .. }
        | Event::SessionTitled { .. }
        | Event::CommandRan { .. }
        | Event::AssistantDelta { .. }
        | Event::ToolCall { .. }
        | Event::PermissionRequested { .. }
        | Event::PermissionResolved { .. }
        | Event::NetworkRequested { .. }
        | Event::NetworkDecided { .. }
        | Event::TrustRequested { .. }
        | Event::TrustResolved { .. }
        | Event::TrustGranted { .. }
        | Event::ToolStarted { .. }
        | Event::ToolTerminal { .. }
        | Event::ToolOutput { .. }
        | Event::HistoryCompacted { .. }
        | Event::PromptQueued { .. }
        | Event::PromptUnqueued { .. }
        | Event::SteeringReceived { .. }
        | Event::SteeringDropped { .. }
        // A subagent's work reaches the model as its call's result.
        | Event::SubagentStarted { .. }
        | Event::SubagentActivity { .. }
        | Event::SubagentEnded { .. }
        | Event::SubagentAssigned(_)
        | Event::TurnEnded { .. } => 0,
    }
}

fn prompt_tokens(content: &[ContentBlock]) -> u64 {
    content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => tokens(t.text.len()),
            ContentBlock::ResourceLink(l) => tokens(l.name.len() + l.uri.len() + 4),
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    tokens(t.text.len() + t.uri.len() + 30)
                }
                _ => tokens(40),
            },
            ContentBlock::Image(_) => IMAGE_TOKENS,
            _ => tokens(20),
        })
        .fold(0, u64::saturating_add)
}

fn assistant_tokens(content: &[AssistantBlock], interrupted: bool) -> u64 {
    content
        .iter()
        .map(|block| match block {
            AssistantBlock::Text { text } => tokens(text.len()),
            AssistantBlock::Thinking { thinking, .. } if !interrupted => tokens(thinking.len()),
            AssistantBlock::ToolUse { id, name, input } if !interrupted => {
                tokens(id.len() + name.len() + json_bytes(input) + 20)
            }
            AssistantBlock::WebSearch { query, results, .. } => tokens(
                query.len()
                    + results
                        .iter()
                        .map(|r| r.title.len() + r.url.len() + 400)
                        .sum::<usize>(),
            ),
            AssistantBlock::Thinking { .. }
            | AssistantBlock::ToolUse { .. }
            | AssistantBlock::Raw { .. } => 0,
        })
        .fold(0, u64::saturating_add)
}

/// The estimated tokens of a request's system prompt and tools.
pub fn fixed_tokens(request: &ModelRequest) -> u64 {
    tokens(request.system.len()) + tokens(json_bytes(&request.tools))
}

/// Whether compacting can help under `budget`: the system prompt and the
/// tools take at most half the limit. (A window configured smaller than
/// that, by mistake or by a project's config file, would otherwise have
/// candor ask for a summary before every request.)
pub fn workable(request: &ModelRequest, budget: &Budget) -> bool {
    fixed_tokens(request) <= budget.limit() / 2
}

/// The summary as recorded: at most [`Budget::keep`] tokens' worth of
/// text (a model that writes more loses the middle, marked), so a summary
/// never takes more room than the turns it replaces were allowed.
pub fn cap_summary(summary: &str, budget: &Budget) -> String {
    let mut text = summary.trim().to_owned();
    let max = usize::try_from(budget.keep().saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX);
    elide(&mut text, max.max(2_000));
    text
}

/// The estimated tokens of a whole request.
pub fn request_tokens(request: &ModelRequest) -> u64 {
    fixed_tokens(request).saturating_add(messages_tokens(&request.messages))
}

/// The estimated tokens of a history.
pub fn messages_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(message_tokens)
        .fold(0, u64::saturating_add)
}

fn message_tokens(message: &Message) -> u64 {
    MESSAGE_TOKENS
        + match message {
            Message::User { text, images } => {
                tokens(text.len()) + images.len() as u64 * IMAGE_TOKENS
            }
            Message::Assistant(turn) => assistant_tokens(&turn.content, false),
            Message::ToolResults { results } => results
                .iter()
                .map(|r| {
                    tokens(r.content.len() + r.tool_use_id.len() + 20)
                        + r.images.len() as u64 * IMAGE_TOKENS
                })
                .fold(0, u64::saturating_add),
        }
}

/// Where a compaction's span ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The first record the summary stands for (the first of the log).
    pub from: u64,
    /// The last one; the model's history goes on after it.
    pub to: u64,
    /// The estimated tokens of what is kept verbatim.
    pub kept: u64,
    /// When the span ends inside the current prompt: the records of the
    /// user's request, kept verbatim before the summary.
    pub kept_prompt: Option<SeqSpan>,
}

/// Where the span of a compaction of these records ends (see the module
/// doc), keeping at most about `keep` tokens verbatim, or `None` when there
/// is nothing new to summarize.
pub fn plan(records: &[Record], keep: u64) -> Option<Plan> {
    let from = records.first()?.seq;
    let start = match history::latest_compaction(records, u64::MAX) {
        Some(c) => records.iter().position(|r| r.seq > c.to)?,
        None => 0,
    };
    let first = start
        + records[start..].iter().position(|r| {
            matches!(
                r.event,
                Event::UserMessage { .. } | Event::AssistantMessage { .. }
            )
        })?;
    let last_user = records
        .iter()
        .rposition(|r| matches!(r.event, Event::UserMessage { .. }))?;
    // What each suffix adds to the history, from the end.
    let mut kept = vec![0u64; records.len() + 1];
    for i in (0..records.len()).rev() {
        kept[i] = kept[i + 1].saturating_add(record_tokens(&records[i].event));
    }
    let users = (first + 1..=last_user)
        .filter(|&i| matches!(records[i].event, Event::UserMessage { .. }))
        .collect::<Vec<_>>();
    // Inside the current prompt: before a model response that follows
    // tool results, or after the last results (all of the prompt's work
    // summarized), each keeping the user's request.
    let mut steps = (last_user.max(first) + 1..records.len())
        .filter(|&i| matches!(records[i].event, Event::AssistantMessage { .. }))
        .filter(|&i| steps_after_results(records, last_user, i))
        .collect::<Vec<_>>();
    let new_results = records[first..]
        .iter()
        .any(|r| matches!(r.event, Event::ToolResult { .. }));
    if new_results && steps_after_results(records, last_user, records.len()) {
        steps.push(records.len());
    }
    let request = prompt_span(records, last_user);
    let request_tokens = request.map_or(0, |(a, b)| kept[a].saturating_sub(kept[b]));
    let fits = |i: &&usize| kept[**i] <= keep;
    let fits_with_request = |i: &&usize| kept[**i].saturating_add(request_tokens) <= keep;
    let (at, in_prompt) = match users.iter().find(fits) {
        Some(at) => (*at, false),
        None => match steps.iter().find(fits_with_request).or(steps.last()) {
            Some(at) => (*at, true),
            None => (*users.last()?, false),
        },
    };
    let kept_prompt = request.filter(|_| in_prompt).map(|(a, b)| SeqSpan {
        from: records[a].seq,
        to: records[b - 1].seq,
    });
    Some(Plan {
        from,
        to: records[at - 1].seq,
        kept: kept[at] + if in_prompt { request_tokens } else { 0 },
        kept_prompt,
    })
}

/// The user's request that opened the prompt at `user`: its
/// `user/message` and the records up to its first model response (what
/// the request's message is made of), as indices `a..b`.
fn prompt_span(records: &[Record], user: usize) -> Option<(usize, usize)> {
    let end = user
        + records[user..]
            .iter()
            .position(|r| matches!(r.event, Event::AssistantMessage { .. }))?;
    Some((user, end))
}

/// Whether the model response at `i` follows tool results within the
/// prompt that opened at `user` (so a span may end right before it).
fn steps_after_results(records: &[Record], user: usize, i: usize) -> bool {
    records[user..i]
        .iter()
        .rev()
        .find(|r| {
            matches!(
                r.event,
                Event::ToolResult { .. }
                    | Event::AssistantMessage { .. }
                    | Event::UserMessage { .. }
            )
        })
        .is_some_and(|r| matches!(r.event, Event::ToolResult { .. }))
}

/// What the model is asked to write, after the span's history
/// (`in_prompt`: the span ends inside the current prompt, whose request is
/// kept).
pub fn instruction(focus: Option<&str>, in_prompt: bool) -> String {
    let mut text = String::from(
        "[candor] This conversation is getting too long for the context window, so the part above is about to be replaced by a summary that you write now. That summary is all that will remain of it: write it so that you can pick up the work from it alone, without asking the user again. Cover, as concretely as you can:\n\
         1. What the user wants: their goals, and every explicit request, constraint and preference they stated (in their own words where the wording matters).\n\
         2. Decisions taken and why; approaches that were tried and failed, and why.\n\
         3. Files and code: each file read, created or changed (its path) and what matters about it; function and type names, commands that build and test the project.\n\
         4. Progress: what is done and verified, what is done but unverified, and what remains, in order; if a step was under way, exactly where it stood.\n\
         5. Open problems: errors not yet solved, with their messages, and anything the user still has to answer.\n\
         If the conversation above starts with an earlier summary, carry everything in it that still matters into the new one. Write plain prose and lists, with no greeting and no remarks about this request. Do not call any tools: answer with the summary text only.",
    );
    if in_prompt {
        text.push_str("\n\nThe user's latest request, which opens the part above, stays in view word for word beside your summary, and so do the latest tool calls after this part: summarize the work done on the request so far, and what it showed.");
    }
    if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
        text.push_str(&format!(
            "\n\nThe user asked for this summary with a focus; give it priority and keep everything about it: {focus}"
        ));
    }
    text
}

/// The request that asks for the summary of the span ending at `to`:
/// `base`'s system prompt and tools, the span's history, the instruction
/// (`in_prompt`: the span ends inside the current prompt, whose request is
/// kept verbatim). `true` when the span's messages had to be shortened to fit `budget`.
// The span, what is asked, and the room: each a different fact.
#[allow(clippy::too_many_arguments)]
pub fn summary_request(
    records: &[Record],
    attachments: &Attachments,
    strategy: RewriteStrategy,
    to: u64,
    base: &ModelRequest,
    focus: Option<&str>,
    in_prompt: bool,
    budget: &Budget,
) -> (ModelRequest, bool) {
    let mut messages = history::derive_through(records, strategy, attachments, to);
    let earlier = history::latest_compaction(records, to);
    messages.push(Message::user(instruction(focus, in_prompt)));
    let mut request = ModelRequest {
        system: base.system.clone(),
        messages,
        tools: base.tools.clone(),
        // As offered before: the history may hold the provider's searches.
        web_search: base.web_search,
    };
    if request_tokens(&request) <= budget.limit() {
        return (request, false);
    }
    // The earlier summary: its own message, or in the kept request's.
    let protect = usize::from(earlier.is_some());
    for (tool, text) in [(2_000, 8_000), (300, 2_000)] {
        shorten(&mut request.messages, protect, tool, text);
        if request_tokens(&request) <= budget.limit() {
            return (request, true);
        }
    }
    leave_out_oldest(&mut request, protect, budget);
    (request, true)
}

/// Shortens the messages after the first `protect` and before the last.
fn shorten(messages: &mut [Message], protect: usize, tool: usize, text: usize) {
    let end = messages.len().saturating_sub(1);
    for message in messages.iter_mut().take(end).skip(protect) {
        match message {
            Message::User { text: t, .. } => elide(t, text),
            Message::ToolResults { results } => {
                for r in results {
                    elide(&mut r.content, tool);
                }
            }
            Message::Assistant(turn) => {
                turn.content.retain(|b| {
                    matches!(
                        b,
                        AssistantBlock::Text { .. } | AssistantBlock::ToolUse { .. }
                    )
                });
                for block in &mut turn.content {
                    if let AssistantBlock::Text { text: t } = block {
                        elide(t, text);
                    }
                }
            }
        }
    }
}

/// Leaves out the oldest messages (after the first `protect`) until the
/// request fits, restarting at a user message, with a note saying so.
fn leave_out_oldest(request: &mut ModelRequest, protect: usize, budget: &Budget) {
    // The note that says so takes about 40 tokens.
    let mut over = (request_tokens(request) + 40).saturating_sub(budget.limit());
    let last = request.messages.len().saturating_sub(1);
    let mut cut = protect;
    while cut < last && over > 0 {
        over = over.saturating_sub(message_tokens(&request.messages[cut]));
        cut += 1;
    }
    while cut < last && !matches!(request.messages[cut], Message::User { .. }) {
        cut += 1;
    }
    let left_out = cut - protect;
    if left_out == 0 {
        return;
    }
    request.messages.drain(protect..cut);
    request.messages.insert(
        protect,
        Message::user(format!(
            "[candor] The {left_out} oldest messages of this part of the conversation are left out here: they did not fit in this request."
        )),
    );
}

/// Cuts `text` to about `max` bytes, its middle replaced by a note.
fn elide(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    // The note is part of what the cut keeps.
    let max = max.saturating_sub(80);
    let head = text.floor_char_boundary(max * 2 / 3);
    let tail = text.ceil_char_boundary(text.len() - max / 3);
    let left_out = text[head..tail].chars().count();
    *text = format!(
        "{}\n[… {left_out} characters left out to fit …]\n{}",
        &text[..head],
        &text[tail..]
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ModelStop, Usage, WireApi};
    use crate::event_log::{CompactTrigger, ResultStatus, TurnStop, numbered};
    use serde_json::json;

    fn user(text: &str) -> Event {
        Event::UserMessage {
            content: vec![ContentBlock::from(text)],
            images: Vec::new(),
            via: None,
        }
    }

    fn said(text: &str, usage: Option<Usage>) -> Event {
        let mut content = vec![AssistantBlock::Text { text: text.into() }];
        if usage.is_some() {
            content.push(AssistantBlock::Raw {
                api: WireApi::Anthropic,
                turn: json!({}),
                usage,
            });
        }
        Event::AssistantMessage {
            content,
            stop: ModelStop::EndTurn,
            interrupted: false,
            call_ids: Vec::new(),
            cost: None,
        }
    }

    fn call(id: &str) -> Event {
        Event::AssistantMessage {
            content: vec![AssistantBlock::ToolUse {
                id: id.into(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
            }],
            stop: ModelStop::ToolUse,
            interrupted: false,
            call_ids: Vec::new(),
            cost: None,
        }
    }

    fn result(id: &str, output: &str) -> Event {
        Event::ToolResult {
            tool_call_id: id.into(),
            status: ResultStatus::Completed,
            output: output.into(),
            exit_code: Some(0),
            signal: None,
            hook_notes: Vec::new(),
            diff: None,
            output_file: None,
        }
    }

    fn ended() -> Event {
        Event::TurnEnded {
            stop_reason: TurnStop::EndTurn,
            error: None,
        }
    }

    fn empty() -> ModelRequest {
        ModelRequest {
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            web_search: false,
        }
    }

    #[test]
    fn the_budget_reserves_room_for_the_answer() {
        let b = Budget::new(200_000, None);
        assert_eq!((b.reserve, b.limit(), b.keep()), (16_384, 183_616, 45_904));
        assert_eq!(Budget::new(4_000, None).reserve, 1_000);
        assert_eq!(Budget::new(4_000, Some(3_000)).reserve, 2_000);
        assert_eq!(Budget::new(200_000, Some(8_000)).limit(), 192_000);
    }

    #[test]
    fn the_estimate_is_the_last_usage_plus_what_came_after() {
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 50,
            ..Usage::default()
        };
        let records = numbered(vec![
            user("go"),
            call("a"),
            said("looked", Some(usage)),
            result("a", &"x".repeat(400)),
        ]);
        assert_eq!(estimate(&records, &empty()), 1_050 + 100 + MESSAGE_TOKENS);
        // Without usage, the whole request.
        let request = ModelRequest {
            system: "s".repeat(40),
            messages: vec![Message::user("u".repeat(400))],
            tools: Vec::new(),
            web_search: false,
        };
        let no_usage = numbered(vec![user("go")]);
        assert_eq!(estimate(&no_usage, &request), 10 + 1 + 100 + MESSAGE_TOKENS);
    }

    #[test]
    fn usage_from_before_a_compaction_is_not_used() {
        let usage = Usage {
            input_tokens: 90_000,
            output_tokens: 50,
            ..Usage::default()
        };
        let records = numbered(vec![
            user("go"),
            said("ok", Some(usage)),
            ended(),
            Event::HistoryCompacted {
                from: 0,
                to: 2,
                summary: "s".into(),
                trigger: CompactTrigger::Auto,
                focus: None,
                tokens_before: 90_050,
                tokens_after: 10,
                usage: None,
                elided: false,
                cost: None,
                kept_prompt: None,
            },
        ]);
        assert!(estimate(&records, &empty()) < 100);
    }

    fn long_session(turns: usize, output: usize) -> Vec<Record> {
        let mut events = Vec::new();
        for t in 0..turns {
            events.push(user(&format!("turn {t}")));
            events.push(call(&format!("c{t}")));
            events.push(result(&format!("c{t}"), &"o".repeat(output)));
            events.push(said("done", None));
            events.push(ended());
        }
        numbered(events)
    }

    #[test]
    fn the_span_ends_before_a_user_turn_keeping_what_fits() {
        // Each turn is about 1 000 tokens; 2 fit in a keep of 2 500.
        let records = long_session(6, 4_000);
        let budget = Budget::new(20_000, Some(10_000));
        assert_eq!(budget.keep(), 2_500);
        let plan = plan(&records, budget.keep()).unwrap();
        // Turn 4 starts at record 20: the span is 0..=19.
        assert_eq!((plan.from, plan.to), (0, 19));
        assert!(matches!(records[20].event, Event::UserMessage { .. }));
        assert!(plan.kept <= budget.keep());
    }

    #[test]
    fn a_prompt_too_long_to_keep_whole_is_cut_after_tool_results() {
        let mut events = vec![user("old"), said("ok", None), ended(), user("now")];
        for i in 0..5 {
            events.push(call(&format!("c{i}")));
            events.push(result(&format!("c{i}"), &"o".repeat(4_000)));
        }
        let records = numbered(events);
        let plan = plan(&records, 2_500).unwrap();
        let next = &records[plan.to as usize + 1];
        assert!(
            matches!(next.event, Event::AssistantMessage { .. }),
            "{next:?}"
        );
        assert!(matches!(
            records[plan.to as usize].event,
            Event::ToolResult { .. }
        ));
        // The history after the summary is well-formed: the kept part opens
        // with a call, its result follows.
        let mut with = records.clone();
        with.push(Record {
            seq: with.len() as u64,
            at: String::new(),
            event: Event::HistoryCompacted {
                from: 0,
                to: plan.to,
                summary: "S".into(),
                trigger: CompactTrigger::Auto,
                focus: None,
                tokens_before: 0,
                tokens_after: 0,
                usage: None,
                elided: false,
                cost: None,
                kept_prompt: plan.kept_prompt,
            },
        });
        // The request of the prompt ("now", record 3) is kept, word for
        // word, the summary after it in its message.
        assert_eq!(plan.kept_prompt, Some(SeqSpan { from: 3, to: 3 }));
        let messages =
            history::derive_messages(&with, RewriteStrategy::Note, &Attachments::default());
        assert!(
            matches!(&messages[0], Message::User { text, .. } if text.starts_with("now\n\n[candor] ") && text.contains("<summary>\nS\n</summary>"))
        );
        assert!(matches!(messages[1], Message::Assistant(_)));
        assert!(matches!(messages[2], Message::ToolResults { .. }));
    }

    #[test]
    fn a_long_summary_is_capped_and_a_tiny_window_is_not_worked_with() {
        let budget = Budget::new(40_000, None);
        let capped = cap_summary(&"s".repeat(100_000), &budget);
        assert!(capped.len() < 7_500 * 4 + 100, "{}", capped.len());
        assert!(capped.contains("characters left out"));
        assert_eq!(cap_summary(" short ", &budget), "short");
        let request = ModelRequest {
            system: "s".repeat(4_000),
            ..empty()
        };
        assert!(workable(&request, &budget));
        assert!(!workable(&request, &Budget::new(10, None)));
    }

    #[test]
    fn nothing_new_to_summarize_is_no_plan() {
        let records = numbered(vec![user("only"), said("ok", None)]);
        assert_eq!(plan(&records, 1_000), None);
    }

    #[test]
    fn a_summary_request_that_does_not_fit_is_shortened() {
        let records = long_session(6, 40_000);
        let budget = Budget::new(20_000, Some(10_000));
        let (request, elided) = summary_request(
            &records,
            &Attachments::default(),
            RewriteStrategy::Note,
            24,
            &empty(),
            Some("the parser"),
            false,
            &budget,
        );
        assert!(elided);
        assert!(request_tokens(&request) <= budget.limit());
        let Some(Message::User { text, .. }) = request.messages.last() else {
            panic!()
        };
        assert!(text.ends_with("keep everything about it: the parser"));
        let small = long_session(2, 400);
        let whole = summary_request(
            &small,
            &Attachments::default(),
            RewriteStrategy::Note,
            4,
            &empty(),
            None,
            false,
            &budget,
        );
        assert!(!whole.1);
        // The first turn whole, then the instruction.
        assert_eq!(whole.0.messages.len(), 5);
    }

    #[test]
    fn a_huge_span_leaves_out_its_oldest_messages() {
        let records = long_session(40, 4_000);
        let budget = Budget::new(4_000, Some(1_000));
        let (request, elided) = summary_request(
            &records,
            &Attachments::default(),
            RewriteStrategy::Note,
            199,
            &empty(),
            None,
            false,
            &budget,
        );
        assert!(elided);
        assert!(
            request_tokens(&request) <= budget.limit(),
            "{}",
            request_tokens(&request)
        );
        assert!(
            matches!(&request.messages[0], Message::User { text, .. } if text.contains("oldest messages"))
        );
        assert!(matches!(request.messages[1], Message::User { .. }));
    }
}
