//! `guest-init app <cgroup> <device> <offset_mb> <cache_mb> <anon_mb>`: one
//! of scenario B's application memcgs. It joins its cgroup, writes
//! `anon_mb` of anonymous memory once, reads `cache_mb` of the device from
//! `offset_mb` through the page cache (clean file folios charged to its
//! memcg, read once so they stay on the inactive list; the device stays
//! open, since its last close drops its cache), says [`READY`] and
//! sleeps until it is killed: an idle application whose cache reclaim may
//! take, as on the seed's machine.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::cgroup;

/// The line an application prints once its memory is in place.
pub const READY: &str = "app-ready";

/// What `guest-init app` is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppArgs {
    pub cgroup: String,
    pub device: String,
    pub offset_mb: u64,
    pub cache_mb: u64,
    pub anon_mb: u64,
}

impl AppArgs {
    pub fn to_args(&self) -> Vec<String> {
        vec![
            "app".into(),
            self.cgroup.clone(),
            self.device.clone(),
            self.offset_mb.to_string(),
            self.cache_mb.to_string(),
            self.anon_mb.to_string(),
        ]
    }

    /// The arguments after `app`.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let [cgroup, device, offset, cache, anon] = args else {
            return Err(format!(
                "usage: guest-init app <cgroup> <device> <offset_mb> <cache_mb> <anon_mb> (got {} arguments)",
                args.len()
            ));
        };
        let num = |what: &str, v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{what}: `{v}` is not a number of MiB"))
        };
        Ok(AppArgs {
            cgroup: cgroup.clone(),
            device: device.clone(),
            offset_mb: num("offset_mb", offset)?,
            cache_mb: num("cache_mb", cache)?,
            anon_mb: num("anon_mb", anon)?,
        })
    }
}

/// Reads `len` bytes of `file` from `offset` through the page cache.
fn read_range(file: &mut File, offset: u64, len: u64) -> std::io::Result<u64> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0;
    while done < len {
        let want = (len - done).min(buf.len() as u64) as usize;
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        done += n as u64;
    }
    Ok(done)
}

/// Entry point of `guest-init app ...`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let args = match AppArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("app: {e}");
            return 2;
        }
    };
    if let Err(e) = cgroup::enter(Path::new(&args.cgroup)) {
        eprintln!("app: {}: {e}", args.cgroup);
        return 3;
    }
    // Written page by page so that every page is faulted in (and charged).
    let page = crate::sys::page_size();
    let mut anon = vec![0u8; (args.anon_mb as usize) << 20];
    for i in (0..anon.len()).step_by(page) {
        anon[i] = 1;
    }
    // Kept open while the application lives: the kernel drops a block
    // device's page cache when its last opener closes it.
    let mut device = match File::open(&args.device) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("app: open {}: {e}", args.device);
            return 4;
        }
    };
    let cached = match read_range(&mut device, args.offset_mb << 20, args.cache_mb << 20) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("app: read {}: {e}", args.device);
            return 4;
        }
    };
    let _ = writeln!(std::io::stdout().lock(), "{READY} {cached}");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
        std::hint::black_box((&anon, &device));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip_and_errors() {
        let a = AppArgs {
            cgroup: "/sys/fs/cgroup/mmci-app-03".into(),
            device: "/dev/vdd".into(),
            offset_mb: 6,
            cache_mb: 2,
            anon_mb: 1,
        };
        let argv = a.to_args();
        assert_eq!(argv[0], "app");
        assert_eq!(AppArgs::parse(&argv[1..]), Ok(a));
        let bad = |v: &[&str]| {
            AppArgs::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err()
        };
        assert!(bad(&["/cg", "/dev/vdd", "6", "2"]).contains("got 4 arguments"));
        assert_eq!(
            bad(&["/cg", "/dev/vdd", "six", "2", "1"]),
            "offset_mb: `six` is not a number of MiB"
        );
    }

    #[test]
    fn reads_a_range_through_the_page_cache() {
        let dir = std::env::temp_dir().join(format!("mmci-app-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk");
        std::fs::write(&path, vec![7u8; 3 << 20]).unwrap();
        let mut f = File::open(&path).unwrap();
        assert_eq!(read_range(&mut f, 1 << 20, 1 << 20).unwrap(), 1 << 20);
        // Past the end: what is there.
        assert_eq!(read_range(&mut f, 2 << 20, 4 << 20).unwrap(), 1 << 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
