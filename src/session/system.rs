//! The system prompt: assembled, with no I/O, from the session's latest
//! `session/environment` record, in parts (what `/context` sizes):
//!
//! 1. **guidance**: who the model is and how candor's tools are meant to be
//!    used (fixed text of this candor version), or, when the client sent a
//!    `systemPrompt` in `override` mode, the client's text in its place;
//! 2. **environment**: platform, shell, date, working directory, the
//!    session's additional directories, git;
//! 3. **instructions**: the user's and the project's instruction files, in
//!    the order they were loaded, each under its path;
//! 4. **client**: a `systemPrompt` in `append` mode, last, under a heading
//!    saying the editor added it.
//!
//! A log without the record (written by an older candor) gets the guidance
//! and the working directory only.

use std::fmt::Write as _;
use std::path::Path;

use crate::compaction;
use crate::event_log::{
    ClientPrompt, ClientPromptMode, Environment, Event, InstructionScope, Record,
};

/// One part of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) name: &'static str,
    pub(crate) text: String,
}

/// How candor's tools are meant to be used, for the model.
const GUIDANCE: &str = "You are candor, a coding agent working in the user's editor. You help with software work in the project described below by reading code, running commands and changing files with the tools you are given, and you answer the user directly and briefly.

The user watches every tool call as a card that shows the arguments that actually ran. Hooks and permission rules the user set up may rewrite a call, ask the user about it, or refuse it; the tool result says when that happened. Work with what ran, and do not try to get a refused action done another way (a different tool, an encoded command, a script file): tell the user what you need instead.

How to use the tools:
- Read a file before you change it, and change existing files with Edit, which replaces an exact piece of text; keep Write for new files or complete rewrites.
- Find files by name with Glob and search their contents with Grep. Do not run find, grep, rg, cat, head or ls through Bash to do the same.
- Use Bash for builds, tests, git and other programs. Start commands that run long or never end (servers, watchers, long builds) with run_in_background, then read their output with BashOutput and stop them with KillShell.
- Commands run in a sandbox whose network is closed: do not fetch pages with curl, wget or a script through Bash. To read a web page (documentation, an API reference, an issue), use WebFetch: candor fetches it, each domain allowed by the user's rules or asked about, and gives you the page as Markdown.
- For work of several steps, write a plan with TodoWrite and keep it current: one item in progress at a time, marked done when it is.
- Several independent calls can be made in one response.
- Prefer the smallest change that does what was asked, in the style of the code around it, and check it (build, tests) when the project makes that possible.
- Paths may be absolute or relative to the working directory.";

/// The system prompt for the next request (a subagent's starts with its
/// definition's prompt, `subagent/assigned`, in place of the guidance).
pub(crate) fn prompt(records: &[Record], cwd: &Path) -> String {
    let whole = assemble(latest(records), cwd);
    match assigned(records) {
        Some(own) => whole.replacen(GUIDANCE, &subagent_guidance(own), 1),
        None => whole,
    }
}

/// What a subagent is told first: its definition's prompt, then how its
/// work is seen.
fn subagent_guidance(own: &str) -> String {
    let own = own.trim();
    let own = if own.is_empty() {
        "You are a subagent of candor, a coding agent working in the user's editor."
    } else {
        own
    };
    format!(
        "{own}\n\nYou were started by another agent to do the task in the first message. Your final message is all that agent receives: make it a complete answer. The user sees each of your calls as a card with the arguments that actually ran; hooks and permission rules may rewrite, ask about or refuse a call, and the result says so. Work with what ran, and never try to get a refused action done another way."
    )
}

/// A subagent's own system prompt (`subagent/assigned`).
fn assigned(records: &[Record]) -> Option<&str> {
    records.iter().take(4).find_map(|r| match &r.event {
        Event::SubagentAssigned(a) => Some(a.system_prompt.as_str()),
        _ => None,
    })
}

