//! A hostile build step against the step's limits and the sandbox's
//! seccomp filter, run for real through [`Step::run_limited`] and
//! [`Step::command`] with a fake Makefile, not a kernel (M1 and L1 of the
//! security review).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::*;

/// A checkout whose Makefile has `target: recipe`, an object dir and a
/// log, outside /tmp (the sandbox's own).
fn fake_tree(recipe: &str) -> tempfile::TempDir {
    let tmp = match Path::new("/var/tmp").is_dir() {
        true => tempfile::tempdir_in("/var/tmp"),
        false => tempfile::tempdir(),
    }
    .unwrap();
    for sub in ["checkout", "inputs", "objs"] {
        std::fs::create_dir(tmp.path().join(sub)).unwrap();
    }
    std::fs::write(
        tmp.path().join("checkout/Makefile"),
        format!("hostile:\n\t{recipe}\n"),
    )
    .unwrap();
    tmp
}

fn fake_step(dir: &Path, sandbox: Option<sandbox::Bwrap>) -> Step<'_> {
    // Leaked: the paths live as long as the test.
    let leak = |p: PathBuf| -> &'static Path { Box::leak(p.into_boxed_path()) };
    Step {
        checkout: leak(dir.join("checkout")),
        git_dir: None,
        inputs: leak(dir.join("inputs")),
        objs: leak(dir.join("objs")),
        ccache_dir: None,
        ccache_read_only: false,
        sandbox,
        log: leak(dir.join("build.log")),
    }
}

/// Processes on the host now.
fn host_tasks() -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .count()
}

/// M1 of the security review: a build step that runs a fork bomb is
/// held at its task limit (the host's process count stays within it
/// and the host can still fork), is killed at its wall clock, leaves
/// nothing running, and its log says which limit it hit.
#[tokio::test]
async fn fork_bomb_in_a_build_step_is_held_and_stopped() {
    let sandbox = sandbox::probe().await.expect("the build sandbox runs here");
    let tmp = fake_tree("@sh -c 'b() { b | b & }; b; sleep 600'");
    let step = fake_step(tmp.path(), Some(sandbox));
    let mut limits = sandbox::BuildLimits::for_host(crate::host::facts::memory_mb());
    limits.tree.pids = 512;
    limits.wall = Duration::from_secs(20);
    let before = host_tasks();
    let watching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let watching = watching.clone();
        std::thread::spawn(move || {
            let (mut most, mut forks_ok) = (0, true);
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(host_tasks());
                forks_ok &= std::process::Command::new("true")
                    .status()
                    .is_ok_and(|s| s.success());
                std::thread::sleep(Duration::from_millis(200));
            }
            (most, forks_ok)
        })
    };
    let t0 = std::time::Instant::now();
    let err = step
        .run_limited("make", vec![], "make hostile", &limits)
        .await
        .unwrap_err();
    let took = t0.elapsed();
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    let (most, forks_ok) = sampler.join().unwrap();
    let log = std::fs::read_to_string(tmp.path().join("build.log")).unwrap();
    assert!(
        matches!(err, BuildError::Step(CommandError::TimedOut { .. })),
        "{err:?}\n{log}"
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        log.contains("limits: 512 tasks") && (log.contains("cgroup") || !root),
        "{log}"
    );
    if log.contains("cgroup") {
        assert!(
            log.contains("fork(s) refused at its limit of 512 tasks"),
            "{log}"
        );
    }
    // Other processes come and go on a shared host: a margin of 200.
    assert!(
        most < before + 512 + 200,
        "{most} tasks on the host during the bomb, {before} before"
    );
    assert!(forks_ok, "the host could not fork during the bomb");
    // Nothing of the bomb is left (bwrap's pid namespace and the
    // cgroup took it down).
    let t1 = std::time::Instant::now();
    while host_tasks() > before + 50 {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "{} tasks left on the host, {before} before",
            host_tasks()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// M1: a build step writing 20 GB into /tmp is stopped at the sized
/// /tmp (this host's limits, as builds get them), and where bwrap could
/// not size it (forced off here), at the step's memory limit, which
/// counts tmpfs pages; both in seconds, the host's /tmp untouched.
#[tokio::test]
async fn twenty_gigabytes_into_tmp_are_stopped() {
    let bwrap = sandbox::probe().await.expect("the build sandbox runs here");
    assert!(bwrap.tmpfs_size, "this bwrap sizes /tmp (--size, 0.8+)");
    let name = format!("mmci-fill-{}", std::process::id());
    let tmp = fake_tree(&format!(
        "@head -c 20G /dev/zero > /tmp/{name} && echo all-20G-written"
    ));
    let limits = sandbox::BuildLimits::for_host(crate::host::facts::memory_mb());
    let mut small_memory = limits;
    small_memory.tree.memory_bytes = 256 << 20;
    let old_bwrap = sandbox::Bwrap {
        tmpfs_size: false,
        ..bwrap
    };
    for (sandbox, limits, want) in [
        (bwrap, limits, "No space left on device"),
        (
            old_bwrap,
            small_memory,
            "killed at its memory limit of 256 MiB",
        ),
    ] {
        let _ = std::fs::remove_file(tmp.path().join("build.log"));
        let step = fake_step(tmp.path(), Some(sandbox));
        let t0 = std::time::Instant::now();
        let err = step
            .run_limited("make", vec![], "make hostile", &limits)
            .await
            .unwrap_err();
        let took = t0.elapsed();
        let log = std::fs::read_to_string(tmp.path().join("build.log")).unwrap();
        assert!(
            matches!(err, BuildError::Step(CommandError::Failed { .. })),
            "{err:?}\n{log}"
        );
        assert!(took < Duration::from_secs(60), "{took:?}\n{log}");
        assert!(log.contains(want), "{want:?} in\n{log}");
        assert!(!log.contains("all-20G-written"), "{log}");
        assert!(!Path::new("/tmp").join(&name).exists());
    }
}

/// Each denied syscall, called from perl: (name, syscall number and
/// arguments, the errno the filter gives).
fn denied_calls() -> Vec<(&'static str, String, i32)> {
    let (eperm, enosys) = (libc::EPERM, libc::ENOSYS);
    let newuser_sigchld = libc::CLONE_NEWUSER as i64 | libc::SIGCHLD as i64;
    vec![
        ("keyctl", format!("{}, 0, -3, 1", libc::SYS_keyctl), eperm),
        (
            "add_key",
            format!("{}, 0, 0, 0, 0, 0", libc::SYS_add_key),
            eperm,
        ),
        (
            "request_key",
            format!("{}, 0, 0, 0, 0", libc::SYS_request_key),
            eperm,
        ),
        ("bpf", format!("{}, 9999, 0, 0", libc::SYS_bpf), eperm),
        (
            "userfaultfd",
            format!("{}, 0", libc::SYS_userfaultfd),
            eperm,
        ),
        (
            "io_uring_setup",
            format!("{}, 1, 0", libc::SYS_io_uring_setup),
            eperm,
        ),
        (
            "io_uring_enter",
            format!("{}, -1, 0, 0, 0, 0, 0", libc::SYS_io_uring_enter),
            eperm,
        ),
        (
            "io_uring_register",
            format!("{}, -1, 0, 0, 0", libc::SYS_io_uring_register),
            eperm,
        ),
        (
            "unshare",
            format!("{}, {}", libc::SYS_unshare, libc::CLONE_NEWUSER),
            eperm,
        ),
        (
            "clone",
            format!("{}, {newuser_sigchld}, 0, 0, 0, 0", libc::SYS_clone),
            eperm,
        ),
        ("clone3", format!("{}, 0, 0", libc::SYS_clone3), enosys),
    ]
}

/// A perl script making each call and printing `name result errno`; a
/// clone that made a child ends the child at once.
fn syscall_script(calls: &[(&str, String, i32)]) -> String {
    let mut script = String::from("require POSIX; $| = 1; ");
    for (name, args, _) in calls {
        script.push_str(&format!(
            "{{ $! = 0; my $r = syscall({args}); POSIX::_exit(0) if $r == 0 && '{name}' =~ /clone/; print \"{name} $r \", $! + 0, \"\\n\"; waitpid(-1, 0) if $r > 0 && '{name}' =~ /clone/; }} "
        ));
    }
    script
}

/// (name, errno) of each call that failed (result -1) in `out`.
fn errnos(out: &[u8]) -> Vec<(String, i32)> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, r, errno) = (w.next()?, w.next()?, w.next()?);
            if r != "-1" {
                return None;
            }
            Some((name.to_string(), errno.parse().ok()?))
        })
        .collect()
}

