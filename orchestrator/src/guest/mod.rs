//! The guest machine: guest-init binaries embedded at build time (`bin`),
//! the initramfs that carries it and the job (`initramfs`), Debian
//! userspace images built from `images/<name>/image.yaml` (`image/`:
//! recipe, resolve, build, show), and QEMU (`vm`: argument lists, one
//! launch, records and console).

pub mod bin;
pub mod image;
pub mod initramfs;
pub mod vm;

use crate::arch::Arch;

/// What a guest of an arch needs from this host and this build of mmci,
/// and did not find: one error wherever it is checked (before a command,
/// before a matrix, at a QEMU launch), so it reads and exits the same.
#[derive(Debug, thiserror::Error)]
pub enum Missing {
    #[error("{0} not found on PATH: install QEMU with ./mmci-setup (Debian: qemu-system-x86 / qemu-system-arm from bookworm-backports)")]
    Qemu(String),
    #[error("this mmci was built without guest-init for {arch}: run `rustup target add {triple}` and rebuild")]
    GuestInit { arch: Arch, triple: &'static str },
}

/// QEMU on PATH and guest-init embedded for `arch`: the guest-init binary.
pub fn check(arch: Arch) -> Result<&'static [u8], Missing> {
    let qemu = arch.qemu_binary();
    if crate::host::tools::on_path(qemu).is_none() {
        return Err(Missing::Qemu(qemu.to_string()));
    }
    bin::guest_init(arch).ok_or(Missing::GuestInit {
        arch,
        triple: bin::guest_triple(arch),
    })
}
