//! Patchwork checks: one per patch of the tested series (`POST
//! /api/1.3/patches/{id}/checks/`), as netdev's NIPA and the BPF CI post
//! theirs, so that the result shows in patchwork's list view next to each
//! patch: a state (pending, success, warning, fail), a context naming the
//! CI (`mmci`, `mmci-NAME`), a link and a one-line description.
//!
//! The patches are those the manifest names (a series read with
//! `--patchwork URL --pw-series ID` keeps its patch ids); a series read
//! elsewhere is found on patchwork by each patch's message-id. The requests
//! are built by pure functions, so that the dry run prints exactly what
//! `--send` sends. The token is only handed to the client. `--send` first
//! reads each patch's newest check of each context ([`latest`]) and skips
//! a check that would say nothing new. With `--stages`, each stage of the
//! run has a check of its own besides the summary ([`stages`]).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::series::patchwork::{self as pw, PatchRef, PatchworkError, Request};
use crate::series::Series;

pub mod latest;
pub mod stages;

/// Environment variable holding the token (named in host/secrets, which
/// redacts it).
pub use crate::host::secrets::PATCHWORK_TOKEN_ENV as TOKEN_ENV;

#[derive(Debug, thiserror::Error)]
pub enum PatchworkPostError {
    #[error("--context {0}: patchwork wants letters, digits, `-` and `_` only (1 to 255 of them), and mmci's checks are named `mmci` or `mmci-NAME`")]
    BadContext(String),
    #[error("--target-url {0}: patchwork would refuse it ({1}); give the http(s) URL of the run, e.g. https://github.com/OWNER/REPO/actions/runs/ID")]
    BadTargetUrl(String, String),
    #[error("no patchwork token: set ${0} or give --patchwork-token-file FILE (or leave out --send for a dry run)")]
    NoToken(String),
    #[error(transparent)]
    TokenFile(#[from] super::TokenFileError),
    #[error("--results {0}: no kernel in it had a series applied, so it names no patches to put checks on: give the series with --pw-series ID")]
    NoSeries(PathBuf),
    #[error("--results {0}: the series was not read from patchwork: give --patchwork URL to find its patches by message-id")]
    NoInstance(PathBuf),
    #[error("patchwork {url}: no patch with message-id <{msgid}>{project} (is the series on this instance?)")]
    NotFound {
        url: String,
        msgid: String,
        project: String,
    },
    #[error("patchwork {url}: {count} patches have message-id <{msgid}>: give --project NAME")]
    Ambiguous {
        url: String,
        msgid: String,
        count: usize,
    },
    #[error("posted {done} of {total} checks ({posted}); the rest were not sent")]
    Partial {
        done: usize,
        total: usize,
        posted: String,
        #[source]
        source: Box<PatchworkError>,
    },
    #[error(transparent)]
    Api(#[from] PatchworkError),
}

impl PatchworkPostError {
    /// Patchwork refused or could not be reached (exit 9), as opposed to
    /// bad input (exit 2).
    pub fn is_remote(&self) -> bool {
        match self {
            PatchworkPostError::Api(e) => e.is_remote(),
            PatchworkPostError::Partial { source, .. } => source.is_remote(),
            PatchworkPostError::NotFound { .. } | PatchworkPostError::Ambiguous { .. } => true,
            _ => false,
        }
    }
}

/// A check's state, as patchwork names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckState {
    Pending,
    Success,
    Warning,
    Fail,
}

impl CheckState {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::Pending => "pending",
            CheckState::Success => "success",
            CheckState::Warning => "warning",
            CheckState::Fail => "fail",
        }
    }

    /// The state a verdict maps to.
    pub fn of_verdict(s: crate::analysis::Status) -> CheckState {
        match s {
            crate::analysis::Status::Pass => CheckState::Success,
            crate::analysis::Status::Fail => CheckState::Fail,
            crate::analysis::Status::Inconclusive | crate::analysis::Status::NoVerdict => {
                CheckState::Warning
            }
        }
    }
}

