//! `mmci run`: its options into a [`RunRequest`] (the machine options as
//! `--set`s, the command line's kernel and series as the variants), the
//! executor's options built from it by [`request::matrix_options`], the run,
//! and what is printed after it; and `mmci matrix show`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Subcommand;

use super::help;
use super::kernel::KernelArgs;
use crate::analysis;
use crate::error::{self, exit, AppError};
use crate::host::paths::WorkDir;
use crate::matrix::plan::budget::BLOCK_REPEATS;
use crate::matrix::{Overrides, Plan, Shard, Variant};
use crate::results::dir::{self as rd, Manifest};
use crate::run::accel::AccelRequest;
use crate::run::request::{self, Endpoints, RunRequest};
use crate::series::SeriesSpec;

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub kernel: KernelArgs,
    /// Matrix file (YAML) [default: the embedded matrix/default.yaml].
    #[arg(long, help_heading = help::MATRIX)]
    pub matrix: Option<PathBuf>,
    /// Run only this deterministic slice of the cells: I/N (1-based).
    #[arg(long, value_name = "I/N", help_heading = help::MATRIX)]
    pub shard: Option<Shard>,
    /// Runs per cell and kernel, instead of the matrix's.
    #[arg(long, help_heading = help::MATRIX)]
    pub repeats: Option<u32>,
    /// Sequential budget: a cell whose verdict is still close (a guard's interval on its
    /// floor) gets more runs, 5 a kernel at a time, up to N a kernel, instead of a coin
    /// toss at the floor; 0 or the repeats: none; not with --shard [default: the matrix's
    /// max_repeats, else 15]
    #[arg(long, value_name = "N", help_heading = help::MATRIX)]
    pub max_repeats: Option<u32>,
    /// Where results go; rerunning with the same dir resumes [default: ./mmci-results/<UTC time>]
    #[arg(long, help_heading = help::OUTPUT)]
    pub results: Option<PathBuf>,
    /// vCPUs of every guest, instead of the matrix's.
    #[arg(long, help_heading = help::MACHINE)]
    pub vcpus: Option<u32>,
    /// Guest RAM in MiB, instead of the matrix's.
    #[arg(long, help_heading = help::MACHINE)]
    pub memory_mb: Option<u64>,
    /// Swap disk size in MiB, instead of the matrix's.
    #[arg(long, help_heading = help::MACHINE)]
    pub swap_mb: Option<u64>,
    /// Guest job parameter KEY=VALUE for every cell (threads, working_set_mb,
    /// duration_s, memcg_max_mb, swap, swap_delay_ms, mglru, ...); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", help_heading = help::MATRIX)]
    pub sets: Vec<String>,
    /// Guest accelerator: auto (KVM if a probe guest really runs under it, else TCG), kvm, tcg, or
    /// tcg-icount (TCG whose guest clock counts instructions, not host time; its timings are
    /// functional only as under TCG, see docs/accel.md).
    #[arg(long, value_enum, default_value = "auto", help_heading = help::MACHINE)]
    pub accel: AccelRequest,
    /// Kill a guest after this many seconds [default: 90 + 4 x duration_s]
    #[arg(long, help_heading = help::MACHINE)]
    pub timeout: Option<u64>,
    /// Extra attempts after an infra failure.
    #[arg(long, default_value_t = 1, help_heading = help::SCHEDULING)]
    pub retries: u32,
    /// Kernel builds at a time.
    #[arg(long, default_value_t = 1, help_heading = help::SCHEDULING)]
    pub parallel_builds: usize,
    /// Guest vCPUs per host core that may run at once.
    #[arg(long, default_value_t = 1.0, help_heading = help::SCHEDULING)]
    pub oversubscribe: f64,
    /// Guest vCPUs that may run at once [default: host cores x --oversubscribe].
    #[arg(long, help_heading = help::SCHEDULING)]
    pub guest_vcpus: Option<u32>,
    /// Guest RAM (MiB) that may be in use at once [default: host RAM - 1 GiB].
    #[arg(long, help_heading = help::SCHEDULING)]
    pub guest_memory_mb: Option<u64>,
    /// Seed of the run order: within each cell and repeat the kernels run in
    /// an order shuffled by it [default: a fresh one, recorded in the results
    /// dir; a resumed dir keeps its own].
    #[arg(long, value_name = "N", help_heading = help::SCHEDULING)]
    pub seed: Option<u64>,
}

