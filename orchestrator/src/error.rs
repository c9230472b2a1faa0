//! Exit codes and the error of a whole command: every stage's error mapped
//! to the documented exit code. What each code means for the user is in
//! docs/commands.md, "Exit codes"; which error gets which code is this map
//! (checked, variant by variant, by the table test at the bottom):
//!
//! | error | code |
//! | --- | --- |
//! | `BadOption`, `BadParam`, `ResultsDir`, `Analysis`, `Matrix` | 2 usage |
//! | `Missing` (QEMU or guest-init) | 3 environment |
//! | `Kernel`: see [`kernel_exit_code`] | 2, 3, 4, 6 or 7 |
//! | `Kernel`: missing image, fragment, unknown ref, bad series, `--base-cascade` ref, a tree URL or ref git would misread | 2 usage |
//! | `Kernel`: missing tarball or build tool, no build sandbox | 3 environment |
//! | `Kernel`: tree or build failure, base check failure | 4 build |
//! | `Kernel`: the series applies nowhere (`git am`, or no base takes it) | 6 does not apply |
//! | `Kernel`: a tree or series fetch, a patchwork request | 7 fetch |
//! | `Run`: QEMU missing / any other | 3 environment / 5 infra |
//! | `MatrixRun`: results dir / QEMU or guest-init missing / a run's files not written (full or read-only disk) / any other run error / an image | 2 / 3 / 3 / 5 / as `Image` |
//! | `Post`: refused or unreachable service / anything else | 9 post / 2 usage |
//! | `Watch`: fetch or patchwork / GitHub refused or unreachable / else | 7 / 9 / 2 |
//! | `Image`: recipe, package, not built / tool, root / apt / build | 2 / 3 / 7 / 4 |
//!
//! A finished matrix's runs give [`matrix_exit_code`] (a kernel failure's
//! code, else 5 for an infra failure, 1 for any other incomplete run, 0);
//! `mmci analyse` exits with [`verdict_exit_code`] (0 PASS, 1 FAIL, 8
//! INCONCLUSIVE, 10 NO VERDICT), and `mmci run` with [`run_exit_code`]: the
//! runs' code when a kernel failed or QEMU did, else the verdict's, as
//! `analyse` would give it on the same dir. An interrupted command exits
//! with 130 (SIGINT) or 143 (SIGTERM).

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
    /// The analysis had nothing to judge (one kernel, too few runs, only
    /// timings under TCG): not a pass.
    pub const NO_VERDICT: i32 = 10;
    /// Interrupted (Ctrl-C, SIGINT): 128 + 2, as a shell reports it.
    pub const INTERRUPTED: i32 = 130;
    /// Terminated (SIGTERM: `timeout`, `kill`, a CI runner): 128 + 15.
    pub const TERMINATED: i32 = 143;
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
    #[error(transparent)]
    Missing(#[from] crate::guest::Missing),
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
        match self {
            AppError::BadOption(_)
            | AppError::BadParam { .. }
            | AppError::ResultsDir(_)
            | AppError::Analysis(_)
            | AppError::Matrix(_) => exit::USAGE,
            AppError::Missing(_) => exit::ENVIRONMENT,
            AppError::Kernel(e) => kernel_exit_code(e),
            AppError::Run(RunError::Vm(crate::guest::vm::VmError::Missing(_))) => exit::ENVIRONMENT,
            AppError::Run(_) => exit::INFRA,
            AppError::MatrixRun(MatrixRunError::ResultsDir(_)) => exit::USAGE,
            AppError::MatrixRun(MatrixRunError::Missing(_)) => exit::ENVIRONMENT,
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
        crate::analysis::Status::NoVerdict => exit::NO_VERDICT,
    }
}

