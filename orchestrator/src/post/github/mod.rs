//! GitHub: a check run on the tested commit (created `in_progress` when the
//! run starts, completed with the verdict and the markdown report) and one
//! sticky comment per series on the pull request, found again by a hidden
//! marker and edited in place.
//!
//! Only a comment this client's own identity wrote is ever edited: anyone
//! can post a comment that starts with the marker, and such a comment is
//! neither edited nor allowed to stop the post (a new one is made). The
//! identity is the token's user (`GET /user`), an App's bot `<slug>[bot]`
//! (`GET /app`, with the App's JWT), or, for an App installation token
//! given as a plain token, which `GET /user` refuses with 403, GitHub
//! Actions' `github-actions[bot]` (that is what `$GITHUB_TOKEN` is; another
//! App's installation token then never finds its old comment and makes a
//! new one, which is safe: give such an App as --app-id/--app-key).
//!
//! The pull request is given by number, or found by its head (repository,
//! branch and commit) when the caller only knows that: a `workflow_run` of
//! a fork's pull request carries no pull request number, and a number the
//! pull request's own code wrote cannot be trusted. The lookup is refused
//! unless an open pull request has exactly that head.
//!
//! Requests go through reqwest (client.rs: token or GitHub App installation
//! auth, configurable API base for GitHub Enterprise and the tests). Their bodies
//! are built here by small pure functions, so that `--dry-run` prints
//! exactly what would be sent. Tokens live only in the client: errors are
//! built from status codes and GitHub's messages, and redacted anyway.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::TokenFileError;

/// GitHub's limit on a check run's summary and on a comment's body.
pub const MAX_TEXT: usize = 65_535;

#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("no GitHub credentials: set ${env} (or --github-token-file FILE), or --app-id with --app-key for a GitHub App")]
    NoCredentials { env: String },
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
    #[error("--app-key {path}: cannot read")]
    AppKeyFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--app-key {path}: not an RSA private key in PEM form ({why})")]
    AppKey { path: PathBuf, why: String },
    #[error("--app-id needs --app-key FILE (the App's private key)")]
    AppWithoutKey,
    #[error("--repo {0}: expected OWNER/REPO (default: $GITHUB_REPOSITORY)")]
    BadRepo(String),
    #[error("--sha: missing (the commit the check run belongs to; default: $GITHUB_SHA)")]
    NoSha,
    #[error("--github-api {0}: not an http(s) URL")]
    BadApi(String),
    #[error("--github-api {0}: refusing to send the token over http:// (clear text): give the https:// URL (http:// takes the token only on a loopback address, for tests)")]
    InsecureApi(String),
    #[error(
        "--pr-head {0}: expected OWNER/REPO:BRANCH (the pull request's head repository and branch)"
    )]
    BadPrHead(String),
    #[error("no open pull request of {repo} has the head {head} at {sha}: not commenting (the branch moved on, or the pull request is closed or comes from another repository)")]
    NoPullRequest {
        repo: String,
        head: String,
        sha: String,
    },
    #[error("GitHub API {what}: HTTP {status}: {message}{hint}")]
    Api {
        what: String,
        status: u16,
        message: String,
        hint: &'static str,
    },
    #[error("GitHub API {what}: {message}")]
    Transport { what: String, message: String },
    #[error("$GITHUB_STEP_SUMMARY {path}: cannot append")]
    StepSummary {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl GitHubError {
    /// GitHub answered with an error or could not be reached (exit 9), as
    /// opposed to bad input (exit 2).
    pub fn is_remote(&self) -> bool {
        matches!(
            self,
            GitHubError::Api { .. }
                | GitHubError::Transport { .. }
                | GitHubError::NoPullRequest { .. }
        )
    }
}

/// Where credentials come from, as given on the command line.
#[derive(Clone, Debug, Default)]
pub struct AuthOptions {
    /// Environment variable holding a token [default: GITHUB_TOKEN].
    pub token_env: String,
    pub token_file: Option<PathBuf>,
    pub app_id: Option<u64>,
    pub app_key: Option<PathBuf>,
    /// The App's installation [default: the one on --repo].
    pub installation_id: Option<u64>,
}

/// Resolved credentials. Debug never shows the secret.
#[derive(Clone)]
pub enum Auth {
    Token(String),
    App {
        app_id: u64,
        key_pem: Vec<u8>,
        installation_id: Option<u64>,
    },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Token(_) => write!(f, "Token([redacted])"),
            Auth::App {
                app_id,
                installation_id,
                ..
            } => write!(f, "App({app_id}, installation {installation_id:?})"),
        }
    }
}

