//! QEMU: the argument list (pure functions, unit tested), and one guest run:
//! spawn in its own process group, collect records from the named
//! virtio-serial port as they arrive, keep the serial console in a file, and
//! stop at the guest's power-off or at the timeout.
//!
//! Everything the guest sends is bounded on the host, since a hostile
//! kernel can send anything: record lines are read with a per-line cap
//! ([`MAX_RECORD_LINE`]) and a total ([`MAX_RECORD_BYTES`]); at most
//! [`MAX_BAD_LINES`] unparsable lines are kept, cut to
//! [`MAX_BAD_LINE_KEPT`], the rest counted; the console file, which QEMU
//! writes without a limit, is read back as its first [`CONSOLE_HEAD`] and
//! last [`CONSOLE_TAIL`] bytes with a line saying what was cut; QEMU's
//! stderr is read incrementally while the guest runs, and capped after.
//!
//! QEMU itself is the only barrier against a hostile guest kernel (under
//! TCG an emulated-device bug is code execution in QEMU), so it runs
//! confined: its own seccomp filter ([`QEMU_SANDBOX`]), an environment of
//! PATH, LC_ALL and TMPDIR only ([`qemu_env`]), and, where the build
//! sandbox's bwrap runs, inside bwrap ([`qemu_bwrap_args`]). How it ran is
//! [`VmRun::confinement`] and the first line of its stderr file.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use mmci_record::{Record, RECORD_PORT_NAME};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::net::UnixListener;
use tokio::process::Command;

use crate::arch::Arch;
use crate::host::process::GroupChild;

/// How QEMU executes guest code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Accel {
    Kvm,
    Tcg,
    /// TCG with QEMU's instruction counting: guest time is executed
    /// instructions times a fixed period ([`ICOUNT_SHIFT`]), not host time,
    /// so host load slows the run without stretching what the guest measures.
    #[serde(rename = "tcg-icount")]
    TcgIcount,
}

/// icount's shift: each guest instruction takes 2^shift ns of guest time.
/// 2: 250 M instructions a guest second, shared by the vCPUs. A mostly
/// waiting guest (scenario A) then runs faster than real time; a CPU-bound
/// one runs several times slower than under plain TCG (scenario B's seed
/// shape: minutes a run, docs/accel.md), so give it a longer --timeout.
pub const ICOUNT_SHIFT: u32 = 2;

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
            Accel::TcgIcount => "tcg-icount",
        }
    }

    /// QEMU's translator: plain TCG or TCG with instruction counting.
    pub fn is_tcg(self) -> bool {
        matches!(self, Accel::Tcg | Accel::TcgIcount)
    }
}

impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A raw virtio disk given to the guest, found there by its serial.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disk {
    pub path: PathBuf,
    pub serial: String,
    /// The guest cannot write it (an image shared by runs).
    pub readonly: bool,
}

/// Everything QEMU needs for one guest.
#[derive(Clone, Debug)]
pub struct VmSpec {
    pub arch: Arch,
    pub accel: Accel,
    pub vcpus: u32,
    pub memory_mb: u64,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub cmdline: String,
    pub console_log: PathBuf,
    /// Where QEMU's own stderr goes (accelerator failures are read from it).
    pub qemu_stderr: PathBuf,
    pub record_socket: PathBuf,
    pub disks: Vec<Disk>,
}

/// The kernel command line: console on the arch's serial port, any panic or
/// oops ends the guest at once (QEMU exits thanks to -no-reboot), and PID 1 is
/// our /init. `extra` words (e.g. `mmci.threads=8`) come last.
pub fn kernel_cmdline(arch: Arch, extra: &[String]) -> String {
    let mut words = vec![
        format!("console={}", arch.console()),
        "panic=-1".to_string(),
        "oops=panic".to_string(),
        "rdinit=/init".to_string(),
    ];
    if arch == Arch::X86_64 {
        // The boot-time check that the timer interrupt arrives through the
        // IO-APIC gives up ("IO-APIC + timer doesn't work!", a panic) when
        // the host is too busy to run the vCPU in time: 5 of 30 TCG boots
        // on a loaded 2-core host. The check is for broken hardware.
        words.push("no_timer_check".to_string());
    }
    words.extend(extra.iter().cloned());
    words.join(" ")
}

