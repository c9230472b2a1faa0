//! The `mmci` command: parses the command line and calls into the library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};

use clap::{Parser, Subcommand};
use mmci::analysis;
use mmci::arch::Arch;
use mmci::doctor;
use mmci::error::{self, exit, AppError};
use mmci::host::paths::WorkDir;
use mmci::kernel::series::{fetch, SeriesSource};
use mmci::kernel::{self, KernelSource};
use mmci::matrix::{Overrides, Shard, Variant};
use mmci::run::accel::{self, AccelRequest};
use mmci::run::executor::MatrixOptions;

#[derive(Parser)]
#[command(
    name = "mmci",
    version,
    about = "Kernel CI for Linux memory-management patches"
)]
struct Cli {
    /// Cache directory for kernel trees and builds [default: $MMCI_WORK_DIR or ~/.cache/mmci]
    #[arg(long, global = true)]
    work_dir: Option<PathBuf>,
    /// More log output (-v: debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct KernelArgs {
    /// Guest architecture [default: x86_64; for `run`, the matrix's].
    #[arg(long)]
    arch: Option<Arch>,
    /// Boot this kernel image instead of building the bundled tree.
    #[arg(long)]
    kernel: Option<PathBuf>,
    /// Kernel tree tarball to import and build (the offline default).
    #[arg(long, default_value = mmci::kernel::tree::BUNDLED_TARBALL)]
    tarball: PathBuf,
    /// Build a tree from a git URL instead (`mm-stable` = akpm's mm.git), mirrored in the work dir.
    #[arg(long, value_name = "URL|mm-stable")]
    tree: Option<String>,
    /// Branch, tag or commit of --tree [default: mm-stable for mm-stable, else the remote HEAD].
    #[arg(long = "ref", value_name = "REF", requires = "tree")]
    git_ref: Option<String>,
    /// Config fragments to merge over tinyconfig, replacing kernels/mm.config + kernels/<arch>.config.
    #[arg(long = "config-fragment")]
    config_fragments: Vec<PathBuf>,
    /// make -j [default: number of CPUs]
    #[arg(long)]
    jobs: Option<usize>,
    /// Patch series to apply with `git am -3` before building: an mbox file
    /// (cover letter and revisions allowed) or a directory of format-patch files.
    #[arg(long, conflicts_with_all = ["lore", "github_pr", "pw_series"])]
    series: Option<PathBuf>,
    /// Patch series from a lore thread: a message-id (or lore URL) of any mail in it.
    #[arg(long, value_name = "MESSAGE-ID", conflicts_with_all = ["github_pr", "pw_series"])]
    lore: Option<String>,
    /// public-inbox server for --lore.
    #[arg(long, default_value = mmci::kernel::series::fetch::LORE_URL)]
    lore_url: String,
    /// Patch series from a GitHub pull request: OWNER/REPO#NUMBER (token: $GITHUB_TOKEN).
    #[arg(long, value_name = "OWNER/REPO#N", conflicts_with = "pw_series")]
    github_pr: Option<String>,
    /// Patchwork instance of --pw-series (e.g. https://patchwork.kernel.org).
    #[arg(long, value_name = "URL", requires = "pw_series")]
    patchwork: Option<String>,
    /// Patch series from patchwork: the series id (its REST API 1.3 series and mbox).
    #[arg(long, value_name = "ID", requires = "patchwork")]
    pw_series: Option<u64>,
    /// GitHub API base URL for --github-pr (GitHub Enterprise: https://HOST/api/v3).
    #[arg(long, default_value = mmci::kernel::series::fetch::GITHUB_API)]
    github_api: String,
    /// Revision N of the series instead of the newest complete one.
    #[arg(long, value_name = "N")]
    revision: Option<u32>,
    /// Further refs of --tree to try, in order, when the series has no
    /// base-commit: in the tree and does not apply on --ref (repeatable).
    #[arg(long = "base-cascade", value_name = "REF")]
    base_cascade: Vec<String>,
}

impl KernelArgs {
    fn series(&self) -> Result<Option<SeriesSource>, AppError> {
        let bad = |option: &str, value: &str, why: &str| {
            AppError::BadOption(format!("{option} {value}: {why}"))
        };
        if let Some(path) = &self.series {
            if !path.exists() {
                return Err(bad(
                    "--series",
                    &path.display().to_string(),
                    "no such file or directory",
                ));
            }
            return Ok(Some(SeriesSource::from_path(path)));
        }
        if let Some(given) = &self.lore {
            fetch::check_base_url("--lore-url", &self.lore_url)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            let message_id = fetch::normalize_message_id(given)
                .map_err(|e| bad("--lore", given, &e.to_string()))?;
            return Ok(Some(SeriesSource::Lore {
                message_id,
                base_url: self.lore_url.clone(),
            }));
        }
        if let Some(given) = &self.github_pr {
            fetch::check_base_url("--github-api", &self.github_api)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            let (repo, number) = fetch::parse_pull_request(given)
                .ok_or_else(|| bad("--github-pr", given, "expected OWNER/REPO#NUMBER"))?;
            return Ok(Some(SeriesSource::GitHub {
                api: self.github_api.clone(),
                repo,
                number,
                token: std::env::var("GITHUB_TOKEN").ok(),
            }));
        }
        if let (Some(url), Some(series)) = (&self.patchwork, self.pw_series) {
            let url = mmci::kernel::series::patchwork::check_url("--patchwork", url)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            return Ok(Some(SeriesSource::Patchwork { url, series }));
        }
        Ok(None)
    }

