//! One check per stage of a run, as NIPA and kernel-patches-daemon post
//! theirs, so that a maintainer sees in patchwork's list where a series
//! broke: `apply` (the series on its base), `build` (the candidate's
//! kernels), `boot` (its runs booted and completed), `splats` (no new
//! splat), and one per scenario the matrix ran (its part of the verdict).
//!
//! Each state is read from what a results dir already holds, never made
//! up: the manifest's kernels and failed kernels (with the step a kernel
//! stopped at), the runs' outcomes, the splats with their status, the
//! verdict of each scenario's cells. A stage the results say nothing of
//! (no kernel applied the series: a given image, or a failure before
//! applying) has no state: it is not posted, and only a pending check of
//! it (`--start`) is closed, saying why there is no result.

use std::collections::BTreeMap;

use super::CheckState;
use crate::analysis::model::{Comparison, SplatStatus, VariantRuns, Verdict};
use crate::kernel::FailedStep;
use crate::results::dir::{target_text, Manifest};
use crate::results::outcome::Outcome;
use crate::results::RunResult;

/// The stages every run has, in posting order; the scenarios follow.
pub const FIXED: [&str; 4] = ["apply", "build", "boot", "splats"];

/// The longest description a stage's check gets (a build error can carry
/// pages of make's output): one line in patchwork's list.
pub const MAX_DESCRIPTION: usize = 300;

/// What the results say of one stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StageOutcome {
    /// A state and one line saying why.
    Judged {
        state: CheckState,
        description: String,
    },
    /// Nothing in the results: why.
    NoData(String),
}

/// One stage: its name (the check's context is `CONTEXT-NAME`) and what
/// the results say of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    pub name: String,
    pub outcome: StageOutcome,
}

fn judged(state: CheckState, text: String) -> StageOutcome {
    StageOutcome::Judged {
        state,
        description: one_line(&format!("mmci: {text}")),
    }
}

/// `text` on one line of at most [`MAX_DESCRIPTION`] characters.
pub fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX_DESCRIPTION {
        return flat;
    }
    let mut cut: String = flat.chars().take(MAX_DESCRIPTION - 1).collect();
    cut.push('…');
    cut
}

