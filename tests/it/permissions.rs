//! `protocol/permissions.md` as a test: every row of its conformance table
//! goes through `policy::decide` (and every row of its grants table through
//! `policy::grant_for`), and every row that does not get the decision and
//! the reason it promises is listed. Symbolic links need real files, so
//! their cases are a separate test here, on a temporary directory.

use std::path::Path;

use candor::interception::Verdict;
use candor::interception::policy::{
    Disposition, HookVerdict, Mode, Rule, Rules, Subject, decide, grant_for,
};
use candor::tools::Tool;
use serde_json::{Value, json};

/// The table's rows number at least this many: it can never pass vacuously.
const MIN_ROWS: usize = 220;

const ROOT: &str = "/p";
const HOME: &str = "/home/u";

fn document() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/permissions.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A table row's cells: split on `|`, except `\|`, which is a `|` inside
/// a cell (GitHub's rule, which holds inside code spans too).
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'|') {
            chars.next();
            out.last_mut().unwrap().push('|');
        } else if c == '|' {
            out.push(String::new());
        } else {
            out.last_mut().unwrap().push(c);
        }
    }
    out.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// A piece of a cell: a bare word, or a code span's text.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Code(String),
}

/// The text of a code span: `<TAB>` is a tab, `<NL>` a newline; one space
/// on each side is dropped when both are there (CommonMark's rule, so that
/// ``` `` ls `touch M` `` ``` can hold backticks).
fn decode(content: &str) -> String {
    let content = if content.len() >= 2
        && content.starts_with(' ')
        && content.ends_with(' ')
        && !content.trim().is_empty()
    {
        &content[1..content.len() - 1]
    } else {
        content
    };
    content.replace("<TAB>", "\t").replace("<NL>", "\n")
}

fn tokens(cell: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = cell.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            let n = chars[i..].iter().take_while(|c| **c == '`').count();
            let start = i + n;
            let mut j = start;
            let end = loop {
                if j >= chars.len() {
                    return Err(format!("an unclosed code span in {cell:?}"));
                }
                if chars[j] == '`' {
                    let run = chars[j..].iter().take_while(|c| **c == '`').count();
                    if run == n {
                        break j;
                    }
                    j += run;
                } else {
                    j += 1;
                }
            };
            out.push(Token::Code(decode(
                &chars[start..end].iter().collect::<String>(),
            )));
            i = end + n;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && chars[i] != '`' {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        }
    }
    Ok(out)
}

/// A cell that is one code span, or nothing (`—`, `-` or empty).
fn code_or_none(cell: &str) -> Result<Option<String>, String> {
    match tokens(cell)?.as_slice() {
        [] => Ok(None),
        [Token::Word(w)] if w == "—" || w == "-" => Ok(None),
        [Token::Code(c)] => Ok(Some(c.clone())),
        other => Err(format!("expected one code span, found {other:?}")),
    }
}

/// The rules, grants and hook verdict a row sets up.
#[derive(Debug, Default)]
struct Setup {
    allow: Vec<String>,
    ask: Vec<String>,
    deny: Vec<String>,
    grant: Vec<String>,
    hook: Option<String>,
}

fn setup(cell: &str) -> Result<Setup, String> {
    let mut s = Setup::default();
    let mut current: Option<String> = None;
    for t in tokens(cell)? {
        match t {
            Token::Word(w) if w == "—" || w == "-" || w == "·" || w == ";" => {}
            Token::Word(w) => {
                if !matches!(w.as_str(), "allow" | "ask" | "deny" | "grant" | "hook") {
                    return Err(format!("{w:?} is not allow, ask, deny, grant or hook"));
                }
                current = Some(w);
            }
            Token::Code(c) => match current.as_deref() {
                Some("allow") => s.allow.push(c),
                Some("ask") => s.ask.push(c),
                Some("deny") => s.deny.push(c),
                Some("grant") => s.grant.push(c),
                Some("hook") if s.hook.is_none() => s.hook = Some(c),
                Some("hook") => return Err("two hook verdicts".into()),
                _ => return Err(format!("`{c}` follows no allow/ask/deny/grant/hook")),
            },
        }
    }
    Ok(s)
}

fn rule(text: &str) -> Result<Rule, String> {
    Rule::parse(text, Path::new(ROOT), Some(Path::new(HOME)))
}