impl AuthOptions {
    /// The credentials, or a clear error before anything is sent: App first
    /// (when --app-id is given), then --github-token-file, then the environment,
    /// read through `env` (the command line's reader: only cli/ reads the
    /// process environment).
    pub fn resolve_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<Auth, GitHubError> {
        if let Some(app_id) = self.app_id {
            let path = self.app_key.as_ref().ok_or(GitHubError::AppWithoutKey)?;
            let key_pem = std::fs::read(path).map_err(|source| GitHubError::AppKeyFile {
                path: path.clone(),
                source,
            })?;
            // Parse now: a bad key is bad input, found before any request.
            client::app_key(&key_pem).map_err(|why| GitHubError::AppKey {
                path: path.clone(),
                why,
            })?;
            return Ok(Auth::App {
                app_id,
                key_pem,
                installation_id: self.installation_id,
            });
        }
        if let Some(path) = &self.token_file {
            return Ok(Auth::Token(super::read_token_file(
                "--github-token-file",
                path,
            )?));
        }
        let env_name = if self.token_env.is_empty() {
            "GITHUB_TOKEN"
        } else {
            &self.token_env
        };
        match env(env_name).map(|t| t.trim().to_string()) {
            Some(t) if !t.is_empty() => Ok(Auth::Token(t)),
            _ => Err(GitHubError::NoCredentials {
                env: env_name.to_string(),
            }),
        }
    }
}

/// The repository posted to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repo {
    pub owner: String,
    pub name: String,
}

impl std::str::FromStr for Repo {
    type Err = GitHubError;
    fn from_str(s: &str) -> Result<Repo, GitHubError> {
        match s.split_once('/') {
            Some((o, n))
                if !o.is_empty() && !n.is_empty() && !n.contains('/') && !s.contains(' ') =>
            {
                Ok(Repo {
                    owner: o.to_string(),
                    name: n.to_string(),
                })
            }
            _ => Err(GitHubError::BadRepo(s.to_string())),
        }
    }
}

impl std::fmt::Display for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

impl Repo {
    /// GitHub's names are case-insensitive.
    fn same(&self, full_name: &str) -> bool {
        full_name.eq_ignore_ascii_case(&self.to_string())
    }
}

/// The pull request that gets the sticky comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PullRequest {
    /// By number, which the caller vouches for (e.g. GitHub's own
    /// `workflow_run.pull_requests`).
    Number(u64),
    /// The open pull request whose head is `branch` of `repo` at the
    /// check run's commit, looked up (`--pr-head OWNER/REPO:BRANCH`).
    Head { repo: Repo, branch: String },
}

impl std::str::FromStr for PullRequest {
    type Err = GitHubError;
    /// `OWNER/REPO:BRANCH` (a branch name cannot hold `:`).
    fn from_str(s: &str) -> Result<PullRequest, GitHubError> {
        let bad = || GitHubError::BadPrHead(s.to_string());
        let (repo, branch) = s.split_once(':').ok_or_else(bad)?;
        let repo: Repo = repo.parse().map_err(|_| bad())?;
        if branch.is_empty() || branch.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad());
        }
        Ok(PullRequest::Head {
            repo,
            branch: branch.to_string(),
        })
    }
}

