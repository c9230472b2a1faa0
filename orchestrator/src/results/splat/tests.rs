//! Table-driven: real consoles (tests/fixtures/splats, sources in its
//! README) and the splats syzbot-style titles they must give.

use super::*;
use SplatKind::*;

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../tests/fixtures/splats/", $name)),
        )
    };
}

/// (fixture, [(kind, title, count, excerpt's first line, excerpt's last line)])
type Case = (
    (&'static str, &'static str),
    &'static [(SplatKind, &'static str, u32, &'static str, &'static str)],
);

const CASES: &[Case] = &[
    // mmci's own guests (whole consoles, CRLF and all): the bundled tree
    // under scenario A, memcg OOM kills with their call traces and no splat;
    // the WARN and the panic test series (kernels/series/test-*).
    (fixture!("mmci_base_oom.txt"), &[]),
    (
        fixture!("mmci_warn_shrink_folio_list.txt"),
        &[(
            Warning,
            "WARNING in shrink_folio_list",
            1,
            "------------[ cut here ]------------",
            "---[ end trace 0000000000000000 ]---",
        )],
    ),
    (
        fixture!("mmci_panic_shrink_folio_list.txt"),
        &[(
            Panic,
            "kernel panic: mm/vmscan: 301 reclaim batches",
            1,
            "Kernel panic - not syncing: mm/vmscan: 301 reclaim batches",
            " </TASK>",
        )],
    ),
    (
        fixture!("list_add_bug.txt"),
        &[(
            ListCorruption,
            "BUG: corrupted list in nfs_uuid_is_local",
            1,
            "list_add corruption. next is NULL.",
            " </TASK>",
        )],
    ),
    (
        fixture!("list_del_warning_and_oops.txt"),
        &[
            (
                ListCorruption,
                "BUG: corrupted list in free_block",
                1,
                "------------[ cut here ]------------",
                "---[ end trace 8fb872d4de3e00ed ]---",
            ),
            (
                Oops,
                "Oops in free_block",
                1,
                "Oops: 0002 [#1] SMP PTI",
                "---[ end trace 2853d4dd454a6a2e ]---",
            ),
        ],
    ),
    (
        fixture!("warning_arm64.txt"),
        &[(
            Warning,
            "WARNING in update_blocked_averages",
            1,
            "WARNING: CPU: 5 PID: 35 at kernel/sched/fair.c:3282",
            "---[ end trace d2e73a5dbd77eeb8 ]---",
        )],
    ),
    (
        fixture!("suspicious_rcu.txt"),
        &[(
            Lockdep,
            "WARNING: suspicious RCU usage in call_break_hook",
            1,
            "=============================",
            " start_kernel+0x4d4/0x500",
        )],
    ),
    (
        fixture!("ubsan.txt"),
        &[(
            Ubsan,
            "UBSAN: array-index-out-of-bounds in detach_capi_ctr",
            1,
            "UBSAN: array-index-out-of-bounds in drivers/isdn/capi/kcapi.c:483:21",
            " ret_from_fork+0x1f/0x30",
        )],
    ),
    (
        fixture!("mmci_ubsan_noio_rfc_v1.txt"),
        &[(
            Ubsan,
            "UBSAN: array-index-out-of-bounds in lruvec_lru_size",
            1,
            "------------[ cut here ]------------",
            "---[ end trace ]---",
        )],
    ),
    (
        fixture!("kfence.txt"),
        &[(
            Kfence,
            "KFENCE: use-after-free read in pci_bus_release_domain_nr",
            1,
            "BUG: KFENCE: use-after-free read in pci_bus_release_domain_nr+0x10/0x70",
            "Workqueue: events_unbound deferred_probe_work_func",
        )],
    ),
    (
        fixture!("bad_rss_and_page_map.txt"),
        &[
            (
                BadPage,
                "BUG: Bad rss-counter state",
                4,
                "BUG: Bad rss-counter state mm:(____ptrval____) idx:0 val:-1",
                "BUG: Bad rss-counter state mm:(____ptrval____) idx:0 val:-1",
            ),
            (
                BadPage,
                "BUG: Bad page map",
                1,
                "BUG: Bad page map in process ib_write_bw  pte:e800305b55ef53 pmd:3fb6044003",
                "addr:(____ptrval____) vm_flags:00100073 anon_vma:(____ptrval____) mapping:(____ptrval____) index:ffffb5a54",
            ),
        ],
    ),
    (
        fixture!("oom_then_panic.txt"),
        &[(
            Panic,
            "kernel panic: Out of memory and no killable processes...",
            1,
            "Kernel panic - not syncing: Out of memory and no killable processes...",
            "Kernel panic - not syncing: Out of memory and no killable processes...",
        )],
    ),
    (
        fixture!("hard_lockup.txt"),
        &[(
            HardLockup,
            "watchdog: hard LOCKUP",
            1,
            "watchdog: Watchdog detected hard LOCKUP on cpu 6",
            "watchdog: Watchdog detected hard LOCKUP on cpu 6",
        )],
    ),
    (
        fixture!("sleeping_and_atomic.txt"),
        &[
            (
                Bug,
                "BUG: sleeping function called from invalid context in put_probe_ref",
                1,
                "BUG: sleeping function called from invalid context at kernel/locking/mutex.c:585",
                " </TASK>",
            ),
            (
                Lockdep,
                "BUG: Invalid wait context in put_probe_ref",
                1,
                "=============================",
                " </TASK>",
            ),
            (
                Bug,
                "BUG: scheduling while atomic",
                1,
                "BUG: scheduling while atomic: ksoftirqd/0/16/0x00000101",
                "BUG: scheduling while atomic: ksoftirqd/0/16/0x00000101",
            ),
        ],
    ),
    (
        fixture!("gpf.txt"),
        &[(
            GeneralProtectionFault,
            "general protection fault in regmap_get_i2c_bus",
            1,
            "Oops: general protection fault, probably for non-canonical address 0xdffffc0000000003: 0000 [#1] SMP KASAN NOPTI",
            "---[ end trace 0000000000000000 ]---",
        )],
    ),
    (
        fixture!("kernel_bug_arm64.txt"),
        &[(
            Bug,
            "kernel BUG in try_to_unmap_one",
            1,
            "head: 05ffc00000000309 fffffdffc6628001 0080000000000000 0000000100000000",
            "---[ end trace 0000000000000000 ]---",
        )],
    ),
    (
        fixture!("bad_page_state.txt"),
        &[
            (
                BadPage,
                "BUG: Bad page state",
                1,
                "BUG: Bad page state in process uffd-unit-tests  pfn:00000",
                "[<90000000002216d8>] handle_syscall+0xb8/0x158",
            ),
            (
                BadPage,
                "BUG: non-zero pgtables_bytes on freeing mm",
                1,
                "BUG: non-zero pgtables_bytes on freeing mm: -16384",
                "BUG: non-zero pgtables_bytes on freeing mm: -16384",
            ),
        ],
    ),
    (
        fixture!("circular_locking.txt"),
        &[(
            Lockdep,
            "possible deadlock in ocfs2_read_blocks",
            1,
            "======================================================",
            "RIP: 0033:0x7f61a979e0d9",
        )],
    ),
    (
        fixture!("recursive_locking.txt"),
        &[(
            Lockdep,
            "possible deadlock in io_poll_double_wake",
            1,
            "============================================",
            "RIP: 0033:0x465ef9",
        )],
    ),
    (
        fixture!("hung_task.txt"),
        &[
            (
                HungTask,
                "INFO: task hung in truncate_inode_pages",
                1,
                "INFO: task udevd:6124 blocked for more than 143 seconds.",
                " el0t_64_sync+0x190/0x194 arch/arm64/kernel/entry.S:595",
            ),
            (
                HungTask,
                "INFO: task hung in blkdev_get_by_dev",
                1,
                "INFO: task syz-executor412:6368 blocked for more than 143 seconds.",
                " el0t_64_sync+0x190/0x194 arch/arm64/kernel/entry.S:595",
            ),
        ],
    ),
    (
        fixture!("soft_lockup_then_stall.txt"),
        &[
            (
                SoftLockup,
                "BUG: soft lockup in queued_spin_lock_slowpath",
                2,
                "watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [WorkerPool/7703:7703]",
                "DS: 007b ES: 007b FS: 0000 GS: 0033 SS: 007b EFLAGS: 00010246",
            ),
            (
                RcuStall,
                "INFO: rcu detected stall in queued_spin_lock_slowpath",
                1,
                "rcu: INFO: rcu_sched self-detected stall on CPU",
                " common_exception+0x166/0x16e",
            ),
        ],
    ),
    (
        fixture!("kasan.txt"),
        &[(
            Kasan,
            "KASAN: use-after-free Read in ip6_send_skb",
            1,
            "==================================================================",
            "RSP: 002b:00007f1f48124c08 EFLAGS: 00000286 ORIG_RAX: 000000000000002c",
        )],
    ),
    (
        fixture!("inconsistent_lock.txt"),
        &[(
            Lockdep,
            "inconsistent lock state in ep_start_scan",
            1,
            "WARNING: inconsistent lock state",
            "RIP: 0023:0xf7f55579",
        )],
    ),
    (
        fixture!("rcu_stall.txt"),
        &[(
            RcuStall,
            "INFO: rcu detected stall in __dentry_kill",
            1,
            "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
            " </TASK>",
        )],
    ),
];

