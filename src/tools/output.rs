//! The output of a command that may print without end, kept bounded in
//! candor's memory, in the log and on the card.
//!
//! A [`Capture`] takes every byte a command prints and keeps:
//! * for the model: the first [`KEEP_HEAD`] and the last [`KEEP_TAIL`]
//!   bytes, and the total;
//! * the whole output, once it outgrows those, in a **spill file** beside
//!   the session's log (`<sessions>/<id>.outputs/<call>.out`, at most
//!   [`MAX_SPILL`] bytes), which `tool/result.outputFile` names;
//! * for the card (and so for `tool/output` records): everything up to
//!   [`STREAM_HEAD`] bytes, flushed at most every [`FLUSH_EVERY`]; past
//!   that, at most one update per [`LATE_EVERY`] carrying the last
//!   [`LATE_CHUNK`] bytes and how many bytes it skipped. The last flush
//!   always happens.
//!
//! So a command printing 1 GB costs a few hundred KiB of memory and of log
//! whatever its length (the log grows by at most one [`LATE_CHUNK`] per
//! second of a command's life, which its timeout bounds).
//!
//! What a tool gives back when it ends is a [`ToolOutput`], its text for
//! the model capped by [`cap_for_model`].

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use crate::event_log::{FileDiff, ResultStatus};

/// Bytes from the start kept for the model.
pub const KEEP_HEAD: usize = 16 * 1024;
/// Bytes from the end kept for the model.
pub const KEEP_TAIL: usize = 16 * 1024;
/// Bytes streamed to the card in full before updates thin out.
pub const STREAM_HEAD: u64 = 128 * 1024;
/// How often the card is updated while output streams.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// How often, once past [`STREAM_HEAD`].
pub const LATE_EVERY: Duration = Duration::from_secs(1);
/// The most bytes one late update carries (the newest).
pub const LATE_CHUNK: usize = 4 * 1024;
/// The largest spill file; beyond it the output is counted, not kept.
pub const MAX_SPILL: u64 = 4 * 1024 * 1024 * 1024;

/// One card update: new text, and how many bytes before it were skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub text: String,
    pub skipped: u64,
}

/// What a finished capture gives the model and the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// Head and tail, with a line saying what was left out between.
    pub text: String,
    /// Every byte printed.
    pub total: u64,
    /// The spill file, when the output outgrew memory.
    pub file: Option<PathBuf>,
    /// Why the whole output could not be kept, if it could not.
    pub problem: Option<String>,
}

#[derive(Debug)]
enum Spill {
    /// Not needed yet; this is where it would go.
    Unopened(Option<PathBuf>),
    Open(std::io::BufWriter<std::fs::File>, PathBuf, u64),
    /// Failed or full: why.
    Stopped(Option<PathBuf>, String),
}

/// See the module docs.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    spill: Spill,
    /// Bytes for the card within [`STREAM_HEAD`], not sent yet.
    early: Vec<u8>,
    /// The newest bytes past it, not sent yet (at most [`LATE_CHUNK`]), and
    /// how many bytes before them will never be sent.
    late: VecDeque<u8>,
    skipped: u64,
    /// Bytes sent to the card, or given to `early`.
    budgeted: u64,
    next_flush: Instant,
}

