//! `Glob {pattern, path?}` and `Grep {pattern, path?, glob?, output_mode?,
//! -i?, -n?, -A?, -B?, -C?, type?, head_limit?, multiline?}`, built on
//! ripgrep's crates: `ignore` walks the tree (respecting `.gitignore` and
//! skipping hidden files, as `rg` does), `globset` matches paths, and
//! `grep-regex` + `grep-searcher` search contents.
//!
//! Glob lists files whose path (relative to the search root) matches the
//! pattern, most recently modified first, at most [`GLOB_LIMIT`]. Grep's
//! modes are Claude Code's: `files_with_matches` (default, most recently
//! modified first), `content` (`path:line:text`, context lines with `-`),
//! and `count` (`path:count`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agent_client_protocol_schema::v1::{ToolCallLocation, ToolKind};
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use ignore::types::TypesBuilder;
use serde::Deserialize;
use serde_json::{Value, json};

use super::card::Presentation;
use super::catalog::{Tool, parse_input};
use super::context::ReadFilter;
use super::context::ToolContext;
use super::output::{ToolOutput, cap_for_model};
use super::paths::resolve;
use crate::conversation::ToolSpec;

/// Most paths Glob returns.
pub const GLOB_LIMIT: usize = 100;
/// Most lines (or entries) Grep returns unless `head_limit` says otherwise.
pub const GREP_LIMIT: usize = 500;
/// The most `head_limit` can ask for (more would be cut for the model
/// anyway; the lines are held in memory until then).
pub const GREP_MAX_LIMIT: usize = 10_000;
/// Longest line Grep returns, in characters (the rest is cut).
pub const GREP_LINE_CHARS: usize = 2_000;
/// The most bytes the searcher buffers for one line; a file with a longer
/// line is skipped.
const GREP_HEAP_LIMIT: usize = 16 * 1024 * 1024;
/// The most files a search walks; past it the search stops and says so.
pub const MAX_WALK: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub output_mode: Option<String>,
    #[serde(default, rename = "-i")]
    pub case_insensitive: Option<bool>,
    #[serde(default, rename = "-n")]
    pub line_numbers: Option<bool>,
    #[serde(default, rename = "-A")]
    pub after: Option<usize>,
    #[serde(default, rename = "-B")]
    pub before: Option<usize>,
    #[serde(default, rename = "-C")]
    pub context: Option<usize>,
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    #[serde(default)]
    pub head_limit: Option<usize>,
    #[serde(default)]
    pub multiline: Option<bool>,
}

pub(crate) fn glob_spec() -> ToolSpec {
    ToolSpec {
        name: "Glob".into(),
        description: "Finds files by path pattern (e.g. \"**/*.rs\", \"src/**/*.ts\"), respecting .gitignore. Returns paths, most recently modified first.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob matched against paths relative to the search directory"},
                "path": {"type": "string", "description": "Directory to search (default: the working directory)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn grep_spec() -> ToolSpec {
    ToolSpec {
        name: "Grep".into(),
        description: "Searches file contents with a regular expression (ripgrep syntax), respecting .gitignore. output_mode: files_with_matches (default), content, or count.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression"},
                "path": {"type": "string", "description": "File or directory to search (default: the working directory)"},
                "glob": {"type": "string", "description": "Only files whose path matches this glob (e.g. \"*.rs\")"},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
                "-i": {"type": "boolean", "description": "Case-insensitive"},
                "-n": {"type": "boolean", "description": "Line numbers in content mode (default true)"},
                "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match"},
                "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match"},
                "-C": {"type": "integer", "minimum": 0, "description": "Lines of context around each match"},
                "type": {"type": "string", "description": "File type, as ripgrep names them (rust, js, py, …)"},
                "head_limit": {"type": "integer", "minimum": 1, "description": "Only the first N lines or entries"},
                "multiline": {"type": "boolean", "description": "Let the pattern span lines (. matches newlines)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn parse_glob(input: &Value) -> Result<GlobInput, String> {
    let parsed: GlobInput = parse_input(Tool::Glob, input)?;
    glob_matcher(&parsed.pattern)?;
    Ok(parsed)
}

pub(crate) fn parse_grep(input: &Value) -> Result<GrepInput, String> {
    let parsed: GrepInput = parse_input(Tool::Grep, input)?;
    matcher(&parsed).map_err(|e| format!("invalid Grep input: {e}"))?;
    if let Some(g) = &parsed.glob {
        glob_matcher(g)?;
    }
    match parsed.output_mode.as_deref() {
        None | Some("content" | "files_with_matches" | "count") => {}
        Some(other) => {
            return Err(format!(
                "invalid Grep input: output_mode {other:?} is not content, files_with_matches or count"
            ));
        }
    }
    if let Some(t) = &parsed.file_type {
        types(t).map_err(|e| format!("invalid Grep input: {e}"))?;
    }
    if parsed.head_limit == Some(0) {
        return Err("invalid Grep input: head_limit must be at least 1".into());
    }
    Ok(parsed)
}

