//! Configuration: the environment, the user's config file and a project's.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `CANDOR_HOME` | Where session logs live (`$CANDOR_HOME/sessions/`). Default `$XDG_STATE_HOME/candor`, else `~/.local/state/candor`. |
//! | `CANDOR_PROVIDER` | `anthropic`, `openai` (Chat Completions), `openai-responses` or `scripted`. Unset: `anthropic` if `ANTHROPIC_API_KEY` is set, else `openai` if `OPENAI_API_KEY` is set, else none (prompts get guidance). |
//! | `CANDOR_MODEL` | The model name sent to the provider. |
//! | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` | Anthropic's key and endpoint (default `https://api.anthropic.com`). |
//! | `OPENAI_API_KEY`, `OPENAI_BASE_URL` | OpenAI's key and endpoint (default `https://api.openai.com/v1`; any compatible server). |
//! | `CANDOR_SCRIPT` | The script file of the scripted provider. |
//! | `CANDOR_POLICY` | A policy file: pre-execute hooks, permission rules, the starting mode (`protocol/hooks.md`). |
//! | `CANDOR_CAPTURE` | The scripted provider appends every model request it receives to this file (tests). |
//! | `CANDOR_CLAUDE_HOOKS` | `0`, `false` or `off`: do not read Claude Code settings (hooks, permission rules). Default: read them. |
//! | `CLAUDE_CONFIG_DIR` | Where the user's Claude Code `settings.json` is (default `~/.claude`), as Claude Code reads it. |
//! | `CANDOR_CODEX_HOOKS` | `0`, `false` or `off`: do not read Codex hooks. Default: read them. |
//! | `CODEX_HOME` | Where the user's Codex settings are (default `~/.codex`), as Codex reads it. |
//! | `CANDOR_CLAUDE_MANAGED_DIR` | Where Claude Code's managed settings are (default `/etc/claude-code`). |
//! | `CANDOR_SESSION_TITLES` | `model` (default) or `prompt`: how a session is titled after its first turn (the config files' `session_titles`). |
//! | `RUST_LOG` | Log filter for stderr (default `info`). |
//!
//! Config files hold the same model settings plus limits ([`Settings`]):
//! the user's `$XDG_CONFIG_HOME/candor/config.toml` (else
//! `~/.config/candor/config.toml`), read at start-up, and a project's
//! `<cwd>/.candor/config.toml`, read when a session is created
//! ([`Config::model_config`]). Precedence: environment, then the project
//! file, then the user file, then defaults. API keys come from the
//! environment only, and a project file may not set an endpoint (a
//! repository must not be able to send your key elsewhere). A file that
//! cannot be read or parsed is not fatal: the session gets no model and its
//! first prompt is answered with the file and the problem.
//!
//! The user's home (for `~/.claude`, `~/.codex`, `~/.config/candor` and
//! `~/` in rules) is `HOME`, else the password database's entry for the
//! user candor runs as (an editor may start it without `HOME`); when
//! neither gives one, every session says which of the user's settings it
//! could not read ([`Config::home_unknown`]).
//!
//! [`Config::from_env`] reads the environment once at start-up; nothing
//! else in the crate reads it, so tests build a [`Config`] directly or
//! through [`Config::from_vars`].

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::conversation::RewriteStrategy;

/// The default Anthropic endpoint.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The default OpenAI endpoint.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// An API key. Never printed: `Debug` shows `[redacted]` and there is no
/// `Display`; [`ApiKey::expose`] is for the request header only.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Which model provider sessions get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderSetting {
    /// Nothing configured: prompts get guidance on how to configure one.
    None,
    /// The scripted model, with its script file if one was named.
    Scripted { script: Option<PathBuf> },
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions (and compatible servers).
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// A provider name candor does not know.
    Unknown(String),
}

impl ProviderSetting {
    fn parse(name: &str, script: Option<PathBuf>) -> Self {
        match name {
            "scripted" => ProviderSetting::Scripted { script },
            "anthropic" => ProviderSetting::Anthropic,
            "openai" => ProviderSetting::OpenaiChat,
            "openai-responses" => ProviderSetting::OpenaiResponses,
            other => ProviderSetting::Unknown(other.to_owned()),
        }
    }
}

