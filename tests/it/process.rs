//! The built binary over real pipes: stdout carries frames only, logs go to
//! stderr, and end of input or SIGTERM stop it cleanly and quickly.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::support::*;

async fn stderr_of(conn: &mut Conn) -> String {
    let mut text = String::new();
    if let Some(mut err) = conn.child().stderr.take() {
        err.read_to_string(&mut text).await.unwrap();
    }
    text
}

#[tokio::test]
async fn a_session_over_real_pipes_keeps_stdout_for_frames() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            text("Listing."),
            tool(
                "t",
                "Bash",
                json!({"command": "echo on-stdout; echo on-stderr >&2"})
            )
        ])),
        respond(json!([text("Done.")])),
    ]));
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "go").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(
        conn.thread(&session)
            .card("t")
            .text()
            .contains("on-stdout\non-stderr")
    );
    conn.close_input();
    // Every line left on stdout is a frame too (Conn panics otherwise).
    conn.drain().await;
    let status = conn.child().wait().await.unwrap();
    assert!(status.success());
    let logs = stderr_of(&mut conn).await;
    assert!(logs.contains("session started"), "{logs}");
    assert!(
        !logs.contains("on-stdout"),
        "tool output leaked to stderr: {logs}"
    );
}

/// Starts a turn running `sleep 30` and returns the connection, the prompt
/// id and the sleep's pid once it runs.
async fn long_turn() -> (Conn, serde_json::Value, u32) {
    let env = TestEnv::scripted(script(vec![respond(json!([tool(
        "s",
        "Bash",
        json!({"command": "sleep 30 & echo $! > sleep.pid; wait"})
    )]))]));
    let pid_file = env.project.join("sleep.pid");
    // The pids the command writes are the host's only unconfined (the
    // sandbox's PID namespace ends its processes by itself).
    let env = env.unsandboxed();
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    // Read (and answer the permission prompt) until the command runs.
    while conn.recv().await["params"]["update"]["status"] != "in_progress" {}
    let pid = read_pid(&pid_file).await;
    (conn, id, pid)
}

#[tokio::test]
async fn end_of_input_cancels_the_turn_ends_children_and_exits_0_quickly() {
    let (mut conn, id, sleep_pid) = long_turn().await;
    let started = Instant::now();
    conn.close_input();
    let status = tokio::time::timeout(Duration::from_secs(5), conn.child().wait())
        .await
        .expect("candor did not exit")
        .unwrap();
    let took = started.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    // SIGKILL was sent to its group before candor exited; on a loaded
    // machine the kernel may take a moment to finish it off.
    assert!(
        eventually(Duration::from_millis(500), || !alive(sleep_pid)).await,
        "the command outlived candor"
    );
    // The running prompt was answered before exit, and its card finished.
    let rest = conn.drain().await;
    let answer = rest
        .iter()
        .find(|f| f["id"] == id)
        .expect("the prompt was not answered");
    assert_eq!(answer["result"]["stopReason"], "cancelled");
}

#[tokio::test]
async fn sigterm_cancels_the_turn_ends_children_and_exits_0_quickly() {
    let (mut conn, id, sleep_pid) = long_turn().await;
    let pid = conn.child().id().unwrap();
    let started = Instant::now();
    kill(Pid::from_raw(pid as i32), Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), conn.child().wait())
        .await
        .expect("candor did not exit")
        .unwrap();
    let took = started.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    // SIGKILL was sent to its group before candor exited; on a loaded
    // machine the kernel may take a moment to finish it off.
    assert!(
        eventually(Duration::from_millis(500), || !alive(sleep_pid)).await,
        "the command outlived candor"
    );
    let rest = conn.drain().await;
    let answer = rest
        .iter()
        .find(|f| f["id"] == id)
        .expect("the prompt was not answered");
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    let logs = stderr_of(&mut conn).await;
    assert!(logs.contains("shutdown requested"), "{logs}");
}

