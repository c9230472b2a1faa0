//! The metrics the analysis knows: one table entry per metric, with the
//! name used in a matrix's `expect:`, its unit, which direction is better,
//! whether it measures time (and so means little under TCG), its noise
//! floor and how to read it from a run. Scenario B's metrics join as more
//! entries with their own extractors; nothing else changes.

use std::collections::BTreeMap;

use mmci_record::Scenario;
use serde::{Deserialize, Serialize};

use crate::matrix::file::{ExpectKind, Expectation};
use crate::metrics::{MglruMetrics, THROTTLE_ISOLATED};
use crate::results::RunResult;

/// Which way a metric should move for the kernel to be better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
    /// Neither: a change is a change (e.g. throttle events, which a series
    /// may add on purpose).
    Neither,
}

/// One metric of the registry.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// As written in `expect:` and shown in tables.
    pub name: &'static str,
    pub description: &'static str,
    pub unit: &'static str,
    pub better: Better,
    /// The value measures time or throughput: under TCG (emulated CPU) it
    /// is "functional only" and expectations on its size are inconclusive.
    pub timing: bool,
    /// This metric's own noise floor (relative change); None: the
    /// analysis' default (5%).
    pub noise_floor: Option<f64>,
    /// The scenario whose runs carry it.
    pub scenario: Scenario,
    /// A counter divided by the work done (per 1,000 touches in scenario
    /// A, per 1,000 reads in scenario B): the raw metric it normalises,
    /// when the catalog has it. A raw counter scales with the work, so a
    /// kernel that does more work swaps more; its twin says whether it
    /// swaps more per unit of work.
    pub per_work_of: Option<&'static str>,
    /// Its value in one run; None when the run does not have it (no
    /// metrics, or nothing to divide by).
    pub extract: fn(&RunResult) -> Option<f64>,
}

fn a(r: &RunResult) -> Option<&MglruMetrics> {
    r.metrics.as_ref()
}

/// Scenario B's metrics, only from runs whose preconditions held: a run
/// that did not reproduce the case says nothing about the kernel's
/// handling of it.
fn b(r: &RunResult) -> Option<&crate::metrics::noio::NoioMetrics> {
    r.noio_metrics.as_ref().filter(|m| m.reproduced())
}

/// `count` per 1,000 units of `work`; None without work.
fn per_k(count: u64, work: u64) -> Option<f64> {
    (work > 0).then(|| count as f64 * 1000.0 / work as f64)
}

/// What the per-work metrics of a scenario are divided by.
pub fn is_per_work(name: &str) -> bool {
    metric(name).is_some_and(|m| m.per_work_of.is_some() || m.name.contains("_per_k"))
}

pub fn work_unit(scenario: Scenario) -> Option<&'static str> {
    match scenario {
        Scenario::MglruIsolation => Some("per 1,000 touches (the workload's page writes)"),
        Scenario::NoioVerity => Some("per 1,000 reads (the reader's block reads)"),
        Scenario::Probe => None,
    }
}

macro_rules! per_work {
    ($name:literal, $of:expr, $what:literal, $unit:literal, $better:expr, $scenario:expr, $extract:expr) => {
        Metric {
            name: $name,
            description: $what,
            unit: $unit,
            better: $better,
            timing: false,
            noise_floor: None,
            scenario: $scenario,
            per_work_of: $of,
            extract: $extract,
        }
    };
}

