//! The results of guest runs on disk. Every file is written atomically
//! (temporary file + rename), before anything is printed, so an interrupted
//! mmci never leaves a half-written result that looks complete.

use std::path::{Path, PathBuf};

use mmci_record::GuestJob;
use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::guest::vm::Accel;
use crate::host::fs::write_atomic;
use crate::results::outcome::Classification;
use crate::scenario::ScenarioMetrics;

/// Version of run.json's layout. 2: one `scenario_metrics` instead of
/// format 1's `metrics`, `noio_metrics` and `script` (still read, see
/// `scenario::metrics::on_disk`).
pub const RESULT_FORMAT: u32 = 2;

pub use crate::kernel::KernelInfo;

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
    /// What the run's scenario measured.
    #[serde(flatten, with = "crate::scenario::metrics::on_disk")]
    pub metrics: ScenarioMetrics,
    /// Scenario script: the image it ran in, with every package version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::guest::image::ImageManifest>,
    /// Kernel splats on the console (WARNINGs, BUGs, lockdep, ...), whatever
    /// the outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub splats: Vec<crate::results::splat::Splat>,
    pub timing: Timing,
}

pub fn write_run(dir: &Path, result: &RunResult) -> std::io::Result<PathBuf> {
    let path = dir.join("run.json");
    write_atomic(
        &path,
        &serde_json::to_vec_pretty(result).expect("serializable"),
    )?;
    Ok(path)
}

/// Largest run.json read. A run's own output is capped on the way in (bad
/// lines, console excerpts), so a real one is well under a MiB; this only
/// stops a file that is not one.
pub const MAX_RUN_JSON_BYTES: u64 = 64 << 20;

/// Reads `dir`/run.json: a regular file (not a symbolic link, which could
/// point anywhere on the host) of at most [`MAX_RUN_JSON_BYTES`]. A file
/// that does not parse is an `InvalidData` error carrying serde's words
/// (line and column, never the text).
pub fn read_run(dir: &Path) -> std::io::Result<RunResult> {
    let bytes = crate::host::fs::read_capped(
        &dir.join("run.json"),
        MAX_RUN_JSON_BYTES,
        "MAX_RUN_JSON_BYTES",
        crate::host::fs::Accept::RegularNoSymlink,
    )?;
    serde_json::from_slice(&bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{MglruMetrics, NoioMetrics, ScriptMetrics};

    /// Format 1's three optional fields, read straight from the file.
    fn format_1_fields(
        v: &serde_json::Value,
    ) -> (
        Option<MglruMetrics>,
        Option<NoioMetrics>,
        Option<ScriptMetrics>,
    ) {
        let get = |k: &str| v.get(k).cloned().unwrap_or(serde_json::Value::Null);
        (
            serde_json::from_value(get("metrics")).unwrap(),
            serde_json::from_value(get("noio_metrics")).unwrap(),
            serde_json::from_value(get("script")).unwrap(),
        )
    }

    #[test]
    fn format_1_runs_load_to_the_same_metrics_and_write_format_2() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for (dir, variant) in [
            ("mglru-completed", "mglru"),
            ("mglru-oom", "mglru"),
            ("noio-completed", "noio"),
            ("noio-not-reproduced", "noio"),
            ("script-completed", "script"),
            ("boot-failure", "none"),
        ] {
            let bytes = std::fs::read(fixtures.join(dir).join("run.json")).unwrap();
            let old: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(old["format"], 1, "{dir} is a format-1 fixture");
            let (mglru, noio, script) = format_1_fields(&old);
            let r = read_run(&fixtures.join(dir)).unwrap();
            assert_eq!(r.metrics.mglru(), mglru.as_ref(), "{dir}");
            assert_eq!(r.metrics.noio(), noio.as_ref(), "{dir}");
            assert_eq!(r.metrics.script(), script.as_ref(), "{dir}");
            let expected = match variant {
                "mglru" => ScenarioMetrics::Mglru(mglru.unwrap()),
                "noio" => ScenarioMetrics::Noio(Box::new(noio.unwrap())),
                "script" => ScenarioMetrics::Script {
                    kernel: mglru,
                    script,
                },
                _ => ScenarioMetrics::None,
            };
            assert_eq!(r.metrics, expected, "{dir}");

            // Written again, it is format 2's one key, and reads back equal.
            let written = serde_json::to_value(&r).unwrap();
            for old_key in ["metrics", "noio_metrics", "script"] {
                assert!(written.get(old_key).is_none(), "{dir}: {old_key}");
            }
            assert!(written.get("scenario_metrics").is_some(), "{dir}");
            let again: RunResult = serde_json::from_value(written).unwrap();
            assert_eq!(again, r, "{dir}");
        }
    }

    #[test]
    fn format_2_names_the_variant() {
        let m = ScenarioMetrics::Script {
            kernel: None,
            script: Some(ScriptMetrics::default()),
        };
        let v = serde_json::to_value(&m).unwrap();
        assert!(v.get("script").is_some(), "{v}");
        assert_eq!(
            serde_json::to_value(ScenarioMetrics::None).unwrap(),
            serde_json::json!("none")
        );
    }
}
