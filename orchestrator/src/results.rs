//! The results of guest runs on disk. Every file is written atomically
//! (temporary file + rename), before anything is printed, so an interrupted
//! mmci never leaves a half-written result that looks complete.

use std::io::Write;
use std::path::{Path, PathBuf};

use mmci_record::GuestJob;
use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::metrics::{MglruMetrics, NoioMetrics};
use crate::outcome::Classification;
use crate::vm::Accel;

/// Version of run.json's layout.
pub const RESULT_FORMAT: u32 = 1;

/// The kernel a run booted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelInfo {
    pub image: PathBuf,
    /// From the build, or from the guest's own uname when the image was given.
    pub release: String,
    pub tree: Option<String>,
    pub tree_commit: Option<String>,
    pub build_key: Option<String>,
    /// Hash of the series applied on the tree, if any.
    #[serde(default)]
    pub series_hash: Option<String>,
    /// The commit built (the tree's, or HEAD after `git am`).
    #[serde(default)]
    pub head_commit: Option<String>,
    /// The build ran in bubblewrap.
    #[serde(default)]
    pub build_sandboxed: Option<bool>,
    /// Compiler warnings of the build (see build::warnings).
    #[serde(default)]
    pub build_warnings: Vec<String>,
    /// The series applied, with its thread (cover letter, authors, lists):
    /// what `mmci post` replies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<crate::series::Series>,
}

/// Time spent, for the report and for `mmci bench`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub initramfs_ms: f64,
    pub qemu_ms: f64,
    pub first_record_ms: Option<f64>,
    /// Everything this run cost beyond QEMU's own lifetime.
    pub host_overhead_ms: f64,
    pub total_ms: f64,
}

/// One guest run: run.json in its directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub format: u32,
    pub mmci_version: String,
    pub id: String,
    pub started_unix: u64,
    pub classification: Classification,
    pub accel: Accel,
    /// Why this accelerator (e.g. the KVM probe's failure).
    pub accel_note: String,
    pub arch: Arch,
    pub vcpus: u32,
    pub memory_mb: u64,
    pub swap_mb: u64,
    pub kernel: KernelInfo,
    pub job: GuestJob,
    pub attempts: u32,
    pub qemu_exit: Option<String>,
    pub timed_out: bool,
    /// Lines on the record port that did not parse.
    pub bad_lines: Vec<String>,
    /// Scenario A's metrics.
    pub metrics: Option<MglruMetrics>,
    /// Scenario B's metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noio_metrics: Option<NoioMetrics>,
    /// Kernel splats on the console (WARNINGs, BUGs, lockdep, ...), whatever
    /// the outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub splats: Vec<crate::splat::Splat>,
    pub timing: Timing,
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Makes sure `dir` exists and is writable, before any work is done.
pub fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(".mmci-write-test");
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

pub fn write_run(dir: &Path, result: &RunResult) -> std::io::Result<PathBuf> {
    let path = dir.join("run.json");
    write_atomic(
        &path,
        &serde_json::to_vec_pretty(result).expect("serializable"),
    )?;
    Ok(path)
}

pub fn read_run(dir: &Path) -> std::io::Result<RunResult> {
    let text = std::fs::read_to_string(dir.join("run.json"))?;
    serde_json::from_str(&text).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("run.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn unwritable_dir_is_refused_up_front() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        std::fs::write(&file, b"").unwrap();
        assert!(prepare_dir(&file.join("results")).is_err());
        assert!(prepare_dir(&tmp.path().join("new/results")).is_ok());
    }
}
