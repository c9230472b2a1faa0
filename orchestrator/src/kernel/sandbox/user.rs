//! Which host user a sandbox runs as, and what that takes when mmci is
//! root: the user ([`HostUser`]), the decision ([`RunAs`]), the drop
//! itself ([`setpriv_args`]), the binds made reachable for that user
//! ([`Staging`]) and the dirs it may write handed over for the time of
//! one command ([`Lent`]).
//!
//! Why: bwrap's `--unshare-user --uid 65534` maps the sandbox's uid onto
//! the uid of whoever runs bwrap. Run by root (the demo, CI), that is host
//! uid 0: a process that escaped the namespaces would be host root, the
//! files a build writes are root's, and RLIMIT_NPROC never binds. So where
//! mmci's effective uid is 0, bwrap (and everything in it) runs as an
//! unprivileged host user instead.
//!
//! The user: `mmci-sandbox`, a system user `./mmci-setup` creates (no
//! home, no shell, no password, a group of its own), so that nothing else
//! on the host runs as that uid and owns files an escaped build could
//! touch. Where it does not exist, `nobody` (65534:65534), which every
//! Linux has and which owns nothing by convention; that is said wherever
//! the user is named ("nobody: no mmci-sandbox user here"), since other
//! daemons may run as nobody too. No option chooses another user: the
//! dedicated one is the right answer everywhere, and an option would let a
//! misconfiguration pick a user with files or groups of its own.
//!
//! The drop: `setpriv --reuid --regid --clear-groups` (util-linux, which
//! Debian marks Essential) in front of bwrap, not `CommandExt::uid`/`gid`
//! or a `pre_exec` of our own. std switches ids *before* its `pre_exec`
//! closures run, and mmci's closures need root: joining the build step's
//! cgroup writes `cgroup.procs`, which the kernel checks against the
//! writer's uid, and the process group's watchdog, forked there, should
//! stay root so that an escaped build cannot kill it. setpriv runs at
//! exec, after all of them, sets the real, effective and saved ids, clears
//! the supplementary groups (or sets exactly /dev/kvm's group for QEMU
//! under KVM), and refuses to go on if any step fails.
//!
//! The binds: bwrap resolves each bind source by path as the user it runs
//! as, so a source under a dir that user cannot search (`/root/.cache/mmci`,
//! a 0700 temporary dir) would fail, and `--bind-fd` does not help (bwrap
//! 0.8 turns the fd back into a path with realpath). Instead the child, while
//! still root, makes a mount namespace of its own, mounts a small tmpfs over
//! /dev/shm there (the host's is untouched; not /tmp, where programs on PATH may be) and bind-mounts each source
//! onto `/dev/shm/bN` from an fd mmci opened; bwrap binds `/dev/shm/bN` at the
//! source's own path. Only the sources themselves are then reachable, with
//! their own permissions: read-only inputs stay root's and unwritable.
//!
//! What the user writes: the dirs a command may write are chowned to the
//! user before it starts ([`lend`]) and back to mmci's uid when it is done
//! (chown also clears any setuid bit a build set). So a trusted build's
//! object dir is the sandbox user's only while a trusted step runs; an
//! untrusted build, which gets a private copy and never binds the shared
//! one, finds it root's.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// The dedicated user `./mmci-setup` creates.
pub const SANDBOX_USER: &str = "mmci-sandbox";

/// nobody/nogroup: the user where [`SANDBOX_USER`] does not exist.
pub const NOBODY: u32 = 65534;

/// Where the child stages the binds (in a mount namespace of its own).
pub const STAGE: &str = "/dev/shm";

/// An unprivileged host user a sandbox runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostUser {
    pub uid: u32,
    pub gid: u32,
    /// Is it [`SANDBOX_USER`] (or the `nobody` fallback)?
    pub dedicated: bool,
}

impl HostUser {
    /// [`SANDBOX_USER`]'s ids if the host has that user, else nobody.
    pub fn from_lookup(sandbox_user: Option<(u32, u32)>) -> HostUser {
        match sandbox_user {
            Some((uid, gid)) if uid != 0 && gid != 0 => HostUser {
                uid,
                gid,
                dedicated: true,
            },
            _ => HostUser {
                uid: NOBODY,
                gid: NOBODY,
                dedicated: false,
            },
        }
    }

    /// The user of this host (a passwd lookup of [`SANDBOX_USER`]).
    pub fn of_host() -> HostUser {
        HostUser::from_lookup(lookup(SANDBOX_USER))
    }
}

impl std::fmt::Display for HostUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.dedicated {
            write!(f, "uid {} ({SANDBOX_USER})", self.uid)
        } else {
            write!(
                f,
                "uid {} (nobody: no {SANDBOX_USER} user here, ./mmci-setup creates it)",
                self.uid
            )
        }
    }
}

