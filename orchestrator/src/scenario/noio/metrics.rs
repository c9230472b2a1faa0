//! Scenario B's metrics, derived from one run's records: the direct-reclaim
//! calls aggregated per gfp class (dm-bufio's GFP_NOIO allocation, the
//! RFC's case; other GFP_NOIO calls such as zram's; every call with
//! __GFP_IO as a control), the counters around the reads, the anatomy of
//! the slowest dm-bufio call, and the verdict on the preconditions (a run
//! that never reached the RFC's corner is "not reproduced").

use mmci_record::{Phase, ReclaimCall, Record};
use serde::{Deserialize, Serialize};

use super::gfp::{gfp_class, GfpClass};
use super::mglru::{mglru_stats, MglruStats};
use super::preconditions::{
    failed_preconditions, failed_preconditions_mglru, Corner, Preconditions,
};
use super::rounds::{priority_0_us, Prio0Time};

/// SWAP_CLUSTER_MAX (include/linux/swap.h) in bytes of 4 KiB pages: the
/// RFC's absolute bound on the lruvec's swap cache.
pub const SWAP_CLUSTER_MAX_BYTES: u64 = 32 * 4096;

/// The lowest priority a call reached: of its shrink events, and of its
/// memcg visits (the shrink_slab kprobe fires at every priority, also where
/// nothing was scanned, as under the RFC at priority 0 with no file LRU).
pub fn lowest_priority(call: &ReclaimCall) -> Option<u32> {
    call.steps
        .iter()
        .map(|s| s.priority)
        .chain(call.min_priority)
        .min()
}

/// The RFC's condition, as this call saw it: it reached priority 0 and
/// the tracked lruvec's swap cache stayed below min(anon >> 6,
/// SWAP_CLUSTER_MAX) throughout (the most swap cache against the least
/// anon read while it ran). None without a reading during the call.
pub fn in_corner(call: &ReclaimCall) -> Option<bool> {
    let (swapcache, anon) = (call.swapcache_max_bytes?, call.anon_min_bytes?);
    Some(lowest_priority(call) == Some(0) && swapcache < (anon >> 6).min(SWAP_CLUSTER_MAX_BYTES))
}

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
    /// Folios reclaimed by the calls' shrink_inactive events, anon and file.
    #[serde(default)]
    pub reclaimed: u64,
    /// Each call's time at priority 0; None in runs recorded before it was
    /// measured.
    #[serde(default)]
    pub prio0: Option<Prio0Time>,
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
    let mut prio0 = Vec::new();
    for c in calls {
        s.calls += 1;
        latencies.push(c.latency_us);
        prio0.push(priority_0_us(c));
        s.reclaimed += c.anon_reclaimed + c.file_reclaimed;
        s.zero_reclaimed += u64::from(c.nr_reclaimed == 0);
        if let Some(p) = lowest_priority(c) {
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
    prio0.sort_unstable();
    s.prio0 = Some(Prio0Time {
        p50_us: percentile(&prio0, 50.0),
        p90_us: percentile(&prio0, 90.0),
        max_us: prio0.last().copied().unwrap_or(0),
        total_us: prio0.iter().sum(),
    });
    s
}

pub fn corner<'a>(calls: impl IntoIterator<Item = &'a ReclaimCall>) -> Corner {
    let mut c = Corner::default();
    for call in calls {
        if lowest_priority(call) != Some(0) {
            continue;
        }
        c.prio0_calls += 1;
        match in_corner(call) {
            Some(true) => c.condition_true += 1,
            Some(false) => {}
            None => c.unread += 1,
        }
        if let Some(b) = call.swapcache_max_bytes {
            c.swapcache_max_bytes = Some(c.swapcache_max_bytes.map_or(b, |m| m.max(b)));
        }
    }
    c
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoioMetrics {
    /// dm-bufio's calls (gfp `DM_BUFIO_GFP`).
    pub noio: ClassStats,
    /// Other calls without __GFP_IO (zram's own allocations, ...).
    #[serde(default)]
    pub noio_other: ClassStats,
    /// Every call with __GFP_IO (the hog's page faults mostly): the control.
    pub other: ClassStats,
    /// The RFC's corner over the dm-bufio calls.
    #[serde(default)]
    pub corner: Corner,
    /// The slowest dm-bufio call, whole.
    #[serde(default)]
    pub worst: Option<ReclaimCall>,
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
    /// The aging guard's counters; None in runs recorded before them.
    #[serde(default)]
    pub aging: Option<Aging>,
    /// The MGLRU cell's figures (its job's `noio_mglru`); None in a
    /// classic-LRU run, whose metrics keep their form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mglru: Option<MglruStats>,
}

/// What skipping anon at priority 0 may cost the next reclaimer with
/// __GFP_IO (the aging objection in the seed thread): refaults, LRU
/// rotations and kswapd's scanning, /proc/vmstat over the reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Aging {
    pub workingset_refault_anon: u64,
    pub workingset_refault_file: u64,
    pub pgactivate: u64,
    pub pgdeactivate: u64,
    pub pgscan_kswapd: u64,
    pub pgsteal_kswapd: u64,
}

