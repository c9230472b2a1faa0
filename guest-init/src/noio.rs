//! Scenario B (docs/workloads.md): GFP_NOIO direct reclaim through dm-verity.
//!
//! MGLRU off, swap on a plain disk, a dm-verity device built here (data
//! filled with reproducible random blocks, the hash tree from verity.rs),
//! checked (reads return the data, a flipped byte gives EIO), an anonymous
//! hog filled to near MemTotal in its own cgroup, then dm-bufio's cache
//! shrunk, caches dropped and O_DIRECT random reads of the verity device:
//! every read verifies hash blocks that dm-bufio must allocate, with
//! GFP_NOIO once GFP_NOWAIT fails. Direct-reclaim calls are traced, paired
//! and streamed one record each; the preconditions are measured and sent for
//! the host to judge.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use mmci_record::{
    GuestJob, MemState, Phase, Record, VERITY_DATA_DISK_SERIAL, VERITY_HASH_DISK_SERIAL,
};

use crate::direct_io::{self, AlignedBuf};
use crate::port::RecordPort;
use crate::scenario::{self, setup_step, Stage, StepError};
use crate::{cgroup, dm, procfs, reclaim_trace, sampler, trace, verity, workload};

const HOG_CGROUP: &str = "mmci-hog";
/// With `hog_mb` = 0 the hog is MemTotal minus this: more than fits beside
/// the kernel, so the hog's random writes keep swapping and free memory
/// keeps falling to the min watermark (with 40 MiB less, a 512 MiB guest
/// held the whole hog and nothing was reclaimed).
const HOG_HEADROOM_MB: u64 = 16;
/// How long the hog writes at random before the preconditions are measured
/// and the reads start: right after the fill pass, the swap cache still
/// holds what the fill pushed out (18 MiB of 475 in one run, 3 MiB a few
/// seconds later), which is the fill's transient and not the steady state.
const HOG_SETTLE: Duration = Duration::from_secs(5);
/// How long the hog may take to write its pages once (TCG is slow).
const HOG_FILL_TIMEOUT: Duration = Duration::from_secs(600);
const BUFIO_CACHE: &str = "/sys/module/dm_bufio/parameters/max_cache_size_bytes";
/// Data seed and salt: fixed, so that every run verifies the same tree.
const DATA_SEED: u64 = 0x6d6d_6369_5f76_6572;
const SALT: [u8; 8] = *b"mmci-vty";
/// Raw trace lines of the first calls go to the console (kept in the run's
/// console.log), at most this many lines per call and this many calls.
const RAW_LINES_PER_CALL: usize = 12;
const RAW_NOIO_CALLS: u32 = 20;
const RAW_OTHER_CALLS: u32 = 3;

/// The verity device and what is needed to check it.
struct Verity {
    node: PathBuf,
    data_disk: PathBuf,
    blocks: u64,
}

