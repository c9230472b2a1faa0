//! The thread model: which mail is a cover, a patch, a reply, a fixlet; and
//! how patches group into revisions through Message-ID / In-Reply-To /
//! References (a posting under its cover or first patch; a partial reroll
//! sent In-Reply-To the patch it replaces). Pure: mails in, revisions out.

use std::collections::{BTreeMap, HashMap};

use super::mail::Mail;
use super::subject::{self, SubjectTag};

/// What one mail is to the series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `Re:`, `AW:`, `回复:` ...: never a patch, even with a diff.
    Reply,
    /// No `[PATCH ...]`/`[RFC ...]` tag.
    NotPatch,
    /// A tagged mail with a counter > 0 but no diff (b4 follow-ups,
    /// notes sent with a patch's subject).
    NoDiff,
    /// `(fix)`, `fix: ...`: to squash into a patch, never to replace it.
    Fixlet,
    /// `0/N`, or a tag without a counter and without a diff (`[PATCHSET v2]`)
    /// which becomes a cover when patches reply to it.
    Cover,
    Patch,
}

/// A mail with its parsed tag and kind.
#[derive(Clone, Debug)]
pub struct Classified {
    pub tag: Option<SubjectTag>,
    pub kind: Kind,
}

pub fn classify(mail: &Mail) -> Classified {
    if subject::is_reply(&mail.subject) {
        return Classified {
            tag: None,
            kind: Kind::Reply,
        };
    }
    let Some(tag) = subject::parse_subject(&mail.subject) else {
        return Classified {
            tag: None,
            kind: Kind::NotPatch,
        };
    };
    let diff = mail.has_diff();
    let kind = if tag.is_fixlet() && diff {
        Kind::Fixlet
    } else if tag.counter.is_some_and(|c| c.0 == 0) || (tag.counter.is_none() && !diff) {
        Kind::Cover
    } else if diff {
        Kind::Patch
    } else {
        Kind::NoDiff
    };
    Classified {
        tag: Some(tag),
        kind,
    }
}

/// One patch placed in a revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub mail: usize,
    /// The version in the mail's own tag (None: inherited).
    pub explicit: Option<u32>,
}

/// A revision: a posting (cover + patches of one send), or a partial reroll
/// (the patches it resends; the rest come from `based_on`).
#[derive(Clone, Debug, Default)]
pub struct Revision {
    pub cover: Option<usize>,
    /// Total from the counters (0 while unknown: a counterless cover).
    pub total: u32,
    /// The cover's version, for its unversioned patches.
    pub cover_version: Option<u32>,
    pub rfc: bool,
    pub slots: BTreeMap<u32, Slot>,
    pub based_on: Option<usize>,
    pub author: Vec<String>,
    /// Arrival index of the first and newest member.
    pub first: usize,
    pub last: usize,
    /// Mails replaced in this revision by a later copy of the same counter.
    pub replaced: Vec<usize>,
    /// A ghost parent (an In-Reply-To not in the thread) its patches share.
    pub ghost: Option<String>,
}

impl Revision {
    pub fn is_reroll(&self) -> bool {
        self.based_on.is_some()
    }
}

/// The thread: classified mails and the revisions they form.
#[derive(Clone, Debug)]
pub struct Thread<'a> {
    pub mails: &'a [Mail],
    pub classes: Vec<Classified>,
    pub revisions: Vec<Revision>,
    /// Mail index -> the revision it was placed in.
    pub home: HashMap<usize, usize>,
    pub by_id: HashMap<&'a str, usize>,
}

fn same_author(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| b.contains(x))
}

