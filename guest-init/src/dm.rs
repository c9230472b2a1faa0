//! Device-mapper through /dev/mapper/control ioctls, as dmsetup does it but
//! without dmsetup: build the `struct dm_ioctl` buffers (pure functions, unit
//! tested against the uapi layout) and issue DM_DEV_CREATE, DM_TABLE_LOAD and
//! DM_DEV_SUSPEND (resume).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::sys;

/// sizeof(struct dm_ioctl) in include/uapi/linux/dm-ioctl.h.
pub const DM_IOCTL_SIZE: usize = 312;
/// sizeof(struct dm_target_spec).
pub const DM_TARGET_SPEC_SIZE: usize = 40;
const DM_NAME_LEN: usize = 128;
const DM_UUID_LEN: usize = 129;
const DM_MAX_TYPE_NAME: usize = 16;

// Offsets of struct dm_ioctl's fields.
const OFF_DATA_SIZE: usize = 12;
const OFF_DATA_START: usize = 16;
const OFF_TARGET_COUNT: usize = 20;
const OFF_FLAGS: usize = 28;
const OFF_DEV: usize = 40;
const OFF_NAME: usize = 48;

/// The interface version we speak; the kernel accepts any 4.x with x <= its own.
const DM_VERSION: [u32; 3] = [4, 0, 0];

/// Read-only table (dm-verity needs it; scenario B).
pub const DM_READONLY_FLAG: u32 = 1 << 0;

const DM_DEV_CREATE_CMD: u8 = 3;
const DM_DEV_SUSPEND_CMD: u8 = 6;
const DM_TABLE_LOAD_CMD: u8 = 9;

/// `_IOWR(DM_IOCTL, cmd, struct dm_ioctl)` with the generic ioctl encoding
/// (x86_64 and arm64 both use it).
pub const fn dm_ioctl_request(cmd: u8) -> u64 {
    const IOC_READ_WRITE: u64 = 3;
    const DM_IOCTL_TYPE: u64 = 0xfd;
    (IOC_READ_WRITE << 30) | ((DM_IOCTL_SIZE as u64) << 16) | (DM_IOCTL_TYPE << 8) | cmd as u64
}

