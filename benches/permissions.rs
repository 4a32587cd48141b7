//! Permission rules on a parsed Bash line: what `shell::parse` costs on a
//! 2 KB command line, and what `interception::policy::decide` costs end to
//! end on it (the call's arguments accepted by the Bash tool, which parses
//! the line once, then decided) with 20 rules, allow, ask and deny, Bash and
//! path rules.
//!
//! Run: `cargo bench --bench permissions` (release build). Target (from the
//! permission-rules issue): rule evaluation under 50 µs median. Prints the
//! median and p99 of batches of calls.

// A bench is a program whose output is its report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::Path;
use std::time::Instant;

use candor::interception::Verdict;
use candor::interception::policy::{Disposition, HookVerdict, Mode, Rule, Rules, Subject, decide};
use candor::shell;
use candor::tools::{Accepted, Tool};
use serde_json::{Value, json};

const RULES_ALLOW: [&str; 13] = [
    "Bash(git status:*)",
    "Bash(git diff:*)",
    "Bash(git log:*)",
    "Bash(git add:*)",
    "Bash(npm ci:*)",
    "Bash(npm run build:*)",
    "Bash(npm test:*)",
    "Bash(cargo build:*)",
    "Bash(cargo test:*)",
    "Bash(cargo clippy:*)",
    "Bash(grep:*)",
    "Bash(rg *)",
    "Bash(date:*)",
];
const RULES_ASK: [&str; 3] = [
    "Bash(git push:*)",
    "Bash(npm publish:*)",
    "Edit(./Cargo.toml)",
];
const RULES_DENY: [&str; 4] = [
    "Bash(rm -rf *)",
    "Bash(curl:*)",
    "Read(./.env)",
    "Edit(//etc/**)",
];

fn rules(root: &Path, home: &Path) -> Rules {
    let parse = |list: &[&str]| -> Vec<Rule> {
        list.iter()
            .map(|r| Rule::parse(r, root, Some(home)).unwrap())
            .collect()
    };
    let rules = Rules {
        allow: parse(&RULES_ALLOW),
        ask: parse(&RULES_ASK),
        deny: parse(&RULES_DENY),
        home: Some(home.to_owned()),
        ..Rules::default()
    };
    assert_eq!(rules.allow.len() + rules.ask.len() + rules.deny.len(), 20);
    rules
}

/// A 2 KB line of the kind a model sends: `&&`-joined git, npm, cargo and
/// grep commands with quoted arguments and a command substitution.
fn realistic_line() -> String {
    let parts = [
        "git status --short",
        "git diff --stat HEAD~1 -- src/ tests/",
        "git log --oneline -n 20 --author=\"Jane Doe\" --since='2 weeks ago'",
        "npm ci --no-audit --prefer-offline",
        "npm run build -- --mode production --sourcemap",
        "npm test -- --coverage --reporter=dot",
        "cargo build --release --locked --features \"tls json\"",
        "cargo test --workspace --no-fail-fast -- --nocapture --test-threads=2",
        "cargo clippy --all-targets --all-features -- -D warnings -A clippy::too_many_lines",
        "grep -rn 'TODO\\|FIXME' src/ --include='*.rs' --exclude-dir=target",
        "rg -n \"fn (main|run)\\(\" src tests benches --glob '!target'",
        "git log -1 --format=\"built %H at $(date +%Y-%m-%dT%H:%M:%S)\"",
        "git diff --name-only origin/main...HEAD -- '*.md' 'docs/**'",
        "npm run build -- --outDir \"dist/$(date +%s)\" --emptyOutDir",
        "cargo test --doc -p candor -- shell::parse",
        "grep -c \"permission rule\" protocol/permissions.md README.md ARCHITECTURE.md",
        "git add -- src/shell.rs src/interception/policy.rs tests/it/permissions.rs",
        "git status --porcelain=v2 --branch --untracked-files=normal",
    ];
    let mut line = String::new();
    let mut i = 0;
    while line.len() < 2048 {
        if !line.is_empty() {
            line.push_str(" && ");
        }
        line.push_str(parts[i % parts.len()]);
        i += 1;
    }
    line
}

fn hooks() -> HookVerdict {
    HookVerdict {
        verdict: Verdict::Pass,
        by: None,
        reason: None,
    }
}

