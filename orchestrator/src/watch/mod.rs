//! `mmci watch`: follows a mailing list for new patch series touching the
//! watched paths (mm/ by default) and acts on each once: runs mmci on it
//! here, or asks a GitHub repository to (a `repository_dispatch` that
//! series.yml answers).
//!
//! Sources: a public-inbox Atom feed (lore's `<list>/new.atom`; each new
//! patch mail's thread is then fetched as an mbox), a local mbox file, a
//! maildir, or a patchwork project's events ([`patchwork`]). Series are told apart by their content hash
//! ([`crate::series::series_hash`]), kept in a state file written after
//! each action, so a restart or a resend does not test a series twice,
//! while a new revision (other content) is tested.
//!
//! One entry that cannot be handled (a thread that 404s, is over the size
//! limit or corrupt; an unreadable maildir file; a patchwork series that
//! cannot be fetched) is logged, recorded in the state with its attempts and
//! tried again on later passes, up to [`MAX_ATTEMPTS`]; it never stops the
//! pass. A pass handles at most [`MAX_ENTRIES_PER_PASS`] entries.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::series::{self, fetch, Mail, Series};

/// How long one `mmci run` started by the watcher may take: a full matrix
/// with its kernel builds is hours on a small host; a day means it hangs.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// How many times an entry that fails is tried (one pass each) before it
/// is given up.
pub const MAX_ATTEMPTS: u32 = 5;

/// Most entries one pass fetches (feed entries' threads, patchwork
/// series): lore's new.atom holds a few dozen; a feed of 150,000 would
/// otherwise be 150,000 requests in one pass. Further feed entries are
/// logged and not fetched in that pass; further patchwork events wait for
/// the next one (the cursor stays before them).
pub const MAX_ENTRIES_PER_PASS: usize = 100;

/// How long a failure is remembered after its last attempt (the entry has
/// long left the feed by then).
pub const FAILURE_MEMORY: Duration = Duration::from_secs(30 * 24 * 60 * 60);

pub mod child;
pub mod patchwork;
pub mod state;

