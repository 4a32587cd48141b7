//! One prompt turn: the agent loop.
//!
//! The sequence, each step a record appended through the committer:
//!
//! 1. `user/message` (its images kept in the content store first), then
//!    what the prompt links, attached (`prompt/resource`).
//! 2. Ask the model: the request's history is derived from the log; text
//!    and thinking stream in as `assistant/delta`s; the whole turn is then
//!    appended as `assistant/message`, exactly as the model emitted it.
//!    Before asking, if the request's estimated size passes the budget
//!    (the window less a reserve for the answer, `compaction`), the
//!    history is compacted first ([`super::compact`]: `history/compacted`);
//!    if the provider answers that the request is too long, it is compacted
//!    and the request sent once more.
//! 3. For each tool call of that turn, in order, its whole life
//!    ([`super::call`]): interception (hooks, rules, mode) → `tool/call`
//!    (flushed to disk; the card appears with the settled arguments) →
//!    a permission request if needed → `tool/started` → `tool/output`*
//!    while it runs → `tool/result`.
//! 4. If the model called tools, go to 2; else `turn/ended` (but for a
//!    steering message waiting: then 2 again).
//!
//! Before each model request (step 2), the steering messages that arrived
//! for this turn are given to the model (`steering/delivered`, after every
//! call's result); what arrives in the session's line while the turn runs
//! is recorded as it arrives (`super::queue`).
//!
//! A cancel stops the model stream or the running tool; calls that never
//! ran get a `cancelled` result (so the model's history stays well-formed)
//! and the turn ends `cancelled`. A log write failure ends the turn at once
//! with an error: no tool runs without its `tool/call` record.

use agent_client_protocol_schema::v1::ContentBlock;

use super::call::{Next, finish, run_call};
use super::commit::Committer;
use super::compact::{self, Step};
use super::events;
use super::kit::{SessionKit, TurnControl, TurnError};
use crate::conversation::{AssistantBlock, AssistantTurn, ModelRequest, ModelStop};
use crate::event_log::{DeltaChannel, Event, LogError, NoticeLevel, ResultStatus, TurnStop};
use crate::providers::{Provider, StreamDelta};
use crate::tools;

/// How many paused responses in a row the turn sends back before it ends.
const MAX_PAUSES: usize = 10;

/// What opens a turn: the prompt's blocks, and how it came to run.
#[derive(Debug)]
pub(crate) struct Prompt {
    pub(crate) content: Vec<ContentBlock>,
    pub(crate) via: Option<crate::event_log::Via>,
}

/// Runs a whole turn and appends its `turn/ended` record.
pub(crate) async fn run(
    c: &mut Committer,
    provider: &mut Provider,
    kit: &mut SessionKit,
    prompt: Prompt,
    control: &TurnControl,
) -> Result<TurnStop, TurnError> {
    let mut outcome = steps(c, provider, kit, prompt, control).await;
    // Steering for a cancelled turn never reaches the model; for one that
    // ended otherwise it opens a turn of its own (`queue::Queue::next`).
    if matches!(outcome, Ok(TurnStop::Cancelled))
        && let Err(e) = control.queue.drop_steering(c)
    {
        outcome = Err(e.into());
    }
    let ended = match &outcome {
        Ok(stop) => Event::TurnEnded {
            stop_reason: *stop,
            error: None,
        },
        Err(e) => Event::TurnEnded {
            stop_reason: TurnStop::Error,
            error: Some(e.to_string()),
        },
    };
    if let Err(e) = c.commit(ended) {
        c.abandon_open_cards(&format!("candor stopped this turn: {e}"));
        return Err(e.into());
    }
    if let Err(TurnError::Log(e)) = &outcome {
        c.abandon_open_cards(&format!("candor stopped this turn: {e}"));
    }
    outcome
}

