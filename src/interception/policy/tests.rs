//! The policy's unit tests: rules, coverage, paths, decisions and grants.

use std::path::Path;

use super::bash::*;
use super::decision::*;
use super::rule::*;
use super::*;
use crate::event_log::Verdict;
use crate::shell;
use crate::tools::{Tool, ToolInput};

#[test]
fn mcp_rules_are_read_as_claude_code_reads_them() {
    let root = Path::new("/p");
    for text in [
        "mcp__github",
        "mcp__github__*",
        "mcp__my-server__do_it",
        "mcp__github__create_issue",
    ] {
        assert!(Rule::parse(text, root, None).is_ok(), "{text}");
    }
    let server = Rule::parse("mcp__github", root, None).unwrap();
    let star = Rule::parse("mcp__github__*", root, None).unwrap();
    let one = Rule::parse("mcp__github__create_issue", root, None).unwrap();
    assert!(server.names("mcp__github__create_issue") && star.names("mcp__github__x"));
    assert!(one.names("mcp__github__create_issue") && !one.names("mcp__github__close"));
    assert!(!server.names("mcp__githubx__a") && !star.names("mcp__githubx__a"));
    assert!(!server.names("Bash") && !star.names("mcp__gitlab__a"));
    assert!(Rule::parse("mcp__a b", root, None).is_err());
    assert!(Rule::parse("Bash-x", root, None).is_err());
}
use serde_json::{Value, json};

fn rule(t: &str) -> Rule {
    Rule::parse(t, Path::new("/p"), Some(Path::new("/home/u"))).unwrap()
}

fn no_hooks() -> HookVerdict {
    HookVerdict {
        verdict: Verdict::Pass,
        by: None,
        reason: None,
    }
}

fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
    Rules {
        allow: allow.iter().map(|r| rule(r)).collect(),
        ask: ask.iter().map(|r| rule(r)).collect(),
        deny: deny.iter().map(|r| rule(r)).collect(),
        home: Some("/home/u".into()),
        roots: Vec::new(),
        ..Rules::default()
    }
}

