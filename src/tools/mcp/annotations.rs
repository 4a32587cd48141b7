//! What candor takes an MCP tool to be, from its server's annotations
//! ([`read`]): whether it changes nothing and whether it reaches outside,
//! which decide whether it may run without asking where reads do
//! (`interception::policy`), and why.
//!
//! - A hint the server did not send takes MCP's default: `readOnlyHint`
//!   false, `destructiveHint` true (meaningful only for a tool that is not
//!   read-only), `openWorldHint` true.
//! - A claim that contradicts itself is read the cautious way:
//!   `readOnlyHint` with `destructiveHint: true` is not read-only.
//! - MCP says annotations from a server that is not trusted must be
//!   treated as untrusted: candor takes them at their word only for a
//!   server the user configured themselves (the editor's `mcpServers`,
//!   their own Claude Code or Codex configuration), never for a project's
//!   `.mcp.json` server, and for none when the user's config says
//!   `mcp_trust_annotations = false`. A tool whose annotations are not
//!   taken is read as MCP's worst case (may change things, may reach
//!   outside).
//!
//! Only a tool read as read-only and not open-world runs unasked (data a
//! read-only tool fetches or sends can still leave).

use crate::event_log::McpHints;

/// Whether a server's annotations are taken at their word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// A server the user configured themselves.
    Taken,
    /// A project's `.mcp.json` server (the file).
    Project(std::path::PathBuf),
    /// The user's config says `mcp_trust_annotations = false`.
    Off,
}

/// What candor takes a tool to be, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub read_only: bool,
    pub open_world: bool,
    /// Why, for people (the log, the audit, a permission's reason).
    pub why: String,
}

impl Reading {
    /// Whether it runs without asking where reads do.
    pub fn runs_unasked(&self) -> bool {
        self.read_only && !self.open_world
    }
}

/// Reads `hints` (see the module docs).
pub fn read(hints: &McpHints, trust: &Trust) -> Reading {
    let worst = |why: String| Reading {
        read_only: false,
        open_world: true,
        why,
    };
    match trust {
        Trust::Taken => {}
        Trust::Project(path) => {
            return worst(format!(
                "its server comes from the project's {}, and candor does not take a project's server at its word on what its tools do",
                path.display()
            ));
        }
        Trust::Off => {
            return worst(
                "your candor config says mcp_trust_annotations = false, so no server's annotations are taken at their word".into(),
            );
        }
    }
    let said = |hint: Option<bool>, name: &str| match hint {
        Some(v) => format!("{name} {v}"),
        None => format!("{name} absent"),
    };
    let read_only = hints.read_only_hint == Some(true);
    if read_only && hints.destructive_hint == Some(true) {
        return Reading {
            read_only: false,
            open_world: hints.open_world_hint != Some(false),
            why: "its server says both readOnlyHint and destructiveHint true, which contradict each other: read as not read-only".into(),
        };
    }
    if !read_only {
        return Reading {
            read_only: false,
            open_world: hints.open_world_hint != Some(false),
            why: format!(
                "not read-only ({}; MCP's default is false)",
                said(hints.read_only_hint, "readOnlyHint")
            ),
        };
    }
    match hints.open_world_hint {
        Some(false) => Reading {
            read_only: true,
            open_world: false,
            why: "read-only, closed-world, as its server says (readOnlyHint true, openWorldHint false)".into(),
        },
        other => Reading {
            read_only: true,
            open_world: true,
            why: format!(
                "read-only as its server says, but it may reach outside ({}; MCP's default is true), so data can leave",
                said(other, "openWorldHint")
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(read_only: Option<bool>, destructive: Option<bool>, open: Option<bool>) -> McpHints {
        McpHints {
            read_only_hint: read_only,
            destructive_hint: destructive,
            idempotent_hint: None,
            open_world_hint: open,
        }
    }

    #[test]
    fn only_a_read_only_closed_world_tool_of_a_users_server_runs_unasked() {
        let t = Trust::Taken;
        let unasked = |h: McpHints, trust: &Trust| read(&h, trust).runs_unasked();
        assert!(unasked(hints(Some(true), None, Some(false)), &t));
        assert!(unasked(hints(Some(true), Some(false), Some(false)), &t));
        // Missing hints take MCP's defaults.
        assert!(!unasked(hints(Some(true), None, None), &t));
        assert!(!unasked(hints(None, None, Some(false)), &t));
        assert!(!unasked(McpHints::default(), &t));
        // Contradictions are read the cautious way.
        assert!(!unasked(hints(Some(true), Some(true), Some(false)), &t));
        assert!(!unasked(hints(Some(true), None, Some(true)), &t));
        // Whose server, and the user's word.
        let closed = hints(Some(true), None, Some(false));
        assert!(!unasked(
            closed.clone(),
            &Trust::Project("/p/.mcp.json".into())
        ));
        assert!(!unasked(closed, &Trust::Off));
    }

    #[test]
    fn the_reading_says_what_was_absent_and_what_contradicted() {
        let r = read(&hints(Some(true), None, None), &Trust::Taken);
        assert!(r.read_only && r.open_world);
        assert!(r.why.contains("openWorldHint absent"), "{}", r.why);
        let r = read(&hints(Some(true), Some(true), Some(false)), &Trust::Taken);
        assert!(!r.read_only && !r.open_world);
        assert!(r.why.contains("contradict"), "{}", r.why);
        let r = read(&McpHints::default(), &Trust::Taken);
        assert!(!r.read_only && r.open_world);
        assert!(r.why.contains("readOnlyHint absent"), "{}", r.why);
        let r = read(
            &hints(Some(true), None, Some(false)),
            &Trust::Project("/p/.mcp.json".into()),
        );
        assert!(!r.read_only && r.open_world);
        assert!(r.why.contains("/p/.mcp.json"), "{}", r.why);
    }
}
