//! `mmci watch --patchwork URL --project NAME`: follows a patchwork
//! project's `series-completed` events (REST API 1.3, every page of
//! `/api/1.3/events/?category=series-completed&project=NAME&since=CURSOR`)
//! and acts on each new series touching the watched paths once, through
//! the same state file and content-hash deduplication as the other sources.
//!
//! The since-cursor lives in that state file, saved atomically together
//! with the series it let through: the date of the newest event handled and
//! the ids of the events at that date (patchwork's `since` is inclusive).
//! A restart asks again from the cursor, so it neither misses an event nor
//! acts on one twice. An event whose series cannot be fetched is recorded
//! in the state's failures (by series id) and fetched again on later
//! passes, up to [`super::MAX_ATTEMPTS`]; the cursor moves on past it.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{touches, Action, Found, Handled, State, WatchError, MAX_ENTRIES_PER_PASS};
use crate::series::patchwork::{self as pw, PatchworkError};

/// Where events come from.
#[derive(Clone, Debug)]
pub struct Source {
    /// The instance, checked (https://patchwork.kernel.org).
    pub url: String,
    pub project: String,
    /// The first cursor when the state has none (ISO 8601, UTC).
    pub since: String,
    pub limits: pw::Limits,
}

impl Source {
    /// The key of this source's cursor in the state file.
    pub fn key(&self) -> String {
        format!("{} {}", self.url, self.project)
    }
}

/// How far a source's events were handled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The date of the newest event handled, as patchwork wrote it.
    pub since: String,
    /// The ids of the handled events at that date.
    pub seen: Vec<u64>,
}

impl Cursor {
    fn done(&self, e: &Event) -> bool {
        match (pw::date_key(&e.date), pw::date_key(&self.since)) {
            (Some(d), Some(c)) => d < c || (d == c && self.seen.contains(&e.id)),
            _ => self.seen.contains(&e.id),
        }
    }