    fn source(&self) -> Result<KernelSource, AppError> {
        let mut s = KernelSource::bundled();
        s.image = self.kernel.clone();
        s.tarball = self.tarball.clone();
        s.tree = self
            .tree
            .as_deref()
            .map(|t| mmci::kernel::tree::TreeSpec::parse(t, self.git_ref.as_deref()));
        s.fragments = self.config_fragments.clone();
        s.series = self.series()?;
        s.series_revision = self.revision;
        s.base_cascade = self.base_cascade.clone();
        if let Some(j) = self.jobs {
            s.jobs = j;
        }
        Ok(s)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Patch series: what would be applied, without building.
    Series {
        #[command(subcommand)]
        command: SeriesCommand,
    },
    /// Run a matrix: build the kernels (cached), boot every cell under QEMU
    /// for every kernel and repeat, and print the runs. Without --matrix:
    /// the embedded matrix/default.yaml (scenario A, bundled series vs base).
    Run {
        #[command(flatten)]
        kernel: KernelArgs,
        /// Matrix file (YAML) [default: the embedded matrix/default.yaml].
        #[arg(long)]
        matrix: Option<PathBuf>,
        /// Run only this deterministic slice of the cells: I/N (1-based).
        #[arg(long, value_name = "I/N")]
        shard: Option<Shard>,
        /// Runs per cell and kernel, instead of the matrix's.
        #[arg(long)]
        repeats: Option<u32>,
        /// Where results go; rerunning with the same dir resumes [default: ./mmci-results/<UTC time>]
        #[arg(long)]
        results: Option<PathBuf>,
        /// vCPUs of every guest, instead of the matrix's.
        #[arg(long)]
        vcpus: Option<u32>,
        /// Guest RAM in MiB, instead of the matrix's.
        #[arg(long)]
        memory_mb: Option<u64>,
        /// Swap disk size in MiB, instead of the matrix's.
        #[arg(long)]
        swap_mb: Option<u64>,
        /// Guest job parameter KEY=VALUE for every cell (threads, working_set_mb,
        /// duration_s, memcg_max_mb, swap, swap_delay_ms, mglru, ...); repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[arg(long, value_enum, default_value = "auto")]
        accel: AccelRequest,
        /// Kill a guest after this many seconds [default: 90 + 4 x duration_s]
        #[arg(long)]
        timeout: Option<u64>,
        /// Extra attempts after an infra failure.
        #[arg(long, default_value_t = 1)]
        retries: u32,
        /// Kernel builds at a time.
        #[arg(long, default_value_t = 1)]
        parallel_builds: usize,
        /// Guest vCPUs per host core that may run at once.
        #[arg(long, default_value_t = 1.0)]
        oversubscribe: f64,
        /// Guest vCPUs that may run at once [default: host cores x --oversubscribe].
        #[arg(long)]
        guest_vcpus: Option<u32>,
        /// Guest RAM (MiB) that may be in use at once [default: host RAM - 1 GiB].
        #[arg(long)]
        guest_memory_mb: Option<u64>,
    },
    /// Matrix files.
    Matrix {
        #[command(subcommand)]
        command: MatrixCommand,
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
    Analyse {
        /// A results dir of `mmci run` (or `mmci merge`).
        dir: PathBuf,
        #[command(flatten)]
        analysis: AnalysisArgs,
        /// Also write the whole comparison as JSON (format 2) to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Every column of the comparison table, however wide (by default
        /// it is fitted to the terminal, or to 100 columns in a log).
        #[arg(long)]
        wide: bool,
    },
    /// Render the comparison of a results dir as GitHub markdown, a
    /// plain-text email for the patch thread, a self-contained HTML page or
    /// JSON. Exit 0 when the report was written, whatever the verdict.
    Report {
        /// A results dir of `mmci run` (or `mmci merge`).
        dir: PathBuf,
        #[arg(long, value_enum, default_value = "markdown")]
        format: mmci::report::Format,
        /// Write the report here instead of standard output.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Where the full results are (URL or path), linked from the report.
        #[arg(long, value_name = "URL")]
        results_url: Option<String>,
        /// The series' cover letter (a text file); the email quotes its first lines.
        #[arg(long, value_name = "FILE")]
        cover_letter: Option<PathBuf>,
        /// Name and address of the email's Tested-by: trailer (only on a pass).
        #[arg(long, default_value = mmci::report::DEFAULT_TESTED_BY)]
        tested_by: String,
        /// Also append the markdown report to $GITHUB_STEP_SUMMARY (when it is set).
        #[arg(long)]
        github_summary: bool,
        #[command(flatten)]
        analysis: AnalysisArgs,
    },
    /// Guest images (images/<name>/image.yaml): Debian userspace for the
    /// script scenario, built with mmdebstrap into read-only erofs files.
    Image {
        #[command(subcommand)]
        command: ImageCommand,
    },
    /// Kernel trees and builds.
    Kernel {
        #[command(subcommand)]
        command: KernelCommand,
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
        command: BenchCommand,
    },
    /// Follow a mailing list for new patch series touching mm/ and run each
    /// once, here (--run) or by a repository_dispatch to GitHub (--dispatch).
    Watch(Box<WatchArgs>),
    /// Post a rendered report: GitHub check run and sticky comment, or an
    /// email reply on the patch thread.
    Post {
        #[command(subcommand)]
        command: PostCommand,
    },
}

#[derive(Subcommand)]
enum PostCommand {
    /// A check run on the tested commit (--start: in progress; else
    /// completed with --conclusion and --body) and, with --pr, one sticky
    /// comment per series on the pull request, updated in place.
    Github(Box<GithubArgs>),
    /// The plain-text report as a reply on the series' thread. A dry run
    /// (the message printed) unless --send or --write.
    Email(Box<EmailArgs>),
    /// One check per patch of the series on patchwork (state, context,
    /// link, description), as NIPA and the BPF CI post theirs. A dry run
    /// (the requests printed) unless --send.
    Patchwork(Box<PatchworkArgs>),
}

#[derive(clap::Args)]
struct PatchworkArgs {
    /// Results dir whose manifest names the series (and its patchwork ids).
    #[arg(
        long,
        required_unless_present = "pw_series",
        conflicts_with = "pw_series"
    )]
    results: Option<PathBuf>,
    /// Or the series on --patchwork by id (read with a GET, in a dry run
    /// too): for --start or --state before there are results.
    #[arg(long, value_name = "ID", requires = "patchwork")]
    pw_series: Option<u64>,
    /// The check's state [default: from the verdict: pass -> success,
    /// fail -> fail, inconclusive -> warning].
    #[arg(long, value_enum, conflicts_with = "start")]
    state: Option<mmci::post::patchwork::CheckState>,
    /// The run is starting: post `pending`.
    #[arg(long)]
    start: bool,
    /// The check's name: mmci or mmci-NAME.
    #[arg(long, default_value = "mmci")]
    context: String,
    /// Link shown with the check (e.g. the workflow run or the report).
    #[arg(long, value_name = "URL")]
    target_url: Option<String>,
    /// One line shown with the check [default: the verdict and its counts].
    #[arg(long, value_name = "TEXT")]
    description: Option<String>,
    /// Patchwork instance [default: the one the series was read from].
    #[arg(long, value_name = "URL")]
    patchwork: Option<String>,
    /// Patchwork project, to find patches by message-id (series not read from patchwork).
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
    /// File holding the token [default: $MMCI_PATCHWORK_TOKEN].
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Send the checks (else: print the requests; no token needed).
    #[arg(long)]
    send: bool,
    /// Longest wait on patchwork's rate limit (429) for one request, in seconds.
    #[arg(long, default_value_t = 300)]
    rate_limit_wait: u64,
    #[command(flatten)]
    analysis: AnalysisArgs,
}

