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

/// Words that name the unpatched column of a header.
const BASE_WORDS: &[&str] = &[
    "unpatched",
    "baseline",
    "base",
    "before",
    "vanilla",
    "w/o",
    "without",
    "upstream",
    "mainline",
    "original",
    "orig",
    "old",
    "next",
    "tip",
    "stock",
    "default",
];

/// Words that name a patched column.
const CANDIDATE_WORDS: &[&str] = &[
    "patched", "patch", "patches", "patchset", "series", "after", "w/", "with", "new", "fixed",
];

/// Words of a derived column: its numbers are not a third measurement.
const DERIVED_WORDS: &[&str] = &[
    "delta",
    "diff",
    "change",
    "%",
    "saved",
    "improvement",
    "gain",
    "ratio",
    "speedup",
    "reduction",
];

/// The tables of a cover letter (its body; a `---` line ends the prose,
/// the diffstat after it is never read).
pub fn parse(text: &str) -> Vec<ClaimTable> {
    let lines: Vec<&str> = text.lines().take_while(|l| l.trim_end() != "---").collect();
    let mut tables = vec![];
    let mut i = 0;
    while i < lines.len() {
        if let Some((t, next)) = arrow_column_tables(&lines, i) {
            tables.extend(t);
            i = next;
        } else if let Some((t, next)) = column_table(&lines, i) {
            tables.extend(t);
            i = next;
        } else if let Some((t, next)) = arrow_rows(&lines, i) {
            tables.push(t);
            i = next;
        } else {
            i += 1;
        }
    }
    tables
}

