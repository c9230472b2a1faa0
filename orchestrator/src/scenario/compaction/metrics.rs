//! Scenario C's metrics from one run's records: /proc/vmstat deltas of
//! compaction and THP faults, the trace's attribution of the isolation
//! waits (compaction's or reclaim's) and of compact_zone() time, the
//! isolation peak against compaction's limit, the reclaimers' work.

use mmci_record::{Phase, Record, ThrottleStat};
use serde::{Deserialize, Serialize};

use crate::scenario::{delta, Counters};

/// The isolation wait both reclaim and compaction take.
pub const ISOLATED: &str = "VMSCAN_THROTTLE_ISOLATED";
/// The guest's keys in the Throttle record besides the reasons
/// (guest-init/src/scenario/compaction/windows.rs): a wait inside a
/// compact_zone() window, and the windows of the faulting thread and of
/// every other task.
pub const IN_COMPACTION: &str = "compaction/";
pub const FAULTER_WINDOWS: &str = "compact_zone/faulter";
pub const OTHER_WINDOWS: &str = "compact_zone/other";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactionMetrics {
    /// /proc/vmstat deltas over the run.
    pub compact_stall: u64,
    pub compact_fail: u64,
    pub compact_success: u64,
    pub compact_isolated: u64,
    pub compact_migrate_scanned: u64,
    pub compact_free_scanned: u64,
    pub thp_fault_alloc: u64,
    pub thp_fault_fallback: u64,
    /// VMSCAN_THROTTLE_ISOLATED waits inside compact_zone() (compaction's
    /// too_many_isolated()), and those outside (reclaim's).
    pub compaction_throttled: ThrottleStat,
    pub reclaim_throttled: ThrottleStat,
    /// The faulting thread's compact_zone() windows (direct compaction):
    /// count, µs in them, the longest.
    pub direct_compaction: ThrottleStat,
    /// Every other task's (kcompactd, khugepaged).
    pub other_compaction: ThrottleStat,
    pub lost_events: u64,
    /// Highest nr_isolated_anon + nr_isolated_file in one sample.
    pub nr_isolated_peak: u64,
    /// Compaction's too_many_isolated() limit at the start, for a __GFP_FS
    /// allocation: the evictable LRU (active + inactive, anon + file) / 16.
    pub isolation_limit: u64,
    /// The reclaimers (scenario A's workload).
    pub touches: u64,
    pub workload_ms: u64,
    pub oom_kills: u64,
    pub workload_oom_killed: bool,
}

impl CompactionMetrics {
    /// THP faults that tried for a huge page.
    pub fn thp_faults(&self) -> u64 {
        self.thp_fault_alloc + self.thp_fault_fallback
    }

    /// Share of the THP faults that got a huge page, in %.
    pub fn thp_success_pct(&self) -> Option<f64> {
        let n = self.thp_faults();
        (n > 0).then(|| self.thp_fault_alloc as f64 * 100.0 / n as f64)
    }
}

/// compact_zone()'s `too_many_isolated()` limit from a vmstat snapshot.
pub fn isolation_limit(vmstat: &Counters) -> u64 {
    let lru: u64 = [
        "nr_inactive_anon",
        "nr_active_anon",
        "nr_inactive_file",
        "nr_active_file",
    ]
    .iter()
    .map(|k| vmstat.get(*k).copied().unwrap_or(0))
    .sum();
    // inactive >>= 3 and active >>= 3 for __GFP_FS, then / 2.
    lru / 16
}

