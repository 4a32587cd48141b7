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
/// through them with the schema crate's types, whose tables name the
/// methods (`rpc` withdraws a request with the schema's
/// `ProtocolLevelNotification`, named by its `method()`). Protocol-level
/// names (`"$/…"`) and extensions (`"_session/…"`) count too. (Tests inside a file do not count; neither
/// do the event log's own record types.)
#[test]
fn acp_method_names_appear_only_at_the_edges() {
    let found = method_names_off_the_edges(&root());
    assert!(
        found.is_empty(),
        "ACP method names outside the edges:\n{}",
        found.join("\n")
    );
}

/// The check above fails on an injected method name, `"$/…"` included,
/// and passes the same file without it.
#[test]
fn the_method_name_check_finds_an_injected_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("src/tools/rpc_like.rs");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    for (line, bad) in [
        ("let m = \"$/cancel_request\";", true),
        ("let m = \"session/update\";", true),
        ("let m = \"session/started\"; // a record type", false),
        ("let m = \"cancel_request\";", false),
    ] {
        std::fs::write(&file, format!("//! A file.\nfn f() {{ {line} }}\n")).unwrap();
        let found = method_names_off_the_edges(dir.path());
        assert_eq!(!found.is_empty(), bad, "{line}: {found:?}");
    }
}

/// Each line of a file under `root/src` outside the edges that names an
/// ACP method.
fn method_names_off_the_edges(root: &Path) -> Vec<String> {
    let allowed = ["src/client.rs", "src/dispatch.rs", "src/demo.rs"];
    let log_types = [
        "\"session/started\"",
        "\"session/environment\"",
        "\"session/notice\"",
        "\"session/titled\"",
        "\"elicitation/requested\"",
        "\"elicitation/resolved\"",
    ];
    let mut found = Vec::new();
    for path in rust_files(&root.join("src")) {
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if allowed.contains(&relative.as_str()) || relative.starts_with("src/harness/") {
            continue;
        }
        let code = code_outside_tests(&path);
        for line in code.lines() {
            for prefix in [
                "\"fs/",
                "\"terminal/",
                "\"session/",
                "\"elicitation/",
                "\"_session/",
                "\"$/",
            ] {
                if line.contains(prefix) && !log_types.iter().any(|t| line.contains(t)) {
                    found.push(format!("{relative}: {}", line.trim()));
                }
            }
        }
    }
    found
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
    // rpc's one notification is the schema's `$/cancel_request`
    // (`ProtocolLevelNotification`), which shows nothing.
    let rpc = code_of(&root().join("src/rpc.rs"));
    assert_eq!(rpc.matches(".notify(").count(), 1);
    assert!(rpc.contains(".notify(withdraw.method(), &withdraw)"));
    assert!(rpc.contains("ProtocolLevelNotification::CancelRequestNotification("));
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
        let code = code_outside_tests(&path);
        let entry = deps.entry(module.clone()).or_default();
        for line in code.lines() {
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

/// A file's code outside its tests (each `#[cfg(test)]` item left out, a
/// `mod tests;` or a `mod tests { … }` anywhere in the file), without
/// comment lines.
fn code_outside_tests(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() == "#[cfg(test)]" {
            let indent = &line[..line.len() - line.trim_start().len()];
            let mut end = i + 1;
            if !lines.get(end).is_some_and(|l| l.trim_end().ends_with(';')) {
                let closing = format!("{indent}}}");
                while end < lines.len() && lines[end].trim_end() != closing {
                    end += 1;
                }
            }
            i = end + 1;
            continue;
        }
        if !line.trim_start().starts_with("//") {
            kept.push(line);
        }
        i += 1;
    }
    kept.join("\n")
}

/// The module path of a file under `src/`, from the crate root:
/// `tools/mcp/servers.rs` is `[tools, mcp, servers]`, `tools/mod.rs` is
/// `[tools]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut segments: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let file = segments.pop().unwrap_or_default();
    let stem = file.trim_end_matches(".rs");
    if stem != "mod" {
        segments.push(stem.to_owned());
    }
    segments
}