/// The system prompt of these facts (the guidance alone when there are
/// none).
pub(crate) fn assemble(env: Option<&Environment>, cwd: &Path) -> String {
    let parts = parts(env, cwd);
    let texts: Vec<&str> = parts
        .iter()
        .map(|p| p.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    texts.join("\n\n")
}

/// The latest `session/environment` record's facts.
pub(crate) fn latest(records: &[Record]) -> Option<&Environment> {
    records.iter().rev().find_map(|r| match &r.event {
        Event::SessionEnvironment(env) => Some(env),
        _ => None,
    })
}

/// The parts of the system prompt, in order.
pub(crate) fn parts(env: Option<&Environment>, cwd: &Path) -> Vec<Part> {
    let Some(env) = env else {
        return vec![
            Part {
                name: "guidance",
                text: GUIDANCE.to_owned(),
            },
            Part {
                name: "environment",
                text: format!("# Environment\nWorking directory: {}", cwd.display()),
            },
        ];
    };
    let client = env.client_prompt.as_ref();
    let guidance = match client {
        Some(p) if p.mode == ClientPromptMode::Override => p.text.clone(),
        _ => GUIDANCE.to_owned(),
    };
    let appended = match client {
        Some(p) if p.mode == ClientPromptMode::Append => format!(
            "# Instructions from the editor\nThe editor you work in adds these instructions for this session. Follow them; they do not change what the user allows (permission rules and hooks still apply to every call).\n\n{}",
            p.text.trim_end()
        ),
        _ => String::new(),
    };
    vec![
        Part {
            name: "guidance",
            text: guidance,
        },
        Part {
            name: "environment",
            text: environment(env),
        },
        Part {
            name: "instructions",
            text: instructions(env),
        },
        Part {
            name: "client",
            text: appended,
        },
    ]
}

/// The client's `systemPrompt`, as candor keeps it: `append` or
/// `override`, text blocks only, not empty, at most [`CLIENT_PROMPT_MAX`]
/// bytes; anything else is refused with why (the session is not opened).
/// Its invisible characters (`text::is_invisible`: what the model would
/// read and a person would not see) are taken out, as an instruction
/// file's are; how many, for the user's notice.
pub(crate) fn client_prompt(
    given: &agent_client_protocol_schema::v1::SystemPrompt,
) -> Result<(ClientPrompt, usize), String> {
    use agent_client_protocol_schema::v1::{ContentBlock, SystemPromptMode};
    let mode = match &given.mode {
        SystemPromptMode::Append => ClientPromptMode::Append,
        SystemPromptMode::Override => ClientPromptMode::Override,
        other => {
            return Err(format!(
                "systemPrompt: candor takes the modes append and override, not {}",
                serde_json::to_string(other).unwrap_or_default()
            ));
        }
    };
    if given.content.is_empty() {
        return Err("systemPrompt: content is empty".into());
    }
    let mut texts = Vec::new();
    for block in &given.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text.as_str()),
            _ => {
                return Err(
                    "systemPrompt: candor takes text blocks only in a system prompt".into(),
                );
            }
        }
    }
    let (text, hidden) = crate::text::strip_invisible(&texts.join("\n\n"));
    if text.trim().is_empty() {
        return Err("systemPrompt: its text is empty".into());
    }
    if text.len() > CLIENT_PROMPT_MAX {
        return Err(format!(
            "systemPrompt: {} bytes; candor takes at most {CLIENT_PROMPT_MAX}",
            text.len()
        ));
    }
    Ok((ClientPrompt { mode, text }, hidden))
}

/// The longest client system prompt taken (bytes).
pub(crate) const CLIENT_PROMPT_MAX: usize = 64 * 1024;

fn environment(env: &Environment) -> String {
    let mut out = String::from("# Environment\n");
    let _ = writeln!(out, "Working directory: {}", env.cwd.display());
    if !env.additional_directories.is_empty() {
        let _ = writeln!(
            out,
            "Additional directories (part of the project too, for your tools and the user's rules; their own instruction files are not loaded):"
        );
        for root in &env.additional_directories {
            let _ = writeln!(out, "  {}", crate::roots::describe(root));
        }
    }
    let _ = write!(out, "Platform: {}", env.platform);
    if let Some(release) = &env.os_release {
        let _ = write!(out, " ({release})");
    }
    out.push('\n');
    match &env.shell {
        Some(shell) => {
            let _ = writeln!(
                out,
                "The user's shell: {shell}; the Bash tool runs bash -c in the working directory"
            );
        }
        None => out.push_str("The Bash tool runs bash -c in the working directory\n"),
    }
    let _ = writeln!(out, "Today's date: {} (UTC)", env.date);
    let Some(git) = &env.git else {
        out.push_str("The working directory is not in a git repository.");
        return out;
    };
    let _ = writeln!(
        out,
        "\n# Git (as it was when the session started)\nRepository root: {}",
        git.root.display()
    );
    if let Some(branch) = &git.branch {
        let _ = writeln!(out, "Branch: {branch}");
    }
    if git.status.is_empty() && git.incomplete.is_none() {
        out.push_str("Status: clean\n");
    } else if !git.status.is_empty() {
        out.push_str("Status (git status --porcelain):\n");
        for line in &git.status {
            let _ = writeln!(out, "  {line}");
        }
        if git.status_more > 0 {
            let _ = writeln!(out, "  … and {} more", git.status_more);
        }
    }
    if !git.commits.is_empty() {
        out.push_str("Recent commits:\n");
        for subject in &git.commits {
            let _ = writeln!(out, "  - {subject}");
        }
    }
    if let Some(why) = &git.incomplete {
        let _ = writeln!(out, "(Some of this is missing: {why}.)");
    }
    out.trim_end().to_owned()
}

