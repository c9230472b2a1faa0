//! Builds the [`Comparison`] of a results dir: per cell, candidate and
//! metric the statistics; per variant what happened to its runs; the
//! expectations; the verdict. Only completed runs feed statistics; boot
//! failures, crashes, hangs and guest errors fail the verdict; infra
//! failures are listed apart and never blamed on a kernel.

use std::collections::BTreeMap;
use std::path::Path;

use super::catalog::{self, Better, Metric};
use super::claims::claim_checks;
use super::effect;
use super::expect;
pub use super::model::cell_name;
use super::model::*;
use super::policy;
use super::regime;
use super::series;
use super::stats::{self, min_attainable_p};
use super::survivors;
use crate::matrix::file::{ExpectKind, Expectation};
use crate::matrix::{Plan, Slot};
use crate::results::dir::{self as results_dir, Manifest, ResultsDirError};
use crate::results::RunResult;
use crate::run::outcome::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("{0} is not an mmci results dir (no manifest.json)")]
    NotResultsDir(std::path::PathBuf),
    #[error(transparent)]
    ResultsDir(#[from] ResultsDirError),
    #[error(transparent)]
    Expect(#[from] catalog::CatalogError),
    #[error("cannot write {path}")]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Compares one metric's per-run values, base against candidate.
/// `tcg`: some of these runs ran under TCG.
pub fn metric_comparison(
    m: &Metric,
    base_values: Vec<f64>,
    candidate_values: Vec<f64>,
    tcg: bool,
    opts: &Options,
) -> MetricComparison {
    let base = stats::summary(&base_values);
    let candidate = stats::summary(&candidate_values);
    let confidence = 1.0 - opts.alpha;
    let welch = match (&base, &candidate) {
        (Some(b), Some(c)) => stats::welch(b, c, confidence),
        _ => None,
    };
    let change = match (&base, &candidate) {
        (Some(b), Some(c)) => Some(stats::change(b, c, welch.as_ref())),
        _ => None,
    };
    let mann_whitney = stats::mann_whitney(&base_values, &candidate_values);
    let (p, min_p) = match opts.test {
        Test::MannWhitney => (
            mann_whitney.as_ref().map(|r| r.p),
            min_attainable_p(base_values.len(), candidate_values.len()),
        ),
        Test::Welch => (welch.as_ref().map(|w| w.p), 0.0),
    };
    let noise_floor = opts
        .metric_noise_floors
        .get(m.name.as_ref())
        .copied()
        .or(m.noise_floor)
        .unwrap_or(opts.noise_floor);
    let significant = match (p, &change) {
        (Some(p), Some(c)) => p <= opts.alpha && c.magnitude() >= noise_floor && c.sign() != 0.0,
        _ => false,
    };
    let enough = base_values.len() >= opts.min_runs
        && candidate_values.len() >= opts.min_runs
        && min_p <= opts.alpha;
    let sign = change.as_ref().map_or(0.0, |c| c.sign());
    let assessment = match (significant, m.better) {
        (false, _) if !enough => Assessment::TooFewRuns,
        (false, _) => Assessment::NoChange,
        (true, Better::Neither) => Assessment::Changed,
        (true, Better::Higher) if sign > 0.0 => Assessment::Improvement,
        (true, Better::Lower) if sign < 0.0 => Assessment::Improvement,
        (true, _) => Assessment::Regression,
    };
    // Beside the change of means and p: the shift with its interval at the
    // same level, and that interval against the floor (the cell is set
    // where the row is placed in its cell).
    let effect = effect::effect(&base_values, &candidate_values, confidence);
    let floor_decision = effect
        .as_ref()
        .and_then(|e| effect::decide(&m.name, m.better, e, noise_floor));
    MetricComparison {
        metric: m.name.to_string(),
        unit: m.unit.to_string(),
        better: m.better,
        timing: m.timing,
        functional_only: m.timing && tcg,
        noise_floor,
        base_values,
        candidate_values,
        base,
        candidate,
        change,
        mann_whitney,
        welch,
        p,
        min_attainable_p: min_p,
        significant,
        assessment,
        survivors: None,
        effect,
        floor_decision,
    }
}

/// A raw counter that regressed while its per-work twin did not change
/// significantly scaled with the work done: not a regression.
pub fn judge_per_work(metrics: &mut [MetricComparison]) {
    let steady: Vec<&'static str> = metrics
        .iter()
        .filter(|m| !m.significant && m.assessment != Assessment::TooFewRuns)
        .filter_map(|m| catalog::metric(&m.metric).and_then(|c| c.per_work_of))
        .collect();
    // A twin with values on one side only: the other side did no work.
    let one_sided: Vec<&'static str> = metrics
        .iter()
        .filter(|m| m.base_values.is_empty() != m.candidate_values.is_empty())
        .filter_map(|m| catalog::metric(&m.metric).and_then(|c| c.per_work_of))
        .collect();
    for m in metrics.iter_mut() {
        if m.assessment == Assessment::Regression && steady.contains(&m.metric.as_str()) {
            m.assessment = Assessment::ScalesWithWork;
        } else if m.assessment == Assessment::Regression && one_sided.contains(&m.metric.as_str()) {
            m.assessment = Assessment::NoWorkOnOneSide;
        }
    }
}

/// The completed runs of one cell and variant, in repeat order.
pub(crate) fn completed<'a>(
    plan: &Plan,
    runs: &'a BTreeMap<String, RunResult>,
    cell: &str,
    variant: &str,
) -> Vec<&'a RunResult> {
    (1..=plan.repeats_of(cell))
        .filter_map(|repeat| {
            let slot = Slot {
                cell: cell.to_string(),
                variant: variant.to_string(),
                repeat,
            };
            runs.get(&slot.id())
        })
        .filter(|r| r.classification.outcome == Outcome::Completed)
        .collect()
}

