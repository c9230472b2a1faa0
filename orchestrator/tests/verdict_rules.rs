//! The verdict's rules on synthetic results dirs: the regression policy
//! alone decides for a series without expectations, a guard that regresses
//! fails and is named, nothing to judge is NO VERDICT, a candidate's own
//! expectations are its alone, a contradicted claim fails and an agreement
//! true by construction counts for nothing, a cover letter's claims are
//! judged against base only, and a cell where OOM kills cut one side's runs
//! short compares the others, and a cell out of the regime its matrix
//! calibrated it for is named on the verdict line.

use std::collections::BTreeMap;

use mmci::analysis::catalog;
use mmci::analysis::model::{
    Assessment, ClaimCheck, Comparison, Finding, MetricComparison, Status,
};
use mmci::analysis::synthetic::synthetic;
use mmci::analysis::verdict::verdict;
use mmci::analysis::{compare, Options};
use mmci::guest::vm::Accel;
use mmci::matrix::file::{BaseOom, ExpectKind, Expectation};
use mmci::results::outcome::Outcome;

fn no_expect() -> BTreeMap<String, Expectation> {
    BTreeMap::new()
}

#[test]
fn the_regression_policy_alone_passes_a_series_that_changes_nothing_it_guards() {
    // No expectation at all (a series nobody wrote expectations for):
    // the policy's guards decide, and the verdict names them.
    let (m, runs, _) = synthetic(20);
    let c = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::Pass, "{:?}", c.verdict.reasons);
    assert_eq!(
        c.verdict.summary,
        "no regression found in 20 runs on 2 cells (guards: oom_kills, touches, \
         pswpout_per_ktouch, pswpin_per_ktouch, pgmajfault_per_ktouch)"
    );
    assert_eq!(c.verdict.expectations_passed, 0);
}

#[test]
fn a_guard_that_regresses_fails_and_is_named() {
    let (m, mut runs, _) = synthetic(20);
    for r in runs.values_mut().filter(|r| r.id.contains("-patched-")) {
        let x = r.metrics.mglru_mut().unwrap();
        x.pswpout = x.touches * 3;
    }
    let c = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::Fail);
    assert_eq!(c.verdict.summary, "2 findings in 20 runs on 2 cells");
    assert!(
        c.verdict.reasons[0].starts_with(
            "threads=1 patched: pswpout_per_ktouch (swap-out traffic per 1,000 touches): +"
        ),
        "{:?}",
        c.verdict.reasons
    );
    let d = c.cells[0].candidates[0]
        .guards
        .iter()
        .find(|g| g.metric == "pswpout_per_ktouch")
        .and_then(|g| g.decision.clone())
        .unwrap();
    // The finding as data: the decision, the test against Holm's level.
    assert_eq!(d.decision, mmci::analysis::effect::Decision::Regression);
    assert!(d.p_regression <= d.fail_level.unwrap());
    assert!(d.interval.unwrap().0 > 0.05, "{d:?}");
}

#[test]
fn nothing_to_judge_is_no_verdict_never_a_pass() {
    // Under TCG with 2 runs a side: the timing guard is not judged, the
    // others cannot reach alpha, nor can Fisher's test.
    let (m, mut runs, _) = synthetic(20);
    runs.retain(|id, _| id.ends_with("-r1") || id.ends_with("-r2"));
    for r in runs.values_mut() {
        r.accel = Accel::Tcg;
    }
    let mut m2 = m.clone();
    m2.plan.repeats = 2;
    let c = compare(&m2, &runs, &no_expect(), vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::NoVerdict, "{:?}", c.verdict);
    assert!(
        c.verdict
            .summary
            .starts_with("nothing could be judged in 8 runs on 2 cells"),
        "{}",
        c.verdict.summary
    );
    assert!(c.verdict.reasons.is_empty());
    assert!(c
        .verdict
        .not_judged
        .iter()
        .any(|l| l.contains("touches: a timing under TCG")));

    // One kernel: nothing to compare it with.
    let mut m1 = m2.clone();
    m1.plan.variants.truncate(1);
    let c = compare(&m1, &runs, &no_expect(), vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::NoVerdict);
    assert!(
        c.verdict
            .summary
            .ends_with("the matrix has one kernel, no candidate"),
        "{}",
        c.verdict.summary
    );
}

