//! The build sandbox: bubblewrap around every program a kernel tree or a
//! series brings with it (make and the Makefiles, merge_config.sh,
//! decode_stacktrace.sh on a series' vmlinux), and the rules for reading
//! back what such a program wrote.
//!
//! What the sandboxed program gets, root caller or not:
//! - an unprivileged user (uid/gid 65534 in a new user namespace, no
//!   capabilities, no further user namespaces), so that it cannot remount
//!   its read-only binds writable: bwrap run by root without
//!   `--unshare-user` keeps CAP_SYS_ADMIN, and a build could then
//!   `mount -o remount,bind,rw /` and write anywhere on the host;
//! - only the system's programs and libraries ([`SYSTEM_DIRS`]), the paths
//!   its [`Spec`] binds read-only (the checkout, its git dir) and the ones
//!   it may write (its object dir): no /root, /home, /etc/shadow, token
//!   files or work dir;
//! - the environment of [`Spec::env`] and nothing else (no tokens);
//! - no network, its own pid, IPC, UTS and cgroup namespaces, a private
//!   /tmp, a new session (no controlling terminal, so no TIOCSTI into the
//!   user's shell), and death with mmci.
//!
//! Where the sandbox cannot run, [`probe`] says why and how to fix it; the
//! callers decide whether a build may go on without (see
//! [`crate::kernel::build::SandboxPolicy`]).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use tokio::process::Command;

use crate::host::process::{self, Limits};

mod seccomp;
pub mod user;

pub use seccomp::*;

/// The uid and gid inside the sandbox: the overflow ids ("nobody").
pub const SANDBOX_ID: &str = "65534";

/// Bound read-only when the host has them (`--ro-bind-try`): programs,
/// libraries, the dynamic loader's cache and /etc/alternatives (Debian's
/// awk, cc, ... are symlinks through it). Nothing else of /etc: a kernel
/// build needs no passwd, hosts or certificates.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
];

/// HOME inside (and for the unsandboxed fallback): a path that does not
/// exist, so that no tool reads or writes a dotfile.
pub const HOME: &str = "/nonexistent";

/// What one sandboxed command may see and change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// Bound read-only at the same path.
    pub read_only: Vec<PathBuf>,
    /// Bound read-write at the same path (after the read-only ones, so a
    /// writable dir inside a read-only one stays writable).
    pub writable: Vec<PathBuf>,
    /// The whole environment of the command, in order (later wins).
    pub env: Vec<(String, String)>,
}

/// What this host's bwrap can do (see [`probe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bwrap {
    /// `--disable-userns` (bubblewrap 0.8): the sandbox cannot create
    /// user namespaces of its own.
    pub disable_userns: bool,
    /// `--size` before `--tmpfs` (bubblewrap 0.8): /tmp gets a cap of
    /// [`BuildLimits::tmp_bytes`] instead of the kernel's half of the RAM.
    pub tmpfs_size: bool,
    /// `--add-seccomp-fd` (bubblewrap 0.5): the [`seccomp_filters`] apply.
    pub seccomp: bool,
}

impl Bwrap {
    /// What `bwrap --help` lists.
    pub fn from_help(help: &str) -> Bwrap {
        Bwrap {
            disable_userns: help.contains("--disable-userns"),
            tmpfs_size: help.contains("--size"),
            seccomp: help.contains("--add-seccomp-fd"),
        }
    }
}

/// The limits of one build step (one make or merge_config.sh run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildLimits {
    /// Killed after this long (and the slot lock freed with it).
    pub wall: std::time::Duration,
    /// Tasks, memory and file size of the step's whole tree.
    pub tree: process::cgroup::TreeLimits,
    /// The sandbox's /tmp (where bwrap takes `--size`).
    pub tmp_bytes: u64,
}

