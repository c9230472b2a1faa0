//! A matrix's `expect:` entries, evaluated on one metric comparison:
//! pass, fail or inconclusive, with a one-line reason.
//!
//! - `zero` / `nonzero`: every candidate run is 0 / none is. Facts, not
//!   sizes: they hold under TCG too, and need only `min_runs` candidate runs.
//! - `increase` / `decrease`: significant (p <= alpha) in that direction by
//!   at least the threshold (default: the metric's noise floor).
//! - `no_regression`: no significant change in the worse direction larger
//!   than the threshold (default: the noise floor). For a metric without a
//!   better direction, any significant change beyond it is a regression.
//!
//! The last three are inconclusive with fewer than `min_runs` runs a side,
//! when the test cannot reach alpha with the runs there are (3 + 3 runs
//! give a rank test no p below 0.1), and for timing metrics under TCG.

use super::catalog::{kind_name, Better};
use super::model::{ExpectationResult, MetricComparison, Options, Status, Test};
use super::stats::min_attainable_p;
use super::text;
use crate::matrix::file::{ExpectKind, Expectation};

/// The fewest runs a side with which `test` can reach `alpha`.
pub fn runs_needed(test: Test, alpha: f64) -> usize {
    match test {
        // Welch's p can get as small as the data allow: 2 a side to have
        // a variance at all.
        Test::Welch => 2,
        Test::MannWhitney => (1..=64)
            .find(|&n| min_attainable_p(n, n) <= alpha)
            .unwrap_or(64),
    }
}

fn result(
    e: &Expectation,
    metric: &str,
    threshold: Option<f64>,
    status: Status,
    reason: String,
) -> ExpectationResult {
    ExpectationResult {
        metric: metric.to_string(),
        kind: e.kind(),
        threshold,
        status,
        reason,
    }
}

/// An expectation whose metric no run of the cell has.
pub fn no_data(e: &Expectation, metric: &str) -> ExpectationResult {
    result(
        e,
        metric,
        None,
        Status::Inconclusive,
        "no completed run has this metric".into(),
    )
}

