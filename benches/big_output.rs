//! `yes | head -c 1G` through Bash, run by the release binary: once as a
//! local process, once in an editor terminal (this bench plays the editor:
//! it runs the command itself and keeps the last `outputByteLimit` bytes,
//! as Zed does).
//!
//! Run: `cargo bench --bench big_output`. Target: candor's peak RSS under
//! 64 MiB whatever the command prints; the log bounded.
//!
//! Reported per run: candor's `VmHWM`; the session log's size and the spill
//! file's (`<id>.outputs/`); the `session/update` frames and their bytes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    unreachable_pub
)]

mod common;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};

const COMMAND: &str = "yes | head -c 1G";

type Writer = Arc<Mutex<std::process::ChildStdin>>;

fn send(w: &Writer, v: &Value) {
    let mut w = w.lock().unwrap();
    writeln!(w, "{v}").unwrap();
    w.flush().unwrap();
}

/// One terminal this bench runs for candor.
struct Term {
    output: Arc<Mutex<(VecDeque<u8>, bool)>>,
    exit: Arc<Mutex<Option<i32>>>,
    done: Arc<std::sync::Condvar>,
}

fn create_terminal(params: &Value) -> Term {
    let limit = params["outputByteLimit"].as_u64().unwrap_or(1 << 20) as usize;
    let args: Vec<String> = params["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let mut child = Command::new(params["command"].as_str().unwrap())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let output = Arc::new(Mutex::new((VecDeque::new(), false)));
    let exit = Arc::new(Mutex::new(None));
    let done = Arc::new(std::sync::Condvar::new());
    let (o, e, d) = (output.clone(), exit.clone(), done.clone());
    std::thread::spawn(move || {
        let mut out = child.stdout.take().unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut g = o.lock().unwrap();
            g.0.extend(&buf[..n]);
            let over = g.0.len().saturating_sub(limit);
            if over > 0 {
                g.0.drain(..over);
                g.1 = true;
            }
        }
        let code = child.wait().unwrap().code().unwrap_or(-1);
        *e.lock().unwrap() = Some(code);
        d.notify_all();
    });
    Term { output, exit, done }
}

struct Run {
    peak_kib: u64,
    log_bytes: u64,
    spill_bytes: u64,
    updates: usize,
    update_bytes: usize,
    seconds: f64,
}

fn run(terminal: bool) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let script = json!({"responses": [
        {"content": [{"type": "tool_use", "id": "big", "name": "Bash", "input": {"command": COMMAND}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]});
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        json!({"permissions": {"allow": ["Bash"]}}).to_string(),
    )
    .unwrap();
    let home = dir.path().join("home");
    let mut child = common::candor(&[
        ("CANDOR_HOME", home.as_os_str()),
        ("CANDOR_PROVIDER", "scripted".as_ref()),
        ("CANDOR_SCRIPT", script_path.as_os_str()),
        ("CANDOR_POLICY", policy.as_os_str()),
    ]);
    let pid = child.id();
    let writer: Writer = Arc::new(Mutex::new(child.stdin.take().unwrap()));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    send(
        &writer,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"terminal": terminal}}}),
    );
    send(
        &writer,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": project, "mcpServers": []}}),
    );
    let mut session = String::new();
    let mut terms: Vec<Term> = Vec::new();
    let (mut updates, mut update_bytes) = (0, 0);
    let mut started = Instant::now();
    loop {
        let line = lines.next().unwrap().unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        match (v.get("method").and_then(Value::as_str), v.get("id")) {
            (Some("session/update"), _) => {
                updates += 1;
                update_bytes += line.len();
            }
            (Some(method), Some(id)) => {
                let p = &v["params"];
                let id = id.clone();
                match method {
                    "terminal/create" => {
                        terms.push(create_terminal(p));
                        let tid = format!("t{}", terms.len() - 1);
                        send(
                            &writer,
                            &json!({"jsonrpc": "2.0", "id": id, "result": {"terminalId": tid}}),
                        );
                    }
                    "terminal/wait_for_exit"
                    | "terminal/output"
                    | "terminal/release"
                    | "terminal/kill" => {
                        let n: usize = p["terminalId"].as_str().unwrap()[1..].parse().unwrap();
                        let t = &terms[n];
                        let (output, exit, done) =
                            (t.output.clone(), t.exit.clone(), t.done.clone());
                        let w = writer.clone();
                        let method = method.to_owned();
                        std::thread::spawn(move || {
                            let result = match method.as_str() {
                                "terminal/wait_for_exit" => {
                                    let mut g = exit.lock().unwrap();
                                    while g.is_none() {
                                        g = done.wait(g).unwrap();
                                    }
                                    json!({"exitCode": *g})
                                }
                                "terminal/output" => {
                                    let g = output.lock().unwrap();
                                    let bytes: Vec<u8> = g.0.iter().copied().collect();
                                    let code = *exit.lock().unwrap();
                                    json!({"output": String::from_utf8_lossy(&bytes), "truncated": g.1, "exitStatus": code.map(|c| json!({"exitCode": c}))})
                                }
                                _ => json!({}),
                            };
                            send(&w, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
                        });
                    }
                    _ => send(
                        &writer,
                        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
                    ),
                }
            }
            (None, Some(id)) if id == 1 => {
                session = v["result"]["sessionId"].as_str().unwrap().to_owned();
                started = Instant::now();
                send(
                    &writer,
                    &json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
                );
            }
            (None, Some(id)) if id == 2 => {
                assert_eq!(v["result"]["stopReason"], "end_turn", "{v}");
                break;
            }
            _ => {}
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let peak_kib = common::status_kib(pid, "VmHWM:").unwrap();
    drop(writer);
    let _ = child.wait();
    let sessions = home.join("sessions");
    let log_bytes = std::fs::metadata(sessions.join(format!("{session}.jsonl")))
        .unwrap()
        .len();
    let spill_bytes = std::fs::read_dir(sessions.join(format!("{session}.outputs")))
        .map(|d| {
            d.flatten()
                .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
                .sum()
        })
        .unwrap_or(0);
    Run {
        peak_kib,
        log_bytes,
        spill_bytes,
        updates,
        update_bytes,
        seconds,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("`{COMMAND}` through Bash (release binary)\n");
    println!(
        "| where | candor peak RSS | log | spill file | session/update frames | their bytes | wall |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (label, terminal) in [("local process", false), ("editor terminal", true)] {
        let r = run(terminal);
        println!(
            "| {label} | {:.1} MiB | {:.1} KiB | {:.0} MiB | {} | {:.1} KiB | {:.1} s |",
            r.peak_kib as f64 / 1024.0,
            r.log_bytes as f64 / 1024.0,
            r.spill_bytes as f64 / (1024.0 * 1024.0),
            r.updates,
            r.update_bytes as f64 / 1024.0,
            r.seconds
        );
        assert!(r.peak_kib < 64 * 1024, "{label}: peak {} KiB", r.peak_kib);
    }
}
