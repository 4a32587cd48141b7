//! An MCP server's questions to the user (MCP `elicitation/create`),
//! passed to the editor as ACP `elicitation/create` scoped to the card of
//! the call the server is serving.
//!
//! candor declares the elicitation capability to every server (forms;
//! pages too when the editor declared `elicitation.url`), and:
//! * a server asks only while candor waits on one of its calls: the
//!   question goes on that call's card ([`Asker`], registered by
//!   `Servers::call_with`); asked at any other time, it is refused with
//!   an error (SEP-2260's answer to an unassociated request) and the user
//!   is told (`Servers::take_notices`), of the first [`TOLD_OUTSIDE`] of a
//!   server's;
//! * the editor's form says which server asks (`The MCP server "x"
//!   asks: …`), and so does the card (`elicitation/requested`), before the
//!   editor is asked;
//! * a field that looks like a secret (a password, a token, an API key:
//!   [`looks_secret`]) is asked, but the message and the card say which
//!   server wants it and that it goes to that server alone; its answer is
//!   never kept in the log (`[withheld]`) and never reaches the model;
//! * a page (URL mode) is passed only to an editor that declared
//!   `elicitation.url`, and only an `https:` one (or `http:` on
//!   loopback) without a user name before its host, in the form the
//!   editor opens (a look-alike host as punycode); the message names its
//!   host first, before the server's own words;
//! * an editor without forms, a form candor cannot show, or a page it
//!   will not pass: the server is told `decline` and the user a notice;
//! * a call's questions reach the editor one at a time, and at most
//!   [`MAX_PER_CALL`] of them: the rest are refused with an error, unseen
//!   and unrecorded, and the user told once (a server asking in a loop
//!   would otherwise fill the log, and the editor with dialogs);
//! * every wait is bounded ([`ANSWER_WAIT`]) and withdrawn
//!   (`$/cancel_request`) when the call is cancelled or ends, or the
//!   server gives the question up;
//! * how it ended is recorded (`elicitation/resolved`) before the server
//!   is answered; the call does not end before that record
//!   (`Asker::close`).

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CreateElicitationRequest, ElicitationAction as AcpAction, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, ElicitationUrlMode, SessionId, ToolCallId,
};
use rmcp::ErrorData;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction as McpAction};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::client::{ClientLink, Failed};
use crate::event_log::{
    ElicitationAction, ElicitationAnswered, ElicitationAsked, ElicitationBy, ElicitationKind,
};
use crate::tools::tool_event::{Elicited, ToolEvent};

/// How long a server's question waits for the user.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10 * 60);
/// How long recording a question or its end may take.
const RECORD_WAIT: Duration = Duration::from_secs(5);
/// The longest message of a server passed on (characters).
const MESSAGE_MAX: usize = 4_000;
/// The largest form passed on (bytes of JSON).
const SCHEMA_MAX: usize = 64 * 1024;
/// The most questions of one call passed on (and recorded).
pub const MAX_PER_CALL: usize = 8;
/// What the log keeps of an answer to a field that looks like a secret.
pub const WITHHELD: &str = "[withheld]";

/// One running MCP call's way to the user: a question its server sends
/// while it runs is scoped to its card.
#[derive(Debug)]
pub struct Asker {
    tool_call_id: String,
    client: Option<ClientLink>,
    events: mpsc::UnboundedSender<ToolEvent>,
    /// Fires when the call is cancelled or over: an open question is
    /// withdrawn.
    over: CancellationToken,
    /// Questions not yet recorded as ended.
    open: watch::Sender<usize>,
    /// Questions asked so far (refused ones too).
    asked: std::sync::atomic::AtomicUsize,
    /// The one question shown at a time.
    showing: tokio::sync::Semaphore,
}

impl Asker {
    /// The way to the user of the call `tool_call_id`, which `cancel`
    /// cancels; what it records goes to `events`.
    pub fn new(
        tool_call_id: String,
        client: Option<ClientLink>,
        events: mpsc::UnboundedSender<ToolEvent>,
        cancel: &CancellationToken,
    ) -> Self {
        Self {
            tool_call_id,
            client,
            events,
            over: cancel.child_token(),
            open: watch::channel(0).0,
            asked: std::sync::atomic::AtomicUsize::new(0),
            showing: tokio::sync::Semaphore::new(1),
        }
    }

