//! Scenario A's reclaimers, which scenario C runs too: the workload child
//! in its memory cgroup with exact touch counters in pages of PID 1's, the
//! sampler beside it, and its progress lines read until it exits.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mmci_record::GuestJob;

use crate::counters::Counters;
use crate::port::RecordPort;
use crate::step::{Stage, StepError};
use crate::{sampler, workload};

/// The running workload and its sampler.
pub(crate) struct Reclaimers {
    child: Child,
    counters: Counters,
    touches: Arc<AtomicU64>,
    sampler: sampler::Sampler,
    /// When the workload was spawned.
    pub started: Instant,
}

impl Reclaimers {
    /// Spawns the job's workload in `cg` (`hugepage`: MADV_HUGEPAGE on its
    /// working set) and starts the sampler. The counters are created
    /// first, so that their pages are PID 1's, not the small memcg's.
    pub(crate) fn start(
        job: &GuestJob,
        cg: &Path,
        port: &Arc<RecordPort>,
        hugepage: bool,
    ) -> Result<Reclaimers, StepError> {
        let counters = Counters::create(job.threads.max(1) as usize).stage("counters")?;
        let args = workload::WorkloadArgs {
            cgroup: cg.to_string_lossy().into_owned(),
            threads: job.threads,
            working_set_mb: job.working_set_mb,
            duration_s: job.duration_s,
            fill_first: false,
            touch_rate: 0,
            counters_fd: Some(counters.fd()),
            hugepage,
        };
        let started = Instant::now();
        let child = Command::new("/proc/self/exe")
            .args(args.to_args())
            .stdout(Stdio::piped())
            .spawn()
            .stage("workload")?;
        let touches = Arc::new(AtomicU64::new(0));
        let sampler = sampler::Sampler::start(
            port.clone(),
            cg.to_path_buf(),
            touches.clone(),
            Duration::from_millis(job.sample_interval_ms.max(1)),
            Duration::from_millis(job.report_interval_ms.max(10)),
        )
        .stage("sampler")?;
        Ok(Reclaimers {
            child,
            counters,
            touches,
            sampler,
            started,
        })
    }

    /// Reads the workload's progress lines (its touches, for the sampler;
    /// anything else to the console) until it exits, and its exit status
    /// with the ms it ran.
    pub(crate) fn wait(&mut self) -> Result<(ExitStatus, u64), StepError> {
        if let Some(stdout) = self.child.stdout.take() {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = workload::parse_progress(&line) {
                    self.touches.store(n, Ordering::Relaxed);
                } else {
                    eprintln!("{line}");
                }
            }
        }
        let status = self.child.wait().stage("workload")?;
        Ok((status, self.started.elapsed().as_millis() as u64))
    }

    /// Stops the sampler; the exact touches, killed or not.
    pub(crate) fn finish(self) -> u64 {
        self.sampler.finish();
        self.counters.total()
    }
}
