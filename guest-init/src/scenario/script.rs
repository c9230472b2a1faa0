//! Scenario `script`: scenario A's set-up (MGLRU, the job's swap backend,
//! the memory cgroup, the throttle tracepoint, the nr_isolated sampler) around a
//! command from a guest image instead of the built-in workload. The command
//! runs chrooted into the image's overlay root, inside the cgroup, in a
//! session of its own, with the job's parameters as `MMCI_*` environment
//! variables; its output is streamed as records, its `MMCI-METRIC:` lines
//! are its figures, and at its timeout the whole cgroup is killed.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mmci_record::{
    parse_metric_line, GuestJob, Phase, Record, ScriptJob, Stream, WorkloadExit, METRIC_PREFIX,
    SCRIPT_PATH,
};

use super::{
    finish_memcg_and_trace, memcg_oom_kills, setup_memcg_and_trace, setup_mglru_and_swap, snapshot,
};
use crate::port::RecordPort;
use crate::step::{setup_step, Stage, StepError};
use crate::{rootfs, sampler, sys};

const CGROUP_NAME: &str = "mmci-script";
/// Lines streamed per output stream; the rest are counted.
pub const MAX_LINES: u64 = 5000;
/// Longest line streamed (longer ones are cut).
pub const MAX_LINE_BYTES: usize = 4096;

/// What the output readers gathered.
#[derive(Default)]
struct Gathered {
    metrics: BTreeMap<String, f64>,
    bad_metric_lines: Vec<String>,
    dropped_lines: u64,
}

