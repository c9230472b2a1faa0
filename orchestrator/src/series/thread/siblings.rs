//! Patches of one author sent In-Reply-To one mail (often a cover or
//! `-1` message that is not in the thread): one posting, or copies of one
//! patch (the later wins), unless their titles differ. Two patches with
//! the same counter and different titles are two patches: a stable
//! maintainer's AUTOSEL mails (`[PATCH AUTOSEL 6.17] a`, `[PATCH AUTOSEL
//! 6.17] b`, each a single In-Reply-To the same absent `-1`) are dozens
//! of separate patches, and asking for one is asking for that one, not
//! for the newest of them.

use super::{Revision, Thread};

/// Titles compared as a person would: case and spacing aside.
fn same_title(a: &str, b: &str) -> bool {
    let words = |s: &str| {
        s.split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    words(a) == words(b)
}

/// A single patch sent alone: no cover, no counter beyond 1, no reroll.
fn single(rev: &Revision) -> bool {
    rev.cover.is_none() && rev.total <= 1 && !rev.is_reroll() && rev.slots.len() == 1
}

impl Thread<'_> {
    fn title(&self, m: usize) -> &str {
        self.classes[m]
            .tag
            .as_ref()
            .map_or("", |t| t.title.as_str())
    }

    /// Whether patch `i` is another patch than the one revision `r` holds
    /// at its counter (a title of its own), so not a later copy of it.
    pub(super) fn another_patch(&self, r: usize, i: usize) -> bool {
        let k = self.tag(i).index();
        self.revisions[r]
            .slots
            .get(&k)
            .is_some_and(|s| !same_title(self.title(s.mail), self.title(i)))
    }

    /// Whether revisions `a` and `b` are two single patches sent
    /// In-Reply-To the same mail, of the same stated version, with
    /// different titles: two patches, not two revisions of one.
    pub fn distinct_singles(&self, a: usize, b: usize) -> bool {
        let (ra, rb) = (&self.revisions[a], &self.revisions[b]);
        let slot = |r: &Revision| r.slots.values().next().cloned();
        let (Some(sa), Some(sb)) = (slot(ra), slot(rb)) else {
            return false;
        };
        a != b
            && single(ra)
            && single(rb)
            && ra.ghost.is_some()
            && ra.ghost == rb.ghost
            && sa.explicit == sb.explicit
            && !same_title(self.title(sa.mail), self.title(sb.mail))
    }
}

#[cfg(test)]
mod tests {
    use super::same_title;
    use crate::series::test_mail::mail;
    use crate::series::{assemble_with, Mail, Reason, Selection};

    const AUTHOR: &str = "A U Thor <a@example.org>";

    #[test]
    fn titles() {
        for (a, b, want) in [
            ("kunit: Enable PCI", "kunit:  enable pci", true),
            ("rust: kunit: allow cfg", "kunit: Enable PCI", false),
            ("", "", true),
        ] {
            assert_eq!(same_title(a, b), want, "{a} / {b}");
        }
    }

    /// (mails, requested, the patches applied, how the other is left out).
    #[test]
    fn patches_in_reply_to_one_absent_mail() {
        let p = |s: &str, id: &str| mail(s, id, AUTHOR, &["absent-1"]);
        let cases: Vec<(Vec<Mail>, &str, &str, Option<Reason>)> = vec![
            // Two AUTOSEL backports: the one asked for.
            (
                vec![
                    p("[PATCH AUTOSEL 6.17] rust: kunit: allow cfg", "32"),
                    p("[PATCH AUTOSEL 6.17] kunit: Enable PCI", "36"),
                ],
                "32",
                "32",
                Some(Reason::OtherSeries),
            ),
            (
                vec![
                    p("[PATCH AUTOSEL 6.17] rust: kunit: allow cfg", "32"),
                    p("[PATCH AUTOSEL 6.17] kunit: Enable PCI", "36"),
                ],
                "36",
                "36",
                Some(Reason::OtherSeries),
            ),
            // One patch sent twice: the later copy.
            (
                vec![p("[PATCH] mm: x", "a"), p("[PATCH] mm: x", "b")],
                "a",
                "b",
                Some(Reason::Replaced),
            ),
            // A retitled v2: the newer revision.
            (
                vec![p("[PATCH] mm: x", "a"), p("[PATCH v2] mm: y", "b")],
                "a",
                "b",
                None,
            ),
        ];
        for (i, (mails, req, want, reason)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: Some(req.into()),
                revision: None,
            };
            let s = assemble_with(&mails, "t", &sel).unwrap_or_else(|e| panic!("case {i}: {e}"));
            let got: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
            assert_eq!(got, [want], "case {i}");
            if let Some(r) = reason {
                let other = s.left_out.iter().find(|l| l.message_id != want);
                assert_eq!(other.map(|l| l.reason), Some(r), "case {i}");
            }
        }
    }
}
