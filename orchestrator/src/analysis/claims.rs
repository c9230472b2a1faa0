//! A cover letter's own claims, checked: each row of its before/after
//! tables (read by `series::claims`) against a measurement: which metric
//! the row names (the synonym table below, documented in
//! docs/analysis.md), which cells its set-up describes, and what the
//! comparison of those cells says of it: agrees, contradicts, not
//! significant, or not measured here. Rows mmci cannot measure are listed,
//! never dropped.
//!
//! The finding is about direction, the only thing two set-ups as different
//! as an author's 8 GB machine and a 1 GiB guest can share: the claimed
//! direction (patched above, below or equal to unpatched) against the
//! measured change and its p. Sizes are shown, not judged.

use crate::analysis::model::{
    cell_name, Assessment, CellComparison, ClaimCheck, Finding, MetricComparison,
};
use crate::results::dir::Manifest;
use crate::series::claims::{ClaimRow, Quantity};

/// Row names (lowercased, notes in parentheses and punctuation dropped)
/// and the metric each is. A row matches when its normalised name equals
/// one of the names, or starts with it followed by a space; the longest
/// match wins.
pub const SYNONYMS: &[(&[&str], &str)] = &[
    (
        &[
            "oom kills",
            "oom kill",
            "oom_kill",
            "memcg oom kills",
            "oom killed",
            "runs with a memcg oom kill",
            "runs with an oom kill",
        ],
        "oom_kills",
    ),
    (
        &[
            "memcg oom events",
            "oom events",
            "memcg oom",
            "memory events oom",
        ],
        "memcg_oom_events",
    ),
    (
        &["memcg max events", "memory events max"],
        "memcg_max_events",
    ),
    (
        &[
            "mm_vmscan_throttled",
            "vmscan_throttle_isolated",
            "throttle events",
            "throttled",
            "throttle_isolated",
        ],
        "throttle_isolated",
    ),
    (
        &[
            "nr_isolated peak",
            "nr isolated peak",
            "isolated peak",
            "nr_isolated",
        ],
        "nr_isolated_peak",
    ),
    (&["total touches", "touches", "pages touched"], "touches"),
    (&["touches per second", "touches s"], "touches_per_s"),
    // Not "scan efficiency": the seed thread's figure is reclaimed per
    // folio scanned, and under MGLRU memcg pgscan counts isolated folios,
    // so a cover letter's scan efficiency is not measured here.
    (
        &["reclaimed per isolated", "pgsteal pgscan"],
        "reclaimed_per_isolated",
    ),
    (&["pswpin", "swap ins", "swapins"], "pswpin"),
    (&["pswpout", "swap outs", "swapouts"], "pswpout"),
    (
        &[
            "pswpout per 1 000 touches",
            "pswpout per 1000 touches",
            "pswpout per ktouch",
        ],
        "pswpout_per_ktouch",
    ),
    (
        &["pgmajfault", "major faults", "major page faults"],
        "pgmajfault",
    ),
    (
        &["workingset_refault_anon", "anon refaults", "refaults anon"],
        "refaults_anon",
    ),
    (
        &["workingset_refault_file", "file refaults", "refaults file"],
        "refaults_file",
    ),
    (&["allocstall", "allocation stalls"], "allocstall"),
    (
        &["noio latency p99", "gfp_noio latency p99"],
        "noio_latency_p99_ms",
    ),
    (
        &[
            "noio latency p50",
            "gfp_noio latency p50",
            "noio latency median",
        ],
        "noio_latency_p50_ms",
    ),
    (
        &["noio anon scanned", "anon folios scanned", "anon scanned"],
        "noio_anon_scanned",
    ),
];

