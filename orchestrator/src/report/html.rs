//! One self-contained HTML page per results dir: the tables, and SVG
//! plots drawn here (per-metric distributions base vs candidate,
//! nr_isolated over time per run, scenario B's latencies). Inline CSS and
//! SVG only: no scripts, no fonts, nothing fetched, so the file can be
//! mailed, archived as a CI artifact or opened offline.

use serde::Serialize;

use super::svg::{self, Line, BASE_COLOR, CANDIDATE_COLOR};
use super::view;
use super::{fill, ReportInput};
use crate::analysis::compare::cell_name;
use crate::analysis::model::{CandidateComparison, CellComparison, Comparison, MetricComparison};

const TEMPLATE: &str = include_str!("../../templates/report.html.j2");

/// Cell/candidate pairs that get plots: a page with thousands of charts
/// helps nobody and takes long to render; the tables keep every cell.
pub const MAX_PLOTTED: usize = 12;

#[derive(Serialize)]
struct Plots {
    heading: String,
    candidate: String,
    series: Option<String>,
    latency: Vec<String>,
    metrics: Vec<String>,
}

/// nr_isolated over time, every run of the cell: base and candidate.
fn isolation_chart(c: &Comparison, cell: &CellComparison, cand: &str) -> Option<String> {
    let lines: Vec<Line> = c
        .series
        .iter()
        .filter(|s| s.cell == cell.cell && (s.variant == c.baseline || s.variant == cand))
        .map(|s| Line {
            color: if s.variant == c.baseline {
                BASE_COLOR
            } else {
                CANDIDATE_COLOR
            },
            points: s
                .t_ms
                .iter()
                .zip(&s.nr_isolated)
                .map(|(t, v)| (*t as f64 / 1000.0, *v as f64))
                .collect(),
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(svg::lines(
        "nr_isolated (anon + file), peak per interval",
        "seconds since the workload started",
        "pages",
        &lines,
        &[(&c.baseline, BASE_COLOR), (cand, CANDIDATE_COLOR)],
    ))
}

fn plots(c: &Comparison, cell: &CellComparison, cand: &CandidateComparison) -> Plots {
    fn sides<'a>(
        base: &'a str,
        cand: &'a str,
        m: &'a MetricComparison,
    ) -> [(&'a str, &'a [f64]); 2] {
        [(base, &m.base_values), (cand, &m.candidate_values)]
    }
    let sides = |m| sides(&c.baseline, &cand.variant, m);
    let latency = cand
        .metrics
        .iter()
        .filter(|m| crate::scenario::registry::histograms().any(|h| h == m.metric))
        .map(|m| svg::histogram(&m.metric, &m.unit, sides(m)))
        .collect();
    // A row compared on the runs without an OOM kill plots those runs,
    // and its columns say so (the title has no room for it).
    let metrics = cand
        .metrics
        .iter()
        .map(|m| match m.survivors {
            Some(_) => {
                // The chart adds "(n=...)": the runs kept.
                let base = format!("{}, no OOM", c.baseline);
                let kept = format!("{}, no OOM", cand.variant);
                svg::strip(
                    &m.metric,
                    &m.unit,
                    [(&base, &m.base_values), (&kept, &m.candidate_values)],
                )
            }
            None => svg::strip(&m.metric, &m.unit, sides(m)),
        })
        .collect();
    Plots {
        heading: format!("{}, {} vs {}", cell_name(cell), c.baseline, cand.variant),
        candidate: cand.variant.clone(),
        series: isolation_chart(c, cell, &cand.variant),
        latency,
        metrics,
    }
}

pub fn render(input: &ReportInput) -> String {
    let c = input.comparison;
    let v = view::build(input);
    let pairs: Vec<_> = c
        .cells
        .iter()
        .flat_map(|cell| cell.candidates.iter().map(move |cand| (cell, cand)))
        .collect();
    let plots: Vec<Plots> = pairs
        .iter()
        .take(MAX_PLOTTED)
        .map(|(cell, cand)| plots(c, cell, cand))
        .collect();
    fill(
        "report.html",
        TEMPLATE,
        minijinja::context! {
            v => v,
            plots => plots,
            plots_cut => pairs.len().saturating_sub(MAX_PLOTTED),
            version => env!("CARGO_PKG_VERSION"),
        },
    )
}
