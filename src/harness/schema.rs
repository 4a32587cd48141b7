//! Frame validation against the ACP v1 JSON schema, per method.
//!
//! The schema is `protocol/schema/acp-v1.json`, generated from the
//! `agent-client-protocol-schema` crate candor is built with (a test keeps
//! it in step) and embedded in the binary. Its `methods` table names, for
//! each method, the side that handles it and the definitions of its params
//! and result. A request's or notification's `params` are checked against
//! the method's params definition; a response's `result` against the result
//! definition of the method its id was issued for; an error against `Error`.
//! candor's extension methods are checked the same way, against their
//! documented shape (`protocol/schema/extensions.json`).

use std::collections::HashMap;
use std::sync::Mutex;

use jsonschema::Validator;
use serde_json::{Value, json};

/// The embedded document.
pub const DOCUMENT: &str = include_str!("../../protocol/schema/acp-v1.json");

/// candor's extension methods (`_session/steering`), in the same layout,
/// written by hand: the schema crate has no types for them.
pub const EXTENSIONS: &str = include_str!("../../protocol/schema/extensions.json");

/// Which side handles a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The agent answers (client → agent).
    Agent,
    /// The client answers (agent → client).
    Client,
    /// Either direction (`$/cancel_request`).
    Protocol,
}

#[derive(Debug, Clone)]
struct Method {
    side: Side,
    params: String,
    result: Option<String>,
}

/// Validators, compiled on first use per definition.
pub struct Schemas {
    document: Value,
    methods: HashMap<String, Method>,
    error: String,
    compiled: Mutex<HashMap<String, std::sync::Arc<Validator>>>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("methods", &self.methods.len())
            .finish()
    }
}

impl Schemas {
    /// The schema embedded in the binary.
    pub fn embedded() -> Result<Self, String> {
        let document: Value = serde_json::from_str(DOCUMENT)
            .map_err(|e| format!("the embedded schema is not JSON: {e}"))?;
        Self::from_document(document)
    }

    /// A schema document in the `protocol/schema/acp-v1.json` layout, with
    /// candor's extension methods ([`EXTENSIONS`]) merged in.
    pub fn from_document(mut document: Value) -> Result<Self, String> {
        let extensions: Value = serde_json::from_str(EXTENSIONS)
            .map_err(|e| format!("the extensions schema is not JSON: {e}"))?;
        for part in ["methods", "$defs"] {
            if let (Some(into), Some(from)) =
                (document[part].as_object_mut(), extensions[part].as_object())
            {
                into.extend(from.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let mut methods = HashMap::new();
        let table = document["methods"]
            .as_object()
            .ok_or("the schema document has no `methods` table")?;
        for (name, m) in table {
            let side = match m["side"].as_str() {
                Some("agent") => Side::Agent,
                Some("client") => Side::Client,
                Some("protocol") => Side::Protocol,
                other => return Err(format!("method {name} has an unknown side {other:?}")),
            };
            let params = m["params"]
                .as_str()
                .ok_or(format!("method {name} has no params definition"))?;
            methods.insert(
                name.clone(),
                Method {
                    side,
                    params: params.to_owned(),
                    result: m["result"].as_str().map(str::to_owned),
                },
            );
        }
        let error = document["error"].as_str().unwrap_or("Error").to_owned();
        Ok(Self {
            document,
            methods,
            error,
            compiled: Mutex::new(HashMap::new()),
        })
    }

    /// Who handles `method`, if it is an ACP v1 method.
    pub fn side(&self, method: &str) -> Option<Side> {
        self.methods.get(method).map(|m| m.side)
    }

    /// Checks the params of a request or notification.
    pub fn check_params(&self, method: &str, params: &Value) -> Result<(), String> {
        let Some(m) = self.methods.get(method) else {
            return Err(format!("{method} is not an ACP v1 method"));
        };
        self.check(&m.params, params, &format!("params of {method}"))
    }

    /// Checks a response to `method`: its `result`, or its `error`.
    pub fn check_response(&self, method: &str, frame: &Value) -> Result<(), String> {
        if let Some(error) = frame.get("error") {
            return self.check_error(error);
        }
        let Some(result) = frame.get("result") else {
            return Err("a response with neither result nor error".into());
        };
        match self.methods.get(method).and_then(|m| m.result.clone()) {
            Some(def) => self.check(&def, result, &format!("result of {method}")),
            None => Err(format!(
                "{method} is not a request, so nothing should answer it"
            )),
        }
    }

    /// Checks an error object.
    pub fn check_error(&self, error: &Value) -> Result<(), String> {
        self.check(&self.error.clone(), error, "error")
    }

    fn validator(&self, def: &str) -> Result<std::sync::Arc<Validator>, String> {
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = compiled.get(def) {
            return Ok(v.clone());
        }
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": format!("#/$defs/{def}"),
            "$defs": self.document["$defs"],
        });
        let validator = std::sync::Arc::new(
            jsonschema::validator_for(&schema)
                .map_err(|e| format!("definition {def} does not compile: {e}"))?,
        );
        compiled.insert(def.to_owned(), validator.clone());
        Ok(validator)
    }

    fn check(&self, def: &str, instance: &Value, what: &str) -> Result<(), String> {
        let validator = self.validator(def)?;
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!("{e} (at {})", if at.is_empty() { "/" } else { &at })
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{what} do not match the ACP schema ({def}): {}",
                errors.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_schema_checks_by_method() {
        let s = Schemas::embedded().unwrap();
        assert_eq!(s.side("session/update"), Some(Side::Client));
        assert_eq!(s.side("session/prompt"), Some(Side::Agent));
        let ok = json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}});
        assert!(s.check_params("session/update", &ok).is_ok());
        let bad = json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "status": "running"}});
        assert!(s.check_params("session/update", &bad).is_err());
        assert!(
            s.check_response(
                "session/prompt",
                &json!({"result": {"stopReason": "bogus"}})
            )
            .is_err()
        );
        assert!(
            s.check_response(
                "session/prompt",
                &json!({"result": {"stopReason": "cancelled"}})
            )
            .is_ok()
        );
        assert!(
            s.check_response(
                "initialize",
                &json!({"error": {"code": -32602, "message": "x"}})
            )
            .is_ok()
        );
        assert!(
            s.check_response("initialize", &json!({"error": {"code": "x"}}))
                .is_err()
        );
    }
}
