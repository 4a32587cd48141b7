//! `Read {file_path, offset?, limit?}`: returns a text file's lines,
//! numbered like `cat -n`.
//!
//! `offset` is the 1-based line to start at, `limit` the number of lines
//! (default [`DEFAULT_LIMIT`]); lines longer than [`MAX_LINE_CHARS`] are
//! cut. Binary files and files over [`MAX_FILE_BYTES`] are refused with a
//! message the model can act on; so is a missing file.
//!
//! An image file (PNG, JPEG, GIF or WebP, told by its bytes, whatever its
//! name) is given to the model as the image itself, as Claude Code does:
//! read from the disk (the editor's `fs/read_text_file` carries text), at
//! most `crate::media::MAX_IMAGE_BYTES` (a bigger one is a failed result
//! saying so), sent to the session as a `tool/content` image, which the
//! card shows and the model's history carries with the result.

use std::io::BufRead;
use std::path::Path;

use agent_client_protocol_schema::v1::{ToolCallLocation, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::context::ToolContext;
use super::output::{ToolOutput, cap_for_model};
use super::paths::resolve;
use crate::conversation::ToolSpec;

/// Lines returned when no `limit` is given.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Longer lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 2000;
/// Larger files are refused.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// The input, as Claude Code defines it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    pub file_path: String,
    #[serde(default)]
    pub offset: Option<u64>,
    #[serde(default)]
    pub limit: Option<u64>,
}

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "Read".into(),
        description: "Reads a text file and returns its lines numbered like `cat -n`. Use offset (1-based line) and limit (number of lines) for large files; at most 2000 lines are returned by default. An image file (PNG, JPEG, GIF or WebP, up to 5 MiB) is returned as the image, for you to look at.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path of the file (relative paths resolve against the working directory)"},
                "offset": {"type": "integer", "minimum": 1, "description": "Line to start at (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read"}
            },
            "required": ["file_path"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn parse(input: &Value) -> Result<ReadInput, String> {
    let parsed: ReadInput = parse_input(Tool::Read, input)?;
    if parsed.file_path.is_empty() {
        return Err("invalid Read input: `file_path` is empty".into());
    }
    if parsed.offset == Some(0) {
        return Err("invalid Read input: `offset` is 1-based; the first line is 1".into());
    }
    if parsed.limit == Some(0) {
        return Err("invalid Read input: `limit` must be at least 1".into());
    }
    Ok(parsed)
}

pub(crate) fn present(input: &Value, cwd: &Path) -> Presentation {
    let Ok(input) = parse(input) else {
        return Presentation {
            title: "Read".into(),
            kind: ToolKind::Read,
            locations: Vec::new(),
        };
    };
    let path = resolve(cwd, &input.file_path);
    let shown = path.display();
    let title = match (input.offset, input.limit) {
        (None, None) => format!("Read {shown}"),
        (offset, Some(limit)) => {
            let from = offset.unwrap_or(1);
            format!("Read {shown} (lines {from}–{})", last_line(from, limit))
        }
        (Some(from), None) => format!("Read {shown} (from line {from})"),
    };
    let line = input.offset.and_then(|o| u32::try_from(o).ok());
    Presentation {
        title,
        kind: ToolKind::Read,
        locations: vec![ToolCallLocation::new(path).line(line)],
    }
}

pub(crate) async fn run(input: &ReadInput, cx: ToolContext) -> ToolOutput {
    let path = resolve(&cx.cwd, &input.file_path);
    if path.is_file() {
        // Told by its bytes on disk, whatever reads text (the editor).
        let probe = path.clone();
        let image = tokio::select! {
            done = tokio::task::spawn_blocking(move || super::files::image_file(&probe)) => done,
            () = cx.cancel.cancelled() => return ToolOutput::cancelled("cancelled by the user"),
        };
        match image {
            Ok(Ok(Some((mime_type, bytes)))) => return image_output(&path, mime_type, &bytes, &cx),
            Ok(Ok(None)) => {}
            Ok(Err(message)) => return ToolOutput::failed(message),
            Err(e) => return ToolOutput::failed(format!("reading failed: {e}")),
        }
    }
    if cx.files.reads_through_editor() {
        // The editor's view of the file (unsaved changes included).
        let shown = path.display().to_string();
        return match cx.files.read(&path, &cx.cancel).await {
            Ok(Some(text)) => match number(text.as_bytes(), input, &shown) {
                Ok(text) => ToolOutput::completed(cap_for_model(&text)),
                Err(e) => ToolOutput::failed(e),
            },
            Ok(None) => ToolOutput::failed(format!("{shown} does not exist")),
            Err(e) if cx.cancel.is_cancelled() => ToolOutput::cancelled(e),
            Err(e) => ToolOutput::failed(e),
        };
    }
    let input = input.clone();
    let result = tokio::task::spawn_blocking(move || read_numbered(&path, &input));
    tokio::select! {
        done = result => match done {
            Ok(Ok(text)) => ToolOutput::completed(cap_for_model(&text)),
            Ok(Err(message)) => ToolOutput::failed(message),
            Err(e) => ToolOutput::failed(format!("reading failed: {e}")),
        },
        () = cx.cancel.cancelled() => ToolOutput::cancelled("cancelled by the user"),
    }
}

/// An image read: the image goes to the session (the card, the model),
/// the text says what it is.
fn image_output(path: &Path, mime_type: &str, bytes: &[u8], cx: &ToolContext) -> ToolOutput {
    let _ = cx.events.send(super::tool_event::ToolEvent::Content {
        content: vec![crate::event_log::ResultContent::Image {
            mime_type: mime_type.to_owned(),
            data: crate::media::encode(bytes),
            digest: None,
            bytes: None,
        }],
        structured: None,
    });
    ToolOutput::completed(format!(
        "{} is an image ({mime_type}, {}); it is attached to this result.",
        path.display(),
        crate::media::size(bytes.len() as u64)
    ))
}

/// The last line of `limit` lines from `from` (saturating: inputs come from the model).
fn last_line(from: u64, limit: u64) -> u64 {
    from.saturating_add(limit).saturating_sub(1)
}

fn read_numbered(path: &Path, input: &ReadInput) -> Result<String, String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!(
            "{shown} is a directory, not a file; use Bash with `ls` to list it"
        ));
    }
    match super::files::read_regular(path, MAX_FILE_BYTES)? {
        Some(bytes) => number(&bytes, input, &shown.to_string()),
        None => Err(format!("{shown} does not exist")),
    }
}