impl Capture {
    /// `spill`: where the whole output goes if it outgrows memory (`None`:
    /// nowhere; only head and tail are kept).
    pub fn new(spill: Option<PathBuf>) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            spill: Spill::Unopened(spill),
            early: Vec::new(),
            late: VecDeque::new(),
            skipped: 0,
            budgeted: 0,
            next_flush: Instant::now(),
        }
    }

    /// Takes bytes the command printed.
    pub fn push(&mut self, bytes: &[u8]) {
        let fits = (KEEP_HEAD + KEEP_TAIL) as u64;
        if self.total + bytes.len() as u64 > fits {
            self.open_spill();
        }
        self.total += bytes.len() as u64;
        self.write_spill(bytes);
        let mut rest = bytes;
        if self.head.len() < KEEP_HEAD {
            let n = rest.len().min(KEEP_HEAD - self.head.len());
            self.head.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        keep_last(&mut self.tail, rest, KEEP_TAIL);
        // The card's share: in full up to STREAM_HEAD, then the newest.
        let room = STREAM_HEAD.saturating_sub(self.budgeted) as usize;
        let n = bytes.len().min(room);
        self.early.extend_from_slice(&bytes[..n]);
        self.budgeted += n as u64;
        let rest = &bytes[n..];
        let before = self.late.len() + rest.len();
        keep_last(&mut self.late, rest, LATE_CHUNK);
        self.skipped += (before - self.late.len()) as u64;
    }

    /// The card's next update: when one is due, or with `last` (the command
    /// ended; call until `None`) whatever is left.
    pub fn flush(&mut self, last: bool) -> Option<Chunk> {
        let now = Instant::now();
        if !last && now < self.next_flush {
            return None;
        }
        let chunk = if !self.early.is_empty() {
            // Whole characters only, unless more follows in `late` or
            // nothing will.
            let take = if last || !self.late.is_empty() {
                self.early.len()
            } else {
                complete_utf8(&self.early)
            };
            if take == 0 {
                return None;
            }
            let rest = self.early.split_off(take);
            let text = std::mem::replace(&mut self.early, rest);
            Chunk {
                text: String::from_utf8_lossy(&text).into_owned(),
                skipped: 0,
            }
        } else if !self.late.is_empty() {
            // The cut may have fallen inside a character: start at the next.
            let mut bytes: Vec<u8> = self.late.drain(..).collect();
            let lead = bytes.iter().take_while(|b| **b & 0xC0 == 0x80).count();
            bytes.drain(..lead);
            Chunk {
                text: String::from_utf8_lossy(&bytes).into_owned(),
                skipped: std::mem::take(&mut self.skipped) + lead as u64,
            }
        } else {
            return None;
        };
        self.next_flush = now
            + if self.budgeted >= STREAM_HEAD {
                LATE_EVERY
            } else {
                FLUSH_EVERY
            };
        Some(chunk)
    }

    /// When the card's next update is due, if anything waits.
    pub fn flush_at(&self) -> Option<Instant> {
        (!self.early.is_empty() || !self.late.is_empty()).then_some(self.next_flush)
    }

    /// Ends the capture: what the model and the log get.
    pub fn finish(mut self) -> Captured {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let tail: Vec<u8> = self.tail.drain(..).collect();
        if self.total > kept {
            text.push_str(&format!(
                "\n[… {} bytes of output not kept here …]\n",
                self.total - kept
            ));
        }
        text.push_str(&String::from_utf8_lossy(&tail));
        let (file, problem) = match self.spill {
            Spill::Unopened(_) => (None, None),
            Spill::Open(mut w, path, _) => match w.flush() {
                Ok(()) => (Some(path), None),
                Err(e) => (
                    Some(path),
                    Some(format!("the output file is incomplete: {e}")),
                ),
            },
            Spill::Stopped(path, why) => (path, Some(why)),
        };
        Captured {
            text,
            total: self.total,
            file,
            problem,
        }
    }

    fn open_spill(&mut self) {
        let Spill::Unopened(path) = &mut self.spill else {
            return;
        };
        let Some(path) = path.take() else {
            self.spill = Spill::Stopped(
                None,
                "the whole output was not kept (no session log to keep it beside)".into(),
            );
            return;
        };
        let opened = path
            .parent()
            .map_or(Ok(()), |dir| {
                std::os::unix::fs::DirBuilderExt::mode(
                    std::fs::DirBuilder::new().recursive(true),
                    0o700,
                )
                .create(dir)
            })
            .and_then(|()| {
                // Only the user may read it, like the log beside it.
                std::os::unix::fs::OpenOptionsExt::mode(
                    std::fs::OpenOptions::new().write(true).create_new(true),
                    0o600,
                )
                .open(&path)
            });
        match opened {
            Ok(file) => {
                let mut w = std::io::BufWriter::with_capacity(64 * 1024, file);
                // Head and tail are all there is so far (the spill opens
                // before they drop anything).
                let written = w
                    .write_all(&self.head)
                    .and_then(|()| {
                        let (a, b) = self.tail.as_slices();
                        w.write_all(a).and_then(|()| w.write_all(b))
                    })
                    .map(|()| self.total);
                self.spill = match written {
                    Ok(n) => Spill::Open(w, path, n),
                    Err(e) => Spill::Stopped(Some(path), format!("the output file failed: {e}")),
                };
            }
            Err(e) => {
                self.spill = Spill::Stopped(
                    None,
                    format!(
                        "the whole output was not kept: {} cannot be created ({e})",
                        path.display()
                    ),
                )
            }
        }
    }

    fn write_spill(&mut self, bytes: &[u8]) {
        let Spill::Open(w, path, written) = &mut self.spill else {
            return;
        };
        if *written + bytes.len() as u64 > MAX_SPILL {
            let path = path.clone();
            self.spill = Spill::Stopped(
                Some(path),
                format!("the output file stops at {MAX_SPILL} bytes"),
            );
            return;
        }
        match w.write_all(bytes) {
            Ok(()) => *written += bytes.len() as u64,
            Err(e) => {
                let path = path.clone();
                self.spill = Spill::Stopped(Some(path), format!("the output file failed: {e}"));
            }
        }
    }
}

