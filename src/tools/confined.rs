//! What a session's commands need to run confined (`protocol/sandbox.md`):
//! the launcher (the lean `candor-sandbox` beside candor's binary, or that
//! binary itself: `sandbox::launcher`), the session's private directory
//! (its `TMPDIR`, and the lifeline every launcher of the session holds,
//! so a sandbox ends with the session and with candor, even SIGKILLed),
//! and what this kernel gives (probed once per process). A [`Confiner`]
//! is shared by the session's calls and background shells; its last
//! clone, dropped with the session, removes the directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::tool_event::ToolEvent;
use crate::sandbox::{
    Answer, Boundary, Grants, HouseRef, Judge, Launch, Lifeline, Network, Probe, Proxy,
    ProxyConfig, Setup, Watch,
};

/// How long a launcher has to say whether the boundary holds.
pub const SETUP_WAIT: Duration = Duration::from_secs(10);
/// How long the proxy waits for the user's answer about a host: past the
/// session's own bound (`session::network::ASK_WAIT`), which answers first.
const JUDGE_WAIT: Duration = Duration::from_secs(330);
/// The most hosts one command may ask the user about.
pub const MAX_ASKS: usize = 8;
/// The most houses a session keeps (`sandbox::house`): its own boundary
/// and a subagent's or two do not take each other's place.
const MAX_HOUSES: usize = 3;
/// How long after a house's start a command waits for it to be ready
/// rather than start a launcher of its own: a house is ready a few
/// milliseconds after its start, and a room of it is set up in about one
/// (`BENCHMARKS.md`), where a launcher's own namespaces take more than two.
const HOUSE_WAIT: Duration = Duration::from_millis(100);

/// The session's sandbox runtime (cheap to clone).
#[derive(Debug, Clone)]
pub struct Confiner {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    launcher: Option<PathBuf>,
    /// The session's working directory where its links led when the
    /// session started.
    workdir: PathBuf,
    tmpdir: PathBuf,
    /// Why the session's directory or lifeline could not be made.
    broken: Option<String>,
    /// The spare launcher for the next command (ended before the
    /// lifeline and the directory).
    spare: std::sync::Mutex<Option<SpareLauncher>>,
    /// The session's houses, one per boundary its commands had lately
    /// (a subagent's narrower one beside the session's), the latest
    /// first (let go before the lifeline).
    houses: std::sync::Mutex<Vec<HouseSlot>>,
    // Dropped before the directory holding its socket.
    lifeline: Option<Lifeline>,
    /// The hosts the user allowed for the rest of the session (every
    /// command's door of the proxy lets them through).
    grants: Grants,
    /// Numbers the proxy's doors.
    doors: std::sync::atomic::AtomicU64,
    _dir: Option<tempfile::TempDir>,
}

/// A command ready to start: the launcher, the launch to give it, the
/// watch on its reports, and its door of the session's proxy (an
/// allowlist), which must live as long as the command.
#[derive(Debug)]
pub struct Launched {
    pub launcher: PathBuf,
    pub launch: Launch,
    pub watch: Watch,
    pub door: Option<Proxy>,
    /// A spare already waiting for the command, which goes to it as a
    /// `sandbox::Start` on the lifeline instead of on a new launcher's
    /// command line.
    pub spare: Option<Spared>,
}

/// A spare for the session's next confined command.
#[derive(Debug)]
pub enum Spared {
    /// A spare launcher already running (its process group and output):
    /// the Start goes to it ([`Watch::send`]).
    Launcher(
        Box<super::exec::ProcessGroup>,
        tokio::net::unix::pipe::Receiver,
    ),
    /// A room of the session's house (`sandbox::room`), made so, confined
    /// and waiting on its lifeline for the command's output pipe and Start
    /// ([`Watch::writer`]); dropping the watch ends it.
    Room(Box<super::running::Made>),
    /// A room whose last command ended (`InRoom::free`), waiting on its
    /// lifeline for the next one's output pipe and Start.
    Free(Box<super::running::InRoom>),
}

