//! What a person is shown, made safe to read: every text of a
//! `session/update` and of a `session/request_permission` passes
//! [`text::visible`](crate::text::visible) here, at the edge where they
//! leave (`client::session_update`, `ClientLink::request_permission`,
//! `ClientLink::create_elicitation`), so no
//! presentation path can bypass it: a card's title and content (a diff's
//! texts too), a permission prompt's card and its options' names, notices,
//! the plan, the commands offered, the session's config options, and what
//! candor's own commands answer
//! (`/hooks`, `/doctor`, `/context`, `/audit`) and the model says.
//!
//! What is data stays exactly as it is: a card's `rawInput` (the arguments
//! as they run) and `rawOutput`, `_meta`, ids, the paths of locations and
//! diffs (a client opens them), URIs, MIME types and images.
//!
//! The schema's enums are non-exhaustive, so a variant this module does not
//! name passes unchanged; a tidy test checks that every `SessionUpdate`
//! variant candor builds is one named here.

use agent_client_protocol_schema::v1::{
    ContentBlock, CreateElicitationRequest, EmbeddedResourceResource, RequestPermissionRequest,
    SessionUpdate, ToolCallContent, ToolCallUpdateFields,
};

use serde_json::Value;

use crate::text::visible;

/// `update` with every text a person reads made visible.
pub fn update(mut update: SessionUpdate) -> SessionUpdate {
    match &mut update {
        SessionUpdate::UserMessageChunk(chunk)
        | SessionUpdate::AgentMessageChunk(chunk)
        | SessionUpdate::AgentThoughtChunk(chunk) => block(&mut chunk.content),
        SessionUpdate::ToolCall(call) => {
            text(&mut call.title);
            call.content.iter_mut().for_each(content);
        }
        SessionUpdate::ToolCallUpdate(call) => fields(&mut call.fields),
        SessionUpdate::Plan(plan) => {
            for entry in &mut plan.entries {
                text(&mut entry.content);
            }
        }
        SessionUpdate::AvailableCommandsUpdate(offered) => {
            for command in &mut offered.available_commands {
                text(&mut command.name);
                text(&mut command.description);
                if let Some(
                    agent_client_protocol_schema::v1::AvailableCommandInput::Unstructured(input),
                ) = &mut command.input
                {
                    text(&mut input.hint);
                }
            }
        }
        SessionUpdate::Notice(notice) => {
            text(&mut notice.title);
            if let Some(description) = &mut notice.description {
                text(description);
            }
        }
        SessionUpdate::CompactionUpdate(compaction) => {
            if let agent_client_protocol_schema::MaybeUndefined::Value(summary) =
                &mut compaction.summary
            {
                summary.iter_mut().for_each(block);
            }
        }
        SessionUpdate::SessionInfoUpdate(info) => {
            if let agent_client_protocol_schema::MaybeUndefined::Value(title) = &mut info.title {
                text(title);
            }
        }
        SessionUpdate::ConfigOptionUpdate(options) => {
            options.config_options.iter_mut().for_each(config_option);
        }
        SessionUpdate::SubagentUpdate(subagent) => {
            for field in [&mut subagent.title, &mut subagent.description] {
                if let agent_client_protocol_schema::MaybeUndefined::Value(t) = field {
                    text(t);
                }
            }
        }
        // Ids and numbers only.
        SessionUpdate::CurrentModeUpdate(_) | SessionUpdate::UsageUpdate(_) => {}
        // Not built by candor (the tidy test keeps it so).
        _ => {}
    }
    update
}

/// A config option's name and description, and its choices', made visible.
fn config_option(option: &mut agent_client_protocol_schema::v1::SessionConfigOption) {
    use agent_client_protocol_schema::v1::{SessionConfigKind, SessionConfigSelectOptions};
    text(&mut option.name);
    if let Some(description) = &mut option.description {
        text(description);
    }
    let SessionConfigKind::Select(select) = &mut option.kind else {
        return;
    };
    let mut choice = |c: &mut agent_client_protocol_schema::v1::SessionConfigSelectOption| {
        text(&mut c.name);
        if let Some(description) = &mut c.description {
            text(description);
        }
    };
    match &mut select.options {
        SessionConfigSelectOptions::Ungrouped(choices) => choices.iter_mut().for_each(choice),
        SessionConfigSelectOptions::Grouped(groups) => {
            for group in groups {
                text(&mut group.name);
                group.options.iter_mut().for_each(&mut choice);
            }
        }
        _ => {}
    }
}

/// `request` with the card it shows and its options' names made visible.
pub fn permission_request(mut request: RequestPermissionRequest) -> RequestPermissionRequest {
    fields(&mut request.tool_call.fields);
    for option in &mut request.options {
        text(&mut option.name);
    }
    request
}

/// `request` with its message and its form's titles and descriptions
/// (the form's, each field's, each choice's) made visible; the values a
/// field may take stay exact (they are what the answer carries).
pub fn elicitation(request: CreateElicitationRequest) -> CreateElicitationRequest {
    let Ok(mut value) = serde_json::to_value(&request) else {
        return request;
    };
    if let Some(Value::String(m)) = value.get_mut("message") {
        text(m);
    }
    if let Some(schema) = value.get_mut("requestedSchema") {
        titles(schema);
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            for property in properties.values_mut() {
                titles(property);
                if let Some(Value::Array(choices)) = property.get_mut("oneOf") {
                    choices.iter_mut().for_each(titles);
                }
                if let Some(Value::Array(choices)) =
                    property.get_mut("items").and_then(|i| i.get_mut("anyOf"))
                {
                    choices.iter_mut().for_each(titles);
                }
            }
        }
    }
    serde_json::from_value(value).unwrap_or(request)
}

