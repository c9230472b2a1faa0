//! The verdict's decision on the regression policy's guards: one family of
//! tests over every guard of every cell and candidate, each guard ending
//! as REGRESSION, NO REGRESSION or UNDECIDED (the finding as data,
//! [`GuardDecision`]), and what a PASS could have missed.
//!
//! The rule (docs/analysis.md, "How a guard is decided"):
//! - **Each size guard** (a metric divided by the work, scenario B's
//!   latencies, ...) gets two one-sided tests at its noise floor, both
//!   exact and dual to the Hodges-Lehmann interval of `effect`: is the
//!   shift beyond the floor on the worse side (p_regression), and is it
//!   short of it (p_no_regression, non-inferiority)? Each counts the
//!   pairwise differences candidate - base on either side of the floor
//!   (on the log scale where every value is positive, so the floor is
//!   relative) and reads the count against the exact null distribution of
//!   U (`stats::u_counts`): the one-sided test at level a rejects exactly
//!   when the interval at 1 - 2a lies wholly beyond the floor.
//! - **The OOM guard** is Fisher's exact test on runs with a kill
//!   (p_regression); it has no floor (a kill is a fact).
//! - **FAIL, family-wise.** Every guard's p_regression of one verdict is
//!   one family, tested by Holm's step-down procedure at the look's level:
//!   the chance that a verdict FAILs a series whose every guard is within
//!   its floor is at most alpha, however many cells and guards the matrix
//!   has (Holm is uniformly more powerful than Bonferroni and needs no
//!   assumption on how the guards correlate; they do: faults and swap-ins
//!   move together, so the procedures that assume independence do not
//!   apply).
//! - **PASS, guard by guard.** A PASS claims every guard is within its
//!   floor: the intersection-union test, which rejects at level alpha when
//!   each guard's non-inferiority test does at alpha, with no correction
//!   (Berger 1982): a multiplicity correction there would only cost power.
//! - **Looks.** With a sequential budget (`analysis::sequential`) the same
//!   cell is tested again after each block of runs. Each look spends
//!   alpha / L (L: the most looks the budget allows), so that over all
//!   looks the chance of a false FAIL (or a false PASS) stays within alpha
//!   whatever the stopping rule (Bonferroni over looks: a conservative
//!   error spending, kept because it is valid for any number of looks,
//!   block sizes and a stopping rule that depends on the data).
//! - **Undecided**: neither test rejects. With runs left in the budget the
//!   cell gets more (`GuardResult::more_runs`); at the budget the verdict is
//!   INCONCLUSIVE "at the floor", never a coin toss.
//! - **What a PASS could have missed**: per size guard, the smallest
//!   worsening its regression test would have caught with 80% power at the
//!   measured spread and run count (normal approximation of the rank test:
//!   Mann-Whitney's asymptotic efficiency 3/pi against the t-test); over
//!   twice the floor it is "underpowered". For the OOM guard, the smallest
//!   kill rate the candidate could have had and been caught 80% of the
//!   time, given the baseline's.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::catalog::Better;
use super::effect::{Decision, Scale};
pub use super::guard_finding::{GuardDecision, GuardKind};
use super::stats::{fisher_exact_greater, u_counts};

/// The power a "smallest change caught" is stated at.
pub const POWER: f64 = 0.8;

/// The levels the decision ran at, for the report and the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Levels {
    /// The family-wise level of a false FAIL (and of a false PASS) over
    /// the whole budget.
    pub alpha: f64,
    /// How many looks the budget allows (1 without one).
    pub looks: usize,
}

impl Levels {
    /// What one look may spend.
    pub fn per_look(&self) -> f64 {
        self.alpha / self.looks.max(1) as f64
    }
}

/// Both one-sided tests of a size guard at its floor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloorTests {
    pub p_regression: f64,
    pub p_no_regression: f64,
}

/// The shift at the floor on the scale the values are compared on, for the
/// worse side (`up`: a rise is worse), or None (a linear metric whose
/// baseline median is 0: no relative floor).
fn floor_shift(scale: Scale, floor: f64, up: bool, base_median: f64) -> Option<f64> {
    match scale {
        Scale::Log if up => Some((1.0 + floor).ln()),
        // A fall of the floor or more; a floor of 100% or more cannot be
        // fallen through.
        Scale::Log => (floor < 1.0).then(|| (1.0 - floor).ln()),
        Scale::Linear if base_median == 0.0 => None,
        Scale::Linear if up => Some(floor * base_median.abs()),
        Scale::Linear => Some(-floor * base_median.abs()),
    }
}

