//! Children in process groups of their own: spawned with a watchdog that
//! takes the group down with mmci, killed as a group on timeout, drop or
//! [`kill_all`], and their activity read from /proc.

use std::collections::BTreeSet;
use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use super::*;

/// Grace between SIGTERM and SIGKILL when a timeout expires.
pub(super) const GRACE: Duration = Duration::from_secs(5);

/// Process groups of live children, for [`kill_all`].
pub(super) static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

pub(super) fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE_GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn signal_group(pgid: i32, signal: libc::c_int) {
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
pub(super) fn watchdog_pipe() -> io::Result<(i32, i32)> {
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
pub(super) fn arm_watchdog(read_fd: i32, write_fd: i32) -> io::Result<()> {
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

/// Makes `cmd` die with this process: its own process group, with the
/// watchdog that kills that group once this process is gone, however it
/// ended. For processes that run mmci itself (the integration tests): their
/// mmci and, through its own watchdogs, every build and QEMU it started go
/// when the test binary is killed.
pub fn die_with_this_process(cmd: &mut std::process::Command) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let (read_fd, write_fd) = watchdog_pipe()?;
    cmd.process_group(0);
    // SAFETY: arm_watchdog makes only async-signal-safe calls.
    unsafe {
        cmd.pre_exec(move || arm_watchdog(read_fd, write_fd));
    }
    Ok(())
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
pub(super) fn stat_pgrp(stat: &str) -> Option<i32> {
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
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
                "host::process::group::tests::watchdog_spawner",
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
