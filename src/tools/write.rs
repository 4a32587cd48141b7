//! `Write {file_path, content}`: creates or replaces a text file, through the
//! editor when it offers `fs/write_text_file`, else atomically on disk. The
//! card shows the change as a diff and points the editor at its first line.

use std::path::Path;

use agent_client_protocol_schema::v1::{ToolCallLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::context::ToolContext;
use super::files::{FileAccess, first_changed_line};
use super::output::ToolOutput;
use super::paths::resolve;
use crate::conversation::ToolSpec;
use crate::event_log::FileDiff;

/// The input, as Claude Code defines it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    pub file_path: String,
    pub content: String,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "Write".into(),
        description: "Writes a text file, replacing it if it exists. Prefer Edit for changing part of an existing file.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file (relative paths resolve against the working directory)"},
                "content": {"type": "string", "description": "The whole new content"}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn parse(input: &Value) -> Result<WriteInput, String> {
    let parsed: WriteInput = parse_input(Tool::Write, input)?;
    if parsed.file_path.is_empty() {
        return Err("invalid Write input: `file_path` is empty".into());
    }
    Ok(parsed)
}

/// The card of a call that changes a file (`Write`, `Edit`): `<tool>
/// <path>`, kind edit, located at the file.
pub(crate) fn present(tool: Tool, input: &Value, cwd: &Path) -> Presentation {
    let path = input
        .get("file_path")
        .and_then(Value::as_str)
        .map(|p| resolve(cwd, p));
    Presentation {
        title: match &path {
            Some(p) => format!("{} {}", tool.name(), p.display()),
            None => tool.name().into(),
        },
        kind: ToolKind::Edit,
        locations: path
            .map(|p| vec![ToolCallLocation::new(p)])
            .unwrap_or_default(),
    }
}

/// The change proposed, from the arguments alone (the file is not read).
pub(crate) fn proposed(input: &WriteInput) -> FileDiff {
    FileDiff {
        path: Path::new(&input.file_path).to_owned(),
        old_text: None,
        new_text: input.content.clone(),
        line: 1,
        base: None,
        unread: true,
    }
}

/// The change writing this input would make now.
pub(crate) async fn preview(
    input: &WriteInput,
    files: &FileAccess,
    cancel: &CancellationToken,
) -> Result<FileDiff, String> {
    let path = Path::new(&input.file_path).to_owned();
    let old = files.read(&path, cancel).await?;
    let line = first_changed_line(old.as_deref().unwrap_or(""), &input.content);
    Ok(FileDiff {
        path,
        base: Some(super::files::base_of(old.as_deref())),
        old_text: old,
        new_text: input.content.clone(),
        line,
        unread: false,
    })
}

pub(crate) async fn run(input: &WriteInput, cx: ToolContext) -> ToolOutput {
    let diff = match preview(input, &cx.files, &cx.cancel).await {
        Ok(d) => d,
        Err(e) => return ToolOutput::failed(e),
    };
    if let Err(e) = super::files::unchanged_since_allowed(cx.file_base.as_deref(), &diff) {
        return ToolOutput::failed(e);
    }
    if let Err(e) = cx.files.write(&diff.path, &diff.new_text, &cx.cancel).await {
        return ToolOutput::failed(e);
    }
    let lines = diff.new_text.lines().count();
    let text = match &diff.old_text {
        None => format!("Created {} ({lines} lines).", diff.path.display()),
        Some(_) => format!("Wrote {} ({lines} lines).", diff.path.display()),
    };
    ToolOutput {
        diff: Some(diff),
        ..ToolOutput::completed(text)
    }
}
