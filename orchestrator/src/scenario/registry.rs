//! The one list of scenarios. A scenario is a [`Def`]: what its guest
//! needs (timeout, scratch disks), what its runs measured (from their
//! records), whether a run reproduced the case, its catalog entries, its
//! lines in a run's report, and its anatomy in a comparison. Each scenario
//! folder defines its `DEF`; everything outside `scenario/` asks [`of`]
//! (by the job's `mmci_record::Scenario`) instead of matching on it.
//! See docs/scenarios.md for adding one.

use std::time::Duration;

use mmci_record::{GuestJob, Record, Scenario};

use crate::arch::Arch;
use crate::guest::image::ImageManifest;
use crate::scenario::catalog::Metric;
use crate::scenario::ScenarioMetrics;

/// Every scenario, in `Scenario::ALL`'s order.
pub static ALL: [&Def; 4] = [
    &super::probe::DEF,
    &super::mglru::DEF,
    &super::noio::DEF,
    &super::script::DEF,
];

/// The guest a run booted, as a scenario's report lines show it.
#[derive(Clone, Copy, Debug)]
pub struct GuestShape {
    pub arch: Arch,
    pub vcpus: u32,
    pub memory_mb: u64,
    /// Size of the swap disk attached; 0: none.
    pub swap_mb: u64,
}

/// A comparison's anatomy of a scenario's runs in one cell and kernel (see
/// `scenario::noio::anatomy`).
pub use super::noio::anatomy::{Anatomy, WorstCall};

/// A scenario's anatomy of one cell and kernel: (cell, kernel, the
/// completed runs' ids and metrics).
pub type AnatomyFn = fn(&str, &str, &[(&String, &ScenarioMetrics)]) -> Anatomy;

/// Another scenario's metrics a scenario measures: (that scenario, which
/// of its metrics).
pub type Borrowed = (Scenario, fn(&Metric) -> bool);

/// One scenario.
pub struct Def {
    pub id: Scenario,
    /// Its name in reports (`scenario A (...)`); None: its id, spaced.
    pub title: Option<&'static str>,
    /// How long a run may take: room for a slow (TCG) boot and a
    /// slowed-down workload.
    pub timeout: fn(&GuestJob) -> Duration,
    /// Scratch disks besides swap: (serial, size in MiB), in attach order.
    pub disks: fn(&GuestJob) -> Vec<(String, u64)>,
    /// What the run measured, from the guest's records.
    pub metrics: fn(&GuestJob, &[Record]) -> ScenarioMetrics,
    /// Why a run that finished did not reproduce the case (its
    /// preconditions did not hold); None: it did, or the scenario has none.
    pub not_reproduced: fn(&[Record]) -> Option<String>,
    /// Files written next to run.json: (name, contents).
    pub files: fn(&[Record]) -> Vec<(&'static str, String)>,
    /// Its catalog entries, in display order, and its counters divided by
    /// the work done.
    pub metric_entries: &'static [Metric],
    pub per_work: &'static [Metric],
    /// Another scenario's metrics its runs measure too, those `keep` keeps
    /// (a script's run measures scenario A's kernel-side counters).
    pub borrows: Option<Borrowed>,
    /// What its per-work metrics are divided by.
    pub work_unit: Option<&'static str>,
    /// Its metrics drawn as latency histograms in the HTML report.
    pub histograms: &'static [&'static str],
    /// The guest and job lines of a run's report.
    pub report_guest: fn(&GuestShape, &GuestJob) -> String,
    /// A completed run's figure in a cell of the runs table; None: the
    /// table shows its outcome.
    pub runs_figure: fn(&ScenarioMetrics) -> Option<String>,
    /// The run report's sections after the header.
    pub report_sections: fn(&ScenarioMetrics, Option<&ImageManifest>) -> String,
    /// Its anatomy of one cell and kernel from the completed runs' metrics
    /// (run id, metrics); None: the scenario has none.
    pub anatomy: Option<AnatomyFn>,
}

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

/// Every metric drawn as a latency histogram.
pub fn histograms() -> impl Iterator<Item = &'static str> {
    ALL.iter().flat_map(|d| d.histograms.iter().copied())
}

/// No scratch disks, no precondition, no files: the defaults of a `Def`.
pub fn no_disks(_: &GuestJob) -> Vec<(String, u64)> {
    vec![]
}

pub fn no_precondition(_: &[Record]) -> Option<String> {
    None
}

pub fn no_files(_: &[Record]) -> Vec<(&'static str, String)> {
    vec![]
}

pub fn no_figure(_: &ScenarioMetrics) -> Option<String> {
    None
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
