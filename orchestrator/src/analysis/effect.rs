//! Effect sizes with their intervals, and the three-way decision of an
//! effect against the metric's noise floor.
//!
//! This module owns the estimate of how far a candidate moved a metric
//! from the baseline, with an interval, and what that interval says
//! against the floor: REGRESSION, NO REGRESSION or UNDECIDED. It is shown
//! beside the verdict, not used by it yet (`verdict.rs` and `policy.rs`
//! still decide PASS/FAIL on the rank test's p and the change of means).
//!
//! Why these estimators:
//! - **Hodges-Lehmann shift**: the median of the m n pairwise differences
//!   candidate_j - base_i. It is the estimate that goes with the
//!   Mann-Whitney test the analysis already decides on (the shift at which
//!   the test is most balanced), robust to the one slow run a loaded host
//!   produces, and needs no normality: the runs are a handful a side.
//! - **On the log scale** when every value of both sides is positive (the
//!   per-work ratios, counters, timings): the floor is relative (5%), so
//!   the shift is estimated on log values and reported as a percentage,
//!   exp(shift) - 1; the interval's bounds map the same way (exp is
//!   monotone, so the coverage is unchanged). A metric with a 0 or a
//!   negative value stays on its own scale, and its percentage is the
//!   shift over the baseline's median (treating that median as exact, as
//!   the Welch interval does with the mean); with a baseline median of 0
//!   there is no percentage and no decision.
//! - **Exact distribution-free interval**: [D(k), D(mn - k + 1)] of the
//!   sorted differences, k from the exact null distribution of U
//!   (`stats::u_counts`), chosen as R's `wilcox.test(conf.int = TRUE,
//!   exact = TRUE)` does (Hollander & Wolfe, ch. 4): k = qwilcox(alpha/2)
//!   (at least 1), so that the achieved level 1 - 2 P(U <= k - 1) is the
//!   smallest attainable one at or above the level asked for. The levels
//!   are discrete at a few runs a side (5 + 5: 99.2%, 98.4%, 96.8%, 94.4%,
//!   90.5%, ...), so the achieved level is kept and reported with every
//!   interval. When even k = 1 cannot reach the level asked for (3 + 3
//!   gives at most 90%), the interval is [min, max] of the differences at
//!   its lower achieved level and decides nothing.
//! - **Ties**: the same order statistics, with the continuous (no-ties)
//!   null distribution, as the textbook interval is defined. A tie puts
//!   equal differences side by side (a 0 among them for a value both sides
//!   share); the interval stays well defined and its coverage is the stated
//!   level only approximately (conservative in the usual case). R switches
//!   to a normal approximation with a warning there; kernel counters tie
//!   often (a path never taken is 0 in every run), and an interval of
//!   observed differences reads better than an approximation at 5 runs.
//! - Beyond [`EXACT_MAX_PAIRS`] pairs the normal approximation of U gives
//!   k (and the achieved level); the result says which.
//!
//! The level asked for is 1 - alpha of the analysis (99% by default), the
//! level of the Welch interval beside it, so that an interval that excludes
//! 0 agrees with the two-sided rank test at alpha (without ties). The
//! three-way rule then reads each side of the interval as a one-sided test
//! at (1 - level) / 2: REGRESSION when the interval lies wholly beyond the
//! floor on the worse side; NO REGRESSION when it lies wholly on the better
//! side of the worse floor (inside (-floor, +floor) or better still), the
//! non-inferiority half of TOST: TOST at alpha' uses a 1 - 2 alpha'
//! interval, so a 99% interval is TOST at alpha' = 0.005 per side. For a
//! metric with no better direction both sides are worse, and NO
//! REGRESSION is the full TOST equivalence: the interval inside
//! (-floor, +floor). Anything else, or an interval below the level asked
//! for, is UNDECIDED: the runs do not tell an effect at the floor from
//! one on either side of it.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::catalog::Better;
use super::stats::u_counts;

/// Up to this many pairs (m n) the interval's rank comes from the exact
/// distribution of U (the counting table costs about (m n)^2 / 2 steps,
/// ~3 million here); past it, from its normal approximation.
pub const EXACT_MAX_PAIRS: usize = 2500;

/// The scale the shift is estimated on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// log(value): every value of both sides is positive; the relative
    /// effect is exp(shift) - 1.
    Log,
    /// The metric's own unit; the relative effect is the shift over the
    /// baseline's median.
    Linear,
}

/// How the interval's rank k was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// The exact null distribution of U.
    Exact,
    /// The normal approximation of U (more than [`EXACT_MAX_PAIRS`] pairs).
    Normal,
}

