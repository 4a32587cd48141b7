//! Whole sessions against real wire formats: the built binary, configured
//! as a user would (environment variables, config files), talks to local
//! mock model servers that check what it sends the way the real APIs do.

use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic, Step};
use crate::support::mock_openai::{self as openai, MockOpenai};
use crate::support::*;

/// candor (the binary) configured for Anthropic at `mock`.
fn anthropic_session(env: TestEnv, mock: &MockAnthropic, key: &str) -> Conn {
    let mut cmd = candor_command(&env);
    cmd.env("CANDOR_PROVIDER", "anthropic")
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", key)
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"));
    Conn::spawn_with(env, cmd)
}

/// The config option `id` of a response's `configOptions`.
fn config_option<'a>(response: &'a Value, id: &str) -> &'a Value {
    response["configOptions"]
        .as_array()
        .and_then(|options| options.iter().find(|o| o["id"] == id))
        .unwrap_or(&Value::Null)
}

fn update_kinds(conn: &Conn) -> Vec<String> {
    conn.frames
        .iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| {
            f["params"]["update"]["sessionUpdate"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn an_anthropic_session_runs_tools_and_replays_its_turns_verbatim() {
    let mock = MockAnthropic::start(vec![
        anthropic::message(
            vec![
                anthropic::thinking("The user wants a greeting run.", "sig-1"),
                anthropic::text("Running it."),
                anthropic::tool_use("toolu_01", "Bash", r#"{"command": "echo hi"}"#),
            ],
            "tool_use",
        ),
        anthropic::message(vec![anthropic::text("It printed hi.")], "end_turn"),
    ])
    .await;
    let mut conn = anthropic_session(TestEnv::new(), &mock, anthropic::KEY);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "say hi").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let thread = conn.thread(&session);
    assert_eq!(thread.thoughts, "The user wants a greeting run.");
    assert_eq!(thread.agent_text, "Running it.It printed hi.");
    let card = thread.card("toolu_01");
    assert_eq!(card.status, "completed");
    assert!(card.text().contains("hi"));
    // The mock refuses a second request whose first assistant turn is not
    // byte-identical to what it streamed (signed thinking); it also checks
    // that the tool_use is answered right away.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1]["messages"];
    assert_eq!(second[2]["role"], "user");
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(second[2]["content"][0]["tool_use_id"], "toolu_01");
    assert!(
        second[2]["content"][0]["content"]
            .to_string()
            .contains("hi")
    );
    // Usage reaches the client.
    assert!(
        update_kinds(&conn).contains(&"usage_update".to_owned()),
        "{:?}",
        update_kinds(&conn)
    );
}

#[tokio::test]
async fn a_rewrite_is_told_to_anthropic_by_a_note_never_by_editing_its_turn() {
    let mock = MockAnthropic::start(vec![
        anthropic::message(
            vec![
                anthropic::thinking("Status first.", "sig-2"),
                anthropic::tool_use("toolu_01", "Bash", r#"{"command": "git status"}"#),
            ],
            "tool_use",
        ),
        anthropic::message(vec![anthropic::text("Clean.")], "end_turn"),
    ])
    .await;
    let env = TestEnv::new().with_policy(json!({"hooks": [
        {"id": "rtk", "tool": "Bash", "decision": "allow", "rewrite": {"command": {"replace": "^git status$", "with": "echo rewritten"}}}
    ]}));
    let mut conn = anthropic_session(env, &mock, anthropic::KEY);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "status?").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let requests = mock.requests();
    let replayed = &requests[1]["messages"][1]["content"];
    let call = replayed
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(
        call["input"],
        json!({"command": "git status"}),
        "the model's own call is never edited"
    );
    let result = requests[1]["messages"][2]["content"][0]["content"].to_string();
    assert!(
        result.contains("[candor] A hook (rtk) rewrote this call before it ran"),
        "{result}"
    );
    assert!(result.contains("echo rewritten"), "{result}");
}

#[tokio::test]
async fn a_rate_limit_is_retried_and_shown_to_the_user() {
    let mock = MockAnthropic::start(vec![
        Step::Status {
            status: 429,
            headers: vec![("retry-after".into(), "0".into())],
            body: anthropic::error_body("rate_limit_error", "slow down"),
        },
        anthropic::message(vec![anthropic::text("Here.")], "end_turn"),
    ])
    .await;
    let mut conn = anthropic_session(TestEnv::new(), &mock, anthropic::KEY);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "hi").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let thread = conn.thread(&session);
    assert!(
        thread.notices.starts_with("> candor (warning): ") && thread.notices.contains("429"),
        "{}",
        thread.notices
    );
    assert_eq!(thread.thoughts, "", "a notice shown as the model's thought");
    assert_eq!(thread.agent_text, "Here.");
    let log = conn.env.log(&session);
    assert!(
        log.iter().any(|r| r["type"] == "session/notice"),
        "the notice is in the log"
    );
}

#[tokio::test]
async fn a_refused_key_is_an_auth_error_that_names_the_variable_not_the_key() {
    let mock = MockAnthropic::start(vec![]).await;
    let wrong = "sk-ant-wrong-key-1234567890";
    let mut conn = anthropic_session(TestEnv::new(), &mock, wrong);
    let init = conn.initialize().await;
    let methods: Vec<&str> = init["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["anthropic-api-key", "openai-api-key"]);
    let session = conn.new_session().await;
    let response = conn.prompt(&session, "hi").await;
    assert_eq!(response["error"]["code"], -32000, "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
    assert!(
        !response.to_string().contains(wrong),
        "the key leaked: {response}"
    );
    conn.close_input();
    conn.drain().await;
    let mut stderr = String::new();
    use tokio::io::AsyncReadExt;
    conn.child()
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    assert!(!stderr.contains(wrong), "the key leaked to the logs");
    let log = std::fs::read_to_string(
        conn.env
            .home
            .join("sessions")
            .join(format!("{session}.jsonl")),
    )
    .unwrap();
    assert!(!log.contains(wrong), "the key leaked to the session log");
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_leaves_nothing_half_done() {
    let cut = Step::CutAfter {
        blocks: vec![
            anthropic::text("About to "),
            anthropic::tool_use("toolu_01", "Bash", r#"{"command": "touch half"}"#),
        ],
        stop: "tool_use".into(),
        frames: 6,
    };
    let mock = MockAnthropic::start(vec![
        cut,
        anthropic::message(vec![anthropic::text("Second try, no tools.")], "end_turn"),
    ])
    .await;
    let mut conn = anthropic_session(TestEnv::new(), &mock, anthropic::KEY);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "go").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(!conn.env.project.join("half").exists());
    let log = conn.env.log(&session);
    assert!(
        !log.iter().any(|r| r["type"] == "tool/call"),
        "a half-streamed tool call was acted on"
    );
    let messages: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "assistant/message")
        .collect();
    assert_eq!(messages.len(), 1, "only the whole turn is kept");
    assert!(
        conn.thread(&session).notices.contains("> candor"),
        "the retry was not shown"
    );
}

#[tokio::test]
async fn max_tokens_from_the_model_is_the_stop_reason() {
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("cut sh")],
        "max_tokens",
    )])
    .await;
    let mut conn = anthropic_session(TestEnv::new(), &mock, anthropic::KEY);
    let session = conn.ready().await;
    assert_eq!(
        conn.prompt(&session, "hi").await["result"]["stopReason"],
        "max_tokens"
    );
}

