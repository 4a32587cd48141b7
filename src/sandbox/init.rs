//! The launcher's second stage, `… __sandbox --init …`: the init (PID 1)
//! of the sandbox's PID namespace. It mounts a fresh `/proc` while the
//! first stage binds and hides paths, waits for its word that they are in
//! place and enters the working directory again, starts the proxy
//! forwarder when an allowlist is on, makes itself
//! undumpable, drops every capability, sets `no_new_privs`, applies the
//! Landlock ruleset and the seccomp filter, tells the first stage it is
//! set up, starts the command with `TMPDIR` (and the proxy variables) set,
//! reaps every process that ends in the namespace, and exits as the
//! command did, which makes the kernel end everything else in it. Without
//! a PID namespace it is the command's child subreaper instead, and ends
//! what the command left behind itself.

// The second stage starts the command with std's `Command` (it is a
// process `tools::exec` started, through the first stage).
#![allow(clippy::disallowed_methods)]

use std::ffi::OsString;
use std::io::Write;
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::ExitCode;

use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::boundary::{Confinement, Network};
use super::launch::{Launch, MESSAGE_PREFIX, NONCE_VAR, fail, send};
use super::lifeline::Report;

/// How long the init waits for the first stage's mounts.
const MOUNTS_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The second stage, from its arguments (`<launch JSON> -- argv…`).
pub(super) fn run_args(args: &[OsString]) -> ExitCode {
    match super::launch::parse(args) {
        Ok((spec, argv)) => run(&spec, &argv),
        Err(e) => fail(None, &e),
    }
}

/// The second stage.
pub fn run(launch: &Launch, argv: &[OsString]) -> ExitCode {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    if let Some(why) = super::launch::foreign(launch) {
        return fail(None, &why);
    }
    let mut status = match connect() {
        Ok(status) => status,
        Err(e) => return fail(None, &e),
    };
    let Some(c) = launch.boundary.confinement() else {
        return refuse(
            &mut status,
            "the sandbox's init was started for an unconfined boundary",
        );
    };
    // While the first stage binds and hides paths (in the session's
    // house, they and `/proc` are in place).
    if c.namespaces.pid
        && launch.house.is_none()
        && let Err(e) = super::namespaces::mount_proc()
    {
        return refuse(&mut status, &e);
    }
    if let Err(e) = mounted(&status, c) {
        return refuse(&mut status, &e);
    }
    // In the session's house, its init is told a command starts (while
    // this process can still signal it).
    if launch.house.is_some() {
        super::join::starting();
    }
    let env = match confine(launch, c, !own_pid_namespace(launch, c)) {
        Ok(env) => env,
        Err(e) => return refuse(&mut status, &e),
    };
    command(status, launch, c, argv, env)
}

/// Connects to the first stage's status socket (named by the nonce it
/// gave) and says hello with the nonce. The first stage is there (and,
/// with the death signal set, it ends this one when it goes): connecting
/// proves it.
pub(super) fn connect() -> Result<UnixStream, String> {
    let given = super::launch::given_nonce();
    let from_env = || std::env::var_os(NONCE_VAR).and_then(|n| n.into_string().ok());
    let Some(nonce) = given.or_else(from_env) else {
        return Err("the sandbox's init was started without its first stage".into());
    };
    let mut status = SocketAddr::from_abstract_name(format!("candor-sandbox-{nonce}"))
        .and_then(|a| UnixStream::connect_addr(&a))
        .map_err(|e| format!("the launcher is gone: {e}"))?;
    send(
        &mut status,
        &Report::Hello {
            token: nonce,
            pid: std::process::id(),
        },
    );
    Ok(status)
}

/// Confined: says so, starts the command (`argv`) with `env` added, reaps
/// every process until it ends, reports how, and exits the same way.
pub(super) fn command(
    mut status: UnixStream,
    launch: &Launch,
    c: &Confinement,
    argv: &[OsString],
    env: Vec<(String, String)>,
) -> ExitCode {
    send(&mut status, &Report::Ready);
    let (program, args) = match argv.split_first() {
        Some((p, a)) => (p, a),
        None => return refuse(&mut status, "no command"),
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env_remove(NONCE_VAR).envs(env);
    let child = super::launch::spawn_unmasked(&mut cmd);
    let report = match child {
        Ok(child) => reap(child.id(), own_pid_namespace(launch, c)),
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "{MESSAGE_PREFIX}cannot run {}: {e}",
                program.to_string_lossy()
            );
            Report::Exited {
                code: Some(127),
                signal: None,
            }
        }
    };
    send(&mut status, &report);
    super::launch::status_of(&report)
}

