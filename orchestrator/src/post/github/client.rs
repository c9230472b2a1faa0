//! The GitHub REST client: one authenticated client per API base, the
//! check run and sticky comment it creates or updates, and how an API
//! failure is worded (secrets redacted).
//!
//! Plain reqwest with JSON bodies, as the other HTTP clients of mmci: the
//! posting uses nine REST calls and a GitHub App's RS256 JWT (signed with ring),
//! and octocrab, which served them before, was the longest crate of a cold
//! release build (94 s of CPU, on its critical path) for that.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::{header, Method};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::*;

/// A request's whole exchange; a stalled GitHub fails the post, never hangs it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// The REST API version the bodies are written for.
const API_VERSION: &str = "2022-11-28";

/// What a completed posting did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Posted {
    pub check_run_id: Option<u64>,
    /// The sticky comment and whether it was created (else updated).
    pub comment: Option<(u64, bool)>,
}

/// An authenticated client for one API base.
pub struct Client {
    http: reqwest::Client,
    /// The API base, without a trailing slash (`/api/v3` kept for GHE).
    api: String,
    /// The token every call but the App's own carries.
    token: String,
    /// A GitHub App's JWT, which alone may read `GET /app`.
    app_jwt: Option<String>,
    secrets: Vec<String>,
}

/// The claims of a GitHub App's JWT: issued a minute back (clock skew, as
/// GitHub advises), valid for nine minutes (GitHub's limit is ten).
#[derive(Serialize)]
struct AppClaims {
    iat: u64,
    exp: u64,
    iss: u64,
}

#[derive(Deserialize)]
struct InstallationToken {
    token: String,
}

/// GitHub's error body: `message`, and for a 422 the fields it refused.
#[derive(Deserialize)]
struct ErrorBody {
    message: String,
    #[serde(default)]
    errors: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct Created {
    id: u64,
}

#[derive(Deserialize)]
pub(super) struct CheckRunList {
    check_runs: Vec<CheckRunItem>,
}

#[derive(Deserialize)]
pub(super) struct CheckRunItem {
    id: u64,
    status: String,
}

#[derive(Deserialize)]
pub(super) struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<Login>,
}

#[derive(Deserialize)]
pub(super) struct Login {
    login: String,
}

#[derive(Deserialize)]
pub(super) struct AppInfo {
    slug: String,
}

#[derive(Deserialize)]
pub(super) struct Installation {
    id: u64,
}

/// Checks the API base before building a client: an http(s) URL, and
/// https unless its host is a loopback address (a test's server), since
/// every call carries the token; patchwork's client holds its token to the
/// same rule.
pub fn check_api(api: &str) -> Result<(), GitHubError> {
    let url = reqwest::Url::parse(api)
        .ok()
        .filter(|u| matches!(u.scheme(), "https" | "http") && u.host_str().is_some())
        .ok_or_else(|| GitHubError::BadApi(printable(api)))?;
    if crate::series::patchwork::token_transport_ok(&url) {
        Ok(())
    } else {
        Err(GitHubError::InsecureApi(printable(api)))
    }
}

/// Text from elsewhere (an API's answer, a URL given) as it may go to a
/// terminal: control characters escaped (`\u{1b}`, `\r`, `\n`), so that
/// an answer cannot move the cursor, recolour or rewrite a line.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