fn write_file(path: &str, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("{path}: {e}"))
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Fills the data disk, writes the tree to the hash disk, loads the table.
fn setup_verity(job: &GuestJob) -> Result<(Verity, String), StepError> {
    let (dname, dmaj, dmin, dbytes) =
        scenario::find_disk(VERITY_DATA_DISK_SERIAL).stage("verity")?;
    let (hname, hmaj, hmin, hbytes) =
        scenario::find_disk(VERITY_HASH_DISK_SERIAL).stage("verity")?;
    let want = job.verity_mb << 20;
    if dbytes < want {
        return Err(StepError {
            stage: "verity",
            message: format!("data disk {dname} has {dbytes} bytes, verity_mb wants {want}"),
        });
    }
    let blocks = want / verity::BLOCK as u64;
    let data_disk = PathBuf::from(format!("/dev/{dname}"));
    let data = direct_io::open(&data_disk, true).stage("verity")?;
    // 1 MiB at a time: the data is never held whole, only its leaf digests.
    const CHUNK: u64 = 256;
    let mut buf = AlignedBuf::new(CHUNK as usize * verity::BLOCK);
    let mut leaves = Vec::with_capacity(blocks as usize);
    for first in (0..blocks).step_by(CHUNK as usize) {
        let n = CHUNK.min(blocks - first) as usize;
        for (i, block) in buf.chunks_mut(verity::BLOCK).take(n).enumerate() {
            direct_io::fill_block(DATA_SEED, first + i as u64, block);
            leaves.push(verity::hash_block(&SALT, block));
        }
        let bytes = &buf[..n * verity::BLOCK];
        use std::os::unix::fs::FileExt;
        data.write_all_at(bytes, first * verity::BLOCK as u64)
            .stage("verity")?;
    }
    data.sync_all().stage("verity")?;
    drop(data);
    let tree = verity::tree_from_leaves(&SALT, &leaves);
    if tree.tree.len() as u64 > hbytes {
        return Err(StepError {
            stage: "verity",
            message: format!(
                "hash disk {hname} has {hbytes} bytes, the tree needs {}",
                tree.tree.len()
            ),
        });
    }
    let hash_disk = PathBuf::from(format!("/dev/{hname}"));
    let hash = direct_io::open(&hash_disk, true).stage("verity")?;
    let mut tbuf = AlignedBuf::new(tree.tree.len());
    tbuf.copy_from_slice(&tree.tree);
    direct_io::write_block(&hash, &tbuf, 0).stage("verity")?;
    hash.sync_all().stage("verity")?;
    drop(hash);
    let target = dm::Target {
        start: 0,
        length: blocks * (verity::BLOCK as u64 / 512),
        kind: "verity".into(),
        params: verity::table_params((dmaj, dmin), (hmaj, hmin), blocks, &tree.root, &SALT),
    };
    let node =
        dm::create_device("mmci-verity", &[target], dm::DM_READONLY_FLAG).stage("dm-verity")?;
    let detail = format!(
        "{} over {dname} ({dmaj}:{dmin}) + {hname} ({hmaj}:{hmin}): {blocks} blocks, {} hash blocks in {} levels, root {}",
        node.display(),
        verity::hash_blocks(blocks),
        verity::level_blocks(blocks).len(),
        verity::hex(&tree.root)
    );
    Ok((
        Verity {
            node,
            data_disk,
            blocks,
        },
        detail,
    ))
}

/// Proves the device: blocks read through it equal what was written, a
/// flipped byte on the data disk makes the read fail with EIO, and once the
/// byte is restored the block reads back again.
fn check_verity(v: &Verity) -> Result<((), String), StepError> {
    let err = |message: String| StepError {
        stage: "verity-check",
        message,
    };
    let dev = direct_io::open(&v.node, false).stage("verity-check")?;
    let mut buf = AlignedBuf::new(verity::BLOCK);
    let mut want = vec![0u8; verity::BLOCK];
    let picks: Vec<u64> = (0..8).map(|i| i * (v.blocks - 1) / 7).collect();
    for &b in &picks {
        direct_io::read_block(&dev, &mut buf, b).map_err(|e| err(format!("block {b}: {e}")))?;
        direct_io::fill_block(DATA_SEED, b, &mut want);
        if buf[..] != want[..] {
            return Err(err(format!("block {b} reads back different data")));
        }
    }
    let victim = v.blocks / 3;
    let data = direct_io::open(&v.data_disk, true).stage("verity-check")?;
    let mut raw = AlignedBuf::new(verity::BLOCK);
    direct_io::read_block(&data, &mut raw, victim).stage("verity-check")?;
    raw[100] ^= 0xff;
    direct_io::write_block(&data, &raw, victim).stage("verity-check")?;
    let corrupted = direct_io::read_block(&dev, &mut buf, victim);
    raw[100] ^= 0xff;
    direct_io::write_block(&data, &raw, victim).stage("verity-check")?;
    match corrupted {
        Err(e) if e.raw_os_error() == Some(libc::EIO) => {}
        Err(e) => return Err(err(format!("corrupted block {victim}: {e}, not EIO"))),
        Ok(()) => return Err(err(format!("corrupted block {victim} read without error"))),
    }
    direct_io::read_block(&dev, &mut buf, victim)
        .map_err(|e| err(format!("restored block {victim}: {e}")))?;
    direct_io::fill_block(DATA_SEED, victim, &mut want);
    if buf[..] != want[..] {
        return Err(err(format!(
            "restored block {victim} reads back different data"
        )));
    }
    Ok((
        (),
        format!(
            "{} blocks read back equal; byte flipped in block {victim}: EIO; restored: equal",
            picks.len()
        ),
    ))
}