fn glob_matcher(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid glob {pattern:?}: {e}"))
}

fn matcher(input: &GrepInput) -> Result<grep_regex::RegexMatcher, String> {
    let multiline = input.multiline.unwrap_or(false);
    RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive.unwrap_or(false))
        .multi_line(multiline)
        .dot_matches_new_line(multiline)
        .build(&input.pattern)
        .map_err(|e| format!("invalid pattern: {e}"))
}

fn types(name: &str) -> Result<ignore::types::Types, String> {
    let mut builder = TypesBuilder::new();
    builder.add_defaults();
    builder.select(name);
    builder
        .build()
        .map_err(|e| format!("unknown file type {name:?}: {e}"))
}

pub(crate) fn present(tool: Tool, input: &Value, cwd: &Path) -> Presentation {
    let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("");
    let root = input
        .get("path")
        .and_then(Value::as_str)
        .map(|p| resolve(cwd, p))
        .unwrap_or_else(|| cwd.to_owned());
    let verb = if tool == Tool::Glob {
        "Find"
    } else {
        "Search for"
    };
    Presentation {
        title: format!("{verb} `{pattern}` in {}", root.display()),
        kind: ToolKind::Search,
        locations: vec![ToolCallLocation::new(root)],
    }
}

/// Files under `root` (a file is its own list), walking as ripgrep does,
/// without those a Read deny rule forbids (how many were left out is the
/// second value).
fn walk(
    root: &Path,
    types: Option<ignore::types::Types>,
    denies: &ReadFilter,
) -> (Vec<(PathBuf, SystemTime)>, LeftOut) {
    let (all, cut) = walk_all(root, types);
    let before = all.len();
    let kept: Vec<_> = all.into_iter().filter(|(p, _)| !denies.denies(p)).collect();
    let denied = before - kept.len();
    (kept, LeftOut { denied, cut })
}

/// What a walk did not look at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LeftOut {
    /// Files a permission rule denies reading.
    denied: usize,
    /// The walk stopped at [`MAX_WALK`] files.
    cut: bool,
}

/// What a search tells the model about files it did not look at.
fn left_out_note(left_out: LeftOut) -> Option<String> {
    let mut notes = Vec::new();
    if left_out.denied > 0 {
        notes.push(format!(
            "[{} file(s) were left out: a permission rule denies reading them]",
            left_out.denied
        ));
    }
    if left_out.cut {
        notes.push(format!(
            "[the search stopped after {MAX_WALK} files; narrow it with `path` or `glob`]"
        ));
    }
    (!notes.is_empty()).then(|| notes.join("\n"))
}

fn walk_all(
    root: &Path,
    types: Option<ignore::types::Types>,
) -> (Vec<(PathBuf, SystemTime)>, bool) {
    if root.is_file() {
        let mtime = std::fs::metadata(root)
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        return (vec![(root.to_owned(), mtime)], false);
    }
    let mut builder = WalkBuilder::new(root);
    builder.require_git(false);
    if let Some(t) = types {
        builder.types(t);
    }
    let mut files: Vec<_> = builder
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(MAX_WALK + 1)
        .map(|e| {
            let mtime = e
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (e.into_path(), mtime)
        })
        .collect();
    let cut = files.len() > MAX_WALK;
    files.truncate(MAX_WALK);
    (files, cut)
}

