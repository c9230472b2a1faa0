//! One build step (make, merge_config.sh) in the build sandbox: what it
//! binds read-only and writable, its environment, its limits, and how it
//! runs.
//!
//! Every command of a step runs under [`sandbox::BuildLimits`], sandbox or
//! not: a cgroup of its own where mmci can make one (tasks and memory of
//! the whole tree; see [`process::cgroup`]), rlimits where it cannot, a
//! per-file size cap, a sized /tmp in the sandbox, and a wall clock per
//! step. Which of them applied is the first line of the step in its log.

use std::path::Path;
use std::sync::Arc;

use crate::host::process::cgroup::{self, Applied, Cgroup};

use tokio::process::Command;

use super::*;

/// Can the build sandbox run here? (See [`sandbox::probe`] for why not.)
pub async fn sandbox_available() -> bool {
    sandbox::probe().await.is_ok()
}

/// What a build step needs besides its arguments.
pub(super) struct Step<'a> {
    /// The source: read-only in the sandbox. An `O=` build writes nothing
    /// into the source tree, so a series' build cannot leave files there
    /// for the next build of the shared checkout, nor touch its `.git`.
    pub(super) checkout: &'a Path,
    /// The repository the checkout is a worktree of, read-only: kbuild's
    /// setlocalversion asks git for the release's `+`.
    pub(super) git_dir: Option<&'a Path>,
    /// What the host wrote for the build (the config fragments): read-only.
    pub(super) inputs: &'a Path,
    pub(super) objs: &'a Path,
    pub(super) ccache_dir: Option<&'a Path>,
    /// ccache may read its cache but not add to it (an untrusted build).
    pub(super) ccache_read_only: bool,
    /// `None`: no sandbox (allowed by the [`SandboxPolicy`]).
    pub(super) sandbox: Option<sandbox::Bwrap>,
    pub(super) log: &'a Path,
}

