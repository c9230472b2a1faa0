//! Patch series: read from an mbox (a file, a lore thread, a GitHub pull
//! request's patches) or a directory of `git format-patch` files; parsed with
//! mail-parser; the latest revision picked, ordered by n/M, checked for
//! completeness, and identified by a stable hash.

pub mod apply;
pub mod fetch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::MessageParser;
use sha2::{Digest, Sha256};

/// The bracketed prefix of a patch subject: `[RFC PATCH v2 3/5] title`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubjectTag {
    pub version: u32,
    pub index: u32,
    pub total: u32,
    pub rfc: bool,
    /// The subject without the prefix.
    pub title: String,
}

/// Parses a patch subject. None for replies and for mails that are not
/// patches (no PATCH or RFC tag).
pub fn parse_subject(subject: &str) -> Option<SubjectTag> {
    let subject = subject.trim();
    let lower = subject.to_ascii_lowercase();
    if lower.starts_with("re:") || lower.starts_with("aw:") || lower.starts_with("fwd:") {
        return None;
    }
    let mut rest = subject;
    let mut tokens = Vec::new();
    while let Some(after) = rest.strip_prefix('[') {
        let (inside, tail) = after.split_once(']')?;
        tokens.extend(inside.split_whitespace().map(str::to_string));
        rest = tail.trim_start();
    }
    let mut tag = SubjectTag {
        version: 1,
        index: 1,
        total: 1,
        rfc: false,
        title: rest.trim().to_string(),
    };
    let mut is_patch = false;
    for token in &tokens {
        let upper = token.to_ascii_uppercase();
        match upper.as_str() {
            "PATCH" => is_patch = true,
            "RFC" => {
                is_patch = true;
                tag.rfc = true;
            }
            _ => {}
        }
        if let Some(v) = upper.strip_prefix('V').and_then(|v| v.parse().ok()) {
            tag.version = v;
        }
        if let Some((n, m)) = token.split_once('/') {
            if let (Ok(n), Ok(m)) = (n.parse(), m.parse()) {
                tag.index = n;
                tag.total = m;
            }
        }
    }
    is_patch.then_some(tag)
}

/// One mail of a thread, as far as series assembly cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mail {
    pub subject: String,
    pub message_id: String,
    pub from: String,
    pub date: String,
    /// Addresses of To and Cc, `Name <addr>` or bare: a reply on the thread goes to them.
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// The References chain (message-ids without <>), oldest first.
    pub references: Vec<String>,
    pub body: String,
    /// The whole message, headers included, as `git am` wants it.
    pub raw: Vec<u8>,
}

impl Mail {
    fn has_diff(&self) -> bool {
        self.body.contains("\ndiff --git ") || self.body.starts_with("diff --git ")
    }
}

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
    #[error("{source_name}: no patches in it (no mail whose subject starts with [PATCH ...] or [RFC ...] and that carries a diff)")]
    NoPatches { source_name: String },
    #[error("{source_name}: v{version} is incomplete: patch(es) {} of {total} missing", .missing.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))]
    Incomplete {
        source_name: String,
        version: u32,
        total: u32,
        missing: Vec<u32>,
    },
    #[error("{source_name}: v{version} patch {index}/{total} ({subject}) has no diff")]
    NoDiff {
        source_name: String,
        version: u32,
        index: u32,
        total: u32,
        subject: String,
    },
}

/// A patch of the series, in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Patch {
    pub index: u32,
    pub title: String,
    pub subject: String,
    pub message_id: String,
    pub from: String,
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
    /// Versions seen in the thread, oldest first.
    pub versions_seen: Vec<u32>,
    /// Stable identity of the patches' content (titles and bodies, in order).
    pub hash: String,
}

