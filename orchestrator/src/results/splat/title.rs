//! Titles formed the way syzbot forms them (syzkaller's pkg/report):
//! one function per kind of report, each finding the function a report
//! is in from its header line and call trace.

use std::sync::LazyLock;

use regex::Regex;

use super::trace::{clean, is_trace_line, is_trace_start, FRAME, PC_FRAME};
use super::TRACE_LOOKAHEAD;

/// Frames syzkaller skips when it names a report by its stack: the
/// reporting machinery, locking primitives, list helpers, sanitizers.
pub(super) const SKIP: [&str; 38] = [
    "dump_stack",
    "show_stack",
    "show_regs",
    "dump_backtrace",
    "dump_page",
    "panic",
    "__warn",
    "warn_slowpath",
    "report_bug",
    "handle_bug",
    "exc_invalid_op",
    "asm_exc_",
    "do_error_trap",
    "do_trap",
    "die",
    "might_resched",
    "might_sleep",
    "might_fault",
    "mutex_lock",
    "__mutex",
    "_raw_spin",
    "spin_lock",
    "lock_acquire",
    "lockdep",
    "__list_",
    "list_add",
    "list_del",
    "kasan",
    "__asan",
    "kfence",
    "ubsan",
    "__ubsan",
    "rcu",
    "print_",
    "check_",
    "validate_chain",
    "__schedule_bug",
    "bad_page",
];

pub(super) fn skipped(func: &str) -> bool {
    let f = func.trim_start_matches('_');
    SKIP.iter()
        .any(|s| f.starts_with(s.trim_start_matches('_')))
}

/// Frames a blocked task always shows: it is where it sleeps, not why.
pub(super) const SLEEP_FRAMES: [&str; 12] = [
    "__switch_to",
    "context_switch",
    "__schedule",
    "schedule",
    "io_schedule",
    "preempt_schedule",
    "folio_wait",
    "__folio_lock",
    "folio_lock",
    "wait_",
    "rwsem_down",
    "__mutex",
];

/// The first frame, from line `from` on, of the call trace (after `Call
/// Trace:`), that is reliable and not skipped by `skip`.
pub(super) fn first_frame(
    lines: &[&str],
    from: usize,
    skip: &dyn Fn(&str) -> bool,
) -> Option<String> {
    trace_frames(lines, from).into_iter().find(|f| !skip(f))
}

/// The faulting function (RIP/pc), from line `from` on.
pub(super) fn pc_frame(lines: &[&str], from: usize) -> Option<String> {
    lines[from..lines.len().min(from + TRACE_LOOKAHEAD)]
        .iter()
        .find_map(|l| PC_FRAME.captures(l))
        .map(|c| clean(&c[1]))
}

pub(super) fn in_func(prefix: &str, func: Option<String>) -> String {
    match func {
        Some(f) => format!("{prefix} in {f}"),
        None => prefix.to_string(),
    }
}

/// The function after `at: ` on the first line matching `after` (lockdep
/// names the lock's acquirer so).
pub(super) fn lockdep_at(lines: &[&str], from: usize, after: &str) -> Option<String> {
    static AT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"at: (?:\[<[0-9a-f]+>\] )?([A-Za-z_][A-Za-z0-9_.]*)").unwrap()
    });
    let end = lines.len().min(from + TRACE_LOOKAHEAD);
    let start = (from..end).find(|&i| lines[i].contains(after))?;
    // The acquirer is on the line itself or the next ones; an `[inline]`
    // site comes first, the function it is inlined into last.
    let mut found = None;
    for l in &lines[start..end.min(start + 6)] {
        if let Some(c) = AT.captures(l) {
            let inline = l.trim_end().ends_with("[inline]");
            found = Some(clean(&c[1]));
            if !inline {
                break;
            }
        } else if found.is_some() {
            break;
        }
    }
    found
}

pub(super) fn warning_title(lines: &[&str], i: usize) -> String {
    static WARN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^WARNING: (?:CPU: \d+ PID: \d+ )?at \S+ ([A-Za-z_][A-Za-z0-9_.]*)\+").unwrap()
    });
    let func = WARN
        .captures(lines[i])
        .map(|c| clean(&c[1]))
        .or_else(|| pc_frame(lines, i));
    in_func("WARNING", func)
}

