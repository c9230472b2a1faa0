//! The scenarios of docs/workloads.md, one folder each: what their runs
//! measure, derived from the guest's records. `mglru` is scenario A (MGLRU
//! isolation throttling), `noio` scenario B (GFP_NOIO direct reclaim through
//! dm-verity, with the scratch disks it needs), `script` a command from a
//! guest image run inside scenario A's set-up (its own exit status and
//! `MMCI-METRIC:` figures).

use std::collections::BTreeMap;

pub mod catalog;
pub mod mglru;
pub mod noio;
pub mod script;

pub use mglru::{mglru_metrics, MglruMetrics, THROTTLE_ISOLATED};
pub use noio::{noio_metrics, NoioMetrics};
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
