//! The sequential run budget's results dir: the blocks `mmci run` adds are
//! recorded in the manifest's plan (`cli::run::record_added`) before they
//! run, a resume of a dir interrupted in the middle of an added block runs
//! exactly the block's missing runs (the executor's `slots_to_run`, after
//! its preflight accepted the extended manifest as the same plan), and
//! through the binary a dir whose cells reached their budget is resumed
//! with every run kept and says how many runs each cell needed. The dirs
//! hold recorded real runs (common/replay.rs): nothing is built or booted.
//! Which cells want a block is analysis::sequential's (table tests there);
//! the slots' numbering and order, matrix::plan::budget's.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::replay::{replay, run, SMOKE};
use mmci::error::exit;
use mmci::matrix::Slot;
use mmci::results::dir as rd;

/// The replayed smoke dir's cell id (3 runs a kernel recorded).
fn cell(results: &Path) -> String {
    rd::read_manifest(results).unwrap().unwrap().plan.cells[0]
        .id
        .clone()
}

/// Copies the recorded run `from` of `variant` to repeat `to`: a run of
/// an added block, finished.
fn finish(results: &Path, cell: &str, variant: &str, from: u32, to: u32) {
    let slot = |repeat| Slot {
        cell: cell.to_string(),
        variant: variant.to_string(),
        repeat,
    };
    common::results::copy_dir(
        &rd::run_dir(results, &slot(from)),
        &rd::run_dir(results, &slot(to)),
    );
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test]
async fn a_resume_in_the_middle_of_an_added_block_runs_exactly_its_missing_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), SMOKE, "smoke-matrix", None);
    let id = cell(&results);
    let before = rd::read_manifest(&results).unwrap().unwrap();
    // The loop's record of a block of 2 a kernel under a budget of 5.
    let m = mmci::cli::run::record_added(&results, Some(5), &[(id.clone(), 2)]).unwrap();
    assert_eq!(m.plan.extra_repeats.get(&id), Some(&2));
    assert_eq!(m.plan.max_repeats, Some(5));
    // Written, read back the same, and still the same plan.
    let on_disk = rd::read_manifest(&results).unwrap().unwrap();
    assert_eq!(on_disk, m);
    assert_eq!(on_disk.plan_id, before.plan_id);
    assert_eq!(on_disk.plan.fingerprint(), before.plan.fingerprint());
    // Interrupted after base's r4: base r5 and patched r4, r5 are left.
    finish(&results, &id, "base", 1, 4);

    let req = mmci::run::request::RunRequest {
        matrix: Some(matrix.clone()),
        ..mmci::run::request::RunRequest::new(results.clone())
    };
    let work = mmci::host::paths::WorkDir::new(tmp.path().join("work"));
    let opts = mmci::run::request::matrix_options(req, work).await.unwrap();
    // The command line's plan has no added runs; the dir's manifest does,
    // and the preflight takes it as the same plan.
    assert!(opts.plan.extra_repeats.is_empty());
    let manifest = mmci::run::executor::preflight(&opts).unwrap();
    assert_eq!(manifest.plan.extra_repeats.get(&id), Some(&2));
    let cells = mmci::run::executor::cells_of(&opts.plan, None);
    let (slots, finished, pending) =
        mmci::run::executor::slots_to_run(&opts.plan, &manifest, &cells, &results);
    assert_eq!(slots.len(), 10, "5 runs a kernel");
    assert_eq!(finished.len(), 7, "the 6 planned runs and base's r4");
    let ids = |s: &[Slot]| s.iter().map(Slot::id).collect::<BTreeSet<_>>();
    let want: BTreeSet<String> = [("base", 5), ("patched", 4), ("patched", 5)]
        .iter()
        .map(|(v, r)| format!("{id}-{v}-r{r}"))
        .collect();
    assert_eq!(ids(&pending), want);
    // In the recorded order: the seeded blocks of r4, then of r5.
    let order = mmci::matrix::plan::run_order(&slots, manifest.plan.order_seed);
    let expected: Vec<Slot> = order
        .into_iter()
        .filter(|s| !finished.contains_key(s))
        .collect();
    assert_eq!(pending, expected);
    assert!(pending.iter().map(|s| s.repeat).is_sorted());
}

#[test]
fn a_dir_at_its_budget_resumes_with_every_run_kept_and_says_what_each_cell_needed() {
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), SMOKE, "smoke-matrix", None);
    let id = cell(&results);
    mmci::cli::run::record_added(&results, Some(5), &[(id.clone(), 2)]).unwrap();
    for v in ["base", "patched"] {
        finish(&results, &id, v, 1, 4);
        finish(&results, &id, v, 2, 5);
    }
    let o = run(tmp.path(), &matrix, &results, &["--max-repeats", "5"]);
    let t = text(&o);
    // Nothing left to run: the cell is at its budget, whatever its guards.
    assert!(
        t.contains("(10 runs, 10 kept from an earlier invocation"),
        "{t}"
    );
    assert!(
        t.contains("runs each cell needed (sequential budget: up to 5 a kernel, 5 at a time):"),
        "{t}"
    );
    assert!(
        t.contains(": 5 runs a kernel (3 planned + 2 added by the budget of 5)"),
        "{t}"
    );
    // The runs table has the added repeats' columns.
    assert!(t.contains(" r5 "), "{t}");
    // The comparison counted them: 5 runs a kernel completed.
    let c =
        mmci::analysis::analyse_dir(&results, &Default::default(), &Default::default()).unwrap();
    let runs: Vec<(usize, usize)> = c
        .variants
        .iter()
        .map(|v| (v.planned, v.completed))
        .collect();
    assert_eq!(runs, [(5, 5), (5, 5)], "{t}");
    assert!(o.status.code().is_some_and(|c| c != exit::USAGE), "{t}");
}

#[test]
fn a_budget_below_the_repeats_or_with_a_shard_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), SMOKE, "smoke-matrix", None);
    let cases: &[(&[&str], &str)] = &[
        (
            &["--max-repeats", "2"],
            "command line: --max-repeats 2 is fewer than the plan's 3 repeats: give at least 3",
        ),
        (
            &["--max-repeats", "1000"],
            "--max-repeats 1000 is more than 100 runs a side (MAX_BUDGET_REPEATS",
        ),
        (
            &["--max-repeats", "5", "--shard", "1/1"],
            "--max-repeats 5 with --shard 1/1: the sequential budget decides on the whole matrix's comparison",
        ),
    ];
    for (args, want) in cases {
        let o = run(tmp.path(), &matrix, &results, args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(exit::USAGE), "{args:?}: {t}");
        assert!(t.contains(want), "{args:?}: {t}");
    }
    // The help says what it is for.
    let o = common::bin_blocking()
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.contains("--max-repeats <N>") && help.contains("instead of a coin"),
        "{help}"
    );
}
