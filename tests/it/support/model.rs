//! A small client model that applies every `session/update` the way Zed's
//! `acp_thread` does, and fails the test on anything a real client would
//! choke on or show wrongly:
//!
//! * a `tool_call_update` for an id that never had a `tool_call`;
//! * a second `tool_call` for the same id (candor never re-announces);
//! * a status that moves backwards, or any update after a card is terminal;
//! * a card that is not terminal when its prompt is answered;
//! * a `session/update` for a session with no prompt running.

use std::collections::HashMap;

use serde_json::Value;

/// A tool card as the client shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub id: String,
    pub title: String,
    pub kind: String,
    pub status: String,
    /// Every status the card went through, in order.
    pub statuses: Vec<String>,
    pub raw_input: Value,
    pub raw_output: Value,
    pub content: Vec<Value>,
    pub locations: Vec<Value>,
    /// How many updates the card received after its `tool_call`.
    pub updates: usize,
}

impl Card {
    /// The card's content as plain text (text blocks joined by newlines).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| c["content"]["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn terminal(&self) -> bool {
        self.status == "completed" || self.status == "failed"
    }
}

/// What one session looks like in the client.
#[derive(Debug, Default)]
pub struct Thread {
    pub cards: Vec<Card>,
    /// The agent's messages but candor's notices.
    pub agent_text: String,
    pub thoughts: String,
    pub user_text: String,
    /// What candor told the user: `notice` updates (title, then
    /// description), and for a client without `session.notices` the
    /// agent messages marked `> candor…`, each on its own.
    pub notices: String,
    /// Updates received, in order.
    pub updates: Vec<Value>,
    /// Prompts sent and not yet answered.
    open_prompts: usize,
}

impl Thread {
    pub fn card(&self, id: &str) -> &Card {
        self.cards
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no card {id}; cards: {:?}", self.cards))
    }
}

fn rank(status: &str) -> u8 {
    match status {
        "pending" => 0,
        "in_progress" => 1,
        "completed" | "failed" => 2,
        other => panic!("unknown tool call status {other:?}"),
    }
}

#[derive(Debug, Default)]
pub struct Model {
    threads: HashMap<String, Thread>,
    /// Subagent sessions (announced by `subagent_update`) and the session
    /// that announced each: a child's updates belong to its parent's turn.
    parents: HashMap<String, String>,
}

impl Model {
    pub fn thread(&self, session: &str) -> &Thread {
        self.threads
            .get(session)
            .unwrap_or_else(|| panic!("no updates were ever received for session {session}"))
    }

    pub fn thread_or_empty(&mut self, session: &str) -> &Thread {
        self.threads.entry(session.to_owned()).or_default()
    }

    pub fn prompt_sent(&mut self, session: &str) {
        self.threads
            .entry(session.to_owned())
            .or_default()
            .open_prompts += 1;
    }

    /// The session the user opened that `session` is (or is under).
    fn root<'a>(&'a self, mut session: &'a str) -> &'a str {
        for _ in 0..8 {
            match self.parents.get(session) {
                Some(parent) => session = parent,
                None => break,
            }
        }
        session
    }

    /// The subagent sessions announced under `session`.
    pub fn children(&self, session: &str) -> Vec<String> {
        let mut kids: Vec<String> = self
            .parents
            .iter()
            .filter(|(_, p)| *p == session)
            .map(|(c, _)| c.clone())
            .collect();
        kids.sort();
        kids
    }

    pub fn prompt_answered(&mut self, session: &str) {
        // A subagent's cards are all terminal when its parent's prompt is
        // answered.
        let kids: Vec<String> = self
            .parents
            .iter()
            .filter(|(c, _)| self.root(c) == session)
            .map(|(c, _)| c.clone())
            .collect();
        for kid in kids {
            if let Some(thread) = self.threads.get(&kid) {
                for card in &thread.cards {
                    assert!(
                        card.terminal(),
                        "subagent {kid}'s card {} ({}) is still {} when the prompt was answered",
                        card.id,
                        card.title,
                        card.status
                    );
                }
            }
        }
        let thread = self.threads.entry(session.to_owned()).or_default();
        thread.open_prompts = thread.open_prompts.saturating_sub(1);
        if thread.open_prompts > 0 {
            // Another prompt on this session is still running (this one was
            // refused); its cards may still move.
            return;
        }
        for card in &thread.cards {
            assert!(
                card.terminal(),
                "card {} ({}) is still {} when the prompt was answered",
                card.id,
                card.title,
                card.status
            );
        }
    }