impl Client {
    /// Builds the client. A GitHub App first signs a JWT (RS256, iss = the
    /// App id), finds its installation on `repo` unless given, and trades
    /// the JWT for an installation token, so that bad credentials fail
    /// here, before anything is posted.
    pub async fn connect(api: &str, auth: &Auth, repo: &Repo) -> Result<Client, GitHubError> {
        check_api(api)?;
        let http = reqwest::Client::builder()
            .user_agent(concat!("mmci/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| GitHubError::Transport {
                what: "building the client".into(),
                message: chain(&e),
            })?;
        let mut client = Client {
            http,
            api: api.trim_end_matches('/').to_string(),
            token: String::new(),
            app_jwt: None,
            secrets: vec![],
        };
        match auth {
            Auth::Token(token) => {
                client.token = token.clone();
                client.secrets = vec![token.clone()];
                Ok(client)
            }
            Auth::App {
                app_id,
                key_pem,
                installation_id,
            } => {
                let jwt = app_jwt(*app_id, key_pem, now_secs())?;
                client.secrets = vec![jwt.clone()];
                let installation = match installation_id {
                    Some(id) => *id,
                    None => {
                        let what = format!("finding the App's installation on {repo}");
                        let v = client
                            .call(
                                &what,
                                Method::GET,
                                &format!("/repos/{repo}/installation"),
                                None,
                                &jwt,
                            )
                            .await?;
                        parse::<Installation>(v, &what)?.id
                    }
                };
                let what = format!("getting an installation token (installation {installation})");
                let v = client
                    .call(
                        &what,
                        Method::POST,
                        &format!("/app/installations/{installation}/access_tokens"),
                        None,
                        &jwt,
                    )
                    .await?;
                let token = parse::<InstallationToken>(v, &what)?.token;
                client.secrets.push(token.clone());
                client.token = token;
                client.app_jwt = Some(jwt);
                Ok(client)
            }
        }
    }