/// `m`'s value in each of `runs` that has it.
fn values(runs: &[&RunResult], m: &Metric) -> Vec<f64> {
    runs.iter().filter_map(|r| catalog::value(m, r)).collect()
}

/// What happened to every planned run of each variant.
fn variant_runs(m: &Manifest, runs: &BTreeMap<String, RunResult>) -> Vec<VariantRuns> {
    let plan = &m.plan;
    plan.variants
        .iter()
        .map(|v| {
            let mut out = VariantRuns {
                variant: v.name.clone(),
                planned: 0,
                completed: 0,
                failures: vec![],
                infra: vec![],
                missing: vec![],
                build_error: m
                    .failed_kernels
                    .iter()
                    .find(|f| f.variant == v.name)
                    .map(|f| {
                        format!(
                            "{} ({})",
                            f.error,
                            crate::results::dir::target_text(f.arch, f.flavour)
                        )
                    }),
            };
            for repeat in 1..=plan.most_repeats() {
                for cell in plan
                    .cells
                    .iter()
                    .filter(|c| repeat <= plan.repeats_of(&c.id))
                {
                    let slot = Slot {
                        cell: cell.id.clone(),
                        variant: v.name.clone(),
                        repeat,
                    };
                    out.planned += 1;
                    let id = slot.id();
                    let Some(r) = runs.get(&id) else {
                        out.missing.push(id);
                        continue;
                    };
                    let problem = || RunProblem {
                        run: id.clone(),
                        cell: cell.id.clone(),
                        outcome: r.classification.outcome,
                        reason: r.classification.reason.clone(),
                    };
                    match r.classification.outcome {
                        Outcome::Completed => out.completed += 1,
                        Outcome::InfraFailure => out.infra.push(problem()),
                        _ => out.failures.push(problem()),
                    }
                }
            }
            out
        })
        .collect()
}

