//! The GitHub REST client: one authenticated client per API base, the
//! check run and sticky comment it creates or updates, and how an API
//! failure is worded (secrets redacted).

use octocrab::Octocrab;
use serde::Deserialize;
use serde_json::{json, Value};

use super::*;

/// What a completed posting did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Posted {
    pub check_run_id: Option<u64>,
    /// The sticky comment and whether it was created (else updated).
    pub comment: Option<(u64, bool)>,
}

/// An authenticated client for one API base.
pub struct Client {
    crab: Octocrab,
    /// A GitHub App's own client (its JWT), which alone may read `GET /app`.
    app: Option<Octocrab>,
    api: String,
    secrets: Vec<String>,
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

/// Checks the API base before building a client.
pub fn check_api(api: &str) -> Result<(), GitHubError> {
    if api.starts_with("https://") || api.starts_with("http://") {
        Ok(())
    } else {
        Err(GitHubError::BadApi(api.to_string()))
    }
}

impl Client {
    /// Builds the client. A GitHub App first signs a JWT (RS256, iss = the
    /// App id), finds its installation on `repo` unless given, and trades
    /// the JWT for an installation token, so that bad credentials fail
    /// here, before anything is posted.
    pub async fn connect(api: &str, auth: &Auth, repo: &Repo) -> Result<Client, GitHubError> {
        check_api(api)?;
        // Rustls needs one process-wide crypto provider; octocrab picks ring
        // itself when none is installed, as does reqwest.
        let builder = || {
            Octocrab::builder()
                .base_uri(api)
                .map_err(|_| GitHubError::BadApi(api.to_string()))
        };
        match auth {
            Auth::Token(token) => {
                let crab = builder()?
                    .personal_token(token.clone())
                    .build()
                    .map_err(|e| transport("building the client", &e, &[token]))?;
                Ok(Client {
                    crab,
                    app: None,
                    api: api.to_string(),
                    secrets: vec![token.clone()],
                })
            }
            Auth::App {
                app_id,
                key_pem,
                installation_id,
            } => {
                let key = jsonwebtoken::EncodingKey::from_rsa_pem(key_pem).map_err(|e| {
                    GitHubError::AppKey {
                        path: PathBuf::from("(App key)"),
                        why: e.to_string(),
                    }
                })?;
                let app = builder()?
                    .app((*app_id).into(), key)
                    .build()
                    .map_err(|e| transport("building the client", &e, &[]))?;
                let installation = match installation_id {
                    Some(id) => *id,
                    None => {
                        let what = format!("finding the App's installation on {repo}");
                        let i: Installation = app
                            .get(format!("/repos/{repo}/installation"), None::<&()>)
                            .await
                            .map_err(|e| api_error(&what, &e, &[]))?;
                        i.id
                    }
                };
                let (crab, token) = app
                    .installation_and_token(installation.into())
                    .await
                    .map_err(|e| {
                        api_error(
                            &format!("getting an installation token (installation {installation})"),
                            &e,
                            &[],
                        )
                    })?;
                use secrecy::ExposeSecret;
                let token = token.expose_secret().to_string();
                Ok(Client {
                    crab,
                    app: Some(app),
                    api: api.to_string(),
                    secrets: vec![token],
                })
            }
        }
    }

    fn secrets(&self) -> Vec<&str> {
        self.secrets.iter().map(String::as_str).collect()
    }

    async fn send(&self, what: &str, req: &Request) -> Result<Value, GitHubError> {
        tracing::debug!(method = req.method, path = %req.path, "GitHub API");
        let r: Result<Value, octocrab::Error> = match req.method {
            "POST" => self.crab.post(&req.path, Some(&req.body)).await,
            "PATCH" => self.crab.patch(&req.path, Some(&req.body)).await,
            _ => self.crab.get(&req.path, None::<&()>).await,
        };
        r.map_err(|e| api_error(what, &e, &self.secrets()))
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
        let v: Value = self
            .crab
            .get(&path, None::<&()>)
            .await
            .map_err(|e| api_error(what, &e, &self.secrets()))?;
        let list: CheckRunList = serde_json::from_value(v).map_err(|e| GitHubError::Transport {
            what: what.into(),
            message: format!("unexpected answer: {e}"),
        })?;
        Ok(list
            .check_runs
            .iter()
            .find(|c| c.status != "completed")
            .map(|c| c.id))
    }

    /// Who this client's comments are by (see the module's comment).
    pub async fn own_login(&self) -> Result<String, GitHubError> {
        if let Some(app) = &self.app {
            let what = "reading the App's name (GET /app)";
            let v: Value = app
                .get("/app", None::<&()>)
                .await
                .map_err(|e| api_error(what, &e, &self.secrets()))?;
            let info: AppInfo = serde_json::from_value(v).map_err(|e| GitHubError::Transport {
                what: what.into(),
                message: format!("unexpected answer: {e}"),
            })?;
            return Ok(format!("{}[bot]", info.slug));
        }
        let what = "reading the token's user (GET /user)";
        match self.crab.get::<Value, _, _>("/user", None::<&()>).await {
            Ok(v) => serde_json::from_value::<Login>(v)
                .map(|l| l.login)
                .map_err(|e| GitHubError::Transport {
                    what: what.into(),
                    message: format!("unexpected answer: {e}"),
                }),
            Err(e) => match api_error(what, &e, &self.secrets()) {
                // An installation token (as $GITHUB_TOKEN is) has no user.
                GitHubError::Api { status: 403, .. } => Ok(ACTIONS_BOT.to_string()),
                other => Err(other),
            },
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
        let v: Value = self
            .crab
            .get(&path, None::<&()>)
            .await
            .map_err(|e| api_error(&what, &e, &self.secrets()))?;
        let list: Vec<PullItem> =
            serde_json::from_value(v).map_err(|e| GitHubError::Transport {
                what: what.clone(),
                message: format!("unexpected answer: {e}"),
            })?;
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
            let v: Value = self
                .crab
                .get(&path, None::<&()>)
                .await
                .map_err(|e| api_error(&what, &e, &self.secrets()))?;
            let comments: Vec<Comment> =
                serde_json::from_value(v).map_err(|e| GitHubError::Transport {
                    what: what.clone(),
                    message: format!("unexpected answer: {e}"),
                })?;
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
        tracing::debug!(method = "POST", %path, "GitHub API");
        let resp = self
            .crab
            ._post(path, Some(body))
            .await
            .map_err(|e| api_error(&what, &e, &self.secrets()))?;
        octocrab::map_github_error(resp)
            .await
            .map_err(|e| api_error(&what, &e, &self.secrets()))?;
        Ok(())
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

/// A short, token-free description of an octocrab error.
fn api_error(what: &str, e: &octocrab::Error, secrets: &[&str]) -> GitHubError {
    if let octocrab::Error::GitHub { source, .. } = e {
        let mut message = source.message.clone();
        if let Some(errors) = &source.errors {
            if !errors.is_empty() {
                message.push_str(&format!(
                    " {}",
                    serde_json::to_string(errors).unwrap_or_default()
                ));
            }
        }
        let status = source.status_code.as_u16();
        return GitHubError::Api {
            what: what.to_string(),
            status,
            message: crate::post::redact(&message, secrets),
            hint: hint(status),
        };
    }
    transport(what, e, secrets)
}

fn transport(what: &str, e: &octocrab::Error, secrets: &[&str]) -> GitHubError {
    // octocrab's Display appends a backtrace to some variants: keep the
    // first line of each cause.
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
    GitHubError::Transport {
        what: what.to_string(),
        message: crate::post::redact(&parts.join(": "), secrets),
    }
}
