//! The scenarios: what PID 1 sets up, runs and measures for each job.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mmci_record::{GuestJob, Phase, Record, Scenario, WorkloadExit, SWAP_DISK_SERIAL};

use crate::port::RecordPort;
use crate::{cgroup, dm, procfs, sampler, swap, sys, trace, workload};

/// A failed step: which one, and what went wrong.
pub struct StepError {
    pub stage: &'static str,
    pub message: String,
}

pub(crate) trait Stage<T> {
    fn stage(self, stage: &'static str) -> Result<T, StepError>;
}

impl<T, E: std::fmt::Display> Stage<T> for Result<T, E> {
    fn stage(self, stage: &'static str) -> Result<T, StepError> {
        self.map_err(|e| StepError {
            stage,
            message: e.to_string(),
        })
    }
}

const CGROUP_NAME: &str = "mmci-workload";
pub(crate) const LRU_GEN: &str = "/sys/kernel/mm/lru_gen/enabled";

pub fn hello(job: &GuestJob) -> Record {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    Record::Hello {
        kernel_release: release.trim().to_string(),
        arch: std::env::consts::ARCH.to_string(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        mem_total_kb: procfs::meminfo_kb(&meminfo, "MemTotal").unwrap_or(0),
        uptime_ms: sys::uptime_ms(),
        job: job.clone(),
    }
}

pub fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    match job.scenario {
        Scenario::Probe => Ok(()),
        Scenario::MglruIsolation => mglru_isolation(job, port),
        Scenario::NoioVerity => crate::noio::run(job, port),
    }
}

/// Times a set-up step and reports it.
pub(crate) fn setup_step<T>(
    port: &RecordPort,
    step: &'static str,
    f: impl FnOnce() -> Result<(T, String), StepError>,
) -> Result<T, StepError> {
    let start = Instant::now();
    let (value, detail) = f()?;
    port.send(Record::Setup {
        step: step.into(),
        detail,
        ms: start.elapsed().as_millis() as u64,
    });
    Ok(value)
}

pub(crate) fn set_lru_gen(enabled: bool) -> Result<((), String), StepError> {
    std::fs::write(LRU_GEN, if enabled { "y" } else { "n" })
        .map_err(|e| format!("{LRU_GEN}: {e}"))
        .stage("mglru")?;
    let now = std::fs::read_to_string(LRU_GEN).stage("mglru")?;
    let now = now.trim().to_string();
    // Reads back as a bitmask: 0x0007 with every feature on, 0x0000 when off.
    let is_on = now != "0x0000";
    if is_on != enabled {
        return Err(StepError {
            stage: "mglru",
            message: format!("{LRU_GEN} reads {now} after writing {enabled}"),
        });
    }
    Ok(((), format!("enabled={now}")))
}

/// The virtio disk whose serial is `serial`: (name, major, minor, bytes).
pub(crate) fn find_disk(serial: &str) -> Result<(String, u32, u32, u64), String> {
    let dir = std::fs::read_dir("/sys/block").map_err(|e| format!("/sys/block: {e}"))?;
    for entry in dir.flatten() {
        let path = entry.path();
        let found = std::fs::read_to_string(path.join("serial")).unwrap_or_default();
        if found.trim() != serial {
            continue;
        }
        let dev = std::fs::read_to_string(path.join("dev")).map_err(|e| e.to_string())?;
        let (major, minor) = dev
            .trim()
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .ok_or_else(|| format!("bad dev number {dev:?}"))?;
        let sectors: u64 = std::fs::read_to_string(path.join("size"))
            .map_err(|e| e.to_string())?
            .trim()
            .parse()
            .map_err(|_| "bad disk size".to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        return Ok((name, major, minor, sectors * 512));
    }
    Err(format!("no virtio disk with serial {serial}"))
}

pub(crate) fn setup_swap(delay_ms: u32) -> Result<(PathBuf, String), StepError> {
    let (name, major, minor, bytes) = find_disk(SWAP_DISK_SERIAL).stage("swap")?;
    let (device, how) = if delay_ms > 0 {
        let target = dm::Target {
            start: 0,
            length: bytes / 512,
            kind: "delay".into(),
            params: dm::delay_params(major, minor, delay_ms),
        };
        let node = dm::create_device("mmci-swap-delay", &[target], 0).stage("dm-delay")?;
        let how = format!(
            "dm-delay {} over {name} ({major}:{minor}), {} ms",
            node.display(),
            delay_ms
        );
        (node, how)
    } else {
        (
            PathBuf::from(format!("/dev/{name}")),
            format!("/dev/{name}, no delay"),
        )
    };
    swap::mkswap_and_swapon(&device, bytes).stage("swapon")?;
    Ok((device, format!("{how}, {} MiB", bytes >> 20)))
}

pub(crate) fn read_map(path: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(path)
        .map(|t| procfs::parse_key_values(&t))
        .unwrap_or_default()
}

pub(crate) fn snapshot(phase: Phase, cgroup: &Path) -> Record {
    Record::Snapshot {
        phase,
        vmstat: read_map(Path::new("/proc/vmstat")),
        memcg_events: read_map(&cgroup.join("memory.events")),
        memcg_stat: read_map(&cgroup.join("memory.stat")),
        psi_memory: std::fs::read_to_string("/proc/pressure/memory")
            .ok()
            .map(|t| procfs::parse_psi(&t)),
    }
}

fn mglru_isolation(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    setup_step(port, "mglru", || set_lru_gen(job.mglru))?;
    if job.swap {
        setup_step(port, "swap", || setup_swap(job.swap_delay_ms))?;
    }
    let cg = setup_step(port, "cgroup", || {
        let dir = cgroup::create(CGROUP_NAME, job.memcg_max_mb).stage("cgroup")?;
        let detail = format!(
            "{} memory.max={}",
            dir.display(),
            cgroup::memory_max_value(job.memcg_max_mb)
        );
        Ok((dir, detail))
    })?;
    let reader = setup_step(port, "trace", || {
        trace::enable(&["vmscan/mm_vmscan_throttled"], job.trace_buffer_kb).stage("trace")?;
        let reader = trace::ThrottleReader::start().stage("trace")?;
        Ok((
            reader,
            format!("mm_vmscan_throttled, {} KiB/cpu", job.trace_buffer_kb),
        ))
    })?;

    let before = snapshot(Phase::Before, &cg);
    let oom_kills_before = match &before {
        Record::Snapshot { memcg_events, .. } => memcg_events.get("oom_kill").copied().unwrap_or(0),
        _ => 0,
    };
    port.send(before);

    let args = workload::WorkloadArgs {
        cgroup: cg.to_string_lossy().into_owned(),
        threads: job.threads,
        working_set_mb: job.working_set_mb,
        duration_s: job.duration_s,
        fill_first: false,
    };
    let start = Instant::now();
    let mut child = Command::new("/proc/self/exe")
        .args(args.to_args())
        .stdout(Stdio::piped())
        .spawn()
        .stage("workload")?;
    let touches = Arc::new(AtomicU64::new(0));
    let sampler = sampler::Sampler::start(
        port.clone(),
        cg.clone(),
        touches.clone(),
        Duration::from_millis(job.sample_interval_ms.max(1)),
        Duration::from_millis(job.report_interval_ms.max(10)),
    )
    .stage("sampler")?;
    let stdout = child.stdout.take().expect("piped stdout");
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if let Some(n) = workload::parse_progress(&line) {
            touches.store(n, Ordering::Relaxed);
        } else {
            eprintln!("{line}");
        }
    }
    let status = child.wait().stage("workload")?;
    let elapsed_ms = start.elapsed().as_millis() as u64;
    sampler.finish();

    trace::stop().stage("trace")?;
    let by_reason = reader.finish().stage("trace")?;
    let lost_events = trace::lost_events();

    let after = snapshot(Phase::After, &cg);
    let oom_kills_after = match &after {
        Record::Snapshot { memcg_events, .. } => memcg_events.get("oom_kill").copied().unwrap_or(0),
        _ => 0,
    };
    port.send(after);
    port.send(Record::Throttle {
        by_reason,
        lost_events,
    });

    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal();
    let exit = WorkloadExit {
        code: status.code(),
        signal,
        oom_killed: signal == Some(libc::SIGKILL) && oom_kills_after > oom_kills_before,
    };
    port.send(Record::Workload {
        touches: touches.load(Ordering::Relaxed),
        elapsed_ms,
        exit,
    });
    Ok(())
}
