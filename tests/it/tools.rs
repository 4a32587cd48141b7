//! Tools end to end where the scenario harness cannot look: processes in
//! the process table, and files on disk with their modes.

use std::time::Duration;

use serde_json::{Value, json};

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
    // The pids the command writes are the host's only unconfined (the
    // sandbox's PID namespace ends its processes by itself).
    let env = env.unsandboxed();
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
    // The pids the command writes are the host's only unconfined (the
    // sandbox's PID namespace ends its processes by itself).
    let env = env.unsandboxed();
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

/// An Edit of a file outside the project asks first, and candor reads the
/// file only after the yes: its content is in no record, card or prompt
/// before, and whether the text is there is no oracle.
#[tokio::test]
async fn an_edit_outside_the_project_reads_nothing_before_the_answer() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool(
                "a",
                "Edit",
                json!({"file_path": "../secret.txt", "old_string": "key=1", "new_string": "key=2"})
            ),
            tool(
                "b",
                "Edit",
                json!({"file_path": "../secret.txt", "old_string": "not there", "new_string": "x"})
            ),
            tool(
                "c",
                "Edit",
                json!({"file_path": "../secret.txt", "old_string": "key=1", "new_string": "key=3"})
            ),
        ])),
        respond(json!([text("done")])),
    ]));
    let secret = env.dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET\nkey=1\n").unwrap();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.answer_permissions(&["reject_once", "reject_once", "allow_once"]);
    conn.prompt(&session, "go").await;
    // Rejected: nothing of the file anywhere, and the missing text asked
    // like the present one (no early "not found").
    let log = std::fs::read_to_string(
        conn.env
            .home
            .join("sessions")
            .join(format!("{session}.jsonl")),
    )
    .unwrap();
    let before_yes = &log[..log.find("\"allowed_once\"").unwrap()];
    assert!(!before_yes.contains("TOP SECRET"), "{before_yes}");
    assert_eq!(conn.permission_requests.len(), 3);
    for request in &conn.permission_requests {
        assert!(!request.to_string().contains("TOP SECRET"), "{request}");
    }
    let first = card_frames(&conn, &session, "a")[0].to_string();
    assert!(first.contains("candor has not read this file"), "{first}");
    assert!(
        conn.permission_requests[0]
            .to_string()
            .contains("candor has not read this file")
    );
    let call = record(&conn, &session, "tool/call", "b").unwrap();
    assert_eq!(call["preview"]["unread"], true);
    assert_eq!(call["preview"]["oldText"], "not there");
    // Allowed: read then, and changed.
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "TOP SECRET\nkey=3\n"
    );
    assert_eq!(conn.thread(&session).card("c").status, "completed");
}

/// The answer binds to the file the diff was computed on: a file that
/// changes before the answer is previewed again and asked again, and what
/// runs is what the second prompt showed (4 replacements, not 1).
#[tokio::test]
async fn a_file_that_changes_before_the_answer_is_asked_about_again() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "e",
            "Edit",
            json!({"file_path": "notes.txt", "old_string": "foo", "new_string": "bar", "replace_all": true})
        )])),
        respond(json!([text("done")])),
    ]));
    env.file("notes.txt", "foo\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.hold_permissions();
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    let request = loop {
        let frame = conn.recv().await;
        if frame["method"] == "session/request_permission" {
            break frame;
        }
    };
    // While the user looks at one replacement, the file grows three more.
    std::fs::write(conn.env.project.join("notes.txt"), "foo\nfoo\nfoo\nfoo\n").unwrap();
    conn.release_permissions();
    let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}});
    conn.send_raw(&reply.to_string()).await;
    let response = conn.response(&id).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(conn.permission_requests.len(), 2, "asked again");
    let second = conn.permission_requests[1].to_string();
    assert!(second.contains("bar\\nbar\\nbar\\nbar\\n"), "{second}");
    assert!(
        second.contains("The file changed before your answer"),
        "{second}"
    );
    assert_eq!(
        std::fs::read_to_string(conn.env.project.join("notes.txt")).unwrap(),
        "bar\nbar\nbar\nbar\n"
    );
    let log = conn.env.log(&session);
    let resolved: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "permission/resolved")
        .collect();
    assert_eq!(resolved.len(), 2);
    assert_ne!(resolved[0]["base"], resolved[1]["base"]);
    let asked: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "permission/requested")
        .collect();
    assert_eq!(asked[1]["preview"]["newText"], "bar\nbar\nbar\nbar\n");
}
