//! `mmci b4-check`: mmci's latest verdict on a series in the shape b4
//! review's external check commands print (`b4.review-perpatch-check-cmd`,
//! `b4.review-series-check-cmd`): b4 writes one message (a patch, or the
//! cover letter) on standard input and reads a JSON list of
//! `{tool, status: pass|warn|fail, summary, url, details}`; an empty list
//! shows nothing. This finds the results dirs under a root whose series
//! holds that message, takes the newest, and renders its verdict.

use std::path::Path;

use serde::Serialize;

use crate::analysis::{Comparison, Status};

/// One entry of b4's check list.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub tool: String,
    pub status: &'static str,
    pub summary: String,
    pub url: String,
    pub details: String,
}

/// b4's status for a verdict: only a PASS passes, only a FAIL fails.
pub fn status_of(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Fail => "fail",
        Status::Inconclusive | Status::NoVerdict => "warn",
    }
}

/// The check of one results dir's comparison; `url` links the report.
pub fn check(c: &Comparison, dir: &Path, url: Option<&str>) -> Check {
    let v = &c.verdict;
    let mut details = format!("results: {}\n", dir.display());
    for r in &v.reasons {
        details.push_str(&format!("- {r}\n"));
    }
    Check {
        tool: "mmci".into(),
        status: status_of(v.status),
        summary: v.headline(),
        url: url.unwrap_or_default().to_string(),
        details,
    }
}

/// The JSON b4 reads: `checks` as a list.
pub fn json(checks: &[Check]) -> String {
    serde_json::to_string(checks).expect("strings only")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pass_passes_and_only_a_fail_fails() {
        let cases = [
            (Status::Pass, "pass"),
            (Status::Fail, "fail"),
            (Status::Inconclusive, "warn"),
            (Status::NoVerdict, "warn"),
        ];
        for (s, want) in cases {
            assert_eq!(status_of(s), want, "{s:?}");
        }
    }

    #[test]
    fn json_is_the_list_b4_reads() {
        let c = Check {
            tool: "mmci".into(),
            status: "warn",
            summary: "INCONCLUSIVE".into(),
            url: String::new(),
            details: "d\n".into(),
        };
        let v: serde_json::Value = serde_json::from_str(&json(&[c])).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{"tool": "mmci", "status": "warn", "summary": "INCONCLUSIVE", "url": "", "details": "d\n"}])
        );
        assert_eq!(json(&[]), "[]");
    }
}
