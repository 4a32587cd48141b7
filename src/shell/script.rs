//! The model of a read command line: [`Script`], its [`Command`]s, their
//! [`Word`]s (after quote removal, [`Piece::Any`] where a value is known
//! only at run time), redirections and what cannot be seen through. Pure
//! data with the queries the policy asks of it; `walk` builds it.

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
    pub(super) fn lit(s: &str) -> Word {
        Word(vec![Piece::Lit(s.to_owned())])
    }

    pub(super) fn any() -> Word {
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

    pub(super) fn push_lit(&mut self, s: &str) {
        if let Some(Piece::Lit(last)) = self.0.last_mut() {
            last.push_str(s);
        } else {
            self.0.push(Piece::Lit(s.to_owned()));
        }
    }

    pub(super) fn push_any(&mut self) {
        if self.0.last() != Some(&Piece::Any) {
            self.0.push(Piece::Any);
        }
    }

    pub(super) fn extend(&mut self, other: Word) {
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

pub(super) fn quoted_display(w: &Word) -> String {
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
