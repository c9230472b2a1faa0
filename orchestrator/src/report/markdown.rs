//! GitHub-flavoured markdown: a check run's summary, a PR comment, an
//! Actions job summary. GitHub refuses a check-run summary over 65,535
//! bytes, so the report is cut to fit ([`render`]): verdict, reasons and
//! failed expectations stay longest, table rows go first (from the end:
//! rows come failures and regressions first), and the report says how
//! many went and where the rest is; it is never empty.
//!
//! Most of what a report shows comes from the series, the kernel or the
//! guest, so none of it may become markup: every interpolated string goes
//! through a filter here (`md`, `html` inside the raw `<summary>` line,
//! `code` for a code span) and code blocks get a fence longer than any
//! backtick run inside them (`fence`).

use super::view::{self, View};
use super::{fill, untrusted, ReportInput};

const TEMPLATE: &str = include_str!("../../templates/report.md.j2");

/// Reasons listed under the verdict line.
pub const MAX_REASONS: usize = 10;

/// GitHub's limit for a check run's `output.summary`.
pub const CHECK_RUN_LIMIT: usize = 65_535;

/// Zero-width space: put after `@` and `#` so that GitHub sees neither a
/// mention nor an issue reference (both notify people), and after a `:`
/// that could start an emoji shortcode; invisible when rendered.
const ZWSP: char = '\u{200b}';

/// Where an escaped string goes.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    /// Markdown text within a line: a table cell, the middle of a
    /// paragraph.
    Inline,
    /// Markdown text at the start of a line (a list item's text is too),
    /// where `- `, `1. `, `> ` or `===` would start a block.
    LineStart,
    /// The inside of a raw HTML block (`<summary>`), where markdown is
    /// not parsed: HTML entities instead of backslashes.
    Html,
}

fn escape_in(s: &str, ctx: Context) -> String {
    let s = untrusted::line(s);
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        match (ctx, c) {
            (_, '@' | '#') => {
                out.push(c);
                out.push(ZWSP);
            }
            // `:white_check_mark:` would draw an emoji.
            (_, ':') if next.is_some_and(|n| n.is_ascii_alphanumeric() || "_+-".contains(n)) => {
                out.push(':');
                out.push(ZWSP);
            }
            (Context::Html, '&') => out.push_str("&amp;"),
            (Context::Html, '<') => out.push_str("&lt;"),
            (Context::Html, '>') => out.push_str("&gt;"),
            (Context::Html, '"') => out.push_str("&quot;"),
            (Context::Html, '\'') => out.push_str("&#39;"),
            (Context::Html, _) => out.push(c),
            // Inline markup, links and images, raw HTML, comments and
            // autolinks, entities (`&#64;` is an `@`), math, a table
            // cell's end.
            (_, '\\' | '`' | '*' | '[' | ']' | '<' | '|' | '~' | '$' | '&') => {
                out.push('\\');
                out.push(c);
            }
            // `_` emphasises only at a word's edge (`x86_64` is plain).
            (_, '_')
                if !(i > 0
                    && chars[i - 1].is_alphanumeric()
                    && next.is_some_and(char::is_alphanumeric)) =>
            {
                out.push_str("\\_");
            }
            // GFM links a bare `https://...` and `www....`.
            (_, ':') if chars.get(i + 1..i + 3) == Some(&['/', '/']) => out.push_str("\\:"),
            (_, '.')
                if i >= 3
                    && chars[i - 3..i]
                        .iter()
                        .collect::<String>()
                        .eq_ignore_ascii_case("www") =>
            {
                out.push_str("\\.");
            }
            _ => out.push(c),
        }
    }
    if ctx == Context::LineStart {
        // What starts a block at the start of a line (where a list item's
        // or a heading's text also starts): a bullet, a setext underline,
        // an ordered list's `1.`.
        if out.starts_with(['+', '-', '=', '>']) {
            out.insert(0, '\\');
        }
        let digits = out.chars().take_while(char::is_ascii_digit).count();
        let rest = &out[digits..];
        if digits > 0
            && rest.starts_with(['.', ')'])
            && (rest.len() == 1 || rest[1..].starts_with([' ', '\t']))
        {
            out.insert(digits, '\\');
        }
    }
    out
}

