//! The records the guest streams back: one [`Record`] per line, and the
//! payloads its variants carry.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::GuestJob;

/// Before or after the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Before,
    After,
}

/// One line of /proc/pressure/memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    pub total_us: u64,
}

/// /proc/pressure/memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Psi {
    pub some: PsiLine,
    pub full: PsiLine,
}

/// Throttling seen through the mm_vmscan_throttled tracepoint, per reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThrottleStat {
    pub count: u64,
    pub usec_delayed_sum: u64,
    pub usec_delayed_max: u64,
    /// Sleeps that ended before their usec_timeout (woken, not timed out);
    /// None in records from before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_wakes: Option<u64>,
}

/// What PID 1 found once the workload had exited: the vmstat counters
/// folded by /proc/sys/vm/stat_refresh, and the workload's cgroup removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Balance {
    /// /proc/vmstat after stat_refresh, at the last reading (re-read until
    /// both are 0, for up to [`Balance::waited_ms`]).
    pub nr_isolated_anon: u64,
    pub nr_isolated_file: u64,
    /// How long it re-read before both were 0 (or it gave up).
    pub waited_ms: u64,
    /// The kernel's `vmstat_refresh: <counter> <negative value>` warnings
    /// (from /dev/kmsg), as `<counter> <value>`.
    pub negative: Vec<String>,
    /// Why stat_refresh or /dev/kmsg could not be used, if so: the counters
    /// are then the unfolded ones and negative ones may go unseen.
    pub refresh_error: Option<String>,
    /// rmdir of the workload's cgroup succeeded.
    pub cgroup_removed: bool,
    pub cgroup_error: Option<String>,
}

/// Which of a script's output streams a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How the workload process ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadExit {
    /// Exit code if it exited.
    pub code: Option<i32>,
    /// Signal number if it was killed.
    pub signal: Option<i32>,
    /// The memory cgroup's oom_kill count rose while it ran and it died of SIGKILL.
    pub oom_killed: bool,
    /// Scenario A with `kill_after_s`: ms from PID 1's SIGKILL to the
    /// workload reaped (every thread out of reclaim and exited). None when
    /// it was not killed by PID 1 (or exited before the kill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_after_kill_ms: Option<u64>,
}

/// Scenario B: memory state relevant to its preconditions, at one moment.
/// Fields missing from older records read as 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemState {
    /// memory.stat of the hog's cgroup, in bytes: all its anon memory
    /// (active and inactive).
    pub anon: u64,
    pub inactive_anon: u64,
    pub inactive_file: u64,
    /// Anon pages of the cgroup that are also in the swap cache (bytes).
    pub swapcached: u64,
    /// /proc/meminfo, in kB.
    pub swap_total_kb: u64,
    pub swap_free_kb: u64,
    pub mem_free_kb: u64,
}

/// Scenario B: /proc/zoneinfo polled while the readers ran.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatermarkStat {
    /// Readings of /proc/zoneinfo.
    pub samples: u64,
    /// Readings in which some zone had fewer free pages than its min watermark.
    pub below_min: u64,
    /// Lowest `free - min` over zones and readings, in pages (negative: under
    /// min); None before the first reading.
    pub lowest_margin_pages: Option<i64>,
}

