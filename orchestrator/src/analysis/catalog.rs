//! The metric catalog as the analysis reads it (the registry itself is
//! `scenario::catalog`, each scenario's entries in its folder): one table entry per metric, with the
//! name used in a matrix's `expect:`, its unit, which direction is better,
//! whether it measures time (and so means little under TCG), its noise
//! floor and how to read it from a run. Scenario B's metrics join as more
//! entries with their own extractors; a matrix's scripts add the metrics
//! they declare (`of_cell`); nothing else changes.

pub use crate::matrix::plan::expectations::{
    kind_name, of_cell, of_cells, validate, validate_all, CatalogError,
};
use crate::results::RunResult;
pub use crate::scenario::catalog::{
    all, is_per_work, known_names, metric, of_scenario, work_unit, Better, Extract, Metric,
};

/// `m`'s value in run `r`; None when the run does not have it.
pub fn value(m: &Metric, r: &RunResult) -> Option<f64> {
    m.value(&r.metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extractors_read_a_recorded_run() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/mglru-completed/run.json");
        let r: RunResult = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let v = |n: &str| value(metric(n).unwrap(), &r);
        assert_eq!(v("throttle_isolated"), Some(0.0));
        assert_eq!(v("touches"), Some(40064.0));
        assert_eq!(v("touches_per_s"), Some(40064.0 * 1000.0 / 23718.0));
        // Read from run.json's `scan_efficiency`, as written before the rename.
        assert_eq!(v("reclaimed_per_isolated"), Some(0.3507538055315576));
        assert_eq!(v("refaults_anon"), Some(20854.0));
        assert_eq!(v("psi_full_us"), Some(13058801.0));
        let mut none = r.clone();
        none.metrics = crate::scenario::ScenarioMetrics::None;
        assert!(all().all(|m| value(m, &none).is_none()));
    }
}
