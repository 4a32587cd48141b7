//! The sandbox's setup cost per command: `<launcher> __sandbox <launch>
//! -- true` against plain `true`, each spawned the same way (std `Command`,
//! stdio null, waited for), on the release binary, with the boundary a
//! session gets by default (workspace-write on a temporary project with a
//! `.git`, `TMPDIR`, network off) and, second, with a network allowlist
//! (the forwarder started too; no proxy listening, it is not reached).
//!
//! Each also in the session's house (`sandbox::house`: its namespaces and
//! mounts made once, the launcher joining them).
//!
//! Third, what a session waits for before a command's first byte: from
//! spawning the launcher (with a session's lifeline) to its `ready` report
//! (namespaces, binds, the init, Landlock and seccomp in place; the
//! command not started yet). Fourth, the same when the session started a
//! spare launcher ahead (`sandbox::spare`, every command after a
//! session's first): from sending it the command to its `ready`.
//!
//! The launcher is the one candor would use: the lean `candor-sandbox`
//! beside candor's binary when it is of the same build, else candor's own
//! binary (then also measured, for comparison, when the lean one is used).
//!
//! Run: `cargo bench --bench sandbox` (`CANDOR_BIN=<path>` measures that
//! build of candor instead, e.g. a stripped release binary, and the
//! launcher beside it; `BENCH_RUNS`, default 200). Target (issue 26): the
//! median setup cost per command at most 2 ms: what a session's command
//! waits for its sandbox, each way a session runs one (a room; a spare
//! launcher, for an allowlist; a launcher in the house, for the editor's
//! terminal), with a launcher's own cold start (exec → ready) beside them,
//! which a session's command takes only when it has neither house nor
//! spare. Prints the median, p10 and p99 wall-clock time of each and its
//! mean CPU time (the process and everything it started: the figure the
//! machine's other load does not change), and the differences from plain
//! `true`.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods // the bench starts the binary under test
)]

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use candor::sandbox::{Boundary, Launch, Network, Preset, Probe, launcher};

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// One run: its wall-clock time, and the CPU time it and everything it
/// started took.
fn time(program: &OsString, args: &[OsString], cwd: &Path) -> (Duration, Duration) {
    let cpu = common::children_cpu();
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let took = start.elapsed();
    assert!(status.success(), "{program:?} {args:?} failed: {status}");
    (took, common::children_cpu().saturating_sub(cpu))
}

