//! candor's own slash commands, answered without the model: `/hooks` (the
//! hooks, rules and mode in force) and `/audit` (this session's calls, as
//! `candor audit` prints them).

use std::fmt::Write as _;
use std::path::Path;

use super::context::Gate;
use crate::event_log::{OfferedCommand, Record};

/// The commands every session offers.
pub(crate) fn offered() -> Vec<OfferedCommand> {
    vec![
        OfferedCommand {
            name: "hooks".into(),
            description: "List the active hooks, with the settings file each comes from, and the permission rules and mode".into(),
        },
        OfferedCommand {
            name: "doctor".into(),
            description: "Show what this session loaded and why: the model and its key, each settings file, hooks with their matchers, rules, mode and project trust".into(),
        },
        OfferedCommand {
            name: "audit".into(),
            description: "Show this session's tool calls: decisions, deciding hooks, original and effective arguments, how each ended".into(),
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
        _ => None,
    }
}

/// The answer to a command.
pub(crate) fn run(command: &str, gate: &Gate, records: &[Record], cwd: &Path) -> String {
    match command {
        "hooks" => hooks(gate),
        "doctor" => {
            let report = crate::doctor::report(&gate.config, cwd);
            format!("```text\n{}```\n", crate::doctor::render(&report))
        }
        _ => {
            let text = crate::audit::render(&crate::audit::timeline(records));
            if text.trim().is_empty() {
                "Nothing has happened in this session yet.".into()
            } else {
                format!("```text\n{text}```\n")
            }
        }
    }
}

fn hooks(gate: &Gate) -> String {
    let policy = &gate.policy;
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
        rules(&gate.grants),
        policy.mode.id()
    );
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
