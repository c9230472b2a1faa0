//! What is done with a results dir: `merge` (shards into one), `analyse`
//! (the comparison and its verdict as the exit code) and `report` (the
//! comparison rendered), with the analysis options they share.

use std::path::{Path, PathBuf};

use crate::analysis;
use crate::error::{self, exit, AppError};

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The merged results dir (written).
    #[arg(long, value_name = "DIR", required_unless_present = "into")]
    pub results: Option<PathBuf>,
    /// The shards' results dirs (of `mmci run --shard I/N`), two or more.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Old spelling of --results (deprecated).
    #[arg(long, hide = true, value_name = "DIR", conflicts_with = "results")]
    pub into: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct AnalyseArgs {
    /// The results dir of `mmci run` (or `mmci merge`).
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Old spelling of --results DIR: the dir as an argument (deprecated).
    #[arg(hide = true, conflicts_with = "results")]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Print the whole comparison as JSON (format 4) instead of the table.
    /// (`--json FILE`, deprecated: write FILE and print the table.)
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub json: Option<Option<PathBuf>>,
    /// Write the output (the table, or the JSON with --json) to this file
    /// instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Every column of the comparison table, however wide (by default
    /// it is fitted to the terminal, or to 100 columns in a log).
    #[arg(long)]
    pub wide: bool,
    /// Instead of the comparison: each metric's spread over each kernel's
    /// repeats of each cell (median, mean, sd, coefficient of variation);
    /// one kernel is enough. With --json, the rows as JSON. The comparison's
    /// options (--alpha, --expect, ...) are refused with it: a spread has no
    /// test to give them to.
    #[arg(long, conflicts_with_all = [
        "alpha", "noise_floor", "metric_noise_floors", "min_runs", "test", "expect", "wide",
    ])]
    pub spread: bool,
    /// Instead of the comparison: the verdict's operating characteristic
    /// on this dir's runs. Draws N verdicts of --per-side runs a side
    /// (without replacement, seeded), each decided as a real verdict with
    /// no budget, and counts them by status and each guard by decision.
    /// On an A/A dir (the same kernel on both sides) every FAIL is false.
    #[arg(long, value_name = "N", conflicts_with_all = ["spread", "wide"])]
    pub resample: Option<usize>,
    /// Runs a side each resampled verdict draws.
    #[arg(long, value_name = "K", default_value_t = 5, requires = "resample")]
    pub per_side: u32,
    /// The resampling's seed (the same seed draws the same verdicts).
    #[arg(long, value_name = "S", default_value_t = 1, requires = "resample")]
    pub seed: u64,
    /// Raise the candidate's swap-in, swap-out, major fault and anon
    /// refault counters of every drawn run by this fraction (0.1 = +10%):
    /// a regression of known size on the dir's real noise.
    #[arg(
        long,
        value_name = "FRACTION",
        default_value_t = 0.0,
        requires = "resample"
    )]
    pub inflate: f64,
    /// Decide each drawn verdict at the level one look of a budget with
    /// this many looks spends (1: no budget; 3: 5 runs a kernel and a
    /// budget of 15, so `--per-side 15 --looks 3` is the budget's last look).
    #[arg(long, value_name = "L", default_value_t = 1, requires = "resample")]
    pub looks: usize,
    /// The old `--json FILE`, folded (see [`super::deprecated`]): write
    /// FILE, print the table.
    #[arg(skip)]
    pub json_and_table: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The results dir of `mmci run` (or `mmci merge`).
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Old spelling of --results DIR: the dir as an argument (deprecated).
    #[arg(hide = true, conflicts_with = "results")]
    pub dir: Option<PathBuf>,
    /// markdown (GitHub check run and comment), email (plain text for the
    /// patch thread), html (one self-contained page) or json (format 4).
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: crate::report::Format,
    /// The report as JSON (format 4): `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the report here instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Where the full results are (URL or path), linked from the report.
    #[arg(long, value_name = "URL")]
    pub results_url: Option<String>,
    /// The series' cover letter (a text file); the email quotes its first lines.
    #[arg(long, value_name = "FILE")]
    pub cover_letter: Option<PathBuf>,
    /// Add a Tested-by: trailer to the email: NAME <ADDR>, or alone for
    /// `mmci <mmci@kernel-ci.invalid>`. Only on a PASS not all under TCG:
    /// never on INCONCLUSIVE, NO VERDICT or FAIL (left out with a note).
    #[arg(long, value_name = "NAME <ADDR>", num_args = 0..=1,
          default_missing_value = crate::report::DEFAULT_TESTED_BY)]
    pub tested_by: Option<String>,
    /// Who the email comes from: its Reported-by: on a FAIL [default:
    /// $MMCI_EMAIL_FROM, else mmci <mmci@kernel-ci.invalid>]. Give
    /// `mmci post email` the same --from.
    #[arg(long, value_name = "NAME <ADDR>")]
    pub from: Option<String>,
    /// The email's Message-ID, named by its Closes: on a FAIL [default: a
    /// fresh one at --from's domain, which `mmci post email --body` reads
    /// back from the Closes: line].
    #[arg(long, value_name = "ID")]
    pub message_id: Option<String>,
    /// Also append the markdown report to $GITHUB_STEP_SUMMARY (when it is set).
    #[arg(long)]
    pub github_summary: bool,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

