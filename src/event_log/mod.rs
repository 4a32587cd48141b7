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
//! The session's images live beside the log, in its content store
//! ([`content`]): [`store_image`](EventLog::store_image) puts one on disk
//! before the record that names it is appended, and the log holds a bounded
//! set of them in memory ([`content::Attachments`]) for the projections,
//! which do no I/O: the session loads the ones a model request carries
//! before deriving it ([`ensure_images`](EventLog::ensure_images)), and the
//! client is shown each record's images as it is committed or replayed
//! ([`hydrate`](EventLog::hydrate)).
//!
//! Architecture invariant: a record is appended before anything derived from
//! it is shown or sent, and records are never rewritten or removed.

pub mod content;
pub mod record;

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use record::{
    AddedDirectory, Assignment, ChildCallStatus, ClientPrompt, ClientPromptMode, CommandSource,
    CompactTrigger, ConfigId, ConfigVia, Cost, Decision, DeltaChannel, Dropped, ElicitationAction,
    ElicitationAnswered, ElicitationAsked, ElicitationBy, ElicitationKind, Environment, Event,
    FORMAT_VERSION, FileDiff, GitFacts, HookNote, HookRecord, InstructionScope, Instructions,
    McpHints, McpTarget, NetworkDecider, NoteKind, NoticeLevel, OfferedCommand, Outcome,
    OutputFile, ParentRef, PermissionChoice, PermissionOutcome, PromptImage, Record, ResultContent,
    ResultStatus, SeqSpan, SessionEvent, StoredImage, SubagentOutcome, TitleSource, TrustOutcome,
    TurnStop, Unqueued, Verdict, Via, network_line,
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
    #[error(
        "the session log {path} is damaged ({reason}); candor does not append after damage: start a new session"
    )]
    Damaged { path: PathBuf, reason: String },
    #[error(
        "the session log {path} is open in another candor process; close the session there first"
    )]
    InUse { path: PathBuf },
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
    /// Tests only: appends fail once the log holds this many records (a
    /// full disk, without filling one).
    fail_at: Option<usize>,
    /// Why nothing may be appended (a log damaged in the middle), if so.
    damaged: Option<String>,
    /// The file's length up to the last whole record: where a failed
    /// write's partial line is cut back to before anything else is written.
    good_len: u64,
    /// The session's images, on disk beside the log.
    content: content::ContentStore,
    /// The images the records name, loaded.
    attachments: content::Attachments,
}

