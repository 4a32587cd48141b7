//! MCP servers: the editor's and the user's tools through the same settle,
//! cards, log, history and replay as candor's own, against the test server
//! (`candor mcp-test-server`, `src/mcp_test_server.rs`) over stdio and HTTP.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    Conn, MCP_TEST_SERVER, TestEnv, alive, audit, card_frames, eventually, mcp_test_server, record,
    respond, script, text, tool,
};

/// What the test server saw (its `--log`), one JSON value a line.
fn seen(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The calls the server received.
fn calls(log: &std::path::Path) -> Vec<Value> {
    seen(log)
        .into_iter()
        .filter(|v| v.get("tool").is_some())
        .collect()
}

/// An ACP stdio entry for the test server named `name`.
fn stdio(name: &str, log: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec![json!(MCP_TEST_SERVER), json!("--log"), json!(log)];
    args.extend(extra.iter().map(|a| json!(a)));
    json!({"name": name, "command": mcp_test_server(), "args": args, "env": []})
}

fn mcp_call(id: &str, tool_name: &str, input: Value) -> Value {
    tool(id, &format!("mcp__test__{tool_name}"), input)
}

/// A scripted session whose first answer is `calls`, then "done".
fn scripted(calls: Vec<Value>) -> TestEnv {
    TestEnv::scripted(script(vec![
        respond(json!(calls)),
        respond(json!([text("done")])),
    ]))
}

async fn open(conn: &mut Conn, servers: Value) -> String {
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let result = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": servers}))
        .await;
    result["sessionId"].as_str().unwrap().to_owned()
}

fn notices(conn: &Conn, session: &str) -> Vec<String> {
    conn.env
        .log(session)
        .into_iter()
        .filter(|r| r["type"] == "session/notice")
        .map(|r| r["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn initialize_says_which_mcp_transports_candor_takes() {
    let mut conn = Conn::in_process(TestEnv::new());
    let init = conn.initialize().await;
    assert_eq!(
        init["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": true})
    );
}

#[tokio::test]
async fn a_hook_rewrite_of_an_mcp_call_is_what_the_server_gets_the_card_shows_the_log_keeps_and_the_replay_repeats()
 {
    let env = scripted(vec![mcp_call("m1", "echo", json!({"text": "original"}))]).with_policy(
        json!({"hooks": [{"id": "scrub", "tool": "mcp__test__echo", "decision": "allow",
            "rewrite": {"text": {"replace": "original", "with": "rewritten"}}}]}),
    );
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    let answer = conn.prompt(&session, "go").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    // What the server received.
    let got = calls(&log);
    assert_eq!(
        got,
        [json!({"tool": "echo", "arguments": {"text": "rewritten"}})]
    );
    // The record: effective and original arguments, who rewrote, which
    // server and tool; tool/call on disk before the request went out.
    let call = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(call["tool"], "mcp__test__echo");
    assert_eq!(call["arguments"], json!({"text": "rewritten"}));
    assert_eq!(call["originalArguments"], json!({"text": "original"}));
    assert_eq!(call["rewrittenBy"], json!(["scrub"]));
    assert_eq!(call["mcp"]["server"], "test");
    assert_eq!(call["mcp"]["tool"], "echo");
    let result = record(&conn, &session, "tool/result", "m1").unwrap();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["output"], "echo: rewritten");
    // The card: first frame already the effective arguments, titled by
    // server and tool, ending completed with the server's text.
    let frames = card_frames(&conn, &session, "m1");
    assert_eq!(frames[0]["sessionUpdate"], "tool_call");
    assert_eq!(frames[0]["title"], "test: echo");
    assert_eq!(frames[0]["rawInput"], json!({"text": "rewritten"}));
    for f in &frames {
        if let Some(raw) = f.get("rawInput") {
            assert_eq!(
                raw,
                &json!({"text": "rewritten"}),
                "a frame showed another input"
            );
        }
    }
    let last = frames.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert!(last["content"].to_string().contains("echo: rewritten"));
    // The model's next request: the result under its id, with the note
    // saying what ran; the MCP tools were offered with their schemas.
    let requests = conn.env.model_requests();
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"mcp__test__echo") && offered.contains(&"Bash"));
    let echo = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__test__echo")
        .unwrap();
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    let second = requests[1].to_string();
    assert!(second.contains("echo: rewritten"), "{second}");
    assert!(
        second.contains("rewrote this call before it ran"),
        "{second}"
    );
    // The audit names server and tool.
    let home = conn.env.home.clone();
    let trail = audit(&home, &session, false);
    assert!(
        trail.contains("mcp__test__echo (MCP server test, tool echo)"),
        "{trail}"
    );
    let shown: Vec<Value> = card_frames(&conn, &session, "m1");
    let env = conn.end().await;

    // A replay after session/load shows the very same card.
    let mut again = Conn::in_process(env);
    again.initialize().await;
    let cwd = again.env.project.clone();
    let loaded = again
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": [stdio("test", &log, &[])]}),
        )
        .await;
    assert!(loaded.get("error").is_none(), "{loaded}");
    assert_eq!(card_frames(&again, &session, "m1"), shown);
}