/// The environment the script sees: a plain PATH, the job's parameters as
/// `MMCI_<KEY>`, then the matrix's `env:` (which may override them).
pub fn environment(job: &GuestJob, script: &ScriptJob, cpus: usize) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in [
        (
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ),
        ("HOME", "/root"),
        ("LANG", "C.UTF-8"),
        ("TERM", "dumb"),
        ("MMCI_METRIC_PREFIX", METRIC_PREFIX),
    ] {
        env.insert(k.into(), v.into());
    }
    for (k, v) in job.params() {
        env.insert(format!("MMCI_{}", k.to_ascii_uppercase()), v);
    }
    env.insert("MMCI_SCRIPT".into(), script.name.clone());
    env.insert("MMCI_IMAGE".into(), script.image.clone());
    env.insert("MMCI_CPUS".into(), cpus.to_string());
    env.insert(
        "MMCI_TIMEOUT_S".into(),
        script.timeout_for(job.duration_s).to_string(),
    );
    for (k, v) in &script.env {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

/// One output line as streamed: without its line end, at most
/// [`MAX_LINE_BYTES`] (cut at a character boundary).
pub fn clean_line(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let mut s = String::from_utf8_lossy(raw).into_owned();
    if s.len() > MAX_LINE_BYTES {
        let mut cut = MAX_LINE_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

fn pump(
    pipe: impl Read + Send + 'static,
    stream: Stream,
    port: Arc<RecordPort>,
    gathered: Arc<Mutex<Gathered>>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("{stream:?}"))
        .spawn(move || {
            let mut lines = 0u64;
            for raw in BufReader::new(pipe).split(b'\n') {
                let Ok(raw) = raw else { break };
                let line = clean_line(&raw);
                if stream == Stream::Stdout {
                    match parse_metric_line(&line) {
                        Some(Ok(pairs)) => {
                            let mut g = gathered.lock().unwrap_or_else(|p| p.into_inner());
                            g.metrics.extend(pairs);
                        }
                        Some(Err(why)) => {
                            let mut g = gathered.lock().unwrap_or_else(|p| p.into_inner());
                            if g.bad_metric_lines.len() < 20 {
                                g.bad_metric_lines.push(format!("{line}: {why}"));
                            }
                        }
                        None => {}
                    }
                }
                lines += 1;
                if lines <= MAX_LINES {
                    port.send(Record::Output { stream, line });
                } else {
                    gathered
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .dropped_lines += 1;
                }
            }
        })
}

/// Kills every process of the cgroup (cgroup.kill) and waits, reaping the
/// orphans PID 1 inherits, until none is left or `within` has passed.
fn kill_cgroup(cg: &Path, within: Duration) {
    let _ = std::fs::write(cg.join("cgroup.kill"), "1");
    let end = Instant::now() + within;
    while Instant::now() < end {
        sys::reap_orphans();
        let procs = std::fs::read_to_string(cg.join("cgroup.procs")).unwrap_or_default();
        if procs.trim().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// This scenario in the registry.
pub static DEF: super::registry::Def = super::registry::Def {
    id: mmci_record::Scenario::Script,
    run,
};

fn run(job: &GuestJob, port: &Arc<RecordPort>) -> Result<(), StepError> {
    let script = job.script.as_ref().ok_or_else(|| StepError {
        stage: "script",
        message: "the job names no script (a matrix cell with `script: NAME`)".into(),
    })?;
    setup_mglru_and_swap(job, port)?;
    let root = setup_step(port, "image", || {
        rootfs::mount_image_root().map_err(|message| StepError {
            stage: "image",
            message,
        })
    })?;
    if let Some(text) = &script.text {
        setup_step(port, "script", || {
            rootfs::install_script(&root, SCRIPT_PATH, text).stage("script")?;
            Ok(((), format!("{SCRIPT_PATH}, {} bytes", text.len())))
        })?;
    }
    let (cg, reader) = setup_memcg_and_trace(job, port, CGROUP_NAME)?;

    let before = snapshot(Phase::Before, &cg);
    let oom_before = memcg_oom_kills(&before);
    port.send(before);

    let argv = script.argv();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let procs = std::fs::OpenOptions::new()
        .write(true)
        .open(cg.join("cgroup.procs"))
        .stage("script")?;
    let procs_fd = procs.as_raw_fd();
    let root_c = CString::new(root.to_string_lossy().as_bytes()).stage("script")?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .envs(environment(job, script, cpus))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs between fork and exec and makes only
    // async-signal-safe system calls on data prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            // Into the memory cgroup before anything is allocated.
            if libc::write(procs_fd, b"0".as_ptr().cast(), 1) < 0
                || libc::chroot(root_c.as_ptr()) < 0
                || libc::chdir(c"/".as_ptr()) < 0
                || libc::setsid() < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let timeout = Duration::from_secs(script.timeout_for(job.duration_s));
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{}: {e} (in the image's root)", argv.join(" ")))
        .stage("script")?;
    drop(procs);
    let gathered = Arc::new(Mutex::new(Gathered::default()));
    let out = pump(
        child.stdout.take().expect("piped"),
        Stream::Stdout,
        port.clone(),
        gathered.clone(),
    )
    .stage("script")?;
    let err = pump(
        child.stderr.take().expect("piped"),
        Stream::Stderr,
        port.clone(),
        gathered.clone(),
    )
    .stage("script")?;
    let sampler = sampler::Sampler::start(
        port.clone(),
        cg.clone(),
        Arc::new(AtomicU64::new(0)),
        Duration::from_millis(job.sample_interval_ms.max(1)),
        Duration::from_millis(job.report_interval_ms.max(10)),
    )
    .stage("sampler")?;

    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().stage("script")? {
            break s;
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            // Kill, but reap nothing before our own child's status is read.
            let _ = std::fs::write(cg.join("cgroup.kill"), "1");
            break child.wait().stage("script")?;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed_ms = start.elapsed().as_millis() as u64;
    // Whatever it left running (daemons, background jobs) ends with it, so
    // that the "after" counters are the script's whole run.
    kill_cgroup(&cg, Duration::from_secs(10));
    let _ = out.join();
    let _ = err.join();
    sampler.finish();

    let oom_after = finish_memcg_and_trace(port, &cg, reader)?;

    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal();
    let exit = WorkloadExit {
        code: status.code(),
        signal,
        oom_killed: !timed_out && signal == Some(libc::SIGKILL) && oom_after > oom_before,
        exit_after_kill_ms: None,
    };
    port.send(Record::Workload {
        touches: 0,
        elapsed_ms,
        exit: exit.clone(),
    });
    let g = std::mem::take(&mut *gathered.lock().unwrap_or_else(|p| p.into_inner()));
    port.send(Record::Script {
        exit,
        elapsed_ms,
        timed_out,
        metrics: g.metrics,
        bad_metric_lines: g.bad_metric_lines,
        dropped_lines: g.dropped_lines,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_carries_params_and_overrides() {
        let job = GuestJob {
            threads: 8,
            ..GuestJob::default()
        };
        let mut script = ScriptJob {
            name: "redis".into(),
            image: "redis".into(),
            ..ScriptJob::default()
        };
        script.env.insert("MMCI_THREADS".into(), "2".into());
        script.env.insert("REQUESTS".into(), "1000".into());
        let env: BTreeMap<String, String> = environment(&job, &script, 2).into_iter().collect();
        assert_eq!(env["MMCI_THREADS"], "2", "the matrix's env wins");
        assert_eq!(env["MMCI_MEMCG_MAX_MB"], "16");
        assert_eq!(env["MMCI_MGLRU"], "y");
        assert_eq!(env["REQUESTS"], "1000");
        assert_eq!(env["MMCI_SCRIPT"], "redis");
        assert_eq!(env["MMCI_TIMEOUT_S"], "140");
        assert!(env["PATH"].contains("/usr/bin"));
    }

    #[test]
    fn lines_lose_their_end_and_stay_bounded() {
        assert_eq!(clean_line(b"ok\r"), "ok");
        assert_eq!(clean_line(b"\xffbad"), "\u{fffd}bad");
        let long = "é".repeat(MAX_LINE_BYTES);
        let cut = clean_line(long.as_bytes());
        assert!(cut.len() <= MAX_LINE_BYTES && cut.len() >= MAX_LINE_BYTES - 1);
    }
}