/// A log read back from disk, as far as it could be read.
#[derive(Debug)]
pub struct ReadLog {
    pub records: Vec<Record>,
    /// Bytes of the file that hold `records` (whole lines).
    pub valid_len: u64,
    /// The final line was cut short (a write interrupted by a crash): it
    /// was never a record; how long it was.
    pub torn: Option<usize>,
    /// A line that is not a record, with complete lines after or with its
    /// newline: reading stopped there and nothing after it is used.
    pub corrupt: Option<LogError>,
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
        lock(&file, &path)?;
        Ok(Self {
            content: content::ContentStore::beside(&path),
            attachments: content::Attachments::default(),
            path,
            file,
            records: Vec::new(),
            fail_at: None,
            damaged: None,
            good_len: 0,
        })
    }

    /// A log that can be read but not appended to: its records up to the
    /// damage; every append fails with `LogError::Damaged`.
    pub fn damaged(path: &Path, records: Vec<Record>, reason: String) -> Result<Self, LogError> {
        let file = File::open(path).map_err(|source| LogError::Read {
            path: path.to_owned(),
            source,
        })?;
        let content = content::ContentStore::beside(path);
        Ok(Self {
            attachments: content::Attachments::survey(&content, &records),
            content,
            path: path.to_owned(),
            file,
            records,
            fail_at: None,
            damaged: Some(reason),
            good_len: 0,
        })
    }

    /// Opens an existing log to go on appending after `read`'s records. A
    /// torn final line is cut off first (it was never a record); a log
    /// whose reading stopped at a corrupt line cannot be appended to (what
    /// follows would sit after lines no reader gets past).
    pub fn open(path: &Path, read: ReadLog) -> Result<Self, LogError> {
        let fail = |source| LogError::Write {
            path: path.to_owned(),
            source,
        };
        if let Some(corrupt) = read.corrupt {
            return Err(corrupt);
        }
        let file = OpenOptions::new().append(true).open(path).map_err(fail)?;
        lock(&file, path)?;
        let len = file.metadata().map_err(fail)?.len();
        if len > read.valid_len {
            file.set_len(read.valid_len).map_err(fail)?;
            file.sync_data().map_err(fail)?;
        }
        let content = content::ContentStore::beside(path);
        Ok(Self {
            attachments: content::Attachments::survey(&content, &read.records),
            content,
            path: path.to_owned(),
            file,
            records: read.records,
            fail_at: None,
            damaged: None,
            good_len: read.valid_len,
        })
    }

    /// Tests only: makes appends fail from the `n`th record on.
    #[doc(hidden)]
    pub fn fail_at(&mut self, n: Option<usize>) {
        self.fail_at = n;
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
        if let Some(reason) = &self.damaged {
            return Err(LogError::Damaged {
                path: self.path.clone(),
                reason: reason.clone(),
            });
        }
        let written = if self.fail_at.is_some_and(|n| self.records.len() >= n) {
            // A full disk takes part of the line, then fails.
            let _ = self.file.write_all(&line[..line.len() / 2]);
            Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left on device (simulated)",
            ))
        } else {
            self.file.write_all(&line)
        };
        if let Err(source) = written {
            // Cut the partial line off now, so that a later append does not
            // sit after it (a reader would stop there). If even that fails,
            // nothing more is appended.
            if self.file.set_len(self.good_len).is_err() {
                self.damaged = Some(
                    "a write to the log failed and its partial last line could not be removed"
                        .into(),
                );
            }
            return Err(LogError::Write {
                path: self.path.clone(),
                source,
            });
        }
        self.good_len += line.len() as u64;
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

    /// Keeps an image in the content store, on disk, before a record names
    /// it; returns what the record says of it.
    pub fn store_image(&mut self, bytes: &[u8], mime_type: &str) -> Result<StoredImage, LogError> {
        if let Some(reason) = &self.damaged {
            return Err(LogError::Damaged {
                path: self.path.clone(),
                reason: reason.clone(),
            });
        }
        let digest = self.content.put(bytes).map_err(|source| LogError::Write {
            path: self.content.dir().to_owned(),
            source,
        })?;
        self.attachments.insert(digest.clone(), bytes);
        Ok(StoredImage {
            digest,
            mime_type: mime_type.to_owned(),
            bytes: bytes.len() as u64,
        })
    }

    /// The images the records name, as far as they are held (for the
    /// projections).
    pub fn attachments(&self) -> &content::Attachments {
        &self.attachments
    }

    /// Makes sure the images of `wanted` are held (see
    /// [`content::Attachments::ensure`]); `true` when the choice of them is
    /// to be made again.
    pub fn ensure_images(&mut self, wanted: &[content::Wanted]) -> bool {
        self.attachments.ensure(&self.content, wanted)
    }

    /// `record` with its images' data put back for the client (see
    /// [`content::Attachments::hydrate`]; may read the content store).
    pub fn hydrate<'a>(&self, record: &'a Record) -> std::borrow::Cow<'a, Record> {
        self.attachments.hydrate(&self.content, record)
    }

    /// Where the log lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes the log for this process: one writer per log, also across
/// processes (an advisory lock, released when the file is closed).
///
/// A lock still held is tried again for up to half a second: when candor is
/// killed while starting a command, the half-started child holds the file
/// (and its lock) until it execs, a few microseconds on, and a reload right
/// after the crash must not take that for another candor.
fn lock(file: &File, path: &Path) -> Result<(), LogError> {
    for _ in 0..20 {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(LogError::Write {
                    path: path.to_owned(),
                    source,
                });
            }
        }
    }
    Err(LogError::InUse {
        path: path.to_owned(),
    })
}

/// Records numbered from 0 (tests of the projections).
#[cfg(test)]
pub(crate) fn numbered(events: Vec<Event>) -> Vec<Record> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Record {
            seq: i as u64,
            at: "2026-11-30T10:00:00.000Z".into(),
            event,
        })
        .collect()
}

