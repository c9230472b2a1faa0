//! The job the guest runs (`/mmci/job.json`, overridden by `mmci.` words
//! on the kernel command line): its parameters and where it swaps (the
//! script of scenario script is in script_job.rs).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Scenario, ScriptJob, CMDLINE_PREFIX, HOG_TOUCH_RATE_DEFAULT};

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

/// Transparent huge pages for the workload (job parameter and matrix axis
/// `thp`): what guest-init writes to
/// /sys/kernel/mm/transparent_hugepage/enabled before the workload starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThpMode {
    /// Not set: the kernel's own default (with the 6.12 Kconfig default:
    /// `always` in a guest of 512 MiB or more, `never` below, where
    /// hugepage_init() clears every THP flag). What every job recorded
    /// before the parameter existed ran.
    Kernel,
    Never,
    /// THP only where madvise(MADV_HUGEPAGE) asks; scenario A's workload
    /// then asks for its working set.
    Madvise,
    Always,
}

impl ThpMode {
    pub const ALL: [ThpMode; 4] = [
        ThpMode::Kernel,
        ThpMode::Never,
        ThpMode::Madvise,
        ThpMode::Always,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ThpMode::Kernel => "kernel",
            ThpMode::Never => "never",
            ThpMode::Madvise => "madvise",
            ThpMode::Always => "always",
        }
    }

    pub fn parse(value: &str) -> Option<ThpMode> {
        ThpMode::ALL.into_iter().find(|m| m.name() == value)
    }

    /// How a job without the field reads: it ran before guest-init set THP.
    fn not_set() -> ThpMode {
        ThpMode::Kernel
    }
}

impl fmt::Display for ThpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    /// Scenario A and script: transparent huge pages, set before the
    /// workload starts (scenario B leaves the kernel's setting). Default:
    /// never: one 2 MiB folio is 512 pages, past the isolation limit of a
    /// 16 MiB memcg's lruvec by itself, and the seed thread ran with THP
    /// off. A job recorded before the field existed reads as `kernel`.
    #[serde(default = "ThpMode::not_set")]
    pub thp: ThpMode,
    /// Scenario A: memory cgroups the workload runs in, each with its own
    /// `threads`, `working_set_mb` and `memcg_max_mb`. More than 1 nests
    /// them in one parent (whose counters the snapshots read); with
    /// `memcg_max_mb: 0` and a working set past the guest's memory it is
    /// root reclaim over many lruvecs. Default: 1.
    pub memcgs: u32,
    /// Scenario A: a neighbour memory cgroup of this many MiB beside the
    /// workload's, in which one thread writes twice that at random: it
    /// reclaims all the time but never holds enough isolated to throttle,
    /// so it shows who else a per-node wake reaches. 0: none. Default: 0.
    pub neighbour_mb: u64,
    /// Scenario A: SIGKILL the workload this many seconds after it starts
    /// and time how long it takes to exit (a reclaimer killed while
    /// throttled should end its reclaim). 0: never. Default: 0.
    pub kill_after_s: u64,
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
    /// Scenario B: MGLRU on (the control cell; a matrix's `mglru:` on a
    /// scenario B cell sets it). Its own field since `mglru` is on by
    /// default and scenario B ran with MGLRU off; written only when on, so
    /// jobs without it keep their form and cells their ids. Default: false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub noio_mglru: bool,
    /// Scenario B: application memory cgroups beside the hog, as on the
    /// seed's machine (~78 memcgs): each reads its own `app_cache_mb`
    /// range of a disk once (clean page cache on the file LRU) and every
    /// other one also holds `app_anon_mb` of anon; they are created before
    /// the hog's, so a reclaim walk meets them first and the hog last.
    /// 0: none (the hog alone, no page cache). Default: 0.
    pub apps: u32,
    /// Scenario B: clean page cache per application memcg, in MiB. Default: 2.
    pub app_cache_mb: u64,
    /// Scenario B: anon of every other application memcg, in MiB. Default: 1.
    pub app_anon_mb: u64,
    /// Scenario B: each application keeps reading data it has not read
    /// recently, at most this many KiB a second (a pause after each 64 KiB), through a range of the disk
    /// [`APP_STREAM_SPAN`] times its cache (see [`app_span_mb`]), so that
    /// the page cache outlives the hog's pressure the way a working
    /// application's does. A re-read folio activates (and turns
    /// cache_trim_mode off through DEACTIVATE_FILE); one read again only
    /// after the range wrapped refaults too far apart to activate.
    /// 0: each reads its cache once and sleeps. Default: 0.
    pub app_stream_kb_s: u64,
    /// Scenario script: what to run (set from the matrix's `scripts:`).
    pub script: Option<ScriptJob>,
}

