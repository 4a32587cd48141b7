//! Asking the user through `session/request_permission` (one request,
//! its answer one of the options offered, or why not): for a call whose
//! decision was `ask` (`session::call`) and for a confined command's
//! connection to a host its allowlist does not name
//! (`session::network`).

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId,
};

use super::kit::SessionKit;
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

/// Sends `session/request_permission` for `card` with `choices` on
/// `session` (a subagent's parent's, when the client does not take
/// subagent sessions: [`placed`]); the answer is one of them, or why not.
pub(crate) async fn ask_client(
    kit: &SessionKit,
    session: &str,
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
    let request = RequestPermissionRequest::new(SessionId::new(session.to_owned()), card, options);
    match kit.client.request_permission(request, cancel).await {
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

/// Where a question about a call of this session is asked: on its own
/// card, or, in a subagent of a client that does not take subagent
/// sessions, on its parent's card, naming the subagent, with its own call
/// inside. The card as shown, and the session it is asked in.
pub(crate) fn placed(
    kit: &SessionKit,
    c: &super::commit::Committer,
    card: agent_client_protocol_schema::v1::ToolCallUpdate,
) -> (agent_client_protocol_schema::v1::ToolCallUpdate, String) {
    match kit.family.place.as_ref().and_then(|p| p.asked_on.as_ref()) {
        Some(on) => (
            super::kit::on_parent_card(card, on, c.session_id()),
            on.session_id.clone(),
        ),
        None => (card, kit.session_id.clone()),
    }
}

/// How the person answered the form asking to lift the sandbox for one
/// command.
pub(crate) enum Lifted {
    /// Lifted for this command: the call, approved for the arguments shown.
    Yes(Box<crate::interception::ApprovedCall>),
    /// Not lifted: what the model is told.
    No(String),
    Cancelled,
}

/// How long the person has to answer the form.
const LIFT_WAIT: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// The choice in the form that lifts the sandbox (nothing else does: no
/// default, no boolean an editor could fill in by itself).
const OUTSIDE: &str = "outside";

/// Asks the person, in an `elicitation/create` form scoped to the call's
/// card, whether the command may run outside the sandbox this once
/// (`protocol/sandbox.md`, "The sandbox and the permission rules"). The
/// question and the answer are the call's `permission/requested` and
/// `permission/resolved` (its options of kind `form`); the answer is on
/// disk before anything runs. Never a permission request: some editors
/// answer those by themselves.
pub(crate) async fn lift_by_form(
    c: &mut super::commit::Committer,
    kit: &SessionKit,
    s: &crate::interception::Settled,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Lifted, crate::event_log::LogError> {
    use agent_client_protocol_schema::v1::{
        CreateElicitationRequest, ElicitationAction, ElicitationContentValue, ElicitationFormMode,
        ElicitationPropertySchema, ElicitationSchema, ElicitationSessionScope, EnumOption,
        StringPropertySchema, ToolCallId,
    };
    let id = s.id();
    let digest = s.digest().to_owned();
    let choices = vec![
        PermissionChoice {
            option_id: OUTSIDE.into(),
            kind: "form".into(),
            name: "Run it outside the sandbox, this once".into(),
        },
        PermissionChoice {
            option_id: "inside".into(),
            kind: "form".into(),
            name: "Keep the sandbox".into(),
        },
    ];
    c.commit(crate::event_log::Event::PermissionRequested {
        tool_call_id: id.to_owned(),
        digest: digest.clone(),
        options: choices.clone(),
        preview: None,
    })?;
    let command = s
        .effective()
        .get("command")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let why = match s.disposition() {
        crate::interception::policy::Disposition::Ask {
            reason: Some(r), ..
        } => r.clone(),
        _ => String::new(),
    };
    let field = ElicitationPropertySchema::String(
        StringPropertySchema::new()
            .title("Outside the sandbox?".to_owned())
            .description(why)
            .one_of(
                choices
                    .iter()
                    .map(|o| EnumOption::new(o.option_id.clone(), o.name.clone()))
                    .collect::<Vec<_>>(),
            ),
    );
    let mut schema = ElicitationSchema::new();
    schema.properties.insert("sandbox".into(), field);
    schema.required = Some(vec!["sandbox".into()]);
    let scope = ElicitationSessionScope::new(SessionId::new(kit.session_id.clone()))
        .tool_call_id(ToolCallId::new(id.to_owned()));
    let request = CreateElicitationRequest::new(
        ElicitationFormMode::new(scope, schema),
        format!("Run `{command}` outside the sandbox?"),
    );
    let answer = kit
        .client
        .create_elicitation(request, cancel, LIFT_WAIT)
        .await;
    let (outcome, reason) = match &answer {
        Ok(r) => match &r.action {
            ElicitationAction::Accept(accepted) => {
                let chosen = accepted.content.as_ref().and_then(|c| c.get("sandbox"));
                match chosen {
                    Some(ElicitationContentValue::String(v)) if v == OUTSIDE => {
                        (crate::event_log::PermissionOutcome::AllowedOnce, None)
                    }
                    _ => (crate::event_log::PermissionOutcome::Rejected, None),
                }
            }
            ElicitationAction::Decline => (crate::event_log::PermissionOutcome::Rejected, None),
            _ => (crate::event_log::PermissionOutcome::Cancelled, None),
        },
        Err(Failed::Cancelled) => (crate::event_log::PermissionOutcome::Cancelled, None),
        Err(e) => (
            crate::event_log::PermissionOutcome::Failed,
            Some(format!("the editor could not ask in a form ({e})")),
        ),
    };
    c.commit_durable(crate::event_log::Event::PermissionResolved {
        tool_call_id: id.to_owned(),
        outcome,
        digest: digest.clone(),
        base: None,
        grant: None,
        reason: reason.clone(),
    })
    .await?;
    Ok(match outcome {
        crate::event_log::PermissionOutcome::AllowedOnce => match s.approve_answered(&digest) {
            Some(call) => Lifted::Yes(Box::new(call)),
            None => Lifted::No("the answer does not match the arguments shown, so the call did not run".into()),
        },
        crate::event_log::PermissionOutcome::Rejected => Lifted::No(
            "The user kept the sandbox for this command, so it did not run. Run it without dangerouslyDisableSandbox, or tell the user what it needs and why.".into(),
        ),
        crate::event_log::PermissionOutcome::Cancelled if cancel.is_cancelled() => Lifted::Cancelled,
        _ => Lifted::No(format!(
            "The sandbox was not lifted ({}), so the command did not run.",
            reason.unwrap_or_else(|| "the form was dismissed".into())
        )),
    })
}
