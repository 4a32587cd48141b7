//! The edge to the editor: every request and notification candor sends the
//! client, typed with `agent-client-protocol-schema`'s types.
//!
//! A request is an [`AgentRequest`]; its method name comes from the schema
//! crate's own table ([`AgentRequest::method`]) and its answer is decoded by
//! it ([`ClientResponse::from_method_and_result`]), so no module writes an
//! ACP method name or reads an answer's fields by hand. A tidy test fails on
//! an ACP method string (`"fs/`, `"terminal/`, `"session/`) anywhere in
//! `src/` but here, `dispatch` (the incoming side) and the harness (which
//! plays a client).
//!
//! Every wait is bounded: a request is withdrawn (`$/cancel_request`) on
//! the caller's cancel token, and, where given, after a time limit.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    AgentNotification, AgentRequest, ClientResponse, CreateElicitationRequest,
    CreateElicitationResponse, CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, RequestPermissionRequest,
    RequestPermissionResponse, SessionId, SessionNotification, SessionUpdate,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::rpc::Outgoing;

/// The editor, as one session sees it: what it offers, and the way to ask.
#[derive(Debug, Clone)]
pub struct ClientLink {
    pub(crate) outgoing: Arc<Outgoing>,
    pub session_id: String,
    /// `fs.readTextFile` was advertised.
    pub read: bool,
    /// `fs.writeTextFile` was advertised.
    pub write: bool,
    /// `terminal` was advertised.
    pub terminal: bool,
    /// `elicitation.form` was advertised (`elicitation/create` forms).
    pub elicit_form: bool,
    /// `elicitation.url` was advertised (`elicitation/create` pages).
    pub elicit_url: bool,
    /// How long a file request waits for the editor's answer.
    pub fs_timeout: Duration,
}

/// Why a request got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// Withdrawn: the caller's cancel token fired.
    Cancelled,
    /// Withdrawn: no answer within the time limit.
    TimedOut,
    /// The client answered with an error, or with something that is not the
    /// answer to this request: the reason, for the user or the model.
    Client(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Cancelled => f.write_str("cancelled"),
            Failed::TimedOut => f.write_str("timed out"),
            Failed::Client(why) => f.write_str(why),
        }
    }
}

impl ClientLink {
    fn session(&self) -> SessionId {
        SessionId::new(self.session_id.clone())
    }

    /// Sends `request` and waits for its answer: until `cancel`, and at
    /// most `within` when given.
    async fn call(
        &self,
        request: AgentRequest,
        cancel: &CancellationToken,
        within: Option<Duration>,
    ) -> Result<ClientResponse, Failed> {
        let method = request.method().to_owned();
        let params = serde_json::to_value(&request).unwrap_or(Value::Null);
        let give_up = cancel.child_token();
        let asked = self.outgoing.request_until(&method, params, &give_up);
        let reply = match within {
            None => asked.await,
            Some(limit) => tokio::select! {
                reply = asked => reply,
                () = tokio::time::sleep(limit) => {
                    give_up.cancel();
                    return Err(Failed::TimedOut);
                }
            },
        };
        match reply {
            None => Err(Failed::Cancelled),
            Some(Err(e)) => Err(Failed::Client(client_error(&e))),
            Some(Ok(result)) => {
                ClientResponse::from_method_and_result(&method, result).map_err(|e| {
                    Failed::Client(format!(
                        "the editor's answer to {method} cannot be read ({e})"
                    ))
                })
            }
        }
    }

