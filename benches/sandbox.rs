//! The sandbox's setup cost per command: `candor __sandbox <launch> --
//! true` against plain `true`, each spawned the same way (std `Command`,
//! stdio null, waited for), on the release binary, with the boundary a
//! session gets by default (workspace-write on a temporary project with a
//! `.git`, `TMPDIR`, network off) and, second, with a network allowlist
//! (the forwarder started too; no proxy listening, it is not reached).
//!
//! Third, what a session waits for before a command's first byte: from
//! spawning the launcher (with a session's lifeline) to its `ready` report
//! (namespaces, binds, the init, Landlock and seccomp in place; the
//! command not started yet).
//!
//! Run: `cargo bench --bench sandbox` (`CANDOR_BIN=<path>` measures that
//! build of candor instead, e.g. a stripped release binary). Target
//! (issue 26): the median
//! setup cost (launcher exec → ready) at most 2 ms. Prints the median and
//! p99 of each, and the difference of the medians.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods // the bench starts the binary under test
)]

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use candor::sandbox::{Boundary, Launch, Network, Preset, Probe};

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn time(program: &OsString, args: &[OsString], cwd: &Path) -> Duration {
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
    took
}

/// Median, 10th and 99th percentile, in ms.
fn report(name: &str, mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at =
        |q: usize| samples[(samples.len() * q / 100).min(samples.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "{name:<40} median {:>7.3} ms   p10 {:>7.3} ms   p99 {:>7.3} ms",
        at(50),
        at(10),
        at(99)
    );
    (at(50), at(10))
}

fn main() {
    // `CANDOR_BIN`: another build of candor to measure (the bench
    // profile keeps line tables; a shipped release binary is stripped,
    // and a launcher's start touches its pages twice).
    let candor = std::env::var_os("CANDOR_BIN")
        .unwrap_or_else(|| OsString::from(env!("CARGO_BIN_EXE_candor")));
    let out = Command::new(&candor)
        .args(["__sandbox", "--probe"])
        .output()
        .unwrap();
    let probe = Probe::parse(&out.stdout);
    println!("kernel: {}", probe.describe());
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
        boundary: boundary(Network::Off),
        lifeline: None,
        token: None,
        proxy: None,
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
        ..off.clone()
    };
    let subjects: [(&str, OsString, Vec<OsString>); 3] = [
        ("true", OsString::from("true"), Vec::new()),
        (
            "candor __sandbox (network off) -- true",
            candor.clone(),
            off.args(&["true"]).unwrap(),
        ),
        (
            "candor __sandbox (allowlist) -- true",
            candor.clone(),
            allow.args(&["true"]).unwrap(),
        ),
    ];
    // Interleaved, so that the machine's other load falls on all three alike.
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for round in 0..runs() + 5 {
        for (i, (_, program, args)) in subjects.iter().enumerate() {
            let took = time(program, args, &proj);
            if round >= 5 {
                samples[i].push(took);
            }
        }
    }
    let [a, b, c] = samples;
    let plain = report(subjects[0].0, a);
    let sandboxed = report(subjects[1].0, b);
    let allowlisted = report(subjects[2].0, c);
    let ready = until_ready(&candor, &off, &proj, dir.path());
    report("launcher exec → ready (network off)", ready);
    println!(
        "extra per command (median; p10): network off {:.3} ms; {:.3} ms, allowlist {:.3} ms; {:.3} ms (target: median at most 2 ms)",
        sandboxed.0 - plain.0,
        sandboxed.1 - plain.1,
        allowlisted.0 - plain.0,
        allowlisted.1 - plain.1
    );
}

/// From spawning `candor __sandbox <off> -- true` with a session's
/// lifeline to the launcher's `ready` report, `runs()` times.
fn until_ready(candor: &OsString, off: &Launch, cwd: &Path, dir: &Path) -> Vec<Duration> {
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
            let start = Instant::now();
            let mut child = tokio::process::Command::new(candor)
                .args(launch.args(&["true"]).unwrap())
                .current_dir(cwd)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let setup = watch.setup(Duration::from_secs(10)).await;
            let took = start.elapsed();
            assert_eq!(setup, candor::sandbox::Setup::Ready);
            assert!(child.wait().await.unwrap().success());
            if round >= 5 {
                samples.push(took);
            }
        }
        samples
    })
}