#[derive(clap::Args)]
struct GithubArgs {
    /// Create the check run as in progress (the run is starting).
    #[arg(long, conflicts_with_all = ["conclusion", "body"])]
    start: bool,
    /// The verdict of the completed check run.
    #[arg(long, value_enum, required_unless_present = "start")]
    conclusion: Option<mmci::post::github::Conclusion>,
    /// The rendered markdown report.
    #[arg(long, required_unless_present = "start")]
    body: Option<PathBuf>,
    /// Results dir whose manifest names the series (title, sticky key).
    #[arg(long)]
    results: Option<PathBuf>,
    /// OWNER/REPO [default: $GITHUB_REPOSITORY].
    #[arg(long)]
    repo: Option<String>,
    /// Commit the check run belongs to [default: $GITHUB_SHA].
    #[arg(long)]
    sha: Option<String>,
    /// Pull request for the sticky comment.
    #[arg(long)]
    pr: Option<u64>,
    /// The check run's name.
    #[arg(long, default_value = "mmci")]
    check_name: String,
    /// Complete this check run [default: the open one of --check-name on --sha].
    #[arg(long)]
    check_run_id: Option<u64>,
    /// The check run's title [default: the series' title].
    #[arg(long)]
    title: Option<String>,
    /// Key of the sticky comment [default: the series' title, stable across revisions].
    #[arg(long)]
    sticky_key: Option<String>,
    /// Link shown on the check run (e.g. the workflow run).
    #[arg(long)]
    details_url: Option<String>,
    /// GitHub API base URL [default: $GITHUB_API_URL, else https://api.github.com].
    #[arg(long)]
    api: Option<String>,
    /// Environment variable holding the token.
    #[arg(long, default_value = "GITHUB_TOKEN")]
    token_env: String,
    /// File holding the token (instead of the environment).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Authenticate as this GitHub App (with --app-key).
    #[arg(long)]
    app_id: Option<u64>,
    /// The App's private key (PEM).
    #[arg(long, requires = "app_id")]
    app_key: Option<PathBuf>,
    /// The App's installation [default: the one on --repo].
    #[arg(long, requires = "app_id")]
    installation_id: Option<u64>,
    /// Print the requests instead of sending them (no credentials needed).
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
struct WatchArgs {
    /// A public-inbox Atom feed (e.g. https://lore.kernel.org/linux-mm/new.atom).
    #[arg(long, required_unless_present_any = ["mbox", "maildir", "patchwork"], conflicts_with_all = ["mbox", "maildir", "patchwork"])]
    atom: Option<String>,
    /// A local mbox (e.g. kept up to date by lei or a mail client).
    #[arg(long, conflicts_with_all = ["maildir", "patchwork"])]
    mbox: Option<PathBuf>,
    /// A local maildir.
    #[arg(long, conflicts_with = "patchwork")]
    maildir: Option<PathBuf>,
    /// A patchwork instance whose series-completed events of --project are followed.
    #[arg(long, value_name = "URL", requires = "project")]
    patchwork: Option<String>,
    /// The patchwork project (its link name, e.g. linux-mm).
    #[arg(long, value_name = "NAME", requires = "patchwork")]
    project: Option<String>,
    /// Where a patchwork source starts when the state has no cursor yet
    /// (ISO 8601 UTC) [default: a day ago].
    #[arg(long, value_name = "DATE", requires = "patchwork")]
    pw_since: Option<String>,
    /// Longest wait on patchwork's rate limit (429) for one request, in seconds.
    #[arg(long, default_value_t = 300)]
    rate_limit_wait: u64,
    /// Kill a --run's `mmci run` after this many seconds.
    #[arg(long, default_value_t = 6 * 3600)]
    run_timeout: u64,
    /// public-inbox server the threads of --atom entries are fetched from.
    #[arg(long, default_value = mmci::kernel::series::fetch::LORE_URL)]
    lore_url: String,
    /// Path prefix a series must touch (repeatable).
    #[arg(long = "path", default_values_t = vec!["mm/".to_string()])]
    paths: Vec<String>,
    /// State file: the series already handled [default: <work dir>/watch/state.json].
    #[arg(long)]
    state: Option<PathBuf>,
    /// Send a repository_dispatch (type mmci-series) to OWNER/REPO, which runs series.yml.
    #[arg(
        long,
        value_name = "OWNER/REPO",
        required_unless_present = "run",
        conflicts_with = "run"
    )]
    dispatch: Option<String>,
    /// Run `mmci run --series` here on each new series.
    #[arg(long)]
    run: bool,
    /// Results dir of --run's runs (one subdir per series).
    #[arg(long, default_value = "mmci-results/watch")]
    results: PathBuf,
    /// Extra argument for --run's `mmci run` (repeatable), e.g. --run-arg=--matrix=matrix/smoke.yaml.
    #[arg(long = "run-arg", allow_hyphen_values = true)]
    run_args: Vec<String>,
    /// GitHub API base URL for --dispatch [default: $GITHUB_API_URL, else https://api.github.com].
    #[arg(long)]
    api: Option<String>,
    /// Environment variable holding the token for --dispatch.
    #[arg(long, default_value = "GITHUB_TOKEN")]
    token_env: String,
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Poll every this many seconds [default: one pass, then exit].
    #[arg(long)]
    interval: Option<u64>,
    /// Print what would be done; record nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
struct EmailArgs {
    /// The rendered plain-text report.
    #[arg(long)]
    body: PathBuf,
    /// Results dir whose manifest holds the series and its thread.
    #[arg(long, required_unless_present = "series", conflicts_with = "series")]
    results: Option<PathBuf>,
    /// The series' mbox (or format-patch dir) instead of --results.
    #[arg(long)]
    series: Option<PathBuf>,
    /// Sender [default: $MMCI_EMAIL_FROM].
    #[arg(long)]
    from: Option<String>,
    /// Extra To (repeatable); the series' author is always To.
    #[arg(long)]
    to: Vec<String>,
    /// Extra Cc (repeatable); the thread's To and Cc are always Cc.
    #[arg(long)]
    cc: Vec<String>,
    /// Only --to and --cc: leave out the author and the lists.
    #[arg(long)]
    only_given_recipients: bool,
    /// Message-ID instead of a fresh one.
    #[arg(long)]
    message_id: Option<String>,
    /// Date as Unix seconds instead of now.
    #[arg(long)]
    date: Option<u64>,
    /// Send it over SMTP.
    #[arg(long)]
    send: bool,
    /// Store it: FILE.eml, or appended to FILE.mbox (for git send-email).
    #[arg(long)]
    write: Option<PathBuf>,
    /// SMTP server HOST[:PORT] [default: $MMCI_SMTP].
    #[arg(long)]
    smtp: Option<String>,
    #[arg(long, value_enum, default_value = "starttls")]
    smtp_tls: mmci::post::email::SmtpTls,
    /// Extra CA certificate (PEM) to trust for the SMTP server.
    #[arg(long)]
    smtp_ca: Option<PathBuf>,
    #[arg(long)]
    smtp_user: Option<String>,
    /// Environment variable with the SMTP password.
    #[arg(long, default_value = "MMCI_SMTP_PASSWORD")]
    smtp_password_env: String,
    #[arg(long)]
    smtp_password_file: Option<PathBuf>,
    /// Seconds before an SMTP exchange gives up.
    #[arg(long, default_value_t = 60)]
    smtp_timeout: u64,
}

/// The knobs of the analysis, shared by `analyse` and `report`.
#[derive(clap::Args, Clone)]
struct AnalysisArgs {
    /// Significance level.
    #[arg(long, default_value_t = 0.01)]
    alpha: f64,
    /// Smallest relative change that counts, for metrics without their own.
    #[arg(long, default_value_t = 0.05)]
    noise_floor: f64,
    /// One metric's noise floor, METRIC=FRACTION; repeatable.
    #[arg(long = "metric-noise-floor", value_name = "METRIC=FRACTION")]
    metric_noise_floors: Vec<String>,
    /// Completed runs a side below which expectations are inconclusive.
    #[arg(long, default_value_t = 3)]
    min_runs: usize,
    /// The test that decides significance (both are shown).
    #[arg(long, value_enum, default_value = "mann-whitney")]
    test: analysis::Test,
    /// An expectation added to (or replacing) the matrix's:
    /// METRIC=KIND or METRIC=KIND:THRESHOLD; repeatable.
    #[arg(long = "expect", value_name = "METRIC=KIND[:THRESHOLD]")]
    expect: Vec<String>,
}