async fn steps(
    c: &mut Committer,
    provider: &mut Provider,
    kit: &mut SessionKit,
    prompt: Prompt,
    control: &TurnControl,
) -> Result<TurnStop, TurnError> {
    let Prompt { content, via } = prompt;
    let prompt_text = crate::history::flatten_prompt(&content);
    let links = super::prompt_mcp::resource_links(&content);
    super::attach::commit_prompt(c, kit, &control.cwd, content, via)?;
    if let Some(command) = super::builtin_commands::parse(&prompt_text) {
        return command_turn(c, provider, kit, control, command, &prompt_text).await;
    }
    // Once, in the first turn that is not a command: what of the
    // project's settings waits for the user's trust, and how to give it.
    super::trust::tell(c, kit)?;
    match events::prompt_submitted(c, kit, &control.cwd, &prompt_text, &control.cancel).await? {
        None => return Ok(TurnStop::Cancelled),
        Some(true) => return Ok(TurnStop::Refusal),
        Some(false) => {}
    }
    if let Some(stop) = prepare(c, kit, &prompt_text, &links, control).await? {
        return Ok(stop);
    }
    super::sandbox::spare_soon(kit, c.records());
    let limit = provider.max_turn_requests().unwrap_or(usize::MAX); // none set: no limit
    agent_loop(c, provider, kit, control, limit).await
}

/// A subagent's turn (`super::subagent`): its task as its first message,
/// then the same loop as a prompt's (its Stop hooks are SubagentStop),
/// at most `limit` model requests; `turn/ended` last.
pub(crate) async fn child(
    c: &mut Committer,
    provider: &mut Provider,
    kit: &mut SessionKit,
    task: &str,
    control: &TurnControl,
    limit: usize,
) -> Result<TurnStop, TurnError> {
    let started = c.commit(Event::UserMessage {
        content: vec![ContentBlock::from(task.to_owned())],
        images: Vec::new(),
        via: None,
    });
    let outcome = match started {
        Ok(()) => agent_loop(c, provider, kit, control, limit).await,
        Err(e) => Err(e.into()),
    };
    let ended = match &outcome {
        Ok(stop) => Event::TurnEnded {
            stop_reason: *stop,
            error: None,
        },
        Err(e) => Event::TurnEnded {
            stop_reason: TurnStop::Error,
            error: Some(e.to_string()),
        },
    };
    if let Err(e) = c.commit(ended) {
        c.abandon_open_cards(&format!("candor stopped this subagent: {e}"));
        return Err(e.into());
    }
    outcome
}

