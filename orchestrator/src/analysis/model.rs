//! The comparison of a results dir, as data: what every renderer (the
//! terminal table here; GitHub markdown, email and HTML later) reads, and
//! what `mmci analyse --json` writes. Versioned by [`COMPARISON_FORMAT`];
//! every field is plain serde so that other tools can read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::catalog::Better;
use super::stats::{Change, MannWhitney, Summary, Welch};
use crate::arch::Arch;
use crate::matrix::file::{BaseOom, ExpectKind, Expectation};
use crate::run::outcome::Outcome;

/// Version of the comparison's JSON layout. Bump on any change a reader of
/// the previous version would misread.
/// 2: splats, per-work metrics and their assessments.
/// 3: the regression policy's guards per cell and candidate, the cover
/// letter's claims, a candidate's own expectations, status NO VERDICT and
/// the verdict's summary line.
/// 4: `survivors`: in a cell where OOM kills cut one side's runs short, a
/// row's per-run values are those of the runs without one.
/// 5: `effect` and `floor_decision` on each metric row: the Hodges-Lehmann
/// shift with its exact interval, and that interval against the floor.
/// 6: a guard's `decision` (its tests at the floor, Holm's level, the
/// smallest change caught) and `more_runs`; a guard undecided at the floor
/// has status `inconclusive`; options `verdict_alpha` and `looks`.
pub const COMPARISON_FORMAT: u32 = 6;

/// Which test decides significance. Both are always computed and shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Mann-Whitney U: no normality assumption, robust to the outliers a
    /// loaded host produces; needs 5 runs a side to reach p <= 0.01.
    MannWhitney,
    /// Welch's t: more power with 3 runs, but assumes roughly normal means.
    Welch,
}

impl Test {
    pub fn name(self) -> &'static str {
        match self {
            Test::MannWhitney => "Mann-Whitney U",
            Test::Welch => "Welch t",
        }
    }
}

/// The knobs of the analysis, recorded in its output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Significance level. Default 0.01.
    pub alpha: f64,
    /// Smallest relative change that counts, for metrics without their own
    /// (see the catalog). Default 0.05.
    pub noise_floor: f64,
    /// Per-metric noise floors, over the catalog's and the default.
    pub metric_noise_floors: BTreeMap<String, f64>,
    /// Fewer completed runs than this on a side make expectations
    /// inconclusive. Default 3.
    pub min_runs: usize,
    /// The test whose p-value decides significance. Default Mann-Whitney.
    pub test: Test,
    /// The verdict's level: the most a false FAIL (every guard within its
    /// floor, one family over all cells: Holm) or a false PASS (a guard
    /// beyond it) may happen, over all looks of the sequential budget.
    /// Default 0.05 (`analysis::decision`).
    #[serde(default = "default_verdict_alpha")]
    pub verdict_alpha: f64,
    /// How many looks the sequential budget allows (1: no budget); each
    /// spends verdict_alpha / looks.
    #[serde(default = "one")]
    pub looks: usize,
}

fn default_verdict_alpha() -> f64 {
    0.05
}

fn one() -> usize {
    1
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.01,
            noise_floor: 0.05,
            metric_noise_floors: BTreeMap::new(),
            min_runs: 3,
            test: Test::MannWhitney,
            verdict_alpha: default_verdict_alpha(),
            looks: 1,
        }
    }
}

