//! What the patchwork tests (patchwork.rs against a real Patchwork,
//! patchwork_faults.rs against a fake one) share: a work dir of their own,
//! `mmci` run with a clean environment, its output as text with no token
//! in it, and GitHub's dispatch endpoint that `watch --dispatch` calls.
//! Their results dirs are [`super::results::write_recorded`].

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The GitHub token `watch --dispatch` is given.
pub const GH_TOKEN: &str = "ghp_watchDispatchToken0123456789";

/// A temp dir in `$MMCI_TEST_WORK_DIR`, else in cargo's target tmpdir.
pub fn work() -> tempfile::TempDir {
    let root = std::env::var_os(super::WORK_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("mmci-test-work"));
    std::fs::create_dir_all(&root).unwrap();
    tempfile::tempdir_in(root).unwrap()
}

/// Runs `mmci ARGS` with a clean environment plus `env`, logging
/// everything every crate logs, its cache in `work`.
pub async fn mmci(args: &[&str], env: &[(&str, &str)], work: &Path) -> Output {
    let mut cmd = super::bin();
    cmd.arg("--work-dir").arg(work.join("cache")).args(args);
    for k in ["MMCI_PATCHWORK_TOKEN", "GITHUB_TOKEN", "GITHUB_API_URL"] {
        cmd.env_remove(k);
    }
    cmd.env("MMCI_LOG", "trace").env("RUST_LOG", "trace");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.kill_on_drop(true).output().await.unwrap()
}

/// Standard output and error as text.
pub fn out(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// None of `secrets` in the output.
pub fn assert_no_secret(o: &Output, secrets: &[&str]) {
    let (so, se) = out(o);
    for secret in secrets {
        assert!(
            !so.contains(secret) && !se.contains(secret),
            "a token leaked:\n{so}\n{se}"
        );
    }
}

/// GitHub's dispatch endpoint for mmci/linux (GitHub is not what these
/// tests test), recording each dispatch.
pub async fn github() -> MockServer {
    let gh = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/mmci/linux/dispatches"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&gh)
        .await;
    gh
}

/// The patchwork series ids dispatched, in order; each dispatch an
/// `mmci-series` event sent with [`GH_TOKEN`].
pub async fn dispatched(gh: &MockServer) -> Vec<u64> {
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
