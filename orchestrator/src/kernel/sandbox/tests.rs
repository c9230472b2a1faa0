use super::*;

#[test]
fn sandbox_arguments() {
    let spec = Spec {
        read_only: vec!["/w/checkout".into()],
        writable: vec!["/w/objs".into()],
        env: vec![("PATH".into(), "/usr/bin".into())],
    };
    let joined = args_with_tmp(
        &spec,
        Bwrap {
            disable_userns: true,
            tmpfs_size: true,
            seccomp: true,
        },
        1 << 30,
    )
    .join(" ");
    for want in [
        "--unshare-user --uid 65534 --gid 65534 --cap-drop ALL",
        "--unshare-net --unshare-pid --unshare-ipc --unshare-uts",
        "--unshare-cgroup --new-session --die-with-parent --disable-userns",
        "--ro-bind-try /usr /usr",
        "--ro-bind-try /etc/alternatives /etc/alternatives",
        "--dev /dev --proc /proc --size 1073741824 --tmpfs /tmp",
        "--ro-bind /w/checkout /w/checkout --bind /w/objs /w/objs --remount-ro /",
        "--clearenv --setenv PATH /usr/bin",
    ] {
        assert!(joined.contains(want), "{want:?} in {joined}");
    }
    for never in [
        "--ro-bind / /",
        "--bind / ",
        "/etc/shadow",
        "/root",
        "/home",
    ] {
        assert!(!joined.contains(never), "{never:?} in {joined}");
    }
    let old = args(
        &spec,
        Bwrap {
            disable_userns: false,
            tmpfs_size: false,
            seccomp: true,
        },
    )
    .join(" ");
    assert!(!old.contains("--disable-userns"));
    assert!(old.contains("--proc /proc --tmpfs /tmp"), "{old}");
}

/// Staged (bwrap as the sandbox user): each source from /dev/shm/bN in
/// [`bind_sources`]' order, bound at its own path, read-only first.
#[test]
fn staged_sandbox_arguments() {
    let spec = Spec {
        read_only: vec!["/root/w/checkout".into(), "/root/w/in".into()],
        writable: vec!["/root/w/objs".into()],
        env: vec![],
    };
    let b = Bwrap {
        disable_userns: true,
        tmpfs_size: true,
        seccomp: true,
    };
    for (staged, want) in [
        (
            true,
            "--ro-bind /dev/shm/b0 /root/w/checkout --ro-bind /dev/shm/b1 /root/w/in --bind /dev/shm/b2 /root/w/objs --remount-ro /",
        ),
        (
            false,
            "--ro-bind /root/w/checkout /root/w/checkout --ro-bind /root/w/in /root/w/in --bind /root/w/objs /root/w/objs --remount-ro /",
        ),
    ] {
        let joined = args_staged(&spec, b, 1 << 30, staged).join(" ");
        assert!(joined.contains(want), "{want} in {joined}");
    }
    assert_eq!(
        bind_sources(&spec),
        ["/root/w/checkout", "/root/w/in", "/root/w/objs"].map(PathBuf::from)
    );
}

#[test]
fn bwrap_features_from_its_help() {
    let v08 = "    --disable-userns             Disable further use of user namespaces inside sandbox\n    --size BYTES                 Set size of next argument (only for --tmpfs)\n";
    assert_eq!(
        Bwrap::from_help(v08),
        Bwrap {
            disable_userns: true,
            tmpfs_size: true,
            seccomp: false,
        }
    );
    assert_eq!(
        Bwrap::from_help(
            "    --add-seccomp-fd FD   Load and use seccomp rules from FD (repeatable)\n"
        ),
        Bwrap {
            disable_userns: false,
            tmpfs_size: false,
            seccomp: true,
        }
    );
}

#[test]
fn build_limits_for_small_and_large_hosts() {
    let small = BuildLimits::for_host(2048);
    assert_eq!(small.tree.memory_bytes, 2 << 30, "at least 2 GiB");
    let here = BuildLimits::for_host(24 * 1024);
    assert_eq!(here.tree.memory_bytes, 12 << 30, "half the RAM");
    assert_eq!(here.tree.pids, 4096);
    assert_eq!(here.tree.file_bytes, 4 << 30);
    assert_eq!(here.tmp_bytes, 1 << 30);
    // Well under the 4 h a hung build held the slot lock before.
    assert_eq!(here.wall, std::time::Duration::from_secs(3600));
}

