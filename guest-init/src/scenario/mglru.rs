//! Scenario A (docs/workloads.md): MGLRU isolation throttling. Many
//! reclaimers touching an anonymous working set larger than a small memory
//! cgroup, over dm-delay swap; tracepoints count the throttling. The
//! workload counts its touches in memory PID 1 owns (counters.rs), read
//! once it has exited, killed or not; then the isolation counters must be
//! back at 0 (balance.rs).

use std::sync::Arc;

use mmci_record::{GuestJob, Phase, Record, ThpMode, WorkloadExit};

use super::reclaimers::Reclaimers;
use super::{
    finish_memcg_and_trace, memcg_oom_kills, setup_memcg_and_trace, setup_mglru_and_swap, snapshot,
};
use crate::balance;
use crate::port::RecordPort;
use crate::step::StepError;

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

    let mut reclaimers = Reclaimers::start(job, &cg, port, job.thp == ThpMode::Madvise)?;
    let (status, elapsed_ms) = reclaimers.wait()?;
    let touches = reclaimers.finish();

    let oom_kills_after = finish_memcg_and_trace(port, &cg, reader)?;

    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal();
    let exit = WorkloadExit {
        code: status.code(),
        signal,
        oom_killed: signal == Some(libc::SIGKILL) && oom_kills_after > oom_kills_before,
    };
    port.send(Record::Workload {
        touches,
        elapsed_ms,
        exit,
    });
    port.send(Record::Balance(balance::check(&cg)));
    Ok(())
}
