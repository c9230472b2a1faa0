//! Whether a cell ran in the regime its matrix calibrated it for (the
//! matrix's `regimes:`, see `matrix::file::BaseOom`): how many of the
//! baseline's runs an OOM kill ended. A cell out of its regime measured
//! something real, but not what the matrix meant it to (the seed's "base
//! OOMs" cell on a host fast enough that base never does), and the
//! verdict says so.

use super::catalog::{self, Metric};
use super::model::RegimeCheck;
use super::survivors::RUN_ENDING_KILLS;
use crate::matrix::Cell;
use crate::results::RunResult;

/// `cell`'s regime against its completed baseline runs, by the first
/// run-ending OOM count the cell measures; None when the matrix gives the
/// cell no regime, or no baseline run has the count.
pub fn check(
    cell: &Cell,
    base_runs: &[&RunResult],
    cell_metrics: &[Metric],
) -> Option<RegimeCheck> {
    let expected = cell.regime?;
    let kills = RUN_ENDING_KILLS
        .iter()
        .find_map(|k| cell_metrics.iter().find(|m| m.name == *k))?;
    let counts: Vec<f64> = base_runs
        .iter()
        .filter_map(|r| catalog::value(kills, r))
        .collect();
    (!counts.is_empty()).then(|| RegimeCheck {
        expected,
        base_killed: counts.iter().filter(|v| **v > 0.0).count(),
        base_runs: counts.len(),
    })
}

#[cfg(test)]
mod tests {
    use crate::analysis::model::RegimeCheck;
    use crate::matrix::file::BaseOom;

    #[test]
    fn a_regime_holds_unless_its_count_would_be_rare_in_it() {
        // (expected, killed, runs) -> holds? A one-sided binomial tail
        // below 0.05: at most `killed` of `runs` at a half (most), at
        // least `killed` at 1 in 20 (none).
        let cases = [
            (BaseOom::None, 0, 5, true),
            (BaseOom::None, 1, 5, true),
            (BaseOom::None, 2, 5, false),
            (BaseOom::None, 1, 25, true),
            (BaseOom::None, 3, 25, true),
            (BaseOom::None, 4, 25, false),
            (BaseOom::Most, 0, 5, false),
            (BaseOom::Most, 1, 5, true),
            (BaseOom::Most, 2, 5, true),
            (BaseOom::Most, 5, 5, true),
            (BaseOom::Most, 1, 10, false),
            (BaseOom::Most, 2, 10, true),
            // More kills than runs (a bad count) is every run killed.
            (BaseOom::Most, 7, 5, true),
            (BaseOom::None, 7, 5, false),
        ];
        for (expected, base_killed, base_runs, holds) in cases {
            let r = RegimeCheck {
                expected,
                base_killed,
                base_runs,
            };
            assert_eq!(
                r.holds(),
                holds,
                "{r:?}: p = {}",
                expected.out_p(base_killed, base_runs)
            );
        }
        assert!((BaseOom::Most.out_p(0, 5) - 1.0 / 32.0).abs() < 1e-9);
        assert!((BaseOom::None.out_p(2, 5) - 0.022_592_5).abs() < 1e-6);
        assert!((BaseOom::Most.out_p(5, 5) - 1.0).abs() < 1e-9);
        let out = RegimeCheck {
            expected: BaseOom::Most,
            base_killed: 0,
            base_runs: 5,
        };
        assert_eq!(
            out.text(),
            "base OOM-killed in 0 of 5 runs against most runs, p = 0.031"
        );
    }
}