impl Step<'_> {
    /// The binds and the environment of a step: see [`sandbox`]; the
    /// environment is the allow-list of [`sandbox::host_env`], pinned
    /// build identity, `extra_env`, and ccache's settings.
    pub(super) fn spec(&self, extra_env: &[(&str, &str)]) -> sandbox::Spec {
        let mut read_only = vec![self.checkout.to_path_buf(), self.inputs.to_path_buf()];
        read_only.extend(self.git_dir.map(Path::to_path_buf));
        let mut writable = vec![self.objs.to_path_buf()];
        if !self.ccache_read_only {
            writable.extend(self.ccache_dir.map(Path::to_path_buf));
        } else {
            read_only.extend(self.ccache_dir.map(Path::to_path_buf));
        }
        let mut env = sandbox::host_env(self.ccache_dir.is_some());
        let mut set = |k: &str, v: &str| env.push((k.to_string(), v.to_string()));
        set("KBUILD_BUILD_TIMESTAMP", "2000-01-01 00:00:00 UTC");
        set("KBUILD_BUILD_USER", "mmci");
        set("KBUILD_BUILD_HOST", "mmci");
        for (k, v) in extra_env {
            set(k, v);
        }
        if let Some(dir) = self.ccache_dir {
            set("CCACHE_DIR", &dir.display().to_string());
            set("CCACHE_BASEDIR", &self.checkout.display().to_string());
            if self.ccache_read_only {
                set("CCACHE_READONLY", "1");
                set(
                    "CCACHE_TEMPDIR",
                    &self.objs.join(".ccache-tmp").display().to_string(),
                );
            }
        }
        sandbox::Spec {
            read_only,
            writable,
            env,
        }
    }

    /// `program args` in the checkout, in the sandbox.
    pub(super) fn command(&self, program: &str, args: Vec<String>) -> Command {
        self.command_in(self.checkout, program, args, &[])
    }

    /// The same in `dir` (inside the sandbox's binds), with `extra_env`,
    /// under this host's [`sandbox::BuildLimits`].
    pub(super) fn command_in(
        &self,
        dir: &Path,
        program: &str,
        args: Vec<String>,
        extra_env: &[(&str, &str)],
    ) -> Command {
        let limits = sandbox::BuildLimits::for_host(crate::host::facts::memory_mb());
        self.limited_command(dir, program, args, extra_env, &limits)
            .0
    }

    /// The command of a step under `limits`, and the limits that applied
    /// (the cgroup, if one was made, lives as long as the command or the
    /// returned handle, whichever is dropped last, and is removed then).
    fn limited_command(
        &self,
        dir: &Path,
        program: &str,
        args: Vec<String>,
        extra_env: &[(&str, &str)],
        limits: &sandbox::BuildLimits,
    ) -> (Command, Arc<Limited>) {
        let spec = self.spec(extra_env);
        let mut cmd = sandbox::command_with_tmp(self.sandbox, &spec, program, limits.tmp_bytes);
        cmd.current_dir(dir).args(args);
        let mut limited = Limited::new(limits.tree);
        // The object dir (and a trusted build's ccache) are the sandbox
        // user's while the command lives, mmci's again after.
        match sandbox::lend_writable(self.sandbox, &spec) {
            Ok(lent) => limited.lent = lent,
            Err(e) => append_log(
                self.log,
                &format!("==> {program}: could not hand the object dir to the sandbox user: {e}"),
            ),
        }
        let limited = Arc::new(limited);
        let held = limited.clone();
        // SAFETY: `cgroup::enter` makes only async-signal-safe calls (write
        // and setrlimit) on fds `held` keeps open.
        unsafe {
            cmd.pre_exec(move || cgroup::enter(&held.join_fds, &held.tree, held.cgroup.is_none()));
        }
        (cmd, limited)
    }

    pub(super) async fn run(
        &self,
        program: &str,
        args: Vec<String>,
        what: &str,
    ) -> Result<(), BuildError> {
        let limits = sandbox::BuildLimits::for_host(crate::host::facts::memory_mb());
        self.run_limited(program, args, what, &limits).await
    }

    /// [`Step::run`] under `limits`: its wall clock, and on failure a line
    /// in the log saying which limit the step ran into.
    pub(super) async fn run_limited(
        &self,
        program: &str,
        args: Vec<String>,
        what: &str,
        limits: &sandbox::BuildLimits,
    ) -> Result<(), BuildError> {
        let (mut cmd, limited) = self.limited_command(self.checkout, program, args, &[], limits);
        append_log(
            self.log,
            &format!("==> {what}: limits: {}", limited.describe(limits)),
        );
        append_log(
            self.log,
            &format!("==> {what}: {}", self.describe_sandbox()),
        );
        let result =
            process::run_logged_with(&mut cmd, self.log, what, Limits::total(limits.wall)).await;
        if let (Err(_), Some(hit)) = (&result, limited.hits(limits)) {
            append_log(self.log, &format!("==> {what}: {hit}"));
        }
        drop(cmd);
        result?;
        Ok(())
    }
}

impl Step<'_> {
    /// Who the step runs as: "sandbox: bwrap as uid 999 (mmci-sandbox)".
    pub(super) fn describe_sandbox(&self) -> String {
        match self.sandbox {
            Some(_) => format!("sandbox: bwrap {}", sandbox::user::run_as()),
            None => "no sandbox (allowed for this build)".to_string(),
        }
    }
}

fn append_log(log: &Path, line: &str) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// The limits one step's command runs under: its cgroup if one was made.
pub(super) struct Limited {
    tree: cgroup::TreeLimits,
    /// The writable dirs handed to the sandbox user (given back on drop).
    lent: Option<sandbox::user::Lent>,
    cgroup: Option<Cgroup>,
    join_fds: Vec<i32>,
    applied: Applied,
}

impl Limited {
    fn new(tree: cgroup::TreeLimits) -> Limited {
        match Cgroup::make(&tree) {
            Ok(c) => Limited {
                tree,
                lent: None,
                join_fds: c.join_fds(),
                applied: c.applied(),
                cgroup: Some(c),
            },
            Err(why) => Limited {
                tree,
                lent: None,
                cgroup: None,
                join_fds: vec![],
                applied: Applied::Rlimits {
                    why,
                    // SAFETY: geteuid has no preconditions.
                    nproc: unsafe { libc::geteuid() } != 0,
                },
            },
        }
    }