/// The Hodges-Lehmann shift from base to candidate, with its
/// distribution-free interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub scale: Scale,
    /// Median of the pairwise differences candidate - base, on `scale`.
    pub shift: f64,
    /// [D(k), D(mn - k + 1)] of the sorted differences, on `scale`.
    pub shift_interval: (f64, f64),
    /// The shift as a relative change (exp(shift) - 1 on the log scale;
    /// shift / |base median| on the linear one); None when the baseline's
    /// median is 0 on the linear scale.
    pub relative: Option<f64>,
    pub relative_interval: Option<(f64, f64)>,
    /// The level asked for (1 - alpha).
    pub requested_level: f64,
    /// The level the interval achieves: 1 - 2 P(U <= k - 1).
    pub level: f64,
    /// The rank k of the interval's lower bound (1-based).
    pub rank: usize,
    pub method: IntervalMethod,
    pub base_runs: usize,
    pub candidate_runs: usize,
}

impl FloorDecision {
    /// `REGRESSION`, `no regression`, `undecided` (`CHANGED`, `unchanged`
    /// for a metric with no better direction).
    pub fn word(&self) -> &'static str {
        self.decision.name(self.better)
    }
}

impl Effect {
    /// The level asked for is reached (up to rounding).
    pub fn reaches_level(&self) -> bool {
        self.level >= self.requested_level - 1e-12
    }
}

/// Every difference c - b over the pairs, sorted.
pub fn pairwise_differences(base: &[f64], cand: &[f64]) -> Vec<f64> {
    let mut d: Vec<f64> = cand
        .iter()
        .flat_map(|c| base.iter().map(move |b| c - b))
        .collect();
    d.sort_by(f64::total_cmp);
    d
}

fn median_sorted(d: &[f64]) -> f64 {
    let n = d.len();
    if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    }
}

/// The rank k of the interval at `confidence` for m + n runs, the level it
/// achieves and how k was found. R's rule: k = qwilcox(alpha / 2, m, n),
/// the smallest q with P(U <= q) >= alpha / 2, at least 1; the level is
/// 1 - 2 P(U <= k - 1).
pub fn interval_rank(m: usize, n: usize, confidence: f64) -> (usize, f64, IntervalMethod) {
    let mn = m * n;
    let half = (1.0 - confidence) / 2.0;
    if mn <= EXACT_MAX_PAIRS {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        let mut cdf = 0.0;
        // cdf_below[q] = P(U <= q - 1), built as q grows.
        let mut k = mn; // reached at the latest at q = mn (cdf 1)
        for (q, c) in counts.iter().enumerate() {
            let next = cdf + c / total;
            // A tolerance for the sum's rounding: qwilcox compares exactly.
            if next >= half * (1.0 - 1e-12) {
                k = q;
                break;
            }
            cdf = next;
        }
        let k = k.max(1);
        let below: f64 = counts[..k].iter().sum::<f64>() / total;
        return (k, (1.0 - 2.0 * below).max(0.0), IntervalMethod::Exact);
    }
    // Hollander & Wolfe's large-sample rank: mn/2 - z sqrt(mn(m+n+1)/12),
    // with the level its normal approximation (continuity-corrected).
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    let (mu, sd) = (
        mn as f64 / 2.0,
        (mn as f64 * (m + n + 1) as f64 / 12.0).sqrt(),
    );
    let z = normal.inverse_cdf(1.0 - half);
    let k = ((mu - z * sd).floor().max(1.0) as usize).min(mn);
    let below = normal.cdf((k as f64 - 1.0 + 0.5 - mu) / sd);
    (k, (1.0 - 2.0 * below).max(0.0), IntervalMethod::Normal)
}

/// The Hodges-Lehmann shift of `cand` over `base` on the values as given,
/// with its interval at `confidence`: (shift, (low, high), k, achieved
/// level, method). Both sides must have a value.
pub fn shift_interval(
    base: &[f64],
    cand: &[f64],
    confidence: f64,
) -> (f64, (f64, f64), usize, f64, IntervalMethod) {
    let (n, m) = (base.len(), cand.len());
    let d = pairwise_differences(base, cand);
    let (k, level, method) = interval_rank(m, n, confidence);
    (
        median_sorted(&d),
        (d[k - 1], d[m * n - k]),
        k,
        level,
        method,
    )
}

