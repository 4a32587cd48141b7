//! What the model is told about where it works: the system prompt built
//! from the session's `session/environment` record (platform, shell, date,
//! git) and the user's and the project's instruction files, the same after
//! `session/load`; a hostile repository's git config running nothing;
//! `/context`.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::mock_anthropic::{self as anthropic, MockAnthropic};
use crate::support::*;

/// Runs git in `dir` with a fixed identity and no user or system config.
fn git(dir: &Path, args: &[&str]) {
    #[allow(clippy::disallowed_methods)] // the test sets up a repository
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A project that is a git repository with one commit, a changed file and
/// a new one.
fn repository(env: &TestEnv) {
    let p = &env.project;
    git(p, &["init", "-q", "-b", "main"]);
    env.file("tracked.txt", "one\n");
    git(p, &["add", "tracked.txt"]);
    git(p, &["commit", "-q", "-m", "Add the parser"]);
    env.file("tracked.txt", "two\n");
    env.file("new.txt", "new\n");
}

/// Instruction files of every kind, each saying its name.
fn instruction_files(env: &TestEnv) {
    let dir = env.dir.path();
    std::fs::create_dir_all(dir.join(".codex")).unwrap();
    std::fs::write(dir.join(".codex/AGENTS.md"), "CODEX-USER\n").unwrap();
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/CLAUDE.md"), "CLAUDE-USER\n").unwrap();
    std::fs::write(dir.join("outside.md"), "OUTSIDE-SECRET\n").unwrap();
    env.file("AGENTS.md", "PROJECT-AGENTS: run cargo test\n");
    env.file(
        "CLAUDE.md",
        "PROJECT-CLAUDE\nStyle: @docs/style.md\nAlso @AGENTS.md and @../outside.md\n```\n@docs/fenced.md\n```\n",
    );
    env.file("docs/style.md", "STYLE-GUIDE\n");
    env.file("docs/fenced.md", "FENCED\n");
    env.file(".claude/CLAUDE.md", "DOT-CLAUDE\n");
    // Over the 32 KiB a file may give: cut, and the cut said.
    env.file(
        "CLAUDE.local.md",
        &format!("LOCAL-NOTES\n{}", "x".repeat(40 * 1024)),
    );
}

/// The configuration of a user whose Codex and Claude Code homes are in
/// the test's directory.
fn config_of(env: &TestEnv) -> candor::Config {
    let mut config = env.config();
    config.user_home = Some(env.dir.path().to_owned());
    config.login_shell = Some("/bin/zsh".into());
    config.codex = Some(candor::config::CodexLocations {
        home: Some(env.dir.path().join(".codex")),
    });
    config
}

fn system_of(request: &Value) -> String {
    request["system"].as_str().unwrap_or_default().to_owned()
}

/// Where each marker is in `text`, failing on a missing one.
fn positions(text: &str, markers: &[&str]) -> Vec<usize> {
    markers
        .iter()
        .map(|m| {
            text.find(m)
                .unwrap_or_else(|| panic!("{m} missing from the system prompt:\n{text}"))
        })
        .collect()
}

#[tokio::test]
async fn the_model_is_told_where_it_works_and_what_the_project_asks() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    repository(&env);
    instruction_files(&env);
    let config = config_of(&env);
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let requests = conn.env.model_requests();
    let system = system_of(&requests[0]);
    let order = positions(
        &system,
        &[
            "CODEX-USER",
            "CLAUDE-USER",
            "PROJECT-AGENTS",
            "PROJECT-CLAUDE",
            "STYLE-GUIDE",
            "DOT-CLAUDE",
            "LOCAL-NOTES",
        ],
    );
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{system}");
    let today = humantime::format_rfc3339(std::time::SystemTime::now()).to_string();
    for fact in [
        format!("Working directory: {}", conn.env.project.display()),
        format!(
            "Platform: {} {}",
            std::env::consts::OS,
            std::env::consts::ARCH
        ),
        "The user's shell: /bin/zsh".to_owned(),
        format!("Today's date: {}", &today[..10]),
        "Branch: main".to_owned(),
        " M tracked.txt".to_owned(),
        "?? new.txt".to_owned(),
        "- Add the parser".to_owned(),
        "prefer".to_owned(),
    ] {
        assert!(
            system.to_lowercase().contains(&fact.to_lowercase()),
            "{fact:?} missing:\n{system}"
        );
    }
    // AGENTS.md is loaded once, though CLAUDE.md imports it too; an import
    // leading out of the project, and one in a code block, are not read.
    assert_eq!(system.matches("PROJECT-AGENTS").count(), 1, "{system}");
    assert!(!system.contains("OUTSIDE-SECRET"), "{system}");
    assert!(!system.contains("FENCED"), "{system}");
    assert!(system.contains("(imported by "), "{system}");
    assert!(
        system.contains(
            "[candor: the rest of this file, 8204 bytes, was cut (the 32 KiB limit per file)]"
        ),
        "{system}"
    );
    // The facts are a record of their own, before the first prompt.
    let log = conn.env.log(&session);
    let kinds = types(&log);
    let at = kinds
        .iter()
        .position(|t| t == "session/environment")
        .unwrap();
    let prompt = kinds.iter().position(|t| t == "user/message").unwrap();
    assert!(at < prompt, "{kinds:?}");
    let environment = &log[at];
    assert_eq!(environment["git"]["branch"], "main");
    assert_eq!(environment["instructions"][6]["cut"], true);
    // The audit trail says what the model was told.
    let trail = audit(&conn.env.home, &session, false);
    assert!(trail.contains("environment: "), "{trail}");
    assert!(trail.contains("git branch main"), "{trail}");
    assert!(
        trail.contains("CLAUDE.local.md (40972 bytes, cut)"),
        "{trail}"
    );
    assert!(
        environment["notes"]
            .to_string()
            .contains("outside.md leads outside the project"),
        "{environment}"
    );
}

