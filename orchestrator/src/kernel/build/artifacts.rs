//! The artifacts a build keeps in its dir: copied out of the object dir
//! (which the build could write) up to a cap, each with its sha256 in the
//! build's stamp, and the stamp checked against them before a cached
//! kernel is used; and the tail of build.log read back for warnings.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::KernelBuild;
use crate::kernel::sandbox;

pub(super) const STAMP: &str = "mmci-build.json";

/// The most of a build's artifacts mmci copies out of its object dir: a
/// build (a series' Makefile) decides their size, and the host's disk is
/// not its to fill. A debug (DWARF) vmlinux of mmci's configurations is a
/// few hundred MiB; KASAN adds less than that.
pub(super) const MAX_IMAGE_BYTES: u64 = 2 << 30;
/// System.map and .config are text of a few MiB at most.
pub(super) const MAX_TEXT_ARTIFACT_BYTES: u64 = 64 << 20;
/// The tail of build.log mmci reads back for warnings (make writes it
/// unbounded; the warnings of a real build fit in a few MiB).
pub(super) const MAX_LOG_TAIL_BYTES: u64 = 16 << 20;

/// A cached build in `dir`, if its stamp parses and every artifact it
/// names still has the digest it was built with (see
/// [`KernelBuild::digests`]); else `None`, and the kernel is built again.
pub(super) fn read_stamp(dir: &Path) -> Option<KernelBuild> {
    let text = crate::host::fs::read_capped_to_string(
        &dir.join(STAMP),
        1 << 20,
        "a build stamp's 1 MiB",
        crate::host::fs::Accept::RegularNoSymlink,
    )
    .ok()?;
    let build: KernelBuild = serde_json::from_str(&text).ok()?;
    match stale_artifact(dir, &build) {
        None => Some(build),
        Some(why) => {
            tracing::warn!(dir = %dir.display(), why, "cached kernel not used: building it again");
            None
        }
    }
}

/// Why the artifacts of `build` in `dir` do not match its stamp, if they
/// do not.
fn stale_artifact(dir: &Path, build: &KernelBuild) -> Option<String> {
    let image = build.image.file_name()?.to_string_lossy().into_owned();
    if build.image != dir.join(&image) {
        return Some(format!(
            "its image {} is not in its dir",
            build.image.display()
        ));
    }
    if !build.digests.contains_key(&image) || !build.digests.contains_key("config") {
        return Some("its stamp has no digests (written by an older mmci)".into());
    }
    for (name, want) in &build.digests {
        let path = dir.join(name);
        if Path::new(name).components().count() != 1 {
            return Some(format!("its stamp names {name:?}, not a file of its dir"));
        }
        match file_digest(&path) {
            Ok(got) if &got == want => {}
            Ok(_) => return Some(format!("{name} changed since it was built")),
            Err(e) => return Some(format!("{name}: {e}")),
        }
    }
    None
}

/// sha256 of a regular file (not through a symlink), in hex.
pub(super) fn file_digest(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(hex::encode(h.finalize()))
}

/// Copies `rel` under `objs` to `to` (see [`sandbox::open_beneath`]),
/// refusing a file larger than `cap` (counted in the bytes copied, so a
/// file still growing is caught too).
pub(super) fn copy_capped(objs: &Path, rel: &Path, to: &Path, cap: u64) -> std::io::Result<u64> {
    use std::io::Read;
    let from = sandbox::open_beneath(objs, rel)?;
    let too_large = || {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {cap} bytes, the most mmci copies out of a build; refused"),
        )
    };
    if from.metadata()?.len() > cap {
        return Err(too_large());
    }
    let _ = std::fs::remove_file(to);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let n = std::io::copy(&mut from.take(cap + 1), &mut out)?;
    if n > cap {
        drop(out);
        let _ = std::fs::remove_file(to);
        return Err(too_large());
    }
    Ok(n)
}

