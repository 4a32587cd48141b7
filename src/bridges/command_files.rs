//! The user's own slash commands: Claude Code's command files and Codex's
//! custom prompts, found ([`scan`]), parsed, and expanded into a prompt
//! ([`expand`]).
//!
//! Where they are read from (Claude Code's only while its settings are
//! read, `CANDOR_CLAUDE_HOOKS`; Codex's only while its are,
//! `CANDOR_CODEX_HOOKS`), in this order, the first of a name winning:
//!
//! 1. the project's `.claude/commands/**/*.md` (from the session's `cwd`):
//!    `/name`, described "… (project)", or "… (project:folder)" for a file
//!    in a subfolder: as Claude Code does, a folder shows in the
//!    description and is not part of the name;
//! 2. the user's `~/.claude/commands/**/*.md` (`$CLAUDE_CONFIG_DIR`
//!    honoured): `/name`, "… (user)" or "… (user:folder)". A project
//!    command takes the place of the user's of the same name (Claude
//!    Code's precedence), and a notice says so;
//! 3. Codex's `$CODEX_HOME/prompts/*.md`, the top level only (as Codex):
//!    `/prompts:name`, as Codex invokes them.
//!
//! A file's frontmatter (between `---` lines at its top) gives
//! `description` (else the body's first line) and `argument-hint` (ACP's
//! input hint). It is read by a small parser of `key: value` lines, as
//! Codex reads it, not by a YAML parser: Claude Code's documented
//! `argument-hint: [pr-number] [priority]` is not a YAML string (YAML
//! reads a list and then fails), and nothing else in the frontmatter is
//! used. Indented or `- ` lines continue the key above them.
//!
//! Unicode tag characters and bidirectional controls (`text::is_invisible`:
//! a model reads them, a person does not see them) are removed from a
//! command file's text when it is read; the expansion's notice says how
//! many.
//!
//! What is skipped, each with a notice (the session goes on): a file over
//! [`MAX_FILE`] bytes, a binary or non-UTF-8 one, a symbolic link (files
//! and folders inside the command folders alike; the user's own
//! `~/.claude/commands` and `prompts` folders may themselves be links, the
//! project's `.claude` and `.claude/commands` may not), anything not a
//! regular file, folders deeper than [`MAX_DEPTH`], more than
//! [`MAX_COMMANDS`] files a folder tree, a name that is not ASCII letters,
//! digits, `-`, `_` and `.` (at most [`MAX_NAME`]), and a name candor or MCP
//! prompts use (the caller's `reserved` names and `mcp__…`). Hidden files
//! and files not ending `.md` are passed over silently.
//!
//! Expansion follows each tool's own rules:
//!
//! * Claude Code (as it does today, for commands as for skills):
//!   `$ARGUMENTS` is what was typed after the name, as typed;
//!   `$ARGUMENTS[N]` and its shorthand `$N` are the N-th word, counting from
//!   0 (`$0` is the first: Claude Code's current numbering, not the `$1` of
//!   its older documentation); a word that was not typed leaves its
//!   placeholder as written. `!`command`` lines are never run, `@file`
//!   references never attached, `allowed-tools` and `model` never applied:
//!   the text stays as written, the model is told what was not done (so
//!   it may run or read what it needs with its own tools, through the
//!   user's rules and hooks), and the user is told too ([`Expansion`]).
//!   Named arguments (`arguments:` in a skill's frontmatter) are not
//!   followed.
//! * Codex: `$1`…`$9` are the words counting from 1 and `$ARGUMENTS` all of
//!   them joined by one space (either empty when not typed), `$$` stays as
//!   written; a body with named placeholders (`$KEY`, upper case) takes
//!   only `KEY=value` words, and a missing key or a stray word is an error
//!   that stops the prompt before the model sees it.
//! * Both: words are split as a shell would (single and double quotes,
//!   backslash), except that `#` starts no comment (Codex's `shlex` would
//!   drop `#123`); when no placeholder takes any of the words, the words
//!   are appended as a last line `ARGUMENTS: <as typed>` (Claude Code's
//!   behaviour; Codex would drop them: candor never loses what was typed).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::event_log::CommandSource;