/// The arguments accepted (parsed, the line read), then decided.
fn decide_bash(args: &Value, rules: &Rules, root: &Path) -> Disposition {
    decide_accepted(&Tool::Bash.accept(args, root).unwrap(), rules, root)
}

/// A call already accepted, decided.
fn decide_accepted(accepted: &Accepted, rules: &Rules, root: &Path) -> Disposition {
    decide(
        Subject::of("Bash", accepted),
        &hooks(),
        Mode::Default,
        rules,
        &[],
        root,
    )
}

/// Median and p99 of per-call times over `batches` batches of `batch` calls.
fn measure(name: &str, batch: usize, batches: usize, mut f: impl FnMut()) {
    for _ in 0..batch {
        f();
    }
    let mut per_call = Vec::with_capacity(batches);
    for _ in 0..batches {
        let started = Instant::now();
        for _ in 0..batch {
            f();
        }
        per_call.push(started.elapsed().as_secs_f64() * 1e6 / batch as f64);
    }
    per_call.sort_by(f64::total_cmp);
    let median = per_call[per_call.len() / 2];
    let p99 = per_call[per_call.len() * 99 / 100];
    println!("{name:<52} median {median:>8.1} µs/call   p99 {p99:>8.1} µs/call");
}

fn main() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    let home = root.join("home");
    let rules = rules(root, &home);
    let none = Rules::default();
    let line = realistic_line();
    let script = shell::parse(&line);
    assert!(script.all_unreadable().is_empty(), "the line must parse");
    let args = json!({ "command": line, "description": "build and test" });
    // Every call gets a line of its own (a comment added), so no figure
    // can come from a line read before (the way this bench was run when
    // `shell::parse` remembered recent lines; it reads each line once now).
    let fresh_lines: Vec<String> = (0..64).map(|i| format!("{line} # {i}")).collect();
    let fresh_args: Vec<serde_json::Value> = fresh_lines
        .iter()
        .map(|l| json!({ "command": l, "description": "build and test" }))
        .collect();
    let next = std::cell::Cell::new(0usize);
    let fresh = || {
        let i = next.get();
        next.set((i + 1) % fresh_lines.len());
        i
    };
    let accepted = Tool::Bash.accept(&args, root).unwrap();
    let d = decide_bash(&args, &rules, root);
    assert!(matches!(d, Disposition::Run { .. }), "{d:?}");
    println!(
        "permissions: {} bytes, {} commands, 20 rules ({} allow, {} ask, {} deny); decision {d:?}",
        line.len(),
        script.all_commands().len(),
        RULES_ALLOW.len(),
        RULES_ASK.len(),
        RULES_DENY.len()
    );
    measure("shell::parse, 2 KB line", 20, 200, || {
        std::hint::black_box(shell::parse(std::hint::black_box(&fresh_lines[fresh()])));
    });
    measure(
        "decide, 2 KB line, no rules (parse + default)",
        20,
        200,
        || {
            std::hint::black_box(decide_bash(&fresh_args[fresh()], &none, root));
        },
    );
    measure("decide, 2 KB line, 20 rules (end to end)", 20, 200, || {
        std::hint::black_box(decide_bash(&fresh_args[fresh()], &rules, root));
    });
    measure(
        "decide, 2 KB line, 20 rules, the line already read",
        20,
        200,
        || {
            std::hint::black_box(decide_accepted(&accepted, &rules, root));
        },
    );
    // The same 20 rules with the two path deny rules made Bash rules: a
    // path deny rule makes `decide` resolve every word of the line as a path
    // (symlinks followed, on the file system).
    let mut bash_only = rules.clone();
    bash_only.deny.retain(|r| r.text().starts_with("Bash("));
    for r in ["Bash(wget:*)", "Bash(sudo:*)"] {
        bash_only
            .deny
            .push(Rule::parse(r, root, Some(&home)).unwrap());
    }
    measure(
        "decide, 2 KB line, 20 Bash rules (no path deny)",
        20,
        200,
        || {
            std::hint::black_box(decide_bash(&fresh_args[fresh()], &bash_only, root));
        },
    );
    let shorts: Vec<serde_json::Value> = (0..64)
        .map(|i| json!({ "command": format!("git status --short # {i}") }))
        .collect();
    measure("decide, `git status --short`, 20 rules", 200, 200, || {
        std::hint::black_box(decide_bash(&shorts[fresh()], &rules, root));
    });
}
