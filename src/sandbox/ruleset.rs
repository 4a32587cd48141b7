//! The Landlock ruleset a confined command runs under: read and execute
//! everywhere, write, create, remove and rename only under the writable
//! roots, the temporary directory and a few devices; TCP only to the
//! proxy's forwarder (ABI 4); no signals or abstract sockets out of the
//! sandbox (ABI 6). [`plan`] names the rights for the record; [`apply`]
//! enforces exactly those, as a hard requirement (a kernel that cannot is
//! a failed launch, never a weaker one).

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::boundary::{Boundary, LandlockRules, Network, Preset};

/// Devices every command may write (and, for terminals, `ioctl`).
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The newest ABI whose rights this code chooses among; a newer kernel is
/// used at this one.
const NEWEST: u32 = 9;

fn abi_of(abi: u32) -> ABI {
    ABI::from(i32::try_from(abi.min(NEWEST)).unwrap_or(0))
}

/// Everything the ruleset handles on files at `abi`.
fn handled_fs(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_all(abi)
}

/// What a writable root grants: all but making device nodes.
fn writable(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_all(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::ResolveUnix)
}

/// What a device (or `/dev/pts`, a directory of them) grants: reading
/// and writing, truncating (`> /dev/null`) and `ioctl`s.
fn device(abi: ABI, dir: bool) -> BitFlags<AccessFs> {
    let file = AccessFs::from_file(abi) & !AccessFs::Execute;
    if dir { file | AccessFs::ReadDir } else { file }
}

/// What every other path grants.
fn readable(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_read(abi)
}

/// The network rights handled, when they are: both TCP rights unless the
/// command may bind, and then none (inside a network namespace there is
/// nothing but its own loopback to reach).
fn handled_net(boundary: &Boundary, abi: ABI, netns: bool) -> BitFlags<AccessNet> {
    if boundary.network == Network::On || abi < ABI::V4 {
        return BitFlags::EMPTY;
    }
    if boundary.allow_local_binding {
        if netns {
            return BitFlags::EMPTY;
        }
        return AccessNet::ConnectTcp.into();
    }
    AccessNet::BindTcp | AccessNet::ConnectTcp
}

fn scopes(abi: ABI) -> BitFlags<Scope> {
    Scope::from_all(abi)
}

/// The rights the ruleset handles for this boundary at `abi`, by name.
pub fn plan(boundary: &Boundary, abi: u32, netns: bool) -> LandlockRules {
    let level = abi_of(abi);
    LandlockRules {
        abi: abi.min(NEWEST),
        filesystem: handled_fs(level).iter().map(fs_name).collect(),
        network: handled_net(boundary, level, netns)
            .iter()
            .map(|a| match a {
                AccessNet::BindTcp => "bind-tcp",
                AccessNet::ConnectTcp => "connect-tcp",
                _ => "other",
            })
            .map(str::to_owned)
            .collect(),
        scopes: scopes(level)
            .iter()
            .map(|s| match s {
                Scope::Signal => "signal",
                Scope::AbstractUnixSocket => "abstract-unix-socket",
                _ => "other",
            })
            .map(str::to_owned)
            .collect(),
    }
}

fn fs_name(access: AccessFs) -> String {
    match access {
        AccessFs::Execute => "execute",
        AccessFs::WriteFile => "write-file",
        AccessFs::ReadFile => "read-file",
        AccessFs::ReadDir => "read-dir",
        AccessFs::RemoveDir => "remove-dir",
        AccessFs::RemoveFile => "remove-file",
        AccessFs::MakeChar => "make-char",
        AccessFs::MakeDir => "make-dir",
        AccessFs::MakeReg => "make-reg",
        AccessFs::MakeSock => "make-sock",
        AccessFs::MakeFifo => "make-fifo",
        AccessFs::MakeBlock => "make-block",
        AccessFs::MakeSym => "make-sym",
        AccessFs::Refer => "refer",
        AccessFs::Truncate => "truncate",
        AccessFs::IoctlDev => "ioctl-dev",
        AccessFs::ResolveUnix => "resolve-unix",
        _ => "other",
    }
    .to_owned()
}

/// Where writes may go: the roots (but for `read-only`) and the
/// temporary directory, those that exist.
pub fn write_paths(boundary: &Boundary) -> Vec<PathBuf> {
    roots_of(boundary).filter(|p| p.exists()).cloned().collect()
}

/// The roots (but for `read-only`) and the temporary directory.
fn roots_of(boundary: &Boundary) -> impl Iterator<Item = &PathBuf> {
    let roots = match boundary.preset {
        Preset::WorkspaceWrite => boundary.writable_roots.as_slice(),
        Preset::ReadOnly | Preset::FullAccess => &[],
    };
    roots.iter().chain(boundary.tmpdir.as_ref())
}

/// What one writable root (or the temporary directory) of a boundary is
/// now, as [`apply`] would open it: its device, inode and birth, or
/// `None` (missing, or reached through a symbolic link).
pub type RootMark = Option<(u64, u64, Option<std::time::SystemTime>)>;

/// What a boundary's writable roots are now ([`RootMark`], each in turn).
/// A room of the session's house, confined ahead (`sandbox::room`), holds
/// rules on its roots as they were then; it takes a command only while
/// they are the same (a root removed and made again, renamed, or swapped
/// for a link is a new ruleset's).
pub fn roots_now(boundary: &Boundary) -> Vec<RootMark> {
    use std::os::unix::fs::MetadataExt as _;
    roots_of(boundary)
        .map(|path| {
            let file = std::fs::File::from(open_root(path).ok()?);
            let m = file.metadata().ok()?;
            Some((m.dev(), m.ino(), m.created().ok()))
        })
        .collect()
}