#[test]
fn expectations_met_with_no_guard_judged_are_no_verdict() {
    // Under TCG, 3 runs of the candidate and 2 of base (the third an
    // infra failure): no guard is judged (they need 3 a side), the
    // candidate's own expectation is (3 of its runs). What the series
    // claims holds, but nothing says it breaks nothing: not a pass (once
    // "PASS: no regression found ... (guards: )").
    let (mut m, mut runs, _) = synthetic(20);
    runs.retain(|id, _| id.ends_with("-r1") || id.ends_with("-r2") || id.ends_with("-r3"));
    for r in runs.values_mut() {
        r.accel = Accel::Tcg;
        if r.id.contains("-base-") && r.id.ends_with("-r3") {
            r.classification.outcome = Outcome::InfraFailure;
            r.classification.reason = "QEMU was killed by signal 9".into();
        }
    }
    m.plan.repeats = 3;
    m.plan.variants[1].expect = [(
        "throttle_isolated".to_string(),
        Expectation::Kind(ExpectKind::Nonzero),
    )]
    .into();
    let c = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::NoVerdict, "{:?}", c.verdict);
    assert_eq!(c.verdict.expectations_passed, 2);
    assert!(c.verdict.guards.is_empty());
    assert_eq!(
        c.verdict.summary,
        "2 expectation(s) met in 10 runs on 2 cells, but no guard of the regression policy \
         could be judged (more runs, or KVM for timings): a pass needs one"
    );
    assert!(!c.verdict.not_judged.is_empty());
}

#[test]
fn a_candidates_own_expectations_are_its_alone() {
    let (mut m, runs, _) = synthetic(20);
    m.plan.variants[1].expect = [(
        "throttle_isolated".to_string(),
        Expectation::Kind(ExpectKind::Zero),
    )]
    .into();
    let c = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    assert_eq!(c.candidate_expect["patched"].len(), 1);
    assert_eq!(c.verdict.status, Status::Fail);
    assert_eq!(c.verdict.expectations_failed, 2);
    assert!(c.verdict.reasons[0].contains("throttle_isolated zero: nonzero in 5 of 5 runs"));
}

#[test]
fn claims_fail_when_contradicted_and_by_construction_counts_for_nothing() {
    let (m, runs, _) = synthetic(20);
    let c = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    let claim = |finding, by_construction| ClaimCheck {
        variant: "patched".into(),
        setup: "64 threads".into(),
        row: "pswpout per 1,000 touches".into(),
        line: 12,
        claimed: "974 -> 746 (-23.4%)".into(),
        metric: Some("pswpout_per_ktouch".into()),
        cell: Some("threads=1".into()),
        measured: Some("755 -> 980 (+29.8%)".into()),
        p: Some(0.0079),
        finding,
        by_construction,
        reason: "significant the other way: claimed down, measured up, p=0.0079".into(),
    };
    let v = verdict(
        &c.cells,
        &c.variants,
        &c.splats,
        &[claim(Finding::Contradicts, false)],
    );
    assert_eq!(v.status, Status::Fail);
    assert_eq!(v.claims.contradict, 1);
    assert_eq!(
        v.reasons[0],
        "threads=1 patched: the cover letter claims pswpout per 1,000 touches 974 -> 746 \
         (-23.4%) (64 threads, line 12), measured 755 -> 980 (+29.8%): significant the \
         other way: claimed down, measured up, p=0.0079"
    );
    let v = verdict(
        &c.cells,
        &c.variants,
        &c.splats,
        &[claim(Finding::Agrees, true), claim(Finding::Agrees, false)],
    );
    assert_eq!(v.status, Status::Pass);
    assert_eq!((v.claims.agree, v.claims.by_construction), (1, 1));
    assert!(
        v.summary
            .ends_with("; 1 of the cover letter's claims agree"),
        "{}",
        v.summary
    );
}

