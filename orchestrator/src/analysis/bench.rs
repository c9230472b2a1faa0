//! `mmci bench analysis`: the analysis of 10,000 runs (1,000 cells x base
//! and patched x 5 repeats, every catalog metric, a 20-point time series
//! each) against the target of 1 s for analysing and rendering.
//! The runs are synthetic (deterministic pseudo-random metrics); nothing
//! here is used outside the benchmark.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use mmci_record::ThrottleStat;

use super::compare::compare;
use super::model::{Options, RunSeries};
use super::terminal;
use crate::bench::median;
use crate::matrix::file::{ExpectKind, Expectation};
use crate::matrix::{plan, Overrides, Variant};
use crate::metrics::{MglruMetrics, THROTTLE_ISOLATED};
use crate::outcome::{Classification, Outcome};
use crate::results::{KernelInfo, RunResult, Timing, RESULT_FORMAT};
use crate::results_dir::{Host, Manifest, MANIFEST_FORMAT};
use crate::vm::Accel;

pub const TARGET_MS: f64 = 1000.0;

/// xorshift64*: reproducible noise without a dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `v` give or take `spread` (relative).
    fn around(&mut self, v: f64, spread: f64) -> u64 {
        (v * (1.0 + spread * (2.0 * self.next() - 1.0))).max(0.0) as u64
    }
}

/// A synthetic results dir in memory: the manifest, `runs` runs, their series.
pub fn synthetic(runs: usize) -> (Manifest, BTreeMap<String, RunResult>, Vec<RunSeries>) {
    let repeats = 5u32;
    let cells = (runs / (2 * repeats as usize)).max(1);
    let over = Overrides {
        repeats: Some(repeats),
        variants: Some(vec![
            Variant::base(),
            Variant {
                name: "patched".into(),
                lore: Some("<synthetic@mmci>".into()),
                ..Variant::base()
            },
        ]),
        ..Default::default()
    };
    let mut p = plan::from_text(
        &crate::bench_matrix::synthetic_matrix(cells),
        "synthetic.yaml",
        Path::new("."),
        &over,
    )
    .expect("the synthetic matrix is valid");
    p.cells.truncate(cells);
    p.expect = [
        ("throttle_isolated", ExpectKind::Nonzero),
        ("nr_isolated_peak", ExpectKind::Increase),
        ("oom_kills", ExpectKind::NoRegression),
        ("touches", ExpectKind::NoRegression),
    ]
    .into_iter()
    .map(|(k, e)| (k.to_string(), Expectation::Kind(e)))
    .collect();
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        mmci_version: env!("CARGO_PKG_VERSION").into(),
        plan_id: p.fingerprint(),
        plan: p.clone(),
        shards: None,
        host: Host {
            hostname: "synthetic".into(),
            cpus: 2,
            memory_mb: 8192,
        },
        accel: BTreeMap::new(),
        kernels: vec![],
        failed_kernels: vec![],
        created_unix: 0,
    };
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut results = BTreeMap::new();
    let mut series = Vec::new();
    let all: Vec<_> = p.cells.iter().collect();
    for slot in p.slots(&all) {
        let patched = slot.variant == "patched";
        let mut m = MglruMetrics {
            memcg_max_events: noise.around(600.0, 0.2),
            nr_isolated_peak: if patched { noise.around(230.0, 0.3) } else { 0 },
            touches: noise.around(if patched { 48_000.0 } else { 40_000.0 }, 0.1),
            workload_ms: noise.around(20_000.0, 0.02),
            pgscan: noise.around(80_000.0, 0.1),
            pgsteal: noise.around(28_000.0, 0.1),
            pswpin: noise.around(20_000.0, 0.15),
            pswpout: noise.around(30_000.0, 0.15),
            pgmajfault: noise.around(19_000.0, 0.15),
            workingset_refault_anon: noise.around(20_000.0, 0.15),
            psi_some_us: noise.around(17e6, 0.2),
            psi_full_us: noise.around(13e6, 0.2),
            ..Default::default()
        };
        m.scan_efficiency = Some(m.pgsteal as f64 / m.pgscan as f64);
        if patched {
            let count = noise.around(35_000.0, 0.2);
            m.throttle.insert(
                THROTTLE_ISOLATED.into(),
                ThrottleStat {
                    count,
                    usec_delayed_sum: count * 100,
                    usec_delayed_max: 100_000,
                },
            );
        }
        let mut s = RunSeries {
            run: slot.id(),
            cell: slot.cell.clone(),
            variant: slot.variant.clone(),
            repeat: slot.repeat,
            ..Default::default()
        };
        for i in 1..=20u64 {
            s.t_ms.push(i * 1000);
            let iso = noise.around(m.nr_isolated_peak as f64 / 2.0, 0.9);
            s.nr_isolated.push(iso);
            s.nr_isolated_anon.push(iso);
            s.nr_isolated_file.push(0);
            s.mem_free_kb.push(noise.around(800_000.0, 0.05));
            s.memcg_current_bytes.push(noise.around(16e6, 0.05));
            s.touches.push(m.touches * i / 20);
        }
        series.push(s);
        results.insert(slot.id(), synthetic_run(&slot.id(), m));
    }
    (manifest, results, series)
}

