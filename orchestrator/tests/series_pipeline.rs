//! The patch pipeline against loopback servers speaking HTTP/1.1 as lore and
//! the GitHub REST API do: fetch a thread, pick the latest revision, apply
//! it with `git am -3` to the bundled tree, build it (incrementally, in the
//! checkout shared with the base), and find it in the cache the second time.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mmci::arch::Arch;
use mmci::host::paths::WorkDir;
use mmci::kernel::build::{self, BuildError, BuildRequest};
use mmci::kernel::series::fetch::{FetchError, Fetcher};
use mmci::kernel::series::{self, SeriesError, SeriesSource};
use mmci::kernel::tree;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
}

type Route = Arc<dyn Fn(&str, usize) -> (u16, Vec<u8>) + Send + Sync>;

/// A minimal HTTP/1.1 server on 127.0.0.1: `route(path, nth request)`
/// answers; every request is recorded.
async fn serve(route: Route) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf).into_owned();
            let mut lines = head.split("\r\n");
            let path = lines
                .next()
                .unwrap_or("")
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_string();
            let headers = lines
                .filter_map(|l| l.split_once(": "))
                .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
                .collect();
            let nth = {
                let mut s = log.lock().unwrap();
                s.push(Seen {
                    path: path.clone(),
                    headers,
                });
                s.len()
            };
            let (status, body) = route(&path, nth);
            let reason = match status {
                200 => "OK",
                404 => "Not Found",
                503 => "Service Unavailable",
                _ => "Status",
            };
            let head = format!(
                "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(&body).await;
            let _ = sock.shutdown().await;
        }
    });
    (base, seen)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn bundled_mbox() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    std::fs::read_to_string(path).unwrap()
}

/// The mails of the bundled mbox: [cover, patch 1, patch 2].
fn bundled_mails() -> Vec<String> {
    bundled_mbox()
        .split("\nFrom ")
        .enumerate()
        .map(|(i, m)| {
            if i == 0 {
                m.to_string()
            } else {
                format!("From {m}")
            }
        })
        .map(|m| {
            if m.ends_with('\n') {
                m
            } else {
                format!("{m}\n")
            }
        })
        .collect()
}

/// A one-patch series (patch 1: touches only mm/vmscan.c) in two revisions,
/// v1 as an RFC and v2 with a changed commit message, in one thread.
fn two_revision_thread() -> String {
    let mails = bundled_mails();
    let cover = &mails[0];
    let patch = &mails[1];
    let v1_cover = cover
        .replace("[PATCH v1 0/2]", "[RFC PATCH 0/1]")
        .replace("Message-ID: <cover.", "Message-ID: <v1cover.");
    let v1_patch = patch
        .replace("[PATCH v1 1/2]", "[RFC PATCH 1/1]")
        .replace("Message-ID: <5d4fd0b", "Message-ID: <v1-5d4fd0b");
    let v2_cover = cover.replace("[PATCH v1 0/2]", "[PATCH v2 0/1]").replace(
        "The classic LRU path",
        "v2: drop the RFC tag, reword.\n\nThe classic LRU path",
    );
    let v2_patch = patch.replace("[PATCH v1 1/2]", "[PATCH v2 1/1]").replace(
        "Signed-off-by:",
        "Link: https://example.org/v1\nSigned-off-by:",
    );
    [v1_cover, v1_patch, v2_cover, v2_patch].concat()
}

fn lore_route(thread: Vec<u8>) -> Route {
    Arc::new(move |path: &str, _| {
        if path.starts_with("/all/") && path.ends_with("/t.mbox.gz") {
            (200, gzip(&thread))
        } else {
            (404, b"not found".to_vec())
        }
    })
}

fn quick_fetcher() -> Fetcher {
    Fetcher {
        attempts: 3,
        backoff: Duration::from_millis(50),
        timeout: Duration::from_secs(20),
    }
}

