//! Scenario A's entries in the metric catalog (see `scenario::catalog`).

use std::borrow::Cow;

use mmci_record::Scenario;

use crate::scenario::metric::{per_k, per_work, Better, Extract, Metric};
use crate::scenario::{MglruMetrics, ScenarioMetrics, THROTTLE_ISOLATED};

fn a(r: &ScenarioMetrics) -> Option<&MglruMetrics> {
    r.mglru()
}

/// Scenario A metrics that count the built-in workload's own work.
pub const WORKLOAD_ONLY: [&str; 2] = ["touches", "touches_per_s"];

/// Display order.
pub static METRICS: &[Metric] = &[
    Metric {
        name: Cow::Borrowed("throttle_isolated"),
        description: Cow::Borrowed("mm_vmscan_throttled events, reason VMSCAN_THROTTLE_ISOLATED"),
        unit: Cow::Borrowed("events"),
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.throttle_count(THROTTLE_ISOLATED) as f64)),
    },
    Metric {
        name: Cow::Borrowed("throttle_isolated_delay_us"),
        description: Cow::Borrowed("time throttled on isolation (sum of usec_delayed)"),
        unit: Cow::Borrowed("µs"),
        better: Better::Neither,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| {
            a(r).map(|m| {
                m.throttle
                    .get(THROTTLE_ISOLATED)
                    .map_or(0, |t| t.usec_delayed_sum) as f64
            })
        }),
    },
    Metric {
        name: Cow::Borrowed("throttle_sleep_s"),
        description: Cow::Borrowed(
            "seconds reclaimers slept in reclaim_throttle(), every reason (sum of mm_vmscan_throttled's usect_delayed): what the throttling cost in sleep; the workload's touches say whether it paid off",
        ),
        unit: Cow::Borrowed("s"),
        better: Better::Neither,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.throttle_sleep_s())),
    },
    Metric {
        name: Cow::Borrowed("throttle_sleepers"),
        description: Cow::Borrowed(
            "throttle sleep per second of workload time: the mean number of threads asleep in reclaim_throttle()",
        ),
        unit: Cow::Borrowed("threads"),
        better: Better::Neither,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).and_then(|m| m.throttle_sleepers())),
    },
    Metric {
        name: Cow::Borrowed("throttle_isolated_early_wake"),
        description: Cow::Borrowed(
            "share of VMSCAN_THROTTLE_ISOLATED sleeps that ended before their usec_timeout (woken as isolated folios went back, rather than timed out)",
        ),
        unit: Cow::Borrowed("ratio"),
        better: Better::Neither,
        // A race between put-back and a timeout of a few jiffies.
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).and_then(|m| m.early_wake_fraction(THROTTLE_ISOLATED))),
    },
    Metric {
        name: Cow::Borrowed("workload_isolated_early_wake"),
        description: Cow::Borrowed(
            "share of the workload's own VMSCAN_THROTTLE_ISOLATED sleeps (its threads, not the neighbour's or a kernel thread's) woken before their timeout: with a neighbour memcg that reclaims, what its wakes of the node's wait queue cut short",
        ),
        unit: Cow::Borrowed("ratio"),
        better: Better::Neither,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| {
            a(r).and_then(|m| {
                let (own, _) = m.isolated_waits_split();
                (own.count > 0).then(|| own.early_wakes.unwrap_or(0) as f64 / own.count as f64)
            })
        }),
    },
    Metric {
        name: Cow::Borrowed("exit_after_kill_ms"),
        description: Cow::Borrowed(
            "ms from PID 1's SIGKILL of the workload (kill_after_s) to its exit: a reclaimer killed while throttled should end its reclaim, not throttle again",
        ),
        unit: Cow::Borrowed("ms"),
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).and_then(|m| m.exit_after_kill_ms.map(|v| v as f64))),
    },
    Metric {
        name: Cow::Borrowed("kswapd_reclaimed_pct"),
        description: Cow::Borrowed(
            "share of the guest's reclaimed pages that kswapd reclaimed (pgsteal_kswapd over pgsteal_kswapd + pgsteal_direct): whether a cell's pressure is global",
        ),
        unit: Cow::Borrowed("%"),
        better: Better::Neither,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).and_then(|m| m.kswapd_reclaimed_pct())),
    },
    Metric {
        name: Cow::Borrowed("nr_isolated_peak"),
        description: Cow::Borrowed("highest nr_isolated_anon + nr_isolated_file in one sample"),
        unit: Cow::Borrowed("pages"),
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.nr_isolated_peak as f64)),
    },
    Metric {
        name: Cow::Borrowed("oom_kills"),
        description: Cow::Borrowed("OOM kills in the workload's cgroup (memory.events oom_kill)"),
        unit: Cow::Borrowed("kills"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.oom_kills as f64)),
    },
    Metric {
        name: Cow::Borrowed("memcg_oom_events"),
        description: Cow::Borrowed("memory.events oom of the workload's cgroup"),
        unit: Cow::Borrowed("events"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.memcg_oom_events as f64)),
    },
    Metric {
        name: Cow::Borrowed("memcg_max_events"),
        description: Cow::Borrowed("memory.events max: times usage hit memory.max"),
        unit: Cow::Borrowed("events"),
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.memcg_max_events as f64)),
    },
    Metric {
        name: Cow::Borrowed("touches"),
        description: Cow::Borrowed("pages the workload wrote (its throughput over the run)"),
        unit: Cow::Borrowed("touches"),
        better: Better::Higher,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.touches as f64)),
    },
    Metric {
        name: Cow::Borrowed("touches_per_s"),
        description: Cow::Borrowed("touches per second of workload time"),
        unit: Cow::Borrowed("touches/s"),
        better: Better::Higher,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| {
            a(r).filter(|m| m.workload_ms > 0)
                .map(|m| m.touches_per_second())
        }),
    },
    // Not the seed thread's "scan efficiency" (see docs/scenarios.md):
    // under MGLRU, memcg pgscan counts isolated folios, so this ratio
    // moves the other way from a reclaimed-per-scanned figure. Neither
    // way is better: with slow swap most isolated anon folios leave the
    // pass under writeback and are reclaimed when isolated again, so it
    // follows swap latency more than the quality of reclaim.
    Metric {
        name: Cow::Borrowed("reclaimed_per_isolated"),
        description: Cow::Borrowed(
            "pgsteal / pgscan of the workload's cgroup (anon + file): under MGLRU pgscan counts folios isolated for eviction, so this is the share of isolated folios reclaimed, not a scan efficiency",
        ),
        unit: Cow::Borrowed("ratio"),
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).and_then(|m| m.reclaimed_per_isolated)),
    },
    Metric {
        name: Cow::Borrowed("pswpin"),
        description: Cow::Borrowed("pages swapped in (/proc/vmstat pswpin)"),
        unit: Cow::Borrowed("pages"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.pswpin as f64)),
    },
    Metric {
        name: Cow::Borrowed("pswpout"),
        description: Cow::Borrowed("pages swapped out (/proc/vmstat pswpout)"),
        unit: Cow::Borrowed("pages"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.pswpout as f64)),
    },
    Metric {
        name: Cow::Borrowed("pgmajfault"),
        description: Cow::Borrowed("major page faults (/proc/vmstat pgmajfault)"),
        unit: Cow::Borrowed("faults"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.pgmajfault as f64)),
    },
    Metric {
        name: Cow::Borrowed("refaults_anon"),
        description: Cow::Borrowed("workingset_refault_anon"),
        unit: Cow::Borrowed("pages"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.workingset_refault_anon as f64)),
    },
    Metric {
        name: Cow::Borrowed("refaults_file"),
        description: Cow::Borrowed("workingset_refault_file"),
        unit: Cow::Borrowed("pages"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.workingset_refault_file as f64)),
    },
    Metric {
        name: Cow::Borrowed("psi_some_us"),
        description: Cow::Borrowed(
            "memory pressure stall, some (growth of /proc/pressure/memory total)",
        ),
        unit: Cow::Borrowed("µs"),
        better: Better::Lower,
        timing: true,
        // Stall time swings more than counters between identical runs.
        noise_floor: Some(0.10),
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.psi_some_us as f64)),
    },
    Metric {
        name: Cow::Borrowed("psi_full_us"),
        description: Cow::Borrowed(
            "memory pressure stall, full (growth of /proc/pressure/memory total)",
        ),
        unit: Cow::Borrowed("µs"),
        better: Better::Lower,
        timing: true,
        noise_floor: Some(0.10),
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: Extract::Run(|r| a(r).map(|m| m.psi_full_us as f64)),
    },
];

