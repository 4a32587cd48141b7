//! The sandbox's escape tests: the built lean launcher
//! (`candor-sandbox __sandbox <launch> -- bash -c …`, what candor runs
//! beside it) driven directly; candor's own binary as the launcher, where
//! the lean one is not beside it, confines the same. Each escape
//! comes with a control: the same command succeeding where the boundary
//! allows it, or succeeding without the sandbox, so a test cannot pass
//! because the command was broken. The files written to are the test's
//! own (so neither root nor file permissions stop a write: only the
//! sandbox does). A kernel without what the sandbox needs fails the tests
//! loudly (CI's has Landlock and unprivileged user namespaces).

#![allow(clippy::disallowed_methods)] // the tests start the binary under test

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use candor::sandbox::{
    Allowlist, Boundary, DecidedBy, HouseRef, Launch, Lifeline, Network, Preset, Probe, Proxy,
    ProxyConfig, RefuseUnlisted, Report, Setup,
};

use crate::support::http_server;

/// The lean launcher, built beside candor.
fn launcher() -> &'static str {
    env!("CARGO_BIN_EXE_candor-sandbox")
}

/// candor's own binary.
fn candor() -> &'static str {
    env!("CARGO_BIN_EXE_candor")
}

/// What this kernel gives, failing loudly where the sandbox cannot work.
fn probe() -> Probe {
    let out = Command::new(launcher())
        .args(["__sandbox", "--probe"])
        .output()
        .unwrap();
    let probe = Probe::parse(&out.stdout);
    assert!(
        probe.landlock_abi >= 6
            && probe.user_namespace
            && probe.mount_namespace
            && probe.pid_namespace
            && probe.network_namespace
            && probe.seccomp,
        "this kernel lacks what the sandbox tests need (Landlock ABI 6 or later, unprivileged user, mount, PID and network namespaces, seccomp): {}",
        probe.describe()
    );
    probe
}

