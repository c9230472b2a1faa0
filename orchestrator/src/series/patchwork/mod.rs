//! Patchwork's REST API, version 1.3 (what patchwork.kernel.org serves):
//! the one client every patchwork feature goes through. It reads a series
//! and its mbox (the `--patchwork URL --pw-series ID` source), lists events
//! (`mmci watch --patchwork`) and creates checks on patches (`mmci post
//! patchwork`).
//!
//! Lists are followed page by page through the `Link: <...>; rel="next"`
//! header (events have a fixed page size, so the pages are the only way).
//! A 429 answer waits for its Retry-After, bounded per wait and in all. The
//! token only ever travels in the `Authorization: Token ...` header: errors
//! are built from status codes and patchwork's `detail`, and redacted anyway.
//!
//! What an instance answers is not trusted: bodies are capped like the
//! lore fetcher's ([`MAX_HTTP_BODY`], by Content-Length and per chunk), and
//! the URLs it hands out (a `Link: rel="next"`, a series' `mbox`) are
//! followed only on the configured base's origin (scheme, host, port), so
//! the token, which is sent only there, cannot be led elsewhere. A token
//! never travels over http:// but to a loopback address (tests).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fetch::{MAX_HTTP_BODY, MAX_MBOX_BYTES};

mod client;
mod dates;
pub mod version;
pub use client::Client;
pub use dates::{date_key, naive_utc};

/// The API version URLs are built for, as the path segment; the client
/// speaks the newest the instance serves ([`version`]).
pub const API: &str = "/api/1.3";

#[derive(Debug, thiserror::Error)]
pub enum PatchworkError {
    #[error("{option} {url}: not the http(s) URL of a patchwork instance (e.g. https://patchwork.kernel.org)")]
    BadUrl { option: &'static str, url: String },
    #[error("patchwork, {what}: {url}: unreachable after {attempts} attempt(s): {message}")]
    Unreachable {
        what: String,
        url: String,
        attempts: u32,
        message: String,
    },
    #[error("patchwork, {what}: {url}: HTTP {status}{detail}{hint}")]
    Status {
        what: String,
        url: String,
        status: u16,
        detail: String,
        hint: &'static str,
    },
    #[error("patchwork, {what}: {url}: still rate limited (HTTP 429) after {tries} tries and {waited_s} s of waiting; try again later")]
    RateLimited {
        what: String,
        url: String,
        tries: u32,
        waited_s: u64,
    },
    #[error("patchwork, {what}: {url}: unexpected answer ({why})")]
    BadAnswer {
        what: String,
        url: String,
        why: String,
    },
    #[error("patchwork, {what}: {url}: more than {max} pages; narrow the query")]
    TooManyPages {
        what: String,
        url: String,
        max: usize,
    },
    #[error("patchwork, {what}: {url} is not on {base} (another scheme, host or port); refused: mmci follows only URLs of the instance it was given")]
    ForeignOrigin {
        what: String,
        url: String,
        base: String,
    },
    #[error("patchwork, {what}: {url}: the answer is larger than {limit} bytes, the limit ({name}); refused")]
    TooLarge {
        what: String,
        url: String,
        limit: u64,
        name: &'static str,
    },
    #[error("patchwork {url}: refusing to send the token over http:// (clear text): give the https:// URL (http:// takes a token only on a loopback address, for tests)")]
    InsecureToken { url: String },
    #[error("building the HTTP client: {0}")]
    Client(String),
}

impl PatchworkError {
    /// Patchwork refused or could not be reached, as opposed to bad input.
    pub fn is_remote(&self) -> bool {
        !matches!(
            self,
            PatchworkError::BadUrl { .. }
                | PatchworkError::Client(_)
                | PatchworkError::InsecureToken { .. }
        )
    }
}

/// How hard to try.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Attempts on a connection error or a 5xx answer.
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each further one.
    pub backoff: Duration,
    /// Longest single wait for a 429's Retry-After (a longer one is cut).
    pub max_retry_after: Duration,
    /// Longest time spent waiting on 429s for one request.
    pub max_rate_wait: Duration,
    pub timeout: Duration,
    /// Pages of one list followed at most.
    pub max_pages: usize,
    /// Largest answer body read, in bytes.
    pub max_body: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            attempts: 3,
            backoff: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(60),
            max_rate_wait: Duration::from_secs(300),
            timeout: Duration::from_secs(60),
            max_pages: 1000,
            max_body: MAX_HTTP_BODY,
        }
    }
}

