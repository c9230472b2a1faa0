//! Which runs a cell's accumulating metrics compare when OOM kills cut
//! runs short: the rule, the kills that end a run, and which metrics add
//! up over a run. `compare` applies it; the policy, the expectations, the
//! claims and the reports read the [`Survivors`] note (in `model`) it
//! decides.

use super::catalog::Metric;
use super::model::Survivors;

/// The per-run OOM counts (the scenarios' catalog owns them: a matrix's
/// `regimes:` are checked against them before anything runs).
pub use crate::scenario::catalog::{OOM_METRIC, RUN_ENDING_KILLS};

/// Which runs a cell's accumulating metrics compare, from the runs
/// without an OOM kill and the completed runs of each side: only those
/// without one when one side had a larger share of its runs killed than
/// the other (see [`Survivors`]), else every completed run (None). Equal
/// shares keep every run: then both sides mix cut-short runs alike.
pub fn survivors(base: (usize, usize), candidate: (usize, usize)) -> Option<Survivors> {
    let killed = |(kept, of): (usize, usize)| of.saturating_sub(kept);
    // killed_b / of_b != killed_c / of_c, without division.
    (killed(base) * candidate.1 != killed(candidate) * base.1).then_some(Survivors {
        base: base.0,
        base_of: base.1,
        candidate: candidate.0,
        candidate_of: candidate.1,
    })
}

/// A metric that adds up over a run and so covers only the start of a run
/// cut short: a rate per unit of work, or the counter such a rate divides.
/// Not the work itself (touches: an OOM kill's lost work is the result),
/// peaks, timings or pressure.
pub fn accumulates(m: &Metric, cell_metrics: &[Metric]) -> bool {
    m.is_per_work()
        || cell_metrics
            .iter()
            .any(|x| x.per_work_of == Some(m.name.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::catalog;

    #[test]
    fn which_runs_are_compared_after_oom_kills() {
        // ((base kept, of), (candidate kept, of)) -> survivors?
        let cases = [
            ((5, 5), (5, 5), false),
            ((4, 5), (5, 5), true),
            ((4, 5), (4, 5), false),
            ((0, 5), (5, 5), true),
            ((5, 5), (0, 5), true),
            // Shares, not counts: 1 of 4 killed against 1 of 5, 1 of 5
            // against 2 of 10, all 5 against 5 of 10.
            ((3, 4), (4, 5), true),
            ((4, 5), (8, 10), false),
            ((0, 5), (5, 10), true),
            ((0, 0), (5, 5), false),
        ];
        for (b, c, cut) in cases {
            assert_eq!(survivors(b, c).is_some(), cut, "{b:?} {c:?}");
        }
        let metrics = catalog::of_scenario(mmci_record::Scenario::MglruIsolation)
            .cloned()
            .collect::<Vec<_>>();
        let acc = |n: &str| accumulates(catalog::metric(n).unwrap(), &metrics);
        assert!(acc("pswpin_per_ktouch") && acc("pswpin") && acc("pgmajfault"));
        assert!(!acc("touches") && !acc("oom_kills") && !acc("nr_isolated_peak"));
    }
}
