//! Scenario A's workload, run as a child process (`/init workload ...`) inside
//! the memory cgroup so that an OOM kill takes it and not PID 1.
//!
//! N threads write to random pages of one shared anonymous mapping of W MiB
//! for T seconds. Each write is a "touch", counted after every write in
//! the thread's slot of the counters PID 1 passed down (`counters=FD`, see
//! counters.rs), so that PID 1 reads the exact total even when the process
//! is killed. The total is also printed on stdout as `touches <n>` every
//! 200 ms and at the end: the progress PID 1's sampler and scenario B's hog
//! read.
//!
//! Scenario B uses it as its anonymous hog, with `fill`: one write to every
//! page first (so that the whole size is resident or swapped, not left to
//! chance), then `filled` on stdout, then the random writes; and with
//! `rate=N`: at most N random writes a second in all, so that how often a
//! page is written again does not depend on how fast the guest runs.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cgroup;
use crate::counters::Counters;

/// Command-line of the child, built by PID 1 and parsed back here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadArgs {
    pub cgroup: String,
    pub threads: u32,
    pub working_set_mb: u64,
    pub duration_s: u64,
    /// Write every page once before the random writes.
    pub fill_first: bool,
    /// Random writes a second over all threads; 0: as fast as they go.
    pub touch_rate: u64,
    /// An inherited memfd of `threads` counters ([`Counters`]); without
    /// one the workload makes its own (nobody reads it after a kill).
    pub counters_fd: Option<i32>,
    /// madvise(MADV_HUGEPAGE) over the working set (THP mode `madvise`).
    pub hugepage: bool,
    /// The threads' name is `mmci-<name>`: the trace tells the waits of
    /// one memcg's threads from another's by it. Default: `w0`.
    pub name: String,
}

/// The name of the workload's threads when none is given.
pub const DEFAULT_NAME: &str = "w0";

/// The comm of the threads of a workload named `name` (the kernel keeps
/// 15 bytes of it).
pub fn thread_name(name: &str) -> String {
    format!("mmci-{name}")
}

/// The line printed once the fill pass is over.
pub const FILLED: &str = "filled";

impl WorkloadArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "workload".into(),
            self.cgroup.clone(),
            self.threads.to_string(),
            self.working_set_mb.to_string(),
            self.duration_s.to_string(),
        ];
        if self.fill_first {
            args.push("fill".into());
        }
        if self.touch_rate > 0 {
            args.push(format!("rate={}", self.touch_rate));
        }
        if let Some(fd) = self.counters_fd {
            args.push(format!("counters={fd}"));
        }
        if self.hugepage {
            args.push("hugepage".into());
        }
        if self.name != DEFAULT_NAME {
            args.push(format!("name={}", self.name));
        }
        args
    }

    pub fn parse(args: &[String]) -> Result<Self, String> {
        let num = |s: &str, what: &str| s.parse::<u64>().map_err(|_| format!("bad {what}: {s}"));
        let (mut fill_first, mut touch_rate, mut hugepage) = (false, 0, false);
        let mut counters_fd = None;
        let mut name = DEFAULT_NAME.to_string();
        let mut positional = Vec::new();
        for arg in args {
            if arg == "fill" {
                fill_first = true;
            } else if arg == "hugepage" {
                hugepage = true;
            } else if let Some(rate) = arg.strip_prefix("rate=") {
                touch_rate = num(rate, "rate")?;
            } else if let Some(n) = arg.strip_prefix("name=") {
                if n.is_empty() || thread_name(n).len() > 15 {
                    return Err(format!("bad name: `{n}` (1 to 10 bytes)"));
                }
                name = n.to_string();
            } else if let Some(fd) = arg.strip_prefix("counters=") {
                counters_fd = Some(
                    fd.parse::<i32>()
                        .ok()
                        .filter(|fd| *fd >= 0)
                        .ok_or_else(|| format!("bad counters fd: {fd}"))?,
                );
            } else {
                positional.push(arg);
            }
        }
        let [cgroup, threads, ws, dur] = positional[..] else {
            return Err(format!(
                "workload wants 4 arguments (and `fill`, `rate=N`, `counters=FD`, `hugepage`, `name=N`), got {}",
                positional.len()
            ));
        };
        Ok(WorkloadArgs {
            cgroup: cgroup.clone(),
            threads: num(threads, "threads")? as u32,
            working_set_mb: num(ws, "working set")?,
            duration_s: num(dur, "duration")?,
            fill_first,
            touch_rate,
            counters_fd,
            hugepage,
            name,
        })
    }
}