fn normalise(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            c if c.is_alphanumeric() || c == '_' => out.push(c.to_ascii_lowercase()),
            _ => out.push(' '),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The metric a claim row speaks of, if mmci measures it: the longest
/// name that matches wins (`pswpout per 1,000 touches` is not `pswpout`).
pub fn metric_for(row: &str) -> Option<&'static str> {
    let n = normalise(row);
    SYNONYMS
        .iter()
        .flat_map(|(names, metric)| names.iter().map(move |s| (*s, *metric)))
        .filter(|(s, _)| n == *s || n.starts_with(&format!("{s} ")))
        .max_by_key(|(s, _)| s.len())
        .map(|(_, metric)| metric)
}

/// Whether a set-up's text describes a cell: every `N threads`, `N MB
/// working set` and `N MB memory cgroup` / `memcg` the text gives must
/// equal the cell's parameter (`threads`, `working_set_mb`,
/// `memcg_max_mb`). A set-up that gives none of them describes every
/// cell.
pub fn setup_matches(setup: &str, params: &[(&str, f64)]) -> bool {
    let words: Vec<String> = setup
        .split(|c: char| {
            c.is_whitespace()
                || c == ','
                || c == '['
                || c == ']'
                || c == '('
                || c == ')'
                || c == ':'
        })
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let param = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    let number = |w: &str| -> Option<(f64, bool)> {
        // `48`, or `48MB` / `48MiB` written together.
        let digits: String = w.chars().take_while(|c| c.is_ascii_digit()).collect();
        let v = digits.parse::<f64>().ok()?;
        let rest = &w[digits.len()..];
        Some((v, matches!(rest, "mb" | "mib" | "m")))
    };
    for (i, w) in words.iter().enumerate() {
        let Some((v, mb_attached)) = number(w) else {
            continue;
        };
        let next = words.get(i + 1).map(String::as_str).unwrap_or("");
        let (unit_mb, after) = if mb_attached {
            (true, next)
        } else if matches!(next, "mb" | "mib" | "m") {
            (true, words.get(i + 2).map(String::as_str).unwrap_or(""))
        } else {
            (false, next)
        };
        let key = if !unit_mb && (after == "threads" || after == "thread") {
            Some("threads")
        } else if unit_mb && (after == "working" || after == "anonymous") {
            Some("working_set_mb")
        } else if unit_mb && (after == "memory" || after == "memcg" || after == "cgroup") {
            Some("memcg_max_mb")
        } else {
            None
        };
        if let Some(k) = key {
            if param(k).is_some_and(|p| p != v) {
                return false;
            }
        }
    }
    true
}

fn show(q: &Quantity) -> String {
    q.text.clone()
}

/// The claim as one line: `0 -> 35645`, with the relative change when the
/// unpatched value is not 0.
fn claimed_text(row: &ClaimRow) -> String {
    let mut s = format!("{} -> {}", show(&row.base), show(&row.candidate));
    if let (Some(b), Some(c)) = (row.base.value, row.candidate.value) {
        if b != 0.0 && same_unit(&row.base, &row.candidate) {
            s.push_str(&format!(" ({:+.1}%)", (c - b) / b.abs() * 100.0));
        }
    }
    s
}

fn same_unit(a: &Quantity, b: &Quantity) -> bool {
    a.unit == b.unit
}

/// +1 the claim says patched is higher, -1 lower, 0 equal; None when a
/// side has no number or the units differ (`1.96 s -> 917.71 ms`).
fn claimed_sign(row: &ClaimRow) -> Option<f64> {
    let (b, c) = (row.base.value?, row.candidate.value?);
    if !same_unit(&row.base, &row.candidate) {
        return None;
    }
    Some(if c > b {
        1.0
    } else if c < b {
        -1.0
    } else {
        0.0
    })
}

fn measured_text(m: &MetricComparison) -> String {
    use crate::analysis::stats::Change;
    let mean = |s: &Option<crate::analysis::stats::Summary>| {
        s.as_ref()
            .map_or("-".to_string(), |s| crate::analysis::text::num(s.mean))
    };
    let change = match &m.change {
        Some(Change::Relative { rel, .. }) => format!(" ({:+.1}%)", rel * 100.0),
        _ => String::new(),
    };
    format!("{} -> {}{change}", mean(&m.base), mean(&m.candidate))
}

