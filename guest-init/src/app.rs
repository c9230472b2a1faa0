//! `guest-init app <cgroup> <device> <offset_mb> <cache_mb> <anon_mb>
//! [<span_mb> <stream_kb_s>]`: one of scenario B's application memcgs. It
//! joins its cgroup, writes `anon_mb` of anonymous memory once, reads
//! `cache_mb` of the device from `offset_mb` through the page cache (clean
//! file folios charged to its memcg, read once so they stay on the
//! inactive list; the device stays open, since its last close drops its
//! cache) and says [`READY`]. Then, with `stream_kb_s`, it goes on reading
//! forward through its `span_mb` at most at that rate, wrapping at the end (new
//! inactive file folios for reclaim to take, none read twice while its
//! memcg could still hold them); without, it sleeps until it is killed: an
//! idle application whose cache reclaim may take, as on the seed's
//! machine.

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
    /// The range it streams through (from `offset_mb`); `cache_mb` when it
    /// does not stream.
    pub span_mb: u64,
    /// KiB a second read after the first `cache_mb`; 0: none.
    pub stream_kb_s: u64,
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
            self.span_mb.to_string(),
            self.stream_kb_s.to_string(),
        ]
    }

    /// The arguments after `app`.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let usage = || {
            format!(
                "usage: guest-init app <cgroup> <device> <offset_mb> <cache_mb> <anon_mb> [<span_mb> <stream_kb_s>] (got {} arguments)",
                args.len()
            )
        };
        let (cgroup, device, offset, cache, anon, stream) = match args {
            [c, d, o, k, a] => (c, d, o, k, a, None),
            [c, d, o, k, a, s, r] => (c, d, o, k, a, Some((s, r))),
            _ => return Err(usage()),
        };
        let num = |what: &str, v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{what}: `{v}` is not a number"))
        };
        let cache_mb = num("cache_mb", cache)?;
        let (span_mb, stream_kb_s) = match stream {
            Some((s, r)) => (num("span_mb", s)?, num("stream_kb_s", r)?),
            None => (cache_mb, 0),
        };
        if span_mb < cache_mb {
            return Err(format!(
                "span_mb {span_mb} is smaller than cache_mb {cache_mb}"
            ));
        }
        Ok(AppArgs {
            cgroup: cgroup.clone(),
            device: device.clone(),
            offset_mb: num("offset_mb", offset)?,
            cache_mb,
            anon_mb: num("anon_mb", anon)?,
            span_mb,
            stream_kb_s,
        })
    }
}

/// Reads `len` bytes of `file` from `offset` through the page cache.
/// `buf` is the caller's, reused: a streaming application reads a few
/// times a second, and a fresh buffer each time would be anon churn in
/// its memcg while memory is short.
fn read_range(file: &mut File, offset: u64, len: u64, buf: &mut [u8]) -> std::io::Result<u64> {
    file.seek(SeekFrom::Start(offset))?;
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
    let mut buf = vec![0u8; 1 << 20];
    let cached = match read_range(
        &mut device,
        args.offset_mb << 20,
        args.cache_mb << 20,
        &mut buf,
    ) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("app: read {}: {e}", args.device);
            return 4;
        }
    };
    let _ = writeln!(std::io::stdout().lock(), "{READY} {cached}");
    if args.stream_kb_s > 0 {
        let mut stream = Stream::new(&args);
        loop {
            let (offset, len) = stream.next_chunk();
            if let Err(e) = read_range(&mut device, offset, len, &mut buf) {
                eprintln!("app: read {}: {e}", args.device);
                return 4;
            }
            std::thread::sleep(stream.pause());
            std::hint::black_box(&anon);
        }
    }
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
        std::hint::black_box((&anon, &device));
    }
}

