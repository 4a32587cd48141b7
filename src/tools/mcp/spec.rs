//! An MCP server to start: how candor reaches it ([`Transport`]), where its
//! entry came from ([`Source`]), and which entry wins when several sources
//! name the same server ([`choose`]: the editor's, then Claude Code's local
//! scope, then the project's `.mcp.json`, then the user's own). The user's
//! and the project's files are read by `bridges::mcp_config`.

use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol_schema::v1::McpServer;

/// One server to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub source: Source,
    pub transport: Transport,
    /// How long it may take to start (Codex's `startup_timeout_sec`);
    /// `None`: the session's default.
    pub startup_timeout: Option<Duration>,
    /// How long one call may take (Codex's `tool_timeout_sec`).
    pub tool_timeout: Option<Duration>,
}

/// How candor speaks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A program candor starts, spoken to over its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// The older HTTP+SSE transport (`tools::mcp::sse`).
    Sse {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl Transport {
    /// What it runs or where it connects, for people (`/mcp`, the trust
    /// question). Header values are left out (they hold tokens).
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                let mut words = vec![command.clone()];
                words.extend(args.iter().cloned());
                format!("stdio: {}", words.join(" "))
            }
            Transport::Http { url, .. } => format!("http: {url}"),
            Transport::Sse { url, .. } => format!("sse: {url}"),
        }
    }
}

/// Where a server's entry came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The editor (`session/new`).
    Editor,
    /// Claude Code's local scope (`~/.claude.json`, this folder's entry).
    ClaudeLocal(PathBuf),
    /// The project's `.mcp.json`.
    Project(PathBuf),
    /// Claude Code's user scope (`~/.claude.json`).
    ClaudeUser(PathBuf),
    /// Codex's `config.toml`.
    Codex(PathBuf),
}

impl Source {
    /// Strongest first (see the module docs).
    fn rank(&self) -> u8 {
        match self {
            Source::Editor => 0,
            Source::ClaudeLocal(_) => 1,
            Source::Project(_) => 2,
            Source::ClaudeUser(_) => 3,
            Source::Codex(_) => 4,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Source::Editor => "the editor".into(),
            Source::ClaudeLocal(p) => format!("{} (local)", p.display()),
            Source::Project(p) => p.display().to_string(),
            Source::ClaudeUser(p) => format!("{} (user)", p.display()),
            Source::Codex(p) => p.display().to_string(),
        }
    }
}

/// The servers a session starts, and those a stronger source shadowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chosen {
    pub servers: Vec<ServerSpec>,
    /// Each with the source of the entry that won.
    pub shadowed: Vec<(ServerSpec, Source)>,
}

/// Picks one entry per name, the strongest source's (see the module docs);
/// in the order of `specs` otherwise.
pub fn choose(specs: Vec<ServerSpec>) -> Chosen {
    let mut chosen = Chosen::default();
    let mut order: Vec<ServerSpec> = specs;
    order.sort_by_key(|s| s.source.rank());
    for spec in order {
        match chosen.servers.iter().find(|s| s.name == spec.name) {
            Some(winner) => {
                let source = winner.source.clone();
                chosen.shadowed.push((spec, source));
            }
            None => chosen.servers.push(spec),
        }
    }
    chosen
}

/// The editor's servers. A transport candor does not know is skipped with
/// a problem.
pub fn from_editor(servers: &[McpServer]) -> (Vec<ServerSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    let headers =
        |items: &[agent_client_protocol_schema::v1::HttpHeader]| -> Vec<(String, String)> {
            items
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect()
        };
    for server in servers {
        let (name, transport) = match server {
            McpServer::Stdio(s) => (
                s.name.clone(),
                Transport::Stdio {
                    command: s.command.display().to_string(),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|e| (e.name.clone(), e.value.clone()))
                        .collect(),
                    cwd: None,
                },
            ),
            McpServer::Http(s) => (
                s.name.clone(),
                Transport::Http {
                    url: s.url.clone(),
                    headers: headers(&s.headers),
                },
            ),
            McpServer::Sse(s) => (
                s.name.clone(),
                Transport::Sse {
                    url: s.url.clone(),
                    headers: headers(&s.headers),
                },
            ),
            #[allow(unreachable_patterns)]
            _ => {
                problems.push(
                    "the editor offered an MCP server over a transport candor does not know; skipped"
                        .to_owned(),
                );
                continue;
            }
        };
        specs.push(ServerSpec {
            name,
            source: Source::Editor,
            transport,
            startup_timeout: None,
            tool_timeout: None,
        });
    }
    (specs, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, source: Source) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            source,
            transport: Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: Vec::new(),
            },
            startup_timeout: None,
            tool_timeout: None,
        }
    }

    #[test]
    fn the_editor_wins_then_the_project_then_the_user() {
        let chosen = choose(vec![
            spec("a", Source::ClaudeUser("u".into())),
            spec("a", Source::Project("p".into())),
            spec("b", Source::Codex("c".into())),
            spec("a", Source::Editor),
            spec("b", Source::Project("p".into())),
        ]);
        let names: Vec<_> = chosen
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.source.rank()))
            .collect();
        assert_eq!(names, [("a", 0), ("b", 2)]);
        assert_eq!(chosen.shadowed.len(), 3);
        assert!(
            chosen
                .shadowed
                .iter()
                .all(|(lost, won)| won.rank() < lost.source.rank())
        );
    }
}
