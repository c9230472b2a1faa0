//! `mmci matrix show`: the validated plan and what it will cost.

use comfy_table::{presets, ContentArrangement, Table};

use super::plan::{estimated_run_seconds, shard_cells, Plan, Shard};
use crate::matrix::schedule::{self, Capacity, Need};

/// Cost of running `cells` of `plan` on `cap`.
pub fn estimate(plan: &Plan, cells: &[&super::Cell], cap: Capacity) -> schedule::Simulation {
    let queue: Vec<(Need, f64)> = plan
        .slots(cells)
        .iter()
        .map(|s| {
            let c = plan.cell(&s.cell).expect("slot of the plan");
            (
                Need {
                    vcpus: c.vcpus,
                    memory_mb: c.memory_mb,
                },
                estimated_run_seconds(c),
            )
        })
        .collect();
    schedule::simulate(cap, &queue)
}

pub fn render(plan: &Plan, shard: Option<Shard>, cap: Capacity) -> String {
    let cells = match shard {
        Some(s) => shard_cells(&plan.cells, s),
        None => plan.cells.iter().collect(),
    };
    let mut out = format!("matrix {}", plan.source);
    if let Some(d) = &plan.description {
        out.push_str(&format!(": {d}"));
    }
    out.push('\n');
    if let Some(s) = shard {
        out.push_str(&format!(
            "shard {s}: {} of {} cells\n",
            cells.len(),
            plan.cells.len()
        ));
    }
    let mut t = Table::new();
    t.load_preset(presets::ASCII_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "cell",
            "arch",
            "vcpus",
            "memory",
            "scenario",
            "duration",
            "matrix values",
        ]);
    for c in &cells {
        t.add_row(vec![
            c.id.clone(),
            c.arch.to_string(),
            c.vcpus.to_string(),
            format!("{} MiB", c.memory_mb),
            c.job.scenario.to_string(),
            format!("{} s", c.job.duration_s),
            c.label.clone(),
        ]);
    }
    out.push_str(&format!("{t}\n"));
    for (i, v) in plan.variants.iter().enumerate() {
        out.push_str(&format!(
            "kernel {}{}: {}\n",
            v.name,
            if i == 0 { " (baseline)" } else { "" },
            v.describe()
        ));
    }
    let runs = cells.len() * plan.variants.len() * plan.repeats as usize;
    let sim = estimate(plan, &cells, cap);
    out.push_str(&format!(
        "{} cells x {} kernels x {} repeats = {runs} runs\n",
        cells.len(),
        plan.variants.len(),
        plan.repeats
    ));
    out.push_str(&format!(
        "estimate: {:.1} guest-minutes; {:.1} minutes wall on {} vCPUs / {} MiB for guests (kernel builds not included); host RAM peak {} MiB for guests, {} vCPUs at once\n",
        sim.guest_seconds / 60.0,
        sim.wall_seconds / 60.0,
        cap.vcpus,
        cap.memory_mb,
        sim.peak_memory_mb,
        sim.peak_vcpus
    ));
    for (metric, e) in &plan.expect {
        out.push_str(&format!(
            "expect {metric}: {}{}\n",
            e.kind(),
            e.threshold()
                .map(|t| format!(" (threshold {t})"))
                .unwrap_or_default()
        ));
    }
    for c in &cells {
        if let Some(r) = c.regime {
            let name = if c.label.is_empty() { &c.id } else { &c.label };
            out.push_str(&format!("regime {name}: calibrated for {}\n", r.text()));
        }
    }
    out
}
