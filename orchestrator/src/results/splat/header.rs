//! Which report a console line starts (its header: kind, precedence and
//! title function), and where that report starts and ends.

use std::sync::LazyLock;

use regex::Regex;

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
            title,
        })
    };
    let lockdep = |title| {
        Some(Header {
            kind: SplatKind::Lockdep,
            rank: SplatKind::Lockdep.precedence() * 2,
            lone: false,
            after_backtrace: true,
            title,
        })
    };
    static WARN_AT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^WARNING: (?:CPU: \d+ PID: \d+ )?at ").unwrap());
    static HUNG: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^INFO: task \S+ blocked for more than \d+ seconds").unwrap());
    static STALL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^(?:rcu: )?INFO: rcu_(?:preempt|sched|bh) (?:self-)?detected(?: expedited)? stall",
        )
        .unwrap()
    });
    if l.starts_with("WARNING: possible circular locking dependency detected")
        || l.starts_with("WARNING: possible recursive locking detected")
        || l.starts_with("WARNING: possible irq lock inversion dependency detected")
    {
        return lockdep(circular_title);
    }
    if l.starts_with("WARNING: inconsistent lock state") {
        return lockdep(inconsistent_title);
    }
    if l.starts_with("WARNING: suspicious RCU usage") {
        return lockdep(rcu_usage_title);
    }
    if l.starts_with("[ BUG: Invalid wait context ]") {
        return lockdep(wait_context_title);
    }
    if WARN_AT.is_match(l) {
        return h(SplatKind::Warning, warning_title);
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
    if l.starts_with("list_add corruption") || l.starts_with("list_del corruption") {
        return h(SplatKind::ListCorruption, list_title);
    }
    if l.starts_with("page dumped because: ") {
        // dump_page() explains a BUG or a bad page report that names it.
        return Some(Header {
            kind: SplatKind::BadPage,
            rank: 1,
            lone: false,
            after_backtrace: false,
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
    if HUNG.is_match(l) {
        return h(SplatKind::HungTask, hung_task_title);
    }
    if l.starts_with("Kernel panic - not syncing") {
        return h(SplatKind::Panic, panic_title);
    }
    None
}

/// The last line (inclusive) of the report whose header is at `i`.
pub(super) fn report_end(lines: &[&str], i: usize, h: &Header) -> usize {
    if h.lone {
        return i;
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