/// The Hodges-Lehmann shift of `cand` over `base` with its interval at
/// `confidence`, on the log scale when every value is positive (see the
/// module's comment); None when a side has no value or a value is not
/// finite.
pub fn effect(base: &[f64], cand: &[f64], confidence: f64) -> Option<Effect> {
    let (n, m) = (base.len(), cand.len());
    if n == 0 || m == 0 || base.iter().chain(cand).any(|v| !v.is_finite()) {
        return None;
    }
    let log = base.iter().chain(cand).all(|v| *v > 0.0);
    let (scale, (shift, shift_interval, rank, level, method), per) = if log {
        let ln = |xs: &[f64]| xs.iter().map(|v| v.ln()).collect::<Vec<_>>();
        (
            Scale::Log,
            shift_interval(&ln(base), &ln(cand), confidence),
            None,
        )
    } else {
        let mut sorted = base.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = median_sorted(&sorted).abs();
        (
            Scale::Linear,
            shift_interval(base, cand, confidence),
            Some(median),
        )
    };
    // exp(x) - 1 on the log scale, x over the base median on the linear
    // one (none from a median of 0); JSON carries no infinity, so a ratio
    // past f64 has no percentage either.
    let relative_of = |x: f64| -> Option<f64> {
        match per {
            None => Some(x.exp_m1()),
            Some(median) => (median > 0.0).then(|| x / median),
        }
        .filter(|v| v.is_finite())
    };
    let relative_interval = match (
        relative_of(shift),
        relative_of(shift_interval.0),
        relative_of(shift_interval.1),
    ) {
        (Some(r), Some(lo), Some(hi)) => Some((r, (lo, hi))),
        _ => None,
    };
    Some(Effect {
        scale,
        shift,
        shift_interval,
        relative: relative_interval.map(|(r, _)| r),
        relative_interval: relative_interval.map(|(_, i)| i),
        requested_level: confidence,
        level,
        rank,
        method,
        base_runs: n,
        candidate_runs: m,
    })
}

/// The three ways an effect can stand against the floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The whole interval lies beyond the floor on the worse side.
    Regression,
    /// The whole interval lies on the better side of the worse floor
    /// (non-inferiority; with no better direction, inside both floors).
    NoRegression,
    /// The interval straddles a floor, or does not reach its level.
    Undecided,
}

impl Decision {
    /// The word for a metric whose better direction is `better`: with none,
    /// a "regression" is a change either way, and reads so.
    pub fn name(self, better: Better) -> &'static str {
        match (self, better) {
            (Decision::Regression, Better::Neither) => "CHANGED",
            (Decision::NoRegression, Better::Neither) => "unchanged",
            (Decision::Regression, _) => "REGRESSION",
            (Decision::NoRegression, _) => "no regression",
            (Decision::Undecided, _) => "undecided",
        }
    }
}

/// One metric's effect against its floor in one cell, for one candidate:
/// the finding as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FloorDecision {
    pub metric: String,
    /// The cell's id (empty until `compare` places the row in its cell).
    pub cell: String,
    /// The relative effect (Hodges-Lehmann) and its interval.
    pub estimate: f64,
    pub interval: (f64, f64),
    /// The interval's achieved level.
    pub level: f64,
    /// The noise floor applied (relative).
    pub floor: f64,
    /// The metric's better direction: which side of the floor is worse
    /// (none: both).
    pub better: Better,
    pub decision: Decision,
    pub base_runs: usize,
    pub candidate_runs: usize,
    /// One line: why.
    pub reason: String,
}

/// The decision of `e` against `floor` for a metric whose better direction
/// is `better`; None when the effect has no relative interval.
pub fn decide(metric: &str, better: Better, e: &Effect, floor: f64) -> Option<FloorDecision> {
    let (estimate, (lo, hi)) = (e.relative?, e.relative_interval?);
    let level = format!("{:.1}%", e.level * 100.0);
    let f = super::text::pct(floor).trim_start_matches('+').to_string();
    // Each side's bounds: beyond the worse floor, or short of it.
    let above = lo >= floor; // wholly at or past +floor
    let below = hi <= -floor; // wholly at or past -floor
    let (decision, reason) = if !e.reaches_level() {
        (
            Decision::Undecided,
            format!(
                "with {} + {} runs the interval reaches only {level}, not {:.0}%",
                e.base_runs,
                e.candidate_runs,
                e.requested_level * 100.0
            ),
        )
    } else {
        match better {
            Better::Lower if above => (
                Decision::Regression,
                format!("the {level} interval lies above +{f}"),
            ),
            Better::Lower if hi < floor => (
                Decision::NoRegression,
                format!("the {level} interval lies below +{f}"),
            ),
            Better::Higher if below => (
                Decision::Regression,
                format!("the {level} interval lies below -{f}"),
            ),
            Better::Higher if lo > -floor => (
                Decision::NoRegression,
                format!("the {level} interval lies above -{f}"),
            ),
            Better::Neither if above || below => (
                Decision::Regression,
                format!("the {level} interval lies beyond ±{f}"),
            ),
            Better::Neither if lo > -floor && hi < floor => (
                Decision::NoRegression,
                format!("the {level} interval lies within ±{f}"),
            ),
            _ => (
                Decision::Undecided,
                format!("the {level} interval straddles the {f} floor"),
            ),
        }
    };
    Some(FloorDecision {
        metric: metric.to_string(),
        cell: String::new(),
        estimate,
        interval: (lo, hi),
        level: e.level,
        floor,
        better,
        decision,
        base_runs: e.base_runs,
        candidate_runs: e.candidate_runs,
        reason,
    })
}

#[cfg(test)]
mod tests;
