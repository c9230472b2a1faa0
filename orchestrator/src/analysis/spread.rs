//! How much each metric varies over one kernel's repeats of one cell: n,
//! median, mean, standard deviation and the coefficient of variation (sd /
//! mean). What decides how many repeats a change of a given size needs, and
//! whether an accelerator's timings can be judged at all (the icount
//! experiment in docs/accel.md compares these across accelerators and host
//! load). `mmci analyse --spread`; a matrix with one kernel is enough.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::catalog;
use super::stats::{summary, Summary};
use super::AnalysisError;
use crate::results::dir as results_dir;
use crate::results::RunResult;

/// One metric of one cell and kernel over its completed runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub cell: String,
    pub variant: String,
    /// The accelerators its runs used ("tcg", "tcg-icount", ...), joined.
    pub accel: String,
    pub metric: String,
    pub unit: String,
    pub timing: bool,
    pub values: Vec<f64>,
    pub summary: Summary,
}

impl Spread {
    /// sd / |mean|; None with fewer than two values or a zero mean.
    pub fn cv(&self) -> Option<f64> {
        let sd = self.summary.stddev?;
        (self.summary.mean != 0.0).then(|| sd / self.summary.mean.abs())
    }
}

/// Every metric the plan's cells measure, per cell and variant, over the
/// runs that completed; metrics no run has are left out.
pub fn spreads(plan: &crate::matrix::Plan, runs: &BTreeMap<String, RunResult>) -> Vec<Spread> {
    let mut out = Vec::new();
    for cell in &plan.cells {
        let metrics = catalog::of_cell(cell, &plan.scripts);
        for variant in &plan.variants {
            let done = super::compare::completed(plan, runs, &cell.id, &variant.name);
            let accels: std::collections::BTreeSet<&str> =
                done.iter().map(|r| r.accel.name()).collect();
            let accel = accels.into_iter().collect::<Vec<_>>().join("+");
            for m in &metrics {
                let values: Vec<f64> = done.iter().filter_map(|r| catalog::value(m, r)).collect();
                let Some(summary) = summary(&values) else {
                    continue;
                };
                out.push(Spread {
                    cell: cell.id.clone(),
                    variant: variant.name.clone(),
                    accel: accel.clone(),
                    metric: m.name.to_string(),
                    unit: m.unit.to_string(),
                    timing: m.timing,
                    values,
                    summary,
                });
            }
        }
    }
    out
}

/// [`spreads`] of a results dir.
pub fn spread_dir(dir: &Path) -> Result<Vec<Spread>, AnalysisError> {
    let m = results_dir::read_manifest(dir)?
        .ok_or_else(|| AnalysisError::NotResultsDir(dir.to_path_buf()))?;
    Ok(spreads(&m.plan, &results_dir::all_runs(dir)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::synthetic::synthetic;

    #[test]
    fn cv_is_sd_over_mean_and_undefined_without_spread_or_mean() {
        let s = |xs: &[f64]| Spread {
            cell: "c".into(),
            variant: "v".into(),
            accel: "tcg".into(),
            metric: "m".into(),
            unit: "".into(),
            timing: true,
            values: xs.to_vec(),
            summary: summary(xs).unwrap(),
        };
        // mean 10, sample sd 2 (scipy: np.std([8, 10, 12], ddof=1) = 2.0).
        assert_eq!(s(&[8.0, 10.0, 12.0]).cv(), Some(0.2));
        assert_eq!(s(&[-8.0, -10.0, -12.0]).cv(), Some(0.2));
        assert_eq!(s(&[5.0]).cv(), None);
        assert_eq!(s(&[-1.0, 1.0]).cv(), None);
    }

    #[test]
    fn one_row_per_cell_variant_and_measured_metric_over_completed_runs() {
        let (m, mut runs, _) = synthetic(10);
        let all = spreads(&m.plan, &runs);
        assert!(!all.is_empty());
        let touches = |all: &[Spread], variant: &str| {
            all.iter()
                .find(|s| s.metric == "touches" && s.variant == variant)
                .cloned()
                .unwrap()
        };
        let before = touches(&all, "base");
        assert_eq!(before.summary.n, m.plan.repeats as usize);
        // A run that did not complete is not part of the spread.
        let id = runs
            .iter()
            .find(|(_, r)| r.id.contains("-base-"))
            .map(|(k, _)| k.clone())
            .unwrap();
        runs.get_mut(&id).unwrap().classification.outcome = crate::results::outcome::Outcome::Hang;
        let after = touches(&spreads(&m.plan, &runs), "base");
        assert_eq!(after.summary.n, before.summary.n - 1);
        assert!(all
            .iter()
            .all(|s| s.values.len() == s.summary.n && !s.accel.is_empty()));
    }
}