/// `args` accepted by `tool`, as settle accepts them (in `root`).
fn accepted(tool: &str, args: &Value, root: &Path) -> crate::tools::Accepted {
    Tool::from_name(tool)
        .unwrap()
        .accept(args, root)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

fn grant_for_args(tool: &str, args: &Value, root: &Path, home: Option<&Path>) -> Option<Rule> {
    grant_for(&Subject::of(tool, &accepted(tool, args, root)), root, home)
}

fn matches(rule: &Rule, tool: &str, args: &Value, root: &Path) -> bool {
    rule.matches_call(&Subject::of(tool, &accepted(tool, args, root)), root)
}

fn decide_with(tool: &str, args: Value, rules: &Rules, mode: Mode) -> Disposition {
    let root = Path::new("/p");
    let a = accepted(tool, &args, root);
    decide(Subject::of(tool, &a), &no_hooks(), mode, rules, &[], root)
}

/// An MCP call as settle puts it to `decide`.
fn mcp_decide(
    exposed: &str,
    canonical: &str,
    read_only: bool,
    rules: &Rules,
    mode: Mode,
) -> Disposition {
    let (server, tool) = canonical
        .strip_prefix("mcp__")
        .and_then(|n| n.split_once("__"))
        .unwrap();
    let mcp = crate::tools::mcp::McpTool {
        exposed: exposed.into(),
        server: server.into(),
        tool: tool.into(),
        description: String::new(),
        input_schema: json!({"type": "object"}),
        title: None,
        annotations: Default::default(),
        reading: crate::tools::mcp::annotations::Reading {
            read_only,
            open_world: false,
            why: "as configured".into(),
        },
    };
    let input = ToolInput::Mcp(crate::tools::mcp::parse(&mcp, &json!({})).unwrap());
    let call = Subject {
        name: exposed,
        input: &input,
        spelled: None,
        mcp: Some(&mcp),
    };
    decide(call, &no_hooks(), mode, rules, &[], Path::new("/p"))
}

#[test]
fn mcp_calls_are_decided_on_what_the_tool_is() {
    let long = format!("mcp__srv__{}", "x".repeat(70));
    let exposed = "mcp__srv__xxxx_cut_1234abcd";
    // A deny rule written for the whole name holds on a cut one.
    let deny = rules(&[], &[], &[&long]);
    assert!(matches!(
        mcp_decide(exposed, &long, true, &deny, Mode::Default),
        Disposition::Deny { .. }
    ));
    let ask = rules(&[], &[&long], &[]);
    assert!(matches!(
        mcp_decide(exposed, &long, true, &ask, Mode::Default),
        Disposition::Ask { .. }
    ));
    let none = rules(&[], &[], &[]);
    // Not read-only (or reaching the world): asks, in plan mode too.
    assert!(matches!(
        mcp_decide("mcp__s__t", "mcp__s__t", false, &none, Mode::Default),
        Disposition::Ask { .. }
    ));
    assert!(matches!(
        mcp_decide("mcp__s__t", "mcp__s__t", false, &none, Mode::Plan),
        Disposition::Ask { .. }
    ));
    assert!(matches!(
        mcp_decide("mcp__s__t", "mcp__s__t", true, &none, Mode::Plan),
        Disposition::Run { .. }
    ));
    let allow = rules(&["mcp__s"], &[], &[]);
    assert!(matches!(
        mcp_decide("mcp__s__t", "mcp__s__t", false, &allow, Mode::Default),
        Disposition::Run { .. }
    ));
}

fn bash(command: &str, rules: &Rules, mode: Mode) -> Disposition {
    bash_full(command, &no_hooks(), mode, rules, &[], Path::new("/p"))
}

/// A Bash line decided with these hooks, grants and project root.
fn bash_full(
    command: &str,
    hooks: &HookVerdict,
    mode: Mode,
    rules: &Rules,
    grants: &[Rule],
    root: &Path,
) -> Disposition {
    let a = accepted("Bash", &json!({ "command": command }), root);
    decide(Subject::of("Bash", &a), hooks, mode, rules, grants, root)
}

fn runs(d: &Disposition) -> bool {
    matches!(d, Disposition::Run { .. })
}

fn denied(d: &Disposition) -> bool {
    matches!(d, Disposition::Deny { .. })
}

#[test]
fn patterns_are_read_as_shell_words() {
    let m = |r: &str, c: &str| {
        let script = shell::parse(c);
        let cmd = &script.commands[0];
        direct_cover(&rule(r), &allow_lines(cmd))
    };
    assert!(m("Bash(npm run test:*)", "npm run test --watch"));
    assert!(m("Bash(npm run test:*)", "npm run test"));
    assert!(!m("Bash(npm run test:*)", "npm run testing"));
    assert!(m("Bash(git *)", "git push origin main"));
    assert!(!m("Bash(git *)", "gitk"));
    assert!(m("Bash(ls)", "ls"));
    assert!(!m("Bash(ls)", "ls -la"));
    assert!(m("Bash(git commit -m \"wip\")", "git commit -m wip"));
    assert!(m(
        "Bash(git commit -m 'wip *')",
        "git commit -m \"wip on x\""
    ));
    assert!(!m("Bash(echo hello world)", "'echo hello' world"));
}

#[test]
fn star_patterns_cover_and_overlap() {
    let t = |s: &str| -> Vec<Tok> {
        s.chars()
            .map(|c| if c == '*' { Tok::Star } else { Tok::Ch(c) })
            .collect()
    };
    assert!(covers(&t("rm *"), &t("rm -rf x")));
    assert!(covers(&t("ls *"), &t("ls *")));
    assert!(!covers(&t("ls -la"), &t("ls *")));
    assert!(overlaps(&t("rm -rf victim"), &t("* -rf victim")));
    assert!(overlaps(&t("a*"), &t("*b")));
    assert!(!overlaps(&t("rm *"), &t("ls *")));
}

#[test]
fn path_rules_in_claude_codes_forms() {
    assert!(rule("Read(./secrets/**)").matches_path(Path::new("/p/secrets/a/b.txt")));
    assert!(rule("Read(src/*.rs)").matches_path(Path::new("/p/src/lib.rs")));
    assert!(!rule("Read(src/*.rs)").matches_path(Path::new("/p/src/a/lib.rs")));
    assert!(rule("Read(~/.ssh/**)").matches_path(Path::new("/home/u/.ssh/id")));
    assert!(rule("Read(//etc/*)").matches_path(Path::new("/etc/passwd")));
    assert!(rule("Edit(/src/**)").matches_path(Path::new("/p/src/a.ts")));
    assert!(!rule("Edit(/src/**)").matches_path(Path::new("/src/a.ts")));
    assert!(rule("Read(.env)").matches_path(Path::new("/p/sub/.env")));
    assert!(Rule::parse("Bash(x", Path::new("/p"), None).is_err());
    assert!(Rule::parse("Ba sh", Path::new("/p"), None).is_err());
    let user = Rule::parse_in(
        "Read(/notes/**)",
        Anchors {
            cwd: Path::new("/p"),
            project: Path::new("/home/u"),
            home: None,
        },
    )
    .unwrap();
    assert!(user.matches_path(Path::new("/home/u/notes/a")));
}

#[test]
fn an_allow_rule_runs_a_line_only_when_it_covers_everything() {
    let r = rules(&["Bash(ls:*)"], &[], &[]);
    for attack in [
        "ls $(touch M)",
        "ls `touch M`",
        "ls \"$(touch M)\"",
        "ls <(touch M)",
        "ls > M",
        "X=$(touch M) ls",
        "ls 'x\\' ; touch M ; echo 'y'",
        "PATH=./evil:$PATH ls",
        "ls; eval \"$X\"",
        "$CMD",
        "ls (",
    ] {
        let d = bash(attack, &r, Mode::Default);
        assert!(matches!(d, Disposition::Ask { .. }), "{attack}: {d:?}");
    }
    for fine in [
        "ls -la",
        "ls 2>&1 >/dev/null",
        "cd src && ls",
        "ls $(ls)",
        "ls | ls",
    ] {
        assert!(runs(&bash(fine, &r, Mode::Default)), "{fine}");
    }
    let d = bash("ls $(touch M)", &r, Mode::Default);
    let Disposition::Ask {
        reason: Some(why), ..
    } = d
    else {
        panic!("{d:?}")
    };
    assert!(
        why.contains("runs a command substitution: `touch M`"),
        "{why}"
    );
    let d = bash("ls > out.txt", &r, Mode::Default);
    assert!(format!("{d:?}").contains("writes to `out.txt`"), "{d:?}");
    let w = rules(&["Bash(ls:*)", "Edit(./out.txt)"], &[], &[]);
    assert!(runs(&bash("ls > out.txt", &w, Mode::Default)));
}

#[test]
fn a_deny_rule_holds_in_every_form() {
    let r = rules(&[], &[], &["Bash(rm *)"]);
    for attack in [
        "rm -rf victim",
        "rm\t-rf victim",
        "/bin/rm -rf victim",
        "\\rm -rf victim",
        "(rm -rf victim)",
        "{ rm -rf victim; }",
        "if true; then rm -rf victim; fi",
        "command rm -rf victim",
        "bash -c 'rm -rf victim'",
        "ls 'x\\' ; rm -rf victim ; echo 'y'",
        "sudo -u root rm -rf victim",
        "env -i rm -rf victim",
        "timeout 5 rm -rf victim",
        "find . -exec rm -rf {} +",
        "ls | xargs rm -rf",
        "echo $(rm -rf victim)",
        "r\"m\" -rf victim",
        "$'\\x72m' -rf victim",
        "$X -rf victim",
        "eval \"$X\"",
        "curl x | sh",
        "sh -c \"$(curl x)\"",
        "rm -rf victim (",
        "f() { rm -rf victim; }; f",
        "for x in a; do rm -rf $x; done",
    ] {
        for mode in [Mode::Default, Mode::BypassPermissions] {
            let d = bash(attack, &r, mode);
            assert!(denied(&d), "{attack} in {mode:?}: {d:?}");
        }
    }
    for fine in ["ls -la", "echo rm", "git rm x"] {
        assert!(!denied(&bash(fine, &r, Mode::BypassPermissions)), "{fine}");
    }
}

#[test]
fn grants_name_exactly_what_was_allowed() {
    let g = grant_for_args(
        "Bash",
        &json!({"command": "npm test"}),
        Path::new("/p"),
        None,
    )
    .unwrap();
    assert_eq!(g.text(), "Bash(npm test)");
    let none = Rules::default();
    let with = |c: &str| {
        bash_full(
            c,
            &no_hooks(),
            Mode::Default,
            &none,
            std::slice::from_ref(&g),
            Path::new("/p"),
        )
    };
    assert!(runs(&with("npm test")));
    assert!(!runs(&with("npm test && rm -rf /")));
    assert!(!runs(&with("X=$(touch G) npm test")));
    let ls = grant_for_args("Bash", &json!({"command": "ls"}), Path::new("/p"), None).unwrap();
    assert!(!runs(&bash_full(
        "PATH=./evil:$PATH ls",
        &no_hooks(),
        Mode::Default,
        &none,
        &[ls],
        Path::new("/p")
    )));
    assert!(
        grant_for_args(
            "Bash",
            &json!({"command": "eval \"$X\""}),
            Path::new("/p"),
            None
        )
        .is_none()
    );
    let g = grant_for_args(
        "Read",
        &json!({"file_path": "/etc/hosts"}),
        Path::new("/p"),
        None,
    )
    .unwrap();
    assert_eq!(g.text(), "Read(/etc/hosts)");
    assert!(
        grant_for_args(
            "Write",
            &json!({"file_path": "/p/.git/hooks/pre-commit", "content": "x"}),
            Path::new("/p"),
            None
        )
        .is_none()
    );
}

#[test]
fn modes_and_defaults() {
    let none = Rules::default();
    let read_in = json!({"file_path": "/p/a.txt"});
    let read_out = json!({"file_path": "/etc/passwd"});
    assert_eq!(
        decide_with("Read", read_in.clone(), &none, Mode::Default),
        Disposition::Run {
            by: "default".into()
        }
    );
    assert!(matches!(
        decide_with("Read", read_out, &none, Mode::Default),
        Disposition::Ask {
            reason: Some(_),
            ..
        }
    ));
    assert!(matches!(
        bash("ls", &none, Mode::Default),
        Disposition::Ask { .. }
    ));
    assert!(denied(&bash("ls", &none, Mode::Plan)));
    assert_eq!(
        decide_with("Read", read_in, &none, Mode::Plan),
        Disposition::Run {
            by: "default".into()
        }
    );
    assert_eq!(
        bash("ls", &none, Mode::BypassPermissions),
        Disposition::Run {
            by: "mode:bypassPermissions".into()
        }
    );
    assert!(denied(&bash(
        "ls",
        &rules(&[], &[], &["Bash"]),
        Mode::BypassPermissions
    )));
    // Grep and Glob are judged on their `path`, and Read rules govern them.
    let grep_out = json!({"pattern": "x", "path": "/etc"});
    assert!(matches!(
        decide_with("Grep", grep_out, &none, Mode::Plan),
        Disposition::Ask { .. }
    ));
    let env = rules(&[], &[], &["Read(./.env)"]);
    assert!(denied(&decide_with(
        "Grep",
        json!({"pattern": "x", "path": "/p/.env"}),
        &env,
        Mode::Default
    )));
}

#[test]
fn protected_paths_always_ask() {
    let none = Rules::default();
    for mode in [Mode::AcceptEdits, Mode::BypassPermissions] {
        for path in [
            "/p/.claude/settings.local.json",
            "/p/.git/hooks/pre-commit",
            "/p/.candor/config.toml",
        ] {
            let d = decide_with(
                "Write",
                json!({"file_path": path, "content": ""}),
                &none,
                mode,
            );
            assert!(
                matches!(&d, Disposition::Ask { by, .. } if by == "protected"),
                "{path} in {mode:?}: {d:?}"
            );
        }
        for c in [
            "echo x > .git/hooks/pre-commit",
            "cp evil .git/hooks/pre-commit",
            "cd .git && tee hooks/pre-commit",
            "bash -c 'echo {} > .claude/settings.local.json'",
            "F=.git/hooks/pre-commit; echo x > $F",
            "d=.claude; cp x \"$d/settings.json\"",
        ] {
            let d = bash(c, &none, mode);
            assert!(
                matches!(&d, Disposition::Ask { by, .. } if by == "protected"),
                "{c}: {d:?}"
            );
        }
    }
    assert!(runs(&decide_with(
        "Write",
        json!({"file_path": "/p/src/a.rs", "content": ""}),
        &none,
        Mode::AcceptEdits
    )));
}

#[test]
fn bash_naming_a_denied_path_asks() {
    let r = rules(&["Bash(cat:*)"], &[], &["Read(./.env)"]);
    for c in [
        "cat .env",
        "cat ./.env",
        "cat < .env",
        "cat /p/.env",
        "cd sub/.. && cat .env",
    ] {
        let d = bash(c, &r, Mode::BypassPermissions);
        assert!(
            matches!(&d, Disposition::Ask { reason: Some(why), .. } if why.contains(".env")),
            "{c}: {d:?}"
        );
    }
    assert!(runs(&bash("cat README.md", &r, Mode::Default)));
}

#[test]
fn words_known_only_at_run_time_are_expanded_on_disk_for_deny_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".env"), "KEY=1").unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/key.txt"), "TOKEN").unwrap();
    std::fs::write(root.join("README.md"), "hi").unwrap();
    let rule = |t: &str| Rule::parse(t, root, None).unwrap();
    let rules = Rules {
        allow: vec![rule("Bash(cat:*)")],
        deny: vec![rule("Read(./.env)"), rule("Read(./secrets/**)")],
        ..Rules::default()
    };
    let with = |c: &str| bash_full(c, &no_hooks(), Mode::BypassPermissions, &rules, &[], root);
    for c in [
        "cat .e*",
        "cat secrets/*",
        "cat s*/key.txt",
        "cat $F",
        "grep -r TOKEN secrets",
    ] {
        let d = with(c);
        assert!(
            matches!(&d, Disposition::Ask { reason: Some(why), .. } if why.contains("denies")),
            "{c}: {d:?}"
        );
    }
    assert!(runs(&with("cat *.md")));
}

