//! Images and linked files in prompts (issue 17, item 3): a PNG prompt
//! reaches each API in its shape; the log holds its digest, the content
//! store beside it the bytes; a reload replays it as sent; a store file
//! gone missing is a placeholder; images that are not what they say or are
//! over a cap are refused before anything runs; `file:` links are read
//! (through the editor or the disk) under the Read rules; a Read of an
//! image gives the model the image.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
use crate::support::mock_openai::{self as openai, MockOpenai};
use crate::support::*;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn png_bytes() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(PNG)
        .unwrap()
}

fn digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The prompt: words, then the image.
fn image_prompt() -> Value {
    json!([
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "mimeType": "image/png", "data": PNG}
    ])
}

async fn prompt_blocks(conn: &mut Conn, session: &str, prompt: Value) -> Value {
    conn.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": prompt}),
    )
    .await
}

/// The session's content store.
fn store(env: &TestEnv, session: &str) -> PathBuf {
    env.home.join("sessions").join(format!("{session}.content"))
}

/// candor (the binary) with `provider` at `url`.
fn session_with(env: TestEnv, provider: &str, variable: &str, key: &str, url: &str) -> Conn {
    let mut cmd = candor_command(&env);
    let base = if provider == "anthropic" {
        "ANTHROPIC_BASE_URL"
    } else {
        "OPENAI_BASE_URL"
    };
    cmd.env("CANDOR_PROVIDER", provider)
        .env(base, url)
        .env(variable, key)
        .env("XDG_CONFIG_HOME", env.dir.path().join("config"));
    Conn::spawn_with(env, cmd)
}

#[tokio::test]
async fn a_png_prompt_reaches_anthropic_chat_and_responses_each_in_its_shape() {
    let data_url = format!("data:image/png;base64,{PNG}");
    // Anthropic: an image block (base64 source) before the text.
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("A dot.")],
        "end_turn",
    )])
    .await;
    let mut conn = session_with(
        TestEnv::new(),
        "anthropic",
        "ANTHROPIC_API_KEY",
        anthropic::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    let answer = prompt_blocks(&mut conn, &session, image_prompt()).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let user = &mock.requests()[0]["messages"][0];
    assert_eq!(
        user["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "text", "text": "What is in this picture?", "cache_control": {"type": "ephemeral"}}
        ])
    );
    drop(conn);
    // Chat Completions: content parts, the image as an image_url data URL.
    let mock = MockOpenai::start(vec![openai::chat("A dot.", vec![], "stop")]).await;
    let mut conn = session_with(
        TestEnv::new(),
        "openai",
        "OPENAI_API_KEY",
        openai::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    let answer = prompt_blocks(&mut conn, &session, image_prompt()).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let messages = mock.requests()[0]["messages"].clone();
    let user = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": data_url}}
        ])
    );
    drop(conn);
    // Responses: an input_text and an input_image.
    let mock = MockOpenai::start(vec![openai::responses("", "A dot.", vec![])]).await;
    let mut conn = session_with(
        TestEnv::new(),
        "openai-responses",
        "OPENAI_API_KEY",
        openai::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    let answer = prompt_blocks(&mut conn, &session, image_prompt()).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let input = mock.requests()[0]["input"].clone();
    assert_eq!(
        input[0],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is in this picture?"},
            {"type": "input_image", "image_url": data_url}
        ]})
    );
}

#[tokio::test]
async fn a_text_prompt_keeps_each_apis_plain_shape() {
    let mock = MockOpenai::start(vec![openai::chat("Hi.", vec![], "stop")]).await;
    let mut conn = session_with(
        TestEnv::new(),
        "openai",
        "OPENAI_API_KEY",
        openai::KEY,
        &mock.url(),
    );
    let session = conn.ready().await;
    conn.prompt(&session, "hello").await;
    let messages = mock.requests()[0]["messages"].clone();
    assert_eq!(messages[1], json!({"role": "user", "content": "hello"}));
}

/// The `user_message_chunk` contents of `session`'s replay among `frames`.
fn replayed_prompt(frames: &[Value], session: &str) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| {
            f["method"] == "session/update"
                && f["params"]["sessionId"] == session
                && f["params"]["update"]["sessionUpdate"] == "user_message_chunk"
        })
        .map(|f| f["params"]["update"]["content"].clone())
        .collect()
}

