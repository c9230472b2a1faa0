//! A plain-text reply for the patch thread, in the style of the 0-day
//! bot's and mmtests' reports: a first line that names the finding
//! (`email_verdict`), then a short quote of the cover letter, the verdict,
//! the regression policy and the cover letter's claims beside the
//! measurement, ASCII only, no line over 72 columns, the tables as
//! fixed-width `%stddev %change %stddev` columns. On a FAIL, 0-day's
//! `Reported-by:`/`Closes:` block (Closes: the email's own Message-ID on
//! lore); a `Tested-by:` only when the operator asks and the verdict is a
//! PASS not all under TCG (a trailer is a claim that lands in git history).
//!
//! Those are the only trailers the mail can carry: b4 and patchwork
//! collect `Tested-by:`/`Reviewed-by:`... lines from replies, so any such
//! line that comes from the kernel, the guest or the series (a console
//! excerpt, a splat title, a cover letter) is defused (`Tested by:`), and
//! console excerpts are indented so that none of their lines reads as the
//! report's own.

use serde::Serialize;

use super::comparison_text::{SURVIVORS_LEGEND, SURVIVORS_MARK, SURVIVORS_NOTE};
use super::view::{self, scenario_name, RowView};
use super::{email_verdict, fill, untrusted, ReportInput};
use crate::analysis::compare::cell_name;

const TEMPLATE: &str = include_str!("../../templates/report.email.j2");

/// The width of every line.
pub const WIDTH: usize = 72;
/// Cover-letter lines quoted (the rest is elided).
pub const QUOTE_LINES: usize = 8;

#[derive(Serialize)]
struct EmailTable {
    heading: String,
    lines: Vec<String>,
}

/// The nearest ASCII of the characters our numbers and names use;
/// anything else becomes `?` rather than a mis-encoded byte in a mail.
pub fn ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            c if c.is_ascii() => out.push(c),
            '±' => out.push_str("+-"),
            'µ' | 'μ' => out.push('u'),
            '→' => out.push_str("->"),
            '←' => out.push_str("<-"),
            '≤' => out.push_str("<="),
            '≥' => out.push_str(">="),
            '×' => out.push('x'),
            '–' | '—' | '−' => out.push('-'),
            '‘' | '’' => out.push('\''),
            '“' | '”' => out.push('"'),
            '…' => out.push_str("..."),
            '·' => out.push('.'),
            '\u{a0}' => out.push(' '),
            _ => out.push('?'),
        }
    }
    out
}

/// Breaks `line` into lines of at most `width` columns: at spaces where
/// it can, continuing quoted lines with their `> `, shell commands with a
/// trailing ` \`, and prose with a hanging indent; a word longer than a
/// line is cut.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    if line.len() <= width {
        return vec![line.to_string()];
    }
    let indent = line.len() - line.trim_start().len();
    let (next_prefix, suffix) = if line.starts_with("> ") {
        ("> ".to_string(), "")
    } else if indent >= 2 && line.trim_start().starts_with("mmci ") {
        (" ".repeat(indent + 4), " \\")
    } else {
        let hang = if line.trim_start().starts_with("- ") {
            2
        } else {
            4
        };
        (" ".repeat(indent + hang), "")
    };
    let mut out = vec![];
    let mut current = line.to_string();
    loop {
        if current.len() <= width {
            out.push(current);
            break;
        }
        let room = width - suffix.len();
        let head_len = current[..=room.min(current.len() - 1)]
            .rfind(' ')
            .filter(|&i| i > next_prefix.len())
            .unwrap_or(room);
        let (head, tail) = current.split_at(head_len);
        out.push(format!("{}{}", head.trim_end(), suffix));
        current = format!("{next_prefix}{}", tail.trim_start());
    }
    out
}

/// Marks a line that must reach the mail as it is (console text: a wrapped
/// call trace or `Code:` line is harder to read than a long one). Control
/// characters are stripped from every untrusted string before it gets
/// here, so only mmci's own code can start a line with one.
const VERBATIM: char = '\u{2}';

/// Marks the report's own trailer lines (`Tested-by:`, `| Reported-by:`,
/// `| Closes:`), the only lines that keep their trailer form.
const TRAILER: char = '\u{3}';

/// A `Something-by:` trailer anywhere in a line (wrapping can move any
/// word to the start of one).
static TRAILER_TOKEN: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)\b([a-z0-9]+)-by(\s*):").unwrap());

/// `line` with every `X-by:` made `X by:`, which no trailer parser (git
/// interpret-trailers, b4, patchwork) takes for a trailer.
pub fn defuse_trailers(line: &str) -> String {
    TRAILER_TOKEN.replace_all(line, "$1 by$2:").into_owned()
}

