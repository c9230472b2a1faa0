//! Scenario B's preconditions: what a run must have met to count as
//! reproducing its case, never a pass otherwise. Two sets: the classic
//! LRU's, whose case is the RFC's corner (a dm-bufio call at priority 0
//! with the hog lruvec's swap cache under the RFC's bound, the condition of
//! its get_scan_count() branch), and the MGLRU control cell's, where that
//! corner cannot hold (MGLRU does not call get_scan_count()) and the case
//! is that dm-bufio's GFP_NOIO allocations entered direct reclaim at all.
//! The workload's own conditions (swap, anon over file, free memory under
//! min) are the same in both.

use mmci_record::{MemState, WatermarkStat};
use serde::{Deserialize, Serialize};

use super::gfp::DM_BUFIO_GFP;
use super::mglru::MglruStats;

/// "inactive_anon >> inactive_file": at least this many times more.
pub const ANON_TO_FILE_MIN: u64 = 8;

/// Scenario B's preconditions as the guest measured them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Preconditions {
    pub swappiness: u32,
    pub lru_gen: String,
    pub at_start: MemState,
    pub at_end: MemState,
    pub watermark: WatermarkStat,
}

/// The RFC's corner over a run's dm-bufio calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Corner {
    /// dm-bufio calls that reached priority 0.
    pub prio0_calls: u64,
    /// Those during which the swap cache condition held.
    pub condition_true: u64,
    /// Those without a swap cache reading (no verdict on them).
    pub unread: u64,
    /// The least swap cache headroom seen at priority 0 (bytes): the
    /// largest swap cache reading of a priority-0 call.
    pub swapcache_max_bytes: Option<u64>,
}

/// Why a classic-LRU run does not reproduce scenario B's case; empty when
/// it does.
///
/// Free memory under the min watermark is seen two ways: /proc/zoneinfo
/// readings every few ms (which can miss a short dip), and `allocstall`:
/// the allocator enters direct reclaim only after get_page_from_freelist()
/// failed at the min watermark (ALLOC_WMARK_MIN), so a direct-reclaim
/// stall is the kernel's own word that a zone was under min.
pub fn failed_preconditions(
    p: &Preconditions,
    noio_calls: u64,
    allocstall: u64,
    corner: &Corner,
) -> Vec<String> {
    let mut failed = Vec::new();
    if p.lru_gen != "0x0000" {
        failed.push(format!("MGLRU was on (lru_gen/enabled {})", p.lru_gen));
    }
    failed.extend(workload_failures(p));
    // The RFC's own condition, per call, replaces a look at the start.
    if noio_calls > 0 && corner.prio0_calls == 0 {
        failed.push("no dm-bufio GFP_NOIO call reached priority 0".into());
    } else if corner.prio0_calls > 0 && corner.condition_true == 0 {
        failed.push(format!(
            "no dm-bufio call at priority 0 had swapcache < min(anon >> 6, SWAP_CLUSTER_MAX) \
             ({} calls, {} without a reading, swap cache up to {})",
            corner.prio0_calls,
            corner.unread,
            corner
                .swapcache_max_bytes
                .map_or("-".to_string(), |b| format!("{} KiB", b >> 10))
        ));
    }
    failed.extend(pressure_failures(p, noio_calls, allocstall));
    failed
}

/// Why a run of the MGLRU cell does not reproduce its case; empty when it
/// does. The case is only that dm-bufio's GFP_NOIO allocations entered
/// direct reclaim under the same workload, with their scanning recorded
/// (the isolate event is the one that sees what MGLRU looked at): how much
/// anon they scanned is what the cell measures, not a condition of it.
pub fn failed_preconditions_mglru(
    p: &Preconditions,
    noio_calls: u64,
    allocstall: u64,
    mglru: &MglruStats,
) -> Vec<String> {
    let mut failed = Vec::new();
    // 0x0000 when off; empty when lru_gen/enabled could not be read.
    if p.lru_gen == "0x0000" || p.lru_gen.is_empty() {
        failed.push(format!(
            "MGLRU was off in the MGLRU cell (lru_gen/enabled {})",
            if p.lru_gen.is_empty() {
                "unread"
            } else {
                &p.lru_gen
            }
        ));
    }
    failed.extend(workload_failures(p));
    if noio_calls > 0 && mglru.traced_calls < noio_calls {
        failed.push(format!(
            "{} of {noio_calls} dm-bufio calls without mm_vmscan_lru_isolate sums (the event was not traced)",
            noio_calls - mglru.traced_calls
        ));
    }
    // Every traced call carries sums, zero when no isolate line was read;
    // a run whose calls read none at all (an event format the guest cannot
    // parse) would report "no anon scanned" from a tracer that saw nothing.
    if noio_calls > 0
        && mglru
            .sums
            .anon_passes
            .saturating_add(mglru.sums.file_passes)
            == 0
    {
        failed.push(format!(
            "no mm_vmscan_lru_isolate pass in {noio_calls} dm-bufio calls (the event's lines were not read)"
        ));
    }
    failed.extend(pressure_failures(p, noio_calls, allocstall));
    failed
}

/// What the workload must have set up, either LRU: anon that only a
/// reclaimer with __GFP_IO can reclaim (swap on, swappiness above 0, room
/// in swap) and that dominates the file LRU.
fn workload_failures(p: &Preconditions) -> Vec<String> {
    let mut failed = Vec::new();
    let s = &p.at_start;
    let mib = |bytes: u64| format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64);
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
    failed
}

