//! The tests of [`super`] (`analysis::compare`), in a file of their own so
//! that the module stays under the layering test's 800 lines.

use super::*;
use crate::analysis::synthetic::synthetic;
use crate::matrix::file::ExpectKind;

fn outcome(runs: &mut BTreeMap<String, RunResult>, id: &str, o: Outcome, why: &str) {
    let r = runs.get_mut(id).unwrap();
    r.classification.outcome = o;
    r.classification.reason = why.into();
    r.metrics = crate::scenario::ScenarioMetrics::None;
}

#[test]
fn synthetic_series_passes_its_expectations() {
    // 2 cells x base/patched x 5 repeats: the patched kernel throttles,
    // isolates and touches more; under KVM, so timings count.
    let (m, runs, series) = synthetic(20);
    let c = compare(&m, &runs, &m.plan.expect, series, &Options::default());
    assert_eq!(c.format, COMPARISON_FORMAT);
    assert_eq!(
        (c.baseline.as_str(), c.candidates.as_slice()),
        ("base", &["patched".to_string()][..])
    );
    assert_eq!(c.cells.len(), 2);
    assert_eq!(c.series.len(), 20);
    let cand = &c.cells[0].candidates[0];
    let thr = cand
        .metrics
        .iter()
        .find(|x| x.metric == "throttle_isolated")
        .unwrap();
    assert!(matches!(thr.change, Some(stats::Change::FromZero { .. })));
    assert_eq!(thr.assessment, Assessment::Changed);
    assert!(thr.significant);
    let touches = cand.metrics.iter().find(|x| x.metric == "touches").unwrap();
    assert_eq!(touches.assessment, Assessment::Improvement, "{touches:?}");
    let statuses: Vec<_> = cand
        .expectations
        .iter()
        .map(|e| (e.metric.as_str(), e.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("nr_isolated_peak", Status::Pass),
            ("oom_kills", Status::Pass),
            ("throttle_isolated", Status::Pass),
            ("touches", Status::Pass),
        ]
    );
    assert_eq!(c.verdict.status, Status::Pass, "{:?}", c.verdict.reasons);
    assert!(c.verdict.reasons.is_empty());
    assert_eq!(c.verdict.expectations_passed, 8);
    // The regression policy ran in both cells and names its guards.
    assert_eq!(
        c.verdict.headline(),
        "PASS: no regression found in 20 runs on 2 cells (guards: oom_kills, touches, \
         pswpout_per_ktouch, pswpin_per_ktouch, pgmajfault_per_ktouch); 8 expectation(s) met"
    );
    assert_eq!(cand.guards.len(), 5);
    assert!(
        cand.guards.iter().all(|g| g.status == Some(Status::Pass)),
        "{:?}",
        cand.guards
    );
    // The JSON form reads back to the same comparison.
    let json = serde_json::to_string(&c).unwrap();
    let back: Comparison = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["format"], 6);
    assert_eq!(
        v["cells"][0]["candidates"][0]["metrics"][0]["change"]["kind"],
        "from_zero"
    );
}

