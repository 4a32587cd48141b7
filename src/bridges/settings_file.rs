//! Reading a settings file a bridge was pointed at, safely: only a
//! regular file (a link to `/dev/stdin` or a FIFO in a cloned repository
//! must not block the session or read its input), capped in size.

use std::path::Path;

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
