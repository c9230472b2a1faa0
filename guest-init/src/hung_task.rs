//! The kernel's hung-task detector, set for runs of tens of seconds: a task
//! asleep uninterruptibly for 10 s is reported on the console with its
//! stack ("INFO: task ... blocked for more than 10 seconds."), where the
//! host finds it as a splat. Only on kernels built with
//! CONFIG_DETECT_HUNG_TASK (the debug flavour): elsewhere the files are
//! absent and nothing is set.

use std::time::Instant;

use mmci_record::Record;

/// Seconds of uninterruptible sleep before a task is reported. The kernel's
/// default (120 s) is longer than a whole run (20 to 60 s of workload), so
/// it could never fire. 10 s is long enough that no healthy run has a task
/// that long in D state (a swap-in through dm-delay waits 50 ms per I/O),
/// and short enough that the report is on the console well before the
/// host gives up on a run that stopped progressing (its no-progress window,
/// 20 s, see orchestrator/src/guest/vm/stall.rs).
pub const TIMEOUT_SECS: u32 = 10;
/// How often khungtaskd looks: by default every TIMEOUT_SECS, so a task is
/// reported between 10 and 20 s after it blocked; every 2 s, between 10
/// and 12 s.
pub const CHECK_INTERVAL_SECS: u32 = 2;

const TIMEOUT: &str = "/proc/sys/kernel/hung_task_timeout_secs";
const CHECK_INTERVAL: &str = "/proc/sys/kernel/hung_task_check_interval_secs";

/// Sets the detector's timeout and interval if the kernel has it; the
/// Setup record says what was set, or that the kernel has no detector.
pub fn arm() -> Record {
    let t0 = Instant::now();
    let detail = if !std::path::Path::new(TIMEOUT).exists() {
        "no hung-task detector (CONFIG_DETECT_HUNG_TASK is off)".to_string()
    } else {
        let set = |path: &str, value: u32| match std::fs::write(path, value.to_string()) {
            Ok(()) => format!("{value}"),
            Err(e) => format!("not set ({e})"),
        };
        format!(
            "hung_task_timeout_secs={} hung_task_check_interval_secs={}",
            set(TIMEOUT, TIMEOUT_SECS),
            set(CHECK_INTERVAL, CHECK_INTERVAL_SECS)
        )
    };
    Record::Setup {
        step: "hung-task".into(),
        detail,
        ms: t0.elapsed().as_millis() as u64,
    }
}
