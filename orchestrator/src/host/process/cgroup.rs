//! Resource limits on a child's whole process tree: a transient cgroup
//! made by mmci beneath its own (pids and memory controllers, cgroup v2 or
//! the v1 hierarchies of a hybrid host), joined by the child between fork
//! and exec so that everything it starts is counted; rlimits (per-file
//! size, and where no cgroup can be made the process count of a non-root
//! user and each process's address space) set at the same point. What
//! applied is said in [`Applied`], so a caller can log it.
//!
//! Why mmci makes the cgroup itself and not `systemd-run --scope`: it
//! needs no systemd (containers, CI runners, this project's own hosts run
//! without one as PID 1), no D-Bus and no extra process around the child,
//! and it works wherever mmci's own cgroup is writable (root, or a
//! delegated subtree).

use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The limits of one process tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeLimits {
    /// Tasks (processes and threads) at once: `pids.max`.
    pub pids: u64,
    /// Memory, page cache and tmpfs pages included: `memory.max`
    /// (`memory.limit_in_bytes` on cgroup v1).
    pub memory_bytes: u64,
    /// The largest file any process may write (RLIMIT_FSIZE), always set.
    pub file_bytes: u64,
}

/// Which limits hold for a child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// A cgroup of its own (`path` on the host; `v1`: the v1 hierarchies).
    Cgroup { path: PathBuf, v1: bool },
    /// No cgroup could be made (`why`): rlimits only; `nproc` says whether
    /// RLIMIT_NPROC applies (never for root, whom the kernel exempts).
    Rlimits { why: String, nproc: bool },
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Applied::Cgroup { path, v1 } => write!(
                f,
                "cgroup{} {} (pids.max, memory limit), RLIMIT_FSIZE",
                if *v1 { " v1" } else { "" },
                path.display()
            ),
            Applied::Rlimits { why, nproc } => write!(
                f,
                "no cgroup ({why}): RLIMIT_FSIZE, RLIMIT_AS{}",
                if *nproc {
                    ", RLIMIT_NPROC"
                } else {
                    " (RLIMIT_NPROC does not bind root)"
                }
            ),
        }
    }
}

/// One line of /proc/self/cgroup: (hierarchy id, controllers, path).
pub fn parse_proc_cgroup(text: &str) -> Vec<(u32, Vec<String>, String)> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let id = parts.next()?.parse().ok()?;
            let controllers = parts
                .next()?
                .split(',')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect();
            let path = parts.next()?.to_string();
            Some((id, controllers, path))
        })
        .collect()
}

/// Mount points of cgroup file systems from /proc/self/mountinfo: (mount
/// point, `None` for cgroup2 or `Some(options)` for a v1 hierarchy).
pub fn parse_cgroup_mounts(mountinfo: &str) -> Vec<(PathBuf, Option<Vec<String>>)> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let mount_point = left.split_whitespace().nth(4)?;
            let mut r = right.split_whitespace();
            let fstype = r.next()?;
            let _source = r.next()?;
            let super_opts = r.next().unwrap_or("");
            let point = PathBuf::from(mount_point.replace("\\040", " "));
            match fstype {
                "cgroup2" => Some((point, None)),
                "cgroup" => Some((
                    point,
                    Some(super_opts.split(',').map(String::from).collect()),
                )),
                _ => None,
            }
        })
        .collect()
}

/// Where the child cgroups go: one dir per controller (v1) or one (v2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parent {
    V2(PathBuf),
    V1 { pids: PathBuf, memory: PathBuf },
}

