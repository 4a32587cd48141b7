//! A session's additional directories (ACP `additionalDirectories`, and
//! `candor doctor --add-dir`): the directories besides its working
//! directory that it counts as its project. What is taken, and why one is
//! refused.
//!
//! The editor is the user's agent here, but what it sends is still
//! checked: a root must be an absolute path to an existing directory; it
//! is resolved through its symbolic links (the rules and the sandbox use
//! the directory it leads to; the card, the prompt and `/doctor` say
//! both); and a root that would make the project hold what no project
//! should is refused: `/`, the user's home directory or any directory
//! holding it (every file there, keys and other projects, would be read
//! without asking and written in `acceptEdits`), candor's own state
//! (`CANDOR_HOME`: the logs, `trust.json`), a directory holding keys or
//! credentials or inside one (a protected directory such as `.ssh` or a
//! repository's `.git`, wherever it is: [`crate::sandbox::protected::DIRS`];
//! the home directory's credential stores, [`CREDENTIALS`]), and the
//! kernel's pseudo file systems (`/proc`, `/sys`, `/dev`: no project's
//! files, and as a writable root they would hand commands devices and
//! kernel settings). A root inside the working directory, or given twice,
//! adds nothing and is left out. At most [`MAX`].

use std::path::{Path, PathBuf};

use crate::event_log::AddedDirectory;

/// The most additional directories a session takes.
pub const MAX: usize = 32;

/// Where the home directory keeps credentials (besides `.ssh`, a protected
/// directory everywhere): no root may be one or be inside one.
pub const CREDENTIALS: [&str; 9] = [
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".config/gcloud",
    ".config/gh",
    ".local/share/keyrings",
];

/// The kernel's pseudo file systems.
const PSEUDO: [&str; 3] = ["/proc", "/sys", "/dev"];

/// What a root may not be: where the user's home and candor's state are.
#[derive(Debug, Clone, Copy, Default)]
pub struct Guard<'a> {
    pub home: Option<&'a Path>,
    /// `CANDOR_HOME`.
    pub state: Option<&'a Path>,
}

/// Checks `dirs` (as a client gives them, in order) for a session in
/// `cwd`: the roots taken, or why the first refused one is.
pub fn check(
    dirs: &[PathBuf],
    cwd: &Path,
    guard: Guard<'_>,
) -> Result<Vec<AddedDirectory>, String> {
    if dirs.len() > MAX {
        return Err(format!(
            "additionalDirectories: {} directories given; candor takes at most {MAX}",
            dirs.len()
        ));
    }
    let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let home = guard.home.and_then(real);
    let state = guard.state.map(|s| real(s).unwrap_or_else(|| s.to_owned()));
    let mut taken: Vec<AddedDirectory> = Vec::new();
    for dir in dirs {
        let shown = dir.display();
        if !dir.is_absolute() {
            return Err(format!(
                "additionalDirectories: {shown:?} is not an absolute path"
            ));
        }
        let resolved = std::fs::canonicalize(dir)
            .map_err(|e| format!("additionalDirectories: {shown} cannot be used ({e})"))?;
        if !resolved.is_dir() {
            return Err(format!("additionalDirectories: {shown} is not a directory"));
        }
        let via = if resolved == *dir {
            String::new()
        } else {
            format!(" (it leads to {})", resolved.display())
        };
        if resolved.parent().is_none() {
            return Err(format!(
                "additionalDirectories: {shown}{via} is the root of the file system: every file would count as this project's, read without asking; add the directories you mean instead"
            ));
        }
        if let Some(home) = &home
            && home.starts_with(&resolved)
        {
            return Err(format!(
                "additionalDirectories: {shown}{via} is your home directory or holds it: every file in it (your keys, your other projects) would count as this project's, read without asking; add the directories you mean instead"
            ));
        }
        if let Some(state) = &state
            && (state.starts_with(&resolved) || resolved.starts_with(state))
        {
            return Err(format!(
                "additionalDirectories: {shown}{via} holds candor's own state ({}: session logs, trust.json), which no project may reach",
                state.display()
            ));
        }
        if let Some(why) = holds_secrets(&resolved, home.as_deref()) {
            return Err(format!(
                "additionalDirectories: {shown}{via} {why}, which no project may hold: its files would be read without asking; add the directories you mean instead"
            ));
        }
        let inside = resolved.starts_with(&real_cwd);
        let again = taken.iter().any(|t| t.real() == resolved);
        if inside || again {
            continue;
        }
        taken.push(AddedDirectory {
            path: dir.clone(),
            resolved: (resolved != *dir).then_some(resolved),
        });
    }
    Ok(taken)
}

