//! The terminal report of one run: what ran where, and scenario A's or
//! scenario B's metrics, and for a script how it ended and its own figures.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use mmci_record::{GuestJob, Scenario, SwapBackend};

use crate::results::RunResult;
use crate::scenario::noio::{ClassStats, NoioMetrics, ANON_TO_FILE_MIN};
use crate::scenario::{MglruMetrics, ScriptMetrics, THROTTLE_ISOLATED};

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
        crate::report::untrusted::release(&r.kernel.release),
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
    if job.scenario == Scenario::NoioVerity {
        out.push_str(&noio_header(r, job));
        return out;
    }
    let swap = swap_text(r, job);
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

/// `swap 256 MiB on zram`, `swap 256 MiB on dm-delay 50 ms`, `no swap`.
fn swap_text(r: &RunResult, job: &GuestJob) -> String {
    match job.swap {
        _ if !job.swap.enabled() || r.swap_mb == 0 => "no swap".to_string(),
        SwapBackend::DmDelay if job.swap_delay_ms > 0 => format!(
            "swap {} MiB on dm-delay {} ms",
            r.swap_mb, job.swap_delay_ms
        ),
        SwapBackend::Zram => format!("swap {} MiB on zram", r.swap_mb),
        _ => format!("swap {} MiB, no delay", r.swap_mb),
    }
}

