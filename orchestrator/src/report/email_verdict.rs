//! What the email says of the verdict, as the bots maintainers accept
//! write it: the first line names the finding ("mmci noticed a 31.2%
//! regression of ... on ..."), the regression policy and the cover
//! letter's claims as short lines, and whether a `Tested-by:` may go at
//! all (never for INCONCLUSIVE, NO VERDICT or a FAIL, never when every
//! run was under TCG: a trailer is a claim that lands in git history).
//! Every string from a cover letter or a guest is cleaned here.

use super::{checks, untrusted};
use crate::analysis::model::{
    cell_name, CandidateComparison, CellComparison, Comparison, Finding, SplatStatus, Status,
};
use crate::analysis::policy::OOM_METRIC;
use crate::analysis::stats::Change;
use crate::analysis::{catalog, text};

/// `1 run`, `2 runs`.
fn count(n: usize, one: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// `threads=64 (x86_64)`.
fn where_(cell: &CellComparison) -> String {
    format!("{} ({})", cell_name(cell), cell.arch.name())
}

/// The email's first line: what was found, in one sentence.
pub fn first_line(c: &Comparison) -> String {
    let v = &c.verdict;
    let first = |l: &[String]| l.first().map(|r| untrusted::line(r));
    match v.status {
        Status::Fail => fail_line(c).map(|l| l + &off_regime(c)).unwrap_or_else(|| {
            format!(
                "mmci noticed a failure: {}",
                first(&v.reasons).unwrap_or_else(|| v.summary.clone())
            )
        }),
        Status::Pass => format!(
            "mmci found no regression in {} on {}{}.",
            count(v.runs, "run"),
            count(v.cells, "cell"),
            off_regime(c)
        ),
        Status::Inconclusive => format!(
            "mmci could not decide on this series: {}",
            first(&v.reasons).unwrap_or_else(|| v.summary.clone())
        ),
        Status::NoVerdict => format!(
            "mmci has no verdict on this series: {}",
            Some(untrusted::line(&v.summary))
                .filter(|s| !s.is_empty())
                .or_else(|| first(&v.not_judged))
                .unwrap_or_else(|| "nothing could be judged".into())
        ),
    }
}

/// ` (threads=288 out of the regime the matrix calibrated it for)`, or
/// nothing: a pass from a cell that did not reproduce what the matrix
/// meant it to must not read as one that did.
fn off_regime(c: &Comparison) -> String {
    let off: Vec<String> = c
        .cells
        .iter()
        .filter(|cell| cell.regime.is_some_and(|r| !r.holds()))
        .map(|cell| cell_name(cell).to_string())
        .collect();
    match off.as_slice() {
        [] => String::new(),
        [one] => format!(" ({one} out of the regime the matrix calibrated it for)"),
        many => format!(
            " ({} out of the regimes the matrix calibrated them for)",
            many.join(", ")
        ),
    }
}

/// Every candidate of every cell, in the comparison's order.
fn candidates(c: &Comparison) -> impl Iterator<Item = (&CellComparison, &CandidateComparison)> {
    c.cells
        .iter()
        .flat_map(|cell| cell.candidates.iter().map(move |cand| (cell, cand)))
}

/// A FAIL's finding, most telling first: a guard that regressed (with its
/// change), a new splat, a contradicted claim, a failed expectation, a
/// kernel that did not build, a run that did not complete.
fn fail_line(c: &Comparison) -> Option<String> {
    for (cell, cand) in candidates(c) {
        if let Some(g) = cand.guards.iter().find(|g| g.status == Some(Status::Fail)) {
            let m = cand.metrics.iter().find(|m| m.metric == g.metric);
            let on = format!("on {} with {}", where_(cell), cand.variant);
            if g.metric == OOM_METRIC {
                let runs = |v: &[f64]| v.iter().filter(|x| **x > 0.0).count();
                return Some(match m {
                    Some(m) => format!(
                        "mmci noticed more runs with an OOM kill {on}: {} of {}, base {} of {}",
                        runs(&m.candidate_values),
                        m.candidate_values.len(),
                        runs(&m.base_values),
                        m.base_values.len()
                    ),
                    None => format!("mmci noticed more runs with an OOM kill {on}"),
                });
            }
            // A guard judged on the runs without an OOM kill says so: its
            // numbers are not every run's.
            let on = match m.and_then(|m| m.survivors) {
                Some(s) => format!(
                    "{on} (runs without an OOM kill: {} {} of {}, {} {} of {})",
                    c.baseline, s.base, s.base_of, cand.variant, s.candidate, s.candidate_of
                ),
                None => on,
            };
            let what = format!("{} ({})", g.metric, g.why);
            return Some(match m.and_then(|m| m.change.as_ref()) {
                Some(Change::Relative { rel, .. }) => format!(
                    "mmci noticed a {:.1}% regression of {what} {on}",
                    rel.abs() * 100.0
                ),
                Some(Change::FromZero { to }) => format!(
                    "mmci noticed a regression of {what} from 0 to {} {on}",
                    text::num(*to)
                ),
                Some(Change::ToZero { from }) => format!(
                    "mmci noticed a regression of {what} from {} to 0 {on}",
                    text::num(*from)
                ),
                _ => format!("mmci noticed a regression of {what} {on}"),
            });
        }
    }
    for f in c.splats.iter().filter(|f| f.status == SplatStatus::New) {
        if let Some(h) = f.hits.iter().skip(1).find(|h| h.runs > 0) {
            return Some(format!(
                "mmci noticed \"{}\" with {} ({} of {}), not with {}",
                untrusted::line(&f.title),
                h.variant,
                h.runs,
                count(h.of, "run"),
                c.baseline
            ));
        }
    }
    if let Some(k) = c.claims.iter().find(|k| k.finding == Finding::Contradicts) {
        return Some(format!(
            "mmci measured the opposite of the cover letter's claim \"{}\" ({}) on {} with {}: {}",
            untrusted::line(&k.row),
            untrusted::line(&k.claimed),
            k.cell.as_deref().map_or("-".into(), untrusted::line),
            untrusted::line(&k.variant),
            k.measured.as_deref().map_or("-".into(), untrusted::line),
        ));
    }
    for (cell, cand) in candidates(c) {
        if let Some(e) = cand.expectations.iter().find(|e| e.status == Status::Fail) {
            return Some(format!(
                "mmci noticed that {} is not {} on {} with {}: {}",
                e.metric,
                catalog::kind_name(e.kind),
                where_(cell),
                cand.variant,
                untrusted::line(&e.reason)
            ));
        }
    }
    for v in &c.variants {
        if let Some(e) = &v.build_error {
            let e = untrusted::line(e.lines().next().unwrap_or_default());
            return Some(format!("mmci could not build {}: {e}", v.variant));
        }
    }
    for v in &c.variants {
        if let Some(f) = v.failures.first() {
            return Some(format!(
                "mmci noticed a {} in {} of {} with {} (first: {})",
                f.outcome.name(),
                v.failures.len(),
                count(v.planned, "run"),
                v.variant,
                f.run
            ));
        }
    }
    None
}

/// Why no `Tested-by:` may go, even when the operator asks for one: the
/// verdict is not a PASS, or every run was under TCG (emulation says the
/// kernel works, not that it performs).
pub fn tested_by_refused(c: &Comparison) -> Option<String> {
    if c.verdict.status != Status::Pass {
        return Some(format!(
            "the verdict is {}: a Tested-by: goes only with a PASS",
            c.verdict.status.name()
        ));
    }
    if all_tcg(c) {
        return Some("every run was under TCG (emulation): no Tested-by:".into());
    }
    None
}

/// Whether every run was under TCG: by the manifest's accelerators, else
/// (a comparison without them) by its timings, all of which a TCG run
/// makes functional only.
pub fn all_tcg(c: &Comparison) -> bool {
    if !c.accel.is_empty() {
        return c
            .accel
            .values()
            .all(|a| a.trim_start().to_ascii_lowercase().starts_with("tcg"));
    }
    let mut timings = candidates(c)
        .flat_map(|(_, cand)| &cand.metrics)
        .filter(|m| m.timing)
        .peekable();
    timings.peek().is_some() && timings.all(|m| m.functional_only)
}

/// The regression policy: each failed check on its own lines, then one
/// line per guard (passed in how many cells, failed, not judged and why).
pub fn policy_lines(c: &Comparison) -> Vec<String> {
    let text = checks::render_policy(c);
    text.lines().skip(1).map(str::to_string).collect()
}

/// The cover letter's claims, each beside the measurement: the finding,
/// the row and its set-up, what it claims, what was measured where.
pub fn claim_lines(c: &Comparison) -> Vec<String> {
    let mut out = vec![];
    for k in checks::claim_views(c) {
        out.push(format!(
            "  {}: {} [{}, line {}]",
            k.finding, k.row, k.setup, k.line
        ));
        out.push(format!("      claimed {}", k.claimed));
        if k.measured != "-" {
            out.push(format!(
                "      measured {} on {} with {} (p={})",
                k.measured, k.cell, k.kernel, k.p
            ));
        }
        if !k.reason.is_empty() {
            out.push(format!("      {}", k.reason));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::{
        ClaimCheck, ExpectationResult, RunProblem, SplatFinding, SplatHits,
    };
    use crate::matrix::file::ExpectKind;

    /// The synthetic 20 runs (2 cells, base and patched, KVM): a PASS.
    fn pass() -> Comparison {
        let (m, runs, _) = crate::analysis::synthetic::synthetic(20);
        let c =
            crate::analysis::compare(&m, &runs, &Default::default(), vec![], &Default::default());
        assert_eq!(c.verdict.status, Status::Pass, "{:?}", c.verdict);
        c
    }

    fn failed(mut c: Comparison) -> Comparison {
        c.verdict.status = Status::Fail;
        c
    }

    fn guard_fails(c: &mut Comparison, metric: &str, change: Change) {
        let cand = &mut c.cells[0].candidates[0];
        let g = cand.guards.iter_mut().find(|g| g.metric == metric).unwrap();
        g.status = Some(Status::Fail);
        cand.metrics
            .iter_mut()
            .find(|m| m.metric == metric)
            .unwrap()
            .change = Some(change);
    }

    fn new_splat(c: &mut Comparison) {
        c.splats.push(SplatFinding {
            title: "BUG: sleeping function called from invalid context".into(),
            kind: crate::results::splat::SplatKind::Bug,
            status: SplatStatus::New,
            hits: vec![
                SplatHits {
                    variant: "base".into(),
                    runs: 0,
                    of: 10,
                },
                SplatHits {
                    variant: "patched".into(),
                    runs: 3,
                    of: 10,
                },
            ],
            first_run: "r".into(),
            first_variant: "patched".into(),
            excerpt: String::new(),
        });
    }

    fn contradicted(c: &mut Comparison) {
        c.claims.push(ClaimCheck {
            variant: "patched".into(),
            setup: "64 threads".into(),
            row: "OOM\u{1b}[2J kills".into(),
            line: 12,
            claimed: "3 -> 0".into(),
            metric: Some("oom_kills".into()),
            cell: Some("threads=64".into()),
            measured: Some("0 -> 4".into()),
            p: Some(0.004),
            finding: Finding::Contradicts,
            by_construction: false,
            reason: "measured the other way".into(),
        });
    }

    fn expectation_fails(c: &mut Comparison) {
        c.cells[1].candidates[0]
            .expectations
            .push(ExpectationResult {
                metric: "oom_kills".into(),
                kind: ExpectKind::Nonzero,
                threshold: None,
                status: Status::Fail,
                reason: "0 in every run".into(),
            });
    }

    #[test]
    fn the_first_line_names_the_finding() {
        type Edit = fn(&mut Comparison);
        let cases: Vec<(&str, Status, Edit, &str)> = vec![
            (
                "pass",
                Status::Pass,
                |_| {},
                "mmci found no regression in 20 runs on 2 cells.",
            ),
            (
                "a pass from a cell out of its calibrated regime",
                Status::Pass,
                |c| {
                    c.cells[1].regime = Some(crate::analysis::model::RegimeCheck {
                        expected: crate::matrix::file::BaseOom::Most,
                        base_killed: 0,
                        base_runs: 5,
                    })
                },
                "mmci found no regression in 20 runs on 2 cells (threads=2 out of the \
                 regime the matrix calibrated it for).",
            ),
            (
                "a finding in a cell out of its calibrated regime",
                Status::Fail,
                |c| {
                    guard_fails(
                        c,
                        "pgmajfault_per_ktouch",
                        Change::Relative {
                            rel: 0.181,
                            ci: None,
                        },
                    );
                    c.cells[0].regime = Some(crate::analysis::model::RegimeCheck {
                        expected: crate::matrix::file::BaseOom::Most,
                        base_killed: 0,
                        base_runs: 5,
                    })
                },
                "mmci noticed a 18.1% regression of pgmajfault_per_ktouch (major faults \
                 per 1,000 touches) on threads=1 (x86_64) with patched (threads=1 out of \
                 the regime the matrix calibrated it for)",
            ),
            (
                "a guard's relative change",
                Status::Fail,
                |c| {
                    guard_fails(
                        c,
                        "pswpout_per_ktouch",
                        Change::Relative {
                            rel: 0.3121,
                            ci: None,
                        },
                    )
                },
                "mmci noticed a 31.2% regression of pswpout_per_ktouch (swap-out \
                 traffic per 1,000 touches) on threads=1 (x86_64) with patched",
            ),
            (
                "a guard judged on the runs without an OOM kill",
                Status::Fail,
                |c| {
                    guard_fails(
                        c,
                        "pswpin_per_ktouch",
                        Change::Relative { rel: 0.2, ci: None },
                    );
                    let m = c.cells[0].candidates[0]
                        .metrics
                        .iter_mut()
                        .find(|m| m.metric == "pswpin_per_ktouch")
                        .unwrap();
                    m.survivors = Some(crate::analysis::model::Survivors {
                        base: 8,
                        base_of: 10,
                        candidate: 10,
                        candidate_of: 10,
                    });
                },
                "mmci noticed a 20.0% regression of pswpin_per_ktouch (swap-in traffic \
                 per 1,000 touches) on threads=1 (x86_64) with patched (runs without an \
                 OOM kill: base 8 of 10, patched 10 of 10)",
            ),
            (
                "a guard from zero",
                Status::Fail,
                |c| guard_fails(c, "pswpin_per_ktouch", Change::FromZero { to: 12.5 }),
                "mmci noticed a regression of pswpin_per_ktouch (swap-in traffic \
                 per 1,000 touches) from 0 to 12.50 on threads=1 (x86_64) with patched",
            ),
            (
                "the guard comes before a splat",
                Status::Fail,
                |c| {
                    new_splat(c);
                    guard_fails(
                        c,
                        "touches",
                        Change::Relative {
                            rel: -0.5,
                            ci: None,
                        },
                    )
                },
                "mmci noticed a 50.0% regression of touches (throughput: pages \
                 the workload wrote) on threads=1 (x86_64) with patched",
            ),
            (
                "runs with an OOM kill",
                Status::Fail,
                |c| guard_fails(c, OOM_METRIC, Change::BothZero),
                "mmci noticed more runs with an OOM kill on threads=1 (x86_64) \
                 with patched: 0 of 5, base 0 of 5",
            ),
            (
                "a new splat",
                Status::Fail,
                |c| {
                    contradicted(c);
                    new_splat(c)
                },
                "mmci noticed \"BUG: sleeping function called from invalid \
                 context\" with patched (3 of 10 runs), not with base",
            ),
            (
                "a contradicted claim, cleaned",
                Status::Fail,
                |c| {
                    expectation_fails(c);
                    contradicted(c)
                },
                "mmci measured the opposite of the cover letter's claim \"OOM \
                 kills\" (3 -> 0) on threads=64 with patched: 0 -> 4",
            ),
            (
                "a failed expectation",
                Status::Fail,
                expectation_fails,
                "mmci noticed that oom_kills is not nonzero on threads=2 (x86_64) \
                 with patched: 0 in every run",
            ),
            (
                "a build failure",
                Status::Fail,
                |c| c.variants[1].build_error = Some("make: *** [vmlinux] Error 2\nmore".into()),
                "mmci could not build patched: make: *** [vmlinux] Error 2",
            ),
            (
                "a boot failure",
                Status::Fail,
                |c| {
                    c.variants[1].failures.push(RunProblem {
                        run: "c0-patched-r1".into(),
                        cell: "c0".into(),
                        outcome: crate::run::outcome::Outcome::BootFailure,
                        reason: "no PID 1".into(),
                    })
                },
                "mmci noticed a boot failure in 1 of 10 runs with patched (first: \
                 c0-patched-r1)",
            ),
            (
                "inconclusive",
                Status::Inconclusive,
                |c| c.verdict.reasons = vec!["patched: 3 of 10 planned runs have no result".into()],
                "mmci could not decide on this series: patched: 3 of 10 planned \
                 runs have no result",
            ),
            (
                "no verdict",
                Status::NoVerdict,
                |c| {
                    c.verdict.summary = "nothing could be judged in 8 runs on 2 cells".into();
                    c.verdict.not_judged = vec!["touches: a timing under TCG".into()]
                },
                "mmci has no verdict on this series: nothing could be judged in 8 runs on 2 cells",
            ),
        ];
        for (name, status, edit, want) in cases {
            let mut c = pass();
            edit(&mut c);
            c.verdict.status = status;
            assert_eq!(first_line(&c), want, "{name}");
        }
        // A FAIL with nothing the model names: its first reason.
        let mut c = failed(pass());
        c.verdict.reasons = vec!["something else".into()];
        assert_eq!(first_line(&c), "mmci noticed a failure: something else");
    }

    #[test]
    fn tested_by_only_for_a_pass_not_all_under_tcg() {
        let c = pass();
        assert_eq!(tested_by_refused(&c), None);
        for s in [Status::Fail, Status::Inconclusive, Status::NoVerdict] {
            let mut c = pass();
            c.verdict.status = s;
            let why = tested_by_refused(&c).unwrap();
            assert!(why.contains(s.name()), "{why}");
        }
        let mut tcg = pass();
        tcg.accel
            .insert("x86_64".into(), "tcg (TCG requested)".into());
        assert!(tested_by_refused(&tcg).unwrap().contains("TCG"));
        tcg.accel.insert("arm64".into(), "kvm (/dev/kvm)".into());
        assert_eq!(tested_by_refused(&tcg), None);
        // No accelerator recorded: the timings tell.
        let mut c = pass();
        for cell in &mut c.cells {
            for cand in &mut cell.candidates {
                for m in cand.metrics.iter_mut().filter(|m| m.timing) {
                    m.functional_only = true;
                }
            }
        }
        assert!(all_tcg(&c));
    }
}
