//! Crash safety: candor is killed with SIGKILL at random points of a
//! scripted session (100 runs, seeded; `CANDOR_CRASH_SEED` replays one
//! seed), and every reload must keep every committed record, leave no card
//! open, and give a history the Anthropic mock (which checks requests as
//! the API does) accepts.
//!
//! Where a kill lands depends on how fast the machine runs the turn: a
//! fixed window tuned to an idle machine leaves every kill before the
//! turn's end on a loaded one (other builds running), and then the test
//! proves less than it says. So the window is measured first: the turn is
//! run whole ([`AT_ONCE`] sessions at once, as the kills are), and each
//! seed picks its kill time as a fraction of a window a quarter longer
//! than the typical one. A seed therefore replays the same point of
//! the turn, not the same milliseconds. If the load changed so much that
//! a required stage got no kill, the window is measured again and more
//! seeds are run (at most [`ROUNDS`] rounds); every run asserts the same.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
use crate::support::*;

const RUNS: u64 = 100;
const AT_ONCE: usize = 4;
/// The most rounds of [`RUNS`] seeds, each with the window measured anew.
const ROUNDS: u64 = 3;

fn crash_script() -> Value {
    script(vec![
        json!({"chunkDelayMs": 4, "content": [
            text("Working on it, one step at a time."),
            tool("a", "Bash", json!({"command": "sleep 0.03; echo one"})),
            tool("b", "Write", json!({"file_path": "out.txt", "content": "written\n"})),
        ]}),
        json!({"chunkDelayMs": 4, "content": [
            text("Now the second step."),
            tool("c", "Bash", json!({"command": "echo two; sleep 0.02"})),
        ]}),
        json!({"chunkDelayMs": 4, "content": [text("All done, both steps ran.")]}),
    ])
}

/// Where a kill landed, from the records it left.
fn stage(committed: &[u8]) -> &'static str {
    let types: Vec<String> = String::from_utf8_lossy(committed)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|r| r["type"].as_str().unwrap_or("").to_owned())
        .collect();
    let last = types.last().map(String::as_str).unwrap_or("");
    let calls = types.iter().filter(|t| *t == "tool/call").count();
    let results = types.iter().filter(|t| *t == "tool/result").count();
    if types.iter().any(|t| t == "turn/ended") {
        "after the turn"
    } else if !types.iter().any(|t| t == "user/message") {
        "before the prompt"
    } else if calls > results {
        "during a call"
    } else if last == "assistant/delta" {
        "while the model streamed"
    } else {
        "between steps"
    }
}

/// A session of the crash script, as every run starts it.
fn crash_env() -> TestEnv {
    // Unsandboxed: the kills are aimed at a turn of plain commands (the
    // sandbox's setup would move where they land; what a kill does to a
    // sandboxed command is `sandboxed_calls`' to test).
    TestEnv::scripted(crash_script())
        .with_policy(json!({"mode": "bypassPermissions"}))
        .unsandboxed()
}

/// The window the kills are drawn from: a quarter longer than the typical
/// (median) of [`AT_ONCE`] whole turns run at once now (from the prompt
/// sent to its answer), so about a fifth of the kills land after the turn.
async fn kill_window() -> Duration {
    let turns = (0..AT_ONCE).map(|_| async {
        let mut conn = Conn::spawn(crash_env());
        let session = conn.ready().await;
        let sent = Instant::now();
        let answer = conn.prompt(&session, "do both steps").await;
        let took = sent.elapsed();
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        let _ = conn.end().await;
        took
    });
    let mut took = futures_util::future::join_all(turns).await;
    took.sort();
    let typical = took.get(AT_ONCE / 2).copied().unwrap_or_default();
    typical + typical / 4
}

/// One run: a session killed at the seed's point of `window`; then
/// reloaded and continued against the Anthropic mock. Panics with the
/// seed on any failure; returns where the kill landed.
async fn run(seed: u64, window: Duration) -> &'static str {
    let mut rng = fastrand::Rng::with_seed(seed);
    let delay = window.mul_f64(rng.f64());
    let env = crash_env();
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "do both steps"}]}),
    )
    .await;
    tokio::time::sleep(delay).await;
    conn.child().start_kill().unwrap();
    let _ = conn.child().wait().await;
    let env = conn.env;
    let path = env.home.join("sessions").join(format!("{session}.jsonl"));
    let before = std::fs::read(&path).unwrap();
    // What was committed: every whole line.
    let committed = &before[..before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1)];

    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("Picking up where we were.")],
        "end_turn",
    )])
    .await;
    let mut cmd = candor_command(&env);
    cmd.env_remove("CANDOR_PROVIDER")
        .env_remove("CANDOR_SCRIPT")
        .env("CANDOR_PROVIDER", "anthropic")
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", anthropic::KEY);
    let mut again = Conn::spawn_with(env, cmd);
    again.initialize().await;
    let cwd = again.env.project.clone();
    // The client model checks every card is terminal when this answers.
    let loaded = again
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    assert!(
        loaded.get("error").is_none(),
        "seed {seed} (killed after {delay:?} of {window:?}): {loaded}"
    );
    let answer = again.prompt(&session, "continue").await;
    assert_eq!(
        answer["result"]["stopReason"],
        "end_turn",
        "seed {seed} (killed after {delay:?} of {window:?}): the provider refused the history: {answer}; it said {:?}",
        mock.bodies()
    );
    let after = std::fs::read(&path).unwrap();
    assert!(
        after.starts_with(committed),
        "seed {seed} (killed after {delay:?} of {window:?}): a committed record was lost"
    );
    // The replayed thread ended every card.
    for card in &again.thread(&session).cards {
        assert!(
            card.terminal(),
            "seed {seed}: {} is {}",
            card.id,
            card.status
        );
    }
    let _ = again.end().await;
    stage(committed)
}

#[tokio::test]
async fn killed_at_random_points_sessions_reload_whole() {
    let replay = std::env::var("CANDOR_CRASH_SEED")
        .ok()
        .map(|s| s.parse::<u64>().expect("CANDOR_CRASH_SEED is a number"));
    let required = [
        "while the model streamed",
        "during a call",
        "after the turn",
    ];
    let mut landed = std::collections::BTreeMap::new();
    let mut windows = Vec::new();
    for round in 0..ROUNDS {
        let window = kill_window().await;
        windows.push(window);
        let seeds: Vec<u64> = match replay {
            Some(seed) => vec![seed],
            None => (0..RUNS)
                .map(|i| 0x5EED_0000 + round * 0x1000 + i)
                .collect(),
        };
        for chunk in seeds.chunks(AT_ONCE) {
            let runs = chunk.iter().map(|seed| run(*seed, window));
            for stage in futures_util::future::join_all(runs).await {
                *landed.entry(stage).or_insert(0) += 1;
            }
        }
        // The kills must have landed where it matters, or this proves
        // nothing (a replayed seed proves what it proves).
        if replay.is_some() || required.iter().all(|s| landed.contains_key(s)) {
            break;
        }
    }
    eprintln!("where the kills landed: {landed:?} (windows {windows:?})");
    if replay.is_none() {
        for stage in required {
            assert!(
                landed.contains_key(stage),
                "no kill landed {stage} in {} rounds: {landed:?} (windows {windows:?})",
                windows.len()
            );
        }
    }
}
