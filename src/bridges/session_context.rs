//! The session a bridge's hooks run for ([`SessionContext`]: what their
//! input names, the running turn).

use std::path::PathBuf;

/// The session a bridge's hooks run for (what their input names).
#[derive(Debug)]
pub struct SessionContext {
    pub session_id: String,
    /// candor's event log of the session (a hook's `transcript_path`).
    pub transcript_path: PathBuf,
    /// The session's root (`CLAUDE_PROJECT_DIR`).
    pub project_dir: PathBuf,
    /// `~` in permission rules and `if` filters.
    pub home: Option<PathBuf>,
    /// `CLAUDE_ENV_FILE`: where SessionStart hooks write `export` lines
    /// for the session's later Bash commands (`<log>.env`, beside the log).
    pub env_file: PathBuf,
    /// The running turn (Codex hooks are told its id and the model).
    turn: std::sync::Mutex<TurnInfo>,
}

/// The turn a hook runs in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnInfo {
    pub turn_id: String,
    pub model: Option<String>,
}

impl SessionContext {
    pub fn new(
        session_id: String,
        transcript_path: PathBuf,
        project_dir: PathBuf,
        home: Option<PathBuf>,
    ) -> Self {
        Self {
            session_id,
            env_file: transcript_path.with_extension("env"),
            transcript_path,
            project_dir,
            home,
            turn: std::sync::Mutex::new(TurnInfo::default()),
        }
    }

    pub fn turn(&self) -> TurnInfo {
        self.turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Called as each prompt turn starts.
    pub fn set_turn(&self, turn: TurnInfo) {
        *self
            .turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = turn;
    }
}
