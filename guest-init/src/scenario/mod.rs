//! The scenarios: what PID 1 sets up, runs and measures for each job. One
//! module per scenario (`mglru` is scenario A, `noio` scenario B, `script`
//! a command from a guest image inside scenario A's set-up, `compaction`
//! scenario C, `probe` nothing), registered in one list (`registry`) that `run` dispatches
//! through; the steps they share (MGLRU on or off, swap, the memory cgroup
//! and the throttling tracepoint, counter snapshots) are here.

mod compaction;
mod mglru;
mod noio;
mod probe;
mod reclaimers;
mod registry;
mod script;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mmci_record::{GuestJob, Phase, Record, SwapBackend, SWAP_DISK_SERIAL};

use crate::blockdev::find_disk;
use crate::port::RecordPort;
use crate::step::{setup_step, Stage, StepError};
use crate::{cgroup, dm, procfs, swap, sys, thp, trace, zram};

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

/// Runs the job's scenario (see `registry`).
pub fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    (registry::of(job.scenario).run)(job, port)
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

/// The first steps of scenario A and of a script: MGLRU on or off as the
/// job says, transparent huge pages as it says, then the job's swap unless
/// it is off.
pub(crate) fn setup_mglru_and_swap(job: &GuestJob, port: &RecordPort) -> Result<(), StepError> {
    setup_step(port, "mglru", || set_lru_gen(job.mglru))?;
    setup_step(port, "thp", || {
        thp::set(job.thp)
            .map(|d| ((), d))
            .map_err(|message| StepError {
                stage: "thp",
                message,
            })
    })?;
    if job.swap.enabled() {
        setup_step(port, "swap", || setup_swap(job.swap, job.swap_delay_ms))?;
    }
    Ok(())
}

/// The last steps of scenario A and of a script: the memory cgroup `name`
/// at the job's memory.max, then the throttling tracepoint and its reader.
pub(crate) fn setup_memcg_and_trace(
    job: &GuestJob,
    port: &RecordPort,
    name: &str,
) -> Result<(PathBuf, trace::ThrottleReader), StepError> {
    let cg = setup_step(port, "cgroup", || {
        let dir = cgroup::create(name, job.memcg_max_mb).stage("cgroup")?;
        let detail = format!(
            "{} memory.max={}",
            dir.display(),
            cgroup::memory_max_value(job.memcg_max_mb)
        );
        Ok((dir, detail))
    })?;
    let reader = setup_throttle_trace(job, port)?;
    Ok((cg, reader))
}

/// The throttling tracepoint on, its reader started.
pub(crate) fn setup_throttle_trace(
    job: &GuestJob,
    port: &RecordPort,
) -> Result<trace::ThrottleReader, StepError> {
    setup_step(port, "trace", || {
        trace::enable(&["vmscan/mm_vmscan_throttled"], job.trace_buffer_kb).stage("trace")?;
        let reader = trace::ThrottleReader::start().stage("trace")?;
        Ok((
            reader,
            format!("mm_vmscan_throttled, {} KiB/cpu", job.trace_buffer_kb),
        ))
    })
}

/// The end of scenario A and of a script, once the workload is over: the
/// throttling tracepoint stopped, then the "after" counters and the
/// throttling counts sent. Returns the cgroup's OOM kills by then.
pub(crate) fn finish_memcg_and_trace(
    port: &RecordPort,
    cg: &Path,
    reader: trace::ThrottleReader,
) -> Result<u64, StepError> {
    trace::stop().stage("trace")?;
    let totals = reader.finish().stage("trace")?;
    let lost_events = trace::lost_events();
    let after = snapshot(Phase::After, cg);
    let oom_kills = memcg_oom_kills(&after);
    port.send(after);
    port.send(Record::Throttle {
        by_reason: totals.by_reason,
        lost_events,
        isolated_by_task: totals.isolated_by_task,
    });
    Ok(oom_kills)
}

/// The OOM kills a snapshot's memory.events counts (0 in any other record).
pub(crate) fn memcg_oom_kills(r: &Record) -> u64 {
    match r {
        Record::Snapshot { memcg_events, .. } => memcg_events.get("oom_kill").copied().unwrap_or(0),
        _ => 0,
    }
}

/// Swap on the job's backend, sized like the swap disk (which zram leaves
/// unused). `Off` is not a backend: callers skip the step.
pub(crate) fn setup_swap(
    backend: SwapBackend,
    delay_ms: u32,
) -> Result<(PathBuf, String), StepError> {
    let (name, major, minor, bytes) = find_disk(SWAP_DISK_SERIAL).stage("swap")?;
    let (device, how) = match backend {
        SwapBackend::Zram => {
            let (node, how) = zram::setup_swap(bytes).stage("zram")?;
            return Ok((node, format!("zram: {how}")));
        }
        SwapBackend::DmDelay if delay_ms > 0 => {
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
        }
        SwapBackend::Off => {
            return Err(StepError {
                stage: "swap",
                message: "swap is off".into(),
            })
        }
        SwapBackend::Disk | SwapBackend::DmDelay => (
            PathBuf::from(format!("/dev/{name}")),
            format!("/dev/{name}, no delay"),
        ),
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
