//! A matrix's `expect:` entries checked against the metric catalog before
//! anything runs: a known metric, measured by one of the plan's scenarios,
//! with a threshold that means something for its kind.

use std::collections::BTreeMap;

use mmci_record::Scenario;

use crate::matrix::file::{ExpectKind, Expectation};
use crate::scenario::catalog::{known_names, metric};

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

/// Checks every `expect:` entry (see [`validate`]).
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