impl BuildLimits {
    /// The limits on a host with `memory_mb` of RAM:
    /// - wall clock 1 h a step: a cold build is 3-6 min on this project's
    ///   2-core hosts (197 s on the second one, docs/setup.md), a debug or
    ///   KASAN flavour about twice that, an arm64 cross build about the
    ///   same, three other builds sharing the cores up to 4x: ~50 min at
    ///   worst. Before, 4 h held the slot lock for a hung build;
    /// - 4096 tasks: make -j N runs a few per job (a shell, the compiler
    ///   driver, cc1, as), so 4096 is 10x what -j64 needs; a fork bomb
    ///   stops there;
    /// - half the RAM (at least 2 GiB): cc1 on the largest mm files and
    ///   the final link take well under 2 GiB each; tmpfs pages (/tmp,
    ///   /dev/shm) count too, so the other half stays the host's;
    /// - 4 GiB per file: a debug vmlinux is a few hundred MiB; also caps
    ///   build.log, which the step's processes write;
    /// - /tmp 1 GiB: the compiler's temporaries of one file at a time.
    pub fn for_host(memory_mb: u64) -> BuildLimits {
        BuildLimits {
            wall: std::time::Duration::from_secs(60 * 60),
            tree: process::cgroup::TreeLimits {
                pids: 4096,
                memory_bytes: (memory_mb << 20).div_ceil(2).max(2 << 30),
                file_bytes: 4 << 30,
            },
            tmp_bytes: 1 << 30,
        }
    }
}

/// What every sandbox of mmci's starts with, a build step's and QEMU's
/// (`guest::vm`): its own user (uid and gid [`SANDBOX_ID`], no
/// capabilities), network, pid, IPC, UTS (`hostname`) and cgroup
/// namespaces (`unshare_cgroup`: `--unshare-cgroup`, or its `-try` form
/// where the kernel may lack them), a new session, death with mmci, no
/// further user namespaces where bwrap can say so, the system dirs
/// read-only, a fresh /dev and /proc, and a private /tmp of `tmp_bytes`
/// (where bwrap takes `--size`).
pub fn isolation_args(
    bwrap: Bwrap,
    hostname: &str,
    unshare_cgroup: &str,
    tmp_bytes: u64,
) -> Vec<String> {
    let mut a: Vec<String> = [
        "--unshare-user",
        "--uid",
        SANDBOX_ID,
        "--gid",
        SANDBOX_ID,
        "--cap-drop",
        "ALL",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        hostname,
        unshare_cgroup,
        "--new-session",
        "--die-with-parent",
    ]
    .map(String::from)
    .to_vec();
    if bwrap.disable_userns {
        a.push("--disable-userns".into());
    }
    for dir in SYSTEM_DIRS {
        a.extend(["--ro-bind-try", dir, dir].map(String::from));
    }
    a.extend(["--dev", "/dev", "--proc", "/proc"].map(String::from));
    if bwrap.tmpfs_size {
        a.extend(["--size".to_string(), tmp_bytes.to_string()]);
    }
    a.extend(["--tmpfs", "/tmp"].map(String::from));
    a
}

/// bwrap's arguments for `spec`, up to (not including) the `--` before the
/// program.
pub fn args(spec: &Spec, bwrap: Bwrap) -> Vec<String> {
    args_with_tmp(
        spec,
        bwrap,
        BuildLimits::for_host(crate::host::facts::memory_mb()).tmp_bytes,
    )
}

/// [`args`] with a /tmp of `tmp_bytes` (where bwrap takes `--size`).
pub fn args_with_tmp(spec: &Spec, bwrap: Bwrap, tmp_bytes: u64) -> Vec<String> {
    args_staged(spec, bwrap, tmp_bytes, false)
}

/// The sources of `spec`'s binds, in the order [`args_staged`] binds them.
pub fn bind_sources(spec: &Spec) -> Vec<PathBuf> {
    spec.read_only
        .iter()
        .chain(&spec.writable)
        .cloned()
        .collect()
}

/// [`args_with_tmp`], with each bind's source at its staged path
/// ([`user::staged_path`], in the order of [`bind_sources`]) when `staged`:
/// how bwrap reaches them when it runs as the sandbox user (see
/// [`user`]). Each is bound at its own path either way.
pub fn args_staged(spec: &Spec, bwrap: Bwrap, tmp_bytes: u64, staged: bool) -> Vec<String> {
    let mut a = isolation_args(bwrap, "mmci", "--unshare-cgroup", tmp_bytes);
    let binds = spec
        .read_only
        .iter()
        .map(|p| ("--ro-bind", p))
        .chain(spec.writable.iter().map(|p| ("--bind", p)));
    a.extend(user::bind_args(
        binds.map(|(how, p)| (how, p.as_path())),
        staged,
    ));
    // The skeleton bwrap made for the binds (their parent dirs) read-only
    // too: the only writable places are the spec's dirs and /tmp, a tmpfs
    // of the sandbox's own.
    a.extend(["--remount-ro", "/"].map(String::from));
    a.push("--clearenv".into());
    for (k, v) in &spec.env {
        a.extend(["--setenv".to_string(), k.clone(), v.clone()]);
    }
    a
}

