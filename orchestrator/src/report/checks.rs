//! The regression policy's checks and the cover letter's claims as rows
//! every report shows (failures and contradictions first, every string
//! from a cover letter or a guest cleaned), and as the terminal's lines;
//! with them the terminal's lines of the cells' calibrated regimes.

use serde::Serialize;

use super::untrusted;
use crate::analysis::model::{cell_name, Comparison, Finding, Status};
use crate::analysis::text;

#[derive(Clone, Debug, Serialize)]
pub struct GuardView {
    pub cell: String,
    pub kernel: String,
    pub metric: String,
    pub why: String,
    /// `PASS`, `FAIL`, `undecided` or `not judged`.
    pub status: String,
    pub reason: String,
    /// The smallest worsening (a size guard) or kill rate (the OOM guard)
    /// it would have caught with 80% power, `underpowered` beside it when
    /// that is past twice the floor; empty without a test.
    pub caught: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ClaimView {
    pub kernel: String,
    pub setup: String,
    pub row: String,
    pub line: usize,
    pub claimed: String,
    pub metric: String,
    pub cell: String,
    pub measured: String,
    pub p: String,
    /// `agrees`, `contradicts`, `not significant`, `not measured here`,
    /// or `agrees (by construction)`.
    pub finding: String,
    pub contradicts: bool,
    pub reason: String,
}

/// What a guard's test would have caught (`GuardView::caught`).
fn caught(d: &crate::analysis::decision::GuardDecision) -> String {
    use crate::analysis::decision::GuardKind;
    let x = match (d.kind, d.detectable) {
        (_, None) => return "nothing at these runs".into(),
        (GuardKind::Size, Some(x)) => text::pct(x).trim_start_matches('+').to_string(),
        (GuardKind::OomRuns, Some(q)) => format!("a kill rate of {:.0}%", q * 100.0),
    };
    if d.underpowered {
        format!("{x}, underpowered")
    } else {
        x
    }
}

/// The regression policy's checks as rows: failures first, then what is
/// undecided at the floor, then passes, then what was not judged; stable
/// within.
pub fn guard_views(c: &Comparison) -> Vec<GuardView> {
    let mut out: Vec<(u8, GuardView)> = vec![];
    for cell in &c.cells {
        for cand in &cell.candidates {
            for g in &cand.guards {
                let (rank, status) = match g.status {
                    Some(Status::Fail) => (0, "FAIL"),
                    Some(Status::Inconclusive | Status::NoVerdict) => (1, "undecided"),
                    Some(Status::Pass) => (2, "PASS"),
                    None => (3, "not judged"),
                };
                out.push((
                    rank,
                    GuardView {
                        cell: cell_name(cell).to_string(),
                        kernel: cand.variant.clone(),
                        metric: g.metric.clone(),
                        why: g.why.clone(),
                        status: status.into(),
                        reason: untrusted::line(&g.reason),
                        caught: g.decision.as_ref().map_or(String::new(), caught),
                    },
                ));
            }
        }
    }
    out.sort_by_key(|(r, _)| *r);
    out.into_iter().map(|(_, g)| g).collect()
}

/// The claims as rows. Every string of a claim came from the cover
/// letter (untrusted) or was built from it.
pub fn claim_views(c: &Comparison) -> Vec<ClaimView> {
    let mut out: Vec<(u8, ClaimView)> = c
        .claims
        .iter()
        .map(|k| {
            let rank = match k.finding {
                Finding::Contradicts => 0,
                Finding::Agrees if !k.by_construction => 1,
                Finding::NotSignificant => 2,
                Finding::Agrees => 3,
                Finding::NotMeasured => 4,
            };
            let finding = if k.by_construction {
                "agrees (by construction)".to_string()
            } else {
                k.finding.name().to_string()
            };
            (
                rank,
                ClaimView {
                    kernel: untrusted::line(&k.variant),
                    setup: untrusted::line(&k.setup),
                    row: untrusted::line(&k.row),
                    line: k.line,
                    claimed: untrusted::line(&k.claimed),
                    metric: k.metric.clone().unwrap_or_else(|| "-".into()),
                    cell: k.cell.as_deref().map_or("-".into(), untrusted::line),
                    measured: k.measured.as_deref().map_or("-".into(), untrusted::line),
                    p: k.p.map_or("-".into(), text::p),
                    finding,
                    contradicts: k.finding == Finding::Contradicts,
                    reason: untrusted::line(&k.reason),
                },
            )
        })
        .collect();
    out.sort_by_key(|(r, _)| *r);
    out.into_iter().map(|(_, k)| k).collect()
}

/// `regression policy:`, then each failed check on a line of its own,
/// then one line per guard: in how many cells it passed and was not
/// judged (with the first reason why not).
pub fn render_policy(c: &Comparison) -> String {
    let guards = guard_views(c);
    if guards.is_empty() {
        return String::new();
    }
    let mut out = String::from("regression policy (runs with an OOM kill, then the guards):\n");
    for g in guards.iter().filter(|g| g.status == "FAIL") {
        out.push_str(&format!(
            "  FAIL {} {}: {} ({}): {}\n",
            g.cell, g.kernel, g.metric, g.why, g.reason
        ));
    }
    let mut names: Vec<(&str, &str)> = vec![];
    for g in &guards {
        if !names.iter().any(|(m, _)| *m == g.metric) {
            names.push((&g.metric, &g.why));
        }
    }
    for (metric, why) in names {
        let of = |status: &str| {
            guards
                .iter()
                .filter(|g| g.metric == metric && g.status == status)
                .collect::<Vec<_>>()
        };
        let (pass, fail, unjudged) = (of("PASS"), of("FAIL"), of("not judged"));
        let undecided = of("undecided");
        let mut parts = vec![];
        if !pass.is_empty() {
            // What each pass could have missed.
            let caught: Vec<String> = pass
                .iter()
                .filter(|g| !g.caught.is_empty())
                .map(|g| format!("{} {}", g.cell, g.caught))
                .collect();
            parts.push(match caught.as_slice() {
                [] => format!("passed in {} cell(s)", pass.len()),
                _ => format!(
                    "passed in {} cell(s) (80% power to catch: {})",
                    pass.len(),
                    caught.join("; ")
                ),
            });
        }
        if !fail.is_empty() {
            parts.push(format!("FAILED in {} cell(s)", fail.len()));
        }
        if !undecided.is_empty() {
            // Each with its figures in the verdict's lines below.
            parts.push(format!(
                "undecided at the floor in {} cell(s) (see the verdict)",
                undecided.len()
            ));
        }
        // One reason when every cell gives the same; else each with its
        // cells, since a reason may carry a cell's own run counts.
        let mut reasons: Vec<(&str, Vec<&str>)> = vec![];
        for g in &unjudged {
            match reasons.iter_mut().find(|(r, _)| *r == g.reason) {
                Some((_, cells)) => cells.push(&g.cell),
                None => reasons.push((&g.reason, vec![&g.cell])),
            }
        }
        match reasons.as_slice() {
            [] => {}
            [(reason, _)] => parts.push(format!(
                "not judged in {} cell(s): {reason}",
                unjudged.len()
            )),
            many => parts.push(format!(
                "not judged in {} cell(s): {}",
                unjudged.len(),
                many.iter()
                    .map(|(reason, cells)| format!("{}: {reason}", cells.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
        out.push_str(&format!("  {metric} ({why}): {}\n", parts.join(", ")));
    }
    out
}

/// `regimes ...:` then, for each cell the matrix gives a regime, whether
/// its baseline's runs were in it (`analysis::regime`).
pub fn render_regimes(c: &Comparison) -> String {
    let lines: Vec<String> = c
        .cells
        .iter()
        .filter_map(|cell| {
            cell.regime.map(|r| {
                let held = if r.holds() { "held" } else { "NOT held" };
                format!("  {held} {}: {}\n", cell_name(cell), r.text())
            })
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "regimes (what the matrix was calibrated for, on the baseline's runs):\n{}",
        lines.concat()
    )
}

/// `the cover letter's claims:` then one line per claim and cell.
pub fn render_claims(c: &Comparison) -> String {
    let claims = claim_views(c);
    if claims.is_empty() {
        return String::new();
    }
    let mut out = String::from("the cover letter's claims (claimed, then measured here):\n");
    for k in claims {
        out.push_str(&format!(
            "  {}: {} [{}] line {}: {} | {}: {} (p={}): {}\n",
            k.finding, k.row, k.setup, k.line, k.claimed, k.cell, k.measured, k.p, k.reason
        ));
    }
    out
}
