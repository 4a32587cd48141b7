//! What a new session records about where it works (`session/environment`):
//! the platform, the shell, the date, the working directory, the git
//! repository it is in and the project's instruction files
//! ([`crate::bridges::instructions`]). The system prompt is assembled from
//! that record ([`super::system`]), never from the disk at request time, so
//! every request of a session, and of the session loaded again, is sent the
//! same one.
//!
//! Git is asked with a [`GIT_BUDGET`] for all its answers (a huge or
//! network-mounted repository leaves what it could not say as
//! `incomplete`), through `tools::exec::git`, which keeps a repository's
//! own config from running anything.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::bridges::instructions;
use crate::config::Config;
use crate::event_log::{AddedDirectory, ClientPrompt, Environment, GitFacts, Instructions};
use crate::interception::policy::ReadDenies;
use crate::tools::exec;

/// The time git has for everything it is asked.
pub(crate) const GIT_BUDGET: Duration = Duration::from_millis(200);
/// The time reading the instruction files may take.
const FILES_BUDGET: Duration = Duration::from_secs(2);
/// Status lines given to the model.
const STATUS_LINES: usize = 30;
/// Commit subjects given to the model.
const COMMITS: usize = 5;
/// The longest status line, branch name or commit subject kept.
const LINE_CHARS: usize = 200;
/// The most of one git command's output read.
const GIT_OUTPUT: usize = 256 * 1024;

/// What gathering reads from the configuration.
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    pub(crate) cwd: PathBuf,
    pub(crate) home: Option<PathBuf>,
    pub(crate) codex_home: Option<PathBuf>,
    pub(crate) claude_dir: Option<PathBuf>,
    pub(crate) login_shell: Option<String>,
    pub(crate) denies: ReadDenies,
    /// The session's additional directories (`crate::roots`).
    pub(crate) roots: Vec<AddedDirectory>,
    /// The client's system prompt.
    pub(crate) client_prompt: Option<ClientPrompt>,
}

impl Sources {
    pub(crate) fn new(config: &Config, cwd: &Path, denies: ReadDenies) -> Self {
        Self {
            cwd: cwd.to_owned(),
            home: config.user_home.clone(),
            codex_home: config.codex.as_ref().and_then(|c| c.home.clone()),
            claude_dir: config.claude.as_ref().and_then(|c| c.user_dir.clone()),
            login_shell: config.login_shell.clone(),
            denies,
            roots: Vec::new(),
            client_prompt: None,
        }
    }
}

/// Gathers the facts: at most [`GIT_BUDGET`] waiting on git and
/// `FILES_BUDGET` (2 s) on the instruction files, which are read at the
/// same time.
pub(crate) async fn gather(sources: Sources) -> Environment {
    let cwd = sources.cwd.clone();
    let repo = instructions::repository_root(&cwd);
    let git = async {
        match &repo {
            Some(root) => Some(git_facts(root).await),
            None => None,
        }
    };
    let files = tokio::task::spawn_blocking({
        let sources = sources.clone();
        move || load_instructions(&sources)
    });
    // A file on a mount that stopped answering must not hold the session.
    let files = tokio::time::timeout(FILES_BUDGET, files);
    let (git, files) = tokio::join!(git, files);
    let (instructions, mut notes) = match files {
        Ok(Ok(loaded)) => loaded,
        Ok(Err(e)) => (
            Vec::new(),
            vec![format!("the instruction files could not be read: {e}")],
        ),
        Err(_) => (
            Vec::new(),
            vec![format!(
                "the instruction files took over {} s to read; none were loaded",
                FILES_BUDGET.as_secs()
            )],
        ),
    };
    if let Some(why) = git.as_ref().and_then(|g| g.incomplete.as_ref()) {
        notes.push(format!("git: {why}"));
    }
    let uname = nix::sys::utsname::uname().ok();
    Environment {
        platform: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        os_release: uname.map(|u| u.release().to_string_lossy().into_owned()),
        shell: sources.login_shell.map(|s| clean(&s)),
        date: today(),
        cwd,
        git,
        instructions,
        notes,
        additional_directories: sources.roots,
        client_prompt: sources.client_prompt,
    }
}

/// The instruction files a session in `sources.cwd` loads, and the notes
/// on what it could not load or cut.
fn load_instructions(sources: &Sources) -> (Vec<Instructions>, Vec<String>) {
    instructions::load_in(
        &sources.cwd,
        sources.home.as_deref(),
        sources.codex_home.as_deref(),
        sources.claude_dir.as_deref(),
        &sources.denies,
        &crate::roots::real(&sources.roots),
    )
}

/// Today's date in UTC, `YYYY-MM-DD`.
fn today() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    now.get(..10).unwrap_or(&now).to_owned()
}

