//! Scenario A's metrics, derived from one run's records (before/after
//! snapshot deltas, the sampled time series, the tracepoint totals);
//! scenario B's are in [`noio`].

use std::collections::BTreeMap;

use crate::scenario::{delta, Counters};

use mmci_record::{Balance, Phase, Record, ThrottleStat};
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
    /// The VMSCAN_THROTTLE_ISOLATED waits by the sleeping task's name
    /// (`mmci-w<i>` the workload's memcgs, `mmci-nb` the neighbour).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub isolated_by_task: BTreeMap<String, ThrottleStat>,
    /// ms from PID 1's SIGKILL (`kill_after_s`) to the workload reaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_after_kill_ms: Option<u64>,
    /// /proc/vmstat pages reclaimed by kswapd and by direct reclaim.
    #[serde(default)]
    pub pgsteal_kswapd: u64,
    #[serde(default)]
    pub pgsteal_direct: u64,
    pub throttle_lost_events: u64,
    /// Highest nr_isolated_anon + nr_isolated_file in one sample.
    pub nr_isolated_peak: u64,
    pub nr_isolated_anon_peak: u64,
    pub nr_isolated_file_peak: u64,
    pub touches: u64,
    pub workload_ms: u64,
    /// The cgroup's pgscan (anon + file). Under MGLRU it counts the folios
    /// scan_folios() isolated for eviction, not every folio it looked at.
    pub pgscan: u64,
    pub pgsteal: u64,
    /// pgsteal / pgscan, None when nothing was scanned: under MGLRU the
    /// share of isolated folios reclaimed (not the seed thread's "scan
    /// efficiency"; see the catalog). run.json before the rename:
    /// `scan_efficiency`.
    #[serde(alias = "scan_efficiency")]
    pub reclaimed_per_isolated: Option<f64>,
    pub pswpin: u64,
    pub pswpout: u64,
    pub pgmajfault: u64,
    pub workingset_refault_anon: u64,
    pub workingset_refault_file: u64,
    /// Growth of /proc/pressure/memory totals during the workload, in µs.
    pub psi_some_us: u64,
    pub psi_full_us: u64,
    /// The counters once the workload had exited (runs before the check
    /// existed have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<Balance>,
}

impl MglruMetrics {
    pub fn throttle_count(&self, reason: &str) -> u64 {
        self.throttle.get(reason).map_or(0, |t| t.count)
    }

    /// Seconds reclaimers slept in reclaim_throttle(), all reasons.
    pub fn throttle_sleep_s(&self) -> f64 {
        let us: u64 = self.throttle.values().map(|t| t.usec_delayed_sum).sum();
        us as f64 / 1e6
    }

    /// Throttle sleep per second of workload time: the mean number of
    /// threads asleep in reclaim_throttle(). None without workload time.
    pub fn throttle_sleepers(&self) -> Option<f64> {
        (self.workload_ms > 0).then(|| self.throttle_sleep_s() * 1000.0 / self.workload_ms as f64)
    }

    /// The share of `reason`'s sleeps woken before their timeout; None
    /// without such a sleep, or from a guest that did not count them.
    pub fn early_wake_fraction(&self, reason: &str) -> Option<f64> {
        let t = self.throttle.get(reason).filter(|t| t.count > 0)?;
        Some(t.early_wakes? as f64 / t.count as f64)
    }

    /// The share of reclaimed pages kswapd reclaimed, in %; None when
    /// nothing was reclaimed.
    pub fn kswapd_reclaimed_pct(&self) -> Option<f64> {
        let all = self.pgsteal_kswapd + self.pgsteal_direct;
        (all > 0).then(|| self.pgsteal_kswapd as f64 * 100.0 / all as f64)
    }