/// The uid and gid of `name` in the passwd database (NSS included).
fn lookup(name: &str) -> Option<(u32, u32)> {
    let cname = CString::new(name).ok()?;
    let mut buf = vec![0u8; 16 << 10];
    // SAFETY: getpwnam_r writes into `pwd` and `buf`, both ours and of the
    // sizes given; `result` points at `pwd` or is null.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        );
        (rc == 0 && !result.is_null()).then_some((pwd.pw_uid, pwd.pw_gid))
    }
}

/// Who bwrap runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunAs {
    /// mmci is not root: bwrap runs as mmci's own (unprivileged) user.
    Caller,
    /// mmci is root: bwrap runs as this user (through setpriv, binds staged).
    User(HostUser),
    /// mmci is root and cannot drop to an unprivileged user (why): the
    /// sandbox's uid maps to host root, as before.
    Root(String),
}

impl RunAs {
    /// What mmci wants before trying it: `root` is mmci's effective uid
    /// being 0, `setpriv` whether setpriv is on PATH.
    pub fn wanted(root: bool, setpriv: bool, user: HostUser) -> RunAs {
        match (root, setpriv) {
            (false, _) => RunAs::Caller,
            (true, true) => RunAs::User(user),
            (true, false) => RunAs::Root(
                "setpriv (util-linux) is not on PATH to drop to an unprivileged user".into(),
            ),
        }
    }

    /// The user to drop to, if any.
    pub fn user(&self) -> Option<&HostUser> {
        match self {
            RunAs::User(u) => Some(u),
            _ => None,
        }
    }
}

impl std::fmt::Display for RunAs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunAs::Caller => write!(
                f,
                "as uid {} (mmci's own user)",
                // SAFETY: geteuid has no preconditions.
                unsafe { libc::geteuid() }
            ),
            RunAs::User(u) => write!(f, "as {u}"),
            RunAs::Root(why) => write!(
                f,
                "as host root (uid 65534 inside maps to host uid 0): {why}"
            ),
        }
    }
}

/// This process's first choice (see [`RunAs::wanted`]).
pub fn wanted_here() -> RunAs {
    RunAs::wanted(
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() } == 0,
        crate::host::tools::on_path("setpriv").is_some(),
        HostUser::of_host(),
    )
}

/// The decision [`super::probe`] made (it tries the user first and falls
/// back to root, saying so, only if bwrap cannot run as that user).
static DECIDED: std::sync::OnceLock<RunAs> = std::sync::OnceLock::new();

/// Records the probe's decision; `true` the first time (to say it once).
pub(super) fn decide(run_as: RunAs) -> bool {
    DECIDED.set(run_as).is_ok()
}

/// Who sandboxes run as in this process: the probe's decision, or the
/// first choice before any probe.
pub fn run_as() -> RunAs {
    DECIDED.get().cloned().unwrap_or_else(wanted_here)
}

/// setpriv's argv (program first) that drops to `user` with exactly
/// `groups` as supplementary groups (none: cleared), up to the `--`
/// before the program.
pub fn setpriv_args(user: &HostUser, groups: &[u32]) -> Vec<String> {
    let mut a = vec![
        "setpriv".to_string(),
        format!("--reuid={}", user.uid),
        format!("--regid={}", user.gid),
    ];
    if groups.is_empty() {
        a.push("--clear-groups".into());
    } else {
        let list: Vec<String> = groups.iter().map(u32::to_string).collect();
        a.push(format!("--groups={}", list.join(",")));
    }
    a.push("--".into());
    a
}

/// Where the `i`-th staged bind is, in the child's mount namespace.
pub fn staged_path(i: usize) -> PathBuf {
    Path::new(STAGE).join(format!("b{i}"))
}

/// bwrap's bind arguments for `binds` (how, path), in order: each bound at
/// its own path, from its staged path ([`staged_path`], by its index) when
/// `staged` (bwrap runs as the sandbox user), else from itself.
pub fn bind_args<'a>(
    binds: impl IntoIterator<Item = (&'a str, &'a Path)>,
    staged: bool,
) -> Vec<String> {
    let mut a = vec![];
    for (i, (how, p)) in binds.into_iter().enumerate() {
        let src = if staged {
            staged_path(i)
        } else {
            p.to_path_buf()
        };
        a.extend([
            how.to_string(),
            src.display().to_string(),
            p.display().to_string(),
        ]);
    }
    a
}

/// The binds of one command, mounted at [`staged_path`] in the child
/// before it drops (see the module comment).
pub struct Staging {
    /// (source path, the staged path, a dir?)
    binds: Vec<(CString, CString, bool)>,
}