fn store() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test]
async fn lore_thread_latest_revision_applies_builds_and_caches() {
    let (base, seen) = serve(lore_route(two_revision_thread().into_bytes())).await;
    let source = SeriesSource::Lore {
        message_id: "cover.1796033954.git.mmci-dev@example.org".into(),
        base_url: base,
    };
    let store = store();
    let series = series::load(&source, &quick_fetcher(), store.path())
        .await
        .unwrap();
    assert_eq!((series.version, series.total), (2, 1));
    assert_eq!(series.versions_seen, [1, 2]);
    assert!(series
        .cover
        .as_ref()
        .unwrap()
        .subject
        .starts_with("[PATCH v2 0/1]"));
    assert_eq!(
        seen.lock().unwrap()[0].path,
        "/all/cover.1796033954.git.mmci-dev@example.org/t.mbox.gz"
    );
    assert!(
        store.path().read_dir().unwrap().count() == 1,
        "fetched thread kept"
    );

    let work = WorkDir::resolve(None);
    let tree = tree::import_tarball(Path::new(tree::BUNDLED_TARBALL), &work)
        .await
        .unwrap();
    assert_eq!(series.base_commit.as_deref(), Some(tree.commit.as_str()));
    let req = BuildRequest {
        arch: Arch::X86_64,
        fragments: build::default_fragments(Arch::X86_64),
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let built = build::build_kernel(&tree, Some(&series), &req, &work)
        .await
        .unwrap();
    assert!(built.image.is_file());
    assert_eq!(built.series_hash.as_deref(), Some(series.hash.as_str()));
    assert_ne!(
        built.head_commit, tree.commit,
        "the patch is committed on top of the base"
    );
    let log = std::fs::read_to_string(built.dir.join("build.log")).unwrap();
    assert!(
        log.contains("Applying: mm/vmscan: fix missing NR_ISOLATED counter update"),
        "{log}"
    );

    // Same key again: straight from the cache, no make, well under a second.
    let log_before = std::fs::metadata(built.dir.join("build.log"))
        .unwrap()
        .modified()
        .unwrap();
    let t = Instant::now();
    let again = build::build_kernel(&tree, Some(&series), &req, &work)
        .await
        .unwrap();
    assert!(again.cached);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(again.image, built.image);
    let log_after = std::fs::metadata(built.dir.join("build.log"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(log_before, log_after, "make did not run");
}

/// Patch 1 with its context and blob ids broken: neither a plain nor a
/// 3-way apply can place it.
fn broken_series_mbox() -> String {
    let patch = &bundled_mails()[1];
    let broken = patch
        .replace("[PATCH v1 1/2]", "[PATCH]")
        .replace("index deeb431..", "index 0123456..")
        .replace(
            " \tint scanned;\n \tint reclaimed;\n",
            " \tint scanned_elsewhere;\n \tint reclaimed;\n",
        );
    assert_ne!(&broken, patch);
    assert!(
        broken.contains("scanned_elsewhere"),
        "the context line to break is in the patch"
    );
    broken
}

#[tokio::test]
async fn series_that_does_not_apply_names_patch_and_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mbox = tmp.path().join("broken.mbox");
    std::fs::write(&mbox, broken_series_mbox()).unwrap();
    let series = series::load(&SeriesSource::Mbox(mbox), &quick_fetcher(), tmp.path())
        .await
        .unwrap();
    let work = WorkDir::resolve(None);
    let tree = tree::import_tarball(Path::new(tree::BUNDLED_TARBALL), &work)
        .await
        .unwrap();
    let req = BuildRequest {
        arch: Arch::X86_64,
        fragments: build::default_fragments(Arch::X86_64),
        jobs: 2,
    };
    let err = build::build_kernel(&tree, Some(&series), &req, &work)
        .await
        .unwrap_err();
    let BuildError::Apply(failure) = &err else {
        panic!("{err}")
    };
    assert_eq!(failure.patch, Some(1));
    assert_eq!(
        failure.title.as_deref(),
        Some("mm/vmscan: fix missing NR_ISOLATED counter update in MGLRU reclaim path")
    );
    // The hunk that does not fit, from git's own words.
    assert_eq!(failure.places, ["mm/vmscan.c:4584"], "{failure:?}");
    assert!(
        err.to_string()
            .starts_with("patch 1/1 (mm/vmscan: fix missing NR_ISOLATED"),
        "{err}"
    );
    // Nothing was cached for it, and the checkout is back at the base.
    let checkout = work.checkouts().join(format!("{}-x86_64", tree.name));
    assert_eq!(tree::head(&checkout).await.unwrap(), tree.commit);
    let am_dir = std::process::Command::new("git")
        .arg("-C")
        .arg(&checkout)
        .args(["rev-parse", "--git-path", "rebase-apply"])
        .output()
        .unwrap();
    let am_dir = checkout.join(String::from_utf8_lossy(&am_dir.stdout).trim());
    assert!(
        !am_dir.exists(),
        "git am state left in {}",
        am_dir.display()
    );
}

#[tokio::test]
async fn thread_with_a_missing_patch_is_refused() {
    let mails = bundled_mails();
    let thread = [
        mails[0].replace("[PATCH v1 0/2]", "[PATCH v2 0/2]"),
        mails[2].replace("[PATCH v1 2/2]", "[PATCH v2 2/2]"),
    ]
    .concat();
    let (base, _) = serve(lore_route(thread.into_bytes())).await;
    let source = SeriesSource::Lore {
        message_id: "x@example.org".into(),
        base_url: base,
    };
    let err = series::load(&source, &quick_fetcher(), store().path())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "<x@example.org>: v2 is incomplete: patch(es) 1 of 2 missing from the thread; there is no complete older revision in it"
    );
}

#[tokio::test]
async fn a_message_that_is_not_a_patch_is_refused() {
    let thread = "From x Mon Sep 17 00:00:00 2001\nFrom: A <a@example.org>\nSubject: Re: [PATCH] mm: something\nMessage-ID: <r@example.org>\n\nLooks fine to me.\n";
    let (base, _) = serve(lore_route(thread.as_bytes().to_vec())).await;
    let source = SeriesSource::Lore {
        message_id: "r@example.org".into(),
        base_url: base,
    };
    let err = series::load(&source, &quick_fetcher(), store().path())
        .await
        .unwrap_err();
    assert!(matches!(err, SeriesError::NoPatches { .. }), "{err}");
}

#[tokio::test]
async fn unreachable_lore_is_retried_then_reported_and_nothing_is_kept() {
    // A port nobody listens on: bind, learn the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let source = SeriesSource::Lore {
        message_id: "x@example.org".into(),
        base_url: format!("http://127.0.0.1:{port}"),
    };
    let store = store();
    let t = Instant::now();
    let err = series::load(&source, &quick_fetcher(), store.path())
        .await
        .unwrap_err();
    let SeriesError::Fetch(FetchError::Unreachable { attempts, .. }) = &err else {
        panic!("{err}")
    };
    assert_eq!(*attempts, 3);
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "backoff 50 + 100 ms"
    );
    assert!(
        err.to_string().contains("unreachable after 3 attempts"),
        "{err}"
    );
    assert_eq!(
        store.path().read_dir().unwrap().count(),
        0,
        "no partial thread kept"
    );
}

