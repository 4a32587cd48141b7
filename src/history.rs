//! The model's history: a pure projection of the log.
//!
//! [`derive_messages`] folds the records into the provider-neutral
//! [`Message`] list a provider sends. It reads `user/message`,
//! `assistant/message`, `tool/call` (for rewrites), `tool/started` and
//! `tool/result`; deltas and card records are for the client. Assistant
//! turns are replayed as the model emitted them; every tool call is
//! answered right after its turn, in call order, and a call whose result
//! never made it to the log (candor stopped mid-call) is answered as
//! interrupted, so providers always get a well-formed history.
//!
//! Images are named in the records by digest; their bytes come from the
//! session's [`Attachments`], loaded before (this module does no I/O). An
//! image that cannot be had is replaced by a line telling the model so, and
//! only the latest images are carried (older ones are named by a line).
//! Which ones are carried is chosen on the records' sizes before any data is
//! put in, by the one function ([`carried_images`] is the list of them) the
//! session loads by before it derives a request, so the images held are
//! always the ones a request carries.
//!
//! A `history/compacted` record replaces the records of its span by its
//! summary (one user message), and the history goes on with the records
//! after the span ([`derive_through`]); the latest compaction covers every
//! earlier one.
//!
//! A call a hook rewrote agrees with what ran by the provider's
//! [`RewriteStrategy`]: `note` keeps the model's call and starts its result
//! with a note giving the arguments that ran; `in_place` overlays the
//! effective arguments on the call.

use std::collections::HashMap;

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};

use serde_json::Value;

use crate::conversation::{
    AssistantBlock, AssistantTurn, Image, Message, ModelStop, RewriteStrategy, ToolOutcome,
};
use crate::event_log::content::{Attachments, Wanted};
use crate::event_log::{
    Event, HookNote, NoteKind, PromptImage, Record, ResultContent, ResultStatus, SeqSpan,
    SessionEvent, StoredImage,
};

/// What the model is told about a call that has no result in the log.
pub const INTERRUPTED: &str = "interrupted: candor stopped before this finished";

/// What the log says about a rewritten call.
struct Rewrite {
    original: Value,
    effective: Value,
    by: Vec<String>,
    ran: bool,
}

/// The note that starts a rewritten call's result (strategy `note`).
pub fn rewrite_note(original: &Value, effective: &Value, by: &[String], ran: bool) -> String {
    let who = match by {
        [one] => format!("A hook ({one})"),
        many => format!("Hooks ({})", many.join(", ")),
    };
    if ran {
        format!(
            "[candor] {who} rewrote this call before it ran. It ran with {effective} instead of {original}. If you repeat it, use the form that ran.\n\n"
        )
    } else {
        format!(
            "[candor] {who} rewrote this call to {effective} (you asked for {original}); it did not run.\n\n"
        )
    }
}

/// The history a provider is sent, derived from the records, with the
/// images they name from `attachments`.
pub fn derive_messages(
    records: &[Record],
    strategy: RewriteStrategy,
    attachments: &Attachments,
) -> Vec<Message> {
    derive_through(records, strategy, attachments, u64::MAX)
}

/// The history of the records up to and including seq `last`: the latest
/// compaction that stands only for records before `last` applied (its
/// summary, then the records after its span), any later one ignored.
/// `derive_messages` is this with no limit; a compaction's own summary
/// request is shown the history of its span this way.
pub fn derive_through(
    records: &[Record],
    strategy: RewriteStrategy,
    attachments: &Attachments,
    last: u64,
) -> Vec<Message> {
    let mut messages = carried(records, strategy, attachments, last);
    put_in_images(&mut messages, attachments);
    messages
}

/// The stored images the history up to seq `last` carries, newest first,
/// each once, with the size it was counted at: what the session loads
/// (`Attachments::ensure`) before it derives that history.
pub fn carried_images(
    records: &[Record],
    strategy: RewriteStrategy,
    attachments: &Attachments,
    last: u64,
) -> Vec<Wanted> {
    wanted_images(&carried(records, strategy, attachments, last))
}

/// The stored images a history from [`carried`] carries, newest first,
/// each once, with the size it was counted at.
pub fn wanted_images(messages: &[Message]) -> Vec<Wanted> {
    let mut wanted: Vec<Wanted> = Vec::new();
    for image in images_newest_first(messages) {
        if let Some((digest, bytes)) = stored(image)
            && !wanted.iter().any(|w| w.digest == digest)
        {
            wanted.push(Wanted {
                digest: digest.to_owned(),
                bytes,
            });
        }
    }
    wanted
}

/// How an image stored under a digest stands in the history until its
/// data is put in: this mark (no base64 has it), its size, its digest.
const STORED: &str = "\u{0}stored:";

/// A stand-in's digest and size.
fn stored(image: &Image) -> Option<(&str, usize)> {
    let rest = image.data.strip_prefix(STORED)?;
    let (size, digest) = rest.split_once(':')?;
    Some((digest, size.parse().ok()?))
}

