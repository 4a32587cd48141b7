//! tree-sitter-bash, run on one line: one parser per thread, a parse
//! bounded in the parser's own steps (so a line reads the same on a loaded
//! machine as on an idle one), non-ASCII characters shown to it as `x`s.

use std::cell::RefCell;

use tree_sitter::Parser;

/// How many of the parser's progress checks (one every 100 of its
/// operations) one parse may take before the line counts as unreadable.
/// A count, not a time: whether a line is read must not depend on how busy
/// the machine is (a loaded machine once read a line that an idle one, or
/// the same call's second reading, called unreadable). The longest line
/// candor reads (64 KiB) takes about 1,500 (30,000 words) and 20–70 µs
/// each (release and debug builds), so this bounds a parse to about a
/// quarter of a second in a debug build and is not reached by any line
/// short enough to be read.
const MAX_PARSE_STEPS: u32 = 4_000;
/// A backstop in time, for work between two progress checks that the
/// step count cannot see; no line of at most 64 KiB that passes
/// [`too_many_pending_heredocs`] comes near it.
const PARSE_BACKSTOP: std::time::Duration = std::time::Duration::from_secs(5);
/// How many here-documents one physical line may open. The parser's
/// scanner revisits every pending here-document at each step, so a line
/// opening thousands of them (`cat <<E cat <<E …`) costs seconds between
/// two progress checks: 6,500 take 3 s in a release build, 100 take 5 ms.
pub(super) const MAX_PENDING_HEREDOCS: usize = 64;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Whether one physical line of `command` opens more than
/// [`MAX_PENDING_HEREDOCS`] here-documents (`<<` counted wherever it is,
/// quoted or not: counting too many only makes a line unreadable).
pub(super) fn too_many_pending_heredocs(command: &str) -> bool {
    command
        .split('\n')
        .any(|line| line.matches("<<").count() > MAX_PENDING_HEREDOCS)
}

/// The syntax tree of `command`, or `None` when the parser could not be
/// set up or gave up (over [`MAX_PARSE_STEPS`]).
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
            let mut steps = 0u32;
            let mut too_long = |_: &tree_sitter::ParseState| {
                steps = steps.saturating_add(1);
                steps > MAX_PARSE_STEPS || started.elapsed() > PARSE_BACKSTOP
            };
            let options = tree_sitter::ParseOptions::new().progress_callback(&mut too_long);
            p.parse_with_options(
                &mut |at: usize, _| bytes.get(at..).unwrap_or(&[]),
                None,
                Some(options),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_opening_more_here_documents_than_the_cap_is_not_parsed() {
        let opening = |n: usize| format!("{}rm x\n{}", "cat <<E ".repeat(n), "E\n".repeat(n));
        assert!(!too_many_pending_heredocs(&opening(MAX_PENDING_HEREDOCS)));
        assert!(too_many_pending_heredocs(&opening(
            MAX_PENDING_HEREDOCS + 1
        )));
        // Here-documents one after another are cheap and not counted together.
        let sequential = "cat <<E\nx\nE\n".repeat(2_000);
        assert!(!too_many_pending_heredocs(&sequential));
        assert!(tree(&sequential).is_some());
    }

    #[test]
    fn the_longest_lines_candor_reads_stay_within_the_step_budget() {
        // The lines that take the parser the most steps for their length:
        // each, at 64 KiB, must be read (a tree), not given up on.
        for unit in ["x ", "true && ", " >f", "'", "(", "echo $("] {
            let line = unit.repeat(64 * 1024 / unit.len());
            assert!(
                tree(&line).is_some(),
                "{unit:?} × {}",
                64 * 1024 / unit.len()
            );
        }
    }
}
