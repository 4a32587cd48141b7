//! A session's append-only event log: the single source of truth.
//!
//! [`EventLog`] is owned by exactly one session actor (one writer, no locks).
//! Each [`append`](EventLog::append) serializes one [`Record`] to one line
//! and hands it to the kernel with a single write; [`sync`](EventLog::sync)
//! waits until everything appended has reached the disk, and is called after
//! a `tool/call` record (and a permission answer) before the tool runs, so
//! that nothing executes without its record on disk. The
//! records are also kept in memory, in order, for the projections
//! ([`crate::presentation`], [`crate::history`]).
//!
//! Architecture invariant: a record is appended before anything derived from
//! it is shown or sent, and records are never rewritten or removed.

pub mod record;

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use record::{
    Decision, DeltaChannel, Event, FORMAT_VERSION, FileDiff, NoticeLevel, Outcome,
    PermissionChoice, PermissionOutcome, Record, ResultStatus, TurnStop,
};

/// Why the log could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("could not create the session log {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not write the session log {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not serialize a log record: {0}")]
    Serialize(#[from] serde_json::Error),
    #[error("could not read the session log {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a valid record: {reason}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// The log of one session, open for appending.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    file: File,
    records: Vec<Record>,
}

impl EventLog {
    /// Creates `<dir>/<session_id>.jsonl` (the directory with mode 0700, the
    /// file with mode 0600; an existing file is an error, never reused).
    pub fn create(dir: &Path, session_id: &str) -> Result<Self, LogError> {
        let path = dir.join(format!("{session_id}.jsonl"));
        let create = |source| LogError::Create {
            path: path.clone(),
            source,
        };
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(create)?;
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(create)?;
        Ok(Self {
            path,
            file,
            records: Vec::new(),
        })
    }

    /// Appends a record: one line, one write.
    pub fn append(&mut self, event: Event) -> Result<&Record, LogError> {
        let record = Record {
            seq: self.records.len() as u64,
            at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            event,
        };
        let mut line = serde_json::to_vec(&record)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|source| LogError::Write {
                path: self.path.clone(),
                source,
            })?;
        self.records.push(record);
        Ok(&self.records[self.records.len() - 1])
    }

    /// Waits until every record appended so far is on disk (`fdatasync`).
    ///
    /// This blocks the calling thread for the duration of the sync (0.2–1 ms
    /// on an SSD); it is used once per tool call, right before the tool
    /// runs, where waiting is the point. A failed sync leaves the records in
    /// memory (the kernel has them, as after any `append`); the caller must
    /// not run the tool and stops the turn.
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.file.sync_data().map_err(|source| LogError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// Every record appended so far, in order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Where the log lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads a whole log back. Stops at the first line that is not a valid
/// record and reports it with its line number.
pub fn read(path: &Path) -> Result<Vec<Record>, LogError> {
    let file = File::open(path).map_err(|source| LogError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut records = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| LogError::Read {
            path: path.to_owned(),
            source,
        })?;
        let record: Record = serde_json::from_str(&line).map_err(|e| LogError::Corrupt {
            path: path.to_owned(),
            line: index + 1,
            reason: e.to_string(),
        })?;
        records.push(record);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn appends_one_line_per_record_and_reads_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        let mut log = EventLog::create(&sessions, "s1").unwrap();
        log.append(Event::UserMessage { content: vec![] }).unwrap();
        log.append(Event::ToolStarted {
            tool_call_id: "t".into(),
        })
        .unwrap();
        log.sync().unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 2);
        let back = read(log.path()).unwrap();
        assert_eq!(back, log.records());
        assert_eq!(back[1].seq, 1);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&sessions), 0o700);
        assert_eq!(mode(log.path()), 0o600);
    }

    #[test]
    fn an_existing_log_is_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let _first = EventLog::create(dir.path(), "same").unwrap();
        assert!(matches!(
            EventLog::create(dir.path(), "same"),
            Err(LogError::Create { .. })
        ));
    }
}
