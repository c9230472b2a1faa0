//! Scenario C (docs/scenarios.md, docs/workloads.md): compaction against
//! MGLRU isolation. Scenario A's reclaimers (the workload child, many
//! threads in a small memcg over dm-delay swap) isolate folios while a
//! thread of PID 1, outside the memcg, faults transparent huge pages into
//! memory cut into 4 KiB holes, so that each fault runs direct compaction
//! (`fragment`). The tracepoints say which VMSCAN_THROTTLE_ISOLATED waits
//! are compaction's and how long compaction ran (`windows`); /proc/vmstat
//! snapshots give the compact_* and thp_fault_* counters.

mod fragment;
mod windows;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mmci_record::{GuestJob, Phase, Record, Scenario, WorkloadExit};

use super::reclaimers::{Group, Reclaimers};
use super::{memcg_oom_kills, setup_mglru_and_swap, snapshot};
use crate::port::RecordPort;
use crate::step::{setup_step, Stage, StepError};
use crate::{cgroup, procfs, trace};

/// This scenario in the registry.
pub static DEF: super::registry::Def = super::registry::Def {
    id: Scenario::CompactionStall,
    run,
};

const CGROUP_NAME: &str = "mmci-reclaimers";
/// The faulting thread's name, its comm in the trace.
const FAULTER: &str = "mmci-thp";
const THP: &str = "/sys/kernel/mm/transparent_hugepage";
const UNEVICTABLE: &str = "/proc/sys/vm/compact_unevictable_allowed";
/// Free memory left whole beside the filler and the reclaimers' memcg: for
/// the kernel while the filler is written. Kept small, because the faults
/// take it without compacting; the filler's holes (half the filler) are
/// where the huge pages and the memcg's pages come from.
const RESERVE_MB: u64 = 32;
/// How long the counters wait for the reclaimers to fill their memcg.
const FILL_WAIT: Duration = Duration::from_secs(20);
/// The huge-page region faulted per cycle (at most a quarter of the filler).
const THP_REGION_MB: u64 = 64;

fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    // The shared steps set the job's THP mode (`never` by default, for
    // the reclaimers); this one then asks for huge pages where the faulter
    // madvises them, whatever the job said.
    setup_mglru_and_swap(job, port)?;
    setup_step(port, "thp-madvise", set_thp)?;
    let cg = setup_step(port, "cgroup", || {
        let dir = cgroup::create(CGROUP_NAME, job.memcg_max_mb).stage("cgroup")?;
        let detail = format!(
            "{} memory.max={}",
            dir.display(),
            cgroup::memory_max_value(job.memcg_max_mb)
        );
        Ok((dir, detail))
    })?;
    // Before the filler takes the memory the buffers need.
    setup_step(port, "trace-buffers", || {
        trace::size_buffers(job.trace_buffer_kb).stage("trace")?;
        Ok(((), format!("{} KiB/cpu", job.trace_buffer_kb)))
    })?;
    let (filler, thp_mb) = setup_step(port, "fragment", || fragment(job))?;
    let reader = setup_step(port, "trace", || {
        trace::start(&windows::EVENTS).stage("trace")?;
        let reader = trace::PipeReader::start(
            windows::Attribution::new(FAULTER),
            true,
            |a: &mut windows::Attribution, line: &str| a.feed(line),
        )
        .stage("trace")?;
        Ok((reader, windows::EVENTS.join(", ")))
    })?;

    // Read before the reclaimers start, not at the "before" snapshot: they
    // can be OOM-killed while their memcg fills (seen 260 ms in).
    let oom_kills_before = super::read_map(&cg.join("memory.events"))
        .get("oom_kill")
        .copied()
        .unwrap_or(0);
    // 4 KiB pages: only the faulter's region asks for huge pages.
    let group = Group::workload(job, cg.clone(), 0);
    let mut reclaimers = Reclaimers::start(job, &[group], cg.clone(), port, false)?;
    // The counters start once the reclaimers fill their memcg: from then
    // on their LRU is what compaction's too_many_isolated() limit is made
    // of (the filler is mlocked), and the faults start with the counters.
    let filled = wait_for_memcg(&cg, job.memcg_max_mb);
    port.send(snapshot(Phase::Before, &cg));
    port.send(Record::Setup {
        step: "reclaimers".into(),
        detail: filled,
        ms: reclaimers.started.elapsed().as_millis() as u64,
    });
    let stop = Arc::new(AtomicBool::new(false));
    let faults = Arc::new(AtomicU64::new(0));
    let faulter = {
        let (stop, faults) = (stop.clone(), faults.clone());
        std::thread::Builder::new()
            .name(FAULTER.into())
            .spawn(move || fragment::fault_loop(filler, thp_mb, &stop, &faults))
            .stage("thp")?
    };
    let ended = reclaimers.wait()?;
    let (status, elapsed_ms) = (ended.status, ended.elapsed_ms);
    // The faults stop with the reclaimers: only faults under their
    // isolation are measured.
    stop.store(true, Ordering::Relaxed);
    let faulted = faulter.join().unwrap_or_default();
    let touches = reclaimers.finish();

    trace::stop().stage("trace")?;
    let attribution = reader.finish().stage("trace")?;
    let after = snapshot(Phase::After, &cg);
    let oom_kills_after = memcg_oom_kills(&after);
    port.send(after);
    port.send(Record::Throttle {
        by_reason: attribution.totals,
        lost_events: trace::lost_events() + attribution.lost,
        isolated_by_task: Default::default(),
    });
    port.send(Record::Setup {
        step: "thp-faults".into(),
        detail: format!(
            "{} cycles, {} huge-page faults of {thp_mb} MiB regions, {} ms in the faults, {} ms refragmenting",
            faulted.cycles,
            faulted.faults,
            faulted.fault_us / 1000,
            faulted.refragment_us / 1000
        ),
        ms: elapsed_ms,
    });
    if let Some(message) = faulted.error {
        return Err(StepError {
            stage: "thp",
            message,
        });
    }

    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal();
    port.send(Record::Workload {
        touches,
        elapsed_ms,
        exit: WorkloadExit {
            code: status.code(),
            signal,
            oom_killed: signal == Some(libc::SIGKILL) && oom_kills_after > oom_kills_before,
            exit_after_kill_ms: None,
        },
    });
    Ok(())
}

