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

/// The API version spoken, as the path segment.
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

/// An ISO 8601 date as patchwork writes it (`2026-11-30T10:19:14.123456`,
/// UTC, the fraction optional), as a key that orders like the time.
pub fn date_key(date: &str) -> Option<(String, u32)> {
    let d = date.trim().trim_end_matches('Z');
    let d = d.strip_suffix("+00:00").unwrap_or(d);
    let (secs, frac) = match d.split_once('.') {
        Some((s, f)) => (s, f),
        None => (d, ""),
    };
    let b = secs.as_bytes();
    let shape = b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T' || *c == b' ',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        });
    if !shape || !frac.chars().all(|c| c.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let micros = format!("{frac:0<6}")[..6].parse().ok()?;
    Some((secs.replace(' ', "T"), micros))
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

/// An answer: the body and the next page, if any.
struct Answer {
    body: Vec<u8>,
    next: Option<String>,
}

/// A client for one instance.
pub struct Client {
    base: String,
    /// `base`'s origin: every URL followed must have it.
    origin: reqwest::Url,
    http: reqwest::Client,
    token: Option<String>,
    pub limits: Limits,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "patchwork::Client({}, token: {})",
            self.base,
            if self.token.is_some() {
                "[redacted]"
            } else {
                "none"
            }
        )
    }
}

