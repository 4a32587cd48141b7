//! The user's own commands in a session (Claude Code's command files,
//! Codex's prompts; found and expanded by `bridges::command_files`): read when
//! the session opens and again before each prompt ([`refresh`]), offered
//! beside candor's commands and the MCP prompts ([`offered`]), and
//! expanded into the prompt the model is given ([`expand`]).

use std::path::Path;

use super::commit::Committer;
use super::kit::{SessionKit, TurnError};
use crate::bridges::command_files::{self, UserCommand};
use crate::event_log::{Event, NoticeLevel, OfferedCommand, TurnStop};

/// The names no command file may take: candor's own commands.
fn reserved() -> Vec<String> {
    super::builtin_commands::offered()
        .into_iter()
        .map(|c| c.name)
        .collect()
}

/// Reads the command files afresh into the kit, and tells the user of
/// problems not told at the last reading (`told`: those, replaced by this
/// reading's).
pub(crate) fn refresh(c: &mut Committer, kit: &mut SessionKit, cwd: &Path, told: &mut Vec<String>) {
    let scan = command_files::scan(&command_files::roots(&kit.config, cwd), &reserved());
    for problem in &scan.problems {
        if told.contains(problem) {
            continue;
        }
        if let Err(e) = c.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text: format!("A command file was skipped: {problem}"),
        }) {
            tracing::warn!(error = %e, "could not record a command file's problem");
        }
    }
    *told = scan.problems;
    kit.user_commands = scan.commands;
}

/// The command files, as offered (`available_commands_update`).
pub(crate) fn offered(commands: &[UserCommand]) -> Vec<OfferedCommand> {
    commands
        .iter()
        .map(|c| OfferedCommand {
            name: c.name.clone(),
            description: c.description.clone(),
            hint: c.hint.clone(),
        })
        .collect()
}

/// A prompt that invokes a command file (`/name args`): its expansion
/// recorded (`prompt/expanded`, what the model is given in place of what
/// was typed). One that cannot be expanded is answered with why
/// (`command/ran`) and the turn ends without the model (`Some`).
pub(crate) fn expand(
    c: &mut Committer,
    kit: &SessionKit,
    typed: &str,
) -> Result<Option<TurnStop>, TurnError> {
    let Some((command, args)) = command_files::invoked(typed, &kit.user_commands) else {
        return Ok(None);
    };
    match command_files::expand(command, args) {
        Ok(expansion) => {
            c.commit(Event::PromptExpanded {
                command: command.name.clone(),
                server: None,
                source: Some(command.source),
                path: Some(command.path.clone()),
                text: super::prompt_mcp::capped(expansion.text),
                ignored: expansion.ignored,
            })?;
            Ok(None)
        }
        Err(why) => {
            c.commit(Event::CommandRan {
                command: command.name.clone(),
                output: format!("{why} (nothing was sent to the model)"),
            })?;
            Ok(Some(TurnStop::EndTurn))
        }
    }
}
