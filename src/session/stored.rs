//! The stored sessions in candor's sessions directory: a session's log
//! found by its id and read ([`read`]; an id is a file name, nothing
//! that could step outside the directory), listed for `session/list`
//! ([`list`]), forked up to its last ended turn ([`fork`]) and moved
//! aside, never destroyed ([`delete`]). What a log says once read
//! (settings, what a crash left open) is `restore`'s.

use std::path::Path;

use crate::event_log::{Event, LogError, ReadLog, Record};

/// Why a stored session cannot be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error("session {0} not found")]
    NotFound(String),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Finds and reads the log of session `id` under `dir`.
pub(crate) fn read(dir: &Path, id: &str) -> Result<ReadLog, LoadError> {
    let path = read_path(dir, id)?;
    Ok(crate::event_log::read_tolerant(&path)?)
}

/// A stored session, as `session/list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) id: String,
    pub(crate) cwd: std::path::PathBuf,
    /// Its title (`session/titled`), else its first prompt's first line,
    /// shortened.
    pub(crate) title: Option<String>,
    /// When its log last changed (RFC 3339), and the time itself.
    pub(crate) updated_at: String,
    modified: std::time::SystemTime,
}

/// Every stored session under `dir` (in `cwd` only, when given) that had a
/// prompt, most recently changed first: a chat an editor opened and never
/// used is not listed (its log stays, and loads by its id). Each log is
/// read only as far as its title (`session/titled`), or its first MiB: a
/// log whose first prompt comes later is taken for one without, and one
/// whose title comes later is listed by its first prompt's line.
pub(crate) fn list(dir: &Path, cwd: Option<&Path>) -> Vec<Listed> {
    const LIST_READ: u64 = 1024 * 1024;
    use std::io::{BufRead, BufReader, Read};
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut sessions = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        let mut found: Option<(String, std::path::PathBuf)> = None;
        let mut title = None;
        let mut prompted = false;
        for line in BufReader::new(file.take(LIST_READ)).lines() {
            let Ok(line) = line else { break };
            let Ok(record) = serde_json::from_str::<Record>(&line) else {
                break;
            };
            match record.event {
                Event::SessionStarted {
                    session_id, cwd, ..
                } => found = Some((session_id, cwd)),
                Event::SessionTitled { title: titled, .. } => {
                    title = Some(titled);
                    break;
                }
                Event::UserMessage { .. } if title.is_some() => {}
                Event::UserMessage { content, .. } => {
                    prompted = true;
                    let text = crate::history::flatten_prompt(&content);
                    // candor's own commands do not name a conversation.
                    if super::builtin_commands::parse(&text).is_some() {
                        continue;
                    }
                    let first = text
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                        .trim();
                    // Read on for the title made after the first turn.
                    title = Some(crate::bridges::runner::shorten(first, 80));
                }
                _ => {}
            }
        }
        let Some((id, session_cwd)) = found.filter(|_| prompted) else {
            continue;
        };
        if cwd.is_some_and(|c| c != session_cwd) {
            continue;
        }
        // Opening a session writes a record too; what dates it is the last
        // thing that happened in it.
        let (updated_at, modified) = last_activity(&path)
            .and_then(|at| humantime::parse_rfc3339(&at).ok().map(|t| (at, t)))
            .unwrap_or_else(|| {
                (
                    humantime::format_rfc3339_millis(modified).to_string(),
                    modified,
                )
            });
        sessions.push(Listed {
            id,
            cwd: session_cwd,
            title,
            updated_at,
            modified,
        });
    }
    sessions.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| a.id.cmp(&b.id)));
    sessions
}

/// The `at` of the last record of a log that is about the conversation or
/// its settings (not the commands offered on each opening), read from the
/// log's last 64 KiB.
fn last_activity(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))
        .ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    String::from_utf8_lossy(&tail)
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .find(|r| !matches!(r.event, Event::CommandsOffered { .. }))
        .map(|r| r.at)
}

