//! What is done with a results dir: `merge` (shards into one), `analyse`
//! (the comparison and its verdict as the exit code) and `report` (the
//! comparison rendered), with the analysis options they share.

use std::path::{Path, PathBuf};

use crate::analysis;
use crate::error::{self, exit, AppError};

#[derive(clap::Args)]
pub struct AnalyseArgs {
    /// A results dir of `mmci run` (or `mmci merge`).
    pub dir: PathBuf,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Also write the whole comparison as JSON (format 2) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Every column of the comparison table, however wide (by default
    /// it is fitted to the terminal, or to 100 columns in a log).
    #[arg(long)]
    pub wide: bool,
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A results dir of `mmci run` (or `mmci merge`).
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: crate::report::Format,
    /// Write the report here instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Where the full results are (URL or path), linked from the report.
    #[arg(long, value_name = "URL")]
    pub results_url: Option<String>,
    /// The series' cover letter (a text file); the email quotes its first lines.
    #[arg(long, value_name = "FILE")]
    pub cover_letter: Option<PathBuf>,
    /// Name and address of the email's Tested-by: trailer (only on a pass).
    #[arg(long, default_value = crate::report::DEFAULT_TESTED_BY)]
    pub tested_by: String,
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

/// `mmci merge`.
pub fn merge(into: &Path, dirs: &[PathBuf]) -> Result<i32, AppError> {
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
    let c = a.analysis.analyse(&a.dir)?;
    if let Some(path) = &a.json {
        analysis::write_json(path, &c)?;
    }
    let width = (!a.wide).then(|| {
        crate::report::comparison::terminal_width(std::env::var("COLUMNS").ok().as_deref())
    });
    print!("{}", crate::report::comparison::render_fitted(&c, width));
    if let Some(path) = &a.json {
        println!("json: {}", path.display());
    }
    Ok(error::verdict_exit_code(c.verdict.status))
}

/// `mmci report`: 0 once written, whatever the verdict.
pub fn report(a: ReportArgs) -> Result<i32, AppError> {
    let c = a.analysis.analyse(&a.dir)?;
    let cover = match &a.cover_letter {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| AppError::BadOption(format!("--cover-letter {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let written = crate::report::write_report(
        &a.dir,
        &c,
        a.format,
        a.output.as_deref(),
        a.results_url,
        cover,
        a.tested_by,
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