/// One claim row beside one cell's comparison of its metric (`None`: the
/// cell has no such metric).
pub fn check(
    setup: &str,
    row: &ClaimRow,
    cell: Option<&str>,
    m: Option<&MetricComparison>,
) -> ClaimCheck {
    let metric = metric_for(&row.name);
    let mut c = ClaimCheck {
        variant: String::new(),
        setup: setup.to_string(),
        row: row.name.clone(),
        line: row.line,
        claimed: claimed_text(row),
        metric: metric.map(str::to_string),
        cell: cell.map(str::to_string),
        measured: None,
        p: None,
        finding: Finding::NotMeasured,
        by_construction: false,
        reason: String::new(),
    };
    let Some(metric) = metric else {
        c.reason = "no mmci metric is this row (docs/analysis.md lists the names it knows)".into();
        return c;
    };
    let Some(m) = m else {
        c.reason = match cell {
            Some(cell) => format!("no run of {cell} has {metric}"),
            None => "no cell of the matrix is this set-up".into(),
        };
        return c;
    };
    c.measured = Some(measured_text(m));
    c.p = m.p;
    let survivors = m.survivors.map(|s| format!("; {}", s.text()));
    let Some(sign) = claimed_sign(row) else {
        c.reason = format!(
            "the claim has no two comparable numbers{}",
            survivors.unwrap_or_default()
        );
        return c;
    };
    let measured_sign = m.change.as_ref().map_or(0.0, |ch| ch.sign());
    let p = m.p.map_or(String::new(), |p| {
        format!(", p={}", crate::analysis::text::p(p))
    });
    (c.finding, c.reason) = match m.assessment {
        Assessment::TooFewRuns => (
            Finding::NotSignificant,
            format!("too few runs for the test to reach alpha{p}"),
        ),
        _ if m.functional_only => (
            Finding::NotSignificant,
            "a timing under TCG: its size means little".to_string(),
        ),
        // A claim of no change agrees only when the change measured is
        // within the noise floor: a large change the runs cannot confirm
        // (too few of them) does not confirm "unchanged" either.
        _ if !m.significant
            && sign == 0.0
            && m.change.as_ref().is_none_or(|c| c.magnitude() < m.noise_floor) =>
        {
            (
                Finding::Agrees,
                format!("{NO_CHANGE_AS_CLAIMED}{p}"),
            )
        }
        _ if !m.significant && sign == 0.0 => (
            Finding::NotSignificant,
            format!(
                "claimed unchanged; measured a change beyond the {} noise floor that the runs cannot confirm{p}",
                crate::analysis::text::pct(m.noise_floor).trim_start_matches('+')
            ),
        ),
        _ if !m.significant => (Finding::NotSignificant, format!("no significant change{p}")),
        _ if sign == 0.0 => (
            Finding::Contradicts,
            format!("claimed unchanged, measured a significant change{p}"),
        ),
        _ if measured_sign == sign => (Finding::Agrees, format!("significant, the claimed way{p}")),
        _ => (
            Finding::Contradicts,
            format!(
                "significant the other way: claimed {}, measured {}{p}",
                if sign > 0.0 { "up" } else { "down" },
                if measured_sign > 0.0 { "up" } else { "down" }
            ),
        ),
    };
    let base_all_zero = !m.base_values.is_empty() && m.base_values.iter().all(|v| *v == 0.0);
    if c.finding == Finding::Agrees && sign > 0.0 && row.base.value == Some(0.0) && base_all_zero {
        c.by_construction = true;
        c.reason = format!(
            "{}; but the baseline reads 0 in every run: this shows the series is active \
             (a counter it adds, an event base never has), not that reclaim changed",
            c.reason
        );
    }
    if let Some(s) = survivors {
        c.reason.push_str(&s);
    }
    c
}

