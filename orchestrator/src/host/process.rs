//! Child processes that cannot outlive mmci: each runs in its own process
//! group, registered so that Ctrl-C can kill every group, killed as a group
//! when its handle is dropped, waited on with a total timeout (and, for
//! network transfers, a stall timeout) that escalates from SIGTERM to
//! SIGKILL after a grace period, and watched by a watchdog that kills the
//! group when mmci dies, even by SIGKILL.
//!
//! Why a watchdog and not PR_SET_PDEATHSIG: the parent-death signal fires
//! when the *thread* that forked the child exits, and tokio forks from
//! whichever worker or blocking-pool thread polls the spawn (blocking-pool
//! threads retire after 10 s idle); it also reaches only the direct child,
//! not make's compilers or bwrap's sandboxed tree. Instead every child forks,
//! between fork and exec, a tiny watchdog in its own new process group that
//! blocks reading a pipe whose only write end lives in mmci (close-on-exec,
//! so no child keeps it). When mmci exits for any reason the kernel closes
//! the write end, the read returns end-of-file and the watchdog SIGKILLs its
//! whole group, itself included.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

/// How long a child may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Killed after this long, however busy it is.
    pub total: Duration,
    /// Killed after this long without progress: no process of its group
    /// read anything and none started or ended (see [`group_activity`]).
    pub stall: Option<Duration>,
}

impl Limits {
    /// Short local commands: `git rev-parse`, `gcc --version`, `bwrap true`.
    pub const QUICK: Limits = Limits {
        total: Duration::from_secs(120),
        stall: None,
    };
    /// Local work that scales with the tree: tar, git add/commit/checkout/am.
    pub const LOCAL: Limits = Limits {
        total: Duration::from_secs(60 * 60),
        stall: None,
    };
    /// One make step of a kernel build (a cold build is ~5 min on 2 idle
    /// cores; a loaded host or a big configuration takes many times that).
    pub const BUILD: Limits = Limits {
        total: Duration::from_secs(4 * 60 * 60),
        stall: None,
    };
    /// git fetch or clone of a kernel tree: a first clone of a full tree is
    /// GiBs, so the total is generous; a transfer that has stopped moving is
    /// caught by the stall timeout long before.
    pub const NETWORK: Limits = Limits {
        total: Duration::from_secs(4 * 60 * 60),
        stall: Some(Duration::from_secs(5 * 60)),
    };

    pub const fn total(total: Duration) -> Limits {
        Limits { total, stall: None }
    }

    pub const fn with_stall(self, stall: Duration) -> Limits {
        Limits {
            stall: Some(stall),
            ..self
        }
    }
}

/// Grace between SIGTERM and SIGKILL when a timeout expires.
const GRACE: Duration = Duration::from_secs(5);

/// Process groups of live children, for [`kill_all`].
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE_GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

fn signal_group(pgid: i32, signal: libc::c_int) {
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only
    // yields ESRCH. pgid is always > 1 (it is a child's pid).
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Kills every registered process group (SIGKILL). Called on Ctrl-C.
pub fn kill_all() {
    for pgid in live_groups().iter() {
        signal_group(*pgid, libc::SIGKILL);
    }
}

/// The watchdog pipe: (read end, write end), both close-on-exec, made once
/// and never closed while mmci lives.
fn watchdog_pipe() -> io::Result<(i32, i32)> {
    static PIPE: OnceLock<Result<(i32, i32), i32>> = OnceLock::new();
    let r = PIPE.get_or_init(|| {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two fds into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0 {
            Ok((fds[0], fds[1]))
        } else {
            Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO))
        }
    });
    r.map_err(io::Error::from_raw_os_error)
}

/// In the forked child, before exec: become the leader of a new process
/// group and fork the group's watchdog. Only async-signal-safe calls.
fn arm_watchdog(read_fd: i32, write_fd: i32) -> io::Result<()> {
    // SAFETY: plain syscalls on our own pid and fds, between fork and exec.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        let group = libc::getpid();
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                // The watchdog: keep nothing but the read end, so that it
                // holds no pipe or socket the parent waits on (a child's
                // stdout would otherwise never see end-of-file).
                libc::close(write_fd);
                close_all_but(read_fd);
                let mut byte = 0u8;
                loop {
                    let n = libc::read(read_fd, (&mut byte as *mut u8).cast(), 1);
                    if n < 0 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    break;
                }
                // End-of-file: mmci is gone. Take the whole group down.
                libc::kill(-group, libc::SIGKILL);
                libc::_exit(0)
            }
            _ => Ok(()),
        }
    }
}

