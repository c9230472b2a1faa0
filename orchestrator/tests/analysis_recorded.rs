//! The analysis of a results dir recorded on this machine by
//!
//! ```sh
//! mmci run --matrix matrix/smoke.yaml --series kernels/series/mglru-isolation-v1.mbox \
//!     --repeats 3 --accel tcg --results DIR
//! ```
//!
//! kept in tests/fixtures/smoke-matrix (manifest.json, and each run's
//! run.json and records.jsonl; the console logs are left out). The smoke matrix has no
//! `expect:`; the tests give the default matrix's expectations.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mmci::analysis::stats::Change;
use mmci::analysis::{analyse_dir, Comparison, Options, Status, Test};
use mmci::matrix::file::{ExpectKind, Expectation};
use mmci::report::comparison as terminal;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-matrix")
}

fn expect(pairs: &[(&str, ExpectKind)]) -> BTreeMap<String, Expectation> {
    pairs
        .iter()
        .map(|(k, e)| (k.to_string(), Expectation::Kind(*e)))
        .collect()
}

/// The default matrix's expectations.
fn default_expect() -> BTreeMap<String, Expectation> {
    expect(&[
        ("throttle_isolated", ExpectKind::Nonzero),
        ("nr_isolated_peak", ExpectKind::Increase),
        ("oom_kills", ExpectKind::NoRegression),
        ("touches", ExpectKind::NoRegression),
    ])
}

fn analyse(e: &BTreeMap<String, Expectation>, opts: &Options) -> Comparison {
    analyse_dir(&fixture(), e, opts).expect("the recorded dir analyses")
}

fn status(c: &Comparison, metric: &str) -> (Status, String) {
    let e = c.cells[0].candidates[0]
        .expectations
        .iter()
        .find(|e| e.metric == metric)
        .unwrap();
    (e.status, e.reason.clone())
}

#[test]
fn patched_throttles_on_isolation_where_base_never_does() {
    let c = analyse(&default_expect(), &Options::default());
    assert_eq!((c.baseline.as_str(), c.candidates.len()), ("base", 1));
    assert_eq!(c.cells.len(), 1);
    assert!(c
        .variants
        .iter()
        .all(|v| v.completed == 3 && v.planned == 3));
    let thr = c.cells[0].candidates[0]
        .metrics
        .iter()
        .find(|m| m.metric == "throttle_isolated")
        .unwrap();
    assert!(thr.base_values.iter().all(|v| *v == 0.0), "{thr:?}");
    assert!(thr.candidate_values.iter().all(|v| *v > 0.0), "{thr:?}");
    assert!(matches!(thr.change, Some(Change::FromZero { .. })));
    let (s, why) = status(&c, "throttle_isolated");
    assert_eq!(s, Status::Pass, "{why}");
    assert!(why.starts_with("nonzero in all 3 runs (0 -> "), "{why}");
    // 3 + 3 runs: the rank test cannot reach 0.01, so sizes are inconclusive,
    // and touches is a timing metric under TCG anyway.
    let (s, why) = status(&c, "nr_isolated_peak");
    assert_eq!(s, Status::Inconclusive, "{why}");
    assert!(
        why.contains("cannot reach p <= 0.01 (smallest p 0.1000): need 5 a side"),
        "{why}"
    );
    assert_eq!(
        status(&c, "touches"),
        (
            Status::Inconclusive,
            "timing metric under TCG: functional only".into()
        )
    );
    assert_eq!(c.verdict.status, Status::Inconclusive);
    // The guest's samples are there for plots, one series per run.
    assert_eq!(c.series.len(), 6);
    assert!(c
        .series
        .iter()
        .all(|s| !s.t_ms.is_empty() && s.t_ms.len() == s.nr_isolated.len()));
}

#[test]
fn a_zero_expectation_on_the_patched_throttles_fails() {
    let c = analyse(
        &expect(&[("throttle_isolated", ExpectKind::Zero)]),
        &Options::default(),
    );
    let (s, why) = status(&c, "throttle_isolated");
    assert_eq!(s, Status::Fail);
    assert!(why.starts_with("nonzero in 3 of 3 runs (max "), "{why}");
    assert_eq!(c.verdict.status, Status::Fail);
}

#[test]
fn welch_decides_with_three_runs() {
    // Welch's p is not bounded below by the number of arrangements: with
    // three runs a side it decides, on these runs one way and the other.
    let opts = Options {
        test: Test::Welch,
        ..Options::default()
    };
    let c = analyse(
        &expect(&[
            ("throttle_isolated", ExpectKind::Increase),
            ("nr_isolated_peak", ExpectKind::Increase),
        ]),
        &opts,
    );
    assert_eq!(
        status(&c, "throttle_isolated"),
        (Status::Pass, "0 -> 102.3 (p=0.0086)".into())
    );
    assert_eq!(
        status(&c, "nr_isolated_peak"),
        (
            Status::Fail,
            "no significant increase: 0 -> 341.3 (p=0.0153), alpha 0.01".into()
        )
    );
    let m = c.cells[0].candidates[0]
        .metrics
        .iter()
        .find(|m| m.metric == "nr_isolated_peak")
        .unwrap();
    assert_eq!(m.p, m.welch.as_ref().map(|w| w.p));
    assert_eq!(m.min_attainable_p, 0.0);
}

#[test]
fn terminal_report() {
    let c = analyse(&default_expect(), &Options::default());
    insta::assert_snapshot!(terminal::render(&c));
}
