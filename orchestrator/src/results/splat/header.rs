//! Which report a console line starts (its header: kind, precedence and
//! title function), and where that report starts and ends.

use std::sync::LazyLock;

use regex::Regex;

use super::hang::{blocked_dump_end, hung_task_title};
use super::lockdep::lockdep_header;
use super::title::*;
use super::trace::{is_end_marker, is_page_dump_line, is_rule, is_trace_line, is_trace_start};
use super::{SplatKind, TRACE_LOOKAHEAD};

pub(super) struct Header {
    pub(super) kind: SplatKind,
    /// Which header of a report names it (see [`SplatKind::precedence`]).
    pub(super) rank: u8,
    /// The report has no call trace of its own (one line).
    pub(super) lone: bool,
    /// For lockdep: the call trace that counts follows `stack backtrace:`.
    pub(super) after_backtrace: bool,
    /// No call trace: the header and the held locks it lists (lockdep's
    /// lock held when returning to user space).
    pub(super) no_trace: bool,
    pub(super) title: fn(&[&str], usize) -> String,
}

/// The header a console line starts, if any. Lines are without printk
/// prefix. Only kernel wording counts: a workload printing "WARNING:" does
/// not start a report.
pub(super) fn header(l: &str) -> Option<Header> {
    let h = |kind: SplatKind, title| {
        Some(Header {
            kind,
            rank: kind.precedence() * 2,
            lone: false,
            after_backtrace: false,
            no_trace: false,
            title,
        })
    };
    static WARN_AT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^WARNING: (?:CPU: \d+ PID: \d+ )?at ").unwrap());
    // `INFO: task %s:%d blocked`: a comm may hold spaces and colons.
    static HUNG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^INFO: task .+:\d+ blocked for more than \d+ seconds").unwrap()
    });
    // mm/slub.c slab_bug(): `BUG <cache> (<taint>): <reason>`.
    static SLUB: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^BUG \S+ \((?:Not tainted|Tainted: [^)]*)\): \S").unwrap());
    static STALL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^(?:rcu: )?INFO: rcu_(?:preempt|sched|bh) (?:self-)?detected(?: expedited)? stall",
        )
        .unwrap()
    });
    if let Some(lockdep) = lockdep_header(l) {
        return Some(Header {
            kind: SplatKind::Lockdep,
            rank: SplatKind::Lockdep.precedence() * 2,
            lone: false,
            after_backtrace: !lockdep.no_trace,
            no_trace: lockdep.no_trace,
            title: lockdep.title,
        });
    }
    if WARN_AT.is_match(l) {
        if l.contains(" at lib/list_debug.c:") {
            return h(SplatKind::ListCorruption, warning_title);
        }
        return h(SplatKind::Warning, warning_title);
    }
    if SLUB.is_match(l) {
        return h(SplatKind::Bug, slub_title);
    }
    if l.starts_with("BUG: KASAN: ") {
        return h(SplatKind::Kasan, kasan_title);
    }
    if l.starts_with("BUG: KFENCE: ") {
        return h(SplatKind::Kfence, kfence_title);
    }
    if l.starts_with("UBSAN: ") {
        return h(SplatKind::Ubsan, ubsan_title);
    }
    if l.starts_with("BUG: soft lockup") || l.starts_with("watchdog: BUG: soft lockup") {
        return h(SplatKind::SoftLockup, soft_lockup_title);
    }
    if l.contains("Watchdog detected hard LOCKUP on cpu") && !l.starts_with("Kernel panic") {
        return h(SplatKind::HardLockup, hard_lockup_title);
    }
    if l.starts_with("BUG: Bad rss-counter state")
        || l.starts_with("BUG: non-zero pgtables_bytes on freeing mm")
    {
        return Some(Header {
            kind: SplatKind::BadPage,
            rank: SplatKind::BadPage.precedence() * 2,
            lone: true,
            after_backtrace: false,
            no_trace: false,
            title: bug_title,
        });
    }
    if l.starts_with("BUG: Bad page state") || l.starts_with("BUG: Bad page map") {
        return h(SplatKind::BadPage, bug_title);
    }
    if l.starts_with("BUG: ") {
        return h(SplatKind::Bug, bug_title);
    }
    if l.starts_with("kernel BUG at ") {
        return h(
            if l.contains("lib/list_debug.c") {
                SplatKind::ListCorruption
            } else {
                SplatKind::Bug
            },
            kernel_bug_title,
        );
    }
    if l.starts_with("list_add corruption")
        || l.starts_with("list_add double add")
        || l.starts_with("list_del corruption")
    {
        return h(SplatKind::ListCorruption, list_title);
    }
    if l.starts_with("page dumped because: ") {
        // dump_page() explains a BUG or a bad page report that names it.
        return Some(Header {
            kind: SplatKind::BadPage,
            rank: 1,
            lone: false,
            after_backtrace: false,
            no_trace: false,
            title: page_dump_title,
        });
    }
    if l.starts_with("general protection fault") || l.starts_with("Oops: general protection fault")
    {
        return h(SplatKind::GeneralProtectionFault, gpf_title);
    }
    if l.starts_with("Oops: ") || l.starts_with("Internal error: Oops") {
        return h(SplatKind::Oops, oops_title);
    }
    if STALL.is_match(l) {
        return h(SplatKind::RcuStall, rcu_stall_title);
    }
    if HUNG.is_match(l) || l.starts_with("sysrq: Show Blocked State") {
        return h(SplatKind::HungTask, hung_task_title);
    }
    // The start of an OOM kill; whether it is a global one (a splat) or a
    // memory cgroup's (the workload's expected end) its constraint line
    // says, further down: see [`header_at`].
    if l.contains(" invoked oom-killer: gfp_mask=") {
        return h(SplatKind::Oom, global_oom_title);
    }
    if l.starts_with("Kernel panic - not syncing") {
        return h(SplatKind::Panic, panic_title);
    }
    None
}

