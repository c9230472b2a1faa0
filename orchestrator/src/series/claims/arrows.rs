//! Claims written as arrows: `A -> B` cells in a table of test set-ups
//! (markdown or aligned with spaces), and lists of `name: A -> B` lines.

use super::number::quantity;
use super::{cells, setup_above, ClaimRow, ClaimTable, Quantity};

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
pub(super) fn arrow_column_tables(lines: &[&str], at: usize) -> Option<(Vec<ClaimTable>, usize)> {
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
pub(super) fn arrow_rows(lines: &[&str], at: usize) -> Option<(ClaimTable, usize)> {
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