#[test]
fn an_unreadable_deny_rule_fails_closed() {
    let mut r = Rules::default();
    r.deny_unreadable("Bash(rm *");
    assert!(matches!(
        bash("ls", &r, Mode::BypassPermissions),
        Disposition::Ask { .. }
    ));
    assert!(runs(&decide_with(
        "Read",
        json!({"file_path": "/p/a"}),
        &r,
        Mode::Default
    )));
}

#[test]
fn hooks_slot_into_the_order() {
    let rules = rules(&[], &["Bash(git push:*)"], &["Bash(rm *)"]);
    let allow = HookVerdict {
        verdict: Verdict::Allow,
        by: Some("h".into()),
        reason: None,
    };
    let with = |c: &str| bash_full(c, &allow, Mode::Default, &rules, &[], Path::new("/p"));
    assert!(
        denied(&with("rm -rf x")),
        "an allowing hook cannot pass a deny rule"
    );
    assert!(
        matches!(with("git push origin"), Disposition::Ask { .. }),
        "nor an ask rule"
    );
    assert_eq!(
        with("ls"),
        Disposition::Run {
            by: "hook:h".into()
        }
    );
}

#[test]
fn hook_filters_use_the_same_reading() {
    let r = rule("Bash(rm *)");
    for c in [
        "(rm -rf x)",
        "true && rm\t-rf x",
        "ls 'x\\' ; rm -rf x",
        "rm -rf x (",
    ] {
        assert!(
            matches(&r, "Bash", &json!({ "command": c }), Path::new("/p")),
            "{c}"
        );
    }
    assert!(!matches(
        &r,
        "Bash",
        &json!({"command": "ls"}),
        Path::new("/p")
    ));
}

