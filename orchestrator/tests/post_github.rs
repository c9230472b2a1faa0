//! `mmci post github` through the binary, against a loopback server
//! (wiremock) that speaks the GitHub REST endpoints mmci uses (check runs,
//! issue comments, pull requests by head, the token's user, the App,
//! App installations and installation tokens) with GitHub's status codes
//! and JSON. Every request is recorded by wiremock.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use common::http::{self, Seen};
use serde_json::{json, Value};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

const TOKEN: &str = "ghp_mmciTestToken0123456789secret";
const INSTALLATION_TOKEN: &str = "ghs_installationToken42secret";
/// As Actions' $GITHUB_TOKEN: an installation token with no user.
const ACTIONS_TOKEN: &str = "ghs_actionsGithubToken77secret";
/// Who each credential posts as.
const TOKEN_USER: &str = "mmci-bot";
const APP_SLUG: &str = "mmci-app";
const APP_ID: u64 = 123_456;
const INSTALLATION_ID: u64 = 4242;

/// The fake GitHub's state.
#[derive(Default)]
struct GitHub {
    check_runs: Vec<Value>,
    /// (pull request, comment)
    comments: Vec<(u64, Value)>,
    /// Open pull requests, as `GET /repos/{o}/{r}/pulls` lists them.
    pulls: Vec<Value>,
    next_id: u64,
    /// The App's public key: JWTs are verified with it.
    app_public_pem: Option<Vec<u8>>,
    /// Answer this status and message to requests whose "METHOD path"
    /// starts with the key.
    fail: Vec<(String, u16, Value)>,
}

type Shared = Arc<Mutex<GitHub>>;

impl GitHub {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn jwt_ok(&self, auth: &str) -> bool {
        let (Some(pem), Some(jwt)) = (&self.app_public_pem, auth.strip_prefix("Bearer ")) else {
            return false;
        };
        let key = jsonwebtoken::DecodingKey::from_rsa_pem(pem).unwrap();
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        // GitHub takes `iss` as a number, which jsonwebtoken's own issuer
        // check (strings only) cannot see: checked by hand below.
        v.set_required_spec_claims(&["exp"]);
        match jsonwebtoken::decode::<Value>(jwt, &key, &v) {
            Ok(data) => {
                data.claims["iss"] == json!(APP_ID) && data.claims["iat"].as_u64().is_some()
            }
            Err(e) => {
                eprintln!("JWT refused: {e}");
                false
            }
        }
    }

    fn token_ok(&self, auth: &str) -> bool {
        self.login(auth).is_some()
    }

    /// The login a token acts as.
    fn login(&self, auth: &str) -> Option<String> {
        match auth.strip_prefix("Bearer ")? {
            TOKEN => Some(TOKEN_USER.into()),
            INSTALLATION_TOKEN => Some(format!("{APP_SLUG}[bot]")),
            ACTIONS_TOKEN => Some("github-actions[bot]".into()),
            _ => None,
        }
    }

