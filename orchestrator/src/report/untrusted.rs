//! Text that mmci did not write, made safe to print in a report: the
//! kernel's console (splat titles and excerpts) and build (release, warnings),
//! the guest's script output, the series' mails, a matrix file. A hostile
//! kernel or series controls all of it.
//!
//! What goes: control characters (an ESC sequence that repaints a terminal,
//! a CR that rewrites a line, a NUL), with the whole ANSI sequence an ESC
//! starts, and the bidirectional overrides that make a reader see text in
//! another order than it is. A kernel release is shown only if it looks like
//! one. Each format then neutralises its own markup on top of this:
//! `report::markdown` (fences, escapes, mentions), `report::email`
//! (trailers), HTML by auto-escaping.

/// The longest single field or excerpt line kept, in chars: the kernel's
/// own printk lines are shorter (LOG_LINE_MAX is 1024 bytes minus a header),
/// and a longer one would only push the report over its size limit.
pub const MAX_LINE_CHARS: usize = 1024;

/// What a cut line ends with.
const CUT: &str = " [...]";

/// Shown instead of a kernel release that is not one.
pub const INVALID_RELEASE: &str = "(invalid release)";

/// The longest release the kernel accepts (`__NEW_UTS_LEN`).
const MAX_RELEASE: usize = 64;

/// Unicode's bidirectional controls (embeddings, overrides, isolates and
/// marks): they reorder what is displayed without being visible themselves.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` without control characters, ANSI escape sequences and bidi
/// controls; tabs, newlines, CRs and Unicode line separators become spaces
/// when `one_line` (each is a line break or a column jump to a reader).
fn strip(s: &str, one_line: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' | '\n' | '\r' | '\u{2028}' | '\u{2029}' if one_line => out.push(' '),
            '\t' => out.push(' '),
            // ESC: CSI (`ESC [` params, up to a final byte @..~), OSC
            // (`ESC ]` up to BEL or ST) or a two-character escape.
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            // C1 CSI: the same sequence in one character.
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// At most [`MAX_LINE_CHARS`], saying so when cut.
fn cap(s: String) -> String {
    match s.char_indices().nth(MAX_LINE_CHARS) {
        None => s,
        Some((i, _)) => format!("{}{CUT}", &s[..i]),
    }
}

/// One line of untrusted text as it may be printed: no control characters
/// (line breaks and tabs become spaces), no escape sequences, no bidi
/// controls, no white space around it, at most [`MAX_LINE_CHARS`].
pub fn line(s: &str) -> String {
    cap(strip(s, true).trim().to_string())
}

/// A line of a rendered report, cleaned like [`line`] but keeping its
/// indentation and length (the last pass over a whole plain-text report).
pub fn line_keeping_indent(s: &str) -> String {
    strip(s, true).trim_end().to_string()
}

/// A whole terminal report with every line cleaned like
/// [`line_keeping_indent`] (the reports of a run and of a comparison
/// print console lines, script output and build text).
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for l in s.lines() {
        out.push_str(&line_keeping_indent(l));
        out.push('\n');
    }
    if !s.ends_with('\n') {
        out.pop();
    }
    out
}

/// Untrusted multi-line text (a console excerpt, a script's output) as
/// lines, each cleaned like [`line`] but keeping its indentation (a call
/// trace's shape is in it).
pub fn lines(s: &str) -> Vec<String> {
    // A CR is dropped with the other controls: at the end of a line it is
    // a serial console's CRLF, inside one it would overwrite the line on a
    // terminal.
    s.split(['\n', '\u{2028}', '\u{2029}'])
        .map(|l| cap(strip(l, false).trim_end().to_string()))
        .collect()
}

/// The kernel release (`include/config/kernel.release`, which the build
/// writes) if it is one: 1 to 64 characters of `[0-9A-Za-z._+-]`,
/// starting with a letter or digit (`6.12.0-rc1-00012-gabcdef+`); else
/// [`INVALID_RELEASE`].
pub fn release(s: &str) -> String {
    let ok = !s.is_empty()
        && s.len() <= MAX_RELEASE
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'));
    if ok {
        s.to_string()
    } else {
        INVALID_RELEASE.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_loses_controls_sequences_and_bidi() {
        for (given, want) in [
            ("plain text", "plain text"),
            ("  padded\t", "padded"),
            ("a\nb\r\nc", "a b  c"),
            ("tab\there", "tab here"),
            ("nul\0byte", "nulbyte"),
            ("bell\u{7}del\u{7f}", "belldel"),
            ("\u{1b}[2J\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}]0;title\u{7}after", "after"),
            ("\u{1b}]8;;http://x\u{1b}\\link", "link"),
            ("\u{1b}c reset", "reset"),
            ("c1 \u{9b}31mcsi", "c1 csi"),
            ("c1 \u{85}nel", "c1 nel"),
            ("rtl \u{202e}gnp.exe", "rtl gnp.exe"),
            ("iso \u{2066}x\u{2069}", "iso x"),
            ("ls\u{2028}ps\u{2029}", "ls ps"),
            ("unterminated \u{1b}[", "unterminated"),
            ("ünïcödé µs ±", "ünïcödé µs ±"),
            ("", ""),
        ] {
            assert_eq!(line(given), want, "{given:?}");
        }
    }

    #[test]
    fn long_lines_are_cut_on_a_char() {
        let long = "é".repeat(MAX_LINE_CHARS + 10);
        let cut = line(&long);
        assert_eq!(cut.chars().count(), MAX_LINE_CHARS + CUT.chars().count());
        assert!(cut.ends_with(" [...]"));
        let exact = "x".repeat(MAX_LINE_CHARS);
        assert_eq!(line(&exact), exact);
    }

    #[test]
    fn lines_keep_indentation_and_split_on_every_break() {
        assert_eq!(
            lines("Call trace:\r\n dump+0x1/0x2\n\u{1b}[1m  x\u{1b}[0m  \r\nfake\rreal"),
            ["Call trace:", " dump+0x1/0x2", "  x", "fakereal"]
        );
        assert_eq!(lines("a\tb"), ["a b"]);
        assert_eq!(lines("one"), ["one"]);
    }

    #[test]
    fn releases_are_validated() {
        for ok in [
            "6.12.95+",
            "6.12.0-rc1-00012-gabcdef",
            "5.15.0_custom",
            "v6.1",
        ] {
            assert_eq!(release(ok), ok);
        }
        for bad in [
            "",
            "6.12.0\n\n## mmci: PASS",
            "6.12 0",
            "-rc1",
            "6.12`id`",
            "6.12<!--",
            "6.12@akpm",
            "6.12|x",
            &"6".repeat(65),
            "6.12\u{1b}[2J",
        ] {
            assert_eq!(release(bad), INVALID_RELEASE, "{bad:?}");
        }
        assert_eq!(release(&"6".repeat(64)), "6".repeat(64));
    }
}
