//! Tracepoints through tracefs: enable events, read trace_pipe on a thread
//! while the workload runs; scenario A counts mm_vmscan_throttled by reason
//! (scenario B's events are parsed in reclaim_trace.rs).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mmci_record::ThrottleStat;

pub const TRACEFS: &str = "/sys/kernel/tracing";

fn write(path: &str, value: &str) -> io::Result<()> {
    std::fs::write(format!("{TRACEFS}/{path}"), value)
        .map_err(|e| io::Error::new(e.kind(), format!("{TRACEFS}/{path}: {e}")))
}

/// Sizes the buffers, clears them and enables `events` (e.g. "vmscan/mm_vmscan_throttled").
pub fn enable(events: &[&str], buffer_kb: u64) -> io::Result<()> {
    size_buffers(buffer_kb)?;
    start(events)
}

/// Allocates the per-CPU buffers, tracing off. Under memory pressure the
/// allocation fails (ENOMEM), so scenario B does this before its hog runs.
pub fn size_buffers(buffer_kb: u64) -> io::Result<()> {
    write("tracing_on", "0")?;
    write("buffer_size_kb", &buffer_kb.to_string())
}

/// Clears the (already sized) buffers and enables `events`.
pub fn start(events: &[&str]) -> io::Result<()> {
    write("trace", "")?;
    for event in events {
        write(&format!("events/{event}/enable"), "1")?;
    }
    write("tracing_on", "1")
}

/// Adds a kprobe event (kprobe_events syntax, `p:group/name symbol args`);
/// appending leaves other probes alone.
pub fn add_kprobe(definition: &str) -> io::Result<()> {
    let path = format!("{TRACEFS}/kprobe_events");
    let mut f = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    f.write_all(format!("{definition}\n").as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("{path} <- {definition}: {e}")))
}

/// Writes one line into the trace (it comes out of trace_pipe as a
/// `tracing_mark_write:` event, in order with the kernel's events).
pub fn mark(file: &mut std::fs::File, text: &str) -> io::Result<()> {
    file.write_all(text.as_bytes())
}

/// trace_marker, opened once for many [`mark`]s.
pub fn open_marker() -> io::Result<std::fs::File> {
    OpenOptions::new()
        .write(true)
        .open(format!("{TRACEFS}/trace_marker"))
}

/// Stops tracing (the reader still drains what is buffered).
pub fn stop() -> io::Result<()> {
    write("tracing_on", "0")
}

/// Events lost to full buffers: the sum of "overrun" over per-CPU stats.
pub fn lost_events() -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("{TRACEFS}/per_cpu")) else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("stats")).ok())
        .map(|text| parse_overrun(&text))
        .sum()
}