fn has_word(cell: &str, words: &[&str]) -> bool {
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

/// The set-up a table belongs to: the nearest non-empty lines above it
/// (up to two), joined.
fn setup_above(lines: &[&str], at: usize) -> String {
    let mut parts = vec![];
    let mut j = at;
    while j > 0 && parts.len() < 4 {
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
fn cells(line: &str) -> Vec<(usize, String)> {
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

/// A header line: at least two cells, none a number, one naming a base
/// column and one naming a patched column (or, as mmtests prints them, a
/// base-word column followed by others: `next  patched  patched/only-leaf`).
fn header_columns(line: &str) -> Option<Vec<(usize, String)>> {
    let cs = cells(line);
    if cs.len() < 2 || cs.len() > 10 || line.trim().len() > 200 {
        return None;
    }
    // `Upstream: no_write  write` is a caption over one kernel's numbers,
    // not a comparison of kernels.
    if cs[0]
        .1
        .split_whitespace()
        .next()
        .is_some_and(|w| w.ends_with(':'))
    {
        return None;
    }
    if cs
        .iter()
        .any(|(_, c)| quantity(c).is_some_and(|(_, rest)| rest.trim().is_empty()))
    {
        return None;
    }
    // A base column and at least one other that is not derived: whether it
    // is a table is decided by the rows under it.
    let base = cs.iter().position(|(_, c)| has_word(c, BASE_WORDS));
    let other = cs.iter().enumerate().any(|(i, (_, c))| {
        Some(i) != base && !has_word(c, DERIVED_WORDS) && !has_word(c, BASE_WORDS)
            || has_word(c, CANDIDATE_WORDS)
    });
    (base.is_some() && other).then_some(cs)
}

/// The number at the start of `s` (thousands separators allowed), and the
/// rest.
fn first_number(s: &str) -> Option<(f64, &str)> {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut end = 0;
    if end < b.len() && (b[end] == b'+' || b[end] == b'-') {
        end += 1;
    }
    let digits_from = end;
    while end < b.len() && (b[end].is_ascii_digit() || b[end] == b'.' || b[end] == b',') {
        // A comma must be a thousands separator: three digits follow.
        if b[end] == b',' {
            let group = &b[end + 1..];
            if group.len() < 3
                || !group[..3].iter().all(u8::is_ascii_digit)
                || group.get(3).is_some_and(u8::is_ascii_digit)
            {
                break;
            }
        }
        end += 1;
    }
    if end == digits_from || !b[digits_from].is_ascii_digit() {
        return None;
    }
    let num: String = t[..end].chars().filter(|c| *c != ',').collect();
    let num = num.trim_end_matches('.');
    num.parse::<f64>().ok().map(|v| (v, &t[end..]))
}

/// A unit written right after a number (`%`, `ms`, `s`, `KB/s`, `x`).
fn unit_of(rest: &str) -> (String, &str) {
    let r = rest.trim_start_matches(' ');
    let len = r
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '%' || c == '/'))
        .unwrap_or(r.len());
    let u = &r[..len];
    // Only units, not the next word of a sentence.
    let known = matches!(
        u.to_ascii_lowercase().as_str(),
        "%" | "ms"
            | "us"
            | "ns"
            | "s"
            | "sec"
            | "secs"
            | "x"
            | "k"
            | "m"
            | "g"
            | "kb"
            | "mb"
            | "gb"
            | "kib"
            | "mib"
            | "gib"
            | "kb/s"
            | "mb/s"
            | "gb/s"
            | "ops/s"
            | "usecs"
            | "msecs"
            | "pages"
            | "cycles"
    );
    let ends = r[len..].is_empty() || r[len..].starts_with(char::is_whitespace);
    if known && !u.is_empty() && (rest.starts_with(u) || ends) {
        (u.to_ascii_lowercase(), &r[len..])
    } else {
        (String::new(), rest)
    }
}

/// Reads one quantity at the start of `s`: a number, its unit, then any
/// `(note)`, `*note*` or `+/- spread`. `None` if `s` does not start with
/// a number or a placeholder (`-`, `n/a`).
fn quantity(s: &str) -> Option<(Quantity, &str)> {
    let t = s.trim_start();
    for empty in ["-", "n/a", "N/A", "—"] {
        if let Some(rest) = t.strip_prefix(empty) {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return Some((
                    Quantity {
                        value: None,
                        unit: String::new(),
                        note: String::new(),
                        text: empty.into(),
                    },
                    rest,
                ));
            }
        }
    }
    let approx = t.strip_prefix('~');
    let (mut value, rest) = first_number(approx.unwrap_or(t))?;
    // `5/5` runs: the share.
    let (unit, mut rest) = match rest.strip_prefix('/').and_then(first_number) {
        Some((of, after)) if of > 0.0 && !rest[1..].starts_with(['+', '-']) => {
            value /= of;
            ("share".to_string(), after)
        }
        _ => unit_of(rest),
    };
    let mut notes = vec![];
    loop {
        let r = rest.trim_start();
        if let Some(inner) = r.strip_prefix('(') {
            let Some(close) = inner.find(')') else { break };
            notes.push(inner[..close].trim().to_string());
            rest = &inner[close + 1..];
        } else if let Some(inner) = r.strip_prefix('*') {
            let Some(close) = inner.find('*') else { break };
            notes.push(inner[..close].trim().to_string());
            rest = &inner[close + 1..];
        } else if let Some(inner) = r.strip_prefix("+/-").or_else(|| r.strip_prefix("±")) {
            let Some((spread, after)) = first_number(inner) else {
                break;
            };
            let (u, after) = unit_of(after);
            notes.push(format!("+/- {spread}{u}"));
            rest = after;
        } else {
            break;
        }
    }
    let text = t[..t.len() - rest.len()].trim().to_string();
    Some((
        Quantity {
            value: Some(value),
            unit,
            note: notes.join("; "),
            text,
        },
        rest,
    ))
}

/// A row: leading name, then quantities. Returns the name and every
/// quantity with its column position in `line`. Where several splits of
/// name and numbers are possible (`Hmean 1  357.14  360.31`: is `1` part of
/// the name?), the one with `columns` quantities wins, else the longest
/// run of quantities.
fn row(line: &str, columns: usize) -> Option<(String, Vec<(usize, Quantity)>)> {
    let trimmed = line.trim_end();
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(
            trimmed
                .char_indices()
                .filter(|(_, c)| c.is_whitespace() || *c == '|')
                .map(|(i, c)| i + c.len_utf8()),
        )
        .collect();
    let mut best: Option<(String, Vec<(usize, Quantity)>)> = None;
    for &b in &bounds {
        let mut rest = &trimmed[b..];
        let mut qs = vec![];
        loop {
            let stripped = rest.trim_start_matches([' ', '\t', '|']);
            if stripped.is_empty() {
                break;
            }
            let at = trimmed.len() - stripped.len();
            let Some((q, r)) = quantity(stripped) else {
                qs.clear();
                break;
            };
            qs.push((at, q));
            rest = r;
        }
        if qs.len() < 2 {
            continue;
        }
        let name = trimmed[..b]
            .trim()
            .trim_matches(|c: char| c == '|' || c == ':' || c.is_whitespace())
            .to_string();
        if qs.len() == columns {
            return Some((name, qs));
        }
        if best.is_none() {
            best = Some((name, qs));
        }
    }
    best
}

/// A row read under a header: its line, name, and quantities with their
/// column positions.
type ParsedRow = (usize, String, Vec<(usize, Quantity)>);

/// A table under a header line (`baseline  patched  delta`).
fn column_table(lines: &[&str], at: usize) -> Option<(Vec<ClaimTable>, usize)> {
    let header = header_columns(lines[at])?;
    // mmtests prints two header lines (kernel, then option): a second
    // header-like line without numbers directly below is folded in.
    let mut i = at + 1;
    let mut pending_name = String::new();
    let mut parsed: Vec<ParsedRow> = vec![];
    let mut unread = vec![];
    let mut blank_run = 0;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim();
        if t.is_empty() {
            blank_run += 1;
            if blank_run >= 1 && !parsed.is_empty() {
                break;
            }
            i += 1;
            continue;
        }
        blank_run = 0;
        if t.chars()
            .all(|c| matches!(c, '-' | '+' | '|' | '=' | ' ' | ':'))
        {
            i += 1;
            continue;
        }
        if t.starts_with('(')
            && t.ends_with(')')
            && first_number(t.trim_start_matches('(')).is_none()
        {
            // A note under a row: `(= lru_note_cost_unlock_irq)`.
            if let Some((_, name, _)) = parsed.last_mut() {
                name.push(' ');
                name.push_str(t);
            }
            i += 1;
            continue;
        }
        match row(l, header.len()) {
            Some((name, qs)) => {
                let name = if name.is_empty() && !pending_name.is_empty() {
                    std::mem::take(&mut pending_name)
                } else if !pending_name.is_empty() {
                    format!("{} {name}", std::mem::take(&mut pending_name))
                } else {
                    name
                };
                parsed.push((i + 1, name, qs));
            }
            None if parsed.is_empty()
                && header_columns(l).is_none()
                && first_number(t).is_none()
                && i == at + 1
                && cells(l).len() >= 2 =>
            {
                // A second header line (mmtests' option names).
            }
            None if t.split_whitespace().count() <= 6 && first_number(t).is_none() => {
                // A name wrapped onto its own line; its numbers follow.
                if !pending_name.is_empty() {
                    unread.push((i, std::mem::take(&mut pending_name)));
                }
                pending_name = t.to_string();
                if header_columns(l).is_some() {
                    break;
                }
            }
            None => {
                if parsed.is_empty() {
                    return None;
                }
                break;
            }
        }
        i += 1;
    }
    if parsed.is_empty() {
        return None;
    }
    if !pending_name.is_empty() {
        unread.push((i, pending_name));
    }
    // Column roles, by the header's words: 'b' base, 'c' patched, 'd'
    // derived (delta, %), 'u' a name the words do not place (`VSS on`).
    let role = |c: &str| {
        if has_word(c, DERIVED_WORDS) && !has_word(c, CANDIDATE_WORDS) {
            'd'
        } else if has_word(c, BASE_WORDS) && !has_word(c, CANDIDATE_WORDS) {
            'b'
        } else if has_word(c, CANDIDATE_WORDS) {
            'c'
        } else {
            'u'
        }
    };
    // The header's value columns: when the header has one more cell than a
    // row has values, its first cell names the row column (`Lock Name`).
    let values_per_row = parsed.iter().map(|(_, _, q)| q.len()).max().unwrap_or(0);
    let mut cols: Vec<(usize, String)> = header.clone();
    if cols.len() > values_per_row && cols.len() >= 2 {
        cols.remove(0);
    }
    let base_idx = cols.iter().position(|(_, c)| role(c) == 'b')?;
    // A first column before the base one that no word places, in rows
    // with a value for every column, is the row's name (`cpus  Upstream
    // Patched`: rows `1  44331.1  38978.0`).
    let numeric_names = base_idx > 0
        && role(&cols[0].1) == 'u'
        && parsed.iter().all(|(_, name, _)| name.is_empty());
    if numeric_names {
        let label = cols.remove(0).1;
        for (_, name, qs) in parsed.iter_mut() {
            if name.is_empty() && qs.len() == cols.len() + 1 {
                let (_, q) = qs.remove(0);
                *name = format!("{label} {}", q.text).trim().to_string();
            }
        }
    }
    let base_idx = cols.iter().position(|(_, c)| role(c) == 'b')?;
    let patched: Vec<usize> = {
        let c: Vec<usize> = (0..cols.len())
            .filter(|&i| role(&cols[i].1) == 'c')
            .collect();
        if c.is_empty() {
            (base_idx + 1..cols.len())
                .filter(|&i| role(&cols[i].1) == 'u')
                .collect()
        } else {
            c
        }
    };
    let setup = setup_above(lines, at);
    let mut tables = vec![];
    for (ci, (_, cname)) in cols.iter().enumerate() {
        if !patched.contains(&ci) {
            continue;
        }
        let mut rows = vec![];
        let mut t_unread = unread.clone();
        for (line, name, qs) in &parsed {
            // Values align with columns by order; a row with fewer values
            // than columns is matched by position.
            let pick = |want: usize| -> Option<&Quantity> {
                if qs.len() == cols.len() {
                    return qs.get(want).map(|(_, q)| q);
                }
                let target = cols[want].0;
                qs.iter()
                    .min_by_key(|(pos, _)| pos.abs_diff(target))
                    .map(|(_, q)| q)
            };
            match (pick(base_idx), pick(ci)) {
                (Some(b), Some(c)) if !std::ptr::eq(b, c) && !name.is_empty() => {
                    rows.push(ClaimRow {
                        name: name.clone(),
                        base: b.clone(),
                        candidate: c.clone(),
                        line: *line,
                    })
                }
                _ => t_unread.push((*line, lines[line - 1].trim().to_string())),
            }
        }
        let several = patched.len() > 1;
        tables.push(ClaimTable {
            setup: if several {
                format!("{setup} [{cname}]")
            } else {
                setup.clone()
            },
            base_column: cols[base_idx].1.clone(),
            candidate_column: cname.clone(),
            rows,
            unread: t_unread,
            line: at + 1,
        });
    }
    (!tables.is_empty()).then_some((tables, i))
}

