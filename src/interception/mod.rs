//! Where a proposed tool call becomes a settled one.
//!
//! The model proposes a call (tool name + arguments). Before anything is
//! shown or run, [`settle`] decides:
//!
//! 1. candor's own checks: the tool exists and the model's arguments pass
//!    its input schema (else the call is refused by `candor`); passing it
//!    is parsing them into the tool's typed input ([`Tool::accept`]);
//! 2. the pre-execute hooks, in configured order, as a fold: each hook sees
//!    the previous hook's effective input (read-only) and returns a
//!    [`PreToolDecision`]; a rewrite must pass the tool's schema the same
//!    way (else it is a deny naming the hook); the strictest decision wins
//!    (deny > ask > allow > pass) and a deny ends the fold;
//! 3. permission rules and the session mode, on the *effective* arguments
//!    ([`policy::decide`]), so a rewrite can never slip past a deny rule.
//!
//! After a call ran, [`after_execution`] gives the post-execute hooks their
//! say (context for the model, or a block with a reason); what they said is
//! part of the call's `tool/result`.
//!
//! The result is a [`Settled`] call: the effective arguments, the original
//! ones, every hook's say, and the disposition (run, ask, deny). Only a
//! `Settled` call can become an [`ApprovedCall`] (by policy, or by the
//! user's answer bound to the digest of exactly the arguments shown), and
//! tools accept nothing else. Both types keep their fields private: no
//! listener, hook or test can change what runs after it was settled.

pub mod policy;
pub mod policy_file;
pub mod sandbox;
pub mod session_hooks;
pub mod subject;
mod tool_hooks;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use crate::event_log::{HookNote, HookRecord, NoteKind, Verdict};
use crate::tools::{Tool, ToolInput};
use policy::{Disposition, HookVerdict, Mode, Rule, Rules};
pub use subject::Subject;
pub use tool_hooks::{
    Aside, Asides, FinishedCall, HookFailure, HookFuture, PostHookFuture, PostToolDecision,
    PostToolHook, PreToolDecision, PreToolHook, ProposedCall,
};

/// Runs the post-execute hooks that apply, all at once (nothing they say
/// changes what the others are shown); returns what they said, in
/// configured order.
pub async fn after_execution(policy: &Policy, call: FinishedCall<'_>) -> Vec<HookNote> {
    let running = policy
        .post_hooks
        .iter()
        .filter(|hook| hook.applies_to(&call))
        .map(|hook| async move { (hook.id(), hook.after(call).await) });
    futures_util::future::join_all(running)
        .await
        .into_iter()
        .filter_map(|(id, answer)| {
            let (decision, text) = match answer {
                Ok(PostToolDecision::Accept { context: None, .. }) => return None,
                Ok(PostToolDecision::Accept {
                    context: Some(text),
                    quiet,
                }) => (
                    if quiet {
                        NoteKind::Quiet
                    } else {
                        NoteKind::Accept
                    },
                    text,
                ),
                Ok(PostToolDecision::Block { reason }) => (NoteKind::Block, reason),
                Err(e) => (NoteKind::Error, format!("the hook {id} failed: {e}")),
            };
            Some(HookNote {
                hook: id.to_owned(),
                decision,
                text,
            })
        })
        .collect()
}

/// Hooks, rules and mode: everything interception consults.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub hooks: Vec<Arc<dyn PreToolHook>>,
    pub post_hooks: Vec<Arc<dyn PostToolHook>>,
    /// Hooks on prompts, stops, and the session's start and end.
    pub event_hooks: Vec<Arc<dyn session_hooks::EventHook>>,
    pub rules: Rules,
    pub mode: Mode,
    /// The session's sandbox, from the settings (`sandbox::settings`).
    pub sandbox: crate::sandbox::Sandbox,
    /// For a subagent's calls: who it is (hooks are told) and the tools
    /// its definition leaves it (a call of another is refused by candor).
    pub agent: Option<Arc<crate::subagents::Delegate>>,
}

/// Who candor names as the decider for its own checks.
pub const CANDOR: &str = "candor";

