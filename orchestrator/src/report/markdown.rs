//! GitHub-flavoured markdown: a check run's summary, a PR comment, an
//! Actions job summary. GitHub refuses a check-run summary over 65,535
//! bytes, so the report is cut to fit: verdict, reasons and failed
//! expectations stay, table rows go from the end (the least interesting:
//! rows come failures and regressions first) and the report says how many
//! went and where the rest is.

use super::view::{self, View};
use super::{fill, ReportInput};

const TEMPLATE: &str = include_str!("../../templates/report.md.j2");

/// Reasons listed under the verdict line.
pub const MAX_REASONS: usize = 10;

/// GitHub's limit for a check run's `output.summary`.
pub const CHECK_RUN_LIMIT: usize = 65_535;

/// Escapes what would break a table cell or start markup.
pub fn escape(s: String) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn fill_view(v: &View) -> String {
    fill("report.md", TEMPLATE, minijinja::context! { v => v })
}

/// The report in at most `limit` bytes (if the parts that are never cut
/// fit at all): table rows are cut first, then expectations (passed and
/// inconclusive ones before failed ones, as they are sorted).
pub fn render(input: &ReportInput, limit: usize) -> String {
    let mut full = view::build(input);
    // Every reason is also a row of the expectations table or the runs
    // list below: the top of a comment shows the first few.
    full.reasons_cut = full.reasons.len().saturating_sub(MAX_REASONS);
    full.reasons.truncate(MAX_REASONS);
    // No table row or expectation line renders under this many bytes, so
    // no more than limit / MIN_LINE of them can fit: rendering a thousand
    // cells' rows only to cut them would cost most of the time.
    const MIN_LINE: usize = 40;
    let cap = limit / MIN_LINE;
    let (rows, exps) = (full.row_count(), full.expectations.len());
    if rows <= cap && exps <= cap {
        let out = fill_view(&full);
        if out.len() <= limit {
            return out;
        }
    }
    full.truncate(cap, cap);
    let (rows, exps) = (full.row_count(), full.expectations.len());
    let reasons = full.reasons.len();
    let fits_all = |r: usize, e: usize, n: usize| {
        let mut v = full.clone();
        v.truncate(r, e);
        v.reasons_cut += v.reasons.len().saturating_sub(n);
        v.reasons.truncate(n);
        let out = fill_view(&v);
        (out.len() <= limit).then_some(out)
    };
    // The most rows that fit with every expectation, by bisection: about
    // log2(rows) renders.
    let fits = |r, e| fits_all(r, e, reasons);
    if let Some(out) = largest(rows, |r| fits(r, exps)) {
        return out;
    }
    if let Some(out) = largest(exps, |e| fits(0, e)) {
        return out;
    }
    // A verdict with thousands of reasons: keep the first ones.
    largest(reasons, |n| fits_all(0, 0, n)).unwrap_or_else(|| fits_all(0, 0, 0).unwrap_or_default())
}

/// `f(k)` for the largest `k` in 0..=max where it is Some, assuming that
/// holds for every smaller k too.
fn largest(max: usize, f: impl Fn(usize) -> Option<String>) -> Option<String> {
    let mut best = f(0)?;
    let (mut lo, mut hi) = (0, max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match f(mid) {
            Some(out) => {
                best = out;
                lo = mid;
            }
            None => hi = mid - 1,
        }
    }
    Some(best)
}
