//! What a new session tells the model about where it works, in a
//! repository of 10 000 files: gathering the `session/environment` facts
//! (git's branch, status and recent commits, through the hardened
//! `tools::exec::git`; the instruction files with their imports) and
//! assembling the system prompt, as `candor::system_prompt` does for a
//! session.
//!
//! Run: `cargo bench --bench environment`. Target: 50 ms. The repository
//! has 10 000 committed files in 100 directories, 50 of them changed and 20
//! new ones, 20 commits, and an `AGENTS.md`, a `CLAUDE.md` importing two
//! files and a `CLAUDE.local.md`. Reports the first (cold) run and the
//! median and worst of 30 more.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::Path;
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const RUNS: usize = 30;
const TARGET_MS: f64 = 50.0;

fn git(dir: &Path, args: &[&str]) {
    #[allow(clippy::disallowed_methods)] // the bench sets up a repository
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.com")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.com")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn repository(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    for i in 0..FILES {
        let dir = root.join(format!("src/m{:02}", i % 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.rs")), format!("// file {i}\n")).unwrap();
    }
    std::fs::write(
        root.join("AGENTS.md"),
        "Run `cargo test` before you finish.\n".repeat(20),
    )
    .unwrap();
    std::fs::write(
        root.join("CLAUDE.md"),
        "Project notes.\nSee @docs/style.md and @docs/testing.md\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(
        root.join("docs/style.md"),
        "Keep functions short.\n".repeat(50),
    )
    .unwrap();
    std::fs::write(
        root.join("docs/testing.md"),
        "Test what users see.\n".repeat(50),
    )
    .unwrap();
    std::fs::write(root.join("CLAUDE.local.md"), "My own notes.\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "Import the tree"]);
    for n in 1..20 {
        std::fs::write(root.join("CHANGELOG"), format!("{n}\n")).unwrap();
        git(root, &["add", "CHANGELOG"]);
        git(root, &["commit", "-q", "-m", &format!("Release {n}")]);
    }
    for i in 0..50 {
        let path = root.join(format!("src/m{:02}/f{i}.rs", i % 100));
        std::fs::write(path, "// changed\n").unwrap();
    }
    for i in 0..20 {
        std::fs::write(root.join(format!("new{i}.txt")), "new\n").unwrap();
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    repository(&root);
    let mut config = candor::Config::new(dir.path().join("home"), candor::ProviderSetting::None);
    config.user_home = Some(dir.path().to_owned());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let once = || {
        let start = Instant::now();
        let (environment, text) = runtime.block_on(candor::system_prompt(&config, &root));
        (start.elapsed(), environment, text)
    };
    let (cold, environment, text) = once();
    let git = environment.git.as_ref().expect("a repository");
    assert!(
        git.incomplete.is_none(),
        "git did not finish: {:?}",
        git.incomplete
    );
    assert_eq!(git.status.len() as u64 + git.status_more, 70);
    assert_eq!(environment.instructions.len(), 5);
    let mut times: Vec<Duration> = (0..RUNS).map(|_| once().0).collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = ms(times[RUNS / 2]);
    println!(
        "system prompt of a {FILES}-file repository ({} bytes, {} instruction files, {} status lines):",
        text.len(),
        environment.instructions.len(),
        git.status.len() as u64 + git.status_more
    );
    println!(
        "  cold {:.1} ms; median {median:.1} ms, worst {:.1} ms of {RUNS} (target {TARGET_MS} ms)",
        ms(cold),
        ms(times[RUNS - 1])
    );
    if median > TARGET_MS {
        println!("  OVER TARGET");
    }
}
