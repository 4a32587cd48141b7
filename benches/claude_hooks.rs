//! What a Claude Code command hook costs a tool call: the time to settle a
//! `Bash` call (interception, hooks, rules) with 0, 1 and 10 matching
//! PreToolUse command hooks loaded from a real `.claude/settings.json`
//! through the bridge, each hook a real process (`sh -c 'exit 0 #N'`, and
//! the exec form `true N`, which starts no shell).
//!
//! Run: `cargo bench --bench claude_hooks`. Target (Claude Code bridge
//! issue): one trivial command hook adds under 5 ms per call. Prints the
//! median and p90 per call over 200 calls, after 20 warm-up calls.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use candor::bridges::{SessionContext, claude};
use candor::config::ClaudeLocations;
use candor::interception::{self, Policy};
use serde_json::{Value, json};

const CALLS: usize = 200;

fn policy_with(project: &Path, hooks: Vec<Value>) -> Policy {
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": hooks}]}});
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(project.join(".claude/settings.json"), settings.to_string()).unwrap();
    let context = Arc::new(SessionContext::new(
        "bench".into(),
        project.join("log.jsonl"),
        project.to_owned(),
        None,
    ));
    // The bench project is trusted: its hooks are what is measured.
    let loaded = claude::load(&ClaudeLocations::default(), &context, true);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let mut policy = Policy::default();
    loaded.merge_into(&mut policy, project, None, false);
    policy
}

fn measure(rt: &tokio::runtime::Runtime, policy: &Policy, cwd: &Path) -> (Duration, Duration) {
    let args = json!({"command": "ls", "description": "list"});
    let settle = || {
        rt.block_on(interception::settle(
            "t",
            "Bash",
            &args,
            policy,
            &[],
            cwd,
            None,
        ))
    };
    for _ in 0..20 {
        std::hint::black_box(settle());
    }
    let mut times: Vec<Duration> = (0..CALLS)
        .map(|_| {
            let started = Instant::now();
            let settled = settle();
            let took = started.elapsed();
            assert!(
                settled.hooks().iter().all(|h| h.error.is_none()),
                "{:?}",
                settled.hooks()
            );
            took
        })
        .collect();
    times.sort();
    (times[CALLS / 2], times[CALLS * 9 / 10])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    let shell = |n: usize| json!({"type": "command", "command": format!("exit 0 #{n}")});
    let exec = |n: usize| json!({"type": "command", "command": "true", "args": [n.to_string()]});
    println!(
        "claude_hooks: settling one Bash call, {CALLS} calls after 20 warm-up (per call: median, p90)"
    );
    let (base, base90) = measure(&rt, &policy_with(project, vec![]), project);
    println!(
        "  no hooks                          {:8.3} ms  {:8.3} ms",
        ms(base),
        ms(base90)
    );
    for (label, hooks) in [
        ("1 shell-form hook (sh -c)", vec![shell(0)]),
        ("1 exec-form hook (no shell)", vec![exec(0)]),
        ("10 shell-form hooks", (0..10).map(shell).collect()),
        ("10 exec-form hooks", (0..10).map(exec).collect()),
    ] {
        let count = hooks.len();
        let (median, p90) = measure(&rt, &policy_with(project, hooks), project);
        println!(
            "  {label:<32}  {:8.3} ms  {:8.3} ms   ({:.3} ms per hook over no hooks)",
            ms(median),
            ms(p90),
            ms(median.saturating_sub(base)) / count as f64
        );
    }
}