/// The pressure, either LRU: free memory under min, and dm-bufio calls.
fn pressure_failures(p: &Preconditions, noio_calls: u64, allocstall: u64) -> Vec<String> {
    let mut failed = Vec::new();
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
        failed.push(format!("no dm-bufio direct-reclaim call ({DM_BUFIO_GFP})"));
    }
    failed
}

/// The guest's record of `p` (tests in metrics).
#[cfg(test)]
pub(super) fn record_of(p: &Preconditions) -> mmci_record::Record {
    mmci_record::Record::Preconditions {
        swappiness: p.swappiness,
        lru_gen: p.lru_gen.clone(),
        at_start: p.at_start.clone(),
        at_end: p.at_end.clone(),
        watermark: p.watermark.clone(),
    }
}

/// Preconditions that hold on the classic LRU (tests here and in metrics).
#[cfg(test)]
pub(super) fn held() -> Preconditions {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cornered() -> Corner {
        Corner {
            prio0_calls: 3,
            condition_true: 2,
            unread: 0,
            swapcache_max_bytes: Some(8192),
        }
    }

    #[test]
    fn preconditions_that_hold() {
        assert!(failed_preconditions(&held(), 2, 5, &cornered()).is_empty());
        assert_eq!(
            failed_preconditions(&held(), 0, 5, &Corner::default()),
            ["no dm-bufio direct-reclaim call (GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY|__GFP_NOMEMALLOC)"]
        );
        // A dip the zoneinfo readings missed still shows as a direct-reclaim stall.
        let mut missed = held();
        missed.watermark.below_min = 0;
        assert!(failed_preconditions(&missed, 2, 5, &cornered()).is_empty());
        assert_eq!(
            failed_preconditions(&held(), 2, 5, &Corner::default()),
            ["no dm-bufio GFP_NOIO call reached priority 0"]
        );
    }

    #[test]
    fn each_failed_precondition_is_named() {
        let mut p = held();
        p.lru_gen = "0x0007".into();
        p.swappiness = 0;
        p.at_start.inactive_file = 100 << 20;
        p.at_end.swap_free_kb = 0;
        p.watermark.below_min = 0;
        let hot = Corner {
            prio0_calls: 4,
            condition_true: 0,
            unread: 1,
            swapcache_max_bytes: Some(5 << 20),
        };
        let failed = failed_preconditions(&p, 1, 0, &hot);
        assert_eq!(
            failed,
            [
                "MGLRU was on (lru_gen/enabled 0x0007)",
                "vm.swappiness was 0",
                "swap was full",
                "inactive_anon 300.0 MiB is not 8x inactive_file 100.0 MiB",
                "no dm-bufio call at priority 0 had swapcache < min(anon >> 6, SWAP_CLUSTER_MAX) (4 calls, 1 without a reading, swap cache up to 5120 KiB)",
                "free memory never went under the min watermark (100 readings, lowest margin -20 pages, no allocstall)",
            ]
        );
        p.at_start.swap_total_kb = 0;
        assert!(failed_preconditions(&p, 1, 0, &hot).contains(&"no swap".to_string()));
    }

    /// The MGLRU cell's set: MGLRU must be on, the workload's and the
    /// pressure's conditions are the classic ones, the RFC's corner is
    /// not asked for, and every dm-bufio call must carry its isolate sums.
    #[test]
    fn the_mglru_cell_has_its_own_set() {
        let on = || Preconditions {
            lru_gen: "0x0007".into(),
            ..held()
        };
        let traced = |n| MglruStats {
            traced_calls: n,
            sums: mmci_record::IsolateSums {
                anon_passes: u32::try_from(n).unwrap(),
                ..Default::default()
            },
            ..MglruStats::default()
        };
        let cases: Vec<(Preconditions, u64, u64, MglruStats, Vec<&str>)> = vec![
            // Reproduced: dm-bufio calls, all traced; no priority 0 needed.
            (on(), 3, 5, traced(3), vec![]),
            (
                held(),
                3,
                5,
                traced(3),
                vec!["MGLRU was off in the MGLRU cell (lru_gen/enabled 0x0000)"],
            ),
            (
                Preconditions {
                    lru_gen: String::new(),
                    ..held()
                },
                3,
                5,
                traced(3),
                vec!["MGLRU was off in the MGLRU cell (lru_gen/enabled unread)"],
            ),
            (
                on(),
                3,
                5,
                traced(1),
                vec!["2 of 3 dm-bufio calls without mm_vmscan_lru_isolate sums (the event was not traced)"],
            ),
            // Every call traced, but no isolate line read in any of them.
            (
                on(),
                3,
                5,
                MglruStats {
                    traced_calls: 3,
                    ..MglruStats::default()
                },
                vec!["no mm_vmscan_lru_isolate pass in 3 dm-bufio calls (the event's lines were not read)"],
            ),
            (
                on(),
                0,
                5,
                traced(0),
                vec!["no dm-bufio direct-reclaim call (GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY|__GFP_NOMEMALLOC)"],
            ),
            (
                Preconditions {
                    swappiness: 0,
                    ..on()
                },
                2,
                0,
                traced(2),
                vec!["vm.swappiness was 0"],
            ),
        ];
        for (i, (p, calls, allocstall, m, want)) in cases.iter().enumerate() {
            assert_eq!(
                failed_preconditions_mglru(p, *calls, *allocstall, m),
                *want,
                "case {i}"
            );
        }
        // The classic set refuses the same run: its corner is not there.
        assert_eq!(
            failed_preconditions(&on(), 3, 5, &Corner::default()),
            [
                "MGLRU was on (lru_gen/enabled 0x0007)",
                "no dm-bufio GFP_NOIO call reached priority 0"
            ]
        );
    }
}
