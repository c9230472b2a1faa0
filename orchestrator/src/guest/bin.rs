//! guest-init binaries embedded at build time (see orchestrator/build.rs).

use crate::arch::Arch;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/guest_bins.rs"));
}

/// guest-init for `arch`, or None if its Rust target was not installed when
/// mmci was built.
pub fn guest_init(arch: Arch) -> Option<&'static [u8]> {
    match arch {
        Arch::X86_64 => embedded::GUEST_INIT_X86_64,
        Arch::Arm64 => embedded::GUEST_INIT_AARCH64,
    }
}

/// Rust target triple of guest-init for `arch`.
pub fn guest_triple(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64-unknown-linux-musl",
        Arch::Arm64 => "aarch64-unknown-linux-musl",
    }
}
