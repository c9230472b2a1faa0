//! mkswap in code (the version-1 header of include/linux/swap.h's
//! `union swap_header`) and swapon.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::sys;

/// Offset of `info` in `union swap_header` (after 1024 bytes of boot block).
const INFO_OFFSET: usize = 1024;
const MAGIC: &[u8; 10] = b"SWAPSPACE2";

/// Page 0 of a swap area of `bytes` bytes: version 1, last_page, no bad
/// pages, a uuid and a label, and the magic at the end of the page.
pub fn swap_header(bytes: u64, page_size: usize, uuid: [u8; 16], label: &str) -> Vec<u8> {
    let mut page = vec![0u8; page_size];
    let last_page = (bytes / page_size as u64).saturating_sub(1) as u32;
    let info = &mut page[INFO_OFFSET..];
    info[0..4].copy_from_slice(&1u32.to_ne_bytes()); // version
    info[4..8].copy_from_slice(&last_page.to_ne_bytes());
    info[8..12].copy_from_slice(&0u32.to_ne_bytes()); // nr_badpages
    info[12..28].copy_from_slice(&uuid);
    let label = &label.as_bytes()[..label.len().min(15)];
    info[28..28 + label.len()].copy_from_slice(label);
    page[page_size - MAGIC.len()..].copy_from_slice(MAGIC);
    page
}

/// Writes a swap header over the whole of `device` (`bytes` long) and
/// enables it.
pub fn mkswap_and_swapon(device: &Path, bytes: u64) -> io::Result<()> {
    let page_size = sys::page_size();
    if bytes < 10 * page_size as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {bytes} bytes is too small for swap", device.display()),
        ));
    }
    let uuid = {
        let seed = sys::uptime_ms().to_ne_bytes();
        let mut u = [0x6du8; 16];
        u[..8].copy_from_slice(&seed);
        u
    };
    let header = swap_header(bytes, page_size, uuid, "mmci-swap");
    let dev = OpenOptions::new().read(true).write(true).open(device)?;
    dev.write_all_at(&header, 0)?;
    dev.sync_all()?;
    drop(dev);
    sys::swapon(device)
        .map_err(|e| io::Error::new(e.kind(), format!("swapon {}: {e}", device.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_at_their_offsets() {
        let page = swap_header(64 << 20, 4096, [7; 16], "mmci-swap");
        assert_eq!(page.len(), 4096);
        let u32_at = |off: usize| u32::from_ne_bytes(page[off..off + 4].try_into().unwrap());
        assert_eq!(u32_at(1024), 1, "version");
        assert_eq!(u32_at(1028), (64 << 20) / 4096 - 1, "last_page");
        assert_eq!(u32_at(1032), 0, "nr_badpages");
        assert_eq!(&page[1036..1052], &[7; 16]);
        assert_eq!(&page[1052..1061], b"mmci-swap");
        assert_eq!(&page[4086..], b"SWAPSPACE2");
        assert!(
            page[..1024].iter().all(|b| *b == 0),
            "boot block stays empty"
        );
    }

    #[test]
    fn header_for_64k_pages() {
        let page = swap_header(1 << 30, 65536, [0; 16], "");
        assert_eq!(&page[65526..], b"SWAPSPACE2");
        let last = u32::from_ne_bytes(page[1028..1032].try_into().unwrap());
        assert_eq!(last, (1 << 30) / 65536 - 1);
    }

    #[test]
    fn header_matches_what_mkswap_writes() {
        // Written with util-linux mkswap on a 1 MiB file (4 KiB pages) and
        // dumped with `od -An -tx1 -j1024 -N12`: 01 00 00 00 ff 00 00 00 00 00 00 00.
        let page = swap_header(1 << 20, 4096, [0; 16], "");
        assert_eq!(&page[1024..1036], &[1, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0]);
    }
}
