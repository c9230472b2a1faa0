//! The thread model: which mail is a cover, a patch, a reply, a fixlet; and
//! how patches group into revisions through Message-ID / In-Reply-To /
//! References (a posting under its cover or first patch; a partial reroll
//! sent In-Reply-To the patch it replaces). Pure: mails in, revisions out.
//!
//! Near-linear in the mails, whatever they are: placing a mail looks its
//! candidates up by ghost parent, by author or by reroll base instead of
//! scanning every revision, and what depends on a revision's whole reroll
//! chain (its version, completeness, cover) is computed once per revision,
//! in order, without recursion ([`Thread::build`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::mail::Mail;
use super::subject::{self, SubjectTag};

mod anchor;
mod follow_up;
mod posting;
mod reroll;
mod siblings;
mod untagged_cover;

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
    /// `(fix)`, `fix: ...`: to squash into a patch, never to replace it
    /// (a numbered one its posting lacks is that patch: see [`posting`]).
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

/// Most mails one thread (one mbox, one lore thread) may hold: the
/// biggest patch threads on lore have a few thousand; a list archive given
/// as one mbox is not a thread. Over it, the source is refused.
pub const MAX_THREAD_MAILS: usize = 50_000;

/// Longest chain of partial rerolls (each `[PATCH vN k/n]` In-Reply-To the
/// k/n it replaces) a chosen revision may be completed through: real
/// series have a few; a longer one is refused.
pub const MAX_REROLL_DEPTH: usize = 1_000;

/// How many of an author's open postings a mail is tried against, newest
/// first, when it could join one of several: an unthreaded patch, a patch
/// In-Reply-To a cover that was never sent or a review. Real threads have a handful; a hostile one with thousands would
/// make every mail scan them all.
pub const MAX_OPEN_POSTINGS: usize = 64;

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
    /// The parent its patches share when it is no cover or patch: a ghost
    /// (an In-Reply-To not in the thread) or a review they were sent to.
    pub ghost: Option<String>,
    /// How many slots state each explicit version (None: none stated), so
    /// "all slots are of version v" is one look-up.
    pub explicit_versions: BTreeMap<Option<u32>, u32>,
    /// Sent In-Reply-To a patch of its author without saying it replaces
    /// it (see [`follow_up`]): kept apart from the series.
    pub follow_up: bool,
    /// The posting a reroll is completed from in the end (None for a
    /// posting): its rerolls form one chain (see [`Thread::reroll`]).
    pub chain_root: Option<usize>,
}

impl Revision {
    pub fn is_reroll(&self) -> bool {
        self.based_on.is_some()
    }

    /// Every slot states `version` (or none does, for None); true without slots.
    fn all_slots_of(&self, version: Option<u32>) -> bool {
        self.explicit_versions.keys().all(|v| *v == version)
    }

    /// Every counter 1..=total is taken: no further patch of this total
    /// can join (counters never exceed their total).
    pub(super) fn is_full(&self) -> bool {
        self.total > 0
            && self.slots.len() >= self.total as usize
            && self.slots.range(1..=self.total).count() == self.total as usize
    }
}

/// Where a new mail may go, looked up instead of scanned for.
#[derive(Clone, Debug, Default)]
struct Index {
    /// (ghost id, author address, total) -> the newest revision of
    /// patches replying to that ghost.
    ghosts: HashMap<(String, String, u32), usize>,
    /// Author address -> covers still without patches or ghost, in order.
    open_covers: HashMap<String, Vec<usize>>,
    /// Author address -> unthreaded postings (cover and first patch
    /// without In-Reply-To and References), in order.
    unthreaded: HashMap<String, Vec<usize>>,
    /// Posting -> the newest reroll of its chain.
    tips: HashMap<usize, usize>,
}

/// The newest entries of `list` (ascending) that are not `closed`, at most
/// [`MAX_OPEN_POSTINGS`], newest first; closed ones met on the way are
/// dropped from the list (a closed revision never opens again).
fn newest_open(list: &mut Vec<usize>, closed: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut open = Vec::new();
    let mut j = list.len();
    let mut dropped = false;
    while j > 0 && open.len() < MAX_OPEN_POSTINGS {
        j -= 1;
        if closed(list[j]) {
            dropped = true;
        } else {
            open.push(list[j]);
        }
    }
    if dropped {
        let tail: Vec<usize> = list.drain(j..).filter(|&r| !closed(r)).collect();
        list.extend(tail);
    }
    open
}

