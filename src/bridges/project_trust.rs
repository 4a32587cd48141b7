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
//! 3. a person told candor so, for exactly what the project wants now (the
//!    [`Offer`]: the wants and the project files its hooks run): typed
//!    `/trust` in the session (for the session: a `trust/granted` record),
//!    `/trust always`, or ran `candor trust DIR` ([`command`]) (both
//!    remembered in [`Store`], `$CANDOR_HOME/trust.json`, with the digest of
//!    each file). When the wants or a file change (a pull edits a hook's
//!    script), the answer no longer holds, and candor says which file
//!    changed.
//!
//! No answer through `session/request_permission` grants trust: an editor
//! that approves every request on its own would give it blindly.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::config::Config;

/// The largest trust file read (`~/.claude.json` keeps history and grows;
/// a bigger one is treated as saying nothing, so candor asks rather than
/// reading without end).
const MAX_STORE: u64 = 64 * 1024 * 1024;

/// The longest want (a hook command, a rule) the editor is shown whole, in
/// characters as shown; a longer one cannot be trusted from the editor
/// (`candor trust` in a terminal shows it whole).
pub const SHOWN_WANT: usize = 16 * 1024;
/// All the wants together, as the editor is shown them.
pub const SHOWN_ALL: usize = 64 * 1024;
/// The largest file trust binds to (a hook's script); a named project file
/// over it cannot be trusted by candor at all.
pub const MAX_COVERED: u64 = 4 * 1024 * 1024;
/// How many of the paths hooks name are looked at, and how many files
/// trust binds to at most (more: the project cannot be trusted by candor).
const MAX_PATHS: usize = 1024;
const MAX_FILES: usize = 64;
/// Where a shown want's lines are broken (a break candor made ends in `↩`).
const WIDTH: usize = 100;

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
    /// Neither: it waits for the user.
    Unknown,
}

/// Where `project` stands for `offer` (the user's records first, then
/// their answers in `store`).
pub fn standing(config: &Config, store: &Store, project: &Path, offer: &Offer) -> Standing {
    if let Some(by) = trusted_by(config, project) {
        return Standing::Recorded { by };
    }
    match store.answer(project, &offer.digest) {
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
    let text = super::settings_file::read_capped(path, MAX_STORE).ok()??;
    serde_json::from_str(&text).ok()
}

/// What trust binds a file a hook names to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// A regular file of the project: the `sha256:` of its bytes, its size.
    Hashed { digest: String, size: u64 },
    /// A link from inside the project to a file outside it (not the
    /// project's file: bound to where it leads).
    Outside { target: PathBuf },
    /// Trust cannot bind to it (larger than [`MAX_COVERED`], unreadable):
    /// why. The project then cannot be trusted by candor.
    Unbound { why: String },
}

/// One file a project hook runs, as trust binds to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Covered {
    /// The path as the hook names it, relative to the project.
    pub path: String,
    /// Where its links lead, relative to the project, when elsewhere.
    pub resolved: Option<String>,
    pub state: FileState,
}

impl Covered {
    /// What an answer remembers of it (`trust.json`'s `files`).
    fn key(&self) -> String {
        let state = match &self.state {
            FileState::Hashed { digest, .. } => digest.clone(),
            FileState::Outside { target } => format!("outside the project: {}", target.display()),
            FileState::Unbound { why } => format!("not bound: {why}"),
        };
        match &self.resolved {
            Some(to) => format!("{state} (→ {to})"),
            None => state,
        }
    }

    /// The file as a person is shown it.
    fn describe(&self) -> String {
        let at = match &self.resolved {
            Some(to) => format!("{} (→ {to})", self.path),
            None => self.path.clone(),
        };
        match &self.state {
            FileState::Hashed { digest, size } => format!(
                "{at}: {} bytes, {}",
                crate::text::thousands(*size),
                &digest[..digest.len().min(23)]
            ),
            FileState::Outside { target } => {
                format!(
                    "{at}: leads out of the project, to {} (not covered)",
                    target.display()
                )
            }
            FileState::Unbound { why } => format!("{at}: {why}"),
        }
    }
}