#[test]
fn a_candidate_that_does_no_work_fails_under_tcg_too() {
    // Every candidate run OOM-killed before its first counted touch: 0
    // touches, nothing to divide the traffic by. Under TCG the throughput
    // is a timing, but 0 is a fact; one baseline run killed too keeps
    // Fisher's test (1 of 5 against 5 of 5, p = 0.024) from deciding.
    let (m, mut runs, _) = synthetic(20);
    for r in runs.values_mut() {
        r.accel = Accel::Tcg;
        let patched = r.id.contains("-patched-");
        let x = r.metrics.mglru_mut().unwrap();
        if patched {
            x.touches = 0;
            x.oom_kills = 1;
        } else if r.id.ends_with("-r1") {
            x.oom_kills = 1;
        }
    }
    let c = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    assert_eq!(c.verdict.status, Status::Fail, "{:?}", c.verdict);
    let reasons = c.verdict.reasons.join("\n");
    assert!(
        reasons.contains(
            "threads=1 patched: touches (throughput: pages the workload wrote): the workload did no work: 0 in 5 of 5 candidate runs"
        ),
        "{reasons}"
    );
    // Its rates per touch compare only the runs without an OOM kill, and
    // it has none: not judged, and not a second "no work" either (the
    // touches guard above is the fact).
    let guards = &c.cells[0].candidates[0].guards;
    let per_touch = guards
        .iter()
        .find(|g| g.metric == "pswpout_per_ktouch")
        .unwrap();
    assert_eq!(per_touch.status, None, "{}", per_touch.reason);
    assert!(
        per_touch.reason.starts_with(
            "only the runs without an OOM kill compared: base 4 of 5, candidate 0 of 5"
        ),
        "{}",
        per_touch.reason
    );
    // Every candidate run killed against 1 of 5 on base: Fisher's p =
    // 0.024, within the verdict's level (0.05, Holm): the OOM guard fails
    // too, where at 0.01 it could not.
    let oom = &guards[0];
    assert_eq!(
        (oom.metric.as_str(), oom.status),
        ("oom_kills", Some(Status::Fail)),
        "{}",
        oom.reason
    );
    assert!(oom.reason.contains("5 of 5, base 1 of 5"), "{}", oom.reason);
}

#[test]
fn claims_are_judged_against_base_only() {
    // The bundled series' cover letter, on the synthetic candidate.
    let (mut m, runs, _) = mmci::analysis::synthetic::synthetic(20);
    let mbox = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kernels/series/mglru-isolation.mbox"
    );
    let mails = mmci::series::mails_from_mbox(&std::fs::read(mbox).unwrap());
    let series = mmci::series::assemble(&mails, "bundled").unwrap();
    let mut kernel = runs.values().next().unwrap().kernel.clone();
    kernel.series = Some(series);
    m.kernels.push(mmci::results::kernels::VariantKernel {
        variant: "patched".into(),
        arch: mmci::arch::Arch::X86_64,
        flavour: Default::default(),
        description: String::new(),
        kernel,
        new_warnings: vec![],
        config: None,
    });
    let judged = mmci::analysis::compare(
        &m,
        &runs,
        &std::collections::BTreeMap::new(),
        vec![],
        &mmci::analysis::Options::default(),
    );
    assert!(!judged.claims.is_empty());
    // (The synthetic cells are not the letter's set-ups: against base
    // its rows are looked for in them, which is what changes below.)
    assert!(
        judged
            .claims
            .iter()
            .all(|c| !c.reason.starts_with("the baseline here")),
        "{:?}",
        judged.claims
    );
    // Patch 1 alone as the baseline: every row listed, none judged.
    m.plan.variants[0].series = m.plan.variants[1].series.clone();
    let listed = mmci::analysis::compare(
        &m,
        &runs,
        &std::collections::BTreeMap::new(),
        vec![],
        &mmci::analysis::Options::default(),
    );
    assert_eq!(listed.claims.len(), judged.claims.len());
    for c in &listed.claims {
        assert_eq!(c.finding, Finding::NotMeasured, "{c:?}");
        assert!(
            c.reason
                .starts_with("the baseline here is `base`, a kernel with a series applied"),
            "{}",
            c.reason
        );
    }
    assert_eq!(listed.verdict.claims.contradict, 0);
}

