//! Frame validation for the tests: the harness's per-method validator over
//! a schema generated afresh from `agent-client-protocol-schema` (not the
//! checked-in copy), so the tests check candor against the crate itself.

use std::sync::OnceLock;

pub use candor::harness::schema::{Schemas, Side};

/// The schemas, built once per test binary.
pub fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| Schemas::from_document(crate::schema_file::generate()).unwrap())
}

#[test]
fn the_generated_schema_rejects_what_the_spec_rejects() {
    let s = schemas();
    let ok = serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "kind": "execute"}});
    s.check_params("session/update", &ok).unwrap();
    let bad_kind = serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "kind": "teleport"}});
    assert!(s.check_params("session/update", &bad_kind).is_err());
    let no_title = serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t"}});
    assert!(s.check_params("session/update", &no_title).is_err());
    let bad_stop = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "done"}});
    assert!(s.check_response("session/prompt", &bad_stop).is_err());
}
