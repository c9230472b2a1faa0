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
//! - `help`: the option headings and the EXAMPLES sections of `--help`.
//! - `term`: colour, -q/-v and timestamps of the log on stderr.
//! - `config`: the config files and `config show`.
//! - `shell`: `completions` and `man`.
//! - `b4`: `b4-check`, mmci's verdict for `b4 review`.

pub mod b4;
pub mod bench;
pub mod config;
pub mod deprecated;
pub mod help;
pub mod kernel;
pub mod machine;
pub mod post;
pub mod results;
pub mod run;
pub mod series_args;
pub mod shell;
pub mod term;
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
    about = "Kernel CI for Linux memory-management patches",
    after_help = "Defaults set once go in ./mmci.toml or ~/.config/mmci/config.toml \
                  (see `mmci config show`). Docs: docs/commands.md."
)]
pub struct Cli {
    /// Cache directory for kernel trees and builds [default: $MMCI_WORK_DIR, the config's
    /// work_dir, else ~/.cache/mmci]
    #[arg(long, global = true)]
    pub work_dir: Option<PathBuf>,
    /// More log output (-v: debug, -vv: trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only warnings and errors on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Colour the log: auto (on a terminal, unless $NO_COLOR is set), always, never.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: term::ColorChoice,
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
    #[command(after_help = help::run_after_help())]
    Run(Box<run::RunArgs>),
    /// Matrix files.
    Matrix {
        #[command(subcommand)]
        command: run::MatrixCommand,
    },
    /// Join the results dirs of shards of one matrix into one.
    #[command(after_help = help::MERGE_EXAMPLES)]
    Merge(results::MergeArgs),
    /// Compare each candidate kernel with the baseline in a results dir:
    /// per cell and metric the statistics, the matrix's expectations, the
    /// verdict, which is the exit code (EXIT CODES below).
    #[command(visible_alias = "analyze", after_help = help::analyse_after_help())]
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
    /// Benchmarks of mmci itself (developer speed targets; hidden from --help).
    #[command(hide = true)]
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Follow a mailing list for new patch series touching mm/ and run each
    /// once, here (--run) or by a repository_dispatch to GitHub (--dispatch).
    #[command(after_help = help::WATCH_EXAMPLES)]
    Watch(Box<watch::WatchArgs>),
    /// Post a rendered report: GitHub check run and sticky comment, or an
    /// email reply on the patch thread.
    Post {
        #[command(subcommand)]
        command: post::PostCommand,
    },
    /// mmci's latest verdict on the series of a message, as the JSON b4
    /// review's check commands print (b4.review-perpatch-check-cmd,
    /// b4.review-series-check-cmd): the message on standard input.
    B4Check(b4::B4CheckArgs),
    /// The config files: what each setting is and where it came from.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "EXAMPLES:\n  mmci completions bash > ~/.local/share/bash-completion/completions/mmci\n  \
                            mmci completions zsh > ~/.local/share/zsh/site-functions/_mmci"
    )]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page mmci(1), or write one page per command into --dir.
    Man {
        /// Write mmci.1, mmci-run.1, ... into this directory (e.g. ~/.local/share/man/man1).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Every setting: its value and where it came from (flag, environment,
    /// ./mmci.toml, ~/.config/mmci/config.toml, default).
    Show,
}

