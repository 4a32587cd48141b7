//! MCP benchmark: what candor adds to an MCP call, and how a session with
//! many MCP servers starts.
//!
//! ```text
//! cargo bench --bench mcp
//! ```
//!
//! Both parts use the test server (`candor mcp-test-server`, the bench's
//! own build of candor) over stdio.
//!
//! * **Call overhead.** The server's own time: 500 `echo` calls made
//!   directly through `tools::mcp::Servers` (rmcp over the pipes, no
//!   session), the median. Through candor: the release binary with the
//!   scripted model asking for 100 `echo` calls in one turn
//!   (`bypassPermissions`), prompt to answer, less the same turn without
//!   calls, divided by 100; each call is settled, its `tool/call` written
//!   and `fdatasync`ed, its card sent and updated, its result recorded.
//!   Overhead = per call through candor − the direct median (5 runs, the
//!   median).
//! * **Start-up.** `session/new` with 10 stdio servers: the answer's time,
//!   and when every server was ready (the largest "ready (in N ms)" `/mcp`
//!   shows), beside the slowest of the same 10 servers started at once
//!   without a session (spawn, `initialize`, `tools/list` through
//!   `tools::mcp::Servers`: what any client pays on this machine) and a
//!   session with one server (10 runs each, medians).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CALLS: usize = 100;
const TARGET_OVERHEAD_MS: f64 = 1.0;
const TARGET_SESSION_NEW_MS: f64 = 3.0;

/// The test server: the candor binary cargo built for the bench, whose
/// `mcp-test-server` subcommand it is.
fn server_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_candor"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn stdio(name: &str, bin: &Path) -> Value {
    json!({"name": name, "command": bin, "args": ["mcp-test-server"], "env": []})
}

/// The test server as a stdio server named `name`, for `Servers` directly.
fn spec(name: &str, bin: &Path) -> candor::tools::mcp::ServerSpec {
    candor::tools::mcp::ServerSpec {
        name: name.into(),
        source: candor::tools::mcp::Source::Editor,
        transport: candor::tools::mcp::Transport::Stdio {
            command: bin.display().to_string(),
            args: vec!["mcp-test-server".into()],
            env: Vec::new(),
            cwd: None,
        },
        startup_timeout: None,
        tool_timeout: None,
    }
}

/// The server's own time for one `echo`, through rmcp, in ms.
fn direct(rt: &tokio::runtime::Runtime, bin: &Path) -> f64 {
    rt.block_on(async {
        let servers = candor::tools::mcp::Servers::default();
        servers.start(vec![spec("test", bin)], Path::new("/"));
        let cancel = tokio_util::sync::CancellationToken::new();
        servers.wait_ready(Duration::from_secs(20), &cancel).await;
        let mut times = Vec::new();
        for i in 0..550 {
            let mut args = serde_json::Map::new();
            args.insert("text".into(), json!("x"));
            let started = Instant::now();
            let outcome = servers.call("test", "echo", args, &cancel).await;
            assert!(matches!(outcome, candor::tools::mcp::CallOutcome::Done(_)));
            if i >= 50 {
                times.push(started.elapsed().as_secs_f64() * 1e3);
            }
        }
        servers.stop();
        median(times)
    })
}

/// The slowest of `count` servers started at once without a session (ms).
fn direct_start(rt: &tokio::runtime::Runtime, bin: &Path, count: usize) -> f64 {
    rt.block_on(async {
        let servers = candor::tools::mcp::Servers::default();
        let specs = (0..count).map(|i| spec(&format!("s{i}"), bin)).collect();
        servers.start(specs, Path::new("/"));
        let cancel = tokio_util::sync::CancellationToken::new();
        servers.wait_ready(Duration::from_secs(20), &cancel).await;
        let slowest = servers
            .status()
            .iter()
            .filter_map(|s| s.ready_after)
            .map(|d| d.as_secs_f64() * 1e3)
            .fold(0.0, f64::max);
        servers.stop();
        slowest
    })
}

