//! Scenario C's trace: which VMSCAN_THROTTLE_ISOLATED waits are
//! compaction's and how long compaction ran, from three tracepoints read
//! off trace_pipe.
//!
//! mm_vmscan_throttled is emitted by reclaim_throttle(), which both reclaim
//! (shrink_inactive_list(), and MGLRU's eviction with patch 2 of the
//! series) and compaction (isolate_migratepages_block() looping on its
//! too_many_isolated()) call, in the context of the task that waits. So a
//! wait between mm_compaction_begin and mm_compaction_end of the same pid
//! is compaction's: compact_zone() emits both around its isolate/migrate
//! loop and never enters reclaim in between (its migration targets come
//! from its own free scanner). Every other wait is reclaim's. This is exact
//! where a comm filter is not (the faulting task also direct-reclaims) and
//! needs no kprobe on a static function that may be inlined.

use std::collections::{BTreeMap, HashMap};

use mmci_record::ThrottleStat;

use crate::reclaim_trace::{lost_marker, parse_timestamp_us};
use crate::trace::{self, parse_throttle_line};

/// Keys of the Throttle record's `by_reason` besides the plain reasons
/// (reclaim's waits). The host reads the same strings
/// (orchestrator/src/scenario/compaction/metrics.rs).
pub const IN_COMPACTION: &str = "compaction/";
/// compact_zone() windows of the THP faulter (direct compaction): count,
/// µs in them (`usec_delayed_sum`), the longest.
pub const FAULTER_WINDOWS: &str = "compact_zone/faulter";
/// compact_zone() windows of every other task (kcompactd, khugepaged).
pub const OTHER_WINDOWS: &str = "compact_zone/other";

/// The events this reads.
pub const EVENTS: [&str; 3] = [
    "vmscan/mm_vmscan_throttled",
    "compaction/mm_compaction_begin",
    "compaction/mm_compaction_end",
];

/// One trace line's task, time and event.
#[derive(Debug, PartialEq, Eq)]
pub struct Line<'a> {
    pub comm: &'a str,
    pub pid: u32,
    pub ts_us: u64,
    pub event: &'a str,
}

/// `<comm>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: <fields>`; a comm
/// may hold dashes, so the pid follows the last dash before ` [`.
pub fn parse_line(line: &str) -> Option<Line<'_>> {
    let open = line.find(" [")?;
    let (comm, pid) = line[..open].trim().rsplit_once('-')?;
    let rest = &line[open..];
    let colon = rest.find(": ")?;
    let ts_us = parse_timestamp_us(rest[..colon].split_whitespace().last()?)?;
    let event = rest[colon + 2..].split(':').next()?;
    Some(Line {
        comm,
        pid: pid.parse().ok()?,
        ts_us,
        event,
    })
}

/// The running attribution: open compact_zone() windows by pid and the
/// totals so far.
#[derive(Debug, Default)]
pub struct Attribution {
    /// The faulter's comm (its thread name).
    faulter: String,
    open: HashMap<u32, u64>,
    pub totals: BTreeMap<String, ThrottleStat>,
    /// Events trace_pipe said it lost (`[LOST n EVENTS]`).
    pub lost: u64,
}

impl Attribution {
    pub fn new(faulter: &str) -> Self {
        Attribution {
            faulter: faulter.to_string(),
            ..Default::default()
        }
    }

    pub fn feed(&mut self, text: &str) {
        if let Some(n) = lost_marker(text) {
            self.lost += n;
            // A window may have lost its end: none of the open ones can be
            // trusted to still be open.
            self.open.clear();
            return;
        }
        let Some(line) = parse_line(text) else { return };
        match line.event {
            "mm_compaction_begin" => {
                self.open.insert(line.pid, line.ts_us);
            }
            "mm_compaction_end" => {
                if let Some(begin) = self.open.remove(&line.pid) {
                    let key = if line.comm == self.faulter {
                        FAULTER_WINDOWS
                    } else {
                        OTHER_WINDOWS
                    };
                    add(&mut self.totals, key, line.ts_us.saturating_sub(begin));
                }
            }
            "mm_vmscan_throttled" => {
                if let Some(ev) = parse_throttle_line(text) {
                    let key = if self.open.contains_key(&line.pid) {
                        format!("{IN_COMPACTION}{}", ev.reason)
                    } else {
                        ev.reason.clone()
                    };
                    trace::account(&mut self.totals, trace::ThrottleEvent { reason: key, ..ev });
                }
            }
            _ => {}
        }
    }
}

