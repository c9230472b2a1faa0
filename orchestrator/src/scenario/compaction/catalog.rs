//! Scenario C's entries in the metric catalog (see `scenario::catalog`):
//! compaction's own counters, its isolation waits apart from reclaim's,
//! the THP faults' outcome, and the reclaimers' work beside it.

use std::borrow::Cow;

use mmci_record::Scenario;

use crate::scenario::metric::{per_k, per_work, Better, Extract, Metric};
use crate::scenario::{CompactionMetrics, ScenarioMetrics};

fn c(r: &ScenarioMetrics) -> Option<&CompactionMetrics> {
    r.compaction()
}

/// A raw entry of this scenario.
const fn raw(
    name: &'static str,
    description: &'static str,
    unit: &'static str,
    better: Better,
    timing: bool,
    extract: fn(&ScenarioMetrics) -> Option<f64>,
) -> Metric {
    Metric {
        name: Cow::Borrowed(name),
        description: Cow::Borrowed(description),
        unit: Cow::Borrowed(unit),
        better,
        timing,
        noise_floor: None,
        scenario: Scenario::CompactionStall,
        per_work_of: None,
        extract: Extract::Run(extract),
    }
}

/// Display order.
pub static METRICS: &[Metric] = &[
    raw(
        "compact_stall",
        "allocations that entered direct compaction (/proc/vmstat compact_stall)",
        "stalls",
        // A kernel that makes compaction back off may stall as often and
        // give up sooner: the count alone is neither good nor bad.
        Better::Neither,
        false,
        |r| c(r).map(|m| m.compact_stall as f64),
    ),
    raw(
        "compact_fail",
        "direct compactions that did not free a page of the order asked (compact_fail)",
        "compactions",
        Better::Lower,
        false,
        |r| c(r).map(|m| m.compact_fail as f64),
    ),
    raw(
        "compact_success",
        "direct compactions that freed a page of the order asked (compact_success)",
        "compactions",
        Better::Higher,
        false,
        |r| c(r).map(|m| m.compact_success as f64),
    ),
    raw(
        "compact_isolated",
        "pages compaction isolated, migration sources and free targets (compact_isolated)",
        "pages",
        Better::Neither,
        false,
        |r| c(r).map(|m| m.compact_isolated as f64),
    ),
    raw(
        "compact_migrate_scanned",
        "pages compaction's migration scanner looked at (compact_migrate_scanned)",
        "pages",
        // Less scanning is what backing off looks like; it is no better
        // if it buys fewer huge pages.
        Better::Neither,
        false,
        |r| c(r).map(|m| m.compact_migrate_scanned as f64),
    ),
    raw(
        "thp_fault_success_pct",
        "THP faults that got a huge page: thp_fault_alloc / (thp_fault_alloc + thp_fault_fallback)",
        "%",
        Better::Higher,
        false,
        |r| c(r).and_then(|m| m.thp_success_pct()),
    ),
    raw(
        "compaction_throttled",
        "mm_vmscan_throttled VMSCAN_THROTTLE_ISOLATED inside compact_zone(): compaction waiting in too_many_isolated()",
        "events",
        Better::Neither,
        false,
        |r| c(r).map(|m| m.compaction_throttled.count as f64),
    ),
    raw(
        "compaction_throttled_delay_us",
        "time compaction waited in too_many_isolated() (sum of usec_delayed)",
        "µs",
        Better::Neither,
        true,
        |r| c(r).map(|m| m.compaction_throttled.usec_delayed_sum as f64),
    ),
    raw(
        "reclaim_throttled",
        "mm_vmscan_throttled VMSCAN_THROTTLE_ISOLATED outside compaction: reclaim's isolation waits",
        "events",
        Better::Neither,
        false,
        |r| c(r).map(|m| m.reclaim_throttled.count as f64),
    ),
    raw(
        "direct_compaction_ms",
        "time the faulting thread spent in compact_zone() (mm_compaction_begin to _end)",
        "ms",
        Better::Lower,
        true,
        |r| c(r).map(|m| m.direct_compaction.usec_delayed_sum as f64 / 1000.0),
    ),
    raw(
        "reclaimer_touches",
        "pages the reclaimers in the memcg wrote (scenario A's workload)",
        "touches",
        Better::Higher,
        true,
        |r| c(r).map(|m| m.touches as f64),
    ),
    raw(
        "reclaimer_oom_kills",
        "OOM kills in the reclaimers' memcg (memory.events oom_kill)",
        "kills",
        Better::Lower,
        false,
        |r| c(r).map(|m| m.oom_kills as f64),
    ),
];