/// The knobs of the analysis, shared by `analyse` and `report`.
#[derive(clap::Args, Clone)]
pub struct AnalysisArgs {
    /// Significance level.
    #[arg(long, default_value_t = 0.01)]
    pub alpha: f64,
    /// Smallest relative change that counts, for metrics without their own.
    #[arg(long, default_value_t = 0.05)]
    pub noise_floor: f64,
    /// One metric's noise floor, METRIC=FRACTION; repeatable.
    #[arg(long = "metric-noise-floor", value_name = "METRIC=FRACTION")]
    pub metric_noise_floors: Vec<String>,
    /// Completed runs a side below which expectations are inconclusive.
    #[arg(long, default_value_t = 3)]
    pub min_runs: usize,
    /// The test that decides significance (both are shown).
    #[arg(long, value_enum, default_value = "mann-whitney")]
    pub test: analysis::Test,
    /// An expectation added to (or replacing) the matrix's:
    /// METRIC=KIND or METRIC=KIND:THRESHOLD; repeatable.
    #[arg(long = "expect", value_name = "METRIC=KIND[:THRESHOLD]")]
    pub expect: Vec<String>,
}

impl AnalysisArgs {
    pub fn analyse(&self, dir: &Path) -> Result<analysis::Comparison, AppError> {
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

/// The results dir a command reads, as `--results` gave it (old
/// spellings already folded in), or the error that asks for it.
fn results_dir(command: &str, given: Option<&Path>) -> Result<PathBuf, AppError> {
    given.map(Path::to_path_buf).ok_or_else(|| {
        AppError::BadOption(format!(
            "{command}: give the results dir with --results DIR (the --results of `mmci run` or `mmci merge`)"
        ))
    })
}

/// `mmci analyse --resample N`: the verdict's operating characteristic on
/// the dir's runs (`analysis::resample`).
fn resample(a: &AnalyseArgs, dir: &Path, verdicts: usize) -> Result<i32, AppError> {
    if verdicts == 0 || !(a.inflate.is_finite() && a.inflate > -1.0) || a.per_side < 2 {
        return Err(AppError::BadOption(format!(
            "--resample {verdicts} --per-side {} --inflate {}: give at least 1 verdict of at least 2 runs a side, and a fraction above -1",
            a.per_side, a.inflate
        )));
    }
    let opts = analysis::options_from_args(
        a.analysis.alpha,
        a.analysis.noise_floor,
        &a.analysis.metric_noise_floors,
        a.analysis.min_runs,
        a.analysis.test,
    )
    .map_err(AppError::BadOption)?;
    let m = crate::results::dir::read_manifest(dir)
        .map_err(|e| AppError::BadOption(format!("--results {}: {e}", dir.display())))?
        .ok_or_else(|| {
            AppError::BadOption(format!(
                "--results {}: not a results dir (no manifest.json)",
                dir.display()
            ))
        })?;
    let (runs, _) = crate::results::dir::runs_checked(dir);
    let d = analysis::resample::Draws {
        verdicts,
        per_side: a.per_side,
        seed: a.seed,
        inflate: a.inflate,
        looks: a.looks.max(1),
    };
    let oc = analysis::resample::resample(&m, &runs, &opts, d)
        .map_err(|e| AppError::BadOption(format!("--resample: {}: {e}", dir.display())))?;
    let text = if a.json.is_some() {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&oc).expect("serializable")
        )
    } else {
        crate::report::resample::render(&oc, a.seed)
    };
    match &a.output {
        Some(path) => crate::host::fs::write_atomic(path, text.as_bytes())
            .map_err(|e| AppError::BadOption(format!("--output {}: {e}", path.display())))?,
        None => print!("{text}"),
    }
    Ok(crate::error::exit::OK)
}

/// `mmci merge`.
pub fn merge(a: &MergeArgs) -> Result<i32, AppError> {
    let into = results_dir("merge", a.results.as_deref())?;
    let into = into.as_path();
    let dirs = &a.dirs;
    let m = crate::results::dir::merge(dirs, into)?;
    let runs = crate::results::dir::all_runs(into).len();
    println!(
        "merged {} dir(s) into {}: plan {}, {} runs, shards {}",
        dirs.len(),
        into.display(),
        m.plan_id,
        runs,
        crate::results::dir::shards_text(&m.shards)
    );
    Ok(exit::OK)
}

