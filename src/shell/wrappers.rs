//! The wrapper table: the commands that run another command (`env`,
//! `sudo`, `timeout`, `xargs`, `find -exec`, `bash -c`, …), how each relates
//! to it ([`WrapperKind`]) and where its command starts, its options
//! skipped as the wrapper reads them.

use super::script::{Word, WrapperKind};
use super::words::is_name;

/// bash's reserved words: never a command's name in a correct parse.
pub(super) const RESERVED: [&str; 20] = [
    "{", "}", "!", "[[", "]]", "if", "then", "elif", "else", "fi", "for", "while", "until", "do",
    "done", "case", "esac", "select", "function", "in",
];

/// Where a wrapper's command starts.
pub(super) enum Inner {
    /// At this index of the wrapper's arguments, with these assignments
    /// (`env X=1 cmd`); `extra_args`: the wrapper adds arguments (`xargs`).
    Command {
        at: usize,
        assignments: Vec<(String, Word)>,
        extra_args: bool,
    },
    /// These words (`find -exec rm {} ;`).
    Exec { words: Vec<Word> },
    /// Shell code in a string (`None`: not static).
    Code(Option<String>),
    /// Shell code from standard input.
    Stdin,
    /// Shell code from a file.
    File(Word),
    /// Runs nothing else (`command -v x`, `sudo -l`).
    None,
    /// Options candor does not know: the inner command cannot be found.
    Lost,
}

pub(super) struct Wrapper {
    pub(super) kind: WrapperKind,
    pub(super) inner: fn(&[Word]) -> Inner,
}

pub(super) fn wrapper(name: &str) -> Option<Wrapper> {
    use WrapperKind::*;
    let (kind, inner): (WrapperKind, fn(&[Word]) -> Inner) = match name {
        "env" => (Transparent, env_inner),
        "command" => (Transparent, |a| options(a, "", &["-v", "-V"], None)),
        "builtin" | "nohup" | "coproc" | "unbuffer" | "chronic" | "catchsegv" | "busybox" => {
            (Transparent, |a| options(a, "", &[], None))
        }
        "exec" => (Transparent, |a| options(a, "a", &[], None)),
        "time" => (Transparent, |a| options(a, "fo", &[], None)),
        "nice" => (Transparent, nice_inner),
        "ionice" => (Transparent, |a| options(a, "cnp", &[], None)),
        "stdbuf" => (Transparent, |a| options(a, "ioe", &[], None)),
        "setsid" => (Transparent, |a| options(a, "", &[], None)),
        "timeout" => (Transparent, |a| options(a, "sk", &[], Some(1))),
        "chroot" => (Elevating, |a| options(a, "", &[], Some(1))),
        "sudo" => (Elevating, sudo_inner),
        "doas" => (Elevating, |a| options(a, "uC", &[], None)),
        "su" | "runuser" => (Elevating, su_inner),
        "xargs" => (Driver, xargs_inner),
        "find" => (Driver, find_inner),
        "flock" => (Transparent, flock_inner),
        "watch" => (Interpreter, watch_inner),
        "eval" => (Interpreter, eval_inner),
        "alias" => (Interpreter, alias_inner),
        "mapfile" | "readarray" => (Interpreter, |a| {
            match a.iter().position(|w| w.as_lit() == Some("-C")) {
                Some(i) => Inner::Code(a.get(i + 1).and_then(Word::text)),
                None => Inner::None,
            }
        }),
        "trap" => (Interpreter, |a| {
            match a.iter().find(|w| w.as_lit() != Some("--")) {
                Some(w) => match w.text() {
                    Some(t) if t == "-p" || t == "-l" => Inner::None,
                    t => Inner::Code(t),
                },
                None => Inner::None,
            }
        }),
        "source" | "." => (Interpreter, |a| match a.first() {
            Some(w) if reads_input(w) => Inner::Stdin,
            Some(w) => Inner::File(w.clone()),
            None => Inner::None,
        }),
        "taskset" => (Transparent, |a| match a.first().and_then(Word::as_lit) {
            Some(t) if t.starts_with('-') && t.contains('p') => Inner::None,
            _ => options(a, "", &[], Some(1)),
        }),
        "chrt" => (Transparent, |a| options(a, "T", &[], Some(1))),
        "setpriv" | "unshare" | "nsenter" | "firejail" | "bwrap" | "systemd-run" | "prlimit" => {
            (Transparent, |_| Inner::Lost)
        }
        "script" => (Interpreter, |a| {
            for (i, w) in a.iter().enumerate() {
                match w.as_lit() {
                    Some("-c" | "--command") => {
                        return Inner::Code(a.get(i + 1).and_then(Word::text));
                    }
                    Some(t) if t.starts_with("-") && t.ends_with('c') && !t.starts_with("--") => {
                        return Inner::Code(a.get(i + 1).and_then(Word::text));
                    }
                    _ => {}
                }
            }
            Inner::None
        }),
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" | "rbash" => {
            (Interpreter, shell_inner)
        }
        _ => return None,
    };
    Some(Wrapper { kind, inner })
}

