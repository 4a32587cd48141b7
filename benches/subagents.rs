//! Subagents, with the scripted model and the release binary over real
//! pipes (`cargo bench --bench subagents`), median of 5 runs each:
//!
//! - **start overhead**: a prompt whose model makes one `Agent` call, the
//!   child answering at once, against the same prompt making one `Glob`
//!   call instead (both then answer). The difference is what a child costs:
//!   its log, its first records, its provider, its one model request, its
//!   end; the scripted model's request cost (a prompt that only answers,
//!   minus nothing) is reported beside it so the child's own overhead
//!   beyond its first model request can be read off. Target (issue 27):
//!   ≤ 5 ms beyond its first model request.
//! - **parallel**: 8 children each making 10 `Bash` calls (`echo`, allowed
//!   by a rule, in the default sandbox), all 8 at once
//!   (`subagents_parallel = 8`), against one child making its 10. Target:
//!   wall ≤ 1.5× one child's.
//! - **peak RSS**: candor's `VmHWM` after the 8-child prompt against the
//!   1-child one; (8 − 1) / 7 per live child. Target ≤ 1 MiB.
//! - **parallel, calls that wait**: the same 8 against 1, each child's 10
//!   calls `sleep 0.05`, sandboxed and not: whether children overlap when
//!   the CPU is not what limits them (`BENCH_WAIT_ONLY=1` runs this
//!   alone). `CANDOR_BIN` measures another build (`benches/common`).

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    unreachable_pub
)]

mod common;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

const RUNS: usize = 5;
const CALLS: usize = 10;

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

fn call(name: &str, input: Value) -> Value {
    json!({"content": [{"type": "tool_use", "name": name, "input": input}]})
}

fn agent(n: usize) -> Value {
    json!({"type": "tool_use", "name": "Agent", "input": {
        "description": format!("child {n}"),
        "prompt": format!("You are child {n}."),
        "subagent_type": "general-purpose"
    }})
}

/// A child that makes `calls` Bash calls, then answers.
fn child(n: usize, calls: usize) -> Value {
    child_running(n, calls, |i| format!("echo child {n} step {i}"))
}

/// A child that makes `calls` Bash calls that wait rather than compute
/// (`sleep 0.05`, 50 ms each), then answers.
fn waiting_child(n: usize, calls: usize) -> Value {
    child_running(n, calls, |_| "sleep 0.05".to_owned())
}

/// A child that makes `calls` Bash calls, the `i`th running
/// `command(i)`, then answers.
fn child_running(n: usize, calls: usize, command: impl Fn(usize) -> String) -> Value {
    let mut responses: Vec<Value> = (1..=calls)
        .map(|i| call("Bash", json!({"command": command(i)})))
        .collect();
    responses.push(text(&format!("child {n} done")));
    json!({"type": "general-purpose", "prompt": format!("child {n}."), "responses": responses})
}

