//! The model as the templates read it: every number already formatted,
//! rows in the order people should read them (failed expectations and
//! regressions first), one table per scenario, the matrix's shape, the
//! kernels and the command that reproduces a cell (with what a reader
//! needs to reproduce it elsewhere: [`super::reproduce`]).
//!
//! Every string that comes from the kernel, the guest, the build, the
//! series or the matrix is cleaned here ([`untrusted`]: no control
//! characters, a release only if it is one), so that no format starts from
//! raw text; a script's text is never shown, only its name; the reproduce
//! command is POSIX-shell quoted.

use serde::Serialize;

use crate::analysis::catalog;
use crate::analysis::compare::cell_name;
use crate::analysis::model::{Assessment, Comparison, MetricComparison, Status};
use crate::analysis::stats::Summary;
use crate::analysis::text;
use crate::report::comparison_text::{change_column, effect_text, rank, result_text, runs_line};

use crate::matrix::plan::{shard_assignment, Cell};
use crate::results::dir::Manifest;

use super::checks::{claim_views, guard_views};
pub use super::checks::{ClaimView, GuardView};
pub use super::reproduce::{reproduce_command, shell_word, ReproduceView, MAX_REPRODUCE};
use super::{untrusted, ReportInput};

#[derive(Clone, Debug, Serialize)]
pub struct View {
    pub title: String,
    pub plan_id: String,
    pub source: String,
    pub baseline: String,
    pub candidates: Vec<String>,
    pub status: String,
    /// The status as a CSS class: `NO_VERDICT` for `NO VERDICT`.
    pub status_class: String,
    pub passed: bool,
    pub verdict: String,
    pub reasons: Vec<String>,
    /// The regression policy, cell by cell: failures first.
    pub guards: Vec<GuardView>,
    /// The cover letter's claims beside the measurement: contradictions
    /// first, then agreements, then the rest.
    pub claims: Vec<ClaimView>,
    /// Hidden marker of the report, for sticky comments.
    pub marker: String,
    pub method: String,
    pub shape: String,
    pub cells: Vec<CellView>,
    pub kernels: Vec<KernelView>,
    pub accel: Vec<String>,
    pub runs: Vec<String>,
    /// The results dir's files that were refused or could not be read,
    /// and what each left out (see `analysis::model::UnreadableFile`).
    pub unreadable: Vec<String>,
    pub expectations: Vec<ExpectationView>,
    pub tables: Vec<TableView>,
    /// Kernel splats: new ones first, then pre-existing ones.
    pub splats: Vec<SplatView>,
    /// Scenario B: the slowest dm-bufio call of each cell and kernel.
    pub anatomy: Vec<AnatomyView>,
    pub reproduce: Vec<ReproduceView>,
    /// `mmci 0.1.0, commit ...`: the mmci that ran.
    pub mmci: String,
    /// What a reader of the reproduce commands should know.
    pub reproduce_notes: Vec<String>,
    /// CPU model, cores, RAM, QEMU version(s).
    pub host: String,
    pub results_url: Option<String>,
    /// Rows and expectations left out to fit a size limit.
    pub rows_cut: usize,
    pub expectations_cut: usize,
    pub reasons_cut: usize,
    /// Splats left out to fit a size limit (new ones, pre-existing ones),
    /// and splats shown without their first occurrence.
    pub splats_cut_new: usize,
    pub splats_cut_old: usize,
    pub excerpts_cut: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct CellView {
    pub id: String,
    pub name: String,
    pub machine: String,
    /// vCPUs, RAM, memcg, working set, threads, swap, MGLRU, THP.
    pub guest: String,
    pub job: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct KernelView {
    pub variant: String,
    pub arch: String,
    pub description: String,
    pub release: String,
    pub tree: String,
    pub tree_commit: String,
    pub head_commit: String,
    pub series_hash: String,
    pub new_warnings: Vec<String>,
    /// The base as upstream names it: `v6.12.95`, `URL@COMMIT (describe)`.
    pub base: String,
    pub compiler: String,
    /// The link to its .config copy in the results dir.
    pub config: Option<String>,
    /// That copy's path in the results dir (`kernels/base-x86_64.config`).
    pub config_file: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExpectationView {
    pub cell: String,
    pub kernel: String,
    pub metric: String,
    pub kind: String,
    pub status: String,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct TableView {
    pub scenario: String,
    /// Whether the table needs a cell / a kernel column.
    pub multi_cell: bool,
    pub multi_kernel: bool,
    /// What the `*_per_k*` rows are divided by.
    pub per_work: Option<String>,
    /// Significant rows first, then the unchanged ones (`folded`).
    pub rows: Vec<RowView>,
    /// How many of `rows`, at their end, changed nothing significantly:
    /// folded away in the reports.
    pub folded: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct RowView {
    pub cell: String,
    pub kernel: String,
    pub metric: String,
    pub unit: String,
    /// `mean ± sd (n=5)`.
    pub base: String,
    pub candidate: String,
    pub change: String,
    pub p: String,
    /// `+4.9% [+2.6, +7.3] (99.2%) undecided` (see `effect_text`).
    pub effect: String,
    pub verdict: String,
    /// A failed expectation or a regression: shown in bold.
    pub attention: bool,
    /// No significant change and no expectation: folded away.
    pub folded: bool,
    /// The 0-day columns: mean, relative stddev, change.
    pub base_mean: String,
    pub base_sd: String,
    pub change_short: String,
    pub candidate_mean: String,
    pub candidate_sd: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct SplatView {
    pub title: String,
    pub kind: String,
    /// `new`, `pre-existing`, `baseline only`.
    pub status: String,
    pub new: bool,
    /// `base: 0 of 5 runs, patched: 3 of 5 runs`.
    pub hits: String,
    /// Per kernel, in plan order: the run count and the total.
    pub counts: Vec<(String, usize, usize)>,
    pub first_run: String,
    pub first_variant: String,
    pub excerpt: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct AnatomyView {
    pub heading: String,
    pub columns: Vec<String>,
    /// One per reclaim round; empty without a dm-bufio call.
    pub rows: Vec<Vec<String>>,
}

fn anatomy_views(c: &Comparison) -> Vec<AnatomyView> {
    use crate::analysis::anatomy;
    c.anatomy
        .iter()
        .map(|a| AnatomyView {
            heading: anatomy::heading(a),
            columns: anatomy::COLUMNS.iter().map(|s| s.to_string()).collect(),
            rows: a
                .worst
                .as_ref()
                .map(|w| anatomy::rows(w).into_iter().map(Vec::from).collect())
                .unwrap_or_default(),
        })
        .collect()
}

/// Rows of this [`rank`] and after changed nothing significantly and carry
/// no expectation: the reports fold them away.
pub const FOLDED: u8 = 5;

/// `scenario A (MGLRU isolation)` for `mglru_isolation`.
pub fn scenario_name(s: &str) -> String {
    crate::scenario::registry::title(s)
}

/// A compact mean for fixed-width columns: at most 9 characters.
pub fn short_num(v: f64) -> String {
    let s = text::num(v);
    if s.len() <= 9 {
        s
    } else {
        format!("{v:.2e}")
    }
}

/// The relative standard deviation, 0-day style: `5%`; empty when it is
/// 0 or unknown.
pub fn rel_sd(s: &Summary) -> String {
    match s.stddev {
        Some(sd) if sd > 0.0 && s.mean != 0.0 => {
            format!("{:.0}%", (sd / s.mean.abs() * 100.0).min(999.0))
        }
        _ => String::new(),
    }
}

fn side(s: &Option<Summary>) -> String {
    s.as_ref().map_or("-".into(), text::summary)
}

fn row(
    cell: &str,
    kernel: &str,
    m: &MetricComparison,
    verdict: String,
    (attention, folded): (bool, bool),
) -> RowView {
    let p = m.p.map_or("-".into(), text::p);
    RowView {
        cell: cell.into(),
        kernel: kernel.into(),
        metric: m.metric.clone(),
        unit: m.unit.clone(),
        base: side(&m.base),
        candidate: side(&m.candidate),
        change: m.change.as_ref().map_or("-".into(), text::change),
        p,
        effect: effect_text(m, true),
        verdict,
        attention,
        folded,
        base_mean: m.base.as_ref().map_or("-".into(), |s| short_num(s.mean)),
        base_sd: m.base.as_ref().map_or(String::new(), rel_sd),
        change_short: m.change.as_ref().map_or("-".into(), change_column),
        candidate_mean: m
            .candidate
            .as_ref()
            .map_or("-".into(), |s| short_num(s.mean)),
        candidate_sd: m.candidate.as_ref().map_or(String::new(), rel_sd),
    }
}

fn short(commit: &Option<String>) -> String {
    commit
        .as_deref()
        .map_or("-".into(), |c| c.chars().take(12).collect())
}

/// The job parameters of a cell, `threads=8 working_set_mb=24 ...`. A
/// script is named, not shown: its text is whatever file the matrix
/// pointed at, and a report is public.
fn job_values(cell: &Cell) -> Vec<(String, String)> {
    let v = serde_json::to_value(&cell.job).unwrap_or_default();
    let mut out = vec![];
    if let Some(map) = v.as_object() {
        for (k, v) in map {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => continue,
                _ if k == "script" => match &cell.job.script {
                    Some(s) => format!("{} (image {})", s.name, s.image),
                    None => continue,
                },
                other => other.to_string(),
            };
            out.push((k.clone(), untrusted::line(&v)));
        }
    }
    out
}

fn marker(m: &Manifest) -> String {
    // The plan id alone changes with any option; the series hashes say
    // which patches were tested, so a new revision gets a new comment.
    let series: Vec<String> = m
        .kernels
        .iter()
        .filter_map(|k| k.kernel.series_hash.as_deref())
        .map(|h| h.chars().take(12).collect())
        .collect();
    if series.is_empty() {
        format!("<!-- mmci-report plan={} -->", m.plan_id)
    } else {
        format!(
            "<!-- mmci-report series={} plan={} -->",
            series.join(","),
            m.plan_id
        )
    }
}

/// The view of `input`, every row and expectation in it.
pub fn build(input: &ReportInput) -> View {
    let c: &Comparison = input.comparison;
    let m = input.manifest;
    let plan = &m.plan;
    let v = &c.verdict;
    let multi_cell = c.cells.len() > 1;
    let multi_kernel = c.candidates.len() > 1;

    // Per scenario: the rows with their rank, sorted once all are in.
    // Per scenario: its name, what its per-work rows are divided by, and
    // the rows with their sort key.
    type Ranked = Vec<((u8, bool), RowView)>;
    let mut ranked: Vec<(String, Option<String>, Ranked)> = vec![];
    let mut expectations = vec![];
    for cell in &c.cells {
        let name = cell_name(cell).to_string();
        let scenario = scenario_name(&cell.scenario);
        let ti = match ranked.iter().position(|(s, _, _)| *s == scenario) {
            Some(i) => i,
            None => {
                let unit = cell
                    .job_scenario()
                    .and_then(catalog::work_unit)
                    .map(|u| format!("Rows *_per_k* come before the raw counters and are divided by the work done: {u}."));
                ranked.push((scenario, unit, vec![]));
                ranked.len() - 1
            }
        };
        for cand in &cell.candidates {
            for m in &cand.metrics {
                let e = cand.expectations.iter().find(|e| e.metric == m.metric);
                let mut verdict = result_text(m);
                if let Some(e) = e {
                    verdict = format!(
                        "{}; {} {}",
                        verdict,
                        catalog::kind_name(e.kind),
                        e.status.name()
                    );
                }
                let attention = matches!(e.map(|e| e.status), Some(Status::Fail))
                    || (m.assessment == Assessment::Regression && !m.functional_only);
                let rank = rank(m, e);
                let r = row(
                    &name,
                    &cand.variant,
                    m,
                    verdict,
                    (attention, rank >= FOLDED),
                );
                ranked[ti]
                    .2
                    .push(((rank, !catalog::is_per_work(&m.metric)), r));
            }
            for e in &cand.expectations {
                expectations.push(ExpectationView {
                    cell: name.clone(),
                    kernel: cand.variant.clone(),
                    metric: e.metric.clone(),
                    kind: catalog::kind_name(e.kind).into(),
                    status: e.status.name().into(),
                    reason: untrusted::line(&e.reason),
                });
            }
        }
    }
    // Failed first, then inconclusive, then passed; stable within.
    expectations.sort_by_key(|e| match e.status.as_str() {
        "FAIL" => 0,
        "INCONCLUSIVE" => 1,
        _ => 2,
    });
    let tables = ranked
        .into_iter()
        .map(|(scenario, per_work, mut rows)| {
            rows.sort_by_key(|(r, _)| *r);
            TableView {
                scenario,
                multi_cell,
                multi_kernel,
                per_work,
                folded: rows.iter().filter(|(_, r)| r.folded).count(),
                rows: rows.into_iter().map(|(_, r)| r).collect(),
            }
        })
        .collect();

    // Cells with something to look at first, for the reproduce commands.
    let mut order: Vec<&crate::analysis::model::CellComparison> = c.cells.iter().collect();
    order.sort_by_key(|cell| {
        let bad = cell.candidates.iter().any(|cand| {
            cand.expectations.iter().any(|e| e.status == Status::Fail)
                || cand
                    .metrics
                    .iter()
                    .any(|m| m.assessment == Assessment::Regression)
        });
        !bad
    });
    let shard_of = shard_assignment(&plan.cells, plan.cells.len() as u32);
    let reproduce = order
        .iter()
        .take(MAX_REPRODUCE)
        .filter_map(|cc| plan.cell(&cc.cell))
        .map(|cell| ReproduceView {
            cell: untrusted::line(&if cell.label.is_empty() {
                cell.id.clone()
            } else {
                format!("{} ({})", cell.label, cell.id)
            }),
            command: reproduce_command(plan, &m.kernels, cell, &shard_of),
        })
        .collect();

    let cells = plan
        .cells
        .iter()
        .map(|cell| CellView {
            id: cell.id.clone(),
            name: untrusted::line(if cell.label.is_empty() {
                &cell.id
            } else {
                &cell.label
            }),
            machine: format!(
                "{}, {} vCPU, {} MiB RAM, {} MiB swap{}",
                cell.arch.name(),
                cell.vcpus,
                cell.memory_mb,
                cell.swap_mb,
                if cell.flavour.is_default() {
                    String::new()
                } else {
                    format!(", {} kernels ({})", cell.flavour, cell.flavour.describe())
                }
            ),
            guest: super::reproduce::guest_shape(cell, &m.kernels),
            job: job_values(cell)
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        })
        .collect();

    let kernels = m
        .kernels
        .iter()
        .map(|k| KernelView {
            variant: k.variant.clone(),
            arch: k.target(),
            description: untrusted::line(&k.description),
            // Written by the build into its object dir: the series' own.
            release: untrusted::release(&k.kernel.release),
            tree: k.kernel.tree.as_deref().map_or("-".into(), untrusted::line),
            tree_commit: short(&k.kernel.tree_commit),
            head_commit: short(&k.kernel.head_commit),
            series_hash: short(&k.kernel.series_hash),
            new_warnings: k.new_warnings.iter().map(|w| untrusted::line(w)).collect(),
            base: super::reproduce::base_name(
                k.kernel.upstream.as_ref(),
                k.kernel.tree_commit.as_deref(),
            ),
            compiler: k
                .kernel
                .compiler
                .as_deref()
                .map_or("-".into(), untrusted::line),
            config: super::reproduce::config_href(k, input.results_url.as_deref()),
            config_file: super::reproduce::config_href(k, None),
        })
        .collect();

    let runs = c
        .variants
        .iter()
        .map(|r| untrusted::line(&runs_line(r)))
        .collect();

    let splats = c
        .splats
        .iter()
        .map(|f| SplatView {
            title: untrusted::line(&f.title),
            kind: f.kind.name().into(),
            status: f.status.name().into(),
            new: f.status == crate::analysis::model::SplatStatus::New,
            hits: f.hits_text(),
            counts: f
                .hits
                .iter()
                .map(|h| (h.variant.clone(), h.runs, h.of))
                .collect(),
            first_run: untrusted::line(&f.first_run),
            first_variant: untrusted::line(&f.first_variant),
            excerpt: if f.excerpt.trim().is_empty() {
                vec![]
            } else {
                untrusted::lines(f.excerpt.trim_end())
            },
        })
        .collect();

    let o = &c.options;
    View {
        title: untrusted::line(c.description.as_deref().unwrap_or(&c.source)),
        plan_id: c.plan_id.clone(),
        source: c.source.clone(),
        baseline: c.baseline.clone(),
        candidates: c.candidates.clone(),
        status: v.status.name().into(),
        status_class: v.status.name().replace(' ', "_"),
        passed: v.status == Status::Pass,
        verdict: untrusted::line(&v.headline()),
        reasons: v.reasons.iter().map(|r| untrusted::line(r)).collect(),
        guards: guard_views(c),
        claims: claim_views(c),
        marker: marker(m),
        method: format!(
            "significant: {} p <= {} and |change| >= the noise floor ({} by default); \
             change of the means with its {:.0}% confidence interval",
            o.test.name(),
            o.alpha,
            text::pct(o.noise_floor).trim_start_matches('+'),
            (1.0 - o.alpha) * 100.0
        ),
        shape: format!(
            "{} cell(s) x {} kernel(s) x {} repeat(s) = {} runs ({})",
            plan.cells.len(),
            plan.variants.len(),
            plan.repeats,
            plan.cells.len() * plan.variants.len() * plan.repeats as usize,
            plan.source
        ),
        cells,
        kernels,
        accel: c
            .accel
            .iter()
            .map(|(a, s)| untrusted::line(&format!("{a}: {s}")))
            .collect(),
        runs,
        unreadable: c
            .unreadable
            .iter()
            .map(|u| untrusted::line(&u.line()))
            .collect(),
        expectations,
        tables,
        splats,
        anatomy: anatomy_views(c),
        reproduce,
        mmci: super::reproduce::mmci_line(m),
        reproduce_notes: super::reproduce::notes(m),
        host: super::reproduce::host_line(m),
        results_url: input.results_url.clone(),
        rows_cut: 0,
        expectations_cut: 0,
        reasons_cut: 0,
        splats_cut_new: 0,
        splats_cut_old: 0,
        excerpts_cut: 0,
    }
}

impl View {
    /// Keeps the first `rows` table rows (over all tables, in order) and
    /// the first `expectations` expectations, counting what is cut. The
    /// rows come failures first, so what is cut is what matters least.
    pub fn truncate(&mut self, rows: usize, expectations: usize) {
        // The significant rows of every table before any folded one.
        let significant: usize = self.tables.iter().map(|t| t.rows.len() - t.folded).sum();
        let (mut left, mut left_folded) = (rows.min(significant), rows.saturating_sub(significant));
        for t in &mut self.tables {
            let shown = t.rows.len() - t.folded;
            let keep = shown.min(left);
            let keep_folded = if keep == shown {
                t.folded.min(left_folded)
            } else {
                0
            };
            left -= keep;
            left_folded -= keep_folded;
            self.rows_cut += t.rows.len() - keep - keep_folded;
            // Rows are significant first: keep the first `keep` of those
            // and the first `keep_folded` of the folded ones.
            let folded = t.rows.split_off(shown);
            t.rows.truncate(keep);
            t.rows.extend(folded.into_iter().take(keep_folded));
            t.folded = keep_folded;
        }
        self.tables.retain(|t| !t.rows.is_empty());
        // The expectations, the policy's checks and the claims: the first
        // `expectations` of each (they are sorted failures first).
        fn cut<T>(v: &mut Vec<T>, n: usize) -> usize {
            let keep = v.len().min(n);
            let gone = v.len() - keep;
            v.truncate(keep);
            gone
        }
        self.expectations_cut += cut(&mut self.expectations, expectations)
            + cut(&mut self.guards, expectations)
            + cut(&mut self.claims, expectations);
    }

    /// The longest of the lists [`View::truncate`] cuts by its second
    /// argument.
    pub fn checks_len(&self) -> usize {
        self.expectations
            .len()
            .max(self.guards.len())
            .max(self.claims.len())
    }

    /// Keeps the first `new` new splats and the first `old` pre-existing
    /// ones, and the first occurrence of the first `excerpts` of those
    /// kept (new ones come first), counting what is cut.
    pub fn cut_splats(&mut self, new: usize, old: usize, excerpts: usize) {
        let (mut n, mut o) = (0, 0);
        let mut kept = Vec::with_capacity(self.splats.len());
        for s in std::mem::take(&mut self.splats) {
            let (count, max, cut) = if s.new {
                (&mut n, new, &mut self.splats_cut_new)
            } else {
                (&mut o, old, &mut self.splats_cut_old)
            };
            if *count < max {
                *count += 1;
                kept.push(s);
            } else {
                *cut += 1;
            }
        }
        for s in kept.iter_mut().skip(excerpts) {
            if !s.excerpt.is_empty() {
                s.excerpt.clear();
                self.excerpts_cut += 1;
            }
        }
        self.splats = kept;
    }

    pub fn row_count(&self) -> usize {
        self.tables.iter().map(|t| t.rows.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_named_not_shown() {
        let plan = crate::matrix::default_plan(&Default::default()).unwrap();
        let mut cell = plan.cells[0].clone();
        cell.job.script = Some(mmci_record::ScriptJob {
            name: "leak".into(),
            image: "tools".into(),
            text: Some("root:$6$SHADOWHASH:19000:0:99999:7:::\n".into()),
            ..Default::default()
        });
        let v = job_values(&cell);
        let script = v.iter().find(|(k, _)| k == "script").unwrap();
        assert_eq!(script.1, "leak (image tools)");
        assert!(!v.iter().any(|(_, x)| x.contains("SHADOWHASH")), "{v:?}");
    }
}