/// The whole comparison of one results dir.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// [`COMPARISON_FORMAT`].
    pub format: u32,
    pub mmci_version: String,
    pub plan_id: String,
    /// The matrix file the plan came from.
    pub source: String,
    pub description: Option<String>,
    /// The first kernel variant of the plan.
    pub baseline: String,
    pub candidates: Vec<String>,
    pub options: Options,
    /// Accelerator per arch, with the reason (from the manifest).
    pub accel: BTreeMap<String, String>,
    /// The matrix's expectations (with command-line ones over them),
    /// evaluated for every candidate.
    pub expect: BTreeMap<String, Expectation>,
    /// Each candidate's own expectations (its kernel entry's `expect:`),
    /// over the matrix's for that candidate only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub candidate_expect: BTreeMap<String, BTreeMap<String, Expectation>>,
    /// The cover letters' claims beside the measurement, candidate by
    /// candidate, row by row (a row once per cell its set-up describes).
    #[serde(default)]
    pub claims: Vec<ClaimCheck>,
    pub cells: Vec<CellComparison>,
    /// Per kernel variant: what happened to its runs.
    pub variants: Vec<VariantRuns>,
    pub verdict: Verdict,
    /// Kernel splats on the runs' consoles: new ones (seen with a candidate,
    /// not with the baseline) first, then pre-existing ones.
    #[serde(default)]
    pub splats: Vec<SplatFinding>,
    /// The guest's time series, per run, for plots.
    pub series: Vec<RunSeries>,
    /// The anatomy of each cell and kernel whose scenario has one (scenario
    /// B: the slowest dm-bufio call); the key is format 2's.
    #[serde(default, rename = "noio_anatomy")]
    pub anatomy: Vec<super::anatomy::Anatomy>,
    /// The files of the results dir that were refused or could not be read
    /// (a symbolic link, a FIFO, a device, too large, not JSON), each with
    /// what the comparison goes without; named in every report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<UnreadableFile>,
    /// Per cell, whether a kernel's runs drifted with their order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<super::drift::CellDrift>,
}

/// A file of a results dir that analysis refused or could not read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadableFile {
    /// Its path in the results dir (`runs/<run>/records.jsonl`).
    pub path: String,
    /// Why it was not read (`a FIFO, not a regular file; refused`).
    pub error: String,
    /// What the comparison goes without (`the run's time series`).
    pub lost: String,
}

impl UnreadableFile {
    /// `runs/x/records.jsonl not read: a FIFO, not a regular file;
    /// refused; left out: the run's time series (its result stands)`.
    pub fn line(&self) -> String {
        format!(
            "{} not read: {}; left out: {}",
            self.path, self.error, self.lost
        )
    }
}

/// How a cell is named in reasons: its label, else its id.
pub fn cell_name(c: &CellComparison) -> &str {
    if c.label.is_empty() {
        &c.cell
    } else {
        &c.label
    }
}

impl CellComparison {
    /// The cell's scenario, parsed back from its name.
    pub fn job_scenario(&self) -> Option<mmci_record::Scenario> {
        serde_json::from_value(serde_json::Value::String(self.scenario.clone())).ok()
    }
}

/// One cell of the matrix: every candidate against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellComparison {
    pub cell: String,
    /// What tells this cell apart (`threads=64`); empty in a one-cell matrix.
    pub label: String,
    pub arch: Arch,
    /// The kernel flavour of the cell's runs (absent: default).
    #[serde(default, skip_serializing_if = "crate::kernel::Flavour::is_default")]
    pub flavour: crate::kernel::Flavour,
    pub scenario: String,
    pub candidates: Vec<CandidateComparison>,
    /// The regime the matrix calibrated this cell for, against the
    /// baseline's runs (absent: the matrix names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<RegimeCheck>,
}

/// A cell's regime (the matrix's `regimes:`) against its baseline's runs
/// (see `analysis::regime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegimeCheck {
    pub expected: BaseOom,
    /// Completed baseline runs an OOM kill ended, of those with the count.
    pub base_killed: usize,
    pub base_runs: usize,
}

impl RegimeCheck {
    /// See [`BaseOom::holds`]: out only when the count would be rare in
    /// the regime.
    pub fn holds(&self) -> bool {
        self.expected.holds(self.base_killed, self.base_runs)
    }

