//! The content store beside a session's log: the images of a session, one
//! file each, so that a record names an image by its digest instead of
//! holding its base64 (a screenshot is megabytes; a log line is read back
//! whole).
//!
//! `<sessions>/<sessionId>.content/<hex>`: the directory mode 0700, each
//! file 0600, named by the SHA-256 of its bytes (the record's `digest` is
//! `sha256:<hex>`). [`ContentStore::put`] writes a file through a temporary
//! one and a rename, and `fdatasync`s the file and the directory before it
//! returns: a record that names a digest is appended only after its bytes
//! are on disk. Files are never rewritten (the same bytes are the same
//! name) nor removed.
//!
//! The projections do no I/O, so the bytes they need are loaded
//! beforehand, and only those: [`Attachments`] holds at most
//! [`MAX_HELD_IMAGES`] images and [`MAX_HELD_BYTES`] of their base64 (what
//! every consumer wants), the least recently wanted let go first, and
//! knows of every image looked at its size or why it cannot be had. It is
//! filled as each image is stored; for a stored session, every image is
//! surveyed once when its log is opened ([`Attachments::survey`]: read,
//! checked against its digest, let go). Before a request is derived, the
//! session loads the images it carries ([`Attachments::ensure`], given the
//! history's own choice of them); a record shown to the client gets its
//! images from those held or else from the store, for that record only
//! ([`Attachments::hydrate`]). A file that is missing or does not match is
//! *unavailable*: the replay shows a placeholder and the model is told.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::v1::ContentBlock;
use sha2::Digest as _;

use super::record::{Event, Record, ResultContent};
use crate::media::MAX_IMAGE_BYTES;

/// A session's content store.
#[derive(Debug, Clone)]
pub struct ContentStore {
    dir: PathBuf,
}

/// `sha256:` of `bytes`, as records name stored content.
pub fn digest_of(bytes: &[u8]) -> String {
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The file name a digest stands for: its 64 lowercase hex digits, or
/// `None` for anything else (a digest read from a log names a file: it
/// cannot step outside the store).
fn file_name(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))).then_some(hex)
}

impl ContentStore {
    /// The store of the log at `log` (`<id>.jsonl` → `<id>.content/`).
    pub fn beside(log: &Path) -> Self {
        Self {
            dir: log.with_extension("content"),
        }
    }

    /// Where it lives.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keeps `bytes` and returns their digest, once they are on disk (the
    /// file and its name). Bytes already kept are not written again.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let digest = digest_of(bytes);
        let Some(name) = file_name(&digest) else {
            return Err(std::io::Error::other("a digest that names no file"));
        };
        let path = self.dir.join(name);
        if self.get(&digest).is_ok() {
            return Ok(digest);
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".candor-")
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(&self.dir)?;
        temp.write_all(bytes)?;
        temp.as_file().sync_data()?;
        temp.persist(&path).map_err(|e| e.error)?;
        std::fs::File::open(&self.dir)?.sync_all()?;
        Ok(digest)
    }

    /// The bytes kept under `digest`, checked against it; why not, if they
    /// cannot be had.
    pub fn get(&self, digest: &str) -> Result<Vec<u8>, String> {
        let Some(name) = file_name(digest) else {
            return Err(format!("{digest:?} is not a digest candor writes"));
        };
        let path = self.dir.join(name);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("its stored copy {} is missing", path.display()));
            }
            Err(e) => {
                return Err(format!(
                    "its stored copy {} cannot be read: {e}",
                    path.display()
                ));
            }
        };
        let meta = file
            .metadata()
            .map_err(|e| format!("its stored copy cannot be read: {e}"))?;
        if !meta.is_file() || meta.len() > MAX_IMAGE_BYTES as u64 {
            return Err(format!(
                "its stored copy {} is not what candor wrote",
                path.display()
            ));
        }
        let mut bytes = Vec::new();
        file.take(MAX_IMAGE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("its stored copy cannot be read: {e}"))?;
        if digest_of(&bytes) != digest {
            return Err(format!(
                "its stored copy {} does not match its digest (it was changed or damaged)",
                path.display()
            ));
        }
        Ok(bytes)
    }
}