#[test]
fn real_consoles_give_syzbot_titles_and_bounded_excerpts() {
    for ((name, console), want) in CASES {
        let got = detect(console);
        let summary: Vec<_> = got
            .iter()
            .map(|s| {
                let lines: Vec<&str> = s.excerpt.lines().collect();
                (
                    s.kind,
                    s.title.as_str(),
                    s.count,
                    lines[0],
                    *lines.last().unwrap(),
                )
            })
            .collect();
        assert_eq!(&summary[..], *want, "{name}");
        for s in &got {
            assert!(
                s.excerpt.lines().count() <= MAX_EXCERPT_LINES,
                "{name}: {}",
                s.title
            );
            // Excerpts carry no printk timestamps.
            assert!(!s.excerpt.contains("] WARNING"), "{name}");
        }
    }
}

#[test]
fn oom_killer_reports_are_not_splats() {
    let (_, console) = fixture!("oom_then_panic.txt");
    let before_panic = &console[..console.find("[  365.576361]").unwrap()];
    assert!(before_panic.contains("invoked oom-killer"));
    assert_eq!(detect(before_panic), vec![]);
}

#[test]
fn long_reports_keep_head_and_trace() {
    let (_, console) = fixture!("circular_locking.txt");
    let s = &detect(console)[0];
    let lines: Vec<&str> = s.excerpt.lines().collect();
    assert_eq!(lines.len(), MAX_EXCERPT_LINES);
    assert_eq!(
        lines[1],
        "WARNING: possible circular locking dependency detected"
    );
    assert!(
        lines[HEAD_LINES].starts_with("[... "),
        "{}",
        lines[HEAD_LINES]
    );
    assert!(s
        .excerpt
        .contains(" ocfs2_statfs+0x1ba/0xa70 fs/ocfs2/super.c:1577"));
    assert_eq!(s.line, 1);
}

