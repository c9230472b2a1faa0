//! A patch without a counter or version (`[PATCH] title`, `[PATCH
//! iproute2-next] title`) sent In-Reply-To a patch of its author: a new
//! revision of that patch, or something else sent in its thread (a build
//! fix a robot asked for, the companion patch for another tree)? Only
//! what the mail says decides:
//!   - the same title (after the tag) as the patch it replies to: a
//!     reroll;
//!   - a changelog naming a higher version than the patch it replies to
//!     does (`v3: ...` then `v4: ...` under a new title, continuing the
//!     notes of a patch whose own say `v3:`): a reroll, under a new title;
//!   - anything else, a new title with nothing saying it replaces the
//!     patch: a follow-up, kept apart from the series.
//!
//! A patch that states a version in its tag is left to the version rules
//! (a `[PATCH v2] new title` In-Reply-To `[PATCH] old title` is its v2).
//! A reroll of a numbered patch `k/n` under a new title is read as that
//! `k/n` (its counter is the one it replaces).

use super::super::mail::Mail;
use super::super::subject::SubjectTag;
use super::{same_author, Kind, Thread};

/// How much of a body the changelog is looked for in: a patch's notes come
/// first and are short. [`replaces`] reads the old patch once for every
/// patch replying to it, so a thread of many replies to one huge mail must
/// not read all of it each time.
const NOTES_SCAN_BYTES: usize = 16 * 1024;

/// The versions a patch's notes name: `v4: ...`, `Changes in v3:`, `v2 ->
/// v3:` (the later), `Changes since v2:` (the next, 3), up to its diff (in
/// the first [`NOTES_SCAN_BYTES`] of the body).
pub(super) fn changelog_versions(body: &str) -> Vec<u32> {
    let mut end = body.len().min(NOTES_SCAN_BYTES);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let head = &body[..end];
    let notes = head.split("\ndiff --git ").next().unwrap_or(head);
    notes.lines().filter_map(changelog_line).collect()
}

/// The version one changelog line names, if it is one.
fn changelog_line(line: &str) -> Option<u32> {
    let l = line.trim().to_ascii_lowercase();
    let l = l.trim_start_matches(['-', '*', ' ']);
    let (l, since) = match l.strip_prefix("changes since ") {
        Some(rest) => (rest, true),
        None => (
            ["changes in ", "changes for ", "changes from ", "changes "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .unwrap_or(l),
            false,
        ),
    };
    let (first, rest) = version_prefix(l)?;
    let rest = rest.trim_start();
    let (v, rest) = match rest.strip_prefix("->").or_else(|| rest.strip_prefix("..")) {
        Some(to) => version_prefix(to.trim_start())?,
        None => (first, rest),
    };
    let rest = rest.trim_start();
    // `v3: text`, `Changes in v3`, `v2 -> v3:`; not `v3 of the series is ...`.
    if !(rest.is_empty() || rest.starts_with(':')) {
        return None;
    }
    Some(if since { v.saturating_add(1) } else { v })
}

/// `v12rest` -> (12, "rest").
fn version_prefix(s: &str) -> Option<(u32, &str)> {
    let digits = s.strip_prefix('v')?;
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 || end > 4 {
        return None;
    }
    Some((digits[..end].parse().ok()?, &digits[end..]))
}

fn same_title(a: &SubjectTag, b: &SubjectTag) -> bool {
    a.title.eq_ignore_ascii_case(&b.title)
}

/// Whether the unversioned patch `new` says it replaces `old` (a patch of
/// version `old_version`): the same title, or notes naming a higher
/// version than `old`'s notes and version do. False for a versioned `new`
/// (see the module comment).
pub(super) fn replaces(
    new: &Mail,
    new_tag: &SubjectTag,
    old: &Mail,
    old_tag: &SubjectTag,
    old_version: u32,
) -> bool {
    if new_tag.version.is_some() {
        return false;
    }
    if same_title(new_tag, old_tag) {
        return true;
    }
    let newest = |m: &Mail| changelog_versions(&m.body).into_iter().max();
    let old_newest = newest(old).unwrap_or(0).max(old_version);
    newest(new).is_some_and(|v| v > old_newest)
}

impl Thread<'_> {
    /// The version of placed patch `p`: its tag's, else its posting's
    /// cover's, else 1 (what is known while mails are still placed).
    fn placed_version(&self, p: usize) -> u32 {
        let cover = self
            .home
            .get(&p)
            .and_then(|&r| self.revisions[r].cover_version);
        self.tag(p).version.or(cover).unwrap_or(1)
    }

    /// Patch `i`, without counter or version, In-Reply-To a single patch
    /// `p` (no counter, or `1/1`) and not saying it replaces it: a
    /// follow-up.
    pub(super) fn follows_up(&self, p: usize, i: usize) -> bool {
        let (tag, old) = (self.tag(i), self.tag(p));
        tag.version.is_none()
            && tag.counter.is_none()
            && old.counter.is_none_or(|(_, n)| n <= 1)
            && !replaces(
                &self.mails[i],
                tag,
                &self.mails[p],
                old,
                self.placed_version(p),
            )
    }

    /// Patch `i`, without counter or version, In-Reply-To numbered patch
    /// `p` (`k/n`, n > 1) of its author and saying it replaces it: the
    /// counter it takes, `(k, n)`.
    pub(super) fn replaces_numbered(&self, p: usize, i: usize) -> Option<(u32, u32)> {
        if self.classes[p].kind != Kind::Patch {
            return None;
        }
        let (tag, old) = (self.tag(i), self.tag(p));
        let (k, n) = old.counter.filter(|&(k, n)| k >= 1 && n > 1)?;
        (tag.counter.is_none()
            && same_author(
                &self.mails[p].author_addresses(),
                &self.mails[i].author_addresses(),
            )
            && replaces(
                &self.mails[i],
                tag,
                &self.mails[p],
                old,
                self.placed_version(p),
            ))
        .then_some((k, n))
    }
}

