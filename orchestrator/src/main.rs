//! The `mmci` command: parses the command line and calls into the library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};

use clap::{Parser, Subcommand};
use mmci::accel::{self, AccelRequest};
use mmci::analysis;
use mmci::app::{self, exit, AppError};
use mmci::arch::Arch;
use mmci::kernel::{self, KernelSource};
use mmci::matrix::{Overrides, Shard, Variant};
use mmci::matrix_run::MatrixOptions;
use mmci::paths::WorkDir;
use mmci::series::{fetch, SeriesSource};
use mmci::{bench, doctor, report};

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
    #[arg(long, default_value = mmci::tree::BUNDLED_TARBALL)]
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
    #[arg(long, conflicts_with_all = ["lore", "github_pr"])]
    series: Option<PathBuf>,
    /// Patch series from a lore thread: a message-id (or lore URL) of any mail in it.
    #[arg(long, value_name = "MESSAGE-ID", conflicts_with = "github_pr")]
    lore: Option<String>,
    /// public-inbox server for --lore.
    #[arg(long, default_value = mmci::series::fetch::LORE_URL)]
    lore_url: String,
    /// Patch series from a GitHub pull request: OWNER/REPO#NUMBER (token: $GITHUB_TOKEN).
    #[arg(long, value_name = "OWNER/REPO#N")]
    github_pr: Option<String>,
    /// GitHub API base URL for --github-pr (GitHub Enterprise: https://HOST/api/v3).
    #[arg(long, default_value = mmci::series::fetch::GITHUB_API)]
    github_api: String,
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
        Ok(None)
    }

    fn source(&self) -> Result<KernelSource, AppError> {
        let mut s = KernelSource::bundled();
        s.image = self.kernel.clone();
        s.tarball = self.tarball.clone();
        s.tree = self
            .tree
            .as_deref()
            .map(|t| mmci::tree::TreeSpec::parse(t, self.git_ref.as_deref()));
        s.fragments = self.config_fragments.clone();
        s.series = self.series()?;
        if let Some(j) = self.jobs {
            s.jobs = j;
        }
        Ok(s)
    }
}

