//! The tools the model can call.
//!
//! Tool names and input shapes are Claude Code's (`Bash {command, …}`,
//! `Read {file_path, …}`), so hooks written for Claude Code match them
//! unchanged. Each tool lives in its own file and supplies:
//!
//! * its [`ToolSpec`] (name, description, JSON input schema for the model);
//! * `parse`: the typed parse of an input (a failure is told to the model),
//!   done once per input, when the call is settled ([`Tool::accept`]);
//! * `present`: a pure function from arguments to the card's title, kind and
//!   locations (no I/O, so a replayed log presents identically);
//! * `run`: executes a [`ToolInput`] that interception approved (an
//!   `ApprovedCall` carries it; nothing else reaches a tool).
//!
//! Tool failures are data: a failed run produces a [`ToolOutput`] with
//! status `failed` and a message for the model, never an error that ends
//! the turn.
//!
//! This file declares the tools and assembles them: the dispatch from a
//! [`Tool`] to its file's spec and card, [`ToolInput`] (one variant a
//! tool) and its run. What the tools share lives in leaf files they
//! import: `catalog` (the set and what each tool says about itself),
//! `card`, `context`, `tool_event`, `output`, `paths`, `files`.

pub mod agent;
pub mod ask_user;
pub mod bash;
mod card;
mod catalog;
pub mod confined;
mod context;
pub mod edit;
pub mod exec;
pub mod files;
pub mod mcp;
pub mod output;
mod paths;
pub mod read;
pub mod running;
pub mod search;
pub mod shells;
pub mod todo;
mod tool_event;
pub mod web_fetch;
pub mod write;

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::conversation::ToolSpec;
use crate::event_log::FileDiff;
pub use card::{Presentation, present_mcp, present_unknown};
pub use catalog::Tool;
pub use context::{ReadFilter, ToolContext, WebAccess};
pub use files::{ClientLink, FileAccess};
pub use output::{MODEL_OUTPUT_MAX, ToolOutput, cap_for_model};
pub use paths::{resolve, resolve_links};
pub use shells::Shells;
pub use tool_event::{Elicited, ToolEvent};

impl Tool {
    pub fn spec(self) -> ToolSpec {
        match self {
            Tool::Bash => bash::spec(),
            Tool::BashOutput => shells::output_spec(),
            Tool::KillShell => shells::kill_spec(),
            Tool::Read => read::spec(),
            Tool::Write => write::spec(),
            Tool::Edit => edit::spec(),
            Tool::Glob => search::glob_spec(),
            Tool::Grep => search::grep_spec(),
            Tool::TodoWrite => todo::spec(),
            Tool::AskUserQuestion => ask_user::spec(),
            Tool::Agent => agent::spec(),
            Tool::WebFetch => web_fetch::spec(),
        }
    }

    /// A call's arguments as this tool takes them: parsed against its
    /// schema (`Err` says what is wrong) into the typed input (a Bash line
    /// read by the shell parser too), then its path normalized
    /// ([`ToolInput::normalize`]) in the typed input and, from it, in the
    /// arguments. The one parse of these arguments: after it, everything
    /// judges the typed input.
    pub fn accept(self, arguments: &Value, cwd: &Path) -> Result<Accepted, String> {
        let mut input = ToolInput::parse(self, arguments)?;
        let spelled = input.normalize(cwd);
        let mut arguments = arguments.clone();
        if let Some(key) = self.path_key()
            && let Some(path) = input.path()
            && let Some(obj) = arguments.as_object_mut()
        {
            obj.insert(key.to_owned(), Value::String(path.to_owned()));
        }
        // A URL as parsed (scheme and host lower-cased, dots resolved): the
        // one the rules judge and the fetch requests.
        if let ToolInput::WebFetch(i) = &input
            && let Some(obj) = arguments.as_object_mut()
        {
            obj.insert("url".to_owned(), Value::String(i.url.to_string()));
        }
        Ok(Accepted {
            arguments,
            input,
            spelled,
        })
    }

    /// Card title, kind and locations for these arguments.
    pub fn present(self, input: &Value, cwd: &Path) -> Presentation {
        match self {
            Tool::Bash => bash::present(input, cwd),
            Tool::BashOutput | Tool::KillShell => shells::present(self, input),
            Tool::Read => read::present(input, cwd),
            Tool::Write | Tool::Edit => write::present(self, input, cwd),
            Tool::Glob | Tool::Grep => search::present(self, input, cwd),
            Tool::TodoWrite => todo::present(input),
            Tool::AskUserQuestion => ask_user::present(input),
            Tool::Agent => agent::present(input),
            Tool::WebFetch => web_fetch::present(input),
        }
    }

