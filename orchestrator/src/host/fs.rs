//! Files written so that an interrupted mmci never leaves a half-written
//! one that looks complete (temporary file, fsync, rename), and files read
//! with a cap on the bytes actually read: a size from metadata says nothing
//! about /dev/zero, a FIFO or a file that grows while it is read; and
//! directories removed however their owner ends.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// A directory removed when dropped: no way out of its owner (an error, a
/// cancelled task, Ctrl-C) leaves it behind.
pub struct RemoveDirOnDrop(pub std::path::PathBuf);

impl Drop for RemoveDirOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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

/// What [`read_capped`] accepts at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accept {
    /// A regular file, also through a symbolic link: a file the user named.
    Regular,
    /// A regular file that is not itself a symbolic link: a file inside a
    /// results dir, which anyone who wrote the dir (a CI shard, a hostile
    /// guest's host) may have pointed at /etc/shadow.
    RegularNoSymlink,
    /// Whatever can be read: a FIFO or `/dev/stdin` too (`--body <(...)`).
    /// Still capped by the bytes read.
    Any,
}

/// Reads `path` whole, refusing it when it holds more than `limit` bytes
/// (`limit_name` is the constant, named in the error so that the limit can
/// be found) or is not what `accept` allows. The limit counts the bytes
/// actually read, so /dev/zero or an endless FIFO stops at `limit + 1`.
/// Errors are `io::Error`s, so that every caller's "cannot read PATH"
/// error wraps them as it wraps a missing file.
pub fn read_capped(
    path: &Path,
    limit: u64,
    limit_name: &str,
    accept: Accept,
) -> std::io::Result<Vec<u8>> {
    let mut reader = open_capped(path, limit, limit_name, accept)?;
    let mut bytes = Vec::with_capacity(reader.size_hint());
    reader.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A file opened by [`open_capped`]: reads past its limit are a
/// `FileTooLarge` error, so that a caller that streams a file (a line at a
/// time) stops where [`read_capped`] would have.
pub struct CappedReader {
    inner: std::io::Take<std::fs::File>,
    limit: u64,
    limit_name: String,
    /// The file's size when it is a regular file of at most `limit` bytes.
    size: Option<u64>,
}

impl CappedReader {
    fn too_large(&self) -> std::io::Error {
        too_large(self.limit, &self.limit_name)
    }

    /// Bytes worth reserving: the regular file's size, else none.
    fn size_hint(&self) -> usize {
        self.size.unwrap_or(0) as usize
    }
}

impl Read for CappedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        // `inner` stops at `limit + 1` bytes: the extra byte says there is
        // more than the limit.
        if self.inner.limit() == 0 && n > 0 {
            return Err(self.too_large());
        }
        Ok(n)
    }
}

fn too_large(limit: u64, limit_name: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        format!("larger than {limit} bytes, the limit ({limit_name}); refused"),
    )
}

