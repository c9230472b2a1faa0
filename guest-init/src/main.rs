//! mmci's guest PID 1. It mounts what the kernel interfaces need, reads its
//! job, sets up the scenario (MGLRU, dm-delay swap, memory cgroup,
//! tracepoints), runs the workload in a child process, streams JSON records to
//! the host over a virtio-serial port and powers off, whatever happens.
//!
//! The same binary is the workload: `guest-init workload ...` (see workload.rs).

mod app;
mod balance;
mod blockdev;
mod cgroup;
mod counters;
mod direct_io;
mod dm;
mod hung_task;
mod mounts;
mod port;
mod procfs;
mod reclaim_trace;
mod rootfs;
mod sampler;
mod scenario;
mod step;
mod swap;
mod sys;
mod thp;
mod trace;
mod verity;
mod workload;
mod zram;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use mmci_record::{GuestJob, Record, JOB_PATH, RECORD_PORT_NAME};

use port::RecordPort;

/// The record port, once open, so that the panic hook can report on it.
static PORT: OnceLock<Arc<RecordPort>> = OnceLock::new();

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("workload") => std::process::exit(workload::main(&args[2..])),
        Some("app") => std::process::exit(app::main(&args[2..])),
        _ => {}
    }
    if std::process::id() != 1 {
        eprintln!(
            "guest-init: runs as PID 1 in an mmci guest (or as `guest-init workload ...` or `guest-init app ...`)"
        );
        std::process::exit(2);
    }
    std::panic::set_hook(Box::new(|info| {
        eprintln!("mmci guest-init: panic: {info}");
        if let Some(port) = PORT.get() {
            port.send(Record::Error {
                stage: "panic".into(),
                message: info.to_string(),
            });
            port.send(Record::Done {
                ok: false,
                uptime_ms: sys::uptime_ms(),
            });
        }
        sys::power_off();
    }));
    pid1();
    sys::power_off();
}

/// Reports a failed step on the console and, when possible, to the host.
fn fail(stage: &str, message: String) {
    eprintln!("mmci guest-init: {stage}: {message}");
    if let Some(port) = PORT.get() {
        port.send(Record::Error {
            stage: stage.into(),
            message,
        });
        port.send(Record::Done {
            ok: false,
            uptime_ms: sys::uptime_ms(),
        });
    }
}

fn read_job() -> Result<GuestJob, String> {
    let text = std::fs::read_to_string(JOB_PATH).map_err(|e| format!("{JOB_PATH}: {e}"))?;
    let mut job: GuestJob = serde_json::from_str(&text).map_err(|e| format!("{JOB_PATH}: {e}"))?;
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    job.apply_cmdline(&cmdline)
        .map_err(|e| format!("kernel command line: {e}"))?;
    Ok(job)
}

fn pid1() {
    if let Err(e) = mounts::mount_all() {
        return fail("mount", e.to_string());
    }
    let port = match port::find_port(Path::new("/sys/class/virtio-ports"), RECORD_PORT_NAME)
        .and_then(|p| RecordPort::open(&p))
    {
        Ok(p) => Arc::new(p),
        Err(e) => return fail("record-port", e.to_string()),
    };
    let _ = PORT.set(port.clone());

    let job = match read_job() {
        Ok(job) => job,
        Err(e) => return fail("job", e),
    };
    port.send(scenario::hello(&job));
    port.send(hung_task::arm());
    let ok = match scenario::run(&job, &port) {
        Ok(()) => true,
        Err(e) => {
            port.send(Record::Error {
                stage: e.stage.to_string(),
                message: e.message,
            });
            false
        }
    };
    sys::reap_orphans();
    port.send(Record::Done {
        ok,
        uptime_ms: sys::uptime_ms(),
    });
}