/// `mmci` or `mmci-NAME`, in patchwork's context alphabet.
pub fn check_context(context: &str) -> Result<(), PatchworkPostError> {
    let alphabet = context
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let ours = context == "mmci" || context.strip_prefix("mmci-").is_some_and(|n| !n.is_empty());
    if alphabet && ours && context.len() <= 255 {
        Ok(())
    } else {
        Err(PatchworkPostError::BadContext(context.to_string()))
    }
}

/// A link patchwork will take: an http(s) URL of at most 200 characters
/// whose host passes Django's URLValidator (patchwork's `target_url` is a
/// URLField: a real server answers anything else with 400): `localhost`,
/// an IP address, or a dotted name whose last label is letters (or an
/// `xn--` label). `https://ci/runs/1` parses as a URL, yet patchwork
/// refuses it, so it is refused here before anything is sent.
pub fn check_target_url(url: &str) -> Result<(), PatchworkPostError> {
    let bad = |why: &str| {
        Err(PatchworkPostError::BadTargetUrl(
            url.to_string(),
            why.to_string(),
        ))
    };
    if url.len() > 200 {
        return bad("longer than 200 characters, patchwork's limit");
    }
    if url.chars().any(char::is_whitespace) {
        return bad("it contains white space");
    }
    let Ok(u) = reqwest::Url::parse(url) else {
        return bad("not a URL");
    };
    if u.scheme() != "http" && u.scheme() != "https" {
        return bad("not http(s)");
    }
    let ip = |h: &str| {
        h.trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok()
    };
    match u.host_str() {
        Some(h) if ip(h) => Ok(()),
        Some(d) => {
            let d = d.trim_end_matches('.');
            let labels: Vec<&str> = d.split('.').collect();
            let label_ok = |l: &&str| {
                !l.is_empty()
                    && l.len() <= 63
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.chars().all(|c| c.is_alphanumeric() || c == '-')
            };
            let tld = labels.last().copied().unwrap_or("");
            let tld_ok = (tld.len() >= 2 && tld.chars().all(char::is_alphabetic))
                || (tld.starts_with("xn--") && tld.len() > 4);
            if d.eq_ignore_ascii_case("localhost") {
                Ok(())
            } else if labels.len() < 2 || !tld_ok {
                bad("its host is not a domain name with a top-level domain (nor localhost or an IP address)")
            } else if !labels.iter().all(label_ok) {
                bad("its host has a label patchwork refuses (letters, digits and inner hyphens only)")
            } else {
                Ok(())
            }
        }
        None => bad("no host"),
    }
}

/// What every check of this posting says.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub state: CheckState,
    pub context: String,
    pub target_url: Option<String>,
    pub description: String,
}

/// The body of `POST /api/1.3/patches/{id}/checks/` (CheckCreate).
pub fn check_body(c: &Check) -> Value {
    let mut body = json!({
        "state": c.state.as_str(),
        "context": c.context,
        "description": c.description,
    });
    if let Some(u) = &c.target_url {
        body["target_url"] = json!(u);
    }
    body
}

/// A check to post on every patch, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Posting {
    pub check: Check,
    /// Only over a pending check of its context: a stage the results say
    /// nothing of closes what `--start` opened, and posts nothing else.
    pub only_over_pending: bool,
}

impl Posting {
    /// Posted unless it says nothing new ([`latest::decide`]).
    pub fn of(check: Check) -> Posting {
        Posting {
            check,
            only_over_pending: false,
        }
    }
}

/// `mmci-apply` for context `mmci` and stage `apply`.
pub fn stage_context(context: &str, stage: &str) -> String {
    format!("{context}-{stage}")
}

/// Pending on each stage of `names` (`--start --stages`).
pub fn start_postings(context: &str, names: &[String], target_url: Option<&str>) -> Vec<Posting> {
    names
        .iter()
        .map(|n| {
            Posting::of(Check {
                state: CheckState::Pending,
                context: stage_context(context, n),
                target_url: target_url.map(str::to_string),
                description: default_description(CheckState::Pending, None),
            })
        })
        .collect()
}

