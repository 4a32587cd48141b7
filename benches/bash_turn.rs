//! A turn of 20 sequential `Bash` calls (`echo step N`) driven by a model
//! served from a local mock HTTP server: the release binary over real pipes,
//! configured for Anthropic as a user would (environment variables, a
//! policy file allowing `Bash(echo:*)`), against the tests' Anthropic mock
//! on 127.0.0.1, which streams the real SSE format and checks every request
//! the way the API does.
//!
//! The turn runs twice over: in the sandbox (the default a session gets,
//! every command through candor's launcher: workspace-write, network off,
//! its own namespaces), and with the user's config saying `[sandbox] mode
//! = "full-access"` (plain `bash`). Target (issue 26): the sandboxed turn
//! at most 1.2× the unsandboxed one.
//!
//! Run: `cargo bench --bench bash_turn`. Targets: the turn under 150 ms end
//! to end, peak RSS of candor and its children under 20 MiB, and under 1 ms
//! from the provider's last byte to each `tool_call` frame.
//!
//! The two boundaries' runs are interleaved. `CANDOR_BIN` measures
//! another build (`benches/common`). Reported, median of 5 runs:
//! - end to end: `session/prompt` written → its response read;
//! - CPU: the CPU time of candor and everything it started, the whole
//!   run (start-up and the session included), which the machine's other
//!   load does not change;
//! - the floor: the same 21 request bodies posted to a fresh mock and read
//!   to the end, plus 20 `bash -c 'echo step N'` spawns, from this process;
//! - last byte → `tool_call`: the time the mock wrote the last frame it had
//!   written before a `tool_call` frame reached this process, to that frame
//!   (the loopback hop, SSE and JSON parsing, settling, the `tool/call`
//!   record's `fdatasync`, the frame's trip through the pipe);
//! - peak RSS: candor's `VmHWM`; candor plus its living children sampled
//!   every 0.5 ms (in two further runs, the sampler taking CPU from the
//!   timed ones otherwise); and the bound candor's `VmHWM` + one `bash`'s
//!   peak (children run one at a time).

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    unreachable_pub
)]

mod common;

#[path = "../tests/it/support/mock_http.rs"]
#[allow(dead_code)]
mod mock_http;

#[path = "../tests/it/support/mock_anthropic.rs"]
#[allow(dead_code)]
mod mock_anthropic;

use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mock_anthropic::{KEY, MockAnthropic, Step, message, text, tool_use};
use serde_json::{Value, json};

const CALLS: usize = 20;
/// Runs per boundary (`BENCH_RUNS`, default 5).
fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

fn steps() -> Vec<Step> {
    let mut steps: Vec<Step> = (1..=CALLS)
        .map(|n| {
            message(
                vec![tool_use(
                    &format!("toolu_{n:02}"),
                    "Bash",
                    &json!({"command": format!("echo step {n}")}).to_string(),
                )],
                "tool_use",
            )
        })
        .collect();
    steps.push(message(vec![text("All 20 steps ran.")], "end_turn"));
    steps
}

/// One run's figures.
struct Run {
    took: Duration,
    /// The CPU time of candor and everything it started.
    cpu: Duration,
    to_card: Vec<Duration>,
    hwm_kib: u64,
    sampled_kib: u64,
    bodies: Vec<String>,
}

/// Every descendant of `pid` alive now.
fn descendants(pid: u32, out: &mut Vec<u32>) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            out.push(child);
            descendants(child, out);
        }
    }
}

/// Samples the RSS of `pid` and its descendants until `stop`; the largest
/// sum. A child that has not yet called `exec` still runs candor's image in
/// candor's address space (`posix_spawn` uses `CLONE_VM`), so it is not
/// counted twice.
fn sample(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let mut peak = 0;
        let mut pids = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            pids.clear();
            descendants(pid, &mut pids);
            pids.retain(|p| std::fs::read_link(format!("/proc/{p}/exe")).ok() != exe);
            pids.push(pid);
            let sum: u64 = pids
                .iter()
                .filter_map(|p| common::status_kib(*p, "VmRSS:"))
                .sum();
            peak = peak.max(sum);
            std::thread::sleep(Duration::from_micros(500));
        }
        peak
    })
}

