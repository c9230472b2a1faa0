//! How a guest run ended, as its result records it: the outcome (only
//! completed runs feed statistics) and the evidence. Classifying a run is
//! `run::outcome`'s job.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// guest-init sent its last record with ok = true.
    Completed,
    /// Scenario B completed, but its preconditions did not hold (or no
    /// GFP_NOIO direct reclaim happened): the case was not reproduced, so
    /// the run is no evidence either way and never counts as a pass.
    NotReproduced,
    /// guest-init ran but a set-up step failed (it says which).
    GuestError,
    /// The run finished, but the kernel failed a check of its own state
    /// after the workload (isolation counters not back at 0): a bug of the
    /// kernel, like a crash, whatever its metrics say.
    CheckFailed,
    /// The kernel never reached our PID 1.
    BootFailure,
    /// Panic, oops, BUG after PID 1 started (or the guest died without a word).
    KernelCrash,
    /// PID 1 started, then nothing ended the run before the timeout.
    Hang,
    /// Not the kernel's fault: QEMU could not start or the accelerator failed.
    InfraFailure,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::NotReproduced => "not reproduced",
            Outcome::GuestError => "guest error",
            Outcome::CheckFailed => "failed check",
            Outcome::BootFailure => "boot failure",
            Outcome::KernelCrash => "kernel crash",
            Outcome::Hang => "hang",
            Outcome::InfraFailure => "infra failure",
        }
    }

    /// Worth running again (the kernel is not to blame).
    pub fn retryable(self) -> bool {
        self == Outcome::InfraFailure
    }
}

/// The outcome with the evidence for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    pub outcome: Outcome,
    /// One line for tables.
    pub reason: String,
    /// The console text of a crash: the last splat on the console (the one
    /// that killed the kernel), from its header to the end of its call
    /// trace; else 60 lines from the first crash line.
    pub crash_report: Option<String>,
}
