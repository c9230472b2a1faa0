//! The drift check: did a kernel's runs of a cell change with the order
//! they ran in? A host that slows down (thermal throttling, a neighbour's
//! load starting, a page cache filling) shows as a trend of a metric over
//! one side's run sequence. The shuffled, interleaved run order
//! (`matrix::plan::run_order`) keeps such a trend from looking like a
//! difference between the kernels, but it still widens the spread the
//! verdict works against, and the reader should know the runs were not
//! alike.
//!
//! The test is Mann-Kendall's: Kendall's tau-b between the run index and
//! the value, per cell, kernel and guard of the regression policy (the
//! metrics the verdict rests on, throughput among them, where a drifting
//! host shows first). Kendall rather than Spearman or a regression slope:
//! it asks only for a monotone trend, not a straight line; a single wild
//! run moves it by one pair of n(n-1)/2, not by its size; ties (counts)
//! have a standard correction; and with 3 to 33 runs a side and no ties its
//! exact null distribution is cheap to count, so its p holds at the run
//! counts mmci has, as scipy.stats.kendalltau's (whose method it follows and
//! whose values the tests compare against). The run index is the order the
//! runs started in (`started_unix`, then the repeat).
//!
//! One cell makes many tests (guards x kernels), so each cell's p values
//! are Holm-adjusted over that cell's tests, and a cell is flagged when one
//! adjusted p is at most [`DRIFT_ALPHA`]. At 5 runs a side no drift can be
//! shown (the smallest p is 2/5! = 0.017 before the adjustment): the data
//! says so with each test's `min_p`.

use serde::{Deserialize, Serialize};
use statrs::function::erf::erfc;

use crate::matrix::Plan;
use crate::results::RunResult;

/// The family-wise level of one cell's drift tests. Looser than a
/// verdict's alpha: a drift changes no verdict, it tells the reader the
/// runs were not alike, and a missed drift costs more than a false note.
pub const DRIFT_ALPHA: f64 = 0.05;

/// Largest run count whose p is counted exactly (without ties), as scipy's.
const EXACT_MAX_N: usize = 33;

/// Kendall's tau-b of one sequence of values against its order.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Values in the sequence.
    pub n: usize,
    /// -1 (every later run lower) to 1 (every later run higher).
    pub tau: f64,
    /// Two-sided p of no trend.
    pub p: f64,
    /// The p is the exact permutation p (no ties, n <= 33), else the
    /// normal approximation with the tie-corrected variance.
    pub exact: bool,
    /// The smallest two-sided p `n` runs can give (no ties): 2 / n!.
    pub min_p: f64,
}

/// The trend of `values` (in run order), or `None` when there is none to
/// test: fewer than 3 values, or all equal (tau undefined).
pub fn kendall_trend(values: &[f64]) -> Option<Trend> {
    let n = values.len();
    if n < 3 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    // The index has no ties: S counts, over pairs i < j, +1 when the later
    // value is higher, -1 when lower.
    let (mut concordant, mut discordant) = (0u64, 0u64);
    for i in 0..n {
        for j in i + 1..n {
            if values[j] > values[i] {
                concordant += 1;
            } else if values[j] < values[i] {
                discordant += 1;
            }
        }
    }
    let pairs = (n * (n - 1) / 2) as f64;
    let ties = tie_groups(values);
    let tied_pairs: f64 = ties.iter().map(|&t| (t * (t - 1) / 2) as f64).sum();
    if tied_pairs >= pairs {
        return None;
    }
    let s = concordant as f64 - discordant as f64;
    let tau = s / (pairs * (pairs - tied_pairs)).sqrt();
    let min_p = (2.0 / factorial(n)).min(1.0);
    let (p, exact) = if ties.is_empty() && n <= EXACT_MAX_N {
        let c = discordant.min(concordant) as usize;
        (exact_p(n, c), true)
    } else {
        // Var(S) with ties in the values only (the index has none).
        let nf = n as f64;
        let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0)
            - ties
                .iter()
                .map(|&t| {
                    let t = t as f64;
                    t * (t - 1.0) * (2.0 * t + 5.0)
                })
                .sum::<f64>())
            / 18.0;
        let z = s.abs() / var.sqrt();
        (erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0), false)
    };
    Some(Trend {
        n,
        tau,
        p,
        exact,
        min_p,
    })
}

