//! Scenario B's tracepoints, as pure functions: parse the trace_pipe lines of
//! mm_vmscan_direct_reclaim_begin/_end and mm_vmscan_lru_shrink_inactive/
//! _active (formats in include/trace/events/vmscan.h), of the shrink_slab()
//! kprobe (once per memcg a reclaimer visits) and of the guest's own
//! memory.stat readings written to trace_marker, and, in the MGLRU control
//! cell, of mm_vmscan_lru_isolate and the shrink_lruvec() kprobe; and pair
//! them into one [`ReclaimCall`] per direct-reclaim call. A call is begin..end of one pid:
//! direct reclaim cannot nest in a task (PF_MEMALLOC), and the shrink events
//! fire in the reclaiming task's own context, so the shrink events of a pid
//! between its begin and end are that call's scanning.

use std::collections::{BTreeSet, HashMap};

use mmci_record::{IsolateSums, ReclaimCall, ReclaimStep};

/// The events we enable, as tracefs paths under events/.
pub const EVENTS: [&str; 4] = [
    "vmscan/mm_vmscan_direct_reclaim_begin",
    "vmscan/mm_vmscan_direct_reclaim_end",
    "vmscan/mm_vmscan_lru_shrink_inactive",
    "vmscan/mm_vmscan_lru_shrink_active",
];

/// The kprobe event (kprobe_events syntax) that names the memcg of each
/// lruvec a reclaimer shrinks: shrink_node_memcgs() calls
/// shrink_slab(gfp, nid, memcg, priority) once per memcg right after its
/// shrink_lruvec(), and shrink_slab() lives in mm/shrinker.c, so it is a
/// real call (shrink_lruvec() itself is static and may be inlined).
pub const MEMCG_PROBE: &str = "p:mmci/mmci_memcg shrink_slab memcg=$arg3:x64 priority=$arg4:s32";
/// Its tracefs path under events/.
pub const MEMCG_PROBE_EVENT: &str = "mmci/mmci_memcg";

/// MGLRU's eviction reports what it scanned only through this event:
/// scan_folios() fires it once per pass with what it looked at, skipped and
/// isolated, while evict_folios() fires mm_vmscan_lru_shrink_inactive only
/// when something was isolated (so under MGLRU the shrink events miss
/// exactly the futile passes). Traced in the MGLRU cell only: on the
/// classic LRU it would add an event per isolate_lru_folios() call to a
/// trace that already drops events.
pub const MGLRU_ISOLATE_EVENT: &str = "vmscan/mm_vmscan_lru_isolate";

/// A kprobe on shrink_lruvec(): the classic LRU's per-lruvec pass, which
/// calls get_scan_count() (static, inlined into it), where the RFC's
/// branch is. Under MGLRU a root reclaimer goes shrink_node() ->
/// lru_gen_shrink_node() and never gets here: the probe counts that it
/// did not, rather than taking it from reading the source.
pub const CLASSIC_PROBE: &str = "p:mmci/mmci_classic shrink_lruvec";
/// Its tracefs path under events/.
pub const CLASSIC_PROBE_EVENT: &str = "mmci/mmci_classic";
/// What the guest writes to trace_marker for each memory.stat reading.
pub const LRUVEC_MARK: &str = "mmci_lruvec";

/// The trace_marker line for a reading of the tracked memcg's memory.stat.
pub fn lruvec_mark(swapcached: u64, anon: u64) -> String {
    format!("{LRUVEC_MARK} swapcached={swapcached} anon={anon}")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Begin {
        order: u32,
        gfp_flags: String,
    },
    End {
        nr_reclaimed: u64,
    },
    /// One shrink_inactive_list() pass over an anon or a file LRU.
    Shrink {
        nr_scanned: u64,
        nr_reclaimed: u64,
        priority: u32,
        file: bool,
    },
    /// One shrink_active_list() pass.
    ShrinkActive {
        nr_taken: u64,
        priority: u32,
        file: bool,
    },
    /// shrink_slab() for one memcg (the kprobe): the end of its lruvec pass.
    Memcg {
        memcg: u64,
        priority: u32,
    },
    /// A memory.stat reading of the tracked memcg (bytes).
    Lruvec {
        swapcached: u64,
        anon: u64,
    },
    /// One mm_vmscan_lru_isolate event (under MGLRU, one scan_folios()
    /// pass over an anon or file generation).
    Isolate {
        nr_scanned: u64,
        nr_skipped: u64,
        nr_taken: u64,
        file: bool,
    },
    /// shrink_lruvec() entered (the kprobe).
    ClassicPass,
}

