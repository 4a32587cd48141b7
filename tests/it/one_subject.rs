//! What was judged is what runs: for every tool, over random arguments and
//! random hook rewrites, the input the hooks' matchers and the rules judge,
//! the arguments the card shows and `tool/call` records, and the input the
//! approved call runs are one value.
//!
//! Each case settles a call (`interception::settle`) through a chain of
//! hooks, some of which rewrite the input into other random arguments, and
//! then checks, for the call as settled:
//!
//! * every hook was shown a typed subject that is its JSON input accepted
//!   by the tool (the matcher judges what the payload says);
//! * the typed input (what was judged) is the recorded arguments accepted
//!   again (what the card and the log show, read back as the tool would);
//! * deciding that input again gives the disposition the call has (the
//!   judgement is of this input, not of another reading);
//! * a Bash input's script is the shell's reading of its own line;
//! * the approved call carries exactly that input and those arguments.
//!
//! Reproduce or widen a run with `CANDOR_PROPTEST_SEED` and
//! `CANDOR_PROPTEST_CASES`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use candor::interception::policy::{Disposition, HookVerdict, Rule, decide};
use candor::interception::{
    HookFuture, Policy, PreToolDecision, PreToolHook, ProposedCall, Verdict, settle,
};
use candor::shell;
use candor::tools::{Tool, ToolInput};
use serde_json::{Value, json};

