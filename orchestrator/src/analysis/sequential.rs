//! The sequential run budget's questions to a comparison: which cells get
//! another block of runs (a guard of theirs that more runs could decide,
//! [`GuardResult::more_runs`](super::model::GuardResult), and room left
//! under the plan's budget), and how many runs each cell needed, the
//! line `mmci run` prints. The budget's numbers (its default, the block
//! size, the added runs in the plan) are `matrix::plan::budget`'s; how a
//! guard decides at each look, the error spent across looks, is the
//! policy's and the verdict's.

use super::model::{Comparison, Status};
use crate::matrix::Plan;

/// A cell and whether a guard of it, for some candidate, could be decided
/// by more runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want<'a> {
    pub cell: &'a str,
    pub more_runs: bool,
}

/// Each cell of `c` with whether a guard there wants more runs. Nothing
/// when the verdict is FAIL: a group-sequential design stops at the first
/// look that rejects, and a FAIL on a crash or a new splat is not undone
/// by more runs.
pub fn wants(c: &Comparison) -> Vec<Want<'_>> {
    let fail = c.verdict.status == Status::Fail;
    c.cells
        .iter()
        .map(|cell| Want {
            cell: &cell.cell,
            more_runs: !fail
                && cell
                    .candidates
                    .iter()
                    .any(|k| k.guards.iter().any(|g| g.more_runs)),
        })
        .collect()
}

/// The block each wanting cell gets: (cell id, runs a kernel), at most
/// `block` and no more than the room left under `plan.max_repeats` (a
/// cell at its budget gets none; with no budget no cell does).
pub fn blocks(wants: &[Want], plan: &Plan, block: u32) -> Vec<(String, u32)> {
    let Some(max) = plan.max_repeats else {
        return vec![];
    };
    wants
        .iter()
        .filter(|w| w.more_runs && plan.cell(w.cell).is_some())
        .filter_map(|w| {
            let add = block.min(max.saturating_sub(plan.repeats_of(w.cell)));
            (add > 0).then(|| (w.cell.to_string(), add))
        })
        .collect()
}

/// The cells of `c` that get another block of runs under `plan`'s budget,
/// and how many runs a kernel each: [`wants`], then [`blocks`].
pub fn cells_wanting_runs(c: &Comparison, plan: &Plan, block: u32) -> Vec<(String, u32)> {
    blocks(&wants(c), plan, block)
}