/// Tells the first stage why setup failed (it says so on stderr and the
/// lifeline) and fails.
pub(super) fn refuse(status: &mut UnixStream, reason: &str) -> ExitCode {
    send(
        status,
        &Report::SetupFailed {
            reason: reason.replace('\n', " "),
        },
    );
    ExitCode::from(super::launch::SETUP_FAILED)
}

/// Waits (bounded) for the first stage's word that its mounts are in
/// place, then enters the working directory again, as they show it (a
/// command started inside `.git` must not write through the old one).
fn mounted(status: &UnixStream, c: &Confinement) -> Result<(), String> {
    let gone = |e: std::io::Error| format!("the launcher is gone: {e}");
    let stream = status.try_clone().map_err(gone)?;
    stream.set_read_timeout(Some(MOUNTS_WAIT)).map_err(gone)?;
    let mut reader = std::io::BufReader::new(stream);
    match super::launch::receive(&mut reader) {
        Some(Report::Ready) => {}
        _ => return Err("the launcher did not set up the mounts".into()),
    }
    if c.namespaces.mount {
        let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
        std::env::set_current_dir(&cwd)
            .map_err(|e| format!("the working directory {}: {e}", cwd.display()))?;
    }
    Ok(())
}

/// Whether the second stage is the init of a PID namespace of its own
/// (else the command's subreaper: without a PID namespace, or in the
/// session's house, `sandbox::house`, whose init is another).
pub(super) fn own_pid_namespace(launch: &Launch, c: &Confinement) -> bool {
    c.namespaces.pid && launch.house.is_none()
}

/// Everything but the mounts and starting the command; returns the
/// variables the command gets. `subreaper`: this process is not the init
/// of the command's PID namespace, and becomes its child subreaper.
pub(super) fn confine(
    launch: &Launch,
    c: &Confinement,
    subreaper: bool,
) -> Result<Vec<(String, String)>, String> {
    let boundary = &launch.boundary;
    let private_shm = c.namespaces.mount && std::path::Path::new("/dev/shm").is_dir();
    if subreaper {
        nix::sys::prctl::set_child_subreaper(true)
            .map_err(|e| format!("becoming the command's subreaper: {e}"))?;
    }
    let forward = match (&boundary.network, &launch.proxy) {
        (Network::Allowlist { .. }, Some(socket)) => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")
                .map_err(|e| format!("the proxy forwarder: {e}"))?;
            let port = listener
                .local_addr()
                .map_err(|e| format!("the proxy forwarder: {e}"))?
                .port();
            Some((listener, port, socket.clone()))
        }
        (Network::Allowlist { .. }, None) => {
            return Err("the network allowlist needs candor's proxy, and none was given".into());
        }
        _ => None,
    };
    nix::sys::prctl::set_dumpable(false).map_err(|e| format!("PR_SET_DUMPABLE: {e}"))?;
    if c.capabilities_dropped && c.namespaces.user {
        super::namespaces::drop_capabilities()?;
    }
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("PR_SET_NO_NEW_PRIVS: {e}"))?;
    super::ruleset::apply(
        boundary,
        &c.landlock,
        c.namespaces.network,
        forward.as_ref().map(|(_, port, _)| *port),
        launch.proxy.as_deref(),
        private_shm,
    )?;
    let mut env = Vec::new();
    if let Some(tmp) = &boundary.tmpdir {
        env.push(("TMPDIR".to_owned(), tmp.display().to_string()));
    }
    if let Some((listener, port, socket)) = forward {
        // Started after Landlock (it holds for the forwarder too) and
        // before seccomp (which may refuse the unix socket it needs).
        super::forwarder::start(listener, socket)?;
        let url = format!("http://127.0.0.1:{port}");
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
            env.push((name.to_owned(), url.clone()));
            env.push((name.to_lowercase(), url.clone()));
        }
        env.push(("NO_PROXY".to_owned(), "localhost,127.0.0.1,::1".to_owned()));
        env.push(("no_proxy".to_owned(), "localhost,127.0.0.1,::1".to_owned()));
    }
    if !c.seccomp.is_empty() {
        super::seccomp::apply(&c.seccomp)?;
    }
    Ok(env)
}

/// Reaps every child until `command` ends, and returns how it ended.
/// Without a PID namespace, then kills and reaps what it left behind (the
/// subreaper's adopted children), in rounds.
fn reap(command: u32, pid_namespace: bool) -> Report {
    let command = Pid::from_raw(i32::try_from(command).unwrap_or(i32::MAX));
    let report = loop {
        match waitpid(None::<Pid>, None) {
            Ok(status) => match end_of(status, command) {
                Some(report) => break report,
                None => continue,
            },
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break UNKNOWN_END,
        }
    };
    if !pid_namespace {
        end_leftovers(&[]);
    }
    report
}

