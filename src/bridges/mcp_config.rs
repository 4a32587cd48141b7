//! Which MCP servers a session starts, and from where.
//!
//! Sources, strongest first (a name given by several is taken from the
//! strongest; the others are listed by `/mcp` as shadowed):
//!
//! 1. the editor's `mcpServers` in `session/new`, `load` or `resume`;
//! 2. Claude Code's local servers for this folder (`~/.claude.json`,
//!    `projects[<cwd>].mcpServers`, which the user added with
//!    `claude mcp add --scope local`);
//! 3. the project's `.mcp.json`: only servers the user enabled
//!    (`enableAllProjectMcpServers`, `enabledMcpjsonServers`, less
//!    `disabledMcpjsonServers`, in any Claude Code settings file or the
//!    folder's entry in `~/.claude.json`), and only in a trusted project
//!    (each is one of the project's wants, listed trusted or not, shown
//!    with what waits for trust, and started on a `/trust`);
//! 4. the user's own: Claude Code's `mcpServers` in `~/.claude.json`, then
//!    Codex's `[mcp_servers.<name>]` in `$CODEX_HOME/config.toml` (without
//!    `enabled = false`).
//!
//! `${VAR}` and `${VAR:-default}` in Claude Code's entries are expanded
//! from candor's environment, as Claude Code does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::{ClaudeLocations, CodexLocations};
use crate::tools::mcp::{ServerSpec, Source, Transport};

/// What the user's and the project's configuration give.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configured {
    /// To start (the project's only when trusted).
    pub servers: Vec<ServerSpec>,
    /// The project's enabled servers, which only trust starts, each as the
    /// user is shown it (trusted or not).
    pub wants: Vec<String>,
    /// What was wrong, naming the file.
    pub problems: Vec<String>,
}

/// The servers of the user's Claude Code and Codex configuration and of
/// the project's `.mcp.json` (see the module docs).
pub fn configured(
    claude: Option<&ClaudeLocations>,
    codex: Option<&CodexLocations>,
    cwd: &Path,
    trusted: bool,
) -> Configured {
    let mut out = Configured::default();
    if let Some(locations) = claude {
        claude_servers(locations, cwd, trusted, &mut out);
    }
    if let Some(home) = codex.and_then(|c| c.home.as_ref()) {
        codex_servers(&home.join("config.toml"), &mut out);
    }
    out
}

fn read_json(path: &Path, out: &mut Configured) -> Option<Map<String, Value>> {
    let text = match super::settings_file::read_settings(path) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(e) => {
            out.problems
                .push(format!("{}: {e}; skipped", path.display()));
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => {
            out.problems
                .push(format!("{}: not a JSON object; skipped", path.display()));
            None
        }
        Err(e) => {
            out.problems
                .push(format!("{}: invalid JSON ({e}); skipped", path.display()));
            None
        }
    }
}

