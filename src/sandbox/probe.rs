//! What this kernel gives the sandbox, found by trying: a child process
//! (`candor __sandbox --probe`) enters the namespaces the launcher would,
//! mounts a `/proc` as the launcher's init would (a grandchild), brings
//! `lo` up, installs a seccomp filter and restricts itself with Landlock,
//! and prints what worked as JSON, with the build it is of
//! (`sandbox::launcher`). candor runs it once per process
//! (`tools::exec::sandbox_probe`) and keeps the answer ([`cached`]).

// The probe starts its own grandchild (the init it tries), with std's
// `Command`: it runs in the process `tools::exec` started.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::boundary::Namespaces;

/// What the kernel gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// The Landlock ABI (0: none).
    pub landlock_abi: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock_error: Option<String>,
    /// Unprivileged user namespaces (with their uid and gid maps).
    pub user_namespace: bool,
    /// A mount namespace with private mounts.
    pub mount_namespace: bool,
    /// A PID namespace whose init can mount a fresh `/proc`.
    pub pid_namespace: bool,
    /// A network namespace whose `lo` comes up.
    pub network_namespace: bool,
    /// Why a namespace is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_error: Option<String>,
    /// Seccomp filters.
    pub seccomp: bool,
}

impl Probe {
    /// Nothing, for this reason (the probe could not run).
    pub fn nothing(reason: &str) -> Probe {
        Probe {
            landlock_abi: 0,
            landlock_error: Some(reason.to_owned()),
            user_namespace: false,
            mount_namespace: false,
            pid_namespace: false,
            network_namespace: false,
            namespace_error: Some(reason.to_owned()),
            seccomp: false,
        }
    }

    /// The probe's output, or nothing if it is not readable.
    pub fn parse(stdout: &[u8]) -> Probe {
        serde_json::from_slice(stdout)
            .unwrap_or_else(|e| Probe::nothing(&format!("the probe's answer is not readable: {e}")))
    }

    /// One line for people (`candor doctor`).
    pub fn describe(&self) -> String {
        let landlock = match self.landlock_abi {
            0 => format!(
                "no Landlock ({})",
                self.landlock_error.as_deref().unwrap_or("not offered")
            ),
            abi => format!("Landlock ABI {abi}"),
        };
        let namespaces = if self.user_namespace {
            let mut have = vec!["user"];
            for (on, name) in [
                (self.mount_namespace, "mount"),
                (self.pid_namespace, "PID"),
                (self.network_namespace, "network"),
            ] {
                if on {
                    have.push(name);
                }
            }
            format!("{} namespaces", have.join(", "))
        } else {
            format!(
                "no user namespaces ({})",
                self.namespace_error.as_deref().unwrap_or("not offered")
            )
        };
        let seccomp = if self.seccomp {
            "seccomp"
        } else {
            "no seccomp"
        };
        format!("{landlock}, {namespaces}, {seccomp}")
    }
}

static CACHE: OnceLock<Probe> = OnceLock::new();

/// The probe this process already ran, if any.
pub fn cached() -> Option<&'static Probe> {
    CACHE.get()
}

/// Keeps `probe` as this process's answer (the first kept wins).
pub fn remember(probe: Probe) -> &'static Probe {
    CACHE.get_or_init(|| probe)
}

/// `candor __sandbox --probe`: tries each mechanism in the order the
/// launcher uses them, in this (single-threaded) process, and prints the
/// [`Probe`].
pub fn child() -> ExitCode {
    let mut probe = Probe::nothing("");
    probe.landlock_error = None;
    probe.namespace_error = None;
    let all = Namespaces {
        user: true,
        mount: true,
        pid: true,
        network: true,
        ipc: true,
    };
    match super::namespaces::enter(&all) {
        Ok(()) => {
            probe.user_namespace = true;
            match super::namespaces::make_private() {
                Ok(()) => probe.mount_namespace = true,
                Err(e) => probe.namespace_error = Some(e),
            }
            match super::namespaces::loopback_up() {
                Ok(()) => probe.network_namespace = true,
                Err(e) => probe.namespace_error = Some(e),
            }
            if probe.mount_namespace {
                match try_init() {
                    Ok(()) => probe.pid_namespace = true,
                    Err(e) => probe.namespace_error = Some(e),
                }
            }
        }
        Err(e) => probe.namespace_error = Some(e),
    }
    let _ = nix::sys::prctl::set_no_new_privs();
    probe.seccomp = super::seccomp::apply(&["io_uring".to_owned()]).is_ok();
    match landlock_abi() {
        Ok(abi) => probe.landlock_abi = abi,
        Err(e) => probe.landlock_error = Some(e),
    }
    // The answer names this launcher's build (`sandbox::launcher`).
    let json = match serde_json::to_value(&probe) {
        Ok(serde_json::Value::Object(mut answer)) => {
            answer.insert("build".into(), super::launcher::BUILD.into());
            serde_json::Value::Object(answer).to_string()
        }
        _ => String::new(),
    };
    let _ = writeln!(std::io::stdout(), "{json}");
    ExitCode::SUCCESS
}

/// Starts `--probe-init` as the new PID namespace's init and waits (2 s
/// at most) for it to mount `/proc`.
fn try_init() -> Result<(), String> {
    super::namespaces::keep_for_init()?;
    let mut child = super::launch::running()
        .args([super::launch::SUBCOMMAND, "--probe-init"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting an init: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(_)) => {
                let mut why = String::new();
                if let Some(mut err) = child.stderr.take() {
                    use std::io::Read;
                    let _ = (&mut err).take(1024).read_to_string(&mut why);
                }
                return Err(why.trim().to_owned());
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            _ => {
                let _ = child.kill();
                return Err("the init did not answer".into());
            }
        }
    }
}

/// `candor __sandbox --probe-init`: mounts a fresh `/proc`.
pub fn child_init() -> ExitCode {
    match super::namespaces::mount_proc() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{e}");
            ExitCode::FAILURE
        }
    }
}

/// The Landlock ABI, from restricting this process (best effort, nothing
/// denied that it needs: it is about to print and exit).
fn landlock_abi() -> Result<u32, String> {
    use landlock::{ABI, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr};
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self())
        .map_err(|e| e.to_string())?;
    match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => Ok(kernel_abi
            .and_then(|k| u32::try_from(k).ok())
            .unwrap_or(effective_abi as u32)),
        LandlockStatus::NotEnabled => Err("Landlock is built in but not enabled at boot".into()),
        LandlockStatus::NotImplemented => Err("the kernel is built without Landlock".into()),
    }
}
