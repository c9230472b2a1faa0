//! The terminal report of one run: what ran where, and scenario A's metrics.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::metrics::{MglruMetrics, THROTTLE_ISOLATED};
use crate::results::RunResult;

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// The lines above the table: outcome, kernel, accelerator, guest shape.
pub fn header(r: &RunResult) -> String {
    let job = &r.job;
    let mut out = format!(
        "run {}: {} ({})\n",
        r.id,
        r.classification.outcome.name(),
        r.classification.reason
    );
    let commit = r
        .kernel
        .tree_commit
        .as_deref()
        .map(|c| &c[..c.len().min(12)]);
    out.push_str(&format!(
        "kernel:  {}{}\n",
        r.kernel.release,
        match (&r.kernel.tree, commit) {
            (Some(t), Some(c)) => format!(" (tree {t} @ {c})"),
            _ => format!(" ({})", r.kernel.image.display()),
        }
    ));
    if let Some(hash) = &r.kernel.series_hash {
        let head = r.kernel.head_commit.as_deref().unwrap_or("?");
        out.push_str(&format!(
            "series:  {} applied, HEAD {}{}\n",
            &hash[..hash.len().min(12)],
            &head[..head.len().min(12)],
            if r.kernel.build_sandboxed == Some(true) {
                ", built sandboxed"
            } else {
                ""
            }
        ));
    }
    out.push_str(&format!("accel:   {} ({})\n", r.accel, r.accel_note));
    let swap = if !job.swap || r.swap_mb == 0 {
        "no swap".to_string()
    } else if job.swap_delay_ms > 0 {
        format!(
            "swap {} MiB on dm-delay {} ms",
            r.swap_mb, job.swap_delay_ms
        )
    } else {
        format!("swap {} MiB, no delay", r.swap_mb)
    };
    let memcg = if job.memcg_max_mb == 0 {
        "no memcg limit".to_string()
    } else {
        format!("memcg {} MiB", job.memcg_max_mb)
    };
    out.push_str(&format!(
        "guest:   {}, {} vCPUs, {} MiB, {memcg}, {swap}, MGLRU {}\n",
        r.arch,
        r.vcpus,
        r.memory_mb,
        on_off(job.mglru)
    ));
    out.push_str(&format!(
        "job:     {}: {} threads, {} MiB working set, {} s\n",
        job.scenario, job.threads, job.working_set_mb, job.duration_s
    ));
    out
}

fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

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
            "scan efficiency (pgsteal/pgscan)".to_string(),
            match m.scan_efficiency {
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
    rows
}

/// Header, the metrics table, and the crash report if there is one.
pub fn render_run(r: &RunResult) -> String {
    let mut out = header(r);
    if let Some(m) = &r.metrics {
        let mut table = Table::new();
        table
            .load_preset(presets::ASCII_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(vec!["metric", "value"]);
        for (k, v) in mglru_rows(m) {
            table.add_row(vec![k, v]);
        }
        if let Some(col) = table.column_mut(1) {
            col.set_cell_alignment(CellAlignment::Right);
        }
        out.push('\n');
        out.push_str(&table.to_string());
        out.push('\n');
    }
    if let Some(report) = &r.classification.crash_report {
        out.push_str("\nconsole:\n");
        for line in report.lines().take(20) {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
