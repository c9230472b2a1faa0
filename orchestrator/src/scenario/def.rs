//! What a scenario is: the [`Def`] each scenario folder defines as its
//! `DEF` (what its guest needs, what its runs measured, its catalog
//! entries, report lines and anatomy), the guest shape its report lines
//! show, and a `Def`'s defaults. A leaf: it names no scenario's list
//! (`registry` does); a scenario imports it, never the registry.

use std::time::Duration;

use mmci_record::{GuestJob, Record, Scenario};

use crate::arch::Arch;
use crate::guest::image::ImageManifest;
use crate::scenario::anatomy::Anatomy;
use crate::scenario::metric::Metric;
use crate::scenario::ScenarioMetrics;

/// The guest a run booted, as a scenario's report lines show it.
#[derive(Clone, Copy, Debug)]
pub struct GuestShape {
    pub arch: Arch,
    pub vcpus: u32,
    pub memory_mb: u64,
    /// Size of the swap disk attached; 0: none.
    pub swap_mb: u64,
}

/// A scenario's anatomy of one cell and kernel: (cell, kernel, the
/// completed runs' ids and metrics).
pub type AnatomyFn = fn(&str, &str, &[(&String, &ScenarioMetrics)]) -> Anatomy;

/// Another scenario's metrics a scenario measures: (that scenario, which
/// of its metrics).
pub type Borrowed = (Scenario, fn(&Metric) -> bool);

/// A metric the regression policy guards for every series run in a
/// scenario, and why a maintainer watches it (analysis/policy.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Guard {
    pub metric: &'static str,
    pub why: &'static str,
}

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
    /// Why a run that finished failed a check of the kernel's own state
    /// once its workload was over (isolation counters that do not come
    /// back to 0); None: it passed, or the scenario checks nothing.
    pub kernel_check: fn(&[Record]) -> Option<String>,
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
    /// The metrics the regression policy guards in its cells (a timing is
    /// judged on KVM only).
    pub guards: &'static [Guard],
}

/// No scratch disks, no precondition, no files: the defaults of a `Def`.
pub fn no_disks(_: &GuestJob) -> Vec<(String, u64)> {
    vec![]
}

pub fn no_precondition(_: &[Record]) -> Option<String> {
    None
}

pub fn no_check(_: &[Record]) -> Option<String> {
    None
}

pub fn no_files(_: &[Record]) -> Vec<(&'static str, String)> {
    vec![]
}

pub fn no_figure(_: &ScenarioMetrics) -> Option<String> {
    None
}