/// A project (the writable root, with a repository and protected files),
/// a directory outside it, the session's temporary directory, and a
/// secret the user's settings deny reading.
struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
    proj: PathBuf,
    outside: PathBuf,
    tmp: PathBuf,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let proj = root.join("proj");
        let outside = root.join("outside");
        let tmp = root.join("tmp");
        for d in [
            &proj,
            &outside,
            &tmp,
            &root.join("proj/.git/hooks"),
            &root.join("vault"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(proj.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(proj.join(".envrc"), "export A=1\n").unwrap();
        std::fs::write(proj.join("README"), "readme\n").unwrap();
        std::fs::write(root.join("secret"), "the-secret\n").unwrap();
        std::fs::write(root.join("vault/key"), "the-key\n").unwrap();
        std::fs::write(root.join("public"), "public-text\n").unwrap();
        Place {
            _dir: dir,
            root,
            proj,
            outside,
            tmp,
        }
    }

    fn boundary(&self, network: Network) -> Boundary {
        self.boundary_on(network, &probe())
    }

    fn boundary_on(&self, network: Network, probe: &Probe) -> Boundary {
        let mut b = Boundary::new(
            Preset::WorkspaceWrite,
            vec![self.proj.clone()],
            Some(self.tmp.clone()),
            None,
            network,
        );
        b.read_denied = vec![self.root.join("secret"), self.root.join("vault")];
        b.enforceable(probe)
    }
}

fn launch(boundary: &Boundary) -> Launch {
    Launch {
        build: candor::sandbox::launcher::BUILD.into(),
        boundary: boundary.clone(),
        lifeline: None,
        token: None,
        proxy: None,
        house: None,
    }
}

/// `bash -c script` in the sandbox, in `cwd`.
fn sandboxed(launch: &Launch, cwd: &Path, script: &str) -> Output {
    sandboxed_by(launcher(), launch, cwd, script)
}

/// `bash -c script` in the sandbox `program` (a launcher) sets up.
fn sandboxed_by(program: &str, launch: &Launch, cwd: &Path, script: &str) -> Output {
    Command::new(program)
        .args(launch.args(&["bash", "-c", script]).unwrap())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `bash -c script` without the sandbox, in `cwd`.
fn plain(cwd: &Path, script: &str) -> Output {
    Command::new("bash")
        .args(["-c", script])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_probe_finds_what_this_kernel_gives_and_the_boundary_claims_it() {
    let probe = probe();
    let place = Place::new();
    let b = place.boundary(Network::Off);
    let c = b.confinement().expect("confined");
    assert!(c.namespaces.user && c.namespaces.mount && c.namespaces.pid && c.namespaces.network);
    assert_eq!(c.landlock.abi, probe.landlock_abi.min(9));
    assert!(c.landlock.scopes.contains(&"signal".to_owned()));
    assert_eq!(
        b.summary(),
        format!(
            "sandbox: writes to {} and $TMPDIR only, network off, processes end with the call",
            place.proj.display()
        )
    );
    // The probe candor itself runs gives the same answer, and chooses the
    // lean launcher beside candor's binary.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let cached = runtime.block_on(candor::tools::exec::sandbox_probe(Path::new(candor())));
    assert_eq!(*cached, probe);
    assert_eq!(
        candor::sandbox::launcher::chosen(),
        Some(Path::new(launcher()))
    );
}

#[test]
fn a_house_reference_that_names_no_house_is_never_joined() {
    // A launch names the session's house by its pid and the inode of each
    // namespace. The house ended and its pid is another process's now
    // (here a `sleep` in the host's namespaces): the launcher must not
    // take that process's namespaces for the house's.
    let place = Place::new();
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id();
    let boundary = place.boundary(Network::Off);
    let names = ["user", "mnt", "net", "ipc", "pid_for_children"];
    let escape = |mark: &str| {
        format!(
            "echo x > {}/{mark}; echo $?; touch ran-{mark}; tr '\\0' ' ' < /proc/1/cmdline",
            place.outside.display()
        )
    };
    // The inodes the ended house had: not the process's. The launcher makes
    // namespaces of its own, and the command is confined as without a
    // house.
    let stale = HouseRef {
        pid,
        namespaces: names.iter().map(|n| ((*n).to_owned(), 1)).collect(),
    };
    let l = Launch {
        house: Some(stale),
        ..launch(&boundary)
    };
    let out = sandboxed(&l, &place.proj, &escape("stale"));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.starts_with("1\n"), "{}", text(&out));
    // PID 1: the launcher's second stage, a copy of it (its command line).
    assert!(said.contains("__sandbox {"), "{said}");
    assert!(place.proj.join("ran-stale").exists(), "{}", text(&out));
    // The process's own inodes (the host's namespaces, which no house
    // has): joining fails, and nothing runs.
    let host = HouseRef {
        pid,
        namespaces: names
            .iter()
            .map(|n| {
                use std::os::unix::fs::MetadataExt as _;
                let ino = std::fs::metadata(format!("/proc/{pid}/ns/{n}"))
                    .unwrap()
                    .ino();
                ((*n).to_owned(), ino)
            })
            .collect(),
    };
    let l = Launch {
        house: Some(host),
        ..launch(&boundary)
    };
    let out = sandboxed(&l, &place.proj, &escape("host"));
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(!place.proj.join("ran-host").exists(), "{}", text(&out));
    assert!(!place.outside.join("stale").exists());
    assert!(!place.outside.join("host").exists());
}

#[test]
fn candor_itself_launches_and_confines_the_same_where_the_lean_launcher_is_not() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let escape = format!(
        "echo x > {}/by-candor; echo $?; tr '\\0' ' ' < /proc/1/cmdline",
        place.outside.display()
    );
    for program in [candor(), launcher()] {
        let out = sandboxed_by(program, &l, &place.proj, &escape);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(said.starts_with("1\n"), "{program}: {}", text(&out));
        // The namespace's init is the same binary as its launcher (a
        // copy of it).
        assert!(
            said.contains(&format!("{program} __sandbox {{")),
            "{program}: {said}"
        );
    }
    assert!(!place.outside.join("by-candor").exists());
    // The control: inside the writable root, the same write works.
    let out = sandboxed_by(candor(), &l, &place.proj, "echo x > inside && cat inside");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "x\n",
        "{}",
        text(&out)
    );
}

#[test]
fn a_launch_from_another_build_is_refused_and_runs_nothing() {
    let place = Place::new();
    let mut l = launch(&place.boundary(Network::Off));
    l.build = "0000000000000000".into();
    for program in [launcher(), candor()] {
        let out = sandboxed_by(program, &l, &place.proj, "touch ran");
        assert_eq!(
            out.status.code(),
            Some(i32::from(candor::sandbox::SETUP_FAILED)),
            "{program}: {}",
            text(&out)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("another build of candor"),
            "{}",
            text(&out)
        );
        assert!(!place.proj.join("ran").exists());
    }
    // The control: the same launch with this build runs.
    l.build = candor::sandbox::launcher::BUILD.into();
    let out = sandboxed(&l, &place.proj, "touch ran");
    assert!(out.status.success(), "{}", text(&out));
    assert!(place.proj.join("ran").exists());
}

