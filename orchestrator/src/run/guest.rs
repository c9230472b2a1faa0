//! One guest run from start to result: initramfs, scratch disks, QEMU,
//! classification, metrics, and the run's files in the results dir. Infra
//! failures are retried; every other outcome is a result.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mmci_record::{GuestJob, Record, IMAGE_DISK_SERIAL, SWAP_DISK_SERIAL};

use crate::arch::Arch;
use crate::guest::initramfs;
use crate::guest::vm::{self, Accel, Disk, VmRun, VmSpec};
use crate::results::{self, KernelInfo, RunResult, Timing};
use crate::run::outcome::{self, Classification, Outcome};
use crate::scenario::registry;

/// Everything one guest run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub id: String,
    pub arch: Arch,
    pub accel: Accel,
    pub accel_note: String,
    pub vcpus: u32,
    pub memory_mb: u64,
    /// Size of the swap disk; 0 gives the guest no swap disk.
    pub swap_mb: u64,
    pub kernel: KernelInfo,
    pub guest_init: Vec<u8>,
    pub job: GuestJob,
    /// Words added to the kernel command line.
    pub extra_cmdline: Vec<String>,
    pub timeout: Duration,
    /// Extra attempts after an infra failure.
    pub retries: u32,
    /// Scenario script: the built image, attached read-only.
    pub image: Option<AttachedImage>,
}

/// A built guest image given to a run.
#[derive(Clone, Debug)]
pub struct AttachedImage {
    pub path: PathBuf,
    pub manifest: crate::guest::image::ImageManifest,
}

/// A timeout that leaves room for a slow (TCG) boot and a slowed-down
/// workload: the scenario's.
pub fn default_timeout(job: &GuestJob) -> Duration {
    (registry::of(job.scenario).timeout)(job)
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Vm(#[from] vm::VmError),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates a sparse file of `mb` MiB.
fn sparse_file(path: &Path, mb: u64) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    f.set_len(mb << 20)
}

fn exit_text(run: &VmRun) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    run.exit.map(|s| match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => s.to_string(),
    })
}

/// file:line in the call traces of `splats` and of the crash report, when
/// the kernel was built with debug info (see [`crate::kernel::decode`]).
/// A trace that cannot be decoded stays as the console had it: the run's
/// result does not depend on it.
async fn decode_traces(
    cfg: &RunConfig,
    scratch: &Path,
    splats: &mut [crate::results::splat::Splat],
    classification: &mut outcome::Classification,
) {
    if splats.is_empty() && classification.crash_report.is_none() {
        return;
    }
    let Some(decoder) = crate::kernel::decode::Decoder::for_image(&cfg.kernel.image, cfg.arch)
    else {
        return;
    };
    let texts = splats
        .iter_mut()
        .map(|s| &mut s.excerpt)
        .chain(classification.crash_report.as_mut());
    for text in texts {
        match decoder.decode(text, scratch).await {
            Ok(decoded) => *text = decoded,
            Err(e) => {
                tracing::warn!(run = %cfg.id, error = %crate::host::error_chain(&e), "call trace not decoded")
            }
        }
    }
}