impl NoioMetrics {
    pub fn reproduced(&self) -> bool {
        self.not_reproduced.is_empty()
    }

    /// Reclaimed per scanned of the reclaimers that may swap: kswapd (from
    /// /proc/vmstat) and the direct-reclaim calls with __GFP_IO (from the
    /// trace). A staler anon list left by NOIO calls that skip anon shows
    /// as more scanned for the same reclaimed. None when they scanned nothing.
    pub fn io_reclaim_efficiency(&self) -> Option<f64> {
        let aging = self.aging.as_ref()?;
        let scanned = aging.pgscan_kswapd + self.other.anon_scanned + self.other.file_scanned;
        let reclaimed = aging.pgsteal_kswapd + self.other.reclaimed;
        (scanned > 0).then(|| reclaimed as f64 / scanned as f64)
    }

    /// Reads a second over the reader's time.
    pub fn reads_per_s(&self) -> Option<f64> {
        (self.reader_ms > 0).then(|| self.reads as f64 * 1000.0 / self.reader_ms as f64)
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
    let mut mglru_cell = false;
    for r in records {
        match r {
            Record::Hello { job, .. } => mglru_cell = job.noio_mglru,
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
    let (mut noio, mut noio_other, mut other) = (vec![], vec![], vec![]);
    for c in calls {
        match gfp_class(&c.gfp_flags) {
            GfpClass::DmBufio => noio.push(c),
            GfpClass::OtherNoio => noio_other.push(c),
            GfpClass::Io => other.push(c),
        }
    }
    m.corner = corner(noio.iter().copied());
    // A call that lost trace events has short sums and mis-split rounds:
    // the anatomy shows the slowest complete one when there is one.
    m.worst = noio
        .iter()
        .copied()
        .max_by_key(|c| (!c.events_lost, c.latency_us))
        .cloned();
    m.mglru = mglru_cell.then(|| mglru_stats(noio.iter().copied()));
    m.noio = class_stats(noio);
    m.noio_other = class_stats(noio_other);
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
        m.aging = Some(Aging {
            workingset_refault_anon: delta(b, a, "workingset_refault_anon"),
            workingset_refault_file: delta(b, a, "workingset_refault_file"),
            pgactivate: delta(b, a, "pgactivate"),
            pgdeactivate: delta(b, a, "pgdeactivate"),
            pgscan_kswapd: delta(b, a, "pgscan_kswapd"),
            pgsteal_kswapd: delta(b, a, "pgsteal_kswapd"),
        });
    }
    if let Some(stats) = &m.mglru {
        m.not_reproduced =
            failed_preconditions_mglru(&m.preconditions, m.noio.calls, m.allocstall, stats);
    } else {
        m.not_reproduced =
            failed_preconditions(&m.preconditions, m.noio.calls, m.allocstall, &m.corner);
    }
    // The cause comes first: a hog that ended (a global OOM kill takes it,
    // the largest task) explains every other failed precondition.
    if let Some(gone) = hog_gone(records) {
        m.not_reproduced.insert(0, gone);
    }
    Some(m)
}

/// "the hog is gone ..." when the guest said that the hog ended before the
/// reads did.
fn hog_gone(records: &[Record]) -> Option<String> {
    records.iter().find_map(|r| match r {
        Record::Setup { step, detail, .. } if step.starts_with("hog") => detail
            .find(mmci_record::HOG_GONE)
            .map(|at| format!("{} (set-up step {step})", &detail[at..])),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::noio::gfp::DM_BUFIO_GFP;

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

    #[test]
    fn priority_0_time_per_call() {
        // A call whose events are all at priority 0, for `us` of its time.
        let at_prio0 = |us: u64, reclaimed: u64| ReclaimCall {
            begin_us: 1,
            latency_us: us,
            file_reclaimed: reclaimed,
            steps: vec![mmci_record::ReclaimStep {
                round: 1,
                priority: 0,
                first_us: 1,
                last_us: 1 + us,
                ..mmci_record::ReclaimStep::default()
            }],
            ..ReclaimCall::default()
        };
        let calls = [
            at_prio0(1000, 0),
            at_prio0(3000, 4),
            at_prio0(2000, 0),
            call("GFP_NOIO", 50, 1, Some(12), 0, 0),
        ];
        let s = class_stats(&calls);
        assert_eq!(
            s.prio0,
            Some(Prio0Time {
                p50_us: 1000,
                p90_us: 3000,
                max_us: 3000,
                total_us: 6000
            })
        );
        assert_eq!(s.reclaimed, 4);
        // No calls: no time at priority 0 (measured, and zero).
        assert_eq!(class_stats(&[]).prio0, Some(Prio0Time::default()));
        // A run recorded before the field existed: not measured.
        let mut old = serde_json::to_value(&s).unwrap();
        old.as_object_mut().unwrap().remove("prio0");
        let old: ClassStats = serde_json::from_value(old).unwrap();
        assert_eq!(old.prio0, None);
    }

    #[test]
    fn the_rfc_condition_per_call() {
        let c = |prio: Option<u32>, swapcache: Option<u64>, anon: u64| ReclaimCall {
            min_priority: prio,
            swapcache_max_bytes: swapcache,
            anon_min_bytes: Some(anon),
            ..ReclaimCall::default()
        };
        let big = 400 << 20;
        let cases = [
            // Below SWAP_CLUSTER_MAX pages, however large anon is.
            (c(Some(0), Some(0), big), Some(true)),
            (c(Some(0), Some(127 << 10), big), Some(true)),
            (c(Some(0), Some(128 << 10), big), Some(false)),
            // anon >> 6 is the bound when anon is small: 64 KiB of 4 MiB.
            (c(Some(0), Some(60 << 10), 4 << 20), Some(true)),
            (c(Some(0), Some(64 << 10), 4 << 20), Some(false)),
            (c(Some(1), Some(0), big), Some(false)),
            (c(None, Some(0), big), Some(false)),
            (c(Some(0), None, big), None),
            // Priority 0 seen only through a memcg visit (nothing scanned).
            (
                ReclaimCall {
                    steps: vec![mmci_record::ReclaimStep {
                        priority: 0,
                        memcg_visits: 2,
                        ..Default::default()
                    }],
                    ..c(Some(1), Some(0), big)
                },
                Some(true),
            ),
        ];
        for (i, (call, want)) in cases.iter().enumerate() {
            assert_eq!(in_corner(call), *want, "case {i}");
        }
        let k = corner(cases.iter().map(|(c, _)| c));
        assert_eq!((k.prio0_calls, k.condition_true, k.unread), (7, 4, 1));
        assert_eq!(k.swapcache_max_bytes, Some(128 << 10));
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
        let p = super::super::preconditions::held();
        let records = vec![
            snap(
                Phase::Before,
                &[
                    ("allocstall_dma32", 5),
                    ("allocstall_normal", 1),
                    ("pgscan_direct", 100),
                ],
            ),
            Record::ReclaimCall(ReclaimCall {
                swapcache_max_bytes: Some(0),
                anon_min_bytes: Some(400 << 20),
                ..call(DM_BUFIO_GFP, 5000, 0, Some(0), 9000, 8000)
            }),
            Record::ReclaimCall(call(DM_BUFIO_GFP, 300, 3, Some(11), 10, 0)),
            Record::ReclaimCall(call("GFP_NOIO|__GFP_HIGHMEM", 700, 0, Some(0), 50, 40)),
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
            super::super::preconditions::record_of(&p),
            Record::Reader {
                reads: 1000,
                errors: 0,
                elapsed_ms: 10_000,
                first_error: None,
            },
        ];
        let m = noio_metrics(&records).unwrap();
        assert!(m.reproduced(), "{:?}", m.not_reproduced);
        assert_eq!((m.noio.calls, m.noio_other.calls, m.other.calls), (2, 1, 1));
        assert_eq!(m.noio.anon_scanned_prio0, 8000);
        assert_eq!((m.corner.prio0_calls, m.corner.condition_true), (1, 1));
        assert_eq!(m.worst.as_ref().map(|c| c.latency_us), Some(5000));
        let mut lossy = records.clone();
        if let Record::ReclaimCall(c) = &mut lossy[1] {
            c.events_lost = true;
        }
        let m = noio_metrics(&lossy).unwrap();
        assert_eq!(
            m.worst.as_ref().map(|c| c.latency_us),
            Some(300),
            "the slowest call with all its events"
        );
        assert_eq!(m.other.min_priority, Some(12));
        assert_eq!((m.allocstall, m.pgscan_direct), (5, 9000));
        assert_eq!((m.reads, m.orphan_ends), (1000, 1));
        assert!(
            noio_metrics(&records[..6]).is_none(),
            "no verdict before the preconditions"
        );

        // The hog ended during the reads: named first, whatever else held.
        let setup = |step: &str, detail: &str| Record::Setup {
            step: step.into(),
            detail: detail.into(),
            ms: 0,
        };
        let mut gone = records.clone();
        gone.push(setup("hog", "475 MiB (MemTotal 491 MiB), 4 threads"));
        gone.push(setup(
            "hog-end",
            "60000 random writes a second over the reads; the hog is gone before the end (signal: 9 (SIGKILL))",
        ));
        let m = noio_metrics(&gone).unwrap();
        assert_eq!(
            m.not_reproduced,
            ["the hog is gone before the end (signal: 9 (SIGKILL)) (set-up step hog-end)"]
        );
        let mut lived = records.clone();
        lived.push(setup(
            "hog-end",
            "60000 random writes a second over the reads; ran to the end",
        ));
        assert!(noio_metrics(&lived).unwrap().reproduced());
    }

    /// A run whose job asks for MGLRU is judged by the MGLRU cell's set
    /// and carries its figures; the same records without the job's word
    /// are a classic-LRU run that did not reach the RFC's corner.
    #[test]
    fn the_mglru_cell_is_known_by_its_job() {
        let mut p = super::super::preconditions::held();
        p.lru_gen = "0x0007".into();
        let hello = |noio_mglru| Record::Hello {
            kernel_release: "6.12".into(),
            arch: "x86_64".into(),
            cpus: 2,
            mem_total_kb: 500_000,
            uptime_ms: 1,
            job: mmci_record::GuestJob {
                scenario: mmci_record::Scenario::NoioVerity,
                noio_mglru,
                ..mmci_record::GuestJob::default()
            },
        };
        let isolated = ReclaimCall {
            isolate: Some(mmci_record::IsolateSums {
                anon_passes: 3,
                anon_scanned: 200,
                anon_skipped: 192,
                ..Default::default()
            }),
            classic_passes: Some(0),
            ..call(DM_BUFIO_GFP, 900, 0, Some(3), 0, 0)
        };
        let records = |noio_mglru| {
            vec![
                hello(noio_mglru),
                Record::ReclaimCall(isolated.clone()),
                super::super::preconditions::record_of(&p),
            ]
        };
        let m = noio_metrics(&records(true)).unwrap();
        assert!(m.reproduced(), "{:?}", m.not_reproduced);
        let g = m.mglru.as_ref().unwrap();
        assert_eq!(
            (g.traced_calls, g.sums.anon_skipped, g.classic_passes),
            (1, 192, Some(0))
        );
        let m = noio_metrics(&records(false)).unwrap();
        assert_eq!(m.mglru, None);
        assert_eq!(
            m.not_reproduced,
            [
                "MGLRU was on (lru_gen/enabled 0x0007)",
                "no dm-bufio GFP_NOIO call reached priority 0"
            ]
        );
    }
}
