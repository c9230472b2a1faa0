//! What a command needs before any work: QEMU and guest-init for each
//! arch. Where series named by message-id or pull request come from and
//! each kernel variant's source are `run::request`'s, re-exported here.

use crate::arch::Arch;
use crate::error::AppError;

pub use crate::run::request::{variant_sources, Endpoints};

/// QEMU and guest-init for `arch`, before any work.
pub fn guest_prerequisites(arch: Arch) -> Result<&'static [u8], AppError> {
    Ok(crate::guest::check(arch)?)
}
