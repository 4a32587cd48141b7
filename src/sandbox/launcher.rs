//! Which binary launches a confined command: the lean launcher
//! `candor-sandbox` (`src/bin/candor-sandbox.rs`: the launcher's code and
//! nothing else, so a command does not pay for starting all of candor
//! twice) when it sits beside candor's own binary, is as trustworthy as
//! that binary and is of the same build ([`BUILD`]); otherwise candor's own
//! binary (`candor __sandbox`). Never a path from `PATH` or the project.
//! `tools::exec::sandbox_probe` makes the choice once per process, with
//! the probe it runs anyway ([`chosen`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The lean launcher's file name, beside candor's binary.
pub const LEAN: &str = "candor-sandbox";

/// This build of candor (a hash of what it was built from, `build.rs`).
/// A launcher says its own in the probe's answer, and refuses a launch
/// written by another build.
pub const BUILD: &str = env!("CANDOR_BUILD");

/// The lean launcher beside `candor` (candor's own binary, links
/// resolved), if it is there and as trustworthy as `candor` itself: a
/// regular file (not a link), executable, owned by the same user, and
/// writable by no one `candor` is not writable by.
pub fn beside(candor: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let own = std::fs::metadata(candor).ok()?;
    let lean = candor.parent()?.join(LEAN);
    let meta = std::fs::symlink_metadata(&lean).ok()?;
    let trusted = meta.file_type().is_file()
        && meta.mode() & 0o100 != 0
        && meta.uid() == own.uid()
        && meta.mode() & 0o022 & !(own.mode() & 0o022) == 0;
    trusted.then_some(lean)
}

/// The build a probe's answer names (`None` from a launcher too old to
/// say).
pub fn build_of(answer: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Built {
        build: Option<String>,
    }
    serde_json::from_slice::<Built>(answer).ok()?.build
}

static CHOSEN: OnceLock<Chosen> = OnceLock::new();

/// candor's own binary as the kernel holds it for the running process:
/// no file a command put at candor's path since.
pub const RUNNING: &str = "/proc/self/exe";

/// The launcher chosen, as it was when its probe answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub path: PathBuf,
    /// `candor-sandbox`, not candor itself.
    pub lean: bool,
    /// Its file as it was then.
    pub file: Option<Identity>,
}

/// A file as the kernel names it, and when its inode last changed (a
/// write in place, a rename over it, a new mode: the kernel sets it, no
/// command can set it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
}

impl Identity {
    /// `path`'s identity (not following a link).
    pub fn of(path: &Path) -> Option<Identity> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }
}

/// Whether no command in `boundary` could have changed the chosen
/// launcher: it lies under none of `boundary`'s writable roots (a candor
/// built inside the project) and is the same file, unwritten, as when it
/// was chosen (a command of a wider boundary may still run).
fn untouched(chosen: &Chosen, boundary: &super::boundary::Boundary) -> bool {
    chosen.file.is_some_and(|was| {
        Identity::of(&chosen.path) == Some(was)
            && !super::ruleset::write_paths(boundary)
                .iter()
                .any(|root| chosen.path.starts_with(root))
    })
}

/// The binary a command candor starts itself is launched by, in
/// `boundary`: the lean launcher chosen when no command could have changed
/// it (`untouched`); else candor's running binary ([`RUNNING`]), never a
/// path a command could have put another program at. A launcher a command
/// replaced would run the next command with no boundary while its card
/// claims one.
pub fn local_for(chosen: &Chosen, boundary: &super::boundary::Boundary) -> PathBuf {
    if chosen.lean && untouched(chosen, boundary) {
        chosen.path.clone()
    } else {
        PathBuf::from(RUNNING)
    }
}

/// The launcher the editor's terminal is given for a command in
/// `boundary` (a path: the editor starts it): the one chosen, when no
/// command could have changed it; else why not (the command then runs as
/// candor's own, `local_for`).
pub fn terminal_for(
    chosen: &Chosen,
    boundary: &super::boundary::Boundary,
) -> Result<PathBuf, String> {
    if untouched(chosen, boundary) {
        Ok(chosen.path.clone())
    } else {
        Err(format!(
            "the launcher {} lies where a sandboxed command could have changed it (a writable root), or has changed since candor started",
            chosen.path.display()
        ))
    }
}

/// [`local_for`] with this process's choice (`None` before its probe).
pub fn local(boundary: &super::boundary::Boundary) -> Option<PathBuf> {
    CHOSEN.get().map(|c| local_for(c, boundary))
}

/// [`terminal_for`] with this process's choice.
pub fn terminal(boundary: &super::boundary::Boundary) -> Result<PathBuf, String> {
    let chosen = CHOSEN.get().ok_or("no launcher was chosen yet")?;
    terminal_for(chosen, boundary)
}

