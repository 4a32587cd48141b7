//! `candor demo`: a whole scripted session, seen the way an editor sees it.
//!
//! The demo makes a small project in a temporary directory, with Claude
//! Code settings of its own (`.claude/settings.json`: a PreToolUse hook
//! that wraps every command in `timeout 10s`, an allow rule for `ls`, a
//! deny rule for `rm -rf`), starts candor itself as a child process with
//! the scripted model (`protocol/examples/demo-script.json`) and no other
//! settings, and acts as a minimal ACP client: `initialize`,
//! `session/new`, then the prompts a user would type: `/trust` (the
//! project's own settings apply only once a person trusts them), then two
//! questions, answering candor's permission request as a user would
//! (allow once). It prints the
//! conversation as it streams and each tool card once it is final (the
//! rewritten command, with the original beside it), then the session's
//! audit trail (`candor audit`), read from the event log every frame was
//! derived from, and the `candor audit <id>` command that shows it again
//! (the log is kept in candor's state directory; the project and the rest
//! of what the demo made are removed).

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use crate::tools::exec::{self, ProcessGroup};

const SCRIPT: &str = include_str!("../protocol/examples/demo-script.json");

/// What the demo user types: trust the project's settings for the session
/// (candor never takes an editor's automatic answer for that), then two
/// questions.
const PROMPTS: [&str; 3] = ["/trust", "What is in this project?", "Try it out."];

/// Runs the demo, writing to `out`. Its session log goes where
/// `candor audit` looks (`state`, candor's state directory: `CANDOR_HOME`
/// or its default), so the command it prints works afterwards; everything
/// else it made (the project, the scripted model, an empty home) is in a
/// temporary directory removed when it ends.
pub async fn run(out: &mut dyn Write, state: &Path) -> io::Result<ExitCode> {
    let style = Style::new(io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let root = tempfile::Builder::new().prefix("candor-demo-").tempdir()?;
    make_project(root.path())?;
    let result = run_in(out, root.path(), state, style).await;
    root.close()?;
    result
}

async fn run_in(out: &mut dyn Write, root: &Path, home: &Path, s: Style) -> io::Result<ExitCode> {
    let cwd = root.join("greeter");
    let script = root.join("demo-script.json");
    std::fs::write(&script, SCRIPT)?;
    let exe = std::env::current_exe()?;
    let mut cmd = exec::agent(&exe, &[]);
    // Only the demo's own settings: not the user's Claude Code or Codex
    // hooks, nor their candor config.
    let user = root.join("user");
    cmd.env("CANDOR_PROVIDER", "scripted")
        .env("CANDOR_SCRIPT", &script)
        .env("CANDOR_HOME", home)
        .env("HOME", &user)
        .env("XDG_CONFIG_HOME", user.join(".config"))
        .env("CLAUDE_CONFIG_DIR", user.join(".claude"))
        .env("CODEX_HOME", user.join(".codex"))
        .env("CANDOR_CLAUDE_MANAGED_DIR", user.join("managed"))
        .env_remove("CANDOR_POLICY")
        .env_remove("CANDOR_MODEL")
        .env("RUST_LOG", "warn");
    let mut child = ProcessGroup::spawn(cmd)?;
    let (Some(stdin), Some(stdout)) = (
        child.child_mut().stdin.take(),
        child.child_mut().stdout.take(),
    ) else {
        return Err(io::Error::other(
            "could not talk to the candor child process",
        ));
    };
    let mut client = Client {
        stdin,
        stdout: BufReader::new(stdout).lines(),
        next_id: 0,
        cards: HashMap::new(),
        order: Vec::new(),
        in_text: None,
        column: 0,
        style: s,
    };

    writeln!(
        out,
        "{}",
        s.bold("candor demo · a scripted session, shown the way an editor sees it")
    )?;
    writeln!(out, "{}", s.dim(&format!("project {}", cwd.display())))?;
    writeln!(out)?;

    let init = client
        .request(out, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {"session": {"notices": {}}}, "clientInfo": {"name": "candor-demo", "version": env!("CARGO_PKG_VERSION")}}))
        .await?;
    writeln!(
        out,
        "{} {} {} · ACP v{}",
        s.dim("→ initialize "),
        init["agentInfo"]["name"].as_str().unwrap_or("?"),
        init["agentInfo"]["version"].as_str().unwrap_or("?"),
        init["protocolVersion"]
    )?;
    let session = client
        .request(out, "session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await?;
    let session_id = session["sessionId"].as_str().unwrap_or_default().to_owned();
    writeln!(out, "{} session {session_id}", s.dim("→ session/new"))?;

    for prompt in PROMPTS {
        writeln!(out)?;
        writeln!(out, "{} {prompt}", s.bold(&s.blue("you ▸")))?;
        let started = Instant::now();
        client.order.clear();
        let answer = client
            .request(
                out,
                "session/prompt",
                json!({"sessionId": session_id, "prompt": [{"type": "text", "text": prompt}]}),
            )
            .await?;
        client.end_text(out)?;
        writeln!(
            out,
            "{}",
            s.dim(&format!(
                "■ {} · {} tool call(s) · {:.1} s",
                answer["stopReason"].as_str().unwrap_or("?"),
                client.order.len(),
                started.elapsed().as_secs_f64()
            ))
        )?;
    }

    drop(client);
    let _ = child.child_mut().wait().await;
    let sessions = home.join("sessions");
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        s.bold("Everything above was derived from the session's event log.")
    )?;
    writeln!(out, "{}", s.bold("Its audit trail: what ran, and why:"))?;
    writeln!(out)?;
    let mut trail = Vec::new();
    crate::audit::run(&sessions, &session_id, false, &mut trail).map_err(io::Error::other)?;
    for line in String::from_utf8_lossy(&trail).lines() {
        writeln!(out, "{}", fit(line, 79))?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        s.dim("The session's log is kept; to see this trail again:")
    )?;
    writeln!(out, "  candor audit {session_id}")?;

    Ok(ExitCode::SUCCESS)
}

