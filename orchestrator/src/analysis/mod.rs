//! The analysis of a matrix's results: base against each candidate, per
//! cell and metric, with small-sample statistics, the matrix's
//! expectations and a verdict.
//!
//! Data flows one way: `catalog` (which metrics exist and how to read them
//! from a run), `stats` (pure statistics), `survivors` (which runs a
//! cell compares when OOM kills cut some short) and `regime` (whether a
//! cell ran in the regime its matrix calibrated it for) feed `compare`, which
//! builds the [`model::Comparison`] of a results dir, evaluating
//! `expect`ations and keeping the guest's time `series`. Renderers only
//! read the model: `terminal` here, others later. `text` formats numbers
//! for all of them.

pub mod anatomy;
pub mod catalog;
pub mod claims;
pub mod compare;
pub mod decision;
pub mod drift;
pub mod effect;
pub mod expect;
pub mod guard_finding;
pub mod model;
pub mod policy;
pub mod regime;
pub mod resample;
pub mod sequential;
pub mod series;
pub mod spread;
pub mod stats;
pub mod survivors;
pub mod synthetic;
pub mod text;
pub mod verdict;

pub use compare::{analyse_dir, compare, AnalysisError};
pub use model::{Comparison, Options, Status, Test, COMPARISON_FORMAT};

use std::path::Path;

/// The analysis options from the command line's values, checked.
pub fn options_from_args(
    alpha: f64,
    noise_floor: f64,
    metric_noise_floors: &[String],
    min_runs: usize,
    test: Test,
) -> Result<Options, String> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(format!(
            "--alpha {alpha}: give a level between 0 and 1, e.g. 0.01"
        ));
    }
    let floor_ok = |f: f64| f.is_finite() && f >= 0.0;
    if !floor_ok(noise_floor) {
        return Err(format!(
            "--noise-floor {noise_floor}: give a relative change of 0 or more (0.05 = 5%)"
        ));
    }
    if min_runs < 2 {
        return Err(format!(
            "--min-runs {min_runs}: at least 2 (a spread needs two runs)"
        ));
    }
    let mut floors = std::collections::BTreeMap::new();
    for s in metric_noise_floors {
        let (name, f) = s
            .split_once('=')
            .ok_or_else(|| format!("--metric-noise-floor {s}: expected METRIC=FRACTION"))?;
        if catalog::metric(name).is_none() {
            return Err(format!(
                "--metric-noise-floor {s}: unknown metric `{name}`; known metrics: {}",
                catalog::known_names()
            ));
        }
        let f: f64 = f.parse().ok().filter(|f| floor_ok(*f)).ok_or_else(|| {
            format!("--metric-noise-floor {s}: `{f}` is not a fraction of 0 or more")
        })?;
        floors.insert(name.to_string(), f);
    }
    Ok(Options {
        alpha,
        noise_floor,
        metric_noise_floors: floors,
        min_runs,
        test,
        ..Options::default()
    })
}

/// Writes the comparison as pretty JSON, atomically.
pub fn write_json(path: &Path, c: &Comparison) -> Result<(), AnalysisError> {
    let bytes = serde_json::to_vec_pretty(c).expect("serializable");
    crate::host::fs::write_atomic(path, &bytes).map_err(|source| AnalysisError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_options_are_checked() {
        let o = options_from_args(0.05, 0.1, &["touches=0.2".into()], 5, Test::Welch).unwrap();
        assert_eq!((o.alpha, o.noise_floor, o.min_runs), (0.05, 0.1, 5));
        assert_eq!(o.metric_noise_floors["touches"], 0.2);
        let e = |r: Result<Options, String>| r.unwrap_err();
        assert!(e(options_from_args(0.0, 0.05, &[], 3, Test::Welch)).starts_with("--alpha 0:"));
        assert!(
            e(options_from_args(0.01, -1.0, &[], 3, Test::Welch)).starts_with("--noise-floor -1:")
        );
        assert!(e(options_from_args(0.01, 0.05, &[], 1, Test::Welch)).starts_with("--min-runs 1:"));
        let err = e(options_from_args(
            0.01,
            0.05,
            &["touchez=0.1".into()],
            3,
            Test::Welch,
        ));
        assert!(
            err.contains("unknown metric `touchez`; known metrics: throttle_isolated"),
            "{err}"
        );
        let err = e(options_from_args(
            0.01,
            0.05,
            &["touches=lots".into()],
            3,
            Test::Welch,
        ));
        assert!(err.contains("`lots` is not a fraction"), "{err}");
    }
}
