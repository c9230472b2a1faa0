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
mod tests {
    //! Reference values from scipy 1.17.1 (numpy 2.4.6): scipy has no
    //! Hodges-Lehmann interval, so the script below sorts the pairwise
    //! differences itself and takes k by R's `wilcox.test(conf.int = TRUE,
    //! exact = TRUE)` rule from scipy.stats' exact Mann-Whitney null
    //! distribution (`scipy.stats._mannwhitneyu._MWU(m, n).cdf`), checked,
    //! for m + n <= 14, against the distribution by enumerating every split
    //! of the ranks (the textbook definition). Run as
    //! `python3 hl_reference.py`; the numbers are its `repr` output:
    //!
    //! ```python
    //! import itertools
    //! import numpy as np
    //! from scipy.stats._mannwhitneyu import _MWU
    //!
    //! def enum_cdf(m, n):
    //!     counts = {}
    //!     for s in itertools.combinations(range(m + n), m):
    //!         u = sum(s) - m * (m - 1) // 2
    //!         counts[u] = counts.get(u, 0) + 1
    //!     tot = sum(counts.values())
    //!     return lambda q: sum(c for u, c in counts.items() if u <= q) / tot
    //!
    //! def hl(base, cand, conf, log):
    //!     b = np.log(base) if log else np.asarray(base, float)
    //!     c = np.log(cand) if log else np.asarray(cand, float)
    //!     d = np.sort((c[:, None] - b[None, :]).ravel())
    //!     m, n = len(c), len(b)
    //!     mn = m * n
    //!     dist = _MWU(m, n)
    //!     cdf = lambda q: float(dist.cdf(q))
    //!     if m + n <= 14:
    //!         e = enum_cdf(m, n)
    //!         assert all(abs(cdf(q) - e(q)) < 1e-15 for q in range(mn + 1))
    //!     a = 1 - conf
    //!     q = next(q for q in range(mn + 1) if cdf(q) >= a / 2)
    //!     k = max(q, 1)
    //!     achieved = 1 - 2 * cdf(k - 1)
    //!     est, lo, hi = np.median(d), d[k - 1], d[mn - k]
    //!     if log:
    //!         est, lo, hi = np.expm1(est), np.expm1(lo), np.expm1(hi)
    //!     return k, achieved, est, lo, hi
    //!
    //! for name, b, c, log in CASES:          # the cases below
    //!     for conf in (0.99, 0.95, 0.90):
    //!         print(name, conf, hl(b, c, conf, log))
    //! ```
    #![allow(clippy::excessive_precision)]
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    struct Case {
        name: &'static str,
        base: &'static [f64],
        cand: &'static [f64],
        scale: Scale,
        /// Per level asked for (0.99, 0.95, 0.90): k, achieved level, low,
        /// high (relative on the log scale, in units on the linear one).
        levels: [(usize, f64, f64, f64); 3],
        /// The estimate, as the intervals.
        estimate: f64,
    }

