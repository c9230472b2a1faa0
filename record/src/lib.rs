//! The contract between mmci's host (the orchestrator) and its guest PID 1:
//! the job the guest runs and the records it streams back.
//!
//! Records travel as JSON lines over a named virtio-serial port. Each line is
//! an [`Envelope`]: the format version plus one [`Record`]. The host refuses
//! records of another major format version instead of guessing at them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Version of the record format. Bump on any change a reader of the previous
/// version would misread.
pub const FORMAT_VERSION: u32 = 1;

/// Name of the virtio-serial port that carries records (guest side:
/// `/sys/class/virtio-ports/*/name`).
pub const RECORD_PORT_NAME: &str = "org.mmci.records";

/// Serial number of the virtio disk used as swap (guest side:
/// `/sys/block/*/serial`).
pub const SWAP_DISK_SERIAL: &str = "mmci-swap";

/// Serial of scenario B's dm-verity data disk (`verity_mb` MiB).
pub const VERITY_DATA_DISK_SERIAL: &str = "mmci-vdata";

/// Serial of scenario B's dm-verity hash disk (see [`verity_hash_disk_mb`]).
pub const VERITY_HASH_DISK_SERIAL: &str = "mmci-vhash";

/// Size of the hash disk for `data_mb` MiB of data: a sha256 tree of 4 KiB
/// blocks needs data/128 for its leaves plus a little for the levels above,
/// so data/32 plus 1 MiB leaves ample room.
pub fn verity_hash_disk_mb(data_mb: u64) -> u64 {
    data_mb / 32 + 1
}

/// Serial of the read-only image disk of the `script` scenario (an erofs
/// file built by `mmci image build`).
pub const IMAGE_DISK_SERIAL: &str = "mmci-image";

/// Prefix of a metric line a script prints on its standard output:
/// `MMCI-METRIC: name=value [name=value ...]`, value a decimal number.
pub const METRIC_PREFIX: &str = "MMCI-METRIC:";

/// Path of the job description inside the initramfs.
pub const JOB_PATH: &str = "/mmci/job.json";

/// Prefix of job parameters on the kernel command line (`mmci.threads=64`).
pub const CMDLINE_PREFIX: &str = "mmci.";

/// Scenario B's hog: random writes a second (see [`GuestJob::hog_touch_rate`]).
/// Unpaced, a 475 MiB hog on a 2-vCPU TCG guest made 350,000 a second on an
/// idle host (every page written again within 0.4 s, so that reclaim found
/// none it could take: all anon active, `all_unreclaimable`, and the global
/// OOM killer took the hog) and 60,000 to 95,000 on a busy one. Paced at
/// 60,000 (each page every 2 s), 3 of 3 runs reached the RFC's corner with
/// no OOM kill; at 20,000, 2 of 3.
pub const HOG_TOUCH_RATE_DEFAULT: u64 = 60_000;

/// Scenario B: the words a `hog` or `hog-end` set-up step's detail carries
/// when the hog process has ended (it must run until the reads are over).
pub const HOG_GONE: &str = "the hog is gone";