#[test]
fn a_cell_with_more_killed_runs_on_one_side_compares_the_others() {
    // Base OOM-killed in its first run at 8 s, when the working set was
    // just faulted in: few swap-ins per touch. Mixed in, the candidate,
    // which ran its 20 s in every run, reads as a regression.
    let (m, mut runs, _) = synthetic(20);
    let cell = m.plan.cells[0].id.clone();
    for r in runs.values_mut() {
        let killed = r.id.starts_with(&cell) && r.id.ends_with("-base-r1");
        let x = r.metrics.mglru_mut().unwrap();
        x.touches = 40_000;
        x.pswpin = if killed { 8_000 } else { 20_000 };
        x.oom_kills = u64::from(killed);
    }
    let c = compare(&m, &runs, &m.plan.expect, vec![], &Options::default());
    let cand = &c.cells[0].candidates[0];
    let get = |name: &str| cand.metrics.iter().find(|x| x.metric == name).unwrap();
    let per = get("pswpin_per_ktouch");
    assert_eq!(per.base_values, vec![500.0; 4]);
    assert_eq!(per.candidate_values.len(), 5);
    let s = per.survivors.unwrap();
    assert_eq!(
        (s.base, s.base_of, s.candidate, s.candidate_of),
        (4, 5, 5, 5)
    );
    // 4 against 5 runs: no rank test reaches p <= 0.01 (2/126 at best).
    assert_eq!(per.assessment, Assessment::TooFewRuns);
    assert_eq!(get("pswpin").base_values.len(), 4);
    // The work and the kills themselves count every run.
    assert_eq!(get("touches").base_values.len(), 5);
    assert_eq!(get("touches").survivors, None);
    assert_eq!(get("oom_kills").base_values.len(), 5);
    let g = cand
        .guards
        .iter()
        .find(|g| g.metric == "pswpin_per_ktouch")
        .unwrap();
    assert!(
        g.reason.starts_with("only the runs without an OOM kill"),
        "{}",
        g.reason
    );
    // The other cell had no kill: every run compared.
    let other = &c.cells[1].candidates[0];
    let per = other
        .metrics
        .iter()
        .find(|x| x.metric == "pswpin_per_ktouch")
        .unwrap();
    assert_eq!((per.base_values.len(), per.survivors), (5, None));
    // Mixed in, base's killed run would read 200 swap-ins per 1,000
    // touches against 500 in the others.
    let metric = catalog::metric("pswpin_per_ktouch").unwrap();
    let mixed: Vec<f64> = runs
        .values()
        .filter(|r| r.id.starts_with(&cell) && r.id.contains("-base-"))
        .filter_map(|r| catalog::value(metric, r))
        .collect();
    assert!(mixed.contains(&200.0), "{mixed:?}");
    let back: Comparison = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);

    // `zero` reads the candidate's runs alone, and a killed run's
    // count is a lower bound: a candidate run killed after it swapped
    // in still fails "pswpin zero", though the run is left out of the
    // comparison with base.
    for r in runs.values_mut() {
        let killed = r.id.starts_with(&cell) && r.id.ends_with("-patched-r2");
        let x = r.metrics.mglru_mut().unwrap();
        x.oom_kills = u64::from(killed);
        x.pswpin = if killed { 3_000 } else { 0 };
    }
    let expect: BTreeMap<String, Expectation> =
        [("pswpin".to_string(), Expectation::Kind(ExpectKind::Zero))].into();
    let c = compare(&m, &runs, &expect, vec![], &Options::default());
    let cand = &c.cells[0].candidates[0];
    let pswpin = cand.metrics.iter().find(|x| x.metric == "pswpin").unwrap();
    assert_eq!(pswpin.candidate_values, vec![0.0; 4]);
    let e = &cand.expectations[0];
    assert_eq!(e.status, Status::Fail, "{}", e.reason);
}