/// One prompt through the release binary with `calls` echo calls; its time
/// in ms.
fn through_candor(bin: &Path, calls: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let items: Vec<Value> = (0..calls)
        .map(|i| json!({"type": "tool_use", "id": format!("m{i}"), "name": "mcp__test__echo", "input": {"text": "x"}}))
        .collect();
    let mut responses = Vec::new();
    if calls > 0 {
        responses.push(json!({"content": items}));
    }
    responses.push(json!({"content": [{"type": "text", "text": "done"}]}));
    let script = dir.path().join("script.json");
    std::fs::write(&script, json!({"responses": responses}).to_string()).unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, json!({"mode": "bypassPermissions"}).to_string()).unwrap();
    let home = dir.path().join("home");
    let mut child = common::candor(&[
        ("HOME", dir.path().as_os_str()),
        ("CANDOR_HOME", home.as_os_str()),
        ("CANDOR_PROVIDER", "scripted".as_ref()),
        ("CANDOR_SCRIPT", script.as_os_str()),
        ("CANDOR_POLICY", policy.as_os_str()),
    ]);
    let mut client = common::Client::new(&mut child);
    client.send(0, "initialize", json!({"protocolVersion": 1}));
    client.wait(0);
    client.send(
        1,
        "session/new",
        json!({"cwd": project, "mcpServers": [stdio("test", bin)]}),
    );
    let session = client.wait(1).0["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Ready before timing: a first prompt waits for it.
    client.send(
        2,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "/mcp"}]}),
    );
    client.wait(2);
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    client.send(
        3,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    let (answer, _) = client.wait(3);
    let took = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    client.close();
    let _ = child.wait();
    took
}

/// `session/new` with `count` servers: its answer's time, and when every
/// server was ready (ms).
fn start_up(bin: &Path, count: usize) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let home = dir.path().join("home");
    let mut child = common::candor(&[
        ("HOME", dir.path().as_os_str()),
        ("CANDOR_HOME", home.as_os_str()),
    ]);
    let mut client = common::Client::new(&mut child);
    client.send(0, "initialize", json!({"protocolVersion": 1}));
    client.wait(0);
    let servers: Vec<Value> = (0..count).map(|i| stdio(&format!("s{i}"), bin)).collect();
    let started = Instant::now();
    client.send(
        1,
        "session/new",
        json!({"cwd": project, "mcpServers": servers}),
    );
    let (answer, _) = client.wait(1);
    let answered = started.elapsed().as_secs_f64() * 1e3;
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let mut id = 2;
    let ready = loop {
        client.send(
            id,
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/mcp"}]}),
        );
        let mut text = String::new();
        loop {
            let frame = client.frame();
            if frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                text.push_str(
                    frame["params"]["update"]["content"]["text"]
                        .as_str()
                        .unwrap_or(""),
                );
            }
            if frame.get("method").is_none() && frame["id"] == id {
                break;
            }
        }
        id += 1;
        let times: Vec<f64> = text
            .match_indices("ready (in ")
            .filter_map(|(i, _)| {
                text[i + 10..]
                    .split(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
            })
            .collect();
        if times.len() == count {
            break times.into_iter().fold(0.0, f64::max);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    client.close();
    let _ = child.wait();
    (answered, ready)
}

fn main() {
    let bin = server_bin();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let own = direct(&rt, &bin);
    let mut overheads = Vec::new();
    let mut per_call = Vec::new();
    for _ in 0..5 {
        let without = through_candor(&bin, 0);
        let with = through_candor(&bin, CALLS);
        let each = (with - without) / CALLS as f64;
        per_call.push(each);
        overheads.push(each - own);
    }
    let overhead = median(overheads);
    println!("MCP call, the server's own time (direct, median of 500): {own:.3} ms");
    println!(
        "MCP call through candor (per call, median of 5 turns of {CALLS}): {:.3} ms",
        median(per_call)
    );
    println!(
        "overhead per call: {overhead:.3} ms (target <= {TARGET_OVERHEAD_MS} ms) {}",
        if overhead <= TARGET_OVERHEAD_MS {
            "ok"
        } else {
            "MISSED"
        }
    );
    let mut one = Vec::new();
    for _ in 0..10 {
        one.push(start_up(&bin, 1).1);
    }
    let mut answers = Vec::new();
    let mut all = Vec::new();
    for _ in 0..10 {
        let (answered, ready) = start_up(&bin, 10);
        answers.push(answered);
        all.push(ready);
    }
    let answer = median(answers);
    println!(
        "session/new with 10 stdio servers answered in {answer:.2} ms (target <= {TARGET_SESSION_NEW_MS} ms) {}",
        if answer <= TARGET_SESSION_NEW_MS {
            "ok"
        } else {
            "MISSED"
        }
    );
    let mut alone = Vec::new();
    for _ in 0..10 {
        alone.push(direct_start(&rt, &bin, 10));
    }
    let (one, all, alone) = (median(one), median(all), median(alone));
    println!("one server, in a session, ready in {one:.1} ms");
    println!(
        "10 servers at once: the slowest ready in {alone:.1} ms without a session, all 10 in a session in {all:.1} ms ({:+.1} ms; target <= +10 ms) {}",
        all - alone,
        if all - alone <= 10.0 { "ok" } else { "MISSED" }
    );
}