/// The instance's base URL (`https://patchwork.kernel.org`), checked.
pub fn check_url(option: &'static str, url: &str) -> Result<String, PatchworkError> {
    let trimmed = url.trim().trim_end_matches('/');
    let trimmed = trimmed.strip_suffix(API).unwrap_or(trimmed);
    match reqwest::Url::parse(trimmed) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => {
            Ok(trimmed.to_string())
        }
        _ => Err(PatchworkError::BadUrl {
            option,
            url: url.to_string(),
        }),
    }
}

/// May a token be sent to `base`? Over https, or over http to a loopback
/// address (a test instance); never in clear text across a network.
pub fn token_transport_ok(base: &reqwest::Url) -> bool {
    let loopback = |host: &str| {
        host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    match base.scheme() {
        "https" => true,
        "http" => base.host_str().is_some_and(loopback),
        _ => false,
    }
}

/// `<base>/api/1.3/<path>`.
pub fn api_url(base: &str, path: &str) -> String {
    format!(
        "{}{API}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// The `rel="next"` target of a Link header (RFC 8288), as patchwork sends
/// it: `<https://.../?page=2>; rel="next", <https://...>; rel="last"`.
pub fn link_next(header: &str) -> Option<String> {
    for part in split_links(header) {
        let part = part.trim();
        let Some(rest) = part.strip_prefix('<') else {
            continue;
        };
        let Some((target, params)) = rest.split_once('>') else {
            continue;
        };
        let is_next = params.split(';').any(|p| {
            let p = p.trim();
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("rel")
                    && v.trim()
                        .trim_matches('"')
                        .split_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("next"))
            })
        });
        if is_next {
            return Some(target.trim().to_string());
        }
    }
    None
}

/// Splits a Link header at the commas between links (not those inside <>
/// or quotes).
fn split_links(header: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut in_url, mut in_quote, mut start) = (false, false, 0);
    for (i, c) in header.char_indices() {
        match c {
            '<' if !in_quote => in_url = true,
            '>' if !in_quote => in_url = false,
            '"' if !in_url => in_quote = !in_quote,
            ',' if !in_url && !in_quote => {
                parts.push(&header[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&header[start..]);
    parts
}

/// The wait a 429 asks for: delta-seconds or an HTTP-date (RFC 9110).
pub fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(s) = v.parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// One request, as sent and as a dry run prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub method: &'static str,
    pub url: String,
    pub body: Option<Value>,
}

impl Request {
    pub fn render(&self) -> String {
        match &self.body {
            Some(b) => format!(
                "{} {}\n{}\n",
                self.method,
                self.url,
                serde_json::to_string_pretty(b).expect("serializable")
            ),
            None => format!("{} {}\n", self.method, self.url),
        }
    }
}

/// A patch or cover letter as embedded in a series.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Embedded {
    pub id: u64,
    #[serde(default)]
    pub msgid: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub mbox: Option<String>,
    #[serde(default)]
    pub web_url: Option<String>,
    /// A series' revision (events' payloads carry it; patches do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ProjectEmbedded {
    #[serde(default)]
    pub link_name: String,
}

/// `GET /api/1.3/series/{id}/`, the fields mmci uses.
#[derive(Clone, Debug, Deserialize)]
pub struct PwSeries {
    pub id: u64,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub web_url: Option<String>,
    #[serde(default)]
    pub version: Option<u32>,
    #[serde(default)]
    pub total: Option<u32>,
    #[serde(default)]
    pub received_total: Option<u32>,
    #[serde(default)]
    pub received_all: Option<bool>,
    pub mbox: String,
    #[serde(default)]
    pub project: Option<ProjectEmbedded>,
    #[serde(default)]
    pub cover_letter: Option<Embedded>,
    #[serde(default)]
    pub patches: Vec<Embedded>,
}

/// A patch's patchwork identity, in series order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchRef {
    pub id: u64,
    pub msgid: String,
    pub name: String,
}

