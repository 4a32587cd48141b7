//! candor's own slash commands, answered without the model: `/hooks` (the
//! hooks, rules and mode in force), `/doctor`, `/mcp`, `/context` (the
//! instruction files and the size of each part of the next request) and
//! `/audit` (this session's calls, as `candor audit` prints them).
//! `/compact` is parsed here and run by `session::compact` (it asks the
//! model for a summary, and nothing else); `/trust` is parsed here and run
//! by `session::trust`; `/sandbox` is parsed here and run by
//! `session::sandbox`. `/hooks`, `/context` and `/doctor` also say what of
//! the project's settings waits for trust, and why.

use std::fmt::Write as _;
use std::path::Path;

use super::kit::SessionKit;
use crate::event_log::OfferedCommand;

/// The commands every session offers.
pub(crate) fn offered() -> Vec<OfferedCommand> {
    vec![
        OfferedCommand {
            name: "hooks".into(),
            description: "List the active hooks, with the settings file each comes from, and the permission rules and mode".into(),
            hint: None,
        },
        OfferedCommand {
            name: "doctor".into(),
            description: "Show what this session loaded and why: the model and its key, each settings file, hooks with their matchers, rules, mode and project trust".into(),
            hint: None,
        },
        OfferedCommand {
            name: "mcp".into(),
            description: "Show the MCP servers: where each comes from, its state, its tools and the end of its stderr".into(),
            hint: None,
        },
        OfferedCommand {
            name: "context".into(),
            description: "Show the instruction files loaded and how much of the context window each part of the next request takes".into(),
            hint: None,
        },
        OfferedCommand {
            name: "compact".into(),
            description: "Replace the older part of the conversation, for the model, by a summary it writes now (what follows /compact says what to focus on); the conversation here stays as it is".into(),
            hint: Some("[focus]".into()),
        },
        OfferedCommand {
            name: "trust".into(),
            description: "Trust this project's own settings (its hooks, allow rules and mode) for this session; `/trust always` remembers it until they change".into(),
            hint: Some("[always]".into()),
        },
        OfferedCommand {
            name: "sandbox".into(),
            description: "Show what commands run in (writable roots, network, what this kernel holds); `/sandbox off`, `on`, `read-only` or `network on|off|allowlist` changes it for this session".into(),
            hint: Some("[off|on|read-only|network on|network off|network allowlist]".into()),
        },
        OfferedCommand {
            name: "audit".into(),
            description: "Show this session's tool calls: decisions, deciding hooks, original and effective arguments, how each ended".into(),
            hint: None,
        },
    ]
}

/// The command a prompt is, if it is one of candor's (`/hooks`, `/audit`).
pub(crate) fn parse(prompt: &str) -> Option<&'static str> {
    let word = prompt.split_whitespace().next()?;
    match word {
        "/hooks" => Some("hooks"),
        "/audit" => Some("audit"),
        "/doctor" => Some("doctor"),
        "/mcp" => Some("mcp"),
        "/context" => Some("context"),
        "/compact" => Some("compact"),
        "/trust" => Some("trust"),
        "/sandbox" => Some("sandbox"),
        _ => None,
    }
}

/// The answer to a command.
pub(crate) fn run(
    command: &str,
    kit: &SessionKit,
    provider: &crate::providers::Provider,
    c: &mut super::commit::Committer,
    cwd: &Path,
) -> String {
    let records = c.records();
    match command {
        "hooks" => hooks(kit),
        "mcp" => mcp(kit),
        "context" => {
            let messages = c.request_history(provider.rewrite_strategy());
            let mut out = super::system::report(&super::system::Request {
                records: c.records(),
                cwd,
                tools: &crate::tools::specs(&kit.mcp.tools()),
                messages: &messages,
                window: provider.context_window(),
                budget: provider.budget(),
            });
            let _ = write!(
                out,
                "\n\n**Cost so far**: {}",
                crate::providers::prices::Total::of(c.records()).describe()
            );
            if let Some(withheld) = super::trust::withheld(&kit.trust) {
                out.push_str("\n\n");
                out.push_str(&withheld);
            }
            out
        }
        _ => {
            let mut entries = crate::audit::timeline(records);
            if let Some(dir) = c.log_path().parent() {
                crate::audit::with_subagents(&mut entries, dir);
            }
            let text = crate::audit::render(&entries);
            if text.trim().is_empty() {
                "Nothing has happened in this session yet.".into()
            } else {
                format!("```text\n{text}```\n")
            }
        }
    }
}

