//! Statistics of small samples: summaries, the Mann-Whitney U test, Welch's
//! t-test and the relative change of means with a confidence interval.
//!
//! Everything here is a pure function of the values, so that it can be
//! checked against independently computed numbers (scipy 1.17, written down
//! in the tests). Samples are the per-run values of one metric on one side
//! (base or candidate); a matrix gives a handful of runs per side, which is
//! why the rank test has an exact mode, ties included: counters of a
//! kernel that never takes a path are 0 in every run, and the normal
//! approximation scipy falls back to on ties understates the evidence of
//! five runs a side (0.0119 for a complete separation whose exact p is
//! 2 / 252 = 0.0079).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::function::erf::erfc;

/// n, mean, median, sample standard deviation, min, max of one side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n - 1 in the denominator); None for n < 2.
    pub stddev: Option<f64>,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// Sample variance; None for n < 2.
    pub fn variance(&self) -> Option<f64> {
        self.stddev.map(|s| s * s)
    }
}

/// The summary of `xs`; None when there is no value.
pub fn summary(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    // Two passes (mean first) rather than the sum-of-squares shortcut, which
    // loses every digit on large counters with a small spread.
    let stddev = (n >= 2).then(|| {
        let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (n - 1) as f64).sqrt()
    });
    Some(Summary {
        n,
        mean,
        median,
        stddev,
        min: sorted[0],
        max: sorted[n - 1],
    })
}

/// How the Mann-Whitney p-value was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MwuMethod {
    /// The exact permutation distribution of U given the pooled values
    /// (small samples; with ties, the conditional distribution).
    Exact,
    /// Normal approximation with tie and continuity corrections.
    Normal,
}

impl MwuMethod {
    pub fn name(self) -> &'static str {
        match self {
            MwuMethod::Exact => "exact",
            MwuMethod::Normal => "normal approximation",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample (the baseline): the number of (base, candidate)
    /// pairs where the base value is larger, ties counting one half. It is
    /// scipy's `mannwhitneyu(base, candidate).statistic`.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: MwuMethod,
}

/// The exact distribution is used while the smaller sample has at most
/// this many values (scipy's `method="auto"` bound; without ties the
/// p-values are scipy's, with ties they are those of an exact permutation
/// test, scipy's `permutation_test` or R coin's `wilcox_test(distribution =
/// "exact")`, where scipy's default would approximate)...
const EXACT_MAX_SMALLER: usize = 8;
/// ...and the two together at most this many (the counting table grows
/// with (n1 n2)^2).
const EXACT_MAX_TOTAL: usize = 100;

/// Ranks (1-based, ties get their average rank) of `a` followed by `b`,
/// and the tie term sum(t^3 - t) over groups of tied values.
fn ranks(a: &[f64], b: &[f64]) -> (Vec<f64>, f64) {
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&i, &j| all[i].total_cmp(&all[j]));
    let mut r = vec![0.0; all.len()];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && all[order[j + 1]] == all[order[i]] {
            j += 1;
        }
        // Positions i..=j share the average of ranks i+1..=j+1.
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            r[k] = avg;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    (r, tie_term)
}

/// Number of arrangements of two samples of sizes m and n giving each U,
/// index u = 0..=m*n (the coefficients of the Gaussian binomial [m+n, m]).
/// Recurrence: the largest value belongs to the first sample (it then beats
/// all n values of the second: U grows by n) or to the second.
pub fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // row[j] = counts for sizes (i, j), built up over i.
    let mut row: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect();
    for i in 1..=m {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        next.push(vec![1.0]); // (i, 0): U = 0 only
        for j in 1..=n {
            let mut c = vec![0.0; i * j + 1];
            // First sample holds the largest: (i-1, j) shifted by j.
            for (u, v) in row[j].iter().enumerate() {
                c[u + j] += v;
            }
            // Second sample holds the largest: (i, j-1).
            for (u, v) in next[j - 1].iter().enumerate() {
                c[u] += v;
            }
            next.push(c);
        }
        row = next;
    }
    row.pop().expect("n + 1 rows")
}

