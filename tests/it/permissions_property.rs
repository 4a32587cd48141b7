//! Permission rules decided on the parsed command, tested by generation.
//!
//! * A denied command wrapped in random shell constructs (1–6 deep) is never
//!   allowed to run, and the generator is checked against bash itself: a
//!   sample of its lines, run by bash directly, really does run the command.
//! * The parser and the decision never panic on arbitrary input, and a line
//!   the parser cannot read never runs on the strength of an allow rule.
//! * Deeply nested input does not overflow the stack of a 2 MiB thread (the
//!   size of a tokio worker's), each case checked in a child process so that
//!   a crash is reported as the case that crashed.
//!
//! Reproduce or widen a run with `CANDOR_PROPTEST_SEED`,
//! `CANDOR_PROPTEST_CASES` and `CANDOR_FUZZ_SECS` (and `CANDOR_FUZZ_LAST`, a
//! file each fuzz input is written to before it is tried).
//!
//! What they found (misread lines that ran `rm`, a crash in the parser's
//! scanner) is fixed and kept as regression cases (`FORMER_BUGS`, and the
//! `U+10FFFF` deep case).

// The tests report what they explored on stderr.
#![allow(clippy::print_stderr)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use candor::interception::Verdict;
use candor::interception::policy::{Disposition, HookVerdict, Mode, Rule, Rules, Subject, decide};
use candor::shell;
use candor::tools::Tool;
use serde_json::json;

const DEFAULT_SEED: u64 = 0x00c0_ffee_5eed;

fn seed() -> u64 {
    match std::env::var("CANDOR_PROPTEST_SEED") {
        Ok(s) => {
            let s = s.trim();
            s.strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16))
                .unwrap_or_else(|| s.parse())
                .unwrap_or_else(|_| panic!("CANDOR_PROPTEST_SEED={s:?} is not a number"))
        }
        Err(_) => DEFAULT_SEED,
    }
}

fn env_number(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        })
        .unwrap_or(default)
}

fn rules(root: &Path, allow: &[&str], ask: &[&str], deny: &[&str]) -> Rules {
    let parse = |list: &[&str]| -> Vec<Rule> {
        list.iter()
            .map(|r| Rule::parse(r, root, None).unwrap())
            .collect()
    };
    Rules {
        allow: parse(allow),
        ask: parse(ask),
        deny: parse(deny),
        ..Rules::default()
    }
}

fn no_hooks() -> HookVerdict {
    HookVerdict {
        verdict: Verdict::Pass,
        by: None,
        reason: None,
    }
}

/// A Bash call of this line decided as `interception::settle` does: the
/// arguments accepted by the tool (which reads the line, once), a line it
/// refuses (an empty one) denied by candor, the rest judged on the input.
fn bash(line: &str, mode: Mode, rules: &Rules, root: &Path) -> Disposition {
    let args = json!({ "command": line });
    let accepted = match Tool::Bash.accept(&args, root) {
        Ok(accepted) => accepted,
        Err(reason) => {
            return Disposition::Deny {
                by: "candor".into(),
                reason,
            };
        }
    };
    decide(
        Subject::of("Bash", &accepted),
        &no_hooks(),
        mode,
        rules,
        &[],
        root,
    )
}

// ---------------------------------------------------------------------------
// The generator.

/// What the innermost command is, and the rule that forbids it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// `rm -rf victim` under `deny: Bash(rm *)`.
    Rm,
    /// `touch M` under `deny: Bash(touch:*)`.
    Touch,
    /// `rm -rf victim` under `deny: Edit(./victim)` only: a Bash line naming
    /// a denied path asks (it is never allowed, not necessarily denied).
    DeniedPath,
}

impl Target {
    const ALL: [Target; 3] = [Target::Rm, Target::Touch, Target::DeniedPath];

    fn deny(self) -> &'static str {
        match self {
            Target::Rm => "Bash(rm *)",
            Target::Touch => "Bash(touch:*)",
            Target::DeniedPath => "Edit(./victim)",
        }
    }
}

/// A generated piece of shell code and what can be put around it.
#[derive(Debug, Clone)]
struct Gen {
    text: String,
    /// A simple command: wrappers can go in front of it.
    simple: bool,
    /// Its command is a program on disk, so `env`, `nohup`, `xargs`, … can
    /// run it (not a builtin such as `eval` or `command`).
    program: bool,
    /// A list (`a; b`, `a && b`, a comment line): grouped before it is piped.
    list: bool,
    /// Needs bash (`<( )`, `time`, `$'…'`, `function f`): never in `sh -c`.
    bashism: bool,
    /// Uses `sudo` (not installed here: not executed).
    sudo: bool,
    /// A simple command with an assignment in front (`A=1 cmd`).
    assigns: bool,
    target: Target,
    /// The constructs, innermost first.
    steps: Vec<&'static str>,
}

impl Gen {
    fn wrap(&self, step: &'static str, text: String) -> Gen {
        let mut steps = self.steps.clone();
        steps.push(step);
        Gen {
            text,
            simple: false,
            program: false,
            list: false,
            bashism: self.bashism,
            sudo: self.sudo,
            assigns: false,
            target: self.target,
            steps,
        }
    }