async fn load(env: TestEnv, session: &str) -> Conn {
    let mut conn = Conn::in_process(env);
    conn.initialize().await;
    conn.load(session).await;
    conn
}

#[tokio::test]
async fn the_log_holds_the_digest_and_a_reload_replays_the_image_as_sent() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("A dot.")])),
        respond(json!([text("Still a dot.")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let answer = prompt_blocks(&mut conn, &session, image_prompt()).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // The model was given the image.
    let requests = conn.env.model_requests();
    let user = &requests[0]["messages"][0];
    assert_eq!(user["text"], "What is in this picture?");
    assert_eq!(
        user["images"],
        json!([{"mediaType": "image/png", "data": PNG}])
    );
    // The log names it by digest; the bytes are in the store beside it.
    let path = conn
        .env
        .home
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(PNG), "the log holds the base64");
    let message = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "user/message")
        .unwrap();
    let want = digest(&png_bytes());
    assert_eq!(
        message["images"],
        json!([{"block": 1, "digest": want, "mimeType": "image/png", "bytes": png_bytes().len()}])
    );
    assert_eq!(message["content"][1]["data"], "");
    let kept = store(&conn.env, &session).join(want.trim_start_matches("sha256:"));
    assert_eq!(std::fs::read(&kept).unwrap(), png_bytes());
    let env = conn.end().await;

    // Reloaded: the prompt comes back as the client sent it.
    let mut again = load(env, &session).await;
    assert_eq!(
        replayed_prompt(&again.frames, &session),
        image_prompt().as_array().unwrap().clone()
    );
    // And the model is given the image again.
    again.prompt(&session, "and now?").await;
    let requests = again.env.model_requests();
    let last = requests.last().unwrap();
    assert_eq!(last["messages"][0]["images"][0]["data"], PNG);
}

#[tokio::test]
async fn a_stored_image_gone_missing_is_a_placeholder_and_the_model_is_told() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("A dot.")])),
        respond(json!([text("I cannot see it now.")])),
    ]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    prompt_blocks(&mut conn, &session, image_prompt()).await;
    let env = conn.end().await;
    let want = digest(&png_bytes());
    let kept = store(&env, &session).join(want.trim_start_matches("sha256:"));
    // Damaged, then gone: neither is given to anyone as the image.
    std::fs::write(&kept, b"\x89PNG\r\n\x1a\nnot the same bytes").unwrap();
    let mut again = load(env, &session).await;
    let replayed = replayed_prompt(&again.frames, &session);
    assert_eq!(replayed[1]["type"], "text", "{replayed:?}");
    assert!(
        replayed[1]["text"]
            .as_str()
            .unwrap()
            .contains("no longer available"),
        "{replayed:?}"
    );
    let answer = again.prompt(&session, "what was it?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let requests = again.env.model_requests();
    let first = &requests.last().unwrap()["messages"][0];
    assert!(first.get("images").is_none(), "{first}");
    assert!(
        first["text"]
            .as_str()
            .unwrap()
            .contains("no longer available: its stored copy"),
        "{first}"
    );
    // The user is told once the session is open.
    assert!(again.env.log(&session).iter().any(|r| {
        r["type"] == "session/notice"
            && r["text"]
                .as_str()
                .unwrap()
                .contains("no longer in its content store")
    }),);
    let env = again.end().await;
    std::fs::remove_file(&kept).unwrap();
    let mut third = load(env, &session).await;
    let replayed = replayed_prompt(&third.frames, &session);
    assert_eq!(replayed[1]["type"], "text", "{replayed:?}");
    assert_eq!(
        third.prompt(&session, "still there?").await["result"]["stopReason"],
        "end_turn"
    );
}

