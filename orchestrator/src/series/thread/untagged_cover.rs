//! Cover letters whose subject lacks the `[PATCH` word: `[bpf-next v2
//! 0/5] title` (the tree tag written by hand, `PATCH` forgotten) or a bare
//! `provide generic page_to_phys ... v3` that the patches of a posting were
//! sent In-Reply-To. Such a mail is the posting's cover when
//!   - it is no reply (`Re:`) and carries no diff,
//!   - a numbered patch `[PATCH k/n]` of the same author replies to it
//!     directly (its In-Reply-To, else its last Reference),
//!   - and its subject carries the posting's counter `0/n`, or it starts a
//!     thread (no In-Reply-To, no References), as `git send-email` sends a
//!     cover.
//!
//! A review is a reply, and another author's mail is not the author's
//! cover; a note of the author's in the middle of a thread (In-Reply-To a
//! review) without `0/n` stays a note: patches replying to it are placed
//! as [`super::anchor`] says. The version and counter come from the
//! brackets (`[bpf-next v2 0/5]`); a bare subject states neither.

use super::super::mail::Mail;
use super::super::subject::{self, SubjectTag};
use super::{same_author, Classified, Kind, Thread};

/// Whether `cover` (no `[PATCH` tag, no reply) is the cover of the
/// numbered patch `patch` (tag `patch_tag`) that replies to it; its tag
/// when it is. The body is read last (`cover_has_diff`, which the caller
/// may remember): a thread of many patches replying to one large note must
/// not read the note once per patch.
pub(super) fn untagged_cover(
    cover: &Mail,
    patch: &Mail,
    patch_tag: &SubjectTag,
    cover_has_diff: &mut dyn FnMut() -> bool,
) -> Option<SubjectTag> {
    let (k, n) = patch_tag.counter?;
    if k == 0 {
        return None;
    }
    let parent = patch
        .in_reply_to
        .as_deref()
        .or(patch.references.last().map(String::as_str));
    if cover.message_id.is_empty() || parent != Some(cover.message_id.as_str()) {
        return None;
    }
    let tag = subject::parse_untagged(&cover.subject)?;
    let counted = tag.counter == Some((0, n));
    let starts_thread =
        tag.counter.is_none() && cover.in_reply_to.is_none() && cover.references.is_empty();
    ((counted || starts_thread)
        && same_author(&cover.author_addresses(), &patch.author_addresses())
        && !cover_has_diff())
    .then_some(tag)
}

