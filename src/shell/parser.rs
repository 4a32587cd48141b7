//! tree-sitter-bash, run on one line: one parser per thread, a parse
//! bounded in time, non-ASCII characters shown to it as `x`s.

use std::cell::RefCell;

use tree_sitter::Parser;

/// How long one parse may take before the line counts as unreadable.
const PARSE_BUDGET: std::time::Duration = std::time::Duration::from_millis(100);

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// The syntax tree of `command`, or `None` when the parser could not be
/// set up or gave up (over [`PARSE_BUDGET`]).
pub(super) fn tree(command: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            if p.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
                return None;
            }
            *slot = Some(p);
        }
        slot.as_mut().and_then(|p| {
            p.reset();
            // tree-sitter-bash's scanner passes the lookahead code point
            // to `isdigit`, which reads out of bounds above 255: the parser
            // sees non-ASCII characters as `x`s of the same byte length
            // (word characters, as bash sees them), and every text is
            // taken from the line itself.
            let ascii: std::borrow::Cow<'_, str> = if command.is_ascii() {
                std::borrow::Cow::Borrowed(command)
            } else {
                std::borrow::Cow::Owned(
                    command
                        .chars()
                        .map(|c| {
                            if c.is_ascii() {
                                c.to_string()
                            } else {
                                "x".repeat(c.len_utf8())
                            }
                        })
                        .collect(),
                )
            };
            // A bounded parse: a pathological line gives up (and is
            // unreadable) rather than hold the call.
            let bytes = ascii.as_bytes();
            let started = std::time::Instant::now();
            let mut too_long = |_: &tree_sitter::ParseState| started.elapsed() > PARSE_BUDGET;
            let options = tree_sitter::ParseOptions::new().progress_callback(&mut too_long);
            p.parse_with_options(
                &mut |at: usize, _| bytes.get(at..).unwrap_or(&[]),
                None,
                Some(options),
            )
        })
    })
}
