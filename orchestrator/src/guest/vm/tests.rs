use super::*;
use rstest::rstest;

fn spec(arch: Arch, accel: Accel) -> VmSpec {
    VmSpec {
        arch,
        accel,
        vcpus: 2,
        memory_mb: 1024,
        kernel: "/k/bzImage".into(),
        initrd: "/r/initrd.cpio".into(),
        cmdline: kernel_cmdline(arch, &["mmci.threads=8".into()]),
        console_log: "/r/console.log".into(),
        qemu_stderr: "/r/qemu-stderr.log".into(),
        record_socket: "/r/records.sock".into(),
        disks: vec![Disk {
            path: "/r/swap.img".into(),
            serial: "mmci-swap".into(),
            readonly: false,
        }],
    }
}

fn value_after<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
    args.windows(2)
        .filter(|w| w[0] == flag)
        .map(|w| w[1].as_str())
        .collect()
}

#[rstest]
#[case(Arch::X86_64, Accel::Tcg, "pc", "tcg", "max", "console=ttyS0")]
#[case(Arch::X86_64, Accel::Kvm, "pc", "kvm", "host", "console=ttyS0")]
#[case(Arch::Arm64, Accel::Tcg, "virt", "tcg", "max", "console=ttyAMA0")]
#[case(Arch::X86_64, Accel::TcgIcount, "pc", "tcg", "max", "console=ttyS0")]
fn machine_accel_cpu_console(
    #[case] arch: Arch,
    #[case] accel: Accel,
    #[case] machine: &str,
    #[case] accel_name: &str,
    #[case] cpu: &str,
    #[case] console: &str,
) {
    let args = qemu_args(&spec(arch, accel));
    assert_eq!(value_after(&args, "-machine"), [machine]);
    assert_eq!(value_after(&args, "-accel"), [accel_name]);
    assert_eq!(value_after(&args, "-cpu"), [cpu]);
    assert!(value_after(&args, "-append")[0].starts_with(console));
}

#[test]
fn icount_only_where_asked_and_never_tied_to_host_time() {
    let icount = qemu_args(&spec(Arch::X86_64, Accel::TcgIcount));
    assert_eq!(
        value_after(&icount, "-icount"),
        [format!("shift={ICOUNT_SHIFT},align=off,sleep=off")]
    );
    for accel in [Accel::Tcg, Accel::Kvm] {
        assert!(value_after(&qemu_args(&spec(Arch::X86_64, accel)), "-icount").is_empty());
    }
}

#[test]
fn no_network_no_defaults_no_reboot() {
    let args = qemu_args(&spec(Arch::X86_64, Accel::Tcg));
    for flag in ["-nodefaults", "-no-user-config", "-no-reboot"] {
        assert!(args.iter().any(|a| a == flag), "{flag}");
    }
    assert_eq!(value_after(&args, "-nic"), ["none"]);
    assert!(!args
        .iter()
        .any(|a| a.contains("netdev") || a.contains("e1000")));
}

#[test]
fn resources_kernel_console_records_and_disks() {
    let args = qemu_args(&spec(Arch::X86_64, Accel::Tcg));
    assert_eq!(value_after(&args, "-smp"), ["2"]);
    assert_eq!(value_after(&args, "-m"), ["1024M"]);
    assert_eq!(value_after(&args, "-kernel"), ["/k/bzImage"]);
    assert_eq!(value_after(&args, "-initrd"), ["/r/initrd.cpio"]);
    assert_eq!(value_after(&args, "-serial"), ["file:/r/console.log"]);
    assert_eq!(
        value_after(&args, "-chardev"),
        ["socket,id=records,path=/r/records.sock"]
    );
    assert_eq!(
        value_after(&args, "-device"),
        [
            "virtio-serial-pci,id=vser0",
            "virtserialport,bus=vser0.0,chardev=records,name=org.mmci.records",
            "virtio-blk-pci,drive=disk0,serial=mmci-swap"
        ]
    );
    assert_eq!(
        value_after(&args, "-drive"),
        ["file=/r/swap.img,format=raw,if=none,id=disk0,cache=unsafe,aio=threads"]
    );
}