/// The names of the stages of a run of `plan`'s matrix: the fixed ones,
/// then each scenario its cells run, once, in the plan's order (the short
/// id the scenario registry names it by, `mglru_isolation`).
pub fn names(m: Option<&Manifest>) -> Vec<String> {
    let mut out: Vec<String> = FIXED.iter().map(|s| s.to_string()).collect();
    for cell in m.map_or(&[][..], |m| &m.plan.cells[..]) {
        let name = crate::scenario::registry::of(cell.job.scenario).id.name();
        if !out.iter().skip(FIXED.len()).any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Every stage of the results dir whose manifest is `m`, runs `runs` and
/// comparison `c`, in [`names`]' order.
pub fn stages(m: &Manifest, runs: &BTreeMap<String, RunResult>, c: &Comparison) -> Vec<Stage> {
    let candidates: Vec<&str> = c.candidates.iter().map(String::as_str).collect();
    let cand_runs: Vec<&VariantRuns> = c
        .variants
        .iter()
        .filter(|v| candidates.contains(&v.variant.as_str()))
        .collect();
    let not_built = kernels_not_built(m, &candidates);
    let mut out = vec![
        Stage {
            name: "apply".into(),
            outcome: apply(m, &candidates),
        },
        Stage {
            name: "build".into(),
            outcome: build(m, &candidates),
        },
        Stage {
            name: "boot".into(),
            outcome: boot(&cand_runs, not_built),
        },
        Stage {
            name: "splats".into(),
            outcome: splats(c, &cand_runs, not_built),
        },
    ];
    for name in names(Some(m)).into_iter().skip(FIXED.len()) {
        let outcome = scenario(m, runs, c, &name);
        out.push(Stage { name, outcome });
    }
    out
}

/// Why the candidate's runs may be missing: its kernels did not apply or
/// build.
fn kernels_not_built(m: &Manifest, candidates: &[&str]) -> Option<&'static str> {
    let failed: Vec<_> = m
        .failed_kernels
        .iter()
        .filter(|f| candidates.contains(&f.variant.as_str()))
        .collect();
    if failed.is_empty() {
        None
    } else if failed.iter().all(|f| f.step == Some(FailedStep::Apply)) {
        Some("the series did not apply")
    } else {
        Some("the candidate's kernel was not built")
    }
}

/// Prefixes `text` with the variant's name when there are several
/// candidates.
fn named(candidates: &[&str], variant: &str, text: String) -> String {
    if candidates.len() > 1 {
        format!("{variant}: {text}")
    } else {
        text
    }
}

/// The series applied on its base (each candidate kernel built with it,
/// or that failed after applying it), or did not (the failure names the
/// patch).
fn apply(m: &Manifest, candidates: &[&str]) -> StageOutcome {
    let mut applied: Vec<String> = vec![];
    let mut failed: Vec<String> = vec![];
    let push = |list: &mut Vec<String>, s: String| {
        if !list.contains(&s) {
            list.push(s);
        }
    };
    for k in m
        .kernels
        .iter()
        .filter(|k| candidates.contains(&k.variant.as_str()) && k.kernel.series_hash.is_some())
    {
        let i = &k.kernel;
        let base = match (i.series.as_ref().and_then(|s| s.base.as_ref()), &i.tree) {
            (Some(b), _) => format!("{} ({})", b.name, short(&b.commit)),
            (None, Some(t)) => format!("{t} {}", short(i.tree_commit.as_deref().unwrap_or("?"))),
            (None, None) => "its base".into(),
        };
        push(
            &mut applied,
            named(
                candidates,
                &k.variant,
                format!("the series applied on {base}"),
            ),
        );
    }
    for f in m
        .failed_kernels
        .iter()
        .filter(|f| candidates.contains(&f.variant.as_str()))
    {
        match f.step {
            Some(FailedStep::Apply) => {
                push(&mut failed, named(candidates, &f.variant, f.error.clone()))
            }
            Some(FailedStep::Build) => push(
                &mut applied,
                named(candidates, &f.variant, "the series applied".into()),
            ),
            None => {}
        }
    }
    if !failed.is_empty() {
        judged(CheckState::Fail, failed.join("; "))
    } else if !applied.is_empty() {
        judged(CheckState::Success, applied.join("; "))
    } else {
        StageOutcome::NoData(
            "no kernel of the candidate had the series applied here (a given image, or a failure before applying it)"
                .into(),
        )
    }
}

/// The first 12 characters of a commit id (a manifest's, which a series'
/// build could have rewritten: any text, so cut on a char boundary).
fn short(commit: &str) -> &str {
    commit
        .char_indices()
        .nth(12)
        .map_or(commit, |(i, _)| &commit[..i])
}

/// Every kernel of the candidate built, or which did not. A kernel whose
/// series did not apply was not built: it is the apply stage's.
fn build(m: &Manifest, candidates: &[&str]) -> StageOutcome {
    let built: Vec<_> = m
        .kernels
        .iter()
        .filter(|k| candidates.contains(&k.variant.as_str()) && k.kernel.build_key.is_some())
        .collect();
    let failed: Vec<_> = m
        .failed_kernels
        .iter()
        .filter(|f| candidates.contains(&f.variant.as_str()) && f.step != Some(FailedStep::Apply))
        .collect();
    let total = built.len() + failed.len();
    let what = |variant: &str, target: String| format!("{variant} ({target})");
    if let Some(f) = failed.first() {
        let first = format!(
            "{} did not build: {}",
            what(&f.variant, target_text(f.arch, f.flavour)),
            f.error
        );
        return judged(
            CheckState::Fail,
            if total == 1 {
                first
            } else {
                format!("{} of {total} kernels did not build; {first}", failed.len())
            },
        );
    }
    if built.is_empty() {
        let why = if kernels_not_built(m, candidates).is_some() {
            "the series did not apply, so no kernel of the candidate was built"
        } else {
            "no kernel of the candidate was built here (a given image)"
        };
        return StageOutcome::NoData(why.into());
    }
    let list: Vec<String> = built.iter().map(|k| what(&k.variant, k.target())).collect();
    let mut text = if total == 1 {
        format!("{} built", list[0])
    } else {
        format!("{total} kernels built: {}", list.join(", "))
    };
    let warnings: usize = built.iter().map(|k| k.new_warnings.len()).sum();
    if warnings > 0 {
        text.push_str(&format!(
            "; {warnings} new compiler warning{}",
            if warnings == 1 { "" } else { "s" }
        ));
    }
    judged(CheckState::Success, text)
}

/// Every run of the candidate booted and completed, or how many did not
/// (infra failures: a warning, never the kernel's).
fn boot(cand: &[&VariantRuns], not_built: Option<&str>) -> StageOutcome {
    let results: usize = cand
        .iter()
        .map(|v| v.completed + v.failures.len() + v.infra.len())
        .sum();
    if results == 0 {
        return StageOutcome::NoData(no_runs(not_built));
    }
    let mut fails = vec![];
    let mut infra = vec![];
    let mut missing = vec![];
    let mut fine = vec![];
    for v in cand {
        let of = v.completed + v.failures.len() + v.infra.len();
        if let Some(first) = v.failures.first() {
            let mut by: Vec<(Outcome, usize)> = vec![];
            for f in &v.failures {
                match by.iter_mut().find(|(o, _)| *o == f.outcome) {
                    Some((_, n)) => *n += 1,
                    None => by.push((f.outcome, 1)),
                }
            }
            let kinds: Vec<String> = by
                .iter()
                .map(|(o, n)| format!("{n} {}", o.name()))
                .collect();
            fails.push(format!(
                "{} of {of} runs of {} did not complete ({}); first: {}: {}",
                v.failures.len(),
                v.variant,
                kinds.join(", "),
                first.run,
                first.reason
            ));
        } else if !v.infra.is_empty() {
            infra.push(format!(
                "{} of {of} runs of {} failed for infra reasons (QEMU or the accelerator, not the kernel): {}",
                v.infra.len(),
                v.variant,
                v.infra[0].reason
            ));
        } else if !v.missing.is_empty() {
            missing.push(format!(
                "{} of {} planned runs of {} have no result",
                v.missing.len(),
                v.planned,
                v.variant
            ));
        } else {
            fine.push(format!(
                "all {} runs of {} booted and completed",
                v.completed, v.variant
            ));
        }
    }
    if !fails.is_empty() {
        judged(CheckState::Fail, fails.join("; "))
    } else if !infra.is_empty() || !missing.is_empty() {
        infra.extend(missing);
        judged(CheckState::Warning, infra.join("; "))
    } else {
        judged(CheckState::Success, fine.join("; "))
    }
}

fn no_runs(not_built: Option<&str>) -> String {
    match not_built {
        Some(why) => format!("no run of the candidate has a result: {why}"),
        None => "no run of the candidate has a result here".into(),
    }
}

/// No new splat on the candidate, or the first new one's title; splats
/// the baseline has too are the tree's, not the series'.
fn splats(c: &Comparison, cand: &[&VariantRuns], not_built: Option<&str>) -> StageOutcome {
    // Runs with a console: every result but infra failures.
    let consoles: usize = cand.iter().map(|v| v.completed + v.failures.len()).sum();
    if consoles == 0 {
        return StageOutcome::NoData(no_runs(not_built));
    }
    let new: Vec<_> = c
        .splats
        .iter()
        .filter(|f| f.status == SplatStatus::New)
        .filter_map(|f| f.hits.iter().skip(1).find(|h| h.runs > 0).map(|h| (f, h)))
        .collect();
    if let Some((f, h)) = new.first() {
        let mut text = format!(
            "new splat: {} ({}: {} of {} runs, not on {})",
            f.title, h.variant, h.runs, h.of, c.baseline
        );
        if new.len() > 1 {
            text.push_str(&format!("; {} more new", new.len() - 1));
        }
        return judged(CheckState::Fail, text);
    }
    let old: Vec<_> = c
        .splats
        .iter()
        .filter(|f| f.status == SplatStatus::PreExisting)
        .collect();
    let mut text = format!(
        "no new splat in {consoles} run{} of the candidate",
        if consoles == 1 { "" } else { "s" }
    );
    if let Some(f) = old.first() {
        text.push_str(&format!(
            "; {} pre-existing (on {} too): {}",
            old.len(),
            c.baseline,
            f.title
        ));
    }
    judged(CheckState::Success, text)
}

/// The verdict of `scenario`'s cells alone: the matrix restricted to them,
/// compared as the whole is (its guards, expectations, claims, splats and
/// runs). Kernels that did not build are the build stage's: here their
/// runs are runs without a result.
pub fn scenario_verdict(
    m: &Manifest,
    runs: &BTreeMap<String, RunResult>,
    c: &Comparison,
    scenario: &str,
) -> (Verdict, usize) {
    let mut part = m.clone();
    part.plan
        .cells
        .retain(|cell| cell.job.scenario.name() == scenario);
    part.failed_kernels.clear();
    let pc = crate::analysis::compare(&part, runs, &c.expect, vec![], &c.options);
    let results = pc
        .variants
        .iter()
        .filter(|v| pc.candidates.contains(&v.variant))
        .map(|v| v.completed + v.failures.len() + v.infra.len())
        .sum();
    (pc.verdict, results)
}

fn scenario(
    m: &Manifest,
    runs: &BTreeMap<String, RunResult>,
    c: &Comparison,
    name: &str,
) -> StageOutcome {
    let (v, results) = scenario_verdict(m, runs, c, name);
    if results == 0 {
        return StageOutcome::NoData(no_runs(kernels_not_built(
            m,
            &c.candidates.iter().map(String::as_str).collect::<Vec<_>>(),
        )));
    }
    let mut text = v.headline();
    if let Some(r) = v.reasons.first() {
        text.push_str(&format!("; {r}"));
        if v.reasons.len() > 1 {
            text.push_str(&format!(" (and {} more)", v.reasons.len() - 1));
        }
    }
    judged(CheckState::of_verdict(v.status), text)
}

#[cfg(test)]
mod tests;
