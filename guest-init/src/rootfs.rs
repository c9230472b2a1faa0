//! The image's root for the `script` scenario: the read-only erofs disk
//! (found by its serial) under a tmpfs overlay, with its own /proc, /sys,
//! /dev, /tmp and /dev/shm. Nothing of the host is in it: the disk is a file
//! the host built from Debian's packages, attached read-only.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use mmci_record::IMAGE_DISK_SERIAL;

/// Where the pieces are mounted.
pub const LOWER: &str = "/mnt/image";
pub const RW: &str = "/mnt/rw";
pub const ROOT: &str = "/mnt/root";

fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte"))
}

/// mount(2) with a data string.
fn mount(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> io::Result<()> {
    let _ = std::fs::create_dir_all(target);
    let (s, t, f, d) = (
        cstring(source)?,
        cstring(target)?,
        cstring(fstype)?,
        cstring(data)?,
    );
    // SAFETY: every pointer is a valid NUL-terminated string that outlives
    // the call; the data string is what the file system parses.
    let ret = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, d.as_ptr().cast()) };
    if ret < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("mount {fstype} {source} on {target} ({data}): {e}"),
        ));
    }
    Ok(())
}

/// The overlay's mount options.
pub fn overlay_options(lower: &str, rw: &str) -> String {
    format!("lowerdir={lower},upperdir={rw}/upper,workdir={rw}/work")
}

/// Mounts the image disk and the overlay root; returns the root and a
/// description for the set-up record.
pub fn mount_image_root() -> Result<(PathBuf, String), String> {
    let (name, major, minor, bytes) = crate::blockdev::find_disk(IMAGE_DISK_SERIAL)
        .map_err(|e| format!("{e}: the script scenario needs an image (the matrix's `image:`)"))?;
    let dev = format!("/dev/{name}");
    mount(&dev, LOWER, "erofs", libc::MS_RDONLY | libc::MS_NODEV, "").map_err(|e| e.to_string())?;
    // The upper layer lives in memory: whatever the script writes is charged
    // to its cgroup as shmem (and may be swapped), like /tmp on a server.
    mount("mmci-rw", RW, "tmpfs", libc::MS_NODEV, "mode=0755").map_err(|e| e.to_string())?;
    for d in ["upper", "work"] {
        std::fs::create_dir_all(Path::new(RW).join(d)).map_err(|e| format!("{RW}/{d}: {e}"))?;
    }
    mount("overlay", ROOT, "overlay", 0, &overlay_options(LOWER, RW)).map_err(|e| e.to_string())?;
    let inner: [(&str, &str, &str, libc::c_ulong, &str); 6] = [
        ("proc", "proc", "proc", libc::MS_NOSUID | libc::MS_NODEV, ""),
        (
            "sysfs",
            "sys",
            "sysfs",
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            "",
        ),
        ("devtmpfs", "dev", "devtmpfs", libc::MS_NOSUID, ""),
        (
            "tmpfs",
            "tmp",
            "tmpfs",
            libc::MS_NOSUID | libc::MS_NODEV,
            "mode=1777",
        ),
        (
            "tmpfs",
            "dev/shm",
            "tmpfs",
            libc::MS_NOSUID | libc::MS_NODEV,
            "mode=1777",
        ),
        (
            "tmpfs",
            "run",
            "tmpfs",
            libc::MS_NOSUID | libc::MS_NODEV,
            "mode=0755",
        ),
    ];
    for (source, target, fstype, flags, data) in inner {
        mount(source, &format!("{ROOT}/{target}"), fstype, flags, data)
            .map_err(|e| e.to_string())?;
    }
    Ok((
        PathBuf::from(ROOT),
        format!(
            "erofs {dev} ({major}:{minor}, {} MiB, read-only) under a tmpfs overlay at {ROOT}",
            bytes >> 20
        ),
    ))
}

/// Writes a copied-in script into the root, executable.
pub fn install_script(root: &Path, path: &str, text: &str) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dest = root.join(path.trim_start_matches('/'));
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&dest, text)?;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
}

#[cfg(test)]
mod tests {
    #[test]
    fn overlay_options() {
        assert_eq!(
            super::overlay_options("/mnt/image", "/mnt/rw"),
            "lowerdir=/mnt/image,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work"
        );
    }
}
