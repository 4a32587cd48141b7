//! The one place candor starts processes.
//!
//! Every child runs in its own process group, so that ending it ends
//! everything it started. [`ProcessGroup`] owns a spawned child: dropping it
//! sends SIGKILL to the whole group, so no process outlives the tool call,
//! the turn or candor's shutdown by accident.
//!
//! Architecture invariant: no other module constructs a `Command` (enforced
//! by `disallowed-methods` in `clippy.toml`).

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// Variables a command or hook never inherits from candor: the providers'
/// keys (a repository's hook or a model's command could send them
/// anywhere), and every `CANDOR_*` setting. The user's own config file may
/// let some through (`pass_env`).
const SECRETS: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
];

static PASSED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Sets, once at start-up, the variables the user lets children have
/// although candor would keep them out (the user config's `pass_env`).
pub fn pass_env(names: Vec<String>) {
    let _ = PASSED.set(names);
}

static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Sets, once at start-up, the `HOME` children get when candor itself was
/// started without one (the home the password database gave): a hook
/// written as `"$HOME/.claude/hooks/check.sh"` finds its script.
pub fn home_for_children(home: std::path::PathBuf) {
    let _ = HOME.set(home);
}

/// The variables children must not inherit (the providers' keys and
/// candor's own settings), less those the user passes.
pub fn withheld_variables() -> Vec<String> {
    let passed = PASSED.get().map(Vec::as_slice).unwrap_or(&[]);
    let own = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("CANDOR_"));
    SECRETS
        .iter()
        .map(|s| s.to_string())
        .chain(own)
        .filter(|name| !passed.contains(name))
        .collect()
}

/// Removes what children must not inherit, and gives them the `HOME`
/// candor found when it had none ([`home_for_children`]).
fn scrub(cmd: &mut Command) {
    for name in withheld_variables() {
        cmd.env_remove(&name);
    }
    if let Some(home) = HOME.get()
        && std::env::var_os("HOME").is_none()
    {
        cmd.env("HOME", home);
    }
}

/// `bash -c <script>` in `cwd`, in a new process group, stdin closed, and
/// stdout and stderr both writing into one pipe (as `2>&1` would), so the
/// output keeps the order it was written in. Returns the command and the
/// reading end of that pipe. The command must be spawned (and dropped) for
/// the pipe to reach end of file when the process group is done with it.
pub fn bash(script: &str, cwd: &Path) -> io::Result<(Command, pipe::Receiver)> {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script);
    piped(cmd, cwd)
}

/// [`bash`] in the sandbox: candor's binary at `launcher` as the launcher
/// (`candor __sandbox <launch> -- bash -c <script>`), which confines
/// itself as `launch` says and runs the command.
pub fn confined_bash(
    launcher: &Path,
    launch: &crate::sandbox::Launch,
    script: &str,
    cwd: &Path,
) -> io::Result<(Command, pipe::Receiver)> {
    let args = launch
        .args(&["bash", "-c", script])
        .map_err(|e| io::Error::other(format!("the launch cannot be written: {e}")))?;
    let mut cmd = launcher_command(launcher);
    cmd.args(args);
    piped(cmd, cwd)
}

/// A spare launcher (`<launcher> __sandbox --spare <spare>`,
/// `sandbox::spare`): started ahead, in `cwd`, piped as [`bash`]; it
/// waits on its lifeline for the command.
pub fn sandbox_spare(
    launcher: &Path,
    spare: &crate::sandbox::Spare,
    cwd: &Path,
) -> io::Result<(Command, pipe::Receiver)> {
    let args = spare
        .args()
        .map_err(|e| io::Error::other(format!("the spare cannot be written: {e}")))?;
    let mut cmd = launcher_command(launcher);
    cmd.args(args);
    piped(cmd, cwd)
}

/// The session's house for a boundary (`<launcher> __sandbox --house
/// <house>`, `sandbox::house`): started ahead, in `cwd`, piped as
/// [`bash`]; it holds the namespaces its launchers join.
pub fn sandbox_house(
    launcher: &Path,
    house: &crate::sandbox::House,
    cwd: &Path,
) -> io::Result<(Command, pipe::Receiver)> {
    let args = house
        .args()
        .map_err(|e| io::Error::other(format!("the house cannot be written: {e}")))?;
    let mut cmd = launcher_command(launcher);
    cmd.args(args);
    piped(cmd, cwd)
}