#[tokio::test]
async fn images_not_what_they_say_or_over_a_cap_are_refused_before_anything_runs() {
    let mut conn = Conn::in_process(TestEnv::scripted(script(vec![respond(json!([text(
        "ok"
    )]))])));
    let session = conn.ready().await;
    let image =
        |mime: &str, data: String| json!([{"type": "image", "mimeType": mime, "data": data}]);
    let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut big = png_bytes();
    big.resize(5 * 1024 * 1024 + 1, 0);
    let mut four = png_bytes();
    four.resize(4 * 1024 * 1024 + 512 * 1024, 0);
    let cases = [
        (image("image/jpeg", PNG.into()), "declared image/jpeg but its bytes are image/png"),
        (image("image/png", encode(b"#!/bin/sh\necho pwned\n")), "not image/png"),
        (image("image/svg+xml", encode(b"<svg onload=alert(1)/>")), "not one candor takes"),
        (image("image/png", "iVBORw0KGgo!!!!".into()), "not valid base64"),
        (image("image/png", encode(&big)), "over candor's limit of 5.0 MiB"),
        (
            json!([{"type": "image", "mimeType": "image/png", "data": "", "uri": "file:///etc/passwd"}]),
            "no data, only the uri file:///etc/passwd",
        ),
        (
            Value::Array(
                (0..11)
                    .map(|_| json!({"type": "image", "mimeType": "image/png", "data": PNG}))
                    .collect(),
            ),
            "at most 10 images",
        ),
        (
            Value::Array(
                (0..5)
                    .map(|_| json!({"type": "image", "mimeType": "image/png", "data": encode(&four)}))
                    .collect(),
            ),
            "at most 10 images and 20.0 MiB a prompt",
        ),
    ];
    for (prompt, why) in cases {
        let frame = prompt_blocks(&mut conn, &session, prompt).await;
        assert_eq!(frame["error"]["code"], -32602, "{why}: {frame}");
        let data = frame["error"]["data"].as_str().unwrap();
        assert!(data.contains(why), "{why}: {data}");
        assert!(data.contains("nothing of the prompt ran"), "{data}");
    }
    // Nothing ran: no prompt in the log, nothing stored, the model never asked.
    assert!(
        !conn
            .env
            .log(&session)
            .iter()
            .any(|r| r["type"] == "user/message")
    );
    assert!(!store(&conn.env, &session).exists());
    assert!(conn.env.model_requests().is_empty());
    // The session is unharmed.
    let answer = prompt_blocks(&mut conn, &session, image_prompt()).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
}

/// Sends a prompt and answers the editor's `fs/read_text_file` requests
/// with `editor_text`; returns the prompt's response and the paths asked.
async fn prompt_answering_reads(
    conn: &mut Conn,
    session: &str,
    prompt: Value,
    editor_text: &str,
) -> (Value, Vec<String>) {
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": prompt}),
        )
        .await;
    let mut asked = Vec::new();
    loop {
        let frame = conn.recv().await;
        if frame["method"] == "fs/read_text_file" {
            asked.push(frame["params"]["path"].as_str().unwrap().to_owned());
            let reply =
                json!({"jsonrpc": "2.0", "id": frame["id"], "result": {"content": editor_text}});
            conn.send_raw(&reply.to_string()).await;
        } else if frame.get("method").is_none() && frame.get("id") == Some(&id) {
            return (frame, asked);
        }
    }
}

fn link(path: &Path) -> Value {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    json!({"type": "resource_link", "name": name, "uri": format!("file://{}", path.display())})
}

/// The notices of a session's log.
fn notices(env: &TestEnv, session: &str) -> Vec<String> {
    env.log(session)
        .iter()
        .filter(|r| r["type"] == "session/notice")
        .map(|r| r["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_linked_file_is_attached_from_the_disk_or_through_the_editor() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("Read it.")])),
        respond(json!([text("Read it again.")])),
    ]));
    let file = env.file("src/notes.md", "on disk\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let prompt = json!([{"type": "text", "text": "summarise"}, link(&file)]);
    let answer = prompt_blocks(&mut conn, &session, prompt.clone()).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let requests = conn.env.model_requests();
    let text = requests[0]["messages"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains(&format!(
            "<resource uri=\"file://{}\">\non disk\n\n</resource>",
            file.display()
        )),
        "{text}"
    );
    let attached = conn
        .env
        .log(&session)
        .into_iter()
        .find(|r| r["type"] == "prompt/resource")
        .unwrap();
    assert_eq!(attached["path"], file.display().to_string());
    assert!(attached.get("server").is_none());
    // The user is told what the model was given.
    assert!(
        notices(&conn.env, &session).is_empty(),
        "{:?}",
        notices(&conn.env, &session)
    );
    let env = conn.end().await;

    // With the editor's fs: its view of the file (unsaved text).
    let mut conn = Conn::in_process(env);
    conn.initialize_with(json!({"fs": {"readTextFile": true}}))
        .await;
    let session = conn.new_session().await;
    let (answer, asked) =
        prompt_answering_reads(&mut conn, &session, prompt, "unsaved in the editor\n").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(asked, [file.display().to_string()]);
    let requests = conn.env.model_requests();
    let text = requests.last().unwrap()["messages"][0]["text"].to_string();
    assert!(text.contains("unsaved in the editor"), "{text}");
    assert!(!text.contains("on disk"), "{text}");
}