/// `A -> B` (or `A => B`, `A → B`) in one cell; in a chain `A -> B -> C`
/// (base, an earlier revision, this one) the first and the last.
fn arrow(cell: &str) -> Option<(Quantity, Quantity)> {
    let unified = cell.replace("=>", "->").replace('→', "->");
    let parts: Vec<&str> = unified.split("->").collect();
    if parts.len() < 2 {
        return None;
    }
    let (qa, ra) = quantity(parts[0])?;
    for middle in &parts[1..parts.len() - 1] {
        let (_, r) = quantity(middle)?;
        if !r.trim().is_empty() {
            return None;
        }
    }
    let (qb, rb) = quantity(parts[parts.len() - 1])?;
    // Anything after the last number is its note (`(+22%)`).
    let extra = rb.trim();
    let mut qb = qb;
    if !extra.is_empty() {
        let e = extra.trim_matches(|c| c == '(' || c == ')').to_string();
        qb.note = if qb.note.is_empty() {
            e
        } else {
            format!("{}; {e}", qb.note)
        };
    }
    (ra.trim().is_empty() || ra.trim().starts_with('(')).then_some((qa, qb))
}

/// A table whose cells are `A -> B`, one column per test set-up: in
/// markdown (`| metric | v1 | v2 |`) or aligned with spaces (`  64 threads
/// 192 threads` over `  touches  39168 -> 43584  55296 -> 74560`).
fn arrow_column_tables(lines: &[&str], at: usize) -> Option<(Vec<ClaimTable>, usize)> {
    let head = lines[at];
    if head.contains("->") || head.trim().is_empty() {
        return None;
    }
    let names: Vec<String> = cells(head).into_iter().map(|(_, c)| c).collect();
    if names.is_empty()
        || names
            .iter()
            .any(|c| quantity(c).is_some_and(|(_, r)| r.trim().is_empty()))
    {
        return None;
    }
    let mut i = at + 1;
    let mut body: Vec<(usize, Vec<String>)> = vec![];
    while i < lines.len() {
        let t = lines[i].trim();
        if t.is_empty() {
            break;
        }
        if t.chars().all(|c| matches!(c, '-' | ':' | '|' | ' ' | '+')) {
            i += 1;
            continue;
        }
        let cs: Vec<String> = cells(lines[i]).into_iter().map(|(_, c)| c).collect();
        if cs.len() < 2 || !cs[1..].iter().any(|c| c.contains("->")) {
            break;
        }
        body.push((i + 1, cs));
        i += 1;
    }
    if body.is_empty() {
        return None;
    }
    let width = body.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
    // The header names the set-ups; a first header cell over the row
    // names (`metric`) is skipped.
    let setups: Vec<String> = if names.len() >= width {
        names[names.len() + 1 - width..].to_vec()
    } else {
        names.clone()
    };
    let setup = setup_above(lines, at);
    // "... one run each, unpatched -> patched:" names the two sides.
    let (bname, cname) = setup
        .split_once("->")
        .map(|(b, c)| (b, c.rsplit("->").next().unwrap_or(c)))
        .map(|(b, c)| {
            let b = b
                .rsplit(['(', ',', ' '])
                .find(|w| !w.is_empty())
                .unwrap_or("before");
            let c = c
                .split([')', ':', ' ', ','])
                .find(|w| !w.is_empty())
                .unwrap_or("after");
            (b.to_string(), c.to_string())
        })
        .unwrap_or_else(|| ("before".into(), "after".into()));
    let mut tables = vec![];
    for (si, sname) in setups.iter().enumerate() {
        let mut rows = vec![];
        let mut unread = vec![];
        for (line, cs) in &body {
            let Some(cell) = cs.get(si + 1) else { continue };
            if matches!(cell.as_str(), "-" | "" | "n/a") {
                continue;
            }
            match arrow(cell) {
                Some((b, c)) => rows.push(ClaimRow {
                    name: cs[0].clone(),
                    base: b,
                    candidate: c,
                    line: *line,
                }),
                None => unread.push((*line, format!("{}: {cell}", cs[0]))),
            }
        }
        tables.push(ClaimTable {
            setup: match described(lines, sname) {
                Some(d) => format!("{setup} [{sname}: {d}]"),
                None => format!("{setup} [{sname}]"),
            },
            base_column: bname.clone(),
            candidate_column: cname.clone(),
            rows,
            unread,
            line: at + 1,
        });
    }
    Some((tables, i))
}

