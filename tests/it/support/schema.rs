//! Validates frames against the ACP v1 JSON schema generated from
//! `agent-client-protocol-schema` (its `schemars` feature), per definition,
//! by method: a request's or notification's `params` against the method's
//! params type, a response's `result` against the type of the method its id
//! was issued for, an error against `Error`.

use std::collections::HashMap;
use std::sync::OnceLock;

use agent_client_protocol_schema::v1 as acp;
use jsonschema::Validator;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// Which side handles a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The agent answers (client → agent).
    Agent,
    /// The client answers (agent → client).
    Client,
}

struct Method {
    side: Side,
    params: Validator,
    result: Option<Validator>,
}

pub struct Schemas {
    methods: HashMap<&'static str, Method>,
    error: Validator,
}

fn validator<T: JsonSchema>() -> Validator {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let value = serde_json::to_value(&schema).unwrap();
    jsonschema::validator_for(&value).unwrap_or_else(|e| {
        panic!(
            "schema for {} does not compile: {e}",
            std::any::type_name::<T>()
        )
    })
}

fn request<P: JsonSchema, R: JsonSchema>(side: Side) -> Method {
    Method {
        side,
        params: validator::<P>(),
        result: Some(validator::<R>()),
    }
}

fn notification<P: JsonSchema>(side: Side) -> Method {
    Method {
        side,
        params: validator::<P>(),
        result: None,
    }
}

/// The schemas, built once per test binary.
pub fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        use Side::*;
        let mut m = HashMap::new();
        m.insert(
            "initialize",
            request::<acp::InitializeRequest, acp::InitializeResponse>(Agent),
        );
        m.insert(
            "authenticate",
            request::<acp::AuthenticateRequest, acp::AuthenticateResponse>(Agent),
        );
        m.insert(
            "session/new",
            request::<acp::NewSessionRequest, acp::NewSessionResponse>(Agent),
        );
        m.insert(
            "session/load",
            request::<acp::LoadSessionRequest, acp::LoadSessionResponse>(Agent),
        );
        m.insert(
            "session/prompt",
            request::<acp::PromptRequest, acp::PromptResponse>(Agent),
        );
        m.insert(
            "session/set_mode",
            request::<acp::SetSessionModeRequest, acp::SetSessionModeResponse>(Agent),
        );
        m.insert(
            "session/cancel",
            notification::<acp::CancelNotification>(Agent),
        );
        m.insert(
            "$/cancel_request",
            notification::<acp::CancelRequestNotification>(Agent),
        );
        m.insert(
            "session/update",
            notification::<acp::SessionNotification>(Client),
        );
        m.insert(
            "session/request_permission",
            request::<acp::RequestPermissionRequest, acp::RequestPermissionResponse>(Client),
        );
        m.insert(
            "fs/read_text_file",
            request::<acp::ReadTextFileRequest, acp::ReadTextFileResponse>(Client),
        );
        m.insert(
            "fs/write_text_file",
            request::<acp::WriteTextFileRequest, acp::WriteTextFileResponse>(Client),
        );
        m.insert(
            "terminal/create",
            request::<acp::CreateTerminalRequest, acp::CreateTerminalResponse>(Client),
        );
        m.insert(
            "terminal/output",
            request::<acp::TerminalOutputRequest, acp::TerminalOutputResponse>(Client),
        );
        m.insert(
            "terminal/wait_for_exit",
            request::<acp::WaitForTerminalExitRequest, acp::WaitForTerminalExitResponse>(Client),
        );
        m.insert(
            "terminal/kill",
            request::<acp::KillTerminalRequest, acp::KillTerminalResponse>(Client),
        );
        m.insert(
            "terminal/release",
            request::<acp::ReleaseTerminalRequest, acp::ReleaseTerminalResponse>(Client),
        );
        Schemas {
            methods: m,
            error: validator::<acp::Error>(),
        }
    })
}

fn check(validator: &Validator, instance: &Value, what: &str) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what} does not match the ACP schema: {}",
            errors.join("; ")
        ))
    }
}

impl Schemas {
    pub fn side(&self, method: &str) -> Option<Side> {
        self.methods.get(method).map(|m| m.side)
    }

    /// Checks a request's or notification's params.
    pub fn check_params(&self, method: &str, params: &Value) -> Result<(), String> {
        let Some(m) = self.methods.get(method) else {
            return Err(format!("method {method} is not a known ACP v1 method"));
        };
        check(&m.params, params, &format!("params of {method}"))
    }

    /// Checks a response to `method`: its result, or its error.
    pub fn check_response(&self, method: &str, frame: &Value) -> Result<(), String> {
        if let Some(error) = frame.get("error") {
            return check(&self.error, error, &format!("error answering {method}"));
        }
        let Some(result) = frame.get("result") else {
            return Err(format!(
                "response to {method} has neither result nor error: {frame}"
            ));
        };
        match self.methods.get(method).and_then(|m| m.result.as_ref()) {
            Some(v) => check(v, result, &format!("result of {method}")),
            None => Err(format!("{method} is not a request; it has no result")),
        }
    }
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