/// Closes every fd but `keep` (close_range where the kernel has it).
///
/// # Safety
/// Only for a freshly forked child that owns no Rust objects with fds.
unsafe fn close_all_but(keep: i32) {
    let keep = keep as libc::c_uint;
    let ranges = [(0, keep.wrapping_sub(1)), (keep + 1, libc::c_uint::MAX)];
    for (lo, hi) in ranges {
        if lo > hi || (lo == 0 && keep == 0) {
            continue;
        }
        if libc::syscall(libc::SYS_close_range, lo, hi, 0) != 0 {
            let top = (libc::sysconf(libc::_SC_OPEN_MAX).clamp(256, 65536)) as libc::c_uint;
            for fd in lo..hi.min(top) {
                libc::close(fd as i32);
            }
        }
    }
}

/// How a waited-for child ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    /// A limit expired and the group was killed.
    pub timed_out: bool,
    /// It was the stall limit.
    pub stalled: bool,
}

/// A child in its own process group.
pub struct GroupChild {
    child: Child,
    pgid: i32,
    done: bool,
}

impl GroupChild {
    /// Spawns `cmd` as the leader of a new process group, with a watchdog
    /// that kills the group if mmci dies.
    pub fn spawn(cmd: &mut Command) -> io::Result<GroupChild> {
        let (read_fd, write_fd) = watchdog_pipe()?;
        cmd.process_group(0).kill_on_drop(true);
        // SAFETY: arm_watchdog makes only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(move || arm_watchdog(read_fd, write_fd));
        }
        let child = cmd.spawn()?;
        let pgid = child
            .id()
            .ok_or_else(|| io::Error::other("child exited at once"))? as i32;
        live_groups().insert(pgid);
        Ok(GroupChild {
            child,
            pgid,
            done: false,
        })
    }

    pub fn pid(&self) -> i32 {
        self.pgid
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits for the child to exit.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.reap_group();
        Ok(status)
    }

    /// Waits up to `timeout`; then SIGTERM to the group, `grace`, SIGKILL.
    pub async fn wait_timeout(
        &mut self,
        timeout: Duration,
        grace: Duration,
    ) -> io::Result<Finished> {
        self.wait_limits(Limits::total(timeout), grace).await
    }

    /// Waits within `limits`; on expiry SIGTERM to the group, `grace`, SIGKILL.
    pub async fn wait_limits(&mut self, limits: Limits, grace: Duration) -> io::Result<Finished> {
        let deadline = tokio::time::Instant::now() + limits.total;
        let mut stalled = false;
        let waited = match limits.stall {
            None => tokio::time::timeout_at(deadline, self.child.wait())
                .await
                .ok(),
            Some(stall) => {
                let pgid = self.pgid;
                let check = (stall / 10).clamp(Duration::from_millis(100), Duration::from_secs(5));
                let mut last = group_activity(pgid);
                let mut quiet_since = Instant::now();
                let mut tick = tokio::time::interval(check);
                tick.tick().await;
                loop {
                    tokio::select! {
                        s = self.child.wait() => break Some(s),
                        _ = tokio::time::sleep_until(deadline) => break None,
                        _ = tick.tick() => {
                            let now = group_activity(pgid);
                            if now != last {
                                last = now;
                                quiet_since = Instant::now();
                            } else if quiet_since.elapsed() >= stall {
                                stalled = true;
                                break None;
                            }
                        }
                    }
                }
            }
        };
        if let Some(status) = waited {
            let status = status?;
            self.reap_group();
            return Ok(Finished {
                status,
                timed_out: false,
                stalled: false,
            });
        }
        let status = self.terminate(grace).await?;
        Ok(Finished {
            status,
            timed_out: true,
            stalled,
        })
    }

    /// SIGTERM to the group, then SIGKILL after `grace` if still alive.
    pub async fn terminate(&mut self, grace: Duration) -> io::Result<ExitStatus> {
        signal_group(self.pgid, libc::SIGTERM);
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status?,
            Err(_) => {
                signal_group(self.pgid, libc::SIGKILL);
                self.child.wait().await?
            }
        };
        self.reap_group();
        Ok(status)
    }

    /// The leader exited: kill what it left in its group (make's compilers,
    /// QEMU helpers, the watchdog) and forget the group.
    fn reap_group(&mut self) {
        if !self.done {
            signal_group(self.pgid, libc::SIGKILL);
            live_groups().remove(&self.pgid);
            self.done = true;
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.done {
            signal_group(self.pgid, libc::SIGKILL);
            live_groups().remove(&self.pgid);
        }
    }
}

