//! Scenario A's lines in a run's report: its metrics table, in the seed
//! thread's order.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::scenario::report::ms;
use crate::scenario::{MglruMetrics, ScenarioMetrics, THROTTLE_ISOLATED};

use super::imbalance;

/// The metric rows of scenario A, in the seed thread's order.
pub fn mglru_rows(m: &MglruMetrics) -> Vec<(String, String)> {
    let mut rows = vec![
        (
            "OOM kills (memcg oom_kill)".to_string(),
            format!(
                "{}{}",
                m.oom_kills,
                if m.workload_oom_killed {
                    " (workload killed)"
                } else {
                    ""
                }
            ),
        ),
        (
            "memcg oom events".to_string(),
            m.memcg_oom_events.to_string(),
        ),
        (
            "memcg max events".to_string(),
            m.memcg_max_events.to_string(),
        ),
    ];
    // The isolation throttle is the series' headline: always shown, even at 0.
    let isolated = m
        .throttle
        .get(THROTTLE_ISOLATED)
        .cloned()
        .unwrap_or_default();
    rows.push((
        format!("mm_vmscan_throttled {THROTTLE_ISOLATED}"),
        format!(
            "{} (delayed {})",
            isolated.count,
            ms(isolated.usec_delayed_sum)
        ),
    ));
    for (reason, t) in m
        .throttle
        .iter()
        .filter(|(r, _)| r.as_str() != THROTTLE_ISOLATED)
    {
        rows.push((
            format!("mm_vmscan_throttled {reason}"),
            format!("{} (delayed {})", t.count, ms(t.usec_delayed_sum)),
        ));
    }
    rows.push((
        "throttle sleep, all reasons (mean asleep)".to_string(),
        format!(
            "{:.2} s ({})",
            m.throttle_sleep_s(),
            m.throttle_sleepers()
                .map_or("-".to_string(), |n| format!("{n:.2}"))
        ),
    ));
    if let Some(f) = m.early_wake_fraction(THROTTLE_ISOLATED) {
        rows.push((
            format!("{THROTTLE_ISOLATED} woken before the timeout"),
            format!("{:.1}%", f * 100.0),
        ));
    }
    if !m.isolated_by_task.is_empty() {
        let (own, others) = m.isolated_waits_split();
        let early = |t: &mmci_record::ThrottleStat| {
            format!("{} ({} early)", t.count, t.early_wakes.unwrap_or(0))
        };
        let names: Vec<&str> = m
            .isolated_by_task
            .keys()
            .filter(|t| !t.starts_with("mmci-w"))
            .map(String::as_str)
            .collect();
        rows.push((
            format!("{THROTTLE_ISOLATED} workload / other tasks"),
            if names.is_empty() {
                early(&own)
            } else {
                format!(
                    "{} / {} ({})",
                    early(&own),
                    early(&others),
                    names.join(", ")
                )
            },
        ));
    }
    if let Some(ms) = m.exit_after_kill_ms {
        rows.push(("exit after SIGKILL".to_string(), format!("{ms} ms")));
    }
    if m.pgsteal_kswapd + m.pgsteal_direct > 0 {
        rows.push((
            "pgsteal kswapd / direct".to_string(),
            format!("{} / {}", m.pgsteal_kswapd, m.pgsteal_direct),
        ));
    }
    if m.throttle_lost_events > 0 {
        rows.push((
            "trace events lost".into(),
            m.throttle_lost_events.to_string(),
        ));
    }
    rows.extend([
        (
            "nr_isolated peak (anon+file)".to_string(),
            format!(
                "{} (anon {}, file {})",
                m.nr_isolated_peak, m.nr_isolated_anon_peak, m.nr_isolated_file_peak
            ),
        ),
        (
            "touches".to_string(),
            format!("{} ({:.0}/s)", m.touches, m.touches_per_second()),
        ),
        (
            "reclaimed per isolated (pgsteal/pgscan)".to_string(),
            match m.reclaimed_per_isolated {
                Some(e) => format!("{e:.4} ({} / {})", m.pgsteal, m.pgscan),
                None => "- (nothing scanned)".to_string(),
            },
        ),
        (
            "pswpin / pswpout".to_string(),
            format!("{} / {}", m.pswpin, m.pswpout),
        ),
        ("pgmajfault".to_string(), m.pgmajfault.to_string()),
        (
            "workingset_refault anon / file".to_string(),
            format!(
                "{} / {}",
                m.workingset_refault_anon, m.workingset_refault_file
            ),
        ),
        (
            "PSI memory some / full".to_string(),
            format!("{} / {}", ms(m.psi_some_us), ms(m.psi_full_us)),
        ),
    ]);
    if let Some(b) = &m.balance {
        rows.push((
            "nr_isolated anon / file after the workload".to_string(),
            format!(
                "{} / {}{}",
                b.nr_isolated_anon,
                b.nr_isolated_file,
                match imbalance(b) {
                    Some(_) => " (does not balance)",
                    None => "",
                }
            ),
        ));
        if !b.negative.is_empty() {
            rows.push((
                "negative vmstat counters".to_string(),
                b.negative.join(", "),
            ));
        }
        if let Some(e) = &b.refresh_error {
            rows.push(("stat_refresh".to_string(), e.clone()));
        }
        rows.push((
            "workload cgroup removed".to_string(),
            match &b.cgroup_error {
                None if b.cgroup_removed => "yes".to_string(),
                None => "no".to_string(),
                Some(e) => format!("no ({e})"),
            },
        ));
    }
    rows
}

/// The metrics table; without `touches` for a script, which has no
/// built-in workload counting them.
pub fn table(m: &MglruMetrics, workload: bool) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["metric", "value"]);
    for (k, v) in mglru_rows(m) {
        if workload || k != "touches" {
            table.add_row(vec![k, v]);
        }
    }
    if let Some(col) = table.column_mut(1) {
        col.set_cell_alignment(CellAlignment::Right);
    }
    format!("\n{table}\n")
}

/// A completed run in the runs table: `throttles/peak/touches`, and its
/// OOM kills if any (a script's run too: its kernel-side counters).
pub fn figure(m: &ScenarioMetrics) -> Option<String> {
    let m = m.mglru()?;
    Some(format!(
        "{}/{}/{}{}",
        m.throttle_count(THROTTLE_ISOLATED),
        m.nr_isolated_peak,
        m.touches,
        if m.oom_kills > 0 {
            format!(" oom {}", m.oom_kills)
        } else {
            String::new()
        }
    ))
}

/// `registry::Def::report_sections` of scenario A.
pub fn sections(m: &ScenarioMetrics, _: Option<&crate::guest::image::ImageManifest>) -> String {
    m.mglru().map(|m| table(m, true)).unwrap_or_default()
}