#[cfg(test)]
mod tests {
    use super::{changelog_versions, replaces};
    use crate::series::subject::parse_subject;
    use crate::series::test_mail::{mail, DIFF};
    use crate::series::{assemble_with, Mail, Selection};

    const AUTHOR: &str = "A U Thor <a@example.org>";

    #[test]
    fn changelog_lines() {
        let cases: &[(&str, &[u32])] = &[
            ("v3: Use local consts\n\nv4: undefine\n---\n", &[3, 4]),
            ("msg\n---\nChanges in v3:\nsingle patch\n", &[3]),
            ("---\nChanges in v2\n- x\n", &[2]),
            ("---\nv1 -> v2: x\nv2->v3:\n", &[2, 3]),
            ("---\nChanges since v2:\n", &[3]),
            ("---\n* V5: rebased\n", &[5]),
            // Prose and tags are no changelog.
            ("v3 of the series is below\n", &[]),
            ("This fixes a build error (v6.17).\n", &[]),
            ("Link: https://lore.kernel.org/r/x-v2-1-y@z\n", &[]),
            // Lines after the diff starts are code.
            ("msg\n\ndiff --git a/x b/x\n+v9: label\n", &[]),
        ];
        for &(body, want) in cases {
            assert_eq!(changelog_versions(body), want, "{body:?}");
        }
        // Only the head of a body is read, cut on a character boundary.
        let padding = "é".repeat(super::NOTES_SCAN_BYTES / 2 + 1);
        let late = format!("v2: early\n{padding}\nv7: too far down\n");
        assert_eq!(changelog_versions(&late), [2]);
    }

    /// Real shapes (tools/thread-corpus: linux-kselftest/00657, 00982,
    /// linux-arch/00284): (new, old, old's version, replaces?).
    #[test]
    fn what_says_it_replaces() {
        let with_body = |s: &str, body: &str| Mail {
            body: format!("{body}{DIFF}"),
            ..mail(s, "x", AUTHOR, &[])
        };
        let cases: Vec<(Mail, Mail, u32, bool)> = vec![
            // A build fix sent In-Reply-To the patch that broke the build.
            (
                with_body("[PATCH] samples/vfs: add include path", "fix\n"),
                with_body("[PATCH v3] selftests: centralize", "---\nChanges in v3:\n"),
                3,
                false,
            ),
            // A companion patch for another tree.
            (
                with_body("[PATCH iproute2-next] bond: print master", ""),
                with_body("[PATCH net-next] bonding: show master index", ""),
                1,
                false,
            ),
            // The same patch, fixed, under its own title.
            (
                with_body("[PATCH] mm: x", ""),
                with_body("[PATCH] mm: X", ""),
                1,
                true,
            ),
            // A new title whose notes continue the old patch's (v3 -> v4).
            (
                with_body("[PATCH] vDSO: Redefine PAGE_SIZE", "---\nv3: a\n\nv4: b\n"),
                with_body("[PATCH 2/4] vDSO: Don't use PAGE_SIZE", "---\nv3: a\n"),
                1,
                true,
            ),
            // Notes naming no later version than the patch's own.
            (
                with_body("[PATCH] fix build", "---\nv2: typo\n"),
                with_body("[PATCH v5 2/3] mm: y", ""),
                5,
                false,
            ),
            // A stated version is for the version rules.
            (
                with_body("[PATCH v2] mm: x", ""),
                with_body("[PATCH] mm: x", ""),
                1,
                false,
            ),
        ];
        for (i, (new, old, v, want)) in cases.into_iter().enumerate() {
            let (nt, ot) = (parse_subject(&new.subject), parse_subject(&old.subject));
            let got = replaces(&new, &nt.unwrap(), &old, &ot.unwrap(), v);
            assert_eq!(got, want, "case {i}");
        }
    }

