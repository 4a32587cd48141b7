//! A fetched HTML page made Markdown for the model, with `htmd` (on
//! html5ever, the Servo parser). Scripts, styles and other parts a reader
//! does not see are left out. The converter walks the tree recursively and
//! the parser's work grows with the nesting, so a page nested deeper than
//! [`MAX_DEPTH`] (an attack on the stack or the clock, or a broken page:
//! told by a linear scan of the tags before parsing, and checked again on
//! the tree) is given as plain text instead, extracted in one pass without
//! recursion; so is one whose conversion takes longer than
//! [`CONVERT_WAIT`]. The conversion runs on a thread of its own with a
//! large stack, never on the async runtime.

use std::rc::Rc;

/// The deepest nesting the Markdown converter is given.
pub const MAX_DEPTH: usize = 512;
/// The conversion thread's stack (the converter recurses once a level).
const STACK: usize = 64 * 1024 * 1024;
/// How long a conversion may take before the page is given as plain text.
pub const CONVERT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Tags whose content a reader does not see.
const SKIPPED: [&str; 9] = [
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "head",
];

/// A page made text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub text: String,
    /// Why the page is plain text rather than Markdown, when it is.
    pub plain: Option<String>,
}

/// Converts `html` on a thread of its own (see the module doc).
pub async fn convert(html: String) -> Converted {
    let copy = html.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("candor-html".into())
        .stack_size(STACK)
        .spawn(move || {
            let _ = tx.send(convert_now(&html));
        });
    if let Err(e) = spawned {
        return Converted {
            text: String::new(),
            plain: Some(format!("candor could not start the conversion: {e}")),
        };
    }
    match tokio::time::timeout(CONVERT_WAIT, rx).await {
        Ok(Ok(converted)) => converted,
        Ok(Err(_)) => Converted {
            text: String::new(),
            plain: Some("the conversion failed".into()),
        },
        // The thread ends on its own (its work is bounded by the page).
        Err(_) => Converted {
            text: plain_text(&copy),
            plain: Some(format!(
                "converting it took longer than {} s",
                CONVERT_WAIT.as_secs()
            )),
        },
    }
}

/// The conversion itself (on the caller's thread).
pub fn convert_now(html: &str) -> Converted {
    let estimate = nesting(html);
    if estimate > MAX_DEPTH {
        return Converted {
            text: plain_text(html),
            plain: Some(format!(
                "the page nests about {estimate} levels deep, past the {MAX_DEPTH} candor converts"
            )),
        };
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let tree = match converter.html_to_tree(html) {
        Ok(tree) => tree,
        Err(e) => {
            return Converted {
                text: plain_text(html),
                plain: Some(format!("the page could not be parsed as HTML ({e})")),
            };
        }
    };
    let depth = depth(&tree);
    if depth > MAX_DEPTH {
        return Converted {
            text: plain_text(html),
            plain: Some(format!(
                "the page nests {depth} levels deep, past the {MAX_DEPTH} candor converts"
            )),
        };
    }
    Converted {
        text: tidy(&converter.tree_to_markdown(&tree)),
        plain: None,
    }
}

/// Tags that never hold content, and tags a sibling closes (an unclosed
/// `<p>` or `<li>` does not nest the next one).
const FLAT: [&str; 24] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "!doctype", "!--", "?xml",
];

/// How deep the page's tags nest, estimated in one pass over the text (no
/// parse): opening tags less closing ones, leaving out those in [`FLAT`]
/// and self-closed ones.
fn nesting(html: &str) -> usize {
    let bytes = html.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while let Some(at) = memchr_lt(&bytes[i..]) {
        let start = i + at + 1;
        let closing = bytes.get(start) == Some(&b'/');
        let name_at = start + usize::from(closing);
        let name: String = bytes[name_at.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'!' | b'-' | b'?'))
            .take(16)
            .map(|b| b.to_ascii_lowercase() as char)
            .collect();
        let end = bytes[start..]
            .iter()
            .position(|b| *b == b'>')
            .map_or(bytes.len(), |e| start + e);
        let self_closed = end > start && bytes.get(end - 1) == Some(&b'/');
        if !name.is_empty() && !FLAT.iter().any(|f| name.starts_with(f)) && !self_closed {
            if closing {
                depth = depth.saturating_sub(1);
            } else {
                depth += 1;
                deepest = deepest.max(depth);
            }
        }
        i = end.min(bytes.len());
        if i >= bytes.len() {
            break;
        }
    }
    deepest
}