#[tokio::test]
async fn a_linked_file_the_read_rules_deny_or_outside_the_project_is_not_read() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]))
        .with_policy(json!({"permissions": {"deny": ["Read(.env)"]}}));
    let secret = env.file(".env", "API_KEY=hunter2\n");
    let outside = env.dir.path().join("elsewhere.txt");
    std::fs::write(&outside, "outside the project\n").unwrap();
    // A link in the project that leads out of it.
    let sneaky = env.project.join("innocent.txt");
    std::os::unix::fs::symlink(&outside, &sneaky).unwrap();
    // And one that leads to the denied file.
    let alias = env.project.join("config.txt");
    std::os::unix::fs::symlink(&secret, &alias).unwrap();
    let mut conn = Conn::in_process(env);
    conn.initialize_with(json!({"fs": {"readTextFile": true}}))
        .await;
    let session = conn.new_session().await;
    let prompt = json!([
        {"type": "text", "text": "look"},
        link(&secret),
        link(&outside),
        link(&sneaky),
        link(&alias),
        {"type": "resource_link", "name": "x", "uri": "file://elsewhere.example/etc/passwd"}
    ]);
    let (answer, asked) = prompt_answering_reads(&mut conn, &session, prompt, "LEAKED").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(asked.is_empty(), "candor asked the editor for {asked:?}");
    let requests = conn.env.model_requests();
    let sent = requests[0].to_string();
    for leaked in ["hunter2", "outside the project", "LEAKED"] {
        assert!(!sent.contains(leaked), "{leaked} reached the model: {sent}");
    }
    let log = conn.env.log(&session);
    assert!(!log.iter().any(|r| r["type"] == "prompt/resource"));
    assert!(!serde_json::to_string(&log).unwrap().contains("hunter2"));
    let told = notices(&conn.env, &session);
    assert_eq!(told.len(), 5, "{told:?}");
    assert!(told[0].contains("Read(.env)"), "{}", told[0]);
    assert!(
        told[1].contains("would have to ask you first"),
        "{}",
        told[1]
    );
    assert!(
        told[2].contains("would have to ask you first"),
        "{}",
        told[2]
    );
    assert!(told[3].contains("Read(.env)"), "{}", told[3]);
    assert!(
        told[4].contains("does not name a file on this machine"),
        "{}",
        told[4]
    );
}

#[tokio::test]
async fn a_linked_image_is_attached_as_an_image_and_a_binary_file_is_not() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    // Named like text: the bytes say what it is.
    let picture = env.project.join("diagram.txt");
    std::fs::write(&picture, png_bytes()).unwrap();
    let binary = env.project.join("tool.bin");
    std::fs::write(&binary, b"\x7fELF\x02\x01\x01\0\0\0\0\0").unwrap();
    let mut conn = Conn::in_process(env);
    conn.initialize_with(json!({"fs": {"readTextFile": true}}))
        .await;
    let session = conn.new_session().await;
    let prompt = json!([{"type": "text", "text": "look"}, link(&picture), link(&binary)]);
    let (answer, asked) = prompt_answering_reads(&mut conn, &session, prompt, "garbage").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(asked.is_empty(), "{asked:?}");
    let requests = conn.env.model_requests();
    let user = &requests[0]["messages"][0];
    assert_eq!(
        user["images"],
        json!([{"mediaType": "image/png", "data": PNG}])
    );
    assert!(
        user["text"]
            .as_str()
            .unwrap()
            .contains("is an image (image/png); it is attached"),
        "{user}"
    );
    let log = conn.env.log(&session);
    let attached = log.iter().find(|r| r["type"] == "prompt/resource").unwrap();
    assert_eq!(attached["image"]["digest"], digest(&png_bytes()));
    assert!(!serde_json::to_string(&log).unwrap().contains(PNG));
    let told = notices(&conn.env, &session);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains("is a binary file"), "{}", told[0]);
}