/// P(U >= u) and P(U <= u) for two samples of sizes m and n under the
/// null (no ties), with u a count of pairs that may end in .5 (a pair
/// exactly at the floor counts half). Exact up to `EXACT_MAX_PAIRS`, the
/// normal approximation beyond, as the interval's rank is found.
fn u_tails(m: usize, n: usize, u: f64) -> (f64, f64) {
    let mn = m * n;
    if mn <= super::effect::EXACT_MAX_PAIRS {
        let c = u_counts(m, n);
        let total: f64 = c.iter().sum();
        // U is whole: a half count's upper tail starts at the next whole
        // value, its lower tail ends at the one before.
        let hi_from = u.ceil() as usize;
        let lo_to = u.floor() as usize;
        let upper = c[hi_from.min(mn + 1)..].iter().sum::<f64>() / total;
        let lower = c[..=lo_to.min(mn)].iter().sum::<f64>() / total;
        return (upper.min(1.0), lower.min(1.0));
    }
    let mu = mn as f64 / 2.0;
    let sd = (mn as f64 * (m + n + 1) as f64 / 12.0).sqrt();
    let z = Normal::standard();
    (1.0 - z.cdf((u - 0.5 - mu) / sd), z.cdf((u + 0.5 - mu) / sd))
}

/// Median of a non-empty slice.
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let k = v.len();
    if k % 2 == 1 {
        v[k / 2]
    } else {
        (v[k / 2 - 1] + v[k / 2]) / 2.0
    }
}

/// The scale values are compared on: log where every value is positive.
pub fn scale_of(base: &[f64], cand: &[f64]) -> Scale {
    if base.iter().chain(cand).all(|v| *v > 0.0) {
        Scale::Log
    } else {
        Scale::Linear
    }
}

/// Values on the scale they are compared on.
fn on_scale(scale: Scale, xs: &[f64]) -> Vec<f64> {
    match scale {
        Scale::Log => xs.iter().map(|v| v.ln()).collect(),
        Scale::Linear => xs.to_vec(),
    }
}

/// One side's test: the pairs whose difference (candidate - base, on the
/// scale) lies beyond `shift` in the direction `up`, against the exact
/// null with the candidate moved by `shift`. Returns (p of "beyond",
/// p of "short of").
fn side(base: &[f64], cand: &[f64], shift: f64, up: bool) -> (f64, f64) {
    let mut beyond = 0.0;
    for c in cand {
        for b in base {
            let d = c - b - shift;
            if d == 0.0 {
                beyond += 0.5;
            } else if (d > 0.0) == up {
                beyond += 1.0;
            }
        }
    }
    // Many pairs beyond: evidence of "beyond" (upper tail of the count);
    // few: evidence of "short of" (lower tail).
    u_tails(base.len(), cand.len(), beyond)
}

/// A size guard's two tests at `floor` for a metric whose better direction
/// is `better`; None when a side is empty or there is no relative floor.
/// With no better direction both sides are worse: the regression test is
/// the two one-sided tests beyond -floor and +floor (Bonferroni: twice the
/// smaller p), the no-regression test both short of them (TOST: the larger
/// p).
pub fn floor_tests(base: &[f64], cand: &[f64], better: Better, floor: f64) -> Option<FloorTests> {
    if base.is_empty() || cand.is_empty() {
        return None;
    }
    let scale = scale_of(base, cand);
    let on = |xs: &[f64]| on_scale(scale, xs);
    let (b, c) = (on(base), on(cand));
    let base_median = median(base);
    let test = |up: bool| -> Option<(f64, f64)> {
        let shift = floor_shift(scale, floor, up, base_median)?;
        Some(side(&b, &c, shift, up))
    };
    let t = match better {
        Better::Lower => {
            let (reg, ok) = test(true)?;
            FloorTests {
                p_regression: reg,
                p_no_regression: ok,
            }
        }
        Better::Higher => {
            let (reg, ok) = test(false)?;
            FloorTests {
                p_regression: reg,
                p_no_regression: ok,
            }
        }
        Better::Neither => {
            let (reg_up, ok_up) = test(true)?;
            let (reg_down, ok_down) = test(false)?;
            FloorTests {
                p_regression: (2.0 * reg_up.min(reg_down)).min(1.0),
                p_no_regression: ok_up.max(ok_down),
            }
        }
    };
    Some(t)
}

