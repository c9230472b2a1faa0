//! Patchwork through the binary and the library, against a loopback server
//! (wiremock) that answers patchwork's REST API 1.3 as documented: series
//! and their mboxes (the patches only; the cover letter's mbox apart), the
//! events list with a fixed page size, `since` (inclusive), `order` and
//! `Link` headers, patches by message-id, and check creation with token
//! auth: 401 for a bad token, 403 for a user without the add_check
//! permission, 404 for an unknown patch, 400 for a bad field, 429 with
//! Retry-After while throttled. Every request is recorded by wiremock.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const TOKEN: &str = "pw0123456789abcdefTokenSecret";
/// A valid token whose user may not add checks.
const WEAK_TOKEN: &str = "pwWeakUserTokenNoPermission42";
const GH_TOKEN: &str = "ghp_watchDispatchToken0123456789";

const BUNDLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../kernels/series/mglru-isolation-v1.mbox"
);

/// A series as the fake holds it.
#[derive(Clone)]
struct PwSeries {
    id: u64,
    project: String,
    cover: Option<(u64, String, Vec<u8>)>,
    /// (patch id, msgid, name, raw mail)
    patches: Vec<(u64, String, String, Vec<u8>)>,
}

#[derive(Default)]
struct Pw {
    base: String,
    series: Vec<PwSeries>,
    events: Vec<Value>,
    checks: Vec<(u64, Value)>,
    /// Events per page (patchwork's events list ignores per_page).
    page_size: usize,
    /// Answer this many requests with 429 first.
    throttle: u32,
    retry_after: String,
}

#[derive(Clone)]
struct Fake(Arc<Mutex<Pw>>);

fn detail(status: u16, text: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({ "detail": text }))
}

impl Pw {
    fn series_json(&self, s: &PwSeries) -> Value {
        let b = &self.base;
        json!({
            "id": s.id,
            "url": format!("{b}/api/1.3/series/{}/", s.id),
            "web_url": format!("{b}/project/{}/list/?series={}", s.project, s.id),
            "project": {"id": 1, "link_name": s.project, "name": s.project},
            "name": "mm/vmscan: account and throttle MGLRU isolation",
            "date": "2026-11-30T10:00:00",
            "version": 1,
            "total": s.patches.len(),
            "received_total": s.patches.len(),
            "received_all": true,
            "mbox": format!("{b}/series/{}/mbox/", s.id),
            "cover_letter": s.cover.as_ref().map(|(id, msgid, _)| json!({
                "id": id, "msgid": format!("<{msgid}>"), "name": "cover",
                "mbox": format!("{b}/cover/{id}/mbox/"),
            })),
            "patches": s.patches.iter().map(|(id, msgid, name, _)| json!({
                "id": id, "msgid": format!("<{msgid}>"), "name": name,
                "mbox": format!("{b}/patch/{id}/mbox/"),
            })).collect::<Vec<_>>(),
        })
    }

    fn events(&self, req: &Request) -> ResponseTemplate {
        let q: Vec<(String, String)> = req.url.query_pairs().into_owned().collect();
        let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut list: Vec<Value> = self
            .events
            .iter()
            .filter(|e| get("category").is_none_or(|c| e["category"] == c.as_str()))
            .filter(|e| get("project").is_none_or(|p| e["project"]["link_name"] == p.as_str()))
            // `since` is inclusive (gte), as patchwork's TimestampMixin.
            .filter(|e| get("since").is_none_or(|s| e["date"].as_str().unwrap() >= s.as_str()))
            .cloned()
            .collect();
        list.sort_by_key(|e| e["date"].as_str().unwrap().to_string());
        if get("order").as_deref() != Some("date") {
            list.reverse(); // default ordering: -date
        }
        let page: usize = get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
        let pages = list.len().div_ceil(self.page_size).max(1);
        if page > pages {
            return detail(404, "Invalid page.");
        }
        let items: Vec<Value> = list
            .into_iter()
            .skip((page - 1) * self.page_size)
            .take(self.page_size)
            .collect();
        let link = |p: usize| {
            // wiremock's request URL is http://localhost/...: the base
            // the client used is ours.
            let mut u = reqwest::Url::parse(&format!("{}{}", self.base, req.url.path())).unwrap();
            let kept: Vec<(String, String)> =
                q.iter().filter(|(k, _)| k != "page").cloned().collect();
            u.query_pairs_mut()
                .clear()
                .extend_pairs(kept)
                .append_pair("page", &p.to_string());
            u.to_string()
        };
        let mut links = vec![];
        if page < pages {
            links.push(format!("<{}>; rel=\"next\"", link(page + 1)));
        }
        if page > 1 {
            links.push(format!("<{}>; rel=\"prev\"", link(page - 1)));
        }
        links.push(format!("<{}>; rel=\"first\"", link(1)));
        links.push(format!("<{}>; rel=\"last\"", link(pages)));
        ResponseTemplate::new(200)
            .set_body_json(Value::Array(items))
            .insert_header("Link", links.join(", ").as_str())
    }