/// An object's `title` and `description`, made visible.
fn titles(object: &mut Value) {
    for key in ["title", "description"] {
        if let Some(Value::String(t)) = object.get_mut(key) {
            text(t);
        }
    }
}

fn fields(fields: &mut ToolCallUpdateFields) {
    if let Some(title) = &mut fields.title {
        text(title);
    }
    if let Some(list) = &mut fields.content {
        list.iter_mut().for_each(content);
    }
}

fn content(c: &mut ToolCallContent) {
    match c {
        ToolCallContent::Content(c) => block(&mut c.content),
        ToolCallContent::Diff(diff) => {
            text(&mut diff.new_text);
            if let Some(old) = &mut diff.old_text {
                text(old);
            }
        }
        // A terminal's id; the editor renders what runs in it.
        _ => {}
    }
}

fn block(b: &mut ContentBlock) {
    match b {
        ContentBlock::Text(t) => text(&mut t.text),
        ContentBlock::ResourceLink(link) => {
            text(&mut link.name);
            for t in [&mut link.title, &mut link.description]
                .into_iter()
                .flatten()
            {
                text(t);
            }
        }
        ContentBlock::Resource(resource) => {
            if let EmbeddedResourceResource::TextResourceContents(r) = &mut resource.resource {
                text(&mut r.text);
            }
        }
        // Images and audio: data.
        _ => {}
    }
}

fn text(t: &mut String) {
    if t.chars().any(|c| c.is_control() || !c.is_ascii()) {
        *t = visible(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol_schema::v1::{
        ContentChunk, Diff, Notice, NoticeSeverity, PermissionOption, PermissionOptionKind,
        SessionId, ToolCall, ToolCallLocation, ToolCallUpdate,
    };
    use serde_json::json;

    const HOSTILE: &str = "rm \u{1b}[8mhidden\u{1b}[0m \u{202E}txt.exe";
    const SHOWN: &str = "rm \\u{1b}[8mhidden\\u{1b}[0m \\u{202e}txt.exe";

    #[test]
    fn a_card_shows_its_text_escaped_and_keeps_its_data() {
        let call = ToolCall::new("t", HOSTILE)
            .raw_input(json!({"command": HOSTILE}))
            .locations(vec![ToolCallLocation::new(format!("/p/{HOSTILE}"))])
            .content(vec![
                ToolCallContent::from(ContentBlock::from(HOSTILE)),
                ToolCallContent::Diff(
                    Diff::new(format!("/p/{HOSTILE}"), format!("{HOSTILE}\r\n"))
                        .old_text(HOSTILE.to_owned()),
                ),
            ]);
        let SessionUpdate::ToolCall(shown) = update(SessionUpdate::ToolCall(call)) else {
            panic!("not a card");
        };
        assert_eq!(shown.title, SHOWN);
        let v = serde_json::to_value(&shown).unwrap();
        assert_eq!(v["rawInput"]["command"], HOSTILE);
        assert_eq!(v["locations"][0]["path"], format!("/p/{HOSTILE}"));
        assert_eq!(v["content"][0]["content"]["text"], SHOWN);
        assert_eq!(v["content"][1]["newText"], format!("{SHOWN}\r\n"));
        assert_eq!(v["content"][1]["oldText"], SHOWN);
        assert_eq!(v["content"][1]["path"], format!("/p/{HOSTILE}"));
    }

    #[test]
    fn a_prompt_a_notice_and_a_message_are_shown_escaped() {
        let card = ToolCallUpdate::new(
            "t",
            ToolCallUpdateFields::new()
                .title(HOSTILE.to_owned())
                .raw_input(json!({"command": HOSTILE})),
        );
        let asked = permission_request(RequestPermissionRequest::new(
            SessionId::new("s"),
            card,
            vec![PermissionOption::new(
                "allow_always",
                format!("Always allow Bash({HOSTILE})"),
                PermissionOptionKind::AllowAlways,
            )],
        ));
        assert_eq!(asked.tool_call.fields.title.as_deref(), Some(SHOWN));
        assert_eq!(
            asked.tool_call.fields.raw_input,
            Some(json!({"command": HOSTILE}))
        );
        assert_eq!(asked.options[0].name, format!("Always allow Bash({SHOWN})"));
        assert_eq!(asked.options[0].option_id.0.as_ref(), "allow_always");
        let SessionUpdate::Notice(n) = update(SessionUpdate::Notice(
            Notice::new(NoticeSeverity::Warning, HOSTILE).description(HOSTILE.to_owned()),
        )) else {
            panic!("not a notice");
        };
        assert_eq!(
            (n.title.as_str(), n.description.as_deref()),
            (SHOWN, Some(SHOWN))
        );
        let message = update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(HOSTILE),
        )));
        assert_eq!(
            serde_json::to_value(message).unwrap()["content"]["text"],
            SHOWN
        );
    }
}