/// The environment a build step starts from: PATH, HOME=/nonexistent, the
/// locale, the operator's own KBUILD_* settings (and CCACHE_* with
/// `ccache`) from `host`; nothing else of it (GITHUB_TOKEN, the patchwork
/// token, SMTP passwords, cloud credentials never reach a Makefile).
pub fn base_env(
    host: impl IntoIterator<Item = (String, String)>,
    ccache: bool,
) -> Vec<(String, String)> {
    let mut env = vec![("HOME".to_string(), HOME.to_string())];
    let mut path = None;
    for (k, v) in host {
        let keep = k == "LANG"
            || k == "LC_ALL"
            || k.starts_with("KBUILD_")
            || (ccache && k.starts_with("CCACHE_"));
        if k == "PATH" {
            path = Some(v);
        } else if keep {
            env.push((k, v));
        }
    }
    env.insert(
        0,
        (
            "PATH".to_string(),
            path.unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin".into()),
        ),
    );
    env
}

/// [`base_env`] of this process's environment. Reading the environment
/// here, not in cli/, is the sandbox's job: what a build child inherits is
/// this allow-list filter of it, applied where the child is set up.
pub fn host_env(ccache: bool) -> Vec<(String, String)> {
    base_env(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        ccache,
    )
}

/// `program` in the sandbox of `spec` (`bwrap: None`: without one, which
/// the caller has allowed), with exactly `spec.env` as its environment in
/// both cases.
pub fn command(bwrap: Option<Bwrap>, spec: &Spec, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let tmp = BuildLimits::for_host(crate::host::facts::memory_mb()).tmp_bytes;
    command_with_tmp(bwrap, spec, program, tmp)
}

/// [`command`] with a /tmp of `tmp_bytes` (where bwrap takes `--size`),
/// and the [`seccomp_filters`] (where bwrap takes `--add-seccomp-fd`):
/// each in a memory file whose fd the child inherits. Where mmci is root,
/// bwrap runs as the sandbox user ([`user::run_as`]): setpriv in front of
/// it, the binds staged. The caller hands the spec's writable dirs to that
/// user ([`lend_writable`]) before the command starts.
pub fn command_with_tmp(
    bwrap: Option<Bwrap>,
    spec: &Spec,
    program: impl AsRef<std::ffi::OsStr>,
    tmp_bytes: u64,
) -> Command {
    command_as(bwrap, spec, program, tmp_bytes, &user::run_as())
}