    /// Whole threads: (mails, requested, assembly, patches' ids).
    #[test]
    fn follow_ups_and_rerolls_under_a_new_title() {
        let p = |s: &str, id: &str, refs: &[&str]| mail(s, id, AUTHOR, refs);
        let noted = |s: &str, id: &str, refs: &[&str], notes: &str| Mail {
            body: format!("msg\n---\n{notes}{DIFF}"),
            ..mail(s, id, AUTHOR, refs)
        };
        let cases: Vec<(Vec<Mail>, &str, &str, Vec<&str>)> = vec![
            // v3 as one patch, then a build fix In-Reply-To it: v3.
            (
                vec![
                    p("[PATCH v2 0/2] c", "c2", &[]),
                    p("[PATCH v2 1/2] a", "a", &["c2"]),
                    p("[PATCH v2 2/2] b", "b", &["c2"]),
                    p("[PATCH v3] all in one", "v3", &["c2"]),
                    p("[PATCH] samples: fix the build", "fix", &["c2", "v3"]),
                ],
                "c2",
                "v3 1/1",
                vec!["v3"],
            ),
            // A companion patch for another tree, In-Reply-To the patch.
            (
                vec![
                    p("[PATCH net-next] bonding: show index", "k", &[]),
                    p("[PATCH iproute2-next] bond: print name", "u", &["k"]),
                ],
                "k",
                "v1 1/1",
                vec!["k"],
            ),
            // The same title sent again In-Reply-To the patch: its reroll.
            (
                vec![
                    p("[PATCH] mm: x", "x1", &[]),
                    p("[PATCH] mm: x", "x2", &["x1"]),
                ],
                "x1",
                "v1 = v1 1/1",
                vec!["x2"],
            ),
            // 2/4 rerolled under a new title, its notes continuing 2/4's.
            (
                vec![
                    p("[PATCH 0/4] c", "c", &[]),
                    p("[PATCH 1/4] a", "1", &["c"]),
                    noted("[PATCH 2/4] b", "2", &["c"], "v3: x\n"),
                    p("[PATCH 3/4] d", "3", &["c"]),
                    p("[PATCH 4/4] e", "4", &["c"]),
                    noted(
                        "[PATCH] b, another way",
                        "2b",
                        &["c", "2"],
                        "v3: x\nv4: y\n",
                    ),
                ],
                "c",
                "v1 = v1 1/4 + v1 2/4 + v1 3/4 + v1 4/4",
                vec!["1", "2b", "3", "4"],
            ),
            // A `1/1` is a single patch: a new title In-Reply-To it is a
            // follow-up too.
            (
                vec![
                    p("[PATCH 1/1] mm: x", "x", &[]),
                    p("[PATCH] mm: y, unrelated", "y", &["x"]),
                ],
                "x",
                "v1 1/1",
                vec!["x"],
            ),
            // ... without such notes, a follow-up: the posting as sent.
            (
                vec![
                    p("[PATCH 0/2] c", "c", &[]),
                    p("[PATCH 1/2] a", "1", &["c"]),
                    p("[PATCH 2/2] b", "2", &["c"]),
                    p("[PATCH] b: a fix", "f", &["c", "2"]),
                ],
                "c",
                "v1 1/2..2/2",
                vec!["1", "2"],
            ),
        ];
        for (i, (mails, req, want, ids)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: Some(req.into()),
                revision: None,
            };
            let s = assemble_with(&mails, "t", &sel).unwrap_or_else(|e| panic!("case {i}: {e}"));
            assert_eq!(s.assembly, want, "case {i}");
            let got: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
            assert_eq!(got, ids, "case {i}");
        }
    }
}
