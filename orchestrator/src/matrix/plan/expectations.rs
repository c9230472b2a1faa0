//! A matrix's `expect:` entries checked against the metric catalog before
//! anything runs: a known metric, measured by one of the plan's cells (its
//! scenario's, or one its script declares), with a threshold that means
//! something for its kind.

use std::collections::BTreeMap;

use super::{Cell, ScriptDef};
use crate::matrix::file::{ExpectKind, Expectation};
use crate::scenario::catalog::{metric, of_scenario, Metric};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    #[error("expect: unknown metric `{name}`; known metrics: {known}")]
    UnknownMetric { name: String, known: String },
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
            CatalogError::UnknownMetric { name, .. }
            | CatalogError::BadThreshold { name, .. }
            | CatalogError::NotMeasured { name, .. } => name,
        }
    }
}

/// The metrics of one cell: its scenario's, then, for a script, the
/// metrics its matrix entry declares.
pub fn of_cell(cell: &Cell, scripts: &BTreeMap<String, ScriptDef>) -> Vec<Metric> {
    let mut out: Vec<Metric> = of_scenario(cell.job.scenario).cloned().collect();
    if let Some(def) = cell.job.script.as_ref().and_then(|s| scripts.get(&s.name)) {
        out.extend(def.metrics.iter().map(|(n, d)| d.metric(n)));
    }
    out
}

/// The metrics measured by any of `cells`, each once.
pub fn of_cells(cells: &[Cell], scripts: &BTreeMap<String, ScriptDef>) -> Vec<Metric> {
    let mut out: Vec<Metric> = Vec::new();
    for c in cells {
        for m in of_cell(c, scripts) {
            if !out.iter().any(|x| x.name == m.name) {
                out.push(m);
            }
        }
    }
    out
}

/// Checks one `expect:` entry: a metric `measured` by one of the plan's
/// cells, with a threshold that means something for its kind.
pub fn validate(name: &str, e: &Expectation, measured: &[Metric]) -> Result<(), CatalogError> {
    if !measured.iter().any(|m| m.name == name) {
        return Err(match metric(name) {
            Some(m) => CatalogError::NotMeasured {
                name: name.to_string(),
                scenario: m.scenario.to_string(),
            },
            None => CatalogError::UnknownMetric {
                name: name.to_string(),
                known: measured
                    .iter()
                    .map(|m| m.name.as_ref())
                    .collect::<Vec<_>>()
                    .join(", "),
            },
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

/// Checks every `expect:` entry (see [`validate`]) against the metrics
/// the plan's cells measure.
pub fn validate_all(
    expect: &BTreeMap<String, Expectation>,
    measured: &[Metric],
) -> Result<(), CatalogError> {
    expect
        .iter()
        .try_for_each(|(name, e)| validate(name, e, measured))
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
    use mmci_record::Scenario;

    #[test]
    fn validation_names_the_metric_and_the_fix() {
        let a: Vec<Metric> = of_scenario(Scenario::MglruIsolation).cloned().collect();
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
        let probe: Vec<Metric> = of_scenario(Scenario::Probe).cloned().collect();
        let e = validate("touches", &Expectation::Kind(ExpectKind::Increase), &probe).unwrap_err();
        assert!(e.to_string().contains("no mglru_isolation cell"), "{e}");
    }
}
