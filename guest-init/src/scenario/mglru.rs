//! Scenario A (docs/workloads.md): MGLRU isolation throttling. Many
//! reclaimers touching an anonymous working set larger than a small memory
//! cgroup, over dm-delay swap; tracepoints count the throttling.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mmci_record::{GuestJob, Phase, Record, WorkloadExit};

use super::{set_lru_gen, setup_swap, snapshot};
use crate::port::RecordPort;
use crate::step::{setup_step, Stage, StepError};
use crate::{cgroup, sampler, trace, workload};

const CGROUP_NAME: &str = "mmci-workload";

pub fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    setup_step(port, "mglru", || set_lru_gen(job.mglru))?;
    if job.swap.enabled() {
        setup_step(port, "swap", || setup_swap(job.swap, job.swap_delay_ms))?;
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
        touch_rate: 0,
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