impl Series {
    /// The series without the patches' raw mails: what the manifest keeps
    /// (and reads back equal) for posting.
    pub fn metadata(&self) -> Series {
        let mut s = self.clone();
        for p in &mut s.patches {
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
/// mbox framing, so a re-send of the same patches hashes the same.
pub fn series_hash(patches: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    h.update(b"mmci-series-v1\0");
    for (title, body) in patches {
        h.update(title.trim().as_bytes());
        h.update(b"\0");
        for line in body.trim_end().lines() {
            h.update(line.trim_end().as_bytes());
            h.update(b"\n");
        }
        h.update(b"\0");
    }
    hex::encode(h.finalize())
}

/// Picks the latest complete revision out of the mails of a thread.
pub fn assemble(mails: &[Mail], source_name: &str) -> Result<Series, SeriesError> {
    let tagged: Vec<(SubjectTag, &Mail)> = mails
        .iter()
        .filter_map(|m| parse_subject(&m.subject).map(|t| (t, m)))
        .filter(|(t, m)| t.index == 0 || m.has_diff())
        .collect();
    let versions: Vec<u32> = {
        let mut v: Vec<u32> = tagged
            .iter()
            .filter(|(t, _)| t.index > 0)
            .map(|(t, _)| t.version)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let Some(&version) = versions.last() else {
        return Err(SeriesError::NoPatches {
            source_name: source_name.to_string(),
        });
    };
    let of_version: Vec<&(SubjectTag, &Mail)> = tagged
        .iter()
        .filter(|(t, _)| t.version == version)
        .collect();
    let total = of_version.iter().map(|(t, _)| t.total).max().unwrap_or(1);
    // Later mails win: a resend of the same n/M replaces the earlier one.
    let mut by_index: BTreeMap<u32, &(SubjectTag, &Mail)> = BTreeMap::new();
    for entry in &of_version {
        by_index.insert(entry.0.index, entry);
    }
    let missing: Vec<u32> = (1..=total).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() {
        return Err(SeriesError::Incomplete {
            source_name: source_name.to_string(),
            version,
            total,
            missing,
        });
    }
    let cover_mail = by_index.get(&0).map(|(_, m)| *m);
    let mut patches = Vec::new();
    for i in 1..=total {
        let (tag, mail) = by_index[&i];
        if !mail.has_diff() {
            return Err(SeriesError::NoDiff {
                source_name: source_name.to_string(),
                version,
                index: i,
                total,
                subject: mail.subject.clone(),
            });
        }
        patches.push(Patch {
            index: i,
            title: tag.title.clone(),
            subject: mail.subject.clone(),
            message_id: mail.message_id.clone(),
            from: mail.from.clone(),
            to: mail.to.clone(),
            cc: mail.cc.clone(),
            references: mail.references.clone(),
            raw: mail.raw.clone(),
        });
    }
    let trailer_sources: Vec<&Mail> = cover_mail
        .into_iter()
        .chain((1..=total).map(|i| by_index[&i].1))
        .collect();
    let base_commit = trailer_sources
        .iter()
        .find_map(|m| trailer_values(&m.body, "base-commit").next());
    let mut prerequisite_patch_ids: Vec<String> = trailer_sources
        .iter()
        .flat_map(|m| trailer_values(&m.body, "prerequisite-patch-id").collect::<Vec<_>>())
        .collect();
    prerequisite_patch_ids.dedup();
    let hash = series_hash(
        &(1..=total)
            .map(|i| (by_index[&i].0.title.clone(), by_index[&i].1.body.clone()))
            .collect::<Vec<_>>(),
    );
    Ok(Series {
        version,
        total,
        rfc: by_index[&1].0.rfc,
        cover: cover_mail.map(|m| Cover {
            subject: m.subject.clone(),
            message_id: m.message_id.clone(),
            from: m.from.clone(),
            to: m.to.clone(),
            cc: m.cc.clone(),
            references: m.references.clone(),
        }),
        patches,
        base_commit,
        prerequisite_patch_ids,
        versions_seen: versions,
        hash,
    })
}

/// Parses one RFC 5322 message.
pub fn parse_mail(raw: &[u8]) -> Option<Mail> {
    let msg = MessageParser::default().parse(raw)?;
    let from = msg
        .from()
        .and_then(|a| a.first())
        .map(addr_text)
        .unwrap_or_default();
    let addresses = |a: Option<&mail_parser::Address>| -> Vec<String> {
        a.map(|a| a.iter().map(addr_text).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    };
    let references = match msg.references() {
        mail_parser::HeaderValue::Text(t) => vec![t.to_string()],
        mail_parser::HeaderValue::TextList(l) => l.iter().map(|t| t.to_string()).collect(),
        _ => vec![],
    };
    Some(Mail {
        subject: msg.subject().unwrap_or_default().to_string(),
        message_id: msg.message_id().unwrap_or_default().to_string(),
        from,
        date: msg.date().map(|d| d.to_rfc3339()).unwrap_or_default(),
        to: addresses(msg.to()),
        cc: addresses(msg.cc()),
        references,
        body: msg.body_text(0).map(|b| b.into_owned()).unwrap_or_default(),
        raw: raw.to_vec(),
    })
}

/// `Name <addr>`, or the bare address.
fn addr_text(a: &mail_parser::Addr) -> String {
    match (a.name(), a.address()) {
        (Some(n), Some(e)) => format!("{n} <{e}>"),
        (None, Some(e)) => e.to_string(),
        (Some(n), None) => n.to_string(),
        (None, None) => String::new(),
    }
}

/// The mails of an mbox.
pub fn mails_from_mbox(bytes: &[u8]) -> Vec<Mail> {
    MessageIterator::new(bytes)
        .filter_map(|m| m.ok())
        .filter_map(|m| parse_mail(m.contents()))
        .collect()
}

/// Where a series comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeriesSource {
    Mbox(PathBuf),
    /// A directory of `git format-patch` files (*.patch, in name order).
    PatchDir(PathBuf),
    /// A thread on a public-inbox server (lore), by message-id.
    Lore {
        message_id: String,
        base_url: String,
    },
    /// A GitHub pull request's commits.
    GitHub {
        api: String,
        repo: String,
        number: u64,
        token: Option<String>,
    },
}

impl SeriesSource {
    /// A path: a directory is a format-patch directory, a file an mbox.
    pub fn from_path(path: &Path) -> SeriesSource {
        if path.is_dir() {
            SeriesSource::PatchDir(path.to_path_buf())
        } else {
            SeriesSource::Mbox(path.to_path_buf())
        }
    }

    pub fn name(&self) -> String {
        match self {
            SeriesSource::Mbox(p) | SeriesSource::PatchDir(p) => p.display().to_string(),
            SeriesSource::Lore { message_id, .. } => format!("<{message_id}>"),
            SeriesSource::GitHub { repo, number, .. } => format!("{repo}#{number}"),
        }
    }
}

/// Reads and assembles a series. Fetched threads are kept as
/// `<store>/<name>.mbox` (written only once complete) for the record.
pub async fn load(
    source: &SeriesSource,
    fetcher: &fetch::Fetcher,
    store: &Path,
) -> Result<Series, SeriesError> {
    let name = source.name();
    let io = |e| SeriesError::Io {
        source_name: name.clone(),
        source: e,
    };
    let keep = |file: String, bytes: &[u8]| -> Result<(), SeriesError> {
        std::fs::create_dir_all(store).map_err(io)?;
        crate::host::fs::write_atomic(&store.join(file), bytes).map_err(io)
    };
    let mails = match source {
        SeriesSource::Mbox(path) => mails_from_mbox(&std::fs::read(path).map_err(io)?),
        SeriesSource::PatchDir(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(io)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "patch"))
                .collect();
            files.sort();
            let mut mails = Vec::new();
            for f in files {
                mails.extend(mails_from_mbox(&std::fs::read(&f).map_err(io)?));
            }
            mails
        }
        SeriesSource::Lore {
            message_id,
            base_url,
        } => {
            let mbox = fetcher.lore_thread(base_url, message_id).await?;
            keep(
                format!("lore-{}.mbox", fetch::escape_message_id(message_id)),
                &mbox,
            )?;
            mails_from_mbox(&mbox)
        }
        SeriesSource::GitHub {
            api,
            repo,
            number,
            token,
        } => {
            let mbox = fetcher
                .github_pr(api, repo, *number, token.as_deref())
                .await?;
            keep(
                format!("github-{}-{number}.mbox", repo.replace('/', "-")),
                &mbox,
            )?;
            mails_from_mbox(&mbox)
        }
    };
    assemble(&mails, &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects() {
        let t = parse_subject("[PATCH v2 3/5] mm/vmscan: do a thing").unwrap();
        assert_eq!((t.version, t.index, t.total, t.rfc), (2, 3, 5, false));
        assert_eq!(t.title, "mm/vmscan: do a thing");
        let t = parse_subject("[RFC PATCH] mm: one patch").unwrap();
        assert_eq!((t.version, t.index, t.total, t.rfc), (1, 1, 1, true));
        let t = parse_subject("[PATCH mm-unstable v3 0/2] cover").unwrap();
        assert_eq!((t.version, t.index, t.total), (3, 0, 2));
        let t = parse_subject("[RFC] [PATCH v4 2/2] split brackets").unwrap();
        assert_eq!((t.version, t.index, t.rfc), (4, 2, true));
        assert_eq!(parse_subject("Re: [PATCH v2 1/2] mm: x"), None);
        assert_eq!(parse_subject("mm: not a patch"), None);
        assert_eq!(parse_subject("[GIT PULL] mm-stable"), None);
    }

    fn mail(subject: &str, id: &str, body: &str) -> Mail {
        Mail {
            subject: subject.into(),
            message_id: id.into(),
            from: "A U Thor <a@example.org>".into(),
            date: String::new(),
            to: vec![],
            cc: vec![],
            references: vec![],
            body: body.into(),
            raw: format!("Subject: {subject}\n\n{body}").into_bytes(),
        }
    }

    const DIFF: &str = "msg\n---\ndiff --git a/mm/vmscan.c b/mm/vmscan.c\n";

    #[test]
    fn latest_complete_revision_in_order_without_cover() {
        let mails = vec![
            mail("[PATCH 0/2] cover v1", "c1", "base-commit: aaaa\n"),
            mail("[PATCH 1/2] one", "p1", DIFF),
            mail("[PATCH 2/2] two", "p2", DIFF),
            mail("[PATCH v2 2/2] two, again", "q2", DIFF),
            mail(
                "[PATCH v2 0/2] cover v2",
                "c2",
                "text\nbase-commit: bbbb\nprerequisite-patch-id: 1111\n",
            ),
            mail("Re: [PATCH v2 1/2] one", "r1", "looks good"),
            mail("[PATCH v2 1/2] one, again", "q1", DIFF),
        ];
        let s = assemble(&mails, "thread").unwrap();
        assert_eq!((s.version, s.total), (2, 2));
        assert_eq!(s.versions_seen, [1, 2]);
        let ids: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
        assert_eq!(ids, ["q1", "q2"]);
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
            "t.mbox: v3 is incomplete: patch(es) 2, 4 of 4 missing"
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
        let b = assemble(
            &[mail("[PATCH v1 1/1] x", "id2", &format!("{DIFF}  "))],
            "b",
        )
        .unwrap();
        assert_eq!(a.hash, b.hash);
        let c = assemble(
            &[mail(
                "[PATCH] x",
                "id1",
                &DIFF.replace("vmscan", "compaction"),
            )],
            "c",
        )
        .unwrap();
        assert_ne!(a.hash, c.hash);
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

    #[test]
    fn bundled_series_parses() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
        let store = tempfile::tempdir().unwrap();
        let s = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(load(
                &SeriesSource::Mbox(path),
                &fetch::Fetcher::default(),
                store.path(),
            ))
            .unwrap();
        assert_eq!((s.version, s.total), (1, 2));
        assert_eq!(
            s.patches[0].title,
            "mm/vmscan: fix missing NR_ISOLATED counter update in MGLRU reclaim path"
        );
        assert_eq!(
            s.patches[1].title,
            "mm/vmscan: throttle MGLRU eviction when isolated folios pile up"
        );
        assert_eq!(
            s.cover.unwrap().subject,
            "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation"
        );
        assert_eq!(
            s.base_commit.as_deref(),
            Some("2a7be210a22a8655e73e347054808314e73be671")
        );
        assert!(s.patches[0].message_id.ends_with("@example.org"));
    }
}