/// Writes the little project the demo works on, in `root`.
fn make_project(root: &Path) -> io::Result<()> {
    let cwd = root.join("greeter");
    std::fs::create_dir_all(&cwd)?;
    std::fs::write(
        cwd.join("README.md"),
        "# greeter\n\nPrints a friendly greeting.\n\n    bash greet.sh [NAME]     # Hello, NAME!\n    bash greet.sh --shout    # HELLO, WORLD!\n",
    )?;
    std::fs::write(
        cwd.join("greet.sh"),
        "#!/usr/bin/env bash\ncase \"$1\" in\n  --*) echo \"greet.sh: unknown option $1\" >&2; exit 2 ;;\nesac\necho \"Hello, ${1:-world}!\"\n",
    )?;
    std::fs::create_dir_all(cwd.join("build"))?;
    std::fs::write(cwd.join("build/greet.old"), "old build output\n")?;
    std::fs::create_dir_all(cwd.join(".claude/hooks"))?;
    std::fs::write(cwd.join(".claude/settings.json"), DEMO_SETTINGS)?;
    std::fs::write(cwd.join(".claude/hooks/timeout.sh"), DEMO_HOOK)?;
    Ok(())
}

/// The demo project's Claude Code settings.
const DEMO_SETTINGS: &str = r#"{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh .claude/hooks/timeout.sh"}]}
    ]
  },
  "permissions": {
    "allow": ["Bash(ls)", "Bash(ls *)"],
    "deny": ["Bash(rm -rf *)"]
  }
}
"#;

/// A Claude Code PreToolUse hook: every command runs under `timeout 10s`
/// (the command is taken from the compact JSON candor sends on stdin).
const DEMO_HOOK: &str = r#"#!/bin/sh
# Wraps every Bash command in `timeout 10s`, so nothing the agent runs hangs.
command=$(sed -n 's/.*"command":"\([^"]*\)".*/\1/p')
case "$command" in
  ""|"timeout "*) exit 0 ;;
esac
printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"timeout 10s %s"}}}\n' "$command"
"#;

/// What the demo remembers of a card until it is final.
struct Card {
    title: String,
    kind: String,
    statuses: Vec<String>,
    input: Value,
    /// What the model asked for, when a hook rewrote it, and who did.
    original: Option<(Value, String)>,
    output: String,
}

