//! Scenario A: MGLRU isolation throttling (many reclaimers in a small memcg
//! over slow swap).

pub mod catalog;
pub mod metrics;

pub use metrics::*;
