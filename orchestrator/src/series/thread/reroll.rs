//! Partial rerolls: `[PATCH vN k/n]` sent In-Reply-To the k/n it
//! replaces (or to another patch of the posting, or to a review of k/n).
//! The rerolls of one posting form one chain, each completed from the one
//! before, so the series a maintainer combines is each patch's newest
//! revision: `v3 1/2`, then `v2 2/2`, both In-Reply-To v1, make `v3 1/2 +
//! v2 2/2`, not `v1 1/2 + v2 2/2`.

use super::{same_author, Thread};

impl Thread<'_> {
    /// `[PATCH vN k/n]` In-Reply-To an earlier k/n: a revision made of the
    /// revision `base` with k replaced. The rerolls of one posting form
    /// one chain, each completed from the one before, whatever patch of
    /// the chain it replies to: `v3 1/2`, then `v2 2/2`, each In-Reply-To
    /// v1, make `v3 1/2 + v2 2/2` (each patch's newest revision, as a
    /// maintainer combines them). Rerolls of the same version
    /// (4/5 and 5/5 each In-Reply-To their old selves) make one revision.
    pub(super) fn reroll(&mut self, base: usize, i: usize) {
        let tag = self.tag(i).clone();
        let author = self.mails[i].author_addresses();
        let root = self.revisions[base].chain_root.unwrap_or(base);
        let tip = self.index.tips.get(&root).copied();
        if let Some(t) = tip {
            let rev = &self.revisions[t];
            if same_author(&rev.author, &author)
                && !rev.is_full()
                && !rev.slots.contains_key(&tag.index())
                && rev.all_slots_of(tag.version)
            {
                return self.join(t, i);
            }
        }
        let on = tip.unwrap_or(base);
        let r = self.new_revision(i);
        let b = &self.revisions[on];
        let (total, cover_version) = (b.total, b.cover_version);
        let rev = &mut self.revisions[r];
        rev.based_on = Some(on);
        rev.chain_root = Some(root);
        rev.total = total;
        rev.cover_version = cover_version;
        self.join(r, i);
        self.index.tips.insert(root, r);
    }

    /// Whether `k/n` patch `i`, In-Reply-To another patch of revision `r`
    /// (of its author and total), is a partial reroll rather than the
    /// posting's k/n sent chained: `r` holds k/n already, of another
    /// version (`[PATCH v2 2/2]` In-Reply-To `[PATCH 1/2]` of a posting
    /// that has its 2/2).
    pub(super) fn rerolls_sibling(&self, r: usize, i: usize) -> bool {
        let tag = self.tag(i);
        let rev = &self.revisions[r];
        rev.slots
            .get(&tag.index())
            .is_some_and(|s| s.explicit.or(rev.cover_version) != tag.version.or(rev.cover_version))
    }
}

#[cfg(test)]
mod tests {
    use crate::series::test_mail::mail;
    use crate::series::{assemble_with, Mail, Selection};

    const AUTHOR: &str = "A U Thor <a@example.org>";
    const REVIEWER: &str = "R Eviewer <r@example.org>";

    /// Partial rerolls of one posting, one after another (real shape:
    /// tools/thread-corpus linux-kselftest/00854): (mails, assembly,
    /// patches' ids).
    #[test]
    fn rerolls_of_one_posting_chain() {
        let a = |s: &str, id: &str, refs: &[&str]| mail(s, id, AUTHOR, refs);
        let v1 = || {
            vec![
                a("[PATCH 1/2] a", "1", &[]),
                a("[PATCH 2/2] b", "2", &["1"]),
            ]
        };
        let cases: Vec<(Vec<Mail>, &str, Vec<&str>)> = vec![
            // v2 1/2 (In-Reply-To a review), v3 1/2 and v2 2/2 (each
            // In-Reply-To v1 1/2): each patch's newest revision.
            (
                [
                    v1(),
                    vec![
                        mail("Re: [PATCH 1/2] a", "r", REVIEWER, &["1"]),
                        a("[PATCH v2 1/2] a", "v2a", &["1", "r"]),
                        a("[PATCH v3 1/2] a", "v3a", &["1"]),
                        a("[PATCH v2 2/2] b", "v2b", &["1"]),
                    ],
                ]
                .concat(),
                "v3 = v3 1/2 + v2 2/2",
                vec!["v3a", "v2b"],
            ),
            // The same without the review.
            (
                [
                    v1(),
                    vec![
                        a("[PATCH v3 1/2] a", "v3a", &["1"]),
                        a("[PATCH v2 2/2] b", "v2b", &["2"]),
                    ],
                ]
                .concat(),
                "v3 = v3 1/2 + v2 2/2",
                vec!["v3a", "v2b"],
            ),
            // Rerolls of one version make one revision.
            (
                [
                    v1(),
                    vec![
                        a("[PATCH v2 1/2] a", "v2a", &["1"]),
                        a("[PATCH v2 2/2] b", "v2b", &["2"]),
                    ],
                ]
                .concat(),
                "v2 = v2 1/2 + v2 2/2",
                vec!["v2a", "v2b"],
            ),
            // A chained posting (2/2 In-Reply-To 1/2) is one posting.
            (v1(), "v1 1/2..2/2", vec!["1", "2"]),
            // A later copy of 2/2 of the same version, chained: the later wins.
            (
                [v1(), vec![a("[PATCH 2/2] b", "2again", &["1"])]].concat(),
                "v1 1/2..2/2",
                vec!["1", "2again"],
            ),
        ];
        for (i, (mails, want, ids)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: Some("1".into()),
                revision: None,
            };
            let s = assemble_with(&mails, "t", &sel).unwrap_or_else(|e| panic!("case {i}: {e}"));
            assert_eq!(s.assembly, want, "case {i}");
            let got: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
            assert_eq!(got, ids, "case {i}");
        }
    }
}