/// The `md` filter: any text, as inert markdown on one line. Control
/// characters go, every markup character is backslash-escaped, and `@`
/// and `#` get a zero-width space so no mention or reference fires.
/// `md(true)` where the text starts a line (or a list item's text), so
/// that it cannot start a block either.
pub fn escape(s: String, line_start: Option<bool>) -> String {
    let ctx = if line_start == Some(true) {
        Context::LineStart
    } else {
        Context::Inline
    };
    escape_in(&s, ctx)
}

/// The `html` filter: text inside a raw HTML block of the markdown
/// (GitHub renders the `<summary>` line as HTML, not markdown).
pub fn escape_html(s: String) -> String {
    escape_in(&s, Context::Html)
}

/// The longest run of backticks in `s`.
fn longest_backticks(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// The `code` filter: text as one code span, delimited by more backticks
/// than it holds so that none of its own ends it. In a table cell
/// (`code(true)`) a `|` is escaped too: GFM ends a cell at an unescaped
/// `|` even inside a code span.
pub fn code(s: String, in_table: Option<bool>) -> String {
    let mut s = untrusted::line(&s);
    if s.is_empty() {
        return String::new();
    }
    if in_table == Some(true) {
        s = s.replace('|', "\\|");
    }
    let ticks = "`".repeat(longest_backticks(&s) + 1);
    // A span that starts or ends with a backtick needs a space inside its
    // delimiters (CommonMark strips one on each side).
    if s.starts_with('`') || s.ends_with('`') {
        format!("{ticks} {s} {ticks}")
    } else {
        format!("{ticks}{s}{ticks}")
    }
}

/// The `fence` filter: the backtick fence for a code block holding
/// `text` (a string or a list of lines), longer than any backtick run in
/// it, so that no line of it can close the block. Lines starting with
/// `~~~` cannot close a backtick fence either.
pub fn fence(text: minijinja::Value) -> String {
    let longest = match text.as_str() {
        Some(s) => longest_backticks(s),
        None => text
            .try_iter()
            .map(|it| {
                it.map(|l| l.as_str().map_or(0, longest_backticks))
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0),
    };
    "`".repeat(longest.max(2) + 1)
}

fn fill_view(v: &View) -> String {
    fill("report.md", TEMPLATE, minijinja::context! { v => v })
}

/// How much of each cuttable part a render keeps, in the order they are
/// given up when the report does not fit.
#[derive(Clone, Copy, Debug)]
struct Keep([usize; 6]);

/// Indices into [`Keep`], from what goes first to what goes last.
const ROWS: usize = 0;
const OLD_SPLATS: usize = 1;
const EXCERPTS: usize = 2;
const EXPECTATIONS: usize = 3;
const NEW_SPLATS: usize = 4;
const REASONS: usize = 5;

impl Keep {
    fn all(v: &View) -> Keep {
        let new = v.splats.iter().filter(|s| s.new).count();
        let mut k = [0; 6];
        k[ROWS] = v.row_count();
        k[OLD_SPLATS] = v.splats.len() - new;
        k[EXCERPTS] = v.splats.len();
        k[EXPECTATIONS] = v.checks_len();
        k[NEW_SPLATS] = new;
        k[REASONS] = v.reasons.len();
        Keep(k)
    }

    fn with(mut self, knob: usize, n: usize) -> Keep {
        self.0[knob] = n;
        self
    }

    fn apply(self, full: &View) -> View {
        let k = self.0;
        let mut v = full.clone();
        v.truncate(k[ROWS], k[EXPECTATIONS]);
        v.cut_splats(k[NEW_SPLATS], k[OLD_SPLATS], k[EXCERPTS]);
        v.reasons_cut += v.reasons.len().saturating_sub(k[REASONS]);
        v.reasons.truncate(k[REASONS]);
        v
    }
}

/// The report in at most `limit` bytes, never empty. What is cut first:
/// table rows (from the end: rows come failures and regressions first),
/// then pre-existing splats, then splat excerpts, then expectations
/// (passed and inconclusive ones before failed ones, as they are sorted),
/// then new splats, then reasons; each part is kept as large as fits, and
/// the report says what went. When even the verdict with nothing else is
/// too large, the verdict line and a pointer to the full reports.
pub fn render(input: &ReportInput, limit: usize) -> String {
    let mut full = view::build(input);
    // Every reason is also a row of the expectations table or the runs
    // list below: the top of a comment shows the first few.
    full.reasons_cut = full.reasons.len().saturating_sub(MAX_REASONS);
    full.reasons.truncate(MAX_REASONS);
    // No table row, expectation line or splat row renders under this many
    // bytes, so no more than limit / MIN_LINE of them can fit: rendering a
    // thousand cells' rows only to cut them would cost most of the time.
    const MIN_LINE: usize = 40;
    let cap = limit / MIN_LINE;
    let all = Keep::all(&full);
    if all.0.iter().all(|&n| n <= cap) {
        let out = fill_view(&full);
        if out.len() <= limit {
            return out;
        }
    }
    full.truncate(cap, cap);
    // Nor more excerpts than fit by their lines alone.
    let mut bytes = 0;
    let excerpts = full
        .splats
        .iter()
        .take_while(|s| {
            bytes += s.excerpt.iter().map(|l| l.len() + 1).sum::<usize>();
            bytes <= limit
        })
        .count();
    full.cut_splats(cap, cap, excerpts);
    let mut keep = Keep::all(&full);
    let fits = |k: Keep| {
        let out = fill_view(&k.apply(&full));
        (out.len() <= limit).then_some(out)
    };
    // Each part in turn, the others as they are: the most of it that
    // fits, by bisection (about log2(n) renders), else none of it and on
    // to the next.
    for knob in [
        ROWS,
        OLD_SPLATS,
        EXCERPTS,
        EXPECTATIONS,
        NEW_SPLATS,
        REASONS,
    ] {
        if let Some(out) = largest(keep.0[knob], |n| fits(keep.with(knob, n))) {
            return out;
        }
        keep = keep.with(knob, 0);
    }
    too_large(&full, limit)
}

/// The last resort: the marker, the verdict and where the rest is. Never
/// empty, so that a FAIL is still posted.
fn too_large(v: &View, limit: usize) -> String {
    let mut title = escape(v.title.clone(), None);
    // The title is the only part of unbounded length.
    let room = limit.saturating_sub(1024).max(200);
    if title.len() > room {
        let mut end = room;
        while !title.is_char_boundary(end) {
            end -= 1;
        }
        title.truncate(end);
        title.push_str(" [...]");
    }
    let mark = match (v.passed, v.status.as_str()) {
        (true, _) => " :white_check_mark:",
        (false, "FAIL") => " :x:",
        _ => " :grey_question:",
    };
    let full = match &v.results_url {
        Some(url) => format!("the full report is at {url}"),
        None => "run `mmci report DIR --format html` (or `--format json`) for it".to_string(),
    };
    format!(
        "{}\n\n## mmci: {}{mark}\n\n**{}** · {title}\n\n\
         _Report too large for GitHub's {limit}-byte limit even with its tables, \
         splats and expectations cut: see the HTML/JSON report; {full}._\n",
        v.marker,
        v.status,
        escape(v.verdict.clone(), None),
    )
}

/// `f(k)` for the largest `k` in 0..=max where it is Some, assuming that
/// holds for every smaller k too.
fn largest(max: usize, f: impl Fn(usize) -> Option<String>) -> Option<String> {
    let mut best = f(0)?;
    let (mut lo, mut hi) = (0, max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match f(mid) {
            Some(out) => {
                best = out;
                lo = mid;
            }
            None => hi = mid - 1,
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_is_inert_markdown() {
        let z = ZWSP;
        for (given, want) in [
            ("plain words", "plain words".to_string()),
            ("a | b", r"a \| b".into()),
            ("line\nbreak", "line break".into()),
            ("```", r"\`\`\`".into()),
            (
                "**bold** _em_ ~~s~~",
                r"\*\*bold\*\* \_em\_ \~\~s\~\~".into(),
            ),
            ("x86_64 __folio_put", r"x86_64 \_\_folio_put".into()),
            (
                "[x](https://e.example)",
                r"\[x\](https\://e.example)".into(),
            ),
            ("![i](u)", r"!\[i\](u)".into()),
            ("<!-- hide", r"\<!-- hide".into()),
            ("<script>", r"\<script>".into()),
            ("&#64;user", format!(r"\&#{z}64;user")),
            ("@torvalds", format!("@{z}torvalds")),
            ("a@b.org", format!("a@{z}b.org")),
            ("#123", format!("#{z}123")),
            ("## mmci: PASS", format!("#{z}#{z} mmci: PASS")),
            (":white_check_mark:", format!(":{z}white_check_mark:")),
            ("www.evil.example", r"www\.evil.example".into()),
            ("$$x$$", r"\$\$x\$\$".into()),
            ("back\\slash", r"back\\slash".into()),
            ("esc\u{1b}[31mred", "escred".into()),
            ("  padded  ", "padded".into()),
            ("5 ± 2 (n=5) 0 -> 1", "5 ± 2 (n=5) 0 -> 1".into()),
            ("- item", "- item".into()),
            ("1. first", "1. first".into()),
        ] {
            assert_eq!(escape(given.into(), None), want, "{given:?}");
        }
        // Where the text starts a line, nothing may start a block.
        for (given, want) in [
            ("- item", r"\- item"),
            ("+ item", r"\+ item"),
            ("=====", r"\====="),
            ("> quote", r"\> quote"),
            ("1. first", r"1\. first"),
            ("12) x", r"12\) x"),
            ("6.12.0 x", "6.12.0 x"),
        ] {
            assert_eq!(escape(given.into(), Some(true)), want, "{given:?}");
        }
    }

    #[test]
    fn html_block_text_uses_entities() {
        let z = ZWSP;
        assert_eq!(
            escape_html("<b>x</b> & \"q\" 'a' @u #1 [l](u)".into()),
            format!("&lt;b&gt;x&lt;/b&gt; &amp; &quot;q&quot; &#39;a&#39; @{z}u #{z}1 [l](u)")
        );
        assert_eq!(escape_html("a\nb\u{0}c".into()), "a bc");
    }

    #[test]
    fn code_spans_outlast_their_backticks() {
        for (given, table, want) in [
            ("x", None, "`x`"),
            ("a `b` c", None, "``a `b` c``"),
            ("``` @akpm <!--", None, "```` ``` @akpm <!-- ````"),
            ("ends`", None, "`` ends` ``"),
            ("a | b", Some(true), r"`a \| b`"),
            ("a | b", None, "`a | b`"),
            ("", None, ""),
            ("line\nbreak", None, "`line break`"),
        ] {
            assert_eq!(code(given.into(), table), want, "{given:?}");
        }
    }

    #[test]
    fn fences_outlast_every_line() {
        let lines = |v: &[&str]| minijinja::Value::from_serialize(v);
        assert_eq!(fence(lines(&["no ticks"])), "```");
        assert_eq!(fence(lines(&["```", "x"])), "````");
        assert_eq!(fence(lines(&["a ````` b", "``"])), "``````");
        assert_eq!(fence(lines(&[])), "```");
        assert_eq!(fence(minijinja::Value::from("mmci run ``` x")), "````");
    }
}
