//! The session's house (`sandbox::house`, `protocol/sandbox.md`, "The
//! house"): a session's commands after its first join the namespaces and
//! mounts made once for their boundary instead of making their own. Each
//! test makes sure the command it attacks with ran in the house (PID 1 of
//! its namespace is the house's init), then checks that the house holds
//! what a command's own namespaces held: what a command leaves behind
//! ends with it, even when its launcher or candor is killed, and a house
//! is never used for paths its mounts no longer cover.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::sandboxed_calls::{processes_in, require_sandbox};
use crate::support::*;

/// Prints PID 1's command line: where the command runs.
const WHERE: &str = "tr '\\0' ' ' < /proc/1/cmdline; echo";
/// How PID 1 shows in the house.
const HOUSE_INIT: &str = "__sandbox --house-init";
/// How long the model takes between a session's first call and its
/// second: the house gets ready meanwhile, on a loaded machine too.
const HOUSE_WAIT_MS: u64 = 1500;

/// A session of the candor binary, every call allowed, whose model
/// answers with `steps`; the connection and the session.
async fn scripted(env: TestEnv, steps: Vec<Value>) -> (Conn, String) {
    let path = env.dir.path().join("script.json");
    std::fs::write(&path, script(steps).to_string()).unwrap();
    let env = TestEnv {
        script: Some(path),
        ..env
    }
    .with_policy(json!({"mode": "bypassPermissions"}));
    let mut conn = Conn::spawn(env);
    let session = conn.ready().await;
    (conn, session)
}

/// `pid`'s command line, its arguments joined by spaces (empty: gone).
fn cmdline(pid: impl std::fmt::Display) -> String {
    let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&line).replace('\0', " ")
}

/// The house inits (`--house-init`) of the session in `project` (its
/// canonical path).
fn house_inits(project: &Path) -> Vec<u32> {
    processes_in(project)
        .into_iter()
        .filter(|pid| cmdline(pid).contains("--house-init"))
        .collect()
}

/// The model's answers: a first Bash call (`true`) at once, then,
/// [`HOUSE_WAIT_MS`] later (the house gets ready meanwhile), a second
/// Bash call (`two`) with `input`, then `more`, then its last word.
fn after_a_first(input: Value, more: Vec<Value>) -> Vec<Value> {
    let mut steps = vec![
        respond(json!([tool("one", "Bash", json!({ "command": "true" }))])),
        json!({"delayMs": HOUSE_WAIT_MS, "content": [tool("two", "Bash", input)]}),
    ];
    steps.extend(more);
    steps.push(respond(json!([text("done")])));
    steps
}

/// A session (the candor binary, every call allowed) whose model runs
/// `true` at once, then, [`HOUSE_WAIT_MS`] later (the house gets ready
/// meanwhile), `second`; the connection, the session, and the id of the
/// prompt's request, sent (not awaited).
async fn two_calls(env: TestEnv, second: &str) -> (Conn, String, Value) {
    let (mut conn, session) =
        scripted(env, after_a_first(json!({ "command": second }), vec![])).await;
    let id = conn
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await;
    (conn, session, id)
}

/// The second stages (in the house: the command's subreaper) of the
/// commands writing `where.txt`: each one's parent.
fn command_launchers() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let line = cmdline(pid);
            line.starts_with("bash -c ") && line.contains("where.txt")
        })
        .filter_map(parent_of)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housed_command_leaves_nothing_behind_when_it_ends() {
    require_sandbox();
    // The stray has half a second to leave its parent and its process
    // group before the call ends: only the launcher, the command's
    // subreaper in the house, can end it.
    let escape = format!(
        "{WHERE}; (unset candor_scope; setsid bash -c 'sleep 1.5; echo late > late.txt' > /dev/null 2>&1 &); sleep 0.5; echo started"
    );
    let (mut conn, session, id) = two_calls(TestEnv::new(), &escape).await;
    let late = conn.env.project.join("late.txt");
    let done = conn.response(&id).await;
    assert!(done.get("result").is_some(), "{done}");
    let two = conn.thread(&session).card("two").text();
    assert!(two.contains(HOUSE_INIT), "{two}");
    assert!(two.contains("started"), "{two}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        !late.exists(),
        "a process outlived its housed call and wrote after the card said done"
    );
}