fn seed() -> u64 {
    std::env::var("CANDOR_PROPTEST_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0x0005_eed5_0b1e)
}

fn cases() -> usize {
    std::env::var("CANDOR_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(300)
}

/// A path as a model might write it: relative, with `..`, through a
/// link, absolute, outside the project, protected, empty.
fn path(rng: &mut fastrand::Rng) -> String {
    const PATHS: &[&str] = &[
        "a.txt",
        "./src/../a.txt",
        "link/a.txt",
        "out/secret",
        "../elsewhere/x",
        "/etc/hosts",
        ".git/hooks/pre-commit",
        "src//b.rs",
        "dangling",
        "",
        "sub/./../sub/c",
    ];
    PATHS[rng.usize(..PATHS.len())].to_owned()
}

fn line(rng: &mut fastrand::Rng) -> String {
    const LINES: &[&str] = &[
        "ls -la",
        "git status && rm -rf victim",
        "cat link/a.txt | grep x > out.txt",
        "bash -c 'echo $(whoami)'",
        "eval \"$X\"",
        "npm test",
        "  ",
        "echo 'unclosed",
        "cd sub && touch ../.git/config",
        "FOO=1 PATH=. ls",
        "find . -exec rm {} \\;",
    ];
    LINES[rng.usize(..LINES.len())].to_owned()
}

/// A URL as a model might write it: mixed case, dots, a port, http,
/// an address, a user name, not a URL at all.
fn url(rng: &mut fastrand::Rng) -> String {
    const URLS: &[&str] = &[
        "https://docs.rs/htmd",
        "HTTPS://Docs.RS/a/../htmd?x=1#f",
        "http://example.com:80/",
        "https://api.example.com./v1",
        "https://evil.example/",
        "http://127.0.0.1:9/",
        "https://[::1]/",
        "https://user:pw@example.com/",
        "ftp://example.com/",
        "example.com",
        "",
    ];
    URLS[rng.usize(..URLS.len())].to_owned()
}

/// Random arguments for `tool`: usually well formed, sometimes with a
/// field missing, mistyped or unknown.
fn arguments(rng: &mut fastrand::Rng, tool: Tool) -> Value {
    let mut args = match tool {
        Tool::Bash => {
            let mut a = json!({ "command": line(rng) });
            if rng.bool() {
                a["description"] = json!("a generated call");
            }
            if rng.u8(..4) == 0 {
                a["timeout"] = json!(rng.u64(0..700_000));
            }
            a
        }
        Tool::BashOutput => json!({ "bash_id": format!("{}", rng.u8(..3)) }),
        Tool::KillShell => json!({ "shell_id": format!("{}", rng.u8(..3)) }),
        Tool::Read => {
            let mut a = json!({ "file_path": path(rng) });
            if rng.bool() {
                a["offset"] = json!(rng.u64(0..5));
            }
            a
        }
        Tool::Write => json!({ "file_path": path(rng), "content": "new" }),
        Tool::Edit => json!({
            "file_path": path(rng),
            "old_string": if rng.bool() { "a" } else { "" },
            "new_string": "b",
        }),
        Tool::Glob | Tool::Grep => {
            let mut a = json!({ "pattern": "*.rs" });
            if rng.bool() {
                a["path"] = json!(path(rng));
            }
            a
        }
        Tool::TodoWrite => json!({ "todos": [] }),
        Tool::AskUserQuestion => json!({ "questions": [{
            "question": "Which way?",
            "header": "Way",
            "options": [
                {"label": "left", "description": "the left one"},
                {"label": "right", "description": "the right one"},
            ],
            "multiSelect": rng.bool(),
        }] }),
        Tool::Agent => json!({
            "description": "a generated task",
            "prompt": line(rng),
            "subagent_type": if rng.bool() { "Explore" } else { "Plan" },
        }),
        Tool::WebFetch => {
            let mut a = json!({ "url": url(rng), "prompt": "what does it say?" });
            if rng.bool() {
                a["offset"] = json!(rng.u64(0..50_000));
            }
            a
        }
    };
    match rng.u8(..12) {
        0 => {
            args["unknown_field"] = json!(1);
        }
        1 => {
            if let Some(obj) = args.as_object_mut() {
                let first = obj.keys().next().cloned();
                if let Some(k) = first {
                    obj.insert(k, json!(42));
                }
            }
        }
        _ => {}
    }
    args
}

/// What each hook saw: its JSON input and the typed subject beside it.
type Seen = Arc<Mutex<Vec<(Value, Option<ToolInput>)>>>;

/// A hook that records what it is shown and answers with a fixed decision
/// (a rewrite among them).
#[derive(Debug)]
struct Scripted {
    id: String,
    decision: PreToolDecision,
    seen: Seen,
}

impl PreToolHook for Scripted {
    fn id(&self) -> &str {
        &self.id
    }

    fn check<'a>(&'a self, call: ProposedCall<'a>) -> HookFuture<'a> {
        self.seen
            .lock()
            .unwrap()
            .push((call.input.clone(), Some(call.subject.input.clone())));
        let d = self.decision.clone();
        Box::pin(async move { Ok(d) })
    }
}

fn decision(rng: &mut fastrand::Rng, tool: Tool) -> PreToolDecision {
    let rewrite = rng.bool().then(|| arguments(rng, tool));
    match rng.u8(..10) {
        0 => PreToolDecision::Deny {
            reason: "generated".into(),
        },
        1 | 2 => PreToolDecision::Ask {
            reason: None,
            rewrite,
        },
        3 | 4 => PreToolDecision::Allow {
            reason: None,
            rewrite,
        },
        _ => PreToolDecision::Pass { rewrite },
    }
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(root.join("a.txt"), "a").unwrap();
    std::os::unix::fs::symlink(dir.path().join("out"), root.join("link")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("out"), root.join("out")).unwrap();
    std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
    (dir, root)
}

fn rules(root: &Path) -> candor::interception::policy::Rules {
    let parse = |t: &str| Rule::parse(t, root, None).unwrap();
    candor::interception::policy::Rules {
        allow: vec![
            parse("Bash(ls:*)"),
            parse("Read(./**)"),
            parse("Edit(./src/**)"),
            parse("WebFetch(domain:docs.rs)"),
        ],
        ask: vec![
            parse("Bash(git status:*)"),
            parse("WebFetch(domain:*.example.com)"),
        ],
        deny: vec![
            parse("Bash(rm *)"),
            parse("Read(./out/**)"),
            parse("WebFetch(domain:evil.example)"),
        ],
        ..Default::default()
    }
}

/// Checks one settled call; `Err` says which of the four disagree.
fn check(
    settled: &candor::interception::Settled,
    tool: Tool,
    seen: &Seen,
    policy: &Policy,
    root: &Path,
) -> Result<(), String> {
    for (json, typed) in seen.lock().unwrap().iter() {
        let accepted = tool
            .accept(json, root)
            .map_err(|e| format!("a hook was shown arguments the tool refuses: {e}"))?;
        if Some(&accepted.input) != typed.as_ref() {
            return Err(format!(
                "a hook's matcher judged {typed:?}, its payload says {:?}",
                accepted.input
            ));
        }
    }
    let Some(input) = settled.input() else {
        // Refused before the hooks: nothing was judged or runs.
        return match settled.disposition() {
            Disposition::Deny { by, .. } if by == "candor" => Ok(()),
            other => Err(format!("no input, yet {other:?}")),
        };
    };
    let recorded = tool
        .accept(settled.effective(), root)
        .map_err(|e| format!("the recorded arguments do not pass the schema: {e}"))?;
    if &recorded.input != input {
        return Err(format!(
            "judged {input:?}, recorded {}",
            settled.effective()
        ));
    }
    if &recorded.arguments != settled.effective() {
        return Err(format!(
            "the recorded arguments are not in their accepted form: {}",
            settled.effective()
        ));
    }
    if let Some(bash) = input.command()
        && bash.script() != &shell::parse(&bash.command)
    {
        return Err(format!("the script judged is not {:?}'s", bash.command));
    }
    if let Some(target) = input.target() {
        let shown = tool.present(settled.effective(), root);
        if !shown.locations.is_empty() && shown.locations.iter().all(|l| l.path.as_path() != target)
        {
            return Err(format!(
                "the card shows {:?}, the input is about {}",
                shown.locations,
                target.display()
            ));
        }
    }
    if let Some(fetch) = input.web_fetch() {
        let shown = tool.present(settled.effective(), root);
        if !shown.title.contains(fetch.url.as_str()) {
            return Err(format!(
                "the card says {:?}, the input fetches {}",
                shown.title, fetch.url
            ));
        }
    }
    // The rules' judgement of this very input, with the hooks' verdict.
    let subject = settled.subject().ok_or("no subject")?;
    let hooks = strictest(settled);
    let again = decide(subject, &hooks, policy.mode, &policy.rules, &[], root);
    if &again != settled.disposition() {
        return Err(format!(
            "decided {:?}, but the input decides {again:?}",
            settled.disposition()
        ));
    }
    let approved = match settled.disposition() {
        Disposition::Run { .. } => settled.approve(),
        Disposition::Ask { .. } => settled.approve_answered(settled.digest()),
        Disposition::Deny { .. } => None,
    };
    if let Some(call) = approved {
        if call.input() != input || call.arguments() != settled.effective() {
            return Err(format!(
                "runs {:?} with {}, judged {input:?}",
                call.input(),
                call.arguments()
            ));
        }
        if call.subject().input != input || call.subject().spelled != subject.spelled {
            return Err("the approved call's subject is not the settled one".into());
        }
    }
    Ok(())
}

/// The hooks' verdict as `settle` folds it (strictest wins, first of equals).
fn strictest(settled: &candor::interception::Settled) -> HookVerdict {
    let mut out = HookVerdict {
        verdict: Verdict::Pass,
        by: None,
        reason: None,
    };
    for h in settled.hooks() {
        if h.decision > out.verdict {
            out = HookVerdict {
                verdict: h.decision,
                by: Some(h.hook.clone()),
                reason: h.reason.clone(),
            };
        }
    }
    out
}

#[tokio::test]
async fn the_input_judged_shown_recorded_and_run_is_one_value() {
    let (_dir, root) = project();
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut rewritten = 0;
    let mut ran = 0;
    for case in 0..cases() {
        let tool = Tool::ALL[rng.usize(..Tool::ALL.len())];
        let args = arguments(&mut rng, tool);
        let seen: Seen = Arc::default();
        let hooks: Vec<Arc<dyn PreToolHook>> = (0..rng.usize(0..4))
            .map(|i| {
                Arc::new(Scripted {
                    id: format!("h{i}"),
                    decision: decision(&mut rng, tool),
                    seen: seen.clone(),
                }) as Arc<dyn PreToolHook>
            })
            .collect();
        let policy = Policy {
            hooks,
            rules: rules(&root),
            ..Policy::default()
        };
        let settled = settle("c", tool.name(), &args, &policy, &[], &root, None).await;
        rewritten += usize::from(!settled.rewritten_by().is_empty());
        ran += usize::from(!matches!(settled.disposition(), Disposition::Deny { .. }));
        if let Err(e) = check(&settled, tool, &seen, &policy, &root) {
            panic!("case {case} (seed {seed}): {} {args}: {e}", tool.name());
        }
    }
    // The generator reaches what the property is about.
    assert!(rewritten > cases() / 10, "only {rewritten} calls rewritten");
    assert!(ran > cases() / 10, "only {ran} calls not refused");
}
