//! The run order's seed: recorded when a results dir is made (`--seed`, or
//! a fresh one), kept when it is resumed, and a resume with another
//! `--seed` refused (the runs so far followed the recorded order). Through
//! the executor's preflight (which makes the dir) and through the binary on
//! a results dir of recorded runs (see common/replay.rs: nothing is built
//! or booted). The order itself, a pure function of the plan and the seed,
//! is tested in matrix/plan/order.rs.

mod common;

use std::path::{Path, PathBuf};

use common::replay::{replay, run, SMOKE};
use mmci::error::exit;
use mmci::results::dir as rd;

fn smoke() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix/smoke.yaml")
}

async fn preflight(results: &Path, seed: Option<u64>) -> Result<rd::Manifest, String> {
    let req = mmci::run::request::RunRequest {
        matrix: Some(smoke()),
        seed,
        ..mmci::run::request::RunRequest::new(results.to_path_buf())
    };
    let work = mmci::host::paths::WorkDir::new(results.with_extension("work"));
    let opts = mmci::run::request::matrix_options(req, work).await.unwrap();
    mmci::run::executor::preflight(&opts).map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_new_dir_records_its_seed_and_a_resume_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    // Asked for: recorded as given.
    let asked = tmp.path().join("asked");
    let m = preflight(&asked, Some(5)).await.unwrap();
    assert_eq!(m.plan.order_seed, Some(5));
    let on_disk = rd::read_manifest(&asked).unwrap().unwrap();
    assert_eq!(on_disk.plan.order_seed, Some(5));
    // Not asked for: a fresh one, different for another dir, and kept by
    // a resume without --seed.
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let sa = preflight(&a, None).await.unwrap().plan.order_seed.unwrap();
    let sb = preflight(&b, None).await.unwrap().plan.order_seed.unwrap();
    assert_ne!(sa, sb);
    assert_eq!(preflight(&a, None).await.unwrap().plan.order_seed, Some(sa));
    assert_eq!(
        preflight(&a, Some(sa)).await.unwrap().plan.order_seed,
        Some(sa)
    );
    // Another seed on resume: refused, naming both.
    let e = preflight(&asked, Some(6)).await.unwrap_err();
    assert!(e.contains("runs ordered by seed 5, not by --seed 6"), "{e}");
}

#[test]
fn a_resumed_run_reports_the_recorded_seed_and_refuses_another() {
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), SMOKE, "smoke-matrix", None);
    let mut m = rd::read_manifest(&results).unwrap().unwrap();
    m.plan.order_seed = Some(7);
    rd::write_manifest(&results, &m).unwrap();

    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let o = run(tmp.path(), &matrix, &results, &["--seed", "8"]);
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", text(&o));
    assert!(
        text(&o).contains("holds runs ordered by seed 7, not by --seed 8"),
        "{}",
        text(&o)
    );
    for args in [&[][..], &["--seed", "7"][..]] {
        let o = run(tmp.path(), &matrix, &results, args);
        assert!(
            text(&o).contains("(6 runs, 6 kept from an earlier invocation")
                && text(&o).contains("run order seed 7)"),
            "{args:?}: {}",
            text(&o)
        );
        // 3 + 3 recorded runs leave the guards at their floors.
        assert_eq!(o.status.code(), Some(exit::INCONCLUSIVE), "{}", text(&o));
    }
    let kept = rd::read_manifest(&results).unwrap().unwrap();
    assert_eq!(kept.plan.order_seed, Some(7));
}