/// The images of `messages`, the newest first (the order the latest are
/// kept in).
fn images_newest_first(messages: &[Message]) -> impl Iterator<Item = &Image> {
    messages
        .iter()
        .rev()
        .flat_map(|m| -> Box<dyn Iterator<Item = &Image>> {
            match m {
                Message::User { images, .. } => Box::new(images.iter().rev()),
                Message::ToolResults { results } => {
                    Box::new(results.iter().rev().flat_map(|r| r.images.iter().rev()))
                }
                Message::Assistant(_) => Box::new(std::iter::empty()),
            }
        })
}

/// Each stored image's data in place of its stand-in, from `attachments`;
/// one not held (the session did not load it) is replaced by a line.
pub fn put_in_images(messages: &mut [Message], attachments: &Attachments) {
    let fill = |images: &mut Vec<Image>, text: &mut String| {
        images.retain_mut(|image| {
            let Some((digest, _)) = stored(image) else {
                return true;
            };
            match attachments.get(digest) {
                Ok(data) => {
                    image.data = data.to_owned();
                    true
                }
                Err(why) => {
                    text.push_str(&format!(
                        "\n\n[candor] An image ({}) was here that is no longer available: {why}.",
                        image.media_type
                    ));
                    false
                }
            }
        });
    };
    for message in messages {
        match message {
            Message::User { text, images } => fill(images, text),
            Message::ToolResults { results } => {
                for r in results {
                    fill(&mut r.images, &mut r.content);
                }
            }
            Message::Assistant(_) => {}
        }
    }
}

/// The history up to `last` with the latest images chosen, stored ones
/// still stand-ins ([`put_in_images`] fills them in once they are loaded).
pub fn carried(
    records: &[Record],
    strategy: RewriteStrategy,
    attachments: &Attachments,
    last: u64,
) -> Vec<Message> {
    let compacted = latest_compaction(records, last);
    // Records are in seq order: only those after the span and up to
    // `last` are folded, after the user's request a compaction inside a
    // prompt kept.
    let start = compacted.map_or(0, |c| records.partition_point(|r| r.seq <= c.to));
    let end = records.partition_point(|r| r.seq <= last).max(start);
    let prompt = compacted
        .and_then(|c| c.kept_prompt)
        .map(|p| {
            let from = records.partition_point(|r| r.seq < p.from);
            (from, records.partition_point(|r| r.seq <= p.to).max(from))
        })
        .filter(|&(_, to)| to <= start)
        .map_or(&records[..0], |(from, to)| &records[from..to]);
    let kept = &records[start..end];
    let mut history = History {
        attachments,
        strategy,
        rewrites: rewrites(kept),
        messages: Vec::new(),
        awaiting: None,
        pending: Vec::new(),
        opened_with: Vec::new(),
        images: HashMap::new(),
        typed: None,
    };
    for record in prompt {
        history.apply(&record.event);
    }
    if let Some(c) = compacted {
        let text = summary_message(c.summary, !prompt.is_empty());
        // After the kept request, in its message: some chat templates
        // want user and assistant messages to alternate.
        match history.messages.last_mut() {
            Some(Message::User { text: request, .. }) if !prompt.is_empty() => {
                request.push_str("\n\n");
                request.push_str(&text);
            }
            _ => history.messages.push(Message::user(text)),
        }
    }
    for record in kept {
        history.apply(&record.event);
    }
    let mut messages = history.finish();
    keep_latest_images(&mut messages);
    messages
}

/// The compaction in force for a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction<'a> {
    /// The last record its summary stands for.
    pub to: u64,
    pub summary: &'a str,
    /// The user's request it kept verbatim, when it was inside a prompt.
    pub kept_prompt: Option<SeqSpan>,
}

/// The compaction in force for the history up to `last`: the one whose
/// span ends latest before `last` (a later compaction's span always ends
/// later). A record whose span does not end before the record itself is
/// not one candor wrote, and is ignored; so is a kept prompt outside the
/// span.
pub fn latest_compaction(records: &[Record], last: u64) -> Option<Compaction<'_>> {
    let mut best: Option<Compaction<'_>> = None;
    for record in records {
        if let Event::HistoryCompacted {
            from,
            to,
            summary,
            kept_prompt,
            ..
        } = &record.event
            && *to < record.seq
            && *to < last
            && best.is_none_or(|b| *to > b.to)
        {
            best = Some(Compaction {
                to: *to,
                summary: summary.as_str(),
                kept_prompt: kept_prompt
                    .filter(|p| *from <= p.from && p.from <= p.to && p.to < *to),
            });
        }
    }
    best
}

/// How a compaction's summary opens the model's history (after the
/// user's request, when it kept it: `after_prompt`).
pub fn summary_message(summary: &str, after_prompt: bool) -> String {
    let what = if after_prompt {
        "The work on the request above so far was compacted to keep it within the context window (the request itself is kept as the user wrote it). What follows is the summary written of that work; the work then goes on as it happened."
    } else {
        "The earlier part of this conversation was compacted to keep it within the context window. What follows is the summary written of it; the conversation then goes on as it happened."
    };
    format!(
        "[candor] {what}\n\n<summary>\n{summary}\n</summary>\n\nTool output from before this point is no longer in view: read files again when you need their exact contents."
    )
}

