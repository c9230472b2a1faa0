//! The stages of recorded results dirs (tests/fixtures: real runs of the
//! default, smoke and scenario B matrices, a real boot failure, real
//! consoles with splats), each changed as a run that went otherwise would
//! have left it: what each stage's check says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::analysis::Options;
use crate::results::dir::{self as rd, VariantFailure};

type Runs = BTreeMap<String, RunResult>;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn fixture(name: &str) -> (Manifest, Runs) {
    let dir = fixtures().join(name);
    let m = rd::read_manifest(&dir).unwrap().unwrap();
    let (runs, bad) = rd::runs_checked(&dir);
    assert!(bad.is_empty(), "{bad:?}");
    (m, runs)
}

fn stages_of(m: &Manifest, runs: &Runs) -> Vec<Stage> {
    let c = crate::analysis::compare(m, runs, &m.plan.expect, vec![], &Options::default());
    stages(m, runs, &c)
}

/// The runs of `variant` (slot ids end in `-VARIANT-rN`).
fn of<'a>(runs: &'a mut Runs, variant: &str) -> impl Iterator<Item = &'a mut RunResult> {
    let tag = format!("-{variant}-r");
    runs.iter_mut()
        .filter(move |(id, _)| id.contains(&tag))
        .map(|(_, r)| r)
}

fn splats(file: &str) -> Vec<crate::results::splat::Splat> {
    let console = std::fs::read_to_string(fixtures().join("splats").join(file)).unwrap();
    let s = crate::results::splat::detect(&console);
    assert!(!s.is_empty(), "{file}");
    s
}

/// The patched kernel could not be prepared: out of the manifest's
/// kernels, into its failed ones, and its runs never happened.
fn patched_failed(m: &mut Manifest, runs: &mut Runs, step: Option<FailedStep>, error: &str) {
    let k = m
        .kernels
        .iter()
        .position(|k| k.variant == "patched")
        .unwrap();
    let k = m.kernels.remove(k);
    m.failed_kernels.push(VariantFailure {
        variant: k.variant,
        arch: k.arch,
        flavour: k.flavour,
        error: error.into(),
        step,
    });
    runs.retain(|id, _| !id.contains("-patched-r"));
}

/// The noio matrix's cell and runs added to the default matrix's: two
/// scenarios, each with its own part of the verdict.
fn two_scenarios(m: &mut Manifest, runs: &mut Runs) {
    let (noio, noio_runs) = fixture("noio-matrix");
    m.plan.cells.extend(noio.plan.cells);
    runs.extend(noio_runs);
}

const APPLY_ERROR: &str = "patch 2/2 (mm/vmscan: throttle reclaimers on isolated MGLRU folios) does not apply at mm/vmscan.c:4535";