/// The original input and the rewriting hooks a card or prompt carries.
fn rewrite_of(call: &Value) -> Option<(Value, String)> {
    let meta = &call["_meta"]["candor"];
    let original = meta.get("originalInput")?.clone();
    let by = meta["rewrittenBy"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    Some((original, by))
}

struct Client {
    stdin: ChildStdin,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    next_id: u64,
    cards: HashMap<String, Card>,
    order: Vec<String>,
    /// Inside a streamed message: `Some(true)` for thoughts.
    in_text: Option<bool>,
    /// The column the streamed text has reached.
    column: usize,
    style: Style,
}

impl Client {
    /// Sends a request and prints every update until its response arrives.
    async fn request(
        &mut self,
        out: &mut dyn Write,
        method: &str,
        params: Value,
    ) -> io::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await?;
        loop {
            let Some(line) = self.stdout.next_line().await? else {
                return Err(io::Error::other("candor exited before answering"));
            };
            let frame: Value = serde_json::from_str(&line).map_err(|e| {
                io::Error::other(format!("candor sent a line that is not JSON ({e}): {line}"))
            })?;
            if frame.get("id") == Some(&json!(id)) && frame.get("method").is_none() {
                if let Some(error) = frame.get("error") {
                    return Err(io::Error::other(format!("{method} failed: {error}")));
                }
                return Ok(frame["result"].clone());
            }
            match (frame["method"].as_str(), frame.get("id")) {
                (Some("session/update"), None) => self.show(out, &frame["params"]["update"])?,
                (Some(method), Some(request)) => {
                    let line = match self.answer(out, method, &frame["params"])? {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": request, "result": result}),
                        Err(error) => json!({"jsonrpc": "2.0", "id": request, "error": error}),
                    }
                    .to_string();
                    self.stdin.write_all(line.as_bytes()).await?;
                    self.stdin.write_all(b"\n").await?;
                    self.stdin.flush().await?;
                }
                _ => {}
            }
        }
    }

    /// Answers a request from candor as the user in an editor would:
    /// `Ok(result)` or `Err(error object)`.
    fn answer(
        &mut self,
        out: &mut dyn Write,
        method: &str,
        params: &Value,
    ) -> io::Result<Result<Value, Value>> {
        let s = self.style;
        if method != "session/request_permission" {
            return Ok(Err(
                json!({"code": -32601, "message": "the demo client does not offer this"}),
            ));
        }
        self.end_text(out)?;
        let call = &params["toolCall"];
        let title = call["title"].as_str().unwrap_or("?");
        let options: Vec<&str> = params["options"]
            .as_array()
            .map(|o| o.iter().filter_map(|o| o["name"].as_str()).collect())
            .unwrap_or_default();
        writeln!(
            out,
            "  {} {}",
            s.bold(&s.blue("?")),
            s.bold(&fit(&format!("candor asks to run: {title}"), 74))
        )?;
        if let Some((original, by)) = rewrite_of(call) {
            let was = original["command"].as_str().unwrap_or("?");
            writeln!(
                out,
                "    {}",
                fit(&format!("the model asked for: {was}"), 74)
            )?;
            writeln!(
                out,
                "    {}",
                fit(&format!("rewritten by hook:   {by}"), 74)
            )?;
        }
        let answer = "Allow once";
        writeln!(
            out,
            "    {}",
            s.dim(&fit(&format!("options: {}", options.join(" · ")), 74))
        )?;
        writeln!(out, "    {}", s.dim(&format!("the demo answers: {answer}")))?;
        let option = params["options"]
            .as_array()
            .and_then(|o| o.iter().find(|o| o["name"] == answer))
            .and_then(|o| o["optionId"].as_str())
            .unwrap_or("allow_once");
        Ok(Ok(
            json!({"outcome": {"outcome": "selected", "optionId": option}}),
        ))
    }

    fn show(&mut self, out: &mut dyn Write, update: &Value) -> io::Result<()> {
        let s = self.style;
        match update["sessionUpdate"].as_str().unwrap_or("") {
            kind @ ("agent_message_chunk" | "agent_thought_chunk") => {
                let thought = kind == "agent_thought_chunk";
                let text = update["content"]["text"].as_str().unwrap_or("");
                if self.in_text != Some(thought) {
                    self.end_text(out)?;
                    if thought {
                        write!(out, "{} ", s.dim("  thinking ▸"))?;
                        self.column = 13;
                    } else {
                        write!(out, "{} ", s.bold(&s.green("candor ▸")))?;
                        self.column = 9;
                    }
                    self.in_text = Some(thought);
                }
                // Wrapped at a space before 80 columns.
                let mut wrapped = String::new();
                for c in text.chars() {
                    if c == '\n' {
                        self.column = 0;
                    } else if c == ' ' && self.column >= 70 {
                        wrapped.push_str("\n          ");
                        self.column = 10;
                        continue;
                    } else if self.column >= 79 {
                        // A word too long for the line (a path) is broken.
                        wrapped.push_str("\n          ");
                        self.column = 11;
                    } else {
                        self.column += 1;
                    }
                    wrapped.push(c);
                }
                if thought {
                    write!(out, "{}", s.dim(&wrapped))?;
                } else {
                    write!(out, "{wrapped}")?;
                }
                out.flush()?;
            }
            "notice" => {
                self.end_text(out)?;
                // The title is the notice's first line; more is in its
                // description.
                let first = update["title"].as_str().unwrap_or("");
                let more = if update["description"].is_string() {
                    " …"
                } else {
                    ""
                };
                let level = update["severity"].as_str().unwrap_or("info");
                writeln!(
                    out,
                    "  {}",
                    s.dim(&fit(&format!("{level}: {first}{more}"), 76))
                )?;
            }
            "tool_call" => {
                self.end_text(out)?;
                let id = update["toolCallId"].as_str().unwrap_or("").to_owned();
                let card = Card {
                    title: update["title"].as_str().unwrap_or("").to_owned(),
                    kind: update["kind"].as_str().unwrap_or("other").to_owned(),
                    statuses: vec![update["status"].as_str().unwrap_or("pending").to_owned()],
                    input: update["rawInput"].clone(),
                    original: rewrite_of(update),
                    output: content_text(update),
                };
                self.order.push(id.clone());
                let terminal = is_terminal(&card.statuses);
                self.cards.insert(id.clone(), card);
                if terminal {
                    self.print_card(out, &id)?;
                }
            }
            "tool_call_update" => {
                let id = update["toolCallId"].as_str().unwrap_or("").to_owned();
                let Some(card) = self.cards.get_mut(&id) else {
                    return Ok(());
                };
                if let Some(status) = update["status"].as_str() {
                    card.statuses.push(status.to_owned());
                }
                if update.get("content").is_some() {
                    card.output = content_text(update);
                }
                if is_terminal(&card.statuses) {
                    self.print_card(out, &id)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn print_card(&mut self, out: &mut dyn Write, id: &str) -> io::Result<()> {
        let s = self.style;
        let Some(card) = self.cards.remove(id) else {
            return Ok(());
        };
        let last = card.statuses.last().map(String::as_str).unwrap_or("");
        let mark = if last == "completed" {
            s.green("✓")
        } else {
            s.red("✗")
        };
        writeln!(
            out,
            "  {mark} {} {}",
            s.dim(&format!("{:<8}", card.kind)),
            s.bold(&card.title)
        )?;
        writeln!(
            out,
            "    {}",
            s.dim(&format!("status  {}", card.statuses.join(" → ")))
        )?;
        writeln!(
            out,
            "    {}",
            s.dim(&fit(&format!("input   {}", card.input), 74))
        )?;
        if let Some((original, by)) = &card.original {
            writeln!(
                out,
                "    {}",
                s.bold(&fit(&format!("was     {original}"), 74))
            )?;
            writeln!(out, "    {}", s.dim(&fit(&format!("by hook {by}"), 74)))?;
        }
        let lines: Vec<&str> = card
            .output
            .lines()
            .filter(|l| !l.starts_with("```") && !l.starts_with("Rewritten by hook"))
            .collect();
        const SHOWN: usize = 8;
        for line in lines.iter().take(SHOWN) {
            writeln!(out, "    {} {}", s.dim("│"), fit(line, 72))?;
        }
        if lines.len() > SHOWN {
            writeln!(
                out,
                "    {} {}",
                s.dim("│"),
                s.dim(&format!("… {} more lines", lines.len() - SHOWN))
            )?;
        }
        Ok(())
    }

    fn end_text(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.in_text.take().is_some() {
            writeln!(out)?;
        }
        Ok(())
    }
}

/// A line cut to `max` characters (the demo reads well on 80 columns).
fn fit(line: &str, max: usize) -> String {
    crate::text::shorten(line, max)
}

fn is_terminal(statuses: &[String]) -> bool {
    statuses
        .last()
        .is_some_and(|s| s == "completed" || s == "failed")
}

fn content_text(update: &Value) -> String {
    update["content"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c["content"]["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// ANSI styling, or none when the output is not a terminal.
#[derive(Debug, Clone, Copy)]
struct Style {
    on: bool,
}

impl Style {
    fn new(on: bool) -> Self {
        Self { on }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn bold(self, t: &str) -> String {
        self.paint("1", t)
    }
    fn dim(self, t: &str) -> String {
        self.paint("2", t)
    }
    fn blue(self, t: &str) -> String {
        self.paint("34", t)
    }
    fn green(self, t: &str) -> String {
        self.paint("32", t)
    }
    fn red(self, t: &str) -> String {
        self.paint("31", t)
    }
}
