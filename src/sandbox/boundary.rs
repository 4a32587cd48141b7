//! The boundary a command runs in, as a value: what it may write, read and
//! reach ([`Boundary`]), and what the kernel will actually hold of it
//! ([`Enforced`]). It is settled with a call and recorded in `tool/call`
//! (`protocol/sandbox.md`, "The record"), so the card line
//! ([`Boundary::summary`]) and the list of what is not held
//! ([`Boundary::not_enforced`]) come from this value alone, and the
//! launcher applies exactly what [`Enforced`] says, or does not run the
//! command.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How much a command may change (Codex's `sandbox_mode`; Claude Code's
/// sandbox on or off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// Writes only to the session's temporary directory.
    ReadOnly,
    /// Writes under the writable roots and the temporary directory.
    WorkspaceWrite,
    /// No sandbox.
    FullAccess,
}

impl Preset {
    pub const ALL: [Preset; 3] = [Preset::ReadOnly, Preset::WorkspaceWrite, Preset::FullAccess];

    /// Its name in settings and records (`read-only`, `workspace-write`,
    /// `full-access`).
    pub fn id(self) -> &'static str {
        match self {
            Preset::ReadOnly => "read-only",
            Preset::WorkspaceWrite => "workspace-write",
            Preset::FullAccess => "full-access",
        }
    }

    pub fn from_id(id: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.id() == id)
    }
}

/// Where a command may connect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum Network {
    /// Nowhere but inside its own namespace.
    Off,
    /// Only through candor's proxy, to these domains (`*.example.com`
    /// for the subdomains of one), and to those the user allows when asked.
    Allowlist { domains: Vec<String> },
    /// Anywhere the user can.
    On,
}

/// What a command may touch, and what the kernel holds of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Boundary {
    pub preset: Preset,
    /// Where writes go (the session's directory, its additional
    /// directories, the roots the user configured); ignored by `read-only`.
    pub writable_roots: Vec<PathBuf>,
    /// The per-session temporary directory (`TMPDIR` in the command),
    /// writable in every preset.
    pub tmpdir: Option<PathBuf>,
    /// The user's home (`~` on the card; its start-up files are protected).
    pub home: Option<PathBuf>,
    /// Paths the command may not read (the user's Read deny rules,
    /// Claude Code's `denyRead`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_denied: Vec<PathBuf>,
    /// Paths inside a writable root the user keeps read-only (Claude
    /// Code's `denyWrite`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_denied: Vec<PathBuf>,
    /// The user's Read deny rules (or the part of one) the boundary
    /// cannot hold, a glob: said on the card, never dropped silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads_not_held: Vec<String>,
    /// The protected paths (`sandbox::protected`) found inside the
    /// writable roots when the boundary was made; the launcher binds these
    /// and any found since read-only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<PathBuf>,
    pub network: Network,
    /// May bind local ports (Claude Code's `allowLocalBinding`).
    #[serde(default)]
    pub allow_local_binding: bool,
    /// May open unix sockets (Claude Code's `allowAllUnixSockets`).
    #[serde(default)]
    pub allow_unix_sockets: bool,
    pub enforced: Enforced,
}

/// What the kernel holds of a [`Boundary`], or why nothing does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Enforced {
    Confined(Confinement),
    Unconfined { reason: String },
}

/// The mechanisms the launcher applies, each of which it checks, failing
/// the launch rather than running with less.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Confinement {
    pub landlock: LandlockRules,
    pub namespaces: Namespaces,
    /// What the seccomp filter refuses (`EPERM`).
    pub seccomp: Vec<String>,
    pub no_new_privs: bool,
    /// Every capability dropped before the command runs (bounding,
    /// ambient, inheritable, permitted and effective sets).
    pub capabilities_dropped: bool,
    /// What was asked and narrowed or left out because this kernel cannot
    /// hold it, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub downgrades: Vec<String>,
}

/// The Landlock ruleset: the ABI it is written for and the rights it
/// handles (denied but where a rule grants them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LandlockRules {
    pub abi: u32,
    /// File-system rights handled (`read-file`, `write-file`, …).
    pub filesystem: Vec<String>,
    /// Network rights handled (`bind-tcp`, `connect-tcp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// Scopes (`signal`, `abstract-unix-socket`): nothing inside reaches
    /// a process or abstract socket outside.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl LandlockRules {
    /// Whether signals are scoped: a process signals only its own domain
    /// and the domains below it (Landlock ABI 6 and later).
    pub fn scopes_signals(&self) -> bool {
        self.scopes.iter().any(|s| s == "signal")
    }
}

