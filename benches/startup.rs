//! Start-up benchmark: spawn the agent, time the first answers, read its RSS.
//!
//! ```text
//! cargo bench --bench startup
//! BENCH_RUNS=30 BENCH_PEER="/path/to/codex-acp" BENCH_PEER_AUTH=openai-api-key \
//!     cargo bench --bench startup
//! ```
//!
//! For each of `BENCH_RUNS` runs (default 100, after `BENCH_WARMUP` unrecorded
//! ones, default 3) it spawns the release `candor` binary with stdin/stdout
//! piped (or the binary named by `BENCH_CANDOR`, to compare two builds), a
//! fresh `CANDOR_HOME` and `RUST_LOG=off`, and measures
//!
//! * spawn → `initialize` answer: from just before `spawn` to the whole
//!   response line having been read;
//! * `session/new`: from writing the request to reading its response line;
//! * idle RSS: `VmRSS` of the process and its descendants right after
//!   `session/new` answered;
//! * shutdown: from closing stdin to the process having exited (polled every
//!   100 µs).
//!
//! The floor is the same spawn → one line for `bash -c 'exec cat'`. Peers named
//! in `BENCH_PEER` (commands split on whitespace, several separated by `;`)
//! get the same measurements for `BENCH_PEER_RUNS` runs (default the smaller
//! of `BENCH_RUNS` and 20), with a 30 s read timeout and 5 s to exit after
//! stdin EOF before being killed; `BENCH_PEER_AUTH`, if set,
//! is the `methodId` of an `authenticate` request sent (and timed separately)
//! between `initialize` and `session/new`. Every read has a timeout, so the
//! bench never hangs; an error answer is reported as such, not as a number.
//!
//! Lines are read by a reader thread per child and handed over a channel (this
//! is what gives reads a timeout); the floor goes through the same path, so
//! the harness's own cost is in the floor too.

// A bench is a program whose output is its report: printing is its purpose,
// and a failed set-up (no temp dir, no binary) should just stop it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

const CANDOR_TIMEOUT: Duration = Duration::from_secs(10);
const PEER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a peer gets to exit after stdin EOF before it is killed.
const PEER_EXIT_GRACE: Duration = Duration::from_secs(5);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;

const TARGET_INITIALIZE_MS: f64 = 5.0;
const TARGET_SESSION_NEW_MS: f64 = 3.0;
const TARGET_RSS_MIB: f64 = 10.0;

/// What to launch and how.
struct Subject {
    label: String,
    program: PathBuf,
    args: Vec<String>,
    /// Candor gets a fresh `CANDOR_HOME` per run and a scrubbed environment.
    is_candor: bool,
    timeout: Duration,
    /// How long to wait for exit after stdin EOF before killing.
    exit_grace: Duration,
    /// `methodId` to `authenticate` with before `session/new`.
    auth: Option<String>,
}

/// One run of an agent.
#[derive(Default)]
struct AgentRun {
    initialize_ms: f64,
    authenticate_ms: Option<f64>,
    session_new_ms: Option<f64>,
    rss_mib: f64,
    shutdown_ms: Option<f64>,
    /// What went wrong, if anything: an error answer, a timeout, a kill.
    problems: Vec<String>,
}