    /// GitHub's answer to one request.
    fn answer(&mut self, s: &Seen) -> (u16, Value) {
        let key = s.call();
        if let Some((_, status, body)) = self.fail.iter().find(|(k, _, _)| key.starts_with(k)) {
            return (*status, body.clone());
        }
        // GitHub Enterprise serves the same API under /api/v3.
        let full = s.path.strip_prefix("/api/v3").unwrap_or(&s.path);
        let (path, query) = full.split_once('?').unwrap_or((full, ""));
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let bad_credentials = (
            401,
            json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}),
        );
        // App endpoints take the App's JWT; the others a token.
        match (s.method.as_str(), parts.as_slice()) {
            ("POST", ["app", "installations", id, "access_tokens"]) => {
                if !self.jwt_ok(s.auth()) {
                    return bad_credentials;
                }
                if *id != INSTALLATION_ID.to_string() {
                    return (404, json!({"message": "Not Found"}));
                }
                return (
                    201,
                    json!({"token": INSTALLATION_TOKEN, "expires_at": "2099-01-01T00:00:00Z", "permissions": {"checks": "write"}}),
                );
            }
            ("GET", ["repos", _, _, "installation"]) => {
                if !self.jwt_ok(s.auth()) {
                    return bad_credentials;
                }
                return (200, json!({"id": INSTALLATION_ID, "app_id": APP_ID}));
            }
            ("GET", ["app"]) => {
                if !self.jwt_ok(s.auth()) {
                    return bad_credentials;
                }
                return (
                    200,
                    json!({"id": APP_ID, "slug": APP_SLUG, "name": "mmci app"}),
                );
            }
            _ => {}
        }
        if !self.token_ok(s.auth()) {
            return bad_credentials;
        }
        match (s.method.as_str(), parts.as_slice()) {
            // Installation tokens have no user.
            ("GET", ["user"]) => match s.auth().strip_prefix("Bearer ") {
                Some(TOKEN) => (200, json!({"login": TOKEN_USER, "id": 1, "type": "User"})),
                _ => (
                    403,
                    json!({"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user"}),
                ),
            },
            ("GET", ["repos", _, _, "pulls"]) => {
                let head = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("head="))
                    .map(percent_decode);
                let list: Vec<Value> = self
                    .pulls
                    .iter()
                    .filter(|p| head.as_ref().is_none_or(|h| p["head"]["label"] == json!(h)))
                    .cloned()
                    .collect();
                (200, json!(list))
            }
            ("POST", ["repos", _, _, "check-runs"]) => {
                let mut run = s.body.clone();
                run["id"] = json!(self.id());
                self.check_runs.push(run.clone());
                (201, run)
            }
            ("PATCH", ["repos", _, _, "check-runs", id]) => {
                let id: u64 = id.parse().unwrap();
                match self.check_runs.iter_mut().find(|r| r["id"] == json!(id)) {
                    Some(run) => {
                        for (k, v) in s.body.as_object().unwrap() {
                            run[k] = v.clone();
                        }
                        (200, run.clone())
                    }
                    None => (404, json!({"message": "Not Found"})),
                }
            }
            ("GET", ["repos", _, _, "commits", sha, "check-runs"]) => {
                let name = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("check_name="))
                    .unwrap_or("");
                let runs: Vec<Value> = self
                    .check_runs
                    .iter()
                    .filter(|r| r["head_sha"] == json!(sha) && r["name"] == json!(name))
                    .rev()
                    .cloned()
                    .collect();
                (200, json!({"total_count": runs.len(), "check_runs": runs}))
            }
            ("GET", ["repos", _, _, "issues", pr, "comments"]) => {
                let pr: u64 = pr.parse().unwrap();
                let list: Vec<Value> = self
                    .comments
                    .iter()
                    .filter(|(p, _)| *p == pr)
                    .map(|(_, c)| c.clone())
                    .collect();
                (200, json!(list))
            }
            ("POST", ["repos", _, _, "issues", pr, "comments"]) => {
                let pr: u64 = pr.parse().unwrap();
                let login = self.login(s.auth());
                let c = json!({"id": self.id(), "body": s.body["body"], "user": {"login": login}});
                self.comments.push((pr, c.clone()));
                (201, c)
            }
            ("PATCH", ["repos", _, _, "issues", "comments", id]) => {
                let id: u64 = id.parse().unwrap();
                match self.comments.iter_mut().find(|(_, c)| c["id"] == json!(id)) {
                    Some((_, c)) => {
                        c["body"] = s.body["body"].clone();
                        (200, c.clone())
                    }
                    None => (404, json!({"message": "Not Found"})),
                }
            }
            _ => (404, json!({"message": "Not Found"})),
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Answers as GitHub does, from the shared state.
struct Fake(Shared);

impl Respond for Fake {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let (status, answer) = self.0.lock().unwrap().answer(&Seen::new(req));
        ResponseTemplate::new(status)
            .set_body_raw(answer.to_string(), "application/json; charset=utf-8")
            .insert_header("X-GitHub-Media-Type", "github.v3")
    }
}

/// Serves the fake GitHub on 127.0.0.1 (its base URL: `uri()`).
async fn serve(state: Shared) -> MockServer {
    http::serve(Fake(state)).await
}

fn bundled_series() -> mmci::series::Series {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    let mails = mmci::series::mails_from_mbox(&std::fs::read(path).unwrap());
    mmci::series::assemble(&mails, "bundled").unwrap()
}

/// A results dir as `mmci run` leaves it: a manifest whose patched kernel
/// carries the bundled series, and one run.
fn results_dir(root: &Path) -> PathBuf {
    use mmci::results::dir::{Host, Manifest, VariantKernel};
    use mmci::results::KernelInfo;
    let dir = root.join("results");
    std::fs::create_dir_all(&dir).unwrap();
    let plan = mmci::matrix::default_plan(&Default::default()).unwrap();
    let kernel = |variant: &str, series: Option<mmci::series::Series>| VariantKernel {
        variant: variant.into(),
        arch: mmci::arch::Arch::X86_64,
        flavour: Default::default(),
        description: variant.into(),
        kernel: KernelInfo {
            image: PathBuf::from("/cache/vmlinux"),
            release: "6.12.95".into(),
            tree: Some("linux-source-6.12".into()),
            tree_commit: Some("2a7be210a22a8655e73e347054808314e73be671".into()),
            build_key: Some("k".into()),
            series_hash: series.as_ref().map(|s| s.hash.clone()),
            head_commit: Some("abc".into()),
            build_sandboxed: Some(true),
            build_warnings: vec![],
            series,
            patchwork: None,
            flavour: mmci::kernel::Flavour::Default,
            upstream: None,
            compiler: None,
            thp: None,
            config: None,
        },
        new_warnings: vec![],
        config: None,
    };
    let m = Manifest {
        format: mmci::results::dir::MANIFEST_FORMAT,
        mmci_version: "test".into(),
        mmci_commit: None,
        plan_id: plan.fingerprint(),
        plan,
        shards: None,
        host: Host {
            hostname: "h".into(),
            cpus: 2,
            memory_mb: 1024,
            ..Default::default()
        },
        accel: Default::default(),
        kernels: vec![
            kernel("base", None),
            kernel("patched", Some(bundled_series())),
        ],
        failed_kernels: vec![],
        created_unix: 0,
    };
    mmci::results::dir::write_manifest(&dir, &m).unwrap();
    std::fs::create_dir_all(dir.join("runs/x86_64-a-base-r1")).unwrap();
    std::fs::write(dir.join("runs/x86_64-a-base-r1/run.json"), "{}").unwrap();
    dir
}