/// Scenario B: one direct-reclaim call, from mm_vmscan_direct_reclaim_begin
/// to _end of one task, with the mm_vmscan_lru_shrink_inactive events that
/// task emitted in between.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimCall {
    pub pid: u32,
    pub comm: String,
    /// Trace timestamp of the begin event, in µs.
    pub begin_us: u64,
    /// end - begin timestamps, in µs.
    pub latency_us: u64,
    /// As the kernel prints them: `GFP_NOIO|__GFP_NOWARN|...`.
    pub gfp_flags: String,
    pub order: u32,
    /// From the end event.
    pub nr_reclaimed: u64,
    /// Lowest reclaim priority of its shrink_inactive events (12 is the
    /// first pass, 0 the last); None when it isolated nothing from an LRU.
    pub min_priority: Option<u32>,
    pub anon_scanned: u64,
    pub file_scanned: u64,
    pub anon_reclaimed: u64,
    pub file_reclaimed: u64,
    /// Anon nr_scanned of its shrink_inactive events at priority 0.
    pub anon_scanned_prio0: u64,
    /// Its mm_vmscan_lru_shrink_inactive events.
    pub shrink_events: u32,
    /// Its scanning per reclaim round and priority, in order (below).
    #[serde(default)]
    pub steps: Vec<ReclaimStep>,
    /// Distinct memcgs whose lruvec it shrank (from the shrink_slab kprobe,
    /// which fires once per memcg visited); None without the probe.
    #[serde(default)]
    pub memcgs_visited: Option<u32>,
    /// The tracked lruvec (the hog's memcg) during the call, from the
    /// guest's memory.stat readings written into the trace: the most swap
    /// cache and the least anon, in bytes; None without a reading.
    #[serde(default)]
    pub swapcache_max_bytes: Option<u64>,
    #[serde(default)]
    pub anon_min_bytes: Option<u64>,
    /// trace_pipe said `[LOST n EVENTS]` while the call was open: its
    /// sums may be short and its rounds mis-split.
    #[serde(default)]
    pub events_lost: bool,
    /// Under MGLRU: its mm_vmscan_lru_isolate events (scan_folios()), by
    /// type. None where the event was not traced (every classic-LRU run):
    /// written out only when traced, so older records keep their form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolate: Option<IsolateSums>,
    /// Under MGLRU: entries into shrink_lruvec() (a kprobe), the classic
    /// LRU's per-lruvec pass whose get_scan_count() holds the RFC's
    /// branch. None without the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classic_passes: Option<u32>,
}

/// One direct-reclaim call's mm_vmscan_lru_isolate events, summed per
/// type. Under MGLRU each is one scan_folios() pass over the oldest
/// generation: `scanned` folios looked at, `taken` isolated for
/// shrink_folio_list(), `skipped` left where they were because
/// isolate_folio() refused them (without __GFP_IO: dirty, or anon not in
/// the swap cache); the rest were sorted into younger generations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IsolateSums {
    pub anon_passes: u32,
    pub anon_scanned: u64,
    pub anon_skipped: u64,
    pub anon_taken: u64,
    pub file_passes: u32,
    pub file_scanned: u64,
    pub file_skipped: u64,
    pub file_taken: u64,
}

/// One priority level of one reclaim round of a direct-reclaim call.
/// do_try_to_free_pages() lowers the priority from 12 to 0 and may start
/// over with a full memcg walk: a priority that goes up starts a new round.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReclaimStep {
    /// 1 for the first walk, 2 for the full-walk retry, ...
    pub round: u32,
    pub priority: u32,
    /// nr_scanned of mm_vmscan_lru_shrink_inactive, anon and file LRUs.
    pub anon_scanned: u64,
    pub file_scanned: u64,
    /// nr_reclaimed of those events.
    pub reclaimed: u64,
    /// nr_taken of mm_vmscan_lru_shrink_active (folios taken off the
    /// active lists to deactivate), anon and file.
    pub anon_active_taken: u64,
    pub file_active_taken: u64,
    /// shrink_slab() kprobe hits: memcgs visited at this priority.
    pub memcg_visits: u32,
    /// Trace timestamps of its first and last event, in µs.
    pub first_us: u64,
    pub last_us: u64,
}