#[derive(Subcommand)]
pub enum MatrixCommand {
    /// Print the validated plan of a matrix and its cost estimate.
    Show {
        /// Matrix file [default: the embedded matrix/default.yaml].
        file: Option<PathBuf>,
        /// Show only this deterministic slice of the cells: I/N (1-based),
        /// as `mmci run --shard` would run it.
        #[arg(long, value_name = "I/N")]
        shard: Option<Shard>,
        /// Guest job parameter KEY=VALUE for every cell, as `mmci run --set`; repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Guest vCPUs per host core that may run at once, for the cost
        /// estimate (as `mmci run --oversubscribe`).
        #[arg(long, default_value_t = 1.0)]
        oversubscribe: f64,
    },
}

/// The machine options as `--set`s, before the given ones: they apply to
/// every cell like any other set, and a `--set` of the same key wins.
pub fn machine_sets(a: &RunArgs) -> Vec<String> {
    let mut sets = a.sets.clone();
    for (k, v) in [
        ("arch", a.kernel.arch.map(|a| a.to_string())),
        ("vcpus", a.vcpus.map(|v| v.to_string())),
        ("memory_mb", a.memory_mb.map(|v| v.to_string())),
        ("swap_mb", a.swap_mb.map(|v| v.to_string())),
    ] {
        if let Some(v) = v {
            sets.insert(0, format!("{k}={v}"));
        }
    }
    sets
}

/// The kernels the command line replaces the matrix's with: `--kernel`
/// alone as `given`, or a series as `base` and `patched`; `None` keeps
/// the matrix's.
pub fn command_line_variants(
    image: Option<&Path>,
    series: Option<&SeriesSpec>,
) -> Option<Vec<Variant>> {
    if let Some(image) = image {
        return Some(vec![Variant {
            name: "given".into(),
            image: Some(image.to_path_buf()),
            ..Variant::base()
        }]);
    }
    let s = series?;
    Some(vec![
        Variant::base(),
        Variant {
            name: "patched".into(),
            // A path as an absolute one, so reports say which file it was.
            series: Some(match s {
                SeriesSpec::Mbox(p) | SeriesSpec::PatchDir(p) => {
                    SeriesSpec::from_path(&p.canonicalize().unwrap_or_else(|_| p.clone()))
                }
                // The token stays with the kernel's source, out of the plan.
                SeriesSpec::GitHub {
                    api, repo, number, ..
                } => SeriesSpec::GitHub {
                    api: api.clone(),
                    repo: repo.clone(),
                    number: *number,
                    token: None,
                },
                _ => s.clone(),
            }),
            from_command_line: true,
            ..Variant::base()
        },
    ])
}

/// `./mmci-results/<UTC time>`, where results go without `--results`.
fn default_results() -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d, hh, mm, ss) = crate::post::email::civil(secs);
    PathBuf::from("mmci-results").join(format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}"))
}

/// `mmci run`'s options as the library's request. Checks the series
/// options and a `--kernel` image before anything is read.
pub fn run_request(a: RunArgs) -> Result<RunRequest, AppError> {
    let sets = machine_sets(&a);
    let base = a.kernel.source()?;
    if let Some(image) = &a.kernel.kernel {
        if !image.is_file() {
            return Err(crate::kernel::KernelError::MissingImage(image.clone()).into());
        }
    }
    let mut variants = command_line_variants(a.kernel.kernel.as_deref(), base.series.as_ref());
    // `--revision` and `--patches` are part of what the plan runs (its
    // fingerprint: a results dir of v1 is not resumed with v2) and of the
    // command that reruns it.
    for v in variants
        .iter_mut()
        .flatten()
        .filter(|v| v.from_command_line)
    {
        v.revision = base.series_revision;
        v.patches = base.series_patches.clone();
    }
    // A shard's comparison is partial: it cannot say which cells of the
    // whole matrix need more runs, so shards run the planned repeats.
    if let (Some(shard), Some(n)) = (a.shard, a.max_repeats.filter(|n| *n > 0)) {
        return Err(AppError::BadOption(format!(
            "--max-repeats {n} with --shard {shard}: the sequential budget decides on the whole \
             matrix's comparison, which a shard does not have; drop --max-repeats (a shard runs \
             the planned repeats)"
        )));
    }
    Ok(RunRequest {
        matrix: a.matrix,
        overrides: Overrides {
            sets,
            variants,
            repeats: a.repeats,
            max_repeats: match a.shard {
                Some(_) => Some(0),
                None => a.max_repeats,
            },
        },
        endpoints: Endpoints {
            lore_url: a.kernel.series_from.lore_url.clone(),
            github_api: a
                .kernel
                .series_from
                .github
                .api(&super::env_var)
                .map_err(|e| AppError::BadOption(e.to_string()))?,
            github_token: a
                .kernel
                .series_from
                .github
                .optional_token(&super::env_var)?,
        },
        base,
        results: a.results.unwrap_or_else(default_results),
        shard: a.shard,
        accel: a.accel,
        timeout: a.timeout.map(Duration::from_secs),
        retries: a.retries,
        parallel_builds: a.parallel_builds,
        guest_vcpus: a.guest_vcpus,
        guest_memory_mb: a.guest_memory_mb,
        oversubscribe: a.oversubscribe,
        seed: a.seed,
    })
}