/// Skips a wrapper's options: `with_arg` are the letters of short options
/// that take an argument; `stop` are options after which nothing runs;
/// `positional` is how many arguments come before the command.
fn options(args: &[Word], with_arg: &str, stop: &[&str], positional: Option<usize>) -> Inner {
    options_long(args, with_arg, &[], stop, positional)
}

/// [`options`], with the long options (`--max-args N`) that take the next
/// word as their value.
fn options_long(
    args: &[Word],
    with_arg: &str,
    long_with_arg: &[&str],
    stop: &[&str],
    positional: Option<usize>,
) -> Inner {
    let mut i = 0;
    while i < args.len() {
        let Some(t) = args[i].text() else {
            return Inner::Lost;
        };
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if stop.contains(&t.as_str()) {
            return Inner::None;
        }
        if let Some(long) = t.strip_prefix("--") {
            // `--opt=value` carries its value; a bare long option that
            // takes one and is not known here: the command cannot be found.
            if long_with_arg.contains(&long) {
                i += 2;
                continue;
            }
            if !long.contains('=') && !known_flag(long) {
                return Inner::Lost;
            }
            i += 1;
            continue;
        }
        let letters: Vec<char> = t.chars().skip(1).collect();
        if letters.iter().all(|c| c.is_ascii_digit()) {
            i += 1; // `nice -10`
            continue;
        }
        let mut takes = false;
        for (k, c) in letters.iter().enumerate() {
            if with_arg.contains(*c) {
                takes = k + 1 == letters.len();
                break;
            }
        }
        i += if takes { 2 } else { 1 };
    }
    let at = i + positional.unwrap_or(0);
    Inner::Command {
        at,
        assignments: Vec::new(),
        extra_args: false,
    }
}

/// Long options without a value that wrappers commonly take.
fn known_flag(long: &str) -> bool {
    matches!(
        long,
        "preserve-status"
            | "foreground"
            | "verbose"
            | "ignore-environment"
            | "null"
            | "no-run-if-empty"
            | "interactive"
            | "exit"
            | "preserve-env"
            | "login"
            | "shell"
            | "non-interactive"
            | "fork"
            | "wait"
            | "ctty"
            | "nonblock"
            | "shared"
            | "exclusive"
            | "unlock"
            | "close"
    )
}

fn env_inner(args: &[Word]) -> Inner {
    let mut i = 0;
    let mut assignments = Vec::new();
    while i < args.len() {
        let Some(t) = args[i].text() else {
            return Inner::Lost;
        };
        if t == "--" {
            i += 1;
            continue;
        }
        if t.starts_with("-S") || t.starts_with("--split-string") {
            // `env -S 'cmd args'` splits a string into a command line.
            let code = if t.len() > 2 && t.starts_with("-S") {
                Some(t[2..].to_owned())
            } else {
                args.get(i + 1).and_then(Word::text)
            };
            return Inner::Code(code);
        }
        if t == "-" {
            // `env -` is `env -i`.
            i += 1;
            continue;
        }
        if t.starts_with('-') && !t.starts_with("--") && t.contains('S') {
            // `-iS'cmd args'`: the split string follows the S.
            let rest = t
                .split_once('S')
                .map(|(_, r)| r.to_owned())
                .unwrap_or_default();
            let code = if rest.is_empty() {
                args.get(i + 1).and_then(Word::text)
            } else {
                Some(rest)
            };
            return Inner::Code(code);
        }
        if t.starts_with('-') {
            let takes = matches!(t.as_str(), "-u" | "-C" | "--unset" | "--chdir");
            i += if takes { 2 } else { 1 };
            continue;
        }
        // GNU env takes every word with a `=` as an assignment.
        match t.split_once('=') {
            Some((name, value)) => {
                assignments.push((name.to_owned(), Word::lit(value)));
                i += 1;
            }
            None => break,
        }
    }
    Inner::Command {
        at: i,
        assignments,
        extra_args: false,
    }
}

fn nice_inner(args: &[Word]) -> Inner {
    options(args, "n", &[], None)
}

fn sudo_inner(args: &[Word]) -> Inner {
    // -l, -v, -k, … run nothing; the last letter of a cluster may take the
    // next word (`-nu root`).
    let mut i = match options(
        args,
        "ugCDhprtTUR",
        &["-l", "-v", "-k", "-K", "-V", "-h", "-e"],
        None,
    ) {
        Inner::Command { at, .. } => at,
        other => return other,
    };
    let mut assignments = Vec::new();
    while let Some(t) = args.get(i).and_then(Word::text) {
        match t.split_once('=') {
            Some((name, value)) if is_name(name) => {
                assignments.push((name.to_owned(), Word::lit(value)));
                i += 1;
            }
            _ => break,
        }
    }
    Inner::Command {
        at: i,
        assignments,
        extra_args: false,
    }
}

fn su_inner(args: &[Word]) -> Inner {
    for (i, w) in args.iter().enumerate() {
        match w.text().as_deref() {
            Some("-c" | "--command") => return Inner::Code(args.get(i + 1).and_then(Word::text)),
            Some(t) if t.starts_with("--command=") => {
                return Inner::Code(Some(t["--command=".len()..].to_owned()));
            }
            _ => {}
        }
    }
    Inner::Stdin
}