#[tokio::test]
async fn a_read_of_a_png_gives_the_model_the_image_and_the_card_shows_it() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([
            tool("r1", "Read", json!({"file_path": "shot.png"})),
            tool("r2", "Read", json!({"file_path": "disguised.txt"})),
            tool("r3", "Read", json!({"file_path": "huge.png"}))
        ])),
        respond(json!([text("Two dots.")])),
    ]));
    std::fs::write(env.project.join("shot.png"), png_bytes()).unwrap();
    std::fs::write(env.project.join("disguised.txt"), png_bytes()).unwrap();
    let mut huge = png_bytes();
    huge.resize(5 * 1024 * 1024 + 1, 0);
    std::fs::write(env.project.join("huge.png"), huge).unwrap();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let answer = conn.prompt(&session, "look at the screenshots").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    for id in ["r1", "r2"] {
        let card = card_frames(&conn, &session, id);
        let last = card.last().unwrap();
        assert_eq!(last["status"], "completed", "{last}");
        let image = last["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["content"]["type"] == "image")
            .unwrap_or_else(|| panic!("no image on the card: {last}"));
        assert_eq!(image["content"]["data"], PNG);
        let result = result_in_request(&conn, 1, id);
        assert_eq!(
            result["images"],
            json!([{"mediaType": "image/png", "data": PNG}]),
            "{result}"
        );
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("is an image (image/png"),
            "{result}"
        );
    }
    let over = result_in_request(&conn, 1, "r3");
    assert_eq!(over["isError"], true);
    assert!(over.get("images").is_none());
    assert!(
        over["content"]
            .as_str()
            .unwrap()
            .contains("images over 5.0 MiB are not given to the model"),
        "{over}"
    );
    // The log names the image; its bytes are in the store.
    let content = record(&conn, &session, "tool/content", "r1").unwrap();
    assert_eq!(content["content"][0]["digest"], digest(&png_bytes()));
    assert!(content["content"][0].get("data").is_none(), "{content}");
    let log = std::fs::read_to_string(
        conn.env
            .home
            .join("sessions")
            .join(format!("{session}.jsonl")),
    )
    .unwrap();
    assert!(!log.contains(PNG));
}

#[tokio::test]
async fn deleting_a_session_moves_its_images_with_its_log() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("A dot.")]))]));
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    prompt_blocks(&mut conn, &session, image_prompt()).await;
    conn.call("session/close", json!({"sessionId": session}))
        .await;
    conn.call("session/delete", json!({"sessionId": session}))
        .await;
    assert!(!store(&conn.env, &session).exists());
    let moved = conn
        .env
        .home
        .join("sessions/deleted")
        .join(format!("{session}.content"))
        .join(digest(&png_bytes()).trim_start_matches("sha256:"));
    assert_eq!(std::fs::read(moved).unwrap(), png_bytes());
}

/// A PNG that is the 1×1 one with `n` after its end: as many different
/// images as wanted, each a few bytes.
fn nth_png(n: usize) -> Vec<u8> {
    let mut bytes = png_bytes();
    bytes.extend_from_slice(format!("#{n}").as_bytes());
    bytes
}

