//! Why a confined command failed, when the sandbox is why: from the
//! boundary and what the command printed, the line the model is told
//! ("the sandbox refused a write to /home/u/x: outside the writable roots
//! [~/proj, $TMPDIR]; …"), so it can ask for what it needs instead of
//! guessing. A refusal is only blamed on the sandbox when candor itself,
//! outside it, could have done what was refused (a `Permission denied` on
//! a file the user cannot write either is the file's, not the sandbox's).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::boundary::{Boundary, Network};

const ASK: &str =
    "ask the user to run it outside the sandbox with dangerouslyDisableSandbox if it is needed";

/// For a network refusal: the sanctioned way to the web.
const WEB: &str = "to read a web page, use the WebFetch tool instead (candor fetches it, each domain judged by the user's rules)";

/// At most this many lines.
const MAX_LINES: usize = 3;

/// The lines for the model about a command that exited unsuccessfully
/// with `output` (its stdout and stderr), run in `cwd` within `boundary`;
/// `None` when nothing in it points at the sandbox.
pub fn explain(boundary: &Boundary, cwd: &Path, output: &str) -> Option<String> {
    boundary.confinement()?;
    let mut lines: Vec<String> = Vec::new();
    let mut add = |line: String| {
        if lines.len() < MAX_LINES && !lines.contains(&line) {
            lines.push(line);
        }
    };
    for path in refused_paths(output) {
        let path = absolute(cwd, &path);
        if let Some(line) = file_refusal(boundary, &path) {
            add(line);
        }
    }
    if let Some(line) = network_refusal(boundary, output) {
        add(line);
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Paths named in a refusal, in the ways common tools print one.
fn refused_paths(output: &str) -> Vec<String> {
    static PATTERNS: OnceLock<Vec<Regex>> = OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        const ERR: &str = "(?:Read-only file system|Permission denied|Operation not permitted)";
        [
            // cp: cannot create regular file '/x': Permission denied
            format!(r"['‘`]([^'’`\n]+)['’`]: {ERR}"),
            // PermissionError: [Errno 13] Permission denied: '/x'
            format!(r#"{ERR}: ['"]([^'"\n]+)['"]"#),
            // bash: /x: Read-only file system
            format!(r"(?m)(?:^|: )([^:'\n]+): {ERR}\s*$"),
        ]
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
    });
    let mut found = Vec::new();
    for pattern in patterns {
        for caps in pattern.captures_iter(output) {
            if let Some(m) = caps.get(1) {
                let path = m.as_str().trim().to_owned();
                if !path.is_empty() && !path.contains(' ') && !found.contains(&path) {
                    found.push(path);
                }
            }
        }
    }
    found
}

/// `path` made absolute, `.` and `..` taken away (so `../x` is not inside
/// the root it was written from).
fn absolute(cwd: &Path, path: &str) -> PathBuf {
    use std::path::Component;
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_owned()
    } else {
        cwd.join(p)
    };
    let mut plain = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                plain.pop();
            }
            Component::CurDir => {}
            other => plain.push(other),
        }
    }
    plain
}

/// Whether the user, outside the sandbox, could write `path` (or create
/// it in its directory).
fn writable_outside(path: &Path) -> bool {
    use nix::unistd::{AccessFlags, access};
    if path.exists() {
        return access(path, AccessFlags::W_OK).is_ok();
    }
    path.parent()
        .is_some_and(|dir| access(dir, AccessFlags::W_OK | AccessFlags::X_OK).is_ok())
}

fn file_refusal(boundary: &Boundary, path: &Path) -> Option<String> {
    let shown = path.display();
    if boundary.read_denied.iter().any(|d| path.starts_with(d)) {
        return Some(format!(
            "the sandbox refused access to {shown}: the user's settings deny reading it; {ASK}"
        ));
    }
    if !writable_outside(path) {
        return None;
    }
    let kept = boundary
        .protected
        .iter()
        .chain(&boundary.write_denied)
        .find(|p| path.starts_with(p));
    if let Some(kept) = kept {
        return Some(format!(
            "the sandbox refused a write to {shown}: {} is read-only in the sandbox (a protected path); {ASK}",
            kept.display()
        ));
    }
    let writable = super::ruleset::write_paths(boundary);
    if writable.iter().any(|r| path.starts_with(r)) {
        return None;
    }
    let mut roots: Vec<String> = boundary
        .writable_roots
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    if boundary.tmpdir.is_some() {
        roots.push("$TMPDIR".into());
    }
    Some(format!(
        "the sandbox refused a write to {shown}: outside the writable roots [{}]; {ASK}",
        roots.join(", ")
    ))
}

