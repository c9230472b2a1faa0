//! A screenshot of a rendered HTML report with headless Chromium
//! (Debian's `chromium`), so that tests and people can see the page as a
//! browser draws it. The browser runs in its own process group with a
//! timeout, without network services, in a throwaway profile.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::host::process::GroupChild;

/// The arguments for a screenshot of `html` into `png`: no sandbox (we are
/// root in CI), no GPU, and none of the background fetches a first start
/// makes (this machine has no network beyond package registries).
pub fn chromium_args(html: &Path, png: &Path, profile: &Path, size: (u32, u32)) -> Vec<String> {
    vec![
        "--headless".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        format!("--user-data-dir={}", profile.display()),
        format!("--screenshot={}", png.display()),
        format!("--window-size={},{}", size.0, size.1),
        format!("file://{}", html.display()),
    ]
}

/// Takes the screenshot; the error says what went wrong, with the end of
/// Chromium's output.
pub async fn screenshot(
    chromium: &Path,
    html: &Path,
    png: &Path,
    size: (u32, u32),
    timeout: Duration,
) -> Result<(), String> {
    let profile = tempfile::tempdir().map_err(|e| format!("profile dir: {e}"))?;
    let log_path: PathBuf = profile.path().join("chromium.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("log: {e}"))?;
    let mut cmd = tokio::process::Command::new(chromium);
    cmd.args(chromium_args(html, png, &profile.path().join("p"), size))
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().map_err(|e| format!("log: {e}"))?)
        .stderr(log);
    let mut child =
        GroupChild::spawn(&mut cmd).map_err(|e| format!("{}: {e}", chromium.display()))?;
    let done = child
        .wait_timeout(timeout, Duration::from_secs(2))
        .await
        .map_err(|e| format!("waiting for chromium: {e}"))?;
    let tail = || {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    };
    if done.timed_out {
        return Err(format!("chromium took over {timeout:?}: {}", tail()));
    }
    if !done.status.success() || !png.exists() {
        return Err(format!(
            "chromium {}: no screenshot: {}",
            done.status,
            tail()
        ));
    }
    Ok(())
}
