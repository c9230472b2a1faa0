//! The guest machine: guest-init binaries embedded at build time (`bin`),
//! the initramfs that carries it and the job (`initramfs`), Debian
//! userspace images built from `images/<name>/image.yaml` (`image/`:
//! recipe, resolve, build, show), and QEMU (`vm`: argument lists, one
//! launch, records and console).

pub mod bin;
pub mod image;
pub mod initramfs;
pub mod vm;
