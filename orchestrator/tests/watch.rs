//! `mmci watch` through the binary: a local mbox, a maildir and a lore Atom
//! feed (a loopback public-inbox) as sources; new series touching mm/ are
//! dispatched once to a loopback GitHub (`POST /repos/{o}/{r}/dispatches`,
//! 204) or run here, deduplicated by series hash across restarts through
//! the state file.

mod common;

use std::path::Path;
use std::process::Output;

use common::http::{self, no_query};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_watchTestToken987654321";

/// GitHub's dispatch endpoint on `server`: 204.
async fn dispatches(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/repos/mm/ci/dispatches"))
        .and(no_query)
        .respond_with(ResponseTemplate::new(204))
        .mount(server)
        .await;
}

fn bundled_mbox() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox"),
    )
    .unwrap()
}

/// The bundled series moved to drivers/ (another thread, another hash).
fn drivers_series() -> String {
    bundled_mbox()
        .replace("a/mm/", "a/drivers/")
        .replace("b/mm/", "b/drivers/")
        .replace("a/include/", "a/drivers/include/")
        .replace("b/include/", "b/drivers/include/")
        .replace(".git.mmci-dev@example.org>", ".git.drivers@example.org>")
}

/// A v2 of the bundled series: new message-ids, a changed commit message.
fn v2_series() -> String {
    bundled_mbox()
        .replace("[PATCH v1 ", "[PATCH v2 ")
        .replace(
            ".git.mmci-dev@example.org>",
            ".v2.git.mmci-dev@example.org>",
        )
        .replace(
            "Signed-off-by:",
            "Link: https://example.org/v1\nSigned-off-by:",
        )
}

