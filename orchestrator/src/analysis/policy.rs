//! The regression policy: what every candidate is checked for, whoever
//! wrote the series and whatever it claims. A maintainer's first question
//! of any mm series is "what does it break?", so this is the default
//! verdict; a series' own expectations and its cover letter's claims come
//! on top of it, never instead of it.
//!
//! Every run must boot and complete, and no splat may be new (both judged
//! in `compare`'s verdict). Then, per cell and candidate:
//! - no more runs with an OOM kill than the baseline had (Fisher's exact
//!   test on the counts of runs: a fact, so it holds under TCG too);
//! - no regression beyond its noise floor of the guards below, metrics
//!   normalised by the work done, so that a kernel that does more work is
//!   not blamed for doing it. How each is decided (two tests at the floor,
//!   Holm over the verdict's whole family, the looks of the sequential
//!   budget) is `decision`'s; this module says what is guarded. A guard that is a timing is judged
//!   on KVM only: under TCG its size means little, and it is listed as not
//!   judged rather than making the verdict inconclusive. Each scenario's
//!   `Def` names its guards (scenario A: throughput and swap and fault
//!   traffic per 1,000 touches; scenario B: the NOIO callers' p99 latency
//!   and futile calls, the other reclaimers' p99 latency as the control).

use super::expect;
use super::model::{ExpectationResult, GuardResult, MetricComparison, Options, Status};
use super::stats::fisher_exact_greater;
use super::text;
use crate::matrix::file::{ExpectKind, Expectation};
pub use crate::scenario::def::Guard;

/// The metric whose per-run values count OOM kills (a run with any is a
/// run with an OOM kill); `survivors` owns it, with the other kills that
/// end a run.
pub use super::survivors::OOM_METRIC;

/// The guards of a scenario (by its name in a cell, `mglru_isolation`):
/// each scenario's `Def` lists its own (scenario/<name>/mod.rs).
pub fn guards(scenario: &str) -> &'static [Guard] {
    crate::scenario::registry::named(scenario).map_or(&[], |d| d.guards)
}

/// A candidate that did no work at all where the baseline did: a fact, not
/// a size, so it fails under TCG too and needs no test. Either the guard
/// is the work itself (`touches`: 0 in every completed candidate run, more
/// than 0 in every baseline run), or it is divided by the work and has no
/// candidate value though the candidate completed runs (nothing to divide
/// by) while the baseline has values.
pub fn no_work(m: &MetricComparison, cand_runs: usize) -> Option<String> {
    use crate::analysis::catalog::Better;
    let (b, c) = (&m.base_values, &m.candidate_values);
    if m.better == Better::Higher
        && !b.is_empty()
        && !c.is_empty()
        && b.iter().all(|v| *v > 0.0)
        && c.iter().all(|v| *v == 0.0)
    {
        return Some(format!(
            "the workload did no work: 0 in {} of {} candidate runs, base {} on average",
            c.len(),
            c.len(),
            text::num(b.iter().sum::<f64>() / b.len() as f64)
        ));
    }
    // Compared on the runs without an OOM kill (see Survivors), only those
    // count: a candidate whose every run was killed is the OOM guard's
    // case, not "no work".
    let (runs, which) = match m.survivors {
        Some(s) => (s.candidate, "candidate runs without an OOM kill"),
        None => (cand_runs, "completed candidate runs"),
    };
    if crate::analysis::catalog::is_per_work(&m.metric) && !b.is_empty() && c.is_empty() && runs > 0
    {
        return Some(format!(
            "the workload did no work in any of {runs} {which} (nothing to divide by), base did in {} runs",
            b.len()
        ));
    }
    None
}

/// Fisher's exact test on the runs with an OOM kill: fails when the
/// candidate has significantly more of them than the baseline.
pub fn oom_runs(m: &MetricComparison, opts: &Options) -> ExpectationResult {
    let hits = |v: &[f64]| v.iter().filter(|x| **x > 0.0).count();
    let (bn, cn) = (m.base_values.len(), m.candidate_values.len());
    let (bh, ch) = (hits(&m.base_values), hits(&m.candidate_values));
    let line = format!("runs with an OOM kill: {ch} of {cn}, base {bh} of {bn}");
    let (status, reason) = if bn == 0 || cn == 0 {
        (
            Status::Inconclusive,
            format!("{line}: a side has no completed run"),
        )
    } else if fisher_exact_greater(cn, cn, 0, bn) > opts.alpha {
        // Even every candidate run killed against none of the baseline's
        // would not be significant: the test cannot say anything here.
        (
            Status::Inconclusive,
            format!(
                "{line}: with {cn} + {bn} runs Fisher's exact test cannot reach p <= {}",
                opts.alpha
            ),
        )
    } else {
        let p = fisher_exact_greater(ch, cn, bh, bn);
        let how = format!("{line} (Fisher's exact test, p={})", text::p(p));
        if p <= opts.alpha {
            (Status::Fail, format!("more runs with an OOM kill: {how}"))
        } else {
            (Status::Pass, how)
        }
    };
    ExpectationResult {
        metric: m.metric.clone(),
        kind: ExpectKind::NoRegression,
        threshold: None,
        status,
        reason,
    }
}

/// One guard on its comparison: `no_regression` at the metric's noise
/// floor; None when it cannot be judged here (a timing under TCG).
pub fn guard(m: &MetricComparison, opts: &Options) -> Option<ExpectationResult> {
    if m.functional_only {
        return None;
    }
    Some(expect::evaluate(
        &Expectation::Kind(ExpectKind::NoRegression),
        m,
        opts,
    ))
}