impl Client {
    /// `base` as checked by [`check_url`]; a token only for writes.
    pub fn new(
        base: &str,
        token: Option<String>,
        limits: Limits,
    ) -> Result<Client, PatchworkError> {
        let base = base.trim_end_matches('/').to_string();
        let origin = reqwest::Url::parse(&base)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| PatchworkError::BadUrl {
                option: "--patchwork",
                url: base.clone(),
            })?;
        let token = token.filter(|t| !t.trim().is_empty());
        if token.is_some() && !token_transport_ok(&origin) {
            return Err(PatchworkError::InsecureToken { url: base });
        }
        let http = reqwest::Client::builder()
            .timeout(limits.timeout)
            .user_agent(concat!("mmci/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| PatchworkError::Client(e.to_string()))?;
        Ok(Client {
            base,
            origin,
            http,
            token,
            limits,
        })
    }

    /// `url` if it is on the instance's origin (scheme, host and port).
    fn on_origin(&self, what: &str, url: &str) -> Result<reqwest::Url, PatchworkError> {
        let foreign = || PatchworkError::ForeignOrigin {
            what: what.to_string(),
            url: url.to_string(),
            base: self.base.clone(),
        };
        let u = reqwest::Url::parse(url).map_err(|_| foreign())?;
        if u.origin() == self.origin.origin() {
            Ok(u)
        } else {
            Err(foreign())
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn redact(&self, text: &str) -> String {
        // Not post::redact: posting comes later in the pipeline.
        match &self.token {
            Some(t) if t.len() >= 4 => text.replace(t.as_str(), "[redacted]"),
            _ => text.to_string(),
        }
    }

    /// Sends `req` with retries: connection errors and 5xx answers up to
    /// `attempts` times, 429 answers after their Retry-After within the
    /// bounds. Patchwork shows the newest check of a context, so a POST
    /// repeated after a lost answer is harmless.
    async fn send(&self, what: &str, req: &Request) -> Result<Answer, PatchworkError> {
        let mut attempt = 0;
        let mut rate_tries = 0;
        let mut rate_waited = Duration::ZERO;
        let mut backoff = self.limits.backoff;
        // Every request stays on the instance: the token goes nowhere else.
        let url = self.on_origin(what, &req.url)?;
        loop {
            attempt += 1;
            tracing::debug!(method = req.method, url = %req.url, attempt, "patchwork API");
            let mut r = match req.method {
                "POST" => self.http.post(url.clone()),
                _ => self.http.get(url.clone()),
            }
            .header("Accept", "application/json");
            if let Some(t) = &self.token {
                r = r.header("Authorization", format!("Token {t}"));
            }
            if let Some(b) = &req.body {
                r = r
                    .header("Content-Type", "application/json")
                    .body(serde_json::to_vec(b).expect("serializable"));
            }
            let resp = match r.send().await {
                Ok(resp) => resp,
                Err(e) => {
                    if attempt < self.limits.attempts {
                        tracing::warn!(url = %req.url, attempt, "patchwork unreachable, retrying");
                        tokio::time::sleep(backoff).await;
                        backoff *= 2;
                        continue;
                    }
                    return Err(PatchworkError::Unreachable {
                        what: what.to_string(),
                        url: req.url.clone(),
                        attempts: attempt,
                        message: self.redact(&crate::host::error_chain(&e)),
                    });
                }
            };
            let status = resp.status().as_u16();
            if status == 429 {
                rate_tries += 1;
                let asked = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| retry_after(v, std::time::SystemTime::now()))
                    .unwrap_or(backoff);
                let wait = asked.min(self.limits.max_retry_after);
                if rate_waited + wait > self.limits.max_rate_wait {
                    return Err(PatchworkError::RateLimited {
                        what: what.to_string(),
                        url: req.url.clone(),
                        tries: rate_tries,
                        waited_s: rate_waited.as_secs(),
                    });
                }
                tracing::warn!(url = %req.url, wait_s = wait.as_secs_f64(), "patchwork rate limit (429), waiting");
                tokio::time::sleep(wait).await;
                rate_waited += wait;
                // A 429 is not a failed attempt.
                attempt -= 1;
                continue;
            }
            if resp.status().is_server_error() && attempt < self.limits.attempts {
                tracing::warn!(url = %req.url, status, attempt, "patchwork server error, retrying");
                tokio::time::sleep(backoff).await;
                backoff *= 2;
                continue;
            }
            let next = resp
                .headers()
                .get_all("link")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(link_next);
            let success = resp.status().is_success();
            let body = self.read_body(what, &req.url, attempt, resp).await?;
            if !success {
                return Err(PatchworkError::Status {
                    what: what.to_string(),
                    url: req.url.clone(),
                    status,
                    detail: self.redact(&detail(&body)),
                    hint: hint(status, req.method, self.token.is_some()),
                });
            }
            return Ok(Answer { body, next });
        }
    }

    /// An answer's body, refused as soon as it is known to be larger than
    /// `limits.max_body`: by its Content-Length, else chunk by chunk.
    async fn read_body(
        &self,
        what: &str,
        url: &str,
        attempt: u32,
        mut resp: reqwest::Response,
    ) -> Result<Vec<u8>, PatchworkError> {
        let limit = self.limits.max_body;
        let too_large = || PatchworkError::TooLarge {
            what: what.to_string(),
            url: url.to_string(),
            limit,
            name: if limit == MAX_HTTP_BODY {
                "MAX_HTTP_BODY"
            } else {
                "limits.max_body"
            },
        };
        if resp.content_length().is_some_and(|n| n > limit) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() as u64 + chunk.len() as u64 > limit {
                        return Err(too_large());
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(body),
                Err(e) => {
                    return Err(PatchworkError::Unreachable {
                        what: what.to_string(),
                        url: url.to_string(),
                        attempts: attempt,
                        message: self.redact(&crate::host::error_chain(&e)),
                    })
                }
            }
        }
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        url: &str,
    ) -> Result<(T, Option<String>), PatchworkError> {
        let req = Request {
            method: "GET",
            url: url.to_string(),
            body: None,
        };
        let a = self.send(what, &req).await?;
        let v = serde_json::from_slice(&a.body).map_err(|e| PatchworkError::BadAnswer {
            what: what.to_string(),
            url: url.to_string(),
            why: e.to_string(),
        })?;
        Ok((v, a.next))
    }

    /// Every item of a list, following `rel="next"` links page by page.
    pub async fn list<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        url: &str,
    ) -> Result<Vec<T>, PatchworkError> {
        let mut items = Vec::new();
        let mut next = Some(url.to_string());
        let mut pages = 0;
        while let Some(u) = next {
            pages += 1;
            if pages > self.limits.max_pages {
                return Err(PatchworkError::TooManyPages {
                    what: what.to_string(),
                    url: url.to_string(),
                    max: self.limits.max_pages,
                });
            }
            let (page, n): (Vec<T>, _) = self.get_json(what, &u).await?;
            items.extend(page);
            next = match n {
                Some(n) => Some(self.resolve(&u, &n, what)?),
                None => None,
            };
        }
        Ok(items)
    }

    /// A next link relative to the page it came from, on the instance's
    /// origin only.
    fn resolve(&self, page: &str, link: &str, what: &str) -> Result<String, PatchworkError> {
        let next = reqwest::Url::parse(page)
            .and_then(|p| p.join(link))
            .map_err(|e| PatchworkError::BadAnswer {
                what: what.to_string(),
                url: page.to_string(),
                why: format!("Link rel=\"next\" `{link}`: {e}"),
            })?;
        let what = format!("{what}, Link rel=\"next\" of {page}");
        Ok(self.on_origin(&what, next.as_str())?.to_string())
    }

    /// `GET /api/1.3/series/{id}/`.
    pub async fn series(&self, id: u64) -> Result<PwSeries, PatchworkError> {
        let url = api_url(&self.base, &format!("series/{id}/"));
        Ok(self.get_json(&format!("series {id}"), &url).await?.0)
    }