/// Appends `bytes` to `ring`, keeping only its last `max` bytes.
fn keep_last(ring: &mut VecDeque<u8>, bytes: &[u8], max: usize) {
    if bytes.len() >= max {
        ring.clear();
        ring.extend(&bytes[bytes.len() - max..]);
    } else {
        let over = (ring.len() + bytes.len()).saturating_sub(max);
        ring.drain(..over);
        ring.extend(bytes);
    }
}

/// The longest prefix of `bytes` that does not end inside a character.
fn complete_utf8(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(), // invalid bytes: sent lossily
    }
}

/// Where the whole output of call `id` goes: beside the log at `log`, in
/// `<log stem>.outputs/`, under a name made of the id's safe characters and
/// a digest of the whole id (ids come from the model).
pub fn spill_path(log: &Path, id: &str) -> PathBuf {
    use sha2::Digest;
    let safe: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(48)
        .collect();
    let digest = sha2::Sha256::digest(id.as_bytes());
    let short: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let dir = log.with_extension("outputs");
    dir.join(format!("{safe}-{short}.out"))
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub status: ResultStatus,
    /// What the model is told (capped, see [`cap_for_model`]).
    pub text: String,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// The change a file tool made.
    pub diff: Option<FileDiff>,
    /// Where an output too big to keep went.
    pub file: Option<crate::event_log::OutputFile>,
}

impl ToolOutput {
    /// A failure the model should hear about (bad path, not found, …).
    pub fn failed(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Failed,
            text: text.into(),
            exit_code: None,
            signal: None,
            diff: None,
            file: None,
        }
    }

    pub fn completed(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Completed,
            text: text.into(),
            exit_code: None,
            signal: None,
            diff: None,
            file: None,
        }
    }

    pub fn cancelled(text: impl Into<String>) -> Self {
        Self {
            status: ResultStatus::Cancelled,
            ..Self::failed(text)
        }
    }
}

/// The most text a tool result may hand to the model.
pub const MODEL_OUTPUT_MAX: usize = 30_000;

