//! `mmci analyse --spread`: one row per cell, kernel and metric with its
//! repeats' median, mean, standard deviation and coefficient of variation.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::analysis::spread::Spread;
use crate::analysis::text::num;

const COLUMNS: [&str; 9] = [
    "cell", "kernel", "accel", "metric", "n", "median", "mean", "sd", "CV",
];

/// The table; a timing metric's name ends in " (timing)".
pub fn render(spreads: &[Spread]) -> String {
    if spreads.is_empty() {
        return "no completed run has a metric: no spread to show\n".into();
    }
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(COLUMNS.to_vec());
    for s in spreads {
        let metric = if s.timing {
            format!("{} (timing)", s.metric)
        } else {
            s.metric.clone()
        };
        let dash = || "-".to_string();
        table.add_row(vec![
            s.cell.clone(),
            s.variant.clone(),
            s.accel.clone(),
            metric,
            s.summary.n.to_string(),
            num(s.summary.median),
            num(s.summary.mean),
            s.summary.stddev.map(num).unwrap_or_else(dash),
            s.cv()
                .map(|cv| format!("{:.1}%", cv * 100.0))
                .unwrap_or_else(dash),
        ]);
    }
    for i in 4..COLUMNS.len() {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!("{table}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::summary;

    fn spread(metric: &str, timing: bool, xs: &[f64]) -> Spread {
        Spread {
            cell: "x86_64-noio_verity-e9d62fc06a".into(),
            variant: "base".into(),
            accel: "tcg-icount".into(),
            metric: metric.into(),
            unit: "ms".into(),
            timing,
            values: xs.to_vec(),
            summary: summary(xs).unwrap(),
        }
    }

    #[test]
    fn rows_with_cv_and_dashes_where_undefined() {
        let t = render(&[
            spread("noio_latency_p99_ms", true, &[8.0, 10.0, 12.0]),
            spread("noio_calls", false, &[7.0]),
        ]);
        insta::assert_snapshot!(t);
    }

    #[test]
    fn nothing_measured_says_so() {
        assert_eq!(
            render(&[]),
            "no completed run has a metric: no spread to show\n"
        );
    }
}