/// The rendered text made ASCII and wrapped, without control characters,
/// with no trailer but the report's own.
pub fn finish(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in ascii(text).lines() {
        if let Some(own) = line.strip_prefix(TRAILER) {
            out.push_str(own.trim_end());
            out.push('\n');
            continue;
        }
        if let Some(raw) = line.strip_prefix(VERBATIM) {
            out.push_str(&defuse_trailers(&untrusted::line_keeping_indent(raw)));
            out.push('\n');
            continue;
        }
        let line = untrusted::line_keeping_indent(line);
        let line = defuse_trailers(&line);
        // "-- " opens the signature: its trailing space is the point.
        let line = if line == "--" { "-- " } else { line.as_str() };
        for l in wrap(line, WIDTH) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// `+-  5%`, or nothing.
fn sd(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("+-{s:>4}")
    }
}

/// The 0-day column header for `base` against `candidate`.
pub fn header(base: &str, candidate: &str) -> Vec<String> {
    let cut = |s: &str| s.chars().take(16).collect::<String>();
    vec![
        format!("{:>16} {:>8} {:>16}", cut(base), "", cut(candidate)),
        format!("{} {} {}", "-".repeat(16), "-".repeat(8), "-".repeat(16)),
        format!("{:>16} {:>8} {:>16}", "%stddev", "%change", "%stddev"),
        format!("{:>16} {:>8} {:>16}", "\\", "|", "\\"),
    ]
}

/// One metric as a 0-day line; a significant row gets its verdict and p
/// in brackets, on the next line if they do not fit.
pub fn line(r: &RowView) -> Vec<String> {
    // A folded row shows no verdict, so the survivors' note (see
    // comparison_text::SURVIVORS_NOTE) becomes a mark before its name, in
    // the gap that is there anyway: a long name stays on its line.
    let mark = if r.folded && r.verdict.contains(SURVIVORS_NOTE) {
        SURVIVORS_MARK
    } else {
        " "
    };
    let main = format!(
        "{:>9} {:>6} {:>8} {:>9} {:>6} {mark}{}",
        r.base_mean,
        sd(&r.base_sd),
        r.change_short,
        r.candidate_mean,
        sd(&r.candidate_sd),
        r.metric
    );
    if r.folded {
        return vec![main];
    }
    let p = match r.p.strip_prefix('<') {
        Some(below) => format!("p<{below}"),
        None if r.p == "-" => String::new(),
        None => format!("p={}", r.p),
    };
    let note = if p.is_empty() {
        format!("[{}]", r.verdict)
    } else {
        format!("[{}, {p}]", r.verdict)
    };
    if main.len() + 1 + note.len() <= WIDTH {
        vec![format!("{main} {note}")]
    } else {
        vec![main, format!("{:>44}{note}", "")]
    }
}

/// Greedy word wrap at `width`, no indent.
fn fill_words(text: &str, width: usize) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + w.len() > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

/// The first lines of the cover letter to quote. A paragraph with a line
/// too long for `> ` and 72 columns is refilled as a whole, so that the
/// quote does not end up with one-word orphans.
fn cover_quote(cover: &str) -> Vec<String> {
    let room = WIDTH - 2;
    let cover = untrusted::lines(&ascii(cover)).join("\n");
    let mut lines: Vec<String> = vec![];
    let mut para: Vec<&str> = vec![];
    let flush = |para: &mut Vec<&str>, lines: &mut Vec<String>| {
        if para.iter().any(|l| l.len() > room) {
            lines.extend(fill_words(&para.join(" "), room));
        } else {
            lines.extend(para.iter().map(|l| l.to_string()));
        }
        para.clear();
    };
    for l in cover.lines().skip_while(|l| l.trim().is_empty()) {
        let l = l.trim_end();
        if l.is_empty() {
            flush(&mut para, &mut lines);
            lines.push(String::new());
        } else {
            para.push(l);
        }
    }
    flush(&mut para, &mut lines);
    let more = lines.len() > QUOTE_LINES;
    lines.truncate(QUOTE_LINES);
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    if more {
        lines.push("[...]".into());
    }
    lines
}

/// The splats as the kernel test robot reports them: what was noticed, a
/// table of titles against kernels (runs that hit it, of the runs), then
/// each splat's first occurrence inline.
pub fn splat_lines(v: &view::View) -> Vec<String> {
    if v.splats.is_empty() {
        return vec![];
    }
    let mut out = vec![];
    let new: Vec<&view::SplatView> = v.splats.iter().filter(|s| s.new).collect();
    for s in &new {
        out.push(format!("mmci noticed \"{}\" on:", s.title));
        for c in s.counts.iter().skip(1).filter(|c| c.1 > 0) {
            out.push(format!(
                "  {} ({} of {} runs), not on {}",
                c.0, c.1, c.2, v.baseline
            ));
        }
    }
    if !new.is_empty() {
        out.push(String::new());
    }
    // The table: one column per kernel, `k/n` runs.
    let kernels: Vec<&str> = v.splats[0].counts.iter().map(|c| c.0.as_str()).collect();
    let widths: Vec<usize> = kernels.iter().map(|k| k.len().clamp(5, 12)).collect();
    let used: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 4;
    let title_w = v
        .splats
        .iter()
        .map(|s| s.title.len())
        .max()
        .unwrap_or(0)
        .min(WIDTH.saturating_sub(used))
        .max(10);
    let rule = format!(
        "+{}+{}",
        "-".repeat(title_w + 2),
        widths
            .iter()
            .map(|w| format!("{}+", "-".repeat(w + 2)))
            .collect::<String>()
    );
    let cut = |s: &str, w: usize| -> String {
        if s.len() <= w {
            s.to_string()
        } else {
            format!("{}..", &s[..w - 2])
        }
    };
    out.push(rule.clone());
    out.push(format!(
        "| {:title_w$} |{}",
        "",
        kernels
            .iter()
            .zip(&widths)
            .map(|(k, w)| format!(" {:w$} |", cut(k, *w)))
            .collect::<String>()
    ));
    out.push(rule.clone());
    for s in &v.splats {
        out.push(format!(
            "| {:title_w$} |{}",
            cut(&s.title, title_w),
            s.counts
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!(" {:w$} |", format!("{}/{}", c.1, c.2)))
                .collect::<String>()
        ));
    }
    out.push(rule);
    out.push("(runs whose console shows it / runs of that kernel)".into());
    for s in &v.splats {
        out.push(String::new());
        out.push(format!(
            "{} ({}): {}",
            s.title,
            if s.new {
                "new, fails the verdict".to_string()
            } else {
                format!("{}, not blamed on the series", s.status)
            },
            s.hits
        ));
        out.push(format!(
            "First occurrence, run {} ({}):",
            s.first_run, s.first_variant
        ));
        out.push(String::new());
        // Indented: a console line that reads like a line of the report
        // ("Verdict: PASS") stays visibly part of the console.
        out.extend(s.excerpt.iter().map(|l| format!("{VERBATIM}  {l}")));
    }
    out
}