/// The line of the letter that says what a set-up column's name stands
/// for: `- repro v1: 64 threads, 48 MB working set, 60 s` for `v1`.
fn described(lines: &[&str], name: &str) -> Option<String> {
    let key = format!("{}:", name.to_ascii_lowercase());
    lines.iter().find_map(|l| {
        let lower = l.to_ascii_lowercase();
        let at = lower.find(&key)?;
        let before_ok = at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric();
        let rest = l[at + key.len()..].trim();
        (before_ok && !rest.is_empty() && !rest.contains("->")).then(|| rest.to_string())
    })
}

/// Consecutive lines `name: A -> B` (a list of claims).
fn arrow_rows(lines: &[&str], at: usize) -> Option<(ClaimTable, usize)> {
    let one = |l: &str| -> Option<(String, Quantity, Quantity)> {
        let t = l.trim().trim_start_matches(['-', '*', ' ']);
        let (name, value) = t.split_once(':')?;
        let (b, c) = arrow(value)?;
        Some((name.trim().to_string(), b, c))
    };
    one(lines[at])?;
    let mut rows = vec![];
    let mut i = at;
    while i < lines.len() {
        let Some((name, b, c)) = one(lines[i]) else {
            break;
        };
        rows.push(ClaimRow {
            name,
            base: b,
            candidate: c,
            line: i + 1,
        });
        i += 1;
    }
    Some((
        ClaimTable {
            setup: setup_above(lines, at),
            base_column: "before".into(),
            candidate_column: "after".into(),
            rows,
            unread: vec![],
            line: at + 1,
        },
        i,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_written() {
        // (cell, value, unit, note, left over)
        let cases: &[(&str, Option<f64>, &str, &str, &str)] = &[
            ("246,499,132,369", Some(246_499_132_369.0), "", "", ""),
            ("0 (invisible) 230", Some(0.0), "", "invisible", " 230"),
            (
                "35645 (all VMSCAN_THROTTLE_ISOLATED)",
                Some(35645.0),
                "",
                "all VMSCAN_THROTTLE_ISOLATED",
                "",
            ),
            ("722.84 ms", Some(722.84), "ms", "", ""),
            ("1.96 s    917.71 ms", Some(1.96), "s", "", "    917.71 ms"),
            ("13.17s", Some(13.17), "s", "", ""),
            ("107.56 +/- 10.69", Some(107.56), "", "+/- 10.69", ""),
            ("8.49 (   3.74%)", Some(8.49), "", "3.74%", ""),
            ("360.31 *   0.89%*", Some(360.31), "", "0.89%", ""),
            ("~0%", Some(0.0), "%", "", ""),
            ("-12.5%", Some(-12.5), "%", "", ""),
            ("- x", None, "", "", " x"),
            ("1,5", Some(1.0), "", "", ",5"),
        ];
        for (cell, value, unit, note, rest) in cases {
            let (q, r) = quantity(cell).unwrap_or_else(|| panic!("{cell}: no quantity"));
            assert_eq!(
                (q.value, q.unit.as_str(), q.note.as_str(), r),
                (*value, *unit, *note, *rest),
                "{cell}"
            );
        }
        for cell in ["killed", "", "v2", "x86_64"] {
            assert!(quantity(cell).is_none(), "{cell}");
        }
    }

    #[test]
    fn headers_name_a_base_and_another_column() {
        let cases: &[(&str, bool)] = &[
            (
                "                          baseline    patched      delta",
                true,
            ),
            (
                "  Lock Name                Before      After     % change",
                true,
            ),
            (
                "                    Baseline           VSS off            VSS on",
                true,
            ),
            ("| metric | unpatched | patched |", true),
            ("Upstream: no_write\twrite", false),
            ("  Patched  write", false),
            ("baseline 12 13", false),
            ("We compared the base kernel with the patched one.", false),
        ];
        for (line, want) in cases {
            assert_eq!(header_columns(line).is_some(), *want, "{line}");
        }
    }
}