/// `mmci run`: the matrix, then the runs table, and with candidates the
/// comparison and its verdict; the exit code is the verdict's after a
/// kernel or infra failure ([`error::run_exit_code`]).
pub async fn run(a: RunArgs, work: WorkDir) -> Result<i32, AppError> {
    let opts = request::matrix_options(run_request(a)?, work).await?;
    let mut outcome = crate::run::executor::run_matrix(&opts).await?;
    // The budget in force is this invocation's, and the analysis spends
    // the verdict's level over the looks it allows (Plan::looks): a dir
    // resumed under another budget records this one first.
    if opts.shard.is_none() && outcome.manifest.plan.max_repeats != opts.plan.max_repeats {
        outcome.manifest = record_added(&opts.results, opts.plan.max_repeats, &[])?;
    }
    // Kept from an earlier invocation, and the time, over every pass.
    let kept = outcome.resumed;
    let mut wall = outcome.wall;
    let compare = || {
        analysis::analyse_dir(
            &opts.results,
            &Default::default(),
            &analysis::Options::default(),
        )
    };
    let mut compared = (outcome.manifest.plan.variants.len() > 1).then(compare);
    // The sequential budget: while a cell's guard could be decided by more
    // runs and the cell has room under the budget, its next block is
    // recorded in the manifest and run (the executor resumes: only the new
    // runs start). Each pass adds at least one run to a cell below its
    // budget, so the loop ends. A shard has no budget (run_request).
    while let Some(Ok(c)) = &compared {
        let plan = budget_plan(&outcome.manifest.plan, opts.plan.max_repeats);
        let wanted = analysis::sequential::cells_wanting_runs(c, &plan, BLOCK_REPEATS);
        if wanted.is_empty() {
            break;
        }
        for (cell, n) in &wanted {
            let name = plan
                .cell(cell)
                .map_or(cell.as_str(), |c| match c.label.as_str() {
                    "" => &c.id,
                    label => label,
                });
            tracing::info!(
                "sequential budget: {name}: still undecided at {} runs a kernel; {n} more (up to {})",
                plan.repeats_of(cell),
                plan.max_repeats.unwrap_or(0)
            );
        }
        record_added(&opts.results, opts.plan.max_repeats, &wanted)?;
        outcome = crate::run::executor::run_matrix(&opts).await?;
        wall += outcome.wall;
        compared = Some(compare());
    }
    let budget = budget_plan(&outcome.manifest.plan, opts.plan.max_repeats);
    // A single run gets its full metrics table.
    if let [(_, Some(run))] = outcome.runs.as_slice() {
        println!("{}", crate::report::run::render_run(run));
    }
    print!(
        "{}",
        crate::report::runs_table::render_kernels(&outcome.manifest)
    );
    println!(
        "{}",
        crate::report::runs_table::render_runs(&outcome.manifest, &outcome.runs)
    );
    println!(
        "results: {} ({} runs, {} kept from an earlier invocation, {:.0} s{})",
        opts.results.display(),
        outcome.runs.len(),
        kept,
        wall.as_secs_f64(),
        outcome
            .manifest
            .plan
            .order_seed
            .map(|s| format!(", run order seed {s}"))
            .unwrap_or_default()
    );
    // With a baseline and candidates, the comparison is what the user came
    // for: print it. Its verdict is the exit code, as `mmci analyse` gives
    // it, except for a shard: its verdict is the merged dir's.
    let mut verdict = None;
    if let Some(compared) = compared {
        match compared {
            Ok(c) => {
                println!();
                print!(
                    "{}",
                    crate::report::comparison::render_fitted(
                        &c,
                        Some(crate::report::comparison::terminal_width(
                            std::env::var("COLUMNS").ok().as_deref()
                        ))
                    )
                );
                let needed = analysis::sequential::runs_needed(&budget, &c);
                if !needed.is_empty() {
                    println!(
                        "runs each cell needed (sequential budget: {}):",
                        budget.max_repeats.map_or("off".to_string(), |n| format!(
                            "up to {n} a kernel, {BLOCK_REPEATS} at a time"
                        ))
                    );
                    for line in needed {
                        println!("  {line}");
                    }
                }
                println!(
                    "(mmci analyse / mmci report {} for other options and formats)",
                    opts.results.display()
                );
                verdict = Some(error::verdict_exit_code(c.verdict.status));
            }
            Err(e) => {
                eprintln!("mmci: analysis failed: {}", crate::host::error_chain(&e));
                verdict = Some(AppError::from(e).exit_code());
            }
        }
        if opts.shard.is_some() {
            if let Some(code) = verdict.take() {
                eprintln!(
                    "mmci: note: a shard's verdict is partial, so its exit code is the runs' (not {code}): \
                     the verdict is the merged dir's (`mmci merge`, then `mmci analyse`)"
                );
            }
        }
    }
    Ok(error::run_exit_code(
        error::matrix_exit_code(&outcome),
        verdict,
    ))
}