impl Staging {
    /// Checks that every source exists (a file or a dir) and prepares the
    /// strings the child needs (it may not allocate).
    pub fn open(sources: &[PathBuf]) -> std::io::Result<Staging> {
        let mut binds = vec![];
        for (i, src) in sources.iter().enumerate() {
            let meta = std::fs::metadata(src)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", src.display())))?;
            let c = |p: PathBuf| {
                CString::new(p.into_os_string().into_encoded_bytes()).map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("{}: a NUL in the path", src.display()),
                    )
                })
            };
            binds.push((c(src.clone())?, c(staged_path(i))?, meta.is_dir()));
        }
        Ok(Staging { binds })
    }

    /// In the child, before exec: a mount namespace of its own, each
    /// source opened there (a bind's source must be a mount of the
    /// caller's namespace), a tmpfs over /dev/shm, and each source
    /// bind-mounted at its staged path from its fd (so a source under
    /// /dev/shm is still reached). Only async-signal-safe calls: raw syscalls
    /// on prepared strings and a stack buffer.
    pub fn mount_in_child(&self) -> std::io::Result<()> {
        const MAX: usize = 64;
        let err = std::io::Error::last_os_error;
        if self.binds.len() > MAX {
            return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
        }
        let mut fds = [-1i32; MAX];
        // SAFETY: raw syscalls on NUL-terminated strings and buffers we
        // own, in the forked child between fork and exec.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(err());
            }
            // Nothing of ours propagates back to the host's namespace.
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(err());
            }
            for (i, (src, _, _)) in self.binds.iter().enumerate() {
                fds[i] = libc::open(src.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                if fds[i] < 0 {
                    return Err(err());
                }
            }
            if libc::mount(
                c"mmci-binds".as_ptr(),
                c"/dev/shm".as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=0711,size=1m".as_ptr().cast(),
            ) != 0
            {
                return Err(err());
            }
            for (i, (_, staged, is_dir)) in self.binds.iter().enumerate() {
                if *is_dir {
                    if libc::mkdir(staged.as_ptr(), 0o700) != 0 {
                        return Err(err());
                    }
                } else {
                    let fd = libc::open(
                        staged.as_ptr(),
                        libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                        0o600,
                    );
                    if fd < 0 {
                        return Err(err());
                    }
                    libc::close(fd);
                }
                let proc = proc_fd_path(fds[i]);
                if libc::mount(
                    proc.as_ptr().cast(),
                    staged.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(err());
                }
                libc::close(fds[i]);
            }
        }
        Ok(())
    }
}

/// "/proc/self/fd/N\0" in a stack buffer (no allocation: for the child).
fn proc_fd_path(fd: i32) -> [u8; 32] {
    let mut buf = [0u8; 32];
    let prefix = b"/proc/self/fd/";
    buf[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (fd.max(0) as u32, 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[prefix.len() + i] = digits[len - 1 - i];
    }
    buf
}

/// Makes `path` and everything below it (symlinks themselves, never what
/// they point at) owned by `uid:gid`; entries already so are left alone.
/// Returns how many were changed.
pub fn chown_tree(path: &Path, uid: u32, gid: u32) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    let mut changed = 0;
    if meta.uid() != uid || meta.gid() != gid {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
        changed += 1;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            changed += chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(changed)
}

/// Dirs handed to the sandbox user for one command: chowned to it by
/// [`lend`], back to mmci's own uid and gid when dropped.
#[derive(Debug)]
pub struct Lent {
    paths: Vec<PathBuf>,
}

/// Chowns each of `paths` (recursively, see [`chown_tree`]) to `user`.
pub fn lend(paths: &[PathBuf], user: &HostUser) -> std::io::Result<Lent> {
    let lent = Lent { paths: vec![] };
    let mut lent = lent;
    for p in paths {
        chown_tree(p, user.uid, user.gid)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        lent.paths.push(p.clone());
    }
    Ok(lent)
}

impl Drop for Lent {
    fn drop(&mut self) {
        // SAFETY: geteuid and getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        for p in &self.paths {
            if let Err(e) = chown_tree(p, uid, gid) {
                tracing::warn!(path = %p.display(), "could not take back from the sandbox user: {e}");
            }
        }
    }
}