/// The largest command file read (bytes).
pub const MAX_FILE: u64 = 64 * 1024;
/// The most command files read from one folder tree.
pub const MAX_COMMANDS: usize = 200;
/// How many levels of subfolders below `commands/` are read.
pub const MAX_DEPTH: usize = 3;
/// The longest command name (characters).
pub const MAX_NAME: usize = 64;
/// The most directory entries looked at in one folder tree.
const MAX_ENTRIES: usize = 2_000;
/// The longest description offered (characters).
const MAX_DESCRIPTION: usize = 200;
/// The longest input hint offered (characters).
const MAX_HINT: usize = 100;
/// Where an expansion stops growing (bytes): a file full of `$ARGUMENTS`
/// and a long paste would otherwise multiply. The caller cuts it shorter
/// still, saying so.
const MAX_EXPANSION: usize = 1024 * 1024;

/// One command file, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCommand {
    /// As typed after `/`: `review`, or `prompts:review` for Codex.
    pub name: String,
    pub source: CommandSource,
    /// The subfolders below `commands/` (Claude Code's namespace).
    pub folders: Vec<String>,
    pub path: PathBuf,
    /// As offered: the file's description and where it comes from.
    pub description: String,
    /// `argument-hint`.
    pub hint: Option<String>,
    /// The text after the frontmatter.
    pub body: String,
    /// `allowed-tools`, as written (never applied).
    pub allowed_tools: Option<String>,
    /// `model`, as written (never applied).
    pub model: Option<String>,
    /// How many invisible characters (`text::is_invisible`) were taken out
    /// of the file's text.
    pub invisible: usize,
}

/// A folder tree of command files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub source: CommandSource,
    pub dir: PathBuf,
}

/// The folders a session in `cwd` reads commands from, in precedence
/// order.
pub fn roots(config: &Config, cwd: &Path) -> Vec<Root> {
    let mut roots = Vec::new();
    if let Some(claude) = &config.claude {
        roots.push(Root {
            source: CommandSource::Project,
            dir: cwd.join(".claude").join("commands"),
        });
        if let Some(dir) = &claude.user_dir {
            roots.push(Root {
                source: CommandSource::User,
                dir: dir.join("commands"),
            });
        }
    }
    if let Some(home) = config.codex.as_ref().and_then(|c| c.home.as_ref()) {
        roots.push(Root {
            source: CommandSource::Codex,
            dir: home.join("prompts"),
        });
    }
    roots
}

/// What the folders hold: the commands to offer, and what was wrong (each
/// naming the file).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    pub commands: Vec<UserCommand>,
    pub problems: Vec<String>,
}

/// Reads every root; a name is taken by the first file that has it, and
/// none of the `reserved` names (nor `mcp__…`) is taken.
pub fn scan(roots: &[Root], reserved: &[String]) -> Scan {
    let mut out = Scan::default();
    let mut taken: HashMap<String, (CommandSource, PathBuf)> = HashMap::new();
    for root in roots {
        for command in read_root(root, &mut out.problems) {
            let name = &command.name;
            let shown = command.path.display();
            if reserved.iter().any(|r| r.eq_ignore_ascii_case(name)) {
                out.problems.push(format!(
                    "{shown}: not offered: /{name} is one of candor's own commands"
                ));
                continue;
            }
            if name.starts_with("mcp__") {
                out.problems.push(format!(
                    "{shown}: not offered: names starting mcp__ are the MCP servers' prompts"
                ));
                continue;
            }
            if let Some((source, first)) = taken.get(name) {
                let first = first.display();
                out.problems.push(if *source == command.source {
                    format!("{shown}: not offered: {first} is also /{name}")
                } else {
                    format!("{shown}: not offered: the {} command {first} is also /{name} and takes its place", source.name())
                });
                continue;
            }
            taken.insert(name.clone(), (command.source, command.path.clone()));
            out.commands.push(command);
        }
    }
    out
}

