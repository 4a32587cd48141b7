//! Whether a project's own settings may apply: the project is *trusted*.
//!
//! A repository the user just cloned can carry `.claude/settings.json`,
//! `.claude/settings.local.json` and `.codex/`. What in them would run code
//! or loosen a permission (hooks, `allow` rules, a starting mode that asks
//! less) applies only in a trusted project; what only restricts (`deny`
//! and `ask` rules, `plan` mode, turning off the project's own hooks)
//! applies everywhere. `bypassPermissions` never comes from a project.
//!
//! A project is trusted when, in this order:
//! 1. Claude Code trusts it: `~/.claude.json` (or
//!    `$CLAUDE_CONFIG_DIR/.claude.json`) has `projects["<dir>"]
//!    .hasTrustDialogAccepted: true` for the project or a folder above it;
//! 2. Codex trusts it: `[projects."<dir>"] trust_level = "trusted"` in
//!    `$CODEX_HOME/config.toml`, the nearest entry at or above it;
//! 3. the user told candor so: [`Store`], `$CANDOR_HOME/trust.json`, holds
//!    the answer for the project *and for what it wanted then* (the
//!    [`digest`] of the list the user was shown). When the project's wants
//!    change (a pull added a hook), candor asks again.
//!
//! Otherwise the session starts without them, a notice lists them, and at
//! the first prompt candor asks once (`trust/requested`, a permission
//! request listing each hook command, each allow rule and the mode).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::config::Config;

/// The largest trust file read (`~/.claude.json` keeps history and grows;
/// a bigger one is treated as saying nothing, so candor asks rather than
/// reading without end).
const MAX_STORE: u64 = 64 * 1024 * 1024;

/// What the user's own records say of a project: who trusts it, if anyone.
pub fn trusted_by(config: &Config, project: &Path) -> Option<String> {
    if let Some(file) = config.claude.as_ref().and_then(|c| c.global_file.as_ref())
        && claude_trusts(file, project)
    {
        return Some(format!("Claude Code ({})", file.display()));
    }
    if let Some(home) = config.codex.as_ref().and_then(|c| c.home.as_ref()) {
        let path = home.join("config.toml");
        if let Ok(Some(codex)) = super::codex::read_toml(&path)
            && super::codex::trusted(Some(&codex), project)
        {
            return Some(format!("Codex ({})", path.display()));
        }
    }
    None
}

/// Where a project that wants something stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// The user's own record trusts the folder (`by` names it): whatever
    /// the project wants applies.
    Recorded { by: String },
    /// The user answered candor for exactly these wants.
    Answered { trusted: bool },
    /// Neither: candor asks.
    Unknown,
}

/// Where `project` stands for `wants` (the user's records first, then
/// their answers in `store`).
pub fn standing(config: &Config, store: &Store, project: &Path, wants: &[String]) -> Standing {
    if let Some(by) = trusted_by(config, project) {
        return Standing::Recorded { by };
    }
    match store.answer(project, &digest(wants)) {
        Some(trusted) => Standing::Answered { trusted },
        None => Standing::Unknown,
    }
}

/// Whether Claude Code's global config trusts `project` or a folder above.
pub fn claude_trusts(global_file: &Path, project: &Path) -> bool {
    let Some(Value::Object(config)) = read_json(global_file) else {
        return false;
    };
    let Some(projects) = config.get("projects").and_then(Value::as_object) else {
        return false;
    };
    project.ancestors().any(|dir| {
        projects
            .get(dir.to_string_lossy().as_ref())
            .and_then(|p| p.get("hasTrustDialogAccepted"))
            .and_then(Value::as_bool)
            == Some(true)
    })
}

/// A JSON file of the user's, read as settings are (a regular file, not
/// blocking on a FIFO, at most [`MAX_STORE`] bytes); `None` for anything else.
fn read_json(path: &Path) -> Option<Value> {
    let text = super::read_capped(path, MAX_STORE).ok()??;
    serde_json::from_str(&text).ok()
}