pub(super) fn bug_title(lines: &[&str], i: usize) -> String {
    let l = lines[i];
    let after = |p: &str| l.strip_prefix(p).is_some();
    if after("BUG: sleeping function called from invalid context") {
        return in_func(
            "BUG: sleeping function called from invalid context",
            first_frame(lines, i, &skipped),
        );
    }
    if after("BUG: scheduling while atomic") {
        return in_func(
            "BUG: scheduling while atomic",
            first_frame(lines, i + 1, &|f| {
                skipped(f) || SLEEP_FRAMES.iter().any(|s| f.starts_with(s))
            })
            .filter(|_| (i + 1..lines.len().min(i + 8)).any(|j| is_trace_start(lines[j]))),
        );
    }
    for fixed in [
        "BUG: Bad page state",
        "BUG: Bad page map",
        "BUG: Bad rss-counter state",
        "BUG: non-zero pgtables_bytes on freeing mm",
    ] {
        if after(fixed) {
            return fixed.to_string();
        }
    }
    if after("BUG: kernel NULL pointer dereference")
        || after("BUG: unable to handle kernel NULL pointer dereference")
    {
        return in_func(
            "BUG: unable to handle kernel NULL pointer dereference",
            pc_frame(lines, i),
        );
    }
    if after("BUG: unable to handle page fault") || after("BUG: unable to handle kernel paging") {
        return in_func(
            "BUG: unable to handle kernel paging request",
            pc_frame(lines, i),
        );
    }
    if after("BUG: spinlock") {
        let what = l["BUG: spinlock ".len()..]
            .split(" on CPU")
            .next()
            .unwrap_or("")
            .to_string();
        return in_func(
            &format!("BUG: spinlock {what}"),
            first_frame(lines, i, &skipped),
        );
    }
    // Anything else: the header up to its first detail.
    let head = l.split([',', ':']).take(2).collect::<Vec<_>>().join(":");
    in_func(head.trim_end(), first_frame(lines, i, &skipped))
}

pub(super) fn kernel_bug_title(lines: &[&str], i: usize) -> String {
    if lines[i].contains("lib/list_debug.c") {
        return list_title(lines, i);
    }
    in_func("kernel BUG", pc_frame(lines, i))
}

pub(super) fn list_title(lines: &[&str], i: usize) -> String {
    in_func("BUG: corrupted list", first_frame(lines, i, &skipped))
}

pub(super) fn oops_title(lines: &[&str], i: usize) -> String {
    if lines[i].contains("general protection fault") {
        return gpf_title(lines, i);
    }
    in_func("Oops", pc_frame(lines, i))
}

pub(super) fn gpf_title(lines: &[&str], i: usize) -> String {
    in_func("general protection fault", pc_frame(lines, i))
}

pub(super) fn kasan_title(lines: &[&str], i: usize) -> String {
    static KASAN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^BUG: KASAN: ([a-z\-]+) in ([A-Za-z_][A-Za-z0-9_.]*)").unwrap()
    });
    let Some(c) = KASAN.captures(lines[i]) else {
        return "KASAN: corrupted report".to_string();
    };
    let access = lines[i + 1..lines.len().min(i + 4)]
        .iter()
        .find_map(|l| {
            ["Read", "Write"]
                .into_iter()
                .find(|a| l.starts_with(&format!("{a} of size")))
        })
        .map(|a| format!(" {a}"))
        .unwrap_or_default();
    format!("KASAN: {}{access} in {}", &c[1], clean(&c[2]))
}

pub(super) fn kfence_title(lines: &[&str], i: usize) -> String {
    // "BUG: KFENCE: use-after-free read in func+0x10/0x70"
    let rest = lines[i].trim_start_matches("BUG: ");
    let head = rest.split('+').next().unwrap_or(rest);
    head.trim_end().to_string()
}

pub(super) fn ubsan_title(lines: &[&str], i: usize) -> String {
    // "UBSAN: array-index-out-of-bounds in drivers/x.c:483:21": syzbot names
    // it by the first frame past the sanitizer's own.
    let what = lines[i]
        .trim_start_matches("UBSAN: ")
        .split(" in ")
        .next()
        .unwrap_or("")
        .trim();
    in_func(&format!("UBSAN: {what}"), first_frame(lines, i, &skipped))
}

pub(super) fn circular_title(lines: &[&str], i: usize) -> String {
    in_func(
        "possible deadlock",
        lockdep_at(lines, i, "is trying to acquire"),
    )
}

pub(super) fn inconsistent_title(lines: &[&str], i: usize) -> String {
    in_func("inconsistent lock state", lockdep_at(lines, i, "takes"))
}