/// One layer of model settings: a config file, or the environment. Every
/// field is optional; [`Config::model_config`] stacks the layers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `anthropic`, `openai`, `openai-responses` or `scripted`.
    pub provider: Option<String>,
    /// The model name sent to the provider.
    pub model: Option<String>,
    /// Models offered when the user picks one (the session's model option).
    pub models: Option<Vec<String>>,
    /// Not allowed in a project file.
    pub anthropic_base_url: Option<String>,
    /// Not allowed in a project file.
    pub openai_base_url: Option<String>,
    /// The most tokens one model response may have.
    pub max_tokens: Option<u32>,
    /// Model requests one prompt may make before it ends `max_turn_requests`
    /// (none set: no limit, as in Claude Code and Codex).
    pub max_turn_requests: Option<u32>,
    /// The model's context window in tokens (for usage reports).
    pub context_window: Option<u64>,
    /// Anthropic: enables extended thinking with this budget of tokens.
    pub thinking_budget: Option<u32>,
    /// OpenAI: `reasoning_effort` (Chat) / `reasoning.effort` (Responses).
    pub reasoning_effort: Option<String>,
    /// How hook rewrites are told to the model: `note` (default) or
    /// `in_place` (Chat Completions only).
    pub rewrite_strategy: Option<RewriteStrategy>,
    /// Variables candor keeps out of commands and hooks (provider keys,
    /// its own `CANDOR_*` settings) that they should get anyway. Not allowed
    /// in a project file.
    pub pass_env: Option<Vec<String>>,
    /// How long a prompt waits for MCP servers still starting, in seconds
    /// (default 10; at most 300).
    pub mcp_startup_wait: Option<u64>,
    /// Whether an MCP tool that a server you configured marks read-only
    /// and closed-world runs without asking (default true; a project's
    /// `.mcp.json` servers are never taken at their word). Read from the
    /// user file only.
    pub mcp_trust_annotations: Option<bool>,
    /// `[prices."model-id"]`: a model's prices in US dollars per million
    /// tokens (`input`, `output`, `cache_read`, `cache_write`), over
    /// candor's table (`providers::prices`). Read from the user file only:
    /// a repository does not say what your requests cost.
    pub prices: Option<Overrides>,
    /// How a session gets its title after its first turn: `model` (a
    /// short request to the session's model; the default) or `prompt`
    /// (the first prompt's first line, no request).
    pub session_titles: Option<String>,
    /// The sandbox (`[sandbox]`; `protocol/sandbox.md`, "Settings"). A
    /// project file's only narrows it until the project is trusted.
    pub sandbox: Option<crate::sandbox::settings::CandorKeys>,
    /// How many subagents one model response's `Agent` calls run at once
    /// (default 4, at most 16). Read from the user file only.
    pub subagents_parallel: Option<u32>,
    /// How many subagents may be alive at once in a session and its
    /// subagents (default 16, at most 64). Read from the user file only.
    pub subagents_live: Option<u32>,
    /// `[web]`: what WebFetch may reach beyond the public internet over
    /// HTTPS (`protocol/web.md`). Read from the user file only: a
    /// repository must not open your network to itself.
    pub web: Option<crate::web::WebKeys>,
}

impl Settings {
    /// `self` where set, else `lower`.
    fn over(self, lower: Settings) -> Settings {
        Settings {
            provider: self.provider.or(lower.provider),
            model: self.model.or(lower.model),
            models: self.models.or(lower.models),
            anthropic_base_url: self.anthropic_base_url.or(lower.anthropic_base_url),
            openai_base_url: self.openai_base_url.or(lower.openai_base_url),
            max_tokens: self.max_tokens.or(lower.max_tokens),
            max_turn_requests: self.max_turn_requests.or(lower.max_turn_requests),
            context_window: self.context_window.or(lower.context_window),
            thinking_budget: self.thinking_budget.or(lower.thinking_budget),
            reasoning_effort: self.reasoning_effort.or(lower.reasoning_effort),
            rewrite_strategy: self.rewrite_strategy.or(lower.rewrite_strategy),
            pass_env: self.pass_env.or(lower.pass_env),
            mcp_startup_wait: self.mcp_startup_wait.or(lower.mcp_startup_wait),
            mcp_trust_annotations: self.mcp_trust_annotations.or(lower.mcp_trust_annotations),
            prices: self.prices.or(lower.prices),
            session_titles: self.session_titles.or(lower.session_titles),
            sandbox: self.sandbox.or(lower.sandbox),
            subagents_parallel: self.subagents_parallel.or(lower.subagents_parallel),
            subagents_live: self.subagents_live.or(lower.subagents_live),
            web: self.web.or(lower.web),
        }
    }

    /// Parses a config file's text; the error names the file.
    pub fn parse(path: &Path, text: &str) -> Result<Settings, String> {
        toml::from_str(text).map_err(|e| {
            format!(
                "the config file {} is not valid: {}",
                path.display(),
                e.to_string().trim_end()
            )
        })
    }

    /// Reads a config file; a missing file is an empty layer.
    pub fn load(path: &Path) -> Result<Settings, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Settings::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(format!(
                "the config file {} cannot be read: {e}",
                path.display()
            )),
        }
    }
}