/// What the log says about each call a hook rewrote, by call id.
fn rewrites(records: &[Record]) -> HashMap<&str, Rewrite> {
    let mut rewrites: HashMap<&str, Rewrite> = HashMap::new();
    for record in records {
        match &record.event {
            Event::ToolCall {
                tool_call_id,
                arguments,
                original_arguments: Some(original),
                rewritten_by,
                ..
            } => {
                rewrites.insert(
                    tool_call_id,
                    Rewrite {
                        original: original.clone(),
                        effective: arguments.clone(),
                        by: rewritten_by.clone(),
                        ran: false,
                    },
                );
            }
            Event::ToolStarted { tool_call_id } => {
                if let Some(r) = rewrites.get_mut(tool_call_id.as_str()) {
                    r.ran = true;
                }
            }
            _ => {}
        }
    }
    rewrites
}

/// The history as it is folded from the records.
struct History<'a> {
    attachments: &'a Attachments,
    strategy: RewriteStrategy,
    rewrites: HashMap<&'a str, Rewrite>,
    messages: Vec<Message>,
    awaiting: Option<Awaiting>,
    /// Hook context with no user message to join yet (SessionStart): it
    /// opens the next one.
    pending: Vec<String>,
    /// What opened the latest user message, put back if that prompt is
    /// blocked.
    opened_with: Vec<String>,
    /// The images a tool answered with (`tool/content`), for its result,
    /// and a line for each that cannot be had.
    images: HashMap<String, (Vec<Image>, Vec<String>)>,
    /// Where the latest user message's own text is in its message (start,
    /// length): an expansion replaces that, not the hook context beside it.
    typed: Option<(usize, usize)>,
}