/// Evaluates `e` on `m`.
pub fn evaluate(e: &Expectation, m: &MetricComparison, opts: &Options) -> ExpectationResult {
    let kind = e.kind();
    let nb = m.base_values.len();
    let nc = m.candidate_values.len();
    if matches!(kind, ExpectKind::Zero | ExpectKind::Nonzero) {
        let r = |s, why| result(e, &m.metric, None, s, why);
        if nc < opts.min_runs {
            return r(
                Status::Inconclusive,
                format!("{nc} candidate run(s), need {}", opts.min_runs),
            );
        }
        let nonzero: Vec<f64> = m
            .candidate_values
            .iter()
            .copied()
            .filter(|v| *v != 0.0)
            .collect();
        let base = m
            .change
            .as_ref()
            .map(|c| format!(" ({})", text::change_short(c)))
            .unwrap_or_default();
        return match (kind, nonzero.len()) {
            (ExpectKind::Zero, 0) => r(Status::Pass, format!("0 in all {nc} runs{base}")),
            (ExpectKind::Zero, k) => r(
                Status::Fail,
                format!(
                    "nonzero in {k} of {nc} runs (max {})",
                    text::num(nonzero.iter().copied().fold(f64::MIN, f64::max))
                ),
            ),
            (_, k) if k == nc => r(Status::Pass, format!("nonzero in all {nc} runs{base}")),
            (_, k) => r(Status::Fail, format!("0 in {} of {nc} runs", nc - k)),
        };
    }

    let threshold = e.threshold().unwrap_or(m.noise_floor);
    let r = |s, why| result(e, &m.metric, Some(threshold), s, why);
    if nb < opts.min_runs || nc < opts.min_runs {
        return r(
            Status::Inconclusive,
            format!(
                "{nb} base and {nc} candidate run(s), need {} a side",
                opts.min_runs
            ),
        );
    }
    if m.functional_only {
        return r(
            Status::Inconclusive,
            "timing metric under TCG: functional only".into(),
        );
    }
    if m.min_attainable_p > opts.alpha {
        return r(
            Status::Inconclusive,
            format!(
                "with {nb} + {nc} runs {} cannot reach p <= {} (smallest p {}): need {} a side",
                opts.test.name(),
                opts.alpha,
                text::p(m.min_attainable_p),
                runs_needed(opts.test, opts.alpha)
            ),
        );
    }
    let (Some(p), Some(change)) = (m.p, m.change.as_ref()) else {
        return r(
            Status::Inconclusive,
            format!("{} not computable on these runs", opts.test.name()),
        );
    };
    let significant = p <= opts.alpha;
    let how = format!("{} (p={})", text::change_short(change), text::p(p));
    let (sign, size) = (change.sign(), change.magnitude());
    match kind {
        ExpectKind::Increase | ExpectKind::Decrease => {
            let want = if kind == ExpectKind::Increase {
                1.0
            } else {
                -1.0
            };
            let word = kind_name(kind);
            if significant && sign == want && size >= threshold {
                r(Status::Pass, how)
            } else if significant && sign == -want {
                r(
                    Status::Fail,
                    format!("significant change the other way: {how}"),
                )
            } else if significant && sign == want {
                r(
                    Status::Fail,
                    format!(
                        "{word} below the {} threshold: {how}",
                        text::pct(threshold).trim_start_matches('+')
                    ),
                )
            } else {
                r(
                    Status::Fail,
                    format!("no significant {word}: {how}, alpha {}", opts.alpha),
                )
            }
        }
        ExpectKind::NoRegression => {
            let worse = match m.better {
                Better::Higher => sign < 0.0,
                Better::Lower => sign > 0.0,
                Better::Neither => sign != 0.0,
            };
            let tolerated = text::pct(threshold).trim_start_matches('+').to_string();
            if significant && worse && size > threshold {
                r(
                    Status::Fail,
                    format!("regressed: {how}, tolerated {tolerated}"),
                )
            } else if significant && worse {
                r(
                    Status::Pass,
                    format!("within the tolerated {tolerated}: {how}"),
                )
            } else {
                r(Status::Pass, format!("no significant regression: {how}"))
            }
        }
        ExpectKind::Zero | ExpectKind::Nonzero => unreachable!("handled above"),
    }
}

/// `--expect METRIC=KIND` or `METRIC=KIND:THRESHOLD` from the command line.
pub fn parse_arg(s: &str) -> Result<(String, Expectation), String> {
    let bad = |why: &str| format!("--expect {s}: {why}");
    let (metric, rest) = s
        .split_once('=')
        .ok_or_else(|| bad("expected METRIC=KIND or METRIC=KIND:THRESHOLD"))?;
    let (kind, threshold) = match rest.split_once(':') {
        Some((k, t)) => (
            k,
            Some(
                t.parse::<f64>()
                    .map_err(|_| bad(&format!("threshold `{t}` is not a number")))?,
            ),
        ),
        None => (rest, None),
    };
    let kind = [
        ExpectKind::Increase,
        ExpectKind::Decrease,
        ExpectKind::NoRegression,
        ExpectKind::Zero,
        ExpectKind::Nonzero,
    ]
    .into_iter()
    .find(|k| kind_name(*k) == kind)
    .ok_or_else(|| {
        bad(&format!(
            "`{kind}` is not one of increase, decrease, no_regression, zero, nonzero"
        ))
    })?;
    let e = match threshold {
        None => Expectation::Kind(kind),
        Some(t) => Expectation::Detailed {
            kind,
            threshold: Some(t),
        },
    };
    Ok((metric.to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::catalog;
    use crate::analysis::compare::metric_comparison;

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
        // scan_efficiency: higher is better; down is the regression.
        let eff = |v: &[f64]| v.iter().map(|x| x / 1000.0).collect::<Vec<_>>();
        let m = cmp("scan_efficiency", &eff(&BASE5), &eff(&DOWN5), false);
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
}