/// [`command_with_tmp`] as `run_as` says.
pub fn command_as(
    bwrap: Option<Bwrap>,
    spec: &Spec,
    program: impl AsRef<std::ffi::OsStr>,
    tmp_bytes: u64,
    run_as: &user::RunAs,
) -> Command {
    let mut cmd = match bwrap {
        Some(b) => {
            let mut c = match run_as.user() {
                Some(u) => {
                    let argv = user::setpriv_args(u, &[]);
                    let mut c = Command::new(&argv[0]);
                    c.args(&argv[1..]).arg("bwrap");
                    match user::Staging::open(&bind_sources(spec)) {
                        Ok(staging) => {
                            c.args(args_staged(spec, b, tmp_bytes, true));
                            // SAFETY: `mount_in_child` makes only raw
                            // syscalls on strings and fds the closure owns.
                            unsafe {
                                c.pre_exec(move || staging.mount_in_child());
                            }
                        }
                        // A source that cannot be opened (missing): bwrap,
                        // given it by path, fails naming it.
                        Err(_) => {
                            c.args(args_with_tmp(spec, b, tmp_bytes));
                        }
                    }
                    c
                }
                None => {
                    let mut c = Command::new("bwrap");
                    c.args(args_with_tmp(spec, b, tmp_bytes));
                    c
                }
            };
            if b.seccomp {
                match seccomp_filters().and_then(|programs| {
                    programs
                        .iter()
                        .map(|p| memfd_with(p).map_err(|e| e.to_string()))
                        .collect::<Result<Vec<_>, _>>()
                }) {
                    Ok(fds) => {
                        use std::os::fd::AsRawFd;
                        let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
                        for fd in &raw {
                            c.arg("--add-seccomp-fd").arg(fd.to_string());
                        }
                        // SAFETY: fcntl on fds the closure keeps open (it
                        // owns them), between fork and exec.
                        unsafe {
                            c.pre_exec(move || {
                                for f in &fds {
                                    if libc::fcntl(f.as_raw_fd(), libc::F_SETFD, 0) != 0 {
                                        return Err(std::io::Error::last_os_error());
                                    }
                                }
                                Ok(())
                            });
                        }
                    }
                    Err(e) => {
                        tracing::warn!("the build sandbox runs without its seccomp filter: {e}")
                    }
                }
            }
            c.arg("--").arg(program);
            c
        }
        None => Command::new(program),
    };
    cmd.env_clear().envs(spec.env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// Hands `spec`'s writable dirs to the sandbox user for as long as the
/// returned value lives, where bwrap runs as one (see [`user::lend`]);
/// `None` where it does not (the dirs stay mmci's, as bwrap's uid is).
pub fn lend_writable(bwrap: Option<Bwrap>, spec: &Spec) -> std::io::Result<Option<user::Lent>> {
    match (bwrap, user::run_as()) {
        (Some(_), user::RunAs::User(u)) => user::lend(&spec.writable, &u).map(Some),
        _ => Ok(None),
    }
}

/// Why the sandbox cannot run here, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{why}; {fix}")]
pub struct Unavailable {
    pub why: String,
    pub fix: String,
}

/// What [`probe`] saw of the host besides bwrap's own words, for the fix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// /proc/sys/kernel/apparmor_restrict_unprivileged_userns is 1 (Ubuntu 23.10+).
    pub apparmor_restricts_userns: bool,
    /// /proc/sys/user/max_user_namespaces is 0.
    pub no_user_namespaces: bool,
    /// /proc/sys/kernel/unprivileged_userns_clone is 0 (older Debian kernels).
    pub unprivileged_userns_clone_off: bool,
    /// In a container (/.dockerenv or /run/.containerenv).
    pub container: bool,
    pub root: bool,
}

impl HostFacts {
    pub fn read() -> HostFacts {
        let flag = |path: &str, value: &str| {
            std::fs::read_to_string(path).is_ok_and(|s| s.trim() == value)
        };
        HostFacts {
            apparmor_restricts_userns: flag(
                "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
                "1",
            ),
            no_user_namespaces: flag("/proc/sys/user/max_user_namespaces", "0"),
            unprivileged_userns_clone_off: flag("/proc/sys/kernel/unprivileged_userns_clone", "0"),
            container: Path::new("/.dockerenv").exists()
                || Path::new("/run/.containerenv").exists(),
            // SAFETY: geteuid has no preconditions.
            root: unsafe { libc::geteuid() } == 0,
        }
    }
}

/// The fix for a bwrap that failed with `stderr` on a host with `facts`.
pub fn fix_for(stderr: &str, facts: &HostFacts) -> String {
    if facts.no_user_namespaces {
        return "user namespaces are disabled: `sysctl -w user.max_user_namespaces=15000` (and in /etc/sysctl.d/ to keep it)".into();
    }
    if facts.apparmor_restricts_userns && !facts.root {
        return "AppArmor forbids unprivileged user namespaces (Ubuntu 23.10+): give bwrap a profile that allows them (`/etc/apparmor.d/bwrap` with `userns,`, see docs/setup.md) or `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`".into();
    }
    if facts.unprivileged_userns_clone_off && !facts.root {
        return "unprivileged user namespaces are off: `sysctl -w kernel.unprivileged_userns_clone=1`".into();
    }
    if facts.container {
        return "in a container, which may not create namespaces: run it with `--security-opt seccomp=unconfined --security-opt apparmor=unconfined` (Docker/Podman), or `--privileged`".into();
    }
    if stderr.contains("Unknown option") {
        return "this bubblewrap is too old: install bubblewrap 0.4 or newer (./mmci-setup)".into();
    }
    "see bwrap's message above; `mmci doctor` checks the sandbox".into()
}

/// Checks that the sandbox runs here, as builds run it: `true` inside the
/// full set of namespaces and binds.
pub async fn probe() -> Result<Bwrap, Unavailable> {
    let Some(_) = crate::host::tools::on_path("bwrap") else {
        return Err(Unavailable {
            why: "bwrap (bubblewrap) is not installed".into(),
            fix: "install it with ./mmci-setup (Debian package bubblewrap)".into(),
        });
    };
    let help = process::output(
        Command::new("bwrap").arg("--help"),
        "bwrap --help",
        Limits::QUICK,
    )
    .await
    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    .unwrap_or_default();
    let bwrap = Bwrap::from_help(&help);
    // The environment builds get: the same PATH finds the same bwrap.
    let spec = Spec {
        env: host_env(false),
        ..Spec::default()
    };
    let run_true = |run_as: user::RunAs| {
        let spec = spec.clone();
        async move {
            let tmp = BuildLimits::for_host(crate::host::facts::memory_mb()).tmp_bytes;
            process::output(
                &mut command_as(Some(bwrap), &spec, "true", tmp, &run_as),
                "bwrap true",
                Limits::QUICK,
            )
            .await
            .map_err(|e| Unavailable {
                why: format!("bwrap could not be run: {}", crate::host::error_chain(&e)),
                fix: "see `mmci doctor`".into(),
            })
        }
    };
    // As root: the sandbox user first; as root (today's mapping onto host
    // uid 0) only if bwrap cannot run as that user, and then said.
    let wanted = user::run_as();
    let first = run_true(wanted.clone()).await;
    let mut decided = wanted.clone();
    let out = match (first, &wanted) {
        (Ok(out), _) if out.status.success() => out,
        (first, user::RunAs::User(u)) => {
            let why = match &first {
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
                Err(e) => e.why.clone(),
            };
            let as_root = run_true(user::RunAs::Root(String::new())).await?;
            if as_root.status.success() {
                decided = user::RunAs::Root(format!("bwrap cannot run as {u} here ({why})"));
            }
            as_root
        }
        (first, _) => first?,
    };
    if out.status.success() {
        if user::decide(decided.clone()) {
            if let user::RunAs::Root(_) = decided {
                tracing::warn!("the build sandbox and QEMU's bwrap run {decided}");
            }
        }
        return Ok(bwrap);
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(Unavailable {
        why: format!(
            "bwrap cannot create its sandbox here ({})",
            if stderr.is_empty() {
                out.status.to_string()
            } else {
                stderr.clone()
            }
        ),
        fix: fix_for(&stderr, &HostFacts::read()),
    })
}

/// Largest file read back from a sandbox's writable dir as text.
pub const MAX_READ_BACK: u64 = 64 << 20;

/// Opens `rel` under `base`, a dir a sandboxed build could write, without
/// following a symlink anywhere below `base` and only if it is a regular
/// file: a build that replaced `include/config/kernel.release` with a link
/// to a token file must not get mmci to read (and publish) the token.
/// Safe against a racing build only once the build has ended (bwrap's pid
/// namespace takes every process of the sandbox with it).
pub fn open_beneath(base: &Path, rel: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {why}", base.join(rel).display()),
        )
    };
    let mut at = base.to_path_buf();
    let parts: Vec<Component> = rel.components().collect();
    for (i, c) in parts.iter().enumerate() {
        let Component::Normal(name) = c else {
            return Err(refuse("not a plain relative path"));
        };
        at.push(name);
        let meta = std::fs::symlink_metadata(&at)?;
        if meta.file_type().is_symlink() {
            return Err(refuse("a symlink (written by the build), not followed"));
        }
        let last = i + 1 == parts.len();
        if !last && !meta.is_dir() {
            return Err(refuse("not a directory"));
        }
        if last && !meta.is_file() {
            return Err(refuse("not a regular file"));
        }
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&at)
}

/// The text of `rel` under `base` (see [`open_beneath`]), at most
/// [`MAX_READ_BACK`] bytes of it.
pub fn read_beneath(base: &Path, rel: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    open_beneath(base, rel)?
        .take(MAX_READ_BACK)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// Copies `rel` under `base` (see [`open_beneath`]) to `to`, replacing it.
pub fn copy_beneath(base: &Path, rel: &Path, to: &Path) -> std::io::Result<u64> {
    let mut from = open_beneath(base, rel)?;
    let _ = std::fs::remove_file(to);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    std::io::copy(&mut from, &mut out)
}

#[cfg(test)]
mod tests;
