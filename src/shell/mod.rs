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
//!
//! One file per layer: `script` is the model (what a line runs), `walk`
//! reads a line (`parse`) and walks its tree, `parser` runs tree-sitter
//! on it (bounded, once per thread), `words` unquotes words, and
//! `wrappers` is the table of commands that run other commands.

mod parser;
mod script;
mod walk;
mod words;
mod wrappers;

pub use script::{Command, Opaque, Piece, Redirect, Runs, Script, Word, WrapperKind, needs_quotes};
pub use walk::{MAX_COMMAND, parse};
pub(crate) use words::truncate;
