//! The regression policy's checks and the cover letter's claims as the
//! terminal shows them: one line each, in the order the reports use
//! (failures and contradictions first), cleaned as the view cleans them.

use super::view::{claim_views, guard_views};
use crate::analysis::model::Comparison;

/// `regression policy:` then one line per check: `FAIL threads=64
/// patched pswpout_per_ktouch (swap-out ...): regressed: ...`.
pub fn render_policy(c: &Comparison) -> String {
    let guards = guard_views(c);
    if guards.is_empty() {
        return String::new();
    }
    let mut out = String::from("regression policy (runs with an OOM kill, then the guards):\n");
    for g in guards {
        out.push_str(&format!(
            "  {:<10} {} {}: {} ({}): {}\n",
            g.status, g.cell, g.kernel, g.metric, g.why, g.reason
        ));
    }
    out
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
            k.finding,
            k.row,
            k.setup,
            k.line,
            k.claimed,
            k.cell,
            k.measured,
            k.p,
            k.reason
        ));
    }
    out
}