/// The paths one `use`/expression path names, from `text` (which follows
/// a `crate::`, `super::` or `self::` already resolved to `base`): `a::b`,
/// `a::{b, c::{d, e}}`, `*`.
fn paths_after(text: &str, base: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = base;
    let mut rest = text;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            // The group's members, split at its top-level commas.
            let mut depth = 0;
            let mut member = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        paths_after(member.trim(), path.clone(), out);
                        member.clear();
                        continue;
                    }
                    _ => {}
                }
                member.push(c);
            }
            paths_after(member.trim(), path, out);
            return;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || name == "self" {
            out.push(path);
            return;
        }
        path.push(name.clone());
        match rest[name.len()..].strip_prefix("::") {
            Some(after) => rest = after,
            None => {
                out.push(path);
                return;
            }
        }
    }
}

/// Every module path a file's code names through `crate::`, `super::` or
/// `self::`, resolved from the crate root (`module` is the file's own
/// path), and, in a `mod.rs`, its `children` named bare
/// (`bash::BashInput`, `pub use bash::…`).
fn paths_named(code: &str, module: &[String], children: &[String]) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (i, _) in code.match_indices("::") {
        // The start of the path this `::` belongs to.
        let before = &code[..i];
        let head_start = before.rfind(|c: char| !ident(c)).map_or(0, |p| p + 1);
        if before[..head_start].ends_with("::") {
            continue;
        }
        let head = &before[head_start..];
        let rest = &code[i + 2..];
        match head {
            "crate" => paths_after(rest, Vec::new(), &mut out),
            "self" => paths_after(rest, module.to_vec(), &mut out),
            "super" => {
                // `super::super::…` climbs once per `super`.
                let mut up = 1;
                let mut after = rest;
                while let Some(more) = after.strip_prefix("super::") {
                    up += 1;
                    after = more;
                }
                let base = module[..module.len().saturating_sub(up)].to_vec();
                paths_after(after, base, &mut out);
            }
            name if children.iter().any(|c| c == name) => {
                let mut base = module.to_vec();
                base.push(name.to_owned());
                paths_after(rest, base, &mut out);
            }
            _ => {}
        }
    }
    out
}

/// No file of `src/` imports one that imports it back, directly or through
/// others, in any folder: each file is a module (a `mod.rs` the module of
/// its folder), and a path a file names (`crate::…`, `super::…`,
/// `self::…`, a `mod.rs`'s children by name) is an import of the file that
/// holds the longest module prefix of it. So a child that takes anything
/// from its parent's `mod.rs` (`super::Item`, `crate::tools::Item`, a
/// re-export too) imports that `mod.rs`, and is in a circle when the
/// `mod.rs` uses or re-exports the child: a `mod.rs` declares and
/// assembles, and what its children share lives in leaf files they import.
/// (The crate root, `lib.rs`, is the test above: its modules as wholes.)
#[test]
fn no_file_in_src_imports_one_that_imports_it_back() {
    let circles = circles_in(&root().join("src"));
    assert!(
        circles.is_empty(),
        "circles of imports:\n{}",
        circles.join("\n")
    );
}

/// The check above fails on a circle injected as the issue that asked for
/// it describes (a child taking a type from its folder's `mod.rs`, which
/// re-exports the child), in a folder below the top, and passes the same
/// tree once the shared type lives in a leaf file.
#[test]
fn the_circle_check_finds_an_injected_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let file = src.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    write("lib.rs", "//! Root.\npub mod tools;\n");
    write(
        "tools/mod.rs",
        "//! Tools.\nmod bash;\npub use bash::BashInput;\npub struct Shared;\n",
    );
    write(
        "tools/bash.rs",
        "//! Bash.\nuse super::Shared;\npub struct BashInput(Shared);\n",
    );
    let circles = circles_in(src);
    assert!(
        circles
            .iter()
            .any(|c| c.starts_with("tools/bash.rs imports tools/mod.rs")),
        "{circles:?}"
    );
    write(
        "tools/mod.rs",
        "//! Tools.\nmod bash;\nmod shared;\npub use bash::BashInput;\n",
    );
    write("tools/shared.rs", "//! Shared.\npub struct Shared;\n");
    write(
        "tools/bash.rs",
        "//! Bash.\nuse super::shared::Shared;\npub struct BashInput(Shared);\n",
    );
    assert_eq!(circles_in(src), Vec::<String>::new());
}

