//! The build sandbox's seccomp filters: which syscalls a sandboxed build
//! is refused, compiled to BPF with seccompiler, and handed to bwrap in
//! memory files.

/// Syscalls the sandboxed program gets EPERM for: the kernel's surfaces a
/// build has no use for and that kernel exploits start from (new user
/// namespaces, whose root gets nf_tables and friends; keyrings; eBPF;
/// userfaultfd, which holds a kernel thread at a page fault; io_uring).
/// With bubblewrap < 0.8, which lacks `--disable-userns`, this filter is
/// what keeps the sandbox from making user namespaces.
pub const DENIED_SYSCALLS: &[&str] = &[
    "unshare(CLONE_NEWUSER)",
    "clone(CLONE_NEWUSER)",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
];

/// The sandbox's seccomp filters as BPF programs (bwrap reads each from an
/// fd, `--add-seccomp-fd`), for this host's architecture:
/// - [`DENIED_SYSCALLS`] return EPERM, everything else is allowed;
/// - clone3 returns ENOSYS: its flags are in memory a filter cannot read,
///   and ENOSYS makes the C library fall back to clone, whose flags the
///   first filter sees (EPERM would break every thread creation).
///
/// A syscall of another ABI (i386 `int 0x80` on x86_64) kills the process.
pub fn seccomp_filters() -> Result<Vec<Vec<u8>>, String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let newuser = || -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        let flag = libc::CLONE_NEWUSER as u64;
        Ok(vec![SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )?])?])
    };
    let build = || -> Result<Vec<BpfProgram>, seccompiler::BackendError> {
        let mut denied = std::collections::BTreeMap::new();
        denied.insert(libc::SYS_unshare, newuser()?);
        denied.insert(libc::SYS_clone, newuser()?);
        for nr in [
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_bpf,
            libc::SYS_userfaultfd,
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            denied.insert(nr, vec![]);
        }
        let eperm = SeccompFilter::new(
            denied,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )?;
        let clone3 = SeccompFilter::new(
            [(libc::SYS_clone3, vec![])].into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )?;
        Ok(vec![eperm.try_into()?, clone3.try_into()?])
    };
    let programs = build().map_err(|e| e.to_string())?;
    Ok(programs
        .iter()
        .map(|p| {
            // struct sock_filter as the kernel reads it: u16 code, u8 jt,
            // u8 jf, u32 k, in the host's byte order.
            p.iter()
                .flat_map(|i| {
                    let mut b = Vec::with_capacity(8);
                    b.extend(i.code.to_ne_bytes());
                    b.push(i.jt);
                    b.push(i.jf);
                    b.extend(i.k.to_ne_bytes());
                    b
                })
                .collect()
        })
        .collect())
}

/// `bytes` in an anonymous memory file, at offset 0, close-on-exec.
pub(super) fn memfd_with(bytes: &[u8]) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::io::{Seek, Write};
    use std::os::fd::FromRawFd;
    // SAFETY: a NUL-terminated name; the fd returned is ours.
    let fd = unsafe { libc::memfd_create(c"mmci-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file.into())
}