/// `mmci analyse`: the verdict is the exit code.
pub fn analyse(a: &AnalyseArgs) -> Result<i32, AppError> {
    let dir = results_dir("analyse", a.results.as_deref())?;
    if a.spread {
        return spread(a, &dir);
    }
    if let Some(n) = a.resample {
        return resample(a, &dir, n);
    }
    let c = a.analysis.analyse(&dir)?;
    if let Some(path) = &a.json_and_table {
        analysis::write_json(path, &c)?;
    }
    let text = if a.json.is_some() {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&c).expect("serializable")
        )
    } else {
        let width = (!a.wide && a.output.is_none()).then(|| {
            crate::report::comparison::terminal_width(std::env::var("COLUMNS").ok().as_deref())
        });
        let mut t = crate::report::comparison::render_fitted(&c, width);
        if let Some(path) = &a.json_and_table {
            t.push_str(&format!("json: {}\n", path.display()));
        }
        t
    };
    write_output(a.output.as_deref(), &text)?;
    Ok(error::verdict_exit_code(c.verdict.status))
}

/// `text` into `--output`'s file, else on standard output.
fn write_output(output: Option<&Path>, text: &str) -> Result<(), AppError> {
    match output {
        Some(path) => crate::host::fs::write_atomic(path, text.as_bytes())
            .map_err(|e| AppError::BadOption(format!("--output {}: {e}", path.display()))),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// `mmci analyse --spread`: the rows, as a table or JSON. No verdict: it
/// exits 0 when the dir could be read.
fn spread(a: &AnalyseArgs, dir: &Path) -> Result<i32, AppError> {
    let rows = analysis::spread::spread_dir(dir)?;
    let json = || {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).expect("serializable")
        )
    };
    // The old `--json FILE`: the rows as JSON in FILE, the table printed,
    // as its deprecation notice says.
    if let Some(path) = &a.json_and_table {
        crate::host::fs::write_atomic(path, json().as_bytes())
            .map_err(|e| AppError::BadOption(format!("--json {}: {e}", path.display())))?;
    }
    let text = if a.json.is_some() {
        json()
    } else {
        crate::report::spread::render(&rows)
    };
    write_output(a.output.as_deref(), &text)?;
    Ok(exit::OK)
}

/// The email's trailers from `mmci report`'s options: the sender (for
/// `Reported-by:`), the Message-ID (for `Closes:`, fresh at the sender's
/// domain on a FAIL without --message-id), and the `Tested-by:` asked
/// for, with a note on standard error when the verdict refuses it.
fn report_mail(
    a: &ReportArgs,
    c: &analysis::Comparison,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::report::Mail, AppError> {
    use crate::post::email;
    let from = a
        .from
        .clone()
        .or_else(|| super::nonempty(env("MMCI_EMAIL_FROM")))
        .unwrap_or_else(|| crate::report::DEFAULT_FROM.into());
    let mailbox =
        email::mailbox("--from", &from).map_err(|e| AppError::BadOption(e.to_string()))?;
    let message_id = match &a.message_id {
        Some(id) => Some(id.clone()),
        None if a.format == crate::report::Format::Email
            && c.verdict.status == analysis::Status::Fail =>
        {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            Some(email::fresh_message_id(&c.plan_id, &mailbox, now))
        }
        None => None,
    };
    if a.format == crate::report::Format::Email && a.tested_by.is_some() {
        if let Some(why) = crate::report::email_verdict::tested_by_refused(c) {
            eprintln!("mmci: note: no Tested-by: in the email: {why}");
        }
    }
    Ok(crate::report::Mail {
        tested_by: a.tested_by.clone(),
        from,
        message_id,
    })
}

/// `mmci report`: 0 once written, whatever the verdict.
pub fn report(mut a: ReportArgs) -> Result<i32, AppError> {
    let dir = results_dir("report", a.results.as_deref())?;
    if a.json {
        a.format = crate::report::Format::Json;
    }
    let c = a.analysis.analyse(&dir)?;
    let cover = match &a.cover_letter {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| AppError::BadOption(format!("--cover-letter {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let mail = report_mail(&a, &c, &|k| std::env::var(k).ok())?;
    let written = crate::report::write_report(
        &dir,
        &c,
        a.format,
        a.output.as_deref(),
        a.results_url,
        cover,
        mail,
        a.github_summary
            .then(|| std::env::var_os("GITHUB_STEP_SUMMARY"))
            .flatten(),
    )
    .map_err(AppError::BadOption)?;
    for w in written {
        eprintln!("mmci: wrote {w}");
    }
    Ok(exit::OK)
}
