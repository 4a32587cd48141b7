//! JSON-RPC 2.0 bookkeeping that jsonrpsee does not do for us.
//!
//! * [`classify`] sorts an input line into request, notification, response or
//!   garbage (with the error to answer it with).
//! * [`Outgoing`] is the pending table for agent→client requests
//!   (`session/request_permission`, `fs/*`, `terminal/*`): an id counter and
//!   one oneshot per id. Unknown response ids are logged and dropped; there is
//!   no timeout (a human may take minutes over a permission prompt; the
//!   session's cancel token decides when to stop waiting).
//! * [`InFlight`] remembers incoming requests still running, so that
//!   `$/cancel_request` can stop one and still answer it exactly once.
//! * [`error_line`] builds the error response to a line that is no request.
//!
//! Why not jsonrpsee's async client for outgoing requests: one stray response
//! id breaks it for good, it times out after 60 s, and its background sender
//! can let a response overtake a notification queued before it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use agent_client_protocol_schema::v1::{
    CancelRequestNotification, Error as AcpError, ProtocolLevelNotification, RequestId,
};
use jsonrpsee::types::Id;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::transport::Outbox;

/// What one input line is, parsed (the only parse of the line).
#[derive(Debug)]
pub(crate) enum Message {
    /// Has `method` and `id` (a string, null or a non-negative integer).
    Request {
        id: Id<'static>,
        method: String,
        params: Value,
    },
    /// Has `method` and no `id`.
    Notification { method: String, params: Value },
    /// Has `id` and `result` or `error`.
    Response(Value),
}

/// Sorts a line; `Err` carries the error response to send back.
pub(crate) fn classify(line: &[u8]) -> Result<Message, String> {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Err(error_line(
                &Value::Null,
                &AcpError::parse_error().data(e.to_string()),
            ));
        }
    };
    let Value::Object(mut obj) = value else {
        return Err(error_line(
            &Value::Null,
            &AcpError::invalid_request()
                .data("a message must be a JSON object; batches are not part of ACP v1"),
        ));
    };
    let id = obj.get("id").cloned();
    let id_ok = matches!(
        id,
        None | Some(Value::Null | Value::Number(_) | Value::String(_))
    );
    let echo_id = if id_ok {
        id.clone().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error_line(
            &echo_id,
            &AcpError::invalid_request().data("missing or wrong \"jsonrpc\": \"2.0\""),
        ));
    }
    if !id_ok {
        return Err(error_line(
            &Value::Null,
            &AcpError::invalid_request().data("\"id\" must be a number, a string or null"),
        ));
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
                return Err(error_line(
                    &echo_id,
                    &AcpError::invalid_request().data("\"params\" must be an object or an array"),
                ));
            }
            Ok(match id {
                Some(id) => Message::Request {
                    id: request_id(id).ok_or_else(|| {
                        error_line(
                            &echo_id,
                            &AcpError::invalid_request()
                                .data("a request's \"id\" must be a string, null or a non-negative integer"),
                        )
                    })?,
                    method,
                    params,
                },
                None => Message::Notification { method, params },
            })
        }
        Some(_) => Err(error_line(
            &echo_id,
            &AcpError::invalid_request().data("\"method\" must be a string"),
        )),
        None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
            Ok(Message::Response(Value::Object(obj)))
        }
        None => Err(error_line(
            &echo_id,
            &AcpError::invalid_request().data("not a request, notification or response"),
        )),
    }
}

/// A request's id as JSON-RPC types it (what jsonrpsee answers under).
fn request_id(id: Value) -> Option<Id<'static>> {
    match id {
        Value::Null => Some(Id::Null),
        Value::Number(n) => n.as_u64().map(Id::Number),
        Value::String(s) => Some(Id::Str(s.into())),
        _ => None,
    }
}

/// The id a `$/cancel_request` names, as requests are kept under it
/// (`None`: no request can have it).
pub(crate) fn cancelled_id(id: RequestId) -> Option<Id<'static>> {
    match id {
        RequestId::Null => Some(Id::Null),
        RequestId::Number(n) => u64::try_from(n).ok().map(Id::Number),
        RequestId::Str(s) => Some(Id::Str(s.into())),
    }
}

/// A request's id as ACP types it (what records and `$/cancel_request`
/// name it by); the inverse of [`cancelled_id`].
pub(crate) fn acp_id(id: &Id<'_>) -> RequestId {
    match id {
        Id::Null => RequestId::Null,
        Id::Number(n) => {
            i64::try_from(*n).map_or_else(|_| RequestId::Str(n.to_string()), RequestId::Number)
        }
        Id::Str(s) => RequestId::Str(s.to_string()),
    }
}

