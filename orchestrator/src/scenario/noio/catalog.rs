//! Scenario B's entries in the metric catalog (see `scenario::catalog`).

use std::borrow::Cow;

use mmci_record::Scenario;

use crate::scenario::metric::{per_k, per_work, Better, Extract, Metric};
use crate::scenario::noio::MglruStats;
use crate::scenario::NoioMetrics;
use crate::scenario::ScenarioMetrics;

/// Scenario B's metrics, only from runs whose preconditions held: a run
/// that did not reproduce the case says nothing about the kernel's
/// handling of it.
fn b(r: &ScenarioMetrics) -> Option<&NoioMetrics> {
    r.noio().filter(|m| m.reproduced())
}

/// Scenario B's classic-LRU figures: None in the MGLRU cell, where they
/// come from mm_vmscan_lru_shrink_inactive, which evict_folios() fires
/// only after isolating something (so they would leave out exactly the
/// passes that found nothing to take); the cell has its own (`mglru!`).
fn classic(r: &ScenarioMetrics) -> Option<&NoioMetrics> {
    b(r).filter(|m| m.mglru.is_none())
}

/// An entry of the MGLRU cell: `$value` of its [`MglruStats`] (None in a
/// classic-LRU run).
macro_rules! mglru {
    ($name:literal, $description:literal, $unit:literal, $better:expr, $value:expr) => {
        Metric {
            name: Cow::Borrowed($name),
            description: Cow::Borrowed($description),
            unit: Cow::Borrowed($unit),
            better: $better,
            timing: false,
            noise_floor: None,
            scenario: Scenario::NoioVerity,
            per_work_of: None,
            extract: Extract::Run(|r| {
                let value: fn(&MglruStats) -> Option<f64> = $value;
                b(r).and_then(|m| m.mglru.as_ref()).and_then(value)
            }),
        }
    };
}

/// The entry of one statistic of the calls' time at priority 0: `$field`
/// of the run's `Prio0Time` (µs), in ms; `$which` ends the description.
macro_rules! prio0_ms {
    ($name:literal, $field:ident, $which:literal) => {
        Metric {
            name: Cow::Borrowed($name),
            description: Cow::Borrowed(concat!(
                "time a dm-bufio GFP_NOIO direct-reclaim call spent at priority 0, ",
                $which
            )),
            unit: Cow::Borrowed("ms"),
            better: Better::Lower,
            timing: true,
            noise_floor: None,
            scenario: Scenario::NoioVerity,
            per_work_of: None,
            extract: Extract::Run(|r| {
                b(r).and_then(|m| m.noio.prio0.as_ref())
                    .map(|p| p.$field as f64 / 1000.0)
            }),
        }
    };
}

