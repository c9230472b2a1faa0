//! Kernel splats on a guest's console: WARNINGs, BUGs, oopses, sanitizer and
//! lockdep reports, lockups, stalls, hung tasks, list corruption, bad pages
//! and panics. Pure: console text in, splats out. Each splat gets a title
//! formed the way syzbot forms them (syzkaller's pkg/report: "WARNING in
//! <func>", "possible deadlock in <func>", "kernel BUG in <func>", ...), so
//! that a maintainer can search lore and the syzbot dashboard for it, and an
//! excerpt from its header to the end of its call trace, bounded.
//!
//! Not splats: OOM-killer reports (the workload causes them on purpose) and
//! anything that does not start like a kernel report (the workload's output).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// What kind of report a splat is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplatKind {
    Warning,
    Bug,
    Oops,
    GeneralProtectionFault,
    Kasan,
    Kfence,
    Ubsan,
    Lockdep,
    SoftLockup,
    HardLockup,
    RcuStall,
    HungTask,
    ListCorruption,
    BadPage,
    Panic,
}

impl SplatKind {
    pub fn name(self) -> &'static str {
        match self {
            SplatKind::Warning => "warning",
            SplatKind::Bug => "BUG",
            SplatKind::Oops => "oops",
            SplatKind::GeneralProtectionFault => "general protection fault",
            SplatKind::Kasan => "KASAN",
            SplatKind::Kfence => "KFENCE",
            SplatKind::Ubsan => "UBSAN",
            SplatKind::Lockdep => "lockdep",
            SplatKind::SoftLockup => "soft lockup",
            SplatKind::HardLockup => "hard lockup",
            SplatKind::RcuStall => "RCU stall",
            SplatKind::HungTask => "hung task",
            SplatKind::ListCorruption => "list corruption",
            SplatKind::BadPage => "bad page",
            SplatKind::Panic => "panic",
        }
    }

    /// When one report holds several headers (list corruption, then
    /// `kernel BUG at`, then `Oops:`), the most telling one names it.
    fn precedence(self) -> u8 {
        match self {
            SplatKind::ListCorruption => 9,
            SplatKind::Kasan | SplatKind::Kfence | SplatKind::Ubsan => 8,
            SplatKind::Lockdep => 7,
            SplatKind::BadPage => 5,
            SplatKind::Bug => 4,
            SplatKind::Warning
            | SplatKind::SoftLockup
            | SplatKind::HardLockup
            | SplatKind::RcuStall
            | SplatKind::HungTask => 3,
            SplatKind::GeneralProtectionFault => 2,
            SplatKind::Oops => 1,
            SplatKind::Panic => 0,
        }
    }
}

/// One distinct splat of a console: the same title seen again only counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Splat {
    pub kind: SplatKind,
    pub title: String,
    /// How many times the console shows it.
    pub count: u32,
    /// Console line (1-based) where the first occurrence starts.
    pub line: usize,
    /// The first occurrence, from its header to the end of its call trace,
    /// without printk timestamps; at most [`MAX_EXCERPT_LINES`] lines.
    pub excerpt: String,
}

/// Longer reports keep their head and their tail (the call trace).
pub const MAX_EXCERPT_LINES: usize = 80;
const HEAD_LINES: usize = 25;
/// How far after a header its call trace may start.
const TRACE_LOOKAHEAD: usize = 60;

/// The printk prefix syzkaller strips: loglevel, timestamp, caller id.
static PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:<\d+>)?\[ *\d+\.\d+\](?:\[ *[CT]\d+\])? ?").unwrap());

/// A call-trace frame: `func+0x1/0x2`, `func file.c:1 [inline]`,
/// `func (file.c:1)` (decoded), with `? ` for unreliable frames and an
/// optional `[<address>]`.
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:\[<?[0-9a-f]+>?\]\s*)?(\?\s+)?([A-Za-z_][A-Za-z0-9_.$]*)(?:\+0x[0-9a-f]+/0x[0-9a-f]+|\s+\S+:\d+ \[inline\]|\s+\()",
    )
    .unwrap()
});