impl Spared {
    /// Whether it can run a command in `boundary` as its writable roots
    /// are now: a launcher confines itself once it has the command; a room
    /// holds rules on the roots as they were when it confined itself
    /// (`sandbox::ruleset::roots_now`).
    fn roots_hold(&self, boundary: &Boundary) -> bool {
        let made = match self {
            Spared::Launcher(..) => return true,
            Spared::Room(made) => made,
            Spared::Free(room) => room.made(),
        };
        made.roots == crate::sandbox::ruleset::roots_now(boundary)
    }
}

/// A spare started ahead for the session's next confined command.
#[derive(Debug)]
struct SpareLauncher {
    kind: Spared,
    watch: Watch,
    token: String,
    namespaces: crate::sandbox::Namespaces,
    /// The house it joined ahead.
    house: Option<HouseRef>,
}

/// The session's house for one boundary (`sandbox::house`): what it was
/// made for, and where it is once it said ready. A task holds its
/// process; dropping the slot lets the house go (it ends once nothing
/// runs in it).
#[derive(Debug)]
struct HouseSlot {
    boundary: Boundary,
    marks: Vec<crate::sandbox::Mark>,
    /// Set by the task that holds the house.
    state: tokio::sync::watch::Receiver<HouseState>,
    /// Asks for rooms (`sandbox::room`), by their lifeline tokens.
    rooms: tokio::sync::mpsc::UnboundedSender<String>,
    _retire: tokio::sync::oneshot::Sender<()>,
}

/// Where a session's house is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HouseState {
    /// Started at this instant, not ready yet.
    Starting(std::time::Instant),
    /// Ready: where it is.
    Ready(HouseRef),
    /// It did not get ready, or it was let go; none for this boundary.
    Gone,
}

impl HouseSlot {
    /// Ready, and a path its mounts covered is no longer under them (a
    /// bind that went with its name), or it ended (its init did): a house
    /// to replace.
    fn detached(&self) -> bool {
        matches!(&*self.state.borrow(),
            HouseState::Ready(h) if !crate::sandbox::house::covers(h.pid, &self.marks))
    }
}

/// The user, asked on the call's card by the session (`ToolEvent::NetworkAsk`).
struct CardJudge {
    events: tokio::sync::mpsc::UnboundedSender<ToolEvent>,
}

impl Judge for CardJudge {
    fn judge(
        &self,
        host: &str,
        port: u16,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + '_>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let asked = self.events.send(ToolEvent::NetworkAsk {
            host: host.to_owned(),
            port,
            reply,
        });
        Box::pin(async move {
            // No session to ask (a background command whose call ended).
            if asked.is_err() {
                return Answer::Refuse;
            }
            answer.await.unwrap_or(Answer::Unanswered)
        })
    }
}

impl Confiner {
    /// The session's directory (`candor-…` in the system's temporary
    /// directory, mode 0700) with `tmp/` (the commands' `TMPDIR`) and the
    /// lifeline's socket. Must be called inside the runtime. A directory
    /// or socket that cannot be made leaves commands unconfined, their
    /// cards saying why. `cwd` is the session's working directory, taken
    /// where its links lead now ([`Confiner::workdir`]).
    pub fn new(launcher: Option<PathBuf>, cwd: &Path) -> Confiner {
        let workdir = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
        let made = tempfile::Builder::new()
            .prefix("candor-")
            .tempdir()
            .map_err(|e| format!("the session's sandbox directory cannot be made: {e}"))
            .and_then(|dir| {
                // Named without links, as every writable root is.
                let real = std::fs::canonicalize(dir.path())
                    .map_err(|e| format!("the session's sandbox directory cannot be read: {e}"))?;
                let tmp = real.join("tmp");
                std::fs::create_dir(&tmp).map_err(|e| {
                    format!("the session's TMPDIR {} cannot be made: {e}", tmp.display())
                })?;
                let lifeline = Lifeline::bind(&dir.path().join("lifeline.sock"))
                    .map_err(|e| format!("the sandbox's lifeline cannot be bound: {e}"))?;
                Ok((dir, tmp, lifeline))
            });
        let inner = match made {
            Ok((dir, tmpdir, lifeline)) => Inner {
                launcher,
                workdir,
                tmpdir,
                broken: None,
                spare: std::sync::Mutex::new(None),
                houses: std::sync::Mutex::new(Vec::new()),
                lifeline: Some(lifeline),
                grants: Grants::default(),
                doors: std::sync::atomic::AtomicU64::new(0),
                _dir: Some(dir),
            },
            Err(why) => {
                tracing::warn!("{why}; commands run unconfined");
                Inner {
                    launcher,
                    workdir,
                    tmpdir: std::env::temp_dir(),
                    broken: Some(why),
                    spare: std::sync::Mutex::new(None),
                    houses: std::sync::Mutex::new(Vec::new()),
                    lifeline: None,
                    grants: Grants::default(),
                    doors: std::sync::atomic::AtomicU64::new(0),
                    _dir: None,
                }
            }
        };
        Confiner {
            inner: Arc::new(inner),
        }
    }