    fn advance(&mut self, e: &Event) {
        if pw::date_key(&e.date) == pw::date_key(&self.since) {
            if !self.seen.contains(&e.id) {
                self.seen.push(e.id);
            }
        } else {
            self.since = e.date.clone();
            self.seen = vec![e.id];
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct Event {
    pub id: u64,
    pub category: String,
    pub date: String,
    pub payload: Payload,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Payload {
    #[serde(default)]
    pub series: Option<pw::Embedded>,
}

/// The events list, oldest first.
pub fn events_url(base: &str, project: &str, since: &str) -> String {
    let mut u = reqwest::Url::parse(&pw::api_url(base, "events/")).expect("checked base URL");
    u.query_pairs_mut()
        .append_pair("category", "series-completed")
        .append_pair("project", project)
        // A cursor written by an older mmci may carry a zone.
        .append_pair(
            "since",
            &pw::naive_utc(since).unwrap_or_else(|| since.to_string()),
        )
        .append_pair("order", "date");
    u.to_string()
}

/// The events not handled yet, oldest first, each once (a page boundary
/// that moved while paging can repeat one).
pub fn pending(mut events: Vec<Event>, cursor: &Cursor) -> Vec<Event> {
    events.retain(|e| e.category == "series-completed" && !cursor.done(e));
    events.sort_by_key(|e| (pw::date_key(&e.date), e.id));
    events.dedup_by_key(|e| e.id);
    events
}

/// The series among `events` that a newer revision in the same events
/// replaces: same name (patchwork names a series after its cover letter,
/// or its first patch, without the prefix), a higher version. Each maps
/// to the newest such revision. A v1 is not tested once its v2 completed.
pub fn stale(events: &[Event]) -> std::collections::BTreeMap<u64, u64> {
    let key = |s: &pw::Embedded| s.name.trim().to_lowercase();
    let mut out = std::collections::BTreeMap::new();
    for s in events.iter().filter_map(|e| e.payload.series.as_ref()) {
        let newer = events
            .iter()
            .filter_map(|e| e.payload.series.as_ref())
            .filter(|n| !s.name.trim().is_empty() && key(n) == key(s))
            .filter(|n| n.version.unwrap_or(1) > s.version.unwrap_or(1))
            .max_by_key(|n| (n.version, n.id));
        if let Some(n) = newer {
            out.insert(s.id, n.id);
        }
    }
    out
}

/// The body of the dispatch: the usual one, plus where to fetch the series.
pub fn dispatch_body(f: &Found, src: &Source, series: u64) -> serde_json::Value {
    let mut body = super::dispatch_body(f);
    body["client_payload"]["patchwork"] = serde_json::json!({
        "url": src.url,
        "project": src.project,
        "series": series,
    });
    body
}

/// The `mmci run` command line for a patchwork series.
pub fn run_command(
    mmci: &Path,
    src: &Source,
    series: u64,
    results: &Path,
    args: &[String],
) -> Vec<String> {
    let spec = crate::series::SeriesSpec::Patchwork {
        url: src.url.clone(),
        series,
    };
    super::child::run_command_for(mmci, &spec, results, args)
}

fn remote(e: PatchworkError) -> WatchError {
    WatchError::Patchwork(e)
}

/// One pass: every new series-completed event of the project whose series
/// touches `prefixes` and is not in the state gets the action. The state
/// (series and cursor) is saved after each event. Returns one line per
/// series acted on.
pub async fn pass(
    src: &Source,
    prefixes: &[String],
    action: &Action,
    state_path: &Path,
    dry_run: bool,
    run_timeout: Duration,
) -> Result<Vec<String>, WatchError> {
    let mut state = State::load(state_path)?;
    state.forget_old_failures(crate::post::github::now());
    let key = src.key();
    let mut cursor = state
        .patchwork
        .get(&key)
        .cloned()
        .unwrap_or_else(|| Cursor {
            since: src.since.clone(),
            seen: vec![],
        });
    let client = pw::Client::new(&src.url, None, src.limits.clone()).map_err(remote)?;
    let events: Vec<Event> = client
        .list(
            &format!("events of {}", src.project),
            &events_url(&src.url, &src.project, &cursor.since),
        )
        .await
        .map_err(remote)?;
    let mut lines = Vec::new();
    // Series that failed on earlier passes first, then the new events.
    let failed_prefix = failure_key(src, "");
    let retries: Vec<u64> = state
        .failed
        .iter()
        .filter(|(k, f)| k.starts_with(&failed_prefix) && f.attempts < super::MAX_ATTEMPTS)
        .filter_map(|(k, _)| k[failed_prefix.len()..].parse().ok())
        .collect();
    let pending = pending(events, &cursor);
    let stale = stale(&pending);
    for (n, (id, event)) in retries
        .into_iter()
        .map(|id| (Some(id), None))
        .chain(
            pending
                .iter()
                .map(|e| (e.payload.series.as_ref().map(|s| s.id), Some(e))),
        )
        .enumerate()
    {
        if n == MAX_ENTRIES_PER_PASS {
            // The cursor stays before the rest: the next pass takes them.
            tracing::warn!(
                limit = MAX_ENTRIES_PER_PASS,
                "more patchwork events than one pass handles (MAX_ENTRIES_PER_PASS); the rest wait for a later pass"
            );
            break;
        }
        match id {
            None => {
                tracing::warn!(
                    event = event.map(|e| e.id),
                    "series-completed event without a series"
                )
            }
            Some(id) if event.is_some() && stale.contains_key(&id) => {
                tracing::info!(
                    series = id,
                    newer = stale[&id],
                    "skipped: a newer revision of the series completed too (stale)"
                );
            }
            Some(id) => {
                let fkey = failure_key(src, &id.to_string());
                let outcome = match fetch(&client, id).await {
                    Ok(found) => {
                        state.record_success(&fkey);
                        match found {
                            Some(f) => {
                                act(f, src, id, prefixes, action, &state, dry_run, run_timeout)
                                    .await?
                            }
                            None => None,
                        }
                    }
                    Err(err) => {
                        state.record_failure(&fkey, &err);
                        None
                    }
                };
                if let Some((line, hash, handled)) = outcome {
                    lines.push(line);
                    // Revisions dispatched or run in earlier passes.
                    lines.extend(state.supersede(&handled));
                    state.series.insert(hash, handled);
                }
            }
        }
        // A dry run keeps its state in memory only, so that it too shows
        // each series once.
        if let Some(e) = event {
            cursor.advance(e);
        }
        state.patchwork.insert(key.clone(), cursor.clone());
        if !dry_run {
            state.save(state_path)?;
        }
    }
    Ok(lines)
}

/// The state's failure key of a series of this source.
fn failure_key(src: &Source, series: &str) -> String {
    format!("patchwork {} {series}", src.key())
}

/// The patch states that mean a series is settled: a maintainer took it,
/// turned it down or a newer revision replaced it (kernel-patches-daemon
/// and NIPA test none of them).
pub const SETTLED: &[&str] = &["accepted", "rejected", "superseded"];

/// A patch's state, as the patches list gives it.
#[derive(Clone, Debug, Deserialize)]
pub struct PatchState {
    pub id: u64,
    #[serde(default)]
    pub state: String,
}

/// The first settled patch of a series, if any: (patch id, state).
pub fn settled(patches: &[PatchState]) -> Option<(u64, String)> {
    patches
        .iter()
        .find(|p| SETTLED.contains(&p.state.as_str()))
        .map(|p| (p.id, p.state.clone()))
}

/// A series and its mails from patchwork: None when it does not assemble
/// (a completed series that does not will not get better by asking again:
/// said once, and skipped), or when one of its patches is settled
/// ([`SETTLED`]).
async fn fetch(client: &pw::Client, id: u64) -> Result<Option<Found>, PatchworkError> {
    let s = client.series(id).await?;
    let states: Vec<PatchState> = client
        .list(
            &format!("patches of series {id}"),
            &pw::api_url(client.base(), &format!("patches/?series={id}")),
        )
        .await?;
    if let Some((patch, state)) = settled(&states) {
        tracing::info!(series = id, patch, state = %state, "skipped: a patch of the series is settled");
        return Ok(None);
    }
    let mbox = client.series_mbox(&s).await?;
    let mails = crate::series::mails_from_mbox(&mbox);
    match crate::series::assemble(&mails, &format!("patchwork series {id}")) {
        Ok(series) => Ok(Some(Found { series, mails })),
        Err(err) => {
            tracing::warn!(series = id, error = %err, "skipped");
            Ok(None)
        }
    }
}

type Outcome = Option<(String, String, Handled)>;

/// Acts on one fetched series: None when there is nothing to do (seen
/// or not ours); else the line to print, the series hash and the entry for
/// the state.
#[allow(clippy::too_many_arguments)]
async fn act(
    f: Found,
    src: &Source,
    id: u64,
    prefixes: &[String],
    action: &Action,
    state: &State,
    dry_run: bool,
    run_timeout: Duration,
) -> Result<Outcome, WatchError> {
    let hash = f.series.hash.clone();
    if state.series.contains_key(&hash) {
        tracing::debug!(series = id, "already handled");
        return Ok(None);
    }
    if !touches(&f.series, prefixes) {
        tracing::debug!(series = id, subject = %f.subject(), "does not touch the watched paths");
        return Ok(None);
    }
    // A newer revision handled in an earlier pass: this one is not tested.
    let key = super::revision_key(&f.series);
    if let Some(newer) = state.newer_than(&key, f.series.version) {
        let by = format!("v{} {}", newer.version, newer.message_id);
        let what = format!("skipped: superseded by {by} (handled before)");
        let line = format!("{} (patchwork series {id}): {what}", f.subject());
        let mut h = Handled::new(&f.series, f.subject(), f.message_id(), what);
        h.superseded_by = Some(by);
        return Ok(Some((line, hash, h)));
    }
    let what = match action {
        Action::Dispatch { api, repo, auth } => {
            let body = dispatch_body(&f, src, id);
            match (auth, dry_run) {
                (Some(auth), false) => {
                    let client = crate::post::github::Client::connect(api, auth, repo).await?;
                    client.dispatch(repo, &body).await?;
                    format!("dispatched to {repo}")
                }
                _ => format!(
                    "# dry run: POST {}/repos/{repo}/dispatches\n{}",
                    api.trim_end_matches('/'),
                    serde_json::to_string_pretty(&body).expect("serializable")
                ),
            }
        }
        Action::Run {
            mmci,
            results,
            args,
        } => {
            let cmd = run_command(mmci, src, id, &results.join(&hash[..16]), args);
            if dry_run {
                format!("# dry run: {}", cmd.join(" "))
            } else {
                run(&cmd, run_timeout).await?
            }
        }
    };
    let handled = Handled::new(&f.series, f.subject(), f.message_id(), what.clone());
    let line = if dry_run {
        what
    } else {
        format!("{} (patchwork series {id}): {what}", f.subject())
    };
    Ok(Some((line, hash, handled)))
}

/// Runs `mmci run` in its own process group, bounded by `timeout`.
async fn run(cmd: &[String], timeout: Duration) -> Result<String, WatchError> {
    let spawn_err = |source| WatchError::Spawn {
        command: cmd.join(" "),
        source,
    };
    let mut c = tokio::process::Command::new(&cmd[0]);
    c.args(&cmd[1..]);
    super::without_secrets(&mut c);
    let mut child = crate::host::process::GroupChild::spawn(&mut c).map_err(spawn_err)?;
    let done = child
        .wait_timeout(timeout, Duration::from_secs(10))
        .await
        .map_err(spawn_err)?;
    Ok(if done.timed_out {
        format!("ran: killed after {} s", timeout.as_secs())
    } else {
        format!("ran: exit {}", done.status.code().unwrap_or(-1))
    })
}

/// The first cursor when none is given: a day ago, so that a first start
/// does not act on the project's whole history.
pub fn default_since(now_unix: u64) -> String {
    let (y, m, d, hh, mm, ss) = crate::post::email::civil(now_unix.saturating_sub(86_400));
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}")
}

/// A `--pw-since` value as patchwork's filter takes it: naive UTC
/// ([`pw::naive_utc`]; an offset or `Z` is converted away, since
/// patchwork answers a timezone-aware `since` with HTTP 500).
pub fn check_since(given: &str) -> Result<String, String> {
    pw::naive_utc(given).ok_or_else(|| {
        format!(
            "--pw-since {given}: expected an ISO 8601 time such as 2026-11-30T00:00:00Z, 2026-11-30T01:00:00+01:00 or 2026-11-30 (UTC without a zone)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: u64, date: &str) -> Event {
        Event {
            id,
            category: "series-completed".into(),
            date: date.into(),
            payload: Payload { series: None },
        }
    }

    #[test]
    fn cursor_keeps_order_and_skips_what_was_handled() {
        let mut c = Cursor {
            since: "2026-11-30T10:00:00".into(),
            seen: vec![],
        };
        let events = vec![
            ev(3, "2026-11-30T10:00:02"),
            ev(1, "2026-11-30T10:00:00"),
            ev(2, "2026-11-30T10:00:00.5"),
            ev(2, "2026-11-30T10:00:00.5"),
            ev(0, "2026-11-30T09:59:59"),
        ];
        let ids: Vec<u64> = pending(events.clone(), &c).iter().map(|e| e.id).collect();
        assert_eq!(ids, [1, 2, 3]);
        c.advance(&events[1]);
        c.advance(&events[2]);
        assert_eq!(
            (c.since.as_str(), c.seen.as_slice()),
            ("2026-11-30T10:00:00.5", &[2][..])
        );
        let ids: Vec<u64> = pending(events.clone(), &c).iter().map(|e| e.id).collect();
        assert_eq!(ids, [3]);
        // Another event at the cursor's date, seen later: still handled.
        let mut more = events;
        more.push(ev(4, "2026-11-30T10:00:00.5"));
        let ids: Vec<u64> = pending(more, &c).iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 3]);
    }

    #[test]
    fn older_revisions_completed_with_a_newer_one_are_stale() {
        let ev = |id: u64, name: &str, version: Option<u32>| Event {
            id: id + 100,
            category: "series-completed".into(),
            date: "2026-11-30T10:00:00".into(),
            payload: Payload {
                series: Some(pw::Embedded {
                    id,
                    msgid: String::new(),
                    name: name.into(),
                    mbox: None,
                    web_url: None,
                    version,
                }),
            },
        };
        let events = [
            ev(1, "mm: fix x", Some(1)),
            ev(2, "mm: other", Some(1)),
            ev(3, "mm: fix x", Some(2)),
            ev(4, "MM: Fix X ", Some(3)),
            ev(5, "mm: other", None),
            ev(6, "", Some(1)),
            ev(7, "", Some(2)),
        ];
        let got: Vec<(u64, u64)> = stale(&events).into_iter().collect();
        // v1 and v2 of "fix x" give way to v3; a missing version is v1;
        // nameless series are never matched.
        assert_eq!(got, [(1, 4), (3, 4)]);
    }

    #[test]
    fn settled_series_are_found_by_any_patch() {
        let ps = |states: &[&str]| -> Vec<PatchState> {
            states
                .iter()
                .enumerate()
                .map(|(i, s)| PatchState {
                    id: i as u64 + 1,
                    state: s.to_string(),
                })
                .collect()
        };
        /// The series' patch states, the settled patch expected.
        type Case<'a> = (&'a [&'a str], Option<(u64, &'a str)>);
        let cases: &[Case] = &[
            (&["new", "new"], None),
            (
                &[
                    "new",
                    "under-review",
                    "changes-requested",
                    "rfc",
                    "not-applicable",
                    "deferred",
                    "awaiting-upstream",
                ],
                None,
            ),
            (&["new", "superseded"], Some((2, "superseded"))),
            (&["accepted", "new"], Some((1, "accepted"))),
            (&["new", "rejected", "accepted"], Some((2, "rejected"))),
            (&[], None),
        ];
        for (states, want) in cases {
            assert_eq!(
                settled(&ps(states)),
                want.map(|(i, s)| (i, s.to_string())),
                "{states:?}"
            );
        }
    }

    #[test]
    fn urls_and_since() {
        assert_eq!(
            events_url("https://pw.example.org", "linux-mm", "2026-11-30T10:00:00"),
            "https://pw.example.org/api/1.3/events/?category=series-completed&project=linux-mm&since=2026-11-30T10%3A00%3A00&order=date"
        );
        assert_eq!(default_since(86_400 + 61), "1970-01-01T00:01:01");
        assert_eq!(
            events_url("https://p", "mm", "2020-01-01T00:00:00+01:00"),
            "https://p/api/1.3/events/?category=series-completed&project=mm&since=2019-12-31T23%3A00%3A00&order=date"
        );
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("2026-11-30T00:00:00", Ok("2026-11-30T00:00:00")),
            ("2020-01-01T00:00:00Z", Ok("2020-01-01T00:00:00")),
            ("2026-11-30T01:00:00+01:00", Ok("2026-11-30T00:00:00")),
            (
                "last week",
                Err("--pw-since last week: expected an ISO 8601 time"),
            ),
        ];
        for (given, want) in cases {
            match (check_since(given), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, *w, "{given}"),
                (Err(e), Err(w)) => assert!(e.starts_with(w), "{given}: {e}"),
                (got, _) => panic!("{given}: {got:?}"),
            }
        }
    }
}
