//! The session's permission mode: a session setting (ACP session modes use
//! these ids) that the permission policy reads. A leaf: it imports nothing
//! of candor's.

use serde::{Deserialize, Serialize};

/// The session's permission mode (ACP session modes use these ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Reads inside the project run; commands and edits ask.
    #[default]
    Default,
    /// Also edits inside the project run without asking.
    AcceptEdits,
    /// Only tools that change nothing may run.
    Plan,
    /// Nothing asks (deny rules and denying hooks still refuse).
    BypassPermissions,
}

impl Mode {
    /// Every mode, in the order a client lists them.
    pub const ALL: [Mode; 4] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::BypassPermissions,
    ];

    /// Whether a session in this mode asks less than one in `default`.
    pub fn asks_less_than_default(self) -> bool {
        matches!(self, Mode::AcceptEdits | Mode::BypassPermissions)
    }

    /// The mode with this ACP id (Claude Code's `defaultMode` values).
    pub fn from_id(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    /// What a client shows.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "Ask before changes",
            Mode::AcceptEdits => "Accept edits",
            Mode::Plan => "Plan (read-only)",
            Mode::BypassPermissions => "Bypass permissions",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Mode::Default => "Reads inside the project run; commands and edits ask first",
            Mode::AcceptEdits => "Edits inside the project run without asking; commands still ask",
            Mode::Plan => "Only tools that change nothing may run",
            Mode::BypassPermissions => "Nothing asks; deny rules and denying hooks still refuse",
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }
}
