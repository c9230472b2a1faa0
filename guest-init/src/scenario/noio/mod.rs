//! Scenario B (docs/workloads.md): GFP_NOIO direct reclaim through dm-verity.
//!
//! MGLRU off (on in the control cell, `noio_mglru`), swap on a plain disk, a dm-verity device (verity_dev.rs:
//! built and proven here), an anonymous hog filled to near MemTotal in its
//! own cgroup, then dm-bufio's cache shrunk, caches dropped and O_DIRECT
//! random reads of the verity device:
//! every read verifies hash blocks that dm-bufio must allocate, with
//! GFP_NOIO once GFP_NOWAIT fails. Direct-reclaim calls are traced, paired
//! and streamed one record each; the preconditions are measured and sent for
//! the host to judge.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use mmci_record::{GuestJob, MemState, Phase, Record};

use crate::port::RecordPort;
use crate::scenario;
use crate::step::{setup_step, Stage, StepError};
use crate::{cgroup, direct_io, procfs, reclaim_trace, sampler, trace, workload};

mod apps;
mod verity_dev;

const HOG_CGROUP: &str = "mmci-hog";
/// With `hog_mb` = 0 the hog is MemTotal minus this: more than fits beside
/// the kernel, so the hog's random writes keep swapping and free memory
/// keeps falling to the min watermark (at MemTotal - 40 MiB, a 512 MiB
/// guest held the whole hog and nothing was reclaimed).
const HOG_HEADROOM_MB: u64 = 16;
/// How long the hog writes at random before the preconditions are measured
/// and the reads start: right after the fill pass, the swap cache still
/// holds what the fill pushed out (18 MiB in a run without this wait, 1.6
/// MiB in one with it): the fill's transient, not the steady state.
const HOG_SETTLE: Duration = Duration::from_secs(5);
/// How long the hog may take to write its pages once (TCG is slow).
const HOG_FILL_TIMEOUT: Duration = Duration::from_secs(600);
const BUFIO_CACHE: &str = "/sys/module/dm_bufio/parameters/max_cache_size_bytes";
/// Raw trace lines of the first calls go to the console (kept in the run's
/// console.log), at most this many lines per call and this many calls.
const RAW_LINES_PER_CALL: usize = 12;
const RAW_NOIO_CALLS: u32 = 20;
const RAW_OTHER_CALLS: u32 = 3;

fn write_file(path: &str, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("{path}: {e}"))
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The hog: `guest-init workload` in its own unlimited cgroup, filling its
/// pages once, then touching them at random until killed.
fn start_hog(job: &GuestJob, cg: &Path) -> Result<(Hog, String), StepError> {
    let mem_total_mb =
        procfs::meminfo_kb(&read_trimmed("/proc/meminfo"), "MemTotal").unwrap_or(0) >> 10;
    let hog_mb = if job.hog_mb > 0 {
        job.hog_mb
    } else {
        // The applications' memory is theirs: the hog takes the rest.
        mem_total_mb
            .saturating_sub(HOG_HEADROOM_MB + apps::total_mb(job))
            .max(1)
    };
    let args = workload::WorkloadArgs {
        cgroup: cg.to_string_lossy().into_owned(),
        threads: job.hog_threads,
        working_set_mb: hog_mb,
        // Killed once the readers are done; this is only a backstop.
        duration_s: job.duration_s + 3600,
        fill_first: true,
        touch_rate: job.hog_touch_rate,
        counters_fd: None,
        hugepage: false,
        name: "hog".into(),
    };
    let start = std::time::Instant::now();
    let mut child = Command::new("/proc/self/exe")
        .args(args.to_args())
        .stdout(Stdio::piped())
        .spawn()
        .stage("hog")?;
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    let touches = Arc::new(AtomicU64::new(0));
    let seen = touches.clone();
    // Keeps draining the hog's progress lines so that it never blocks on a
    // full pipe, and keeps its last count of random writes.
    std::thread::Builder::new()
        .name("hog-out".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == workload::FILLED {
                    let _ = tx.send(());
                } else if let Some(n) = workload::parse_progress(&line) {
                    seen.store(n, Ordering::Relaxed);
                }
            }
        })
        .stage("hog")?;
    match rx.recv_timeout(HOG_FILL_TIMEOUT) {
        Ok(()) => {
            let filled_ms = start.elapsed().as_millis();
            std::thread::sleep(HOG_SETTLE);
            let rate = touches.load(Ordering::Relaxed) / HOG_SETTLE.as_secs().max(1);
            let mut hog = Hog { child, touches };
            let alive = match hog.exit_status() {
                None => String::new(),
                Some(status) => format!("; {} ({status})", mmci_record::HOG_GONE),
            };
            Ok((
                hog,
                format!(
                    "{hog_mb} MiB (MemTotal {mem_total_mb} MiB), {} threads, filled in {filled_ms} ms, then {} s of random writes, {rate} a second{alive}",
                    job.hog_threads,
                    HOG_SETTLE.as_secs()
                ),
            ))
        }
        Err(e) => {
            let _ = child.kill();
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            Err(StepError {
                stage: "hog",
                message: format!("the hog did not fill its {hog_mb} MiB ({e}; {status})"),
            })
        }
    }
}