/// Two-sided Mann-Whitney U test of `base` against `candidate`; None when
/// a side is empty.
pub fn mann_whitney(base: &[f64], candidate: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (base.len(), candidate.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (r, tie_term) = ranks(base, candidate);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let nn = (n1 * n2) as f64;
    let u_max = u1.max(nn - u1);
    let exact = n1.min(n2) <= EXACT_MAX_SMALLER && n1 + n2 <= EXACT_MAX_TOTAL;
    if exact && tie_term == 0.0 {
        let counts = u_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        // P(U >= u_max), doubled: the distribution is symmetric about nn/2.
        let from = u_max.round() as usize;
        let tail: f64 = counts[from..].iter().sum::<f64>() / total;
        return Some(MannWhitney {
            u: u1,
            p: (2.0 * tail).min(1.0),
            method: MwuMethod::Exact,
        });
    }
    if exact {
        return Some(MannWhitney {
            u: u1,
            p: exact_p_with_ties(&r, n1, u1),
            method: MwuMethod::Exact,
        });
    }
    let n = (n1 + n2) as f64;
    let mu = nn / 2.0;
    let var = nn / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        // Every value equal: no evidence of any difference.
        1.0
    } else {
        let z = (u_max - mu - 0.5) / var.sqrt();
        // Two-sided: 2 * P(Z > z), with P(Z > z) = erfc(z / sqrt 2) / 2.
        erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
    };
    Some(MannWhitney {
        u: u1,
        p,
        method: MwuMethod::Normal,
    })
}

/// Two-sided p of the exact permutation test on the midranks `r` (the first
/// `n1` are the first sample's): the share of the C(N, n1) equally likely
/// splits of the pooled ranks whose U is at least as far from its mean as
/// `u1`. With ties the distribution is not symmetric, so both tails are
/// counted rather than one doubled. Counted by dynamic programming over
/// (values taken, doubled rank sum): midranks are whole or half numbers.
fn exact_p_with_ties(r: &[f64], n1: usize, u1: f64) -> f64 {
    let n = r.len();
    let n2 = n - n1;
    if n1 > n2 {
        // Count subsets of the smaller side (the table has n1 + 1 rows):
        // its U is n1 n2 - U1, as far from the centre as U1.
        let swapped: Vec<f64> = r[n1..].iter().chain(&r[..n1]).copied().collect();
        return exact_p_with_ties(&swapped, n2, (n1 * n2) as f64 - u1);
    }
    let doubled: Vec<usize> = r.iter().map(|x| (2.0 * x).round() as usize).collect();
    let max_sum: usize = doubled.iter().sum();
    // ways[k][s]: subsets of the ranks seen so far with k values whose
    // doubled ranks sum to s.
    let mut ways = vec![vec![0.0f64; max_sum + 1]; n1 + 1];
    ways[0][0] = 1.0;
    for &d in &doubled {
        for k in (1..=n1).rev() {
            let (lower, upper) = ways.split_at_mut(k);
            for s in (d..=max_sum).rev() {
                upper[0][s] += lower[k - 1][s - d];
            }
        }
    }
    let centre = (n1 * n2) as f64 / 2.0;
    let observed = (u1 - centre).abs();
    let offset = (n1 * (n1 + 1)) as f64 / 2.0;
    let (mut hits, mut total) = (0.0, 0.0);
    for (s, &w) in ways[n1].iter().enumerate() {
        if w == 0.0 {
            continue;
        }
        total += w;
        let u = s as f64 / 2.0 - offset;
        // The tolerance absorbs nothing but rounding: U moves in halves.
        if (u - centre).abs() >= observed - 1e-9 {
            hits += w;
        }
    }
    (hits / total).min(1.0)
}

