//! Scenario B's metrics, derived from one run's records: the direct-reclaim
//! calls aggregated per gfp class (GFP_NOIO, the RFC's case, against every
//! other call as a control), the counters around the reads, and the verdict
//! on the preconditions (a run where they did not hold is "not reproduced").

use mmci_record::{MemState, Phase, ReclaimCall, Record, WatermarkStat};
use serde::{Deserialize, Serialize};

/// The gfp class the RFC is about: dm-bufio's GFP_NOIO|__GFP_NORETRY|...
pub const NOIO_PREFIX: &str = "GFP_NOIO";

/// "inactive_anon >> inactive_file": at least this many times more.
pub const ANON_TO_FILE_MIN: u64 = 8;

/// "small swapcache": at most anon >> 6, the RFC's own ratio. Against all of
/// the hog's anon, not only the inactive part: how much of the hog sits on
/// the inactive list swings with the activations of its random writes
/// (67 to 415 MiB of 475 in two runs), its size does not.
pub const SWAPCACHE_SHIFT: u32 = 6;

/// Direct-reclaim calls of one gfp class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassStats {
    pub calls: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    pub latency_max_us: u64,
    /// Calls whose end event said nr_reclaimed=0.
    pub zero_reclaimed: u64,
    /// Lowest priority any call of the class reached; None if none isolated
    /// anything from an LRU.
    pub min_priority: Option<u32>,
    pub anon_scanned: u64,
    pub file_scanned: u64,
    /// Anon nr_scanned at priority 0, summed over the calls.
    pub anon_scanned_prio0: u64,
    /// The most anon folios one call scanned.
    pub max_anon_scanned_one_call: u64,
}

impl ClassStats {
    /// Share of calls with nr_reclaimed == 0, None without calls.
    pub fn zero_reclaimed_share(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.zero_reclaimed as f64 / self.calls as f64)
    }
}

/// The p-th percentile (0 < p <= 100) of sorted values, nearest rank: the
/// smallest value with at least p% of the values at or below it.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Aggregates calls of one class.
pub fn class_stats<'a>(calls: impl IntoIterator<Item = &'a ReclaimCall>) -> ClassStats {
    let mut s = ClassStats::default();
    let mut latencies = Vec::new();
    for c in calls {
        s.calls += 1;
        latencies.push(c.latency_us);
        s.zero_reclaimed += u64::from(c.nr_reclaimed == 0);
        if let Some(p) = c.min_priority {
            s.min_priority = Some(s.min_priority.map_or(p, |m| m.min(p)));
        }
        s.anon_scanned += c.anon_scanned;
        s.file_scanned += c.file_scanned;
        s.anon_scanned_prio0 += c.anon_scanned_prio0;
        s.max_anon_scanned_one_call = s.max_anon_scanned_one_call.max(c.anon_scanned);
    }
    latencies.sort_unstable();
    s.latency_p50_us = percentile(&latencies, 50.0);
    s.latency_p99_us = percentile(&latencies, 99.0);
    s.latency_max_us = latencies.last().copied().unwrap_or(0);
    s
}

/// Scenario B's preconditions as the guest measured them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Preconditions {
    pub swappiness: u32,
    pub lru_gen: String,
    pub at_start: MemState,
    pub at_end: MemState,
    pub watermark: WatermarkStat,
}

/// Why the run does not reproduce scenario B's case; empty when it does.
///
/// Free memory under the min watermark is seen two ways: /proc/zoneinfo
/// readings every few ms (which can miss a short dip), and `allocstall`:
/// the allocator enters direct reclaim only after get_page_from_freelist()
/// failed at the min watermark (ALLOC_WMARK_MIN), so a direct-reclaim
/// stall is the kernel's own word that a zone was under min.
pub fn failed_preconditions(p: &Preconditions, noio_calls: u64, allocstall: u64) -> Vec<String> {
    let mut failed = Vec::new();
    let s = &p.at_start;
    let mib = |bytes: u64| format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64);
    if p.lru_gen != "0x0000" {
        failed.push(format!("MGLRU was on (lru_gen/enabled {})", p.lru_gen));
    }
    if p.swappiness == 0 {
        failed.push("vm.swappiness was 0".into());
    }
    if s.swap_total_kb == 0 {
        failed.push("no swap".into());
    } else if s.swap_free_kb == 0 || p.at_end.swap_free_kb == 0 {
        failed.push("swap was full".into());
    }
    if s.inactive_anon < ANON_TO_FILE_MIN * s.inactive_file.max(1) {
        failed.push(format!(
            "inactive_anon {} is not {ANON_TO_FILE_MIN}x inactive_file {}",
            mib(s.inactive_anon),
            mib(s.inactive_file)
        ));
    }
    if s.swapcached > s.anon >> SWAPCACHE_SHIFT {
        failed.push(format!(
            "swapcache {} is above anon/64 ({})",
            mib(s.swapcached),
            mib(s.anon >> SWAPCACHE_SHIFT)
        ));
    }
    if p.watermark.below_min == 0 && allocstall == 0 {
        failed.push(format!(
            "free memory never went under the min watermark ({} readings, lowest margin {} pages, no allocstall)",
            p.watermark.samples,
            p.watermark
                .lowest_margin_pages
                .map_or("-".to_string(), |m| m.to_string())
        ));
    }
    if noio_calls == 0 {
        failed.push("no GFP_NOIO direct-reclaim call".into());
    }
    failed
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoioMetrics {
    /// Calls with gfp flags starting with GFP_NOIO.
    pub noio: ClassStats,
    /// Every other direct-reclaim call (the hog's page faults mostly).
    pub other: ClassStats,
    pub unpaired_begins: u64,
    pub orphan_ends: u64,
    pub lost_events: u64,
    pub preconditions: Preconditions,
    /// Empty when the case was reproduced.
    pub not_reproduced: Vec<String>,
    pub reads: u64,
    pub read_errors: u64,
    pub read_first_error: Option<String>,
    pub reader_ms: u64,
    /// /proc/vmstat deltas over the reads.
    pub allocstall: u64,
    pub pgscan_direct: u64,
    pub pgsteal_direct: u64,
    pub pgscan_anon: u64,
    pub pgsteal_anon: u64,
    pub pswpin: u64,
    pub pswpout: u64,
}