/// Runs a subagent's job to its end (`super::subagent::Runner`).
fn run_child(
    mut job: super::subagent::Job,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = super::subagent::Ended> + Send>> {
    Box::pin(async move {
        let result = match super::subagent::begin(&mut job).await {
            Ok(()) => {
                let task = std::mem::take(&mut job.prompt);
                let control = job.control.clone();
                let limit = job.limit;
                child(
                    &mut job.committer,
                    &mut job.provider,
                    &mut job.kit,
                    &task,
                    &control,
                    limit,
                )
                .await
            }
            Err(e) => Err(e.into()),
        };
        super::subagent::end(job, result)
    })
}

/// Steps 2 to 4: the model asked, its calls run, until it answers (or
/// `limit` requests were made).
async fn agent_loop(
    c: &mut Committer,
    provider: &mut Provider,
    kit: &mut SessionKit,
    control: &TurnControl,
    limit: usize,
) -> Result<TurnStop, TurnError> {
    // Stop hooks that sent the model back to work in this prompt.
    let mut continued = 0;
    // Whether the user was told the history could not be compacted.
    let mut warned = false;
    // Responses the provider paused in a row (its own searches).
    let mut paused = 0;
    for _ in 0..limit {
        if control.cancel.is_cancelled() {
            return Ok(TurnStop::Cancelled);
        }
        kit.settings
            .apply(c, &mut kit.policy.mode, Some(&mut *provider))?;
        if !deliver_steering(c, kit, control).await? {
            return Ok(TurnStop::Cancelled);
        }
        super::prompt_mcp::report(c, kit)?;
        kit.mcp.refresh(&control.cancel).await;
        let Some(turn) = respond(c, provider, kit, control, &mut warned).await? else {
            return Ok(TurnStop::Cancelled);
        };
        // Each call gets a session-unique id before anything is recorded:
        // a model that reuses an id (or a server that sends none, where
        // every response's first call is `call_candor_0`) still gets a card
        // for every call. The model's own ids stay in its turn.
        let (calls, call_ids) = unique_calls(c.records(), &turn);
        let stop = turn.stop;
        let said = turn.text();
        let cost = turn.usage().and_then(|u| provider.cost(&u));
        c.commit(Event::AssistantMessage {
            content: turn.content,
            stop,
            interrupted: false,
            call_ids,
            cost,
        })?;
        // The provider paused its own long turn (its searches): the turn
        // goes back as it is and the model goes on, a bounded number of
        // times.
        paused = if stop == ModelStop::Paused {
            paused + 1
        } else {
            0
        };
        if calls.is_empty() && stop == ModelStop::Paused && paused <= MAX_PAUSES {
            continue;
        }
        if calls.is_empty() {
            let ended = match stop {
                ModelStop::EndTurn | ModelStop::ToolUse | ModelStop::Paused => TurnStop::EndTurn,
                ModelStop::MaxTokens => TurnStop::MaxTokens,
                ModelStop::Refusal => TurnStop::Refusal,
            };
            if ended != TurnStop::EndTurn {
                return Ok(ended);
            }
            // The user steered while the model answered: it answers that
            // too, in this turn.
            control.queue.record(c)?;
            if control.queue.has_steering() {
                continue;
            }
            if continued == events::MAX_STOP_CONTINUATIONS {
                c.commit(Event::Notice {
                    level: NoticeLevel::Warning,
                    text: format!(
                        "Stop hooks sent the model back to work {continued} times in this prompt; candor ended the turn"
                    ),
                })?;
                return Ok(ended);
            }
            let active = continued > 0;
            match events::stop_requested(c, kit, &control.cwd, active, &said, &control.cancel)
                .await?
            {
                Some(_) => {
                    continued += 1;
                    continue;
                }
                None if control.cancel.is_cancelled() => return Ok(TurnStop::Cancelled),
                None => return Ok(ended),
            }
        }
        let model = provider.model().map(str::to_owned);
        if let Some(stop) = run_calls(c, kit, calls, control, model).await? {
            return Ok(stop);
        }
    }
    Ok(TurnStop::MaxTurnRequests)
}

/// Step 3: each call of the model's response, in order; `Agent` calls
/// that follow each other run together, in parallel (`super::subagent`).
/// `Some`: a hook ended the turn.
async fn run_calls(
    c: &mut Committer,
    kit: &mut SessionKit,
    calls: Vec<(String, String, serde_json::Value)>,
    control: &TurnControl,
    model: Option<String>,
) -> Result<Option<TurnStop>, TurnError> {
    let mut stopped: Option<(String, String)> = None;
    let is_agent = |name: &str| tools::Tool::from_name(name) == Some(tools::Tool::Agent);
    let mut calls = calls.into_iter().peekable();
    while let Some((id, name, input)) = calls.next() {
        if stopped.is_none() && is_agent(&name) {
            let mut batch = vec![(id, name, input)];
            while let Some(next) = calls.next_if(|(_, n, _)| is_agent(n)) {
                batch.push(next);
            }
            let runner: super::subagent::Runner = run_child;
            stopped =
                super::subagent::run_batch(c, kit, batch, control, model.clone(), runner).await?;
            continue;
        }
        control.queue.record(c)?;
        if let Some((hook, reason)) = &stopped {
            let text = format!("not run: the hook {hook} ended the turn ({reason})");
            finish(c, &id, ResultStatus::Cancelled, &text)?;
            continue;
        }
        if control.cancel.is_cancelled() {
            finish(
                c,
                &id,
                ResultStatus::Cancelled,
                "cancelled by the user before it ran",
            )?;
            continue;
        }
        if let Next::Stop { hook, reason } = run_call(c, kit, &id, &name, &input, control).await? {
            stopped = Some((hook, reason));
        }
    }
    if let Some((hook, reason)) = stopped {
        c.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text: format!("The hook {hook} ended the turn: {reason}"),
        })?;
        return Ok(Some(TurnStop::EndTurn));
    }
    Ok(None)
}

