//! Facts about the host mmci runs on, read in one place: its cores (what
//! the scheduler lets this process use), its RAM (MemTotal), its name, its
//! CPU model and the QEMU it runs guests with; and [`Host`], those facts
//! as a results dir's manifest records them for the reports. No command
//! reads /proc or asks std for these itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The host a matrix ran on, as manifest.json records it (the fields after
/// `memory_mb` are absent from manifests written before mmci recorded
/// them, and read as unknown).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpus: usize,
    pub memory_mb: u64,
    /// /proc/cpuinfo's `model name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Per guest arch, the first line of its QEMU's `--version`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub qemu: BTreeMap<String, String>,
}

impl Host {
    /// This host, without its QEMU versions (which need a child process:
    /// see [`qemu_version`]).
    pub fn this() -> Host {
        Host {
            hostname: hostname(),
            cpus: cores().unwrap_or(1),
            memory_mb: memory_mb(),
            cpu_model: cpu_model(),
            qemu: BTreeMap::new(),
        }
    }
}

/// The cores this process may use (`std::thread::available_parallelism`),
/// `None` when the host does not say.
pub fn cores() -> Option<usize> {
    std::thread::available_parallelism().ok().map(|n| n.get())
}

/// MemTotal of this host in MiB (0 if /proc is unreadable).
pub fn memory_mb() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// The host's name (`/proc/sys/kernel/hostname`; empty if unreadable).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The CPU model of this host (`model name` in /proc/cpuinfo).
pub fn cpu_model() -> Option<String> {
    cpu_model_in(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
}

/// The first `model name` of a /proc/cpuinfo text, spaces squeezed; `None`
/// without one (arm64 kernels print no model name).
pub fn cpu_model_in(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
        (k.trim() == "model name" && !v.is_empty()).then_some(v)
    })
}

/// The first line of `<qemu binary> --version` (`QEMU emulator version
/// 10.0.2 (Debian ...)`), `None` when it does not run.
pub async fn qemu_version(binary: &str) -> Option<String> {
    let out = super::process::output(
        tokio::process::Command::new(binary).arg("--version"),
        &format!("{binary} --version"),
        super::process::Limits::QUICK,
    )
    .await
    .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next()?.trim();
    (out.status.success() && !first.is_empty()).then(|| first.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R)   Processor @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor @ 2.20GHz\n";
        assert_eq!(
            cpu_model_in(x86).as_deref(),
            Some("Intel(R) Xeon(R) Processor @ 2.20GHz")
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n";
        assert_eq!(cpu_model_in(arm), None);
        assert_eq!(cpu_model_in("model name\t:\n"), None);
    }
}