/// One `[prices."model-id"]` table of the user's config file: each price
/// set replaces the built-in one; a model not in the table needs `input`
/// and `output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceOverride {
    pub input: Option<PerMtok>,
    pub output: Option<PerMtok>,
    pub cache_read: Option<PerMtok>,
    pub cache_write: Option<PerMtok>,
}

/// US dollars per million tokens, finite and not negative.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct PerMtok(pub(crate) f64);

// Never NaN (refused when read), so equality is an equivalence.
impl Eq for PerMtok {}

impl<'de> Deserialize<'de> for PerMtok {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = f64::deserialize(d)?;
        if n.is_finite() && n >= 0.0 {
            Ok(PerMtok(n))
        } else {
            Err(serde::de::Error::custom(format!(
                "a price is US dollars per million tokens, 0 or more; got {n}"
            )))
        }
    }
}

/// The user's price tables, by model id.
pub type Overrides = std::collections::BTreeMap<String, PriceOverride>;

/// Everything a session's provider is made from, all layers applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub provider: ProviderSetting,
    pub model: Option<String>,
    pub models: Vec<String>,
    pub anthropic_base_url: String,
    pub openai_base_url: String,
    pub anthropic_api_key: Option<ApiKey>,
    pub openai_api_key: Option<ApiKey>,
    pub max_tokens: Option<u32>,
    pub max_turn_requests: Option<u32>,
    pub context_window: Option<u64>,
    pub thinking_budget: Option<u32>,
    pub reasoning_effort: Option<String>,
    pub rewrite_strategy: Option<RewriteStrategy>,
}

/// Everything the server needs to know from outside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Root of candor's state (`sessions/` lives here).
    pub home: PathBuf,
    /// The provider named by the environment or the user file, or chosen by
    /// the keys present. A project file may still name another one
    /// ([`Config::model_config`]) unless `CANDOR_PROVIDER` is set.
    pub provider: ProviderSetting,
    /// The policy file (`CANDOR_POLICY`).
    pub policy: Option<PathBuf>,
    /// Where the scripted provider copies its requests (`CANDOR_CAPTURE`).
    pub capture: Option<PathBuf>,
    /// The user's home directory (`~/` in permission rules): `HOME`, else
    /// the password database's ([`find_home`]).
    pub user_home: Option<PathBuf>,
    /// When the user's home directory is unknown: the notice every session
    /// gives, saying why and which of the user's settings candor did not
    /// read.
    pub home_unknown: Option<String>,
    /// The user's login shell (`$SHELL`), for the model's picture of
    /// where it works.
    pub login_shell: Option<String>,
    /// Mirror every frame to stderr (`--log-messages`).
    pub log_messages: bool,
    /// Model settings from the environment (the highest layer).
    pub env_settings: Settings,
    /// The user's config file: its settings, or why it cannot be used.
    pub user_settings: Result<Settings, String>,
    /// The user's own config file, where candor looked for it (it may not
    /// exist): `$XDG_CONFIG_HOME/candor/config.toml`, else
    /// `~/.config/candor/config.toml`.
    pub user_file: Option<PathBuf>,
    /// `ANTHROPIC_API_KEY`.
    pub anthropic_api_key: Option<ApiKey>,
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<ApiKey>,
    /// Where Claude Code's settings are read from; `None`: not read.
    pub claude: Option<ClaudeLocations>,
    /// Where Codex's hooks are read from; `None`: not read.
    pub codex: Option<CodexLocations>,
    /// Tests only (set in process, never from the environment): session
    /// logs refuse appends from this many records on, as a full disk would.
    #[doc(hidden)]
    pub log_fails_at: Option<usize>,
    /// How long a tool waits for the editor to answer `fs/read_text_file`
    /// or `fs/write_text_file` before the call fails (60 s).
    pub client_fs_timeout: std::time::Duration,
    /// candor's own binary, which confines a command as the sandbox's
    /// launcher (`candor __sandbox …`): the server's own executable; `None`
    /// (a library user that did not set it): commands run unconfined and
    /// their cards say so.
    pub launcher: Option<PathBuf>,
}

/// Where Codex's user settings are (a project's are found from its `cwd`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexLocations {
    /// `$CODEX_HOME`, default `~/.codex`.
    pub home: Option<PathBuf>,
}

/// The directories holding Claude Code's settings files (a session's
/// project files are found from its `cwd`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaudeLocations {
    /// The user's settings directory (`~/.claude` or `$CLAUDE_CONFIG_DIR`).
    pub user_dir: Option<PathBuf>,
    /// The managed settings directory (`/etc/claude-code`).
    pub managed_dir: Option<PathBuf>,
    /// Claude Code's global config, where it records the folders the user
    /// trusted (`~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json`).
    pub global_file: Option<PathBuf>,
}

