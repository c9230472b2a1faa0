//! Table-driven, like tests.rs: consoles written from the 6.12 kernel's
//! own format strings (kernel/locking/lockdep.c, mm/slub.c slab_bug(),
//! lib/refcount.c, lib/list_debug.c, kernel/hung_task.c, mm/oom_kill.c,
//! lib/ubsan.c) where no public console was at hand, and two real sysrq
//! dumps of blocked tasks (tests/fixtures/splats), with the syzbot-style
//! titles they must give.

use super::*;
use SplatKind::*;

const HW: &str = "CPU: 1 UID: 0 PID: 61 Comm: workload Not tainted 6.12.0 #1\n\
Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014\n";

/// A stack as dump_stack() prints it, with `frames` below the reporter's.
fn stack(frames: &[&str]) -> String {
    let mut s = format!("{HW}Call Trace:\n <TASK>\n dump_stack_lvl+0x5d/0x80\n");
    for f in frames {
        s.push_str(&format!(" {f}+0x4e/0x120\n"));
    }
    s.push_str(" </TASK>\n");
    s
}

/// A lockdep report: its rules, the header, its body, `stack backtrace:`.
fn lockdep(header: &str, body: &str, frames: &[&str]) -> String {
    format!(
        "[   12.000001] \n[   12.000002] =====================================\n\
         [   12.000003] {header}\n6.12.0 #1 Not tainted\n-------------------------------------\n\
         {body}\nstack backtrace:\n{}",
        stack(frames)
    )
}

/// A WARN() with its message, as __warn() prints it, and an ORC stack.
fn warn(message: &str, at: &str, site: &str, frames: &[&str]) -> String {
    let mut s = format!(
        "------------[ cut here ]------------\n{message}\n\
         WARNING: CPU: 1 PID: 61 at {at} {site}+0x9c/0xc0\nModules linked in:\n{HW}\
         RIP: 0010:{site}+0x9c/0xc0\nRSP: 0018:ffffc900001f7d88 EFLAGS: 00010286\n\
         Call Trace:\n <TASK>\n ? __warn+0x89/0x140\n ? {site}+0x9c/0xc0\n ? report_bug+0x171/0x1a0\n \
         ? handle_bug+0x3c/0x80\n ? exc_invalid_op+0x17/0x70\n ? asm_exc_invalid_op+0x1a/0x20\n"
    );
    for f in frames {
        s.push_str(&format!(" {f}+0x4e/0x120\n"));
    }
    s.push_str(" </TASK>\n---[ end trace 0000000000000000 ]---\n");
    s
}

/// An OOM kill as mm/oom_kill.c prints it, with its constraint.
fn oom(constraint: &str, message: &str) -> String {
    format!(
        "workload invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0\n{}\
         Mem-Info:\nactive_anon:250000 inactive_anon:12 isolated_anon:0\nNode 0 DMA32 free:2920kB boost:0kB min:2940kB\n\
         Tasks state (memory values in pages):\n\
         [  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name\n\
         [     61]     0    59   262400   250000   250000        0         0  2031616        0             0 workload\n\
         oom-kill:constraint={constraint},nodemask=(null),task=workload,pid=61,uid=0\n\
         {message}: Killed process 61 (workload) total-vm:1049600kB, anon-rss:1000000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1984kB oom_score_adj:0\n",
        stack(&[
            "dump_header",
            "oom_kill_process",
            "out_of_memory",
            "__alloc_pages_slowpath",
            "do_anonymous_page",
            "handle_mm_fault",
        ])
    )
}

/// A hung task as kernel/hung_task.c reports it (then sched_show_task()).
fn hung(comm: &str, frames: &[&str]) -> String {
    let mut s = format!(
        "[   31.512345] INFO: task {comm}:61 blocked for more than 10 seconds.\n\
         [   31.512400]       Not tainted 6.12.0 #1\n\
         [   31.512450] \"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.\n\
         [   31.512500] task:{comm:<15.15} state:D stack:0     pid:61    tgid:59    ppid:57     flags:0x00004002\n\
         [   31.512550] Call Trace:\n[   31.512560]  <TASK>\n"
    );
    for f in frames {
        s.push_str(&format!("[   31.512600]  {f}+0x3f2/0xb90\n"));
    }
    s.push_str("[   31.512700]  </TASK>\n");
    s
}

/// A case's name, its console, and the kind and title of each splat.
type Case = (&'static str, String, Vec<(SplatKind, &'static str)>);

