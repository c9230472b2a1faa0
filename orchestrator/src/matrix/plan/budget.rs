//! The sequential run budget of a plan: how many runs a side a cell may
//! reach (`max_repeats`, from `mmci run --max-repeats` or the matrix's
//! `max_repeats:`), the blocks of runs `mmci run` adds to the cells whose
//! verdict is still undecided (recorded in the plan as
//! [`Plan::extra_repeats`], so that the results dir's manifest says which
//! runs belong to the plan and a resume runs the missing ones), and how
//! many runs each cell has. Which cells want a block is the analysis'
//! to say (`analysis::sequential`); this module only holds the numbers.

use std::collections::BTreeMap;

use super::{MatrixError, Plan, MAX_RUNS};

/// The budget when neither the command line nor the matrix gives one: 15
/// runs a side, three looks of [`BLOCK_REPEATS`] from a plan of 5 (the
/// issue's figure). A plan of 15 repeats or more has no budget by default.
pub const DEFAULT_MAX_REPEATS: u32 = 15;

/// Most runs a side a budget may give a cell. At 100 a side Mann-Whitney's
/// interval is about a fifth of the run-to-run spread wide; a guard still
/// undecided there sits on its floor, and more runs buy little: lower the
/// spread (longer or fixed-work runs) instead. A larger value is a typo
/// that would hold the host for days.
pub const MAX_BUDGET_REPEATS: u32 = 100;

/// Runs a side the budget adds to an undecided cell at a time. 5 is the
/// smallest sample at which Mann-Whitney can reach p <= 0.01 (2/252), the
/// default plan's first look: equal blocks give equally spaced looks
/// (5, 10, 15), the design an error-spending function is stated for, and
/// few looks spend little of the level on interim decisions. Under TCG a
/// block of the default matrix's cell is about 4 minutes a kernel.
pub const BLOCK_REPEATS: u32 = 5;

/// The budget a plan of `repeats` gets: the command line's (`given`, as
/// `--max-repeats`), else the matrix's (`file`, as `max_repeats:`), else
/// [`DEFAULT_MAX_REPEATS`]; 0, or no more than `repeats`, is no budget
/// (`None`). A value given below `repeats` (other than 0) or above
/// [`MAX_BUDGET_REPEATS`] is an error naming where it came from.
pub fn resolve(given: Option<u32>, file: Option<u32>, repeats: u32) -> Result<Option<u32>, String> {
    let (n, whence) = match (given, file) {
        (Some(n), _) => (n, format!("--max-repeats {n}")),
        (None, Some(n)) => (n, format!("max_repeats: {n}")),
        (None, None) => return Ok(Some(DEFAULT_MAX_REPEATS).filter(|n| *n > repeats)),
    };
    if n == 0 || n == repeats {
        return Ok(None);
    }
    if n < repeats {
        return Err(format!(
            "{whence} is fewer than the plan's {repeats} repeats: give at least {repeats} (the \
             runs a side a cell may reach, the planned ones included), or 0 for no budget"
        ));
    }
    if n > MAX_BUDGET_REPEATS {
        return Err(format!(
            "{whence} is more than {MAX_BUDGET_REPEATS} runs a side (MAX_BUDGET_REPEATS: a \
             guard undecided at that many runs sits on its floor; lower the spread instead); \
             give at most {MAX_BUDGET_REPEATS}"
        ));
    }
    Ok(Some(n))
}

