//! Scenario A's reclaimers, which scenario C runs too: one workload child
//! per group (a memory cgroup with its threads and working set; scenario
//! A's neighbour is one more, not measured), each with exact touch counters
//! in pages of PID 1's, the sampler beside them, their progress lines read
//! until they exit, and `kill_after_s`'s SIGKILL timed to the last exit.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mmci_record::GuestJob;

use crate::counters::Counters;
use crate::port::RecordPort;
use crate::step::{Stage, StepError};
use crate::{sampler, workload};

/// How often the kill timer looks at the children.
const POLL: Duration = Duration::from_millis(5);

/// One workload child's share of the run.
pub(crate) struct Group {
    pub cg: PathBuf,
    pub threads: u32,
    pub working_set_mb: u64,
    pub duration_s: u64,
    /// Its threads' name is `workload::thread_name(name)`.
    pub name: String,
    /// Counted in the run's touches and exit status, and killed by
    /// `kill_after_s` (the neighbour is not: it is stopped once the
    /// measured ones are done).
    pub measured: bool,
}

impl Group {
    /// The job's workload in `cg`, its threads named `w<index>`.
    pub(crate) fn workload(job: &GuestJob, cg: PathBuf, index: usize) -> Group {
        Group {
            cg,
            threads: job.threads,
            working_set_mb: job.working_set_mb,
            duration_s: job.duration_s,
            name: format!("w{index}"),
            measured: true,
        }
    }
}

struct Running {
    child: Child,
    counters: Counters,
    measured: bool,
    reader: Option<JoinHandle<()>>,
}

/// The running workloads and the sampler.
pub(crate) struct Reclaimers {
    running: Vec<Running>,
    touches: Arc<AtomicU64>,
    sampler: sampler::Sampler,
    kill_after: Option<Duration>,
    /// When the first workload was spawned.
    pub started: Instant,
}

/// How the measured workloads ended.
pub(crate) struct Ended {
    /// The first one killed by a signal, else the first one's.
    pub status: ExitStatus,
    pub elapsed_ms: u64,
    /// ms from the kill timer's SIGKILL to the last one reaped; None when
    /// no kill was asked for or they had all exited before it.
    pub exit_after_kill_ms: Option<u64>,
}

impl Reclaimers {
    /// Spawns one workload per group (`hugepage`: MADV_HUGEPAGE on their
    /// working sets) and starts the sampler on `sampled` (the cgroup whose
    /// memory.current it follows). Each group's counters are created
    /// before its child, so that their pages are PID 1's, not the memcg's.
    pub(crate) fn start(
        job: &GuestJob,
        groups: &[Group],
        sampled: PathBuf,
        port: &Arc<RecordPort>,
        hugepage: bool,
    ) -> Result<Reclaimers, StepError> {
        let touches = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut running = Vec::new();
        for g in groups {
            let counters = Counters::create(g.threads.max(1) as usize).stage("counters")?;
            let args = workload::WorkloadArgs {
                cgroup: g.cg.to_string_lossy().into_owned(),
                threads: g.threads,
                working_set_mb: g.working_set_mb,
                duration_s: g.duration_s,
                fill_first: false,
                touch_rate: 0,
                counters_fd: Some(counters.fd()),
                hugepage,
                name: g.name.clone(),
            };
            let mut child = Command::new("/proc/self/exe")
                .args(args.to_args())
                .stdout(Stdio::piped())
                .spawn()
                .stage("workload")?;
            let reader = child
                .stdout
                .take()
                .map(|out| read_progress(out, g.measured.then(|| touches.clone())));
            running.push(Running {
                child,
                counters,
                measured: g.measured,
                reader,
            });
        }
        let sampler = sampler::Sampler::start(
            port.clone(),
            sampled,
            touches.clone(),
            Duration::from_millis(job.sample_interval_ms.max(1)),
            Duration::from_millis(job.report_interval_ms.max(10)),
        )
        .stage("sampler")?;
        Ok(Reclaimers {
            running,
            touches,
            sampler,
            kill_after: (job.kill_after_s > 0).then(|| Duration::from_secs(job.kill_after_s)),
            started,
        })
    }

    /// Waits for the measured workloads to exit (SIGKILLing them at
    /// `kill_after_s` if asked), then stops the others.
    pub(crate) fn wait(&mut self) -> Result<Ended, StepError> {
        let mut statuses: Vec<Option<ExitStatus>> = vec![None; self.running.len()];
        let mut killed_at = None;
        loop {
            let mut pending = false;
            for (r, status) in self.running.iter_mut().zip(statuses.iter_mut()) {
                if r.measured && status.is_none() {
                    *status = if self.kill_after.is_some() {
                        r.child.try_wait().stage("workload")?
                    } else {
                        Some(r.child.wait().stage("workload")?)
                    };
                    pending |= status.is_none();
                }
            }
            if !pending {
                break;
            }
            let due = self.kill_after.is_some_and(|k| self.started.elapsed() >= k);
            if due && killed_at.is_none() {
                killed_at = Some(Instant::now());
                for (r, status) in self.running.iter_mut().zip(&statuses) {
                    if r.measured && status.is_none() {
                        // A zombie keeps its pid until reaped, so this
                        // cannot reach another process.
                        let _ = r.child.kill();
                    }
                }
            }
            std::thread::sleep(POLL);
        }
        let exit_after_kill_ms = killed_at.map(|t| t.elapsed().as_millis() as u64);
        let elapsed_ms = self.started.elapsed().as_millis() as u64;
        // The neighbour has nothing left to measure.
        for (r, status) in self.running.iter_mut().zip(statuses.iter_mut()) {
            if status.is_none() {
                let _ = r.child.kill();
                *status = Some(r.child.wait().stage("workload")?);
            }
        }
        for r in &mut self.running {
            if let Some(reader) = r.reader.take() {
                let _ = reader.join();
            }
        }
        use std::os::unix::process::ExitStatusExt;
        let measured: Vec<ExitStatus> = self
            .running
            .iter()
            .zip(&statuses)
            .filter(|(r, _)| r.measured)
            .filter_map(|(_, s)| *s)
            .collect();
        let status = measured
            .iter()
            .find(|s| s.signal().is_some())
            .or(measured.first())
            .copied()
            .ok_or_else(|| "no workload to wait for".to_string())
            .stage("workload")?;
        Ok(Ended {
            status,
            elapsed_ms,
            exit_after_kill_ms,
        })
    }

    /// Stops the sampler; the exact touches of the measured workloads,
    /// killed or not.
    pub(crate) fn finish(self) -> u64 {
        self.sampler.finish();
        drop(self.touches);
        self.running
            .iter()
            .filter(|r| r.measured)
            .map(|r| r.counters.total())
            .sum()
    }
}

/// Reads a workload's progress lines until it exits: a measured one's
/// touches are added to `touches` (the sampler's running total over all
/// of them); anything else goes to the console.
fn read_progress(
    out: std::process::ChildStdout,
    touches: Option<Arc<AtomicU64>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut last = 0u64;
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            match workload::parse_progress(&line) {
                Some(n) => {
                    if let Some(t) = &touches {
                        t.fetch_add(n.saturating_sub(last), Ordering::Relaxed);
                        last = last.max(n);
                    }
                }
                None => eprintln!("{line}"),
            }
        }
    })
}
