//! How QEMU is confined: its environment ([`qemu_env`]), bwrap around it
//! where the build sandbox's bwrap runs ([`qemu_bwrap_args`]), and what a
//! run says about it ([`Confinement`]). QEMU's own seccomp filter is an
//! argument of [`super::qemu_args`] ([`super::QEMU_SANDBOX`]).

use std::path::Path;

use super::{Accel, VmSpec};

/// QEMU's whole environment: the host's PATH (the same QEMU and firmware
/// lookup), the C locale, and TMPDIR in the run's scratch dir; nothing
/// else of mmci's (no GITHUB_TOKEN, SMTP password or cloud credential of a
/// shell that started `mmci run`).
pub fn qemu_env(host_path: Option<String>, scratch: &Path) -> Vec<(String, String)> {
    vec![
        (
            "PATH".to_string(),
            host_path.unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        ),
        ("LC_ALL".to_string(), "C".to_string()),
        ("TMPDIR".to_string(), scratch.display().to_string()),
    ]
}

/// The run's scratch dir: where its record socket, initramfs and disks live.
pub(super) fn scratch_dir(spec: &VmSpec) -> &Path {
    spec.record_socket.parent().unwrap_or(Path::new("/"))
}

/// How QEMU ran: in bwrap or not (and why not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confinement {
    /// Inside bwrap ([`qemu_bwrap_args`]), with `-sandbox` and the cleared
    /// environment, run as `run_as` ("as uid 999 (mmci-sandbox)", see
    /// [`crate::kernel::sandbox::user::RunAs`]).
    Bwrap { run_as: String },
    /// bwrap cannot run here (`why`): `-sandbox` and the cleared
    /// environment only.
    SeccompOnly { why: String },
}

impl std::fmt::Display for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Confinement::Bwrap { run_as } => write!(
                f,
                "QEMU confined: bwrap {run_as} (no network, own user, pid, IPC and UTS namespaces, no capabilities, only the system dirs, the kernel, initramfs and images read-only, the scratch dir and console file writable), -sandbox on, environment cleared",
            ),
            Confinement::SeccompOnly { why } => write!(
                f,
                "QEMU not confined by bwrap ({why}): -sandbox on and environment cleared only"
            ),
        }
    }
}

/// bwrap's arguments around QEMU, up to (not including) the `--` before
/// it: the build sandbox's system dirs and namespaces (see
/// [`crate::kernel::sandbox`]), no network (the record socket is a path in
/// the scratch dir, which needs none), the kernel, the initramfs and every
/// read-only disk bound read-only, the scratch dir (socket, swap and
/// scenario disks) and the console file writable, /dev/kvm only under
/// KVM, and `env` as the whole environment. QEMU's stderr is an fd mmci
/// opened, so it needs no bind.
/// A QEMU outside the system dirs (`/opt/qemu/bin/qemu-system-x86_64`)
/// gets its prefix (`/opt/qemu`, where its firmware is) bound read-only.
pub fn qemu_bwrap_args(
    spec: &VmSpec,
    bwrap: crate::kernel::sandbox::Bwrap,
    env: &[(String, String)],
    qemu: &Path,
) -> Vec<String> {
    qemu_bwrap_args_staged(spec, bwrap, env, qemu, false)
}

/// The binds of QEMU's bwrap, in order: (bwrap's option, the path).
pub fn qemu_binds(spec: &VmSpec, qemu: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
    use crate::kernel::sandbox::SYSTEM_DIRS;
    let mut binds = vec![];
    if let Some(prefix) = qemu.parent().and_then(Path::parent) {
        if !SYSTEM_DIRS.iter().any(|d| prefix.starts_with(d)) && prefix != Path::new("/") {
            binds.push(("--ro-bind", prefix.to_path_buf()));
        }
    }
    binds.push(("--bind", scratch_dir(spec).to_path_buf()));
    binds.push(("--ro-bind", spec.kernel.clone()));
    binds.push(("--ro-bind", spec.initrd.clone()));
    for disk in &spec.disks {
        let how = if disk.readonly { "--ro-bind" } else { "--bind" };
        binds.push((how, disk.path.clone()));
    }
    binds.push(("--bind", spec.console_log.clone()));
    binds
}

/// [`qemu_bwrap_args`], with the source of the `i`-th of [`qemu_binds`]
/// at [`crate::kernel::sandbox::user::staged_path`]`(i)` when `staged`
/// (bwrap run as the sandbox user; see that module).
pub fn qemu_bwrap_args_staged(
    spec: &VmSpec,
    bwrap: crate::kernel::sandbox::Bwrap,
    env: &[(String, String)],
    qemu: &Path,
    staged: bool,
) -> Vec<String> {
    // A 16 MiB /tmp: QEMU writes its temporary files to TMPDIR, the
    // scratch dir.
    let mut a = crate::kernel::sandbox::isolation_args(
        bwrap,
        "mmci-qemu",
        "--unshare-cgroup-try",
        16 << 20,
    );
    if spec.accel == Accel::Kvm {
        a.extend(["--dev-bind", "/dev/kvm", "/dev/kvm"].map(String::from));
    }
    let binds = qemu_binds(spec, qemu);
    a.extend(crate::kernel::sandbox::user::bind_args(
        binds.iter().map(|(how, p)| (*how, p.as_path())),
        staged,
    ));
    a.extend(["--remount-ro", "/"].map(String::from));
    a.push("--clearenv".into());
    for (k, v) in env {
        a.extend(["--setenv".to_string(), k.clone(), v.clone()]);
    }
    a
}

/// Who QEMU's bwrap runs as, and the supplementary groups it keeps: the
/// build sandbox's user (see [`crate::kernel::sandbox::user`]), with
/// /dev/kvm's group under KVM where that is how the device is shared; as
/// root (said) where that user cannot open /dev/kvm.
pub(super) fn qemu_run_as(accel: Accel) -> (crate::kernel::sandbox::user::RunAs, Vec<u32>) {
    use crate::kernel::sandbox::user::{self, RunAs};
    let run_as = user::run_as();
    let RunAs::User(u) = &run_as else {
        return (run_as, vec![]);
    };
    if accel != Accel::Kvm {
        return (run_as, vec![]);
    }
    use std::os::unix::fs::MetadataExt;
    let kvm = match std::fs::metadata("/dev/kvm") {
        Ok(m) => user::kvm_groups(u, m.uid(), m.gid(), m.mode() & 0o777),
        Err(e) => Err(format!("/dev/kvm: {e}")),
    };
    match kvm {
        Ok(groups) => (run_as, groups),
        Err(why) => (RunAs::Root(why), vec![]),
    }
}

/// The build sandbox's probe, once per mmci process: QEMU is started many
/// times, and whether bwrap runs does not change.
pub(super) async fn bwrap_for_qemu() -> Result<crate::kernel::sandbox::Bwrap, String> {
    static PROBE: tokio::sync::OnceCell<Result<crate::kernel::sandbox::Bwrap, String>> =
        tokio::sync::OnceCell::const_new();
    PROBE
        .get_or_init(|| async { crate::kernel::sandbox::probe().await.map_err(|e| e.why) })
        .await
        .clone()
}
