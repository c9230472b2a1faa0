//! Kernel splats on a guest's console: WARNINGs, BUGs, oopses, sanitizer and
//! lockdep reports, lockups, stalls, hung tasks, list corruption, bad pages
//! and panics. Pure: console text in, splats out. Each splat gets a title
//! formed the way syzbot forms them (syzkaller's pkg/report: "WARNING in
//! <func>", "possible deadlock in <func>", "kernel BUG in <func>", ...), so
//! that a maintainer can search lore and the syzbot dashboard for it, and an
//! excerpt from its header to the end of its call trace, bounded.
//!
//! Not splats: a memory cgroup's OOM kills (the workload causes them on
//! purpose; a global OOM kill is one, see `header::header_at`) and
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
    /// A global OOM kill (not a memory cgroup's).
    Oom,
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
            SplatKind::Oom => "global OOM",
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
            | SplatKind::HungTask
            | SplatKind::Oom => 3,
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

mod hang;
mod header;
mod lockdep;
mod title;
mod trace;

use header::{header, header_at, report_end, report_start};

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
        let Some(h) = header_at(&lines, i) else {
            i += 1;
            continue;
        };
        // One report, possibly with several headers: each one's trace
        // extends it, and the most telling one names it.
        let mut best = (h.rank, (h.title)(&lines, i), h.kind);
        let mut end = report_end(&lines, i, &h);
        let mut j = i + 1;
        while j <= end && j < lines.len() {
            if let Some(h2) = header_at(&lines, j) {
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
#[cfg(test)]
mod tests_inline;