    /// The call is over: withdraws its open questions and waits (bounded)
    /// until each one's end is recorded.
    pub(super) async fn close(&self) {
        self.over.cancel();
        let mut open = self.open.subscribe();
        let _ = tokio::time::timeout(2 * RECORD_WAIT, open.wait_for(|n| *n == 0)).await;
    }

    /// Records `what` (in the log before this returns true).
    async fn record(&self, what: Elicited) -> bool {
        let (recorded, done) = oneshot::channel();
        if self
            .events
            .send(ToolEvent::Elicitation(what, recorded))
            .is_err()
        {
            return false;
        }
        matches!(tokio::time::timeout(RECORD_WAIT, done).await, Ok(Ok(())))
    }
}

/// A question counted open while it lives.
struct Open<'a>(&'a watch::Sender<usize>);

impl<'a> Open<'a> {
    fn new(open: &'a watch::Sender<usize>) -> Self {
        open.send_modify(|n| *n += 1);
        Self(open)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// How many of a server's questions asked outside its calls the user is
/// told of; the rest are refused without a word (a server asking in a loop
/// would otherwise fill the log with notices).
pub const TOLD_OUTSIDE: usize = 3;

/// The error a server gets for its `n`th question asked outside its
/// calls, and the notice the user gets (for the first [`TOLD_OUTSIDE`]).
pub(super) fn outside_call(
    server: &str,
    request: &ElicitRequestParams,
    n: usize,
) -> (ErrorData, Option<String>) {
    let message = match request {
        ElicitRequestParams::FormElicitationParams { message, .. }
        | ElicitRequestParams::UrlElicitationParams { message, .. } => message.as_str(),
        _ => "",
    };
    (
        ErrorData::invalid_params(
            "candor passes a server's questions to the user only while it waits on one of this server's tool calls",
            None,
        ),
        (n <= TOLD_OUTSIDE).then(|| {
            let mut notice = format!(
                "The MCP server {server:?} asked you something while no call of it was running ({:?}); candor refused to pass it on.",
                crate::text::shorten(message, 200)
            );
            if n == TOLD_OUTSIDE {
                notice.push_str(" Its further questions outside its calls are refused without telling you again.");
            }
            notice
        }),
    )
}

/// What candor will do with a question: ask the editor, or answer for
/// the user (why).
type Plan = Result<CreateElicitationRequest, String>;

/// Answers `request`, which the server `server` sent while `asker`'s call
/// ran; `gave_up` fires when the server withdraws it.
pub(super) async fn answer(
    server: &str,
    elicitation_id: String,
    asker: Arc<Asker>,
    request: ElicitRequestParams,
    gave_up: &CancellationToken,
) -> Result<ElicitResult, ErrorData> {
    let _open = Open::new(&asker.open);
    let n = asker
        .asked
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    if n > MAX_PER_CALL {
        if n == MAX_PER_CALL + 1 {
            asker
                .record(Elicited::Notice(format!(
                    "The MCP server {server:?} asked more than {MAX_PER_CALL} questions during one call; candor refused the rest of that call's questions without showing them."
                )))
                .await;
        }
        return Err(ErrorData::invalid_request(
            format!("candor passes at most {MAX_PER_CALL} questions of one tool call to the user"),
            None,
        ));
    }
    let (asked, plan) = plan(server, elicitation_id, &asker, &request);
    let secret = asked.secret.clone();
    let elicitation_id = asked.elicitation_id.clone();
    let message = asked.message.clone();
    if !asker.record(Elicited::Asked(asked)).await {
        // Nothing is asked that the log does not hold.
        return Ok(ElicitResult::new(McpAction::Cancel));
    }
    let (action, content, by, reason) = match plan {
        Err(why) => {
            asker
                .record(Elicited::Notice(format!(
                    "The MCP server {server:?} asked you something during its call ({:?}), but {why}; candor declined it for you.",
                    crate::text::shorten(&message, 200)
                )))
                .await;
            (McpAction::Decline, None, ElicitationBy::Candor, Some(why))
        }
        Ok(request) => {
            let fields = keys(&request_schema(&request));
            // One question at a time: the next waits for this one's end.
            let turn = tokio::select! {
                turn = asker.showing.acquire() => turn.map_err(|_| "the call ended"),
                () = asker.over.cancelled() => Err("withdrawn before it was shown: the call was cancelled or ended first"),
                () = gave_up.cancelled() => Err("the server withdrew it before it was shown"),
            };
            match turn {
                Ok(_shown) => ask(&asker, request, &fields, gave_up).await,
                Err(why) => (
                    McpAction::Cancel,
                    None,
                    ElicitationBy::Candor,
                    Some(why.to_owned()),
                ),
            }
        }
    };
    let kept = content.as_ref().map(|c| withheld(c, &secret));
    let answered = ElicitationAnswered {
        tool_call_id: asker.tool_call_id.clone(),
        elicitation_id,
        action: match action {
            McpAction::Accept => ElicitationAction::Accept,
            McpAction::Decline => ElicitationAction::Decline,
            _ => ElicitationAction::Cancel,
        },
        by,
        content: kept,
        reason,
    };
    if !asker.record(Elicited::Answered(answered)).await {
        return Ok(ElicitResult::new(McpAction::Cancel));
    }
    let mut result = ElicitResult::new(action);
    if let Some(content) = content {
        result = result.with_content(Value::Object(content));
    }
    Ok(result)
}

/// The question as recorded, and what candor will do with it.
fn plan(
    server: &str,
    elicitation_id: String,
    asker: &Asker,
    request: &ElicitRequestParams,
) -> (ElicitationAsked, Plan) {
    let (mode, message, schema, url) = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            ElicitationKind::Form,
            message,
            serde_json::to_value(requested_schema).ok(),
            None,
        ),
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => (
            ElicitationKind::Url,
            message,
            None,
            // The log keeps what was asked, not any length of it.
            Some(crate::text::shorten(url, URL_MAX + 1)),
        ),
        // A mode rmcp learned after this candor: nothing to show.
        _ => (ElicitationKind::Form, &String::new(), None, None),
    };
    let message = crate::text::shorten(message, MESSAGE_MAX);
    let too_big = schema
        .as_ref()
        .is_some_and(|s| s.to_string().len() > SCHEMA_MAX);
    let schema = schema.filter(|_| !too_big);
    let secret = schema.as_ref().map(secret_fields).unwrap_or_default();
    let asked = ElicitationAsked {
        tool_call_id: asker.tool_call_id.clone(),
        elicitation_id,
        server: server.to_owned(),
        mode,
        message: message.clone(),
        schema: schema.clone(),
        url: url.clone(),
        secret: secret.clone(),
    };
    let plan = (|| {
        let Some(client) = &asker.client else {
            return Err("candor has no editor to ask through".to_owned());
        };
        let scope = ElicitationSessionScope::new(SessionId::new(client.session_id.clone()))
            .tool_call_id(ToolCallId::new(asker.tool_call_id.clone()));
        let mut text = format!("The MCP server \"{server}\" asks: {message}");
        match (mode, schema, url) {
            (ElicitationKind::Form, _, _) if !client.elicit_form => {
                Err("this editor cannot show forms (it did not declare elicitation.form)".into())
            }
            (ElicitationKind::Form, None, _) => Err(if too_big {
                format!("its form is over {SCHEMA_MAX} bytes")
            } else {
                "its form could not be read".into()
            }),
            (ElicitationKind::Form, Some(schema), _) => {
                let schema: ElicitationSchema = serde_json::from_value(schema)
                    .map_err(|e| format!("candor cannot show its form ({e})"))?;
                if !secret.is_empty() {
                    text.push_str(&format!(
                        "\n\nIt asks for what looks like a secret ({}). Answer only if you trust \"{server}\" with it: the answer goes to that server alone; candor keeps it out of the session log and away from the model.",
                        secret.join(", ")
                    ));
                }
                Ok(CreateElicitationRequest::new(
                    ElicitationFormMode::new(scope, schema),
                    text,
                ))
            }
            (ElicitationKind::Url, _, _) if !client.elicit_url => Err(
                "this editor cannot open pages for a server (it did not declare elicitation.url)"
                    .into(),
            ),
            (ElicitationKind::Url, _, Some(url)) => {
                let (url, host) = page(&url)?;
                // Candor's line first: the server's message cannot come
                // before it with another host.
                text = format!(
                    "The MCP server \"{server}\" asks you to open a page on {host}:\n{url}\n\n{message}"
                );
                let id = match request {
                    ElicitRequestParams::UrlElicitationParams { elicitation_id, .. }
                        if !elicitation_id.is_empty() =>
                    {
                        elicitation_id.clone()
                    }
                    _ => asked_id(asker),
                };
                Ok(CreateElicitationRequest::new(
                    ElicitationUrlMode::new(scope, id, url),
                    text,
                ))
            }
            (ElicitationKind::Url, _, None) => Err("it gave no page to open".into()),
        }
    })();
    (asked, plan)
}

