//! What a command needs before any work: QEMU and guest-init for each
//! arch. Where series named by message-id or pull request come from and
//! each kernel variant's source are `run::request`'s, re-exported here.

use crate::arch::Arch;
use crate::error::AppError;
use crate::guest::bin as guest_bin;

pub use crate::run::request::{variant_sources, Endpoints};

/// QEMU and guest-init for `arch`, before any work.
pub fn guest_prerequisites(arch: Arch) -> Result<&'static [u8], AppError> {
    let qemu = arch.qemu_binary();
    if crate::host::tools::on_path(qemu).is_none() {
        return Err(AppError::MissingQemu(qemu.to_string()));
    }
    guest_bin::guest_init(arch).ok_or(AppError::MissingGuestInit {
        arch,
        triple: guest_bin::guest_triple(arch),
    })
}
