//! `mmci bench boot`: how fast a guest gets going and what mmci adds around
//! it. Measured on the real kernel and QEMU, never in a timed unit test.

use std::path::Path;
use std::time::{Duration, Instant};

use mmci_record::{GuestJob, Scenario};

use crate::arch::Arch;
use crate::guest::initramfs;
use crate::results::KernelInfo;
use crate::run::accel::AccelChoice;
use crate::run::guest::{self, RunConfig, RunError};

/// Targets from the vertical-slice issue, for this 2-core machine.
pub const TARGET_FIRST_RECORD_MS: f64 = 2000.0;
pub const TARGET_HOST_OVERHEAD_MS: f64 = 300.0;
pub const TARGET_INITRAMFS_MS: f64 = 100.0;
pub const TARGET_GUEST_INIT_BYTES: usize = 2 << 20;

#[derive(Clone, Debug, Default)]
pub struct BootBench {
    pub runs: usize,
    pub first_record_ms: Vec<f64>,
    pub host_overhead_ms: Vec<f64>,
    pub qemu_ms: Vec<f64>,
    pub initramfs_ms: Vec<f64>,
    pub guest_init_bytes: usize,
    pub failures: Vec<String>,
}

pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// Boots `runs` probe guests one after the other and times them.
pub async fn boot(
    runs: usize,
    arch: Arch,
    kernel: &KernelInfo,
    guest_init: &[u8],
    accel: &AccelChoice,
    out_dir: &Path,
    scratch: &Path,
) -> Result<BootBench, RunError> {
    let mut bench = BootBench {
        runs,
        guest_init_bytes: guest_init.len(),
        ..Default::default()
    };
    let job = GuestJob {
        scenario: Scenario::Probe,
        ..GuestJob::default()
    };
    // The initramfs build on its own, many times: it is too fast to time once.
    for _ in 0..50 {
        let t = Instant::now();
        let archive = initramfs::initramfs(guest_init, &job);
        std::fs::write(scratch.join("bench-initrd.cpio"), &archive).map_err(|source| {
            RunError::Io {
                path: scratch.to_path_buf(),
                source,
            }
        })?;
        bench.initramfs_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = std::fs::remove_file(scratch.join("bench-initrd.cpio"));
    for i in 0..runs {
        let cfg = RunConfig {
            id: format!("boot-{i}"),
            arch,
            accel: accel.accel,
            accel_note: accel.note.clone(),
            vcpus: 1,
            memory_mb: 256,
            swap_mb: 0,
            kernel: kernel.clone(),
            guest_init: guest_init.to_vec(),
            job: job.clone(),
            extra_cmdline: vec![],
            timeout: Duration::from_secs(60),
            retries: 0,
            image: None,
        };
        let t = Instant::now();
        let r = guest::run_guest(&cfg, &out_dir.join(&cfg.id), scratch).await?;
        let wall_ms = t.elapsed().as_secs_f64() * 1000.0;
        if !guest::is_completed(&r) {
            bench
                .failures
                .push(format!("{}: {}", cfg.id, r.classification.reason));
            continue;
        }
        if let Some(ms) = r.timing.first_record_ms {
            bench.first_record_ms.push(ms);
        }
        bench.qemu_ms.push(r.timing.qemu_ms);
        // Everything outside QEMU's lifetime, result files included.
        bench.host_overhead_ms.push(wall_ms - r.timing.qemu_ms);
    }
    Ok(bench)
}

fn verdict(value: Option<f64>, target: f64) -> &'static str {
    match value {
        Some(v) if v <= target => "ok",
        Some(_) => "MISSED",
        None => "no data",
    }
}

