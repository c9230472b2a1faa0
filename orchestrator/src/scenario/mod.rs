//! The scenarios of docs/workloads.md, one folder each, registered in one
//! list (`registry`): what their guests need, what their runs measure
//! (derived from the guest's records), their catalog entries, report lines
//! and anatomy. `mglru` is scenario A (MGLRU isolation throttling), `noio`
//! scenario B (GFP_NOIO direct reclaim through dm-verity, with the scratch
//! disks it needs), `script` a command from a guest image run inside
//! scenario A's set-up (its own exit status and `MMCI-METRIC:` figures),
//! `compaction` scenario C (THP faults needing direct compaction beside
//! scenario A's reclaimers), `probe` a guest that says hello. Code outside `scenario/` asks the
//! registry; `tests/scenario_registry.rs` checks that it names no scenario.

use std::collections::BTreeMap;

pub mod catalog;
pub mod compaction;
pub mod def;
pub mod metric;
pub mod metrics;
pub mod mglru;
pub mod noio;
pub mod probe;
pub mod registry;
pub mod report;
pub mod script;

/// The anatomy of the scenarios that have one (scenario B's), for the
/// comparison and its reports.
pub use noio::anatomy;

pub use compaction::{compaction_metrics, CompactionMetrics};
pub use metrics::ScenarioMetrics;
pub use mglru::{mglru_metrics, MglruMetrics, THROTTLE_ISOLATED};
pub use noio::{noio_metrics, NoioMetrics};
/// A metric a matrix declares for its scripts (`scripts: NAME: metrics:`),
/// under the name the matrix knows it by.
pub use script::MetricDecl as DeclaredMetric;
pub use script::{script_metrics, ScriptMetrics};

/// Counters from a snapshot record (vmstat, memory.stat, ...), by name.
pub(crate) type Counters = BTreeMap<String, u64>;

/// Growth of a counter between two snapshots (0 if it went backwards).
pub(crate) fn delta(before: &Counters, after: &Counters, key: &str) -> u64 {
    after
        .get(key)
        .copied()
        .unwrap_or(0)
        .saturating_sub(before.get(key).copied().unwrap_or(0))
}
