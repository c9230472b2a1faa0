//! The watcher's state file: which series were handled and how, how far
//! each patchwork source's events were read, and the entries that failed
//! (with their attempts, given up after [`MAX_ATTEMPTS`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{patchwork, WatchError, FAILURE_MEMORY, MAX_ATTEMPTS};
use crate::series::Series;

/// The on-disk memory of what was already handled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format: u32,
    /// Series hash -> what was done about it.
    pub series: BTreeMap<String, Handled>,
    /// Patchwork sources (`URL PROJECT`) -> how far their events were handled.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub patchwork: BTreeMap<String, patchwork::Cursor>,
    /// Entries that failed (`lore <message-id>`, `maildir <path>`,
    /// `patchwork <url> <project> <series>`): tried again on later passes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<String, Failure>,
}

/// An entry that could not be handled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub attempts: u32,
    /// The last attempt's error.
    pub error: String,
    /// When it was last tried.
    pub unix: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Handled {
    pub subject: String,
    pub message_id: String,
    pub version: u32,
    /// "dispatched to OWNER/REPO", "ran: exit 0", "skipped: ..."
    pub action: String,
    pub unix: u64,
    /// What names the series across its revisions ([`super::revision_key`]);
    /// absent in states written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_key: Option<String>,
    /// The newer revision that made this one stale: `vN <message-id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

impl Handled {
    /// What was done about `series` (named by `message_id`, its subject).
    pub fn new(series: &Series, subject: String, message_id: String, action: String) -> Handled {
        Handled {
            subject,
            message_id,
            version: series.version,
            action,
            unix: crate::post::github::now(),
            revision_key: Some(super::revision_key(series)),
            superseded_by: None,
        }
    }
}

impl State {
    pub fn load(path: &Path) -> Result<State, WatchError> {
        match std::fs::read(path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|source| WatchError::BadState {
                path: path.to_path_buf(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State {
                format: 1,
                ..Default::default()
            }),
            Err(source) => Err(WatchError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// True when `key` failed [`MAX_ATTEMPTS`] times: not tried again.
    pub fn given_up(&self, key: &str) -> bool {
        self.failed
            .get(key)
            .is_some_and(|f| f.attempts >= MAX_ATTEMPTS)
    }

    /// Records a failed attempt at `key` and logs it.
    pub fn record_failure(&mut self, key: &str, error: &(dyn std::error::Error + 'static)) {
        let error = crate::host::error_chain(error);
        let f = self.failed.entry(key.to_string()).or_insert(Failure {
            attempts: 0,
            error: String::new(),
            unix: 0,
        });
        f.attempts += 1;
        f.error = error;
        f.unix = crate::post::github::now();
        if f.attempts >= MAX_ATTEMPTS {
            tracing::warn!(entry = key, attempts = f.attempts, error = %f.error, "failed; given up (MAX_ATTEMPTS)");
        } else {
            tracing::warn!(entry = key, attempts = f.attempts, error = %f.error, "failed; tried again on a later pass");
        }
    }

    /// `key` was handled: its failures are forgotten.
    pub fn record_success(&mut self, key: &str) {
        self.failed.remove(key);
    }

    /// Forgets failures last tried more than [`FAILURE_MEMORY`] before `now`.
    pub fn forget_old_failures(&mut self, now: u64) {
        self.failed
            .retain(|_, f| f.unix.saturating_add(FAILURE_MEMORY.as_secs()) >= now);
    }

    /// A revision of the series `key` names newer than `version` that was
    /// handled already: an older one found later (a retry, a late thread,
    /// a feed listing newest first) is then not tested.
    pub fn newer_than(&self, key: &str, version: u32) -> Option<&Handled> {
        self.series
            .values()
            .filter(|h| h.revision_key.as_deref() == Some(key) && h.version > version)
            .max_by_key(|h| h.version)
    }

    /// Marks stale every handled older revision of the series `newer`
    /// handles (same [`super::revision_key`], a lower version, not marked yet):
    /// an earlier pass dispatched or ran it, and its results no longer
    /// speak for the series. One line per revision marked.
    pub fn supersede(&mut self, newer: &Handled) -> Vec<String> {
        let Some(key) = newer.revision_key.as_deref() else {
            return vec![];
        };
        let by = format!("v{} {}", newer.version, newer.message_id);
        let mut lines = vec![];
        for h in self.series.values_mut() {
            if h.revision_key.as_deref() == Some(key)
                && h.version < newer.version
                && h.superseded_by.is_none()
            {
                lines.push(format!(
                    "{}: stale, superseded by {by} (it was {})",
                    h.subject, h.action
                ));
                h.superseded_by = Some(by.clone());
            }
        }
        lines
    }

    pub fn save(&self, path: &Path) -> Result<(), WatchError> {
        let err = |source| WatchError::WriteState {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let text = serde_json::to_vec_pretty(self).expect("serializable");
        crate::host::fs::write_atomic(path, &text).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::revision_key;

    fn series(subject: &str, from: &str, version: u32) -> Series {
        let mails = crate::series::mails_from_mbox(
            format!(
                "From x Mon Sep 17 00:00:00 2001\nMessage-ID: <{version}@x>\nFrom: {from}\n\
                 Subject: {subject}\n\nmsg\n---\ndiff --git a/mm/x.c b/mm/x.c\n"
            )
            .as_bytes(),
        );
        crate::series::assemble(&mails, "t").unwrap()
    }

    #[test]
    fn revisions_of_one_series_share_a_key_and_others_do_not() {
        let a = "A <a@example.org>";
        let key = |s: &str, from: &str| revision_key(&series(s, from, 1));
        let v1 = key("[PATCH] mm: fix  the thing", a);
        for (subject, from, same) in [
            ("[PATCH v2] mm: fix the thing", a, true),
            (
                "[RFC PATCH v3] MM: Fix the thing",
                "Other Name <A@example.org>",
                true,
            ),
            ("[PATCH v2] mm: fix another thing", a, false),
            ("[PATCH v2] mm: fix the thing", "B <b@example.org>", false),
        ] {
            assert_eq!(key(subject, from) == v1, same, "{subject} / {from}");
        }
    }

    #[test]
    fn a_newer_revision_marks_the_handled_older_ones_stale_once() {
        let a = "A <a@example.org>";
        let mut state = State::default();
        for (hash, subject, version) in [
            ("h1", "[PATCH] mm: fix the thing", 1),
            ("h2", "[PATCH v2] mm: fix the thing", 2),
            ("o1", "[PATCH] mm: other", 1),
        ] {
            let s = series(subject, a, version);
            let h = Handled::new(
                &s,
                subject.into(),
                format!("{version}@x"),
                "ran: exit 0".into(),
            );
            state.series.insert(hash.into(), h);
        }
        let v3 = series("[PATCH v3] mm: fix the thing", a, 3);
        let h3 = Handled::new(&v3, "v3".into(), "3@x".into(), "ran: exit 1".into());
        let lines = state.supersede(&h3);
        assert_eq!(
            lines,
            [
                "[PATCH] mm: fix the thing: stale, superseded by v3 3@x (it was ran: exit 0)",
                "[PATCH v2] mm: fix the thing: stale, superseded by v3 3@x (it was ran: exit 0)",
            ]
        );
        assert_eq!(state.series["o1"].superseded_by, None);
        assert!(state.supersede(&h3).is_empty(), "marked once");
        // An entry written before keys were kept is never matched.
        state.series.get_mut("o1").unwrap().revision_key = None;
        let o2 = series("[PATCH v2] mm: other", a, 2);
        let h = Handled::new(&o2, "o2".into(), "o2@x".into(), "x".into());
        assert!(state.supersede(&h).is_empty());
    }
}