/// The project files among `paths` (what the project's hooks name,
/// `CommandHook::named_paths`), each with what trust binds to: links
/// followed; only regular files (a missing path, a folder, a device are
/// not the hook's script); a link leading out of the project is named
/// with its target, not read.
pub fn covered(project: &Path, paths: &[PathBuf]) -> Vec<Covered> {
    let root = crate::tools::resolve_links(project);
    let relative = |p: &Path| -> String {
        p.strip_prefix(&root)
            .or_else(|_| p.strip_prefix(project))
            .map_or_else(|_| p.display().to_string(), |r| r.display().to_string())
    };
    let mut out: Vec<Covered> = Vec::new();
    for path in paths.iter().take(MAX_PATHS) {
        let resolved = crate::tools::resolve_links(path);
        let Ok(meta) = std::fs::metadata(&resolved) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let named_inside = path.starts_with(project) || path.starts_with(&root);
        let inside = resolved.starts_with(&root);
        if !inside && !named_inside {
            // Not the project's (`/usr/bin/python3`).
            continue;
        }
        let name = relative(path);
        if out.iter().any(|c| c.path == name) {
            continue;
        }
        let shown_to = relative(&resolved);
        let resolved_shown = (shown_to != name).then_some(shown_to);
        let state = if !inside {
            FileState::Outside { target: resolved }
        } else {
            match crate::tools::files::read_regular(&resolved, MAX_COVERED) {
                Ok(Some(bytes)) => FileState::Hashed {
                    digest: sha256(&[&bytes]),
                    size: bytes.len() as u64,
                },
                Ok(None) => continue,
                Err(_) if meta.len() > MAX_COVERED => FileState::Unbound {
                    why: format!(
                        "{} bytes, more than candor binds trust to ({} bytes)",
                        crate::text::thousands(meta.len()),
                        crate::text::thousands(MAX_COVERED)
                    ),
                },
                Err(why) => FileState::Unbound { why },
            }
        };
        if out.len() == MAX_FILES {
            out.push(Covered {
                path: "…".into(),
                resolved: None,
                state: FileState::Unbound {
                    why: format!("the hooks name more than {MAX_FILES} project files"),
                },
            });
            break;
        }
        out.push(Covered {
            path: name,
            resolved: resolved_shown,
            state,
        });
    }
    out
}

/// A finished digest as candor writes it: `sha256:` and its hex.
fn named(hasher: Sha256) -> String {
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn sha256(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    named(hasher)
}

/// The digest an answer binds to: of the wants, in order, as shown, and
/// of each file the project's hooks run (its path and what it holds).
/// Without files it is the digest older candors remembered.
pub fn digest(wants: &[String], files: &[Covered]) -> String {
    let mut hasher = Sha256::new();
    for want in wants {
        hasher.update(want.as_bytes());
        hasher.update([0]);
    }
    for file in files {
        hasher.update([1]);
        hasher.update(file.path.as_bytes());
        hasher.update([0]);
        hasher.update(file.key().as_bytes());
        hasher.update([0]);
    }
    named(hasher)
}

/// What trusting a project gives, and what it binds to: the wants of its
/// settings and the project files its hooks run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub wants: Vec<String>,
    pub files: Vec<Covered>,
    pub digest: String,
}

impl Offer {
    /// The offer of `project` for the `wants` its settings gave and the
    /// `scripts` its hooks name (`session_policy::Built`).
    pub fn new(project: &Path, wants: Vec<String>, scripts: &[PathBuf]) -> Offer {
        let files = if wants.is_empty() {
            Vec::new()
        } else {
            covered(project, scripts)
        };
        let digest = digest(&wants, &files);
        Offer {
            wants,
            files,
            digest,
        }
    }

    /// What an answer remembers of the files: path → what it held.
    pub fn file_digests(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .map(|f| (f.path.clone(), f.key()))
            .collect()
    }