    fn create_check(&mut self, req: &Request, patch: u64) -> ResponseTemplate {
        if !self
            .series
            .iter()
            .any(|s| s.patches.iter().any(|p| p.0 == patch))
        {
            return detail(404, "No Patch matches the given query.");
        }
        let auth = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        match auth.strip_prefix("Token ") {
            None => return detail(403, "Authentication credentials were not provided."),
            Some(t) if t == WEAK_TOKEN => {
                return detail(403, "You do not have permission to perform this action.")
            }
            Some(t) if t != TOKEN => return detail(401, "Invalid token."),
            _ => {}
        }
        if req
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            != Some("application/json")
        {
            // Patchwork's docs: without it the request is not understood.
            return detail(415, "Unsupported media type.");
        }
        let body: Value = match req.body_json() {
            Ok(b) => b,
            Err(_) => return detail(400, "JSON parse error."),
        };
        let state = body["state"].as_str().unwrap_or("");
        if !["pending", "success", "warning", "fail"].contains(&state) {
            return ResponseTemplate::new(400)
                .set_body_json(json!({"state": [format!("\"{state}\" is not a valid choice.")]}));
        }
        let context = body["context"].as_str().unwrap_or("default");
        if context.is_empty()
            || !context
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return ResponseTemplate::new(400).set_body_json(json!({"context": [
                "Enter a valid \u{201c}slug\u{201d} consisting of letters, numbers, underscores or hyphens."
            ]}));
        }
        let id = self.checks.len() as u64 + 1;
        let check = json!({
            "id": id,
            "url": format!("{}/api/1.3/patches/{patch}/checks/{id}/", self.base),
            "user": {"id": 7, "username": "mmci-bot"},
            "date": "2026-12-01T08:00:00",
            "state": state,
            "target_url": body.get("target_url").cloned().unwrap_or(Value::Null),
            "context": context,
            "description": body.get("description").cloned().unwrap_or(Value::Null),
        });
        self.checks.push((patch, check.clone()));
        ResponseTemplate::new(201).set_body_json(check)
    }
}

fn mbox_of(mails: &[(u64, Vec<u8>)]) -> Vec<u8> {
    // As patchwork's series_to_mbox: each mail with its unixfrom and
    // X-Patchwork-Id, joined by newlines.
    let mut out = Vec::new();
    for (id, raw) in mails {
        out.extend_from_slice(b"From patchwork Mon Nov 30 10:00:00 2026\n");
        out.extend_from_slice(format!("X-Patchwork-Id: {id}\n").as_bytes());
        out.extend_from_slice(raw);
        if !raw.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.push(b'\n');
    }
    out
}

impl Respond for Fake {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut pw = self.0.lock().unwrap();
        if pw.throttle > 0 {
            pw.throttle -= 1;
            return detail(
                429,
                "Request was throttled. Expected available in 1 second.",
            )
            .insert_header("Retry-After", pw.retry_after.as_str());
        }
        let p = req.url.path().to_string();
        let seg: Vec<&str> = p.trim_matches('/').split('/').collect();
        let num = |s: &str| s.parse::<u64>().ok();
        match (req.method.as_str(), seg.as_slice()) {
            ("GET", ["api", "1.3", "series", id]) => {
                match pw.series.iter().find(|s| Some(s.id) == num(id)) {
                    Some(s) => ResponseTemplate::new(200).set_body_json(pw.series_json(s)),
                    None => detail(404, "No Series matches the given query."),
                }
            }
            ("GET", ["series", id, "mbox"]) => {
                match pw.series.iter().find(|s| Some(s.id) == num(id)) {
                    Some(s) => ResponseTemplate::new(200).set_body_bytes(mbox_of(
                        &s.patches
                            .iter()
                            .map(|p| (p.0, p.3.clone()))
                            .collect::<Vec<_>>(),
                    )),
                    None => detail(404, "Not found."),
                }
            }
            ("GET", ["cover", id, "mbox"]) => {
                match pw
                    .series
                    .iter()
                    .find_map(|s| s.cover.clone().filter(|c| Some(c.0) == num(id)))
                {
                    Some((cid, _, raw)) => {
                        ResponseTemplate::new(200).set_body_bytes(mbox_of(&[(cid, raw)]))
                    }
                    None => detail(404, "Not found."),
                }
            }
            ("GET", ["api", "1.3", "events"]) => pw.events(req),
            ("GET", ["api", "1.3", "patches"]) => {
                let q: Vec<(String, String)> = req.url.query_pairs().into_owned().collect();
                let msgid = q.iter().find(|(k, _)| k == "msgid").map(|(_, v)| v.clone());
                let project = q
                    .iter()
                    .find(|(k, _)| k == "project")
                    .map(|(_, v)| v.clone());
                let found: Vec<Value> = pw
                    .series
                    .iter()
                    .filter(|s| project.as_ref().is_none_or(|p| &s.project == p))
                    .flat_map(|s| s.patches.iter())
                    .filter(|p| msgid.as_ref().is_none_or(|m| &p.1 == m))
                    .map(|p| json!({"id": p.0, "msgid": format!("<{}>", p.1), "name": p.2}))
                    .collect();
                ResponseTemplate::new(200).set_body_json(Value::Array(found))
            }
            ("POST", ["api", "1.3", "patches", id, "checks"]) => match num(id) {
                Some(id) => pw.create_check(req, id),
                None => detail(404, "Not found."),
            },
            _ => detail(404, "Not found."),
        }
    }
}

