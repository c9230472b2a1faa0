//! The contract between mmci's host (the orchestrator) and its guest PID 1:
//! the job the guest runs and the records it streams back.
//!
//! Records travel as JSON lines over a named virtio-serial port. Each line is
//! an [`Envelope`]: the format version plus one [`Record`]. The host refuses
//! records of another major format version instead of guessing at them.

/// Version of the record format. Bump on any change a reader of the previous
/// version would misread.
pub const FORMAT_VERSION: u32 = 1;

/// Name of the virtio-serial port that carries records (guest side:
/// `/sys/class/virtio-ports/*/name`).
pub const RECORD_PORT_NAME: &str = "org.mmci.records";

/// Serial number of the virtio disk used as swap (guest side:
/// `/sys/block/*/serial`).
pub const SWAP_DISK_SERIAL: &str = "mmci-swap";

/// Serial of scenario B's dm-verity data disk (`verity_mb` MiB).
pub const VERITY_DATA_DISK_SERIAL: &str = "mmci-vdata";

/// Serial of scenario B's dm-verity hash disk (see [`verity_hash_disk_mb`]).
pub const VERITY_HASH_DISK_SERIAL: &str = "mmci-vhash";

/// Serial of scenario B's page-cache disk: its application memcgs read
/// their clean page cache from it, each its own range. Sparse on the host
/// (its contents do not matter, only that reads of it are cached).
pub const APP_CACHE_DISK_SERIAL: &str = "mmci-appcache";

/// Size of the hash disk for `data_mb` MiB of data: a sha256 tree of 4 KiB
/// blocks needs data/128 for its leaves plus a little for the levels above,
/// so data/32 plus 1 MiB leaves ample room.
pub fn verity_hash_disk_mb(data_mb: u64) -> u64 {
    data_mb / 32 + 1
}

/// Serial of the read-only image disk of the `script` scenario (an erofs
/// file built by `mmci image build`).
pub const IMAGE_DISK_SERIAL: &str = "mmci-image";

/// Prefix of a metric line a script prints on its standard output:
/// `MMCI-METRIC: name=value [name=value ...]`, value a decimal number.
pub const METRIC_PREFIX: &str = "MMCI-METRIC:";

/// Path of the job description inside the initramfs.
pub const JOB_PATH: &str = "/mmci/job.json";

/// Prefix of job parameters on the kernel command line (`mmci.threads=64`).
pub const CMDLINE_PREFIX: &str = "mmci.";

/// Scenario B's hog: random writes a second (see [`GuestJob::hog_touch_rate`]).
/// Unpaced, a 475 MiB hog on a 2-vCPU TCG guest made 350,000 a second on an
/// idle host (every page written again within 0.4 s, so that reclaim found
/// none it could take: all anon active, `all_unreclaimable`, and the global
/// OOM killer took the hog) and 60,000 to 95,000 on a busy one. Paced at
/// 60,000 (each page every 2 s), 3 of 3 runs reached the RFC's corner with
/// no OOM kill; at 20,000, 2 of 3.
pub const HOG_TOUCH_RATE_DEFAULT: u64 = 60_000;

/// Scenario B: the words a `hog` or `hog-end` set-up step's detail carries
/// when the hog process has ended (it must run until the reads are over).
pub const HOG_GONE: &str = "the hog is gone";

mod envelope;
mod job;
mod records;
mod scenario;
mod script_job;

pub use envelope::*;
pub use job::*;
pub use records::*;
pub use scenario::*;
pub use script_job::*;
