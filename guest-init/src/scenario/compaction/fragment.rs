//! Scenario C's high-order side: free memory cut into 4 KiB holes between
//! mlocked anonymous pages, and a thread that faults transparent huge pages
//! in an MADV_HUGEPAGE region over and over, so that every fault needs
//! direct compaction.
//!
//! Why THP faults: with `defrag=madvise` a fault in an MADV_HUGEPAGE region
//! allocates with GFP_TRANSHUGE (direct reclaim and compaction, no
//! __GFP_NORETRY), so the faulting task runs compact_zone() itself, async
//! first and then sync-light, and sync compaction is where
//! too_many_isolated() makes it wait (reclaim_throttle(), ISOLATED). The
//! guest kernel has THP but no hugetlbfs, and proactive compaction runs in
//! kcompactd at its own pace, not in a task whose waits we can time.
//!
//! Why mlocked filler: compaction's too_many_isolated() compares the
//! node's isolated pages with its evictable LRU (active + inactive, / 16
//! for a __GFP_FS allocation). Filler left on the LRU would make that limit
//! thousands of pages, far beyond what reclaimers in a 16 MiB memcg
//! isolate, and the seed's case (compaction seeing MGLRU's isolation) could
//! not arise. Mlocked pages sit on the unevictable LRU, which the limit does
//! not count, and compaction still migrates them
//! (vm.compact_unevictable_allowed, set to 1). So the limit is set by the
//! reclaimers' memcg, the isolation that matters.
//!
//! Keeping memory fragmented: each cycle refills the filler's holes and
//! frees a random half of its pages again (the huge pages of the previous
//! cycle came back as whole 2 MiB blocks); a random half leaves about half
//! of every pageblock in use whatever the physical layout.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::workload::Rng;

pub const HUGE: usize = 2 << 20;

/// An anonymous private mapping, unmapped on drop.
struct Region {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: only the thread that owns it touches the mapping.
unsafe impl Send for Region {}

impl Region {
    fn map(len: usize) -> io::Result<Region> {
        Ok(Region {
            ptr: crate::sys::map_anonymous(len)?,
            len,
        })
    }