pub(super) fn rcu_usage_title(lines: &[&str], i: usize) -> String {
    in_func(
        "WARNING: suspicious RCU usage",
        first_frame(lines, i, &|f| {
            skipped(f)
                || ["kmem", "slab", "kmalloc", "vmalloc"]
                    .iter()
                    .any(|s| f.contains(s))
        }),
    )
}

pub(super) fn wait_context_title(lines: &[&str], i: usize) -> String {
    in_func(
        "BUG: Invalid wait context",
        lockdep_at(lines, i, "is trying to lock"),
    )
}

pub(super) fn soft_lockup_title(lines: &[&str], i: usize) -> String {
    in_func("BUG: soft lockup", pc_frame(lines, i))
}

pub(super) fn hard_lockup_title(lines: &[&str], i: usize) -> String {
    in_func("watchdog: hard LOCKUP", pc_frame(lines, i))
}

pub(super) fn rcu_stall_title(lines: &[&str], i: usize) -> String {
    // syzbot's way first: the stall loops somewhere below a function that
    // dispatched the work (a syscall, a workqueue item, a timer), so the
    // report is named by the frame just above the first such anchor,
    // which does not change from one loop iteration to the next.
    if let Some(func) = stall_anchor_caller(lines, i) {
        return in_func("INFO: rcu detected stall", Some(func));
    }
    // No anchor (a truncated trace): syzbot calls that corrupted; the
    // interrupted function says more. Its RIP, else the first frame past
    // the timer interrupt and RCU's own.
    let func = pc_frame(lines, i).or_else(|| {
        first_frame(lines, i, &|f| {
            skipped(f)
                || SLEEP_FRAMES.iter().any(|s| f.starts_with(s))
                || [
                    "nmi_",
                    "arch_trigger",
                    "tick_",
                    "hrtimer",
                    "update_process",
                    "irq",
                ]
                .iter()
                .any(|s| f.contains(s))
        })
    });
    in_func("INFO: rcu detected stall", func)
}

/// Parts of frame names syzbot skips in a stall's stack, beyond [`SKIP`]:
/// RCU's and the timer interrupt's own, stack saving and unwinding,
/// allocators, debug objects (a KASAN kernel saves a stack on every
/// allocation, so these sit on top of most stalls).
pub(super) const STALL_SKIP: [&str; 14] = [
    "rcu",
    "apic_timer_interrupt",
    "stack_trace",
    "arch_stack_walk",
    "unwind_",
    "slab_",
    "kmem_cache",
    "kmalloc",
    "alloc_page",
    "debug_object",
    "dput",
    "spin_lock",
    "mutex_",
    "_indirect_thunk_",
];

/// The functions that dispatch work, by which syzbot anchors a stall's
/// name (syzkaller's linuxStallAnchorFrames, the generic ones and the
/// file, socket and fault entry points mm reports meet).
pub(super) static STALL_ANCHOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"process_one_work|do_syscall_|do_fast_syscall_|invoke_syscall|el0_svc_handler|",
        r"ret_fast_syscall|netif_receive_skb|do_softirq|call_timer_fn|_run_timers|",
        r"run_timer_softirq|hrtimer_run|run_ksoftirqd|smpboot_thread_fn|^kthread$|",
        r"start_secondary|cpu_startup_entry|ret_from_fork|vfs_write|vfs_read|",
        r"vfs_iter_read|vfs_iter_write|do_iter_read|do_iter_write|new_sync_read|",
        r"new_sync_write|vfs_ioctl|ksys_ioctl|blkdev_ioctl|^call_mmap|mmap_region|do_mmap|",
        r"do_dentry_open|vfs_open|^sock_sendmsg|^sock_recvmsg|__do_fault|do_page_fault|",
        r"^page_fault$|__fput|task_work_run|exit_to_usermode|smp_call_function|",
        r"tasklet_action|tasklet_hi_action"
    ))
    .unwrap()
});