    fn describe(&self, limits: &sandbox::BuildLimits) -> String {
        format!(
            "{} tasks, {} MiB memory, {} MiB per file, {} s; {}",
            limits.tree.pids,
            limits.tree.memory_bytes >> 20,
            limits.tree.file_bytes >> 20,
            limits.wall.as_secs(),
            self.applied
        )
    }

    /// What the cgroup counted: forks refused and OOM kills.
    fn hits(&self, limits: &sandbox::BuildLimits) -> Option<String> {
        let (forks, ooms) = self.cgroup.as_ref()?.events();
        let mut said = vec![];
        if forks > 0 {
            said.push(format!(
                "{forks} fork(s) refused at its limit of {} tasks",
                limits.tree.pids
            ));
        }
        if ooms > 0 {
            said.push(format!(
                "{ooms} process(es) killed at its memory limit of {} MiB",
                limits.tree.memory_bytes >> 20
            ));
        }
        (!said.is_empty()).then(|| format!("hit its limits: {}", said.join("; ")))
    }
}

#[cfg(test)]
mod hostile_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's binds and environment: the checkout and inputs read-only,
    /// only the object dir (and a trusted build's ccache) writable, the
    /// allow-listed environment with the pinned build identity.
    #[test]
    fn steps_bind_the_source_read_only() {
        let (checkout, objs, inputs, ccache, git_dir, log) = (
            Path::new("/w/checkout"),
            Path::new("/w/objs"),
            Path::new("/w/builds/k/fragments"),
            Path::new("/w/ccache"),
            Path::new("/w/trees/t/.git"),
            Path::new("/w/log"),
        );
        let step = |ccache_read_only| Step {
            checkout,
            git_dir: Some(git_dir),
            inputs,
            objs,
            ccache_dir: Some(ccache),
            ccache_read_only,
            sandbox: Some(sandbox::Bwrap {
                disable_userns: true,
                tmpfs_size: true,
                seccomp: true,
            }),
            log,
        };
        let trusted = step(false).spec(&[("ARCH", "x86")]);
        assert_eq!(
            trusted.read_only,
            [checkout, inputs, git_dir].map(Path::to_path_buf)
        );
        assert_eq!(trusted.writable, [objs, ccache].map(Path::to_path_buf));
        let untrusted = step(true).spec(&[]);
        assert_eq!(untrusted.writable, [objs.to_path_buf()]);
        assert!(untrusted.read_only.contains(&ccache.to_path_buf()));
        let env: Vec<String> = trusted
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for want in [
            "HOME=/nonexistent",
            "KBUILD_BUILD_TIMESTAMP=2000-01-01 00:00:00 UTC",
            "KBUILD_BUILD_USER=mmci",
            "ARCH=x86",
            "CCACHE_DIR=/w/ccache",
            "CCACHE_BASEDIR=/w/checkout",
        ] {
            assert!(env.contains(&want.to_string()), "{want} in {env:?}");
        }
        assert!(untrusted
            .env
            .iter()
            .any(|(k, v)| k == "CCACHE_READONLY" && v == "1"));
        // The real command line: bwrap, the spec's binds, then the program.
        let cmd = step(false).command("make", vec!["O=/w/objs".into()]);
        let argv: Vec<String> = std::iter::once(cmd.as_std().get_program())
            .chain(cmd.as_std().get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let joined = argv.join(" ");
        // As root, bwrap starts as the sandbox user (kernel::sandbox::user),
        // unless bwrap cannot run as that user here.
        // SAFETY: geteuid has no preconditions.
        let bwrap_at = if unsafe { libc::geteuid() } == 0 && joined.starts_with("setpriv ") {
            assert!(!joined.starts_with("setpriv --reuid=0 "), "{joined}");
            joined.find(" -- bwrap ").map(|i| i + 4).unwrap()
        } else {
            0
        };
        assert!(
            joined[bwrap_at..].starts_with("bwrap --unshare-user"),
            "{joined}"
        );
        assert!(
            joined.contains("--ro-bind /w/checkout /w/checkout"),
            "{joined}"
        );
        assert!(joined.contains("--bind /w/objs /w/objs"), "{joined}");
        assert!(joined.ends_with("-- make O=/w/objs"), "{joined}");
        assert_eq!(cmd.as_std().get_current_dir(), Some(checkout));
    }

    /// The `Uid:` line of /proc/PID/status: real, effective, saved, fs.
    fn host_uids(pid: u32) -> Vec<u32> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
        line[4..]
            .split_whitespace()
            .map(|u| u.parse().unwrap())
            .collect()
    }

    /// L of the security review: as root, a build step's bwrap and the
    /// program in it run as an unprivileged host uid (read from the host's
    /// /proc while it runs), write the object dir as that uid, and the
    /// object dir is root's again when the step is done. Before, every uid
    /// here was 0.
    #[tokio::test]
    async fn as_root_a_step_runs_as_an_unprivileged_host_uid() {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::geteuid() }, 0, "the tests run as root here");
        let bwrap = sandbox::probe().await.expect("bwrap runs here");
        let want = sandbox::user::HostUser::of_host();
        assert_eq!(
            sandbox::user::run_as(),
            sandbox::user::RunAs::User(want.clone())
        );
        // A 0700 dir, as the work dir under /root is: the binds are staged.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let (checkout, inputs, objs) = (dir.join("checkout"), dir.join("inputs"), dir.join("objs"));
        for d in [&checkout, &inputs, &objs] {
            std::fs::create_dir(d).unwrap();
        }
        let step = Step {
            checkout: &checkout,
            git_dir: None,
            inputs: &inputs,
            objs: &objs,
            ccache_dir: None,
            ccache_read_only: false,
            sandbox: Some(bwrap),
            log: &dir.join("log"),
        };
        assert!(step.describe_sandbox().contains(&want.to_string()));
        let o = objs.display();
        let mut cmd = step.command(
            "sh",
            vec![
                "-c".into(),
                format!("echo built > {o}/vmlinux && exec sleep 30"),
            ],
        );
        let mut child = crate::host::process::GroupChild::spawn(&mut cmd).unwrap();
        let bwrap_pid = child.child_mut().id().unwrap();
        // bwrap (setpriv exec'd it: the same pid) and, below it, sleep.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let sleep_pid = loop {
            let found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                let exe = std::fs::read_link(e.path().join("exe")).ok()?;
                (exe.ends_with("sleep") && cmdline.starts_with(b"sleep\x0030")).then_some(pid)
            });
            if let Some(pid) = found {
                break pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the step's sleep never ran"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        let exe = std::fs::read_link(format!("/proc/{bwrap_pid}/exe")).unwrap();
        assert!(exe.ends_with("bwrap"), "{exe:?}");
        for (what, pid) in [("bwrap", bwrap_pid), ("the step's program", sleep_pid)] {
            assert_eq!(host_uids(pid), [want.uid; 4], "{what}'s host uids");
        }
        let made = std::fs::metadata(objs.join("vmlinux")).unwrap();
        assert_eq!(made.uid(), want.uid, "written as the sandbox user");
        let _ = child.terminate(std::time::Duration::from_secs(2)).await;
        drop(cmd);
        for p in [objs.clone(), objs.join("vmlinux")] {
            assert_eq!(std::fs::metadata(&p).unwrap().uid(), 0, "{p:?} given back");
        }
    }

    /// The parent's secret, in this process's environment (the child's).
    const PROBE_SECRET: &str = "ghp_sandboxprobe0123456789";

    /// What a hostile build tries from inside mmci's sandbox, through
    /// `Step::command`: run by [`sandbox_holds_for_root_and_other_callers`]
    /// in a child process (as this user, and as uid 65534 when root), with
    /// a GITHUB_TOKEN in its environment. Each probe is a shell command
    /// and whether it must succeed.
    #[tokio::test]
    #[ignore = "run in a child process by sandbox_holds_for_root_and_other_callers"]
    async fn sandbox_probe_child() {
        let var =
            |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} (set by the parent test)"));
        let dir = PathBuf::from(var("MMCI_SANDBOX_PROBE_DIR"));
        let objs = PathBuf::from(var("MMCI_SANDBOX_PROBE_OBJS"));
        assert_eq!(
            var("GITHUB_TOKEN"),
            PROBE_SECRET,
            "the parent's secret is ours"
        );
        let bwrap = sandbox::probe()
            .await
            .unwrap_or_else(|e| panic!("the sandbox cannot run for this caller: {e}"));
        let checkout = dir.join("checkout");
        let step = Step {
            checkout: &checkout,
            git_dir: None,
            inputs: &dir.join("inputs"),
            objs: &objs,
            ccache_dir: None,
            ccache_read_only: false,
            sandbox: Some(bwrap),
            log: &dir.join("log"),
        };
        let (d, c, o) = (dir.display(), checkout.display(), objs.display());
        // (script, whether it must succeed; None: either, the host is
        // checked after). /tmp is the sandbox's own tmpfs: a test dir there
        // takes a write to its own parents, which never reaches the host.
        let skeleton = (!dir.starts_with("/tmp")).then_some(false);
        let probes: Vec<(String, Option<bool>)> = vec![
            (format!("touch {d}/outside"), skeleton),
            (format!("touch {o}/../outside-objs"), skeleton),
            (
                "touch /usr/bin/planted /etc/alternatives/planted".into(),
                Some(false),
            ),
            ("mount -o remount,bind,rw /".into(), Some(false)),
            (format!("mount -o remount,bind,rw {c}"), Some(false)),
            (format!("touch {c}/planted"), Some(false)),
            (format!("mkdir -p {c}/nested/.git"), Some(false)),
            (format!("cat {d}/token"), Some(false)),
            ("cat /etc/shadow".into(), Some(false)),
            ("ls /root".into(), Some(false)),
            ("unshare -U true".into(), Some(false)),
            (format!("env | grep -F {PROBE_SECRET}"), Some(false)),
            ("env | grep -E '^GITHUB_TOKEN='".into(), Some(false)),
            // Controls: what a build needs still works.
            (format!("echo built > {o}/vmlinux"), Some(true)),
            (format!("cat {c}/Makefile"), Some(true)),
            (
                "test \"$(id -u):$(id -g)\" = 65534:65534".into(),
                Some(true),
            ),
            (
                "grep -qx 'CapEff:[[:space:]]*0000000000000000' /proc/self/status".into(),
                Some(true),
            ),
            ("test \"$HOME\" = /nonexistent".into(), Some(true)),
            // No network: only lo.
            (
                "awk -F: 'NR > 2 && $1 !~ /^ *lo$/ { exit 1 }' /proc/net/dev".into(),
                Some(true),
            ),
        ];
        let mut wrong = vec![];
        for (script, should) in &probes {
            let out = step
                .command("sh", vec!["-c".into(), script.clone()])
                .output()
                .await
                .unwrap();
            if should.is_some_and(|s| s != out.status.success()) {
                wrong.push(format!(
                    "{script}: {} ({}{})",
                    if out.status.success() {
                        "succeeded"
                    } else {
                        "failed"
                    },
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "inside the sandbox:\n{}",
            wrong.join("\n")
        );
        tiocsti_fails_inside(&step).await;
    }

    /// With a terminal as this process's controlling terminal (the user's
    /// shell, in real use): pushing a character into it with TIOCSTI works
    /// from a plain child (when the kernel allows TIOCSTI at all), and
    /// fails from the sandbox, which runs in a session of its own.
    async fn tiocsti_fails_inside(step: &Step<'_>) {
        let push = "open(my $t, '+<', '/dev/tty') or die \"open /dev/tty: $!\"; \
                    my $c = 'x'; ioctl($t, 0x5412, $c) or die \"TIOCSTI: $!\"";
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two fds; setsid and TIOCSCTTY act on this
        // process, which is a child of the test run made for this.
        unsafe {
            assert_eq!(
                libc::openpty(
                    &mut master,
                    &mut slave,
                    std::ptr::null_mut(),
                    std::ptr::null(),
                    std::ptr::null()
                ),
                0
            );
            // Closing the terminal at the end hangs up its session: us.
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            assert!(
                libc::setsid() > 0,
                "setsid: {}",
                std::io::Error::last_os_error()
            );
            assert_eq!(
                libc::ioctl(slave, libc::TIOCSCTTY, 0),
                0,
                "{}",
                std::io::Error::last_os_error()
            );
        }
        let legacy = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti")
            .is_ok_and(|s| s.trim() == "1");
        // SAFETY: geteuid has no preconditions.
        if legacy || unsafe { libc::geteuid() } == 0 {
            let out = tokio::process::Command::new("perl")
                .args(["-e", push])
                .output()
                .await
                .unwrap();
            assert!(
                out.status.success(),
                "the control: TIOCSTI from a plain child works here: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let out = step
            .command("perl", vec!["-e".into(), push.into()])
            .output()
            .await
            .unwrap();
        assert!(
            !out.status.success(),
            "TIOCSTI from inside the sandbox worked"
        );
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(why.contains("open /dev/tty"), "{why}");
        // SAFETY: closing the fds openpty gave us.
        unsafe {
            libc::close(slave);
            libc::close(master);
        }
    }

    /// C1/H2/H3/L9 of the security review: a build, as root (how CI runs)
    /// and as an unprivileged user, cannot remount its binds writable,
    /// write outside its object dir, read a token file or /etc/shadow, see
    /// the parent's GITHUB_TOKEN, or reach the terminal (the probes are in
    /// [`sandbox_probe_child`]; this runs it and checks the host after).
    #[tokio::test]
    async fn sandbox_holds_for_root_and_other_callers() {
        use std::os::unix::fs::PermissionsExt;
        // Not in /tmp, which is a tmpfs of the sandbox's own (see the probes).
        let tmp = match Path::new("/var/tmp").is_dir() {
            true => tempfile::tempdir_in("/var/tmp"),
            false => tempfile::tempdir(),
        }
        .unwrap();
        let dir = tmp.path();
        let mode =
            |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        mode(dir, 0o755);
        for sub in ["checkout", "inputs"] {
            std::fs::create_dir(dir.join(sub)).unwrap();
            mode(&dir.join(sub), 0o755);
        }
        std::fs::write(dir.join("checkout/Makefile"), "all:\n").unwrap();
        // Readable by anyone on the host: only the sandbox keeps it out.
        std::fs::write(dir.join("token"), "ghp_fromafile\n").unwrap();
        mode(&dir.join("token"), 0o644);
        // A copy anyone may run (the target dir may be under /root).
        let exe = dir.join("probe-exe");
        std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        mode(&exe, 0o755);

        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let mut callers: Vec<(&str, Vec<&str>)> = vec![("this user", vec![])];
        if root {
            callers.push((
                "uid 65534",
                vec![
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "--",
                ],
            ));
        } else {
            eprintln!("not root: the uid 65534 caller needs root to switch to it");
        }
        for (who, prefix) in callers {
            let objs = dir.join(format!("objs-{}", who.replace(' ', "-")));
            std::fs::create_dir(&objs).unwrap();
            mode(&objs, 0o755);
            if !prefix.is_empty() {
                std::os::unix::fs::chown(&objs, Some(65534), Some(65534)).unwrap();
            }
            let mut argv: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
            argv.push(exe.display().to_string());
            argv.extend(
                [
                    "--ignored",
                    "--exact",
                    "kernel::build::step::tests::sandbox_probe_child",
                    "--nocapture",
                    "--test-threads=1",
                ]
                .map(String::from),
            );
            let out = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("GITHUB_TOKEN", PROBE_SECRET)
                .env("MMCI_SANDBOX_PROBE_DIR", dir)
                .env("MMCI_SANDBOX_PROBE_OBJS", &objs)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "as {who}:\n{text}");
            assert!(
                text.contains("1 passed"),
                "as {who}: the probes did not run:\n{text}"
            );
            // On the host: only the object dir was written.
            assert_eq!(
                std::fs::read_to_string(objs.join("vmlinux")).unwrap(),
                "built\n"
            );
            for p in [
                "outside",
                "outside-objs",
                "checkout/planted",
                "checkout/nested",
            ] {
                assert!(!dir.join(p).exists(), "as {who}: {p} written");
            }
        }
    }
}
