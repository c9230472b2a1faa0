//! `mmci bench`: each benchmark's options, the measurement (in
//! `crate::bench`) and its rendering; 1 when guests of a benchmark failed.

use std::path::PathBuf;

use clap::Subcommand;

use super::kernel::KernelArgs;
use crate::arch::Arch;
use crate::error::{exit, AppError};
use crate::host::paths::WorkDir;
use crate::kernel;
use crate::run::accel::{self, AccelRequest};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Assemble every thread of a corpus of lore t.mbox.gz files (gunzip,
    /// parse, thread, choose) end to end; median of --rounds. Then the
    /// hostile shapes (a 10,000-mail reroll chain, 100,000 unthreaded
    /// patches, 20,000 singles), once each.
    Series {
        /// Directory of *.t.mbox.gz [default: the test corpus,
        /// orchestrator/tests/fixtures/lore-threads].
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// Rounds over the corpus; the median is reported.
        #[arg(long, default_value_t = 11)]
        rounds: usize,
        /// Write the hostile shapes to DIR/<name>.mbox (for `mmci series
        /// show` under a profiler) instead of benchmarking.
        #[arg(long, value_name = "DIR")]
        write_shapes: Option<PathBuf>,
    },
    /// Cold kernel build, cache hit and patched rebuild (one patch to
    /// mm/vmscan.c) side by side, against plain make. Takes two cold builds.
    Build {
        /// Architecture of the kernel built.
        #[arg(long, default_value = "x86_64")]
        arch: Arch,
        /// Kernel tree tarball built by both sides.
        #[arg(long, default_value = crate::kernel::tree::BUNDLED_TARBALL)]
        tarball: PathBuf,
        /// make -j [default: number of CPUs]
        #[arg(long)]
        jobs: Option<usize>,
        /// Cold builds per side, interleaved plain/mmci, mmci/plain, ...
        #[arg(long, default_value_t = 2)]
        rounds: usize,
    },
    /// Parse, expand and validate a synthetic matrix of --cells cells.
    Matrix {
        /// Cells of the synthetic matrix.
        #[arg(long, default_value_t = 10_000)]
        cells: usize,
        /// Rounds; the median is reported.
        #[arg(long, default_value_t = 7)]
        rounds: usize,
    },
    /// Analyse --runs synthetic runs (base and patched, 5 repeats a cell)
    /// and render them, against the 1 s target.
    Analysis {
        /// Synthetic runs analysed.
        #[arg(long, default_value_t = 10_000)]
        runs: usize,
        /// Rounds; the median is reported.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// Run --guests one-vCPU smoke guests through the scheduler on
    /// --vcpus of capacity and compare the wall time with perfect packing.
    Schedule {
        /// One-vCPU smoke guests scheduled.
        #[arg(long, default_value_t = 8)]
        guests: usize,
        /// Guest vCPUs at once [default: host cores].
        #[arg(long)]
        vcpus: Option<u32>,
        /// Each guest's workload duration in seconds.
        #[arg(long, default_value_t = 5)]
        duration_s: u64,
        /// Guest accelerator: auto, kvm or tcg (as `mmci run --accel`).
        #[arg(long, value_enum, default_value = "auto")]
        accel: AccelRequest,
    },
    /// Time from QEMU spawn to the first guest record, host overhead per run,
    /// initramfs build time, guest-init size.
    Boot {
        #[command(flatten)]
        kernel: Box<KernelArgs>,
        /// Guests booted; medians are reported.
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// Guest accelerator: auto, kvm or tcg (as `mmci run --accel`).
        #[arg(long, value_enum, default_value = "auto")]
        accel: AccelRequest,
    },
}

/// `mmci bench ...`.
pub async fn bench(command: BenchCommand, work: &WorkDir) -> Result<i32, AppError> {
    match command {
        BenchCommand::Analysis { runs, rounds } => {
            let b = crate::bench::analysis::analysis(runs, rounds);
            print!("{}", crate::bench::analysis::render(&b));
            Ok(exit::OK)
        }
        BenchCommand::Series {
            write_shapes: Some(out),
            ..
        } => {
            let err = |e: std::io::Error| {
                AppError::BadOption(format!("--write-shapes {}: {e}", out.display()))
            };
            std::fs::create_dir_all(&out).map_err(err)?;
            for s in crate::bench::series::shapes() {
                let path = out.join(format!("{}.mbox", s.name));
                std::fs::write(&path, &s.mbox).map_err(err)?;
                println!("{} ({} bytes): {}", path.display(), s.mbox.len(), s.what);
            }
            Ok(exit::OK)
        }
        BenchCommand::Series { corpus, rounds, .. } => {
            let dir = corpus.unwrap_or_else(|| {
                PathBuf::from(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/lore-threads"
                ))
            });
            let b = crate::bench::series::run(&dir, rounds)
                .map_err(|e| AppError::BadOption(format!("--corpus {}: {e}", dir.display())))?;
            print!("{}", crate::bench::series::render(&b));
            let shapes = crate::bench::series::run_shapes(&crate::bench::series::shapes());
            print!("{}", crate::bench::series::render_shapes(&shapes));
            Ok(exit::OK)
        }
        BenchCommand::Matrix { cells, rounds } => {
            let b = crate::bench::matrix::expansion(cells, rounds)?;
            print!("{}", crate::bench::matrix::render_expansion(&b));
            Ok(exit::OK)
        }
        BenchCommand::Schedule {
            guests,
            vcpus,
            duration_s,
            accel,
        } => {
            let cores = crate::host::facts::cores().unwrap_or(1) as u32;
            let b = crate::bench::matrix::packing(
                work,
                guests,
                vcpus.unwrap_or(cores),
                accel,
                duration_s,
            )
            .await?;
            print!("{}", crate::bench::matrix::render_packing(&b));
            Ok(if b.failures.is_empty() {
                exit::OK
            } else {
                exit::RUN_FAILED
            })
        }
        BenchCommand::Build {
            arch,
            tarball,
            jobs,
            rounds,
        } => {
            let jobs = jobs.unwrap_or_else(|| crate::host::facts::cores().unwrap_or(2));
            let b = crate::bench::boot::build(
                arch,
                work,
                &tarball,
                jobs,
                rounds,
                super::kernel::ccache_wanted(&super::env_var),
            )
            .await?;
            print!("{}", crate::bench::boot::render_build(&b, arch));
            Ok(exit::OK)
        }
        BenchCommand::Boot {
            kernel: k,
            runs,
            accel,
        } => {
            let arch = k.arch.unwrap_or_default();
            let guest_init = crate::pipeline::guest_prerequisites(arch)?;
            let results = work.scratch().join("bench-boot");
            let info = kernel::prepare(&k.source()?, arch, work).await?;
            let choice = accel::choose(accel, arch, &info, guest_init, &work.scratch()).await;
            let b = crate::bench::boot::boot(
                runs,
                arch,
                &info,
                guest_init,
                &choice,
                &results,
                &work.scratch(),
            )
            .await
            .map_err(AppError::Run)?;
            print!("{}", crate::bench::boot::render(&b, &choice));
            let _ = std::fs::remove_dir_all(&results);
            Ok(if b.failures.is_empty() {
                exit::OK
            } else {
                exit::RUN_FAILED
            })
        }
    }
}