/// The command a prompt invokes (`/name args`), with what was typed after
/// its name.
pub fn invoked<'a>(
    typed: &'a str,
    commands: &'a [UserCommand],
) -> Option<(&'a UserCommand, &'a str)> {
    let rest = typed.trim_start().strip_prefix('/')?;
    let (word, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    commands
        .iter()
        .find(|c| c.name == word)
        .map(|c| (c, args.trim()))
}

/// The command files of one root, read and parsed, in order (shallow
/// first, then by path).
fn read_root(root: &Root, problems: &mut Vec<String>) -> Vec<UserCommand> {
    if root.source == CommandSource::Project {
        // A cloned repository's `.claude` or `commands` that is a link
        // could point anywhere: not followed.
        for dir in [root.dir.parent(), Some(root.dir.as_path())]
            .into_iter()
            .flatten()
        {
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
                problems.push(format!(
                    "{}: a symbolic link; the project's commands in it are not read",
                    dir.display()
                ));
                return Vec::new();
            }
        }
    }
    if !root.dir.is_dir() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (path, folders) in walk(root, problems) {
        if out.len() == MAX_COMMANDS {
            problems.push(format!(
                "{}: only the first {MAX_COMMANDS} command files are offered",
                root.dir.display()
            ));
            break;
        }
        match read_command(&path).and_then(|text| parse(root.source, &path, folders, &text)) {
            Ok(command) => out.push(command),
            Err(why) => problems.push(format!("{}: {why}; not offered", path.display())),
        }
    }
    out
}

/// The `.md` files under a root (a Codex root: its top level), each with
/// its subfolders, in order.
fn walk(root: &Root, problems: &mut Vec<String>) -> Vec<(PathBuf, Vec<String>)> {
    let depth = if root.source == CommandSource::Codex {
        0
    } else {
        MAX_DEPTH
    };
    let mut found = Vec::new();
    let mut dirs = VecDeque::from([(root.dir.clone(), Vec::<String>::new())]);
    let mut seen = 0;
    let mut too_deep = false;
    while let Some((dir, folders)) = dirs.pop_front() {
        let mut entries: Vec<_> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries.filter_map(Result::ok).collect(),
            Err(e) => {
                problems.push(format!("{}: cannot be read ({e})", dir.display()));
                continue;
            }
        };
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            seen += 1;
            if seen > MAX_ENTRIES {
                problems.push(format!(
                    "{}: more than {MAX_ENTRIES} entries; the rest are not read",
                    root.dir.display()
                ));
                return found;
            }
            let path = entry.path();
            let (Ok(kind), Some(name)) = (
                entry.file_type(),
                entry.file_name().to_str().map(str::to_owned),
            ) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            if kind.is_symlink() {
                problems.push(format!(
                    "{}: a symbolic link; candor does not follow links in command folders",
                    path.display()
                ));
            } else if kind.is_dir() {
                if folders.len() >= depth {
                    too_deep |= root.source != CommandSource::Codex;
                } else if valid_name(&name) {
                    let mut inner = folders.clone();
                    inner.push(name);
                    dirs.push_back((path, inner));
                } else {
                    problems.push(format!("{}: {}; not read", path.display(), NAME_RULE));
                }
            } else if is_markdown(&name) {
                if kind.is_file() {
                    found.push((path, folders.clone()));
                } else {
                    problems.push(format!("{}: not a regular file; not read", path.display()));
                }
            }
        }
    }
    if too_deep {
        problems.push(format!(
            "{}: folders more than {MAX_DEPTH} levels deep are not read",
            root.dir.display()
        ));
    }
    found
}

/// What a name may be.
const NAME_RULE: &str = "a name is ASCII letters, digits, '-', '_' and '.' (at most 64, starting with a letter or digit)";

fn valid_name(name: &str) -> bool {
    name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_markdown(name: &str) -> bool {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("md"))
}

/// A command file's text: a regular file (opened without following a
/// link or blocking on a FIFO swapped in, and checked again once open), at
/// most [`MAX_FILE`] bytes, UTF-8 and not binary.
fn read_command(path: &Path) -> Result<String, String> {
    use crate::tools::files::{Links, open_regular};
    use std::io::Read as _;
    let (file, meta) = open_regular(path, Links::Refuse)?
        .ok_or_else(|| "cannot be read (it is no longer there)".to_owned())?;
    let too_big = |len: u64| format!("{len} bytes, over the {MAX_FILE} a command file may have");
    if meta.len() > MAX_FILE {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(too_big(bytes.len() as u64));
    }
    if bytes.contains(&0) {
        return Err("a binary file".into());
    }
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
    Ok(text
        .strip_prefix('\u{feff}')
        .map(str::to_owned)
        .unwrap_or(text))
}

