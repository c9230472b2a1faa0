//! Scenario B's entries in the metric catalog (see `scenario::catalog`).

use mmci_record::Scenario;

use crate::scenario::catalog::{Better, Metric, RunMetrics};
use crate::scenario::NoioMetrics;

/// Scenario B's metrics, only from runs whose preconditions held: a run
/// that did not reproduce the case says nothing about the kernel's
/// handling of it.
fn b<'a>(r: &RunMetrics<'a>) -> Option<&'a NoioMetrics> {
    r.noio.filter(|m| m.reproduced())
}

/// Display order.
pub static METRICS: &[Metric] = &[
    Metric {
        name: "noio_calls",
        description: "direct-reclaim calls with GFP_NOIO gfp flags (dm-verity/dm-bufio)",
        unit: "calls",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.noio.calls as f64),
    },
    Metric {
        name: "noio_latency_p50_ms",
        description: "GFP_NOIO direct-reclaim latency, median",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.noio.latency_p50_us as f64 / 1000.0),
    },
    Metric {
        name: "noio_latency_p99_ms",
        description: "GFP_NOIO direct-reclaim latency, 99th percentile",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.noio.latency_p99_us as f64 / 1000.0),
    },
    Metric {
        name: "noio_latency_max_ms",
        description: "GFP_NOIO direct-reclaim latency, longest call",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.noio.latency_max_us as f64 / 1000.0),
    },
    Metric {
        name: "noio_anon_scanned",
        description: "anon folios scanned by GFP_NOIO direct reclaim",
        unit: "folios",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.noio.anon_scanned as f64),
    },
    Metric {
        name: "noio_anon_scanned_prio0",
        description:
            "anon folios scanned at priority 0 by GFP_NOIO direct reclaim (the RFC's case)",
        unit: "folios",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.noio.anon_scanned_prio0 as f64),
    },
    Metric {
        name: "other_calls",
        description: "direct-reclaim calls with other gfp flags (control)",
        unit: "calls",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.other.calls as f64),
    },
    Metric {
        name: "other_latency_p99_ms",
        description: "other direct-reclaim latency, 99th percentile (control)",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.other.latency_p99_us as f64 / 1000.0),
    },
    Metric {
        name: "allocstall",
        description: "allocation stalls (direct reclaim entries) during the reads",
        unit: "events",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).map(|m| m.allocstall as f64),
    },
    Metric {
        name: "noio_zero_reclaim_share",
        description: "share of GFP_NOIO direct-reclaim calls that reclaimed nothing",
        unit: "",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        extract: |r| b(r).and_then(|m| m.noio.zero_reclaimed_share()),
    },
];