    /// A series' mails as one mbox: the cover letter's mbox (patchwork's
    /// series mbox has the patches only) followed by the series' mbox.
    /// Both must be on the instance's origin; together they are at most
    /// [`MAX_MBOX_BYTES`].
    pub async fn series_mbox(&self, s: &PwSeries) -> Result<Vec<u8>, PatchworkError> {
        let what = format!("series {} mbox", s.id);
        let cover_what = format!("series {} cover letter", s.id);
        // Both URLs checked before either is fetched.
        let cover = s.cover_letter.as_ref().and_then(|c| c.mbox.as_deref());
        if let Some(mbox) = cover {
            self.on_origin(&cover_what, mbox)?;
        }
        self.on_origin(&what, &s.mbox)?;
        let mut out = Vec::new();
        if let Some(mbox) = cover {
            let req = Request {
                method: "GET",
                url: mbox.to_string(),
                body: None,
            };
            out = self.send(&cover_what, &req).await?.body;
            if !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            out.push(b'\n');
        }
        let req = Request {
            method: "GET",
            url: s.mbox.clone(),
            body: None,
        };
        out.extend(self.send(&what, &req).await?.body);
        if out.len() as u64 > MAX_MBOX_BYTES {
            return Err(PatchworkError::TooLarge {
                what,
                url: s.mbox.clone(),
                limit: MAX_MBOX_BYTES,
                name: "MAX_MBOX_BYTES",
            });
        }
        Ok(out)
    }

    /// Sends one request built elsewhere (a check); returns the answer's
    /// JSON.
    pub async fn send_json(&self, what: &str, req: &Request) -> Result<Value, PatchworkError> {
        let a = self.send(what, req).await?;
        serde_json::from_slice(&a.body).map_err(|e| PatchworkError::BadAnswer {
            what: what.to_string(),
            url: req.url.clone(),
            why: e.to_string(),
        })
    }
}

/// Patchwork's own words: `{"detail": "..."}`, or a field's errors
/// (`{"context": ["..."]}` on a 400).
fn detail(body: &[u8]) -> String {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return String::new();
    };
    if let Some(d) = v.get("detail").and_then(Value::as_str) {
        return format!(": {d}");
    }
    match v.as_object() {
        Some(o) if !o.is_empty() => {
            let fields: Vec<String> = o
                .iter()
                .map(|(k, v)| {
                    let msgs = match v {
                        Value::Array(a) => a
                            .iter()
                            .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_string))
                            .collect::<Vec<_>>()
                            .join(" "),
                        other => other.to_string(),
                    };
                    format!("{k}: {msgs}")
                })
                .collect();
            format!(": {}", fields.join("; "))
        }
        _ => String::new(),
    }
}

