//! Titles formed the way syzbot forms them (syzkaller's pkg/report):
//! one function per kind of report, each finding the function a report
//! is in from its header line and call trace.

use std::sync::LazyLock;

use regex::Regex;

use super::trace::{clean, is_trace_line, is_trace_start, FRAME, PC_FRAME};
use super::TRACE_LOOKAHEAD;

/// Frames syzkaller skips when it names a report by its stack: the
/// reporting machinery, locking primitives, list helpers, sanitizers.
pub(super) const SKIP: [&str; 42] = [
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
    "down_read",
    "down_write",
    "up_read",
    "up_write",
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

pub(super) fn warning_title(lines: &[&str], i: usize) -> String {
    static WARN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^WARNING: (?:CPU: \d+ PID: \d+ )?at \S+ ([A-Za-z_][A-Za-z0-9_.]*)\+").unwrap()
    });
    let l = lines[i];
    // refcount_warn_saturate() names every refcount bug alike: syzbot
    // names them by the first frame past refcount's own (and kobject's).
    if l.contains(" at lib/refcount.c:") {
        return in_func(
            "WARNING: refcount bug",
            first_frame(lines, i, &|f| {
                skipped(f) || f.contains("refcount") || f.starts_with("kobject_")
            }),
        );
    }
    // The list checks with CONFIG_BUG_ON_DATA_CORRUPTION off: a WARN
    // instead of a BUG, the same check; named as the BUG is.
    if l.contains(" at lib/list_debug.c:") {
        return list_title(lines, i);
    }
    let func = WARN
        .captures(l)
        .map(|c| clean(&c[1]))
        .or_else(|| pc_frame(lines, i));
    in_func("WARNING", func)
}

/// SLUB's debug checks (mm/slub.c slab_bug(): `BUG kmalloc-64 (Not
/// tainted): Object already free`): syzbot's title is the reason without
/// the cache (`BUG: Object already free`); the reason's numbers and
/// addresses go too, so that one check is one title.
pub(super) fn slub_title(lines: &[&str], i: usize) -> String {
    static DETAIL: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\(?0x[0-9a-fA-F]+\)?|@\S+|-?\b\d+\b").unwrap());
    let reason = lines[i].split_once("): ").map_or("", |(_, r)| r);
    let first = reason.split(". ").next().unwrap_or(reason);
    let cleaned = DETAIL.replace_all(first, "");
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    format!("BUG: {}", words.join(" ").trim_end_matches(['.', ':', ',']))
}

/// A global OOM kill (the machine, not a memory cgroup, ran out): a fixed
/// title, the kernel's own words, like syzbot's fixed titles for reports
/// whose stack says nothing about the cause.
pub(super) fn global_oom_title(_lines: &[&str], _i: usize) -> String {
    "Out of memory: Killed process".to_string()
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

/// The frames of the call trace from line `from` on, in order: the
/// reliable ones, or, when the unwinder marked every frame `? ` (a guess:
/// mmci's guest kernels print such traces), all of them, which is still
/// better than no function at all.
pub(super) fn trace_frames(lines: &[&str], from: usize) -> Vec<String> {
    let Some(start) =
        (from..lines.len().min(from + TRACE_LOOKAHEAD * 2)).find(|&i| is_trace_start(lines[i]))
    else {
        return vec![];
    };
    let (mut reliable, mut all) = (vec![], vec![]);
    for l in &lines[start + 1..] {
        if let Some(c) = FRAME.captures(l) {
            let f = clean(c.get(2).unwrap().as_str());
            if c.get(1).is_none() {
                reliable.push(f.clone());
            }
            all.push(f);
        } else if !is_trace_line(l) {
            break;
        }
    }
    if reliable.is_empty() {
        all
    } else {
        reliable
    }
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
