//! `Agent {description, prompt, subagent_type}` (Claude Code's name; its
//! older name `Task` is accepted): the model hands a task to a subagent, a
//! child session whose every call passes the same interception. The tool
//! itself only parses and presents: the session runs the child
//! (`session::subagent`), and the child's final answer is the call's
//! result.

use agent_client_protocol_schema::v1::ToolKind;
use serde::Deserialize;
use serde_json::{Value, json};

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::context::ToolContext;
use super::output::ToolOutput;
use crate::conversation::ToolSpec;

/// The longest `prompt` a subagent is given (characters).
pub const MAX_PROMPT: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// A short (3–5 word) description, shown on the card.
    pub description: String,
    /// The task, whole: the child's first message.
    pub prompt: String,
    /// Which subagent type runs it.
    pub subagent_type: String,
}

/// The tool's spec, offering `types` (name, description): the subagent
/// types this session (or this subagent) may start.
pub(crate) fn spec_with(types: &[(&str, &str)]) -> ToolSpec {
    let mut listed = String::new();
    for (name, description) in types {
        listed.push_str(&format!("\n- {name}: {description}"));
    }
    let names: Vec<&str> = types.iter().map(|(n, _)| *n).collect();
    ToolSpec {
        name: "Agent".into(),
        description: format!(
            "Hands a task to a subagent: a separate agent with its own context that works with the tools its type allows, through the same permission rules and hooks as you, and answers once. Its final message is this call's result; you do not see its intermediate steps, and it does not see this conversation, so give it everything it needs in the prompt. Use it for searches that may take several tries and for self-contained tasks; start several in one response to run them in parallel. The subagent types:{listed}"
        )
        .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task, shown to the user"},
                "prompt": {"type": "string", "description": "The task for the subagent, complete: what to do, what to report back"},
                "subagent_type": {"type": "string", "enum": names, "description": "Which type of subagent runs the task"}
            },
            "required": ["description", "prompt", "subagent_type"],
            "additionalProperties": false
        }),
    }
}

/// The spec with the built-in types (what `Tool::spec` gives; a session
/// offers its own list, `tools::specs_for`).
pub(crate) fn spec() -> ToolSpec {
    let all = crate::subagents::built_ins();
    let types: Vec<(&str, &str)> = all
        .iter()
        .map(|d| (d.name.as_str(), d.description.as_str()))
        .collect();
    spec_with(&types)
}

pub(crate) fn parse(input: &Value) -> Result<AgentInput, String> {
    let parsed: AgentInput = parse_input(Tool::Agent, input)?;
    if parsed.prompt.trim().is_empty() {
        return Err("invalid Agent input: `prompt` is empty".into());
    }
    if parsed.subagent_type.trim().is_empty() {
        return Err("invalid Agent input: `subagent_type` is empty".into());
    }
    if parsed.prompt.chars().count() > MAX_PROMPT {
        return Err(format!(
            "invalid Agent input: `prompt` is longer than {MAX_PROMPT} characters"
        ));
    }
    Ok(parsed)
}

/// `Explore: find the config loader`.
pub(crate) fn present(input: &Value) -> Presentation {
    let field = |k: &str| {
        input
            .get(k)
            .and_then(Value::as_str)
            .map(|s| crate::text::shorten(&s.replace(char::is_control, " "), 80))
            .unwrap_or_default()
    };
    let kind = field("subagent_type");
    let description = field("description");
    let title = match (kind.is_empty(), description.is_empty()) {
        (false, false) => format!("{kind}: {description}"),
        (false, true) => format!("{kind} subagent"),
        (true, false) => format!("Subagent: {description}"),
        (true, true) => "Subagent".to_owned(),
    };
    Presentation {
        title,
        kind: ToolKind::Think,
        locations: Vec::new(),
    }
}

/// The task the subagent is given, whole.
pub(crate) fn detail(input: &Value) -> Option<String> {
    let prompt = input.get("prompt")?.as_str()?;
    Some(format!(
        "Task: {}",
        crate::text::shorten(prompt.trim(), 2_000)
    ))
}

/// Never reached: the session runs an approved `Agent` call as a child
/// session (`session::subagent`), not as a tool.
pub(crate) async fn run(_input: &AgentInput, _cx: ToolContext) -> ToolOutput {
    ToolOutput::failed(
        "candor could not start the subagent (the Agent tool runs only in a session)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_presents() {
        let args = json!({"description": "find config", "prompt": "Where is the config read?", "subagent_type": "Explore"});
        let input = parse(&args).unwrap();
        assert_eq!(input.subagent_type, "Explore");
        assert_eq!(present(&args).title, "Explore: find config");
        assert!(detail(&args).unwrap().contains("Where is the config read?"));
        assert!(
            parse(&json!({"description": "x", "prompt": " ", "subagent_type": "Explore"})).is_err()
        );
        assert!(parse(&json!({"prompt": "x", "subagent_type": "Explore"})).is_err());
        assert!(
            parse(
                &json!({"description": "x", "prompt": "x", "subagent_type": "Explore", "extra": 1})
            )
            .is_err()
        );
        let spec = spec();
        assert!(
            spec.description.contains("- Explore:"),
            "{}",
            spec.description
        );
        assert_eq!(
            spec.input_schema["properties"]["subagent_type"]["enum"],
            json!(["general-purpose", "Explore", "Plan"])
        );
    }
}