/// One parsed trace line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceLine {
    pub comm: String,
    pub pid: u32,
    /// Trace clock, in µs.
    pub ts_us: u64,
    pub event: Event,
}

/// "1234.567890" (seconds with up to 6 decimals, the default trace clock's
/// format) to µs, without going through floating point.
pub fn parse_timestamp_us(ts: &str) -> Option<u64> {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, ""));
    let secs: u64 = secs.parse().ok()?;
    let digits: String = frac.chars().take(6).collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let micros: u64 = format!("{digits:0<6}").parse().ok()?;
    Some(secs * 1_000_000 + micros)
}

/// The `key=value` words of an event's fields.
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .find_map(|(k, v)| (k == key).then_some(v))
}

fn num<T: std::str::FromStr>(fields: &str, key: &str) -> Option<T> {
    field(fields, key)?.parse().ok()
}

/// Parses one trace_pipe line of our three events; anything else is None.
///
/// The line is `<comm>-<pid> [<cpu>] <irq flags> <secs>.<usecs>: <event>: <fields>`.
/// A comm may hold spaces and dashes (`kworker/u9:1-kverityd`), so the pid is
/// what follows the last dash before the `[cpu]` field.
pub fn parse_line(line: &str) -> Option<TraceLine> {
    let start = [
        ": mm_vmscan_",
        ": mmci_memcg: ",
        ": mmci_classic: ",
        ": tracing_mark_write: ",
    ]
    .iter()
    .find_map(|p| line.find(p))?;
    let head = &line[..start];
    let rest = &line[start + 2..];
    let (name, fields) = rest.split_once(": ").unwrap_or((rest, ""));
    let event = match name {
        "mm_vmscan_lru_shrink_active" => Event::ShrinkActive {
            nr_taken: num(fields, "nr_taken")?,
            priority: num(fields, "priority")?,
            file: field(fields, "flags")?.contains("RECLAIM_WB_FILE"),
        },
        "mmci_memcg" => Event::Memcg {
            memcg: u64::from_str_radix(field(fields, "memcg")?.trim_start_matches("0x"), 16)
                .ok()?,
            priority: num(fields, "priority")?,
        },
        "tracing_mark_write" => {
            let marks = fields.strip_prefix(LRUVEC_MARK)?;
            Event::Lruvec {
                swapcached: num(marks, "swapcached")?,
                anon: num(marks, "anon")?,
            }
        }
        "mmci_classic" => Event::ClassicPass,
        "mm_vmscan_lru_isolate" => Event::Isolate {
            nr_scanned: num(fields, "nr_scanned")?,
            nr_skipped: num(fields, "nr_skipped")?,
            nr_taken: num(fields, "nr_taken")?,
            file: isolate_lru_is_file(field(fields, "lru")?)?,
        },
        "mm_vmscan_direct_reclaim_begin" => Event::Begin {
            order: num(fields, "order")?,
            gfp_flags: field(fields, "gfp_flags")?.to_string(),
        },
        "mm_vmscan_direct_reclaim_end" => Event::End {
            nr_reclaimed: num(fields, "nr_reclaimed")?,
        },
        "mm_vmscan_lru_shrink_inactive" => Event::Shrink {
            nr_scanned: num(fields, "nr_scanned")?,
            nr_reclaimed: num(fields, "nr_reclaimed")?,
            priority: num(fields, "priority")?,
            file: field(fields, "flags")?.contains("RECLAIM_WB_FILE"),
        },
        _ => return None,
    };
    let ts_us = parse_timestamp_us(head.split_whitespace().last()?)?;
    let task = head[..head.rfind(" [")?].trim();
    let (comm, pid) = task.rsplit_once('-')?;
    Some(TraceLine {
        comm: comm.to_string(),
        pid: pid.parse().ok()?,
        ts_us,
        event,
    })
}

