//! A series' sources (an mbox or patch file, a directory of
//! `git format-patch` files, a lore thread, a GitHub pull request, a
//! patchwork series) and reading one into a [`Series`]: files read with a
//! size limit counted in bytes read, gzip'd ones decompressed, fetched
//! threads kept in the store.

use std::path::{Path, PathBuf};

use super::*;

/// gzip's magic bytes: a `t.mbox.gz` as lore serves it.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Reads an mbox or patch file of at most [`fetch::MAX_MBOX_BYTES`],
/// counted in bytes actually read; a gzip'd one (told by its first bytes,
/// not its name) is decompressed, to at most as many bytes. Only a regular
/// file (a symbolic link to one too) is read: a FIFO without a writer
/// blocked `series show` until killed, and a device never ends; either is
/// refused, naming the path, before a byte is read.
pub fn read_mbox_file(path: &Path, source_name: &str) -> Result<Vec<u8>, SeriesError> {
    use crate::host::fs::{read_capped, Accept};
    let limit = fetch::MAX_MBOX_BYTES;
    let bytes = read_capped(path, limit, "MAX_MBOX_BYTES", Accept::Regular).map_err(|source| {
        if source.kind() == std::io::ErrorKind::InvalidInput {
            // Not a regular file: named by its own path (a patch dir's
            // file too), with what to do.
            SeriesError::Io {
                source_name: path.display().to_string(),
                source: std::io::Error::new(
                    source.kind(),
                    format!("{source}: save the mbox or patch to a file first (a gzip'd one is read as it is)"),
                ),
            }
        } else if source.kind() == std::io::ErrorKind::FileTooLarge {
            SeriesError::TooLarge {
                path: path.to_path_buf(),
                size: std::fs::metadata(path)
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| m.len()),
                limit,
            }
        } else {
            SeriesError::Io {
                source_name: source_name.to_string(),
                source,
            }
        }
    })?;
    if bytes.starts_with(&GZIP_MAGIC) {
        return Ok(fetch::gunzip_limited(&bytes, &path.display().to_string())?);
    }
    Ok(bytes)
}

/// Where a series comes from: what `--series`, `--lore`, `--github-pr`
/// and `--patchwork`/`--pw-series` name on the command line (the cli's
/// `SeriesArgs`), and a matrix kernel's `series:`, `lore:`, `github_pr:` or
/// `patchwork:` (a plan's `Variant`, whose manifest form keeps those keys).
/// The GitHub token is never serialized.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SeriesSpec {
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
        #[serde(skip)]
        token: Option<String>,
    },
    /// A series on a patchwork instance, by its id (REST API 1.3).
    Patchwork {
        url: String,
        series: u64,
    },
}

impl SeriesSpec {
    /// A path: a directory is a format-patch directory, a file an mbox.
    pub fn from_path(path: &Path) -> SeriesSpec {
        if path.is_dir() {
            SeriesSpec::PatchDir(path.to_path_buf())
        } else {
            SeriesSpec::Mbox(path.to_path_buf())
        }
    }

    /// A pull request's OWNER/REPO#N as `--github-pr` and `github_pr:`
    /// spell it.
    pub fn pull_request(repo: &str, number: u64) -> String {
        format!("{repo}#{number}")
    }

    /// This source fetched from these servers: a lore thread from
    /// `lore_url`, a pull request through `github_api` with `token`; a path
    /// is a directory or a file as it is now.
    pub fn with_endpoints(
        &self,
        lore_url: &str,
        github_api: &str,
        github_token: Option<&str>,
    ) -> SeriesSpec {
        match self {
            SeriesSpec::Mbox(p) | SeriesSpec::PatchDir(p) => SeriesSpec::from_path(p),
            SeriesSpec::Lore { message_id, .. } => SeriesSpec::Lore {
                message_id: message_id.clone(),
                base_url: lore_url.to_string(),
            },
            SeriesSpec::GitHub { repo, number, .. } => SeriesSpec::GitHub {
                api: github_api.to_string(),
                repo: repo.clone(),
                number: *number,
                token: github_token.map(str::to_string),
            },
            SeriesSpec::Patchwork { .. } => self.clone(),
        }
    }

