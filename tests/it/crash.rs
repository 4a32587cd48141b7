//! Crash safety: candor is killed with SIGKILL at random points of a
//! scripted session (100 runs, seeded; `CANDOR_CRASH_SEED` replays one
//! seed), and every reload must keep every committed record, leave no card
//! open, and give a history the Anthropic mock (which checks requests as
//! the API does) accepts.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
use crate::support::*;

const RUNS: u64 = 100;
const AT_ONCE: usize = 4;

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

/// One run: a session killed after `delay`; then reloaded and continued
/// against the Anthropic mock. Panics with the seed on any failure; returns
/// where the kill landed.
async fn run(seed: u64) -> &'static str {
    let mut rng = fastrand::Rng::with_seed(seed);
    let delay = Duration::from_millis(rng.u64(0..=140));
    // Unsandboxed: the kill delays are tuned to a turn of plain commands
    // (the sandbox's setup would move where they land; what a kill does
    // to a sandboxed command is `sandboxed_calls`' to test).
    let env = TestEnv::scripted(crash_script())
        .with_policy(json!({"mode": "bypassPermissions"}))
        .unsandboxed();
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
        "seed {seed} (killed after {delay:?}): {loaded}"
    );
    let answer = again.prompt(&session, "continue").await;
    assert_eq!(
        answer["result"]["stopReason"],
        "end_turn",
        "seed {seed} (killed after {delay:?}): the provider refused the history: {answer}; it said {:?}",
        mock.bodies()
    );
    let after = std::fs::read(&path).unwrap();
    assert!(
        after.starts_with(committed),
        "seed {seed} (killed after {delay:?}): a committed record was lost"
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
    let seeds: Vec<u64> = match std::env::var("CANDOR_CRASH_SEED") {
        Ok(s) => vec![s.parse().expect("CANDOR_CRASH_SEED is a number")],
        Err(_) => (0..RUNS).map(|i| 0x5EED_0000 + i).collect(),
    };
    let mut landed = std::collections::BTreeMap::new();
    for chunk in seeds.chunks(AT_ONCE) {
        for stage in futures_util::future::join_all(chunk.iter().map(|seed| run(*seed))).await {
            *landed.entry(stage).or_insert(0) += 1;
        }
    }
    eprintln!("where the kills landed: {landed:?}");
    // The kills must have landed where it matters, or this proves nothing.
    if seeds.len() == RUNS as usize {
        for stage in [
            "while the model streamed",
            "during a call",
            "after the turn",
        ] {
            assert!(
                landed.contains_key(stage),
                "no kill landed {stage}: {landed:?}"
            );
        }
    }
}