/// QEMU's own seccomp filter: `on` denies the syscalls QEMU never needs
/// once it runs (`obsolete`: old ones; `elevateprivileges`: set*uid and
/// friends; `spawn`: fork and exec; `resourcecontrol`: scheduler and
/// affinity changes). A guest that finds a device-emulation bug under TCG
/// then runs inside this filter, not as the full mmci user.
pub const QEMU_SANDBOX: &str =
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny";

/// The full QEMU argument list (without the binary).
pub fn qemu_args(spec: &VmSpec) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
    push(&[
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-sandbox",
        QEMU_SANDBOX,
    ]);
    match spec.arch {
        Arch::X86_64 => push(&["-machine", "pc"]),
        Arch::Arm64 => push(&["-machine", "virt"]),
    }
    match spec.accel {
        Accel::Kvm => push(&["-accel", "kvm", "-cpu", "host"]),
        Accel::Tcg => push(&["-accel", "tcg", "-cpu", "max"]),
        // align=off: guest time never waits for host time; sleep=off: an
        // idle guest's clock jumps to its next timer instead of sleeping in
        // host time. Both keep host load out of guest time.
        Accel::TcgIcount => {
            let icount = format!("shift={ICOUNT_SHIFT},align=off,sleep=off");
            push(&["-accel", "tcg", "-icount", &icount, "-cpu", "max"])
        }
    }
    let smp = spec.vcpus.to_string();
    let mem = format!("{}M", spec.memory_mb);
    push(&["-smp", &smp, "-m", &mem]);
    // No network device: -nodefaults already drops the default NIC; say so.
    push(&["-nic", "none"]);
    let kernel = spec.kernel.display().to_string();
    let initrd = spec.initrd.display().to_string();
    push(&[
        "-kernel",
        &kernel,
        "-initrd",
        &initrd,
        "-append",
        &spec.cmdline,
    ]);
    let serial = format!("file:{}", spec.console_log.display());
    push(&["-serial", &serial]);
    let chardev = format!("socket,id=records,path={}", spec.record_socket.display());
    let port = format!("virtserialport,bus=vser0.0,chardev=records,name={RECORD_PORT_NAME}");
    push(&[
        "-device",
        "virtio-serial-pci,id=vser0",
        "-chardev",
        &chardev,
        "-device",
        &port,
    ]);
    for (i, disk) in spec.disks.iter().enumerate() {
        // cache=unsafe: the disk is scratch swap; host durability buys nothing.
        // A read-only disk (an image) is opened read-only by QEMU itself, so
        // a guest kernel can never write the host's file.
        let drive = format!(
            "file={},format=raw,if=none,id=disk{i},cache=unsafe,aio=threads{}",
            disk.path.display(),
            if disk.readonly { ",readonly=on" } else { "" }
        );
        let dev = format!("virtio-blk-pci,drive=disk{i},serial={}", disk.serial);
        push(&["-drive", &drive, "-device", &dev]);
    }
    a
}

/// A record with the time it arrived, in ms since QEMU was spawned.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TimedRecord {
    pub at_ms: u64,
    #[serde(flatten)]
    pub record: Record,
}

/// What one QEMU process produced.
#[derive(Debug)]
pub struct VmRun {
    pub records: Vec<TimedRecord>,
    /// Lines on the record port that were not records (kept for the report).
    pub bad_lines: Vec<String>,
    pub exit: Option<ExitStatus>,
    pub timed_out: bool,
    /// QEMU gave up on the accelerator ("KVM internal error").
    pub accel_failed: bool,
    /// QEMU connected to the record socket (it started the machine).
    pub connected: bool,
    /// The console file passed [`MAX_CONSOLE_BYTES`] and the guest was
    /// stopped: QEMU's `-serial file:` has no cap of its own.
    pub console_flooded: bool,
    pub console: String,
    pub qemu_stderr: String,
    /// From spawn to exit.
    pub lifetime: Duration,
    /// From spawn to the first record.
    pub first_record: Option<Duration>,
    /// The workload stopped progressing and the guest was stopped (see
    /// [`stall`]), after the kernel's report of its blocked tasks.
    pub stalled: Option<stall::Stall>,
    /// Whether QEMU ran inside bwrap (also the first line of its stderr
    /// file in the run dir).
    pub confinement: Confinement,
}

