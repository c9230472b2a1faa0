//! The patchwork REST client: requests with the token only where it may
//! go (https or loopback, never followed to another origin), paging,
//! retries on 429/503 with Retry-After, bodies capped, error details.

use super::*;

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
    /// The API version the instance serves, read once ([`Client::version`]).
    version: tokio::sync::OnceCell<&'static str>,
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
            version: tokio::sync::OnceCell::new(),
        })
    }

    /// The newest API version of [`version::VERSIONS`] the instance
    /// serves: its index asked for (without the token) from 1.3 down while
    /// the answer is a 404. Any other answer that is not such an index (an
    /// error, a 429, a proxy's page) leaves 1.3, the current one, and the
    /// request itself says what is wrong.
    pub async fn version(&self) -> &'static str {
        self.version
            .get_or_init(|| async {
                for v in super::version::VERSIONS {
                    let url = format!("{}/api/{v}/", self.base);
                    let resp = match self
                        .http
                        .get(&url)
                        .header("Accept", "application/json")
                        .send()
                        .await
                    {
                        Ok(r) => r,
                        Err(_) => break,
                    };
                    if resp.status().as_u16() == 404 {
                        continue;
                    }
                    let ok = resp.status().is_success();
                    let body = self
                        .read_body("API index", &url, 1, resp)
                        .await
                        .unwrap_or_default();
                    let index: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    if ok && super::version::serves_what_mmci_needs(&index) {
                        tracing::debug!(version = v, "patchwork REST API version");
                        return *v;
                    }
                    break;
                }
                tracing::debug!("patchwork API index not read; speaking 1.3");
                super::API.trim_start_matches("/api/")
            })
            .await
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
        self.on_origin(what, &req.url)?;
        let v = self.version().await;
        let url = self.on_origin(what, &super::version::versioned(&req.url, &self.base, v))?;
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
                    hint: hint(status, req.method, self.token.is_some(), &detail(&body)),
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

const TOKEN_REFUSED: &str = " (the token was refused: check $MMCI_PATCHWORK_TOKEN or --token-file)";

/// What to do about a refusal. A real patchwork answers a bad token with
/// 403 "Invalid token." (its session authentication comes first, so DRF
/// does not say 401), which is not a permission problem.
fn hint(status: u16, method: &str, has_token: bool, detail: &str) -> &'static str {
    let bad_token = detail.contains("Invalid token") || detail.contains("Token inactive");
    match (status, method) {
        (401, _) => TOKEN_REFUSED,
        (403, _) if bad_token => TOKEN_REFUSED,
        (403, _) => " (the token's user may not add checks here: patchwork needs the add_check permission for the project)",
        (404, "POST") if !has_token => " (patchwork answers 404 to writes without a token)",
        (404, "POST") => " (no such patch on this instance, or the token cannot see it)",
        (404, _) => " (no such series, patch or project on this instance)",
        (400, "POST") if detail.contains("target_url") => " (patchwork refused the check's link: --target-url)",
        (400, _) => " (patchwork refused the request's content)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // First the API index, asked without the token; then the lists.
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(seen[0].starts_with("GET /api/1.3/ ") && !seen[0].contains(TOKEN));
        assert!(
            seen[1..]
                .iter()
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