/// The steering messages that arrived for this turn, delivered before the
/// model request about to be made (`steering/delivered`): every call the
/// model made so far has its result, so none lands between a call and its
/// result. Each passes the UserPromptSubmit hooks as a prompt does (a hook
/// that blocks a prompt blocks it; the turn goes on). `false`: cancelled.
async fn deliver_steering(
    c: &mut Committer,
    kit: &SessionKit,
    control: &TurnControl,
) -> Result<bool, TurnError> {
    control.queue.record(c)?;
    for (steering_id, content) in control.queue.take_steering() {
        let text = crate::history::flatten_prompt(&content);
        c.commit(Event::SteeringDelivered {
            steering_id,
            content,
        })?;
        if events::prompt_submitted(c, kit, &control.cwd, &text, &control.cancel)
            .await?
            .is_none()
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Before the first model request: a command file's expansion, the MCP
/// servers ready, an MCP prompt command expanded, the resources and files
/// the prompt links attached. `Some`: how the turn ends instead.
async fn prepare(
    c: &mut Committer,
    kit: &SessionKit,
    typed: &str,
    links: &[String],
    control: &TurnControl,
) -> Result<Option<TurnStop>, TurnError> {
    if let Some(stop) = super::user_commands::expand(c, kit, typed)? {
        return Ok(Some(stop));
    }
    if let Some(stop) = super::prompt_mcp::prepare(c, kit, typed, links, control).await? {
        return Ok(Some(stop));
    }
    super::attach::attach_files(c, kit, control).await
}

/// A turn that is one of candor's commands: answered without the model,
/// but for `/compact`, which has it write a summary.
async fn command_turn(
    c: &mut Committer,
    provider: &mut Provider,
    kit: &mut SessionKit,
    control: &TurnControl,
    command: &str,
    prompt_text: &str,
) -> Result<TurnStop, TurnError> {
    if command == "compact" {
        let focus = prompt_text.trim_start().trim_start_matches("/compact");
        let base = request(c, provider, kit, control);
        return Ok(compact::on_request(c, provider, &base, focus, &control.cancel).await?);
    }
    let output = if command == "trust" {
        let mut words = prompt_text.split_whitespace().skip(1);
        match (words.next(), words.next()) {
            (None, _) => {
                super::trust::grant(c, kit, false, provider.model(), &control.cancel).await?
            }
            (Some("always"), None) => {
                super::trust::grant(c, kit, true, provider.model(), &control.cancel).await?
            }
            _ => "`/trust` trusts this project's own settings for this session; `/trust always` remembers it until they change. It takes nothing else.".into(),
        }
    } else if command == "sandbox" {
        super::sandbox::command(c, kit, prompt_text).await?
    } else if command == "doctor" {
        let kernel = kit.confiner.probe().await;
        super::builtin_commands::doctor(kit, c.records(), &control.cwd, kernel)
    } else {
        super::builtin_commands::run(command, kit, provider, c, &control.cwd)
    };
    // `/trust` may have applied the project's sandbox settings: the
    // options the client is shown follow (with the answer's record).
    super::sandbox::refresh_view(kit, c.records());
    c.commit(Event::CommandRan {
        command: command.to_owned(),
        output,
    })?;
    Ok(TurnStop::EndTurn)
}

/// The next model request: its history derived from the log.
/// The images it carries are loaded first.
fn request(
    c: &mut Committer,
    provider: &Provider,
    kit: &SessionKit,
    control: &TurnControl,
) -> ModelRequest {
    let messages = c.request_history(provider.rewrite_strategy());
    ModelRequest {
        system: super::system::prompt(c.records(), &control.cwd),
        messages,
        tools: super::subagent::tool_specs(kit),
        web_search: provider.web_search().is_some()
            && crate::interception::policy::search_offered(&kit.policy.rules).is_ok(),
    }
}

/// Asks the model for its next response (step 2): compacts the history
/// first when the request would not fit the budget, and when the provider
/// answers that it did not fit, compacts and asks once more. `None` when
/// cancelled.
async fn respond(
    c: &mut Committer,
    provider: &mut Provider,
    kit: &SessionKit,
    control: &TurnControl,
    warned: &mut bool,
) -> Result<Option<AssistantTurn>, TurnError> {
    let mut next = request(c, provider, kit, control);
    let step = compact::before_request(c, provider, &next, &control.cancel, warned).await?;
    match step {
        Step::Compacted => next = request(c, provider, kit, control),
        Step::Cancelled => return Ok(None),
        Step::Unchanged => {}
    }
    let error = match ask_model(c, provider, &next, control).await {
        Err(TurnError::Provider(e)) if e.is_context_too_long() => e,
        other => return other,
    };
    match compact::after_overflow(c, provider, &next, &control.cancel).await? {
        Step::Compacted => {}
        Step::Cancelled => return Ok(None),
        Step::Unchanged if step == Step::Compacted => return Err(error.after_compaction().into()),
        Step::Unchanged => return Err(error.into()),
    }
    let next = request(c, provider, kit, control);
    ask_model(c, provider, &next, control)
        .await
        .map_err(|e| match e {
            TurnError::Provider(p) => TurnError::Provider(p.after_compaction()),
            other => other,
        })
}

/// Streams one model response. `None` when cancelled (the text received so
/// far is kept as an interrupted `assistant/message`).
async fn ask_model(
    c: &mut Committer,
    provider: &mut Provider,
    request: &ModelRequest,
    control: &TurnControl,
) -> Result<Option<crate::conversation::AssistantTurn>, TurnError> {
    let mut streamed = String::new();
    let (cancel, queue) = (&control.cancel, Some(&control.queue));
    let result = super::ask::stream(c, provider, request, cancel, queue, |c, delta| {
        record_delta(c, delta, &mut streamed)
    })
    .await?;
    match result {
        Some(Ok(turn)) => Ok(Some(turn)),
        Some(Err(e)) => Err(e.into()),
        None => {
            c.commit(Event::AssistantMessage {
                content: vec![AssistantBlock::Text { text: streamed }],
                stop: ModelStop::EndTurn,
                interrupted: true,
                call_ids: Vec::new(),
                cost: None,
            })?;
            Ok(None)
        }
    }
}

/// How the ids of candor's own cards begin (`presentation`'s search and
/// trust cards): never a call's.
const OWN_CARDS: &str = "candor-";

/// The turn's calls as (session-unique id, name, input), and the ids to
/// record beside the turn (empty when every call kept the model's id).
fn unique_calls(
    records: &[crate::event_log::Record],
    turn: &crate::conversation::AssistantTurn,
) -> (Vec<(String, String, serde_json::Value)>, Vec<String>) {
    let mut used: std::collections::HashSet<String> = std::collections::HashSet::new();
    for r in records {
        match &r.event {
            Event::AssistantMessage {
                content, call_ids, ..
            } => used.extend(
                crate::event_log::record::call_ids_of(content, call_ids)
                    .into_iter()
                    .map(|(_, card)| card),
            ),
            Event::ToolCall { tool_call_id, .. } | Event::ToolResult { tool_call_id, .. } => {
                used.insert(tool_call_id.clone());
            }
            _ => {}
        }
    }
    let mut renamed = false;
    let mut calls = Vec::new();
    for (id, name, input) in turn.tool_uses() {
        // `candor-…` names candor's own cards (a provider's search,
        // `candor-search-<seq>-<n>`; the trust card): a call the provider
        // names so gets another id, or its card would be taken for one of
        // them and the call would run unseen.
        let mut card = if id.is_empty() {
            "call".to_owned()
        } else if id.starts_with(OWN_CARDS) {
            format!("call-{id}")
        } else {
            id.to_owned()
        };
        let mut n = 2;
        while used.contains(&card) {
            card = format!("{id}~{n}");
            n += 1;
        }
        renamed |= card != id;
        used.insert(card.clone());
        calls.push((card, name.to_owned(), input.clone()));
    }
    let call_ids = if renamed {
        calls.iter().map(|(card, _, _)| card.clone()).collect()
    } else {
        Vec::new()
    };
    (calls, call_ids)
}

fn record_delta(
    c: &mut Committer,
    delta: StreamDelta,
    streamed: &mut String,
) -> Result<(), LogError> {
    let (channel, text) = match delta {
        StreamDelta::Text(text) => {
            streamed.push_str(&text);
            (DeltaChannel::Text, text)
        }
        StreamDelta::Thinking(text) => (DeltaChannel::Thinking, text),
    };
    c.commit(Event::AssistantDelta { channel, text })
}