/// Holm's step-down procedure at `alpha` over `ps`: per p, the level it was
/// tested at (None past the first one kept) and whether it was rejected.
pub fn holm(ps: &[f64], alpha: f64) -> Vec<(Option<f64>, bool)> {
    let k = ps.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    let mut out = vec![(None, false); k];
    for (step, &i) in order.iter().enumerate() {
        let level = alpha / (k - step) as f64;
        out[i] = (Some(level), ps[i] <= level);
        if ps[i] > level {
            break;
        }
    }
    out
}

/// The smallest relative worsening a one-sided rank test at `level` would
/// catch with [`POWER`], given the values' spread (the pooled standard
/// deviation on the comparison's scale) and the run counts: the floor plus
/// (z_level + z_power) standard errors, over Mann-Whitney's efficiency
/// sqrt(3 / pi). None with fewer than two runs a side (no spread).
pub fn detectable_change(
    base: &[f64],
    cand: &[f64],
    better: Better,
    floor: f64,
    level: f64,
) -> Option<f64> {
    let (m, n) = (base.len(), cand.len());
    if m < 2 || n < 2 || level <= 0.0 {
        return None;
    }
    let scale = scale_of(base, cand);
    let on = |xs: &[f64]| on_scale(scale, xs);
    let var = |xs: &[f64]| {
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
    };
    let (b, c) = (on(base), on(cand));
    let pooled = ((var(&b) + var(&c)) / (m + n - 2) as f64).sqrt();
    let z = Normal::standard();
    let se =
        pooled * (1.0 / m as f64 + 1.0 / n as f64).sqrt() / (3.0 / std::f64::consts::PI).sqrt();
    let margin = (z.inverse_cdf(1.0 - level) + z.inverse_cdf(POWER)) * se;
    let up = better != Better::Higher;
    match scale {
        Scale::Log => {
            let at = floor_shift(scale, floor, up, 1.0)?;
            Some(if up {
                (at + margin).exp() - 1.0
            } else {
                1.0 - (at - margin).exp()
            })
        }
        Scale::Linear => {
            let med = median(base).abs();
            (med > 0.0).then(|| floor + margin / med)
        }
    }
}

/// The smallest kill rate (in hundredths) a candidate could have and be
/// caught by Fisher's test at `level` with [`POWER`], given the baseline's
/// kills and both run counts; None when no rate up to 100% would be.
pub fn detectable_kill_rate(
    base_hits: usize,
    base_n: usize,
    cand_n: usize,
    level: f64,
) -> Option<f64> {
    if base_n == 0 || cand_n == 0 {
        return None;
    }
    // The counts that the test rejects on: it rejects for k and for every
    // larger k (the p falls as k grows).
    let first =
        (0..=cand_n).find(|&k| fisher_exact_greater(k, cand_n, base_hits, base_n) <= level)?;
    let power = |q: f64| -> f64 {
        let bin = statrs::distribution::Binomial::new(q, cand_n as u64).expect("0 <= q <= 1");
        use statrs::distribution::DiscreteCDF;
        if first == 0 {
            1.0
        } else {
            1.0 - bin.cdf(first as u64 - 1)
        }
    };
    (0..=100)
        .map(|h| h as f64 / 100.0)
        .find(|&q| power(q) >= POWER)
}

/// A guard's decision before the family is tested: its tests and
/// figures, decision still Undecided.
pub fn size_guard(m: &super::model::MetricComparison, levels: Levels) -> Option<GuardDecision> {
    let (b, c) = (&m.base_values, &m.candidate_values);
    let t = floor_tests(b, c, m.better, m.noise_floor)?;
    let fd = m.floor_decision.as_ref();
    Some(GuardDecision {
        kind: GuardKind::Size,
        decision: Decision::Undecided,
        p_regression: t.p_regression,
        fail_level: None,
        p_no_regression: Some(t.p_no_regression),
        pass_level: levels.per_look(),
        estimate: fd.map(|d| d.estimate),
        interval: fd.map(|d| d.interval),
        interval_level: fd.map(|d| d.level),
        floor: Some(m.noise_floor),
        base_runs: b.len(),
        candidate_runs: c.len(),
        detectable: None,
        underpowered: false,
    })
}