/// Reads a whole log back. Stops at the first line that is not a valid
/// record and reports it with its line number (a torn final line too: use
/// [`read_tolerant`] to load past a crash).
pub fn read(path: &Path) -> Result<Vec<Record>, LogError> {
    let read = read_tolerant(path)?;
    if let Some(corrupt) = read.corrupt {
        return Err(corrupt);
    }
    if let Some(len) = read.torn {
        return Err(LogError::Corrupt {
            path: path.to_owned(),
            line: read.records.len() + 1,
            reason: format!("the last line was cut short ({len} bytes, no newline)"),
        });
    }
    Ok(read.records)
}

/// Reads a log as far as it holds records, line by line (memory grows with
/// the records, not with a copy of the file). A final line without its
/// newline is a write that never finished: it is left out and reported as
/// `torn`. Any other line that is not a record stops the reading there:
/// reported as `corrupt` with its line number; nothing after it is used.
pub fn read_tolerant(path: &Path) -> Result<ReadLog, LogError> {
    let read_error = |source| LogError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut log = ReadLog {
        records: Vec::new(),
        valid_len: 0,
        torn: None,
        corrupt: None,
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(read_error)?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            log.torn = Some(n);
            break;
        }
        match serde_json::from_slice::<Record>(&line) {
            Ok(record) => {
                log.records.push(record);
                log.valid_len += n as u64;
            }
            Err(e) => {
                log.corrupt = Some(LogError::Corrupt {
                    path: path.to_owned(),
                    line: log.records.len() + 1,
                    reason: e.to_string(),
                });
                break;
            }
        }
    }
    Ok(log)
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
        log.append(Event::UserMessage {
            content: vec![],
            images: vec![],
            via: None,
        })
        .unwrap();
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
    fn a_failed_append_leaves_no_partial_line_for_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::create(dir.path(), "s").unwrap();
        log.append(Event::UserMessage {
            content: vec![],
            images: vec![],
            via: None,
        })
        .unwrap();
        log.fail_at(Some(1));
        assert!(
            log.append(Event::UserMessage {
                content: vec![],
                images: vec![],
                via: None,
            })
            .is_err()
        );
        log.fail_at(None);
        log.append(Event::ToolStarted {
            tool_call_id: "t".into(),
        })
        .unwrap();
        // `read` fails on a torn or corrupt line: there is none.
        let back = read(log.path()).unwrap();
        assert_eq!(back, log.records());
        assert_eq!(back.len(), 2);
    }

    fn three_records(dir: &Path) -> PathBuf {
        let mut log = EventLog::create(dir, "s").unwrap();
        for _ in 0..3 {
            log.append(Event::UserMessage {
                content: vec![],
                images: vec![],
                via: None,
            })
            .unwrap();
        }
        log.path().to_owned()
    }

    #[test]
    fn a_torn_last_line_is_cut_and_appending_goes_on_after_the_last_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = three_records(dir.path());
        let whole = std::fs::read(&path).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"seq":3,"at":"2026-11-30T10:00:00.000Z","type":"user/mes"#)
            .unwrap();
        let read = read_tolerant(&path).unwrap();
        assert_eq!(read.records.len(), 3);
        assert_eq!(read.torn, Some(57));
        assert!(read.corrupt.is_none());
        assert!(super::read(&path).is_err(), "the strict reader reports it");
        let mut log = EventLog::open(&path, read).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            whole,
            "the torn line is gone"
        );
        let record = log
            .append(Event::UserMessage {
                content: vec![],
                images: vec![],
                via: None,
            })
            .unwrap();
        assert_eq!(record.seq, 3);
        assert_eq!(super::read(&path).unwrap().len(), 4);
    }

    #[test]
    fn a_corrupt_middle_line_stops_reading_there_and_forbids_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = three_records(dir.path());
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[1] = "{\"seq\": garbage";
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let read = read_tolerant(&path).unwrap();
        assert_eq!(read.records.len(), 1);
        let Some(LogError::Corrupt { line, .. }) = &read.corrupt else {
            panic!("{read:?}")
        };
        assert_eq!(*line, 2);
        assert!(matches!(
            EventLog::open(&path, read),
            Err(LogError::Corrupt { line: 2, .. })
        ));
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
