//! The sandbox settings users already have (Claude Code's `sandbox`,
//! Codex's `sandbox_mode`, candor's own `[sandbox]`), each file one
//! [`Layer`], and the session's [`Sandbox`] they resolve to, in order,
//! where a project's own file may only narrow what came before it until
//! the project is trusted (`protocol/sandbox.md`, "Settings").

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::boundary::{Boundary, Enforced, Network, Preset};
use super::probe::Probe;

/// The network a setting asks for, before any domain is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    Off,
    Allowlist,
    On,
}

impl NetworkMode {
    pub const ALL: [NetworkMode; 3] = [NetworkMode::Off, NetworkMode::Allowlist, NetworkMode::On];

    /// Its name in settings and records (`off`, `allowlist`, `on`).
    pub fn id(self) -> &'static str {
        match self {
            NetworkMode::Off => "off",
            NetworkMode::Allowlist => "allowlist",
            NetworkMode::On => "on",
        }
    }

    pub fn from_id(id: &str) -> Option<NetworkMode> {
        NetworkMode::ALL.into_iter().find(|n| n.id() == id)
    }
}

/// What one settings file says about the sandbox (every field optional:
/// only what it sets counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layer {
    /// The file, for the user (`~/.claude/settings.json`).
    pub origin: String,
    /// A project's own file (a repository just cloned can hold one).
    pub project: bool,
    pub preset: Option<Preset>,
    pub network: Option<NetworkMode>,
    pub allowed_domains: Vec<String>,
    pub writable_roots: Vec<PathBuf>,
    pub deny_write: Vec<PathBuf>,
    pub deny_read: Vec<PathBuf>,
    pub auto_allow: Option<bool>,
    pub allow_unsandboxed: Option<bool>,
    pub fail_if_unavailable: Option<bool>,
    pub excluded_commands: Vec<String>,
    pub allow_local_binding: Option<bool>,
    pub allow_unix_sockets: Option<bool>,
}

/// candor's own keys (`[sandbox]` in `config.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandorKeys {
    /// `read-only`, `workspace-write` or `full-access`.
    pub mode: Option<Preset>,
    /// `off`, `allowlist` or `on`.
    pub network: Option<NetworkMode>,
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    #[serde(default)]
    pub writable_roots: Vec<PathBuf>,
    #[serde(default)]
    pub deny_write: Vec<PathBuf>,
    #[serde(default)]
    pub deny_read: Vec<PathBuf>,
    /// Commands the rules would only ask about run confined, unasked.
    pub auto_allow: Option<bool>,
    /// Whether a command may ask to run outside the sandbox at all.
    pub allow_unsandboxed: Option<bool>,
    pub fail_if_unavailable: Option<bool>,
    #[serde(default)]
    pub excluded_commands: Vec<String>,
    pub allow_local_binding: Option<bool>,
    pub allow_unix_sockets: Option<bool>,
}