/// The namespaces the launcher creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespaces {
    pub user: bool,
    /// Read-only binds over protected and write-denied paths, read-denied
    /// paths hidden, a private `/dev/shm`.
    pub mount: bool,
    /// The command is under its own init: everything it starts ends with
    /// it, and it sees only its own processes (a fresh `/proc`).
    pub pid: bool,
    /// Only a loopback interface: no way out (but the proxy, when an
    /// allowlist is on).
    pub network: bool,
    pub ipc: bool,
}

impl Boundary {
    /// A boundary for a call, not yet checked against a kernel (its
    /// `enforced` says so until [`Boundary::enforceable`]). Roots and the
    /// temporary directory are taken as given (absolute); the protected
    /// paths existing inside the roots are found now.
    pub fn new(
        preset: Preset,
        writable_roots: Vec<PathBuf>,
        tmpdir: Option<PathBuf>,
        home: Option<PathBuf>,
        network: Network,
    ) -> Boundary {
        let writable_roots = match preset {
            Preset::WorkspaceWrite => writable_roots,
            Preset::ReadOnly | Preset::FullAccess => Vec::new(),
        };
        let protected = super::protected::existing(&writable_roots, home.as_deref());
        Boundary {
            preset,
            writable_roots,
            tmpdir,
            home,
            read_denied: Vec::new(),
            reads_not_held: Vec::new(),
            write_denied: Vec::new(),
            protected,
            network,
            allow_local_binding: false,
            allow_unix_sockets: false,
            enforced: Enforced::Unconfined {
                reason: "not yet checked against this kernel".into(),
            },
        }
    }

    /// The confinement the launcher must apply, if any.
    pub fn confinement(&self) -> Option<&Confinement> {
        match &self.enforced {
            Enforced::Confined(c) => Some(c),
            Enforced::Unconfined { .. } => None,
        }
    }

    /// The card's line: "sandbox: writes to ~/proj and $TMPDIR only,
    /// network off, processes end with the call", or "not sandboxed: …".
    pub fn summary(&self) -> String {
        let confinement = match &self.enforced {
            Enforced::Unconfined { reason } => return format!("not sandboxed: {reason}"),
            Enforced::Confined(c) => c,
        };
        let mut places: Vec<String> = self.writable_roots.iter().map(|r| self.tilde(r)).collect();
        if self.tmpdir.is_some() {
            places.push("$TMPDIR".into());
        }
        let writes = match places.as_slice() {
            [] => "read-only".to_owned(),
            [one] => format!("writes to {one} only"),
            [init @ .., last] => format!("writes to {} and {last} only", init.join(", ")),
        };
        let network = match &self.network {
            Network::Off => "network off".to_owned(),
            Network::On => "network on".to_owned(),
            Network::Allowlist { domains } if domains.is_empty() => {
                "network only to domains you allow".to_owned()
            }
            Network::Allowlist { domains } => format!(
                "network only to {}{}",
                domains
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                if domains.len() > 3 { ", …" } else { "" }
            ),
        };
        let processes = if confinement.namespaces.pid {
            ", processes end with the call"
        } else {
            ""
        };
        let reads = if self.reads_not_held.is_empty() {
            String::new()
        } else {
            format!(
                "; not held for commands: {}",
                self.reads_not_held.join(", ")
            )
        };
        format!("sandbox: {writes}, {network}{processes}{reads}")
    }

    /// What this boundary does not hold, in words, for the card's details,
    /// `candor doctor` and the model's explanation.
    pub fn not_enforced(&self) -> Vec<String> {
        let c = match &self.enforced {
            Enforced::Unconfined { reason } => {
                return vec![format!("nothing is confined: {reason}")];
            }
            Enforced::Confined(c) => c,
        };
        let mut gaps = c.downgrades.clone();
        if c.namespaces.mount {
            gaps.push("a protected path that does not exist when the command starts (a new `.mcp.json`), one deeper than the top of a writable root (`sub/.git`), and hard links made before the call to a protected file".into());
        }
        if !c.landlock.filesystem.iter().any(|r| r == "resolve-unix") && self.allow_unix_sockets {
            gaps.push("connections to unix sockets outside (a Docker or SSH agent socket)".into());
        }
        if !c.landlock.scopes.iter().any(|s| s == "signal") && !c.namespaces.pid {
            gaps.push("signals to the user's other processes".into());
        }
        if self.network == Network::On {
            gaps.push("the network is on: the command may send what it reads anywhere".into());
        }
        gaps.push(
            "reads: the command may read every file the user can, but the read-denied paths".into(),
        );
        gaps
    }

