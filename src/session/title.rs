//! A session's title, made once after its first turn (`session/titled`):
//! a short request to the session's model that offers no tools (so none
//! can run) and streams nothing to the client, bounded in time
//! ([`WAIT`]) and tokens ([`MAX_TOKENS`]); or the first prompt's first
//! line, when the model cannot be asked (the scripted one, none), the user
//! chose `session_titles = "prompt"`, or the request failed. Either way
//! the turn it follows has already been answered: a title never fails or
//! delays one.
//!
//! It is made on a task of its own (the actor's `titling`) and recorded by
//! the actor between turns: when the session is idle, or before the next
//! queued turn starts once it is made (`Turns::run_line`). A queued turn
//! does not wait for it, and nothing is recorded inside a turn, so a turn
//! already running when the title is made delays its record (and its
//! `session_info_update`) until that turn ends.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::conversation::{Message, ModelRequest};
use crate::event_log::{Event, Record, TitleSource};
use crate::providers::Provider;

/// How long the title request may take.
pub(crate) const WAIT: Duration = Duration::from_secs(10);
/// The most tokens its answer may have.
pub(crate) const MAX_TOKENS: u32 = 64;
/// The most characters of a title.
const MAX_CHARS: usize = 80;
/// The most characters of the prompt the title request is shown.
const PROMPT_CHARS: usize = 2_000;

const INSTRUCTION: &str = "You write the title of a coding session from its first request. Answer with the title only: at most eight words, no quotes, no trailing period, in the language of the request.";

/// The prompt a title is made from: the first `user/message` that is not
/// one of candor's commands, once a turn has ended after it and no title
/// was recorded yet.
pub(crate) fn wanted(records: &[Record]) -> Option<String> {
    if records
        .iter()
        .any(|r| matches!(r.event, Event::SessionTitled { .. }))
    {
        return None;
    }
    let mut prompt = None;
    for record in records {
        match &record.event {
            Event::UserMessage { content, .. } if prompt.is_none() => {
                let text = crate::history::flatten_prompt(content);
                if super::builtin_commands::parse(&text).is_none() && !text.trim().is_empty() {
                    prompt = Some(text);
                }
            }
            Event::TurnEnded { .. } if prompt.is_some() => return prompt,
            _ => {}
        }
    }
    None
}

/// The prompt's first line, shortened: the title when the model is not
/// asked.
pub(crate) fn first_line(prompt: &str) -> String {
    let first = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    crate::text::shorten(first, MAX_CHARS)
}

/// Makes the title of `prompt`: asks `provider` (a provider of its own,
/// built for this request) when given, else, or when that fails, the
/// first line.
pub(crate) async fn make(
    provider: Option<Provider>,
    prompt: String,
    stop: CancellationToken,
) -> (String, TitleSource) {
    let fallback = (first_line(&prompt), TitleSource::Prompt);
    let Some(mut provider) = provider else {
        return fallback;
    };
    provider.for_aside(MAX_TOKENS);
    let request = ModelRequest {
        system: INSTRUCTION.to_owned(),
        messages: vec![Message::User {
            text: crate::text::shorten(&prompt, PROMPT_CHARS),
            images: Vec::new(),
        }],
        tools: Vec::new(),
        web_search: false,
    };
    // Nothing of it is shown while it streams.
    let (deltas, _ignored) = mpsc::unbounded_channel();
    let answer = tokio::select! {
        answer = tokio::time::timeout(WAIT, provider.stream(&request, deltas)) => answer,
        _ = stop.cancelled() => return fallback,
    };
    match answer {
        Ok(Ok(turn)) => match clean(&turn.text()) {
            Some(title) => (title, TitleSource::Model),
            None => fallback,
        },
        Ok(Err(e)) => {
            tracing::info!(error = %e, "the title request failed; the first prompt line is the title");
            fallback
        }
        Err(_) => {
            tracing::info!("the title request took too long; the first prompt line is the title");
            fallback
        }
    }
}

/// A model's answer made a title: its first line, without quotes or a
/// trailing period, shortened; `None` when nothing is left.
fn clean(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '*' | '#') || c.is_whitespace())
        .trim_end_matches('.');
    let line = line.strip_prefix("Title:").unwrap_or(line).trim();
    (!line.is_empty()).then(|| crate::text::shorten(line, MAX_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_becomes_a_short_clean_title() {
        assert_eq!(
            clean("\"Fix the parser.\"\n").as_deref(),
            Some("Fix the parser")
        );
        assert_eq!(clean("Title: Lexer bug").as_deref(), Some("Lexer bug"));
        assert_eq!(clean("  \n\"\"\n"), None);
        assert!(clean(&"word ".repeat(100)).unwrap().chars().count() <= MAX_CHARS);
        assert_eq!(first_line("\n  fix it\nplease"), "fix it");
    }
}