#[tokio::test]
async fn log_messages_mirrors_every_frame_with_its_direction() {
    let env = TestEnv::new();
    let mut cmd = candor_command(&env);
    cmd.arg("--log-messages").env("RUST_LOG", "off");
    let mut conn = Conn::spawn_with(env, cmd);
    conn.initialize().await;
    conn.send_raw("{oops").await;
    conn.recv().await;
    conn.close_input();
    conn.drain().await;
    conn.child().wait().await.unwrap();
    let logs = stderr_of(&mut conn).await;
    let lines: Vec<&str> = logs.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("<- {") && l.contains("\"initialize\"")),
        "{logs}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("-> {") && l.contains("\"agentInfo\"")),
        "{logs}"
    );
    assert!(lines.contains(&"<- {oops"), "{logs}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("-> {") && l.contains("-32700")),
        "{logs}"
    );
}

#[tokio::test]
async fn the_demo_runs_a_whole_session() {
    let env = TestEnv::new();
    let mut cmd = candor_command(&env);
    cmd.arg("demo")
        .env("TMPDIR", env.dir.path())
        .env("RUST_LOG", "off");
    let output = cmd.output().await.unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        // The project's own hook, trusted for the session by the demo user
        // typing `/trust` (candor takes no editor's automatic answer for it).
        "you ▸ /trust",
        "candor ▸ Trusted for this session",
        "- PreToolUse hook (Bash): sh .claude/hooks/timeout.sh",
        ".claude/hooks/timeout.sh: 313 bytes, sha256:",
        "you ▸ What is in this project?",
        // The card shows what ran, with what the model asked for beside it.
        "✓ execute  `timeout 10s ls`",
        "was     {\"command\":\"ls\"}",
        "by hook sh .claude/hooks/timeout.sh (project settings)",
        "status  pending → in_progress → completed",
        "Read ",
        // A deny rule stops another, through the hook's wrapper.
        "✗ execute  `timeout 10s rm -rf build`",
        "Refused by rule Bash(rm -rf *)",
        // The prompt shows the command that will run.
        "candor asks to run: `timeout 10s bash greet.sh candor`",
        "the model asked for: bash greet.sh candor",
        "Hello, candor!",
        "■ end_turn",
        // The audit trail, original against effective.
        "audit trail",
        "-   \"command\": \"bash greet.sh candor\"",
        "+   \"command\": \"timeout 10s bash greet.sh candor\"",
        "decision: deny by rule:Bash(rm -rf *)",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    for line in out.lines() {
        assert!(line.chars().count() <= 80, "wider than 80 columns: {line}");
    }
    // No colour codes when stdout is not a terminal.
    assert!(!out.contains('\u{1b}'));

    // The hint at the end works as printed: the log is where `candor
    // audit` looks (CANDOR_HOME), and the demo left nothing else behind.
    let hint = out.lines().last().unwrap().trim();
    let session = hint.strip_prefix("candor audit ").expect(hint);
    let mut audit = candor_command(&env);
    audit.args(["audit", session]).env("RUST_LOG", "off");
    let trail = audit.output().await.unwrap();
    assert!(
        trail.status.success(),
        "{}",
        String::from_utf8_lossy(&trail.stderr)
    );
    assert!(
        String::from_utf8_lossy(&trail.stdout).contains("decision: deny by rule:Bash(rm -rf *)")
    );
    let left: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("candor-demo"))
        .collect();
    assert!(left.is_empty(), "the demo left {left:?} behind");
}

#[tokio::test]
async fn a_failing_command_says_why_once() {
    let env = TestEnv::new();
    let mut cmd = candor_command(&env);
    cmd.args(["audit", "no-such-session"]);
    let output = cmd.output().await.unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("no-such-session").count(), 1, "{stderr}");
}

#[tokio::test]
async fn version_and_help_do_not_touch_the_protocol() {
    let env = TestEnv::new();
    let mut cmd = candor_command(&env);
    cmd.arg("--version");
    let output = cmd.output().await.unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("candor {}", env!("CARGO_PKG_VERSION"))
    );
}