/// A reply on the thread and an incomplete series: neither is a series to test.
fn noise() -> String {
    "From x Mon Sep 17 00:00:00 2001\n\
     Message-ID: <reply-1@example.org>\n\
     In-Reply-To: <cover.1796033954.git.mmci-dev@example.org>\n\
     References: <cover.1796033954.git.mmci-dev@example.org>\n\
     From: Reviewer <r@example.org>\n\
     Subject: Re: [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation\n\n\
     Looks good.\n\n\
     From y Mon Sep 17 00:00:00 2001\n\
     Message-ID: <lonely-2-3@example.org>\n\
     In-Reply-To: <lonely-0@example.org>\n\
     References: <lonely-0@example.org>\n\
     From: Someone <s@example.org>\n\
     Subject: [PATCH 2/3] mm: part of something\n\n\
     msg\n---\ndiff --git a/mm/x.c b/mm/x.c\n"
        .to_string()
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

fn mmci(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = common::mmci_blocking();
    cmd.arg("watch").args(sending(args));
    cmd.env_remove("GITHUB_TOKEN").env_remove("GITHUB_API_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// `mmci watch` from an async test, without blocking its runtime.
async fn mmci_async(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = common::mmci();
    cmd.arg("watch").args(sending(args));
    cmd.env_remove("GITHUB_TOKEN").env_remove("GITHUB_API_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.unwrap()
}

/// `watch` over the mbox `mbox`, dispatching to mm/ci on `api`, its state
/// in `state`.
fn mbox_dispatch_args(mbox: &Path, api: &str, state: &Path) -> Vec<String> {
    [
        "--mbox",
        mbox.to_str().unwrap(),
        "--dispatch",
        "mm/ci",
        "--github-api",
        api,
        "--state",
        state.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test]
async fn mbox_series_on_mm_dispatched_once_across_restarts() {
    let server = MockServer::start().await;
    dispatches(&server).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let mbox = tmp.path().join("linux-mm.mbox");
    let state = tmp.path().join("state.json");
    std::fs::write(&mbox, [bundled_mbox(), noise(), drivers_series()].concat()).unwrap();
    let args = mbox_dispatch_args(&mbox, &api, &state);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("GITHUB_TOKEN", TOKEN)];
    let o = mmci_async(&args, &env).await;
    assert!(o.status.success(), "{}", out(&o));
    assert!(!out(&o).contains(TOKEN));
    {
        let s = http::seen(&server).await;
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].method.as_str(), s[0].path.as_str()),
            ("POST", "/repos/mm/ci/dispatches")
        );
        assert_eq!(s[0].auth(), format!("Bearer {TOKEN}"));
        assert_eq!(s[0].body["event_type"], "mmci-series");
        assert_eq!(
            s[0].body["client_payload"]["message_id"],
            "cover.1796033954.git.mmci-dev@example.org"
        );
        assert_eq!(s[0].body["client_payload"]["version"], 1);
    }
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation: dispatched to mm/ci\n"
    );
    let st: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(st["series"].as_object().unwrap().len(), 1);

    // A restart: nothing new, nothing sent.
    let o = mmci_async(&args, &env).await;
    assert!(o.status.success(), "{}", out(&o));
    assert_eq!(o.stdout, b"");
    assert_eq!(http::seen(&server).await.len(), 1);

    // v2 arrives (a resend of v1 too): only v2 is new.
    let mut text = std::fs::read_to_string(&mbox).unwrap();
    text.push_str(&v2_series());
    text.push_str(&bundled_mbox().replace(".git.mmci-dev@example.org>", ".resend@example.org>"));
    std::fs::write(&mbox, text).unwrap();
    let o = mmci_async(&args, &env).await;
    assert!(o.status.success(), "{}", out(&o));
    let s = http::seen(&server).await;
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[1].call(), "POST /repos/mm/ci/dispatches");
    assert_eq!(s[1].auth(), format!("Bearer {TOKEN}"));
    assert_eq!(s[1].body["client_payload"]["version"], 2);
    assert_eq!(
        s[1].body["client_payload"]["message_id"],
        "cover.1796033954.v2.git.mmci-dev@example.org"
    );
    // v1, dispatched by an earlier pass, is stale now: said, kept in the
    // state, and v2's dispatch has v1's series_key, the concurrency group
    // under which series.yml cancels v1's run if it is still going.
    assert_eq!(
        s[1].body["client_payload"]["series_key"],
        s[0].body["client_payload"]["series_key"]
    );
    assert_eq!(
        s[1].body["client_payload"]["series_key"]
            .as_str()
            .map(str::len),
        Some(16)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(
            "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation: stale, superseded by \
             v2 cover.1796033954.v2.git.mmci-dev@example.org (it was dispatched to mm/ci)"
        ),
        "{stdout}"
    );
    let st: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let by: Vec<&str> = st["series"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|h| h["superseded_by"].as_str())
        .collect();
    assert_eq!(by, ["v2 cover.1796033954.v2.git.mmci-dev@example.org"]);
    // The drivers/ series (another thread of the same title, never
    // dispatched) and v2 itself are not stale; a restart marks nothing more.
    let o = mmci_async(&args, &env).await;
    assert_eq!(o.stdout, b"", "{}", out(&o));
}

/// An older revision found with or after its newer one (a feed lists
/// newest first; a thread can come late) is never dispatched: in the same
/// pass it is left out, after it is said once and recorded as skipped.
#[tokio::test]
async fn an_older_revision_found_after_the_newer_one_is_not_dispatched() {
    let server = MockServer::start().await;
    dispatches(&server).await;
    let api = server.uri();
    let tmp = tempfile::tempdir().unwrap();
    let mbox = tmp.path().join("linux-mm.mbox");
    let state = tmp.path().join("state.json");
    let args = mbox_dispatch_args(&mbox, &api, &state);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("GITHUB_TOKEN", TOKEN)];
    // v2 listed before v1, both new: v2 alone.
    std::fs::write(&mbox, [v2_series(), bundled_mbox()].concat()).unwrap();
    let o = mmci_async(&args, &env).await;
    assert!(o.status.success(), "{}", out(&o));
    let s = http::seen(&server).await;
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].body["client_payload"]["version"], 2);
    // v1 alone, later (a late thread): skipped, said once, nothing sent.
    std::fs::write(&mbox, bundled_mbox()).unwrap();
    let o = mmci_async(&args, &env).await;
    assert!(o.status.success(), "{}", out(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation: skipped: superseded by \
         v2 cover.1796033954.v2.git.mmci-dev@example.org (handled before)\n"
    );
    assert_eq!(http::seen(&server).await.len(), 1);
    let o = mmci_async(&args, &env).await;
    assert_eq!(o.stdout, b"", "{}", out(&o));
    assert_eq!(http::seen(&server).await.len(), 1);
}