    /// One REST call with `bearer` as its credential: the answer's JSON
    /// (null for an empty body, as a 204's), or GitHub's refusal worded
    /// with its status and message, secrets redacted.
    async fn call(
        &self,
        what: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
        bearer: &str,
    ) -> Result<Value, GitHubError> {
        tracing::debug!(%method, %path, "GitHub API");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.api))
            .header(header::AUTHORIZATION, format!("Bearer {bearer}"))
            .header(header::ACCEPT, "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION);
        if let Some(body) = body {
            req = req
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let secrets = self.secrets();
        let transport = |e: reqwest::Error| GitHubError::Transport {
            what: what.to_string(),
            message: crate::post::redact(&chain(&e), &secrets),
        };
        let resp = req.send().await.map_err(&transport)?;
        let status = resp.status();
        let text = resp.text().await.map_err(&transport)?;
        if !status.is_success() {
            return Err(api_error(what, status.as_u16(), &text, &secrets));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| GitHubError::Transport {
            what: what.to_string(),
            message: format!("unexpected answer: {e}"),
        })
    }

    fn secrets(&self) -> Vec<&str> {
        self.secrets.iter().map(String::as_str).collect()
    }

    async fn send(&self, what: &str, req: &Request) -> Result<Value, GitHubError> {
        let method = match req.method {
            "POST" => Method::POST,
            "PATCH" => Method::PATCH,
            _ => Method::GET,
        };
        let body = (method != Method::GET).then_some(&req.body);
        self.call(what, method, &req.path, body, &self.token).await
    }

    async fn get(&self, what: &str, path: &str) -> Result<Value, GitHubError> {
        self.call(what, Method::GET, path, None, &self.token).await
    }

    /// Creates the `in_progress` check run; returns its id.
    pub async fn start_check(&self, t: &CheckTarget, title: &str) -> Result<u64, GitHubError> {
        let req = check_run_start(t, title, now());
        let v = self.send("creating the check run", &req).await?;
        id_of(&v, "creating the check run")
    }

    /// Completes the check run `id`, or else the latest unfinished run of
    /// this name on the commit, or else creates a completed one.
    pub async fn finish_check(
        &self,
        t: &CheckTarget,
        id: Option<u64>,
        title: &str,
        conclusion: Conclusion,
        summary: &str,
    ) -> Result<u64, GitHubError> {
        let body = check_run_complete_body(t, title, conclusion, summary, now());
        let id = match id {
            Some(id) => Some(id),
            None => self.open_check_run(t).await?,
        };
        let req = match id {
            Some(id) => Request {
                method: "PATCH",
                path: format!("/repos/{}/check-runs/{id}", t.repo),
                body,
            },
            None => Request {
                method: "POST",
                path: format!("/repos/{}/check-runs", t.repo),
                body,
            },
        };
        let v = self.send("completing the check run", &req).await?;
        id_of(&v, "completing the check run")
    }

    async fn open_check_run(&self, t: &CheckTarget) -> Result<Option<u64>, GitHubError> {
        let what = "listing the commit's check runs";
        let path = format!(
            "/repos/{}/commits/{}/check-runs?check_name={}&filter=latest",
            t.repo,
            t.head_sha,
            query_escape(&t.name)
        );
        let list: CheckRunList = parse(self.get(what, &path).await?, what)?;
        Ok(list
            .check_runs
            .iter()
            .find(|c| c.status != "completed")
            .map(|c| c.id))
    }

    /// Who this client's comments are by (see the module's comment).
    pub async fn own_login(&self) -> Result<String, GitHubError> {
        if let Some(jwt) = &self.app_jwt {
            let what = "reading the App's name (GET /app)";
            let v = self.call(what, Method::GET, "/app", None, jwt).await?;
            let info: AppInfo = parse(v, what)?;
            return Ok(format!("{}[bot]", info.slug));
        }
        let what = "reading the token's user (GET /user)";
        match self.get(what, "/user").await {
            Ok(v) => parse::<Login>(v, what).map(|l| l.login),
            // An installation token (as $GITHUB_TOKEN is) has no user.
            Err(GitHubError::Api { status: 403, .. }) => Ok(ACTIONS_BOT.to_string()),
            Err(other) => Err(other),
        }
    }

    /// The number of the pull request `pr` on `repo`; one given by its
    /// head must be open with that head at `sha`.
    pub async fn resolve_pull_request(
        &self,
        repo: &Repo,
        pr: &PullRequest,
        sha: &str,
    ) -> Result<u64, GitHubError> {
        let (head_repo, branch) = match pr {
            PullRequest::Number(n) => return Ok(*n),
            PullRequest::Head { repo, branch } => (repo, branch),
        };
        let what = format!("finding the pull request of {head_repo}:{branch}");
        let path = format!(
            "/repos/{repo}/pulls?state=open&head={}&per_page=100",
            query_escape(&format!("{}:{branch}", head_repo.owner))
        );
        let list: Vec<PullItem> = parse(self.get(&what, &path).await?, &what)?;
        pick_pull_request(&list, head_repo, branch, sha).ok_or_else(|| GitHubError::NoPullRequest {
            repo: repo.to_string(),
            head: format!("{head_repo}:{branch}"),
            sha: sha.to_string(),
        })
    }

    /// Creates the series' sticky comment on pull request `pr`, or edits
    /// the one already there: the oldest carrying the marker that this
    /// client's identity wrote (anyone else's is left alone).
    pub async fn upsert_comment(
        &self,
        repo: &Repo,
        pr: u64,
        key: &str,
        markdown: &str,
    ) -> Result<(u64, bool), GitHubError> {
        let marker = sticky_marker(key);
        let me = self.own_login().await?;
        let what = format!("listing the comments of pull request #{pr}");
        let mut existing = None;
        for page in 1..=50 {
            let path = format!("/repos/{repo}/issues/{pr}/comments?per_page=100&page={page}");
            let comments: Vec<Comment> = parse(self.get(&what, &path).await?, &what)?;
            existing = comments.iter().find_map(|c| {
                let mine = c
                    .user
                    .as_ref()
                    .is_some_and(|u| u.login.eq_ignore_ascii_case(&me));
                (mine && c.body.as_deref().is_some_and(|b| b.starts_with(&marker))).then_some(c.id)
            });
            if existing.is_some() || comments.len() < 100 {
                break;
            }
        }
        let body = json!({ "body": sticky_body(key, markdown) });
        let (req, created) = match existing {
            Some(id) => (
                Request {
                    method: "PATCH",
                    path: format!("/repos/{repo}/issues/comments/{id}"),
                    body,
                },
                false,
            ),
            None => (
                Request {
                    method: "POST",
                    path: format!("/repos/{repo}/issues/{pr}/comments"),
                    body,
                },
                true,
            ),
        };
        let what = if created {
            format!("creating the comment on pull request #{pr}")
        } else {
            format!("updating the comment on pull request #{pr}")
        };
        let v = self.send(&what, &req).await?;
        Ok((id_of(&v, &what)?, created))
    }

    /// `POST /repos/{repo}/dispatches` (answered 204 No Content): starts
    /// the workflows listening for `body.event_type`.
    pub async fn dispatch(&self, repo: &Repo, body: &Value) -> Result<(), GitHubError> {
        let what = format!("sending a repository_dispatch to {repo}");
        let path = format!("/repos/{repo}/dispatches");
        self.call(&what, Method::POST, &path, Some(body), &self.token)
            .await
            .map(drop)
    }

    pub fn api(&self) -> &str {
        &self.api
    }
}