/// Runs one parsed command; its exit code, or the error whose code it is.
pub async fn execute(mut cli: Cli) -> Result<i32, AppError> {
    for w in deprecated::fold(&mut cli.command) {
        eprintln!("mmci: warning: {w}");
    }
    let config = config::init()?;
    let work_dir = cli
        .work_dir
        .clone()
        .or_else(|| env_var(WORK_DIR_ENV).map(PathBuf::from));
    let work = WorkDir::resolve(work_dir.as_deref());
    match cli.command {
        Command::Config {
            command: ConfigCommand::Show,
        } => {
            print!(
                "{}",
                config.show(cli.work_dir.as_deref(), &|k| std::env::var(k).ok())
            );
            Ok(crate::error::exit::OK)
        }
        Command::Completions { shell } => shell::completions(shell),
        Command::B4Check(a) => b4::b4_check(&a),
        Command::Man { dir } => shell::man(dir.as_deref()),
        Command::Series { command } => kernel::series(command, &work).await,
        Command::Run(a) => run::run(*a, work).await,
        Command::Matrix { command } => run::matrix(command),
        Command::Merge(a) => results::merge(&a),
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

/// Log output on stderr (see [`term`]).
pub fn init_logging(cli: &Cli) {
    term::init_logging(cli.verbose, cli.quiet, cli.color);
    crate::run::progress::set_quiet(cli.quiet);
}

/// The variable the work dir's config key stands in for.
const WORK_DIR_ENV: &str = "MMCI_WORK_DIR";

/// The environment as the commands read it: a variable's value, if set,
/// else the config files' value for it ([`config`]).
pub(crate) fn env_var(name: &str) -> Option<String> {
    config::env_or_file(name)
}

/// A variable's value when it is set and not blank.
pub(crate) fn nonempty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// How a command reaches GitHub (`post github`, `watch --dispatch`, a
/// series from `--github-pr`): the API and where the token is. One
/// spelling everywhere: `--github-api` (else $GITHUB_API_URL), the token
/// from `--github-token-file`, else the variable `--github-token-env`
/// names (GITHUB_TOKEN).
#[derive(clap::Args, Clone, Debug)]
pub struct GitHubAccess {
    /// GitHub API base URL (GitHub Enterprise: https://HOST/api/v3)
    /// [default: $GITHUB_API_URL, else https://api.github.com].
    #[arg(long, value_name = "URL")]
    pub github_api: Option<String>,
    /// Environment variable holding the GitHub token.
    #[arg(long, value_name = "VAR", default_value = GITHUB_TOKEN_ENV)]
    pub github_token_env: String,
    /// File holding the GitHub token (instead of --github-token-env).
    #[arg(long, value_name = "FILE")]
    pub github_token_file: Option<PathBuf>,
}

/// The old GitHub options of `post github` and `watch` (`--api`,
/// `--token-env`, `--token-file`), now `--github-api`,
/// `--github-token-env`, `--github-token-file` as everywhere else; folded
/// into [`GitHubAccess`] by [`deprecated::fold`].
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OldGitHubOptions {
    /// Old spelling of --github-api (deprecated).
    #[arg(long, hide = true, value_name = "URL", conflicts_with = "github_api")]
    pub api: Option<String>,
    /// Old spelling of --github-token-env (deprecated).
    #[arg(
        long,
        hide = true,
        value_name = "VAR",
        conflicts_with = "github_token_env"
    )]
    pub token_env: Option<String>,
    /// Old spelling of --github-token-file (deprecated).
    #[arg(
        long,
        hide = true,
        value_name = "FILE",
        conflicts_with = "github_token_file"
    )]
    pub token_file: Option<PathBuf>,
}

/// The variable a GitHub token is read from unless `--github-token-env`
/// names another.
pub const GITHUB_TOKEN_ENV: &str = "GITHUB_TOKEN";