    const CASES: [Case; 6] = [
        // A per-work ratio, v3-like: about +5% at a few % spread.
        Case {
            name: "5v5 log",
            base: &[270.1, 268.4, 281.9, 262.3, 275.0],
            cand: &[283.6, 281.2, 296.4, 276.8, 290.1],
            scale: Scale::Log,
            levels: [
                (
                    1,
                    0.9920634920634921,
                    -0.018091521816246157,
                    0.13000381242851622,
                ),
                (
                    3,
                    0.9682539682539683,
                    0.006030507272082482,
                    0.10432190760059551,
                ),
                (
                    5,
                    0.9047619047619048,
                    0.022545454545454265,
                    0.08120472741136062,
                ),
            ],
            estimate: 0.051436679673643036,
        },
        Case {
            name: "5v7 linear",
            base: &[12.0, 15.5, 9.8, 14.1, 11.2],
            cand: &[16.4, 10.9, 18.2, 17.7, 15.0, 19.6, 14.8],
            scale: Scale::Linear,
            levels: [
                (
                    2,
                    0.9949494949494949,
                    -3.1999999999999993,
                    8.400000000000002,
                ),
                (6, 0.952020202020202, -0.29999999999999893, 7.0),
                (7, 0.9267676767676768, 0.7000000000000011, 6.599999999999998),
            ],
            estimate: 3.8000000000000007,
        },
        Case {
            name: "10v10 log",
            base: &[3.1, 4.7, 5.9, 2.2, 8.4, 6.6, 7.3, 1.5, 9.9, 10.2],
            cand: &[11.3, 5.1, 12.8, 13.9, 6.2, 14.4, 15.0, 9.1, 16.7, 17.5],
            scale: Scale::Log,
            levels: [
                (
                    17,
                    0.991069302214813,
                    0.10784313725490219,
                    4.136363636363637,
                ),
                (
                    24,
                    0.9567429474550218,
                    0.3627450980392159,
                    2.7234042553191493,
                ),
                (
                    28,
                    0.9107904479421507,
                    0.45454545454545425,
                    2.1914893617021276,
                ),
            ],
            estimate: 1.0272121351984578,
        },
        // Ties within and across the sides, zeros: the linear scale.
        Case {
            name: "5v5 ties linear",
            base: &[0.0, 0.0, 1.0, 2.0, 2.0],
            cand: &[1.0, 2.0, 2.0, 3.0, 5.0],
            scale: Scale::Linear,
            levels: [
                (1, 0.9920634920634921, -1.0, 5.0),
                (3, 0.9682539682539683, 0.0, 4.0),
                (5, 0.9047619047619048, 0.0, 3.0),
            ],
            estimate: 1.0,
        },
        Case {
            name: "10v10 ties log",
            base: &[
                100.0, 102.0, 102.0, 104.0, 98.0, 100.0, 101.0, 103.0, 99.0, 100.0,
            ],
            cand: &[
                105.0, 104.0, 107.0, 102.0, 106.0, 105.0, 108.0, 104.0, 103.0, 105.0,
            ],
            scale: Scale::Log,
            levels: [
                (
                    17,
                    0.991069302214813,
                    0.019230769230769183,
                    0.06122448979591777,
                ),
                (
                    24,
                    0.9567429474550218,
                    0.01960784313725513,
                    0.059999999999999304,
                ),
                (
                    28,
                    0.9107904479421507,
                    0.019999999999999147,
                    0.051020408163264995,
                ),
            ],
            estimate: 0.03999999999999936,
        },
        // 3 + 3: no level above 90% is attainable.
        Case {
            name: "3v3 linear",
            base: &[1.0, 2.0, 3.0],
            cand: &[4.0, 5.0, 6.0],
            scale: Scale::Linear,
            levels: [(1, 0.9, 1.0, 5.0), (1, 0.9, 1.0, 5.0), (1, 0.9, 1.0, 5.0)],
            estimate: 3.0,
        },
    ];

    #[test]
    fn hodges_lehmann_and_its_interval_match_the_reference() {
        for c in &CASES {
            for (conf, &(k, level, lo, hi)) in [0.99, 0.95, 0.90].iter().zip(&c.levels) {
                let e = effect(c.base, c.cand, *conf).unwrap();
                let what = format!("{} at {conf}: {e:?}", c.name);
                assert_eq!(
                    (e.base_runs, e.candidate_runs),
                    (c.base.len(), c.cand.len())
                );
                let (got, (glo, ghi), gk, glevel, method) = match c.scale {
                    Scale::Log => {
                        assert_eq!(e.scale, Scale::Log, "{what}");
                        let (_, _, k, l, m) =
                            (e.shift, e.shift_interval, e.rank, e.level, e.method);
                        (e.relative.unwrap(), e.relative_interval.unwrap(), k, l, m)
                    }
                    // On the values as given (the 5 v 7 case is positive:
                    // `effect` would take its logs).
                    Scale::Linear => shift_interval(c.base, c.cand, *conf),
                };
                assert_eq!((gk, method), (k, IntervalMethod::Exact), "{what}");
                assert!(close(glevel, level), "{what}");
                assert!(close(got, c.estimate), "{what}");
                assert!(close(glo, lo) && close(ghi, hi), "{what}: {glo} {ghi}");
            }
        }
    }