#[test]
fn a_command_runs_in_the_boundary_and_exits_as_it_did() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let out = sandboxed(
        &l,
        &place.proj,
        "echo made > made.txt && cat made.txt && echo \"tmp=$TMPDIR\" && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && cat ../public && exit 3",
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("made\n"), "{said}");
    assert!(
        stdout.contains(&format!("tmp={}", place.tmp.display())),
        "{said}"
    );
    assert!(stdout.contains("public-text"), "{said}");
    assert_eq!(std::fs::read_to_string(place.tmp.join("t")).unwrap(), "t\n");
}

#[test]
fn writes_outside_the_roots_fail_by_every_means_and_succeed_inside() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    // Each writes to `{t}`; `{r}` is `{t}` relative to `/`.
    let cases = [
        ("python3", "python3 -c \"open('{t}', 'w').write('x')\""),
        (
            "perl",
            "perl -e 'open(my $f, \">\", \"{t}\") or die \"$!\"; print $f \"x\"'",
        ),
        (
            "cp",
            "echo x > \"$TMPDIR/src-cp\" && cp \"$TMPDIR/src-cp\" '{t}'",
        ),
        (
            "mv",
            "echo x > \"$TMPDIR/src-mv\" && mv \"$TMPDIR/src-mv\" '{t}'",
        ),
        (
            "ln -s",
            "L=link-$$; ln -sf '{t}' $L && echo x > $L; S=$?; rm -f $L; exit $S",
        ),
        ("cd /", "cd / && echo x > '{r}'"),
        ("/proc/self/root", "echo x > '/proc/self/root{t}'"),
    ];
    for (name, script) in cases {
        let file = format!("by-{}", name.replace([' ', '/'], "_"));
        let fill = |dir: &Path| {
            let t = dir.join(&file);
            let r = t.strip_prefix("/").unwrap().display().to_string();
            script
                .replace("{t}", &t.display().to_string())
                .replace("{r}", &r)
        };
        let out = sandboxed(&l, &place.proj, &fill(&place.outside));
        assert!(
            !place.outside.join(&file).exists(),
            "{name} wrote outside the roots: {}",
            text(&out)
        );
        assert!(!out.status.success(), "{name}: {}", text(&out));
        // The control: the same command writing inside the root.
        let out = sandboxed(&l, &place.proj, &fill(&place.proj));
        assert!(
            place.proj.join(&file).exists(),
            "{name} could not write inside the root: {}",
            text(&out)
        );
    }
}

#[test]
fn protected_paths_stay_read_only_even_by_hard_link_or_rename() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let attempts = [
        "echo evil >> .git/config",
        "ln .git/config hardlink && echo evil >> hardlink",
        "echo evil > new && mv new .git/config",
        "echo evil > new2 && mv -f new2 .envrc",
        "echo evil > .git/hooks/pre-commit",
        "rm -rf .git",
        "mv .git moved-git",
        "python3 -c \"import os; open('x','w').write('evil'); os.rename('x', '.envrc')\"",
    ];
    for script in attempts {
        let out = sandboxed(&l, &place.proj, script);
        assert!(
            !out.status.success(),
            "`{script}` succeeded: {}",
            text(&out)
        );
        assert_eq!(
            std::fs::read_to_string(place.proj.join(".git/config")).unwrap(),
            "[core]\n",
            "`{script}`"
        );
        assert_eq!(
            std::fs::read_to_string(place.proj.join(".envrc")).unwrap(),
            "export A=1\n",
            "`{script}`"
        );
        assert!(
            !place.proj.join(".git/hooks/pre-commit").exists(),
            "`{script}`"
        );
        assert!(!place.proj.join("hardlink").exists(), "`{script}`");
    }
    // The controls: the same moves on ordinary files of the root work, and
    // the protected files can be read.
    let out = sandboxed(
        &l,
        &place.proj,
        "ln README hardlink2 && echo more >> hardlink2 && echo n > new3 && mv -f new3 README && cat .git/config",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[core]"));
    assert_eq!(
        std::fs::read_to_string(place.proj.join("README")).unwrap(),
        "n\n"
    );
}

