//! Scenario C: compaction against MGLRU isolation (THP faults that need
//! direct compaction while scenario A's reclaimers isolate in their small
//! memcg). Its guest side is guest-init/src/scenario/compaction/.

pub mod catalog;
pub mod metrics;
pub mod report;

use std::time::Duration;

use mmci_record::Scenario;

use crate::scenario::def::{self, Def, Guard};
use crate::scenario::ScenarioMetrics;

pub use metrics::*;

pub static DEF: Def = Def {
    id: Scenario::CompactionStall,
    title: Some("scenario C (compaction against MGLRU isolation)"),
    // Fragmenting the guest's free memory under TCG comes on top of
    // scenario A's allowance.
    timeout: |job| Duration::from_secs(150 + job.duration_s * 4),
    disks: def::no_disks,
    metrics: |_, records| {
        compaction_metrics(records).map_or(ScenarioMetrics::None, |m| {
            ScenarioMetrics::Compaction(Box::new(m))
        })
    },
    not_reproduced: def::no_precondition,
    // The balance check is scenario A's (its records); none here.
    kernel_check: def::no_check,
    files: def::no_files,
    metric_entries: catalog::METRICS,
    borrows: None,
    per_work: catalog::PER_WORK,
    work_unit: Some("per 1,000 THP faults (the faulter's MADV_HUGEPAGE faults)"),
    histograms: &[],
    report_guest: crate::scenario::report::cgroup_guest,
    runs_figure: report::figure,
    report_sections: report::sections,
    anatomy: None,
    guards: &[
        Guard {
            metric: "thp_fault_success_pct",
            why: "share of THP faults that got a huge page",
        },
        Guard {
            metric: "compact_fail_per_kfault",
            why: "failed direct compactions per 1,000 THP faults",
        },
        Guard {
            metric: "reclaimer_touches",
            why: "throughput of the reclaimers beside the faults",
        },
        // The policy's OOM-runs test reads scenario A's `oom_kills`, a
        // name this scenario's catalog cannot reuse: its own count is
        // guarded instead.
        Guard {
            metric: "reclaimer_oom_kills",
            why: "OOM kills in the reclaimers' memcg",
        },
    ],
};
