//! Tidy checks: rules about the repository itself, as ordinary tests.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn every_source_file_says_what_it_owns() {
    for file in rust_files(&root().join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.starts_with("//!"),
            "{} must start with a `//!` module doc",
            file.display()
        );
    }
}

#[test]
fn no_test_expects_a_panic() {
    let marker = ["#[should", "_panic"].concat();
    for dir in ["src", "tests"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                !text.contains(&marker),
                "{} uses {marker}: test behaviour, not panics",
                file.display()
            );
        }
    }
}

#[test]
fn architecture_md_names_every_module() {
    let lib = read("src/lib.rs");
    let architecture = read("ARCHITECTURE.md");
    for line in lib.lines() {
        let line = line.trim();
        let Some(rest) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("pub(crate) mod "))
        else {
            continue;
        };
        let module = rest.trim_end_matches(';');
        assert!(
            architecture.contains(&format!("`{module}`")),
            "ARCHITECTURE.md does not describe the module `{module}`"
        );
    }
}

/// The record `type`s declared in the code.
fn record_types_in_code() -> Vec<String> {
    read("src/event_log/record.rs")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#[serde(rename = \""))
        .filter_map(|rest| rest.split('"').next())
        .filter(|name| name.contains('/'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_event_log_document_matches_the_record_types() {
    let in_code = record_types_in_code();
    assert!(in_code.len() >= 9, "found only {in_code:?}");
    let doc = read("protocol/event-log.md");
    let in_doc: Vec<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("### `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    for name in &in_code {
        assert!(
            in_doc.contains(name),
            "protocol/event-log.md has no section for `{name}`"
        );
    }
    for name in &in_doc {
        assert!(
            in_code.contains(name),
            "protocol/event-log.md documents `{name}`, which the code does not have"
        );
    }
}

#[test]
fn ci_runs_the_readme_test_command() {
    let readme = read("README.md");
    let ci = read(".ci/run");
    let command = readme
        .lines()
        .skip_while(|l| !l.contains("<!-- test-command -->"))
        .nth(2)
        .unwrap_or_else(|| {
            panic!("README.md must show the test command after a `<!-- test-command -->` marker")
        })
        .trim();
    assert!(command.starts_with("cargo test"), "{command}");
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run does not run `{command}`"
    );
    assert!(
        ci.contains("cargo fmt --check")
            && ci.contains("cargo clippy --all-targets -- -D warnings")
            && ci.contains("RUSTDOCFLAGS=\"-D warnings\" cargo doc --no-deps")
    );
}

#[test]
fn the_lock_file_is_committed() {
    assert!(root().join("Cargo.lock").exists());
}

/// ACP method names live at the edges only: `client` (what candor asks of
/// the editor), `dispatch` (what the editor asks of candor), and the two
/// programs that play an editor (`harness`, `demo`). Everyone else goes
/// through them with the schema crate's types. (Tests inside a file do
/// not count; neither do the event log's own record types.)
#[test]
fn acp_method_names_appear_only_at_the_edges() {
    let allowed = ["src/client.rs", "src/dispatch.rs", "src/demo.rs"];
    let log_types = [
        "\"session/started\"",
        "\"session/environment\"",
        "\"session/notice\"",
        "\"session/titled\"",
    ];
    let mut found = Vec::new();
    for path in rust_files(&root().join("src")) {
        let relative = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if allowed.contains(&relative.as_str()) || relative.starts_with("src/harness/") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for prefix in ["\"fs/", "\"terminal/", "\"session/"] {
                if line.contains(prefix) && !log_types.iter().any(|t| line.contains(t)) {
                    found.push(format!("{relative}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "ACP method names outside the edges:\n{}",
        found.join("\n")
    );
}

/// Everything a person reads to decide passes one sanitizer,
/// `text::visible`, and it does so at the one place it leaves: `shown`,
/// called by `client::session_update` (every `session/update`) and
/// `ClientLink::request_permission` (every permission request). The rule
/// checked: (1) no other module builds a `SessionNotification` or sends a
/// `RequestPermissionRequest` (outside the programs that play an editor),
/// and only `client` puts a notification on the output queue; (2) those
/// two functions of `client` pass what they send through `shown`; (3)
/// every `SessionUpdate` variant candor builds is one `shown::update`
/// names (the schema's enum is non-exhaustive: one it does not name would
/// pass unchanged); (4) the renderers of `candor audit` and `candor doctor`
/// (text on a terminal, no update) end with `visible`.
#[test]
fn everything_a_person_reads_passes_the_one_sanitizer() {
    let code_of = |path: &Path| -> String {
        let text = std::fs::read_to_string(path).unwrap();
        text.split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut found = Vec::new();
    let mut built = std::collections::BTreeSet::new();
    for path in rust_files(&root().join("src")) {
        let relative = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative.starts_with("src/harness/") || relative == "src/demo.rs" {
            continue;
        }
        let code = code_of(&path);
        if relative != "src/shown.rs" {
            for piece in code.split("SessionUpdate::").skip(1) {
                let variant: String = piece
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                if variant.starts_with(char::is_uppercase) {
                    built.insert((variant, relative.clone()));
                }
            }
        }
        if relative == "src/client.rs" || relative == "src/shown.rs" {
            continue;
        }
        for banned in [
            "SessionNotification",
            "AgentRequest::RequestPermissionRequest",
            ".notify(",
        ] {
            if code.contains(banned) && !(banned == ".notify(" && relative == "src/rpc.rs") {
                found.push(format!("{relative} uses {banned}"));
            }
        }
    }
    // rpc's one notification is `$/cancel_request`, which shows nothing.
    let rpc = code_of(&root().join("src/rpc.rs"));
    assert_eq!(rpc.matches(".notify(").count(), 1);
    assert!(rpc.contains(".notify(\"$/cancel_request\""));
    let client = code_of(&root().join("src/client.rs"));
    let body = |name: &str| -> String {
        let start = client
            .find(&format!("fn {name}("))
            .unwrap_or_else(|| panic!("no fn {name} in client.rs"));
        let rest = &client[start..];
        rest[..rest.find("\n}").unwrap_or(rest.len())].to_owned()
    };
    for (function, sanitizer) in [
        ("session_update", "crate::shown::update("),
        ("request_permission", "crate::shown::permission_request("),
    ] {
        if !body(function).contains(sanitizer) {
            found.push(format!("client::{function} does not call {sanitizer}…)"));
        }
    }
    let shown = code_of(&root().join("src/shown.rs"));
    let named = &shown
        [shown.find("pub fn update(").unwrap()..shown.find("pub fn permission_request(").unwrap()];
    for (variant, relative) in &built {
        if !named.contains(&format!("SessionUpdate::{variant}(")) {
            found.push(format!(
                "{relative} builds SessionUpdate::{variant}, which shown::update does not name"
            ));
        }
    }
    assert!(built.len() >= 8, "found only {built:?}");
    for (file, function) in [
        ("src/audit.rs", "pub fn render("),
        ("src/doctor.rs", "pub fn render("),
    ] {
        let code = code_of(&root().join(file));
        let start = code
            .find(function)
            .unwrap_or_else(|| panic!("no {function} in {file}"));
        let rest = &code[start..];
        let body = &rest[..rest.find("\n}").unwrap_or(rest.len())];
        if !body.trim_end().ends_with("crate::text::visible(&out)") {
            found.push(format!(
                "{file}'s {function}…) does not end with text::visible"
            ));
        }
    }
    assert!(
        found.is_empty(),
        "presentation paths that bypass text::visible:\n{}",
        found.join("\n")
    );
}

/// The top-level modules of `src/` form no circle: none imports (through
/// `crate::…`, outside tests and comments) a module that imports it back,
/// directly or through others.
#[test]
fn top_level_modules_import_each_other_in_no_circle() {
    use std::collections::{BTreeMap, BTreeSet};
    let src = root().join("src");
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in rust_files(&src) {
        let relative = path.strip_prefix(&src).unwrap();
        let first = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let entry = deps.entry(module.clone()).or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                let used: String = line[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !used.is_empty() && used != module {
                    entry.insert(used);
                }
            }
        }
    }
    // A module is in a circle if it can reach itself.
    for start in deps.keys() {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, path)) = todo.pop() {
            for next in deps.get(&at).into_iter().flatten() {
                if next == start {
                    panic!("a circle of imports: {} → {start}", path.join(" → "));
                }
                if deps.contains_key(next) && seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    todo.push((next.clone(), longer));
                }
            }
        }
    }
}

/// Inside `session/` no module imports one that imports it back (the
/// context, the handle and the commit are shared below the actor, the turn
/// and the call).
#[test]
fn the_session_modules_import_each_other_in_no_circle() {
    use std::collections::{BTreeMap, BTreeSet};
    let dir = root().join("src/session");
    let modules: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for module in &modules {
        let text = std::fs::read_to_string(dir.join(format!("{module}.rs"))).unwrap();
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut used = BTreeSet::new();
        if module == "mod" {
            // The parent: its uses of a child's items (not its `mod` lines).
            for other in &modules {
                if code.contains(&format!("{other}::")) {
                    used.insert(other.clone());
                }
            }
        } else {
            for (i, _) in code.match_indices("super::") {
                let rest = &code[i + 7..];
                let names: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                    group
                        .split('}')
                        .next()
                        .unwrap_or("")
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap_or("").to_owned())
                        .collect()
                } else {
                    vec![
                        rest.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect(),
                    ]
                };
                for name in names {
                    if modules.contains(&name) {
                        used.insert(name);
                    } else if name.chars().next().is_some_and(char::is_uppercase) {
                        used.insert("mod".to_owned());
                    }
                }
            }
        }
        used.remove(module);
        deps.insert(module.clone(), used);
    }
    for start in &modules {
        let mut seen = BTreeSet::new();
        let mut todo = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, path)) = todo.pop() {
            for next in deps.get(&at).into_iter().flatten() {
                assert_ne!(
                    next,
                    start,
                    "a circle in session/: {} → {start}",
                    path.join(" → ")
                );
                if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    todo.push((next.clone(), longer));
                }
            }
        }
    }
}