pub fn render(b: &BootBench, accel: &AccelChoice) -> String {
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
    let first = median(&b.first_record_ms);
    let overhead = median(&b.host_overhead_ms);
    let initramfs = median(&b.initramfs_ms);
    let mut out = format!(
        "boot benchmark: {} runs under {} ({})\n",
        b.runs, accel.accel, accel.note
    );
    out.push_str(&format!(
        "  spawn -> first record (median) {:>12}   target <= {TARGET_FIRST_RECORD_MS} ms  {}\n",
        fmt(first),
        verdict(first, TARGET_FIRST_RECORD_MS)
    ));
    out.push_str(&format!(
        "  QEMU lifetime (median)         {:>12}\n",
        fmt(median(&b.qemu_ms))
    ));
    out.push_str(&format!(
        "  host overhead per run (median) {:>12}   target <= {TARGET_HOST_OVERHEAD_MS} ms  {}\n",
        fmt(overhead),
        verdict(overhead, TARGET_HOST_OVERHEAD_MS)
    ));
    out.push_str(&format!(
        "  initramfs build (median of 50) {:>12}   target <= {TARGET_INITRAMFS_MS} ms  {}\n",
        fmt(initramfs),
        verdict(initramfs, TARGET_INITRAMFS_MS)
    ));
    out.push_str(&format!(
        "  guest-init binary              {:>9} KiB   target <= {} KiB  {}\n",
        b.guest_init_bytes / 1024,
        TARGET_GUEST_INIT_BYTES / 1024,
        if b.guest_init_bytes <= TARGET_GUEST_INIT_BYTES {
            "ok"
        } else {
            "MISSED"
        }
    ));
    if !b.first_record_ms.is_empty() {
        let list: Vec<String> = b
            .first_record_ms
            .iter()
            .map(|v| format!("{v:.0}"))
            .collect();
        out.push_str(&format!(
            "  first record per run (ms): {}\n",
            list.join(" ")
        ));
    }
    for f in &b.failures {
        out.push_str(&format!("  failed: {f}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}

/// Figures of `mmci bench build`, in seconds.
#[derive(Clone, Debug, Default)]
pub struct BuildBench {
    /// Cold builds with plain make, one per round.
    pub plain_make: Vec<f64>,
    /// Cold builds through mmci, one per round.
    pub cold: Vec<f64>,
    pub cache_hit: f64,
    pub patched: f64,
    pub patched_title: String,
    pub sandboxed: bool,
    pub ccache: bool,
}

impl BuildBench {
    /// mmci's cold build over plain make's, medians of the rounds.
    pub fn overhead(&self) -> f64 {
        median(&self.cold).unwrap_or(0.0) / median(&self.plain_make).unwrap_or(1.0) - 1.0
    }
}

/// Everything the build bench's steps share.
struct BuildBenchCtx {
    arch: Arch,
    tree: crate::kernel::tree::SourceTree,
    root: std::path::PathBuf,
    work: crate::host::paths::WorkDir,
    req: crate::kernel::build::BuildRequest,
}

impl BuildBenchCtx {
    /// The reference: the same steps as mmci with plain make (no sandbox,
    /// no cache), into a fresh object dir.
    async fn plain_cold(&self, checkout: &Path) -> Result<f64, crate::kernel::KernelError> {
        use crate::kernel::build;
        let arch = self.arch;
        let log = self.root.join("plain.log");
        let objs = self.root.join("plain-objs");
        let _ = std::fs::remove_dir_all(&objs);
        std::fs::create_dir_all(&objs).map_err(|e| io(&objs, e))?;
        let frag_paths: Vec<String> = self
            .req
            .fragments
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let p = objs.join(format!("frag{i}.config"));
                std::fs::write(&p, &f.text).map(|_| p.display().to_string())
            })
            .collect::<Result<_, _>>()
            .map_err(|e| io(&objs, e))?;
        let t = Instant::now();
        let make = |targets: &[&str], jobs: Option<usize>| {
            let mut c = tokio::process::Command::new("make");
            c.current_dir(checkout)
                .args(build::make_args(arch, &objs, jobs, false, targets));
            c
        };
        let step = |e: crate::host::process::CommandError| {
            crate::kernel::KernelError::Build(build::BuildError::Step(e))
        };
        crate::host::process::run_logged(&mut make(&["tinyconfig"], None), &log, "make tinyconfig")
            .await
            .map_err(step)?;
        let mut merge =
            tokio::process::Command::new(checkout.join("scripts/kconfig/merge_config.sh"));
        merge
            .current_dir(checkout)
            .env("ARCH", arch.kernel_arch())
            .args(["-m", "-O"])
            .arg(&objs)
            .arg(objs.join(".config"))
            .args(&frag_paths);
        crate::host::process::run_logged(&mut merge, &log, "merge_config.sh")
            .await
            .map_err(step)?;
        crate::host::process::run_logged(
            &mut make(&["olddefconfig"], None),
            &log,
            "make olddefconfig",
        )
        .await
        .map_err(step)?;
        crate::host::process::run_logged(
            &mut make(&[arch.image_target().0], Some(self.req.jobs)),
            &log,
            "make",
        )
        .await
        .map_err(step)?;
        let secs = t.elapsed().as_secs_f64();
        let _ = std::fs::remove_dir_all(&objs);
        Ok(secs)
    }

    /// mmci's cold build: its object dir and artifact cache emptied first.
    async fn mmci_cold(
        &self,
    ) -> Result<crate::kernel::build::KernelBuild, crate::kernel::KernelError> {
        for d in [self.work.objs(), self.work.builds()] {
            let _ = std::fs::remove_dir_all(&d);
        }
        Ok(crate::kernel::build::build_kernel(&self.tree, None, &self.req, &self.work).await?)
    }
}

/// Cold builds with plain make and through mmci, in `rounds` interleaved
/// rounds (ABBA order, so that a drifting host hits both alike), then a
/// cache hit and a patched rebuild. Runs in its own work dir (sharing only
/// the imported tree), so "cold" is really cold.
pub async fn build(
    arch: Arch,
    main_work: &crate::host::paths::WorkDir,
    tarball: &Path,
    jobs: usize,
    rounds: usize,
    ccache: bool,
) -> Result<BuildBench, crate::kernel::KernelError> {
    use crate::kernel::build::{self, BuildRequest};
    use crate::kernel::tree;
    use crate::series;

    let tree = tree::import_tarball(tarball, main_work).await?;
    let root = main_work.root().join("bench-build");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| io(&root, e))?;
    std::os::unix::fs::symlink(main_work.trees(), root.join("trees")).map_err(|e| io(&root, e))?;
    let work = crate::host::paths::WorkDir::new(&root);
    let ctx = BuildBenchCtx {
        arch,
        tree: tree.clone(),
        root: root.clone(),
        work: work.clone(),
        req: BuildRequest {
            arch,
            fragments: build::default_fragments(arch),
            jobs,
            // The tarball and a patch of kernels/series embedded in mmci:
            // both are ours, so they may build where the sandbox cannot
            // (the benchmark says whether it ran sandboxed).
            sandbox: build::SandboxPolicy {
                allow_unsandboxed: true,
                ..build::SandboxPolicy::operator()
            },
            ccache,
        },
    };
    let mut b = BuildBench::default();

    // Both sides start from a checked-out tree: creating a worktree (86k
    // files) is a once-per-work-dir cost, not part of a build.
    let plain_checkout =
        tree::prepare_checkout(&tree, "plain", &work, &root.join("checkout.log"), None).await?;
    tree::prepare_checkout(&tree, arch.name(), &work, &root.join("checkout.log"), None).await?;
    for round in 0..rounds.max(1) {
        let plain_first = round % 2 == 0;
        for side in [plain_first, !plain_first] {
            if side {
                let secs = ctx.plain_cold(&plain_checkout).await?;
                tracing::info!(
                    round,
                    seconds = format!("{secs:.1}"),
                    "plain make cold build"
                );
                b.plain_make.push(secs);
            } else {
                let t = Instant::now();
                let cold = ctx.mmci_cold().await?;
                let secs = t.elapsed().as_secs_f64();
                tracing::info!(round, seconds = format!("{secs:.1}"), "mmci cold build");
                b.cold.push(secs);
                b.sandboxed = cold.sandboxed;
                b.ccache = cold.ccache;
            }
        }
    }

    let t = Instant::now();
    let hit = build::build_kernel(&tree, None, &ctx.req, &work).await?;
    b.cache_hit = t.elapsed().as_secs_f64();
    debug_assert!(hit.cached);

    // A real one-patch series that touches mm/vmscan.c only: the first patch
    // of the bundled MGLRU series.
    let mbox = include_bytes!("../../../kernels/series/mglru-isolation-v1.mbox");
    let mut mails = series::mails_from_mbox(mbox);
    mails.retain(|m| m.subject.contains(" 1/2]"));
    for m in &mut mails {
        // Posted on its own, it is a one-patch series.
        m.subject = m.subject.replace("[PATCH v1 1/2]", "[PATCH]");
    }
    let one = series::assemble(&mails, "bundled patch 1/2")?;
    b.patched_title = one.patches[0].title.clone();
    let t = Instant::now();
    build::build_kernel(&tree, Some(&one), &ctx.req, &work).await?;
    b.patched = t.elapsed().as_secs_f64();

    let _ = std::fs::remove_dir_all(&root);
    let _ = tokio::process::Command::new("git")
        .arg("-C")
        .arg(&tree.path)
        .args(["worktree", "prune"])
        .status()
        .await;
    Ok(b)
}

fn io(path: &Path, e: std::io::Error) -> crate::kernel::KernelError {
    crate::kernel::KernelError::Build(crate::kernel::build::BuildError::Io {
        path: path.to_path_buf(),
        source: e,
    })
}

pub fn render_build(b: &BuildBench, arch: Arch) -> String {
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cold = median(&b.cold).unwrap_or(0.0);
    let mut out = format!(
        "build benchmark ({arch}, sandboxed: {}, ccache: {}, {} round(s), medians)\n",
        b.sandboxed,
        b.ccache,
        b.cold.len()
    );
    out.push_str(&format!(
        "  plain make (reference)      {:>8.1} s   ({})\n",
        median(&b.plain_make).unwrap_or(0.0),
        list(&b.plain_make)
    ));
    out.push_str(&format!(
        "  mmci cold build             {:>8.1} s   ({}) overhead {:+.1}% vs plain make (target <= 3%)  {}\n",
        cold,
        list(&b.cold),
        b.overhead() * 100.0,
        if b.overhead() <= 0.03 { "ok" } else { "MISSED" }
    ));
    out.push_str(&format!(
        "  cache hit                   {:>8.3} s   target <= 1 s  {}\n",
        b.cache_hit,
        if b.cache_hit <= 1.0 { "ok" } else { "MISSED" }
    ));
    out.push_str(&format!(
        "  patched rebuild             {:>8.1} s   {:.1}% of cold (target <= 25%)  {}\n    ({})\n",
        b.patched,
        b.patched / cold * 100.0,
        if b.patched <= cold * 0.25 {
            "ok"
        } else {
            "MISSED"
        },
        b.patched_title
    ));
    out
}