#[test]
fn environment_is_an_allow_list() {
    let host = [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/root"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("MMCI_PATCHWORK_TOKEN", "pw"),
        ("MMCI_SMTP_PASSWORD", "smtp"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("SSH_AUTH_SOCK", "/run/agent"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C"),
        ("KBUILD_VERBOSE", "1"),
        ("CCACHE_MAXSIZE", "5G"),
        ("MAKEFLAGS", "-j99 --jobserver-auth=3,4"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let names = |env: Vec<(String, String)>| -> Vec<String> {
        env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
    };
    assert_eq!(
        names(base_env(host.clone(), false)),
        [
            "PATH=/usr/bin:/bin",
            "HOME=/nonexistent",
            "LANG=C.UTF-8",
            "LC_ALL=C",
            "KBUILD_VERBOSE=1"
        ]
    );
    assert!(names(base_env(host, true)).contains(&"CCACHE_MAXSIZE=5G".to_string()));
    // No PATH at all: the system's.
    assert_eq!(base_env([], false)[0].0, "PATH");
}

#[test]
fn fixes_name_the_cause() {
    let facts = |f: fn(&mut HostFacts)| {
        let mut h = HostFacts::default();
        f(&mut h);
        h
    };
    for (stderr, host, want) in [
        (
            "bwrap: setting up uid map: Permission denied",
            facts(|h| h.apparmor_restricts_userns = true),
            "AppArmor",
        ),
        (
            "bwrap: No permissions to creating new namespace",
            facts(|h| h.no_user_namespaces = true),
            "max_user_namespaces",
        ),
        (
            "bwrap: No permissions to creating new namespace",
            facts(|h| h.unprivileged_userns_clone_off = true),
            "unprivileged_userns_clone=1",
        ),
        (
            "bwrap: Creating new namespace failed: Operation not permitted",
            facts(|h| h.container = true),
            "seccomp=unconfined",
        ),
        (
            "bwrap: Unknown option --disable-userns",
            HostFacts::default(),
            "too old",
        ),
        ("bwrap: something else", HostFacts::default(), "mmci doctor"),
        // Root is not subject to the unprivileged-userns switches.
        (
            "bwrap: Creating new namespace failed",
            facts(|h| {
                h.apparmor_restricts_userns = true;
                h.root = true;
                h.container = true
            }),
            "seccomp=unconfined",
        ),
    ] {
        let fix = fix_for(stderr, &host);
        assert!(fix.contains(want), "{stderr} {host:?}: {fix}");
    }
}

#[test]
fn reads_back_refuse_symlinks_anywhere_below_the_base() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("objs");
    let secret = tmp.path().join("token");
    std::fs::write(&secret, "ghp_secret\n").unwrap();
    std::fs::create_dir_all(base.join("include/config")).unwrap();
    std::fs::write(base.join("include/config/kernel.release"), "6.12.0\n").unwrap();
    let rel = Path::new("include/config/kernel.release");
    assert_eq!(read_beneath(&base, rel).unwrap(), "6.12.0\n");

    // The file itself a link to the token.
    std::fs::remove_file(base.join(rel)).unwrap();
    symlink(&secret, base.join(rel)).unwrap();
    let e = read_beneath(&base, rel).unwrap_err();
    assert!(e.to_string().contains("symlink"), "{e}");
    // A directory on the way a link.
    std::fs::remove_dir_all(base.join("include")).unwrap();
    std::fs::create_dir_all(tmp.path().join("elsewhere/config")).unwrap();
    std::fs::copy(&secret, tmp.path().join("elsewhere/config/kernel.release")).unwrap();
    symlink(tmp.path().join("elsewhere"), base.join("include")).unwrap();
    assert!(read_beneath(&base, rel).is_err());
    // A FIFO (would block) or a dir: not a regular file.
    std::fs::create_dir_all(base.join("d")).unwrap();
    assert!(read_beneath(&base, Path::new("d")).is_err());
    let fifo = base.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(read_beneath(&base, Path::new("fifo")).is_err());
    for escape in ["../token", "/etc/passwd"] {
        assert!(read_beneath(&base, Path::new(escape)).is_err(), "{escape}");
    }

    // Copies the same way, and never writes through a link at `to`.
    std::fs::write(base.join("vmlinux"), "ELF").unwrap();
    let to = tmp.path().join("out-vmlinux");
    symlink(&secret, &to).unwrap();
    copy_beneath(&base, Path::new("vmlinux"), &to).unwrap();
    assert_eq!(std::fs::read_to_string(&to).unwrap(), "ELF");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "ghp_secret\n");
}
