//! Time series while the workload runs: nr_isolated_* polled every few ms
//! (peaks are short-lived), reported once per interval with the interval's
//! maxima, the workload's touches, memory.current and MemFree.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mmci_record::{Record, WatermarkStat};

use crate::port::RecordPort;
use crate::procfs;

/// Reads a whole procfs/sysfs file through one open descriptor (pread from 0),
/// so polling does not reopen the file each time.
pub struct Rereader {
    file: File,
    buf: Vec<u8>,
}

impl Rereader {
    pub fn open(path: &str) -> io::Result<Self> {
        Ok(Rereader {
            file: File::open(path)?,
            buf: vec![0; 16384],
        })
    }

    pub fn read(&mut self) -> io::Result<&str> {
        let mut len = 0;
        loop {
            if len == self.buf.len() {
                self.buf.resize(len * 2, 0);
            }
            let n = self.file.read_at(&mut self.buf[len..], len as u64)?;
            if n == 0 {
                break;
            }
            len += n;
        }
        Ok(std::str::from_utf8(&self.buf[..len]).unwrap_or(""))
    }
}

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Sampler {
    /// Starts polling. `touches` is updated by whoever reads the workload's progress.
    pub fn start(
        port: Arc<RecordPort>,
        cgroup: PathBuf,
        touches: Arc<AtomicU64>,
        sample_every: Duration,
        report_every: Duration,
    ) -> io::Result<Self> {
        let mut vmstat = Rereader::open("/proc/vmstat")?;
        let mut meminfo = Rereader::open("/proc/meminfo")?;
        let mut current = Rereader::open(&cgroup.join("memory.current").to_string_lossy())?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                let start = Instant::now();
                let mut next_report = start + report_every;
                let (mut anon_max, mut file_max, mut total_max) = (0, 0, 0);
                while !stop_flag.load(Ordering::Acquire) {
                    if let Ok(text) = vmstat.read() {
                        let anon = procfs::vmstat_value(text, "nr_isolated_anon").unwrap_or(0);
                        let file = procfs::vmstat_value(text, "nr_isolated_file").unwrap_or(0);
                        anon_max = anon_max.max(anon);
                        file_max = file_max.max(file);
                        total_max = total_max.max(anon + file);
                    }
                    let now = Instant::now();
                    if now >= next_report {
                        port.send(Record::Sample {
                            t_ms: (now - start).as_millis() as u64,
                            nr_isolated_anon_max: anon_max,
                            nr_isolated_file_max: file_max,
                            nr_isolated_total_max: total_max,
                            touches: touches.load(Ordering::Relaxed),
                            memcg_current_bytes: current
                                .read()
                                .ok()
                                .and_then(|t| t.trim().parse().ok())
                                .unwrap_or(0),
                            mem_free_kb: meminfo
                                .read()
                                .ok()
                                .and_then(|t| procfs::meminfo_kb(t, "MemFree"))
                                .unwrap_or(0),
                        });
                        (anon_max, file_max, total_max) = (0, 0, 0);
                        next_report += report_every;
                    }
                    std::thread::sleep(sample_every);
                }
            })?;
        Ok(Sampler { stop, handle })
    }

    /// Stops the sampler after one last reading.
    pub fn finish(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.handle.join();
    }
}

/// Scenario B: polls /proc/zoneinfo to see whether free memory went under a
/// zone's min watermark while the readers ran.
pub struct WatermarkSampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<WatermarkStat>,
}

impl WatermarkSampler {
    pub fn start(every: Duration) -> io::Result<Self> {
        let mut zoneinfo = Rereader::open("/proc/zoneinfo")?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("watermarks".into())
            .spawn(move || {
                let mut stat = WatermarkStat::default();
                while !stop_flag.load(Ordering::Acquire) {
                    if let Ok(text) = zoneinfo.read() {
                        let zones = procfs::parse_zoneinfo(text);
                        if let Some(margin) = procfs::lowest_watermark_margin(&zones) {
                            stat.samples += 1;
                            if margin < 0 {
                                stat.below_min += 1;
                            }
                            stat.lowest_margin_pages =
                                Some(stat.lowest_margin_pages.map_or(margin, |m| m.min(margin)));
                        }
                    }
                    std::thread::sleep(every);
                }
                stat
            })?;
        Ok(WatermarkSampler { stop, handle })
    }

    pub fn finish(self) -> WatermarkStat {
        self.stop.store(true, Ordering::Release);
        self.handle.join().unwrap_or_default()
    }
}