/// L1 of the security review: the sandbox's seccomp filter. Inside,
/// each denied syscall fails with EPERM (clone3 with ENOSYS), and
/// `unshare -U true` fails even when bwrap lacks `--disable-userns`
/// (forced off here, as bwrap 0.6 of Ubuntu 22.04 is); the controls:
/// outside the sandbox keyctl works and bpf gives EINVAL, and without
/// the filter `unshare -U true` works in that sandbox.
#[tokio::test]
async fn seccomp_denies_user_namespaces_keyrings_bpf_and_io_uring() {
    let bwrap = sandbox::probe().await.expect("the build sandbox runs here");
    assert!(bwrap.seccomp, "this bwrap takes --add-seccomp-fd (0.5+)");
    let tmp = fake_tree("@true");
    let old = sandbox::Bwrap {
        disable_userns: false,
        ..bwrap
    };
    let calls = denied_calls();
    let script = syscall_script(&calls);
    let inside = fake_step(tmp.path(), Some(old))
        .command("perl", vec!["-e".into(), script.clone()])
        .output()
        .await
        .unwrap();
    let got = errnos(&inside.stdout);
    let want: Vec<(String, i32)> = calls.iter().map(|(n, _, e)| (n.to_string(), *e)).collect();
    assert_eq!(
        got,
        want,
        "inside the sandbox:\n{}{}",
        String::from_utf8_lossy(&inside.stdout),
        String::from_utf8_lossy(&inside.stderr)
    );
    let outside = std::process::Command::new("perl")
        .args(["-e", &script])
        .output()
        .unwrap();
    let outside = errnos(&outside.stdout);
    assert!(
        !outside.iter().any(|(n, _)| n == "keyctl"),
        "keyctl works outside: {outside:?}"
    );
    assert!(
        outside.contains(&("bpf".to_string(), libc::EINVAL)),
        "{outside:?}"
    );

    let unshare = |b: sandbox::Bwrap| {
        let step = fake_step(tmp.path(), Some(b));
        async move {
            step.command("unshare", vec!["-U".into(), "true".into()])
                .output()
                .await
                .unwrap()
        }
    };
    let denied = unshare(old).await;
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("Operation not permitted"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    let without_filter = unshare(sandbox::Bwrap {
        seccomp: false,
        ..old
    })
    .await;
    assert!(
        without_filter.status.success(),
        "the control: without the filter nor --disable-userns, unshare -U works: {}",
        String::from_utf8_lossy(&without_filter.stderr)
    );
}
