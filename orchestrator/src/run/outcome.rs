//! Classifying a guest run, as syzkaller does: only completed runs feed
//! statistics; infra failures are retried and never reported as regressions;
//! boot failures, crashes and hangs are results in their own right.

use mmci_record::{GuestJob, Record};

use crate::guest::vm::VmRun;

pub use crate::results::outcome::{Classification, Outcome};

/// Console lines that mean the kernel died or is broken.
const CRASH_MARKERS: [&str; 9] = [
    "Kernel panic - not syncing",
    "BUG: ",
    "Oops: ",
    "general protection fault",
    "Unable to handle kernel",
    "kernel BUG at",
    "watchdog: BUG: soft lockup",
    "INFO: task ",
    "Internal error: ",
];

/// The first crash line on the console and the report of the crash: the
/// last splat (the one the kernel died of, with its call trace), else the
/// 60 lines from the crash line.
pub fn find_crash(console: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = console.lines().collect();
    let first = lines
        .iter()
        .position(|l| CRASH_MARKERS.iter().any(|m| l.contains(m)))?;
    let report = match crate::results::splat::detect(console).pop() {
        Some(s) => s.excerpt,
        None => lines[first..lines.len().min(first + 60)].join("\n"),
    };
    Some((strip_timestamp(lines[first]).to_string(), report))
}

/// A console line without its printk timestamp ("[    1.807686] ").
pub fn strip_timestamp(line: &str) -> &str {
    let trimmed = line.trim();
    match trimmed
        .strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
    {
        Some((stamp, rest)) if stamp.trim().parse::<f64>().is_ok() => rest.trim(),
        _ => trimmed,
    }
}

/// RCU's own diagnosis that a timer never fired (kernel/rcu/tree_stall.h):
/// `rcu_sched kthread timer wakeup didn't happen for 5251 jiffies!`, with
/// `Possible timer handling issue on cpu=1`. Seen during boot under TCG when
/// the host is too busy to run a vCPU thread for tens of seconds: the kernel
/// waits for a timer interrupt the emulator never delivers, and PID 1 never
/// starts. A kernel that breaks its own timers shows the same, but an mm
/// series does not touch them; the run is retried as an infra failure and
/// its console kept, rather than blamed on the kernel as a boot failure.
fn starved_timer(console: &str) -> Option<String> {
    console
        .lines()
        .map(strip_timestamp)
        .find(|l| l.contains("kthread timer wakeup didn't happen"))
        .map(|l| {
            let l = l.trim_start_matches("rcu: ");
            l.split(" g")
                .next()
                .unwrap_or(l)
                .trim_end_matches('!')
                .to_string()
        })
}

/// A run the no-progress watchdog stopped: how long it made no progress,
/// and the blocked task the kernel reported first, named the way syzbot
/// names hung tasks (by the frame it is blocked in), with its stack.
fn stalled(console: &str, stall: crate::guest::vm::stall::Stall) -> (String, Option<String>) {
    let head = format!(
        "no progress for {} s (the workload's touches stayed at {}): the guest was stopped",
        stall.idle.as_secs(),
        stall.touches
    );
    let blocked = crate::results::splat::detect(console)
        .into_iter()
        .find(|s| s.kind == crate::results::splat::SplatKind::HungTask);
    match blocked {
        Some(s) => (format!("{head}; {}", s.title), Some(s.excerpt)),
        None => (
            format!("{head}; no blocked task on the console (a kernel without CONFIG_DETECT_HUNG_TASK, or no task in D state)"),
            None,
        ),
    }
}

