//! The guest's initramfs, written in Rust as a cpio "newc" archive: guest-init
//! as /init, the job as /mmci/job.json, and /dev/console so that PID 1 starts
//! with the console on its standard streams. No busybox, no shell.

use mmci_record::{GuestJob, JOB_PATH};

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFCHR: u32 = 0o020000;

/// Writes a cpio newc archive into memory.
#[derive(Default)]
pub struct CpioWriter {
    out: Vec<u8>,
    next_ino: u32,
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

impl CpioWriter {
    pub fn new() -> Self {
        CpioWriter {
            out: Vec::new(),
            next_ino: 1,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        let name_len = name.len() + 1; // with the NUL
        let fields = [
            self.next_ino,
            mode,
            0, // uid
            0, // gid
            if mode & S_IFDIR != 0 { 2 } else { 1 },
            0, // mtime: fixed, so the archive is reproducible
            data.len() as u32,
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            name_len as u32,
            0, // check (only for the "crc" format)
        ];
        self.next_ino += 1;
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        pad4(&mut self.out);
        self.out.extend_from_slice(data);
        pad4(&mut self.out);
    }

    pub fn dir(&mut self, name: &str) -> &mut Self {
        self.entry(name, S_IFDIR | 0o755, &[], (0, 0));
        self
    }

    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> &mut Self {
        self.entry(name, S_IFREG | perm, data, (0, 0));
        self
    }

    pub fn char_dev(&mut self, name: &str, perm: u32, major: u32, minor: u32) -> &mut Self {
        self.entry(name, S_IFCHR | perm, &[], (major, minor));
        self
    }

    /// Appends the trailer and returns the archive.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        self.out
    }
}

/// The initramfs for one guest run.
pub fn initramfs(guest_init: &[u8], job: &GuestJob) -> Vec<u8> {
    let job_json = serde_json::to_vec_pretty(job).expect("job serializes");
    let job_path = JOB_PATH.trim_start_matches('/');
    let mut cpio = CpioWriter::new();
    cpio.dir("dev")
        .char_dev("dev/console", 0o600, 5, 1)
        .dir("proc")
        .dir("sys")
        .dir("mmci")
        .file(job_path, 0o644, &job_json)
        .file("init", 0o755, guest_init);
    cpio.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_layout_of_one_file() {
        let mut w = CpioWriter::new();
        w.file("init", 0o755, b"hello");
        let out = w.finish();
        // Header: magic + 13 fields of 8 hex digits = 110 bytes.
        assert_eq!(&out[..6], b"070701");
        let field = |i: usize| {
            std::str::from_utf8(&out[6 + i * 8..14 + i * 8])
                .unwrap()
                .to_string()
        };
        assert_eq!(field(1), "000081ED", "regular file 0755");
        assert_eq!(field(6), "00000005", "filesize");
        assert_eq!(field(11), "00000005", "namesize includes the NUL");
        // 110 + "init\0" = 115 -> padded to 116; data 5 -> padded to 8.
        assert_eq!(&out[110..115], b"init\0");
        assert_eq!(&out[116..121], b"hello");
        assert_eq!(out[121..124], [0, 0, 0]);
        assert_eq!(&out[124..130], b"070701");
        assert!(out.len().is_multiple_of(4));
        assert!(out.windows(10).any(|w| w == b"TRAILER!!!"));
    }

    #[test]
    fn cpio_tool_lists_and_extracts_it() {
        // Checked against GNU cpio (installed by ./mmci-setup): a missing
        // tool fails the test rather than passing it unchecked.
        let version = std::process::Command::new("cpio").arg("--version").output();
        assert!(
            version.is_ok_and(|o| o.status.success()),
            "GNU cpio is needed for this test: run ./mmci-setup --test"
        );
        let tmp = tempfile::tempdir().unwrap();
        let archive = tmp.path().join("initrd.cpio");
        let job = GuestJob {
            threads: 3,
            ..GuestJob::default()
        };
        std::fs::write(&archive, initramfs(b"\x7fELF-not-really", &job)).unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("cpio -it < {}", archive.display()))
            .output()
            .unwrap();
        let list = String::from_utf8_lossy(&out.stdout);
        for name in ["dev/console", "mmci/job.json", "init"] {
            assert!(
                list.lines().any(|l| l == name),
                "{name} missing from {list}"
            );
        }
    }

    #[test]
    fn initramfs_carries_the_job() {
        let job = GuestJob {
            threads: 192,
            ..GuestJob::default()
        };
        let archive = initramfs(b"binary", &job);
        let text = String::from_utf8_lossy(&archive);
        assert!(text.contains("mmci/job.json"));
        assert!(text.contains("\"threads\": 192"));
    }
}
