//! Choosing the revision to apply out of a thread's revisions: the series
//! the requested mail belongs to (its author's postings, minus follow-up
//! single patches), the newest posting of it that is complete once partial
//! rerolls are completed from what they reply to, or `--revision N`; and
//! why every other mail was left out. Pure: a Thread in, a choice out.

use std::collections::HashSet;

use super::thread::{Kind, Thread, MAX_REROLL_DEPTH};

/// Why a mail of the thread is not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    Reply,
    NotAPatch,
    NoDiff,
    Fixlet,
    OtherSeries,
    Stray,
    OlderRevision,
    NewerRevision,
    Replaced,
    Rerolled,
    NotPicked,
}

impl Reason {
    pub fn text(self) -> &'static str {
        match self {
            Reason::Reply => "reply",
            Reason::NotAPatch => "not a patch",
            Reason::NoDiff => "no diff",
            Reason::Fixlet => "fixlet (to squash, not a replacement)",
            Reason::OtherSeries => "other series",
            Reason::Stray => "follow-up single patch, not part of the series",
            Reason::OlderRevision => "older revision",
            Reason::NewerRevision => "newer revision, not selected",
            Reason::Replaced => "replaced by a later copy",
            Reason::Rerolled => "replaced by a reroll",
            Reason::NotPicked => "not picked (--patches)",
        }
    }
}

/// A mail that is not applied, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeftOut {
    pub message_id: String,
    pub subject: String,
    pub from: String,
    pub reason: Reason,
    /// Specifics: the revision, the other author, the mail that replaced it.
    #[serde(default)]
    pub detail: String,
}

/// Why no revision can be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    NoPatches,
    Incomplete {
        version: u32,
        total: u32,
        missing: Vec<u32>,
        /// The newest complete revision, to name with `--revision`.
        newest_complete: Option<u32>,
    },
    NoSuchRevision {
        wanted: u32,
        seen: Vec<u32>,
    },
    /// The revision picked is completed through more than
    /// [`MAX_REROLL_DEPTH`] rerolls, each completed from the one before.
    TooDeep {
        version: u32,
        depth: usize,
    },
}

/// The revision picked, with how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub revision: usize,
    pub family: Vec<usize>,
    pub how: String,
}

/// The revision the requested mail belongs to: itself, or the nearest
/// ancestor that is a cover or patch; else the first revision in the thread.
fn requested_revision(t: &Thread, requested: Option<&str>) -> Option<usize> {
    let first = || {
        (0..t.revisions.len())
            .filter(|&r| !t.revisions[r].slots.is_empty())
            .min_by_key(|&r| t.revisions[r].first)
    };
    let Some(mut i) = requested.and_then(|id| t.by_id.get(id).copied()) else {
        return first();
    };
    // In-Reply-To and References can loop: each mail is looked at once.
    let mut seen = HashSet::new();
    while seen.insert(i) {
        if let Some(&r) = t.home.get(&i) {
            if !t.revisions[r].slots.is_empty() || t.revisions[r].total > 0 {
                return Some(r);
            }
        }
        let m = &t.mails[i];
        let next = m
            .in_reply_to
            .iter()
            .chain(m.references.iter().rev())
            .find_map(|id| t.by_id.get(id.as_str()).copied().filter(|&p| p != i));
        match next {
            Some(p) => i = p,
            None => break,
        }
    }
    first()
}

/// The requested revision's series: its author's revisions in posting
/// order, without follow-up single patches, counterless notes and other
/// single patches sent In-Reply-To the same mail as the requested one.
pub fn family(t: &Thread, requested: Option<&str>) -> Option<(usize, Vec<usize>)> {
    let req = requested_revision(t, requested)?;
    if t.is_stray(req) {
        return Some((req, vec![req]));
    }
    let mut fam: Vec<usize> = (0..t.revisions.len())
        .filter(|&r| {
            let rev = &t.revisions[r];
            t.same_author(r, req)
                && !t.is_stray(r)
                && !t.distinct_singles(r, req)
                && (!rev.slots.is_empty() || rev.total > 0)
        })
        .collect();
    fam.sort_by_key(|&r| t.revisions[r].last);
    // A cover sent again without patches (`[PATCH v2/resend 0/8]` after the
    // whole v2) is no new revision: the earlier posting of its version
    // and total stays the newest.
    let resent_cover = |i: usize, r: usize| {
        let rev = &t.revisions[r];
        rev.slots.is_empty()
            && !rev.is_reroll()
            && fam[..i].iter().any(|&o| {
                !t.revisions[o].slots.is_empty()
                    && t.revisions[o].total == rev.total
                    && t.revision_version(o) == t.revision_version(r)
            })
    };
    let fam = fam
        .iter()
        .enumerate()
        .filter(|&(i, &r)| r == req || !resent_cover(i, r))
        .map(|(_, &r)| r)
        .collect();
    Some((req, fam))
}