/// The bundled series' mails, rewritten into series `n` of the fake: other
/// message-ids (but for n = 0: the bundled series as it is), a line making
/// its content (hash) its own, and optionally another file than
/// mm/vmscan.c.
fn variant_mails(n: u64, tag: &str, path_to: Option<&str>) -> Vec<(String, String, Vec<u8>)> {
    let mails = mmci::series::mails_from_mbox(&std::fs::read(BUNDLED).unwrap());
    mails
        .iter()
        .map(|m| {
            // Other message-ids in the headers only: trailers in the body
            // (a Reported-by: address) are content.
            let raw = String::from_utf8_lossy(&m.raw);
            let (head, body) = raw.split_once("\n\n").unwrap();
            let own = |t: &str| match n {
                0 => t.to_string(),
                _ => t.replace("@example.org", &format!("-s{n}@example.org")),
            };
            let mut text = format!("{}\n\n{body}", own(head));
            if !tag.is_empty() {
                text = text.replacen("\n\n", &format!("\n\nSeries-tag: {tag}\n\n"), 1);
            }
            if let Some(p) = path_to {
                text = text.replace("mm/vmscan.c", p);
            }
            let msgid = own(&m.message_id);
            (msgid, m.subject.clone(), text.into_bytes())
        })
        .collect()
}

/// A series of the fake: cover id n*100, patch ids n*100+1, n*100+2.
fn pw_series(n: u64, tag: &str, path_to: Option<&str>) -> PwSeries {
    let mails = variant_mails(n, tag, path_to);
    let (cover, patches): (Vec<_>, Vec<_>) = mails.into_iter().partition(|m| m.1.contains(" 0/2]"));
    PwSeries {
        id: n,
        project: "linux-mm".into(),
        cover: cover
            .into_iter()
            .next()
            .map(|(id, _, raw)| (n * 100, id, raw)),
        patches: patches
            .into_iter()
            .enumerate()
            .map(|(i, (msgid, subject, raw))| (n * 100 + 1 + i as u64, msgid, subject, raw))
            .collect(),
    }
}

fn event(id: u64, date: &str, project: &str, category: &str, series: u64, base: &str) -> Value {
    json!({
        "id": id,
        "category": category,
        "project": {"id": 1, "link_name": project},
        "date": date,
        "actor": null,
        "payload": {"series": {
            "id": series,
            "url": format!("{base}/api/1.3/series/{series}/"),
            "web_url": format!("{base}/project/{project}/list/?series={series}"),
            "name": "x",
            "date": date,
            "version": 1,
            "mbox": format!("{base}/series/{series}/mbox/"),
        }},
    })
}

async fn patchwork() -> (MockServer, Fake) {
    let server = MockServer::start().await;
    let fake = Fake(Arc::new(Mutex::new(Pw {
        base: server.uri(),
        page_size: 2,
        retry_after: "1".into(),
        ..Default::default()
    })));
    Mock::given(any())
        .respond_with(fake.clone())
        .mount(&server)
        .await;
    (server, fake)
}

fn work() -> tempfile::TempDir {
    let root = std::env::var_os("MMCI_TEST_WORK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("mmci-test-work"));
    std::fs::create_dir_all(&root).unwrap();
    tempfile::tempdir_in(root).unwrap()
}

/// Runs `mmci ARGS` with a clean environment plus `env`, logging
/// everything every crate logs.
async fn mmci(args: &[&str], env: &[(&str, &str)], work: &Path) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mmci"));
    cmd.arg("--work-dir").arg(work.join("cache")).args(args);
    for k in ["MMCI_PATCHWORK_TOKEN", "GITHUB_TOKEN", "GITHUB_API_URL"] {
        cmd.env_remove(k);
    }
    cmd.env("MMCI_LOG", "trace").env("RUST_LOG", "trace");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.unwrap()
}