/// How `command` ended, when `status` is its end (`None`: another
/// process's, or not an end).
pub(super) fn end_of(status: WaitStatus, command: Pid) -> Option<Report> {
    match status {
        WaitStatus::Exited(pid, code) if pid == command => Some(Report::Exited {
            code: Some(code),
            signal: None,
        }),
        WaitStatus::Signaled(pid, signal, _) if pid == command => Some(Report::Exited {
            code: None,
            signal: Some(signal as i32),
        }),
        _ => None,
    }
}

/// The end of a command reaped by something else (no child was left to
/// wait for): neither a code nor a signal known.
pub(super) const UNKNOWN_END: Report = Report::Exited {
    code: None,
    signal: None,
};

/// Kills everything the subreaper (or the house's init) has below it but
/// `spared` (the house's rooms, `sandbox::room`, and what runs in them):
/// every descendant in each round, not only its children (a child killed
/// first would leave its own to be adopted, one level a round, and a tree
/// deeper than the rounds would outlive them), until none is left.
pub(super) fn end_leftovers(spared: &[i32]) {
    for _ in 0..64 {
        let below = descendants(spared);
        if below.is_empty() {
            return;
        }
        for pid in &below {
            let _ = nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        // Its own children, killed: reaped as they end (others are
        // adopted as their parents end, and reaped next round).
        for pid in children() {
            if below.contains(&pid) {
                let _ = waitpid(Pid::from_raw(pid), None);
            }
        }
        // Reap whatever else ended meanwhile, but the spared: their
        // owner forgets them when it reaps them (the house's init, its
        // rooms), and a pid reaped here would stay spared for whatever
        // process is given it next.
        for pid in children() {
            if !spared.contains(&pid) {
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
        }
    }
}

/// Every process below this one in its PID namespace's `/proc` (its
/// children but `spared`, theirs, and so on), from each process's parent.
fn descendants(spared: &[i32]) -> Vec<i32> {
    let mut below: Vec<i32> = children();
    below.retain(|pid| !spared.contains(pid));
    if below.is_empty() {
        return below;
    }
    let parents = processes().unwrap_or_default();
    let mut i = 0;
    while let Some(&parent) = below.get(i) {
        for (pid, _) in parents.iter().filter(|(_, p)| *p == parent) {
            if !below.contains(pid) {
                below.push(*pid);
            }
        }
        i += 1;
    }
    below
}

/// Every process of this PID namespace's `/proc` with its parent's id (0
/// for a parent outside the namespace); one gone meanwhile is left out.
/// `None`: `/proc` cannot be read.
pub(super) fn processes() -> Option<Vec<(i32, i32)>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let processes = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid …`
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
            Some((pid, ppid.parse().ok()?))
        })
        .collect();
    Some(processes)
}

/// This process's children, from every thread's list.
pub(super) fn children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHILD: &str = "CANDOR_LEFTOVERS_CHILD";

    /// Whether `pid` is a zombie (ended, not yet reaped).
    fn ended(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| Some(s.rsplit_once(')')?.1.split_whitespace().next()? == "Z"))
            .unwrap_or(false)
    }

    /// The case, run alone in a test process of its own (it ends every
    /// child of its process) by the test below.
    #[test]
    #[ignore = "run by a_spared_process_that_ended_is_left_to_its_owner_to_reap"]
    // Its own children, to end; reaped by `end_leftovers` and `waitpid`.
    #[allow(clippy::disallowed_methods, clippy::zombie_processes)]
    fn spared_case() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        // A room that has just ended, and a leftover that runs.
        let room = std::process::Command::new("true").spawn().unwrap();
        let stray = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let room = i32::try_from(room.id()).unwrap();
        let stray = i32::try_from(stray.id()).unwrap();
        let start = std::time::Instant::now();
        while !ended(room) {
            assert!(start.elapsed().as_secs() < 10, "the room never ended");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        end_leftovers(&[room]);
        assert!(
            !std::path::Path::new(&format!("/proc/{stray}")).exists(),
            "the leftover was not ended and reaped"
        );
        // The house's init forgets a room when it reaps it: reaped here,
        // its pid would stay spared, and a process given it again after
        // would be spared with it.
        let reaped = waitpid(Pid::from_raw(room), Some(WaitPidFlag::WNOHANG));
        assert!(
            matches!(reaped, Ok(WaitStatus::Exited(pid, 0)) if pid.as_raw() == room),
            "the spared process was reaped by end_leftovers: {reaped:?}"
        );
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the case runs in a test process of its own
    fn a_spared_process_that_ended_is_left_to_its_owner_to_reap() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "sandbox::init::tests::spared_case",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{said}");
        assert!(said.contains("1 passed"), "the case did not run: {said}");
    }
}