#[tokio::test]
async fn server_errors_are_retried() {
    let thread = gzip(bundled_mbox().as_bytes());
    let (base, seen) = serve(Arc::new(move |_: &str, nth| {
        if nth < 3 {
            (503, vec![])
        } else {
            (200, thread.clone())
        }
    }))
    .await;
    let source = SeriesSource::Lore {
        message_id: "x@example.org".into(),
        base_url: base,
    };
    let series = series::load(&source, &quick_fetcher(), store().path())
        .await
        .unwrap();
    assert_eq!(series.total, 2);
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn corrupt_gzip_is_an_error() {
    let (base, _) = serve(Arc::new(|_: &str, _| (200, b"this is not gzip".to_vec()))).await;
    let source = SeriesSource::Lore {
        message_id: "x@example.org".into(),
        base_url: base,
    };
    let store = store();
    let err = series::load(&source, &quick_fetcher(), store.path())
        .await
        .unwrap_err();
    assert!(
        matches!(err, SeriesError::Fetch(FetchError::CorruptGzip { .. })),
        "{err}"
    );
    assert_eq!(store.path().read_dir().unwrap().count(), 0);
}

/// GitHub's `pulls/5` of mmci/linux as the patch media type: the bundled
/// series' two patches.
fn pull_request_route() -> Route {
    let mbox = bundled_mails()[1..].concat();
    Arc::new(move |path: &str, _| {
        if path == "/api/v3/repos/mmci/linux/pulls/5" {
            (200, mbox.clone().into_bytes())
        } else {
            (404, vec![])
        }
    })
}

#[tokio::test]
async fn github_pull_request_patches() {
    let (base, seen) = serve(pull_request_route()).await;
    let source = SeriesSource::GitHub {
        api: format!("{base}/api/v3"),
        repo: "mmci/linux".into(),
        number: 5,
        token: Some("test-token".into()),
    };
    let series = series::load(&source, &quick_fetcher(), store().path())
        .await
        .unwrap();
    assert_eq!(series.total, 2);
    let req = seen.lock().unwrap()[0].clone();
    let header = |k: &str| {
        req.headers
            .iter()
            .find(|(h, _)| h == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        header("accept").as_deref(),
        Some("application/vnd.github.patch")
    );
    assert_eq!(
        header("authorization").as_deref(),
        Some("Bearer test-token")
    );
}

/// `mmci run` with a series named on the command line: the smoke matrix on
/// base and patched, the series fetched from the loopback server.
async fn run_binary_with(
    series_args: &[String],
    token: Option<&str>,
) -> (std::process::Output, std::path::PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mmci"));
    cmd.arg("run")
        .arg("--matrix")
        .arg(repo.join("matrix/smoke.yaml"))
        .args(series_args)
        .args(["--accel", "tcg", "--results"])
        .arg(&results)
        .env_remove("GITHUB_TOKEN");
    if let Some(t) = token {
        cmd.env("GITHUB_TOKEN", t);
    }
    let out = tokio::time::timeout(Duration::from_secs(30 * 60), cmd.output())
        .await
        .expect("mmci run finishes")
        .unwrap();
    (out, results, tmp)
}

async fn bundled_series_hash() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    series::load(&SeriesSource::Mbox(path), &quick_fetcher(), store().path())
        .await
        .unwrap()
        .hash
}

fn check_base_and_patched(out: &std::process::Output, results: &Path, hash: &str, describes: &str) {
    assert_eq!(
        out.status.code(),
        Some(mmci::error::exit::OK),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = mmci::results::dir::read_manifest(results).unwrap().unwrap();
    let kernels: Vec<(&str, Option<&str>)> = manifest
        .kernels
        .iter()
        .map(|k| (k.variant.as_str(), k.kernel.series_hash.as_deref()))
        .collect();
    assert_eq!(kernels, [("base", None), ("patched", Some(hash))]);
    assert!(
        manifest.kernels[1].description.contains(describes),
        "{}",
        manifest.kernels[1].description
    );
    assert_eq!(
        mmci::results::dir::all_runs(results).len(),
        2,
        "one cell x two kernels"
    );
}

#[tokio::test]
async fn mmci_run_tests_a_lore_thread_against_its_base() {
    let (base, seen) = serve(lore_route(bundled_mbox().into_bytes())).await;
    let msgid = "cover.1796033954.git.mmci-dev@example.org";
    let (out, results, _tmp) = run_binary_with(
        &[
            "--lore".into(),
            format!("<{msgid}>"),
            "--lore-url".into(),
            base,
        ],
        None,
    )
    .await;
    check_base_and_patched(
        &out,
        &results,
        &bundled_series_hash().await,
        &format!("lore {msgid}"),
    );
    assert_eq!(
        seen.lock().unwrap()[0].path,
        format!("/all/{msgid}/t.mbox.gz")
    );
}

#[tokio::test]
async fn mmci_run_tests_a_pull_request_against_its_base() {
    let (base, seen) = serve(pull_request_route()).await;
    let (out, results, _tmp) = run_binary_with(
        &[
            "--github-pr".into(),
            "mmci/linux#5".into(),
            "--github-api".into(),
            format!("{base}/api/v3"),
        ],
        Some("secret-test-token"),
    )
    .await;
    check_base_and_patched(
        &out,
        &results,
        &bundled_series_hash().await,
        "pull request mmci/linux#5",
    );
    let req = seen.lock().unwrap()[0].clone();
    assert!(req
        .headers
        .iter()
        .any(|(k, v)| k == "authorization" && v == "Bearer secret-test-token"));
    // The token reaches GitHub and nothing else: not the output, not the results.
    let everything = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(results.join("manifest.json")).unwrap()
    );
    assert!(!everything.contains("secret-test-token"));
}
