//! Helpers shared by the integration tests. Each test binary compiles
//! all of it and uses a part.
#![allow(dead_code)]

pub mod http;

use std::path::PathBuf;

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