/// The registry. Order is the display order (reports put the per-work
/// counters, at the end here, first).
pub static CATALOG: &[Metric] = &[
    Metric {
        name: "throttle_isolated",
        description: "mm_vmscan_throttled events, reason VMSCAN_THROTTLE_ISOLATED",
        unit: "events",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.throttle_count(THROTTLE_ISOLATED) as f64),
    },
    Metric {
        name: "throttle_isolated_delay_us",
        description: "time throttled on isolation (sum of usec_delayed)",
        unit: "µs",
        better: Better::Neither,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| {
            a(r).map(|m| {
                m.throttle
                    .get(THROTTLE_ISOLATED)
                    .map_or(0, |t| t.usec_delayed_sum) as f64
            })
        },
    },
    Metric {
        name: "nr_isolated_peak",
        description: "highest nr_isolated_anon + nr_isolated_file in one sample",
        unit: "pages",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.nr_isolated_peak as f64),
    },
    Metric {
        name: "oom_kills",
        description: "OOM kills in the workload's cgroup (memory.events oom_kill)",
        unit: "kills",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.oom_kills as f64),
    },
    Metric {
        name: "memcg_oom_events",
        description: "memory.events oom of the workload's cgroup",
        unit: "events",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.memcg_oom_events as f64),
    },
    Metric {
        name: "memcg_max_events",
        description: "memory.events max: times usage hit memory.max",
        unit: "events",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.memcg_max_events as f64),
    },
    Metric {
        name: "touches",
        description: "pages the workload wrote (its throughput over the run)",
        unit: "touches",
        better: Better::Higher,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.touches as f64),
    },
    Metric {
        name: "touches_per_s",
        description: "touches per second of workload time",
        unit: "touches/s",
        better: Better::Higher,
        timing: true,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| {
            a(r).filter(|m| m.workload_ms > 0)
                .map(|m| m.touches_per_second())
        },
    },
    Metric {
        name: "scan_efficiency",
        description: "pgsteal / pgscan (anon + file)",
        unit: "ratio",
        better: Better::Higher,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).and_then(|m| m.scan_efficiency),
    },
    Metric {
        name: "pswpin",
        description: "pages swapped in (/proc/vmstat pswpin)",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.pswpin as f64),
    },
    Metric {
        name: "pswpout",
        description: "pages swapped out (/proc/vmstat pswpout)",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.pswpout as f64),
    },
    Metric {
        name: "pgmajfault",
        description: "major page faults (/proc/vmstat pgmajfault)",
        unit: "faults",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.pgmajfault as f64),
    },
    Metric {
        name: "refaults_anon",
        description: "workingset_refault_anon",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.workingset_refault_anon as f64),
    },
    Metric {
        name: "refaults_file",
        description: "workingset_refault_file",
        unit: "pages",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.workingset_refault_file as f64),
    },
    Metric {
        name: "psi_some_us",
        description: "memory pressure stall, some (growth of /proc/pressure/memory total)",
        unit: "µs",
        better: Better::Lower,
        timing: true,
        // Stall time swings more than counters between identical runs.
        noise_floor: Some(0.10),
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.psi_some_us as f64),
    },
    Metric {
        name: "psi_full_us",
        description: "memory pressure stall, full (growth of /proc/pressure/memory total)",
        unit: "µs",
        better: Better::Lower,
        timing: true,
        noise_floor: Some(0.10),
        scenario: Scenario::MglruIsolation,
        per_work_of: None,
        extract: |r| a(r).map(|m| m.psi_full_us as f64),
    },
    Metric {
        name: "noio_calls",
        description: "direct-reclaim calls with GFP_NOIO gfp flags (dm-verity/dm-bufio)",
        unit: "calls",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.noio.calls as f64),
    },
    Metric {
        name: "noio_latency_p50_ms",
        description: "GFP_NOIO direct-reclaim latency, median",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.noio.latency_p50_us as f64 / 1000.0),
    },
    Metric {
        name: "noio_latency_p99_ms",
        description: "GFP_NOIO direct-reclaim latency, 99th percentile",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.noio.latency_p99_us as f64 / 1000.0),
    },
    Metric {
        name: "noio_latency_max_ms",
        description: "GFP_NOIO direct-reclaim latency, longest call",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.noio.latency_max_us as f64 / 1000.0),
    },
    Metric {
        name: "noio_anon_scanned",
        description: "anon folios scanned by GFP_NOIO direct reclaim",
        unit: "folios",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.noio.anon_scanned as f64),
    },
    Metric {
        name: "noio_anon_scanned_prio0",
        description:
            "anon folios scanned at priority 0 by GFP_NOIO direct reclaim (the RFC's case)",
        unit: "folios",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.noio.anon_scanned_prio0 as f64),
    },
    Metric {
        name: "other_calls",
        description: "direct-reclaim calls with other gfp flags (control)",
        unit: "calls",
        better: Better::Neither,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.other.calls as f64),
    },
    Metric {
        name: "other_latency_p99_ms",
        description: "other direct-reclaim latency, 99th percentile (control)",
        unit: "ms",
        better: Better::Lower,
        timing: true,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.other.latency_p99_us as f64 / 1000.0),
    },
    Metric {
        name: "allocstall",
        description: "allocation stalls (direct reclaim entries) during the reads",
        unit: "events",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).map(|m| m.allocstall as f64),
    },
    Metric {
        name: "noio_zero_reclaim_share",
        description: "share of GFP_NOIO direct-reclaim calls that reclaimed nothing",
        unit: "",
        better: Better::Lower,
        timing: false,
        noise_floor: None,
        scenario: Scenario::NoioVerity,
        per_work_of: None,
        extract: |r| b(r).and_then(|m| m.noio.zero_reclaimed_share()),
    },
    per_work!(
        "pswpin_per_ktouch",
        Some("pswpin"),
        "pages swapped in per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pswpin, m.touches))
    ),
    per_work!(
        "pswpout_per_ktouch",
        Some("pswpout"),
        "pages swapped out per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pswpout, m.touches))
    ),
    per_work!(
        "pgmajfault_per_ktouch",
        Some("pgmajfault"),
        "major faults per 1,000 touches",
        "faults/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pgmajfault, m.touches))
    ),
    per_work!(
        "refaults_anon_per_ktouch",
        Some("refaults_anon"),
        "workingset_refault_anon per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.workingset_refault_anon, m.touches))
    ),
    per_work!(
        "refaults_file_per_ktouch",
        Some("refaults_file"),
        "workingset_refault_file per 1,000 touches",
        "pages/1k touches",
        Better::Lower,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.workingset_refault_file, m.touches))
    ),
    per_work!(
        "pgscan_per_ktouch",
        None,
        "pages scanned (anon + file) per 1,000 touches",
        "pages/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pgscan, m.touches))
    ),
    per_work!(
        "pgsteal_per_ktouch",
        None,
        "pages reclaimed (anon + file) per 1,000 touches",
        "pages/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.pgsteal, m.touches))
    ),
    per_work!(
        "memcg_max_events_per_ktouch",
        Some("memcg_max_events"),
        "memory.events max per 1,000 touches",
        "events/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.memcg_max_events, m.touches))
    ),
    per_work!(
        "throttle_isolated_per_ktouch",
        Some("throttle_isolated"),
        "VMSCAN_THROTTLE_ISOLATED events per 1,000 touches",
        "events/1k touches",
        Better::Neither,
        Scenario::MglruIsolation,
        |r| a(r).and_then(|m| per_k(m.throttle_count(THROTTLE_ISOLATED), m.touches))
    ),
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
        |r| b(r).and_then(|m| per_k(m.noio.anon_scanned, m.reads))
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
];

