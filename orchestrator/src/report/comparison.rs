//! The comparison as a compact terminal report: the runs per kernel, one
//! table row per cell x candidate x metric (failed expectations and
//! regressions first), then the verdict and its reasons.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::analysis::catalog;
use crate::analysis::compare::cell_name;
use crate::analysis::model::{Assessment, Comparison, ExpectationResult, MetricComparison, Status};
use crate::analysis::text;

/// Where a row goes: what needs attention first.
/// `patched: 9 of 10 runs completed (1 failed)`: one kernel's runs.
pub fn runs_line(v: &crate::analysis::model::VariantRuns) -> String {
    let mut s = format!(
        "{}: {} of {} runs completed",
        v.variant, v.completed, v.planned
    );
    let mut extra = vec![];
    if !v.failures.is_empty() {
        extra.push(format!("{} failed", v.failures.len()));
    }
    if !v.infra.is_empty() {
        extra.push(format!("{} infra failure(s)", v.infra.len()));
    }
    if !v.missing.is_empty() {
        extra.push(format!("{} without result", v.missing.len()));
    }
    if let Some(e) = &v.build_error {
        extra.push(format!("did not build: {e}"));
    }
    if !extra.is_empty() {
        s.push_str(&format!(" ({})", extra.join(", ")));
    }
    s
}

pub fn rank(m: &MetricComparison, e: Option<&ExpectationResult>) -> u8 {
    match (e.map(|e| e.status), m.assessment) {
        (Some(Status::Fail), _) => 0,
        (_, Assessment::Regression) if !m.functional_only => 1,
        (Some(Status::Inconclusive), _) => 2,
        (_, Assessment::Improvement | Assessment::Changed) => 3,
        (Some(Status::Pass), _) => 4,
        _ => 5,
    }
}

fn side(s: &Option<crate::analysis::stats::Summary>) -> String {
    s.as_ref().map_or("-".into(), text::summary)
}

fn p_text(m: &MetricComparison) -> String {
    let mwu = m.mann_whitney.as_ref().map_or("-".into(), |r| text::p(r.p));
    let welch = m.welch.as_ref().map_or("-".into(), |w| text::p(w.p));
    format!("{mwu} / {welch}")
}

pub fn result_text(m: &MetricComparison) -> String {
    if m.functional_only {
        format!("{} (TCG: functional only)", m.assessment.name())
    } else {
        m.assessment.name().to_string()
    }
}

/// The comparison table alone.
pub fn render_table(c: &Comparison) -> String {
    let mut rows = vec![];
    for cell in &c.cells {
        for cand in &cell.candidates {
            for m in &cand.metrics {
                let e = cand.expectations.iter().find(|e| e.metric == m.metric);
                let expect = e.map_or(String::new(), |e| {
                    format!("{} {}", e.status.name(), catalog::kind_name(e.kind))
                });
                rows.push((
                    rank(m, e),
                    vec![
                        cell_name(cell).to_string(),
                        cand.variant.clone(),
                        m.metric.clone(),
                        side(&m.base),
                        side(&m.candidate),
                        m.change.as_ref().map_or("-".into(), text::change),
                        p_text(m),
                        result_text(m),
                        expect,
                    ],
                ));
            }
        }
    }
    // Stable: within a rank, cells in plan order and metrics in catalog order.
    rows.sort_by_key(|(r, _)| *r);
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "cell".to_string(),
            "kernel".into(),
            "metric".into(),
            format!("{} mean ± sd (n)", c.baseline),
            "candidate mean ± sd (n)".into(),
            format!("change [{:.0}% CI]", (1.0 - c.options.alpha) * 100.0),
            "p MWU / Welch".into(),
            "result".into(),
            "expect".into(),
        ]);
    for (_, row) in rows {
        table.add_row(row);
    }
    for i in 3..7 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("{table}\n")
}

/// Scenario B: the slowest dm-bufio call of each cell and kernel, round
/// by round; empty without scenario B cells.
pub fn render_anatomy(c: &Comparison) -> String {
    use crate::analysis::anatomy;
    let mut out = String::new();
    for a in &c.noio_anatomy {
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

/// The whole report.
pub fn render(c: &Comparison) -> String {
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
    if c.candidates.is_empty() {
        out.push_str("one kernel only: nothing to compare\n");
    } else {
        out.push_str(&render_table(c));
    }
    out.push_str(&render_anatomy(c));
    let v = &c.verdict;
    out.push_str(&format!(
        "verdict: {} ({} expectation(s) passed, {} failed, {} inconclusive)\n",
        v.status.name(),
        v.expectations_passed,
        v.expectations_failed,
        v.expectations_inconclusive
    ));
    for r in &v.reasons {
        out.push_str(&format!("  - {r}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::synthetic::synthetic;
    use crate::analysis::{compare, Options};

    #[test]
    fn regressions_and_failures_come_first() {
        let (m, mut runs, _) = synthetic(10);
        // Make the patched kernel swap in 30% more: a regression (lower is better).
        for r in runs
            .values_mut()
            .filter(|r| r.id.ends_with(|c: char| c.is_ascii_digit()) && r.id.contains("-patched-"))
        {
            if let Some(x) = r.metrics.as_mut() {
                x.pswpin = x.pswpin * 13 / 10;
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
        assert!(
            rows[1].contains("| pswpin ") && rows[1].contains("REGRESSION"),
            "{text}"
        );
        assert!(
            text.contains("verdict: FAIL (3 expectation(s) passed, 1 failed, 0 inconclusive)"),
            "{text}"
        );
    }
}