/// A command from its file's text.
fn parse(
    source: CommandSource,
    path: &Path,
    folders: Vec<String>,
    text: &str,
) -> Result<UserCommand, String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| valid_name(s))
        .ok_or_else(|| NAME_RULE.to_owned())?;
    let (text, invisible) = crate::text::strip_invisible(text);
    let (front, body) = frontmatter(&text);
    let name = match source {
        CommandSource::Codex => format!("prompts:{stem}"),
        CommandSource::Project | CommandSource::User => stem.to_owned(),
    };
    let scope = match source {
        CommandSource::Codex => "Codex prompt".to_owned(),
        _ if folders.is_empty() => source.name().to_owned(),
        _ => format!("{}:{}", source.name(), folders.join(":")),
    };
    let said = front
        .description
        .as_deref()
        .map(|d| one_line(d, MAX_DESCRIPTION))
        .filter(|d| !d.is_empty())
        .or_else(|| first_line(body))
        .unwrap_or_else(|| "A command with no text".to_owned());
    Ok(UserCommand {
        name,
        source,
        folders,
        path: path.to_owned(),
        description: format!("{said} ({scope})"),
        hint: front
            .hint
            .as_deref()
            .map(|h| one_line(h, MAX_HINT))
            .filter(|h| !h.is_empty()),
        body: body.to_owned(),
        allowed_tools: front.allowed_tools.filter(|t| !t.is_empty()),
        model: front.model.filter(|m| !m.is_empty()),
        invisible,
    })
}

/// `text` on one line (control characters and runs of spaces made one
/// space), at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    crate::text::shorten(&flat.join(" "), max)
}

/// The body's first line with text, without a heading's `#`s.
fn first_line(body: &str) -> Option<String> {
    body.lines()
        .map(|l| one_line(l.trim().trim_start_matches('#'), MAX_DESCRIPTION))
        .find(|l| !l.is_empty())
}

/// What a file's frontmatter says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Front {
    description: Option<String>,
    hint: Option<String>,
    allowed_tools: Option<String>,
    model: Option<String>,
}

/// A file's frontmatter and the body after it. No frontmatter (or one
/// never closed): the whole text is the body.
fn frontmatter(text: &str) -> (Front, &str) {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return (Front::default(), text);
    };
    if first.trim() != "---" {
        return (Front::default(), text);
    }
    let mut offset = first.len();
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in lines {
        offset += line.len();
        let trimmed = line.trim();
        if trimmed == "---" {
            return (front_of(entries), &text[offset..]);
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let item = trimmed.strip_prefix("- ");
        if (item.is_some() || line.starts_with([' ', '\t']))
            && let Some((_, value)) = entries.last_mut()
        {
            if !value.is_empty() {
                value.push_str(if item.is_some() { ", " } else { " " });
            }
            value.push_str(unquote(item.unwrap_or(trimmed)));
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            let value = value.trim();
            // A block scalar's text is on the lines that follow.
            let value = if matches!(value, "|" | ">" | "|-" | ">-" | "|+" | ">+") {
                ""
            } else {
                value
            };
            entries.push((key.trim().to_ascii_lowercase(), value.to_owned()));
        }
    }
    (Front::default(), text)
}

fn front_of(entries: Vec<(String, String)>) -> Front {
    let mut front = Front::default();
    for (key, value) in entries {
        let value = Some(unquote(&value).to_owned());
        match key.as_str() {
            "description" => front.description = value,
            "argument-hint" | "argument_hint" => front.hint = value,
            "allowed-tools" | "allowed_tools" => front.allowed_tools = value,
            "model" => front.model = value,
            _ => {}
        }
    }
    front
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

/// The words typed after a command, split as a shell would: single quotes
/// keep everything, double quotes keep all but `\"`, `\\`, `\$` and
/// ``\` ``, a backslash outside quotes keeps the next character; an
/// unclosed quote runs to the end. `#` starts no comment.
pub fn split_args(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = args.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            word.extend(chars.next());
                        }
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next().unwrap_or('\\'));
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// A command's text for the model, and what the user is told was not
/// done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    pub text: String,
    pub ignored: Vec<String>,
}

