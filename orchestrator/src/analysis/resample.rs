//! The verdict's operating characteristic, measured on recorded runs: many
//! small verdicts drawn from one results dir with many runs a side, each
//! decided by the same code as a real verdict (`compare`), counted by
//! status and per guard by decision.
//!
//! On an A/A dir (the same kernel on both sides) every FAIL is a false
//! FAIL: the rate at which the verdict accuses a series that changes
//! nothing. With `inflate`, the candidate's swap and fault counters of
//! every drawn run are scaled by 1 + inflate before the comparison: a
//! known extra cost in reclaim (swap-ins, swap-outs, major faults and anon
//! refaults per touch all rise by that share, the work done unchanged),
//! so the FAIL rate is the detection rate of a regression of that size on
//! real run-to-run noise. The scaling is applied to recorded counters, not
//! made by a kernel: it says how the decision behaves on this noise, not
//! how a kernel produces such a cost.
//!
//! Draws are without replacement within a side (a run is drawn at most
//! once per verdict), seeded, and independent between verdicts; with 30
//! runs a side and 5 drawn there are C(30, 5)^2 ~ 2 * 10^10 pairs of
//! subsets, so 200 draws rarely repeat one.

use std::collections::BTreeMap;

use serde::Serialize;

use super::effect::Decision;
use super::model::{Options, Status};
use crate::matrix::plan::order::SplitMix64;
use crate::matrix::plan::Slot;
use crate::results::dir::Manifest;
use crate::results::run::RunResult;

/// What to draw.
#[derive(Clone, Copy, Debug)]
pub struct Draws {
    pub verdicts: usize,
    pub per_side: u32,
    pub seed: u64,
    /// Relative extra swap and fault traffic given the candidate's runs.
    pub inflate: f64,
    /// The looks each verdict's level is spent over: 1 (no budget), or
    /// the budget's (3 for 5 runs a kernel and a budget of 15), so that a
    /// draw of 15 a side is decided as the budget's last look would be.
    pub looks: usize,
}

/// The counts over the drawn verdicts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Characteristic {
    pub verdicts: usize,
    pub per_side: u32,
    pub inflate: f64,
    /// Runs a side the dir had to draw from (the smallest over cells and
    /// kernels).
    pub pool: usize,
    /// The looks the level was spent over.
    pub looks: usize,
    /// Verdicts by status word (`PASS`, `FAIL`, ...).
    pub by_status: BTreeMap<String, usize>,
    /// Per guard metric: (regression, no regression, undecided or not
    /// judged) over every cell.
    pub by_guard: BTreeMap<String, [usize; 3]>,
}

impl Characteristic {
    /// The share of verdicts with this status word.
    pub fn rate(&self, status: &str) -> f64 {
        *self.by_status.get(status).unwrap_or(&0) as f64 / self.verdicts.max(1) as f64
    }
}

/// Scales the counters a regression in reclaim would raise.
fn inflate_run(r: &mut RunResult, by: f64) {
    if by == 0.0 {
        return;
    }
    if let Some(m) = r.metrics.mglru_mut() {
        let up = |v: &mut u64| *v = (*v as f64 * (1.0 + by)).round() as u64;
        up(&mut m.pswpin);
        up(&mut m.pswpout);
        up(&mut m.pgmajfault);
        up(&mut m.workingset_refault_anon);
    }
}