#[test]
fn a_command_started_inside_a_protected_directory_cannot_write_through_it() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let out = sandboxed(&l, &place.proj.join(".git"), "echo evil > config");
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(place.proj.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[test]
fn read_denied_paths_cannot_be_read_by_any_program() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let secret = place.root.join("secret").display().to_string();
    let vault = place.root.join("vault").display().to_string();
    for script in [
        format!("cat '{secret}'"),
        format!("python3 -c \"print(open('{secret}').read())\""),
        format!("perl -e 'open(my $f, \"<\", $ARGV[0]) or die \"$!\"; print <$f>' '{secret}'"),
        format!("cat '{vault}/key'"),
        format!("ls '{vault}'"),
        format!("cd /proc/self/root && cat '.{secret}'"),
    ] {
        let out = sandboxed(&l, &place.proj, &script);
        let said = text(&out);
        assert!(
            !said.contains("the-secret") && !said.contains("the-key"),
            "`{script}` read it: {said}"
        );
        assert!(!out.status.success(), "`{script}`: {said}");
    }
    // The controls: a file beside them reads in the sandbox, and the
    // secret reads without it.
    let out = sandboxed(
        &l,
        &place.proj,
        &format!("cat '{}'", place.root.join("public").display()),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("public-text"),
        "{}",
        text(&out)
    );
    let out = plain(&place.proj, &format!("cat '{secret}'"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("the-secret"));
}

fn has(program: &str) -> bool {
    plain(Path::new("/"), &format!("command -v {program}"))
        .status
        .success()
}

#[test]
fn the_network_is_off_for_every_client_and_on_when_asked() {
    let port = http_server();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let place = Place::new();
    let off = launch(&place.boundary(Network::Off));
    let on = launch(&place.boundary(Network::On));
    let mut clients = vec![
        format!(
            "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/', timeout=2).read().decode())\""
        ),
        format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
        ),
    ];
    if has("curl") {
        clients.push(format!("curl -sS --max-time 2 http://127.0.0.1:{port}/"));
    }
    for script in &clients {
        let out = sandboxed(&off, &place.proj, script);
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("hello"),
            "`{script}` got out: {}",
            text(&out)
        );
        // The control: with the network on, the same client reaches it.
        let out = sandboxed(&on, &place.proj, script);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("hello"),
            "`{script}` with the network on: {}",
            text(&out)
        );
    }
    // UDP (DNS's transport): nothing arrives from inside; with the network on it does.
    let send = format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'leak', ('127.0.0.1', {udp_port}))\""
    );
    let _ = sandboxed(&off, &place.proj, &send);
    let mut buf = [0u8; 16];
    assert!(udp.recv_from(&mut buf).is_err(), "a datagram got out");
    let _ = sandboxed(&on, &place.proj, &send);
    let (n, _) = udp.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"leak");
    // Names do not resolve (there is no resolver to reach).
    let out = sandboxed(
        &off,
        &place.proj,
        "python3 -c \"import socket; socket.getaddrinfo('example.com', 443)\"",
    );
    assert!(!out.status.success(), "{}", text(&out));
    // A raw socket is refused (no capability is left, even to root).
    let raw = "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\"";
    let out = sandboxed(&off, &place.proj, raw);
    assert!(!out.status.success(), "{}", text(&out));
    if nix::unistd::geteuid().is_root() {
        assert!(
            plain(&place.proj, raw).status.success(),
            "the control: root opens a raw socket outside"
        );
    }
}

#[test]
fn without_a_network_namespace_the_seccomp_filter_keeps_the_network_off() {
    let port = http_server();
    let place = Place::new();
    let probe = Probe {
        network_namespace: false,
        ..probe()
    };
    let b = place.boundary_on(Network::Off, &probe);
    let c = b.confinement().unwrap();
    assert!(!c.namespaces.network);
    assert!(c.seccomp.iter().any(|s| s.contains("AF_INET")));
    let l = launch(&b);
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\""
    );
    let out = sandboxed(&l, &place.proj, &connect);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Operation not permitted"),
        "{}",
        text(&out)
    );
    // The control: the same without the filter connects.
    assert!(plain(&place.proj, &connect).status.success());
}