/// Starts the log of session `new` as a fork of session `parent`: the
/// parent's records up to its last `turn/ended` (the fork point; a turn
/// still running is left out), each as it was (same `seq`, so a
/// compaction's span still names the same records) but for the
/// `session/started`'s id, then a `session/notice` naming the parent and
/// the fork point; the parent's images and spilled outputs are copied
/// beside it. Returns the new log, read.
#[cfg(feature = "fork")]
pub(crate) fn fork(
    dir: &Path,
    parent: &str,
    new: &str,
) -> Result<crate::event_log::ReadLog, LoadError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let stored = read(dir, parent)?;
    if let Some(damage) = &stored.corrupt {
        return Err(LoadError::Log(LogError::Damaged {
            path: dir.join(format!("{parent}.jsonl")),
            reason: format!("the session to fork has a damaged log: {damage}"),
        }));
    }
    let end = stored
        .records
        .iter()
        .rposition(|r| matches!(r.event, Event::TurnEnded { .. }))
        .map_or(1.min(stored.records.len()), |i| i + 1);
    let failed = |source: std::io::Error| {
        LoadError::Log(LogError::Write {
            path: dir.join(format!("{new}.jsonl")),
            source,
        })
    };
    let mut text = String::new();
    let mut records: Vec<Record> = stored.records[..end].to_vec();
    if let Some(Event::SessionStarted { session_id, .. }) =
        records.first_mut().map(|r| &mut r.event)
    {
        *session_id = new.to_owned();
    }
    let at = records.last().map(|r| r.at.clone()).unwrap_or_default();
    records.push(Record {
        seq: records.len() as u64,
        at,
        event: Event::Notice {
            level: crate::event_log::NoticeLevel::Info,
            text: format!(
                "This session is a fork of session {parent} at its record {}; what follows is its own.",
                end.saturating_sub(1)
            ),
        },
    });
    for record in &records {
        let line = serde_json::to_string(record)
            .map_err(|e| failed(std::io::Error::other(e.to_string())))?;
        text.push_str(&line);
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join(format!("{new}.jsonl")))
        .map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    for beside in ["outputs", "content"] {
        copy_dir(
            &dir.join(format!("{parent}.{beside}")),
            &dir.join(format!("{new}.{beside}")),
        )
        .map_err(failed)?;
    }
    read(dir, new)
}

/// Copies the regular files of `from` (and its directories) into `to`;
/// nothing when `from` does not exist. Links are not followed.
#[cfg(feature = "fork")]
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(from) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    };
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(to)?;
    for entry in entries {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Moves session `id`'s log to `<dir>/deleted/` (out of `session/list`,
/// never destroyed: an audit trail is not candor's to erase).
pub(crate) fn delete(dir: &Path, id: &str) -> Result<(), LoadError> {
    read_path(dir, id)?;
    let deleted = dir.join("deleted");
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&deleted)
        .and_then(|()| {
            std::fs::rename(
                dir.join(format!("{id}.jsonl")),
                deleted.join(format!("{id}.jsonl")),
            )
        })
        .and_then(|()| {
            // Outputs too big for the log, and its images, go with it.
            for beside in ["outputs", "content"] {
                let from = dir.join(format!("{id}.{beside}"));
                match std::fs::rename(&from, deleted.join(format!("{id}.{beside}"))) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    other => other?,
                }
            }
            Ok(())
        })
        .map_err(|source| {
            LoadError::Log(LogError::Write {
                path: deleted.clone(),
                source,
            })
        })
}

/// The log file of session `id` under `dir`, if there is one.
fn read_path(dir: &Path, id: &str) -> Result<std::path::PathBuf, LoadError> {
    // A session id names a file: nothing that could step outside `dir`.
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(LoadError::NotFound(id.to_owned()));
    }
    let path = dir.join(format!("{id}.jsonl"));
    if !path.is_file() {
        return Err(LoadError::NotFound(id.to_owned()));
    }
    Ok(path)
}