/// One record streamed by the guest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// First record: guest-init is running and knows its job.
    Hello {
        kernel_release: String,
        arch: String,
        cpus: u32,
        mem_total_kb: u64,
        /// Time since the kernel started, at the moment of this record.
        uptime_ms: u64,
        job: GuestJob,
    },
    /// A set-up step finished (mounts, dm-delay, swap, cgroup, tracing...).
    Setup {
        step: String,
        detail: String,
        ms: u64,
    },
    /// Counters before or after the workload.
    Snapshot {
        phase: Phase,
        vmstat: BTreeMap<String, u64>,
        memcg_events: BTreeMap<String, u64>,
        memcg_stat: BTreeMap<String, u64>,
        psi_memory: Option<Psi>,
    },
    /// One point of the time series (one per report interval).
    Sample {
        t_ms: u64,
        /// Highest nr_isolated_anon seen during the interval.
        nr_isolated_anon_max: u64,
        /// Highest nr_isolated_file seen during the interval.
        nr_isolated_file_max: u64,
        /// Highest nr_isolated_anon + nr_isolated_file in one reading.
        nr_isolated_total_max: u64,
        /// The workload's touch counter at the end of the interval.
        touches: u64,
        memcg_current_bytes: u64,
        mem_free_kb: u64,
    },
    /// mm_vmscan_throttled events by reason (e.g. VMSCAN_THROTTLE_ISOLATED).
    Throttle {
        by_reason: BTreeMap<String, ThrottleStat>,
        /// Events the trace buffer dropped (overrun), summed over CPUs.
        lost_events: u64,
        /// Scenario A: the VMSCAN_THROTTLE_ISOLATED waits by the sleeping
        /// task's name (the workload's threads are `mmci-w<memcg>`, the
        /// neighbour's `mmci-nb`; kernel threads by their comm). Empty in
        /// records from before it was kept.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        isolated_by_task: BTreeMap<String, ThrottleStat>,
    },
    /// The workload's result.
    Workload {
        touches: u64,
        elapsed_ms: u64,
        exit: WorkloadExit,
    },
    /// Scenario A: the counters once the workload had exited.
    Balance(Balance),
    /// Scenario B: its preconditions as measured, at the readers' start and
    /// end; the host judges them (a run where they failed is "not reproduced").
    Preconditions {
        /// /proc/sys/vm/swappiness.
        swappiness: u32,
        /// /sys/kernel/mm/lru_gen/enabled as read back (0x0000: MGLRU off).
        lru_gen: String,
        at_start: MemState,
        at_end: MemState,
        watermark: WatermarkStat,
    },
    /// Scenario B: one direct-reclaim call, streamed as it completes.
    ReclaimCall(ReclaimCall),
    /// Scenario B: the direct-reclaim tracing session, after its last call.
    ReclaimTrace {
        /// Calls paired and streamed as ReclaimCall records.
        calls: u64,
        /// Begin events with no end before tracing stopped.
        unpaired_begins: u64,
        /// End events with no begin (the begin was before tracing started).
        orphan_ends: u64,
        /// Events the kernel dropped: per-CPU overruns plus `[LOST n EVENTS]`
        /// markers in trace_pipe.
        lost_events: u64,
    },
    /// Scenario B: what the O_DIRECT readers of the verity device did.
    Reader {
        reads: u64,
        /// Reads that failed (EIO would mean verity found corruption).
        errors: u64,
        elapsed_ms: u64,
        first_error: Option<String>,
    },
    /// Scenario script: one line the script wrote, streamed as it comes
    /// (up to a cap; the Script record counts the lines left out).
    Output { stream: Stream, line: String },
    /// Scenario script: how it ended and what it reported.
    Script {
        exit: WorkloadExit,
        elapsed_ms: u64,
        /// Killed (its whole cgroup) at the timeout.
        timed_out: bool,
        /// Its `MMCI-METRIC:` values (the last one of each name wins).
        metrics: BTreeMap<String, f64>,
        /// `MMCI-METRIC:` lines that did not parse, with the reason.
        bad_metric_lines: Vec<String>,
        /// Output lines not streamed (over the cap).
        dropped_lines: u64,
    },
    /// A set-up or run step failed; the run ends after this.
    Error { stage: String, message: String },
    /// Last record: the run is over (ok = no step failed).
    Done { ok: bool, uptime_ms: u64 },
}