/// The hog's process and its running count of random writes.
struct Hog {
    child: Child,
    touches: Arc<AtomicU64>,
}

impl Hog {
    /// None while the hog runs; how it ended otherwise.
    fn exit_status(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(None) => None,
            Ok(Some(status)) => Some(status.to_string()),
            Err(e) => Some(format!("wait: {e}")),
        }
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mem_state(cg: &Path) -> MemState {
    let stat = scenario::read_map(&cg.join("memory.stat"));
    let meminfo = read_trimmed("/proc/meminfo");
    let kb = |k| procfs::meminfo_kb(&meminfo, k).unwrap_or(0);
    let get = |k: &str| stat.get(k).copied().unwrap_or(0);
    MemState {
        anon: get("anon"),
        inactive_anon: get("inactive_anon"),
        inactive_file: get("inactive_file"),
        swapcached: get("swapcached"),
        swap_total_kb: kb("SwapTotal"),
        swap_free_kb: kb("SwapFree"),
        mem_free_kb: kb("MemFree"),
    }
}

/// Writes readings of the hog memcg's swap cache and anon into the trace, so
/// that each direct-reclaim call can be given the readings taken while it
/// ran (in trace order: no clocks to match). The memcg's memory.stat is its
/// lruvec's on this single-node guest; the kernel's own lruvec_page_state()
/// reads the same flushed counters.
struct LruvecMarks {
    stop: Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl LruvecMarks {
    fn start(cg: &Path, every: Duration) -> std::io::Result<Self> {
        let mut marker = trace::open_marker()?;
        let stat = cg.join("memory.stat");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("lruvec-marks".into())
            .spawn(move || {
                while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                    let m = scenario::read_map(&stat);
                    let get = |k: &str| m.get(k).copied().unwrap_or(0);
                    let line = reclaim_trace::lruvec_mark(get("swapcached"), get("anon"));
                    let _ = trace::mark(&mut marker, &line);
                    std::thread::sleep(every);
                }
            })?;
        Ok(LruvecMarks { stop, handle })
    }