/// Every import of a file under `src` that is on a circle, named with the
/// way back.
fn circles_in(src: &Path) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let files: Vec<(Vec<String>, String, String)> = rust_files(src)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs"))
        .map(|p| {
            let relative = p.strip_prefix(src).unwrap().to_owned();
            let shown = relative.to_string_lossy().into_owned();
            (module_path(&relative), shown, code_outside_tests(&p))
        })
        .filter(|(module, _, _)| !module.is_empty() && module != &["main".to_owned()])
        .collect();
    let modules: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|(m, shown, _)| (m.clone(), shown.clone()))
        .collect();
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, shown, code) in &files {
        let children: Vec<String> = if shown.ends_with("mod.rs") {
            modules
                .keys()
                .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
                .map(|m| m[module.len()].clone())
                .collect()
        } else {
            Vec::new()
        };
        let entry = deps.entry(shown.clone()).or_default();
        for path in paths_named(code, module, &children) {
            let held_by = (1..=path.len()).rev().find_map(|n| modules.get(&path[..n]));
            if let Some(file) = held_by
                && file != shown
            {
                entry.insert(file.clone());
            }
        }
    }
    // An import is on a circle when what it imports reaches back; each is
    // named with the way back.
    let reach = |from: &String, to: &String| -> Option<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![vec![from.clone()]];
        while let Some(path) = todo.pop() {
            let at = path.last().unwrap_or(from).clone();
            for next in deps.get(&at).into_iter().flatten() {
                let mut longer = path.clone();
                longer.push(next.clone());
                if next == to {
                    return Some(longer);
                }
                if seen.insert(next.clone()) {
                    todo.push(longer);
                }
            }
        }
        None
    };
    let mut circles = Vec::new();
    for (from, tos) in &deps {
        for to in tos {
            if let Some(back) = reach(to, from) {
                circles.push(format!("{from} imports {}", back.join(" → ")));
            }
        }
    }
    circles
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

/// The lints the invariants rest on are on: nothing prints to stdout or
/// stderr but the writer and `tracing`, no `unwrap`/`expect`/`panic!`
/// outside tests, and only `tools::exec` constructs a `Command`.
#[test]
fn the_lints_the_invariants_rest_on_are_on() {
    let cargo = read("Cargo.toml");
    for lint in [
        "print_stdout = \"deny\"",
        "print_stderr = \"deny\"",
        "unwrap_used = \"deny\"",
        "expect_used = \"deny\"",
        "panic = \"deny\"",
    ] {
        assert!(
            cargo.contains(lint),
            "Cargo.toml's [lints.clippy] lacks {lint}"
        );
    }
    let clippy = read("clippy.toml");
    for method in [
        "path = \"std::process::Command::new\"",
        "path = \"tokio::process::Command::new\"",
    ] {
        assert!(
            clippy.contains(method),
            "clippy.toml's disallowed-methods lacks {method}"
        );
    }
    // The one sanctioned constructor allows itself; nothing else does.
    let mut allowed = Vec::new();
    for path in rust_files(&root().join("src")) {
        let relative = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if code_outside_tests(&path).contains("allow(clippy::disallowed_methods)") {
            allowed.push(relative);
        }
    }
    let sanctioned = [
        "src/tools/exec.rs",
        // The sandbox's stages start the next stage and the command: they
        // run in a process `tools::exec` started (ARCHITECTURE.md, `sandbox`).
        "src/sandbox/launch.rs",
        "src/sandbox/probe.rs",
        "src/sandbox/init.rs",
        // A room of the session's house (a copy of the house's init, which
        // `tools::exec` started) starts its command.
        "src/sandbox/room.rs",
    ];
    for file in &allowed {
        assert!(
            sanctioned.contains(&file.as_str()),
            "{file} allows clippy::disallowed_methods: only tools::exec starts processes"
        );
    }
}