/// Provider keys and candor's own settings stay out of the commands the
/// model runs and the hooks a repository ships; the user's own config may
/// let a variable through (`pass_env`), a project's may not.
#[tokio::test]
async fn commands_and_hooks_never_see_the_provider_keys() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "t",
            "Bash",
            json!({"command": "env > bash-env.txt"})
        )])),
        respond(json!([text("Done.")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    env.file(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "env > hook-env.txt"}
        ]}]}})
        .to_string(),
    );
    let config = env.dir.path().join("xdg");
    std::fs::create_dir_all(config.join("candor")).unwrap();
    std::fs::write(
        config.join("candor/config.toml"),
        "pass_env = [\"OPENAI_API_KEY\"]\n",
    )
    .unwrap();
    let mut cmd = candor_command(&env);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .env("OPENAI_API_KEY", "sk-openai-passed")
        .env("XDG_CONFIG_HOME", &config);
    let mut conn = Conn::spawn_with(env, cmd);
    let session = conn.ready().await;
    // The repository's hook runs once the user trusts it.
    conn.prompt(&session, "/trust").await;
    conn.prompt(&session, "go").await;
    for file in ["bash-env.txt", "hook-env.txt"] {
        let seen = std::fs::read_to_string(conn.env.project.join(file)).unwrap();
        assert!(!seen.contains("sk-ant-secret"), "{file}: {seen}");
        assert!(!seen.contains("CANDOR_"), "{file}: {seen}");
        assert!(
            seen.contains("OPENAI_API_KEY=sk-openai-passed"),
            "{file}: {seen}"
        );
        assert!(seen.contains("PATH="), "{file}: {seen}");
    }
}

/// A repository's own `.candor/config.toml` cannot hand the provider keys
/// to its commands: `pass_env` there is refused, naming the file's key, and
/// no model (so no command) runs under it.
#[tokio::test]
async fn a_project_config_cannot_pass_the_keys_to_commands() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "t",
            "Bash",
            json!({"command": "env > bash-env.txt"})
        )])),
        respond(json!([text("Done.")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    env.file(
        ".candor/config.toml",
        "pass_env = [\"ANTHROPIC_API_KEY\"]\n",
    );
    let mut cmd = candor_command(&env);
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-secret");
    let mut conn = Conn::spawn_with(env, cmd);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let said = conn
        .notifications
        .iter()
        .any(|n| n.to_string().contains("sets `pass_env`"));
    assert!(said, "the project's pass_env was not refused by name");
    let seen = std::fs::read_to_string(conn.env.project.join("bash-env.txt")).unwrap_or_default();
    assert!(!seen.contains("sk-ant-secret"), "{seen}");
}

/// Peak resident memory of a process, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_command_printing_hundreds_of_megabytes_keeps_memory_log_and_card_bounded() {
    const BYTES: u64 = 300 * 1024 * 1024;
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "y",
            "Bash",
            json!({"command": format!("yes | head -c {BYTES}; echo; echo LAST")})
        )])),
        respond(json!([text("done")])),
    ]));
    let mut conn = Conn::spawn(env);
    let pid = conn.child().id().unwrap();
    let session = conn.ready().await;
    let updates_before = conn.notifications.len();
    conn.prompt(&session, "go").await;
    let peak = peak_rss_kib(pid);
    assert!(peak < 64 * 1024, "candor peaked at {peak} KiB");
    // The log: bounded records, the total and the file that has it all.
    let path = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let log_bytes = std::fs::metadata(&path).unwrap().len();
    assert!(
        log_bytes < 2 * 1024 * 1024,
        "the log grew to {log_bytes} bytes"
    );
    let log = conn.env.log(&session);
    let result = log.iter().find(|r| r["type"] == "tool/result").unwrap();
    assert_eq!(result["outputFile"]["bytes"], BYTES + 6);
    let file = result["outputFile"]["path"].as_str().unwrap();
    assert_eq!(std::fs::metadata(file).unwrap().len(), BYTES + 6);
    let output = result["output"].as_str().unwrap();
    assert!(
        output.starts_with("y\ny\n") && output.contains("LAST\n"),
        "{output:.200}"
    );
    // The card: updates coalesced, its text bounded, the end shown.
    let card = conn.thread(&session).card("y");
    assert!(
        card.text().contains("LAST"),
        "the last update is always sent"
    );
    assert!(card.text().len() < 600 * 1024);
    let updates = conn.notifications.len() - updates_before;
    assert!(updates < 500, "{updates} updates");
}