    /// What a card shows of the input beside its title, when the title shows
    /// only part of it: a multi-line or long command, whole.
    pub fn detail(self, input: &Value) -> Option<String> {
        match self {
            Tool::Bash => bash::detail(input),
            Tool::AskUserQuestion => ask_user::detail(input),
            Tool::Agent => agent::detail(input),
            Tool::WebFetch => web_fetch::detail(input),
            _ => None,
        }
    }
}

/// A call's arguments, accepted by its tool ([`Tool::accept`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The arguments, their path absolute, without `..` and with links
    /// followed: what hooks, rules, the card and the log see.
    pub arguments: Value,
    /// The same arguments as the tool's input: what runs.
    pub input: ToolInput,
    /// The path as written (absolute, links not followed) when that
    /// differs from where it leads: rules judge both.
    pub spelled: Option<PathBuf>,
}

/// A call's input, parsed once, when the call is settled (one variant a
/// tool, and one for the tools of MCP servers): what is judged (hooks'
/// `if` filters, rules, the mode, the grant offer), previewed and run. The
/// approved call carries it and runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolInput {
    Bash(bash::BashInput),
    BashOutput(shells::OutputInput),
    KillShell(shells::KillInput),
    Read(read::ReadInput),
    Write(write::WriteInput),
    Edit(edit::EditInput),
    Glob(search::GlobInput),
    Grep(search::GrepInput),
    TodoWrite(todo::TodoInput),
    AskUserQuestion(ask_user::AskInput),
    Agent(agent::AgentInput),
    WebFetch(web_fetch::WebFetchInput),
    /// A tool of one of the session's MCP servers.
    Mcp(mcp::McpInput),
}

impl ToolInput {
    /// Parses `input` as `tool`'s; `Err` says what is wrong.
    pub fn parse(tool: Tool, input: &Value) -> Result<ToolInput, String> {
        Ok(match tool {
            Tool::Bash => ToolInput::Bash(bash::parse(input)?),
            Tool::BashOutput => ToolInput::BashOutput(shells::parse_output(input)?),
            Tool::KillShell => ToolInput::KillShell(shells::parse_kill(input)?),
            Tool::Read => ToolInput::Read(read::parse(input)?),
            Tool::Write => ToolInput::Write(write::parse(input)?),
            Tool::Edit => ToolInput::Edit(edit::parse(input)?),
            Tool::Glob => ToolInput::Glob(search::parse_glob(input)?),
            Tool::Grep => ToolInput::Grep(search::parse_grep(input)?),
            Tool::TodoWrite => ToolInput::TodoWrite(todo::parse(input)?),
            Tool::AskUserQuestion => ToolInput::AskUserQuestion(ask_user::parse(input)?),
            Tool::Agent => ToolInput::Agent(agent::parse(input)?),
            Tool::WebFetch => ToolInput::WebFetch(web_fetch::parse(input)?),
        })
    }

    /// The path the input names, where the tool has one (the field
    /// [`normalize`](Self::normalize) makes absolute).
    fn path_mut(&mut self) -> Option<&mut String> {
        match self {
            ToolInput::Read(i) => Some(&mut i.file_path),
            ToolInput::Write(i) => Some(&mut i.file_path),
            ToolInput::Edit(i) => Some(&mut i.file_path),
            ToolInput::Glob(i) => i.path.as_mut(),
            ToolInput::Grep(i) => i.path.as_mut(),
            ToolInput::Bash(_)
            | ToolInput::BashOutput(_)
            | ToolInput::KillShell(_)
            | ToolInput::TodoWrite(_)
            | ToolInput::AskUserQuestion(_)
            | ToolInput::Agent(_)
            | ToolInput::WebFetch(_)
            | ToolInput::Mcp(_) => None,
        }
    }

    /// The path the input names, as given (before [`Tool::accept`]) or
    /// normalized (after it).
    fn path(&self) -> Option<&str> {
        match self {
            ToolInput::Read(i) => Some(&i.file_path),
            ToolInput::Write(i) => Some(&i.file_path),
            ToolInput::Edit(i) => Some(&i.file_path),
            ToolInput::Glob(i) => i.path.as_deref(),
            ToolInput::Grep(i) => i.path.as_deref(),
            ToolInput::Bash(_)
            | ToolInput::BashOutput(_)
            | ToolInput::KillShell(_)
            | ToolInput::TodoWrite(_)
            | ToolInput::AskUserQuestion(_)
            | ToolInput::Agent(_)
            | ToolInput::WebFetch(_)
            | ToolInput::Mcp(_) => None,
        }
    }