fn id_of(v: &Value, what: &str) -> Result<u64, GitHubError> {
    serde_json::from_value::<Created>(v.clone())
        .map(|c| c.id)
        .map_err(|_| GitHubError::Transport {
            what: what.to_string(),
            message: "the answer has no `id`".into(),
        })
}

fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn hint(status: u16) -> &'static str {
    match status {
        401 => " (the token is invalid or expired)",
        403 => " (the token or App lacks a permission: checks: write, pull-requests: write, issues: write)",
        404 => " (no such repository, commit or pull request, or the token cannot see it)",
        422 => " (GitHub refused the request's content)",
        _ => "",
    }
}

/// GitHub's refusal, token-free: its status, its message (and for a 422
/// the fields it names), else the body's first line.
fn api_error(what: &str, status: u16, body: &str, secrets: &[&str]) -> GitHubError {
    let message = match serde_json::from_str::<ErrorBody>(body) {
        Ok(ErrorBody { message, errors }) => match errors {
            Some(errors) if errors.as_array().is_some_and(|a| !a.is_empty()) => {
                format!("{message} {errors}")
            }
            _ => message,
        },
        Err(_) => {
            let line = body.lines().map(str::trim).find(|l| !l.is_empty());
            line.unwrap_or("(no message)").chars().take(200).collect()
        }
    };
    GitHubError::Api {
        what: what.to_string(),
        status,
        message: printable(&crate::post::redact(&message, secrets)),
        hint: hint(status),
    }
}