fn synthetic_run(id: &str, metrics: MglruMetrics) -> RunResult {
    RunResult {
        format: RESULT_FORMAT,
        mmci_version: env!("CARGO_PKG_VERSION").into(),
        id: id.into(),
        started_unix: 0,
        classification: Classification {
            outcome: Outcome::Completed,
            reason: "completed".into(),
            crash_report: None,
        },
        accel: Accel::Kvm,
        accel_note: "synthetic".into(),
        arch: crate::arch::Arch::X86_64,
        vcpus: 2,
        memory_mb: 1024,
        swap_mb: 256,
        kernel: KernelInfo {
            image: "vmlinux".into(),
            release: "6.12".into(),
            tree: None,
            tree_commit: None,
            build_key: None,
            series_hash: None,
            head_commit: None,
            build_sandboxed: None,
            build_warnings: vec![],
            series: None,
        },
        job: Default::default(),
        attempts: 1,
        qemu_exit: None,
        timed_out: false,
        bad_lines: vec![],
        metrics: Some(metrics),
        noio_metrics: None,
        splats: vec![],
        timing: Timing::default(),
    }
}

pub struct AnalysisBench {
    pub runs: usize,
    pub comparisons: usize,
    pub analyse_ms: Vec<f64>,
    pub json_ms: Vec<f64>,
    pub json_bytes: usize,
    pub terminal_ms: Vec<f64>,
    /// The report renderers (`crate::render`), and their output sizes.
    pub markdown_ms: Vec<f64>,
    pub markdown_bytes: usize,
    pub email_ms: Vec<f64>,
    pub email_bytes: usize,
    pub html_ms: Vec<f64>,
    pub html_bytes: usize,
}

/// Analyses `runs` synthetic runs `rounds` times, then writes the JSON
/// and renders the terminal report, the markdown (cut to GitHub's limit),
/// the email and the HTML page of each.
pub fn analysis(runs: usize, rounds: usize) -> AnalysisBench {
    let (manifest, results, series) = synthetic(runs);
    let mut b = AnalysisBench {
        runs: results.len(),
        comparisons: 0,
        analyse_ms: vec![],
        json_ms: vec![],
        json_bytes: 0,
        terminal_ms: vec![],
        markdown_ms: vec![],
        markdown_bytes: 0,
        email_ms: vec![],
        email_bytes: 0,
        html_ms: vec![],
        html_bytes: 0,
    };
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
    for _ in 0..rounds.max(1) {
        // The series are moved into the comparison; cloning them is the
        // caller's cost (reading records.jsonl), not the analysis'.
        let series = series.clone();
        let t = Instant::now();
        let c = compare(
            &manifest,
            &results,
            &manifest.plan.expect,
            series,
            &Options::default(),
        );
        b.analyse_ms.push(ms(t));
        let t = Instant::now();
        let json = serde_json::to_vec(&c).expect("serializable");
        b.json_ms.push(ms(t));
        b.json_bytes = json.len();
        let t = Instant::now();
        let text = terminal::render(&c);
        b.terminal_ms.push(ms(t));
        let input = crate::render::ReportInput::new(&c, &manifest);
        let t = Instant::now();
        let md = crate::render::render(crate::render::Format::Markdown, &input);
        b.markdown_ms.push(ms(t));
        b.markdown_bytes = md.len();
        let t = Instant::now();
        let mail = crate::render::render(crate::render::Format::Email, &input);
        b.email_ms.push(ms(t));
        b.email_bytes = mail.len();
        let t = Instant::now();
        let html = crate::render::render(crate::render::Format::Html, &input);
        b.html_ms.push(ms(t));
        b.html_bytes = html.len();
        b.comparisons = c
            .cells
            .iter()
            .flat_map(|c| &c.candidates)
            .map(|c| c.metrics.len())
            .sum();
        std::hint::black_box(text);
    }
    b
}

pub fn render(b: &AnalysisBench) -> String {
    let med = |v: &[f64]| median(v).unwrap_or(0.0);
    let total = med(&b.analyse_ms)
        + med(&b.json_ms)
        + med(&b.terminal_ms)
        + med(&b.markdown_ms)
        + med(&b.email_ms)
        + med(&b.html_ms);
    let mb = |n: usize| n as f64 / 1e6;
    format!(
        "analysis of {} runs ({} metric comparisons), median of {}:\n  analyse  {:8.1} ms\n  json     {:8.1} ms ({:.1} MB)\n  terminal {:8.1} ms\n  markdown {:8.1} ms ({:.3} MB)\n  email    {:8.1} ms ({:.1} MB)\n  html     {:8.1} ms ({:.1} MB)\n  total    {:8.1} ms; target {:.0} ms: {}\n",
        b.runs,
        b.comparisons,
        b.analyse_ms.len(),
        med(&b.analyse_ms),
        med(&b.json_ms),
        mb(b.json_bytes),
        med(&b.terminal_ms),
        med(&b.markdown_ms),
        mb(b.markdown_bytes),
        med(&b.email_ms),
        mb(b.email_bytes),
        med(&b.html_ms),
        mb(b.html_bytes),
        total,
        TARGET_MS,
        if total <= TARGET_MS { "met" } else { "MISSED" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_runs_fill_the_plan() {
        let (m, runs, series) = synthetic(100);
        assert_eq!(m.plan.cells.len(), 10);
        assert_eq!(runs.len(), 100);
        assert_eq!(series.len(), 100);
        let b = analysis(100, 1);
        assert_eq!(b.runs, 100);
        // 10 cells x 1 candidate x scenario A's metrics.
        let scenario_a = super::super::catalog::CATALOG
            .iter()
            .filter(|m| m.scenario == mmci_record::Scenario::MglruIsolation)
            .count();
        assert_eq!(b.comparisons, 10 * scenario_a);
        // Every format was rendered, the markdown within GitHub's limit.
        assert!(
            b.markdown_bytes > 0 && b.markdown_bytes <= crate::render::markdown::CHECK_RUN_LIMIT
        );
        assert!(b.email_bytes > 0 && b.html_bytes > 0);
        assert!(render(&b).contains("  html     "));
    }
}