    /// `session/request_permission`, open until the user answers or
    /// `cancel` fires.
    pub async fn request_permission(
        &self,
        request: RequestPermissionRequest,
        cancel: &CancellationToken,
    ) -> Result<RequestPermissionResponse, Failed> {
        // What the user decides on, made visible (`shown`).
        let request = crate::shown::permission_request(request);
        match self
            .call(
                AgentRequest::RequestPermissionRequest(request),
                cancel,
                None,
            )
            .await?
        {
            ClientResponse::RequestPermissionResponse(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    /// `elicitation/create`, open until the user answers, `cancel` fires
    /// or `within` passes.
    pub async fn create_elicitation(
        &self,
        request: CreateElicitationRequest,
        cancel: &CancellationToken,
        within: Duration,
    ) -> Result<CreateElicitationResponse, Failed> {
        // What the user answers, made visible (`shown`).
        let request = crate::shown::elicitation(request);
        match self
            .call(
                AgentRequest::CreateElicitationRequest(request),
                cancel,
                Some(within),
            )
            .await?
        {
            ClientResponse::CreateElicitationResponse(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    /// `fs/read_text_file`, within the link's `fs_timeout`.
    pub async fn read_text_file(
        &self,
        path: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Result<ReadTextFileResponse, Failed> {
        let request = ReadTextFileRequest::new(self.session(), path.to_owned());
        match self
            .call(
                AgentRequest::ReadTextFileRequest(request),
                cancel,
                Some(self.fs_timeout),
            )
            .await?
        {
            ClientResponse::ReadTextFileResponse(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    /// `fs/write_text_file`, within the link's `fs_timeout`.
    pub async fn write_text_file(
        &self,
        path: &std::path::Path,
        content: &str,
        cancel: &CancellationToken,
    ) -> Result<(), Failed> {
        let request = WriteTextFileRequest::new(self.session(), path.to_owned(), content);
        match self
            .call(
                AgentRequest::WriteTextFileRequest(request),
                cancel,
                Some(self.fs_timeout),
            )
            .await?
        {
            ClientResponse::WriteTextFileResponse(_) => Ok(()),
            _ => Err(unexpected()),
        }
    }

    /// `terminal/create`, answered within `within`.
    pub async fn create_terminal(
        &self,
        request: CreateTerminalRequest,
        cancel: &CancellationToken,
        within: Duration,
    ) -> Result<CreateTerminalResponse, Failed> {
        match self
            .call(
                AgentRequest::CreateTerminalRequest(request),
                cancel,
                Some(within),
            )
            .await?
        {
            ClientResponse::CreateTerminalResponse(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    /// `terminal/wait_for_exit`, until `cancel` (the caller bounds it).
    pub async fn wait_for_terminal_exit(
        &self,
        terminal: &str,
        cancel: &CancellationToken,
    ) -> Result<WaitForTerminalExitResponse, Failed> {
        let request = WaitForTerminalExitRequest::new(self.session(), terminal.to_owned());
        match self
            .call(
                AgentRequest::WaitForTerminalExitRequest(request),
                cancel,
                None,
            )
            .await?
        {
            ClientResponse::WaitForTerminalExitResponse(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    /// `terminal/output`, within `within`.
    pub async fn terminal_output(
        &self,
        terminal: &str,
        cancel: &CancellationToken,
        within: Duration,
    ) -> Result<TerminalOutputResponse, Failed> {
        let request = TerminalOutputRequest::new(self.session(), terminal.to_owned());
        match self
            .call(
                AgentRequest::TerminalOutputRequest(request),
                cancel,
                Some(within),
            )
            .await?
        {
            ClientResponse::TerminalOutputResponse(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    /// `terminal/kill`, within `within`.
    pub async fn kill_terminal(
        &self,
        terminal: &str,
        cancel: &CancellationToken,
        within: Duration,
    ) -> Result<(), Failed> {
        let request = KillTerminalRequest::new(self.session(), terminal.to_owned());
        self.call(
            AgentRequest::KillTerminalRequest(request),
            cancel,
            Some(within),
        )
        .await
        .map(drop)
    }

    /// `terminal/release`, within `within`.
    pub async fn release_terminal(
        &self,
        terminal: &str,
        cancel: &CancellationToken,
        within: Duration,
    ) -> Result<(), Failed> {
        let request = ReleaseTerminalRequest::new(self.session(), terminal.to_owned());
        self.call(
            AgentRequest::ReleaseTerminalRequest(request),
            cancel,
            Some(within),
        )
        .await
        .map(drop)
    }
}

fn unexpected() -> Failed {
    Failed::Client("the editor answered with something else".into())
}

/// Sends `update` as a `session/update` notification (the only way
/// updates reach the client; `session::commit` calls it), its texts made
/// visible ([`crate::shown::update`]).
pub(crate) fn session_update(
    outbox: &crate::transport::Outbox,
    session_id: &SessionId,
    update: SessionUpdate,
) {
    // What the user reads, made visible (`shown`).
    let notification = AgentNotification::SessionNotification(SessionNotification::new(
        session_id.clone(),
        crate::shown::update(update),
    ));
    outbox.notify(notification.method(), &notification);
}

/// A client's JSON-RPC error as a reason: its message, and its `data`
/// when that says more (acpx puts the real reason in `data.details`).
pub(crate) fn client_error(e: &Value) -> String {
    let Some(message) = e.get("message").and_then(Value::as_str) else {
        return e.to_string();
    };
    let detail = match e.get("data") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(o)) => o
            .get("details")
            .or_else(|| o.get("message"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| Some(Value::Object(o.clone()).to_string())),
        Some(other) => Some(other.to_string()),
    };
    match detail {
        Some(d) if !d.is_empty() && d != message => format!("{message} ({d})"),
        _ => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_clients_error_keeps_its_details() {
        let e = json!({"code": -32603, "message": "Internal error", "data": {"details": "Permission denied for fs/read_text_file (--deny-all)"}});
        assert_eq!(
            client_error(&e),
            "Internal error (Permission denied for fs/read_text_file (--deny-all))"
        );
        assert_eq!(client_error(&json!({"code": 1, "message": "gone"})), "gone");
        assert_eq!(
            client_error(&json!({"code": 1, "message": "bad", "data": "no such file"})),
            "bad (no such file)"
        );
    }
}
