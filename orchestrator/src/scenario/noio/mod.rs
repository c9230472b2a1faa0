//! Scenario B: GFP_NOIO direct reclaim through dm-verity, and the scratch
//! disks (verity data and hash) its guest needs.

pub mod anatomy;
pub mod catalog;
pub mod disks;
pub mod gfp;
pub mod metrics;
pub mod mglru;
pub mod preconditions;
pub mod report;
pub mod rounds;

use std::time::Duration;

use mmci_record::Scenario;

use crate::scenario::def::Def;
use crate::scenario::def::Guard;
use crate::scenario::ScenarioMetrics;

pub use gfp::*;
pub use metrics::*;
pub use mglru::MglruStats;
pub use preconditions::{Corner, Preconditions, ANON_TO_FILE_MIN};
pub use rounds::{priority_0_us, rounds, RoundAnatomy};

pub static DEF: Def = Def {
    id: Scenario::NoioVerity,
    title: Some("scenario B (GFP_NOIO direct reclaim under dm-verity)"),
    // Filling the verity device and the hog under TCG comes on top.
    timeout: |job| Duration::from_secs(300 + job.duration_s * 4),
    disks: disks::verity_disks,
    metrics: |_, records| {
        noio_metrics(records).map_or(ScenarioMetrics::None, |m| {
            ScenarioMetrics::Noio(Box::new(m))
        })
    },
    not_reproduced: |records| {
        noio_metrics(records)
            .filter(|m| !m.reproduced())
            .map(|m| m.not_reproduced.join("; "))
    },
    kernel_check: crate::scenario::def::no_check,
    files: crate::scenario::def::no_files,
    metric_entries: catalog::METRICS,
    borrows: None,
    per_work: catalog::PER_WORK,
    work_unit: Some("per 1,000 reads (the reader's block reads)"),
    histograms: &[
        "noio_latency_p50_ms",
        "noio_latency_p99_ms",
        "noio_latency_max_ms",
        "other_latency_p99_ms",
        "noio_prio0_ms_p50",
        "noio_prio0_ms_max",
    ],
    report_guest: report::guest,
    runs_figure: crate::scenario::def::no_figure,
    report_sections: report::sections,
    anatomy: Some(anatomy::anatomy),
    guards: &[
        Guard {
            metric: "noio_latency_p99_ms",
            why: "GFP_NOIO direct-reclaim latency, 99th percentile (KVM)",
        },
        Guard {
            metric: "noio_zero_reclaim_share",
            why: "share of GFP_NOIO reclaim calls that reclaimed nothing",
        },
        Guard {
            metric: "io_reclaim_efficiency",
            why: "reclaim with __GFP_IO after the NOIO calls: a staler anon list left by skipping it at priority 0",
        },
        Guard {
            metric: "workingset_refault_per_kread",
            why: "refaults per 1,000 reads (the aging objection in the seed thread)",
        },
        Guard {
            metric: "other_latency_p99_ms",
            why: "other direct reclaim's latency, 99th percentile (KVM)",
        },
    ],
};
