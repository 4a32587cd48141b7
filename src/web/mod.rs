//! The web as candor itself reaches it, for the WebFetch tool
//! (`tools::web_fetch`): which addresses are refused ([`address`]), the
//! fetch with its checked resolver, manual redirects and caps ([`fetch`]),
//! and HTML made Markdown ([`markdown`]); and the user's `[web]` config
//! keys ([`WebKeys`]). `protocol/web.md` is the contract.
//!
//! Self-contained: it imports nothing of candor's, so the tools, the
//! config and the policy can all use it.

pub mod address;
pub mod fetch;
pub mod markdown;

use std::time::Duration;

use serde::Deserialize;

pub use fetch::{Access, Failure, Page};

/// The user config file's `[web]` table (read from the user's file only: a
/// repository must not open the user's network to itself).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebKeys {
    /// Addresses (or CIDR ranges) WebFetch may reach though they are not
    /// public: loopback, private, link-local, … (`["127.0.0.1"]`).
    pub allow_addresses: Option<Vec<String>>,
    /// Hosts WebFetch fetches over plain `http` instead of upgrading to
    /// `https` (`["127.0.0.1", "intranet.example"]`).
    pub allow_http: Option<Vec<String>>,
    /// How long one fetch may take, in seconds (default 30, at most 300).
    pub fetch_timeout: Option<u64>,
}

impl WebKeys {
    /// What WebFetch may do under these keys; `Err` names a wrong entry.
    pub fn access(&self) -> Result<Access, String> {
        let addresses = address::Addresses::new(self.allow_addresses.as_deref().unwrap_or(&[]))?;
        let http_hosts = self
            .allow_http
            .iter()
            .flatten()
            .map(|h| address::host_key(h))
            .filter(|h| !h.is_empty())
            .collect();
        let timeout = self.fetch_timeout.map_or(fetch::DEFAULT_TIMEOUT, |s| {
            Duration::from_secs(s.clamp(1, 300))
        });
        Ok(Access {
            addresses,
            http_hosts,
            timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_access_and_a_wrong_address_is_named() {
        let keys: WebKeys = toml::from_str(
            "allow_addresses = [\"127.0.0.1\"]\nallow_http = [\"LocalHost.\"]\nfetch_timeout = 0\n",
        )
        .unwrap();
        let access = keys.access().unwrap();
        assert_eq!(access.http_hosts, vec!["localhost".to_owned()]);
        assert_eq!(access.timeout, Duration::from_secs(1));
        assert!(
            access
                .addresses
                .refusal("127.0.0.1".parse().unwrap())
                .is_none()
        );
        let wrong = WebKeys {
            allow_addresses: Some(vec!["intranet".into()]),
            ..WebKeys::default()
        };
        assert!(wrong.access().unwrap_err().contains("\"intranet\""));
        assert_eq!(WebKeys::default().access().unwrap(), Access::default());
    }
}