pub fn classify(run: &VmRun) -> Classification {
    let result = |outcome, reason: String, crash_report| Classification {
        outcome,
        reason,
        crash_report,
    };
    if run.accel_failed {
        let line =
            crate::guest::vm::accel_failure(&run.qemu_stderr).unwrap_or("accelerator failed");
        return result(Outcome::InfraFailure, format!("QEMU: {line}"), None);
    }
    if run.console_flooded {
        // The kernel's own output: it printed past the cap, so it was
        // stopped before it filled the host's disk.
        return result(
            Outcome::KernelCrash,
            format!(
                "the guest's console passed {} MiB (MAX_CONSOLE_BYTES) and the guest was stopped",
                crate::guest::vm::MAX_CONSOLE_BYTES >> 20
            ),
            None,
        );
    }
    if !run.connected && !run.timed_out {
        let first = run
            .qemu_stderr
            .lines()
            .next()
            .unwrap_or("no message")
            .to_string();
        return result(
            Outcome::InfraFailure,
            format!("QEMU exited before starting the guest: {first}"),
            None,
        );
    }
    let hello = run
        .records
        .iter()
        .any(|r| matches!(r.record, Record::Hello { .. }));
    let done = run.records.iter().find_map(|r| match &r.record {
        Record::Done { ok, .. } => Some(*ok),
        _ => None,
    });
    // A guest that panics or powers off makes QEMU exit; only someone
    // outside (the OOM killer, an operator, a dying host) kills it with a
    // signal, and mmci's own kills are timeouts. Not the kernel's fault.
    // (mmci also ends a stalled, flooding or accelerator-failed run itself,
    // with SIGTERM: QEMU exits on it, but the bwrap around QEMU dies of it.)
    let killed_by_mmci =
        run.timed_out || run.stalled.is_some() || run.console_flooded || run.accel_failed;
    if done.is_none() && !killed_by_mmci {
        if let Some(sig) = qemu_signal(run) {
            return result(
                Outcome::InfraFailure,
                format!("QEMU was killed by signal {sig} from outside mmci"),
                None,
            );
        }
    }
    // A run that completed is completed: what its console shows on the
    // way (a WARNING, a BUG: sleeping function called ...) is in its
    // splats, which the analysis weighs against the baseline.
    let crash = if done == Some(true) {
        None
    } else {
        find_crash(&run.console)
    };
    if !hello {
        if crash.is_none() && run.timed_out {
            if let Some(line) = starved_timer(&run.console) {
                return result(
                    Outcome::InfraFailure,
                    format!(
                        "the guest's timer never fired before PID 1 started ({line}): an emulated CPU starved by a busy host"
                    ),
                    None,
                );
            }
        }
        let reason = match (&crash, run.timed_out) {
            (Some((line, _)), _) => line.clone(),
            (None, true) if run.console.trim().is_empty() => {
                "no console output before the timeout: the kernel never started".to_string()
            }
            (None, false) if run.console.trim().is_empty() => {
                "the guest reset before the kernel printed anything".to_string()
            }
            (None, true) => "no record from the guest before the timeout".to_string(),
            (None, false) => "the guest ended without a record from PID 1".to_string(),
        };
        return result(Outcome::BootFailure, reason, crash.map(|(_, r)| r));
    }
    if let (Some(stall), None) = (run.stalled, done) {
        let (reason, report) = stalled(&run.console, stall);
        return result(Outcome::Hang, reason, report);
    }
    if let Some((line, report)) = crash {
        return result(Outcome::KernelCrash, line, Some(report));
    }
    match done {
        Some(true) => {
            let records: Vec<Record> = run.records.iter().map(|r| r.record.clone()).collect();
            if let Some(why) = crate::scenario::registry::kernel_check(&records) {
                return result(Outcome::CheckFailed, why, None);
            }
            match crate::scenario::registry::not_reproduced(&records) {
                Some(why) => result(Outcome::NotReproduced, why, None),
                None => result(Outcome::Completed, "completed".into(), None),
            }
        }
        Some(false) => {
            let why = run
                .records
                .iter()
                .find_map(|r| match &r.record {
                    Record::Error { stage, message } => Some(format!("{stage}: {message}")),
                    _ => None,
                })
                .unwrap_or_else(|| "guest-init reported failure".into());
            result(Outcome::GuestError, why, None)
        }
        None if run.timed_out => result(
            Outcome::Hang,
            "PID 1 started but the run did not finish before the timeout".into(),
            None,
        ),
        None => result(
            Outcome::KernelCrash,
            "the guest stopped before its last record, with no crash message".into(),
            None,
        ),
    }
}

