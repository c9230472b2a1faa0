//! Scenario A (docs/workloads.md): MGLRU isolation throttling. Many
//! reclaimers touching an anonymous working set larger than a small memory
//! cgroup, over dm-delay swap; tracepoints count the throttling. The
//! workload counts its touches in memory PID 1 owns (counters.rs), read
//! once it has exited, killed or not; then the isolation counters must be
//! back at 0 (balance.rs). The job's `memcgs`, `neighbour_mb` and
//! `kill_after_s` shape the cells that exercise what the series' v2
//! changed (root reclaim over many memcgs, who a wake reaches, a killed
//! reclaimer's exit): docs/workloads.md.

use std::path::PathBuf;
use std::sync::Arc;

use mmci_record::{GuestJob, Phase, Record, ThpMode, WorkloadExit};

use super::reclaimers::{Group, Reclaimers};
use super::{
    finish_memcg_and_trace, memcg_oom_kills, setup_mglru_and_swap, setup_throttle_trace, snapshot,
};
use crate::port::RecordPort;
use crate::step::{setup_step, Stage, StepError};
use crate::{balance, cgroup};

const CGROUP_NAME: &str = "mmci-workload";
/// The neighbour's cgroup (`neighbour_mb`), beside the workload's.
const NEIGHBOUR: &str = "mmci-neighbour";

/// This scenario in the registry.
pub static DEF: super::registry::Def = super::registry::Def {
    id: mmci_record::Scenario::MglruIsolation,
    run,
};

fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    setup_mglru_and_swap(job, port)?;
    let memcgs = setup_step(port, "cgroup", || memcgs(job))?;
    let reader = setup_throttle_trace(job, port)?;
    let cg = memcgs.top.clone();

    let before = snapshot(Phase::Before, &cg);
    let oom_kills_before = memcg_oom_kills(&before);
    port.send(before);

    let hugepage = job.thp == ThpMode::Madvise;
    let mut reclaimers = Reclaimers::start(job, &memcgs.groups, cg.clone(), port, hugepage)?;
    let ended = reclaimers.wait()?;
    let touches = reclaimers.finish();

    let oom_kills_after = finish_memcg_and_trace(port, &cg, reader)?;

    use std::os::unix::process::ExitStatusExt;
    let signal = ended.status.signal();
    let exit = WorkloadExit {
        code: ended.status.code(),
        signal,
        // PID 1's own SIGKILL is not an OOM kill; an OOM kill before it
        // ended the workload before the kill was due.
        oom_killed: signal == Some(libc::SIGKILL)
            && oom_kills_after > oom_kills_before
            && ended.exit_after_kill_ms.is_none(),
        exit_after_kill_ms: ended.exit_after_kill_ms,
    };
    port.send(Record::Workload {
        touches,
        elapsed_ms: ended.elapsed_ms,
        exit,
    });
    port.send(Record::Balance(balance::check(&memcgs.remove_order)));
    Ok(())
}

/// The workload's cgroups, and the neighbour's.
struct Memcgs {
    /// What the snapshots and the sampler read: the workload's cgroup, or
    /// the parent of its `memcgs` cgroups (memory.events and memory.stat
    /// count the whole subtree).
    top: PathBuf,
    groups: Vec<Group>,
    /// Every cgroup made, children before their parent.
    remove_order: Vec<PathBuf>,
}

/// `memcgs` cgroups of `memcg_max_mb` (one is the top itself; more are
/// `m<i>` under a top without a limit), and the neighbour beside them.
fn memcgs(job: &GuestJob) -> Result<(Memcgs, String), StepError> {
    let limit = cgroup::memory_max_value(job.memcg_max_mb);
    let mut made = Memcgs {
        top: PathBuf::new(),
        groups: vec![],
        remove_order: vec![],
    };
    let mut detail;
    if job.memcgs <= 1 {
        made.top = cgroup::create(CGROUP_NAME, job.memcg_max_mb).stage("cgroup")?;
        made.groups.push(Group::workload(job, made.top.clone(), 0));
        detail = format!("{} memory.max={limit}", made.top.display());
    } else {
        made.top = cgroup::create(CGROUP_NAME, 0).stage("cgroup")?;
        for i in 0..job.memcgs as usize {
            let dir = cgroup::create_child(&made.top, &format!("m{i}"), job.memcg_max_mb)
                .stage("cgroup")?;
            made.groups.push(Group::workload(job, dir.clone(), i));
            made.remove_order.push(dir);
        }
        detail = format!(
            "{} memcgs {}/m0..m{} memory.max={limit}, {} threads each",
            job.memcgs,
            made.top.display(),
            job.memcgs - 1,
            job.threads
        );
    }
    made.remove_order.push(made.top.clone());
    if job.neighbour_mb > 0 {
        let dir = cgroup::create(NEIGHBOUR, job.neighbour_mb).stage("cgroup")?;
        detail += &format!(
            "; neighbour {} memory.max={}, 1 thread over {} MiB",
            dir.display(),
            cgroup::memory_max_value(job.neighbour_mb),
            job.neighbour_mb * 2
        );
        made.groups.push(Group {
            cg: dir.clone(),
            threads: 1,
            working_set_mb: job.neighbour_mb * 2,
            // Stopped once the measured workloads are done.
            duration_s: job.duration_s + 3600,
            name: "nb".into(),
            measured: false,
        });
        made.remove_order.push(dir);
    }
    Ok((made, detail))
}
