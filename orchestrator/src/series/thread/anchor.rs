//! Where a patch goes when it replies to a mail of the thread that is not
//! a cover or patch of its series (a review, a question): real authors send
//! a whole posting (`[PATCH v2 0/2 RESEND]` and its patches) or a partial
//! reroll (`[PATCH v5 6/6]`) In-Reply-To the review that asked for it. The
//! reply chain then says nothing; the siblings and the References do:
//!   - patches of one author and total replying to the same mail are one
//!     posting, under a cover of theirs that replies there too;
//!   - a patch whose nearest placed ancestor in its References is the same
//!     counter of the same author and total rerolls that patch.
//!
//! The same look-up places a cover the list delivered after its patches.

use super::{same_author, Kind, Thread};

impl Thread<'_> {
    /// Places patch `i`, whose In-Reply-To `anchor` is a mail of the thread
    /// that is no cover or patch it could join; false when none of the
    /// rules applies (the caller then opens a new revision).
    pub(super) fn place_under_anchor(&mut self, i: usize, anchor: &str) -> bool {
        let tag = self.tag(i).clone();
        let author = self.mails[i].author_addresses();
        let shared = author
            .iter()
            .filter_map(|a| {
                self.index
                    .ghosts
                    .get(&(anchor.to_string(), a.clone(), tag.total()))
                    .copied()
            })
            .max();
        if let Some(r) = shared.filter(|&r| !self.another_patch(r, i)) {
            self.join(r, i);
            return true;
        }
        if let Some(r) = self.sibling_cover(i, anchor) {
            self.revisions[r].ghost = Some(anchor.to_string());
            self.join(r, i);
            self.index_ghost(r, anchor);
            return true;
        }
        if let Some(base) = self.rerolled_through_references(i) {
            self.reroll(base, i);
            // Its siblings (the other patches rerolled in reply to the same
            // review) join it.
            if let Some(&r) = self.home.get(&i) {
                self.index_ghost(r, anchor);
            }
            return true;
        }
        false
    }

    /// Cover `i` arriving after its patches (the list delivered them
    /// first): they reply to its Message-ID and wait as a revision without
    /// a cover; it becomes theirs. False when no such revision is waiting.
    pub(super) fn late_cover(&mut self, i: usize) -> bool {
        let Some(tag) = self.classes[i].tag.clone() else {
            return false;
        };
        let id = self.mails[i].message_id.clone();
        let waiting = self.mails[i]
            .author_addresses()
            .iter()
            .filter_map(|a| {
                self.index
                    .ghosts
                    .get(&(id.clone(), a.clone(), tag.total()))
                    .copied()
            })
            .filter(|&r| self.revisions[r].cover.is_none() && !self.revisions[r].is_reroll())
            .max();
        let Some(r) = waiting else {
            return false;
        };
        let rev = &mut self.revisions[r];
        rev.cover = Some(i);
        rev.cover_version = tag.version;
        rev.rfc |= tag.rfc;
        rev.last = rev.last.max(i);
        self.home.insert(i, r);
        true
    }

    /// The complete multi-patch posting a patch that would open a revision
    /// of its own re-sends: `[PATCH v2 1/2]` sent again alone, days after
    /// the whole v2 (same author, total, counter and version), among the
    /// newest [`super::MAX_OPEN_POSTINGS`] revisions.
    pub(super) fn resent_into(&self, i: usize) -> Option<usize> {
        let tag = self.classes[i].tag.as_ref()?;
        if tag.total() < 2 {
            return None;
        }
        let author = self.mails[i].author_addresses();
        (0..self.revisions.len())
            .rev()
            .take(super::MAX_OPEN_POSTINGS)
            .find(|&r| {
                let rev = &self.revisions[r];
                !rev.is_reroll()
                    && rev.total == tag.total()
                    && rev.is_full()
                    && same_author(&rev.author, &author)
                    && rev.slots.get(&tag.index()).is_some_and(|s| {
                        s.explicit.or(rev.cover_version) == tag.version.or(rev.cover_version)
                    })
            })
    }

    /// The author's newest cover, still without patches, of the patch's
    /// total, sent before it In-Reply-To the same mail.
    fn sibling_cover(&self, i: usize, anchor: &str) -> Option<usize> {
        let tag = self.classes[i].tag.as_ref()?;
        let author = self.mails[i].author_addresses();
        author
            .iter()
            .filter_map(|a| self.index.open_covers.get(a))
            .flat_map(|list| list.iter().rev().take(super::MAX_OPEN_POSTINGS))
            .copied()
            .filter(|&r| {
                let rev = &self.revisions[r];
                rev.slots.is_empty()
                    && rev.ghost.is_none()
                    && (rev.total == 0 || rev.total == tag.total())
                    && rev
                        .cover
                        .is_some_and(|c| c < i && self.parent_id(c) == Some(anchor))
            })
            .max()
    }

    /// The revision of the patch a multi-patch `[PATCH vN k/n]` rerolls
    /// when it replies to a review of it: its nearest posted ancestor (see
    /// [`Self::nearest_posted_ancestor`]); a reroll only when that is k/n
    /// of the same author and total. A single patch's reroll changes
    /// nothing to pick, so it is left as it was (its own revision).
    fn rerolled_through_references(&self, i: usize) -> Option<usize> {
        let tag = self.classes[i].tag.as_ref()?;
        if tag.total() < 2 {
            return None;
        }
        let author = self.mails[i].author_addresses();
        let nearest = self.nearest_posted_ancestor(i)?;
        let base = *self.home.get(&nearest)?;
        let other = self.classes[nearest].tag.as_ref()?;
        (self.classes[nearest].kind == Kind::Patch
            && other.index() == tag.index()
            && other.total() == tag.total()
            && same_author(&self.revisions[base].author, &author))
        .then_some(base)
    }

    /// The nearest cover or patch placed before `i` among its ancestors:
    /// the first of its In-Reply-To and References (nearest first) that is
    /// one; when none is, the same asked of its nearest ancestor in the
    /// thread, and so on. `git send-email --in-reply-to=<review>` writes
    /// only the review in References (`[PATCH 4/7 v2]` sent in reply to
    /// the author's own answer to a review of 4/7); the review's own
    /// References name 4/7. At most [`super::MAX_OPEN_POSTINGS`] mails
    /// are walked through.
    fn nearest_posted_ancestor(&self, i: usize) -> Option<usize> {
        let mut x = i;
        for _ in 0..super::MAX_OPEN_POSTINGS {
            let m = &self.mails[x];
            let mut up = None;
            let known = m
                .in_reply_to
                .iter()
                .chain(m.references.iter().rev())
                .filter_map(|id| self.by_id.get(id.as_str()).copied())
                .filter(|&p| p < i && p != x);
            for p in known {
                if matches!(self.classes[p].kind, Kind::Cover | Kind::Patch) {
                    return Some(p);
                }
                up = up.or(Some(p));
            }
            x = up?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::series::test_mail::mail;
    use crate::series::{assemble_with, Mail, Selection};

    const AUTHOR: &str = "A U Thor <a@example.org>";
    const REVIEWER: &str = "R Eviewer <r@example.org>";

    fn series(n: u32, v: u32, cover_refs: &[&str]) -> Vec<Mail> {
        let c = format!("c{v}");
        let mut out = vec![mail(
            &format!("[PATCH v{v} 0/{n}] c"),
            &c,
            AUTHOR,
            cover_refs,
        )];
        let mut refs: Vec<&str> = cover_refs.to_vec();
        refs.push(&c);
        for k in 1..=n {
            let s = format!("[PATCH v{v} {k}/{n}] p{k}");
            out.push(mail(&s, &format!("v{v}p{k}"), AUTHOR, &refs));
        }
        out
    }

    /// Real thread shapes (tools/thread-corpus found them on lore):
    /// (mails, the chosen assembly, the cover's message-id).
    #[test]
    fn patches_replying_to_reviews() {
        let cases: Vec<(Vec<Mail>, &str, Option<&str>)> = vec![
            // A RESEND posting whose cover and patches all reply to a review.
            (
                [
                    series(2, 1, &[]),
                    vec![
                        mail("Re: [PATCH v1 0/2] c", "r", REVIEWER, &["c1"]),
                        mail("[PATCH v2 0/2 RESEND] c", "c2", AUTHOR, &["c1", "r"]),
                        mail("[PATCH v2 1/2 RESEND] p1", "v2p1", AUTHOR, &["c1", "r"]),
                        mail("[PATCH v2 2/2 RESEND] p2", "v2p2", AUTHOR, &["c1", "r"]),
                    ],
                ]
                .concat(),
                "v2 1/2..2/2",
                Some("c2"),
            ),
            // The same, without a cover: the patches still make one posting.
            (
                [
                    series(2, 1, &[]),
                    vec![
                        mail("Re: [PATCH v1 1/2] p1", "r", REVIEWER, &["c1", "v1p1"]),
                        mail("[PATCH v2 1/2] p1", "v2p1", AUTHOR, &["c1", "v1p1", "r"]),
                        mail("[PATCH v2 2/2] p2", "v2p2", AUTHOR, &["c1", "v1p1", "r"]),
                    ],
                ]
                .concat(),
                "v2 = v2 1/2 + v2 2/2",
                Some("c1"),
            ),
            // A partial reroll sent In-Reply-To a review of the patch it rerolls.
            (
                [
                    series(3, 4, &[]),
                    vec![
                        mail("Re: [PATCH v4 3/3] p3", "r", REVIEWER, &["c4", "v4p3"]),
                        mail("[PATCH v5 3/3] p3", "v5p3", AUTHOR, &["c4", "v4p3", "r"]),
                    ],
                ]
                .concat(),
                "v5 = v4 1/3 + v4 2/3 + v5 3/3",
                Some("c4"),
            ),
            // Partial rerolls (version after the counter) each In-Reply-To
            // the author's answer to a review, References naming only that
            // answer (`git send-email --in-reply-to`); the answer's
            // References name the patch.
            (
                [
                    series(3, 1, &[]),
                    vec![
                        mail("Re: [PATCH v1 2/3] p2", "r2", REVIEWER, &["c1", "v1p2"]),
                        mail("Re: [PATCH v1 2/3] p2", "a2", AUTHOR, &["c1", "v1p2", "r2"]),
                        mail("[PATCH 2/3 v2] p2", "v2p2", AUTHOR, &["a2"]),
                        mail("Re: [PATCH v1 3/3] p3", "r3", REVIEWER, &["c1", "v1p3"]),
                        mail("Re: [PATCH v1 3/3] p3", "a3", AUTHOR, &["c1", "v1p3", "r3"]),
                        mail("[PATCH 3/3 v2] p3", "v2p3", AUTHOR, &["a3"]),
                    ],
                ]
                .concat(),
                "v2 = v1 1/3 + v2 2/3 + v2 3/3",
                Some("c1"),
            ),
            // The same chain up to another counter: no reroll of it.
            (
                [
                    series(3, 1, &[]),
                    vec![
                        mail("Re: [PATCH v1 2/3] p2", "r2", REVIEWER, &["c1", "v1p2"]),
                        mail("Re: [PATCH v1 2/3] p2", "a2", AUTHOR, &["c1", "v1p2", "r2"]),
                        mail("[PATCH 3/3 v2] p3", "v2p3", AUTHOR, &["a2"]),
                    ],
                ]
                .concat(),
                "incomplete",
                None,
            ),
            // A review of the cover: the nearest posted mail is no patch, so
            // a lone k/n is not a reroll (and the newest posting is incomplete).
            (
                [
                    series(2, 1, &[]),
                    vec![
                        mail("Re: [PATCH v1 0/2] c", "r", REVIEWER, &["c1"]),
                        mail("[PATCH v2 2/2] p2", "v2p2", AUTHOR, &["c1", "r"]),
                    ],
                ]
                .concat(),
                "incomplete",
                None,
            ),
            // The list delivered the cover after its patches.
            (
                vec![
                    mail("[PATCH v3 1/2] p1", "p1", AUTHOR, &["c"]),
                    mail("[PATCH v3 2/2] p2", "p2", AUTHOR, &["c"]),
                    mail("[PATCH v3 0/2] c", "c", AUTHOR, &[]),
                ],
                "v3 1/2..2/2",
                Some("c"),
            ),
            // One patch of a complete posting sent again alone: the later copy.
            (
                [
                    series(2, 2, &[]),
                    vec![mail("[PATCH v2 1/2] p1", "again", AUTHOR, &[])],
                ]
                .concat(),
                "v2 1/2..2/2",
                Some("c2"),
            ),
            // A versioned single patch months after v7 re-posts one patch.
            (
                [
                    series(3, 7, &[]),
                    vec![mail("[PATCH v2] p2", "late", AUTHOR, &["c7", "v7p2"])],
                ]
                .concat(),
                "v7 1/3..3/3",
                Some("c7"),
            ),
            // A single patch above the series' version is its next revision.
            (
                [
                    series(3, 7, &[]),
                    vec![mail("[PATCH v8] squashed", "v8", AUTHOR, &["c7"])],
                ]
                .concat(),
                "v8 1/1",
                None,
            ),
        ];
        for (i, (mails, want, cover)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: Some(mails[0].message_id.clone()),
                revision: None,
            };
            match assemble_with(&mails, "t", &sel) {
                Ok(s) => {
                    assert_eq!(s.assembly, want, "case {i}");
                    let got = s.cover.as_ref().map(|c| c.message_id.as_str());
                    assert_eq!(got, cover, "case {i}");
                }
                Err(e) => assert_eq!(want, "incomplete", "case {i}: {e}"),
            }
        }
    }
}
