//! Safe wrappers around the raw syscalls PID 1 needs. Each `unsafe` block is
//! small and says why it is sound.

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in path"))
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// mount(2).
pub fn mount(source: &str, target: &str, fstype: &str, flags: libc::c_ulong) -> io::Result<()> {
    let (source, target, fstype) = (cstring(source)?, cstring(target)?, cstring(fstype)?);
    // SAFETY: all pointers are valid NUL-terminated strings that outlive the
    // call; a null data pointer is allowed by mount(2).
    check(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            std::ptr::null(),
        )
    })
}

/// swapon(2) with default priority.
pub fn swapon(path: &Path) -> io::Result<()> {
    let path = cstring(&path.to_string_lossy())?;
    // SAFETY: path is a valid NUL-terminated string for the duration of the call.
    check(unsafe { libc::swapon(path.as_ptr(), 0) })
}

/// sync(2).
pub fn sync() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() }
}

/// ioctl(2) with a byte buffer as argument (device-mapper's calling convention).
pub fn ioctl_buf(file: &std::fs::File, request: u64, buf: &mut [u8]) -> io::Result<()> {
    // SAFETY: the kernel reads and writes at most the data_size announced in
    // the buffer's own header, which the callers set to buf.len(); the buffer
    // is exclusively borrowed for the call.
    check(unsafe { libc::ioctl(file.as_raw_fd(), request as _, buf.as_mut_ptr()) })
}

/// Milliseconds since boot (CLOCK_BOOTTIME), comparable with the kernel log.
pub fn uptime_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// System page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// Ends the guest: sync, then power off. On x86_64 there is no ACPI in our
/// tiny kernels, so a power-off request would only halt the CPU; we restart
/// instead and QEMU, started with `-no-reboot`, exits. arm64's `virt` machine
/// powers off through PSCI.
pub fn power_off() -> ! {
    sync();
    let cmd = if cfg!(target_arch = "x86_64") {
        libc::LINUX_REBOOT_CMD_RESTART
    } else {
        libc::LINUX_REBOOT_CMD_POWER_OFF
    };
    // SAFETY: reboot(2) with a valid command; it only returns on failure.
    unsafe { libc::reboot(cmd) };
    // Still here: nothing else to do but wait for the host's timeout.
    loop {
        // SAFETY: pause has no preconditions.
        unsafe { libc::pause() };
    }
}

/// waitpid(2) for any child, without blocking: reaps zombies PID 1 inherits.
pub fn reap_orphans() {
    loop {
        let mut status = 0;
        // SAFETY: status is a valid out pointer; WNOHANG never blocks.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
    }
}

/// A fresh private anonymous read-write mapping of `len` bytes, without
/// swap reserved for it (the workloads' working sets; unmapped by their
/// owners).
pub fn map_anonymous(len: usize) -> io::Result<*mut u8> {
    // SAFETY: a new mapping at an address of the kernel's choosing; no
    // existing memory is affected.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(ptr as *mut u8)
}