/// One pull request of `GET /repos/{repo}/pulls`, as far as it is read.
#[derive(Clone, Debug, Deserialize)]
pub struct PullItem {
    pub number: u64,
    pub head: PullHead,
}

#[derive(Clone, Debug, Deserialize)]
pub struct PullHead {
    pub sha: String,
    #[serde(rename = "ref")]
    pub branch: String,
    /// None when the head repository was deleted.
    pub repo: Option<PullRepo>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct PullRepo {
    pub full_name: String,
}

/// The pull request in `list` whose head is `branch` of `repo` at `sha`
/// (the newest if several): every part must match, so that a pull request
/// from another fork, or one whose branch has moved on, is never chosen.
pub fn pick_pull_request(list: &[PullItem], repo: &Repo, branch: &str, sha: &str) -> Option<u64> {
    list.iter()
        .filter(|p| {
            p.head.sha.eq_ignore_ascii_case(sha)
                && p.head.branch == branch
                && p.head
                    .repo
                    .as_ref()
                    .is_some_and(|r| repo.same(&r.full_name))
        })
        .map(|p| p.number)
        .max()
}

/// The login of the bot Actions' `$GITHUB_TOKEN` posts as.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// The verdict of a completed check run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Conclusion {
    Success,
    Failure,
    Neutral,
}

impl Conclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Failure => "failure",
            Conclusion::Neutral => "neutral",
        }
    }
}

/// A check run's identity: its name on one commit.
#[derive(Clone, Debug)]
pub struct CheckTarget {
    pub repo: Repo,
    pub head_sha: String,
    /// The check's name [default: mmci].
    pub name: String,
    /// Link to the workflow run or elsewhere.
    pub details_url: Option<String>,
}

/// One request, as it is sent (and as `--dry-run` prints it).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub method: &'static str,
    /// Relative to the API base.
    pub path: String,
    pub body: Value,
}

impl Request {
    pub fn render(&self, api: &str) -> String {
        format!(
            "{} {}{}\n{}\n",
            self.method,
            api.trim_end_matches('/'),
            self.path,
            serde_json::to_string_pretty(&self.body).expect("serializable")
        )
    }
}

