//! Patch series: read from an mbox (a file, a lore thread, a GitHub pull
//! request's patches, a patchwork series) or a directory of `git format-patch`
//! files; the thread model ([`thread`]), revision choice ([`revision`]),
//! subjects ([`subject`]) and mail parsing ([`mail`]) assemble the series a
//! maintainer would apply, identified by a stable hash. Files are read with a
//! size limit counted in bytes actually read, gzip'd ones decompressed
//! ([`read_mbox_file`]).

pub mod base;
pub mod claims;
pub mod fetch;
mod load;
pub mod mail;
pub mod patchwork;
pub mod pick;
pub mod prerequisite;
pub mod revision;
pub mod show;
pub mod subject;
#[cfg(test)]
pub(crate) mod test_mail;
pub mod thread;

use std::path::PathBuf;

use sha2::{Digest, Sha256};

pub use load::{
    load, load_source, load_source_with, load_with, read_mbox_file, LoadOptions, SeriesSpec,
};
pub use mail::{mails_from_mbox, parse_mail, Mail};
pub use revision::{LeftOut, Reason};
pub use subject::{parse_subject, SubjectTag};

#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    #[error("{source_name}: cannot read")]
    Io {
        source_name: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Fetch(#[from] fetch::FetchError),
    #[error("{path}: {}; the limit for an mbox or patch file is {limit} bytes (MAX_MBOX_BYTES)", match .size { Some(n) => format!("{n} bytes"), None => format!("more than {limit} bytes") })]
    TooLarge {
        path: PathBuf,
        /// None when not a regular file (a pipe, a device: cut at the limit).
        size: Option<u64>,
        limit: u64,
    },
    #[error(transparent)]
    Patchwork(#[from] patchwork::PatchworkError),
    #[error(transparent)]
    Prerequisite(#[from] prerequisite::PrerequisiteError),
    #[error("{source_name}: no patches in it (no mail whose subject starts with [PATCH ...] or [RFC ...] and that carries a diff)")]
    NoPatches { source_name: String },
    #[error("{source_name}: v{version} is incomplete: patch(es) {} of {total} missing from the thread; {}", list(.missing), match .newest_complete { Some(v) => format!("the newest complete revision is v{v}: select it with --revision {v}"), None => "there is no complete older revision in it".to_string() })]
    Incomplete {
        source_name: String,
        version: u32,
        total: u32,
        missing: Vec<u32>,
        newest_complete: Option<u32>,
    },
    #[error("{source_name}: v{version} is completed through a chain of {depth} partial rerolls, each completed from the one before; the limit is {limit} (MAX_REROLL_DEPTH): refused")]
    TooDeep {
        source_name: String,
        version: u32,
        depth: usize,
        limit: usize,
    },
    #[error("{source_name}: more than {limit} mails in one thread, the limit (MAX_THREAD_MAILS): refused")]
    TooManyMails { source_name: String, limit: usize },
    #[error("{source_name}: --patches {pick}: {why}")]
    Pick {
        source_name: String,
        pick: String,
        why: String,
    },
    #[error("{source_name}: --revision {wanted}: no such revision in the thread (revisions: {})", .seen.iter().map(|v| format!("v{v}")).collect::<Vec<_>>().join(", "))]
    NoSuchRevision {
        source_name: String,
        wanted: u32,
        seen: Vec<u32>,
    },
}

/// `2, 3, 5`; after 20 numbers, how many more (a hostile `1/99999`
/// misses 99,998).
fn list(v: &[u32]) -> String {
    const SHOWN: usize = 20;
    let mut s = v
        .iter()
        .take(SHOWN)
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if v.len() > SHOWN {
        s.push_str(&format!(" and {} more", v.len() - SHOWN));
    }
    s
}

/// A patch of the series, in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Patch {
    pub index: u32,
    pub title: String,
    pub subject: String,
    pub message_id: String,
    pub from: String,
    /// The author git am records: the in-body From: when there is one.
    #[serde(default)]
    pub author: String,
    /// The version of the posting this patch comes from (a partial reroll
    /// mixes them).
    #[serde(default)]
    pub from_version: u32,
    /// To and Cc of the mail, for a reply when there is no cover letter.
    #[serde(default)]
    pub to: Vec<String>,
    #[serde(default)]
    pub cc: Vec<String>,
    #[serde(default)]
    pub references: Vec<String>,
    #[serde(skip)]
    pub raw: Vec<u8>,
}

impl Patch {
    /// Patch `index` of a series, from its mail: `title` is the subject
    /// without its [PATCH ...] tag, `from_version` the posting it was taken
    /// from (0 when it belongs to no revision, e.g. a prerequisite).
    pub fn from_mail(mail: &Mail, index: u32, title: String, from_version: u32) -> Patch {
        Patch {
            index,
            title,
            subject: mail.subject.clone(),
            message_id: mail.message_id.clone(),
            from: mail.from.clone(),
            author: mail.author().to_string(),
            from_version,
            to: mail.to.clone(),
            cc: mail.cc.clone(),
            references: mail.references.clone(),
            raw: mail.raw.clone(),
        }
    }
}

/// The cover letter: kept for the reply on the thread.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cover {
    pub subject: String,
    pub message_id: String,
    pub from: String,
    /// The lists and people the series was sent to.
    #[serde(default)]
    pub to: Vec<String>,
    #[serde(default)]
    pub cc: Vec<String>,
    /// The cover's own References (a v2 sent in reply to v1 has some).
    #[serde(default)]
    pub references: Vec<String>,
    /// The before/after tables of its text: the author's claims, which the
    /// analysis sets beside the measurement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<claims::ClaimTable>,
}

/// A complete revision of a series.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Series {
    pub version: u32,
    pub total: u32,
    pub rfc: bool,
    pub cover: Option<Cover>,
    pub patches: Vec<Patch>,
    /// `base-commit:` trailer (cover letter first, then the patches).
    pub base_commit: Option<String>,
    /// `prerequisite-patch-id:` trailers.
    pub prerequisite_patch_ids: Vec<String>,
    /// The patches those trailers name, found among the source's other
    /// mails or the given ones: applied first, in trailer order.
    #[serde(default)]
    pub prerequisites: Vec<Patch>,
    /// The trailers' patch-ids that were found nowhere.
    #[serde(default)]
    pub missing_prerequisites: Vec<String>,
    /// Versions seen in the thread, oldest first.
    pub versions_seen: Vec<u32>,
    /// Stable identity of the patches' content (titles and bodies, in order).
    pub hash: String,
    /// How the revision was chosen.
    #[serde(default)]
    pub chosen: String,
    /// Which mail each patch came from: `v3 1/3..3/3`, `v5 = v2 1/4 + ... + v5 4/4`.
    #[serde(default)]
    pub assembly: String,
    /// Every mail of the source not applied, with the reason.
    #[serde(default)]
    pub left_out: Vec<LeftOut>,
    /// The base it was applied on and why (set when a tree was at hand).
    #[serde(default)]
    pub base: Option<base::BaseChoice>,
}

