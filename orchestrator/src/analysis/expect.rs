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
