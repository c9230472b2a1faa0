//! Scenario A: MGLRU isolation throttling (many reclaimers in a small memcg
//! over slow swap).

pub mod catalog;
pub mod metrics;
pub mod report;

use std::time::Duration;

use mmci_record::{Record, Scenario};

use crate::scenario::def::Guard;
use crate::scenario::def::{self, Def};
use crate::scenario::ScenarioMetrics;

pub use metrics::*;

pub static DEF: Def = Def {
    id: Scenario::MglruIsolation,
    title: Some("scenario A (MGLRU isolation throttling)"),
    timeout: |job| Duration::from_secs(90 + job.duration_s * 4),
    disks: def::no_disks,
    metrics: |_, records| {
        mglru_metrics(records).map_or(ScenarioMetrics::None, ScenarioMetrics::Mglru)
    },
    not_reproduced: def::no_precondition,
    kernel_check: |records| {
        records.iter().find_map(|r| match r {
            Record::Balance(b) => imbalance(b),
            _ => None,
        })
    },
    files: def::no_files,
    metric_entries: catalog::METRICS,
    borrows: None,
    per_work: catalog::PER_WORK,
    work_unit: Some("per 1,000 touches (the workload's page writes)"),
    histograms: &[],
    report_guest: crate::scenario::report::cgroup_guest,
    runs_figure: report::figure,
    report_sections: report::sections,
    anatomy: None,
    guards: &[
        Guard {
            metric: "touches",
            why: "throughput: pages the workload wrote",
        },
        Guard {
            metric: "pswpout_per_ktouch",
            why: "swap-out traffic per 1,000 touches",
        },
        Guard {
            metric: "pswpin_per_ktouch",
            why: "swap-in traffic per 1,000 touches",
        },
        Guard {
            metric: "pgmajfault_per_ktouch",
            why: "major faults per 1,000 touches",
        },
    ],
};
