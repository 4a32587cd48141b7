//! Words as bash reads them: quote removal, backslashes, `$'…'` escapes,
//! and what is known only at run time (globs, brace expansions) as
//! `Piece::Any`.

use super::script::Word;

/// `s` cut to `max` characters, with an ellipsis when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    crate::text::shorten(s, max + 1)
}

/// An unquoted word: backslashes removed, globs and brace expansions as
/// `Piece::Any`.
pub(super) fn unquoted(raw: &str) -> Word {
    if brace_expands(raw) {
        return Word::any();
    }
    let mut w = Word::default();
    let mut lit = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => lit.push(n),
            },
            '*' | '?' => {
                w.push_lit(&std::mem::take(&mut lit));
                w.push_any();
            }
            '[' if raw.contains(']') => {
                w.push_lit(&std::mem::take(&mut lit));
                w.push_any();
                for n in chars.by_ref() {
                    if n == ']' {
                        break;
                    }
                }
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() || w.0.is_empty() {
        w.push_lit(&lit);
    }
    w
}

/// Whether unquoted text has a brace expansion (`{a,b}`, `{1..3}`).
pub(super) fn brace_expands(raw: &str) -> bool {
    let Some(open) = raw.find('{') else {
        return false;
    };
    let rest = &raw[open + 1..];
    match rest.find('}') {
        Some(close) => {
            let inner = &rest[..close];
            inner.contains(',') || inner.contains("..")
        }
        None => false,
    }
}

/// Inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\`
/// and a newline.
pub(super) fn unescape_double(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes the inside of `$'…'`; `None` for an escape it cannot decode.
pub(super) fn ansi_c(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, max: usize| {
            let mut v = 0u32;
            let mut n = 0;
            while n < max {
                match chars.peek().and_then(|c| c.to_digit(16)) {
                    Some(d) => {
                        v = v * 16 + d;
                        chars.next();
                        n += 1;
                    }
                    None => break,
                }
            }
            (n > 0).then_some(v)
        };
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => out.push(char::from_u32(hex(&mut chars, 2)?)?),
            'u' => out.push(char::from_u32(hex(&mut chars, 4)?)?),
            'U' => out.push(char::from_u32(hex(&mut chars, 8)?)?),
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v)?);
            }
            'c' => {
                let x = chars.next()?;
                out.push(char::from_u32((x as u32) & 0x1f)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

pub(super) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