impl AnalysisArgs {
    fn analyse(&self, dir: &std::path::Path) -> Result<analysis::Comparison, AppError> {
        let opts = analysis::options_from_args(
            self.alpha,
            self.noise_floor,
            &self.metric_noise_floors,
            self.min_runs,
            self.test,
        )
        .map_err(AppError::BadOption)?;
        let extra = self
            .expect
            .iter()
            .map(|s| analysis::expect::parse_arg(s))
            .collect::<Result<_, _>>()
            .map_err(AppError::BadOption)?;
        Ok(analysis::analyse_dir(dir, &extra, &opts)?)
    }
}

#[derive(Subcommand)]
enum MatrixCommand {
    /// Print the validated plan of a matrix and its cost estimate.
    Show {
        /// Matrix file [default: the embedded matrix/default.yaml].
        file: Option<PathBuf>,
        #[arg(long, value_name = "I/N")]
        shard: Option<Shard>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[arg(long, default_value_t = 1.0)]
        oversubscribe: f64,
    },
}

#[derive(Subcommand)]
enum ImageCommand {
    /// Resolve the recipe's packages and build the image unless the work
    /// dir has one of the same recipe and versions; print its path.
    Build {
        /// A recipe folder's name in --images-dir, or the folder's path.
        name: String,
        #[command(flatten)]
        images: ImagesArgs,
        /// Do not refresh the Debian index: resolve against the last one fetched.
        #[arg(long)]
        offline: bool,
        /// Kill the bootstrap after this many seconds.
        #[arg(long, default_value_t = 2700)]
        timeout: u64,
    },
    /// What the newest built image of a recipe holds: packages and
    /// versions, size, hash.
    Show {
        /// A recipe folder's name in --images-dir, or the folder's path.
        name: String,
        #[command(flatten)]
        images: ImagesArgs,
    },
}

#[derive(clap::Args, Clone)]
struct ImagesArgs {
    /// Folder of image recipes [default: ./images, else the source tree's].
    #[arg(long)]
    images_dir: Option<PathBuf>,
}

impl ImagesArgs {
    fn recipe_dir(&self, name: &str) -> PathBuf {
        let dir = self
            .images_dir
            .clone()
            .unwrap_or_else(mmci::guest::image::default_recipes_dir);
        mmci::guest::image::recipe::locate(name, &dir)
    }
}

#[derive(Subcommand)]
enum KernelCommand {
    /// Build the kernel (or find it in the cache) and print its image path.
    Build {
        #[command(flatten)]
        kernel: KernelArgs,
    },
}

#[derive(Subcommand)]
enum SeriesCommand {
    /// The revision that would be applied, how it was chosen, its base, each
    /// patch (subject, author, message-id, revision it comes from) and every
    /// mail left out with the reason.
    Show(SeriesShowArgs),
}