#[test]
fn raw_counters_that_scale_with_the_work_are_no_regression() {
    // The patched kernel touches 30% more pages. It swaps out the same
    // per touch (so 30% more in all), but swaps in 60% more per touch.
    let (m, mut runs, _) = synthetic(20);
    for r in runs.values_mut() {
        let patched = r.id.contains("-patched-");
        let repeat: u64 = r.id.rsplit("-r").next().unwrap().parse().unwrap();
        let x = r.metrics.mglru_mut().unwrap();
        x.touches = if patched { 52_000 } else { 40_000 } + repeat * 10;
        x.pswpout = x.touches * 3 / 4 + repeat;
        x.pswpin = x.touches * if patched { 8 } else { 5 } / 10 + repeat;
    }
    let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
    let cand = &c.cells[0].candidates[0];
    let get = |name: &str| cand.metrics.iter().find(|x| x.metric == name).unwrap();
    assert_eq!(get("pswpout_per_ktouch").assessment, Assessment::NoChange);
    assert_eq!(get("pswpout").assessment, Assessment::ScalesWithWork);
    assert_eq!(get("pswpout").assessment.name(), "more work, same per unit");
    assert_eq!(get("pswpin_per_ktouch").assessment, Assessment::Regression);
    assert_eq!(get("pswpin").assessment, Assessment::Regression);
    let per = get("pswpout_per_ktouch").base.as_ref().unwrap().mean;
    assert!((per - 750.0).abs() < 1.0, "{per}");
    // Beside each row: the shift with its interval, and the decision
    // against the floor, as data (the verdict does not read it yet).
    let d = |name: &str| get(name).floor_decision.clone().unwrap();
    let (pin, pout) = (d("pswpin_per_ktouch"), d("pswpout_per_ktouch"));
    assert_eq!(
        (pin.decision, pout.decision),
        (effect::Decision::Regression, effect::Decision::NoRegression)
    );
    assert_eq!(pin.cell, c.cells[0].cell);
    assert_eq!((pin.base_runs, pin.candidate_runs, pin.floor), (5, 5, 0.05));
    // 5 + 5 runs at 99%: [D(1), D(25)], achieved 250/252.
    assert!((pin.level - 250.0 / 252.0).abs() < 1e-12, "{pin:?}");
    assert!(pin.interval.0 > 0.5 && pin.estimate < 0.61, "{pin:?}");
    let e = get("pswpin_per_ktouch").effect.clone().unwrap();
    assert_eq!((e.scale, e.rank), (effect::Scale::Log, 1));
    // A count from 0 has no percentage: no decision, the shift in units.
    let thr = get("throttle_isolated");
    assert!(thr.effect.is_some() && thr.floor_decision.is_none());
    let v: serde_json::Value = serde_json::to_value(get("pswpin_per_ktouch")).unwrap();
    assert_eq!(v["floor_decision"]["decision"], "regression");
    assert_eq!(v["effect"]["scale"], "log");

    // A baseline that did no work at all: per touch there is nothing
    // to compare, and neither are the raw counts.
    for r in runs.values_mut().filter(|r| r.id.contains("-base-")) {
        r.metrics.mglru_mut().unwrap().touches = 0;
    }
    let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
    let cand = &c.cells[0].candidates[0];
    let get = |name: &str| cand.metrics.iter().find(|x| x.metric == name).unwrap();
    assert!(get("pswpin_per_ktouch").base_values.is_empty());
    assert_eq!(get("pswpin").assessment, Assessment::NoWorkOnOneSide);
}

#[test]
fn constant_sides_survive_json() {
    // Every run identical on each side (0 and 5 OOM kills): no spread,
    // an exact difference; nothing infinite or NaN reaches the JSON.
    let (m, mut runs, _) = synthetic(20);
    for r in runs.values_mut() {
        let x = r.metrics.mglru_mut().unwrap();
        x.oom_kills = if r.id.contains("-patched-") { 5 } else { 0 };
        x.memcg_oom_events = 7;
    }
    let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
    let back: Comparison = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
    let oom = c.cells[0].candidates[0]
        .metrics
        .iter()
        .find(|x| x.metric == "oom_kills")
        .unwrap();
    let w = oom.welch.as_ref().unwrap();
    assert_eq!((w.t, w.p), (None, 0.0));
    assert_eq!(oom.assessment, Assessment::Regression);
    let e = c.cells[0].candidates[0]
        .expectations
        .iter()
        .find(|e| e.metric == "oom_kills")
        .unwrap();
    assert_eq!(e.status, Status::Fail);
    // Exact with ties: the two most extreme of C(10, 5) splits (scipy's
    // default normal approximation: 0.003976751709788651, below any
    // p five runs a side can give).
    assert_eq!(e.reason, "regressed: 0 -> 5 (p=0.0079), tolerated 5.0%");
}

