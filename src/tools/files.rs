//! Reading and writing text files: through the editor when it offers it
//! (`fs/read_text_file`, `fs/write_text_file`, which see unsaved buffers
//! and let the editor track the change), else the disk, with writes made
//! atomic (a temporary file in the same directory, then a rename).

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tokio_util::sync::CancellationToken;

pub use crate::client::ClientLink;
use crate::client::Failed;

/// Largest text candor reads or writes in one go.
pub const MAX_TEXT_BYTES: usize = 10 * 1024 * 1024;

/// Where a tool's file reads and writes go.
#[derive(Debug, Clone, Default)]
pub struct FileAccess {
    client: Option<ClientLink>,
}

impl FileAccess {
    pub fn new(client: Option<ClientLink>) -> Self {
        Self { client }
    }

    /// Whether reads go through the editor.
    pub fn reads_through_editor(&self) -> bool {
        self.client.as_ref().is_some_and(|c| c.read)
    }

    /// The file's text; `Ok(None)` if it does not exist.
    pub async fn read(
        &self,
        path: &Path,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, String> {
        if let Some(why) = not_a_file(path) {
            return Err(why);
        }
        if let Some(client) = self.client.as_ref().filter(|c| c.read) {
            return match client.read_text_file(path, cancel).await {
                Ok(answer) if answer.content.len() > MAX_TEXT_BYTES => {
                    Err(too_big(path, answer.content.len()))
                }
                Ok(answer) => Ok(Some(answer.content)),
                Err(Failed::TimedOut) => Err(format!(
                    "the editor did not answer fs/read_text_file within {} s",
                    client.fs_timeout.as_secs_f64()
                )),
                Err(Failed::Cancelled) => Err("cancelled".into()),
                // Editors report a missing file each in their own words:
                // believe the disk when it agrees the file is not there.
                Err(_) if !path.exists() => Ok(None),
                Err(e) => Err(format!("the editor could not read {}: {e}", path.display())),
            };
        }
        let path = path.to_owned();
        let read = tokio::task::spawn_blocking(move || read_disk(&path));
        tokio::select! {
            done = read => done.map_err(|e| format!("reading failed: {e}"))?,
            () = cancel.cancelled() => Err("cancelled".into()),
        }
    }

    /// Replaces the file's text (creating it and missing directories).
    pub async fn write(
        &self,
        path: &Path,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(too_big(path, text.len()));
        }
        if let Some(why) = not_a_file(path) {
            return Err(why);
        }
        if let Some(client) = self.client.as_ref().filter(|c| c.write) {
            return match client.write_text_file(path, text, cancel).await {
                Ok(()) => Ok(()),
                Err(Failed::TimedOut) => Err(format!(
                    "the editor did not answer fs/write_text_file within {} s",
                    client.fs_timeout.as_secs_f64()
                )),
                Err(e) => Err(format!(
                    "the editor could not write {}: {e}",
                    path.display()
                )),
            };
        }
        let (path, text) = (path.to_owned(), text.to_owned());
        // Not abandoned on cancel: a write that goes on after the card said
        // cancelled would be a change nobody was shown (it is bounded: one
        // regular file of at most MAX_TEXT_BYTES).
        let written = tokio::task::spawn_blocking(move || write_atomic(&path, &text)).await;
        written.map_err(|e| format!("writing failed: {e}"))?
    }
}

fn too_big(path: &Path, len: usize) -> String {
    format!(
        "{} is {len} bytes; files over {MAX_TEXT_BYTES} bytes are not read or written whole",
        path.display()
    )
}

/// Why a path is not something candor reads or writes: only regular
/// files are (a device such as `/dev/zero` never ends, a FIFO or
/// `/dev/stdin` blocks or reads candor's own input, `/proc` and `/sys` files
/// are not what their size says). `None` for a regular file or no file.
pub fn not_a_file(path: &Path) -> Option<String> {
    let shown = path.display();
    if path.starts_with("/proc") || path.starts_with("/sys") || path.starts_with("/dev") {
        return Some(format!(
            "{shown} is a system pseudo-file; candor reads and writes only regular files"
        ));
    }
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return None;
    }
    if meta.is_dir() {
        return Some(format!("{shown} is a directory, not a file"));
    }
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let what = if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Some(format!(
        "{shown} is {what}; candor reads and writes only regular files"
    ))
}

/// A regular file's bytes, at most `cap` of them (`Ok(None)`: no such
/// file). The file is opened without blocking (a FIFO swapped in after a
/// check would block an ordinary open) and checked again once open; at
/// most one byte more than the cap is ever read, whatever the file does.
pub fn read_regular(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read as _;
    let shown = path.display();
    let Some((file, meta)) = open_regular(path, Links::Follow)? else {
        return Ok(None);
    };
    let too_big = |len: u64| {
        format!(
            "{shown} is {len} bytes; files over {cap} bytes are not read whole (use Bash with `head`, `tail` or `grep`)"
        )
    };
    if meta.len() > cap {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(Some(bytes))
}

/// The first `n` bytes (or fewer) of a regular file on disk, opened as
/// [`read_regular`] opens it (`Ok(None)`: no such file).
pub fn head(path: &Path, n: usize) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read as _;
    let Some((file, _)) = open_regular(path, Links::Follow)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.take(n as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(Some(bytes))
}

/// Whether [`open_regular`] opens a symbolic link's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Follow it (the file tools judge a path where it leads).
    Follow,
    /// Refuse it (`O_NOFOLLOW`: a link swapped in after a check that saw
    /// none is not opened).
    Refuse,
}

