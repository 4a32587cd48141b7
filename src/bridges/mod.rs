//! Bridges: the user's existing Claude Code (and Codex) hooks and
//! permission rules, running in candor through the interception seam.
//!
//! A bridge reads the other tool's settings files when a session starts and
//! turns them into [`Loaded`]: pre-execute hooks (each a
//! [`crate::interception::PreToolHook`], so their rewrites go
//! through the same consistency unit as every other), post-execute hooks,
//! event hooks, permission rules and a starting mode, plus the problems it
//! met (a broken file never stops a session: the problem is a notice and
//! the other files still load). [`runner`] runs one command hook; the
//! bridges differ in what its exit code and output mean.
//!
//! This file declares them; what they share is in leaf files they import:
//! `loaded` ([`Loaded`]), `session_context` ([`SessionContext`]),
//! `settings_file` (reading a settings file safely), [`hook`] (the hook
//! table, its [`Matcher`], `CommandHook`).

pub mod agent_definitions;
pub mod claude;
pub mod codex;
pub mod command_files;
pub mod hook;
pub mod instructions;
mod loaded;
pub mod mcp_config;
pub mod project_trust;
pub mod runner;
mod session_context;
pub mod session_policy;
mod settings_file;

pub use hook::Matcher;
pub use loaded::Loaded;
pub use session_context::{SessionContext, TurnInfo};
pub(crate) use settings_file::read_settings;