/// Caps text for the model at [`MODEL_OUTPUT_MAX`] characters, keeping the
/// beginning and the end and saying how much was left out in the middle.
pub fn cap_for_model(text: &str) -> String {
    let total = text.chars().count();
    if total <= MODEL_OUTPUT_MAX {
        return text.to_owned();
    }
    let keep = MODEL_OUTPUT_MAX / 2;
    let head: String = text.chars().take(keep).collect();
    let tail: String = text.chars().skip(total - keep).collect();
    format!(
        "{head}\n\n[… {} characters elided by candor …]\n\n{tail}",
        total - 2 * keep
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole_and_never_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Capture::new(Some(dir.path().join("x.out")));
        c.push(b"hello\n");
        let chunk = c.flush(true).unwrap();
        assert_eq!(c.flush(true), None);
        assert_eq!(chunk.text, "hello\n");
        assert_eq!(chunk.skipped, 0);
        let done = c.finish();
        assert_eq!(done.text, "hello\n");
        assert_eq!(done.file, None);
        assert!(!dir.path().join("x.out").exists());
    }

    #[tokio::test(start_paused = true)]
    async fn big_output_keeps_both_ends_spills_everything_and_thins_the_card() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o/call.out");
        let mut c = Capture::new(Some(path.clone()));
        let mut whole = Vec::new();
        let mut streamed = 0u64;
        let mut skipped = 0u64;
        let mut updates = 0;
        for i in 0..2000u32 {
            let line = format!("line {i:05} {}\n", "y".repeat(500));
            whole.extend_from_slice(line.as_bytes());
            c.push(line.as_bytes());
            if let Some(chunk) = c.flush(false) {
                updates += 1;
                streamed += chunk.text.len() as u64;
                skipped += chunk.skipped;
            }
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        while let Some(chunk) = c.flush(true) {
            streamed += chunk.text.len() as u64;
            skipped += chunk.skipped;
        }
        assert_eq!(
            streamed + skipped,
            whole.len() as u64,
            "every byte accounted"
        );
        assert!(
            streamed < STREAM_HEAD + 30 * LATE_CHUNK as u64,
            "{streamed}"
        );
        assert!(updates <= 20 * 20 + 1, "at most 20 a second: {updates}");
        let done = c.finish();
        assert_eq!(done.total, whole.len() as u64);
        assert_eq!(done.file.as_deref(), Some(path.as_path()));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            whole,
            "the spill is the whole output"
        );
        assert!(done.text.starts_with("line 00000"));
        assert!(done.text.trim_end().ends_with(&"y".repeat(100)));
        assert!(done.text.contains("bytes of output not kept here"));
        assert!(done.text.len() < KEEP_HEAD + KEEP_TAIL + 100);
    }

    #[tokio::test(start_paused = true)]
    async fn characters_split_across_reads_reach_the_card_whole() {
        let mut c = Capture::new(None);
        // "é" is two bytes; the read ends between them.
        c.push("abc\u{e9}".as_bytes().split_last().unwrap().1);
        let first = c.flush(false).unwrap();
        assert_eq!(first.text, "abc");
        c.push(&[0xa9]);
        tokio::time::advance(FLUSH_EVERY).await;
        let second = c.flush(false).unwrap();
        assert_eq!(second.text, "\u{e9}");
        // Past the streamed head, a cut inside a character starts at the
        // next one, and counts what it skipped.
        let mut c = Capture::new(None);
        c.push(&vec![b'x'; STREAM_HEAD as usize]);
        while c.flush(true).is_some() {}
        let tail = "\u{e9}".repeat(LATE_CHUNK);
        c.push(tail.as_bytes());
        let late = c.flush(true).unwrap();
        assert!(
            !late.text.contains('\u{fffd}'),
            "a broken character was sent"
        );
        assert_eq!(
            late.text.len() as u64 + late.skipped,
            tail.len() as u64,
            "every byte accounted"
        );
    }

    #[test]
    fn spill_names_cannot_leave_their_folder() {
        let p = spill_path(Path::new("/s/abc.jsonl"), "../../etc/passwd");
        assert_eq!(p.parent(), Some(Path::new("/s/abc.outputs")));
        assert!(
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("etcpasswd-")
        );
        assert_ne!(
            spill_path(Path::new("/s/a.jsonl"), "a/b"),
            spill_path(Path::new("/s/a.jsonl"), "ab")
        );
    }
}
