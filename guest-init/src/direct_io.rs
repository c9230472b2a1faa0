//! O_DIRECT block I/O: page-aligned buffers, single-block reads and writes,
//! and scenario B's readers (random 4 KiB reads of the verity device, so
//! every read goes through dm-verity and none is served by the page cache).

use std::alloc::{self, Layout};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::workload::Rng;

/// O_DIRECT wants the buffer aligned to the logical block size; a page covers it.
const ALIGN: usize = 4096;

/// A zeroed, page-aligned heap buffer.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> Self {
        // ALIGN is a power of two.
        assert!(len > 0 && len & (ALIGN - 1) == 0, "a whole number of pages");
        let layout = Layout::from_size_align(len, ALIGN).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len }
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is a live allocation of len initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len, ALIGN).expect("valid layout");
        // SAFETY: allocated in new() with this very layout.
        unsafe { alloc::dealloc(self.ptr, layout) }
    }
}

/// Opens a block device with O_DIRECT, read-only or read-write.
pub fn open(path: &Path, write: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Reads block `block` (of `buf.len()` bytes) into `buf`.
pub fn read_block(file: &File, buf: &mut AlignedBuf, block: u64) -> io::Result<()> {
    let len = buf.len();
    file.read_exact_at(buf, block * len as u64)
}

/// Writes `buf` at block `block`.
pub fn write_block(file: &File, buf: &AlignedBuf, block: u64) -> io::Result<()> {
    file.write_all_at(buf, block * buf.len() as u64)
}

/// The content of data block `block` of a device filled from `seed`:
/// reproducible, so a read can be checked without keeping the data.
pub fn fill_block(seed: u64, block: u64, out: &mut [u8]) {
    let mut rng = Rng::new(seed ^ block.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for chunk in out.chunks_mut(8) {
        let v = rng.next_u64().to_ne_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// What the readers did.
#[derive(Debug, Default)]
pub struct ReadStats {
    pub reads: u64,
    pub errors: u64,
    pub elapsed: Duration,
    pub first_error: Option<String>,
}

/// `readers` threads reading random 4 KiB blocks of `device` (`blocks` long)
/// until `max_reads` reads are done (0: no limit) or `duration` is over.
pub fn random_reads(
    device: &Path,
    blocks: u64,
    readers: u32,
    max_reads: u64,
    duration: Duration,
) -> io::Result<ReadStats> {
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let first_error = Arc::new(Mutex::new(None));
    let start = Instant::now();
    let deadline = start + duration;
    let mut handles = Vec::new();
    for r in 0..readers {
        let file = open(device, false)?;
        let (done, errors, first_error) = (done.clone(), errors.clone(), first_error.clone());
        handles.push(
            std::thread::Builder::new()
                .name(format!("reader{r}"))
                .spawn(move || {
                    let mut rng = Rng::new(0x5eed + r as u64);
                    let mut buf = AlignedBuf::new(ALIGN);
                    while Instant::now() < deadline {
                        // Claim a read first, so that the total never exceeds max_reads.
                        let n = done.fetch_add(1, Ordering::Relaxed);
                        if max_reads > 0 && n >= max_reads {
                            done.fetch_sub(1, Ordering::Relaxed);
                            break;
                        }
                        if let Err(e) = read_block(&file, &mut buf, rng.below(blocks)) {
                            errors.fetch_add(1, Ordering::Relaxed);
                            first_error
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .get_or_insert_with(|| e.to_string());
                        }
                    }
                })?,
        );
    }
    for h in handles {
        let _ = h.join();
    }
    let first_error = first_error.lock().unwrap_or_else(|p| p.into_inner()).take();
    Ok(ReadStats {
        reads: done.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
        first_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        let b = AlignedBuf::new(8192);
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert!(b.iter().all(|x| *x == 0));
    }

    #[test]
    fn block_content_is_reproducible_and_differs_between_blocks() {
        let (mut a, mut b, mut c) = ([0u8; 4096], [0u8; 4096], [0u8; 4096]);
        fill_block(7, 3, &mut a);
        fill_block(7, 3, &mut b);
        fill_block(7, 4, &mut c);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().any(|x| *x != 0));
    }

    #[test]
    fn reads_of_a_regular_file_count_and_stop_at_max() {
        // O_DIRECT on tmpfs fails with EINVAL; the counting is what is tested
        // here, so errors are fine as long as they are counted.
        let dir = tempfile_dir();
        let path = dir.join("disk");
        std::fs::write(&path, vec![0u8; 16 * 4096]).unwrap();
        match random_reads(&path, 16, 2, 50, Duration::from_secs(10)) {
            Ok(s) => {
                assert_eq!(s.reads, 50);
                assert!(s.errors == 0 || s.first_error.is_some());
            }
            // The open error is re-wrapped with the path (so its raw errno
            // is gone); EINVAL's kind survives.
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mmci-direct-io-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