    /// The session's working directory as its commands' writable root:
    /// where its links led when the session started. A link a command
    /// puts in its place later is not followed (`sandbox::ruleset`).
    pub fn workdir(&self) -> &Path {
        &self.inner.workdir
    }

    /// The commands' `TMPDIR`.
    pub fn tmpdir(&self) -> &Path {
        &self.inner.tmpdir
    }

    /// candor's binary (the launcher, or what finds the lean one beside
    /// it), when known and usable.
    pub fn launcher(&self) -> Option<&Path> {
        self.inner
            .launcher
            .as_deref()
            .filter(|_| self.inner.broken.is_none())
    }

    /// What this kernel gives (asked once per process); nothing without a
    /// launcher.
    pub async fn probe(&self) -> &'static Probe {
        static NOTHING: std::sync::OnceLock<Probe> = std::sync::OnceLock::new();
        match self.launcher() {
            Some(launcher) => super::exec::sandbox_probe(launcher).await,
            None => NOTHING.get_or_init(|| {
                Probe::nothing("candor's launcher (its own binary) is not known to this server")
            }),
        }
    }

    /// The launch of one command in `boundary`, and the watch on its
    /// launcher's reports. With a network allowlist, the command's door of
    /// the session's proxy is opened: its judge asks the user through
    /// `events` (the call's), where its decisions are reported too.
    pub fn launch(
        &self,
        boundary: &Boundary,
        events: &tokio::sync::mpsc::UnboundedSender<ToolEvent>,
    ) -> Result<Launched, String> {
        self.launch_by(boundary, events, false)
    }

    /// [`launch`](Self::launch) of a new launcher for a command candor
    /// starts itself: the launcher no command could have changed
    /// (`sandbox::launcher::local`).
    pub fn launch_own(
        &self,
        boundary: &Boundary,
        events: &tokio::sync::mpsc::UnboundedSender<ToolEvent>,
    ) -> Result<Launched, String> {
        self.launch_by(boundary, events, true)
    }

    fn launch_by(
        &self,
        boundary: &Boundary,
        events: &tokio::sync::mpsc::UnboundedSender<ToolEvent>,
        local: bool,
    ) -> Result<Launched, String> {
        let (_, lifeline) = self.launcher_and_lifeline()?;
        let launcher = if local {
            crate::sandbox::launcher::local(boundary)
                .unwrap_or_else(|| crate::sandbox::launcher::RUNNING.into())
        } else {
            crate::sandbox::launcher::terminal(boundary)?
        };
        let door = self.door_for(boundary, events)?;
        let (token, watch) = lifeline.expect();
        let house = self.house_for(boundary);
        Ok(Launched {
            launcher,
            launch: launch_of(boundary, lifeline, token, door.as_ref(), house),
            watch,
            door,
            spare: None,
        })
    }

    /// [`launch`](Self::launch) for a command candor starts itself: the
    /// session's spare launcher when there is one for these namespaces
    /// (`Launched::spare` holds it, to be sent the command), else a
    /// launcher to start. A spare for other namespaces is let go.
    pub fn launch_local(
        &self,
        boundary: &Boundary,
        events: &tokio::sync::mpsc::UnboundedSender<ToolEvent>,
    ) -> Result<Launched, String> {
        let house = self.house_for(boundary);
        let taken = {
            let mut slot = crate::sync::lock(&self.inner.spare);
            // In the house this call may have, or in its own namespaces.
            let fits = boundary.confinement().is_some_and(|c| {
                slot.as_ref().is_some_and(|s| {
                    s.namespaces == c.namespaces
                        && (s.house.is_none() || s.house == house)
                        && s.kind.roots_hold(boundary)
                })
            });
            // Taken, or let go (killed with its group) when it does not fit.
            let spare = slot.take();
            spare.filter(|_| fits)
        };
        let Some(spare) = taken.or_else(|| self.room_now(boundary, house.as_ref())) else {
            return self.launch_own(boundary, events);
        };
        let (launcher, lifeline) = self.launcher_and_lifeline()?;
        let door = self.door_for(boundary, events)?;
        Ok(Launched {
            launcher,
            launch: launch_of(boundary, lifeline, spare.token, door.as_ref(), spare.house),
            watch: spare.watch,
            door,
            spare: Some(spare.kind),
        })
    }

    /// A room asked of the session's house for `boundary` now, when it is
    /// `house` (ready): a call that finds no spare (another command holds
    /// the session's room) waits a millisecond for a room rather than
    /// start a launcher.
    fn room_now(&self, boundary: &Boundary, house: Option<&HouseRef>) -> Option<SpareLauncher> {
        let c = boundary.confinement()?;
        let house = house?.clone();
        let (_, lifeline) = self.launcher_and_lifeline().ok()?;
        let roots = crate::sandbox::ruleset::roots_now(boundary);
        let (token, watch) = self.room_in(boundary, lifeline)?;
        let made = super::running::Made {
            token: token.clone(),
            house: house.clone(),
            roots,
        };
        Some(SpareLauncher {
            kind: Spared::Room(Box::new(made)),
            watch,
            token,
            namespaces: c.namespaces,
            house: Some(house),
        })
    }

    /// Takes back a room whose command ended ([`super::running::InRoom::
    /// free`]) as the session's spare for `boundary`, when it is in the
    /// session's house for `boundary` and no spare is waiting (the next
    /// call checks the house's paths and the roots before it takes it); else
    /// lets it go (it ends). Without one, a spare is made as after any
    /// command ([`spare_soon`](Self::spare_soon)).
    pub fn room_back(&self, boundary: &Boundary, room: Option<super::running::InRoom>) {
        if let (Some(room), Some(c)) = (room, boundary.confinement())
            // Without Landlock's signal scope the room's sweep alone ends
            // what its command left, which a process forking on as it goes
            // can outrun (`sandbox::room`): such a room serves one command,
            // and the house's init, woken by its end, sweeps on.
            && c.landlock.scopes_signals()
            && let Some(house) = self.house_of(boundary).filter(|h| *h == room.made().house)
        {
            let mut slot = crate::sync::lock(&self.inner.spare);
            if slot.is_none() {
                *slot = Some(SpareLauncher {
                    token: room.made().token.clone(),
                    watch: crate::sandbox::Watch::closed(),
                    namespaces: c.namespaces,
                    house: Some(house),
                    kind: Spared::Free(Box::new(room)),
                });
                return;
            }
        }
        self.spare_soon(boundary);
    }

    /// Starts a spare launcher for the session's next command in
    /// `boundary`'s namespaces (`sandbox::spare`), unless there is one for
    /// them, the boundary does not confine, or no launcher was chosen yet
    /// (the probe has not run); a spare for other namespaces (the user
    /// changed the network since) is let go. Its setup runs while the
    /// session does other work; the next command only sends it the command.
    pub fn spare_soon(&self, boundary: &Boundary) {
        let Some(c) = boundary.confinement() else {
            return;
        };
        let Some(launcher) = crate::sandbox::launcher::local(boundary) else {
            return;
        };
        let Ok((_, lifeline)) = self.launcher_and_lifeline() else {
            return;
        };
        let house = match self.house_soon(boundary, &launcher, lifeline) {
            HouseState::Ready(house) => Some(house),
            // Once it is ready, its room is the spare (`keep_house`'s
            // `on_ready`): no namespaces made for nothing meanwhile.
            HouseState::Starting(_) => return,
            HouseState::Gone => None,
        };
        let mut slot = crate::sync::lock(&self.inner.spare);
        if slot
            .as_ref()
            .is_some_and(|s| s.namespaces == c.namespaces && s.house == house)
        {
            return;
        }
        // One for other namespaces is let go (killed with its group).
        *slot = None;
        // In the house: a room of it, made by its init (no process start
        // but the command's own).
        if let Some(spare) = self.room_now(boundary, house.as_ref()) {
            *slot = Some(spare);
            return;
        }
        let (token, watch) = lifeline.expect();
        let spare = crate::sandbox::Spare {
            build: crate::sandbox::launcher::BUILD.into(),
            lifeline: lifeline.path().to_owned(),
            token: token.clone(),
            namespaces: c.namespaces,
            house: house.clone(),
        };
        let started = super::exec::sandbox_spare(&launcher, &spare, self.workdir())
            .and_then(|(cmd, output)| Ok((super::exec::ProcessGroup::spawn(cmd)?, output)));
        match started {
            Ok((group, output)) => {
                *slot = Some(SpareLauncher {
                    kind: Spared::Launcher(Box::new(group), output),
                    watch,
                    token,
                    namespaces: c.namespaces,
                    house,
                });
            }
            Err(e) => tracing::debug!("no spare sandbox launcher: {e}"),
        }
    }

    /// Starts the session's house for `boundary` (`sandbox::house`) unless
    /// it has one for it, and lets the longest unused go past
    /// [`MAX_HOUSES`]; where the house for a call in `boundary` is now
    /// (ready as [`house_for`](Self::house_for) would find it). Gone for a
    /// boundary a house cannot hold (without user, mount and PID
    /// namespaces) or with an allowlist (each command has its own door of
    /// the proxy, in its own network namespace).
    fn house_soon(&self, boundary: &Boundary, launcher: &Path, lifeline: &Lifeline) -> HouseState {
        let Some(c) = boundary.confinement() else {
            return HouseState::Gone;
        };
        if !crate::sandbox::house::can_house(c)
            || matches!(boundary.network, Network::Allowlist { .. })
        {
            return HouseState::Gone;
        }
        let marks = crate::sandbox::house::marks(boundary);
        let mut houses = crate::sync::lock(&self.inner.houses);
        // One made for this boundary before its paths changed, or whose
        // mounts no longer cover them (or that ended), is let go.
        houses.retain(|h| h.boundary != *boundary || (h.marks == marks && !h.detached()));
        // The one kept: its marks are the paths' now, and its mounts
        // cover them if it is ready.
        if let Some(at) = houses.iter().position(|h| h.boundary == *boundary) {
            let h = houses.remove(at);
            let state = h.state.borrow().clone();
            houses.insert(0, h);
            return state;
        }
        let (token, watch) = lifeline.expect();
        let house = crate::sandbox::House {
            build: crate::sandbox::launcher::BUILD.into(),
            lifeline: lifeline.path().to_owned(),
            token,
            boundary: boundary.clone(),
            marks: marks.clone(),
        };
        let started = super::exec::sandbox_house(launcher, &house, self.workdir())
            .and_then(|(cmd, output)| Ok((super::exec::ProcessGroup::spawn(cmd)?, output)));
        let (group, output) = match started {
            Ok(started) => started,
            Err(e) => {
                tracing::debug!("no sandbox house: {e}");
                return HouseState::Gone;
            }
        };
        let starting = HouseState::Starting(std::time::Instant::now());
        let (state, state_seen) = tokio::sync::watch::channel(starting.clone());
        let (retire, retired) = tokio::sync::oneshot::channel();
        let (rooms, asked) = tokio::sync::mpsc::unbounded_channel();
        // Once it is ready, the session's spare moves into it (a spare
        // started meanwhile made namespaces of its own).
        let session = Arc::downgrade(&self.inner);
        let spare_boundary = boundary.clone();
        let on_ready = move || {
            if let Some(inner) = session.upgrade() {
                Confiner { inner }.spare_soon(&spare_boundary);
            }
        };
        tokio::spawn(keep_house(
            group,
            (output, watch),
            c.clone(),
            state,
            (retired, asked),
            on_ready,
        ));
        houses.insert(
            0,
            HouseSlot {
                boundary: boundary.clone(),
                marks,
                state: state_seen,
                rooms,
                _retire: retire,
            },
        );
        // The longest unused is let go.
        houses.truncate(MAX_HOUSES);
        starting
    }

    /// When the session's house for `boundary` is starting, waits for it
    /// (ended by `cancel`, and at most until `HOUSE_WAIT` (100 ms) after its
    /// start), then asks it for a room for the command: a session's first
    /// command, arriving while its house gets ready, runs in a room rather
    /// than make namespaces of its own.
    pub async fn house_settled(
        &self,
        boundary: &Boundary,
        cancel: &tokio_util::sync::CancellationToken,
    ) {
        let mut state = {
            let houses = crate::sync::lock(&self.inner.houses);
            match houses.iter().find(|h| h.boundary == *boundary) {
                Some(h) => h.state.clone(),
                None => return,
            }
        };
        let since = match &*state.borrow() {
            HouseState::Starting(since) => *since,
            _ => return,
        };
        let settled = state.wait_for(|s| !matches!(s, HouseState::Starting(_)));
        tokio::select! {
            _ = tokio::time::timeout_at((since + HOUSE_WAIT).into(), settled) => {}
            _ = cancel.cancelled() => return,
        }
        // The room the house's `on_ready` asked for, or one asked now.
        self.spare_soon(boundary);
    }

    /// The session's house for `boundary`, when it is ready (what a call
    /// takes checks its paths again: [`house_for`](Self::house_for)).
    fn house_of(&self, boundary: &Boundary) -> Option<HouseRef> {
        let houses = crate::sync::lock(&self.inner.houses);
        let h = houses.iter().find(|h| h.boundary == *boundary)?;
        match &*h.state.borrow() {
            HouseState::Ready(house) => Some(house.clone()),
            _ => None,
        }
    }

    /// The session's house for a call in `boundary`: made for exactly
    /// this boundary, ready, and its paths still the files its mounts
    /// cover.
    fn house_for(&self, boundary: &Boundary) -> Option<HouseRef> {
        let houses = crate::sync::lock(&self.inner.houses);
        let h = houses.iter().find(|h| h.boundary == *boundary)?;
        let HouseState::Ready(house) = h.state.borrow().clone() else {
            return None;
        };
        let covered = crate::sandbox::house::marks(boundary) == h.marks
            && crate::sandbox::house::covers(house.pid, &h.marks);
        covered.then_some(house)
    }

    /// Asks the session's house for `boundary` for a room
    /// (`sandbox::room`): its token and the watch on its lifeline.
    fn room_in(&self, boundary: &Boundary, lifeline: &Lifeline) -> Option<(String, Watch)> {
        let houses = crate::sync::lock(&self.inner.houses);
        let h = houses.iter().find(|h| h.boundary == *boundary)?;
        let (token, watch) = lifeline.expect_room();
        h.rooms.send(token.clone()).ok()?;
        Some((token, watch))
    }

    /// The launcher to run (the lean one when the probe chose it,
    /// `sandbox::launcher`) and the session's lifeline.
    fn launcher_and_lifeline(&self) -> Result<(PathBuf, &Lifeline), String> {
        let candor = self.launcher().ok_or_else(|| {
            self.inner
                .broken
                .clone()
                .unwrap_or_else(|| "candor's launcher is not known".into())
        })?;
        let launcher = crate::sandbox::launcher::chosen()
            .unwrap_or(candor)
            .to_owned();
        let lifeline = self
            .inner
            .lifeline
            .as_ref()
            .ok_or("the sandbox's lifeline is not there")?;
        Ok((launcher, lifeline))
    }

    /// The command's door of the proxy, when `boundary` confines it to an
    /// allowlist.
    fn door_for(
        &self,
        boundary: &Boundary,
        events: &tokio::sync::mpsc::UnboundedSender<ToolEvent>,
    ) -> Result<Option<Proxy>, String> {
        match &boundary.network {
            Network::Allowlist { domains } if boundary.confinement().is_some() => {
                self.door(domains, events).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A command's door of the session's proxy, in the session's
    /// directory, letting through `domains` and the session's grants, and
    /// asking the user about any other host.
    fn door(
        &self,
        domains: &[String],
        events: &tokio::sync::mpsc::UnboundedSender<ToolEvent>,
    ) -> Result<Proxy, String> {
        let dir = self
            .inner
            ._dir
            .as_ref()
            .ok_or("the session's sandbox directory is not there")?;
        let n = self
            .inner
            .doors
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let reports = events.clone();
        let config = ProxyConfig {
            allowlist: crate::sandbox::Allowlist::new(domains),
            grants: self.inner.grants.clone(),
            judge: Arc::new(CardJudge {
                events: events.clone(),
            }),
            judge_wait: JUDGE_WAIT,
            max_asks: MAX_ASKS,
            decisions: Arc::new(move |d| {
                let _ = reports.send(ToolEvent::Network(d));
            }),
        };
        Proxy::start(&dir.path().join(format!("proxy-{n}.sock")), config)
            .map_err(|e| format!("the network allowlist's proxy cannot listen: {e}"))
    }
}

/// The launch a launcher is given for a command in `boundary`.
fn launch_of(
    boundary: &Boundary,
    lifeline: &Lifeline,
    token: String,
    door: Option<&Proxy>,
    house: Option<HouseRef>,
) -> Launch {
    Launch {
        house,
        build: crate::sandbox::launcher::BUILD.into(),
        boundary: boundary.clone(),
        lifeline: Some(lifeline.path().to_owned()),
        token: Some(token),
        proxy: door.map(|d| d.path().to_owned()),
    }
}

/// Holds a house's process: once it said ready, where it is (`state`,
/// then `on_ready`), and asks it for the rooms `asked` names; when it is
/// let go (`retired` sent or dropped), tells it, and waits for its end
/// (once nothing runs in it). A house that did not get ready is killed
/// with its group. Its state is [`HouseState::Gone`] once it is not
/// ready.
async fn keep_house(
    group: super::exec::ProcessGroup,
    output: (tokio::net::unix::pipe::Receiver, Watch),
    c: crate::sandbox::Confinement,
    state: tokio::sync::watch::Sender<HouseState>,
    asks: (
        tokio::sync::oneshot::Receiver<()>,
        tokio::sync::mpsc::UnboundedReceiver<String>,
    ),
    on_ready: impl FnOnce(),
) {
    hold_house(group, output, c, &state, asks, on_ready).await;
    state.send_replace(HouseState::Gone);
}

async fn hold_house(
    mut group: super::exec::ProcessGroup,
    (output, mut watch): (tokio::net::unix::pipe::Receiver, Watch),
    c: crate::sandbox::Confinement,
    state: &tokio::sync::watch::Sender<HouseState>,
    (mut retired, mut asked): (
        tokio::sync::oneshot::Receiver<()>,
        tokio::sync::mpsc::UnboundedReceiver<String>,
    ),
    on_ready: impl FnOnce(),
) {
    use tokio::io::AsyncWriteExt as _;
    let _output = output;
    match watch.setup(SETUP_WAIT).await {
        Setup::Ready => {}
        Setup::Failed(why) => {
            tracing::debug!("no sandbox house: {why}");
            return;
        }
    }
    match group.id().map(|pid| HouseRef::of(pid, &c)) {
        Some(Ok(house)) => {
            state.send_replace(HouseState::Ready(house));
            on_ready();
        }
        Some(Err(e)) => {
            tracing::debug!("the sandbox house cannot be found: {e}");
            return;
        }
        None => return,
    }
    let Ok(mut words) = watch.writer(SETUP_WAIT).await else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut retired => break,
            Some(token) = asked.recv() => {
                let word = format!("{} {token}\n", crate::sandbox::room::ASK);
                if words.write_all(word.as_bytes()).await.is_err() {
                    break;
                }
            }
        }
    }
    // No room is asked of it from now on.
    state.send_replace(HouseState::Gone);
    let _ = words.write_all(crate::sandbox::house::RETIRE).await;
    let _ = group.child_mut().wait().await;
}

/// Waits for a launcher to say the boundary holds (bounded, and ended by
/// `cancel`): `Ok` when it does, else why not.
pub async fn ready(
    watch: &mut Watch,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(), Option<String>> {
    tokio::select! {
        setup = watch.setup(SETUP_WAIT) => match setup {
            Setup::Ready => Ok(()),
            Setup::Failed(why) => Err(Some(why)),
        },
        _ = cancel.cancelled() => Err(None),
    }
}
