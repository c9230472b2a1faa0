//! zram as swap (the `swap: zram` backend): size /dev/zram0 through sysfs
//! (Documentation/admin-guide/blockdev/zram.rst), then the usual swap
//! header and swapon. Built in (CONFIG_ZRAM=y), the driver creates zram0
//! at boot and devtmpfs gives it its node.

use std::io;
use std::path::{Path, PathBuf};

const SYSFS: &str = "/sys/block/zram0";
const NODE: &str = "/dev/zram0";
/// kernels/mm.config builds this backend (and makes it the default).
const COMPRESSOR: &str = "lz4";

fn write(attr: &str, value: &str) -> io::Result<()> {
    let path = Path::new(SYSFS).join(attr);
    std::fs::write(&path, value)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The selected algorithm of `comp_algorithm`, which lists them all with the
/// current one in brackets: `lzo-rle [lz4] lz4hc`.
pub fn selected_algorithm(listing: &str) -> Option<&str> {
    listing
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

/// Sets up /dev/zram0 with `bytes` of (uncompressed) capacity as swap;
/// returns its node and a description.
pub fn setup_swap(bytes: u64) -> io::Result<(PathBuf, String)> {
    if !Path::new(SYSFS).exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{SYSFS} is missing: the kernel lacks CONFIG_ZRAM"),
        ));
    }
    // The algorithm can only be chosen before the disk is sized.
    write("comp_algorithm", COMPRESSOR)?;
    write("disksize", &bytes.to_string())?;
    let algorithm = std::fs::read_to_string(Path::new(SYSFS).join("comp_algorithm"))
        .ok()
        .and_then(|l| selected_algorithm(&l).map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let node = PathBuf::from(NODE);
    crate::swap::mkswap_and_swapon(&node, bytes)?;
    Ok((node, format!("{NODE} ({algorithm}), {} MiB", bytes >> 20)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_algorithm_is_the_bracketed_one() {
        let cases = [
            ("lzo-rle [lz4] lz4hc\n", Some("lz4")),
            ("[lzo-rle] lzo lz4\n", Some("lzo-rle")),
            ("lzo lz4\n", None),
            ("", None),
        ];
        for (listing, want) in cases {
            assert_eq!(selected_algorithm(listing), want, "{listing:?}");
        }
    }
}
