//! Tools end to end where the scenario harness cannot look: processes in
//! the process table, and files on disk with their modes.

use std::time::Duration;

use serde_json::json;

use crate::support::*;

/// A background command that records its own pid (bash `exec`s into sleep,
/// so the pid is the sleeping process).
fn background(id: &str) -> serde_json::Value {
    tool(
        id,
        "Bash",
        json!({"command": "echo $$ > bg.pid; exec sleep 30", "run_in_background": true}),
    )
}

#[tokio::test]
async fn a_cancel_ends_background_commands_even_between_turns() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([background("s")])),
        respond(json!([text("started")])),
    ]));
    let pid_file = env.project.join("bg.pid");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "start it").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let pid = read_pid(&pid_file).await;
    assert!(
        alive(pid),
        "the background command should still run after the turn"
    );
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    assert!(
        eventually(Duration::from_secs(3), || !alive(pid)).await,
        "the background command outlived the cancel"
    );
}

#[tokio::test]
async fn background_commands_end_with_candor() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([background("s")])),
        respond(json!([text("started")])),
    ]));
    let pid_file = env.project.join("bg.pid");
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    conn.prompt(&session, "start it").await;
    let pid = read_pid(&pid_file).await;
    assert!(alive(pid));
    conn.close_input();
    conn.drain().await;
    let status = tokio::time::timeout(Duration::from_secs(5), conn.child().wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    assert!(
        eventually(Duration::from_secs(3), || !alive(pid)).await,
        "the background command outlived candor"
    );
}

#[tokio::test]
async fn writes_are_atomic_keep_modes_and_land_where_the_card_says() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "w",
            "Write",
            json!({"file_path": "bin/run.sh", "content": "#!/bin/sh\necho new\n"})
        )])),
        respond(json!([text("done")])),
    ]));
    let script_path = env.file("bin/run.sh", "#!/bin/sh\necho old\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    assert_eq!(
        std::fs::read_to_string(&script_path).unwrap(),
        "#!/bin/sh\necho new\n"
    );
    assert_eq!(
        std::fs::metadata(&script_path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    let leftovers: Vec<_> = std::fs::read_dir(script_path.parent().unwrap())
        .unwrap()
        .collect();
    assert_eq!(leftovers.len(), 1, "a temporary file was left behind");
    let card = conn.thread(&session).card("w").clone();
    assert_eq!(card.raw_input["file_path"], json!(script_path));
    assert_eq!(card.content[0]["type"], "diff");
    assert_eq!(card.content[0]["path"], json!(script_path));
    assert_eq!(card.content[0]["oldText"], "#!/bin/sh\necho old\n");
    assert_eq!(
        card.locations,
        vec![json!({"path": script_path, "line": 2})]
    );
    // The permission prompt showed the same diff before anything was written.
    let asked = &conn.permission_requests[0]["toolCall"];
    assert_eq!(asked["content"][0], card.content[0]);
}

/// Files that are not files: a symlink to /dev/zero, to /dev/stdin (candor's
/// own input is the editor's frames), a FIFO. Each Read and Edit is a failed
/// card with the reason, at once; nothing hangs, nothing grows, and the
/// session's frames are not handed to the model.
#[tokio::test]
async fn devices_fifos_and_stdin_are_refused_not_read() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool("zero", "Read", json!({"file_path": "zero"})),
            tool("stdin", "Read", json!({"file_path": "stdin"})),
            tool("fifo", "Read", json!({"file_path": "fifo"})),
            tool(
                "edit",
                "Edit",
                json!({"file_path": "zero", "old_string": "a", "new_string": "b"})
            ),
        ])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    std::os::unix::fs::symlink("/dev/zero", env.project.join("zero")).unwrap();
    std::os::unix::fs::symlink("/dev/stdin", env.project.join("stdin")).unwrap();
    nix::unistd::mkfifo(&env.project.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    let answer = tokio::time::timeout(Duration::from_secs(10), conn.prompt(&session, "go"))
        .await
        .expect("the turn hung on a file that is not a file");
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let thread = conn.thread(&session);
    for id in ["zero", "stdin", "fifo", "edit"] {
        let card = thread.card(id);
        assert_eq!(card.status, "failed", "{id}: {}", card.text());
        assert!(
            card.text().contains("only regular files"),
            "{id}: {}",
            card.text()
        );
    }
    let result = result_in_request(&conn, 1, "stdin").to_string();
    assert!(
        !result.contains("jsonrpc"),
        "the editor's frames reached the model: {result}"
    );
}