/// The check a stage expects: its state and words of its description, or
/// no result and words of why.
#[derive(Debug)]
enum Want {
    Is(CheckState, &'static str),
    None(&'static str),
}

use CheckState::{Fail, Success, Warning};
use Want::{Is, None as NoData};

type Tweak = fn(&mut Manifest, &mut Runs);

/// What happened, the fixture, the change, and what each stage says.
type Case = (&'static str, &'static str, Tweak, Vec<(&'static str, Want)>);

#[test]
fn each_stage_says_what_the_results_hold() {
    let cases: Vec<Case> = vec![
        (
            "the recorded default matrix",
            "default-matrix",
            |_, _| {},
            vec![
                ("apply", Is(Success, "the series applied on linux-source-6.12 2a7be210a22a")),
                ("build", Is(Success, "patched (x86_64) built")),
                ("boot", Is(Success, "all 10 runs of patched booted and completed")),
                ("splats", Is(Success, "no new splat in 10 runs of the candidate")),
                ("mglru_isolation", Is(Warning, "INCONCLUSIVE: 5 checks could not be decided in 20 runs on 2 cells")),
            ],
        ),
        (
            "the smoke matrix: 3 + 3 runs leave the guards at the floor",
            "smoke-matrix",
            |_, _| {},
            vec![
                ("boot", Is(Success, "all 3 runs of patched booted and completed")),
                ("mglru_isolation", Is(Warning, "INCONCLUSIVE: 3 checks could not be decided in 6 runs")),
            ],
        ),
        (
            "the series did not apply",
            "default-matrix",
            |m, r| patched_failed(m, r, Some(FailedStep::Apply), APPLY_ERROR),
            vec![
                ("apply", Is(Fail, "mmci: patch 2/2 (mm/vmscan: throttle reclaimers on isolated MGLRU folios) does not apply at mm/vmscan.c:4535")),
                ("build", NoData("the series did not apply, so no kernel of the candidate was built")),
                ("boot", NoData("no run of the candidate has a result: the series did not apply")),
                ("splats", NoData("the series did not apply")),
                ("mglru_isolation", NoData("the series did not apply")),
            ],
        ),
        (
            "the build failed after applying",
            "default-matrix",
            |m, r| patched_failed(m, r, Some(FailedStep::Build), "kernel build step failed: make: exit status 2"),
            vec![
                ("apply", Is(Success, "mmci: the series applied")),
                ("build", Is(Fail, "mmci: patched (x86_64) did not build: kernel build step failed: make: exit status 2")),
                ("boot", NoData("the candidate's kernel was not built")),
                ("mglru_isolation", NoData("no run of the candidate has a result")),
            ],
        ),
        (
            "a failure before applying: the tree",
            "default-matrix",
            |m, r| patched_failed(m, r, None, "fetching tree https://git.example.org/mm.git: exit status 128"),
            vec![
                ("apply", NoData("no kernel of the candidate had the series applied here")),
                ("build", Is(Fail, "did not build: fetching tree")),
            ],
        ),
        (
            "a given image: nothing applied or built here",
            "default-matrix",
            |m, _| {
                let k = &mut m.kernels[1].kernel;
                (k.build_key, k.series_hash) = (None, None);
            },
            vec![
                ("apply", NoData("a given image")),
                ("build", NoData("a given image")),
                ("boot", Is(Success, "all 10 runs of patched")),
            ],
        ),
        (
            "a run of the candidate did not boot",
            "default-matrix",
            |_, r| {
                let dead = crate::results::read_run(&fixtures().join("boot-failure")).unwrap();
                let run = of(r, "patched").next().unwrap();
                run.classification = dead.classification;
            },
            vec![
                ("build", Is(Success, "built")),
                ("boot", Is(Fail, "1 of 10 runs of patched did not complete (1 boot failure); first: x86_64-mglru_isolation-400c2e0342-patched-r1: Kernel panic - not syncing: No working init found.")),
                ("mglru_isolation", Is(Fail, "FAIL: 1 finding in 19 runs on 2 cells; patched: boot failure in x86_64-mglru_isolation-400c2e0342-patched-r1")),
            ],
        ),
        (
            "a baseline run did not boot: not the candidate's",
            "default-matrix",
            |_, r| {
                let dead = crate::results::read_run(&fixtures().join("boot-failure")).unwrap();
                of(r, "base").next().unwrap().classification = dead.classification;
            },
            vec![("boot", Is(Success, "all 10 runs of patched booted and completed"))],
        ),
        (
            "QEMU failed a run: a warning, not the kernel's",
            "default-matrix",
            |_, r| {
                let run = of(r, "patched").nth(3).unwrap();
                run.classification.outcome = crate::results::outcome::Outcome::InfraFailure;
                run.classification.reason = "qemu: could not access KVM kernel module".into();
            },
            vec![("boot", Is(Warning, "1 of 10 runs of patched failed for infra reasons (QEMU or the accelerator, not the kernel): qemu: could not access KVM kernel module"))],
        ),
        (
            "a new splat on the candidate",
            "default-matrix",
            |_, r| {
                for run in of(r, "patched").take(3) {
                    run.splats = splats("mmci_warn_shrink_folio_list.txt");
                }
            },
            vec![
                ("build", Is(Success, "patched (x86_64) built")),
                ("boot", Is(Success, "all 10 runs")),
                ("splats", Is(Fail, "mmci: new splat: WARNING in shrink_folio_list (patched: 3 of 10 runs, not on base)")),
                ("mglru_isolation", Is(Fail, "FAIL: 1 finding in 20 runs on 2 cells; patched: WARNING in shrink_folio_list in 3 of 10 runs (not on base)")),
            ],
        ),
        (
            "a splat the baseline has too",
            "default-matrix",
            |_, r| {
                of(r, "base").next().unwrap().splats = splats("suspicious_rcu.txt");
                of(r, "patched").next().unwrap().splats = splats("suspicious_rcu.txt");
            },
            vec![("splats", Is(Success, "no new splat in 10 runs of the candidate; 1 pre-existing (on base too): "))],
        ),
        (
            "two scenarios, a splat in one",
            "default-matrix",
            |m, r| {
                two_scenarios(m, r);
                for run in of(r, "patched").filter(|x| x.id.contains("noio_verity")).take(2) {
                    run.splats = splats("mmci_warn_shrink_folio_list.txt");
                }
            },
            vec![
                ("boot", Is(Success, "all 15 runs of patched booted and completed")),
                ("splats", Is(Fail, "new splat: WARNING in shrink_folio_list (patched: 2 of 15 runs, not on base)")),
                ("mglru_isolation", Is(Warning, "INCONCLUSIVE: 5 checks could not be decided in 20 runs on 2 cells")),
                ("noio_verity", Is(Fail, "FAIL: 1 finding in 10 runs on 1 cell; patched: WARNING in shrink_folio_list in 2 of 5 runs (not on base)")),
            ],
        ),
    ];
    for (what, dir, tweak, want) in cases {
        let (mut m, mut runs) = fixture(dir);
        tweak(&mut m, &mut runs);
        let got = stages_of(&m, &runs);
        let got_names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        for (name, w) in &want {
            let s = got
                .iter()
                .find(|s| s.name == *name)
                .unwrap_or_else(|| panic!("{what}: no stage {name} in {got_names:?}"));
            match (&s.outcome, w) {
                (StageOutcome::Judged { state, description }, Is(want_state, words)) => {
                    assert_eq!(state, want_state, "{what}: {name}: {description}");
                    assert!(description.contains(words), "{what}: {name}: {description}");
                    assert!(description.starts_with("mmci: "), "{what}: {name}");
                    assert!(description.chars().count() <= MAX_DESCRIPTION);
                }
                (StageOutcome::NoData(why), NoData(words)) => {
                    assert!(why.contains(words), "{what}: {name}: {why}");
                }
                (got, want) => panic!("{what}: {name}: {got:?}, not {want:?}"),
            }
        }
    }
}

#[test]
fn the_stages_follow_the_matrix() {
    let (mut m, mut runs) = fixture("default-matrix");
    assert_eq!(
        names(Some(&m)),
        ["apply", "build", "boot", "splats", "mglru_isolation"]
    );
    two_scenarios(&mut m, &mut runs);
    assert_eq!(
        names(Some(&m)),
        [
            "apply",
            "build",
            "boot",
            "splats",
            "mglru_isolation",
            "noio_verity"
        ]
    );
    // Before there are results: the fixed stages.
    assert_eq!(names(None), FIXED);
    let got: Vec<String> = stages_of(&m, &runs).into_iter().map(|s| s.name).collect();
    assert_eq!(got, names(Some(&m)));
}

#[test]
fn descriptions_are_one_line() {
    assert_eq!(one_line("a\n  b\tc "), "a b c");
    let long = "x".repeat(MAX_DESCRIPTION + 10);
    let cut = one_line(&long);
    assert_eq!(cut.chars().count(), MAX_DESCRIPTION);
    assert!(cut.ends_with('…'));
    assert_eq!(one_line(&long[..MAX_DESCRIPTION]).len(), MAX_DESCRIPTION);
}
