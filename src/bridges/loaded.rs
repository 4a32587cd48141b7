//! What a bridge found in the settings it read ([`Loaded`]: hooks, rules,
//! a starting mode, the problems met, the wants that wait for trust), and
//! how it joins a session's `Policy`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::hook;
use crate::event_log::NoticeLevel;
use crate::interception::policy::{Anchors, Mode, Rule};
use crate::interception::session_hooks::EventHook;
use crate::interception::{Policy, PostToolHook, PreToolHook};

/// What a bridge found in the settings it read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub pre_hooks: Vec<Arc<dyn PreToolHook>>,
    pub post_hooks: Vec<Arc<dyn PostToolHook>>,
    pub event_hooks: Vec<Arc<dyn EventHook>>,
    /// Permission rules, in Claude Code's syntax, with the file each came
    /// from (for the notice when one cannot be parsed).
    pub allow: Vec<(String, PathBuf)>,
    pub ask: Vec<(String, PathBuf)>,
    pub deny: Vec<(String, PathBuf)>,
    /// The starting mode the settings ask for.
    pub default_mode: Option<Mode>,
    /// What was wrong, each naming the file (a notice in the session and a
    /// warning on stderr).
    pub problems: Vec<String>,
    /// What was read, and what was left out, for the user (`info` notices).
    pub remarks: Vec<String>,
    /// What the project's own settings add that only trust gives (hooks,
    /// allow rules, a mode that asks less), each as the user is shown it;
    /// listed whether applied (trusted) or not, so that what is applied is
    /// what the user was shown (its digest is what an answer binds to).
    pub wants: Vec<String>,
    /// The paths the project's hooks name (`CommandHook::named_paths`):
    /// trust binds to those that are files of the project, as they are.
    pub scripts: Vec<PathBuf>,
    /// Every hook loaded, described (for `candor doctor`).
    pub summaries: Vec<hook::HookSummary>,
    /// The sandbox settings of each file that has some, in the order read.
    pub sandbox: Vec<crate::sandbox::Layer>,
}

impl Loaded {
    /// Takes the hooks and messages of a read hook table.
    pub fn add(&mut self, table: hook::Table) {
        self.problems.extend(table.problems);
        self.remarks.extend(table.remarks);
        for hook in table.hooks {
            self.summaries.push(hook.summary());
            let event = hook.event();
            let hook = Arc::new(hook);
            match event {
                hook::HookEvent::PreToolUse => self.pre_hooks.push(hook),
                hook::HookEvent::PostToolUse => self.post_hooks.push(hook),
                hook::HookEvent::Session(_) => self.event_hooks.push(hook),
            }
        }
    }

    /// Adds what was loaded to `policy`: hooks after the ones it has, rules
    /// beside its rules, the starting mode unless `mode_set` (the policy
    /// file chose one). Returns the notices for the session (problems as
    /// warnings, also logged; remarks as information).
    pub fn merge_into(
        self,
        policy: &mut Policy,
        root: &Path,
        home: Option<&Path>,
        mode_set: bool,
    ) -> Vec<(NoticeLevel, String)> {
        let mut notices = Vec::new();
        let mut problems = self.problems;
        let mut broken = Vec::new();
        for (list, rules, denies) in [
            (self.allow, &mut policy.rules.allow, false),
            (self.ask, &mut policy.rules.ask, false),
            (self.deny, &mut policy.rules.deny, true),
        ] {
            for (text, file) in list {
                // `/p` in a rule is relative to the project of the settings
                // file: the folder holding its `.claude` (or `.codex`).
                let project = file
                    .parent()
                    .filter(|d| {
                        d.file_name()
                            .is_some_and(|n| n == ".claude" || n == ".codex")
                    })
                    .and_then(Path::parent)
                    .unwrap_or(root);
                let anchors = Anchors {
                    cwd: root,
                    project,
                    home,
                };
                match Rule::parse_in(&text, anchors) {
                    Ok(rule) => rules.push(rule),
                    Err(e) if denies => {
                        broken.push(text.clone());
                        problems.push(format!(
                            "settings {}: the deny rule cannot be read ({e}); until it is fixed, candor asks before every call of the tool it names",
                            file.display()
                        ));
                    }
                    Err(e) => problems.push(format!(
                        "settings {}: the permission rule cannot be used ({e}); skipped",
                        file.display()
                    )),
                }
            }
        }
        for text in broken {
            policy.rules.deny_unreadable(&text);
        }
        policy.hooks.extend(self.pre_hooks);
        policy.post_hooks.extend(self.post_hooks);
        policy.event_hooks.extend(self.event_hooks);
        if !mode_set && let Some(mode) = self.default_mode {
            policy.mode = mode;
        }
        for problem in problems {
            tracing::warn!("{problem}");
            notices.push((NoticeLevel::Warning, problem));
        }
        for remark in self.remarks {
            tracing::info!("{remark}");
            notices.push((NoticeLevel::Info, remark));
        }
        notices
    }
}
