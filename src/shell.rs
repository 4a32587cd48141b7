//! What a Bash command line will run, read with a real shell parser.
//!
//! Permission rules, grants and hook `if` filters decide on a [`Script`]:
//! every simple command that can run (in pipelines, lists, subshells,
//! groups, `if`/`for`/`while`/`case` bodies, functions, command and
//! process substitutions, the string of `bash -c`, `eval`'s words, `find
//! -exec`, and behind wrappers such as `env`, `sudo`, `timeout` or
//! `xargs`), the files it redirects output to or input from, the
//! assignments it makes, and everything candor cannot see through (a
//! command name that is not static, `source`, code read from a pipe, a
//! parse error). Nothing here decides; `interception::policy` does, on
//! this.
//!
//! The parser is tree-sitter-bash (the grammar codex-rs uses for the same
//! purpose): it parses the whole line in one pass, including the
//! substitutions inside double-quoted strings and unquoted here-documents,
//! and marks what it could not read with `ERROR`/`MISSING` nodes, so an
//! unsure parse is known to be unsure. Words are then decoded here the way
//! bash expands them (quotes removed, backslashes, `$'…'` escapes); any
//! part whose value is only known when the command runs (a parameter,
//! substitution, glob or brace expansion) is kept as [`Piece::Any`].

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

/// Commands longer than this are not parsed (they are unreadable: asked).
pub const MAX_COMMAND: usize = 64 * 1024;
/// How deeply `bash -c '…'`, `eval` and `trap` strings are read.
const MAX_NESTING: usize = 6;
/// How deep a syntax tree is walked.
const MAX_DEPTH: usize = 200;
/// How many alias uses in one line are read.
const MAX_ALIAS_USES: usize = 64;
/// How long one parse may take before the line counts as unreadable.
const PARSE_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);
/// How many reasons a line records for being opaque.
const MAX_REASONS: usize = 16;
/// How many wrappers one command may be nested in (`env env env … rm`).
const MAX_WRAPPERS: usize = 32;

/// A piece of a word: text known now, or a part known only at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Lit(String),
    Any,
}

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word(pub Vec<Piece>);

impl Word {
    fn lit(s: &str) -> Word {
        Word(vec![Piece::Lit(s.to_owned())])
    }

    fn any() -> Word {
        Word(vec![Piece::Any])
    }

    /// The word's value when it is fully known, without copying it.
    pub fn as_lit(&self) -> Option<&str> {
        match self.0.as_slice() {
            [] => Some(""),
            [Piece::Lit(s)] => Some(s),
            _ => None,
        }
    }

    /// The word's value when it is fully known.
    pub fn text(&self) -> Option<String> {
        if let Some(s) = self.as_lit() {
            return Some(s.to_owned());
        }
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Any => return None,
            }
        }
        Some(out)
    }

    fn push_lit(&mut self, s: &str) {
        if let Some(Piece::Lit(last)) = self.0.last_mut() {
            last.push_str(s);
        } else {
            self.0.push(Piece::Lit(s.to_owned()));
        }
    }

    fn push_any(&mut self) {
        if self.0.last() != Some(&Piece::Any) {
            self.0.push(Piece::Any);
        }
    }

    fn extend(&mut self, other: Word) {
        for p in other.0 {
            match p {
                Piece::Lit(s) => self.push_lit(&s),
                Piece::Any => self.push_any(),
            }
        }
    }

    /// The word as shown to a person (`…` where its value is unknown).
    pub fn display(&self) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Lit(s) => s.as_str(),
                Piece::Any => "…",
            })
            .collect()
    }
}

/// What a simple command runs besides itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// Nothing: it is a program or builtin with arguments.
    Itself,
    /// A wrapper (`env`, `timeout`, `sudo`, `xargs`, …) around this command.
    Command(Box<Command>),
    /// Shell code given as a string (`bash -c`, `eval`, `trap`, `watch`).
    Script(Box<Script>),
    /// Code candor cannot see. `anything`: it could be any command
    /// (`bash -c "$X"`, `eval "$X"`, a shell reading a pipe), so a deny
    /// rule could match it; otherwise it is a file's code (`source f`).
    Unknown { reason: String, anything: bool },
}

/// How a wrapper relates to the command it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapperKind {
    /// Changes how the command runs, not what it may do (`env`, `nice`,
    /// `timeout`, `nohup`, `time`, …): a rule for the inner command covers it.
    Transparent,
    /// Runs it with other privileges (`sudo`, `doas`, `su`): only a rule for
    /// the whole command covers it.
    Elevating,
    /// Runs shell code (`bash -c`, `eval`): the code's commands must be covered.
    Interpreter,
    /// Runs it on behalf of the outer command (`find -exec`, `xargs`): both
    /// must be covered.
    Driver,
}

/// One simple command: its words (the command name first), the
/// assignments in front of it, and what it runs through a wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
    pub assignments: Vec<(String, Word)>,
    pub runs: Runs,
    pub wrapper: Option<WrapperKind>,
    /// A wrapper whose options candor could not follow: every suffix of
    /// its words may be the command it runs.
    pub loose: bool,
    /// It runs inside a command or process substitution.
    pub substituted: bool,
}

impl Command {
    /// The command name, when static, with a leading `\` removed.
    pub fn name(&self) -> Option<String> {
        self.words.first().and_then(Word::text)
    }

    /// The name's last path component (`/bin/rm` is `rm`).
    pub fn basename(&self) -> Option<String> {
        self.name()
            .map(|n| n.rsplit('/').next().unwrap_or(&n).to_owned())
    }

    /// The command as shown to a person.
    pub fn display(&self) -> String {
        let words: Vec<String> = self.words.iter().map(quoted_display).collect();
        words.join(" ")
    }

    /// This command and every command it runs through wrappers, outermost
    /// first (not into scripts: those are their own [`Script`]).
    pub fn chain(&self) -> Vec<&Command> {
        let mut out = vec![self];
        let mut at = self;
        while let Runs::Command(inner) = &at.runs {
            out.push(inner);
            at = inner;
        }
        out
    }
}

fn quoted_display(w: &Word) -> String {
    match w.text() {
        Some(t) if needs_quotes(&t) => format!("'{}'", t.replace('\'', "'\\''")),
        Some(t) => t,
        None => w.display(),
    }
}

/// Whether a word's text would need quotes to be read back as one word.
pub fn needs_quotes(t: &str) -> bool {
    t.is_empty()
        || t.chars().any(|c| {
            c.is_whitespace()
                || matches!(
                    c,
                    '\'' | '"' | '\\' | '$' | '`' | '|' | '&' | ';' | '<' | '>' | '(' | ')'
                )
        })
}

/// A redirection of a command's input or output to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub target: Word,
    /// Output (`>`, `>>`, `&>`, `>|`, …) rather than input (`<`).
    pub writes: bool,
}

/// Why candor cannot fully see what a command line does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opaque {
    pub reason: String,
}