/// `/doctor`: the report for the session's directory, with what its
/// commands run in (its sandbox, the user's `/sandbox` choices included)
/// on this kernel (`kernel`).
pub(crate) fn doctor(
    kit: &SessionKit,
    records: &[crate::event_log::Record],
    cwd: &Path,
    kernel: &crate::sandbox::Probe,
) -> String {
    let session = match &kit.trust {
        super::kit::Trust::Trusted { by, offer, .. } => Some((offer.digest.as_str(), by.as_str())),
        _ => None,
    };
    // The session's own additional directories, as recorded.
    let roots = super::system::latest(records)
        .map(|e| e.additional_directories.clone())
        .unwrap_or_default();
    let sandbox = super::sandbox::for_calls(kit, records);
    let report =
        crate::doctor::report_in(&kit.config, cwd, session, &roots, kernel, Some(&sandbox));
    format!("```text\n{}```\n", crate::doctor::render(&report))
}

/// `/mcp`: each server, where its entry came from, its state, its tools
/// and the end of its stderr; then the entries a stronger source shadowed.
fn mcp(kit: &SessionKit) -> String {
    use crate::tools::mcp::State;
    let servers = kit.mcp.status();
    let mut out = String::new();
    if servers.is_empty() {
        out.push_str("No MCP servers: the editor gave none, and no Claude Code or Codex configuration (nor a trusted project's `.mcp.json`) names one.\n");
    }
    let tools = kit.mcp.tools();
    for s in &servers {
        let state = match &s.state {
            State::Starting => "starting".to_owned(),
            State::Ready => match s.ready_after {
                Some(d) => format!("ready (in {} ms)", d.as_millis()),
                None => "ready".to_owned(),
            },
            State::Failed(why) => format!("failed: {why}"),
            State::Exited(why) => format!("stopped: {why}"),
        };
        let _ = writeln!(out, "**{}**: {state}", s.name);
        let _ = writeln!(out, "- from {}", s.source);
        let _ = writeln!(out, "- {}", s.transport);
        // Those that run without asking where reads do say so.
        let names: Vec<String> = tools
            .iter()
            .filter(|t| t.server == s.name)
            .map(|t| {
                if t.reading.runs_unasked() {
                    format!("{} (runs unasked: read-only, closed-world)", t.exposed)
                } else {
                    t.exposed.clone()
                }
            })
            .collect();
        if !names.is_empty() {
            let _ = writeln!(out, "- tools: {}", names.join(", "));
        }
        if !s.stderr_tail.is_empty() {
            let lines: Vec<&str> = s.stderr_tail.lines().collect();
            let last = &lines[lines.len().saturating_sub(10)..];
            // Indented, not fenced: a server cannot close a fence.
            let _ = writeln!(out, "- stderr (its end):");
            for line in last {
                let _ = writeln!(out, "      {}", crate::text::shorten(line, 300));
            }
        }
        out.push('\n');
    }
    for (name, source, won) in kit.mcp.shadowed_entries() {
        let _ = writeln!(
            out,
            "- not used: {name} from {source} (the entry from {won} wins)"
        );
    }
    out
}

fn hooks(kit: &SessionKit) -> String {
    let policy = &kit.policy;
    let mut out = String::new();
    let mut section = |title: &str, items: Vec<String>| {
        let _ = writeln!(out, "**{title}**");
        if items.is_empty() {
            let _ = writeln!(out, "- none");
        }
        for (i, item) in items.iter().enumerate() {
            let _ = writeln!(out, "{}. {item}", i + 1);
        }
        out.push('\n');
    };
    section(
        "PreToolUse hooks (in the order they fold)",
        policy.hooks.iter().map(|h| h.id().to_owned()).collect(),
    );
    section(
        "PostToolUse hooks",
        policy
            .post_hooks
            .iter()
            .map(|h| h.id().to_owned())
            .collect(),
    );
    section(
        "Session event hooks",
        policy
            .event_hooks
            .iter()
            .map(|h| format!("{}: {}", h.event().name(), h.id()))
            .collect(),
    );
    let rules = |rules: &[crate::interception::policy::Rule]| -> String {
        if rules.is_empty() {
            "none".into()
        } else {
            rules
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let _ = writeln!(
        out,
        "**Permission rules**\n- deny: {}\n- ask: {}\n- allow: {}\n- granted this session: {}\n\n**Mode**: {}",
        rules(&policy.rules.deny),
        rules(&policy.rules.ask),
        rules(&policy.rules.allow),
        rules(&kit.grants),
        policy.mode.id()
    );
    if let Some(withheld) = super::trust::withheld(&kit.trust) {
        out.push_str("\n\n");
        out.push_str(&withheld);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_candors_commands_are_commands() {
        assert_eq!(parse("/hooks"), Some("hooks"));
        assert_eq!(parse("  /audit please"), Some("audit"));
        assert_eq!(parse("/hooksy"), None);
        assert_eq!(parse("show /hooks"), None);
        assert_eq!(parse(""), None);
    }
}
