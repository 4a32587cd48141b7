//! Compaction bookkeeping per model request: deriving the history (with a
//! `history/compacted` record in force) and estimating the request's
//! context, on a long log; and, once per compaction, planning the span and
//! building the summary request.
//!
//! Run: `cargo bench --bench compaction` (release build). Target: the
//! per-request bookkeeping (derive + estimate) under 1 ms beyond the model
//! call. Prints the median and p99 of 200 runs of each step.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::time::Instant;

use candor::compaction::{self, Budget};
use candor::conversation::{
    AssistantBlock, ModelRequest, ModelStop, RewriteStrategy, ToolSpec, Usage, WireApi,
};
use candor::event_log::{CompactTrigger, DeltaChannel, Event, Record, ResultStatus, TurnStop};
use candor::history::derive_messages;
use serde_json::json;

const RECORDS: usize = 10_000;
const RUNS: usize = 200;

/// A session of about `RECORDS` records: turns of a prompt, streamed text,
/// a model turn with two tool calls (a 2 KiB output each), their records,
/// a final answer with usage; a compaction record two thirds of the way.
fn session(usage: bool) -> Vec<Record> {
    let mut events = vec![Event::SessionStarted {
        session_id: "bench".into(),
        cwd: "/project".into(),
        format: candor::event_log::FORMAT_VERSION,
        candor_version: "bench".into(),
        provider: "anthropic".into(),
        model: None,
        context_window: Some(200_000),
        parent: None,
    }];
    let output = "line of output from the command\n".repeat(64);
    let mut turn = 0;
    let mut compacted = false;
    while events.len() < RECORDS - 20 {
        turn += 1;
        if !compacted && events.len() > RECORDS * 2 / 3 {
            compacted = true;
            events.push(Event::HistoryCompacted {
                from: 0,
                to: events.len() as u64 - 1,
                summary: "The user is fixing the parser; ".repeat(200),
                trigger: CompactTrigger::Auto,
                focus: None,
                tokens_before: 180_000,
                tokens_after: 20_000,
                usage: None,
                elided: false,
                cost: None,
                kept_prompt: None,
            });
        }
        let prompt = serde_json::from_value(json!([{"type": "text", "text": format!("step {turn}: look at the parser and fix what you find")}])).unwrap();
        events.push(Event::UserMessage {
            content: prompt,
            images: Vec::new(),
            via: None,
        });
        for word in ["Let me ", "look at ", "the parser ", "first."] {
            events.push(Event::AssistantDelta {
                channel: DeltaChannel::Text,
                text: word.into(),
            });
        }
        let calls = [format!("a{turn}"), format!("b{turn}")];
        events.push(Event::AssistantMessage {
            content: vec![
                AssistantBlock::Text {
                    text: "Let me look at the parser first.".into(),
                },
                AssistantBlock::ToolUse {
                    id: calls[0].clone(),
                    name: "Bash".into(),
                    input: json!({"command": "cargo test -p parser"}),
                },
                AssistantBlock::ToolUse {
                    id: calls[1].clone(),
                    name: "Read".into(),
                    input: json!({"file_path": "/project/src/parser.rs"}),
                },
            ],
            stop: ModelStop::ToolUse,
            interrupted: false,
            call_ids: Vec::new(),
            cost: None,
        });
        for id in &calls {
            events.push(Event::ToolStarted {
                tool_call_id: id.clone(),
            });
            events.push(Event::ToolResult {
                tool_call_id: id.clone(),
                status: ResultStatus::Completed,
                output: output.clone(),
                exit_code: Some(0),
                signal: None,
                hook_notes: Vec::new(),
                diff: None,
                output_file: None,
            });
        }
        let mut answer = vec![AssistantBlock::Text {
            text: "Fixed the off-by-one in the tokenizer.".into(),
        }];
        if usage {
            answer.push(AssistantBlock::Raw {
                api: WireApi::Anthropic,
                turn: json!({"role": "assistant"}),
                usage: Some(Usage {
                    input_tokens: 20_000 + turn,
                    output_tokens: 50,
                    ..Usage::default()
                }),
            });
        }
        events.push(Event::AssistantMessage {
            content: answer,
            stop: ModelStop::EndTurn,
            interrupted: false,
            call_ids: Vec::new(),
            cost: None,
        });
        events.push(Event::TurnEnded {
            stop_reason: TurnStop::EndTurn,
            error: None,
        });
    }
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Record {
            seq: i as u64,
            at: "2026-12-02T10:00:00.000Z".into(),
            event,
        })
        .collect()
}

fn tools() -> Vec<ToolSpec> {
    (0..12)
        .map(|i| ToolSpec {
            name: format!("Tool{i}").into(),
            description: "A tool with a description of a few hundred bytes. ".repeat(8).into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]}),
        })
        .collect()
}

/// Median and p99 of `RUNS` runs of `f`, in µs.
fn time(mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..10 {
        f();
    }
    let mut runs: Vec<f64> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    (runs[RUNS / 2], runs[RUNS * 99 / 100])
}

fn row(name: &str, (median, p99): (f64, f64)) {
    println!("{name:<58} median {median:>8.1} µs   p99 {p99:>8.1} µs");
}

fn main() {
    let tools = tools();
    for usage in [true, false] {
        let records = session(usage);
        let request = ModelRequest {
            system: "You are candor, a coding agent.".repeat(20),
            messages: derive_messages(&records, RewriteStrategy::Note, &Default::default()),
            tools: tools.clone(),
            web_search: false,
        };
        println!(
            "{} records, a compaction at record {}, {} messages derived, usage {}",
            records.len(),
            records
                .iter()
                .position(|r| matches!(r.event, Event::HistoryCompacted { .. }))
                .unwrap(),
            request.messages.len(),
            if usage {
                "reported"
            } else {
                "not reported (the whole request estimated)"
            }
        );
        let derive = time(|| {
            std::hint::black_box(derive_messages(
                &records,
                RewriteStrategy::Note,
                &Default::default(),
            ));
        });
        row("  derive_messages", derive);
        let estimate = time(|| {
            std::hint::black_box(compaction::estimate(&records, &request));
        });
        row("  estimate", estimate);
        let both = time(|| {
            let messages = derive_messages(&records, RewriteStrategy::Note, &Default::default());
            let next = ModelRequest {
                system: request.system.clone(),
                messages,
                tools: tools.clone(),
                web_search: false,
            };
            std::hint::black_box(compaction::estimate(&records, &next));
        });
        row("  per request: derive + estimate", both);
        let budget = Budget::new(200_000, None);
        let plan = time(|| {
            std::hint::black_box(compaction::plan(&records, budget.keep()));
        });
        row("  at a compaction: plan", plan);
        let to = compaction::plan(&records, budget.keep()).unwrap().to;
        let summary = time(|| {
            std::hint::black_box(compaction::summary_request(
                &records,
                &Default::default(),
                RewriteStrategy::Note,
                to,
                &request,
                None,
                false,
                &budget,
            ));
        });
        row("  at a compaction: summary request", summary);
    }
}