/// Everything a command line can run, and what it touches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    /// Every simple command, in the order bash starts them (a command's
    /// substitutions before the command).
    pub commands: Vec<Command>,
    /// Redirections to and from files (not `2>&1`, not `/dev/null`).
    pub redirects: Vec<Redirect>,
    /// Names assigned anywhere (`X=1 cmd`, `X=1;`, `export X=1`, `env X=1`).
    pub assigned: Vec<String>,
    /// Directories `cd`/`pushd` change to (relative paths may be under them).
    pub dirs: Vec<Word>,
    /// What candor cannot see through.
    pub opaque: Vec<Opaque>,
    /// The parser could not read the line (or part of it): the reason.
    pub unreadable: Option<String>,
    /// The line itself, kept when it could not be read (deny rules then
    /// look for their command names in it).
    pub raw: Option<String>,
    /// Something in the line evaluates text as code (`${x@P}`, arithmetic
    /// on a variable, `test -v`) and the line holds text that looks like a
    /// substitution: the code that runs may be any command.
    pub evaluates_text: bool,
}

impl Script {
    /// This script and every script nested in it (`bash -c`, `eval`, …),
    /// outermost first.
    pub fn scripts(&self) -> Vec<&Script> {
        let mut out = vec![self];
        for s in self.nested() {
            out.extend(s.scripts());
        }
        out
    }

    /// Every command, including those of nested scripts and behind
    /// wrappers, each once.
    pub fn all_commands(&self) -> Vec<&Command> {
        self.scripts()
            .into_iter()
            .flat_map(|s| s.commands.iter().flat_map(Command::chain))
            .collect()
    }

    /// Every redirection, including those of nested scripts.
    pub fn all_redirects(&self) -> Vec<&Redirect> {
        self.scripts()
            .into_iter()
            .flat_map(|s| &s.redirects)
            .collect()
    }

    /// Every assigned name (in front of a command, alone, exported, or
    /// through `env`), including in nested scripts.
    pub fn all_assigned(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .scripts()
            .into_iter()
            .flat_map(|s| s.assigned.iter().map(String::as_str))
            .collect();
        for c in self.all_commands() {
            out.extend(c.assignments.iter().map(|(n, _)| n.as_str()));
        }
        out
    }

    /// Every `cd` target, including in nested scripts.
    pub fn all_dirs(&self) -> Vec<&Word> {
        self.scripts().into_iter().flat_map(|s| &s.dirs).collect()
    }

    /// Every reason the line is not fully visible (unreadable parts,
    /// opaque constructs, unknown code), including in nested scripts.
    pub fn all_opaque(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in self.scripts() {
            out.extend(s.unreadable.iter().cloned());
            out.extend(s.opaque.iter().map(|o| o.reason.clone()));
        }
        for c in self.all_commands() {
            if let Runs::Unknown { reason, .. } = &c.runs {
                out.push(reason.clone());
            }
        }
        out
    }

    /// The text of every part that could not be read.
    pub fn all_unreadable(&self) -> Vec<&str> {
        self.scripts()
            .into_iter()
            .filter_map(|s| s.raw.as_deref())
            .collect()
    }

    fn nested(&self) -> Vec<&Script> {
        self.commands
            .iter()
            .flat_map(|c| c.chain())
            .filter_map(|c| match &c.runs {
                Runs::Script(s) => Some(&**s),
                _ => None,
            })
            .collect()
    }
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Reads a command line. Never fails: what cannot be read is recorded in
/// [`Script::unreadable`]. A call's line is read once, when its input is
/// parsed (`tools::bash::BashInput::script`); everything that judges the
/// call reads that.
pub fn parse(command: &str) -> Script {
    parse_nested(command, 0)
}

fn parse_nested(command: &str, nesting: usize) -> Script {
    let mut script = Script::default();
    if command.len() > MAX_COMMAND {
        script.unreadable = Some(format!(
            "the command is longer than {} KiB, more than candor reads",
            MAX_COMMAND / 1024
        ));
        script.raw = Some(command.to_owned());
        return script;
    }
    if nesting > MAX_NESTING {
        script.unreadable = Some("shell code nested too deeply for candor to read".into());
        script.raw = Some(command.to_owned());
        return script;
    }
    // bash removes a backslash-newline before it reads words (outside
    // single quotes, and in unquoted here-documents): `r\⏎m` is `rm`.
    // Rather than follow bash's quoting to decide where, both readings
    // count: every command either finds is listed.
    let mut script = walk(command, nesting);
    let joined = join_continuations(command);
    if joined != command {
        let other = walk(&joined, nesting);
        script.commands.extend(other.commands);
        script.redirects.extend(other.redirects);
        script.assigned.extend(other.assigned);
        script.dirs.extend(other.dirs);
        for o in other.opaque {
            if !script.opaque.contains(&o) {
                script.opaque.push(o);
            }
        }
        if script.unreadable.is_none() {
            script.unreadable = other.unreadable;
            script.raw = other.raw;
        }
        script.evaluates_text |= other.evaluates_text;
    }
    script
}

/// One reading of a line by the parser and the walk over its tree.
fn walk(command: &str, nesting: usize) -> Script {
    let mut script = Script::default();
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            if p.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
                return None;
            }
            *slot = Some(p);
        }
        slot.as_mut().and_then(|p| {
            p.reset();
            // tree-sitter-bash's scanner passes the lookahead code point
            // to `isdigit`, which reads out of bounds above 255: the parser
            // sees non-ASCII characters as `x`s of the same byte length
            // (word characters, as bash sees them), and every text is
            // taken from the line itself.
            let ascii: std::borrow::Cow<'_, str> = if command.is_ascii() {
                std::borrow::Cow::Borrowed(command)
            } else {
                std::borrow::Cow::Owned(
                    command
                        .chars()
                        .map(|c| {
                            if c.is_ascii() {
                                c.to_string()
                            } else {
                                "x".repeat(c.len_utf8())
                            }
                        })
                        .collect(),
                )
            };
            // A bounded parse: a pathological line gives up (and is
            // unreadable) rather than hold the call.
            let bytes = ascii.as_bytes();
            let started = std::time::Instant::now();
            let mut too_long = |_: &tree_sitter::ParseState| started.elapsed() > PARSE_BUDGET;
            let options = tree_sitter::ParseOptions::new().progress_callback(&mut too_long);
            p.parse_with_options(
                &mut |at: usize, _| bytes.get(at..).unwrap_or(&[]),
                None,
                Some(options),
            )
        })
    });
    let Some(tree) = tree else {
        script.unreadable = Some("the shell parser could not read the command".into());
        script.raw = Some(command.to_owned());
        return script;
    };
    let mut walker = Walker {
        src: command,
        nesting,
        substitution: 0,
        aliases: Vec::new(),
        alias_uses: 0,
        stdin_code: None,
        out: script,
    };
    walker.visit(tree.root_node(), 0);
    let mut script = walker.out;
    if script.unreadable.is_some() {
        script.raw = Some(command.to_owned());
    }
    let looks_like_code = command.contains('`')
        || command
            .match_indices("$(")
            .any(|(i, _)| !command[i + 2..].starts_with('('));
    script.evaluates_text = !script.opaque.is_empty() && looks_like_code;
    script
}

