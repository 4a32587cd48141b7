//! `TodoWrite {todos: [{content, status, activeForm}]}`: the model's plan.
//!
//! The whole list is sent each time; the client shows it as the session's
//! plan (an ACP `plan` update with every entry), not as a tool card.

use agent_client_protocol_schema::v1::{PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::context::ToolContext;
use super::output::ToolOutput;
use crate::conversation::ToolSpec;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TodoInput {
    pub todos: Vec<Todo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
    #[serde(default)]
    pub active_form: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "TodoWrite".into(),
        description: "Replaces the task list shown to the user as the plan. Send the whole list each time; mark one item in_progress while you work on it and completed when it is done.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "The task, imperative (\"Run the tests\")"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "description": "The task while it runs (\"Running the tests\")"}
                        },
                        "required": ["content", "status"]
                    }
                }
            },
            "required": ["todos"]
        }),
    }
}

pub(crate) fn parse(input: &Value) -> Result<TodoInput, String> {
    let parsed: TodoInput = parse_input(Tool::TodoWrite, input)?;
    if let Some(empty) = parsed
        .todos
        .iter()
        .position(|t| t.content.trim().is_empty())
    {
        return Err(format!(
            "invalid TodoWrite input: item {empty} has no content"
        ));
    }
    Ok(parsed)
}

pub(crate) fn present(input: &Value) -> Presentation {
    let n = input
        .get("todos")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    Presentation {
        title: format!("Update the plan ({n} items)"),
        kind: ToolKind::Think,
        locations: Vec::new(),
    }
}

/// The plan entries for these arguments (`None` if they are not a plan).
pub fn plan_entries(input: &Value) -> Option<Vec<PlanEntry>> {
    let input = parse(input).ok()?;
    Some(
        input
            .todos
            .into_iter()
            .map(|t| {
                let status = match t.status {
                    TodoStatus::Pending => PlanEntryStatus::Pending,
                    TodoStatus::InProgress => PlanEntryStatus::InProgress,
                    TodoStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(t.content, PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

pub(crate) async fn run(input: &TodoInput, _cx: ToolContext) -> ToolOutput {
    let done = input
        .todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let current = input
        .todos
        .iter()
        .find(|t| t.status == TodoStatus::InProgress)
        .map(|t| {
            format!(
                " In progress: {}.",
                t.active_form.as_deref().unwrap_or(&t.content)
            )
        })
        .unwrap_or_default();
    ToolOutput::completed(format!(
        "The plan is updated: {} items, {done} completed.{current}",
        input.todos.len()
    ))
}
