//! `candor demo`: a whole scripted session, seen the way an editor sees it.
//!
//! The demo makes a small project in a temporary directory, starts candor
//! itself as a child process with the scripted model
//! (`protocol/examples/demo-script.json`), and acts as a minimal ACP
//! client: `initialize`, `session/new`, two prompts. It prints the
//! conversation as it streams and each tool card (title, kind, status
//! changes, input, output) once the card is final, then points at the
//! session's event log, from which every frame was derived.

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use crate::tools::exec::{self, ProcessGroup};

const SCRIPT: &str = include_str!("../protocol/examples/demo-script.json");

const PROMPTS: [&str; 2] = ["What is in this project?", "Try it out."];

/// Runs the demo, writing to `out`.
pub async fn run(out: &mut dyn Write) -> io::Result<ExitCode> {
    let style = Style::new(io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let project = make_project()?;
    let result = run_in(out, &project, style).await;
    let _ = std::fs::remove_dir_all(project.join("greeter"));
    result
}

async fn run_in(out: &mut dyn Write, root: &Path, s: Style) -> io::Result<ExitCode> {
    let cwd = root.join("greeter");
    let home = root.join("state");
    let script = root.join("demo-script.json");
    std::fs::write(&script, SCRIPT)?;
    let exe = std::env::current_exe()?;
    let mut cmd = exec::agent(&exe, &[]);
    cmd.env("CANDOR_PROVIDER", "scripted")
        .env("CANDOR_SCRIPT", &script)
        .env("CANDOR_HOME", &home)
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
        .request(out, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "candor-demo", "version": env!("CARGO_PKG_VERSION")}}))
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
    let log = home.join("sessions").join(format!("{session_id}.jsonl"));
    let records = std::fs::read_to_string(&log).unwrap_or_default();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in records.lines() {
        let kind = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "?".into());
        match counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((kind, 1)),
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        s.bold("Everything above was derived from the session's event log:")
    )?;
    writeln!(out, "  {}", log.display())?;
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    writeln!(out, "  {}", s.dim(&summary.join(", ")))?;
    writeln!(out, "{}", s.dim("Inspect it with: jq -c . <that file>"))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the little project the demo works on.
fn make_project() -> io::Result<PathBuf> {
    let root = std::env::temp_dir().join(format!("candor-demo-{}", std::process::id()));
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
    Ok(root)
}

/// What the demo remembers of a card until it is final.
struct Card {
    title: String,
    kind: String,
    statuses: Vec<String>,
    input: Value,
    output: String,
}

struct Client {
    stdin: ChildStdin,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    next_id: u64,
    cards: HashMap<String, Card>,
    order: Vec<String>,
    /// Inside a streamed message: `Some(true)` for thoughts.
    in_text: Option<bool>,
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
        let title = params["toolCall"]["title"].as_str().unwrap_or("?");
        let options: Vec<&str> = params["options"]
            .as_array()
            .map(|o| o.iter().filter_map(|o| o["name"].as_str()).collect())
            .unwrap_or_default();
        writeln!(
            out,
            "  {} {}",
            s.bold(&s.blue("?")),
            s.bold(&format!("candor asks to run: {title}"))
        )?;
        writeln!(
            out,
            "    {}",
            s.dim(&format!("options: {}", options.join(" · ")))
        )?;
        writeln!(out, "    {}", s.dim("the demo answers: Allow once"))?;
        Ok(Ok(
            json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
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
                    } else {
                        write!(out, "{} ", s.bold(&s.green("candor ▸")))?;
                    }
                    self.in_text = Some(thought);
                }
                if thought {
                    write!(out, "{}", s.dim(text))?;
                } else {
                    write!(out, "{text}")?;
                }
                out.flush()?;
            }
            "tool_call" => {
                self.end_text(out)?;
                let id = update["toolCallId"].as_str().unwrap_or("").to_owned();
                let card = Card {
                    title: update["title"].as_str().unwrap_or("").to_owned(),
                    kind: update["kind"].as_str().unwrap_or("other").to_owned(),
                    statuses: vec![update["status"].as_str().unwrap_or("pending").to_owned()],
                    input: update["rawInput"].clone(),
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
        writeln!(out, "    {}", s.dim(&format!("input   {}", card.input)))?;
        let lines: Vec<&str> = card
            .output
            .lines()
            .filter(|l| !l.starts_with("```"))
            .collect();
        const SHOWN: usize = 8;
        for line in lines.iter().take(SHOWN) {
            writeln!(out, "    {} {line}", s.dim("│"))?;
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