/// Most images [`Attachments`] holds: the most one request carries
/// (`media::MAX_REQUEST_IMAGES`) and a prompt's worth more
/// (`media::MAX_PROMPT_IMAGES`), so the images just stored for a prompt or
/// a tool do not push out the ones the next request still carries.
pub const MAX_HELD_IMAGES: usize =
    crate::media::MAX_REQUEST_IMAGES + crate::media::MAX_PROMPT_IMAGES;
/// Most bytes of base64 [`Attachments`] holds: the most one request
/// carries (`media::MAX_REQUEST_IMAGE_BYTES`) and one image more
/// (`media::MAX_IMAGE_BYTES`), both as base64 (what is held).
pub const MAX_HELD_BYTES: usize = crate::media::encoded_len(crate::media::MAX_REQUEST_IMAGE_BYTES)
    + crate::media::encoded_len(MAX_IMAGE_BYTES);

/// What is known of an image the records name, without holding it.
#[derive(Debug, Clone)]
enum Known {
    /// It was read and matched its digest: its size, decoded.
    Size(usize),
    /// Why it cannot be had.
    Unavailable(String),
}

/// An image held: its base64 and when it was last wanted.
#[derive(Debug, Clone)]
struct Held {
    data: Arc<str>,
    used: u64,
}

/// The images of a session as the projections have them (see the module
/// doc): at most [`MAX_HELD_IMAGES`] and [`MAX_HELD_BYTES`] of them held
/// as base64 (the least recently wanted go first), and for every image
/// looked at, its size or why it cannot be had (a few bytes each).
#[derive(Debug, Clone, Default)]
pub struct Attachments {
    known: HashMap<String, Known>,
    held: HashMap<String, Held>,
    held_bytes: usize,
    clock: u64,
}

/// An image a request is to carry: its digest and the size the history
/// counted for it (decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub digest: String,
    pub bytes: usize,
}

impl Attachments {
    /// What is known of every image `records` name, read from `store` one
    /// at a time and not held (each checked against its digest; one that
    /// cannot be had is kept as unavailable). The images a request carries
    /// are loaded by [`ensure`](Self::ensure).
    pub fn survey(store: &ContentStore, records: &[Record]) -> Self {
        let mut surveyed = Self::default();
        for digest in records.iter().flat_map(|r| digests(&r.event)) {
            if surveyed.known.contains_key(digest) {
                continue;
            }
            let known = match store.get(digest) {
                Ok(bytes) => Known::Size(bytes.len()),
                Err(why) => {
                    tracing::warn!(digest, why, "a stored image is unavailable");
                    Known::Unavailable(why)
                }
            };
            surveyed.known.insert(digest.to_owned(), known);
        }
        surveyed
    }

    /// An image just stored (the bytes `digest` names).
    pub fn insert(&mut self, digest: String, bytes: &[u8]) {
        self.known.insert(digest.clone(), Known::Size(bytes.len()));
        self.clock += 1;
        self.hold(digest, crate::media::encode(bytes).into());
    }

    /// Holds `data`, wanted now, letting go of the least recently wanted
    /// images until the holding is within its caps (those wanted now go
    /// last: the caps leave room for every image one request carries and
    /// one more, so they never have to).
    fn hold(&mut self, digest: String, data: Arc<str>) {
        if let Some(old) = self.held.remove(&digest) {
            self.held_bytes -= old.data.len();
        }
        self.held_bytes += data.len();
        self.held.insert(
            digest,
            Held {
                data,
                used: self.clock,
            },
        );
        while self.held.len() > MAX_HELD_IMAGES || self.held_bytes > MAX_HELD_BYTES {
            let now = self.clock;
            let Some(oldest) = self
                .held
                .iter()
                .min_by_key(|(_, h)| (h.used == now, h.used))
                .map(|(d, _)| d.clone())
            else {
                break;
            };
            if let Some(gone) = self.held.remove(&oldest) {
                self.held_bytes -= gone.data.len();
            }
        }
    }