impl Config {
    /// How long a prompt waits for MCP servers still starting (the user
    /// config's `mcp_startup_wait`, default 10 s).
    pub fn mcp_startup_wait(&self) -> std::time::Duration {
        let user = self
            .user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.mcp_startup_wait);
        let seconds = self.env_settings.mcp_startup_wait.or(user).unwrap_or(10);
        std::time::Duration::from_secs(seconds.min(300))
    }
}

impl Config {
    /// Whether MCP annotations of the servers the user configured may let
    /// a tool run without asking (the user config's
    /// `mcp_trust_annotations`, default true).
    pub fn mcp_trust_annotations(&self) -> bool {
        let user = self
            .user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.mcp_trust_annotations);
        self.env_settings
            .mcp_trust_annotations
            .or(user)
            .unwrap_or(true)
    }

    /// How many subagents one response's `Agent` calls run at once (the
    /// user config's `subagents_parallel`, default 4, at most 16).
    pub fn subagents_parallel(&self) -> usize {
        let user = self
            .user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.subagents_parallel);
        let n = self.env_settings.subagents_parallel.or(user).unwrap_or(4);
        n.clamp(1, 16) as usize
    }

    /// How many subagents may be alive at once in one session's tree (the
    /// user config's `subagents_live`, default 16, at most 64).
    pub fn subagents_live(&self) -> usize {
        let user = self
            .user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.subagents_live);
        let n = self.env_settings.subagents_live.or(user).unwrap_or(16);
        n.clamp(1, 64) as usize
    }

    /// Whether a session's title is asked of its model (`session_titles`
    /// not `prompt`, in the environment or the user file).
    pub fn model_titles(&self) -> bool {
        let user = self
            .user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.session_titles.clone());
        self.env_settings
            .session_titles
            .clone()
            .or(user)
            .is_none_or(|t| t != "prompt")
    }

    /// Whether candor's own config (`[sandbox] mode = "full-access"`)
    /// turns the sandbox off. Claude Code's and Codex's settings, and a
    /// project's, are read per session; this is what is known before one.
    pub fn sandbox_off(&self) -> bool {
        self.user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.sandbox.as_ref()?.mode)
            == Some(crate::sandbox::Preset::FullAccess)
    }

    /// What WebFetch may reach beyond the public internet over HTTPS: the
    /// user config file's `[web]` (a project's is not read). `Err` names a
    /// wrong entry; WebFetch then gets nothing beyond the defaults.
    pub fn web_access(&self) -> Result<crate::web::Access, String> {
        self.user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.web.as_ref())
            .map_or_else(|| Ok(crate::web::Access::default()), |k| k.access())
            .map_err(|e| format!("your config file's {e}; WebFetch reaches only public addresses over https until it is fixed"))
    }

    /// The user config file's `[prices]` tables.
    pub fn prices(&self) -> Overrides {
        self.user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.prices.clone())
            .unwrap_or_default()
    }
}

/// A project's config file, relative to the session's directory.
pub const PROJECT_CONFIG: &str = ".candor/config.toml";

impl Config {
    /// A configuration with the given home and provider, no frame mirroring,
    /// no config file and no keys.
    pub fn new(home: PathBuf, provider: ProviderSetting) -> Self {
        Self {
            home,
            provider,
            policy: None,
            capture: None,
            user_home: None,
            home_unknown: None,
            login_shell: None,
            log_messages: false,
            env_settings: Settings::default(),
            user_settings: Ok(Settings::default()),
            user_file: None,
            anthropic_api_key: None,
            openai_api_key: None,
            claude: Some(ClaudeLocations::default()),
            codex: Some(CodexLocations::default()),
            log_fails_at: None,
            client_fs_timeout: std::time::Duration::from_secs(60),
            launcher: None,
        }
    }

