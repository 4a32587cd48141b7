//! Reading a line: [`parse`] walks the syntax tree tree-sitter gives
//! (`parser`) and lists what it runs into a [`Script`], reading nested code
//! (`bash -c`, `eval`, substitutions in here-documents) the same way.

use tree_sitter::Node;

use super::parser;
use super::script::{Command, Opaque, Redirect, Runs, Script, Word, WrapperKind, quoted_display};
use super::words::{ansi_c, brace_expands, is_name, truncate, unescape_double, unquoted};
use super::wrappers::{Inner, RESERVED, wrapper};

/// Commands longer than this are not parsed (they are unreadable: asked).
pub const MAX_COMMAND: usize = 64 * 1024;
/// How deeply `bash -c '…'`, `eval` and `trap` strings are read.
const MAX_NESTING: usize = 6;
/// How deep a syntax tree is walked.
const MAX_DEPTH: usize = 200;
/// How many alias uses in one line are read.
const MAX_ALIAS_USES: usize = 64;
/// How many reasons a line records for being opaque.
const MAX_REASONS: usize = 16;
/// How many wrappers one command may be nested in (`env env env … rm`).
const MAX_WRAPPERS: usize = 32;

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
    if parser::too_many_pending_heredocs(command) {
        script.unreadable = Some(format!(
            "a line opens more than {} here-documents, more than candor reads",
            parser::MAX_PENDING_HEREDOCS
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
    let tree = parser::tree(command);
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