/// The launcher in a line for a person: its path, and when it is candor
/// itself, why and what that costs.
pub fn describe(launcher: &Path) -> String {
    if launcher.file_name().is_some_and(|n| n == LEAN) {
        return launcher.display().to_string();
    }
    format!(
        "{} (candor itself: no {LEAN} of this build beside it, so each command starts a few milliseconds slower)",
        launcher.display()
    )
}

/// The launcher this process chose (with its probe), if it has.
pub fn chosen() -> Option<&'static Path> {
    CHOSEN.get().map(|c| c.path.as_path())
}

/// Keeps `launcher` as this process's launcher (the first kept wins),
/// with its file as it was when `file` was taken (before its probe ran):
/// the lean one, or candor itself.
pub fn choose(launcher: PathBuf, lean: bool, file: Option<Identity>) -> &'static Path {
    &CHOSEN
        .get_or_init(|| Chosen {
            path: launcher,
            lean,
            file,
        })
        .path
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file(path: &Path, mode: u32) {
        std::fs::write(path, b"").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_lean_launcher_is_taken_only_as_trusted_as_candor() {
        let dir = tempfile::tempdir().unwrap();
        let candor = dir.path().join("candor");
        file(&candor, 0o755);
        let lean = dir.path().join(LEAN);
        // Not there: none.
        assert_eq!(beside(&candor), None);
        file(&lean, 0o755);
        assert_eq!(beside(&candor), Some(lean.clone()));
        // Writable by others when candor is not: refused.
        std::fs::set_permissions(&lean, std::fs::Permissions::from_mode(0o757)).unwrap();
        assert_eq!(beside(&candor), None);
        // Not executable: refused.
        std::fs::set_permissions(&lean, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(beside(&candor), None);
        // A link, even to a good file: refused.
        std::fs::remove_file(&lean).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        file(&elsewhere, 0o755);
        std::os::unix::fs::symlink(&elsewhere, &lean).unwrap();
        assert_eq!(beside(&candor), None);
    }

    #[test]
    fn a_launcher_a_command_could_have_changed_is_not_run() {
        use crate::sandbox::boundary::{Boundary, Network, Preset};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let project = root.join("project");
        let bin = root.join("bin");
        std::fs::create_dir_all(project.join("target/debug")).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let boundary = Boundary::new(
            Preset::WorkspaceWrite,
            vec![project.clone()],
            None,
            None,
            Network::Off,
        );
        let running = PathBuf::from(RUNNING);
        // Control: the lean launcher outside every writable root, as its
        // probe found it, is the one run.
        let lean = bin.join(LEAN);
        file(&lean, 0o755);
        let chosen = probed(&lean, true);
        assert_eq!(local_for(&chosen, &boundary), lean);
        // Beside a candor built inside the project (a writable root): a
        // command could put its own program there; candor's running
        // binary launches instead.
        let inside = project.join("target/debug").join(LEAN);
        file(&inside, 0o755);
        let planted = probed(&inside, true);
        assert_eq!(local_for(&planted, &boundary), running);
        // Nor is it given to the editor's terminal.
        assert!(terminal_for(&planted, &boundary).is_err());
        assert_eq!(terminal_for(&chosen, &boundary), Ok(lean.clone()));
        // Written since its probe answered (by a command of a wider
        // boundary, still running): not run.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&lean, b"#!/bin/sh\nexec \"$@\"\n").unwrap();
        assert_eq!(local_for(&chosen, &boundary), running);
        assert!(terminal_for(&chosen, &boundary).is_err());
        // Replaced by another file: not run.
        let other = bin.join("other");
        file(&other, 0o755);
        let chosen = probed(&lean, true);
        std::fs::rename(&other, &lean).unwrap();
        assert_eq!(local_for(&chosen, &boundary), running);
        // candor itself: the binary that is running, never a path a
        // command could have replaced.
        let candor = project.join("target/debug/candor");
        file(&candor, 0o755);
        let itself = probed(&candor, false);
        assert_eq!(local_for(&itself, &boundary), running);
        assert!(terminal_for(&itself, &boundary).is_err());
        // candor itself outside the roots: the terminal may start it.
        let candor = bin.join("candor");
        file(&candor, 0o755);
        let itself = probed(&candor, false);
        assert_eq!(local_for(&itself, &boundary), running);
        assert_eq!(terminal_for(&itself, &boundary), Ok(candor));
    }

    /// What the probe would have chosen: `path` as it is now.
    fn probed(path: &Path, lean: bool) -> Chosen {
        Chosen {
            path: path.to_owned(),
            lean,
            file: Identity::of(path),
        }
    }

    #[test]
    fn a_probe_answer_names_its_build() {
        assert_eq!(
            build_of(br#"{"landlockAbi":7,"build":"00ff"}"#),
            Some("00ff".into())
        );
        assert_eq!(build_of(br#"{"landlockAbi":7}"#), None);
        assert_eq!(build_of(b"not json"), None);
        assert_eq!(BUILD.len(), 16);
    }
}
