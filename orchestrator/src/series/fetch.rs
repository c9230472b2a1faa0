//! Fetching series from the network: a lore thread by message-id
//! (`<lore>/all/<msgid>/t.mbox.gz`) and a GitHub pull request's patches (the
//! REST API's `application/vnd.github.patch` form, which is an mbox). Base
//! URLs are configuration; tests point them at loopback servers.

use std::io::Read;
use std::time::Duration;

/// Largest HTTP body read (a gzipped lore thread, a pull request's
/// patches, an Atom feed): bigger answers are refused, never buffered.
pub const MAX_HTTP_BODY: u64 = 64 << 20;
/// Largest mbox taken in: a decompressed lore thread, a pull request's
/// patches, an mbox or patch file given on the command line.
pub const MAX_MBOX_BYTES: u64 = 64 << 20;
/// Largest Atom feed (`mmci watch`); lore's new.atom is ~100 KiB.
pub const MAX_FEED_BYTES: u64 = 16 << 20;

/// Default public-inbox instance.
pub const LORE_URL: &str = "https://lore.kernel.org";
/// Default GitHub API.
pub const GITHUB_API: &str = "https://api.github.com";

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(
        "{url}: unreachable after {attempts} attempts (check the network or the base URL option)"
    )]
    Unreachable {
        url: String,
        attempts: u32,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url}: HTTP {status}{hint}")]
    Status {
        url: String,
        status: u16,
        hint: &'static str,
    },
    #[error("{url}: the thread is not valid gzip")]
    CorruptGzip {
        url: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{0}` is not a message-id (expected something like 20261130.1234-1-author@example.org)"
    )]
    BadMessageId(String),
    #[error("{option} {url}: unknown URL scheme `{scheme}` (use http:// or https://)")]
    Scheme {
        option: &'static str,
        url: String,
        scheme: String,
    },
    #[error("{url}: the {what} is larger than {limit} bytes, the limit ({name}); refused")]
    TooLarge {
        url: String,
        what: &'static str,
        limit: u64,
        name: &'static str,
    },
    #[error("building the HTTP client")]
    Client(#[source] reqwest::Error),
}

/// How to reach a service, and how hard to try.
#[derive(Clone, Debug)]
pub struct Fetcher {
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each further one.
    pub backoff: Duration,
    pub timeout: Duration,
}

impl Default for Fetcher {
    fn default() -> Self {
        Fetcher {
            attempts: 3,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(60),
        }
    }
}

/// A message-id as given by a user: with or without <>, or a lore URL.
pub fn normalize_message_id(given: &str) -> Result<String, FetchError> {
    let mut id = given.trim();
    if let Some(rest) = id
        .strip_prefix("https://")
        .or_else(|| id.strip_prefix("http://"))
    {
        // https://lore.kernel.org/<list>/<msgid>/ or .../all/<msgid>/t.mbox.gz
        let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        id = parts
            .iter()
            .rev()
            .find(|p| p.contains('@'))
            .copied()
            .unwrap_or("");
    }
    let id = id.trim_start_matches('<').trim_end_matches('>');
    let id = percent_decode(id);
    if !id.contains('@')
        || id.contains(|c: char| c.is_whitespace() || c.is_control() || c == '<' || c == '>')
    {
        return Err(FetchError::BadMessageId(given.to_string()));
    }
    Ok(id)
}

/// `%XX` -> byte. Works on bytes: a `%` before a multi-byte character
/// (`%aé@x`) is kept as it is instead of slicing inside the character.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Escapes a message-id for a URL path segment as public-inbox expects.
pub fn escape_message_id(id: &str) -> String {
    let mut out = String::new();
    for b in id.bytes() {
        match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'@'
            | b'+'
            | b'='
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b','
            | b';'
            | b':' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Checks a base URL given as `option` before anything is fetched.
pub fn check_base_url(option: &'static str, url: &str) -> Result<(), FetchError> {
    let scheme = url.split_once("://").map_or("", |(s, _)| s);
    if scheme == "http" || scheme == "https" {
        Ok(())
    } else {
        Err(FetchError::Scheme {
            option,
            url: url.to_string(),
            scheme: if scheme.is_empty() {
                "(none)".into()
            } else {
                scheme.to_string()
            },
        })
    }
}

/// `<base>/all/<msgid>/t.mbox.gz`.
pub fn lore_thread_url(base: &str, message_id: &str) -> String {
    format!(
        "{}/all/{}/t.mbox.gz",
        base.trim_end_matches('/'),
        escape_message_id(message_id)
    )
}

/// `<api>/repos/<owner>/<repo>/pulls/<n>`.
pub fn github_pr_url(api: &str, repo: &str, number: u64) -> String {
    format!("{}/repos/{repo}/pulls/{number}", api.trim_end_matches('/'))
}

impl Fetcher {
    fn client(&self) -> Result<reqwest::Client, FetchError> {
        reqwest::Client::builder()
            .timeout(self.timeout)
            .user_agent(concat!("mmci/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(FetchError::Client)
    }

    /// GET with retries on connection errors and 5xx answers (not on 4xx:
    /// asking again will not make a missing thread appear).
    async fn get(&self, url: &str, headers: &[(&str, String)]) -> Result<Vec<u8>, FetchError> {
        self.get_limited(url, headers, MAX_HTTP_BODY).await
    }

    /// [`Self::get`] refusing a body over `limit` bytes: by its
    /// Content-Length before reading, else as soon as it grows past.
    async fn get_limited(
        &self,
        url: &str,
        headers: &[(&str, String)],
        limit: u64,
    ) -> Result<Vec<u8>, FetchError> {
        let too_large = || FetchError::TooLarge {
            url: url.to_string(),
            what: "answer",
            limit,
            name: if limit == MAX_FEED_BYTES {
                "MAX_FEED_BYTES"
            } else {
                "MAX_HTTP_BODY"
            },
        };
        let client = self.client()?;
        let mut wait = self.backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut req = client.get(url);
            for (k, v) in headers {
                req = req.header(*k, v);
            }
            let retry_after_error = match req.send().await {
                Ok(mut resp) if resp.status().is_success() => {
                    if resp.content_length().is_some_and(|n| n > limit) {
                        return Err(too_large());
                    }
                    let mut body = Vec::new();
                    let read = loop {
                        match resp.chunk().await {
                            Ok(Some(chunk)) => {
                                if body.len() as u64 + chunk.len() as u64 > limit {
                                    return Err(too_large());
                                }
                                body.extend_from_slice(&chunk);
                            }
                            Ok(None) => break Ok(()),
                            Err(e) => break Err(e),
                        }
                    };
                    match read {
                        Ok(()) => return Ok(body),
                        Err(e) => e,
                    }
                }
                Ok(resp) if resp.status().is_server_error() && attempt < self.attempts => {
                    tracing::warn!(%url, status = resp.status().as_u16(), attempt, "server error, retrying");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                    continue;
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    return Err(FetchError::Status {
                        url: url.to_string(),
                        status,
                        hint: match status {
                            404 => " (no such thread or pull request)",
                            401 | 403 => " (check the token)",
                            _ => "",
                        },
                    });
                }
                Err(e) => e,
            };
            if attempt >= self.attempts {
                return Err(FetchError::Unreachable {
                    url: url.to_string(),
                    attempts: attempt,
                    source: retry_after_error,
                });
            }
            tracing::warn!(%url, attempt, error = %retry_after_error, "fetch failed, retrying");
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
    }

    /// A text document (an Atom feed), with the same retries.
    pub async fn get_text(&self, url: &str) -> Result<String, FetchError> {
        let bytes = self.get_limited(url, &[], MAX_FEED_BYTES).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The whole thread of `message_id` as an mbox.
    pub async fn lore_thread(&self, base: &str, message_id: &str) -> Result<Vec<u8>, FetchError> {
        let url = lore_thread_url(base, message_id);
        let gz = self.get(&url, &[]).await?;
        gunzip_limited(&gz, &url)
    }

    /// A pull request's commits as format-patch mails (one mbox).
    pub async fn github_pr(
        &self,
        api: &str,
        repo: &str,
        number: u64,
        token: Option<&str>,
    ) -> Result<Vec<u8>, FetchError> {
        let url = github_pr_url(api, repo, number);
        let mut headers = vec![
            ("Accept", "application/vnd.github.patch".to_string()),
            ("X-GitHub-Api-Version", "2022-11-28".to_string()),
        ];
        if let Some(t) = token {
            headers.push(("Authorization", format!("Bearer {t}")));
        }
        self.get(&url, &headers).await
    }
}

/// Decompresses a lore thread, refusing one over [`MAX_MBOX_BYTES`] (a
/// few KiB of gzip can claim gigabytes). Every gzip member is read: a
/// server (or `cat a.gz b.gz`) may concatenate them, and the mails of the
/// later ones are part of the thread.
pub fn gunzip_limited(gz: &[u8], url: &str) -> Result<Vec<u8>, FetchError> {
    let mut mbox = Vec::new();
    flate2::read::MultiGzDecoder::new(gz)
        .take(MAX_MBOX_BYTES + 1)
        .read_to_end(&mut mbox)
        .map_err(|source| FetchError::CorruptGzip {
            url: url.to_string(),
            source,
        })?;
    if mbox.len() as u64 > MAX_MBOX_BYTES {
        return Err(FetchError::TooLarge {
            url: url.to_string(),
            what: "decompressed thread",
            limit: MAX_MBOX_BYTES,
            name: "MAX_MBOX_BYTES",
        });
    }
    Ok(mbox)
}

/// `OWNER/REPO#NUMBER` -> (`OWNER/REPO`, NUMBER).
pub fn parse_pull_request(given: &str) -> Option<(String, u64)> {
    let (repo, number) = given.split_once('#')?;
    let number = number.parse::<u64>().ok()?;
    let mut parts = repo.split('/');
    let ok = matches!((parts.next(), parts.next(), parts.next()), (Some(o), Some(r), None) if !o.is_empty() && !r.is_empty());
    ok.then(|| (repo.to_string(), number))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_in_their_usual_forms() {
        let want = "20261130.1-1-a@example.org";
        for given in [
            "20261130.1-1-a@example.org",
            "<20261130.1-1-a@example.org>",
            "https://lore.kernel.org/linux-mm/20261130.1-1-a@example.org/",
            "https://lore.kernel.org/all/20261130.1-1-a@example.org/t.mbox.gz",
        ] {
            assert_eq!(normalize_message_id(given).unwrap(), want, "{given}");
        }
        assert!(normalize_message_id("not a message id").is_err());
        assert_eq!(normalize_message_id("a%2Fb@x").unwrap(), "a/b@x");
        // Last-two-bytes escape, as lore URLs end.
        assert_eq!(normalize_message_id("ab@x%2E").unwrap(), "ab@x.");
        assert!(normalize_message_id("v2").is_err());
    }

    #[test]
    fn bad_message_ids_are_errors_not_panics() {
        // Each was a panic or would be a broken URL.
        for (given, ok) in [
            ("%aé@x", true),
            ("%é@x", true),
            ("%", false),
            ("%%%@", true),
            ("é%", false),
            ("a@b%0A", false),
            ("<a@b>>", true),
            ("a<b@c", false),
            ("https://", false),
            ("https://lore.kernel.org/all/%E9@x/", true),
            ("", false),
        ] {
            let got = normalize_message_id(given);
            assert_eq!(got.is_ok(), ok, "{given:?}: {got:?}");
            if let Ok(id) = got {
                assert!(lore_thread_url("http://h", &id).starts_with("http://h/all/"));
            }
        }
    }

    #[test]
    fn only_http_schemes() {
        assert!(check_base_url("--lore-url", "https://lore.kernel.org").is_ok());
        let e = check_base_url("--lore-url", "ftp://lore.kernel.org").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--lore-url ftp://lore.kernel.org: unknown URL scheme `ftp` (use http:// or https://)"
        );
        assert!(check_base_url("--github-api", "lore.kernel.org").is_err());
    }

    #[test]
    fn urls() {
        assert_eq!(
            lore_thread_url("https://lore.kernel.org/", "a/b@c"),
            "https://lore.kernel.org/all/a%2Fb@c/t.mbox.gz"
        );
        assert_eq!(
            github_pr_url("http://127.0.0.1:9/api/v3", "mmci/linux", 7),
            "http://127.0.0.1:9/api/v3/repos/mmci/linux/pulls/7"
        );
    }

    #[test]
    fn pull_request_syntax() {
        assert_eq!(
            parse_pull_request("mmci/linux#5"),
            Some(("mmci/linux".into(), 5))
        );
        for bad in ["mmci/linux", "mmci#5", "a/b/c#5", "/b#5", "mmci/linux#x"] {
            assert_eq!(parse_pull_request(bad), None, "{bad}");
        }
    }

    fn quick() -> Fetcher {
        Fetcher {
            attempts: 1,
            backoff: Duration::from_millis(10),
            timeout: Duration::from_secs(20),
        }
    }

    #[tokio::test]
    async fn oversized_bodies_are_refused_naming_the_limit() {
        use wiremock::matchers::path;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        Mock::given(path("/big"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'x'; 5000]))
            .mount(&server)
            .await;
        Mock::given(path("/small"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'x'; 1000]))
            .mount(&server)
            .await;
        let big = format!("{}/big", server.uri());
        let err = quick()
            .get_limited(&big, &[], 4096)
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "{big}: the answer is larger than 4096 bytes, the limit (MAX_HTTP_BODY); refused"
            )
        );
        let small = format!("{}/small", server.uri());
        assert_eq!(
            quick().get_limited(&small, &[], 4096).await.unwrap().len(),
            1000
        );
        // A feed is held to its own limit.
        let err = quick()
            .get_limited(&big, &[], MAX_FEED_BYTES.min(4096))
            .await
            .unwrap_err();
        assert!(
            matches!(err, FetchError::TooLarge { limit: 4096, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_gzip_bomb_is_refused_at_the_mbox_limit() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..=(MAX_MBOX_BYTES >> 20) {
            gz.write_all(&chunk).unwrap();
        }
        let gz = gz.finish().unwrap();
        assert!(gz.len() < 1 << 20, "{} bytes of gzip", gz.len());
        let err = gunzip_limited(&gz, "u").unwrap_err().to_string();
        assert_eq!(
            err,
            "u: the decompressed thread is larger than 67108864 bytes, the limit (MAX_MBOX_BYTES); refused"
        );
        let mut ok = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        ok.write_all(b"From x\n").unwrap();
        assert_eq!(
            gunzip_limited(&ok.finish().unwrap(), "u").unwrap(),
            b"From x\n"
        );
        // A bomb split over many members is held to the same limit.
        let member = {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            z.write_all(&vec![0u8; 8 << 20]).unwrap();
            z.finish().unwrap()
        };
        let many = member.repeat((MAX_MBOX_BYTES >> 23) as usize + 1);
        assert!(matches!(
            gunzip_limited(&many, "u"),
            Err(FetchError::TooLarge { .. })
        ));
    }

    /// Two gzip members (lore's own answer is one; `cat a.gz b.gz` is
    /// two): the mails of both come out.
    #[test]
    fn every_gzip_member_is_read() {
        use std::io::Write;
        let gz = |text: &str| {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(text.as_bytes()).unwrap();
            z.finish().unwrap()
        };
        let one = "From a\nSubject: one\n\nx\n";
        let two = "From b\nSubject: two\n\ny\n";
        let both = [gz(one), gz(two)].concat();
        assert_eq!(
            gunzip_limited(&both, "u").unwrap(),
            format!("{one}{two}").as_bytes()
        );
        let mut truncated = both.clone();
        truncated.truncate(both.len() - 3);
        assert!(matches!(
            gunzip_limited(&truncated, "u"),
            Err(FetchError::CorruptGzip { .. })
        ));
    }
}
