//! Transparent huge pages through sysfs: the job's mode written to
//! /sys/kernel/mm/transparent_hugepage/enabled and read back.
//!
//! `defrag` is left at the kernel's default (`madvise`) and only reported:
//! it decides how hard a THP fault tries (direct reclaim and compaction) and
//! matters only where THP is on. With `always`, the default lets faults
//! outside madvised ranges take a huge page only when one is free, as on
//! distribution kernels; with `madvise`, the workload's madvised working
//! set stalls in direct compaction like any application that asked for
//! huge pages. Changing it too would make the axis two variables in one.

use mmci_record::ThpMode;

pub const DIR: &str = "/sys/kernel/mm/transparent_hugepage";

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
    }
    let read = |file: &str| {
        let path = format!("{DIR}/{file}");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        selected(&text)
            .map(str::to_string)
            .ok_or_else(|| format!("{path} reads `{}`", text.trim()))
    };
    let now = read("enabled")?;
    if mode != ThpMode::Kernel && now != mode.name() {
        return Err(format!("{enabled} reads {now} after writing {mode}"));
    }
    Ok(format!("enabled={now} defrag={}", read("defrag")?))
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