impl History<'_> {
    fn apply(&mut self, event: &Event) {
        match event {
            Event::UserMessage {
                content, images, ..
            } => self.user_message(content, images),
            Event::HookContext {
                event, hook, text, ..
            } => self.hook_context(*event, hook, text),
            // A command candor answered itself is not the model's business.
            Event::PromptBlocked { .. } | Event::CommandRan { .. } => self.unprompt(),
            Event::AssistantMessage {
                content,
                stop,
                interrupted,
                call_ids,
                ..
            } => self.assistant_message(content, *stop, *interrupted, call_ids),
            Event::ToolResult {
                tool_call_id,
                status,
                output,
                hook_notes,
                ..
            } => self.tool_result(tool_call_id, *status, output, hook_notes),
            Event::PromptExpanded { text, .. } => self.expanded(text),
            Event::SteeringDelivered { content, .. } => self.steering(content),
            Event::PromptResource {
                uri, text, image, ..
            } => self.prompt_resource(uri, text, image.as_ref()),
            Event::ToolContent {
                tool_call_id,
                content,
                ..
            } => {
                let mut images = (Vec::new(), Vec::new());
                for c in content {
                    if let ResultContent::Image {
                        mime_type,
                        data,
                        digest,
                        bytes,
                    } = c
                    {
                        match self.image(mime_type, data, digest.as_deref(), *bytes) {
                            Ok(image) => images.0.push(image),
                            Err(why) => images.1.push(format!(
                                "[candor] An image this tool answered with is no longer available: {why}."
                            )),
                        }
                    }
                }
                self.images.insert(tool_call_id.clone(), images);
            }
            // The system prompt's, not the history's (`session::system`).
            Event::SessionStarted { .. }
            | Event::SessionEnvironment(_)
            | Event::CommandsOffered { .. }
            | Event::SessionTitled { .. }
            | Event::Notice { .. }
            | Event::ConfigChanged { .. }
            | Event::AssistantDelta { .. }
            | Event::ToolCall { .. }
            | Event::PermissionRequested { .. }
            | Event::PermissionResolved { .. }
            | Event::NetworkRequested { .. }
            | Event::NetworkDecided { .. }
            | Event::TrustRequested { .. }
            | Event::TrustResolved { .. }
            | Event::TrustGranted { .. }
            | Event::ToolTerminal { .. }
            | Event::ToolStarted { .. }
            | Event::ToolOutput { .. }
            // Between the server and the user: the model has the call's
            // result, never an answer (a secret among them).
            | Event::ElicitationRequested(_)
            | Event::ElicitationResolved(_)
            // Applied before the fold (`derive_through`).
            | Event::HistoryCompacted { .. }
            // Waiting is not the model's business; what reaches it is
            // (`user/message`, `steering/delivered`).
            | Event::PromptQueued { .. }
            | Event::PromptUnqueued { .. }
            | Event::SteeringReceived { .. }
            | Event::SteeringDropped { .. }
            // A subagent's work reaches the model as its `Agent` call's
            // result; what it was given, as its system prompt.
            | Event::SubagentStarted { .. }
            | Event::SubagentActivity { .. }
            | Event::SubagentEnded { .. }
            | Event::SubagentAssigned(_)
            | Event::TurnEnded { .. } => {}
        }
    }

    fn finish(mut self) -> Vec<Message> {
        flush(&mut self.awaiting, &mut self.messages);
        self.messages
    }

    /// An image: its data inline (`data`, a log from before the content
    /// store), or a stand-in for the one stored under `digest` with its
    /// size (as read, else as its record gives it, `claimed`); why not, if
    /// it cannot be had.
    fn image(
        &self,
        mime_type: &str,
        data: &str,
        digest: Option<&str>,
        claimed: Option<u64>,
    ) -> Result<Image, String> {
        let data = match (data, digest) {
            ("", Some(digest)) => {
                if let Some(why) = self.attachments.unavailable_reason(digest) {
                    return Err(why.to_owned());
                }
                let size = self.attachments.size(digest).unwrap_or_else(|| {
                    claimed.map_or(0, |c| usize::try_from(c).unwrap_or(usize::MAX))
                });
                format!("{STORED}{size}:{digest}")
            }
            ("", None) => return Err("the log holds no data for it".into()),
            (data, _) if data.starts_with(STORED) => {
                return Err("the log holds no data for it".into());
            }
            (data, _) => data.to_owned(),
        };
        Ok(Image {
            media_type: mime_type.to_owned(),
            data,
        })
    }

    fn user_message(&mut self, content: &[ContentBlock], stored: &[PromptImage]) {
        flush(&mut self.awaiting, &mut self.messages);
        let mut parts = Vec::new();
        let mut images = Vec::new();
        let mut missing = Vec::new();
        for (place, block) in content.iter().enumerate() {
            let ContentBlock::Image(image) = block else {
                parts.push(block_text(block));
                continue;
            };
            let stored = stored.iter().find(|s| s.block == place);
            let digest = stored.map(|s| s.image.digest.as_str());
            let claimed = stored.map(|s| s.image.bytes);
            match self.image(&image.mime_type, &image.data, digest, claimed) {
                Ok(image) => images.push(image),
                Err(why) => missing.push(format!(
                    "[candor] The user attached an image ({}) here that is no longer available: {why}.",
                    image.mime_type
                )),
            }
        }
        parts.extend(missing);
        let mut text = parts.join("\n");
        let mut start = 0;
        if !self.pending.is_empty() {
            let context = self.pending.join("\n\n");
            start = context.len() + 2;
            text = format!("{context}\n\n{text}");
        }
        self.typed = Some((start, text.len() - start));
        self.opened_with = std::mem::take(&mut self.pending);
        self.messages.push(Message::User { text, images });
    }

    /// A steering message: a user message of its own where the model got
    /// it, after the results of every call before it.
    fn steering(&mut self, content: &[ContentBlock]) {
        flush(&mut self.awaiting, &mut self.messages);
        let text = flatten_prompt(content);
        self.typed = None;
        self.opened_with = Vec::new();
        self.messages
            .push(Message::user(format!("{STEERING}{text}")));
    }

    /// A resource the prompt linked, added to the prompt's message: its
    /// text, or its image.
    fn prompt_resource(&mut self, uri: &str, text: &str, image: Option<&StoredImage>) {
        let image = image.map(|i| self.image(&i.mime_type, "", Some(&i.digest), Some(i.bytes)));
        let Some(Message::User {
            text: typed,
            images,
        }) = self.messages.last_mut()
        else {
            return;
        };
        match image {
            None => typed.push_str(&format!(
                "\n\n<resource uri=\"{uri}\">\n{text}\n</resource>"
            )),
            Some(Ok(image)) => {
                typed.push_str(&format!(
                    "\n\n[candor] {uri} is an image ({}); it is attached.",
                    image.media_type
                ));
                images.push(image);
            }
            Some(Err(why)) => typed.push_str(&format!(
                "\n\n[candor] {uri} is an image that is no longer available: {why}."
            )),
        }
    }

    /// The prompt was a command: the model is given its expansion in place
    /// of what the user typed (hook context around it stays).
    fn expanded(&mut self, expansion: &str) {
        let Some(Message::User { text, .. }) = self.messages.last_mut() else {
            return;
        };
        match self.typed {
            Some((start, len)) if text.get(start..start + len).is_some() => {
                text.replace_range(start..start + len, expansion);
                self.typed = Some((start, expansion.len()));
            }
            _ => *text = expansion.to_owned(),
        }
    }

    fn hook_context(&mut self, event: SessionEvent, hook: &str, text: &str) {
        let note = context_note(event, hook, text);
        if matches!(event, SessionEvent::Stop | SessionEvent::SubagentStop) {
            flush(&mut self.awaiting, &mut self.messages);
            self.messages.push(Message::user(note));
        } else {
            match self.messages.last_mut() {
                Some(Message::User { text, .. }) if self.awaiting.is_none() => {
                    text.push_str("\n\n");
                    text.push_str(&note);
                }
                _ => self.pending.push(note),
            }
        }
    }

    /// A prompt that did not reach the model: its message is taken back,
    /// and what opened it waits for the next one.
    fn unprompt(&mut self) {
        if matches!(self.messages.last(), Some(Message::User { .. })) {
            self.messages.pop();
            let mut restored = std::mem::take(&mut self.opened_with);
            restored.append(&mut self.pending);
            self.pending = restored;
        }
    }

    fn assistant_message(
        &mut self,
        content: &[AssistantBlock],
        stop: ModelStop,
        interrupted: bool,
        call_ids: &[String],
    ) {
        flush(&mut self.awaiting, &mut self.messages);
        let mut content: Vec<AssistantBlock> = if interrupted {
            // Only finished text is kept from a cut-off stream.
            content
                .iter()
                .filter(|b| matches!(b, AssistantBlock::Text { text } if !text.is_empty()))
                .cloned()
                .collect()
        } else {
            content.to_vec()
        };
        if content.is_empty() {
            return;
        }
        // Each call's session-unique id (what the other records use), by
        // its place among the turn's calls.
        let ids = crate::event_log::record::call_ids_of(&content, call_ids);
        if self.strategy == RewriteStrategy::InPlace {
            let mut place = 0;
            for block in &mut content {
                if let AssistantBlock::ToolUse { input, .. } = block {
                    if let Some(r) = ids
                        .get(place)
                        .and_then(|(_, card)| self.rewrites.get(card.as_str()))
                    {
                        *input = r.effective.clone();
                    }
                    place += 1;
                }
            }
        }
        let turn = AssistantTurn {
            content,
            stop: if interrupted {
                ModelStop::EndTurn
            } else {
                stop
            },
        };
        let calls = if interrupted { Vec::new() } else { ids };
        self.messages.push(Message::Assistant(turn));
        if !calls.is_empty() {
            self.awaiting = Some(Awaiting {
                calls,
                results: HashMap::new(),
            });
        }
    }

    fn tool_result(
        &mut self,
        tool_call_id: &str,
        status: ResultStatus,
        output: &str,
        hook_notes: &[HookNote],
    ) {
        let (images, missing) = self.images.remove(tool_call_id).unwrap_or_default();
        let Some(a) = self.awaiting.as_mut() else {
            return;
        };
        let note = match (self.strategy, self.rewrites.get(tool_call_id)) {
            (RewriteStrategy::Note, Some(r)) => {
                rewrite_note(&r.original, &r.effective, &r.by, r.ran)
            }
            _ => String::new(),
        };
        let mut content = format!("{note}{output}");
        for line in missing {
            content.push_str("\n\n");
            content.push_str(&line);
        }
        if !hook_notes.is_empty() {
            content.truncate(content.trim_end_matches('\n').len());
        }
        for n in hook_notes {
            match n.decision {
                NoteKind::Accept | NoteKind::Quiet | NoteKind::Context => content.push_str(
                    &format!("\n\n[candor] The hook {} adds: {}", n.hook, n.text),
                ),
                NoteKind::Block => content.push_str(&format!(
                    "\n\n[candor] The hook {} flagged this result: {}",
                    n.hook, n.text
                )),
                NoteKind::Error => {}
            }
        }
        // The model is answered under its own id for the call.
        let model_id = a
            .calls
            .iter()
            .find(|(_, card)| card == tool_call_id)
            .map_or_else(|| tool_call_id.to_owned(), |(model, _)| model.clone());
        a.results
            .entry(tool_call_id.to_owned())
            .or_insert(ToolOutcome {
                images,
                tool_use_id: model_id,
                content,
                is_error: status != ResultStatus::Completed,
            });
    }
}