/// A call after interception: what will run (if anything), and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    id: String,
    name: String,
    tool: Option<Tool>,
    original: Value,
    effective: Value,
    hooks: Vec<HookRecord>,
    rewritten_by: Vec<String>,
    disposition: Disposition,
    digest: String,
    asides: Vec<Aside>,
    /// The effective arguments as the tool's input: each input (the
    /// model's, a hook's rewrite) is parsed once, when it is checked
    /// against the tool's schema ([`Tool::accept`]), and the last one
    /// accepted is what runs, and what hooks' matchers, the rules, the
    /// grant offer and the preview judge.
    input: Option<ToolInput>,
    /// The path of `input` as written, when it differs from where it leads.
    spelled: Option<PathBuf>,
    /// The MCP tool the name is, when it is not one of candor's.
    mcp: Option<crate::tools::mcp::McpTool>,
    /// For a call that asks: the grant "Always allow" would add, when it
    /// would let the next identical call run ([`policy::offer_grant`]).
    grant: Option<Rule>,
    /// The boundary a Bash call runs in ([`sandbox::confine`]).
    boundary: Option<crate::sandbox::Boundary>,
}

impl Settled {
    /// The session grant an "Always allow" answer adds: offered only where
    /// it would make the next identical call run.
    pub fn grant_offer(&self) -> Option<&Rule> {
        self.grant.as_ref()
    }

    /// The boundary the call runs in, settled with its arguments (a Bash
    /// call; [`sandbox::confine`]).
    pub fn boundary(&self) -> Option<&crate::sandbox::Boundary> {
        self.boundary.as_ref()
    }

    /// What the hooks said besides their decisions, in the order they said it.
    pub fn asides(&self) -> &[Aside] {
        &self.asides
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool name as the model wrote it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments that run (and that the card, the log and a permission
    /// prompt show).
    pub fn effective(&self) -> &Value {
        &self.effective
    }

    /// What the model asked for.
    pub fn original(&self) -> &Value {
        &self.original
    }

    /// Whether hooks changed the arguments.
    pub fn rewritten(&self) -> bool {
        self.effective != self.original
    }

    /// The hooks whose rewrites are in effect, in order.
    pub fn rewritten_by(&self) -> &[String] {
        &self.rewritten_by
    }

    pub fn hooks(&self) -> &[HookRecord] {
        &self.hooks
    }

    pub fn disposition(&self) -> &Disposition {
        &self.disposition
    }

    /// `sha256:` of the tool name and the canonical effective arguments: what
    /// a permission answer binds to.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Refuses a call that cannot work (a file tool whose change cannot be
    /// made, found while preparing its preview). Only ever makes a call
    /// stricter: a refused call stays refused.
    pub fn refuse(&mut self, by: &str, reason: String) {
        if !matches!(self.disposition, Disposition::Deny { .. }) {
            self.disposition = Disposition::Deny {
                by: by.to_owned(),
                reason,
            };
        }
    }

    /// The tool, if candor has it.
    pub fn tool(&self) -> Option<Tool> {
        self.tool
    }

    /// The effective arguments as the tool's input, once they passed its
    /// schema: the value judged, previewed and run (`None` for a call
    /// refused before, whose arguments are not a tool's input).
    pub fn input(&self) -> Option<&ToolInput> {
        self.input.as_ref()
    }

    /// The call as its judges see it (see [`input`](Self::input)).
    pub fn subject(&self) -> Option<Subject<'_>> {
        Some(Subject {
            name: &self.name,
            input: self.input.as_ref()?,
            spelled: self.spelled.as_deref(),
            mcp: self.mcp.as_ref(),
        })
    }

    /// For an MCP tool: the server and tool, as `tool/call` records them.
    pub fn mcp_target(&self) -> Option<crate::event_log::McpTarget> {
        self.mcp.as_ref().map(crate::tools::mcp::target)
    }

    /// Checks `input` against the tool's schema, parsing it (once) into
    /// what will run: candor's own tool ([`Tool::accept`]), or the MCP tool
    /// (its input schema; no paths to normalize).
    fn accept(&self, input: &Value, cwd: &Path) -> Result<crate::tools::Accepted, String> {
        match (self.tool, &self.mcp) {
            (Some(tool), _) => tool.accept(input, cwd),
            (None, Some(mcp)) => Ok(crate::tools::Accepted {
                // An MCP tool's arguments are its input: no paths to
                // normalize.
                arguments: input.clone(),
                input: ToolInput::Mcp(crate::tools::mcp::parse(mcp, input)?),
                spelled: None,
            }),
            (None, None) => {
                let names: Vec<_> = Tool::ALL.iter().map(|t| t.name()).collect();
                Err(format!(
                    "candor has no tool named {:?}; the tools are {} (and those of the session's MCP servers that are running, named mcp__<server>__<tool>)",
                    self.name,
                    names.join(", ")
                ))
            }
        }
    }

    /// The approved call, when policy lets it run without asking.
    pub fn approve(&self) -> Option<ApprovedCall> {
        match (&self.disposition, &self.input) {
            (Disposition::Run { .. }, Some(input)) => Some(self.approved(input)),
            _ => None,
        }
    }

    /// The approved call, after the user allowed it: only if the answer was
    /// given for exactly these arguments (`digest`).
    pub fn approve_answered(&self, digest: &str) -> Option<ApprovedCall> {
        match (&self.disposition, &self.input) {
            (Disposition::Ask { .. }, Some(input)) if digest == self.digest => {
                Some(self.approved(input))
            }
            _ => None,
        }
    }

    fn approved(&self, input: &ToolInput) -> ApprovedCall {
        ApprovedCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: self.effective.clone(),
            input: input.clone(),
            spelled: self.spelled.clone(),
            mcp: self.mcp.clone(),
            file_base: None,
            boundary: self.boundary.clone(),
        }
    }
}