/// What the processes of group `pgid` have done so far: each member's pid
/// and bytes read (/proc/<pid>/io `rchar`). Any change between two calls
/// (a read, a process started or ended) is progress; git's progress meter
/// writes on a timer even when nothing arrives, so output is no measure.
pub fn group_activity(pgid: i32) -> Vec<(i32, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let mut members: Vec<(i32, u64)> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| stat_pgrp(&s))
                == Some(pgid)
        })
        .map(|pid| {
            let rchar = std::fs::read_to_string(format!("/proc/{pid}/io"))
                .ok()
                .and_then(|io| {
                    io.lines()
                        .find_map(|l| l.strip_prefix("rchar:"))
                        .and_then(|v| v.trim().parse().ok())
                })
                .unwrap_or(0);
            (pid, rchar)
        })
        .collect();
    members.sort();
    members
}

/// The process group field of a /proc/<pid>/stat line.
fn stat_pgrp(stat: &str) -> Option<i32> {
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// A command that failed to run, exited unsuccessfully or ran out of time.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("cannot run {what}")]
    Spawn {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{what} failed ({status}); log: {}", log.display())]
    Failed {
        what: String,
        status: ExitStatus,
        log: PathBuf,
    },
    #[error("{what} {}; killed{}", timeout_text(*.stalled, *.after), log.as_ref().map(|l| format!("; log: {}", l.display())).unwrap_or_default())]
    TimedOut {
        what: String,
        stalled: bool,
        after: Duration,
        log: Option<PathBuf>,
    },
}

fn timeout_text(stalled: bool, after: Duration) -> String {
    if stalled {
        format!(
            "made no progress for {} s (its stall timeout)",
            after.as_secs()
        )
    } else {
        format!("did not finish within {} s (its timeout)", after.as_secs())
    }
}

fn timed_out(what: &str, limits: Limits, fin: &Finished, log: Option<&Path>) -> CommandError {
    CommandError::TimedOut {
        what: what.to_string(),
        stalled: fin.stalled,
        after: if fin.stalled {
            limits.stall.unwrap_or(limits.total)
        } else {
            limits.total
        },
        log: log.map(Path::to_path_buf),
    }
}

/// Runs `cmd` in its own process group with stdout and stderr appended to
/// `log`, within [`Limits::LOCAL`]; `what` names it in errors ("tar").
pub async fn run_logged(cmd: &mut Command, log: &Path, what: &str) -> Result<(), CommandError> {
    run_logged_with(cmd, log, what, Limits::LOCAL).await
}

/// [`run_logged`] within `limits`.
pub async fn run_logged_with(
    cmd: &mut Command,
    log: &Path,
    what: &str,
    limits: Limits,
) -> Result<(), CommandError> {
    let spawn_err = |source| CommandError::Spawn {
        what: what.to_string(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(spawn_err)?;
    {
        use std::io::Write;
        let mut header = &file;
        let _ = writeln!(header, "==> {what}");
    }
    let stderr = file.try_clone().map_err(spawn_err)?;
    cmd.stdout(file).stderr(stderr).stdin(Stdio::null());
    let mut child = GroupChild::spawn(cmd).map_err(spawn_err)?;
    let fin = child.wait_limits(limits, GRACE).await.map_err(spawn_err)?;
    if fin.timed_out {
        {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
                let _ = writeln!(f, "==> {what}: {}", timeout_text(fin.stalled, limits.total));
            }
        }
        return Err(timed_out(what, limits, &fin, Some(log)));
    }
    if !fin.status.success() {
        return Err(CommandError::Failed {
            what: what.to_string(),
            status: fin.status,
            log: log.to_path_buf(),
        });
    }
    Ok(())
}

/// Runs `cmd` like `Command::output` (stdin null, stdout and stderr
/// collected), in its own process group within `limits`. A non-zero exit is
/// not an error here: the caller reads `status`.
pub async fn output(cmd: &mut Command, what: &str, limits: Limits) -> Result<Output, CommandError> {
    output_from(cmd, Stdio::null(), what, limits).await
}

/// [`output`] with `input` (a file, read to its end) as stdin, for
/// commands that read their data there (`git patch-id`).
pub async fn output_from_file(
    cmd: &mut Command,
    input: &Path,
    what: &str,
    limits: Limits,
) -> Result<Output, CommandError> {
    let file = std::fs::File::open(input).map_err(|source| CommandError::Spawn {
        what: format!("{what} (reading {})", input.display()),
        source,
    })?;
    output_from(cmd, Stdio::from(file), what, limits).await
}

/// [`output`] with `stdin` as the child's standard input (a file to filter).
pub async fn output_from(
    cmd: &mut Command,
    stdin: Stdio,
    what: &str,
    limits: Limits,
) -> Result<Output, CommandError> {
    let spawn_err = |source| CommandError::Spawn {
        what: what.to_string(),
        source,
    };
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = GroupChild::spawn(cmd).map_err(spawn_err)?;
    let mut out = child.child_mut().stdout.take().expect("piped");
    let mut err = child.child_mut().stderr.take().expect("piped");
    let read_out = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf).await;
        buf
    });
    let read_err = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf).await;
        buf
    });
    let fin = child.wait_limits(limits, GRACE).await.map_err(spawn_err)?;
    // The group is dead now (reaped or killed): the pipes reach end-of-file.
    let stdout = read_out.await.unwrap_or_default();
    let stderr = read_err.await.unwrap_or_default();
    if fin.timed_out {
        return Err(timed_out(what, limits, &fin, None));
    }
    Ok(Output {
        status: fin.status,
        stdout,
        stderr,
    })
}