#[tokio::test]
async fn a_deny_rule_on_an_mcp_tool_keeps_the_call_from_the_server() {
    let env = scripted(vec![mcp_call("m1", "echo", json!({"text": "hi"}))])
        .with_policy(json!({"permissions": {"deny": ["mcp__test__echo"]}}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    conn.prompt(&session, "go").await;
    let call = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(call["decision"]["outcome"], "deny");
    assert_eq!(call["decision"]["by"], "rule:mcp__test__echo");
    assert!(calls(&log).is_empty(), "the server got a denied call");
    let frames = card_frames(&conn, &session, "m1");
    assert_eq!(frames.last().unwrap()["status"], "failed");
}

#[tokio::test]
async fn an_mcp_tool_asks_unless_its_server_marks_it_read_only() {
    let env = scripted(vec![
        mcp_call("m1", "echo", json!({"text": "hi"})),
        mcp_call("m2", "lookup", json!({"key": "k"})),
    ]);
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["allow_always"]);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    conn.prompt(&session, "go").await;
    // echo asked (once), lookup ran on its readOnlyHint and openWorldHint
    // false (the editor's server: the user's own).
    assert_eq!(conn.permission_requests.len(), 1);
    let asked = &conn.permission_requests[0];
    assert_eq!(asked["toolCall"]["title"], "test: echo");
    assert_eq!(asked["toolCall"]["rawInput"], json!({"text": "hi"}));
    let options: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert!(
        options.contains(&"Always allow mcp__test__echo in this session"),
        "{options:?}"
    );
    let lookup = record(&conn, &session, "tool/call", "m2").unwrap();
    assert_eq!(lookup["decision"]["outcome"], "allow");
    assert_eq!(card_frames(&conn, &session, "m2")[0]["kind"], "read");
    assert_eq!(calls(&log).len(), 2);
    // The log keeps what the server said apart from what candor read.
    assert_eq!(
        lookup["mcp"]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(lookup["mcp"]["readOnly"], true);
    assert_eq!(lookup["mcp"]["openWorld"], false);
    let echo = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(echo["mcp"]["annotations"], json!({}));
    assert_eq!(echo["mcp"]["readOnly"], false);
    assert_eq!(echo["mcp"]["openWorld"], true);
    assert!(
        echo["mcp"]["reading"]
            .as_str()
            .unwrap()
            .contains("readOnlyHint absent"),
        "{echo}"
    );
}

/// The `tool/call` record and the card of one call to `tool_name` of the
/// editor's test server (the user says no if asked).
async fn settled_call(
    tool_name: &str,
    input: Value,
    configure: impl FnOnce(&mut candor::Config),
) -> (Value, Vec<Value>) {
    let env = scripted(vec![mcp_call("m1", tool_name, input)]);
    let log = env.dir.path().join("server.jsonl");
    let mut config = env.config();
    configure(&mut config);
    let mut conn = Conn::in_process_with(env, config);
    conn.answer_permissions(&["reject_once"]);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    conn.prompt(&session, "go").await;
    let call = record(&conn, &session, "tool/call", "m1").unwrap();
    (call, card_frames(&conn, &session, "m1"))
}

#[tokio::test]
async fn an_mcp_tool_that_says_only_read_only_asks_since_it_may_send_data_out() {
    let (call, frames) = settled_call("fetch", json!({}), |_| ()).await;
    assert_eq!(call["decision"]["outcome"], "ask", "{call}");
    let reason = call["decision"]["reason"].as_str().unwrap();
    assert!(reason.contains("openWorldHint absent"), "{reason}");
    // What the server said: only readOnlyHint; no openWorld claim it never
    // made.
    assert_eq!(call["mcp"]["annotations"], json!({"readOnlyHint": true}));
    assert_eq!(call["mcp"]["readOnly"], true);
    assert_eq!(call["mcp"]["openWorld"], true);
    assert_eq!(frames[0]["kind"], "fetch");
}

#[tokio::test]
async fn an_mcp_tool_that_says_read_only_and_open_world_asks() {
    let (call, _) = settled_call("browse", json!({}), |_| ()).await;
    assert_eq!(call["decision"]["outcome"], "ask", "{call}");
    assert!(
        call["decision"]["reason"]
            .as_str()
            .unwrap()
            .contains("openWorldHint true"),
        "{call}"
    );
}

#[tokio::test]
async fn an_mcp_tool_that_says_read_only_and_destructive_is_read_as_not_read_only() {
    let (call, frames) = settled_call("wipe", json!({}), |_| ()).await;
    assert_eq!(call["decision"]["outcome"], "ask", "{call}");
    assert_eq!(
        call["mcp"]["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": true, "openWorldHint": false})
    );
    assert_eq!(call["mcp"]["readOnly"], false);
    assert!(
        call["mcp"]["reading"]
            .as_str()
            .unwrap()
            .contains("destructiveHint"),
        "{call}"
    );
    // Neither `read` nor `fetch` (ACP leaves the default `other` out).
    assert!(
        frames[0].get("kind").is_none_or(|k| k == "other"),
        "{}",
        frames[0]
    );
}

#[tokio::test]
async fn mcp_trust_annotations_off_in_the_users_config_makes_a_read_only_tool_ask() {
    let (call, frames) = settled_call("lookup", json!({"key": "k"}), |config| {
        config.user_settings = Ok(candor::config::Settings {
            mcp_trust_annotations: Some(false),
            ..Default::default()
        });
    })
    .await;
    assert_eq!(call["decision"]["outcome"], "ask", "{call}");
    assert!(
        call["decision"]["reason"]
            .as_str()
            .unwrap()
            .contains("mcp_trust_annotations = false"),
        "{call}"
    );
    assert_eq!(call["mcp"]["readOnly"], false);
    // Neither `read` nor `fetch` (ACP leaves the default `other` out).
    assert!(
        frames[0].get("kind").is_none_or(|k| k == "other"),
        "{}",
        frames[0]
    );
}

#[tokio::test]
async fn a_projects_mcp_json_server_cannot_make_its_tool_run_unasked() {
    let env = scripted(vec![tool("m1", "mcp__proj__lookup", json!({"key": "k"}))]);
    let log = env.dir.path().join("server.jsonl");
    let entry = json!({"command": mcp_test_server(), "args": [MCP_TEST_SERVER, "--log", log]});
    env.file(
        ".mcp.json",
        &json!({"mcpServers": {"proj": entry}}).to_string(),
    );
    let user = env.dir.path().join(".claude");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("settings.json"),
        json!({"enabledMcpjsonServers": ["proj"]}).to_string(),
    )
    .unwrap();
    // Trusted, and its server enabled: it runs, but its word on its tools
    // lets nothing run unasked.
    env.trust_project();
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["reject_once"]);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let call = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(call["decision"]["outcome"], "ask", "{call}");
    let reason = call["decision"]["reason"].as_str().unwrap();
    assert!(reason.contains(".mcp.json"), "{reason}");
    assert_eq!(
        call["mcp"]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(call["mcp"]["readOnly"], false);
    assert!(
        calls(&log).is_empty(),
        "the refused call reached the server"
    );
}

