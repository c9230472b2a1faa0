//! Each cell's anatomy, for the scenarios that have one
//! (`scenario::registry::Def::anatomy`): per kernel, from the cell's
//! completed runs. Its types and text are the scenario's, re-exported here
//! for the reports.

use crate::matrix::plan::Plan;
use crate::results::RunResult;
use crate::scenario::registry;

pub use crate::scenario::anatomy::*;

/// The anatomy of every cell of `plan` whose scenario has one, kernels in
/// plan order.
pub fn anatomies<'a>(
    plan: &Plan,
    completed: impl Fn(&str, &str) -> Vec<&'a RunResult>,
) -> Vec<Anatomy> {
    let mut out = vec![];
    for cell in &plan.cells {
        let Some(anatomy) = registry::of(cell.job.scenario).anatomy else {
            continue;
        };
        let name = if cell.label.is_empty() {
            cell.id.clone()
        } else {
            cell.label.clone()
        };
        for v in &plan.variants {
            let runs: Vec<(&String, &crate::scenario::ScenarioMetrics)> =
                completed(&cell.id, &v.name)
                    .into_iter()
                    .map(|r| (&r.id, &r.metrics))
                    .collect();
            out.push(anatomy(&name, &v.name, &runs));
        }
    }
    out
}
