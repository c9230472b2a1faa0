//! The `mmci run` pipeline: validate everything the user gave before any
//! work, then kernel -> accelerator -> guest run -> results on disk.

use std::path::PathBuf;
use std::time::Duration;

use mmci_record::GuestJob;

use crate::accel::{self, AccelChoice, AccelRequest};
use crate::arch::Arch;
use crate::guest_bin;
use crate::kernel::{self, KernelError, KernelSource};
use crate::paths::WorkDir;
use crate::results::{self, RunResult};
use crate::run::{self, RunConfig, RunError};

/// Documented exit codes (README "Exit codes").
pub mod exit {
    /// The run completed.
    pub const OK: i32 = 0;
    /// The run ended without completing (boot failure, crash, hang, guest error).
    pub const RUN_FAILED: i32 = 1;
    /// Bad input: options, parameters, paths given by the user.
    pub const USAGE: i32 = 2;
    /// Something this machine lacks (QEMU, the kernel tree, a Rust target).
    pub const ENVIRONMENT: i32 = 3;
    /// The kernel did not build (config check or make).
    pub const BUILD: i32 = 4;
    /// QEMU or the accelerator failed, also after retries.
    pub const INFRA: i32 = 5;
    /// A series could not be fetched (lore, GitHub).
    pub const FETCH: i32 = 7;
    /// The patch series does not apply to its base.
    pub const DOES_NOT_APPLY: i32 = 6;
    /// Interrupted (Ctrl-C).
    pub const INTERRUPTED: i32 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    BadOption(String),
    #[error("--set {given}: {source}")]
    BadParam {
        given: String,
        #[source]
        source: mmci_record::ParamError,
    },
    #[error("results dir {path} is not writable: choose another with --results")]
    ResultsDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} not found on PATH: install QEMU with ./mmci-setup")]
    MissingQemu(String),
    #[error("this mmci was built without guest-init for {arch}: run `rustup target add {triple}` and rebuild")]
    MissingGuestInit { arch: Arch, triple: &'static str },
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Run(#[from] RunError),
}

impl AppError {
    pub fn exit_code(&self) -> i32 {
        use crate::build::BuildError;
        use crate::tree::TreeError;
        match self {
            AppError::BadOption(_) | AppError::BadParam { .. } | AppError::ResultsDir { .. } => {
                exit::USAGE
            }
            AppError::MissingQemu(_) | AppError::MissingGuestInit { .. } => exit::ENVIRONMENT,
            AppError::Kernel(KernelError::MissingImage(_) | KernelError::Fragment { .. }) => {
                exit::USAGE
            }
            AppError::Kernel(KernelError::Tree(TreeError::MissingTarball(_))) => exit::ENVIRONMENT,
            AppError::Kernel(KernelError::Tree(TreeError::UnknownRef { .. })) => exit::USAGE,
            AppError::Kernel(KernelError::Tree(TreeError::Fetch { .. })) => exit::FETCH,
            AppError::Kernel(KernelError::Build(BuildError::MissingTool(_))) => exit::ENVIRONMENT,
            AppError::Kernel(_) => exit::BUILD,
            AppError::Run(RunError::Vm(crate::vm::VmError::MissingQemu(_))) => exit::ENVIRONMENT,
            AppError::Run(_) => exit::INFRA,
        }
    }
}

/// Options of `mmci run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub work: WorkDir,
    pub results: PathBuf,
    pub arch: Arch,
    pub kernel: KernelSource,
    pub vcpus: u32,
    pub memory_mb: u64,
    pub swap_mb: u64,
    /// `key=value` job parameters.
    pub sets: Vec<String>,
    pub accel: AccelRequest,
    pub timeout: Option<Duration>,
    pub retries: u32,
}

/// The job from defaults plus `--set`s.
pub fn job_from_sets(sets: &[String]) -> Result<GuestJob, AppError> {
    let mut job = GuestJob::default();
    for s in sets {
        job.set_pair(s).map_err(|source| AppError::BadParam {
            given: s.clone(),
            source,
        })?;
    }
    Ok(job)
}

/// Checks that need no work: parameters, results dir, QEMU, guest-init.
pub fn preflight(opts: &RunOptions) -> Result<(GuestJob, &'static [u8]), AppError> {
    let job = job_from_sets(&opts.sets)?;
    results::prepare_dir(&opts.results).map_err(|source| AppError::ResultsDir {
        path: opts.results.clone(),
        source,
    })?;
    let qemu = opts.arch.qemu_binary();
    if kernel::on_path(qemu).is_none() {
        return Err(AppError::MissingQemu(qemu.to_string()));
    }
    let guest_init = guest_bin::guest_init(opts.arch).ok_or(AppError::MissingGuestInit {
        arch: opts.arch,
        triple: guest_bin::guest_triple(opts.arch),
    })?;
    Ok((job, guest_init))
}

/// `mmci run`: one guest of scenario A on the chosen kernel.
pub async fn run(opts: &RunOptions) -> Result<(RunResult, AccelChoice), AppError> {
    let (job, guest_init) = preflight(opts)?;
    tracing::info!("preparing the kernel (cached builds are reused)");
    let kernel = kernel::prepare(&opts.kernel, opts.arch, &opts.work).await?;
    tracing::info!(image = %kernel.image.display(), release = %kernel.release, "kernel ready");
    let scratch = opts.work.scratch();
    let choice = accel::choose(opts.accel, opts.arch, &kernel, guest_init, &scratch).await;
    tracing::info!(accel = %choice.accel, note = %choice.note, "accelerator");
    let id = format!("{}-{}-0", opts.arch, job.scenario);
    let cfg = RunConfig {
        id: id.clone(),
        arch: opts.arch,
        accel: choice.accel,
        accel_note: choice.note.clone(),
        vcpus: opts.vcpus,
        memory_mb: opts.memory_mb,
        swap_mb: if job.swap { opts.swap_mb } else { 0 },
        kernel,
        guest_init: guest_init.to_vec(),
        timeout: opts.timeout.unwrap_or_else(|| run::default_timeout(&job)),
        job,
        extra_cmdline: vec![],
        retries: opts.retries,
    };
    tracing::info!(run = %id, timeout_s = cfg.timeout.as_secs(), "booting the guest");
    let result = run::run_guest(&cfg, &opts.results.join(&id), &scratch).await?;
    Ok((result, choice))
}