fn put_u32(buf: &mut [u8], off: usize, v: u32) {
    buf[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(buf: &mut [u8], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

/// A dm_ioctl header for device `name`, announcing `data_size` bytes in all.
pub fn ioctl_header(name: &str, data_size: usize, flags: u32, target_count: u32) -> Vec<u8> {
    assert!(name.len() < DM_NAME_LEN, "device-mapper name too long");
    let mut buf = vec![0u8; data_size.max(DM_IOCTL_SIZE)];
    for (i, v) in DM_VERSION.iter().enumerate() {
        put_u32(&mut buf, i * 4, *v);
    }
    let len = buf.len() as u32;
    put_u32(&mut buf, OFF_DATA_SIZE, len);
    put_u32(&mut buf, OFF_DATA_START, DM_IOCTL_SIZE as u32);
    put_u32(&mut buf, OFF_TARGET_COUNT, target_count);
    put_u32(&mut buf, OFF_FLAGS, flags);
    buf[OFF_NAME..OFF_NAME + name.len()].copy_from_slice(name.as_bytes());
    let _ = DM_UUID_LEN; // uuid stays empty: names are unique enough in a guest.
    buf
}

/// One target line of a table: `start length type params`, in 512-byte sectors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub start: u64,
    pub length: u64,
    pub kind: String,
    pub params: String,
}

/// The DM_TABLE_LOAD buffer: header, then for each target a dm_target_spec
/// followed by its NUL-terminated parameter string padded to 8 bytes; each
/// spec's `next` is the offset from that spec to the next one.
pub fn table_load_buffer(name: &str, targets: &[Target], flags: u32) -> Vec<u8> {
    let mut data = Vec::new();
    for t in targets {
        assert!(t.kind.len() < DM_MAX_TYPE_NAME, "target type name too long");
        let params_len = (t.params.len() + 1).next_multiple_of(8);
        let mut spec = vec![0u8; DM_TARGET_SPEC_SIZE + params_len];
        put_u64(&mut spec, 0, t.start);
        put_u64(&mut spec, 8, t.length);
        // status (offset 16) stays 0.
        put_u32(&mut spec, 20, (DM_TARGET_SPEC_SIZE + params_len) as u32);
        spec[24..24 + t.kind.len()].copy_from_slice(t.kind.as_bytes());
        spec[DM_TARGET_SPEC_SIZE..DM_TARGET_SPEC_SIZE + t.params.len()]
            .copy_from_slice(t.params.as_bytes());
        data.extend_from_slice(&spec);
    }
    let mut buf = ioctl_header(
        name,
        DM_IOCTL_SIZE + data.len(),
        flags,
        targets.len() as u32,
    );
    buf[DM_IOCTL_SIZE..].copy_from_slice(&data);
    buf
}

/// Decodes the `dev` field the kernel fills in (huge_encode_dev) into
/// (major, minor).
pub fn decode_dev(dev: u64) -> (u32, u32) {
    let major = ((dev & 0xfff00) >> 8) as u32;
    let minor = ((dev & 0xff) | ((dev >> 12) & 0xfff00)) as u32;
    (major, minor)
}

fn control() -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/mapper/control")
        .map_err(|e| io::Error::new(e.kind(), format!("/dev/mapper/control: {e}")))
}

fn run(ctl: &File, what: &str, cmd: u8, buf: &mut [u8]) -> io::Result<()> {
    sys::ioctl_buf(ctl, dm_ioctl_request(cmd), buf)
        .map_err(|e| io::Error::new(e.kind(), format!("{what}: {e}")))
}

/// Creates device `name` with `targets`, activates it and returns its /dev
/// node (/dev/dm-<minor>: there is no udev to make /dev/mapper/<name>).
pub fn create_device(name: &str, targets: &[Target], flags: u32) -> io::Result<PathBuf> {
    let ctl = control()?;
    let mut create = ioctl_header(name, DM_IOCTL_SIZE, 0, 0);
    run(&ctl, "DM_DEV_CREATE", DM_DEV_CREATE_CMD, &mut create)?;
    let dev = u64::from_ne_bytes(create[OFF_DEV..OFF_DEV + 8].try_into().unwrap());
    let (_, minor) = decode_dev(dev);

    let mut load = table_load_buffer(name, targets, flags);
    run(&ctl, "DM_TABLE_LOAD", DM_TABLE_LOAD_CMD, &mut load)?;
    // DM_DEV_SUSPEND without DM_SUSPEND_FLAG resumes: the loaded table goes live.
    let mut resume = ioctl_header(name, DM_IOCTL_SIZE, 0, 0);
    run(
        &ctl,
        "DM_DEV_SUSPEND (resume)",
        DM_DEV_SUSPEND_CMD,
        &mut resume,
    )?;

    // devtmpfs creates the node asynchronously once the disk is added.
    let node = PathBuf::from(format!("/dev/dm-{minor}"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !node.exists() {
        if Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} did not appear", node.display()),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(node)
}

/// The dm-delay table line's parameters: `<dev> <offset> <delay_ms>` delays
/// reads, writes and flushes alike.
pub fn delay_params(major: u32, minor: u32, delay_ms: u32) -> String {
    format!("{major}:{minor} 0 {delay_ms}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(buf: &[u8], off: usize) -> u32 {
        u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap())
    }

    #[test]
    fn request_numbers_match_the_uapi_macros() {
        // Values of _IOWR(0xfd, n, struct dm_ioctl) computed by hand:
        // (3 << 30) | (312 << 16) | (0xfd << 8) | n.
        assert_eq!(dm_ioctl_request(DM_DEV_CREATE_CMD), 0xc138_fd03);
        assert_eq!(dm_ioctl_request(DM_DEV_SUSPEND_CMD), 0xc138_fd06);
        assert_eq!(dm_ioctl_request(DM_TABLE_LOAD_CMD), 0xc138_fd09);
    }

    #[test]
    fn header_layout() {
        let buf = ioctl_header("mmci-swap", DM_IOCTL_SIZE, DM_READONLY_FLAG, 0);
        assert_eq!(buf.len(), 312);
        assert_eq!(
            (u32_at(&buf, 0), u32_at(&buf, 4), u32_at(&buf, 8)),
            (4, 0, 0)
        );
        assert_eq!(u32_at(&buf, OFF_DATA_SIZE), 312);
        assert_eq!(u32_at(&buf, OFF_DATA_START), 312);
        assert_eq!(u32_at(&buf, OFF_FLAGS), 1);
        assert_eq!(&buf[48..57], b"mmci-swap");
        assert_eq!(buf[57], 0);
    }

    #[test]
    fn table_load_layout_for_one_delay_target() {
        let t = Target {
            start: 0,
            length: 262_144,
            kind: "delay".into(),
            params: delay_params(254, 0, 50),
        };
        let buf = table_load_buffer("mmci-swap", &[t], 0);
        // "254:0 0 50" is 10 bytes + NUL = 11, padded to 16.
        assert_eq!(buf.len(), 312 + 40 + 16);
        assert_eq!(u32_at(&buf, OFF_DATA_SIZE), buf.len() as u32);
        assert_eq!(u32_at(&buf, OFF_TARGET_COUNT), 1);
        let spec = &buf[312..];
        assert_eq!(u64::from_ne_bytes(spec[0..8].try_into().unwrap()), 0);
        assert_eq!(u64::from_ne_bytes(spec[8..16].try_into().unwrap()), 262_144);
        assert_eq!(u32_at(spec, 20), 56, "next = spec + padded params");
        assert_eq!(&spec[24..30], b"delay\0");
        assert_eq!(&spec[40..51], b"254:0 0 50\0");
        assert!(spec[51..].iter().all(|b| *b == 0));
    }

    #[test]
    fn params_exactly_filling_eight_bytes_still_get_their_nul() {
        let t = Target {
            start: 0,
            length: 8,
            kind: "linear".into(),
            params: "8:0 0123".into(), // 8 bytes
        };
        let buf = table_load_buffer("x", &[t], 0);
        assert_eq!(buf.len(), 312 + 40 + 16);
        assert_eq!(buf[312 + 40 + 8], 0);
    }

    #[test]
    fn dev_decoding() {
        // new_encode_dev(MKDEV(254, 0)) and MKDEV(254, 300).
        assert_eq!(decode_dev(254 << 8), (254, 0));
        let minor: u64 = 300;
        let enc = (minor & 0xff) | (254 << 8) | ((minor & !0xff) << 12);
        assert_eq!(decode_dev(enc), (254, 300));
    }
}