/// The OOM guard's decision before the family is tested.
pub fn oom_guard(m: &super::model::MetricComparison, levels: Levels) -> Option<GuardDecision> {
    let hits = |v: &[f64]| v.iter().filter(|x| **x > 0.0).count();
    let (bn, cn) = (m.base_values.len(), m.candidate_values.len());
    if bn == 0 || cn == 0 {
        return None;
    }
    let (bh, ch) = (hits(&m.base_values), hits(&m.candidate_values));
    Some(GuardDecision {
        kind: GuardKind::OomRuns,
        decision: Decision::Undecided,
        p_regression: fisher_exact_greater(ch, cn, bh, bn),
        fail_level: None,
        p_no_regression: None,
        pass_level: levels.per_look(),
        estimate: Some(ch as f64 / cn as f64 - bh as f64 / bn as f64),
        interval: None,
        interval_level: None,
        floor: None,
        base_runs: bn,
        candidate_runs: cn,
        detectable: None,
        underpowered: false,
    })
}

/// Decides every guard of a comparison's cells that carries a
/// [`GuardDecision`], as one family (the rule at the top): sets each one's
/// decision, status, reason and whether more runs could decide it.
/// The guard's metric row in its candidate gives the runs for the figures
/// that need them (the smallest change caught).
pub fn decide(cells: &mut [super::model::CellComparison], levels: Levels) {
    let mut family = vec![];
    for c in cells.iter_mut() {
        for k in c.candidates.iter_mut() {
            let (guards, metrics) = (&mut k.guards, &k.metrics);
            for g in guards.iter_mut() {
                let row = metrics.iter().find(|m| m.metric == g.metric);
                family.push((g, row));
            }
        }
    }
    decide_guards(family, levels);
}

/// [`decide`] over one cell's guards on their own (a family of one cell):
/// what `policy::check_cell` gives a caller that judges one cell; the
/// verdict decides again over all cells.
pub fn decide_cell(
    guards: &mut [super::model::GuardResult],
    metrics: &[super::model::MetricComparison],
    levels: Levels,
) {
    let family = guards
        .iter_mut()
        .map(|g| {
            let row = metrics.iter().find(|m| m.metric == g.metric);
            (g, row)
        })
        .collect();
    decide_guards(family, levels);
}

/// The family's decisions (the rule at the top): each guard with the row
/// of its metric.
fn decide_guards(
    mut family: Vec<(
        &mut super::model::GuardResult,
        Option<&super::model::MetricComparison>,
    )>,
    levels: Levels,
) {
    use super::model::Status;
    let per_look = levels.per_look();
    family.retain(|(g, _)| g.decision.is_some());
    let ps: Vec<f64> = family
        .iter()
        .filter_map(|(g, _)| g.decision.as_ref().map(|d| d.p_regression))
        .collect();
    let size = ps.len();
    let tested = holm(&ps, per_look);
    for ((g, row), (fail_level, rejected)) in family.into_iter().zip(tested) {
        let family = size;
        let Some(d) = g.decision.as_mut() else {
            continue;
        };
        d.fail_level = fail_level;
        let worst_level = per_look / family.max(1) as f64;
        match (d.kind, &row) {
            (GuardKind::Size, Some(m)) => {
                d.detectable = detectable_change(
                    &m.base_values,
                    &m.candidate_values,
                    m.better,
                    m.noise_floor,
                    worst_level,
                );
                d.underpowered = d.detectable.is_none_or(|x| x > 2.0 * m.noise_floor);
            }
            (GuardKind::OomRuns, Some(m)) => {
                let bh = m.base_values.iter().filter(|x| **x > 0.0).count();
                d.detectable = detectable_kill_rate(bh, d.base_runs, d.candidate_runs, worst_level);
                d.underpowered = d.detectable.is_none_or(|q| q > 0.5);
            }
            _ => {}
        }
        d.decision = if rejected {
            Decision::Regression
        } else {
            match d.kind {
                GuardKind::Size if d.p_no_regression.is_some_and(|p| p <= per_look) => {
                    Decision::NoRegression
                }
                GuardKind::Size => Decision::Undecided,
                // A kill is a fact: no floor to be within. The candidate
                // killed no more often than the baseline, or the test at
                // this look says nothing more: no regression found; more
                // kills than the baseline not yet significant: more runs.
                GuardKind::OomRuns if d.estimate.is_some_and(|e| e > 0.0) => Decision::Undecided,
                GuardKind::OomRuns => Decision::NoRegression,
            }
        };
        let oom_counts = row.as_ref().map(|m| {
            let hits = |v: &[f64]| v.iter().filter(|x| **x > 0.0).count();
            (hits(&m.candidate_values), hits(&m.base_values))
        });
        let text = reason(d, levels, family, oom_counts);
        let survivors = row
            .as_ref()
            .and_then(|m| m.survivors)
            .filter(|_| d.kind == GuardKind::Size);
        g.reason = match survivors {
            Some(s) => format!("{}: {text}", s.text()),
            None => text,
        };
        // Even complete separation could not decide the guard with these
        // runs (every candidate run killed, for the OOM guard): too few to
        // judge, not undecided at the floor.
        let reachable = match d.kind {
            GuardKind::Size => u_tails(d.base_runs, d.candidate_runs, 0.0).1 <= per_look,
            GuardKind::OomRuns => {
                fisher_exact_greater(d.candidate_runs, d.candidate_runs, 0, d.base_runs) <= per_look
            }
        };
        g.status = match d.decision {
            Decision::Regression => Some(Status::Fail),
            _ if !reachable => None,
            Decision::NoRegression => Some(Status::Pass),
            Decision::Undecided if d.kind == GuardKind::OomRuns => Some(Status::Pass),
            Decision::Undecided => Some(Status::Inconclusive),
        };
        g.more_runs = d.decision == Decision::Undecided;
        if !reachable && d.decision != Decision::Regression {
            g.reason = format!(
                "{}: with {} + {} runs no outcome could reach p <= {}",
                g.reason,
                d.base_runs,
                d.candidate_runs,
                super::text::p(per_look)
            );
        }
    }
}