/// Scenario B's guest and job lines: it always runs MGLRU off and an
/// unlimited hog cgroup.
fn noio_header(r: &RunResult, job: &GuestJob) -> String {
    let hog = if job.hog_mb == 0 {
        "MemTotal - 16 MiB".to_string()
    } else {
        format!("{} MiB", job.hog_mb)
    };
    let pace = match job.hog_touch_rate {
        0 => "random writes unpaced".to_string(),
        n => format!("{n} random writes/s"),
    };
    let reads = if job.reads == 0 {
        format!("for {} s", job.duration_s)
    } else {
        format!("{} reads (at most {} s)", job.reads, job.duration_s)
    };
    format!(
        "guest:   {}, {} vCPUs, {} MiB, {}, swappiness {}, MGLRU off\n\
         job:     {}: hog {hog} ({} threads, {pace}), dm-verity {} MiB, {} O_DIRECT readers {reads}, dm-bufio cache {} B\n",
        r.arch,
        r.vcpus,
        r.memory_mb,
        swap_text(r, job),
        job.swappiness,
        job.scenario,
        job.hog_threads,
        job.verity_mb,
        job.readers,
        job.bufio_cache_bytes
    )
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn ms_f(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

/// Scenario B's rows: preconditions, the reads, the counters.
pub fn noio_rows(m: &NoioMetrics) -> Vec<(String, String)> {
    let p = &m.preconditions;
    let s = &p.at_start;
    let mut rows = vec![(
        "preconditions".to_string(),
        if m.reproduced() {
            "held".to_string()
        } else {
            format!("NOT HELD ({})", m.not_reproduced.len())
        },
    )];
    // One row per failed condition: they are the reason the run counts for nothing.
    for why in &m.not_reproduced {
        rows.push(("  not held".to_string(), why.clone()));
    }
    rows.push((
        "hog inactive_anon / inactive_file (start)".into(),
        format!(
            "{} / {} ({}, need >= {ANON_TO_FILE_MIN}x)",
            mib(s.inactive_anon),
            mib(s.inactive_file),
            if s.inactive_file == 0 {
                "file LRU empty".to_string()
            } else {
                format!("{:.0}x", s.inactive_anon as f64 / s.inactive_file as f64)
            }
        ),
    ));
    rows.push((
        "hog anon (start / end)".into(),
        format!("{} / {}", mib(s.anon), mib(p.at_end.anon)),
    ));
    rows.push((
        "hog swapcached (start / end)".into(),
        format!("{} / {}", mib(s.swapcached), mib(p.at_end.swapcached)),
    ));
    let k = &m.corner;
    rows.push((
        "dm-bufio calls at priority 0".into(),
        format!(
            "{}, {} with swapcache < min(anon >> 6, SWAP_CLUSTER_MAX) during the call{}",
            k.prio0_calls,
            k.condition_true,
            if k.unread > 0 {
                format!(", {} without a reading", k.unread)
            } else {
                String::new()
            }
        ),
    ));
    rows.push((
        "swap free (start / end)".into(),
        format!(
            "{} / {} of {}",
            mib(s.swap_free_kb << 10),
            mib(p.at_end.swap_free_kb << 10),
            mib(s.swap_total_kb << 10)
        ),
    ));
    rows.push((
        "free < min watermark".into(),
        format!(
            "{} of {} readings (lowest free - min: {} pages), allocstall {}",
            p.watermark.below_min,
            p.watermark.samples,
            p.watermark
                .lowest_margin_pages
                .map_or("-".to_string(), |v| v.to_string()),
            m.allocstall
        ),
    ));
    rows.push((
        "swappiness / lru_gen".into(),
        format!("{} / {}", p.swappiness, p.lru_gen),
    ));
    rows.push((
        "O_DIRECT reads of dm-verity".into(),
        format!(
            "{} in {:.1} s, {} errors{}",
            m.reads,
            m.reader_ms as f64 / 1000.0,
            m.read_errors,
            m.read_first_error
                .as_deref()
                .map_or(String::new(), |e| format!(" (first: {e})"))
        ),
    ));
    rows.push((
        "allocstall / pgscan_direct / pgsteal_direct".into(),
        format!(
            "{} / {} / {}",
            m.allocstall, m.pgscan_direct, m.pgsteal_direct
        ),
    ));
    rows.push((
        "pgscan_anon / pgsteal_anon".into(),
        format!("{} / {}", m.pgscan_anon, m.pgsteal_anon),
    ));
    rows.push((
        "pswpin / pswpout".into(),
        format!("{} / {}", m.pswpin, m.pswpout),
    ));
    if m.lost_events > 0 || m.unpaired_begins > 0 || m.orphan_ends > 0 {
        rows.push((
            "trace: lost / unpaired begins / orphan ends".into(),
            format!(
                "{} / {} / {}",
                m.lost_events, m.unpaired_begins, m.orphan_ends
            ),
        ));
    }
    rows
}

/// Scenario B's per-class rows: (what, dm-bufio, other GFP_NOIO, __GFP_IO).
pub fn noio_class_rows(m: &NoioMetrics) -> Vec<[String; 4]> {
    let row = |what: &str, f: &dyn Fn(&ClassStats) -> String| {
        [what.to_string(), f(&m.noio), f(&m.noio_other), f(&m.other)]
    };
    vec![
        row("calls", &|c| c.calls.to_string()),
        row("latency p50 / p99 / max (ms)", &|c| {
            if c.calls == 0 {
                "-".into()
            } else {
                format!(
                    "{} / {} / {}",
                    ms_f(c.latency_p50_us),
                    ms_f(c.latency_p99_us),
                    ms_f(c.latency_max_us)
                )
            }
        }),
        row("nr_reclaimed == 0", &|c| match c.zero_reclaimed_share() {
            Some(share) => format!("{} ({:.0}%)", c.zero_reclaimed, share * 100.0),
            None => "-".into(),
        }),
        row("min priority", &|c| {
            c.min_priority.map_or("-".into(), |p| p.to_string())
        }),
        row("anon / file scanned", &|c| {
            format!("{} / {}", c.anon_scanned, c.file_scanned)
        }),
        row("anon scanned at priority 0", &|c| {
            c.anon_scanned_prio0.to_string()
        }),
        row("most anon scanned in one call", &|c| {
            c.max_anon_scanned_one_call.to_string()
        }),
    ]
}

fn noio_tables(m: &NoioMetrics) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["scenario B", "value"]);
    for (k, v) in noio_rows(m) {
        table.add_row(vec![k, v]);
    }
    let mut calls = Table::new();
    calls
        .load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "direct reclaim",
            "dm-bufio GFP_NOIO",
            "other GFP_NOIO",
            "with __GFP_IO",
        ]);
    for r in noio_class_rows(m) {
        calls.add_row(r.to_vec());
    }
    for col in 1..4 {
        if let Some(c) = calls.column_mut(col) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let worst = match &m.worst {
        Some(w) => format!("\n{}", worst_call_table(w)),
        None => String::new(),
    };
    format!("\n{table}\n\n{calls}\n{worst}")
}