fn claude_servers(locations: &ClaudeLocations, cwd: &Path, trusted: bool, out: &mut Configured) {
    let global = locations
        .global_file
        .as_ref()
        .and_then(|p| read_json(p, out).map(|m| (p.clone(), m)));
    let folder = global.as_ref().and_then(|(_, map)| {
        map.get("projects")
            .and_then(|p| p.get(cwd.display().to_string()))
            .and_then(Value::as_object)
            .cloned()
    });
    if let (Some((path, _)), Some(entry)) = (&global, &folder) {
        add_claude_map(entry, Source::ClaudeLocal(path.clone()), out);
    }
    // The project's .mcp.json: servers the user enabled, in the user's own
    // files only (a repository's settings cannot enable its own servers).
    let mcp_json = cwd.join(".mcp.json");
    if let Some(map) = read_json(&mcp_json, out) {
        use crate::bridges::claude::Source as Scope;
        let mut enabling: Vec<Map<String, Value>> = crate::bridges::claude::files(locations, cwd)
            .into_iter()
            .filter(|(scope, _)| matches!(scope, Scope::User | Scope::Managed))
            .filter_map(|(_, path)| read_json(&path, out))
            .collect();
        enabling.extend(folder.clone());
        let all = enabling
            .iter()
            .any(|m| m.get("enableAllProjectMcpServers") == Some(&Value::Bool(true)));
        let listed = |key: &str| -> Vec<String> {
            enabling
                .iter()
                .filter_map(|m| m.get(key).and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        let enabled = listed("enabledMcpjsonServers");
        let disabled = listed("disabledMcpjsonServers");
        let mut project = Configured::default();
        add_claude_map(&map, Source::Project(mcp_json.clone()), &mut project);
        out.problems.append(&mut project.problems);
        for spec in project.servers {
            if disabled.contains(&spec.name) || !(all || enabled.contains(&spec.name)) {
                continue;
            }
            // The entry as written (command, args, env, headers, cwd): what
            // a trust binds to, so any change to it waits for trust again.
            // Listed whether trusted or not, as every want is.
            let written = map
                .get("mcpServers")
                .and_then(|m| m.get(&spec.name))
                .map(Value::to_string)
                .unwrap_or_default();
            out.wants.push(format!(
                "MCP server {:?} ({}): {written}",
                spec.name,
                mcp_json.display(),
            ));
            if trusted {
                out.servers.push(spec);
            }
        }
    }
    if let Some((path, map)) = &global {
        add_claude_map(map, Source::ClaudeUser(path.clone()), out);
    }
}

/// Adds the entries of a Claude Code `mcpServers` table. A project's own
/// entries get nothing candor keeps from children: its `${VAR}`s of the
/// provider keys and `CANDOR_*` stay as written, and an `env` entry naming
/// one of those is dropped.
fn add_claude_map(map: &Map<String, Value>, source: Source, out: &mut Configured) {
    let Some(servers) = map.get("mcpServers").and_then(Value::as_object) else {
        return;
    };
    let withheld = match source {
        Source::Project(_) => crate::tools::exec::withheld_variables(),
        _ => Vec::new(),
    };
    for (name, entry) in servers {
        match claude_entry(entry, &withheld) {
            Ok(transport) => out.servers.push(ServerSpec {
                name: name.clone(),
                source: source.clone(),
                transport,
                startup_timeout: None,
                tool_timeout: None,
            }),
            Err(e) => out.problems.push(format!(
                "{}: MCP server {name:?}: {e}; skipped",
                source.describe()
            )),
        }
    }
}

fn claude_entry(entry: &Value, withheld: &[String]) -> Result<Transport, String> {
    let expand = |text: &str| expand(text, withheld);
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(expand);
    let table = |key: &str| -> Vec<(String, String)> {
        entry
            .get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !withheld.contains(k))
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), expand(v))))
                    .collect()
            })
            .unwrap_or_default()
    };
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("stdio");
    match kind {
        "stdio" => {
            let command = text("command").ok_or("no \"command\"")?;
            let args = entry
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(expand).collect())
                .unwrap_or_default();
            Ok(Transport::Stdio {
                command,
                args,
                env: table("env"),
                cwd: None,
            })
        }
        "http" | "streamable-http" => Ok(Transport::Http {
            url: text("url").ok_or("no \"url\"")?,
            headers: table("headers"),
        }),
        "sse" => Ok(Transport::Sse {
            url: text("url").ok_or("no \"url\"")?,
            headers: table("headers"),
        }),
        other => Err(format!("unknown \"type\" {other:?}")),
    }
}

