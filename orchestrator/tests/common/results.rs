//! Results dirs written for tests that read one (posting, b4-check): the
//! manifest of one run of the default plan whose patched kernel carries
//! the bundled series, and no runs; or the recorded default matrix (real
//! runs) with a series on its patched kernel.

use std::path::{Path, PathBuf};

/// The bundled series (v1), assembled as mmci reads it.
pub fn bundled_series() -> mmci::series::Series {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    let mails = mmci::series::mails_from_mbox(&std::fs::read(path).unwrap());
    mmci::series::assemble(&mails, "bundled").unwrap()
}

/// Writes `dir` as a results dir created at `created_unix`: the default
/// plan, a 2-CPU host and a patched kernel carrying the bundled series.
/// No runs are recorded, so its verdict is INCONCLUSIVE.
pub fn write_bundled(dir: &Path, created_unix: u64) -> PathBuf {
    use mmci::results::dir::{Host, Manifest, VariantKernel};
    use mmci::results::KernelInfo;
    std::fs::create_dir_all(dir.join("runs")).unwrap();
    let plan = mmci::matrix::default_plan(&Default::default()).unwrap();
    let series = bundled_series();
    let m = Manifest {
        format: mmci::results::dir::MANIFEST_FORMAT,
        mmci_version: "test".into(),
        mmci_commit: None,
        plan_id: plan.fingerprint(),
        plan,
        shards: None,
        host: Host {
            hostname: "h".into(),
            cpus: 2,
            memory_mb: 1024,
            ..Default::default()
        },
        accel: Default::default(),
        kernels: vec![VariantKernel {
            variant: "patched".into(),
            arch: mmci::arch::Arch::X86_64,
            flavour: Default::default(),
            description: "patched".into(),
            kernel: KernelInfo {
                image: PathBuf::from("/cache/vmlinux"),
                release: "6.12.95".into(),
                tree: None,
                tree_commit: None,
                build_key: None,
                series_hash: Some(series.hash.clone()),
                head_commit: None,
                build_sandboxed: None,
                build_warnings: vec![],
                series: Some(series),
                patchwork: None,
                flavour: mmci::kernel::Flavour::Default,
                upstream: None,
                compiler: None,
                thp: None,
                config: None,
            },
            new_warnings: vec![],
            config: None,
        }],
        failed_kernels: vec![],
        created_unix,
    };
    mmci::results::dir::write_manifest(dir, &m).unwrap();
    dir.to_path_buf()
}

/// The recorded default matrix: tests/fixtures/default-matrix, a real run
/// of matrix/default.yaml with the bundled series under TCG (5 runs a
/// side in each of its 2 cells; each run's run.json and records.jsonl).
pub fn recorded_default_matrix() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-matrix")
}

/// Copies the directory `from` into `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Writes `dir` as the [`recorded_default_matrix`] with `series` on its
/// patched kernel (the fixture's manifest keeps the series' hash only) and,
/// when given, the patchwork series it came from, as `--patchwork
/// --pw-series` leaves it. Its runs are the real ones: its verdict is
/// mmci's analysis of them.
pub fn write_recorded(
    dir: &Path,
    series: &mmci::series::Series,
    origin: Option<&mmci::series::patchwork::Origin>,
) -> PathBuf {
    copy_dir(&recorded_default_matrix(), dir);
    let mpath = dir.join(mmci::results::dir::MANIFEST);
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    assert_eq!(m["kernels"][1]["variant"], "patched");
    let k = &mut m["kernels"][1]["kernel"];
    k["series"] = serde_json::to_value(series.metadata()).unwrap();
    if let Some(o) = origin {
        k["patchwork"] = serde_json::to_value(o).unwrap();
    }
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    dir.to_path_buf()
}

/// The runs of `variant` in results dir `dir`, by slot id (which ends in
/// `-VARIANT-rN`).
pub fn runs_of(dir: &Path, variant: &str) -> Vec<PathBuf> {
    let tag = format!("-{variant}-r");
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir.join(mmci::results::dir::RUNS))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&tag))
        .collect();
    runs.sort();
    runs
}

/// Puts the splats of `console` (a file of tests/fixtures/splats: a real
/// console) on the first `n` runs of `variant` in `dir`, as mmci's
/// detector finds them on a run's console.
pub fn add_splats(dir: &Path, variant: &str, n: usize, console: &str) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/splats")
            .join(console),
    )
    .unwrap();
    let splats = mmci::results::splat::detect(&text);
    assert!(!splats.is_empty(), "{console}");
    for run in runs_of(dir, variant).iter().take(n) {
        let path = run.join("run.json");
        let mut r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        r["splats"] = serde_json::to_value(&splats).unwrap();
        std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    }
}

/// Rewrites `dir` as `mmci run` leaves it when `variant`'s series did not
/// apply: its kernel among the failed ones, with the step and `error` (git
/// am's words as mmci puts them), and none of its runs.
pub fn not_applied(dir: &Path, variant: &str, error: &str) {
    let mpath = dir.join(mmci::results::dir::MANIFEST);
    let mut m = mmci::results::dir::read_manifest(dir).unwrap().unwrap();
    let k = m.kernels.iter().position(|k| k.variant == variant).unwrap();
    let k = m.kernels.remove(k);
    m.failed_kernels.push(mmci::results::dir::VariantFailure {
        variant: k.variant,
        arch: k.arch,
        flavour: k.flavour,
        error: error.into(),
        step: Some(mmci::kernel::FailedStep::Apply),
    });
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    for run in runs_of(dir, variant) {
        std::fs::remove_dir_all(run).unwrap();
    }
}