fn cases() -> Vec<Case> {
    vec![
        (
            "SOFTIRQ-safe -> SOFTIRQ-unsafe",
            lockdep(
                "WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected",
                "kswapd0/40 [HC0[0]:SC0[0]:HE0:SE1] is trying to acquire:\n\
                 ffff888004a1c0d8 (&lruvec->lru_lock){+.+.}-{2:2}, at: folio_lruvec_lock_irq+0x5e/0x120\n\n\
                 and this task is already holding:\n\
                 ffff888003f0e018 (&mapping->i_pages){..-.}-{2:2}, at: __remove_mapping+0x4a/0x2d0\n\
                 which would create a new lock dependency:\n (&mapping->i_pages){..-.}-{2:2} -> (&lruvec->lru_lock){+.+.}-{2:2}\n\n\
                 but this new dependency connects a SOFTIRQ-irq-safe lock:\n (&mapping->i_pages){..-.}-{2:2}\n\n\
                 ... which became SOFTIRQ-irq-safe at:\n  lock_acquire+0xd2/0x2f0\n  _raw_spin_lock_irqsave+0x3d/0x60\n  \
                 __folio_end_writeback+0x8c/0x2a0\n  folio_end_writeback+0x5a/0x120\n\n\
                 to a SOFTIRQ-irq-unsafe lock:\n (&lruvec->lru_lock){+.+.}-{2:2}\n\n\
                 ... which became SOFTIRQ-irq-unsafe at:\n...\n  lock_acquire+0xd2/0x2f0\n  _raw_spin_lock+0x2f/0x40\n  \
                 folio_lruvec_lock_irq+0x5e/0x120\n",
                &["print_bad_irq_dependency", "check_prev_add", "validate_chain", "__lock_acquire", "lock_acquire", "_raw_spin_lock_irq", "folio_lruvec_lock_irq", "shrink_folio_list"],
            ),
            vec![(Lockdep, "possible deadlock in __folio_end_writeback")],
        ),
        (
            "bad unlock balance",
            lockdep(
                "WARNING: bad unlock balance detected!",
                "workload/61 is trying to release lock (&lruvec->lru_lock) at:\n\
                 [<ffffffff8123a5c1>] shrink_folio_list+0x5d1/0x1b90\n\
                 but there are no more locks to release!\n\nother info that might help us debug this:\nno locks held by workload/61.\n",
                &["print_unlock_imbalance_bug", "lock_release", "_raw_spin_unlock_irq", "shrink_folio_list"],
            ),
            vec![(Lockdep, "WARNING: bad unlock balance in shrink_folio_list")],
        ),
        (
            "held lock freed",
            lockdep(
                "WARNING: held lock freed!",
                "workload/61 is freeing memory ffff888005a3c000-ffff888005a3c3ff, with a lock still held there!\n\
                 ffff888005a3c0c8 (&mm->mmap_lock){++++}-{4:4}, at: exit_mmap+0x6a/0x3f0\n\
                 1 lock held by workload/61:\n #0: ffff888005a3c0c8 (&mm->mmap_lock){++++}-{4:4}, at: exit_mmap+0x6a/0x3f0\n",
                &["debug_check_no_locks_freed", "kmem_cache_free", "__mmdrop", "exit_mmap"],
            ),
            vec![(Lockdep, "WARNING: held lock freed in exit_mmap")],
        ),
        (
            "still has locks held",
            lockdep(
                "WARNING: workload/61 still has locks held!",
                "1 lock held by workload/61:\n #0: ffff888004a1c0d8 (&lruvec->lru_lock){+.+.}-{2:2}, at: shrink_active_list+0x9c/0x560\n",
                &["debug_check_no_locks_held", "do_exit", "do_group_exit"],
            ),
            vec![(Lockdep, "WARNING: still has locks held in shrink_active_list")],
        ),
        (
            "lock held when returning to user space",
            // No stack backtrace: the report ends with the held locks.
            "================================================\n\
             WARNING: lock held when returning to user space!\n6.12.0 #1 Not tainted\n\
             ------------------------------------------------\n\
             workload/61 is leaving the kernel with locks still held!\n1 lock held by workload/61:\n \
             #0: ffff888005a3c0c8 (&mm->mmap_lock){++++}-{4:4}, at: madvise_lock+0x25/0x80\n\
             workload: page allocation stalls for 10000ms\n"
                .to_string(),
            vec![(Lockdep, "WARNING: lock held when returning to user space in madvise_lock")],
        ),
        (
            "nested lock not taken",
            lockdep(
                "WARNING: Nested lock was not taken",
                "workload/61 is trying to lock:\nffff888005a3d128 (&anon_vma->rwsem){+.+.}-{4:4}, at: mm_take_all_locks+0x1a4/0x2b0\n\n\
                 but this task is not holding:\n&mm->mmap_lock\n",
                &["print_lock_nested_lock_not_held", "__lock_acquire", "lock_acquire", "down_write_nest_lock", "mm_take_all_locks", "__mmu_notifier_register"],
            ),
            vec![(Lockdep, "WARNING: nested lock was not taken in mm_take_all_locks")],
        ),
        (
            "bad contention",
            lockdep(
                "WARNING: bad contention detected!",
                "workload/61 is trying to contend lock (&lruvec->lru_lock) at:\n\
                 [<ffffffff8123b0e2>] folio_lruvec_lock_irqsave+0x42/0x120\nbut there are no locks held!\n",
                &["print_lock_contention_bug", "lock_contended", "_raw_spin_lock_irqsave", "folio_lruvec_lock_irqsave"],
            ),
            vec![(Lockdep, "WARNING: bad contention in folio_lruvec_lock_irqsave")],
        ),
        (
            "chain_key collision",
            lockdep(
                "WARNING: chain_key collision",
                "workload/61: Hash chain already cached but the contents don't match!\nHeld locks:depth: 1\n\
                 class_idx:1234 -> chain_key:0000000000001234 (&lruvec->lru_lock){+.+.}-{2:2}\n\
                 Locks in cached chain:depth: 1\nclass_idx:1235 -> chain_key:0000000000001234 (&zone->lock){..-.}-{2:2}\n",
                &["print_collision", "check_no_collision", "validate_chain", "__lock_acquire", "lock_acquire", "_raw_spin_lock", "folio_batch_move_lru"],
            ),
            vec![(Lockdep, "WARNING: chain_key collision in folio_batch_move_lru")],
        ),
        (
            "SLUB checks: the reason without cache, numbers and addresses",
            format!(
                "=============================================================================\n\
                 BUG kmalloc-64 (Not tainted): Object already free\n\
                 -----------------------------------------------------------------------------\n\n\
                 Allocated in memcg_alloc_slab_cgroups+0x3d/0x90 age=1012 cpu=1 pid=61\n{}\
                 =============================================================================\n\
                 BUG kmalloc-128 (Tainted: G    B             ): Wrong object count. Counter is 5 but counted were 6\n\
                 -----------------------------------------------------------------------------\n\n{}",
                stack(&["free_to_partial_list", "kfree", "mem_cgroup_css_free"]),
                stack(&["slab_err", "on_freelist", "free_debug_processing", "kfree", "shrinker_free"]),
            ),
            vec![(Bug, "BUG: Object already free"), (Bug, "BUG: Wrong object count")],
        ),
        (
            "refcount saturation: each caller its own title",
            format!(
                "{}{}",
                warn("refcount_t: underflow; use-after-free.", "lib/refcount.c:28", "refcount_warn_saturate", &["zswap_pool_put", "zswap_store", "swap_writepage"]),
                warn("refcount_t: addition on 0; use-after-free.", "lib/refcount.c:25", "refcount_warn_saturate", &["kobject_get", "mem_cgroup_css_online", "online_css"]),
            ),
            vec![
                (Warning, "WARNING: refcount bug in zswap_pool_put"),
                (Warning, "WARNING: refcount bug in mem_cgroup_css_online"),
            ],
        ),
        (
            "list corruption and double add as WARNs: each caller its own title",
            format!(
                "{}{}",
                warn(
                    "list_add double add: new=ffff888004c6e0c8, prev=ffff888004c6e0c8, next=ffff888003a1d010.",
                    "lib/list_debug.c:35",
                    "__list_add_valid_or_report",
                    &["move_folios_to_lru", "shrink_inactive_list", "shrink_lruvec"],
                ),
                warn(
                    "list_del corruption. prev->next should be ffff888004c6e0c8, but was ffff888004c6e0d8. (prev=ffff888003a1d010)",
                    "lib/list_debug.c:62",
                    "__list_del_entry_valid_or_report",
                    &["isolate_lru_folios", "shrink_inactive_list", "shrink_lruvec"],
                ),
            ),
            vec![
                (ListCorruption, "BUG: corrupted list in move_folios_to_lru"),
                (ListCorruption, "BUG: corrupted list in isolate_lru_folios"),
            ],
        ),
        (
            "hung tasks: comms with spaces and colons, guessed frames",
            format!(
                "{}{}{}",
                hung("foo bar", &["__schedule", "schedule", "io_schedule", "folio_wait_bit_common", "shrink_folio_list", "shrink_inactive_list"]),
                hung("kworker/u8:1", &["__schedule", "schedule", "rwsem_down_read_slowpath", "down_read", "mmap_read_lock", "lru_gen_look_around"]),
                // Every frame `? ` (the guest kernels' unwinder guesses).
                hung("workload", &["? __schedule", "? schedule", "? shrink_folio_list", "? shrink_lruvec"]),
            ),
            vec![
                (HungTask, "INFO: task hung in shrink_folio_list"),
                (HungTask, "INFO: task hung in lru_gen_look_around"),
            ],
        ),
        (
            "UBSAN bounds",
            format!(
                "------------[ cut here ]------------\n\
                 UBSAN: array-index-out-of-bounds in mm/vmscan.c:4567:21\n\
                 index 4 is out of range for type 'long unsigned int [4]'\n{}---[ end trace ]---\n",
                stack(&["__ubsan_handle_out_of_bounds", "isolate_folios", "evict_folios", "try_to_shrink_lruvec"]),
            ),
            vec![(Ubsan, "UBSAN: array-index-out-of-bounds in isolate_folios")],
        ),
        (
            // Real: s390 /proc/kcore reads (stable, kcore fix commit).
            "KFENCE invalid read",
            "BUG: KFENCE: invalid read in copy_from_kernel_nofault+0x5e/0x120\n\
             Invalid read at 0x00000000f4f5149f:\n copy_from_kernel_nofault+0x5e/0x120\n \
             read_kcore+0x6b2/0x870\n proc_reg_read+0x9a/0xf0\n vfs_read+0x94/0x270\n"
                .to_string(),
            vec![(Kfence, "KFENCE: invalid read in copy_from_kernel_nofault")],
        ),
        (
            "global OOM kill: a splat",
            oom("CONSTRAINT_NONE", "Out of memory"),
            vec![(Oom, "Out of memory: Killed process")],
        ),
        (
            "memory cgroup OOM kill: the workload's expected end",
            oom("CONSTRAINT_MEMCG", "Memory cgroup out of memory"),
            vec![],
        ),
        (
            "sysrq w, x86_64 (real)",
            include_str!("../../../tests/fixtures/splats/sysrq_blocked_md.txt").to_string(),
            vec![(HungTask, "INFO: task hung in stop_sync_thread")],
        ),
        (
            "sysrq w, arm64 (real)",
            include_str!("../../../tests/fixtures/splats/sysrq_blocked_arm64.txt").to_string(),
            vec![(HungTask, "INFO: task hung in usleep_range_state")],
        ),
    ]
}