/// A guard's decision in one line: the estimate, the interval, the floor
/// and the tests' p against their levels; for a PASS the smallest change
/// it would have caught.
/// `oom_counts`: the OOM guard's runs with a kill (candidate, base).
pub fn reason(
    d: &GuardDecision,
    levels: Levels,
    family: usize,
    oom_counts: Option<(usize, usize)>,
) -> String {
    use super::text::{p, pct};
    let looks = if levels.looks > 1 {
        format!(", one look of at most {}", levels.looks)
    } else {
        String::new()
    };
    let runs = format!("{} + {} runs", d.base_runs, d.candidate_runs);
    match d.kind {
        GuardKind::Size => {
            let floor = pct(d.floor.unwrap_or(0.0))
                .trim_start_matches('+')
                .to_string();
            let est = match (d.estimate, d.interval, d.interval_level) {
                (Some(e), Some((lo, hi)), Some(level)) => format!(
                    "{} [{}, {}] ({:.1}% interval)",
                    pct(e),
                    pct(lo).trim_end_matches('%'),
                    pct(hi).trim_end_matches('%'),
                    level * 100.0
                ),
                _ => "-".into(),
            };
            let caught = match d.detectable {
                Some(x) if d.underpowered => {
                    format!(
                        "; underpowered: it would catch {} only (80% power)",
                        pct(x).trim_start_matches('+')
                    )
                }
                Some(x) => format!(
                    "; would have caught {} (80% power)",
                    pct(x).trim_start_matches('+')
                ),
                None => String::new(),
            };
            match d.decision {
                Decision::Regression => format!(
                    "{est}: beyond the {floor} floor (p={} <= {}, Holm over {family} guards{looks}; {runs})",
                    p(d.p_regression),
                    p(d.fail_level.unwrap_or(0.0)),
                ),
                Decision::NoRegression => format!(
                    "{est}: within the {floor} floor (p={} <= {}; {runs}){caught}",
                    p(d.p_no_regression.unwrap_or(1.0)),
                    p(d.pass_level),
                ),
                Decision::Undecided => format!(
                    "at the floor: {est}, neither beyond nor within {floor} (p={} and {} against {}; {runs}){caught}",
                    p(d.p_regression),
                    p(d.p_no_regression.unwrap_or(1.0)),
                    p(d.pass_level),
                ),
            }
        }
        GuardKind::OomRuns => {
            let (ch, bh) = oom_counts.unwrap_or_default();
            let counts = format!(
                "runs with an OOM kill: {ch} of {}, base {bh} of {} (Fisher's exact test, p={})",
                d.candidate_runs,
                d.base_runs,
                p(d.p_regression),
            );
            let missed = match d.detectable {
                Some(q) => format!(
                    "; a kill rate of {:.0}% would have been caught 80% of the time",
                    q * 100.0
                ),
                None => "; no kill rate would have been caught with these runs".into(),
            };
            match d.decision {
                Decision::Regression => format!(
                    "more runs with an OOM kill: {counts} <= {}, Holm over {family} guards{looks}",
                    p(d.fail_level.unwrap_or(0.0))
                ),
                _ => format!("{counts}{missed}"),
            }
        }
    }
}

#[cfg(test)]
mod tests;
