//! Scenario A's metrics, derived from one run's records (before/after
//! snapshot deltas, the sampled time series, the tracepoint totals);
//! scenario B's are in [`noio`].

use std::collections::BTreeMap;

use crate::scenario::{delta, Counters};

use mmci_record::{Phase, Record, ThrottleStat};
use serde::{Deserialize, Serialize};

/// The throttle reason the MGLRU isolation series adds.
pub const THROTTLE_ISOLATED: &str = "VMSCAN_THROTTLE_ISOLATED";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MglruMetrics {
    /// memory.events oom_kill of the workload's cgroup.
    pub oom_kills: u64,
    /// memory.events oom of the workload's cgroup.
    pub memcg_oom_events: u64,
    /// memory.events max (times usage hit memory.max).
    pub memcg_max_events: u64,
    /// /proc/vmstat oom_kill (whole guest).
    pub vmstat_oom_kills: u64,
    pub workload_oom_killed: bool,
    /// mm_vmscan_throttled by reason.
    pub throttle: BTreeMap<String, ThrottleStat>,
    pub throttle_lost_events: u64,
    /// Highest nr_isolated_anon + nr_isolated_file in one sample.
    pub nr_isolated_peak: u64,
    pub nr_isolated_anon_peak: u64,
    pub nr_isolated_file_peak: u64,
    pub touches: u64,
    pub workload_ms: u64,
    pub pgscan: u64,
    pub pgsteal: u64,
    /// pgsteal / pgscan (anon + file), None when nothing was scanned.
    pub scan_efficiency: Option<f64>,
    pub pswpin: u64,
    pub pswpout: u64,
    pub pgmajfault: u64,
    pub workingset_refault_anon: u64,
    pub workingset_refault_file: u64,
    /// Growth of /proc/pressure/memory totals during the workload, in µs.
    pub psi_some_us: u64,
    pub psi_full_us: u64,
}

impl MglruMetrics {
    pub fn throttle_count(&self, reason: &str) -> u64 {
        self.throttle.get(reason).map_or(0, |t| t.count)
    }

    pub fn touches_per_second(&self) -> f64 {
        if self.workload_ms == 0 {
            0.0
        } else {
            self.touches as f64 * 1000.0 / self.workload_ms as f64
        }
    }
}

fn delta_sum(before: &Counters, after: &Counters, keys: &[&str]) -> u64 {
    keys.iter().map(|k| delta(before, after, k)).sum()
}