#[tokio::test]
async fn the_projects_turn_request_limit_ends_a_prompt_that_keeps_calling_tools() {
    let read = |n: usize| {
        anthropic::message(
            vec![anthropic::tool_use(
                &format!("toolu_{n}"),
                "Read",
                r#"{"file_path": "notes.txt"}"#,
            )],
            "tool_use",
        )
    };
    let mock = MockAnthropic::start(vec![read(1), read(2), read(3)]).await;
    let env = TestEnv::new();
    std::fs::write(env.project.join("notes.txt"), "a note\n").unwrap();
    std::fs::create_dir_all(env.project.join(".candor")).unwrap();
    std::fs::write(
        env.project.join(".candor/config.toml"),
        "max_turn_requests = 2\n",
    )
    .unwrap();
    let mut conn = anthropic_session(env, &mock, anthropic::KEY);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "read it forever").await;
    assert_eq!(
        response["result"]["stopReason"], "max_turn_requests",
        "{response}"
    );
    // Two requests, both calls ran; the third response was never asked for.
    assert_eq!(mock.requests().len(), 2);
    let thread = conn.thread(&session);
    assert_eq!(thread.card("toolu_1").status, "completed");
    assert_eq!(thread.card("toolu_2").status, "completed");
}

#[tokio::test]
async fn the_model_is_a_session_config_option_the_user_can_change() {
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("ok")],
        "end_turn",
    )])
    .await;
    let env = TestEnv::new();
    let config = env.dir.path().join("config/candor");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "model = \"claude-a\"\nmodels = [\"claude-a\", \"claude-b\"]\n",
    )
    .unwrap();
    let mut conn = anthropic_session(env, &mock, anthropic::KEY);
    conn.initialize().await;
    let cwd = conn.env.project.clone();
    let created = conn
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let option = config_option(&created, "model");
    assert_eq!(option["id"], "model");
    assert_eq!(option["category"], "model");
    assert_eq!(option["currentValue"], "claude-a");
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let changed = conn
        .call(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "model", "value": "claude-b"}),
        )
        .await;
    assert_eq!(config_option(&changed, "model")["currentValue"], "claude-b");
    conn.prompt(&session, "hi").await;
    assert_eq!(mock.requests()[0]["model"], "claude-b");
    let bad = conn
        .request(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "model", "value": "gpt-9"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let log = conn.env.log(&session);
    assert!(
        log.iter()
            .any(|r| r["type"] == "config/changed" && r["value"] == "claude-b")
    );
}