    /// Reads the process environment (and the user's config file); without
    /// `HOME`, the user's home is the password database's.
    pub fn from_env() -> Self {
        Self::from_vars_with(
            |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()),
            passwd_home,
        )
    }

    /// Reads variables through `var` (for tests), and the user's config
    /// file they point at (`$XDG_CONFIG_HOME/candor/config.toml`, else
    /// `$HOME/.config/candor/config.toml`). The password database is not
    /// asked: without `HOME`, the home is unknown.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        Self::from_vars_with(var, || Err("the password database was not asked".into()))
    }

    /// [`from_vars`](Self::from_vars), with `passwd` giving the user's
    /// home when `HOME` does not (or why it cannot).
    pub fn from_vars_with(
        var: impl Fn(&str) -> Option<String>,
        passwd: impl FnOnce() -> Result<PathBuf, String>,
    ) -> Self {
        let nonempty = |name: &str| var(name).filter(|v| !v.is_empty());
        let found_home = find_home(nonempty("HOME"), passwd);
        let user_home = found_home.as_ref().ok().cloned();
        let home = nonempty("CANDOR_HOME")
            .map(PathBuf::from)
            .or_else(|| nonempty("XDG_STATE_HOME").map(|d| PathBuf::from(d).join("candor")))
            .or_else(|| user_home.as_ref().map(|h| h.join(".local/state/candor")))
            .unwrap_or_else(|| std::env::temp_dir().join("candor"));
        let user_file = nonempty("XDG_CONFIG_HOME")
            .map(|d| PathBuf::from(d).join("candor/config.toml"))
            .or_else(|| {
                user_home
                    .as_ref()
                    .map(|h| h.join(".config/candor/config.toml"))
            });
        let user_settings = match &user_file {
            Some(path) => Settings::load(path),
            None => Ok(Settings::default()),
        };
        let env_settings = Settings {
            provider: nonempty("CANDOR_PROVIDER"),
            model: nonempty("CANDOR_MODEL"),
            anthropic_base_url: nonempty("ANTHROPIC_BASE_URL"),
            openai_base_url: nonempty("OPENAI_BASE_URL"),
            session_titles: nonempty("CANDOR_SESSION_TITLES"),
            ..Settings::default()
        };
        let anthropic_api_key = nonempty("ANTHROPIC_API_KEY").map(ApiKey);
        let openai_api_key = nonempty("OPENAI_API_KEY").map(ApiKey);
        let script = nonempty("CANDOR_SCRIPT").map(PathBuf::from);
        let named = env_settings
            .provider
            .clone()
            .or_else(|| user_settings.as_ref().ok().and_then(|s| s.provider.clone()));
        // An endpoint of its own (a local server, a gateway) says
        // OpenAI-compatible as much as a key does.
        let openai_endpoint = env_settings.openai_base_url.is_some()
            || user_settings
                .as_ref()
                .is_ok_and(|s| s.openai_base_url.is_some());
        let provider = match named {
            Some(name) => ProviderSetting::parse(&name, script),
            None if anthropic_api_key.is_some() => ProviderSetting::Anthropic,
            None if openai_api_key.is_some() || openai_endpoint => ProviderSetting::OpenaiChat,
            None => ProviderSetting::None,
        };
        let mut config = Self::new(home, provider);
        config.policy = nonempty("CANDOR_POLICY").map(PathBuf::from);
        config.capture = nonempty("CANDOR_CAPTURE").map(PathBuf::from);
        config.user_home = user_home;
        config.login_shell = nonempty("SHELL");
        config.env_settings = env_settings;
        config.user_settings = user_settings;
        config.user_file = user_file;
        config.anthropic_api_key = anthropic_api_key;
        config.openai_api_key = openai_api_key;
        let switched_off = |name: &str| {
            nonempty(name).is_some_and(|v| {
                matches!(
                    v.to_ascii_lowercase().as_str(),
                    "0" | "false" | "off" | "no"
                )
            })
        };
        let off = switched_off("CANDOR_CLAUDE_HOOKS");
        config.codex = (!switched_off("CANDOR_CODEX_HOOKS")).then(|| CodexLocations {
            home: nonempty("CODEX_HOME")
                .map(PathBuf::from)
                .or_else(|| config.user_home.as_ref().map(|h| h.join(".codex"))),
        });
        config.claude = (!off).then(|| ClaudeLocations {
            user_dir: nonempty("CLAUDE_CONFIG_DIR")
                .map(PathBuf::from)
                .or_else(|| config.user_home.as_ref().map(|h| h.join(".claude"))),
            global_file: nonempty("CLAUDE_CONFIG_DIR")
                .map(|d| PathBuf::from(d).join(".claude.json"))
                .or_else(|| config.user_home.as_ref().map(|h| h.join(".claude.json"))),
            managed_dir: Some(
                nonempty("CANDOR_CLAUDE_MANAGED_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("/etc/claude-code")),
            ),
        });
        config.home_unknown = found_home
            .err()
            .map(|why| unread_for_want_of_home(&why, &config, config.user_file.is_none()));
        config
    }

    /// Where session logs are written.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// The model settings of a session in `cwd`: the environment over the
    /// project's `.candor/config.toml` (when `cwd` is given) over the user's
    /// file over defaults. An `Err` says which file is wrong and how.
    pub fn model_config(&self, cwd: Option<&Path>) -> Result<ModelConfig, String> {
        let user = self.user_settings.clone()?;
        let project_path = cwd.map(|d| d.join(PROJECT_CONFIG)).unwrap_or_default();
        let project = match cwd {
            Some(_) => Settings::load(&project_path)?,
            None => Settings::default(),
        };
        for (key, set) in [
            ("anthropic_base_url", project.anthropic_base_url.is_some()),
            ("openai_base_url", project.openai_base_url.is_some()),
            ("pass_env", project.pass_env.is_some()),
        ] {
            if set {
                return Err(format!(
                    "the project config file {} sets `{key}`, which only the environment or your own config file may set (a project must not be able to send your API key elsewhere or hand it to its commands)",
                    project_path.display()
                ));
            }
        }
        let provider = match (&self.env_settings.provider, &project.provider) {
            (None, Some(name)) => {
                let script = match &self.provider {
                    ProviderSetting::Scripted { script } => script.clone(),
                    _ => None,
                };
                ProviderSetting::parse(name, script)
            }
            _ => self.provider.clone(),
        };
        let s = self.env_settings.clone().over(project.over(user));
        Ok(ModelConfig {
            provider,
            model: s.model,
            models: s.models.unwrap_or_default(),
            anthropic_base_url: s
                .anthropic_base_url
                .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned()),
            openai_base_url: s
                .openai_base_url
                .unwrap_or_else(|| OPENAI_BASE_URL.to_owned()),
            anthropic_api_key: self.anthropic_api_key.clone(),
            openai_api_key: self.openai_api_key.clone(),
            max_tokens: s.max_tokens,
            max_turn_requests: s.max_turn_requests,
            context_window: s.context_window,
            thinking_budget: s.thinking_budget,
            reasoning_effort: s.reasoning_effort,
            rewrite_strategy: s.rewrite_strategy,
        })
    }
}