    fn finish(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.handle.join();
    }
}

/// What the trace thread keeps while it pairs events.
struct TraceState {
    port: Arc<RecordPort>,
    pairer: reclaim_trace::Pairer,
    calls: u64,
    lost_markers: u64,
    raw: HashMap<u32, Vec<String>>,
    printed_noio: u32,
    printed_other: u32,
}

impl TraceState {
    fn on_line(&mut self, line: &str) {
        if let Some(n) = reclaim_trace::lost_marker(line) {
            self.lost_markers += n;
            self.pairer.events_lost();
            return;
        }
        let Some(parsed) = reclaim_trace::parse_line(line) else {
            return;
        };
        let pid = parsed.pid;
        match parsed.event {
            reclaim_trace::Event::Begin { .. } => {
                self.raw.insert(pid, vec![line.to_string()]);
            }
            _ => {
                if let Some(raw) = self.raw.get_mut(&pid) {
                    if raw.len() < RAW_LINES_PER_CALL {
                        raw.push(line.to_string());
                    }
                }
            }
        }
        let is_end = matches!(parsed.event, reclaim_trace::Event::End { .. });
        let Some(call) = self.pairer.feed(parsed) else {
            return;
        };
        self.calls += 1;
        let mut raw = self.raw.remove(&pid).unwrap_or_default();
        if is_end && raw.last().map(String::as_str) != Some(line) {
            raw.push(line.to_string());
        }
        let noio = call.gfp_flags.starts_with("GFP_NOIO");
        let printed = if noio {
            &mut self.printed_noio
        } else {
            &mut self.printed_other
        };
        if *printed
            < if noio {
                RAW_NOIO_CALLS
            } else {
                RAW_OTHER_CALLS
            }
        {
            *printed += 1;
            for l in &raw {
                eprintln!("mmci-trace: {l}");
            }
        }
        self.port.send(Record::ReclaimCall(call));
    }
}

/// This scenario in the registry.
pub static DEF: super::registry::Def = super::registry::Def {
    id: mmci_record::Scenario::NoioVerity,
    run,
};

fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    // The RFC's path is the classic LRU's get_scan_count(): MGLRU off,
    // unless this is the control cell that asks what MGLRU does instead.
    setup_step(port, "mglru", || scenario::set_lru_gen(job.noio_mglru))?;
    // The job's swap backend; dm-delay's delay applies only when asked for:
    // the hog's swap-out must make progress. zram keeps the swap cache near
    // zero (the RFC's corner), a disk leaves clean swap cache behind.
    if job.swap.enabled() {
        setup_step(port, "swap", || {
            scenario::setup_swap(job.swap, job.swap_delay_ms)
        })?;
    }
    setup_step(port, "swappiness", || {
        write_file("/proc/sys/vm/swappiness", &job.swappiness.to_string()).stage("swappiness")?;
        // No swap readahead: the hog's random swap-ins would otherwise fill
        // the swap cache with pages nobody touches, and the case needs a
        // small swap cache (anon folios not in it are what GFP_NOIO cannot
        // reclaim).
        write_file("/proc/sys/vm/page-cluster", "0").stage("swappiness")?;
        Ok((
            (),
            format!(
                "vm.swappiness={} vm.page-cluster={}",
                read_trimmed("/proc/sys/vm/swappiness"),
                read_trimmed("/proc/sys/vm/page-cluster")
            ),
        ))
    })?;
    let verity = setup_step(port, "verity", || verity_dev::setup(job.verity_mb))?;
    setup_step(port, "verity-check", || verity_dev::check(&verity))?;
    // The trace buffers cannot be allocated once the hog has the memory.
    setup_step(port, "trace-buffers", || {
        trace::size_buffers(job.trace_buffer_kb).stage("trace")?;
        Ok(((), format!("{} KiB/cpu", job.trace_buffer_kb)))
    })?;
    // Not fatal: without the probe the calls carry no memcg walk.
    let memcg_probe = setup_step(port, "memcg-probe", || {
        Ok(match trace::add_kprobe(reclaim_trace::MEMCG_PROBE) {
            Ok(()) => (true, reclaim_trace::MEMCG_PROBE.to_string()),
            Err(e) => (
                false,
                format!("unavailable, memcgs visited not recorded: {e}"),
            ),
        })
    })?;
    // Not fatal either: without it the calls carry no count of classic-LRU
    // passes, and the host says so.
    let classic_probe = if job.noio_mglru {
        Some(setup_step(port, "classic-probe", || {
            Ok(match trace::add_kprobe(reclaim_trace::CLASSIC_PROBE) {
                Ok(()) => (true, reclaim_trace::CLASSIC_PROBE.to_string()),
                Err(e) => (
                    false,
                    format!("unavailable, classic-LRU passes not counted: {e}"),
                ),
            })
        })?)
    } else {
        None
    };
    // The applications before the hog: their memcgs come first in a
    // reclaim walk and the hog's last, and the caches dropped now are the
    // last dropped, so that what the applications read stays.
    let apps = if job.apps > 0 {
        drop_caches(port, "before the applications read their page cache")?;
        Some(setup_step(port, "apps", || apps::start(job))?)
    } else {
        None
    };
    let cg = setup_step(port, "cgroup", || {
        let dir = cgroup::create(HOG_CGROUP, 0).stage("cgroup")?;
        let detail = format!("{} memory.max=max", dir.display());
        Ok((dir, detail))
    })?;
    let mut hog = setup_step(port, "hog", || start_hog(job, &cg))?;
    let touches_before = hog.touches.load(Ordering::Relaxed);
    let started = std::time::Instant::now();
    let probes = Probes {
        memcg: memcg_probe,
        classic: classic_probe,
    };
    let result = read_under_pressure(job, port, &verity, &cg, probes);
    // How hard the hog pushed while the readers ran, and whether it lived
    // through them (a global OOM kill takes it, the largest task, first).
    let touches = hog.touches.load(Ordering::Relaxed) - touches_before;
    let secs = started.elapsed().as_secs().max(1);
    let ending = match hog.exit_status() {
        None => "ran to the end".to_string(),
        Some(status) => format!("{} before the end ({status})", mmci_record::HOG_GONE),
    };
    let meminfo = read_trimmed("/proc/meminfo");
    let file_mib = |k| procfs::meminfo_kb(&meminfo, k).unwrap_or(0) >> 10;
    let _ = setup_step(port, "hog-end", || {
        Ok((
            (),
            format!(
                "{} random writes a second over the reads; node Inactive(file) {} MiB, Active(file) {} MiB at the end; {ending}",
                touches / secs,
                file_mib("Inactive(file)"),
                file_mib("Active(file)"),
            ),
        ))
    });
    hog.stop();
    if let Some(apps) = apps {
        apps.stop();
    }
    result
}

