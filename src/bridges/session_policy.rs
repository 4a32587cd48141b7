//! A session's policy as it is loaded: the policy file's hooks and rules,
//! then the user's Claude Code and Codex hooks and rules, and the project's
//! own when it is trusted (`super::project_trust`). A session starts with it
//! (`session::trust`), and `candor doctor` reports on it.

use std::path::Path;
use std::sync::Arc;

use super::session_context::SessionContext;
use crate::config::Config;
use crate::event_log::NoticeLevel;
use crate::interception::Policy;
use crate::interception::policy_file::PolicyFile;

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
    /// files among them: `super::project_trust::Offer`).
    pub scripts: Vec<std::path::PathBuf>,
    /// The hooks loaded, described.
    pub hooks: Vec<super::hook::HookSummary>,
    /// The MCP servers the user's and (when trusted) the project's
    /// configuration give.
    pub mcp: Vec<crate::tools::mcp::ServerSpec>,
    /// The subagent types the session may start: the built-ins, the
    /// user's definitions and (when trusted, for those that want it) the
    /// project's.
    pub agents: crate::subagents::Catalog,
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
    if let Err(e) = config.web_access() {
        notices.push((NoticeLevel::Warning, e));
    }
    let mut wants = Vec::new();
    let mut hooks = Vec::new();
    let mut scripts = Vec::new();
    let mut sandbox = Vec::new();
    // The user's Claude Code, then Codex, hooks and rules join the policy;
    // a broken settings file is a notice, never a failed session.
    if let Some(locations) = &config.claude {
        let mut loaded = super::claude::load(locations, context, trusted);
        sandbox.append(&mut loaded.sandbox);
        wants.append(&mut loaded.wants);
        scripts.append(&mut loaded.scripts);
        hooks.append(&mut loaded.summaries);
        notices.extend(loaded.merge_into(&mut policy, cwd, home, mode_set));
    }
    if let Some(locations) = &config.codex {
        let mut loaded = super::codex::load(locations, context, trusted);
        sandbox.append(&mut loaded.sandbox);
        wants.append(&mut loaded.wants);
        scripts.append(&mut loaded.scripts);
        hooks.append(&mut loaded.summaries);
        notices.extend(loaded.merge_into(&mut policy, cwd, home, mode_set));
    }
    // What a project's own sandbox settings would widen waits for trust,
    // like its hooks.
    let layers = sandbox_layers(config, cwd, sandbox);
    let (_, widening) = crate::sandbox::Sandbox::resolve(&layers, false);
    wants.extend(widening);
    policy.sandbox = crate::sandbox::Sandbox::resolve(&layers, trusted).0;
    // Its roots where their links lead now (`sandbox::ruleset`).
    policy.sandbox.pin_roots();
    let mcp = crate::bridges::mcp_config::configured(
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
    let agents = super::agent_definitions::load(config, cwd, trusted);
    notices.extend(
        agents
            .catalog
            .problems
            .iter()
            .map(|p| (NoticeLevel::Warning, p.clone())),
    );
    wants.extend(agents.wants);
    scripts.extend(agents.scripts);
    Ok(Built {
        policy,
        notices,
        wants,
        scripts,
        hooks,
        mcp: mcp.servers,
        agents: agents.catalog,
    })
}

/// The sandbox settings layers in the order they apply (`protocol/sandbox.md`,
/// "Settings"): the user's own files (Codex, Claude Code, candor's), then
/// the project's (Codex, Claude Code's project and local, candor's), which
/// only narrow until trusted, then Claude Code's managed settings.
fn sandbox_layers(
    config: &Config,
    cwd: &Path,
    bridged: Vec<crate::sandbox::Layer>,
) -> Vec<crate::sandbox::Layer> {
    use crate::sandbox::Layer;
    let home = config.user_home.as_deref();
    let managed = config.claude.as_ref().and_then(|c| c.managed_dir.clone());
    let rank = |l: &Layer| {
        if managed
            .as_ref()
            .is_some_and(|m| l.origin.starts_with(&*m.to_string_lossy()))
        {
            2
        } else {
            u8::from(l.project)
        }
    };
    let mut layers: Vec<Layer> = bridged;
    if let Ok(Some(keys)) = config.user_settings.as_ref().map(|s| s.sandbox.as_ref()) {
        let origin = "your candor config ([sandbox])".to_owned();
        layers.push(Layer::candor(origin, false, keys, cwd, home));
    }
    let project_file = cwd.join(crate::config::PROJECT_CONFIG);
    match crate::config::Settings::load(&project_file) {
        Ok(settings) => {
            if let Some(keys) = &settings.sandbox {
                layers.push(Layer::candor(
                    project_file.display().to_string(),
                    true,
                    keys,
                    cwd,
                    home,
                ));
            }
        }
        // A broken project file is the model config's problem to report;
        // its sandbox keys then narrow nothing.
        Err(e) => tracing::debug!(error = %e, "the project's sandbox keys were not read"),
    }
    // Stable: within a rank, the order read.
    layers.sort_by_key(rank);
    layers
}