#[test]
fn guards_on_the_runs_without_an_oom_kill_say_so() {
    use mmci::analysis::compare::metric_comparison;
    use mmci::analysis::model::Survivors;
    use mmci::analysis::policy::{check_cell, no_work};
    let opts = Options::default();
    let metric = catalog::metric("pswpin_per_ktouch").unwrap();
    // Every run completed and touched pages (check_cell counts the
    // completed candidate runs on the metric most runs have).
    let touches = metric_comparison(
        catalog::metric("touches").unwrap(),
        vec![40_000.0; 5],
        vec![40_000.0; 5],
        false,
        &opts,
    );
    let guard_of = |m: MetricComparison| {
        check_cell("mglru_isolation", &[touches.clone(), m], &opts)
            .into_iter()
            .find(|g| g.metric == "pswpin_per_ktouch")
            .unwrap()
    };
    let with = |b: &[f64], c: &[f64], s: Option<Survivors>| MetricComparison {
        survivors: s,
        ..metric_comparison(metric, b.to_vec(), c.to_vec(), false, &opts)
    };
    let (b4, c5) = (
        [270.0, 268.0, 281.0, 262.0],
        [650.0, 661.0, 640.0, 672.0, 655.0],
    );
    // compare.rs kept base's 4 runs without an OOM kill: 4 against 5 can
    // reach the verdict's level (1/126 at best, one-sided), and the guard
    // says which runs it compared. 2 against 3 could not (1/10 at best).
    let s = Survivors {
        base: 4,
        base_of: 5,
        candidate: 5,
        candidate_of: 5,
    };
    let g = guard_of(with(&b4, &c5, Some(s)));
    assert_eq!(g.status, Some(Status::Fail), "{}", g.reason);
    assert!(
        g.reason.starts_with(
            "only the runs without an OOM kill compared: base 4 of 5, candidate 5 of 5: +"
        ),
        "{}",
        g.reason
    );
    let few = Survivors {
        base: 2,
        candidate: 3,
        ..s
    };
    let g = guard_of(with(&b4[..2], &c5[..3], Some(few)));
    assert_eq!(g.status, None, "{}", g.reason);
    assert!(
        g.reason
            .ends_with("with 2 + 3 runs no outcome could reach p <= 0.0500"),
        "{}",
        g.reason
    );
    // Ten runs a side, two base runs killed: 8 against 10 is judged.
    let s = Survivors {
        base: 8,
        base_of: 10,
        candidate: 10,
        candidate_of: 10,
    };
    let (b8, c10) = ([270.0; 8], [650.0; 10]);
    let g = guard_of(with(&b8, &c10, Some(s)));
    assert_eq!(g.status, Some(Status::Fail), "{}", g.reason);
    assert!(g.reason.contains("base 8 of 10"), "{}", g.reason);
    // Every candidate run killed leaves it no values: that is the OOM
    // guard's to judge, not "the workload did no work".
    let s = Survivors {
        base: 5,
        base_of: 5,
        candidate: 0,
        candidate_of: 5,
    };
    let m = with(&[270.0; 5], &[], Some(s));
    assert_eq!(no_work(&m, 5), None);
    assert_eq!(guard_of(m).status, None);
    // Two candidate runs survived and neither did any work: that is
    // no work, counted on the survivors.
    let s = Survivors { candidate: 2, ..s };
    let m = with(&[270.0; 5], &[], Some(s));
    let why = no_work(&m, 5).unwrap();
    assert!(
        why.contains("any of 2 candidate runs without an OOM kill"),
        "{why}"
    );
    assert_eq!(guard_of(m).status, Some(Status::Fail));
    // The same empty side with every run compared is no work.
    let m = with(&[270.0; 5], &[], None);
    assert!(no_work(&m, 5).is_some());
    assert_eq!(guard_of(m).status, Some(Status::Fail));
}