fn xargs_inner(args: &[Word]) -> Inner {
    // -a FILE, -d DELIM, -E EOF, -I REPLACE, -L N, -n N, -P N, -s N take a
    // word unless attached; --replace, --eof and --max-lines take theirs
    // only attached (`=`).
    let long = [
        "arg-file",
        "delimiter",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ];
    match options_long(args, "adEILnPs", &long, &[], None) {
        // xargs alone runs `echo`.
        Inner::Command { at, .. } if at >= args.len() => Inner::None,
        Inner::Command { at, .. } => Inner::Command {
            at,
            assignments: Vec::new(),
            extra_args: true,
        },
        other => other,
    }
}

fn find_inner(args: &[Word]) -> Inner {
    let Some(at) = args.iter().position(|w| {
        matches!(
            w.text().as_deref(),
            Some("-exec" | "-execdir" | "-ok" | "-okdir")
        )
    }) else {
        return Inner::None;
    };
    let words: Vec<Word> = args[at + 1..]
        .iter()
        .take_while(|w| !matches!(w.text().as_deref(), Some(";" | "+")))
        .map(|w| match w.text().as_deref() {
            Some("{}") => Word::any(),
            _ => w.clone(),
        })
        .collect();
    // A second -exec is found by the suffix search of deny rules; allow
    // rules then see the find as loose.
    let more = args[at + 1..]
        .iter()
        .filter(|w| {
            matches!(
                w.text().as_deref(),
                Some("-exec" | "-execdir" | "-ok" | "-okdir")
            )
        })
        .count();
    if more > 0 {
        return Inner::Lost;
    }
    Inner::Exec { words }
}

fn flock_inner(args: &[Word]) -> Inner {
    for (i, w) in args.iter().enumerate() {
        let cluster = w
            .as_lit()
            .is_some_and(|t| t.starts_with('-') && !t.starts_with("--") && t.ends_with('c'));
        if cluster || w.as_lit() == Some("--command") {
            return Inner::Code(args.get(i + 1).and_then(Word::text));
        }
    }
    // flock [options] FILE COMMAND [ARGS]
    match options(args, "wE", &[], Some(1)) {
        Inner::Command { at, .. } if at < args.len() => Inner::Command {
            at,
            assignments: Vec::new(),
            extra_args: false,
        },
        other => other,
    }
}

fn watch_inner(args: &[Word]) -> Inner {
    match options(args, "nqd", &[], None) {
        Inner::Command { at, .. } => {
            let rest: Option<Vec<String>> =
                args[at.min(args.len())..].iter().map(Word::text).collect();
            Inner::Code(rest.map(|r| r.join(" ")))
        }
        other => other,
    }
}

/// `alias name='code' …`: the code runs wherever the name is used.
fn alias_inner(args: &[Word]) -> Inner {
    let values: Option<Vec<String>> = args
        .iter()
        .filter(|w| !w.text().is_some_and(|t| t.starts_with('-')))
        .map(|w| {
            w.text().map(|t| {
                t.split_once('=')
                    .map(|(_, v)| v.to_owned())
                    .unwrap_or_default()
            })
        })
        .collect();
    Inner::Code(values.map(|v| v.join("\n")))
}

fn eval_inner(args: &[Word]) -> Inner {
    let args = match args.first().and_then(Word::as_lit) {
        Some("--") => &args[1..],
        _ => args,
    };
    let words: Option<Vec<String>> = args.iter().map(Word::text).collect();
    Inner::Code(words.map(|w| w.join(" ")))
}

/// `bash [options] -c CODE …`, `bash FILE`, or `bash` reading its input.
fn shell_inner(args: &[Word]) -> Inner {
    let mut i = 0;
    let mut command_mode = false;
    while i < args.len() {
        let Some(t) = args[i].text() else {
            return if command_mode {
                Inner::Code(None)
            } else {
                Inner::Lost
            };
        };
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            i += if matches!(t.as_str(), "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            let letters = &t[1..];
            if letters.contains('c') {
                command_mode = true;
            }
            if letters.contains('s') && t.starts_with('-') && !command_mode {
                // `-s`: the script is read from standard input; the rest
                // are its arguments.
                return Inner::Stdin;
            }
            // -o OPTION and -O OPTION take an argument.
            i += if letters.ends_with('o') || letters.ends_with('O') {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if command_mode {
        return Inner::Code(args.get(i).and_then(Word::text));
    }
    match args.get(i) {
        Some(file) if reads_input(file) => Inner::Stdin,
        Some(file) => Inner::File(file.clone()),
        None => Inner::Stdin,
    }
}

/// Whether a script file named on a command line is really its input (or
/// code only known when it runs): `/dev/stdin`, a descriptor, `<(…)`, a
/// bare number (a descriptor the grammar misread).
fn reads_input(file: &Word) -> bool {
    match file.as_lit() {
        Some(t) => {
            t.starts_with("/dev/")
                || t.starts_with("/proc/")
                || (!t.is_empty() && t.chars().all(|c| c.is_ascii_digit()))
        }
        None => true,
    }
}