/// Median, 10th and 99th percentile of the wall-clock times, and the mean
/// CPU time, in ms: (median, p10, CPU).
fn report(name: &str, samples: Vec<(Duration, Duration)>) -> (f64, f64, f64) {
    let cpu = samples.iter().map(|s| s.1.as_secs_f64()).sum::<f64>() * 1e3 / samples.len() as f64;
    let mut wall: Vec<Duration> = samples.into_iter().map(|s| s.0).collect();
    wall.sort();
    let at = |q: usize| wall[(wall.len() * q / 100).min(wall.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "{name:<46} median {:>7.3} ms   p10 {:>7.3} ms   p99 {:>7.3} ms   CPU {cpu:>6.3} ms",
        at(50),
        at(10),
        at(99)
    );
    (at(50), at(10), cpu)
}

/// `program __sandbox --probe`'s answer.
fn probe_of(program: &Path) -> Vec<u8> {
    Command::new(program)
        .args(["__sandbox", "--probe"])
        .output()
        .unwrap()
        .stdout
}

/// The launcher `candor` would use, as it chooses (`tools::exec::
/// sandbox_probe`): the lean one beside it when that answers as the same
/// build, else `candor` itself; with the kernel's answer and the build to
/// write into a launch.
fn choose(candor: &Path) -> (PathBuf, Probe, String) {
    let answer = probe_of(candor);
    let probe = Probe::parse(&answer);
    // A build of candor from before the lean launcher names none.
    let build = launcher::build_of(&answer);
    if let Some(lean) = launcher::beside(candor)
        && build.is_some()
        && launcher::build_of(&probe_of(&lean)) == build
    {
        return (lean, probe, build.unwrap_or_default());
    }
    (
        candor.to_owned(),
        probe,
        build.unwrap_or_else(|| launcher::BUILD.to_owned()),
    )
}

fn main() {
    // `CANDOR_BIN`: another build of candor to measure (the bench
    // profile keeps line tables; a shipped release binary is stripped).
    let candor = PathBuf::from(common::candor_bin());
    let (launcher, probe, build) = choose(&candor);
    println!("kernel: {}", probe.describe());
    println!(
        "launcher: {} ({} bytes)",
        launcher.display(),
        std::fs::metadata(&launcher).unwrap().len()
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let boundary = |network| {
        Boundary::new(
            Preset::WorkspaceWrite,
            vec![proj.clone()],
            Some(tmp.clone()),
            None,
            network,
        )
        .enforceable(&probe)
    };
    let off = Launch {
        build,
        boundary: boundary(Network::Off),
        lifeline: None,
        token: None,
        proxy: None,
        house: None,
    };
    assert!(
        off.boundary.confinement().is_some(),
        "{}",
        off.boundary.summary()
    );
    let allow = Launch {
        boundary: boundary(Network::Allowlist {
            domains: vec!["example.com".into()],
        }),
        proxy: Some(dir.path().join("proxy.sock")),
        house: None,
        ..off.clone()
    };
    // The session's house for `off` (`sandbox::house`), held as a session
    // holds it, for the launches given it.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (house, mut held) = rt.block_on(start_house(&launcher, &off, &proj, dir.path()));
    let housed = Launch {
        house: Some(house),
        ..off.clone()
    };
    if std::env::var_os("BENCH_PRINT_HOUSE").is_some() {
        std::fs::write("/tmp/housed.json", serde_json::to_string(&housed).unwrap()).unwrap();
        std::fs::write("/tmp/housed.cwd", proj.to_str().unwrap()).unwrap();
        std::thread::sleep(Duration::from_secs(120));
    }
    let launcher_os = launcher.clone().into_os_string();
    let mut subjects: Vec<(&str, OsString, Vec<OsString>)> = vec![
        ("true", OsString::from("true"), Vec::new()),
        (
            "sandboxed true (network off)",
            launcher_os.clone(),
            off.args(&["true"]).unwrap(),
        ),
        (
            "sandboxed true (allowlist)",
            launcher_os.clone(),
            allow.args(&["true"]).unwrap(),
        ),
        (
            "sandboxed true (network off, in the house)",
            launcher_os,
            housed.args(&["true"]).unwrap(),
        ),
    ];
    if launcher != candor {
        subjects.push((
            "the same through candor __sandbox (off)",
            candor.clone().into_os_string(),
            off.args(&["true"]).unwrap(),
        ));
    }
    // Interleaved, so that the machine's other load falls on all alike.
    let mut samples: Vec<Vec<(Duration, Duration)>> = vec![Vec::new(); subjects.len()];
    for round in 0..runs() + 5 {
        for (i, (_, program, args)) in subjects.iter().enumerate() {
            let took = time(program, args, &proj);
            if round >= 5 {
                samples[i].push(took);
            }
        }
    }
    let figures: Vec<(f64, f64, f64)> = subjects
        .iter()
        .zip(samples)
        .map(|((name, _, _), samples)| report(name, samples))
        .collect();
    let ready = until_ready(&launcher, &off, &proj, dir.path());
    let cold = report("launcher exec → ready (network off)", ready);
    let ready = until_ready(&launcher, &housed, &proj, dir.path());
    let terminal = report("launcher exec → ready (in the house)", ready);
    if let Some(spared) = spare_ready(&launcher, &off, &proj, dir.path()) {
        report("spare: command sent → ready (network off)", spared);
    }
    if let Some(spared) = spare_ready(&launcher, &housed, &proj, dir.path()) {
        report("spare: command sent → ready (in the house)", spared);
    }
    let allowlist = spare_ready(&launcher, &allow, &proj, dir.path())
        .map(|spared| report("spare: command sent → ready (allowlist)", spared));
    // The house's words: asks for rooms.
    let mut asks = rt.block_on(held.2.writer(Duration::from_secs(10))).unwrap();
    let (ready, ended, cpu) = rt.block_on(room_runs(&held, &mut asks, &housed, &proj));
    report("room: command sent → ready (in the house)", ready);
    report("room: command sent → exited (`true`)", ended);
    println!(
        "room: CPU per command (fork, confinement, `true`), the house init's children over {} runs: {:.3} ms",
        runs(),
        cpu.as_secs_f64() * 1000.0 / runs() as f64
    );
    let (ready, ended, cpu) = rt.block_on(free_room_runs(&held, &mut asks, &housed, &proj));
    let again = report(
        "room serving again: command sent → ready (in the house)",
        ready,
    );
    report("room serving again: command sent → exited (`true`)", ended);
    println!(
        "room serving again: CPU per command (the room and `true`) over {} runs: {:.3} ms",
        runs(),
        cpu.as_secs_f64() * 1000.0 / runs() as f64
    );
    // What a session's command waits for its sandbox, each way a session
    // runs one (`protocol/sandbox.md`): in a room (a session's commands
    // once its house is ready, which it is made for at the session's
    // start), through a spare launcher (a boundary with an allowlist), a
    // launcher in the house (the editor's terminal), and a launcher of its
    // own (no spare and no house: a house not ready 100 ms after its start).
    println!(
        "setup per command, median (target: at most 2 ms): in a room {:.3} ms; allowlist, a spare {} ms; editor terminal, exec → ready in the house {:.3} ms; a launcher of its own, exec → ready {:.3} ms",
        again.0,
        allowlist.map_or("(no lean launcher)".to_owned(), |a| format!("{:.3}", a.0)),
        terminal.0,
        cold.0,
    );
    let (plain, sandboxed, allowlisted) = (figures[0], figures[1], figures[2]);
    println!(
        "extra per command started cold (median; p10; CPU): network off {:.3}; {:.3}; {:.3} ms, allowlist {:.3}; {:.3}; {:.3} ms",
        sandboxed.0 - plain.0,
        sandboxed.1 - plain.1,
        sandboxed.2 - plain.2,
        allowlisted.0 - plain.0,
        allowlisted.1 - plain.1,
        allowlisted.2 - plain.2,
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average: {}", load.trim());
}

/// `launcher` with `args` in `cwd`, its standard streams closed, killed
/// if it is dropped before it ends.
fn start_quiet(launcher: &Path, args: Vec<OsString>, cwd: &Path) -> tokio::process::Child {
    tokio::process::Command::new(launcher)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Starts the house `off`'s boundary would have in a session, and waits
/// until it is ready: where it is, and what keeps it (its lifeline, its
/// process, its watch).
async fn start_house(
    launcher: &Path,
    off: &Launch,
    cwd: &Path,
    dir: &Path,
) -> (
    candor::sandbox::HouseRef,
    (
        candor::sandbox::Lifeline,
        tokio::process::Child,
        candor::sandbox::Watch,
    ),
) {
    let lifeline = candor::sandbox::Lifeline::bind(&dir.join("house.sock")).unwrap();
    let (token, mut watch) = lifeline.expect();
    let house = candor::sandbox::House {
        build: off.build.clone(),
        lifeline: lifeline.path().to_owned(),
        token,
        boundary: off.boundary.clone(),
        marks: candor::sandbox::house::marks(&off.boundary),
    };
    let child = start_quiet(launcher, house.args().unwrap(), cwd);
    let setup = watch.setup(Duration::from_secs(10)).await;
    assert_eq!(setup, candor::sandbox::Setup::Ready);
    let c = off.boundary.confinement().unwrap();
    let house = candor::sandbox::HouseRef::of(child.id().unwrap(), c).unwrap();
    (house, (lifeline, child, watch))
}

/// What a session's command waits for in a room of the house
/// (`sandbox::room`): a room asked for, given 20 ms to get ready (as the
/// model's answer would give it), then from sending it the command's
/// output pipe and start to its `ready`, and to its `exited` (`true`),
/// `runs()` times; and the CPU time of the house's init and the rooms it
/// reaped (with their commands) over them all, read from its `/proc` (in
/// ticks: per run, a tick or none).
async fn room_runs(
    (lifeline, house, _): &(
        candor::sandbox::Lifeline,
        tokio::process::Child,
        candor::sandbox::Watch,
    ),
    asks: &mut tokio::net::UnixStream,
    housed: &Launch,
    cwd: &Path,
) -> (
    Vec<(Duration, Duration)>,
    Vec<(Duration, Duration)>,
    Duration,
) {
    use tokio::io::AsyncWriteExt as _;
    let init = children_of(&house.id().unwrap().to_string()).remove(0);
    // utime, stime, cutime, cstime of the house's init.
    let cpu = || cpu_of(&init);
    let (mut ready, mut ended) = (Vec::new(), Vec::new());
    let mut used = Duration::ZERO;
    for round in 0..runs() + 5 {
        let before = cpu();
        let (token, mut room) = lifeline.expect_room();
        asks.write_all(format!("{} {token}\n", candor::sandbox::room::ASK).as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut words = room.writer(Duration::from_secs(10)).await.unwrap();
        let (to_ready, to_end) = run_true(&mut room, &mut words, housed, cwd).await;
        // The room is reaped by the init as it ends.
        tokio::time::sleep(Duration::from_millis(5)).await;
        if round >= 5 {
            ready.push((to_ready, Duration::ZERO));
            ended.push((to_end, Duration::ZERO));
            used += cpu().saturating_sub(before);
        }
    }
    (ready, ended, used)
}

/// Sends `true` to a room (its watch and words) in the house `housed`
/// names: the time from sending its output pipe and start to the room's
/// `ready`, and to its `exited`.
async fn run_true(
    room: &mut candor::sandbox::Watch,
    words: &mut tokio::net::UnixStream,
    housed: &Launch,
    cwd: &Path,
) -> (Duration, Duration) {
    use tokio::io::AsyncWriteExt as _;
    let start = candor::sandbox::Start {
        launch: housed.clone(),
        argv: vec!["true".into()],
        cwd: cwd.to_owned(),
        env: Vec::new(),
    };
    let began = Instant::now();
    let (_output, pipe) = candor::tools::exec::output_pipe().unwrap();
    candor::tools::exec::send_output(words, &pipe)
        .await
        .unwrap();
    drop(pipe);
    words.write_all(&start.line().unwrap()).await.unwrap();
    let setup = room.setup(Duration::from_secs(10)).await;
    let to_ready = began.elapsed();
    assert_eq!(setup, candor::sandbox::Setup::Ready);
    let exited = room.exited().await;
    let to_end = began.elapsed();
    assert!(matches!(
        exited,
        Some(candor::sandbox::Report::Exited { code: Some(0), .. })
    ));
    (to_ready, to_end)
}

/// The children of process `pid` (outside numbering), from its `/proc`.
fn children_of(pid: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The CPU time of process `pid` (outside numbering) and the children it
/// reaped: utime, stime, cutime and cstime from its `/proc` (in ticks).
fn cpu_of(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|f| f.parse().unwrap())
        .collect();
    Duration::from_millis(fields.iter().sum::<u64>() * 10)
}

/// What a session's command waits for in a room that served the command
/// before it (`InRoom::free`): one room asked for, then `runs()` + 5
/// commands (`true`) sent to it in turn, each from sending its output
/// pipe and start to its `ready`, and to its `exited`; and the CPU time
/// of the room and its commands over the timed runs.
async fn free_room_runs(
    (lifeline, house, _): &(
        candor::sandbox::Lifeline,
        tokio::process::Child,
        candor::sandbox::Watch,
    ),
    asks: &mut tokio::net::UnixStream,
    housed: &Launch,
    cwd: &Path,
) -> (
    Vec<(Duration, Duration)>,
    Vec<(Duration, Duration)>,
    Duration,
) {
    use tokio::io::AsyncWriteExt as _;
    let init = children_of(&house.id().unwrap().to_string()).remove(0);
    let before: Vec<String> = children_of(&init);
    let (token, mut room) = lifeline.expect_room();
    asks.write_all(format!("{} {token}\n", candor::sandbox::room::ASK).as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let pid = children_of(&init)
        .into_iter()
        .find(|p| !before.contains(p))
        .unwrap();
    let mut words = room.writer(Duration::from_secs(10)).await.unwrap();
    let (mut ready, mut ended) = (Vec::new(), Vec::new());
    let mut used = Duration::ZERO;
    for round in 0..runs() + 5 {
        let before = cpu_of(&pid);
        let (to_ready, to_end) = run_true(&mut room, &mut words, housed, cwd).await;
        if round >= 5 {
            ready.push((to_ready, Duration::ZERO));
            ended.push((to_end, Duration::ZERO));
            used += cpu_of(&pid).saturating_sub(before);
        }
    }
    (ready, ended, used)
}

/// From spawning `<launcher> __sandbox <off> -- true` with a session's
/// lifeline to the launcher's `ready` report, `runs()` times (and the CPU
/// time of the whole run).
fn until_ready(launcher: &Path, off: &Launch, cwd: &Path, dir: &Path) -> Vec<(Duration, Duration)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let lifeline = candor::sandbox::Lifeline::bind(&dir.join("life.sock")).unwrap();
        let mut samples = Vec::new();
        for round in 0..runs() + 5 {
            let (token, mut watch) = lifeline.expect();
            let launch = Launch {
                lifeline: Some(lifeline.path().to_owned()),
                token: Some(token),
                ..off.clone()
            };
            let cpu = common::children_cpu();
            let start = Instant::now();
            let mut child = start_quiet(launcher, launch.args(&["true"]).unwrap(), cwd);
            let setup = watch.setup(Duration::from_secs(10)).await;
            let took = start.elapsed();
            assert_eq!(setup, candor::sandbox::Setup::Ready);
            assert!(child.wait().await.unwrap().success());
            if round >= 5 {
                samples.push((took, common::children_cpu().saturating_sub(cpu)));
            }
        }
        samples
    })
}

/// What a session's command waits for when a spare launcher was started
/// ahead (`sandbox::spare`): from sending it the command to its `ready`,
/// `runs()` times; each spare is given 20 ms to get ready first, as the
/// model's answer would give it (and the CPU time of the whole run).
/// `None` for a build without spares.
fn spare_ready(
    launcher: &Path,
    off: &Launch,
    cwd: &Path,
    dir: &Path,
) -> Option<Vec<(Duration, Duration)>> {
    let answer = probe_of(launcher);
    launcher::build_of(&answer)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let namespaces = off.boundary.confinement().unwrap().namespaces;
    Some(rt.block_on(async {
        let lifeline = candor::sandbox::Lifeline::bind(&dir.join("spare.sock")).unwrap();
        let mut samples = Vec::new();
        for round in 0..runs() + 5 {
            let (token, mut watch) = lifeline.expect();
            let spare = candor::sandbox::Spare {
                build: off.build.clone(),
                lifeline: lifeline.path().to_owned(),
                token: token.clone(),
                namespaces,
                house: off.house.clone(),
            };
            let cpu = common::children_cpu();
            let mut child = start_quiet(launcher, spare.args().unwrap(), cwd);
            tokio::time::sleep(Duration::from_millis(20)).await;
            let start = candor::sandbox::Start {
                launch: Launch {
                    lifeline: Some(lifeline.path().to_owned()),
                    token: Some(token),
                    ..off.clone()
                },
                argv: vec!["true".into()],
                cwd: cwd.to_owned(),
                env: Vec::new(),
            };
            let began = Instant::now();
            watch
                .send(&start.line().unwrap(), Duration::from_secs(10))
                .await
                .unwrap();
            let setup = watch.setup(Duration::from_secs(10)).await;
            let took = began.elapsed();
            assert_eq!(setup, candor::sandbox::Setup::Ready);
            assert!(child.wait().await.unwrap().success());
            if round >= 5 {
                samples.push((took, common::children_cpu().saturating_sub(cpu)));
            }
        }
        samples
    }))
}