impl Series {
    /// The series without the patches' raw mails: what the manifest keeps
    /// (and reads back equal) for posting.
    pub fn metadata(&self) -> Series {
        let mut s = self.clone();
        for p in s.patches.iter_mut().chain(&mut s.prerequisites) {
            p.raw = Vec::new();
        }
        s
    }

    /// A short name for messages and directories: "v2-1a2b3c4d".
    pub fn short_id(&self) -> String {
        format!("v{}-{}", self.version, &self.hash[..8])
    }
}

fn trailer_values<'a>(body: &'a str, key: &str) -> impl Iterator<Item = String> + 'a {
    let prefix = format!("{key}: ");
    body.lines().filter_map(move |l| {
        l.trim_end()
            .strip_prefix(&prefix)
            .map(|v| v.trim().to_string())
    })
}

/// Hash of the patches' content: independent of Message-IDs, dates and
/// mbox framing, so a re-send of the same patches hashes the same, and of
/// nothing else: build keys and `watch`'s "seen" set are this hash, so two
/// series that `git am` applies differently must never share it. Every
/// line is hashed as sent, trailing spaces included (make reads `\` and
/// `\  ` at a line's end differently); only what git am itself drops is
/// left out: the CR of a CRLF (git mailsplit strips it) and the blank lines
/// after the last one (mbox framing).
pub fn series_hash(patches: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    h.update(b"mmci-series-v2\0");
    for (title, body) in patches {
        h.update(title.trim().as_bytes());
        h.update(b"\0");
        for line in body.trim_end_matches(['\n', '\r']).split('\n') {
            h.update(line.strip_suffix('\r').unwrap_or(line).as_bytes());
            h.update(b"\n");
        }
        h.update(b"\0");
    }
    hex::encode(h.finalize())
}

