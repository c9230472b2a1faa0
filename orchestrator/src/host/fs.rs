//! Files written so that an interrupted mmci never leaves a half-written
//! one that looks complete: temporary file, fsync, rename.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    // A fresh file: never through a symlink someone left at the temporary
    // name (a build, in its object dir); rename replaces a link at `path`.
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        // A full disk must not also be left holding a half-written file.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Makes sure `dir` exists and is writable, before any work is done.
pub fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(".mmci-write-test");
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("run.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn atomic_write_never_writes_through_a_planted_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let p = tmp.path().join("mmci-warnings.json");
        std::os::unix::fs::symlink(&victim, tmp.path().join("mmci-warnings.json.tmp")).unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        write_atomic(&p, b"ledger").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&p).unwrap(), b"ledger");
        assert!(!std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn unwritable_dir_is_refused_up_front() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        std::fs::write(&file, b"").unwrap();
        assert!(prepare_dir(&file.join("results")).is_err());
        assert!(prepare_dir(&tmp.path().join("new/results")).is_ok());
    }
}
