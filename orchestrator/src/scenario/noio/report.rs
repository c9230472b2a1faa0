//! Scenario B's lines in a run's report: its guest and job, its
//! preconditions and counters, its direct-reclaim calls by class, and the
//! slowest dm-bufio call round by round.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use mmci_record::GuestJob;

use crate::scenario::def::GuestShape;
use crate::scenario::noio::anatomy;
use crate::scenario::noio::{ClassStats, NoioMetrics, ANON_TO_FILE_MIN};
use crate::scenario::report::{mib, ms_f, swap_text};
use crate::scenario::ScenarioMetrics;

/// Scenario B's guest and job lines: MGLRU off (on in the control cell)
/// and an unlimited hog cgroup.
pub fn guest(r: &GuestShape, job: &GuestJob) -> String {
    let hog = if job.hog_mb == 0 && job.apps > 0 {
        "MemTotal - 16 MiB - the apps'".to_string()
    } else if job.hog_mb == 0 {
        "MemTotal - 16 MiB".to_string()
    } else {
        format!("{} MiB", job.hog_mb)
    };
    let pace = match job.hog_touch_rate {
        0 => "random writes unpaced".to_string(),
        n => format!("{n} random writes/s"),
    };
    let apps = if job.apps == 0 {
        String::new()
    } else {
        let stream = match job.app_stream_kb_s {
            0 => String::new(),
            r => format!(", reading on at up to {r} KiB/s"),
        };
        format!(
            ", {} app memcgs ({} MiB page cache each{stream}, every other {} MiB anon)",
            job.apps, job.app_cache_mb, job.app_anon_mb
        )
    };
    let reads = if job.reads == 0 {
        format!("for {} s", job.duration_s)
    } else {
        format!("{} reads (at most {} s)", job.reads, job.duration_s)
    };
    format!(
        "guest:   {}, {} vCPUs, {} MiB, {}, swappiness {}, MGLRU {}\n\
         job:     {}: hog {hog} ({} threads, {pace}){apps}, dm-verity {} MiB, {} O_DIRECT readers {reads}, dm-bufio cache {} B\n",
        r.arch,
        r.vcpus,
        r.memory_mb,
        swap_text(r, job),
        job.swappiness,
        if job.noio_mglru { "on" } else { "off" },
        job.scenario,
        job.hog_threads,
        job.verity_mb,
        job.readers,
        job.bufio_cache_bytes
    )
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
    if let Some(g) = &m.mglru {
        rows.extend(crate::scenario::noio::mglru::rows(g));
    }
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
        row("at priority 0 p50 / p90 / max (ms)", &|c| match &c.prio0 {
            Some(p) if c.calls > 0 => {
                format!(
                    "{} / {} / {}",
                    ms_f(p.p50_us),
                    ms_f(p.p90_us),
                    ms_f(p.max_us)
                )
            }
            _ => "-".into(),
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

/// `registry::Def::report_sections` of scenario B.
pub fn sections(m: &ScenarioMetrics, _: Option<&crate::guest::image::ImageManifest>) -> String {
    m.noio().map(noio_tables).unwrap_or_default()
}