fn newest_first(files: &mut [(PathBuf, SystemTime)]) {
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

fn search_root(cx: &ToolContext, path: &Option<String>) -> Result<PathBuf, String> {
    let root = path
        .as_deref()
        .map(|p| resolve(&cx.cwd, p))
        .unwrap_or_else(|| cx.cwd.clone());
    if root.exists() {
        Ok(root)
    } else {
        Err(format!("{} does not exist", root.display()))
    }
}

pub(crate) async fn glob(input: &GlobInput, cx: ToolContext) -> ToolOutput {
    let root = match search_root(&cx, &input.path) {
        Ok(r) => r,
        Err(e) => return ToolOutput::failed(e),
    };
    let denies = cx.read_denies.clone();
    let input = input.clone();
    let work = tokio::task::spawn_blocking(move || {
        let matcher = glob_matcher(&input.pattern)?;
        let (found, left_out) = walk(&root, None, &denies);
        let mut files: Vec<_> = found
            .into_iter()
            .filter(|(p, _)| matcher.is_match(p.strip_prefix(&root).unwrap_or(p)))
            .collect();
        newest_first(&mut files);
        let total = files.len();
        let mut out: Vec<String> = files
            .iter()
            .take(GLOB_LIMIT)
            .map(|(p, _)| p.display().to_string())
            .collect();
        if total > GLOB_LIMIT {
            out.push(format!("[{total} files match; showing the {GLOB_LIMIT} most recently modified. Narrow the pattern or the path for the rest]"));
        }
        if total == 0 {
            out.push("No files found".to_owned());
        }
        out.extend(left_out_note(left_out));
        Ok::<_, String>(out.join("\n"))
    });
    cancellable(&cx, work).await
}

pub(crate) async fn grep(input: &GrepInput, cx: ToolContext) -> ToolOutput {
    let root = match search_root(&cx, &input.path) {
        Ok(r) => r,
        Err(e) => return ToolOutput::failed(e),
    };
    let denies = cx.read_denies.clone();
    let input = input.clone();
    let work = tokio::task::spawn_blocking(move || grep_blocking(&input, &root, &denies));
    cancellable(&cx, work).await
}

/// Runs blocking search work, giving up on cancel (the walk finishes in the
/// background; it only reads).
async fn cancellable(
    cx: &ToolContext,
    work: tokio::task::JoinHandle<Result<String, String>>,
) -> ToolOutput {
    tokio::select! {
        done = work => match done {
            Ok(Ok(text)) => ToolOutput::completed(cap_for_model(&text)),
            Ok(Err(e)) => ToolOutput::failed(e),
            Err(e) => ToolOutput::failed(format!("the search failed: {e}")),
        },
        _ = cx.cancel.cancelled() => ToolOutput::cancelled("cancelled by the user"),
    }
}

fn grep_blocking(input: &GrepInput, root: &Path, denies: &ReadFilter) -> Result<String, String> {
    let matcher = matcher(input)?;
    let filter = input.glob.as_deref().map(glob_matcher).transpose()?;
    let types = input.file_type.as_deref().map(types).transpose()?;
    let mode = input.output_mode.as_deref().unwrap_or("files_with_matches");
    let context = input.context.unwrap_or(0);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .multi_line(input.multiline.unwrap_or(false))
        .before_context(if mode == "content" {
            input.before.unwrap_or(context)
        } else {
            0
        })
        .after_context(if mode == "content" {
            input.after.unwrap_or(context)
        } else {
            0
        })
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(GREP_HEAP_LIMIT))
        .build();
    let (mut files, left_out) = walk(root, types, denies);
    newest_first(&mut files);
    let numbers = input.line_numbers.unwrap_or(true);
    let limit = input.head_limit.unwrap_or(GREP_LIMIT).min(GREP_MAX_LIMIT);
    let mut out: Vec<String> = Vec::new();
    let mut cut = false;
    for (path, _) in files {
        if let Some(f) = &filter {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let name = Path::new(path.file_name().unwrap_or_default());
            if !f.is_match(relative) && !f.is_match(name) {
                continue;
            }
        }
        let mut sink = Collect {
            room: if mode == "content" {
                limit + 1 - out.len().min(limit)
            } else {
                0
            },
            first_only: !matches!(mode, "content" | "count"),
            ..Collect::default()
        };
        if searcher.search_path(&matcher, &path, &mut sink).is_err() || sink.matches == 0 {
            continue;
        }
        let shown = path.display();
        match mode {
            "count" => out.push(format!("{shown}:{}", sink.matches)),
            "content" => {
                let mut last: Option<u64> = None;
                for (line, is_match, text) in sink.lines {
                    if last.is_some_and(|l| line > l + 1) {
                        out.push("--".into());
                    }
                    last = Some(line);
                    let sep = if is_match { ':' } else { '-' };
                    out.push(if numbers {
                        format!("{shown}{sep}{line}{sep}{text}")
                    } else {
                        format!("{shown}{sep}{text}")
                    });
                }
            }
            _ => out.push(shown.to_string()),
        }
        if out.len() > limit {
            cut = true;
            out.truncate(limit);
            break;
        }
    }
    if out.is_empty() {
        out.push("No matches found".to_owned());
    }
    if cut {
        out.push(format!(
            "[output limited to {limit} lines; narrow the search or raise head_limit]"
        ));
    }
    out.extend(left_out_note(left_out));
    Ok(out.join("\n"))
}

/// Collects matching and context lines of one file, at most `room` of
/// them, each cut at [`GREP_LINE_CHARS`].
#[derive(Default)]
struct Collect {
    matches: u64,
    lines: Vec<(u64, bool, String)>,
    /// How many lines to keep (0: none, the mode needs no lines).
    room: usize,
    /// Stop at the first match (`files_with_matches`).
    first_only: bool,
}