/// Whether an mm_vmscan_lru_isolate `lru=` names a file list; None for a
/// name that is neither (LRU_NAMES in include/trace/events/mmflags.h).
fn isolate_lru_is_file(lru: &str) -> Option<bool> {
    match lru {
        "inactive_anon" | "active_anon" => Some(false),
        "inactive_file" | "active_file" => Some(true),
        _ => None,
    }
}

/// trace_pipe's `CPU:1 [LOST 42 EVENTS]` marker: the events dropped there.
pub fn lost_marker(line: &str) -> Option<u64> {
    let rest = line.split_once("[LOST ")?.1;
    rest.split_whitespace().next()?.parse().ok()
}

/// A call being paired: the record so far plus what only pairing needs.
#[derive(Debug)]
struct Open {
    call: ReclaimCall,
    memcgs: BTreeSet<u64>,
}

impl Open {
    /// The step of `priority`; a priority above the last step's starts a
    /// new round (do_try_to_free_pages() starting over).
    fn step(&mut self, priority: u32, ts_us: u64) -> &mut ReclaimStep {
        let steps = &mut self.call.steps;
        let same = steps.last().is_some_and(|s| s.priority == priority);
        if !same {
            let round = match steps.last() {
                Some(last) if priority > last.priority => last.round + 1,
                Some(last) => last.round,
                None => 1,
            };
            steps.push(ReclaimStep {
                round,
                priority,
                first_us: ts_us,
                ..ReclaimStep::default()
            });
        }
        let step = steps.last_mut().expect("pushed");
        step.last_us = ts_us;
        step
    }
}

/// Pairs begin/end events by pid and sums the shrink events in between.
#[derive(Default, Debug)]
pub struct Pairer {
    open: HashMap<u32, Open>,
    /// The latest memory.stat reading of the tracked memcg.
    lruvec: Option<(u64, u64)>,
    /// Whether the memcg kprobe is in place (else memcgs_visited is None).
    pub memcg_probe: bool,
    /// Whether mm_vmscan_lru_isolate is traced (else `isolate` is None).
    pub isolate_traced: bool,
    /// Whether the shrink_lruvec() kprobe is in place (else
    /// `classic_passes` is None).
    pub classic_probe: bool,
    /// Begins replaced by a later begin of the same pid (its end was lost).
    pub unpaired_begins: u64,
    /// Ends without a begin.
    pub orphan_ends: u64,
    /// Shrink events outside any direct-reclaim call (kswapd's).
    pub shrinks_outside: u64,
}

fn note_lruvec(call: &mut ReclaimCall, swapcached: u64, anon: u64) {
    call.swapcache_max_bytes = Some(
        call.swapcache_max_bytes
            .map_or(swapcached, |m| m.max(swapcached)),
    );
    call.anon_min_bytes = Some(call.anon_min_bytes.map_or(anon, |m| m.min(anon)));
}

impl Pairer {
    /// A pairer; `memcg_probe` says whether the shrink_slab kprobe is on.
    pub fn new(memcg_probe: bool) -> Self {
        Pairer {
            memcg_probe,
            ..Pairer::default()
        }
    }

    /// The MGLRU cell's extra events: mm_vmscan_lru_isolate traced, and
    /// whether the shrink_lruvec() kprobe is in place.
    pub fn with_mglru_events(mut self, classic_probe: bool) -> Self {
        self.isolate_traced = true;
        self.classic_probe = classic_probe;
        self
    }

    /// The kernel dropped events: every open call may miss some.
    pub fn events_lost(&mut self) {
        for open in self.open.values_mut() {
            open.call.events_lost = true;
        }
    }

