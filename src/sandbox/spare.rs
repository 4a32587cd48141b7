//! A spare launcher: the launcher started ahead of a command, so that a
//! command does not wait for two process starts and the namespaces'
//! creation (`protocol/sandbox.md`, "The spare"). `… __sandbox --spare
//! <Spare JSON>` connects candor's lifeline and says hello, enters the
//! namespaces its [`Spare`] names and starts its second stage (`…
//! __sandbox --init-spare`), which mounts the fresh `/proc`; then both
//! wait. candor sends the command on the lifeline (one [`Start`] line,
//! carrying the same `Launch` a launcher is given on its command line);
//! the first stage checks that it is of this build and wants exactly
//! these namespaces, binds and hides paths, and hands the start on; the
//! second stage enters the command's working directory, confines itself
//! exactly as for any launch (`init::confine`), says ready and runs the
//! command. From there on it is the launcher of `launch`. A spare that
//! is never sent a command ends with its lifeline (the session, or
//! candor) or when candor kills it.

use std::ffi::OsString;
use std::io::{BufRead as _, Read as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::boundary::{Confinement, Namespaces};
use super::launch::{Launch, SUBCOMMAND, fail};

/// The first stage's option.
pub const SPARE: &str = "--spare";
/// The second stage's option.
pub const INIT: &str = "--init-spare";
/// After the second stage's namespaces: it runs in the session's house
/// (`sandbox::house`), not as the init of a PID namespace of its own.
const HOUSED: &str = "housed";
/// The longest start line (the command's script is at most 128 KiB, as a
/// launcher's argument would be, with its launch).
const MAX_START: u64 = 1024 * 1024;

/// What a spare launcher is given on its command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spare {
    /// The build of candor that started it (`sandbox::launcher::BUILD`).
    pub build: String,
    /// candor's lifeline socket.
    pub lifeline: PathBuf,
    /// Names this spare on the lifeline.
    pub token: String,
    /// The namespaces it enters ahead: a launch that wants others is
    /// refused (candor sends a spare only a launch that fits).
    pub namespaces: Namespaces,
    /// The session's house it joins ahead instead (`sandbox::house`): it
    /// then runs only a launch in that house.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub house: Option<super::join::HouseRef>,
}

impl Spare {
    /// The arguments (after the launcher's path) that start this spare.
    pub fn args(&self) -> Result<Vec<OsString>, serde_json::Error> {
        Ok(vec![
            OsString::from(SUBCOMMAND),
            OsString::from(SPARE),
            OsString::from(serde_json::to_string(self)?),
        ])
    }
}

/// What candor sends a spare: the command and where it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Start {
    pub launch: Launch,
    pub argv: Vec<String>,
    /// The command's working directory.
    pub cwd: PathBuf,
    /// Variables the command gets on top of the launcher's own.
    pub env: Vec<(String, String)>,
}

impl Start {
    /// The line candor writes on the spare's lifeline.
    pub fn line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        Ok(line)
    }
}

/// One start line from `stream` (`None` at its end: candor went, or let
/// the spare go).
fn read_start(stream: &UnixStream) -> Option<Result<Start, String>> {
    let mut reader = std::io::BufReader::new(stream.try_clone().ok()?);
    read_start_from(&mut reader)
}

/// One start line from `reader`, as [`read_start`].
pub(super) fn read_start_from<R: std::io::BufRead>(
    reader: &mut R,
) -> Option<Result<Start, String>> {
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(MAX_START)
        .read_until(b'\n', &mut line)
        .ok()?;
    if n == 0 {
        return None;
    }
    Some(serde_json::from_slice(&line).map_err(|e| format!("the start is not readable: {e}")))
}

/// Whether `start` is this spare's to run: of this build, confined, in
/// exactly the namespaces entered.
fn fits<'a>(start: &'a Start, namespaces: &Namespaces) -> Result<&'a Confinement, String> {
    if let Some(why) = super::launch::foreign(&start.launch) {
        return Err(why);
    }
    let c = start
        .launch
        .boundary
        .confinement()
        .ok_or("a spare launcher was sent an unconfined launch")?;
    if c.namespaces != *namespaces {
        return Err("a spare launcher was sent a launch for other namespaces".into());
    }
    Ok(c)
}