/// Every file of a dir with its content, to show it was not touched.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A test's arguments as the command takes them: `--dry-run` (this
/// file's word for a dry run) left out, since a dry run is what happens
/// without `--send`; `--send` added to every other call.
fn sending<'a>(args: &[&'a str]) -> Vec<&'a str> {
    match args.iter().position(|a| *a == "--dry-run") {
        Some(i) => [&args[..i], &args[i + 1..]].concat(),
        None => [args, &["--send"]].concat(),
    }
}

/// Runs `mmci post github ARGS` with a clean environment plus `env`.
async fn mmci(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = common::bin();
    cmd.arg("post").arg("github").args(sending(args));
    for k in [
        "GITHUB_TOKEN",
        "GITHUB_REPOSITORY",
        "GITHUB_SHA",
        "GITHUB_API_URL",
        "GITHUB_STEP_SUMMARY",
    ] {
        cmd.env_remove(k);
    }
    // Everything every crate logs (reqwest, hyper too): no token in it.
    cmd.env("MMCI_LOG", "trace");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The error line (the debug log comes before it).
fn error_line(o: &Output) -> String {
    text(o)
        .1
        .lines()
        .find(|l| l.starts_with("mmci: error: "))
        .unwrap_or("")
        .to_string()
}

fn assert_no_secret(o: &Output) {
    let (out, err) = text(o);
    for secret in [TOKEN, INSTALLATION_TOKEN] {
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "a token was printed:\n{out}\n{err}"
        );
    }
}

#[tokio::test]
async fn check_run_then_one_sticky_comment_updated_in_place() {
    let state: Shared = Arc::default();
    // Someone else's comment on the pull request: never touched.
    state.lock().unwrap().comments.push((
        7,
        json!({"id": 900, "body": "LGTM", "user": {"login": "reviewer"}}),
    ));
    state.lock().unwrap().next_id = 1000;
    let server = serve(state.clone()).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let before = snapshot(&results);
    let summary = tmp.path().join("step-summary.md");
    let env = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_REPOSITORY", "mm/series"),
        ("GITHUB_SHA", "0123abcd"),
        ("GITHUB_API_URL", api.as_str()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];

    // The run starts.
    let o = mmci(&["--start", "--results", results.to_str().unwrap()], &env).await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert_no_secret(&o);
    let seen = http::seen(&server).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/repos/mm/series/check-runs")
    );
    assert_eq!(seen[0].body["status"], "in_progress");
    assert_eq!(seen[0].body["head_sha"], "0123abcd");
    assert_eq!(seen[0].body["name"], "mmci");
    assert_eq!(
        seen[0].body["output"]["title"],
        "mm/vmscan: account and throttle MGLRU isolation"
    );
    assert_eq!(seen[0].auth(), format!("Bearer {TOKEN}"));
    let run_id = state.lock().unwrap().check_runs[0]["id"].as_u64().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("check run {run_id} ")));

    // The run is over: first report.
    let body1 = tmp.path().join("report1.md");
    std::fs::write(&body1, "## mmci\n\n| OOM kills | 0 -> 0 |\n").unwrap();
    let finish = |body: PathBuf| {
        let results = results.clone();
        async move {
            mmci(
                &[
                    "--conclusion",
                    "failure",
                    "--body",
                    body.to_str().unwrap(),
                    "--pr",
                    "7",
                    "--results",
                    results.to_str().unwrap(),
                ],
                &env,
            )
            .await
        }
    };
    let o = finish(body1.clone()).await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert_no_secret(&o);
    let seen = http::seen(&server).await;
    let calls: Vec<String> = seen[1..].iter().map(Seen::call).collect();
    assert_eq!(
        calls,
        [
            "GET /repos/mm/series/commits/0123abcd/check-runs?check_name=mmci&filter=latest"
                .to_string(),
            format!("PATCH /repos/mm/series/check-runs/{run_id}"),
            // Whose comments may be edited: the token's own user's.
            "GET /user".into(),
            "GET /repos/mm/series/issues/7/comments?per_page=100&page=1".into(),
            "POST /repos/mm/series/issues/7/comments".into(),
        ]
    );
    assert!(seen.iter().all(|s| s.auth() == format!("Bearer {TOKEN}")));
    let patch = &seen[2].body;
    assert_eq!(patch["status"], "completed");
    assert_eq!(patch["conclusion"], "failure");
    assert_eq!(
        patch["output"]["summary"],
        "## mmci\n\n| OOM kills | 0 -> 0 |\n"
    );
    let comment = seen[5].body["body"].as_str().unwrap().to_string();
    assert_eq!(
        comment,
        "<!-- mmci-sticky: mm/vmscan: account and throttle MGLRU isolation -->\n## mmci\n\n| OOM kills | 0 -> 0 |\n"
    );
    let (out, _) = text(&o);
    assert!(out.contains("created on pull request #7"), "{out}");

    // The second run: the same comment is edited, no new one.
    let body2 = tmp.path().join("report2.md");
    std::fs::write(&body2, "## mmci\n\nsecond run\n").unwrap();
    state.lock().unwrap().check_runs[0]["status"] = json!("completed");
    let o = finish(body2).await;
    assert!(o.status.success(), "{:?}", text(&o));
    let seen = http::seen(&server).await;
    let calls: Vec<String> = seen[6..].iter().map(Seen::call).collect();
    let gh = state.lock().unwrap();
    // The first check run was completed: a new, completed one is created.
    assert_eq!(calls[1], "POST /repos/mm/series/check-runs");
    assert_eq!(gh.check_runs.len(), 2);
    assert_eq!(gh.check_runs[1]["status"], "completed");
    let mine: Vec<&Value> = gh
        .comments
        .iter()
        .filter(|(pr, c)| *pr == 7 && c["id"] != json!(900))
        .map(|(_, c)| c)
        .collect();
    assert_eq!(mine.len(), 1, "the sticky comment was duplicated");
    let id = mine[0]["id"].as_u64().unwrap();
    assert_eq!(
        calls[4],
        format!("PATCH /repos/mm/series/issues/comments/{id}")
    );
    assert!(mine[0]["body"]
        .as_str()
        .unwrap()
        .ends_with("\nsecond run\n"));
    assert_eq!(gh.comments[0].1["body"], "LGTM");
    drop(gh);
    assert!(text(&o).0.contains("updated on pull request #7"));

    // In GitHub Actions the reports also went to the job summary.
    let s = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(
        s,
        "## mmci\n\n| OOM kills | 0 -> 0 |\n## mmci\n\nsecond run\n"
    );
    assert_eq!(snapshot(&results), before, "the results dir was changed");
}

