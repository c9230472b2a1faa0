//! Terminal summary of a matrix run: the kernels (with new build
//! warnings), then one row per cell and kernel with each repeat's key
//! figures side by side. Base-vs-candidate statistics are the analysis
//! module's job; this table shows the raw runs.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::matrix::Slot;
use crate::results::dir::Manifest;
use crate::results::RunResult;

fn short(commit: Option<&str>) -> String {
    commit.map_or("-".into(), |c| c[..c.len().min(12)].to_string())
}

/// The kernels block: one line per variant and arch, new warnings below;
/// build text in it cannot drive the terminal.
pub fn render_kernels(m: &Manifest) -> String {
    crate::report::untrusted::text(&kernels_raw(m))
}

fn kernels_raw(m: &Manifest) -> String {
    let mut out = String::new();
    for k in &m.kernels {
        out.push_str(&format!(
            "kernel {} ({}): {} | {} | head {}{}{}\n",
            k.variant,
            k.target(),
            k.description,
            crate::report::untrusted::release(&k.kernel.release),
            short(k.kernel.head_commit.as_deref()),
            k.kernel
                .series_hash
                .as_deref()
                .map(|h| format!(" | series {}", &h[..h.len().min(12)]))
                .unwrap_or_default(),
            match k.kernel.build_sandboxed {
                Some(true) => " | built sandboxed",
                Some(false) => " | built without sandbox",
                None => "",
            }
        ));
        if !k.new_warnings.is_empty() {
            out.push_str(&format!(
                "  {} new build warning(s) against the baseline:\n",
                k.new_warnings.len()
            ));
            for w in &k.new_warnings {
                out.push_str(&format!("    {w}\n"));
            }
        }
    }
    for f in &m.failed_kernels {
        out.push_str(&format!(
            "kernel {} ({}): FAILED: {}\n",
            f.variant,
            crate::results::dir::target_text(f.arch, f.flavour),
            f.error
        ));
    }
    for (arch, accel) in &m.accel {
        out.push_str(&format!("accelerator {arch}: {accel}\n"));
    }
    out
}

/// One run in a table cell: the outcome when it did not complete or its
/// scenario has no figure, else its scenario's figure
/// (`registry::Def::runs_figure`: scenario A's `throttles/peak/touches`).
fn run_figure(r: Option<&RunResult>) -> String {
    let Some(r) = r else {
        return "not run".into();
    };
    let figure = (crate::scenario::registry::of(r.job.scenario).runs_figure)(&r.metrics);
    match figure {
        Some(f) if r.classification.outcome == crate::run::outcome::Outcome::Completed => f,
        _ => r.classification.outcome.name().to_string(),
    }
}

/// The runs table: rows are cell x kernel, columns the repeats.
pub fn render_runs(m: &Manifest, runs: &[(Slot, Option<RunResult>)]) -> String {
    // A column per repeat, to the most any cell has (the sequential
    // budget's runs included).
    let repeats = m.plan.most_repeats();
    let mut table = Table::new();
    table
        .load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    let mut header = vec!["cell".to_string(), "kernel".to_string()];
    header.extend((1..=repeats).map(|r| format!("r{r}")));
    table.set_header(header);
    let mut rows: Vec<(String, String)> = vec![];
    for (slot, _) in runs {
        let key = (slot.cell.clone(), slot.variant.clone());
        if !rows.contains(&key) {
            rows.push(key);
        }
    }
    for (cell, variant) in rows {
        let label = m
            .plan
            .cell(&cell)
            .filter(|c| !c.label.is_empty())
            .map_or(cell.clone(), |c| format!("{}\n{}", c.id, c.label));
        let mut row = vec![label, variant.clone()];
        for rep in 1..=repeats {
            let r = runs
                .iter()
                .find(|(s, _)| s.cell == cell && s.variant == variant && s.repeat == rep);
            row.push(match r {
                Some((_, r)) => run_figure(r.as_ref()),
                None => String::new(),
            });
        }
        table.add_row(row);
    }
    for i in 2..2 + repeats as usize {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    crate::report::untrusted::text(&format!(
        "{table}\nper run: ISOLATED throttles / nr_isolated peak / touches (oom: OOM kills)\n"
    ))
}