/// The error response to a line that is no request (its id echoed as sent,
/// when it had a usable one).
pub(crate) fn error_line(id: &Value, error: &AcpError) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

type Reply = Result<Value, Value>;

/// Agent→client requests awaiting an answer. Only ids candor issued match.
///
#[derive(Debug)]
pub(crate) struct Outgoing {
    next_id: AtomicU64,
    // A std mutex: it is held only to insert or remove one entry, never
    // across an `.await`.
    pending: Mutex<HashMap<u64, (String, oneshot::Sender<Reply>)>>,
    out: Outbox,
}

impl Outgoing {
    pub(crate) fn new(out: Outbox) -> Self {
        Self {
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            out,
        }
    }

    #[cfg_attr(not(test), allow(dead_code))]
    /// Sends a request and waits for its answer: `Ok(result)` or `Err(error
    /// object)`. Dropping the future forgets the entry; a late answer is then
    /// logged and dropped like any unknown id.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        // Registered before the line is queued, so even an instant answer finds it.
        self.lock().insert(id, (method.to_owned(), tx));
        let _guard = Forget { table: self, id };
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.out.send_line(line.to_string());
        rx.await
            .unwrap_or_else(|_| Err(json!({"code": -32603, "message": "connection closed"})))
    }

    /// Like [`request`](Self::request), but gives up when `cancel` fires:
    /// the client is then sent `$/cancel_request` for it, and `None` is
    /// returned (a late answer is dropped like any unknown id).
    pub(crate) async fn request_until(
        &self,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Option<Reply> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, (method.to_owned(), tx));
        let _guard = Forget { table: self, id };
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.out.send_line(line.to_string());
        tokio::select! {
            reply = rx => Some(reply.unwrap_or_else(|_| Err(json!({"code": -32603, "message": "connection closed"})))),
            _ = cancel.cancelled() => {
                // The schema crate's notification, named by its own table.
                let withdraw = ProtocolLevelNotification::CancelRequestNotification(
                    CancelRequestNotification::new(RequestId::Number(
                        i64::try_from(id).unwrap_or(i64::MAX),
                    )),
                );
                self.out.notify(withdraw.method(), &withdraw);
                None
            }
        }
    }

    /// Routes a response from the client to the request that awaits it.
    pub(crate) fn on_response(&self, msg: &Value) {
        let entry = msg
            .get("id")
            .and_then(Value::as_u64)
            .and_then(|id| self.lock().remove(&id).map(|e| (id, e)));
        let Some((id, (method, tx))) = entry else {
            let id = msg.get("id").map(ToString::to_string).unwrap_or_default();
            tracing::warn!(%id, "dropping a response to an unknown request id");
            return;
        };
        tracing::debug!(id, method, "response received");
        let reply = match msg.get("error") {
            Some(e) => Err(e.clone()),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(reply);
    }

    /// Ids of requests still waiting (for `$/cancel_request` on cancel).
    #[cfg(test)]
    pub(crate) fn pending_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.lock().keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, (String, oneshot::Sender<Reply>)>> {
        crate::sync::lock(&self.pending)
    }
}

/// Removes a pending entry when its waiter goes away.
struct Forget<'a> {
    table: &'a Outgoing,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.table.lock().remove(&self.id);
    }
}

/// One incoming request still being handled.
#[derive(Debug, Clone)]
pub(crate) struct Running {
    /// For a `session/prompt`, the session it runs on: cancelling the
    /// request cancels the turn, which then answers `cancelled`.
    pub(crate) prompt_on: Option<String>,
    /// Cancels any other request, which then answers `-32800`.
    pub(crate) cancel: CancellationToken,
}

/// Incoming requests that have not been answered yet, by id (`1` and `"1"`
/// are different ids).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    running: Mutex<HashMap<Id<'static>, Running>>,
}

impl InFlight {
    pub(crate) fn start(&self, id: &Id<'static>, running: Running) {
        self.lock().insert(id.clone(), running);
    }

    pub(crate) fn finish(&self, id: &Id<'static>) {
        self.lock().remove(id);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    pub(crate) fn get(&self, id: &Id<'static>) -> Option<Running> {
        self.lock().get(id).cloned()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Id<'static>, Running>> {
        crate::sync::lock(&self.running)
    }
}

/// The JSON-RPC errors candor answers with, by name: ACP's codes
/// (`ErrorCode`), each with candor's own message. The one place a code is
/// chosen; `dispatch::to_rpc` is the one place an error becomes a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// `-32600`: the request cannot be served as sent.
    InvalidRequest,
    /// `-32002`: no such session (or resource).
    NotFound,
    /// `-32000`: the model needs a key the user has not given.
    AuthRequired,
    /// `-32603`: candor could not do it (a log it cannot write, a failed turn).
    Internal,
}

