//! What a session does with its MCP servers around a prompt: waits for
//! those still starting ([`ready`]), tells the user of those that failed
//! ([`report`]), expands an MCP prompt command and attaches the resources a
//! prompt links ([`expand`]), and offers the servers' prompts as commands
//! ([`offered`]).

use agent_client_protocol_schema::v1::ContentBlock;
use serde_json::{Map, Value};

use super::commit::Committer;
use super::kit::{SessionKit, TurnControl, TurnError};
use crate::event_log::{Event, NoticeLevel, OfferedCommand, TurnStop};

/// Most characters of an expansion or an attached resource the model is
/// given (the rest is cut, and the text says so).
const MAX_TEXT: usize = 100_000;

/// Waits for the session's MCP servers still starting (up to the
/// configured bound), and tells the user of any that did not start, stopped
/// or are not ready in time. `false`: cancelled while waiting.
async fn ready(
    c: &mut Committer,
    kit: &SessionKit,
    control: &TurnControl,
) -> Result<bool, TurnError> {
    if kit.mcp.is_empty() {
        return Ok(true);
    }
    let waiting = kit
        .mcp
        .wait_ready(kit.config.mcp_startup_wait(), &control.cancel)
        .await;
    if control.cancel.is_cancelled() {
        return Ok(false);
    }
    report(c, kit)?;
    for name in waiting {
        c.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text: format!(
                "The MCP server {name} is still starting; this prompt goes on without its tools (/mcp shows its state)"
            ),
        })?;
    }
    Ok(true)
}

/// Tells the user of MCP servers that failed or stopped since last told,
/// and of questions a server asked outside its calls.
pub(crate) fn report(c: &mut Committer, kit: &SessionKit) -> Result<(), TurnError> {
    for (name, why) in kit.mcp.take_failures() {
        c.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text: format!("The MCP server {name} {why} (/mcp shows its state)"),
        })?;
    }
    for text in kit.mcp.take_notices() {
        c.commit(Event::Notice {
            level: NoticeLevel::Warning,
            text,
        })?;
    }
    Ok(())
}

/// The URIs of the resources a prompt links that are not files (files are
/// `session::attach`'s).
pub(crate) fn resource_links(prompt: &[ContentBlock]) -> Vec<String> {
    prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ResourceLink(link) if !link.uri.starts_with("file:") => {
                Some(link.uri.clone())
            }
            _ => None,
        })
        .collect()
}

/// Before a prompt's first model request: waits for the servers
/// ([`ready`]), then expands an MCP prompt command and attaches linked
/// resources ([`expand`]). `Some`: how the turn ends instead.
pub(crate) async fn prepare(
    c: &mut Committer,
    kit: &SessionKit,
    typed: &str,
    links: &[String],
    control: &TurnControl,
) -> Result<Option<TurnStop>, TurnError> {
    if !ready(c, kit, control).await? {
        return Ok(Some(TurnStop::Cancelled));
    }
    expand(c, kit, typed, links, control).await
}

/// An MCP prompt command (`/mcp__<server>__<prompt> args`) expanded through
/// its server, and the linked resources read from the servers that list
/// them; each recorded, so the model's history, the replay and the audit
/// agree on what the model was given.
async fn expand(
    c: &mut Committer,
    kit: &SessionKit,
    typed: &str,
    links: &[String],
    control: &TurnControl,
) -> Result<Option<TurnStop>, TurnError> {
    if let Some(stop) = expand_command(c, kit, typed, control).await? {
        return Ok(Some(stop));
    }
    for uri in links {
        let Some(server) = kit.mcp.resource_server(uri, &control.cancel).await else {
            continue;
        };
        match kit.mcp.read_resource(&server, uri, &control.cancel).await {
            Ok(text) => c.commit(Event::PromptResource {
                uri: uri.clone(),
                server: Some(server),
                path: None,
                text: capped(text),
                image: None,
            })?,
            Err(_) if control.cancel.is_cancelled() => {
                return Ok(Some(TurnStop::Cancelled));
            }
            Err(why) => c.commit(Event::Notice {
                level: NoticeLevel::Warning,
                text: format!("{uri} could not be read from the MCP server {server}: {why}"),
            })?,
        }
    }
    Ok(None)
}

/// `text`, or its first [`MAX_TEXT`] characters and a line saying the rest
/// was cut.
pub(crate) fn capped(text: String) -> String {
    if text.chars().count() <= MAX_TEXT {
        text
    } else {
        format!(
            "{}\n[candor] The rest was cut: it was over {MAX_TEXT} characters.",
            crate::text::shorten(&text, MAX_TEXT)
        )
    }
}

/// [`expand`] for the command: `None` when the turn goes on.
async fn expand_command(
    c: &mut Committer,
    kit: &SessionKit,
    typed: &str,
    control: &TurnControl,
) -> Result<Option<TurnStop>, TurnError> {
    let Some(rest) = typed.trim_start().strip_prefix('/') else {
        return Ok(None);
    };
    let (word, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let Some(prompt) = kit.mcp.prompts().into_iter().find(|p| p.command == word) else {
        return Ok(None);
    };
    let arguments = arguments(&prompt.arguments, args.trim());
    match kit
        .mcp
        .get_prompt(&prompt.server, &prompt.prompt, arguments, &control.cancel)
        .await
    {
        Ok(text) => {
            c.commit(Event::PromptExpanded {
                command: prompt.command,
                server: Some(prompt.server),
                source: None,
                path: None,
                text: capped(text),
                ignored: Vec::new(),
            })?;
            Ok(None)
        }
        Err(_) if control.cancel.is_cancelled() => Ok(Some(TurnStop::Cancelled)),
        Err(why) => {
            c.commit(Event::PromptBlocked {
                hook: format!("mcp:{}", prompt.server),
                reason: format!("/{} could not be expanded: {why}", prompt.command),
            })?;
            Ok(Some(TurnStop::EndTurn))
        }
    }
}

/// The words after the command, one per argument in order; the last
/// argument takes the rest of the line.
fn arguments(names: &[String], args: &str) -> Map<String, Value> {
    let mut out = Map::new();
    if names.is_empty() || args.is_empty() {
        return out;
    }
    let mut words = args.splitn(names.len(), char::is_whitespace);
    for name in names {
        if let Some(word) = words.next().map(str::trim).filter(|w| !w.is_empty()) {
            out.insert(name.clone(), Value::String(word.to_owned()));
        }
    }
    out
}

/// The commands the servers' prompts are, for `available_commands_update`.
pub(crate) fn offered(kit: &SessionKit) -> Vec<OfferedCommand> {
    kit.mcp
        .prompts()
        .into_iter()
        .map(|p| OfferedCommand {
            name: p.command,
            description: if p.description.is_empty() {
                format!("The prompt {} of the MCP server {}", p.prompt, p.server)
            } else {
                format!("{} (MCP server {})", p.description, p.server)
            },
            hint: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_fill_the_arguments_in_order_and_the_last_takes_the_rest() {
        let names = vec!["who".to_owned(), "how".to_owned()];
        let args = arguments(&names, "Ann  very warmly please");
        assert_eq!(args["who"], "Ann");
        assert_eq!(args["how"], "very warmly please");
        assert!(arguments(&names, "").is_empty());
        assert_eq!(arguments(&names[..1], "Ann Lee")["who"], "Ann Lee");
    }
}