    /// `base OOM-killed in 0 of 5 runs against most runs, p = 0.031`: the
    /// count, the regime's share and how probable so few (or so many)
    /// kills are in it.
    pub fn text(&self) -> String {
        format!(
            "base OOM-killed in {} of {} runs against {}, p = {:.3}",
            self.base_killed,
            self.base_runs,
            self.expected.share(),
            self.expected.out_p(self.base_killed, self.base_runs)
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateComparison {
    pub variant: String,
    /// Every catalog metric of the cell's scenario that some run has.
    pub metrics: Vec<MetricComparison>,
    pub expectations: Vec<ExpectationResult>,
    /// The regression policy: runs with an OOM kill, then the scenario's
    /// guards (see `analysis::policy`).
    #[serde(default)]
    pub guards: Vec<GuardResult>,
}

/// One check of the regression policy in one cell, for one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuardResult {
    pub metric: String,
    /// What it guards, in words (the scenario's `Def`).
    pub why: String,
    /// Pass or Fail; None when it could not be judged here (a timing under
    /// TCG, too few runs for the test to reach alpha, no run has it).
    pub status: Option<Status>,
    /// One line: why.
    pub reason: String,
    /// More runs of this cell could decide it (the interval straddles the
    /// floor, or the test cannot yet reach its level): what the sequential
    /// budget (`analysis::sequential`) adds runs for.
    #[serde(default)]
    pub more_runs: bool,
    /// The guard's tests and figures, where it has a test (the finding as
    /// data: `analysis::guard_finding`, made by `analysis::decision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<super::guard_finding::GuardDecision>,
}

/// What the numbers say, before any expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Assessment {
    /// Significant, in the worse direction.
    Regression,
    /// Significant, in the better direction.
    Improvement,
    /// Significant, for a metric without a better direction.
    Changed,
    /// Not significant (p above alpha, or below the noise floor).
    NoChange,
    /// Too few runs for the test to reach alpha.
    TooFewRuns,
    /// Significant in the worse direction, but a counter that scales with
    /// the work done whose per-work twin shows no significant change: the
    /// kernel did more work, not worse work.
    ScalesWithWork,
    /// Significant in the worse direction, but a counter that scales with
    /// the work done, and one side did no work at all (its per-work twin
    /// has no value): the raw counts cannot be compared.
    NoWorkOnOneSide,
}

impl Assessment {
    pub fn name(self) -> &'static str {
        match self {
            Assessment::Regression => "REGRESSION",
            Assessment::Improvement => "improvement",
            Assessment::Changed => "changed",
            Assessment::NoChange => "no change",
            Assessment::TooFewRuns => "too few runs",
            Assessment::ScalesWithWork => "more work, same per unit",
            Assessment::NoWorkOnOneSide => "not comparable: one side did no work",
        }
    }
}

/// One metric, baseline against one candidate, in one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    pub metric: String,
    pub unit: String,
    pub better: Better,
    pub timing: bool,
    /// A timing metric with a run under TCG: its size means little.
    pub functional_only: bool,
    /// The noise floor applied (relative change).
    pub noise_floor: f64,
    /// Per completed run, in repeat order.
    pub base_values: Vec<f64>,
    pub candidate_values: Vec<f64>,
    pub base: Option<Summary>,
    pub candidate: Option<Summary>,
    /// None when a side has no value.
    pub change: Option<Change>,
    pub mann_whitney: Option<MannWhitney>,
    pub welch: Option<Welch>,
    /// The deciding test's p-value (see [`Options::test`]).
    pub p: Option<f64>,
    /// The smallest p the deciding test can give with these run counts
    /// (rank test: 2 / C(n1+n2, n1); Welch: 0).
    pub min_attainable_p: f64,
    /// p <= alpha and |change| >= the noise floor.
    pub significant: bool,
    pub assessment: Assessment,
    /// Set when only the runs without an OOM kill were compared (see
    /// [`Survivors`]); None: every completed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub survivors: Option<Survivors>,
    /// The Hodges-Lehmann shift, candidate over base, with its exact
    /// interval at 1 - alpha (see `analysis::effect`); None when a side
    /// has no value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<super::effect::Effect>,
    /// That interval against the noise floor: regression, no regression
    /// or undecided; shown beside the verdict, which does not use it yet.
    /// None without a relative effect (a baseline median of 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_decision: Option<super::effect::FloorDecision>,
}