impl GitHubAccess {
    /// The checked API base URL (see [`github_api`]).
    pub(crate) fn api(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, crate::post::github::GitHubError> {
        github_api(self.github_api.as_deref(), env)
    }

    /// Token authentication (a GitHub App's options are `post github`'s).
    pub(crate) fn auth(&self) -> crate::post::github::AuthOptions {
        crate::post::github::AuthOptions {
            token_env: self.github_token_env.clone(),
            token_file: self.github_token_file.clone(),
            ..Default::default()
        }
    }

    /// The token when there is one, for reads that work without it (a
    /// public pull request): the file's, else the variable's; a file
    /// given and unreadable is an error.
    pub(crate) fn optional_token(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<String>, AppError> {
        match &self.github_token_file {
            Some(path) => crate::post::read_token_file("--github-token-file", path)
                .map(Some)
                .map_err(|e| AppError::BadOption(e.to_string())),
            None => Ok(nonempty(env(&self.github_token_env)).map(|t| {
                // Whatever the variable's name: redacted like the default's.
                let t = t.trim().to_string();
                crate::post::remember_secret(&t);
                t
            })),
        }
    }
}

/// The GitHub API base URL: `--github-api`, else $GITHUB_API_URL (set in Actions),
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

    /// Every argument of `cmd` and its subcommands without help text, as
    /// `mmci SUB --opt`.
    fn without_help(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        let path = format!("{path} {}", cmd.get_name());
        for a in cmd.get_arguments() {
            let builtin = matches!(a.get_id().as_str(), "help" | "version");
            if !builtin && a.get_help().is_none() && a.get_long_help().is_none() {
                out.push(format!("{path} {}", a.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" {
                without_help(sub, &path, out);
            }
        }
    }

    #[test]
    fn every_argument_of_every_subcommand_has_help_text() {
        use clap::CommandFactory;
        let mut missing = Vec::new();
        without_help(&Cli::command(), "", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without help text:\n{}",
            missing.join("\n")
        );
        // The walk sees subcommands' own arguments.
        let mut probe = Vec::new();
        let cmd =
            clap::Command::new("x").subcommand(clap::Command::new("y").arg(clap::Arg::new("z")));
        without_help(&cmd, "", &mut probe);
        assert_eq!(probe, [" x y z"]);
    }

    #[test]
    fn run_groups_its_options_under_headings_and_shows_examples() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let run = cmd.find_subcommand_mut("run").unwrap();
        let help = run.render_long_help().to_string();
        for heading in [
            help::SERIES,
            help::KERNEL,
            help::MATRIX,
            help::MACHINE,
            help::SCHEDULING,
            help::OUTPUT,
        ] {
            assert!(
                help.contains(&format!("{heading}:")),
                "run --help lacks {heading}:\n{help}"
            );
        }
        assert!(help.contains("EXAMPLES:"), "{help}");
        let options = run.get_arguments().filter(|a| a.get_long().is_some());
        let flat: Vec<_> = options
            .filter(|a| {
                a.get_help_heading().is_none()
                    && !matches!(
                        a.get_id().as_str(),
                        "help" | "work_dir" | "verbose" | "quiet" | "color"
                    )
            })
            .map(|a| a.get_id().to_string())
            .collect();
        assert!(flat.is_empty(), "run options under no heading: {flat:?}");
    }

    #[test]
    fn bench_is_hidden_but_runs_and_analyze_is_analyse() {
        use clap::CommandFactory;
        let help = Cli::command().render_help().to_string();
        assert!(!help.contains("bench"), "{help}");
        assert!(Cli::try_parse_from(["mmci", "bench", "--help"])
            .is_err_and(|e| e.kind() == clap::error::ErrorKind::DisplayHelp));
        assert!(matches!(
            Cli::try_parse_from(["mmci", "analyze", "dir"]).map(|c| c.command),
            Ok(Command::Analyse(_))
        ));
    }

    #[test]
    fn analyse_spread_refuses_the_comparisons_options() {
        use clap::error::ErrorKind;
        let cases: &[(&[&str], Option<ErrorKind>)] = &[
            (&["--spread"], None),
            (&["--spread", "--json"], None),
            (&["--spread", "--output", "f"], None),
            (&["--alpha", "0.05"], None),
            (
                &["--spread", "--alpha", "0.05"],
                Some(ErrorKind::ArgumentConflict),
            ),
            (
                &["--spread", "--noise-floor", "0.1"],
                Some(ErrorKind::ArgumentConflict),
            ),
            (
                &["--spread", "--metric-noise-floor", "touches=0.1"],
                Some(ErrorKind::ArgumentConflict),
            ),
            (
                &["--spread", "--min-runs", "2"],
                Some(ErrorKind::ArgumentConflict),
            ),
            (
                &["--spread", "--test", "welch"],
                Some(ErrorKind::ArgumentConflict),
            ),
            (
                &["--spread", "--expect", "touches=increase"],
                Some(ErrorKind::ArgumentConflict),
            ),
            (&["--spread", "--wide"], Some(ErrorKind::ArgumentConflict)),
        ];
        for (args, want) in cases {
            let argv = ["mmci", "analyse", "--results", "d"]
                .iter()
                .chain(args.iter());
            let got = Cli::try_parse_from(argv).err().map(|e| e.kind());
            assert_eq!(got, *want, "{args:?}");
        }
    }

    #[test]
    fn kernel_build_says_what_its_kernel_option_does() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let build = cmd
            .find_subcommand_mut("kernel")
            .unwrap()
            .find_subcommand_mut("build")
            .unwrap();
        let help = build.render_help().to_string();
        assert!(!help.contains("Boot this kernel image"), "{help}");
        assert!(help.contains("instead of building"), "{help}");
    }

    #[test]
    fn every_subcommand_parses_its_help() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