/// Counters 1..=total missing from a revision once completed.
pub fn missing(t: &Thread, r: usize) -> Vec<u32> {
    if t.is_complete(r) {
        return vec![];
    }
    let full = t.full_slots(r);
    let total = t.revisions[r].total.max(1);
    (1..=total).filter(|k| !full.contains_key(k)).collect()
}

/// The newest complete revision of the family, or `wanted`'s newest posting.
pub fn choose(t: &Thread, requested: Option<&str>, wanted: Option<u32>) -> Result<Choice, Refusal> {
    let (_, fam) = family(t, requested).ok_or(Refusal::NoPatches)?;
    let choice = choose_in(t, fam, wanted)?;
    let depth = t.depth(choice.revision);
    if depth > MAX_REROLL_DEPTH {
        return Err(Refusal::TooDeep {
            version: t.revision_version(choice.revision),
            depth,
        });
    }
    Ok(choice)
}

/// [`choose`] within the family.
fn choose_in(t: &Thread, fam: Vec<usize>, wanted: Option<u32>) -> Result<Choice, Refusal> {
    let complete = |r: &usize| t.is_complete(*r);
    let newest_complete = fam.iter().rev().find(|r| complete(r)).copied();
    if let Some(v) = wanted {
        let of_v: Vec<usize> = fam
            .iter()
            .copied()
            .filter(|&r| t.revision_version(r) == v)
            .collect();
        let Some(&newest) = of_v.last() else {
            let mut seen: Vec<u32> = fam.iter().map(|&r| t.revision_version(r)).collect();
            seen.sort_unstable();
            seen.dedup();
            return Err(Refusal::NoSuchRevision { wanted: v, seen });
        };
        return match of_v.iter().rev().find(|r| complete(r)) {
            Some(&r) => Ok(Choice {
                revision: r,
                family: fam,
                how: format!("--revision {v}"),
            }),
            None => Err(Refusal::Incomplete {
                version: v,
                total: t.revisions[newest].total,
                missing: missing(t, newest),
                newest_complete: newest_complete.map(|r| t.revision_version(r)),
            }),
        };
    }
    let Some(&newest) = fam.last() else {
        return Err(Refusal::NoPatches);
    };
    if !complete(&newest) {
        return Err(Refusal::Incomplete {
            version: t.revision_version(newest),
            total: t.revisions[newest].total,
            missing: missing(t, newest),
            newest_complete: newest_complete.map(|r| t.revision_version(r)),
        });
    }
    // Revisions the chosen one is completed from are not "left out".
    let chain = t.depth(newest);
    let older = fam.len().saturating_sub(1 + chain);
    Ok(Choice {
        revision: newest,
        how: if older == 0 && chain == 0 {
            "the only revision in the thread".to_string()
        } else if older == 0 {
            "the newest posting in the thread (completed from the revision it replies to)"
                .to_string()
        } else {
            format!(
                "the newest posting in the thread ({older} older revision{} left out)",
                if older == 1 { "" } else { "s" }
            )
        },
        family: fam,
    })
}

/// `v5 = v2 1/4 + v2 2/4 + v2 3/4 + v5 4/4`, or `v3 1/3..3/3` when every
/// patch comes from the posting itself.
pub fn assembly(t: &Thread, r: usize) -> String {
    let full = t.full_slots(r);
    let total = t.revisions[r].total.max(1);
    let version = t.revision_version(r);
    let parts: Vec<(u32, u32)> = full
        .iter()
        .map(|(k, (home, s))| (t.slot_version(*home, s), *k))
        .collect();
    if parts.iter().all(|(v, _)| *v == version) && !t.revisions[r].is_reroll() {
        return if total == 1 {
            format!("v{version} 1/1")
        } else {
            format!("v{version} 1/{total}..{total}/{total}")
        };
    }
    let items: Vec<String> = parts
        .iter()
        .map(|(v, k)| format!("v{v} {k}/{total}"))
        .collect();
    format!("v{version} = {}", items.join(" + "))
}