#[tokio::test]
async fn a_loaded_session_is_sent_the_same_system_prompt() {
    let env = TestEnv::scripted(script(vec![
        respond(json!([text("first")])),
        respond(json!([text("second")])),
    ]));
    repository(&env);
    instruction_files(&env);
    let config = config_of(&env);
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.prompt(&session, "one").await;
    let env = conn.end().await;
    // What is on disk changed; the session keeps what it started with.
    env.file("AGENTS.md", "CHANGED\n");
    env.file("tracked.txt", "three\n");
    git(&env.project, &["commit", "-qam", "Another"]);
    let config = config_of(&env);
    let mut again = Conn::in_process_with(env, config);
    again.initialize().await;
    again.load(&session).await;
    again.prompt(&session, "two").await;
    let requests = again.env.model_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(system_of(&requests[1]), system_of(&requests[0]));
    assert!(!system_of(&requests[1]).contains("CHANGED"));
    let log = again.env.log(&session);
    assert_eq!(
        types(&log)
            .iter()
            .filter(|t| *t == "session/environment")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_hostile_repositorys_git_config_runs_nothing() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    repository(&env);
    let p = env.project.clone();
    let (evil, marker) = evil_script(&env);
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("users-private-file"), "x").unwrap();
    // git status runs core.fsmonitor, and a filter's clean command on a
    // file whose index entry is stale; git log --show-signature runs
    // gpg.program on a signed commit; core.worktree points git elsewhere.
    signed_commit(&p);
    env.file(".gitattributes", "* filter=x\n");
    git(&p, &["config", "filter.x.clean", &evil]);
    git(&p, &["config", "filter.x.required", "true"]);
    git(&p, &["config", "log.showSignature", "true"]);
    git(&p, &["config", "gpg.program", &evil]);
    git(
        &p,
        &["config", "core.worktree", &elsewhere.display().to_string()],
    );
    git(&p, &["config", "core.fsmonitor", &evil]);
    // The size the index has (4 bytes): only hashing it (through the
    // filter) tells git whether it changed.
    std::fs::write(p.join("tracked.txt"), "six\n").unwrap();
    let system = first_system_prompt_running_nothing(env, &marker).await;
    assert!(system.contains("Branch: main"), "{system}");
    assert!(system.contains("- signed"), "{system}");
    assert!(system.contains("?? .gitattributes"), "{system}");
    assert!(!system.contains("users-private-file"), "{system}");
}