    /// Each file as a person is shown it (path, size, digest).
    pub fn render_files(&self) -> Vec<String> {
        self.files.iter().map(Covered::describe).collect()
    }

    /// Why candor cannot trust these settings at all (a file it cannot
    /// bind to); trusting the project in Claude Code or Codex still can.
    pub fn blocked(&self) -> Option<String> {
        let unbound: Vec<String> = self
            .files
            .iter()
            .filter(|f| matches!(f.state, FileState::Unbound { .. }))
            .map(Covered::describe)
            .collect();
        (!unbound.is_empty()).then(|| {
            format!(
                "candor cannot bind trust to a file this project's hooks run ({}), so it cannot trust these settings; fix that, or trust the project in Claude Code or Codex if you mean to",
                unbound.join("; ")
            )
        })
    }

    /// What changed since an answer that remembered `files` (for an answer
    /// of `digest` other than this one's): each file changed, added or no
    /// longer run, or that the settings themselves changed.
    pub fn changes(&self, files: &BTreeMap<String, String>) -> Vec<String> {
        let now = self.file_digests();
        let mut out = Vec::new();
        for (path, key) in &now {
            match files.get(path) {
                None => out.push(format!("`{path}` is new")),
                Some(was) if was != key => out.push(format!("`{path}` changed")),
                Some(_) => {}
            }
        }
        for path in files.keys().filter(|p| !now.contains_key(*p)) {
            out.push(format!("`{path}` is no longer run"));
        }
        if out.is_empty() {
            out.push("the settings changed".into());
        }
        out
    }

    /// The wants and files as a person is shown them, whole: every
    /// character visible, each want's lines broken at 100 characters (never
    /// cut), as an indented block no text can close. With `limits`, the
    /// editor's: a want longer than [`SHOWN_WANT`], or all of them past
    /// [`SHOWN_ALL`], is cut, and the second value says why the offer
    /// cannot be trusted from there.
    pub fn render(&self, limits: bool) -> (String, Option<String>) {
        let mut out = String::new();
        let mut cut: Option<String> = None;
        let mut total = 0;
        for (n, want) in self.wants.iter().enumerate() {
            let shown = crate::text::visible(want).replace('↩', "\\u{21a9}");
            let length = shown.chars().count();
            if limits && total + length.min(SHOWN_WANT) > SHOWN_ALL {
                out.push_str(&format!(
                    "    [{} more not shown: all of it is more than candor shows here]\n",
                    self.wants.len() - n
                ));
                cut.get_or_insert(format!(
                    "what it wants is more than {} characters in all, more than candor shows in the editor",
                    crate::text::thousands(SHOWN_ALL as u64)
                ));
                break;
            }
            let kept: String = if limits && length > SHOWN_WANT {
                cut.get_or_insert(format!(
                    "one of its wants is {} characters, more than candor shows in the editor ({})",
                    crate::text::thousands(length as u64),
                    crate::text::thousands(SHOWN_WANT as u64)
                ));
                shown.chars().take(SHOWN_WANT).collect()
            } else {
                shown.clone()
            };
            total += kept.chars().count();
            wrap_into(&kept, &mut out);
            if kept.len() < shown.len() {
                out.push_str(&format!(
                    "      [cut here: {} more characters not shown]\n",
                    crate::text::thousands((length - SHOWN_WANT) as u64)
                ));
            }
        }
        if !self.files.is_empty() {
            out.push_str("Files those hooks run (trust binds to what they hold now):\n");
            for file in &self.files {
                wrap_into(&file.describe(), &mut out);
            }
        }
        (crate::text::visible(&out), cut)
    }
}

