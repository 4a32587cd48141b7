//! The protected paths: the one list of places whose contents run code or
//! change what candor and the user's tools allow. `interception::policy`
//! asks before anything writes there; the sandbox binds the ones that exist
//! inside a writable root read-only (`protocol/permissions.md`, "Protected
//! paths"; `protocol/sandbox.md`).

use std::path::{Path, PathBuf};

/// Directories protected wherever they appear as a path component, with
/// why.
pub const DIRS: [(&str, &str); 8] = [
    (".git", "the repository's own files (hooks, config)"),
    (".claude", "Claude Code's settings and hooks"),
    (".codex", "Codex's settings and hooks"),
    (".candor", "candor's own settings"),
    (".vscode", "editor settings and tasks"),
    (".idea", "editor settings"),
    (".husky", "git hooks"),
    (".ssh", "SSH keys and configuration"),
];

/// Files protected by name anywhere, with why.
pub const FILES: [(&str, &str); 2] = [
    (".envrc", "direnv runs it on entering the directory"),
    (".mcp.json", "MCP servers it lists are started as commands"),
];

/// Start-up files protected in the home directory itself.
pub const HOME_FILES: [&str; 10] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".gitconfig",
    ".npmrc",
];

/// The protected paths that exist directly in each writable root (and the
/// home directory's start-up files and protected directories when the home
/// directory is inside a root), as the sandbox will bind them read-only:
/// a symbolic link is followed, and kept only where it leads inside a
/// root (elsewhere the sandbox's rules already keep it read-only).
/// Deeper ones (`sub/.git`) are not looked for: the walk is a few `stat`s
/// per root, not a search of the tree (`protocol/sandbox.md`, "Not
/// covered").
pub fn existing(roots: &[PathBuf], home: Option<&Path>) -> Vec<PathBuf> {
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let mut found: Vec<PathBuf> = Vec::new();
    let mut look = |dir: &Path, names: &mut dyn Iterator<Item = &str>| {
        for name in names {
            let path = dir.join(name);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let path = if meta.file_type().is_symlink() {
                match std::fs::canonicalize(&path) {
                    Ok(real) if inside(&real) => real,
                    _ => continue,
                }
            } else {
                path
            };
            if !found.contains(&path) {
                found.push(path);
            }
        }
    };
    for root in roots {
        look(
            root,
            &mut DIRS
                .iter()
                .map(|(d, _)| *d)
                .chain(FILES.iter().map(|(f, _)| *f)),
        );
    }
    if let Some(home) = home
        && inside(home)
    {
        look(
            home,
            &mut HOME_FILES
                .iter()
                .copied()
                .chain(DIRS.iter().map(|(d, _)| *d)),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_exists_in_a_root_and_the_home_start_up_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".envrc"), "").unwrap();
        std::fs::create_dir_all(root.join("sub/.git")).unwrap();
        let home = dir.path().to_path_buf();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        // The home is not inside a root: its start-up files are read-only anyway.
        let found = existing(std::slice::from_ref(&root), Some(&home));
        assert_eq!(found, vec![root.join(".git"), root.join(".envrc")]);
        // The home is a root: its start-up files are bound too.
        let found = existing(std::slice::from_ref(&home), Some(&home));
        assert_eq!(found, vec![home.join(".bashrc")]);
    }

    #[test]
    fn a_link_is_followed_and_kept_only_inside_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("real-vscode")).unwrap();
        std::os::unix::fs::symlink(root.join("real-vscode"), root.join(".vscode")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join(".idea")).unwrap();
        let found = existing(std::slice::from_ref(&root), None);
        assert_eq!(
            found,
            vec![root.join("real-vscode").canonicalize().unwrap()]
        );
    }
}