/// Drops the page cache and slab caches (`why` says what for).
fn drop_caches(port: &Arc<RecordPort>, why: &str) -> Result<(), StepError> {
    setup_step(port, "drop-caches", || {
        write_file("/proc/sys/vm/drop_caches", "3").stage("drop-caches")?;
        Ok(((), format!("3: {why}")))
    })
}

/// Which kprobes are in place: the memcg one, and in the MGLRU cell
/// (Some) whether the shrink_lruvec() one is.
#[derive(Clone, Copy)]
struct Probes {
    memcg: bool,
    classic: Option<bool>,
}

fn read_under_pressure(
    job: &GuestJob,
    port: &Arc<RecordPort>,
    verity: &verity_dev::Verity,
    cg: &Path,
    probes: Probes,
) -> Result<(), StepError> {
    setup_step(port, "bufio", || {
        write_file(BUFIO_CACHE, &job.bufio_cache_bytes.to_string()).stage("bufio")?;
        Ok((
            (),
            format!("max_cache_size_bytes={}", read_trimmed(BUFIO_CACHE)),
        ))
    })?;
    if job.apps == 0 {
        drop_caches(port, "no page cache anywhere")?;
    }
    let reader = setup_step(port, "trace", || {
        let mut events = reclaim_trace::EVENTS.to_vec();
        if probes.memcg {
            events.push(reclaim_trace::MEMCG_PROBE_EVENT);
        }
        let mut pairer = reclaim_trace::Pairer::new(probes.memcg);
        if let Some(classic) = probes.classic {
            events.push(reclaim_trace::MGLRU_ISOLATE_EVENT);
            if classic {
                events.push(reclaim_trace::CLASSIC_PROBE_EVENT);
            }
            pairer = pairer.with_mglru_events(classic);
        }
        trace::start(&events).stage("trace")?;
        let state = TraceState {
            port: port.clone(),
            pairer,
            calls: 0,
            lost_markers: 0,
            raw: HashMap::new(),
            printed_noio: 0,
            printed_other: 0,
        };
        // kswapd's scanning is no call's: leave it out of the buffer, which
        // the calls' own priority-0 passes fill fast enough.
        let mut filtered = vec![];
        for event in &events[2..] {
            if trace::exclude_comm(event, "kswapd0").is_ok() {
                filtered.push(*event);
            }
        }
        let reader =
            trace::PipeReader::start(state, true, |s, line| s.on_line(line)).stage("trace")?;
        Ok((
            reader,
            format!(
                "{}; kswapd0 filtered out of {}; reader SCHED_FIFO",
                events.join(", "),
                filtered.len()
            ),
        ))
    })?;
    let marks = setup_step(port, "lruvec-marks", || {
        let every = Duration::from_millis(job.sample_interval_ms.max(1));
        let marks = LruvecMarks::start(cg, every).stage("lruvec-marks")?;
        Ok((
            marks,
            format!(
                "{}/memory.stat swapcached and anon into trace_marker every {} ms",
                cg.display(),
                every.as_millis()
            ),
        ))
    })?;
    let at_start = mem_state(cg);
    port.send(scenario::snapshot(Phase::Before, cg));
    let watermarks =
        sampler::WatermarkSampler::start(Duration::from_millis(job.sample_interval_ms.max(1)))
            .stage("sampler")?;
    let reads = direct_io::random_reads(
        &verity.node,
        verity.blocks,
        job.readers,
        job.reads,
        Duration::from_secs(job.duration_s),
    )
    .stage("reader")?;
    let watermark = watermarks.finish();
    marks.finish();
    let at_end = mem_state(cg);
    port.send(scenario::snapshot(Phase::After, cg));

    trace::stop().stage("trace")?;
    let state = reader.finish().stage("trace")?;
    let (unpaired_begins, orphan_ends) = state.pairer.finish();
    port.send(Record::ReclaimTrace {
        calls: state.calls,
        unpaired_begins,
        orphan_ends,
        lost_events: trace::lost_events() + state.lost_markers,
    });
    port.send(Record::Preconditions {
        swappiness: read_trimmed("/proc/sys/vm/swappiness").parse().unwrap_or(0),
        lru_gen: read_trimmed(scenario::LRU_GEN),
        at_start,
        at_end,
        watermark,
    });
    port.send(Record::Reader {
        reads: reads.reads,
        errors: reads.errors,
        elapsed_ms: reads.elapsed.as_millis() as u64,
        first_error: reads.first_error,
    });
    Ok(())
}
