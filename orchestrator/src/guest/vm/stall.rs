//! The no-progress watchdog of a guest run: a workload whose touch counter
//! stops moving for [`NO_PROGRESS`] is hung, and is stopped long before the
//! run's timeout, once the kernel has had time to say why (its hung-task
//! report of the blocked tasks, see guest-init/src/hung_task.rs).
//!
//! Progress is what the guest's records show: a `Sample` (one per report
//! interval, 1 s by default) whose `touches` moved, or any other record (a
//! set-up step, a script's output line). The watch is armed by the first
//! sample with touches, so that a scenario without a touch counter (script:
//! its touches stay 0; noio: no samples) is never judged by it; it is
//! disarmed by the records that end a workload.
//!
//! Why the kernel's hung-task detector dumps the blocked tasks, and not
//! sysrq `w` sent through QEMU's monitor (`sendkey alt-sysrq-w`, or a
//! break on the serial line): the detector needs nothing from the guest
//! kernel but CONFIG_DETECT_HUNG_TASK, while sysrq needs MAGIC_SYSRQ and an
//! input path (a PS/2 keyboard driver on x86_64, none on arm64's virt
//! machine; a serial break needs the console's chardev writable), which
//! mmci's tinyconfig-based kernels have none of; it prints exactly the
//! tasks stuck in D state, in the report syzbot titles (`INFO: task hung
//! in <frame>`), on every architecture alike; and it is in the kernel's
//! hands, so a guest whose userspace is stuck still reports. Its limits: a
//! kernel without the detector (the default flavour) is stopped early all
//! the same, with no stacks (the run's reason says so); a livelock (no
//! task in D state) shows no stacks either, but then the soft-lockup and
//! RCU-stall detectors of the debug flavour speak.

use std::time::Duration;

use mmci_record::Record;

/// How long without progress makes a run hung. The sampler reports every
/// second, and a loaded TCG guest swapping through dm-delay still touches
/// pages every few seconds: 20 s without one is no slow guest. It is longer
/// than the hung-task detector's timeout and interval together (10 + 2 s),
/// so the blocked tasks' stacks are on the console when the watchdog fires.
pub const NO_PROGRESS: Duration = Duration::from_secs(20);
/// How long to wait, once hung, for the kernel's report of the blocked
/// tasks to reach the console before QEMU is killed: the detector's
/// timeout and interval again, in case the task blocked late.
pub const DUMP_WAIT: Duration = Duration::from_secs(12);
/// The report is complete when the console has not grown for this long.
pub const DUMP_QUIET: Duration = Duration::from_secs(2);

/// A run found hung: how long it had gone without progress, and where its
/// touch counter stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    pub idle: Duration,
    pub touches: u64,
}

/// Progress seen so far, fed with each record as it arrives.
#[derive(Debug, Default)]
pub struct ProgressWatch {
    touches: Option<u64>,
    /// When the last progress arrived, in ms since QEMU started.
    last_ms: u64,
    armed: bool,
    ended: bool,
}

impl ProgressWatch {
    /// Takes one record that arrived `at_ms` after QEMU started.
    pub fn observe(&mut self, record: &Record, at_ms: u64) {
        match record {
            Record::Sample { touches, .. } => {
                if *touches > 0 && self.touches != Some(*touches) {
                    self.armed = true;
                    self.last_ms = at_ms;
                }
                self.touches = Some(*touches);
            }
            Record::Workload { .. } | Record::Script { .. } | Record::Done { .. } => {
                self.ended = true;
            }
            _ => self.last_ms = at_ms,
        }
    }

    /// How long the run has gone without progress at `now_ms`, once that is
    /// [`NO_PROGRESS`] or more.
    pub fn stalled(&self, now_ms: u64) -> Option<Duration> {
        if !self.armed || self.ended {
            return None;
        }
        let idle = Duration::from_millis(now_ms.saturating_sub(self.last_ms));
        (idle >= NO_PROGRESS).then_some(idle)
    }

    /// The touch counter where it stopped.
    pub fn touches(&self) -> Option<u64> {
        self.touches
    }
}

/// The hung-task detector's report line, as the kernel prints it
/// (kernel/hung_task.c).
pub fn has_blocked_report(console_tail: &str) -> bool {
    console_tail.contains(" blocked for more than ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(touches: u64) -> Record {
        Record::Sample {
            t_ms: 0,
            nr_isolated_anon_max: 0,
            nr_isolated_file_max: 0,
            nr_isolated_total_max: 0,
            touches,
            memcg_current_bytes: 0,
            mem_free_kb: 0,
        }
    }

    fn setup() -> Record {
        Record::Setup {
            step: "swap".into(),
            detail: String::new(),
            ms: 0,
        }
    }

    fn workload() -> Record {
        Record::Workload {
            touches: 9,
            elapsed_ms: 0,
            exit: mmci_record::WorkloadExit {
                code: Some(0),
                signal: None,
                oom_killed: false,
                exit_after_kill_ms: None,
            },
        }
    }

    /// Records with their arrival in s, now in s, stalled for s.
    type Case = (Vec<(Record, u64)>, u64, Option<u64>);

    #[test]
    fn hung_after_twenty_seconds_without_a_touch() {
        let cases: Vec<Case> = vec![
            // Touches stop at 30 s; the samples go on.
            (
                vec![
                    (sample(5), 10),
                    (sample(30), 30),
                    (sample(30), 31),
                    (sample(30), 49),
                ],
                50,
                Some(20),
            ),
            (vec![(sample(5), 10), (sample(30), 30)], 49, None),
            // Moving touches: progress.
            (vec![(sample(5), 10), (sample(6), 40)], 50, None),
            // No touch counter (a script): never armed.
            (vec![(sample(0), 10), (sample(0), 11)], 100, None),
            // Other records are progress too.
            (vec![(sample(5), 10), (setup(), 45)], 60, None),
            // The workload ended: what follows is not its progress.
            (vec![(sample(5), 10), (workload(), 11)], 100, None),
        ];
        for (i, (records, now, want)) in cases.into_iter().enumerate() {
            let mut w = ProgressWatch::default();
            for (r, at) in &records {
                w.observe(r, at * 1000);
            }
            assert_eq!(
                w.stalled(now * 1000),
                want.map(Duration::from_secs),
                "case {i}"
            );
        }
    }

    #[test]
    fn the_detectors_line_is_recognised() {
        for (text, want) in [
            (
                "[ 42.1] INFO: task guest-init:57 blocked for more than 10 seconds.\n",
                true,
            ),
            ("[ 42.1] sysrq: Show Blocked State\n", false),
            ("", false),
        ] {
            assert_eq!(has_blocked_report(text), want, "{text}");
        }
    }
}