/// One line per cell of the plan: the runs a kernel it needed, how many of
/// them the budget added, and whether it is still undecided at the
/// budget: `threads=64: 10 runs a kernel (5 planned + 5 added by the
/// budget of 15)`. Empty when the plan has no budget and no added runs.
pub fn runs_needed(plan: &Plan, c: &Comparison) -> Vec<String> {
    if plan.max_repeats.is_none() && plan.extra_repeats.is_empty() {
        return vec![];
    }
    let want = wants(c);
    plan.cells
        .iter()
        .map(|cell| {
            let name = if cell.label.is_empty() {
                &cell.id
            } else {
                &cell.label
            };
            let n = plan.repeats_of(&cell.id);
            let added = n - plan.repeats;
            let budget = plan
                .max_repeats
                .map(|m| format!(" of {m}"))
                .unwrap_or_default();
            let how = if added > 0 {
                format!(
                    "{} planned + {added} added by the budget{budget}",
                    plan.repeats
                )
            } else {
                "as planned".to_string()
            };
            let open = want.iter().any(|w| w.cell == cell.id && w.more_runs);
            let still = match (open, plan.max_repeats) {
                (true, Some(m)) if n >= m => "; still undecided at the budget",
                (true, _) => "; still undecided",
                _ => "",
            };
            format!("{name}: {n} runs a kernel ({how}){still}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::GuardResult;

    fn guard(more_runs: bool) -> GuardResult {
        GuardResult {
            metric: "m".into(),
            why: "w".into(),
            status: None,
            reason: "r".into(),
            more_runs,
            decision: None,
        }
    }

    /// A synthetic comparison of 2 cells (5 runs a kernel, budget 15),
    /// each cell's guards set to the given `more_runs` flags, and the
    /// verdict's status.
    fn comparison(flags: &[&[bool]], status: Status) -> (Plan, Comparison) {
        let (m, runs, _) = crate::analysis::synthetic::synthetic(20);
        let mut c = super::super::compare(&m, &runs, &m.plan.expect, vec![], &Default::default());
        assert_eq!(c.cells.len(), flags.len());
        for (cell, f) in c.cells.iter_mut().zip(flags) {
            for k in &mut cell.candidates {
                k.guards = f.iter().map(|b| guard(*b)).collect();
            }
        }
        c.verdict.status = status;
        let mut plan = m.plan;
        plan.max_repeats = Some(15);
        (plan, c)
    }

    #[test]
    fn a_cell_wants_a_block_when_a_guard_could_be_decided_by_more_runs() {
        use Status::*;
        // (guards' more_runs per cell, verdict, runs a kernel added so far
        // per cell, budget, the blocks wanted per cell)
        type Case<'a> = (&'a [&'a [bool]], Status, [u32; 2], Option<u32>, [u32; 2]);
        let cases: &[Case] = &[
            (&[&[false, false], &[false]], Pass, [0, 0], Some(15), [0, 0]),
            (
                &[&[false, true], &[false]],
                Inconclusive,
                [0, 0],
                Some(15),
                [5, 0],
            ),
            (&[&[true], &[true]], NoVerdict, [0, 0], Some(15), [5, 5]),
            // A second block, then the last one capped at the budget.
            (&[&[true], &[true]], Inconclusive, [5, 0], Some(15), [5, 5]),
            (&[&[true], &[true]], Inconclusive, [10, 8], Some(15), [0, 2]),
            (&[&[true], &[true]], Inconclusive, [0, 0], Some(7), [2, 2]),
            // No budget, or a FAIL: no block.
            (&[&[true], &[true]], Inconclusive, [0, 0], None, [0, 0]),
            (&[&[true], &[true]], Fail, [0, 0], Some(15), [0, 0]),
            // No guard at all (a timing under TCG only): nothing to decide.
            (&[&[], &[]], Inconclusive, [0, 0], Some(15), [0, 0]),
        ];
        for (flags, status, added, budget, want) in cases {
            let (mut plan, c) = comparison(flags, *status);
            plan.max_repeats = *budget;
            for (cell, n) in c.cells.iter().zip(added) {
                if *n > 0 {
                    plan.extra_repeats.insert(cell.cell.clone(), *n);
                }
            }
            let got = cells_wanting_runs(&c, &plan, 5);
            let expected: Vec<(String, u32)> = c
                .cells
                .iter()
                .zip(want)
                .filter(|(_, n)| **n > 0)
                .map(|(cell, n)| (cell.cell.clone(), *n))
                .collect();
            assert_eq!(got, expected, "{flags:?} {status:?} {added:?} {budget:?}");
        }
    }

    #[test]
    fn a_cell_not_of_the_plan_gets_no_block() {
        let plan = comparison(&[&[true], &[true]], Status::Inconclusive).0;
        let w = [Want {
            cell: "nosuchcell",
            more_runs: true,
        }];
        assert!(blocks(&w, &plan, 5).is_empty());
    }

    #[test]
    fn each_cell_says_how_many_runs_it_needed() {
        let (mut plan, c) = comparison(&[&[false], &[true]], Status::Inconclusive);
        let labels: Vec<String> = plan.cells.iter().map(|c| c.label.clone()).collect();
        assert!(labels.iter().all(|l| !l.is_empty()), "{labels:?}");
        plan.extra_repeats.insert(plan.cells[0].id.clone(), 5);
        assert_eq!(
            runs_needed(&plan, &c),
            [
                format!(
                    "{}: 10 runs a kernel (5 planned + 5 added by the budget of 15)",
                    labels[0]
                ),
                format!(
                    "{}: 5 runs a kernel (as planned); still undecided",
                    labels[1]
                ),
            ]
        );
        plan.extra_repeats.insert(plan.cells[1].id.clone(), 10);
        assert_eq!(
            runs_needed(&plan, &c)[1],
            format!(
                "{}: 15 runs a kernel (5 planned + 10 added by the budget of 15); still undecided at the budget",
                labels[1]
            )
        );
        // No budget and nothing added: no lines (the report is as before).
        plan.max_repeats = None;
        plan.extra_repeats.clear();
        assert!(runs_needed(&plan, &c).is_empty());
    }
}