/// One cell as the claims see it: its name in reports, its set-up's
/// numbers (`threads`, `working_set_mb`, `memcg_max_mb`) and the
/// candidate's comparison there.
pub struct CellView<'a> {
    pub name: &'a str,
    pub params: Vec<(&'static str, f64)>,
    pub metrics: &'a [MetricComparison],
}

/// Every row of a candidate's cover-letter tables beside the cells its
/// set-up describes: once per such cell, or once as not measured here
/// (no metric of mmci's is the row, no cell is the set-up, no run has it).
pub fn check_tables(
    variant: &str,
    tables: &[crate::series::claims::ClaimTable],
    cells: &[CellView],
) -> Vec<ClaimCheck> {
    let mut out = vec![];
    for t in tables {
        let described: Vec<&CellView> = cells
            .iter()
            .filter(|c| setup_matches(&t.setup, &c.params))
            .collect();
        for row in &t.rows {
            let metric = metric_for(&row.name);
            let mut checks: Vec<ClaimCheck> = match metric {
                Some(metric) if !described.is_empty() => described
                    .iter()
                    .map(|c| {
                        let m = c.metrics.iter().find(|m| m.metric == metric);
                        check(&t.setup, row, Some(c.name), m)
                    })
                    .collect(),
                _ => vec![check(&t.setup, row, None, None)],
            };
            for c in &mut checks {
                c.variant = variant.to_string();
            }
            out.extend(checks);
        }
    }
    out
}

/// Each candidate's cover-letter claims beside the cells their set-ups
/// describe (the cover is in the manifest, read when the series was
/// assembled).
/// The reason of a claim of no change that agrees because nothing changed
/// significantly: not a significant finding, so not of the claims' family.
const NO_CHANGE_AS_CLAIMED: &str = "no significant change, as claimed";

/// A row whose finding rests on a significant test: a contradiction, or an
/// agreement with a significant change (not one by construction).
fn significant_row(c: &ClaimCheck) -> bool {
    c.p.is_some()
        && !c.by_construction
        && match c.finding {
            Finding::Contradicts => true,
            Finding::Agrees => !c.reason.starts_with(NO_CHANGE_AS_CLAIMED),
            _ => false,
        }
}

/// The claims' rows are a family of their own (the guards are the
/// verdict's other one): the significant rows' p-values by Holm's
/// step-down procedure at `alpha`, so that a letter with many rows does
/// not turn a chance difference into "contradicted". A row Holm does not
/// reject is not significant, and says so.
pub(super) fn holm_over_claims(checks: &mut [ClaimCheck], alpha: f64) {
    let at: Vec<usize> = (0..checks.len())
        .filter(|&i| significant_row(&checks[i]))
        .collect();
    let ps: Vec<f64> = at.iter().map(|&i| checks[i].p.unwrap_or(1.0)).collect();
    let n = at.len();
    for (i, (level, rejected)) in at.into_iter().zip(super::decision::holm(&ps, alpha)) {
        if rejected {
            continue;
        }
        let c = &mut checks[i];
        c.finding = Finding::NotSignificant;
        c.reason = format!(
            "{}, not significant over the letter's {n} significant rows (Holm: p={} > {})",
            c.reason,
            crate::analysis::text::p(c.p.unwrap_or(1.0)),
            crate::analysis::text::p(level.unwrap_or(alpha / n.max(1) as f64))
        );
    }
}