/// Why a run's records cannot be judged as the job the host sent: the
/// guest's `Hello` echoes another job. The host decides which rules judge
/// a run (scenario B's MGLRU cell has its own preconditions and hides the
/// classic figures); a guest, which runs the candidate kernel, must not
/// choose them by reporting a different job. None: the echo matches, or
/// there is no `Hello` (the run failed earlier, classified on its own).
pub fn job_echo_mismatch(sent: &GuestJob, records: &[Record]) -> Option<String> {
    let echoed = records.iter().find_map(|r| match r {
        Record::Hello { job, .. } => Some(job),
        _ => None,
    })?;
    (echoed != sent).then(|| {
        "the guest reported a job other than the one sent (its records are not judged)".to_string()
    })
}

/// The signal that killed QEMU, if one did. Inside bwrap (see
/// [`crate::guest::vm::Confinement`]) mmci waits for bwrap, which exits
/// with 128 + the signal when QEMU was killed by one (QEMU itself exits
/// with 0 or 1).
fn qemu_signal(run: &crate::guest::vm::VmRun) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    let status = run.exit?;
    if let Some(sig) = status.signal() {
        return Some(sig);
    }
    match (&run.confinement, status.code()) {
        (crate::guest::vm::Confinement::Bwrap { .. }, Some(code))
            if (129..=128 + 64).contains(&code) =>
        {
            Some(code - 128)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_job_echo_other_than_the_job_sent_is_named() {
        let sent = GuestJob {
            scenario: mmci_record::Scenario::NoioVerity,
            ..GuestJob::default()
        };
        let hello = |job: GuestJob| Record::Hello {
            kernel_release: "6.12".into(),
            arch: "x86_64".into(),
            cpus: 2,
            mem_total_kb: 1,
            uptime_ms: 1,
            job,
        };
        let forged = GuestJob {
            noio_mglru: true,
            ..sent.clone()
        };
        // (records, mismatch named)
        for (records, named) in [
            (vec![hello(sent.clone())], false),
            (vec![], false),
            (vec![hello(forged)], true),
            (vec![hello(GuestJob::default())], true),
        ] {
            assert_eq!(
                job_echo_mismatch(&sent, &records).is_some(),
                named,
                "{records:?}"
            );
        }
    }

    use super::*;
    use crate::guest::vm::TimedRecord;
    use mmci_record::GuestJob;
    use std::time::Duration;

    fn run(records: Vec<Record>, console: &str, timed_out: bool) -> VmRun {
        VmRun {
            records: records
                .into_iter()
                .map(|record| TimedRecord { at_ms: 0, record })
                .collect(),
            bad_lines: vec![],
            exit: None,
            timed_out,
            accel_failed: false,
            connected: true,
            console_flooded: false,
            console: console.into(),
            qemu_stderr: String::new(),
            lifetime: Duration::ZERO,
            first_record: None,
            stalled: None,
            confinement: crate::guest::vm::Confinement::Bwrap {
                run_as: "as uid 999 (mmci-sandbox)".into(),
            },
        }
    }

    fn hello() -> Record {
        Record::Hello {
            kernel_release: "6.12".into(),
            arch: "x86_64".into(),
            cpus: 2,
            mem_total_kb: 1,
            uptime_ms: 1,
            job: GuestJob::default(),
        }
    }

    fn done(ok: bool) -> Record {
        Record::Done { ok, uptime_ms: 2 }
    }

    #[test]
    fn completed() {
        let c = classify(&run(vec![hello(), done(true)], "boot log", false));
        assert_eq!(c.outcome, Outcome::Completed);
    }

    #[test]
    fn a_flooded_console_is_the_kernels_failure_whatever_else_it_did() {
        // Even a run that got as far as its Done record: the guest was
        // stopped for its output, not for its work.
        let mut r = run(vec![hello(), done(true)], "boot log", false);
        r.console_flooded = true;
        let c = classify(&r);
        assert_eq!(c.outcome, Outcome::KernelCrash);
        assert_eq!(
            c.reason,
            "the guest's console passed 256 MiB (MAX_CONSOLE_BYTES) and the guest was stopped"
        );
    }

    #[test]
    fn isolation_counters_left_after_the_workload_fail_the_run() {
        let balance = |anon| {
            Record::Balance(mmci_record::Balance {
                nr_isolated_anon: anon,
                cgroup_removed: true,
                ..Default::default()
            })
        };
        // (nr_isolated_anon after the workload, outcome)
        let cases = [(0, Outcome::Completed), (3, Outcome::CheckFailed)];
        for (anon, want) in cases {
            let c = classify(&run(vec![hello(), balance(anon), done(true)], "", false));
            assert_eq!(c.outcome, want, "{anon}");
        }
        let c = classify(&run(vec![hello(), balance(3), done(true)], "", false));
        assert_eq!(c.outcome.name(), "failed check");
        assert_eq!(
            c.reason,
            "nr_isolated_anon 3 after the workload exited: isolation accounting does not balance"
        );
    }

    #[test]
    fn scenario_b_without_its_preconditions_is_not_reproduced() {
        let pre = |below_min| Record::Preconditions {
            swappiness: 60,
            lru_gen: "0x0000".into(),
            at_start: mmci_record::MemState {
                anon: 400 << 20,
                inactive_anon: 400 << 20,
                inactive_file: 2 << 20,
                swapcached: 0,
                swap_total_kb: 1000,
                swap_free_kb: 900,
                mem_free_kb: 0,
            },
            at_end: mmci_record::MemState {
                swap_free_kb: 800,
                ..Default::default()
            },
            watermark: mmci_record::WatermarkStat {
                samples: 10,
                below_min,
                lowest_margin_pages: Some(5),
            },
        };
        let noio = Record::ReclaimCall(mmci_record::ReclaimCall {
            gfp_flags: crate::scenario::noio::DM_BUFIO_GFP.into(),
            min_priority: Some(0),
            swapcache_max_bytes: Some(0),
            anon_min_bytes: Some(400 << 20),
            ..Default::default()
        });
        // No zoneinfo reading under min and no snapshots (so no allocstall).
        let c = classify(&run(
            vec![hello(), noio.clone(), pre(0), done(true)],
            "",
            false,
        ));
        assert_eq!(c.outcome, Outcome::NotReproduced);
        assert_eq!(c.outcome.name(), "not reproduced");
        assert!(
            c.reason.starts_with("free memory never went under"),
            "{}",
            c.reason
        );
        assert!(!c.outcome.retryable());
        let c = classify(&run(vec![hello(), pre(1), done(true)], "", false));
        assert_eq!(
            c.reason,
            "no dm-bufio direct-reclaim call (GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY|__GFP_NOMEMALLOC)"
        );
        let c = classify(&run(vec![hello(), noio, pre(1), done(true)], "", false));
        assert_eq!(c.outcome, Outcome::Completed);
    }

    #[test]
    fn no_pid1_is_a_boot_failure_with_the_panic_line() {
        let console = "Run /init as init process\nFailed to execute /init (error -8)\nKernel panic - not syncing: No working init found.\nCPU: 0 PID: 1\n";
        let c = classify(&run(vec![], console, false));
        assert_eq!(c.outcome, Outcome::BootFailure);
        assert_eq!(
            c.reason,
            "Kernel panic - not syncing: No working init found."
        );
        assert!(c.crash_report.unwrap().contains("CPU: 0 PID: 1"));
        let c = classify(&run(vec![], "", true));
        assert_eq!(c.outcome, Outcome::BootFailure);
        assert!(
            c.reason.starts_with("no console output before the timeout"),
            "{}",
            c.reason
        );
        let c = classify(&run(vec![], "", false));
        assert_eq!(
            c.reason,
            "the guest reset before the kernel printed anything"
        );
        let c = classify(&run(vec![], "Linux version 6.12\n", true));
        assert_eq!(c.reason, "no record from the guest before the timeout");
    }

    #[test]
    fn a_timer_that_never_fires_before_pid1_is_the_host() {
        // From a real boot: TCG, 2 vCPUs, a 2-core host at load 5.
        let starved = "\
[    2.189220] clocksource: Switched to clocksource tsc
[   22.874223] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:
[   22.874223] rcu: \t1-...!: (0 ticks this GP) idle=8888/0/0x0 softirq=3/3 fqs=0 (false positive?)
[   22.874223] rcu: rcu_sched kthread timer wakeup didn't happen for 5251 jiffies! g-1183 f0x0 RCU_GP_WAIT_FQS(5) ->state=0x402
[   22.874223] rcu: \tPossible timer handling issue on cpu=1 timer-softirq=3
";
        let c = classify(&run(vec![], starved, true));
        assert_eq!(c.outcome, Outcome::InfraFailure);
        assert!(c.outcome.retryable());
        assert_eq!(
            c.reason,
            "the guest's timer never fired before PID 1 started (rcu_sched kthread timer wakeup didn't happen for 5251 jiffies): an emulated CPU starved by a busy host"
        );
        // (console, timed out, hello, outcome): only a timeout before PID 1
        // with RCU's timer diagnosis is the host's.
        let panic = format!("{starved}Kernel panic - not syncing: hung\n");
        let cases = [
            (starved.to_string(), false, false, Outcome::BootFailure),
            (panic, true, false, Outcome::BootFailure),
            (starved.to_string(), true, true, Outcome::Hang),
            (
                "[   22.8] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:\n".to_string(),
                true,
                false,
                Outcome::BootFailure,
            ),
        ];
        for (console, timed_out, with_hello, want) in cases {
            let records = if with_hello { vec![hello()] } else { vec![] };
            let c = classify(&run(records, &console, timed_out));
            assert_eq!(c.outcome, want, "{console} timed_out={timed_out}");
        }
    }

    #[test]
    fn timestamps_are_not_part_of_the_reason() {
        assert_eq!(
            strip_timestamp("[    1.807686] Kernel panic - not syncing: x"),
            "Kernel panic - not syncing: x"
        );
        assert_eq!(strip_timestamp("[ok] fine"), "[ok] fine");
        assert_eq!(strip_timestamp("  plain  "), "plain");
    }

    #[test]
    fn oops_after_pid1_is_a_crash() {
        let console = "ok\nBUG: kernel NULL pointer dereference, address: 0000000000000008\nOops: 0002 [#1] SMP\n";
        let c = classify(&run(vec![hello()], console, false));
        assert_eq!(c.outcome, Outcome::KernelCrash);
        assert!(c.reason.starts_with("BUG: kernel NULL pointer"));
    }

    #[test]
    fn a_splat_on_a_completed_run_leaves_it_completed() {
        let console = include_str!("../../tests/fixtures/splats/sleeping_and_atomic.txt");
        let c = classify(&run(vec![hello(), done(true)], console, false));
        assert_eq!(c.outcome, Outcome::Completed);
        assert_eq!(c.crash_report, None);
    }

    #[test]
    fn a_crash_report_has_its_call_trace() {
        let console = include_str!("../../tests/fixtures/splats/list_add_bug.txt");
        let c = classify(&run(vec![hello()], console, false));
        assert_eq!(c.outcome, Outcome::KernelCrash);
        assert_eq!(c.reason, "kernel BUG at lib/list_debug.c:27!");
        let report = c.crash_report.unwrap();
        assert!(
            report.starts_with("list_add corruption. next is NULL."),
            "{report}"
        );
        assert!(
            report.contains("\n nfs_uuid_is_local+0xba/0x110\n"),
            "{report}"
        );
        assert!(report.ends_with(" </TASK>"), "{report}");
    }

    #[test]
    fn silence_after_pid1_is_a_hang_or_a_crash() {
        assert_eq!(
            classify(&run(vec![hello()], "", true)).outcome,
            Outcome::Hang
        );
        assert_eq!(
            classify(&run(vec![hello()], "", false)).outcome,
            Outcome::KernelCrash
        );
    }

    /// The no-progress watchdog's kill: a hang, named by the first blocked
    /// task the kernel reported, with its stack; or saying there was none.
    #[test]
    fn a_run_stopped_without_progress_is_a_hang_with_its_blocked_task() {
        let stall = crate::guest::vm::stall::Stall {
            idle: Duration::from_secs(21),
            touches: 4096,
        };
        let blocked = "[   31.5] INFO: task workload:61 blocked for more than 10 seconds.\n\
             [   31.5] task:workload        state:D stack:0     pid:61    tgid:59    ppid:57     flags:0x00004002\n\
             [   31.5] Call Trace:\n[   31.5]  <TASK>\n[   31.5]  __schedule+0x3f2/0xb90\n\
             [   31.5]  schedule+0x27/0xf0\n[   31.5]  shrink_folio_list+0x6b/0x1310\n[   31.5]  </TASK>\n";
        let cases = [
            (
                blocked,
                "no progress for 21 s (the workload's touches stayed at 4096): the guest was stopped; INFO: task hung in shrink_folio_list",
                true,
            ),
            (
                "",
                "no progress for 21 s (the workload's touches stayed at 4096): the guest was stopped; no blocked task on the console (a kernel without CONFIG_DETECT_HUNG_TASK, or no task in D state)",
                false,
            ),
        ];
        for (console, reason, with_stack) in cases {
            let mut r = run(vec![hello()], console, false);
            r.stalled = Some(stall);
            let c = classify(&r);
            assert_eq!(c.outcome, Outcome::Hang);
            assert_eq!(c.reason, reason);
            assert_eq!(c.crash_report.is_some(), with_stack);
            if with_stack {
                assert!(c
                    .crash_report
                    .unwrap()
                    .contains(" shrink_folio_list+0x6b/0x1310"));
            }
        }
    }

    #[test]
    fn guest_error_names_the_step() {
        let err = Record::Error {
            stage: "dm-delay".into(),
            message: "DM_TABLE_LOAD: Invalid argument".into(),
        };
        let c = classify(&run(vec![hello(), err, done(false)], "", false));
        assert_eq!(c.outcome, Outcome::GuestError);
        assert_eq!(c.reason, "dm-delay: DM_TABLE_LOAD: Invalid argument");
    }

    #[test]
    fn broken_kvm_is_infra() {
        let mut r = run(vec![], "", false);
        r.accel_failed = true;
        r.qemu_stderr = "KVM internal error. Suberror: 1\nemulation failure\n".into();
        let c = classify(&r);
        assert_eq!(c.outcome, Outcome::InfraFailure);
        assert!(c.outcome.retryable());
        assert!(c.reason.contains("KVM internal error"));
    }

    #[test]
    fn qemu_killed_from_outside_is_an_infra_failure() {
        use std::os::unix::process::ExitStatusExt;
        let hello = Record::Hello {
            kernel_release: "6.12".into(),
            arch: "x86_64".into(),
            cpus: 1,
            mem_total_kb: 1,
            uptime_ms: 1,
            job: GuestJob::default(),
        };
        // (records, exit, timed out, expected outcome)
        let killed = Some(std::process::ExitStatus::from_raw(libc::SIGKILL));
        let cases = [
            (vec![], killed, false, Outcome::InfraFailure),
            (vec![hello.clone()], killed, false, Outcome::InfraFailure),
            // Our own kill after the timeout stays a hang.
            (vec![hello.clone()], killed, true, Outcome::Hang),
            // Exit 0 without the last record: the guest stopped, a crash.
            (
                vec![hello],
                Some(std::process::ExitStatus::from_raw(0)),
                false,
                Outcome::KernelCrash,
            ),
        ];
        for (records, exit, timed_out, want) in cases {
            let mut r = run(records, "", timed_out);
            r.exit = exit;
            assert_eq!(classify(&r).outcome, want, "{exit:?} timed_out={timed_out}");
        }
    }
}