/// A pipe for a command's output that candor does not spawn itself (a
/// room of the session's house, `sandbox::room`): the reading end, and
/// the writing end to hand over ([`send_output`]) and then drop.
pub fn output_pipe() -> io::Result<(pipe::Receiver, OwnedFd)> {
    let (reader, writer) = std::io::pipe()?;
    Ok((
        pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?,
        OwnedFd::from(writer),
    ))
}

/// Hands `pipe` to the room at the other end of `words` (its lifeline):
/// one `sandbox::room::OUTPUT` byte carrying the descriptor.
pub async fn send_output(words: &tokio::net::UnixStream, pipe: &OwnedFd) -> io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    use std::os::fd::AsFd as _;
    let byte = [crate::sandbox::room::OUTPUT];
    loop {
        words.writable().await?;
        let sent = words.try_io(tokio::io::Interest::WRITABLE, || {
            let fds = [pipe.as_fd()];
            let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
                return Err(io::Error::other("the descriptor does not fit"));
            }
            sendmsg(
                words,
                &[io::IoSlice::new(&byte)],
                &mut control,
                SendFlags::empty(),
            )
            .map_err(io::Error::from)
        });
        match sent {
            Ok(1) => return Ok(()),
            Ok(_) => return Err(io::Error::other("the room's lifeline took nothing")),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `launcher`, named as candor's binary when it is the running one
/// (`sandbox::launcher::RUNNING`), as `ps` should show it.
fn launcher_command(launcher: &Path) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new(launcher);
    if launcher == Path::new(crate::sandbox::launcher::RUNNING)
        && let Ok(exe) = std::env::current_exe()
    {
        cmd.arg0(exe);
    }
    cmd
}

/// `cmd` in `cwd`, stdin closed, stdout and stderr into one pipe, its own
/// process group, scrubbed (see [`bash`]).
fn piped(mut cmd: Command, cwd: &Path) -> io::Result<(Command, pipe::Receiver)> {
    let (reader, writer) = std::io::pipe()?;
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(true);
    scrub(&mut cmd);
    let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok((cmd, reader))
}

/// An ACP agent process (`candor demo` starts candor itself this way):
/// stdin and stdout piped for frames, stderr passed through, its own
/// process group.
pub fn agent(program: &Path, args: &[&str]) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// A program with arguments (no shell), as a client terminal runs it:
/// stdin closed, stdout and stderr piped, its own process group.
pub fn program(program: &str, args: &[String], cwd: &Path) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// A hook command as Claude Code and Codex run one: `sh -c <command>`
/// (shell form) or a program with arguments (exec form), in `cwd`, with
/// `env` added, stdin piped (the event's JSON), stdout and stderr piped, in
/// its own process group.
pub fn hook(
    command: &str,
    args: Option<&[String]>,
    cwd: &Path,
    env: &[(String, String)],
) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = match args {
        Some(args) => {
            let mut cmd = Command::new(command);
            cmd.args(args);
            cmd
        }
        None => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(command);
            cmd
        }
    };
    scrub(&mut cmd);
    cmd.current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// An MCP server started over stdio: a program with arguments (no shell)
/// in `cwd`, with `env` added to what children inherit (the provider keys
/// and `CANDOR_*` withheld, unless the server's own entry sets them),
/// stdin, stdout and stderr piped, in its own process group.
pub fn mcp_server(program: &str, args: &[String], env: &[(String, String)], cwd: &Path) -> Command {
    // Exactly how an exec-form hook is started.
    hook(program, Some(args), cwd, env)
}

/// Settings of a repository's own config that make a read-only git
/// command run a program, turned off for every git candor runs: a cloned
/// (or unpacked) repository's `.git/config` is the repository's, not the
/// user's. `core.fsmonitor` is run by `git status`; `log.showSignature`
/// makes `git log` run `gpg.program`; hooks, pagers and external diffs are
/// programs too; a partial clone fetches a missing object through a
/// transport (`core.sshCommand`, a remote helper), so no transport is
/// allowed. Filter drivers (`filter.<name>.clean`, which `git status`
/// runs on a file whose index entry is stale) have names of the
/// repository's choosing: [`git`] is given the ones configured to turn off.
const GIT_OFF: [&str; 8] = [
    "core.fsmonitor=false",
    "protocol.allow=never",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "log.showSignature=false",
    "diff.external=",
    "core.untrackedCache=false",
    "submodule.recurse=false",
];