/// A Bash call's and a hook's `setsid` children leave their process group;
/// candor, their subreaper, ends them with the call (while it keeps
/// running). A background command's escaped child lives as long as the
/// command, and no longer than the session.
#[tokio::test]
async fn descendants_that_leave_their_group_end_with_their_call_or_the_session() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "fg",
            "Bash",
            json!({"command": "setsid sleep 300 >/dev/null 2>&1 & echo $! > fg.pid; setsid sh -c 'sleep 301' >/dev/null 2>&1 & echo $! > fg2.pid; for i in 1 2 3 4 5; do (sleep 304 >/dev/null 2>&1 &); done"})
        )])),
        respond(json!([tool(
            "bg",
            "Bash",
            json!({"command": "setsid sleep 303 >/dev/null 2>&1 & echo $! > bg.pid; sleep 300", "run_in_background": true})
        )])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    env.file(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "[ -f hook.pid ] || { setsid sleep 302 >/dev/null 2>&1 & echo $! > hook.pid; }; exit 0"}
        ]}]}})
        .to_string(),
    );
    env.trust_project();
    let project = env.project.clone();
    // The pids the command writes are the host's only unconfined (the
    // sandbox's PID namespace ends its processes by itself).
    let env = env.unsandboxed();
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let mut pids = Vec::new();
    // The background command writes its file when it gets to it.
    for f in ["fg.pid", "fg2.pid", "hook.pid", "bg.pid"] {
        pids.push(read_pid(&project.join(f)).await);
    }
    for (name, pid) in ["the Bash call's", "the nested", "the hook's"]
        .iter()
        .zip(&pids)
    {
        assert!(
            eventually(Duration::from_secs(2), || !alive(*pid)).await,
            "{name} setsid child outlived its call"
        );
    }
    assert!(alive(pids[3]), "the background command's child ended early");
    // And none is left a zombie: candor reaps what it adopted and killed.
    let candor = conn.child().id().unwrap();
    let zombies = || {
        std::fs::read_dir(format!("/proc/{candor}/task"))
            .unwrap()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
            })
            .count()
    };
    assert!(
        eventually(Duration::from_secs(2), || zombies() == 0).await,
        "{} zombie(s) left",
        zombies()
    );
    conn.close_input();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.child().wait()).await;
    assert!(
        eventually(Duration::from_secs(2), || !alive(pids[3])).await,
        "the background command's child outlived the session"
    );
}

#[tokio::test]
async fn candor_started_at_a_terminal_says_what_it_is_and_still_serves() {
    // `script` gives candor a pty for stdin and stdout, as a person
    // typing `candor` in a terminal would; Ctrl-D (through the pty's line
    // discipline) is the end of its input.
    let script = std::path::Path::new("/usr/bin/script");
    assert!(
        script.exists(),
        "this test needs util-linux `script` for a pty"
    );
    let env = TestEnv::new();
    let stderr = env.dir.path().join("stderr.txt");
    let inner = format!("exec '{}' 2>'{}'", candor_bin(), stderr.display());
    #[allow(clippy::disallowed_methods)] // the binary under test, on a pty
    let mut cmd = tokio::process::Command::new(script);
    cmd.args(["-qec", &inner, "/dev/null"])
        .env("CANDOR_HOME", &env.home)
        .env("HOME", env.dir.path())
        .env("RUST_LOG", "off")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use tokio::io::AsyncWriteExt as _;
    // A line it answers (it still serves), then Ctrl-D.
    let told = eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&stderr).is_ok_and(|t| t.contains("candor --help"))
    })
    .await;
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n\x04")
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("candor ends at Ctrl-D")
        .unwrap();
    let hint = std::fs::read_to_string(&stderr).unwrap();
    assert!(told, "{hint}");
    assert!(hint.contains("candor is an ACP agent"), "{hint}");
    assert!(hint.contains("`candor demo`"), "{hint}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("\"agentInfo\""),
        "it answered: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    // Started by an editor (pipes), it says nothing of the kind.
    assert_eq!(candor::terminal_hint(false), None);
}