#[tokio::test]
async fn a_read_only_closed_world_tool_of_the_users_codex_server_runs_unasked_and_the_audit_shows_why()
 {
    let env = scripted(vec![mcp_call("m1", "lookup", json!({"key": "k"}))]);
    let log = env.dir.path().join("server.jsonl");
    let codex = env.dir.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("config.toml"),
        format!(
            "[mcp_servers.test]\ncommand = {:?}\nargs = [\"mcp-test-server\", \"--log\", {:?}]\n",
            mcp_test_server().display().to_string(),
            log.display().to_string()
        ),
    )
    .unwrap();
    let mut config = env.config();
    config.codex = Some(candor::config::CodexLocations { home: Some(codex) });
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.prompt(&session, "go").await;
    let call = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(call["decision"]["outcome"], "allow", "{call}");
    assert_eq!(calls(&log).len(), 1);
    let home = conn.env.home.clone();
    let trail = audit(&home, &session, false);
    assert!(
        trail.contains("annotations: readOnlyHint true, openWorldHint false"),
        "{trail}"
    );
    assert!(
        trail.contains("read as: read-only, closed-world"),
        "{trail}"
    );
    let json = audit(&home, &session, true);
    assert!(json.contains("\"annotations\""), "{json}");
}

#[tokio::test]
async fn plan_mode_asks_for_an_mcp_tool_that_may_change_things_and_runs_a_read_only_one() {
    let env = scripted(vec![
        mcp_call("m1", "echo", json!({"text": "hi"})),
        mcp_call("m2", "lookup", json!({"key": "k"})),
    ])
    .with_policy(json!({"mode": "plan"}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    conn.answer_permissions(&["reject_once"]);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    conn.prompt(&session, "go").await;
    let echo = record(&conn, &session, "tool/call", "m1").unwrap();
    assert_eq!(echo["decision"]["outcome"], "ask");
    assert_eq!(echo["decision"]["by"], "mode:plan");
    let lookup = record(&conn, &session, "tool/call", "m2").unwrap();
    assert_eq!(lookup["decision"]["outcome"], "allow");
    let got: Vec<Value> = calls(&log).into_iter().map(|c| c["tool"].clone()).collect();
    assert_eq!(
        got,
        [json!("lookup")],
        "the refused call reached the server"
    );
}

#[tokio::test]
async fn cancel_during_a_slow_mcp_call_tells_the_server_ends_the_card_and_leaves_no_process() {
    let env = scripted(vec![mcp_call("m1", "slow", json!({"seconds": 30}))])
        .with_policy(json!({"mode": "bypassPermissions"}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    assert!(
        eventually(Duration::from_secs(20), || calls(&log).len() == 1).await,
        "the slow call never reached the server"
    );
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answer = conn.response(&id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    assert!(
        eventually(Duration::from_secs(10), || seen(&log)
            .iter()
            .any(|v| v["cancelled"] == "slow"))
        .await,
        "the server was not told of the cancel: {:?}",
        seen(&log)
    );
    let frames = card_frames(&conn, &session, "m1");
    assert_eq!(frames.last().unwrap()["status"], "failed");
    let result = record(&conn, &session, "tool/result", "m1").unwrap();
    assert_eq!(result["status"], "cancelled");
    let pid = seen(&log)
        .iter()
        .find_map(|v| v["started"].as_u64())
        .unwrap() as u32;
    assert!(alive(pid));
    conn.end().await;
    assert!(
        eventually(Duration::from_secs(10), || !alive(pid)).await,
        "the MCP server outlived its session"
    );
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_fails_the_card_is_a_notice_and_the_next_prompt_works() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([mcp_call("m1", "crash", json!({}))])),
        respond(json!([text("it crashed")])),
        respond(json!([text("still here")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    assert_eq!(
        conn.prompt(&session, "go").await["result"]["stopReason"],
        "end_turn"
    );
    let result = record(&conn, &session, "tool/result", "m1").unwrap();
    assert_eq!(result["status"], "failed");
    assert!(
        result["output"].as_str().unwrap().contains("test"),
        "{result}"
    );
    assert_eq!(
        card_frames(&conn, &session, "m1").last().unwrap()["status"],
        "failed"
    );
    assert_eq!(
        conn.prompt(&session, "again").await["result"]["stopReason"],
        "end_turn"
    );
    let said = notices(&conn, &session);
    assert!(
        said.iter()
            .any(|n| n.contains("The MCP server test stopped") && n.contains("crashing as asked")),
        "{said:?}"
    );
}

#[tokio::test]
async fn a_server_that_never_starts_leaves_the_session_usable_and_says_so() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("hello")]))]));
    let log = env.dir.path().join("server.jsonl");
    let mut config = env.config();
    config.env_settings.mcp_startup_wait = Some(1);
    let mut conn = Conn::in_process_with(env, config);
    let started = std::time::Instant::now();
    let session = open(
        &mut conn,
        json!([
            stdio("stuck", &log, &["--hang"]),
            stdio("broken", &log, &["--exit-at-start"])
        ]),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "session/new waited for servers"
    );
    assert_eq!(
        conn.prompt(&session, "hi").await["result"]["stopReason"],
        "end_turn"
    );
    let said = notices(&conn, &session);
    assert!(
        said.iter()
            .any(|n| n.contains("The MCP server stuck is still starting")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|n| n.contains("The MCP server broken did not start")
                && n.contains("refusing to start")),
        "{said:?}"
    );
}

