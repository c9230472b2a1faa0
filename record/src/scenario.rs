//! Which scenario a guest runs: the id every stage of the host and the
//! guest dispatches on (through their scenario registries).

use std::fmt;

use serde::{Deserialize, Serialize};

/// What the guest runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// Say hello and power off: used to probe accelerators and time boots.
    Probe,
    /// Scenario A of docs/workloads.md: many threads thrashing an anonymous
    /// working set in a small memory cgroup over slow swap.
    MglruIsolation,
    /// Scenario B of docs/workloads.md: GFP_NOIO direct reclaim from
    /// dm-verity's dm-bufio allocations while an anonymous hog fills memory.
    /// Always runs the classic LRU (MGLRU off) and an unlimited hog cgroup;
    /// `mglru`, `memcg_max_mb`, `threads`, `working_set_mb` and `thp` are
    /// scenario A's.
    NoioVerity,
    /// A script or command from a guest image (`images/`), run in the image's
    /// root inside scenario A's memory cgroup (MGLRU, dm-delay swap, the
    /// same kernel-side measurements); its exit status and `MMCI-METRIC:`
    /// lines are its own figures. See [`ScriptJob`].
    Script,
    /// Scenario C of docs/scenarios.md: transparent huge-page faults that
    /// need direct compaction while scenario A's reclaimers isolate folios
    /// in their small memory cgroup (does compaction see MGLRU's isolation?).
    CompactionStall,
}

impl Scenario {
    pub const ALL: [Scenario; 5] = [
        Scenario::Probe,
        Scenario::MglruIsolation,
        Scenario::NoioVerity,
        Scenario::Script,
        Scenario::CompactionStall,
    ];

    /// What a bad `scenario=` value is told to give: every name of
    /// [`Scenario::ALL`] (a test checks the list).
    pub const EXPECTED: &'static str =
        "a scenario (probe, mglru_isolation, noio_verity, script, compaction_stall)";

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Probe => "probe",
            Scenario::MglruIsolation => "mglru_isolation",
            Scenario::NoioVerity => "noio_verity",
            Scenario::Script => "script",
            Scenario::CompactionStall => "compaction_stall",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_every_scenario() {
        let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(
            Scenario::EXPECTED,
            format!("a scenario ({})", names.join(", "))
        );
    }
}
