//! An MCP message candor cannot take: over [`MAX_MESSAGE`], or not JSON.
//!
//! Every transport (`stdio`, `http`, `sse`) reads a server's messages under
//! the same cap, counted on the bytes as they arrive, so no more than that
//! is ever held. A message over it is dropped as it streams past, a
//! [`Scan`] reading its top-level `"id"` (and whether it has a `"method"`)
//! on the way; a message that is not JSON is scanned the same way. When
//! the message is an answer (an id, no method), the transport hands rmcp
//! [`refusal`] in its place: an error answer to that request, marked as
//! candor's, so the call that waits for it ends at once. The caller
//! recognises the mark ([`refused`]), tells the server the request was
//! given up (`notifications/cancelled`) and fails the card with the reason.
//! A message that is not an answer, or whose id cannot be read, is logged
//! and skipped (the call, if any, then ends at its timeout).

use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

/// Most bytes of one message from a server (rmcp's own cap on a line and
/// on an SSE event).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// The mark in [`refusal`]'s `data` saying candor made it: a word no
/// server can guess (it is never sent to one), so no server's own error
/// passes for candor's refusal.
fn mark() -> &'static str {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| format!("answer-refused-{}", uuid::Uuid::new_v4()))
}

/// The reason for a message over [`MAX_MESSAGE`].
pub fn too_large() -> String {
    format!(
        "an answer over {} MiB (more than candor takes from an MCP server)",
        MAX_MESSAGE / (1024 * 1024)
    )
}

/// The reason for a message that does not parse.
pub fn not_json(error: &serde_json::Error) -> String {
    match error.classify() {
        serde_json::error::Category::Data => {
            format!("an answer that is not a JSON-RPC message candor can read ({error})")
        }
        _ => format!("an answer that is not JSON ({error})"),
    }
}

/// The error answer candor puts in place of `id`'s answer.
pub fn refusal(id: RequestId, why: &str) -> ServerJsonRpcMessage {
    let data = json!({"candor": mark(), "requestId": id});
    ServerJsonRpcMessage::error(
        ErrorData::new(ErrorCode::INTERNAL_ERROR, why.to_owned(), Some(data)),
        Some(id),
    )
}

/// If `error` is a [`refusal`]: the request it ended, and why.
pub fn refused(error: &ServiceError) -> Option<(RequestId, String)> {
    let ServiceError::McpError(data) = error else {
        return None;
    };
    let mark = data.data.as_ref()?;
    if mark.get("candor").and_then(Value::as_str) != Some(self::mark()) {
        return None;
    }
    let id = serde_json::from_value(mark.get("requestId")?.clone()).ok()?;
    Some((id, data.message.to_string()))
}

/// Longest top-level key worth keeping (`"method"`).
const MAX_KEY: usize = 8;
/// Longest id kept (as JSON text).
const MAX_ID: usize = 256;