/// The code of every `$(…)` and `` `…` `` in expanded text (a
/// here-document's body); an unclosed one is taken to the end.
fn substitutions(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '`' => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j] != '`' {
                    j += if chars[j] == '\\' { 2 } else { 1 };
                }
                out.push(chars[start..j.min(chars.len())].iter().collect());
                i = j + 1;
            }
            '$' if chars.get(i + 1) == Some(&'(') && chars.get(i + 2) != Some(&'(') => {
                let start = i + 2;
                let mut j = start;
                let mut open = 1;
                while j < chars.len() {
                    match chars[j] {
                        '\\' => j += 1,
                        '(' => open += 1,
                        ')' => {
                            open -= 1;
                            if open == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                out.push(chars[start..j.min(chars.len())].iter().collect());
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// The line with every backslash-newline removed, quotes or not: the
/// second reading of a line that has any (see [`parse_nested`]); where
/// quoting keeps a pair, the first reading has it.
fn join_continuations(line: &str) -> String {
    line.replace("\\\n", "")
}

struct Walker<'s> {
    src: &'s str,
    nesting: usize,
    /// How many substitutions the walk is inside.
    substitution: usize,
    /// Aliases the line defines (`alias r=rm`), by name, and how often
    /// the line has used one.
    aliases: Vec<(String, String)>,
    alias_uses: usize,
    /// The here-document or here-string given to the command being built.
    stdin_code: Option<String>,
    out: Script,
}

impl<'s> Walker<'s> {
    fn text(&self, n: Node<'_>) -> &'s str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    fn unreadable(&mut self, why: String) {
        if self.out.unreadable.is_none() {
            self.out.unreadable = Some(why);
        }
    }

    fn opaque(&mut self, reason: impl Into<String>) {
        // One reason makes a line opaque; a few tell the user why.
        if self.out.opaque.len() >= MAX_REASONS {
            return;
        }
        let reason = reason.into();
        if !self.out.opaque.iter().any(|o| o.reason == reason) {
            self.out.opaque.push(Opaque { reason });
        }
    }

    fn visit(&mut self, n: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            self.unreadable("the command is nested too deeply for candor to read".into());
            return;
        }
        if n.is_error() || n.is_missing() {
            self.parse_error(n);
        }
        match n.kind() {
            "command" => self.command(n, depth),
            "variable_assignment" => {
                self.assignment(n);
                self.children(n, depth);
            }
            "declaration_command" => {
                self.declaration(n);
                self.children(n, depth);
            }
            "unset_command" if self.text(n).contains('[') => {
                self.opaque(format!(
                    "`{}` names an array element, whose index bash may evaluate",
                    truncate(self.text(n), 40)
                ));
                self.children(n, depth);
            }
            "c_style_for_statement" => {
                self.arithmetic(n);
                self.children(n, depth);
            }
            "file_redirect" => {
                self.redirect(n);
                self.children(n, depth);
            }
            "for_statement" => {
                if let Some(v) = n.child_by_field_name("variable") {
                    let name = self.text(v).to_owned();
                    self.out.assigned.push(name);
                }
                self.children(n, depth);
            }
            "heredoc_redirect" => self.heredoc(n, depth),
            "word" if self.text(n).contains('\n') => {
                self.unreadable(format!(
                    "the shell parser read a line break inside the word `{}`",
                    truncate(&self.text(n).replace('\n', "⏎"), 30)
                ));
            }
            "command_substitution" | "process_substitution" => {
                self.substitution += 1;
                self.children(n, depth);
                self.substitution -= 1;
            }
            "arithmetic_expansion" => {
                self.arithmetic(n);
                self.children(n, depth);
            }
            "compound_statement" if self.text(n).starts_with("((") => {
                self.arithmetic(n);
                self.children(n, depth);
            }
            "test_command" => {
                self.test_arithmetic(n);
                self.children(n, depth);
            }
            "expansion" => {
                self.expansion(n);
                self.children(n, depth);
            }
            _ => self.children(n, depth),
        }
    }

    /// An `ERROR` or `MISSING` node: what the parser could not read, and
    /// where.
    fn parse_error(&mut self, n: Node<'_>) {
        let at = n.start_position();
        let near: String = self.text(n).chars().take(30).collect();
        self.unreadable(if n.is_missing() {
            format!(
                "the shell parser expected `{}` at line {}, column {}",
                n.kind(),
                at.row + 1,
                at.column + 1
            )
        } else {
            format!(
                "the shell parser cannot read `{near}` at line {}, column {}",
                at.row + 1,
                at.column + 1
            )
        });
    }

    /// `NAME=value` (or `NAME[i]=value`): the variable it assigns.
    fn assignment(&mut self, n: Node<'_>) {
        if let Some(name) = n.child_by_field_name("name") {
            if name.kind() == "subscript" {
                self.opaque(format!(
                    "`{}` assigns to an array element, whose index bash evaluates",
                    truncate(self.text(n), 40)
                ));
            }
            let name = self.text(name).to_owned();
            let name = name.split('[').next().unwrap_or("").to_owned();
            self.out.assigned.push(name);
        }
    }

    /// `export`, `declare`, `local`, …: the variables they assign, and the
    /// kinds of variable whose value bash evaluates.
    fn declaration(&mut self, n: Node<'_>) {
        let mut cursor = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut cursor).collect();
        for c in kids {
            if !matches!(c.kind(), "word" | "string" | "raw_string" | "concatenation") {
                continue;
            }
            // A quoted word is still an assignment or a flag to
            // `declare`: `export "BASH_ENV=x"`, `declare '-n' r=PATH`.
            let word = self.word(c);
            let text = word.display();
            if text.starts_with('-') && text.contains(['i', 'n', 'a', 'A']) {
                self.opaque(format!(
                    "`{}` declares an integer, reference or array variable, whose value bash evaluates",
                    truncate(self.text(n), 40)
                ));
            }
            if let Some((name, value)) = text.split_once('=') {
                let name = name.split('[').next().unwrap_or("").to_owned();
                if name.len() < text.split_once('=').map_or(0, |(n, _)| n.len())
                    || value.starts_with('(')
                {
                    self.opaque(format!(
                        "`{}` assigns an array or an element, which bash evaluates",
                        truncate(self.text(n), 40)
                    ));
                }
                self.out.assigned.push(name);
            }
        }
    }

    /// A parameter expansion (`${…}`): the substitutions the grammar keeps
    /// as text inside it, what it assigns, and what bash evaluates in it.
    fn expansion(&mut self, n: Node<'_>) {
        let mut cursor = n.walk();
        let kids: Vec<&str> = n.children(&mut cursor).map(|c| c.kind()).collect();
        let text = self.text(n);
        // The grammar keeps some substitutions inside an expansion's
        // words as text (`${x:-`cmd`}`, `${x#$(cmd)}`): read them.
        for code in substitutions(text.get(2..).unwrap_or("")) {
            let inner = parse_nested(&code, self.nesting + 1);
            self.absorb(inner);
        }
        if text.starts_with("${!") {
            self.opaque(format!(
                "`{}` expands a variable named by another, which can evaluate an index",
                truncate(text, 40)
            ));
        }
        // `${X:=v}` and `${X=v}` assign X.
        if let Some(rest) = text.strip_prefix("${") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let after = &rest[name.len()..];
            if !name.is_empty() && (after.starts_with(":=") || after.starts_with('=')) {
                self.out.assigned.push(name);
            }
        }
        let arithmetic = kids.contains(&"subscript")
            || text
                .strip_prefix("${")
                .and_then(|t| t.find(':').map(|i| &t[i + 1..]))
                .is_some_and(|rest| {
                    !rest.starts_with(['-', '=', '?', '+'])
                        && rest
                            .trim_end_matches('}')
                            .chars()
                            .any(|c| c.is_ascii_alphabetic() || c == '$')
                });
        if arithmetic && !text.contains("[@]") && !text.contains("[*]") {
            self.opaque(format!(
                "`{}` evaluates an index or offset arithmetically, which can run commands",
                truncate(text, 40)
            ));
        }
        if kids
            .windows(2)
            .any(|w| w[0] == "@" && matches!(w[1], "P" | "A" | "a" | "K"))
        {
            self.opaque(format!(
                "`{}` expands a prompt string, which can run commands",
                self.text(n)
            ));
        }
    }

    fn children(&mut self, n: Node<'_>, depth: usize) {
        let mut cursor = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut cursor).collect();
        for c in kids {
            self.visit(c, depth + 1);
        }
    }

    /// An unquoted here-document's body is expanded like a double-quoted
    /// string: its substitutions run. tree-sitter misses some of them
    /// (backquotes, `<<-` bodies), so besides its parse the body's
    /// substitutions are found by a scan of its text and read again.
    fn heredoc(&mut self, n: Node<'_>, depth: usize) {
        let mut cursor = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut cursor).collect();
        let start = kids
            .iter()
            .find(|c| c.kind() == "heredoc_start")
            .map(|c| self.text(*c))
            .unwrap_or("");
        let quoted = start.contains(['\'', '"', '\\']);
        // A delimiter quoted only in part (`E"O"F`) or as `$'EOF'`: bash
        // ends the body at the unquoted word, the grammar does not.
        let whole = |q: char| {
            start.len() >= 2
                && start.starts_with(q)
                && start.ends_with(q)
                && start[1..start.len() - 1].chars().all(|c| c != q)
        };
        if quoted
            && !(whole('\'')
                || whole('"')
                || (start.starts_with('\\') && !start[1..].contains(['\'', '"', '\\'])))
        {
            self.unreadable(format!(
                "the here-document delimiter `{}` is quoted in a way candor does not read",
                truncate(start, 20)
            ));
        }
        for c in kids {
            if c.kind() == "heredoc_body" && !quoted {
                for code in substitutions(self.text(c)) {
                    let inner = parse_nested(&code, self.nesting + 1);
                    self.absorb(inner);
                }
            }
            self.visit(c, depth + 1);
        }
    }

    /// The text a command reads on its input from a here-document or a
    /// here-string (`bash <<EOF … EOF`, `sh <<< 'cmd'`).
    fn stdin_of(&self, command: Node<'_>) -> Option<String> {
        let parent = command
            .parent()
            .filter(|p| p.kind() == "redirected_statement")?;
        let mut cursor = parent.walk();
        let kids: Vec<Node<'_>> = parent.children(&mut cursor).collect();
        for r in kids {
            match r.kind() {
                "heredoc_redirect" => {
                    let mut c2 = r.walk();
                    let body = r
                        .children(&mut c2)
                        .find(|c| c.kind() == "heredoc_body")
                        .map(|b| self.text(b).to_owned());
                    return Some(body.unwrap_or_default());
                }
                "herestring_redirect" => {
                    let word = r.named_child(0).map(|w| self.word(w))?;
                    return word.text();
                }
                _ => {}
            }
        }
        None
    }

    /// Takes in what a re-read part of the line runs.
    fn absorb(&mut self, inner: Script) {
        for mut c in inner.commands {
            c.substituted = true;
            self.out.commands.push(c);
        }
        self.out.redirects.extend(inner.redirects);
        self.out.assigned.extend(inner.assigned);
        self.out.dirs.extend(inner.dirs);
        for o in inner.opaque {
            self.opaque(o.reason);
        }
        if let Some(why) = inner.unreadable {
            self.unreadable(why);
        }
    }

    fn arithmetic(&mut self, n: Node<'_>) {
        if has_kind(
            n,
            &[
                "variable_name",
                "simple_expansion",
                "expansion",
                "subscript",
                "string",
                "raw_string",
                "word",
            ],
        ) {
            self.opaque(format!(
                "`{}` evaluates variables arithmetically, which can run commands",
                self.text(n).chars().take(40).collect::<String>()
            ));
        }
    }

    fn test_arithmetic(&mut self, n: Node<'_>) {
        let text = self.text(n);
        let evaluates = if text.starts_with("[[") {
            ["-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"]
                .iter()
                .any(|op| text.contains(op))
        } else {
            text.contains(" -v ")
        };
        if evaluates {
            self.opaque(format!(
                "`{}` evaluates variables or array subscripts, which can run commands",
                text.chars().take(40).collect::<String>()
            ));
        }
    }

    fn redirect(&mut self, n: Node<'_>) {
        let Some(dest) = n.child_by_field_name("destination") else {
            return;
        };
        let mut cursor = n.walk();
        let op = n
            .children(&mut cursor)
            .find(|c| !c.is_named())
            .map(|c| self.text(c).to_owned())
            .unwrap_or_default();
        let target = self.word(dest);
        let writes = match op.as_str() {
            ">" | ">>" | "&>" | "&>>" | ">|" => true,
            ">&" | "<&" | "<&-" | ">&-" => {
                // `2>&1`, `>&-`: a descriptor, not a file.
                match target.text() {
                    Some(t) if t.chars().all(|c| c.is_ascii_digit()) || t == "-" => return,
                    _ => op.starts_with('>'),
                }
            }
            "<" => false,
            _ => true,
        };
        if let Some(t) = target.text()
            && matches!(
                t.as_str(),
                "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
            )
        {
            return;
        }
        self.out.redirects.push(Redirect { target, writes });
    }

    fn command(&mut self, n: Node<'_>, depth: usize) {
        let mut words = Vec::new();
        let mut assignments = Vec::new();
        let mut cursor = n.walk();
        let kids: Vec<(Option<&str>, Node<'_>)> = n
            .children(&mut cursor)
            .enumerate()
            .map(|(i, c)| (n.field_name_for_child(i as u32), c))
            .collect();
        for (field, c) in &kids {
            match (field, c.kind()) {
                (Some("name"), _) => words.push(self.word(*c)),
                (Some("argument"), _) => words.push(self.word(*c)),
                (_, "variable_assignment") => {
                    let name = c
                        .child_by_field_name("name")
                        .map(|v| self.text(v).to_owned())
                        .unwrap_or_default();
                    let value = c
                        .child_by_field_name("value")
                        .map(|v| self.word(v))
                        .unwrap_or_default();
                    assignments.push((name, value));
                }
                _ => {}
            }
        }
        // The children are walked for substitutions, redirects and the
        // assignments' names (recorded once, by `visit`).
        for (_, c) in &kids {
            self.visit(*c, depth + 1);
        }
        // `visit` recorded prefix assignments in `assigned`; the command
        // keeps its own list, so take them back out of the script's.
        for (name, _) in &assignments {
            if let Some(i) = self.out.assigned.iter().rposition(|a| a == name) {
                self.out.assigned.remove(i);
            }
        }
        if words.is_empty() {
            return;
        }
        self.stdin_code = self.stdin_of(n);
        let command = self.build(words, assignments, 0);
        self.stdin_code = None;
        self.out.commands.push(command);
    }

    /// Makes a command from its words, looking through wrappers.
    fn build(
        &mut self,
        words: Vec<Word>,
        assignments: Vec<(String, Word)>,
        wrapped: usize,
    ) -> Command {
        let mut command = Command {
            words,
            assignments,
            runs: Runs::Itself,
            wrapper: None,
            loose: false,
            substituted: self.substitution > 0,
        };
        let Some(name) = command.basename() else {
            self.opaque(format!(
                "`{}` runs a command whose name is only known when it runs",
                truncate(&command.display(), 60)
            ));
            return command;
        };
        self.builtin(&command, &name);
        if self.alias(&mut command, &name) {
            return command;
        }
        // A reserved word or an assignment where a command name should be:
        // the grammar misread the line (`time { …; }`, `time A=1 cmd`).
        if RESERVED.contains(&name.as_str())
            || name.split_once('=').is_some_and(|(n, _)| is_name(n))
        {
            self.unreadable(format!(
                "the shell parser read `{}` as a command name",
                truncate(&name, 30)
            ));
            return command;
        }
        let Some(wrapper) = wrapper(&name) else {
            return command;
        };
        if wrapped >= MAX_WRAPPERS {
            self.unreadable(format!(
                "the command is wrapped in more than {MAX_WRAPPERS} commands, more than candor reads"
            ));
            return command;
        }
        command.wrapper = Some(wrapper.kind);
        let inner = (wrapper.inner)(&command.words[1..]);
        self.unwrap(&mut command, &name, inner, wrapped);
        command
    }

    /// What a builtin does besides running: the directory `cd` enters, the
    /// variables it assigns, the aliases it defines, and what bash
    /// evaluates in it.
    fn builtin(&mut self, command: &Command, name: &str) {
        if matches!(name, "cd" | "pushd") {
            let dir = command.words[1..]
                .iter()
                .find(|w| {
                    !w.as_lit()
                        .is_some_and(|t| t.starts_with('-') && t.len() > 1)
                })
                .cloned()
                // `cd` alone goes home.
                .unwrap_or_else(|| Word::lit("~"));
            self.out.dirs.push(dir);
        }
        // Builtins that assign the variables they name, or evaluate them.
        let args: Vec<String> = command.words[1..].iter().map(Word::display).collect();
        let evaluates = match name {
            "let" => Some("evaluates arithmetic, which can run commands"),
            "mapfile" | "readarray" if args.iter().any(|a| a.starts_with("-C")) => {
                Some("runs a callback as shell code")
            }
            "read" | "printf" | "mapfile" | "readarray" | "unset" | "getopts"
                if args.iter().any(|a| a.contains('[')) =>
            {
                Some("assigns an array element, whose index bash evaluates")
            }
            _ => None,
        };
        if let Some(why) = evaluates {
            self.opaque(format!("`{}` {why}", truncate(&command.display(), 60)));
        }
        match name {
            "read" | "mapfile" | "readarray" | "getopts" => self
                .out
                .assigned
                .extend(args.iter().filter(|a| is_name(a)).cloned()),
            "printf" => {
                if let Some(i) = args.iter().position(|a| a == "-v") {
                    self.out.assigned.extend(args.get(i + 1).cloned());
                }
                // `-vNAME`
                self.out.assigned.extend(
                    args.iter()
                        .filter_map(|a| a.strip_prefix("-v").filter(|n| !n.is_empty()))
                        .map(str::to_owned),
                );
            }
            "test" | "[" if args.iter().any(|a| a == "-v") => self.opaque(format!(
                "`{}` evaluates an array subscript, which can run commands",
                truncate(&command.display(), 60)
            )),
            "hash" | "enable" => self.opaque(format!(
                "`{}` changes which program a name runs",
                truncate(&command.display(), 60)
            )),
            _ => {}
        }
        if name == "alias" {
            for w in command.words[1..].iter().filter_map(Word::text) {
                if let Some((n, v)) = w.split_once('=') {
                    self.aliases.push((n.to_owned(), v.to_owned()));
                }
            }
        }
    }

    /// A command named by an alias defined earlier in the line: its value
    /// runs (`true`: the command is read, or unreadable).
    fn alias(&mut self, command: &mut Command, name: &str) -> bool {
        if self.aliases.iter().any(|(n, _)| n == name) && self.alias_uses >= MAX_ALIAS_USES {
            self.unreadable(format!(
                "the line uses its aliases more than {MAX_ALIAS_USES} times, more than candor reads"
            ));
            return true;
        }
        let Some((_, value)) = self.aliases.iter().rev().find(|(n, _)| n == name) else {
            return false;
        };
        self.alias_uses += 1;
        let rest: Vec<String> = command.words[1..].iter().map(quoted_display).collect();
        let code = format!("{value} {}", rest.join(" "));
        command.wrapper = Some(WrapperKind::Interpreter);
        command.runs = Runs::Script(Box::new(parse_nested(&code, self.nesting + 1)));
        true
    }

    /// What a wrapper (`name`) runs: `inner`, read from its arguments.
    fn unwrap(&mut self, command: &mut Command, name: &str, inner: Inner, wrapped: usize) {
        let rest = &command.words[1..];
        match inner {
            Inner::Command {
                at,
                assignments,
                extra_args,
            } => {
                if at >= rest.len() {
                    return;
                }
                let mut inner_words: Vec<Word> = rest[at..].to_vec();
                if extra_args {
                    inner_words.push(Word::any());
                }
                let inner = self.build(inner_words, assignments, wrapped + 1);
                command.runs = Runs::Command(Box::new(inner));
            }
            Inner::Exec { words } => {
                if words.is_empty() {
                    return;
                }
                let inner = self.build(words, Vec::new(), wrapped + 1);
                command.runs = Runs::Command(Box::new(inner));
            }
            Inner::Code(Some(code)) => {
                let script = parse_nested(&code, self.nesting + 1);
                command.runs = Runs::Script(Box::new(script));
            }
            Inner::Code(None) => {
                command.runs = Runs::Unknown {
                    reason: format!(
                        "`{}` runs shell code that is only known when it runs",
                        truncate(&command.display(), 60)
                    ),
                    anything: true,
                };
            }
            Inner::Stdin if self.stdin_code.is_some() => {
                let code = self.stdin_code.take().unwrap_or_default();
                let script = parse_nested(&code, self.nesting + 1);
                command.runs = Runs::Script(Box::new(script));
            }
            Inner::Stdin => {
                command.runs = Runs::Unknown {
                    reason: format!(
                        "`{}` runs shell code from its input, which candor cannot read",
                        truncate(&command.display(), 60)
                    ),
                    anything: true,
                };
            }
            Inner::File(file) => {
                command.runs = Runs::Unknown {
                    reason: format!("`{}` runs {} as shell code", name, file.display()),
                    anything: false,
                };
            }
            Inner::None => {}
            Inner::Lost => command.loose = true,
        }
    }

    /// A word's value.
    fn word(&self, n: Node<'_>) -> Word {
        match n.kind() {
            "command_name" => match n.named_child(0) {
                Some(c) => self.word(c),
                None => Word::lit(self.text(n)),
            },
            "word" => unquoted(self.text(n)),
            "number" => Word::lit(self.text(n)),
            "raw_string" => {
                let t = self.text(n);
                Word::lit(t.get(1..t.len().saturating_sub(1)).unwrap_or(""))
            }
            "ansi_c_string" => {
                let t = self.text(n);
                match t.get(2..t.len().saturating_sub(1)).and_then(ansi_c) {
                    Some(s) => Word::lit(&s),
                    None => Word::any(),
                }
            }
            "string" | "translated_string" => {
                let mut w = Word::default();
                let mut cursor = n.walk();
                let mut any_piece = false;
                let mut at = n.start_byte();
                for c in n.children(&mut cursor) {
                    // Text between two children (a line break the grammar
                    // keeps in no node) is part of the string.
                    if c.start_byte() > at
                        && let Some(gap) = self.src.get(at..c.start_byte())
                    {
                        w.push_lit(&unescape_double(gap));
                        any_piece = true;
                    }
                    at = c.end_byte();
                    match c.kind() {
                        "\"" | "$\"" => {}
                        "string_content" => {
                            w.push_lit(&unescape_double(self.text(c)));
                            any_piece = true;
                        }
                        _ if c.is_named() => {
                            w.push_any();
                            any_piece = true;
                        }
                        _ => {
                            w.push_lit(self.text(c));
                            any_piece = true;
                        }
                    }
                }
                if !any_piece {
                    w.push_lit("");
                }
                w
            }
            "concatenation" => {
                let mut w = Word::default();
                let mut cursor = n.walk();
                let mut raw = String::new();
                for c in n.children(&mut cursor) {
                    if c.kind() == "word" {
                        raw.push_str(self.text(c));
                    } else {
                        raw.push('\u{0}');
                    }
                    w.extend(self.word(c));
                }
                if brace_expands(&raw) { Word::any() } else { w }
            }
            _ => Word::any(),
        }
    }
}