/// A housed command (after a first call) whose stray, out of its
/// process group and scope, runs `touch started; sleep 2; echo x >
/// finished`; `kill` ends something once it started; whether `finished`
/// appeared within 4 s after, and where the command ran.
async fn killed_while_housed(kill: impl FnOnce(&mut Conn)) -> (bool, String) {
    let env = TestEnv::new();
    let project = env.project.clone();
    let (mut conn, _, _) = two_calls(env, &format!(
            "{{ {WHERE}; }} > where.txt; (unset candor_scope; setsid bash -c 'touch started; sleep 2; echo x > finished' > /dev/null 2>&1 &); sleep 10; echo end"
        ))
    .await;
    let started = project.join("started");
    assert!(
        eventually(Duration::from_secs(10), || started.exists()).await,
        "the command never started"
    );
    kill(&mut conn);
    let finished = project.join("finished");
    let wrote = eventually(Duration::from_secs(4), || finished.exists()).await;
    let ran_in = std::fs::read_to_string(project.join("where.txt")).unwrap_or_default();
    (wrote, ran_in)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_candor_is_sigkilled_nothing_a_housed_command_started_writes_afterwards() {
    require_sandbox();
    let (wrote, ran_in) = killed_while_housed(|conn| {
        conn.child().start_kill().unwrap();
    })
    .await;
    assert!(ran_in.contains(HOUSE_INIT), "{ran_in}");
    assert!(!wrote, "the housed command wrote after candor died");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housed_command_whose_launcher_is_killed_is_ended_by_the_house() {
    require_sandbox();
    // The command's second stage (its subreaper in the house) SIGKILLed,
    // not its group: the stray is orphaned in the house, whose init ends
    // it.
    let (wrote, ran_in) = killed_while_housed(|_| {
        let launchers = command_launchers();
        assert!(!launchers.is_empty(), "no launcher found");
        for pid in launchers {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    })
    .await;
    assert!(ran_in.contains(HOUSE_INIT), "{ran_in}");
    assert!(!wrote, "the orphaned command wrote after its launcher died");
}

/// Waits (at most 10 s) for the house of the session in `project` to
/// have its init, then a little more for candor to hear it is ready (a
/// fixed pause is too short on a loaded machine).
async fn house_ready(project: &Path) {
    let project = project.canonicalize().unwrap();
    assert!(
        eventually(Duration::from_secs(10), || !house_inits(&project)
            .is_empty())
        .await,
        "no house was made"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// A session of two prompts, one Bash call each (`first`, then
/// `second`), the house ready before the first (it is made with the
/// session); `between` gets the project and the first card's text and
/// runs before the second prompt.
async fn two_prompts(
    env: TestEnv,
    first: &str,
    second: &str,
    between: impl FnOnce(&Path, &str),
) -> (Conn, String) {
    let (mut conn, session) = scripted(
        env,
        vec![
            respond(json!([tool("one", "Bash", json!({ "command": first }))])),
            respond(json!([text("one done")])),
            respond(json!([tool("two", "Bash", json!({ "command": second }))])),
            respond(json!([text("two done")])),
        ],
    )
    .await;
    house_ready(&conn.env.project).await;
    conn.prompt(&session, "one").await;
    between(&conn.env.project, &conn.thread(&session).card("one").text());
    conn.prompt(&session, "two").await;
    (conn, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_directory_made_again_outside_is_read_only_to_the_next_command() {
    require_sandbox();
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    let write = format!("{WHERE}; echo x > .git/config; echo wrote=$?");
    // Outside the sandbox (the user, or another program), `.git` is
    // removed and made again: the house's read-only bind was on the old
    // directory, so a house made before must not be used.
    let (conn, session) = two_prompts(env, &write, &write, |project, _| {
        std::fs::remove_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir(project.join(".git")).unwrap();
    })
    .await;
    let thread = conn.thread(&session);
    let (one, two) = (thread.card("one").text(), thread.card("two").text());
    assert!(one.contains("wrote=1"), "{one}");
    assert!(two.contains("wrote=1"), "{two}");
    assert!(!conn.env.project.join(".git/config").exists());
    // The control: nothing changed between the prompts, the second
    // command runs in the house (and is refused alike).
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    let (conn, session) = two_prompts(env, &write, &write, |_, _| {}).await;
    let two = conn.thread(&session).card("two").text();
    assert!(two.contains(HOUSE_INIT), "{two}");
    assert!(two.contains("wrote=1"), "{two}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_house_ends_with_its_session_and_with_candor() {
    require_sandbox();
    for killed in [false, true] {
        let env = TestEnv::new();
        let project = env.project.canonicalize().unwrap();
        let (mut conn, session, id) = two_calls(env, WHERE).await;
        let done = conn.response(&id).await;
        assert!(done.get("result").is_some(), "{done}");
        let two = conn.thread(&session).card("two").text();
        assert!(two.contains(HOUSE_INIT), "{two}");
        let house = |pids: &[u32]| -> Vec<String> {
            pids.iter()
                .map(cmdline)
                .filter(|l| l.contains("--house"))
                .collect()
        };
        assert!(
            !house(&processes_in(&project)).is_empty(),
            "no house in the project"
        );
        if killed {
            conn.child().start_kill().unwrap();
            let _ = conn.child().wait().await;
        } else {
            let _env = conn.end().await;
        }
        assert!(
            eventually(Duration::from_secs(5), || house(&processes_in(&project))
                .is_empty())
            .await,
            "a house outlived its session (candor killed: {killed})"
        );
    }
}

/// A stray that ends one level at a time: a chain of `depth` shells, each
/// the parent of the next and waiting on it, the deepest appending to
/// `beat.txt` every 0.1 s; out of its call's process group and scope.
fn chain(depth: u32) -> String {
    format!(
        "(unset candor_scope; setsid bash -c 'c() {{ if [ $1 -gt 0 ]; then c $(($1 - 1)) & wait; else while :; do echo x >> beat.txt; sleep 0.1; done; fi; }}; c {depth}' > /dev/null 2>&1 &)"
    )
}

/// The size of `beat.txt` in `project` `settle_ms` from now (once the
/// end the test brought about has taken effect), and again 1.5 s later:
/// whether anything still writes it.
async fn beat_sizes(project: &Path, settle_ms: u64) -> (u64, u64) {
    let beat = project.join("beat.txt");
    let size = || std::fs::metadata(&beat).map(|m| m.len()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(settle_ms)).await;
    let before = size();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    (before, size())
}

/// Runs `second` as a housed call (after a first), and whether
/// `beat.txt` still grows 1.5 s after the prompt's answer.
async fn still_beating(second: &str) -> (bool, String) {
    let (mut conn, session, id) = two_calls(TestEnv::new(), second).await;
    let done = conn.response(&id).await;
    assert!(done.get("result").is_some(), "{done}");
    let two = conn.thread(&session).card("two").text();
    assert!(
        conn.env.project.join("beat.txt").exists(),
        "the stray never ran: {two}"
    );
    let (before, after) = beat_sizes(&conn.env.project, 500).await;
    (after > before, two)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_tree_a_housed_command_leaves_ends_with_the_call() {
    require_sandbox();
    // The subreaper kills its children, whose children it then adopts,
    // one level a round: 80 levels outlast its rounds, and the rest
    // would be the house init's, a level a second.
    let (beating, two) =
        still_beating(&format!("{WHERE}; {}; sleep 1; echo started", chain(80))).await;
    assert!(two.contains(HOUSE_INIT), "{two}");
    assert!(two.contains("started"), "{two}");
    assert!(
        !beating,
        "a process outlived its housed call and wrote after the card said done"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housed_command_that_kills_its_subreaper_leaves_nothing_behind() {
    require_sandbox();
    // In the house the second stage is not PID 1: the command can kill
    // it, and its tree is orphaned to the house's init at once.
    let (beating, two) = still_beating(&format!(
        "{WHERE}; {}; sleep 1; kill -9 $PPID; sleep 5",
        chain(8)
    ))
    .await;
    assert!(two.contains(HOUSE_INIT), "{two}");
    assert!(
        !beating,
        "a process outlived its housed call and wrote after the card said done"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_file_whose_bind_detached_is_read_only_to_the_next_command() {
    require_sandbox();
    let env = TestEnv::new();
    std::fs::write(env.project.join(".envrc"), "safe\n").unwrap();
    let write = format!("{WHERE}; echo evil > .envrc; echo wrote=$?");
    // Outside the sandbox, `.envrc` is unlinked and linked again: the
    // same file (device, inode, birth), but the house's read-only bind
    // was on the name removed, and went with it.
    let (conn, session) = two_prompts(env, &write, &write, |project, _| {
        let (envrc, keep) = (project.join(".envrc"), project.join("keep"));
        std::fs::hard_link(&envrc, &keep).unwrap();
        std::fs::remove_file(&envrc).unwrap();
        std::fs::hard_link(&keep, &envrc).unwrap();
        std::fs::remove_file(&keep).unwrap();
    })
    .await;
    let thread = conn.thread(&session);
    let (one, two) = (thread.card("one").text(), thread.card("two").text());
    assert!(one.contains("wrote=1"), "{one}");
    assert!(two.contains("wrote=1"), "{two}");
    let envrc = std::fs::read_to_string(conn.env.project.join(".envrc")).unwrap();
    assert_eq!(envrc, "safe\n", "{two}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_house_whose_init_died_is_not_given_the_next_command() {
    require_sandbox();
    let env = TestEnv::new();
    let project = env.project.canonicalize().unwrap();
    // The house's init ends (killed from outside, as the OOM killer or a
    // user's `kill` would): its PID namespace can hold no process again.
    let (conn, session) = two_prompts(env, "true", "echo ran=$((40 + 2))", |_, _| {
        let inits = house_inits(&project);
        assert!(!inits.is_empty(), "no house init in the project");
        for pid in inits {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    })
    .await;
    let two = conn.thread(&session).card("two").text();
    assert!(two.contains("ran=42"), "{two}");
}

/// The parent of `pid`, from `/proc` (as this process's PID namespace
/// numbers it).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housed_command_whose_first_stage_is_sigkilled_leaves_nothing_writing() {
    require_sandbox();
    // candor's SIGKILL of the call's process group (a hard stop, the end
    // of a session, a command that did not end when asked) kills the
    // launcher's first stage before it can poke the house's init: its
    // second stage dies of its parent's death, and the stray, out of the
    // group, is the init's to end.
    let second = format!(
        "{{ {WHERE}; }} > where.txt; {}; sleep 30; echo end",
        chain(0)
    );
    let (conn, _, _) = two_calls(TestEnv::new(), &second).await;
    let project = conn.env.project.clone();
    let beat = project.join("beat.txt");
    assert!(
        eventually(Duration::from_secs(10), || beat.exists()).await,
        "the stray never ran"
    );
    let ran_in = std::fs::read_to_string(project.join("where.txt")).unwrap_or_default();
    assert!(ran_in.contains(HOUSE_INIT), "{ran_in}");
    let firsts: Vec<i32> = command_launchers()
        .into_iter()
        .filter_map(parent_of)
        .collect();
    assert!(!firsts.is_empty(), "no launcher found");
    for pid in firsts {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let (before, after) = beat_sizes(&project, 300).await;
    assert_eq!(
        before, after,
        "the stray wrote after its launcher was killed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housed_command_cannot_signal_another_calls_processes() {
    require_sandbox();
    // Both in the house, each sees the other's processes in `/proc`: the
    // kernel's Landlock signal scope (each call its own domain) is what
    // keeps one from ending the other.
    let background = format!("{{ {WHERE}; }} > where.txt; echo $$ > a.pid; sleep 30; echo end");
    let attack = format!(
        "{WHERE}; test -e /proc/$(cat a.pid) && echo seen; kill -9 $(cat a.pid); echo kill=$?; sleep 2 & kill -9 $!; echo own=$?"
    );
    let (mut conn, session) = scripted(
        TestEnv::new(),
        after_a_first(
            json!({ "command": background, "run_in_background": true }),
            vec![json!({"delayMs": 500, "content": [tool("three", "Bash", json!({ "command": attack }))]})],
        ),
    )
    .await;
    conn.prompt(&session, "go").await;
    let project = conn.env.project.clone();
    let ran_in = std::fs::read_to_string(project.join("where.txt")).unwrap_or_default();
    assert!(ran_in.contains(HOUSE_INIT), "{ran_in}");
    let three = conn.thread(&session).card("three").text();
    assert!(
        three.contains(HOUSE_INIT) || three.contains("kill="),
        "{three}"
    );
    // The control: its own child it can end.
    assert!(three.contains("own=0"), "{three}");
    assert!(three.contains("kill=1"), "{three}");
}

/// Prints the command's parent (`parent=<pid>`), its parent's parent
/// (`grandparent=<pid>`) and the parent's command line: in a room, a copy
/// of the house's init (its command line), the init's child.
const PARENT: &str = "echo parent=$PPID; awk '{print \"grandparent=\" $4}' /proc/$PPID/stat; tr '\\0' ' ' < /proc/$PPID/cmdline; echo";

/// The number after `name=` on a line of `text`.
fn number(text: &str, name: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{name}=")))
        .and_then(|n| n.trim().parse().ok())
}

/// Whether a card printed by [`PARENT`] shows a room: the parent is not
/// PID 1 but its child, with the house init's command line.
fn in_a_room(card: &str) -> bool {
    number(card, "parent").is_some_and(|p| p != 1)
        && number(card, "grandparent") == Some(1)
        && card.contains(HOUSE_INIT)
}

/// The `tool/result` record of call `id` in `session`'s log.
fn result_of(conn: &Conn, session: &str, id: &str) -> Value {
    conn.env
        .log(session)
        .into_iter()
        .find(|r| r["type"] == "tool/result" && r["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housed_command_runs_in_a_room_and_its_end_is_the_commands() {
    require_sandbox();
    let second = format!("{PARENT}; echo out; echo err >&2; exit 3");
    let (mut conn, session, id) = two_calls(TestEnv::new(), &second).await;
    let done = conn.response(&id).await;
    assert!(done.get("result").is_some(), "{done}");
    let two = conn.thread(&session).card("two").text();
    assert!(in_a_room(&two), "{two}");
    // The house's command line, which each room's is, names no lifeline
    // token.
    assert!(two.contains("\"token\":\"\""), "{two}");
    // Its output (both streams, through the pipe candor handed the
    // room) and its exit, as the room reported them.
    let result = result_of(&conn, &session, "two");
    let output = result["output"].as_str().unwrap();
    assert!(output.contains("out\nerr\n"), "{output}");
    assert!(output.ends_with("[exit code: 3]"), "{output}");
    assert_eq!(result["exitCode"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_hands_its_command_nothing_but_its_output() {
    require_sandbox();
    // Every descriptor the command has; and what its room holds (its
    // descriptors' targets, its environment), refused: the room is not
    // dumpable, and the command has no capability.
    let second = format!(
        "{PARENT}; for f in /proc/$$/fd/*; do echo \"fd ${{f##*/}} -> $(readlink $f)\"; done; readlink /proc/$PPID/fd/0 > /dev/null 2>&1; echo room_links=$?; head -c1 /proc/$PPID/environ > /dev/null 2>&1; echo room_environ=$?"
    );
    let (mut conn, session, id) = two_calls(TestEnv::new(), &second).await;
    let done = conn.response(&id).await;
    assert!(done.get("result").is_some(), "{done}");
    let two = conn.thread(&session).card("two").text();
    assert!(in_a_room(&two), "{two}");
    let fds: Vec<&str> = two.lines().filter(|l| l.starts_with("fd ")).collect();
    assert!(
        fds.iter().any(|l| l.contains("-> pipe:")),
        "the output pipe is not there: {two}"
    );
    // No lifeline, no house connection, no signal descriptor of the
    // room's or the init's.
    assert!(
        !fds.iter()
            .any(|l| l.contains("socket:") || l.contains("anon_inode")),
        "a descriptor leaked into the command: {two}"
    );
    assert_eq!(number(&two, "room_links"), Some(1), "{two}");
    assert_eq!(number(&two, "room_environ"), Some(1), "{two}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_housed_command_is_asked_to_end_then_ended() {
    require_sandbox();
    // The room passes candor's request on (SIGTERM to the command's
    // group); a command that ignores it is killed with all it started.
    let env = TestEnv::new();
    let project = env.project.clone();
    let asked = format!(
        "{PARENT}; trap 'echo asked >> asked.txt' TERM; {}; while :; do sleep 0.1; done",
        chain(0)
    );
    let (mut conn, session) = scripted(
        env,
        after_a_first(json!({ "command": asked, "timeout": 1500 }), vec![]),
    )
    .await;
    conn.prompt(&session, "go").await;
    let two = conn.thread(&session).card("two").text();
    assert!(in_a_room(&two), "{two}");
    assert!(
        std::fs::read_to_string(project.join("asked.txt"))
            .unwrap_or_default()
            .contains("asked"),
        "the command was not asked to end: {two}"
    );
    let result = result_of(&conn, &session, "two");
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("[timed out after 1500 ms; candor ended the command]"),
        "{result}"
    );
    let (before, after) = beat_sizes(&project, 300).await;
    assert!(before > 0, "the stray never ran");
    assert_eq!(before, after, "a process outlived its timed-out call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_housed_command_leaves_nothing_writing() {
    require_sandbox();
    let env = TestEnv::new();
    let project = env.project.clone();
    let second = format!(
        "{{ {PARENT}; }} > where.txt; (unset candor_scope; setsid bash -c 'touch started; sleep 2; echo x > finished' > /dev/null 2>&1 &); sleep 30"
    );
    let (mut conn, session, id) = two_calls(env, &second).await;
    let started = project.join("started");
    assert!(
        eventually(Duration::from_secs(10), || started.exists()).await,
        "the command never started"
    );
    conn.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answered = conn.response(&id).await;
    assert_eq!(answered["result"]["stopReason"], "cancelled", "{answered}");
    let ran_in = std::fs::read_to_string(project.join("where.txt")).unwrap_or_default();
    assert!(in_a_room(&ran_in), "{ran_in}");
    let finished = project.join("finished");
    assert!(
        !eventually(Duration::from_secs(4), || finished.exists()).await,
        "the cancelled command's stray wrote after the cancel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_command_in_a_room_is_read_then_killed_with_all_it_started() {
    require_sandbox();
    let env = TestEnv::new();
    let project = env.project.clone();
    let background = format!("{PARENT}; {}; echo running; sleep 30", chain(0));
    let (mut conn, session) = scripted(
        env,
        after_a_first(
            json!({ "command": background, "run_in_background": true }),
            vec![
                json!({"delayMs": 1000, "content": [tool("read", "BashOutput", json!({ "bash_id": "bash_1" }))]}),
                respond(json!([tool("kill", "KillShell", json!({ "shell_id": "bash_1" }))])),
            ],
        ),
    )
    .await;
    conn.prompt(&session, "go").await;
    let read = result_of(&conn, &session, "read");
    let output = read["output"].as_str().unwrap();
    assert!(in_a_room(output), "{output}");
    assert!(output.contains("running"), "{output}");
    let (before, after) = beat_sizes(&project, 300).await;
    assert!(before > 0, "the stray never ran");
    assert_eq!(
        before, after,
        "a process outlived its killed background shell"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_housed_command_that_stops_its_room_leaves_nothing_behind() {
    require_sandbox();
    // The room shares its command's Landlock domain and user: the command
    // may signal it, and SIGSTOP cannot be blocked. A stopped room hears
    // neither candor's `terminate` nor its lifeline's end; what its
    // command started must end with the call all the same.
    let env = TestEnv::new();
    let project = env.project.clone();
    let stopper = format!(
        "{PARENT}; {}; sleep 1; kill -STOP $PPID; sleep 30",
        chain(2)
    );
    let (mut conn, session) = scripted(
        env,
        after_a_first(json!({ "command": stopper, "timeout": 2500 }), vec![]),
    )
    .await;
    conn.prompt(&session, "go").await;
    let result = result_of(&conn, &session, "two");
    let output = result["output"].as_str().unwrap();
    assert!(in_a_room(output), "{output}");
    assert!(
        project.join("beat.txt").exists(),
        "the stray never ran: {output}"
    );
    let (before, after) = beat_sizes(&project, 500).await;
    assert_eq!(
        before, after,
        "a process outlived its call by stopping its room: {output}"
    );
}

/// Prints the pids of the room's children: in a room that served a
/// command before, only this command's shell.
const SIBLINGS: &str = "echo children=$(cat /proc/$PPID/task/*/children); echo self=$$";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_takes_the_next_command_only_once_everything_of_the_last_ended() {
    require_sandbox();
    let env = TestEnv::new();
    let project = env.project.clone();
    // The first command leaves a stray out of its group and scope.
    let first = format!("{PARENT}; {}; sleep 0.5; echo started", chain(1));
    let second = format!("{PARENT}; {SIBLINGS}");
    let (conn, session) = two_prompts(env, &first, &second, |_, _| {}).await;
    let thread = conn.thread(&session);
    let (one, two) = (thread.card("one").text(), thread.card("two").text());
    assert!(in_a_room(&one) && in_a_room(&two), "{one}\n{two}");
    assert!(
        project.join("beat.txt").exists(),
        "the stray never ran: {one}"
    );
    // The same room served both: once the first command ended, and
    // everything it started with it, the room took the next.
    assert_eq!(
        number(&one, "parent"),
        number(&two, "parent"),
        "{one}\n{two}"
    );
    assert_eq!(
        number(&two, "children"),
        number(&two, "self"),
        "something of the first command was still in the room: {two}"
    );
    let (before, after) = beat_sizes(&project, 0).await;
    assert_eq!(before, after, "the first command's stray outlived it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writable_root_made_again_between_commands_is_the_next_commands_to_write() {
    require_sandbox();
    let write = format!("{PARENT}; echo tmp=$TMPDIR; echo x > $TMPDIR/f; echo wrote=$?");
    // Between the prompts, the session's TMPDIR (a writable root) is
    // removed and made again: a room confined before holds its rule on
    // the old directory, so it does not take the next command.
    let (conn, session) = two_prompts(TestEnv::new(), &write, &write, |_, one| {
        let tmp = one
            .lines()
            .find_map(|l| l.trim().strip_prefix("tmp="))
            .expect("no TMPDIR printed");
        std::fs::remove_dir_all(tmp).unwrap();
        std::fs::create_dir(tmp).unwrap();
    })
    .await;
    let thread = conn.thread(&session);
    let (one, two) = (thread.card("one").text(), thread.card("two").text());
    assert!(one.contains("wrote=0"), "{one}");
    assert!(in_a_room(&two), "{two}");
    assert!(
        two.contains("wrote=0"),
        "the new TMPDIR was not writable: {two}"
    );
    // A fresh room: not the one that ran the first command.
    assert_ne!(
        number(&one, "parent"),
        number(&two, "parent"),
        "{one}\n{two}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_cannot_lower_the_limits_of_the_commands_after_it() {
    require_sandbox();
    // The first command lowers its own file size limit (its own to
    // lower), then tries its room's (`$PPID`, which would serve the next
    // command) and the house init's (PID 1, which every later room is a
    // copy of).
    let first = format!(
        "{PARENT}; echo before=$(ulimit -f); (ulimit -f 8; echo own=$(ulimit -f)); prlimit --pid $PPID --fsize=4096:4096; prlimit --pid 1 --fsize=4096:4096; true"
    );
    let second = format!("{PARENT}; echo after=$(ulimit -f)");
    let (conn, session) = two_prompts(TestEnv::new(), &first, &second, |_, _| {}).await;
    let thread = conn.thread(&session);
    let (one, two) = (thread.card("one").text(), thread.card("two").text());
    assert!(in_a_room(&one) && in_a_room(&two), "{one}\n{two}");
    assert!(one.contains("own=8"), "{one}");
    let before = one
        .lines()
        .find_map(|l| l.trim().strip_prefix("before="))
        .unwrap_or_else(|| panic!("no limit printed: {one}"));
    assert!(
        two.contains(&format!("after={before}")),
        "the first command lowered the next one's limit:\n{one}\n{two}"
    );
}

/// A process that outruns a sweep of its room's descendants: each
/// generation forks the next and ends at once, for 1.5 s (no pid lasts
/// longer than a fork), then the last appends to `beat.txt` every 0.1 s
/// for 5 s; `hydra.txt` says it started.
const HYDRA: &str = "perl -MTime::HiRes=time,sleep -e 'open H, \">hydra.txt\"; close H; $e = time + 1.5; while (time < $e) { exit if fork } for (1..50) { open F, \">>beat.txt\"; print F \"x\"; close F; sleep 0.1 }' > /dev/null 2>&1 &";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_outruns_its_rooms_sweep_does_not_outlive_its_call() {
    require_sandbox();
    let env = TestEnv::new();
    let project = env.project.clone();
    // A background command in another room crowds the house's process
    // table (a sweep reads every process's parent), then the foreground
    // one leaves two processes that never keep a pid.
    let crowd = "for i in $(seq 300); do sleep 30 & done; echo crowd; wait";
    let hydra = format!("{PARENT}; {HYDRA} {HYDRA} sleep 0.3; echo started");
    let (mut conn, session) = scripted(
        env,
        vec![
            respond(json!([tool(
                "crowd",
                "Bash",
                json!({ "command": crowd, "run_in_background": true })
            )])),
            json!({"delayMs": 300, "content": [tool("one", "Bash", json!({ "command": hydra }))]}),
            respond(json!([text("done")])),
        ],
    )
    .await;
    house_ready(&conn.env.project).await;
    conn.prompt(&session, "go").await;
    let one = conn.thread(&session).card("one").text();
    assert!(in_a_room(&one), "{one}");
    assert!(one.contains("started"), "{one}");
    assert!(
        project.join("hydra.txt").exists(),
        "the stray never ran: {one}"
    );
    let (before, after) = beat_sizes(&project, 1500).await;
    assert_eq!(
        before, after,
        "a process outlived its call's sweep and wrote after the card said done"
    );
    // The other room's processes are its own: the background command
    // still runs.
    let sleepers = processes_in(&project.canonicalize().unwrap())
        .into_iter()
        .filter(|pid| cmdline(pid).starts_with("sleep 30"))
        .count();
    assert!(
        sleepers >= 300,
        "the background command's processes were ended: {sleepers}"
    );
}