fn out(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn assert_no_secret(o: &Output) {
    let (so, se) = out(o);
    for secret in [TOKEN, WEAK_TOKEN, "BadToken0000", GH_TOKEN] {
        assert!(
            !so.contains(secret) && !se.contains(secret),
            "a token leaked:\n{so}\n{se}"
        );
    }
}

/// A results dir whose patched kernel carries the bundled-style series
/// `s` (as `--patchwork --pw-series` leaves it when `origin`), copied from
/// the recorded default matrix so that it has a verdict.
async fn results_dir(root: &Path, s: &PwSeries, fake: &Fake, origin: bool) -> PathBuf {
    let dir = root.join("results");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-matrix"),
        &dir,
    );
    let mut mbox = Vec::new();
    for raw in s
        .cover
        .iter()
        .map(|c| c.2.clone())
        .chain(s.patches.iter().map(|p| p.3.clone()))
    {
        mbox.extend(mbox_of(&[(0, raw)]));
    }
    let series = mmci::series::assemble(&mmci::series::mails_from_mbox(&mbox), "t").unwrap();
    let base = fake.0.lock().unwrap().base.clone();
    let o = mmci::series::patchwork::Origin {
        url: base,
        series: s.id,
        web_url: None,
        project: Some(s.project.clone()),
        patches: s
            .patches
            .iter()
            .map(|p| mmci::series::patchwork::PatchRef {
                id: p.0,
                msgid: p.1.clone(),
                name: p.2.clone(),
            })
            .collect(),
    };
    let mpath = dir.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    let k = &mut m["kernels"][1]["kernel"];
    k["series"] = serde_json::to_value(series.metadata()).unwrap();
    if origin {
        k["patchwork"] = serde_json::to_value(o).unwrap();
    }
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A fake patchwork holding series `n` alone (`pw_series(n, "", None)`),
/// and a work dir with a results dir for it (see `results_dir`): the
/// server, the fake, the series, the work dir and the results dir.
async fn posting(n: u64, origin: bool) -> (MockServer, Fake, PwSeries, tempfile::TempDir, PathBuf) {
    let (server, fake) = patchwork().await;
    let s = pw_series(n, "", None);
    fake.0.lock().unwrap().series.push(s.clone());
    let root = work();
    let results = results_dir(root.path(), &s, &fake, origin).await;
    (server, fake, s, root, results)
}

/// `post patchwork --results R --state STATE --send`, described "d".
fn send_state<'a>(r: &'a str, state: &'a str) -> [&'a str; 9] {
    [
        "post",
        "patchwork",
        "--results",
        r,
        "--state",
        state,
        "--description",
        "d",
        "--send",
    ]
}

/// Renders recorded requests as the dry run renders its own.
fn render(base: &str, reqs: &[Request]) -> String {
    let mut s = String::new();
    for r in reqs {
        let query = r.url.query().map(|q| format!("?{q}")).unwrap_or_default();
        s.push_str(&format!("{} {base}{}{query}\n", r.method, r.url.path()));
        if !r.body.is_empty() {
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            s.push_str(&serde_json::to_string_pretty(&v).unwrap());
            s.push('\n');
        }
    }
    s
}

#[tokio::test]
async fn a_series_is_read_from_patchwork_with_its_patch_ids() {
    let (server, fake) = patchwork().await;
    fake.0.lock().unwrap().series.push(pw_series(7, "", None));
    let store = work();
    let source = mmci::series::SeriesSpec::Patchwork {
        url: server.uri(),
        series: 7,
    };
    let (s, origin) = mmci::series::load_source(&source, &Default::default(), store.path())
        .await
        .unwrap();
    // Assembled as any mbox: the cover letter (from its own mbox), the
    // revision and the base-commit.
    assert_eq!((s.version, s.total), (1, 2));
    assert_eq!(
        s.cover.as_ref().unwrap().subject,
        "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation"
    );
    assert_eq!(
        s.base_commit.as_deref(),
        Some("2a7be210a22a8655e73e347054808314e73be671")
    );
    let origin = origin.unwrap();
    assert_eq!(
        (origin.series, origin.project.as_deref()),
        (7, Some("linux-mm"))
    );
    let ids: Vec<u64> = origin.patches.iter().map(|p| p.id).collect();
    assert_eq!(ids, [701, 702]);
    assert_eq!(origin.patches[0].msgid, s.patches[0].message_id);
    let seen: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect();
    assert_eq!(
        seen,
        [
            "GET /api/1.3/series/7/",
            "GET /cover/700/mbox/",
            "GET /series/7/mbox/"
        ]
    );
    assert!(store.path().join("patchwork-7.mbox").is_file());

    // `mmci series show` says what would be applied, from the same API.
    let show = |json: bool| {
        let uri = server.uri();
        let work = store.path().to_path_buf();
        async move {
            let mut args = vec!["series", "show", "--patchwork", &uri, "--pw-series", "7"];
            if json {
                args.push("--json");
            }
            mmci(&args, &[], &work).await
        }
    };
    let o = show(false).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        so.starts_with(&format!(
            "patchwork series 7 ({}): v1, 2 patches\n",
            server.uri()
        )),
        "{so}"
    );
    assert!(
        so.contains("cover:     [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation\n"),
        "{so}"
    );
    assert!(
        so.contains("base:      2a7be210a22a8655e73e347054808314e73be671 (base-commit: trailer"),
        "{so}"
    );
    let o = show(true).await;
    let json: Value = serde_json::from_str(&out(&o).0).unwrap();
    let ids: Vec<&str> = json["patches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            origin.patches[0].msgid.as_str(),
            origin.patches[1].msgid.as_str()
        ]
    );

    // An unknown series: the fetch exit code and patchwork's words.
    let o = mmci(
        &[
            "kernel",
            "build",
            "--patchwork",
            &server.uri(),
            "--pw-series",
            "99",
        ],
        &[],
        store.path(),
    )
    .await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(7), "{err}");
    assert!(
        err.contains("HTTP 404: No Series matches the given query. (no such series"),
        "{err}"
    );
    let o = mmci(
        &[
            "kernel",
            "build",
            "--patchwork",
            "pw.example.org",
            "--pw-series",
            "1",
        ],
        &[],
        store.path(),
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(
        out(&o)
            .1
            .contains("--patchwork pw.example.org: not the http(s) URL"),
        "{}",
        out(&o).1
    );
}