/// Checks the budget's worst case (every cell at `max_repeats`) against
/// [`MAX_RUNS`], the bound of a plan's runs: a budget given (`explicit`)
/// over it is an error; the default is lowered to fit (a large plan that
/// was valid stays so), and is none when nothing fits above the repeats.
pub(super) fn check_runs(plan: &mut Plan, file: &str, explicit: bool) -> Result<(), MatrixError> {
    let Some(max) = plan.max_repeats else {
        return Ok(());
    };
    let per_repeat = (plan.cells.len() as u64 * plan.variants.len() as u64).max(1);
    let runs = per_repeat * u64::from(max);
    if runs > MAX_RUNS && !explicit {
        let fits = u32::try_from(MAX_RUNS / per_repeat).unwrap_or(u32::MAX);
        plan.max_repeats = Some(fits).filter(|n| *n > plan.repeats);
        return Ok(());
    }
    if runs > MAX_RUNS {
        return Err(MatrixError::at(
            file,
            None,
            format!(
                "{} cells x {} kernels x max_repeats {max} = {runs} runs at the budget; the \
                 limit is {MAX_RUNS} runs (MAX_RUNS): give a smaller --max-repeats (0: no budget)",
                plan.cells.len(),
                plan.variants.len()
            ),
        ));
    }
    Ok(())
}

impl Plan {
    /// Runs a kernel has in cell `id`: the planned repeats and those the
    /// budget added.
    pub fn repeats_of(&self, id: &str) -> u32 {
        self.repeats + self.extra_repeats.get(id).copied().unwrap_or(0)
    }

    /// The most runs a kernel has in any cell.
    pub fn most_repeats(&self) -> u32 {
        self.repeats + self.extra_repeats.values().copied().max().unwrap_or(0)
    }

    /// The plan with `wanted`'s runs added: (cell id, runs a kernel) each,
    /// capped at [`Plan::max_repeats`] (with no budget, nothing is added).
    /// The added runs are numbered after the cell's others (r6, r7, ...);
    /// cells not of the plan are ignored. What `mmci run` writes to the
    /// manifest before it runs the block.
    pub fn with_added(&self, wanted: &[(String, u32)]) -> Plan {
        let mut out = self.clone();
        let Some(max) = self.max_repeats else {
            return out;
        };
        for (id, add) in wanted {
            if self.cell(id).is_none() {
                continue;
            }
            let room = max.saturating_sub(out.repeats_of(id));
            let add = (*add).min(room);
            if add > 0 {
                *out.extra_repeats.entry(id.clone()).or_insert(0) += add;
            }
        }
        out
    }

    /// How many times the analysis may look at a cell: once at the planned
    /// repeats, then after each block of [`BLOCK_REPEATS`] up to the
    /// budget. The verdict spends its level over these looks
    /// (`analysis::decision`), so it must know them from the first look.
    pub fn looks(&self) -> usize {
        match self.max_repeats {
            Some(max) if max > self.repeats => {
                1 + (max - self.repeats).div_ceil(BLOCK_REPEATS) as usize
            }
            _ => 1,
        }
    }