/// The counters above divided by the work done, per 1,000 touches (the
/// workload's page writes); after every
/// scenario's raw metrics in the registry's order.
pub static PER_WORK: &[Metric] = &[
    per_work!(
        "pswpin_per_ktouch",
        Some("pswpin"),
        "pages swapped in per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pswpin, m.touches))
    ),
    per_work!(
        "pswpout_per_ktouch",
        Some("pswpout"),
        "pages swapped out per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pswpout, m.touches))
    ),
    per_work!(
        "pgmajfault_per_ktouch",
        Some("pgmajfault"),
        "major faults per 1,000 touches",
        "faults/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pgmajfault, m.touches))
    ),
    per_work!(
        "refaults_anon_per_ktouch",
        Some("refaults_anon"),
        "workingset_refault_anon per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.workingset_refault_anon, m.touches))
    ),
    per_work!(
        "refaults_file_per_ktouch",
        Some("refaults_file"),
        "workingset_refault_file per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.workingset_refault_file, m.touches))
    ),
    per_work!(
        "pgscan_per_ktouch",
        None,
        "pgscan (anon + file) per 1,000 touches; under MGLRU: folios isolated for eviction",
        "pages/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pgscan, m.touches))
    ),
    per_work!(
        "pgsteal_per_ktouch",
        None,
        "pages reclaimed (anon + file) per 1,000 touches",
        "pages/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pgsteal, m.touches))
    ),
    per_work!(
        "memcg_max_events_per_ktouch",
        Some("memcg_max_events"),
        "memory.events max per 1,000 touches",
        "events/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.memcg_max_events, m.touches))
    ),
    per_work!(
        "throttle_isolated_per_ktouch",
        Some("throttle_isolated"),
        "VMSCAN_THROTTLE_ISOLATED events per 1,000 touches",
        "events/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.throttle_count(THROTTLE_ISOLATED), m.touches))
    ),
];