impl<'a> Thread<'a> {
    pub fn build(mails: &'a [Mail]) -> Thread<'a> {
        let mut t = Thread {
            mails,
            classes: mails.iter().map(classify).collect(),
            revisions: Vec::new(),
            home: HashMap::new(),
            by_id: HashMap::new(),
        };
        for (i, m) in mails.iter().enumerate() {
            if !m.message_id.is_empty() {
                // The first copy keeps the id; a same-id resend is still its own mail.
                t.by_id.entry(m.message_id.as_str()).or_insert(i);
            }
        }
        for i in 0..mails.len() {
            match t.classes[i].kind {
                Kind::Cover => t.add_cover(i),
                Kind::Patch => t.place(i),
                _ => {}
            }
        }
        t
    }

    fn tag(&self, i: usize) -> &SubjectTag {
        self.classes[i]
            .tag
            .as_ref()
            .expect("covers and patches are tagged")
    }

    fn parent(&self, i: usize) -> Option<usize> {
        let id = self.mails[i].in_reply_to.as_deref()?;
        self.by_id.get(id).copied().filter(|&p| p != i)
    }

    fn new_revision(&mut self, i: usize) -> usize {
        let tag = self.tag(i).clone();
        self.revisions.push(Revision {
            total: tag.counter.map_or(0, |c| c.1),
            rfc: tag.rfc,
            author: self.mails[i].author_addresses(),
            first: i,
            last: i,
            ..Revision::default()
        });
        self.revisions.len() - 1
    }

    fn add_cover(&mut self, i: usize) {
        let r = self.new_revision(i);
        let tag = self.tag(i).clone();
        let rev = &mut self.revisions[r];
        rev.cover = Some(i);
        rev.cover_version = tag.version;
        self.home.insert(i, r);
    }

    fn join(&mut self, r: usize, i: usize) {
        let tag = self.tag(i).clone();
        let rev = &mut self.revisions[r];
        if rev.total == 0 {
            rev.total = tag.total();
        }
        rev.rfc |= tag.rfc;
        rev.last = rev.last.max(i);
        let slot = Slot {
            mail: i,
            explicit: tag.version,
        };
        // Of two mails with the same counter, the later one wins.
        if let Some(old) = rev.slots.insert(tag.index(), slot) {
            rev.replaced.push(old.mail);
        }
        self.home.insert(i, r);
    }

    fn place(&mut self, i: usize) {
        let tag = self.tag(i).clone();
        let author = self.mails[i].author_addresses();
        if let Some(p) = self.parent(i) {
            if let Some(&pr) = self.home.get(&p) {
                let prev = &self.revisions[pr];
                let fits = same_author(&prev.author, &author)
                    && (prev.total == 0 || prev.total == tag.total());
                match self.classes[p].kind {
                    Kind::Cover if fits => return self.join(pr, i),
                    Kind::Patch if fits => {
                        if self.tag(p).index() != tag.index() {
                            // A chained posting: 2/3 In-Reply-To 1/3.
                            return self.join(pr, i);
                        }
                        return self.reroll(pr, i);
                    }
                    _ => {}
                }
            }
        }
        let ghost = self.mails[i]
            .in_reply_to
            .clone()
            .filter(|id| !self.by_id.contains_key(id.as_str()));
        if let Some(g) = &ghost {
            // Patches of a hand-written cover reply to a `cover.NNN.git` id
            // that was never sent: they share it.
            if let Some(r) = self.revisions.iter().rposition(|r| {
                r.ghost.as_deref() == Some(g.as_str())
                    && same_author(&r.author, &author)
                    && r.total == tag.total()
            }) {
                return self.join(r, i);
            }
            if let Some(r) = self.adopting_cover(i, g) {
                self.revisions[r].ghost = Some(g.clone());
                return self.join(r, i);
            }
        } else if self.mails[i].in_reply_to.is_none() && self.mails[i].references.is_empty() {
            // Unthreaded mails (format-patch without --thread): the newest
            // unthreaded posting of the same author, total and version with
            // that counter still free.
            if let Some(r) = self.revisions.iter().rposition(|r| {
                !r.is_reroll()
                    && r.ghost.is_none()
                    && same_author(&r.author, &author)
                    && (r.total == tag.total() || r.total == 0)
                    && !r.slots.contains_key(&tag.index())
                    && r.slots.values().all(|s| s.explicit == tag.version)
                    && (tag.version.is_none()
                        || r.cover_version.is_none_or(|v| Some(v) == tag.version))
                    && [r.cover, r.slots.values().next().map(|s| s.mail)]
                        .into_iter()
                        .flatten()
                        .all(|m| {
                            self.mails[m].in_reply_to.is_none()
                                && self.mails[m].references.is_empty()
                        })
            }) {
                return self.join(r, i);
            }
        }
        let r = self.new_revision(i);
        self.revisions[r].ghost = ghost;
        self.join(r, i);
    }

    /// The cover a ghost-parented patch belongs to: same author and total,
    /// still without patches, and replying where the patch's References say
    /// the ghost cover replied (else the newest such cover before it).
    fn adopting_cover(&self, i: usize, ghost: &str) -> Option<usize> {
        let tag = self.tag(i);
        let author = self.mails[i].author_addresses();
        let refs = &self.mails[i].references;
        let grandparent = refs
            .iter()
            .position(|r| r == ghost)
            .and_then(|p| p.checked_sub(1))
            .map(|p| refs[p].as_str());
        let candidates: Vec<usize> = (0..self.revisions.len())
            .filter(|&r| {
                let rev = &self.revisions[r];
                rev.cover.is_some_and(|c| c < i)
                    && rev.slots.is_empty()
                    && rev.ghost.is_none()
                    && same_author(&rev.author, &author)
                    && (rev.total == 0 || rev.total == tag.total())
            })
            .collect();
        candidates
            .iter()
            .rev()
            .find(|&&r| {
                let c = self.revisions[r].cover.unwrap_or(0);
                grandparent.is_some() && self.mails[c].in_reply_to.as_deref() == grandparent
            })
            .or(candidates.last())
            .copied()
    }

    /// `[PATCH vN k/n]` In-Reply-To an earlier k/n: a revision made of the
    /// revision `base` with k replaced. Rerolls of the same base and version
    /// (4/5 and 5/5 each In-Reply-To their old selves) make one revision.
    fn reroll(&mut self, base: usize, i: usize) {
        let tag = self.tag(i).clone();
        let author = self.mails[i].author_addresses();
        if let Some(r) = self.revisions.iter().rposition(|r| {
            r.based_on == Some(base)
                && same_author(&r.author, &author)
                && !r.slots.contains_key(&tag.index())
                && r.slots.values().all(|s| s.explicit == tag.version)
        }) {
            return self.join(r, i);
        }
        let r = self.new_revision(i);
        let b = &self.revisions[base];
        let (total, cover_version) = (b.total, b.cover_version);
        let rev = &mut self.revisions[r];
        rev.based_on = Some(base);
        rev.total = total;
        rev.cover_version = cover_version;
        self.join(r, i);
    }

    /// Version of a placed patch: its own tag's, else its posting's (the
    /// cover's, else the highest any patch of the posting states), else 1.
    pub fn slot_version(&self, r: usize, slot: &Slot) -> u32 {
        if let Some(v) = slot.explicit {
            return v;
        }
        let rev = &self.revisions[r];
        if let Some(v) = rev.cover_version {
            return v;
        }
        if let Some(b) = rev.based_on {
            // A RESEND without a version keeps its base's.
            return self.revision_version(b);
        }
        rev.slots
            .values()
            .filter_map(|s| s.explicit)
            .max()
            .unwrap_or(1)
    }

    /// All patches of a revision, rerolls completed from their bases:
    /// counter -> (revision the patch comes from, slot).
    pub fn full_slots(&self, r: usize) -> BTreeMap<u32, (usize, Slot)> {
        let mut out = match self.revisions[r].based_on {
            Some(b) => self.full_slots(b),
            None => BTreeMap::new(),
        };
        for (k, s) in &self.revisions[r].slots {
            out.insert(*k, (r, s.clone()));
        }
        out
    }

    /// The cover of a revision, a reroll's from its base.
    pub fn cover_of(&self, r: usize) -> Option<usize> {
        let rev = &self.revisions[r];
        rev.cover
            .or_else(|| rev.based_on.and_then(|b| self.cover_of(b)))
    }

    /// The revision's number: the highest version of its patches and cover.
    pub fn revision_version(&self, r: usize) -> u32 {
        let from_patches = self
            .full_slots(r)
            .values()
            .map(|(home, s)| self.slot_version(*home, s))
            .max();
        let cover = self.cover_of(r).and_then(|c| self.tag(c).version);
        from_patches.max(cover).unwrap_or(1)
    }

    pub fn revision_rfc(&self, r: usize) -> bool {
        let rev = &self.revisions[r];
        rev.rfc || rev.based_on.is_some_and(|b| self.revision_rfc(b))
    }

    /// True when a tagged mail of a posting of `r`'s author would be a
    /// follow-up single patch: `[PATCH] title` (no counter, no version, no
    /// cover) sent after a multi-patch or versioned revision of the author.
    pub fn is_stray(&self, r: usize) -> bool {
        let rev = &self.revisions[r];
        if rev.is_reroll() || rev.cover.is_some() || rev.total > 1 {
            return false;
        }
        if rev.slots.values().any(|s| s.explicit.is_some()) {
            return false;
        }
        if rev
            .slots
            .values()
            .any(|s| self.tag(s.mail).counter.is_some())
        {
            return false;
        }
        self.revisions[..r].iter().enumerate().any(|(o, other)| {
            same_author(&other.author, &rev.author)
                && other.first < rev.first
                && (other.total > 1 || self.revision_version(o) > 1)
                && !other.slots.is_empty()
        })
    }

    pub fn same_author(&self, a: usize, b: usize) -> bool {
        same_author(&self.revisions[a].author, &self.revisions[b].author)
    }
}