pub use child::{run_command, secret_vars, without_secrets};
pub use state::{Failure, Handled, State};

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("{path}: cannot read")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state file {path}: cannot write")]
    WriteState {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("state file {path} is not mmci watch state ({source}): move it away or choose another --state")]
    BadState {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Fetch(#[from] fetch::FetchError),
    #[error(transparent)]
    Series(#[from] series::SeriesError),
    #[error("{url}: not an Atom feed ({why})")]
    BadFeed { url: String, why: String },
    #[error(transparent)]
    GitHub(#[from] crate::post::github::GitHubError),
    #[error(transparent)]
    Patchwork(#[from] crate::series::patchwork::PatchworkError),
    #[error("running `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

impl WatchError {
    /// The list or GitHub could not be reached or refused (exit 9 for
    /// GitHub, 7 for the list); else bad input.
    pub fn is_remote(&self) -> bool {
        match self {
            WatchError::GitHub(e) => e.is_remote(),
            _ => false,
        }
    }
}

/// Where new mails come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A public-inbox Atom feed, e.g. https://lore.kernel.org/linux-mm/new.atom;
    /// threads are fetched from `lore_url`.
    Atom {
        url: String,
        lore_url: String,
    },
    Mbox(PathBuf),
    Maildir(PathBuf),
}

/// One entry of an Atom feed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedEntry {
    pub title: String,
    pub link: String,
    /// From the link: public-inbox links are `<base>/<list>/<msgid>/`.
    pub message_id: Option<String>,
}

/// Parses a public-inbox Atom feed.
pub fn parse_atom(xml: &str, url: &str) -> Result<Vec<FeedEntry>, WatchError> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut entries = Vec::new();
    let mut in_entry = false;
    let mut in_title = false;
    let mut title = String::new();
    let mut link = String::new();
    let mut saw_feed = false;
    let bad = |why: String| WatchError::BadFeed {
        url: url.to_string(),
        why,
    };
    loop {
        match reader.read_event().map_err(|e| bad(e.to_string()))? {
            Event::Start(e) => match e.local_name().as_ref() {
                b"feed" => saw_feed = true,
                b"entry" => {
                    in_entry = true;
                    title.clear();
                    link.clear();
                }
                b"title" if in_entry => in_title = true,
                b"link" if in_entry => link = href(&e),
                _ => {}
            },
            Event::Empty(e) if in_entry && e.local_name().as_ref() == b"link" => link = href(&e),
            Event::Text(t) if in_title => {
                title.push_str(&t.decode().map_err(|e| bad(e.to_string()))?);
            }
            Event::GeneralRef(r) if in_title => {
                // &amp; &lt; &gt; &quot; &apos; and numeric references.
                let name = r.decode().map_err(|e| bad(e.to_string()))?;
                let c = match name.as_ref() {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    n => n
                        .strip_prefix("#x")
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .or_else(|| n.strip_prefix('#').and_then(|d| d.parse().ok()))
                        .and_then(char::from_u32),
                };
                if let Some(c) = c {
                    title.push(c);
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                b"title" => in_title = false,
                b"entry" => {
                    in_entry = false;
                    let message_id = link
                        .trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .and_then(|id| fetch::normalize_message_id(id).ok());
                    entries.push(FeedEntry {
                        title: title.trim().to_string(),
                        link: link.clone(),
                        message_id,
                    });
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_feed {
        return Err(bad("no <feed> element".into()));
    }
    Ok(entries)
}

fn href(e: &quick_xml::events::BytesStart) -> String {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == b"href")
        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
        .unwrap_or_default()
}

/// The paths a series' diffs touch (`diff --git a/X b/X`).
pub fn touched_paths(series: &Series) -> Vec<String> {
    let mut paths = Vec::new();
    for p in &series.patches {
        let text = String::from_utf8_lossy(&p.raw);
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("diff --git a/") {
                if let Some((a, _)) = rest.split_once(" b/") {
                    if !paths.iter().any(|x| x == a) {
                        paths.push(a.to_string());
                    }
                }
            }
        }
    }
    paths
}

/// Does the series touch one of `prefixes` (e.g. `mm/`)?
pub fn touches(series: &Series, prefixes: &[String]) -> bool {
    touched_paths(series)
        .iter()
        .any(|p| prefixes.iter().any(|x| p.starts_with(x.as_str())))
}

/// Groups mails into threads: a mail belongs to the first message-id of
/// its References (the thread's root), or starts its own thread.
pub fn threads(mails: Vec<Mail>) -> Vec<Vec<Mail>> {
    let mut order: Vec<String> = Vec::new();
    let mut by_root: BTreeMap<String, Vec<Mail>> = BTreeMap::new();
    for m in mails {
        let root = m
            .references
            .first()
            .cloned()
            .unwrap_or_else(|| m.message_id.clone());
        if !by_root.contains_key(&root) {
            order.push(root.clone());
        }
        by_root.entry(root).or_default().push(m);
    }
    order
        .into_iter()
        .filter_map(|r| by_root.remove(&r))
        .collect()
}

/// The mails of a maildir (`cur/` and `new/`), in name order. Each file is
/// read by the bytes actually read, at most [`fetch::MAX_MBOX_BYTES`]; one
/// that cannot be read (a FIFO, a device, too large, no permission) is
/// recorded in `state` and skipped.
pub fn maildir_mails(dir: &Path, state: &mut State) -> Result<Vec<Mail>, WatchError> {
    let mut files = Vec::new();
    for sub in ["cur", "new"] {
        let d = dir.join(sub);
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(WatchError::Read { path: d, source }),
        };
        files.extend(rd.filter_map(|e| e.ok().map(|e| e.path())));
    }
    files.sort();
    let mut mails = Vec::new();
    for f in files {
        let key = format!("maildir {}", f.display());
        if state.given_up(&key) {
            continue;
        }
        match read_maildir_file(&f) {
            Ok(bytes) => {
                state.record_success(&key);
                mails.extend(series::parse_mail(&bytes));
            }
            Err(e) => state.record_failure(&key, &e),
        }
    }
    Ok(mails)
}

/// One maildir file: a regular file (a FIFO would block, a device never
/// end), read by the bytes actually read.
fn read_maildir_file(f: &Path) -> Result<Vec<u8>, WatchError> {
    use crate::host::fs::{read_capped, Accept};
    read_capped(f, fetch::MAX_MBOX_BYTES, "MAX_MBOX_BYTES", Accept::Regular).map_err(|source| {
        WatchError::Read {
            path: f.to_path_buf(),
            source,
        }
    })
}

/// A complete series found in the source, with its mails (to hand to
/// `mmci run --series`).
#[derive(Clone, Debug)]
pub struct Found {
    pub series: Series,
    pub mails: Vec<Mail>,
}

impl Found {
    /// The message-id to name the series by: the cover letter's, else the
    /// first patch's.
    pub fn message_id(&self) -> String {
        self.series
            .cover
            .as_ref()
            .map(|c| c.message_id.clone())
            .unwrap_or_else(|| self.series.patches[0].message_id.clone())
    }

    pub fn subject(&self) -> String {
        self.series
            .cover
            .as_ref()
            .map(|c| c.subject.clone())
            .unwrap_or_else(|| self.series.patches[0].subject.clone())
    }

    /// The series as an mbox.
    pub fn mbox(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for m in &self.mails {
            out.extend_from_slice(b"From mmci-watch Mon Sep 17 00:00:00 2001\n");
            for line in String::from_utf8_lossy(&m.raw).lines() {
                if line.trim_start_matches('>').starts_with("From ") {
                    out.push(b'>');
                }
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
            out.push(b'\n');
        }
        out
    }
}

/// The complete series in `mails` (one per thread; incomplete threads and
/// threads without patches are left for a later poll).
pub fn series_in(mails: Vec<Mail>) -> Vec<Found> {
    threads(mails)
        .into_iter()
        .filter_map(|t| {
            let s = series::assemble(&t, "thread").ok()?;
            Some(Found {
                series: s,
                mails: t,
            })
        })
        .collect()
}

/// Reads the source: the complete series in it now. Entries that fail
/// are recorded in `state` (see [`State::record_failure`]) and skipped.
pub async fn poll(
    source: &Source,
    fetcher: &fetch::Fetcher,
    state: &mut State,
) -> Result<Vec<Found>, WatchError> {
    match source {
        Source::Mbox(path) => {
            let bytes = series::read_mbox_file(path, &path.display().to_string())?;
            Ok(series_in(series::mails_from_mbox(&bytes)))
        }
        Source::Maildir(dir) => Ok(series_in(maildir_mails(dir, state)?)),
        Source::Atom { url, lore_url } => {
            let xml = fetcher.get_text(url).await?;
            let entries = parse_atom(&xml, url)?;
            let mut found: Vec<Found> = Vec::new();
            let mut hashes: HashSet<String> = HashSet::new();
            // Message-ids whose thread is at hand: the entries' own (a
            // thread need not hold the mail its entry names) and their
            // threads' mails.
            let mut fetched: HashSet<String> = HashSet::new();
            let mut fetches = 0;
            let mut waiting = 0;
            for e in entries {
                // Patch mails only; replies and discussion are not series.
                if series::parse_subject(&e.title).is_none() {
                    continue;
                }
                let Some(id) = e.message_id else { continue };
                let key = format!("lore {id}");
                if fetched.contains(&id) || state.given_up(&key) {
                    continue;
                }
                if fetches == MAX_ENTRIES_PER_PASS {
                    waiting += 1;
                    continue;
                }
                fetches += 1;
                fetched.insert(id.clone());
                let mbox = match fetcher.lore_thread(lore_url, &id).await {
                    Ok(mbox) => mbox,
                    Err(err) => {
                        state.record_failure(&key, &err);
                        continue;
                    }
                };
                state.record_success(&key);
                let mails = series::mails_from_mbox(&mbox);
                fetched.extend(mails.iter().map(|m| m.message_id.clone()));
                let sel = series::Selection {
                    requested: Some(id.clone()),
                    revision: None,
                };
                if let Ok(s) = series::assemble_with(&mails, &id, &sel) {
                    if hashes.insert(s.hash.clone()) {
                        found.push(Found { series: s, mails });
                    }
                }
            }
            if waiting > 0 {
                tracing::warn!(
                    %url,
                    waiting,
                    limit = MAX_ENTRIES_PER_PASS,
                    "more patch entries than one pass fetches (MAX_ENTRIES_PER_PASS); the rest are not fetched in this pass"
                );
            }
            Ok(found)
        }
    }
}

/// What to do with a new series.
#[derive(Clone, Debug)]
pub enum Action {
    /// `repository_dispatch` (event type `mmci-series`) to a repository.
    Dispatch {
        api: String,
        repo: crate::post::github::Repo,
        auth: Option<crate::post::github::Auth>,
    },
    /// `mmci run --series <mbox> --results <dir>/<hash>` here, with extra
    /// arguments.
    Run {
        mmci: PathBuf,
        results: PathBuf,
        args: Vec<String>,
    },
}

/// What names one series across its revisions, as a maintainer tells a
/// v2 from another series: the title without `[PATCH vN n/M]` (the cover
/// letter's, else the first patch's), lower-cased, and the author's
/// address (two authors' series of one title are two series).
pub fn revision_key(series: &Series) -> String {
    let title = series
        .cover
        .as_ref()
        .and_then(|c| series::parse_subject(&c.subject).map(|t| t.title))
        .or_else(|| series.patches.first().map(|p| p.title.clone()))
        .unwrap_or_default();
    let from = series
        .cover
        .as_ref()
        .map(|c| c.from.clone())
        .or_else(|| series.patches.first().map(|p| p.from.clone()))
        .unwrap_or_default();
    format!(
        "{} <{}>",
        title
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase(),
        series::mail::address_of(&from).to_lowercase()
    )
}

/// The body of the dispatch: what series.yml reads. `series_key` (a hash
/// of [`revision_key`]: the same for every revision of a series)
/// is series.yml's concurrency group, so a v2's run cancels its v1's run
/// still in progress.
pub fn dispatch_body(f: &Found) -> serde_json::Value {
    use sha2::Digest;
    let key = sha2::Sha256::digest(revision_key(&f.series).as_bytes());
    serde_json::json!({
        "event_type": "mmci-series",
        "client_payload": {
            "message_id": f.message_id(),
            "subject": f.subject(),
            "series_hash": f.series.hash,
            "series_key": format!("{key:x}")[..16].to_string(),
            "version": f.series.version,
        },
    })
}

/// One pass: every complete series in the source that touches `prefixes`
/// and is not in the state gets the action; the state is saved after each.
/// Returns one line per series acted on.
pub async fn pass(
    source: &Source,
    prefixes: &[String],
    action: &Action,
    state_path: &Path,
    dry_run: bool,
    fetcher: &fetch::Fetcher,
) -> Result<Vec<String>, WatchError> {
    let mut state = State::load(state_path)?;
    state.forget_old_failures(crate::post::github::now());
    let failures_before = state.failed.clone();
    let found = poll(source, fetcher, &mut state).await?;
    if state.failed != failures_before && !dry_run {
        state.save(state_path)?;
    }
    let mut lines = Vec::new();
    let store = state_path.with_extension("series");
    // The newest revision of each series in this pass: an older one is
    // not tested beside it, whatever order the source lists them in.
    let mut newest: BTreeMap<String, u32> = BTreeMap::new();
    for f in &found {
        let v = newest.entry(revision_key(&f.series)).or_default();
        *v = (*v).max(f.series.version);
    }
    for f in found {
        let hash = f.series.hash.clone();
        if state.series.contains_key(&hash) {
            continue;
        }
        if !touches(&f.series, prefixes) {
            tracing::debug!(subject = %f.subject(), "does not touch the watched paths");
            continue;
        }
        let key = revision_key(&f.series);
        if newest.get(&key).is_some_and(|v| *v > f.series.version) {
            tracing::info!(subject = %f.subject(), "skipped: a newer revision of the series is in this pass");
            continue;
        }
        if let Some(newer) = state.newer_than(&key, f.series.version) {
            // Said once: recorded as handled (skipped).
            let what = format!(
                "skipped: superseded by v{} {} (handled before)",
                newer.version, newer.message_id
            );
            lines.push(format!("{}: {what}", f.subject()));
            let mut h = Handled::new(&f.series, f.subject(), f.message_id(), what);
            h.superseded_by = Some(format!("v{} {}", newer.version, newer.message_id));
            state.series.insert(hash, h);
            if !dry_run {
                state.save(state_path)?;
            }
            continue;
        }
        let what = match action {
            Action::Dispatch { api, repo, auth } => {
                let body = dispatch_body(&f);
                match (auth, dry_run) {
                    (Some(auth), false) => {
                        let client = crate::post::github::Client::connect(api, auth, repo).await?;
                        client.dispatch(repo, &body).await?;
                        format!("dispatched to {repo}")
                    }
                    _ => {
                        lines.push(format!(
                            "# dry run: POST {}/repos/{repo}/dispatches\n{}",
                            api.trim_end_matches('/'),
                            serde_json::to_string_pretty(&body).expect("serializable")
                        ));
                        continue;
                    }
                }
            }
            Action::Run {
                mmci,
                results,
                args,
            } => {
                let mbox = store.join(format!("{}.mbox", &hash[..16]));
                let cmd = run_command(mmci, &mbox, &results.join(&hash[..16]), args);
                if dry_run {
                    lines.push(format!("# dry run: {}", cmd.join(" ")));
                    continue;
                }
                std::fs::create_dir_all(&store).map_err(|source| WatchError::WriteState {
                    path: store.clone(),
                    source,
                })?;
                crate::host::fs::write_atomic(&mbox, &f.mbox()).map_err(|source| {
                    WatchError::WriteState {
                        path: mbox.clone(),
                        source,
                    }
                })?;
                let spawn_err = |source| WatchError::Spawn {
                    command: cmd.join(" "),
                    source,
                };
                // Through the process module: its own group, a timeout,
                // killed on Ctrl-C and when this watcher dies.
                let mut run = tokio::process::Command::new(&cmd[0]);
                run.args(&cmd[1..]).stdin(std::process::Stdio::null());
                without_secrets(&mut run);
                let mut child =
                    crate::host::process::GroupChild::spawn(&mut run).map_err(spawn_err)?;
                let fin = child
                    .wait_timeout(RUN_TIMEOUT, Duration::from_secs(30))
                    .await
                    .map_err(spawn_err)?;
                if fin.timed_out {
                    format!(
                        "ran: killed after its timeout of {} h",
                        RUN_TIMEOUT.as_secs() / 3600
                    )
                } else {
                    format!("ran: exit {}", fin.status.code().unwrap_or(-1))
                }
            }
        };
        lines.push(format!("{}: {what}", f.subject()));
        let handled = Handled::new(&f.series, f.subject(), f.message_id(), what);
        lines.extend(state.supersede(&handled));
        state.series.insert(hash, handled);
        state.save(state_path)?;
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEED: &str = r#"<?xml version="1.0" encoding="us-ascii"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>linux-mm.kvack.org archive mirror</title><link rel="alternate" href="https://lore.kernel.org/linux-mm/"/><link rel="self" href="https://lore.kernel.org/linux-mm/new.atom"/><id>mailto:linux-mm@kvack.org</id><updated>2026-11-30T10:19:14Z</updated><entry><author><name>A U Thor</name><email>a@example.org</email></author><title>[PATCH v2 1/2] mm/vmscan: fix a &amp; b</title><updated>2026-11-30T10:19:14Z</updated><link href="https://lore.kernel.org/linux-mm/20261130.1-2-a%40example.org/"/><id>urn:uuid:0c6d8a9e-1</id><thr:in-reply-to xmlns:thr="http://purl.org/syndication/thread/1.0" ref="urn:uuid:x" href="https://lore.kernel.org/linux-mm/c/"/><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><pre>diff</pre></div></content></entry><entry><title>Re: [PATCH] mm: reply</title><link href="https://lore.kernel.org/linux-mm/reply@x.org/"/><id>urn:uuid:2</id></entry></feed>"#;

    #[test]
    fn atom_entries_and_message_ids() {
        let e = parse_atom(FEED, "feed").unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].title, "[PATCH v2 1/2] mm/vmscan: fix a & b");
        assert_eq!(
            e[0].message_id.as_deref(),
            Some("20261130.1-2-a@example.org")
        );
        assert_eq!(e[1].message_id.as_deref(), Some("reply@x.org"));
        assert!(matches!(
            parse_atom("<html>nope</html>", "u"),
            Err(WatchError::BadFeed { .. })
        ));
    }

    #[test]
    fn bundled_series_touches_mm_only() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
        let mails = series::mails_from_mbox(&std::fs::read(path).unwrap());
        let found = series_in(mails);
        assert_eq!(found.len(), 1);
        let paths = touched_paths(&found[0].series);
        assert!(paths.iter().any(|p| p == "mm/vmscan.c"), "{paths:?}");
        assert!(touches(&found[0].series, &["mm/".into()]));
        assert!(!touches(&found[0].series, &["drivers/".into()]));
        // Its mbox round-trips to the same series.
        let again = series_in(series::mails_from_mbox(&found[0].mbox()));
        assert_eq!(again[0].series.hash, found[0].series.hash);
    }
}
