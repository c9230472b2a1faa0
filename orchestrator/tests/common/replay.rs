//! Results dirs of a matrix written by a test, holding recorded real runs
//! (tests/fixtures/smoke-matrix, tests/fixtures/default-matrix) moved to
//! the plan's slots cell by cell, so that `mmci run` on them resumes with
//! every run kept: nothing built, no guest booted. The fixtures' plans are
//! older than today's cell ids; the runs' contents are untouched.

use std::path::{Path, PathBuf};
use std::process::Output;

use mmci::matrix::{Overrides, Slot};
use mmci::results::dir as rd;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The smoke cell of the smoke fixture, base and a candidate (its own
/// kernel command line, so that no series is read or pinned: nothing
/// here needs the kernel tree).
pub const SMOKE: &str = "\
description: exit codes, the smoke fixture's cell
axes:
  arch: [x86_64]
  vcpus: [1]
  memory_mb: [512]
  scenario: [mglru_isolation]
  threads: [8]
  working_set_mb: [24]
  memcg_max_mb: [16]
  swap_delay_ms: [0]
  duration_s: [3]
repeats: 3
kernels:
  - name: base
  - name: patched
    cmdline: [mmci_replayed=1]
";

/// The default fixture's two cells, 5 repeats; `expect` appended.
pub fn default_matrix(expect: &str) -> String {
    format!(
        "\
description: exit codes, the default fixture's cells
axes:
  arch: [x86_64]
  vcpus: [2]
  memory_mb: [1024]
  scenario: [mglru_isolation]
  memcg_max_mb: [16]
  working_set_mb: [48]
  swap_delay_ms: [50]
  threads: [64, 192]
  duration_s: [20]
repeats: 5
kernels:
  - name: base
  - name: patched
    cmdline: [mmci_replayed=1]
{expect}"
    )
}

/// Writes `matrix` into `root` and a results dir of its plan (as `mmci
/// run --shard` would with `shard`) holding `fixture`'s runs: its i-th
/// cell's runs as the plan's i-th cell's, same kernel and repeat. The
/// manifest is the fixture's (its kernels, host) with the plan replaced.
/// Returns (matrix, results dir).
pub fn replay(
    root: &Path,
    matrix: &str,
    fixture_name: &str,
    shard: Option<mmci::matrix::Shard>,
) -> (PathBuf, PathBuf) {
    let mpath = root.join("matrix.yaml");
    std::fs::write(&mpath, matrix).unwrap();
    let plan = mmci::matrix::load(&mpath, &Overrides::default()).unwrap();
    let from = fixture(fixture_name);
    let mut m = rd::read_manifest(&from).unwrap().unwrap();
    assert_eq!(m.plan.cells.len(), plan.cells.len(), "{fixture_name}");
    assert_eq!(m.plan.repeats, plan.repeats, "{fixture_name}");
    let dir = root.join("results");
    for (old, new) in m.plan.cells.iter().zip(&plan.cells) {
        // The replayed cell is the one recorded, but for ids.
        assert_eq!(
            (old.vcpus, old.memory_mb, &old.job.threads),
            (new.vcpus, new.memory_mb, &new.job.threads)
        );
        for v in &plan.variants {
            for repeat in 1..=plan.repeats {
                let slot = |cell: &str| Slot {
                    cell: cell.to_string(),
                    variant: v.name.clone(),
                    repeat,
                };
                super::results::copy_dir(
                    &rd::run_dir(&from, &slot(&old.id)),
                    &rd::run_dir(&dir, &slot(&new.id)),
                );
            }
        }
    }
    m.plan_id = plan.fingerprint();
    m.plan = plan;
    m.shards = shard.map(|s| vec![s]);
    rd::write_manifest(&dir, &m).unwrap();
    (mpath, dir)
}

/// `mmci run --matrix M --results DIR ARGS` in a work dir of its own
/// (nothing is built: every run is kept). Without the sequential budget
/// unless `args` give `--max-repeats`: a replayed dir has the recorded runs
/// only, and an undecided cell's next block would build and boot.
pub fn run(root: &Path, matrix: &Path, results: &Path, args: &[&str]) -> Output {
    let budget: &[&str] = match args.contains(&"--max-repeats") {
        true => &[],
        false => &["--max-repeats", "0"],
    };
    super::bin_blocking()
        .env("MMCI_WORK_DIR", root.join("work"))
        .env("COLUMNS", "200")
        .args(["run", "--accel", "tcg", "--matrix"])
        .arg(matrix)
        .arg("--results")
        .arg(results)
        .args(budget)
        .args(args)
        .output()
        .unwrap()
}