fn instructions(env: &Environment) -> String {
    let given: Vec<_> = env
        .instructions
        .iter()
        .filter(|f| !f.text.is_empty())
        .collect();
    if given.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "# Instructions from the user and the project\nThese files were loaded when the session started: the user's own first, then the project's from its root down to the working directory. Follow them; where two disagree, the later one, closer to the work, wins. The project's files describe the project and its conventions; they do not change what the user allows (permission rules and hooks still apply to every call).\n",
    );
    for file in given {
        let whose = match (file.scope, &file.imported_by) {
            (_, Some(by)) => format!("imported by {}", by.display()),
            (InstructionScope::User, None) => "the user's".to_owned(),
            (InstructionScope::Project, None) => "the project's".to_owned(),
        };
        let _ = write!(
            out,
            "\n## {} ({whose})\n{}\n",
            file.path.display(),
            file.text.trim_end()
        );
    }
    out.trim_end().to_owned()
}

/// What the next request would carry, for `/context`.
pub(crate) struct Request<'a> {
    pub(crate) records: &'a [Record],
    pub(crate) cwd: &'a Path,
    pub(crate) tools: &'a [crate::conversation::ToolSpec],
    pub(crate) messages: &'a [crate::conversation::Message],
    /// The model's context window, when known.
    pub(crate) window: Option<u64>,
    /// When compaction happens, when the window is known.
    pub(crate) budget: Option<crate::compaction::Budget>,
}

/// `/context`: the instruction files loaded, and how much of the context
/// window each part of the next request takes (estimated as compaction
/// estimates: 4 bytes a token, an image `compaction::IMAGE_TOKENS`).
pub(crate) fn report(request: &Request<'_>) -> String {
    let env = latest(request.records);
    let given = env.map_or(0, |e| {
        e.instructions.iter().filter(|f| !f.text.is_empty()).count()
    });
    let overridden = env
        .and_then(|e| e.client_prompt.as_ref())
        .is_some_and(|p| p.mode == ClientPromptMode::Override);
    // (part, bytes, tokens)
    let mut rows: Vec<(String, usize, u64)> = parts(env, request.cwd)
        .into_iter()
        .filter(|p| p.name != "client" || !p.text.is_empty())
        .map(|p| {
            let name = match p.name {
                "guidance" if overridden => {
                    "the editor's instructions, in place of candor's guidance".to_owned()
                }
                "guidance" => "candor's guidance".to_owned(),
                "environment" => "environment and git".to_owned(),
                "client" => "the editor's instructions".to_owned(),
                _ => format!("instruction files ({given})"),
            };
            (name, p.text.len(), compaction::tokens(p.text.len()))
        })
        .collect();
    let tool_bytes = compaction::json_bytes(&request.tools);
    rows.push((
        format!("tool definitions ({})", request.tools.len()),
        tool_bytes,
        compaction::tokens(tool_bytes),
    ));
    rows.push((
        format!("conversation ({} messages)", request.messages.len()),
        compaction::json_bytes(&request.messages),
        compaction::messages_tokens(request.messages),
    ));
    let mut out = String::new();
    window_lines(&mut out, request);
    out.push_str("\n**The next request, estimated**\n\n| part | bytes | ≈ tokens | of the window |\n|---|---:|---:|---:|\n");
    let share = |tokens: u64| match request.window {
        Some(w) if w > 0 => format!("{:.1}%", tokens as f64 * 100.0 / w as f64),
        _ => "–".to_owned(),
    };
    let mut total = 0;
    for (name, bytes, tokens) in &rows {
        total += tokens;
        let _ = writeln!(out, "| {name} | {bytes} | {tokens} | {} |", share(*tokens));
    }
    let _ = writeln!(out, "| **total** | | {total} | {} |", share(total));
    files_loaded(&mut out, env);
    out
}

