//! A real matrix through the `mmci` binary: the smoke cell on the bundled
//! kernel and on a series (2 kernels x 2 repeats), interrupted with SIGINT
//! midway, then resumed by the same command. The series is the tests' fault
//! series (kernels/series/test-fault-after-batches.mbox, told to WARN at
//! the first reclaim batches), so every candidate run shows it booted the
//! candidate, and its build is the one splat_series makes: it touches
//! mm/vmscan.c only, where the MGLRU series' mmzone.h made a cold CI
//! rebuild the whole tree (244 s) for this test alone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use mmci::error::exit;
use mmci::matrix::{Overrides, Variant};

mod common;
use common::qemu_processes_mentioning;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Run dirs that hold a finished run.
fn finished_runs(results: &Path) -> BTreeSet<String> {
    std::fs::read_dir(results.join("runs"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().join("run.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The fault series, copied next to the matrix (a matrix names files in
/// its own directory or repository).
const FAULT_SERIES: &str = "test-fault-after-batches.mbox";

/// The smoke cell with two kernels: base, and the fault series booted to
/// WARN once reclaim has run more than one batch.
fn smoke_matrix(dir: &Path) -> PathBuf {
    std::fs::copy(
        repo().join("kernels/series").join(FAULT_SERIES),
        dir.join(FAULT_SERIES),
    )
    .unwrap();
    let smoke = std::fs::read_to_string(repo().join("matrix/smoke.yaml")).unwrap();
    let m = dir.join("smoke-fault.yaml");
    std::fs::write(
        &m,
        format!(
            "{smoke}kernels:\n  - name: base\n  - name: patched\n    series: {FAULT_SERIES}\n    \
             cmdline: [mmci_test_fault=warn:1]\n"
        ),
    )
    .unwrap();
    m
}

fn command(matrix: &Path, results: &Path) -> tokio::process::Command {
    let mut cmd = common::mmci();
    cmd.args(["run", "--matrix"])
        .arg(matrix)
        // One guest at a time, so that "midway" is well defined.
        .args([
            "--repeats",
            "2",
            "--accel",
            "tcg",
            "--guest-vcpus",
            "1",
            "--results",
        ])
        .arg(results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[tokio::test]
async fn smoke_matrix_interrupted_then_resumed() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let matrix = smoke_matrix(tmp.path());
    let needle = results.to_string_lossy().into_owned();

    // The expected runs, from the plan the binary will compute.
    let plan = mmci::matrix::load(
        &matrix,
        &Overrides {
            repeats: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    let cells: Vec<_> = plan.cells.iter().collect();
    let expected: BTreeSet<String> = plan.slots(&cells).iter().map(|s| s.id()).collect();
    assert_eq!(expected.len(), 4);

    // First invocation: builds (or finds) both kernels, then is
    // interrupted once the first run is on disk.
    let mut child = command(&matrix, &results).spawn().unwrap();
    // Kernel builds on a fresh machine take minutes; runs take seconds.
    let deadline = Instant::now() + Duration::from_secs(30 * 60);
    while finished_runs(&results).is_empty() {
        assert!(Instant::now() < deadline, "no run finished");
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().await.unwrap();
            panic!(
                "mmci ended before the first run: {status}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("mmci exits after SIGINT")
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(exit::INTERRUPTED),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        qemu_processes_mentioning(&needle).is_empty(),
        "QEMU left behind after SIGINT"
    );
    let kept = finished_runs(&results);
    assert!(
        !kept.is_empty() && kept.len() < 4,
        "interrupted midway: {kept:?}"
    );
    assert!(kept.is_subset(&expected), "{kept:?} vs {expected:?}");
    let manifest = mmci::results::dir::read_manifest(&results)
        .unwrap()
        .expect("manifest written first");
    let in_manifest: Vec<_> = manifest.plan.cells.iter().collect();
    let planned: BTreeSet<String> = manifest
        .plan
        .slots(&in_manifest)
        .iter()
        .map(|s| s.id())
        .collect();
    assert_eq!(planned, expected);

    let started = |id: &String| {
        mmci::results::read_run(&results.join("runs").join(id))
            .unwrap()
            .started_unix
    };
    let kept_started: Vec<u64> = kept.iter().map(started).collect();

    // Second invocation: keeps what finished, runs the rest.
    let out = tokio::time::timeout(
        Duration::from_secs(10 * 60),
        command(&matrix, &results).output(),
    )
    .await
    .expect("the resumed matrix finishes")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Every run completed, and the candidate's WARN is a new splat: the
    // verdict is FAIL, and so is the exit code (docs/commands.md).
    assert!(stdout.contains("verdict: FAIL"), "{stdout}");
    assert_eq!(
        out.status.code(),
        Some(exit::RUN_FAILED),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "4 runs, {} kept from an earlier invocation",
            kept.len()
        )),
        "{stdout}"
    );
    assert_eq!(finished_runs(&results), expected);
    // Kept runs were not run again.
    assert_eq!(kept.iter().map(started).collect::<Vec<_>>(), kept_started);
    let manifest = mmci::results::dir::read_manifest(&results)
        .unwrap()
        .unwrap();
    let names: Vec<&str> = manifest
        .kernels
        .iter()
        .map(|k| k.variant.as_str())
        .collect();
    assert_eq!(names, ["base", "patched"]);
    assert!(manifest.kernels[1].kernel.series_hash.is_some());
    assert!(qemu_processes_mentioning(&needle).is_empty());
    // Every run booted its own kernel: the candidate's WARNed in
    // shrink_folio_list() as its command line asked, the base's did not,
    // and both ran the workload to the end.
    for id in &expected {
        let r = mmci::results::read_run(&results.join("runs").join(id)).unwrap();
        assert!(
            r.metrics.mglru().is_some(),
            "{id}: completed runs have metrics"
        );
        let warned = r
            .splats
            .iter()
            .any(|s| s.title == "WARNING in shrink_folio_list");
        assert_eq!(warned, id.contains("-patched-"), "{id}: {:?}", r.splats);
    }
}

/// A one-patch series appending an unused static function to mm/vmscan.c,
/// made against the bundled tree's own file (the hunk's context is its last
/// three lines).
async fn unused_function_series(dir: &Path) -> PathBuf {
    let work = common::work_dir();
    let (context, start) = common::bundled_tail("mm/vmscan.c", &work).await;
    let hunk = format!(
        "@@ -{start},3 +{start},5 @@\n{context}+\n+static int mmci_unused_helper(void) {{ return 0; }}\n"
    );
    let mbox = common::mbox::OnePatch {
        author: "Test Author <author@example.org>",
        date: "Mon, 30 Nov 2026 10:00:00 +0000",
        title: "mm/vmscan: add a helper nobody calls",
        message_id: "unused-helper@example.org",
        message: "It only exists to make the compiler warn.",
        file: "mm/vmscan.c",
        hunk: &hunk,
    }
    .mbox();
    let path = dir.join("unused.mbox");
    std::fs::write(&path, mbox).unwrap();
    path
}

#[tokio::test]
async fn new_build_warnings_of_a_series_are_reported_against_the_base() {
    let tmp = tempfile::tempdir().unwrap();
    let series = unused_function_series(tmp.path()).await;
    let request = mmci::run::request::RunRequest {
        matrix: Some(repo().join("matrix/smoke.yaml")),
        overrides: Overrides {
            variants: Some(vec![
                Variant::base(),
                Variant {
                    name: "warns".into(),
                    series: Some(mmci::series::SeriesSpec::from_path(&series)),
                    ..Variant::base()
                },
            ]),
            ..Default::default()
        },
        accel: mmci::run::accel::AccelRequest::Tcg,
        retries: 0,
        ..mmci::run::request::RunRequest::new(tmp.path().join("results"))
    };
    let opts = mmci::run::request::matrix_options(request, common::work_dir())
        .await
        .unwrap();
    let outcome = mmci::run::executor::run_matrix(&opts).await.unwrap();
    assert!(mmci::run::executor::all_completed(&outcome));
    let warns = outcome
        .manifest
        .kernels
        .iter()
        .find(|k| k.variant == "warns")
        .unwrap();
    assert_eq!(
        warns.new_warnings.len(),
        1,
        "exactly the one new warning: {:?}",
        warns.new_warnings
    );
    let w = &warns.new_warnings[0];
    assert!(
        w.contains("mm/vmscan.c: warning: 'mmci_unused_helper' defined but not used"),
        "{w}"
    );
    // The manifest on disk says the same, and the report shows it.
    let on_disk = mmci::results::dir::read_manifest(&opts.results)
        .unwrap()
        .unwrap();
    assert_eq!(on_disk.kernels, outcome.manifest.kernels);
    let text = mmci::report::runs_table::render_kernels(&on_disk);
    assert!(
        text.contains("1 new build warning(s) against the baseline:"),
        "{text}"
    );
    assert!(text.contains("mmci_unused_helper"), "{text}");
}