/// Makes HEAD a commit carrying a (bogus) signature, which makes
/// `log.showSignature` ask `gpg.program` about it.
fn signed_commit(dir: &Path) {
    #[allow(clippy::disallowed_methods)] // the test sets up a repository
    let out = |args: &[&str], input: Option<&str>| -> String {
        use std::io::Write as _;
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        if let Some(text) = input {
            stdin.write_all(text.as_bytes()).unwrap();
        }
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "git {args:?}");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let tree = out(&["write-tree"], None);
    let parent = out(&["rev-parse", "HEAD"], None);
    let commit = format!(
        "tree {tree}\nparent {parent}\nauthor t <t@example.com> 1700000000 +0000\ncommitter t <t@example.com> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n"
    );
    let id = out(
        &["hash-object", "-t", "commit", "-w", "--stdin"],
        Some(&commit),
    );
    out(&["update-ref", "HEAD", &id], None);
}

#[tokio::test]
async fn context_lists_the_files_and_sizes_each_part_of_the_request() {
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    repository(&env);
    instruction_files(&env);
    let config = config_of(&env);
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let requests = conn.env.model_requests().len();
    conn.prompt(&session, "/context").await;
    assert_eq!(
        conn.env.model_requests().len(),
        requests,
        "/context needs no model"
    );
    let text = conn.thread(&session).agent_text.clone();
    for wanted in [
        "candor's guidance",
        "environment and git",
        "instruction files (7)",
        "tool definitions (",
        "conversation (",
        "**total**",
        "AGENTS.md (project,",
        "style.md (imported by ",
        "CLAUDE.md (user,",
        "note: ",
        "outside.md leads outside the project",
    ] {
        assert!(text.contains(wanted), "{wanted:?} missing from\n{text}");
    }
}

#[tokio::test]
async fn an_anthropic_request_carries_the_instructions() {
    let mock = MockAnthropic::start(vec![anthropic::message(
        vec![anthropic::text("ok")],
        "end_turn",
    )])
    .await;
    let env = TestEnv::new();
    env.file("AGENTS.md", "Use tabs, never spaces.\n");
    let mut cmd = candor_command(&env);
    cmd.env("CANDOR_PROVIDER", "anthropic")
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", anthropic::KEY)
        .env("SHELL", "/bin/fish");
    let mut conn = Conn::spawn_with(env, cmd);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let requests = mock.requests();
    let system = requests[0]["system"].as_str().unwrap_or_default();
    assert!(system.starts_with("You are candor"), "{system}");
    assert!(system.contains("Use tabs, never spaces."), "{system}");
    assert!(system.contains("/bin/fish"), "{system}");
    assert!(
        system.contains("not in a git repository"),
        "the test project is no repository: {system}"
    );
}

/// A script that notes it ran in `<dir>/ran`, then passes its input on.
/// The system prompt of a session's first request, after checking that
/// nothing of the repository's ran (`marker` is what its script writes).
async fn first_system_prompt_running_nothing(env: TestEnv, marker: &Path) -> String {
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    assert!(
        !marker.exists(),
        "the repository ran {:?}",
        std::fs::read_to_string(marker)
    );
    system_of(&conn.env.model_requests()[0])
}