fn rules(s: &Setup) -> Result<Rules, String> {
    let mut rules = Rules {
        allow: s.allow.iter().map(|r| rule(r)).collect::<Result<_, _>>()?,
        ask: s.ask.iter().map(|r| rule(r)).collect::<Result<_, _>>()?,
        home: Some(HOME.into()),
        ..Default::default()
    };
    for text in &s.deny {
        // As candor's settings loader does: a deny rule that cannot be
        // read is kept, and fails closed.
        match rule(text) {
            Ok(r) => rules.deny.push(r),
            Err(_) => rules.deny_unreadable(text),
        }
    }
    Ok(rules)
}

fn hook(s: &Setup) -> Result<HookVerdict, String> {
    let Some(text) = &s.hook else {
        return Ok(HookVerdict {
            verdict: Verdict::Pass,
            by: None,
            reason: None,
        });
    };
    let (verdict, reason) = match text.split_once(':') {
        Some((v, r)) => (v.trim(), Some(r.trim().to_owned())),
        None => (text.as_str(), None),
    };
    let verdict = match verdict {
        "allow" => Verdict::Allow,
        "ask" => Verdict::Ask,
        "deny" => Verdict::Deny,
        "pass" => Verdict::Pass,
        other => return Err(format!("{other:?} is not a hook verdict")),
    };
    Ok(HookVerdict {
        verdict,
        by: Some("h".into()),
        reason,
    })
}

/// A call's arguments as the model would send them.
fn arguments(tool: &str, input: Option<&str>) -> Value {
    match (tool, input) {
        ("Bash", Some(c)) => json!({ "command": c, "description": "a row of the table" }),
        ("Read", Some(p)) => json!({ "file_path": p }),
        ("Write", Some(p)) => json!({ "file_path": p, "content": "x" }),
        ("Edit", Some(p)) => json!({ "file_path": p, "old_string": "a", "new_string": "b" }),
        ("Glob", Some(p)) => json!({ "pattern": "**/*", "path": p }),
        ("Glob", None) => json!({ "pattern": "**/*" }),
        ("Grep", Some(p)) => json!({ "pattern": "x", "path": p }),
        ("Grep", None) => json!({ "pattern": "x" }),
        ("TodoWrite", None) => json!({ "todos": [] }),
        ("BashOutput", None) => json!({ "bash_id": "1" }),
        ("KillShell", None) => json!({ "shell_id": "1" }),
        ("Agent", Some(t)) => {
            json!({ "description": "a row", "prompt": "look", "subagent_type": t })
        }
        ("WebFetch", Some(u)) => json!({ "url": u, "prompt": "a row of the table" }),
        _ => json!({}),
    }
}

/// What the user sees: the decision, and its reason (for a call that
/// runs, what let it run).
fn shown(d: &Disposition) -> (&'static str, String) {
    match d {
        Disposition::Run { by } => ("allow", by.clone()),
        Disposition::Ask { reason, .. } => ("ask", reason.clone().unwrap_or_default()),
        Disposition::Deny { reason, .. } => ("deny", reason.clone()),
    }
}

/// Decides a call the way `interception::settle` does: paths made
/// absolute and resolved first, the spelling kept when it differs.
fn judge(
    tool: &str,
    args: &Value,
    hooks: &HookVerdict,
    mode: Mode,
    rules: &Rules,
    grants: &[Rule],
    root: &Path,
) -> Disposition {
    // A tool candor does not have, or arguments its schema refuses, never
    // reach the rules: settle refuses the call first.
    let Some(accepted) = Tool::from_name(tool).and_then(|t| t.accept(args, root).ok()) else {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let settled = runtime.block_on(candor::interception::settle(
            "row",
            tool,
            args,
            &candor::interception::Policy::default(),
            &[],
            root,
            None,
        ));
        return settled.disposition().clone();
    };
    decide(
        Subject::of(tool, &accepted),
        hooks,
        mode,
        rules,
        grants,
        root,
    )
}

