//! lockdep's reports (kernel/locking/lockdep.c): which header lines start
//! one, and their syzbot titles (syzkaller's pkg/report/linux.go). Each is
//! printed between a rule of '=' and a rule of '-', with a `WARNING:`
//! header in 6.12 (`BUG:` in kernels before 4.15, `[ BUG: ... ]` for the
//! wait-context check), and names the function at fault by a lock's
//! acquire site (`at: func+0x..`), a code address (`[<...>] func+0x..`),
//! or the first frame of its stack backtrace.

use std::sync::LazyLock;

use regex::Regex;

use super::title::{first_frame, in_func, skipped};
use super::trace::{clean, FRAME};
use super::TRACE_LOOKAHEAD;

/// How a lockdep header is titled, and whether its report has a stack.
pub(super) struct LockdepHeader {
    pub(super) title: fn(&[&str], usize) -> String,
    /// The report lists held locks and has no stack backtrace.
    pub(super) no_trace: bool,
}

/// The lockdep report a line starts, if any.
pub(super) fn lockdep_header(l: &str) -> Option<LockdepHeader> {
    static SAFE_UNSAFE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:WARNING|BUG): [A-Z_-]+-safe -> [A-Z_-]+-unsafe lock order detected")
            .unwrap()
    });
    static LOCKS_HELD: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(?:WARNING|BUG): .*still has locks held!").unwrap());
    let with = |title| {
        Some(LockdepHeader {
            title,
            no_trace: false,
        })
    };
    let rest = l
        .strip_prefix("WARNING: ")
        .or_else(|| l.strip_prefix("BUG: "));
    if l.starts_with("WARNING: possible circular locking dependency detected")
        || l.starts_with("WARNING: possible recursive locking detected")
        || l.starts_with("WARNING: possible irq lock inversion dependency detected")
    {
        return with(circular_title);
    }
    if SAFE_UNSAFE.is_match(l) {
        return with(safe_unsafe_title);
    }
    if l.starts_with("WARNING: inconsistent lock state") {
        return with(inconsistent_title);
    }
    if l.starts_with("WARNING: suspicious RCU usage") {
        return with(rcu_usage_title);
    }
    if l.starts_with("[ BUG: Invalid wait context ]") {
        return with(wait_context_title);
    }
    if LOCKS_HELD.is_match(l) {
        return with(locks_held_title);
    }
    match rest? {
        r if r.starts_with("bad unlock balance detected!") => with(unlock_balance_title),
        r if r.starts_with("held lock freed!") => with(held_lock_freed_title),
        r if r.starts_with("lock held when returning to user space!") => Some(LockdepHeader {
            title: return_to_user_title,
            no_trace: true,
        }),
        r if r.starts_with("Nested lock was not taken") => with(nested_lock_title),
        r if r.starts_with("bad contention detected!") => with(contention_title),
        r if r.starts_with("chain_key collision") => with(chain_key_title),
        _ => None,
    }
}

/// `WARNING` or `BUG`, as the header printed it: syzbot keeps it.
fn prefix(l: &str) -> &str {
    if l.starts_with("BUG: ") {
        "BUG"
    } else {
        "WARNING"
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

/// The function of the code address lockdep prints on the line after
/// `after` (print_ip_sym(): `[<ffffffff81234567>] mutex_unlock+0x9/0x10`).
fn ip_sym_after(lines: &[&str], from: usize, after: &str) -> Option<String> {
    static IP_SYM: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\s*\[<[0-9a-f]+>\] ([A-Za-z_][A-Za-z0-9_.]*)\+").unwrap());
    let end = lines.len().min(from + TRACE_LOOKAHEAD);
    let at = (from..end).find(|&j| lines[j].contains(after))?;
    lines[at + 1..end.min(at + 3)]
        .iter()
        .find_map(|l| IP_SYM.captures(l))
        .map(|c| clean(&c[1]))
}

/// `HARDIRQ-safe -> HARDIRQ-unsafe`: syzbot names it by the first frame
/// of the stack where the safe lock became safe (`... which became
/// HARDIRQ-irq-safe at:`), past lockdep's and the locking primitives' own.
pub(super) fn safe_unsafe_title(lines: &[&str], i: usize) -> String {
    let end = lines.len().min(i + TRACE_LOOKAHEAD * 2);
    let became =
        (i..end).find(|&j| lines[j].contains("which became") && lines[j].ends_with(" at:"));
    let func = became
        .and_then(|b| {
            lines[b + 1..end]
                .iter()
                .take_while(|l| FRAME.is_match(l) || l.trim().is_empty())
                .filter_map(|l| FRAME.captures(l))
                .map(|c| clean(c.get(2).unwrap().as_str()))
                .find(|f| !skipped(f))
        })
        .or_else(|| lockdep_at(lines, i, "is trying to acquire"));
    in_func("possible deadlock", func)
}

pub(super) fn unlock_balance_title(lines: &[&str], i: usize) -> String {
    in_func(
        &format!("{}: bad unlock balance", prefix(lines[i])),
        ip_sym_after(lines, i, "is trying to release lock"),
    )
}

/// By analogy with the unlock balance (syzkaller has no title of its own
/// for it): the code address that contended a lock nobody held.
pub(super) fn contention_title(lines: &[&str], i: usize) -> String {
    in_func(
        &format!("{}: bad contention", prefix(lines[i])),
        ip_sym_after(lines, i, "is trying to contend lock"),
    )
}

pub(super) fn held_lock_freed_title(lines: &[&str], i: usize) -> String {
    in_func(
        &format!("{}: held lock freed", prefix(lines[i])),
        lockdep_at(lines, i, "is freeing memory"),
    )
}

pub(super) fn locks_held_title(lines: &[&str], i: usize) -> String {
    in_func(
        &format!("{}: still has locks held", prefix(lines[i])),
        lockdep_at(lines, i, "still has locks held"),
    )
}

pub(super) fn return_to_user_title(lines: &[&str], i: usize) -> String {
    in_func(
        &format!(
            "{}: lock held when returning to user space",
            prefix(lines[i])
        ),
        lockdep_at(lines, i, "leaving the kernel with locks still held"),
    )
}

pub(super) fn nested_lock_title(lines: &[&str], i: usize) -> String {
    in_func(
        &format!("{}: nested lock was not taken", prefix(lines[i])),
        first_frame(lines, i, &skipped),
    )
}

/// By analogy with the nested-lock report (syzkaller has no title of its
/// own for it): the first frame of its stack backtrace.
pub(super) fn chain_key_title(lines: &[&str], i: usize) -> String {
    in_func(
        &format!("{}: chain_key collision", prefix(lines[i])),
        first_frame(lines, i, &skipped),
    )
}