/// Draws `d.verdicts` verdicts of `d.per_side` runs a side from the
/// completed runs of `m`'s dir, and counts their outcomes. Errors when a
/// side has fewer completed runs than a verdict draws.
pub fn resample(
    m: &Manifest,
    runs: &BTreeMap<String, RunResult>,
    opts: &Options,
    d: Draws,
) -> Result<Characteristic, String> {
    let plan = &m.plan;
    if plan.variants.len() < 2 {
        return Err(
            "the results dir has one kernel: a verdict needs a baseline and a candidate".into(),
        );
    }
    let baseline = plan.variants[0].name.clone();
    // Per cell and kernel, the completed runs to draw from.
    let mut pools: Vec<(String, String, Vec<&RunResult>)> = vec![];
    for cell in &plan.cells {
        for v in &plan.variants {
            let done = super::compare::completed(plan, runs, &cell.id, &v.name);
            if done.len() < d.per_side as usize {
                return Err(format!(
                    "cell {} kernel {}: {} completed runs, fewer than the {} a side each verdict draws",
                    cell.id,
                    v.name,
                    done.len(),
                    d.per_side
                ));
            }
            pools.push((cell.id.clone(), v.name.clone(), done));
        }
    }
    // Each drawn verdict is one look of per_side runs a side, at the level
    // a look of a budget with `looks` looks spends (a budget Plan::looks
    // counts as that many).
    let mut small = m.clone();
    small.plan.repeats = d.per_side;
    small.plan.max_repeats = (d.looks > 1)
        .then(|| d.per_side + crate::matrix::plan::budget::BLOCK_REPEATS * (d.looks as u32 - 1));
    small.plan.extra_repeats.clear();
    let mut out = Characteristic {
        verdicts: d.verdicts,
        per_side: d.per_side,
        inflate: d.inflate,
        looks: d.looks,
        pool: pools.iter().map(|(_, _, p)| p.len()).min().unwrap_or(0),
        ..Default::default()
    };
    let mut rng = SplitMix64(d.seed);
    for _ in 0..d.verdicts {
        let mut drawn = BTreeMap::new();
        for (cell, variant, pool) in &pools {
            // The first per_side places of a partial Fisher-Yates shuffle.
            let mut idx: Vec<usize> = (0..pool.len()).collect();
            for i in 0..d.per_side as usize {
                let j = i + rng.below((idx.len() - i) as u64) as usize;
                idx.swap(i, j);
            }
            for (i, r) in idx[..d.per_side as usize]
                .iter()
                .map(|&k| pool[k])
                .enumerate()
            {
                let slot = Slot {
                    cell: cell.clone(),
                    variant: variant.clone(),
                    repeat: i as u32 + 1,
                };
                let mut r = r.clone();
                r.id = slot.id();
                if *variant != baseline {
                    inflate_run(&mut r, d.inflate);
                }
                drawn.insert(slot.id(), r);
            }
        }
        let c = super::compare::compare(&small, &drawn, &plan.expect, vec![], opts);
        *out.by_status
            .entry(c.verdict.status.name().to_string())
            .or_default() += 1;
        for cand in c.cells.iter().flat_map(|c| &c.candidates) {
            for g in &cand.guards {
                let slot = match (g.status, g.decision.as_ref().map(|d| d.decision)) {
                    (Some(Status::Fail), _) => 0,
                    (Some(Status::Pass), Some(Decision::NoRegression) | None) => 1,
                    (Some(Status::Pass), _) => 1,
                    _ => 2,
                };
                out.by_guard.entry(g.metric.clone()).or_default()[slot] += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_a_a_of_identical_runs_never_fails_and_an_inflated_one_does() {
        // One cell, the candidate's runs copies of the baseline's: an A/A.
        // Drawing 5 of 5 a side never FAILs; with the candidate's swap and
        // fault traffic tripled every verdict FAILs (5 + 5 reach Holm's
        // level over the cell's 5 guards only by complete separation,
        // which a tripling gives).
        let (mut m, mut runs, _) = super::super::synthetic::synthetic(10);
        // The policy alone (the synthetic series' own expectations are of
        // a patched kernel).
        m.plan.expect.clear();
        let base: Vec<(String, RunResult)> = runs
            .iter()
            .filter(|(id, _)| id.contains("-base-"))
            .map(|(id, r)| (id.replace("-base-", "-patched-"), r.clone()))
            .collect();
        for (id, mut r) in base {
            r.id = id.clone();
            runs.insert(id, r);
        }
        let opts = Options::default();
        let d = Draws {
            verdicts: 20,
            per_side: 5,
            seed: 7,
            inflate: 0.0,
            looks: 1,
        };
        let aa = resample(&m, &runs, &opts, d).unwrap();
        assert_eq!(aa.verdicts, 20);
        assert_eq!(aa.pool, 5);
        assert_eq!(aa.rate("FAIL"), 0.0, "{aa:?}");
        let ab = resample(&m, &runs, &opts, Draws { inflate: 2.0, ..d }).unwrap();
        assert_eq!(ab.rate("FAIL"), 1.0, "{ab:?}");
        assert_eq!(ab.by_guard["pswpin_per_ktouch"][0], 20, "{ab:?}");
        // Draws of 4 of 5 differ between verdicts and repeat by seed.
        let four = Draws { per_side: 4, ..d };
        assert_eq!(
            resample(&m, &runs, &opts, four).unwrap(),
            resample(&m, &runs, &opts, four).unwrap()
        );
        // Too few runs to draw from: named.
        // Spent over 3 looks the FAIL needs p <= 0.05 / 3 / 5 guards: 5 + 5
        // (1/252 at best) cannot reach it.
        let three = resample(
            &m,
            &runs,
            &opts,
            Draws {
                inflate: 2.0,
                looks: 3,
                ..d
            },
        )
        .unwrap();
        assert_eq!(three.rate("FAIL"), 0.0, "{three:?}");
        let e = resample(&m, &runs, &opts, Draws { per_side: 50, ..d }).unwrap_err();
        assert!(e.contains("fewer than the 50 a side"), "{e}");
    }
}