    /// Makes sure the images of `wanted` (a request's, newest first, as
    /// `history::carried_images` chose them) are held, reading those that
    /// are not from `store`. `false` when they all are; `true` when one
    /// turned out otherwise than the choice assumed (unavailable, or not
    /// the size its record gives), so that the choice is to be made again.
    pub fn ensure(&mut self, store: &ContentStore, wanted: &[Wanted]) -> bool {
        // The ones held are wanted now, so that reading the others lets go
        // of images no longer wanted.
        self.clock += 1;
        for w in wanted {
            if let Some(held) = self.held.get_mut(&w.digest) {
                held.used = self.clock;
            }
        }
        for w in wanted {
            if self.held.contains_key(&w.digest) {
                continue;
            }
            match store.get(&w.digest) {
                Ok(bytes) => {
                    self.known
                        .insert(w.digest.clone(), Known::Size(bytes.len()));
                    self.hold(w.digest.clone(), crate::media::encode(&bytes).into());
                    if bytes.len() != w.bytes {
                        return true;
                    }
                }
                Err(why) => {
                    tracing::warn!(digest = w.digest, why, "a stored image is unavailable");
                    self.known.insert(w.digest.clone(), Known::Unavailable(why));
                    return true;
                }
            }
        }
        false
    }

    /// The image's base64 if it is held, or why it is not.
    pub fn get(&self, digest: &str) -> Result<&str, &str> {
        match (self.held.get(digest), self.known.get(digest)) {
            (Some(held), _) => Ok(&held.data),
            (None, Some(Known::Unavailable(why))) => Err(why),
            (None, _) => Err("it is not in this session's content store"),
        }
    }

    /// Why the image cannot be had, if that is known.
    pub fn unavailable_reason(&self, digest: &str) -> Option<&str> {
        match self.known.get(digest) {
            Some(Known::Unavailable(why)) => Some(why),
            _ => None,
        }
    }

    /// The image's size (decoded) as read from the store, if it was.
    pub fn size(&self, digest: &str) -> Option<usize> {
        match self.known.get(digest) {
            Some(Known::Size(size)) => Some(*size),
            _ => None,
        }
    }

    /// How many images are held, and their base64's bytes.
    pub fn held(&self) -> (usize, usize) {
        (self.held.len(), self.held_bytes)
    }

