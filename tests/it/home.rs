//! What candor keeps of the user's (`CANDOR_HOME`), and where it finds the
//! user's own settings when the editor starts it without `HOME`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// Every file and directory under `dir` (and `dir`), with its mode bits.
fn modes(dir: &Path) -> Vec<(PathBuf, u32, bool)> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        found.push((
            path.clone(),
            meta.permissions().mode() & 0o777,
            meta.is_dir(),
        ));
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                todo.push(entry.unwrap().path());
            }
        }
    }
    found
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// A session that writes everything candor writes under `CANDOR_HOME`: its
/// log, the environment file of a SessionStart hook, the trust answer
/// (`trust.json`), an image in the content store, a command's whole output
/// spilled beside the log, and a deleted session's log: every file is the
/// user's alone (0600), every directory too (0700), whatever the umask.
#[tokio::test]
async fn everything_candor_keeps_is_the_users_alone() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "big",
            "Bash",
            json!({"command": "head -c 40000 /dev/zero | tr '\\0' 'a'; echo"})
        )])),
        respond(json!([text("done")])),
        respond(json!([text("a picture")])),
        respond(json!([text("bye")])),
    ]));
    // The project wants an allow rule (trusted with `/trust always`, which
    // is kept),
    // and the user has a SessionStart hook (so the session has an
    // environment file for it).
    write_json(
        &env.project.join(".claude/settings.json"),
        &json!({"permissions": {"allow": ["Bash(head *)"]}}),
    );
    write_json(
        &env.dir.path().join(".claude/settings.json"),
        &json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}),
    );
    let mut cmd = candor_command(&env);
    cmd.env("RUST_LOG", "off");
    let mut conn = Conn::spawn_with(env, umask_000(cmd));
    let session = conn.ready().await;
    conn.prompt(&session, "/trust always").await;
    conn.prompt(&session, "go").await;
    let answer = conn
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "mimeType": "image/png", "data": PNG}
            ]}),
        )
        .await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let other = conn.new_session().await;
    conn.prompt(&other, "hello").await;
    conn.call("session/delete", json!({"sessionId": other}))
        .await;
    let home = conn.env.home.clone();
    let sessions = home.join("sessions");
    // What the session wrote is there (else the test proves nothing).
    for path in [
        home.join("trust.json"),
        sessions.join(format!("{session}.jsonl")),
        sessions.join(format!("{session}.env")),
        sessions.join(format!("{session}.content")),
        sessions.join(format!("{session}.outputs")),
        sessions.join(format!("deleted/{other}.jsonl")),
    ] {
        assert!(path.exists(), "{} was not written", path.display());
    }
    assert!(
        std::fs::read_dir(sessions.join(format!("{session}.outputs")))
            .unwrap()
            .count()
            == 1
    );
    let open: Vec<String> = modes(&home)
        .into_iter()
        .filter(|(_, mode, dir)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(path, mode, _)| format!("{} {mode:o}", path.display()))
        .collect();
    assert!(open.is_empty(), "not the user's alone: {open:?}");
    // And so after the session ends (its environment file goes).
    let env = conn.end().await;
    let open: Vec<String> = modes(&env.home)
        .into_iter()
        .filter(|(_, mode, dir)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(path, mode, _)| format!("{} {mode:o}", path.display()))
        .collect();
    assert!(open.is_empty(), "not the user's alone: {open:?}");
}

/// `cmd` (candor) started by a shell with umask 000: a file or directory
/// candor does not create with a mode of its own is then open to all.
#[allow(clippy::disallowed_methods)] // the test starts the binary under test
fn umask_000(cmd: tokio::process::Command) -> tokio::process::Command {
    let std = cmd.as_std();
    let mut shell = tokio::process::Command::new("sh");
    shell
        .arg("-c")
        .arg("umask 000 && exec \"$0\"")
        .arg(std.get_program())
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in std.get_envs() {
        if let Some(value) = value {
            shell.env(name, value);
        }
    }
    shell
}