/// A session whose server is reached over the network (`flag` starts the
/// test server so, `kind` and `path` are the ACP entry's): one call.
async fn over_the_network(flag: &str, kind: &str, path: &str, headers: Value) {
    let text = format!("over {kind}");
    let env = scripted(vec![mcp_call("m1", "echo", json!({ "text": text }))])
        .with_policy(json!({"mode": "bypassPermissions"}));
    let log = env.dir.path().join("server.jsonl");
    let (_server, addr) = listening(flag, &log).await;
    let mut conn = Conn::in_process(env);
    let session = open(
        &mut conn,
        json!([{"type": kind, "name": "test", "url": format!("http://{addr}{path}"), "headers": headers}]),
    )
    .await;
    assert_eq!(
        conn.prompt(&session, "go").await["result"]["stopReason"],
        "end_turn"
    );
    assert_eq!(
        record(&conn, &session, "tool/result", "m1").unwrap()["output"],
        format!("echo: {text}")
    );
    assert_eq!(calls(&log).len(), 1);
}

#[tokio::test]
async fn a_server_over_streamable_http_serves_its_tools() {
    over_the_network(
        "--http",
        "http",
        "/mcp",
        json!([{"name": "X-Test", "value": "1"}]),
    )
    .await;
}

/// The test server listening with `flag` (`--http`, `--sse`), and its
/// address.
async fn listening(flag: &str, log: &std::path::Path) -> (tokio::process::Child, String) {
    #[allow(clippy::disallowed_methods)] // the test's own server
    let mut server = tokio::process::Command::new(mcp_test_server())
        .args([MCP_TEST_SERVER, flag, "127.0.0.1:0", "--log"])
        .arg(log)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(server.stdout.take().unwrap()));
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let addr = line.strip_prefix("listening ").unwrap().to_owned();
    (server, addr)
}