impl Collect {
    fn keep(&mut self, line: u64, is_match: bool, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = match text.char_indices().nth(GREP_LINE_CHARS) {
            Some((cut, _)) => format!("{}… [line cut]", &text[..cut]),
            None => text.to_owned(),
        };
        self.lines.push((line, is_match, text));
        self.lines.len() < self.room
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        if self.room == 0 {
            // Counting only (or naming the file: one match is enough).
            return Ok(!self.first_only);
        }
        let first = m.line_number().unwrap_or(0);
        for (i, line) in m.lines().enumerate() {
            if !self.keep(first + i as u64, true, line) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(self.room == 0 || self.keep(c.line_number().unwrap_or(0), false, c.bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("src/deep")).unwrap();
        std::fs::write(
            p.join("src/lib.rs"),
            "fn alpha() {}\nfn beta() {}\n// TODO: gamma\n",
        )
        .unwrap();
        std::fs::write(p.join("src/deep/mod.rs"), "fn delta() {}\n").unwrap();
        std::fs::write(p.join("notes.md"), "alpha notes\n").unwrap();
        std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(p.join("target")).unwrap();
        std::fs::write(p.join("target/gen.rs"), "fn alpha() {}\n").unwrap();
        dir
    }

    fn grep_with(root: &Path, v: Value) -> String {
        grep_blocking(&parse_grep(&v).unwrap(), root, &ReadFilter::default()).unwrap()
    }

    #[test]
    fn searches_leave_out_what_a_read_deny_rule_forbids() {
        let dir = project();
        let root = dir.path();
        let rules = crate::interception::policy::Rules {
            deny: vec![
                crate::interception::policy::Rule::parse("Read(./src/deep/**)", root, None)
                    .unwrap(),
            ],
            ..Default::default()
        };
        let denies = {
            let d = crate::interception::policy::ReadDenies::of(&rules);
            ReadFilter::new(move |p| d.denies(p))
        };
        let v = json!({"pattern": "fn", "output_mode": "content"});
        let out = grep_blocking(&parse_grep(&v).unwrap(), root, &denies).unwrap();
        assert!(!out.contains("delta"), "{out}");
        assert!(out.contains("alpha"), "{out}");
        assert!(out.ends_with("[1 file(s) were left out: a permission rule denies reading them]"));
        let (files, left_out) = walk(root, None, &denies);
        assert_eq!(left_out.denied, 1);
        assert!(
            files
                .iter()
                .all(|(p, _)| !p.starts_with(root.join("src/deep")))
        );
    }

    #[test]
    fn grep_modes_respect_gitignore() {
        let dir = project();
        let root = dir.path();
        let files = grep_with(root, json!({"pattern": "alpha"}));
        let mut lines: Vec<&str> = files.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                root.join("notes.md").to_str().unwrap(),
                root.join("src/lib.rs").to_str().unwrap()
            ]
        );
        let content = grep_with(
            root,
            json!({"pattern": "beta", "output_mode": "content", "-B": 1}),
        );
        let lib = root.join("src/lib.rs");
        assert_eq!(
            content,
            format!("{0}-1-fn alpha() {{}}\n{0}:2:fn beta() {{}}", lib.display())
        );
        let count = grep_with(
            root,
            json!({"pattern": "fn", "output_mode": "count", "type": "rust", "glob": "lib.rs"}),
        );
        assert_eq!(count, format!("{}:2", lib.display()));
        assert_eq!(
            grep_with(
                root,
                json!({"pattern": "ALPHA", "-i": true, "glob": "*.md"})
            ),
            root.join("notes.md").display().to_string()
        );
        assert_eq!(
            grep_with(root, json!({"pattern": "zzz"})),
            "No matches found"
        );
        assert!(
            parse_grep(&json!({"pattern": "("}))
                .unwrap_err()
                .contains("invalid pattern")
        );
        assert!(
            parse_grep(&json!({"pattern": "a", "type": "nolang"}))
                .unwrap_err()
                .contains("unknown file type")
        );
    }

    #[test]
    fn glob_matches_relative_paths_newest_first() {
        let dir = project();
        let root = dir.path();
        let (all, _) = walk(root, None, &ReadFilter::default());
        assert!(all.iter().all(|(p, _)| !p.starts_with(root.join("target"))));
        let m = glob_matcher("**/*.rs").unwrap();
        let mut found: Vec<_> = all
            .into_iter()
            .filter(|(p, _)| m.is_match(p.strip_prefix(root).unwrap()))
            .map(|(p, _)| p)
            .collect();
        found.sort();
        assert_eq!(
            found,
            [root.join("src/deep/mod.rs"), root.join("src/lib.rs")]
        );
        assert!(!glob_matcher("*.rs").unwrap().is_match("src/lib.rs"));
    }
}
