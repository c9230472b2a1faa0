//! The lines of a call trace and what borders it: frames (`func+0x1/0x2`,
//! the faulting `RIP:`/`pc :` line), the register dumps and page dumps
//! around them, `cut here` and end markers. Shared by the titles and by
//! the report bounds.

use std::sync::LazyLock;

use regex::Regex;

/// A call-trace frame: `func+0x1/0x2`, `func file.c:1 [inline]`,
/// `func (file.c:1)` (decoded), with `? ` for unreliable frames and an
/// optional `[<address>]`.
pub(super) static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:\[<?[0-9a-f]+>?\]\s*)?(\?\s+)?([A-Za-z_][A-Za-z0-9_.$]*)(?:\+0x[0-9a-f]+/0x[0-9a-f]+|\s+\S+:\d+ \[inline\]|\s+\()",
    )
    .unwrap()
});

/// The faulting function: x86 `RIP: 0010:func+0x..`, i386 `EIP: func+0x..`,
/// arm64 `pc : func+0x..`.
pub(super) static PC_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:RIP: [0-9a-f]{4}:|EIP: |pc : )([A-Za-z_][A-Za-z0-9_.$]*)[+ ]").unwrap()
});

/// Function names without compiler suffixes (`.isra.0`, `.cold`, `.part.0`).
pub(super) fn clean(func: &str) -> String {
    func.split('.').next().unwrap_or(func).to_string()
}

pub(super) fn is_trace_start(l: &str) -> bool {
    let t = l.trim_start();
    t.starts_with("Call Trace:") || t.starts_with("Call trace:")
}

/// Lines that belong to a call trace and the register dumps around it.
pub(super) fn is_trace_line(l: &str) -> bool {
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
pub(super) fn is_page_dump_line(l: &str) -> bool {
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

pub(super) fn is_end_marker(l: &str) -> bool {
    l.starts_with("---[ end trace") || l.starts_with("---[ end Kernel panic")
}

pub(super) fn is_rule(l: &str) -> bool {
    let t = l.trim();
    t.len() >= 10 && t.bytes().all(|b| b == b'=')
}