/// How many times its cache an application's range of the page-cache
/// disk is when it streams (`app_stream_kb_s`): a folio is read again only
/// after 15 times its memcg's cache was read and evicted since, a refault
/// distance past anything that memcg holds, so it does not activate.
pub const APP_STREAM_SPAN: u64 = 16;

/// The MiB of the page-cache disk each application reads from: its cache,
/// or [`APP_STREAM_SPAN`] times that when it streams.
pub fn app_span_mb(job: &GuestJob) -> u64 {
    if job.app_stream_kb_s > 0 {
        job.app_cache_mb.saturating_mul(APP_STREAM_SPAN)
    } else {
        job.app_cache_mb
    }
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
            thp: ThpMode::Never,
            memcgs: 1,
            neighbour_mb: 0,
            kill_after_s: 0,
            hog_mb: 0,
            hog_threads: 4,
            hog_touch_rate: HOG_TOUCH_RATE_DEFAULT,
            verity_mb: 64,
            readers: 2,
            reads: 0,
            swappiness: 60,
            bufio_cache_bytes: 65536,
            noio_mglru: false,
            apps: 0,
            app_cache_mb: 2,
            app_anon_mb: 1,
            app_stream_kb_s: 0,
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
    pub const PARAM_KEYS: [&'static str; 28] = [
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
        "thp",
        "memcgs",
        "neighbour_mb",
        "kill_after_s",
        "hog_mb",
        "hog_threads",
        "hog_touch_rate",
        "verity_mb",
        "readers",
        "reads",
        "swappiness",
        "bufio_cache_bytes",
        "noio_mglru",
        "apps",
        "app_cache_mb",
        "app_anon_mb",
        "app_stream_kb_s",
    ];

    /// Every parameter and its value as text, in [`Self::PARAM_KEYS`] order
    /// (a script sees them as `MMCI_<KEY>` environment variables).
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let b = |v: bool| if v { "y" } else { "n" }.to_string();
        let v: [String; 28] = [
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
            self.thp.name().to_string(),
            self.memcgs.to_string(),
            self.neighbour_mb.to_string(),
            self.kill_after_s.to_string(),
            self.hog_mb.to_string(),
            self.hog_threads.to_string(),
            self.hog_touch_rate.to_string(),
            self.verity_mb.to_string(),
            self.readers.to_string(),
            self.reads.to_string(),
            self.swappiness.to_string(),
            self.bufio_cache_bytes.to_string(),
            b(self.noio_mglru),
            self.apps.to_string(),
            self.app_cache_mb.to_string(),
            self.app_anon_mb.to_string(),
            self.app_stream_kb_s.to_string(),
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
                        expected: Scenario::EXPECTED,
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
            "thp" => {
                self.thp = ThpMode::parse(value).ok_or_else(|| ParamError::BadValue {
                    key: key.to_string(),
                    value: value.to_string(),
                    expected: "a THP mode (never, madvise, always, kernel)",
                })?
            }
            "memcgs" => self.memcgs = parse_positive(key, value)?,
            "neighbour_mb" => self.neighbour_mb = parse_num(key, value)?,
            "kill_after_s" => self.kill_after_s = parse_num(key, value)?,
            "hog_mb" => self.hog_mb = parse_num(key, value)?,
            "hog_threads" => self.hog_threads = parse_positive(key, value)?,
            "hog_touch_rate" => self.hog_touch_rate = parse_num(key, value)?,
            "verity_mb" => self.verity_mb = parse_positive(key, value)?,
            "readers" => self.readers = parse_positive(key, value)?,
            "reads" => self.reads = parse_num(key, value)?,
            "swappiness" => self.swappiness = parse_num(key, value)?,
            "bufio_cache_bytes" => self.bufio_cache_bytes = parse_num(key, value)?,
            "noio_mglru" => self.noio_mglru = parse_bool(key, value)?,
            "apps" => self.apps = parse_num(key, value)?,
            "app_cache_mb" => self.app_cache_mb = parse_positive(key, value)?,
            "app_anon_mb" => self.app_anon_mb = parse_num(key, value)?,
            "app_stream_kb_s" => self.app_stream_kb_s = parse_num(key, value)?,
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
            "swap" | "mglru" | "noio_mglru" => "y",
            "thp" => "madvise",
            _ => "7",
        };
        for key in GuestJob::PARAM_KEYS {
            GuestJob::default().set(key, sample(key)).unwrap();
        }
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
        assert!(job.set("memcgs", "0").is_err());
        job.apply_cmdline("mmci.memcgs=16 mmci.neighbour_mb=16 mmci.kill_after_s=10")
            .unwrap();
        assert_eq!(
            (job.memcgs, job.neighbour_mb, job.kill_after_s),
            (16, 16, 10)
        );
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
    fn thp_modes_and_jobs_from_before_the_parameter() {
        // (text, parsed)
        let cases = [
            ("never", Some(ThpMode::Never)),
            ("madvise", Some(ThpMode::Madvise)),
            ("always", Some(ThpMode::Always)),
            ("kernel", Some(ThpMode::Kernel)),
            ("y", None),
        ];
        for (text, want) in cases {
            assert_eq!(ThpMode::parse(text), want, "{text}");
            let mut job = GuestJob::default();
            assert_eq!(job.set("thp", text).is_ok(), want.is_some(), "{text}");
            if let Some(mode) = want {
                assert_eq!(job.thp, mode);
                let json = serde_json::to_value(&job).unwrap();
                assert_eq!(json["thp"], text);
            }
        }
        assert_eq!(GuestJob::default().thp, ThpMode::Never);
        // A job recorded before guest-init set THP ran with the kernel's.
        let mut json = serde_json::to_value(GuestJob::default()).unwrap();
        json.as_object_mut().unwrap().remove("thp");
        let job: GuestJob = serde_json::from_value(json).unwrap();
        assert_eq!(job.thp, ThpMode::Kernel);
        let err = GuestJob::default().set("thp", "y").unwrap_err().to_string();
        assert!(err.contains("never, madvise, always"), "{err}");
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
    fn job_json_rejects_unknown_fields() {
        let mut json = serde_json::to_value(GuestJob::default()).unwrap();
        json["bogus"] = serde_json::json!(1);
        assert!(serde_json::from_value::<GuestJob>(json).is_err());
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

    /// Scenario B's MGLRU switch is written out only when on: jobs
    /// recorded before it read as off, and their JSON keeps its form.
    #[test]
    fn noio_mglru_is_written_only_when_on() {
        let off = serde_json::to_value(GuestJob::default()).unwrap();
        assert!(off.get("noio_mglru").is_none(), "{off}");
        let on = GuestJob {
            noio_mglru: true,
            ..GuestJob::default()
        };
        let json = serde_json::to_value(&on).unwrap();
        assert_eq!(json["noio_mglru"], serde_json::json!(true));
        let back: GuestJob = serde_json::from_value(json).unwrap();
        assert_eq!(back, on);
        assert!(!serde_json::from_value::<GuestJob>(off).unwrap().noio_mglru);
        let mut job = GuestJob::default();
        job.apply_cmdline("mmci.noio_mglru=y").unwrap();
        assert!(job.noio_mglru && job.set("noio_mglru", "sometimes").is_err());
    }
}