/// Each stage's check: its state and line when the results have them;
/// else a warning saying why there is none, posted only over a pending
/// check of the stage.
pub fn stage_postings(
    context: &str,
    stages: &[stages::Stage],
    target_url: Option<&str>,
) -> Vec<Posting> {
    stages
        .iter()
        .map(|s| {
            let (state, description, only_over_pending) = match &s.outcome {
                stages::StageOutcome::Judged { state, description } => {
                    (*state, description.clone(), false)
                }
                stages::StageOutcome::NoData(why) => (
                    CheckState::Warning,
                    stages::one_line(&format!("mmci: no result for this stage: {why}")),
                    true,
                ),
            };
            Posting {
                check: Check {
                    state,
                    context: stage_context(context, &s.name),
                    target_url: target_url.map(str::to_string),
                    description,
                },
                only_over_pending,
            }
        })
        .collect()
}

/// The description a check gets without `--description`.
pub fn default_description(
    state: CheckState,
    verdict: Option<&crate::analysis::Comparison>,
) -> String {
    match (state, verdict) {
        (CheckState::Pending, _) => "mmci: building the kernels and running the matrix".into(),
        (_, Some(c)) => {
            let v = &c.verdict;
            let mut text = format!("mmci: {}", v.headline());
            if let Some(r) = v.reasons.first() {
                text.push_str(&format!("; {r}"));
            }
            text
        }
        (s, None) => format!("mmci: {}", s.as_str()),
    }
}

/// One patch to put a check on: its id when known, else its message-id to
/// look up.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub index: u32,
    pub title: String,
    pub msgid: String,
    pub id: Option<u64>,
}

/// The patches of the series tested in `dir`, and the instance the
/// manifest names (if the series came from patchwork).
pub fn targets_from_results(dir: &Path) -> Result<(Vec<Target>, Option<String>), super::PostError> {
    let manifest = crate::results::dir::read_manifest(dir)?
        .ok_or_else(|| super::PostError::NoManifest(dir.to_path_buf()))?;
    let Some(k) = manifest.kernels.iter().find(|k| k.kernel.series.is_some()) else {
        return Err(PatchworkPostError::NoSeries(dir.to_path_buf()).into());
    };
    let series = k.kernel.series.as_ref().expect("found above");
    Ok((
        targets(series, k.kernel.patchwork.as_ref()),
        k.kernel.patchwork.as_ref().map(|o| o.url.clone()),
    ))
}

/// The patchwork series the results dir's manifest names, if any.
pub fn origin_in_results(dir: &Path) -> Result<Option<pw::Origin>, super::PostError> {
    let manifest = crate::results::dir::read_manifest(dir)?
        .ok_or_else(|| super::PostError::NoManifest(dir.to_path_buf()))?;
    Ok(manifest
        .kernels
        .iter()
        .find_map(|k| k.kernel.patchwork.clone()))
}

/// Pairs the series' patches with their patchwork ids: by message-id, and
/// by position when patchwork's message-ids differ in form only.
pub fn targets(series: &Series, origin: Option<&pw::Origin>) -> Vec<Target> {
    let refs: &[PatchRef] = origin.map_or(&[], |o| o.patches.as_slice());
    series
        .patches
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let msgid = p
                .message_id
                .trim_matches(|c| c == '<' || c == '>')
                .to_string();
            let id = refs
                .iter()
                .find(|r| r.msgid == msgid)
                .or_else(|| (refs.len() == series.patches.len()).then(|| &refs[i]))
                .map(|r| r.id);
            Target {
                index: p.index,
                title: p.title.clone(),
                msgid,
                id,
            }
        })
        .collect()
}