/// A regular file opened for reading without blocking, and checked again
/// once open (`Ok(None)`: no such file; an error for anything that is not
/// a regular file, before or after the open, and for a link `links`
/// refuses).
pub fn open_regular(
    path: &Path,
    links: Links,
) -> Result<Option<(std::fs::File, std::fs::Metadata)>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    if let Some(why) = not_a_file(path) {
        return Err(why);
    }
    let mut flags = nix::fcntl::OFlag::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= nix::fcntl::OFlag::O_NOFOLLOW;
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{shown} is not a regular file; candor reads and writes only regular files"
        ));
    }
    Ok(Some((file, meta)))
}

/// An image file on disk (PNG, JPEG, GIF, WebP by its bytes, whatever its
/// name): its type and bytes, within `crate::media::MAX_IMAGE_BYTES`.
/// `Ok(None)`: not an image (or no such file); an error for an image over
/// the cap (saying so) or one that cannot be read.
pub fn image_file(path: &Path) -> Result<Option<(&'static str, Vec<u8>)>, String> {
    let Some(head) = head(path, 16)? else {
        return Ok(None);
    };
    let Some(mime_type) = crate::media::sniff(&head) else {
        return Ok(None);
    };
    let cap = crate::media::MAX_IMAGE_BYTES as u64;
    let shown = path.display();
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {shown}: {e}"))?
        .len();
    if len > cap {
        return Err(format!(
            "{shown} is an image ({mime_type}) of {}; images over {} are not given to the model (make a smaller copy, and read that)",
            crate::media::size(len),
            crate::media::size(cap)
        ));
    }
    let Some(bytes) = read_regular(path, cap)? else {
        return Ok(None);
    };
    // The file may have changed since its head was read: the bytes decide.
    crate::media::check(mime_type, &bytes)
        .map_err(|why| format!("{shown} changed while it was read: {why}"))?;
    Ok(Some((mime_type, bytes)))
}

fn read_disk(path: &Path) -> Result<Option<String>, String> {
    let shown = path.display();
    let Some(bytes) = read_regular(path, MAX_TEXT_BYTES as u64)? else {
        return Ok(None);
    };
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(format!("{shown} is a binary file"));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{shown} is not UTF-8 text"))
}

/// Writes through a temporary file in the same directory and a rename, so
/// a reader never sees half a file; keeps an existing file's permissions.
fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let shown = path.display();
    let dir = path
        .parent()
        .ok_or_else(|| format!("{shown} has no parent directory"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut temp = tempfile::Builder::new()
        .prefix(".candor-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    temp.write_all(text.as_bytes())
        .and_then(|()| temp.as_file().sync_data())
        .map_err(|e| format!("cannot write {shown}: {e}"))?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o644);
    let _ = temp
        .as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode));
    temp.persist(path)
        .map(drop)
        .map_err(|e| format!("cannot write {shown}: {}", e.error))
}

/// What a diff is computed on ([`FileDiff::base`](crate::event_log::FileDiff)):
/// `sha256:` of the text, or `absent`.
pub fn base_of(text: Option<&str>) -> String {
    use sha2::Digest;
    match text {
        None => "absent".to_owned(),
        Some(text) => {
            let hex: String = sha2::Sha256::digest(text.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("sha256:{hex}")
        }
    }
}

/// Refuses a write whose file is no longer the one the user allowed the
/// change on (the diff's `base` differs from the answer's).
pub fn unchanged_since_allowed(
    allowed: Option<&str>,
    diff: &crate::event_log::FileDiff,
) -> Result<(), String> {
    match allowed {
        Some(allowed) if diff.base.as_deref() != Some(allowed) => Err(format!(
            "{} changed after you allowed this change; nothing was written (ask again to apply it to the file as it is now)",
            diff.path.display()
        )),
        _ => Ok(()),
    }
}

/// The first line (1-based) where `new` differs from `old`.
pub fn first_changed_line(old: &str, new: &str) -> u32 {
    let mut line = 1u32;
    let mut old_lines = old.split_inclusive('\n');
    for new_line in new.split_inclusive('\n') {
        match old_lines.next() {
            Some(o) if o == new_line => line = line.saturating_add(1),
            _ => return line,
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn disk_writes_are_atomic_and_keep_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/a.sh");
        let files = FileAccess::default();
        let cancel = CancellationToken::new();
        assert_eq!(files.read(&path, &cancel).await, Ok(None));
        files.write(&path, "one\n", &cancel).await.unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        files.write(&path, "two\n", &cancel).await.unwrap();
        assert_eq!(files.read(&path, &cancel).await, Ok(Some("two\n".into())));
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn first_changed_lines() {
        assert_eq!(first_changed_line("a\nb\nc\n", "a\nB\nc\n"), 2);
        assert_eq!(first_changed_line("", "x\n"), 1);
        assert_eq!(first_changed_line("a\n", "a\nb\n"), 2);
        assert_eq!(first_changed_line("a\nb\n", "a\n"), 2);
    }
}
