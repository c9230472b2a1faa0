//! The workload's touch counters in memory PID 1 owns, so that the total
//! is exact even when the workload is killed.
//!
//! PID 1 creates a memfd and writes it in full before the workload starts:
//! its pages are allocated then, and charged to PID 1's cgroup (the root),
//! not to the workload's small memory cgroup, whose reclaim and OOM kills
//! they would otherwise join. The workload child inherits the descriptor
//! and maps it shared; each thread stores its running count in a slot of
//! its own cache line after every write. PID 1 maps it too and sums the
//! slots whenever it likes, and once the child is gone, OOM-killed or not:
//! at most the one write per thread between the write and its store goes
//! uncounted.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per counter: one cache line each, so that threads counting do not
/// bounce a shared line between CPUs.
pub const SLOT_BYTES: usize = 64;

/// `slots` counters in a shared mapping of a memfd.
pub struct Counters {
    file: File,
    ptr: *mut u8,
    len: usize,
    slots: usize,
}

// SAFETY: the mapping is only accessed through atomics at in-bounds,
// 8-byte aligned offsets (a page-aligned base plus multiples of 64).
unsafe impl Send for Counters {}
unsafe impl Sync for Counters {}

impl Counters {
    /// A new memfd of `slots` zeroed counters, written in full now (see the
    /// top comment), and mapped. Its descriptor is left inheritable, for
    /// the workload child ([`Counters::fd`]).
    pub fn create(slots: usize) -> io::Result<Counters> {
        let name = c"mmci-touches";
        // SAFETY: a valid NUL-terminated name; no flags: no CLOEXEC, the
        // child inherits it.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
        if fd < 0 {
            return Err(io::Error::other(format!(
                "memfd_create: {}",
                io::Error::last_os_error()
            )));
        }
        // SAFETY: a descriptor we just created and own.
        let file = unsafe { File::from_raw_fd(fd) };
        let len = Self::bytes(slots);
        file.write_all_at(&vec![0u8; len], 0)?;
        Self::map(file, slots)
    }

    /// The child's side: maps the inherited descriptor `fd`, which must hold
    /// at least `slots` counters.
    pub fn open(fd: RawFd, slots: usize) -> io::Result<Counters> {
        // SAFETY: the descriptor PID 1 passed down; this process owns it now.
        let file = unsafe { File::from_raw_fd(fd) };
        let size = file.metadata()?.len() as usize;
        if size < slots * SLOT_BYTES {
            return Err(io::Error::other(format!(
                "counters fd {fd}: {size} bytes, {slots} counters need {}",
                slots * SLOT_BYTES
            )));
        }
        Self::map(file, slots)
    }

    fn bytes(slots: usize) -> usize {
        (slots.max(1) * SLOT_BYTES).next_multiple_of(crate::sys::page_size())
    }

    fn map(file: File, slots: usize) -> io::Result<Counters> {
        let len = Self::bytes(slots);
        // SAFETY: a shared mapping of a file at least `len` bytes long;
        // no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Counters {
            file,
            ptr: ptr as *mut u8,
            len,
            slots: slots.max(1),
        })
    }

    /// The descriptor to pass to the child.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    fn slot(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.slots, "counter {i} of {}", self.slots);
        // SAFETY: in bounds (i < slots, slots * 64 <= len), 8-byte aligned,
        // and the mapping lives as long as self.
        unsafe { &*(self.ptr.add(i * SLOT_BYTES) as *const AtomicU64) }
    }

    /// Thread `i`'s running count.
    pub fn store(&self, i: usize, value: u64) {
        self.slot(i).store(value, Ordering::Relaxed);
    }

    /// The sum over all counters.
    pub fn total(&self) -> u64 {
        (0..self.slots)
            .map(|i| self.slot(i).load(Ordering::Relaxed))
            .sum()
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_mapping_sees_every_store() {
        // (slots, stores as (slot, value), total PID 1 reads)
        type Case = (usize, &'static [(usize, u64)], u64);
        let cases: &[Case] = &[
            (1, &[], 0),
            (1, &[(0, 5), (0, 7)], 7),
            (3, &[(0, 1), (1, 10), (2, 100)], 111),
            (192, &[(0, 1), (191, 2), (100, 3), (100, 4)], 7),
        ];
        for (slots, stores, want) in cases {
            let pid1 = Counters::create(*slots).unwrap();
            // SAFETY: dup of a descriptor we hold; the "child" owns the copy.
            let fd = unsafe { libc::dup(pid1.fd()) };
            assert!(fd >= 0);
            let child = Counters::open(fd, *slots).unwrap();
            for (i, v) in *stores {
                child.store(*i, *v);
            }
            drop(child);
            assert_eq!(pid1.total(), *want, "{slots} {stores:?}");
        }
    }

    #[test]
    fn a_file_too_small_is_refused() {
        let pid1 = Counters::create(2).unwrap();
        let fd = unsafe { libc::dup(pid1.fd()) };
        let slots = 1 + crate::sys::page_size() / SLOT_BYTES;
        let err = Counters::open(fd, slots).err().unwrap().to_string();
        assert!(err.contains("counters need"), "{err}");
    }
}