#[tokio::test]
async fn a_server_over_the_older_http_sse_transport_serves_its_tools() {
    over_the_network("--sse", "sse", "/sse", json!([])).await;
}

#[tokio::test]
async fn images_resources_and_errors_reach_the_card_and_the_model() {
    let env = scripted(vec![
        mcp_call("m1", "picture", json!({})),
        mcp_call("m2", "rich", json!({})),
        mcp_call("m3", "fail", json!({})),
    ])
    .with_policy(json!({"mode": "bypassPermissions"}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    conn.prompt(&session, "go").await;
    let picture = card_frames(&conn, &session, "m1");
    let last = picture.last().unwrap();
    assert_eq!(last["status"], "completed");
    let blocks: Vec<&str> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["content"]["type"].as_str())
        .collect();
    assert!(blocks.contains(&"image"), "{last}");
    let rich = card_frames(&conn, &session, "m2");
    let last = rich.last().unwrap();
    assert_eq!(
        last["rawOutput"]["structuredContent"],
        json!({"answer": 42})
    );
    let kinds: Vec<&str> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["content"]["type"].as_str())
        .collect();
    assert!(
        kinds.contains(&"resource_link") && kinds.contains(&"resource"),
        "{kinds:?}"
    );
    assert_eq!(
        card_frames(&conn, &session, "m3").last().unwrap()["status"],
        "failed"
    );
    // The model: the image as an image, the rest as text, the error as one.
    let requests = conn.env.model_requests();
    let results = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool_results")
        .unwrap()["results"]
        .clone();
    assert_eq!(results[0]["images"][0]["mediaType"], "image/png");
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("inline body")
    );
    // Given in text too, the structured content goes to the card only.
    assert!(
        !results[1]["content"]
            .as_str()
            .unwrap()
            .contains("\"answer\":42")
    );
    assert_eq!(results[2]["isError"], true);
    // The log holds the tool/content record the card came from, naming the
    // image by digest: its bytes are in the content store beside the log.
    let content = record(&conn, &session, "tool/content", "m1").unwrap();
    let image = &content["content"][0];
    assert_eq!(image["type"], "image");
    assert!(image.get("data").is_none(), "{image}");
    let digest = image["digest"].as_str().unwrap();
    let stored = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.content"))
        .join(digest.trim_start_matches("sha256:"));
    assert_eq!(
        std::fs::metadata(&stored).unwrap().len(),
        image["bytes"].as_u64().unwrap()
    );
    assert_eq!(results[0]["images"][0]["data"], blocks_data(&picture));
}

