//! Mails of one posting whose subject says otherwise: what one `git
//! send-email` sent together is one posting, whatever a hand-edited cover
//! or a commit's title claims.
//!   - A cover whose counter miscounts its patches (`[PATCH v2 0/3]` over
//!     `1/4..4/4`, all In-Reply-To it): the patches' total is the
//!     posting's.
//!   - A numbered patch titled like a fixlet (`[PATCH v8 17/17] fixup:
//!     ...`, a fixup commit sent with the others) in a posting that has no
//!     other k/n once every mail is placed: it is the posting's k/n, not a
//!     delta to squash. A `(fix)` that reuses the tag of a patch there
//!     (`[PATCH v3 2/3] title (fix)` In-Reply-To 2/3) stays a fixlet.

use super::{same_author, Kind, Thread};

impl Thread<'_> {
    /// Whether multi-patch `k/n` `i`, In-Reply-To the cover of revision
    /// `r` whose counter says another total, is that cover's: same author,
    /// the cover still without patches (the first of them to arrive says
    /// how many were sent) and of the patch's version when it states one.
    pub(super) fn miscounted_cover(&self, r: usize, i: usize) -> bool {
        let Some(tag) = self.classes[i].tag.as_ref() else {
            return false;
        };
        let rev = &self.revisions[r];
        tag.counter.is_some_and(|(k, n)| k >= 1 && n >= 2)
            && rev.cover.is_some()
            && rev.slots.is_empty()
            && rev.ghost.is_none()
            && !rev.is_reroll()
            && tag.version.is_none_or(|v| rev.cover_version == Some(v))
            && same_author(&rev.author, &self.mails[i].author_addresses())
    }

    /// Fixlet `i` numbered `k/n` joins the posting it was sent with as its
    /// k/n: In-Reply-To that posting's cover, or another of its patches
    /// (a chained posting), of its author and total, of its version when
    /// it states one, and with no k/n of its own once every mail is placed.
    pub(super) fn number_fixup(&mut self, i: usize) {
        let Some(tag) = self.classes[i].tag.clone() else {
            return;
        };
        let Some((k, n)) = tag.counter.filter(|&(k, _)| k >= 1) else {
            return;
        };
        let Some(p) = self.parent(i) else {
            return;
        };
        let Some(&r) = self.home.get(&p) else {
            return;
        };
        let sent_with = match self.classes[p].kind {
            Kind::Cover => self.revisions[r].cover == Some(p),
            Kind::Patch => self.tag(p).index() != k,
            _ => false,
        };
        let rev = &self.revisions[r];
        let of_version = tag.version.is_none_or(|v| {
            rev.cover_version == Some(v) || rev.explicit_versions.contains_key(&Some(v))
        });
        if sent_with
            && of_version
            && !rev.is_reroll()
            && rev.total == n
            && !rev.slots.contains_key(&k)
            && same_author(&rev.author, &self.mails[i].author_addresses())
        {
            self.classes[i].kind = Kind::Patch;
            self.join(r, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::series::{assemble_with, Mail, Selection};

    const AUTHOR: &str = "A U Thor <a@example.org>";
    const OTHER: &str = "O Ther <o@example.org>";

    /// A mail `id` of `from` In-Reply-To `parent` (References: it).
    fn mail(subject: &str, id: &str, from: &str, parent: Option<&str>) -> Mail {
        crate::series::test_mail::mail(subject, id, from, parent.as_slice())
    }

    fn a(subject: &str, id: &str, parent: Option<&str>) -> Mail {
        mail(subject, id, AUTHOR, parent)
    }

    /// Real shapes from tools/thread-corpus (linux-arch/00054, 00122, 00158):
    /// (mails, Ok((assembly, patches' ids, cover)) or Err(refusal)).
    #[test]
    fn what_one_send_holds() {
        type Want =
            Result<(&'static str, &'static [&'static str], Option<&'static str>), &'static str>;
        let cases: Vec<(Vec<Mail>, Want)> = vec![
            // A fixup commit sent as the posting's last patch.
            (
                vec![
                    a("[PATCH v8 0/3] c", "c", None),
                    a("[PATCH v8 1/3] a", "1", Some("c")),
                    a("[PATCH v8 2/3] b", "2", Some("c")),
                    a("[PATCH v8 3/3] fixup: b", "3", Some("c")),
                ],
                Ok(("v8 1/3..3/3", &["1", "2", "3"], Some("c"))),
            ),
            // The same in a chained posting (each patch In-Reply-To the one before).
            (
                vec![
                    a("[PATCH 1/2] a", "1", None),
                    a("[PATCH 2/2] fixup! a", "2", Some("1")),
                ],
                Ok(("v1 1/2..2/2", &["1", "2"], None)),
            ),
            // A `(fix)` reusing the tag of a patch of the posting stays a fixlet.
            (
                vec![
                    a("[PATCH v3 0/2] c", "c", None),
                    a("[PATCH v3 1/2] a", "1", Some("c")),
                    a("[PATCH v3 2/2] b", "2", Some("c")),
                    a("[PATCH v3 2/2] b (fix)", "f", Some("2")),
                ],
                Ok(("v3 1/2..2/2", &["1", "2"], Some("c"))),
            ),
            // ... and In-Reply-To the cover, when 2/2 is there.
            (
                vec![
                    a("[PATCH v3 0/2] c", "c", None),
                    a("[PATCH v3 1/2] a", "1", Some("c")),
                    a("[PATCH v3 2/2] b", "2", Some("c")),
                    a("[PATCH v3 2/2] fix: b", "f", Some("c")),
                ],
                Ok(("v3 1/2..2/2", &["1", "2"], Some("c"))),
            ),
            // Another author's fixup, another version's, another total's: not the posting's.
            (
                vec![
                    a("[PATCH v3 0/2] c", "c", None),
                    a("[PATCH v3 1/2] a", "1", Some("c")),
                    mail("[PATCH v3 2/2] fixup: a", "o", OTHER, Some("c")),
                    a("[PATCH v2 2/2] fixup: a", "v2", Some("c")),
                    a("[PATCH v3 2/3] fixup: a", "t3", Some("c")),
                ],
                Err("v3 is incomplete: patch(es) 2 of 2 missing"),
            ),
            // The cover counts three, four patches were sent.
            (
                vec![
                    a("[PATCH v2 0/3] c", "c", None),
                    a("[PATCH v2 1/4] a", "1", Some("c")),
                    a("[PATCH v2 2/4] b", "2", Some("c")),
                    a("[PATCH v2 3/4] d", "3", Some("c")),
                    a("[PATCH v2 4/4] e", "4", Some("c")),
                ],
                Ok(("v2 1/4..4/4", &["1", "2", "3", "4"], Some("c"))),
            ),
            // Unversioned patches under a versioned miscounted cover.
            (
                vec![
                    a("[PATCH v2 0/1] c", "c", None),
                    a("[PATCH 1/2] a", "1", Some("c")),
                    a("[PATCH 2/2] b", "2", Some("c")),
                ],
                Ok(("v2 1/2..2/2", &["1", "2"], Some("c"))),
            ),
            // Once the cover has patches of its count, another total is
            // another posting (here an incomplete one).
            (
                vec![
                    a("[PATCH v2 0/2] c", "c", None),
                    a("[PATCH v2 1/2] a", "1", Some("c")),
                    a("[PATCH v2 2/2] b", "2", Some("c")),
                    a("[PATCH v2 1/3] a", "x", Some("c")),
                ],
                Err("v2 is incomplete: patch(es) 2, 3 of 3 missing"),
            ),
            // A patch of another version, or a single, does not recount the cover.
            (
                vec![
                    a("[PATCH v2 0/3] c", "c", None),
                    a("[PATCH v3 1/4] a", "1", Some("c")),
                ],
                Err("v3 is incomplete: patch(es) 2, 3, 4 of 4 missing"),
            ),
            (
                vec![
                    a("[PATCH v2 0/3] c", "c", None),
                    a("[PATCH v2] a", "1", Some("c")),
                ],
                Ok(("v2 1/1", &["1"], None)),
            ),
        ];
        for (i, (mails, want)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: Some(mails[0].message_id.clone()),
                revision: None,
            };
            match (assemble_with(&mails, "t", &sel), want) {
                (Ok(s), Ok((assembly, ids, cover))) => {
                    let got: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
                    assert_eq!(s.assembly, assembly, "case {i}");
                    assert_eq!(got, ids, "case {i}");
                    let c = s.cover.as_ref().map(|c| c.message_id.as_str());
                    assert_eq!(c, cover, "case {i}");
                }
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "case {i}: {e}"),
                (got, want) => panic!("case {i}: got {got:?}, want {want:?}"),
            }
        }
    }
}