/// Opens `path` as [`read_capped`] reads it (the same refusals, before any
/// byte is read), for a caller that streams it: reading more than `limit`
/// bytes from the reader is an error. A FIFO where `accept` refuses it is
/// refused without waiting for a writer.
pub fn open_capped(
    path: &Path,
    limit: u64,
    limit_name: &str,
    accept: Accept,
) -> std::io::Result<CappedReader> {
    use std::io::{Error, ErrorKind};
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    let mut flags = 0;
    if accept != Accept::Any {
        // Opening a FIFO for reading waits for a writer: never block before
        // the type check below has refused it.
        flags |= libc::O_NONBLOCK;
    }
    if accept == Accept::RegularNoSymlink {
        flags |= libc::O_NOFOLLOW;
    }
    opts.custom_flags(flags);
    let file = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) && accept == Accept::RegularNoSymlink => {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "a symbolic link, not a regular file; refused (replace it with the file itself)",
            ))
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let kind = file_kind(&meta.file_type());
    if accept != Accept::Any && kind != "a regular file" {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{kind}, not a regular file; refused"),
        ));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(too_large(limit, limit_name));
    }
    if accept != Accept::Any {
        // Back to blocking reads (no effect on a regular file, but honest).
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        // SAFETY: fcntl on an fd we own.
        unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            if fl >= 0 {
                libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(CappedReader {
        inner: file.take(limit.saturating_add(1)),
        limit,
        limit_name: limit_name.to_string(),
        size: meta.is_file().then_some(meta.len()),
    })
}

/// [`read_capped`] as UTF-8 text (invalid UTF-8 is an `InvalidData` error,
/// as with `std::fs::read_to_string`).
pub fn read_capped_to_string(
    path: &Path,
    limit: u64,
    limit_name: &str,
    accept: Accept,
) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, limit, limit_name, accept)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// "a FIFO", "a directory", ...: what a path is, for errors.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of path against every mode: what is read, what refused
    /// and with which words. /dev/zero and a FIFO with an endless writer
    /// stop at the cap, by bytes read.
    #[test]
    fn capped_reads_by_kind_and_size() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("small"), b"hello").unwrap();
        std::fs::write(d.join("exact"), vec![b'x'; 16]).unwrap();
        std::fs::write(d.join("big"), vec![b'x'; 17]).unwrap();
        std::os::unix::fs::symlink(d.join("small"), d.join("link")).unwrap();
        std::fs::create_dir(d.join("dir")).unwrap();
        let mkfifo = |name: &str| {
            let path = d.join(name);
            let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo on a path we own.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            path
        };
        // No writer: opening it to read must not wait for one.
        let fifo = mkfifo("fifo");
        use Accept::*;
        // (path, accept, Ok(len) or Err(words in the message))
        let cases: Vec<(std::path::PathBuf, Accept, Result<usize, &str>)> = vec![
            (d.join("small"), Regular, Ok(5)),
            (d.join("small"), RegularNoSymlink, Ok(5)),
            (d.join("exact"), Regular, Ok(16)),
            (
                d.join("big"),
                Regular,
                Err("larger than 16 bytes, the limit (MAX_T)"),
            ),
            (d.join("big"), Any, Err("larger than 16 bytes")),
            (d.join("link"), Regular, Ok(5)),
            (
                d.join("link"),
                RegularNoSymlink,
                Err("a symbolic link, not a regular file"),
            ),
            (
                d.join("dir"),
                Regular,
                Err("a directory, not a regular file"),
            ),
            (
                "/dev/zero".into(),
                Regular,
                Err("a character device, not a regular file"),
            ),
            ("/dev/zero".into(), Any, Err("larger than 16 bytes")),
            (
                fifo.clone(),
                RegularNoSymlink,
                Err("a FIFO, not a regular file"),
            ),
            (fifo, Regular, Err("a FIFO, not a regular file")),
            (d.join("missing"), Regular, Err("No such file")),
        ];
        for (path, accept, want) in cases {
            let got = read_capped(&path, 16, "MAX_T", accept);
            match (&got, want) {
                (Ok(b), Ok(n)) => assert_eq!(b.len(), n, "{path:?} {accept:?}"),
                (Err(e), Err(words)) => {
                    assert!(e.to_string().contains(words), "{path:?} {accept:?}: {e}")
                }
                _ => panic!("{path:?} {accept:?}: {got:?}, wanted {want:?}"),
            }
        }
        // A FIFO with an endless writer, where FIFOs are taken: the cap.
        let endless = mkfifo("endless");
        let writer = {
            let endless = endless.clone();
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&endless)
                    .unwrap();
                let chunk = [b'y'; 4096];
                // Ends with EPIPE when the reader has had enough.
                while f.write_all(&chunk).is_ok() {}
            })
        };
        let e = read_capped(&endless, 16, "MAX_T", Any).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge, "{e}");
        writer.join().unwrap();
        assert_eq!(
            read_capped_to_string(&d.join("small"), 16, "MAX_T", Regular).unwrap(),
            "hello"
        );
        std::fs::write(d.join("latin1"), b"\xff").unwrap();
        let e = read_capped_to_string(&d.join("latin1"), 16, "MAX_T", Regular).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    }

    /// A streamed read stops where a whole read would: a file of the
    /// limit is read, one byte more is an error after the limit's bytes,
    /// never a silent cut; the refusals come before any byte.
    #[test]
    fn streamed_reads_stop_at_the_limit() {
        use std::io::BufRead;
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("exact"), b"ab\ncd\n").unwrap();
        let lines: Vec<String> = std::io::BufReader::new(
            open_capped(&d.join("exact"), 6, "MAX_T", Accept::RegularNoSymlink).unwrap(),
        )
        .lines()
        .map(Result::unwrap)
        .collect();
        assert_eq!(lines, ["ab", "cd"]);
        // A regular file over the limit: refused by its size, at the open.
        let e = open_capped(&d.join("exact"), 5, "MAX_T", Accept::RegularNoSymlink)
            .err()
            .unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge, "{e}");
        // /dev/zero where devices are taken: an error once past the limit.
        let mut r = open_capped(Path::new("/dev/zero"), 1000, "MAX_T", Accept::Any).unwrap();
        let e = std::io::copy(&mut r, &mut std::io::sink()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge, "{e}");
        assert!(e.to_string().contains("the limit (MAX_T)"), "{e}");
        let e = open_capped(Path::new("/dev/zero"), 1000, "MAX_T", Accept::Regular)
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains("a character device, not a regular file"),
            "{e}"
        );
    }

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
