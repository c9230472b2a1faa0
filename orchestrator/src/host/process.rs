//! Child processes that cannot outlive mmci: each runs in its own process
//! group, registered so that Ctrl-C can kill every group, killed as a group
//! when its handle is dropped, and waited on with a timeout that escalates
//! from SIGTERM to SIGKILL after a grace period.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Mutex;
use std::time::Duration;

use tokio::process::{Child, Command};

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

/// How a waited-for child ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    /// The timeout expired and the group was killed.
    pub timed_out: bool,
}

/// A child in its own process group.
pub struct GroupChild {
    child: Child,
    pgid: i32,
    done: bool,
}

impl GroupChild {
    /// Spawns `cmd` as the leader of a new process group.
    pub fn spawn(cmd: &mut Command) -> io::Result<GroupChild> {
        cmd.process_group(0).kill_on_drop(true);
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
        if let Ok(status) = tokio::time::timeout(timeout, self.child.wait()).await {
            let status = status?;
            self.reap_group();
            return Ok(Finished {
                status,
                timed_out: false,
            });
        }
        let status = self.terminate(grace).await?;
        Ok(Finished {
            status,
            timed_out: true,
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
    /// QEMU helpers) and forget the group.
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

/// A command that failed to run or exited unsuccessfully.
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
        log: std::path::PathBuf,
    },
}

/// Runs `cmd` in its own process group with stdout and stderr appended to
/// `log`; `what` names it in errors ("make bzImage").
pub async fn run_logged(cmd: &mut Command, log: &Path, what: &str) -> Result<(), CommandError> {
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
    cmd.stdout(file)
        .stderr(stderr)
        .stdin(std::process::Stdio::null());
    let mut child = GroupChild::spawn(cmd).map_err(spawn_err)?;
    let status = child.wait().await.map_err(spawn_err)?;
    if !status.success() {
        return Err(CommandError::Failed {
            what: what.to_string(),
            status,
            log: log.to_path_buf(),
        });
    }
    Ok(())
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
}
