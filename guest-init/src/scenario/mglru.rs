//! Scenario A (docs/workloads.md): MGLRU isolation throttling. Many
//! reclaimers touching an anonymous working set larger than a small memory
//! cgroup, over dm-delay swap; tracepoints count the throttling. The
//! workload counts its touches in memory PID 1 owns (counters.rs), read
//! once it has exited, killed or not; then the isolation counters must be
//! back at 0 (balance.rs).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mmci_record::{GuestJob, Phase, Record, ThpMode, WorkloadExit};

use super::{
    finish_memcg_and_trace, memcg_oom_kills, setup_memcg_and_trace, setup_mglru_and_swap, snapshot,
};
use crate::counters::Counters;
use crate::port::RecordPort;
use crate::step::{Stage, StepError};
use crate::{balance, sampler, workload};

const CGROUP_NAME: &str = "mmci-workload";

/// This scenario in the registry.
pub static DEF: super::registry::Def = super::registry::Def {
    id: mmci_record::Scenario::MglruIsolation,
    run,
};

fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    setup_mglru_and_swap(job, port)?;
    let (cg, reader) = setup_memcg_and_trace(job, port, CGROUP_NAME)?;

    let before = snapshot(Phase::Before, &cg);
    let oom_kills_before = memcg_oom_kills(&before);
    port.send(before);

    // Before the workload exists, so that its pages are PID 1's.
    let counters = Counters::create(job.threads.max(1) as usize).stage("counters")?;
    let args = workload::WorkloadArgs {
        cgroup: cg.to_string_lossy().into_owned(),
        threads: job.threads,
        working_set_mb: job.working_set_mb,
        duration_s: job.duration_s,
        fill_first: false,
        touch_rate: 0,
        counters_fd: Some(counters.fd()),
        hugepage: job.thp == ThpMode::Madvise,
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

    let oom_kills_after = finish_memcg_and_trace(port, &cg, reader)?;

    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal();
    let exit = WorkloadExit {
        code: status.code(),
        signal,
        oom_killed: signal == Some(libc::SIGKILL) && oom_kills_after > oom_kills_before,
    };
    port.send(Record::Workload {
        touches: counters.total(),
        elapsed_ms,
        exit,
    });
    port.send(Record::Balance(balance::check(&cg)));
    Ok(())
}