fn add(totals: &mut BTreeMap<String, ThrottleStat>, key: &str, us: u64) {
    let s = totals.entry(key.to_string()).or_default();
    s.count += 1;
    s.usec_delayed_sum += us;
    s.usec_delayed_max = s.usec_delayed_max.max(us);
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "mm_compaction_begin: zone_start=0x1000 migrate_pfn=0x1000 free_pfn=0x1ffe0 zone_end=0x20000, mode=sync";
    const END: &str = "mm_compaction_end: zone_start=0x1000 migrate_pfn=0x1400 free_pfn=0x1fe00 zone_end=0x20000, mode=sync status=success";
    const THROTTLED: &str = "mm_vmscan_throttled: nid=0 usec_timeout=20000 usect_delayed=4000 reason=VMSCAN_THROTTLE_ISOLATED";

    fn line(comm_pid: &str, ts: &str, event: &str) -> String {
        format!("  {comm_pid} [001] ..... {ts}: {event}")
    }

    #[test]
    fn header_fields() {
        let cases = [
            (
                line("mmci-thp-77", "12.000100", BEGIN),
                Some(("mmci-thp", 77, 12_000_100, "mm_compaction_begin")),
            ),
            (
                line("kworker/u9:1-kverityd-5", "1.5", THROTTLED),
                Some(("kworker/u9:1-kverityd", 5, 1_500_000, "mm_vmscan_throttled")),
            ),
            ("CPU:1 [LOST 3 EVENTS]".to_string(), None),
            ("garbage".to_string(), None),
        ];
        for (text, want) in cases {
            let got = parse_line(&text).map(|l| (l.comm, l.pid, l.ts_us, l.event));
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn waits_inside_a_window_of_the_same_pid_are_compactions() {
        // (lines, key, count, µs sum)
        let cases: Vec<(Vec<String>, &str, u64, u64)> = vec![
            // Inside the faulter's window.
            (
                vec![
                    line("mmci-thp-7", "1.000000", BEGIN),
                    line("mmci-thp-7", "1.004000", THROTTLED),
                    line("mmci-thp-7", "1.010000", END),
                ],
                "compaction/VMSCAN_THROTTLE_ISOLATED",
                1,
                4000,
            ),
            // Another pid's window is open: the wait is reclaim's.
            (
                vec![
                    line("kcompactd0-30", "1.000000", BEGIN),
                    line("guest-init-99", "1.004000", THROTTLED),
                ],
                "VMSCAN_THROTTLE_ISOLATED",
                1,
                4000,
            ),
            // After its window closed: reclaim's.
            (
                vec![
                    line("mmci-thp-7", "1.000000", BEGIN),
                    line("mmci-thp-7", "1.001000", END),
                    line("mmci-thp-7", "1.004000", THROTTLED),
                ],
                "VMSCAN_THROTTLE_ISOLATED",
                1,
                4000,
            ),
            // Windows: the faulter's and the others' apart.
            (
                vec![
                    line("mmci-thp-7", "1.000000", BEGIN),
                    line("mmci-thp-7", "1.010000", END),
                    line("mmci-thp-7", "2.000000", BEGIN),
                    line("mmci-thp-7", "2.000500", END),
                ],
                FAULTER_WINDOWS,
                2,
                10_500,
            ),
            (
                vec![
                    line("kcompactd0-30", "1.000000", BEGIN),
                    line("kcompactd0-30", "1.000200", END),
                ],
                OTHER_WINDOWS,
                1,
                200,
            ),
            // A lost-events marker closes every open window.
            (
                vec![
                    line("mmci-thp-7", "1.000000", BEGIN),
                    "CPU:0 [LOST 12 EVENTS]".into(),
                    line("mmci-thp-7", "1.004000", THROTTLED),
                ],
                "VMSCAN_THROTTLE_ISOLATED",
                1,
                4000,
            ),
        ];
        for (lines, key, count, sum) in cases {
            let mut a = Attribution::new("mmci-thp");
            for l in &lines {
                a.feed(l);
            }
            let got = a.totals.get(key).map(|s| (s.count, s.usec_delayed_sum));
            assert_eq!(got, Some((count, sum)), "{lines:#?} {:?}", a.totals);
            // A wait is counted once, on one side.
            let waits: u64 = a
                .totals
                .iter()
                .filter(|(k, _)| k.ends_with("VMSCAN_THROTTLE_ISOLATED"))
                .map(|(_, s)| s.count)
                .sum();
            assert!(waits <= 1, "{:?}", a.totals);
        }
        let mut a = Attribution::new("mmci-thp");
        a.feed("CPU:0 [LOST 12 EVENTS]");
        assert_eq!(a.lost, 12);
    }
}