/// Compares every candidate with the baseline in every cell of `m`'s plan.
/// `expect`: the expectations to evaluate (the plan's, or others);
/// `series`: the runs' time series, carried into the result for plots.
pub fn compare(
    m: &Manifest,
    runs: &BTreeMap<String, RunResult>,
    expect: &BTreeMap<String, Expectation>,
    series: Vec<RunSeries>,
    opts: &Options,
) -> Comparison {
    let plan = &m.plan;
    // The looks the plan's budget allows: each spends its share of the
    // verdict's level (`decision`), from the first look on.
    let opts = &Options {
        looks: plan.looks(),
        ..opts.clone()
    };
    let baseline = plan
        .variants
        .first()
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let candidates: Vec<String> = plan
        .variants
        .iter()
        .skip(1)
        .map(|v| v.name.clone())
        .collect();
    let candidate_expect: BTreeMap<String, BTreeMap<String, Expectation>> = plan
        .variants
        .iter()
        .skip(1)
        .filter(|v| !v.expect.is_empty())
        .map(|v| (v.name.clone(), v.expect.clone()))
        .collect();
    let mut cells = Vec::with_capacity(plan.cells.len());
    for cell in &plan.cells {
        let base_runs = completed(plan, runs, &cell.id, &baseline);
        let mut cands = Vec::with_capacity(candidates.len());
        for cand in &candidates {
            let cand_runs = completed(plan, runs, &cell.id, cand);
            let tcg = base_runs.iter().chain(&cand_runs).any(|r| r.accel.is_tcg());
            let cell_metrics = catalog::of_cell(cell, &plan.scripts);
            let oom = survivors::RUN_ENDING_KILLS
                .iter()
                .find_map(|k| cell_metrics.iter().find(|m| m.name == *k));
            let killed = |r: &&RunResult| {
                oom.and_then(|m| catalog::value(m, r))
                    .is_some_and(|v| v > 0.0)
            };
            let (base_kept, cand_kept): (Vec<&RunResult>, Vec<&RunResult>) = (
                base_runs.iter().copied().filter(|r| !killed(r)).collect(),
                cand_runs.iter().copied().filter(|r| !killed(r)).collect(),
            );
            let cut = survivors::survivors(
                (base_kept.len(), base_runs.len()),
                (cand_kept.len(), cand_runs.len()),
            );
            // Every completed run, and (in a cell cut short) the runs
            // without an OOM kill for the metrics that add up over a run.
            let mut every_run = vec![];
            let mut metrics: Vec<MetricComparison> = cell_metrics
                .iter()
                .filter_map(|metric| {
                    let (b, c) = (values(&base_runs, metric), values(&cand_runs, metric));
                    // A metric no run has (e.g. no scan at all) is left out.
                    if b.is_empty() && c.is_empty() {
                        return None;
                    }
                    let whole = metric_comparison(metric, b, c, tcg, opts);
                    match cut.filter(|_| survivors::accumulates(metric, &cell_metrics)) {
                        None => Some(whole),
                        Some(s) => {
                            every_run.push(whole);
                            let (b, c) = (values(&base_kept, metric), values(&cand_kept, metric));
                            Some(MetricComparison {
                                survivors: Some(s),
                                ..metric_comparison(metric, b, c, tcg, opts)
                            })
                        }
                    }
                })
                .collect();
            judge_per_work(&mut metrics);
            for d in metrics.iter_mut().filter_map(|m| m.floor_decision.as_mut()) {
                d.cell = cell.id.clone();
            }
            // The matrix's expectations, then the candidate's own over them.
            let mut expect = expect.clone();
            if let Some(own) = candidate_expect.get(cand) {
                expect.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            let guards = policy::check_cell(cell.job.scenario.name(), &metrics, opts);
            let expectations = expect
                .iter()
                .filter(|(name, _)| {
                    // Only the metrics this cell measures apply here.
                    cell_metrics.iter().any(|x| x.name == name.as_str())
                })
                .map(
                    |(name, e)| match metrics.iter().find(|x| &x.metric == name) {
                        // `zero` and `nonzero` read the candidate's runs
                        // alone, and a killed run's count is a lower bound:
                        // nonzero in a killed run is nonzero.
                        Some(mc)
                            if mc.survivors.is_some()
                                && matches!(e.kind(), ExpectKind::Zero | ExpectKind::Nonzero) =>
                        {
                            let whole = every_run.iter().find(|x| &x.metric == name);
                            expect::evaluate(e, whole.unwrap_or(mc), opts)
                        }
                        Some(mc) => {
                            let mut r = expect::evaluate(e, mc, opts);
                            if let Some(s) = mc.survivors {
                                r.reason = format!("{}: {}", s.text(), r.reason);
                            }
                            r
                        }
                        None => expect::no_data(e, name),
                    },
                )
                .collect();
            cands.push(CandidateComparison {
                variant: cand.clone(),
                metrics,
                expectations,
                guards,
            });
        }
        cells.push(CellComparison {
            cell: cell.id.clone(),
            label: cell.label.clone(),
            arch: cell.arch,
            flavour: cell.flavour,
            scenario: cell.job.scenario.to_string(),
            candidates: cands,
            regime: regime::check(cell, &base_runs, &catalog::of_cell(cell, &plan.scripts)),
        });
    }
    // The guards of every cell and candidate are one family.
    super::decision::decide(
        &mut cells,
        super::decision::Levels {
            alpha: opts.verdict_alpha,
            looks: opts.looks,
        },
    );
    let variants = variant_runs(m, runs);
    let splats = splat_findings(plan, runs, &baseline);
    let mut claims = claim_checks(m, &cells);
    super::claims::holm_over_claims(&mut claims, opts.alpha);
    let verdict = super::verdict::verdict(&cells, &variants, &splats, &claims);
    let anatomy =
        super::anatomy::anatomies(plan, |cell, variant| completed(plan, runs, cell, variant));
    let drift = super::drift::drift(plan, |cell, variant| completed(plan, runs, cell, variant));
    Comparison {
        format: COMPARISON_FORMAT,
        mmci_version: env!("CARGO_PKG_VERSION").to_string(),
        plan_id: m.plan_id.clone(),
        source: plan.source.clone(),
        description: plan.description.clone(),
        baseline,
        candidates,
        options: opts.clone(),
        accel: m.accel.clone(),
        expect: expect.clone(),
        candidate_expect,
        claims,
        cells,
        variants,
        verdict,
        splats,
        series,
        anatomy,
        unreadable: vec![],
        drift,
    }
}

/// Every splat title of the plan's runs, per variant how many runs hit it.
/// A splat on the baseline too is pre-existing; new ones come first.
pub fn splat_findings(
    plan: &Plan,
    runs: &BTreeMap<String, RunResult>,
    baseline: &str,
) -> Vec<SplatFinding> {
    struct Acc {
        kind: crate::results::splat::SplatKind,
        runs: BTreeMap<String, usize>,
        first_base: Option<(String, String)>,
        first_cand: Option<(String, String, String)>,
    }
    let mut of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut titles: Vec<(String, Acc)> = vec![];
    for v in &plan.variants {
        for repeat in 1..=plan.most_repeats() {
            for cell in plan
                .cells
                .iter()
                .filter(|c| repeat <= plan.repeats_of(&c.id))
            {
                let slot = Slot {
                    cell: cell.id.clone(),
                    variant: v.name.clone(),
                    repeat,
                };
                let Some(r) = runs.get(&slot.id()) else {
                    continue;
                };
                if r.classification.outcome == Outcome::InfraFailure {
                    continue;
                }
                *of.entry(v.name.as_str()).or_default() += 1;
                for sp in &r.splats {
                    let i = match titles.iter().position(|(t, _)| *t == sp.title) {
                        Some(i) => i,
                        None => {
                            titles.push((
                                sp.title.clone(),
                                Acc {
                                    kind: sp.kind,
                                    runs: BTreeMap::new(),
                                    first_base: None,
                                    first_cand: None,
                                },
                            ));
                            titles.len() - 1
                        }
                    };
                    let acc = &mut titles[i].1;
                    *acc.runs.entry(v.name.clone()).or_default() += 1;
                    if v.name == baseline {
                        acc.first_base
                            .get_or_insert_with(|| (r.id.clone(), sp.excerpt.clone()));
                    } else {
                        acc.first_cand.get_or_insert_with(|| {
                            (r.id.clone(), v.name.clone(), sp.excerpt.clone())
                        });
                    }
                }
            }
        }
    }
    let mut out: Vec<SplatFinding> = titles
        .into_iter()
        .map(|(title, acc)| {
            let status = match (&acc.first_base, &acc.first_cand) {
                (None, _) => SplatStatus::New,
                (Some(_), Some(_)) => SplatStatus::PreExisting,
                (Some(_), None) => SplatStatus::BaselineOnly,
            };
            let (first_run, first_variant, excerpt) = match (status, acc.first_cand, acc.first_base)
            {
                (SplatStatus::New, Some(c), _) => c,
                (_, _, Some((run, ex))) => (run, baseline.to_string(), ex),
                (_, Some(c), None) => c,
                (_, None, None) => unreachable!("a title comes from some run"),
            };
            let hits = plan
                .variants
                .iter()
                .map(|v| SplatHits {
                    variant: v.name.clone(),
                    runs: acc.runs.get(&v.name).copied().unwrap_or(0),
                    of: of.get(v.name.as_str()).copied().unwrap_or(0),
                })
                .collect();
            SplatFinding {
                title,
                kind: acc.kind,
                status,
                hits,
                first_run,
                first_variant,
                excerpt,
            }
        })
        .collect();
    // Stable: new first, then pre-existing, then baseline-only.
    out.sort_by_key(|f| f.status);
    out
}

/// Reads a results dir and compares it. `extra_expect` adds to (and
/// overrides) the plan's `expect:`; every name is checked against the
/// catalog.
pub fn analyse_dir(
    dir: &Path,
    extra_expect: &BTreeMap<String, Expectation>,
    opts: &Options,
) -> Result<Comparison, AnalysisError> {
    let m = results_dir::read_manifest(dir)?
        .ok_or_else(|| AnalysisError::NotResultsDir(dir.to_path_buf()))?;
    let mut expect = m.plan.expect.clone();
    expect.extend(extra_expect.iter().map(|(k, v)| (k.clone(), v.clone())));
    let measured = catalog::of_cells(&m.plan.cells, &m.plan.scripts);
    catalog::validate_all(&expect, &measured)?;
    for v in &m.plan.variants {
        catalog::validate_all(&v.expect, &measured)?;
    }
    let (runs, bad_runs) = results_dir::runs_checked(dir);
    results_dir::warn_unreadable(dir, &bad_runs);
    let (series, refused) = series::read_all(dir, &m.plan, &runs);
    let mut c = compare(&m, &runs, &expect, series, opts);
    // Named in the report, not only on stderr: whoever reads the report
    // learns that a run's result or plot is missing, and why.
    c.unreadable = series::unreadable(dir, &bad_runs, &refused);
    Ok(c)
}

#[cfg(test)]
mod tests;