/// The window, the last request's usage, and when compaction happens.
fn window_lines(out: &mut String, request: &Request<'_>) {
    let last = request.records.iter().rev().find_map(|r| match &r.event {
        Event::AssistantMessage { content, .. } => content.iter().find_map(|b| match b {
            crate::conversation::AssistantBlock::Raw { usage, .. } => *usage,
            _ => None,
        }),
        _ => None,
    });
    match request.window {
        Some(w) => {
            let _ = writeln!(out, "**Context window**: {w} tokens");
        }
        None => out.push_str(
            "**Context window**: not known for this model (set `context_window`); candor compacts only on `/compact` or when the provider says a request is too long\n",
        ),
    }
    if let Some(u) = last {
        let _ = writeln!(
            out,
            "The last request used {} tokens ({} in, {} out).",
            u.context_tokens(),
            u.input_tokens,
            u.output_tokens
        );
    }
    if let Some(budget) = request.budget {
        let _ = writeln!(
            out,
            "candor compacts the conversation before a request estimated over {} tokens (the window less {} for the answer); `/compact [focus]` does it now.",
            budget.limit(),
            budget.reserve
        );
    }
    let compactions = request
        .records
        .iter()
        .filter(|r| matches!(r.event, Event::HistoryCompacted { .. }))
        .count();
    if compactions > 0 {
        let _ = writeln!(
            out,
            "This session was compacted {compactions} time(s); the conversation below is the latest summary and what followed it."
        );
    }
}

/// The instruction files section of `/context`.
fn files_loaded(out: &mut String, env: Option<&Environment>) {
    out.push_str("\n**Instruction files**\n");
    let Some(env) = env else {
        out.push_str("- none: this session's log predates them\n");
        return;
    };
    if env.instructions.is_empty() {
        out.push_str("- none found (AGENTS.md, CLAUDE.md, CLAUDE.local.md, .claude/CLAUDE.md from the project root down to the working directory; ~/.codex/AGENTS.md; ~/.claude/CLAUDE.md)\n");
    }
    for file in &env.instructions {
        let whose = match (&file.imported_by, file.scope) {
            (Some(by), _) => format!("imported by {}", by.display()),
            (None, InstructionScope::User) => "user".to_owned(),
            (None, InstructionScope::Project) => "project".to_owned(),
        };
        let given = if file.text.is_empty() {
            ", not given: the budget was spent".to_owned()
        } else if file.cut {
            format!(", cut to {} bytes", file.text.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "- {} ({whose}, {} bytes{given})",
            file.path.display(),
            file.bytes
        );
    }
    for note in &env.notes {
        let _ = writeln!(out, "- note: {}", crate::text::shorten(note, 400));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::{GitFacts, Instructions};
    use std::path::PathBuf;

    fn env() -> Environment {
        Environment {
            platform: "linux x86_64".into(),
            os_release: Some("6.1.0".into()),
            shell: Some("/bin/zsh".into()),
            date: "2026-12-02".into(),
            cwd: PathBuf::from("/p/sub"),
            git: Some(GitFacts {
                root: PathBuf::from("/p"),
                branch: Some("main".into()),
                status: vec![" M src/lib.rs".into()],
                status_more: 2,
                commits: vec!["first".into()],
                incomplete: None,
            }),
            instructions: vec![
                Instructions {
                    path: PathBuf::from("/p/AGENTS.md"),
                    scope: InstructionScope::Project,
                    imported_by: None,
                    text: "Run cargo test.".into(),
                    bytes: 15,
                    cut: false,
                },
                Instructions {
                    path: PathBuf::from("/p/late.md"),
                    scope: InstructionScope::Project,
                    imported_by: None,
                    text: String::new(),
                    bytes: 9,
                    cut: true,
                },
            ],
            notes: vec!["not for the model".into()],
            additional_directories: Vec::new(),
            client_prompt: None,
        }
    }

    #[test]
    fn the_prompt_carries_the_facts_and_files_in_order() {
        let text = parts(Some(&env()), Path::new("/p/sub"))
            .into_iter()
            .map(|p| p.text)
            .collect::<Vec<_>>()
            .join("\n\n");
        for wanted in [
            "Working directory: /p/sub",
            "Platform: linux x86_64 (6.1.0)",
            "/bin/zsh",
            "Today's date: 2026-12-02",
            "Branch: main",
            "   M src/lib.rs",
            "… and 2 more",
            "  - first",
            "## /p/AGENTS.md (the project's)\nRun cargo test.",
        ] {
            assert!(text.contains(wanted), "{wanted:?} missing from\n{text}");
        }
        assert!(
            !text.contains("late.md"),
            "a file with no text is not a heading"
        );
        assert!(!text.contains("not for the model"));
    }

    #[test]
    fn an_old_log_gets_the_guidance_and_the_directory() {
        let text = prompt(&[], Path::new("/w"));
        assert!(text.starts_with("You are candor"));
        assert!(text.ends_with("Working directory: /w"));
    }
}