/// A command expanded with what was typed after its name (see the module
/// docs for each tool's rules). `Err`: why it cannot be (Codex's named
/// arguments), for the user.
pub fn expand(command: &UserCommand, args: &str) -> Result<Expansion, String> {
    let args = args.trim();
    let (text, took) = match command.source {
        CommandSource::Codex => codex_expand(&command.name, &command.body, args)?,
        CommandSource::Project | CommandSource::User => claude_substitute(&command.body, args),
    };
    let mut text = if took || args.is_empty() {
        text
    } else {
        format!("{}\n\nARGUMENTS: {args}", text.trim_end())
    };
    let mut ignored = Vec::new();
    if command.invisible > 0 {
        ignored.push(format!(
            "{} invisible characters removed from it (Unicode tag or bidirectional control characters, which the model would read and you would not see)",
            command.invisible
        ));
    }
    if command.source != CommandSource::Codex
        && let Some(note) = claude_notes(command, &mut ignored)
    {
        text = format!("{}\n\n{note}", text.trim_end());
    }
    Ok(Expansion { text, ignored })
}

/// Claude Code's substitution; `true` when a placeholder took a word.
fn claude_substitute(body: &str, raw: &str) -> (String, bool) {
    let words = split_args(raw);
    let mut out = String::with_capacity(body.len() + raw.len());
    let mut took = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        if out.len() > MAX_EXPANSION {
            rest = "";
            break;
        }
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let (index, len) = if let Some(after) = tail.strip_prefix("ARGUMENTS") {
            match bracketed_index(after) {
                Some((index, len)) => (Some(index), "ARGUMENTS".len() + len),
                None => {
                    out.push_str(raw);
                    took |= !raw.is_empty();
                    rest = after;
                    continue;
                }
            }
        } else {
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            let word_goes_on =
                tail[digits..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
            if digits == 0 || word_goes_on {
                out.push('$');
                rest = tail;
                continue;
            }
            (tail[..digits].parse::<usize>().ok(), digits)
        };
        match index.and_then(|i| words.get(i)) {
            Some(word) => {
                out.push_str(word);
                took = true;
            }
            None => out.push_str(&rest[at..at + 1 + len]),
        }
        rest = &tail[len..];
    }
    out.push_str(rest);
    (out, took)
}

/// `[N]` at the start of `text`: N and the length of `[N]`.
fn bracketed_index(text: &str) -> Option<(usize, usize)> {
    let inner = text.strip_prefix('[')?;
    let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !inner[digits..].starts_with(']') {
        return None;
    }
    Some((inner[..digits].parse().ok()?, digits + 2))
}

/// Codex's expansion; `true` when a placeholder took a word.
fn codex_expand(name: &str, body: &str, raw: &str) -> Result<(String, bool), String> {
    let keys = codex_keys(body);
    let words = split_args(raw);
    if keys.is_empty() {
        return Ok(codex_numbered(body, &words));
    }
    let mut values = HashMap::new();
    for word in &words {
        match word.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                values.insert(key.to_owned(), value.to_owned());
            }
            _ => {
                return Err(format!(
                    "/{name} takes its arguments as KEY=value ({}); `{word}` is not one. Quote a value with spaces: KEY=\"two words\".",
                    keys.join(", ")
                ));
            }
        }
    }
    let missing: Vec<&str> = keys
        .iter()
        .filter(|k| !values.contains_key(*k))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "/{name} needs a value for {}: type it as KEY=value after the command.",
            missing.join(", ")
        ));
    }
    let mut out = String::with_capacity(body.len());
    let mut last = 0;
    for (start, key) in codex_placeholders(body) {
        if out.len() > MAX_EXPANSION {
            last = body.len();
            break;
        }
        out.push_str(&body[last..start]);
        out.push_str(&values[key]);
        last = start + 1 + key.len();
    }
    out.push_str(&body[last..]);
    Ok((out, !words.is_empty()))
}