#[tokio::test]
async fn lore_atom_feed_threads_fetched_and_dispatched() {
    let thread = bundled_mbox().into_bytes();
    let feed = r#"<?xml version="1.0" encoding="us-ascii"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>linux-mm</title><id>mailto:linux-mm@kvack.org</id>
<entry><title>Re: [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation</title><link href="LORE/linux-mm/reply-1@example.org/"/><id>urn:uuid:3</id></entry>
<entry><title>[PATCH v1 2/2] mm/vmscan: throttle MGLRU eviction when isolated folios pile up</title><link href="LORE/linux-mm/8f783e9802f469d5b1ef258e71206ed7caa662b1.1796033954.git.mmci-dev%40example.org/"/><id>urn:uuid:2</id></entry>
<entry><title>[PATCH v1 1/2] mm/vmscan: fix missing NR_ISOLATED counter update in MGLRU reclaim path</title><link href="LORE/linux-mm/5d4fd0b0625b9680253034873147ac1f2b3ff186.1796033954.git.mmci-dev%40example.org/"/><id>urn:uuid:1</id></entry>
</feed>"#;
    let server = MockServer::start().await;
    let url = server.uri();
    Mock::given(method("GET"))
        .and(path("/linux-mm/new.atom"))
        .and(no_query)
        .respond_with(ResponseTemplate::new(200).set_body_string(feed.replace("LORE", &url)))
        .mount(&server)
        .await;
    http::lore_thread()
        .respond_with(http::gzipped(&thread))
        .mount(&server)
        .await;
    dispatches(&server).await;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state.json");
    let feed_url = format!("{url}/linux-mm/new.atom");
    let args = [
        "--atom",
        &feed_url,
        "--lore-url",
        &url,
        "--dispatch",
        "mm/ci",
        "--github-api",
        &url,
        "--state",
        state.to_str().unwrap(),
    ]
    .map(str::to_string);
    let env = [("GITHUB_TOKEN", TOKEN)];
    // Each round reads the feed and fetches one thread for both patch
    // entries (the second is in the first's thread); the reply is not
    // fetched. The series is dispatched in the first round only.
    let feed_get = "GET /linux-mm/new.atom";
    let thread_get = "GET /all/8f783e9802f469d5b1ef258e71206ed7caa662b1.1796033954.git.mmci-dev@example.org/t.mbox.gz";
    let rounds = [
        vec![feed_get, thread_get, "POST /repos/mm/ci/dispatches"],
        vec![feed_get, thread_get],
    ];
    for round in 0..2 {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = mmci_async(&a, &env).await;
        assert!(o.status.success(), "{}", out(&o));
        assert_eq!(http::calls(&server).await, rounds[..=round].concat());
    }
    let dispatch = &http::seen(&server).await[2];
    assert_eq!(dispatch.auth(), format!("Bearer {TOKEN}"));
    assert_eq!(
        dispatch.body["client_payload"]["message_id"],
        "cover.1796033954.git.mmci-dev@example.org"
    );
}

#[test]
fn maildir_series_run_here_once() {
    let tmp = tempfile::tempdir().unwrap();
    let maildir = tmp.path().join("Maildir");
    std::fs::create_dir_all(maildir.join("cur")).unwrap();
    std::fs::create_dir_all(maildir.join("new")).unwrap();
    for (i, m) in bundled_mbox().split("\nFrom ").enumerate() {
        let m = if i == 0 {
            m.to_string()
        } else {
            format!("From {m}")
        };
        // Maildir files carry no mbox From_ line.
        let m = m.split_once('\n').unwrap().1;
        std::fs::write(maildir.join("new").join(format!("{i}.mmci:2,")), m).unwrap();
    }
    let state = tmp.path().join("state.json");
    let results = tmp.path().join("results");
    let base = [
        "--maildir",
        maildir.to_str().unwrap(),
        "--run",
        "--results",
        results.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        // A kernel image that does not exist: `mmci run` refuses it at
        // once (exit 2), so the test runs no guest but sees the real call.
        "--run-arg=--kernel=/nonexistent/bzImage",
    ];
    let mut dry = base.to_vec();
    dry.push("--dry-run");
    let o = mmci(&dry, &[]);
    assert!(o.status.success(), "{}", out(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.starts_with("# dry run: "), "{text}");
    assert!(text.contains(" run --series "), "{text}");
    assert!(
        text.contains(&format!("--results {}/", results.display())),
        "{text}"
    );
    assert!(
        text.trim_end().ends_with("--kernel=/nonexistent/bzImage"),
        "{text}"
    );
    assert!(!state.exists(), "a dry run recorded state");

    let o = mmci(&base, &[]);
    assert!(o.status.success(), "{}", out(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        stdout,
        "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation: ran: exit 2\n"
    );
    // The child's own error went to stderr: the image named.
    assert!(
        out(&o).contains("kernel image /nonexistent/bzImage not found"),
        "{}",
        out(&o)
    );
    // The series handed to `mmci run` is the one in the maildir.
    let stored: Vec<_> = std::fs::read_dir(tmp.path().join("state.series"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(stored.len(), 1);
    let mails = mmci::series::mails_from_mbox(&std::fs::read(&stored[0]).unwrap());
    let s = mmci::series::assemble(&mails, "stored").unwrap();
    assert_eq!((s.version, s.total), (1, 2));
    let o = mmci(&base, &[]);
    assert!(o.status.success());
    assert_eq!(o.stdout, b"", "a restart ran the series again");
}

#[test]
fn dispatch_without_token_fails_before_reading_the_list() {
    let tmp = tempfile::tempdir().unwrap();
    let o = mmci(
        &[
            "--mbox",
            "/nonexistent.mbox",
            "--dispatch",
            "mm/ci",
            "--state",
            tmp.path().join("s.json").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        out(&o).contains("mmci: error: no GitHub credentials: set $GITHUB_TOKEN"),
        "{}",
        out(&o)
    );
}

/// A feed of `entries` (title, message-id), links on `base`.
fn feed(base: &str, entries: &[(&str, String)]) -> String {
    let mut f = String::from(
        r#"<?xml version="1.0" encoding="us-ascii"?><feed xmlns="http://www.w3.org/2005/Atom"><title>linux-mm</title>"#,
    );
    for (i, (title, id)) in entries.iter().enumerate() {
        f.push_str(&format!(
            r#"<entry><title>{title}</title><link href="{base}/linux-mm/{}/"/><id>urn:uuid:{i}</id></entry>"#,
            id.replace('@', "%40")
        ));
    }
    f.push_str("</feed>");
    f
}

fn state_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// One entry whose thread cannot be had (not gzip, as a broken mirror
/// answers) does not stop the pass: the good series after it is
/// dispatched; the bad entry is recorded with its attempts, tried again on
/// each later pass, and given up after MAX_ATTEMPTS. Before, the whole pass
/// ended with exit 7 on every poll.
#[tokio::test]
async fn a_failing_entry_is_recorded_retried_and_never_stops_the_pass() {
    let server = MockServer::start().await;
    let url = server.uri();
    let bad = "bad-1@example.org";
    let good = "5d4fd0b0625b9680253034873147ac1f2b3ff186.1796033954.git.mmci-dev@example.org";
    let entries = [
        ("[PATCH] mm: broken thread", bad.to_string()),
        (
            "[PATCH v1 1/2] mm/vmscan: fix missing NR_ISOLATED counter update in MGLRU reclaim path",
            good.to_string(),
        ),
    ];
    Mock::given(method("GET"))
        .and(path("/linux-mm/new.atom"))
        .respond_with(ResponseTemplate::new(200).set_body_string(feed(&url, &entries)))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/all/{bad}/t.mbox.gz")))
        .respond_with(ResponseTemplate::new(200).set_body_string("not gzip"))
        .with_priority(1)
        .mount(&server)
        .await;
    http::lore_thread()
        .respond_with(http::gzipped(bundled_mbox().as_bytes()))
        .mount(&server)
        .await;
    dispatches(&server).await;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state.json");
    let feed_url = format!("{url}/linux-mm/new.atom");
    let args = [
        "--atom",
        &feed_url,
        "--lore-url",
        &url,
        "--dispatch",
        "mm/ci",
        "--github-api",
        &url,
        "--state",
        state.to_str().unwrap(),
    ];
    let env = [("GITHUB_TOKEN", TOKEN)];
    let bad_get = format!("GET /all/{bad}/t.mbox.gz");
    for pass in 1..=6u64 {
        let before = http::calls(&server).await.len();
        let o = mmci_async(&args, &env).await;
        assert!(o.status.success(), "pass {pass}: {}", out(&o));
        let calls = http::calls(&server).await[before..].to_vec();
        // Tried on passes 1 to 5 (MAX_ATTEMPTS), then given up.
        assert_eq!(
            calls.iter().filter(|c| **c == bad_get).count(),
            usize::from(pass <= 5),
            "pass {pass}: {calls:?}"
        );
        let dispatched = calls.iter().filter(|c| c.starts_with("POST")).count();
        assert_eq!(dispatched, usize::from(pass == 1), "pass {pass}: {calls:?}");
        let failure = &state_json(&state)["failed"][format!("lore {bad}")];
        assert_eq!(failure["attempts"], pass.min(5), "pass {pass}");
        assert!(
            failure["error"]
                .as_str()
                .unwrap()
                .contains("the thread is not valid gzip"),
            "{failure}"
        );
        if pass == 1 {
            assert!(
                out(&o).contains("tried again on a later pass"),
                "{}",
                out(&o)
            );
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation: dispatched to mm/ci\n"
            );
        }
    }
}

/// Feed entries whose thread does not hold them are fetched once each, and
/// at most MAX_ENTRIES_PER_PASS (100) threads are fetched in one pass: a
/// feed of 150,000 such entries took 150,000 requests.
#[tokio::test]
async fn one_pass_fetches_each_entry_once_and_at_most_a_hundred() {
    let server = MockServer::start().await;
    let url = server.uri();
    let mut entries: Vec<(&str, String)> = (0..130)
        .map(|i| ("[PATCH] mm: one of many", format!("many-{i}@example.org")))
        .collect();
    // The same entry twice.
    entries.push(("[PATCH] mm: one of many", "many-0@example.org".to_string()));
    Mock::given(method("GET"))
        .and(path("/linux-mm/new.atom"))
        .respond_with(ResponseTemplate::new(200).set_body_string(feed(&url, &entries)))
        .mount(&server)
        .await;
    // Every thread is the reply and the lonely patch: none holds its entry.
    http::lore_thread()
        .respond_with(http::gzipped(noise().as_bytes()))
        .mount(&server)
        .await;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state.json");
    let feed_url = format!("{url}/linux-mm/new.atom");
    let o = mmci_async(
        &[
            "--atom",
            &feed_url,
            "--lore-url",
            &url,
            "--run",
            "--dry-run",
            "--state",
            state.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", out(&o));
    let calls = http::calls(&server).await;
    let threads: Vec<&String> = calls
        .iter()
        .filter(|c| c.starts_with("GET /all/"))
        .collect();
    assert_eq!(threads.len(), 100, "{calls:?}");
    let distinct: std::collections::HashSet<&&String> = threads.iter().collect();
    assert_eq!(distinct.len(), 100);
    assert!(
        out(&o).contains("the rest are not fetched in this pass"),
        "{}",
        out(&o)
    );
}

/// A maildir file that cannot be read (here a FIFO, which would block the
/// watcher) is skipped and recorded; the series in the other files is run.
#[test]
fn a_bad_maildir_file_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let maildir = tmp.path().join("Maildir");
    std::fs::create_dir_all(maildir.join("new")).unwrap();
    for (i, m) in bundled_mbox().split("\nFrom ").enumerate() {
        let m = if i == 0 {
            m.to_string()
        } else {
            format!("From {m}")
        };
        let m = m.split_once('\n').unwrap().1;
        std::fs::write(maildir.join("new").join(format!("{i}.mmci:2,")), m).unwrap();
    }
    let fifo = maildir.join("new").join("0-fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads one NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let state = tmp.path().join("state.json");
    let o = mmci(
        &[
            "--maildir",
            maildir.to_str().unwrap(),
            "--run",
            "--results",
            tmp.path().join("results").to_str().unwrap(),
            "--state",
            state.to_str().unwrap(),
            "--run-arg=--kernel=/nonexistent/bzImage",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", out(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation: ran: exit 2\n"
    );
    let failure = &state_json(&state)["failed"][format!("maildir {}", fifo.display())];
    assert_eq!(failure["attempts"], 1, "{}", state_json(&state));
    assert!(
        failure["error"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{failure}"
    );
}