/// Every mail of the thread that `choice` does not apply, with the reason.
pub fn left_out(t: &Thread, choice: &Choice) -> Vec<LeftOut> {
    let chosen = choice.revision;
    let full = t.full_slots(chosen);
    let used: HashSet<usize> = full
        .values()
        .map(|(_, s)| s.mail)
        .chain(t.cover_of(chosen))
        .collect();
    let homes: HashSet<usize> = full.values().map(|(h, _)| *h).collect();
    let family: HashSet<usize> = choice.family.iter().copied().collect();
    let replaced: HashSet<usize> = t
        .revisions
        .iter()
        .flat_map(|r| r.replaced.iter().copied())
        .collect();
    let chosen_last = t.revisions[chosen].last;
    let mut out = Vec::new();
    for (i, m) in t.mails.iter().enumerate() {
        if used.contains(&i) {
            continue;
        }
        let (reason, detail) = match t.classes[i].kind {
            Kind::Reply => (Reason::Reply, String::new()),
            Kind::NotPatch => (Reason::NotAPatch, String::new()),
            Kind::NoDiff => (Reason::NoDiff, String::new()),
            Kind::Fixlet => (
                Reason::Fixlet,
                m.in_reply_to
                    .as_ref()
                    .map(|p| format!("in reply to <{p}>"))
                    .unwrap_or_default(),
            ),
            Kind::Cover | Kind::Patch => match t.home.get(&i) {
                None => (Reason::NoDiff, String::new()),
                Some(&r) => {
                    let rev = &t.revisions[r];
                    let by = |k: u32| {
                        full.get(&k)
                            .map(|(_, s)| format!("by <{}>", t.mails[s.mail].message_id))
                            .unwrap_or_default()
                    };
                    let counter = t.classes[i].tag.as_ref().map_or(1, |g| g.index());
                    // A mail is replaced only in its own revision.
                    if replaced.contains(&i) {
                        let newer = rev.slots.get(&counter).map(|s| s.mail);
                        (
                            Reason::Replaced,
                            newer
                                .map(|m| format!("by <{}>", t.mails[m].message_id))
                                .unwrap_or_default(),
                        )
                    } else if t.classes[i].kind == Kind::Cover
                        && rev.slots.is_empty()
                        && rev.total == 0
                    {
                        (Reason::NoDiff, String::new())
                    } else if !t.same_author(r, chosen) {
                        (
                            Reason::OtherSeries,
                            format!("another author: {}", t.mails[rev.first].author()),
                        )
                    } else if t.distinct_singles(r, chosen) {
                        (
                            Reason::OtherSeries,
                            "another patch sent In-Reply-To the same mail".to_string(),
                        )
                    } else if !family.contains(&r) {
                        (Reason::Stray, String::new())
                    } else if r == chosen || homes.contains(&r) {
                        (Reason::Rerolled, by(counter))
                    } else {
                        let v = t.revision_version(r);
                        if rev.last < chosen_last {
                            (Reason::OlderRevision, format!("v{v}"))
                        } else {
                            (Reason::NewerRevision, format!("v{v}"))
                        }
                    }
                }
            },
        };
        out.push(LeftOut {
            message_id: m.message_id.clone(),
            subject: m.subject.clone(),
            from: m.author().to_string(),
            reason,
            detail,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::series::{assemble_with, Mail, Selection};

    /// A mail of A U Thor `id`, In-Reply-To `parent` (References: it).
    fn mail(subject: &str, id: &str, parent: Option<&str>) -> Mail {
        let author = "A U Thor <a@example.org>";
        crate::series::test_mail::mail(subject, id, author, parent.as_slice())
    }

    /// Mails that come after a complete posting and are no newer
    /// revision of it (real shapes from tools/thread-corpus):
    /// (mails, the chosen assembly).
    #[test]
    fn not_a_newer_revision() {
        let posting = || {
            vec![
                mail("[PATCH v5 0/2] c", "c", None),
                mail("[PATCH v5 1/2] a", "1", Some("c")),
                mail("[PATCH v5 2/2] b", "2", Some("c")),
            ]
        };
        let cases: Vec<(Vec<Mail>, &str)> = vec![
            // The cover sent again, alone.
            (
                [posting(), vec![mail("[PATCH v5/resend 0/2] c", "c", None)]].concat(),
                "v5 1/2..2/2",
            ),
            // A fix for the series, then its v2 and v3, each a reroll of the
            // one before or a reply to the series: follow-ups, kept apart.
            (
                [
                    posting(),
                    vec![
                        mail("[PATCH] fix build", "f1", Some("2")),
                        mail("[PATCH v2] fix build", "f2", Some("f1")),
                        mail("[PATCH v3] fix build", "f3", Some("2")),
                    ],
                ]
                .concat(),
                "v5 1/2..2/2",
            ),
        ];
        for (i, (mails, want)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: Some("c".into()),
                revision: None,
            };
            let got = assemble_with(&mails, "t", &sel).map(|s| s.assembly);
            assert_eq!(got.as_deref().ok(), Some(want), "case {i}: {got:?}");
        }
    }
}