#[tokio::test]
async fn chat_completions_may_see_a_rewrite_in_place() {
    let mock = MockOpenai::start(vec![
        openai::chat(
            "",
            vec![("call_1", "Bash", r#"{"command":"git status"}"#)],
            "tool_calls",
        ),
        openai::chat("Clean.", vec![], "stop"),
    ])
    .await;
    let env = TestEnv::new().with_policy(json!({"hooks": [
        {"id": "rtk", "tool": "Bash", "decision": "allow", "rewrite": {"command": {"set": "echo rewritten"}}}
    ]}));
    let config = env.dir.path().join("config/candor");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "rewrite_strategy = \"in_place\"\n",
    )
    .unwrap();
    let mut cmd = candor_command(&env);
    cmd.env("CANDOR_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", mock.url())
        .env("OPENAI_API_KEY", openai::KEY)
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"));
    let mut conn = Conn::spawn_with(env, cmd);
    let session = conn.ready().await;
    let response = conn.prompt(&session, "status?").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let second = &mock.requests()[1]["messages"];
    let assistant = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    let arguments = assistant["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({"command": "echo rewritten"})
    );
    let tool = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        !tool["content"].to_string().contains("[candor]"),
        "in place: no note"
    );
}

#[tokio::test]
async fn authenticate_succeeds_when_the_configured_model_can_answer() {
    // Scripted: nothing to authenticate, whichever method the client picks
    // (clients often try the first one listed).
    let mut conn = Conn::spawn(TestEnv::scripted(script(vec![])));
    conn.initialize().await;
    for method in ["anthropic-api-key", "openai-api-key"] {
        let ok = conn
            .request("authenticate", json!({"methodId": method}))
            .await;
        assert!(ok.get("error").is_none(), "{method}: {ok}");
    }
    let unknown = conn
        .request("authenticate", json!({"methodId": "oauth"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // No model at all: the answer says which variable to set.
    let mut bare = Conn::spawn(TestEnv::new());
    bare.initialize().await;
    let refused = bare
        .request("authenticate", json!({"methodId": "openai-api-key"}))
        .await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY"),
        "{refused}"
    );
}