/// Reads the top-level `"id"` of a JSON object fed in pieces, keeping only
/// that (at most 256 bytes of it), whatever the size of the rest. Stops
/// reading at the first byte that is not the JSON it expects, keeping what
/// it found before.
#[derive(Debug, Default)]
pub struct Scan {
    state: Step,
    /// The top-level key being read.
    key: Vec<u8>,
    /// Of the value being read: the id's text, when the key is `"id"`.
    value: Vec<u8>,
    /// Whether the value being read is the id's.
    in_id: bool,
    /// Nesting depth inside a top-level value that is an object or array.
    depth: usize,
    escaped: bool,
    id: Option<Vec<u8>>,
    method: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Step {
    #[default]
    Start,
    Key,
    InKey,
    Colon,
    Value,
    InString,
    InScalar,
    InNested,
    /// Inside a string inside a nested value.
    InNestedString,
    AfterValue,
    Done,
}

impl Scan {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.state == Step::Done {
                return;
            }
            self.byte(b);
        }
    }

    /// The id of the request this message answers: its top-level `"id"`,
    /// when it has no `"method"` (a request or notification of the
    /// server's own is no answer).
    pub fn answers(&self) -> Option<RequestId> {
        if self.method {
            return None;
        }
        serde_json::from_slice(self.id.as_deref()?).ok()
    }

    fn byte(&mut self, b: u8) {
        let space = b.is_ascii_whitespace();
        match self.state {
            Step::Start if b == b'{' => self.state = Step::Key,
            Step::Start | Step::Key | Step::Colon | Step::Value | Step::AfterValue if space => {}
            Step::Key if b == b'"' => {
                self.key.clear();
                self.state = Step::InKey;
            }
            Step::InKey => self.key_byte(b),
            Step::Colon if b == b':' => self.state = Step::Value,
            Step::Value => self.value_start(b),
            Step::InString => self.string_byte(b),
            Step::InScalar => match b {
                b',' | b'}' => {
                    self.end_value();
                    self.after_value(b);
                }
                _ if space => {
                    self.end_value();
                    self.state = Step::AfterValue;
                }
                _ => self.keep(b),
            },
            Step::InNested | Step::InNestedString => self.nested_byte(b),
            Step::AfterValue => self.after_value(b),
            _ => self.state = Step::Done,
        }
    }

    fn key_byte(&mut self, b: u8) {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.state = Step::Colon;
            return;
        }
        if self.key.len() <= MAX_KEY {
            self.key.push(b);
        }
    }

    fn value_start(&mut self, b: u8) {
        self.in_id = self.key == b"id";
        if self.key == b"method" {
            self.method = true;
        }
        self.value.clear();
        match b {
            b'"' => {
                self.keep(b);
                self.state = Step::InString;
            }
            b'{' | b'[' => {
                self.in_id = false;
                self.depth = 1;
                self.state = Step::InNested;
            }
            _ => {
                self.keep(b);
                self.state = Step::InScalar;
            }
        }
    }

    fn string_byte(&mut self, b: u8) {
        self.keep(b);
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.end_value();
            self.state = Step::AfterValue;
        }
    }

    fn nested_byte(&mut self, b: u8) {
        if self.state == Step::InNestedString {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.state = Step::InNested;
            }
            return;
        }
        match b {
            b'"' => self.state = Step::InNestedString,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth -= 1;
                if self.depth == 0 {
                    self.state = Step::AfterValue;
                }
            }
            _ => {}
        }
    }

    fn after_value(&mut self, b: u8) {
        self.state = match b {
            b',' => Step::Key,
            _ => Step::Done,
        };
    }

    /// Keeps a byte of the id's value (only the id's, and only so many).
    fn keep(&mut self, b: u8) {
        if self.in_id && self.value.len() <= MAX_ID {
            self.value.push(b);
        }
    }

    fn end_value(&mut self) {
        if self.in_id && self.value.len() <= MAX_ID && self.id.is_none() {
            self.id = Some(std::mem::take(&mut self.value));
        }
        self.in_id = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&[u8]]) -> Option<RequestId> {
        let mut s = Scan::default();
        for p in pieces {
            s.feed(p);
        }
        s.answers()
    }

    #[test]
    fn the_id_of_an_answer_is_found_wherever_it_is_and_however_it_is_cut() {
        let line = br#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"a \"}\" ]"}],"id":9},"id":7}"#;
        assert_eq!(scan(&[line]), Some(RequestId::Number(7)));
        // One byte at a time: the same.
        let bytes: Vec<&[u8]> = line.chunks(1).collect();
        assert_eq!(scan(&bytes), Some(RequestId::Number(7)));
        assert_eq!(
            scan(&[br#" { "id" : "a\"b" , "result": 1}"#]),
            Some(RequestId::String("a\"b".into()))
        );
        // Cut short after the id (not JSON): the id is still known.
        assert_eq!(
            scan(&[br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"cut"#]),
            Some(RequestId::Number(3))
        );
    }

    #[test]
    fn what_is_not_an_answer_or_has_no_readable_id_answers_nothing() {
        // A request of the server's own: its id is not one of candor's.
        assert_eq!(scan(&[br#"{"id":1,"method":"ping"}"#]), None);
        assert_eq!(scan(&[br#"{"method":"ping","id":1}"#]), None);
        assert_eq!(scan(&[b"not json at all"]), None);
        assert_eq!(scan(&[br#"{"result":{"id":4}}"#]), None);
        assert_eq!(scan(&[br#"{"id":{"n":1},"result":1}"#]), None);
        assert_eq!(scan(&[br#"[{"id":1}]"#]), None);
        let long = format!(r#"{{"id":"{}","result":1}}"#, "x".repeat(MAX_ID * 4));
        assert_eq!(scan(&[long.as_bytes()]), None);
    }

    #[test]
    fn a_huge_message_is_scanned_without_keeping_it() {
        let mut s = Scan::default();
        s.feed(br#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":""#);
        let chunk = vec![b'x'; 1024 * 1024];
        for _ in 0..32 {
            s.feed(&chunk);
        }
        s.feed(br#""}]},"id":12}"#);
        assert_eq!(s.answers(), Some(RequestId::Number(12)));
        assert!(s.key.capacity() < 1024 && s.value.capacity() < 1024);
    }

    #[test]
    fn a_refusal_is_known_by_its_mark_and_names_its_request() {
        let ServerJsonRpcMessage::Error(error) = refusal(RequestId::Number(5), "too big") else {
            panic!("not an error answer");
        };
        let e = ServiceError::McpError(error.error);
        assert_eq!(refused(&e), Some((RequestId::Number(5), "too big".into())));
        let other = ServiceError::McpError(ErrorData::internal_error("boom", None));
        assert_eq!(refused(&other), None);
        // A server's error that looks like one is not taken for one.
        let forged = ErrorData::internal_error(
            "boom",
            Some(json!({"candor": "answer-refused", "requestId": 5})),
        );
        assert_eq!(refused(&ServiceError::McpError(forged)), None);
    }
}