/// Codex's named placeholders (`$KEY`: an upper-case letter, then upper
/// case, digits and `_`; not `$ARGUMENTS`, not after another `$`), with
/// where each starts.
fn codex_placeholders(body: &str) -> Vec<(usize, &str)> {
    let bytes = body.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && bytes.get(i + 1).is_some_and(u8::is_ascii_uppercase) {
            let len = bytes[i + 1..]
                .iter()
                .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_')
                .count();
            let key = &body[i + 1..i + 1 + len];
            if key != "ARGUMENTS" && (i == 0 || bytes[i - 1] != b'$') {
                found.push((i, key));
            }
            i += 1 + len;
        } else {
            i += 1;
        }
    }
    found
}

/// The distinct named placeholders, in order of first use.
fn codex_keys(body: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for (_, key) in codex_placeholders(body) {
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_owned());
        }
    }
    keys
}

/// `$1`…`$9` and `$ARGUMENTS` (empty when not typed); `$$` as written.
fn codex_numbered(body: &str, words: &[String]) -> (String, bool) {
    let mut out = String::with_capacity(body.len());
    let mut took = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        if out.len() > MAX_EXPANSION {
            rest = "";
            break;
        }
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let next = tail.as_bytes().first().copied();
        if next == Some(b'$') {
            out.push_str("$$");
            rest = &tail[1..];
        } else if let Some(digit @ b'1'..=b'9') = next {
            if let Some(word) = words.get(usize::from(digit - b'1')) {
                out.push_str(word);
                took = true;
            }
            rest = &tail[1..];
        } else if let Some(after) = tail.strip_prefix("ARGUMENTS") {
            out.push_str(&words.join(" "));
            took |= !words.is_empty();
            rest = after;
        } else {
            out.push('$');
            rest = tail;
        }
    }
    out.push_str(rest);
    (out, took)
}

/// What a Claude Code command file asks for that candor does not do: the
/// note for the model (if any), and a line each for the user.
fn claude_notes(command: &UserCommand, ignored: &mut Vec<String>) -> Option<String> {
    let mut note = Vec::new();
    let shell = shell_commands(&command.body);
    if !shell.is_empty() {
        let listed = list(&shell);
        note.push(format!(
            "The file asks for the output of shell commands ({listed}). candor did not run them: run the ones you need with your tools."
        ));
        ignored.push(format!(
            "its shell commands were not run ({listed}); the model was told, and may run them with its tools under your rules"
        ));
    }
    let files = file_references(&command.body);
    if !files.is_empty() {
        let listed = list(&files);
        note.push(format!(
            "It refers to files with @ ({listed}). candor did not attach them: read the ones you need."
        ));
        ignored.push(format!(
            "its @ files were not attached ({listed}); the model was told to read what it needs"
        ));
    }
    if let Some(tools) = &command.allowed_tools {
        ignored.push(format!(
            "its allowed-tools ({}) was not applied: candor's rules and hooks decide every call",
            crate::text::shorten(tools, 120)
        ));
    }
    if let Some(model) = &command.model {
        ignored.push(format!(
            "its model ({}) was not switched to",
            crate::text::shorten(model, 60)
        ));
    }
    (!note.is_empty()).then(|| format!("[candor] About this command: {}", note.join(" ")))
}

/// The first few of `items`, for a sentence.
fn list(items: &[String]) -> String {
    let mut shown: Vec<String> = items
        .iter()
        .take(3)
        .map(|i| crate::text::shorten(i, 80))
        .collect();
    if items.len() > 3 {
        shown.push(format!("and {} more", items.len() - 3));
    }
    shown.join(", ")
}