/// An id for a page a server gave none for.
fn asked_id(asker: &Asker) -> String {
    format!("{}-page", asker.tool_call_id)
}

/// The longest page address passed on (bytes).
const URL_MAX: usize = 8 * 1024;

/// A page a server asks the user to open, if candor passes it (`https:`,
/// or `http:` on loopback; no user name or password before the host, a
/// way to make one host read as another; at most [`URL_MAX`]): the
/// address as the editor will open it and the user is shown it (in its
/// ASCII form: a host spelled with letters of other scripts as punycode,
/// as a browser's address bar shows a look-alike), and its host.
fn page(page: &str) -> Result<(String, String), String> {
    if page.len() > URL_MAX {
        return Err(format!("its page's address is longer than {URL_MAX} bytes"));
    }
    let parsed = url::Url::parse(page).map_err(|e| format!("its page is not a URL ({e})"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "its page's address puts a user name or password before the host (a way to make one host read as another)"
                .into(),
        );
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| "its page has no host".to_owned())?
        .to_owned();
    let loopback = matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]");
    match parsed.scheme() {
        "https" => Ok((parsed.to_string(), host)),
        "http" if loopback => Ok((parsed.to_string(), host)),
        other => Err(format!(
            "its page is an {other}: address (candor passes only https: pages)"
        )),
    }
}

