//! Text of a comparison that its terminal report (`comparison`) and the
//! view of the other reports (`view`) share: a kernel's runs line, where a
//! metric's row goes, its result, its change in a fixed column and its
//! effect against the floor.

use crate::analysis::model::{
    Assessment, ExpectationResult, MetricComparison, Status, VariantRuns,
};
use crate::analysis::stats::Change;
use crate::analysis::text;

/// `patched: 9 of 10 runs completed (1 failed)`: one kernel's runs.
pub fn runs_line(v: &VariantRuns) -> String {
    let mut s = format!(
        "{}: {} of {} runs completed",
        v.variant, v.completed, v.planned
    );
    let mut extra = vec![];
    if !v.failures.is_empty() {
        extra.push(format!("{} failed", v.failures.len()));
    }
    if !v.infra.is_empty() {
        extra.push(format!("{} infra failure(s)", v.infra.len()));
    }
    if !v.missing.is_empty() {
        extra.push(format!("{} without result", v.missing.len()));
    }
    if let Some(e) = &v.build_error {
        extra.push(format!("did not build: {e}"));
    }
    if !extra.is_empty() {
        s.push_str(&format!(" ({})", extra.join(", ")));
    }
    s
}

/// Where a row goes: what needs attention first.
pub fn rank(m: &MetricComparison, e: Option<&ExpectationResult>) -> u8 {
    match (e.map(|e| e.status), m.assessment) {
        (Some(Status::Fail), _) => 0,
        (_, Assessment::Regression) if !m.functional_only => 1,
        (Some(Status::Inconclusive), _) => 2,
        (_, Assessment::Improvement | Assessment::Changed) => 3,
        (Some(Status::Pass), _) => 4,
        _ => 5,
    }
}

pub fn result_text(m: &MetricComparison) -> String {
    let mut s = m.assessment.name().to_string();
    if m.functional_only {
        s.push_str(" (TCG: functional only)");
    }
    if m.survivors.is_some() {
        s.push_str(SURVIVORS_NOTE);
    }
    s
}

/// After the result of a row that compares only the runs without an OOM
/// kill (see `analysis::model::Survivors`); the terminal table folds it
/// to [`SURVIVORS_MARK`].
pub const SURVIVORS_NOTE: &str = " (runs without an OOM kill)";
pub const SURVIVORS_MARK: &str = "^";
/// The fitted table's legend for [`SURVIVORS_MARK`].
pub const SURVIVORS_LEGEND: &str =
    "^: only the runs without an OOM kill (one side had a larger share of its runs killed; a killed run's counts cover only its start)";

/// The change without its interval, short enough for a fixed column.
pub fn change_column(c: &Change) -> String {
    match c {
        Change::Relative { rel, .. } => text::pct(*rel),
        Change::FromZero { .. } => "from 0".into(),
        Change::ToZero { .. } => "to 0".into(),
        Change::BothZero => "0".into(),
    }
}

/// What the effect column says in a sentence, under the terminal's table
/// and the markdown's.
pub const EFFECT_LEGEND: &str = "effect: Hodges-Lehmann shift [exact interval] (its level) against the noise floor: REGRESSION, no regression or undecided; beside the verdict, not used by it yet";

/// A relative bound without its `%`: `+2.6`.
fn bound(rel: f64) -> String {
    text::pct(rel).trim_end_matches('%').to_string()
}

/// A shift in the metric's units, signed: `+31520`.
fn signed(v: f64) -> String {
    let s = text::num(v);
    if v > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// `+4.9% [+2.6, +7.3] (99.2%) undecided`: the Hodges-Lehmann shift, its
/// interval, the interval's achieved level (`with_level`) and its decision
/// against the floor; a shift without a percentage (from a baseline median
/// of 0) in the metric's units, `+31520 [+29000, +35645] (99.2%)`; `-`
/// when a side has no value.
pub fn effect_text(m: &MetricComparison, with_level: bool) -> String {
    let Some(e) = &m.effect else {
        return "-".into();
    };
    let level = if with_level {
        format!(" ({:.1}%)", e.level * 100.0)
    } else {
        String::new()
    };
    let mut s = match (e.relative, e.relative_interval) {
        (Some(r), Some((lo, hi))) => {
            format!("{} [{}, {}]{level}", text::pct(r), bound(lo), bound(hi))
        }
        _ => format!(
            "{} [{}, {}]{level}",
            signed(e.shift),
            signed(e.shift_interval.0),
            signed(e.shift_interval.1)
        ),
    };
    if let Some(d) = &m.floor_decision {
        s.push(' ');
        s.push_str(d.word());
    }
    s
}
