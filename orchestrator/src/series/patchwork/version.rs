//! Which REST API version to speak: the newest of 1.3, 1.2 and 1.1 that
//! the instance serves (patchwork.kernel.org serves 1.3; kernel-patches-
//! daemon speaks 1.2, NIPA 1.1), read from the instance's API index
//! (`GET /api/1.3/`, a 404 on an instance too old for it, then 1.2, 1.1).
//! Everything mmci uses is in 1.1: series, their mboxes, events with
//! `since` and `order`, patches by `msgid` and `series`, checks. URLs are
//! built for 1.3 (what a dry run prints); the client rewrites their
//! `/api/1.3/` to the version the instance serves.

use serde_json::Value;

/// The versions mmci speaks, newest first.
pub const VERSIONS: &[&str] = &["1.3", "1.2", "1.1"];

/// Does an API index (`GET /api/V/`) list what mmci reads and writes?
pub fn serves_what_mmci_needs(index: &Value) -> bool {
    ["series", "patches", "events", "projects"]
        .iter()
        .all(|k| index.get(k).and_then(Value::as_str).is_some())
}

/// `url` for API version `v`: its `<base>/api/1.3/` prefix rewritten; any
/// other URL (an mbox, a next page the instance handed out) as it is.
pub fn versioned(url: &str, base: &str, v: &str) -> String {
    let prefix = format!("{}{}/", base.trim_end_matches('/'), super::API);
    match url.strip_prefix(&prefix) {
        Some(rest) if v != "1.3" => format!("{}/api/{v}/{rest}", base.trim_end_matches('/')),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_urls() {
        let index = serde_json::json!({
            "projects": "https://p/api/1.1/projects/", "users": "https://p/api/1.1/users/",
            "patches": "https://p/api/1.1/patches/", "series": "https://p/api/1.1/series/",
            "events": "https://p/api/1.1/events/", "covers": "https://p/api/1.1/covers/",
        });
        assert!(serves_what_mmci_needs(&index));
        let cases = [
            serde_json::json!({"detail": "Not found."}),
            serde_json::json!([{"id": 1}]),
            serde_json::json!({"projects": "x", "patches": "x", "series": "x"}),
        ];
        for c in cases {
            assert!(!serves_what_mmci_needs(&c), "{c}");
        }
        let urls = [
            (
                "https://p/api/1.3/events/?since=x",
                "1.1",
                "https://p/api/1.1/events/?since=x",
            ),
            (
                "https://p/api/1.3/patches/7/checks/",
                "1.2",
                "https://p/api/1.2/patches/7/checks/",
            ),
            (
                "https://p/api/1.3/series/7/",
                "1.3",
                "https://p/api/1.3/series/7/",
            ),
            (
                "https://p/series/7/mbox/",
                "1.1",
                "https://p/series/7/mbox/",
            ),
            (
                "https://p/api/1.1/events/?page=2",
                "1.1",
                "https://p/api/1.1/events/?page=2",
            ),
        ];
        for (url, v, want) in urls {
            assert_eq!(versioned(url, "https://p/", v), want, "{url} {v}");
        }
    }
}