#[derive(clap::Args)]
struct SeriesShowArgs {
    /// An mbox file or a directory of format-patch files.
    #[arg(conflicts_with_all = ["lore", "github_pr"], required_unless_present_any = ["lore", "github_pr"])]
    source: Option<PathBuf>,
    /// A lore thread: a message-id (or lore URL) of any mail in it.
    #[arg(long, value_name = "MESSAGE-ID", conflicts_with = "github_pr")]
    lore: Option<String>,
    /// public-inbox server for --lore.
    #[arg(long, default_value = mmci::kernel::series::fetch::LORE_URL)]
    lore_url: String,
    /// A GitHub pull request: OWNER/REPO#NUMBER (token: $GITHUB_TOKEN).
    #[arg(long, value_name = "OWNER/REPO#N")]
    github_pr: Option<String>,
    #[arg(long, default_value = mmci::kernel::series::fetch::GITHUB_API)]
    github_api: String,
    /// Revision N instead of the newest complete one.
    #[arg(long, value_name = "N")]
    revision: Option<u32>,
    /// Choose the base in this tree (a git URL, mirrored in the work dir):
    /// base-commit when it has it, else --ref, then each --base-cascade ref.
    #[arg(long, value_name = "URL")]
    tree: Option<String>,
    #[arg(long = "ref", value_name = "REF", requires = "tree")]
    git_ref: Option<String>,
    #[arg(long = "base-cascade", value_name = "REF", requires = "tree")]
    base_cascade: Vec<String>,
    /// JSON for tools.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Assemble every thread of a corpus of lore t.mbox.gz files (gunzip,
    /// parse, thread, choose) end to end; median of --rounds.
    Series {
        /// Directory of *.t.mbox.gz [default: the test corpus,
        /// orchestrator/tests/fixtures/lore-threads].
        #[arg(long)]
        corpus: Option<PathBuf>,
        #[arg(long, default_value_t = 11)]
        rounds: usize,
    },
    /// Cold kernel build, cache hit and patched rebuild (one patch to
    /// mm/vmscan.c) side by side, against plain make. Takes two cold builds.
    Build {
        #[arg(long, default_value = "x86_64")]
        arch: Arch,
        #[arg(long, default_value = mmci::kernel::tree::BUNDLED_TARBALL)]
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
        #[arg(long, default_value_t = 10_000)]
        cells: usize,
        #[arg(long, default_value_t = 7)]
        rounds: usize,
    },
    /// Analyse --runs synthetic runs (base and patched, 5 repeats a cell)
    /// and render them, against the 1 s target.
    Analysis {
        #[arg(long, default_value_t = 10_000)]
        runs: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// Run --guests one-vCPU smoke guests through the scheduler on
    /// --vcpus of capacity and compare the wall time with perfect packing.
    Schedule {
        #[arg(long, default_value_t = 8)]
        guests: usize,
        /// Guest vCPUs at once [default: host cores].
        #[arg(long)]
        vcpus: Option<u32>,
        #[arg(long, default_value_t = 5)]
        duration_s: u64,
        #[arg(long, value_enum, default_value = "auto")]
        accel: AccelRequest,
    },
    /// Time from QEMU spawn to the first guest record, host overhead per run,
    /// initramfs build time, guest-init size.
    Boot {
        #[command(flatten)]
        kernel: Box<KernelArgs>,
        #[arg(long, default_value_t = 7)]
        runs: usize,
        #[arg(long, value_enum, default_value = "auto")]
        accel: AccelRequest,
    },
}

fn init_logging(verbose: u8) {
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

/// Prints an error and its causes on one line each, as `error: a: b: c`.
fn print_error(err: &(dyn std::error::Error + 'static)) {
    eprintln!("mmci: error: {}", mmci::host::error_chain(err));
}

fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d, hh, mm, ss) = mmci::post::email::civil(secs);
    format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}")
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The GitHub API base URL: `--api`, else $GITHUB_API_URL (set in Actions),
/// else api.github.com; checked before any request.
fn github_api(given: Option<&str>) -> Result<String, mmci::post::github::GitHubError> {
    let api = given
        .map(str::to_string)
        .or_else(|| env_nonempty("GITHUB_API_URL"))
        .unwrap_or_else(|| fetch::GITHUB_API.to_string());
    mmci::post::github::check_api(&api)?;
    Ok(api)
}

/// Reads and checks every input of `mmci post github` before any request.
fn github_post(a: &GithubArgs) -> Result<mmci::post::GitHubPost, AppError> {
    use mmci::post::{self, github, GitHubPhase, PostError};
    let gh = |e: github::GitHubError| AppError::Post(PostError::GitHub(e));
    let api = github_api(a.api.as_deref()).map_err(gh)?;
    let repo: github::Repo = a
        .repo
        .clone()
        .or_else(|| env_nonempty("GITHUB_REPOSITORY"))
        .unwrap_or_default()
        .parse()
        .map_err(gh)?;
    let head_sha = a
        .sha
        .clone()
        .or_else(|| env_nonempty("GITHUB_SHA"))
        .ok_or(github::GitHubError::NoSha)
        .map_err(gh)?;
    let series = match &a.results {
        Some(dir) => post::series_from_results(dir)?,
        None => None,
    };
    let series_title = series.as_ref().map(post::series_title);
    let title = a
        .title
        .clone()
        .or_else(|| series_title.clone())
        .unwrap_or_else(|| "mmci report".into());
    let phase = if a.start {
        GitHubPhase::Start
    } else {
        let markdown = post::read_body(a.body.as_deref().expect("clap requires --body"))?;
        GitHubPhase::Finish {
            conclusion: a.conclusion.expect("clap requires --conclusion"),
            markdown,
            pr: a.pr.map(|n| {
                let key = a
                    .sticky_key
                    .clone()
                    .or_else(|| series_title.clone())
                    .unwrap_or_else(|| a.check_name.clone());
                (n, key)
            }),
            check_run_id: a.check_run_id,
        }
    };
    let auth = if a.dry_run {
        None
    } else {
        Some(
            github::AuthOptions {
                token_env: a.token_env.clone(),
                token_file: a.token_file.clone(),
                app_id: a.app_id,
                app_key: a.app_key.clone(),
                installation_id: a.installation_id,
            }
            .resolve()
            .map_err(gh)?,
        )
    };
    Ok(mmci::post::GitHubPost {
        api,
        target: github::CheckTarget {
            repo,
            head_sha,
            name: a.check_name.clone(),
            details_url: a.details_url.clone(),
        },
        title,
        phase,
        auth,
        step_summary: env_nonempty("GITHUB_STEP_SUMMARY")
            .filter(|_| !a.dry_run)
            .map(PathBuf::from),
    })
}

/// Patchwork's client limits with `--rate-limit-wait` seconds of 429 waits.
fn rate_limits(wait_s: u64) -> mmci::kernel::series::patchwork::Limits {
    let wait = Duration::from_secs(wait_s);
    let d = mmci::kernel::series::patchwork::Limits::default();
    mmci::kernel::series::patchwork::Limits {
        max_rate_wait: wait,
        max_retry_after: d.max_retry_after.min(wait),
        ..d
    }
}

/// Reads and checks every input of `mmci post patchwork` before any request.
async fn patchwork_post(
    a: &PatchworkArgs,
) -> Result<mmci::post::patchwork::PatchworkPost, AppError> {
    use mmci::post::patchwork::{self as pw, CheckState, PatchworkPostError};
    use mmci::post::PostError;
    let bad = |e: PatchworkPostError| AppError::Post(PostError::Patchwork(e));
    pw::check_context(&a.context).map_err(bad)?;
    if let Some(u) = &a.target_url {
        pw::check_target_url(u).map_err(bad)?;
    }
    if a.results.is_none() && !a.start && a.state.is_none() {
        return Err(AppError::BadOption(
            "--pw-series without --results: give --start or --state (there is no verdict yet)"
                .into(),
        ));
    }
    let (targets, instance) = match &a.results {
        Some(dir) => pw::targets_from_results(dir)?,
        None => (vec![], None),
    };
    let url = match (&a.patchwork, instance, &a.results) {
        (Some(u), _, _) => u.clone(),
        (None, Some(u), _) => u,
        (None, None, Some(dir)) => return Err(bad(PatchworkPostError::NoInstance(dir.clone()))),
        (None, None, None) => unreachable!("clap requires --patchwork with --pw-series"),
    };
    let url = mmci::kernel::series::patchwork::check_url("--patchwork", &url)
        .map_err(|e| bad(PatchworkPostError::Api(e)))?;
    let targets = match a.pw_series {
        Some(id) => pw::targets_of_series(&url, id, rate_limits(a.rate_limit_wait))
            .await
            .map_err(bad)?,
        None => targets,
    };
    // The verdict only when it decides something: the state or the text.
    let verdict = match &a.results {
        _ if a.start || (a.state.is_some() && a.description.is_some()) => None,
        Some(dir) => Some(a.analysis.analyse(dir)?),
        None => None,
    };
    let state = match (a.start, a.state, &verdict) {
        (true, _, _) => CheckState::Pending,
        (_, Some(s), _) => s,
        (_, None, Some(c)) => CheckState::of_verdict(c.verdict.status),
        (_, None, None) => unreachable!("analysed above"),
    };
    let description = a
        .description
        .clone()
        .unwrap_or_else(|| pw::default_description(state, verdict.as_ref()));
    let token = if a.send {
        Some(pw::resolve_token(a.token_file.as_deref(), env_nonempty).map_err(bad)?)
    } else {
        None
    };
    Ok(pw::PatchworkPost {
        url,
        project: a.project.clone(),
        targets,
        check: pw::Check {
            state,
            context: a.context.clone(),
            target_url: a.target_url.clone(),
            description,
        },
        token,
        limits: rate_limits(a.rate_limit_wait),
    })
}

/// Reads and checks every input of `mmci post email` before anything is sent.
async fn email_post(a: &EmailArgs) -> Result<mmci::post::EmailPost, AppError> {
    use mmci::post::{self, email, PostError};
    let body = post::read_body(&a.body)?;
    let series = match (&a.results, &a.series) {
        (Some(dir), _) => post::series_from_results(dir)?.ok_or_else(|| {
            AppError::BadOption(format!(
                "--results {}: no kernel in it had a series applied: give the series with --series",
                dir.display()
            ))
        })?,
        (None, Some(path)) => {
            if !path.exists() {
                return Err(AppError::BadOption(format!(
                    "--series {}: no such file or directory",
                    path.display()
                )));
            }
            let store = tempfile::tempdir()
                .map_err(|e| AppError::BadOption(format!("cannot create a temporary dir: {e}")))?;
            mmci::kernel::series::load(
                &SeriesSource::from_path(path),
                &fetch::Fetcher::default(),
                store.path(),
            )
            .await
            .map_err(|e| AppError::Kernel(mmci::kernel::KernelError::Series(e)))?
        }
        (None, None) => unreachable!("clap requires --results or --series"),
    };
    let options = email::EmailOptions {
        from: a.from.clone().or_else(|| env_nonempty("MMCI_EMAIL_FROM")),
        to: a.to.clone(),
        cc: a.cc.clone(),
        only_given_recipients: a.only_given_recipients,
        message_id: a.message_id.clone(),
        date: a.date,
    };
    // Build once now so that a bad address fails before the SMTP set-up.
    email::build(&series, &body, &options).map_err(PostError::Email)?;
    let smtp = if a.send {
        let server = a
            .smtp
            .clone()
            .or_else(|| env_nonempty("MMCI_SMTP"))
            .ok_or(PostError::Email(email::EmailError::NoSmtp))?;
        Some(
            email::Smtp::new(&email::SmtpOptions {
                server,
                tls: a.smtp_tls,
                ca: a.smtp_ca.clone(),
                user: a.smtp_user.clone(),
                password_env: a.smtp_password_env.clone(),
                password_file: a.smtp_password_file.clone(),
                timeout: Duration::from_secs(a.smtp_timeout),
            })
            .map_err(PostError::Email)?,
        )
    } else {
        None
    };
    Ok(mmci::post::EmailPost {
        series,
        body,
        options,
        write: a.write.clone(),
        smtp,
    })
}

/// `mmci series show`: assemble and print, without a tree or a build.
async fn series_show(a: &SeriesShowArgs, work: &WorkDir) -> Result<i32, AppError> {
    if let Some(p) = a.source.as_ref().filter(|p| !p.exists()) {
        return Err(AppError::BadOption(format!(
            "series show {}: no such file or directory (give an mbox or a format-patch directory)",
            p.display()
        )));
    }
    let k = KernelArgs {
        arch: None,
        kernel: None,
        tarball: PathBuf::from(mmci::kernel::tree::BUNDLED_TARBALL),
        tree: a.tree.clone(),
        git_ref: a.git_ref.clone(),
        config_fragments: vec![],
        jobs: None,
        series: a.source.clone(),
        lore: a.lore.clone(),
        lore_url: a.lore_url.clone(),
        github_pr: a.github_pr.clone(),
        github_api: a.github_api.clone(),
        patchwork: None,
        pw_series: None,
        revision: a.revision,
        base_cascade: a.base_cascade.clone(),
    };
    let Some(source) = k.series()? else {
        return Err(AppError::BadOption(
            "series show: give an mbox, a format-patch directory, --lore or --github-pr".into(),
        ));
    };
    let mut series = mmci::kernel::series::load_with(
        &source,
        a.revision,
        &fetch::Fetcher::default(),
        &work.root().join("series"),
    )
    .await
    .map_err(|e| AppError::Kernel(mmci::kernel::KernelError::Series(e)))?;
    if a.tree.is_some() {
        series.base = Some(kernel::base_for(&k.source()?, &series, work).await?);
    }
    let name = source.name();
    if a.json {
        println!("{}", mmci::kernel::series::show::json(&name, &series));
    } else {
        print!("{}", mmci::kernel::series::show::text(&name, &series));
    }
    Ok(exit::OK)
}

async fn real_main(cli: Cli) -> Result<i32, AppError> {
    let work = WorkDir::resolve(cli.work_dir.as_deref());
    match cli.command {
        Command::Run {
            kernel,
            matrix,
            shard,
            repeats,
            results,
            vcpus,
            memory_mb,
            swap_mb,
            mut sets,
            accel,
            timeout,
            retries,
            parallel_builds,
            oversubscribe,
            guest_vcpus,
            guest_memory_mb,
        } => {
            // Machine options are sets like any other, applied to every cell.
            for (k, v) in [
                ("arch", kernel.arch.map(|a| a.to_string())),
                ("vcpus", vcpus.map(|v| v.to_string())),
                ("memory_mb", memory_mb.map(|v| v.to_string())),
                ("swap_mb", swap_mb.map(|v| v.to_string())),
            ] {
                if let Some(v) = v {
                    sets.insert(0, format!("{k}={v}"));
                }
            }
            let cli_series = kernel.series()?;
            let base = kernel.source()?;
            let variants = if let Some(image) = &kernel.kernel {
                if !image.is_file() {
                    return Err(mmci::kernel::KernelError::MissingImage(image.clone()).into());
                }
                Some(vec![Variant {
                    name: "given".into(),
                    image: Some(image.clone()),
                    ..Variant::base()
                }])
            } else {
                cli_series.as_ref().map(|s| {
                    vec![
                        Variant::base(),
                        Variant {
                            name: "patched".into(),
                            series: match s {
                                mmci::kernel::series::SeriesSource::Mbox(p)
                                | mmci::kernel::series::SeriesSource::PatchDir(p) => {
                                    Some(p.canonicalize().unwrap_or_else(|_| p.clone()))
                                }
                                _ => None,
                            },
                            lore: match s {
                                mmci::kernel::series::SeriesSource::Lore { message_id, .. } => {
                                    Some(message_id.clone())
                                }
                                _ => None,
                            },
                            github_pr: match s {
                                mmci::kernel::series::SeriesSource::GitHub {
                                    repo, number, ..
                                } => Some(format!("{repo}#{number}")),
                                _ => None,
                            },
                            patchwork: match s {
                                mmci::kernel::series::SeriesSource::Patchwork { url, series } => {
                                    Some(mmci::kernel::series::patchwork::SeriesRef {
                                        url: url.clone(),
                                        series: *series,
                                    })
                                }
                                _ => None,
                            },
                            from_command_line: true,
                            ..Variant::base()
                        },
                    ]
                })
            };
            let over = Overrides {
                sets,
                variants,
                repeats,
            };
            let plan = match &matrix {
                Some(path) => mmci::matrix::load(path, &over)?,
                None => mmci::matrix::default_plan(&over)?,
            };
            let capacity = match (guest_vcpus, guest_memory_mb) {
                (None, None) => None,
                (c, m) => {
                    let host = mmci::results::dir::Host::this();
                    let d =
                        mmci::matrix::schedule::capacity(host.cpus, host.memory_mb, oversubscribe);
                    Some(mmci::matrix::schedule::Capacity {
                        vcpus: c.unwrap_or(d.vcpus),
                        memory_mb: m.unwrap_or(d.memory_mb),
                    })
                }
            };
            let mut sources = mmci::pipeline::variant_sources(
                &plan,
                &base,
                &mmci::pipeline::Endpoints {
                    lore_url: kernel.lore_url.clone(),
                    github_api: kernel.github_api.clone(),
                    ..Default::default()
                },
                cli_series.as_ref(),
            );
            // The comparison's base kernel is the commit the series is applied on.
            kernel::pin_bases(&mut sources, &work).await;
            let opts = MatrixOptions {
                sources,
                work,
                results: results.unwrap_or_else(|| PathBuf::from("mmci-results").join(utc_stamp())),
                plan,
                shard,
                accel,
                timeout: timeout.map(Duration::from_secs),
                retries,
                parallel_builds,
                capacity,
                oversubscribe,
            };
            let outcome = mmci::run::executor::run_matrix(&opts).await?;
            // A single run gets its full metrics table.
            if let [(_, Some(run))] = outcome.runs.as_slice() {
                println!("{}", mmci::report::run::render_run(run));
            }
            print!(
                "{}",
                mmci::report::runs_table::render_kernels(&outcome.manifest)
            );
            println!(
                "{}",
                mmci::report::runs_table::render_runs(&outcome.manifest, &outcome.runs)
            );
            println!(
                "results: {} ({} runs, {} kept from an earlier invocation, {:.0} s)",
                opts.results.display(),
                outcome.runs.len(),
                outcome.resumed,
                outcome.wall.as_secs_f64()
            );
            // With a baseline and candidates, the comparison is what the
            // user came for: print it (the run's exit code stays the runs').
            if outcome.manifest.plan.variants.len() > 1 {
                match analysis::analyse_dir(
                    &opts.results,
                    &Default::default(),
                    &analysis::Options::default(),
                ) {
                    Ok(c) => {
                        println!();
                        print!(
                            "{}",
                            mmci::report::comparison::render_fitted(
                                &c,
                                Some(mmci::report::comparison::terminal_width())
                            )
                        );
                        println!(
                            "(mmci analyse / mmci report {} for other options and formats)",
                            opts.results.display()
                        );
                    }
                    Err(e) => eprintln!("mmci: analysis skipped: {}", mmci::host::error_chain(&e)),
                }
            }
            Ok(error::matrix_exit_code(&outcome))
        }
        Command::Matrix {
            command:
                MatrixCommand::Show {
                    file,
                    shard,
                    sets,
                    oversubscribe,
                },
        } => {
            let over = Overrides {
                sets,
                ..Default::default()
            };
            let plan = match &file {
                Some(path) => mmci::matrix::load(path, &over)?,
                None => mmci::matrix::default_plan(&over)?,
            };
            let host = mmci::results::dir::Host::this();
            let cap = mmci::matrix::schedule::capacity(host.cpus, host.memory_mb, oversubscribe);
            print!("{}", mmci::matrix::show::render(&plan, shard, cap));
            Ok(exit::OK)
        }
        Command::Merge { into, dirs } => {
            let m = mmci::results::dir::merge(&dirs, &into)?;
            let runs = mmci::results::dir::all_runs(&into).len();
            println!(
                "merged {} dir(s) into {}: plan {}, {} runs, shards {}",
                dirs.len(),
                into.display(),
                m.plan_id,
                runs,
                mmci::results::dir::shards_text(&m.shards)
            );
            Ok(exit::OK)
        }
        Command::Analyse {
            dir,
            analysis: args,
            json,
            wide,
        } => {
            let c = args.analyse(&dir)?;
            if let Some(path) = &json {
                analysis::write_json(path, &c)?;
            }
            let width = (!wide).then(mmci::report::comparison::terminal_width);
            print!("{}", mmci::report::comparison::render_fitted(&c, width));
            if let Some(path) = &json {
                println!("json: {}", path.display());
            }
            Ok(error::verdict_exit_code(c.verdict.status))
        }
        Command::Report {
            dir,
            format,
            output,
            results_url,
            cover_letter,
            tested_by,
            github_summary,
            analysis: args,
        } => {
            let c = args.analyse(&dir)?;
            let cover = match &cover_letter {
                Some(p) => Some(std::fs::read_to_string(p).map_err(|e| {
                    AppError::BadOption(format!("--cover-letter {}: {e}", p.display()))
                })?),
                None => None,
            };
            let written = mmci::report::write_report(
                &dir,
                &c,
                format,
                output.as_deref(),
                results_url,
                cover,
                tested_by,
                github_summary,
            )
            .map_err(AppError::BadOption)?;
            for w in written {
                eprintln!("mmci: wrote {w}");
            }
            Ok(exit::OK)
        }
        Command::Bench {
            command: BenchCommand::Analysis { runs, rounds },
        } => {
            let b = mmci::bench::analysis::analysis(runs, rounds);
            print!("{}", mmci::bench::analysis::render(&b));
            Ok(exit::OK)
        }
        Command::Series {
            command: SeriesCommand::Show(a),
        } => series_show(&a, &work).await,
        Command::Bench {
            command: BenchCommand::Series { corpus, rounds },
        } => {
            let dir = corpus.unwrap_or_else(|| {
                PathBuf::from(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/lore-threads"
                ))
            });
            let b = mmci::bench::series::run(&dir, rounds)
                .map_err(|e| AppError::BadOption(format!("--corpus {}: {e}", dir.display())))?;
            print!("{}", mmci::bench::series::render(&b));
            Ok(exit::OK)
        }
        Command::Image {
            command:
                ImageCommand::Build {
                    name,
                    images,
                    offline,
                    timeout,
                },
        } => {
            let opts = mmci::guest::image::BuildOptions {
                refresh: !offline,
                timeout: Duration::from_secs(timeout),
            };
            let b = mmci::guest::image::ensure(&images.recipe_dir(&name), &work, &opts).await?;
            eprintln!(
                "mmci: image {} {} in {:.1} s (resolving {:.1} s): {} packages, {:.1} MiB, sha256 {}",
                b.manifest.name,
                if b.cached { "cached" } else { "built" },
                b.total_s,
                b.resolve_s,
                b.manifest.packages.len(),
                b.manifest.size_bytes as f64 / 1048576.0,
                b.manifest.sha256
            );
            println!("{}", b.path.display());
            Ok(exit::OK)
        }
        Command::Image {
            command: ImageCommand::Show { name, images },
        } => {
            let recipe = mmci::guest::image::recipe::load(&images.recipe_dir(&name))
                .map_err(mmci::guest::image::ImageError::from)?;
            let (path, m) = mmci::guest::image::build::latest(&work, &recipe.name)?;
            print!("{}", mmci::guest::image::show::render(&m, &path));
            Ok(exit::OK)
        }
        Command::Kernel {
            command: KernelCommand::Build { kernel: k },
        } => {
            let info = kernel::prepare(&k.source()?, k.arch.unwrap_or_default(), &work).await?;
            if let Some(b) = info.series.as_ref().and_then(|s| s.base.as_ref()) {
                eprintln!("mmci: series applied on {} {}: {}", b.name, b.commit, b.how);
            }
            println!("{}", info.image.display());
            Ok(exit::OK)
        }
        Command::Doctor { probe } => {
            let checks = doctor::checks();
            let accel_line = if probe {
                let k = KernelSource::bundled();
                let info = kernel::prepare(&k, Arch::X86_64, &work).await?;
                let guest = mmci::guest::bin::guest_init(Arch::X86_64).unwrap_or_default();
                let c = accel::choose(
                    AccelRequest::Auto,
                    Arch::X86_64,
                    &info,
                    guest,
                    &work.scratch(),
                )
                .await;
                format!("{} ({})", c.accel, c.note)
            } else {
                match accel::static_choice(AccelRequest::Auto, Arch::X86_64) {
                    Some(c) => format!("{} ({})", c.accel, c.note),
                    None => {
                        "kvm device present; `mmci doctor --probe` boots a guest to test it".into()
                    }
                }
            };
            let (text, ok) = doctor::render(&checks, &accel_line);
            print!("{text}");
            println!("work dir: {}", work.root().display());
            Ok(if ok { exit::OK } else { exit::ENVIRONMENT })
        }
        Command::Watch(a) => {
            use mmci::post::github;
            use mmci::watch::{Action, Source};
            let pw_source = match (&a.patchwork, &a.project) {
                (Some(url), Some(project)) => Some(mmci::watch::patchwork::Source {
                    url: mmci::kernel::series::patchwork::check_url("--patchwork", url)
                        .map_err(|e| AppError::BadOption(e.to_string()))?,
                    project: project.clone(),
                    since: match &a.pw_since {
                        Some(s) => {
                            mmci::watch::patchwork::check_since(s).map_err(AppError::BadOption)?
                        }
                        None => mmci::watch::patchwork::default_since(github::now()),
                    },
                    limits: rate_limits(a.rate_limit_wait),
                }),
                _ => None,
            };
            let source = match (&a.atom, &a.mbox, &a.maildir) {
                (Some(url), _, _) => {
                    fetch::check_base_url("--atom", url)
                        .map_err(|e| AppError::BadOption(e.to_string()))?;
                    fetch::check_base_url("--lore-url", &a.lore_url)
                        .map_err(|e| AppError::BadOption(e.to_string()))?;
                    Some(Source::Atom {
                        url: url.clone(),
                        lore_url: a.lore_url.clone(),
                    })
                }
                (_, Some(p), _) => Some(Source::Mbox(p.clone())),
                (_, _, Some(d)) => Some(Source::Maildir(d.clone())),
                // The patchwork source, which has a pass of its own.
                _ => None,
            };
            let gh = |e: github::GitHubError| AppError::Watch(e.into());
            let action = match &a.dispatch {
                Some(repo) => {
                    let api = github_api(a.api.as_deref()).map_err(gh)?;
                    let auth = if a.dry_run {
                        None
                    } else {
                        Some(
                            github::AuthOptions {
                                token_env: a.token_env.clone(),
                                token_file: a.token_file.clone(),
                                ..Default::default()
                            }
                            .resolve()
                            .map_err(gh)?,
                        )
                    };
                    Action::Dispatch {
                        api,
                        repo: repo.parse().map_err(gh)?,
                        auth,
                    }
                }
                None => Action::Run {
                    mmci: std::env::current_exe().map_err(|e| {
                        AppError::BadOption(format!("cannot find the mmci binary: {e}"))
                    })?,
                    results: a.results.clone(),
                    args: a.run_args.clone(),
                },
            };
            let state = a
                .state
                .clone()
                .unwrap_or_else(|| work.root().join("watch/state.json"));
            let fetcher = fetch::Fetcher::default();
            loop {
                let lines = match (&source, &pw_source) {
                    (None, Some(src)) => {
                        mmci::watch::patchwork::pass(
                            src,
                            &a.paths,
                            &action,
                            &state,
                            a.dry_run,
                            Duration::from_secs(a.run_timeout),
                        )
                        .await?
                    }
                    (Some(source), _) => {
                        mmci::watch::pass(source, &a.paths, &action, &state, a.dry_run, &fetcher)
                            .await?
                    }
                    (None, None) => unreachable!("clap requires a source"),
                };
                for l in &lines {
                    println!("{l}");
                }
                match a.interval {
                    Some(s) => tokio::time::sleep(Duration::from_secs(s.max(1))).await,
                    None => break,
                }
            }
            Ok(exit::OK)
        }
        Command::Post {
            command: PostCommand::Github(a),
        } => {
            let job = github_post(&a)?;
            print!("{}", mmci::post::post_github(&job).await?);
            Ok(exit::OK)
        }
        Command::Post {
            command: PostCommand::Patchwork(a),
        } => {
            let job = patchwork_post(&a).await?;
            print!(
                "{}",
                mmci::post::patchwork::post(&job)
                    .await
                    .map_err(mmci::post::PostError::from)?
            );
            Ok(exit::OK)
        }
        Command::Post {
            command: PostCommand::Email(a),
        } => {
            let job = email_post(&a).await?;
            print!("{}", mmci::post::post_email(&job).await?);
            Ok(exit::OK)
        }
        Command::Bench {
            command: BenchCommand::Matrix { cells, rounds },
        } => {
            let b = mmci::bench::matrix::expansion(cells, rounds)?;
            print!("{}", mmci::bench::matrix::render_expansion(&b));
            Ok(exit::OK)
        }
        Command::Bench {
            command:
                BenchCommand::Schedule {
                    guests,
                    vcpus,
                    duration_s,
                    accel,
                },
        } => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            let b = mmci::bench::matrix::packing(
                &work,
                guests,
                vcpus.unwrap_or(cores),
                accel,
                duration_s,
            )
            .await?;
            print!("{}", mmci::bench::matrix::render_packing(&b));
            Ok(if b.failures.is_empty() {
                exit::OK
            } else {
                exit::RUN_FAILED
            })
        }
        Command::Bench {
            command:
                BenchCommand::Build {
                    arch,
                    tarball,
                    jobs,
                    rounds,
                },
        } => {
            let jobs =
                jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
            let b = mmci::bench::boot::build(arch, &work, &tarball, jobs, rounds).await?;
            print!("{}", mmci::bench::boot::render_build(&b, arch));
            Ok(exit::OK)
        }
        Command::Bench {
            command:
                BenchCommand::Boot {
                    kernel: k,
                    runs,
                    accel,
                },
        } => {
            let arch = k.arch.unwrap_or_default();
            let guest_init = mmci::pipeline::guest_prerequisites(arch)?;
            let results = work.scratch().join("bench-boot");
            let info = kernel::prepare(&k.source()?, arch, &work).await?;
            let choice = accel::choose(accel, arch, &info, guest_init, &work.scratch()).await;
            let b = mmci::bench::boot::boot(
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
            print!("{}", mmci::bench::boot::render(&b, &choice));
            let _ = std::fs::remove_dir_all(&results);
            Ok(if b.failures.is_empty() {
                exit::OK
            } else {
                exit::RUN_FAILED
            })
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            print_error(&e);
            return ExitCode::from(exit::ENVIRONMENT as u8);
        }
    };
    let code = runtime.block_on(async {
        // Listen before any work starts: a Ctrl-C that arrives while the first
        // guest boots must still stop everything and exit 130, not kill us
        // with the default action and leave the result half-written.
        let mut interrupt = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                print_error(&e);
                return exit::ENVIRONMENT;
            }
        };
        let mut terminate = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => {
                print_error(&e);
                return exit::ENVIRONMENT;
            }
        };
        tokio::select! {
            biased;
            _ = interrupt.recv() => {
                eprintln!("mmci: interrupted; stopping every guest and build");
                exit::INTERRUPTED
            }
            _ = terminate.recv() => {
                eprintln!("mmci: terminated; stopping every guest and build");
                exit::INTERRUPTED
            }
            r = real_main(cli) => match r {
                Ok(code) => code,
                Err(e) => {
                    print_error(&e);
                    e.exit_code()
                }
            },
        }
    });
    // Whatever is still running belongs to us: no QEMU or make outlives mmci.
    mmci::host::process::kill_all();
    drop(runtime);
    ExitCode::from(code as u8)
}