/// Why `dir` (resolved) may not be a root: a pseudo file system, a
/// protected directory (or inside one), a credentials store of the home
/// directory (or inside one).
fn holds_secrets(dir: &Path, home: Option<&Path>) -> Option<String> {
    if PSEUDO.iter().any(|p| dir.starts_with(p)) {
        return Some("is in a pseudo file system of the kernel (/proc, /sys, /dev)".into());
    }
    for part in dir.components() {
        let std::path::Component::Normal(name) = part else {
            continue;
        };
        if let Some((name, why)) = crate::sandbox::protected::DIRS
            .iter()
            .find(|(d, _)| std::ffi::OsStr::new(d) == name)
        {
            let what = if *name == ".git" {
                "a repository's own files (hooks, config)"
            } else {
                why
            };
            return Some(format!("is or is inside {name} ({what})"));
        }
    }
    let home = home?;
    CREDENTIALS
        .iter()
        .map(|c| home.join(c))
        .find(|store| dir.starts_with(store))
        .map(|store| {
            format!(
                "is or is inside {} (where credentials are kept)",
                store.display()
            )
        })
}

/// A root as a person reads it: the path given, and where it leads when
/// that is elsewhere.
pub fn describe(root: &AddedDirectory) -> String {
    match &root.resolved {
        Some(real) => format!("{} (a link to {})", root.path.display(), real.display()),
        None => root.path.display().to_string(),
    }
}

/// The directories the rules and the sandbox use: each root's real one.
pub fn real(roots: &[AddedDirectory]) -> Vec<PathBuf> {
    roots.iter().map(|r| r.real().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_no_project_should_hold_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cwd = home.join("work/app");
        let lib = home.join("work/lib");
        let state = home.join(".local/state/candor");
        for d in [&cwd, &lib, &state] {
            std::fs::create_dir_all(d).unwrap();
        }
        let guard = Guard {
            home: Some(&home),
            state: Some(&state),
        };
        let refused = |dirs: &[PathBuf]| check(dirs, &cwd, guard).unwrap_err();
        assert!(refused(&["/".into()]).contains("root of the file system"));
        assert!(refused(std::slice::from_ref(&home)).contains("home directory"));
        assert!(refused(&[dir.path().to_owned()]).contains("holds it"));
        assert!(refused(&[home.join(".local")]).contains("candor's own state"));
        assert!(refused(&["rel/dir".into()]).contains("not an absolute path"));
        assert!(refused(&[home.join("nope")]).contains("cannot be used"));
        let file = home.join("work/file");
        std::fs::write(&file, "x").unwrap();
        assert!(refused(&[file]).contains("not a directory"));
        // A link to the home directory is the home directory.
        let link = dir.path().join("innocent");
        std::os::unix::fs::symlink(&home, &link).unwrap();
        let why = refused(&[link]);
        assert!(
            why.contains("home directory") && why.contains("it leads to"),
            "{why}"
        );
        // Keys, credentials, a repository's own files, the kernel's files.
        let ssh = home.join(".ssh");
        let aws = home.join(".aws/sso");
        let git = dir.path().join("repo/.git/hooks");
        for d in [&ssh, &aws, &git] {
            std::fs::create_dir_all(d).unwrap();
        }
        assert!(refused(std::slice::from_ref(&ssh)).contains("SSH keys"));
        assert!(refused(&[aws]).contains("credentials"));
        assert!(refused(&[git]).contains("repository's own files"));
        for pseudo in ["/proc", "/sys", "/dev"] {
            assert!(refused(&[pseudo.into()]).contains("pseudo file system"));
        }
        let many: Vec<PathBuf> = (0..=MAX).map(|_| lib.clone()).collect();
        assert!(refused(&many).contains("at most"));
    }

    #[test]
    fn a_root_is_taken_resolved_once_and_not_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("app");
        let lib = dir.path().join("lib");
        std::fs::create_dir_all(cwd.join("sub")).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        let link = dir.path().join("lib-link");
        std::os::unix::fs::symlink(&lib, &link).unwrap();
        let real_lib = std::fs::canonicalize(&lib).unwrap();
        let taken = check(
            &[real_lib.clone(), link.clone(), cwd.join("sub")],
            &cwd,
            Guard::default(),
        )
        .unwrap();
        assert_eq!(taken.len(), 1, "{taken:?}");
        assert_eq!(taken[0].real(), real_lib);
        let linked = check(std::slice::from_ref(&link), &cwd, Guard::default()).unwrap();
        assert_eq!(linked[0].path, link);
        assert_eq!(linked[0].resolved.as_deref(), Some(real_lib.as_path()));
        assert!(describe(&linked[0]).contains("(a link to"));
    }
}
