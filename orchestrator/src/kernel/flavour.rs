//! Kernel flavours: named sets of config fragments merged over a kernel's
//! own (the bundled `mm.config` + arch fragment, or `--config-fragment`s).
//! `default` adds nothing, so a kernel without a flavour is the kernel it
//! always was (same fragments, same build cache key); `debug` adds
//! `kernels/debug.config` (DEBUG_VM, lockdep, ...) and
//! `kernels/debug-info.config` (DWARF line tables, for file:line in call
//! traces); `kasan` adds `kernels/kasan.config` (generic KASAN). A
//! matrix selects one per cell with the `config` key; `mmci kernel build
//! --flavour` builds one.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::build::Fragment;

/// The debug flavour's fragments, embedded like the bundled ones so that a
/// matrix works from any directory.
pub const DEBUG_FRAGMENT: (&str, &str) = (
    "debug.config",
    include_str!("../../../kernels/debug.config"),
);
pub const DEBUG_INFO_FRAGMENT: (&str, &str) = (
    "debug-info.config",
    include_str!("../../../kernels/debug-info.config"),
);
pub const KASAN_FRAGMENT: (&str, &str) = (
    "kasan.config",
    include_str!("../../../kernels/kasan.config"),
);

/// A kernel flavour.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Flavour {
    /// The kernel's own fragments, nothing added.
    #[default]
    Default,
    /// Debug checks and debug info on top.
    Debug,
    /// Generic KASAN on top (use-after-free, out-of-bounds reports).
    Kasan,
}

impl Flavour {
    pub const ALL: [Flavour; 3] = [Flavour::Default, Flavour::Debug, Flavour::Kasan];

    pub fn name(self) -> &'static str {
        match self {
            Flavour::Default => "default",
            Flavour::Debug => "debug",
            Flavour::Kasan => "kasan",
        }
    }

    /// For `skip_serializing_if`: a default flavour is left out of plans,
    /// manifests and comparisons, which therefore read as before flavours.
    pub fn is_default(&self) -> bool {
        *self == Flavour::Default
    }

    /// What it adds, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Flavour::Default => "the kernel's own config",
            Flavour::Debug => {
                "DEBUG_VM, PROVE_LOCKING, DEBUG_LIST, DEBUG_ATOMIC_SLEEP, hung task and soft lockup detectors, UBSAN bounds checks, KFENCE, DWARF debug info"
            }
            Flavour::Kasan => "generic KASAN (inline), full SLUB",
        }
    }

    /// The fragments merged after the kernel's own, in order.
    pub fn fragments(self) -> Vec<Fragment> {
        let embedded: &[(&str, &str)] = match self {
            Flavour::Default => &[],
            Flavour::Debug => &[DEBUG_FRAGMENT, DEBUG_INFO_FRAGMENT],
            Flavour::Kasan => &[KASAN_FRAGMENT],
        };
        embedded
            .iter()
            .map(|(name, text)| Fragment {
                name: format!("kernels/{name}"),
                text: text.to_string(),
            })
            .collect()
    }

    /// "default, debug, kasan".
    pub fn known() -> String {
        Flavour::ALL
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Flavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Flavour {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Flavour::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "`{s}` is not a kernel flavour (known flavours: {})",
                    Flavour::known()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known() {
        for (text, want) in [
            ("default", Ok(Flavour::Default)),
            ("debug", Ok(Flavour::Debug)),
            ("kasan", Ok(Flavour::Kasan)),
            (
                "kmsan",
                Err("`kmsan` is not a kernel flavour (known flavours: default, debug, kasan)"),
            ),
            (
                "Debug",
                Err("`Debug` is not a kernel flavour (known flavours: default, debug, kasan)"),
            ),
            (
                "",
                Err("`` is not a kernel flavour (known flavours: default, debug, kasan)"),
            ),
        ] {
            let got = text.parse::<Flavour>();
            assert_eq!(got, want.map_err(String::from), "{text:?}");
            if let Ok(f) = got {
                assert_eq!(f.to_string(), text);
                let json = serde_json::to_string(&f).unwrap();
                assert_eq!(json, format!("\"{text}\""));
            }
        }
    }

    #[test]
    fn fragments_per_flavour() {
        for (flavour, names, options) in [
            (Flavour::Default, &[][..], &[][..]),
            (
                Flavour::Debug,
                &["kernels/debug.config", "kernels/debug-info.config"][..],
                &[
                    "CONFIG_DEBUG_VM",
                    "CONFIG_PROVE_LOCKING",
                    "CONFIG_DEBUG_LIST",
                    "CONFIG_DEBUG_INFO_DWARF5",
                ][..],
            ),
            (
                Flavour::Kasan,
                &["kernels/kasan.config"][..],
                &["CONFIG_KASAN", "CONFIG_KASAN_GENERIC", "CONFIG_STACKTRACE"][..],
            ),
        ] {
            let frags = flavour.fragments();
            assert_eq!(
                frags.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
                names,
                "{flavour}"
            );
            let requested: Vec<String> = frags
                .iter()
                .flat_map(|f| super::super::kconfig::parse_fragment(&f.text, &f.name))
                .filter(|r| r.value == "y")
                .map(|r| r.name)
                .collect();
            for o in options {
                assert!(requested.iter().any(|r| r == o), "{flavour}: {o}");
            }
        }
    }
}
