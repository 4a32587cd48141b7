//! What a card shows about a call before it runs ([`Presentation`]: title,
//! kind, locations), and the cards of calls no tool of candor's answers
//! (an unknown tool, an MCP tool). Each tool's `present` builds its own.

use agent_client_protocol_schema::v1::{ToolCallLocation, ToolKind};

/// What a card shows about a call before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Presentation {
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<ToolCallLocation>,
}

/// A card for a call to a tool candor does not have.
pub fn present_unknown(name: &str) -> Presentation {
    Presentation {
        title: format!("Unknown tool {name}"),
        kind: ToolKind::Other,
        locations: Vec::new(),
    }
}

/// A card for a call to an MCP tool: `server: tool`, its kind from the
/// tool's annotations (`read`, `fetch` when it also reaches the outside
/// world, else `other`).
pub fn present_mcp(target: &crate::event_log::McpTarget) -> Presentation {
    // Names are the server's: no control characters, and a card-sized
    // length.
    let clean = |s: &str| crate::text::shorten(&s.replace(char::is_control, " "), 80);
    Presentation {
        title: format!("{}: {}", clean(&target.server), clean(&target.tool)),
        kind: match (target.read_only, target.open_world) {
            (true, true) => ToolKind::Fetch,
            (true, false) => ToolKind::Read,
            (false, _) => ToolKind::Other,
        },
        locations: Vec::new(),
    }
}
