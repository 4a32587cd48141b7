//! Bridges: the user's existing Claude Code (and Codex) hooks and
//! permission rules, running in candor through the interception seam.
//!
//! A bridge reads the other tool's settings files when a session starts and
//! turns them into [`Loaded`]: pre-execute hooks (each a
//! [`crate::interception::PreToolHook`], so their rewrites go
//! through the same consistency unit as every other), post-execute hooks,
//! event hooks, permission rules and a starting mode, plus the problems it
//! met (a broken file never stops a session: the problem is a notice and
//! the other files still load). [`runner`] runs one command hook; the
//! bridges differ in what its exit code and output mean.

pub mod agent_definitions;
pub mod claude;
pub mod codex;
pub mod commands;
pub mod hook;
pub mod instructions;
pub mod mcp;
pub mod policy;
pub mod runner;
pub mod trust;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use regex::Regex;

use crate::event_log::NoticeLevel;
use crate::interception::events::EventHook;
use crate::interception::policy::{Anchors, Mode, Rule};
use crate::interception::{Policy, PostToolHook, PreToolHook};

/// The largest settings file read.
const MAX_SETTINGS: u64 = 4 * 1024 * 1024;

/// Reads a settings file: `Ok(None)` when there is none; an error for one
/// that is not a regular file (a link to `/dev/stdin` or a FIFO in a cloned
/// repository must not block the session or read its input) or is larger
/// than 4 MiB.
pub(crate) fn read_settings(path: &Path) -> Result<Option<String>, String> {
    read_capped(path, MAX_SETTINGS)
}

/// [`read_settings`] with another cap (`max` bytes).
pub(crate) fn read_capped(path: &Path, max: u64) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    match file.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err("is not a regular file".into()),
        Err(e) => return Err(format!("cannot be read ({e})")),
    }
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if text.len() as u64 > max {
        return Err(format!("is larger than {max} bytes"));
    }
    Ok(Some(text))
}

/// The session a bridge's hooks run for (what their input names).
#[derive(Debug)]
pub struct SessionContext {
    pub session_id: String,
    /// candor's event log of the session (a hook's `transcript_path`).
    pub transcript_path: PathBuf,
    /// The session's root (`CLAUDE_PROJECT_DIR`).
    pub project_dir: PathBuf,
    /// `~` in permission rules and `if` filters.
    pub home: Option<PathBuf>,
    /// `CLAUDE_ENV_FILE`: where SessionStart hooks write `export` lines
    /// for the session's later Bash commands (`<log>.env`, beside the log).
    pub env_file: PathBuf,
    /// The running turn (Codex hooks are told its id and the model).
    turn: std::sync::Mutex<TurnInfo>,
}

/// The turn a hook runs in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnInfo {
    pub turn_id: String,
    pub model: Option<String>,
}

impl SessionContext {
    pub fn new(
        session_id: String,
        transcript_path: PathBuf,
        project_dir: PathBuf,
        home: Option<PathBuf>,
    ) -> Self {
        Self {
            session_id,
            env_file: transcript_path.with_extension("env"),
            transcript_path,
            project_dir,
            home,
            turn: std::sync::Mutex::new(TurnInfo::default()),
        }
    }

    pub fn turn(&self) -> TurnInfo {
        self.turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Called as each prompt turn starts.
    pub fn set_turn(&self, turn: TurnInfo) {
        *self
            .turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = turn;
    }
}

/// What a bridge found in the settings it read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub pre_hooks: Vec<Arc<dyn PreToolHook>>,
    pub post_hooks: Vec<Arc<dyn PostToolHook>>,
    pub event_hooks: Vec<Arc<dyn EventHook>>,
    /// Permission rules, in Claude Code's syntax, with the file each came
    /// from (for the notice when one cannot be parsed).
    pub allow: Vec<(String, PathBuf)>,
    pub ask: Vec<(String, PathBuf)>,
    pub deny: Vec<(String, PathBuf)>,
    /// The starting mode the settings ask for.
    pub default_mode: Option<Mode>,
    /// What was wrong, each naming the file (a notice in the session and a
    /// warning on stderr).
    pub problems: Vec<String>,
    /// What was read, and what was left out, for the user (`info` notices).
    pub remarks: Vec<String>,
    /// What the project's own settings add that only trust gives (hooks,
    /// allow rules, a mode that asks less), each as the user is shown it;
    /// listed whether applied (trusted) or not, so that what is applied is
    /// what the user was shown (its digest is what an answer binds to).
    pub wants: Vec<String>,
    /// The paths the project's hooks name (`CommandHook::named_paths`):
    /// trust binds to those that are files of the project, as they are.
    pub scripts: Vec<PathBuf>,
    /// Every hook loaded, described (for `candor doctor`).
    pub summaries: Vec<hook::HookSummary>,
    /// The sandbox settings of each file that has some, in the order read.
    pub sandbox: Vec<crate::sandbox::Layer>,
}

