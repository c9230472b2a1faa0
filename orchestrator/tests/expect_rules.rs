//! The expectation rules of `analysis::expect` (increase, decrease, no
//! regression, nonzero, zero; inconclusive without enough runs or real
//! timings; `--expect` on the command line), evaluated on comparisons
//! `analysis::compare` makes: here, not in `expect.rs`'s unit tests, so
//! that `expect` does not import `compare`, which imports it.

use mmci::analysis::catalog;
use mmci::analysis::compare::metric_comparison;
use mmci::analysis::expect::{evaluate, parse_arg, runs_needed};
use mmci::analysis::model::{MetricComparison, Options, Status, Test};
use mmci::matrix::file::{ExpectKind, Expectation};

fn opts() -> Options {
    Options::default()
}

fn cmp(metric: &str, base: &[f64], cand: &[f64], tcg: bool) -> MetricComparison {
    metric_comparison(
        catalog::metric(metric).unwrap(),
        base.to_vec(),
        cand.to_vec(),
        tcg,
        &opts(),
    )
}

fn kind(k: ExpectKind) -> Expectation {
    Expectation::Kind(k)
}

fn with(k: ExpectKind, t: f64) -> Expectation {
    Expectation::Detailed {
        kind: k,
        threshold: Some(t),
    }
}

fn eval(e: Expectation, m: &MetricComparison) -> (Status, String) {
    let r = evaluate(&e, m, &opts());
    (r.status, r.reason)
}

const BASE5: [f64; 5] = [100.0, 102.0, 98.0, 101.0, 99.0];
const UP5: [f64; 5] = [120.0, 122.0, 118.0, 121.0, 119.0];
const DOWN5: [f64; 5] = [80.0, 82.0, 78.0, 81.0, 79.0];
const SAME5: [f64; 5] = [101.0, 99.5, 100.5, 98.5, 100.2];

#[test]
fn nonzero_and_zero_look_at_every_candidate_run() {
    let m = cmp(
        "throttle_isolated",
        &[0.0; 3],
        &[31520.0, 35645.0, 29000.0],
        true,
    );
    assert_eq!(
        eval(kind(ExpectKind::Nonzero), &m),
        (Status::Pass, "nonzero in all 3 runs (0 -> 32055)".into())
    );
    assert_eq!(eval(kind(ExpectKind::Zero), &m).0, Status::Fail);
    let m = cmp("throttle_isolated", &[0.0; 3], &[12.0, 0.0, 3.0], false);
    assert_eq!(
        eval(kind(ExpectKind::Nonzero), &m),
        (Status::Fail, "0 in 1 of 3 runs".into())
    );
    assert_eq!(
        eval(kind(ExpectKind::Zero), &m),
        (Status::Fail, "nonzero in 2 of 3 runs (max 12)".into())
    );
    let m = cmp("oom_kills", &[1.0, 2.0, 0.0], &[0.0; 4], false);
    assert_eq!(
        eval(kind(ExpectKind::Zero), &m),
        (Status::Pass, "0 in all 4 runs (1 -> 0)".into())
    );
    let m = cmp("oom_kills", &[1.0, 2.0, 0.0], &[0.0; 2], false);
    assert_eq!(
        eval(kind(ExpectKind::Zero), &m),
        (Status::Inconclusive, "2 candidate run(s), need 3".into())
    );
}

#[test]
fn increase_and_decrease() {
    let up = cmp("pswpin", &BASE5, &UP5, false);
    assert_eq!(
        eval(kind(ExpectKind::Increase), &up),
        (Status::Pass, "+20.0% (p=0.0079)".into())
    );
    assert_eq!(
        eval(kind(ExpectKind::Decrease), &up),
        (
            Status::Fail,
            "significant change the other way: +20.0% (p=0.0079)".into()
        )
    );
    assert_eq!(
        eval(with(ExpectKind::Increase, 0.25), &up),
        (
            Status::Fail,
            "increase below the 25.0% threshold: +20.0% (p=0.0079)".into()
        )
    );
    let down = cmp("pswpin", &BASE5, &DOWN5, false);
    assert_eq!(eval(kind(ExpectKind::Decrease), &down).0, Status::Pass);
    let same = cmp("pswpin", &BASE5, &SAME5, false);
    assert_eq!(
        eval(kind(ExpectKind::Increase), &same),
        (
            Status::Fail,
            "no significant increase: -0.1% (p=1.0000), alpha 0.01".into()
        )
    );
    // 0 -> nonzero is an increase of any size (exact with the base's
    // ties: 2 / C(10, 5); scipy's normal approximation: 0.0074950).
    let from0 = cmp("throttle_isolated", &[0.0; 5], &UP5, false);
    assert_eq!(
        eval(with(ExpectKind::Increase, 3.0), &from0),
        (Status::Pass, "0 -> 120 (p=0.0079)".into())
    );
}