#[test]
fn matrix_kernel_variants_take_a_patchwork_series() {
    let dir = work();
    let file = dir.path().join("m.yaml");
    let yaml = |k: &str| {
        format!(
            "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - name: pw\n    patchwork: {k}\n"
        )
    };
    std::fs::write(
        &file,
        yaml("{url: 'https://patchwork.kernel.org/', series: 901234}"),
    )
    .unwrap();
    let plan = mmci::matrix::load(&file, &Default::default()).unwrap();
    let v = &plan.variants[1];
    assert_eq!(
        v.describe(),
        "patchwork series 901234 (https://patchwork.kernel.org)"
    );
    let sources = mmci::pipeline::variant_sources(
        &plan,
        &mmci::kernel::KernelSource::bundled(),
        &Default::default(),
        None,
    );
    assert_eq!(
        sources["pw"].series,
        Some(mmci::series::SeriesSpec::Patchwork {
            url: "https://patchwork.kernel.org".into(),
            series: 901234
        })
    );
    for (bad, want) in [
        (
            "{url: 'patchwork.kernel.org', series: 1}",
            "not the http(s) URL",
        ),
        ("{url: 'https://p', series: x}", "invalid u64"),
        ("{url: 'https://p', series: 1, project: a}", "project"),
    ] {
        std::fs::write(&file, yaml(bad)).unwrap();
        let e = mmci::matrix::load(&file, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want) && e.contains("m.yaml"), "{bad}: {e}");
    }
}

#[tokio::test]
async fn the_dry_run_prints_exactly_what_send_sends() {
    let (server, fake, _, root, results) = posting(3, true).await;
    let r = results.display().to_string();
    let args = [
        "post",
        "patchwork",
        "--results",
        &r,
        "--context",
        "mmci-smoke",
        "--target-url",
        "https://github.com/mmci/linux/actions/runs/42",
    ];
    let dry = mmci(&args, &[], root.path()).await;
    let (dry_out, dry_err) = out(&dry);
    assert!(dry.status.success(), "{dry_err}");
    println!("--- dry run, series read from patchwork ---\n{dry_out}");
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "the dry run sent something"
    );
    let mut send_args = args.to_vec();
    send_args.push("--send");
    let sent = mmci(&send_args, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    let (sent_out, sent_err) = out(&sent);
    assert!(sent.status.success(), "{sent_err}");
    let reqs = server.received_requests().await.unwrap();
    let body = dry_out.split_once('\n').unwrap().1;
    assert_eq!(body, render(&server.uri(), &reqs), "dry run:\n{dry_out}");
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(
            r.headers["authorization"],
            format!("Token {TOKEN}").as_str()
        );
    }
    // The state follows the recorded matrix's verdict.
    let c =
        mmci::analysis::analyse_dir(&results, &Default::default(), &Default::default()).unwrap();
    let want = mmci::post::patchwork::CheckState::of_verdict(c.verdict.status).as_str();
    let checks = fake.0.lock().unwrap().checks.clone();
    assert_eq!(checks.iter().map(|c| c.0).collect::<Vec<_>>(), [301, 302]);
    for (_, c) in &checks {
        assert_eq!(c["state"], want);
        assert_eq!(c["context"], "mmci-smoke");
        assert!(
            c["description"].as_str().unwrap().starts_with("mmci: "),
            "{c}"
        );
    }
    assert!(
        sent_out.contains("`mmci-smoke` ") && sent_out.contains("on patch 302 (2/2"),
        "{sent_out}"
    );
    assert_no_secret(&dry);
    assert_no_secret(&sent);
    assert!(
        sent_err.contains("patchwork API"),
        "no trace log: {sent_err}"
    );

    // --start: pending, whatever the verdict.
    let start = mmci(
        &[
            "post",
            "patchwork",
            "--results",
            &r,
            "--start",
            "--send",
            "--description",
            "building",
        ],
        &[("MMCI_PATCHWORK_TOKEN", TOKEN)],
        root.path(),
    )
    .await;
    assert!(start.status.success(), "{}", out(&start).1);
    let checks = fake.0.lock().unwrap().checks.clone();
    assert_eq!(checks[2].1["state"], "pending");
    assert_eq!(checks[2].1["description"], "building");
    assert_eq!(checks[2].1["target_url"], Value::Null);

    // Before there are results: the series by id.
    let uri = server.uri();
    let pre = [
        "post",
        "patchwork",
        "--patchwork",
        &uri,
        "--pw-series",
        "3",
        "--start",
        "--send",
    ];
    let o = mmci(&pre, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    let checks = fake.0.lock().unwrap().checks.clone();
    let pending: Vec<u64> = checks[4..].iter().map(|c| c.0).collect();
    assert_eq!(pending, [301, 302]);
    assert_eq!(
        checks[5].1["description"],
        "mmci: building the kernels and running the matrix"
    );
    let o = mmci(&pre[..6], &[], root.path()).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(
        out(&o).1.contains("give --start or --state"),
        "{}",
        out(&o).1
    );
    assert_no_secret(&o);
}

