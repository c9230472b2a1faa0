//! The comparison as a compact terminal report: the runs per kernel, one
//! table row per cell x candidate x metric (failed expectations and
//! regressions first), then the verdict and its reasons.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::analysis::catalog;
use crate::analysis::compare::cell_name;
use crate::analysis::model::{Comparison, MetricComparison};
use crate::analysis::text;
use crate::report::comparison_text::{
    change_column, effect_text, rank, result_text, runs_line, EFFECT_LEGEND, SURVIVORS_LEGEND,
    SURVIVORS_MARK, SURVIVORS_NOTE,
};

fn side(s: &Option<crate::analysis::stats::Summary>) -> String {
    s.as_ref().map_or("-".into(), text::summary)
}

fn p_text(m: &MetricComparison) -> String {
    let mwu = m.mann_whitney.as_ref().map_or("-".into(), |r| text::p(r.p));
    let welch = m.welch.as_ref().map_or("-".into(), |w| text::p(w.p));
    format!("{mwu} / {welch}")
}

/// How much of the table to keep: each level folds or drops more, in this
/// order, until the table fits the terminal.
///  1. p: only the deciding test's, not both;
///  2. change: without its confidence interval, and effect without its
///     interval's level;
///  3. means: without `± sd (n)`;
///  4. expect: folded into the result column;
///  5. the kernel column with one candidate, the cell column with one cell
///     (both are named above the table);
///  6. result: `(TCG: functional only)` becomes `*` and `(runs without an
///     OOM kill)` becomes `^`, both explained below;
///  7. effect: the column goes (said below the table).
///
/// Past that, comfy-table wraps the cells that are still too wide.
pub const FIT_LEVELS: u8 = 7;

/// Table rows with their sort key (rank, raw counter rather than per-work).
type Rows = Vec<((u8, bool), Vec<String>)>;

fn rows_at(c: &Comparison, level: u8) -> (Vec<String>, Rows) {
    let one_cand = c.candidates.len() <= 1;
    let one_cell = c.cells.len() <= 1;
    let drop_kernel = level >= 5 && one_cand;
    let drop_cell = level >= 5 && one_cell;
    let mut header = vec![];
    if !drop_cell {
        header.push("cell".to_string());
    }
    if !drop_kernel {
        header.push("kernel".to_string());
    }
    header.push("metric".into());
    if level >= 3 {
        header.push(format!("{} mean", c.baseline));
        header.push("candidate mean".into());
    } else {
        header.push(format!("{} mean ± sd (n)", c.baseline));
        header.push("candidate mean ± sd (n)".into());
    }
    if level >= 2 {
        header.push("change".into());
    } else {
        header.push(format!(
            "change [{:.0}% CI]",
            (1.0 - c.options.alpha) * 100.0
        ));
    }
    header.push(if level >= 1 {
        "p".to_string()
    } else {
        "p MWU / Welch".to_string()
    });
    if level < 7 {
        header.push(if level >= 2 {
            "effect vs floor".to_string()
        } else {
            "effect [CI] (level) vs floor".to_string()
        });
    }
    header.push("result".into());
    if level < 4 {
        header.push("expect".into());
    }
    let mut rows = vec![];
    for cell in &c.cells {
        for cand in &cell.candidates {
            for m in &cand.metrics {
                let e = cand.expectations.iter().find(|e| e.metric == m.metric);
                let expect = e.map_or(String::new(), |e| {
                    format!("{} {}", e.status.name(), catalog::kind_name(e.kind))
                });
                let mut row = vec![];
                if !drop_cell {
                    row.push(cell_name(cell).to_string());
                }
                if !drop_kernel {
                    row.push(cand.variant.clone());
                }
                row.push(m.metric.clone());
                if level >= 3 {
                    let mean = |s: &Option<crate::analysis::stats::Summary>| {
                        s.as_ref().map_or("-".into(), |s| text::num(s.mean))
                    };
                    row.push(mean(&m.base));
                    row.push(mean(&m.candidate));
                } else {
                    row.push(side(&m.base));
                    row.push(side(&m.candidate));
                }
                row.push(m.change.as_ref().map_or("-".into(), |ch| {
                    if level >= 2 {
                        change_column(ch)
                    } else {
                        text::change(ch)
                    }
                }));
                row.push(if level >= 1 {
                    m.p.map_or("-".into(), text::p)
                } else {
                    p_text(m)
                });
                if level < 7 {
                    row.push(effect_text(m, level < 2));
                }
                let mut result = if level >= 6 {
                    let tcg = if m.functional_only { "*" } else { "" };
                    let cut = if m.survivors.is_some() {
                        SURVIVORS_MARK
                    } else {
                        ""
                    };
                    format!("{}{tcg}{cut}", m.assessment.name())
                } else {
                    result_text(m)
                };
                if level >= 4 {
                    if !expect.is_empty() {
                        result = format!("{result}; {expect}");
                    }
                    row.push(result);
                } else {
                    row.push(result);
                    row.push(expect);
                }
                rows.push(((rank(m, e), !catalog::is_per_work(&m.metric)), row));
            }
        }
    }
    // Stable: within a rank, per-work rows first, then cells in plan order
    // and metrics in catalog order.
    rows.sort_by_key(|(r, _)| *r);
    (header, rows)
}