/// The parent dirs for this process's child cgroups, from its
/// /proc/self/cgroup and mountinfo: v2 where the pids and memory
/// controllers are on the unified hierarchy, else the v1 hierarchies that
/// carry them.
pub fn parent_dirs(proc_cgroup: &str, mountinfo: &str) -> Result<Parent, String> {
    let own = parse_proc_cgroup(proc_cgroup);
    let mounts = parse_cgroup_mounts(mountinfo);
    let rel = |p: &str| p.trim_start_matches('/').to_string();
    let v1_dir = |controller: &str| -> Option<PathBuf> {
        let (_, _, path) = own
            .iter()
            .find(|(id, cs, _)| *id != 0 && cs.iter().any(|c| c == controller))?;
        let (point, _) = mounts.iter().find(|(_, opts)| {
            opts.as_ref()
                .is_some_and(|o| o.iter().any(|c| c == controller))
        })?;
        Some(point.join(rel(path)))
    };
    if let (Some(pids), Some(memory)) = (v1_dir("pids"), v1_dir("memory")) {
        return Ok(Parent::V1 { pids, memory });
    }
    let unified = own.iter().find(|(id, _, _)| *id == 0);
    let v2_mount = mounts.iter().find(|(_, opts)| opts.is_none());
    match (unified, v2_mount) {
        (Some((_, _, path)), Some((point, _))) => Ok(Parent::V2(point.join(rel(path)))),
        _ => Err("no pids and memory controllers mounted".into()),
    }
}

/// A cgroup made for one child, removed (after killing what is left in
/// it) when dropped.
#[derive(Debug)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each dir, open for the child to join by writing
    /// "0" (itself) between fork and exec.
    procs: Vec<OwnedFd>,
    v1: bool,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The files of one cgroup dir and the values written to them.