/// The anatomy table in fixed columns that fit in [`WIDTH`], with short
/// headers; no lines without rounds.
fn anatomy_lines(rows: &[Vec<String>]) -> Vec<String> {
    if rows.is_empty() {
        return vec![];
    }
    let fmt = |c: &[&str]| {
        format!(
            "  {:>5} {:>7} {:>6} {:>10} {:>8} {:>9} {:>9}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6]
        )
    };
    let mut out = vec![fmt(&[
        "round",
        "prio",
        "memcgs",
        "anon scan",
        "file scan",
        "reclaimed",
        "ms",
    ])];
    for r in rows.iter().filter(|r| r.len() == 7) {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        out.push(fmt(&cells));
    }
    out
}

/// Where `Closes:` points: the email's own Message-ID on lore, as 0-day's
/// does.
pub const CLOSES_URL: &str = "https://lore.kernel.org/r/";

/// The Message-ID a rendered email names in its own `| Closes:` trailer
/// (the last one, right under `| Reported-by:`), for `mmci post email` to
/// send it under that id.
pub fn closes_id(body: &str) -> Option<String> {
    let lines: Vec<&str> = body.lines().map(str::trim_end).collect();
    lines.windows(2).rev().find_map(|w| {
        let id = w[1].strip_prefix("| Closes: ")?.strip_prefix(CLOSES_URL)?;
        (w[0].starts_with("| Reported-by: ") && !id.is_empty()).then(|| id.to_string())
    })
}

/// A Message-ID as it may appear in a URL: without <>, white space and
/// control characters.
fn clean_id(id: &str) -> String {
    id.trim_matches(|c: char| c == '<' || c == '>' || c.is_whitespace())
        .chars()
        .filter(|c| c.is_ascii_graphic() && !matches!(c, '<' | '>'))
        .collect()
}

