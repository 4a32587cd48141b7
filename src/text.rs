//! Shortening text for people, in one place: by characters (never inside
//! one), the cut marked with `…`. Byte positions use std's
//! `str::floor_char_boundary` and `str::ceil_char_boundary`. Also counts
//! for people (`thousands`: `183,616`).

/// `text` cut to at most `max` characters, the last of them `…` when it
/// was cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` with its middle replaced by `…` when longer than `head + tail + 1`
/// characters: its first `head` and last `tail` characters kept (a command
/// line's program and its script's name both stay visible).
pub fn elide_middle(text: &str, head: usize, tail: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= head + tail + 1 {
        return text.to_owned();
    }
    let start: String = chars[..head].iter().collect();
    let end: String = chars[chars.len() - tail..].iter().collect();
    format!("{start}…{end}")
}

/// `n` with its thousands separated by commas (`183,616`).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_counts_characters_and_marks_the_cut() {
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(shorten("héllo wörld", 5), "héll…");
        assert_eq!(shorten("abc", 0), "…");
        assert_eq!(elide_middle("abcdefghij", 3, 3), "abc…hij");
        assert_eq!(elide_middle("abcdefg", 3, 3), "abcdefg");
        assert_eq!(thousands(183_616), "183,616");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