#[test]
fn what_a_command_leaves_behind_ends_with_it_even_outside_its_group_and_scope() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let late = place.proj.join("late");
    let script = format!(
        "(unset candor_scope; setsid bash -c 'sleep 1; echo late > {}' > /dev/null 2>&1 &); echo started",
        late.display()
    );
    let out = sandboxed(&l, &place.proj, &script);
    assert!(out.status.success(), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(1600));
    assert!(
        !late.exists(),
        "a process the command left behind wrote after it ended"
    );
    // The control: without the sandbox it outlives the command and writes.
    let out = plain(&place.proj, &script);
    assert!(out.status.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !late.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(late.exists(), "the control did not write");
}

/// Waits (5 s at most) for `path` to exist.
fn wait_for(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !path.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A stand-in for candor: a Python process that listens on a lifeline
/// socket, holds every connection, and starts `argv`; it is SIGKILLed.
fn parent_holding_a_lifeline(
    lifeline: &Path,
    argv: &[std::ffi::OsString],
    cwd: &Path,
) -> std::process::Child {
    let script = r#"
import socket, subprocess, sys, threading, json
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); s.listen(8)
held = []
def hold():
    while True:
        c, _ = s.accept(); held.append(c)
threading.Thread(target=hold, daemon=True).start()
p = subprocess.Popen(json.loads(sys.argv[2]))
p.wait()
"#;
    let argv: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    Command::new("python3")
        .args(["-c", script])
        .arg(lifeline)
        .arg(serde_json::to_string(&argv).unwrap())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn when_candor_is_sigkilled_nothing_the_command_started_writes_afterwards() {
    let place = Place::new();
    let lifeline = place.root.join("lifeline.sock");
    let mut l = launch(&place.boundary(Network::Off));
    l.lifeline = Some(lifeline.clone());
    l.token = Some("t".into());
    let script = "touch started; sleep 2; echo x > finished";
    let mut argv: Vec<std::ffi::OsString> = vec![launcher().into()];
    argv.extend(l.args(&["bash", "-c", script]).unwrap());
    let mut parent = parent_holding_a_lifeline(&lifeline, &argv, &place.proj);
    assert!(
        wait_for(&place.proj.join("started")),
        "the command did not start"
    );
    parent.kill().unwrap();
    parent.wait().unwrap();
    std::thread::sleep(Duration::from_millis(2600));
    assert!(
        !place.proj.join("finished").exists(),
        "the command wrote after candor died"
    );
    // The control: a command started plainly by the same parent goes on.
    std::fs::remove_file(place.proj.join("started")).unwrap();
    let plain_argv: Vec<std::ffi::OsString> = vec!["bash".into(), "-c".into(), script.into()];
    let mut parent =
        parent_holding_a_lifeline(&place.root.join("l2.sock"), &plain_argv, &place.proj);
    assert!(wait_for(&place.proj.join("started")));
    parent.kill().unwrap();
    parent.wait().unwrap();
    assert!(
        wait_for(&place.proj.join("finished")),
        "the control did not outlive its parent"
    );
}

#[test]
fn when_the_launchers_parent_dies_without_a_lifeline_the_sandbox_ends_too() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let script = "touch started; sleep 2; echo x > finished";
    let mut cmd = vec![launcher().to_owned()];
    cmd.extend(
        l.args(&["bash", "-c", script])
            .unwrap()
            .into_iter()
            .map(|a| a.into_string().unwrap()),
    );
    // The parent: a shell waiting for the launcher.
    let mut parent = Command::new("bash")
        .args(["-c", "\"$@\" & wait", "parent"])
        .args(&cmd)
        .current_dir(&place.proj)
        .spawn()
        .unwrap();
    assert!(wait_for(&place.proj.join("started")));
    parent.kill().unwrap();
    parent.wait().unwrap();
    std::thread::sleep(Duration::from_millis(2600));
    assert!(
        !place.proj.join("finished").exists(),
        "the command outlived the launcher's parent"
    );
}

#[test]
fn nothing_inside_can_signal_or_see_the_processes_outside() {
    let place = Place::new();
    let l = launch(&place.boundary(Network::Off));
    let me = std::process::id();
    // Signal 0 and SIGCONT are harmless to this test process if they got through.
    let script = format!("kill -0 {me} || kill -CONT {me} || exit 0; exit 9");
    let out = sandboxed(&l, &place.proj, &script);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a signal reached the parent: {}",
        text(&out)
    );
    let out = sandboxed(&l, &place.proj, "ls /proc | grep -E '^[0-9]+$' | wc -l");
    let count: usize = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(usize::MAX);
    assert!(
        count <= 5,
        "the sandbox sees {count} processes: {}",
        text(&out)
    );
    // The control: outside, the same signal reaches it.
    let out = plain(&place.proj, &script);
    assert_eq!(out.status.code(), Some(9));
}