/// One row of the decision table, run: `Err` says how it failed.
fn run_decision(row: &[String], columns: &[String]) -> Result<(), String> {
    let cell = |name: &str| -> Result<&str, String> {
        columns
            .iter()
            .position(|c| c == name)
            .and_then(|i| row.get(i))
            .map(String::as_str)
            .ok_or_else(|| format!("no {name:?} cell"))
    };
    let tool = cell("tool")?;
    let input = code_or_none(cell("input")?)?;
    let setup = setup(cell("setup")?)?;
    let rules = rules(&setup)?;
    let grants: Vec<Rule> = setup
        .grant
        .iter()
        .map(|g| Rule::grant(g))
        .collect::<Result<_, _>>()?;
    let hooks = hook(&setup)?;
    let expect = cell("expect")?;
    if !matches!(expect, "allow" | "ask" | "deny") {
        return Err(format!("expect {expect:?} is not allow, ask or deny"));
    }
    let fragment = code_or_none(cell("reason")?)?;
    let args = arguments(tool, input.as_deref());
    let mut wrong = Vec::new();
    let modes: Vec<&str> = cell("mode")?.split(',').map(str::trim).collect();
    for id in modes {
        let mode = Mode::from_id(id).ok_or_else(|| format!("{id:?} is not a mode"))?;
        let d = judge(tool, &args, &hooks, mode, &rules, &grants, Path::new(ROOT));
        let (got, why) = shown(&d);
        let reason_ok = fragment.as_deref().is_none_or(|f| why.contains(f));
        if got != expect || !reason_ok {
            wrong.push(format!(
                "in {id}: expected {expect}{}, got {got} ({why:?})",
                fragment
                    .as_deref()
                    .map(|f| format!(" with {f:?}"))
                    .unwrap_or_default()
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

/// One row of the grants table: the grant "Always allow" would create.
fn run_grant(row: &[String], columns: &[String]) -> Result<(), String> {
    let cell = |name: &str| -> Result<&str, String> {
        columns
            .iter()
            .position(|c| c == name)
            .and_then(|i| row.get(i))
            .map(String::as_str)
            .ok_or_else(|| format!("no {name:?} cell"))
    };
    let tool = cell("tool")?;
    let input = code_or_none(cell("input")?)?;
    let expect = match tokens(cell("offers")?)?.as_slice() {
        [Token::Word(w)] if w == "none" => None,
        [Token::Code(c)] => Some(c.clone()),
        other => {
            return Err(format!(
                "offers {other:?} is neither `none` nor a code span"
            ));
        }
    };
    let args = arguments(tool, input.as_deref());
    let got = Tool::from_name(tool)
        .and_then(|t| t.accept(&args, Path::new(ROOT)).ok())
        .and_then(|accepted| {
            grant_for(
                &Subject::of(tool, &accepted),
                Path::new(ROOT),
                Some(Path::new(HOME)),
            )
        });
    let got = got.as_ref().map(Rule::text);
    if got == expect.as_deref() {
        Ok(())
    } else {
        Err(format!("expected {expect:?}, got {got:?}"))
    }
}

#[test]
fn every_row_of_the_conformance_table_holds() {
    let doc = document();
    let mut columns: Vec<String> = Vec::new();
    let mut decisions = 0;
    let mut grants = 0;
    let mut last_number = 0;
    let mut failures = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        if !line.trim_start().starts_with('|') {
            columns.clear();
            continue;
        }
        let row = cells(line);
        if columns.is_empty() {
            columns = row;
            continue;
        }
        if row
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|c| matches!(c, '-' | ':')))
        {
            continue;
        }
        let number = row.first().cloned().unwrap_or_default();
        let described = row.get(2).cloned().unwrap_or_default();
        let result = if columns.iter().any(|c| c == "expect") {
            decisions += 1;
            match number.parse::<usize>() {
                Ok(n) if n == last_number + 1 => last_number = n,
                _ => failures.push(format!(
                    "line {}: row number {number:?} should be {}",
                    i + 1,
                    last_number + 1
                )),
            }
            run_decision(&row, &columns)
        } else if columns.iter().any(|c| c == "offers") {
            grants += 1;
            run_grant(&row, &columns)
        } else {
            // Another table (the document's own lists): not a test.
            continue;
        };
        if let Err(e) = result {
            failures.push(format!(
                "row {number} (line {}): {} {described}: {e}",
                i + 1,
                row.get(1).cloned().unwrap_or_default()
            ));
        }
    }
    if decisions < MIN_ROWS {
        failures.push(format!(
            "the conformance table has {decisions} rows, fewer than {MIN_ROWS}"
        ));
    }
    if grants == 0 {
        failures.push("the grants table has no rows".into());
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows of protocol/permissions.md do not hold:\n{}",
        failures.len(),
        decisions + grants,
        failures.join("\n")
    );
}

#[test]
fn the_table_parser_reads_what_the_document_says() {
    assert_eq!(cells("| a | `x \\| y` | b |"), ["a", "`x | y`", "b"]);
    assert_eq!(
        tokens("allow `Bash(ls:*)` `Edit(./o)` deny `Bash(rm *)`").unwrap(),
        [
            Token::Word("allow".into()),
            Token::Code("Bash(ls:*)".into()),
            Token::Code("Edit(./o)".into()),
            Token::Word("deny".into()),
            Token::Code("Bash(rm *)".into()),
        ]
    );
    assert_eq!(
        code_or_none("`` ls `touch M` ``").unwrap().as_deref(),
        Some("ls `touch M`")
    );
    assert_eq!(
        code_or_none("`rm<TAB>-rf a<NL>b`").unwrap().as_deref(),
        Some("rm\t-rf a\nb")
    );
    assert_eq!(code_or_none("—").unwrap(), None);
    assert!(code_or_none("`open").is_err());
    assert!(setup("permit `Bash`").is_err());
}

/// Symbolic links: a path is judged as written and as it resolves, and
/// the stricter answer wins (these need real links, so they are not rows).
#[test]
fn paths_are_judged_as_written_and_as_they_resolve() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("proj");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("notes.txt"), "n").unwrap();
    std::fs::write(root.join("secrets/key"), "k").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
    std::os::unix::fs::symlink(root.join("secrets"), root.join("alias")).unwrap();
    std::os::unix::fs::symlink(root.join(".git/hooks"), root.join("hooks")).unwrap();
    std::os::unix::fs::symlink(&root, base.join("link-to-proj")).unwrap();

    let pass = HookVerdict {
        verdict: Verdict::Pass,
        by: None,
        reason: None,
    };
    let with = |allow: &[&str], deny: &[&str], anchor: &Path| Rules {
        allow: allow
            .iter()
            .map(|r| Rule::parse(r, anchor, None).unwrap())
            .collect(),
        deny: deny
            .iter()
            .map(|r| Rule::parse(r, anchor, None).unwrap())
            .collect(),
        ..Default::default()
    };
    let at = |p: &str| root.join(p).display().to_string();
    let cases: Vec<(&str, Value, Rules, Mode, &str, &str)> = vec![
        (
            "Read",
            json!({"file_path": at("out/notes.txt")}),
            with(&[], &[], &root),
            Mode::Default,
            "ask",
            "leads outside the project through a symbolic link",
        ),
        (
            "Read",
            json!({"file_path": at("alias/key")}),
            with(&[], &["Read(./secrets/**)"], &root),
            Mode::Default,
            "deny",
            "Read(./secrets/**) denies",
        ),
        (
            "Read",
            json!({"file_path": at("alias/key")}),
            with(&[], &["Read(./alias/**)"], &root),
            Mode::Default,
            "deny",
            "Read(./alias/**) denies",
        ),
        (
            "Write",
            json!({"file_path": at("hooks/pre-commit"), "content": ""}),
            with(&[], &[], &root),
            Mode::BypassPermissions,
            "ask",
            "a protected path",
        ),
        (
            "Write",
            json!({"file_path": at("out/notes.txt"), "content": ""}),
            with(&[], &[], &root),
            Mode::AcceptEdits,
            "ask",
            "leads outside the project through a symbolic link",
        ),
        (
            "Write",
            json!({"file_path": at("out/notes.txt"), "content": ""}),
            with(&["Edit(./out/**)"], &[], &root),
            Mode::Default,
            "ask",
            "outside the project",
        ),
        (
            "Bash",
            json!({"command": "cat alias/key"}),
            with(&["Bash(cat:*)"], &["Read(./secrets/**)"], &root),
            Mode::BypassPermissions,
            "ask",
            "the command names `alias/key`",
        ),
        (
            "Bash",
            json!({"command": "echo x > hooks/pre-commit"}),
            with(&["Bash(echo:*)", "Edit(./**)"], &[], &root),
            Mode::BypassPermissions,
            "ask",
            "a protected path",
        ),
        (
            "Read",
            json!({"file_path": at("secrets/key")}),
            with(&[], &["Read(./secrets/**)"], &base.join("link-to-proj")),
            Mode::Default,
            "deny",
            "Read(./secrets/**) denies",
        ),
    ];
    let mut failures = Vec::new();
    for (n, (tool, args, rules, mode, expect, fragment)) in cases.iter().enumerate() {
        let d = judge(tool, args, &pass, *mode, rules, &[], &root);
        let (got, why) = shown(&d);
        if got != *expect || !why.contains(fragment) {
            failures.push(format!(
                "case {} ({tool} {args}): expected {expect} with {fragment:?}, got {got} ({why:?})",
                n + 1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