/// Runs one guest (retrying infra failures) and writes its results to
/// `out_dir`: run.json, records.jsonl, console.log, qemu-stderr.log.
pub async fn run_guest(
    cfg: &RunConfig,
    out_dir: &Path,
    scratch: &Path,
) -> Result<RunResult, RunError> {
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    std::fs::create_dir_all(out_dir).map_err(io_err(out_dir))?;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (run, timing) = attempt(cfg, out_dir, scratch).await?;
        let mut classification = outcome::classify(&run);
        if classification.outcome.retryable() && attempts <= cfg.retries {
            tracing::warn!(run = %cfg.id, reason = %classification.reason, "infra failure, retrying");
            continue;
        }
        let records: Vec<Record> = run.records.iter().map(|r| r.record.clone()).collect();
        if let Some(why) = outcome::job_echo_mismatch(&cfg.job, &records) {
            if matches!(
                classification.outcome,
                Outcome::Completed | Outcome::NotReproduced | Outcome::CheckFailed
            ) {
                classification = Classification {
                    outcome: Outcome::GuestError,
                    reason: why,
                    crash_report: None,
                };
            }
        }
        let kernel = KernelInfo {
            release: records
                .iter()
                .find_map(|r| match r {
                    Record::Hello { kernel_release, .. } => Some(kernel_release.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| cfg.kernel.release.clone()),
            ..cfg.kernel.clone()
        };
        let def = registry::of(cfg.job.scenario);
        let metrics = (def.metrics)(&cfg.job, &records);
        let mut splats = crate::results::splat::detect(&run.console);
        decode_traces(cfg, scratch, &mut splats, &mut classification).await;
        let result = RunResult {
            format: results::RESULT_FORMAT,
            mmci_version: env!("CARGO_PKG_VERSION").to_string(),
            id: cfg.id.clone(),
            started_unix,
            classification,
            accel: cfg.accel,
            accel_note: cfg.accel_note.clone(),
            arch: cfg.arch,
            vcpus: cfg.vcpus,
            memory_mb: cfg.memory_mb,
            swap_mb: cfg.swap_mb,
            kernel,
            job: cfg.job.clone(),
            attempts,
            qemu_exit: exit_text(&run),
            timed_out: run.timed_out,
            bad_lines: run.bad_lines.clone(),
            metrics,
            image: cfg.image.as_ref().map(|i| i.manifest.clone()),
            splats,
            timing,
        };
        let mut jsonl = String::new();
        for r in &run.records {
            jsonl.push_str(&serde_json::to_string(r).expect("serializable"));
            jsonl.push('\n');
        }
        let records_path = out_dir.join("records.jsonl");
        crate::host::fs::write_atomic(&records_path, jsonl.as_bytes())
            .map_err(io_err(&records_path))?;
        for (name, text) in (def.files)(&records) {
            let path = out_dir.join(name);
            crate::host::fs::write_atomic(&path, text.as_bytes()).map_err(io_err(&path))?;
        }
        results::write_run(out_dir, &result).map_err(io_err(out_dir))?;
        return Ok(result);
    }
}

async fn attempt(
    cfg: &RunConfig,
    out_dir: &Path,
    scratch_root: &Path,
) -> Result<(VmRun, Timing), RunError> {
    let t0 = Instant::now();
    let scratch = scratch_root.join(format!("{}-{}", cfg.id, std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(io_err(&scratch))?;
    // Removed when this attempt ends in any way, Ctrl-C included: then the
    // future is dropped (the task aborted) before `launch` returns.
    let _scratch_guard = crate::host::fs::RemoveDirOnDrop(scratch.clone());

    let t_image = Instant::now();
    let initrd = scratch.join("initrd.cpio");
    std::fs::write(&initrd, initramfs::initramfs(&cfg.guest_init, &cfg.job))
        .map_err(io_err(&initrd))?;
    let initramfs_ms = t_image.elapsed().as_secs_f64() * 1000.0;

    let mut disks = Vec::new();
    if cfg.swap_mb > 0 {
        let path = scratch.join("swap.img");
        sparse_file(&path, cfg.swap_mb).map_err(io_err(&path))?;
        disks.push(Disk {
            path,
            serial: SWAP_DISK_SERIAL.to_string(),
            readonly: false,
        });
    }
    for (serial, mb) in (registry::of(cfg.job.scenario).disks)(&cfg.job) {
        let path = scratch.join(format!("{serial}.img"));
        sparse_file(&path, mb).map_err(io_err(&path))?;
        disks.push(Disk {
            path,
            serial,
            readonly: false,
        });
    }
    if let Some(image) = &cfg.image {
        disks.push(Disk {
            path: image.path.clone(),
            serial: IMAGE_DISK_SERIAL.to_string(),
            readonly: true,
        });
    }
    let spec = VmSpec {
        arch: cfg.arch,
        accel: cfg.accel,
        vcpus: cfg.vcpus,
        memory_mb: cfg.memory_mb,
        kernel: cfg.kernel.image.clone(),
        initrd,
        cmdline: vm::kernel_cmdline(cfg.arch, &cfg.extra_cmdline),
        console_log: out_dir.join("console.log"),
        qemu_stderr: out_dir.join("qemu-stderr.log"),
        record_socket: scratch.join("records.sock"),
        disks,
    };
    let result = vm::launch(&spec, cfg.timeout).await;
    // The scratch disks can be large: never keep them, whatever happened.
    drop(_scratch_guard);
    let run = result?;
    let total_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let qemu_ms = run.lifetime.as_secs_f64() * 1000.0;
    let timing = Timing {
        initramfs_ms,
        qemu_ms,
        first_record_ms: run.first_record.map(|d| d.as_secs_f64() * 1000.0),
        host_overhead_ms: (total_ms - qemu_ms).max(0.0),
        total_ms,
    };
    Ok((run, timing))
}

/// Did the run produce statistics-grade data?
pub fn is_completed(result: &RunResult) -> bool {
    result.classification.outcome == Outcome::Completed
}
