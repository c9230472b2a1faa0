//! One catalog entry, the type each scenario's `catalog.rs` declares its
//! metrics with: the name used in a matrix's `expect:`, its unit, which
//! direction is better, whether it measures time, its noise floor, and how
//! to read its value from one run's scenario metrics (`Extract`). A leaf:
//! the list over every scenario's entries is `catalog`.

use std::borrow::Cow;

use mmci_record::Scenario;
use serde::{Deserialize, Serialize};

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
}

/// `count` per 1,000 units of `work`; None without work.
pub(crate) fn per_k(count: u64, work: u64) -> Option<f64> {
    (work > 0).then(|| count as f64 * 1000.0 / work as f64)
}

/// A per-work metric's entry: a counter divided by the scenario's work,
/// never a timing, with the default noise floor.
macro_rules! per_work {
    ($name:literal, $of:expr, $what:literal, $unit:literal, $better:expr, $scenario:expr, $extract:expr) => {
        $crate::scenario::metric::Metric {
            name: ::std::borrow::Cow::Borrowed($name),
            description: ::std::borrow::Cow::Borrowed($what),
            unit: ::std::borrow::Cow::Borrowed($unit),
            better: $better,
            timing: false,
            noise_floor: None,
            scenario: $scenario,
            per_work_of: $of,
            extract: $crate::scenario::metric::Extract::Run($extract),
        }
    };
}
pub(crate) use per_work;
