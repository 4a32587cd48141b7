//! Asking the user through `session/request_permission` (one request,
//! its answer one of the options offered, or why not): for a call whose
//! decision was `ask` (`session::call`) and for a confined command's
//! connection to a host its allowlist does not name
//! (`session::network`).

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId,
};

use super::context::Gate;
use crate::client::Failed;
use crate::event_log::PermissionChoice;

/// How the client answered a permission request.
#[derive(Debug)]
pub(crate) enum Asked {
    /// One of the options offered (its id).
    Chose(String),
    /// Cancelled while open (the prompt was cancelled).
    Cancelled,
    /// The client could not ask, dismissed it or answered what was not
    /// offered: why.
    Failed(String),
}

/// Sends `session/request_permission` for `card` with `choices`; the
/// answer is one of them, or why not.
pub(crate) async fn ask_client(
    gate: &Gate,
    card: agent_client_protocol_schema::v1::ToolCallUpdate,
    choices: &[PermissionChoice],
    cancel: &tokio_util::sync::CancellationToken,
) -> Asked {
    let options = choices
        .iter()
        .map(|o| {
            let kind = match o.kind.as_str() {
                "allow_always" => PermissionOptionKind::AllowAlways,
                "reject_once" => PermissionOptionKind::RejectOnce,
                "reject_always" => PermissionOptionKind::RejectAlways,
                _ => PermissionOptionKind::AllowOnce,
            };
            PermissionOption::new(o.option_id.clone(), o.name.clone(), kind)
        })
        .collect();
    let request =
        RequestPermissionRequest::new(SessionId::new(gate.session_id.clone()), card, options);
    match gate.client.request_permission(request, cancel).await {
        Err(Failed::Cancelled) => Asked::Cancelled,
        Err(error) => Asked::Failed(format!("the client could not ask the user ({error})")),
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => {
                let chosen = selected.option_id.0.as_ref();
                if choices.iter().any(|o| o.option_id == chosen) {
                    Asked::Chose(chosen.to_owned())
                } else {
                    Asked::Failed(format!(
                        "the client chose an option candor did not offer ({chosen})"
                    ))
                }
            }
            _ if cancel.is_cancelled() => Asked::Cancelled,
            _ => Asked::Failed("the permission request was dismissed".to_owned()),
        },
    }
}