fn table_at(c: &Comparison, level: u8, width: Option<u16>) -> String {
    let (header, rows) = rows_at(c, level);
    let numeric: Vec<usize> = header
        .iter()
        .enumerate()
        .filter(|(_, h)| h.contains("mean") || h.starts_with("change") || h.starts_with('p'))
        .map(|(i, _)| i)
        .collect();
    let mut table = Table::new();
    table.load_preset(presets::ASCII_FULL_CONDENSED);
    match width {
        Some(w) => {
            table
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(w);
        }
        None => {
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    table.set_header(header);
    for (_, row) in rows {
        table.add_row(row);
    }
    for i in numeric {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("{table}\n")
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// The comparison table alone, every column.
pub fn render_table(c: &Comparison) -> String {
    table_at(c, 0, None)
}

/// The table fitted to `width` columns (see [`FIT_LEVELS`] for what goes
/// first); None: the full table.
pub fn render_table_fitted(c: &Comparison, width: Option<usize>) -> String {
    let Some(width) = width else {
        return render_table(c);
    };
    let mut out = String::new();
    for level in 0..=FIT_LEVELS {
        out = table_at(c, level, None);
        if widest(&out) <= width {
            break;
        }
        if level == FIT_LEVELS {
            out = table_at(c, level, Some(width.min(u16::MAX as usize) as u16));
        }
    }
    let folded = !out.contains("p MWU / Welch");
    if folded {
        if c.cells.len() <= 1 {
            if let Some(cell) = c.cells.first() {
                out.push_str(&format!("cell: {}\n", cell_name(cell)));
            }
        }
        if out.contains("*") && !out.contains("(TCG: functional only)") {
            out.push_str("*: TCG, functional only\n");
        }
        let survivors = c
            .cells
            .iter()
            .flat_map(|cell| &cell.candidates)
            .flat_map(|cand| &cand.metrics)
            .any(|m| m.survivors.is_some());
        if survivors && !out.contains(SURVIVORS_NOTE) {
            out.push_str(SURVIVORS_LEGEND);
            out.push('\n');
        }
        if !out.contains("effect vs floor") {
            out.push_str("effect vs floor left out: --wide shows it\n");
        }
        out.push_str(&format!(
            "(table fitted to {width} columns: p is {}'s; --wide for every column)\n",
            c.options.test.name()
        ));
    }
    out
}

/// Scenario B: the slowest dm-bufio call of each cell and kernel, round
/// by round; empty without scenario B cells.
pub fn render_anatomy(c: &Comparison) -> String {
    use crate::analysis::anatomy;
    let mut out = String::new();
    for a in &c.anatomy {
        out.push_str(&format!("anatomy: {}\n", anatomy::heading(a)));
        let Some(w) = &a.worst else { continue };
        let mut table = Table::new();
        table
            .load_preset(presets::ASCII_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(anatomy::COLUMNS.to_vec());
        for row in anatomy::rows(w) {
            table.add_row(row.to_vec());
        }
        for i in 2..7 {
            if let Some(col) = table.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        out.push_str(&format!("{table}\n"));
    }
    out
}

/// The terminal's width: `columns` (the value of $COLUMNS, read by cli/),
/// else the size of the terminal on standard output, else (a CI log, a
/// pipe) 100 columns.
pub fn terminal_width(columns: Option<&str>) -> usize {
    if let Some(w) = columns
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
    {
        return w;
    }
    // SAFETY: TIOCGWINSZ only writes a winsize into the struct we pass.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        ws.ws_col as usize
    } else {
        100
    }
}

/// The splats: title, status, runs per kernel, the first occurrence.
pub fn render_splats(c: &Comparison) -> String {
    let mut out = String::new();
    for f in &c.splats {
        out.push_str(&format!(
            "splat {}: {} ({})\n  first occurrence: run {} ({})\n",
            if f.status == crate::analysis::model::SplatStatus::New {
                "NEW".to_string()
            } else {
                f.status.name().to_string()
            },
            f.title,
            f.hits_text(),
            f.first_run,
            f.first_variant
        ));
        for l in f.excerpt.lines() {
            out.push_str(&format!("    {l}\n"));
        }
    }
    out
}

/// The whole report, with the full table.
pub fn render(c: &Comparison) -> String {
    render_fitted(c, None)
}

/// The whole report, the table fitted to `width` columns (None: full);
/// console text and build errors in it cannot drive the terminal.
pub fn render_fitted(c: &Comparison, width: Option<usize>) -> String {
    crate::report::untrusted::text(&render_raw(c, width))
}

fn render_raw(c: &Comparison, width: Option<usize>) -> String {
    let o = &c.options;
    let mut out = format!(
        "plan {} ({}): {} vs {}\n",
        c.plan_id,
        c.source,
        c.baseline,
        if c.candidates.is_empty() {
            "(no candidate)".to_string()
        } else {
            c.candidates.join(", ")
        }
    );
    out.push_str(&format!(
        "significant: {} p <= {} and |change| >= the noise floor ({} by default); expectations need {} runs a side\n",
        o.test.name(),
        o.alpha,
        text::pct(o.noise_floor).trim_start_matches('+'),
        o.min_runs
    ));
    out.push_str(&format!(
        "{EFFECT_LEGEND} (levels: {:.0}% or the next attainable above)\n",
        (1.0 - o.alpha) * 100.0
    ));
    for (arch, accel) in &c.accel {
        out.push_str(&format!("accelerator {arch}: {accel}\n"));
    }
    for v in &c.variants {
        out.push_str(&format!("kernel {}", runs_line(v)));
        out.push('\n');
        for p in &v.infra {
            out.push_str(&format!("  infra: {}: {}\n", p.run, p.reason));
        }
    }
    for u in &c.unreadable {
        out.push_str(&format!("{}\n", u.line()));
    }
    out.push_str(&render_splats(c));
    if c.candidates.is_empty() {
        out.push_str("one kernel only: nothing to compare\n");
    } else {
        out.push_str(&render_table_fitted(c, width));
        let mut units: Vec<&str> = c
            .cells
            .iter()
            .filter_map(|cell| cell.job_scenario().and_then(catalog::work_unit))
            .collect();
        units.dedup();
        for u in units {
            out.push_str(&format!(
                "rows *_per_k* are divided by the work done: {u}\n"
            ));
        }
    }
    out.push_str(&render_anatomy(c));
    out.push_str(&super::checks::render_regimes(c));
    out.push_str(&render_drift(c));
    out.push_str(&super::checks::render_policy(c));
    out.push_str(&super::checks::render_claims(c));
    let v = &c.verdict;
    out.push_str(&format!("verdict: {}\n", v.headline()));
    for r in &v.reasons {
        out.push_str(&format!("  - {r}\n"));
    }

    out
}

/// One line per cell whose runs drifted with their order (the analysis'
/// drift check), naming the kernel, metric, direction and p; nothing for
/// the others.
pub fn render_drift(c: &Comparison) -> String {
    let mut out = String::new();
    for d in c.drift.iter().filter(|d| d.drifted) {
        let tests: Vec<String> = d
            .significant()
            .iter()
            .map(|t| {
                format!(
                    "{} {} {} with run order (Kendall's tau {:+.2}, p {}, Holm {} over {} tests)",
                    t.variant,
                    t.metric,
                    if t.trend.tau > 0.0 { "rises" } else { "falls" },
                    t.trend.tau,
                    text::p(t.trend.p),
                    text::p(t.p_holm),
                    d.tests.len()
                )
            })
            .collect();
        out.push_str(&format!(
            "drift {}: {}: the runs were not alike over time (the host?); the shuffled order keeps it off the comparison, not out of its spread\n",
            d.name(),
            tests.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::synthetic::synthetic;
    use crate::analysis::{compare, Options};

    /// A baseline whose throughput falls run after run (the host slowing
    /// down) is flagged in its cell's drift line; the same runs in another
    /// order are not, and neither is a cell of 5 runs a side.
    #[test]
    fn a_drifting_side_gets_its_cells_drift_line() {
        let plan = |repeats: u32| {
            let over = crate::matrix::Overrides {
                repeats: Some(repeats),
                variants: Some(vec![
                    crate::matrix::Variant::base(),
                    crate::matrix::Variant {
                        name: "patched".into(),
                        cmdline: vec!["x=1".into()],
                        ..crate::matrix::Variant::base()
                    },
                ]),
                ..Default::default()
            };
            crate::matrix::plan::from_text(
                &crate::matrix::synthetic::synthetic_matrix(1),
                "synthetic.yaml",
                std::path::Path::new("."),
                &over,
            )
            .map(|mut p| {
                p.cells.truncate(1);
                p
            })
            .unwrap()
        };
        // (repeats, touches of base in run order falls, drift line)
        for (repeats, falls, want) in [(10, true, true), (10, false, false), (5, true, false)] {
            let (m, mut runs, _) = crate::analysis::synthetic::synthetic_for(plan(repeats));
            for r in runs.values_mut() {
                let repeat: u64 = r.id.rsplit("-r").next().unwrap().parse().unwrap();
                r.started_unix = 1_000 + 60 * repeat;
                if r.id.contains("-base-") {
                    let x = r.metrics.mglru_mut().unwrap();
                    // Falling: 50,000 down by 1,000 a run; else the same
                    // values with every other run swapped end for end.
                    let k = if falls || repeat.is_multiple_of(2) {
                        repeat
                    } else {
                        u64::from(repeats) + 1 - repeat
                    };
                    x.touches = 50_000 - 1_000 * k;
                }
            }
            let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
            let text = render(&c);
            let line = text.lines().find(|l| l.starts_with("drift "));
            assert_eq!(line.is_some(), want, "{repeats} {falls}: {text}");
            assert_eq!(c.drift.len(), 1);
            assert_eq!(c.drift[0].drifted, want);
            if let Some(line) = line {
                assert!(
                    line.contains("base touches falls with run order (Kendall's tau -1.00, p "),
                    "{line}"
                );
                let t = &c.drift[0].significant()[0];
                assert_eq!((t.variant.as_str(), t.metric.as_str()), ("base", "touches"));
                // 10 runs, every later one lower: the exact p is 2/10!.
                assert!((t.trend.p - 2.0 / 3_628_800.0).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn regressions_and_failures_come_first() {
        let (m, mut runs, _) = synthetic(10);
        // Make the patched kernel swap in twice as much, more per touch too:
        // a regression (lower is better).
        for r in runs
            .values_mut()
            .filter(|r| r.id.ends_with(|c: char| c.is_ascii_digit()) && r.id.contains("-patched-"))
        {
            if let Some(x) = r.metrics.mglru_mut() {
                x.pswpin *= 2;
            }
        }
        let mut expect = m.plan.expect.clone();
        expect.insert(
            "oom_kills".into(),
            crate::matrix::file::Expectation::Kind(crate::matrix::file::ExpectKind::Nonzero),
        );
        let c = compare(&m, &runs, &expect, vec![], &Options::default());
        let text = render(&c);
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("| patched ")).collect();
        assert!(
            rows[0].contains("| oom_kills ") && rows[0].contains("FAIL nonzero"),
            "{text}"
        );
        // The per-work twin first, then the raw counter.
        assert!(
            rows[1].contains("| pswpin_per_ktouch ") && rows[1].contains("REGRESSION"),
            "{text}"
        );
        assert!(
            rows[2].contains("| pswpin ") && rows[2].contains("REGRESSION"),
            "{text}"
        );
        assert!(
            text.contains("verdict: FAIL: 2 findings in 10 runs on 1 cell\n"),
            "{text}"
        );
    }

    #[test]
    fn the_table_fits_the_terminal_in_the_stated_order() {
        let (m, runs, _) = synthetic(20);
        let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
        let full = render_table(&c);
        assert!(widest(&full) > 180, "{full}");
        assert_eq!(render_table_fitted(&c, None), full);
        assert_eq!(render_table_fitted(&c, Some(1000)), full);
        // Step 1 alone: the p column folds to the deciding test's.
        let one = table_at(&c, 1, None);
        let w1 = widest(&one);
        assert!(one.contains("| p ") || one.contains("|      p |"), "{one}");
        let fitted = render_table_fitted(&c, Some(w1));
        assert!(fitted.starts_with(&one), "{fitted}");
        assert!(fitted.contains("(table fitted to "), "{fitted}");
        for width in [80, 100, 120] {
            let t = render_table_fitted(&c, Some(width));
            for l in t.lines() {
                assert!(l.chars().count() <= width, "{width}: {l}");
            }
            // Nothing is lost: every metric is still a row.
            assert!(t.contains("oom_kills"), "{t}");
        }
    }
}