#[test]
fn webfetch_rules_name_domains_as_claude_code_writes_them() {
    let fetch = |url: &str| json!({"url": url, "prompt": "p"});
    let run = |d: &Disposition| matches!(d, Disposition::Run { .. });
    let asks = |d: &Disposition| matches!(d, Disposition::Ask { .. });
    // By default a domain asks, naming it and the rule that would allow it.
    let none = rules(&[], &[], &[]);
    let d = decide_with("WebFetch", fetch("https://Docs.RS/x"), &none, Mode::Default);
    let Disposition::Ask {
        reason: Some(why), ..
    } = &d
    else {
        panic!("{d:?}")
    };
    assert!(
        why.contains("docs.rs") && why.contains("WebFetch(domain:docs.rs)"),
        "{why}"
    );
    // In plan mode too: it asks, it is not refused (it changes nothing here).
    assert!(asks(&decide_with(
        "WebFetch",
        fetch("https://docs.rs/"),
        &none,
        Mode::Plan
    )));
    let r = rules(
        &["WebFetch(domain:docs.rs)", "WebFetch(domain:*.github.com)"],
        &["WebFetch(domain:api.github.com)"],
        &["WebFetch(domain:evil.example)"],
    );
    assert!(run(&decide_with(
        "WebFetch",
        fetch("https://docs.rs/a"),
        &r,
        Mode::Default
    )));
    assert!(asks(&decide_with(
        "WebFetch",
        fetch("https://www.docs.rs/a"),
        &r,
        Mode::Default
    )));
    assert!(run(&decide_with(
        "WebFetch",
        fetch("https://raw.github.com/"),
        &r,
        Mode::Default
    )));
    assert!(asks(&decide_with(
        "WebFetch",
        fetch("https://github.com/"),
        &r,
        Mode::Default
    )));
    assert!(asks(&decide_with(
        "WebFetch",
        fetch("https://api.github.com/"),
        &r,
        Mode::Default
    )));
    let d = decide_with(
        "WebFetch",
        fetch("http://EVIL.example./x"),
        &r,
        Mode::Default,
    );
    assert!(
        matches!(&d, Disposition::Deny { by, .. } if by == "rule:WebFetch(domain:evil.example)"),
        "{d:?}"
    );
    // Even in bypassPermissions a deny rule holds.
    let d = decide_with(
        "WebFetch",
        fetch("https://evil.example/"),
        &r,
        Mode::BypassPermissions,
    );
    assert!(matches!(d, Disposition::Deny { .. }), "{d:?}");
    // A bare rule, or domain:*, names every domain.
    for all in ["WebFetch", "WebFetch(domain:*)"] {
        let r = rules(&[all], &[], &[]);
        assert!(run(&decide_with(
            "WebFetch",
            fetch("https://any.example/"),
            &r,
            Mode::Default
        )));
    }
    // A rule that is not a domain is refused (a deny rule then fails closed).
    for bad in [
        "WebFetch(https://example.com)",
        "WebFetch(domain:)",
        "WebFetch(domain:a b)",
    ] {
        assert!(Rule::parse(bad, Path::new("/p"), None).is_err(), "{bad}");
    }
}