/// The user's home directory: `HOME` when set (and absolute), else what
/// `passwd` finds (an editor may start candor with only `PATH` and its own
/// variables). `Err`: why neither gave one.
pub fn find_home(
    home: Option<String>,
    passwd: impl FnOnce() -> Result<PathBuf, String>,
) -> Result<PathBuf, String> {
    let set = match home {
        Some(h) if Path::new(&h).is_absolute() => return Ok(PathBuf::from(h)),
        Some(h) => format!("HOME is {h:?}, not an absolute path"),
        None => "HOME is not set".to_owned(),
    };
    match passwd() {
        Ok(dir) if dir.is_absolute() => Ok(dir),
        Ok(dir) => Err(format!(
            "{set}, and the password database gives {:?}, not an absolute path",
            dir.display().to_string()
        )),
        Err(why) => Err(format!("{set}, and {why}")),
    }
}

/// The home directory of the user candor runs as, from the password
/// database (`getpwuid_r`), or why there is none.
pub fn passwd_home() -> Result<PathBuf, String> {
    let uid = nix::unistd::getuid();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(user)) => Ok(user.dir),
        Ok(None) => Err(format!(
            "the password database has no entry for user id {uid}"
        )),
        Err(e) => Err(format!("the password database cannot be read ({e})")),
    }
}