/// `~/x` against `home`, a relative path against `base`.
fn place(path: &str, base: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    if path == "~" {
        return home.map(Path::to_owned);
    }
    // Claude Code writes an absolute path `//abs` in some settings.
    let path = path
        .strip_prefix('/')
        .filter(|p| p.starts_with('/'))
        .unwrap_or(path);
    let p = Path::new(path);
    Some(if p.is_absolute() {
        p.to_owned()
    } else {
        base.join(p)
    })
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn paths(v: Option<&Value>, base: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    strings(v)
        .iter()
        .filter_map(|p| place(p, base, home))
        .collect()
}

impl Layer {
    /// Claude Code's `sandbox` object of one settings file; paths relative
    /// to `base` (the project).
    pub fn claude(
        origin: String,
        project: bool,
        sandbox: &Value,
        base: &Path,
        home: Option<&Path>,
    ) -> Layer {
        let flag = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool);
        let network = sandbox.get("network").cloned().unwrap_or(Value::Null);
        let fs = sandbox.get("filesystem").cloned().unwrap_or(Value::Null);
        let allowed_domains = strings(network.get("allowedDomains"));
        Layer {
            origin,
            project,
            // Claude Code's sandbox is off unless enabled; candor's is on
            // unless turned off: only `false` says something here.
            preset: (flag(sandbox, "enabled") == Some(false)).then_some(Preset::FullAccess),
            network: (!allowed_domains.is_empty()).then_some(NetworkMode::Allowlist),
            allowed_domains,
            writable_roots: paths(fs.get("allowWrite"), base, home),
            deny_write: paths(fs.get("denyWrite"), base, home),
            deny_read: paths(fs.get("denyRead"), base, home),
            auto_allow: flag(sandbox, "autoAllowBashIfSandboxed"),
            allow_unsandboxed: flag(sandbox, "allowUnsandboxedCommands"),
            fail_if_unavailable: flag(sandbox, "failIfUnavailable"),
            excluded_commands: strings(sandbox.get("excludedCommands")),
            allow_local_binding: flag(&network, "allowLocalBinding"),
            allow_unix_sockets: flag(&network, "allowAllUnixSockets"),
        }
    }

    /// Codex's `config.toml` (as JSON): `sandbox_mode` and
    /// `[sandbox_workspace_write]`'s `writable_roots` and `network_access`.
    pub fn codex(
        origin: String,
        project: bool,
        config: &Value,
        base: &Path,
        home: Option<&Path>,
    ) -> Layer {
        let preset = match config.get("sandbox_mode").and_then(Value::as_str) {
            Some("read-only") => Some(Preset::ReadOnly),
            Some("workspace-write") => Some(Preset::WorkspaceWrite),
            Some("danger-full-access") => Some(Preset::FullAccess),
            _ => None,
        };
        let ww = config
            .get("sandbox_workspace_write")
            .cloned()
            .unwrap_or(Value::Null);
        Layer {
            origin,
            project,
            preset,
            network: ww.get("network_access").and_then(Value::as_bool).map(|on| {
                if on {
                    NetworkMode::On
                } else {
                    NetworkMode::Off
                }
            }),
            writable_roots: paths(ww.get("writable_roots"), base, home),
            ..Layer::default()
        }
    }

    /// candor's own `[sandbox]` keys.
    pub fn candor(
        origin: String,
        project: bool,
        keys: &CandorKeys,
        base: &Path,
        home: Option<&Path>,
    ) -> Layer {
        let placed = |list: &[PathBuf]| {
            list.iter()
                .filter_map(|p| place(&p.to_string_lossy(), base, home))
                .collect()
        };
        Layer {
            origin,
            project,
            preset: keys.mode,
            network: keys.network,
            allowed_domains: keys.allowed_domains.clone(),
            writable_roots: placed(&keys.writable_roots),
            deny_write: placed(&keys.deny_write),
            deny_read: placed(&keys.deny_read),
            auto_allow: keys.auto_allow,
            allow_unsandboxed: keys.allow_unsandboxed,
            fail_if_unavailable: keys.fail_if_unavailable,
            excluded_commands: keys.excluded_commands.clone(),
            allow_local_binding: keys.allow_local_binding,
            allow_unix_sockets: keys.allow_unix_sockets,
        }
    }
}

/// The session's sandbox: what every Bash call's boundary is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub preset: Preset,
    pub network: NetworkMode,
    pub allowed_domains: Vec<String>,
    /// Writable roots besides the session's directory.
    pub writable_roots: Vec<PathBuf>,
    pub deny_write: Vec<PathBuf>,
    pub deny_read: Vec<PathBuf>,
    /// Commands the rules would only ask about run confined, unasked
    /// (Claude Code's `autoAllowBashIfSandboxed`).
    pub auto_allow: bool,
    /// Whether a command may ask to run outside the sandbox
    /// (`dangerouslyDisableSandbox`) at all.
    pub allow_unsandboxed: bool,
    /// A call whose boundary this kernel cannot hold fails instead of
    /// running unconfined.
    pub fail_if_unavailable: bool,
    /// Commands that run outside the sandbox (their first words).
    pub excluded_commands: Vec<String>,
    pub allow_local_binding: bool,
    pub allow_unix_sockets: bool,
    /// Who chose the preset (a settings file, `/sandbox`), when not the
    /// default: the card's "turned off by …".
    pub preset_by: Option<String>,
    /// What the user's Read deny rules reach that the boundary cannot hold
    /// (a glob), for the card ([`Sandbox::deny_reads`]).
    /// Each as (the card's words, the whole sentence).
    pub reads_not_held: Vec<(String, String)>,
}

impl Default for Sandbox {
    /// Workspace-write, network off.
    fn default() -> Sandbox {
        Sandbox {
            preset: Preset::WorkspaceWrite,
            network: NetworkMode::Off,
            allowed_domains: Vec::new(),
            writable_roots: Vec::new(),
            deny_write: Vec::new(),
            deny_read: Vec::new(),
            auto_allow: false,
            allow_unsandboxed: true,
            fail_if_unavailable: false,
            excluded_commands: Vec::new(),
            allow_local_binding: false,
            allow_unix_sockets: false,
            preset_by: None,
            reads_not_held: Vec::new(),
        }
    }
}