/// [`output`] that also wants a zero exit; the error names `what` and
/// carries stderr's last line.
pub async fn output_ok(
    cmd: &mut Command,
    what: &str,
    limits: Limits,
) -> Result<Output, CommandError> {
    output_ok_from(cmd, Stdio::null(), what, limits).await
}

/// [`output_ok`] with `stdin` as the child's standard input.
pub async fn output_ok_from(
    cmd: &mut Command,
    stdin: Stdio,
    what: &str,
    limits: Limits,
) -> Result<Output, CommandError> {
    let out = output_from(cmd, stdin, what, limits).await?;
    if !out.status.success() {
        let last = String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
            .to_string();
        return Err(CommandError::Spawn {
            what: what.to_string(),
            source: io::Error::other(format!("{}: {last}", out.status)),
        });
    }
    Ok(out)
}

/// An exclusive lock on `<dir>/<name>.lock`, held until dropped; serializes
/// imports and builds between mmci processes (and parallel tests).
pub async fn lock_file(dir: &Path, name: &str) -> io::Result<std::fs::File> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .map_err(io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Running or sleeping; a zombie or a reaped pid counts as dead.
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                let state = s
                    .rsplit_once(')')
                    .map(|(_, r)| r.trim_start().chars().next());
                !matches!(state, Some(Some('Z')) | Some(Some('X')))
            })
            .unwrap_or(false)
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        // The shell starts a grandchild that ignores SIGTERM; both must die.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; sleep 30 & echo $! ; wait"])
            .stdout(std::process::Stdio::piped());
        let mut child = GroupChild::spawn(&mut cmd).unwrap();
        let mut out = child.child_mut().stdout.take().unwrap();
        let mut line = String::new();
        use tokio::io::AsyncBufReadExt;
        tokio::io::BufReader::new(&mut out)
            .read_line(&mut line)
            .await
            .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let fin = child
            .wait_timeout(Duration::from_millis(200), Duration::from_millis(200))
            .await
            .unwrap();
        assert!(fin.timed_out);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!alive(grandchild), "grandchild {grandchild} survived");
    }

    #[tokio::test]
    async fn drop_kills_the_group() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let child = GroupChild::spawn(&mut cmd).unwrap();
        let pid = child.pid();
        assert!(live_groups().contains(&pid));
        drop(child);
        assert!(!live_groups().contains(&pid));
        // SIGKILL is asynchronous: give the kernel a moment.
        for _ in 0..50 {
            if !alive(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("sleep {pid} survived its handle");
    }

    #[tokio::test]
    async fn quick_child_is_not_a_timeout() {
        let mut cmd = Command::new("true");
        let mut child = GroupChild::spawn(&mut cmd).unwrap();
        let fin = child
            .wait_timeout(Duration::from_secs(10), Duration::from_secs(1))
            .await
            .unwrap();
        assert!(!fin.timed_out);
        assert!(fin.status.success());
    }

    #[tokio::test]
    async fn stall_timeout_is_not_the_total_timeout() {
        // Sleeps read nothing: a stall after ~1 s, long before the total.
        let limits = Limits::total(Duration::from_secs(60)).with_stall(Duration::from_secs(1));
        let t0 = Instant::now();
        let err = output(Command::new("sleep").arg("30"), "sleep 30", limits)
            .await
            .unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        assert!(
            matches!(err, CommandError::TimedOut { stalled: true, .. }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "sleep 30 made no progress for 1 s (its stall timeout); killed"
        );
        // A child that keeps reading is not stalled; it runs into the total.
        let limits = Limits::total(Duration::from_secs(3)).with_stall(Duration::from_secs(1));
        let mut busy = Command::new("sh");
        busy.args([
            "-c",
            "while :; do head -c 4096 /dev/zero >/dev/null; sleep 0.1; done",
        ]);
        let err = output(&mut busy, "reader", limits).await.unwrap_err();
        assert!(
            matches!(err, CommandError::TimedOut { stalled: false, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("did not finish within 3 s"),
            "{err}"
        );
    }

    /// A real git fetch from a server that accepts and then says nothing.
    #[tokio::test]
    async fn stalled_git_fetch_is_killed_by_its_stall_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let mut held = vec![];
            loop {
                let (sock, _) = listener.accept().await.unwrap();
                held.push(sock);
            }
        });
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r.git");
        std::process::Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&repo)
            .status()
            .unwrap();
        let mut git = Command::new("git");
        git.arg("-C")
            .arg(&repo)
            .args(["fetch", &format!("git://127.0.0.1:{port}/linux.git")]);
        let limits = Limits::total(Duration::from_secs(120)).with_stall(Duration::from_secs(2));
        let t0 = Instant::now();
        let err = run_logged_with(&mut git, &tmp.path().join("fetch.log"), "git fetch", limits)
            .await
            .unwrap_err();
        assert!(
            matches!(err, CommandError::TimedOut { stalled: true, .. }),
            "{err:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
        server.abort();
    }

    #[tokio::test]
    async fn run_logged_timeout_names_the_log() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("step.log");
        let err = run_logged_with(
            Command::new("sleep").arg("30"),
            &log,
            "make bzImage",
            Limits::total(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("make bzImage did not finish within 0 s"),
            "{text}"
        );
        assert!(text.contains(&log.display().to_string()), "{text}");
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(
            logged.contains("==> make bzImage: did not finish"),
            "{logged}"
        );
    }

    #[tokio::test]
    async fn output_collects_both_streams() {
        let out = output(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            "sh",
            Limits::QUICK,
        )
        .await
        .unwrap();
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code(), Some(3));
        assert!(
            output_ok(Command::new("false").arg("x"), "false", Limits::QUICK)
                .await
                .is_err()
        );
    }

    #[test]
    fn process_group_from_stat() {
        for (stat, pgrp) in [
            ("42 (sleep) S 1 42 42 0 -1", Some(42)),
            ("7 (a b) c)) R 3 9 9 0", Some(9)),
            ("garbage", None),
        ] {
            assert_eq!(stat_pgrp(stat), pgrp, "{stat}");
        }
    }

    /// The spawner of [`group_dies_when_its_spawner_is_killed`], run as a
    /// process of its own (this test binary, re-executed).
    #[tokio::test]
    #[ignore = "helper process of group_dies_when_its_spawner_is_killed"]
    async fn watchdog_spawner() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM HUP; sleep 60 & echo $!; wait"])
            .stdout(Stdio::piped());
        let mut child = GroupChild::spawn(&mut cmd).unwrap();
        let mut line = String::new();
        use tokio::io::AsyncBufReadExt;
        tokio::io::BufReader::new(child.child_mut().stdout.take().unwrap())
            .read_line(&mut line)
            .await
            .unwrap();
        println!("PIDS {} {}", child.pid(), line.trim());
        std::mem::forget(child);
        tokio::time::sleep(Duration::from_secs(120)).await;
    }

    /// The watchdog: a process standing in for mmci spawns a group child
    /// through this module and is then SIGKILLed; the child's group (a shell
    /// that ignores SIGTERM and its `sleep`) must die with it, although no
    /// Drop or kill_all ran.
    #[test]
    fn group_dies_when_its_spawner_is_killed() {
        use std::io::BufRead;
        let mut spawner = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "host::process::tests::watchdog_spawner",
                "--nocapture",
                "--test-threads=1",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(spawner.stdout.take().unwrap());
        let pids: Vec<i32> = out
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                // libtest prints "test <name> ... " on the same line first.
                l.split_once("PIDS ")
                    .map(|(_, p)| p.split_whitespace().map(|p| p.parse().unwrap()).collect())
            })
            .expect("the spawner reports its child's pids");
        assert_eq!(pids.len(), 2);
        assert!(pids.iter().all(|p| alive(*p)), "{pids:?}");
        spawner.kill().unwrap();
        spawner.wait().unwrap();
        let t0 = Instant::now();
        while pids.iter().any(|p| alive(*p)) {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{pids:?} outlived their spawner"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