#[tokio::test]
async fn the_lifeline_reports_ready_and_the_end_and_a_setup_failure_runs_nothing() {
    let place = Place::new();
    let lifeline = Lifeline::bind(&place.root.join("life.sock")).unwrap();
    let (token, mut watch) = lifeline.expect();
    let mut l = launch(&place.boundary(Network::Off));
    l.lifeline = Some(lifeline.path().to_owned());
    l.token = Some(token);
    let out = tokio::process::Command::new(launcher())
        .args(l.args(&["bash", "-c", "exit 4"]).unwrap())
        .current_dir(&place.proj)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(watch.setup(Duration::from_secs(5)).await, Setup::Ready);
    assert_eq!(
        watch.exited().await,
        Some(Report::Exited {
            code: Some(4),
            signal: None
        })
    );
    // An allowlist with no proxy to lead to cannot be set up: nothing runs.
    let (token, mut watch) = lifeline.expect();
    let mut l = launch(&place.boundary(Network::Allowlist {
        domains: vec!["example.com".into()],
    }));
    l.lifeline = Some(lifeline.path().to_owned());
    l.token = Some(token);
    let out = tokio::process::Command::new(launcher())
        .args(l.args(&["bash", "-c", "touch ran"]).unwrap())
        .current_dir(&place.proj)
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(i32::from(candor::sandbox::SETUP_FAILED))
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(candor::sandbox::MESSAGE_PREFIX),
        "{stderr}"
    );
    assert!(!place.proj.join("ran").exists());
    match watch.setup(Duration::from_secs(5)).await {
        Setup::Failed(reason) => assert!(reason.contains("proxy"), "{reason}"),
        Setup::Ready => panic!("a failed setup said ready"),
    }
}

#[tokio::test]
async fn the_allowlist_proxy_lets_an_allowed_host_through_and_refuses_another() {
    let port = http_server();
    let place = Place::new();
    let (decisions, mut decided) = tokio::sync::mpsc::unbounded_channel();
    let proxy = Proxy::start(
        &place.root.join("proxy.sock"),
        ProxyConfig {
            allowlist: Allowlist::new(&["127.0.0.1"]),
            grants: candor::sandbox::Grants::default(),
            judge: std::sync::Arc::new(RefuseUnlisted),
            judge_wait: Duration::from_secs(1),
            max_asks: 8,
            decisions: std::sync::Arc::new(move |d| {
                let _ = decisions.send(d);
            }),
        },
    )
    .unwrap();
    let mut l = launch(&place.boundary(Network::Allowlist {
        domains: vec!["127.0.0.1".into()],
    }));
    l.proxy = Some(proxy.path().to_owned());
    let run = |script: String| {
        let args = l.args(&["bash", "-c", &script]).unwrap();
        let cwd = place.proj.clone();
        async move {
            tokio::process::Command::new(launcher())
                .args(args)
                .current_dir(cwd)
                .output()
                .await
                .unwrap()
        }
    };
    // Through the proxy (the variables point at the forwarder; NO_PROXY
    // cleared, since 127.0.0.1 stands for the outside here).
    let fetch = |host: &str| {
        format!(
            "NO_PROXY= no_proxy= python3 -c \"import urllib.request as u; print(u.urlopen('http://{host}:{port}/', timeout=3).read().decode())\""
        )
    };
    let out = run(fetch("127.0.0.1")).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hello"),
        "{}",
        text(&out)
    );
    let out = run(fetch("127.0.0.2")).await;
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("hello"),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("403"),
        "{}",
        text(&out)
    );
    if has("curl") {
        // A tunnel (CONNECT), as HTTPS takes.
        let out = run(format!(
            "NO_PROXY= no_proxy= curl -sSf -p --max-time 3 http://127.0.0.1:{port}/"
        ))
        .await;
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("hello"),
            "{}",
            text(&out)
        );
        let out = run(format!(
            "NO_PROXY= no_proxy= curl -sSf -p --max-time 3 http://127.0.0.2:{port}/"
        ))
        .await;
        assert!(!out.status.success(), "{}", text(&out));
    }
    // Around the proxy there is no way out.
    let out = run(format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\""
    ))
    .await;
    assert!(!out.status.success(), "{}", text(&out));
    let mut seen = Vec::new();
    while let Ok(d) = decided.try_recv() {
        seen.push(d);
    }
    assert!(
        seen.iter().any(|d| d.host == "127.0.0.1"
            && d.allowed
            && d.by
                == DecidedBy::Rule {
                    rule: "127.0.0.1".into()
                }),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|d| d.host == "127.0.0.2" && !d.allowed && d.by == DecidedBy::Judge),
        "{seen:?}"
    );
}