/// The exit code of `mmci run`, from its runs' code ([`matrix_exit_code`])
/// and `verdict`: the code `mmci analyse` gives on the same results dir
/// (its verdict's, or its error's), `None` where the run has no verdict of
/// its own (one kernel; a shard, whose verdict is the merged dir's).
/// Precedence, first that applies (docs/commands.md, "Exit codes"):
/// 1. a kernel that could not be prepared (2, 3, 4, 6, 7): its runs never
///    happened, and the code says which step to fix;
/// 2. an infra failure after the retries (5): the host's, not a kernel's;
///    the same command resumes, and the verdict then has those runs;
/// 3. the verdict (0, 1, 8, 10), except that a PASS never hides a run
///    that did not complete (1), which the verdict already fails;
/// 4. without a verdict, the runs' code (0 or 1).
///
/// So `mmci run ... && echo ok` says ok on a PASS only, and a FAIL exits 1
/// as `mmci analyse` does (table-tested in tests/run_exit_codes.rs).
pub fn run_exit_code(runs: i32, verdict: Option<i32>) -> i32 {
    match verdict {
        _ if runs != exit::OK && runs != exit::RUN_FAILED => runs,
        Some(exit::OK) | None => runs,
        Some(v) => v,
    }
}

/// Exit code for a kernel that could not be prepared.
pub fn kernel_exit_code(e: &KernelError) -> i32 {
    use crate::kernel::build::BuildError;
    use crate::kernel::tree::TreeError;
    use crate::series::SeriesError;
    match e {
        KernelError::MissingImage(_) | KernelError::Fragment { .. } => exit::USAGE,
        KernelError::Tree(TreeError::MissingTarball(_)) => exit::ENVIRONMENT,
        KernelError::Tree(TreeError::UnknownRef { .. } | TreeError::BadSpec(_)) => exit::USAGE,
        KernelError::Build(BuildError::NoSandbox { .. }) => exit::ENVIRONMENT,
        KernelError::Tree(TreeError::Fetch { .. }) => exit::FETCH,
        KernelError::Build(BuildError::MissingTool(_)) => exit::ENVIRONMENT,
        KernelError::Series(SeriesError::Fetch(_)) => exit::FETCH,
        KernelError::Series(SeriesError::Patchwork(e)) if e.is_remote() => exit::FETCH,
        KernelError::Build(BuildError::Apply(_)) => exit::DOES_NOT_APPLY,
        KernelError::Series(_) | KernelError::BaseRef { .. } => exit::USAGE,
        KernelError::Base(crate::series::base::BaseError::NoBase { .. }) => exit::DOES_NOT_APPLY,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::guest::Missing;
    use std::path::PathBuf;

    fn io() -> std::io::Error {
        std::io::Error::other("x")
    }

    fn command() -> crate::host::process::CommandError {
        crate::host::process::CommandError::Spawn {
            what: "git".into(),
            source: io(),
        }
    }

    fn fetch() -> crate::series::fetch::FetchError {
        crate::series::fetch::FetchError::Status {
            url: "https://lore.example/x".into(),
            status: 404,
            hint: "",
        }
    }

    fn patchwork_status() -> crate::series::patchwork::PatchworkError {
        crate::series::patchwork::PatchworkError::Status {
            what: "series".into(),
            url: "https://pw.example".into(),
            status: 500,
            detail: String::new(),
            hint: "",
        }
    }

    fn github_api() -> crate::post::github::GitHubError {
        crate::post::github::GitHubError::Api {
            what: "check run".into(),
            status: 401,
            message: "Bad credentials".into(),
            hint: "",
        }
    }

    fn apply_failure() -> crate::kernel::apply::ApplyFailure {
        crate::kernel::apply::ApplyFailure {
            patch: Some(1),
            total: 1,
            title: None,
            places: vec![],
            detail: String::new(),
            missing_prerequisites: vec![],
        }
    }

    fn matrix_error() -> MatrixError {
        MatrixError {
            file: "m.yaml".into(),
            pos: String::new(),
            what: "bad".into(),
        }
    }

    fn results_dir() -> crate::results::dir::ResultsDirError {
        crate::results::dir::ResultsDirError::Write {
            path: "r".into(),
            option: "--results",
            source: io(),
        }
    }

    fn image_errors() -> Vec<(&'static str, crate::guest::image::ImageError, i32)> {
        use crate::guest::image::ImageError as E;
        vec![
            (
                "image recipe",
                E::Recipe(crate::guest::image::recipe::RecipeError {
                    file: "image.yaml".into(),
                    pos: String::new(),
                    what: "bad".into(),
                }),
                exit::USAGE,
            ),
            (
                "image package",
                E::MissingPackage {
                    recipe: "r".into(),
                    line: None,
                    package: "p".into(),
                    suite: "trixie".into(),
                },
                exit::USAGE,
            ),
            (
                "image not built",
                E::NotBuilt {
                    name: "tools".into(),
                    dir: "d".into(),
                },
                exit::USAGE,
            ),
            (
                "image tool",
                E::MissingTool {
                    tool: "mmdebstrap",
                    package: "mmdebstrap",
                },
                exit::ENVIRONMENT,
            ),
            ("image root", E::NotRoot, exit::ENVIRONMENT),
            (
                "image apt",
                E::Apt {
                    what: "apt".into(),
                    detail: String::new(),
                    log: "l".into(),
                },
                exit::FETCH,
            ),
            (
                "image build",
                E::Command {
                    what: "mmdebstrap".into(),
                    timed_out: true,
                    log: "l".into(),
                },
                exit::BUILD,
            ),
        ]
    }

    /// Every variant (and every distinction the map makes inside one) with
    /// the code the top comment and docs/commands.md give it.
    fn table() -> Vec<(&'static str, AppError, i32)> {
        use crate::guest::vm::VmError;
        use crate::kernel::build::BuildError;
        use crate::kernel::tree::TreeError;
        use crate::post::PostError;
        use crate::series::base::BaseError;
        use crate::series::SeriesError;
        use crate::watch::WatchError;
        let kernel = |e: KernelError| AppError::Kernel(e);
        let mut t = vec![
            ("bad option", AppError::BadOption("--x".into()), exit::USAGE),
            (
                "bad --set",
                AppError::BadParam {
                    given: "treads=1".into(),
                    source: mmci_record::ParamError::NotKeyValue("treads".into()),
                },
                exit::USAGE,
            ),
            (
                "missing qemu",
                AppError::Missing(Missing::Qemu("qemu-system-x86_64".into())),
                exit::ENVIRONMENT,
            ),
            (
                "missing guest-init",
                AppError::Missing(Missing::GuestInit {
                    arch: Arch::Arm64,
                    triple: "aarch64-unknown-linux-musl",
                }),
                exit::ENVIRONMENT,
            ),
            (
                "missing image",
                kernel(KernelError::MissingImage("bzImage".into())),
                exit::USAGE,
            ),
            (
                "fragment",
                kernel(KernelError::Fragment {
                    path: "f.config".into(),
                    source: io(),
                }),
                exit::USAGE,
            ),
            (
                "missing tarball",
                kernel(TreeError::MissingTarball("t.tar.xz".into()).into()),
                exit::ENVIRONMENT,
            ),
            (
                "unknown ref",
                kernel(
                    TreeError::UnknownRef {
                        url: "u".into(),
                        git_ref: "r".into(),
                    }
                    .into(),
                ),
                exit::USAGE,
            ),
            (
                "tree fetch",
                kernel(
                    TreeError::Fetch {
                        url: "u".into(),
                        source: command(),
                    }
                    .into(),
                ),
                exit::FETCH,
            ),
            (
                "tree io",
                kernel(
                    TreeError::Io {
                        path: "p".into(),
                        source: io(),
                    }
                    .into(),
                ),
                exit::BUILD,
            ),
            (
                "build tool",
                kernel(BuildError::MissingTool("make".into()).into()),
                exit::ENVIRONMENT,
            ),
            (
                "no build sandbox",
                kernel(
                    BuildError::NoSandbox {
                        what: "series v1-0123abcd".into(),
                        why: "bwrap (bubblewrap) is not installed".into(),
                        fix: "install it with ./mmci-setup".into(),
                    }
                    .into(),
                ),
                exit::ENVIRONMENT,
            ),
            (
                "tree URL that is an option",
                kernel(
                    TreeError::BadSpec(crate::kernel::tree::BadSpec::UrlIsOption(
                        "--upload-pack=x".into(),
                    ))
                    .into(),
                ),
                exit::USAGE,
            ),
            (
                "build step",
                kernel(BuildError::Step(command()).into()),
                exit::BUILD,
            ),
            (
                "git am",
                kernel(BuildError::Apply(apply_failure()).into()),
                exit::DOES_NOT_APPLY,
            ),
            (
                "series fetch",
                kernel(SeriesError::Fetch(fetch()).into()),
                exit::FETCH,
            ),
            (
                "series from patchwork",
                kernel(SeriesError::Patchwork(patchwork_status()).into()),
                exit::FETCH,
            ),
            (
                "bad patchwork url",
                kernel(
                    SeriesError::Patchwork(crate::series::patchwork::PatchworkError::BadUrl {
                        option: "--patchwork",
                        url: "x".into(),
                    })
                    .into(),
                ),
                exit::USAGE,
            ),
            (
                "no patches",
                kernel(
                    SeriesError::NoPatches {
                        source_name: "s".into(),
                    }
                    .into(),
                ),
                exit::USAGE,
            ),
            (
                "base cascade ref",
                kernel(KernelError::BaseRef {
                    git_ref: "r".into(),
                    tree: "t".into(),
                }),
                exit::USAGE,
            ),
            (
                "no base",
                kernel(
                    BaseError::NoBase {
                        tried: vec![],
                        missing_prerequisites: vec![],
                    }
                    .into(),
                ),
                exit::DOES_NOT_APPLY,
            ),
            (
                "base check",
                kernel(
                    BaseError::Git {
                        repo: "r".into(),
                        source: io(),
                    }
                    .into(),
                ),
                exit::BUILD,
            ),
            (
                "run without qemu",
                AppError::Run(RunError::Vm(VmError::Missing(Missing::Qemu("qemu".into())))),
                exit::ENVIRONMENT,
            ),
            (
                "run",
                AppError::Run(RunError::Vm(VmError::MissingKernel("k".into()))),
                exit::INFRA,
            ),
            ("matrix", AppError::Matrix(matrix_error()), exit::USAGE),
            (
                "matrix results dir",
                AppError::MatrixRun(MatrixRunError::ResultsDir(results_dir())),
                exit::USAGE,
            ),
            (
                "matrix without qemu",
                AppError::MatrixRun(MatrixRunError::Missing(Missing::Qemu("qemu".into()))),
                exit::ENVIRONMENT,
            ),
            (
                "matrix without guest-init",
                AppError::MatrixRun(MatrixRunError::Missing(Missing::GuestInit {
                    arch: Arch::Arm64,
                    triple: "t",
                })),
                exit::ENVIRONMENT,
            ),
            (
                "matrix run whose files could not be written",
                AppError::MatrixRun(MatrixRunError::Run {
                    slot: "s".into(),
                    source: RunError::Io {
                        path: "p".into(),
                        source: io(),
                    },
                }),
                exit::ENVIRONMENT,
            ),
            (
                "matrix run",
                AppError::MatrixRun(MatrixRunError::Run {
                    slot: "s".into(),
                    source: RunError::Vm(VmError::MissingKernel("k".into())),
                }),
                exit::INFRA,
            ),
            (
                "results dir",
                AppError::ResultsDir(results_dir()),
                exit::USAGE,
            ),
            (
                "analysis",
                AppError::Analysis(crate::analysis::AnalysisError::NotResultsDir("d".into())),
                exit::USAGE,
            ),
            (
                "post refused",
                AppError::Post(PostError::GitHub(github_api())),
                exit::POST,
            ),
            (
                "post unreachable",
                AppError::Post(PostError::GitHub(
                    crate::post::github::GitHubError::Transport {
                        what: "w".into(),
                        message: "m".into(),
                    },
                )),
                exit::POST,
            ),
            (
                "post bad input",
                AppError::Post(PostError::EmptyBody(PathBuf::from("b.md"))),
                exit::USAGE,
            ),
            (
                "post no credentials",
                AppError::Post(PostError::GitHub(crate::post::github::GitHubError::NoSha)),
                exit::USAGE,
            ),
            (
                "watch fetch",
                AppError::Watch(WatchError::Fetch(fetch())),
                exit::FETCH,
            ),
            (
                "watch patchwork",
                AppError::Watch(WatchError::Patchwork(patchwork_status())),
                exit::FETCH,
            ),
            (
                "watch dispatch",
                AppError::Watch(WatchError::GitHub(github_api())),
                exit::POST,
            ),
            (
                "watch bad feed",
                AppError::Watch(WatchError::BadFeed {
                    url: "u".into(),
                    why: "w".into(),
                }),
                exit::USAGE,
            ),
        ];
        for (what, e, code) in image_errors() {
            t.push((what, AppError::Image(e), code));
        }
        for (what, e, code) in image_errors() {
            t.push((
                what,
                AppError::MatrixRun(MatrixRunError::Image {
                    script: "s".into(),
                    source: e,
                }),
                code,
            ));
        }
        t
    }

    #[test]
    fn every_error_exits_with_its_documented_code() {
        let wrong: Vec<String> = table()
            .iter()
            .filter(|(_, e, code)| e.exit_code() != *code)
            .map(|(what, e, code)| format!("{what}: {} instead of {code}", e.exit_code()))
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// A kernel that applies nowhere (exit 6) is kept in a results dir as
    /// such ([`crate::kernel::FailedStep::Apply`]), and nothing else is; a
    /// make step failed after the series applied.
    #[test]
    fn kernel_failures_name_their_step() {
        use crate::kernel::FailedStep;
        let mut steps = vec![];
        for (what, e, code) in table() {
            let AppError::Kernel(k) = &e else { continue };
            let step = k.failed_step();
            assert_eq!(
                step == Some(FailedStep::Apply),
                code == exit::DOES_NOT_APPLY,
                "{what}: {step:?}"
            );
            steps.push((what, step));
        }
        assert!(steps.contains(&("build step", Some(FailedStep::Build))));
        assert!(steps.contains(&("git am", Some(FailedStep::Apply))));
        assert!(steps.contains(&("series fetch", None)));
    }

    #[test]
    fn the_table_has_every_variant() {
        // A new variant fails to compile here until it has a row above.
        let seen: std::collections::BTreeSet<&str> = table()
            .iter()
            .map(|(_, e, _)| match e {
                AppError::BadOption(_) => "BadOption",
                AppError::BadParam { .. } => "BadParam",
                AppError::Missing(_) => "Missing",
                AppError::Kernel(_) => "Kernel",
                AppError::Run(_) => "Run",
                AppError::Matrix(_) => "Matrix",
                AppError::MatrixRun(_) => "MatrixRun",
                AppError::ResultsDir(_) => "ResultsDir",
                AppError::Analysis(_) => "Analysis",
                AppError::Post(_) => "Post",
                AppError::Watch(_) => "Watch",
                AppError::Image(_) => "Image",
            })
            .collect();
        assert_eq!(seen.len(), 12, "{seen:?}");
    }

    #[test]
    fn the_docs_list_every_exit_code_and_no_other() {
        let docs = include_str!("../../docs/commands.md");
        let section = &docs[docs.find("### Exit codes").expect("the section")..];
        // The heading, a blank line, the table.
        let table = section
            .split("\n\n")
            .nth(1)
            .expect("the table follows the heading");
        let documented: Vec<i32> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| "))
            .filter_map(|l| l.split(' ').next()?.parse().ok())
            .collect();
        let defined = [
            exit::OK,
            exit::RUN_FAILED,
            exit::USAGE,
            exit::ENVIRONMENT,
            exit::BUILD,
            exit::INFRA,
            exit::DOES_NOT_APPLY,
            exit::FETCH,
            exit::INCONCLUSIVE,
            exit::POST,
            exit::NO_VERDICT,
            exit::INTERRUPTED,
            exit::TERMINATED,
        ];
        assert_eq!(documented, defined);
    }

    #[test]
    fn verdicts_exit_with_their_codes() {
        use crate::analysis::Status;
        for (s, code) in [
            (Status::Pass, exit::OK),
            (Status::Fail, exit::RUN_FAILED),
            (Status::Inconclusive, exit::INCONCLUSIVE),
            (Status::NoVerdict, exit::NO_VERDICT),
        ] {
            assert_eq!(verdict_exit_code(s), code, "{s:?}");
        }
    }
}