pub(super) fn claim_checks(m: &Manifest, cells: &[CellComparison]) -> Vec<ClaimCheck> {
    let mut out = vec![];
    // A letter's "before" is the series' base. Against a baseline with a
    // series of its own (patch 1 alone as patch 2's baseline) its rows are
    // listed, not judged.
    let patched_baseline = m
        .plan
        .variants
        .first()
        .filter(|b| b.series.is_some())
        .map(|b| b.name.clone());
    for v in m.plan.variants.iter().skip(1) {
        let Some(tables) = m
            .kernels
            .iter()
            .filter(|k| k.variant == v.name)
            .find_map(|k| k.kernel.series.as_ref()?.cover.as_ref())
            .map(|c| &c.claims)
        else {
            continue;
        };
        let views: Vec<CellView> = cells
            .iter()
            .filter_map(|c| {
                let job = &m.plan.cells.iter().find(|p| p.id == c.cell)?.job;
                let cand = c.candidates.iter().find(|x| x.variant == v.name)?;
                Some(CellView {
                    name: cell_name(c),
                    params: vec![
                        ("threads", f64::from(job.threads)),
                        ("working_set_mb", job.working_set_mb as f64),
                        ("memcg_max_mb", job.memcg_max_mb as f64),
                    ],
                    metrics: &cand.metrics,
                })
            })
            .collect();
        let mut checks = check_tables(&v.name, tables, &views);
        if let Some(baseline) = &patched_baseline {
            for c in &mut checks {
                c.finding = Finding::NotMeasured;
                c.by_construction = false;
                c.p = None;
                c.reason = format!(
                    "the baseline here is `{baseline}`, a kernel with a series applied, not the base the letter's \"before\" describes"
                );
            }
        }
        out.extend(checks);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claims_rows_are_one_family_under_holm() {
        let row = |finding, p: Option<f64>, reason: &str| ClaimCheck {
            variant: "patched".into(),
            setup: "s".into(),
            row: "r".into(),
            line: 1,
            claimed: "1 -> 2".into(),
            metric: Some("pgscan".into()),
            cell: Some("c".into()),
            measured: Some("+10%".into()),
            p,
            finding,
            by_construction: false,
            reason: reason.into(),
        };
        // Three significant rows at 0.01: 0.001 <= 0.01/3, 0.004 <= 0.01/2,
        // 0.009 <= 0.01: all kept. With 0.006 second, Holm stops there.
        let mut kept = vec![
            row(
                Finding::Contradicts,
                Some(0.001),
                "significant the other way",
            ),
            row(Finding::Agrees, Some(0.004), "significant, the claimed way"),
            row(Finding::Agrees, Some(0.009), "significant, the claimed way"),
            row(Finding::Agrees, Some(0.5), NO_CHANGE_AS_CLAIMED),
            row(Finding::NotSignificant, Some(0.2), "no significant change"),
        ];
        holm_over_claims(&mut kept, 0.01);
        let findings: Vec<Finding> = kept.iter().map(|c| c.finding).collect();
        assert_eq!(
            findings,
            [
                Finding::Contradicts,
                Finding::Agrees,
                Finding::Agrees,
                Finding::Agrees,
                Finding::NotSignificant
            ]
        );
        let mut cut = vec![
            row(Finding::Agrees, Some(0.001), "significant, the claimed way"),
            row(
                Finding::Contradicts,
                Some(0.006),
                "significant the other way",
            ),
            row(Finding::Agrees, Some(0.009), "significant, the claimed way"),
        ];
        holm_over_claims(&mut cut, 0.01);
        assert_eq!(cut[0].finding, Finding::Agrees);
        assert_eq!(cut[1].finding, Finding::NotSignificant);
        assert!(
            cut[1].reason.ends_with(
                "not significant over the letter's 3 significant rows (Holm: p=0.0060 > 0.0050)"
            ),
            "{}",
            cut[1].reason
        );
        assert_eq!(cut[2].finding, Finding::NotSignificant);
    }

    #[test]
    fn row_names_map_to_metrics() {
        let cases: &[(&str, Option<&str>)] = &[
            ("OOM kills", Some("oom_kills")),
            ("memcg OOM kills", Some("oom_kills")),
            ("memcg oom events", Some("memcg_oom_events")),
            (
                "mm_vmscan_throttled (all VMSCAN_THROTTLE_ISOLATED)",
                Some("throttle_isolated"),
            ),
            ("mm_vmscan_throttled (ISOLATED)", Some("throttle_isolated")),
            ("nr_isolated peak (pages)", Some("nr_isolated_peak")),
            ("nr_isolated peak", Some("nr_isolated_peak")),
            ("total touches", Some("touches")),
            ("runs with a memcg OOM kill", Some("oom_kills")),
            ("pswpout per 1,000 touches", Some("pswpout_per_ktouch")),
            ("touches", Some("touches")),
            ("scan efficiency", None),
            ("pgsteal / pgscan", Some("reclaimed_per_isolated")),
            ("pgscan_direct  / s", None),
            ("workingset_refault_anon / s", Some("refaults_anon")),
            ("Hmean     1", None),
            ("real (s)", None),
            ("oomph", None),
        ];
        for (name, want) in cases {
            assert_eq!(metric_for(name), *want, "{name}");
        }
    }

    #[test]
    fn a_claim_of_no_change_agrees_only_within_the_noise_floor() {
        use crate::analysis::catalog::Better;
        use crate::analysis::stats::Change;
        use crate::series::claims::{ClaimRow, Quantity};
        let q = |v: f64| Quantity {
            value: Some(v),
            unit: String::new(),
            note: String::new(),
            text: v.to_string(),
        };
        let row = ClaimRow {
            name: "OOM kills".into(),
            base: q(0.0),
            candidate: q(0.0),
            line: 3,
        };
        let measured = |change: Change| MetricComparison {
            metric: "oom_kills".into(),
            unit: String::new(),
            better: Better::Lower,
            timing: false,
            functional_only: false,
            noise_floor: 0.05,
            base_values: vec![0.0, 0.0, 0.0, 0.0, 1.0],
            candidate_values: vec![1.0; 5],
            base: None,
            candidate: None,
            change: Some(change),
            mann_whitney: None,
            welch: None,
            p: Some(0.0476),
            min_attainable_p: 0.0079,
            significant: false,
            assessment: Assessment::NoChange,
            survivors: None,
            effect: None,
            floor_decision: None,
        };
        let big = Change::Relative { rel: 4.0, ci: None };
        let c = check("s", &row, Some("threads=64"), Some(&measured(big)));
        assert_eq!(c.finding, Finding::NotSignificant, "{}", c.reason);
        let c = check(
            "s",
            &row,
            Some("threads=64"),
            Some(&measured(Change::BothZero)),
        );
        assert_eq!(c.finding, Finding::Agrees, "{}", c.reason);
    }

    #[test]
    fn docs_list_every_row_name() {
        // docs/analysis.md's table is what users read: it must be this one.
        let doc = include_str!("../../../docs/analysis.md");
        for (names, metric) in SYNONYMS {
            let row = format!(
                "| `{metric}` | {} |",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            assert!(doc.contains(&row), "docs/analysis.md lacks the row\n{row}");
        }
    }

    #[test]
    fn setups_match_cells_by_their_numbers() {
        let cell64 = [
            ("threads", 64.0),
            ("working_set_mb", 48.0),
            ("memcg_max_mb", 16.0),
        ];
        let cell192 = [
            ("threads", 192.0),
            ("working_set_mb", 48.0),
            ("memcg_max_mb", 16.0),
        ];
        let cases: &[(&str, bool, bool)] = &[
            ("repro v1: 64 threads, 48 MB working set, 60 s", true, false),
            ("Authors' table (unpatched -> patched) [v2]", true, true),
            (
                "one run each, unpatched -> patched [192 threads]",
                false,
                true,
            ),
            (
                "16 MiB memory cgroup, 48 MiB anonymous working set [64 threads]",
                true,
                false,
            ),
            ("a 32MB memcg [64 threads]", false, false),
        ];
        for (setup, a, b) in cases {
            assert_eq!(setup_matches(setup, &cell64), *a, "{setup} / 64");
            assert_eq!(setup_matches(setup, &cell192), *b, "{setup} / 192");
        }
    }
}
