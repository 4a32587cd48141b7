#![allow(unreachable_pub, dead_code)]
//! What the benches that drive the release binary share: starting it with
//! piped stdio, speaking JSON-RPC lines to it, and reading its memory.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// The binary under test: `CANDOR_BIN` when set (another build, to
/// compare two), else the one cargo built for the bench.
pub fn candor_bin() -> std::ffi::OsString {
    std::env::var_os("CANDOR_BIN")
        .unwrap_or_else(|| std::ffi::OsString::from(env!("CARGO_BIN_EXE_candor")))
}

/// The CPU time (user + system) of this process's children that have
/// ended and been waited for, with theirs: around one child, what it and
/// everything it started cost, whatever else the machine is doing.
pub fn children_cpu() -> std::time::Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) else {
        return std::time::Duration::ZERO;
    };
    let us = |t: nix::sys::time::TimeVal| {
        std::time::Duration::from_micros(
            u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000
                + u64::try_from(t.tv_usec()).unwrap_or(0),
        )
    };
    us(usage.user_time()) + us(usage.system_time())
}

/// The binary under test ([`candor_bin`]) with `env` added, stdin/stdout
/// piped, stderr dropped, logs off.
#[allow(clippy::disallowed_methods)] // the benches start the binary under test
pub fn candor(env: &[(&str, &std::ffi::OsStr)]) -> Child {
    let mut cmd = Command::new(candor_bin());
    // Only what the bench gives: a developer's settings must not take part.
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// A field of `/proc/<pid>/status` in KiB (`VmHWM:`, `VmRSS:`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// A client on a child's pipes: requests out, frames in.
pub struct Client {
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Client {
    pub fn new(child: &mut Child) -> Self {
        Self {
            stdin: child.stdin.take(),
            lines: BufReader::new(child.stdout.take().unwrap()).lines(),
        }
    }

    pub fn send(&mut self, id: u64, method: &str, params: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Reads frames until the response to `id`; returns it and how many
    /// other frames came first.
    pub fn wait(&mut self, id: u64) -> (Value, usize) {
        let mut frames = 0;
        loop {
            let v: Value = serde_json::from_str(&self.lines.next().unwrap().unwrap()).unwrap();
            if v.get("method").is_none() && v["id"] == id {
                return (v, frames);
            }
            frames += 1;
        }
    }

    /// The next frame.
    pub fn frame(&mut self) -> Value {
        serde_json::from_str(&self.lines.next().unwrap().unwrap()).unwrap()
    }

    /// Ends the agent's input.
    pub fn close(&mut self) {
        self.stdin = None;
    }
}
