//! The policy file (`CANDOR_POLICY`) and its scripted (declarative) hooks.
//!
//! A policy file gives a session its pre-execute hooks, permission rules
//! and starting mode; its format is in `protocol/hooks.md`:
//!
//! ```json
//! {
//!   "hooks": [
//!     {"id": "rtk", "tool": "Bash", "when": {"command": {"$regex": "^git "}},
//!      "decision": "allow", "reason": "git goes through rtk",
//!      "rewrite": {"command": {"replace": "^git ", "with": "rtk git "}}}
//!   ],
//!   "permissions": {"allow": ["Bash(echo *)"], "ask": [], "deny": ["Bash(rm *)"]},
//!   "mode": "default"
//! }
//! ```
//!
//! Scripted hooks are behaviour-level hooks: they decide and rewrite from
//! the call they are shown, like a real hook, and are what tests and
//! conformance scenarios use to exercise interception.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::policy::{Mode, Rule, Rules};
use super::{
    FinishedCall, HookFailure, HookFuture, Policy, PostHookFuture, PostToolDecision, PostToolHook,
    PreToolDecision, PreToolHook, ProposedCall,
};
use crate::matcher;

/// The policy file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyFile {
    #[serde(default)]
    pub hooks: Vec<ScriptedHook>,
    #[serde(default)]
    pub post_hooks: Vec<ScriptedPostHook>,
    #[serde(default)]
    pub permissions: Permissions,
    /// The starting mode (default: Claude Code's `defaultMode` if set,
    /// else `default`).
    #[serde(default)]
    pub mode: Option<Mode>,
}

/// Rule lists, in Claude Code's syntax.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

impl PolicyFile {
    /// Reads a policy file; the error names the file and the problem.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("the policy file {} cannot be read: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("the policy file {} is not valid: {e}", path.display()))
    }

    /// The policy for a session rooted at `root`.
    pub fn policy(&self, root: &Path, home: Option<&Path>) -> Result<Policy, String> {
        let rules = |list: &[String]| -> Result<Vec<Rule>, String> {
            list.iter().map(|r| Rule::parse(r, root, home)).collect()
        };
        let mut hooks: Vec<Arc<dyn PreToolHook>> = Vec::new();
        for hook in &self.hooks {
            hook.check_valid()?;
            hooks.push(Arc::new(hook.clone()));
        }
        if let Some(bad) = self
            .post_hooks
            .iter()
            .find(|h| !matches!(h.decision.as_str(), "accept" | "block" | "error"))
        {
            return Err(format!(
                "post hook {}: decision must be accept, block or error",
                bad.id
            ));
        }
        Ok(Policy {
            hooks,
            post_hooks: self
                .post_hooks
                .iter()
                .map(|h| Arc::new(h.clone()) as Arc<dyn PostToolHook>)
                .collect(),
            rules: Rules {
                allow: rules(&self.permissions.allow)?,
                ask: rules(&self.permissions.ask)?,
                deny: rules(&self.permissions.deny)?,
                home: home.map(Path::to_owned),
                roots: Vec::new(),
                ..Rules::default()
            },
            mode: self.mode.unwrap_or_default(),
            event_hooks: Vec::new(),
            sandbox: crate::sandbox::Sandbox::default(),
            agent: None,
        })
    }
}

/// What a scripted hook decides when it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedDecision {
    Pass,
    Allow,
    Ask,
    Deny,
    /// The hook fails (an in-process hook that fails denies the call).
    Error,
}

/// A declarative hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedHook {
    pub id: String,
    /// Tool names it applies to: a name, `A|B`, or `*` (default: all).
    #[serde(default)]
    pub tool: Option<String>,
    /// A matcher (see `crate::matcher`) on the input it is shown.
    #[serde(default)]
    pub when: Option<Value>,
    pub decision: ScriptedDecision,
    #[serde(default)]
    pub reason: Option<String>,
    /// `{"input": {...}}` replaces the whole input; otherwise, per field:
    /// `{"set": v}`, `{"replace": regex, "with": text}`, `{"prepend": s}`,
    /// `{"append": s}`.
    #[serde(default)]
    pub rewrite: Option<Map<String, Value>>,
    /// Takes this long to answer.
    #[serde(default)]
    pub delay_ms: u64,
}