/// xorshift64*: a cheap, good-enough page picker; every thread its own seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in 0..n (n > 0); the bias of the modulo is irrelevant here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is only written through volatile byte stores at
// in-bounds offsets; races between threads on the same byte are benign for
// this workload (we only want the pages dirtied).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    fn anonymous(len: usize) -> std::io::Result<Self> {
        Ok(Mapping {
            ptr: crate::sys::map_anonymous(len)?,
            len,
        })
    }

    /// Asks for transparent huge pages over the whole mapping.
    fn advise_hugepage(&self) -> std::io::Result<()> {
        // SAFETY: the range is this mapping.
        let r = unsafe { libc::madvise(self.ptr as *mut _, self.len, libc::MADV_HUGEPAGE) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn touch(&self, offset: usize, value: u8) {
        assert!(offset < self.len);
        // SAFETY: offset is within the mapping, which lives as long as self.
        unsafe { std::ptr::write_volatile(self.ptr.add(offset), value) }
    }
}

/// Entry point of `guest-init workload ...`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let args = match WorkloadArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("workload: {e}");
            return 2;
        }
    };
    if let Err(e) = cgroup::enter(Path::new(&args.cgroup)) {
        eprintln!("workload: {e}");
        return 3;
    }
    let page = crate::sys::page_size();
    let len = (args.working_set_mb as usize) << 20;
    let pages = (len / page).max(1) as u64;
    let mapping = match Mapping::anonymous(len.max(page)) {
        Ok(m) => Arc::new(m),
        Err(e) => {
            eprintln!("workload: mmap {len} bytes: {e}");
            return 4;
        }
    };
    if args.hugepage {
        if let Err(e) = mapping.advise_hugepage() {
            eprintln!("workload: madvise(MADV_HUGEPAGE): {e}");
            return 4;
        }
    }
    let threads = args.threads.max(1) as usize;
    let counters = match args.counters_fd {
        Some(fd) => Counters::open(fd, threads),
        None => Counters::create(threads),
    };
    let counters = match counters {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("workload: counters: {e}");
            return 4;
        }
    };
    if args.fill_first {
        for p in 0..pages as usize {
            mapping.touch(p * page, 1);
        }
        let _ = writeln!(std::io::stdout().lock(), "{FILLED}");
    }
    let stop = Arc::new(AtomicBool::new(false));

    let per_thread_rate = args.touch_rate.div_ceil(u64::from(args.threads.max(1)));
    let mut handles = Vec::new();
    for t in 0..args.threads as usize {
        let (mapping, stop_flag, counters) = (mapping.clone(), stop.clone(), counters.clone());
        let spawned = std::thread::Builder::new()
            .name(thread_name(&args.name))
            .stack_size(64 << 10)
            .spawn(move || {
                let mut rng = Rng::new(t as u64 + 1);
                let mut local = 0u64;
                let began = Instant::now();
                // The stop flag is read before every write, so that a run
                // ends after the write under way, not at the end of a batch
                // (batches of 64 made every completed run's total a multiple
                // of 64). The batch is only the pacing's granularity.
                'run: loop {
                    for _ in 0..64 {
                        if stop_flag.load(Ordering::Relaxed) {
                            break 'run;
                        }
                        let p = rng.below(pages) as usize;
                        mapping.touch(p * page + (local as usize & 63) * 8, local as u8);
                        local += 1;
                        // After every write: a kill loses none but this one.
                        counters.store(t, local);
                    }
                    if let Some(wait) = pace(local, per_thread_rate, began.elapsed()) {
                        std::thread::sleep(wait);
                    }
                }
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("workload: thread {t}: {e}");
                stop.store(true, Ordering::Relaxed);
                return 5;
            }
        }
    }

    let total = || counters.total();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.duration_s);
    let stdout = std::io::stdout();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200).min(deadline - Instant::now()));
        let _ = writeln!(stdout.lock(), "touches {}", total());
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    let _ = writeln!(stdout.lock(), "touches {}", total());
    0
}