    /// Per cell id, the runs a kernel has that the budget added.
    pub fn added(&self) -> &BTreeMap<String, u32> {
        &self.extra_repeats
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::plan_of;
    use super::super::{run_order, Slot};
    use super::*;

    #[test]
    fn looks_are_the_planned_one_then_one_per_block_up_to_the_budget() {
        // (repeats, max_repeats, looks)
        let cases: &[(u32, Option<u32>, usize)] = &[
            (5, Some(15), 3),
            (5, Some(16), 4),
            (5, Some(10), 2),
            (5, Some(6), 2),
            (5, Some(5), 1),
            (5, None, 1),
            (3, Some(15), 4),
        ];
        for (repeats, max, want) in cases {
            let mut p = plan_of("axes:\n  threads: [8]\n").unwrap();
            p.repeats = *repeats;
            p.max_repeats = *max;
            assert_eq!(p.looks(), *want, "{repeats} {max:?}");
        }
    }

    #[test]
    fn the_budget_is_the_command_lines_then_the_matrixs_then_the_default() {
        // (--max-repeats, max_repeats:, repeats, the budget or the error)
        type Case<'a> = (Option<u32>, Option<u32>, u32, Result<Option<u32>, &'a str>);
        let cases: &[Case] = &[
            (None, None, 5, Ok(Some(15))),
            (None, None, 15, Ok(None)),
            (None, None, 20, Ok(None)),
            (Some(0), None, 5, Ok(None)),
            (Some(5), None, 5, Ok(None)),
            (Some(10), Some(30), 5, Ok(Some(10))),
            (None, Some(30), 5, Ok(Some(30))),
            (None, Some(0), 5, Ok(None)),
            (Some(0), Some(30), 5, Ok(None)),
            (Some(100), None, 5, Ok(Some(100))),
            (
                Some(3),
                None,
                5,
                Err("--max-repeats 3 is fewer than the plan's 5 repeats: give at least 5"),
            ),
            (
                None,
                Some(4),
                5,
                Err("max_repeats: 4 is fewer than the plan's 5 repeats"),
            ),
            (
                Some(101),
                None,
                5,
                Err("--max-repeats 101 is more than 100 runs a side (MAX_BUDGET_REPEATS"),
            ),
        ];
        for (given, file, repeats, want) in cases {
            let got = resolve(*given, *file, *repeats);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, *w, "{given:?} {file:?} {repeats}"),
                (Err(e), Err(w)) => assert!(e.starts_with(w), "{e}"),
                (got, want) => panic!("{given:?} {file:?} {repeats}: {got:?}, wanted {want:?}"),
            }
        }
    }

    fn two_cells() -> Plan {
        let mut p = plan_of("axes:\n  threads: [8, 16]\nrepeats: 2\nmax_repeats: 6\nkernels:\n  - name: base\n  - name: patched\n    cmdline: [x=1]\n").unwrap();
        p.order_seed = Some(3);
        p
    }

    fn ids(slots: &[Slot]) -> Vec<String> {
        slots
            .iter()
            .map(|s| format!("{}:{}:{}", &s.cell[..4], s.variant, s.repeat))
            .collect()
    }

    /// The added runs of a cell come after the planned ones of every cell,
    /// numbered on from the cell's last, each repeat a block of one run
    /// per kernel; a cell without added runs has none.
    #[test]
    fn slots_include_the_added_runs_numbered_after_the_planned() {
        let p = two_cells();
        assert_eq!(p.max_repeats, Some(6));
        let (a, b) = (p.cells[0].id.clone(), p.cells[1].id.clone());
        let cells: Vec<_> = p.cells.iter().collect();
        assert_eq!(p.slots(&cells).len(), 8);
        let q = p.with_added(&[(a.clone(), 3)]);
        assert_eq!(q.extra_repeats, BTreeMap::from([(a.clone(), 3)]));
        assert_eq!(
            (q.repeats_of(&a), q.repeats_of(&b), q.most_repeats()),
            (5, 2, 5)
        );
        let slots = q.slots(&cells);
        let (ta, tb) = (&a[..4], &b[..4]);
        let want: Vec<String> = [
            (ta, 1),
            (tb, 1),
            (ta, 2),
            (tb, 2),
            (ta, 3),
            (ta, 4),
            (ta, 5),
        ]
        .iter()
        .flat_map(|(c, r)| ["base", "patched"].map(|v| format!("{c}:{v}:{r}")))
        .collect();
        assert_eq!(ids(&slots), want);
        // The planned runs are where they were: resume of the planned
        // part is unchanged.
        assert_eq!(&slots[..8], &p.slots(&cells)[..]);
        // In the seeded order, every added repeat is a block of its own
        // whose kernels are shuffled like the planned blocks.
        let order = run_order(&slots, q.order_seed);
        for (plan, ran) in slots.chunks(2).zip(order.chunks(2)) {
            let mut sorted = ran.to_vec();
            sorted.sort_by_key(|s| s.variant != "base");
            assert_eq!(sorted, plan);
        }
        assert_eq!(order, run_order(&slots, q.order_seed));
        // A shard of the other cell does not see them.
        assert_eq!(q.slots(&[&q.cells[1]]).len(), 4);
    }

    /// Blocks are capped at the budget; with no budget nothing is added;
    /// a cell not of the plan is ignored.
    #[test]
    fn added_runs_stop_at_the_budget() {
        let p = two_cells();
        let a = p.cells[0].id.clone();
        let cases: &[(&[u32], u32)] =
            &[(&[5], 4), (&[3, 3], 4), (&[1, 1], 2), (&[2], 2), (&[0], 0)];
        for (blocks, want) in cases {
            let mut q = p.clone();
            for n in *blocks {
                q = q.with_added(&[(a.clone(), *n)]);
            }
            assert_eq!(
                q.extra_repeats.get(&a).copied().unwrap_or(0),
                *want,
                "{blocks:?}"
            );
            assert!(q.repeats_of(&a) <= 6);
        }
        let mut off = p.clone();
        off.max_repeats = None;
        assert_eq!(off.with_added(&[(a.clone(), 5)]), off);
        assert_eq!(p.with_added(&[("nosuchcell".into(), 5)]), p);
    }

    /// The budget and the added runs are not part of the plan's
    /// fingerprint (a resume of the same plan goes on), are left out of
    /// the JSON when unset (old manifests read, plans without them write
    /// as before) and round-trip when set.
    #[test]
    fn the_extension_round_trips_and_keeps_the_fingerprint() {
        let p = two_cells();
        let a = p.cells[0].id.clone();
        let mut bare = p.clone();
        bare.max_repeats = None;
        let json = serde_json::to_value(&bare).unwrap();
        assert!(json.get("max_repeats").is_none(), "{json}");
        assert!(json.get("extra_repeats").is_none(), "{json}");
        let read: Plan = serde_json::from_value(json).unwrap();
        assert_eq!(read, bare);
        let q = p.with_added(&[(a.clone(), 4)]);
        assert_eq!(q.fingerprint(), p.fingerprint());
        assert_eq!(bare.fingerprint(), p.fingerprint());
        let json = serde_json::to_value(&q).unwrap();
        assert_eq!(json["max_repeats"], 6);
        assert_eq!(json["extra_repeats"][&a], 4);
        let read: Plan = serde_json::from_value(json).unwrap();
        assert_eq!(read, q);
    }

    #[test]
    fn a_matrixs_budget_is_checked_at_plan_time() {
        let e = plan_of("axes:\n  threads: [8]\nrepeats: 5\nmax_repeats: 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "m.yaml: line 4 column 14: max_repeats: 3 is fewer than the plan's 5 repeats"
            ),
            "{e}"
        );
        let over = crate::matrix::Overrides {
            max_repeats: Some(500),
            ..Default::default()
        };
        let e = super::super::from_text(
            "axes:\n  threads: [8]\n",
            "m.yaml",
            std::path::Path::new("."),
            &over,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("command line: --max-repeats 500 is more than 100 runs a side"),
            "{e}"
        );
        // The default: 15 a side for a plan of fewer repeats, lowered to
        // fit MAX_RUNS; a budget given over it is an error.
        assert_eq!(
            plan_of("axes:\n  threads: [8]\nrepeats: 5\n")
                .unwrap()
                .max_repeats,
            Some(15)
        );
        assert_eq!(
            plan_of("axes:\n  threads: [8]\nrepeats: 15\n")
                .unwrap()
                .max_repeats,
            None
        );
        let big = format!(
            "axes:\n  threads: [{}]\n",
            (1..=10_000)
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert_eq!(plan_of(&big).unwrap().max_repeats, Some(10));
        assert_eq!(
            plan_of(&format!("{big}repeats: 10\n")).unwrap().max_repeats,
            None
        );
        let e = plan_of(&format!("{big}max_repeats: 11\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("10000 cells x 1 kernels x max_repeats 11 = 110000 runs at the budget; the limit is 100000 runs (MAX_RUNS)"), "{e}");
    }
}