#[test]
fn a_rule_naming_an_address_names_it_in_every_spelling() {
    // An address has many spellings in a URL; a deny rule that names one
    // must hold for the others (the same socket address), and an allow
    // rule or a grant too.
    let fetch = |url: &str| json!({"url": url, "prompt": "p"});
    let r = rules(
        &["WebFetch"],
        &[],
        &["WebFetch(domain:10.0.0.5)", "WebFetch(domain:::1)"],
    );
    for url in [
        "http://10.0.0.5/",
        "http://167772165/",
        "http://0xa.0.0.5/",
        "http://[::ffff:10.0.0.5]/",
        "http://[::ffff:a00:5]:8080/",
        "http://[0:0:0:0:0:0:0:1]/",
        "http://10.0.0.5./",
    ] {
        let d = decide_with("WebFetch", fetch(url), &r, Mode::Default);
        assert!(matches!(d, Disposition::Deny { .. }), "{url}: {d:?}");
    }
    // A rule may spell the address as it likes, too.
    let r = rules(
        &["WebFetch"],
        &[],
        &["WebFetch(domain:[::ffff:a00:5])", "WebFetch(domain:0:0::1)"],
    );
    for url in ["http://10.0.0.5/", "http://[::1]/"] {
        let d = decide_with("WebFetch", fetch(url), &r, Mode::Default);
        assert!(matches!(d, Disposition::Deny { .. }), "{url}: {d:?}");
    }
    // A control: another address is not named.
    let d = decide_with("WebFetch", fetch("http://10.0.0.6/"), &r, Mode::Default);
    assert!(matches!(d, Disposition::Run { .. }), "{d:?}");
    // "Always allow" on one spelling grants the address.
    let grant = grant_for_args(
        "WebFetch",
        &fetch("http://[::ffff:10.0.0.5]/"),
        Path::new("/p"),
        None,
    )
    .unwrap();
    assert_eq!(grant.text(), "WebFetch(domain:10.0.0.5)");
}

