//! A subset of a series' patches (`--patches 1`, a matrix kernel's
//! `patches: "1-2"`), in b4's cherry-pick syntax (`b4 am -P 1-2,4,6-`), and
//! the series that applying only those makes. Reviewers isolate one
//! patch's effect this way: patch 1 alone is the fair baseline for patch 2.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use super::{LeftOut, Reason, Series};

/// Ranges of patch numbers as given: `1`, `1-2`, `2-` (to the last),
/// `1,3`. Kept as written, so manifests and reports say what was asked.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PatchPick {
    text: String,
    ranges: Vec<(u32, Option<u32>)>,
}

impl FromStr for PatchPick {
    type Err = String;

    fn from_str(s: &str) -> Result<PatchPick, String> {
        let text: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        if text.is_empty() {
            return Err("empty: give patch numbers as 1, 1-2, 2- or 1,3".into());
        }
        let number = |n: &str| -> Result<u32, String> {
            match n.parse::<u32>() {
                Ok(0) => Err("patches count from 1 (1/N is the first patch)".into()),
                Ok(n) => Ok(n),
                Err(_) => Err(format!(
                    "`{n}` is not a patch number: give 1, 1-2, 2- or 1,3"
                )),
            }
        };
        let mut ranges = Vec::new();
        for part in text.split(',') {
            let range = match part.split_once('-') {
                None => {
                    let n = number(part)?;
                    (n, Some(n))
                }
                Some((from, "")) => (number(from)?, None),
                Some((from, to)) => {
                    let (from, to) = (number(from)?, number(to)?);
                    if to < from {
                        return Err(format!("{from}-{to}: the range ends before it starts"));
                    }
                    (from, Some(to))
                }
            };
            ranges.push(range);
        }
        Ok(PatchPick { text, ranges })
    }
}

impl TryFrom<String> for PatchPick {
    type Error = String;
    /// From a matrix or manifest, where the error must name the key.
    fn try_from(s: String) -> Result<PatchPick, String> {
        s.parse().map_err(|e| format!("patches `{s}`: {e}"))
    }
}

impl From<PatchPick> for String {
    fn from(p: PatchPick) -> String {
        p.text
    }
}

impl fmt::Display for PatchPick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PatchPick {
    /// Whether every number given is a patch of a series of `total`; the
    /// error names the first one past the end.
    pub fn check(&self, total: u32) -> Result<(), String> {
        for &(from, to) in &self.ranges {
            let past = [Some(from), to].into_iter().flatten().find(|n| *n > total);
            if let Some(n) = past {
                return Err(format!("patch {n} of a series of {total}"));
            }
        }
        Ok(())
    }

    /// Whether patch `index` is picked (`2-` picks every one from 2 on).
    pub fn picks(&self, index: u32) -> bool {
        self.ranges
            .iter()
            .any(|&(from, to)| index >= from && to.is_none_or(|to| index <= to))
    }

    /// The patch numbers picked out of a series of `total`, in order.
    pub fn numbers(&self, total: u32) -> Result<BTreeSet<u32>, String> {
        self.check(total)?;
        Ok((1..=total).filter(|i| self.picks(*i)).collect())
    }

