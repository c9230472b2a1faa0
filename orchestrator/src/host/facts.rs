//! Facts about the host mmci runs on, read in one place: its cores (what
//! the scheduler lets this process use), its RAM (MemTotal) and its name.
//! No command reads /proc or asks std for these itself. (No stage needs the
//! CPU model.)

/// The cores this process may use (`std::thread::available_parallelism`),
/// `None` when the host does not say.
pub fn cores() -> Option<usize> {
    std::thread::available_parallelism().ok().map(|n| n.get())
}

/// MemTotal of this host in MiB (0 if /proc is unreadable).
pub fn memory_mb() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// The host's name (`/proc/sys/kernel/hostname`; empty if unreadable).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
