//! Hung tasks: the hung-task detector's report (`INFO: task <comm>:<pid>
//! blocked for more than <n> seconds.`, kernel/hung_task.c) and sysrq's
//! dump of the blocked tasks (`sysrq: Show Blocked State`, each task as
//! sched_show_task() prints it: `task:<comm> state:D ...` and its stack).
//! Both are titled the way syzbot titles hung tasks (syzkaller's
//! linuxHangTaskFrameExtractor): `INFO: task hung in <func>`, where func
//! is the first frame that is not where a task sleeps (the scheduler, a
//! lock's or a wait's slow path) but what it was doing.

use super::title::{in_func, skipped, trace_frames};
use super::trace::is_trace_line;

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

/// Where a sysrq dump of blocked tasks ends: after the last task's stack.
pub(super) fn blocked_dump_end(lines: &[&str], i: usize) -> usize {
    let mut end = i;
    for (j, l) in lines.iter().enumerate().skip(i + 1) {
        if l.starts_with("task:") || l.starts_with("Workqueue:") || is_trace_line(l) {
            end = j;
        } else if !l.trim().is_empty() {
            break;
        }
    }
    end
}