/// The faulting function: x86 `RIP: 0010:func+0x..`, i386 `EIP: func+0x..`,
/// arm64 `pc : func+0x..`.
static PC_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:RIP: [0-9a-f]{4}:|EIP: |pc : )([A-Za-z_][A-Za-z0-9_.$]*)[+ ]").unwrap()
});

struct Header {
    kind: SplatKind,
    /// Which header of a report names it (see [`SplatKind::precedence`]).
    rank: u8,
    /// The report has no call trace of its own (one line).
    lone: bool,
    /// For lockdep: the call trace that counts follows `stack backtrace:`.
    after_backtrace: bool,
    title: fn(&[&str], usize) -> String,
}

/// Function names without compiler suffixes (`.isra.0`, `.cold`, `.part.0`).
fn clean(func: &str) -> String {
    func.split('.').next().unwrap_or(func).to_string()
}

/// Frames syzkaller skips when it names a report by its stack: the
/// reporting machinery, locking primitives, list helpers, sanitizers.
const SKIP: [&str; 38] = [
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

fn skipped(func: &str) -> bool {
    let f = func.trim_start_matches('_');
    SKIP.iter()
        .any(|s| f.starts_with(s.trim_start_matches('_')))
}

/// Frames a blocked task always shows: it is where it sleeps, not why.
const SLEEP_FRAMES: [&str; 12] = [
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
fn first_frame(lines: &[&str], from: usize, skip: &dyn Fn(&str) -> bool) -> Option<String> {
    trace_frames(lines, from).into_iter().find(|f| !skip(f))
}

/// The faulting function (RIP/pc), from line `from` on.
fn pc_frame(lines: &[&str], from: usize) -> Option<String> {
    lines[from..lines.len().min(from + TRACE_LOOKAHEAD)]
        .iter()
        .find_map(|l| PC_FRAME.captures(l))
        .map(|c| clean(&c[1]))
}

fn in_func(prefix: &str, func: Option<String>) -> String {
    match func {
        Some(f) => format!("{prefix} in {f}"),
        None => prefix.to_string(),
    }
}

/// The function after `at: ` on the first line matching `after` (lockdep
/// names the lock's acquirer so).
fn lockdep_at(lines: &[&str], from: usize, after: &str) -> Option<String> {
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

fn warning_title(lines: &[&str], i: usize) -> String {
    static WARN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^WARNING: (?:CPU: \d+ PID: \d+ )?at \S+ ([A-Za-z_][A-Za-z0-9_.]*)\+").unwrap()
    });
    let func = WARN
        .captures(lines[i])
        .map(|c| clean(&c[1]))
        .or_else(|| pc_frame(lines, i));
    in_func("WARNING", func)
}

fn bug_title(lines: &[&str], i: usize) -> String {
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

fn kernel_bug_title(lines: &[&str], i: usize) -> String {
    if lines[i].contains("lib/list_debug.c") {
        return list_title(lines, i);
    }
    in_func("kernel BUG", pc_frame(lines, i))
}

fn list_title(lines: &[&str], i: usize) -> String {
    in_func("BUG: corrupted list", first_frame(lines, i, &skipped))
}

fn oops_title(lines: &[&str], i: usize) -> String {
    if lines[i].contains("general protection fault") {
        return gpf_title(lines, i);
    }
    in_func("Oops", pc_frame(lines, i))
}

fn gpf_title(lines: &[&str], i: usize) -> String {
    in_func("general protection fault", pc_frame(lines, i))
}

fn kasan_title(lines: &[&str], i: usize) -> String {
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

fn kfence_title(lines: &[&str], i: usize) -> String {
    // "BUG: KFENCE: use-after-free read in func+0x10/0x70"
    let rest = lines[i].trim_start_matches("BUG: ");
    let head = rest.split('+').next().unwrap_or(rest);
    head.trim_end().to_string()
}

fn ubsan_title(lines: &[&str], i: usize) -> String {
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

fn circular_title(lines: &[&str], i: usize) -> String {
    in_func(
        "possible deadlock",
        lockdep_at(lines, i, "is trying to acquire"),
    )
}

fn inconsistent_title(lines: &[&str], i: usize) -> String {
    in_func("inconsistent lock state", lockdep_at(lines, i, "takes"))
}

fn rcu_usage_title(lines: &[&str], i: usize) -> String {
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

fn wait_context_title(lines: &[&str], i: usize) -> String {
    in_func(
        "BUG: Invalid wait context",
        lockdep_at(lines, i, "is trying to lock"),
    )
}

fn soft_lockup_title(lines: &[&str], i: usize) -> String {
    in_func("BUG: soft lockup", pc_frame(lines, i))
}

fn hard_lockup_title(lines: &[&str], i: usize) -> String {
    in_func("watchdog: hard LOCKUP", pc_frame(lines, i))
}

fn rcu_stall_title(lines: &[&str], i: usize) -> String {
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
const STALL_SKIP: [&str; 14] = [
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
static STALL_ANCHOR: LazyLock<Regex> = LazyLock::new(|| {
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
fn stall_anchor_caller(lines: &[&str], from: usize) -> Option<String> {
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
fn trace_frames(lines: &[&str], from: usize) -> Vec<String> {
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
const HUNG_ANCHORS: [(&str, &str); 5] = [
    ("rtnl_lock", "rtnl_lock"),
    ("synchronize_rcu", "synchronize_rcu"),
    ("synchronize_srcu", "synchronize_rcu"),
    ("synchronize_net", "synchronize_rcu"),
    ("synchronize_sched", "synchronize_rcu"),
];

/// Parts of the names of the frames a blocked task sleeps in (syzbot names
/// a hung task by the first frame without one): where it waits, not what
/// it waits for.
const HUNG_SLEEP: [&str; 13] = [
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
const PAGE_CACHE_HELPERS: [&str; 8] = [
    "__filemap_get_folio",
    "filemap_alloc_folio",
    "find_lock_entries",
    "truncate_inode_pages_range",
    "pagecache_get_page",
    "find_or_create_page",
    "do_read_cache_folio",
    "grab_cache_page_write_begin",
];

fn hung_task_title(lines: &[&str], i: usize) -> String {
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

fn page_dump_title(lines: &[&str], i: usize) -> String {
    lines[i].trim().to_string()
}

fn panic_title(lines: &[&str], i: usize) -> String {
    let msg = lines[i]
        .trim_start_matches("Kernel panic - not syncing:")
        .trim();
    format!("kernel panic: {msg}")
}

/// The header a console line starts, if any. Lines are without printk
/// prefix. Only kernel wording counts: a workload printing "WARNING:" does
/// not start a report.
fn header(l: &str) -> Option<Header> {
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

fn is_trace_start(l: &str) -> bool {
    let t = l.trim_start();
    t.starts_with("Call Trace:") || t.starts_with("Call trace:")
}

/// Lines that belong to a call trace and the register dumps around it.
fn is_trace_line(l: &str) -> bool {
    static REG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^(?:R[0-9A-Z]{2}|E[A-Z]{2}|[A-Z]S|CR\d|DR\d|x\d+ ?|pc|lr|sp|pstate|Code|RIP|EIP)\s*:",
        )
        .unwrap()
    });
    l.starts_with([' ', '\t'])
        || l.starts_with("<TASK>")
        || l.starts_with("</TASK>")
        || l.starts_with("<IRQ>")
        || l.starts_with("</IRQ>")
        || l.starts_with("[<")
        || l.starts_with("irq event stamp:")
        || l.starts_with("hardirqs last")
        || l.starts_with("softirqs last")
        || l.starts_with("Modules linked in:")
        || l.starts_with("Kernel Offset:")
        || is_trace_start(l)
        || REG.is_match(l)
        || FRAME.is_match(l)
}

/// Lines of a dump_page(): the page, its flags, raw words, why.
fn is_page_dump_line(l: &str) -> bool {
    const PAGE_DUMP: [&str; 12] = [
        "page:",
        "page ",
        "flags:",
        "raw:",
        "head:",
        "anon",
        "page dumped because",
        "page->",
        "memcg:",
        "addr:",
        "file:",
        "aops:",
    ];
    PAGE_DUMP.iter().any(|p| l.starts_with(p))
}

fn is_end_marker(l: &str) -> bool {
    l.starts_with("---[ end trace") || l.starts_with("---[ end Kernel panic")
}

fn is_rule(l: &str) -> bool {
    let t = l.trim();
    t.len() >= 10 && t.bytes().all(|b| b == b'=')
}

/// The last line (inclusive) of the report whose header is at `i`.
fn report_end(lines: &[&str], i: usize, h: &Header) -> usize {
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
fn report_start(lines: &[&str], i: usize, kind: SplatKind) -> usize {
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

fn bounded(lines: &[&str]) -> String {
    if lines.len() <= MAX_EXCERPT_LINES {
        return lines.join("\n");
    }
    let tail = MAX_EXCERPT_LINES - HEAD_LINES - 1;
    let cut = lines.len() - HEAD_LINES - tail;
    let mut out: Vec<String> = lines[..HEAD_LINES].iter().map(|s| s.to_string()).collect();
    out.push(format!("[... {cut} lines ...]"));
    out.extend(lines[lines.len() - tail..].iter().map(|s| s.to_string()));
    out.join("\n")
}

/// A console line without its printk prefix (timestamp, caller id), with
/// the indentation after it kept: it tells call-trace frames apart.
pub fn without_prefix(line: &str) -> &str {
    let line = line.trim_end_matches('\r');
    match PREFIX.find(line) {
        Some(m) => &line[m.end()..],
        None => line,
    }
}

/// Every splat on `console`, in order of first appearance; the same title
/// twice is one splat with a count.
pub fn detect(console: &str) -> Vec<Splat> {
    let lines: Vec<&str> = console.lines().map(without_prefix).collect();
    let mut out: Vec<Splat> = vec![];
    let mut i = 0;
    while i < lines.len() {
        let Some(h) = header(lines[i]) else {
            i += 1;
            continue;
        };
        // One report, possibly with several headers: each one's trace
        // extends it, and the most telling one names it.
        let mut best = (h.rank, (h.title)(&lines, i), h.kind);
        let mut end = report_end(&lines, i, &h);
        let mut j = i + 1;
        while j <= end && j < lines.len() {
            if let Some(h2) = header(lines[j]) {
                if !h.lone && !h2.lone {
                    end = end.max(report_end(&lines, j, &h2));
                    if h2.rank > best.0 {
                        best = (h2.rank, (h2.title)(&lines, j), h2.kind);
                    }
                } else if h.lone {
                    break;
                }
            }
            j += 1;
        }
        // The panic an oops ends in is the same crash.
        if best.2 != SplatKind::Panic {
            if let Some(k) = (end + 1..lines.len().min(end + 16))
                .find(|&k| lines[k].starts_with("Kernel panic - not syncing"))
            {
                end = report_end(&lines, k, &header(lines[k]).unwrap()).max(k);
            }
        }
        let start = report_start(&lines, i, h.kind);
        let (_, title, kind) = best;
        match out.iter_mut().find(|s| s.title == title) {
            Some(s) => s.count += 1,
            None => out.push(Splat {
                kind,
                title,
                count: 1,
                line: start + 1,
                excerpt: bounded(&lines[start..=end.min(lines.len() - 1)]),
            }),
        }
        i = end.max(i) + 1;
    }
    out
}

#[cfg(test)]
mod tests;
