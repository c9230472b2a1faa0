//! The before/after tables of a cover letter, read as an mm reviewer reads
//! them: a header that names an unpatched column (`unpatched`, `baseline`,
//! `base`, `before`, `vanilla`, `w/o`, `upstream`, ...) and a patched one
//! (`patched`, `after`, `w/`, `with`, `patchset`, ...), then rows of a name
//! and numbers (thousands separators, units, `(notes)`, `+/- spread`,
//! mmtests' `(  3.74%)`); or a row per line written `name: A -> B`; or a
//! markdown table whose cells are `A -> B`, one column per test set-up.
//!
//! Pure text in, rows out, read once when the series is assembled (and kept
//! with its cover letter in the manifest): which mmci metric a row is and
//! whether the measurement agrees is `analysis::claims`' business.
//! A row the parser cannot split into a name and two values is kept in
//! [`ClaimTable::unread`], never dropped silently.

use serde::{Deserialize, Serialize};

mod arrows;
mod columns;
mod number;

/// One number of a claim, as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    /// `None` when the cell has no number (`-`, `killed`, `n/a`).
    pub value: Option<f64>,
    /// What followed the number (`%`, `ms`, `s`, `KB/s`), lowercased.
    pub unit: String,
    /// A parenthesised note or the spread (`killed`, `+/- 10.69`).
    pub note: String,
    /// The cell as written.
    pub text: String,
}

// Values come from `first_number`, which never reads a NaN: equality is
// total, so a cover letter (which derives Eq) can hold its claims.
impl Eq for Quantity {}

/// One row: the same quantity measured unpatched and patched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRow {
    pub name: String,
    pub base: Quantity,
    pub candidate: Quantity,
    /// 1-based line of the row in the text given.
    pub line: usize,
}

/// A table of one test set-up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimTable {
    /// The line(s) that introduce the table (the test set-up), and for a
    /// table of several set-ups or patched columns, which one.
    pub setup: String,
    /// The header's names of the two columns compared.
    pub base_column: String,
    pub candidate_column: String,
    pub rows: Vec<ClaimRow>,
    /// Lines inside the table that did not read as a row (line, text).
    pub unread: Vec<(usize, String)>,
    /// 1-based line of the header (or of the first arrow row).
    pub line: usize,
}

/// Lines of a cover letter read for tables: past them, prose or pasted
/// logs, not a before/after table.
pub const MAX_LINES: usize = 5_000;

/// The longest line that can be a table row (mmtests' widest rows with
/// seven kernels are about 200 characters).
pub const MAX_LINE_CHARS: usize = 400;

/// The tables of a cover letter (its body; a `---` line ends the prose,
/// the diffstat after it is never read).
pub fn parse(text: &str) -> Vec<ClaimTable> {
    // The letter is untrusted: control characters become spaces (names and
    // set-ups reach terminals and reports), a line longer than any table
    // row becomes a blank line (reading a row tries every split of it), and
    // only the first MAX_LINES lines are read.
    let clean: Vec<String> = text
        .lines()
        .take_while(|l| l.trim_end() != "---")
        .take(MAX_LINES)
        .map(|l| {
            if l.chars().count() > MAX_LINE_CHARS {
                String::new()
            } else {
                l.chars()
                    .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
                    .collect()
            }
        })
        .collect();
    let lines: Vec<&str> = clean.iter().map(String::as_str).collect();
    let mut tables = vec![];
    let mut i = 0;
    while i < lines.len() {
        if let Some((t, next)) = arrows::arrow_column_tables(&lines, i) {
            tables.extend(t);
            i = next;
        } else if let Some((t, next)) = columns::column_table(&lines, i) {
            tables.extend(t);
            i = next;
        } else if let Some((t, next)) = arrows::arrow_rows(&lines, i) {
            tables.push(t);
            i = next;
        } else {
            i += 1;
        }
    }
    tables
}

