//! Scenario B's anatomy: for each cell and kernel, the slowest dm-bufio
//! GFP_NOIO direct-reclaim call of its runs, round by round (the table of
//! the RFC: priority range, memcgs visited, anon/file scanned, reclaimed,
//! milliseconds), and how many of its runs reached the RFC's corner
//! (priority 0 with the swap cache condition true). A reviewer sees where
//! the time went without reading traces.

use serde::{Deserialize, Serialize};

use crate::scenario::noio::{lowest_priority, rounds, NoioMetrics, RoundAnatomy};
use crate::scenario::ScenarioMetrics;

/// One cell and kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anatomy {
    /// The cell's label, else its id.
    pub cell: String,
    pub variant: String,
    /// Completed runs with scenario B metrics.
    pub runs: usize,
    /// Those that reached the RFC's corner (their preconditions held).
    pub runs_in_corner: usize,
    /// The MGLRU control cell: its runs' case is not the RFC's corner, and
    /// the rounds' scanned columns come from shrink events that MGLRU
    /// fires only for passes that isolated something.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mglru: bool,
    pub worst: Option<WorstCall>,
}

/// The slowest dm-bufio call of those runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorstCall {
    pub run: String,
    pub comm: String,
    pub latency_ms: f64,
    pub nr_reclaimed: u64,
    pub min_priority: Option<u32>,
    /// Distinct memcgs over the whole call; None without the kprobe.
    pub memcgs_visited: Option<u32>,
    /// The most swap cache read in the tracked lruvec during the call.
    pub swapcache_max_bytes: Option<u64>,
    pub anon_min_bytes: Option<u64>,
    /// The kernel dropped trace events while it ran.
    #[serde(default)]
    pub events_lost: bool,
    pub rounds: Vec<RoundAnatomy>,
}

/// The anatomy of one cell and kernel from its completed runs (run id,
/// metrics): `registry::Def::anatomy` of scenario B.
pub fn anatomy(cell: &str, variant: &str, runs: &[(&String, &ScenarioMetrics)]) -> Anatomy {
    let measured: Vec<(&String, &NoioMetrics)> = runs
        .iter()
        .filter_map(|(id, m)| Some((*id, m.noio()?)))
        .collect();
    let worst = measured
        .iter()
        .filter_map(|(id, m)| Some((*id, m.worst.as_ref()?)))
        .max_by_key(|(_, c)| (!c.events_lost, c.latency_us))
        .map(|(id, c)| WorstCall {
            run: id.clone(),
            comm: c.comm.clone(),
            latency_ms: c.latency_us as f64 / 1000.0,
            nr_reclaimed: c.nr_reclaimed,
            min_priority: lowest_priority(c),
            memcgs_visited: c.memcgs_visited,
            swapcache_max_bytes: c.swapcache_max_bytes,
            anon_min_bytes: c.anon_min_bytes,
            events_lost: c.events_lost,
            rounds: rounds(c),
        });
    Anatomy {
        cell: cell.to_string(),
        variant: variant.to_string(),
        runs: measured.len(),
        runs_in_corner: measured.iter().filter(|(_, m)| m.reproduced()).count(),
        mglru: measured.iter().any(|(_, m)| m.mglru.is_some()),
        worst,
    }
}

/// Text of an optional count.
pub fn opt(v: Option<impl ToString>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// `0.0 KiB` of bytes; `-` without.
pub fn kib(v: Option<u64>) -> String {
    v.map_or("-".into(), |b| format!("{:.1} KiB", b as f64 / 1024.0))
}

/// `12..0` (or `12` for one priority).
pub fn priority_range(r: &RoundAnatomy) -> String {
    if r.priority_from == r.priority_to {
        r.priority_from.to_string()
    } else {
        format!("{}..{}", r.priority_from, r.priority_to)
    }
}

/// The line above a kernel's anatomy table.
pub fn heading(a: &Anatomy) -> String {
    let share = if a.mglru {
        format!(
            "MGLRU: {} of {} run(s) had dm-bufio GFP_NOIO calls in direct reclaim (scanned columns: shrink events, which MGLRU fires only for passes that isolated something; noio_mglru_* count every pass)",
            a.runs_in_corner, a.runs
        )
    } else {
        format!(
            "{} of {} run(s) reached priority 0 with swapcache < min(anon >> 6, SWAP_CLUSTER_MAX)",
            a.runs_in_corner, a.runs
        )
    };
    match &a.worst {
        None => format!("{} on {}: {share}; no dm-bufio call", a.cell, a.variant),
        Some(w) => format!(
            "{} on {}: {share}; slowest dm-bufio call: {:.1} ms in {} ({}), reclaimed {}, lowest priority {}, {} memcg(s), swap cache up to {}{}",
            a.cell,
            a.variant,
            w.latency_ms,
            w.run,
            w.comm,
            w.nr_reclaimed,
            opt(w.min_priority),
            opt(w.memcgs_visited),
            kib(w.swapcache_max_bytes),
            if w.events_lost {
                " (trace events were lost during it: sums may be short)"
            } else {
                ""
            }
        ),
    }
}

/// The table's header and rows, as text cells.
pub const COLUMNS: [&str; 7] = [
    "round",
    "priority",
    "memcg visits",
    "anon scanned",
    "file scanned",
    "reclaimed",
    "ms",
];

pub fn rows(w: &WorstCall) -> Vec<[String; 7]> {
    w.rounds
        .iter()
        .map(|r| {
            [
                r.round.to_string(),
                priority_range(r),
                opt(r.memcg_visits),
                r.anon_scanned.to_string(),
                r.file_scanned.to_string(),
                r.reclaimed.to_string(),
                format!("{:.1}", r.ms),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_optional_values() {
        let r = |from, to| RoundAnatomy {
            priority_from: from,
            priority_to: to,
            ..RoundAnatomy::default()
        };
        let cases = [(r(12, 0), "12..0"), (r(12, 12), "12"), (r(3, 1), "3..1")];
        for (round, want) in cases {
            assert_eq!(priority_range(&round), want);
        }
        assert_eq!(kib(Some(2048)), "2.0 KiB");
        assert_eq!(kib(None), "-");
        assert_eq!(opt(Some(3)), "3");
        assert_eq!(opt(None::<u32>), "-");
    }

    /// The heading says which case the runs reproduced: the RFC's corner
    /// on the classic LRU, dm-bufio calls in direct reclaim under MGLRU.
    #[test]
    fn headings_name_the_cells_case() {
        let a = |mglru| Anatomy {
            cell: "c".into(),
            variant: "base".into(),
            runs: 3,
            runs_in_corner: 2,
            mglru,
            worst: None,
        };
        let cases = [
            (false, "c on base: 2 of 3 run(s) reached priority 0 with swapcache < min(anon >> 6, SWAP_CLUSTER_MAX); no dm-bufio call"),
            (true, "c on base: MGLRU: 2 of 3 run(s) had dm-bufio GFP_NOIO calls in direct reclaim (scanned columns: shrink events, which MGLRU fires only for passes that isolated something; noio_mglru_* count every pass); no dm-bufio call"),
        ];
        for (mglru, want) in cases {
            assert_eq!(heading(&a(mglru)), want);
        }
        let json = serde_json::to_value(a(false)).unwrap();
        assert!(
            json.get("mglru").is_none(),
            "classic anatomies keep their form"
        );
    }
}
