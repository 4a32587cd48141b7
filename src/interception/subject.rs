//! The call a decision is about, typed: after [`crate::tools::Tool::accept`]
//! every judge of a call (the hooks' `if` filters, the permission rules and
//! the mode, the grant offer, the read filter) reads this, never the call's
//! JSON. It borrows the settled call's input, so what is judged is the
//! value that runs.

use std::path::Path;

use crate::tools::mcp::McpTool;
use crate::tools::{Accepted, ToolInput};

/// A settled (or approved) call as its judges see it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The tool's name as the model wrote it (rules name tools by it).
    pub name: &'a str,
    /// The input as accepted: its path absolute and resolved, a Bash line
    /// with what it will run ([`crate::tools::bash::BashInput::script`]).
    pub input: &'a ToolInput,
    /// The path as written (made absolute, links not followed), when it
    /// differs from where it leads ([`ToolInput::target`]): rules judge
    /// both.
    pub spelled: Option<&'a Path>,
    /// For a tool of an MCP server: the tool, as candor reads it (whether
    /// it runs where reads do, and why; its unsanitised name).
    pub mcp: Option<&'a McpTool>,
}

impl<'a> Subject<'a> {
    /// The subject of a call to one of candor's tools whose arguments
    /// `accepted` holds.
    pub fn of(name: &'a str, accepted: &'a Accepted) -> Subject<'a> {
        Subject {
            name,
            input: &accepted.input,
            spelled: accepted.spelled.as_deref(),
            mcp: None,
        }
    }

    /// `mcp__<server>__<tool>` unsanitised, for an MCP tool: deny and ask
    /// rules are checked on it too (the name offered may be cut or
    /// suffixed).
    pub fn mcp_name(&self) -> Option<String> {
        self.mcp.map(|m| format!("mcp__{}__{}", m.server, m.tool))
    }
}
