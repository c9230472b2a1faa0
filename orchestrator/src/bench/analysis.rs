//! `mmci bench analysis`: the analysis of 10,000 runs (1,000 cells x base
//! and patched x 5 repeats, every catalog metric, a 20-point time series
//! each) against the target of 1 s for analysing and rendering.
//! The runs are synthetic (`analysis::synthetic`: deterministic
//! pseudo-random metrics).

use std::time::Instant;

use crate::analysis::compare::compare;
use crate::analysis::model::Options;
use crate::analysis::synthetic::synthetic;
use crate::bench::boot::median;
use crate::report::comparison as terminal;

pub const TARGET_MS: f64 = 1000.0;

pub struct AnalysisBench {
    pub runs: usize,
    pub comparisons: usize,
    pub analyse_ms: Vec<f64>,
    pub json_ms: Vec<f64>,
    pub json_bytes: usize,
    pub terminal_ms: Vec<f64>,
    /// The report renderers (`crate::report`), and their output sizes.
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
        let input = crate::report::ReportInput::new(&c, &manifest);
        let t = Instant::now();
        let md = crate::report::render(crate::report::Format::Markdown, &input);
        b.markdown_ms.push(ms(t));
        b.markdown_bytes = md.len();
        let t = Instant::now();
        let mail = crate::report::render(crate::report::Format::Email, &input);
        b.email_ms.push(ms(t));
        b.email_bytes = mail.len();
        let t = Instant::now();
        let html = crate::report::render(crate::report::Format::Html, &input);
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
        // 10 cells x 1 candidate x scenario A's metrics, but for the one
        // only a cell with `kill_after_s` measures.
        let scenario_a = crate::analysis::catalog::all()
            .filter(|m| m.scenario == mmci_record::Scenario::MglruIsolation)
            .filter(|m| m.name != "exit_after_kill_ms")
            .count();
        assert_eq!(b.comparisons, 10 * scenario_a);
        // Every format was rendered, the markdown within GitHub's limit.
        assert!(
            b.markdown_bytes > 0 && b.markdown_bytes <= crate::report::markdown::CHECK_RUN_LIMIT
        );
        assert!(b.email_bytes > 0 && b.html_bytes > 0);
        assert!(render(&b).contains("  html     "));
    }
}