#[test]
fn a_webfetch_rule_judges_the_host_the_fetch_reaches_however_the_url_is_written() {
    let fetch = |url: &str| json!({"url": url, "prompt": "p"});
    let r = rules(&["WebFetch(domain:docs.rs)"], &[], &[]);
    let decide_url = |url: &str| decide_with("WebFetch", fetch(url), &r, Mode::Default);
    // The same host, spelled otherwise: allowed.
    for url in [
        "https://DOCS.RS./a",
        "https://docs%2Ers/a",
        "https://docs\u{3002}rs/a",
        "https://docs.rs:443/a",
    ] {
        let d = decide_url(url);
        assert!(matches!(d, Disposition::Run { .. }), "{url}: {d:?}");
    }
    // Another host that looks like it, or hides behind it: asked about,
    // named as the fetch would reach it.
    for (url, host) in [
        ("https://d\u{43e}cs.rs/", "xn--dcs-sed.rs"),
        ("https://evil.example\\@docs.rs/", "evil.example"),
        ("https://docs.rs.evil.example/", "docs.rs.evil.example"),
        ("https://docs%2Ers%2Eevil.example/", "docs.rs.evil.example"),
    ] {
        let d = decide_url(url);
        let Disposition::Ask {
            reason: Some(why), ..
        } = &d
        else {
            panic!("{url}: {d:?}")
        };
        assert!(why.contains(&format!(": {host} (")), "{url}: {why}");
    }
}