/// The base64 of the first image a card's frames show.
fn blocks_data(frames: &[Value]) -> Value {
    frames
        .iter()
        .flat_map(|f| f["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["content"]["type"] == "image")
        .map(|c| c["content"]["data"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_server_that_changes_its_tools_is_read_again() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([mcp_call("m1", "grow", json!({}))])),
        respond(json!([mcp_call("m2", "extra", json!({}))])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    conn.prompt(&session, "go").await;
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let requests = conn.env.model_requests();
    assert!(!names(&requests[0]).contains(&"mcp__test__extra".to_owned()));
    assert!(names(&requests[1]).contains(&"mcp__test__extra".to_owned()));
    assert_eq!(
        record(&conn, &session, "tool/result", "m2").unwrap()["output"],
        "extra ok"
    );
}

#[tokio::test]
async fn a_projects_mcp_json_starts_only_enabled_servers_and_only_once_trusted() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("hi")]))]));
    let log = env.dir.path().join("server.jsonl");
    let entry = json!({"command": mcp_test_server(), "args": [MCP_TEST_SERVER, "--log", log]});
    env.file(
        ".mcp.json",
        &json!({"mcpServers": {"proj": entry, "other": entry}}).to_string(),
    );
    // The user enabled `proj` (their own settings); the repository's own
    // settings enabling all of its servers count for nothing.
    let user = env.dir.path().join(".claude");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("settings.json"),
        json!({"enabledMcpjsonServers": ["proj"]}).to_string(),
    )
    .unwrap();
    env.file(
        ".claude/settings.json",
        &json!({"enableAllProjectMcpServers": true}).to_string(),
    );
    // Untrusted: the server is one of the project's wants, not started.
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let told = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "session/notice" && r["text"].to_string().contains("/trust"))
        .unwrap();
    let wants = told["text"].to_string();
    assert!(wants.contains("MCP server \\\"proj\\\""), "{wants}");
    assert!(!wants.contains("\\\"other\\\""), "{wants}");
    assert!(seen(&log).is_empty(), "an untrusted project's server ran");
    let env = conn.end().await;
    // Trusted (as Claude Code records it): started, and only the enabled one.
    env.trust_project();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let requests = conn.env.model_requests();
    let tools = requests.last().unwrap()["tools"].to_string();
    assert!(tools.contains("mcp__proj__echo"), "{tools}");
    assert!(!tools.contains("mcp__other__"), "{tools}");
}

