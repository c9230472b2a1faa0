//! What a real patchwork will not do on demand, against a loopback
//! server (wiremock) that answers patchwork's REST API 1.3 as documented
//! (series and their mboxes, the events list, checks with token auth):
//! 429 with Retry-After while throttled, 503 while unavailable, a series
//! that is missing at first. Everything else is tested against a real
//! Patchwork in patchwork.rs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use common::posting::{dispatched, github, mmci, out, work, GH_TOKEN};
use serde_json::{json, Value};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const TOKEN: &str = "pw0123456789abcdefTokenSecret";
/// A valid token whose user may not add checks.
const WEAK_TOKEN: &str = "pwWeakUserTokenNoPermission42";

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
    /// Then this many with 503.
    unavailable: u32,
    /// The API versions served (none: 1.3 alone).
    versions: Vec<&'static str>,
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
        // The API index, never throttled: what the client reads first.
        let path = req.url.path().to_string();
        if let ["api", v] = path.trim_matches('/').split('/').collect::<Vec<_>>()[..] {
            let served = pw.versions.is_empty() && v == "1.3" || pw.versions.contains(&v);
            if !served {
                return detail(404, "Not found.");
            }
            let b = &pw.base;
            return ResponseTemplate::new(200).set_body_json(json!({
                "projects": format!("{b}/api/{v}/projects/"), "patches": format!("{b}/api/{v}/patches/"),
                "series": format!("{b}/api/{v}/series/"), "events": format!("{b}/api/{v}/events/"),
            }));
        }
        if pw.throttle > 0 {
            pw.throttle -= 1;
            return detail(
                429,
                "Request was throttled. Expected available in 1 second.",
            )
            .insert_header("Retry-After", pw.retry_after.as_str());
        }
        if pw.unavailable > 0 {
            pw.unavailable -= 1;
            return detail(503, "Service unavailable.");
        }
        let p = req.url.path().to_string();
        let seg: Vec<&str> = p.trim_matches('/').split('/').collect();
        let num = |s: &str| s.parse::<u64>().ok();
        match (req.method.as_str(), seg.as_slice()) {
            ("GET", ["api", _, "series", id]) => {
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
            ("GET", ["api", _, "events"]) => pw.events(req),
            ("GET", ["api", _, "patches"]) => {
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
            ("GET", ["api", _, "patches", id, "checks"]) => {
                let context = req
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "context")
                    .map(|(_, v)| v.into_owned());
                let list: Vec<Value> = pw
                    .checks
                    .iter()
                    .filter(|(p, c)| {
                        Some(*p) == num(id)
                            && context.as_ref().is_none_or(|x| c["context"] == x.as_str())
                    })
                    .map(|(_, c)| c.clone())
                    .collect();
                ResponseTemplate::new(200).set_body_json(Value::Array(list))
            }
            ("POST", ["api", _, "patches", id, "checks"]) => match num(id) {
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

/// No token of these tests in the output.
fn assert_no_secret(o: &Output) {
    common::posting::assert_no_secret(o, &[TOKEN, WEAK_TOKEN, "BadToken0000", GH_TOKEN]);
}

/// A results dir whose patched kernel carries the bundled-style series
/// `s` (as `--patchwork --pw-series` leaves it when `origin`), copied from
/// the recorded default matrix so that it has a verdict.
async fn results_dir(root: &Path, s: &PwSeries, fake: &Fake, origin: bool) -> PathBuf {
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
    common::results::write_recorded(&root.join("results"), &series, origin.then_some(&o))
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

#[tokio::test]
async fn rate_limits_are_waited_out_within_bounds() {
    let (server, fake, _, root, results) = posting(6, true).await;
    let r = results.display().to_string();
    let args = send_state(&r, "success");
    fake.0.lock().unwrap().throttle = 2;
    let t = std::time::Instant::now();
    let o = mmci(&args, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    // Two Retry-After: 1 waits, then each patch's checks read and its
    // check posted.
    assert!(t.elapsed() >= std::time::Duration::from_secs(2));
    // (and the API index first, never throttled).
    assert_eq!(server.received_requests().await.unwrap().len(), 7);
    assert_eq!(fake.0.lock().unwrap().checks.len(), 2);
    assert!(out(&o).1.contains("patchwork rate limit (429), waiting"));
    // Throttled for good: gives up once --rate-limit-wait is spent.
    fake.0.lock().unwrap().throttle = 1000;
    let mut a = send_state(&r, "fail").to_vec();
    a.extend(["--rate-limit-wait", "2"]);
    let o = mmci(&a, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(9), "{err}");
    assert!(
        err.contains("still rate limited (HTTP 429) after 3 tries and 2 s of waiting"),
        "{err}"
    );
}

/// An instance without API 1.3 (a patchwork before 3.1): the client reads
/// the index from 1.3 down and speaks the newest it serves, 1.2 here (what
/// kernel-patches-daemon speaks), then 1.1 (NIPA's).
#[tokio::test]
async fn the_api_version_is_the_newest_the_instance_serves() {
    for (versions, want) in [(vec!["1.2", "1.1"], "1.2"), (vec!["1.1"], "1.1")] {
        let (server, fake) = patchwork().await;
        {
            let mut pw = fake.0.lock().unwrap();
            pw.versions = versions.clone();
            pw.series.push(pw_series(7, "", None));
        }
        let (origin, _) =
            mmci::series::patchwork::fetch_series(&server.uri(), 7, Default::default())
                .await
                .unwrap();
        assert_eq!(origin.patches.len(), 2);
        let calls: Vec<String> = server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| format!("{} {}", r.method, r.url.path()))
            .collect();
        let mut expected = vec!["GET /api/1.3/".to_string()];
        if want == "1.1" {
            expected.push("GET /api/1.2/".into());
        }
        expected.extend([
            format!("GET /api/{want}/"),
            format!("GET /api/{want}/series/7/"),
            "GET /cover/700/mbox/".into(),
            "GET /series/7/mbox/".into(),
        ]);
        assert_eq!(calls, expected, "{versions:?}");
    }
}

/// 503s are retried with a backoff, up to the attempts; past them, the
/// error names the status and exits 9, and no check was half-posted.
#[tokio::test]
async fn unavailable_answers_are_retried_then_named() {
    let (_server, fake, _, root, results) = posting(8, true).await;
    let r = results.display().to_string();
    let args = send_state(&r, "warning");
    fake.0.lock().unwrap().unavailable = 2;
    let o = mmci(&args, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert!(out(&o).1.contains("patchwork server error, retrying"));
    assert_eq!(fake.0.lock().unwrap().checks.len(), 2);
    fake.0.lock().unwrap().unavailable = 1000;
    let a = send_state(&r, "fail");
    let o = mmci(&a, &[("MMCI_PATCHWORK_TOKEN", TOKEN)], root.path()).await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(9), "{err}");
    assert!(err.contains("HTTP 503: Service unavailable."), "{err}");
    assert_eq!(fake.0.lock().unwrap().checks.len(), 2);
    assert_no_secret(&o);
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
        "--github-api",
        &gh_uri,
        "--send",
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