/// `${VAR}` and `${VAR:-default}` from candor's environment; an unset
/// variable without a default, or one of `withheld`, is left as written.
fn expand(text: &str, withheld: &[String]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let value = std::env::var(name)
            .ok()
            .filter(|_| !withheld.iter().any(|w| w == name));
        match (value.ok_or(()), default) {
            (Ok(v), _) => out.push_str(&v),
            (Err(_), Some(d)) => out.push_str(d),
            (Err(_), None) => out.push_str(&rest[start..start + 3 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn codex_servers(path: &Path, out: &mut Configured) {
    let text = match super::settings_file::read_settings(path) {
        Ok(Some(text)) => text,
        Ok(None) => return,
        Err(e) => {
            out.problems
                .push(format!("{}: {e}; skipped", path.display()));
            return;
        }
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(t) => t,
        // The Codex bridge already reports a broken config.toml.
        Err(_) => return,
    };
    let Some(servers) = table.get("mcp_servers").and_then(toml::Value::as_table) else {
        return;
    };
    let servers: BTreeMap<_, _> = servers.iter().collect();
    for (name, entry) in servers {
        let Some(entry) = entry.as_table() else {
            continue;
        };
        if entry.get("enabled").and_then(toml::Value::as_bool) == Some(false) {
            continue;
        }
        let text = |key: &str| entry.get(key).and_then(toml::Value::as_str);
        let strings = |key: &str| -> Vec<(String, String)> {
            entry
                .get(key)
                .and_then(toml::Value::as_table)
                .map(|t| {
                    t.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let seconds = |key: &str| {
            entry
                .get(key)
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(|s| Duration::from_secs_f64(s.min(3600.0)))
        };
        let transport = if let Some(url) = text("url") {
            let mut headers = strings("http_headers");
            for (header, var) in strings("env_http_headers") {
                if let Ok(value) = std::env::var(&var) {
                    headers.push((header, value));
                }
            }
            if let Some(var) = text("bearer_token_env_var")
                && let Ok(token) = std::env::var(var)
            {
                headers.push(("Authorization".into(), format!("Bearer {token}")));
            }
            Transport::Http {
                url: url.to_owned(),
                headers,
            }
        } else if let Some(command) = text("command") {
            Transport::Stdio {
                command: command.to_owned(),
                args: entry
                    .get("args")
                    .and_then(toml::Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(toml::Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                env: strings("env"),
                cwd: text("cwd").map(PathBuf::from),
            }
        } else {
            out.problems.push(format!(
                "{}: MCP server {name:?} has neither \"command\" nor \"url\"; skipped",
                path.display()
            ));
            continue;
        };
        out.servers.push(ServerSpec {
            name: name.clone(),
            source: Source::Codex(path.to_owned()),
            transport,
            startup_timeout: seconds("startup_timeout_sec"),
            tool_timeout: seconds("tool_timeout_sec"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_as_claude_code_expands_them() {
        let home = std::env::var("HOME").unwrap_or_default();
        assert_eq!(expand("${HOME}/x", &[]), format!("{home}/x"));
        assert_eq!(
            expand("${CANDOR_TEST_SURELY_UNSET:-fallback}", &[]),
            "fallback"
        );
        assert_eq!(
            expand("a ${CANDOR_TEST_SURELY_UNSET} b", &[]),
            "a ${CANDOR_TEST_SURELY_UNSET} b"
        );
        assert_eq!(expand("${unclosed", &[]), "${unclosed");
        // A project's entry does not get what candor withholds.
        assert_eq!(expand("${HOME}", &["HOME".into()]), "${HOME}");
    }

    #[test]
    fn a_projects_entry_cannot_ask_for_the_keys_candor_keeps_from_children() {
        let withheld = vec!["ANTHROPIC_API_KEY".to_owned()];
        let entry = serde_json::json!({"command": "srv", "args": ["${ANTHROPIC_API_KEY}"],
            "env": {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}", "SMUGGLED": "${ANTHROPIC_API_KEY}"}});
        let Ok(Transport::Stdio { args, env, .. }) = claude_entry(&entry, &withheld) else {
            panic!("not a stdio entry");
        };
        assert_eq!(args, ["${ANTHROPIC_API_KEY}"]);
        assert_eq!(
            env,
            [("SMUGGLED".to_owned(), "${ANTHROPIC_API_KEY}".to_owned())]
        );
    }
}