fn hint(status: u16, method: &str, has_token: bool) -> &'static str {
    match (status, method) {
        (401, _) => " (the token was refused: check $MMCI_PATCHWORK_TOKEN or --token-file)",
        (403, _) => " (the token's user may not add checks here: patchwork needs the add_check permission for the project)",
        (404, "POST") if !has_token => " (patchwork answers 404 to writes without a token)",
        (404, "POST") => " (no such patch on this instance, or the token cannot see it)",
        (404, _) => " (no such series, patch or project on this instance)",
        (400, _) => " (patchwork refused the request's content)",
        _ => "",
    }
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

    #[test]
    fn dates_order_like_times() {
        let cases: &[(&str, Option<(&str, u32)>)] = &[
            ("2026-11-30T10:19:14", Some(("2026-11-30T10:19:14", 0))),
            (
                "2026-11-30T10:19:14.5",
                Some(("2026-11-30T10:19:14", 500_000)),
            ),
            (
                "2026-11-30T10:19:14.123456Z",
                Some(("2026-11-30T10:19:14", 123_456)),
            ),
            (
                "2026-11-30 10:19:14+00:00",
                Some(("2026-11-30T10:19:14", 0)),
            ),
            ("yesterday", None),
            ("2026-11-30T10:19", None),
        ];
        for (d, want) in cases {
            assert_eq!(date_key(d), want.map(|(s, m)| (s.to_string(), m)), "{d}");
        }
        assert!(date_key("2026-11-30T10:19:14Z") < date_key("2026-11-30T10:19:14.000001"));
    }

    #[test]
    fn urls_and_errors() {
        assert_eq!(
            check_url("--patchwork", "https://patchwork.kernel.org/api/1.3/").unwrap(),
            "https://patchwork.kernel.org"
        );
        assert!(check_url("--patchwork", "patchwork.kernel.org").is_err());
        assert!(check_url("--patchwork", "ftp://patchwork.kernel.org").is_err());
        assert_eq!(
            api_url("http://127.0.0.1:9/", "series/7/"),
            "http://127.0.0.1:9/api/1.3/series/7/"
        );
        assert_eq!(
            detail(br#"{"detail":"Invalid token."}"#),
            ": Invalid token."
        );
        assert_eq!(
            detail(br#"{"context":["Enter a valid slug."]}"#),
            ": context: Enter a valid slug."
        );
        assert_eq!(detail(b"<html>"), "");
    }

    #[test]
    fn tokens_travel_over_https_or_to_loopback_only() {
        let cases = [
            ("https://patchwork.kernel.org", true),
            ("https://10.0.0.1:8443", true),
            ("http://127.0.0.1:18765", true),
            ("http://127.9.9.9", true),
            ("http://localhost:8000", true),
            ("http://[::1]:8000", true),
            ("http://patchwork.kernel.org", false),
            ("http://10.0.0.1", false),
            ("http://[2001:db8::1]", false),
            ("http://localhost.evil.org", false),
        ];
        for (url, ok) in cases {
            let u = reqwest::Url::parse(url).unwrap();
            assert_eq!(token_transport_ok(&u), ok, "{url}");
            let c = Client::new(url, Some("pwtoken-SECRET-1234".into()), Limits::default());
            match (c, ok) {
                (Ok(_), true) => {}
                (Err(e), false) => {
                    assert!(
                        e.to_string()
                            .contains("refusing to send the token over http://"),
                        "{e}"
                    );
                    assert!(!e.is_remote());
                }
                (c, _) => panic!("{url}: {c:?}"),
            }
            // Without a token any http(s) instance is fine (reads are public).
            Client::new(url, None, Limits::default()).unwrap();
        }
    }

    /// What a hostile loopback server sends.
    #[derive(Clone)]
    enum Reply {
        /// Status 200, these headers and this JSON or text body.
        Ok(Vec<(String, String)>, String),
        /// Status 200, a chunked body that never ends.
        Endless,
    }

    /// A loopback HTTP/1.1 server: `reply(path)` for each request; the
    /// heads of the requests it got (request line and headers) are kept.
    async fn server(
        reply: impl Fn(&str) -> Reply + Send + Sync + 'static,
    ) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (seen2, reply) = (seen.clone(), std::sync::Arc::new(reply));
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let (seen, reply) = (seen2.clone(), reply.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if sock.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    seen.lock().unwrap().push(head);
                    match reply(&path) {
                        Reply::Ok(headers, body) => {
                            let mut out = format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                                body.len()
                            );
                            for (k, v) in headers {
                                out.push_str(&format!("{k}: {v}\r\n"));
                            }
                            out.push_str("\r\n");
                            out.push_str(&body);
                            let _ = sock.write_all(out.as_bytes()).await;
                        }
                        Reply::Endless => {
                            let _ = sock
                                .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                                .await;
                            let mut chunk = b"10000\r\n".to_vec();
                            chunk.extend(std::iter::repeat_n(b'F', 0x10000));
                            chunk.extend(b"\r\n");
                            while sock.write_all(&chunk).await.is_ok() {}
                        }
                    }
                });
            }
        });
        (base, seen)
    }

    fn series_json(id: u64, mbox: &str) -> String {
        serde_json::json!({"id": id, "mbox": mbox, "patches": []}).to_string()
    }

    /// Probe 50: a series whose mbox is an endless body is refused at the
    /// cap (the review measured 2.9 GB of RSS, then an abort).
    #[tokio::test]
    async fn an_endless_mbox_stops_at_the_cap() {
        let (base, _) = server(|path| match path {
            "/api/1.3/series/2/" => Reply::Ok(vec![], String::new()),
            _ => Reply::Endless,
        })
        .await;
        let mbox = format!("{base}/series/2/mbox/");
        let s: PwSeries = serde_json::from_str(&series_json(2, &mbox)).unwrap();
        let client = Client::new(&base, None, Limits::default()).unwrap();
        let t0 = std::time::Instant::now();
        let e = client.series_mbox(&s).await.unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "{mbox}: the answer is larger than 67108864 bytes, the limit (MAX_HTTP_BODY); refused"
            )),
            "{e}"
        );
        assert!(e.is_remote());
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            t0.elapsed()
        );
        // A Content-Length over the cap is refused before reading.
        let (base, _) = server(|_| Reply::Ok(vec![], "x".repeat(2048))).await;
        let small = Limits {
            max_body: 1024,
            ..Limits::default()
        };
        let e = Client::new(&base, None, small)
            .unwrap()
            .series(1)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("larger than 1024 bytes"), "{e}");
    }

    /// Probe 51: a series whose mbox (or cover letter) is on another
    /// origin is refused, and the other origin gets no request at all.
    #[tokio::test]
    async fn mbox_urls_of_another_origin_are_refused() {
        let (foreign, foreign_seen) = server(|_| Reply::Ok(vec![], "From x\n".into())).await;
        let (base, seen) = server(|_| Reply::Ok(vec![], "From x\n".into())).await;
        let other_port = format!("{foreign}/series/3/mbox/");
        let other_scheme = base.replace("http://", "https://") + "/series/3/mbox/";
        let cases = [
            (series_json(3, &other_port), other_port.clone()),
            (series_json(3, &other_scheme), other_scheme.clone()),
            (
                serde_json::json!({"id": 3, "mbox": format!("{base}/series/3/mbox/"), "patches": [],
                    "cover_letter": {"id": 9, "mbox": other_port}})
                .to_string(),
                format!("{foreign}/series/3/mbox/"),
            ),
        ];
        let client = Client::new(&base, None, Limits::default()).unwrap();
        for (json, url) in cases {
            let s: PwSeries = serde_json::from_str(&json).unwrap();
            let e = client.series_mbox(&s).await.unwrap_err();
            assert!(
                e.to_string().contains(&format!(
                    "{url} is not on {base} (another scheme, host or port); refused"
                )),
                "{e}"
            );
        }
        assert!(foreign_seen.lock().unwrap().is_empty());
        assert!(
            seen.lock().unwrap().is_empty(),
            "nothing fetched before the check"
        );
        // The same origin is fetched.
        let s: PwSeries =
            serde_json::from_str(&series_json(3, &format!("{base}/series/3/mbox/"))).unwrap();
        assert_eq!(client.series_mbox(&s).await.unwrap(), b"From x\n");
    }

    /// Probe 52: a list page whose `Link: rel="next"` points at another
    /// origin: the token never goes there (the review saw it received),
    /// and the list ends in an error rather than in the other origin's
    /// answer. A next page on the instance is followed, with the token.
    #[tokio::test]
    async fn the_token_never_follows_a_link_elsewhere() {
        const TOKEN: &str = "pwtoken-SECRET-1234";
        let (foreign, foreign_seen) =
            server(|_| Reply::Ok(vec![], r#"[{"id": 666}]"#.into())).await;
        let steal = format!("{foreign}/steal");
        let (base, seen) = server(move |path| {
            if path.contains("page=2") {
                Reply::Ok(vec![], r#"[{"id": 2}]"#.into())
            } else if path.contains("evil") {
                Reply::Ok(
                    vec![("Link".into(), format!("<{steal}>; rel=\"next\""))],
                    r#"[{"id": 1}]"#.into(),
                )
            } else {
                Reply::Ok(
                    vec![(
                        "Link".into(),
                        "</api/1.3/patches/?page=2>; rel=\"next\"".into(),
                    )],
                    r#"[{"id": 1}]"#.into(),
                )
            }
        })
        .await;
        let client = Client::new(&base, Some(TOKEN.into()), Limits::default()).unwrap();
        let e = client
            .list::<Value>(
                "finding patch <a@b>",
                &api_url(&base, "patches/?msgid=evil"),
            )
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("{foreign}/steal is not on {base}")),
            "{e}"
        );
        assert!(
            foreign_seen.lock().unwrap().is_empty(),
            "{:?}",
            foreign_seen.lock().unwrap()
        );
        assert!(!e.to_string().contains(TOKEN));
        // On the instance: both pages, each request with the token.
        let items = client
            .list::<Value>("patches", &api_url(&base, "patches/"))
            .await
            .unwrap();
        assert_eq!(
            items,
            [serde_json::json!({"id": 1}), serde_json::json!({"id": 2})]
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(
            seen.iter()
                .all(|h| h.contains(&format!("authorization: Token {TOKEN}"))
                    || h.contains(&format!("Authorization: Token {TOKEN}"))),
            "{seen:?}"
        );
        // A request built elsewhere for another origin is refused too.
        let req = Request {
            method: "POST",
            url: format!("{foreign}/api/1.3/patches/1/checks/"),
            body: Some(serde_json::json!({"state": "success"})),
        };
        let e = client.send_json("check", &req).await.unwrap_err();
        assert!(matches!(e, PatchworkError::ForeignOrigin { .. }), "{e}");
        assert!(foreign_seen.lock().unwrap().is_empty());
    }
}