fn openssl(args: &[&str]) {
    let st = std::process::Command::new("openssl")
        .args(args)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl is installed by ./mmci-setup");
    assert!(st.success(), "openssl {args:?}");
}

#[tokio::test]
async fn github_app_trades_a_jwt_for_an_installation_token() {
    let tmp = tempfile::tempdir().unwrap();
    // A throwaway key, made for this test only; PKCS#1, as GitHub hands
    // them out.
    let key = tmp.path().join("app.pem");
    let public = tmp.path().join("app.pub.pem");
    openssl(&[
        "genrsa",
        "-traditional",
        "-out",
        key.to_str().unwrap(),
        "2048",
    ]);
    openssl(&[
        "rsa",
        "-in",
        key.to_str().unwrap(),
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);
    let state: Shared = Arc::default();
    state.lock().unwrap().app_public_pem = Some(std::fs::read(&public).unwrap());
    let server = serve(state.clone()).await;
    let api = server.uri();
    let o = mmci(
        &[
            "--start",
            "--github-api",
            &api,
            "--repo",
            "mm/series",
            "--sha",
            "feed",
            "--app-id",
            &APP_ID.to_string(),
            "--app-key",
            key.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert_no_secret(&o);
    let seen = http::seen(&server).await;
    let calls: Vec<String> = seen.iter().map(Seen::call).collect();
    assert_eq!(
        calls,
        [
            "GET /repos/mm/series/installation",
            "POST /app/installations/4242/access_tokens",
            "POST /repos/mm/series/check-runs",
        ]
    );
    // The server only answered the first two because their JWT verified
    // (RS256 with the App's public key, iss = the App id); check the
    // header itself too.
    {
        let gh = state.lock().unwrap();
        for s in &seen[..2] {
            assert!(gh.jwt_ok(s.auth()), "not a valid App JWT: {}", s.auth());
            let header = s.auth().strip_prefix("Bearer ").unwrap();
            let h = jsonwebtoken::decode_header(header).unwrap();
            assert_eq!(h.alg, jsonwebtoken::Algorithm::RS256);
        }
        assert_eq!(seen[2].auth(), format!("Bearer {INSTALLATION_TOKEN}"));
        assert_eq!(gh.check_runs.len(), 1);
    }

    // A key that is not the App's: the JWT is refused, exit 9, no post.
    let other = tmp.path().join("other.pem");
    openssl(&[
        "genrsa",
        "-traditional",
        "-out",
        other.to_str().unwrap(),
        "2048",
    ]);
    let o = mmci(
        &[
            "--start",
            "--github-api",
            &api,
            "--repo",
            "mm/series",
            "--sha",
            "feed",
            "--app-id",
            &APP_ID.to_string(),
            "--app-key",
            other.to_str().unwrap(),
            "--installation-id",
            &INSTALLATION_ID.to_string(),
        ],
        &[],
    )
    .await;
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::POST),
        "{:?}",
        text(&o)
    );
    let (_, err) = text(&o);
    assert!(
        err.contains(
            "getting an installation token (installation 4242): HTTP 401: Bad credentials"
        ),
        "{err}"
    );
    assert_eq!(state.lock().unwrap().check_runs.len(), 1);
}

#[tokio::test]
async fn missing_credentials_fail_before_any_request() {
    let state: Shared = Arc::default();
    let server = serve(state.clone()).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let body = tmp.path().join("r.md");
    std::fs::write(&body, "report").unwrap();
    let o = mmci(
        &[
            "--github-api",
            &api,
            "--repo",
            "mm/series",
            "--sha",
            "feed",
            "--conclusion",
            "success",
            "--body",
            body.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert_eq!(
        error_line(&o),
        "mmci: error: no GitHub credentials: set $GITHUB_TOKEN (or --github-token-file FILE), or --app-id with --app-key for a GitHub App"
    );
    // Other bad input, also before any request.
    let o = mmci(
        &[
            "--github-api",
            &api,
            "--repo",
            "noslash",
            "--sha",
            "f",
            "--start",
        ],
        &[("GITHUB_TOKEN", TOKEN)],
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--repo noslash: expected OWNER/REPO"));
    let o = mmci(
        &[
            "--github-api",
            &api,
            "--repo",
            "mm/series",
            "--sha",
            "f",
            "--conclusion",
            "success",
            "--body",
            "/nonexistent/report.md",
        ],
        &[("GITHUB_TOKEN", TOKEN)],
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o)
        .1
        .contains("--body /nonexistent/report.md: cannot read the rendered report"));
    assert!(http::seen(&server).await.is_empty());
}

#[tokio::test]
async fn refusals_are_clear_errors_with_exit_9_and_results_untouched() {
    let state: Shared = Arc::default();
    state.lock().unwrap().fail.push((
        "POST /repos/mm/series/check-runs".into(),
        403,
        json!({"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run"}),
    ));
    state.lock().unwrap().fail.push((
        "POST /repos/mm/series/issues/7/comments".into(),
        422,
        json!({"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long"}]}),
    ));
    let server = serve(state.clone()).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let before = snapshot(&results);
    let env = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_REPOSITORY", "mm/series"),
        ("GITHUB_SHA", "0123abcd"),
        ("GITHUB_API_URL", api.as_str()),
    ];
    let o = mmci(&["--start", "--results", results.to_str().unwrap()], &env).await;
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::POST),
        "{:?}",
        text(&o)
    );
    assert_no_secret(&o);
    assert_eq!(
        error_line(&o),
        "mmci: error: GitHub API creating the check run: HTTP 403: Resource not accessible by integration (the token or App lacks a permission: checks: write, pull-requests: write, issues: write)"
    );

    // The check run succeeds (the PATCH/POST of completion), the comment is
    // refused.
    state.lock().unwrap().fail.remove(0);
    let body = tmp.path().join("r.md");
    std::fs::write(&body, "report").unwrap();
    let o = mmci(
        &[
            "--conclusion",
            "success",
            "--body",
            body.to_str().unwrap(),
            "--pr",
            "7",
            "--results",
            results.to_str().unwrap(),
        ],
        &env,
    )
    .await;
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::POST),
        "{:?}",
        text(&o)
    );
    assert_no_secret(&o);
    let err = text(&o).1;
    assert!(
        err.contains("GitHub API creating the comment on pull request #7: HTTP 422: Validation Failed [{\"code\":\"custom\",\"field\":\"body\",\"message\":\"body is too long\",\"resource\":\"IssueComment\"}] (GitHub refused the request's content)"),
        "{err}"
    );
    assert_eq!(snapshot(&results), before, "the results dir was changed");

    // A bad token: 401 from the API, named as such.
    let o = mmci(
        &["--start", "--results", results.to_str().unwrap()],
        &[
            ("GITHUB_TOKEN", "ghp_wrongWrongWrong"),
            ("GITHUB_REPOSITORY", "mm/series"),
            ("GITHUB_SHA", "0123abcd"),
            ("GITHUB_API_URL", api.as_str()),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(mmci::error::exit::POST));
    let err = text(&o).1;
    assert!(
        err.contains("HTTP 401: Bad credentials (the token is invalid or expired)"),
        "{err}"
    );
    assert!(!err.contains("ghp_wrongWrongWrong"));
}