/// The images of the results in model request `n`, by call id.
fn carried(conn: &Conn, n: usize, calls: usize) -> Vec<Option<String>> {
    (1..=calls)
        .map(|i| {
            let result = result_in_request(conn, n, &format!("r{i}"));
            result["images"]
                .as_array()
                .map(|images| images[0]["data"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_session_of_more_images_than_are_held_sends_the_latest_twenty_and_replays_all() {
    // More images than the session holds in memory (30): the model is
    // still sent exactly the latest 20, as they were read, and a reload
    // replays every one of them.
    const CALLS: usize = 40;
    let reads: Vec<Value> = (1..=CALLS)
        .map(|i| {
            tool(
                &format!("r{i}"),
                "Read",
                json!({"file_path": format!("shot{i}.png")}),
            )
        })
        .collect();
    let env = TestEnv::scripted(script(vec![
        respond(Value::Array(reads)),
        respond(json!([text("Forty dots.")])),
        respond(json!([text("Still forty.")])),
    ]));
    for i in 1..=CALLS {
        std::fs::write(env.project.join(format!("shot{i}.png")), nth_png(i)).unwrap();
    }
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let answer = conn.prompt(&session, "look at them all").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let encode = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let want: Vec<Option<String>> = (1..=CALLS)
        .map(|i| (i > CALLS - 20).then(|| encode(&nth_png(i))))
        .collect();
    assert_eq!(carried(&conn, 1, CALLS), want);
    let older = result_in_request(&conn, 1, "r1");
    assert!(
        older["content"]
            .as_str()
            .unwrap()
            .contains("left out of this request"),
        "{older}"
    );
    let env = conn.end().await;

    // Reloaded, nothing held yet: every card shows its image again, and
    // the next request carries the same latest 20, byte for byte.
    let mut again = load(env, &session).await;
    for i in 1..=CALLS {
        let card = card_frames(&again, &session, &format!("r{i}"));
        let shown: Vec<&Value> = card
            .iter()
            .filter_map(|u| u["content"].as_array())
            .flatten()
            .filter(|c| c["content"]["type"] == "image")
            .collect();
        assert_eq!(
            shown.last().map(|c| c["content"]["data"].clone()),
            Some(json!(encode(&nth_png(i)))),
            "r{i}"
        );
    }
    let answer = again.prompt(&session, "and now?").await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(carried(&again, 2, CALLS), want);
}

#[tokio::test]
async fn an_embedded_file_a_read_deny_rule_covers_is_withheld_from_the_model() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]))
        .with_policy(json!({"permissions": {"deny": ["Read(.env)"]}}));
    let secret = env.file(".env", "API_KEY=hunter2\n");
    let notes = env.file("notes.txt", "remember the milk\n");
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let embedded = |path: &Path, text: &str| {
        json!({"type": "resource", "resource": {
            "uri": format!("file://{}", path.display()), "text": text, "mimeType": "text/plain"}})
    };
    let prompt = json!([
        {"type": "text", "text": "look at these"},
        embedded(&secret, "API_KEY=hunter2\n"),
        embedded(&notes, "remember the milk\n"),
    ]);
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": prompt}),
        )
        .await;
    let answer = conn.response(&id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let sent = conn.env.model_requests()[0].to_string();
    assert!(
        !sent.contains("hunter2"),
        "the denied file reached the model: {sent}"
    );
    assert!(sent.contains("remember the milk"), "{sent}");
    assert!(
        sent.contains("its contents were not given to the model"),
        "{sent}"
    );
    // Neither the log nor a replay holds the withheld contents.
    let log = serde_json::to_string(&conn.env.log(&session)).unwrap();
    assert!(!log.contains("hunter2"), "{log}");
    let told = notices(&conn.env, &session);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains(".env was attached to the prompt"),
        "{}",
        told[0]
    );
    assert!(told[0].contains("Read(.env)"), "{}", told[0]);
}

#[tokio::test]
async fn a_pipe_named_like_an_image_or_linked_in_a_prompt_blocks_nothing() {
    // A repository ships a FIFO called `screen.png`: the model's Read of
    // it, and the user's link to another, must neither block on it nor
    // take it for an image.
    let env = TestEnv::scripted(script(vec![
        respond(json!([tool(
            "r",
            "Read",
            json!({"file_path": "screen.png"})
        )])),
        respond(json!([text("Done.")])),
    ]));
    let mode = nix::sys::stat::Mode::S_IRWXU;
    nix::unistd::mkfifo(&env.project.join("screen.png"), mode).unwrap();
    let pipe = env.project.join("notes.txt");
    nix::unistd::mkfifo(&pipe, mode).unwrap();
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    let prompt = json!([{"type": "text", "text": "look"}, link(&pipe)]);
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": prompt}),
        )
        .await;
    let answer = conn.response(&id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let told = notices(&conn.env, &session);
    assert!(
        told.iter()
            .any(|n| n.contains("notes.txt") && n.contains("named pipe")),
        "{told:?}"
    );
    let card = card_frames(&conn, &session, "r");
    let last = card.last().unwrap();
    assert_eq!(last["status"], "failed", "{last}");
    assert!(last.to_string().contains("named pipe"), "{last}");
    let result = result_in_request(&conn, 1, "r");
    assert!(result.get("images").is_none(), "{result}");
}