/// RFC 3339 UTC time for check runs' timestamps.
pub fn rfc3339(unix: u64) -> String {
    let (y, m, d, hh, mm, ss) = crate::post::email::civil(unix);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// POST /repos/{o}/{r}/check-runs: a check run that has started.
pub fn check_run_start(t: &CheckTarget, title: &str, now: u64) -> Request {
    let mut body = json!({
        "name": t.name,
        "head_sha": t.head_sha,
        "status": "in_progress",
        "started_at": rfc3339(now),
        "output": {
            "title": title,
            "summary": "mmci is building the kernels and running the matrix.",
        },
    });
    if let Some(u) = &t.details_url {
        body["details_url"] = json!(u);
    }
    Request {
        method: "POST",
        path: format!("/repos/{}/check-runs", t.repo),
        body,
    }
}

/// The body completing a check run with its verdict and report.
pub fn check_run_complete_body(
    t: &CheckTarget,
    title: &str,
    conclusion: Conclusion,
    summary: &str,
    now: u64,
) -> Value {
    let mut body = json!({
        "name": t.name,
        "head_sha": t.head_sha,
        "status": "completed",
        "conclusion": conclusion.as_str(),
        "completed_at": rfc3339(now),
        "output": {
            "title": title,
            "summary": crate::post::truncate_note(summary, MAX_TEXT),
        },
    });
    if let Some(u) = &t.details_url {
        body["details_url"] = json!(u);
    }
    body
}

/// The hidden first line that finds a series' sticky comment again.
pub fn sticky_marker(key: &str) -> String {
    // `--` would end the HTML comment early.
    let key: String = key
        .chars()
        .map(|c| if c == '-' || c == '>' { '_' } else { c })
        .collect();
    format!("<!-- mmci-sticky: {} -->", key.trim())
}

/// The sticky comment: the marker, then the report.
pub fn sticky_body(key: &str, markdown: &str) -> String {
    let marker = sticky_marker(key);
    let room = MAX_TEXT - marker.len() - 1;
    format!("{marker}\n{}", crate::post::truncate_note(markdown, room))
}

/// The requests a finishing post would send, for `--dry-run`: the comment
/// is a POST or a PATCH depending on what the pull request already has.
pub fn dry_run(
    api: &str,
    t: &CheckTarget,
    title: &str,
    conclusion: Conclusion,
    summary: &str,
    pr: Option<(&PullRequest, &str)>,
) -> String {
    let mut out = Request {
        method: "PATCH",
        path: format!(
            "/repos/{}/check-runs/{{id of the open `{}` check run, else POST /repos/{}/check-runs}}",
            t.repo, t.name, t.repo
        ),
        body: check_run_complete_body(t, title, conclusion, summary, now()),
    }
    .render(api);
    if let Some((pr, key)) = pr {
        let pr = match pr {
            PullRequest::Number(n) => n.to_string(),
            PullRequest::Head { repo, branch } => format!(
                "{{number of the open pull request with head {repo}:{branch} at {}}}",
                t.head_sha
            ),
        };
        out.push_str(
            &Request {
                method: "POST",
                path: format!(
                    "/repos/{}/issues/{pr}/comments (PATCH /repos/{}/issues/comments/{{id}} if a comment by this token's own user starts with {})",
                    t.repo,
                    t.repo,
                    sticky_marker(key)
                ),
                body: json!({ "body": sticky_body(key, summary) }),
            }
            .render(api),
        );
    }
    out
}

/// Appends the report to the job's summary page when running in GitHub
/// Actions (`$GITHUB_STEP_SUMMARY`).
pub fn write_step_summary(path: &Path, markdown: &str) -> Result<(), GitHubError> {
    use std::io::Write;
    let err = |source| GitHubError::StepSummary {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    f.write_all(markdown.as_bytes()).map_err(err)?;
    if !markdown.ends_with('\n') {
        f.write_all(b"\n").map_err(err)?;
    }
    Ok(())
}

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

mod client;

pub use client::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_resolve_in_order_and_missing_ones_are_named() {
        let opts = AuthOptions {
            token_env: "GITHUB_TOKEN".into(),
            ..Default::default()
        };
        let e = opts.resolve_with(|_| None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no GitHub credentials: set $GITHUB_TOKEN (or --github-token-file FILE), or --app-id with --app-key for a GitHub App"
        );
        assert!(!e.is_remote());
        let a = opts
            .resolve_with(|k| (k == "GITHUB_TOKEN").then(|| "tok123\n".into()))
            .unwrap();
        assert!(matches!(&a, Auth::Token(t) if t == "tok123"));
        assert_eq!(format!("{a:?}"), "Token([redacted])");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, "  \n").unwrap();
        let opts = AuthOptions {
            token_file: Some(f.clone()),
            ..Default::default()
        };
        assert!(matches!(
            opts.resolve_with(|_| Some("env".into())),
            Err(GitHubError::TokenFile(TokenFileError::Empty { .. }))
        ));
        let opts = AuthOptions {
            app_id: Some(7),
            app_key: Some(f),
            ..Default::default()
        };
        assert!(matches!(
            opts.resolve_with(|_| None),
            Err(GitHubError::AppKey { .. })
        ));
    }

    #[test]
    fn request_bodies() {
        let t = CheckTarget {
            repo: "o/r".parse().unwrap(),
            head_sha: "abc".into(),
            name: "mmci".into(),
            details_url: None,
        };
        let r = check_run_start(&t, "mm: series", 0);
        assert_eq!(
            (r.method, r.path.as_str()),
            ("POST", "/repos/o/r/check-runs")
        );
        assert_eq!(r.body["status"], "in_progress");
        assert_eq!(r.body["started_at"], "1970-01-01T00:00:00Z");
        let b = check_run_complete_body(&t, "x", Conclusion::Failure, "report", 86_400);
        assert_eq!(b["conclusion"], "failure");
        assert_eq!(b["output"]["summary"], "report");
        assert_eq!(b["completed_at"], "1970-01-02T00:00:00Z");
        assert_eq!(
            sticky_marker("mm/vmscan: a --> b"),
            "<!-- mmci-sticky: mm/vmscan: a ___ b -->"
        );
        let body = sticky_body("k", &"x".repeat(70_000));
        assert!(body.len() <= MAX_TEXT && body.starts_with("<!-- mmci-sticky: k -->\n"));
        assert!("o".parse::<Repo>().is_err());
        assert!("o/r/x".parse::<Repo>().is_err());
    }

    #[test]
    fn pr_head_parses_owner_repo_and_branch() {
        let head = |repo: &str, branch: &str| PullRequest::Head {
            repo: repo.parse().unwrap(),
            branch: branch.into(),
        };
        for (arg, want) in [
            ("fork/linux:mm-fix", Some(head("fork/linux", "mm-fix"))),
            (
                "fork/linux:feature/a.b",
                Some(head("fork/linux", "feature/a.b")),
            ),
            ("fork/linux:-x", Some(head("fork/linux", "-x"))),
            ("fork/linux", None),
            ("fork/linux:", None),
            ("fork:br", None),
            ("/linux:br", None),
            ("fork/linux:a b", None),
            ("fork/linux:a\nb", None),
        ] {
            match (arg.parse::<PullRequest>(), want) {
                (Ok(got), Some(want)) => assert_eq!(got, want, "{arg:?}"),
                (Err(e), None) => assert_eq!(
                    e.to_string(),
                    format!("--pr-head {arg}: expected OWNER/REPO:BRANCH (the pull request's head repository and branch)")
                ),
                (got, want) => panic!("{arg:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_pull_request_is_picked_only_on_an_exact_head() {
        let pr = |number: u64, sha: &str, branch: &str, repo: Option<&str>| PullItem {
            number,
            head: PullHead {
                sha: sha.into(),
                branch: branch.into(),
                repo: repo.map(|r| PullRepo {
                    full_name: r.into(),
                }),
            },
        };
        let fork: Repo = "fork/linux".parse().unwrap();
        let cases: &[(&str, Vec<PullItem>, Option<u64>)] = &[
            (
                "the head",
                vec![pr(7, "abc", "fix", Some("fork/linux"))],
                Some(7),
            ),
            (
                "names are case-insensitive",
                vec![pr(7, "ABC", "fix", Some("Fork/Linux"))],
                Some(7),
            ),
            (
                "another fork's branch of the same name",
                vec![pr(7, "abc", "fix", Some("evil/linux"))],
                None,
            ),
            (
                "the branch moved on",
                vec![pr(7, "def", "fix", Some("fork/linux"))],
                None,
            ),
            (
                "another branch at the same commit",
                vec![pr(7, "abc", "other", Some("fork/linux"))],
                None,
            ),
            (
                "the fork was deleted",
                vec![pr(7, "abc", "fix", None)],
                None,
            ),
            (
                "of several, the newest that matches",
                vec![
                    pr(9, "abc", "fix", Some("evil/linux")),
                    pr(8, "abc", "fix", Some("fork/linux")),
                    pr(3, "abc", "fix", Some("fork/linux")),
                ],
                Some(8),
            ),
            ("none open", vec![], None),
        ];
        for (why, list, want) in cases {
            assert_eq!(pick_pull_request(list, &fork, "fix", "abc"), *want, "{why}");
        }
    }
}