/// Branch, status and recent commits, all within [`GIT_BUDGET`].
async fn git_facts(root: &Path) -> GitFacts {
    let deadline = Instant::now() + GIT_BUDGET;
    let left = || deadline.saturating_duration_since(Instant::now());
    let run = |args: &'static [&'static str], filters: Vec<String>| {
        let cmd = exec::git(args, &filters, root);
        async move { exec::output_of(cmd, GIT_OUTPUT, left()).await }
    };
    let (drivers, branch, log) = tokio::join!(
        run(
            &[
                "config",
                "--null",
                "--name-only",
                "--get-regexp",
                r"^filter\."
            ],
            Vec::new()
        ),
        run(&["symbolic-ref", "--short", "-q", "HEAD"], Vec::new()),
        run(
            &["log", "-n", "5", "--no-show-signature", "--format=%s"],
            Vec::new()
        ),
    );
    let mut problems = Vec::new();
    // No filter configured is git's exit status 1: nothing to turn off.
    // Drivers that could not all be named cannot all be turned off: then
    // git status (which runs them) is not asked.
    let filters = match drivers {
        Ok((out, false)) => Ok(filter_names(&out)),
        Ok((_, true)) => Err(format!(
            "the repository's config names filter drivers past the {} KiB candor reads",
            GIT_OUTPUT / 1024
        )),
        Err(why) if why == "exited with status 1" => Ok(Vec::new()),
        Err(why) => Err(format!("git config {why}")),
    };
    let status_args = &[
        "status",
        "--porcelain=v1",
        "--ignore-submodules=all",
        "--untracked-files=normal",
    ];
    let status = match filters {
        Ok(filters) => run(status_args, filters).await,
        Err(why) => Err(format!("was not run ({why})")),
    };
    let branch = match branch {
        Ok((out, _)) => lines(&out).next().map(|b| clean(&b)),
        // `symbolic-ref -q` says nothing, with status 1, when HEAD is
        // detached.
        Err(why) if why == "exited with status 1" => Some("HEAD (detached)".to_owned()),
        Err(why) => {
            problems.push(format!("git could not name the branch ({why})"));
            None
        }
    };
    let commits = match log {
        Ok((out, _)) => lines(&out).take(COMMITS).map(|l| clean(&l)).collect(),
        Err(_) => Vec::new(),
    };
    let (status, status_more) = match status {
        Ok((out, cut)) => {
            let all: Vec<String> = lines(&out).collect();
            let more = all.len().saturating_sub(STATUS_LINES) as u64;
            if cut {
                problems.push(format!(
                    "git status said more than {} KiB; the count of changes is a lower bound",
                    GIT_OUTPUT / 1024
                ));
            }
            (
                all.into_iter()
                    .take(STATUS_LINES)
                    .map(|l| clean(&l))
                    .collect(),
                more,
            )
        }
        Err(why) => {
            problems.push(format!("git status {why}"));
            (Vec::new(), 0)
        }
    };
    GitFacts {
        root: root.to_owned(),
        branch,
        status,
        status_more,
        commits,
        incomplete: (!problems.is_empty()).then(|| problems.join("; ")),
    }
}

/// The filter drivers named in `git config --null --name-only` output
/// (`filter.<name>.<key>`).
fn filter_names(out: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = out
        .split(|b| *b == 0)
        .filter_map(|key| std::str::from_utf8(key).ok())
        .filter_map(|key| {
            let rest = key.strip_prefix("filter.")?;
            let (name, _) = rest.rsplit_once('.')?;
            Some(name.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn lines(out: &[u8]) -> impl Iterator<Item = String> + '_ {
    out.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| String::from_utf8_lossy(l).into_owned())
}

/// A line without control characters, at most [`LINE_CHARS`] long.
fn clean(line: &str) -> String {
    let kept: String = line.chars().filter(|c| !c.is_control()).collect();
    crate::text::shorten(&kept, LINE_CHARS)
}

/// What a new session in `cwd` would tell the model about where it works:
/// the facts of its `session/environment` record, gathered as a session
/// gathers them (git within 200 ms, the instruction files under the
/// user's Read deny rules), and the system prompt assembled from them. The
/// `environment` bench measures this.
pub async fn system_prompt(
    config: &crate::Config,
    cwd: &std::path::Path,
) -> (crate::event_log::Environment, String) {
    let context = std::sync::Arc::new(crate::bridges::SessionContext::new(
        "system-prompt".into(),
        config.sessions_dir().join("system-prompt.jsonl"),
        cwd.to_owned(),
        config.user_home.clone(),
    ));
    let denies = crate::bridges::session_policy::build(config, &context, false)
        .map(|b| crate::interception::policy::ReadDenies::of(&b.policy.rules))
        .unwrap_or_default();
    let sources = Sources::new(config, cwd, denies);
    let environment = gather(sources).await;
    let text = super::system::assemble(Some(&environment), cwd);
    (environment, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_names_come_from_the_keys() {
        let out = b"filter.lfs.clean\0filter.lfs.smudge\0filter.a.b.process\0";
        assert_eq!(filter_names(out), vec!["a.b", "lfs"]);
    }

    #[test]
    fn lines_lose_control_characters() {
        assert_eq!(clean("a\x1b[31mb\r"), "a[31mb");
    }
}