/// Where a series came from on patchwork: kept in the manifest, so that
/// `mmci post patchwork` knows which patches to put its checks on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The instance, e.g. https://patchwork.kernel.org.
    pub url: String,
    pub series: u64,
    #[serde(default)]
    pub web_url: Option<String>,
    #[serde(default)]
    pub project: Option<String>,
    /// `series.patches[]`, in order.
    pub patches: Vec<PatchRef>,
}

impl Origin {
    pub fn of(base: &str, s: &PwSeries) -> Origin {
        Origin {
            url: base.trim_end_matches('/').to_string(),
            series: s.id,
            web_url: s.web_url.clone(),
            project: s.project.as_ref().map(|p| p.link_name.clone()),
            patches: s
                .patches
                .iter()
                .map(|p| PatchRef {
                    id: p.id,
                    msgid: p.msgid.trim_matches(|c| c == '<' || c == '>').to_string(),
                    name: p.name.clone(),
                })
                .collect(),
        }
    }
}

/// A series named on the command line or in a matrix file
/// (`patchwork: {url: ..., series: ...}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesRef {
    /// The instance, e.g. https://patchwork.kernel.org.
    pub url: String,
    pub series: u64,
}

/// Fetches a series and its mails: the source behind `--pw-series`.
pub async fn fetch_series(
    base: &str,
    id: u64,
    limits: Limits,
) -> Result<(Origin, Vec<u8>), PatchworkError> {
    let client = Client::new(base, None, limits)?;
    let s = client.series(id).await?;
    if s.received_all == Some(false) {
        tracing::warn!(
            series = id,
            received = s.received_total,
            total = s.total,
            "patchwork has not received every patch of the series yet"
        );
    }
    let mbox = client.series_mbox(&s).await?;
    Ok((Origin::of(client.base(), &s), mbox))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_headers() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                r#"<https://pw.example.org/api/1.3/events/?page=2>; rel="next", <https://pw.example.org/api/1.3/events/?page=5>; rel="last""#,
                Some("https://pw.example.org/api/1.3/events/?page=2"),
            ),
            (
                r#"<https://p/api/1.3/events/?page=1>; rel="prev", <https://p/api/1.3/events/?page=3&a=1,2>; rel="next""#,
                Some("https://p/api/1.3/events/?page=3&a=1,2"),
            ),
            (
                r#"<https://p/?page=4>; rel=next"#,
                Some("https://p/?page=4"),
            ),
            (
                r#"<https://p/?page=4>;rel="last next""#,
                Some("https://p/?page=4"),
            ),
            (r#"<https://p/?page=1>; rel="first""#, None),
            ("", None),
            ("garbage", None),
        ];
        for (header, want) in cases {
            assert_eq!(link_next(header).as_deref(), *want, "{header}");
        }
    }

    #[test]
    fn retry_after_forms() {
        let now = httpdate::parse_http_date("Tue, 01 Dec 2026 08:00:00 GMT").unwrap();
        let cases: &[(&str, Option<u64>)] = &[
            ("3", Some(3)),
            (" 0 ", Some(0)),
            ("Tue, 01 Dec 2026 08:00:07 GMT", Some(7)),
            ("Tue, 01 Dec 2026 07:59:00 GMT", Some(0)),
            ("soon", None),
            ("-1", None),
        ];
        for (v, want) in cases {
            assert_eq!(retry_after(v, now).map(|d| d.as_secs()), *want, "{v}");
        }
    }
}