#[test]
fn printk_prefixes_are_stripped_indentation_kept() {
    assert_eq!(
        without_prefix("[   55.453355]  nfs_uuid_is_local+0xba/0x110"),
        " nfs_uuid_is_local+0xba/0x110"
    );
    assert_eq!(
        without_prefix("[   46.866069][ T6479] UBSAN: array-index-out-of-bounds in x"),
        "UBSAN: array-index-out-of-bounds in x"
    );
    assert_eq!(without_prefix("<4>[    8.197437] WARNING: x"), "WARNING: x");
    assert_eq!(without_prefix("plain"), "plain");
}

/// Stalls are named by the frame above the first function that dispatched
/// the work (syzbot's anchors), skipping RCU's, the allocator's and the
/// stack saver's frames; without an anchor, by the interrupted function.
#[test]
fn stalls_are_named_by_the_caller_of_their_anchor() {
    let stall = |frames: &[&str]| {
        let mut text = String::from(
            "rcu: INFO: rcu_preempt self-detected stall on CPU\n\
             Call Trace:\n <IRQ>\n rcu_sched_clock_irq+0x1/0x2\n </IRQ>\n <TASK>\n \
             asm_sysvec_apic_timer_interrupt+0x1a/0x20\n\
             RIP: 0010:shrink_folio_list+0x97/0x951\n\
             RSP: 0018:ffffc90003c2f4b8 EFLAGS: 00000246\n",
        );
        for f in frames {
            text.push_str(&format!(" {f}+0x10/0x20\n"));
        }
        text.push_str(" </TASK>\n");
        detect(&text)
            .into_iter()
            .map(|s| s.title)
            .collect::<Vec<_>>()
    };
    let cases: [(&[&str], &str); 4] = [
        // kswapd's loop: kthread is the anchor.
        (
            &[
                "shrink_inactive_list",
                "shrink_lruvec",
                "shrink_node",
                "balance_pgdat",
                "kswapd",
                "kthread",
                "ret_from_fork",
            ],
            "INFO: rcu detected stall in kswapd",
        ),
        // A workqueue item: the work function.
        (
            &[
                "_raw_spin_lock",
                "drain_local_pages_wq",
                "process_one_work",
                "worker_thread",
            ],
            "INFO: rcu detected stall in drain_local_pages_wq",
        ),
        // Direct reclaim in a page fault: the allocator's frames are skipped.
        (
            &[
                "try_to_free_mem_cgroup_pages",
                "kmem_cache_alloc_noprof",
                "handle_mm_fault",
                "do_page_fault",
            ],
            "INFO: rcu detected stall in handle_mm_fault",
        ),
        // A truncated trace: the interrupted function.
        (
            &["shrink_lruvec"],
            "INFO: rcu detected stall in shrink_folio_list",
        ),
    ];
    for (frames, want) in cases {
        assert_eq!(stall(frames), [want], "{frames:?}");
    }
}