pub(super) fn has_word(cell: &str, words: &[&str]) -> bool {
    let lower = cell.to_ascii_lowercase();
    words.iter().any(|w| {
        if w.contains('/') || *w == "%" {
            lower.contains(w)
        } else {
            lower
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|part| part == *w)
        }
    })
}

/// The set-up a table belongs to: the paragraph right above it, joined.
/// The whole paragraph, not its last lines: a set-up sentence wrapped over
/// six lines ("Tested with mmci (scenario A: MGLRU on, 16 MiB memory
/// cgroup, 48 MiB / anonymous working set ...") cut to its last four
/// would lose the memcg and working-set sizes that pick the cell. Capped
/// at `SETUP_LINES` lines so that a table under a long prose paragraph
/// does not take all of it.
pub(super) fn setup_above(lines: &[&str], at: usize) -> String {
    const SETUP_LINES: usize = 8;
    let mut parts = vec![];
    let mut j = at;
    while j > 0 && parts.len() < SETUP_LINES {
        j -= 1;
        let l = lines[j].trim();
        if l.is_empty() {
            if parts.is_empty() {
                continue;
            }
            break;
        }
        parts.push(l.trim_end_matches(':').to_string());
    }
    parts.reverse();
    parts.join(" ")
}

/// Cells of a header or row: split on `|`, tabs, or runs of two or more
/// spaces.
pub(super) fn cells(line: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    if line.contains('|') {
        let mut pos = 0;
        for part in line.split('|') {
            let t = part.trim();
            if !t.is_empty() {
                out.push((pos + part.find(t).unwrap_or(0), t.to_string()));
            }
            pos += part.len() + 1;
        }
        return out;
    }
    let b = line.as_bytes();
    let mut start: Option<usize> = None;
    let mut i = 0;
    while i < b.len() {
        let sep = b[i] == b'\t'
            || (b[i] == b' ' && (i + 1 < b.len() && b[i + 1] == b' ' || i + 1 == b.len()));
        if sep {
            if let Some(s) = start.take() {
                out.push((s, line[s..i].trim().to_string()));
            }
        } else if start.is_none() && b[i] != b' ' {
            start = Some(i);
        }
        i += 1;
    }
    if let Some(s) = start {
        out.push((s, line[s..].trim().to_string()));
    }
    out.retain(|(_, c)| !c.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::setup_above;

    #[test]
    fn the_set_up_is_the_whole_paragraph_above_the_table() {
        // (text, line of the table, set-up)
        let wrapped = "Tested with mmci (scenario A: MGLRU on, 16 MiB memory cgroup, 48 MiB\n\
                       anonymous working set written at random by N threads for 20 s, swap\n\
                       on dm-delay with 50 ms latency), x86_64 guest with 2 vCPUs and 1 GiB\n\
                       under QEMU TCG, base, v1 and v2 in one run\n\
                       (matrix/mglru-isolation-revisions.yaml), 5 runs each, means, base ->\n\
                       v1 -> v2:\n\
                       \n\
                       64 threads";
        let long: String = (1..=10).map(|i| format!("line {i}\n")).collect::<String>() + "\ntable";
        for (text, at, want) in [
            (
                wrapped,
                7,
                "Tested with mmci (scenario A: MGLRU on, 16 MiB memory cgroup, 48 MiB \
                 anonymous working set written at random by N threads for 20 s, swap \
                 on dm-delay with 50 ms latency), x86_64 guest with 2 vCPUs and 1 GiB \
                 under QEMU TCG, base, v1 and v2 in one run \
                 (matrix/mglru-isolation-revisions.yaml), 5 runs each, means, base -> \
                 v1 -> v2",
            ),
            ("Results:\n\n\nrow", 3, "Results"),
            (
                "first paragraph\n\nsecond\nparagraph:\nrow",
                4,
                "second paragraph",
            ),
            ("row", 0, ""),
            (
                long.as_str(),
                11,
                "line 3 line 4 line 5 line 6 line 7 line 8 line 9 line 10",
            ),
        ] {
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(setup_above(&lines, at), want, "{text:?}");
        }
    }
}
