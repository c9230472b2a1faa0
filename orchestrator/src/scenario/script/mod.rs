//! Scenario script: a command or script from a guest image (`images/`),
//! run by guest-init inside scenario A's set-up. Its own results (how it
//! ended, its `MMCI-METRIC:` values, the end of its output) are read from
//! the records here (`metrics`); its catalog entries and the metrics a
//! matrix declares for it are in `catalog`. The kernel-side counters
//! around it are scenario A's (`scenario::mglru`).

pub mod catalog;
pub mod metrics;
pub mod report;

use std::time::Duration;

use mmci_record::Scenario;

use crate::scenario::def::{self, Def};
use crate::scenario::ScenarioMetrics;

pub use catalog::MetricDecl;
pub use metrics::*;

pub static DEF: Def = Def {
    id: Scenario::Script,
    title: None,
    // The script's own timeout, then the set-up and the counters after it.
    timeout: |job| {
        Duration::from_secs(
            120 + job
                .script
                .as_ref()
                .map_or(job.duration_s * 4 + 60, |s| s.timeout_for(job.duration_s)),
        )
    },
    // The image disk is not scratch: run/guest.rs attaches the built image
    // read-only.
    disks: def::no_disks,
    // The script runs inside scenario A's set-up and measurements.
    metrics: |job, records| ScenarioMetrics::Script {
        kernel: crate::scenario::mglru::mglru_metrics(records),
        script: job
            .script
            .as_ref()
            .and_then(|s| script_metrics(records, &s.name)),
    },
    not_reproduced: def::no_precondition,
    kernel_check: def::no_check,
    files: |records| vec![("script-output.log", output_log(records))],
    metric_entries: catalog::METRICS,
    // Scenario A's kernel-side metrics are measured around the script; the
    // built-in workload's touches, and the counters divided by them, are not.
    borrows: Some((Scenario::MglruIsolation, |m| {
        !crate::scenario::mglru::catalog::WORKLOAD_ONLY.contains(&m.name.as_ref())
            && !m.is_per_work()
    })),
    per_work: &[],
    work_unit: None,
    histograms: &[],
    report_guest: crate::scenario::report::cgroup_guest,
    runs_figure: crate::scenario::mglru::report::figure,
    report_sections: report::sections,
    anatomy: None,
    guards: &[],
};