/// The header at line `i` of `lines`, if any: [`header`], except for an
/// OOM kill that is not global. The kernel's `oom-kill:constraint=` line
/// (mm/oom_kill.c dump_oom_victim()) follows the `invoked oom-killer`
/// line after the memory dump and task list: CONSTRAINT_MEMCG is a memory
/// cgroup's limit (scenario A's workload meets it on purpose: a metric,
/// not a failure); CONSTRAINT_NONE, _CPUSET and _MEMORY_POLICY are the
/// machine's memory. An OOM without its constraint line (cut off) is not
/// judged.
pub(super) fn header_at(lines: &[&str], i: usize) -> Option<Header> {
    let h = header(lines[i])?;
    if h.kind != SplatKind::Oom {
        return Some(h);
    }
    const OOM_DUMP_LINES: usize = 400;
    let constraint = lines[i + 1..lines.len().min(i + OOM_DUMP_LINES)]
        .iter()
        .find_map(|l| l.strip_prefix("oom-kill:constraint="))?;
    (!constraint.starts_with("CONSTRAINT_MEMCG")).then_some(h)
}

/// The last line (inclusive) of the report whose header is at `i`.
pub(super) fn report_end(lines: &[&str], i: usize, h: &Header) -> usize {
    if h.lone {
        return i;
    }
    if h.no_trace {
        // Up to the last held lock it lists (` #0: ...`).
        return (i + 1..lines.len().min(i + 16))
            .take_while(|&j| !is_trace_start(lines[j]))
            .filter(|&j| lines[j].starts_with(" #"))
            .last()
            .unwrap_or(i);
    }
    if lines[i].starts_with("sysrq: Show Blocked State") {
        return blocked_dump_end(lines, i);
    }
    let limit = lines.len().min(i + TRACE_LOOKAHEAD * 3);
    // Sanitizer reports are bracketed by a rule of '='.
    if matches!(h.kind, SplatKind::Kasan | SplatKind::Kfence) {
        if let Some(j) = (i + 1..limit).find(|&j| is_rule(lines[j])) {
            return j;
        }
    }
    // KFENCE prints its stacks without a "Call Trace:" and ends with the
    // task's CPU and hardware line (and its workqueue).
    if h.kind == SplatKind::Kfence {
        if let Some(j) = (i + 1..limit).find(|&j| lines[j].starts_with("Hardware name:")) {
            let wq = lines
                .get(j + 1)
                .is_some_and(|l| l.starts_with("Workqueue:"));
            return j + usize::from(wq);
        }
    }
    let mut from = i + 1;
    if h.after_backtrace {
        if let Some(j) = (from..limit).find(|&j| lines[j].starts_with("stack backtrace:")) {
            from = j;
        }
    }
    let lookahead = lines.len().min(from + TRACE_LOOKAHEAD);
    let Some(start) =
        (from..lookahead).find(|&j| is_trace_start(lines[j]) || is_end_marker(lines[j]))
    else {
        // A panic is the last thing the kernel says: what follows is its.
        if h.kind == SplatKind::Panic {
            return lines.len().min(i + TRACE_LOOKAHEAD) - 1;
        }
        // No trace: the header and the lines that detail it (indented, or
        // the page it dumps).
        return (i + 1..lines.len())
            .take_while(|&j| lines[j].starts_with([' ', '\t']) || is_page_dump_line(lines[j]))
            .last()
            .unwrap_or(i);
    };
    let mut end = start;
    for (j, l) in lines.iter().enumerate().skip(start) {
        if is_end_marker(l) {
            return j;
        }
        if j > start && !is_trace_line(l) {
            break;
        }
        end = j;
    }
    // An end marker right after the trace ("Modules linked in:" and the
    // like in between) closes it.
    for (j, l) in lines.iter().enumerate().skip(end + 1).take(3) {
        if is_end_marker(l) {
            return j;
        }
    }
    end
}

/// Where the report whose header is at `i` starts: a `cut here` line or a
/// rule of '=' just before it, or the page dump a `page dumped because`
/// closes.
pub(super) fn report_start(lines: &[&str], i: usize, kind: SplatKind) -> usize {
    let lo = i.saturating_sub(3);
    if let Some(j) = (lo..i).rev().find(|&j| lines[j].contains("[ cut here ]")) {
        return j;
    }
    if i > 0 && is_rule(lines[i - 1]) {
        return i - 1;
    }
    if kind == SplatKind::BadPage && lines[i].starts_with("page dumped because") {
        let mut j = i;
        while j > 0 && i - j < 12 && is_page_dump_line(lines[j - 1]) {
            j -= 1;
        }
        return j;
    }
    i
}