    /// The file or directory the call is about, once accepted: absolute,
    /// without `..`, links followed (what the tool opens). `None` for a
    /// tool without a path, and for a search given none (it searches the
    /// working directory).
    pub fn target(&self) -> Option<&Path> {
        self.path().map(Path::new)
    }

    /// The task, for an `Agent` call.
    pub fn delegation(&self) -> Option<&agent::AgentInput> {
        match self {
            ToolInput::Agent(a) => Some(a),
            _ => None,
        }
    }

    /// A WebFetch call's input.
    pub fn web_fetch(&self) -> Option<&web_fetch::WebFetchInput> {
        match self {
            ToolInput::WebFetch(w) => Some(w),
            _ => None,
        }
    }

    /// The Bash line and what it will run, for a Bash call.
    pub fn command(&self) -> Option<&bash::BashInput> {
        match self {
            ToolInput::Bash(b) => Some(b),
            _ => None,
        }
    }

    /// Makes the input's path absolute (against `cwd`), without `..` and
    /// with symbolic links followed: the file the call is about, which
    /// hooks, rules, the card, the log and the tool itself all see. Returns
    /// the path as written (made absolute, links not followed) when that
    /// differs from where it leads: rules judge both.
    pub fn normalize(&mut self, cwd: &Path) -> Option<PathBuf> {
        let path = self.path_mut()?;
        let lexical = resolve(cwd, path);
        let real = resolve_links(&lexical);
        *path = real.display().to_string();
        (real != lexical).then_some(lexical)
    }

    /// For tools that change a file: the change they would make now, shown
    /// on the card (and in a permission prompt) before they run. `Err` is a
    /// reason the call cannot work (the text to find is not there, …).
    /// Without `read`, the file is not read: the change proposed by the
    /// input alone (`FileDiff::unread`).
    pub async fn preview(
        &self,
        files: &FileAccess,
        cancel: &CancellationToken,
        read: bool,
    ) -> Option<Result<FileDiff, String>> {
        match self {
            ToolInput::Write(i) if !read => Some(Ok(write::proposed(i))),
            ToolInput::Edit(i) if !read => Some(Ok(edit::proposed(i))),
            ToolInput::Write(i) => Some(write::preview(i, files, cancel).await),
            ToolInput::Edit(i) => Some(edit::preview(i, files, cancel).await),
            ToolInput::Bash(_)
            | ToolInput::BashOutput(_)
            | ToolInput::KillShell(_)
            | ToolInput::Read(_)
            | ToolInput::Glob(_)
            | ToolInput::Grep(_)
            | ToolInput::TodoWrite(_)
            | ToolInput::AskUserQuestion(_)
            | ToolInput::Agent(_)
            | ToolInput::WebFetch(_)
            | ToolInput::Mcp(_) => None,
        }
    }

    /// The built-in tool, or `None` for an MCP tool.
    pub fn tool(&self) -> Option<Tool> {
        Some(match self {
            ToolInput::Mcp(_) => return None,
            ToolInput::Bash(_) => Tool::Bash,
            ToolInput::BashOutput(_) => Tool::BashOutput,
            ToolInput::KillShell(_) => Tool::KillShell,
            ToolInput::Read(_) => Tool::Read,
            ToolInput::Write(_) => Tool::Write,
            ToolInput::Edit(_) => Tool::Edit,
            ToolInput::Glob(_) => Tool::Glob,
            ToolInput::Grep(_) => Tool::Grep,
            ToolInput::TodoWrite(_) => Tool::TodoWrite,
            ToolInput::AskUserQuestion(_) => Tool::AskUserQuestion,
            ToolInput::Agent(_) => Tool::Agent,
            ToolInput::WebFetch(_) => Tool::WebFetch,
        })
    }

    /// Runs the call to completion (or until cancelled).
    pub async fn run(&self, cx: ToolContext) -> ToolOutput {
        match self {
            ToolInput::Bash(i) => bash::run(i, cx).await,
            ToolInput::BashOutput(i) => shells::output(i, &cx.shells).await,
            ToolInput::KillShell(i) => shells::kill(i, &cx.shells, cx.kill_grace).await,
            ToolInput::Read(i) => read::run(i, cx).await,
            ToolInput::Write(i) => write::run(i, cx).await,
            ToolInput::Edit(i) => edit::run(i, cx).await,
            ToolInput::Glob(i) => search::glob(i, cx).await,
            ToolInput::Grep(i) => search::grep(i, cx).await,
            ToolInput::TodoWrite(i) => todo::run(i, cx).await,
            ToolInput::AskUserQuestion(i) => ask_user::run(i, cx).await,
            ToolInput::Agent(i) => agent::run(i, cx).await,
            ToolInput::WebFetch(i) => web_fetch::run(i, cx).await,
            ToolInput::Mcp(i) => mcp::run(i, cx).await,
        }
    }
}

