//! Tables under a header line that names an unpatched column and a
//! patched one (`baseline  patched  delta`), one row of numbers per line.

use super::number::{first_number, quantity};
use super::{cells, has_word, setup_above, ClaimRow, ClaimTable, Quantity};

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

/// A header line: at least two cells, none a number, one naming a base
/// column and one naming a patched column (or, as mmtests prints them, a
/// base-word column followed by others: `next  patched  patched/only-leaf`).
pub(super) fn header_columns(line: &str) -> Option<Vec<(usize, String)>> {
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
pub(super) fn column_table(lines: &[&str], at: usize) -> Option<(Vec<ClaimTable>, usize)> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
