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
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
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
    ]);
    match spec.arch {
        Arch::X86_64 => push(&["-machine", "pc"]),
        Arch::Arm64 => push(&["-machine", "virt"]),
    }
    match spec.accel {
        Accel::Kvm => push(&["-accel", "kvm", "-cpu", "host"]),
        Accel::Tcg => push(&["-accel", "tcg", "-cpu", "max"]),
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

/// One line of at most `cap` bytes from an async reader, resumable: the
/// state lives here, so a read cancelled by `select!` loses nothing.
#[derive(Debug, Default)]
pub struct LineReader {
    buf: Vec<u8>,
    /// The line's length so far, including what was cut.
    len: u64,
}

/// A line as read: its first `cap` bytes and its whole length.
#[derive(Debug, PartialEq, Eq)]
pub struct CappedLine {
    pub bytes: Vec<u8>,
    pub len: u64,
}

impl LineReader {
    /// The next line (without its newline), `None` at the end of input. A
    /// last line without a newline is a line.
    pub async fn next<R: AsyncBufRead + Unpin>(
        &mut self,
        r: &mut R,
        cap: usize,
    ) -> std::io::Result<Option<CappedLine>> {
        loop {
            let available = r.fill_buf().await?;
            if available.is_empty() {
                if self.len == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let part = &available[..newline.unwrap_or(available.len())];
            let room = cap.saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&part[..part.len().min(room)]);
            self.len += part.len() as u64;
            let used = part.len() + usize::from(newline.is_some());
            r.consume(used);
            if newline.is_some() {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> CappedLine {
        let line = CappedLine {
            bytes: std::mem::take(&mut self.buf),
            len: self.len,
        };
        self.len = 0;
        line
    }
}

/// The record port's lines, taken in within the caps above.
#[derive(Debug)]
pub struct RecordSink {
    pub records: Vec<TimedRecord>,
    /// Bytes taken in at most ([`MAX_RECORD_BYTES`]).
    max_bytes: u64,
    bad_lines: Vec<String>,
    /// Bad lines beyond MAX_BAD_LINES, counted.
    bad_dropped: u64,
    /// Lines longer than MAX_RECORD_LINE.
    too_long: u64,
    /// Bytes taken in so far.
    bytes: u64,
    /// Lines (and their bytes) after MAX_RECORD_BYTES, not parsed.
    ignored: (u64, u64),
}

impl Default for RecordSink {
    fn default() -> RecordSink {
        RecordSink::new(MAX_RECORD_BYTES)
    }
}

impl RecordSink {
    pub fn new(max_bytes: u64) -> RecordSink {
        RecordSink {
            records: vec![],
            max_bytes,
            bad_lines: vec![],
            bad_dropped: 0,
            too_long: 0,
            bytes: 0,
            ignored: (0, 0),
        }
    }

    /// Takes one line that arrived `at_ms` after QEMU started.
    pub fn take(&mut self, line: CappedLine, at_ms: u64) {
        if self.bytes >= self.max_bytes {
            self.ignored.0 += 1;
            self.ignored.1 += line.len + 1;
            return;
        }
        self.bytes += line.len + 1;
        let text = String::from_utf8_lossy(&line.bytes);
        if line.len > MAX_RECORD_LINE as u64 {
            self.too_long += 1;
            self.bad(format!(
                "{} [line of {} bytes, longer than MAX_RECORD_LINE ({MAX_RECORD_LINE}): cut]",
                cut_to(&text, MAX_BAD_LINE_KEPT),
                line.len
            ));
            return;
        }
        match mmci_record::parse_line(&text) {
            Ok(record) => self.records.push(TimedRecord { at_ms, record }),
            Err(_) if text.len() > MAX_BAD_LINE_KEPT => self.bad(format!(
                "{} [line of {} bytes: cut]",
                cut_to(&text, MAX_BAD_LINE_KEPT),
                line.len
            )),
            Err(_) => self.bad(text.into_owned()),
        }
    }

    fn bad(&mut self, line: String) {
        if self.bad_lines.len() < MAX_BAD_LINES {
            self.bad_lines.push(line);
        } else {
            self.bad_dropped += 1;
        }
    }

    /// The bad lines for run.json, with a last line counting what was not
    /// kept.
    pub fn bad_lines(&self) -> Vec<String> {
        let mut out = self.bad_lines.clone();
        if self.bad_dropped > 0 {
            out.push(format!(
                "[mmci: {} more bad lines not kept (MAX_BAD_LINES = {MAX_BAD_LINES})]",
                self.bad_dropped
            ));
        }
        if self.ignored.0 > 0 {
            out.push(format!(
                "[mmci: {} lines ({} bytes) after the first {} bytes of records ignored (MAX_RECORD_BYTES)]",
                self.ignored.0, self.ignored.1, self.max_bytes
            ));
        }
        out
    }
}

/// The first `max` bytes of `s`, cut at a character boundary.
fn cut_to(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A file of `len` bytes read back as its first `head` and last `tail`
/// bytes, whole lines only, joined by a line saying how much was cut (the
/// whole file when it fits). Reads `head + tail` bytes at most, whatever
/// `len` claims.
pub fn read_head_tail<R: Read + Seek>(
    mut r: R,
    len: u64,
    head: u64,
    tail: u64,
    what: &str,
) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    if len <= head + tail {
        r.take(head + tail).read_to_end(&mut bytes)?;
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    (&mut r).take(head).read_to_end(&mut bytes)?;
    // Whole lines: the head up to its last newline, the tail from its first.
    let head_end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(head_end);
    r.seek(SeekFrom::Start(len - tail))?;
    let mut end = Vec::new();
    r.take(tail).read_to_end(&mut end)?;
    let tail_start = end
        .iter()
        .position(|b| *b == b'\n')
        .map_or(end.len(), |i| i + 1);
    let cut = len - bytes.len() as u64 - (end.len() - tail_start) as u64;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    text.push_str(&format!(
        "[mmci: {cut} bytes of the {what} cut here: it is {len} bytes, of which the first {head} and the last {tail} are read]\n"
    ));
    text.push_str(&String::from_utf8_lossy(&end[tail_start..]));
    Ok(text)
}

/// [`read_head_tail`] of the file at `path`; empty when it cannot be read.
fn read_file_head_tail(path: &Path, head: u64, tail: u64, what: &str) -> String {
    std::fs::File::open(path)
        .and_then(|f| {
            let len = f.metadata()?.len();
            read_head_tail(f, len, head, tail, what)
        })
        .unwrap_or_default()
}

/// Has the console file passed [`MAX_CONSOLE_BYTES`]?
fn console_flooded(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_CONSOLE_BYTES)
}

/// QEMU's stderr while it runs: only what was added since the last look
/// is read, and whole lines are searched for an accelerator failure.
#[derive(Debug, Default)]
pub struct StderrWatch {
    offset: u64,
    /// The last line, when it has no newline yet.
    partial: Vec<u8>,
}

impl StderrWatch {
    /// Most bytes read per look; QEMU writes a few lines in all.
    const CHUNK: u64 = 1 << 20;

    /// Does what `r` holds past the last look (from `offset` on) name an
    /// accelerator failure?
    pub fn look<R: Read + Seek>(&mut self, mut r: R) -> bool {
        if r.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut new = Vec::new();
        if r.take(Self::CHUNK).read_to_end(&mut new).is_err() {
            return false;
        }
        self.offset += new.len() as u64;
        self.partial.extend_from_slice(&new);
        let Some(last) = self.partial.iter().rposition(|b| *b == b'\n') else {
            // No whole line yet; a line longer than a chunk is no QEMU message.
            if self.partial.len() as u64 > Self::CHUNK {
                self.partial.clear();
            }
            return false;
        };
        let lines: Vec<u8> = self.partial.drain(..=last).collect();
        accel_failure(&String::from_utf8_lossy(&lines)).is_some()
    }
}

/// QEMU's words for an accelerator that cannot run the guest.
const ACCEL_FAILURE_MARKERS: [&str; 3] =
    ["KVM internal error", "kvm run failed", "failed to set MSR"];

pub fn accel_failure(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .find(|l| ACCEL_FAILURE_MARKERS.iter().any(|m| l.contains(m)))
}

/// Runs one guest to its end or its timeout.
pub async fn launch(spec: &VmSpec, timeout: Duration) -> Result<VmRun, VmError> {
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
    let stderr = std::fs::File::create(&stderr_path).map_err(io_err(&stderr_path))?;

    let qemu = spec.arch.qemu_binary();
    let mut cmd = Command::new(qemu);
    cmd.args(qemu_args(spec))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
    let start = Instant::now();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut child = GroupChild::spawn(&mut cmd).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
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
        loop {
            tokio::select! {
                line = reader.next(&mut port, MAX_RECORD_LINE) => match line {
                    Ok(Some(line)) => {
                        let at = start.elapsed();
                        run.first_record.get_or_insert(at);
                        sink.take(line, at.as_millis() as u64);
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
                }
                _ = tokio::time::sleep_until(deadline) => { run.timed_out = true; break; }
            }
        }
    }
    run.bad_lines = sink.bad_lines();
    run.records = std::mem::take(&mut sink.records);
    if run.exit.is_none() {
        let grace = Duration::from_secs(2);
        let status = if run.timed_out || run.accel_failed || run.console_flooded {
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
    run.accel_failed |= accel_failure(&run.qemu_stderr).is_some();
    let _ = std::fs::remove_file(&spec.record_socket);
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn spec(arch: Arch, accel: Accel) -> VmSpec {
        VmSpec {
            arch,
            accel,
            vcpus: 2,
            memory_mb: 1024,
            kernel: "/k/bzImage".into(),
            initrd: "/r/initrd.cpio".into(),
            cmdline: kernel_cmdline(arch, &["mmci.threads=8".into()]),
            console_log: "/r/console.log".into(),
            qemu_stderr: "/r/qemu-stderr.log".into(),
            record_socket: "/r/records.sock".into(),
            disks: vec![Disk {
                path: "/r/swap.img".into(),
                serial: "mmci-swap".into(),
                readonly: false,
            }],
        }
    }

    fn value_after<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    #[rstest]
    #[case(Arch::X86_64, Accel::Tcg, "pc", "tcg", "max", "console=ttyS0")]
    #[case(Arch::X86_64, Accel::Kvm, "pc", "kvm", "host", "console=ttyS0")]
    #[case(Arch::Arm64, Accel::Tcg, "virt", "tcg", "max", "console=ttyAMA0")]
    fn machine_accel_cpu_console(
        #[case] arch: Arch,
        #[case] accel: Accel,
        #[case] machine: &str,
        #[case] accel_name: &str,
        #[case] cpu: &str,
        #[case] console: &str,
    ) {
        let args = qemu_args(&spec(arch, accel));
        assert_eq!(value_after(&args, "-machine"), [machine]);
        assert_eq!(value_after(&args, "-accel"), [accel_name]);
        assert_eq!(value_after(&args, "-cpu"), [cpu]);
        assert!(value_after(&args, "-append")[0].starts_with(console));
    }

    #[test]
    fn no_network_no_defaults_no_reboot() {
        let args = qemu_args(&spec(Arch::X86_64, Accel::Tcg));
        for flag in ["-nodefaults", "-no-user-config", "-no-reboot"] {
            assert!(args.iter().any(|a| a == flag), "{flag}");
        }
        assert_eq!(value_after(&args, "-nic"), ["none"]);
        assert!(!args
            .iter()
            .any(|a| a.contains("netdev") || a.contains("e1000")));
    }

    #[test]
    fn resources_kernel_console_records_and_disks() {
        let args = qemu_args(&spec(Arch::X86_64, Accel::Tcg));
        assert_eq!(value_after(&args, "-smp"), ["2"]);
        assert_eq!(value_after(&args, "-m"), ["1024M"]);
        assert_eq!(value_after(&args, "-kernel"), ["/k/bzImage"]);
        assert_eq!(value_after(&args, "-initrd"), ["/r/initrd.cpio"]);
        assert_eq!(value_after(&args, "-serial"), ["file:/r/console.log"]);
        assert_eq!(
            value_after(&args, "-chardev"),
            ["socket,id=records,path=/r/records.sock"]
        );
        assert_eq!(
            value_after(&args, "-device"),
            [
                "virtio-serial-pci,id=vser0",
                "virtserialport,bus=vser0.0,chardev=records,name=org.mmci.records",
                "virtio-blk-pci,drive=disk0,serial=mmci-swap"
            ]
        );
        assert_eq!(
            value_after(&args, "-drive"),
            ["file=/r/swap.img,format=raw,if=none,id=disk0,cache=unsafe,aio=threads"]
        );
    }

    #[test]
    fn image_disk_is_read_only_and_there_is_no_nic() {
        let mut s = spec(Arch::X86_64, Accel::Tcg);
        s.disks.push(Disk {
            path: "/w/images/tools-0123/image.erofs".into(),
            serial: "mmci-image".into(),
            readonly: true,
        });
        let args = qemu_args(&s);
        assert_eq!(
            value_after(&args, "-drive")[1],
            "file=/w/images/tools-0123/image.erofs,format=raw,if=none,id=disk1,cache=unsafe,aio=threads,readonly=on"
        );
        assert_eq!(value_after(&args, "-nic"), ["none"]);
        // Nothing of the host's file system is shared: no 9p, virtiofs or fsdev.
        assert!(!args.iter().any(|a| a.contains("9p")
            || a.contains("virtfs")
            || a.contains("fsdev")
            || a.contains("vhost-user")));
    }

    #[test]
    fn cmdline_panics_end_the_guest() {
        assert_eq!(
            kernel_cmdline(Arch::X86_64, &["mmci.threads=8".into()]),
            "console=ttyS0 panic=-1 oops=panic rdinit=/init no_timer_check mmci.threads=8"
        );
    }

    /// Lines of any length through any buffer size: each comes whole up
    /// to the cap, with its real length; a last line without a newline
    /// counts; a cancelled read resumes where it stopped.
    #[tokio::test]
    async fn record_lines_are_read_capped() {
        let long = "x".repeat(100);
        let input = format!("short\n\n{long}\nmid-sized\nlast");
        for capacity in [1, 3, 7, 64, 4096] {
            let mut r = BufReader::with_capacity(capacity, input.as_bytes());
            let mut reader = LineReader::default();
            let mut got = vec![];
            while let Some(line) = reader.next(&mut r, 10).await.unwrap() {
                got.push((String::from_utf8(line.bytes).unwrap(), line.len));
            }
            let want: Vec<(String, u64)> = vec![
                ("short".into(), 5),
                ("".into(), 0),
                ("x".repeat(10), 100),
                ("mid-sized".into(), 9),
                ("last".into(), 4),
            ];
            assert_eq!(got, want, "buffer of {capacity}");
        }
        // A read cancelled mid-line (a timer tick in the select!) keeps
        // what it had: the line still comes whole.
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut r = BufReader::new(rx);
        let mut reader = LineReader::default();
        use tokio::io::AsyncWriteExt;
        tx.write_all(b"{\"half").await.unwrap();
        let t = tokio::time::timeout(Duration::from_millis(50), reader.next(&mut r, 1 << 20)).await;
        assert!(t.is_err(), "no newline yet: {t:?}");
        tx.write_all(b" line\"}\n").await.unwrap();
        let line = reader.next(&mut r, 1 << 20).await.unwrap().unwrap();
        assert_eq!(line.bytes, b"{\"half line\"}");
    }

    /// What a hostile guest sends on the record port ends in run.json
    /// bounded: records parsed, a line over MAX_RECORD_LINE cut and counted
    /// as bad, at most MAX_BAD_LINES bad lines of at most MAX_BAD_LINE_KEPT
    /// bytes, the rest counted, nothing taken past the byte cap.
    #[test]
    fn record_port_output_is_bounded() {
        let record = mmci_record::Envelope::new(Record::Setup {
            step: "mounts".into(),
            detail: "ok".into(),
            ms: 3,
        })
        .to_line();
        let line = |text: &str| CappedLine {
            bytes: text.as_bytes()[..text.len().min(MAX_RECORD_LINE)].to_vec(),
            len: text.len() as u64,
        };
        let mut sink = RecordSink::default();
        sink.take(line(record.trim_end()), 5);
        let huge = "y".repeat(MAX_RECORD_LINE + 10);
        sink.take(line(&huge), 6);
        let wide = "z".repeat(MAX_BAD_LINE_KEPT * 2);
        sink.take(line(&wide), 7);
        for i in 0..MAX_BAD_LINES + 500 {
            sink.take(line(&format!("garbage {i}")), 8);
        }
        sink.take(line(record.trim_end()), 9);
        assert_eq!(sink.records.len(), 2);
        assert_eq!((sink.records[0].at_ms, sink.records[1].at_ms), (5, 9));
        let bad = sink.bad_lines();
        assert_eq!(bad.len(), MAX_BAD_LINES + 1);
        assert!(
            bad[0].starts_with(&"y".repeat(MAX_BAD_LINE_KEPT)),
            "{}",
            &bad[0][..50]
        );
        assert!(
            bad[0].ends_with(&format!(
                "[line of {} bytes, longer than MAX_RECORD_LINE (1048576): cut]",
                MAX_RECORD_LINE + 10
            )),
            "{}",
            &bad[0][MAX_BAD_LINE_KEPT..]
        );
        assert!(bad[1].ends_with(&format!("[line of {} bytes: cut]", MAX_BAD_LINE_KEPT * 2)));
        assert_eq!(bad[2], "garbage 0");
        assert_eq!(
            bad.last().unwrap(),
            "[mmci: 502 more bad lines not kept (MAX_BAD_LINES = 1000)]"
        );
        assert!(bad.iter().all(|b| b.len() < MAX_BAD_LINE_KEPT + 200));

        // Past the byte cap lines are counted, not parsed or kept.
        let mut sink = RecordSink::new(100);
        for _ in 0..10 {
            sink.take(line(record.trim_end()), 1);
        }
        let per = record.len() as u64;
        let taken = 100_u64.div_ceil(per);
        assert_eq!(sink.records.len() as u64, taken);
        assert_eq!(
            sink.bad_lines(),
            [format!(
                "[mmci: {} lines ({} bytes) after the first 100 bytes of records ignored (MAX_RECORD_BYTES)]",
                10 - taken,
                (10 - taken) * per
            )]
        );
        // Not UTF-8: a bad line, not the end of the port.
        let mut sink = RecordSink::default();
        sink.take(
            CappedLine {
                bytes: vec![0xff, b'a'],
                len: 2,
            },
            1,
        );
        sink.take(line(record.trim_end()), 2);
        assert_eq!(
            (sink.bad_lines(), sink.records.len()),
            (vec!["\u{fffd}a".to_string()], 1)
        );
    }

    /// The console read back: whole when it fits; else its head and tail
    /// in whole lines around a line naming the cut, never more than
    /// head + tail bytes read.
    #[test]
    fn console_is_read_as_head_and_tail() {
        let lines: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        let read = |head, tail| {
            read_head_tail(
                std::io::Cursor::new(lines.as_bytes()),
                lines.len() as u64,
                head,
                tail,
                "console",
            )
            .unwrap()
        };
        assert_eq!(read(1000, 0), lines);
        assert_eq!(read(500, 500), lines);
        let text = read(20, 30);
        assert_eq!(
            text,
            "line 000\nline 001\n[mmci: 855 bytes of the console cut here: it is 900 bytes, of which the first 20 and the last 30 are read]\nline 097\nline 098\nline 099\n"
        );
        // An 8 GiB console (sparse: zeros, no newline) reads 2 KiB.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("console.log");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(8 << 30).unwrap(); // 8 GiB, sparse
        let text = read_file_head_tail(&path, 1024, 1024, "console");
        assert!(
            text.starts_with("[mmci: 8589934592 bytes of the console cut here"),
            "{}",
            &text[..80]
        );
        assert!(text.len() < 300, "{}", text.len());
    }

    /// The console file is watched by its size: a sparse file one byte past
    /// the cap counts as a flood, one at the cap does not.
    #[test]
    fn a_console_past_its_cap_is_a_flood() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("console.log");
        assert!(!console_flooded(&path), "a missing console is no flood");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_CONSOLE_BYTES).unwrap();
        assert!(!console_flooded(&path));
        f.set_len(MAX_CONSOLE_BYTES + 1).unwrap();
        assert!(console_flooded(&path));
    }

    /// QEMU's stderr is looked at incrementally: a failure is found when
    /// its line is complete, and old text is not read again.
    #[test]
    fn stderr_is_watched_incrementally() {
        let mut w = StderrWatch::default();
        let mut text = b"qemu-system-x86_64: warning: host doesn't support x\n".to_vec();
        assert!(!w.look(std::io::Cursor::new(&text)));
        assert_eq!(w.offset, text.len() as u64);
        text.extend_from_slice(b"KVM internal error. Sub");
        assert!(!w.look(std::io::Cursor::new(&text)), "half a line");
        text.extend_from_slice(b"error: 1\n");
        assert!(w.look(std::io::Cursor::new(&text)));
        assert!(!w.look(std::io::Cursor::new(&text)), "nothing new");
    }

    #[test]
    fn accel_failure_is_recognised() {
        let stderr = "KVM internal error. Suberror: 1\nextra data[0]: 0x0000000000000000\nemulation failure\n";
        assert_eq!(
            accel_failure(stderr),
            Some("KVM internal error. Suberror: 1")
        );
        assert_eq!(
            accel_failure("qemu-system-x86_64: terminating on signal 15\n"),
            None
        );
    }
}