/// The smallest two-sided p-value any rank test can give with these sample
/// sizes: the two most extreme of the C(n1+n2, n1) equally likely
/// arrangements. Above alpha, no amount of effect can be significant.
pub fn min_attainable_p(n1: usize, n2: usize) -> f64 {
    // C(n1+n2, n1) as a running product (exact enough in f64 for any n here).
    let k = n1.min(n2);
    let mut c = 1.0f64;
    for i in 0..k {
        c = c * (n1 + n2 - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// Welch's unequal-variances t-test of candidate against base.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    /// (mean candidate - mean base) / standard error; None when both
    /// sides are constant and differ (t would be infinite, which JSON
    /// cannot carry).
    pub t: Option<f64>,
    /// Welch-Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// mean candidate - mean base.
    pub diff: f64,
    /// Confidence interval of `diff` at `confidence`.
    pub ci: (f64, f64),
    pub confidence: f64,
}

/// Welch's t-test and the confidence interval of the difference of means;
/// None unless both sides have at least 2 values.
pub fn welch(base: &Summary, candidate: &Summary, confidence: f64) -> Option<Welch> {
    let (va, vb) = (base.variance()?, candidate.variance()?);
    let (na, nb) = (base.n as f64, candidate.n as f64);
    let diff = candidate.mean - base.mean;
    let (qa, qb) = (va / na, vb / nb);
    let se2 = qa + qb;
    if se2 == 0.0 {
        // Both sides constant: the difference is exactly what it is. Not a
        // statistical question, but the runs cannot say anything else.
        let (t, p) = if diff == 0.0 {
            (Some(0.0), 1.0)
        } else {
            (None, 0.0)
        };
        return Some(Welch {
            t,
            df: na + nb - 2.0,
            p,
            diff,
            ci: (diff, diff),
            confidence,
        });
    }
    let se = se2.sqrt();
    let df = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    let t = diff / se;
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    // sf(|t|) = cdf(-|t|): the lower tail keeps its digits where 1 - cdf
    // would round to 0.
    let p = (2.0 * dist.cdf(-t.abs())).min(1.0);
    let q = dist.inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    Some(Welch {
        t: Some(t),
        df,
        p,
        diff,
        ci: (diff - q * se, diff + q * se),
        confidence,
    })
}

/// How a candidate's mean moved from the baseline's.
///
/// A relative change needs a nonzero baseline: a count that is 0 in every
/// baseline run and 35645 with the candidate is `0 -> 35645`, not +inf%.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// (mean candidate - mean base) / |mean base|, with the confidence
    /// interval of the difference of means (Welch) divided by |mean base|.
    /// The interval treats the baseline mean as exact: it understates the
    /// uncertainty when the baseline itself is noisy.
    Relative { rel: f64, ci: Option<(f64, f64)> },
    /// The baseline mean is 0 (and the candidate's is not).
    FromZero { to: f64 },
    /// The candidate mean is 0 (and the baseline's is not): -100%, shown
    /// as the transition it is.
    ToZero { from: f64 },
    /// Both means are 0.
    BothZero,
}

impl Change {
    /// Size of the change for the noise floor: |rel|, infinite from zero.
    pub fn magnitude(&self) -> f64 {
        match self {
            Change::Relative { rel, .. } => rel.abs(),
            Change::FromZero { .. } => f64::INFINITY,
            Change::ToZero { .. } => 1.0,
            Change::BothZero => 0.0,
        }
    }

    /// +1 up, -1 down, 0 unchanged.
    pub fn sign(&self) -> f64 {
        match self {
            Change::Relative { rel, .. } if *rel != 0.0 => rel.signum(),
            Change::FromZero { to } if *to != 0.0 => to.signum(),
            Change::ToZero { from } if *from != 0.0 => -from.signum(),
            _ => 0.0,
        }
    }
}

/// The change of means from `base` to `candidate`; the interval comes
/// from `welch` when there is one.
pub fn change(base: &Summary, candidate: &Summary, welch: Option<&Welch>) -> Change {
    match (base.mean == 0.0, candidate.mean == 0.0) {
        (true, true) => Change::BothZero,
        (true, false) => Change::FromZero { to: candidate.mean },
        (false, true) => Change::ToZero { from: base.mean },
        _ => {
            let scale = base.mean.abs();
            Change::Relative {
                rel: (candidate.mean - base.mean) / scale,
                ci: welch.map(|w| (w.ci.0 / scale, w.ci.1 / scale)),
            }
        }
    }
}

/// Fisher's exact test, one-sided: the probability, with the margins
/// fixed, of the candidate having at least `cand_hits` of its `cand_n` runs
/// with the event when base had `base_hits` of `base_n` (hypergeometric
/// upper tail). For "did more runs OOM with the patch": counts of runs, not
/// sizes, so it holds under TCG too.
pub fn fisher_exact_greater(
    cand_hits: usize,
    cand_n: usize,
    base_hits: usize,
    base_n: usize,
) -> f64 {
    assert!(cand_hits <= cand_n && base_hits <= base_n);
    let ln_choose = |n: usize, k: usize| -> f64 {
        (1..=k)
            .map(|i| ((n - k + i) as f64).ln() - (i as f64).ln())
            .sum()
    };
    let hits = cand_hits + base_hits;
    let total = cand_n + base_n;
    let denom = ln_choose(total, cand_n);
    let top = hits.min(cand_n);
    let p: f64 = (cand_hits..=top)
        .filter(|&x| hits - x <= base_n)
        .map(|x| (ln_choose(hits, x) + ln_choose(total - hits, cand_n - x) - denom).exp())
        .sum();
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    //! Reference values from scipy 1.17.1 (numpy 2.4.6), computed with:
    //!
    //! ```python
    //! stats.mannwhitneyu(base, cand, alternative="two-sided")   # method="auto"
    //! w = stats.ttest_ind(cand, base, equal_var=False)
    //! w.statistic, w.pvalue, w.df, w.confidence_interval(0.99)
    //! np.mean(cand), np.median(cand), np.std(cand, ddof=1)
    //! ```
    //!
    //! The numbers are scipy's `%.17g` output, kept verbatim.
    #![allow(clippy::excessive_precision)]
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300) || (a - b).abs() <= 1e-15
    }

    macro_rules! assert_close {
        ($a:expr, $b:expr, $tol:expr) => {
            assert!(
                close($a, $b, $tol),
                "{} = {} but expected {} (rel tol {})",
                stringify!($a),
                $a,
                $b,
                $tol
            )
        };
    }

    struct Case {
        base: &'static [f64],
        cand: &'static [f64],
        u: f64,
        mwu_p: f64,
        method: MwuMethod,
        t: f64,
        welch_p: f64,
        df: f64,
        ci99: (f64, f64),
    }

    const CASES: [Case; 6] = [
        // Complete separation, 5 + 5, no ties: the exact p is 2 / C(10, 5).
        Case {
            base: &[1.1, 2.3, 3.5, 4.0, 5.2],
            cand: &[6.1, 7.4, 8.8, 9.0, 10.5],
            u: 0.0,
            mwu_p: 0.0079365079365079361,
            method: MwuMethod::Exact,
            t: 4.997125827977789,
            welch_p: 0.0010679188304262594,
            df: 7.9715550045727168,
            ci99: (1.685096171315676, 8.5949038286843216),
        },
        // Overlapping samples of unequal sizes, no ties: exact.
        Case {
            base: &[12.0, 15.5, 9.8, 14.1, 11.2, 13.3],
            cand: &[16.4, 10.9, 18.2, 17.7, 15.0, 19.6, 14.8],
            u: 7.0,
            mwu_p: 0.05128205128205128,
            method: MwuMethod::Exact,
            t: 2.5041420718815717,
            welch_p: 0.029755004432410005,
            df: 10.740090246160173,
            ci99: (-0.84629293828912822, 7.7177215097177019),
        },
        // A count that is 0 in every base run: ties, exact permutation p
        // (12 of the 252 splits; scipy's default normal approximation:
        // 0.024808424547809529, which overstates the evidence here).
        Case {
            base: &[0.0, 0.0, 0.0, 0.0, 0.0],
            cand: &[3.0, 0.0, 7.0, 7.0, 12.0],
            u: 2.5,
            mwu_p: 12.0 / 252.0,
            method: MwuMethod::Exact,
            t: 2.8505444856613447,
            welch_p: 0.04637027046685574,
            df: 4.0,
            ci99: (-3.5679472073330976, 15.167947207333096),
        },
        // Ties across and within the samples: 128 of 1716 splits (scipy's
        // normal approximation: 0.08128792804317761).
        Case {
            base: &[2.0, 4.0, 4.0, 6.0, 8.0, 8.0, 8.0],
            cand: &[5.0, 7.0, 8.0, 9.0, 9.0, 12.0],
            u: 8.5,
            mwu_p: 128.0 / 1716.0,
            method: MwuMethod::Exact,
            t: 1.977189642758735,
            welch_p: 0.074061901699537122,
            df: 10.817304350100828,
            ci99: (-1.5090002744837632, 6.7470955125790022),
        },
        // The seed thread's throttle count, 0 -> ~35645, three runs a side:
        // the two most extreme of 20 splits (normal approximation:
        // 0.063602569620753668).
        Case {
            base: &[0.0, 0.0, 0.0],
            cand: &[31520.0, 35645.0, 29000.0],
            u: 0.0,
            mwu_p: 0.1,
            method: MwuMethod::Exact,
            t: 16.550427805877138,
            welch_p: 0.0036308743987457002,
            df: 2.0,
            ci99: (12832.484876103186, 51277.51512389681),
        },
        // 25 + 25 without ties: beyond the exact table, normal approximation.
        Case {
            base: &[
                1.5, 3.0, 4.5, 6.0, 7.5, 9.0, 10.5, 12.0, 13.5, 15.0, 16.5, 18.0, 19.5, 21.0, 22.5,
                24.0, 25.5, 27.0, 28.5, 30.0, 31.5, 33.0, 34.5, 36.0, 37.5,
            ],
            cand: &[
                8.75, 10.25, 11.75, 13.25, 14.75, 16.25, 17.75, 19.25, 20.75, 22.25, 23.75, 25.25,
                26.75, 28.25, 29.75, 31.25, 32.75, 34.25, 35.75, 37.25, 38.75, 40.25, 41.75, 43.25,
                44.75,
            ],
            u: 210.0,
            mwu_p: 0.047805795330980602,
            method: MwuMethod::Normal,
            t: 2.3218582301737629,
            welch_p: 0.024530468586007725,
            df: 48.0,
            ci99: (-1.1251793898001115, 15.625179389800111),
        },
    ];

    #[test]
    fn mann_whitney_matches_scipy() {
        for (i, c) in CASES.iter().enumerate() {
            let r = mann_whitney(c.base, c.cand).unwrap();
            assert_eq!(r.method, c.method, "case {i}");
            assert_close!(r.u, c.u, 1e-12);
            assert_close!(r.p, c.mwu_p, 1e-9);
        }
    }

    #[test]
    fn welch_matches_scipy() {
        for c in &CASES {
            let (a, b) = (summary(c.base).unwrap(), summary(c.cand).unwrap());
            let w = welch(&a, &b, 0.99).unwrap();
            assert_close!(w.t.unwrap(), c.t, 1e-9);
            assert_close!(w.df, c.df, 1e-9);
            assert_close!(w.p, c.welch_p, 1e-6);
            assert_close!(w.ci.0, c.ci99.0, 1e-6);
            assert_close!(w.ci.1, c.ci99.1, 1e-6);
        }
    }

    #[test]
    fn summary_matches_numpy() {
        let s = summary(CASES[1].cand).unwrap();
        assert_eq!((s.n, s.min, s.max), (7, 10.9, 19.6));
        assert_close!(s.mean, 16.085714285714285, 1e-12);
        assert_close!(s.median, 16.4, 1e-12);
        assert_close!(s.stddev.unwrap(), 2.8649773538538201, 1e-12);
        let even = summary(&[3.1, 4.7, 5.9, 2.2, 8.4, 6.6, 7.3, 1.5, 9.9, 10.2]).unwrap();
        assert_close!(even.median, 6.25, 1e-12);
        assert_close!(even.stddev.unwrap(), 3.0814138169209131, 1e-12);
        let one = summary(&[4.0]).unwrap();
        assert_eq!((one.mean, one.median, one.stddev), (4.0, 4.0, None));
        assert!(summary(&[]).is_none());
    }

    /// Independent of scipy: the exact p-value by enumerating every way of
    /// splitting the pooled values into the two samples (all equally likely
    /// under the null hypothesis) and counting those with a U at least as
    /// far from n1 n2 / 2 as the observed one.
    fn brute_force_p(base: &[f64], cand: &[f64]) -> f64 {
        let all: Vec<f64> = base.iter().chain(cand).copied().collect();
        let (n, n1) = (all.len(), base.len());
        let u_of = |mask: u32| {
            let (mut u, mut k) = (0.0, 0);
            for i in 0..n {
                if mask & (1 << i) != 0 {
                    k += 1;
                    for j in 0..n {
                        if mask & (1 << j) == 0 {
                            if all[i] > all[j] {
                                u += 1.0;
                            } else if all[i] == all[j] {
                                u += 0.5;
                            }
                        }
                    }
                }
            }
            (u, k)
        };
        let centre = (n1 * cand.len()) as f64 / 2.0;
        let observed = (u_of((1 << n1) - 1).0 - centre).abs();
        let (mut hits, mut total) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            let (u, k) = u_of(mask);
            if k == n1 {
                total += 1;
                if (u - centre).abs() >= observed - 1e-9 {
                    hits += 1;
                }
            }
        }
        hits as f64 / total as f64
    }

    #[test]
    fn exact_distribution_matches_enumeration() {
        for (base, cand) in [
            (CASES[0].base, CASES[0].cand),
            (CASES[1].base, CASES[1].cand),
            (&[5.0, 1.0, 9.0][..], &[2.0, 3.0, 4.0, 8.0][..]),
            (&[1.0, 4.0, 6.0, 7.0][..], &[2.0, 3.0, 5.0, 8.0, 9.0][..]),
            // With ties: the conditional distribution.
            (CASES[2].base, CASES[2].cand),
            (CASES[3].base, CASES[3].cand),
            (CASES[4].base, CASES[4].cand),
            // Scenario B's anon scanned at priority 0: complete separation,
            // the patched side tied.
            (
                &[840340.0, 512000.0, 1200000.0, 990000.0, 660000.0][..],
                &[0.0, 0.0, 1163.0, 2800.0, 0.0][..],
            ),
            (&[4.0, 4.0, 4.0][..], &[4.0, 4.0, 5.0][..]),
            // The larger side first, with ties (counted on the smaller).
            (
                &[0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 3.0, 5.0, 8.0][..],
                &[3.0, 9.0, 9.0][..],
            ),
        ] {
            let r = mann_whitney(base, cand).unwrap();
            assert_eq!(r.method, MwuMethod::Exact);
            assert_close!(r.p, brute_force_p(base, cand), 1e-12);
        }
        // 10 + 10 (scipy's exact method: 0.003886206672584382).
        let a = [3.1, 4.7, 5.9, 2.2, 8.4, 6.6, 7.3, 1.5, 9.9, 10.2];
        let b = [11.3, 5.1, 12.8, 13.9, 6.2, 14.4, 15.0, 9.1, 16.7, 17.5];
        let counts = u_counts(10, 10);
        assert_eq!(counts.iter().sum::<f64>(), 184756.0, "C(20, 10)");
        let below: f64 = counts[..=13].iter().sum();
        assert_close!(2.0 * below / 184756.0, 0.003886206672584382, 1e-12);
        // Beyond 8 in the smaller sample, the test switches to the normal
        // approximation, like scipy's default.
        assert_eq!(mann_whitney(&a, &b).unwrap().method, MwuMethod::Normal);
    }

    #[test]
    fn identical_samples_are_not_different() {
        let z = [0.0; 5];
        let r = mann_whitney(&z, &z).unwrap();
        assert_eq!((r.p, r.method), (1.0, MwuMethod::Exact));
        // Beyond the exact table too.
        let r = mann_whitney(&[0.0; 20], &[0.0; 20]).unwrap();
        assert_eq!((r.p, r.method), (1.0, MwuMethod::Normal));
        let s = summary(&z).unwrap();
        let w = welch(&s, &s, 0.99).unwrap();
        assert_eq!((w.t, w.p, w.ci), (Some(0.0), 1.0, (0.0, 0.0)));
        let five = summary(&[5.0; 5]).unwrap();
        let w = welch(&s, &five, 0.99).unwrap();
        assert_eq!((w.t, w.p, w.ci), (None, 0.0, (5.0, 5.0)));
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(welch(&summary(&[1.0]).unwrap(), &five, 0.99).is_none());
    }

    #[test]
    fn smallest_attainable_p() {
        // 2 / C(6, 3), 2 / C(8, 4), 2 / C(10, 5): five a side is the fewest
        // that can reach p <= 0.01.
        assert_close!(min_attainable_p(3, 3), 0.1, 1e-12);
        assert_close!(min_attainable_p(4, 4), 2.0 / 70.0, 1e-12);
        assert_close!(min_attainable_p(5, 5), 2.0 / 252.0, 1e-12);
        assert_close!(min_attainable_p(5, 5), CASES[0].mwu_p, 1e-12);
        assert_eq!(min_attainable_p(1, 1), 1.0);
    }

    #[test]
    fn changes_from_zero_are_not_percentages() {
        let zero = summary(&[0.0, 0.0, 0.0]).unwrap();
        let cand = summary(CASES[4].cand).unwrap();
        let c = change(&zero, &cand, None);
        assert_eq!(c, Change::FromZero { to: 32055.0 });
        assert_eq!((c.magnitude(), c.sign()), (f64::INFINITY, 1.0));
        assert_eq!(change(&zero, &zero, None), Change::BothZero);
        assert_eq!(change(&zero, &zero, None).magnitude(), 0.0);
        // 35645 -> 0: a -100% change, kept as the transition.
        let c = change(&cand, &zero, None);
        assert_eq!(c, Change::ToZero { from: 32055.0 });
        assert_eq!((c.sign(), c.magnitude()), (-1.0, 1.0));
    }

    #[test]
    fn relative_change_and_interval() {
        let (a, b) = (
            summary(CASES[0].base).unwrap(),
            summary(CASES[0].cand).unwrap(),
        );
        let w = welch(&a, &b, 0.99).unwrap();
        let Change::Relative {
            rel,
            ci: Some((lo, hi)),
        } = change(&a, &b, Some(&w))
        else {
            panic!("a relative change with an interval")
        };
        // Means 3.22 -> 8.36 (numpy): +159.6%; interval = scipy's / 3.22.
        assert_close!(rel, (8.36 - 3.22) / 3.22, 1e-12);
        assert_close!(lo, 1.685096171315676 / 3.22, 1e-6);
        assert_close!(hi, 8.5949038286843216 / 3.22, 1e-6);
    }

    #[test]
    fn fisher_exact_matches_scipy() {
        // scipy.stats.fisher_exact([[a, n1 - a], [b, n2 - b]], alternative="greater")
        let cases: &[(usize, usize, usize, usize, f64)] = &[
            (5, 5, 0, 5, 1.0 / 252.0),
            (3, 5, 1, 5, 66.0 / 252.0),
            (0, 5, 0, 5, 1.0),
            (5, 5, 5, 5, 1.0),
            (1, 5, 0, 5, 0.5),
            (0, 5, 5, 5, 1.0),
            (2, 3, 0, 7, 1.0 / 15.0),
        ];
        for &(a, n1, b, n2, want) in cases {
            let got = fisher_exact_greater(a, n1, b, n2);
            assert!(
                (got - want).abs() < 1e-12,
                "{a}/{n1} vs {b}/{n2}: {got} != {want}"
            );
        }
    }
}
