//! The terminal report of one run: what ran where, then its scenario's
//! sections (`scenario::registry::Def::report_guest` and `report_sections`),
//! its splats and its crash report.

use crate::results::RunResult;
use crate::scenario::registry::{self, GuestShape};

/// The lines above the table: outcome, kernel, accelerator, guest shape.
pub fn header(r: &RunResult) -> String {
    let job = &r.job;
    let mut out = format!(
        "run {}: {} ({})\n",
        r.id,
        r.classification.outcome.name(),
        r.classification.reason
    );
    let commit = r
        .kernel
        .tree_commit
        .as_deref()
        .map(|c| &c[..c.len().min(12)]);
    out.push_str(&format!(
        "kernel:  {}{}\n",
        crate::report::untrusted::release(&r.kernel.release),
        match (&r.kernel.tree, commit) {
            (Some(t), Some(c)) => format!(" (tree {t} @ {c})"),
            _ => format!(" ({})", r.kernel.image.display()),
        }
    ));
    if let Some(hash) = &r.kernel.series_hash {
        let head = r.kernel.head_commit.as_deref().unwrap_or("?");
        out.push_str(&format!(
            "series:  {} applied, HEAD {}{}\n",
            &hash[..hash.len().min(12)],
            &head[..head.len().min(12)],
            if r.kernel.build_sandboxed == Some(true) {
                ", built sandboxed"
            } else {
                ""
            }
        ));
    }
    out.push_str(&format!("accel:   {} ({})\n", r.accel, r.accel_note));
    let shape = GuestShape {
        arch: r.arch,
        vcpus: r.vcpus,
        memory_mb: r.memory_mb,
        swap_mb: r.swap_mb,
    };
    out.push_str(&(registry::of(job.scenario).report_guest)(&shape, job));
    out
}

/// Header, the metrics table, and the crash report if there is one;
/// console and script lines in it cannot drive the terminal.
pub fn render_run(r: &RunResult) -> String {
    crate::report::untrusted::text(&render_raw(r))
}

fn render_raw(r: &RunResult) -> String {
    let mut out = header(r);
    out.push_str(&(registry::of(r.job.scenario).report_sections)(
        &r.metrics,
        r.image.as_ref(),
    ));
    for sp in &r.splats {
        out.push_str(&format!(
            "\nsplat: {} ({}{})\n",
            sp.title,
            sp.kind.name(),
            if sp.count > 1 {
                format!(", {} times", sp.count)
            } else {
                String::new()
            }
        ));
    }
    if let Some(report) = &r.classification.crash_report {
        // The whole report: its call trace is what a maintainer acts on.
        out.push_str("\nconsole:\n");
        for line in report
            .lines()
            .take(crate::results::splat::MAX_EXCERPT_LINES)
        {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