/// A cell where one side had a larger share of its runs cut short by an
/// OOM kill than the other: its metrics that accumulate over a run (counters, and rates per
/// unit of work) compare only the runs without an OOM kill, because a
/// killed run's counts cover only the start of its run (the working set
/// faulted in, little of it swapped back yet). Mixing them in reads a base
/// killed at 8 s against a candidate that ran its 20 s as "+141% swap-ins
/// per 1,000 touches" when it is the candidate surviving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Survivors {
    /// Base runs without an OOM kill, of its completed runs.
    pub base: usize,
    pub base_of: usize,
    pub candidate: usize,
    pub candidate_of: usize,
}

impl Survivors {
    /// One line, for reasons and reports.
    pub fn text(&self) -> String {
        format!(
            "only the runs without an OOM kill compared: base {} of {}, candidate {} of {}",
            self.base, self.base_of, self.candidate, self.candidate_of
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Fail,
    Inconclusive,
    /// Nothing could be judged (one kernel, too few runs, every guard a
    /// timing under TCG): never a pass.
    NoVerdict,
    Pass,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Inconclusive => "INCONCLUSIVE",
            Status::NoVerdict => "NO VERDICT",
        }
    }
}

/// One `expect:` entry evaluated for one cell and candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpectationResult {
    pub metric: String,
    pub kind: ExpectKind,
    /// The threshold applied (the expectation's, else the noise floor);
    /// None for zero and nonzero.
    pub threshold: Option<f64>,
    pub status: Status,
    /// One line: why.
    pub reason: String,
}

/// Whose problem a splat is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplatStatus {
    /// Seen with a candidate and not with the baseline: the series' doing.
    New,
    /// Seen with the baseline too: the tree's problem, not the series'.
    PreExisting,
    /// Seen with the baseline only.
    BaselineOnly,
}

impl SplatStatus {
    pub fn name(self) -> &'static str {
        match self {
            SplatStatus::New => "new",
            SplatStatus::PreExisting => "pre-existing",
            SplatStatus::BaselineOnly => "baseline only",
        }
    }
}

/// How many of one kernel's runs showed a splat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplatHits {
    pub variant: String,
    /// Runs whose console shows it.
    pub runs: usize,
    /// Runs with a console (every result but infra failures).
    pub of: usize,
}

/// One splat title over the whole results dir.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplatFinding {
    pub title: String,
    pub kind: crate::results::splat::SplatKind,
    pub status: SplatStatus,
    /// Per kernel variant, in plan order (the baseline first).
    pub hits: Vec<SplatHits>,
    /// The run of the first occurrence shown (a candidate's for a new
    /// splat, the baseline's otherwise) and its excerpt.
    pub first_run: String,
    pub first_variant: String,
    pub excerpt: String,
}

impl SplatFinding {
    /// `base: 0 of 5 runs, patched: 3 of 5 runs`.
    pub fn hits_text(&self) -> String {
        self.hits
            .iter()
            .map(|h| format!("{}: {} of {} runs", h.variant, h.runs, h.of))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A run that did not complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunProblem {
    pub run: String,
    pub cell: String,
    pub outcome: Outcome,
    pub reason: String,
}

/// What happened to one kernel variant's runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantRuns {
    pub variant: String,
    pub planned: usize,
    pub completed: usize,
    /// Boot failures, kernel crashes, hangs, guest errors: these fail the
    /// verdict.
    pub failures: Vec<RunProblem>,
    /// Infra failures (QEMU, the accelerator): reported, never blamed on
    /// the kernel.
    pub infra: Vec<RunProblem>,
    /// Planned runs without a result in the dir (not run yet, or interrupted).
    pub missing: Vec<String>,
    /// Why the kernel could not be built, if it could not.
    pub build_error: Option<String>,
}

/// The verdict of the series: the regression policy, the expectations
/// (the matrix's and the candidate's own), the cover letter's claims, and
/// the runs that did not complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub status: Status,
    /// One line after the status: `no regression found in 20 runs on 2
    /// cells (guards: ...)`.
    #[serde(default)]
    pub summary: String,
    /// Failures first, then what is inconclusive; empty on a clean pass.
    pub reasons: Vec<String>,
    /// What could not be judged here, and why (not a failure, not a pass).
    #[serde(default)]
    pub not_judged: Vec<String>,
    /// The guards judged somewhere in the matrix, in first-seen order.
    #[serde(default)]
    pub guards: Vec<String>,
    /// Completed runs and the matrix's cells.
    #[serde(default)]
    pub runs: usize,
    #[serde(default)]
    pub cells: usize,
    pub expectations_passed: usize,
    pub expectations_failed: usize,
    pub expectations_inconclusive: usize,
    /// The cover letter's claims, by finding (true-by-construction
    /// agreements counted apart).
    #[serde(default)]
    pub claims: ClaimCounts,
}