fn run(rt: &tokio::runtime::Runtime, sampled: bool, sandboxed: bool) -> Run {
    let mock = rt.block_on(MockAnthropic::start(steps()));
    let dir = tempfile::tempdir().unwrap();
    if !sandboxed {
        let user = dir.path().join("config/candor/config.toml");
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        std::fs::write(&user, "[sandbox]\nmode = \"full-access\"\n").unwrap();
    }
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        json!({"permissions": {"allow": ["Bash(echo:*)"]}}).to_string(),
    )
    .unwrap();
    let home = dir.path().join("home");
    let config = dir.path().join("config");
    let url = mock.url();
    let cpu = common::children_cpu();
    let mut child = common::candor(&[
        ("HOME", dir.path().as_os_str()),
        ("CANDOR_HOME", home.as_os_str()),
        ("XDG_CONFIG_HOME", config.as_os_str()),
        ("CANDOR_PROVIDER", "anthropic".as_ref()),
        ("ANTHROPIC_BASE_URL", url.as_ref()),
        ("ANTHROPIC_API_KEY", KEY.as_ref()),
        ("CANDOR_POLICY", policy.as_os_str()),
        // The title from the prompt's first line: the mock is asked only
        // the turn's requests (a title request could come first or not).
        ("CANDOR_SESSION_TITLES", "prompt".as_ref()),
    ]);
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    // A reader thread timestamps every frame as it arrives.
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Value)>();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let at = Instant::now();
            let Ok(v) = serde_json::from_str(&line) else {
                continue;
            };
            if tx.send((at, v)).is_err() {
                break;
            }
        }
    });
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    // Each card says the boundary its command ran in.
    let boundary = if sandboxed {
        "sandbox: writes to"
    } else {
        "not sandboxed: turned off by"
    };
    let wait = |id: u64, cards: &mut Vec<Instant>| -> (Instant, Value) {
        loop {
            let (at, v) = rx.recv().unwrap();
            if v["params"]["update"]["sessionUpdate"] == "tool_call" {
                assert!(v.to_string().contains(boundary), "{v}");
                cards.push(at);
            }
            if v.get("method").is_none() && v["id"] == id {
                return (at, v);
            }
        }
    };
    let mut cards = Vec::new();
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    wait(0, &mut cards);
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": project, "mcpServers": []}}),
    );
    let session = wait(1, &mut cards).1["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sampled.then(|| sample(pid, stop.clone()));
    let started = Instant::now();
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run the 20 steps"}]}}),
    );
    let (done, response) = wait(2, &mut cards);
    let took = done - started;
    stop.store(true, Ordering::Relaxed);
    let sampled_kib = sampler.map_or(0, |s| s.join().unwrap());
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(cards.len(), CALLS, "one tool_call frame per call");
    let hwm_kib = common::status_kib(pid, "VmHWM:").unwrap_or(0);
    let written: Vec<Instant> = mock.server.written.lock().unwrap().clone();
    let to_card = cards
        .iter()
        .map(|card| {
            let last = written
                .iter()
                .filter(|w| *w <= card)
                .max()
                .expect("a frame was written before the card");
            *card - *last
        })
        .collect();
    drop(stdin);
    let _ = child.wait();
    let cpu = common::children_cpu().saturating_sub(cpu);
    let _ = reader.join();
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), CALLS + 1, "one model request per step");
    Run {
        took,
        cpu,
        to_card,
        hwm_kib,
        sampled_kib,
        bodies,
    }
}

/// The same requests against a fresh mock, read to the end, plus the same
/// bash spawns: what no agent can go below.
fn floor(rt: &tokio::runtime::Runtime, bodies: &[String]) -> Duration {
    let mock = rt.block_on(MockAnthropic::start(steps()));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let url = format!("{}/v1/messages", mock.url());
    let started = Instant::now();
    for (i, body) in bodies.iter().enumerate() {
        rt.block_on(async {
            let response = http
                .post(&url)
                .header("x-api-key", KEY)
                .header("anthropic-version", "2023-06-01")
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success(), "{}", response.status());
            std::hint::black_box(response.bytes().await.unwrap());
        });
        if i < CALLS {
            #[allow(clippy::disallowed_methods)]
            // The same environment candor's commands get (`common::candor`).
            let out = Command::new("bash")
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .arg("-c")
                .arg(format!("echo step {}", i + 1))
                .output()
                .unwrap();
            assert!(out.status.success());
        }
    }
    started.elapsed()
}