/// The slowest dm-bufio call of the run, round by round.
fn worst_call_table(w: &mmci_record::ReclaimCall) -> String {
    use crate::analysis::anatomy;
    let rounds = crate::scenario::noio::rounds(w);
    let mut t = Table::new();
    t.load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(anatomy::COLUMNS.to_vec());
    for r in &rounds {
        t.add_row(vec![
            r.round.to_string(),
            anatomy::priority_range(r),
            anatomy::opt(r.memcg_visits),
            r.anon_scanned.to_string(),
            r.file_scanned.to_string(),
            r.reclaimed.to_string(),
            format!("{:.1}", r.ms),
        ]);
    }
    format!(
        "slowest dm-bufio call: {} ({}), {:.1} ms, reclaimed {}, {} memcg(s), swap cache up to {}{}\n{t}\n",
        w.comm,
        w.pid,
        w.latency_us as f64 / 1000.0,
        w.nr_reclaimed,
        anatomy::opt(w.memcgs_visited),
        anatomy::kib(w.swapcache_max_bytes),
        if w.events_lost {
            " (trace events lost during it)"
        } else {
            ""
        }
    )
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

/// Scenario script: how it ended, its own metrics, the end of its output.
pub fn script_section(
    s: &ScriptMetrics,
    image: Option<&crate::guest::image::ImageManifest>,
) -> String {
    let mut out = format!("\nscript {}: {}", s.name, s.ending());
    if let Some(i) = image {
        out.push_str(&format!(" in image {}", i.summary()));
    }
    out.push('\n');
    for (k, v) in &s.metrics {
        out.push_str(&format!("  {k} = {v}\n"));
    }
    for b in &s.bad_metric_lines {
        out.push_str(&format!("  unparsed metric line: {b}\n"));
    }
    if !s.output_tail.is_empty() {
        out.push_str("output (last lines; `!` = stderr):\n");
        for l in &s.output_tail {
            out.push_str("  | ");
            out.push_str(l);
            out.push('\n');
        }
    }
    if s.dropped_lines > 0 {
        out.push_str(&format!(
            "  ({} lines over the cap were not streamed)\n",
            s.dropped_lines
        ));
    }
    out
}

/// Header, the metrics table, and the crash report if there is one;
/// console and script lines in it cannot drive the terminal.
pub fn render_run(r: &RunResult) -> String {
    crate::report::untrusted::text(&render_raw(r))
}

fn render_raw(r: &RunResult) -> String {
    let mut out = header(r);
    if let Some(m) = &r.metrics {
        let mut table = Table::new();
        table
            .load_preset(presets::ASCII_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(vec!["metric", "value"]);
        // A script run has no built-in workload: nothing counts touches.
        let script = r.job.scenario == Scenario::Script;
        for (k, v) in mglru_rows(m) {
            if !(script && k == "touches") {
                table.add_row(vec![k, v]);
            }
        }
        if let Some(col) = table.column_mut(1) {
            col.set_cell_alignment(CellAlignment::Right);
        }
        out.push('\n');
        out.push_str(&table.to_string());
        out.push('\n');
    }
    if let Some(m) = &r.noio_metrics {
        out.push_str(&noio_tables(m));
    }
    if let Some(s) = &r.script {
        out.push_str(&script_section(s, r.image.as_ref()));
    }
    for sp in &r.splats {
        out.push_str(&format!(
            "\nsplat: {} ({}{})\n",
            sp.title,
            sp.kind.name(),
            if sp.count > 1 {
                format!(", {} times", sp.count)
            } else {
                String::new()
            }
        ));
    }
    if let Some(report) = &r.classification.crash_report {
        // The whole report: its call trace is what a maintainer acts on.
        out.push_str("\nconsole:\n");
        for line in report
            .lines()
            .take(crate::results::splat::MAX_EXCERPT_LINES)
        {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_section_says_how_it_ended_and_what_it_printed() {
        let s = ScriptMetrics {
            name: "repro".into(),
            code: Some(3),
            elapsed_ms: 1200,
            metrics: [("ops".to_string(), 12.5)].into(),
            bad_metric_lines: vec!["MMCI-METRIC: x: `x` is not name=value".into()],
            dropped_lines: 7,
            output_tail: vec!["hello".into(), "! oops".into()],
            ..ScriptMetrics::default()
        };
        let image = crate::guest::image::ImageManifest {
            format: 1,
            name: "tools".into(),
            recipe: "/r/images/tools".into(),
            key: "0123456789abcdef".into(),
            suite: "bookworm".into(),
            arch: "amd64".into(),
            packages: vec![],
            size_bytes: 3 << 20,
            sha256: "ab".repeat(32),
            built_unix: 0,
            build_s: 1.0,
        };
        assert_eq!(
            script_section(&s, Some(&image)),
            "\nscript repro: exit 3 in image tools (0 packages, 3.0 MiB, key 0123456789abcdef)\n\
             \x20 ops = 12.5\n\
             \x20 unparsed metric line: MMCI-METRIC: x: `x` is not name=value\n\
             output (last lines; `!` = stderr):\n\
             \x20 | hello\n\
             \x20 | ! oops\n\
             \x20 (7 lines over the cap were not streamed)\n"
        );
    }
}
