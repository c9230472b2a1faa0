//! The metrics the scenarios declare: one entry per metric, with the name
//! used in a matrix's `expect:`, its unit, which direction is better,
//! whether it measures time (and so means little under TCG), its noise
//! floor, and how to read its value from one run's scenario metrics. Each
//! scenario keeps its own entries (`mglru/catalog.rs`, `noio/catalog.rs`,
//! `script/catalog.rs`); this is the registry over them, in display order.
//! A matrix's scripts add entries of their own (`script::MetricDecl`),
//! which is why names are `Cow`s.

use mmci_record::Scenario;

pub use crate::scenario::metric::{Better, Extract, Metric};
use crate::scenario::registry::{self, ALL};

/// Scenario A's per-run count of OOM kills (a run with any is a run with
/// an OOM kill), which the regression policy's OOM test also reads.
pub const OOM_METRIC: &str = "oom_kills";

/// Per-run counts of the OOM kills that end a scenario's run early, the
/// first a cell measures is its own: scenario A's (and the scripts')
/// `oom_kills`, scenario C's `reclaimer_oom_kills`.
pub const RUN_ENDING_KILLS: [&str; 2] = [OOM_METRIC, "reclaimer_oom_kills"];

impl Metric {
    /// Measured in runs of `scenario`: its own, and those it borrows from
    /// another scenario (`registry::Def::borrows`). Here, not in `metric`:
    /// it asks the registry.
    pub fn measured_in(&self, scenario: Scenario) -> bool {
        let def = registry::of(scenario);
        self.scenario == scenario
            || def
                .borrows
                .is_some_and(|(from, keep)| self.scenario == from && keep(self))
    }
}

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
            "reclaimed_per_isolated",
            "throttle_sleep_s",
            "throttle_sleepers",
            "throttle_isolated_early_wake",
            "workload_isolated_early_wake",
            "exit_after_kill_ms",
            "kswapd_reclaimed_pct",
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