/// How long a thread that has made `done` writes in `elapsed` sleeps to stay
/// at `rate` a second (0: never).
fn pace(done: u64, rate: u64, elapsed: Duration) -> Option<Duration> {
    if rate == 0 {
        return None;
    }
    let due = Duration::from_secs_f64(done as f64 / rate as f64);
    due.checked_sub(elapsed).filter(|d| !d.is_zero())
}

/// Parses a progress line printed by [`main`].
pub fn parse_progress(line: &str) -> Option<u64> {
    line.strip_prefix("touches ")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip() {
        let a = WorkloadArgs {
            cgroup: "/sys/fs/cgroup/mmci".into(),
            threads: 64,
            working_set_mb: 48,
            duration_s: 60,
            fill_first: false,
            touch_rate: 0,
            counters_fd: None,
            hugepage: false,
            name: DEFAULT_NAME.into(),
        };
        assert_eq!(WorkloadArgs::parse(&a.to_args()[1..]).unwrap(), a);
        let named = WorkloadArgs {
            name: "nb".into(),
            ..a.clone()
        };
        assert_eq!(named.to_args()[5..], ["name=nb"]);
        assert_eq!(WorkloadArgs::parse(&named.to_args()[1..]).unwrap(), named);
        let shared = WorkloadArgs {
            counters_fd: Some(3),
            hugepage: true,
            ..a.clone()
        };
        assert_eq!(shared.to_args()[5..], ["counters=3", "hugepage"]);
        assert_eq!(WorkloadArgs::parse(&shared.to_args()[1..]).unwrap(), shared);
        let hog = WorkloadArgs {
            fill_first: true,
            touch_rate: 20000,
            ..a
        };
        assert_eq!(hog.to_args()[5..], ["fill", "rate=20000"]);
        assert_eq!(WorkloadArgs::parse(&hog.to_args()[1..]).unwrap(), hog);
        assert!(WorkloadArgs::parse(&["x".to_string()]).is_err());
        let bad: Vec<String> = ["/cg", "4", "8", "10", "rate=fast"]
            .map(String::from)
            .into();
        assert_eq!(WorkloadArgs::parse(&bad).unwrap_err(), "bad rate: fast");
        // (argument, error)
        let cases = [
            ("counters=-1", "bad counters fd: -1"),
            ("counters=x", "bad counters fd: x"),
            ("name=", "bad name: `` (1 to 10 bytes)"),
            (
                "name=elevenbytes",
                "bad name: `elevenbytes` (1 to 10 bytes)",
            ),
        ];
        for (arg, want) in cases {
            let bad: Vec<String> = ["/cg", "4", "8", "10", arg].map(String::from).into();
            assert_eq!(WorkloadArgs::parse(&bad).unwrap_err(), want, "{arg}");
        }
    }

    #[test]
    fn pacing_sleeps_until_the_writes_are_due() {
        let ms = Duration::from_millis;
        // (writes done, rate a second, elapsed, sleep)
        let cases = [
            (640, 0, ms(0), None),
            (640, 1000, ms(100), Some(ms(540))),
            (640, 1000, ms(640), None),
            (640, 1000, ms(900), None),
            (64, 6400, ms(5), Some(ms(5))),
        ];
        for (done, rate, elapsed, want) in cases {
            assert_eq!(pace(done, rate, elapsed), want, "{done} {rate} {elapsed:?}");
        }
    }

    #[test]
    fn rng_stays_in_range_and_spreads() {
        let mut rng = Rng::new(1);
        let mut seen = [false; 16];
        for _ in 0..1000 {
            let v = rng.below(16);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn progress_lines() {
        assert_eq!(parse_progress("touches 123\n"), Some(123));
        assert_eq!(parse_progress("workload: oops"), None);
    }
}