/// The field names of a form.
fn request_schema(request: &CreateElicitationRequest) -> Option<Value> {
    match &request.mode {
        agent_client_protocol_schema::v1::ElicitationMode::Form(form) => {
            serde_json::to_value(&form.requested_schema).ok()
        }
        _ => None,
    }
}

fn keys(schema: &Option<Value>) -> Vec<String> {
    schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// How the editor's asking ended: the action, the content for the server
/// (only the form's fields), who answered and why candor did.
async fn ask(
    asker: &Asker,
    request: CreateElicitationRequest,
    fields: &[String],
    gave_up: &CancellationToken,
) -> (
    McpAction,
    Option<Map<String, Value>>,
    ElicitationBy,
    Option<String>,
) {
    let Some(client) = &asker.client else {
        return (McpAction::Cancel, None, ElicitationBy::Candor, None);
    };
    let withdraw = asker.over.child_token();
    let asked = client.create_elicitation(request, &withdraw, ANSWER_WAIT);
    tokio::pin!(asked);
    let answered = tokio::select! {
        answered = &mut asked => answered,
        () = gave_up.cancelled() => {
            withdraw.cancel();
            (&mut asked).await
        }
    };
    let by_candor = |action, why: String| (action, None, ElicitationBy::Candor, Some(why));
    match answered {
        Ok(response) => match response.action {
            AcpAction::Accept(accepted) => {
                let mut content = Map::new();
                for (key, value) in accepted.content.unwrap_or_default() {
                    // Only what the form asked for reaches the server.
                    if fields.contains(&key) {
                        content.insert(key, serde_json::to_value(value).unwrap_or(Value::Null));
                    }
                }
                (McpAction::Accept, Some(content), ElicitationBy::User, None)
            }
            AcpAction::Decline => (McpAction::Decline, None, ElicitationBy::User, None),
            AcpAction::Cancel => (McpAction::Cancel, None, ElicitationBy::User, None),
            _ => by_candor(
                McpAction::Cancel,
                "the editor answered in a way candor does not know".into(),
            ),
        },
        Err(Failed::Cancelled) if gave_up.is_cancelled() => {
            by_candor(McpAction::Cancel, "the server withdrew it".into())
        }
        Err(Failed::Cancelled) => by_candor(
            McpAction::Cancel,
            "withdrawn: the call was cancelled or ended first".into(),
        ),
        Err(Failed::TimedOut) => by_candor(
            McpAction::Cancel,
            format!("no answer within {} minutes", ANSWER_WAIT.as_secs() / 60),
        ),
        Err(Failed::Client(why)) => by_candor(
            McpAction::Decline,
            format!("the editor could not ask ({why})"),
        ),
    }
}

/// `content` with the values of `secret` fields withheld.
fn withheld(content: &Map<String, Value>, secret: &[String]) -> Map<String, Value> {
    content
        .iter()
        .map(|(k, v)| {
            let kept = if secret.contains(k) {
                Value::String(WITHHELD.into())
            } else {
                v.clone()
            };
            (k.clone(), kept)
        })
        .collect()
}

/// The fields of a form that look like secrets.
fn secret_fields(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter(|(key, property)| looks_secret(key, property))
                .map(|(key, _)| key.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a field, by its name, title or description, asks for a
/// secret: a password, passphrase or passcode, a token, an API, access,
/// private or SSH key, a credential, a one-time or verification code, a
/// PIN, a wallet's seed or recovery phrase, a card's number or CVV, a
/// session cookie; or a word spelled with letters of another script
/// among Latin ones (`Pаssword` with a Cyrillic `а`), which hides what
/// it asks for from this very check.
pub fn looks_secret(key: &str, property: &Value) -> bool {
    let said = |k: &str| property.get(k).and_then(Value::as_str).unwrap_or_default();
    let whole = [key, said("title"), said("description")].join(" ");
    if whole
        .split(|c: char| !c.is_alphanumeric())
        .any(mixes_scripts)
    {
        return true;
    }
    // `apiKey` and `api_key` read as "api key".
    let mut text = String::new();
    let mut after_lower = false;
    for c in whole.chars() {
        if c.is_uppercase() && after_lower {
            text.push(' ');
        }
        after_lower = c.is_lowercase();
        text.push(c.to_ascii_lowercase());
    }
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let starts = [
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "passkey",
        "secret",
        "credential",
        "apikey",
        "token",
        "mnemonic",
    ];
    let exact = |w: &str| {
        matches!(
            w,
            "otp" | "pin" | "2fa" | "mfa" | "totp" | "pass" | "pwd" | "pat" | "cvv" | "cvc" | "jwt"
        )
    };
    if words
        .iter()
        .any(|w| starts.iter().any(|s| w.starts_with(s)) || exact(w))
    {
        return true;
    }
    words.windows(2).any(|pair| {
        matches!(
            (pair[0], pair[1].trim_end_matches('s')),
            (
                "api" | "access" | "private" | "ssh" | "secret" | "signing",
                "key"
            ) | ("one", "time")
                | ("auth" | "bearer", "header")
                | ("seed" | "recovery" | "secret", "phrase")
                | ("recovery" | "verification" | "security" | "auth", "code")
                | ("card", "number")
                | ("session" | "auth", "cookie")
        )
    })
}

/// Whether a word mixes Latin letters with letters of another script
/// (beyond Latin Extended-B), as a look-alike spelling does.
fn mixes_scripts(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_alphabetic())
        && word.chars().any(|c| c.is_alphabetic() && c > '\u{024F}')
}

/// What the card (and the audit trail) says of a server's question.
pub fn asked_text(asked: &ElicitationAsked) -> String {
    let server = &asked.server;
    let mut out = match (&asked.mode, &asked.url) {
        (ElicitationKind::Url, Some(url)) => match page(url) {
            Ok((url, host)) => format!(
                "The MCP server \"{server}\" asks you to open a page on {host}: {}\n{url}",
                asked.message
            ),
            Err(_) => format!(
                "The MCP server \"{server}\" asks you to open a page at an address candor does not pass: {}\n{url}",
                asked.message
            ),
        },
        _ => format!("The MCP server \"{server}\" asks: {}", asked.message),
    };
    let fields: Vec<String> = asked
        .schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(key, property)| {
                    let title = property.get("title").and_then(Value::as_str).unwrap_or(key);
                    if asked.secret.contains(key) {
                        format!("{title} (looks like a secret)")
                    } else {
                        title.to_owned()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if !fields.is_empty() {
        out.push_str(&format!("\nFields: {}", fields.join(", ")));
    }
    if !asked.secret.is_empty() {
        out.push_str(&format!(
            "\nWhat looks like a secret goes to \"{server}\" alone: candor keeps it out of the log and away from the model."
        ));
    }
    out
}

/// What the card (and the audit trail) says of how a question ended.
pub fn answered_text(answered: &ElicitationAnswered) -> String {
    match (answered.by, answered.action) {
        (ElicitationBy::User, ElicitationAction::Accept) => {
            let values: Vec<String> = answered
                .content
                .iter()
                .flatten()
                .map(|(k, v)| match v {
                    Value::String(s) if s == WITHHELD => format!("{k}: {WITHHELD}"),
                    v => format!("{k}: {}", crate::text::shorten(&v.to_string(), 200)),
                })
                .collect();
            if values.is_empty() {
                "The user accepted.".to_owned()
            } else {
                format!("The user answered: {}", values.join(", "))
            }
        }
        (ElicitationBy::User, ElicitationAction::Decline) => "The user declined.".to_owned(),
        (ElicitationBy::User, ElicitationAction::Cancel) => {
            "The user dismissed the question.".to_owned()
        }
        (ElicitationBy::Candor, action) => format!(
            "candor answered \"{}\" for the user: {}.",
            match action {
                ElicitationAction::Accept => "accept",
                ElicitationAction::Decline => "decline",
                ElicitationAction::Cancel => "cancel",
            },
            answered.reason.as_deref().unwrap_or("no reason given")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_that_ask_for_secrets_are_told_apart() {
        for (key, property) in [
            ("password", json!({})),
            ("apiKey", json!({})),
            ("api_key", json!({})),
            ("value", json!({"title": "API key"})),
            (
                "value",
                json!({"description": "Your personal access token"}),
            ),
            ("code", json!({"title": "One-time code"})),
            ("key", json!({"title": "SSH key"})),
            ("db", json!({"title": "Database passphrase"})),
            // Named the way login forms and wallets name them.
            ("pass", json!({})),
            ("pwd", json!({})),
            ("passcode", json!({})),
            ("value", json!({"title": "GitHub PAT"})),
            ("words", json!({"title": "Recovery phrase"})),
            ("words", json!({"description": "Your wallet's seed phrase"})),
            ("mnemonic", json!({})),
            ("cvv", json!({})),
            ("card", json!({"title": "Card number"})),
            ("cookie", json!({"title": "Session cookie"})),
            ("code", json!({"title": "Verification code"})),
            ("mfa", json!({})),
            // A word spelled with letters of another script that look
            // Latin hides what it asks for (Cyrillic а, Greek Ρ).
            ("p", json!({"title": "P\u{0430}ssword"})),
            ("t", json!({"description": "Your \u{03a1}AT"})),
        ] {
            assert!(looks_secret(key, &property), "{key} {property}");
        }
        for (key, property) in [
            ("branch", json!({"title": "Branch"})),
            ("name", json!({"description": "Who to greet"})),
            ("footprint", json!({})),
            ("keyboard", json!({"title": "Keyboard layout"})),
            ("options", json!({})),
            ("passenger", json!({"title": "Passenger name"})),
            ("route", json!({"title": "Bypass the cache?"})),
            ("name", json!({"title": "Café name"})),
            ("city", json!({"title": "Город"})),
        ] {
            assert!(!looks_secret(key, &property), "{key} {property}");
        }
    }

    #[test]
    fn a_secret_answer_is_withheld_from_the_log() {
        let content = json!({"user": "ana", "password": "hunter2"});
        let kept = withheld(content.as_object().unwrap(), &["password".to_owned()]);
        assert_eq!(
            Value::Object(kept),
            json!({"user": "ana", "password": WITHHELD})
        );
    }

    fn page_host_of(url: &str) -> Result<String, String> {
        page(url).map(|(_, host)| host)
    }

    #[test]
    fn only_https_pages_or_loopback_are_passed() {
        assert_eq!(
            page_host_of("https://auth.example.com/x?y=1").unwrap(),
            "auth.example.com"
        );
        assert!(page_host_of("http://127.0.0.1:8080/cb").is_ok());
        assert!(page_host_of("http://example.com/").is_err());
        assert!(page_host_of("javascript:alert(1)").is_err());
        assert!(page_host_of("file:///etc/passwd").is_err());
        assert!(page_host_of("not a url").is_err());
        assert!(page_host_of("https://github.com@evil.example/").is_err());
        assert_eq!(
            page("https://\u{0430}pple.com/x").unwrap(),
            (
                "https://xn--pple-43d.com/x".to_owned(),
                "xn--pple-43d.com".to_owned()
            )
        );
    }
}
