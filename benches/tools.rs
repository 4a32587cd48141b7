//! Tool-call throughput: a scripted turn of 1 000 sequential `Read` calls,
//! end to end through the release binary over real pipes (settling, the
//! `tool/call` record flushed to disk, the card's frames, the result).
//!
//! Run: `cargo bench --bench tools`. Targets: candor's own overhead per
//! call (excluding the file read) under 1 ms; peak RSS under 30 MiB.
//! Two shapes are measured: one model response asking for 1 000 reads
//! (the per-call cost), and 99 responses asking for one read each (adds a
//! model request per call, whose history is derived from the whole log).

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CALLS: usize = 1000;

fn read_call(i: usize) -> Value {
    json!({"type": "tool_use", "id": format!("r{i}"), "name": "Read", "input": {"file_path": "data.txt"}})
}

/// Runs one prompt against a fresh candor; returns (wall time of the
/// prompt, peak RSS in KiB, frames received).
fn run(script: &Value, label: &str) -> (Duration, u64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let text: String = (1..=100)
        .map(|i| format!("line {i} of the data file\n"))
        .collect();
    std::fs::write(project.join("data.txt"), text).unwrap();
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let home = dir.path().join("home");
    let mut child = common::candor(&[
        ("CANDOR_HOME", home.as_os_str()),
        ("CANDOR_PROVIDER", "scripted".as_ref()),
        ("CANDOR_SCRIPT", script_path.as_os_str()),
    ]);
    let pid = child.id();
    let mut client = common::Client::new(&mut child);
    client.send(0, "initialize", json!({"protocolVersion": 1}));
    client.wait(0);
    client.send(1, "session/new", json!({"cwd": project, "mcpServers": []}));
    let session = client.wait(1).0["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let started = Instant::now();
    client.send(
        2,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}),
    );
    let (response, frames) = client.wait(2);
    let frames = frames + 1;
    let took = started.elapsed();
    assert_eq!(
        response["result"]["stopReason"], "end_turn",
        "{label}: {response}"
    );
    let hwm = common::status_kib(pid, "VmHWM:").unwrap_or(0);
    client.close();
    let _ = child.wait();
    (took, hwm, frames)
}

/// What the reads themselves cost (the same file, from this process).
fn file_reads() -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.txt");
    let text: String = (1..=100)
        .map(|i| format!("line {i} of the data file\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    let started = Instant::now();
    for _ in 0..CALLS {
        std::hint::black_box(std::fs::read_to_string(&path).unwrap());
    }
    started.elapsed()
}

fn main() {
    let reads = file_reads();
    let one_response = json!({"responses": [
        {"content": (0..CALLS).map(read_call).collect::<Vec<_>>()},
        {"content": [{"type": "text", "text": "done"}]}
    ]});
    // 99 model requests with a call each, then the answer: the turn-request
    // limit is 100 per prompt.
    let mut responses: Vec<Value> = (0..99)
        .map(|i| json!({"content": [read_call(i)]}))
        .collect();
    responses.push(json!({"content": [{"type": "text", "text": "done"}]}));
    let many_responses = json!({"responses": responses});
    println!("tools: {CALLS} sequential Read calls in one prompt (release binary, real pipes)");
    println!(
        "  the {CALLS} file reads alone: {:.3} ms ({:.1} µs each)",
        ms(reads),
        us(reads) / CALLS as f64
    );
    for (label, script, calls) in [
        ("one response, 1000 calls", &one_response, CALLS),
        ("99 responses, 1 call each", &many_responses, 99),
    ] {
        let mut runs: Vec<(Duration, u64, usize)> = (0..3).map(|_| run(script, label)).collect();
        runs.sort_by_key(|r| r.0);
        let (took, hwm, frames) = runs[1];
        let per_call = (us(took) - us(reads) * calls as f64 / CALLS as f64) / calls as f64;
        println!(
            "  {label:<30} {:>8.1} ms total (median of 3)  {per_call:>6.1} µs/call overhead  peak RSS {:.1} MiB  {frames} frames",
            ms(took),
            hwm as f64 / 1024.0
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