#[tokio::test]
async fn slash_mcp_shows_each_server_its_state_its_tools_and_its_stderr() {
    let env = TestEnv::scripted(script(vec![]));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(
        &mut conn,
        json!([
            stdio("test", &log, &[]),
            stdio("broken", &log, &["--exit-at-start"])
        ]),
    )
    .await;
    // Both settled (ready or failed) before asking.
    assert!(
        eventually(Duration::from_secs(20), || seen(&log)
            .iter()
            .filter(|v| v.get("started").is_some())
            .count()
            >= 1)
        .await
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    conn.prompt(&session, "/mcp").await;
    let ran = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "command/ran")
        .unwrap();
    let text = ran["output"].as_str().unwrap();
    assert!(text.contains("**test**: ready"), "{text}");
    assert!(text.contains("mcp__test__echo"), "{text}");
    assert!(
        text.contains("mcp__test__lookup (runs unasked: read-only, closed-world)")
            && !text.contains("mcp__test__fetch (runs unasked"),
        "{text}"
    );
    assert!(text.contains("**broken**: failed"), "{text}");
    assert!(text.contains("refusing to start"), "{text}");
    assert!(text.contains("from the editor"), "{text}");
}

#[tokio::test]
async fn an_mcp_prompt_is_a_command_expanded_by_its_server_and_a_linked_resource_is_attached() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("hello Ann")])),
        respond(json!([text("read it")])),
    ]));
    let log = env.dir.path().join("server.jsonl");
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([stdio("test", &log, &[])])).await;
    // The prompt is offered as a command once the server is ready.
    let mut offered = false;
    for _ in 0..200 {
        if conn.notifications.iter().any(|n| {
            n["params"]["update"]["sessionUpdate"] == "available_commands_update"
                && n["params"]["update"]["availableCommands"]
                    .to_string()
                    .contains("mcp__test__greet")
        }) {
            offered = true;
            break;
        }
        conn.try_recv(Duration::from_millis(100)).await;
    }
    assert!(offered, "the MCP prompt was never offered as a command");
    conn.prompt(&session, "/mcp__test__greet Ann").await;
    let expanded = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "prompt/expanded")
        .unwrap();
    assert_eq!(expanded["text"], "Say hello to Ann.");
    assert!(
        seen(&log)
            .iter()
            .any(|v| v["prompt"] == "greet" && v["arguments"]["name"] == "Ann")
    );
    let requests = conn.env.model_requests();
    assert_eq!(
        requests[0]["messages"][0],
        json!({"role": "user", "text": "Say hello to Ann."})
    );
    // A resource link the server lists is read from it and attached.
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "what does this say?"},
                {"type": "resource_link", "uri": "test://readme", "name": "readme"}
            ]}),
        )
        .await;
    conn.response(&id).await;
    let requests = conn.env.model_requests();
    let asked = requests[1]["messages"].as_array().unwrap().last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        asked.contains(
            "<resource uri=\"test://readme\">\nThe readme of the test server.\n</resource>"
        ),
        "{asked}"
    );
    assert!(seen(&log).iter().any(|v| v["resource"] == "test://readme"));
}

#[tokio::test]
async fn a_call_whose_answer_never_comes_fails_at_its_codex_timeout_and_the_server_is_told() {
    // A server from the user's Codex config.toml, with its own call timeout.
    let env = scripted(vec![mcp_call("m1", "slow", json!({"seconds": 60}))])
        .with_policy(json!({"mode": "bypassPermissions"}));
    let log = env.dir.path().join("server.jsonl");
    let codex = env.dir.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("config.toml"),
        format!(
            "[mcp_servers.test]\ncommand = {:?}\nargs = [\"mcp-test-server\", \"--log\", {:?}]\ntool_timeout_sec = 1\n\n[mcp_servers.off]\ncommand = \"/bin/false\"\nenabled = false\n",
            mcp_test_server().display().to_string(),
            log.display().to_string()
        ),
    )
    .unwrap();
    let mut config = env.config();
    config.codex = Some(candor::config::CodexLocations { home: Some(codex) });
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    let started = std::time::Instant::now();
    assert_eq!(
        conn.prompt(&session, "go").await["result"]["stopReason"],
        "end_turn"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the call was not bounded"
    );
    let result = record(&conn, &session, "tool/result", "m1").unwrap();
    assert_eq!(result["status"], "failed");
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("did not answer within 1s"),
        "{result}"
    );
    assert!(
        eventually(Duration::from_secs(10), || seen(&log)
            .iter()
            .any(|v| v["cancelled"] == "slow"))
        .await,
        "the server was not told the call was given up"
    );
    // The entry with `enabled = false` was never started.
    conn.prompt(&session, "/mcp").await;
    let shown = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "command/ran")
        .unwrap();
    assert!(
        !shown["output"].as_str().unwrap().contains("**off**"),
        "{shown}"
    );
}