/// Sizes of the groups of equal values (2 or more).
fn tie_groups(values: &[f64]) -> Vec<usize> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut out = vec![];
    let mut run = 1;
    for w in sorted.windows(2) {
        if w[0] == w[1] {
            run += 1;
        } else {
            if run > 1 {
                out.push(run);
            }
            run = 1;
        }
    }
    if run > 1 {
        out.push(run);
    }
    out
}

fn factorial(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}

/// The exact two-sided p of `c` (the smaller of the discordant and
/// concordant pair counts) among the n! orders: 2 P(inversions <= c),
/// capped at 1. P from the inversion counts' distribution (Mahonian
/// numbers, built one position at a time: a new last element adds 0 to
/// m-1 inversions, each equally likely).
fn exact_p(n: usize, c: usize) -> f64 {
    let max = n * (n - 1) / 2;
    let mut dist = vec![0.0f64; max + 1];
    dist[0] = 1.0;
    for m in 2..=n {
        let top = m * (m - 1) / 2;
        let mut next = vec![0.0f64; max + 1];
        // A sliding window sum over the last m entries.
        let mut window = 0.0;
        for k in 0..=top {
            window += dist[k];
            if k >= m {
                window -= dist[k - m];
            }
            next[k] = window / m as f64;
        }
        dist = next;
    }
    (2.0 * dist[..=c.min(max)].iter().sum::<f64>()).min(1.0)
}

/// One kernel's trend in one metric of a cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriftTest {
    pub variant: String,
    pub metric: String,
    pub trend: Trend,
    /// The p Holm-adjusted over the cell's tests.
    pub p_holm: f64,
}

/// The drift check of one cell: every kernel's trend in every guard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellDrift {
    pub cell: String,
    pub label: String,
    pub tests: Vec<DriftTest>,
    /// A test's adjusted p is at most [`DRIFT_ALPHA`].
    pub drifted: bool,
}

impl CellDrift {
    /// The cell's label, else its id.
    pub fn name(&self) -> &str {
        if self.label.is_empty() {
            &self.cell
        } else {
            &self.label
        }
    }

    /// The tests that show a drift, strongest first.
    pub fn significant(&self) -> Vec<&DriftTest> {
        let mut out: Vec<&DriftTest> = self
            .tests
            .iter()
            .filter(|t| t.p_holm <= DRIFT_ALPHA)
            .collect();
        out.sort_by(|a, b| a.p_holm.total_cmp(&b.p_holm));
        out
    }
}

/// Holm's step-down adjustment of `ps`, in their order: the k-th smallest
/// p times (m - k + 1), made monotone, capped at 1.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut out = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in idx.iter().enumerate() {
        running = running.max((ps[i] * (m - rank) as f64).min(1.0));
        out[i] = running;
    }
    out
}