/// How many claim checks had each finding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimCounts {
    pub agree: usize,
    /// Agreements the baseline could not have contradicted: it reads 0 in
    /// every run (the counter the series adds, or an event it never has).
    pub by_construction: usize,
    pub contradict: usize,
    pub not_significant: usize,
    pub not_measured: usize,
}

impl Verdict {
    /// `PASS: no regression found in ...`.
    pub fn headline(&self) -> String {
        if self.summary.is_empty() {
            self.status.name().to_string()
        } else {
            format!("{}: {}", self.status.name(), self.summary)
        }
    }
}

/// A run's time series as sampled by the guest (one point per report
/// interval), column by column to stay compact.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSeries {
    pub run: String,
    pub cell: String,
    pub variant: String,
    pub repeat: u32,
    /// Time since the guest's sampler started (with the workload).
    pub t_ms: Vec<u64>,
    /// Highest nr_isolated_anon + nr_isolated_file in the interval.
    pub nr_isolated: Vec<u64>,
    pub nr_isolated_anon: Vec<u64>,
    pub nr_isolated_file: Vec<u64>,
    pub mem_free_kb: Vec<u64>,
    pub memcg_current_bytes: Vec<u64>,
    /// The workload's cumulative touch counter.
    pub touches: Vec<u64>,
}

/// What the measurement says of one claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// Measured a significant change the way the claim goes (or, for a
    /// claim of no change, no significant change).
    Agrees,
    /// Measured a significant change the other way, or a significant change
    /// where the claim says none: this fails the verdict.
    Contradicts,
    /// The measurement cannot tell (p above alpha, below the noise floor,
    /// too few runs, or a timing under TCG).
    NotSignificant,
    /// No metric of mmci's is this row, or no cell of the matrix is its
    /// set-up.
    NotMeasured,
}

impl Finding {
    pub fn name(self) -> &'static str {
        match self {
            Finding::Agrees => "agrees",
            Finding::Contradicts => "contradicts",
            Finding::NotSignificant => "not significant",
            Finding::NotMeasured => "not measured here",
        }
    }
}

/// One claim row beside one cell's measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimCheck {
    /// The candidate whose cover letter claims it.
    #[serde(default)]
    pub variant: String,
    /// The table's set-up as the letter words it.
    pub setup: String,
    pub row: String,
    /// Line of the row in the cover letter.
    pub line: usize,
    /// `0 -> 35645`, `246,499,132,369 -> 301,456,426,692 (+22.3%)`.
    pub claimed: String,
    pub metric: Option<String>,
    /// The cell whose runs were compared.
    pub cell: Option<String>,
    /// The measured change as the comparison shows it.
    pub measured: Option<String>,
    pub p: Option<f64>,
    pub finding: Finding,
    /// An agreement the baseline could not have contradicted: the claim
    /// starts from 0 and the baseline reads 0 in every run (a counter the
    /// series adds, an event base never has). It shows the series is
    /// active, not that reclaim changed, and counts as no finding.
    #[serde(default)]
    pub by_construction: bool,
    /// One line: why.
    pub reason: String,
}