#[test]
fn a_cell_out_of_its_calibrated_regime_is_named_whatever_the_verdict() {
    // The matrix calibrated the first cell for few or no base OOMs and the
    // second for base OOMs in most runs; base was killed in 2 runs of the
    // first and in none of the second (a host fast enough that it never
    // is). Both counts are rare in their regimes (p = 0.023 and 0.031).
    let (mut m, mut runs, _) = synthetic(20);
    m.plan.cells[0].regime = Some(BaseOom::None);
    m.plan.cells[1].regime = Some(BaseOom::Most);
    let first = m.plan.cells[0].id.clone();
    let killed = |id: &str, first: &str| {
        id.starts_with(first) && (id.ends_with("-base-r1") || id.ends_with("-base-r2"))
    };
    for r in runs.values_mut() {
        r.metrics.mglru_mut().unwrap().oom_kills = u64::from(killed(&r.id, &first));
    }
    let c = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    let name = |i: usize| mmci::analysis::model::cell_name(&c.cells[i]);
    let suffix = format!(
        " [out of the regimes the matrix calibrated them for: {}, base OOM-killed in 2 of 5 \
         runs against few or none, p = 0.023; {}, base OOM-killed in 0 of 5 runs against \
         most runs, p = 0.031]",
        name(0),
        name(1)
    );
    assert!(
        c.verdict.summary.ends_with(&suffix),
        "{}",
        c.verdict.summary
    );
    let term = mmci::report::comparison::render(&c);
    assert!(
        term.contains(&format!(
            "regimes (what the matrix was calibrated for, on the baseline's runs):\n  \
             NOT held {}: base OOM-killed in 2 of 5 runs against few or none, p = 0.023\n",
            name(0)
        )),
        "{term}"
    );
    // The JSON keeps each cell's check.
    let back: Comparison = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back.cells[1].regime, c.cells[1].regime);

    // Whatever the verdict: a FAIL (a guard regressed) says it too.
    let mut failing = runs.clone();
    for r in failing.values_mut().filter(|r| r.id.contains("-patched-")) {
        let x = r.metrics.mglru_mut().unwrap();
        x.pswpout = x.touches * 3;
    }
    let f = compare(&m, &failing, &no_expect(), vec![], &Options::default());
    assert_eq!(f.verdict.status, Status::Fail);
    assert!(
        f.verdict.summary.ends_with(&suffix),
        "{}",
        f.verdict.summary
    );

    // Counts a regime makes likely: 1 of 5 killed where few or none are,
    // 2 of 5 where most are (sets of five the calibration host gave).
    for r in runs.values_mut() {
        let base = r.id.contains("-base-");
        let n = if r.id.starts_with(&first) { 1 } else { 2 };
        let repeat: u32 = r.id.rsplit("-r").next().unwrap().parse().unwrap();
        r.metrics.mglru_mut().unwrap().oom_kills = u64::from(base && repeat <= n);
    }
    let held = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    assert!(
        held.cells.iter().all(|c| c.regime.unwrap().holds()),
        "{:?}",
        held.cells[1].regime
    );
    assert!(
        !held.verdict.summary.contains("regime"),
        "{}",
        held.verdict.summary
    );
    assert!(mmci::report::comparison::render(&held).contains(&format!(
        "  held {}: base OOM-killed in 2 of 5 runs against most runs, p = 0.500\n",
        name(1)
    )));
    // A matrix without regimes: none checked, nothing said.
    m.plan.cells.iter_mut().for_each(|c| c.regime = None);
    let none = compare(&m, &runs, &no_expect(), vec![], &Options::default());
    assert!(none.cells.iter().all(|c| c.regime.is_none()));
    assert!(!mmci::report::comparison::render(&none).contains("regimes ("));
}
