//! `candor harness`: every scenario in `protocol/scenarios` passes against
//! candor, and the harness itself catches what it must (a wrong
//! expectation, an agent that breaks the protocol).

use std::path::Path;

use crate::support::*;

async fn harness(args: &[&str]) -> (bool, String) {
    let env = TestEnv::new();
    let mut cmd = candor_command(&env);
    cmd.arg("harness")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let output = cmd.output().await.unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test]
async fn every_protocol_scenario_passes_against_candor() {
    let (ok, report) = harness(&["--verbose"]).await;
    assert!(ok, "{report}");
    let scenarios =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/scenarios"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count();
    assert!(scenarios >= 20, "only {scenarios} scenarios");
    assert!(
        report.contains(&format!("{scenarios} scenario(s)")),
        "{report}"
    );
    assert!(report.contains(" 0 failed, 0 skipped"), "{report}");
    assert!(!report.contains("FAIL"), "{report}");
}

#[tokio::test]
async fn a_wrong_expectation_fails_with_the_frame_that_broke_it() {
    let (ok, report) = harness(&["tests/fixtures/harness/wrong-expectations.json"]).await;
    assert!(!ok, "{report}");
    for line in [
        "FAIL  step 1 (initialize): result: at .protocolVersion: expected 2, got 1",
        "FAIL  step 3 (prompt): stopReason is cancelled: expected stopReason \"cancelled\", got \"end_turn\"",
        "FAIL  step 3 (prompt): cards: card 0 (\"t\"): at .title: expected \"`echo bye`\", got \"`echo hi`\"",
        "FAIL  step 3 (prompt): agent text: at .: expected to match /^nope/, got done",
        "frame: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"end_turn\"}}",
        "PASS  step 2 (newSession): succeeds",
        "4 failed",
    ] {
        assert!(report.contains(line), "missing {line:?} in:\n{report}");
    }
}

#[tokio::test]
async fn a_broken_agent_is_caught_on_every_invariant_it_breaks() {
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/faulty-agent.py");
    let agent = format!("python3 {}", agent.display());
    let (ok, report) = harness(&["--agent", &agent, "tests/fixtures/harness/faulty.json"]).await;
    assert!(!ok, "{report}");
    for line in [
        "FAIL  step 3 (prompt): stopReason is end_turn: expected stopReason \"end_turn\", got \"bogus\"",
        "FAIL  invariant: every frame matches the ACP v1 schema",
        "FAIL  invariant: stdout carries only JSON-RPC frames: a stdout line that is not JSON: \"debug: starting the turn\"",
        "FAIL  invariant: a tool_call comes before any update for its id: tool_call_update for ghost",
        "FAIL  invariant: tool call statuses only move forward",
        "FAIL  invariant: no turn updates while no prompt is running: agent_message_chunk while no prompt is running",
        "FAIL  invariant: the agent only calls client methods the client advertised: fs/read_text_file without fs.readTextFile",
    ] {
        assert!(report.contains(line), "missing {line:?} in:\n{report}");
    }
    // What it did right is reported as such.
    assert!(
        report.contains("PASS  invariant: exactly one response per request"),
        "{report}"
    );
}

#[tokio::test]
async fn against_another_agent_candor_only_scenarios_are_skipped() {
    // candor itself, launched as a peer: scenarios that need candor's
    // scripted model or log are skipped, the others run and pass.
    let agent = candor_bin();
    let (ok, report) = harness(&["--agent", agent]).await;
    assert!(ok, "{report}");
    assert!(report.contains("SKIP  scenario: needs candor"), "{report}");
    assert!(report.contains("PASS  step 1 (initialize)"), "{report}");
}

#[tokio::test]
async fn the_mcp_scenarios_need_nothing_but_the_candor_binary() {
    // A fresh clone has no `examples/` built: the candor binary alone, in a
    // directory of its own, runs the scenarios that start the MCP test
    // server (its hidden `mcp-test-server` subcommand).
    let alone = tempfile::tempdir().unwrap();
    let candor = alone.path().join("candor");
    std::fs::copy(candor_bin(), &candor).unwrap();
    let env = TestEnv::new();
    #[allow(clippy::disallowed_methods)] // the copied binary under test
    let mut cmd = tokio::process::Command::new(&candor);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path())
        .env("CANDOR_HOME", &env.home)
        .env("CANDOR_CLAUDE_MANAGED_DIR", env.dir.path().join("managed"))
        .args([
            "harness",
            "protocol/scenarios/mcp-ask.json",
            "protocol/scenarios/mcp-never-starts.json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let output = cmd.output().await.unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains("2 scenario(s)") && report.contains(" 0 failed, 0 skipped"),
        "{report}"
    );
    assert!(
        !std::fs::read_dir(alone.path()).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("mcp")),
        "nothing is built beside the binary"
    );
}
