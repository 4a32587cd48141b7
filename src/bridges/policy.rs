//! A session's policy as it is loaded: the policy file's hooks and rules,
//! then the user's Claude Code and Codex hooks and rules, and the project's
//! own when it is trusted (`super::trust`). A session starts with it
//! (`session::trust`), and `candor doctor` reports on it.

use std::sync::Arc;

use super::SessionContext;
use crate::config::Config;
use crate::event_log::NoticeLevel;
use crate::interception::Policy;
use crate::interception::scripted::PolicyFile;

/// A session's policy as loaded: the policy file's, then the user's Claude
/// Code and Codex hooks and rules (and the project's, when trusted).
pub struct Built {
    pub policy: Policy,
    /// What loading had to say (problems as warnings, remarks as info).
    pub notices: Vec<(NoticeLevel, String)>,
    /// What the project's settings want that only trust gives (applied
    /// when the build trusted the project).
    pub wants: Vec<String>,
    /// The paths the project's hooks name (trust binds to the project's
    /// files among them: `super::trust::Offer`).
    pub scripts: Vec<std::path::PathBuf>,
    /// The hooks loaded, described.
    pub hooks: Vec<super::hook::HookSummary>,
    /// The MCP servers the user's and (when trusted) the project's
    /// configuration give.
    pub mcp: Vec<crate::tools::mcp::ServerSpec>,
}

/// Builds a session's policy (see [`Built`]). A broken policy file is an
/// `Err`: candor does not run tools under a policy it could not read.
pub fn build(
    config: &Config,
    context: &Arc<SessionContext>,
    trusted: bool,
) -> Result<Built, String> {
    let cwd = &context.project_dir;
    let home = config.user_home.as_deref();
    let (mut policy, mode_set) = match &config.policy {
        Some(path) => {
            let file = PolicyFile::load(path)?;
            let policy = file.policy(cwd, home)?;
            (policy, file.mode.is_some())
        }
        None => (Policy::default(), false),
    };
    policy.rules.home = config.user_home.clone();
    // Without a home, the user's own settings were not read: said first.
    let mut notices: Vec<(NoticeLevel, String)> = config
        .home_unknown
        .iter()
        .map(|text| (NoticeLevel::Warning, text.clone()))
        .collect();
    let mut wants = Vec::new();
    let mut hooks = Vec::new();
    let mut scripts = Vec::new();
    // The user's Claude Code, then Codex, hooks and rules join the policy;
    // a broken settings file is a notice, never a failed session.
    if let Some(locations) = &config.claude {
        let mut loaded = super::claude::load(locations, context, trusted);
        wants.append(&mut loaded.wants);
        scripts.append(&mut loaded.scripts);
        hooks.append(&mut loaded.summaries);
        notices.extend(loaded.merge_into(&mut policy, cwd, home, mode_set));
    }
    if let Some(locations) = &config.codex {
        let mut loaded = super::codex::load(locations, context, trusted);
        wants.append(&mut loaded.wants);
        scripts.append(&mut loaded.scripts);
        hooks.append(&mut loaded.summaries);
        notices.extend(loaded.merge_into(&mut policy, cwd, home, mode_set));
    }
    let mcp = crate::bridges::mcp::configured(
        config.claude.as_ref(),
        config.codex.as_ref(),
        cwd,
        trusted,
    );
    wants.extend(mcp.wants);
    notices.extend(
        mcp.problems
            .into_iter()
            .map(|p| (NoticeLevel::Warning, format!("MCP settings {p}"))),
    );
    Ok(Built {
        policy,
        notices,
        wants,
        scripts,
        hooks,
        mcp: mcp.servers,
    })
}
