//! `Edit {file_path, old_string, new_string, replace_all?}`: replaces text in
//! a file. `old_string` must occur exactly once unless `replace_all`; an
//! empty `old_string` creates a file that does not exist yet. Reads and
//! writes go through the editor when it offers `fs/*` (so unsaved buffers
//! are what is edited), else the disk (atomically).

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::catalog::{Tool, parse_input};
use super::context::ToolContext;
use super::files::{FileAccess, base_of, first_changed_line};
use super::output::ToolOutput;
use crate::conversation::ToolSpec;
use crate::event_log::FileDiff;

/// The input, as Claude Code defines it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    pub file_path: String,
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: Option<bool>,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "Edit".into(),
        description: "Replaces old_string with new_string in a file. old_string must match exactly once (include surrounding lines to make it unique) unless replace_all is true. An empty old_string creates a new file.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file (relative paths resolve against the working directory)"},
                "old_string": {"type": "string", "description": "The exact text to replace"},
                "new_string": {"type": "string", "description": "The text to replace it with"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn parse(input: &Value) -> Result<EditInput, String> {
    let parsed: EditInput = parse_input(Tool::Edit, input)?;
    if parsed.file_path.is_empty() {
        return Err("invalid Edit input: `file_path` is empty".into());
    }
    if parsed.old_string == parsed.new_string {
        return Err("invalid Edit input: `old_string` and `new_string` are the same; there is nothing to change".into());
    }
    Ok(parsed)
}

/// The change proposed, from the arguments alone (the file is not read).
pub(crate) fn proposed(input: &EditInput) -> FileDiff {
    FileDiff {
        path: Path::new(&input.file_path).to_owned(),
        old_text: Some(input.old_string.clone()),
        new_text: input.new_string.clone(),
        line: 1,
        base: None,
        unread: true,
    }
}

/// The change this edit would make to the file as it is now.
pub(crate) async fn preview(
    input: &EditInput,
    files: &FileAccess,
    cancel: &CancellationToken,
) -> Result<FileDiff, String> {
    let path = Path::new(&input.file_path).to_owned();
    let shown = path.display().to_string();
    let Some(old) = files.read(&path, cancel).await? else {
        if input.old_string.is_empty() {
            let line = 1;
            return Ok(FileDiff {
                path,
                old_text: None,
                new_text: input.new_string.clone(),
                line,
                base: Some(base_of(None)),
                unread: false,
            });
        }
        return Err(format!(
            "{shown} does not exist (to create it, use Write, or Edit with an empty old_string)"
        ));
    };
    if input.old_string.is_empty() {
        return Err(format!(
            "{shown} already exists; an empty old_string only creates new files"
        ));
    }
    let count = old.matches(&input.old_string).count();
    let new = match (count, input.replace_all.unwrap_or(false)) {
        (0, _) => {
            return Err(format!(
                "old_string was not found in {shown}; it must match the file exactly, whitespace included"
            ));
        }
        (1, _) | (_, true) => old.replace(&input.old_string, &input.new_string),
        (n, false) => {
            return Err(format!(
                "old_string occurs {n} times in {shown}; include more surrounding text to make it unique, or set replace_all"
            ));
        }
    };
    let line = first_changed_line(&old, &new);
    Ok(FileDiff {
        path,
        base: Some(base_of(Some(&old))),
        old_text: Some(old),
        new_text: new,
        line,
        unread: false,
    })
}

pub(crate) async fn run(input: &EditInput, cx: ToolContext) -> ToolOutput {
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
    let text = format!(
        "Edited {}; the change starts at line {}:\n{}",
        diff.path.display(),
        diff.line,
        snippet(&diff.new_text, diff.line)
    );
    ToolOutput {
        diff: Some(diff),
        ..ToolOutput::completed(text)
    }
}

/// A few numbered lines around `line`, for the model to check its edit.
fn snippet(text: &str, line: u32) -> String {
    let from = line.saturating_sub(3).max(1) as usize;
    text.lines()
        .enumerate()
        .skip(from - 1)
        .take(8)
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn edit(dir: &Path, file: &str, input: Value) -> Result<FileDiff, String> {
        let mut input = input;
        input["file_path"] = json!(dir.join(file));
        let input = parse(&input)?;
        preview(&input, &FileAccess::default(), &CancellationToken::new()).await
    }

    #[tokio::test]
    async fn unique_matches_and_replace_all() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "let a = 1;\nlet b = 1;\n").unwrap();
        let d = edit(
            dir.path(),
            "a.rs",
            json!({"old_string": "let b", "new_string": "let c"}),
        )
        .await
        .unwrap();
        assert_eq!(d.new_text, "let a = 1;\nlet c = 1;\n");
        assert_eq!(d.line, 2);
        let e = edit(
            dir.path(),
            "a.rs",
            json!({"old_string": "= 1", "new_string": "= 2"}),
        )
        .await
        .unwrap_err();
        assert!(e.contains("occurs 2 times"), "{e}");
        let d = edit(
            dir.path(),
            "a.rs",
            json!({"old_string": "= 1", "new_string": "= 2", "replace_all": true}),
        )
        .await
        .unwrap();
        assert_eq!(d.new_text, "let a = 2;\nlet b = 2;\n");
        let e = edit(
            dir.path(),
            "a.rs",
            json!({"old_string": "nope", "new_string": "x"}),
        )
        .await
        .unwrap_err();
        assert!(e.contains("was not found"), "{e}");
        let e = edit(
            dir.path(),
            "new.rs",
            json!({"old_string": "x", "new_string": "y"}),
        )
        .await
        .unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let d = edit(
            dir.path(),
            "new.rs",
            json!({"old_string": "", "new_string": "fresh\n"}),
        )
        .await
        .unwrap();
        assert_eq!(d.old_text, None);
        assert!(
            parse(&json!({"file_path": "/a", "old_string": "x", "new_string": "x"}))
                .unwrap_err()
                .contains("the same")
        );
    }
}
