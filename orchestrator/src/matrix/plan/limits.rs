//! Upper bounds of the cell values that cost the host: guest memory that
//! QEMU allocates, disks the guest may fill in the host's scratch dir, and
//! the wall time a run holds a guest slot. A matrix comes with a series
//! (a pull request's own matrix, a bundled one edited by hand), and every
//! value below was accepted unbounded (`memory_mb: 100000000`, a 1 TiB
//! swap disk, `duration_s: 4000000000`; security review L3). Each bound is
//! well above what a reclaim run on the hosts mmci runs on needs, and says
//! why in its comment; a value over one is an error at its line.

/// Guest memory, MiB. The reclaim scenarios put a memcg of tens of MiB
/// under pressure in a guest of 256 MiB to 1 GiB (the bundled matrices);
/// a whole-guest experiment needs a few GiB. 64 GiB is more than the CI
/// runners (16 GiB) and the demo hosts (24 GiB) have: QEMU would allocate
/// it, and the scheduler starts a guest alone whatever its size.
pub const MAX_MEMORY_MB: u64 = 64 << 10;

/// Swap disk, MiB: a sparse file in the host's scratch dir that the guest
/// may fill. A run swaps out at most its working set (48 to 320 MiB in
/// the bundled matrices, swap 256 to 512 MiB); 8 GiB is sixteen times
/// that and fits the free disk of a CI runner (14 GB) beside the kernels.
pub const MAX_SWAP_MB: u64 = 8 << 10;

/// Scenario B's dm-verity data disk, MiB: a file in the host's scratch dir
/// (with its hash disk), as the swap disk; the same bound and reason.
pub const MAX_VERITY_MB: u64 = MAX_SWAP_MB;

/// Workload time, seconds. The workloads reach their steady state within
/// seconds (the bundled matrices run 3 to 120 s); a run's timeout is four
/// times this plus set-up, so an hour holds a guest slot for about four,
/// as long as one kernel build step may take.
pub const MAX_DURATION_S: u64 = 3600;

/// A bounded key: its limit, the constant's name, the unit, and what to
/// say about the limit.
struct Limit {
    key: &'static str,
    max: u64,
    name: &'static str,
    unit: &'static str,
    why: &'static str,
}

const LIMITS: [Limit; 4] = [
    Limit {
        key: "memory_mb",
        max: MAX_MEMORY_MB,
        name: "MAX_MEMORY_MB",
        unit: "MiB",
        why: "more guest memory than a reclaim run needs or a host here has",
    },
    Limit {
        key: "swap_mb",
        max: MAX_SWAP_MB,
        name: "MAX_SWAP_MB",
        unit: "MiB",
        why: "a swap disk the guest could fill on the host",
    },
    Limit {
        key: "verity_mb",
        max: MAX_VERITY_MB,
        name: "MAX_VERITY_MB",
        unit: "MiB",
        why: "a data disk the guest could fill on the host",
    },
    Limit {
        key: "duration_s",
        max: MAX_DURATION_S,
        name: "MAX_DURATION_S",
        unit: "s",
        why: "a run holds its guest slot for four times as long",
    },
];

/// An error when `key`'s value `text` is a number over its limit; `Ok`
/// for any other key or text (a value that is not a number is the
/// parser's to refuse, with its own words).
pub(super) fn check(key: &str, text: &str) -> Result<(), String> {
    let Some(l) = LIMITS.iter().find(|l| l.key == key) else {
        return Ok(());
    };
    match text.trim().parse::<u64>() {
        Ok(n) if n > l.max => Err(format!(
            "{key}: `{n}` is more than {} {} ({}: {}); give at most {}",
            l.max, l.unit, l.name, l.why, l.max
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::plan_of;
    use super::super::{from_text, Overrides};
    use std::path::Path;

    /// Each bound at its limit and one over, in an axis, an `include`
    /// entry and a `--set`: the limit passes, one more is an error naming
    /// the file, line and column, the value, the limit and what to do.
    #[test]
    fn values_over_their_bound_are_errors_at_their_line() {
        // (matrix, --set, the error or None)
        let cases: Vec<(&str, Vec<&str>, Option<&str>)> = vec![
            ("axes:\n  memory_mb: [65536]\n", vec![], None),
            (
                "axes:\n  memory_mb: [512, 100000000]\n",
                vec![],
                Some(
                    "m.yaml: line 2 column 20: memory_mb: `100000000` is more than 65536 MiB \
                     (MAX_MEMORY_MB: more guest memory than a reclaim run needs or a host here \
                     has); give at most 65536",
                ),
            ),
            ("axes:\n  swap_mb: [8192]\n", vec![], None),
            (
                "axes:\n  threads: [1]\ninclude:\n  - {threads: 2, swap_mb: 1048576}\n",
                vec![],
                Some(
                    "m.yaml: line 4 column 27: swap_mb: `1048576` is more than 8192 MiB \
                     (MAX_SWAP_MB: a swap disk the guest could fill on the host); give at \
                     most 8192",
                ),
            ),
            ("axes:\n  duration_s: [3600]\n", vec![], None),
            (
                "axes:\n  duration_s: [4000000000]\n",
                vec![],
                Some(
                    "m.yaml: line 2 column 16: duration_s: `4000000000` is more than 3600 s \
                     (MAX_DURATION_S: a run holds its guest slot for four times as long); \
                     give at most 3600",
                ),
            ),
            (
                "axes:\n  scenario: [noio_verity]\n  verity_mb: [8193]\n",
                vec![],
                Some(
                    "m.yaml: line 3 column 15: verity_mb: `8193` is more than 8192 MiB \
                     (MAX_VERITY_MB: a data disk the guest could fill on the host); give at \
                     most 8192",
                ),
            ),
            (
                "axes:\n  threads: [1]\n",
                vec!["duration_s=3601"],
                Some(
                    "command line: --set duration_s=3601: duration_s: `3601` is more than \
                     3600 s (MAX_DURATION_S: a run holds its guest slot for four times as \
                     long); give at most 3600",
                ),
            ),
            // Not a number: the parser's own words, as before.
            (
                "axes:\n  swap_mb: [lots]\n",
                vec![],
                Some("m.yaml: line 2 column 13: swap_mb: `lots` is not a size in MiB"),
            ),
        ];
        for (text, sets, want) in cases {
            let over = Overrides {
                sets: sets.iter().map(|s| s.to_string()).collect(),
                ..Overrides::default()
            };
            let got = if sets.is_empty() {
                plan_of(text)
            } else {
                from_text(text, "m.yaml", Path::new("."), &over)
            };
            match (got, want) {
                (Ok(_), None) => {}
                (Err(e), Some(w)) => assert_eq!(e.to_string(), w, "{text}"),
                (got, want) => panic!("{text}: {got:?}, wanted {want:?}"),
            }
        }
    }
}