/// A tool call that passed interception: the only input a tool accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovedCall {
    id: String,
    /// The tool's name as the model called it.
    name: String,
    arguments: Value,
    /// The arguments as the tool's input: what runs.
    input: ToolInput,
    spelled: Option<PathBuf>,
    mcp: Option<crate::tools::mcp::McpTool>,
    /// For a file tool the user allowed on a diff: the file's `base` then.
    file_base: Option<String>,
    /// The boundary it runs in (settled with it).
    boundary: Option<crate::sandbox::Boundary>,
}

impl ApprovedCall {
    /// Binds the call to the file the user saw the diff of: the tool writes
    /// only while the file is still that (`FileDiff::base`).
    pub fn bound_to_file(mut self, base: Option<String>) -> Self {
        self.file_base = base;
        self
    }

    /// See [`bound_to_file`](Self::bound_to_file).
    pub fn file_base(&self) -> Option<&str> {
        self.file_base.as_deref()
    }

    /// The boundary it runs in, as settled and recorded.
    pub fn boundary(&self) -> Option<&crate::sandbox::Boundary> {
        self.boundary.as_ref()
    }

    /// What runs: the effective arguments as the tool's input.
    pub fn input(&self) -> &ToolInput {
        &self.input
    }

    /// What runs, as its judges saw it when it was settled.
    pub fn subject(&self) -> Subject<'_> {
        Subject {
            name: &self.name,
            input: &self.input,
            spelled: self.spelled.as_deref(),
            mcp: self.mcp.as_ref(),
        }
    }

    /// The call id (the model's `tool_use` id).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool's name as the model called it (candor's, or
    /// `mcp__<server>__<tool>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The effective arguments: what runs, is logged and is shown.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }
}