/// THP only where asked (the reclaimers keep 4 KiB pages) and direct
/// compaction on those faults; compaction may move mlocked pages.
fn set_thp() -> Result<((), String), StepError> {
    let mut detail = Vec::new();
    for (file, value) in [("enabled", "madvise"), ("defrag", "madvise")] {
        let path = format!("{THP}/{file}");
        std::fs::write(&path, value)
            .map_err(|e| format!("{path}: {e}"))
            .stage("thp")?;
        let now = std::fs::read_to_string(&path).stage("thp")?;
        if !now.contains(&format!("[{value}]")) {
            return Err(StepError {
                stage: "thp",
                message: format!("{path} reads {} after writing {value}", now.trim()),
            });
        }
        detail.push(format!("{file}={value}"));
    }
    std::fs::write(UNEVICTABLE, "1")
        .map_err(|e| format!("{UNEVICTABLE}: {e}"))
        .stage("thp")?;
    detail.push("compact_unevictable_allowed=1".into());
    Ok(((), detail.join(" ")))
}

/// The filler sized to free memory, fragmented once; the huge-page
/// region's size.
fn fragment(job: &GuestJob) -> Result<((fragment::Filler, u64), String), StepError> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let free_mb = procfs::meminfo_kb(&read("/proc/meminfo"), "MemFree").unwrap_or(0) >> 10;
    let filler_mb = free_mb.saturating_sub(job.memcg_max_mb + RESERVE_MB);
    if filler_mb < 64 {
        return Err(StepError {
            stage: "fragment",
            message: format!(
                "{free_mb} MiB free leaves {filler_mb} MiB to fragment beside a {} MiB memcg: give the guest more memory",
                job.memcg_max_mb
            ),
        });
    }
    let huge_before = fragment::free_huge_blocks(&read("/proc/buddyinfo"));
    let mut filler = fragment::Filler::new(filler_mb).stage("fragment")?;
    let freed = filler.refragment().stage("fragment")?;
    let huge_after = fragment::free_huge_blocks(&read("/proc/buddyinfo"));
    let thp_mb = THP_REGION_MB.min(filler_mb / 4) & !1;
    let detail = format!(
        "{filler_mb} MiB filler of {free_mb} MiB free, {} MiB of it freed at random, the rest mlocked; free 2 MiB blocks {huge_before} -> {huge_after}; {thp_mb} MiB of huge pages a cycle",
        (freed * crate::sys::page_size()) >> 20
    );
    Ok(((filler, thp_mb), detail))
}

/// Waits until the memcg's usage reaches 90% of its limit (or
/// [`FILL_WAIT`] has passed); says what it saw.
fn wait_for_memcg(cg: &std::path::Path, max_mb: u64) -> String {
    let want = (max_mb << 20) / 10 * 9;
    let started = Instant::now();
    let current = || {
        std::fs::read_to_string(cg.join("memory.current"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut now = current();
    while max_mb > 0 && now < want && started.elapsed() < FILL_WAIT {
        std::thread::sleep(Duration::from_millis(100));
        now = current();
    }
    format!(
        "memory.current {} KiB after {} ms",
        now >> 10,
        started.elapsed().as_millis()
    )
}
