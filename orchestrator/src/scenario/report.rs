//! Text the scenarios' run-report lines share: the swap disk, on/off,
//! sizes and durations.

use mmci_record::{GuestJob, SwapBackend, ThpMode};

use crate::scenario::def::GuestShape;

pub(crate) fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// `swap 256 MiB on zram`, `swap 256 MiB on dm-delay 50 ms`, `no swap`.
pub(crate) fn swap_text(r: &GuestShape, job: &GuestJob) -> String {
    match job.swap {
        _ if !job.swap.enabled() || r.swap_mb == 0 => "no swap".to_string(),
        SwapBackend::DmDelay if job.swap_delay_ms > 0 => format!(
            "swap {} MiB on dm-delay {} ms",
            r.swap_mb, job.swap_delay_ms
        ),
        SwapBackend::Zram => format!("swap {} MiB on zram", r.swap_mb),
        _ => format!("swap {} MiB, no delay", r.swap_mb),
    }
}

/// `, THP never` as the guest set it; nothing for a job that left the
/// kernel's mode (recorded before guest-init set it): the reproduce
/// section says what the kernel boots with.
pub(crate) fn thp_text(mode: ThpMode) -> String {
    match mode {
        ThpMode::Kernel => String::new(),
        m => format!(", {THP_SET} {m}"),
    }
}

/// How a guest line names the THP mode the guest set.
pub const THP_SET: &str = "THP";

pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

pub(crate) fn ms_f(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

pub(crate) fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

/// The guest and job lines of a scenario run in a memory cgroup with the
/// built-in workload's shape (scenario A, a script in its set-up, a probe).
pub fn cgroup_guest(r: &GuestShape, job: &GuestJob) -> String {
    let mut out = String::new();
    let swap = swap_text(r, job);
    let memcg = if job.memcg_max_mb == 0 {
        "no memcg limit".to_string()
    } else {
        format!("memcg {} MiB", job.memcg_max_mb)
    };
    out.push_str(&format!(
        "guest:   {}, {} vCPUs, {} MiB, {memcg}, {swap}, MGLRU {}{}\n",
        r.arch,
        r.vcpus,
        r.memory_mb,
        on_off(job.mglru),
        thp_text(job.thp)
    ));
    out.push_str(&format!(
        "job:     {}: {} threads, {} MiB working set, {} s{}\n",
        job.scenario,
        job.threads,
        job.working_set_mb,
        job.duration_s,
        job_shape_text(job)
    ));
    out
}

/// `, in each of 16 memcgs, a 24 MiB neighbour, SIGKILL at 10 s`: scenario
/// A's shape where it is not the default one.
pub(crate) fn job_shape_text(job: &GuestJob) -> String {
    let mut out = String::new();
    if job.memcgs > 1 {
        out += &format!(", in each of {} memcgs", job.memcgs);
    }
    if job.neighbour_mb > 0 {
        out += &format!(", a {} MiB neighbour memcg", job.neighbour_mb);
    }
    if job.kill_after_s > 0 {
        out += &format!(", SIGKILL at {} s", job.kill_after_s);
    }
    out
}