    /// `series` with only the picked patches (prerequisites kept: the
    /// picked ones may need them). Its hash is a new one, so its build is
    /// cached apart from the whole series'; the cover letter stays for
    /// the reply, but its before/after tables describe the whole series
    /// and are dropped: a part is not judged by the whole's claims.
    pub fn apply(&self, series: &Series) -> Result<Series, String> {
        self.check(series.total)?;
        let mut picked = series.clone();
        let (kept, dropped): (Vec<_>, Vec<_>) = series
            .patches
            .iter()
            .cloned()
            .partition(|p| self.picks(p.index));
        picked.patches = kept;
        picked.left_out.extend(dropped.into_iter().map(|p| LeftOut {
            message_id: p.message_id,
            subject: p.subject,
            from: p.from,
            reason: Reason::NotPicked,
            detail: format!("--patches {self}"),
        }));
        if picked.patches.len() == series.patches.len() {
            // Every patch: the series itself, same hash, same build.
            return Ok(picked);
        }
        let mut h = Sha256::new();
        h.update(b"mmci-series-pick-v1\0");
        h.update(series.hash.as_bytes());
        for p in &picked.patches {
            h.update(b"\0");
            h.update(p.index.to_string().as_bytes());
        }
        picked.hash = hex::encode(h.finalize());
        if let Some(c) = &mut picked.cover {
            c.claims.clear();
        }
        let shown: Vec<String> = picked
            .patches
            .iter()
            .map(|p| format!("{}/{}", p.index, series.total))
            .collect();
        picked.chosen = format!(
            "{}; patches {} only (--patches {self}): {}",
            series.chosen,
            shown.join(", "),
            series.assembly
        );
        Ok(picked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_in_b4_syntax() {
        // (given, series of, the numbers or the error)
        type Case<'a> = (&'a str, u32, Result<&'a [u32], &'a str>);
        let cases: &[Case] = &[
            ("1", 2, Ok(&[1])),
            ("1-2", 3, Ok(&[1, 2])),
            ("2-", 4, Ok(&[2, 3, 4])),
            ("1,3", 3, Ok(&[1, 3])),
            (" 1 , 3-4", 5, Ok(&[1, 3, 4])),
            ("3,1", 3, Ok(&[1, 3])),
            ("3", 2, Err("patch 3 of a series of 2")),
            ("1-5", 2, Err("patch 5 of a series of 2")),
            ("0", 2, Err("patches count from 1 (1/N is the first patch)")),
            ("2-1", 2, Err("2-1: the range ends before it starts")),
            (
                "one",
                2,
                Err("`one` is not a patch number: give 1, 1-2, 2- or 1,3"),
            ),
            ("", 2, Err("empty: give patch numbers as 1, 1-2, 2- or 1,3")),
            (
                "1,,2",
                2,
                Err("`` is not a patch number: give 1, 1-2, 2- or 1,3"),
            ),
        ];
        for (given, total, want) in cases {
            let got = given
                .parse::<PatchPick>()
                .and_then(|p| p.numbers(*total))
                .map(|s| s.into_iter().collect::<Vec<_>>());
            let want = want.map(|w| w.to_vec()).map_err(String::from);
            assert_eq!(got, want, "{given:?} of {total}");
        }
    }

    #[test]
    fn patch_one_alone_is_a_series_of_its_own() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../kernels/series/mglru-isolation.mbox"
        );
        let mails = crate::series::mails_from_mbox(&std::fs::read(path).unwrap());
        let whole = crate::series::assemble(&mails, "bundled").unwrap();
        assert!(!whole.cover.as_ref().unwrap().claims.is_empty());

        let one = "1".parse::<PatchPick>().unwrap().apply(&whole).unwrap();
        assert_eq!(one.patches.len(), 1);
        assert_eq!(one.patches[0].index, 1);
        assert_eq!(one.total, 2, "still patch 1/2 of its thread");
        assert_ne!(
            one.hash, whole.hash,
            "built and cached apart from the whole"
        );
        assert_eq!(
            one.hash,
            "1".parse::<PatchPick>()
                .unwrap()
                .apply(&whole)
                .unwrap()
                .hash,
            "the same pick hashes the same"
        );
        assert!(
            one.cover.as_ref().unwrap().claims.is_empty(),
            "the whole series' claims are not patch 1's"
        );
        assert!(
            one.chosen.contains("patches 1/2 only (--patches 1)"),
            "{}",
            one.chosen
        );
        let not_picked: Vec<&str> = one
            .left_out
            .iter()
            .filter(|l| l.reason == Reason::NotPicked)
            .map(|l| l.subject.as_str())
            .collect();
        assert_eq!(
            not_picked,
            ["[PATCH v3 2/2] mm/vmscan: throttle MGLRU eviction when isolated folios pile up"]
        );

        let both = "1-2".parse::<PatchPick>().unwrap().apply(&whole).unwrap();
        assert_eq!(both, whole, "every patch: the series itself");
        let err = "3".parse::<PatchPick>().unwrap().apply(&whole).unwrap_err();
        assert_eq!(err, "patch 3 of a series of 2");
    }

    #[test]
    fn keeps_what_was_written() {
        let p: PatchPick = "1-2, 4".parse().unwrap();
        assert_eq!(p.to_string(), "1-2,4");
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, "\"1-2,4\"");
        assert_eq!(serde_json::from_str::<PatchPick>(&json).unwrap(), p);
        assert!(serde_json::from_str::<PatchPick>("\"0\"").is_err());
    }
}