/// The variable [`git`]'s `--config-env` overrides read an empty value from.
const GIT_EMPTY: &str = "CANDOR_GIT_EMPTY";
/// The variable [`git`]'s `--config-env` overrides read `false` from.
const GIT_FALSE: &str = "CANDOR_GIT_FALSE";

/// `git <args>` in `cwd`, for facts about the repository the session works
/// in, never a program of the repository's choosing: every setting of
/// `GIT_OFF` and each filter driver named in `filters` (found with
/// `git config --get-regexp '^filter\.'`, which runs nothing) is
/// overridden on the command line, which outranks every config file; the
/// work tree is `cwd` (a repository's `core.worktree` cannot point git at
/// the user's home). No optional locks (`git status` does not write the
/// index), no prompts, stdin closed, stdout piped, stderr discarded, its
/// own process group.
pub fn git(args: &[&str], filters: &[String], cwd: &Path) -> Command {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new("git");
    cmd.arg("--no-pager");
    for setting in GIT_OFF {
        cmd.arg("-c").arg(setting);
    }
    // A driver's name is the repository's, and may hold `=`: `-c` splits
    // at the first `=` (`filter.a=b.clean=` would set `filter.a`), while
    // `--config-env` splits at the last, so the whole key is the name.
    for name in filters {
        for part in ["clean", "smudge", "process"] {
            cmd.arg(format!("--config-env=filter.{name}.{part}={GIT_EMPTY}"));
        }
        cmd.arg(format!("--config-env=filter.{name}.required={GIT_FALSE}"));
    }
    cmd.args(args);
    scrub(&mut cmd);
    cmd.current_dir(cwd)
        .env(GIT_EMPTY, "")
        .env(GIT_FALSE, "false")
        .env("GIT_WORK_TREE", cwd)
        // A partial clone fetches a missing object from its promisor
        // remote, through the repository's `core.sshCommand` or remote
        // helper: never (`protocol.allow=never` for a git without this).
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// What this kernel gives the sandbox, asked once per process, and which
/// binary will launch the sandbox (`sandbox::launcher`): the lean launcher
/// beside `candor` (candor's own binary) when it is there, trusted, and
/// answers the probe as this very build; else `candor` itself. The probe
/// is the launcher run as `… __sandbox --probe` (`sandbox::probe`), its
/// stdout read as the answer, two seconds at most. Callers that ask while
/// it runs wait for its answer: the probe runs once however many ask at
/// once (a session's start, its first turn and its first call do).
pub async fn sandbox_probe(candor: &Path) -> &'static crate::sandbox::Probe {
    static PROBING: tokio::sync::OnceCell<&'static crate::sandbox::Probe> =
        tokio::sync::OnceCell::const_new();
    if let Some(probe) = crate::sandbox::probe::cached() {
        return probe;
    }
    PROBING.get_or_init(|| probe_once(candor)).await
}

async fn probe_once(candor: &Path) -> &'static crate::sandbox::Probe {
    use crate::sandbox::launcher;
    if let Some(lean) = launcher::beside(candor) {
        // As it is before it runs: a file changed since is not launched.
        let file = launcher::Identity::of(&lean);
        match run_probe(&lean).await {
            Ok(out) if launcher::build_of(&out).as_deref() == Some(launcher::BUILD) => {
                launcher::choose(lean, true, file);
                return crate::sandbox::probe::remember(crate::sandbox::Probe::parse(&out));
            }
            Ok(_) => tracing::warn!(
                "{} is not of this build of candor; commands are launched by candor itself (slower)",
                lean.display()
            ),
            Err(e) => tracing::warn!(
                "{}: the probe {e}; commands are launched by candor itself (slower)",
                lean.display()
            ),
        }
    }
    let probe = match run_probe(candor).await {
        Ok(out) => crate::sandbox::Probe::parse(&out),
        Err(e) => crate::sandbox::Probe::nothing(&format!("the probe {e}")),
    };
    launcher::choose(candor.to_owned(), false, launcher::Identity::of(candor));
    crate::sandbox::probe::remember(probe)
}