#[tokio::test]
async fn dry_run_prints_exactly_the_requests_and_sends_nothing() {
    let state: Shared = Arc::default();
    let server = serve(state.clone()).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("r.md");
    std::fs::write(&body, "## mmci\n\nreport\n").unwrap();
    let args = [
        "--github-api",
        &api,
        "--repo",
        "mm/series",
        "--sha",
        "0123abcd",
        "--conclusion",
        "neutral",
        "--body",
        body.to_str().unwrap(),
        "--pr",
        "7",
        "--results",
        results.to_str().unwrap(),
    ];
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    // No credentials are needed for a dry run.
    let o = mmci(&dry, &[]).await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(
        http::seen(&server).await.is_empty(),
        "a dry run sent a request"
    );
    let out = text(&o).0;
    assert!(
        out.starts_with("# dry run: nothing is sent (--send sends it)\n"),
        "{out}"
    );

    // The JSON bodies it printed are the ones a real run sends.
    let printed: Vec<Value> = json_blocks(&out);
    assert_eq!(printed.len(), 2, "{out}");
    let o = mmci(&args, &[("GITHUB_TOKEN", TOKEN)]).await;
    assert!(o.status.success(), "{:?}", text(&o));
    let seen = http::seen(&server).await;
    let sent_check = seen
        .iter()
        .find(|s| s.path == "/repos/mm/series/check-runs")
        .unwrap();
    let sent_comment = seen
        .iter()
        .find(|s| s.path == "/repos/mm/series/issues/7/comments" && s.method == "POST")
        .unwrap();
    let without_time = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("completed_at");
        v
    };
    assert_eq!(without_time(&printed[0]), without_time(&sent_check.body));
    assert_eq!(printed[1], sent_comment.body);
}