impl ScriptedHook {
    fn check_valid(&self) -> Result<(), String> {
        if let Some(rewrite) = &self.rewrite {
            for (field, op) in rewrite {
                if field == "input" {
                    continue;
                }
                let valid = match op.as_object() {
                    Some(o) if o.contains_key("set") => o.len() == 1,
                    Some(o) if o.contains_key("replace") => {
                        let pattern = o["replace"].as_str().unwrap_or("(");
                        Regex::new(pattern).is_ok()
                            && o.get("with").is_some_and(Value::is_string)
                            && o.len() == 2
                    }
                    Some(o) => {
                        o.len() == 1
                            && (o.get("prepend").or(o.get("append"))).is_some_and(Value::is_string)
                    }
                    None => false,
                };
                if !valid {
                    return Err(format!(
                        "hook {}: the rewrite of {field:?} is not one of set, replace+with, prepend, append",
                        self.id
                    ));
                }
            }
        }
        Ok(())
    }

    fn applies(&self, call: &ProposedCall<'_>) -> bool {
        let tool_ok = match self.tool.as_deref() {
            None | Some("*") | Some("") => true,
            Some(list) => list.split('|').any(|t| t.trim() == call.tool),
        };
        tool_ok
            && self
                .when
                .as_ref()
                .is_none_or(|m| matcher::check(m, Some(call.input)).is_ok())
    }

    fn rewritten(&self, input: &Value) -> Option<Value> {
        let rewrite = self.rewrite.as_ref()?;
        if let Some(whole) = rewrite.get("input") {
            return Some(whole.clone());
        }
        let mut out = input.clone();
        for (field, op) in rewrite {
            let current = input.get(field).and_then(Value::as_str).unwrap_or("");
            let new = if let Some(v) = op.get("set") {
                v.clone()
            } else if let (Some(p), Some(with)) = (
                op.get("replace").and_then(Value::as_str),
                op.get("with").and_then(Value::as_str),
            ) {
                let re = matcher::regex(p).ok()?;
                Value::String(re.replace(current, with).into_owned())
            } else if let Some(p) = op.get("prepend").and_then(Value::as_str) {
                Value::String(format!("{p}{current}"))
            } else if let Some(a) = op.get("append").and_then(Value::as_str) {
                Value::String(format!("{current}{a}"))
            } else {
                continue;
            };
            if let Some(obj) = out.as_object_mut() {
                obj.insert(field.clone(), new);
            }
        }
        Some(out)
    }
}

impl PreToolHook for ScriptedHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn check<'a>(&'a self, call: ProposedCall<'a>) -> HookFuture<'a> {
        Box::pin(async move {
            if self.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
            }
            if !self.applies(&call) {
                return Ok(PreToolDecision::Pass { rewrite: None });
            }
            let rewrite = self.rewritten(call.input);
            let reason = self.reason.clone();
            Ok(match self.decision {
                ScriptedDecision::Pass => PreToolDecision::Pass { rewrite },
                ScriptedDecision::Allow => PreToolDecision::Allow { reason, rewrite },
                ScriptedDecision::Ask => PreToolDecision::Ask { reason, rewrite },
                ScriptedDecision::Deny => PreToolDecision::Deny {
                    reason: reason.unwrap_or_else(|| format!("blocked by {}", self.id)),
                },
                ScriptedDecision::Error => {
                    return Err(HookFailure::closed(
                        reason.unwrap_or_else(|| "scripted failure".into()),
                    ));
                }
            })
        })
    }

    fn applies_to(&self, call: &ProposedCall<'_>) -> bool {
        self.applies(call)
    }
}

/// A declarative post-execute hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedPostHook {
    pub id: String,
    /// Tool names it applies to: a name, `A|B`, or `*` (default: all).
    #[serde(default)]
    pub tool: Option<String>,
    /// A matcher on `{"input": …, "output": "…", "status": "completed"|…}`.
    #[serde(default)]
    pub when: Option<Value>,
    /// `accept` (with `context` for the model), `block` (with `reason`), or `error`.
    pub decision: String,
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

impl PostToolHook for ScriptedPostHook {
    fn id(&self) -> &str {
        &self.id
    }

