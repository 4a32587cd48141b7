//! `session/load` of a 10 000-record session: the release binary over real
//! pipes reads the log, replays every record to the client (who reads
//! every frame) and answers.
//!
//! Run: `cargo bench --bench load`. Target: under 100 ms, with memory that
//! grows with what is replayed, not with the file twice. Reports the median
//! of 10 loads (each a fresh process, after one warm-up), the frames
//! replayed, the log's size, and candor's peak RSS after the load next to
//! its RSS after a `session/new` (the baseline).

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use candor::conversation::{AssistantBlock, ModelStop};
use candor::event_log::{DeltaChannel, Event, EventLog, ResultStatus, TurnStop};
use serde_json::json;

const RECORDS: usize = 10_000;
const RUNS: usize = 10;

/// Writes a session of `RECORDS` records: turns of a prompt, streamed text,
/// a model turn with two tool calls, their cards' records and results.
fn write_session(dir: &Path, cwd: &Path) -> String {
    let id = "bench-load-session".to_owned();
    let mut log = EventLog::create(&dir.join("sessions"), &id).unwrap();
    log.append(Event::SessionStarted {
        session_id: id.clone(),
        cwd: cwd.to_owned(),
        format: candor::event_log::FORMAT_VERSION,
        candor_version: "bench".into(),
        provider: "scripted".into(),
        model: None,
        context_window: None,
        parent: None,
    })
    .unwrap();
    let mut turn = 0;
    while log.records().len() < RECORDS - 20 {
        turn += 1;
        let prompt = serde_json::from_value(json!([{"type": "text", "text": format!("step {turn}: look at the parser and fix what you find")}])).unwrap();
        log.append(Event::UserMessage {
            content: prompt,
            images: Vec::new(),
            via: None,
        })
        .unwrap();
        for word in ["Let me ", "look at ", "the parser ", "first."] {
            log.append(Event::AssistantDelta {
                channel: DeltaChannel::Text,
                text: word.into(),
            })
            .unwrap();
        }
        let calls = [format!("a{turn}"), format!("b{turn}")];
        log.append(Event::AssistantMessage {
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
                    input: json!({"file_path": cwd.join("src/parser.rs")}),
                },
            ],
            stop: ModelStop::ToolUse,
            interrupted: false,
            call_ids: Vec::new(),
            cost: None,
        })
        .unwrap();
        for (i, id) in calls.iter().enumerate() {
            let (tool, arguments) = if i == 0 {
                ("Bash", json!({"command": "cargo test -p parser"}))
            } else {
                ("Read", json!({"file_path": cwd.join("src/parser.rs")}))
            };
            log.append(Event::ToolCall {
                tool_call_id: id.clone(),
                tool: tool.into(),
                arguments: arguments.clone(),
                original_arguments: None,
                digest: candor::interception::digest(tool, &arguments),
                decision: candor::event_log::Decision::allow(),
                hooks: vec![],
                rewritten_by: vec![],
                preview: None,
                mcp: None,
                sandbox: None,
            })
            .unwrap();
            log.append(Event::ToolStarted {
                tool_call_id: id.clone(),
            })
            .unwrap();
            let output = "running 12 tests\ntest parse_empty ... ok\ntest parse_nested ... ok\n";
            log.append(Event::ToolOutput {
                tool_call_id: id.clone(),
                text: output.into(),
                skipped: 0,
            })
            .unwrap();
            log.append(Event::ToolResult {
                tool_call_id: id.clone(),
                status: ResultStatus::Completed,
                output: output.into(),
                exit_code: Some(0),
                signal: None,
                hook_notes: vec![],
                diff: None,
                output_file: None,
            })
            .unwrap();
        }
        for word in ["All ", "tests ", "pass."] {
            log.append(Event::AssistantDelta {
                channel: DeltaChannel::Text,
                text: word.into(),
            })
            .unwrap();
        }
        log.append(Event::AssistantMessage {
            content: vec![AssistantBlock::Text {
                text: "All tests pass.".into(),
            }],
            stop: ModelStop::EndTurn,
            interrupted: false,
            call_ids: Vec::new(),
            cost: None,
        })
        .unwrap();
        log.append(Event::TurnEnded {
            stop_reason: TurnStop::EndTurn,
            error: None,
        })
        .unwrap();
    }
    id
}

/// Opens `method` in a fresh candor; returns (time to the response, frames
/// read before it, peak RSS in KiB).
fn open(home: &Path, cwd: &Path, method: &str, session: &str) -> (Duration, usize, u64) {
    let mut child = common::candor(&[
        ("CANDOR_HOME", home.as_os_str()),
        ("CANDOR_PROVIDER", "scripted".as_ref()),
        ("CANDOR_CLAUDE_HOOKS", "0".as_ref()),
        ("CANDOR_CODEX_HOOKS", "0".as_ref()),
    ]);
    let pid = child.id();
    let mut client = common::Client::new(&mut child);
    client.send(0, "initialize", json!({"protocolVersion": 1}));
    client.wait(0);
    let params = if method == "session/new" {
        json!({"cwd": cwd, "mcpServers": []})
    } else {
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []})
    };
    let started = Instant::now();
    client.send(1, method, params);
    let (response, frames) = client.wait(1);
    let took = started.elapsed();
    assert!(response.get("error").is_none(), "{response}");
    let peak = common::status_kib(pid, "VmHWM:").unwrap_or(0);
    client.close();
    let _ = child.wait();
    (took, frames, peak)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let session = write_session(dir.path(), &cwd);
    let path = dir.path().join("sessions").join(format!("{session}.jsonl"));
    let records = candor::event_log::read(&path).unwrap().len();
    let size = std::fs::metadata(&path).unwrap().len();
    let (_, _, baseline) = open(dir.path(), &cwd, "session/new", "");
    let _ = open(dir.path(), &cwd, "session/load", &session);
    let mut runs: Vec<(Duration, usize, u64)> = (0..RUNS)
        .map(|_| open(dir.path(), &cwd, "session/load", &session))
        .collect();
    runs.sort_by_key(|r| r.0);
    let (median, frames, _) = runs[RUNS / 2];
    let peak = runs.iter().map(|r| r.2).max().unwrap_or(0);
    let mut resumes: Vec<(Duration, usize, u64)> = (0..RUNS)
        .map(|_| open(dir.path(), &cwd, "session/resume", &session))
        .collect();
    resumes.sort_by_key(|r| r.0);
    let resume_peak = resumes.iter().map(|r| r.2).max().unwrap_or(0);
    println!(
        "load: session/load of a {records}-record session ({:.1} MiB), release binary, real pipes",
        size as f64 / 1048576.0
    );
    println!(
        "  request → response   median {:.1} ms   min {:.1} ms   max {:.1} ms   ({frames} frames replayed, {RUNS} runs)",
        runs[RUNS / 2].0.as_secs_f64() * 1e3,
        runs[0].0.as_secs_f64() * 1e3,
        runs[RUNS - 1].0.as_secs_f64() * 1e3
    );
    let _ = median;
    println!(
        "  session/resume       median {:.1} ms (the same without sending the replay)",
        resumes[RUNS / 2].0.as_secs_f64() * 1e3
    );
    println!(
        "  peak RSS             {:.1} MiB after the load, {:.1} MiB after a resume, {:.1} MiB after a session/new (the log itself is {:.1} MiB)",
        peak as f64 / 1024.0,
        resume_peak as f64 / 1024.0,
        baseline as f64 / 1024.0,
        size as f64 / 1048576.0
    );
}