#[test]
fn no_regression_follows_the_better_direction() {
    // pswpin: lower is better; up 20% is a regression.
    let up = cmp("pswpin", &BASE5, &UP5, false);
    assert_eq!(
        eval(kind(ExpectKind::NoRegression), &up),
        (
            Status::Fail,
            "regressed: +20.0% (p=0.0079), tolerated 5.0%".into()
        )
    );
    assert_eq!(
        eval(with(ExpectKind::NoRegression, 0.25), &up),
        (
            Status::Pass,
            "within the tolerated 25.0%: +20.0% (p=0.0079)".into()
        )
    );
    let down = cmp("pswpin", &BASE5, &DOWN5, false);
    assert_eq!(eval(kind(ExpectKind::NoRegression), &down).0, Status::Pass);
    // touches (on KVM): higher is better; down is the regression.
    let m = cmp("touches", &BASE5, &DOWN5, false);
    assert_eq!(eval(kind(ExpectKind::NoRegression), &m).0, Status::Fail);
    // Neither direction better: any significant change counts.
    let m = cmp("nr_isolated_peak", &BASE5, &DOWN5, false);
    assert_eq!(eval(kind(ExpectKind::NoRegression), &m).0, Status::Fail);
    // 0 -> 2 OOM kills a run: no percentage, still a regression.
    let m = cmp("oom_kills", &[0.0; 5], &[2.0, 1.0, 2.0, 3.0, 2.0], false);
    let (s, why) = eval(kind(ExpectKind::NoRegression), &m);
    assert_eq!(s, Status::Fail);
    assert!(why.starts_with("regressed: 0 -> 2 (p="), "{why}");
}

#[test]
fn inconclusive_without_enough_runs_or_real_timings() {
    // Three a side: the rank test cannot get below p = 0.1.
    let m = cmp("pswpin", &BASE5[..3], &UP5[..3], false);
    assert_eq!(
        eval(kind(ExpectKind::Increase), &m),
        (
            Status::Inconclusive,
            "with 3 + 3 runs Mann-Whitney U cannot reach p <= 0.01 (smallest p 0.1000): need 5 a side"
                .into()
        )
    );
    let m = cmp("pswpin", &BASE5[..2], &UP5, false);
    assert_eq!(
        eval(kind(ExpectKind::NoRegression), &m),
        (
            Status::Inconclusive,
            "2 base and 5 candidate run(s), need 3 a side".into()
        )
    );
    // touches is a timing metric: under TCG it is functional only.
    let m = cmp("touches", &BASE5, &UP5, true);
    assert_eq!(
        eval(kind(ExpectKind::Increase), &m),
        (
            Status::Inconclusive,
            "timing metric under TCG: functional only".into()
        )
    );
    let m = cmp("touches", &BASE5, &UP5, false);
    assert_eq!(eval(kind(ExpectKind::Increase), &m).0, Status::Pass);
    // Welch reaches p <= 0.01 with three runs a side when the effect is clear.
    let welch = Options {
        test: Test::Welch,
        ..opts()
    };
    let m = metric_comparison(
        catalog::metric("pswpin").unwrap(),
        BASE5[..3].to_vec(),
        UP5[..3].to_vec(),
        false,
        &welch,
    );
    let r = evaluate(&kind(ExpectKind::Increase), &m, &welch);
    assert_eq!(r.status, Status::Pass, "{}", r.reason);
    assert_eq!(runs_needed(Test::MannWhitney, 0.01), 5);
    assert_eq!(runs_needed(Test::MannWhitney, 0.05), 4);
}

#[test]
fn command_line_expectations() {
    assert_eq!(
        parse_arg("throttle_isolated=nonzero").unwrap(),
        ("throttle_isolated".into(), kind(ExpectKind::Nonzero))
    );
    assert_eq!(
        parse_arg("touches=no_regression:0.1").unwrap(),
        ("touches".into(), with(ExpectKind::NoRegression, 0.1))
    );
    assert!(parse_arg("touches")
        .unwrap_err()
        .contains("expected METRIC=KIND"));
    assert!(parse_arg("touches=up")
        .unwrap_err()
        .contains("`up` is not one of"));
    assert!(parse_arg("touches=increase:x")
        .unwrap_err()
        .contains("`x` is not a number"));
}