/// One `bash -c 'echo step N'`'s peak RSS, as the shell itself reports it.
#[allow(clippy::disallowed_methods)]
fn bash_peak_kib() -> u64 {
    let out = Command::new("bash")
        .arg("-c")
        .arg("echo step 1 >/dev/null; grep VmHWM /proc/$$/status")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
    // One warm-up run each (page cache, the binary's first start); then the
    // two boundaries interleaved, so that the machine's other load falls
    // on both alike.
    for sandboxed in [false, true] {
        let _ = run(&rt, false, sandboxed);
    }
    let mut all: [Vec<Run>; 2] = Default::default();
    for _ in 0..runs() {
        for sandboxed in [false, true] {
            all[usize::from(sandboxed)].push(run(&rt, false, sandboxed));
        }
    }
    let [plain, confined] = all;
    let medians = [report(&rt, false, plain), report(&rt, true, confined)];
    println!(
        "  sandboxed / unsandboxed end to end: {:.2}×   (target ≤ 1.2×); CPU per turn {:.2}×",
        medians[1].0.as_secs_f64() / medians[0].0.as_secs_f64(),
        medians[1].1.as_secs_f64() / medians[0].1.as_secs_f64()
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
}

/// Prints the figures of `runs` in one boundary; the medians of the time
/// end to end and of the CPU time.
fn report(rt: &tokio::runtime::Runtime, sandboxed: bool, runs: Vec<Run>) -> (Duration, Duration) {
    // Memory is sampled in separate runs: the sampler competes for the two
    // cores and would inflate the times.
    let sampled = (0..2)
        .map(|_| run(rt, true, sandboxed).sampled_kib)
        .max()
        .unwrap_or(0);
    let floors: Vec<Duration> = runs.iter().map(|r| floor(rt, &r.bodies)).collect();
    let bash_kib = bash_peak_kib();
    let took = median(runs.iter().map(|r| r.took).collect());
    let cpu = median(runs.iter().map(|r| r.cpu).collect());
    let floor = median(floors);
    let hwm = median(runs.iter().map(|r| r.hwm_kib).collect());
    let mut to_card: Vec<Duration> = runs.iter().flat_map(|r| r.to_card.clone()).collect();
    to_card.sort();
    let p = |q: f64| to_card[((to_card.len() - 1) as f64 * q).round() as usize];
    println!(
        "bash_turn ({}): {CALLS} sequential Bash calls, model from a local mock Anthropic server (release binary, real pipes, median of {})",
        if sandboxed {
            "sandboxed, the default"
        } else {
            "unsandboxed, [sandbox] mode = \"full-access\""
        },
        runs.len()
    );
    println!(
        "  end to end            {:8.1} ms   (runs: {})",
        ms(took),
        runs.iter()
            .map(|r| format!("{:.1}", ms(r.took)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  CPU, candor + children {:7.1} ms   ({:.2} ms per call)",
        ms(cpu),
        ms(cpu) / CALLS as f64
    );
    println!(
        "  floor                 {:8.1} ms   ({} mock round trips + {CALLS} bash spawns, no agent)",
        ms(floor),
        CALLS + 1
    );
    println!(
        "  candor's share        {:8.1} ms   ({:.2} ms per call)",
        ms(took.saturating_sub(floor)),
        ms(took.saturating_sub(floor)) / CALLS as f64
    );
    println!(
        "  last byte → tool_call  median {:7.1} µs   p99 {:7.1} µs   max {:7.1} µs   (n={})",
        us(p(0.5)),
        us(p(0.99)),
        us(p(1.0)),
        to_card.len()
    );
    println!(
        "  peak RSS   candor VmHWM {:.1} MiB; candor + children sampled {:.1} MiB; bound candor + one bash ({:.1} MiB) = {:.1} MiB",
        hwm as f64 / 1024.0,
        sampled as f64 / 1024.0,
        bash_kib as f64 / 1024.0,
        (hwm + bash_kib) as f64 / 1024.0
    );
    (took, cpu)
}