#[test]
fn reports_from_the_kernels_format_strings_get_syzbot_titles() {
    for (name, console, want) in cases() {
        let got: Vec<(SplatKind, String)> = detect(&console)
            .into_iter()
            .map(|s| (s.kind, s.title))
            .collect();
        let want: Vec<(SplatKind, String)> =
            want.into_iter().map(|(k, t)| (k, t.to_string())).collect();
        assert_eq!(got, want, "{name}");
    }
    // The third hung task's frames are all guesses: it still has a name,
    // the first one's, so it counts as that one again.
    let (_, console, _) = cases()
        .into_iter()
        .find(|(n, _, _)| n.starts_with("hung tasks"))
        .unwrap();
    assert_eq!(detect(&console)[0].count, 2);
}

/// The excerpt of a report without a stack ends with its held locks; a
/// sysrq dump keeps every task's stack; a global OOM's keeps its stack.
#[test]
fn excerpts_end_where_their_reports_end() {
    let cases = cases();
    let excerpt = |name: &str| {
        let (_, console, _) = cases.iter().find(|(n, _, _)| *n == name).unwrap();
        detect(console)[0].excerpt.clone()
    };
    let ret = excerpt("lock held when returning to user space");
    assert!(
        ret.starts_with("=====") && ret.ends_with("madvise_lock+0x25/0x80"),
        "{ret}"
    );
    let dump = excerpt("sysrq w, arm64 (real)");
    assert!(dump.starts_with("sysrq: Show Blocked State"), "{dump}");
    assert!(dump.ends_with(" el0t_64_sync+0x168/0x16c"), "{dump}");
    let oom = excerpt("global OOM kill: a splat");
    assert!(oom.starts_with("workload invoked oom-killer"), "{oom}");
    assert!(oom.contains(" out_of_memory+0x"), "{oom}");
}