/// The frame above the first anchor in the stalled CPU's stack: its RIP
/// after the timer interrupt, then the frames after it, without the ones
/// syzbot skips. `None` without an interrupt line or an anchor.
pub(super) fn stall_anchor_caller(lines: &[&str], from: usize) -> Option<String> {
    let end = lines.len().min(from + TRACE_LOOKAHEAD);
    let irq = (from..end).find(|&j| {
        let l = lines[j];
        l.contains("apic_timer_interrupt")
            || l.contains("Exception stack")
            || l.contains("el1h_64_irq")
    })?;
    // The RIP of the interrupted code follows the interrupt's frame at once;
    // one further down belongs to another CPU's dump.
    let rip = lines[irq + 1..end.min(irq + 4)]
        .iter()
        .find_map(|l| PC_FRAME.captures(l))
        .map(|c| clean(&c[1]));
    let frames = rip.into_iter().chain(
        lines[irq + 1..end]
            .iter()
            .take_while(|l| is_trace_line(l))
            .filter_map(|l| FRAME.captures(l))
            .filter(|c| c.get(1).is_none())
            .map(|c| clean(c.get(2).unwrap().as_str())),
    );
    let kept: Vec<String> = frames
        .filter(|f| !skipped(f) && !STALL_SKIP.iter().any(|s| f.contains(s)))
        .collect();
    let at = kept.iter().position(|f| STALL_ANCHOR.is_match(f))?;
    if kept[at].contains("smp_call_function") {
        return Some("smp_call_function".into());
    }
    Some(kept[at.saturating_sub(1)].clone())
}

/// Reliable frames of the call trace from line `from` on, in order.
pub(super) fn trace_frames(lines: &[&str], from: usize) -> Vec<String> {
    let Some(start) =
        (from..lines.len().min(from + TRACE_LOOKAHEAD * 2)).find(|&i| is_trace_start(lines[i]))
    else {
        return vec![];
    };
    let mut out = vec![];
    for l in &lines[start + 1..] {
        if let Some(c) = FRAME.captures(l) {
            if c.get(1).is_none() {
                out.push(clean(c.get(2).unwrap().as_str()));
            }
        } else if !is_trace_line(l) {
            break;
        }
    }
    out
}

/// Where syzbot groups hung tasks: a task stuck in rtnl_lock() or waiting
/// for an RCU grace period is a victim of whoever holds it up, so all of
/// them are one report ("INFO: task hung in synchronize_rcu").
pub(super) const HUNG_ANCHORS: [(&str, &str); 5] = [
    ("rtnl_lock", "rtnl_lock"),
    ("synchronize_rcu", "synchronize_rcu"),
    ("synchronize_srcu", "synchronize_rcu"),
    ("synchronize_net", "synchronize_rcu"),
    ("synchronize_sched", "synchronize_rcu"),
];

/// Parts of the names of the frames a blocked task sleeps in (syzbot names
/// a hung task by the first frame without one): where it waits, not what
/// it waits for.
pub(super) const HUNG_SLEEP: [&str; 13] = [
    "sched",
    "_lock",
    "_slowlock",
    "down",
    "rwsem",
    "completion",
    "kthread",
    "wait",
    "synchronize",
    "context_switch",
    "__switch_to",
    "cancel_delayed_work",
    "rcu_barrier",
];

/// Page cache helpers syzbot never names a report by: their caller is what
/// went wrong (a task hung in truncate_inode_pages_range() under
/// truncate_inode_pages() is "INFO: task hung in truncate_inode_pages").
pub(super) const PAGE_CACHE_HELPERS: [&str; 8] = [
    "__filemap_get_folio",
    "filemap_alloc_folio",
    "find_lock_entries",
    "truncate_inode_pages_range",
    "pagecache_get_page",
    "find_or_create_page",
    "do_read_cache_folio",
    "grab_cache_page_write_begin",
];

pub(super) fn hung_task_title(lines: &[&str], i: usize) -> String {
    let frames = trace_frames(lines, i);
    let anchored = frames.iter().find_map(|f| {
        HUNG_ANCHORS
            .iter()
            .find(|(a, _)| f.contains(a))
            .map(|(_, name)| name.to_string())
    });
    let func = anchored.or_else(|| {
        frames.into_iter().find(|f| {
            !skipped(f)
                && !HUNG_SLEEP.iter().any(|s| f.contains(s))
                && !PAGE_CACHE_HELPERS.contains(&f.as_str())
        })
    });
    in_func("INFO: task hung", func)
}

pub(super) fn page_dump_title(lines: &[&str], i: usize) -> String {
    lines[i].trim().to_string()
}

pub(super) fn panic_title(lines: &[&str], i: usize) -> String {
    let msg = lines[i]
        .trim_start_matches("Kernel panic - not syncing:")
        .trim();
    format!("kernel panic: {msg}")
}
