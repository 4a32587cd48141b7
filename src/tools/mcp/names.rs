//! The names MCP tools and prompts are offered by: `mcp__<server>__<tool>`
//! with every character outside `[A-Za-z0-9_-]` made `_`; a name over 64
//! characters (the providers' limit) keeps its first 55 and ends in `_` and
//! 8 hex digits of the SHA-256 of the unsanitised name; a name already
//! taken by an earlier one gets the same suffix. The same servers with the
//! same tools give the same names.

use sha2::{Digest, Sha256};

/// The providers' limit on a tool name.
const MAX_NAME: usize = 64;

/// The name `original` is offered by, unless one `taken` already: sanitised,
/// and suffixed with its digest when the sanitised name is taken.
pub(super) fn name_for(original: &str, taken: impl Fn(&str) -> bool) -> Option<String> {
    let clean = sanitize(original);
    if !taken(&clean) {
        return Some(clean);
    }
    Some(suffixed(&clean, original)).filter(|n| !taken(n))
}

/// `name` with what providers refuse made `_`, and cut to their limit.
fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_NAME {
        clean
    } else {
        suffixed(&clean, name)
    }
}

/// `clean` cut to 55 characters and ended with `_` and 8 hex digits of
/// `original`'s digest.
fn suffixed(clean: &str, original: &str) -> String {
    let digest = Sha256::digest(original.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let head: String = clean.chars().take(MAX_NAME - 9).collect();
    format!("{head}_{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_providers_accept_and_stable() {
        assert_eq!(
            sanitize("mcp__git hub__open.issue"),
            "mcp__git_hub__open_issue"
        );
        let long = format!("mcp__server__{}", "x".repeat(80));
        let a = sanitize(&long);
        assert_eq!(a.len(), 64);
        assert_eq!(a, sanitize(&long));
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        let other = format!("mcp__server__{}y", "x".repeat(80));
        assert_ne!(a, sanitize(&other), "two long names stay apart");
        assert_eq!(sanitize("mcp__é__t").len(), "mcp_____t".len());
    }

    #[test]
    fn a_name_taken_already_gets_its_digest_and_stays_the_same_each_time() {
        let first = name_for("mcp__a__b.c", |_| false).unwrap();
        assert_eq!(first, "mcp__a__b_c");
        let second = name_for("mcp__a__b_c", |n| n == first).unwrap();
        assert!(second.starts_with("mcp__a__b_c_") && second.len() == "mcp__a__b_c".len() + 9);
        assert_eq!(second, name_for("mcp__a__b_c", |n| n == first).unwrap());
        assert_eq!(name_for("mcp__a__b_c", |_| true), None);
    }
}