/// The notice of a session whose user has no known home: why, and which of
/// their settings candor could therefore not read (those no variable
/// pointed at elsewhere).
fn unread_for_want_of_home(why: &str, config: &Config, no_user_file: bool) -> String {
    let mut unread = Vec::new();
    if let Some(claude) = &config.claude {
        if claude.user_dir.is_none() {
            unread.push(
                "your Claude Code settings (~/.claude/settings.json: hooks and permission rules; ~/.claude/commands; ~/.claude/CLAUDE.md)",
            );
        }
        if claude.global_file.is_none() {
            unread.push("~/.claude.json (your MCP servers and the projects you trusted)");
        }
    }
    if config.codex.as_ref().is_some_and(|c| c.home.is_none()) {
        unread.push("your Codex settings (~/.codex: hooks, config.toml, prompts, AGENTS.md)");
    }
    if no_user_file {
        unread.push("your candor config (~/.config/candor/config.toml)");
    }
    let what = if unread.is_empty() {
        "nothing of yours is missing: every settings location is set by a variable".to_owned()
    } else {
        format!("it did not read {}", unread.join("; "))
    };
    format!(
        "candor cannot find your home directory ({why}), so {what}. Session logs are kept in {}. Set HOME in the environment your editor starts candor with.",
        config.sessions_dir().display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Config {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn home_falls_back_through_xdg_to_home() {
        assert_eq!(
            config(&[("CANDOR_HOME", "/c"), ("HOME", "/h")]).home,
            PathBuf::from("/c")
        );
        assert_eq!(
            config(&[("XDG_STATE_HOME", "/x"), ("HOME", "/h")]).home,
            PathBuf::from("/x/candor")
        );
        assert_eq!(
            config(&[("HOME", "/h")]).home,
            PathBuf::from("/h/.local/state/candor")
        );
        assert_eq!(
            config(&[("HOME", "/h")]).sessions_dir(),
            PathBuf::from("/h/.local/state/candor/sessions")
        );
    }

    #[test]
    fn without_home_the_password_database_gives_it() {
        let never = || -> Result<PathBuf, String> { panic!("HOME was set") };
        assert_eq!(find_home(Some("/h".into()), never), Ok(PathBuf::from("/h")));
        assert_eq!(
            find_home(None, || Ok(PathBuf::from("/home/u"))),
            Ok(PathBuf::from("/home/u"))
        );
        assert_eq!(
            find_home(Some("rel".into()), || Ok(PathBuf::from("/home/u"))),
            Ok(PathBuf::from("/home/u"))
        );
        let none = find_home(None, || {
            Err("the password database has no entry for user id 7".into())
        });
        assert_eq!(
            none,
            Err("HOME is not set, and the password database has no entry for user id 7".into())
        );
        assert!(find_home(None, || Ok(PathBuf::new())).is_err());
        // Everything found from the home follows it.
        let vars: HashMap<String, String> = [("CANDOR_CODEX_HOOKS", "on")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let found = Config::from_vars_with(|k| vars.get(k).cloned(), || Ok("/home/u".into()));
        assert_eq!(found.user_home, Some(PathBuf::from("/home/u")));
        assert_eq!(found.home, PathBuf::from("/home/u/.local/state/candor"));
        assert_eq!(
            found.claude.unwrap().user_dir,
            Some(PathBuf::from("/home/u/.claude"))
        );
        assert_eq!(
            found.codex.unwrap().home,
            Some(PathBuf::from("/home/u/.codex"))
        );
        assert_eq!(found.home_unknown, None);
    }

    #[test]
    fn without_any_home_the_session_is_told_what_was_not_read() {
        let lost = Config::from_vars_with(|_| None, || Err("no entry for user id 7".into()));
        assert_eq!(lost.user_home, None);
        let text = lost.home_unknown.unwrap();
        for said in [
            "HOME is not set, and no entry for user id 7",
            "~/.claude/settings.json",
            "~/.claude.json",
            "~/.codex",
            "~/.config/candor/config.toml",
            "Set HOME",
        ] {
            assert!(text.contains(said), "{said:?} not in {text}");
        }
        // What a variable located is read, and not listed.
        let vars: HashMap<String, String> = [
            ("CLAUDE_CONFIG_DIR", "/cc"),
            ("CANDOR_CODEX_HOOKS", "off"),
            ("XDG_CONFIG_HOME", "/xdg"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let located = Config::from_vars_with(|k| vars.get(k).cloned(), || Err("no".into()));
        let text = located.home_unknown.unwrap();
        assert!(text.contains("nothing of yours is missing"), "{text}");
    }

    #[test]
    fn provider_selection() {
        assert_eq!(config(&[]).provider, ProviderSetting::None);
        assert_eq!(
            config(&[
                ("CANDOR_PROVIDER", "scripted"),
                ("CANDOR_SCRIPT", "/s.json")
            ])
            .provider,
            ProviderSetting::Scripted {
                script: Some("/s.json".into())
            }
        );
        assert_eq!(
            config(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "o")]).provider,
            ProviderSetting::Anthropic
        );
        assert_eq!(
            config(&[("OPENAI_API_KEY", "o")]).provider,
            ProviderSetting::OpenaiChat
        );
        assert_eq!(
            config(&[("CANDOR_PROVIDER", "openai-responses")]).provider,
            ProviderSetting::OpenaiResponses
        );
        assert_eq!(
            config(&[("CANDOR_PROVIDER", "gpt")]).provider,
            ProviderSetting::Unknown("gpt".into())
        );
    }

    #[test]
    fn keys_never_show_in_debug_output() {
        let c = config(&[("ANTHROPIC_API_KEY", "sk-ant-secret-123")]);
        let shown = format!(
            "{c:?} {:?}",
            c.model_config(Some(Path::new("/nonexistent")))
        );
        assert!(!shown.contains("sk-ant-secret-123"), "{shown}");
        assert!(shown.contains("[redacted]"));
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn environment_over_project_over_user_file() {
        let dir = tempfile::tempdir().unwrap();
        let xdg = dir.path().join("xdg");
        let project = dir.path().join("project");
        write(
            &xdg.join("candor/config.toml"),
            "provider = \"openai\"\nmodel = \"user-model\"\nmax_tokens = 1000\nmax_turn_requests = 7\nopenai_base_url = \"http://user.example\"\n",
        );
        let vars = [("XDG_CONFIG_HOME", xdg.to_str().unwrap())];
        let c = config(&vars);
        assert_eq!(c.provider, ProviderSetting::OpenaiChat);
        let m = c.model_config(Some(&project)).unwrap();
        assert_eq!(m.model.as_deref(), Some("user-model"));
        assert_eq!(m.max_tokens, Some(1000));
        assert_eq!(m.openai_base_url, "http://user.example");
        assert_eq!(m.anthropic_base_url, ANTHROPIC_BASE_URL);

        write(
            &project.join(PROJECT_CONFIG),
            "provider = \"anthropic\"\nmodel = \"project-model\"\nmax_tokens = 2000\n",
        );
        let m = c.model_config(Some(&project)).unwrap();
        assert_eq!(m.provider, ProviderSetting::Anthropic);
        assert_eq!(m.model.as_deref(), Some("project-model"));
        assert_eq!((m.max_tokens, m.max_turn_requests), (Some(2000), Some(7)));

        let c = config(&[
            ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
            ("CANDOR_PROVIDER", "openai-responses"),
            ("CANDOR_MODEL", "env-model"),
        ]);
        let m = c.model_config(Some(&project)).unwrap();
        assert_eq!(m.provider, ProviderSetting::OpenaiResponses);
        assert_eq!(m.model.as_deref(), Some("env-model"));
        assert_eq!(m.max_tokens, Some(2000));
    }

    #[test]
    fn an_openai_base_url_alone_selects_the_openai_compatible_provider() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        assert_eq!(config(&[("HOME", home)]).provider, ProviderSetting::None);
        let local = config(&[
            ("HOME", home),
            ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
        ]);
        assert_eq!(local.provider, ProviderSetting::OpenaiChat);
        assert!(local.openai_api_key.is_none());
        // A key still says which: Anthropic's first, as documented.
        let both = config(&[
            ("HOME", home),
            ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
            ("ANTHROPIC_API_KEY", "k"),
        ]);
        assert_eq!(both.provider, ProviderSetting::Anthropic);
        // The same from the user's own file.
        write(
            &dir.path().join(".config/candor/config.toml"),
            "openai_base_url = \"http://127.0.0.1:8080/v1\"\n",
        );
        let c = config(&[("HOME", home)]);
        assert_eq!(c.provider, ProviderSetting::OpenaiChat);
        assert_eq!(
            c.user_file,
            Some(dir.path().join(".config/candor/config.toml"))
        );
    }

    #[test]
    fn user_file_falls_back_to_home() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join(".config/candor/config.toml"),
            "model = \"m\"\n",
        );
        let c = config(&[("HOME", dir.path().to_str().unwrap())]);
        assert_eq!(c.user_settings.unwrap().model.as_deref(), Some("m"));
    }

    #[test]
    fn mcp_annotations_are_trusted_unless_the_user_file_says_not_and_a_project_file_cannot_say() {
        let dir = tempfile::tempdir().unwrap();
        assert!(config(&[("HOME", dir.path().to_str().unwrap())]).mcp_trust_annotations());
        // A project's file is no place for it: read from the user's only.
        write(
            &dir.path().join(PROJECT_CONFIG),
            "mcp_trust_annotations = true\n",
        );
        write(
            &dir.path().join(".config/candor/config.toml"),
            "mcp_trust_annotations = false\n",
        );
        let c = config(&[("HOME", dir.path().to_str().unwrap())]);
        assert!(c.model_config(Some(dir.path())).is_ok());
        assert!(!c.mcp_trust_annotations());
    }

    #[test]
    fn a_broken_file_is_a_reason_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let xdg = dir.path().join("xdg");
        write(&xdg.join("candor/config.toml"), "model = \n");
        let c = config(&[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
        let err = c.model_config(Some(dir.path())).unwrap_err();
        assert!(err.contains("candor/config.toml is not valid"), "{err}");
        assert!(err.contains("line 1"), "{err}");

        let project = dir.path().join("p");
        write(&project.join(PROJECT_CONFIG), "modle = \"x\"\n");
        let err = config(&[]).model_config(Some(&project)).unwrap_err();
        assert!(err.contains(".candor/config.toml is not valid"), "{err}");
        assert!(err.contains("unknown field `modle`"), "{err}");
    }

    #[test]
    fn a_project_may_not_redirect_the_key() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join(PROJECT_CONFIG),
            "anthropic_base_url = \"http://evil.example\"\n",
        );
        let err = config(&[("ANTHROPIC_API_KEY", "k")])
            .model_config(Some(dir.path()))
            .unwrap_err();
        assert!(err.contains("sets `anthropic_base_url`"), "{err}");
    }
}
