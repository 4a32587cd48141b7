//! `protocol/schema/acp-v1.json` is generated from the
//! `agent-client-protocol-schema` crate candor compiles with (its `schemars`
//! feature): one definition per type, and a `methods` table naming, for
//! every ACP v1 method, which side handles it and the definitions of its
//! params and result. `candor harness` validates frames against it.
//!
//! This test regenerates the document and fails if the checked-in copy
//! differs; run `UPDATE_SCHEMA=1 cargo test --test it schema_file` to
//! rewrite it after upgrading the crate.

use agent_client_protocol_schema::v1 as acp;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

struct Table {
    generator: SchemaGenerator,
    methods: Map<String, Value>,
}

impl Table {
    fn def<T: JsonSchema>(&mut self) -> String {
        let schema = self.generator.subschema_for::<T>();
        let value = serde_json::to_value(&schema).unwrap();
        value["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .unwrap_or_else(|| {
                panic!(
                    "{} is not a named definition: {value}",
                    std::any::type_name::<T>()
                )
            })
            .to_owned()
    }

    fn request<P: JsonSchema, R: JsonSchema>(&mut self, method: &str, side: &str) {
        let params = self.def::<P>();
        let result = self.def::<R>();
        self.methods.insert(
            method.into(),
            json!({"side": side, "params": params, "result": result}),
        );
    }

    fn notification<P: JsonSchema>(&mut self, method: &str, side: &str) {
        let params = self.def::<P>();
        self.methods
            .insert(method.into(), json!({"side": side, "params": params}));
    }
}

/// The document, generated now.
pub(crate) fn generate() -> Value {
    let mut t = Table {
        generator: SchemaSettings::draft2020_12().into_generator(),
        methods: Map::new(),
    };
    let n = acp::AGENT_METHOD_NAMES;
    t.request::<acp::InitializeRequest, acp::InitializeResponse>(n.initialize, "agent");
    t.request::<acp::AuthenticateRequest, acp::AuthenticateResponse>(n.authenticate, "agent");
    t.request::<acp::NewSessionRequest, acp::NewSessionResponse>(n.session_new, "agent");
    t.request::<acp::LoadSessionRequest, acp::LoadSessionResponse>(n.session_load, "agent");
    t.request::<acp::ResumeSessionRequest, acp::ResumeSessionResponse>(n.session_resume, "agent");
    t.request::<acp::CloseSessionRequest, acp::CloseSessionResponse>(n.session_close, "agent");
    t.request::<acp::ListSessionsRequest, acp::ListSessionsResponse>(n.session_list, "agent");
    t.request::<acp::DeleteSessionRequest, acp::DeleteSessionResponse>(n.session_delete, "agent");
    t.request::<acp::SetSessionModeRequest, acp::SetSessionModeResponse>(
        n.session_set_mode,
        "agent",
    );
    t.request::<acp::SetSessionConfigOptionRequest, acp::SetSessionConfigOptionResponse>(
        n.session_set_config_option,
        "agent",
    );
    t.request::<acp::PromptRequest, acp::PromptResponse>(n.session_prompt, "agent");
    // Unstable, served when candor is built with its `fork` feature (the
    // default).
    t.request::<acp::ForkSessionRequest, acp::ForkSessionResponse>(n.session_fork, "agent");
    t.notification::<acp::CancelNotification>(n.session_cancel, "agent");
    let c = acp::CLIENT_METHOD_NAMES;
    t.notification::<acp::SessionNotification>(c.session_update, "client");
    t.request::<acp::RequestPermissionRequest, acp::RequestPermissionResponse>(
        c.session_request_permission,
        "client",
    );
    t.request::<acp::ReadTextFileRequest, acp::ReadTextFileResponse>(c.fs_read_text_file, "client");
    t.request::<acp::WriteTextFileRequest, acp::WriteTextFileResponse>(
        c.fs_write_text_file,
        "client",
    );
    t.request::<acp::CreateTerminalRequest, acp::CreateTerminalResponse>(
        c.terminal_create,
        "client",
    );
    t.request::<acp::TerminalOutputRequest, acp::TerminalOutputResponse>(
        c.terminal_output,
        "client",
    );
    t.request::<acp::WaitForTerminalExitRequest, acp::WaitForTerminalExitResponse>(
        c.terminal_wait_for_exit,
        "client",
    );
    t.request::<acp::KillTerminalRequest, acp::KillTerminalResponse>(c.terminal_kill, "client");
    t.request::<acp::ReleaseTerminalRequest, acp::ReleaseTerminalResponse>(
        c.terminal_release,
        "client",
    );
    t.request::<acp::CreateElicitationRequest, acp::CreateElicitationResponse>(
        c.elicitation_create,
        "client",
    );
    t.notification::<acp::CancelRequestNotification>("$/cancel_request", "protocol");
    let error = t.def::<acp::Error>();
    let defs = t.generator.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Agent Client Protocol v1, per method",
        "description": "Generated from agent-client-protocol-schema by tests/it/schema_file.rs; do not edit. `methods` names, for each method, the side that handles it and the definitions of its params and result.",
        "methods": Value::Object(t.methods),
        "error": error,
        "$defs": Value::Object(defs),
    })
}

#[test]
fn the_checked_in_schema_is_generated_from_the_crate() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/schema/acp-v1.json");
    let fresh = generate();
    let text = serde_json::to_string_pretty(&fresh).unwrap() + "\n";
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == text,
        "protocol/schema/acp-v1.json is out of date; run UPDATE_SCHEMA=1 cargo test --test it schema_file"
    );
}