/// The session's entry for the test server over `transport` (`stdio`,
/// `http`, `sse`), and the server when candor does not start it.
async fn entry_over(
    transport: &str,
    log: &std::path::Path,
) -> (Value, Option<tokio::process::Child>) {
    match transport {
        "stdio" => (stdio("test", log, &[]), None),
        "http" => {
            let (server, addr) = listening("--http", log).await;
            let url = format!("http://{addr}/mcp");
            (
                json!({"type": "http", "name": "test", "url": url, "headers": []}),
                Some(server),
            )
        }
        _ => {
            let (server, addr) = listening("--sse", log).await;
            let url = format!("http://{addr}/sse");
            (
                json!({"type": "sse", "name": "test", "url": url, "headers": []}),
                Some(server),
            )
        }
    }
}

/// A call whose answer candor cannot take (`tool`): its card fails within
/// seconds saying why (`why`), the server is told the call was given up,
/// and the next call to the same server works.
async fn an_answer_candor_cannot_take(transport: &str, tool_name: &str, why: &str) {
    let env = TestEnv::scripted(script(vec![
        respond(json!([mcp_call("m1", tool_name, json!({}))])),
        respond(json!([mcp_call("m2", "echo", json!({"text": "after"}))])),
        respond(json!([text("done")])),
    ]))
    .with_policy(json!({"mode": "bypassPermissions"}));
    let log = env.dir.path().join("server.jsonl");
    let (entry, _server) = entry_over(transport, &log).await;
    let mut conn = Conn::in_process(env);
    let session = open(&mut conn, json!([entry])).await;
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(60), conn.prompt(&session, "go"))
        .await
        .expect("the call waited for its timeout");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{transport}: took {:?}",
        started.elapsed()
    );
    let result = record(&conn, &session, "tool/result", "m1").unwrap();
    assert_eq!(result["status"], "failed", "{transport}: {result}");
    let output = result["output"].as_str().unwrap();
    assert!(output.contains(why), "{transport}: {output}");
    let last = card_frames(&conn, &session, "m1").pop().unwrap();
    assert_eq!(last["status"], "failed");
    assert!(last["content"].to_string().contains(why), "{last}");
    assert!(
        output.contains("candor gave the call up and told the server so"),
        "{output}"
    );
    // The server was told, naming the request it answered.
    let asked = seen(&log)
        .into_iter()
        .find(|v| v["for"] == tool_name)
        .unwrap()["requestId"]
        .clone();
    assert!(
        eventually(Duration::from_secs(10), || seen(&log)
            .iter()
            .any(|v| v.get("cancelledId") == Some(&asked)))
        .await,
        "{transport}: the server was not told the call was given up: {:?}",
        seen(&log)
            .iter()
            .filter(|v| v.get("tool").is_none())
            .collect::<Vec<_>>()
    );
    let next = record(&conn, &session, "tool/result", "m2").unwrap();
    assert_eq!(next["status"], "completed", "{transport}: {next}");
    assert_eq!(next["output"], "echo: after");
}

#[tokio::test]
async fn an_answer_over_16_mib_over_stdio_fails_the_call_at_once_and_the_server_goes_on() {
    an_answer_candor_cannot_take("stdio", "huge", "over 16 MiB").await;
}

#[tokio::test]
async fn an_answer_over_16_mib_over_streamable_http_fails_the_call_at_once_and_the_server_goes_on()
{
    an_answer_candor_cannot_take("http", "huge", "over 16 MiB").await;
}

#[tokio::test]
async fn an_answer_over_16_mib_over_http_sse_fails_the_call_at_once_and_the_server_goes_on() {
    an_answer_candor_cannot_take("sse", "huge", "over 16 MiB").await;
}

#[tokio::test]
async fn an_answer_that_is_not_json_fails_the_call_at_once_and_the_server_goes_on() {
    an_answer_candor_cannot_take("stdio", "garbage", "not JSON").await;
}
