//! Interception overhead: what settling one tool call costs with in-process
//! hooks (candor's scripted hooks), permission rules and the mode, plus
//! building its `tool/call` record and presenting its card.
//!
//! Run: `cargo bench --bench interception` (release build). Target: under
//! 50 µs per call. Prints the median and p99 of batches of calls.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::Path;
use std::time::Instant;

use candor::event_log::{Decision, Event, Record};
use candor::interception::policy::Disposition;
use candor::interception::policy_file::PolicyFile;
use candor::interception::{Policy, settle};
use candor::presentation::{Mode, Presenter};
use serde_json::{Value, json};

fn policy(hooks: usize) -> Policy {
    let mut list = vec![
        json!({"id": "rtk", "tool": "Bash", "when": {"command": {"$regex": "^git "}}, "decision": "allow",
               "rewrite": {"command": {"replace": "^git ", "with": "rtk git "}}}),
        json!({"id": "no-rm", "tool": "Bash", "when": {"command": {"$contains": "rm -rf"}}, "decision": "deny", "reason": "no"}),
        json!({"id": "audit", "tool": "*", "decision": "pass"}),
    ];
    while list.len() < hooks {
        list.push(json!({"id": format!("extra{}", list.len()), "tool": "Bash", "when": {"command": {"$contains": "never"}}, "decision": "ask"}));
    }
    list.truncate(hooks);
    let file: PolicyFile = serde_json::from_value(json!({
        "hooks": list,
        "permissions": {"allow": ["Bash(rtk git *)", "Bash(npm test)"], "ask": ["Bash(git push:*)"], "deny": ["Bash(rm *)", "Read(./.env)"]}
    }))
    .unwrap();
    file.policy(Path::new("/project"), None).unwrap()
}

fn record_of(id: &str, args: &Value, d: &Disposition) -> Event {
    Event::ToolCall {
        tool_call_id: id.into(),
        tool: "Bash".into(),
        arguments: args.clone(),
        original_arguments: None,
        digest: String::new(),
        decision: match d {
            Disposition::Deny { by, reason } => Decision::deny(by, reason.clone()),
            _ => Decision::allow(),
        },
        hooks: Vec::new(),
        rewritten_by: Vec::new(),
        preview: None,
        mcp: None,
        sandbox: None,
    }
}

fn measure(name: &str, hooks: usize, rt: &tokio::runtime::Runtime) {
    let policy = policy(hooks);
    let input = json!({"command": "git status --short", "description": "status"});
    let cwd = Path::new("/project");
    const BATCH: usize = 200;
    const BATCHES: usize = 100;
    let mut per_call = Vec::with_capacity(BATCHES);
    let mut presenter = Presenter::new(cwd.to_path_buf(), Mode::Live);
    let mut seq = 0u64;
    rt.block_on(async {
        // Warm up.
        for i in 0..BATCH {
            settle(&format!("w{i}"), "Bash", &input, &policy, &[], cwd, None).await;
        }
        for _ in 0..BATCHES {
            let started = Instant::now();
            for _ in 0..BATCH {
                seq += 1;
                let id = format!("t{seq}");
                let s = settle(&id, "Bash", &input, &policy, &[], cwd, None).await;
                let record = Record {
                    seq,
                    at: String::new(),
                    event: record_of(&id, s.effective(), s.disposition()),
                };
                std::hint::black_box(serde_json::to_vec(&record).unwrap());
                std::hint::black_box(presenter.apply(&record));
            }
            per_call.push(started.elapsed().as_secs_f64() * 1e6 / BATCH as f64);
        }
    });
    per_call.sort_by(f64::total_cmp);
    let median = per_call[per_call.len() / 2];
    let p99 = per_call[per_call.len() * 99 / 100];
    println!("{name:<44} median {median:>7.2} µs/call   p99 {p99:>7.2} µs/call");
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("interception: settle + tool/call record + card, per call (batches of 200)");
    measure("no hooks, 5 rules", 0, &rt);
    measure("3 hooks (one rewrites), 5 rules", 3, &rt);
    measure("10 hooks (one rewrites), 5 rules", 10, &rt);
}