/// Which revision to take out of a thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// The mail the thread was asked for (its series is the one assembled).
    pub requested: Option<String>,
    /// `--revision N`: this revision instead of the newest.
    pub revision: Option<u32>,
}

/// The newest complete revision of the first series in the mails.
pub fn assemble(mails: &[Mail], source_name: &str) -> Result<Series, SeriesError> {
    assemble_with(mails, source_name, &Selection::default())
}

/// Assembles the series `sel` asks for out of the mails of a thread.
pub fn assemble_with(
    mails: &[Mail],
    source_name: &str,
    sel: &Selection,
) -> Result<Series, SeriesError> {
    if mails.len() > thread::MAX_THREAD_MAILS {
        return Err(SeriesError::TooManyMails {
            source_name: source_name.to_string(),
            limit: thread::MAX_THREAD_MAILS,
        });
    }
    let t = thread::Thread::build(mails);
    let choice = revision::choose(&t, sel.requested.as_deref(), sel.revision).map_err(|r| {
        let source_name = source_name.to_string();
        match r {
            revision::Refusal::NoPatches => SeriesError::NoPatches { source_name },
            revision::Refusal::Incomplete {
                version,
                total,
                missing,
                newest_complete,
            } => SeriesError::Incomplete {
                source_name,
                version,
                total,
                missing,
                newest_complete,
            },
            revision::Refusal::NoSuchRevision { wanted, seen } => SeriesError::NoSuchRevision {
                source_name,
                wanted,
                seen,
            },
            revision::Refusal::TooDeep { version, depth } => SeriesError::TooDeep {
                source_name,
                version,
                depth,
                limit: thread::MAX_REROLL_DEPTH,
            },
        }
    })?;
    let r = choice.revision;
    let full = t.full_slots(r);
    let total = t.revisions[r].total.max(1);
    let cover_mail = t.cover_of(r).map(|c| &mails[c]);
    let patch_mails: Vec<&Mail> = full.values().map(|(_, s)| &mails[s.mail]).collect();
    let patches: Vec<Patch> = full
        .iter()
        .map(|(&index, (home, slot))| {
            let title = t.classes[slot.mail]
                .tag
                .as_ref()
                .map(|tag| tag.title.clone())
                .unwrap_or_default();
            Patch::from_mail(&mails[slot.mail], index, title, t.slot_version(*home, slot))
        })
        .collect();
    let trailer_sources: Vec<&Mail> = cover_mail.into_iter().chain(patch_mails).collect();
    let base_commit = trailer_sources
        .iter()
        .find_map(|m| trailer_values(&m.body, "base-commit").next());
    let mut prerequisite_patch_ids: Vec<String> = Vec::new();
    for m in &trailer_sources {
        for id in trailer_values(&m.body, "prerequisite-patch-id") {
            if !prerequisite_patch_ids.contains(&id) {
                prerequisite_patch_ids.push(id);
            }
        }
    }
    let hash = series_hash(
        &patches
            .iter()
            .zip(full.values())
            .map(|(p, (_, s))| (p.title.clone(), mails[s.mail].body.clone()))
            .collect::<Vec<_>>(),
    );
    let mut versions_seen: Vec<u32> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &f in &choice.family {
        let v = t.revision_version(f);
        if seen.insert(v) {
            versions_seen.push(v);
        }
    }
    Ok(Series {
        version: t.revision_version(r),
        total,
        rfc: t.revision_rfc(r),
        cover: cover_mail.map(|m| Cover {
            subject: m.subject.clone(),
            message_id: m.message_id.clone(),
            from: m.from.clone(),
            to: m.to.clone(),
            cc: m.cc.clone(),
            references: m.references.clone(),
            claims: claims::parse(&m.body),
        }),
        patches,
        base_commit,
        prerequisite_patch_ids,
        prerequisites: vec![],
        missing_prerequisites: vec![],
        versions_seen,
        hash,
        assembly: revision::assembly(&t, r),
        left_out: revision::left_out(&t, &choice),
        chosen: choice.how,
        base: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn mail(subject: &str, id: &str, body: &str) -> Mail {
        Mail {
            subject: subject.into(),
            message_id: id.into(),
            from: "A U Thor <a@example.org>".into(),
            body: body.into(),
            raw: format!("Subject: {subject}\n\n{body}").into_bytes(),
            ..Mail::default()
        }
    }

    const DIFF: &str = "msg\n---\ndiff --git a/mm/vmscan.c b/mm/vmscan.c\n";

    fn reply_to(mut m: Mail, parent: &str) -> Mail {
        m.in_reply_to = Some(parent.into());
        m.references = vec![parent.into()];
        m
    }

    fn by(mut m: Mail, from: &str) -> Mail {
        m.from = from.into();
        m
    }

    /// Threads in a line: (mails, selection, Ok(assembly) or Err(message)).
    #[test]
    fn thread_model_table() {
        let other = "O Ther <o@example.org>";
        type Case = (Vec<Mail>, Option<u32>, Result<&'static str, &'static str>);
        let cases: Vec<Case> = vec![
            // Cover's version inherited by unversioned patches.
            (
                vec![
                    mail("[PATCH v2 0/2] c", "c", ""),
                    reply_to(mail("[PATCH 1/2] a", "1", DIFF), "c"),
                    reply_to(mail("[PATCH 2/2] b", "2", DIFF), "c"),
                ],
                None,
                Ok("v2 1/2..2/2"),
            ),
            // A stray single and another author's series are left out.
            (
                vec![
                    mail("[PATCH 0/2] c", "c", ""),
                    reply_to(mail("[PATCH 1/2] a", "1", DIFF), "c"),
                    reply_to(mail("[PATCH 2/2] b", "2", DIFF), "c"),
                    reply_to(mail("[PATCH] stray", "s", DIFF), "1"),
                    by(reply_to(mail("[PATCH v3 0/1] o", "o", ""), "c"), other),
                    by(reply_to(mail("[PATCH v3 1/1] o", "o1", DIFF), "o"), other),
                ],
                None,
                Ok("v1 1/2..2/2"),
            ),
            // A fixlet with the patch's tag does not replace it.
            (
                vec![
                    mail("[PATCH 1/1] a", "1", DIFF),
                    reply_to(mail("[PATCH 1/1] a (fix)", "f", DIFF), "1"),
                    reply_to(mail("Re: [PATCH 1/1] a", "r", DIFF), "1"),
                ],
                None,
                Ok("v1 1/1"),
            ),
            // Partial reroll completed from what it replies to.
            (
                vec![
                    mail("[PATCH 0/3] c", "c", ""),
                    reply_to(mail("[PATCH 1/3] a", "1", DIFF), "c"),
                    reply_to(mail("[PATCH 2/3] b", "2", DIFF), "c"),
                    reply_to(mail("[PATCH 3/3] d", "3", DIFF), "c"),
                    reply_to(mail("[PATCH v2 2/3] b", "2b", DIFF), "2"),
                ],
                None,
                Ok("v2 = v1 1/3 + v2 2/3 + v1 3/3"),
            ),
            // --revision picks an older one.
            (
                vec![
                    mail("[PATCH 1/1] a", "1", DIFF),
                    reply_to(mail("[PATCH v2] a", "2", DIFF), "1"),
                ],
                Some(1),
                Ok("v1 1/1"),
            ),
            // Newest incomplete: refused, naming the newest complete one.
            (
                vec![
                    mail("[PATCH 1/1] a", "1", DIFF),
                    reply_to(mail("[PATCH v2 0/2] c", "c2", ""), "1"),
                    reply_to(mail("[PATCH v2 2/2] b", "22", DIFF), "c2"),
                ],
                None,
                Err("t: v2 is incomplete: patch(es) 1 of 2 missing from the thread; the newest complete revision is v1: select it with --revision 1"),
            ),
            (
                vec![mail("[PATCH 1/1] a", "1", DIFF)],
                Some(4),
                Err("t: --revision 4: no such revision in the thread (revisions: v1)"),
            ),
        ];
        for (i, (mails, revision, want)) in cases.into_iter().enumerate() {
            let sel = Selection {
                requested: None,
                revision,
            };
            let got = assemble_with(&mails, "t", &sel)
                .map(|s| s.assembly)
                .map_err(|e| e.to_string());
            match (&got, want) {
                (Ok(a), Ok(w)) => assert_eq!(a, w, "case {i}"),
                (Err(e), Err(w)) => assert_eq!(e, w, "case {i}"),
                _ => panic!("case {i}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn latest_complete_revision_in_order_without_cover() {
        // Unthreaded (format-patch without --thread): grouped by author,
        // total, version and order.
        let mails = vec![
            mail("[PATCH 0/2] cover v1", "c1", "base-commit: aaaa\n"),
            mail("[PATCH 1/2] one", "p1", DIFF),
            mail("[PATCH 2/2] two", "p2", DIFF),
            mail(
                "[PATCH v2 0/2] cover v2",
                "c2",
                "text\nbase-commit: bbbb\nprerequisite-patch-id: 1111\n",
            ),
            mail("[PATCH v2 2/2] two, again", "q2", DIFF),
            mail("Re: [PATCH v2 1/2] one", "r1", "looks good"),
            mail("[PATCH v2 1/2] one, again", "q1", DIFF),
        ];
        let s = assemble(&mails, "thread").unwrap();
        assert_eq!((s.version, s.total), (2, 2));
        assert_eq!(s.versions_seen, [1, 2]);
        let ids: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
        assert_eq!(ids, ["q1", "q2"]);
        let left: Vec<(&str, Reason)> = s
            .left_out
            .iter()
            .map(|l| (l.message_id.as_str(), l.reason))
            .collect();
        assert_eq!(
            left,
            [
                ("c1", Reason::OlderRevision),
                ("p1", Reason::OlderRevision),
                ("p2", Reason::OlderRevision),
                ("r1", Reason::Reply)
            ]
        );
        assert_eq!(s.cover.as_ref().unwrap().message_id, "c2");
        assert_eq!(s.base_commit.as_deref(), Some("bbbb"));
        assert_eq!(s.prerequisite_patch_ids, ["1111"]);
    }

    #[test]
    fn missing_patches_are_listed() {
        let mails = vec![
            mail("[PATCH v3 0/4] cover", "c", ""),
            mail("[PATCH v3 1/4] one", "1", DIFF),
            mail("[PATCH v3 3/4] three", "3", DIFF),
        ];
        let err = assemble(&mails, "t.mbox").unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.mbox: v3 is incomplete: patch(es) 2, 4 of 4 missing from the thread; there is no complete older revision in it"
        );
    }

    #[test]
    fn a_thread_without_patches_is_refused() {
        let mails = vec![
            mail("Re: [PATCH 1/1] x", "r", "comment"),
            mail("[PATCH] no diff", "n", "text only"),
        ];
        assert!(matches!(
            assemble(&mails, "t"),
            Err(SeriesError::NoPatches { .. })
        ));
    }

    #[test]
    fn hash_ignores_framing_but_not_content() {
        let a = assemble(&[mail("[PATCH] x", "id1", DIFF)], "a").unwrap();
        // Framing: the same build.
        for (subject, body) in [
            ("[PATCH v1 1/1] x", DIFF.to_string()),
            ("[PATCH] x", format!("{DIFF}\n\n")),
            ("[PATCH] x", DIFF.replace('\n', "\r\n")),
        ] {
            let b = assemble(&[mail(subject, "id2", &body)], "b").unwrap();
            assert_eq!(a.hash, b.hash, "{subject:?} {body:?}");
        }
        // Content, whitespace included: another build.
        for body in [
            DIFF.replace("vmscan", "compaction"),
            format!("{DIFF}  "),
            DIFF.replacen("\n", " \n", 1),
            DIFF.replacen("\n", "\t\n", 3),
        ] {
            let c = assemble(&[mail("[PATCH] x", "id1", &body)], "c").unwrap();
            assert_ne!(a.hash, c.hash, "{body:?}");
        }
    }

    /// The review's probe: a make continuation `\` against `\  ` at a line's
    /// end (make reads the second as no continuation at all) gave one hash.
    #[test]
    fn a_backslash_with_trailing_spaces_is_another_series() {
        let patch = |tail: &str| {
            format!(
                "Add b.o.\n---\ndiff --git a/mm/Makefile b/mm/Makefile\n--- a/mm/Makefile\n+++ b/mm/Makefile\n@@ -1 +1,2 @@\n-obj-y += a.o\n+obj-y += a.o \\{tail}\n+\tb.o\n"
            )
        };
        let one = assemble(&[mail("[PATCH] mm: b", "id1", &patch(""))], "1").unwrap();
        let two = assemble(&[mail("[PATCH] mm: b", "id1", &patch("  "))], "2").unwrap();
        assert_ne!(one.hash, two.hash);
    }

    #[test]
    fn first_bundled_patch_alone_is_a_complete_series() {
        // What `mmci bench build` builds as its patched variant.
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
        let mut mails = mails_from_mbox(&std::fs::read(path).unwrap());
        mails.retain(|m| m.subject.contains(" 1/2]"));
        for m in &mut mails {
            m.subject = m.subject.replace("[PATCH v1 1/2]", "[PATCH]");
        }
        let s = assemble(&mails, "patch 1").unwrap();
        assert_eq!((s.total, s.patches.len()), (1, 1));
    }

    #[test]
    fn metadata_round_trips_through_json() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
        let s = assemble(&mails_from_mbox(&std::fs::read(path).unwrap()), "b").unwrap();
        assert!(!s.patches[0].raw.is_empty());
        let m = s.metadata();
        let back: Series = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.cover.unwrap().cc.len(), 2);
    }

    /// `n` `[PATCH]` mails of `from`, each In-Reply-To the one before.
    fn chain(n: usize, from: &str, id: &str) -> Vec<Mail> {
        (0..n)
            .map(|i| {
                let m = by(mail("[PATCH] a", &format!("{id}{i}"), DIFF), from);
                if i == 0 {
                    m
                } else {
                    reply_to(m, &format!("{id}{}", i - 1))
                }
            })
            .collect()
    }

    /// A chain of rerolls as deep as allowed is assembled; one deeper is
    /// refused naming the limit (a 10,000-mail chain took minutes when
    /// every revision walked its whole chain, recursively).
    #[test]
    fn reroll_chains_up_to_the_limit() {
        let a = "A U Thor <a@example.org>";
        let ok = chain(thread::MAX_REROLL_DEPTH + 1, a, "c");
        let s = assemble(&ok, "t").unwrap();
        assert_eq!((s.version, s.patches.len()), (1, 1));
        assert_eq!(
            s.patches[0].message_id,
            format!("c{}", thread::MAX_REROLL_DEPTH)
        );
        assert_eq!(s.left_out.len(), thread::MAX_REROLL_DEPTH);
        assert!(s.left_out.iter().all(|l| l.reason == Reason::OlderRevision));
        let deep = chain(10_000, a, "c");
        let err = assemble(&deep, "t").unwrap_err().to_string();
        assert_eq!(
            err,
            "t: v1 is completed through a chain of 9999 partial rerolls, each completed from the one before; the limit is 1000 (MAX_REROLL_DEPTH): refused"
        );
        // Another author's chain in the thread is not the series asked for.
        let mut mixed = vec![mail("[PATCH v2 1/1] mine", "m", DIFF)];
        mixed.extend(chain(5_000, "O Ther <o@example.org>", "o"));
        let sel = Selection {
            requested: Some("m".into()),
            revision: None,
        };
        let s = assemble_with(&mixed, "t", &sel).unwrap();
        assert_eq!((s.version, s.patches[0].message_id.as_str()), (2, "m"));
        assert_eq!(s.left_out.len(), 5_000);
    }

    /// A versioned chain (v2 In-Reply-To v1, v3 In-Reply-To v2, ...):
    /// the newest version, every older one left out.
    #[test]
    fn versioned_reroll_chain() {
        let mails: Vec<Mail> = (1..=300)
            .map(|v| {
                let m = mail(&format!("[PATCH v{v}] a"), &format!("v{v}"), DIFF);
                if v == 1 {
                    m
                } else {
                    reply_to(m, &format!("v{}", v - 1))
                }
            })
            .collect();
        let s = assemble(&mails, "t").unwrap();
        assert_eq!((s.version, s.versions_seen.len()), (300, 300));
        assert_eq!(s.assembly, "v300 = v300 1/1");
        assert_eq!(s.left_out.len(), 299);
    }

    #[test]
    fn a_thread_over_the_mail_limit_is_refused() {
        let mails = vec![mail("[PATCH] a", "x", DIFF); thread::MAX_THREAD_MAILS + 1];
        assert_eq!(
            assemble(&mails, "t").unwrap_err().to_string(),
            "t: more than 50000 mails in one thread, the limit (MAX_THREAD_MAILS): refused"
        );
        assert!(assemble(&mails[..thread::MAX_THREAD_MAILS], "t").is_ok());
    }

    /// 20,000 unthreaded singles of one author, 20,000 unthreaded patches
    /// of distinct authors under one ghost cover: assembled by the same
    /// rules as ever (the newest single; an incomplete 1/2).
    #[test]
    fn many_unthreaded_mails() {
        let singles: Vec<Mail> = (0..20_000)
            .map(|i| mail("[PATCH] a", &format!("s{i}"), DIFF))
            .collect();
        let s = assemble(&singles, "t").unwrap();
        assert_eq!(s.patches[0].message_id, "s19999");
        assert_eq!(s.left_out.len(), 19_999);
        let wide: Vec<Mail> = (0..20_000)
            .map(|i| {
                let mut m = by(
                    mail("[PATCH 1/2] a", &format!("w{i}"), DIFF),
                    &format!("A{i} <a{i}@x>"),
                );
                m.in_reply_to = Some("ghost".into());
                m
            })
            .collect();
        assert!(matches!(
            assemble(&wide, "t"),
            Err(SeriesError::Incomplete { total: 2, .. })
        ));
    }
}
