//! The one list of scenarios. A scenario is a [`Def`]: what its guest
//! needs (timeout, scratch disks), what its runs measured (from their
//! records), whether a run reproduced the case, its catalog entries, its
//! lines in a run's report, and its anatomy in a comparison. Each scenario
//! folder defines its `DEF`; everything outside `scenario/` asks [`of`]
//! (by the job's `mmci_record::Scenario`) instead of matching on it.
//! See docs/scenarios.md for adding one.

use mmci_record::{Record, Scenario};

pub use crate::scenario::def::{
    no_disks, no_figure, no_files, no_precondition, AnatomyFn, Borrowed, Def, GuestShape,
};
/// A comparison's anatomy of a scenario's runs in one cell and kernel (see
/// `scenario::noio::anatomy`).
pub use crate::scenario::noio::anatomy::{Anatomy, WorstCall};

/// Every scenario, in `Scenario::ALL`'s order.
pub static ALL: [&Def; 5] = [
    &super::probe::DEF,
    &super::mglru::DEF,
    &super::noio::DEF,
    &super::script::DEF,
    &super::compaction::DEF,
];

/// The scenario a matrix's `script:` axis selects (and the only one a
/// script runs in).
pub const RUNS_SCRIPTS: Scenario = Scenario::Script;

/// The scenario whose MGLRU switch is a job field of its own
/// (`noio_mglru`, off unless asked): a matrix's `mglru:` on its cells sets
/// that field rather than the job's `mglru` (on by default).
pub const OWN_MGLRU_SWITCH: Scenario = Scenario::NoioVerity;

/// The scenario `id`.
pub fn of(id: Scenario) -> &'static Def {
    ALL.iter()
        .find(|d| d.id == id)
        .expect("every Scenario is registered (checked by a test)")
}

/// The scenario called `name` (`mglru_isolation`), if there is one.
pub fn named(name: &str) -> Option<&'static Def> {
    ALL.iter().copied().find(|d| d.id.name() == name)
}

/// `scenario A (MGLRU isolation throttling)` for `mglru_isolation`; a name
/// without a title, spaced.
pub fn title(name: &str) -> String {
    match named(name).and_then(|d| d.title) {
        Some(t) => t.to_string(),
        None => name.replace('_', " "),
    }
}

/// Why a finished run did not reproduce its case, asked of every scenario
/// (only a scenario's own records answer).
pub fn not_reproduced(records: &[Record]) -> Option<String> {
    ALL.iter().find_map(|d| (d.not_reproduced)(records))
}

/// Why a finished run failed a check of the kernel's state, asked of
/// every scenario (only a scenario's own records answer).
pub fn kernel_check(records: &[Record]) -> Option<String> {
    ALL.iter().find_map(|d| (d.kernel_check)(records))
}

/// Every metric drawn as a latency histogram.
pub fn histograms() -> impl Iterator<Item = &'static str> {
    ALL.iter().flat_map(|d| d.histograms.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_is_registered_once_in_order() {
        let ids: Vec<Scenario> = ALL.iter().map(|d| d.id).collect();
        assert_eq!(ids, Scenario::ALL.to_vec());
        for s in Scenario::ALL {
            assert_eq!(of(s).id, s);
        }
    }

    #[test]
    fn titles() {
        assert_eq!(
            title("mglru_isolation"),
            "scenario A (MGLRU isolation throttling)"
        );
        assert_eq!(title("probe"), "probe");
        assert_eq!(title("some_thing"), "some thing");
    }
}
