//! The command line: clap's argument types, one file per subcommand group,
//! each translating its arguments into the request of the stage that does
//! the work, and [`execute`], which runs one parsed command and returns its
//! exit code (see [`crate::error`]). Environment variables the commands
//! read ($GITHUB_*, $MMCI_*) are read here, not in the stages. The binary
//! only parses, installs signal handling and calls [`execute`].
//!
//! - `kernel`: the kernel and series options, `kernel build`, `series show`.
//! - `run`: `run` (into a [`crate::run::request::RunRequest`]), `matrix show`.
//! - `results`: `merge`, `analyse`, `report` and the analysis options.
//! - `machine`: `image`, `doctor`.
//! - `bench`: `bench`.
//! - `watch`: `watch`.
//! - `post`: `post github`, `post email`, `post patchwork`.

pub mod bench;
pub mod kernel;
pub mod machine;
pub mod post;
pub mod results;
pub mod run;
pub mod series_args;
pub mod watch;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::error::AppError;
use crate::host::paths::WorkDir;

#[derive(Parser)]
#[command(
    name = "mmci",
    version,
    about = "Kernel CI for Linux memory-management patches"
)]
pub struct Cli {
    /// Cache directory for kernel trees and builds [default: $MMCI_WORK_DIR or ~/.cache/mmci]
    #[arg(long, global = true)]
    pub work_dir: Option<PathBuf>,
    /// More log output (-v: debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Patch series: what would be applied, without building.
    Series {
        #[command(subcommand)]
        command: kernel::SeriesCommand,
    },
    /// Run a matrix: build the kernels (cached), boot every cell under QEMU
    /// for every kernel and repeat, and print the runs. Without --matrix:
    /// the embedded matrix/default.yaml (scenario A, bundled series vs base).
    Run(run::RunArgs),
    /// Matrix files.
    Matrix {
        #[command(subcommand)]
        command: run::MatrixCommand,
    },
    /// Join the results dirs of shards of one matrix into one.
    Merge {
        /// The merged results dir.
        #[arg(long)]
        into: PathBuf,
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Compare each candidate kernel with the baseline in a results dir:
    /// per cell and metric the statistics, the matrix's expectations, the
    /// verdict. Exit 0: pass, 1: fail, 8: inconclusive.
    Analyse(results::AnalyseArgs),
    /// Render the comparison of a results dir as GitHub markdown, a
    /// plain-text email for the patch thread, a self-contained HTML page or
    /// JSON. Exit 0 when the report was written, whatever the verdict.
    Report(results::ReportArgs),
    /// Guest images (images/<name>/image.yaml): Debian userspace for the
    /// script scenario, built with mmdebstrap into read-only erofs files.
    Image {
        #[command(subcommand)]
        command: machine::ImageCommand,
    },
    /// Kernel trees and builds.
    Kernel {
        #[command(subcommand)]
        command: kernel::KernelCommand,
    },
    /// Say what this machine has and lacks, and which accelerator works.
    Doctor {
        /// Also boot a probe guest under KVM (builds the kernel if needed).
        #[arg(long)]
        probe: bool,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Follow a mailing list for new patch series touching mm/ and run each
    /// once, here (--run) or by a repository_dispatch to GitHub (--dispatch).
    Watch(Box<watch::WatchArgs>),
    /// Post a rendered report: GitHub check run and sticky comment, or an
    /// email reply on the patch thread.
    Post {
        #[command(subcommand)]
        command: post::PostCommand,
    },
}

/// Runs one parsed command; its exit code, or the error whose code it is.
pub async fn execute(cli: Cli) -> Result<i32, AppError> {
    let work = WorkDir::resolve(cli.work_dir.as_deref());
    match cli.command {
        Command::Series { command } => kernel::series(command, &work).await,
        Command::Run(a) => run::run(a, work).await,
        Command::Matrix { command } => run::matrix(command),
        Command::Merge { into, dirs } => results::merge(&into, &dirs),
        Command::Analyse(a) => results::analyse(&a),
        Command::Report(a) => results::report(a),
        Command::Image { command } => machine::image(command, &work).await,
        Command::Kernel { command } => kernel::kernel(command, &work).await,
        Command::Doctor { probe } => machine::doctor(probe, &work).await,
        Command::Bench { command } => bench::bench(command, &work).await,
        Command::Watch(a) => watch::watch(&a, &work).await,
        Command::Post { command } => post::post(command).await,
    }
}

/// Log output on stderr: `info` (-v: `debug`, -vv: `trace`), or $MMCI_LOG.
pub fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MMCI_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("mmci={level}")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

/// The environment as the commands read it: a variable's value, if set.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A variable's value when it is set and not blank.
pub(crate) fn nonempty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// How a command reaches GitHub (`post github`, `watch --dispatch`): the
/// API and where the token is.
#[derive(clap::Args, Clone, Debug)]
pub struct GitHubAccess {
    /// GitHub API base URL [default: $GITHUB_API_URL, else https://api.github.com].
    #[arg(long)]
    pub api: Option<String>,
    /// Environment variable holding the token.
    #[arg(long, default_value = "GITHUB_TOKEN")]
    pub token_env: String,
    /// File holding the token (instead of the environment).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
}

impl GitHubAccess {
    /// The checked API base URL (see [`github_api`]).
    pub(crate) fn api(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, crate::post::github::GitHubError> {
        github_api(self.api.as_deref(), env)
    }

    /// Token authentication (a GitHub App's options are `post github`'s).
    pub(crate) fn auth(&self) -> crate::post::github::AuthOptions {
        crate::post::github::AuthOptions {
            token_env: self.token_env.clone(),
            token_file: self.token_file.clone(),
            ..Default::default()
        }
    }
}

/// The GitHub API base URL: `--api`, else $GITHUB_API_URL (set in Actions),
/// else api.github.com; checked before any request.
pub(crate) fn github_api(
    given: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, crate::post::github::GitHubError> {
    let api = given
        .map(str::to_string)
        .or_else(|| nonempty(env("GITHUB_API_URL")))
        .unwrap_or_else(|| crate::series::fetch::GITHUB_API.to_string());
    crate::post::github::check_api(&api)?;
    Ok(api)
}

/// Patchwork's client limits with `--rate-limit-wait` seconds of 429 waits.
pub(crate) fn rate_limits(wait_s: u64) -> crate::series::patchwork::Limits {
    let wait = Duration::from_secs(wait_s);
    let d = crate::series::patchwork::Limits::default();
    crate::series::patchwork::Limits {
        max_rate_wait: wait,
        max_retry_after: d.max_retry_after.min(wait),
        ..d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment of `vars` only.
    pub(crate) fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    /// `--api`, the environment, and the API URL or an error.
    type Case<'a> = (
        Option<&'a str>,
        &'a [(&'a str, &'a str)],
        Result<&'a str, ()>,
    );

    #[test]
    fn the_github_api_is_the_option_then_the_environment_then_github() {
        let cases: &[Case] = &[
            (None, &[], Ok("https://api.github.com")),
            (
                None,
                &[("GITHUB_API_URL", "  ")],
                Ok("https://api.github.com"),
            ),
            (
                None,
                &[("GITHUB_API_URL", "https://ghe.example/api/v3")],
                Ok("https://ghe.example/api/v3"),
            ),
            (
                Some("http://127.0.0.1:9"),
                &[("GITHUB_API_URL", "https://ghe.example/api/v3")],
                Ok("http://127.0.0.1:9"),
            ),
            (Some("ftp://x"), &[], Err(())),
        ];
        for (given, vars, want) in cases {
            let got = github_api(*given, &env_of(vars)).map_err(|_| ());
            assert_eq!(got.as_deref(), want.as_deref(), "{given:?} {vars:?}");
        }
    }

    #[test]
    fn rate_limits_cap_both_waits() {
        let d = crate::series::patchwork::Limits::default();
        let l = rate_limits(1);
        assert_eq!(l.max_rate_wait, Duration::from_secs(1));
        assert_eq!(
            l.max_retry_after,
            d.max_retry_after.min(Duration::from_secs(1))
        );
        let l = rate_limits(u64::MAX / 4);
        assert_eq!(l.max_retry_after, d.max_retry_after);
    }

    #[test]
    fn every_subcommand_parses_its_help() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