/// The metrics of a run that got as far as its "after" snapshot.
pub fn compaction_metrics(records: &[Record]) -> Option<CompactionMetrics> {
    let snapshot = |want: Phase| {
        records.iter().find_map(|r| match r {
            Record::Snapshot {
                phase,
                vmstat,
                memcg_events,
                ..
            } if *phase == want => Some((vmstat, memcg_events)),
            _ => None,
        })
    };
    let (vm0, _) = snapshot(Phase::Before)?;
    let (vm1, ev1) = snapshot(Phase::After)?;
    let d = |k: &str| delta(vm0, vm1, k);
    let mut m = CompactionMetrics {
        compact_stall: d("compact_stall"),
        compact_fail: d("compact_fail"),
        compact_success: d("compact_success"),
        compact_isolated: d("compact_isolated"),
        compact_migrate_scanned: d("compact_migrate_scanned"),
        compact_free_scanned: d("compact_free_scanned"),
        thp_fault_alloc: d("thp_fault_alloc"),
        thp_fault_fallback: d("thp_fault_fallback"),
        isolation_limit: isolation_limit(vm0),
        // The run creates the memcg: its count is the run's, including
        // kills while the memcg filled, before the "before" snapshot.
        oom_kills: ev1.get("oom_kill").copied().unwrap_or(0),
        ..Default::default()
    };
    for r in records {
        match r {
            Record::Sample {
                nr_isolated_total_max,
                ..
            } => m.nr_isolated_peak = m.nr_isolated_peak.max(*nr_isolated_total_max),
            Record::Throttle {
                by_reason,
                lost_events,
                ..
            } => {
                let get = |k: &str| by_reason.get(k).cloned().unwrap_or_default();
                m.compaction_throttled = get(&format!("{IN_COMPACTION}{ISOLATED}"));
                m.reclaim_throttled = get(ISOLATED);
                m.direct_compaction = get(FAULTER_WINDOWS);
                m.other_compaction = get(OTHER_WINDOWS);
                m.lost_events = *lost_events;
            }
            Record::Workload {
                touches,
                elapsed_ms,
                exit,
            } => {
                m.touches = *touches;
                m.workload_ms = *elapsed_ms;
                m.workload_oom_killed = exit.oom_killed;
            }
            _ => {}
        }
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmci_record::WorkloadExit;
    use std::collections::BTreeMap;

    /// The Throttle record's entries: (key, count, µs).
    fn by_reason(pairs: &[(&str, u64, u64)]) -> BTreeMap<String, ThrottleStat> {
        pairs
            .iter()
            .map(|(k, count, us)| {
                (
                    k.to_string(),
                    ThrottleStat {
                        count: *count,
                        usec_delayed_sum: *us,
                        usec_delayed_max: *us,
                        early_wakes: None,
                    },
                )
            })
            .collect()
    }

    fn map(pairs: &[(&str, u64)]) -> Counters {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn snap(phase: Phase, vm: &[(&str, u64)]) -> Record {
        Record::Snapshot {
            phase,
            vmstat: map(vm),
            // Killed while the memcg filled: already 1 at "before".
            memcg_events: map(&[("oom_kill", 1)]),
            memcg_stat: Counters::new(),
            psi_memory: None,
        }
    }

    #[test]
    fn limits_from_the_lru() {
        // (vmstat, limit)
        let cases = [
            (vec![], 0),
            (
                vec![("nr_inactive_anon", 3000), ("nr_active_anon", 1000)],
                250,
            ),
            (
                vec![
                    ("nr_inactive_anon", 1600),
                    ("nr_active_anon", 0),
                    ("nr_inactive_file", 800),
                    ("nr_active_file", 800),
                    ("nr_unevictable", 90000),
                ],
                200,
            ),
        ];
        for (vm, want) in cases {
            assert_eq!(isolation_limit(&map(&vm)), want, "{vm:?}");
        }
    }

    #[test]
    fn deltas_waits_and_windows() {
        let records = vec![
            snap(
                Phase::Before,
                &[
                    ("compact_stall", 10),
                    ("compact_migrate_scanned", 1000),
                    ("thp_fault_alloc", 5),
                    ("nr_inactive_anon", 3200),
                ],
            ),
            Record::Sample {
                t_ms: 1000,
                nr_isolated_anon_max: 300,
                nr_isolated_file_max: 0,
                nr_isolated_total_max: 300,
                touches: 10,
                memcg_current_bytes: 0,
                mem_free_kb: 0,
            },
            snap(
                Phase::After,
                &[
                    ("compact_stall", 50),
                    ("compact_fail", 12),
                    ("compact_success", 28),
                    ("compact_migrate_scanned", 81000),
                    ("thp_fault_alloc", 35),
                    ("thp_fault_fallback", 10),
                ],
            ),
            Record::Throttle {
                by_reason: by_reason(&[
                    ("compaction/VMSCAN_THROTTLE_ISOLATED", 7, 70_000),
                    ("VMSCAN_THROTTLE_ISOLATED", 100, 9_000),
                    ("compact_zone/faulter", 40, 2_000_000),
                    ("compact_zone/other", 3, 300),
                ]),
                lost_events: 0,
                isolated_by_task: BTreeMap::new(),
            },
            Record::Workload {
                touches: 5000,
                elapsed_ms: 2000,
                exit: WorkloadExit {
                    code: Some(0),
                    signal: None,
                    oom_killed: false,
                    exit_after_kill_ms: None,
                },
            },
        ];
        let m = compaction_metrics(&records).unwrap();
        assert_eq!(
            (m.compact_stall, m.compact_fail, m.compact_success),
            (40, 12, 28)
        );
        assert_eq!(m.compact_migrate_scanned, 80_000);
        assert_eq!((m.thp_fault_alloc, m.thp_fault_fallback), (30, 10));
        assert_eq!(m.thp_success_pct(), Some(75.0));
        assert_eq!(m.compaction_throttled.count, 7);
        assert_eq!(m.reclaim_throttled.count, 100);
        assert_eq!(m.direct_compaction.usec_delayed_sum, 2_000_000);
        assert_eq!(m.other_compaction.count, 3);
        assert_eq!((m.nr_isolated_peak, m.isolation_limit), (300, 200));
        assert_eq!((m.touches, m.oom_kills), (5000, 1));
        assert!(compaction_metrics(&records[..2]).is_none());
        let no_faults = CompactionMetrics::default();
        assert_eq!(no_faults.thp_success_pct(), None);
    }
}