    #[test]
    fn ranks_are_the_textbook_ones() {
        // The review's: [D(1), D(25)] at 5 v 5 (99.2%), [D(17), D(84)] of
        // 100 at 10 v 10, [D(52), D(174)] of 225 at 15 v 15.
        assert_eq!(interval_rank(5, 5, 0.99).0, 1);
        assert_eq!(interval_rank(10, 10, 0.99).0, 17);
        assert_eq!(interval_rank(15, 15, 0.99).0, 52);
        // The discrete levels at 5 v 5, in 252ths: 1 - 2 * {1, 2, 4, 7, 12}.
        let levels: Vec<f64> = [0.99, 0.98, 0.95, 0.94, 0.90]
            .iter()
            .map(|c| interval_rank(5, 5, *c).1 * 252.0)
            .collect();
        for (got, want) in levels.iter().zip([250.0, 248.0, 244.0, 238.0, 228.0]) {
            assert!((got - want).abs() < 1e-9, "{levels:?}");
        }
        // Past the exact table, the normal approximation, close to exact
        // at 50 v 50 (the table's bound, computed both ways).
        let (k, level, method) = interval_rank(60, 60, 0.99);
        assert_eq!(method, IntervalMethod::Normal);
        assert!((0.99..0.992).contains(&level), "{k} {level}");
        let (ke, le, me) = interval_rank(50, 50, 0.99);
        assert_eq!(me, IntervalMethod::Exact);
        assert!((0.99..0.992).contains(&le), "{ke} {le}");
    }

    #[test]
    fn scales_and_no_percentage_from_zero() {
        // 0 -> 35645: no relative effect, no decision.
        let e = effect(
            &[0.0; 5],
            &[31520.0, 35645.0, 29000.0, 30100.0, 33000.0],
            0.99,
        )
        .unwrap();
        assert_eq!(e.scale, Scale::Linear);
        assert_eq!((e.relative, e.relative_interval), (None, None));
        assert_eq!(e.shift, 31520.0);
        assert!(decide("throttle_isolated", Better::Neither, &e, 0.05).is_none());
        // A zero on one side only: the shift over the base median.
        let e = effect(&[10.0, 12.0, 11.0], &[0.0, 12.0, 13.0], 0.9).unwrap();
        assert_eq!(e.scale, Scale::Linear);
        assert!(close(e.relative.unwrap(), e.shift / 11.0));
        assert!(effect(&[], &[1.0], 0.99).is_none());
        assert!(effect(&[f64::NAN], &[1.0], 0.99).is_none());
        // One run a side: an interval of one difference at level 0.
        let e = effect(&[100.0], &[110.0], 0.99).unwrap();
        assert_eq!(e.level, 0.0);
        assert!(!e.reaches_level());
    }

    /// An effect on the log scale with the given relative bounds, at 5 v 5.
    fn at(est: f64, lo: f64, hi: f64, level: f64) -> Effect {
        let l = |x: f64| (1.0 + x).ln();
        Effect {
            scale: Scale::Log,
            shift: l(est),
            shift_interval: (l(lo), l(hi)),
            relative: Some(est),
            relative_interval: Some((lo, hi)),
            requested_level: 0.99,
            level,
            rank: 1,
            method: IntervalMethod::Exact,
            base_runs: 5,
            candidate_runs: 5,
        }
    }