/// The pretty-printed JSON objects of a dry run, in order.
fn json_blocks(out: &str) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut cur: Option<String> = None;
    for line in out.lines() {
        if line == "{" {
            cur = Some(String::from("{\n"));
        } else if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
            if line == "}" {
                blocks.push(serde_json::from_str(c).unwrap());
                cur = None;
            }
        }
    }
    blocks
}

#[tokio::test]
async fn github_enterprise_api_base_keeps_its_path() {
    let state: Shared = Arc::default();
    let server = serve(state.clone()).await;
    let api = format!("{}/api/v3", server.uri());
    let o = mmci(
        &[
            "--start",
            "--github-api",
            &api,
            "--repo",
            "mm/series",
            "--sha",
            "feed",
        ],
        &[("GITHUB_TOKEN", TOKEN)],
    )
    .await;
    assert!(o.status.success(), "{:?}", text(&o));
    let seen = http::seen(&server).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/api/v3/repos/mm/series/check-runs");
}

/// The sticky marker of the bundled series' comments.
const MARKER: &str = "<!-- mmci-sticky: mm/vmscan: account and throttle MGLRU isolation -->";

/// `mmci post github` completing a run with a comment on `pr_args`.
async fn finish(
    api: &str,
    results: &Path,
    body: &Path,
    pr_args: &[&str],
    token: &str,
    sha: &str,
) -> Output {
    let mut args = vec![
        "--conclusion",
        "success",
        "--body",
        body.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(pr_args);
    mmci(
        &args,
        &[
            ("GITHUB_TOKEN", token),
            ("GITHUB_REPOSITORY", "mm/series"),
            ("GITHUB_SHA", sha),
            ("GITHUB_API_URL", api),
        ],
    )
    .await
}

fn comment(state: &Shared, id: u64) -> Value {
    state
        .lock()
        .unwrap()
        .comments
        .iter()
        .find(|(_, c)| c["id"] == json!(id))
        .map(|(_, c)| c.clone())
        .unwrap()
}

#[tokio::test]
async fn a_marker_comment_by_someone_else_is_neither_edited_nor_in_the_way() {
    // An outsider got there first with the series' marker (and a forged
    // verdict): that comment is not the bot's.
    let forged = format!("{MARKER}\n## mmci: PASS (forged)\n");
    let state: Shared = Arc::default();
    {
        let mut gh = state.lock().unwrap();
        gh.next_id = 1000;
        gh.comments.push((
            7,
            json!({"id": 900, "body": forged, "user": {"login": "mallory"}}),
        ));
        // On pull request 8: the outsider's marker comment, then one that
        // Actions' token wrote in an earlier run.
        gh.comments.push((
            8,
            json!({"id": 940, "body": forged, "user": {"login": "mallory"}}),
        ));
        gh.comments.push((
            8,
            json!({"id": 950, "body": format!("{MARKER}\nold report\n"), "user": {"login": "github-actions[bot]"}}),
        ));
    }
    let server = serve(state.clone()).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("r.md");
    std::fs::write(&body, "## mmci\n\nreal report\n").unwrap();

    // A personal token: the bot is GET /user's login. The outsider's
    // comment is skipped, a new one made.
    let o = finish(&api, &results, &body, &["--pr", "7"], TOKEN, "0123abcd").await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(
        text(&o)
            .0
            .contains("comment 1002 created on pull request #7"),
        "{:?}",
        text(&o)
    );
    let mine = comment(&state, 1002);
    assert_eq!(mine["user"]["login"], TOKEN_USER);
    assert_eq!(mine["body"], format!("{MARKER}\n## mmci\n\nreal report\n"));
    assert_eq!(comment(&state, 900)["body"], json!(forged));
    // The next run edits the bot's own comment, still not the outsider's.
    std::fs::write(&body, "## mmci\n\nsecond report\n").unwrap();
    let o = finish(&api, &results, &body, &["--pr", "7"], TOKEN, "0123abcd").await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(
        text(&o)
            .0
            .contains("comment 1002 updated on pull request #7"),
        "{:?}",
        text(&o)
    );
    assert_eq!(
        comment(&state, 1002)["body"],
        format!("{MARKER}\n## mmci\n\nsecond report\n")
    );
    assert_eq!(comment(&state, 900)["body"], json!(forged));
    let patches: Vec<String> = http::calls(&server)
        .await
        .into_iter()
        .filter(|c| c.starts_with("PATCH /repos/mm/series/issues/comments/"))
        .collect();
    assert_eq!(patches, ["PATCH /repos/mm/series/issues/comments/1002"]);

    // Actions' $GITHUB_TOKEN: GET /user is refused (an installation has
    // no user), so the bot is github-actions[bot]: its comment 950 is
    // edited, the older marker comment 940 by the outsider is not.
    let o = finish(
        &api,
        &results,
        &body,
        &["--pr", "8"],
        ACTIONS_TOKEN,
        "0123abcd",
    )
    .await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert_no_secret(&o);
    assert!(
        text(&o)
            .0
            .contains("comment 950 updated on pull request #8"),
        "{:?}",
        text(&o)
    );
    assert_eq!(
        comment(&state, 950)["body"],
        format!("{MARKER}\n## mmci\n\nsecond report\n")
    );
    assert_eq!(comment(&state, 940)["body"], json!(forged));
    let seen = http::seen(&server).await;
    let user = seen.iter().rev().find(|s| s.path == "/user").unwrap();
    assert_eq!(user.auth(), format!("Bearer {ACTIONS_TOKEN}"));
}

#[tokio::test]
async fn a_github_app_edits_only_its_own_bot_comment() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("app.pem");
    let public = tmp.path().join("app.pub.pem");
    openssl(&[
        "genrsa",
        "-traditional",
        "-out",
        key.to_str().unwrap(),
        "2048",
    ]);
    openssl(&[
        "rsa",
        "-in",
        key.to_str().unwrap(),
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);
    let state: Shared = Arc::default();
    {
        let mut gh = state.lock().unwrap();
        gh.app_public_pem = Some(std::fs::read(&public).unwrap());
        gh.next_id = 1000;
        for (id, login) in [
            (901, "mallory"),
            (902, "github-actions[bot]"),
            (903, "mmci-app[bot]"),
        ] {
            gh.comments.push((7, json!({"id": id, "body": format!("{MARKER}\nby {login}\n"), "user": {"login": login}})));
        }
    }
    let server = serve(state.clone()).await;
    let api = server.uri();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("r.md");
    std::fs::write(&body, "app report\n").unwrap();
    let o = mmci(
        &[
            "--github-api",
            &api,
            "--repo",
            "mm/series",
            "--sha",
            "feed",
            "--app-id",
            &APP_ID.to_string(),
            "--app-key",
            key.to_str().unwrap(),
            "--installation-id",
            &INSTALLATION_ID.to_string(),
            "--conclusion",
            "neutral",
            "--body",
            body.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
            "--pr",
            "7",
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{:?}", text(&o));
    assert_no_secret(&o);
    let seen = http::seen(&server).await;
    let app = seen.iter().find(|s| s.path == "/app").expect("GET /app");
    assert!(
        state.lock().unwrap().jwt_ok(app.auth()),
        "GET /app is signed with the App's JWT"
    );
    assert!(!seen.iter().any(|s| s.path == "/user"));
    assert_eq!(
        comment(&state, 903)["body"],
        format!("{MARKER}\napp report\n")
    );
    assert_eq!(
        comment(&state, 901)["body"],
        format!("{MARKER}\nby mallory\n")
    );
    assert_eq!(
        comment(&state, 902)["body"],
        format!("{MARKER}\nby github-actions[bot]\n")
    );
}

#[tokio::test]
async fn a_pull_request_given_by_its_head_is_found_or_refused() {
    let state: Shared = Arc::default();
    let pull = |number: u64, owner: &str, repo: &str, branch: &str, sha: &str| {
        json!({"number": number, "state": "open", "head": {
            "label": format!("{owner}:{branch}"), "ref": branch, "sha": sha,
            "repo": {"full_name": format!("{owner}/{repo}")}}})
    };
    {
        let mut gh = state.lock().unwrap();
        gh.next_id = 1000;
        gh.pulls = vec![
            pull(12, "fork", "linux", "fix", "0123abcd"),
            pull(13, "evil", "linux", "fix", "0123abcd"),
        ];
        // GitHub answers by label: a pull request whose head repository
        // is not the one asked for is still refused.
        let mut other = pull(14, "fork", "linux", "other", "0123abcd");
        other["head"]["repo"]["full_name"] = json!("evil/linux");
        gh.pulls.push(other);
    }
    let server = serve(state.clone()).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("r.md");
    std::fs::write(&body, "report\n").unwrap();

    let o = finish(
        &api,
        &results,
        &body,
        &[
            "--pr-head",
            "fork/linux:fix",
            "--sticky-key",
            "pull-request",
        ],
        TOKEN,
        "0123abcd",
    )
    .await;
    assert!(o.status.success(), "{:?}", text(&o));
    let calls = http::calls(&server).await;
    assert_eq!(
        calls[0],
        "GET /repos/mm/series/pulls?state=open&head=fork%3Afix&per_page=100"
    );
    assert_eq!(
        calls.last().unwrap(),
        "POST /repos/mm/series/issues/12/comments"
    );
    assert_eq!(
        state.lock().unwrap().comments[0],
        (
            12,
            json!({"id": 1002, "body": "<!-- mmci-sticky: pull_request -->\nreport\n", "user": {"login": TOKEN_USER}})
        )
    );

    // Refused before anything is posted: the branch moved on, a fork with
    // no pull request, a head repository that is not the one asked for.
    for (head, sha) in [
        ("fork/linux:fix", "ffff0000"),
        ("nobody/linux:fix", "0123abcd"),
        ("fork/linux:other", "0123abcd"),
    ] {
        let before = http::seen(&server).await.len();
        let o = finish(&api, &results, &body, &["--pr-head", head], TOKEN, sha).await;
        assert_eq!(
            o.status.code(),
            Some(mmci::error::exit::POST),
            "{head}: {:?}",
            text(&o)
        );
        assert_eq!(
            error_line(&o),
            format!("mmci: error: no open pull request of mm/series has the head {head} at {sha}: not commenting (the branch moved on, or the pull request is closed or comes from another repository)")
        );
        let calls = http::calls(&server).await;
        assert_eq!(calls.len(), before + 1, "{head}: {calls:?}");
        assert!(
            calls[before].starts_with("GET /repos/mm/series/pulls?"),
            "{calls:?}"
        );
    }
    let counts = {
        let gh = state.lock().unwrap();
        (gh.check_runs.len(), gh.comments.len())
    };
    assert_eq!(counts, (1, 1));

    // Bad input: before any request.
    let before = http::seen(&server).await.len();
    let o = finish(
        &api,
        &results,
        &body,
        &["--pr-head", "fork:fix"],
        TOKEN,
        "0123abcd",
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        error_line(&o),
        "mmci: error: --pr-head fork:fix: expected OWNER/REPO:BRANCH (the pull request's head repository and branch)"
    );
    let o = finish(
        &api,
        &results,
        &body,
        &["--pr", "7", "--pr-head", "fork/linux:fix"],
        TOKEN,
        "0123abcd",
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .contains("'--pr <PR>' cannot be used with '--pr-head <OWNER/REPO:BRANCH>'"),
        "{:?}",
        text(&o)
    );
    assert_eq!(http::seen(&server).await.len(), before);

    // The dry run says which pull request it would look up.
    let o = finish(
        &api,
        &results,
        &body,
        &["--pr-head", "fork/linux:fix", "--dry-run"],
        TOKEN,
        "0123abcd",
    )
    .await;
    assert!(o.status.success());
    assert!(
        text(&o).0.contains("/repos/mm/series/issues/{number of the open pull request with head fork/linux:fix at 0123abcd}/comments"),
        "{}",
        text(&o).0
    );
}

/// Review L3: the token goes over https only (http to a loopback address
/// excepted, as these tests' server is), refused before any request; and
/// an API error's text reaches the terminal with its control characters
/// escaped (a fake server's ESC colour and CR LF were printed as is).
#[tokio::test]
async fn the_token_goes_over_https_only_and_api_errors_are_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let env = |api: &'static str| {
        [
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_REPOSITORY", "mm/series"),
            ("GITHUB_SHA", "0123abcd"),
            ("GITHUB_API_URL", api),
        ]
    };
    for api in [
        "http://api.github.example.org",
        "http://10.0.0.1:8080/api/v3",
        "http://localhost.evil.example.org",
    ] {
        let o = mmci(
            &["--start", "--results", results.to_str().unwrap()],
            &env(api),
        )
        .await;
        assert_eq!(
            o.status.code(),
            Some(mmci::error::exit::USAGE),
            "{:?}",
            text(&o)
        );
        assert_eq!(
            error_line(&o),
            format!("mmci: error: --github-api {api}: refusing to send the token over http:// (clear text): give the https:// URL (http:// takes the token only on a loopback address, for tests)")
        );
        assert_no_secret(&o);
    }

    let state: Shared = Arc::default();
    state.lock().unwrap().fail.push((
        "POST /repos/mm/series/check-runs".into(),
        403,
        json!({"message": "Denied\u{1b}[31m red\r\nmmci: error: forged\u{7}"}),
    ));
    let server = serve(state.clone()).await;
    let api: &'static str = Box::leak(server.uri().into_boxed_str());
    let o = mmci(
        &["--start", "--results", results.to_str().unwrap()],
        &env(api),
    )
    .await;
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::POST),
        "{:?}",
        text(&o)
    );
    let err = text(&o).1;
    assert_eq!(
        error_line(&o),
        "mmci: error: GitHub API creating the check run: HTTP 403: Denied\\u{1b}[31m red\\r\\nmmci: error: forged\\u{7} (the token or App lacks a permission: checks: write, pull-requests: write, issues: write)"
    );
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("mmci: error: "))
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}