/// Leaves out of the history all but the latest images (at most
/// `media::MAX_REQUEST_IMAGES` and `media::MAX_REQUEST_IMAGE_BYTES`), each
/// one left out replaced by a line saying so: every request carries the
/// whole history, and one over a provider's size is refused, as would be
/// every request after it. Images only grow older, so one left out stays
/// left out.
fn keep_latest_images(messages: &mut [Message]) {
    let (mut count, mut bytes) = (0usize, 0usize);
    let mut keep = |image: &Image| {
        // What its base64 decodes to, counted in whole groups of three.
        let size = stored(image).map_or(image.data.len(), |(_, bytes)| {
            crate::media::encoded_len(bytes)
        }) / 4
            * 3;
        let fits = count < crate::media::MAX_REQUEST_IMAGES
            && bytes + size <= crate::media::MAX_REQUEST_IMAGE_BYTES;
        if fits {
            count += 1;
            bytes += size;
        }
        fits
    };
    let note = |image: &Image| {
        format!(
            "[candor] An image ({}) was here; it is left out of this request, which carries only the latest {} images ({} in all) of the conversation.",
            image.media_type,
            crate::media::MAX_REQUEST_IMAGES,
            crate::media::size(crate::media::MAX_REQUEST_IMAGE_BYTES as u64)
        )
    };
    for message in messages.iter_mut().rev() {
        match message {
            Message::User { text, images } => {
                let mut left_out = Vec::new();
                drop_older(images, &mut keep, |i| left_out.push(note(i)));
                for line in left_out {
                    text.push_str("\n\n");
                    text.push_str(&line);
                }
            }
            Message::ToolResults { results } => {
                for result in results.iter_mut().rev() {
                    let mut left_out = Vec::new();
                    drop_older(&mut result.images, &mut keep, |i| left_out.push(note(i)));
                    for line in left_out {
                        result.content.push_str("\n\n");
                        result.content.push_str(&line);
                    }
                }
            }
            Message::Assistant(_) => {}
        }
    }
}

