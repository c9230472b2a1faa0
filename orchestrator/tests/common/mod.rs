//! Helpers shared by the integration tests. Each test binary compiles
//! all of it and uses a part.
#![allow(dead_code)]

pub mod guest;
pub mod http;
pub mod mbox;
pub mod patchwork;
pub mod posting;
pub mod replay;
pub mod results;

use std::path::PathBuf;

use mmci::host::paths::WorkDir;
use mmci::kernel::KernelSource;

/// Names the work dir the integration tests share (see [`work_dir`]).
pub const WORK_DIR_ENV: &str = "MMCI_TEST_WORK_DIR";

/// The work dir the integration tests share: `MMCI_TEST_WORK_DIR`, else
/// `mmci-test` in the user's cache dir. The kernels and images the tests
/// need are built there once per machine, not once per test. Never the
/// user's own work dir (`MMCI_WORK_DIR`, `~/.cache/mmci`): a test must not
/// race the user's runs for its locks, or fill it with test kernels.
pub fn work_dir() -> WorkDir {
    let root = std::env::var_os(WORK_DIR_ENV)
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("mmci-test")))
        .expect("a cache dir (set HOME, or MMCI_TEST_WORK_DIR)");
    WorkDir::new(root)
}

/// `mmci`, the binary under test, as it is, in a process group that dies
/// with the test binary: a test killed, or one that panics while its mmci
/// builds or runs guests, leaves no mmci, make or QEMU behind (mmci's own
/// children die with it).
pub fn bin_blocking() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mmci"));
    mmci::host::process::die_with_this_process(&mut cmd).expect("a watchdog pipe");
    cmd
}

/// The same for tokio; dropped before it ends, it is killed.
pub fn bin() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::from(bin_blocking());
    cmd.kill_on_drop(true);
    cmd
}

/// `mmci` told to use the tests' [`work_dir`].
pub fn mmci() -> tokio::process::Command {
    let mut cmd = bin();
    cmd.env("MMCI_WORK_DIR", work_dir().root());
    cmd
}

/// The same as a blocking command.
pub fn mmci_blocking() -> std::process::Command {
    let mut cmd = bin_blocking();
    cmd.env("MMCI_WORK_DIR", work_dir().root());
    cmd
}

/// /proc entries of running QEMU processes whose command line mentions
/// `needle` (a test's own results or scratch path).
pub fn qemu_processes_mentioning(needle: &str) -> Vec<PathBuf> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd);
            cmd.contains("qemu-system") && cmd.contains(needle)
        })
        .map(|e| e.path())
        .collect()
}

/// The text of `file` in the bundled tree (imported into `work`).
pub async fn bundled_file(file: &str, work: &WorkDir) -> String {
    let tree = mmci::kernel::tree::import_tarball(&KernelSource::bundled().tarball, work)
        .await
        .unwrap();
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&tree.path)
        .args(["show", &format!("{}:{file}", tree.commit)])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The last three lines of `file` in the bundled tree (imported into
/// `work`), as a unified diff hunk's context lines, and the line number
/// of the first of them: a hunk there that adds lines at the end applies
/// to the bundled kernel.
pub async fn bundled_tail(file: &str, work: &WorkDir) -> (String, usize) {
    let text = bundled_file(file, work).await;
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    let context = lines[n - 3..].iter().map(|l| format!(" {l}\n")).collect();
    (context, n - 2)
}