pub fn render(input: &ReportInput) -> String {
    let v = view::build(input);
    let c = input.comparison;
    let failed = c.verdict.status == crate::analysis::Status::Fail;
    let tested_by = input
        .mail
        .tested_by
        .as_deref()
        .filter(|_| email_verdict::tested_by_refused(c).is_none())
        .map(untrusted::line);
    let reported_by = failed.then(|| untrusted::line(&input.mail.from));
    let closes = input
        .mail
        .message_id
        .as_deref()
        .map(clean_id)
        .filter(|id| failed && !id.is_empty())
        .map(|id| format!("{CLOSES_URL}{id}"));
    let splats = splat_lines(&v);
    let mut tables = vec![];
    for cell in &c.cells {
        for cand in &cell.candidates {
            let rows: Vec<RowView> = v
                .tables
                .iter()
                .flat_map(|t| &t.rows)
                .filter(|r| r.cell == cell_name(cell) && r.kernel == cand.variant)
                .cloned()
                .collect();
            if rows.is_empty() {
                continue;
            }
            let mut lines = header(&c.baseline, &cand.variant);
            // Catalog order reads best in a plain table; the brackets
            // already point at what needs attention.
            let mut ordered = rows;
            ordered.sort_by_key(|r| {
                (
                    !crate::analysis::catalog::is_per_work(&r.metric),
                    cand.metrics
                        .iter()
                        .position(|m| m.metric == r.metric)
                        .unwrap_or(usize::MAX),
                )
            });
            if let Some(unit) = cell
                .job_scenario()
                .and_then(crate::analysis::catalog::work_unit)
            {
                if ordered.iter().any(|r| r.metric.contains("_per_k")) {
                    lines.push(format!("(*_per_k*: {unit})"));
                }
            }
            // Significant rows first, then the rest under their own line.
            let (folded, shown): (Vec<RowView>, Vec<RowView>) =
                ordered.into_iter().partition(|r| r.folded);
            lines.extend(shown.iter().flat_map(line));
            if !folded.is_empty() {
                lines.push(format!("{:>44}no significant change:", ""));
                lines.extend(folded.iter().flat_map(line));
                if folded.iter().any(|r| r.verdict.contains(SURVIVORS_NOTE)) {
                    lines.push(SURVIVORS_LEGEND.to_string());
                }
            }
            tables.push(EmailTable {
                heading: format!(
                    "{}, {}: {} vs {}",
                    scenario_name(&cell.scenario),
                    cell_name(cell),
                    c.baseline,
                    cand.variant
                ),
                lines,
            });
        }
    }
    let anatomy: Vec<EmailTable> = v
        .anatomy
        .iter()
        .map(|a| EmailTable {
            heading: format!("Anatomy: {}", a.heading),
            lines: anatomy_lines(&a.rows),
        })
        .collect();
    let cover = input.cover_letter.as_deref().map(cover_quote);
    let text = fill(
        "report.email",
        TEMPLATE,
        minijinja::context! {
            v => v,
            splats => splats,
            tables => tables,
            anatomy => anatomy,
            cover => cover,
            first_line => email_verdict::first_line(c),
            policy => email_verdict::policy_lines(c),
            claims => email_verdict::claim_lines(c),
            tested_by => tested_by,
            reported_by => reported_by,
            closes => closes,
            trailer => TRAILER.to_string(),
            version => env!("CARGO_PKG_VERSION"),
        },
    );
    finish(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_reports_own_trailer_survives() {
        for (given, want) in [
            ("Tested-by: Evil <e@x.org>", "Tested by: Evil <e@x.org>"),
            ("  reviewed-BY : x", "  reviewed by : x"),
            ("Signed-off-by: a", "Signed-off by: a"),
            (
                "see Acked-by:x and Tested-by:y",
                "see Acked by:x and Tested by:y",
            ),
            ("Reported-by", "Reported-by"),
            ("nearby: fine", "nearby: fine"),
            ("Fixes: 123", "Fixes: 123"),
        ] {
            assert_eq!(defuse_trailers(given), want, "{given:?}");
        }
        let text = format!(
            "intro\n{VERBATIM}  Tested-by: Evil <e@x.org>\nwrapped Tested-by: A <a@x.org>\n\
             {TRAILER}Tested-by: mmci <mmci@kernel-ci.invalid>\nbell\u{7}\u{1b}[2J here\n--\n"
        );
        assert_eq!(
            finish(&text),
            "intro\n  Tested by: Evil <e@x.org>\nwrapped Tested by: A <a@x.org>\n\
             Tested-by: mmci <mmci@kernel-ci.invalid>\nbell here\n-- \n"
        );
    }
}
