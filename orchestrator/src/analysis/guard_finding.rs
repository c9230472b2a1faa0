//! A guard's decision as data (the typed finding every report renders and
//! tests assert on by field): `decision` makes it, `model`'s `GuardResult`
//! carries it. Kept apart from both so that the model does not import the
//! procedure that fills it.

use serde::{Deserialize, Serialize};

use super::effect::Decision;

/// What kind of guard a decision is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardKind {
    /// A size against its floor (two rank tests).
    Size,
    /// Runs with an OOM kill (Fisher's exact test).
    OomRuns,
}

/// One guard's decision in one cell for one candidate: the finding as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuardDecision {
    pub kind: GuardKind,
    pub decision: Decision,
    /// One-sided p of "worse than the floor" (the OOM guard: of more runs
    /// with a kill).
    pub p_regression: f64,
    /// The level Holm's procedure held p_regression to (the step it was
    /// tested at); None where the procedure stopped before it.
    pub fail_level: Option<f64>,
    /// One-sided p of "within the floor" (size guards).
    pub p_no_regression: Option<f64>,
    /// The level p_no_regression is held to (one look's share of alpha).
    pub pass_level: f64,
    /// Relative estimate (Hodges-Lehmann) and its interval at the effect's
    /// level, as `effect` gives them (size guards).
    pub estimate: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub interval_level: Option<f64>,
    /// The relative floor (size guards).
    pub floor: Option<f64>,
    pub base_runs: usize,
    pub candidate_runs: usize,
    /// The smallest worsening the regression test would have caught with
    /// `decision::POWER` (relative, size guards; the OOM guard: a kill rate).
    pub detectable: Option<f64>,
    /// `detectable` exceeds twice the floor (size guards), or is above
    /// half the runs (the OOM guard).
    pub underpowered: bool,
}