/// `candor doctor --json` in the test project, with exactly `vars` (and
/// `PATH`) in its environment: the report.
fn doctor_with(env: &TestEnv, vars: &[(&str, &Path)]) -> Value {
    let script = env.dir.path().join("doctor-script.json");
    std::fs::write(&script, json!({"responses": []}).to_string()).unwrap();
    #[allow(clippy::disallowed_methods)] // the test runs the binary under test
    let mut cmd = std::process::Command::new(candor_bin());
    cmd.args(["doctor", "--json", "--cwd"])
        .arg(&env.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CANDOR_PROVIDER", "scripted")
        .env("CANDOR_SCRIPT", &script)
        .env("RUST_LOG", "off");
    for (name, value) in vars {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// An editor that starts candor with only `PATH` (avante.nvim does): the
/// user's home is the password database's, so their `~/.claude`
/// settings, `~/.codex` and candor config are where a session looks (only
/// looked at here: the test does not write in the real home), and nothing
/// says the home is unknown. The same with `HOME` pointing elsewhere reads
/// that home instead.
#[test]
fn without_home_the_users_settings_are_found_through_the_password_database() {
    let env = TestEnv::new();
    let report = doctor_with(&env, &[("CANDOR_HOME", &env.home)]);
    let path_of = |report: &Value, tool: &str| -> String {
        report["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["tool"] == tool && f["source"] == "user")
            .unwrap_or_else(|| panic!("no user {tool} file in {report}"))["path"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let notices = report["notices"].to_string();
    match candor::config::passwd_home() {
        Ok(home) => {
            assert_eq!(
                path_of(&report, "Claude Code"),
                home.join(".claude/settings.json").display().to_string(),
                "{report}"
            );
            assert!(
                path_of(&report, "Codex").starts_with(&home.join(".codex").display().to_string()),
                "{report}"
            );
            assert!(!notices.contains("cannot find your home"), "{notices}");
        }
        // A user the password database does not know: the report says
        // what was not read.
        Err(_) => assert!(notices.contains("cannot find your home"), "{notices}"),
    }
    let elsewhere = doctor_with(
        &env,
        &[("CANDOR_HOME", &env.home), ("HOME", env.dir.path())],
    );
    assert_eq!(
        path_of(&elsewhere, "Claude Code"),
        env.dir
            .path()
            .join(".claude/settings.json")
            .display()
            .to_string()
    );
}

/// The configuration of candor started with neither `HOME` nor a password
/// database entry (a user id it does not know), for the test's state.
fn homeless(env: &TestEnv) -> candor::Config {
    let home = env.home.display().to_string();
    let script = env.script.as_ref().unwrap().display().to_string();
    let managed = env.dir.path().join("managed").display().to_string();
    let vars: std::collections::HashMap<&str, String> = [
        ("CANDOR_HOME", home),
        ("CANDOR_PROVIDER", "scripted".to_owned()),
        ("CANDOR_SCRIPT", script),
        ("CANDOR_CLAUDE_MANAGED_DIR", managed),
    ]
    .into_iter()
    .collect();
    candor::Config::from_vars_with(
        |name| vars.get(name).cloned(),
        || Err("the password database has no entry for user id 4242".into()),
    )
}

/// No home at all: the user's settings cannot be read, and the session
/// says so, and which. For a client without `session.notices` the notice,
/// recorded when the session opened, is not sent then (no turn runs; no
/// thought, no message outside a turn) but opens the first turn, as a
/// message marked as candor's; a replay shows it in the same place. A
/// client with `session.notices` gets a `notice` at once.
#[tokio::test]
async fn without_any_home_every_session_says_which_settings_it_did_not_read() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("hi there")])),
        respond(json!([text("again")])),
    ]));
    let config = homeless(&env);
    assert_eq!(config.user_home, None);
    let mut conn = Conn::in_process_with(env, config.clone());
    let session = conn.ready().await;
    while conn
        .try_recv(std::time::Duration::from_millis(300))
        .await
        .is_some()
    {}
    assert!(
        told(&conn).is_empty(),
        "told outside a turn: {:?}",
        told(&conn)
    );
    conn.prompt(&session, "hello").await;
    let said = told(&conn);
    assert_eq!(said.len(), 1, "{said:?}");
    for part in [
        "cannot find your home directory (HOME is not set, and the password database has no entry for user id 4242)",
        "~/.claude/settings.json",
        "~/.codex",
        "~/.config/candor/config.toml",
        "Set HOME",
    ] {
        assert!(said[0].contains(part), "{part:?} not in {}", said[0]);
    }
    let thread = conn.thread(&session);
    assert!(
        thread
            .notices
            .starts_with("> candor (warning): candor cannot find")
    );
    assert_eq!(thread.thoughts, "");
    assert_eq!(thread.agent_text, "hi there");
    let live: Vec<Value> = thread
        .updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .cloned()
        .collect();
    let env = conn.end().await;

    // Loaded again: the replay shows the notice where live did (and the
    // notice of this opening waits for the next turn).
    let mut again = Conn::in_process_with(env, config.clone());
    again.initialize().await;
    let cwd = again.env.project.clone();
    again
        .call(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        )
        .await;
    let replayed: Vec<Value> = again
        .thread(&session)
        .updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .cloned()
        .collect();
    assert_eq!(replayed, live);
    again.prompt(&session, "and now?").await;
    assert_eq!(told(&again).len(), 2, "{:?}", told(&again));
    let env = again.end().await;

    // A client that takes notices: a `notice`, at once.
    let mut noticing = Conn::in_process_with(env, config);
    noticing
        .initialize_with(json!({"session": {"notices": {}}}))
        .await;
    let other = noticing.new_session().await;
    while noticing
        .try_recv(std::time::Duration::from_millis(300))
        .await
        .is_some()
    {}
    let notices: Vec<&Value> = noticing
        .thread(&other)
        .updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "notice")
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["severity"], "warning");
    assert!(
        notices[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("candor cannot find your home directory"),
        "{}",
        notices[0]
    );
}

/// Started with only `PATH` (and its own settings), candor gives the
/// commands and hooks it runs the `HOME` it found in the password
/// database, so a hook written as `"$HOME/.claude/hooks/x.sh"` finds its
/// script. (The user's real settings are not read here: both bridges are
/// off.)
#[tokio::test]
async fn without_home_commands_get_the_home_candor_found() {
    let Ok(home) = candor::config::passwd_home() else {
        // A user the password database does not know: nothing to find
        // (the notice test above covers that case).
        return;
    };
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "h",
            "Bash",
            json!({"command": "printf 'home=%s' \"$HOME\""})
        )])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"permissions": {"allow": ["Bash(printf *)"]}}));
    let mut cmd = candor_command(&env);
    cmd.env_remove("HOME")
        .env("CANDOR_CLAUDE_HOOKS", "0")
        .env("CANDOR_CODEX_HOOKS", "0")
        .env("RUST_LOG", "off");
    let mut conn = Conn::spawn_with(env, cmd);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let result = record(&conn, &session, "tool/result", "h").unwrap();
    assert_eq!(
        result["output"].as_str().unwrap().trim_end(),
        format!("home={}", home.display()),
        "{result}"
    );
}