/// The specs of every tool, for a model request: candor's own, then the
/// MCP servers' (`mcp__<server>__<tool>`).
pub fn specs(mcp: &[crate::tools::mcp::McpTool]) -> Vec<ToolSpec> {
    let built_in: Vec<(String, String)> = crate::subagents::built_ins()
        .into_iter()
        .map(|d| (d.name, d.description))
        .collect();
    specs_for(mcp, &built_in, |_| true)
}

/// The specs of the tools `offered` lets the model see, with `Agent`
/// offering `agents` (name, description; no `Agent` when there are none).
pub fn specs_for(
    mcp: &[crate::tools::mcp::McpTool],
    agents: &[(String, String)],
    offered: impl Fn(&str) -> bool,
) -> Vec<ToolSpec> {
    let types: Vec<(&str, &str)> = agents
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_str()))
        .collect();
    Tool::ALL
        .into_iter()
        .filter(|t| offered(t.name()) && (*t != Tool::Agent || !types.is_empty()))
        .map(|t| match t {
            Tool::Agent => agent::spec_with(&types),
            other => other.spec(),
        })
        .chain(
            mcp.iter()
                .filter(|t| offered(&t.exposed))
                .map(|t| ToolSpec {
                    name: t.exposed.clone().into(),
                    description: t.description.clone().into(),
                    input_schema: t.input_schema.clone(),
                }),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_both_ends() {
        let text = format!("{}{}", "a".repeat(20_000), "b".repeat(20_000));
        let capped = cap_for_model(&text);
        assert!(capped.starts_with(&"a".repeat(15_000)));
        assert!(capped.ends_with(&"b".repeat(15_000)));
        assert!(capped.contains("[… 10000 characters elided by candor …]"));
        assert_eq!(cap_for_model("short"), "short");
    }

    #[test]
    fn paths_resolve_without_dots() {
        assert_eq!(
            resolve(Path::new("/p"), "src/a.rs"),
            PathBuf::from("/p/src/a.rs")
        );
        assert_eq!(resolve(Path::new("/p"), "../x"), PathBuf::from("/x"));
        assert_eq!(
            resolve(Path::new("/p"), "/etc/./a/../passwd"),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(resolve(Path::new("/p"), "/../.."), PathBuf::from("/"));
    }

    #[test]
    fn accepting_normalizes_the_path_in_the_arguments_and_the_input_alike() {
        use serde_json::json;
        let cwd = Path::new("/p");
        for (tool, args) in [
            (Tool::Read, json!({"file_path": "src/../a.rs", "limit": 3})),
            (Tool::Write, json!({"file_path": "a.rs", "content": "x"})),
            (
                Tool::Edit,
                json!({"file_path": "./a.rs", "old_string": "x", "new_string": "y"}),
            ),
            (Tool::Glob, json!({"pattern": "*.rs", "path": "src"})),
            (Tool::Grep, json!({"pattern": "x", "path": "src/.."})),
            (Tool::Glob, json!({"pattern": "*.rs"})),
            (Tool::Bash, json!({"command": "ls"})),
        ] {
            let accepted = tool.accept(&args, cwd).unwrap();
            let mut typed = ToolInput::parse(tool, &args).unwrap();
            typed.normalize(cwd);
            assert_eq!(accepted.input, typed, "{args}");
            assert_eq!(
                accepted.input,
                ToolInput::parse(tool, &accepted.arguments).unwrap(),
                "{args}"
            );
        }
        let read = Tool::Read
            .accept(&json!({"file_path": "a.rs"}), cwd)
            .unwrap();
        assert_eq!(read.arguments, json!({"file_path": "/p/a.rs"}));
        // Checked as written: an empty path is refused, not taken for the
        // working directory.
        assert!(Tool::Read.accept(&json!({"file_path": ""}), cwd).is_err());
    }

    #[test]
    fn names_are_exact() {
        assert_eq!(Tool::from_name("Bash"), Some(Tool::Bash));
        assert_eq!(Tool::from_name("bash"), None);
        for tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool));
            assert_eq!(tool.spec().name, tool.name());
        }
    }
}