    /// Feeds one event; returns the call it completes, if any.
    pub fn feed(&mut self, line: TraceLine) -> Option<ReclaimCall> {
        let ts = line.ts_us;
        match line.event {
            Event::Begin { order, gfp_flags } => {
                let mut call = ReclaimCall {
                    pid: line.pid,
                    comm: line.comm,
                    begin_us: ts,
                    gfp_flags,
                    order,
                    memcgs_visited: self.memcg_probe.then_some(0),
                    isolate: self.isolate_traced.then(IsolateSums::default),
                    classic_passes: self.classic_probe.then_some(0),
                    ..ReclaimCall::default()
                };
                // The reading in force when the call began counts too.
                if let Some((swapcached, anon)) = self.lruvec {
                    note_lruvec(&mut call, swapcached, anon);
                }
                let open = Open {
                    call,
                    memcgs: BTreeSet::new(),
                };
                if self.open.insert(line.pid, open).is_some() {
                    self.unpaired_begins += 1;
                }
                None
            }
            Event::Lruvec { swapcached, anon } => {
                self.lruvec = Some((swapcached, anon));
                for open in self.open.values_mut() {
                    note_lruvec(&mut open.call, swapcached, anon);
                }
                None
            }
            Event::Shrink {
                nr_scanned,
                nr_reclaimed,
                priority,
                file,
            } => {
                let Some(open) = self.open.get_mut(&line.pid) else {
                    self.shrinks_outside += 1;
                    return None;
                };
                let step = open.step(priority, ts);
                step.reclaimed += nr_reclaimed;
                if file {
                    step.file_scanned += nr_scanned;
                } else {
                    step.anon_scanned += nr_scanned;
                }
                let call = &mut open.call;
                call.shrink_events += 1;
                call.min_priority = Some(call.min_priority.map_or(priority, |p| p.min(priority)));
                if file {
                    call.file_scanned += nr_scanned;
                    call.file_reclaimed += nr_reclaimed;
                } else {
                    call.anon_scanned += nr_scanned;
                    call.anon_reclaimed += nr_reclaimed;
                    if priority == 0 {
                        call.anon_scanned_prio0 += nr_scanned;
                    }
                }
                None
            }
            Event::ShrinkActive {
                nr_taken,
                priority,
                file,
            } => {
                if let Some(open) = self.open.get_mut(&line.pid) {
                    let step = open.step(priority, ts);
                    if file {
                        step.file_active_taken += nr_taken;
                    } else {
                        step.anon_active_taken += nr_taken;
                    }
                }
                None
            }
            Event::Memcg { memcg, priority } => {
                // Counted only when the probe is known to be on for the
                // whole session: a partial count would read as a walk.
                if !self.memcg_probe {
                    return None;
                }
                if let Some(open) = self.open.get_mut(&line.pid) {
                    // A priority the call reached even where it scanned
                    // nothing (SCAN_FILE over an empty file LRU).
                    let call = &mut open.call;
                    call.min_priority =
                        Some(call.min_priority.map_or(priority, |p| p.min(priority)));
                    open.step(priority, ts).memcg_visits += 1;
                    open.memcgs.insert(memcg);
                    open.call.memcgs_visited = Some(open.memcgs.len() as u32);
                }
                None
            }
            Event::Isolate {
                nr_scanned,
                nr_skipped,
                nr_taken,
                file,
            } => {
                let sums = self
                    .open
                    .get_mut(&line.pid)
                    .and_then(|open| open.call.isolate.as_mut());
                if let Some(s) = sums {
                    if file {
                        s.file_passes += 1;
                        s.file_scanned += nr_scanned;
                        s.file_skipped += nr_skipped;
                        s.file_taken += nr_taken;
                    } else {
                        s.anon_passes += 1;
                        s.anon_scanned += nr_scanned;
                        s.anon_skipped += nr_skipped;
                        s.anon_taken += nr_taken;
                    }
                }
                None
            }
            Event::ClassicPass => {
                let passes = self
                    .open
                    .get_mut(&line.pid)
                    .and_then(|open| open.call.classic_passes.as_mut());
                if let Some(n) = passes {
                    *n += 1;
                }
                None
            }
            Event::End { nr_reclaimed } => {
                let Some(open) = self.open.remove(&line.pid) else {
                    self.orphan_ends += 1;
                    return None;
                };
                let mut call = open.call;
                call.nr_reclaimed = nr_reclaimed;
                call.latency_us = ts.saturating_sub(call.begin_us);
                Some(call)
            }
        }
    }