/// The results dir's plan (with the runs the budget added so far) under
/// this invocation's budget: the command line's and matrix's
/// `max_repeats`, which may differ from the one recorded by an earlier
/// invocation.
pub fn budget_plan(recorded: &Plan, max_repeats: Option<u32>) -> Plan {
    Plan {
        max_repeats,
        ..recorded.clone()
    }
}

/// Records `wanted`'s runs (cell id, runs a kernel) in the manifest of
/// `results` under the budget `max_repeats`, before they run: an
/// interrupted block is finished by the next `mmci run` on the dir.
pub fn record_added(
    results: &Path,
    max_repeats: Option<u32>,
    wanted: &[(String, u32)],
) -> Result<Manifest, AppError> {
    let mut m = rd::read_manifest(results)?.ok_or_else(|| {
        AppError::from(rd::ResultsDirError::Mismatch {
            path: results.to_path_buf(),
            what: "no manifest.json any more".into(),
        })
    })?;
    m.plan = budget_plan(&m.plan, max_repeats).with_added(wanted);
    rd::write_manifest(results, &m)?;
    Ok(m)
}

/// `mmci matrix ...`.
pub fn matrix(command: MatrixCommand) -> Result<i32, AppError> {
    match command {
        MatrixCommand::Show {
            file,
            shard,
            sets,
            oversubscribe,
        } => {
            let over = Overrides {
                sets,
                ..Default::default()
            };
            let plan = match &file {
                Some(path) => crate::matrix::load(path, &over)?,
                None => crate::matrix::default_plan(&over)?,
            };
            let host = crate::results::dir::Host::this();
            let cap = crate::matrix::schedule::capacity(host.cpus, host.memory_mb, oversubscribe);
            print!("{}", crate::matrix::show::render(&plan, shard, cap));
            Ok(exit::OK)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// `mmci run ARGS`'s options.
    fn run_args(args: &[&str]) -> RunArgs {
        let argv = ["mmci", "run"].iter().chain(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Run(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn machine_options_are_sets_before_the_given_ones() {
        let cases: &[(&[&str], &[&str])] = &[
            (&[], &[]),
            (&["--set", "threads=4"], &["threads=4"]),
            (
                &["--vcpus", "2", "--set", "threads=4", "--memory-mb", "512"],
                &["memory_mb=512", "vcpus=2", "threads=4"],
            ),
            (
                &["--arch", "arm64", "--swap-mb", "64", "--set", "vcpus=1"],
                &["swap_mb=64", "arch=arm64", "vcpus=1"],
            ),
        ];
        for (args, want) in cases {
            assert_eq!(machine_sets(&run_args(args)), *want, "{args:?}");
        }
    }

    /// `--kernel`, the series, and the variants they give.
    type Case<'a> = (
        Option<&'a Path>,
        Option<&'a SeriesSpec>,
        Option<Vec<Variant>>,
    );

    #[test]
    fn the_command_line_kernel_replaces_the_matrix_variants() {
        let patched = |f: &dyn Fn(&mut Variant)| {
            let mut v = Variant {
                name: "patched".into(),
                from_command_line: true,
                ..Variant::base()
            };
            f(&mut v);
            Some(vec![Variant::base(), v])
        };
        let lore = SeriesSpec::Lore {
            message_id: "a@b".into(),
            base_url: "https://lore.example".into(),
        };
        let pr = SeriesSpec::GitHub {
            api: "https://api.example".into(),
            repo: "o/r".into(),
            number: 5,
            token: Some("secret".into()),
        };
        let pw = SeriesSpec::Patchwork {
            url: "https://pw.example".into(),
            series: 7,
        };
        let mbox = SeriesSpec::Mbox("/nonexistent/s.mbox".into());
        let image = Path::new("/boot/bzImage");
        let cases: Vec<Case> = vec![
            (None, None, None),
            (
                Some(image),
                Some(&lore),
                Some(vec![Variant {
                    name: "given".into(),
                    image: Some(image.into()),
                    ..Variant::base()
                }]),
            ),
            (
                None,
                Some(&lore),
                patched(&|v| v.series = Some(lore.clone())),
            ),
            (
                None,
                Some(&pr),
                patched(&|v| {
                    v.series = Some(SeriesSpec::GitHub {
                        api: "https://api.example".into(),
                        repo: "o/r".into(),
                        number: 5,
                        token: None,
                    })
                }),
            ),
            (None, Some(&pw), patched(&|v| v.series = Some(pw.clone()))),
            // A path that cannot be made absolute stays as given.
            (
                None,
                Some(&mbox),
                patched(&|v| v.series = Some(mbox.clone())),
            ),
        ];
        for (image, series, want) in cases {
            assert_eq!(
                command_line_variants(image, series),
                want,
                "{image:?} {series:?}"
            );
        }
    }

    #[test]
    fn a_run_request_carries_the_options() {
        let r = run_request(run_args(&[
            "--lore",
            "a@b.example",
            "--lore-url",
            "http://127.0.0.1:9",
            "--repeats",
            "3",
            "--timeout",
            "60",
            "--guest-vcpus",
            "2",
            "--accel",
            "tcg",
            "--results",
            "r",
            "--revision",
            "2",
            "--patches",
            "1",
        ]))
        .unwrap();
        assert_eq!(r.results, PathBuf::from("r"));
        assert_eq!(r.overrides.repeats, Some(3));
        assert_eq!(r.timeout, Some(Duration::from_secs(60)));
        assert_eq!((r.guest_vcpus, r.guest_memory_mb), (Some(2), None));
        assert_eq!(r.accel, AccelRequest::Tcg);
        assert_eq!(r.endpoints.lore_url, "http://127.0.0.1:9");
        assert!(matches!(
            r.base.series,
            Some(SeriesSpec::Lore { ref message_id, .. }) if message_id == "a@b.example"
        ));
        let variants = r.overrides.variants.unwrap();
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["base", "patched"]);
        // The command line's revision and pick are its variant's, in the
        // plan (and its fingerprint), not only in how it is built.
        let picks: Vec<_> = variants
            .iter()
            .map(|v| (v.revision, v.patches.as_ref().map(|p| p.to_string())))
            .collect();
        assert_eq!(picks, [(None, None), (Some(2), Some("1".to_string()))]);
        // Without --results: a fresh dir under ./mmci-results.
        let r = run_request(run_args(&[])).unwrap();
        assert!(r.results.starts_with("mmci-results"), "{:?}", r.results);
        assert_eq!((r.retries, r.parallel_builds), (1, 1));
        assert!(r.overrides.variants.is_none());
    }

    #[test]
    fn a_missing_kernel_image_is_refused_before_any_work() {
        let e = run_request(run_args(&["--kernel", "/nonexistent/bzImage"])).unwrap_err();
        assert_eq!(e.exit_code(), exit::USAGE);
        assert!(e.to_string().contains("/nonexistent/bzImage"), "{e}");
    }
}