/// The metric called `name`.
pub fn metric(name: &str) -> Option<&'static Metric> {
    CATALOG.iter().find(|m| m.name == name)
}

/// The metrics measured in `scenario`'s runs, in display order.
pub fn of_scenario(scenario: Scenario) -> impl Iterator<Item = &'static Metric> {
    CATALOG.iter().filter(move |m| m.scenario == scenario)
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    #[error("expect: unknown metric `{name}`; known metrics: {}", known_names())]
    UnknownMetric { name: String },
    #[error("expect: {name}: {what}")]
    BadThreshold { name: String, what: String },
    #[error(
        "expect: {name} is measured in {scenario} runs, and this matrix has no {scenario} cell"
    )]
    NotMeasured { name: String, scenario: String },
}

impl CatalogError {
    /// The metric the error is about (to find its position in the file).
    pub fn metric(&self) -> &str {
        match self {
            CatalogError::UnknownMetric { name }
            | CatalogError::BadThreshold { name, .. }
            | CatalogError::NotMeasured { name, .. } => name,
        }
    }
}

pub fn known_names() -> String {
    CATALOG
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks one `expect:` entry: a known metric, measured by one of the
/// plan's scenarios, with a threshold that means something for its kind.
pub fn validate(name: &str, e: &Expectation, scenarios: &[Scenario]) -> Result<(), CatalogError> {
    let m = metric(name).ok_or_else(|| CatalogError::UnknownMetric {
        name: name.to_string(),
    })?;
    if !scenarios.is_empty() && !scenarios.contains(&m.scenario) {
        return Err(CatalogError::NotMeasured {
            name: name.to_string(),
            scenario: m.scenario.to_string(),
        });
    }
    if let Some(t) = e.threshold() {
        let bad = |what: String| CatalogError::BadThreshold {
            name: name.to_string(),
            what,
        };
        match e.kind() {
            ExpectKind::Zero | ExpectKind::Nonzero => {
                return Err(bad(format!(
                    "a threshold means nothing for `{}` (it only applies to increase, decrease and no_regression)",
                    kind_name(e.kind())
                )))
            }
            _ if !(t.is_finite() && t >= 0.0) => {
                return Err(bad(format!(
                    "threshold {t} is not a relative change of 0 or more (0.2 = 20%)"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks every `expect:` entry (see [`validate`]); the plan loader calls
/// this with the scenarios of its cells.
pub fn validate_all(
    expect: &BTreeMap<String, Expectation>,
    scenarios: &[Scenario],
) -> Result<(), CatalogError> {
    expect
        .iter()
        .try_for_each(|(name, e)| validate(name, e, scenarios))
}

pub fn kind_name(k: ExpectKind) -> &'static str {
    match k {
        ExpectKind::Increase => "increase",
        ExpectKind::Decrease => "decrease",
        ExpectKind::NoRegression => "no_regression",
        ExpectKind::Zero => "zero",
        ExpectKind::Nonzero => "nonzero",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_cover_the_issue() {
        let names: std::collections::BTreeSet<&str> = CATALOG.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), CATALOG.len());
        for n in [
            "throttle_isolated",
            "nr_isolated_peak",
            "oom_kills",
            "memcg_oom_events",
            "memcg_max_events",
            "touches",
            "touches_per_s",
            "scan_efficiency",
            "pswpin",
            "pswpout",
            "pgmajfault",
            "refaults_anon",
            "refaults_file",
            "psi_some_us",
            "psi_full_us",
        ] {
            assert!(names.contains(n), "{n}");
        }
    }

    #[test]
    fn extractors_read_a_recorded_run() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/mglru-completed/run.json");
        let r: RunResult = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let v = |n: &str| (metric(n).unwrap().extract)(&r);
        assert_eq!(v("throttle_isolated"), Some(0.0));
        assert_eq!(v("touches"), Some(40064.0));
        assert_eq!(v("touches_per_s"), Some(40064.0 * 1000.0 / 23718.0));
        assert_eq!(v("scan_efficiency"), Some(0.3507538055315576));
        assert_eq!(v("refaults_anon"), Some(20854.0));
        assert_eq!(v("psi_full_us"), Some(13058801.0));
        let mut none = r.clone();
        none.metrics = None;
        assert!(CATALOG.iter().all(|m| (m.extract)(&none).is_none()));
    }

    #[test]
    fn validation_names_the_metric_and_the_fix() {
        let a = [Scenario::MglruIsolation];
        let ok = |n: &str, e: Expectation| validate(n, &e, &a);
        ok("throttle_isolated", Expectation::Kind(ExpectKind::Nonzero)).unwrap();
        let e = ok("throttled_isolated", Expectation::Kind(ExpectKind::Nonzero)).unwrap_err();
        assert_eq!(e.metric(), "throttled_isolated");
        assert!(
            e.to_string().starts_with(
                "expect: unknown metric `throttled_isolated`; known metrics: throttle_isolated, "
            ),
            "{e}"
        );
        let detailed = |kind, t| Expectation::Detailed {
            kind,
            threshold: Some(t),
        };
        let e = ok("oom_kills", detailed(ExpectKind::Zero, 0.1)).unwrap_err();
        assert!(
            e.to_string()
                .contains("a threshold means nothing for `zero`"),
            "{e}"
        );
        let e = ok("touches", detailed(ExpectKind::Increase, -0.1)).unwrap_err();
        assert!(e.to_string().contains("threshold -0.1 is not"), "{e}");
        ok("touches", detailed(ExpectKind::NoRegression, 0.1)).unwrap();
        let probe = [Scenario::Probe];
        let e = validate("touches", &Expectation::Kind(ExpectKind::Increase), &probe).unwrap_err();
        assert!(e.to_string().contains("no mglru_isolation cell"), "{e}");
    }
}