/// The patches of series `id` on the instance, with their ids (for a check
/// before there are results).
pub async fn targets_of_series(
    base: &str,
    id: u64,
    limits: pw::Limits,
) -> Result<Vec<Target>, PatchworkPostError> {
    let s = pw::Client::new(base, None, limits)?.series(id).await?;
    Ok(pw::Origin::of(base, &s)
        .patches
        .into_iter()
        .enumerate()
        .map(|(i, p)| Target {
            index: i as u32 + 1,
            title: p.name,
            msgid: p.msgid,
            id: Some(p.id),
        })
        .collect())
}

/// `GET /api/1.3/patches/?msgid=...[&project=...]`.
pub fn lookup_url(base: &str, msgid: &str, project: Option<&str>) -> String {
    let mut u = reqwest::Url::parse(&pw::api_url(base, "patches/")).expect("checked base URL");
    u.query_pairs_mut().append_pair("msgid", msgid);
    if let Some(p) = project {
        u.query_pairs_mut().append_pair("project", p);
    }
    u.to_string()
}

/// The POST putting `check` on patch `id`.
pub fn check_request(base: &str, id: u64, check: &Check) -> Request {
    Request {
        method: "POST",
        url: pw::api_url(base, &format!("patches/{id}/checks/")),
        body: Some(check_body(check)),
    }
}

/// `mmci post patchwork`, validated: every input read and checked.
#[derive(Clone, Debug)]
pub struct PatchworkPost {
    pub url: String,
    pub project: Option<String>,
    pub targets: Vec<Target>,
    /// The summary first, then each stage's (`--stages`).
    pub checks: Vec<Posting>,
    /// None: a dry run.
    pub token: Option<String>,
    pub limits: pw::Limits,
}

/// The requests a dry run prints: the checks on each patch, preceded by
/// the look-up of a patch whose id is not known. A check posted only over
/// a pending one is named first (a dry run reads nothing).
pub fn dry_run(p: &PatchworkPost) -> String {
    let mut out = format!(
        "# dry run: nothing is sent (--send sends it, with the token of ${TOKEN_ENV} or --patchwork-token-file)\n"
    );
    let closing: Vec<&str> = p
        .checks
        .iter()
        .filter(|c| c.only_over_pending)
        .map(|c| c.check.context.as_str())
        .collect();
    if !closing.is_empty() {
        out.push_str(&format!(
            "# no result here for {}: each is posted only over a pending check of its context (--start)\n",
            closing.join(", ")
        ));
    }
    for t in &p.targets {
        if t.id.is_none() {
            out.push_str(
                &Request {
                    method: "GET",
                    url: lookup_url(&p.url, &t.msgid, p.project.as_deref()),
                    body: None,
                }
                .render(),
            );
        }
        for c in &p.checks {
            let mut r = check_request(&p.url, t.id.unwrap_or(0), &c.check);
            if t.id.is_none() {
                r.url = pw::api_url(&p.url, &format!("patches/{{id of <{}>}}/checks/", t.msgid));
            }
            out.push_str(&r.render());
        }
    }
    out
}

#[derive(serde::Deserialize)]
struct Found {
    id: u64,
}