/// Per 1,000 THP faults: the faulter runs for a fixed time, so a kernel
/// whose compaction is slower makes fewer faults and scans less in all;
/// per fault says whether each fault's compaction did less.
pub static PER_WORK: &[Metric] = &[
    per_work!(
        "compact_stall_per_kfault",
        Some("compact_stall"),
        "direct compaction stalls per 1,000 THP faults",
        "stalls/1k faults",
        Better::Neither,
        Scenario::CompactionStall,
        |r| c(r).and_then(|m| per_k(m.compact_stall, m.thp_faults()))
    ),
    per_work!(
        "compact_fail_per_kfault",
        Some("compact_fail"),
        "failed direct compactions per 1,000 THP faults",
        "compactions/1k faults",
        Better::Lower,
        Scenario::CompactionStall,
        |r| c(r).and_then(|m| per_k(m.compact_fail, m.thp_faults()))
    ),
    per_work!(
        "compact_isolated_per_kfault",
        Some("compact_isolated"),
        "pages compaction isolated per 1,000 THP faults",
        "pages/1k faults",
        Better::Neither,
        Scenario::CompactionStall,
        |r| c(r).and_then(|m| per_k(m.compact_isolated, m.thp_faults()))
    ),
    per_work!(
        "compact_migrate_scanned_per_kfault",
        Some("compact_migrate_scanned"),
        "pages the migration scanner looked at per 1,000 THP faults",
        "pages/1k faults",
        Better::Neither,
        Scenario::CompactionStall,
        |r| c(r).and_then(|m| per_k(m.compact_migrate_scanned, m.thp_faults()))
    ),
    per_work!(
        "compaction_throttled_per_kfault",
        Some("compaction_throttled"),
        "compaction's VMSCAN_THROTTLE_ISOLATED waits per 1,000 THP faults",
        "events/1k faults",
        Better::Neither,
        Scenario::CompactionStall,
        |r| c(r).and_then(|m| per_k(m.compaction_throttled.count, m.thp_faults()))
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use mmci_record::ThrottleStat;

    #[test]
    fn values_from_a_run() {
        let m = CompactionMetrics {
            compact_stall: 40,
            compact_migrate_scanned: 80_000,
            thp_fault_alloc: 30,
            thp_fault_fallback: 10,
            compaction_throttled: ThrottleStat {
                count: 8,
                usec_delayed_sum: 1,
                usec_delayed_max: 1,
                early_wakes: None,
            },
            direct_compaction: ThrottleStat {
                count: 1,
                usec_delayed_sum: 2500,
                usec_delayed_max: 2500,
                early_wakes: None,
            },
            ..Default::default()
        };
        let run = ScenarioMetrics::Compaction(Box::new(m));
        let value = |name: &str| {
            METRICS
                .iter()
                .chain(PER_WORK)
                .find(|e| e.name == name)
                .unwrap()
                .value(&run)
        };
        // (metric, value)
        let cases = [
            ("compact_stall", Some(40.0)),
            ("thp_fault_success_pct", Some(75.0)),
            ("compaction_throttled", Some(8.0)),
            ("direct_compaction_ms", Some(2.5)),
            ("compact_migrate_scanned_per_kfault", Some(2_000_000.0)),
            ("compaction_throttled_per_kfault", Some(200.0)),
        ];
        for (name, want) in cases {
            assert_eq!(value(name), want, "{name}");
        }
        // Nothing to divide by: no per-fault value.
        let idle = ScenarioMetrics::Compaction(Box::default());
        assert_eq!(PER_WORK[0].value(&idle), None);
        assert!(METRICS
            .iter()
            .chain(PER_WORK)
            .all(|e| e.scenario == Scenario::CompactionStall));
    }
}
