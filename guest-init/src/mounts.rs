//! The guest's mount table. Mounting is idempotent: a file system that is
//! already there (EBUSY, e.g. devtmpfs mounted by the kernel) counts as done.

use std::io;

use crate::sys;

/// (source, target, fstype) in mount order: later entries live under earlier ones.
pub const MOUNT_TABLE: [(&str, &str, &str); 5] = [
    ("proc", "/proc", "proc"),
    ("sysfs", "/sys", "sysfs"),
    ("devtmpfs", "/dev", "devtmpfs"),
    ("cgroup2", "/sys/fs/cgroup", "cgroup2"),
    ("tracefs", "/sys/kernel/tracing", "tracefs"),
];

/// Mounts everything in [`MOUNT_TABLE`].
pub fn mount_all() -> io::Result<()> {
    for (source, target, fstype) in MOUNT_TABLE {
        // sysfs provides /sys/fs/cgroup and /sys/kernel/tracing itself;
        // creating them fails there, which is fine.
        let _ = std::fs::create_dir_all(target);
        match sys::mount(source, target, fstype, libc::MS_NOSUID | libc::MS_NOEXEC) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("mount {fstype} on {target}: {e}"),
                ))
            }
        }
    }
    Ok(())
}
