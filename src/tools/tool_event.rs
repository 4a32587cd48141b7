//! What a running tool tells the session ([`ToolEvent`]): its output as it
//! comes, the editor terminal it runs in, an MCP answer's content, an MCP
//! server's question to the user ([`Elicited`]), and a confined command's
//! connections (the sandbox's proxy asking about a host, and how it
//! decided). A leaf: the tools that send these and the context that
//! carries the sender import it, and it imports none of them.

use serde_json::Value;

use super::output;
use crate::event_log::{ElicitationAnswered, ElicitationAsked};

/// Something a running tool tells the session.
#[derive(Debug)]
pub enum ToolEvent {
    /// Output to show on the card (already throttled, see `output`).
    Output(output::Chunk),
    /// The command runs in this editor terminal: the card shows it.
    Terminal(String),
    /// What an MCP tool answered beside its text.
    Content {
        content: Vec<crate::event_log::ResultContent>,
        structured: Option<Value>,
    },
    /// An MCP server's question to the user, or how it ended
    /// (`mcp::elicit`): `recorded` is answered once it is in the log, and
    /// nothing goes on before.
    Elicitation(Elicited, tokio::sync::oneshot::Sender<()>),
    /// A confined command is connecting to a host its network allowlist
    /// does not name: the session asks the user on the call's card and
    /// answers through `reply` (`session::network`).
    NetworkAsk {
        host: String,
        port: u16,
        reply: tokio::sync::oneshot::Sender<crate::sandbox::Answer>,
    },
    /// How the sandbox's proxy decided one of the command's connections.
    Network(crate::sandbox::Decision),
}

/// What the session records of an MCP server's question (`mcp::elicit`).
#[derive(Debug)]
pub enum Elicited {
    /// Asked (or about to be): `elicitation/requested`.
    Asked(ElicitationAsked),
    /// How it ended: `elicitation/resolved`.
    Answered(ElicitationAnswered),
    /// Something the user should know: candor answered for them.
    Notice(String),
}
