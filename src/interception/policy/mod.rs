//! Permission rules and session modes, evaluated on the effective arguments.
//!
//! Rules use Claude Code's syntax: a bare tool name (`Bash`, `Read`) matches
//! every call of the tool; `Tool(pattern)` narrows it. The full decision
//! procedure, with a conformance table run by a test, is
//! `protocol/permissions.md`; in short:
//!
//! * `Bash(…)` rules are matched against each simple command the line can
//!   run, as [`crate::shell`] reads it (pipelines, lists, subshells,
//!   substitutions, `bash -c` strings, commands behind wrappers; names by
//!   basename too, quotes removed). `npm run test:*` is the legacy prefix
//!   form, `git *` a glob (`*` matches anything), anything else exact. A
//!   deny or ask rule matches if it could match any of those commands,
//!   including what candor cannot see (a dynamic name, `eval "$X"`, a
//!   line it cannot parse); an allow rule runs a line only if it covers
//!   every command and nothing in the line is opaque, assigns `PATH`-like
//!   variables or writes a file no Write/Edit allow rule allows.
//! * Path rules (`Read(…)`, `Edit(…)`, `Write(…)`, `Glob(…)`, `Grep(…)`)
//!   are globs (`*` within a directory, `**` across): `//abs` is absolute,
//!   `/p` is relative to the settings' project, `~/p` to the home
//!   directory, `p` or `./p` to the working directory; a pattern with no
//!   `/` matches at any depth (gitignore's rule). `Edit` rules cover every
//!   tool that edits files; `Read` rules also govern Glob and Grep. A path
//!   is judged as written and as it resolves (symlinks followed): the
//!   stricter answer wins.
//!
//! [`decide`] puts hooks, rules and the mode together in a fixed order
//! (documented in `protocol/hooks.md`): a rewrite can never take a call
//! past a deny rule, because rules see the rewritten arguments.
//!
//! One file per job: `rule` (the grammar), `bash` (Bash coverage),
//! `paths` (paths and protected paths), `view` (what rules look at in a
//! call), `decision` (the order), `grants` (session grants) and `search`
//! (whether the provider's web search is offered).

mod bash;
mod decision;
mod grants;
mod paths;
mod rule;
mod search;
mod view;

#[cfg(test)]
mod tests;

pub use crate::interception::subject::Subject;
pub use crate::mode::Mode;
pub use bash::risky_variable;
pub use decision::{Disposition, HookVerdict, decide};
pub use grants::{grant_for, offer_grant};
pub use paths::protected;
pub use rule::{Anchors, ReadDenies, Rule, Rules};
pub use search::{WEB_SEARCH, search_offered};