/// What depends on a revision's whole reroll chain, computed once per
/// revision after placement (see [`Thread::build`]).
#[derive(Clone, Debug, Default)]
struct Memo {
    /// The revision's number: the highest version of its patches and cover.
    version: Vec<u32>,
    /// The version of its own slots that state none.
    own_version: Vec<u32>,
    cover_of: Vec<Option<usize>>,
    rfc: Vec<bool>,
    /// Rerolls between the revision and the posting it is completed from.
    depth: Vec<usize>,
    /// Every counter 1..=total present once completed from its bases.
    complete: Vec<bool>,
    stray: Vec<bool>,
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
    index: Index,
    memo: Memo,
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
            index: Index::default(),
            memo: Memo::default(),
        };
        for (i, m) in mails.iter().enumerate() {
            if !m.message_id.is_empty() {
                // The first copy keeps the id; a same-id resend is still its own mail.
                t.by_id.entry(m.message_id.as_str()).or_insert(i);
            }
        }
        t.adopt_untagged_covers();
        for i in 0..mails.len() {
            match t.classes[i].kind {
                Kind::Cover => t.add_cover(i),
                Kind::Patch => t.place(i),
                _ => {}
            }
        }
        // Once every patch is placed: a fixlet may be its posting's k/n.
        for i in 0..mails.len() {
            if t.classes[i].kind == Kind::Fixlet {
                t.number_fixup(i);
            }
        }
        t.memoise();
        t
    }

    fn unthreaded(&self, m: usize) -> bool {
        self.mails[m].in_reply_to.is_none() && self.mails[m].references.is_empty()
    }

    fn tag(&self, i: usize) -> &SubjectTag {
        self.classes[i]
            .tag
            .as_ref()
            .expect("covers and patches are tagged")
    }

    /// The id mail `i` replies to: its In-Reply-To, else the last of its
    /// References (quilt and some mailers send only References).
    fn parent_id(&self, i: usize) -> Option<&'a str> {
        let m = &self.mails[i];
        m.in_reply_to
            .as_deref()
            .or(m.references.last().map(String::as_str))
    }

    fn parent(&self, i: usize) -> Option<usize> {
        let id = self.parent_id(i)?;
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
        if self.late_cover(i) {
            return;
        }
        let r = self.new_revision(i);
        let tag = self.tag(i).clone();
        let rev = &mut self.revisions[r];
        rev.cover = Some(i);
        rev.cover_version = tag.version;
        self.home.insert(i, r);
        let unthreaded = self.unthreaded(i);
        for a in self.revisions[r].author.clone() {
            if unthreaded {
                self.index.unthreaded.entry(a.clone()).or_default().push(r);
            }
            self.index.open_covers.entry(a).or_default().push(r);
        }
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
        *rev.explicit_versions.entry(tag.version).or_default() += 1;
        // Of two mails with the same counter, the later one wins.
        if let Some(old) = rev.slots.insert(tag.index(), slot) {
            if let Some(n) = rev.explicit_versions.get_mut(&old.explicit) {
                *n -= 1;
                if *n == 0 {
                    rev.explicit_versions.remove(&old.explicit);
                }
            }
            rev.replaced.push(old.mail);
        }
        self.home.insert(i, r);
    }

    /// Records that revision `r`'s patches reply to the ghost `g`.
    fn index_ghost(&mut self, r: usize, g: &str) {
        let total = self.revisions[r].total;
        for a in &self.revisions[r].author {
            let e = self
                .index
                .ghosts
                .entry((g.to_string(), a.clone(), total))
                .or_insert(r);
            *e = (*e).max(r);
        }
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
                    Kind::Cover if self.miscounted_cover(pr, i) => {
                        self.revisions[pr].total = tag.total();
                        return self.join(pr, i);
                    }
                    Kind::Patch if fits => {
                        if self.tag(p).index() != tag.index() {
                            if self.rerolls_sibling(pr, i) {
                                // `v2 2/2` In-Reply-To `v1 1/2`, whose 2/2 is there.
                                return self.reroll(pr, i);
                            }
                            // A chained posting: 2/3 In-Reply-To 1/3.
                            return self.join(pr, i);
                        }
                        if self.follows_up(p, i) {
                            let r = self.new_revision(i);
                            self.revisions[r].follow_up = true;
                            return self.join(r, i);
                        }
                        return self.reroll(pr, i);
                    }
                    Kind::Patch => {
                        if let Some(counter) = self.replaces_numbered(p, i) {
                            // A reroll of k/n under a new title, as k/n.
                            if let Some(t) = self.classes[i].tag.as_mut() {
                                t.counter = Some(counter);
                            }
                            return self.reroll(pr, i);
                        }
                    }
                    _ => {}
                }
            }
        }
        // In-Reply-To a review or other mail of the thread that is no
        // cover or patch: see [`anchor`].
        let anchored = self
            .parent(i)
            .filter(|p| !self.home.contains_key(p))
            .and_then(|_| self.parent_id(i).map(str::to_string));
        if let Some(a) = &anchored {
            if self.place_under_anchor(i, a) {
                return;
            }
        }
        let ghost = self
            .parent_id(i)
            .filter(|id| !self.by_id.contains_key(id))
            .map(str::to_string);
        if let Some(g) = &ghost {
            // Patches of a hand-written cover reply to a `cover.NNN.git` id
            // that was never sent: they share it.
            let shared = author
                .iter()
                .filter_map(|a| {
                    self.index
                        .ghosts
                        .get(&(g.clone(), a.clone(), tag.total()))
                        .copied()
                })
                .max();
            if let Some(r) = shared.filter(|&r| !self.another_patch(r, i)) {
                return self.join(r, i);
            }
            if let Some(r) = self.adopting_cover(i, g) {
                self.revisions[r].ghost = Some(g.clone());
                self.join(r, i);
                return self.index_ghost(r, g);
            }
        } else if self.unthreaded(i) {
            // Unthreaded mails (format-patch without --thread): the newest
            // unthreaded posting of the same author, total and version with
            // that counter still free.
            if let Some(r) = self.unthreaded_posting(&tag, &author) {
                return self.join(r, i);
            }
        }
        if let Some(r) = self.resent_into(i) {
            // Of two mails with the same counter and version, the later wins.
            return self.join(r, i);
        }
        let r = self.new_revision(i);
        let ghost = ghost.or(anchored);
        self.revisions[r].ghost = ghost.clone();
        self.join(r, i);
        match &ghost {
            Some(g) => self.index_ghost(r, g),
            None if self.unthreaded(i) => {
                for a in &author {
                    self.index.unthreaded.entry(a.clone()).or_default().push(r);
                }
            }
            None => {}
        }
    }

    /// The posting an unthreaded patch joins, among its author's newest
    /// open unthreaded ones (see [`MAX_OPEN_POSTINGS`]).
    fn unthreaded_posting(&mut self, tag: &SubjectTag, author: &[String]) -> Option<usize> {
        let (mails, revisions) = (self.mails, &self.revisions);
        let unthreaded =
            |m: usize| mails[m].in_reply_to.is_none() && mails[m].references.is_empty();
        // No unthreaded patch can join these again.
        let closed = |r: usize| {
            let rev = &revisions[r];
            rev.ghost.is_some()
                || rev.is_full()
                || rev
                    .slots
                    .values()
                    .next()
                    .is_some_and(|s| !unthreaded(s.mail))
        };
        let fits = |r: usize| {
            let rev = &revisions[r];
            same_author(&rev.author, author)
                && (rev.total == tag.total() || rev.total == 0)
                && !rev.slots.contains_key(&tag.index())
                && rev.all_slots_of(tag.version)
                && (tag.version.is_none()
                    || rev.cover_version.is_none_or(|v| Some(v) == tag.version))
        };
        author
            .iter()
            .filter_map(|a| {
                let list = self.index.unthreaded.get_mut(a)?;
                newest_open(list, closed).into_iter().find(|&r| fits(r))
            })
            .max()
    }

    /// The cover a ghost-parented patch belongs to: same author and total,
    /// still without patches, and replying where the patch's References say
    /// the ghost cover replied (else the newest such cover before it), among
    /// the author's newest open covers (see [`MAX_OPEN_POSTINGS`]).
    fn adopting_cover(&mut self, i: usize, ghost: &str) -> Option<usize> {
        let (mails, revisions) = (self.mails, &self.revisions);
        let tag = self.classes[i].tag.as_ref()?;
        let author = mails[i].author_addresses();
        let refs = &mails[i].references;
        let grandparent = refs
            .iter()
            .position(|r| r == ghost)
            .and_then(|p| p.checked_sub(1))
            .map(|p| refs[p].as_str());
        let closed = |r: usize| {
            let rev = &revisions[r];
            !rev.slots.is_empty() || rev.ghost.is_some()
        };
        let mut candidates: Vec<usize> = Vec::new();
        for a in &author {
            if let Some(list) = self.index.open_covers.get_mut(a) {
                candidates.extend(newest_open(list, closed).into_iter().filter(|&r| {
                    let rev = &revisions[r];
                    rev.cover.is_some_and(|c| c < i) && (rev.total == 0 || rev.total == tag.total())
                }));
            }
        }
        let replies_there = |r: &&usize| {
            let c = revisions[**r].cover.unwrap_or(0);
            grandparent.is_some() && mails[c].in_reply_to.as_deref() == grandparent
        };
        candidates
            .iter()
            .filter(replies_there)
            .max()
            .or(candidates.iter().max())
            .copied()
    }

    /// Version of a placed patch: its own tag's, else its posting's (the
    /// cover's, else the version of the revision a reroll is based on,
    /// else the highest any patch of the posting states), else 1.
    pub fn slot_version(&self, r: usize, slot: &Slot) -> u32 {
        slot.explicit.unwrap_or(self.memo.own_version[r])
    }

    /// The revisions a reroll is completed from, the revision itself first:
    /// `r`, its base, the base's base, ...
    pub fn chain(&self, r: usize) -> Vec<usize> {
        let mut chain = vec![r];
        while let Some(b) = self.revisions[*chain.last().expect("not empty")].based_on {
            chain.push(b);
        }
        chain
    }

    /// All patches of a revision, rerolls completed from their bases:
    /// counter -> (revision the patch comes from, slot).
    pub fn full_slots(&self, r: usize) -> BTreeMap<u32, (usize, Slot)> {
        let mut out = BTreeMap::new();
        for &c in self.chain(r).iter().rev() {
            for (k, s) in &self.revisions[c].slots {
                out.insert(*k, (c, s.clone()));
            }
        }
        out
    }

    /// The cover of a revision, a reroll's from its base.
    pub fn cover_of(&self, r: usize) -> Option<usize> {
        self.memo.cover_of[r]
    }

    /// The revision's number: the highest version of its patches and cover.
    pub fn revision_version(&self, r: usize) -> u32 {
        self.memo.version[r]
    }

    pub fn revision_rfc(&self, r: usize) -> bool {
        self.memo.rfc[r]
    }

    /// How many rerolls lie between `r` and the posting it is completed
    /// from (0 for a posting).
    pub fn depth(&self, r: usize) -> usize {
        self.memo.depth[r]
    }

    /// Every counter 1..=total is present once the revision is completed
    /// from its bases.
    pub fn is_complete(&self, r: usize) -> bool {
        self.memo.complete[r]
    }

    /// True when a tagged mail of a posting of `r`'s author would be a
    /// follow-up single patch: `[PATCH] title` (no counter, no version, no
    /// cover) sent after a multi-patch or versioned revision of the author.
    pub fn is_stray(&self, r: usize) -> bool {
        self.memo.stray[r]
    }

    /// Fills [`Memo`] once every mail is placed. A revision's base always
    /// comes before it (a reroll is made after what it replies to), so one
    /// pass in order settles cover, RFC and depth; versions and
    /// completeness walk the forest of rerolls depth first with an
    /// explicit stack, keeping the completed slots of the revision at hand
    /// in one map that is undone on the way back: each slot is inserted
    /// and removed once, whatever the depth.
    fn memoise(&mut self) {
        let n = self.revisions.len();
        let mut m = Memo {
            version: vec![1; n],
            own_version: vec![1; n],
            cover_of: vec![None; n],
            rfc: vec![false; n],
            depth: vec![0; n],
            complete: vec![false; n],
            stray: vec![false; n],
        };
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for (r, rev) in self.revisions.iter().enumerate() {
            match rev.based_on {
                Some(b) => {
                    debug_assert!(b < r, "a reroll comes after its base");
                    children[b].push(r);
                    m.cover_of[r] = rev.cover.or(m.cover_of[b]);
                    m.rfc[r] = rev.rfc || m.rfc[b];
                    m.depth[r] = m.depth[b] + 1;
                }
                None => {
                    roots.push(r);
                    m.cover_of[r] = rev.cover;
                    m.rfc[r] = rev.rfc;
                }
            }
        }
        enum Step {
            /// Enter a revision; its parent's total and present count.
            Enter(usize, u32, usize),
            /// Undo a revision's slots: (counter, version it replaced).
            Leave(Vec<(u32, Option<u32>)>),
        }
        // Counter -> version of the slot there, for the revision at hand.
        let mut full: BTreeMap<u32, u32> = BTreeMap::new();
        // The versions in `full`, counted: the highest is the last key.
        let mut versions: BTreeMap<u32, usize> = BTreeMap::new();
        fn count(versions: &mut BTreeMap<u32, usize>, v: u32, add: bool) {
            let n = versions.entry(v).or_default();
            if add {
                *n += 1;
            } else {
                *n -= 1;
                if *n == 0 {
                    versions.remove(&v);
                }
            }
        }
        let mut stack: Vec<Step> = roots.iter().rev().map(|&r| Step::Enter(r, 0, 0)).collect();
        while let Some(step) = stack.pop() {
            match step {
                Step::Enter(r, parent_total, parent_present) => {
                    let rev = &self.revisions[r];
                    let own = rev
                        .cover_version
                        .or(rev.based_on.map(|b| m.version[b]))
                        .unwrap_or_else(|| {
                            rev.explicit_versions
                                .keys()
                                .flatten()
                                .max()
                                .copied()
                                .unwrap_or(1)
                        });
                    m.own_version[r] = own;
                    let total = rev.total.max(1);
                    let mut present = parent_present;
                    let mut undo = Vec::with_capacity(rev.slots.len());
                    for (&k, s) in &rev.slots {
                        let v = s.explicit.unwrap_or(own);
                        let old = full.insert(k, v);
                        match old {
                            Some(o) => count(&mut versions, o, false),
                            None if (1..=total).contains(&k) => present += 1,
                            None => {}
                        }
                        count(&mut versions, v, true);
                        undo.push((k, old));
                    }
                    if rev.based_on.is_none() || total != parent_total {
                        // Rerolls keep their base's total; this is for the odd one out.
                        present = full.range(1..=total).count();
                    }
                    let from_patches = versions.keys().next_back().copied();
                    let cover = m.cover_of[r].and_then(|c| self.tag(c).version);
                    m.version[r] = from_patches.max(cover).unwrap_or(1);
                    m.complete[r] = present == total as usize;
                    stack.push(Step::Leave(undo));
                    for &c in children[r].iter().rev() {
                        stack.push(Step::Enter(c, total, present));
                    }
                }
                Step::Leave(undo) => {
                    for (k, old) in undo.into_iter().rev() {
                        let v = match old {
                            Some(o) => {
                                count(&mut versions, o, true);
                                full.insert(k, o)
                            }
                            None => full.remove(&k),
                        };
                        if let Some(v) = v {
                            count(&mut versions, v, false);
                        }
                    }
                }
            }
        }
        // Strays: an unversioned single patch of an author who posted a
        // multi-patch or versioned revision before it; a versioned single
        // patch whose version is not above the author's newest multi-patch
        // one (`[PATCH v2] one patch` months after `[PATCH v7 0/10]` re-posts
        // a patch; a new revision of the series would be v8). Revisions are
        // made in mail order.
        let mut multi: HashSet<&str> = HashSet::new();
        let mut multi_version: HashMap<&str, u32> = HashMap::new();
        for (r, rev) in self.revisions.iter().enumerate() {
            let single = !rev.is_reroll() && rev.cover.is_none() && rev.total <= 1;
            let unversioned = rev.slots.values().all(|s| {
                s.explicit.is_none()
                    && self.classes[s.mail]
                        .tag
                        .as_ref()
                        .is_some_and(|t| t.counter.is_none())
            });
            let below_series = rev.slots.values().all(|s| s.explicit.is_some())
                && rev.author.iter().any(|a| {
                    multi_version
                        .get(a.as_str())
                        .is_some_and(|&v| m.version[r] <= v)
                });
            m.stray[r] = match rev.based_on {
                // A reroll of a follow-up is a follow-up.
                Some(b) => m.stray[b],
                None => {
                    rev.follow_up
                        || (single
                            && !rev.slots.is_empty()
                            && ((unversioned
                                && rev.author.iter().any(|a| multi.contains(a.as_str())))
                                || below_series))
                }
            };
            if (rev.total > 1 || m.version[r] > 1) && !rev.slots.is_empty() {
                multi.extend(rev.author.iter().map(String::as_str));
            }
            if rev.total > 1 && !rev.slots.is_empty() {
                for a in &rev.author {
                    let v = multi_version.entry(a.as_str()).or_default();
                    *v = (*v).max(m.version[r]);
                }
            }
        }
        self.memo = m;
    }

    pub fn same_author(&self, a: usize, b: usize) -> bool {
        same_author(&self.revisions[a].author, &self.revisions[b].author)
    }
}