/// The "overrun: N" line of a per_cpu/cpuN/stats file.
pub fn parse_overrun(stats: &str) -> u64 {
    stats
        .lines()
        .find_map(|l| l.strip_prefix("overrun:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// One mm_vmscan_throttled event.
#[derive(Debug, PartialEq, Eq)]
pub struct ThrottleEvent {
    pub reason: String,
    /// How long reclaim_throttle() would have slept (its timeout).
    pub usec_timeout: u64,
    /// How long it slept: `timeout - what schedule_timeout() returned`.
    pub usec_delayed: u64,
}

impl ThrottleEvent {
    /// Woken before the timeout (by the wake-up of the throttle's wait
    /// queue), not timed out. Both fields come from jiffies, so a sleep
    /// that ran its course reads exactly usec_timeout.
    pub fn woke_early(&self) -> bool {
        self.usec_delayed < self.usec_timeout
    }
}

/// Parses a trace line of mm_vmscan_throttled. The kernel's format string
/// spells the field "usect_delayed" (include/trace/events/vmscan.h); accept
/// the corrected spelling too.
pub fn parse_throttle_line(line: &str) -> Option<ThrottleEvent> {
    let (_, fields) = line.split_once("mm_vmscan_throttled: ")?;
    let mut reason = None;
    let (mut usec_timeout, mut usec_delayed) = (0, 0);
    for word in fields.split_whitespace() {
        let (k, v) = word.split_once('=')?;
        match k {
            "usect_delayed" | "usec_delayed" => usec_delayed = v.parse().ok()?,
            "usec_timeout" => usec_timeout = v.parse().ok()?,
            "reason" => reason = Some(v.to_string()),
            _ => {}
        }
    }
    Some(ThrottleEvent {
        reason: reason?,
        usec_timeout,
        usec_delayed,
    })
}

/// Adds one event to per-reason totals.
pub fn account(totals: &mut BTreeMap<String, ThrottleStat>, event: ThrottleEvent) {
    add(totals.entry(event.reason.clone()).or_default(), &event);
}

fn add(stat: &mut ThrottleStat, event: &ThrottleEvent) {
    stat.count += 1;
    stat.usec_delayed_sum += event.usec_delayed;
    stat.usec_delayed_max = stat.usec_delayed_max.max(event.usec_delayed);
    *stat.early_wakes.get_or_insert(0) += u64::from(event.woke_early());
}

/// The sleeping task's name in a trace line (`<comm>-<pid> [<cpu>] ...`):
/// the text before the last `-` of the first field. A comm with spaces is
/// cut at its first one, which is enough to tell our own threads apart.
pub fn task_comm(line: &str) -> Option<&str> {
    let first = line.split_whitespace().next()?;
    let (comm, pid) = first.rsplit_once('-')?;
    (!comm.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && !pid.is_empty()).then_some(comm)
}

/// The isolation waits' reason.
pub const ISOLATED: &str = "VMSCAN_THROTTLE_ISOLATED";

/// Scenario A's totals: by reason, and the isolation waits by task name.
#[derive(Default)]
pub struct ThrottleTotals {
    pub by_reason: BTreeMap<String, ThrottleStat>,
    pub isolated_by_task: BTreeMap<String, ThrottleStat>,
}

impl ThrottleTotals {
    pub fn feed(&mut self, line: &str) {
        let Some(ev) = parse_throttle_line(line) else {
            return;
        };
        if ev.reason == ISOLATED {
            let task = task_comm(line).unwrap_or("?").to_string();
            add(self.isolated_by_task.entry(task).or_default(), &ev);
        }
        account(&mut self.by_reason, ev);
    }
}

/// Makes the calling thread SCHED_FIFO (priority 1): a reader that the
/// workload starves lets the kernel overwrite events it has not read.
/// It sleeps whenever the pipe is empty, and the kernel's RT throttling
/// leaves the other tasks 5% of each CPU in any case.
pub fn make_realtime() -> io::Result<()> {
    // musl's sched_param has more (sporadic-server) fields than glibc's.
    // SAFETY: sched_param is plain integers, valid when zeroed.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = 1;
    // SAFETY: a valid sched_param; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Keeps `event`'s lines of tasks other than `comm` only (a tracefs event
/// filter on the common `comm` field).
pub fn exclude_comm(event: &str, comm: &str) -> io::Result<()> {
    write(
        &format!("events/{event}/filter"),
        &format!("comm != \"{comm}\""),
    )
}

/// Reads trace_pipe on a thread until stopped, then drains it, handing each
/// complete line to a callback; returns what the callback accumulated.
pub struct PipeReader<T> {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<io::Result<T>>,
}

impl<T: Send + 'static> PipeReader<T> {
    pub fn start(
        mut state: T,
        realtime: bool,
        mut on_line: impl FnMut(&mut T, &str) + Send + 'static,
    ) -> io::Result<Self> {
        let mut pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(format!("{TRACEFS}/trace_pipe"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("trace".into())
            .spawn(move || {
                if realtime {
                    if let Err(e) = make_realtime() {
                        eprintln!("mmci: trace reader stays SCHED_OTHER: {e}");
                    }
                }
                let mut buf = vec![0u8; 1 << 16];
                let mut pending = Vec::new();
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) => std::thread::sleep(Duration::from_millis(20)),
                        Ok(n) => {
                            pending.extend_from_slice(&buf[..n]);
                            // Every complete line, then one drain: draining
                            // line by line moves the rest of the buffer each
                            // time, which under TCG was slow enough for the
                            // kernel to drop events.
                            let mut start = 0;
                            while let Some(len) = pending[start..].iter().position(|b| *b == b'\n')
                            {
                                let line = &pending[start..start + len];
                                on_line(&mut state, String::from_utf8_lossy(line).trim_end());
                                start += len + 1;
                            }
                            pending.drain(..start);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            // Empty pipe: done if asked to stop, else wait for more.
                            if stop_flag.load(Ordering::Acquire) {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(state)
            })?;
        Ok(PipeReader { stop, handle })
    }

    /// Call after tracing is stopped: drains what is left and returns the state.
    pub fn finish(self) -> io::Result<T> {
        self.stop.store(true, Ordering::Release);
        self.handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("trace reader panicked")))
    }
}

/// Scenario A's reader: mm_vmscan_throttled totals by reason and, for
/// the isolation waits, by task.
pub struct ThrottleReader(PipeReader<ThrottleTotals>);

impl ThrottleReader {
    pub fn start() -> io::Result<Self> {
        PipeReader::start(ThrottleTotals::default(), false, |totals, line| {
            totals.feed(line)
        })
        .map(ThrottleReader)
    }

    pub fn finish(self) -> io::Result<ThrottleTotals> {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_line_as_the_kernel_prints_it() {
        let line = "          thrash-97      [001] d..1.   23.456789: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_ISOLATED";
        assert_eq!(
            parse_throttle_line(line),
            Some(ThrottleEvent {
                reason: "VMSCAN_THROTTLE_ISOLATED".into(),
                usec_timeout: 100000,
                usec_delayed: 4000
            })
        );
        assert_eq!(
            parse_throttle_line("  <idle>-0 [000] 1.0: sched_switch: x=1"),
            None
        );
    }

    #[test]
    fn isolation_waits_by_task_name() {
        // (trace line, task it is counted for)
        let cases = [
            ("          mmci-w0-97      [001] d..1.   23.456789: mm_vmscan_throttled: nid=0 usec_timeout=20000 usect_delayed=4000 reason=VMSCAN_THROTTLE_ISOLATED", Some("mmci-w0")),
            ("  mmci-nb-1203 [000] .....  9.1: mm_vmscan_throttled: nid=0 usec_timeout=20000 usect_delayed=20000 reason=VMSCAN_THROTTLE_ISOLATED", Some("mmci-nb")),
            ("  kswapd0-35 [000] .....  9.1: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=100000 reason=VMSCAN_THROTTLE_WRITEBACK", None),
        ];
        let mut totals = ThrottleTotals::default();
        for (line, _) in cases {
            totals.feed(line);
        }
        let tasks: Vec<&str> = totals.isolated_by_task.keys().map(String::as_str).collect();
        let want: Vec<&str> = cases.iter().filter_map(|c| c.1).collect();
        assert_eq!(tasks, {
            let mut w = want.clone();
            w.sort();
            w
        });
        assert_eq!(totals.isolated_by_task["mmci-w0"].early_wakes, Some(1));
        assert_eq!(totals.isolated_by_task["mmci-nb"].early_wakes, Some(0));
        assert_eq!(totals.by_reason.len(), 2);
        // (first field, comm)
        for (line, comm) in [
            ("a-b-12 [000] x", Some("a-b")),
            ("  kworker/0:1-9 [1]", Some("kworker/0:1")),
            ("-12 [0]", None),
            ("mmci-w1- [0]", None),
            ("", None),
        ] {
            assert_eq!(task_comm(line), comm, "{line}");
        }
    }

    #[test]
    fn totals_by_reason() {
        let mut totals = BTreeMap::new();
        // (reason, usec_timeout, usec_delayed): A's second sleep ran its
        // course, its first was woken early.
        for (r, t, d) in [("A", 20000, 10), ("A", 30, 30), ("B", 4000, 5)] {
            account(
                &mut totals,
                ThrottleEvent {
                    reason: r.into(),
                    usec_timeout: t,
                    usec_delayed: d,
                },
            );
        }
        assert_eq!(
            totals["A"],
            ThrottleStat {
                count: 2,
                usec_delayed_sum: 40,
                usec_delayed_max: 30,
                early_wakes: Some(1),
            }
        );
        assert_eq!((totals["B"].count, totals["B"].early_wakes), (1, Some(1)));
    }

    #[test]
    fn early_wake_is_a_sleep_shorter_than_its_timeout() {
        // (line fields, woke early)
        let cases = [
            ("usec_timeout=20000 usect_delayed=20000", false),
            ("usec_timeout=20000 usect_delayed=4000", true),
            ("usec_timeout=4000 usect_delayed=0", true),
            ("usec_timeout=1000 usec_delayed=1000", false),
        ];
        for (fields, want) in cases {
            let line = format!("t-1 [000] .... 1.0: mm_vmscan_throttled: nid=0 {fields} reason=X");
            let ev = parse_throttle_line(&line).unwrap();
            assert_eq!(ev.woke_early(), want, "{fields}");
        }
    }

    #[test]
    fn overrun() {
        let stats = "entries: 10\noverrun: 42\ncommit overrun: 0\nbytes: 100\n";
        assert_eq!(parse_overrun(stats), 42);
    }
}