impl NoioMetrics {
    pub fn reproduced(&self) -> bool {
        self.not_reproduced.is_empty()
    }
}

use crate::scenario::delta;

/// Scenario B's metrics; None until the guest sent its preconditions (its
/// last record of the run).
pub fn noio_metrics(records: &[Record]) -> Option<NoioMetrics> {
    let mut m = NoioMetrics::default();
    let mut have_preconditions = false;
    let mut before = None;
    let mut after = None;
    for r in records {
        match r {
            Record::Preconditions {
                swappiness,
                lru_gen,
                at_start,
                at_end,
                watermark,
            } => {
                have_preconditions = true;
                m.preconditions = Preconditions {
                    swappiness: *swappiness,
                    lru_gen: lru_gen.clone(),
                    at_start: at_start.clone(),
                    at_end: at_end.clone(),
                    watermark: watermark.clone(),
                };
            }
            Record::ReclaimTrace {
                unpaired_begins,
                orphan_ends,
                lost_events,
                ..
            } => {
                m.unpaired_begins = *unpaired_begins;
                m.orphan_ends = *orphan_ends;
                m.lost_events = *lost_events;
            }
            Record::Reader {
                reads,
                errors,
                elapsed_ms,
                first_error,
            } => {
                m.reads = *reads;
                m.read_errors = *errors;
                m.reader_ms = *elapsed_ms;
                m.read_first_error = first_error.clone();
            }
            Record::Snapshot { phase, vmstat, .. } => match phase {
                Phase::Before => before = Some(vmstat),
                Phase::After => after = Some(vmstat),
            },
            _ => {}
        }
    }
    if !have_preconditions {
        return None;
    }
    let calls = records.iter().filter_map(|r| match r {
        Record::ReclaimCall(c) => Some(c),
        _ => None,
    });
    let (noio, other): (Vec<_>, Vec<_>) = calls.partition(|c| c.gfp_flags.starts_with(NOIO_PREFIX));
    m.noio = class_stats(noio);
    m.other = class_stats(other);
    if let (Some(b), Some(a)) = (before, after) {
        m.allocstall = a
            .keys()
            .filter(|k| k.starts_with("allocstall_"))
            .map(|k| delta(b, a, k))
            .sum();
        m.pgscan_direct = delta(b, a, "pgscan_direct");
        m.pgsteal_direct = delta(b, a, "pgsteal_direct");
        m.pgscan_anon = delta(b, a, "pgscan_anon");
        m.pgsteal_anon = delta(b, a, "pgsteal_anon");
        m.pswpin = delta(b, a, "pswpin");
        m.pswpout = delta(b, a, "pswpout");
    }
    m.not_reproduced = failed_preconditions(&m.preconditions, m.noio.calls, m.allocstall);
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(
        gfp: &str,
        latency_us: u64,
        nr_reclaimed: u64,
        prio: Option<u32>,
        anon: u64,
        anon0: u64,
    ) -> ReclaimCall {
        ReclaimCall {
            gfp_flags: gfp.into(),
            latency_us,
            nr_reclaimed,
            min_priority: prio,
            anon_scanned: anon,
            file_scanned: 1,
            anon_scanned_prio0: anon0,
            ..ReclaimCall::default()
        }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn class_aggregation() {
        let calls = [
            call("GFP_NOIO|__GFP_NOWARN", 300, 0, Some(10), 64, 0),
            call("GFP_NOIO|__GFP_NOWARN", 100, 5, Some(0), 1000, 900),
            call("GFP_NOIO|__GFP_NOWARN", 200, 0, None, 0, 0),
        ];
        let s = class_stats(&calls);
        assert_eq!(s.calls, 3);
        assert_eq!(
            (s.latency_p50_us, s.latency_p99_us, s.latency_max_us),
            (200, 300, 300)
        );
        assert_eq!(s.zero_reclaimed, 2);
        assert_eq!(s.zero_reclaimed_share(), Some(2.0 / 3.0));
        assert_eq!(s.min_priority, Some(0));
        assert_eq!(
            (s.anon_scanned, s.file_scanned, s.anon_scanned_prio0),
            (1064, 3, 900)
        );
        assert_eq!(s.max_anon_scanned_one_call, 1000);
        assert_eq!(class_stats(&[]).zero_reclaimed_share(), None);
    }

    fn held() -> Preconditions {
        Preconditions {
            swappiness: 60,
            lru_gen: "0x0000".into(),
            at_start: MemState {
                anon: 400 << 20,
                inactive_anon: 300 << 20,
                inactive_file: 4 << 20,
                swapcached: 1 << 20,
                swap_total_kb: 131068,
                swap_free_kb: 100000,
                mem_free_kb: 5000,
            },
            at_end: MemState {
                swap_free_kb: 90000,
                ..MemState::default()
            },
            watermark: WatermarkStat {
                samples: 100,
                below_min: 3,
                lowest_margin_pages: Some(-20),
            },
        }
    }

    #[test]
    fn preconditions_that_hold() {
        assert!(failed_preconditions(&held(), 2, 5).is_empty());
        assert_eq!(
            failed_preconditions(&held(), 0, 5),
            ["no GFP_NOIO direct-reclaim call"]
        );
        // A dip the zoneinfo readings missed still shows as a direct-reclaim stall.
        let mut missed = held();
        missed.watermark.below_min = 0;
        assert!(failed_preconditions(&missed, 2, 5).is_empty());
    }

    #[test]
    fn each_failed_precondition_is_named() {
        let mut p = held();
        p.lru_gen = "0x0007".into();
        p.swappiness = 0;
        p.at_start.inactive_file = 100 << 20;
        p.at_start.swapcached = 10 << 20;
        p.at_end.swap_free_kb = 0;
        p.watermark.below_min = 0;
        let failed = failed_preconditions(&p, 1, 0);
        assert_eq!(
            failed,
            [
                "MGLRU was on (lru_gen/enabled 0x0007)",
                "vm.swappiness was 0",
                "swap was full",
                "inactive_anon 300.0 MiB is not 8x inactive_file 100.0 MiB",
                "swapcache 10.0 MiB is above anon/64 (6.2 MiB)",
                "free memory never went under the min watermark (100 readings, lowest margin -20 pages, no allocstall)",
            ]
        );
        p.at_start.swap_total_kb = 0;
        assert!(failed_preconditions(&p, 1, 0).contains(&"no swap".to_string()));
    }

    #[test]
    fn metrics_from_records() {
        let vm = |v: &[(&str, u64)]| {
            v.iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect::<crate::scenario::Counters>()
        };
        let snap = |phase, v: &[(&str, u64)]| Record::Snapshot {
            phase,
            vmstat: vm(v),
            memcg_events: crate::scenario::Counters::new(),
            memcg_stat: crate::scenario::Counters::new(),
            psi_memory: None,
        };
        let p = held();
        let records = vec![
            snap(
                Phase::Before,
                &[
                    ("allocstall_dma32", 5),
                    ("allocstall_normal", 1),
                    ("pgscan_direct", 100),
                ],
            ),
            Record::ReclaimCall(call("GFP_NOIO|__GFP_NORETRY", 5000, 0, Some(0), 9000, 8000)),
            Record::ReclaimCall(call("GFP_HIGHUSER_MOVABLE", 800, 32, Some(12), 32, 0)),
            snap(
                Phase::After,
                &[
                    ("allocstall_dma32", 9),
                    ("allocstall_normal", 2),
                    ("pgscan_direct", 9100),
                ],
            ),
            Record::ReclaimTrace {
                calls: 2,
                unpaired_begins: 0,
                orphan_ends: 1,
                lost_events: 0,
            },
            Record::Preconditions {
                swappiness: p.swappiness,
                lru_gen: p.lru_gen.clone(),
                at_start: p.at_start.clone(),
                at_end: p.at_end.clone(),
                watermark: p.watermark.clone(),
            },
            Record::Reader {
                reads: 1000,
                errors: 0,
                elapsed_ms: 10_000,
                first_error: None,
            },
        ];
        let m = noio_metrics(&records).unwrap();
        assert!(m.reproduced(), "{:?}", m.not_reproduced);
        assert_eq!((m.noio.calls, m.other.calls), (1, 1));
        assert_eq!(m.noio.anon_scanned_prio0, 8000);
        assert_eq!(m.other.min_priority, Some(12));
        assert_eq!((m.allocstall, m.pgscan_direct), (5, 9000));
        assert_eq!((m.reads, m.orphan_ends), (1000, 1));
        assert!(
            noio_metrics(&records[..4]).is_none(),
            "no verdict before the preconditions"
        );
    }
}