/// The hog: `guest-init workload` in its own unlimited cgroup, filling its
/// pages once, then touching them at random until killed.
fn start_hog(job: &GuestJob, cg: &Path) -> Result<(Child, String), StepError> {
    let mem_total_mb =
        procfs::meminfo_kb(&read_trimmed("/proc/meminfo"), "MemTotal").unwrap_or(0) >> 10;
    let hog_mb = if job.hog_mb > 0 {
        job.hog_mb
    } else {
        mem_total_mb.saturating_sub(HOG_HEADROOM_MB).max(1)
    };
    let args = workload::WorkloadArgs {
        cgroup: cg.to_string_lossy().into_owned(),
        threads: job.hog_threads,
        working_set_mb: hog_mb,
        // Killed once the readers are done; this is only a backstop.
        duration_s: job.duration_s + 3600,
        fill_first: true,
    };
    let start = std::time::Instant::now();
    let mut child = Command::new("/proc/self/exe")
        .args(args.to_args())
        .stdout(Stdio::piped())
        .spawn()
        .stage("hog")?;
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    // Keeps draining the hog's progress lines so that it never blocks on a full pipe.
    std::thread::Builder::new()
        .name("hog-out".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == workload::FILLED {
                    let _ = tx.send(());
                }
            }
        })
        .stage("hog")?;
    match rx.recv_timeout(HOG_FILL_TIMEOUT) {
        Ok(()) => {
            let filled_ms = start.elapsed().as_millis();
            std::thread::sleep(HOG_SETTLE);
            Ok((
                child,
                format!(
                    "{hog_mb} MiB (MemTotal {mem_total_mb} MiB), {} threads, filled in {filled_ms} ms, then {} s of random writes",
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

fn mem_state(cg: &Path) -> MemState {
    let stat = scenario::read_map(&cg.join("memory.stat"));
    let meminfo = read_trimmed("/proc/meminfo");
    let kb = |k| procfs::meminfo_kb(&meminfo, k).unwrap_or(0);
    let get = |k: &str| stat.get(k).copied().unwrap_or(0);
    MemState {
        inactive_anon: get("inactive_anon"),
        inactive_file: get("inactive_file"),
        swapcached: get("swapcached"),
        swap_total_kb: kb("SwapTotal"),
        swap_free_kb: kb("SwapFree"),
        mem_free_kb: kb("MemFree"),
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

pub fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    // The RFC's path is the classic LRU's get_scan_count(): MGLRU off.
    setup_step(port, "mglru", || scenario::set_lru_gen(false))?;
    // Swap on the disk directly: the hog's swap-out must make progress.
    setup_step(port, "swap", || scenario::setup_swap(0))?;
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
    let verity = setup_step(port, "verity", || setup_verity(job))?;
    setup_step(port, "verity-check", || check_verity(&verity))?;
    // The trace buffers cannot be allocated once the hog has the memory.
    setup_step(port, "trace-buffers", || {
        trace::size_buffers(job.trace_buffer_kb).stage("trace")?;
        Ok(((), format!("{} KiB/cpu", job.trace_buffer_kb)))
    })?;
    let cg = setup_step(port, "cgroup", || {
        let dir = cgroup::create(HOG_CGROUP, 0).stage("cgroup")?;
        let detail = format!("{} memory.max=max", dir.display());
        Ok((dir, detail))
    })?;
    let mut hog = setup_step(port, "hog", || start_hog(job, &cg))?;
    let result = read_under_pressure(job, port, &verity, &cg);
    let _ = hog.kill();
    let _ = hog.wait();
    result
}

fn read_under_pressure(
    job: &GuestJob,
    port: &Arc<RecordPort>,
    verity: &Verity,
    cg: &Path,
) -> Result<(), StepError> {
    setup_step(port, "bufio", || {
        write_file(BUFIO_CACHE, &job.bufio_cache_bytes.to_string()).stage("bufio")?;
        Ok((
            (),
            format!("max_cache_size_bytes={}", read_trimmed(BUFIO_CACHE)),
        ))
    })?;
    setup_step(port, "drop-caches", || {
        write_file("/proc/sys/vm/drop_caches", "3").stage("drop-caches")?;
        Ok(((), "3".to_string()))
    })?;
    let reader = setup_step(port, "trace", || {
        trace::start(&reclaim_trace::EVENTS).stage("trace")?;
        let state = TraceState {
            port: port.clone(),
            pairer: reclaim_trace::Pairer::default(),
            calls: 0,
            lost_markers: 0,
            raw: HashMap::new(),
            printed_noio: 0,
            printed_other: 0,
        };
        let reader = trace::PipeReader::start(state, |s, line| s.on_line(line)).stage("trace")?;
        Ok((reader, reclaim_trace::EVENTS.join(", ")))
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