#[tokio::test]
async fn a_series_from_elsewhere_is_found_by_message_id() {
    // The bundled series itself, as results of `mmci run --series`.
    let (server, _, s, root, results) = posting(0, false).await;
    let r = results.display().to_string();
    let uri = server.uri();
    let args = [
        "post",
        "patchwork",
        "--results",
        &r,
        "--state",
        "success",
        "--patchwork",
        &uri,
        "--project",
        "linux-mm",
        "--description",
        "ok",
    ];
    let dry = mmci(&args, &[], root.path()).await;
    let (dry_out, e) = out(&dry);
    assert!(dry.status.success(), "{e}");
    println!("{dry_out}");
    assert!(
        dry_out.contains(&format!(
            "GET {uri}/api/1.3/patches/?msgid={}&project=linux-mm",
            s.patches[0].1.replace('@', "%40")
        )),
        "{dry_out}"
    );
    assert!(dry_out.contains(&format!(
        "POST {uri}/api/1.3/patches/{{id of <{}>}}/checks/",
        s.patches[1].1
    )));
    let mut send = args.to_vec();
    send.push("--send");
    let o = mmci(&send, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    let seen: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect();
    assert_eq!(
        seen,
        [
            "GET /api/1.3/patches/",
            "GET /api/1.3/patches/",
            "POST /api/1.3/patches/1/checks/",
            "POST /api/1.3/patches/2/checks/"
        ]
    );
    // What a real run would send for the bundled series: the dry run
    // against patchwork.kernel.org (nothing is sent).
    let o = mmci(
        &[
            "post",
            "patchwork",
            "--results",
            &r,
            "--patchwork",
            "https://patchwork.kernel.org",
            "--project",
            "linux-mm",
            "--context",
            "mmci",
            "--target-url",
            "https://github.com/mmci/linux/actions/runs/42",
        ],
        &[],
        root.path(),
    )
    .await;
    assert!(o.status.success(), "{}", out(&o).1);
    println!("--- dry run for the bundled series ---\n{}", out(&o).0);
    // Without an instance, the results dir cannot say where to post.
    let o = mmci(
        &[
            "post",
            "patchwork",
            "--results",
            &r,
            "--state",
            "fail",
            "--description",
            "x",
        ],
        &[],
        root.path(),
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).1.contains("give --patchwork URL"), "{}", out(&o).1);
}

#[tokio::test]
async fn refusals_are_named_and_exit_9_without_the_token() {
    let (_server, fake, _, root, results) = posting(4, true).await;
    let r = results.display().to_string();
    let args = send_state(&r, "fail");
    let cases: &[(&str, &str)] = &[
        ("BadToken0000", "HTTP 401: Invalid token. (the token was refused"),
        (WEAK_TOKEN, "HTTP 403: You do not have permission to perform this action. (the token's user may not add checks"),
    ];
    for (token, want) in cases {
        let o = mmci(&args, &[("MMCI_PATCHWORK_TOKEN", token)], root.path()).await;
        let (_, err) = out(&o);
        assert_eq!(o.status.code(), Some(9), "{err}");
        assert!(err.contains(want), "{err}");
        assert_no_secret(&o);
    }
    // The token from a file; no token at all is bad input.
    let tf = root.path().join("token");
    std::fs::write(&tf, format!("{TOKEN}\n")).unwrap();
    let mut with_file = args.to_vec();
    with_file.extend(["--token-file", tf.to_str().unwrap()]);
    let o = mmci(&with_file, &[], root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_no_secret(&o);
    let o = mmci(&args, &[], root.path()).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o)
        .1
        .contains("no patchwork token: set $MMCI_PATCHWORK_TOKEN"));
    // A patch patchwork does not know (the second one): the first check
    // was posted and the message says so.
    fake.0.lock().unwrap().series[0].patches[1].0 = 999;
    let o = mmci(&args, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(9), "{err}");
    assert!(err.contains("posted 1 of 2 checks (patch 401)"), "{err}");
    assert!(
        err.contains("patches/402/checks/: HTTP 404: No Patch matches the given query."),
        "{err}"
    );
    // Bad input found before any request.
    for (bad, want) in [
        (["--context", "ci-other"], "--context ci-other"),
        (["--target-url", "not a url"], "--target-url not a url"),
    ] {
        let mut a = args.to_vec();
        a.extend(bad);
        let o = mmci(&a, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
        assert_eq!(o.status.code(), Some(2));
        assert!(out(&o).1.contains(want), "{}", out(&o).1);
    }
}

