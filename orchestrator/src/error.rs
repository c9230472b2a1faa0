//! Exit codes and the error of a whole command: every stage's error mapped
//! to the documented exit code (docs/commands.md, "Exit codes").

use crate::arch::Arch;
use crate::kernel::KernelError;
use crate::matrix::MatrixError;
use crate::run::executor::{MatrixOutcome, MatrixRunError};
use crate::run::guest::RunError;
use crate::run::outcome::Outcome;

/// Documented exit codes (docs/commands.md, "Exit codes").
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
    /// `mmci analyse`: the verdict is inconclusive (too few runs, timing
    /// metrics under TCG, runs without a result).
    pub const INCONCLUSIVE: i32 = 8;
    /// Posting failed: GitHub or the SMTP server refused or could not be
    /// reached (the results dir is untouched; post again).
    pub const POST: i32 = 9;
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
    #[error("{0} not found on PATH: install QEMU with ./mmci-setup")]
    MissingQemu(String),
    #[error("this mmci was built without guest-init for {arch}: run `rustup target add {triple}` and rebuild")]
    MissingGuestInit { arch: Arch, triple: &'static str },
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error(transparent)]
    MatrixRun(#[from] MatrixRunError),
    #[error(transparent)]
    ResultsDir(#[from] crate::results::dir::ResultsDirError),
    #[error(transparent)]
    Analysis(#[from] crate::analysis::AnalysisError),
    #[error(transparent)]
    Post(#[from] crate::post::PostError),
    #[error(transparent)]
    Watch(#[from] crate::watch::WatchError),
    #[error(transparent)]
    Image(#[from] crate::guest::image::ImageError),
}

impl AppError {
    pub fn exit_code(&self) -> i32 {
        use crate::results::dir::ResultsDirError;
        match self {
            AppError::BadOption(_)
            | AppError::BadParam { .. }
            | AppError::ResultsDir(_)
            | AppError::Analysis(_)
            | AppError::Matrix(_) => exit::USAGE,
            AppError::MissingQemu(_) | AppError::MissingGuestInit { .. } => exit::ENVIRONMENT,
            AppError::Kernel(e) => kernel_exit_code(e),
            AppError::Run(RunError::Vm(crate::guest::vm::VmError::MissingQemu(_))) => {
                exit::ENVIRONMENT
            }
            AppError::Run(_) => exit::INFRA,
            AppError::MatrixRun(MatrixRunError::ResultsDir(ResultsDirError::Io { .. })) => {
                exit::USAGE
            }
            AppError::MatrixRun(MatrixRunError::ResultsDir(_)) => exit::USAGE,
            AppError::MatrixRun(
                MatrixRunError::MissingQemu(_) | MatrixRunError::MissingGuestInit { .. },
            ) => exit::ENVIRONMENT,
            // The results or work dir could not be written (full, read-only):
            // this machine's, not QEMU's.
            AppError::MatrixRun(MatrixRunError::Run {
                source: RunError::Io { .. },
                ..
            }) => exit::ENVIRONMENT,
            AppError::MatrixRun(MatrixRunError::Run { .. }) => exit::INFRA,
            AppError::MatrixRun(MatrixRunError::Image { source, .. }) => image_exit_code(source),
            AppError::Post(e) if e.is_remote() => exit::POST,
            AppError::Post(_) => exit::USAGE,
            AppError::Watch(crate::watch::WatchError::Fetch(_)) => exit::FETCH,
            AppError::Watch(crate::watch::WatchError::Patchwork(e)) if e.is_remote() => exit::FETCH,
            AppError::Watch(e) if e.is_remote() => exit::POST,
            AppError::Watch(_) => exit::USAGE,
            AppError::Image(e) => image_exit_code(e),
        }
    }
}

/// Exit code for a guest image that could not be built or found.
pub fn image_exit_code(e: &crate::guest::image::ImageError) -> i32 {
    use crate::guest::image::ImageError as E;
    match e {
        E::Recipe(_) | E::MissingPackage { .. } | E::NotBuilt { .. } => exit::USAGE,
        E::MissingTool { .. } | E::NotRoot => exit::ENVIRONMENT,
        E::Apt { .. } => exit::FETCH,
        E::Command { .. } | E::Io(..) => exit::BUILD,
    }
}

/// The exit code of `mmci analyse`: the verdict's.
pub fn verdict_exit_code(s: crate::analysis::Status) -> i32 {
    match s {
        crate::analysis::Status::Pass => exit::OK,
        crate::analysis::Status::Fail => exit::RUN_FAILED,
        crate::analysis::Status::Inconclusive => exit::INCONCLUSIVE,
    }
}

/// Exit code for a kernel that could not be prepared.
pub fn kernel_exit_code(e: &KernelError) -> i32 {
    use crate::kernel::build::BuildError;
    use crate::kernel::series::SeriesError;
    use crate::kernel::tree::TreeError;
    match e {
        KernelError::MissingImage(_) | KernelError::Fragment { .. } => exit::USAGE,
        KernelError::Tree(TreeError::MissingTarball(_)) => exit::ENVIRONMENT,
        KernelError::Tree(TreeError::UnknownRef { .. }) => exit::USAGE,
        KernelError::Tree(TreeError::Fetch { .. }) => exit::FETCH,
        KernelError::Build(BuildError::MissingTool(_)) => exit::ENVIRONMENT,
        KernelError::Series(SeriesError::Fetch(_)) => exit::FETCH,
        KernelError::Series(SeriesError::Patchwork(e)) if e.is_remote() => exit::FETCH,
        KernelError::Build(BuildError::Apply(_)) => exit::DOES_NOT_APPLY,
        KernelError::Series(_) | KernelError::BaseRef { .. } => exit::USAGE,
        KernelError::Base(crate::kernel::series::base::BaseError::NoBase { .. }) => {
            exit::DOES_NOT_APPLY
        }
        KernelError::Base(_) => exit::BUILD,
        KernelError::Tree(_) | KernelError::Build(_) => exit::BUILD,
    }
}

/// The exit code of a finished matrix: a kernel failure's code first (its
/// runs did not happen), then infra failures, then any other run that did
/// not complete.
pub fn matrix_exit_code(o: &MatrixOutcome) -> i32 {
    if let Some(f) = o.kernel_failures.first() {
        return kernel_exit_code(&f.error);
    }
    let outcomes: Vec<Outcome> = o
        .runs
        .iter()
        .filter_map(|(_, r)| r.as_ref().map(|r| r.classification.outcome))
        .collect();
    if outcomes.contains(&Outcome::InfraFailure) {
        exit::INFRA
    } else if outcomes.iter().all(|o| *o == Outcome::Completed) && outcomes.len() == o.runs.len() {
        exit::OK
    } else {
        exit::RUN_FAILED
    }
}
