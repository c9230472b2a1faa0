//! Scenario B's MGLRU control cell (`mglru: true`): what the dm-bufio
//! GFP_NOIO calls did under MGLRU, from the per-call sums of
//! mm_vmscan_lru_isolate (scan_folios()) and of the shrink_lruvec() kprobe.
//!
//! Why these and not the classic cell's figures: MGLRU never calls
//! get_scan_count() (shrink_node() hands a root reclaimer to
//! lru_gen_shrink_node() first), so the RFC's branch there cannot be
//! reached, and evict_folios() fires mm_vmscan_lru_shrink_inactive only
//! after it isolated something, so the shrink events miss exactly the
//! passes that found nothing to take. What MGLRU does without __GFP_IO
//! (mm/vmscan.c of 6.12): isolate_folios() tries file first (`else if
//! (!(sc->gfp_mask & __GFP_IO)) type = LRU_GEN_FILE;`, unless anon's
//! oldest generation is older), and isolate_folio() refuses dirty folios
//! and anon not in the swap cache (`/* swap constrained */`), which
//! scan_folios() counts as skipped and stops on after MIN_LRU_BATCH of
//! them. The isolate sums show how much anon that still looks at.

use mmci_record::{IsolateSums, ReclaimCall};
use serde::{Deserialize, Serialize};

/// The MGLRU figures of one run's dm-bufio calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MglruStats {
    /// dm-bufio calls that carried isolate sums (all of them when the
    /// event was traced for the whole run).
    pub traced_calls: u64,
    /// Their mm_vmscan_lru_isolate events, summed.
    pub sums: IsolateSums,
    /// The most anon one call looked at.
    pub max_anon_scanned_one_call: u64,
    /// shrink_lruvec() entries during the calls: the classic LRU's path,
    /// where get_scan_count() and the RFC's branch are. None when the
    /// probe was not in place for every traced call.
    pub classic_passes: Option<u64>,
}

impl MglruStats {
    /// Share of the anon looked at that isolate_folio() refused: the
    /// scanning a reclaimer without __GFP_IO does for nothing. None when no
    /// anon was looked at.
    pub fn anon_skipped_share(&self) -> Option<f64> {
        let s = &self.sums;
        (s.anon_scanned > 0).then(|| s.anon_skipped as f64 / s.anon_scanned as f64)
    }
}

/// Sums the isolate events of `calls` (a run's dm-bufio calls).
pub fn mglru_stats<'a>(calls: impl IntoIterator<Item = &'a ReclaimCall>) -> MglruStats {
    let mut m = MglruStats {
        classic_passes: Some(0),
        ..MglruStats::default()
    };
    for c in calls {
        let Some(s) = &c.isolate else { continue };
        // Guest numbers: summed without wrapping or a debug-build panic.
        m.traced_calls += 1;
        let t = &mut m.sums;
        t.anon_passes = t.anon_passes.saturating_add(s.anon_passes);
        t.anon_scanned = t.anon_scanned.saturating_add(s.anon_scanned);
        t.anon_skipped = t.anon_skipped.saturating_add(s.anon_skipped);
        t.anon_taken = t.anon_taken.saturating_add(s.anon_taken);
        t.file_passes = t.file_passes.saturating_add(s.file_passes);
        t.file_scanned = t.file_scanned.saturating_add(s.file_scanned);
        t.file_skipped = t.file_skipped.saturating_add(s.file_skipped);
        t.file_taken = t.file_taken.saturating_add(s.file_taken);
        m.max_anon_scanned_one_call = m.max_anon_scanned_one_call.max(s.anon_scanned);
        // A call without the count makes the run's total unknown, not smaller.
        m.classic_passes = match (m.classic_passes, c.classic_passes) {
            (Some(n), Some(k)) => Some(n.saturating_add(u64::from(k))),
            _ => None,
        };
    }
    if m.traced_calls == 0 {
        m.classic_passes = None;
    }
    m
}