/// A script that says it ran (in the marker file it returns beside its
/// path) and passes its input through, as a filter would.
fn evil_script(env: &TestEnv) -> (String, std::path::PathBuf) {
    let marker = env.dir.path().join("ran");
    let evil = env.dir.path().join("evil.sh");
    std::fs::write(
        &evil,
        format!("#!/bin/sh\necho \"$0 $*\" >> {}\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&evil, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (evil.display().to_string(), marker)
}

#[tokio::test]
async fn a_filter_whose_name_holds_an_equals_sign_runs_nothing() {
    // `-c filter.a=b.clean=` is read by git as `filter.a` = `b.clean=`:
    // a driver named `a=b` would keep its clean command.
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    repository(&env);
    let p = env.project.clone();
    let (evil, marker) = evil_script(&env);
    env.file(".gitattributes", "* filter=a=b\n");
    git(&p, &["config", "filter.a=b.clean", &evil]);
    // The size the index has (4 bytes): only hashing it (through the
    // filter) tells git whether it changed.
    std::fs::write(p.join("tracked.txt"), "six\n").unwrap();
    let system = first_system_prompt_running_nothing(env, &marker).await;
    assert!(system.contains("Branch: main"), "{system}");
}

#[tokio::test]
async fn a_partial_clones_promisor_remote_is_never_fetched() {
    // An object missing from a partial clone is fetched from its promisor
    // remote, through the repository's own core.sshCommand.
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    repository(&env);
    let p = env.project.clone();
    let (evil, marker) = evil_script(&env);
    #[allow(clippy::disallowed_methods)] // the test sets up a repository
    let tree = std::process::Command::new("git")
        .args(["rev-parse", "HEAD^{tree}"])
        .current_dir(&p)
        .output()
        .unwrap();
    let tree = String::from_utf8(tree.stdout).unwrap();
    let tree = tree.trim();
    std::fs::remove_file(p.join(".git/objects").join(&tree[..2]).join(&tree[2..])).unwrap();
    git(&p, &["config", "core.repositoryformatversion", "1"]);
    git(&p, &["config", "extensions.partialClone", "origin"]);
    git(&p, &["config", "remote.origin.promisor", "true"]);
    git(
        &p,
        &["config", "remote.origin.url", "ssh://example.invalid/x"],
    );
    git(&p, &["config", "core.sshCommand", &evil]);
    let mut conn = Conn::in_process(env);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    assert_eq!(conn.env.model_requests().len(), 1);
    assert!(
        !marker.exists(),
        "the repository ran {:?}",
        std::fs::read_to_string(&marker)
    );
}

#[tokio::test]
async fn a_filter_past_what_git_config_is_read_for_runs_nothing() {
    // The driver names are read from at most 256 KiB of `git config`
    // output: a config with more must not leave the last driver on.
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    repository(&env);
    let p = env.project.clone();
    let (evil, marker) = evil_script(&env);
    let mut config = std::fs::read_to_string(p.join(".git/config")).unwrap();
    // One driver's key, many times over: 300 KB of output, one name.
    config.push_str("[filter \"a\"]\n");
    config.push_str(&"\tclean = cat\n".repeat(20_000));
    config.push_str(&format!("[filter \"zz\"]\n\tclean = {evil}\n"));
    std::fs::write(p.join(".git/config"), config).unwrap();
    env.file(".gitattributes", "* filter=zz\n");
    std::fs::write(p.join("tracked.txt"), "six\n").unwrap();
    let system = first_system_prompt_running_nothing(env, &marker).await;
    assert!(system.contains("Branch: main"), "{system}");
    assert!(system.contains("git status was not run"), "{system}");
}

#[tokio::test]
async fn a_repository_holding_the_home_directory_does_not_widen_the_project() {
    // Dotfiles kept in a git repository at ~: a project unpacked below it
    // is not in a repository of its own, and its CLAUDE.md must not reach
    // the user's files through that root.
    let env = TestEnv::scripted(script(vec![respond(json!([text("ok")]))]));
    let home = env.dir.path().to_owned();
    git(&home, &["init", "-q", "-b", "main"]);
    std::fs::write(home.join(".credentials"), "HOME-SECRET\n").unwrap();
    env.file("CLAUDE.md", "PROJECT-CLAUDE\nSee @../.credentials\n");
    let config = config_of(&env);
    let mut conn = Conn::in_process_with(env, config);
    let session = conn.ready().await;
    conn.prompt(&session, "hi").await;
    let system = system_of(&conn.env.model_requests()[0]);
    assert!(system.contains("PROJECT-CLAUDE"), "{system}");
    assert!(!system.contains("HOME-SECRET"), "{system}");
}