    /// The images that cannot be had: digest and why.
    pub fn unavailable(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = self
            .known
            .iter()
            .filter_map(|(d, k)| match k {
                Known::Unavailable(why) => Some((d.as_str(), why.as_str())),
                Known::Size(_) => None,
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// An image's base64 for the client: held, else read from `store` for
    /// this once (not held); `None` if it cannot be had.
    fn data_for_client(&self, store: &ContentStore, digest: &str) -> Option<String> {
        if let Some(held) = self.held.get(digest) {
            return Some(held.data.to_string());
        }
        if self.unavailable_reason(digest).is_some() {
            return None;
        }
        match store.get(digest) {
            Ok(bytes) => Some(crate::media::encode(&bytes)),
            Err(why) => {
                tracing::warn!(digest, why, "a stored image is unavailable");
                None
            }
        }
    }

    /// The record with its images' data put back where the client and the
    /// presenter expect it (a prompt's image blocks, an MCP tool's image
    /// blocks), each from the images held or else read from `store` for
    /// this record only (a replay holds one record's images at a time);
    /// unchanged when it names none. An unavailable image stays without
    /// data (the presenter shows a placeholder for it).
    pub fn hydrate<'a>(&self, store: &ContentStore, record: &'a Record) -> Cow<'a, Record> {
        match &record.event {
            Event::UserMessage { images, .. } if !images.is_empty() => {
                let mut record = record.clone();
                if let Event::UserMessage {
                    content, images, ..
                } = &mut record.event
                {
                    for image in images.iter() {
                        if let Some(ContentBlock::Image(block)) = content.get_mut(image.block)
                            && block.data.is_empty()
                            && let Some(data) = self.data_for_client(store, &image.image.digest)
                        {
                            block.data = data;
                        }
                    }
                }
                Cow::Owned(record)
            }
            Event::ToolContent { content, .. }
                if content.iter().any(|c| {
                    matches!(
                        c,
                        ResultContent::Image {
                            digest: Some(_),
                            ..
                        }
                    )
                }) =>
            {
                let mut record = record.clone();
                if let Event::ToolContent { content, .. } = &mut record.event {
                    for block in content.iter_mut() {
                        if let ResultContent::Image {
                            data,
                            digest: Some(digest),
                            ..
                        } = block
                            && data.is_empty()
                            && let Some(stored) = self.data_for_client(store, digest)
                        {
                            *data = stored;
                        }
                    }
                }
                Cow::Owned(record)
            }
            _ => Cow::Borrowed(record),
        }
    }
}

/// The digests of the stored images a record names.
pub fn digests(event: &Event) -> Vec<&str> {
    match event {
        Event::UserMessage { images, .. } => {
            images.iter().map(|i| i.image.digest.as_str()).collect()
        }
        Event::PromptResource {
            image: Some(image), ..
        } => vec![image.digest.as_str()],
        Event::ToolContent { content, .. } => content
            .iter()
            .filter_map(|c| match c {
                ResultContent::Image {
                    digest: Some(d), ..
                } => Some(d.as_str()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_kept_by_digest_and_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContentStore::beside(&dir.path().join("s.jsonl"));
        let digest = store.put(b"picture").unwrap();
        assert_eq!(digest, digest_of(b"picture"));
        assert_eq!(store.get(&digest).unwrap(), b"picture");
        assert_eq!(store.put(b"picture").unwrap(), digest, "kept once");
        let file = store.dir().join(digest.trim_start_matches("sha256:"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(mode(&file), 0o600);
        let entries: Vec<_> = std::fs::read_dir(store.dir()).unwrap().collect();
        assert_eq!(entries.len(), 1, "no temporary file left behind");
        // Changed on disk: not what the digest names.
        std::fs::write(&file, b"another").unwrap();
        assert!(store.get(&digest).unwrap_err().contains("does not match"));
        // Put again, it is mended.
        store.put(b"picture").unwrap();
        assert_eq!(store.get(&digest).unwrap(), b"picture");
        std::fs::remove_file(&file).unwrap();
        assert!(store.get(&digest).unwrap_err().contains("missing"));
    }

    #[test]
    fn a_digest_from_a_log_cannot_name_a_file_outside_the_store() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret"), b"x").unwrap();
        let store = ContentStore::beside(&dir.path().join("s.jsonl"));
        for digest in ["sha256:../secret", "../secret", "sha256:", "sha256:ABCDEF"] {
            assert!(
                store.get(digest).unwrap_err().contains("not a digest"),
                "{digest}"
            );
        }
    }

    #[test]
    fn the_images_held_never_exceed_the_caps() {
        let mut held = Attachments::default();
        // Many small ones: the count caps.
        for n in 0..100u32 {
            let bytes = n.to_le_bytes();
            held.insert(digest_of(&bytes), &bytes);
            assert!(held.held().0 <= MAX_HELD_IMAGES);
        }
        assert_eq!(held.held().0, MAX_HELD_IMAGES);
        // The latest are the ones held.
        assert!(held.get(&digest_of(&99u32.to_le_bytes())).is_ok());
        assert!(held.get(&digest_of(&0u32.to_le_bytes())).is_err());
        // Large ones: the bytes cap.
        for n in 0..20u8 {
            let bytes = vec![n; MAX_IMAGE_BYTES];
            held.insert(digest_of(&bytes), &bytes);
            let (_, bytes) = held.held();
            assert!(bytes <= MAX_HELD_BYTES, "{bytes}");
        }
        assert!(held.get(&digest_of(&vec![19u8; MAX_IMAGE_BYTES])).is_ok());
    }

    #[test]
    fn ensure_reads_what_is_wanted_and_tells_when_the_choice_was_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContentStore::beside(&dir.path().join("s.jsonl"));
        let digests: Vec<String> = (0..5u8).map(|n| store.put(&[n; 10]).unwrap()).collect();
        let mut held = Attachments::default();
        let wanted = |d: &str, bytes| Wanted {
            digest: d.to_owned(),
            bytes,
        };
        assert!(!held.ensure(&store, &[wanted(&digests[0], 10)]));
        assert_eq!(
            held.get(&digests[0]),
            Ok(crate::media::encode(&[0; 10]).as_str())
        );
        assert_eq!(held.size(&digests[0]), Some(10));
        // A size its record gets wrong: chosen again.
        assert!(held.ensure(&store, &[wanted(&digests[1], 3)]));
        assert_eq!(held.size(&digests[1]), Some(10));
        // Gone from the store: known as unavailable, chosen again.
        std::fs::remove_file(store.dir().join(digests[2].trim_start_matches("sha256:"))).unwrap();
        assert!(held.ensure(&store, &[wanted(&digests[2], 10)]));
        assert!(
            held.unavailable_reason(&digests[2])
                .unwrap()
                .contains("missing")
        );
        assert_eq!(held.unavailable().len(), 1);
    }
}