fn memchr_lt(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'<')
}

/// The tree's depth, counted without recursion.
fn depth(root: &Rc<htmd::Node>) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, d)) = stack.pop() {
        deepest = deepest.max(d);
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), d + 1));
        }
    }
    deepest
}

/// Runs of blank lines made one, trailing spaces of lines kept (Markdown's
/// line break) but lines of spaces emptied.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
            out.push('\n');
            continue;
        }
        blank = 0;
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// The text of `html` without tags, scripts or styles, and with the common
/// entities decoded: a reader's view of a page the converter is not given.
pub fn plain_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut out = String::new();
    let mut i = 0;
    while i < html.len() {
        let Some(open) = lower[i..].find('<').map(|o| i + o) else {
            out.push_str(&html[i..]);
            break;
        };
        out.push_str(&html[i..open]);
        let skipped = ["script", "style", "noscript", "template", "svg"]
            .into_iter()
            .find(|t| {
                lower[open + 1..].starts_with(t)
                    && lower[open + 1 + t.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c == '>' || c.is_ascii_whitespace())
            });
        let end = match skipped {
            Some(tag) => lower[open..].find(&format!("</{tag}")).and_then(|close| {
                lower[open + close..]
                    .find('>')
                    .map(|e| open + close + e + 1)
            }),
            None => lower[open..].find('>').map(|e| open + e + 1),
        };
        let Some(end) = end else {
            break;
        };
        let tag = &lower[open..end];
        if [
            "<br", "<p", "</p", "<div", "</div", "<li", "<h", "</h", "<tr",
        ]
        .iter()
        .any(|t| tag.starts_with(t))
        {
            out.push('\n');
        }
        i = end;
    }
    let decoded = out
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let lines: Vec<&str> = decoded.lines().map(str::trim).collect();
    tidy(&lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_becomes_markdown_without_what_a_reader_does_not_see() {
        let html = r#"<html><head><title>T</title><style>p{}</style></head><body>
            <h1>Install</h1><script>alert("x")</script>
            <p>Run <code>cargo add htmd</code>, then <a href="https://docs.rs/htmd">read</a>.</p>
            <ul><li>one</li><li>two</li></ul></body></html>"#;
        let c = convert_now(html);
        assert_eq!(c.plain, None);
        assert!(c.text.starts_with("# Install"), "{}", c.text);
        assert!(c.text.contains("`cargo add htmd`"), "{}", c.text);
        assert!(
            c.text.contains("[read](https://docs.rs/htmd)"),
            "{}",
            c.text
        );
        assert!(
            !c.text.contains("alert") && !c.text.contains("p{}"),
            "{}",
            c.text
        );
    }

    #[tokio::test]
    async fn a_page_nested_too_deep_is_plain_text_and_no_crash() {
        let html = format!(
            "{}<p>deep &amp; down</p>{}",
            "<div>".repeat(50_000),
            "</div>".repeat(50_000)
        );
        let c = convert(html).await;
        assert!(
            c.plain
                .as_deref()
                .is_some_and(|p| p.contains("levels deep")),
            "{c:?}"
        );
        assert_eq!(c.text, "deep & down");
    }

    #[test]
    fn the_nesting_estimate_leaves_sloppy_but_shallow_pages_alone() {
        let sloppy = format!(
            "<!DOCTYPE html><html><body><ul>{}</ul><p>a<br>b<img src=x><hr/></body></html>",
            "<li><p>item".repeat(5_000)
        );
        assert!(nesting(&sloppy) < 10, "{}", nesting(&sloppy));
        assert_eq!(nesting(&"<div><span>".repeat(300)), 600);
        assert_eq!(convert_now(&sloppy).plain, None);
    }

    #[test]
    fn plain_text_drops_tags_scripts_and_styles() {
        assert_eq!(
            plain_text("<p>a<script>x<y</script> b</p><style>z</style><br>c &lt;d&gt;"),
            "a b\n\nc <d>"
        );
        assert_eq!(plain_text("unclosed <b"), "unclosed");
    }
}
