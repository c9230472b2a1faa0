//! The tests of [`super`] (`analysis::effect`), in a file of their own so
//! that the module stays under the layering test's 800 lines.

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
                    let (_, _, k, l, m) = (e.shift, e.shift_interval, e.rank, e.level, e.method);
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