fn main() {
    let runs = env_usize("BENCH_RUNS", 100);
    let warmup = env_usize("BENCH_WARMUP", 3);
    let peer_runs = env_usize("BENCH_PEER_RUNS", runs.min(20));
    let candor = Subject {
        label: "candor".into(),
        program: std::env::var_os("BENCH_CANDOR")
            .filter(|p| !p.is_empty())
            .map_or_else(
                || PathBuf::from(env!("CARGO_BIN_EXE_candor")),
                PathBuf::from,
            ),
        args: Vec::new(),
        is_candor: true,
        timeout: CANDOR_TIMEOUT,
        exit_grace: CANDOR_TIMEOUT,
        auth: None,
    };
    let auth = std::env::var("BENCH_PEER_AUTH")
        .ok()
        .filter(|s| !s.is_empty());
    let peers: Vec<Subject> = std::env::var("BENCH_PEER")
        .unwrap_or_default()
        .split(';')
        .filter_map(|command| {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = PathBuf::from(words.next()?);
            let args: Vec<String> = words.collect();
            let mut label = basename(&program);
            if let Some(first) = args.first() {
                label = format!("{label} {}", basename(Path::new(first)));
            }
            Some(Subject {
                label,
                program,
                args,
                is_candor: false,
                timeout: PEER_TIMEOUT,
                exit_grace: PEER_EXIT_GRACE,
                auth: auth.clone(),
            })
        })
        .collect();

    let scratch = std::env::temp_dir().join(format!("candor-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("create the scratch directory");
    let scratch = scratch
        .canonicalize()
        .expect("canonicalize the scratch dir");

    println!("{}", header(runs, warmup));
    println!("candor: {}", candor.program.display());

    let floor: Vec<f64> = (0..warmup + runs)
        .filter_map(|_| floor_run().map_err(|e| eprintln!("floor: {e}")).ok())
        .skip(warmup)
        .collect();

    let mut results = vec![(
        candor.label.clone(),
        measure(&candor, warmup, runs, &scratch),
    )];
    for peer in &peers {
        println!("peer:   {} {}", peer.program.display(), peer.args.join(" "));
        results.push((
            peer.label.clone(),
            measure(peer, warmup, peer_runs, &scratch),
        ));
    }
    let _ = std::fs::remove_dir_all(&scratch);

    report(&floor, &results);
}

/// `warmup` unrecorded runs, then `runs` recorded ones.
fn measure(subject: &Subject, warmup: usize, runs: usize, scratch: &Path) -> Vec<AgentRun> {
    (0..warmup + runs)
        .map(|i| {
            let dir = scratch.join(format!("run-{}-{i}", subject.label.replace(' ', "_")));
            std::fs::create_dir_all(&dir).expect("create a run directory");
            let run = agent_run(subject, &dir).unwrap_or_else(|problem| AgentRun {
                problems: vec![problem],
                ..AgentRun::default()
            });
            let _ = std::fs::remove_dir_all(&dir);
            run
        })
        .skip(warmup)
        .collect()
}

#[allow(clippy::disallowed_methods)] // the bench spawns the binary under test itself, as an editor would
fn agent_run(subject: &Subject, dir: &Path) -> Result<AgentRun, String> {
    let mut command = Command::new(&subject.program);
    command
        .args(&subject.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if subject.is_candor {
        // Only what this bench sets: no provider keys or state dirs from the
        // caller (they may be set for a peer).
        for var in [
            "CANDOR_PROVIDER",
            "CANDOR_SCRIPT",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "XDG_STATE_HOME",
        ] {
            command.env_remove(var);
        }
        command
            .env("CANDOR_HOME", dir.join("home"))
            .env("RUST_LOG", "off");
    }

    let start = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", subject.program.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let lines = reader(child.stdout.take().ok_or("no stdout")?);
    let mut run = AgentRun::default();
    let outcome = talk(
        subject, dir, start, &mut stdin, &lines, &mut child, &mut run,
    );
    if let Err(problem) = outcome {
        run.problems.push(problem);
    }
    drop(stdin);
    let closed = Instant::now();
    match wait_timeout(&mut child, subject.exit_grace) {
        Some(()) => run.shutdown_ms = Some(ms(closed.elapsed())),
        None => {
            kill_tree(&mut child);
            run.problems.push(format!(
                "did not exit within {} s of stdin EOF (killed)",
                subject.exit_grace.as_secs()
            ));
        }
    }
    Ok(run)
}

/// The conversation: `initialize`, maybe `authenticate`, `session/new`, RSS.
fn talk(
    subject: &Subject,
    dir: &Path,
    start: Instant,
    stdin: &mut ChildStdin,
    lines: &Receiver<String>,
    child: &mut Child,
    run: &mut AgentRun,
) -> Result<(), String> {
    send(stdin, INITIALIZE)?;
    let (at, answer) = response(lines, 0, subject.timeout, "initialize")?;
    run.initialize_ms = ms(at - start);
    answer.map_err(|e| format!("initialize answered an error: {e}"))?;

    if let Some(method) = &subject.auth {
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "authenticate",
            "params": { "methodId": method },
        });
        let sent = Instant::now();
        send(stdin, &request.to_string())?;
        let (at, answer) = response(lines, 2, subject.timeout, "authenticate")?;
        run.authenticate_ms = Some(ms(at - sent));
        answer.map_err(|e| format!("authenticate answered an error: {e}"))?;
    }

    let request = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": { "cwd": dir, "mcpServers": [] },
    });
    let sent = Instant::now();
    send(stdin, &request.to_string())?;
    let (at, answer) = response(lines, 1, subject.timeout, "session/new")?;
    let answered = ms(at - sent);
    run.rss_mib = tree_rss_kib(child.id()) as f64 / 1024.0;
    match answer {
        Ok(_) => run.session_new_ms = Some(answered),
        Err(e) => run
            .problems
            .push(format!("session/new answered an error: {e}")),
    }
    Ok(())
}

