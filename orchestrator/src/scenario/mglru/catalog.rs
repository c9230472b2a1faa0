//! Scenario A's entries in the metric catalog (see `scenario::catalog`).

use mmci_record::Scenario;

use crate::scenario::catalog::{Better, Metric, RunMetrics};
use crate::scenario::{MglruMetrics, THROTTLE_ISOLATED};

fn a<'a>(r: &RunMetrics<'a>) -> Option<&'a MglruMetrics> {
    r.mglru
}

/// Display order.
pub static METRICS: &[Metric] = &[
    Metric {
        name: "throttle_isolated",
        description: "mm_vmscan_throttled events, reason VMSCAN_THROTTLE_ISOLATED",
        unit: "events",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.throttle_count(THROTTLE_ISOLATED) as f64),
    },
    Metric {
        name: "throttle_isolated_delay_us",
        description: "time throttled on isolation (sum of usec_delayed)",
        unit: "µs",
        better: Better::Neither,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| {
            a(r).map(|m| {
                m.throttle
                    .get(THROTTLE_ISOLATED)
                    .map_or(0, |t| t.usec_delayed_sum) as f64
            })
        },
    },
    Metric {
        name: "nr_isolated_peak",
        description: "highest nr_isolated_anon + nr_isolated_file in one sample",
        unit: "pages",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.nr_isolated_peak as f64),
    },
    Metric {
        name: "oom_kills",
        description: "OOM kills in the workload's cgroup (memory.events oom_kill)",
        unit: "kills",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.oom_kills as f64),
    },
    Metric {
        name: "memcg_oom_events",
        description: "memory.events oom of the workload's cgroup",
        unit: "events",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.memcg_oom_events as f64),
    },
    Metric {
        name: "memcg_max_events",
        description: "memory.events max: times usage hit memory.max",
        unit: "events",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.memcg_max_events as f64),
    },
    Metric {
        name: "touches",
        description: "pages the workload wrote (its throughput over the run)",
        unit: "touches",
        better: Better::Higher,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.touches as f64),
    },
    Metric {
        name: "touches_per_s",
        description: "touches per second of workload time",
        unit: "touches/s",
        better: Better::Higher,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| {
            a(r).filter(|m| m.workload_ms > 0)
                .map(|m| m.touches_per_second())
        },
    },
    Metric {
        name: "scan_efficiency",
        description: "pgsteal / pgscan (anon + file)",
        unit: "ratio",
        better: Better::Higher,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).and_then(|m| m.scan_efficiency),
    },
    Metric {
        name: "pswpin",
        description: "pages swapped in (/proc/vmstat pswpin)",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.pswpin as f64),
    },
    Metric {
        name: "pswpout",
        description: "pages swapped out (/proc/vmstat pswpout)",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.pswpout as f64),
    },
    Metric {
        name: "pgmajfault",
        description: "major page faults (/proc/vmstat pgmajfault)",
        unit: "faults",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.pgmajfault as f64),
    },
    Metric {
        name: "refaults_anon",
        description: "workingset_refault_anon",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.workingset_refault_anon as f64),
    },
    Metric {
        name: "refaults_file",
        description: "workingset_refault_file",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.workingset_refault_file as f64),
    },
    Metric {
        name: "psi_some_us",
        description: "memory pressure stall, some (growth of /proc/pressure/memory total)",
        unit: "µs",
        better: Better::Lower,
        timing: true,
        // Stall time swings more than counters between identical runs.
        noise_floor: Some(0.10),
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.psi_some_us as f64),
    },
    Metric {
        name: "psi_full_us",
        description: "memory pressure stall, full (growth of /proc/pressure/memory total)",
        unit: "µs",
        better: Better::Lower,
        timing: true,
        noise_floor: Some(0.10),
        scenario: Scenario::MglruIsolation,
        extract: |r| a(r).map(|m| m.psi_full_us as f64),
    },
];
