//! De-duplicated checks, as kernel-patches-daemon posts them: before a
//! check goes on a patch, the newest check of the same context on that
//! patch is read (`GET /api/1.3/patches/{id}/checks/?context=NAME`), and
//! the new one is sent only if it says something new. An unchanged state
//! and link is not posted again (a rerun adds nothing to the patch's
//! list), and a final state (success, warning, fail) is never replaced by
//! pending (`--start` after the results were posted).

use serde::Deserialize;

use super::{Check, CheckState};
use crate::series::patchwork as pw;

/// A check as patchwork lists it, the fields compared.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Posted {
    pub id: u64,
    #[serde(default)]
    pub date: String,
    pub state: String,
    #[serde(default)]
    pub target_url: Option<String>,
    #[serde(default)]
    pub context: String,
}

/// What to do with a check on one patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Post,
    /// The newest check of the context has this state and link already.
    Unchanged {
        check: u64,
    },
    /// The newest check is final; pending would hide it.
    KeepFinal {
        check: u64,
        state: String,
    },
    /// A stage without a result, whose newest check (if any) is not a
    /// pending one to close.
    NoResult {
        check: Option<u64>,
    },
}

/// The newest of a context's checks: by date, then id (patchwork lists
/// them by id, oldest first).
pub fn newest(checks: &[Posted], context: &str) -> Option<Posted> {
    checks
        .iter()
        .filter(|c| c.context == context)
        .max_by_key(|c| (pw::date_key(&c.date), c.id))
        .cloned()
}

/// Whether `check` is worth posting over `newest`.
pub fn decide(newest: Option<&Posted>, check: &Check) -> Decision {
    let Some(n) = newest else {
        return Decision::Post;
    };
    let url = |u: Option<&str>| u.filter(|u| !u.is_empty()).map(str::to_string);
    if n.state == check.state.as_str()
        && url(n.target_url.as_deref()) == url(check.target_url.as_deref())
    {
        return Decision::Unchanged { check: n.id };
    }
    if check.state == CheckState::Pending && n.state != "pending" {
        return Decision::KeepFinal {
            check: n.id,
            state: n.state.clone(),
        };
    }
    Decision::Post
}

/// Whether `check`, for a stage the results say nothing of, closes
/// `newest`: only a pending check is closed (what `--start` opened).
pub fn decide_close(newest: Option<&Posted>, check: &Check) -> Decision {
    match (newest, decide(newest, check)) {
        // Closed already, by an earlier run.
        (_, d @ Decision::Unchanged { .. }) => d,
        (Some(n), d) if n.state == "pending" => d,
        (other, _) => Decision::NoResult {
            check: other.map(|n| n.id),
        },
    }
}

/// `GET /api/1.3/patches/{id}/checks/`, `?context=NAME` for one context.
pub fn checks_url(base: &str, id: u64, context: Option<&str>) -> String {
    let mut u = reqwest::Url::parse(&pw::api_url(base, &format!("patches/{id}/checks/")))
        .expect("checked base URL");
    if let Some(c) = context {
        u.query_pairs_mut().append_pair("context", c);
    }
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted(id: u64, date: &str, state: &str, url: Option<&str>) -> Posted {
        Posted {
            id,
            date: date.into(),
            state: state.into(),
            target_url: url.map(str::to_string),
            context: "mmci".into(),
        }
    }

    fn check(state: CheckState, url: Option<&str>) -> Check {
        Check {
            state,
            context: "mmci".into(),
            target_url: url.map(str::to_string),
            description: "d".into(),
        }
    }

    #[test]
    fn only_news_is_posted() {
        use CheckState::*;
        const U: &str = "https://ci.example.org/runs/1";
        const V: &str = "https://ci.example.org/runs/2";
        /// (newest check: state, link), new state, new link, decision.
        type Case<'a> = (
            Option<(&'a str, Option<&'a str>)>,
            CheckState,
            Option<&'a str>,
            Decision,
        );
        let cases: &[Case] = &[
            (None, Pending, None, Decision::Post),
            (None, Success, Some(U), Decision::Post),
            (
                Some(("success", Some(U))),
                Success,
                Some(U),
                Decision::Unchanged { check: 9 },
            ),
            (
                Some(("pending", None)),
                Pending,
                None,
                Decision::Unchanged { check: 9 },
            ),
            (
                Some(("pending", Some(""))),
                Pending,
                None,
                Decision::Unchanged { check: 9 },
            ),
            (Some(("success", Some(U))), Success, Some(V), Decision::Post),
            (Some(("success", Some(U))), Fail, Some(U), Decision::Post),
            (Some(("pending", None)), Success, Some(U), Decision::Post),
            (
                Some(("fail", Some(U))),
                Pending,
                None,
                Decision::KeepFinal {
                    check: 9,
                    state: "fail".into(),
                },
            ),
            (
                Some(("warning", None)),
                Pending,
                Some(V),
                Decision::KeepFinal {
                    check: 9,
                    state: "warning".into(),
                },
            ),
        ];
        for (prev, state, url, want) in cases {
            let prev = prev.map(|(s, u)| posted(9, "2026-12-01T08:00:00", s, u));
            assert_eq!(
                decide(prev.as_ref(), &check(*state, *url)),
                *want,
                "{prev:?} {state:?} {url:?}"
            );
        }
    }

    #[test]
    fn a_stage_without_result_only_closes_a_pending_check() {
        let warning = check(CheckState::Warning, None);
        let cases: &[(Option<&str>, Decision)] = &[
            (None, Decision::NoResult { check: None }),
            (Some("pending"), Decision::Post),
            (Some("success"), Decision::NoResult { check: Some(9) }),
            (Some("fail"), Decision::NoResult { check: Some(9) }),
            (Some("warning"), Decision::Unchanged { check: 9 }),
        ];
        for (prev, want) in cases {
            let prev = prev.map(|s| posted(9, "2026-12-01T08:00:00", s, None));
            assert_eq!(decide_close(prev.as_ref(), &warning), *want, "{prev:?}");
        }
    }

    #[test]
    fn the_newest_is_by_date_then_id() {
        let mut other = posted(7, "2026-12-02T00:00:00", "fail", None);
        other.context = "mmci-build".into();
        let list = [
            posted(3, "2026-12-01T08:00:00.5", "success", None),
            posted(2, "2026-12-01T08:00:00.25", "pending", None),
            posted(4, "2026-12-01T08:00:00.5", "warning", None),
            other,
        ];
        assert_eq!(newest(&list, "mmci").map(|c| c.id), Some(4));
        assert_eq!(newest(&list, "mmci-build").map(|c| c.id), Some(7));
        assert_eq!(newest(&list, "mmci-boot"), None);
        assert_eq!(
            checks_url("https://pw.example.org", 5, Some("mmci-build")),
            "https://pw.example.org/api/1.3/patches/5/checks/?context=mmci-build"
        );
        assert_eq!(
            checks_url("https://pw.example.org", 5, None),
            "https://pw.example.org/api/1.3/patches/5/checks/"
        );
    }
}