#[tokio::test]
async fn rate_limits_are_waited_out_within_bounds() {
    let (server, fake, _, root, results) = posting(6, true).await;
    let r = results.display().to_string();
    let args = send_state(&r, "success");
    fake.0.lock().unwrap().throttle = 2;
    let t = std::time::Instant::now();
    let o = mmci(&args, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    // Two Retry-After: 1 waits, then both checks.
    assert!(t.elapsed() >= std::time::Duration::from_secs(2));
    assert_eq!(server.received_requests().await.unwrap().len(), 4);
    assert_eq!(fake.0.lock().unwrap().checks.len(), 2);
    assert!(out(&o).1.contains("patchwork rate limit (429), waiting"));
    // Throttled for good: gives up once --rate-limit-wait is spent.
    fake.0.lock().unwrap().throttle = 1000;
    let mut a = args.to_vec();
    a.extend(["--rate-limit-wait", "2"]);
    let o = mmci(&a, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(9), "{err}");
    assert!(
        err.contains("still rate limited (HTTP 429) after 3 tries and 2 s of waiting"),
        "{err}"
    );
}

/// GitHub's dispatch endpoint, recording each dispatch.
async fn github() -> MockServer {
    let gh = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/mmci/linux/dispatches"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&gh)
        .await;
    gh
}

async fn dispatched(gh: &MockServer) -> Vec<u64> {
    gh.received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(
                r.headers["authorization"],
                format!("Bearer {GH_TOKEN}").as_str()
            );
            let v: Value = r.body_json().unwrap();
            assert_eq!(v["event_type"], "mmci-series");
            v["client_payload"]["patchwork"]["series"].as_u64().unwrap()
        })
        .collect()
}

#[tokio::test]
async fn watch_dispatches_each_series_once_across_restarts() {
    let (server, fake) = patchwork().await;
    let gh = github().await;
    let base = server.uri();
    {
        let mut pw = fake.0.lock().unwrap();
        for (n, tag, to) in [
            (1, "a", None),
            (2, "b", None),
            (3, "c", Some("drivers/block/loop.c")), // not under mm/
            (4, "a", None),                         // a resend of series 1: same content
            (5, "e", None),
            (6, "f", None),
            (7, "g", None),
        ] {
            pw.series.push(pw_series(n, tag, to));
        }
        // First batch: series 1-4 completed, plus events the query must
        // leave out (another category, another project).
        pw.events = vec![
            event(
                10,
                "2026-11-30T10:00:00",
                "linux-mm",
                "series-completed",
                1,
                &base,
            ),
            event(
                11,
                "2026-11-30T10:05:00",
                "linux-mm",
                "series-created",
                2,
                &base,
            ),
            event(
                12,
                "2026-11-30T10:06:00",
                "linux-mm",
                "series-completed",
                2,
                &base,
            ),
            event(
                13,
                "2026-11-30T10:07:00",
                "netdevbpf",
                "series-completed",
                5,
                &base,
            ),
            event(
                14,
                "2026-11-30T10:08:00",
                "linux-mm",
                "series-completed",
                3,
                &base,
            ),
            event(
                15,
                "2026-11-30T10:09:00.250000",
                "linux-mm",
                "series-completed",
                4,
                &base,
            ),
        ];
    }
    let root = work();
    let state = root.path().join("state.json");
    let st = state.display().to_string();
    let gh_uri = gh.uri();
    let args = [
        "watch",
        "--patchwork",
        &base,
        "--project",
        "linux-mm",
        "--pw-since",
        "2026-11-30T00:00:00",
        "--state",
        &st,
        "--dispatch",
        "mmci/linux",
        "--api",
        &gh_uri,
    ];
    let env = [("GITHUB_TOKEN", GH_TOKEN)];
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_no_secret(&o);
    assert_eq!(dispatched(&gh).await, [1, 2], "{}", out(&o).0);
    let cursor = |state: &Path| -> Value {
        let v: Value = serde_json::from_slice(&std::fs::read(state).unwrap()).unwrap();
        v["patchwork"][format!("{base} linux-mm")].clone()
    };
    assert_eq!(
        cursor(&state),
        json!({"since": "2026-11-30T10:09:00.250000", "seen": [15]})
    );
    let pages = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/api/1.3/events/")
        .count();
    assert_eq!(pages, 2, "4 matching events, 2 a page");

    // A restart with nothing new: no dispatch, the cursor asked for.
    server.reset().await;
    Mock::given(any())
        .respond_with(fake.clone())
        .mount(&server)
        .await;
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_eq!(dispatched(&gh).await, [1, 2]);
    let asked: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/api/1.3/events/")
        .map(|r| {
            r.url
                .query_pairs()
                .find(|(k, _)| k == "since")
                .unwrap()
                .1
                .into_owned()
        })
        .collect();
    assert_eq!(asked, ["2026-11-30T10:09:00.250000"]);

    // More events, one at the cursor's very date: each new series once.
    {
        let mut pw = fake.0.lock().unwrap();
        pw.events.push(event(
            16,
            "2026-11-30T10:09:00.250000",
            "linux-mm",
            "series-completed",
            5,
            &base,
        ));
        pw.events.push(event(
            17,
            "2026-11-30T11:00:00",
            "linux-mm",
            "series-completed",
            6,
            &base,
        ));
        pw.events.push(event(
            18,
            "2026-11-30T11:30:00",
            "linux-mm",
            "series-completed",
            7,
            &base,
        ));
        pw.events.push(event(
            19,
            "2026-11-30T11:31:00",
            "linux-mm",
            "series-completed",
            6,
            &base,
        ));
    }
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_eq!(dispatched(&gh).await, [1, 2, 5, 6, 7], "{}", out(&o).0);
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success());
    assert_eq!(dispatched(&gh).await, [1, 2, 5, 6, 7]);
    assert_eq!(
        cursor(&state),
        json!({"since": "2026-11-30T11:31:00", "seen": [19]})
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(v["series"].as_object().unwrap().len(), 5);
    let (all, ours) = {
        let pw = fake.0.lock().unwrap();
        let ours = pw
            .events
            .iter()
            .filter(|e| {
                e["category"] == "series-completed" && e["project"]["link_name"] == "linux-mm"
            })
            .count();
        (pw.events.len(), ours)
    };
    println!(
        "watch: {all} events served ({ours} series-completed in linux-mm), {} dispatches, none repeated over 4 passes",
        dispatched(&gh).await.len()
    );

    // A dry run records nothing and prints the dispatch it would send.
    let dry_state = root.path().join("dry.json");
    let mut dry = args.to_vec();
    let ds = dry_state.display().to_string();
    dry[8] = &ds;
    dry.push("--dry-run");
    let o = mmci(&dry, &[], root.path()).await;
    let (so, se) = out(&o);
    assert!(o.status.success(), "{se}");
    assert_eq!(so.matches("# dry run: POST").count(), 5, "{so}");
    assert!(so.contains("\"patchwork\": {"), "{so}");
    assert!(!dry_state.exists());
    assert_eq!(dispatched(&gh).await.len(), 5);

    // --run: the command a pass would run, from patchwork by series id.
    let o = mmci(
        &[
            "watch",
            "--patchwork",
            &base,
            "--project",
            "linux-mm",
            "--pw-since",
            "2026-11-30T11:00:00",
            "--state",
            &ds,
            "--run",
            "--results",
            "/r",
            "--dry-run",
        ],
        &[],
        root.path(),
    )
    .await;
    let (so, se) = out(&o);
    assert!(o.status.success(), "{se}");
    let lines: Vec<&str> = so.lines().collect();
    assert_eq!(lines.len(), 2, "{so}");
    assert!(
        lines[0].starts_with("# dry run: ")
            && lines[0].contains(&format!(
                " run --patchwork {base} --pw-series 6 --results /r/"
            )),
        "{so}"
    );
    assert!(lines[1].contains("--pw-series 7 "), "{so}");
}