impl Loaded {
    /// Takes the hooks and messages of a read hook table.
    pub fn add(&mut self, table: hook::Table) {
        self.problems.extend(table.problems);
        self.remarks.extend(table.remarks);
        for hook in table.hooks {
            self.summaries.push(hook.summary());
            let event = hook.event();
            let hook = Arc::new(hook);
            match event {
                hook::HookEvent::PreToolUse => self.pre_hooks.push(hook),
                hook::HookEvent::PostToolUse => self.post_hooks.push(hook),
                hook::HookEvent::Session(_) => self.event_hooks.push(hook),
            }
        }
    }

    /// Adds what was loaded to `policy`: hooks after the ones it has, rules
    /// beside its rules, the starting mode unless `mode_set` (the policy
    /// file chose one). Returns the notices for the session (problems as
    /// warnings, also logged; remarks as information).
    pub fn merge_into(
        self,
        policy: &mut Policy,
        root: &Path,
        home: Option<&Path>,
        mode_set: bool,
    ) -> Vec<(NoticeLevel, String)> {
        let mut notices = Vec::new();
        let mut problems = self.problems;
        let mut broken = Vec::new();
        for (list, rules, denies) in [
            (self.allow, &mut policy.rules.allow, false),
            (self.ask, &mut policy.rules.ask, false),
            (self.deny, &mut policy.rules.deny, true),
        ] {
            for (text, file) in list {
                // `/p` in a rule is relative to the project of the settings
                // file: the folder holding its `.claude` (or `.codex`).
                let project = file
                    .parent()
                    .filter(|d| {
                        d.file_name()
                            .is_some_and(|n| n == ".claude" || n == ".codex")
                    })
                    .and_then(Path::parent)
                    .unwrap_or(root);
                let anchors = Anchors {
                    cwd: root,
                    project,
                    home,
                };
                match Rule::parse_in(&text, anchors) {
                    Ok(rule) => rules.push(rule),
                    Err(e) if denies => {
                        broken.push(text.clone());
                        problems.push(format!(
                            "settings {}: the deny rule cannot be read ({e}); until it is fixed, candor asks before every call of the tool it names",
                            file.display()
                        ));
                    }
                    Err(e) => problems.push(format!(
                        "settings {}: the permission rule cannot be used ({e}); skipped",
                        file.display()
                    )),
                }
            }
        }
        for text in broken {
            policy.rules.deny_unreadable(&text);
        }
        policy.hooks.extend(self.pre_hooks);
        policy.post_hooks.extend(self.post_hooks);
        policy.event_hooks.extend(self.event_hooks);
        if !mode_set && let Some(mode) = self.default_mode {
            policy.mode = mode;
        }
        for problem in problems {
            tracing::warn!("{problem}");
            notices.push((NoticeLevel::Warning, problem));
        }
        for remark in self.remarks {
            tracing::info!("{remark}");
            notices.push((NoticeLevel::Info, remark));
        }
        notices
    }
}

/// Which tool (or source, or reason) names a hook group applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// `*`, empty, or absent.
    All,
    /// Exact names (`Bash`, `Edit|Write`, `Edit, Write`).
    Names(Vec<String>),
    /// Anything else: an unanchored regular expression.
    Regex(Regex),
}

impl Matcher {
    /// Parses a matcher; `exact` says which characters keep it a list of
    /// names (the bridges differ). An invalid expression is an `Err`; the
    /// hook then never matches, as upstream.
    pub fn parse(text: Option<&str>, exact: fn(char) -> bool) -> Result<Matcher, String> {
        let text = text.map(str::trim).unwrap_or("");
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        if text.chars().all(exact) {
            return Ok(Matcher::Names(
                text.split(['|', ','])
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ));
        }
        Regex::new(text)
            .map(Matcher::Regex)
            .map_err(|e| format!("the matcher {text:?} is not a valid regular expression: {e}"))
    }

    /// The matcher as configured: `*`, names joined by `|`, or the
    /// expression.
    pub fn describe(&self) -> String {
        match self {
            Matcher::All => "*".into(),
            Matcher::Names(names) => names.join("|"),
            Matcher::Regex(re) => re.as_str().to_owned(),
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == name),
            Matcher::Regex(re) => re.is_match(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude_exact(c: char) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|')
    }

    #[test]
    fn matchers_follow_claude_code() {
        let m = |t: Option<&str>| Matcher::parse(t, claude_exact).unwrap();
        assert!(
            m(None).matches("Bash") && m(Some("")).matches("Read") && m(Some("*")).matches("x")
        );
        assert!(m(Some("Edit|Write")).matches("Write"));
        assert!(m(Some("Edit, Write")).matches("Edit"));
        assert!(
            !m(Some("Edit|Write")).matches("MultiEdit"),
            "names are exact"
        );
        assert!(
            m(Some("Edit.*")).matches("NotebookEdit"),
            "regexes are unanchored"
        );
        assert!(!m(Some("^Edit$")).matches("NotebookEdit"));
        assert!(m(Some("mcp__memory__.*")).matches("mcp__memory__create"));
        assert!(
            !m(Some("mcp__memory")).matches("mcp__memory__create"),
            "bare is exact"
        );
        assert!(Matcher::parse(Some("(unclosed"), claude_exact).is_err());
    }
}