type Knobs = Vec<(&'static str, String)>;

fn write_file(path: &Path, value: &str) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl Cgroup {
    /// Makes `mmci-<pid>-<n>` beneath this process's cgroup with `limits`.
    pub fn make(limits: &TreeLimits) -> Result<Cgroup, String> {
        let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
        let parent = parent_dirs(&read("/proc/self/cgroup")?, &read("/proc/self/mountinfo")?)?;
        let name = format!(
            "mmci-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let (v1, settings): (bool, Vec<(PathBuf, Knobs)>) = match parent {
            Parent::V2(dir) => {
                let enabled =
                    std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
                let has = |c: &str| enabled.split_whitespace().any(|e| e == c);
                if !(has("pids") && has("memory")) {
                    // Allowed only where the parent holds no process of
                    // its own (the root cgroup, a delegated subtree).
                    write_file(&dir.join("cgroup.subtree_control"), "+pids +memory").map_err(
                        |e| format!("cannot enable pids and memory below {}: {e}", dir.display()),
                    )?;
                }
                (
                    false,
                    vec![(
                        dir.join(&name),
                        vec![
                            ("pids.max", limits.pids.to_string()),
                            ("memory.max", limits.memory_bytes.to_string()),
                            // No swapping the limit away (where swap exists).
                            ("memory.swap.max", "0".into()),
                        ],
                    )],
                )
            }
            Parent::V1 { pids, memory } => (
                true,
                vec![
                    (
                        pids.join(&name),
                        vec![("pids.max", limits.pids.to_string())],
                    ),
                    (
                        memory.join(&name),
                        vec![("memory.limit_in_bytes", limits.memory_bytes.to_string())],
                    ),
                ],
            ),
        };
        let mut made = Cgroup {
            dirs: vec![],
            procs: vec![],
            v1,
        };
        for (dir, knobs) in settings {
            std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            made.dirs.push(dir.clone());
            for (knob, value) in knobs {
                let path = dir.join(knob);
                if knob == "memory.swap.max" && !path.exists() {
                    continue;
                }
                write_file(&path, &value).map_err(|e| e.to_string())?;
            }
            let procs = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| format!("{}: {e}", dir.join("cgroup.procs").display()))?;
            made.procs.push(procs.into());
        }
        Ok(made)
    }

    /// The cgroup's dir (the pids one on v1).
    pub fn path(&self) -> &Path {
        self.dirs.first().map_or(Path::new(""), PathBuf::as_path)
    }

    pub fn applied(&self) -> Applied {
        Applied::Cgroup {
            path: self.path().to_path_buf(),
            v1: self.v1,
        }
    }

    /// The fds the child writes "0" to, in the child, before exec.
    pub fn join_fds(&self) -> Vec<i32> {
        self.procs.iter().map(|f| f.as_raw_fd()).collect()
    }

    /// How often a limit was hit: (fork refused at pids.max, OOM kills).
    pub fn events(&self) -> (u64, u64) {
        let count = |file: &Path, key: &str| -> u64 {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|t| {
                    t.lines().find_map(|l| {
                        let (k, v) = l.split_once(' ')?;
                        (k == key).then(|| v.trim().parse().ok())?
                    })
                })
                .unwrap_or(0)
        };
        let (Some(pids), Some(memory)) = (self.dirs.first(), self.dirs.last()) else {
            return (0, 0);
        };
        let forks = count(&pids.join("pids.events"), "max");
        let ooms = if self.v1 {
            count(&memory.join("memory.oom_control"), "oom_kill")
        } else {
            count(&memory.join("memory.events"), "oom_kill")
        };
        (forks, ooms)
    }

    /// Tasks in it now.
    pub fn members(&self) -> Vec<i32> {
        let Some(dir) = self.dirs.first() else {
            return vec![];
        };
        std::fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Kills what is left in it (SIGKILL; `cgroup.kill` on v2) until it
    /// is empty, for at most `within`.
    pub fn kill_all(&self, within: Duration) {
        let t0 = Instant::now();
        if let (false, Some(dir)) = (self.v1, self.dirs.first()) {
            let _ = write_file(&dir.join("cgroup.kill"), "1");
        }
        loop {
            let left = self.members();
            if left.is_empty() || t0.elapsed() >= within {
                return;
            }
            for pid in left {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill_all(Duration::from_secs(5));
        for dir in &self.dirs {
            // Emptied above; its tasks may take a moment to be reaped.
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Between fork and exec: joins the cgroups (writes "0", this process, to
/// each `cgroup.procs`) and sets the rlimits. Only async-signal-safe calls.
pub fn enter(join: &[i32], limits: &TreeLimits, without_cgroup: bool) -> io::Result<()> {
    for fd in join {
        // SAFETY: writing two bytes from a static buffer to an open fd.
        if unsafe { libc::write(*fd, b"0\n".as_ptr().cast(), 2) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let set = |resource, value: u64| {
        let lim = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(resource, &lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    set(libc::RLIMIT_FSIZE, limits.file_bytes)?;
    if without_cgroup {
        // Per process, so each at the tree's memory; the count per user
        // (ignored by the kernel for root).
        set(libc::RLIMIT_AS, limits.memory_bytes)?;
        set(libc::RLIMIT_NPROC, limits.pids)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_CGROUP: &str = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/ccd8\n0::/\n";
    const HYBRID_MOUNTS: &str = "\
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:35 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const V2_CGROUP: &str = "0::/user.slice/user-1000.slice/session-2.scope\n";
    const V2_MOUNTS: &str = "\
25 1 8:1 / / rw - ext4 /dev/sda1 rw
31 25 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
";

    #[test]
    fn parent_dirs_of_hybrid_and_unified_hosts() {
        assert_eq!(
            parent_dirs(HYBRID_CGROUP, HYBRID_MOUNTS),
            Ok(Parent::V1 {
                pids: "/sys/fs/cgroup/pids".into(),
                memory: "/sys/fs/cgroup/memory/process_api/ccd8".into(),
            })
        );
        assert_eq!(
            parent_dirs(V2_CGROUP, V2_MOUNTS),
            Ok(Parent::V2(
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope".into()
            ))
        );
        assert!(parent_dirs("0::/\n", "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n").is_err());
        assert_eq!(
            parse_proc_cgroup("4:memory,hugetlb:/a:b\n"),
            [(
                4,
                vec!["memory".to_string(), "hugetlb".into()],
                "/a:b".into()
            )]
        );
    }

    #[test]
    fn what_applied_is_said() {
        let c = Applied::Cgroup {
            path: "/sys/fs/cgroup/pids/mmci-1-0".into(),
            v1: true,
        };
        assert_eq!(
            c.to_string(),
            "cgroup v1 /sys/fs/cgroup/pids/mmci-1-0 (pids.max, memory limit), RLIMIT_FSIZE"
        );
        let r = Applied::Rlimits {
            why: "read-only".into(),
            nproc: false,
        };
        assert!(r.to_string().contains("does not bind root"), "{r}");
    }
}