/// The digest an answer binds to: of the wants, in order, as shown.
pub fn digest(wants: &[String]) -> String {
    let mut hasher = Sha256::new();
    for want in wants {
        hasher.update(want.as_bytes());
        hasher.update([0]);
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// One remembered answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// `true`: trusted; `false`: the user said never.
    pub trusted: bool,
    /// The [`digest`] of the wants the user was shown.
    pub digest: String,
    /// When (RFC 3339).
    pub at: String,
}

/// `$CANDOR_HOME/trust.json`: `{"projects": {"<dir>": Answer}}`.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
}

impl Store {
    pub fn new(candor_home: &Path) -> Self {
        Self {
            path: candor_home.join("trust.json"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The remembered answers; an error for a store that exists but cannot
    /// be read (it is then never overwritten).
    fn projects(&self) -> Result<Map<String, Value>, String> {
        match std::fs::symlink_metadata(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(e.to_string()),
            Ok(_) => {}
        }
        match read_json(&self.path) {
            Some(Value::Object(root)) => match root.get("projects") {
                None => Ok(Map::new()),
                Some(Value::Object(p)) => Ok(p.clone()),
                Some(_) => Err("`projects` is not an object".into()),
            },
            _ => Err("it is not a JSON object (or is too large)".into()),
        }
    }

    /// The answer remembered for `project` and exactly these wants.
    pub fn answer(&self, project: &Path, digest: &str) -> Option<bool> {
        let projects = self.projects().ok()?;
        let entry = projects.get(project.to_string_lossy().as_ref())?;
        let answer: Answer = serde_json::from_value(entry.clone()).ok()?;
        (answer.digest == digest).then_some(answer.trusted)
    }

    /// Remembers an answer (written to a temporary file, then renamed over
    /// the store, so a crash leaves the old store or the new one).
    pub fn remember(&self, project: &Path, answer: Answer) -> std::io::Result<()> {
        // One writer at a time in this process (sessions answer on their
        // own tasks); another candor process may still race, and the last
        // write wins.
        static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _writing = WRITING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut projects = self.projects().map_err(|e| {
            std::io::Error::other(format!(
                "{} cannot be read ({e}); it is left as it is",
                self.path.display()
            ))
        })?;
        projects.insert(
            project.to_string_lossy().into_owned(),
            serde_json::to_value(answer).map_err(std::io::Error::other)?,
        );
        let mut root = Map::new();
        root.insert("projects".into(), Value::Object(projects));
        let text =
            serde_json::to_string_pretty(&Value::Object(root)).map_err(std::io::Error::other)?;
        if let Some(dir) = self.path.parent() {
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o700,
            )
            .create(dir)?;
        }
        let temp = self.path.with_extension(format!(
            "json.{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        // Only the user's, like the logs: who trusts what is theirs to know.
        std::io::Write::write_all(
            &mut std::os::unix::fs::OpenOptionsExt::mode(
                std::fs::OpenOptions::new().write(true).create_new(true),
                0o600,
            )
            .open(&temp)?,
            text.as_bytes(),
        )?;
        std::fs::rename(&temp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_trust_is_inherited_from_a_folder_above() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".claude.json");
        std::fs::write(
            &file,
            r#"{"projects": {"/work": {"hasTrustDialogAccepted": true}, "/other": {"hasTrustDialogAccepted": false}}}"#,
        )
        .unwrap();
        assert!(claude_trusts(&file, Path::new("/work/app")));
        assert!(!claude_trusts(&file, Path::new("/other/app")));
        assert!(!claude_trusts(&file, Path::new("/elsewhere")));
        assert!(!claude_trusts(
            &dir.path().join("missing"),
            Path::new("/work")
        ));
    }

    #[test]
    fn an_answer_binds_to_what_was_shown() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let project = Path::new("/p");
        let shown = digest(&["hook `a`".into()]);
        assert_eq!(store.answer(project, &shown), None);
        store
            .remember(
                project,
                Answer {
                    trusted: true,
                    digest: shown.clone(),
                    at: "now".into(),
                },
            )
            .unwrap();
        assert_eq!(store.answer(project, &shown), Some(true));
        let more = digest(&["hook `a`".into(), "hook `b`".into()]);
        assert_eq!(store.answer(project, &more), None, "new wants ask again");
        assert_eq!(store.answer(Path::new("/q"), &shown), None);
        assert_ne!(digest(&["ab".into()]), digest(&["a".into(), "b".into()]));
    }
}