/// Display order.
pub static METRICS: &[Metric] = &[
    Metric {
        name: Cow::Borrowed("noio_calls"),
        description: Cow::Borrowed(
            "direct-reclaim calls with GFP_NOIO gfp flags (dm-verity/dm-bufio)",
        ),
        unit: Cow::Borrowed("calls"),
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).map(|m| m.noio.calls as f64)),
    },
    Metric {
        name: Cow::Borrowed("noio_latency_p50_ms"),
        description: Cow::Borrowed("GFP_NOIO direct-reclaim latency, median"),
        unit: Cow::Borrowed("ms"),
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).map(|m| m.noio.latency_p50_us as f64 / 1000.0)),
    },
    Metric {
        name: Cow::Borrowed("noio_latency_p99_ms"),
        description: Cow::Borrowed("GFP_NOIO direct-reclaim latency, 99th percentile"),
        unit: Cow::Borrowed("ms"),
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).map(|m| m.noio.latency_p99_us as f64 / 1000.0)),
    },
    Metric {
        name: Cow::Borrowed("noio_latency_max_ms"),
        description: Cow::Borrowed("GFP_NOIO direct-reclaim latency, longest call"),
        unit: Cow::Borrowed("ms"),
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).map(|m| m.noio.latency_max_us as f64 / 1000.0)),
    },
    Metric {
        name: Cow::Borrowed("noio_anon_scanned"),
        description: Cow::Borrowed("anon folios scanned by GFP_NOIO direct reclaim"),
        unit: Cow::Borrowed("folios"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| classic(r).map(|m| m.noio.anon_scanned as f64)),
    },
    Metric {
        name: Cow::Borrowed("noio_anon_scanned_prio0"),
        description: Cow::Borrowed(
            "anon folios scanned at priority 0 by GFP_NOIO direct reclaim (the RFC's case)",
        ),
        unit: Cow::Borrowed("folios"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| classic(r).map(|m| m.noio.anon_scanned_prio0 as f64)),
    },
    Metric {
        name: Cow::Borrowed("other_calls"),
        description: Cow::Borrowed("direct-reclaim calls with other gfp flags (control)"),
        unit: Cow::Borrowed("calls"),
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).map(|m| m.other.calls as f64)),
    },
    Metric {
        name: Cow::Borrowed("other_latency_p99_ms"),
        description: Cow::Borrowed("other direct-reclaim latency, 99th percentile (control)"),
        unit: Cow::Borrowed("ms"),
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).map(|m| m.other.latency_p99_us as f64 / 1000.0)),
    },
    Metric {
        name: Cow::Borrowed("allocstall"),
        description: Cow::Borrowed("allocation stalls (direct reclaim entries) during the reads"),
        unit: Cow::Borrowed("events"),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).map(|m| m.allocstall as f64)),
    },
    Metric {
        name: Cow::Borrowed("noio_zero_reclaim_share"),
        description: Cow::Borrowed("share of GFP_NOIO direct-reclaim calls that reclaimed nothing"),
        unit: Cow::Borrowed(""),
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).and_then(|m| m.noio.zero_reclaimed_share())),
    },
    prio0_ms!("noio_prio0_ms_p50", p50_us, "median over the calls"),
    prio0_ms!("noio_prio0_ms_p90", p90_us, "90th percentile"),
    prio0_ms!("noio_prio0_ms_max", max_us, "longest"),
    Metric {
        name: Cow::Borrowed("noio_prio0_ms_per_kread"),
        description: Cow::Borrowed(
            "time dm-bufio GFP_NOIO direct reclaim spent at priority 0 per 1,000 reads (per read: a kernel that makes more, shorter calls is not flattered)",
        ),
        unit: Cow::Borrowed("ms/1k reads"),
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| {
            let m = b(r)?;
            per_k(m.noio.prio0.as_ref()?.total_us, m.reads).map(|us| us / 1000.0)
        }),
    },
    Metric {
        name: Cow::Borrowed("noio_reads_per_s"),
        description: Cow::Borrowed("dm-verity block reads a second (the reader's throughput)"),
        unit: Cow::Borrowed("reads/s"),
        better: Better::Higher,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).and_then(|m| m.reads_per_s())),
    },
    Metric {
        name: Cow::Borrowed("io_reclaim_efficiency"),
        description: Cow::Borrowed(
            "reclaimed per scanned by kswapd and direct reclaim with __GFP_IO (the aging guard)",
        ),
        unit: Cow::Borrowed(""),
        better: Better::Higher,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| b(r).and_then(|m| m.io_reclaim_efficiency())),
    },
    mglru!(
        "noio_mglru_anon_scanned",
        "MGLRU: anon folios the dm-bufio GFP_NOIO calls' scan_folios() looked at",
        "folios",
        Better::Lower,
        |m| Some(m.sums.anon_scanned as f64)
    ),
    mglru!(
        "noio_mglru_anon_skipped",
        "MGLRU: anon folios isolate_folio() refused to a reclaimer without __GFP_IO (not in the swap cache, or dirty): scanned for nothing",
        "folios",
        Better::Lower,
        |m| Some(m.sums.anon_skipped as f64)
    ),
    mglru!(
        "noio_mglru_anon_isolated",
        "MGLRU: anon folios the dm-bufio calls isolated (in the swap cache: reclaimable without I/O)",
        "folios",
        Better::Neither,
        |m| Some(m.sums.anon_taken as f64)
    ),
    mglru!(
        "noio_mglru_file_scanned",
        "MGLRU: file folios the dm-bufio calls' scan_folios() looked at",
        "folios",
        Better::Neither,
        |m| Some(m.sums.file_scanned as f64)
    ),
    mglru!(
        "noio_mglru_file_isolated",
        "MGLRU: file folios the dm-bufio calls isolated",
        "folios",
        Better::Neither,
        |m| Some(m.sums.file_taken as f64)
    ),
    mglru!(
        "noio_mglru_anon_scanned_max_call",
        "MGLRU: the most anon folios one dm-bufio call looked at",
        "folios",
        Better::Lower,
        |m| Some(m.max_anon_scanned_one_call as f64)
    ),
    Metric {
        name: Cow::Borrowed("noio_mglru_reclaimed"),
        description: Cow::Borrowed(
            "MGLRU: folios the dm-bufio GFP_NOIO calls reclaimed from the LRUs (their shrink events)",
        ),
        unit: Cow::Borrowed("folios"),
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: Extract::Run(|r| {
            b(r).filter(|m| m.mglru.is_some())
                .map(|m| m.noio.reclaimed as f64)
        }),
    },
    mglru!(
        "noio_mglru_classic_passes",
        "MGLRU: shrink_lruvec() entries during dm-bufio calls (get_scan_count's path, where the RFC's branch is; 0 under MGLRU by the code, counted to check that reading)",
        "passes",
        Better::Neither,
        |m| m.classic_passes.map(|n| n as f64)
    ),
];

