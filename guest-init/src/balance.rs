//! After scenario A's workload has exited: does the kernel's isolation
//! accounting balance? Every folio reclaim took off an LRU (and counted in
//! NR_ISOLATED_ANON/FILE) must have been put back or freed by now, so both
//! counters must read 0 again. /proc/vmstat shows the global counters,
//! which lag the per-CPU deltas and hide negative values (they read as 0):
//! writing /proc/sys/vm/stat_refresh folds the deltas first, and the
//! kernel warns `vmstat_refresh: <counter> <value>` on the log for any
//! counter below 0, which this reads from /dev/kmsg. Then the workload's
//! cgroup is removed: a cgroup that cannot go says something is still in it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mmci_record::Balance;

use crate::procfs;

const STAT_REFRESH: &str = "/proc/sys/vm/stat_refresh";

/// How long the counters may take to come back to 0 (a reclaimer still
/// putting folios back, kswapd finishing a batch).
const SETTLE: Duration = Duration::from_secs(1);
const REREAD: Duration = Duration::from_millis(50);

/// The check, then the cgroups in `cgs` removed in that order (children
/// before their parent).
pub fn check(cgs: &[PathBuf]) -> Balance {
    let mut b = Balance::default();
    let mut kmsg = match open_kmsg_at_end() {
        Ok(f) => Some(f),
        Err(e) => {
            b.refresh_error = Some(format!("/dev/kmsg: {e}"));
            None
        }
    };
    let start = Instant::now();
    loop {
        if let Err(e) = std::fs::write(STAT_REFRESH, "1") {
            b.refresh_error = Some(format!("{STAT_REFRESH}: {e}"));
        }
        if let Some(f) = kmsg.as_mut() {
            for w in read_new_records(f)
                .iter()
                .filter_map(|r| negative_counter(r))
            {
                if !b.negative.contains(&w) {
                    b.negative.push(w);
                }
            }
        }
        let text = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
        b.nr_isolated_anon = procfs::vmstat_value(&text, "nr_isolated_anon").unwrap_or(0);
        b.nr_isolated_file = procfs::vmstat_value(&text, "nr_isolated_file").unwrap_or(0);
        b.waited_ms = start.elapsed().as_millis() as u64;
        let balanced = b.nr_isolated_anon == 0 && b.nr_isolated_file == 0;
        if balanced || start.elapsed() >= SETTLE {
            break;
        }
        std::thread::sleep(REREAD);
    }
    b.cgroup_removed = true;
    for cg in cgs {
        if let Err(e) = remove_cgroup(cg) {
            b.cgroup_removed = false;
            b.cgroup_error = Some(format!("rmdir {}: {e}", cg.display()));
            break;
        }
    }
    b
}

/// /dev/kmsg, past the records already in the log: only what the kernel
/// says from now on is read.
fn open_kmsg_at_end() -> io::Result<File> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")?;
    f.seek(SeekFrom::End(0))?;
    Ok(f)
}

/// Every record logged since the last read (one per read(2) on /dev/kmsg).
fn read_new_records(f: &mut File) -> Vec<String> {
    let mut out = vec![];
    let mut buf = vec![0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
            // EPIPE: records were overwritten before we read them; go on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    out
}

/// `<counter> <value>` of a /dev/kmsg record
/// `<prio>,<seq>,<usec>,<flags>;vmstat_refresh: <counter> <value>` with a
/// negative value; None for any other record.
pub fn negative_counter(record: &str) -> Option<String> {
    let text = record.split_once(';').map_or(record, |(_, t)| t);
    let rest = text
        .lines()
        .next()?
        .trim()
        .strip_prefix("vmstat_refresh: ")?;
    let (counter, value) = rest.split_once(' ')?;
    let value: i64 = value.trim().parse().ok()?;
    (value < 0).then(|| format!("{counter} {value}"))
}

/// rmdir, retried while the cgroup is still busy: the last task's exit
/// may not have left it yet when its parent is told.
fn remove_cgroup(cg: &Path) -> io::Result<()> {
    let start = Instant::now();
    loop {
        match std::fs::remove_dir(cg) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && start.elapsed() < SETTLE => {
                std::thread::sleep(REREAD)
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_counter_warnings() {
        // (kmsg record, warning)
        let cases = [
            (
                "4,1234,5678901,-;vmstat_refresh: nr_isolated_anon -3\n",
                Some("nr_isolated_anon -3"),
            ),
            (
                "4,1,2,-;vmstat_refresh: nr_isolated_file -512\n SUBSYSTEM=x\n",
                Some("nr_isolated_file -512"),
            ),
            ("vmstat_refresh: nr_free_pages -1", Some("nr_free_pages -1")),
            ("4,1,2,-;vmstat_refresh: nr_isolated_anon 3\n", None),
            ("6,1,2,-;random: crng init done\n", None),
            ("4,1,2,-;vmstat_refresh: garbled\n", None),
        ];
        for (record, want) in cases {
            assert_eq!(negative_counter(record).as_deref(), want, "{record}");
        }
    }
}