/// The digest a permission answer binds to.
pub fn digest(tool: &str, args: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(canonical(args).as_bytes());
    let bytes = hasher.finalize();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// JSON with object keys sorted, so equal values have equal text.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// Settles one proposed call (see the module docs for the order). `mcp`:
/// the session's MCP tool of that name, when it is one.
pub async fn settle(
    id: &str,
    name: &str,
    arguments: &Value,
    policy: &Policy,
    grants: &[Rule],
    cwd: &Path,
    mcp: Option<crate::tools::mcp::McpTool>,
) -> Settled {
    let tool = Tool::from_name(name);
    let mcp = mcp.filter(|_| tool.is_none());
    // An MCP tool's answers bind to its server and tool, not only to the
    // name it was offered under (a list that changed could give the name
    // to another tool).
    let digest_name = match &mcp {
        Some(m) => format!("{name}\u{0}{}\u{0}{}", m.server, m.tool),
        None => name.to_owned(),
    };
    let mut settled = Settled {
        id: id.to_owned(),
        name: name.to_owned(),
        tool,
        mcp,
        original: arguments.clone(),
        effective: arguments.clone(),
        hooks: Vec::new(),
        rewritten_by: Vec::new(),
        disposition: Disposition::Run { by: CANDOR.into() },
        digest: String::new(),
        asides: Vec::new(),
        input: None,
        spelled: None,
        grant: None,
        boundary: None,
    };
    // Candor's own checks: the tool exists and the model's arguments pass
    // its schema (parsed, once, into the input that will run). Paths are
    // made absolute before anyone looks (links followed; the path as
    // written kept for the rules, which judge both).
    let accepted = settled.accept(arguments, cwd);
    let accepted = match accepted {
        Ok(accepted) => accepted,
        Err(reason) => {
            settled.disposition = Disposition::Deny {
                by: CANDOR.into(),
                reason,
            };
            settled.digest = digest(&digest_name, arguments);
            return settled;
        }
    };
    settled.original = accepted.arguments.clone();
    settled.effective = accepted.arguments;
    settled.input = Some(accepted.input);
    settled.spelled = accepted.spelled;
    // A subagent calls only the tools its definition leaves it.
    if let Some(agent) = &policy.agent {
        let kind = settled
            .input
            .as_ref()
            .and_then(ToolInput::delegation)
            .map(|a| a.subagent_type.as_str());
        if let Some(reason) = agent.tools.refuses(name, kind) {
            settled.disposition = Disposition::Deny {
                by: format!("subagent:{}", agent.agent_type),
                reason,
            };
            settled.digest = digest(&digest_name, &settled.effective);
            return settled;
        }
    }
    let asides = Asides::default();
    let verdict = fold_hooks(&mut settled, policy, cwd, &asides).await;
    settled.asides = asides.take();
    // The typed input the last accept gave: judged here, run later.
    let (disposition, grant) = match settled.subject() {
        Some(subject) => {
            let disposition =
                policy::decide(subject, &verdict, policy.mode, &policy.rules, grants, cwd);
            let grant = matches!(disposition, Disposition::Ask { .. })
                .then(|| {
                    policy::offer_grant(subject, &verdict, policy.mode, &policy.rules, grants, cwd)
                })
                .flatten();
            (disposition, grant)
        }
        None => (
            Disposition::Deny {
                by: CANDOR.into(),
                reason: "candor lost the call's input".into(),
            },
            None,
        ),
    };
    settled.grant = grant;
    settled.disposition = disposition;
    settled.digest = digest(&digest_name, &settled.effective);
    settled
}

/// How the permission rules and the mode decide a Read of `path` (no
/// hooks run: it is not a tool call), and the file that Read would be of
/// (absolute, links followed). A prompt's `file:` link is read for the
/// model only when this runs without asking: the user's Read deny rules
/// and the project's bounds apply to it as to the Read tool.
pub fn decide_read(
    path: &Path,
    policy: &Policy,
    grants: &[Rule],
    cwd: &Path,
) -> (PathBuf, Disposition) {
    let refused = |reason: String| {
        let by = CANDOR.to_owned();
        (path.to_owned(), Disposition::Deny { by, reason })
    };
    // The Read a file link is: typed, as the Read tool's input would be.
    let Some(file_path) = path.to_str().filter(|p| !p.is_empty()) else {
        return refused(format!(
            "{} is not a path candor can read (empty, or not UTF-8)",
            path.display()
        ));
    };
    let mut input = ToolInput::Read(crate::tools::read::ReadInput {
        file_path: file_path.to_owned(),
        offset: None,
        limit: None,
    });
    let spelled = input.normalize(cwd);
    let resolved = input
        .target()
        .map_or_else(|| path.to_owned(), Path::to_owned);
    let subject = Subject {
        name: Tool::Read.name(),
        input: &input,
        spelled: spelled.as_deref(),
        mcp: None,
    };
    let no_hooks = HookVerdict {
        verdict: Verdict::Pass,
        by: None,
        reason: None,
    };
    let disposition = policy::decide(subject, &no_hooks, policy.mode, &policy.rules, grants, cwd);
    (resolved, disposition)
}

/// Runs the hooks in order over the call; returns the strictest verdict.
async fn fold_hooks(
    settled: &mut Settled,
    policy: &Policy,
    cwd: &Path,
    asides: &Asides,
) -> HookVerdict {
    let mut strictest = HookVerdict {
        verdict: Verdict::Pass,
        by: None,
        reason: None,
    };
    for hook in &policy.hooks {
        let Some(subject) = settled.subject() else {
            break;
        };
        let call = ProposedCall {
            id: &settled.id,
            tool: &settled.name,
            input: &settled.effective,
            subject,
            original: &settled.original,
            cwd,
            mode: policy.mode,
            asides,
            agent: policy.agent.as_deref(),
        };
        if !hook.applies_to(&call) {
            continue;
        }
        let mut error = None;
        let decision = match hook.check(call).await {
            Ok(d) => d,
            Err(e) if e.fail_open => {
                error = Some(e.message);
                PreToolDecision::Pass { rewrite: None }
            }
            Err(e) => PreToolDecision::Deny {
                reason: format!("the hook {} failed: {}", hook.id(), e.message),
            },
        };
        let verdict = decision.verdict();
        let (mut reason, rewrite) = decision.parts();
        let mut record = HookRecord {
            hook: hook.id().to_owned(),
            decision: verdict,
            reason: reason.clone(),
            rewrote: false,
            error,
        };
        let mut verdict = verdict;
        if let Some(rewrite) = rewrite.filter(|r| *r != settled.effective) {
            match settled.accept(&rewrite, cwd) {
                Err(e) => {
                    verdict = Verdict::Deny;
                    reason = Some(format!(
                        "the hook {}'s rewrite is not valid input: {e}",
                        hook.id()
                    ));
                    record.decision = Verdict::Deny;
                    record.reason = reason.clone();
                }
                Ok(accepted) => {
                    settled.effective = accepted.arguments;
                    settled.input = Some(accepted.input);
                    settled.spelled = accepted.spelled;
                    settled.rewritten_by.push(hook.id().to_owned());
                    record.rewrote = true;
                }
            }
        }
        settled.hooks.push(record);
        if verdict > strictest.verdict {
            strictest = HookVerdict {
                verdict,
                by: Some(hook.id().to_owned()),
                reason,
            };
        }
        if verdict == Verdict::Deny {
            break;
        }
    }
    strictest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A hook that answers with a fixed decision.
    #[derive(Debug)]
    struct Fixed(&'static str, PreToolDecision);

    impl PreToolHook for Fixed {
        fn id(&self) -> &str {
            self.0
        }
        fn check<'a>(&'a self, _call: ProposedCall<'a>) -> HookFuture<'a> {
            let d = self.1.clone();
            Box::pin(async move { Ok(d) })
        }
    }

    /// A hook that appends a suffix to the Bash command it is shown.
    #[derive(Debug)]
    struct Append(&'static str);

    impl PreToolHook for Append {
        fn id(&self) -> &str {
            self.0
        }
        fn check<'a>(&'a self, call: ProposedCall<'a>) -> HookFuture<'a> {
            let cmd = call.input["command"].as_str().unwrap_or("").to_owned();
            let suffix = self.0;
            Box::pin(async move {
                Ok(PreToolDecision::Pass {
                    rewrite: Some(json!({"command": format!("{cmd} {suffix}")})),
                })
            })
        }
    }

    fn policy(hooks: Vec<Arc<dyn PreToolHook>>) -> Policy {
        Policy {
            hooks,
            ..Policy::default()
        }
    }

    async fn run(p: &Policy, args: Value) -> Settled {
        settle("t", "Bash", &args, p, &[], Path::new("/p"), None).await
    }

    #[tokio::test]
    async fn hooks_fold_in_order_each_seeing_the_previous_rewrite() {
        let p = policy(vec![Arc::new(Append("a")), Arc::new(Append("b"))]);
        let s = run(&p, json!({"command": "echo"})).await;
        assert_eq!(s.effective(), &json!({"command": "echo a b"}));
        assert_eq!(s.original(), &json!({"command": "echo"}));
        assert_eq!(s.rewritten_by(), ["a", "b"]);
        assert!(
            matches!(s.disposition(), Disposition::Ask { .. }),
            "no hook allowed it: the default asks"
        );
        assert_eq!(s.digest(), digest("Bash", &json!({"command": "echo a b"})));
        assert!(s.approve().is_none());
        assert!(s.approve_answered("sha256:other").is_none());
        let call = s.approve_answered(s.digest()).unwrap();
        assert_eq!(call.arguments(), &json!({"command": "echo a b"}));
    }

    #[tokio::test]
    async fn the_strictest_decision_wins_and_deny_ends_the_fold() {
        let allow = Arc::new(Fixed(
            "allow",
            PreToolDecision::Allow {
                reason: None,
                rewrite: None,
            },
        ));
        let ask = Arc::new(Fixed(
            "ask",
            PreToolDecision::Ask {
                reason: Some("check".into()),
                rewrite: None,
            },
        ));
        let deny = Arc::new(Fixed(
            "deny",
            PreToolDecision::Deny {
                reason: "no".into(),
            },
        ));
        let s = run(
            &policy(vec![allow.clone(), ask.clone()]),
            json!({"command": "ls"}),
        )
        .await;
        assert_eq!(
            s.disposition(),
            &Disposition::Ask {
                by: "hook:ask".into(),
                reason: Some("check".into())
            }
        );
        let s = run(
            &policy(vec![deny, Arc::new(Append("never"))]),
            json!({"command": "ls"}),
        )
        .await;
        assert_eq!(
            s.disposition(),
            &Disposition::Deny {
                by: "hook:deny".into(),
                reason: "no".into()
            }
        );
        assert_eq!(s.hooks().len(), 1, "the hook after a deny does not run");
        let s = run(&policy(vec![allow]), json!({"command": "ls"})).await;
        assert_eq!(
            s.disposition(),
            &Disposition::Run {
                by: "hook:allow".into()
            }
        );
        assert!(s.approve().is_some());
    }

    #[tokio::test]
    async fn an_invalid_rewrite_is_a_deny_naming_the_hook() {
        let bad = Arc::new(Fixed(
            "bad",
            PreToolDecision::Allow {
                reason: None,
                rewrite: Some(json!({"cmd": "ls"})),
            },
        ));
        let s = run(&policy(vec![bad]), json!({"command": "ls"})).await;
        let Disposition::Deny { by, reason } = s.disposition() else {
            panic!("{s:?}")
        };
        assert_eq!(by, "hook:bad");
        assert!(
            reason.contains("rewrite is not valid input") && reason.contains("command"),
            "{reason}"
        );
        assert_eq!(
            s.effective(),
            &json!({"command": "ls"}),
            "the invalid rewrite never takes effect"
        );
    }

    #[tokio::test]
    async fn a_rewrite_cannot_slip_past_a_deny_rule() {
        let rm = Arc::new(Fixed(
            "rm",
            PreToolDecision::Allow {
                reason: None,
                rewrite: Some(json!({"command": "rm -rf /"})),
            },
        ));
        let mut p = policy(vec![rm]);
        p.rules
            .deny
            .push(Rule::parse("Bash(rm *)", Path::new("/p"), None).unwrap());
        let s = run(&p, json!({"command": "ls"})).await;
        assert!(
            matches!(s.disposition(), Disposition::Deny { by, .. } if by == "rule:Bash(rm *)"),
            "{s:?}"
        );
    }

    #[tokio::test]
    async fn an_answer_to_an_mcp_call_binds_to_its_server_and_tool_not_only_its_name() {
        let tool = |server: &str| crate::tools::mcp::McpTool {
            exposed: "mcp__s__t".into(),
            server: server.into(),
            tool: "t".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            title: None,
            annotations: Default::default(),
            reading: crate::tools::mcp::annotations::read(
                &Default::default(),
                &crate::tools::mcp::annotations::Trust::Taken,
            ),
        };
        let p = Policy::default();
        let a = settle(
            "c",
            "mcp__s__t",
            &json!({}),
            &p,
            &[],
            Path::new("/p"),
            Some(tool("s")),
        )
        .await;
        let b = settle(
            "c",
            "mcp__s__t",
            &json!({}),
            &p,
            &[],
            Path::new("/p"),
            Some(tool("other")),
        )
        .await;
        assert!(matches!(a.disposition(), Disposition::Ask { .. }));
        assert_ne!(a.digest(), b.digest());
        assert!(b.approve_answered(a.digest()).is_none());
        assert!(a.approve_answered(a.digest()).is_some());
    }

    #[tokio::test]
    async fn unknown_tools_and_bad_model_input_are_refused_before_hooks() {
        let p = policy(vec![Arc::new(Append("x"))]);
        let s = settle("t", "Teleport", &json!({}), &p, &[], Path::new("/p"), None).await;
        assert!(matches!(s.disposition(), Disposition::Deny { by, .. } if by == CANDOR));
        assert!(s.hooks().is_empty());
        let s = run(&p, json!({"cmd": "ls"})).await;
        assert!(
            matches!(s.disposition(), Disposition::Deny { reason, .. } if reason.contains("unknown field `cmd`"))
        );
    }

    #[test]
    fn digests_ignore_key_order() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":3,"y":2},"b":1}"#).unwrap();
        assert_eq!(digest("Bash", &a), digest("Bash", &b));
        assert_ne!(digest("Bash", &a), digest("Read", &a));
    }
}