/// The counters above divided by the work done, per 1,000 reads (the
/// reader's block reads); after every
/// scenario's raw metrics in the registry's order.
pub static PER_WORK: &[Metric] = &[
    per_work!(
        "noio_calls_per_kread",
        Some("noio_calls"),
        "GFP_NOIO direct-reclaim calls per 1,000 reads",
        "calls/1k reads",
        Better::Neither,
        Scenario::NoioVerity,
        |r| b(r).and_then(|m| per_k(m.noio.calls, m.reads))
    ),
    per_work!(
        "noio_anon_scanned_per_kread",
        Some("noio_anon_scanned"),
        "anon folios scanned by GFP_NOIO direct reclaim per 1,000 reads",
        "folios/1k reads",
        Better::Lower,
        Scenario::NoioVerity,
        |r| classic(r).and_then(|m| per_k(m.noio.anon_scanned, m.reads))
    ),
    per_work!(
        "allocstall_per_kread",
        Some("allocstall"),
        "allocation stalls per 1,000 reads",
        "events/1k reads",
        Better::Lower,
        Scenario::NoioVerity,
        |r| b(r).and_then(|m| per_k(m.allocstall, m.reads))
    ),
    per_work!(
        "pgscan_direct_per_kread",
        None,
        "pages scanned by direct reclaim per 1,000 reads",
        "pages/1k reads",
        Better::Neither,
        Scenario::NoioVerity,
        |r| b(r).and_then(|m| per_k(m.pgscan_direct, m.reads))
    ),
    per_work!(
        "pgsteal_direct_per_kread",
        None,
        "pages reclaimed by direct reclaim per 1,000 reads",
        "pages/1k reads",
        Better::Neither,
        Scenario::NoioVerity,
        |r| b(r).and_then(|m| per_k(m.pgsteal_direct, m.reads))
    ),
    per_work!(
        "pswpin_per_kread",
        None,
        "pages swapped in per 1,000 reads",
        "pages/1k reads",
        Better::Lower,
        Scenario::NoioVerity,
        |r| b(r).and_then(|m| per_k(m.pswpin, m.reads))
    ),
    per_work!(
        "pswpout_per_kread",
        None,
        "pages swapped out per 1,000 reads",
        "pages/1k reads",
        Better::Lower,
        Scenario::NoioVerity,
        |r| b(r).and_then(|m| per_k(m.pswpout, m.reads))
    ),
    per_work!(
        "workingset_refault_per_kread",
        None,
        "anon and file refaults per 1,000 reads (the aging guard)",
        "refaults/1k reads",
        Better::Lower,
        Scenario::NoioVerity,
        |r| {
            let m = b(r)?;
            let a = m.aging.as_ref()?;
            per_k(
                a.workingset_refault_anon + a.workingset_refault_file,
                m.reads,
            )
        }
    ),
    per_work!(
        "pgactivate_per_kread",
        None,
        "folios activated per 1,000 reads",
        "folios/1k reads",
        Better::Neither,
        Scenario::NoioVerity,
        |r| {
            let m = b(r)?;
            per_k(m.aging.as_ref()?.pgactivate, m.reads)
        }
    ),
    per_work!(
        "pgdeactivate_per_kread",
        None,
        "folios deactivated per 1,000 reads",
        "folios/1k reads",
        Better::Neither,
        Scenario::NoioVerity,
        |r| {
            let m = b(r)?;
            per_k(m.aging.as_ref()?.pgdeactivate, m.reads)
        }
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::noio::rounds::Prio0Time;

    /// Each priority-0 entry reads its own statistic of the run, in ms,
    /// and says which it is.
    #[test]
    fn priority_0_entries_read_their_statistic_in_ms() {
        let mut m = NoioMetrics::default();
        m.noio.prio0 = Some(Prio0Time {
            p50_us: 1500,
            p90_us: 4000,
            max_us: 9250,
            total_us: 20000,
        });
        let run = ScenarioMetrics::Noio(Box::new(m.clone()));
        m.not_reproduced = vec!["no GFP_NOIO direct-reclaim call".into()];
        let not_reproduced = ScenarioMetrics::Noio(Box::new(m));
        for (name, ms, which) in [
            ("noio_prio0_ms_p50", 1.5, "median over the calls"),
            ("noio_prio0_ms_p90", 4.0, "90th percentile"),
            ("noio_prio0_ms_max", 9.25, "longest"),
        ] {
            let e = METRICS.iter().find(|e| e.name == name).unwrap();
            assert_eq!(e.value(&run), Some(ms), "{name}");
            assert_eq!(e.value(&not_reproduced), None, "{name}");
            assert_eq!(e.value(&ScenarioMetrics::None), None, "{name}");
            assert_eq!(
                e.description,
                format!(
                    "time a dm-bufio GFP_NOIO direct-reclaim call spent at priority 0, {which}"
                )
            );
            assert_eq!(
                (
                    e.unit.as_ref(),
                    e.better,
                    e.timing,
                    e.noise_floor,
                    e.per_work_of
                ),
                ("ms", Better::Lower, true, None, None),
                "{name}"
            );
            assert_eq!(e.scenario, Scenario::NoioVerity);
        }
    }
}