/// Posts the checks (or prints them); returns the lines to print.
pub async fn post(p: &PatchworkPost) -> Result<String, PatchworkPostError> {
    let Some(token) = &p.token else {
        return Ok(dry_run(p));
    };
    let client = pw::Client::new(&p.url, Some(token.clone()), p.limits.clone())?;
    // Every id first: a patch that cannot be found stops the posting
    // before any check is sent, so none of the series is half-marked.
    let mut ids = Vec::new();
    for t in &p.targets {
        let id = match t.id {
            Some(id) => id,
            None => {
                let url = lookup_url(&p.url, &t.msgid, p.project.as_deref());
                let found: Vec<Found> = client
                    .list(&format!("finding patch <{}>", t.msgid), &url)
                    .await?;
                match found.as_slice() {
                    [one] => one.id,
                    [] => {
                        return Err(PatchworkPostError::NotFound {
                            url: p.url.clone(),
                            msgid: t.msgid.clone(),
                            project: p
                                .project
                                .as_ref()
                                .map(|pr| format!(" in project {pr}"))
                                .unwrap_or_default(),
                        })
                    }
                    many => {
                        return Err(PatchworkPostError::Ambiguous {
                            url: p.url.clone(),
                            msgid: t.msgid.clone(),
                            count: many.len(),
                        })
                    }
                }
            }
        };
        ids.push((t, id));
    }
    let mut out = String::new();
    let mut posted: Vec<String> = Vec::new();
    let total = ids.len() * p.checks.len();
    // One context: its checks only; several: every check of the patch, once.
    let only = match p.checks.as_slice() {
        [one] => Some(one.check.context.as_str()),
        _ => None,
    };
    for (t, id) in &ids {
        let prior: Vec<latest::Posted> = match client
            .list(
                &match only {
                    Some(c) => format!("reading the `{c}` checks of patch {id}"),
                    None => format!("reading the checks of patch {id}"),
                },
                &latest::checks_url(&p.url, *id, only),
            )
            .await
        {
            Ok(l) => l,
            Err(e) => return Err(partial(e, &posted, total)),
        };
        for c in &p.checks {
            let check = &c.check;
            let what = format!(
                "check `{}` on patch {id} ({}/{} {})",
                check.context,
                t.index,
                ids.len(),
                t.title
            );
            // The newest check of the context first: nothing new, nothing sent.
            let newest = latest::newest(&prior, &check.context);
            let decision = if c.only_over_pending {
                latest::decide_close(newest.as_ref(), check)
            } else {
                latest::decide(newest.as_ref(), check)
            };
            match decision {
                latest::Decision::Unchanged { check: n } => {
                    out.push_str(&format!(
                        "{what}: unchanged ({}, check {n}), not posted again\n",
                        check.state.as_str()
                    ));
                    continue;
                }
                latest::Decision::KeepFinal { check: n, state } => {
                    out.push_str(&format!(
                        "{what}: already final ({state}, check {n}), not set back to pending\n"
                    ));
                    continue;
                }
                latest::Decision::NoResult { check: n } => {
                    out.push_str(&format!(
                        "{what}: no result for this stage, {}\n",
                        match n {
                            Some(n) =>
                                format!("and its newest check ({n}) is not pending: not posted"),
                            None => "and no pending check of it: not posted".into(),
                        }
                    ));
                    continue;
                }
                latest::Decision::Post => {}
            }
            let req = check_request(&p.url, *id, check);
            match client
                .send_json(&format!("creating a check on patch {id}"), &req)
                .await
            {
                Ok(v) => {
                    let n = v.get("id").and_then(Value::as_u64);
                    out.push_str(&format!(
                        "check {} `{}` {} on patch {id} ({}/{} {})\n",
                        n.map_or_else(|| "?".into(), |c| c.to_string()),
                        check.context,
                        check.state.as_str(),
                        t.index,
                        ids.len(),
                        t.title
                    ));
                    posted.push(format!("`{}` on patch {id}", check.context));
                }
                Err(e) => return Err(partial(e, &posted, total)),
            }
        }
    }
    Ok(out)
}

/// An error after `posted` checks went out: says which, if any.
fn partial(source: PatchworkError, posted: &[String], total: usize) -> PatchworkPostError {
    if posted.is_empty() {
        return source.into();
    }
    PatchworkPostError::Partial {
        done: posted.len(),
        total,
        posted: posted.join(", "),
        source: Box::new(source),
    }
}

/// The token for `--send`: --patchwork-token-file, else the variable
/// `var` (--patchwork-token-env, $MMCI_PATCHWORK_TOKEN by default), which
/// is remembered as a secret whatever its name.
pub fn resolve_token(
    file: Option<&Path>,
    var: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<String, PatchworkPostError> {
    if let Some(path) = file {
        return Ok(super::read_token_file("--patchwork-token-file", path)?);
    }
    match env(var).map(|t| t.trim().to_string()) {
        Some(t) if !t.is_empty() => {
            super::remember_secret(&t);
            Ok(t)
        }
        _ => Err(PatchworkPostError::NoToken(var.to_string())),
    }
}

#[cfg(test)]
mod tests;
