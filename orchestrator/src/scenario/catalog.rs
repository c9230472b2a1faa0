//! The metrics the scenarios declare: one entry per metric, with the name
//! used in a matrix's `expect:`, its unit, which direction is better,
//! whether it measures time (and so means little under TCG), its noise
//! floor, and how to read its value from one run's scenario metrics. Each
//! scenario keeps its own entries (`mglru/catalog.rs`, `noio/catalog.rs`,
//! `script/catalog.rs`); this is the registry over them, in display order.
//! A matrix's scripts add entries of their own (`script::MetricDecl`),
//! which is why names are `Cow`s.

use std::borrow::Cow;

use mmci_record::Scenario;
use serde::{Deserialize, Serialize};

use crate::scenario::registry::{self, ALL};
use crate::scenario::ScenarioMetrics;

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

/// One metric of the registry, or of a matrix's script.
#[derive(Clone, Debug)]
pub struct Metric {
    /// As written in `expect:` and shown in tables.
    pub name: Cow<'static, str>,
    pub description: Cow<'static, str>,
    pub unit: Cow<'static, str>,
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
    /// How to read it from one run.
    pub extract: Extract,
}

/// How a metric's value is read from a run; None when the run does not
/// have it (no metrics, or nothing to divide by).
#[derive(Clone, Copy, Debug)]
pub enum Extract {
    /// A function of the run's scenario metrics.
    Run(fn(&ScenarioMetrics) -> Option<f64>),
    /// The script's own `MMCI-METRIC:` value of the metric's name.
    ScriptMetric,
}

impl Metric {
    /// Its value in one run.
    pub fn value(&self, r: &ScenarioMetrics) -> Option<f64> {
        match self.extract {
            Extract::Run(f) => f(r),
            Extract::ScriptMetric => r
                .script()
                .and_then(|s| s.metrics.get(self.name.as_ref()).copied()),
        }
    }

    /// A counter divided by the work done (see `per_work_of`).
    pub fn is_per_work(&self) -> bool {
        self.per_work_of.is_some() || self.name.contains("_per_k")
    }

    /// Measured in runs of `scenario`: its own, and those it borrows from
    /// another scenario (`registry::Def::borrows`).
    pub fn measured_in(&self, scenario: Scenario) -> bool {
        let def = registry::of(scenario);
        self.scenario == scenario
            || def
                .borrows
                .is_some_and(|(from, keep)| self.scenario == from && keep(self))
    }
}

/// `count` per 1,000 units of `work`; None without work.
pub(crate) fn per_k(count: u64, work: u64) -> Option<f64> {
    (work > 0).then(|| count as f64 * 1000.0 / work as f64)
}

/// A per-work metric's entry: a counter divided by the scenario's work,
/// never a timing, with the default noise floor.
macro_rules! per_work {
    ($name:literal, $of:expr, $what:literal, $unit:literal, $better:expr, $scenario:expr, $extract:expr) => {
        $crate::scenario::catalog::Metric {
            name: ::std::borrow::Cow::Borrowed($name),
            description: ::std::borrow::Cow::Borrowed($what),
            unit: ::std::borrow::Cow::Borrowed($unit),
            better: $better,
            timing: false,
            noise_floor: None,
            scenario: $scenario,
            per_work_of: $of,
            extract: $crate::scenario::catalog::Extract::Run($extract),
        }
    };
}
pub(crate) use per_work;

/// Every metric, in registry order: the raw ones of the scenarios with a
/// work unit (A, B), then their per-work counters (reports put the
/// per-work counters first), then the metrics of the scenarios without
/// one (how a script ended).
pub fn all() -> impl Iterator<Item = &'static Metric> {
    let with_work = || ALL.iter().filter(|d| d.work_unit.is_some());
    with_work()
        .flat_map(|d| d.metric_entries.iter())
        .chain(with_work().flat_map(|d| d.per_work.iter()))
        .chain(
            ALL.iter()
                .filter(|d| d.work_unit.is_none())
                .flat_map(|d| d.metric_entries.iter().chain(d.per_work.iter())),
        )
}

/// Whether `name` is one of the per-work metrics.
pub fn is_per_work(name: &str) -> bool {
    metric(name).is_some_and(Metric::is_per_work)
}

/// What the per-work metrics of a scenario are divided by.
pub fn work_unit(scenario: Scenario) -> Option<&'static str> {
    // A script's work is its own: nothing to divide by.
    crate::scenario::registry::of(scenario).work_unit
}

/// The metric called `name`.
pub fn metric(name: &str) -> Option<&'static Metric> {
    all().find(|m| m.name == name)
}

/// The metrics measured in `scenario`'s runs, in display order.
pub fn of_scenario(scenario: Scenario) -> impl Iterator<Item = &'static Metric> {
    all().filter(move |m| m.measured_in(scenario))
}

pub fn known_names() -> String {
    all()
        .map(|m| m.name.as_ref())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_runs_measure_scenario_a_kernel_side_not_its_workload() {
        let names: Vec<&str> = of_scenario(Scenario::Script)
            .map(|m| m.name.as_ref())
            .collect();
        for n in [
            "throttle_isolated",
            "oom_kills",
            "pswpout",
            "psi_some_us",
            "script_exit_code",
            "script_timed_out",
        ] {
            assert!(names.contains(&n), "{n}");
        }
        for n in [
            "touches",
            "touches_per_s",
            "pswpout_per_ktouch",
            "noio_calls",
        ] {
            assert!(!names.contains(&n), "{n}");
        }
        // The other scenarios measure only their own.
        for s in [Scenario::MglruIsolation, Scenario::NoioVerity] {
            assert!(of_scenario(s).all(|m| m.scenario == s));
        }
        assert_eq!(work_unit(Scenario::Script), None);
    }

    #[test]
    fn names_are_unique_and_cover_the_issue() {
        let names: std::collections::BTreeSet<&str> = all().map(|m| m.name.as_ref()).collect();
        assert_eq!(names.len(), all().count());
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
}
