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
//! The projections do no I/O, so the bytes are loaded beforehand:
//! [`Attachments`] holds every image the session's records name (as base64,
//! what every consumer wants), filled as each is stored and, for a stored
//! session, once when its log is opened ([`Attachments::load`], each file
//! checked against its digest). A file that is missing or does not match
//! is *unavailable*: the replay shows a placeholder and the model is told.

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

/// One image as the projections have it.
#[derive(Debug, Clone)]
enum Loaded {
    /// Its base64.
    Data(Arc<str>),
    /// Why it cannot be had.
    Unavailable(String),
}

/// The images a session's records name, by digest, in memory (see the
/// module doc).
#[derive(Debug, Clone, Default)]
pub struct Attachments {
    by_digest: HashMap<String, Loaded>,
}

impl Attachments {
    /// Every image `records` name, read from `store` (each checked against
    /// its digest; one that cannot be had is kept as unavailable).
    pub fn load(store: &ContentStore, records: &[Record]) -> Self {
        let mut loaded = Self::default();
        for digest in records.iter().flat_map(|r| digests(&r.event)) {
            if loaded.by_digest.contains_key(digest) {
                continue;
            }
            let entry = match store.get(digest) {
                Ok(bytes) => Loaded::Data(crate::media::encode(&bytes).into()),
                Err(why) => {
                    tracing::warn!(digest, why, "a stored image is unavailable");
                    Loaded::Unavailable(why)
                }
            };
            loaded.by_digest.insert(digest.to_owned(), entry);
        }
        loaded
    }

    /// An image just stored.
    pub fn insert(&mut self, digest: String, base64: String) {
        self.by_digest.insert(digest, Loaded::Data(base64.into()));
    }

    /// The image's base64, or why it is unavailable.
    pub fn get(&self, digest: &str) -> Result<&str, &str> {
        match self.by_digest.get(digest) {
            Some(Loaded::Data(data)) => Ok(data),
            Some(Loaded::Unavailable(why)) => Err(why),
            None => Err("it is not in this session's content store"),
        }
    }

    /// The images that cannot be had: digest and why.
    pub fn unavailable(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = self
            .by_digest
            .iter()
            .filter_map(|(d, l)| match l {
                Loaded::Unavailable(why) => Some((d.as_str(), why.as_str())),
                Loaded::Data(_) => None,
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// The record with its images' data put back where the client and the
    /// presenter expect it (a prompt's image blocks, an MCP tool's image
    /// blocks); unchanged when it names none. An unavailable image stays
    /// without data (the presenter shows a placeholder for it).
    pub fn hydrate<'a>(&self, record: &'a Record) -> Cow<'a, Record> {
        match &record.event {
            Event::UserMessage { images, .. } if !images.is_empty() => {
                let mut record = record.clone();
                if let Event::UserMessage { content, images } = &mut record.event {
                    for image in images.iter() {
                        if let Some(ContentBlock::Image(block)) = content.get_mut(image.block)
                            && block.data.is_empty()
                            && let Ok(data) = self.get(&image.image.digest)
                        {
                            block.data = data.to_owned();
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
                            && let Ok(stored) = self.get(digest)
                        {
                            stored.clone_into(data);
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
}