fn network_refusal(boundary: &Boundary, output: &str) -> Option<String> {
    static PROXY: OnceLock<Option<Regex>> = OnceLock::new();
    static HOST: OnceLock<Option<Regex>> = OnceLock::new();
    let proxy = PROXY.get_or_init(|| {
        Regex::new(r"candor sandbox: network access to (\S+) is not allowed(?: \(([^)\n]*)\))?")
            .ok()
    });
    if let Some(caps) = proxy.as_ref().and_then(|r| r.captures(output))
        && let Some(host) = caps.get(1)
    {
        let why = caps
            .get(2)
            .map(|w| format!(" ({})", w.as_str()))
            .unwrap_or_default();
        return Some(format!(
            "the sandbox's network allowlist refused {}{why}; {WEB}; or ask the user to allow the domain, or {ASK}",
            host.as_str()
        ));
    }
    if output.contains("CONNECT tunnel failed, response 403") {
        return Some(format!(
            "the sandbox's network allowlist refused the connection; {WEB}; or ask the user to allow the domain, or {ASK}"
        ));
    }
    const SIGNS: [&str; 8] = [
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
        "No address associated with hostname",
        "getaddrinfo",
        "nodename nor servname",
        "Cannot assign requested address",
    ];
    if !SIGNS.iter().any(|s| output.contains(s)) {
        return None;
    }
    let host = HOST
        .get_or_init(|| Regex::new(r"(?:resolve host:?|connect to) '?([A-Za-z0-9.-]+)").ok())
        .as_ref()
        .and_then(|r| r.captures(output))
        .and_then(|c| c.get(1))
        .map(|m| format!(" to {}", m.as_str()))
        .unwrap_or_default();
    match &boundary.network {
        Network::Off => Some(format!(
            "the sandbox has no network: the connection{host} was refused; {WEB}; or {ASK}"
        )),
        Network::Allowlist { domains } => Some(format!(
            "the sandbox reaches the network only through its proxy, to [{}]: the connection{host} was refused; {WEB}; or ask the user to allow the domain, or {ASK}",
            domains.join(", ")
        )),
        Network::On => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::boundary::Preset;
    use crate::sandbox::probe::Probe;

    fn probe() -> Probe {
        Probe {
            landlock_abi: 7,
            landlock_error: None,
            user_namespace: true,
            mount_namespace: true,
            pid_namespace: true,
            network_namespace: true,
            namespace_error: None,
            seccomp: true,
        }
    }

    fn setup() -> (tempfile::TempDir, Boundary) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        let b = Boundary::new(Preset::WorkspaceWrite, vec![root], None, None, Network::Off)
            .enforceable(&probe());
        (dir, b)
    }

    #[test]
    fn a_write_outside_the_roots_is_explained_with_the_roots() {
        let (dir, b) = setup();
        let outside = dir.path().join("outside/x");
        let said = format!(
            "touch: cannot touch '{}': Permission denied",
            outside.display()
        );
        let line = explain(&b, dir.path(), &said).unwrap();
        assert_eq!(
            line,
            format!(
                "the sandbox refused a write to {}: outside the writable roots [{}]; {ASK}",
                outside.display(),
                dir.path().join("proj").display()
            )
        );
        let python = format!(
            "OSError: [Errno 30] Read-only file system: '{}'",
            outside.display()
        );
        assert!(
            explain(&b, dir.path(), &python)
                .unwrap()
                .contains("outside the writable roots")
        );
        let bash = format!("bash: line 1: {}: Permission denied", outside.display());
        assert!(
            explain(&b, dir.path(), &bash)
                .unwrap()
                .contains("outside the writable roots")
        );
    }

    #[test]
    fn a_protected_path_and_a_relative_one_are_named() {
        let (dir, b) = setup();
        let root = dir.path().join("proj");
        let line = explain(&b, &root, "bash: .git/config: Read-only file system").unwrap();
        assert!(
            line.contains(&format!("{}: ", root.join(".git/config").display())),
            "{line}"
        );
        assert!(
            line.contains("is read-only in the sandbox (a protected path)"),
            "{line}"
        );
        // `..` leads out of the root it was written from.
        let line = explain(&b, &root, "bash: line 1: ../outside/y: Permission denied").unwrap();
        assert!(
            line.starts_with(&format!(
                "the sandbox refused a write to {}: outside the writable roots",
                dir.path().join("outside/y").display()
            )),
            "{line}"
        );
    }

    #[test]
    fn a_refusal_inside_a_root_or_one_the_user_has_anyway_is_not_blamed() {
        let (dir, b) = setup();
        let inside = dir.path().join("proj/file");
        let said = format!("cat: {}: Permission denied", inside.display());
        assert_eq!(explain(&b, dir.path(), &said), None);
        assert_eq!(explain(&b, dir.path(), "ls: no such file"), None);
    }

    #[test]
    fn network_failures_name_the_host_and_the_mode() {
        let (dir, b) = setup();
        let line = explain(
            &b,
            dir.path(),
            "curl: (6) Could not resolve host: example.com",
        )
        .unwrap();
        assert_eq!(
            line,
            format!(
                "the sandbox has no network: the connection to example.com was refused; to read a web page, use the WebFetch tool instead (candor fetches it, each domain judged by the user's rules); or {ASK}"
            )
        );
        let mut allow = b.clone();
        allow.network = Network::Allowlist {
            domains: vec!["github.com".into()],
        };
        let said = "candor sandbox: network access to evil.test is not allowed";
        let line = explain(&allow, dir.path(), said).unwrap();
        assert!(
            line.starts_with("the sandbox's network allowlist refused evil.test;")
                && line.contains("use the WebFetch tool"),
            "{line}"
        );
    }

    #[test]
    fn an_unconfined_boundary_explains_nothing() {
        let (dir, _) = setup();
        let b = Boundary::new(Preset::FullAccess, vec![], None, None, Network::On);
        assert_eq!(explain(&b, dir.path(), "Network is unreachable"), None);
    }
}
