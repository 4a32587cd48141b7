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

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CALLS: usize = 1000;

fn read_call(i: usize) -> Value {
    json!({"type": "tool_use", "id": format!("r{i}"), "name": "Read", "input": {"file_path": "data.txt"}})
}

/// Runs one prompt against a fresh candor; returns (wall time of the
/// prompt, peak RSS in KiB, frames received).
#[allow(clippy::disallowed_methods)] // the bench starts the binary under test
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_candor"))
        .env("CANDOR_HOME", dir.path().join("home"))
        .env("CANDOR_PROVIDER", "scripted")
        .env("CANDOR_SCRIPT", &script_path)
        .env("RUST_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let mut wait = |id: u64| -> (Value, usize) {
        let mut frames = 0;
        loop {
            let line = lines.next().unwrap().unwrap();
            frames += 1;
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("method").is_none() && v["id"] == id {
                return (v, frames);
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    wait(0);
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": project, "mcpServers": []}}),
    );
    let session = wait(1).0["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let started = Instant::now();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}}),
    );
    let (response, frames) = wait(2);
    let took = started.elapsed();
    assert_eq!(
        response["result"]["stopReason"], "end_turn",
        "{label}: {response}"
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    drop(stdin);
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