/// The floor: spawn `bash -c 'exec cat'`, write a line, read it back.
#[allow(clippy::disallowed_methods)] // the floor is a bare spawn, on purpose
fn floor_run() -> Result<f64, String> {
    let start = Instant::now();
    let mut child = Command::new("bash")
        .args(["-c", "exec cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn bash: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let lines = reader(child.stdout.take().ok_or("no stdout")?);
    send(&mut stdin, "ping")?;
    let line = lines.recv_timeout(CANDOR_TIMEOUT);
    let elapsed = ms(start.elapsed());
    drop(stdin);
    if wait_timeout(&mut child, CANDOR_TIMEOUT).is_none() {
        kill_tree(&mut child);
    }
    match line {
        Ok(l) if l == "ping" => Ok(elapsed),
        Ok(l) => Err(format!("cat echoed {l:?}")),
        Err(e) => Err(format!("no echo: {e}")),
    }
}

/// A thread that forwards the child's stdout line by line until EOF.
fn reader(stdout: ChildStdout) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        loop {
            let mut line = String::new();
            match stdout.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = line.trim_end_matches(['\r', '\n']).to_owned();
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

fn send(stdin: &mut ChildStdin, frame: &str) -> Result<(), String> {
    // One write of the whole frame, like an editor's framed writer.
    let mut bytes = Vec::with_capacity(frame.len() + 1);
    bytes.extend_from_slice(frame.as_bytes());
    bytes.push(b'\n');
    stdin
        .write_all(&bytes)
        .map_err(|e| format!("write to the agent: {e}"))
}

/// Waits for the response to `id`, skipping notifications and requests.
/// Returns when the line arrived (before parsing it) and the result or error.
type Answer = Result<Value, String>;
fn response(
    lines: &Receiver<String>,
    id: u64,
    timeout: Duration,
    what: &str,
) -> Result<(Instant, Answer), String> {
    let deadline = Instant::now() + timeout;
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|e| match e {
                RecvTimeoutError::Timeout => {
                    format!("no {what} answer within {} s", timeout.as_secs())
                }
                RecvTimeoutError::Disconnected => format!("stdout closed before the {what} answer"),
            })?;
        let at = Instant::now();
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message.get("id").and_then(Value::as_u64) != Some(id) || message.get("method").is_some()
        {
            continue;
        }
        if let Some(error) = message.get("error") {
            let text = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Ok((at, Err(text)));
        }
        return Ok((
            at,
            Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        ));
    }
}

/// Polls for exit every 100 µs; `None` on timeout.
fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<()> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return Some(()),
            Ok(None) if Instant::now() >= deadline => return None,
            Ok(None) => std::thread::sleep(Duration::from_micros(100)),
        }
    }
}