    fn applies_to(&self, call: &FinishedCall<'_>) -> bool {
        let tool_ok = match self.tool.as_deref() {
            None | Some("*") | Some("") => true,
            Some(list) => list.split('|').any(|t| t.trim() == call.tool),
        };
        let view =
            serde_json::json!({"input": call.input, "output": call.output, "status": call.status});
        tool_ok
            && self
                .when
                .as_ref()
                .is_none_or(|m| matcher::check(m, Some(&view)).is_ok())
    }

    fn after<'a>(&'a self, _call: FinishedCall<'a>) -> PostHookFuture<'a> {
        Box::pin(async move {
            match self.decision.as_str() {
                "accept" => Ok(PostToolDecision::Accept {
                    context: self.context.clone(),
                    quiet: false,
                }),
                "block" => Ok(PostToolDecision::Block {
                    reason: self
                        .reason
                        .clone()
                        .unwrap_or_else(|| format!("blocked by {}", self.id)),
                }),
                "error" => Err(self
                    .reason
                    .clone()
                    .unwrap_or_else(|| "scripted failure".into())),
                other => Err(format!("unknown decision {other:?}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(v: Value) -> ScriptedHook {
        serde_json::from_value(v).unwrap()
    }

    fn call<'a>(tool: &'a str, input: &'a Value) -> ProposedCall<'a> {
        // Scripted hooks match on the payload; the typed subject is not
        // theirs to read.
        let typed = crate::tools::ToolInput::parse(
            crate::tools::Tool::Bash,
            &serde_json::json!({"command": "true"}),
        )
        .unwrap();
        ProposedCall {
            id: "t",
            tool,
            input,
            subject: crate::interception::Subject {
                name: tool,
                input: Box::leak(Box::new(typed)),
                spelled: None,
                mcp: None,
            },
            original: input,
            cwd: Path::new("/p"),
            mode: Mode::Default,
            asides: Box::leak(Box::default()),
            agent: None,
        }
    }

    #[tokio::test]
    async fn rewrites_fields_keeping_the_others() {
        let h = hook(
            json!({"id": "rtk", "tool": "Bash", "when": {"command": {"$regex": "^git "}}, "decision": "allow",
                            "rewrite": {"command": {"replace": "^git ", "with": "rtk git "}}}),
        );
        let input = json!({"command": "git status", "description": "status", "timeout": 5000});
        let d = h.check(call("Bash", &input)).await.unwrap();
        assert_eq!(
            d,
            PreToolDecision::Allow {
                reason: None,
                rewrite: Some(
                    json!({"command": "rtk git status", "description": "status", "timeout": 5000})
                )
            }
        );
        let other = json!({"command": "ls"});
        assert!(!h.applies(&call("Bash", &other)));
        assert!(!h.applies(&call("Read", &input)));
    }

    #[tokio::test]
    async fn errors_and_whole_replacements() {
        let h = hook(json!({"id": "e", "decision": "error", "reason": "boom"}));
        assert_eq!(
            h.check(call("Bash", &json!({}))).await,
            Err(HookFailure::closed("boom"))
        );
        let h =
            hook(json!({"id": "w", "decision": "pass", "rewrite": {"input": {"command": "true"}}}));
        assert_eq!(
            h.check(call("Bash", &json!({"command": "x"})))
                .await
                .unwrap(),
            PreToolDecision::Pass {
                rewrite: Some(json!({"command": "true"}))
            }
        );
    }

    #[test]
    fn bad_files_are_reported() {
        let bad: PolicyFile = serde_json::from_value(json!({"hooks": [{"id": "x", "decision": "allow", "rewrite": {"command": {"explode": 1}}}]})).unwrap();
        assert!(
            bad.policy(Path::new("/p"), None)
                .unwrap_err()
                .contains("hook x")
        );
        let bad: PolicyFile =
            serde_json::from_value(json!({"permissions": {"deny": ["Bash(rm"]}})).unwrap();
        assert!(
            bad.policy(Path::new("/p"), None)
                .unwrap_err()
                .contains("closing parenthesis")
        );
        assert!(serde_json::from_value::<PolicyFile>(json!({"hook": []})).is_err());
    }
}