#[test]
fn a_refused_write_is_explained_for_the_model() {
    let place = Place::new();
    let b = place.boundary(Network::Off);
    let target = place.outside.join("x");
    let out = sandboxed(
        &launch(&b),
        &place.proj,
        &format!("echo x > '{}'", target.display()),
    );
    assert!(!out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = candor::sandbox::explain(&b, &place.proj, &said).expect("an explanation");
    assert!(
        line.starts_with(&format!(
            "the sandbox refused a write to {}: outside the writable roots [",
            target.display()
        )),
        "{line}"
    );
    assert!(
        line.ends_with("dangerouslyDisableSandbox if it is needed"),
        "{line}"
    );
}

/// A room of a house made for `boundary` (`sandbox::room`), asked for
/// on the house's lifeline `asks`: sent `start` (with an output pipe), how
/// its setup went.
async fn in_a_room(
    lifeline: &Lifeline,
    asks: &mut tokio::net::UnixStream,
    start: &candor::sandbox::Start,
) -> (Setup, candor::sandbox::Watch) {
    use tokio::io::AsyncWriteExt as _;
    let (token, mut room) = lifeline.expect_room();
    let ask = format!("{} {token}\n", candor::sandbox::room::ASK);
    asks.write_all(ask.as_bytes()).await.unwrap();
    let (_output, pipe) = candor::tools::exec::output_pipe().unwrap();
    let mut words = room.writer(Duration::from_secs(10)).await.unwrap();
    candor::tools::exec::send_output(&words, &pipe)
        .await
        .unwrap();
    drop(pipe);
    words.write_all(&start.line().unwrap()).await.unwrap();
    let setup = room.setup(Duration::from_secs(10)).await;
    (setup, room)
}

#[tokio::test]
async fn a_room_runs_only_a_command_of_its_houses_boundary() {
    // A room is confined for its house's boundary before its command
    // comes: a start settled for any other boundary (here the network on)
    // would run in less or more than its card says, and is refused.
    let place = Place::new();
    let boundary = place.boundary(Network::Off);
    let lifeline = Lifeline::bind(&place.root.join("life.sock")).unwrap();
    let (token, mut house_watch) = lifeline.expect();
    let house = candor::sandbox::House {
        build: candor::sandbox::launcher::BUILD.into(),
        lifeline: lifeline.path().to_owned(),
        token,
        boundary: boundary.clone(),
        marks: candor::sandbox::house::marks(&boundary),
    };
    let _house = tokio::process::Command::new(launcher())
        .args(house.args().unwrap())
        .current_dir(&place.proj)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    assert_eq!(
        house_watch.setup(Duration::from_secs(10)).await,
        Setup::Ready
    );
    let mut asks = house_watch.writer(Duration::from_secs(10)).await.unwrap();
    let start = |boundary: &Boundary, file: &str| candor::sandbox::Start {
        launch: launch(boundary),
        argv: vec!["touch".into(), file.into()],
        cwd: place.proj.clone(),
        env: Vec::new(),
    };
    let wider = place.boundary(Network::On);
    let (setup, _room) = in_a_room(&lifeline, &mut asks, &start(&wider, "ran-wider")).await;
    match setup {
        Setup::Failed(why) => assert!(why.contains("another boundary"), "{why}"),
        Setup::Ready => panic!("a room ran a command of another boundary"),
    }
    assert!(!place.proj.join("ran-wider").exists());
    // The control: a command of the house's boundary runs, and its end is
    // reported.
    let (setup, mut room) = in_a_room(&lifeline, &mut asks, &start(&boundary, "ran-same")).await;
    assert_eq!(setup, Setup::Ready);
    assert_eq!(
        room.exited().await,
        Some(Report::Exited {
            code: Some(0),
            signal: None
        })
    );
    assert!(place.proj.join("ran-same").exists());
}
