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

use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

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

pub mod cgroup;
mod group;

pub use group::*;

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
    use std::time::Instant;

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
}
