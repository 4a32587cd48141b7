//! Paths as the file tools take them: made absolute and lexically clean
//! ([`resolve`]), and followed through symbolic links the way the kernel
//! will ([`resolve_links`]).

use std::path::{Path, PathBuf};

/// Resolves a path argument against the session's working directory and
/// removes `.` and `..` components (lexically: symlinks are not followed),
/// so that `/p/../etc/passwd` is shown, ruled on and logged as `/etc/passwd`.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    use std::path::Component;
    let joined = cwd.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Follows every symbolic link in an absolute path, as the kernel would
/// when the file is opened, and returns where it leads. Unlike
/// `fs::canonicalize`, a path that does not exist (yet) still resolves:
/// its existing part is followed and the rest appended, so a Write through
/// a symlinked directory, or to a dangling link, is judged where it will
/// land. After 40 links (a loop) the rest is left as it is.
pub fn resolve_links(path: &Path) -> PathBuf {
    use std::collections::VecDeque;
    use std::path::Component;
    let mut pending: VecDeque<PathBuf> = path
        .components()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut out = PathBuf::new();
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        match part.components().next() {
            Some(Component::RootDir | Component::Prefix(_)) => out.push(&part),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Normal(name)) => {
                let next = out.join(name);
                let link = std::fs::symlink_metadata(&next)
                    .ok()
                    .filter(|m| m.file_type().is_symlink())
                    .and_then(|_| std::fs::read_link(&next).ok());
                match link {
                    Some(target) if hops < 40 => {
                        hops += 1;
                        if target.is_absolute() {
                            out = PathBuf::new();
                        }
                        for c in target.components().rev() {
                            pending.push_front(PathBuf::from(c.as_os_str()));
                        }
                    }
                    Some(_) => {
                        out = next;
                        out.extend(pending.drain(..));
                    }
                    None => out = next,
                }
            }
        }
    }
    if out.as_os_str().is_empty() {
        return path.to_owned();
    }
    out
}
