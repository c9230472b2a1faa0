//! The verdict of a comparison: what fails it, what leaves it undecided,
//! when there was nothing to judge, and the one line that says so.
//! FAIL: a kernel that did not build, a run that did not complete, a new
//! splat, a failed expectation, a guard of the regression policy that
//! regressed, more runs with an OOM kill, a claim of the cover letter
//! contradicted with significance. INCONCLUSIVE: otherwise, an expectation
//! that could not be decided or runs without a result. NO VERDICT:
//! otherwise, nothing was judged (one kernel, too few runs, only timings
//! under TCG), or expectations were met while none of the regression
//! policy's guards could be: never a pass. PASS: the rest, read as "no
//! regression found in N runs on M cells", naming the guards (or, where no
//! guard applies at all, the expectations met). Whatever the verdict, the
//! line names the cells whose baseline ran out of the regime the matrix
//! calibrated them for (`analysis::regime`).

use super::catalog;
use super::guard_finding::GuardKind;
use super::model::*;

/// The matrix calibrated the cell's baseline to be OOM-killed in most runs.
fn oom_regime(c: &CellComparison) -> bool {
    c.regime
        .is_some_and(|r| r.expected == crate::matrix::file::BaseOom::Most)
}

/// The verdict of one comparison's parts, by the rules above.
pub fn verdict(
    cells: &[CellComparison],
    variants: &[VariantRuns],
    splats: &[SplatFinding],
    claims: &[ClaimCheck],
) -> Verdict {
    let mut fails = vec![];
    let mut unsure = vec![];
    let mut not_judged = vec![];
    let mut unreached = vec![];
    let mut judged = 0usize;
    // A splat the candidate brings is a regression whatever the numbers say.
    for f in splats.iter().filter(|f| f.status == SplatStatus::New) {
        for h in f.hits.iter().skip(1).filter(|h| h.runs > 0) {
            fails.push(format!(
                "{}: {} in {} of {} runs (not on {})",
                h.variant, f.title, h.runs, h.of, f.hits[0].variant
            ));
        }
    }
    for v in variants {
        if let Some(e) = &v.build_error {
            fails.push(format!("{}: did not build: {e}", v.variant));
        }
        for f in &v.failures {
            fails.push(format!(
                "{}: {} in {}: {}",
                v.variant,
                f.outcome.name(),
                f.run,
                f.reason
            ));
        }
        if !v.missing.is_empty() && v.build_error.is_none() {
            unsure.push(format!(
                "{}: {} of {} planned runs have no result",
                v.variant,
                v.missing.len(),
                v.planned
            ));
        }
    }
    let (mut passed, mut failed, mut inconclusive) = (0, 0, 0);
    let mut guards: Vec<String> = vec![];
    for c in cells {
        for cand in &c.candidates {
            for g in &cand.guards {
                let line = format!(
                    "{} {}: {}: {}",
                    cell_name(c),
                    cand.variant,
                    g.metric,
                    g.reason
                );
                match g.status {
                    Some(Status::Fail) => {
                        judged += 1;
                        fails.push(format!(
                            "{} {}: {} ({}): {}",
                            cell_name(c),
                            cand.variant,
                            g.metric,
                            g.why,
                            g.reason
                        ));
                    }
                    // Undecided at the floor with the runs there are: the
                    // verdict cannot say PASS or FAIL.
                    Some(Status::Inconclusive | Status::NoVerdict) => {
                        judged += 1;
                        unsure.push(line);
                    }
                    Some(_) => judged += 1,
                    // A guard with a test that the runs (the survivors of
                    // OOM kills, most often) are too few to reach: where
                    // the matrix calibrated base to be OOM-killed in most
                    // runs, the OOM guard judges the cell and this one is
                    // not judged; anywhere else a PASS would rest on the
                    // OOM guard alone while nothing is known of the swap
                    // and fault traffic: undecided, and the budget adds
                    // runs to it. (When no guard at all could be judged,
                    // that is NO VERDICT's case: see below.)
                    None if g
                        .decision
                        .as_ref()
                        .is_some_and(|d| d.kind == GuardKind::Size)
                        && !oom_regime(c) =>
                    {
                        unreached.push(line)
                    }
                    None => not_judged.push(line),
                }
                if g.status.is_some() && !guards.contains(&g.metric) {
                    guards.push(g.metric.clone());
                }
            }
            for e in &cand.expectations {
                let line = || {
                    format!(
                        "{} {}: {} {}: {}",
                        cell_name(c),
                        cand.variant,
                        e.metric,
                        catalog::kind_name(e.kind),
                        e.reason
                    )
                };
                match e.status {
                    Status::Pass => {
                        passed += 1;
                        judged += 1;
                    }
                    Status::Fail => {
                        failed += 1;
                        judged += 1;
                        fails.push(line());
                    }
                    Status::Inconclusive | Status::NoVerdict => {
                        inconclusive += 1;
                        unsure.push(line());
                    }
                }
            }
        }
    }
    let mut counts = ClaimCounts::default();
    for k in claims {
        match k.finding {
            Finding::Agrees if k.by_construction => counts.by_construction += 1,
            Finding::Agrees => {
                counts.agree += 1;
                judged += 1;
            }
            Finding::Contradicts => {
                counts.contradict += 1;
                judged += 1;
                fails.push(format!(
                    "{} {}: the cover letter claims {} {} ({}, line {}), measured {}: {}",
                    k.cell.as_deref().unwrap_or("-"),
                    k.variant,
                    k.row,
                    k.claimed,
                    k.setup,
                    k.line,
                    k.measured.as_deref().unwrap_or("-"),
                    k.reason
                ));
            }
            Finding::NotSignificant => counts.not_significant += 1,
            Finding::NotMeasured => counts.not_measured += 1,
        }
    }
    // Undecided only beside a guard that was judged: with none at all
    // (expectations met or not), nothing says what the series breaks,
    // which is NO VERDICT's case.
    if guards.is_empty() {
        not_judged.append(&mut unreached);
    } else {
        unsure.append(&mut unreached);
    }
    let runs: usize = variants.iter().map(|v| v.completed).sum();
    let n_cells = cells.len();
    let no_candidate = cells.iter().all(|c| c.candidates.is_empty());
    // Expectations met say the series does what it claims, not that it
    // breaks nothing: with guards in the policy and none of them judged,
    // "no regression found" would be unsupported.
    let guards_unjudged = guards.is_empty() && !not_judged.is_empty();
    let status = if !fails.is_empty() {
        Status::Fail
    } else if !unsure.is_empty() {
        Status::Inconclusive
    } else if judged == 0 || no_candidate || guards_unjudged {
        Status::NoVerdict
    } else {
        Status::Pass
    };
    let met = {
        let mut parts = vec![];
        if passed > 0 {
            parts.push(format!("{passed} expectation(s) met"));
        }
        if counts.agree > 0 {
            parts.push(format!(
                "{} of the cover letter's claims agree",
                counts.agree
            ));
        }
        parts.join("; ")
    };
    let in_runs = format!(
        "in {runs} run{} on {n_cells} cell{}",
        if runs == 1 { "" } else { "s" },
        if n_cells == 1 { "" } else { "s" }
    );
    let summary = match status {
        Status::Fail => format!(
            "{} finding{} {in_runs}",
            fails.len(),
            if fails.len() == 1 { "" } else { "s" }
        ),
        Status::Inconclusive => format!(
            "{} check{} could not be decided {in_runs}",
            unsure.len(),
            if unsure.len() == 1 { "" } else { "s" }
        ),
        Status::NoVerdict if no_candidate => {
            format!("nothing to compare {in_runs}: the matrix has one kernel, no candidate")
        }
        Status::NoVerdict if judged > 0 => format!(
            "{met} {in_runs}, but no guard of the regression policy could be judged (more runs, or KVM for timings): a pass needs one"
        ),
        Status::NoVerdict => format!(
            "nothing could be judged {in_runs}: every check needs more runs, or KVM for timings (see the regression policy)"
        ),
        Status::Pass if guards.is_empty() => {
            format!("{met} {in_runs}; no guard of the regression policy applies to these cells")
        }
        Status::Pass => {
            let mut s = format!(
                "no regression found {in_runs} (guards: {})",
                guards.join(", ")
            );
            if !met.is_empty() {
                s.push_str(&format!("; {met}"));
            }
            s
        }
    };
    // A cell out of the regime its matrix calibrated it for measured
    // something real, but not what the matrix meant it to: the verdict's
    // line says so, whatever the verdict.
    // In brackets: posting targets append "; <first reason>" to the line.
    let off_regime: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            c.regime
                .filter(|r| !r.holds())
                .map(|r| format!("{}, {}", cell_name(c), r.text()))
        })
        .collect();
    let summary = match off_regime.as_slice() {
        [] => summary,
        [one] => format!("{summary} [out of the regime the matrix calibrated it for: {one}]"),
        many => format!(
            "{summary} [out of the regimes the matrix calibrated them for: {}]",
            many.join("; ")
        ),
    };
    fails.extend(unsure);
    if no_candidate {
        not_judged.clear();
    }
    Verdict {
        status,
        summary,
        reasons: fails,
        not_judged,
        guards,
        runs,
        cells: n_cells,
        expectations_passed: passed,
        expectations_failed: failed,
        expectations_inconclusive: inconclusive,
        claims: counts,
    }
}
