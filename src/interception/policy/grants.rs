//! Session grants ("Always allow"): the grant a call would get
//! ([`grant_for`]: exactly this line or path, never a pattern) and whether
//! to offer it ([`offer_grant`]: only where it would let the next identical
//! call run).

use std::path::Path;

use super::bash::risky_variable;
use super::decision::{Disposition, HookVerdict, decide};
use super::paths::{Scope, protected, protected_write};
use super::rule::{Rule, Rules};
use super::view::{View, view};
use crate::interception::subject::Subject;
use crate::mode::Mode;
use crate::tools::{Tool, ToolInput};

/// The session grant an "allow always" answer creates: this tool with
/// exactly this command line or path (never a pattern). None when the
/// call cannot be granted: a line with parts candor cannot see, or a
/// protected path.
pub fn grant_for(call: &Subject<'_>, root: &Path, home: Option<&Path>) -> Option<Rule> {
    let scope = Scope::new(root, home);
    let view = view(call, root);
    let known = call.input.tool();
    match &view {
        View::Bash { script, line, .. } => {
            if line.is_empty()
                || !script.all_opaque().is_empty()
                || script.all_assigned().iter().any(|n| risky_variable(n))
                || protected_write(known, &view, &scope).is_some()
            {
                return None;
            }
            Rule::grant(&format!("{}({line})", call.name)).ok()
        }
        View::Paths { targets, .. } => {
            let [path] = targets.as_slice() else {
                return None;
            };
            if known.is_some_and(Tool::edits_files) && protected(path, home).is_some() {
                return None;
            }
            Rule::grant(&format!("{}({})", call.name, path.display())).ok()
        }
        // A WebFetch: this host, as Claude Code's "don't ask again".
        View::Web { host } => Rule::grant(&format!("{}(domain:{host})", call.name)).ok(),
        // An MCP tool: the whole tool, as Claude Code's "don't ask again".
        View::Other(_) if matches!(call.input, ToolInput::Mcp(_)) => {
            Rule::parse(call.name, root, home).ok()
        }
        View::Other(_) => None,
    }
}

/// The session grant to offer as "Always allow" for a call [`decide`]
/// asks about: [`grant_for`]'s, only where it would hold, asked of the same
/// procedure: with it added, the next identical call (the same hooks' say,
/// mode and rules) runs by it. Not under an ask rule, a protected path, an
/// asking hook, or anything else that asks before grants are looked at.
pub fn offer_grant(
    call: Subject<'_>,
    hooks: &HookVerdict,
    mode: Mode,
    rules: &Rules,
    grants: &[Rule],
    root: &Path,
) -> Option<Rule> {
    let grant = grant_for(&call, root, rules.home.as_deref())?;
    let mut with = grants.to_vec();
    with.push(grant.clone());
    match decide(call, hooks, mode, rules, &with, root) {
        Disposition::Run { by } if by.starts_with("grant:") => Some(grant),
        _ => None,
    }
}