/// The regression policy in one cell for one candidate: runs with an OOM
/// kill (Fisher's exact test), then each guard of the cell's scenario.
/// A guard with a test carries it (`GuardResult::decision`), decided here
/// with this cell's guards as the family, and again by
/// [`super::decision::decide`] over the verdict's whole family; a check
/// that cannot be judged here is kept with status None and why.
pub fn check_cell(
    scenario: &str,
    metrics: &[MetricComparison],
    opts: &Options,
) -> Vec<GuardResult> {
    let levels = super::decision::Levels {
        alpha: opts.verdict_alpha,
        looks: opts.looks,
    };
    let mut out = vec![];
    let find = |name: &str| metrics.iter().find(|m| m.metric == name);
    if let Some(m) = find(OOM_METRIC) {
        let decision = super::decision::oom_guard(m, levels);
        out.push(GuardResult {
            metric: OOM_METRIC.into(),
            why: "runs with an OOM kill, by Fisher's exact test".into(),
            status: None,
            reason: match decision {
                Some(_) => "not yet decided".into(),
                None => oom_runs(m, opts).reason,
            },
            more_runs: false,
            decision,
        });
    }
    // Completed candidate runs, counted on any metric every run has.
    let cand_runs = metrics
        .iter()
        .map(|m| m.candidate_values.len())
        .max()
        .unwrap_or(0);
    for g in guards(scenario) {
        let mut decision = None;
        let (status, reason) = match find(g.metric) {
            None => (None, "no completed run has it".to_string()),
            Some(m) => match no_work(m, cand_runs) {
                Some(why) => (Some(Status::Fail), why),
                None if m.functional_only => (
                    None,
                    "a timing under TCG: its size means little".to_string(),
                ),
                None => {
                    decision = super::decision::size_guard(m, levels);
                    let why = match decision {
                        Some(_) => "not yet decided".to_string(),
                        None if m.base_values.is_empty() || m.candidate_values.is_empty() => {
                            "a side has no value".to_string()
                        }
                        None => "no relative floor: the baseline's median is 0".to_string(),
                    };
                    match m.survivors {
                        Some(s) if decision.is_none() => (None, format!("{}: {why}", s.text())),
                        _ => (None, why),
                    }
                }
            },
        };
        out.push(GuardResult {
            metric: g.metric.into(),
            why: g.why.into(),
            status,
            reason,
            more_runs: false,
            decision,
        });
    }
    // Decided on the cell alone; the verdict decides again over the
    // family of every cell (`decision::decide`).
    super::decision::decide_cell(&mut out, metrics, levels);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::catalog::Better;
    use crate::analysis::model::Assessment;

    fn comparison(metric: &str, base: &[f64], cand: &[f64]) -> MetricComparison {
        MetricComparison {
            metric: metric.into(),
            unit: String::new(),
            better: Better::Lower,
            timing: false,
            functional_only: false,
            noise_floor: 0.05,
            base_values: base.to_vec(),
            candidate_values: cand.to_vec(),
            base: None,
            candidate: None,
            change: None,
            mann_whitney: None,
            welch: None,
            p: None,
            min_attainable_p: 0.0,
            significant: false,
            assessment: Assessment::NoChange,
            survivors: None,
            effect: None,
            floor_decision: None,
        }
    }

    #[test]
    fn more_runs_with_an_oom_kill_fail_only_when_significant() {
        let opts = Options::default();
        // (base values, candidate values, status)
        let cases: &[(&[f64], &[f64], Status)] = &[
            (&[0.0; 5], &[1.0, 2.0, 1.0, 1.0, 3.0], Status::Fail),
            (&[0.0; 5], &[1.0, 0.0, 0.0, 0.0, 0.0], Status::Pass),
            (&[1.0; 5], &[1.0; 5], Status::Pass),
            (&[1.0; 5], &[0.0; 5], Status::Pass),
            (&[], &[1.0], Status::Inconclusive),
            // 2 + 2 runs: even 2 of 2 against 0 of 2 gives p = 1/6.
            (&[0.0; 2], &[1.0; 2], Status::Inconclusive),
            (&[0.0; 2], &[0.0; 2], Status::Inconclusive),
        ];
        for (b, c, want) in cases {
            let r = oom_runs(&comparison(OOM_METRIC, b, c), &opts);
            assert_eq!(r.status, *want, "{b:?} -> {c:?}: {}", r.reason);
        }
        let r = oom_runs(&comparison(OOM_METRIC, &[0.0; 5], &[1.0; 5]), &opts);
        assert_eq!(
            r.reason,
            "more runs with an OOM kill: runs with an OOM kill: 5 of 5, base 0 of 5 (Fisher's exact test, p=0.0040)"
        );
    }

    #[test]
    fn timings_under_tcg_are_not_judged() {
        let mut m = comparison("noio_latency_p99_ms", &[1.0; 5], &[9.0; 5]);
        m.functional_only = true;
        assert!(guard(&m, &Options::default()).is_none());
    }

    #[test]
    fn every_guard_is_a_catalog_metric() {
        assert!(!guards("mglru_isolation").is_empty());
        for def in crate::scenario::registry::ALL {
            for g in def.guards {
                assert!(
                    crate::analysis::catalog::metric(g.metric).is_some(),
                    "{}",
                    g.metric
                );
            }
        }
        assert!(crate::analysis::catalog::metric(OOM_METRIC).is_some());
    }
}