#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error(transparent)]
    Missing(#[from] super::Missing),
    #[error("kernel image {0} not found: build one with `mmci kernel build`, or pass the path of an existing image")]
    MissingKernel(PathBuf),
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Longest record line read; a longer one is cut here and is a bad line.
pub const MAX_RECORD_LINE: usize = 1 << 20;
/// Record-port bytes taken in per run; lines after that are counted only.
/// A real run sends a few MiB at most (script output is capped in the
/// guest at 5000 lines of 4 KiB per stream).
pub const MAX_RECORD_BYTES: u64 = 128 << 20;
/// Unparsable record lines kept for run.json; the rest are counted.
pub const MAX_BAD_LINES: usize = 1000;
/// Longest bad line kept (its start), in bytes.
pub const MAX_BAD_LINE_KEPT: usize = 4096;
/// Console bytes read back from the start of a longer console (the boot).
pub const CONSOLE_HEAD: u64 = 4 << 20;
/// Console bytes read back from its end (where the run ended).
pub const CONSOLE_TAIL: u64 = 28 << 20;
/// Console file size at which the guest is stopped. A run's console is a
/// few MiB (the debug flavour's lockdep and a WARN per batch included); a
/// kernel printing in a loop would fill the host's disk within its timeout.
pub const MAX_CONSOLE_BYTES: u64 = 256 << 20;
/// QEMU stderr bytes kept (its own messages: a few lines).
pub const QEMU_STDERR_HEAD: u64 = 64 << 10;
pub const QEMU_STDERR_TAIL: u64 = 960 << 10;

mod capture;
mod confine;
pub mod stall;

pub use capture::*;
pub use confine::*;

/// The console's last bytes (where a report of blocked tasks would be).
fn console_tail(path: &Path, bytes: u64) -> (u64, String) {
    let Ok(mut f) = std::fs::File::open(path) else {
        return (0, String::new());
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(bytes)));
    let mut buf = Vec::new();
    let _ = f.take(bytes).read_to_end(&mut buf);
    (len, String::from_utf8_lossy(&buf).into_owned())
}

