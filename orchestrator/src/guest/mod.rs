//! The guest machine: guest-init binaries embedded at build time (`bin`),
//! the initramfs that carries it and the job (`initramfs`), and QEMU
//! (`vm`: argument lists, one launch, records and console).

pub mod bin;
pub mod initramfs;
pub mod vm;
