//! A boundary as this kernel can hold it ([`Boundary::enforceable`]): the
//! probe's findings turned into the [`Confinement`] the launcher applies
//! (the Landlock ruleset's plan, the namespaces, the seccomp refusals),
//! never claiming what the probe did not find.

use super::boundary::{Boundary, Confinement, Enforced, Namespaces, Network, Preset};
use super::probe::Probe;

impl Boundary {
    /// This boundary as this kernel can hold it: `enforced` filled from
    /// the probe, never claiming what the probe did not find; what cannot
    /// be held is narrowed (an allowlist without a network namespace
    /// becomes no network) or named in `downgrades`.
    pub fn enforceable(mut self, probe: &Probe) -> Boundary {
        if self.preset == Preset::FullAccess {
            self.enforced = Enforced::Unconfined {
                reason: "the full-access preset".into(),
            };
            return self;
        }
        if probe.landlock_abi == 0 {
            self.enforced = Enforced::Unconfined {
                reason: format!(
                    "this kernel has no Landlock{}",
                    probe
                        .landlock_error
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                ),
            };
            return self;
        }
        let mut downgrades = Vec::new();
        let user = probe.user_namespace;
        let mount = user && probe.mount_namespace;
        let pid = mount && probe.pid_namespace;
        let network = user && probe.network_namespace && self.network != Network::On;
        if !user {
            downgrades.push(format!(
                "no user namespace ({}): protected paths inside the writable roots are writable, read-denied paths are readable, and processes the command leaves behind are ended by the launcher rather than the kernel",
                probe.namespace_error.as_deref().unwrap_or("not offered")
            ));
        } else if !pid {
            downgrades.push(
                "no PID namespace: the command sees the host's processes, and those it leaves behind are ended by the launcher".into(),
            );
        }
        if !network && matches!(self.network, Network::Allowlist { .. }) {
            downgrades
                .push("the network allowlist needs a network namespace: the network is off".into());
            self.network = Network::Off;
        }
        let namespaces = Namespaces {
            user,
            mount,
            pid,
            network,
            ipc: user,
        };
        let landlock = super::ruleset::plan(&self, probe.landlock_abi, network);
        let seccomp = if probe.seccomp {
            super::seccomp::plan(&self, network)
        } else {
            downgrades.push("no seccomp: io_uring and socket families are not filtered".into());
            if !network && self.network == Network::Off {
                self.enforced = Enforced::Unconfined {
                    reason: "the network cannot be turned off on this kernel (no network namespace and no seccomp)".into(),
                };
                return self;
            }
            Vec::new()
        };
        self.enforced = Enforced::Confined(Confinement {
            landlock,
            namespaces,
            seccomp,
            no_new_privs: true,
            capabilities_dropped: true,
            downgrades,
        });
        self
    }
}
