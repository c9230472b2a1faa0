//! Guest architectures and everything that differs between them.

use std::fmt;
use std::str::FromStr;

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    X86_64,
    Arm64,
}

impl Default for Arch {
    /// The host's own arch on the machines mmci runs on.
    fn default() -> Arch {
        Arch::X86_64
    }
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// `ARCH=` for the kernel's make.
    pub fn kernel_arch(self) -> &'static str {
        self.name()
    }

    /// `CROSS_COMPILE=` when building on an x86_64 host.
    pub fn cross_compile(self) -> Option<&'static str> {
        match self {
            Arch::X86_64 => None,
            Arch::Arm64 => Some("aarch64-linux-gnu-"),
        }
    }

    /// The C compiler make will use (its version is part of the build cache key).
    pub fn compiler(self) -> String {
        format!("{}gcc", self.cross_compile().unwrap_or(""))
    }

    /// make target producing the boot image, and where it lands in O=.
    /// x86_64 boots vmlinux through its PVH entry point: no decompression.
    pub fn image_target(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 => ("vmlinux", "vmlinux"),
            Arch::Arm64 => ("Image", "arch/arm64/boot/Image"),
        }
    }

    pub fn qemu_binary(self) -> &'static str {
        match self {
            Arch::X86_64 => "qemu-system-x86_64",
            Arch::Arm64 => "qemu-system-aarch64",
        }
    }

    /// The serial console the kernel writes to.
    pub fn console(self) -> &'static str {
        match self {
            Arch::X86_64 => "ttyS0",
            Arch::Arm64 => "ttyAMA0",
        }
    }

    /// Name of the arch's config fragment under kernels/.
    pub fn fragment_name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64.config",
            Arch::Arm64 => "arm64.config",
        }
    }

    /// Can KVM run this guest on this host at all?
    pub fn kvm_possible(self) -> bool {
        match self {
            Arch::X86_64 => cfg!(target_arch = "x86_64"),
            Arch::Arm64 => cfg!(target_arch = "aarch64"),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Arch {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "x86_64" | "x86-64" | "amd64" => Ok(Arch::X86_64),
            "arm64" | "aarch64" => Ok(Arch::Arm64),
            _ => Err(format!("unknown architecture `{s}` (known: x86_64, arm64)")),
        }
    }
}