impl Failure {
    /// The error, with `message` for the user.
    pub(crate) fn error(
        self,
        message: impl Into<String>,
    ) -> agent_client_protocol_schema::v1::Error {
        use agent_client_protocol_schema::v1::ErrorCode;
        let code = match self {
            Failure::InvalidRequest => ErrorCode::InvalidRequest,
            Failure::NotFound => ErrorCode::ResourceNotFound,
            Failure::AuthRequired => ErrorCode::AuthRequired,
            Failure::Internal => ErrorCode::InternalError,
        };
        agent_client_protocol_schema::v1::Error::new(i32::from(code), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn classifies_each_kind_of_line() {
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            Ok(Message::Request { .. })
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Ok(Message::Response(_))
        ));
    }

    #[test]
    fn garbage_gets_the_right_error_code() {
        let code = |line: &[u8]| {
            let err = classify(line).unwrap_err();
            let v: Value = serde_json::from_str(&err).unwrap();
            (v["error"]["code"].as_i64().unwrap(), v["id"].clone())
        };
        assert_eq!(code(b"{not json"), (-32700, Value::Null));
        assert_eq!(code(b"[1,2]"), (-32600, Value::Null));
        assert_eq!(code(b"42"), (-32600, Value::Null));
        assert_eq!(code(br#"{"id":7,"method":"x"}"#), (-32600, json!(7)));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            (-32600, Value::Null)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":"a","method":5}"#),
            (-32600, json!("a"))
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":"a","method":"x","params":3}"#),
            (-32600, json!("a"))
        );
        // JSON-RPC ids that no request can have here: answered under the
        // id as sent.
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":-1,"method":"x"}"#),
            (-32600, json!(-1))
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#),
            (-32600, json!(1.5))
        );
    }

    #[test]
    fn request_ids_keep_their_type() {
        let id = |line: &[u8]| match classify(line) {
            Ok(Message::Request { id, .. }) => id,
            other => panic!("not a request: {other:?}"),
        };
        assert_eq!(
            id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            Id::Number(7)
        );
        assert_eq!(
            id(br#"{"jsonrpc":"2.0","id":"7","method":"x"}"#),
            Id::Str("7".into())
        );
        assert_eq!(id(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#), Id::Null);
        assert_eq!(cancelled_id(RequestId::Number(7)), Some(Id::Number(7)));
        assert_eq!(cancelled_id(RequestId::Number(-7)), None);
        assert_eq!(
            cancelled_id(RequestId::Str("7".into())),
            Some(Id::Str("7".into()))
        );
    }

    #[tokio::test]
    async fn outgoing_matches_answers_and_survives_unknown_ids() {
        let (outbox, mut rx) = Outbox::new();
        let table = Arc::new(Outgoing::new(outbox));
        let t = table.clone();
        let waiter = tokio::spawn(async move { t.request("fs/read_text_file", json!({})).await });
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "fs/read_text_file");
        // A stray id first: dropped, nothing breaks.
        table.on_response(&json!({"jsonrpc": "2.0", "id": 999, "result": {}}));
        table.on_response(&json!({"jsonrpc": "2.0", "id": "zzz", "result": {}}));
        table
            .on_response(&json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"content": "hi"}}));
        assert_eq!(waiter.await.unwrap(), Ok(json!({"content": "hi"})));
        assert!(table.pending_ids().is_empty());
        // The table still works after the stray ids.
        let t = table.clone();
        let waiter = tokio::spawn(async move { t.request("x", json!({})).await });
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        table.on_response(
            &json!({"jsonrpc": "2.0", "id": sent["id"], "error": {"code": 1, "message": "no"}}),
        );
        assert_eq!(
            waiter.await.unwrap(),
            Err(json!({"code": 1, "message": "no"}))
        );
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_no_entry() {
        let (outbox, _rx) = Outbox::new();
        let table = Outgoing::new(outbox);
        {
            let fut = table.request("x", json!({}));
            tokio::pin!(fut);
            let _ = futures_poll_once(fut.as_mut()).await;
            assert_eq!(table.pending_ids(), vec![0]);
        }
        assert!(table.pending_ids().is_empty());
    }

    async fn futures_poll_once<F: std::future::Future + Unpin>(fut: F) -> Option<F::Output> {
        tokio::time::timeout(std::time::Duration::from_millis(1), fut)
            .await
            .ok()
    }
}