/// The numbered lines `input` asks for, from the whole text of a file.
fn number(bytes: &[u8], input: &ReadInput, shown: &str) -> Result<String, String> {
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(format!("{shown} is a binary file; Read only returns text"));
    }
    if bytes.is_empty() {
        return Ok(format!("({shown} is empty)"));
    }
    let offset = input.offset.unwrap_or(1);
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
    let mut out = String::new();
    let mut total = 0u64;
    for (index, line) in bytes.lines().enumerate() {
        let number = index as u64 + 1;
        total = number;
        if number < offset || number >= offset.saturating_add(limit) {
            continue;
        }
        let line = line.map_err(|e| format!("cannot read {shown}: {e}"))?;
        let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
        out.push_str(&format!("{number:>6}\t{cut}"));
        if cut.len() < line.len() {
            out.push_str(" [line cut]");
        }
        out.push('\n');
    }
    if offset > total {
        return Err(format!(
            "{shown} has {total} lines; offset {offset} is past the end"
        ));
    }
    let last_shown = last_line(offset, limit).min(total);
    if last_shown < total {
        out.push_str(&format!(
            "[showing lines {offset}–{last_shown} of {total}; use offset and limit for more]\n"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path, v: Value) -> Result<String, String> {
        read_numbered(path, &parse(&v).unwrap())
    }

    #[test]
    fn numbers_lines_and_honours_offset_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "one\ntwo\nthree\nfour\n").unwrap();
        let p = file.to_str().unwrap();
        assert_eq!(
            read(&file, json!({"file_path": p})).unwrap(),
            "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
        );
        assert_eq!(
            read(&file, json!({"file_path": p, "offset": 2, "limit": 2})).unwrap(),
            "     2\ttwo\n     3\tthree\n[showing lines 2–3 of 4; use offset and limit for more]\n"
        );
        assert!(
            read(&file, json!({"file_path": p, "offset": 9}))
                .unwrap_err()
                .contains("past the end")
        );
    }

    #[test]
    fn refuses_what_it_cannot_show() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("b.bin");
        std::fs::write(&bin, [1u8, 0, 2]).unwrap();
        let p = bin.to_str().unwrap();
        assert!(
            read(&bin, json!({"file_path": p}))
                .unwrap_err()
                .contains("binary")
        );
        let missing = dir.path().join("nope");
        assert!(
            read(&missing, json!({"file_path": "nope"}))
                .unwrap_err()
                .contains("does not exist")
        );
        assert!(
            read(dir.path(), json!({"file_path": "x"}))
                .unwrap_err()
                .contains("directory")
        );
    }

    #[test]
    fn presents_the_resolved_path() {
        let p = present(
            &json!({"file_path": "src/lib.rs", "offset": 10, "limit": 5}),
            Path::new("/p"),
        );
        assert_eq!(p.title, "Read /p/src/lib.rs (lines 10–14)");
        assert_eq!(
            p.locations,
            vec![ToolCallLocation::new("/p/src/lib.rs").line(10)]
        );
    }
}
