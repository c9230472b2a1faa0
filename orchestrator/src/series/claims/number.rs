//! A number of a claim as written: thousands separators, a unit, a
//! `(note)`, mmtests' `*  0.89%*`, a `+/- spread`, a share of runs (`5/5`).

use super::Quantity;

/// The number at the start of `s` (thousands separators allowed), and the
/// rest.
pub(super) fn first_number(s: &str) -> Option<(f64, &str)> {
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
pub(super) fn quantity(s: &str) -> Option<(Quantity, &str)> {
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
}
