//! The watcher's state file: which series were handled and how, how far
//! each patchwork source's events were read, and the entries that failed
//! (with their attempts, given up after [`MAX_ATTEMPTS`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{patchwork, WatchError, FAILURE_MEMORY, MAX_ATTEMPTS};

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
