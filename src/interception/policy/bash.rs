//! Bash coverage: how far allow rules cover a parsed line (every command,
//! nothing opaque, no risky variable, no write no Write/Edit allow rule
//! allows: [`bash_cover`]). How deny and ask rules match one (any command
//! it could run) is `view`'s `DenyLines`.

use super::paths::{Scope, protected};
use super::rule::{Pattern, Rule, Tok, covers, render};
use crate::shell::{self, Command, Runs, Script, WrapperKind};
use crate::tools::Tool;

/// Variables whose value changes what a command runs or loads.
pub(super) const RISKY_VARIABLES: &[&str] = &[
    "RUSTC",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "GCONV_PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "ZDOTDIR",
    "_JAVA_OPTIONS",
    "PERLLIB",
    "RUBYLIB",
    "NODE_PATH",
    "PATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "CDPATH",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "NODE_OPTIONS",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUSTC_WRAPPER",
    "JAVA_TOOL_OPTIONS",
];

pub(super) const RISKY_PREFIXES: [&str; 7] = [
    "BASH_FUNC_",
    "LD_",
    "DYLD_",
    "GIT_",
    "npm_config_",
    "NPM_CONFIG_",
    "CARGO_",
];

/// Whether assigning this variable can change what runs.
pub fn risky_variable(name: &str) -> bool {
    RISKY_VARIABLES.contains(&name) || RISKY_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Builtins that run nothing and change nothing outside the shell: a line
/// of allowed commands may contain them.
pub(super) const INERT: [&str; 10] = [
    "true", "false", ":", "test", "[", "cd", "pushd", "popd", "echo", "pwd",
];

/// How far allow rules cover a Bash line: the first rule used, and what
/// is not covered.
#[derive(Default)]
pub(super) struct Coverage<'r> {
    pub(super) by: Option<&'r Rule>,
    pub(super) gaps: Vec<String>,
}

impl Coverage<'_> {
    pub(super) fn gap(&mut self, text: String) {
        if !self.gaps.contains(&text) {
            self.gaps.push(text);
        }
    }
}

pub(super) fn bash_cover<'r>(
    rules: &'r [Rule],
    script: &Script,
    scope: &Scope<'_>,
) -> Coverage<'r> {
    let mut cov = Coverage::default();
    script_cover(rules, script, &mut cov);
    for name in script.all_assigned() {
        if risky_variable(name) {
            cov.gap(format!("sets {name}, which changes what runs"));
        }
    }
    let dirs = script.all_dirs();
    for r in script.all_redirects().into_iter().filter(|r| r.writes) {
        let Some(target) = r.target.text() else {
            cov.gap(format!(
                "writes to a file named only when it runs (`{}`)",
                r.target.display()
            ));
            continue;
        };
        let relative_after_cd =
            !target.starts_with('/') && !target.starts_with('~') && !dirs.is_empty();
        let paths = scope.command_paths(&target, &[]);
        let allowed = !relative_after_cd
            && !paths.is_empty()
            && paths.iter().all(|p| {
                protected(p, scope.home).is_none()
                    && rules.iter().any(|rule| {
                        Tool::ALL
                            .into_iter()
                            .filter(|t| t.edits_files())
                            .any(|t| rule.names(t.name()))
                            && matches!(rule.pattern, Some(Pattern::Path(_)))
                            && rule.matches_path(p)
                    })
            });
        if !allowed {
            cov.gap(format!("writes to `{target}`"));
        }
    }
    cov
}

pub(super) fn script_cover<'r>(rules: &'r [Rule], script: &Script, cov: &mut Coverage<'r>) -> bool {
    let mut all = true;
    if let Some(why) = &script.unreadable {
        cov.gap(format!("candor cannot read all of it ({why})"));
        all = false;
    }
    for o in &script.opaque {
        cov.gap(o.reason.clone());
        all = false;
    }
    for c in &script.commands {
        all &= command_cover(rules, c, cov);
    }
    all
}

pub(super) fn command_cover<'r>(rules: &'r [Rule], c: &Command, cov: &mut Coverage<'r>) -> bool {
    let before = cov.gaps.len();
    let Some(name) = c.basename() else {
        cov.gap(format!(
            "runs a command whose name is only known when it runs (`{}`)",
            c.display()
        ));
        return false;
    };
    let direct = if rules.iter().any(Rule::for_commands) {
        let lines = allow_lines(c);
        rules
            .iter()
            .find(|r| r.for_commands() && direct_cover(r, &lines))
    } else {
        None
    };
    if INERT.contains(&name.as_str()) && c.wrapper.is_none() && !c.loose {
        if let Some(r) = direct {
            cov.by.get_or_insert(r);
        }
        return true;
    }
    if let Some(r) = direct {
        cov.by.get_or_insert(r);
    }
    let ok = match (&c.runs, c.wrapper) {
        (Runs::Unknown { reason, .. }, _) => {
            cov.gap(reason.clone());
            return false;
        }
        // A driver whose commands cannot all be found is not covered by a
        // rule for the driver alone.
        _ if c.loose => direct.is_some() && c.wrapper != Some(WrapperKind::Driver),
        // `sudo`, `su -c`: only a rule for the whole command covers it.
        (_, Some(WrapperKind::Elevating)) => direct.is_some(),
        (Runs::Itself, _) => direct.is_some(),
        (Runs::Command(inner), Some(WrapperKind::Driver)) => {
            let inner_ok = command_cover(rules, inner, cov);
            direct.is_some() && inner_ok
        }
        (Runs::Command(inner), _) => direct.is_some() || command_cover(rules, inner, cov),
        (Runs::Script(s), _) => direct.is_some() || script_cover(rules, s, cov),
    };
    if !ok && (direct.is_none() || cov.gaps.len() == before) {
        let shown = shell::truncate(&c.display(), 80);
        cov.gap(if c.substituted {
            format!("runs a command substitution: `{shown}`")
        } else {
            format!("runs `{shown}`, which no allow rule covers")
        });
    }
    ok
}

/// Whether an allow rule covers a command exactly as it will run: the name
/// as written (or its basename when it is a system directory's program).
pub(super) fn direct_cover(rule: &Rule, lines: &[Vec<Tok>]) -> bool {
    let alts = match &rule.pattern {
        None => return true,
        Some(Pattern::Command(alts)) => alts,
        _ => return false,
    };
    lines.iter().any(|l| alts.iter().any(|a| covers(a, l)))
}

/// A command as allow rules see it: as written, quoted (and by basename
/// when it is a system directory's program).
pub(super) fn allow_lines(c: &Command) -> Vec<Vec<Tok>> {
    let name = c.name().unwrap_or_default();
    let system = [
        "/bin/",
        "/usr/bin/",
        "/usr/local/bin/",
        "/sbin/",
        "/usr/sbin/",
    ]
    .iter()
    .any(|d| name.strip_prefix(d).is_some_and(|rest| !rest.contains('/')));
    let mut lines = vec![render(&c.words, false, true)];
    if system {
        lines.push(render(&c.words, true, true));
    }
    lines
}