/// One item as `- ` lines indented four spaces, broken at [`WIDTH`].
fn wrap_into(text: &str, out: &mut String) {
    // A break candor made is marked `↩`; the text's own is escaped, so it
    // cannot fake one.
    let text = crate::text::visible(text).replace('↩', "\\u{21a9}");
    let mut first = true;
    for line in text.split('\n') {
        let chars: Vec<char> = line.chars().collect();
        let pieces: Vec<&[char]> = if chars.is_empty() {
            vec![&[]]
        } else {
            chars.chunks(WIDTH).collect()
        };
        let last = pieces.len() - 1;
        for (i, piece) in pieces.into_iter().enumerate() {
            out.push_str(if first { "    - " } else { "      " });
            first = false;
            out.extend(piece);
            if i < last {
                out.push('↩');
            }
            out.push('\n');
        }
    }
}

/// One remembered answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// `true`: trusted; `false`: the user said never.
    pub trusted: bool,
    /// The [`digest`] of the offer the user was shown.
    pub digest: String,
    /// When (RFC 3339).
    pub at: String,
    /// How a person gave it: `/trust always` or `candor trust`. An answer
    /// without it was taken by an older candor through a permission
    /// request, which an auto-approving editor answers blindly: a trust
    /// without it is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Each file the project's hooks ran then, and what it held.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
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

    /// The answer remembered for `project`, whatever it was given for.
    pub fn previous(&self, project: &Path) -> Option<Answer> {
        let projects = self.projects().ok()?;
        let entry = projects.get(project.to_string_lossy().as_ref())?;
        serde_json::from_value(entry.clone()).ok()
    }

    /// The answer remembered for `project` and exactly this digest (a
    /// trust a person did not give, [`Answer::by`], is not one).
    pub fn answer(&self, project: &Path, digest: &str) -> Option<bool> {
        let answer = self.previous(project)?;
        (answer.digest == digest && (!answer.trusted || answer.by.is_some()))
            .then_some(answer.trusted)
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

/// Now, as an answer records it.
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// What a session in `project` would be offered to trust (its settings
/// read untrusted, as a session starts).
pub fn offer_in(config: &Config, project: &Path) -> Result<Offer, String> {
    let context = Arc::new(super::session_context::SessionContext::new(
        "trust".into(),
        config.sessions_dir().join("trust.jsonl"),
        project.to_owned(),
        config.user_home.clone(),
    ));
    let built = super::session_policy::build(config, &context, false)?;
    Ok(Offer::new(project, built.wants, &built.scripts))
}

/// `candor trust [DIR] [--yes]`: shows what the project's settings want,
/// whole, and asks on the terminal (`terminal`: stdin when it is one; a
/// `y` trusts). `yes`: a person typed `--yes`. The answer is remembered
/// for exactly what was shown. `Ok(false)` when nothing was trusted.
pub fn command(
    config: &Config,
    dir: &Path,
    yes: bool,
    terminal: Option<&mut dyn BufRead>,
    out: &mut dyn Write,
) -> std::io::Result<bool> {
    let project = std::path::absolute(dir)?;
    let project = crate::tools::resolve(&project, ".");
    if !project.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a directory",
            project.display()
        )));
    }
    let offer = offer_in(config, &project).map_err(std::io::Error::other)?;
    let shown = crate::text::visible(&project.display().to_string());
    if offer.wants.is_empty() {
        writeln!(
            out,
            "Nothing to trust: the settings of {shown} want nothing that only trust gives (hooks, allow rules, a starting mode that asks less)."
        )?;
        return Ok(true);
    }
    if let Some(by) = trusted_by(config, &project) {
        writeln!(out, "{shown} is trusted already, by {by}.")?;
        return Ok(true);
    }
    let (list, _) = offer.render(false);
    writeln!(
        out,
        "The settings of {shown} want what only trust gives:\n{list}"
    )?;
    if let Some(why) = offer.blocked() {
        writeln!(out, "{why}.")?;
        return Ok(false);
    }
    let store = Store::new(&config.home);
    if store.answer(&project, &offer.digest) == Some(true) {
        writeln!(
            out,
            "You trusted exactly these already ({}).",
            store.path().display()
        )?;
        return Ok(true);
    }
    if let Some(before) = store.previous(&project)
        && before.trusted
    {
        writeln!(
            out,
            "Since you trusted this project ({}): {}.",
            before.at,
            offer.changes(&before.files).join(", ")
        )?;
    }
    if !yes {
        let Some(input) = terminal else {
            writeln!(
                out,
                "Not trusted: this asks a person, and stdin is not a terminal. Run it in a terminal, or pass --yes."
            )?;
            return Ok(false);
        };
        write!(out, "Trust these settings for sessions in {shown}? [y/N] ")?;
        out.flush()?;
        let mut line = String::new();
        input.read_line(&mut line)?;
        if !matches!(line.trim().to_lowercase().as_str(), "y" | "yes") {
            writeln!(out, "Not trusted.")?;
            return Ok(false);
        }
    }
    let answer = Answer {
        trusted: true,
        digest: offer.digest.clone(),
        at: now(),
        by: Some("candor trust".into()),
        files: offer.file_digests(),
    };
    // Under the path as given and as it resolves (an editor may give either).
    let resolved = crate::tools::resolve_links(&project);
    store.remember(&project, answer.clone())?;
    if resolved != project {
        store.remember(&resolved, answer)?;
    }
    writeln!(
        out,
        "Trusted: sessions in {shown} apply these settings from their start, until they or a file above change (remembered in {}).",
        store.path().display()
    )?;
    Ok(true)
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
        let shown = digest(&["hook `a`".into()], &[]);
        assert_eq!(store.answer(project, &shown), None);
        store
            .remember(
                project,
                Answer {
                    trusted: true,
                    digest: shown.clone(),
                    at: "now".into(),
                    by: Some("/trust always".into()),
                    files: BTreeMap::new(),
                },
            )
            .unwrap();
        assert_eq!(store.answer(project, &shown), Some(true));
        let more = digest(&["hook `a`".into(), "hook `b`".into()], &[]);
        assert_eq!(store.answer(project, &more), None, "new wants ask again");
        assert_eq!(store.answer(Path::new("/q"), &shown), None);
        assert_ne!(
            digest(&["ab".into()], &[]),
            digest(&["a".into(), "b".into()], &[])
        );
    }

    /// The paths a hook's command names, and the project files among them
    /// (also through `$CLAUDE_PROJECT_DIR`, `bash -c`, wrappers, input
    /// redirections and an exec form), each bound to what it holds.
    #[test]
    fn trust_binds_to_the_project_files_a_hook_runs() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        let hooks = project.join(".claude/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        for name in ["a.sh", "b.py", "c.sh", "d.txt", "e.js"] {
            std::fs::write(hooks.join(name), name).unwrap();
        }
        std::fs::write(dir.path().join("outside.sh"), "elsewhere").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.sh"), hooks.join("out.sh")).unwrap();
        std::os::unix::fs::symlink("a.sh", hooks.join("link.sh")).unwrap();
        let session = Arc::new(super::super::SessionContext::new(
            "s".into(),
            dir.path().join("s.jsonl"),
            project.clone(),
            None,
        ));
        let table = serde_json::json!({"PreToolUse": [{"hooks": [
            {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/.claude/hooks/a.sh\" --flag"},
            {"type": "command", "command": "timeout 5 bash -c 'python3 .claude/hooks/b.py' < .claude/hooks/d.txt"},
            {"type": "command", "command": "${CLAUDE_PROJECT_DIR}/.claude/hooks/c.sh; /bin/true; sh .claude/hooks/missing.sh"},
            {"type": "command", "command": "sh .claude/hooks/out.sh && sh .claude/hooks/link.sh"},
            {"type": "command", "command": "node", "args": [".claude/hooks/e.js"]}
        ]}]});
        let mut read = super::super::hook::Table::default();
        read.read(
            &super::super::claude::CLAUDE,
            &table,
            &project.join(".claude/settings.json"),
            "project",
            &session,
        );
        let paths: Vec<PathBuf> = read.hooks.iter().flat_map(|h| h.named_paths()).collect();
        let files = covered(&project, &paths);
        let named: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            named,
            [
                ".claude/hooks/a.sh",
                ".claude/hooks/b.py",
                ".claude/hooks/d.txt",
                ".claude/hooks/c.sh",
                ".claude/hooks/out.sh",
                ".claude/hooks/link.sh",
                ".claude/hooks/e.js"
            ]
        );
        assert!(matches!(&files[0].state, FileState::Hashed { size: 4, .. }));
        assert!(
            matches!(&files[4].state, FileState::Outside { target } if target.ends_with("outside.sh"))
        );
        assert_eq!(files[5].resolved.as_deref(), Some(".claude/hooks/a.sh"));
        // A change to one file changes the digest, and is named.
        let wants = vec!["hook".to_owned()];
        let before = Offer::new(&project, wants.clone(), &paths);
        std::fs::write(hooks.join("b.py"), "changed").unwrap();
        let after = Offer::new(&project, wants, &paths);
        assert_ne!(before.digest, after.digest);
        assert_eq!(
            after.changes(&before.file_digests()),
            ["`.claude/hooks/b.py` changed"]
        );
        assert_eq!(after.blocked(), None);
        // A script too large to bind to: candor cannot trust it at all.
        std::fs::write(hooks.join("c.sh"), vec![b'#'; MAX_COVERED as usize + 1]).unwrap();
        let big = Offer::new(&project, vec!["hook".into()], &paths);
        assert!(
            big.blocked().unwrap().contains(".claude/hooks/c.sh"),
            "{big:?}"
        );
    }

    /// Every want is shown whole (its lines broken, never cut), every
    /// character visible; a break candor made cannot be faked; the editor
    /// shows at most [`SHOWN_WANT`] of one and says why it cannot trust it.
    #[test]
    fn wants_are_shown_whole_wrapped_and_visible() {
        let long = format!("echo {}; touch PWNED", "A".repeat(2100));
        let offer = Offer {
            wants: vec![long.clone(), "x \u{202e}y\u{1b}[8m ↩\nrm -rf ~".into()],
            files: Vec::new(),
            digest: String::new(),
        };
        let (shown, cut) = offer.render(true);
        assert_eq!(cut, None);
        assert!(
            shown.lines().all(|l| l.chars().count() <= WIDTH + 7),
            "{shown}"
        );
        let joined = shown.replace("↩\n      ", "");
        assert!(joined.contains(&long), "{shown}");
        assert!(
            shown.contains("x \\u{202e}y\\u{1b}[8m \\u{21a9}\n      rm -rf ~"),
            "{shown}"
        );
        let huge = Offer {
            wants: vec!["B".repeat(SHOWN_WANT + 10)],
            files: Vec::new(),
            digest: String::new(),
        };
        let (shown, cut) = huge.render(true);
        assert!(cut.unwrap().contains("more than candor shows"));
        assert!(
            shown.contains("10 more characters not shown"),
            "{}",
            &shown[shown.len() - 200..]
        );
        let (whole, cut) = huge.render(false);
        assert_eq!(cut, None);
        assert_eq!(whole.matches('B').count(), SHOWN_WANT + 10);
    }

    /// A trust remembered without a person's word (an older candor's
    /// permission request) is not used; a refusal still is.
    #[test]
    fn only_a_persons_answer_trusts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let project = Path::new("/p");
        let answer = |trusted, by: Option<&str>| Answer {
            trusted,
            digest: "sha256:d".into(),
            at: "then".into(),
            by: by.map(str::to_owned),
            files: BTreeMap::new(),
        };
        store.remember(project, answer(true, None)).unwrap();
        assert_eq!(store.answer(project, "sha256:d"), None);
        store.remember(project, answer(false, None)).unwrap();
        assert_eq!(store.answer(project, "sha256:d"), Some(false));
        store
            .remember(project, answer(true, Some("candor trust")))
            .unwrap();
        assert_eq!(store.answer(project, "sha256:d"), Some(true));
    }
}