    fn advise(&self, offset: usize, len: usize, advice: libc::c_int) -> io::Result<()> {
        assert!(offset + len <= self.len);
        // SAFETY: a range inside our own mapping.
        let rc = unsafe { libc::madvise(self.ptr.add(offset) as *mut libc::c_void, len, advice) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// mlock2(MLOCK_ONFAULT): the pages present now and those faulted
    /// later, without populating the holes as mlock() would.
    fn lock_on_fault(&self, offset: usize, len: usize) -> io::Result<()> {
        // SAFETY: a range inside our own mapping.
        let rc = unsafe {
            libc::mlock2(
                self.ptr.add(offset) as *const libc::c_void,
                len,
                libc::MLOCK_ONFAULT,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn unlock(&self) -> io::Result<()> {
        // SAFETY: our own mapping.
        if unsafe { libc::munlock(self.ptr as *const libc::c_void, self.len) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn touch(&self, offset: usize) {
        assert!(offset < self.len);
        // SAFETY: in bounds of a mapping that lives as long as self.
        unsafe { std::ptr::write_volatile(self.ptr.add(offset), 1) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Runs of pages to free, as (first page, pages): page `i` is freed when
/// `pick(i)` says so; consecutive picks make one run (one madvise call).
pub fn runs(pages: usize, mut pick: impl FnMut(usize) -> bool) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for i in 0..pages {
        if !pick(i) {
            continue;
        }
        match out.last_mut() {
            Some((first, n)) if *first + *n == i => *n += 1,
            _ => out.push((i, 1)),
        }
    }
    out
}

/// The mlocked filler with holes.
pub struct Filler {
    region: Region,
    page: usize,
    rng: Rng,
    locked: bool,
}

impl Filler {
    pub fn new(mb: u64) -> io::Result<Filler> {
        let region = Region::map((mb as usize) << 20)?;
        // 4 KiB pages: a huge page here would be one block, not 512 holes.
        region.advise(0, region.len, libc::MADV_NOHUGEPAGE)?;
        Ok(Filler {
            region,
            page: crate::sys::page_size(),
            rng: Rng::new(0xC0FFEE),
            locked: false,
        })
    }

    /// Fills every hole, frees a random half of the pages and locks the
    /// rest. Returns the pages freed.
    pub fn refragment(&mut self) -> io::Result<usize> {
        if self.locked {
            // madvise(MADV_DONTNEED) refuses a VM_LOCKED range.
            self.region.unlock()?;
            self.locked = false;
        }
        let pages = self.region.len / self.page;
        for p in 0..pages {
            self.region.touch(p * self.page);
        }
        let rng = &mut self.rng;
        let mut freed = 0;
        for (first, n) in runs(pages, |_| rng.below(2) == 0) {
            self.region
                .advise(first * self.page, n * self.page, libc::MADV_DONTNEED)?;
            freed += n;
        }
        self.region.lock_on_fault(0, self.region.len)?;
        self.locked = true;
        Ok(freed)
    }
}

/// What the faulter did.
#[derive(Debug, Default)]
pub struct FaulterStat {
    pub cycles: u64,
    pub faults: u64,
    /// Time in the huge-page faults (allocation, reclaim and compaction).
    pub fault_us: u64,
    pub refragment_us: u64,
    pub error: Option<String>,
}

/// The faulting thread: per cycle, `thp_mb` of MADV_HUGEPAGE memory faulted
/// one 2 MiB step at a time, unmapped, then the filler refragmented; until
/// `stop`. `faults` counts the faults as they happen.
pub fn fault_loop(
    mut filler: Filler,
    thp_mb: u64,
    stop: &AtomicBool,
    faults: &AtomicU64,
) -> FaulterStat {
    let mut stat = FaulterStat::default();
    let steps = ((thp_mb as usize) << 20) / HUGE;
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = cycle(steps, stop, faults, &mut stat) {
            stat.error = Some(format!("huge-page region: {e}"));
            break;
        }
        let t = Instant::now();
        if let Err(e) = filler.refragment() {
            stat.error = Some(format!("refragmenting: {e}"));
            break;
        }
        stat.refragment_us += t.elapsed().as_micros() as u64;
        stat.cycles += 1;
    }
    stat
}

fn cycle(
    steps: usize,
    stop: &AtomicBool,
    faults: &AtomicU64,
    stat: &mut FaulterStat,
) -> io::Result<()> {
    // One huge page more, to align the start to 2 MiB.
    let region = Region::map((steps + 1) * HUGE)?;
    let start = (HUGE - region.ptr as usize % HUGE) % HUGE;
    region.advise(start, steps * HUGE, libc::MADV_HUGEPAGE)?;
    // Locked as they fault: off the evictable LRU like the filler.
    region.lock_on_fault(start, steps * HUGE)?;
    for s in 0..steps {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let t = Instant::now();
        region.touch(start + s * HUGE);
        stat.fault_us += t.elapsed().as_micros() as u64;
        stat.faults += 1;
        faults.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Free 2 MiB (or larger) blocks, from /proc/buddyinfo: free blocks of
/// order >= 9, counted in 2 MiB units, over all zones.
pub fn free_huge_blocks(buddyinfo: &str) -> u64 {
    buddyinfo
        .lines()
        .map(|l| {
            let counts: Vec<u64> = l
                .split_once("zone")
                .map(|(_, rest)| {
                    rest.split_whitespace()
                        .skip(1)
                        .filter_map(|w| w.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            counts
                .iter()
                .enumerate()
                .skip(9)
                .map(|(order, n)| n << (order - 9))
                .sum::<u64>()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_picked_pages() {
        // (pages, picked, runs)
        type Case = (usize, &'static [usize], &'static [(usize, usize)]);
        let cases: [Case; 4] = [
            (4, &[], &[]),
            (4, &[0, 1, 2, 3], &[(0, 4)]),
            (6, &[0, 2, 3, 5], &[(0, 1), (2, 2), (5, 1)]),
            (3, &[1], &[(1, 1)]),
        ];
        for (pages, picked, want) in cases {
            assert_eq!(runs(pages, |i| picked.contains(&i)), want, "{picked:?}");
        }
    }

    #[test]
    fn huge_blocks_in_buddyinfo() {
        // (buddyinfo, free 2 MiB blocks)
        let cases = [
            ("", 0),
            ("Node 0, zone      DMA      1      1      0      1      2      1      1      0      1      1      3\n", 1 + 2 * 3),
            (
                "Node 0, zone      DMA      0      0      0      0      0      0      0      0      0      0      0\nNode 0, zone    DMA32   4000   3000    100     10      1      0      0      0      0      2      5\n",
                2 + 10,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(free_huge_blocks(text), want, "{text}");
        }
    }
}