    /// `path` with the home directory written `~`.
    fn tilde(&self, path: &Path) -> String {
        if let Some(home) = &self.home
            && let Ok(rest) = path.strip_prefix(home)
        {
            if rest.as_os_str().is_empty() {
                return "~".into();
            }
            return format!("~/{}", rest.display());
        }
        path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::probe::Probe;

    fn full_probe() -> Probe {
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

    fn boundary(network: Network) -> Boundary {
        Boundary::new(
            Preset::WorkspaceWrite,
            vec![PathBuf::from("/home/u/proj")],
            Some(PathBuf::from("/tmp/candor-s1")),
            Some(PathBuf::from("/home/u")),
            network,
        )
    }

    #[test]
    fn the_card_line_says_where_writes_go_the_network_and_processes() {
        let b = boundary(Network::Off).enforceable(&full_probe());
        assert_eq!(
            b.summary(),
            "sandbox: writes to ~/proj and $TMPDIR only, network off, processes end with the call"
        );
        let b = boundary(Network::Allowlist {
            domains: vec!["github.com".into(), "*.npmjs.org".into()],
        })
        .enforceable(&full_probe());
        assert_eq!(
            b.summary(),
            "sandbox: writes to ~/proj and $TMPDIR only, network only to github.com, *.npmjs.org, processes end with the call"
        );
        let ro = Boundary::new(
            Preset::ReadOnly,
            vec![PathBuf::from("/p")],
            None,
            None,
            Network::Off,
        )
        .enforceable(&full_probe());
        assert!(ro.writable_roots.is_empty());
        assert!(ro.summary().starts_with("sandbox: read-only, network off"));
    }

    #[test]
    fn a_boundary_not_checked_or_full_access_says_it_is_not_sandboxed() {
        assert_eq!(
            boundary(Network::Off).summary(),
            "not sandboxed: not yet checked against this kernel"
        );
        let full = Boundary::new(Preset::FullAccess, vec![], None, None, Network::On)
            .enforceable(&full_probe());
        assert_eq!(full.summary(), "not sandboxed: the full-access preset");
        assert!(full.confinement().is_none());
    }

    #[test]
    fn without_landlock_nothing_is_claimed() {
        let probe = Probe {
            landlock_abi: 0,
            landlock_error: Some("not enabled at boot".into()),
            ..full_probe()
        };
        let b = boundary(Network::Off).enforceable(&probe);
        assert_eq!(
            b.summary(),
            "not sandboxed: this kernel has no Landlock (not enabled at boot)"
        );
        assert_eq!(b.not_enforced().len(), 1);
    }

    #[test]
    fn without_user_namespaces_an_allowlist_becomes_off_and_the_gaps_are_named() {
        let probe = Probe {
            user_namespace: false,
            mount_namespace: false,
            pid_namespace: false,
            network_namespace: false,
            namespace_error: Some("EPERM".into()),
            ..full_probe()
        };
        let b = boundary(Network::Allowlist {
            domains: vec!["github.com".into()],
        })
        .enforceable(&probe);
        assert_eq!(b.network, Network::Off);
        let c = b.confinement().unwrap();
        assert!(!c.namespaces.pid && !c.namespaces.network);
        // The seccomp filter takes the network namespace's place.
        assert!(
            c.seccomp.iter().any(|s| s.contains("AF_INET")),
            "{:?}",
            c.seccomp
        );
        assert_eq!(
            b.summary(),
            "sandbox: writes to ~/proj and $TMPDIR only, network off"
        );
        let gaps = b.not_enforced().join("\n");
        assert!(gaps.contains("no user namespace (EPERM)"), "{gaps}");
        assert!(
            gaps.contains("allowlist needs a network namespace"),
            "{gaps}"
        );
    }

    #[test]
    fn older_landlock_handles_fewer_rights_and_says_so() {
        let probe = Probe {
            landlock_abi: 3,
            ..full_probe()
        };
        let b = boundary(Network::Off).enforceable(&probe);
        let c = b.confinement().unwrap();
        assert!(c.landlock.network.is_empty());
        assert!(c.landlock.scopes.is_empty());
        assert!(c.landlock.filesystem.contains(&"truncate".to_owned()));
        assert!(!c.landlock.filesystem.contains(&"ioctl-dev".to_owned()));
    }

    #[test]
    fn the_record_shape_round_trips() {
        let mut b = boundary(Network::Allowlist {
            domains: vec!["example.com".into()],
        })
        .enforceable(&full_probe());
        b.read_denied.push("/home/u/.aws".into());
        let json = serde_json::to_value(&b).unwrap();
        assert_eq!(json["preset"], "workspace-write");
        assert_eq!(json["network"]["mode"], "allowlist");
        assert_eq!(json["enforced"]["kind"], "confined");
        assert_eq!(json["enforced"]["landlock"]["abi"], 7);
        assert_eq!(json["enforced"]["namespaces"]["pid"], true);
        let back: Boundary = serde_json::from_value(json).unwrap();
        assert_eq!(back, b);
    }
}