#[test]
fn a_webfetch_grant_is_its_host_and_lets_the_next_fetch_there_run() {
    let root = Path::new("/p");
    let args = json!({"url": "https://Docs.rs/a?b", "prompt": "p"});
    let grant = grant_for_args("WebFetch", &args, root, None).unwrap();
    assert_eq!(grant.text(), "WebFetch(domain:docs.rs)");
    let other = accepted(
        "WebFetch",
        &json!({"url": "https://docs.rs/other", "prompt": "q"}),
        root,
    );
    let d = decide(
        Subject::of("WebFetch", &other),
        &no_hooks(),
        Mode::Default,
        &Rules::default(),
        std::slice::from_ref(&grant),
        root,
    );
    assert!(
        matches!(&d, Disposition::Run { by } if by == "grant:WebFetch(domain:docs.rs)"),
        "{d:?}"
    );
    let elsewhere = accepted(
        "WebFetch",
        &json!({"url": "https://sub.docs.rs/", "prompt": "q"}),
        root,
    );
    let d = decide(
        Subject::of("WebFetch", &elsewhere),
        &no_hooks(),
        Mode::Default,
        &Rules::default(),
        &[grant],
        root,
    );
    assert!(matches!(d, Disposition::Ask { .. }), "{d:?}");
    assert!(Rule::grant("WebFetch(domain:*.docs.rs)").is_err());
    // Hooks' `if` filters read the same domain.
    let filter = rule("WebFetch(domain:docs.rs)");
    assert!(matches(&filter, "WebFetch", &args, root));
    assert!(!matches(
        &filter,
        "WebFetch",
        &json!({"url": "https://x.org/", "prompt": "p"}),
        root
    ));
}