    /// The command-line options that name this source, with their values:
    /// `--series PATH`, `--lore ID`, `--github-pr OWNER/REPO#N` or
    /// `--patchwork URL --pw-series ID` (the endpoints left out).
    pub fn options(&self) -> Vec<(&'static str, String)> {
        match self {
            SeriesSpec::Mbox(p) | SeriesSpec::PatchDir(p) => {
                vec![("--series", p.to_string_lossy().into_owned())]
            }
            SeriesSpec::Lore { message_id, .. } => vec![("--lore", message_id.clone())],
            SeriesSpec::GitHub { repo, number, .. } => {
                vec![("--github-pr", SeriesSpec::pull_request(repo, *number))]
            }
            SeriesSpec::Patchwork { url, series } => vec![
                ("--patchwork", url.clone()),
                ("--pw-series", series.to_string()),
            ],
        }
    }

    pub fn name(&self) -> String {
        match self {
            SeriesSpec::Mbox(p) | SeriesSpec::PatchDir(p) => p.display().to_string(),
            SeriesSpec::Lore { message_id, .. } => format!("<{message_id}>"),
            SeriesSpec::GitHub { repo, number, .. } => format!("{repo}#{number}"),
            SeriesSpec::Patchwork { url, series } => format!("patchwork series {series} ({url})"),
        }
    }
}

/// What to take out of a source besides its newest complete revision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// `--revision N`.
    pub revision: Option<u32>,
    /// `--prerequisites MBOX`: mails that may hold the patches the series'
    /// `prerequisite-patch-id:` trailers name (besides the source's own).
    pub prerequisites: Vec<PathBuf>,
    /// `--patches 1-2`: only these patches of the revision.
    pub patches: Option<pick::PatchPick>,
}

/// Reads and assembles a series (the newest complete revision). Fetched
/// threads are kept as `<store>/<name>.mbox` (written only once complete)
/// for the record.
pub async fn load(
    source: &SeriesSpec,
    fetcher: &fetch::Fetcher,
    store: &Path,
) -> Result<Series, SeriesError> {
    load_with(source, &LoadOptions::default(), fetcher, store).await
}

/// [`load`], with `--revision N` and `--prerequisites`. A lore thread's
/// series is the one its requested message-id belongs to.
pub async fn load_with(
    source: &SeriesSpec,
    options: &LoadOptions,
    fetcher: &fetch::Fetcher,
    store: &Path,
) -> Result<Series, SeriesError> {
    Ok(load_source_with(source, options, fetcher, store).await?.0)
}

/// [`load`], with where the series came from on patchwork (its patch ids)
/// when that was the source.
pub async fn load_source(
    source: &SeriesSpec,
    fetcher: &fetch::Fetcher,
    store: &Path,
) -> Result<(Series, Option<patchwork::Origin>), SeriesError> {
    load_source_with(source, &LoadOptions::default(), fetcher, store).await
}