#[test]
fn image_disk_is_read_only_and_there_is_no_nic() {
    let mut s = spec(Arch::X86_64, Accel::Tcg);
    s.disks.push(Disk {
        path: "/w/images/tools-0123/image.erofs".into(),
        serial: "mmci-image".into(),
        readonly: true,
    });
    let args = qemu_args(&s);
    assert_eq!(
        value_after(&args, "-drive")[1],
        "file=/w/images/tools-0123/image.erofs,format=raw,if=none,id=disk1,cache=unsafe,aio=threads,readonly=on"
    );
    assert_eq!(value_after(&args, "-nic"), ["none"]);
    // Nothing of the host's file system is shared: no 9p, virtiofs or fsdev.
    assert!(!args.iter().any(|a| a.contains("9p")
        || a.contains("virtfs")
        || a.contains("fsdev")
        || a.contains("vhost-user")));
}

#[test]
fn qemu_runs_under_its_own_seccomp_filter() {
    for accel in [Accel::Kvm, Accel::Tcg, Accel::TcgIcount] {
        let args = qemu_args(&spec(Arch::X86_64, accel));
        assert_eq!(
            value_after(&args, "-sandbox"),
            ["on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"]
        );
    }
}

#[test]
fn qemu_environment_is_path_locale_and_scratch_only() {
    let scratch = Path::new("/w/scratch/run-1");
    let names = |env: Vec<(String, String)>| -> Vec<String> {
        env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
    };
    assert_eq!(
        names(qemu_env(Some("/opt/qemu/bin:/usr/bin".into()), scratch)),
        [
            "PATH=/opt/qemu/bin:/usr/bin",
            "LC_ALL=C",
            "TMPDIR=/w/scratch/run-1"
        ]
    );
    assert_eq!(
        names(qemu_env(None, scratch))[0],
        "PATH=/usr/local/bin:/usr/bin:/bin"
    );
    assert_eq!(
        scratch_dir(&spec(Arch::X86_64, Accel::Tcg)),
        Path::new("/r")
    );
}

/// M4: QEMU in bwrap sees the system dirs, its kernel, initramfs and
/// image read-only, its scratch dir and console writable, /dev/kvm only
/// under KVM, no network, and only `env`.
#[test]
fn qemu_bwrap_binds_and_namespaces() {
    let bwrap = crate::kernel::sandbox::Bwrap {
        disable_userns: true,
        tmpfs_size: true,
        seccomp: true,
    };
    let mut s = spec(Arch::X86_64, Accel::Tcg);
    s.disks.push(Disk {
        path: "/w/images/tools/image.erofs".into(),
        serial: "mmci-image".into(),
        readonly: true,
    });
    let env = qemu_env(Some("/usr/bin".into()), Path::new("/r"));
    let usr_qemu = Path::new("/usr/bin/qemu-system-x86_64");
    let joined = qemu_bwrap_args(&s, bwrap, &env, usr_qemu).join(" ");
    for want in [
        "--unshare-user --uid 65534 --gid 65534 --cap-drop ALL --unshare-net --unshare-pid",
        "--new-session --die-with-parent --disable-userns",
        "--ro-bind-try /usr /usr",
        "--dev /dev --proc /proc --size 16777216 --tmpfs /tmp",
        "--bind /r /r --ro-bind /k/bzImage /k/bzImage --ro-bind /r/initrd.cpio /r/initrd.cpio",
        "--bind /r/swap.img /r/swap.img",
        "--ro-bind /w/images/tools/image.erofs /w/images/tools/image.erofs",
        "--bind /r/console.log /r/console.log --remount-ro /",
        "--clearenv --setenv PATH /usr/bin --setenv LC_ALL C --setenv TMPDIR /r",
    ] {
        assert!(joined.contains(want), "{want:?} in {joined}");
    }
    for never in ["/dev/kvm", "--share-net", "--ro-bind / /", "/home", "/root"] {
        assert!(!joined.contains(never), "{never:?} in {joined}");
    }
    let kvm = qemu_bwrap_args(&spec(Arch::X86_64, Accel::Kvm), bwrap, &env, usr_qemu).join(" ");
    assert!(kvm.contains("--dev-bind /dev/kvm /dev/kvm"), "{kvm}");
    let old = crate::kernel::sandbox::Bwrap {
        disable_userns: false,
        tmpfs_size: false,
        seccomp: false,
    };
    let joined = qemu_bwrap_args(&s, old, &env, usr_qemu).join(" ");
    assert!(!joined.contains("--disable-userns") && !joined.contains("--size"));
    // A QEMU of its own prefix: that prefix read-only, nothing above.
    let opt = qemu_bwrap_args(
        &s,
        bwrap,
        &env,
        Path::new("/opt/qemu/bin/qemu-system-x86_64"),
    )
    .join(" ");
    assert!(opt.contains("--ro-bind /opt/qemu /opt/qemu"), "{opt}");
    assert!(!opt.contains("--ro-bind /opt /opt"), "{opt}");
}