/// A writable root opened for its rule, where the boundary names it: a
/// path that now passes through a symbolic link is refused, not followed.
/// The roots were taken where their links led when the session took them
/// (`tools::confined::Confiner::workdir`, `Sandbox::pin_roots` when the
/// policy is built, the additional directories), so a link on the way now is one put there
/// since: a command that renamed a root inside another root and left a
/// link to anywhere in its place would otherwise have the next boundary
/// set up where the link leads, writable while the card names the root.
/// `openat2`'s `RESOLVE_NO_SYMLINKS` decides in the kernel, in one step,
/// so no swap can come between a check and the open.
fn open_root(path: &Path) -> Result<std::os::fd::OwnedFd, String> {
    use nix::fcntl::{AT_FDCWD, OFlag, OpenHow, ResolveFlag, openat2};
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    openat2(AT_FDCWD, path, how).map_err(|e| match e {
        nix::errno::Errno::ELOOP => format!(
            "the writable root {} now passes through a symbolic link that was not there when the session took it (a command may have put a link in place of a directory): the sandbox is not set up where it leads, and the command does not run",
            path.display()
        ),
        e => format!("the writable root {} cannot be opened: {e}", path.display()),
    })
}

/// Restricts the calling thread (and what it starts) to `rules`, written
/// for `boundary`. `proxy_port` is the forwarder's port (the only TCP
/// connection allowed when an allowlist is on), `proxy_socket` the
/// proxy's socket (the only unix socket reachable when the kernel can
/// tell, ABI 9, and unix sockets are not allowed), `private_shm` whether
/// `/dev/shm` is the sandbox's own.
pub fn apply(
    boundary: &Boundary,
    rules: &LandlockRules,
    netns: bool,
    proxy_port: Option<u16>,
    proxy_socket: Option<&Path>,
    private_shm: bool,
) -> Result<(), String> {
    let abi = abi_of(rules.abi);
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("Landlock ({what}): {e}");
    let net = handled_net(boundary, abi, netns);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled_fs(abi))
        .map_err(|e| fail("file rights", &e))?;
    if !net.is_empty() {
        ruleset = ruleset
            .handle_access(net)
            .map_err(|e| fail("network rights", &e))?;
    }
    let scoped = scopes(abi);
    if !scoped.is_empty() {
        ruleset = ruleset.scope(scoped).map_err(|e| fail("scopes", &e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail("create", &e))?;
    // A writable root is opened as the boundary names it (`open_root`);
    // the rest as any path is.
    let mut grant = |path: &Path, access: BitFlags<AccessFs>, root: bool| -> Result<(), String> {
        let fd = if root {
            open_root(path)?
        } else {
            nix::fcntl::open(
                path,
                nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC,
                nix::sys::stat::Mode::empty(),
            )
            .map_err(|e| fail(&path.display().to_string(), &e))?
        };
        // A file takes only the rights a file can have.
        let is_dir = nix::sys::stat::fstat(&fd)
            .map(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR)
            .unwrap_or(false);
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        created
            .as_mut()
            .add_rule(PathBeneath::new(fd, access & handled_fs(abi)))
            .map(|_| ())
            .map_err(|e| fail(&path.display().to_string(), &e))
    };
    let mut everywhere = readable(abi);
    if boundary.allow_unix_sockets && abi >= ABI::V9 {
        everywhere |= AccessFs::ResolveUnix;
    }
    grant(Path::new("/"), everywhere, false)?;
    for path in write_paths(boundary) {
        grant(&path, writable(abi), true)?;
    }
    for dev in DEVICES.iter().map(Path::new).filter(|p| p.exists()) {
        grant(dev, device(abi, dev.is_dir()), false)?;
    }
    if private_shm {
        grant(Path::new("/dev/shm"), writable(abi), false)?;
    }
    if let Some(socket) = proxy_socket
        && abi >= ABI::V9
        && !boundary.allow_unix_sockets
    {
        grant(socket, AccessFs::ResolveUnix.into(), false)?;
    }
    let mut created = created;
    if let Some(port) = proxy_port
        && net.contains(AccessNet::ConnectTcp)
    {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| fail("proxy port", &e))?;
    }
    let status = created
        .no_new_privs(true)
        .restrict_self()
        .map_err(|e| fail("restrict", &e))?;
    if status.ruleset != landlock::RulesetStatus::FullyEnforced {
        return Err(format!(
            "Landlock enforced the ruleset only partly ({:?})",
            status.ruleset
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_names_what_each_abi_adds() {
        let b = Boundary::new(Preset::WorkspaceWrite, vec![], None, None, Network::Off);
        let v1 = plan(&b, 1, true);
        assert!(!v1.filesystem.contains(&"refer".to_owned()));
        let v7 = plan(&b, 7, true);
        assert!(v7.filesystem.contains(&"refer".to_owned()));
        assert!(v7.filesystem.contains(&"ioctl-dev".to_owned()));
        assert_eq!(v7.network, vec!["bind-tcp", "connect-tcp"]);
        assert_eq!(v7.scopes, vec!["abstract-unix-socket", "signal"]);
        // A room serves command after command only where signals are
        // scoped (`tools::confined::Confiner::room_back`).
        assert!(v7.scopes_signals() && plan(&b, 6, true).scopes_signals());
        assert!(!plan(&b, 5, true).scopes_signals());
        let on = Boundary::new(Preset::WorkspaceWrite, vec![], None, None, Network::On);
        assert!(plan(&on, 7, false).network.is_empty());
    }
}
