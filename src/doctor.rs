//! `candor doctor [--cwd DIR] [--json]` (and `/doctor` in a session): what a
//! session in a directory would load, and why, so that "why isn't my hook
//! running?" has an answer without reading the protocol documents.
//!
//! The report is built from the very code a session starts with
//! (`session::trust::build`, the bridges, `Provider::for_session`), plus a
//! look at each settings file on its own (so a broken file's error has its
//! line and column), and what the kernel gives the sandbox (the probe the
//! caller ran) with the line a command would run with. Its JSON form is
//! documented in `protocol/doctor.md`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::bridges::hook::HookSummary;
use crate::bridges::{self, SessionContext, project_trust};
use crate::config::Config;
use crate::event_log::NoticeLevel;
use crate::providers::Provider;

/// Version of the JSON form.
pub const FORMAT: u32 = 1;

/// What a session in `directory` would load.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub format: u32,
    pub directory: PathBuf,
    /// The session's additional directories (`candor doctor --add-dir`,
    /// or a session's own for `/doctor`), as `crate::roots` took them.
    pub additional_directories: Vec<crate::event_log::AddedDirectory>,
    pub candor: Candor,
    pub provider: ProviderInfo,
    /// What the model may reach of the web: WebFetch and the provider's
    /// search.
    pub web: WebInfo,
    /// Every settings file candor would look at, in the order it reads them.
    pub settings: Vec<FileStatus>,
    pub hooks: Vec<HookSummary>,
    pub rules: Vec<RuleInfo>,
    /// The mode a new session starts in.
    pub mode: String,
    pub trust: TrustInfo,
    /// The MCP servers the user's and (when trusted) the project's
    /// configuration give a session here, one a name, the winning entry
    /// (the editor may give more at `session/new`).
    pub mcp_servers: Vec<McpServerInfo>,
    /// The instruction files a session here would give the model, in order.
    pub instructions: Vec<InstructionInfo>,
    /// What about them could not be loaded or was cut.
    pub instruction_notes: Vec<String>,
    /// Editor set-ups in candor's `editors/` for editors found on this machine.
    pub editors: Vec<EditorInfo>,
    /// What loading had to say, as a session would show it.
    pub notices: Vec<NoticeInfo>,
    /// What this kernel gives the sandbox, and what a command runs in.
    pub sandbox: SandboxInfo,
    /// The subagent types a session here may start, built-ins first.
    pub subagents: Vec<SubagentInfo>,
    /// Something is broken (`candor doctor` exits 1).
    pub broken: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candor {
    pub version: String,
    /// `CANDOR_HOME`.
    pub home: PathBuf,
    /// Where session logs go.
    pub sessions: PathBuf,
    /// Where candor's own log goes.
    pub logs: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    /// `anthropic`, `openai`, `openai-responses`, `scripted`, or `none`.
    pub name: String,
    pub model: Option<String>,
    /// The environment variable that holds its key (never the key).
    pub key_variable: Option<String>,
    pub key_present: bool,
    /// Whether prompts need the key: not for a server on this machine or
    /// a private network (`OPENAI_BASE_URL=http://localhost:11434/v1`).
    pub key_needed: bool,
    /// Why a session could not use it.
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebInfo {
    /// Whether the provider's own web search is offered to the model.
    pub search_offered: bool,
    /// How (the provider's tool and the rule) or why not.
    pub search: String,
    /// What WebFetch reaches (the user's `[web]` config).
    pub fetch: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStatus {
    /// `Claude Code`, `Codex` or `candor`.
    pub tool: String,
    /// `user`, `project`, `local`, `managed`, `policy`.
    pub source: String,
    pub path: PathBuf,
    /// `loaded`, `missing`, `skipped` or `error`.
    pub status: String,
    /// Why skipped, what the error is (with line and column), or what of a
    /// loaded file applies.
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleInfo {
    /// `allow`, `ask` or `deny`.
    pub kind: String,
    pub rule: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustInfo {
    /// `not needed` (the project's files want nothing that needs trust),
    /// `trusted`, `refused` (the user said never) or `untrusted`.
    pub state: String,
    pub by: Option<String>,
    /// What the project's own files want that only trust gives.
    pub wants: Vec<String>,
    /// The project files their hooks run, which trust binds to (path,
    /// size and digest, or why it cannot bind).
    pub files: Vec<String>,
    /// Untrusted or refused: how to trust (and why candor cannot, when it
    /// cannot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditorInfo {
    pub editor: String,
    /// Where candor's set-up for it is, in its repository.
    pub setup: String,
    /// What showed the editor is here.
    pub found: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    pub name: String,
    /// Where its entry comes from.
    pub source: String,
    /// What it runs or where it connects (header values left out).
    pub transport: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstructionInfo {
    pub path: PathBuf,
    /// `user` or `project`.
    pub scope: crate::event_log::InstructionScope,
    pub imported_by: Option<PathBuf>,
    /// The file's size in bytes.
    pub bytes: u64,
    /// Whether only its start would be given (the caps).
    pub cut: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeInfo {
    pub level: NoticeLevel,
    pub text: String,
}

/// What the kernel gives the sandbox and what a command here runs in.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInfo {
    /// What this kernel gives (`candor __sandbox --probe`).
    pub kernel: crate::sandbox::Probe,
    /// The same in words ("Landlock ABI 7, user, mount, PID, network
    /// namespaces, seccomp").
    pub kernel_summary: String,
    /// The binary that launches sandboxed commands, once chosen
    /// (`sandbox::launcher`): the lean `candor-sandbox`, or candor's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launcher: Option<std::path::PathBuf>,
    /// `read-only`, `workspace-write` or `full-access`.
    pub preset: String,
    /// `off`, `allowlist` or `on`.
    pub network: String,
    pub allowed_domains: Vec<String>,
    /// The preset and network in words ("workspace-write, network off").
    pub settings: String,
    /// The line a command's card would carry: "sandbox: writes to … only,
    /// network off, processes end with the call", or "not sandboxed: …".
    pub runs_with: String,
    /// What that boundary does not hold, one sentence each.
    pub not_held: Vec<String>,
    /// The boundary a command would be given (`protocol/sandbox.md`, "The
    /// `Boundary` record").
    pub boundary: crate::sandbox::Boundary,
    /// Every Bash call fails here: the settings say to fail where the
    /// kernel cannot hold the sandbox (`failIfUnavailable`), and it cannot.
    pub commands_fail: bool,
}

/// The sandbox a command here runs in: the session's own, or what the
/// settings give, with the additional directories and Read deny rules.
fn sandbox_of(
    session: Option<&crate::sandbox::Sandbox>,
    built: Option<&bridges::session_policy::Built>,
    roots: &[crate::event_log::AddedDirectory],
) -> crate::sandbox::Sandbox {
    match (session, built) {
        (Some(s), _) => s.clone(),
        (None, Some(b)) => {
            let mut rules = b.policy.rules.clone();
            rules.roots = crate::roots::real(roots);
            crate::interception::sandbox::for_rules(b.policy.sandbox.clone(), &rules)
        }
        (None, None) => crate::sandbox::Sandbox::default(),
    }
}

/// The sandbox part of a report: `sandbox` (a session's own, with its
/// user's choices, or the one the settings give) as `kernel` holds it.
fn sandbox_info(
    cwd: &Path,
    config: &Config,
    sandbox: &crate::sandbox::Sandbox,
    kernel: &crate::sandbox::Probe,
) -> SandboxInfo {
    let tmpdir = std::env::temp_dir();
    let boundary = sandbox.boundary(cwd, &tmpdir, config.user_home.as_deref(), kernel);
    let confined = boundary.confinement().is_some();
    SandboxInfo {
        kernel: kernel.clone(),
        kernel_summary: kernel.describe(),
        launcher: crate::sandbox::launcher::chosen().map(std::path::Path::to_owned),
        preset: sandbox.preset.id().into(),
        network: sandbox.network.id().into(),
        allowed_domains: sandbox.allowed_domains.clone(),
        settings: sandbox.describe(),
        runs_with: boundary.summary(),
        not_held: boundary.not_enforced(),
        commands_fail: !confined
            && sandbox.fail_if_unavailable
            && sandbox.preset != crate::sandbox::Preset::FullAccess,
        boundary,
    }
}

/// A subagent type as `candor doctor` lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentInfo {
    pub name: String,
    /// `built-in`, or its file.
    pub source: String,
    pub tools: Option<Vec<String>>,
    pub disallowed_tools: Vec<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub max_turns: Option<u32>,
    pub hooks: bool,
    /// What its definition asks for that candor does not do.
    pub not_honoured: Vec<String>,
}

fn subagent_info(d: &crate::subagents::Definition) -> SubagentInfo {
    SubagentInfo {
        name: d.name.clone(),
        source: d.source.describe(),
        tools: d.tools.clone(),
        disallowed_tools: d.disallowed_tools.clone(),
        model: d.model.clone(),
        permission_mode: d.permission_mode.map(|m| m.id().to_owned()),
        max_turns: d.max_turns,
        hooks: d.hooks.is_some(),
        not_honoured: d.not_honoured.clone(),
    }
}

/// Where the project stands with trust (`info`), and the policy a session
/// there would run with: the trusted build when trusted.
fn standing(
    config: &Config,
    context: &Arc<SessionContext>,
    untrusted: bridges::session_policy::Built,
    session: Option<(&str, &str)>,
    trust_info: &mut TrustInfo,
) -> Option<bridges::session_policy::Built> {
    let cwd = &context.project_dir;
    let offer = project_trust::Offer::new(cwd, untrusted.wants.clone(), &untrusted.scripts);
    trust_info.wants = untrusted.wants.clone();
    trust_info.files = offer.render_files();
    let store = project_trust::Store::new(&config.home);
    let answer = || Some(format!("your answer ({})", store.path().display()));
    let (state, by) = match project_trust::standing(config, &store, cwd, &offer) {
        project_trust::Standing::Recorded { by } => ("trusted", Some(by)),
        project_trust::Standing::Answered { trusted: true } => ("trusted", answer()),
        _ if session.is_some_and(|(digest, _)| digest == offer.digest) => {
            ("trusted", session.map(|(_, by)| by.to_owned()))
        }
        project_trust::Standing::Answered { trusted: false } => ("refused", answer()),
        project_trust::Standing::Unknown => ("untrusted", None),
    };
    trust_info.state = state.into();
    trust_info.by = by;
    if state != "trusted" {
        trust_info.how = Some(offer.blocked().unwrap_or_else(|| {
            format!(
                "its hooks, allow rules and mode wait for a person: type /trust in a session (/trust always to remember), or run `candor trust {}` in a terminal; an editor's automatic approval never trusts a project",
                cwd.display()
            )
        }));
    }
    if trust_info.state == "trusted" {
        bridges::session_policy::build(config, context, true).ok()
    } else {
        Some(untrusted)
    }
}

/// Builds the report for a session in `cwd`, on a kernel that gives
/// `kernel` (`tools::exec::sandbox_probe`).
pub fn report(config: &Config, cwd: &Path, kernel: &crate::sandbox::Probe) -> Report {
    report_in(config, cwd, None, &[], kernel, None)
}

/// The report for a session in `cwd` with the additional directories
/// `dirs` (`candor doctor --add-dir`), checked as a session checks an
/// editor's (`crate::roots`): one refused is an error, and none is used.
pub fn report_adding(
    config: &Config,
    cwd: &Path,
    dirs: &[PathBuf],
    kernel: &crate::sandbox::Probe,
) -> Report {
    let guard = crate::roots::Guard {
        home: config.user_home.as_deref(),
        state: Some(&config.home),
    };
    match crate::roots::check(dirs, cwd, guard) {
        Ok(roots) => report_in(config, cwd, None, &roots, kernel, None),
        Err(why) => {
            let mut report = report_in(config, cwd, None, &[], kernel, None);
            report.notices.push(NoticeInfo {
                level: NoticeLevel::Error,
                text: format!("A session here would not open with these directories: {why}"),
            });
            report.broken = true;
            report
        }
    }
}

/// The report for a session in `cwd` with the additional directories
/// `roots` that trusted (`session`) the offer of this digest, by this
/// (`/trust`, for the session), whose commands run in `sandbox` (the
/// session's, with the user's `/sandbox` choices; `None`: what the
/// settings give) on a kernel that gives `kernel`.
pub fn report_in(
    config: &Config,
    cwd: &Path,
    session: Option<(&str, &str)>,
    roots: &[crate::event_log::AddedDirectory],
    kernel: &crate::sandbox::Probe,
    sandbox: Option<&crate::sandbox::Sandbox>,
) -> Report {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    let context = Arc::new(SessionContext::new(
        "doctor".into(),
        config.sessions_dir().join("doctor.jsonl"),
        cwd.clone(),
        config.user_home.clone(),
    ));
    let mut broken = false;
    let mut settings = files(config, &cwd);
    broken |= settings.iter().any(|f| f.status == "error");
    // What a session would load: untrusted first, as a session starts.
    let mut trust_info = TrustInfo {
        state: "not needed".into(),
        by: None,
        wants: Vec::new(),
        files: Vec::new(),
        how: None,
    };
    let built = match bridges::session_policy::build(config, &context, false) {
        Err(e) => {
            broken = true;
            settings.push(FileStatus {
                tool: "candor".into(),
                source: "policy".into(),
                path: config.policy.clone().unwrap_or_default(),
                status: "error".into(),
                detail: Some(format!("{e}; a session here fails to start")),
            });
            None
        }
        Ok(untrusted) if untrusted.wants.is_empty() => Some(untrusted),
        Ok(untrusted) => standing(config, &context, untrusted, session, &mut trust_info),
    };
    let (mcp_servers, instructions, instruction_notes) =
        loaded_beside(config, (&cwd, roots), built.as_ref());
    let sandbox = sandbox_of(sandbox, built.as_ref(), roots);
    let sandbox = sandbox_info(&cwd, config, &sandbox, kernel);
    broken |= sandbox.commands_fail;
    let web = web(config, &cwd, built.as_ref());
    let subagents: Vec<SubagentInfo> = built
        .as_ref()
        .map(|b| b.agents.definitions.iter().map(subagent_info).collect())
        .unwrap_or_default();
    let (hooks, rules, mode, notices) = match built {
        Some(b) => {
            let mut rules = Vec::new();
            for (kind, list) in [
                ("allow", &b.policy.rules.allow),
                ("ask", &b.policy.rules.ask),
                ("deny", &b.policy.rules.deny),
            ] {
                rules.extend(list.iter().map(|r| RuleInfo {
                    kind: kind.into(),
                    rule: r.text().to_owned(),
                }));
            }
            let notices: Vec<NoticeInfo> = b
                .notices
                .into_iter()
                .map(|(level, text)| NoticeInfo { level, text })
                .collect();
            (b.hooks, rules, b.policy.mode.id().to_owned(), notices)
        }
        None => (Vec::new(), Vec::new(), "default".into(), Vec::new()),
    };
    if matches!(trust_info.state.as_str(), "untrusted" | "refused") {
        for f in settings.iter_mut().filter(|f| {
            f.status == "loaded"
                && matches!(f.source.as_str(), "project" | "local")
                && f.tool != "candor"
        }) {
            f.detail = Some(
                "the project is not trusted: only what restricts applies (deny and ask rules, plan mode); its hooks and allow rules wait for trust".into(),
            );
        }
    }
    let provider = provider(config, &cwd);
    broken |= provider.problem.is_some();
    Report {
        format: FORMAT,
        directory: cwd,
        additional_directories: roots.to_vec(),
        candor: Candor {
            version: env!("CARGO_PKG_VERSION").into(),
            home: config.home.clone(),
            sessions: config.sessions_dir(),
            logs: "stderr (the editor's log of its agent); RUST_LOG sets the level".into(),
        },
        provider,
        web,
        settings,
        hooks,
        rules,
        mode,
        trust: trust_info,
        mcp_servers,
        instructions,
        subagents,
        instruction_notes,
        editors: editors(config),
        notices,
        sandbox,
        broken,
    }
}

/// What a session here may reach of the web: whether the provider's
/// search is offered (and why not), and what WebFetch reaches.
fn web(config: &Config, cwd: &Path, built: Option<&bridges::session_policy::Built>) -> WebInfo {
    let p = Provider::for_session(config, cwd);
    let offered = match (p.web_search(), built) {
        (None, _) => Err(
            "this provider has none (Anthropic's API and the OpenAI Responses API have one)"
                .to_owned(),
        ),
        (Some(_), None) => Err("the policy could not be built".to_owned()),
        (Some(tool), Some(b)) => crate::interception::policy::search_offered(&b.policy.rules)
            .map(|by| format!("{tool}; {by}; it runs at the provider, before candor could ask")),
    };
    let fetch = match config.web_access() {
        Err(e) => e,
        Ok(a) => {
            let mut said =
                "public addresses over https (http upgraded), each domain by the WebFetch rules"
                    .to_owned();
            if a.addresses != crate::web::address::Addresses::default() {
                said.push_str("; your config allows some addresses that are not public");
            }
            if !a.http_hosts.is_empty() {
                said.push_str(&format!("; plain http for {}", a.http_hosts.join(", ")));
            }
            format!("{said}; {} s a fetch", a.timeout.as_secs())
        }
    };
    WebInfo {
        search_offered: offered.is_ok(),
        search: offered.unwrap_or_else(|why| why),
        fetch,
    }
}

/// The MCP servers and the instruction files a session here would load
/// beside its policy (the instruction files under its Read deny rules).
fn loaded_beside(
    config: &Config,
    (cwd, roots): (&Path, &[crate::event_log::AddedDirectory]),
    built: Option<&bridges::session_policy::Built>,
) -> (Vec<McpServerInfo>, Vec<InstructionInfo>, Vec<String>) {
    let specs = built.map(|b| b.mcp.clone()).unwrap_or_default();
    let servers = crate::tools::mcp::choose(specs)
        .servers
        .into_iter()
        .map(|s| McpServerInfo {
            name: s.name,
            source: s.source.describe(),
            transport: s.transport.describe(),
        })
        .collect();
    let denies = built
        .map(|b| crate::interception::policy::ReadDenies::of(&b.policy.rules))
        .unwrap_or_default();
    let (files, notes) = bridges::instructions::load_in(
        cwd,
        config.user_home.as_deref(),
        config.codex.as_ref().and_then(|c| c.home.as_deref()),
        config.claude.as_ref().and_then(|c| c.user_dir.as_deref()),
        &denies,
        &crate::roots::real(roots),
    );
    let files = files
        .into_iter()
        .map(|f| InstructionInfo {
            path: f.path,
            scope: f.scope,
            imported_by: f.imported_by,
            bytes: f.bytes,
            cut: f.cut,
        })
        .collect();
    (servers, files, notes)
}

fn provider(config: &Config, cwd: &Path) -> ProviderInfo {
    let p = Provider::for_session(config, cwd);
    let (key_variable, key_present) = match p.name() {
        "anthropic" => (
            Some("ANTHROPIC_API_KEY".to_owned()),
            config.anthropic_api_key.is_some(),
        ),
        "openai" | "openai-responses" => (
            Some("OPENAI_API_KEY".to_owned()),
            config.openai_api_key.is_some(),
        ),
        _ => (None, false),
    };
    let key_needed = key_variable.is_some()
        && !config.model_config(Some(cwd)).is_ok_and(|m| {
            p.name().starts_with("openai")
                && crate::providers::is_local_endpoint(&m.openai_base_url)
        });
    let problem = match &p {
        Provider::Unconfigured { reason } => Some(reason.clone()),
        _ if key_needed && !key_present => Some(format!(
            "{} is not set: prompts will fail until it is",
            key_variable.as_deref().unwrap_or_default()
        )),
        _ => None,
    };
    ProviderInfo {
        name: p.name().into(),
        model: p.model().map(str::to_owned),
        key_variable,
        key_present,
        key_needed,
        problem,
    }
}

/// Each settings file, looked at on its own.
fn files(config: &Config, cwd: &Path) -> Vec<FileStatus> {
    let mut out = Vec::new();
    let status = |tool: &str, source: &str, path: PathBuf, toml: bool| -> FileStatus {
        let (status, detail) = match bridges::read_settings(&path) {
            Ok(None) => ("missing", None),
            Err(e) => ("error", Some(format!("{e}; skipped"))),
            Ok(Some(text)) => {
                let parsed = if toml {
                    toml::from_str::<toml::Table>(&text)
                        .map(|_| ())
                        .map_err(|e| e.to_string().trim().replace('\n', " "))
                } else {
                    match serde_json::from_str::<serde_json::Value>(&text) {
                        Ok(serde_json::Value::Object(_)) => Ok(()),
                        Ok(_) => Err("not a JSON object".to_owned()),
                        Err(e) => Err(format!(
                            "invalid JSON at line {}, column {}: {e}",
                            e.line(),
                            e.column()
                        )),
                    }
                };
                match parsed {
                    Ok(()) => ("loaded", None),
                    Err(e) => ("error", Some(format!("{e}; skipped"))),
                }
            }
        };
        FileStatus {
            tool: tool.into(),
            source: source.into(),
            path,
            status: status.into(),
            detail,
        }
    };
    match (&config.user_settings, &config.user_file) {
        (Ok(_), Some(path)) => out.push(status("candor", "user", path.clone(), true)),
        (Ok(_), None) => {}
        (Err(e), path) => out.push(FileStatus {
            tool: "candor".into(),
            source: "user".into(),
            path: path.clone().unwrap_or_else(|| PathBuf::from("config.toml")),
            status: "error".into(),
            detail: Some(e.clone()),
        }),
    }
    let project_config = cwd.join(crate::config::PROJECT_CONFIG);
    out.push(status("candor", "project", project_config, true));
    match &config.claude {
        None => out.push(FileStatus {
            tool: "Claude Code".into(),
            source: "all".into(),
            path: PathBuf::new(),
            status: "skipped".into(),
            detail: Some("CANDOR_CLAUDE_HOOKS=0: Claude Code settings are not read".into()),
        }),
        Some(locations) => {
            for (source, path) in bridges::claude::files(locations, cwd) {
                out.push(status("Claude Code", source.name(), path, false));
            }
        }
    }
    match &config.codex {
        None => out.push(FileStatus {
            tool: "Codex".into(),
            source: "all".into(),
            path: PathBuf::new(),
            status: "skipped".into(),
            detail: Some("CANDOR_CODEX_HOOKS=0: Codex hooks are not read".into()),
        }),
        Some(locations) => {
            if let Some(home) = &locations.home {
                out.push(status("Codex", "user", home.join("hooks.json"), false));
                out.push(status("Codex", "user", home.join("config.toml"), true));
            }
            out.push(status(
                "Codex",
                "project",
                cwd.join(".codex/hooks.json"),
                false,
            ));
            out.push(status(
                "Codex",
                "project",
                cwd.join(".codex/config.toml"),
                true,
            ));
        }
    }
    out
}

/// candor's editor set-ups (`editors/` in its repository) for the editors
/// whose configuration is on this machine.
fn editors(config: &Config) -> Vec<EditorInfo> {
    let Some(home) = &config.user_home else {
        return Vec::new();
    };
    [
        ("Zed", "editors/zed/", ".config/zed"),
        ("JetBrains IDEs", "editors/jetbrains/", ".config/JetBrains"),
        ("Neovim", "editors/neovim/", ".config/nvim"),
        ("Emacs", "editors/emacs/", ".emacs.d"),
        ("Emacs", "editors/emacs/", ".config/emacs"),
    ]
    .into_iter()
    .filter_map(|(editor, setup, dir)| {
        let found = home.join(dir);
        found.exists().then(|| EditorInfo {
            editor: editor.into(),
            setup: setup.into(),
            found,
        })
    })
    .collect()
}

/// The report as text for a person (an 80-column terminal, or a message in
/// the editor).
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "candor {} · {}",
        r.candor.version,
        r.directory.display()
    );
    for root in &r.additional_directories {
        let _ = writeln!(out, "  also      {}", crate::roots::describe(root));
    }
    let _ = writeln!(out, "  home      {}", r.candor.home.display());
    let _ = writeln!(out, "  sessions  {}", r.candor.sessions.display());
    let _ = writeln!(out, "  logs      {}", r.candor.logs);
    let _ = writeln!(out, "\nModel");
    let p = &r.provider;
    let _ = writeln!(
        out,
        "  {}{}",
        p.name,
        p.model
            .as_ref()
            .map(|m| format!(", model {m}"))
            .unwrap_or_default()
    );
    if let Some(var) = &p.key_variable {
        let state = match (p.key_present, p.key_needed) {
            (true, _) => "set",
            (false, true) => "NOT SET",
            (false, false) => "not set: a local server needs none",
        };
        let _ = writeln!(out, "  key       ${var} ({state})");
    }
    if let Some(problem) = &p.problem {
        let _ = writeln!(out, "  problem   {problem}");
    }
    let _ = writeln!(out, "\nWeb");
    if r.web.search_offered {
        let _ = writeln!(out, "  Web search: offered ({})", r.web.search);
    } else {
        let _ = writeln!(out, "  Web search: not offered: {}", r.web.search);
    }
    let _ = writeln!(out, "  WebFetch: {}", r.web.fetch);
    let _ = writeln!(out, "\nSettings files");
    for f in &r.settings {
        let _ = writeln!(
            out,
            "  {:<8} {} {} {}",
            f.status,
            f.tool,
            f.source,
            f.path.display()
        );
        if let Some(d) = &f.detail {
            let _ = writeln!(out, "           {d}");
        }
    }
    let _ = writeln!(
        out,
        "\nProject trust: {}{}",
        r.trust.state,
        r.trust
            .by
            .as_ref()
            .map(|b| format!(" (by {b})"))
            .unwrap_or_default()
    );
    for want in &r.trust.wants {
        let applied = if r.trust.state == "trusted" {
            "applied"
        } else {
            "withheld"
        };
        let _ = writeln!(out, "  {applied}: {want}");
    }
    for file in &r.trust.files {
        let _ = writeln!(out, "  runs {file}");
    }
    if let Some(how) = &r.trust.how {
        let _ = writeln!(out, "  {how}");
    }
    render_hooks_and_rules(&mut out, r);
    render_sandbox(&mut out, &r.sandbox);
    render_subagents(&mut out, r);
    let problems: Vec<&NoticeInfo> = r
        .notices
        .iter()
        .filter(|n| n.level != NoticeLevel::Info)
        .collect();
    if !problems.is_empty() {
        let _ = writeln!(out, "\nWhat a session here would warn about");
        for n in problems {
            let _ = writeln!(out, "  - {}", n.text.replace('\n', "\n    "));
        }
    }
    let _ = writeln!(
        out,
        "\n{}",
        if r.broken {
            "Something above is broken."
        } else {
            "Nothing is broken."
        }
    );
    crate::text::visible(&out)
}

/// What the kernel gives the sandbox and what a command runs in.
fn render_sandbox(out: &mut String, s: &SandboxInfo) {
    let _ = writeln!(out, "\nSandbox");
    let _ = writeln!(out, "  kernel    {}", s.kernel_summary);
    if let Some(launcher) = &s.launcher {
        let _ = writeln!(
            out,
            "  launcher  {}",
            crate::sandbox::launcher::describe(launcher)
        );
    }
    let _ = writeln!(out, "  settings  {}", s.settings);
    let _ = writeln!(out, "  commands  {}", s.runs_with);
    for gap in &s.not_held {
        let _ = writeln!(out, "  - not held: {gap}");
    }
    if s.commands_fail {
        let _ = writeln!(
            out,
            "  problem   every command fails: the settings say to fail where the sandbox cannot be set up (failIfUnavailable), and here it cannot"
        );
    }
}

/// The subagent types, each with what it narrows and what of its
/// definition candor does not do.
fn render_subagents(out: &mut String, r: &Report) {
    let _ = writeln!(out, "\nSubagents");
    for a in &r.subagents {
        let mut said = Vec::new();
        if let Some(tools) = &a.tools {
            said.push(format!("tools {}", tools.join(", ")));
        }
        if !a.disallowed_tools.is_empty() {
            said.push(format!("not {}", a.disallowed_tools.join(", ")));
        }
        if let Some(m) = &a.permission_mode {
            said.push(format!("mode {m} at most"));
        }
        if let Some(m) = &a.model {
            said.push(format!("model {m}"));
        }
        if let Some(n) = a.max_turns {
            said.push(format!("maxTurns {n}"));
        }
        if a.hooks {
            said.push("hooks".to_owned());
        }
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(" ({})", said.join("; "))
        };
        let _ = writeln!(out, "  {} [{}]{said}", a.name, a.source);
        for n in &a.not_honoured {
            let _ = writeln!(out, "    not honoured: {n}");
        }
    }
}

/// The hooks, rules, MCP servers and editors of a report.
fn render_hooks_and_rules(out: &mut String, r: &Report) {
    let _ = writeln!(out, "\nHooks");
    if r.hooks.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for h in &r.hooks {
        let _ = writeln!(
            out,
            "  {} {} [{} {}] on {}",
            h.event,
            h.command,
            h.tool,
            h.source,
            h.matchers.join(", ")
        );
        if let Some(w) = &h.warning {
            let _ = writeln!(out, "    warning: {w}");
        }
    }
    let _ = writeln!(out, "\nPermission rules (starting mode: {})", r.mode);
    if r.rules.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for rule in &r.rules {
        let _ = writeln!(out, "  {:<5} {}", rule.kind, rule.rule);
    }
    let _ = writeln!(out, "\nMCP servers (besides those the editor gives)");
    if r.mcp_servers.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for m in &r.mcp_servers {
        let _ = writeln!(out, "  {}: {} (from {})", m.name, m.transport, m.source);
    }
    let _ = writeln!(
        out,
        "\nInstruction files (in the order the model reads them)"
    );
    if r.instructions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for f in &r.instructions {
        let by = f
            .imported_by
            .as_ref()
            .map(|b| format!(", imported by {}", b.display()))
            .unwrap_or_default();
        let cut = if f.cut { ", cut" } else { "" };
        let _ = writeln!(out, "  {} ({} bytes{by}{cut})", f.path.display(), f.bytes);
    }
    for note in &r.instruction_notes {
        let _ = writeln!(out, "  note: {}", crate::text::shorten(note, 300));
    }
    if !r.editors.is_empty() {
        let _ = writeln!(out, "\nEditors found");
        for e in &r.editors {
            let _ = writeln!(
                out,
                "  {}: see {} in candor's repository ({})",
                e.editor,
                e.setup,
                e.found.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_the_kernel_cannot_hold_it_and_the_settings_say_fail_every_command_fails() {
        let config = Config::from_env();
        let no_landlock = crate::sandbox::Probe::nothing("not offered");
        let mut sandbox = crate::sandbox::Sandbox::default();
        let info = sandbox_info(Path::new("/p"), &config, &sandbox, &no_landlock);
        assert!(!info.commands_fail);
        assert!(
            info.runs_with
                .starts_with("not sandboxed: this kernel has no Landlock")
        );
        sandbox.fail_if_unavailable = true;
        let info = sandbox_info(Path::new("/p"), &config, &sandbox, &no_landlock);
        assert!(info.commands_fail);
        let mut out = String::new();
        render_sandbox(&mut out, &info);
        assert!(out.contains("every command fails"), "{out}");
    }
}