#[derive(Subcommand)]
enum Command {
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
        /// Also write the whole comparison as JSON (format 1) to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Render the comparison of a results dir as GitHub markdown, a
    /// plain-text email for the patch thread, a self-contained HTML page or
    /// JSON. Exit 0 when the report was written, whatever the verdict.
    Report {
        /// A results dir of `mmci run` (or `mmci merge`).
        dir: PathBuf,
        #[arg(long, value_enum, default_value = "markdown")]
        format: mmci::render::Format,
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
        #[arg(long, default_value = mmci::render::DEFAULT_TESTED_BY)]
        tested_by: String,
        /// Also append the markdown report to $GITHUB_STEP_SUMMARY (when it is set).
        #[arg(long)]
        github_summary: bool,
        #[command(flatten)]
        analysis: AnalysisArgs,
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
enum KernelCommand {
    /// Build the kernel (or find it in the cache) and print its image path.
    Build {
        #[command(flatten)]
        kernel: KernelArgs,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Cold kernel build, cache hit and patched rebuild (one patch to
    /// mm/vmscan.c) side by side, against plain make. Takes two cold builds.
    Build {
        #[arg(long, default_value = "x86_64")]
        arch: Arch,
        #[arg(long, default_value = mmci::tree::BUNDLED_TARBALL)]
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
fn print_error(err: &dyn std::error::Error) {
    eprintln!("mmci: error: {}", mmci::app::error_chain(err));
}

fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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
                                mmci::series::SeriesSource::Mbox(p)
                                | mmci::series::SeriesSource::PatchDir(p) => {
                                    Some(p.canonicalize().unwrap_or_else(|_| p.clone()))
                                }
                                _ => None,
                            },
                            lore: match s {
                                mmci::series::SeriesSource::Lore { message_id, .. } => {
                                    Some(message_id.clone())
                                }
                                _ => None,
                            },
                            github_pr: match s {
                                mmci::series::SeriesSource::GitHub { repo, number, .. } => {
                                    Some(format!("{repo}#{number}"))
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
                    let host = mmci::results_dir::Host::this();
                    let d = mmci::schedule::capacity(host.cpus, host.memory_mb, oversubscribe);
                    Some(mmci::schedule::Capacity {
                        vcpus: c.unwrap_or(d.vcpus),
                        memory_mb: m.unwrap_or(d.memory_mb),
                    })
                }
            };
            let opts = MatrixOptions {
                sources: app::variant_sources(
                    &plan,
                    &base,
                    &app::Endpoints {
                        lore_url: kernel.lore_url.clone(),
                        github_api: kernel.github_api.clone(),
                        ..Default::default()
                    },
                    cli_series.as_ref(),
                ),
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
            let outcome = mmci::matrix_run::run_matrix(&opts).await?;
            // A single run gets its full metrics table.
            if let [(_, Some(run))] = outcome.runs.as_slice() {
                println!("{}", report::render_run(run));
            }
            print!("{}", mmci::matrix_report::render_kernels(&outcome.manifest));
            println!(
                "{}",
                mmci::matrix_report::render_runs(&outcome.manifest, &outcome.runs)
            );
            println!(
                "results: {} ({} runs, {} kept from an earlier invocation, {:.0} s)",
                opts.results.display(),
                outcome.runs.len(),
                outcome.resumed,
                outcome.wall.as_secs_f64()
            );
            Ok(app::matrix_exit_code(&outcome))
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
            let host = mmci::results_dir::Host::this();
            let cap = mmci::schedule::capacity(host.cpus, host.memory_mb, oversubscribe);
            print!("{}", mmci::matrix::show::render(&plan, shard, cap));
            Ok(exit::OK)
        }
        Command::Merge { into, dirs } => {
            let m = mmci::results_dir::merge(&dirs, &into)?;
            let runs = mmci::results_dir::all_runs(&into).len();
            println!(
                "merged {} dir(s) into {}: plan {}, {} runs, shards {}",
                dirs.len(),
                into.display(),
                m.plan_id,
                runs,
                mmci::results_dir::shards_text(&m.shards)
            );
            Ok(exit::OK)
        }
        Command::Analyse {
            dir,
            analysis: args,
            json,
        } => {
            let c = args.analyse(&dir)?;
            if let Some(path) = &json {
                analysis::write_json(path, &c)?;
            }
            print!("{}", analysis::terminal::render(&c));
            if let Some(path) = &json {
                println!("json: {}", path.display());
            }
            Ok(app::verdict_exit_code(c.verdict.status))
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
            let written = mmci::render::write_report(
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
            let b = analysis::bench::analysis(runs, rounds);
            print!("{}", analysis::bench::render(&b));
            Ok(exit::OK)
        }
        Command::Kernel {
            command: KernelCommand::Build { kernel: k },
        } => {
            let info = kernel::prepare(&k.source()?, k.arch.unwrap_or_default(), &work).await?;
            println!("{}", info.image.display());
            Ok(exit::OK)
        }
        Command::Doctor { probe } => {
            let checks = doctor::checks();
            let accel_line = if probe {
                let k = KernelSource::bundled();
                let info = kernel::prepare(&k, Arch::X86_64, &work).await?;
                let guest = mmci::guest_bin::guest_init(Arch::X86_64).unwrap_or_default();
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
        Command::Bench {
            command: BenchCommand::Matrix { cells, rounds },
        } => {
            let b = mmci::bench_matrix::expansion(cells, rounds)?;
            print!("{}", mmci::bench_matrix::render_expansion(&b));
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
            let b = mmci::bench_matrix::packing(
                &work,
                guests,
                vcpus.unwrap_or(cores),
                accel,
                duration_s,
            )
            .await?;
            print!("{}", mmci::bench_matrix::render_packing(&b));
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
            let b = bench::build(arch, &work, &tarball, jobs, rounds).await?;
            print!("{}", bench::render_build(&b, arch));
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
            let guest_init = app::guest_prerequisites(arch)?;
            let results = work.scratch().join("bench-boot");
            let info = kernel::prepare(&k.source()?, arch, &work).await?;
            let choice = accel::choose(accel, arch, &info, guest_init, &work.scratch()).await;
            let b = bench::boot(
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
            print!("{}", bench::render(&b, &choice));
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
    mmci::process::kill_all();
    drop(runtime);
    ExitCode::from(code as u8)
}