/// A series-completed event whose series cannot be fetched (here: not on
/// the server, 404) does not stop the pass: the next event's series is
/// dispatched, the failed one is recorded in the state with its attempts,
/// and asked for again on the next pass, where it is handled once it can
/// be had. Before, the pass ended with the error at that event, every poll.
#[tokio::test]
async fn watch_records_a_series_it_cannot_fetch_and_tries_again() {
    let (server, fake) = patchwork().await;
    let gh = github().await;
    let base = server.uri();
    {
        let mut pw = fake.0.lock().unwrap();
        pw.series.push(pw_series(2, "b", None));
        pw.events = vec![
            event(
                10,
                "2026-11-30T10:00:00",
                "linux-mm",
                "series-completed",
                1,
                &base,
            ),
            event(
                11,
                "2026-11-30T10:01:00",
                "linux-mm",
                "series-completed",
                2,
                &base,
            ),
        ];
    }
    let root = work();
    let state = root.path().join("state.json");
    let st = state.display().to_string();
    let gh_uri = gh.uri();
    let args = [
        "watch",
        "--patchwork",
        &base,
        "--project",
        "linux-mm",
        "--pw-since",
        "2026-11-30T00:00:00",
        "--state",
        &st,
        "--dispatch",
        "mmci/linux",
        "--api",
        &gh_uri,
    ];
    let env = [("GITHUB_TOKEN", GH_TOKEN)];
    let failed = || -> Value {
        let v: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
        v["failed"].clone()
    };
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_eq!(dispatched(&gh).await, [2], "{}", out(&o).0);
    let key = format!("patchwork {base} linux-mm 1");
    assert_eq!(failed()[&key]["attempts"], 1, "{}", failed());
    assert!(
        failed()[&key]["error"]
            .as_str()
            .unwrap()
            .contains("HTTP 404"),
        "{}",
        failed()
    );
    // Still missing: a second attempt.
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_eq!(failed()[&key]["attempts"], 2);
    // It appears: handled once, and forgotten as a failure.
    fake.0.lock().unwrap().series.push(pw_series(1, "a", None));
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_eq!(dispatched(&gh).await, [2, 1], "{}", out(&o).0);
    assert_eq!(failed(), Value::Null);
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success());
    assert_eq!(dispatched(&gh).await, [2, 1]);
}
