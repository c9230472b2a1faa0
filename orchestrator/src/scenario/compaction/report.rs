//! Scenario C's lines in a run's report: compaction's counters, its
//! isolation waits apart from reclaim's, the isolation peak against
//! compaction's limit, the THP faults and the reclaimers.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::scenario::report::ms;
use crate::scenario::{CompactionMetrics, ScenarioMetrics};

/// The metric rows, compaction first.
pub fn rows(m: &CompactionMetrics) -> Vec<(String, String)> {
    let wait =
        |t: &mmci_record::ThrottleStat| format!("{} (delayed {})", t.count, ms(t.usec_delayed_sum));
    let mut rows = vec![
        (
            "compact_stall / success / fail".to_string(),
            format!(
                "{} / {} / {}",
                m.compact_stall, m.compact_success, m.compact_fail
            ),
        ),
        (
            "compact_migrate_scanned / isolated".to_string(),
            format!("{} / {}", m.compact_migrate_scanned, m.compact_isolated),
        ),
        (
            "compact_free_scanned".to_string(),
            m.compact_free_scanned.to_string(),
        ),
        (
            "THP faults: huge / fallback".to_string(),
            match m.thp_success_pct() {
                Some(p) => format!(
                    "{} / {} ({p:.1}% huge)",
                    m.thp_fault_alloc, m.thp_fault_fallback
                ),
                None => "- (no THP fault)".to_string(),
            },
        ),
        (
            "direct compaction (compact_zone of the faulter)".to_string(),
            format!(
                "{} calls, {} (longest {})",
                m.direct_compaction.count,
                ms(m.direct_compaction.usec_delayed_sum),
                ms(m.direct_compaction.usec_delayed_max)
            ),
        ),
        (
            "compact_zone of other tasks".to_string(),
            format!(
                "{} calls, {}",
                m.other_compaction.count,
                ms(m.other_compaction.usec_delayed_sum)
            ),
        ),
        (
            "ISOLATED waits in compaction".to_string(),
            wait(&m.compaction_throttled),
        ),
        (
            "ISOLATED waits in reclaim".to_string(),
            wait(&m.reclaim_throttled),
        ),
        (
            "nr_isolated peak / compaction's limit".to_string(),
            format!(
                "{} / {} pages (evictable LRU / 16 at the start)",
                m.nr_isolated_peak, m.isolation_limit
            ),
        ),
        (
            "reclaimers: touches".to_string(),
            format!(
                "{}{}",
                m.touches,
                if m.workload_oom_killed {
                    " (OOM-killed)"
                } else {
                    ""
                }
            ),
        ),
        ("reclaimers: OOM kills".to_string(), m.oom_kills.to_string()),
    ];
    if m.lost_events > 0 {
        rows.push(("trace events lost".into(), m.lost_events.to_string()));
    }
    rows
}

/// `Def::report_sections`.
pub fn sections(m: &ScenarioMetrics, _: Option<&crate::guest::image::ImageManifest>) -> String {
    let Some(m) = m.compaction() else {
        return String::new();
    };
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["metric", "value"]);
    for (k, v) in rows(m) {
        table.add_row(vec![k, v]);
    }
    if let Some(col) = table.column_mut(1) {
        col.set_cell_alignment(CellAlignment::Right);
    }
    format!("\n{table}\n")
}

/// A completed run in the runs table, in the shape its legend gives every
/// scenario (`ISOLATED throttles / nr_isolated peak / touches`):
/// compaction's waits + reclaim's, the peak, the reclaimers' touches, and
/// their OOM kills if any.
pub fn figure(m: &ScenarioMetrics) -> Option<String> {
    let m = m.compaction()?;
    Some(format!(
        "{}+{}/{}/{}{}",
        m.compaction_throttled.count,
        m.reclaim_throttled.count,
        m.nr_isolated_peak,
        m.touches,
        if m.oom_kills > 0 {
            format!(" oom {}", m.oom_kills)
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_figure() {
        let m = CompactionMetrics {
            compact_stall: 40,
            compact_success: 28,
            compact_fail: 12,
            thp_fault_alloc: 30,
            thp_fault_fallback: 10,
            nr_isolated_peak: 600,
            isolation_limit: 250,
            ..Default::default()
        };
        let rows = rows(&m);
        let row = |k: &str| rows.iter().find(|(n, _)| n == k).unwrap().1.clone();
        // (row, value)
        let cases = [
            ("compact_stall / success / fail", "40 / 28 / 12"),
            ("THP faults: huge / fallback", "30 / 10 (75.0% huge)"),
            (
                "nr_isolated peak / compaction's limit",
                "600 / 250 pages (evictable LRU / 16 at the start)",
            ),
        ];
        for (k, want) in cases {
            assert_eq!(row(k), want);
        }
        assert!(!rows.iter().any(|(k, _)| k == "trace events lost"));
        let run = ScenarioMetrics::Compaction(Box::new(m));
        assert_eq!(figure(&run).as_deref(), Some("0+0/600/0"));
        let killed = ScenarioMetrics::Compaction(Box::new(CompactionMetrics {
            oom_kills: 1,
            touches: 9472,
            ..Default::default()
        }));
        assert_eq!(figure(&killed).as_deref(), Some("0+0/0/9472 oom 1"));
        assert!(sections(&run, None).contains("compact_migrate_scanned"));
        assert_eq!(figure(&ScenarioMetrics::None), None);
    }
}