/// The indentation of a line that starts a function (`fn`, after any of
/// `pub`, `pub(…)`, `const`, `async`, `unsafe`).
fn starts_a_function(line: &str) -> Option<&str> {
    let indent = &line[..line.len() - line.trim_start().len()];
    let mut rest = line.trim_start();
    loop {
        let before = rest;
        for prefix in ["pub ", "const ", "async ", "unsafe "] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        if rest.starts_with("pub(") {
            rest = rest.split_once(") ").map_or(rest, |(_, r)| r);
        }
        if rest == before {
            break;
        }
    }
    rest.starts_with("fn ").then_some(indent)
}

/// No function in `src/` is longer than 120 lines, from its `fn` line to
/// its closing brace (rustfmt puts that at the `fn`'s indentation): a
/// longer one is split where a reader would want it split.
#[test]
fn no_function_in_src_is_longer_than_120_lines() {
    const LIMIT: usize = 120;
    let mut long = Vec::new();
    for path in rust_files(&root().join("src")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (start, line) in lines.iter().enumerate() {
            let Some(indent) = starts_a_function(line) else {
                continue;
            };
            // The line that opens the body; a declaration without one (in
            // a trait) has nothing to measure.
            let Some(open) = (start..lines.len())
                .find(|&i| lines[i].contains('{') || lines[i].trim_end().ends_with(';'))
            else {
                continue;
            };
            if !lines[open].contains('{') || lines[open].trim_end().ends_with('}') {
                continue;
            }
            let closing = format!("{indent}}}");
            let end = (open..lines.len())
                .find(|&i| lines[i].trim_end() == closing)
                .unwrap_or_else(|| panic!("{}:{}: no closing brace", path.display(), start + 1));
            let length = end - start + 1;
            if length > LIMIT {
                long.push(format!(
                    "{}:{}: {length} lines: {}",
                    path.strip_prefix(root()).unwrap().display(),
                    start + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions longer than {LIMIT} lines:\n{}",
        long.join("\n")
    );
}