/// Claude Code's shell commands in a command file: `` !`command` `` on a
/// line, and blocks fenced ```` ```! ````.
fn shell_commands(body: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in body.lines() {
        if line.trim_start().starts_with("```!") {
            found.push("```! block".to_owned());
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("!`") {
            let after = &rest[at + 2..];
            let Some(end) = after.find('`') else {
                break;
            };
            if end > 0 {
                found.push(format!("!`{}`", &after[..end]));
            }
            rest = &after[end + 1..];
        }
    }
    found
}

/// Claude Code's file references in a command file: a word starting `@`
/// that looks like a path (has a `/` or a `.`).
fn file_references(body: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in body.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
        if !path.is_empty() && path.contains(['/', '.']) && !found.iter().any(|f| f[1..] == *path) {
            found.push(format!("@{path}"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(source: CommandSource, body: &str) -> UserCommand {
        UserCommand {
            name: "x".into(),
            source,
            folders: Vec::new(),
            path: PathBuf::from("/p/x.md"),
            description: String::new(),
            hint: None,
            body: body.into(),
            allowed_tools: None,
            model: None,
            invisible: 0,
        }
    }

    fn claude(body: &str, args: &str) -> String {
        expand(&command(CommandSource::Project, body), args)
            .unwrap()
            .text
    }

    fn codex(body: &str, args: &str) -> Result<String, String> {
        expand(&command(CommandSource::Codex, body), args).map(|e| e.text)
    }

    #[test]
    fn claude_placeholders_count_from_zero_and_arguments_is_as_typed() {
        assert_eq!(
            claude(
                "All: $ARGUMENTS. First $0, second $1, third $ARGUMENTS[2].",
                "a \"b c\" d"
            ),
            "All: a \"b c\" d. First a, second b c, third d."
        );
        // A word not typed leaves its placeholder; $1x is not a placeholder.
        assert_eq!(
            claude("$0 and $5 and $1x", "a"),
            "$0 and $5 and $1x".replace("$0", "a")
        );
        assert_eq!(
            claude("costs $ 5 or $", "a"),
            "costs $ 5 or $\n\nARGUMENTS: a"
        );
    }

    #[test]
    fn words_no_placeholder_took_are_appended() {
        assert_eq!(
            claude("Review the code.\n", "src/a.rs"),
            "Review the code.\n\nARGUMENTS: src/a.rs"
        );
        assert_eq!(claude("Review the code.\n", ""), "Review the code.\n");
        assert_eq!(
            codex("Just this.", "a b").unwrap(),
            "Just this.\n\nARGUMENTS: a b"
        );
        assert_eq!(claude("Only $3", "a"), "Only $3\n\nARGUMENTS: a");
    }

    #[test]
    fn codex_numbers_from_one_and_keeps_double_dollars() {
        assert_eq!(
            codex(
                "PR #$1 priority $2 ($3) all: $ARGUMENTS, cost $$5",
                "456 \"very high\""
            )
            .unwrap(),
            "PR #456 priority very high () all: 456 very high, cost $$5"
        );
    }

    #[test]
    fn codex_named_placeholders_take_key_value_words() {
        assert_eq!(
            codex(
                "Review $USER on $BRANCH, not $$HOME",
                "USER=\"Ann Lee\" BRANCH=main"
            )
            .unwrap(),
            "Review Ann Lee on main, not $$HOME"
        );
        let missing = codex("Review $USER on $BRANCH", "USER=ann").unwrap_err();
        assert!(missing.contains("BRANCH"), "{missing}");
        let stray = codex("Review $USER", "ann").unwrap_err();
        assert!(stray.contains("`ann`"), "{stray}");
    }

    #[test]
    fn words_split_like_a_shell_but_hash_is_kept() {
        assert_eq!(
            split_args(r#"a 'b c' "d \"e\"" f\ g #123 "unclosed x"#),
            vec!["a", "b c", "d \"e\"", "f g", "#123", "unclosed x"]
        );
        assert!(split_args("   ").is_empty());
        assert_eq!(split_args("''"), vec![""]);
    }

    #[test]
    fn frontmatter_gives_description_and_hint_as_written() {
        let text = "---\ndescription: \"Review a PR\"\nargument-hint: [pr-number] [priority]\nallowed-tools:\n  - Bash(git:*)\n  - Read\nmodel: haiku\n---\nPlease review #$0.\n";
        let (front, body) = frontmatter(text);
        assert_eq!(front.description.as_deref(), Some("Review a PR"));
        assert_eq!(front.hint.as_deref(), Some("[pr-number] [priority]"));
        assert_eq!(front.allowed_tools.as_deref(), Some("Bash(git:*), Read"));
        assert_eq!(front.model.as_deref(), Some("haiku"));
        assert_eq!(body, "Please review #$0.\n");
        // Unclosed: all of it is the body.
        let (front, body) = frontmatter("---\ndescription: x\nno end");
        assert_eq!(front, Front::default());
        assert_eq!(body, "---\ndescription: x\nno end");
        let (front, _) = frontmatter("---\ndescription: >\n  two\n  lines\n---\n");
        assert_eq!(front.description.as_deref(), Some("two lines"));
    }

    #[test]
    fn shell_lines_and_file_references_stay_as_written_and_are_noted() {
        let mut c = command(
            CommandSource::User,
            "Status: !`git status`\nSee @src/a.rs and @README.md, not @param or a@b.c\n",
        );
        c.allowed_tools = Some("Bash(git:*)".into());
        let e = expand(&c, "").unwrap();
        assert!(
            e.text.starts_with("Status: !`git status`\nSee @src/a.rs"),
            "{}",
            e.text
        );
        assert!(e.text.contains("[candor] About this command"), "{}", e.text);
        assert!(e.text.contains("!`git status`"));
        assert!(e.text.contains("@src/a.rs, @README.md)"), "{}", e.text);
        let note = &e.text[e.text.find("[candor]").unwrap()..];
        assert!(!note.contains("@param"), "{note}");
        assert_eq!(e.ignored.len(), 3, "{:?}", e.ignored);
        assert!(e.ignored[2].contains("allowed-tools (Bash(git:*))"));
        // A Codex prompt has no such features: nothing is noted.
        let e = expand(&command(CommandSource::Codex, "Status: !`git status`"), "").unwrap();
        assert!(e.ignored.is_empty());
    }

    #[test]
    fn a_file_of_placeholders_cannot_multiply_a_long_paste_without_bound() {
        let body = "$ARGUMENTS $1 ".repeat(5_000);
        let paste = "x".repeat(100_000);
        for source in [CommandSource::Project, CommandSource::Codex] {
            let e = expand(&command(source, &body), &paste).unwrap();
            assert!(
                e.text.len() < MAX_EXPANSION + 2 * paste.len(),
                "{}",
                e.text.len()
            );
        }
        let named = "$KEY ".repeat(10_000);
        let e = expand(
            &command(CommandSource::Codex, &named),
            &format!("KEY={paste}"),
        )
        .unwrap();
        assert!(
            e.text.len() < MAX_EXPANSION + 2 * paste.len(),
            "{}",
            e.text.len()
        );
    }

    #[test]
    fn names_are_a_safe_charset() {
        assert!(valid_name("review-pr_2.v1"));
        for bad in ["", "-x", ".x", "a b", "a/b", "ünï", "a:b", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_command_is_invoked_by_its_whole_name() {
        let commands = vec![UserCommand {
            name: "prompts:draft".into(),
            ..command(CommandSource::Codex, "")
        }];
        let (c, args) = invoked("  /prompts:draft  a b ", &commands).unwrap();
        assert_eq!((c.name.as_str(), args), ("prompts:draft", "a b"));
        assert!(invoked("/prompts:drafts", &commands).is_none());
        assert!(invoked("say /prompts:draft", &commands).is_none());
    }

    #[test]
    fn invisible_characters_in_a_command_file_are_removed_and_said() {
        let text = "---\ndescription: Review\u{E0041}\n---\nReview \u{2066}$ARGUMENTS\u{2069} carefully.\u{E0069}\u{E0067}";
        let command = parse(
            CommandSource::Project,
            Path::new("/p/.claude/commands/review.md"),
            Vec::new(),
            text,
        )
        .unwrap();
        assert_eq!(command.invisible, 5);
        assert!(command.body.chars().all(|c| !crate::text::is_invisible(c)));
        let expansion = expand(&command, "a.rs").unwrap();
        assert_eq!(expansion.text, "Review a.rs carefully.");
        assert!(
            expansion
                .ignored
                .iter()
                .any(|i| i.contains("5 invisible characters removed")),
            "{:?}",
            expansion.ignored
        );
    }
}