/// Kills the child and whatever it started (e.g. a wrapper's real binary).
fn kill_tree(child: &mut Child) {
    for pid in descendants(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `pid`'s descendants, from `/proc/*/stat`.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let child: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid ...`; comm may hold spaces and parens.
            let after = &stat[stat.rfind(')')? + 1..];
            let parent = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((child, parent))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// `VmRSS` of `pid` plus its descendants, in KiB.
fn tree_rss_kib(pid: u32) -> u64 {
    std::iter::once(pid)
        .chain(descendants(pid))
        .filter_map(|p| {
            let status = std::fs::read_to_string(format!("/proc/{p}/status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

// ---- report ----

struct Stats {
    median: f64,
    p10: f64,
    p90: f64,
    max: f64,
}

fn stats(values: &[f64]) -> Option<Stats> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    // Linear interpolation between closest ranks.
    let q = |p: f64| {
        let rank = p * (v.len() - 1) as f64;
        let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
    };
    Some(Stats {
        median: q(0.5),
        p10: q(0.1),
        p90: q(0.9),
        max: v[v.len() - 1],
    })
}

fn report(floor: &[f64], results: &[(String, Vec<AgentRun>)]) {
    println!();
    println!(
        "{:<28} {:<24} {:>5} {:>8} {:>8} {:>8} {:>8}  target",
        "subject", "measure", "n", "median", "p10", "p90", "max"
    );
    row(
        "bash -c 'exec cat'",
        "spawn → echoed line (ms)",
        floor,
        None,
    );
    for (label, runs) in results {
        let pick =
            |f: fn(&AgentRun) -> Option<f64>| -> Vec<f64> { runs.iter().filter_map(f).collect() };
        let is_candor = label == "candor";
        let initialize = pick(|r| (r.initialize_ms > 0.0).then_some(r.initialize_ms));
        row(
            label,
            "spawn → initialize (ms)",
            &initialize,
            is_candor.then_some(TARGET_INITIALIZE_MS),
        );
        let authenticate = pick(|r| r.authenticate_ms);
        if !authenticate.is_empty() {
            row(label, "authenticate (ms)", &authenticate, None);
        }
        row(
            label,
            "session/new (ms)",
            &pick(|r| r.session_new_ms),
            is_candor.then_some(TARGET_SESSION_NEW_MS),
        );
        row(
            label,
            "idle RSS (MiB)",
            &pick(|r| (r.rss_mib > 0.0).then_some(r.rss_mib)),
            is_candor.then_some(TARGET_RSS_MIB),
        );
        row(
            label,
            "stdin EOF → exit (ms)",
            &pick(|r| r.shutdown_ms),
            None,
        );
        let mut problems: Vec<&String> = runs.iter().flat_map(|r| &r.problems).collect();
        problems.sort();
        problems.dedup_by(|a, b| a == b);
        for problem in problems {
            let count = runs.iter().filter(|r| r.problems.contains(problem)).count();
            println!("{label:<28} ! {count}/{} runs: {problem}", runs.len());
        }
    }
}

fn row(subject: &str, measure: &str, values: &[f64], target: Option<f64>) {
    let Some(s) = stats(values) else {
        println!(
            "{subject:<28} {measure:<24} {:>5}  (no successful measurement)",
            0
        );
        return;
    };
    let verdict = target.map_or_else(String::new, |t| {
        let met = if s.median < t { "met" } else { "MISSED" };
        format!("< {t} median: {met}")
    });
    println!(
        "{subject:<28} {measure:<24} {:>5} {:>8.2} {:>8.2} {:>8.2} {:>8.2}  {verdict}",
        values.len(),
        s.median,
        s.p10,
        s.p90,
        s.max
    );
}

fn header(runs: usize, warmup: usize) -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "startup bench: {runs} runs (+{warmup} warm-up) per subject; {cpus} CPUs ({model}); Linux {}",
        kernel.trim()
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn basename(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