/// One prompt's wall time (from `session/prompt` written to its response
/// read) and candor's peak RSS (KiB) after it, for a session playing
/// `script`.
fn prompt(script: &Value, parallel: usize, sandboxed: bool) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let script_file = dir.path().join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        json!({"permissions": {"allow": ["Bash(echo:*)", "Bash(sleep:*)"]}}).to_string(),
    )
    .unwrap();
    let user = dir.path().join("config/candor/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    let sandbox = if sandboxed {
        ""
    } else {
        "[sandbox]\nmode = \"full-access\"\n"
    };
    std::fs::write(&user, format!("subagents_parallel = {parallel}\n{sandbox}")).unwrap();
    let home = dir.path().join("home");
    let config = dir.path().join("config");
    let mut child = common::candor(&[
        ("HOME", dir.path().as_os_str()),
        ("CANDOR_HOME", home.as_os_str()),
        ("XDG_CONFIG_HOME", config.as_os_str()),
        ("CANDOR_PROVIDER", "scripted".as_ref()),
        ("CANDOR_SCRIPT", script_file.as_os_str()),
        ("CANDOR_POLICY", policy.as_os_str()),
        ("CANDOR_SESSION_TITLES", "prompt".as_ref()),
    ]);
    let pid = child.id();
    let mut client = common::Client::new(&mut child);
    client.send(0, "initialize", json!({"protocolVersion": 1}));
    client.wait(0);
    client.send(1, "session/new", json!({"cwd": project, "mcpServers": []}));
    let (new, _) = client.wait(1);
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    // Let the session's opening work (environment, commands) settle.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    client.send(
        2,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    let (answer, _) = client.wait(2);
    let took = started.elapsed();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let hwm = common::status_kib(pid, "VmHWM:").unwrap_or(0);
    client.close();
    let _ = child.wait();
    (took, hwm)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn median_u64(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "subagents bench (median of {RUNS}); load average at start: {}",
        load.trim()
    );
    if std::env::var_os("BENCH_WAIT_ONLY").is_some() {
        waiting();
        return;
    }
    // Start overhead.
    let only_text = json!({"responses": [text("done")]});
    let glob = json!({"responses": [call("Glob", json!({"pattern": "*.rs"})), text("done")]});
    let one_agent = json!({
        "responses": [{"content": [agent(1)]}, text("done")],
        "subagents": [child(1, 0)]
    });
    let runs = |script: &Value| -> Vec<(Duration, u64)> {
        (0..RUNS).map(|_| prompt(script, 4, true)).collect()
    };
    let t_text = median(runs(&only_text).into_iter().map(|r| r.0).collect());
    let t_glob = median(runs(&glob).into_iter().map(|r| r.0).collect());
    let t_agent = median(runs(&one_agent).into_iter().map(|r| r.0).collect());
    // The Agent prompt is two parent requests, the child, and its one
    // request: less two whole one-request prompts, the child and its
    // request remain (a prompt's own cost counted twice: an upper bound).
    let child_cost = t_agent.saturating_sub(t_text * 2);
    println!("start overhead:");
    println!("  a prompt that only answers (one model request): {t_text:?}");
    println!("  one Glob call then the answer:                  {t_glob:?}");
    println!("  one Agent call (the child answers at once):     {t_agent:?}");
    println!(
        "  a child with its one model request (Agent prompt − 2 × one-request prompt): {child_cost:?}; target: ≤ 5 ms beyond its first model request"
    );
    // Parallel children.
    let one = json!({
        "responses": [{"content": [agent(1)]}, text("done")],
        "subagents": [child(1, CALLS)]
    });
    let eight = json!({
        "responses": [{"content": (1..=8).map(agent).collect::<Vec<_>>()}, text("done")],
        "subagents": (1..=8).map(|n| child(n, CALLS)).collect::<Vec<_>>()
    });
    let one_runs = runs(&one);
    let eight_runs: Vec<(Duration, u64)> = (0..RUNS).map(|_| prompt(&eight, 8, true)).collect();
    let t_one = median(one_runs.iter().map(|r| r.0).collect());
    let t_eight = median(eight_runs.iter().map(|r| r.0).collect());
    println!("parallel:");
    println!("  one child, {CALLS} Bash calls:            {t_one:?}");
    println!("  8 children at once, {CALLS} Bash calls each: {t_eight:?}");
    println!(
        "  ratio {:.2} (target ≤ 1.5)",
        t_eight.as_secs_f64() / t_one.as_secs_f64()
    );
    // The same without the sandbox: what the launcher's CPU costs the
    // parallel run on two cores.
    let t_one_plain = median((0..RUNS).map(|_| prompt(&one, 8, false).0).collect());
    let t_eight_plain = median((0..RUNS).map(|_| prompt(&eight, 8, false).0).collect());
    println!(
        "  unsandboxed: one child {t_one_plain:?}, 8 children {t_eight_plain:?}, ratio {:.2}",
        t_eight_plain.as_secs_f64() / t_one_plain.as_secs_f64()
    );
    let hwm_one = median_u64(one_runs.iter().map(|r| r.1).collect());
    let hwm_eight = median_u64(eight_runs.iter().map(|r| r.1).collect());
    println!("peak RSS (candor's VmHWM):");
    println!("  one child: {hwm_one} KiB; 8 children: {hwm_eight} KiB");
    println!(
        "  per live child: {} KiB (target ≤ 1024)",
        hwm_eight.saturating_sub(hwm_one) / 7
    );
    waiting();
}

/// Children whose calls wait rather than compute: 8 at once against one,
/// sandboxed and not, so the ratio shows whether children overlap when
/// the CPU is not what limits them.
fn waiting() {
    let one = json!({
        "responses": [{"content": [agent(1)]}, text("done")],
        "subagents": [waiting_child(1, CALLS)]
    });
    let eight = json!({
        "responses": [{"content": (1..=8).map(agent).collect::<Vec<_>>()}, text("done")],
        "subagents": (1..=8).map(|n| waiting_child(n, CALLS)).collect::<Vec<_>>()
    });
    println!("parallel, calls that wait ({CALLS} × `sleep 0.05` a child):");
    for sandboxed in [true, false] {
        // Interleaved, one child then eight.
        let mut t_one = Vec::new();
        let mut t_eight = Vec::new();
        for _ in 0..RUNS {
            t_one.push(prompt(&one, 8, sandboxed).0);
            t_eight.push(prompt(&eight, 8, sandboxed).0);
        }
        let (t_one, t_eight) = (median(t_one), median(t_eight));
        println!(
            "  {}: one child {t_one:?}, 8 children {t_eight:?}, ratio {:.2} (target ≤ 1.5)",
            if sandboxed {
                "sandboxed"
            } else {
                "unsandboxed"
            },
            t_eight.as_secs_f64() / t_one.as_secs_f64()
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at the end: {}", load.trim());
}