    fn simple(mut self, program: bool) -> Gen {
        self.simple = true;
        self.program = program;
        self
    }

    fn list(mut self) -> Gen {
        self.list = true;
        self
    }

    fn bashism(mut self) -> Gen {
        self.bashism = true;
        self
    }
}

/// Whitespace between words: spaces, tabs, or a line continuation.
fn sp(rng: &mut fastrand::Rng) -> &'static str {
    match rng.u8(0..10) {
        0..=4 => " ",
        5 | 6 => "\t",
        7 => "  ",
        8 => " \t",
        _ => " \\\n",
    }
}

/// Single-quotes text for the shell.
fn single(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Double-quotes text for the shell.
fn double(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn base(rng: &mut fastrand::Rng, target: Target) -> Gen {
    let s = sp(rng);
    let t = sp(rng);
    let (text, bashism) = match target {
        Target::Rm | Target::DeniedPath => match rng.u8(0..10) {
            0 => (format!("rm{s}-rf{t}victim"), false),
            1 => (format!("\\rm{s}-rf{t}victim"), false),
            2 => (format!("/bin/rm{s}-rf{t}victim"), false),
            3 => (format!("'rm'{s}-rf{t}victim"), false),
            4 => (format!("r\"m\"{s}-rf{t}victim"), false),
            5 => (format!("$'\\x72m'{s}-rf{t}victim"), true),
            6 => (format!("rm{s}-r{t}-f{s}victim"), false),
            7 => (format!("rm{s}-rf{t}--{s}victim"), false),
            8 => (format!("/usr/bin/rm{s}-rf{t}victim"), false),
            _ => (format!("rm{s}-rf{t}'victim'"), false),
        },
        Target::Touch => match rng.u8(0..7) {
            0 => (format!("touch{s}M"), false),
            1 => (format!("\\touch{s}M"), false),
            2 => (format!("/usr/bin/touch{s}M"), false),
            3 => (format!("'touch'{s}M"), false),
            4 => (format!("t\"ouch\"{s}\"M\""), false),
            5 => (format!("$'touch'{s}M"), true),
            _ => (format!("touch{s}--{t}M"), false),
        },
    };
    Gen {
        text,
        simple: true,
        program: true,
        list: false,
        bashism,
        sudo: false,
        assigns: false,
        target,
        steps: vec!["base"],
    }
}

/// Puts `inner` in a form a wrapper can run: itself when it is a simple
/// command of a program, else as `bash -c '…'`.
fn as_program(rng: &mut fastrand::Rng, inner: &Gen) -> Gen {
    if inner.simple && inner.program {
        inner.clone()
    } else {
        let s = sp(rng);
        inner
            .wrap(
                "bash -c (for a wrapper)",
                format!("bash{s}-c{s}{}", single(&inner.text)),
            )
            .simple(true)
    }
}

/// `inner` as one element of a pipeline or an `&&` list.
fn grouped(rng: &mut fastrand::Rng, inner: &Gen) -> String {
    if inner.list {
        let s = sp(rng);
        if rng.bool() {
            format!("{{{s}{};{s}}}", inner.text)
        } else {
            format!("({s}{}{s})", inner.text)
        }
    } else {
        inner.text.clone()
    }
}

/// Wraps `inner` in one random construct that still runs it.
fn construct(rng: &mut fastrand::Rng, inner: &Gen, fresh: &mut usize) -> Gen {
    let s = sp(rng);
    let t = sp(rng);
    let x = &inner.text;
    match rng.u8(0..54) {
        0 => inner.wrap("pipe", format!("true{s}|{t}{}", grouped(rng, inner))),
        1 => inner.wrap("pipe", format!("{}{s}|{t}cat", grouped(rng, inner))),
        2 => inner.wrap("&&", format!("true{s}&&{t}{x}")).list(),
        3 => inner.wrap("||", format!("false{s}||{t}{x}")).list(),
        4 => inner
            .wrap("||", format!("{}{s}||{t}true", grouped(rng, inner)))
            .list(),
        5 => inner.wrap(";", format!("echo a;{s}{x}")).list(),
        6 => inner.wrap("newline", format!("true\n{x}")).list(),
        7 => inner.wrap("subshell", format!("({s}{x}{t})")),
        8 => inner.wrap("group", format!("{{{s}{x};{t}}}")),
        9 => inner.wrap("group", format!("{{\n{x}\n}}")),
        10 => inner.wrap("if", format!("if{s}true;{t}then{s}{x};{t}fi")),
        11 => inner.wrap("if-else", format!("if false; then :;{s}else{t}{x};{s}fi")),
        12 => inner.wrap("if-condition", format!("if{s}{x};{t}then{s}:;{t}fi")),
        13 => inner.wrap("for", format!("for i in 1;{s}do{t}{x};{s}done")),
        14 => inner
            .wrap("while-false", format!("while false;{s}do :;{t}done;{s}{x}"))
            .list(),
        15 => inner.wrap(
            "while-once",
            format!("while true;{s}do{t}{x};{s}break;{t}done"),
        ),
        16 => inner.wrap("case", format!("case x in{s}x){t}{x};;{s}esac")),
        17 => inner.wrap("case", format!("case x in{s}(x){t}{x}{s};;{t}esac")),
        18 => {
            *fresh += 1;
            let f = format!("f{fresh}");
            inner
                .wrap("function", format!("{f}(){s}{{{t}{x};{s}}};{t}{f}"))
                .list()
        }
        19 => {
            *fresh += 1;
            let f = format!("f{fresh}");
            inner
                .wrap("function", format!("function {f}{s}{{{t}{x};{s}}}\n{f}"))
                .list()
                .bashism()
        }
        20 => inner.wrap("$( )", format!("echo{s}$({t}{x}{s})")),
        21 => inner.wrap("\"$( )\"", format!("echo{s}\"$({t}{x}{s})\"")),
        22 => inner.wrap("X=$( )", format!("X=$({t}{x}{s}){s}true")),
        23 => inner.wrap("X=$( )", format!("X=\"$({t}{x}{s})\"")),
        24 if !x.contains(['\\', '`']) => inner.wrap("backticks", format!("echo{s}`{x}`")),
        25 => inner.wrap("<( )", format!("cat{s}<({t}{x}{s})")).bashism(),
        26 => inner
            .wrap("< <( )", format!("cat{s}<{t}<({t}{x}{s})"))
            .bashism(),
        27 => inner
            .wrap("bash -c '…'", format!("bash{s}-c{t}{}", single(x)))
            .simple(true),
        28 => inner
            .wrap("bash -c \"…\"", format!("bash{s}-c{t}{}", double(x)))
            .simple(true),
        29 if !inner.bashism => inner
            .wrap("sh -c '…'", format!("sh{s}-c{t}{}", single(x)))
            .simple(true),
        30 if !inner.bashism => inner
            .wrap("sh -c \"…\"", format!("sh{s}-c{t}{}", double(x)))
            .simple(true),
        31 => inner
            .wrap("eval '…'", format!("eval{s}{}", single(x)))
            .simple(false),
        32 => inner
            .wrap("eval \"…\"", format!("eval{s}{}", double(x)))
            .simple(false),
        33 => {
            let p = as_program(rng, inner);
            let w = if rng.bool() { "env" } else { "env A=1" };
            p.wrap("env", format!("{w}{s}{}", p.text)).simple(true)
        }
        34 => {
            // `command` runs builtins too, but is itself a builtin.
            let p = if inner.simple && !inner.assigns {
                inner.clone()
            } else {
                as_program(rng, inner)
            };
            p.wrap("command", format!("command{s}{}", p.text))
                .simple(false)
        }
        35 => {
            let p = as_program(rng, inner);
            p.wrap("nohup", format!("nohup{s}{}", p.text)).simple(true)
        }
        36 => {
            let p = as_program(rng, inner);
            p.wrap("timeout 5", format!("timeout{s}5{t}{}", p.text))
                .simple(true)
        }
        37 => {
            let p = as_program(rng, inner);
            p.wrap("nice -n 1", format!("nice{s}-n{t}1{s}{}", p.text))
                .simple(true)
        }
        38 => {
            let p = as_program(rng, inner);
            let mut g = p
                .wrap("sudo -u root", format!("sudo{s}-u{t}root{s}{}", p.text))
                .simple(true);
            g.sudo = true;
            g
        }
        39 => {
            let p = as_program(rng, inner);
            p.wrap(
                "xargs </dev/null",
                format!("xargs{s}{}{t}</dev/null", p.text),
            )
            .simple(true)
        }
        40 => {
            let p = as_program(rng, inner);
            p.wrap(": | xargs", format!(":{s}|{t}xargs{s}{}", p.text))
        }
        41 => {
            let p = as_program(rng, inner);
            p.wrap("stdbuf -oL", format!("stdbuf{s}-oL{t}{}", p.text))
                .simple(true)
        }
        42 => inner
            .wrap("time", format!("time{s}{}", grouped(rng, inner)))
            .bashism(),
        43 => inner.wrap("!", format!("!{s}{}", grouped(rng, inner))),
        44 => inner.wrap("! ( )", format!("!{s}({t}{x}{s})")),
        45 => inner
            .wrap(
                "here-document",
                format!("cat <<EOF\n$({t}{x}{s})\nEOF\ntrue"),
            )
            .list(),
        46 => inner
            .wrap("bash <<'EOF'", format!("bash <<'EOF'\n{x}\nEOF\ntrue"))
            .list(),
        47 => {
            // One `-exec` per `find`: the first `;` would end both.
            let p = if inner.steps.last() == Some(&"find -exec") {
                let s = sp(rng);
                inner
                    .wrap("bash -c (for find)", format!("bash{s}-c{s}{}", single(x)))
                    .simple(true)
            } else {
                as_program(rng, inner)
            };
            p.wrap(
                "find -exec",
                format!("find{s}.{s}-maxdepth 0{t}-exec{s}{}{t}\\;", p.text),
            )
            .simple(true)
        }
        48 => inner.wrap(
            "( exec )",
            format!("({s}exec{t}{}{s})", as_program(rng, inner).text),
        ),
        49 => inner
            .wrap("trap", format!("trap{s}{}{t}EXIT", single(x)))
            .list(),
        50 if inner.simple => {
            // Simple, but not a program that `nice` or `nohup` could run.
            let mut g = inner.wrap("A=1", format!("A=1{s}{x}")).simple(false);
            g.assigns = true;
            g
        }
        51 => {
            let p = as_program(rng, inner);
            let w = [
                "env -i",
                "env -u HOME --",
                "timeout -k 1 5",
                "timeout --preserve-status 5",
                "nice -5",
                "xargs -0",
                "stdbuf -i0 -e0",
            ];
            let w = w[rng.usize(..w.len())];
            p.wrap("wrapper options", format!("{w}{s}{}{t}</dev/null", p.text))
                .simple(true)
        }
        _ => inner
            .wrap("comment", format!("# rm is not here '\"`\n{x}"))
            .list(),
    }
}

fn generate(rng: &mut fastrand::Rng, target: Target) -> Gen {
    let mut fresh = 0;
    let mut g = base(rng, target);
    let depth = rng.usize(1..=6);
    while g.steps.len() <= depth {
        g = construct(rng, &g, &mut fresh);
    }
    if rng.u8(0..8) == 0 {
        g.text.push_str(" # trailing comment");
    }
    g
}

/// Runs `line` with bash in a fresh directory holding `victim/file`;
/// whether the target command ran (`victim` gone, or `M` created).
#[allow(clippy::disallowed_methods)] // bash itself checks the generator
fn ran_in_bash(line: &str, target: Target) -> bool {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("victim")).unwrap();
    std::fs::write(dir.path().join("victim/file"), "x").unwrap();
    let mut child = Process::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    match target {
        Target::Rm | Target::DeniedPath => !dir.path().join("victim").exists(),
        Target::Touch => dir.path().join("M").exists(),
    }
}

#[test]
fn a_denied_command_never_runs_in_any_wrapping() {
    property();
}

fn property() {
    let seed = seed();
    let cases = env_number("CANDOR_PROPTEST_CASES", 2000.0) as usize;
    let mut rng = fastrand::Rng::with_seed(seed);
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let hint = format!("(seed {seed:#x}: rerun with CANDOR_PROPTEST_SEED={seed:#x})");

    let mut failures: Vec<String> = Vec::new();
    let mut unreadable = 0;
    let mut path_answers = (0, 0);
    let mut sample: Vec<(Gen, Target)> = Vec::new();
    let started = Instant::now();
    for case in 0..cases {
        let target = Target::ALL[case % Target::ALL.len()];
        let g = generate(&mut rng, target);
        let line = &g.text;
        for (mode, allow) in [
            (Mode::Default, &[][..]),
            (Mode::Default, &["Bash(*)", "Edit(./**)"][..]),
            (Mode::BypassPermissions, &[][..]),
        ] {
            let r = rules(root, allow, &[], &[target.deny()]);
            let d = bash(line, mode, &r, root);
            let ok = match (target, &d) {
                (Target::DeniedPath, Disposition::Ask { .. }) => {
                    path_answers.0 += 1;
                    true
                }
                (Target::DeniedPath, Disposition::Deny { .. }) => {
                    path_answers.1 += 1;
                    true
                }
                (_, Disposition::Deny { reason, .. }) => {
                    if reason.contains("cannot read") && mode == Mode::BypassPermissions {
                        unreadable += 1;
                    }
                    true
                }
                _ => false,
            };
            if !ok && failures.len() < 20 {
                failures.push(format!(
                    "case {case}, {target:?} under {:?}, {mode:?}, allow {allow:?}\n  line:  {line:?}\n  steps: {}\n  got:   {d:?}",
                    target.deny(),
                    g.steps.join(" → ")
                ));
            }
        }
        if sample.len() < 40 && !g.sudo && case % 7 == 0 {
            sample.push((g, target));
        }
    }
    eprintln!(
        "permissions property: {cases} lines in {:.2?} {hint}; {unreadable} denied as unreadable; \
         denied-path answers: {} ask, {} deny",
        started.elapsed(),
        path_answers.0,
        path_answers.1
    );
    assert!(
        failures.is_empty(),
        "{} generated lines were not refused {hint}:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // Not vacuous: the lines do run the command when bash runs them.
    let mut missed = Vec::new();
    for (g, target) in &sample {
        if !ran_in_bash(&g.text, *target) {
            missed.push(format!("  {:?}  ({})", g.text, g.steps.join(" → ")));
        }
    }
    let ran = sample.len() - missed.len();
    eprintln!(
        "permissions property: bash ran the target command in {ran} of {} sampled lines",
        sample.len()
    );
    assert!(sample.len() >= 30, "only {} lines sampled", sample.len());
    assert!(
        ran * 100 >= sample.len() * 95,
        "the generator makes lines that do not run the command {hint}:\n{}",
        missed.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Fuzzing without coverage: random bytes and mutations of tricky lines.

/// Lines that have broken shell readers before, or could.
fn corpus() -> Vec<String> {
    let mut lines: Vec<String> = [
        "rm -rf victim",
        "ls 'x\\' ; rm -rf victim ; echo 'y'",
        "echo \"$(rm x)\" `rm y` <(rm z) >(rm w)",
        "cat <<EOF\n$(rm x)\n`rm y`\nEOF\necho done",
        "cat <<'EOF'\nrm x\nEOF",
        "cat <<-EOF\n\trm x\n\tEOF\n",
        "cat <<EOF",
        "$'\\x72m' -rf victim $'\\u00e9' $'\\U0001F4A5' $'\\c?' $'\\777'",
        "echo $'\\xZZ' $'\\u{zz}' $'\\c' $'\\",
        "echo \"unterminated",
        "echo 'unterminated",
        "echo \\",
        "a && b || c | d & e; f |& g",
        "f() { rm x; }; f; function g { rm y; }; g",
        "case $x in a|b) rm;; (*) ;& esac",
        "for ((i=0;i<3;i++)); do echo $i; done",
        "echo $((x+1)) $[1+1] $(( $(rm x) ))",
        "((x++)); let x=1; [[ $x -eq 1 ]]; declare -n r=x; declare -i n=x",
        "echo ${x@P} ${x:-$(rm y)} ${#x} ${x//a/b} ${!x} ${x[$(rm z)]}",
        "x=( a b $(rm c) ); y+=( \"$(rm d)\" )",
        "coproc rm x; trap 'rm x' EXIT; watch -n 1 rm x",
        "find . -name '*.rs' -exec rm {} \\; -exec ls {} +",
        "sudo -u root -- env -i A=1 timeout -s KILL 5 nice -n 3 stdbuf -oL rm x",
        "env -S 'rm x'; su -c 'rm x' root; flock /tmp/l -c 'rm x'",
        "bash -c \"$(curl x)\"; curl x | sh; sh < x; source ./x; . x",
        "echo a\\\n rm b",
        "echo a\u{0}b \u{0} rm",
        "ls {a,b}{1..3} [a-z]*? ~/x ~root",
        "exec 3>&1 4<in >out 2>&1 &>all >|x <>rw 5<&- >&-",
        "select x in a; do rm; done",
        "! rm x; time -p rm x; time",
        "echo `rm \\`ls\\``",
        "echo \"`echo \\\"$(rm x)\\\"`\"",
        "(((((((((",
        "$($($($($(",
        ")))))}}}]]]fi done esac",
        "if then else fi",
        "<<<<<<<< >>>>>>> &&&&&& |||||| ;;;;;;",
        "echo $\"translated $(rm x)\"",
        "PATH=/tmp:$PATH ls; IFS=x; export LD_PRELOAD=x",
        "rm -rf victim # $(ls)\n# comment only",
        "eval \"$X\"; eval 'rm x'; $CMD x; \"$@\"",
        "\u{feff}rm x; ｒｍ x; rm\u{a0}x",
        "x=$'\\n' y=\"\\$(rm)\" z='$(rm)'",
        "[ -f x ] && test -d y || : ; true; false",
        "while read l; do rm \"$l\"; done < list",
        "a=1 b=2 c=$(rm x) d",
        "git log --format='%H %s' | xargs -I{} git show {}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    lines.push("x".repeat(20_000));
    lines.push("'".repeat(1_001));
    lines.push("\\".repeat(1_001));
    lines.push("${".repeat(300));
    lines.push("(".repeat(500));
    lines.push("$(".repeat(200));
    lines.push(format!("{}rm x{}", "$(".repeat(200), ")".repeat(200)));
    let mut rng = fastrand::Rng::with_seed(7);
    for target in Target::ALL {
        for _ in 0..4 {
            lines.push(generate(&mut rng, target).text);
        }
    }
    lines
}

/// Pieces a mutation inserts.
const TOKENS: [&str; 48] = [
    "rm",
    "rm -rf victim",
    " ",
    "\t",
    "\n",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "(",
    ")",
    "{ ",
    "; }",
    "$(",
    "`",
    "'",
    "\"",
    "\\",
    "$'",
    "${",
    "}",
    "$((",
    "))",
    "<(",
    ">",
    "<<EOF\n",
    "\nEOF\n",
    "bash -c ",
    "sh -c '",
    "eval ",
    "sudo ",
    "env ",
    "xargs ",
    "timeout 5 ",
    "find . -exec ",
    " {} \\;",
    "case x in x) ",
    ";; esac",
    "if true; then ",
    "; fi",
    "for i in 1; do ",
    "; done",
    "#",
    "\u{0}",
    "é",
    "💥",
    "=",
];

fn mutate(rng: &mut fastrand::Rng, corpus: &[String]) -> String {
    let mut bytes = corpus[rng.usize(..corpus.len())].clone().into_bytes();
    for _ in 0..rng.usize(1..=8) {
        let at = rng.usize(..=bytes.len());
        match rng.u8(0..6) {
            0 | 1 => {
                let t = TOKENS[rng.usize(..TOKENS.len())];
                bytes.splice(at..at, t.bytes());
            }
            2 => {
                let end = (at + rng.usize(0..16)).min(bytes.len());
                bytes.drain(at..end);
            }
            3 => {
                let other = corpus[rng.usize(..corpus.len())].as_bytes();
                let from = rng.usize(..=other.len());
                bytes.truncate(at);
                bytes.extend_from_slice(&other[from..]);
            }
            4 => {
                let end = (at + rng.usize(0..32)).min(bytes.len());
                let piece: Vec<u8> = bytes[at..end].to_vec();
                for _ in 0..rng.usize(1..=20) {
                    bytes.splice(at..at, piece.iter().copied());
                }
            }
            _ => {
                if at < bytes.len() {
                    bytes[at] = rng.u8(..);
                }
            }
        }
        // Keep lines small enough that a run explores many of them.
        bytes.truncate(8 * 1024);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn random_line(rng: &mut fastrand::Rng) -> String {
    let len = rng.usize(0..256);
    if rng.bool() {
        let bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        let mut s = String::new();
        while s.len() < len {
            s.push_str(TOKENS[rng.usize(..TOKENS.len())]);
            if rng.bool() {
                s.push(rng.alphanumeric());
            }
        }
        s
    }
}

/// Fuzz rules: deny, ask and allow, Bash and path rules. No allow rule
/// covers an interpreter (`bash -c`, `eval`) as a whole, so a line with any
/// part the parser cannot read must not run.
fn fuzz_rules(root: &Path) -> Rules {
    rules(
        root,
        &[
            "Bash(git *)",
            "Bash(ls:*)",
            "Bash(echo *)",
            "Bash(cat:*)",
            "Bash(touch M)",
            "Edit(./src/**)",
        ],
        &["Bash(git push:*)"],
        &["Bash(rm *)", "Bash(curl:*)", "Read(./.env)"],
    )
}

/// Checks one input; `Err` says what went wrong.
fn check(line: &str, rules: &Rules, root: &Path) -> Result<(), String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let script = shell::parse(line);
        let d = bash(line, Mode::Default, rules, root);
        if !script.all_unreadable().is_empty() && matches!(d, Disposition::Run { .. }) {
            return Err(format!("a line with an unreadable part runs: {d:?}"));
        }
        // `Bash(*)` covers `bash -c '…'` whole (protocol/permissions.md), but
        // not a line whose own text cannot be read.
        let mut everything = rules.clone();
        everything
            .allow
            .push(Rule::parse("Bash(*)", root, None).unwrap());
        let d = bash(line, Mode::Default, &everything, root);
        if script.unreadable.is_some() && matches!(d, Disposition::Run { .. }) {
            return Err(format!("an unreadable line runs under Bash(*): {d:?}"));
        }
        let _ = bash(line, Mode::BypassPermissions, rules, root);
        // The line as a rule's pattern, too (patterns are read as shell words).
        if let Ok(rule) = Rule::parse(&format!("Bash({line})"), root, None) {
            let args = json!({ "command": line });
            if let Ok(accepted) = Tool::Bash.accept(&args, root) {
                let _ = rule.matches_call(&Subject::of("Bash", &accepted), root);
            }
            let mut r = Rules::default();
            r.deny.push(rule);
            let _ = bash(
                "git status && rm -rf victim",
                Mode::BypassPermissions,
                &r,
                root,
            );
        }
        Ok(())
    }));
    match outcome {
        Ok(result) => result,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panicked: {msg}"))
        }
    }
}

#[test]
fn the_parser_and_the_decision_never_panic() {
    let seed = seed();
    let secs = env_number("CANDOR_FUZZ_SECS", 2.0);
    let mut rng = fastrand::Rng::with_seed(seed);
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let rules = fuzz_rules(root);
    let corpus = corpus();
    let started = Instant::now();
    let budget = Duration::from_secs_f64(secs);
    let mut failures: Vec<String> = Vec::new();
    let mut runs = 0u64;
    let mut slowest = (Duration::ZERO, String::new());
    let mut inputs = corpus.clone().into_iter();
    let last = std::env::var_os("CANDOR_FUZZ_LAST");
    while started.elapsed() < budget || inputs.len() > 0 {
        let line = match inputs.next() {
            Some(seedline) => seedline,
            None if rng.u8(0..4) == 0 => random_line(&mut rng),
            None => mutate(&mut rng, &corpus),
        };
        if let Some(path) = &last {
            // A crash (not a panic) ends the process: this file names the input.
            std::fs::write(path, &line).unwrap();
        }
        let t = Instant::now();
        if let Err(why) = check(&line, &rules, root)
            && failures.len() < 20
        {
            failures.push(format!("  {line:?}: {why}"));
        }
        let took = t.elapsed();
        if took > slowest.0 {
            slowest = (took, line.chars().take(80).collect());
        }
        runs += 1;
    }
    eprintln!(
        "permissions fuzz: {runs} inputs in {:.1?} (seed {seed:#x}), {} failures, \
         slowest {:.1?}: {:?}",
        started.elapsed(),
        failures.len(),
        slowest.0,
        slowest.1
    );
    assert!(
        failures.is_empty(),
        "fuzz failures (seed {seed:#x}: rerun with CANDOR_PROPTEST_SEED={seed:#x}):\n{}",
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Deep nesting: no stack overflow on a 2 MiB thread.

// The deep case "`echo {` and U+10FFFF" once crashed candor: tree-sitter-bash's
// scanner called `isdigit` on a code point above 255 after `{` (an
// out-of-bounds read); candor now shows the parser `x`s in place of
// non-ASCII characters.

fn deep_cases() -> Vec<(&'static str, String)> {
    let rep = |s: &str, n: usize| s.repeat(n);
    let mut quoted = String::from("rm -rf victim");
    while quoted.len() < 30_000 {
        quoted = format!("eval {}", double(&quoted));
    }
    vec![
        (
            "10 000 nested ( )",
            format!("{}true{}", rep("(", 10_000), rep(")", 10_000)),
        ),
        (
            "10 000 nested ( ) with spaces",
            format!("{}true{}", rep("( ", 10_000), rep(" )", 10_000)),
        ),
        ("10 000 unclosed (", rep("(", 10_000)),
        (
            "5 000 nested $( )",
            format!("{}rm x{}", rep("echo $(", 5_000), rep(")", 5_000)),
        ),
        ("5 000 unclosed $(", rep("$(", 5_000)),
        (
            "5 000 nested \"$( )\"",
            format!("{}rm x{}", rep("echo \"$(", 5_000), rep(")\"", 5_000)),
        ),
        (
            "5 000 nested <( )",
            format!("{}rm x{}", rep("cat <(", 5_000), rep(")", 5_000)),
        ),
        (
            "5 000 nested { }",
            format!("{}rm x{}", rep("{ ", 5_000), rep("; }", 5_000)),
        ),
        (
            "3 000 nested if",
            format!("{}rm x{}", rep("if true; then ", 3_000), rep("; fi", 3_000)),
        ),
        (
            "3 000 nested for",
            format!(
                "{}rm x{}",
                rep("for i in 1; do ", 3_000),
                rep("; done", 3_000)
            ),
        ),
        (
            "3 000 nested while",
            format!(
                "{}rm x{}",
                rep("while true; do ", 3_000),
                rep("; done", 3_000)
            ),
        ),
        (
            "3 000 nested case",
            format!(
                "{}rm x{}",
                rep("case x in x) ", 3_000),
                rep(";; esac", 3_000)
            ),
        ),
        (
            "3 000 nested functions",
            format!("{}rm x{}", rep("f() { ", 3_000), rep("; }", 3_000)),
        ),
        (
            "10 000 ( in $(( ))",
            format!("echo $(({}1{}))", rep("(", 10_000), rep(")", 10_000)),
        ),
        (
            "10 000 ( in (( ))",
            format!("(({}x{}))", rep("(", 10_000), rep(")", 10_000)),
        ),
        (
            "10 000 ( in [[ ]]",
            format!("[[ {}x{} ]]", rep("(", 10_000), rep(")", 10_000)),
        ),
        (
            "5 000 nested ${x:-",
            format!("echo {}x{}", rep("${x:-", 5_000), rep("}", 5_000)),
        ),
        ("8 000 &&", format!("{}rm x", rep("true && ", 8_000))),
        ("8 000 ||", format!("{}rm x", rep("false || ", 8_000))),
        ("8 000 |", format!("{}rm x", rep("true | ", 8_000))),
        ("8 000 ;", format!("{}rm x", rep("true; ", 8_000))),
        ("10 000 !", format!("{}rm x", rep("! ", 10_000))),
        // Past 32 wrappers the rest is one loose command, whose every suffix
        // a deny rule renders: 8 000 `nohup`s take 21 s and 840 MiB (debug).
        ("2 000 env", format!("{}rm x", rep("env ", 2_000))),
        ("2 000 nohup", format!("{}rm x", rep("nohup ", 2_000))),
        (
            "2 000 timeout 1",
            format!("{}rm x", rep("timeout 1 ", 2_000)),
        ),
        ("2 000 command", format!("{}rm x", rep("command ", 2_000))),
        ("2 000 sudo", format!("{}rm x", rep("sudo ", 2_000))),
        ("2 000 xargs", format!("{}rm x", rep("xargs ", 2_000))),
        ("2 000 time", format!("{}rm x", rep("time ", 2_000))),
        ("10 000 eval", format!("{}rm x", rep("eval ", 10_000))),
        ("7 000 bash -c", format!("{}rm x", rep("bash -c ", 7_000))),
        ("eval \"…\" quoted 30 KiB deep", quoted),
        ("64 KiB word", rep("a", 64 * 1024)),
        ("64 KiB + 1", rep("a", 64 * 1024 + 1)),
        ("30 000 words", format!("rm {}", rep("x ", 30_000))),
        ("10 000 assignments", format!("{}rm x", rep("a=1 ", 10_000))),
        ("10 000 redirects", format!("rm x{}", rep(" >f", 10_000))),
        // 5 000 of these take 18 s and 14 s in a debug build (quadratic).
        (
            "1 000 here-documents",
            format!("{}rm x\n{}", rep("cat <<E ", 1_000), rep("E\n", 1_000)),
        ),
        (
            "1 000 distinct $(( ))",
            (0..1_000).map(|i| format!("$((a{i})) ")).collect(),
        ),
        ("20 000 \\", rep("\\", 20_000)),
        ("20 000 '", rep("'", 20_000)),
        ("20 000 `", rep("`", 20_000)),
        ("`echo {` and U+10FFFF", "echo {\u{10FFFF}}".to_string()),
    ]
}

/// Parses and decides one deep case on a thread with a tokio worker's stack.
fn run_deep_case(line: String) -> Result<(), String> {
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let root = tempfile::tempdir().unwrap();
            let rules = fuzz_rules(root.path());
            check(&line, &rules, root.path())
        })
        .unwrap();
    handle
        .join()
        .unwrap_or_else(|_| Err("the thread panicked".into()))
}

#[test]
#[ignore = "run by deep_nesting_does_not_overflow_the_stack, in a child process per case"]
fn deep_nesting_child() {
    let Ok(i) = std::env::var("CANDOR_DEEP_CASE") else {
        return;
    };
    let (name, line) = deep_cases().swap_remove(i.parse::<usize>().unwrap());
    let t = Instant::now();
    let result = run_deep_case(line);
    eprintln!("deep case {name}: {:?} in {:.1?}", result, t.elapsed());
    assert!(result.is_ok(), "{name}: {result:?}");
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    deep_nesting();
}

#[allow(clippy::disallowed_methods)] // each case runs in a child test process
fn deep_nesting() {
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for (i, (name, _)) in deep_cases().iter().enumerate() {
        let t = Instant::now();
        let out = Process::new(&exe)
            .args([
                "--exact",
                "permissions_property::deep_nesting_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CANDOR_DEEP_CASE", i.to_string())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let took = t.elapsed();
        report.push(format!("{name}: {took:.1?}"));
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr
                .lines()
                .filter(|l| {
                    l.contains("overflow") || l.contains("panicked") || l.contains("deep case")
                })
                .collect::<Vec<_>>()
                .join(" / ");
            failures.push(format!("  {name}: {} ({why})", out.status));
        }
    }
    eprintln!("deep nesting: {}", report.join("; "));
    assert!(
        failures.is_empty(),
        "deep input crashed or failed:\n{}",
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Forms the property found that candor misreads today. Each is a line bash
// runs `rm -rf victim` from (checked by `known_bug_lines_do_run_rm`); remove
// the `ignore` when the parser reads it, and the form's exclusion from the
// generator (`construct`).

fn refused_in_every_mode(line: &str, deny: &str) -> Result<(), String> {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    for (mode, allow) in [
        (Mode::Default, &["Bash(*)"][..]),
        (Mode::BypassPermissions, &[][..]),
    ] {
        let d = bash(line, mode, &rules(root, allow, &[], &[deny]), root);
        if matches!(d, Disposition::Run { .. }) {
            return Err(format!("{line:?} under deny {deny} in {mode:?}: {d:?}"));
        }
    }
    Ok(())
}

const FORMER_BUGS: [(&str, &str); 12] = [
    // A newline inside double quotes is dropped: eval reads `truerm -rf victim`.
    ("eval \"true\nrm -rf victim\"", "Bash(rm *)"),
    ("bash -c \"echo hi\nrm -rf victim\"", "Bash(rm *)"),
    // `time` and `!` before a compound command other than `( )`: read as a
    // command named `time` whose words are `{`, `rm`, …
    ("time { rm -rf victim; }", "Bash(rm *)"),
    (
        "time while true; do rm -rf victim; break; done",
        "Bash(rm *)",
    ),
    ("time for i in 1; do rm -rf victim; done", "Bash(rm *)"),
    ("! { rm -rf victim; }", "Bash(rm *)"),
    ("! if true; then rm -rf victim; fi", "Bash(rm *)"),
    // `time` before an assignment: `A=1` is taken for the command's name.
    ("time A=1 rm -rf victim", "Bash(rm *)"),
    // A word starting with `\\` at the start of a line continues the
    // previous line's command: `true` with the arguments `\nrm`, `-rf`, …
    ("true\n\\rm -rf victim", "Bash(rm *)"),
    ("echo a\n\\rm -rf victim", "Bash(rm *)"),
    // A shell reading code from a here-document (opaque: it could be any
    // command) is not held back by a path deny rule the code may name.
    ("bash <<'EOF'\nrm -rf victim\nEOF", "Edit(./victim)"),
    ("bash -c 'bash <<EOF\nrm -rf victim\nEOF'", "Edit(./victim)"),
];

#[test]
fn former_bug_lines_do_run_rm() {
    for (line, _) in FORMER_BUGS {
        assert!(
            ran_in_bash(line, Target::Rm),
            "bash did not run rm: {line:?}"
        );
    }
}

#[test]
fn former_bugs_are_refused() {
    let failures: Vec<String> = FORMER_BUGS
        .iter()
        .filter_map(|(line, deny)| refused_in_every_mode(line, deny).err())
        .collect();
    assert!(
        failures.is_empty(),
        "allowed to run:\n{}",
        failures.join("\n")
    );
}