/// An error and its causes, one line each (hyper's and rustls' causes say
/// what actually failed: refused, timed out, bad certificate).
fn chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = cur {
        let line = err.to_string();
        let line = line.lines().next().unwrap_or("").trim().to_string();
        if !line.is_empty() && !parts.iter().any(|p| p.contains(&line)) {
            parts.push(line);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// An answer as `T`, or a transport error naming the call.
fn parse<T: serde::de::DeserializeOwned>(v: Value, what: &str) -> Result<T, GitHubError> {
    serde_json::from_value(v).map_err(|e| GitHubError::Transport {
        what: what.to_string(),
        message: format!("unexpected answer: {e}"),
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A GitHub App's JWT (RS256, `iss` the App id as a number) signed at `now`.
///
/// Signed with ring, which rustls already brings for TLS: jsonwebtoken's RSA
/// backend compiled 47 more crates (rsa, num-bigint-dig, p256, p384,
/// ed25519-dalek, time, ...) into a cold release build for this one
/// signature. The JWT is three base64url parts, header.claims.signature
/// (RFC 7519); the tests verify it with jsonwebtoken.
fn app_jwt(app_id: u64, key_pem: &[u8], now: u64) -> Result<String, GitHubError> {
    let key_error = |why: String| GitHubError::AppKey {
        path: PathBuf::from("(App key)"),
        why,
    };
    let key = app_key(key_pem).map_err(key_error)?;
    let claims = AppClaims {
        iat: now.saturating_sub(60),
        exp: now + 540,
        iss: app_id,
    };
    let claims = serde_json::to_vec(&claims).map_err(|e| key_error(e.to_string()))?;
    let signing_input = format!(
        "{}.{}",
        base64url(br#"{"alg":"RS256","typ":"JWT"}"#),
        base64url(&claims)
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| key_error("signing with it failed".to_string()))?;
    Ok(format!("{signing_input}.{}", base64url(&signature)))
}

/// A GitHub App's private key from its PEM file: PKCS#1 (`BEGIN RSA PRIVATE
/// KEY`, what GitHub hands out) or PKCS#8 (`BEGIN PRIVATE KEY`), RSA only.
pub(super) fn app_key(pem: &[u8]) -> Result<ring::signature::RsaKeyPair, String> {
    use ring::signature::RsaKeyPair;
    use rustls_pki_types::{pem::PemObject, PrivateKeyDer};
    const NOT_RSA: &str = "a key of another algorithm; a GitHub App's key is RSA";
    let rejected = |e: ring::error::KeyRejected| match e.to_string().as_str() {
        // A PKCS#8 key of another algorithm (EC, Ed25519).
        "WrongAlgorithm" => NOT_RSA.to_string(),
        why => format!("ring refused it: {why}"),
    };
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(PrivateKeyDer::Pkcs1(key)) => {
            RsaKeyPair::from_der(key.secret_pkcs1_der()).map_err(rejected)
        }
        Ok(PrivateKeyDer::Pkcs8(key)) => {
            RsaKeyPair::from_pkcs8(key.secret_pkcs8_der()).map_err(rejected)
        }
        Ok(_) => Err(NOT_RSA.to_string()),
        Err(e) => Err(pem_error(&e).to_string()),
    }
}

/// What is wrong with a key file's PEM, in fixed words: the parser's own
/// messages quote the offending line or section label, and a key whose line
/// breaks a secret store flattened is all one line, so they would print the
/// key (as a byte list no log masking recognises).
fn pem_error(e: &rustls_pki_types::pem::Error) -> &'static str {
    use rustls_pki_types::pem::Error;
    match e {
        Error::MissingSectionEnd { .. } => {
            "a PEM section without its END line (are the key's line breaks kept? a secret store may have joined its lines)"
        }
        Error::IllegalSectionStart { .. } => {
            "a malformed PEM BEGIN line (are the key's line breaks kept? a secret store may have joined its lines)"
        }
        Error::Base64Decode(_) => "the PEM section's base64 does not decode",
        Error::NoItemsFound => "no PEM private key in it",
        Error::SectionTooLarge => "a PEM section larger than 256 MB",
        _ => "not readable as PEM",
    }
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// https anywhere, http only to a loopback address, anything else is
    /// not an API base.
    #[test]
    fn the_token_goes_over_https_or_to_loopback_only() {
        for (api, want) in [
            ("https://api.github.com", Ok(())),
            ("https://ghe.example.org/api/v3", Ok(())),
            ("http://127.0.0.1:8080", Ok(())),
            ("http://localhost:9000/api/v3", Ok(())),
            ("http://[::1]:80", Ok(())),
            (
                "http://api.github.com",
                Err("refusing to send the token over http://"),
            ),
            (
                "http://10.0.0.1",
                Err("refusing to send the token over http://"),
            ),
            (
                "http://localhost.evil.org",
                Err("refusing to send the token over http://"),
            ),
            ("api.github.com", Err("not an http(s) URL")),
            ("ftp://api.github.com", Err("not an http(s) URL")),
            ("http://", Err("not an http(s) URL")),
            (
                "http://x\u{1b}[2J.org",
                Err("x\\u{1b}[2J.org: not an http(s) URL"),
            ),
        ] {
            match (check_api(api), want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(words)) => assert!(e.to_string().contains(words), "{api}: {e}"),
                (got, _) => panic!("{api:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    /// An API's message loses nothing but its power over the terminal.
    #[test]
    fn api_error_text_is_escaped() {
        let e = api_error(
            "creating the check run",
            403,
            r#"{"message": "no\u001b[31m red\r\nmmci: error: forged ghp_x"}"#,
            &["ghp_x"],
        );
        assert_eq!(
            e.to_string(),
            "GitHub API creating the check run: HTTP 403: no\\u{1b}[31m red\\r\\nmmci: error: forged [redacted] (the token or App lacks a permission: checks: write, pull-requests: write, issues: write)"
        );
        let e = api_error("x", 502, "<html>\u{1b}]0;title\u{7}</html>\n", &[]);
        assert!(
            e.to_string().contains("<html>\\u{1b}]0;title\\u{7}</html>"),
            "{e}"
        );
    }

    /// A throwaway key made by openssl (installed by ./mmci-setup), as PEM.
    fn openssl_key(args: &[&str]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        // genrsa takes its options before the key size.
        let st = std::process::Command::new("openssl")
            .arg(args[0])
            .arg("-out")
            .arg(&path)
            .args(&args[1..])
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl is installed by ./mmci-setup");
        assert!(st.success(), "openssl {args:?}");
        std::fs::read(path).unwrap()
    }

    /// GitHub hands out PKCS#1 keys; PKCS#8 works too, and both sign JWTs
    /// that verify; anything else is refused with what it is, before any
    /// request, and a flattened key's error quotes none of it.
    #[test]
    fn app_keys_pkcs1_and_pkcs8_sign_others_are_named() {
        let pkcs1 = openssl_key(&["genrsa", "-traditional", "2048"]);
        let pkcs8 = openssl_key(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ]);
        let ec = openssl_key(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ]);
        assert!(pkcs1.starts_with(b"-----BEGIN RSA PRIVATE KEY-----"));
        assert!(pkcs8.starts_with(b"-----BEGIN PRIVATE KEY-----"));
        for key in [&pkcs1, &pkcs8] {
            let jwt = app_jwt(7, key, 1_000_000).unwrap();
            let parts: Vec<&str> = jwt.split('.').collect();
            assert_eq!(parts.len(), 3, "{jwt}");
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let header: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
            let claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
            assert_eq!(header, json!({"alg": "RS256", "typ": "JWT"}));
            assert_eq!(claims, json!({"iat": 999_940, "exp": 1_000_540, "iss": 7}));
            // The signature verifies with the key's public half, over the
            // first two parts as sent.
            use ring::signature::KeyPair as _;
            let public = app_key(key).unwrap().public_key().as_ref().to_vec();
            ring::signature::UnparsedPublicKey::new(
                &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                public,
            )
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &b64.decode(parts[2]).unwrap(),
            )
            .expect("the JWT's signature verifies");
        }
        // A key whose line breaks a secret store joined (spaces, or a
        // literal \n): refused, and nothing of the key in the words.
        let text = String::from_utf8(pkcs1.clone()).unwrap();
        let body_line = text.lines().nth(1).unwrap().to_string();
        for flat in [text.replace('\n', " "), text.replace('\n', "\\n")] {
            let Err(GitHubError::AppKey { why, .. }) = app_jwt(7, flat.as_bytes(), 1_000_000)
            else {
                panic!("a flattened key was accepted");
            };
            assert!(why.contains("line breaks"), "{why}");
            assert!(!why.contains(&body_line[..16]), "{why}");
            assert!(!why.contains("77, 73, 73"), "the key as bytes: {why}");
        }
        for (pem, why) in [
            (&ec[..], "a key of another algorithm"),
            (
                &b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"[..],
                "ring refused it",
            ),
            (&b"ghp_not_a_key"[..], "no PEM private key"),
        ] {
            match app_jwt(7, pem, 1_000_000) {
                Err(GitHubError::AppKey { why: w, .. }) => assert!(w.contains(why), "{w}"),
                other => panic!("{other:?}"),
            }
        }
    }
}
