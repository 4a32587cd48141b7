//! Configuration from the environment.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `CANDOR_HOME` | Where session logs live (`$CANDOR_HOME/sessions/`). Default `$XDG_STATE_HOME/candor`, else `~/.local/state/candor`. |
//! | `CANDOR_PROVIDER` | `scripted` today; `anthropic`, `openai`, `openai-responses` are recognised and reported as not yet available. |
//! | `CANDOR_SCRIPT` | The script file of the scripted provider. |
//! | `CANDOR_POLICY` | A policy file: pre-execute hooks, permission rules, the starting mode (`protocol/hooks.md`). |
//! | `CANDOR_CAPTURE` | The scripted provider appends every model request it receives to this file (tests). |
//! | `RUST_LOG` | Log filter for stderr (default `info`). |
//!
//! [`Config::from_env`] reads them once at start-up; nothing else in the
//! crate reads the environment, so tests build a [`Config`] directly.

use std::path::PathBuf;

/// Which model provider sessions get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderSetting {
    /// Nothing configured: prompts get guidance on how to configure one.
    None,
    /// The scripted model, with its script file if one was named.
    Scripted { script: Option<PathBuf> },
    /// A provider candor knows of but does not have yet.
    NotYetAvailable(String),
    /// A `CANDOR_PROVIDER` value candor does not know.
    Unknown(String),
}

/// Everything the server needs to know from outside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Root of candor's state (`sessions/` lives here).
    pub home: PathBuf,
    pub provider: ProviderSetting,
    /// The policy file (`CANDOR_POLICY`).
    pub policy: Option<PathBuf>,
    /// Where the scripted provider copies its requests (`CANDOR_CAPTURE`).
    pub capture: Option<PathBuf>,
    /// The user's home directory (`~/` in permission rules).
    pub user_home: Option<PathBuf>,
    /// Mirror every frame to stderr (`--log-messages`).
    pub log_messages: bool,
}

impl Config {
    /// A configuration with the given home and provider, no frame mirroring.
    pub fn new(home: PathBuf, provider: ProviderSetting) -> Self {
        Self {
            home,
            provider,
            policy: None,
            capture: None,
            user_home: None,
            log_messages: false,
        }
    }

    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// Reads variables through `var` (for tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let nonempty = |name: &str| var(name).filter(|v| !v.is_empty());
        let home = nonempty("CANDOR_HOME")
            .map(PathBuf::from)
            .or_else(|| nonempty("XDG_STATE_HOME").map(|d| PathBuf::from(d).join("candor")))
            .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".local/state/candor")))
            .unwrap_or_else(|| std::env::temp_dir().join("candor"));
        let script = nonempty("CANDOR_SCRIPT").map(PathBuf::from);
        let provider = match nonempty("CANDOR_PROVIDER").as_deref() {
            Some("scripted") => ProviderSetting::Scripted { script },
            Some(name @ ("anthropic" | "openai" | "openai-responses")) => {
                ProviderSetting::NotYetAvailable(name.to_owned())
            }
            Some(other) => ProviderSetting::Unknown(other.to_owned()),
            None if nonempty("ANTHROPIC_API_KEY").is_some() => {
                ProviderSetting::NotYetAvailable("anthropic".into())
            }
            None if nonempty("OPENAI_API_KEY").is_some() => {
                ProviderSetting::NotYetAvailable("openai".into())
            }
            None => ProviderSetting::None,
        };
        let mut config = Self::new(home, provider);
        config.policy = nonempty("CANDOR_POLICY").map(PathBuf::from);
        config.capture = nonempty("CANDOR_CAPTURE").map(PathBuf::from);
        config.user_home = nonempty("HOME").map(PathBuf::from);
        config
    }

    /// Where session logs are written.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }
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
            config(&[("ANTHROPIC_API_KEY", "k")]).provider,
            ProviderSetting::NotYetAvailable("anthropic".into())
        );
        assert_eq!(
            config(&[("CANDOR_PROVIDER", "gpt")]).provider,
            ProviderSetting::Unknown("gpt".into())
        );
    }
}