/// Once a run is hung: waits (at most [`stall::DUMP_WAIT`]) for the
/// hung-task detector's report on the console, and for the console to be
/// quiet after it, so that the stacks of all blocked tasks are there when
/// QEMU is killed.
async fn wait_for_blocked_report(console: &Path) {
    let t0 = Instant::now();
    let mut last: Option<(u64, Instant)> = None;
    while t0.elapsed() < stall::DUMP_WAIT {
        let (len, tail) = console_tail(console, 1 << 20);
        if stall::has_blocked_report(&tail) {
            match last {
                Some((l, since)) if l == len => {
                    if since.elapsed() >= stall::DUMP_QUIET {
                        return;
                    }
                }
                _ => last = Some((len, Instant::now())),
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `spec` with every path absolute: bwrap binds each at the same path, and
/// QEMU inside does not start in mmci's working directory.
fn absolute(spec: &VmSpec) -> VmSpec {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    VmSpec {
        kernel: abs(&spec.kernel),
        initrd: abs(&spec.initrd),
        console_log: abs(&spec.console_log),
        qemu_stderr: abs(&spec.qemu_stderr),
        record_socket: abs(&spec.record_socket),
        disks: spec
            .disks
            .iter()
            .map(|d| Disk {
                path: abs(&d.path),
                ..d.clone()
            })
            .collect(),
        ..spec.clone()
    }
}

/// Runs one guest to its end or its timeout.
pub async fn launch(spec: &VmSpec, timeout: Duration) -> Result<VmRun, VmError> {
    let spec = &absolute(spec);
    if !spec.kernel.is_file() {
        return Err(VmError::MissingKernel(spec.kernel.clone()));
    }
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| VmError::Io { path, source }
    };
    let _ = std::fs::remove_file(&spec.record_socket);
    let listener = UnixListener::bind(&spec.record_socket).map_err(io_err(&spec.record_socket))?;
    let stderr_path = spec.qemu_stderr.clone();
    let mut stderr = std::fs::File::create(&stderr_path).map_err(io_err(&stderr_path))?;
    // bwrap binds the console file: it must exist (QEMU truncates it).
    std::fs::File::create(&spec.console_log).map_err(io_err(&spec.console_log))?;

    let qemu = spec.arch.qemu_binary();
    let env = qemu_env(
        std::env::var("PATH").ok().filter(|p| !p.is_empty()),
        scratch_dir(spec),
    );
    let Some(qemu_path) = crate::host::tools::on_path(qemu) else {
        // Said here: inside bwrap it would be bwrap's exec error.
        return Err(VmError::Missing(super::Missing::Qemu(qemu.to_string())));
    };
    // As root, QEMU's bwrap runs as the sandbox user (see
    // kernel::sandbox::user): the scratch dir (initramfs, disks, record
    // socket) and the console file are that user's while QEMU runs
    // (`_lent`), the kernel and read-only images stay root's.
    let mut _lent = None;
    let (mut cmd, confinement) = match bwrap_for_qemu().await {
        Ok(bwrap) => {
            use crate::kernel::sandbox::user::{self, RunAs};
            let (run_as, groups) = qemu_run_as(spec.accel);
            let mut c = match &run_as {
                RunAs::User(u) => {
                    let sources: Vec<PathBuf> = qemu_binds(spec, &qemu_path)
                        .into_iter()
                        .map(|(_, p)| p)
                        .collect();
                    let staging =
                        user::Staging::open(&sources).map_err(io_err(scratch_dir(spec)))?;
                    _lent = Some(
                        user::lend(
                            &[scratch_dir(spec).to_path_buf(), spec.console_log.clone()],
                            u,
                        )
                        .map_err(io_err(scratch_dir(spec)))?,
                    );
                    let argv = user::setpriv_args(u, &groups);
                    let mut c = Command::new(&argv[0]);
                    c.args(&argv[1..])
                        .arg("bwrap")
                        .args(qemu_bwrap_args_staged(spec, bwrap, &env, &qemu_path, true));
                    // SAFETY: `mount_in_child` makes only raw syscalls on
                    // strings and fds the closure owns.
                    unsafe {
                        c.pre_exec(move || staging.mount_in_child());
                    }
                    c
                }
                _ => {
                    let mut c = Command::new("bwrap");
                    c.args(qemu_bwrap_args(spec, bwrap, &env, &qemu_path));
                    c
                }
            };
            c.arg("--").arg(&qemu_path);
            (
                c,
                Confinement::Bwrap {
                    run_as: run_as.to_string(),
                },
            )
        }
        Err(why) => (Command::new(qemu), Confinement::SeccompOnly { why }),
    };
    // The run's own record of how QEMU ran, first in its stderr file.
    {
        use std::io::Write;
        let _ = writeln!(stderr, "mmci: {confinement}");
    }
    cmd.args(qemu_args(spec))
        .env_clear()
        .envs(env)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
    let start = Instant::now();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut child = GroupChild::spawn(&mut cmd).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound
            && !matches!(confinement, Confinement::Bwrap { .. })
        {
            VmError::Missing(super::Missing::Qemu(qemu.to_string()))
        } else {
            VmError::Io {
                path: PathBuf::from(qemu),
                source: e,
            }
        }
    })?;

    let mut run = VmRun {
        records: Vec::new(),
        bad_lines: Vec::new(),
        exit: None,
        timed_out: false,
        accel_failed: false,
        connected: false,
        console_flooded: false,
        console: String::new(),
        qemu_stderr: String::new(),
        lifetime: Duration::ZERO,
        first_record: None,
        stalled: None,
        confinement,
    };

    // QEMU connects to our socket while it sets up the machine; if it exits
    // first (bad arguments, broken accelerator), there is nothing to read.
    let stream = tokio::select! {
        accepted = listener.accept() => accepted.ok().map(|(s, _)| s),
        status = child.child_mut().wait() => { run.exit = status.ok(); None }
        _ = tokio::time::sleep_until(deadline) => { run.timed_out = true; None }
    };
    let mut sink = RecordSink::default();
    if let Some(stream) = stream {
        run.connected = true;
        let mut port = BufReader::new(stream);
        let mut reader = LineReader::default();
        let mut stderr_watch = StderrWatch::default();
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let mut progress = stall::ProgressWatch::default();
        loop {
            tokio::select! {
                line = reader.next(&mut port, MAX_RECORD_LINE) => match line {
                    Ok(Some(line)) => {
                        let at = start.elapsed();
                        run.first_record.get_or_insert(at);
                        let seen = sink.records.len();
                        sink.take(line, at.as_millis() as u64);
                        if let Some(r) = sink.records.get(seen) {
                            progress.observe(&r.record, r.at_ms);
                        }
                    }
                    // EOF: QEMU closed the port, i.e. it is exiting.
                    Ok(None) | Err(_) => break,
                },
                _ = tick.tick() => {
                    // A dead accelerator may leave QEMU paused rather than exited.
                    let failed = std::fs::File::open(&stderr_path)
                        .is_ok_and(|f| stderr_watch.look(f));
                    if failed {
                        run.accel_failed = true;
                        break;
                    }
                    if console_flooded(&spec.console_log) {
                        run.console_flooded = true;
                        break;
                    }
                    if let Some(idle) = progress.stalled(start.elapsed().as_millis() as u64) {
                        run.stalled = Some(stall::Stall {
                            idle,
                            touches: progress.touches().unwrap_or(0),
                        });
                        break;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => { run.timed_out = true; break; }
            }
        }
    }
    run.bad_lines = sink.bad_lines();
    run.records = std::mem::take(&mut sink.records);
    if run.exit.is_none() {
        let grace = Duration::from_secs(2);
        if run.stalled.is_some() {
            wait_for_blocked_report(&spec.console_log).await;
        }
        let status =
            if run.timed_out || run.accel_failed || run.console_flooded || run.stalled.is_some() {
                child.terminate(grace).await
            } else {
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                child.wait_timeout(remaining, grace).await.map(|f| {
                    run.timed_out |= f.timed_out;
                    f.status
                })
            };
        run.exit = status.ok();
    } else {
        // Already exited: still kill anything left in its group.
        let _ = child.wait().await;
    }
    run.lifetime = start.elapsed();
    run.console = read_file_head_tail(&spec.console_log, CONSOLE_HEAD, CONSOLE_TAIL, "console");
    if run.console_flooded {
        // What was read back (head, cut line, tail) replaces the flood on
        // disk, so the results dir holds at most that.
        let _ = std::fs::write(&spec.console_log, &run.console);
    }
    run.qemu_stderr = read_file_head_tail(
        &stderr_path,
        QEMU_STDERR_HEAD,
        QEMU_STDERR_TAIL,
        "QEMU stderr",
    );
    // QEMU's own words only: the file's first line is mmci's (how it ran),
    // and the reason of a QEMU that failed to start is its first line.
    if let Some(rest) = run
        .qemu_stderr
        .strip_prefix(&format!("mmci: {}\n", run.confinement))
    {
        run.qemu_stderr = rest.to_string();
    }
    run.accel_failed |= accel_failure(&run.qemu_stderr).is_some();
    let _ = std::fs::remove_file(&spec.record_socket);
    Ok(run)
}

#[cfg(test)]
mod tests;
