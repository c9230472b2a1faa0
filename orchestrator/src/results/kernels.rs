//! The kernels of a results dir: each variant's build as the manifest
//! records it ([`VariantKernel`]), the builds that failed, and the copy of
//! each build's `.config` kept in the dir (`kernels/<variant>-<arch>[-
//! <flavour>].config`), which the reports link to.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::kernel::Flavour;
use crate::results::KernelInfo;

/// Where the kernels' `.config` copies are in a results dir.
pub const KERNELS: &str = "kernels";

/// Largest `.config` copied (a full distribution config is about 300 KiB).
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// A built kernel variant, as recorded for the reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantKernel {
    pub variant: String,
    pub arch: crate::arch::Arch,
    /// Each variant is built once per arch and flavour its cells use; a
    /// default flavour is left out of the manifest, which therefore reads
    /// as it did before flavours.
    #[serde(default, skip_serializing_if = "Flavour::is_default")]
    pub flavour: Flavour,
    pub description: String,
    pub kernel: KernelInfo,
    /// Compiler warnings this variant's build has and the baseline's lacks.
    pub new_warnings: Vec<String>,
    /// The build's `.config`, copied into the results dir: its path there
    /// (`kernels/patched-x86_64.config`). Absent for a given image and in
    /// manifests written before the copy was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
}

impl VariantKernel {
    /// Is this the build of `variant` for `arch` in `flavour`?
    pub fn is(&self, variant: &str, arch: crate::arch::Arch, flavour: Flavour) -> bool {
        self.variant == variant && self.arch == arch && self.flavour == flavour
    }

    /// `x86_64`, or `x86_64, debug` for a flavour other than the default.
    pub fn target(&self) -> String {
        target_text(self.arch, self.flavour)
    }

    /// `kernels/patched-x86_64.config`, `kernels/patched-x86_64-debug.config`:
    /// where this build's `.config` goes in a results dir. Variant names
    /// are checked by the plan; anything else is replaced all the same.
    pub fn config_path(&self) -> String {
        let name: String = self
            .variant
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let flavour = if self.flavour.is_default() {
            String::new()
        } else {
            format!("-{}", self.flavour)
        };
        format!("{KERNELS}/{name}-{}{flavour}.config", self.arch)
    }

    /// Copies the build's `.config` into the results dir `root` and records
    /// where. Without a build (a given image) nothing is done; a copy that
    /// fails is logged, and the report goes without the link.
    pub fn keep_config(&mut self, root: &Path) {
        let Some(from) = self.kernel.config.clone() else {
            return;
        };
        let rel = self.config_path();
        let to = root.join(&rel);
        let copied = crate::host::fs::read_capped(
            &from,
            MAX_CONFIG_BYTES,
            "MAX_CONFIG_BYTES",
            crate::host::fs::Accept::RegularNoSymlink,
        )
        .and_then(|bytes| {
            std::fs::create_dir_all(root.join(KERNELS))?;
            crate::host::fs::write_atomic(&to, &bytes)
        });
        match copied {
            Ok(()) => self.config = Some(rel),
            Err(e) => tracing::warn!("{}: not copied to {}: {e}", from.display(), to.display()),
        }
    }
}

/// `x86_64`, or `x86_64, debug`: where a kernel build is for, in reports.
pub fn target_text(arch: crate::arch::Arch, flavour: Flavour) -> String {
    if flavour.is_default() {
        arch.to_string()
    } else {
        format!("{arch}, {flavour}")
    }
}

/// A variant that could not be built: its runs are not attempted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantFailure {
    pub variant: String,
    pub arch: crate::arch::Arch,
    #[serde(default, skip_serializing_if = "Flavour::is_default")]
    pub flavour: Flavour,
    pub error: String,
    /// Where it stopped: the series did not apply, or the build failed
    /// after applying it. Absent when the error does not say (a failure
    /// before any series was applied) and in manifests written before it
    /// was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<crate::kernel::FailedStep>,
}