/// `launcher __sandbox --probe`'s answer.
async fn run_probe(launcher: &Path) -> Result<Vec<u8>, String> {
    #[allow(clippy::disallowed_methods)] // this is the sanctioned constructor
    let mut cmd = Command::new(launcher);
    cmd.args([crate::sandbox::SUBCOMMAND, "--probe"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    output_of(cmd, 64 * 1024, Duration::from_secs(2))
        .await
        .map(|(out, _)| out)
}

/// Runs a command built here and returns its stdout when it exits
/// successfully, with whether it was cut: at most `cap` bytes are read,
/// and a command with more to say is ended there. `Err` says why there is
/// no output. Gives up (and ends the process group) after `limit`.
pub async fn output_of(
    cmd: Command,
    cap: usize,
    limit: Duration,
) -> Result<(Vec<u8>, bool), String> {
    use tokio::io::AsyncReadExt as _;
    let mut group = ProcessGroup::spawn(cmd).map_err(|e| e.to_string())?;
    let Some(stdout) = group.child_mut().stdout.take() else {
        return Err("no output pipe".into());
    };
    let run = async {
        let mut out = Vec::new();
        stdout
            .take(cap as u64 + 1)
            .read_to_end(&mut out)
            .await
            .map_err(|e| e.to_string())?;
        if out.len() > cap {
            out.truncate(cap);
            return Ok((out, true));
        }
        let status = group.child_mut().wait().await.map_err(|e| e.to_string())?;
        if status.success() {
            Ok((out, false))
        } else {
            Err(describe_status(status))
        }
    };
    match tokio::time::timeout(limit, run).await {
        Ok(result) => result,
        Err(_) => Err(format!("gave no answer in {} ms", limit.as_millis())),
    }
}

/// How a process ended, for people ("exited with status 3", "killed by
/// SIGKILL").
pub fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("killed by {}", signal_name(signal)),
        (None, None) => "ended".to_owned(),
    }
}

/// A child process and its process group.
#[derive(Debug)]
pub struct ProcessGroup {
    child: Child,
    pgid: Option<Pid>,
    /// The value of [`SCOPE_VAR`] it and its descendants carry.
    scope: String,
}