/// `unsafe` is denied everywhere but in the one file that forks
/// (`sandbox::fork`, for the house's rooms), which says why it is sound.
#[test]
fn unsafe_code_lives_in_one_file() {
    let cargo = read("Cargo.toml");
    assert!(
        cargo.contains("unsafe_code = \"deny\""),
        "Cargo.toml's [lints.rust] must deny unsafe_code"
    );
    let mut unsafe_files = Vec::new();
    for path in rust_files(&root().join("src")) {
        let code = std::fs::read_to_string(&path).unwrap();
        if code.contains("allow(unsafe_code)") || code.contains("unsafe {") {
            unsafe_files.push(
                path.strip_prefix(root())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    assert_eq!(
        unsafe_files,
        ["src/sandbox/fork.rs"],
        "only sandbox::fork may use unsafe"
    );
    let fork = read("src/sandbox/fork.rs");
    assert!(
        fork.contains("// SAFETY:"),
        "sandbox::fork says why its unsafe is sound"
    );
}

/// The projections (the presenter, the model's history, compaction's
/// bookkeeping) do no I/O: they are pure functions of the records and the
/// bytes loaded beforehand (no files, sockets, processes, nothing awaited).
#[test]
fn the_projections_do_no_io() {
    for file in ["src/presentation.rs", "src/history.rs", "src/compaction.rs"] {
        let code = code_outside_tests(&root().join(file));
        for io in [
            "std::fs",
            "tokio::fs",
            "File::",
            "std::net",
            "tokio::net",
            "crate::tools::exec",
            "async fn",
        ] {
            assert!(!code.contains(io), "{file} does I/O: {io}");
        }
        let awaits = code.match_indices(".await").any(|(i, _)| {
            !code[i + 6..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        });
        assert!(!awaits, "{file} awaits");
    }
}

/// A tool runs what `interception` approved and knows nothing of how it
/// was judged: no file of `tools/` imports `interception`.
#[test]
fn tools_do_not_import_interception() {
    for path in rust_files(&root().join("src/tools")) {
        let code = code_outside_tests(&path);
        assert!(
            !code.contains("crate::interception"),
            "{} imports interception",
            path.display()
        );
    }
}

/// `config` reads candor's settings from the environment; the other reads
/// of it are the few ARCHITECTURE.md names (in `config`'s section), each
/// for what is not a setting.
#[test]
fn only_named_modules_read_the_environment() {
    let named = [
        "src/config.rs",
        "src/bridges/mcp_config.rs",
        "src/tools/exec.rs",
        "src/sandbox/init.rs",
        "src/demo.rs",
        "src/main.rs",
    ];
    let architecture = read("ARCHITECTURE.md");
    let mut found = Vec::new();
    for path in rust_files(&root().join("src")) {
        let relative = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let code = code_outside_tests(&path);
        let reads = ["env::var(", "env::var_os(", "env::vars(", "env::vars_os("]
            .iter()
            .any(|r| code.contains(r));
        if reads && !named.contains(&relative.as_str()) {
            found.push(relative);
        }
    }
    assert!(
        found.is_empty(),
        "reading the environment outside the named places (route it through config, or name it in ARCHITECTURE.md and here):\n{}",
        found.join("\n")
    );
    for module in [
        "`bridges::mcp_config`",
        "`tools::exec`",
        "`sandbox::init`",
        "`demo`",
        "`main`",
    ] {
        assert!(
            architecture.contains(module),
            "ARCHITECTURE.md does not name {module}"
        );
    }
}

/// No file in `src/` is over 1,000 lines unless ARCHITECTURE.md's "Files
/// over 1,000 lines" names it with why.
#[test]
fn every_file_over_1000_lines_is_explained() {
    let architecture = read("ARCHITECTURE.md");
    let section = architecture
        .split("## Files over 1,000 lines")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no \"Files over 1,000 lines\" section"));
    let mut unexplained = Vec::new();
    for path in rust_files(&root().join("src")) {
        let relative = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        if lines > 1000 && !section.contains(&format!("`{relative}`")) {
            unexplained.push(format!("{relative}: {lines} lines"));
        }
    }
    assert!(
        unexplained.is_empty(),
        "files over 1,000 lines that ARCHITECTURE.md does not explain (split by job, or say why):\n{}",
        unexplained.join("\n")
    );
}