    #[test]
    fn three_way_decision_against_the_floor() {
        use Decision::*;
        let ok = 250.0 / 252.0;
        // (better, estimate, low, high, level, decision, reason)
        let cases: &[(Better, f64, f64, f64, f64, Decision, &str)] = &[
            // The review's v3 figures: at the floor.
            (
                Better::Lower,
                0.049,
                0.026,
                0.073,
                ok,
                Undecided,
                "the 99.2% interval straddles the 5.0% floor",
            ),
            (
                Better::Lower,
                0.09,
                0.06,
                0.12,
                ok,
                Regression,
                "the 99.2% interval lies above +5.0%",
            ),
            (
                Better::Lower,
                0.07,
                0.05,
                0.12,
                ok,
                Regression,
                "the 99.2% interval lies above +5.0%",
            ),
            (
                Better::Lower,
                0.0,
                -0.02,
                0.03,
                ok,
                NoRegression,
                "the 99.2% interval lies below +5.0%",
            ),
            // A clear improvement is no regression (non-inferiority).
            (
                Better::Lower,
                -0.2,
                -0.3,
                -0.1,
                ok,
                NoRegression,
                "the 99.2% interval lies below +5.0%",
            ),
            (
                Better::Lower,
                0.01,
                -0.02,
                0.05,
                ok,
                Undecided,
                "the 99.2% interval straddles the 5.0% floor",
            ),
            (
                Better::Higher,
                -0.09,
                -0.12,
                -0.06,
                ok,
                Regression,
                "the 99.2% interval lies below -5.0%",
            ),
            (
                Better::Higher,
                0.2,
                0.1,
                0.3,
                ok,
                NoRegression,
                "the 99.2% interval lies above -5.0%",
            ),
            (
                Better::Higher,
                -0.03,
                -0.07,
                0.0,
                ok,
                Undecided,
                "the 99.2% interval straddles the 5.0% floor",
            ),
            // No better direction: TOST both ways.
            (
                Better::Neither,
                -0.2,
                -0.3,
                -0.1,
                ok,
                Regression,
                "the 99.2% interval lies beyond ±5.0%",
            ),
            (
                Better::Neither,
                0.0,
                -0.04,
                0.04,
                ok,
                NoRegression,
                "the 99.2% interval lies within ±5.0%",
            ),
            (
                Better::Neither,
                0.03,
                -0.01,
                0.06,
                ok,
                Undecided,
                "the 99.2% interval straddles the 5.0% floor",
            ),
            // 3 v 3 reaches 90%, not 99%: nothing decided.
            (
                Better::Lower,
                0.5,
                0.4,
                0.6,
                0.9,
                Undecided,
                "with 5 + 5 runs the interval reaches only 90.0%, not 99%",
            ),
        ];
        for &(better, est, lo, hi, level, want, why) in cases {
            let d = decide(
                "pgmajfault_per_ktouch",
                better,
                &at(est, lo, hi, level),
                0.05,
            )
            .unwrap();
            assert_eq!(
                (d.decision, d.reason.as_str()),
                (want, why),
                "{better:?} [{lo}, {hi}]"
            );
            assert_eq!((d.estimate, d.interval, d.floor), (est, (lo, hi), 0.05));
            assert_eq!((d.base_runs, d.candidate_runs, d.level), (5, 5, level));
            assert_eq!(d.metric, "pgmajfault_per_ktouch");
            let word = match (want, better) {
                (Regression, Better::Neither) => "CHANGED",
                (NoRegression, Better::Neither) => "unchanged",
                (Regression, _) => "REGRESSION",
                (NoRegression, _) => "no regression",
                (Undecided, _) => "undecided",
            };
            assert_eq!(d.word(), word);
        }
        // From the runs: the 5 v 5 reference case at 99% straddles.
        let e = effect(CASES[0].base, CASES[0].cand, 0.99).unwrap();
        let d = decide("pgmajfault_per_ktouch", Better::Lower, &e, 0.05).unwrap();
        assert_eq!(d.decision, Undecided);
        // Complete separation by +20%: every difference beyond the floor.
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let cand: Vec<f64> = base.iter().map(|v| v * 1.2).collect();
        let e = effect(&base, &cand, 0.99).unwrap();
        let d = decide("pswpin_per_ktouch", Better::Lower, &e, 0.05).unwrap();
        assert_eq!(d.decision, Regression, "{d:?}");
        // The same kernel twice, at 1% spread: no regression.
        let cand = [100.2, 99.4, 100.9, 99.8, 100.1];
        let e = effect(&base, &cand, 0.99).unwrap();
        let d = decide("pswpin_per_ktouch", Better::Lower, &e, 0.05).unwrap();
        assert_eq!(d.decision, NoRegression, "{d:?}");
    }
}