/// The group QEMU needs besides `user` to open /dev/kvm (`Ok(None)`: none),
/// from /dev/kvm's owner, group and mode; `Err` says why `user` cannot.
pub fn kvm_groups(user: &HostUser, owner: u32, group: u32, mode: u32) -> Result<Vec<u32>, String> {
    if mode & 0o006 == 0o006 || (owner == user.uid && mode & 0o600 == 0o600) {
        return Ok(vec![]);
    }
    if mode & 0o060 == 0o060 {
        return Ok(vec![group]);
    }
    Err(format!(
        "/dev/kvm ({mode:o}, uid {owner}, gid {group}) is not readable and writable by {user}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dedicated() -> HostUser {
        HostUser {
            uid: 999,
            gid: 998,
            dedicated: true,
        }
    }

    #[test]
    fn the_user_is_mmci_sandbox_else_nobody() {
        assert_eq!(HostUser::from_lookup(Some((999, 998))), dedicated());
        let nobody = HostUser {
            uid: 65534,
            gid: 65534,
            dedicated: false,
        };
        assert_eq!(HostUser::from_lookup(None), nobody);
        // A passwd entry that is root in disguise is not a drop.
        assert_eq!(HostUser::from_lookup(Some((0, 0))), nobody);
        assert_eq!(HostUser::from_lookup(Some((999, 0))), nobody);
        assert_eq!(dedicated().to_string(), "uid 999 (mmci-sandbox)");
        assert!(nobody
            .to_string()
            .starts_with("uid 65534 (nobody: no mmci-sandbox user here"));
    }

    #[test]
    fn only_root_drops() {
        for (root, setpriv, want) in [
            (false, true, RunAs::Caller),
            (false, false, RunAs::Caller),
            (true, true, RunAs::User(dedicated())),
        ] {
            assert_eq!(RunAs::wanted(root, setpriv, dedicated()), want);
        }
        let no_setpriv = RunAs::wanted(true, false, dedicated());
        assert!(matches!(&no_setpriv, RunAs::Root(why) if why.contains("setpriv")));
        assert!(no_setpriv.to_string().starts_with("as host root"));
        assert_eq!(
            RunAs::User(dedicated()).to_string(),
            "as uid 999 (mmci-sandbox)"
        );
    }

    #[test]
    fn setpriv_command_lines() {
        for (groups, want) in [
            (vec![], "setpriv --reuid=999 --regid=998 --clear-groups --"),
            (vec![104], "setpriv --reuid=999 --regid=998 --groups=104 --"),
            (
                vec![104, 105],
                "setpriv --reuid=999 --regid=998 --groups=104,105 --",
            ),
        ] {
            assert_eq!(setpriv_args(&dedicated(), &groups).join(" "), want);
        }
    }

    #[test]
    fn proc_fd_paths() {
        for (fd, want) in [
            (0, "/proc/self/fd/0"),
            (7, "/proc/self/fd/7"),
            (1023, "/proc/self/fd/1023"),
        ] {
            let buf = proc_fd_path(fd);
            let end = buf.iter().position(|b| *b == 0).unwrap();
            assert_eq!(std::str::from_utf8(&buf[..end]).unwrap(), want);
        }
    }

    #[test]
    fn kvm_access_by_mode() {
        let u = dedicated();
        for (owner, group, mode, want) in [
            (0, 104, 0o666, Ok(vec![])),
            (0, 104, 0o660, Ok(vec![104])),
            (999, 0, 0o600, Ok(vec![])),
            (0, 0, 0o600, Err(())),
            (0, 104, 0o640, Err(())),
        ] {
            assert_eq!(
                kvm_groups(&u, owner, group, mode).map_err(|_| ()),
                want,
                "{owner} {group} {mode:o}"
            );
        }
    }

    #[test]
    fn lent_trees_come_back_without_setuid_bits() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // chown to another user needs root; the tests run as root here.
            panic!("this test needs root (chown to another uid)");
        }
        let tmp = tempfile::tempdir().unwrap();
        let objs = tmp.path().join("objs");
        std::fs::create_dir_all(objs.join("a/b")).unwrap();
        std::fs::write(objs.join("a/b/f.o"), "o").unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, "root's").unwrap();
        std::os::unix::fs::symlink(&outside, objs.join("link")).unwrap();
        let user = dedicated();
        {
            let _lent = lend(std::slice::from_ref(&objs), &user).unwrap();
            for p in ["", "a", "a/b", "a/b/f.o", "link"] {
                let m = std::fs::symlink_metadata(objs.join(p)).unwrap();
                assert_eq!((m.uid(), m.gid()), (999, 998), "{p}");
            }
            // Never through the link.
            assert_eq!(std::fs::metadata(&outside).unwrap().uid(), 0);
            // What the user "wrote": a setuid file of its own.
            let planted = objs.join("a/planted");
            std::fs::write(&planted, "#!/bin/sh\n").unwrap();
            std::os::unix::fs::chown(&planted, Some(999), Some(998)).unwrap();
            std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o4755)).unwrap();
        }
        for p in ["", "a", "a/b", "a/b/f.o", "a/planted", "link"] {
            let m = std::fs::symlink_metadata(objs.join(p)).unwrap();
            assert_eq!((m.uid(), m.gid()), (0, 0), "{p} given back");
        }
        let mode = std::fs::metadata(objs.join("a/planted")).unwrap().mode();
        assert_eq!(mode & 0o4000, 0, "the setuid bit went with the chown");
    }
}