/// The run report's rows for the MGLRU cell.
pub fn rows(m: &MglruStats) -> Vec<(String, String)> {
    let s = &m.sums;
    let share = m
        .anon_skipped_share()
        .map_or(String::new(), |v| format!(" ({:.0}% skipped)", v * 100.0));
    vec![
        (
            "MGLRU: dm-bufio calls with isolate sums".into(),
            m.traced_calls.to_string(),
        ),
        (
            "MGLRU anon: passes / scanned / skipped / isolated".into(),
            format!(
                "{} / {} / {} / {}{share}",
                s.anon_passes, s.anon_scanned, s.anon_skipped, s.anon_taken
            ),
        ),
        (
            "MGLRU file: passes / scanned / skipped / isolated".into(),
            format!(
                "{} / {} / {} / {}",
                s.file_passes, s.file_scanned, s.file_skipped, s.file_taken
            ),
        ),
        (
            "MGLRU most anon scanned in one call".into(),
            m.max_anon_scanned_one_call.to_string(),
        ),
        (
            "shrink_lruvec() entries (get_scan_count's path)".into(),
            m.classic_passes
                .map_or("not counted (no probe)".into(), |n| n.to_string()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(isolate: Option<IsolateSums>, classic: Option<u32>) -> ReclaimCall {
        ReclaimCall {
            isolate,
            classic_passes: classic,
            ..ReclaimCall::default()
        }
    }

    fn sums(anon: (u64, u64, u64), file: (u64, u64)) -> IsolateSums {
        IsolateSums {
            anon_passes: 1,
            anon_scanned: anon.0,
            anon_skipped: anon.1,
            anon_taken: anon.2,
            file_passes: 1,
            file_scanned: file.0,
            file_taken: file.1,
            ..IsolateSums::default()
        }
    }

    /// Each row: the calls, then traced calls, anon scanned / skipped /
    /// taken, file scanned / taken, most anon in one call, shrink_lruvec()
    /// entries, share of anon skipped.
    #[test]
    fn sums_over_the_calls() {
        type Want = (u64, [u64; 5], u64, Option<u64>, Option<f64>);
        let cases: Vec<(Vec<ReclaimCall>, Want)> = vec![
            // No call: nothing measured, no count of classic passes.
            (vec![], (0, [0; 5], 0, None, None)),
            // Classic-LRU calls (no isolate sums) are not counted.
            (vec![call(None, None)], (0, [0; 5], 0, None, None)),
            (
                vec![
                    call(Some(sums((70, 64, 0), (30, 0))), Some(0)),
                    call(Some(sums((12, 2, 9), (0, 0))), Some(0)),
                    call(None, None),
                ],
                (2, [82, 66, 9, 30, 0], 70, Some(0), Some(66.0 / 82.0)),
            ),
            // One call without the probe: the total is unknown.
            (
                vec![
                    call(Some(sums((64, 64, 0), (0, 0))), Some(3)),
                    call(Some(sums((0, 0, 0), (5, 5))), None),
                ],
                (2, [64, 64, 0, 5, 5], 64, None, Some(1.0)),
            ),
            (
                vec![call(Some(sums((0, 0, 0), (8, 8))), Some(2))],
                (1, [0, 0, 0, 8, 8], 0, Some(2), None),
            ),
        ];
        for (i, (calls, want)) in cases.iter().enumerate() {
            let m = mglru_stats(calls);
            let s = &m.sums;
            let got: Want = (
                m.traced_calls,
                [
                    s.anon_scanned,
                    s.anon_skipped,
                    s.anon_taken,
                    s.file_scanned,
                    s.file_taken,
                ],
                m.max_anon_scanned_one_call,
                m.classic_passes,
                m.anon_skipped_share(),
            );
            assert_eq!(&got, want, "case {i}");
        }
    }

    #[test]
    fn report_rows_say_what_was_not_counted() {
        let m = mglru_stats(&[call(Some(sums((70, 64, 0), (30, 0))), None)]);
        let rows = rows(&m);
        assert_eq!(rows[1].1, "1 / 70 / 64 / 0 (91% skipped)");
        assert_eq!(rows[4].1, "not counted (no probe)");
    }
}