/// What the guest runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// Say hello and power off: used to probe accelerators and time boots.
    Probe,
    /// Scenario A of docs/workloads.md: many threads thrashing an anonymous
    /// working set in a small memory cgroup over slow swap.
    MglruIsolation,
    /// Scenario B of docs/workloads.md: GFP_NOIO direct reclaim from
    /// dm-verity's dm-bufio allocations while an anonymous hog fills memory.
    /// Always runs the classic LRU (MGLRU off) and an unlimited hog cgroup;
    /// `mglru`, `memcg_max_mb`, `threads` and `working_set_mb` are scenario A's.
    NoioVerity,
    /// A script or command from a guest image (`images/`), run in the image's
    /// root inside scenario A's memory cgroup (MGLRU, dm-delay swap, the
    /// same kernel-side measurements); its exit status and `MMCI-METRIC:`
    /// lines are its own figures. See [`ScriptJob`].
    Script,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Probe,
        Scenario::MglruIsolation,
        Scenario::NoioVerity,
        Scenario::Script,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Probe => "probe",
            Scenario::MglruIsolation => "mglru_isolation",
            Scenario::NoioVerity => "noio_verity",
            Scenario::Script => "script",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the guest swaps (job parameter and matrix axis `swap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapBackend {
    /// No swap.
    Off,
    /// The swap disk directly.
    Disk,
    /// dm-delay over the swap disk, `swap_delay_ms` on every I/O (0 = the
    /// disk directly).
    DmDelay,
    /// /dev/zram0 (LZ4) of the swap disk's size: writes complete
    /// synchronously and swap-ins bypass the swap cache, so the swap cache
    /// stays near zero (scenario B's corner). The disk itself is unused.
    Zram,
}

impl SwapBackend {
    pub const ALL: [SwapBackend; 4] = [
        SwapBackend::Off,
        SwapBackend::Disk,
        SwapBackend::DmDelay,
        SwapBackend::Zram,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SwapBackend::Off => "off",
            SwapBackend::Disk => "disk",
            SwapBackend::DmDelay => "dm-delay",
            SwapBackend::Zram => "zram",
        }
    }

    /// The parameter's textual forms: a backend name, or a boolean (what
    /// `swap` was before it had backends: y = dm-delay, n = off).
    pub fn parse(value: &str) -> Option<SwapBackend> {
        match value {
            "1" | "y" | "yes" | "true" | "on" => Some(SwapBackend::DmDelay),
            "0" | "n" | "no" | "false" | "off" => Some(SwapBackend::Off),
            _ => SwapBackend::ALL.into_iter().find(|b| b.name() == value),
        }
    }

    pub fn enabled(self) -> bool {
        self != SwapBackend::Off
    }
}

impl fmt::Display for SwapBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads a backend name or, from job files written before backends
/// existed, a boolean.
impl<'de> Deserialize<'de> for SwapBackend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Bool(bool),
            Name(String),
        }
        match Form::deserialize(d)? {
            Form::Bool(true) => Ok(SwapBackend::DmDelay),
            Form::Bool(false) => Ok(SwapBackend::Off),
            Form::Name(n) => SwapBackend::parse(&n).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "swap `{n}` is not one of off, disk, dm-delay, zram"
                ))
            }),
        }
    }
}

/// The job description the guest reads from [`JOB_PATH`], optionally
/// overridden by `mmci.<key>=<value>` on the kernel command line. Fields
/// missing from the JSON take their defaults (run.json files written before
/// a field existed still read).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuestJob {
    /// Which scenario to run. Default: mglru_isolation.
    pub scenario: Scenario,
    /// Workload threads. Default: 64 (the seed thread's repro v1).
    pub threads: u32,
    /// Anonymous working set in MiB, shared by all threads. Default: 48.
    pub working_set_mb: u64,
    /// How long the workload runs, in seconds. Default: 20.
    pub duration_s: u64,
    /// memory.max of the workload's cgroup in MiB; 0 means no limit. Default: 16.
    pub memcg_max_mb: u64,
    /// Where to swap: off, disk, dm-delay or zram (booleans read as
    /// dm-delay/off). Default: dm-delay.
    pub swap: SwapBackend,
    /// dm-delay latency on the swap disk in ms (reads, writes and flushes);
    /// 0 puts swap on the disk directly. Default: 50.
    pub swap_delay_ms: u32,
    /// MGLRU on (`lru_gen/enabled` = y) or off (n). Default: true.
    pub mglru: bool,
    /// How often the sampler reads nr_isolated_* from /proc/vmstat, in ms.
    /// Default: 10.
    pub sample_interval_ms: u64,
    /// Interval between time-series records, in ms. Default: 1000.
    pub report_interval_ms: u64,
    /// Per-CPU trace buffer in KiB (`buffer_size_kb`). Default: 4096.
    pub trace_buffer_kb: u64,
    /// Scenario B: the anonymous hog in MiB; 0 sizes it to MemTotal minus
    /// 16 MiB: more than fits beside the kernel, so the hog keeps swapping
    /// and free memory keeps falling to the min watermark. Default: 0.
    pub hog_mb: u64,
    /// Scenario B: threads of the hog touching its pages at random after
    /// filling them. Default: 4 (on a 2-vCPU TCG guest with a 32 MiB device
    /// and 3000 reads, 2 threads gave 0 to 10 GFP_NOIO calls, 4 gave 15 and 45).
    pub hog_threads: u32,
    /// Scenario B: random writes a second of the hog, over all its threads;
    /// 0: as fast as they go. Default: [`HOG_TOUCH_RATE_DEFAULT`]; a job
    /// recorded before the hog was paced has no such field and reads as 0.
    #[serde(default)]
    pub hog_touch_rate: u64,
    /// Scenario B: size of the dm-verity data device in MiB. Default: 64.
    pub verity_mb: u64,
    /// Scenario B: threads doing O_DIRECT random 4 KiB reads. Default: 2.
    pub readers: u32,
    /// Scenario B: reads in all, over all readers; 0 reads until `duration_s`
    /// is over (which ends the readers in any case). Default: 0.
    pub reads: u64,
    /// Scenario B: vm.swappiness. Default: 60 (the kernel's).
    pub swappiness: u32,
    /// Scenario B: dm_bufio's max_cache_size_bytes, small so that hash
    /// blocks are re-read and their buffers re-allocated. Default: 65536.
    pub bufio_cache_bytes: u64,
    /// Scenario script: what to run (set from the matrix's `scripts:`).
    pub script: Option<ScriptJob>,
}

/// Scenario script: a command from the image, or a script copied in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScriptJob {
    /// The matrix's name for it (its `scripts:` key).
    pub name: String,
    /// The image it runs in (a recipe name); the disk is found by
    /// [`IMAGE_DISK_SERIAL`].
    pub image: String,
    /// argv, resolved in the image's root. Empty: `/bin/sh /mmci/script`.
    pub command: Vec<String>,
    /// A script copied into the guest (the matrix's `file:`), at
    /// [`SCRIPT_PATH`] in the image's root, executable.
    pub text: Option<String>,
    /// Extra environment on top of the job's parameters (`MMCI_THREADS`...).
    pub env: BTreeMap<String, String>,
    /// Seconds before the script's cgroup is killed; 0: `duration_s` x 4 + 60.
    pub timeout_s: u64,
}

/// Where a copied-in script is in the image's root.
pub const SCRIPT_PATH: &str = "/mmci/script";

impl ScriptJob {
    /// The argv the guest runs.
    pub fn argv(&self) -> Vec<String> {
        if self.command.is_empty() {
            vec!["/bin/sh".into(), SCRIPT_PATH.into()]
        } else {
            self.command.clone()
        }
    }

    /// The timeout in seconds for a job of `duration_s`.
    pub fn timeout_for(&self, duration_s: u64) -> u64 {
        if self.timeout_s > 0 {
            self.timeout_s
        } else {
            duration_s * 4 + 60
        }
    }
}

/// One `MMCI-METRIC:` line: Some(Ok(pairs)), Some(Err(why)) when it has the
/// prefix but not the form, None for any other line.
pub fn parse_metric_line(line: &str) -> Option<Result<Vec<(String, f64)>, String>> {
    let rest = line.trim_end().strip_prefix(METRIC_PREFIX)?;
    let mut out = Vec::new();
    for word in rest.split_whitespace() {
        let Some((name, value)) = word.split_once('=') else {
            return Some(Err(format!("`{word}` is not name=value")));
        };
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !name_ok {
            return Some(Err(format!(
                "metric name `{name}`: use lower case letters, digits and _"
            )));
        }
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() => out.push((name.to_string(), v)),
            _ => return Some(Err(format!("{name}: `{value}` is not a number"))),
        }
    }
    if out.is_empty() {
        return Some(Err("no name=value after the prefix".into()));
    }
    Some(Ok(out))
}

impl Default for GuestJob {
    fn default() -> Self {
        GuestJob {
            scenario: Scenario::MglruIsolation,
            threads: 64,
            working_set_mb: 48,
            duration_s: 20,
            memcg_max_mb: 16,
            swap: SwapBackend::DmDelay,
            swap_delay_ms: 50,
            mglru: true,
            sample_interval_ms: 10,
            report_interval_ms: 1000,
            trace_buffer_kb: 4096,
            hog_mb: 0,
            hog_threads: 4,
            hog_touch_rate: HOG_TOUCH_RATE_DEFAULT,
            verity_mb: 64,
            readers: 2,
            reads: 0,
            swappiness: 60,
            bufio_cache_bytes: 65536,
            script: None,
        }
    }
}

/// A job parameter that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("unknown guest parameter `mmci.{key}`; known parameters: {}", GuestJob::PARAM_KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("guest parameter `mmci.{key}`: `{value}` is not {expected}")]
    BadValue {
        key: String,
        value: String,
        expected: &'static str,
    },
    #[error("guest parameter `{0}` is not of the form key=value")]
    NotKeyValue(String),
}

fn parse_num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, ParamError> {
    value.parse().map_err(|_| ParamError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        expected: "a non-negative whole number",
    })
}

/// A whole number of which 0 makes no sense (a device of 0 MiB, 0 readers).
fn parse_positive<T: std::str::FromStr + PartialEq + Default>(
    key: &str,
    value: &str,
) -> Result<T, ParamError> {
    match value.parse::<T>() {
        Ok(v) if v != T::default() => Ok(v),
        _ => Err(ParamError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            expected: "a whole number of at least 1",
        }),
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool, ParamError> {
    match value {
        "1" | "y" | "yes" | "true" | "on" => Ok(true),
        "0" | "n" | "no" | "false" | "off" => Ok(false),
        _ => Err(ParamError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            expected: "a boolean (y/n, 1/0, true/false)",
        }),
    }
}

impl GuestJob {
    /// Every key accepted by [`GuestJob::set`], in the order of the struct.
    pub const PARAM_KEYS: [&'static str; 19] = [
        "scenario",
        "threads",
        "working_set_mb",
        "duration_s",
        "memcg_max_mb",
        "swap",
        "swap_delay_ms",
        "mglru",
        "sample_interval_ms",
        "report_interval_ms",
        "trace_buffer_kb",
        "hog_mb",
        "hog_threads",
        "hog_touch_rate",
        "verity_mb",
        "readers",
        "reads",
        "swappiness",
        "bufio_cache_bytes",
    ];

    /// Every parameter and its value as text, in [`Self::PARAM_KEYS`] order
    /// (a script sees them as `MMCI_<KEY>` environment variables).
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let b = |v: bool| if v { "y" } else { "n" }.to_string();
        let v: [String; 19] = [
            self.scenario.name().to_string(),
            self.threads.to_string(),
            self.working_set_mb.to_string(),
            self.duration_s.to_string(),
            self.memcg_max_mb.to_string(),
            self.swap.name().to_string(),
            self.swap_delay_ms.to_string(),
            b(self.mglru),
            self.sample_interval_ms.to_string(),
            self.report_interval_ms.to_string(),
            self.trace_buffer_kb.to_string(),
            self.hog_mb.to_string(),
            self.hog_threads.to_string(),
            self.hog_touch_rate.to_string(),
            self.verity_mb.to_string(),
            self.readers.to_string(),
            self.reads.to_string(),
            self.swappiness.to_string(),
            self.bufio_cache_bytes.to_string(),
        ];
        Self::PARAM_KEYS.into_iter().zip(v).collect()
    }

    /// Sets one parameter from its textual form, as given on the kernel
    /// command line (`mmci.threads=192`) or by `mmci run --set threads=192`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        match key {
            "scenario" => {
                self.scenario = Scenario::ALL
                    .into_iter()
                    .find(|s| s.name() == value)
                    .ok_or_else(|| ParamError::BadValue {
                        key: key.to_string(),
                        value: value.to_string(),
                        expected: "a scenario (probe, mglru_isolation, noio_verity, script)",
                    })?
            }
            "threads" => self.threads = parse_num(key, value)?,
            "working_set_mb" => self.working_set_mb = parse_num(key, value)?,
            "duration_s" => self.duration_s = parse_num(key, value)?,
            "memcg_max_mb" => self.memcg_max_mb = parse_num(key, value)?,
            "swap" => {
                self.swap = SwapBackend::parse(value).ok_or_else(|| ParamError::BadValue {
                    key: key.to_string(),
                    value: value.to_string(),
                    expected: "a swap backend (off, disk, dm-delay, zram)",
                })?
            }
            "swap_delay_ms" => self.swap_delay_ms = parse_num(key, value)?,
            "mglru" => self.mglru = parse_bool(key, value)?,
            "sample_interval_ms" => self.sample_interval_ms = parse_num(key, value)?,
            "report_interval_ms" => self.report_interval_ms = parse_num(key, value)?,
            "trace_buffer_kb" => self.trace_buffer_kb = parse_num(key, value)?,
            "hog_mb" => self.hog_mb = parse_num(key, value)?,
            "hog_threads" => self.hog_threads = parse_positive(key, value)?,
            "hog_touch_rate" => self.hog_touch_rate = parse_num(key, value)?,
            "verity_mb" => self.verity_mb = parse_positive(key, value)?,
            "readers" => self.readers = parse_positive(key, value)?,
            "reads" => self.reads = parse_num(key, value)?,
            "swappiness" => self.swappiness = parse_num(key, value)?,
            "bufio_cache_bytes" => self.bufio_cache_bytes = parse_num(key, value)?,
            _ => {
                return Err(ParamError::UnknownKey {
                    key: key.to_string(),
                })
            }
        }
        Ok(())
    }

    /// Sets a parameter given as `key=value`.
    pub fn set_pair(&mut self, pair: &str) -> Result<(), ParamError> {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| ParamError::NotKeyValue(pair.to_string()))?;
        self.set(key.trim(), value.trim())
    }

    /// Applies every `mmci.<key>=<value>` word of a kernel command line;
    /// other words are the kernel's and are left alone.
    pub fn apply_cmdline(&mut self, cmdline: &str) -> Result<(), ParamError> {
        for word in cmdline.split_whitespace() {
            if let Some(pair) = word.strip_prefix(CMDLINE_PREFIX) {
                self.set_pair(pair)?;
            }
        }
        Ok(())
    }
}

/// Before or after the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Before,
    After,
}

/// One line of /proc/pressure/memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    pub total_us: u64,
}

/// /proc/pressure/memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Psi {
    pub some: PsiLine,
    pub full: PsiLine,
}

/// Throttling seen through the mm_vmscan_throttled tracepoint, per reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThrottleStat {
    pub count: u64,
    pub usec_delayed_sum: u64,
    pub usec_delayed_max: u64,
}

/// Which of a script's output streams a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How the workload process ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadExit {
    /// Exit code if it exited.
    pub code: Option<i32>,
    /// Signal number if it was killed.
    pub signal: Option<i32>,
    /// The memory cgroup's oom_kill count rose while it ran and it died of SIGKILL.
    pub oom_killed: bool,
}

/// Scenario B: memory state relevant to its preconditions, at one moment.
/// Fields missing from older records read as 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemState {
    /// memory.stat of the hog's cgroup, in bytes: all its anon memory
    /// (active and inactive).
    pub anon: u64,
    pub inactive_anon: u64,
    pub inactive_file: u64,
    /// Anon pages of the cgroup that are also in the swap cache (bytes).
    pub swapcached: u64,
    /// /proc/meminfo, in kB.
    pub swap_total_kb: u64,
    pub swap_free_kb: u64,
    pub mem_free_kb: u64,
}

/// Scenario B: /proc/zoneinfo polled while the readers ran.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatermarkStat {
    /// Readings of /proc/zoneinfo.
    pub samples: u64,
    /// Readings in which some zone had fewer free pages than its min watermark.
    pub below_min: u64,
    /// Lowest `free - min` over zones and readings, in pages (negative: under
    /// min); None before the first reading.
    pub lowest_margin_pages: Option<i64>,
}

/// Scenario B: one direct-reclaim call, from mm_vmscan_direct_reclaim_begin
/// to _end of one task, with the mm_vmscan_lru_shrink_inactive events that
/// task emitted in between.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimCall {
    pub pid: u32,
    pub comm: String,
    /// Trace timestamp of the begin event, in µs.
    pub begin_us: u64,
    /// end - begin timestamps, in µs.
    pub latency_us: u64,
    /// As the kernel prints them: `GFP_NOIO|__GFP_NOWARN|...`.
    pub gfp_flags: String,
    pub order: u32,
    /// From the end event.
    pub nr_reclaimed: u64,
    /// Lowest reclaim priority of its shrink_inactive events (12 is the
    /// first pass, 0 the last); None when it isolated nothing from an LRU.
    pub min_priority: Option<u32>,
    pub anon_scanned: u64,
    pub file_scanned: u64,
    pub anon_reclaimed: u64,
    pub file_reclaimed: u64,
    /// Anon nr_scanned of its shrink_inactive events at priority 0.
    pub anon_scanned_prio0: u64,
    /// Its mm_vmscan_lru_shrink_inactive events.
    pub shrink_events: u32,
    /// Its scanning per reclaim round and priority, in order (below).
    #[serde(default)]
    pub steps: Vec<ReclaimStep>,
    /// Distinct memcgs whose lruvec it shrank (from the shrink_slab kprobe,
    /// which fires once per memcg visited); None without the probe.
    #[serde(default)]
    pub memcgs_visited: Option<u32>,
    /// The tracked lruvec (the hog's memcg) during the call, from the
    /// guest's memory.stat readings written into the trace: the most swap
    /// cache and the least anon, in bytes; None without a reading.
    #[serde(default)]
    pub swapcache_max_bytes: Option<u64>,
    #[serde(default)]
    pub anon_min_bytes: Option<u64>,
    /// trace_pipe said `[LOST n EVENTS]` while the call was open: its
    /// sums may be short and its rounds mis-split.
    #[serde(default)]
    pub events_lost: bool,
}

/// One priority level of one reclaim round of a direct-reclaim call.
/// do_try_to_free_pages() lowers the priority from 12 to 0 and may start
/// over with a full memcg walk: a priority that goes up starts a new round.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReclaimStep {
    /// 1 for the first walk, 2 for the full-walk retry, ...
    pub round: u32,
    pub priority: u32,
    /// nr_scanned of mm_vmscan_lru_shrink_inactive, anon and file LRUs.
    pub anon_scanned: u64,
    pub file_scanned: u64,
    /// nr_reclaimed of those events.
    pub reclaimed: u64,
    /// nr_taken of mm_vmscan_lru_shrink_active (folios taken off the
    /// active lists to deactivate), anon and file.
    pub anon_active_taken: u64,
    pub file_active_taken: u64,
    /// shrink_slab() kprobe hits: memcgs visited at this priority.
    pub memcg_visits: u32,
    /// Trace timestamps of its first and last event, in µs.
    pub first_us: u64,
    pub last_us: u64,
}

/// One record streamed by the guest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// First record: guest-init is running and knows its job.
    Hello {
        kernel_release: String,
        arch: String,
        cpus: u32,
        mem_total_kb: u64,
        /// Time since the kernel started, at the moment of this record.
        uptime_ms: u64,
        job: GuestJob,
    },
    /// A set-up step finished (mounts, dm-delay, swap, cgroup, tracing...).
    Setup {
        step: String,
        detail: String,
        ms: u64,
    },
    /// Counters before or after the workload.
    Snapshot {
        phase: Phase,
        vmstat: BTreeMap<String, u64>,
        memcg_events: BTreeMap<String, u64>,
        memcg_stat: BTreeMap<String, u64>,
        psi_memory: Option<Psi>,
    },
    /// One point of the time series (one per report interval).
    Sample {
        t_ms: u64,
        /// Highest nr_isolated_anon seen during the interval.
        nr_isolated_anon_max: u64,
        /// Highest nr_isolated_file seen during the interval.
        nr_isolated_file_max: u64,
        /// Highest nr_isolated_anon + nr_isolated_file in one reading.
        nr_isolated_total_max: u64,
        /// The workload's touch counter at the end of the interval.
        touches: u64,
        memcg_current_bytes: u64,
        mem_free_kb: u64,
    },
    /// mm_vmscan_throttled events by reason (e.g. VMSCAN_THROTTLE_ISOLATED).
    Throttle {
        by_reason: BTreeMap<String, ThrottleStat>,
        /// Events the trace buffer dropped (overrun), summed over CPUs.
        lost_events: u64,
    },
    /// The workload's result.
    Workload {
        touches: u64,
        elapsed_ms: u64,
        exit: WorkloadExit,
    },
    /// Scenario B: its preconditions as measured, at the readers' start and
    /// end; the host judges them (a run where they failed is "not reproduced").
    Preconditions {
        /// /proc/sys/vm/swappiness.
        swappiness: u32,
        /// /sys/kernel/mm/lru_gen/enabled as read back (0x0000: MGLRU off).
        lru_gen: String,
        at_start: MemState,
        at_end: MemState,
        watermark: WatermarkStat,
    },
    /// Scenario B: one direct-reclaim call, streamed as it completes.
    ReclaimCall(ReclaimCall),
    /// Scenario B: the direct-reclaim tracing session, after its last call.
    ReclaimTrace {
        /// Calls paired and streamed as ReclaimCall records.
        calls: u64,
        /// Begin events with no end before tracing stopped.
        unpaired_begins: u64,
        /// End events with no begin (the begin was before tracing started).
        orphan_ends: u64,
        /// Events the kernel dropped: per-CPU overruns plus `[LOST n EVENTS]`
        /// markers in trace_pipe.
        lost_events: u64,
    },
    /// Scenario B: what the O_DIRECT readers of the verity device did.
    Reader {
        reads: u64,
        /// Reads that failed (EIO would mean verity found corruption).
        errors: u64,
        elapsed_ms: u64,
        first_error: Option<String>,
    },
    /// Scenario script: one line the script wrote, streamed as it comes
    /// (up to a cap; the Script record counts the lines left out).
    Output { stream: Stream, line: String },
    /// Scenario script: how it ended and what it reported.
    Script {
        exit: WorkloadExit,
        elapsed_ms: u64,
        /// Killed (its whole cgroup) at the timeout.
        timed_out: bool,
        /// Its `MMCI-METRIC:` values (the last one of each name wins).
        metrics: BTreeMap<String, f64>,
        /// `MMCI-METRIC:` lines that did not parse, with the reason.
        bad_metric_lines: Vec<String>,
        /// Output lines not streamed (over the cap).
        dropped_lines: u64,
    },
    /// A set-up or run step failed; the run ends after this.
    Error { stage: String, message: String },
    /// Last record: the run is over (ok = no step failed).
    Done { ok: bool, uptime_ms: u64 },
}

/// One line on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// [`FORMAT_VERSION`] of the writer.
    pub v: u32,
    #[serde(flatten)]
    pub record: Record,
}

impl Envelope {
    pub fn new(record: Record) -> Self {
        Envelope {
            v: FORMAT_VERSION,
            record,
        }
    }

    /// The JSON line for this record, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("records always serialize");
        line.push('\n');
        line
    }
}

/// A line that is not a record of our format.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("record format version {found}, this mmci reads version {FORMAT_VERSION}")]
    Version { found: u32 },
    #[error("not a record: {0}")]
    Json(#[from] serde_json::Error),
}

/// Parses one JSON line into a record, checking its format version.
pub fn parse_line(line: &str) -> Result<Record, LineError> {
    #[derive(Deserialize)]
    struct VersionOnly {
        v: u32,
    }
    let version: VersionOnly = serde_json::from_str(line)?;
    if version.v != FORMAT_VERSION {
        return Err(LineError::Version { found: version.v });
    }
    let envelope: Envelope = serde_json::from_str(line)?;
    Ok(envelope.record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_overrides_only_mmci_words() {
        let mut job = GuestJob::default();
        job.apply_cmdline(
            "console=ttyS0 mmci.threads=192 panic=-1 mmci.mglru=n mmci.scenario=probe",
        )
        .unwrap();
        assert_eq!(job.threads, 192);
        assert!(!job.mglru);
        assert_eq!(job.scenario, Scenario::Probe);
        assert_eq!(job.working_set_mb, GuestJob::default().working_set_mb);
    }

    #[test]
    fn unknown_key_names_it_and_lists_known_ones() {
        let err = GuestJob::default().set_pair("thread=4").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`mmci.thread`"), "{text}");
        assert!(text.contains("threads, working_set_mb"), "{text}");
    }

    #[test]
    fn bad_values_are_refused() {
        let mut job = GuestJob::default();
        assert!(matches!(
            job.set("threads", "-1"),
            Err(ParamError::BadValue { .. })
        ));
        assert!(matches!(
            job.set("mglru", "maybe"),
            Err(ParamError::BadValue { .. })
        ));
        assert!(matches!(
            job.set_pair("threads"),
            Err(ParamError::NotKeyValue(_))
        ));
    }

    #[test]
    fn every_param_key_is_settable() {
        let sample = |k: &str| match k {
            "scenario" => "probe",
            "swap" | "mglru" => "y",
            _ => "7",
        };
        for key in GuestJob::PARAM_KEYS {
            GuestJob::default().set(key, sample(key)).unwrap();
        }
    }

    #[test]
    fn record_round_trip_and_version_check() {
        let rec = Record::Done {
            ok: true,
            uptime_ms: 1234,
        };
        let line = Envelope::new(rec.clone()).to_line();
        assert_eq!(
            line,
            "{\"v\":1,\"type\":\"done\",\"ok\":true,\"uptime_ms\":1234}\n"
        );
        assert_eq!(parse_line(line.trim_end()).unwrap(), rec);
        let future = line.replace("\"v\":1", "\"v\":2");
        assert!(matches!(
            parse_line(&future),
            Err(LineError::Version { found: 2 })
        ));
        assert!(parse_line("Linux version 6.12").is_err());
    }

    #[test]
    fn scenario_b_params_and_zero_where_it_makes_no_sense() {
        let mut job = GuestJob::default();
        job.apply_cmdline(
            "mmci.scenario=noio_verity mmci.hog_mb=200 mmci.verity_mb=16 mmci.reads=500",
        )
        .unwrap();
        assert_eq!(job.scenario, Scenario::NoioVerity);
        assert_eq!((job.hog_mb, job.verity_mb, job.reads), (200, 16, 500));
        let err = job.set("readers", "0").unwrap_err().to_string();
        assert!(
            err.contains("`mmci.readers`") && err.contains("at least 1"),
            "{err}"
        );
        assert!(job.set("verity_mb", "0").is_err());
    }

    #[test]
    fn jobs_written_before_a_field_existed_still_read() {
        let mut json = serde_json::to_value(GuestJob::default()).unwrap();
        json.as_object_mut().unwrap().remove("hog_mb");
        let job: GuestJob = serde_json::from_value(json).unwrap();
        assert_eq!(job, GuestJob::default());
        // Jobs from before the hog was paced ran it unpaced: they read as 0,
        // new jobs get the default pace.
        let mut json = serde_json::to_value(GuestJob::default()).unwrap();
        json.as_object_mut().unwrap().remove("hog_touch_rate");
        let job: GuestJob = serde_json::from_value(json).unwrap();
        assert_eq!(job.hog_touch_rate, 0);
        assert_eq!(GuestJob::default().hog_touch_rate, HOG_TOUCH_RATE_DEFAULT);
        let mut job = GuestJob::default();
        job.apply_cmdline("mmci.hog_touch_rate=0").unwrap();
        assert_eq!(job.hog_touch_rate, 0);
    }

    #[test]
    fn swap_backends_and_the_old_boolean() {
        let cases = [
            ("zram", Some(SwapBackend::Zram)),
            ("dm-delay", Some(SwapBackend::DmDelay)),
            ("disk", Some(SwapBackend::Disk)),
            ("off", Some(SwapBackend::Off)),
            ("y", Some(SwapBackend::DmDelay)),
            ("n", Some(SwapBackend::Off)),
            ("zswap", None),
        ];
        for (text, want) in cases {
            assert_eq!(SwapBackend::parse(text), want, "{text}");
        }
        let mut json = serde_json::to_value(GuestJob::default()).unwrap();
        assert_eq!(json["swap"], "dm-delay");
        for (old, want) in [(true, SwapBackend::DmDelay), (false, SwapBackend::Off)] {
            json["swap"] = serde_json::json!(old);
            let job: GuestJob = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(job.swap, want);
        }
        json["swap"] = serde_json::json!("nvme");
        let err = serde_json::from_value::<GuestJob>(json).unwrap_err();
        assert!(err.to_string().contains("not one of off, disk"), "{err}");
        let err = GuestJob::default().set("swap", "nvme").unwrap_err();
        assert!(
            err.to_string().contains("off, disk, dm-delay, zram"),
            "{err}"
        );
    }

    #[test]
    fn reclaim_call_is_a_flat_record() {
        let rec = Record::ReclaimCall(ReclaimCall {
            pid: 45,
            comm: "kworker/u9:1".into(),
            gfp_flags: "GFP_NOIO|__GFP_NOWARN".into(),
            min_priority: Some(0),
            ..ReclaimCall::default()
        });
        let line = Envelope::new(rec.clone()).to_line();
        assert!(
            line.starts_with("{\"v\":1,\"type\":\"reclaim_call\",\"pid\":45,"),
            "{line}"
        );
        assert_eq!(parse_line(line.trim_end()).unwrap(), rec);
    }

    #[test]
    fn job_json_rejects_unknown_fields() {
        let mut json = serde_json::to_value(GuestJob::default()).unwrap();
        json["bogus"] = serde_json::json!(1);
        assert!(serde_json::from_value::<GuestJob>(json).is_err());
    }

    #[test]
    fn metric_lines() {
        // (line, expected)
        let ok = |pairs: &[(&str, f64)]| {
            Some(Ok(pairs
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect::<Vec<_>>()))
        };
        type Parsed = Option<Result<Vec<(String, f64)>, String>>;
        let cases: [(&str, Parsed); 5] = [
            (
                "MMCI-METRIC: ops_per_s=1234.5",
                ok(&[("ops_per_s", 1234.5)]),
            ),
            (
                "MMCI-METRIC: a=1 b_2=-3e2  ",
                ok(&[("a", 1.0), ("b_2", -300.0)]),
            ),
            ("ops_per_s=1", None),
            ("  MMCI-METRIC: a=1", None),
            (
                "MMCI-METRIC:",
                Some(Err("no name=value after the prefix".into())),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_metric_line(line), want, "{line}");
        }
        for bad in [
            "MMCI-METRIC: a",
            "MMCI-METRIC: A=1",
            "MMCI-METRIC: a=fast",
            "MMCI-METRIC: a=inf",
        ] {
            assert!(matches!(parse_metric_line(bad), Some(Err(_))), "{bad}");
        }
    }

    #[test]
    fn params_read_back_into_the_same_job() {
        let mut job = GuestJob {
            threads: 3,
            mglru: false,
            scenario: Scenario::Script,
            ..GuestJob::default()
        };
        job.bufio_cache_bytes = 4096;
        let mut again = GuestJob::default();
        for (k, v) in job.params() {
            again.set(k, &v).unwrap();
        }
        assert_eq!(again, job);
    }

    #[test]
    fn script_argv_and_timeout() {
        let s = ScriptJob::default();
        assert_eq!(s.argv(), ["/bin/sh", SCRIPT_PATH]);
        assert_eq!(s.timeout_for(20), 140);
        let s = ScriptJob {
            command: vec!["redis-bench".into()],
            timeout_s: 30,
            ..ScriptJob::default()
        };
        assert_eq!(s.argv(), ["redis-bench"]);
        assert_eq!(s.timeout_for(20), 30);
    }
}