    pub fn apply(&mut self, session: &str, update: &Value) {
        if update["sessionUpdate"] == "subagent_update"
            && let Some(child) = update["sessionId"].as_str()
        {
            self.parents.insert(child.to_owned(), session.to_owned());
        }
        let root = self.root(session).to_owned();
        let running = self.threads.get(&root).map_or(0, |t| t.open_prompts);
        let thread = self.threads.entry(session.to_owned()).or_default();
        // Outside a prompt turn an agent may still say what the session
        // offers and what it noticed (ACP lets updates come any time), but
        // no part of a turn: no message, thought or card (a notice for a
        // client without `session.notices` waits for the next turn).
        let kind = update["sessionUpdate"].as_str().unwrap_or("");
        let any_time = matches!(
            kind,
            "available_commands_update"
                | "current_mode_update"
                | "config_option_update"
                | "session_info_update"
                | "notice"
        );
        assert!(
            running > 0 || any_time,
            "session/update for {session} while no prompt is running: {update}"
        );
        let said = update["content"]["text"].as_str().unwrap_or("");
        assert!(
            !(kind == "agent_thought_chunk"
                && (said.starts_with("[candor]") || said.trim_start().starts_with("> candor"))),
            "a notice sent as the model's thought: {update}"
        );
        if kind == "agent_message_chunk" && said.trim_start().starts_with("> candor") {
            thread.notices.push_str(said.trim_start());
        }
        if kind == "notice" {
            thread
                .notices
                .push_str(update["title"].as_str().unwrap_or(""));
            if let Some(d) = update["description"].as_str() {
                thread.notices.push('\n');
                thread.notices.push_str(d);
            }
            thread.notices.push_str("\n\n");
        }
        thread.updates.push(update.clone());
        let text = || update["content"]["text"].as_str().unwrap_or("").to_owned();
        match update["sessionUpdate"].as_str().unwrap_or("") {
            // candor's notices are not the model's text.
            "agent_message_chunk" if !said.trim_start().starts_with("> candor") => {
                thread.agent_text.push_str(&text())
            }
            "agent_thought_chunk" => thread.thoughts.push_str(&text()),
            "user_message_chunk" => thread.user_text.push_str(&text()),
            "tool_call" => {
                let id = update["toolCallId"].as_str().unwrap_or_default().to_owned();
                assert!(
                    thread.cards.iter().all(|c| c.id != id),
                    "a second tool_call for {id}: {update}"
                );
                let status = update["status"].as_str().unwrap_or("pending").to_owned();
                rank(&status);
                thread.cards.push(Card {
                    id,
                    title: update["title"].as_str().unwrap_or_default().to_owned(),
                    kind: update["kind"].as_str().unwrap_or("other").to_owned(),
                    statuses: vec![status.clone()],
                    status,
                    raw_input: update.get("rawInput").cloned().unwrap_or(Value::Null),
                    raw_output: update.get("rawOutput").cloned().unwrap_or(Value::Null),
                    content: update["content"].as_array().cloned().unwrap_or_default(),
                    locations: update["locations"].as_array().cloned().unwrap_or_default(),
                    updates: 0,
                });
            }
            "tool_call_update" => {
                let id = update["toolCallId"].as_str().unwrap_or_default();
                let card = thread
                    .cards
                    .iter_mut()
                    .find(|c| c.id == id)
                    .unwrap_or_else(|| panic!("tool_call_update for unknown id {id} (Zed would show 'Tool call not found'): {update}"));
                assert!(
                    !card.terminal(),
                    "update after card {id} was {}: {update}",
                    card.status
                );
                card.updates += 1;
                if let Some(status) = update["status"].as_str() {
                    assert!(
                        rank(status) >= rank(&card.status),
                        "card {id} went back from {} to {status}",
                        card.status
                    );
                    card.status = status.to_owned();
                    card.statuses.push(status.to_owned());
                }
                if let Some(title) = update["title"].as_str() {
                    card.title = title.to_owned();
                }
                if let Some(kind) = update["kind"].as_str() {
                    card.kind = kind.to_owned();
                }
                if let Some(content) = update["content"].as_array() {
                    card.content = content.clone();
                }
                if let Some(locations) = update["locations"].as_array() {
                    card.locations = locations.clone();
                }
                if let Some(raw) = update.get("rawInput") {
                    card.raw_input = raw.clone();
                }
                if let Some(raw) = update.get("rawOutput") {
                    card.raw_output = raw.clone();
                }
            }
            _ => {}
        }
    }
}