    /// The isolation waits of the workload's own threads (`mmci-w*`), and
    /// of every other task.
    pub fn isolated_waits_split(&self) -> (ThrottleStat, ThrottleStat) {
        let (mut own, mut others) = (ThrottleStat::default(), ThrottleStat::default());
        for (task, t) in &self.isolated_by_task {
            let into = if task.starts_with("mmci-w") {
                &mut own
            } else {
                &mut others
            };
            into.count += t.count;
            into.usec_delayed_sum += t.usec_delayed_sum;
            into.usec_delayed_max = into.usec_delayed_max.max(t.usec_delayed_max);
            *into.early_wakes.get_or_insert(0) += t.early_wakes.unwrap_or(0);
        }
        (own, others)
    }

    pub fn touches_per_second(&self) -> f64 {
        if self.workload_ms == 0 {
            0.0
        } else {
            self.touches as f64 * 1000.0 / self.workload_ms as f64
        }
    }
}

/// Why the isolation counters after the workload say the kernel's
/// accounting does not balance; None when they do (or were not checked).
/// Base kernels with MGLRU never account its isolation, so there this
/// passes trivially: it checks a series that does.
pub fn imbalance(b: &Balance) -> Option<String> {
    let mut why = vec![];
    for (name, v) in [
        ("nr_isolated_anon", b.nr_isolated_anon),
        ("nr_isolated_file", b.nr_isolated_file),
    ] {
        if v > 0 {
            why.push(format!(
                "{name} {v} after the workload exited: isolation accounting does not balance"
            ));
        }
    }
    for n in &b.negative {
        why.push(format!(
            "vmstat_refresh: {n} after the workload exited: a counter went negative"
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
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
        pgsteal_kswapd: delta(vm0, vm1, "pgsteal_kswapd"),
        pgsteal_direct: delta(vm0, vm1, "pgsteal_direct"),
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
    m.reclaimed_per_isolated = (m.pgscan > 0).then(|| m.pgsteal as f64 / m.pgscan as f64);
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
                isolated_by_task,
            } => {
                m.throttle = by_reason.clone();
                m.throttle_lost_events = *lost_events;
                m.isolated_by_task = isolated_by_task.clone();
            }
            Record::Workload {
                touches,
                elapsed_ms,
                exit,
            } => {
                m.touches = *touches;
                m.workload_ms = *elapsed_ms;
                m.workload_oom_killed = exit.oom_killed;
                m.exit_after_kill_ms = exit.exit_after_kill_ms;
            }
            Record::Balance(b) => m.balance = Some(b.clone()),
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
                usec_delayed_sum: 700_000,
                usec_delayed_max: 40_000,
                early_wakes: Some(7),
            },
        );
        throttle.insert(
            "VMSCAN_THROTTLE_WRITEBACK".to_string(),
            ThrottleStat {
                count: 3,
                usec_delayed_sum: 300_000,
                usec_delayed_max: 100_000,
                early_wakes: None,
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
                isolated_by_task: BTreeMap::new(),
            },
            Record::Workload {
                touches: 5000,
                elapsed_ms: 2000,
                exit: WorkloadExit {
                    code: None,
                    signal: Some(9),
                    oom_killed: true,
                    exit_after_kill_ms: None,
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
        assert_eq!(m.reclaimed_per_isolated, Some(0.25));
        assert_eq!(m.throttle_count(THROTTLE_ISOLATED), 35);
        // 1 s of sleep over 2 s of workload: half a thread asleep on average.
        assert_eq!(m.throttle_sleep_s(), 1.0);
        assert_eq!(m.throttle_sleepers(), Some(0.5));
        assert_eq!(m.early_wake_fraction(THROTTLE_ISOLATED), Some(0.2));
        assert_eq!(m.early_wake_fraction("VMSCAN_THROTTLE_WRITEBACK"), None);
        assert_eq!(m.early_wake_fraction("VMSCAN_THROTTLE_NOPROGRESS"), None);
        assert_eq!(m.balance, None);
        assert_eq!(m.touches_per_second(), 2500.0);
        assert!(m.workload_oom_killed);
    }

    /// The v2 cells' readings: the waits split by task, the kill's exit
    /// time, kswapd's share of the reclaim.
    #[test]
    fn waits_by_task_kill_and_kswapd() {
        let stat = |count, early| ThrottleStat {
            count,
            usec_delayed_sum: count * 10_000,
            usec_delayed_max: 20_000,
            early_wakes: Some(early),
        };
        let by_task: BTreeMap<String, ThrottleStat> = [
            ("mmci-w0", stat(60, 30)),
            ("mmci-w1", stat(40, 10)),
            ("mmci-nb", stat(5, 5)),
            ("init", stat(1, 0)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let records = vec![
            snap(
                Phase::Before,
                &[("pgsteal_kswapd", 100), ("pgsteal_direct", 50)],
                &[],
                &[],
            ),
            snap(
                Phase::After,
                &[("pgsteal_kswapd", 400), ("pgsteal_direct", 1050)],
                &[],
                &[],
            ),
            Record::Throttle {
                by_reason: BTreeMap::new(),
                lost_events: 0,
                isolated_by_task: by_task,
            },
            Record::Workload {
                touches: 10,
                elapsed_ms: 10_400,
                exit: WorkloadExit {
                    code: None,
                    signal: Some(9),
                    oom_killed: false,
                    exit_after_kill_ms: Some(412),
                },
            },
        ];
        let m = mglru_metrics(&records).unwrap();
        let (own, others) = m.isolated_waits_split();
        assert_eq!((own.count, own.early_wakes), (100, Some(40)));
        assert_eq!((others.count, others.early_wakes), (6, Some(5)));
        assert_eq!(m.exit_after_kill_ms, Some(412));
        assert_eq!((m.pgsteal_kswapd, m.pgsteal_direct), (300, 1000));
        assert_eq!(m.kswapd_reclaimed_pct(), Some(300.0 * 100.0 / 1300.0));
        let idle = mglru_metrics(&[
            snap(Phase::Before, &[], &[], &[]),
            snap(Phase::After, &[], &[], &[]),
        ])
        .unwrap();
        assert_eq!(idle.kswapd_reclaimed_pct(), None);
        assert_eq!(idle.isolated_waits_split().0.count, 0);
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
        assert_eq!(mglru_metrics(&idle).unwrap().reclaimed_per_isolated, None);
        assert_eq!(mglru_metrics(&idle).unwrap().throttle_sleepers(), None);
        assert!(mglru_metrics(&idle[..1]).is_none());
    }

    #[test]
    fn isolation_counters_after_the_workload() {
        let b = |anon, file, negative: &[&str]| Balance {
            nr_isolated_anon: anon,
            nr_isolated_file: file,
            negative: negative.iter().map(|s| s.to_string()).collect(),
            ..Balance::default()
        };
        // (balance, finding)
        let cases = [
            (b(0, 0, &[]), None),
            (
                b(3, 0, &[]),
                Some("nr_isolated_anon 3 after the workload exited: isolation accounting does not balance"),
            ),
            (
                b(0, 0, &["nr_isolated_file -32"]),
                Some("vmstat_refresh: nr_isolated_file -32 after the workload exited: a counter went negative"),
            ),
            (
                b(1, 2, &[]),
                Some("nr_isolated_anon 1 after the workload exited: isolation accounting does not balance; nr_isolated_file 2 after the workload exited: isolation accounting does not balance"),
            ),
        ];
        for (balance, want) in cases {
            assert_eq!(imbalance(&balance).as_deref(), want, "{balance:?}");
        }
        let records = vec![
            snap(Phase::Before, &[], &[], &[]),
            snap(Phase::After, &[], &[], &[]),
            Record::Balance(b(3, 0, &[])),
        ];
        let m = mglru_metrics(&records).unwrap();
        assert_eq!(m.balance.map(|b| b.nr_isolated_anon), Some(3));
    }

    #[test]
    fn run_json_before_the_rename_still_reads() {
        let mut old = serde_json::to_value(MglruMetrics::default()).unwrap();
        let obj = old.as_object_mut().unwrap();
        obj.remove("reclaimed_per_isolated");
        obj.insert("scan_efficiency".into(), serde_json::json!(0.5));
        let m: MglruMetrics = serde_json::from_value(old).unwrap();
        assert_eq!((m.reclaimed_per_isolated, m.balance), (Some(0.5), None));
    }
}