/// [`load_with`] and [`load_source`] in one: `--revision N`,
/// `--prerequisites`, and the patchwork origin when that was the source.
pub async fn load_source_with(
    source: &SeriesSpec,
    options: &LoadOptions,
    fetcher: &fetch::Fetcher,
    store: &Path,
) -> Result<(Series, Option<patchwork::Origin>), SeriesError> {
    let revision = options.revision;
    let mut origin = None;
    let name = source.name();
    let sel = Selection {
        requested: match source {
            SeriesSpec::Lore { message_id, .. } => Some(message_id.clone()),
            _ => None,
        },
        revision,
    };
    let io = |e| SeriesError::Io {
        source_name: name.clone(),
        source: e,
    };
    let keep = |file: String, bytes: &[u8]| -> Result<(), SeriesError> {
        std::fs::create_dir_all(store).map_err(io)?;
        crate::host::fs::write_atomic(&store.join(file), bytes).map_err(io)
    };
    // One more than a thread may hold is enough to refuse it.
    let thread_mails = |b: &[u8]| mail::mails_from_mbox_at_most(b, thread::MAX_THREAD_MAILS + 1);
    let mails = match source {
        SeriesSpec::Mbox(path) => thread_mails(&read_mbox_file(path, &name)?),
        SeriesSpec::PatchDir(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(io)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "patch"))
                .collect();
            files.sort();
            let mut mails = Vec::new();
            let mut bytes = 0;
            for f in files {
                let text = read_mbox_file(&f, &name)?;
                // The directory as a whole is held to the limit of one mbox.
                bytes += text.len() as u64;
                if bytes > fetch::MAX_MBOX_BYTES {
                    return Err(SeriesError::TooLarge {
                        path: dir.clone(),
                        size: None,
                        limit: fetch::MAX_MBOX_BYTES,
                    });
                }
                mails.extend(thread_mails(&text));
                if mails.len() > thread::MAX_THREAD_MAILS {
                    break;
                }
            }
            mails
        }
        SeriesSpec::Lore {
            message_id,
            base_url,
        } => {
            let mbox = fetcher.lore_thread(base_url, message_id).await?;
            keep(
                format!("lore-{}.mbox", fetch::escape_message_id(message_id)),
                &mbox,
            )?;
            thread_mails(&mbox)
        }
        SeriesSpec::GitHub {
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
            thread_mails(&mbox)
        }
        SeriesSpec::Patchwork { url, series } => {
            let limits = patchwork::Limits {
                attempts: fetcher.attempts,
                backoff: fetcher.backoff,
                timeout: fetcher.timeout,
                ..Default::default()
            };
            let (o, mbox) = patchwork::fetch_series(url, *series, limits).await?;
            keep(format!("patchwork-{series}.mbox"), &mbox)?;
            origin = Some(o);
            thread_mails(&mbox)
        }
    };
    let mut series = assemble_with(&mails, &name, &sel)?;
    if !series.prerequisite_patch_ids.is_empty() {
        let mut pool = mails;
        for p in &options.prerequisites {
            pool.extend(mail::mails_from_mbox_at_most(
                &read_mbox_file(p, &format!("--prerequisites {}", p.display()))?,
                thread::MAX_THREAD_MAILS,
            ));
        }
        let scratch = store.join(format!("patch-ids-{}", std::process::id()));
        let found = prerequisite::resolve(&mut series, &pool, &scratch).await;
        let _ = std::fs::remove_dir_all(&scratch);
        found?;
    }
    if let Some(p) = &options.patches {
        let whole = series;
        series = p.apply(&whole).map_err(|why| SeriesError::Pick {
            source_name: name.clone(),
            pick: p.to_string(),
            why,
        })?;
        // Patchwork checks go on the patches applied, not the others.
        if let Some(o) = &mut origin {
            if o.patches.len() == whole.patches.len() {
                let kept = whole
                    .patches
                    .iter()
                    .map(|w| series.patches.iter().any(|p| p.index == w.index));
                let mut keep = kept.collect::<Vec<_>>().into_iter();
                o.patches.retain(|_| keep.next().unwrap_or(false));
            }
        }
    }
    Ok((series, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

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
                &SeriesSpec::Mbox(path),
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

    #[test]
    fn oversized_mbox_file_is_refused_naming_the_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("huge.mbox");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(fetch::MAX_MBOX_BYTES + 1).unwrap();
        let err = load_file(&path, tmp.path()).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: 67108865 bytes; the limit for an mbox or patch file is 67108864 bytes (MAX_MBOX_BYTES)",
                path.display()
            )
        );
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn load_file(path: &Path, store: &Path) -> Result<Series, SeriesError> {
        block_on(load(
            &SeriesSpec::Mbox(path.to_path_buf()),
            &fetch::Fetcher::default(),
            store,
        ))
    }

    /// The prerequisite lookup on a thread where a reply quotes a patch
    /// with `>From 00..00ffffffff ...` before it (mboxrd quoting, undone
    /// when read): that line once made git patch-id start a "patch" whose
    /// made-up index crashed the lookup. The quoted diff is found in the
    /// reply it is in.
    #[test]
    fn forged_patch_start_in_a_reply_is_only_text() {
        let prereq_diff =
            "diff --git a/mm/y.c b/mm/y.c\n--- a/mm/y.c\n+++ b/mm/y.c\n@@ -1 +1 @@\n-a\n+b\n";
        let id = {
            use std::io::Write;
            let mut c = std::process::Command::new("git")
                .args(["patch-id", "--stable"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin
                .take()
                .unwrap()
                .write_all(prereq_diff.as_bytes())
                .unwrap();
            let out = c.wait_with_output().unwrap();
            String::from_utf8(out.stdout).unwrap()[..40].to_string()
        };
        let mbox = format!(
            "From x Mon Sep 17 00:00:00 2001\nMessage-ID: <p1@x>\nFrom: A <a@x>\nSubject: [PATCH] mm: x\n\nmsg\n\nprerequisite-patch-id: {id}\n---\ndiff --git a/mm/x.c b/mm/x.c\n--- a/mm/x.c\n+++ b/mm/x.c\n@@ -1 +1 @@\n-a\n+b\n\n\
             From x Mon Sep 17 00:00:00 2001\nMessage-ID: <r1@x>\nIn-Reply-To: <p1@x>\nFrom: B <b@x>\nSubject: Re: [PATCH] mm: x\n\nNeeds this:\n\n>From 00000000000000000000000000000000ffffffff Mon Sep 17 00:00:00 2001\n{prereq_diff}\n\
             From x Mon Sep 17 00:00:00 2001\nMessage-ID: <s1@x>\nIn-Reply-To: <p1@x>\nFrom: C <c@x>\nSubject: [PATCH 5.15] mm: z\n\ncommit 0123456789abcdef0123456789abcdef01234567 upstream.\n\nmsg\n---\n{}\n",
            prereq_diff.replace("+b", "+c")
        );
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("prereq.mbox");
        std::fs::write(&path, mbox).unwrap();
        let s = load_file(&path, tmp.path()).unwrap();
        assert_eq!(s.prerequisite_patch_ids, [id]);
        let found: Vec<&str> = s
            .prerequisites
            .iter()
            .map(|p| p.message_id.as_str())
            .collect();
        assert_eq!(found, ["r1@x"]);
        assert!(s.missing_prerequisites.is_empty());
    }

    /// Only regular files are read: /dev/zero (its size is 0 to metadata)
    /// and a FIFO, with a writer or without one (which blocked), are
    /// refused before a byte is read, naming the path, in an mbox or in a
    /// patch dir; a symbolic link to a regular file is read.
    #[test]
    fn devices_and_fifos_are_refused_naming_the_path() {
        use std::error::Error;
        let tmp = tempfile::tempdir().unwrap();
        let chain = |e: SeriesError| {
            let mut s = e.to_string();
            let mut cur: Option<&dyn Error> = e.source();
            while let Some(c) = cur {
                s.push_str(&format!(": {c}"));
                cur = c.source();
            }
            s
        };
        let refused = |path: &Path, kind: &str| {
            format!(
                "{}: cannot read: {kind}, not a regular file; refused: save the mbox or patch to a file first (a gzip'd one is read as it is)",
                path.display()
            )
        };
        let zero = Path::new("/dev/zero");
        assert_eq!(
            chain(load_file(zero, tmp.path()).unwrap_err()),
            refused(zero, "a character device")
        );
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads one NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            chain(load_file(&fifo, tmp.path()).unwrap_err()),
            refused(&fifo, "a FIFO")
        );
        let dir = tmp.path().join("patches");
        std::fs::create_dir(&dir).unwrap();
        let inner = dir.join("0001-x.patch");
        let c = std::ffi::CString::new(inner.to_str().unwrap()).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = block_on(load(
            &SeriesSpec::PatchDir(dir.clone()),
            &fetch::Fetcher::default(),
            tmp.path(),
        ))
        .unwrap_err();
        assert_eq!(chain(err), refused(&inner, "a FIFO"));
        let link = tmp.path().join("link.mbox");
        std::os::unix::fs::symlink(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox"),
            &link,
        )
        .unwrap();
        assert_eq!(load_file(&link, tmp.path()).unwrap().total, 2);
    }

    /// A gzip'd mbox (lore's t.mbox.gz) is read as the mbox inside it,
    /// whatever its name; a gzip bomb is refused at the mbox limit.
    #[test]
    fn gzipped_mbox_files_are_read() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let plain =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation.mbox");
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&std::fs::read(&plain).unwrap()).unwrap();
        let gz = tmp.path().join("thread");
        std::fs::write(&gz, z.finish().unwrap()).unwrap();
        let want = load_file(&plain, tmp.path()).unwrap();
        assert_eq!(load_file(&gz, tmp.path()).unwrap(), want);
        let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let mb = vec![0u8; 1 << 20];
        for _ in 0..=(fetch::MAX_MBOX_BYTES >> 20) {
            bomb.write_all(&mb).unwrap();
        }
        let bomb_path = tmp.path().join("bomb.mbox.gz");
        std::fs::write(&bomb_path, bomb.finish().unwrap()).unwrap();
        let err = load_file(&bomb_path, tmp.path()).unwrap_err().to_string();
        assert!(err.ends_with("the decompressed thread is larger than 67108864 bytes, the limit (MAX_MBOX_BYTES); refused"), "{err}");
    }
}