/// The metrics of a run that got as far as its "after" snapshot; None before that.
pub fn mglru_metrics(records: &[Record]) -> Option<MglruMetrics> {
    let snapshot = |want: Phase| {
        records.iter().find_map(|r| match r {
            Record::Snapshot {
                phase,
                vmstat,
                memcg_events,
                memcg_stat,
                psi_memory,
            } if *phase == want => Some((vmstat, memcg_events, memcg_stat, psi_memory)),
            _ => None,
        })
    };
    let (vm0, ev0, st0, psi0) = snapshot(Phase::Before)?;
    let (vm1, ev1, st1, psi1) = snapshot(Phase::After)?;
    let mut m = MglruMetrics {
        oom_kills: delta(ev0, ev1, "oom_kill"),
        memcg_oom_events: delta(ev0, ev1, "oom"),
        memcg_max_events: delta(ev0, ev1, "max"),
        vmstat_oom_kills: delta(vm0, vm1, "oom_kill"),
        pswpin: delta(vm0, vm1, "pswpin"),
        pswpout: delta(vm0, vm1, "pswpout"),
        pgmajfault: delta(vm0, vm1, "pgmajfault"),
        workingset_refault_anon: delta(vm0, vm1, "workingset_refault_anon"),
        workingset_refault_file: delta(vm0, vm1, "workingset_refault_file"),
        ..Default::default()
    };
    // The cgroup's own counters first (they cover exactly the workload);
    // /proc/vmstat when the cgroup reports none.
    m.pgscan = delta(st0, st1, "pgscan");
    m.pgsteal = delta(st0, st1, "pgsteal");
    if m.pgscan == 0 {
        m.pgscan = delta_sum(vm0, vm1, &["pgscan_anon", "pgscan_file"]);
        m.pgsteal = delta_sum(vm0, vm1, &["pgsteal_anon", "pgsteal_file"]);
    }
    m.scan_efficiency = (m.pgscan > 0).then(|| m.pgsteal as f64 / m.pgscan as f64);
    if let (Some(a), Some(b)) = (psi0, psi1) {
        m.psi_some_us = b.some.total_us.saturating_sub(a.some.total_us);
        m.psi_full_us = b.full.total_us.saturating_sub(a.full.total_us);
    }
    for r in records {
        match r {
            Record::Sample {
                nr_isolated_anon_max,
                nr_isolated_file_max,
                nr_isolated_total_max,
                ..
            } => {
                m.nr_isolated_peak = m.nr_isolated_peak.max(*nr_isolated_total_max);
                m.nr_isolated_anon_peak = m.nr_isolated_anon_peak.max(*nr_isolated_anon_max);
                m.nr_isolated_file_peak = m.nr_isolated_file_peak.max(*nr_isolated_file_max);
            }
            Record::Throttle {
                by_reason,
                lost_events,
            } => {
                m.throttle = by_reason.clone();
                m.throttle_lost_events = *lost_events;
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

    fn map(pairs: &[(&str, u64)]) -> Counters {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn snap(phase: Phase, vm: &[(&str, u64)], ev: &[(&str, u64)], st: &[(&str, u64)]) -> Record {
        Record::Snapshot {
            phase,
            vmstat: map(vm),
            memcg_events: map(ev),
            memcg_stat: map(st),
            psi_memory: None,
        }
    }

    fn sample(anon: u64, file: u64) -> Record {
        Record::Sample {
            t_ms: 0,
            nr_isolated_anon_max: anon,
            nr_isolated_file_max: file,
            nr_isolated_total_max: anon + file,
            touches: 0,
            memcg_current_bytes: 0,
            mem_free_kb: 0,
        }
    }

    #[test]
    fn deltas_peaks_and_efficiency() {
        let mut throttle = BTreeMap::new();
        throttle.insert(
            THROTTLE_ISOLATED.to_string(),
            ThrottleStat {
                count: 35,
                usec_delayed_sum: 700,
                usec_delayed_max: 40,
            },
        );
        let records = vec![
            snap(
                Phase::Before,
                &[("pswpout", 10), ("oom_kill", 0)],
                &[("oom", 0)],
                &[("pgscan", 100), ("pgsteal", 50)],
            ),
            sample(3, 1),
            sample(7, 0),
            snap(
                Phase::After,
                &[("pswpout", 110), ("pswpin", 40), ("oom_kill", 1)],
                &[("oom", 2), ("oom_kill", 1)],
                &[("pgscan", 1100), ("pgsteal", 300)],
            ),
            Record::Throttle {
                by_reason: throttle,
                lost_events: 0,
            },
            Record::Workload {
                touches: 5000,
                elapsed_ms: 2000,
                exit: WorkloadExit {
                    code: None,
                    signal: Some(9),
                    oom_killed: true,
                },
            },
        ];
        let m = mglru_metrics(&records).unwrap();
        assert_eq!((m.pswpout, m.pswpin), (100, 40));
        assert_eq!(
            (m.oom_kills, m.memcg_oom_events, m.vmstat_oom_kills),
            (1, 2, 1)
        );
        assert_eq!(
            (
                m.nr_isolated_peak,
                m.nr_isolated_anon_peak,
                m.nr_isolated_file_peak
            ),
            (7, 7, 1)
        );
        assert_eq!((m.pgscan, m.pgsteal), (1000, 250));
        assert_eq!(m.scan_efficiency, Some(0.25));
        assert_eq!(m.throttle_count(THROTTLE_ISOLATED), 35);
        assert_eq!(m.touches_per_second(), 2500.0);
        assert!(m.workload_oom_killed);
    }

    #[test]
    fn vmstat_fallback_and_no_scanning() {
        let records = vec![
            snap(
                Phase::Before,
                &[("pgscan_anon", 10), ("pgsteal_anon", 5)],
                &[],
                &[],
            ),
            snap(
                Phase::After,
                &[
                    ("pgscan_anon", 30),
                    ("pgscan_file", 20),
                    ("pgsteal_anon", 15),
                ],
                &[],
                &[],
            ),
        ];
        let m = mglru_metrics(&records).unwrap();
        assert_eq!((m.pgscan, m.pgsteal), (40, 10));
        let idle = vec![
            snap(Phase::Before, &[], &[], &[]),
            snap(Phase::After, &[], &[], &[]),
        ];
        assert_eq!(mglru_metrics(&idle).unwrap().scan_efficiency, None);
        assert!(mglru_metrics(&idle[..1]).is_none());
    }
}