/// The last [`MAX_LOG_TAIL_BYTES`] of the build log, as text (lossy: a
/// build's output is not always UTF-8, and the cut may split a character).
pub(super) fn log_tail(log: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(log) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_LOG_TAIL_BYTES {
        let _ = f.seek(SeekFrom::Start(len - MAX_LOG_TAIL_BYTES));
    }
    let mut bytes = Vec::new();
    let _ = f.take(MAX_LOG_TAIL_BYTES).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;

    fn stamped(dir: &Path) -> KernelBuild {
        std::fs::write(dir.join("vmlinux"), b"kernel image").unwrap();
        std::fs::write(dir.join("config"), b"CONFIG_MMU=y\n").unwrap();
        let digests = ["vmlinux", "config"]
            .iter()
            .map(|n| (n.to_string(), file_digest(&dir.join(n)).unwrap()))
            .collect();
        let build = KernelBuild {
            arch: Arch::X86_64,
            key: "k".repeat(64),
            dir: dir.to_path_buf(),
            image: dir.join("vmlinux"),
            release: "6.12.95+".into(),
            tree_commit: "c".repeat(40),
            series_hash: None,
            head_commit: "c".repeat(40),
            compiler: "gcc 12".into(),
            sandboxed: true,
            ccache: false,
            warnings: vec![],
            build_seconds: 1.0,
            cached: false,
            digests,
        };
        std::fs::write(dir.join(STAMP), serde_json::to_vec(&build).unwrap()).unwrap();
        build
    }

    /// Issue 50, C2: a cached kernel is used only while its artifacts are
    /// the ones built; a replaced image, a stamp without digests or one
    /// pointing outside its dir means building again.
    #[test]
    fn a_cached_build_is_checked_against_its_digests() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        stamped(dir);
        assert!(read_stamp(dir).is_some());
        std::fs::write(dir.join("vmlinux"), b"another kernel").unwrap();
        assert!(read_stamp(dir).is_none(), "a replaced image was trusted");

        let mut build = stamped(dir);
        std::fs::write(dir.join("config"), b"CONFIG_MMU=n\n").unwrap();
        assert!(read_stamp(dir).is_none(), "a changed .config was trusted");

        build.digests.clear();
        stamped(dir);
        std::fs::write(dir.join(STAMP), serde_json::to_vec(&build).unwrap()).unwrap();
        assert!(
            read_stamp(dir).is_none(),
            "a stamp without digests was trusted"
        );

        let mut build = stamped(dir);
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        stamped(&elsewhere);
        build.image = elsewhere.join("vmlinux");
        std::fs::write(dir.join(STAMP), serde_json::to_vec(&build).unwrap()).unwrap();
        assert!(
            read_stamp(dir).is_none(),
            "an image outside the dir was trusted"
        );

        stamped(dir);
        std::fs::remove_file(dir.join("vmlinux")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("vmlinux"), dir.join("vmlinux")).unwrap();
        assert!(read_stamp(dir).is_none(), "a symlinked image was trusted");
    }

    #[test]
    fn artifacts_are_copied_up_to_a_cap_and_the_log_read_from_its_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let objs = tmp.path().join("objs");
        std::fs::create_dir_all(&objs).unwrap();
        std::fs::write(objs.join("System.map"), vec![b'x'; 100]).unwrap();
        let to = tmp.path().join("System.map");
        assert_eq!(
            copy_capped(&objs, Path::new("System.map"), &to, 100).unwrap(),
            100
        );
        let e = copy_capped(&objs, Path::new("System.map"), &to, 99).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge, "{e}");
        std::os::unix::fs::symlink("/etc/passwd", objs.join("link")).unwrap();
        assert!(copy_capped(&objs, Path::new("link"), &to, 1 << 20).is_err());

        let log = tmp.path().join("build.log");
        let mut text = "old line\n".repeat((MAX_LOG_TAIL_BYTES / 9 + 10) as usize);
        text.push_str("mm/vmscan.c:1:1: warning: last\n");
        std::fs::write(&log, &text).unwrap();
        let tail = log_tail(&log);
        assert_eq!(tail.len() as u64, MAX_LOG_TAIL_BYTES);
        assert!(tail.ends_with("warning: last\n"));
        assert_eq!(log_tail(&tmp.path().join("missing")), "");
    }
}