/// Keeps the images `keep` takes, the last first; the others go to `gone`.
fn drop_older(
    images: &mut Vec<Image>,
    keep: &mut impl FnMut(&Image) -> bool,
    mut gone: impl FnMut(&Image),
) {
    let mut kept: Vec<Image> = Vec::with_capacity(images.len());
    for image in images.drain(..).rev() {
        if keep(&image) {
            kept.push(image);
        } else {
            gone(&image);
        }
    }
    kept.reverse();
    *images = kept;
}

/// How hook context reads in the model's history.
fn context_note(event: SessionEvent, hook: &str, text: &str) -> String {
    if matches!(event, SessionEvent::Stop | SessionEvent::SubagentStop) {
        format!(
            "[candor] The {} hook {hook} did not let you end the turn yet: {text}",
            event.name()
        )
    } else {
        format!(
            "[candor] Context from the {} hook {hook}:\n{text}",
            event.name()
        )
    }
}

/// Tool calls of the latest assistant turn still collecting results: each
/// call's id in the model's turn and its session-unique id; results by the
/// latter.
struct Awaiting {
    calls: Vec<(String, String)>,
    results: HashMap<String, ToolOutcome>,
}

fn flush(awaiting: &mut Option<Awaiting>, messages: &mut Vec<Message>) {
    let Some(mut a) = awaiting.take() else { return };
    let results = a
        .calls
        .iter()
        .map(|(model, card)| {
            a.results.remove(card).unwrap_or_else(|| ToolOutcome {
                images: Vec::new(),
                tool_use_id: model.clone(),
                content: INTERRUPTED.to_owned(),
                is_error: true,
            })
        })
        .collect();
    messages.push(Message::ToolResults { results });
}

/// What opens a steering message in the model's history.
pub const STEERING: &str = "[candor] The user sent this while you were working:\n\n";

/// A prompt's content blocks as text (what hooks and the audit see; an
/// image is `[image]`).
pub fn flatten_prompt(content: &[ContentBlock]) -> String {
    let parts: Vec<String> = content.iter().map(block_text).collect();
    parts.join("\n")
}