/// Where a streaming application reads next: forward through its span from
/// where the first read stopped, in chunks of [`STREAM_CHUNK`], wrapping
/// at the span's end.
struct Stream {
    start: u64,
    span: u64,
    /// Bytes past `start` of the next chunk.
    at: u64,
    /// The pause after each chunk that holds the rate.
    pause: std::time::Duration,
}

/// 64 KiB: small enough that a slow rate still reads a few times a second.
const STREAM_CHUNK: u64 = 64 << 10;

impl Stream {
    fn new(args: &AppArgs) -> Stream {
        let kb_s = args.stream_kb_s.max(1);
        Stream {
            start: args.offset_mb << 20,
            span: (args.span_mb << 20).max(STREAM_CHUNK),
            at: args.cache_mb << 20,
            pause: std::time::Duration::from_micros((STREAM_CHUNK >> 10) * 1_000_000 / kb_s),
        }
    }

    /// (offset, length) of the next read.
    fn next_chunk(&mut self) -> (u64, u64) {
        if self.at >= self.span {
            self.at = 0;
        }
        let len = STREAM_CHUNK.min(self.span - self.at);
        let chunk = (self.start + self.at, len);
        self.at += len;
        chunk
    }

    fn pause(&self) -> std::time::Duration {
        self.pause
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
            span_mb: 32,
            stream_kb_s: 512,
        };
        let argv = a.to_args();
        assert_eq!(argv[0], "app");
        assert_eq!(AppArgs::parse(&argv[1..]), Ok(a));
        // The five-argument form: read once, no stream.
        let once = AppArgs::parse(&argv[1..6]).unwrap();
        assert_eq!((once.span_mb, once.stream_kb_s), (2, 0));
        let bad = |v: &[&str]| {
            AppArgs::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err()
        };
        assert!(bad(&["/cg", "/dev/vdd", "6", "2"]).contains("got 4 arguments"));
        assert!(bad(&["/cg", "/dev/vdd", "6", "2", "1", "32"]).contains("got 6 arguments"));
        assert_eq!(
            bad(&["/cg", "/dev/vdd", "six", "2", "1"]),
            "offset_mb: `six` is not a number"
        );
        assert_eq!(
            bad(&["/cg", "/dev/vdd", "6", "4", "1", "2", "100"]),
            "span_mb 2 is smaller than cache_mb 4"
        );
    }

    #[test]
    fn a_stream_goes_on_where_the_first_read_stopped_and_wraps() {
        let args = AppArgs {
            cgroup: "/cg".into(),
            device: "/dev/vdd".into(),
            offset_mb: 10,
            cache_mb: 1,
            anon_mb: 0,
            span_mb: 2,
            stream_kb_s: 256,
        };
        let mut s = Stream::new(&args);
        let base = 10u64 << 20;
        let chunks: Vec<(u64, u64)> = (0..17).map(|_| s.next_chunk()).collect();
        // 1 MiB read first; 16 chunks of 64 KiB to the span's end, then from
        // its start again.
        assert_eq!(chunks[0], (base + (1 << 20), STREAM_CHUNK));
        assert_eq!(chunks[15], (base + (2 << 20) - STREAM_CHUNK, STREAM_CHUNK));
        assert_eq!(chunks[16], (base, STREAM_CHUNK));
        // 64 KiB at 256 KiB/s: a quarter of a second between reads.
        assert_eq!(s.pause(), std::time::Duration::from_millis(250));
    }

    #[test]
    fn reads_a_range_through_the_page_cache() {
        let dir = std::env::temp_dir().join(format!("mmci-app-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk");
        std::fs::write(&path, vec![7u8; 3 << 20]).unwrap();
        let mut f = File::open(&path).unwrap();
        let mut buf = vec![0u8; 64 << 10];
        assert_eq!(
            read_range(&mut f, 1 << 20, 1 << 20, &mut buf).unwrap(),
            1 << 20
        );
        // Past the end: what is there.
        assert_eq!(
            read_range(&mut f, 2 << 20, 4 << 20, &mut buf).unwrap(),
            1 << 20
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
