//! Scenario script: a command or script from a guest image (`images/`),
//! run by guest-init inside scenario A's set-up. Its own results (how it
//! ended, its `MMCI-METRIC:` values, the end of its output) are read from
//! the records here (`metrics`); its catalog entries and the metrics a
//! matrix declares for it are in `catalog`. The kernel-side counters
//! around it are scenario A's (`scenario::mglru`).

pub mod catalog;
pub mod metrics;

pub use catalog::MetricDecl;
pub use metrics::*;