fn rank(p: Preset) -> u8 {
    match p {
        Preset::ReadOnly => 0,
        Preset::WorkspaceWrite => 1,
        Preset::FullAccess => 2,
    }
}

impl Sandbox {
    /// The layers applied in order (later wins for a setting both set;
    /// lists add up). A project's own layer, while `trusted` is false,
    /// only narrows: what it would widen is left out, and returned as what
    /// trusting the project would give (one line a file).
    pub fn resolve(layers: &[Layer], trusted: bool) -> (Sandbox, Vec<String>) {
        let mut s = Sandbox::default();
        let mut remarks = Vec::new();
        for layer in layers {
            let narrow_only = layer.project && !trusted;
            let mut left_out: Vec<&str> = Vec::new();
            let mut take = |widens: bool, what: &'static str| {
                if widens && narrow_only {
                    left_out.push(what);
                    false
                } else {
                    true
                }
            };
            if let Some(p) = layer.preset
                && take(rank(p) > rank(s.preset), "a wider sandbox mode")
            {
                s.preset = p;
                s.preset_by = Some(layer.origin.clone());
            }
            if let Some(n) = layer.network {
                let widens = n > s.network
                    || (n == NetworkMode::Allowlist && s.network == NetworkMode::Allowlist);
                if take(widens, "network access") {
                    s.network = n;
                }
            }
            if !layer.allowed_domains.is_empty() {
                // Naming domains narrows only a network that was on.
                if s.network == NetworkMode::On && narrow_only {
                    s.network = NetworkMode::Allowlist;
                    s.allowed_domains = layer.allowed_domains.clone();
                } else if take(true, "allowed domains") {
                    s.allowed_domains
                        .extend(layer.allowed_domains.iter().cloned());
                }
            }
            if !layer.writable_roots.is_empty() && take(true, "writable roots") {
                s.writable_roots
                    .extend(layer.writable_roots.iter().cloned());
            }
            if !layer.excluded_commands.is_empty() && take(true, "excluded commands") {
                s.excluded_commands
                    .extend(layer.excluded_commands.iter().cloned());
            }
            s.deny_write.extend(layer.deny_write.iter().cloned());
            s.deny_read.extend(layer.deny_read.iter().cloned());
            let mut flag = |value: Option<bool>, field: &mut bool, widening: bool, what| {
                if let Some(v) = value
                    && take(v == widening && v != *field, what)
                {
                    *field = v;
                }
            };
            flag(
                layer.auto_allow,
                &mut s.auto_allow,
                true,
                "running sandboxed commands unasked",
            );
            flag(
                layer.allow_unsandboxed,
                &mut s.allow_unsandboxed,
                true,
                "commands outside the sandbox",
            );
            flag(
                layer.fail_if_unavailable,
                &mut s.fail_if_unavailable,
                false,
                "running unconfined where the sandbox is unavailable",
            );
            flag(
                layer.allow_local_binding,
                &mut s.allow_local_binding,
                true,
                "binding local ports",
            );
            flag(
                layer.allow_unix_sockets,
                &mut s.allow_unix_sockets,
                true,
                "unix sockets",
            );
            if !left_out.is_empty() {
                remarks.push(format!(
                    "{}: sandbox settings that widen the sandbox ({})",
                    layer.origin,
                    left_out.join(", ")
                ));
            }
        }
        (s, remarks)
    }

    /// Adds what the user's Read deny rules name to the read-denied paths,
    /// so a command cannot read what `Read` may not; what a rule reaches
    /// beyond named paths is said on the card, never dropped silently.
    pub fn deny_reads(&mut self, paths: Vec<PathBuf>, not_held: Option<(String, String)>) {
        for p in paths {
            if !self.deny_read.contains(&p) {
                self.deny_read.push(p);
            }
        }
        self.reads_not_held.extend(not_held);
    }

    /// Takes each writable root where its links lead now (one that does not
    /// exist yet stays as written): a boundary names roots without links,
    /// and the launcher refuses one that passes through a link later
    /// (`ruleset`), which only a command can have put there.
    pub fn pin_roots(&mut self) {
        for root in &mut self.writable_roots {
            if let Ok(real) = std::fs::canonicalize(&*root) {
                *root = real;
            }
        }
    }

    /// The boundary a command of this session runs in, as this kernel can
    /// hold it: writable roots the session's directory and the configured
    /// roots, `tmpdir` its `TMPDIR`.
    pub fn boundary(
        &self,
        cwd: &Path,
        tmpdir: &Path,
        home: Option<&Path>,
        probe: &Probe,
    ) -> Boundary {
        let mut roots = vec![cwd.to_owned()];
        roots.extend(self.writable_roots.iter().cloned());
        roots.dedup();
        // An allowlist is held by the session's proxy (a door a command),
        // which asks the user about any other host.
        let network = match self.network {
            NetworkMode::Off => Network::Off,
            NetworkMode::Allowlist => Network::Allowlist {
                domains: self.allowed_domains.clone(),
            },
            NetworkMode::On => Network::On,
        };
        let mut b = Boundary::new(
            self.preset,
            roots,
            Some(tmpdir.to_owned()),
            home.map(Path::to_owned),
            network,
        );
        b.read_denied = self.deny_read.clone();
        b.write_denied = self.deny_write.clone();
        b.allow_local_binding = self.allow_local_binding;
        b.allow_unix_sockets = self.allow_unix_sockets;
        let mut b = b.enforceable(probe);
        if let Enforced::Confined(c) = &mut b.enforced {
            c.downgrades
                .extend(self.reads_not_held.iter().map(|(_, long)| long.clone()));
            b.reads_not_held = self.reads_not_held.iter().map(|(s, _)| s.clone()).collect();
        }
        if self.preset == Preset::FullAccess {
            b.enforced = Enforced::Unconfined {
                reason: match &self.preset_by {
                    Some(by) => format!("turned off by {by}"),
                    None => "the full-access preset".into(),
                },
            };
        }
        b
    }

    /// The excluded-commands entry that names the command whose words
    /// (after quote removal, the name first) are `words`, if any: an
    /// entry's words are the command's first words (`docker` covers
    /// `docker ps`, `git push` covers `git push origin`; `docker:*` is
    /// read as `docker`). The name is matched as written (`/usr/bin/docker`
    /// is not `docker`, nor is `./docker`). Which commands of a line count
    /// is `interception::sandbox`'s to say (every one it can run).
    pub fn excluded<S: AsRef<str>>(&self, words: &[S]) -> Option<&str> {
        self.excluded_commands
            .iter()
            .map(String::as_str)
            .find(|entry| {
                let entry = entry.trim_end_matches(":*").trim_end_matches(" *");
                let want: Vec<&str> = entry.split_whitespace().collect();
                !want.is_empty()
                    && words.len() >= want.len()
                    && words.iter().zip(&want).all(|(w, e)| w.as_ref() == *e)
            })
    }

    /// Allows `host` for the rest of the session (the user's "always" to a
    /// command's question): later commands' allowlists name it.
    pub fn grant_host(&mut self, host: &str) {
        if !self.allowed_domains.iter().any(|d| d == host) {
            self.allowed_domains.push(host.to_owned());
        }
    }

    /// The preset and network as the user reads them ("workspace-write,
    /// network off").
    pub fn describe(&self) -> String {
        let preset = match self.preset {
            Preset::ReadOnly => "read-only",
            Preset::WorkspaceWrite => "workspace-write",
            Preset::FullAccess => "full access (no sandbox)",
        };
        let network = match self.network {
            NetworkMode::Off => "network off".to_owned(),
            NetworkMode::On => "network on".to_owned(),
            NetworkMode::Allowlist => format!(
                "network only to {}",
                if self.allowed_domains.is_empty() {
                    "no domain yet".to_owned()
                } else {
                    self.allowed_domains.join(", ")
                }
            ),
        };
        format!("{preset}, {network}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claude(project: bool, v: Value) -> Layer {
        Layer::claude(
            if project {
                "proj/.claude/settings.json"
            } else {
                "~/.claude/settings.json"
            }
            .into(),
            project,
            &v,
            Path::new("/p"),
            Some(Path::new("/h")),
        )
    }

    #[test]
    fn the_default_is_workspace_write_with_the_network_off() {
        let (s, remarks) = Sandbox::resolve(&[], false);
        assert_eq!(s.preset, Preset::WorkspaceWrite);
        assert_eq!(s.network, NetworkMode::Off);
        assert!(s.allow_unsandboxed && !s.auto_allow && remarks.is_empty());
    }

    #[test]
    fn claude_code_settings_map_onto_the_sandbox() {
        let user = claude(
            false,
            json!({"autoAllowBashIfSandboxed": true, "excludedCommands": ["docker"],
                   "filesystem": {"allowWrite": ["~/cache"], "denyWrite": ["./locked"], "denyRead": ["//etc/secret"]},
                   "network": {"allowedDomains": ["github.com"], "allowLocalBinding": true}}),
        );
        let (s, remarks) = Sandbox::resolve(&[user], false);
        assert!(remarks.is_empty());
        assert!(s.auto_allow);
        assert_eq!(s.network, NetworkMode::Allowlist);
        assert_eq!(s.allowed_domains, vec!["github.com"]);
        assert_eq!(s.writable_roots, vec![PathBuf::from("/h/cache")]);
        assert_eq!(s.deny_write, vec![PathBuf::from("/p/locked")]);
        assert_eq!(s.deny_read, vec![PathBuf::from("/etc/secret")]);
        assert!(s.allow_local_binding);
        assert_eq!(s.excluded(&["docker", "ps", "-a"]), Some("docker"));
        assert_eq!(s.excluded(&["dockerd"]), None);
        assert_eq!(s.excluded(&["/usr/bin/docker", "ps"]), None);
        let off = claude(false, json!({"enabled": false}));
        let (s, _) = Sandbox::resolve(&[off], false);
        assert_eq!(s.preset, Preset::FullAccess);
        assert_eq!(s.preset_by.as_deref(), Some("~/.claude/settings.json"));
    }

    #[test]
    fn codex_settings_map_onto_the_sandbox() {
        let codex = Layer::codex(
            "~/.codex/config.toml".into(),
            false,
            &json!({"sandbox_mode": "read-only", "sandbox_workspace_write": {"writable_roots": ["/data"], "network_access": true}}),
            Path::new("/p"),
            None,
        );
        let (s, _) = Sandbox::resolve(&[codex], false);
        assert_eq!(s.preset, Preset::ReadOnly);
        assert_eq!(s.network, NetworkMode::On);
        assert_eq!(s.writable_roots, vec![PathBuf::from("/data")]);
    }

    #[test]
    fn a_repository_cannot_widen_its_own_sandbox_before_trust() {
        let widen = claude(
            true,
            json!({"enabled": false, "autoAllowBashIfSandboxed": true, "allowUnsandboxedCommands": true,
                   "excludedCommands": ["bash"], "filesystem": {"allowWrite": ["/"], "denyWrite": ["./keep"]},
                   "network": {"allowedDomains": ["evil.example"], "allowAllUnixSockets": true}}),
        );
        let codex = Layer::codex(
            "proj/.codex/config.toml".into(),
            true,
            &json!({"sandbox_mode": "danger-full-access", "sandbox_workspace_write": {"network_access": true}}),
            Path::new("/p"),
            None,
        );
        let layers = [widen, codex];
        let (s, remarks) = Sandbox::resolve(&layers, false);
        assert_eq!(s.preset, Preset::WorkspaceWrite);
        assert_eq!(s.network, NetworkMode::Off);
        assert!(s.writable_roots.is_empty() && s.excluded_commands.is_empty());
        assert!(s.allowed_domains.is_empty());
        assert!(!s.auto_allow && !s.allow_unix_sockets);
        // What narrows still applies.
        assert_eq!(s.deny_write, vec![PathBuf::from("/p/keep")]);
        assert_eq!(remarks.len(), 2, "{remarks:?}");
        assert!(remarks[0].contains("widen the sandbox"), "{remarks:?}");
        // Trusted, the project's settings apply.
        let (s, remarks) = Sandbox::resolve(&layers, true);
        assert_eq!(s.preset, Preset::FullAccess);
        assert!(remarks.is_empty());
    }

    #[test]
    fn a_project_may_narrow() {
        let user = Layer::codex(
            "~/.codex/config.toml".into(),
            false,
            &json!({"sandbox_workspace_write": {"network_access": true}}),
            Path::new("/p"),
            None,
        );
        let project = Layer {
            origin: "proj/.candor/config.toml".into(),
            project: true,
            preset: Some(Preset::ReadOnly),
            network: Some(NetworkMode::Off),
            fail_if_unavailable: Some(true),
            allow_unsandboxed: Some(false),
            ..Layer::default()
        };
        let (s, remarks) = Sandbox::resolve(&[user, project], false);
        assert_eq!(s.preset, Preset::ReadOnly);
        assert_eq!(s.network, NetworkMode::Off);
        assert!(s.fail_if_unavailable && !s.allow_unsandboxed);
        assert!(remarks.is_empty(), "{remarks:?}");
    }
}