#[test]
fn crashes_fail_infra_is_apart_missing_is_inconclusive() {
    let (m, mut runs, _) = synthetic(20);
    let cell = m.plan.cells[0].id.clone();
    outcome(
        &mut runs,
        &format!("{cell}-patched-r2"),
        Outcome::KernelCrash,
        "BUG: kernel NULL pointer dereference",
    );
    outcome(
        &mut runs,
        &format!("{cell}-base-r3"),
        Outcome::InfraFailure,
        "QEMU: KVM internal error",
    );
    let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::Fail);
    assert_eq!(
        c.verdict.reasons[0],
        format!("patched: kernel crash in {cell}-patched-r2: BUG: kernel NULL pointer dereference")
    );
    let base = &c.variants[0];
    assert_eq!(
        (
            base.planned,
            base.completed,
            base.infra.len(),
            base.failures.len()
        ),
        (10, 9, 1, 0)
    );
    assert_eq!(base.infra[0].reason, "QEMU: KVM internal error");
    // The crashed and the infra-failed runs feed no statistics: 4 a side
    // is too few for the rank test to reach 0.01.
    let e = &c.cells[0].candidates[0].expectations;
    assert_eq!(e[0].metric, "nr_isolated_peak");
    assert_eq!(e[0].status, Status::Inconclusive, "{}", e[0].reason);
    assert!(
        e[0].reason
            .starts_with("with 4 + 4 runs Mann-Whitney U cannot reach"),
        "{}",
        e[0].reason
    );

    // Without the crash, only the run without a result remains: inconclusive.
    let (m, mut runs, _) = synthetic(20);
    runs.remove(&format!("{cell}-base-r5"));
    let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::Inconclusive);
    assert!(
        c.verdict
            .reasons
            .contains(&"base: 1 of 10 planned runs have no result".to_string()),
        "{:?}",
        c.verdict.reasons
    );
}

#[test]
fn failed_expectations_and_timings_under_tcg() {
    let (m, mut runs, _) = synthetic(20);
    for r in runs.values_mut() {
        r.accel = crate::guest::vm::Accel::Tcg;
    }
    let mut expect = m.plan.expect.clone();
    expect.insert(
        "throttle_isolated".into(),
        Expectation::Kind(ExpectKind::Zero),
    );
    let c = compare(&m, &runs, &expect, vec![], &Options::default());
    let e = &c.cells[1].candidates[0].expectations;
    let touches = e.iter().find(|e| e.metric == "touches").unwrap();
    assert_eq!(touches.status, Status::Inconclusive);
    assert_eq!(touches.reason, "timing metric under TCG: functional only");
    let thr = e.iter().find(|e| e.metric == "throttle_isolated").unwrap();
    assert_eq!(thr.status, Status::Fail);
    assert!(
        thr.reason.starts_with("nonzero in 5 of 5 runs (max "),
        "{}",
        thr.reason
    );
    assert_eq!(c.verdict.status, Status::Fail);
    assert_eq!(
        (
            c.verdict.expectations_failed,
            c.verdict.expectations_inconclusive
        ),
        (2, 2)
    );
    // Failures come before what is inconclusive.
    assert!(
        c.verdict.reasons[0].contains("throttle_isolated zero: nonzero in 5 of 5 runs"),
        "{:?}",
        c.verdict.reasons
    );
    assert!(
        c.verdict.reasons[3].contains("touches no_regression: timing metric under TCG"),
        "{:?}",
        c.verdict.reasons
    );
    let m_touches = c.cells[1].candidates[0]
        .metrics
        .iter()
        .find(|x| x.metric == "touches")
        .unwrap();
    assert!(m_touches.functional_only);
}

#[test]
fn unknown_metrics_are_refused_before_analysis() {
    let dir = tempfile::tempdir().unwrap();
    let e = analyse_dir(dir.path(), &BTreeMap::new(), &Options::default()).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("is not an mmci results dir (no manifest.json)"),
        "{e}"
    );
    let (m, _, _) = synthetic(20);
    results_dir::write_manifest(dir.path(), &m).unwrap();
    let extra = [(
        "touchez".to_string(),
        Expectation::Kind(ExpectKind::Increase),
    )]
    .into();
    let e = analyse_dir(dir.path(), &extra, &Options::default()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("expect: unknown metric `touchez`"),
        "{e}"
    );
    // No runs at all: every expectation is inconclusive, every run missing.
    let c = analyse_dir(dir.path(), &BTreeMap::new(), &Options::default()).unwrap();
    assert_eq!(c.verdict.status, Status::Inconclusive);
    assert_eq!(c.variants[1].missing.len(), 10);
    assert!(c.cells[0].candidates[0].metrics.is_empty());
    assert_eq!(
        c.cells[0].candidates[0].expectations[0].reason,
        "no completed run has this metric"
    );
}