impl Thread<'_> {
    /// Before placement: every mail that is not a patch but is, by
    /// [`untagged_cover`], the cover of a patch replying to it becomes a
    /// cover. Whether a mail carries a diff is read once per mail.
    pub(super) fn adopt_untagged_covers(&mut self) {
        let mut has_diff: Vec<Option<bool>> = vec![None; self.mails.len()];
        for i in 0..self.mails.len() {
            if self.classes[i].kind != Kind::Patch {
                continue;
            }
            let Some(p) = self.parent(i) else {
                continue;
            };
            if self.classes[p].kind != Kind::NotPatch {
                continue;
            }
            let Some(tag) = self.classes[i].tag.as_ref() else {
                continue;
            };
            let mails = &self.mails;
            let mut cover_has_diff = || *has_diff[p].get_or_insert_with(|| mails[p].has_diff());
            if let Some(tag) = untagged_cover(&mails[p], &mails[i], tag, &mut cover_has_diff) {
                self.classes[p] = Classified {
                    tag: Some(tag),
                    kind: Kind::Cover,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::untagged_cover;
    use crate::series::subject::parse_subject;
    use crate::series::test_mail::mail;
    use crate::series::{assemble_with, Mail, Selection};

    const AUTHOR: &str = "A U Thor <a@example.org>";
    const REVIEWER: &str = "R Eviewer <r@example.org>";

    /// A mail without a diff.
    fn note(subject: &str, id: &str, from: &str, refs: &[&str]) -> Mail {
        Mail {
            body: "text".into(),
            ..mail(subject, id, from, refs)
        }
    }

    /// Real shapes (tools/thread-corpus: linux-arch/00369,
    /// linux-kselftest/00685): (candidate, the patch replying to it, a
    /// cover?).
    #[test]
    fn which_mails_are_covers() {
        let patch = |s: &str, from: &str| mail(s, "p", from, &["c"]);
        // The cover's version and counter, when it is one.
        type Want = Option<(Option<u32>, Option<(u32, u32)>)>;
        let cases: Vec<(Mail, Mail, Want)> = vec![
            // The tree tag without PATCH, counted like the posting.
            (
                note("[bpf-next v2 0/5] x", "c", AUTHOR, &[]),
                patch("[PATCH bpf-next v2 1/5] a", AUTHOR),
                Some((Some(2), Some((0, 5)))),
            ),
            // ... counted otherwise: not this posting's cover.
            (
                note("[bpf-next v2 0/4] x", "c", AUTHOR, &[]),
                patch("[PATCH bpf-next v2 1/5] a", AUTHOR),
                None,
            ),
            // No bracket at all, starting the thread.
            (
                note("provide generic page_to_phys v3", "c", AUTHOR, &[]),
                patch("[PATCH 1/2] a", AUTHOR),
                Some((None, None)),
            ),
            // The same note In-Reply-To a review: a note, not a cover.
            (
                note("another idea", "c", AUTHOR, &["r"]),
                patch("[PATCH 1/2] a", AUTHOR),
                None,
            ),
            // Another author's mail.
            (
                note("[bpf-next v2 0/5] x", "c", REVIEWER, &[]),
                patch("[PATCH bpf-next v2 1/5] a", AUTHOR),
                None,
            ),
            // A single patch without a counter replying to it.
            (
                note("a bug report", "c", AUTHOR, &[]),
                patch("[PATCH] fix", AUTHOR),
                None,
            ),
            // A mail with a diff (a log, a sketch) is no cover.
            (
                mail("strace log", "c", AUTHOR, &[]),
                patch("[PATCH 1/2] a", AUTHOR),
                None,
            ),
            // The patch replies elsewhere.
            (
                note("x", "c", AUTHOR, &[]),
                mail("[PATCH 1/2] a", "p", AUTHOR, &["c", "other"]),
                None,
            ),
        ];
        for (i, (cover, p, want)) in cases.into_iter().enumerate() {
            let tag = parse_subject(&p.subject).expect("a patch");
            let got = untagged_cover(&cover, &p, &tag, &mut || cover.has_diff())
                .map(|t| (t.version, t.counter));
            assert_eq!(got, want, "case {i}");
        }
    }

    /// The cover is the series' cover; its patches are as before.
    #[test]
    fn assembled_with_the_cover() {
        let cases: Vec<(Vec<Mail>, &str, Option<&str>)> = vec![
            (
                vec![
                    note("[bpf-next v2 0/2] x", "c", AUTHOR, &[]),
                    mail("[PATCH bpf-next v2 1/2] a", "1", AUTHOR, &["c"]),
                    mail("[PATCH bpf-next v2 2/2] b", "2", AUTHOR, &["c"]),
                    note("Re: [bpf-next v2 0/2] x", "r", REVIEWER, &["c"]),
                ],
                "v2 1/2..2/2",
                Some("c"),
            ),
            (
                vec![
                    note("provide a thing v3", "c", AUTHOR, &[]),
                    mail("[PATCH 1/2] a", "1", AUTHOR, &["c"]),
                    mail("[PATCH 2/2] b", "2", AUTHOR, &["c"]),
                ],
                "v1 1/2..2/2",
                Some("c"),
            ),
            // An answer to a review, not starting the thread, with the
            // author's patches replying to it: no cover.
            (
                vec![
                    note("[PATCH 0/2] x", "c0", AUTHOR, &[]),
                    note("Re: [PATCH 0/2] x", "r", REVIEWER, &["c0"]),
                    note("an idea", "c", AUTHOR, &["c0", "r"]),
                    mail("[PATCH v2 1/2] a", "1", AUTHOR, &["c0", "r", "c"]),
                    mail("[PATCH v2 2/2] b", "2", AUTHOR, &["c0", "r", "c"]),
                ],
                "v2 1/2..2/2",
                None,
            ),
        ];
        for (i, (mails, want, cover)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: Some("1".into()),
                revision: None,
            };
            let s = assemble_with(&mails, "t", &sel).unwrap_or_else(|e| panic!("case {i}: {e}"));
            assert_eq!(s.assembly, want, "case {i}");
            let got = s.cover.as_ref().map(|c| c.message_id.as_str());
            assert_eq!(got, cover, "case {i}");
        }
    }
}