impl ProcessGroup {
    /// Spawns `cmd`, which must come from a constructor of this module,
    /// marked with a scope of its own ([`SCOPE_VAR`]) so that whatever it
    /// starts can be found after it escaped the group.
    pub fn spawn(mut cmd: Command) -> io::Result<Self> {
        let scope = format!(
            "{}-{}",
            std::process::id(),
            NEXT_SCOPE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        cmd.env(SCOPE_VAR, &scope);
        // Registered before the child exists: a sweep on another thread
        // never takes a new child for a stray.
        let mut strays = strays();
        strays.live.insert(scope.clone());
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                strays.live.remove(&scope);
                return Err(e);
            }
        };
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        if let Some(pid) = pgid {
            strays.leaders.insert(pid.as_raw());
        }
        drop(strays);
        Ok(Self { child, pgid, scope })
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The leader's process id (also the group id).
    pub fn id(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p.as_raw()).ok())
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            match killpg(pgid, signal) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                Err(e) => {
                    tracing::warn!(pgid = pgid.as_raw(), %signal, error = %e, "could not signal a process group")
                }
            }
        }
    }

    /// Ends the group: SIGTERM, then SIGKILL once `grace` has passed or
    /// `hard_stop` fires, whichever comes first. Returns the leader's status.
    pub async fn terminate(
        &mut self,
        grace: Duration,
        hard_stop: &CancellationToken,
    ) -> io::Result<ExitStatus> {
        self.signal(Signal::SIGTERM);
        let exited = tokio::select! {
            status = self.child.wait() => Some(status),
            _ = tokio::time::sleep(grace) => None,
            _ = hard_stop.cancelled() => None,
        };
        // Whatever the leader did, nothing of the group may stay behind.
        self.signal(Signal::SIGKILL);
        match exited {
            Some(status) => status,
            None => self.child.wait().await,
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // Orphans still in the group were adopted by candor: found before
        // the group's SIGKILL makes zombies of them (whose environment no
        // longer names their scope), so that they are reaped.
        let leader = self.pgid.map(Pid::as_raw);
        let adopted: Vec<i32> = if SUBREAPER.load(std::sync::atomic::Ordering::Relaxed) {
            adopted_children()
                .into_iter()
                .filter(|pid| Some(*pid) != leader)
                .filter(|pid| scope_of(*pid).as_deref() == Some(self.scope.as_str()))
                .collect()
        } else {
            Vec::new()
        };
        self.signal(Signal::SIGKILL);
        for pid in &adopted {
            let _ = nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        {
            let mut strays = strays();
            strays.killed.extend(adopted);
            // What escaped the group (`setsid`, a double fork) ends with it.
            strays.live.remove(&self.scope);
        }
        end_strays();
    }
}

/// Whether candor is the subreaper of its descendants (the server is; a
/// test process running candor in process is not).
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The variable every child of candor carries, naming the process group it
/// was started in (`<candor pid>-<n>`), inherited by what it starts. It is
/// how candor, a child subreaper, tells whose an adopted process is.
pub const SCOPE_VAR: &str = "candor_scope";

static NEXT_SCOPE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The scopes still running, and strays killed but not yet reaped.
#[derive(Debug, Default)]
struct Strays {
    live: std::collections::HashSet<String>,
    killed: std::collections::HashSet<i32>,
    /// Group leaders candor spawned (tokio waits for them): never reaped
    /// here. Kept after their group is dropped until tokio has reaped them
    /// (they are no longer candor's children).
    leaders: std::collections::HashSet<i32>,
}

static STRAYS: std::sync::Mutex<Option<Strays>> = std::sync::Mutex::new(None);

fn strays() -> StraysGuard {
    StraysGuard(
        STRAYS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

struct StraysGuard(std::sync::MutexGuard<'static, Option<Strays>>);

impl std::ops::Deref for StraysGuard {
    type Target = Strays;
    fn deref(&self) -> &Strays {
        static EMPTY: std::sync::OnceLock<Strays> = std::sync::OnceLock::new();
        self.0
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(Strays::default))
    }
}

impl std::ops::DerefMut for StraysGuard {
    fn deref_mut(&mut self) -> &mut Strays {
        self.0.get_or_insert_with(Strays::default)
    }
}

/// Makes candor the reaper of its orphaned descendants (Linux's
/// `PR_SET_CHILD_SUBREAPER`): a process a command or hook started and left
/// behind, even one that left its process group, becomes candor's child
/// instead of init's, so candor can end it. Called once at start-up by the
/// server; `false` where the system does not offer it.
pub fn become_subreaper() -> bool {
    match nix::sys::prctl::set_child_subreaper(true) {
        Ok(()) => {
            SUBREAPER.store(true, std::sync::atomic::Ordering::Relaxed);
            // Killed strays die a moment later, and adopted orphans end
            // when they like: a sweep twice a second reaps them (and ends
            // strays of scopes that ended meanwhile).
            let swept = std::thread::Builder::new()
                .name("candor-reaper".into())
                .spawn(|| {
                    loop {
                        std::thread::sleep(REAP_EVERY);
                        end_strays();
                    }
                });
            if let Err(e) = swept {
                tracing::warn!(error = %e, "cannot start the reaper thread; zombies may stay until candor exits");
            }
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot become a child subreaper; processes that leave their group may outlive their call");
            false
        }
    }
}

/// The most rounds of one sweep: killing a stray makes its children
/// orphans, adopted in their turn.
const SWEEP_ROUNDS: usize = 8;

/// How often the subreaper sweeps by itself.
const REAP_EVERY: Duration = Duration::from_millis(500);

/// Kills candor's adopted children whose scope has ended, and reaps those
/// killed before.
pub fn end_strays() {
    // Without the subreaper nothing is adopted, and nothing was killed here.
    if !SUBREAPER.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let ours = format!("{}-", std::process::id());
    let mut strays = strays();
    for _ in 0..SWEEP_ROUNDS {
        let mut more = false;
        // Reap what was killed before (never a pid tokio waits for: those
        // carry a live scope, or were not killed here).
        reap(&mut strays.killed);
        let children = adopted_children();
        // A leader tokio has reaped is no longer a child.
        strays
            .leaders
            .retain(|pid| children.binary_search(pid).is_ok());
        for pid in children {
            if strays.killed.contains(&pid) || strays.leaders.contains(&pid) {
                continue;
            }
            // Only what candor's own groups started (a process that cleared
            // its environment is not told apart from one candor did not
            // start).
            let scope = scope_of(pid);
            if scope.is_none() && is_zombie(pid) {
                // An adopted orphan that ended by itself (as a subreaper,
                // every child of candor's that is not a leader is adopted).
                let _ = nix::sys::wait::waitpid(
                    Pid::from_raw(pid),
                    Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                );
                continue;
            }
            let stray = scope
                .is_some_and(|scope| scope.starts_with(&ours) && !strays.live.contains(&scope));
            if stray {
                tracing::info!(pid, "ending a process that outlived its call");
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                strays.killed.insert(pid);
                more = true;
            }
        }
        if !more {
            break;
        }
        // Let the killed die (and their children be adopted) before the
        // next round.
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(|s| s == "Z"))
        })
        .unwrap_or(false)
}

/// candor is ending: every child it started, and every descendant it
/// adopted, is killed (background commands too), in rounds, and reaped.
/// Only in the server (the subreaper); in a process that runs candor among
/// other things this is [`end_strays`].
pub fn end_everything() {
    if !SUBREAPER.load(std::sync::atomic::Ordering::Relaxed) {
        end_strays();
        return;
    }
    let ours = format!("{}-", std::process::id());
    let mut strays = strays();
    for _ in 0..SWEEP_ROUNDS {
        let mut more = false;
        for pid in own_children() {
            let mine = strays.leaders.contains(&pid)
                || scope_of(pid).is_some_and(|s| s.starts_with(&ours));
            if mine && !is_zombie(pid) {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                more = true;
            }
            if !strays.leaders.contains(&pid) || is_zombie(pid) {
                strays.killed.insert(pid);
            }
        }
        reap(&mut strays.killed);
        if !more {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps those of `killed` that have died (never a pid tokio waits for:
/// only strays are killed here), keeping the rest for later.
fn reap(killed: &mut std::collections::HashSet<i32>) {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    killed.retain(|pid| {
        !matches!(
            waitpid(Pid::from_raw(*pid), Some(WaitPidFlag::WNOHANG)),
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) | Err(_)
        )
    });
}

/// The children candor adopted (orphans reparented to the subreaper): the
/// kernel gives them to the first living thread of the process, its main
/// thread, so one list is read, not every thread's (a sweep runs at every
/// group's end).
fn adopted_children() -> Vec<i32> {
    let main = std::process::id();
    let mut pids: Vec<i32> = std::fs::read_to_string(format!("/proc/self/task/{main}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .collect();
    pids.sort_unstable();
    pids
}

/// candor's children, from every thread's `children` list.
fn own_children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The [`SCOPE_VAR`] of a process, from its environment.
fn scope_of(pid: i32) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(format!("/proc/{pid}/environ")).ok()?;
    let mut env = Vec::new();
    file.take(1024 * 1024).read_to_end(&mut env).ok()?;
    let prefix = format!("{SCOPE_VAR}=");
    env.split(|b| *b == 0)
        .find_map(|var| var.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The name of a signal number (`SIGKILL`), or the number.
pub fn signal_name(signal: i32) -> String {
    Signal::try_from(signal)
        .map(|s| s.as_str().to_owned())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's start, its first turn and its first call ask for the
    /// probe at once: it runs once, and all three get its answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_probe_runs_once_however_many_ask_while_it_runs() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let launcher = dir.path().join("launcher");
        std::fs::write(
            &launcher,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nsleep 0.3\necho '{{\"landlockAbi\":7,\"userNamespace\":false,\"mountNamespace\":false,\"pidNamespace\":false,\"networkNamespace\":false,\"seccomp\":true}}'\n",
                runs.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
        let asks: Vec<_> = (0..3)
            .map(|_| {
                let launcher = launcher.clone();
                tokio::spawn(async move { sandbox_probe(&launcher).await })
            })
            .collect();
        let mut answers = Vec::new();
        for ask in asks {
            answers.push(ask.await.unwrap());
        }
        let ran = std::fs::read_to_string(&runs).unwrap();
        assert_eq!(ran, "__sandbox --probe\n", "the probe ran more than once");
        for answer in answers {
            assert_eq!(answer.landlock_abi, 7);
            assert!(answer.seccomp && !answer.user_namespace);
        }
    }
}