#[test]
fn paths_are_made_absolute_for_the_binds() {
    let mut s = spec(Arch::X86_64, Accel::Tcg);
    s.kernel = "bzImage".into();
    let cwd = std::env::current_dir().unwrap();
    let a = absolute(&s);
    assert_eq!(a.kernel, cwd.join("bzImage"));
    assert_eq!(a.initrd, Path::new("/r/initrd.cpio"));
    assert_eq!(a.disks[0].path, Path::new("/r/swap.img"));
}

/// As the sandbox user, bwrap binds each source from its staged path
/// (the child's /dev/shm/bN), at the source's own path, in the same order
/// and with the same read-only or writable choice.
#[test]
fn qemu_bwrap_staged_binds() {
    let bwrap = crate::kernel::sandbox::Bwrap {
        disable_userns: true,
        tmpfs_size: true,
        seccomp: true,
    };
    let mut s = spec(Arch::X86_64, Accel::Tcg);
    s.disks.push(Disk {
        path: "/w/images/tools/image.erofs".into(),
        serial: "mmci-image".into(),
        readonly: true,
    });
    let env = qemu_env(Some("/usr/bin".into()), Path::new("/r"));
    for (qemu, want) in [
        (
            "/usr/bin/qemu-system-x86_64",
            "--bind /dev/shm/b0 /r --ro-bind /dev/shm/b1 /k/bzImage --ro-bind /dev/shm/b2 /r/initrd.cpio --bind /dev/shm/b3 /r/swap.img --ro-bind /dev/shm/b4 /w/images/tools/image.erofs --bind /dev/shm/b5 /r/console.log --remount-ro /",
        ),
        (
            "/opt/qemu/bin/qemu-system-x86_64",
            "--ro-bind /dev/shm/b0 /opt/qemu --bind /dev/shm/b1 /r --ro-bind /dev/shm/b2 /k/bzImage",
        ),
    ] {
        let joined = qemu_bwrap_args_staged(&s, bwrap, &env, Path::new(qemu), true).join(" ");
        assert!(joined.contains(want), "{want} in {joined}");
        assert_eq!(
            qemu_binds(&s, Path::new(qemu)).len(),
            joined.matches("/dev/shm/b").count()
        );
    }
}

#[test]
fn confinement_is_said() {
    let confined = Confinement::Bwrap {
        run_as: "as uid 999 (mmci-sandbox)".into(),
    };
    assert!(
        confined
            .to_string()
            .starts_with("QEMU confined: bwrap as uid 999 (mmci-sandbox) (no network"),
        "{confined}"
    );
    let not = Confinement::SeccompOnly {
        why: "bwrap (bubblewrap) is not installed".into(),
    };
    assert_eq!(
        not.to_string(),
        "QEMU not confined by bwrap (bwrap (bubblewrap) is not installed): -sandbox on and environment cleared only"
    );
}

#[test]
fn cmdline_panics_end_the_guest() {
    assert_eq!(
        kernel_cmdline(Arch::X86_64, &["mmci.threads=8".into()]),
        "console=ttyS0 panic=-1 oops=panic rdinit=/init no_timer_check mmci.threads=8"
    );
}