    /// Begins still open when tracing stopped, plus those already replaced.
    pub fn finish(self) -> (u64, u64) {
        (
            self.unpaired_begins + self.open.len() as u64,
            self.orphan_ends,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real lines, captured from a scenario B guest (see the fixture's header).
    const FIXTURE: &str = include_str!("../tests/fixtures/reclaim_trace.txt");

    fn parse_all(text: &str) -> Vec<TraceLine> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(parse_line)
            .collect()
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp_us("1234.567890"), Some(1_234_567_890));
        assert_eq!(parse_timestamp_us("3.5"), Some(3_500_000));
        assert_eq!(parse_timestamp_us("7"), Some(7_000_000));
        assert_eq!(parse_timestamp_us("x.1"), None);
    }

    #[test]
    fn comm_with_dashes_and_spaces() {
        let l = parse_line("  kworker/u9:1-kverityd-45   [001] ..... 12.000100: mm_vmscan_direct_reclaim_end: nr_reclaimed=3").unwrap();
        assert_eq!(
            (l.comm.as_str(), l.pid, l.ts_us),
            ("kworker/u9:1-kverityd", 45, 12_000_100)
        );
        let l = parse_line(
            "my thread-7 [000] d..1. 1.000001: mm_vmscan_direct_reclaim_end: nr_reclaimed=0",
        )
        .unwrap();
        assert_eq!((l.comm.as_str(), l.pid), ("my thread", 7));
        assert_eq!(parse_line("  <idle>-0 [000] 1.0: sched_switch: x=1"), None);
        assert_eq!(lost_marker("CPU:1 [LOST 42 EVENTS]"), Some(42));
        assert_eq!(
            lost_marker("hog-9 [000] 1.0: mm_vmscan_direct_reclaim_end: nr_reclaimed=0"),
            None
        );
    }

    #[test]
    fn pairing_sums_shrinks_of_the_same_pid_only() {
        let lines = "\
 a-1 [000] ..... 1.000000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_NOIO|__GFP_NOWARN
 b-2 [001] ..... 1.000010: mm_vmscan_direct_reclaim_begin: order=2 gfp_flags=GFP_HIGHUSER_MOVABLE
 a-1 [000] ..... 1.000020: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=0 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=1 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC
 a-1 [000] ..... 1.000030: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=20 nr_reclaimed=0 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=0 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC
 a-1 [000] ..... 1.000040: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=4 nr_reclaimed=3 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=0 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC
 kswapd0-30 [001] ..... 1.000045: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=9 nr_reclaimed=9 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC
 a-1 [000] ..... 1.000250: mm_vmscan_direct_reclaim_end: nr_reclaimed=3
 c-3 [000] ..... 1.000300: mm_vmscan_direct_reclaim_end: nr_reclaimed=1
";
        let mut p = Pairer::default();
        let calls: Vec<_> = parse_all(lines)
            .into_iter()
            .filter_map(|l| p.feed(l))
            .collect();
        assert_eq!(calls.len(), 1);
        let c = &calls[0];
        assert_eq!(
            (c.pid, c.order, c.latency_us, c.nr_reclaimed),
            (1, 0, 250, 3)
        );
        assert_eq!(c.gfp_flags, "GFP_NOIO|__GFP_NOWARN");
        assert_eq!(
            (c.anon_scanned, c.anon_reclaimed, c.anon_scanned_prio0),
            (52, 0, 20)
        );
        assert_eq!((c.file_scanned, c.file_reclaimed), (4, 3));
        assert_eq!((c.min_priority, c.shrink_events), (Some(0), 3));
        assert_eq!(p.shrinks_outside, 1);
        assert_eq!(p.finish(), (1, 1), "b's begin is open, c's end an orphan");
    }

    #[test]
    fn steps_rounds_memcgs_and_lruvec_readings() {
        let shrink = |ts: &str, n: u32, prio: u32, kind: &str, rec: u32| {
            format!(" k-9 [000] ..... {ts}: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned={n} nr_reclaimed={rec} nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority={prio} flags=RECLAIM_WB_{kind}|RECLAIM_WB_ASYNC\n")
        };
        let memcg = |ts: &str, m: &str, prio: u32| {
            format!(" k-9 [000] d.... {ts}: mmci_memcg: (shrink_slab+0x0/0x1c0) memcg={m} priority={prio}\n")
        };
        let mut text = String::new();
        text += " exe-3 [001] ..... 0.900000: tracing_mark_write: mmci_lruvec swapcached=8192 anon=400000000\n";
        text += " k-9 [000] ..... 1.000000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY|__GFP_NOMEMALLOC\n";
        text += &shrink("1.000100", 32, 1, "ANON", 0);
        text += &memcg("1.000200", "0xffff888000100000", 1);
        text += &memcg("1.000210", "0xffff888000200000", 1);
        text += " k-9 [000] ..... 1.000300: mm_vmscan_lru_shrink_active: nid=0 nr_taken=16 nr_active=0 nr_deactivated=16 nr_referenced=0 priority=0 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n";
        text += &shrink("1.000400", 900, 0, "ANON", 0);
        text += " exe-3 [001] ..... 1.000450: tracing_mark_write: mmci_lruvec swapcached=4096 anon=390000000\n";
        text += &memcg("1.000500", "0xffff888000200000", 0);
        // The full-walk retry: back up to priority 12.
        text += &shrink("1.000600", 4, 12, "FILE", 3);
        text += &memcg("1.000700", "0xffff888000100000", 12);
        text += " k-9 [000] ..... 1.000800: mm_vmscan_direct_reclaim_end: nr_reclaimed=3\n";
        let mut p = Pairer::new(true);
        let calls: Vec<_> = parse_all(&text)
            .into_iter()
            .filter_map(|l| p.feed(l))
            .collect();
        assert_eq!(calls.len(), 1);
        let c = &calls[0];
        let steps: Vec<_> = c
            .steps
            .iter()
            .map(|s| {
                (
                    s.round,
                    s.priority,
                    s.anon_scanned,
                    s.file_scanned,
                    s.reclaimed,
                    s.anon_active_taken,
                    s.memcg_visits,
                    s.first_us,
                    s.last_us,
                )
            })
            .collect();
        assert_eq!(
            steps,
            [
                (1, 1, 32, 0, 0, 0, 2, 1_000_100, 1_000_210),
                (1, 0, 900, 0, 0, 16, 1, 1_000_300, 1_000_500),
                (2, 12, 0, 4, 3, 0, 1, 1_000_600, 1_000_700),
            ]
        );
        assert_eq!(c.memcgs_visited, Some(2));
        assert_eq!(
            c.swapcache_max_bytes,
            Some(8192),
            "the reading in force at begin"
        );
        assert_eq!(c.anon_min_bytes, Some(390_000_000));
        assert_eq!((c.anon_scanned_prio0, c.min_priority), (900, Some(0)));
        let without_probe = {
            let mut p = Pairer::default();
            parse_all(&text)
                .into_iter()
                .find_map(|l| p.feed(l))
                .unwrap()
        };
        assert_eq!(without_probe.memcgs_visited, None);
        assert!(!c.events_lost);
        let mut p = Pairer::new(true);
        let mut lines = parse_all(&text).into_iter();
        p.feed(lines.next().unwrap());
        p.feed(lines.next().unwrap());
        p.events_lost();
        let lost = lines.find_map(|l| p.feed(l)).unwrap();
        assert!(lost.events_lost, "a call open at a LOST marker is flagged");
        assert_eq!(lruvec_mark(1, 2), "mmci_lruvec swapcached=1 anon=2");
    }

    /// The MGLRU cell's lines: each one's event, or None for a line that
    /// does not have the fields (a classic-LRU `lru=` name it could not be
    /// is refused, not read as anon).
    #[test]
    fn mglru_lines_parse_to_their_events() {
        let isolate = |fields: &str| {
            format!(" k-9 [000] ..... 2.000000: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=4096 {fields}")
        };
        let ev = |nr_scanned, nr_skipped, nr_taken, file| {
            Some(Event::Isolate {
                nr_scanned,
                nr_skipped,
                nr_taken,
                file,
            })
        };
        let cases = [
            (
                isolate("nr_scanned=70 nr_skipped=64 nr_taken=0 lru=inactive_anon"),
                ev(70, 64, 0, false),
            ),
            (
                isolate("nr_scanned=40 nr_skipped=0 nr_taken=32 lru=inactive_file"),
                ev(40, 0, 32, true),
            ),
            (
                isolate("nr_scanned=1 nr_skipped=0 nr_taken=1 lru=active_anon"),
                ev(1, 0, 1, false),
            ),
            (
                isolate("nr_scanned=1 nr_skipped=0 nr_taken=1 lru=unevictable"),
                None,
            ),
            (isolate("nr_scanned=1 nr_taken=1 lru=inactive_anon"), None),
            (
                " k-9 [000] d.... 2.000001: mmci_classic: (shrink_lruvec+0x0/0x5a0)".into(),
                Some(Event::ClassicPass),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(&line).map(|l| l.event), want, "{line}");
        }
    }

    /// A call's isolate events and shrink_lruvec() entries are summed per
    /// type; other pids' are not; without the MGLRU events the fields stay
    /// None (not measured), with them they start at zero (measured).
    #[test]
    fn mglru_events_sum_per_call() {
        let text = "\
 k-9 [000] ..... 1.000000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY|__GFP_NOMEMALLOC
 k-9 [000] ..... 1.000010: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=4096 nr_scanned=30 nr_skipped=0 nr_taken=0 lru=inactive_file
 k-9 [000] ..... 1.000020: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=4096 nr_scanned=70 nr_skipped=64 nr_taken=0 lru=inactive_anon
 k-9 [000] ..... 1.000030: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=4096 nr_scanned=12 nr_skipped=2 nr_taken=9 lru=inactive_anon
 h-5 [001] ..... 1.000035: mm_vmscan_lru_isolate: classzone=2 order=0 nr_requested=4096 nr_scanned=64 nr_skipped=0 nr_taken=64 lru=inactive_anon
 h-5 [001] d.... 1.000036: mmci_classic: (shrink_lruvec+0x0/0x5a0)
 k-9 [000] ..... 1.000090: mm_vmscan_direct_reclaim_end: nr_reclaimed=9
";
        let run = |p: &mut Pairer| parse_all(text).into_iter().find_map(|l| p.feed(l)).unwrap();
        let c = run(&mut Pairer::new(true).with_mglru_events(true));
        assert_eq!(
            c.isolate,
            Some(IsolateSums {
                anon_passes: 2,
                anon_scanned: 82,
                anon_skipped: 66,
                anon_taken: 9,
                file_passes: 1,
                file_scanned: 30,
                file_skipped: 0,
                file_taken: 0,
            })
        );
        assert_eq!(c.classic_passes, Some(0), "h-5's pass is not k-9's");
        let c = run(&mut Pairer::new(true).with_mglru_events(false));
        assert_eq!(c.classic_passes, None, "no probe: not measured");
        assert!(c.isolate.is_some());
        let c = run(&mut Pairer::new(true));
        assert_eq!((c.isolate, c.classic_passes), (None, None));
    }

    #[test]
    fn fixture_of_real_lines() {
        let lines = parse_all(FIXTURE);
        let data_lines = FIXTURE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count();
        assert_eq!(lines.len(), data_lines, "every captured line parses");
        let mut p = Pairer::default();
        let calls: Vec<_> = lines.into_iter().filter_map(|l| p.feed(l)).collect();
        // Expected figures worked out from the fixture with awk, not with
        // this code: per pid, end - begin, the sum of nr_scanned, the lowest
        // priority, the number of shrink lines, the end's nr_reclaimed.
        let got: Vec<_> = calls
            .iter()
            .map(|c| {
                (
                    c.pid,
                    c.comm.as_str(),
                    c.latency_us,
                    c.anon_scanned,
                    c.file_scanned,
                    c.min_priority,
                    c.shrink_events,
                    c.nr_reclaimed,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (35, "kworker/1:1H", 96_973, 331, 0, Some(9), 11, 43),
                (52, "kworker/1:4H", 110_114, 331, 0, Some(9), 11, 76),
                (42, "exe", 125_981, 151, 0, Some(10), 5, 35),
            ]
        );
        let noio = "GFP_NOIO|__GFP_NOWARN|__GFP_NORETRY|__GFP_NOMEMALLOC";
        assert_eq!(calls[0].gfp_flags, noio, "dm-bufio's allocation");
        assert_eq!(calls[1].gfp_flags, noio);
        assert_eq!(calls[2].gfp_flags, "GFP_HIGHUSER_MOVABLE|__GFP_COMP");
        assert!(calls
            .iter()
            .all(|c| c.order == 0 && c.anon_scanned_prio0 == 0));
        assert_eq!(p.finish(), (1, 0), "the cut-off call stays unpaired");
    }
}