/// One block of a prompt as text.
fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::ResourceLink(link) => format!("[{}]({})", link.name, link.uri),
        ContentBlock::Resource(res) => match &res.resource {
            EmbeddedResourceResource::TextResourceContents(t) => {
                format!("<resource uri=\"{}\">\n{}\n</resource>", t.uri, t.text)
            }
            EmbeddedResourceResource::BlobResourceContents(b) => {
                format!("[binary resource {}]", b.uri)
            }
            _ => "[resource]".to_owned(),
        },
        ContentBlock::Image(_) => "[image]".to_owned(),
        ContentBlock::Audio(_) => "[audio]".to_owned(),
        _ => "[unsupported content]".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::TurnStop;
    use serde_json::json;

    use crate::event_log::numbered as recs;

    fn tool_use(id: &str) -> AssistantBlock {
        AssistantBlock::ToolUse {
            id: id.into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
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

    #[test]
    fn results_follow_their_turn_in_call_order() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("go")],
                images: Vec::new(),
                via: None,
            },
            Event::AssistantDelta {
                channel: crate::event_log::DeltaChannel::Text,
                text: "ok".into(),
            },
            Event::AssistantMessage {
                content: vec![tool_use("a"), tool_use("b")],
                stop: ModelStop::ToolUse,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
            Event::ToolStarted {
                tool_call_id: "b".into(),
            },
            result("b", "B"),
            result("a", "A"),
            Event::AssistantMessage {
                content: vec![AssistantBlock::Text {
                    text: "done".into(),
                }],
                stop: ModelStop::EndTurn,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
            Event::TurnEnded {
                stop_reason: TurnStop::EndTurn,
                error: None,
            },
        ]);
        let messages = derive_messages(&records, RewriteStrategy::Note, &Attachments::default());
        assert_eq!(messages.len(), 4);
        let Message::ToolResults { results } = &messages[2] else {
            panic!("{messages:?}")
        };
        let order: Vec<_> = results
            .iter()
            .map(|r| (r.tool_use_id.as_str(), r.content.as_str()))
            .collect();
        assert_eq!(order, [("a", "A"), ("b", "B")]);
    }

    #[test]
    fn an_expansion_replaces_what_was_typed_and_keeps_the_hook_context_around_it() {
        let records = recs(vec![
            Event::HookContext {
                event: SessionEvent::SessionStart,
                hook: "start".into(),
                text: "branch main".into(),
                quiet: false,
            },
            Event::UserMessage {
                content: vec![ContentBlock::from("/review a.rs")],
                images: Vec::new(),
                via: None,
            },
            Event::HookContext {
                event: SessionEvent::UserPromptSubmit,
                hook: "submit".into(),
                text: "be brief".into(),
                quiet: false,
            },
            Event::PromptExpanded {
                command: "review".into(),
                server: None,
                source: Some(crate::event_log::CommandSource::Project),
                path: Some("/p/.claude/commands/review.md".into()),
                text: "Review a.rs carefully.".into(),
                ignored: Vec::new(),
            },
        ]);
        let messages = derive_messages(&records, RewriteStrategy::Note, &Attachments::default());
        let [Message::User { text, .. }] = messages.as_slice() else {
            panic!("{messages:?}")
        };
        assert!(!text.contains("/review"), "{text}");
        let (start, typed, submit) = (
            text.find("branch main").unwrap(),
            text.find("Review a.rs carefully.").unwrap(),
            text.find("be brief").unwrap(),
        );
        assert!(start < typed && typed < submit, "{text}");
    }

    #[test]
    fn a_call_without_a_result_is_answered_as_interrupted() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("go")],
                images: Vec::new(),
                via: None,
            },
            Event::AssistantMessage {
                content: vec![tool_use("a")],
                stop: ModelStop::ToolUse,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
        ]);
        let messages = derive_messages(&records, RewriteStrategy::Note, &Attachments::default());
        let Message::ToolResults { results } = &messages[2] else {
            panic!()
        };
        assert_eq!(results[0].content, INTERRUPTED);
        assert!(results[0].is_error);
    }

    #[test]
    fn an_interrupted_turn_keeps_only_its_text() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("go")],
                images: Vec::new(),
                via: None,
            },
            Event::AssistantMessage {
                content: vec![
                    AssistantBlock::Thinking {
                        thinking: "hmm".into(),
                        signature: None,
                    },
                    AssistantBlock::Text {
                        text: "partial".into(),
                    },
                ],
                stop: ModelStop::EndTurn,
                interrupted: true,
                call_ids: Vec::new(),
                cost: None,
            },
        ]);
        let messages = derive_messages(&records, RewriteStrategy::Note, &Attachments::default());
        assert_eq!(
            messages[1],
            Message::Assistant(AssistantTurn {
                content: vec![AssistantBlock::Text {
                    text: "partial".into()
                }],
                stop: ModelStop::EndTurn
            })
        );
    }

    fn compacted(to: u64, summary: &str) -> Event {
        Event::HistoryCompacted {
            from: 0,
            to,
            summary: summary.into(),
            trigger: crate::event_log::CompactTrigger::Auto,
            focus: None,
            tokens_before: 0,
            tokens_after: 0,
            usage: None,
            elided: false,
            cost: None,
            kept_prompt: None,
        }
    }

    fn said(text: &str) -> Event {
        Event::AssistantMessage {
            content: vec![AssistantBlock::Text { text: text.into() }],
            stop: ModelStop::EndTurn,
            interrupted: false,
            call_ids: Vec::new(),
            cost: None,
        }
    }

    #[test]
    fn a_compaction_replaces_its_span_and_a_later_one_the_earlier() {
        let mut events = vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("one")],
                images: Vec::new(),
                via: None,
            },
            said("1"),
            Event::UserMessage {
                content: vec![ContentBlock::from("two")],
                images: Vec::new(),
                via: None,
            },
            said("2"),
            compacted(1, "S1"),
            Event::UserMessage {
                content: vec![ContentBlock::from("three")],
                images: Vec::new(),
                via: None,
            },
            said("3"),
        ];
        let texts = |messages: &[Message]| -> Vec<String> {
            messages
                .iter()
                .map(|m| match m {
                    Message::User { text, .. } => text.clone(),
                    Message::Assistant(t) => t.text(),
                    Message::ToolResults { .. } => "results".into(),
                })
                .collect()
        };
        let first = texts(&derive_messages(
            &recs(events.clone()),
            RewriteStrategy::Note,
            &Attachments::default(),
        ));
        assert!(first[0].contains("<summary>\nS1\n</summary>"), "{first:?}");
        assert_eq!(&first[1..], ["two", "2", "three", "3"]);
        // The span of a second one is shown with the first applied.
        let span = texts(&derive_through(
            &recs(events.clone()),
            RewriteStrategy::Note,
            &Attachments::default(),
            3,
        ));
        assert!(span[0].contains("S1"));
        assert_eq!(&span[1..], ["two", "2"]);
        // Up to the end of its span, a compaction does not apply.
        let before = texts(&derive_through(
            &recs(events.clone()),
            RewriteStrategy::Note,
            &Attachments::default(),
            1,
        ));
        assert_eq!(before, ["one", "1"]);
        events.push(compacted(6, "S2"));
        let records = recs(events);
        let span = texts(&derive_through(
            &records,
            RewriteStrategy::Note,
            &Attachments::default(),
            6,
        ));
        assert!(span[0].contains("S1"));
        let second = texts(&derive_messages(
            &records,
            RewriteStrategy::Note,
            &Attachments::default(),
        ));
        assert_eq!(second.len(), 1);
        assert!(second[0].contains("S2") && !second[0].contains("S1"));
    }

    #[test]
    fn a_compaction_that_points_past_itself_is_ignored() {
        let records = recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("one")],
                images: Vec::new(),
                via: None,
            },
            compacted(5, "bogus"),
        ]);
        let messages = derive_messages(&records, RewriteStrategy::Note, &Attachments::default());
        assert_eq!(messages, vec![Message::user("one")]);
    }

    fn rewritten_call() -> Vec<Record> {
        recs(vec![
            Event::UserMessage {
                content: vec![ContentBlock::from("status?")],
                images: Vec::new(),
                via: None,
            },
            Event::AssistantMessage {
                content: vec![AssistantBlock::ToolUse {
                    id: "a".into(),
                    name: "Bash".into(),
                    input: json!({"command": "git status"}),
                }],
                stop: ModelStop::ToolUse,
                interrupted: false,
                call_ids: Vec::new(),
                cost: None,
            },
            Event::ToolCall {
                tool_call_id: "a".into(),
                tool: "Bash".into(),
                arguments: json!({"command": "rtk git status"}),
                original_arguments: Some(json!({"command": "git status"})),
                digest: "sha256:x".into(),
                decision: crate::event_log::Decision::allow(),
                hooks: Vec::new(),
                rewritten_by: vec!["rtk".into()],
                preview: None,
                mcp: None,
                sandbox: None,
            },
            Event::ToolStarted {
                tool_call_id: "a".into(),
            },
            result("a", "clean"),
        ])
    }

    #[test]
    fn a_rewrite_is_told_by_a_note_keeping_the_models_call() {
        let messages = derive_messages(
            &rewritten_call(),
            RewriteStrategy::Note,
            &Attachments::default(),
        );
        let Message::Assistant(turn) = &messages[1] else {
            panic!()
        };
        assert_eq!(
            turn.tool_uses().next().unwrap().2,
            &json!({"command": "git status"})
        );
        let Message::ToolResults { results } = &messages[2] else {
            panic!()
        };
        assert_eq!(
            results[0].content,
            "[candor] A hook (rtk) rewrote this call before it ran. It ran with {\"command\":\"rtk git status\"} instead of {\"command\":\"git status\"}. If you repeat it, use the form that ran.\n\nclean"
        );
    }

    #[test]
    fn only_the_latest_images_are_sent_and_the_older_are_named() {
        let image = |n: usize| Image {
            media_type: "image/png".into(),
            data: format!("{n:04}"),
        };
        let mut messages: Vec<Message> = (0..crate::media::MAX_REQUEST_IMAGES + 2)
            .map(|n| Message::User {
                text: format!("prompt {n}"),
                images: vec![image(n)],
            })
            .collect();
        let before = messages.clone();
        keep_latest_images(&mut messages);
        let Message::User { text, images } = &messages[0] else {
            panic!()
        };
        assert!(images.is_empty());
        assert!(
            text.starts_with("prompt 0\n\n[candor] An image (image/png) was here"),
            "{text}"
        );
        assert!(matches!(&messages[1], Message::User { images, .. } if images.is_empty()));
        assert_eq!(messages[2..], before[2..], "the latest are untouched");
        // Bytes count too: one huge image leaves out everything before it.
        let mut messages = vec![
            Message::User {
                text: "old".into(),
                images: vec![image(1)],
            },
            Message::ToolResults {
                results: vec![ToolOutcome {
                    tool_use_id: "r".into(),
                    content: "read".into(),
                    is_error: false,
                    images: vec![Image {
                        media_type: "image/png".into(),
                        data: "A".repeat(crate::media::MAX_REQUEST_IMAGE_BYTES / 3 * 4),
                    }],
                }],
            },
        ];
        keep_latest_images(&mut messages);
        assert!(matches!(&messages[0], Message::User { images, .. } if images.is_empty()));
        let Message::ToolResults { results } = &messages[1] else {
            panic!()
        };
        assert_eq!(results[0].images.len(), 1);
    }

    #[test]
    fn in_place_overlays_the_effective_arguments() {
        let messages = derive_messages(
            &rewritten_call(),
            RewriteStrategy::InPlace,
            &Attachments::default(),
        );
        let Message::Assistant(turn) = &messages[1] else {
            panic!()
        };
        assert_eq!(
            turn.tool_uses().next().unwrap().2,
            &json!({"command": "rtk git status"})
        );
        let Message::ToolResults { results } = &messages[2] else {
            panic!()
        };
        assert_eq!(results[0].content, "clean");
    }
}
