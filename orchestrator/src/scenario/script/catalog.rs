//! Scenario script's entries in the metric catalog (see
//! `scenario::catalog`): how the script ended, and the metrics a matrix
//! declares for a script's own `MMCI-METRIC:` lines.

use std::borrow::Cow;

use mmci_record::Scenario;
use serde::{Deserialize, Serialize};

use crate::scenario::metric::{Better, Extract, Metric};
use crate::scenario::ScenarioMetrics;
use crate::scenario::ScriptMetrics;

/// A script's run: how it ended and its own figures.
fn s(r: &ScenarioMetrics) -> Option<&ScriptMetrics> {
    r.script()
}

/// An entry of how a script's run went: lower is better, with the
/// default noise floor.
const fn run_metric(
    name: &'static str,
    description: &'static str,
    unit: &'static str,
    timing: bool,
    extract: fn(&ScenarioMetrics) -> Option<f64>,
) -> Metric {
    Metric {
        name: Cow::Borrowed(name),
        description: Cow::Borrowed(description),
        unit: Cow::Borrowed(unit),
        better: Better::Lower,
        timing,
        noise_floor: None,
        scenario: Scenario::Script,
        per_work_of: None,
        extract: Extract::Run(extract),
    }
}

/// Display order.
pub static METRICS: &[Metric] = &[
    run_metric(
        "script_exit_code",
        "the script's exit code (128 + signal when killed; 0 is success)",
        "",
        false,
        |r| s(r).map(|m| m.exit_code() as f64),
    ),
    run_metric(
        "script_oom_killed",
        "1 when the script itself was OOM-killed",
        "",
        false,
        |r| s(r).map(|m| u8::from(m.oom_killed) as f64),
    ),
    run_metric(
        "script_timed_out",
        "1 when the script outlived its timeout and its cgroup was killed",
        "",
        false,
        |r| s(r).map(|m| u8::from(m.timed_out) as f64),
    ),
    run_metric(
        "script_elapsed_s",
        "the script's wall time in the guest",
        "s",
        true,
        |r| s(r).map(|m| m.elapsed_ms as f64 / 1000.0),
    ),
];

/// A script's own metric, as a matrix declares it (`scripts: NAME: metrics:`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricDecl {
    pub unit: String,
    pub better: Better,
    #[serde(default)]
    pub description: Option<String>,
    /// It measures time or throughput (functional only under TCG).
    #[serde(default)]
    pub timing: bool,
}

impl MetricDecl {
    /// The declared metric `name` as a catalog entry: its value is the
    /// script's own `MMCI-METRIC:` value of that name.
    pub fn metric(&self, name: &str) -> Metric {
        Metric {
            name: Cow::Owned(name.to_string()),
            description: Cow::Owned(
                self.description
                    .clone()
                    .unwrap_or_else(|| format!("the script's {name} (MMCI-METRIC)")),
            ),
            unit: Cow::Owned(self.unit.clone()),
            better: self.better,
            timing: self.timing,
            noise_floor: None,
            scenario: Scenario::Script,
            per_work_of: None,
            extract: Extract::ScriptMetric,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_metrics_read_the_scripts_own_values() {
        let s = ScriptMetrics {
            signal: Some(9),
            oom_killed: true,
            elapsed_ms: 2500,
            metrics: [("get_rps".to_string(), 1500.0)].into(),
            ..ScriptMetrics::default()
        };
        let r = ScenarioMetrics::Script {
            kernel: None,
            script: Some(s),
        };
        let decl = MetricDecl {
            unit: "requests/s".into(),
            better: Better::Higher,
            description: None,
            timing: true,
        };
        let m = decl.metric("get_rps");
        assert_eq!(m.value(&r), Some(1500.0));
        assert_eq!(m.description, "the script's get_rps (MMCI-METRIC)");
        assert!(m.timing && m.scenario == Scenario::Script);
        // A name the script did not print, and a run without a script.
        assert_eq!(decl.metric("set_rps").value(&r), None);
        assert_eq!(m.value(&ScenarioMetrics::default()), None);
        let v = |n: &str| METRICS.iter().find(|m| m.name == n).unwrap().value(&r);
        assert_eq!(v("script_exit_code"), Some(137.0));
        assert_eq!(v("script_oom_killed"), Some(1.0));
        assert_eq!(v("script_timed_out"), Some(0.0));
        assert_eq!(v("script_elapsed_s"), Some(2.5));
        assert!(METRICS
            .iter()
            .all(|m| m.value(&ScenarioMetrics::default()).is_none()));
    }
}