/// The drift check of every cell of `plan`: `runs_of(cell, variant)` gives
/// a kernel's completed runs of a cell.
pub fn drift<'a>(
    plan: &Plan,
    runs_of: impl Fn(&str, &str) -> Vec<&'a RunResult>,
) -> Vec<CellDrift> {
    let mut out = vec![];
    for cell in &plan.cells {
        let metrics = super::catalog::of_cell(cell, &plan.scripts);
        // The regression policy's guards (`policy::guards`, read from the
        // registry here: the policy's module imports the model, which
        // holds this module's results).
        let guards = crate::scenario::registry::named(cell.job.scenario.name())
            .map_or(&[][..], |d| d.guards);
        let mut tests = vec![];
        for v in &plan.variants {
            let mut runs = runs_of(&cell.id, &v.name);
            // The order they ran in; a stable sort keeps the repeat order
            // for runs started in the same second.
            runs.sort_by_key(|r| r.started_unix);
            for g in guards {
                let Some(m) = metrics.iter().find(|m| m.name == g.metric) else {
                    continue;
                };
                let values: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| super::catalog::value(m, r))
                    .collect();
                if let Some(trend) = kendall_trend(&values) {
                    tests.push(DriftTest {
                        variant: v.name.clone(),
                        metric: g.metric.to_string(),
                        trend,
                        p_holm: trend.p,
                    });
                }
            }
        }
        let adjusted = holm(&tests.iter().map(|t| t.trend.p).collect::<Vec<_>>());
        for (t, p) in tests.iter_mut().zip(adjusted) {
            t.p_holm = p;
        }
        let drifted = tests.iter().any(|t| t.p_holm <= DRIFT_ALPHA);
        out.push(CellDrift {
            cell: cell.id.clone(),
            label: cell.label.clone(),
            tests,
            drifted,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against scipy 1.17.1's kendalltau (method 'auto': exact without
    /// ties up to 33 values, else the tie-corrected normal approximation),
    /// computed with /tmp/vx-kendall.py:
    ///
    /// ```text
    /// from scipy.stats import kendalltau
    /// r = kendalltau(list(range(len(y))), y)   # for each y below
    /// exact_n8: tau=0.7857142857142856 p=0.005505952380952381
    /// perfect_n5: tau=0.9999999999999999 p=0.016666666666666666
    /// falling_n6: tau=-0.8666666666666666 p=0.016666666666666666
    /// ties_n10: tau=0.7217113056285641 p=0.004713655526083429
    /// no_trend_n7: tau=-0.23809523809523814 p=0.5619047619047619
    /// n40: tau=0.4487179487179488 p=4.5451710540340116e-05
    /// ```
    /// (n40: y_i = round(sin(i) + 0.05 i, 6) for i in 0..40.)
    #[test]
    fn kendall_matches_scipy() {
        let n40: Vec<f64> = (0..40)
            .map(|i| {
                let i = f64::from(i);
                ((i.sin() + 0.05 * i) * 1e6).round() / 1e6
            })
            .collect();
        let cases: Vec<(&str, Vec<f64>, f64, f64, bool)> = vec![
            (
                "exact_n8",
                vec![3.1, 2.9, 3.5, 3.8, 3.6, 4.2, 4.0, 4.5],
                0.785_714_285_714_285_6,
                0.005_505_952_380_952_381,
                true,
            ),
            (
                "perfect_n5",
                vec![1.0, 2.0, 3.0, 4.0, 5.0],
                1.0,
                0.016_666_666_666_666_666,
                true,
            ),
            (
                "falling_n6",
                vec![9.0, 7.5, 8.0, 6.0, 5.5, 5.0],
                -0.866_666_666_666_666_6,
                0.016_666_666_666_666_666,
                true,
            ),
            (
                "ties_n10",
                vec![10.0, 12.0, 12.0, 11.0, 15.0, 15.0, 15.0, 14.0, 18.0, 20.0],
                0.721_711_305_628_564_1,
                0.004_713_655_526_083_429,
                false,
            ),
            (
                "no_trend_n7",
                vec![5.0, 3.0, 6.0, 2.0, 7.0, 4.0, 1.0],
                -0.238_095_238_095_238_14,
                0.561_904_761_904_761_9,
                true,
            ),
            (
                "n40",
                n40,
                0.448_717_948_717_948_8,
                4.545_171_054_034_011_6e-5,
                false,
            ),
        ];
        for (name, y, tau, p, exact) in cases {
            let t = kendall_trend(&y).unwrap();
            assert!(
                (t.tau - tau).abs() < 1e-12,
                "{name}: tau {} vs {tau}",
                t.tau
            );
            assert!(
                (t.p - p).abs() <= 1e-9 * p.max(1e-3),
                "{name}: p {} vs {p}",
                t.p
            );
            assert_eq!(t.exact, exact, "{name}");
            assert_eq!(t.n, y.len());
        }
    }

    #[test]
    fn nothing_to_test_is_none() {
        assert_eq!(kendall_trend(&[]), None);
        assert_eq!(kendall_trend(&[1.0, 2.0]), None);
        assert_eq!(kendall_trend(&[4.0, 4.0, 4.0, 4.0]), None);
        assert_eq!(kendall_trend(&[1.0, f64::NAN, 3.0]), None);
    }

    /// The smallest p five runs can give, 2/120, is above a Holm-adjusted
    /// level: the data says so.
    #[test]
    fn five_runs_cannot_show_a_drift_and_say_so() {
        let t = kendall_trend(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!((t.min_p - 2.0 / 120.0).abs() < 1e-15);
        assert_eq!(t.p, t.min_p);
    }

    /// Holm against hand-worked values: sorted 0.01, 0.02, 0.03, 0.5 times
    /// 4, 3, 2, 1 give 0.04, 0.06, 0.06 (made monotone), 0.5.
    #[test]
    fn holm_adjusts_step_down() {
        let got = holm(&[0.03, 0.5, 0.01, 0.02]);
        let want = [0.06, 0.5, 0.04, 0.06];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }
}
