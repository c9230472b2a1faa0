//! What one run measured, by scenario: one enum on `RunResult` instead of an
//! optional field per scenario, and the shim that reads the previous
//! run.json shape (format 1: `metrics`, `noio_metrics` and `script`, each
//! optional) into it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::scenario::{CompactionMetrics, MglruMetrics, NoioMetrics, ScriptMetrics};

/// A run's scenario metrics. Which variant a run gets is its scenario's
/// (`registry::Def::metrics`); the accessors below are what the rest of mmci
/// reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioMetrics {
    /// Nothing measured (a probe, or a run that ended before its counters).
    #[default]
    None,
    /// Scenario A.
    Mglru(MglruMetrics),
    /// Scenario B (boxed: many times the others' size).
    Noio(Box<NoioMetrics>),
    /// Scenario script: scenario A's kernel-side counters around the
    /// script, and how the script ended with its own figures.
    Script {
        kernel: Option<MglruMetrics>,
        script: Option<ScriptMetrics>,
    },
    /// Scenario C (boxed like scenario B's: many times scenario A's size).
    Compaction(Box<CompactionMetrics>),
}

impl ScenarioMetrics {
    /// Scenario A's counters: a scenario A run's, or those around a script.
    pub fn mglru(&self) -> Option<&MglruMetrics> {
        match self {
            ScenarioMetrics::Mglru(m) => Some(m),
            ScenarioMetrics::Script { kernel, .. } => kernel.as_ref(),
            _ => None,
        }
    }

    pub fn mglru_mut(&mut self) -> Option<&mut MglruMetrics> {
        match self {
            ScenarioMetrics::Mglru(m) => Some(m),
            ScenarioMetrics::Script { kernel, .. } => kernel.as_mut(),
            _ => None,
        }
    }

    /// Scenario B's metrics.
    pub fn noio(&self) -> Option<&NoioMetrics> {
        match self {
            ScenarioMetrics::Noio(m) => Some(m.as_ref()),
            _ => None,
        }
    }

    /// Scenario C's metrics.
    pub fn compaction(&self) -> Option<&CompactionMetrics> {
        match self {
            ScenarioMetrics::Compaction(m) => Some(m.as_ref()),
            _ => None,
        }
    }

    /// A script's ending and its own figures.
    pub fn script(&self) -> Option<&ScriptMetrics> {
        match self {
            ScenarioMetrics::Script { script, .. } => script.as_ref(),
            _ => None,
        }
    }

    pub fn is_none(&self) -> bool {
        *self == ScenarioMetrics::None
    }

    /// From run.json format 1's three optional fields. A script's run is
    /// the one with script results; a format-1 script run without them
    /// reads as scenario A's counters, which every reader sees the same
    /// way (`mglru()`; the scenario itself is the job's).
    pub fn from_format_1(
        mglru: Option<MglruMetrics>,
        noio: Option<NoioMetrics>,
        script: Option<ScriptMetrics>,
    ) -> ScenarioMetrics {
        match (mglru, noio, script) {
            (kernel, _, Some(s)) => ScenarioMetrics::Script {
                kernel,
                script: Some(s),
            },
            (_, Some(n), None) => ScenarioMetrics::Noio(Box::new(n)),
            (Some(m), None, None) => ScenarioMetrics::Mglru(m),
            (None, None, None) => ScenarioMetrics::None,
        }
    }
}

/// run.json's keys for the metrics, flattened into `RunResult`: format 2
/// writes `scenario_metrics`; format 1's keys are still read.
#[derive(Deserialize)]
struct OnDisk {
    #[serde(default)]
    scenario_metrics: Option<ScenarioMetrics>,
    #[serde(default)]
    metrics: Option<MglruMetrics>,
    #[serde(default)]
    noio_metrics: Option<NoioMetrics>,
    #[serde(default)]
    script: Option<ScriptMetrics>,
}

/// `#[serde(flatten, with = "crate::scenario::metrics::on_disk")]`.
pub mod on_disk {
    use super::*;

    pub fn serialize<S: Serializer>(m: &ScenarioMetrics, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            scenario_metrics: &'a ScenarioMetrics,
        }
        Out {
            scenario_metrics: m,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ScenarioMetrics, D::Error> {
        let o = OnDisk::deserialize(d)?;
        Ok(match o.scenario_metrics {
            Some(m) => m,
            None => ScenarioMetrics::from_format_1(o.metrics, o.noio_metrics, o.script),
        })
    }
}
