//! Transparent huge pages through sysfs: the job's mode written to
//! /sys/kernel/mm/transparent_hugepage/enabled and read back.
//!
//! `defrag` (how hard a THP fault tries: direct reclaim and compaction) is
//! set too, always to `madvise`: the kernel's default, but only in a guest
//! of 512 MiB or more; below that hugepage_init() clears every THP flag,
//! defrag's included (so it reads `never`). Writing it makes `thp=always`
//! mean one thing whatever the guest's size: a fault outside a madvised
//! range takes a huge page only when one is free, as on distribution
//! kernels, and a madvised one (`thp=madvise`) may stall in direct
//! compaction like any application that asked for huge pages.

use mmci_record::ThpMode;

pub const DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// What `defrag` is set to (see the top comment).
const DEFRAG: &str = "madvise";

/// The bracketed choice of a sysfs multiple-choice file
/// (`always madvise [never]` -> `never`).
pub fn selected(text: &str) -> Option<&str> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    Some(&text[start..start + len])
}

/// Sets `enabled` to `mode` (`Kernel`: leaves it) and returns a line for
/// the set-up record: enabled and defrag as read back.
pub fn set(mode: ThpMode) -> Result<String, String> {
    let enabled = format!("{DIR}/enabled");
    if !std::path::Path::new(&enabled).exists() {
        return match mode {
            // A kernel without THP has none: what `never` asks for.
            ThpMode::Never | ThpMode::Kernel => {
                Ok(format!("{mode}: no {enabled} (kernel without THP)"))
            }
            _ => Err(format!(
                "thp={mode} asked for, but there is no {enabled}: the kernel was built without CONFIG_TRANSPARENT_HUGEPAGE"
            )),
        };
    }
    if mode != ThpMode::Kernel {
        std::fs::write(&enabled, mode.name()).map_err(|e| format!("{enabled}: {e}"))?;
        let defrag = format!("{DIR}/defrag");
        std::fs::write(&defrag, DEFRAG).map_err(|e| format!("{defrag}: {e}"))?;
    }
    let read = |file: &str| {
        let path = format!("{DIR}/{file}");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        selected(&text)
            .map(str::to_string)
            .ok_or_else(|| format!("{path} reads `{}`", text.trim()))
    };
    let (now, defrag) = (read("enabled")?, read("defrag")?);
    if mode != ThpMode::Kernel && (now != mode.name() || defrag != DEFRAG) {
        return Err(format!(
            "{DIR} reads enabled={now} defrag={defrag} after writing {mode} and {DEFRAG}"
        ));
    }
    Ok(format!("enabled={now} defrag={defrag}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_choice() {
        // (file text, choice)
        let cases = [
            ("[always] madvise never\n", Some("always")),
            ("always madvise [never]\n", Some("never")),
            (
                "always defer defer+madvise [madvise] never\n",
                Some("madvise"),
            ),
            ("always madvise never\n", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(selected(text), want, "{text}");
        }
    }
}