/// `--spare <JSON>`: the first stage of a spare.
pub(super) fn run(args: &[OsString]) -> ExitCode {
    // candor (its lifeline, or the process) goes: so does the spare.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    super::fork::keep_count();
    let Some(spare) = super::launch::argument::<Spare>(args) else {
        return fail(None, "the spare launcher's argument is not readable");
    };
    let mut life = match super::launch::hello(&spare.lifeline, &spare.token) {
        Ok(life) => life,
        Err(failed) => return failed,
    };
    if spare.build != super::launcher::BUILD {
        return fail(Some(&mut life), "a spare launcher of another build");
    }
    let signals = super::launch::block_termination();
    let housed = match super::launch::enter(&spare.namespaces, spare.house.as_ref()) {
        Ok(housed) => housed,
        Err(e) => return fail(Some(&mut life), &e),
    };
    let ns = serde_json::to_string(&spare.namespaces).unwrap_or_default();
    let mut init: Vec<OsString> = vec![INIT.into(), ns.into()];
    if housed {
        init.push(HOUSED.into());
    }
    let mut stage = match super::launch::start_init(
        &spare.namespaces,
        init,
        super::launch::Second::Copy(run_init),
    ) {
        Ok(stage) => stage,
        Err(e) => return fail(Some(&mut life), &e),
    };
    let mut status = match super::launch::accept_init(&mut stage) {
        Ok(status) => status,
        Err(e) => {
            stage.end();
            return fail(Some(&mut life), &e);
        }
    };
    // Ready ahead; now the command, whenever candor has one.
    let start = match read_start(&life) {
        Some(Ok(start)) => start,
        Some(Err(e)) => {
            stage.end();
            return fail(Some(&mut life), &e);
        }
        None => {
            stage.end();
            return ExitCode::SUCCESS;
        }
    };
    // In the house (whose mounts are in place) only a launch for it; out
    // of it, the mounts, and the second stage is not told of a house.
    let mut start = start;
    let set_up = fits(&start, &spare.namespaces)
        .and_then(|c| match housed {
            true if start.launch.house == spare.house => Ok(()),
            true => {
                Err("a spare launcher in the session's house was sent a launch for another".into())
            }
            false => super::launch::mounts(&start.launch.boundary, c),
        })
        .and_then(|()| {
            if !housed {
                start.launch.house = None;
            }
            start.line().map_err(|e| e.to_string())
        });
    match set_up {
        Ok(line) => {
            use std::io::Write as _;
            let _ = status.get_mut().write_all(&line);
        }
        Err(e) => {
            stage.end();
            return fail(Some(&mut life), &e);
        }
    }
    super::launch::follow(stage, status, Some(life), signals)
}

/// `--init-spare <namespaces JSON>`: the second stage of a spare.
pub(super) fn run_init(args: &[OsString]) -> ExitCode {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let Some(namespaces) = super::launch::argument::<Namespaces>(args) else {
        return fail(None, "the spare's init argument is not readable");
    };
    let housed = args.get(1).is_some_and(|a| a == HOUSED);
    let mut status = match super::init::connect() {
        Ok(status) => status,
        Err(e) => return fail(None, &e),
    };
    // The house's `/proc` is its init's.
    if namespaces.pid
        && !housed
        && let Err(e) = super::namespaces::mount_proc()
    {
        return super::init::refuse(&mut status, &e);
    }
    // Until the first stage hands on the start (it ends this process if
    // it goes first).
    let start = match read_start(&status) {
        Some(Ok(start)) => start,
        Some(Err(e)) => return super::init::refuse(&mut status, &e),
        None => return ExitCode::FAILURE,
    };
    let c = match fits(&start, &namespaces) {
        Ok(_) if start.launch.house.is_some() != housed => {
            let why = "a spare's init was sent a launch for another house";
            return super::init::refuse(&mut status, why);
        }
        Ok(c) => c,
        Err(e) => return super::init::refuse(&mut status, &e),
    };
    if let Err(e) = std::env::set_current_dir(&start.cwd) {
        let cwd = start.cwd.display();
        return super::init::refuse(&mut status, &format!("the working directory {cwd}: {e}"));
    }
    if housed {
        super::join::starting();
    }
    let subreaper = !super::init::own_pid_namespace(&start.launch, c);
    let own = match super::init::confine(&start.launch, c, subreaper) {
        Ok(env) => env,
        Err(e) => return super::init::refuse(&mut status, &e),
    };
    // The sandbox's own variables (`TMPDIR`, the proxy's) win.
    let mut env = start.env.clone();
    env.extend(own);
    let argv: Vec<OsString> = start.argv.iter().map(OsString::from).collect();
    super::init::command(status, &start.launch, c, &argv, env)
}