fn has_kind(n: Node<'_>, kinds: &[&str]) -> bool {
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        if kinds.contains(&n.kind()) {
            return true;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    false
}

/// `s` cut to `max` characters, with an ellipsis when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    crate::text::shorten(s, max + 1)
}

/// An unquoted word: backslashes removed, globs and brace expansions as
/// [`Piece::Any`].
fn unquoted(raw: &str) -> Word {
    if brace_expands(raw) {
        return Word::any();
    }
    let mut w = Word::default();
    let mut lit = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => lit.push(n),
            },
            '*' | '?' => {
                w.push_lit(&std::mem::take(&mut lit));
                w.push_any();
            }
            '[' if raw.contains(']') => {
                w.push_lit(&std::mem::take(&mut lit));
                w.push_any();
                for n in chars.by_ref() {
                    if n == ']' {
                        break;
                    }
                }
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() || w.0.is_empty() {
        w.push_lit(&lit);
    }
    w
}

/// Whether unquoted text has a brace expansion (`{a,b}`, `{1..3}`).
fn brace_expands(raw: &str) -> bool {
    let Some(open) = raw.find('{') else {
        return false;
    };
    let rest = &raw[open + 1..];
    match rest.find('}') {
        Some(close) => {
            let inner = &rest[..close];
            inner.contains(',') || inner.contains("..")
        }
        None => false,
    }
}

/// Inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\`
/// and a newline.
fn unescape_double(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes the inside of `$'…'`; `None` for an escape it cannot decode.
fn ansi_c(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, max: usize| {
            let mut v = 0u32;
            let mut n = 0;
            while n < max {
                match chars.peek().and_then(|c| c.to_digit(16)) {
                    Some(d) => {
                        v = v * 16 + d;
                        chars.next();
                        n += 1;
                    }
                    None => break,
                }
            }
            (n > 0).then_some(v)
        };
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => out.push(char::from_u32(hex(&mut chars, 2)?)?),
            'u' => out.push(char::from_u32(hex(&mut chars, 4)?)?),
            'U' => out.push(char::from_u32(hex(&mut chars, 8)?)?),
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v)?);
            }
            'c' => {
                let x = chars.next()?;
                out.push(char::from_u32((x as u32) & 0x1f)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// bash's reserved words: never a command's name in a correct parse.
const RESERVED: [&str; 20] = [
    "{", "}", "!", "[[", "]]", "if", "then", "elif", "else", "fi", "for", "while", "until", "do",
    "done", "case", "esac", "select", "function", "in",
];

/// Where a wrapper's command starts.
enum Inner {
    /// At this index of the wrapper's arguments, with these assignments
    /// (`env X=1 cmd`); `extra_args`: the wrapper adds arguments (`xargs`).
    Command {
        at: usize,
        assignments: Vec<(String, Word)>,
        extra_args: bool,
    },
    /// These words (`find -exec rm {} ;`).
    Exec { words: Vec<Word> },
    /// Shell code in a string (`None`: not static).
    Code(Option<String>),
    /// Shell code from standard input.
    Stdin,
    /// Shell code from a file.
    File(Word),
    /// Runs nothing else (`command -v x`, `sudo -l`).
    None,
    /// Options candor does not know: the inner command cannot be found.
    Lost,
}

struct Wrapper {
    kind: WrapperKind,
    inner: fn(&[Word]) -> Inner,
}

fn wrapper(name: &str) -> Option<Wrapper> {
    use WrapperKind::*;
    let (kind, inner): (WrapperKind, fn(&[Word]) -> Inner) = match name {
        "env" => (Transparent, env_inner),
        "command" => (Transparent, |a| options(a, "", &["-v", "-V"], None)),
        "builtin" | "nohup" | "coproc" | "unbuffer" | "chronic" | "catchsegv" | "busybox" => {
            (Transparent, |a| options(a, "", &[], None))
        }
        "exec" => (Transparent, |a| options(a, "a", &[], None)),
        "time" => (Transparent, |a| options(a, "fo", &[], None)),
        "nice" => (Transparent, nice_inner),
        "ionice" => (Transparent, |a| options(a, "cnp", &[], None)),
        "stdbuf" => (Transparent, |a| options(a, "ioe", &[], None)),
        "setsid" => (Transparent, |a| options(a, "", &[], None)),
        "timeout" => (Transparent, |a| options(a, "sk", &[], Some(1))),
        "chroot" => (Elevating, |a| options(a, "", &[], Some(1))),
        "sudo" => (Elevating, sudo_inner),
        "doas" => (Elevating, |a| options(a, "uC", &[], None)),
        "su" | "runuser" => (Elevating, su_inner),
        "xargs" => (Driver, xargs_inner),
        "find" => (Driver, find_inner),
        "flock" => (Transparent, flock_inner),
        "watch" => (Interpreter, watch_inner),
        "eval" => (Interpreter, eval_inner),
        "alias" => (Interpreter, alias_inner),
        "mapfile" | "readarray" => (Interpreter, |a| {
            match a.iter().position(|w| w.as_lit() == Some("-C")) {
                Some(i) => Inner::Code(a.get(i + 1).and_then(Word::text)),
                None => Inner::None,
            }
        }),
        "trap" => (Interpreter, |a| {
            match a.iter().find(|w| w.as_lit() != Some("--")) {
                Some(w) => match w.text() {
                    Some(t) if t == "-p" || t == "-l" => Inner::None,
                    t => Inner::Code(t),
                },
                None => Inner::None,
            }
        }),
        "source" | "." => (Interpreter, |a| match a.first() {
            Some(w) if reads_input(w) => Inner::Stdin,
            Some(w) => Inner::File(w.clone()),
            None => Inner::None,
        }),
        "taskset" => (Transparent, |a| match a.first().and_then(Word::as_lit) {
            Some(t) if t.starts_with('-') && t.contains('p') => Inner::None,
            _ => options(a, "", &[], Some(1)),
        }),
        "chrt" => (Transparent, |a| options(a, "T", &[], Some(1))),
        "setpriv" | "unshare" | "nsenter" | "firejail" | "bwrap" | "systemd-run" | "prlimit" => {
            (Transparent, |_| Inner::Lost)
        }
        "script" => (Interpreter, |a| {
            for (i, w) in a.iter().enumerate() {
                match w.as_lit() {
                    Some("-c" | "--command") => {
                        return Inner::Code(a.get(i + 1).and_then(Word::text));
                    }
                    Some(t) if t.starts_with("-") && t.ends_with('c') && !t.starts_with("--") => {
                        return Inner::Code(a.get(i + 1).and_then(Word::text));
                    }
                    _ => {}
                }
            }
            Inner::None
        }),
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" | "rbash" => {
            (Interpreter, shell_inner)
        }
        _ => return None,
    };
    Some(Wrapper { kind, inner })
}

/// Skips a wrapper's options: `with_arg` are the letters of short options
/// that take an argument; `stop` are options after which nothing runs;
/// `positional` is how many arguments come before the command.
fn options(args: &[Word], with_arg: &str, stop: &[&str], positional: Option<usize>) -> Inner {
    options_long(args, with_arg, &[], stop, positional)
}

/// [`options`], with the long options (`--max-args N`) that take the next
/// word as their value.
fn options_long(
    args: &[Word],
    with_arg: &str,
    long_with_arg: &[&str],
    stop: &[&str],
    positional: Option<usize>,
) -> Inner {
    let mut i = 0;
    while i < args.len() {
        let Some(t) = args[i].text() else {
            return Inner::Lost;
        };
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if stop.contains(&t.as_str()) {
            return Inner::None;
        }
        if let Some(long) = t.strip_prefix("--") {
            // `--opt=value` carries its value; a bare long option that
            // takes one and is not known here: the command cannot be found.
            if long_with_arg.contains(&long) {
                i += 2;
                continue;
            }
            if !long.contains('=') && !known_flag(long) {
                return Inner::Lost;
            }
            i += 1;
            continue;
        }
        let letters: Vec<char> = t.chars().skip(1).collect();
        if letters.iter().all(|c| c.is_ascii_digit()) {
            i += 1; // `nice -10`
            continue;
        }
        let mut takes = false;
        for (k, c) in letters.iter().enumerate() {
            if with_arg.contains(*c) {
                takes = k + 1 == letters.len();
                break;
            }
        }
        i += if takes { 2 } else { 1 };
    }
    let at = i + positional.unwrap_or(0);
    Inner::Command {
        at,
        assignments: Vec::new(),
        extra_args: false,
    }
}

/// Long options without a value that wrappers commonly take.
fn known_flag(long: &str) -> bool {
    matches!(
        long,
        "preserve-status"
            | "foreground"
            | "verbose"
            | "ignore-environment"
            | "null"
            | "no-run-if-empty"
            | "interactive"
            | "exit"
            | "preserve-env"
            | "login"
            | "shell"
            | "non-interactive"
            | "fork"
            | "wait"
            | "ctty"
            | "nonblock"
            | "shared"
            | "exclusive"
            | "unlock"
            | "close"
    )
}

fn env_inner(args: &[Word]) -> Inner {
    let mut i = 0;
    let mut assignments = Vec::new();
    while i < args.len() {
        let Some(t) = args[i].text() else {
            return Inner::Lost;
        };
        if t == "--" {
            i += 1;
            continue;
        }
        if t.starts_with("-S") || t.starts_with("--split-string") {
            // `env -S 'cmd args'` splits a string into a command line.
            let code = if t.len() > 2 && t.starts_with("-S") {
                Some(t[2..].to_owned())
            } else {
                args.get(i + 1).and_then(Word::text)
            };
            return Inner::Code(code);
        }
        if t == "-" {
            // `env -` is `env -i`.
            i += 1;
            continue;
        }
        if t.starts_with('-') && !t.starts_with("--") && t.contains('S') {
            // `-iS'cmd args'`: the split string follows the S.
            let rest = t
                .split_once('S')
                .map(|(_, r)| r.to_owned())
                .unwrap_or_default();
            let code = if rest.is_empty() {
                args.get(i + 1).and_then(Word::text)
            } else {
                Some(rest)
            };
            return Inner::Code(code);
        }
        if t.starts_with('-') {
            let takes = matches!(t.as_str(), "-u" | "-C" | "--unset" | "--chdir");
            i += if takes { 2 } else { 1 };
            continue;
        }
        // GNU env takes every word with a `=` as an assignment.
        match t.split_once('=') {
            Some((name, value)) => {
                assignments.push((name.to_owned(), Word::lit(value)));
                i += 1;
            }
            None => break,
        }
    }
    Inner::Command {
        at: i,
        assignments,
        extra_args: false,
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn nice_inner(args: &[Word]) -> Inner {
    options(args, "n", &[], None)
}

fn sudo_inner(args: &[Word]) -> Inner {
    // -l, -v, -k, … run nothing; the last letter of a cluster may take the
    // next word (`-nu root`).
    let mut i = match options(
        args,
        "ugCDhprtTUR",
        &["-l", "-v", "-k", "-K", "-V", "-h", "-e"],
        None,
    ) {
        Inner::Command { at, .. } => at,
        other => return other,
    };
    let mut assignments = Vec::new();
    while let Some(t) = args.get(i).and_then(Word::text) {
        match t.split_once('=') {
            Some((name, value)) if is_name(name) => {
                assignments.push((name.to_owned(), Word::lit(value)));
                i += 1;
            }
            _ => break,
        }
    }
    Inner::Command {
        at: i,
        assignments,
        extra_args: false,
    }
}

fn su_inner(args: &[Word]) -> Inner {
    for (i, w) in args.iter().enumerate() {
        match w.text().as_deref() {
            Some("-c" | "--command") => return Inner::Code(args.get(i + 1).and_then(Word::text)),
            Some(t) if t.starts_with("--command=") => {
                return Inner::Code(Some(t["--command=".len()..].to_owned()));
            }
            _ => {}
        }
    }
    Inner::Stdin
}

fn xargs_inner(args: &[Word]) -> Inner {
    // -a FILE, -d DELIM, -E EOF, -I REPLACE, -L N, -n N, -P N, -s N take a
    // word unless attached; --replace, --eof and --max-lines take theirs
    // only attached (`=`).
    let long = [
        "arg-file",
        "delimiter",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ];
    match options_long(args, "adEILnPs", &long, &[], None) {
        // xargs alone runs `echo`.
        Inner::Command { at, .. } if at >= args.len() => Inner::None,
        Inner::Command { at, .. } => Inner::Command {
            at,
            assignments: Vec::new(),
            extra_args: true,
        },
        other => other,
    }
}

fn find_inner(args: &[Word]) -> Inner {
    let Some(at) = args.iter().position(|w| {
        matches!(
            w.text().as_deref(),
            Some("-exec" | "-execdir" | "-ok" | "-okdir")
        )
    }) else {
        return Inner::None;
    };
    let words: Vec<Word> = args[at + 1..]
        .iter()
        .take_while(|w| !matches!(w.text().as_deref(), Some(";" | "+")))
        .map(|w| match w.text().as_deref() {
            Some("{}") => Word::any(),
            _ => w.clone(),
        })
        .collect();
    // A second -exec is found by the suffix search of deny rules; allow
    // rules then see the find as loose.
    let more = args[at + 1..]
        .iter()
        .filter(|w| {
            matches!(
                w.text().as_deref(),
                Some("-exec" | "-execdir" | "-ok" | "-okdir")
            )
        })
        .count();
    if more > 0 {
        return Inner::Lost;
    }
    Inner::Exec { words }
}

fn flock_inner(args: &[Word]) -> Inner {
    for (i, w) in args.iter().enumerate() {
        let cluster = w
            .as_lit()
            .is_some_and(|t| t.starts_with('-') && !t.starts_with("--") && t.ends_with('c'));
        if cluster || w.as_lit() == Some("--command") {
            return Inner::Code(args.get(i + 1).and_then(Word::text));
        }
    }
    // flock [options] FILE COMMAND [ARGS]
    match options(args, "wE", &[], Some(1)) {
        Inner::Command { at, .. } if at < args.len() => Inner::Command {
            at,
            assignments: Vec::new(),
            extra_args: false,
        },
        other => other,
    }
}

fn watch_inner(args: &[Word]) -> Inner {
    match options(args, "nqd", &[], None) {
        Inner::Command { at, .. } => {
            let rest: Option<Vec<String>> =
                args[at.min(args.len())..].iter().map(Word::text).collect();
            Inner::Code(rest.map(|r| r.join(" ")))
        }
        other => other,
    }
}

/// `alias name='code' …`: the code runs wherever the name is used.
fn alias_inner(args: &[Word]) -> Inner {
    let values: Option<Vec<String>> = args
        .iter()
        .filter(|w| !w.text().is_some_and(|t| t.starts_with('-')))
        .map(|w| {
            w.text().map(|t| {
                t.split_once('=')
                    .map(|(_, v)| v.to_owned())
                    .unwrap_or_default()
            })
        })
        .collect();
    Inner::Code(values.map(|v| v.join("\n")))
}

fn eval_inner(args: &[Word]) -> Inner {
    let args = match args.first().and_then(Word::as_lit) {
        Some("--") => &args[1..],
        _ => args,
    };
    let words: Option<Vec<String>> = args.iter().map(Word::text).collect();
    Inner::Code(words.map(|w| w.join(" ")))
}

/// `bash [options] -c CODE …`, `bash FILE`, or `bash` reading its input.
fn shell_inner(args: &[Word]) -> Inner {
    let mut i = 0;
    let mut command_mode = false;
    while i < args.len() {
        let Some(t) = args[i].text() else {
            return if command_mode {
                Inner::Code(None)
            } else {
                Inner::Lost
            };
        };
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            i += if matches!(t.as_str(), "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            let letters = &t[1..];
            if letters.contains('c') {
                command_mode = true;
            }
            if letters.contains('s') && t.starts_with('-') && !command_mode {
                // `-s`: the script is read from standard input; the rest
                // are its arguments.
                return Inner::Stdin;
            }
            // -o OPTION and -O OPTION take an argument.
            i += if letters.ends_with('o') || letters.ends_with('O') {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if command_mode {
        return Inner::Code(args.get(i).and_then(Word::text));
    }
    match args.get(i) {
        Some(file) if reads_input(file) => Inner::Stdin,
        Some(file) => Inner::File(file.clone()),
        None => Inner::Stdin,
    }
}

/// Whether a script file named on a command line is really its input (or
/// code only known when it runs): `/dev/stdin`, a descriptor, `<(…)`, a
/// bare number (a descriptor the grammar misread).
fn reads_input(file: &Word) -> bool {
    match file.as_lit() {
        Some(t) => {
            t.starts_with("/dev/")
                || t.starts_with("/proc/")
                || (!t.is_empty() && t.chars().all(|c| c.is_ascii_digit()))
        }
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(line: &str) -> Vec<String> {
        parse(line)
            .all_commands()
            .iter()
            .map(|c| c.display())
            .collect()
    }

    #[test]
    fn every_command_that_can_run_is_listed() {
        assert_eq!(names("ls $(touch M)"), ["touch M", "ls …"]);
        assert_eq!(names("ls `touch M`"), ["touch M", "ls …"]);
        assert_eq!(names("ls \"$(touch M)\""), ["touch M", "ls …"]);
        assert_eq!(names("ls <(touch M)"), ["touch M", "ls …"]);
        assert_eq!(names("X=$(touch M) ls"), ["touch M", "ls"]);
        assert_eq!(
            names("ls 'x\\' ; touch M ; echo 'y'"),
            ["ls 'x\\'", "touch M", "echo y"]
        );
        assert_eq!(names("rm\t-rf victim"), ["rm -rf victim"]);
        assert_eq!(names("\\rm -rf victim"), ["rm -rf victim"]);
        assert_eq!(names("(rm -rf v)"), ["rm -rf v"]);
        assert_eq!(names("{ rm -rf v; }"), ["rm -rf v"]);
        assert_eq!(names("if true; then rm -rf v; fi"), ["true", "rm -rf v"]);
        assert_eq!(names("command rm -rf v"), ["command rm -rf v", "rm -rf v"]);
        assert_eq!(
            names("bash -c 'rm -rf v'"),
            ["bash -c 'rm -rf v'", "rm -rf v"]
        );
        assert_eq!(
            names("sudo -u root env A=1 timeout -s KILL 5 nice -n 3 rm x"),
            [
                "sudo -u root env A=1 timeout -s KILL 5 nice -n 3 rm x",
                "env A=1 timeout -s KILL 5 nice -n 3 rm x",
                "timeout -s KILL 5 nice -n 3 rm x",
                "nice -n 3 rm x",
                "rm x"
            ]
        );
        assert_eq!(
            names("find . -exec rm {} \\;"),
            ["find . -exec rm {} ';'", "rm …"]
        );
        assert_eq!(names("ls | xargs rm -f"), ["ls", "xargs rm -f", "rm -f …"]);
        assert_eq!(names("f() { rm x; }; f"), ["rm x", "f"]);
        assert_eq!(names("r\"m\" x"), ["rm x"]);
        assert_eq!(names("$'\\x72m' x"), ["rm x"]);
    }

    #[test]
    fn what_cannot_be_seen_is_said() {
        assert!(parse("$CMD x").all_commands()[0].name().is_none());
        assert!(!parse("eval \"$X\"").all_opaque().is_empty());
        assert!(!parse("source ./x.sh").all_opaque().is_empty());
        assert!(!parse("curl x | sh").all_opaque().is_empty());
        assert!(parse("echo 'unterminated").unreadable.is_some());
        assert!(parse(&"x".repeat(MAX_COMMAND + 1)).unreadable.is_some());
        assert!(parse("ls -la && git status").all_opaque().is_empty());
        assert!(!parse("echo $((x + 1))").all_opaque().is_empty());
        assert!(parse("echo $((1 + 1))").all_opaque().is_empty());
    }

    #[test]
    fn redirects_and_assignments() {
        let s = parse("ls > out 2>&1 >/dev/null < in; PATH=./evil:$PATH ls; export IFS=x");
        let r: Vec<(String, bool)> = s
            .all_redirects()
            .iter()
            .map(|r| (r.target.display(), r.writes))
            .collect();
        assert_eq!(r, [("out".into(), true), ("in".into(), false)]);
        assert_eq!(s.all_assigned(), ["IFS", "PATH"]);
    }
}
