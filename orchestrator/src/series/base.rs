//! The base a series is applied on. The cascade, in order:
//!
//! 1. the series' `base-commit:` trailer, when the tree has that commit:
//!    the series was written there, so it is applied there and the base
//!    kernel of the comparison is that commit;
//! 2. otherwise the configured tree's ref (`--tree URL --ref REF`, or the
//!    bundled tree), then each further ref the configuration lists
//!    (`--base-cascade mm-unstable --base-cascade mm-new`), in order: the
//!    first one on which every patch applies (checked with
//!    `git apply --cached` into a scratch index, no checkout needed).
//!
//! A series' prerequisites (found by [`super::prerequisite`]) are applied
//! first in every check, as they will be in the build.
//!
//! The choice and the reason are kept with the series, so reports and the
//! manifest say which base was used and why.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

use super::Series;
use crate::host::process::{self, CommandError, GroupChild, Limits};

/// A ref of the tree that may serve as base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// What the user called it: `mm-stable`, `HEAD`, `bundled`.
    pub name: String,
    pub commit: String,
}

/// The base chosen, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BaseChoice {
    /// `base-commit`, or the candidate's name.
    pub name: String,
    pub commit: String,
    pub how: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    #[error("the series applies on none of the bases tried: {}{}", .tried.join("; "), if .missing_prerequisites.is_empty() { String::new() } else { format!(" ({})", super::prerequisite::missing_hint(.missing_prerequisites)) })]
    NoBase {
        tried: Vec<String>,
        missing_prerequisites: Vec<String>,
    },
    #[error("git in {repo}: {source}")]
    Command {
        repo: String,
        #[source]
        source: CommandError,
    },
    #[error("git in {repo}: {source}")]
    Git {
        repo: String,
        #[source]
        source: std::io::Error,
    },
}

const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs git in its own process group with a timeout; (success, stderr).
async fn git(
    repo: &Path,
    args: &[&str],
    index: Option<&Path>,
) -> Result<(bool, String), BaseError> {
    let err = |source| BaseError::Git {
        repo: repo.display().to_string(),
        source,
    };
    let scratch = tempfile::NamedTempFile::new().map_err(err)?;
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo).args(args);
    if let Some(i) = index {
        cmd.env("GIT_INDEX_FILE", i);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(scratch.reopen().map_err(err)?);
    let mut child = GroupChild::spawn(&mut cmd).map_err(err)?;
    let done = child
        .wait_timeout(GIT_TIMEOUT, Duration::from_secs(2))
        .await
        .map_err(err)?;
    let stderr = std::fs::read_to_string(scratch.path()).unwrap_or_default();
    Ok((done.status.success() && !done.timed_out, stderr))
}

/// The commit `rev` names in `repo`, if it has it.
pub async fn resolve(repo: &Path, rev: &str) -> Result<Option<String>, BaseError> {
    if rev.is_empty() || rev.starts_with('-') || !rev.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let out = process::output(
        Command::new("git").arg("-C").arg(repo).args([
            "rev-parse",
            "--verify",
            "-q",
            &format!("{rev}^{{commit}}"),
        ]),
        "git rev-parse",
        Limits::QUICK,
    )
    .await
    .map_err(|e| BaseError::Command {
        repo: repo.display().to_string(),
        source: e,
    })?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
}

/// Does every patch apply, in order, on `commit`? Err(first failing patch).
async fn applies(
    repo: &Path,
    commit: &str,
    series: &Series,
    scratch: &Path,
) -> Result<Result<(), String>, BaseError> {
    std::fs::create_dir_all(scratch).map_err(|source| BaseError::Git {
        repo: scratch.display().to_string(),
        source,
    })?;
    let index = scratch.join("index");
    let _ = std::fs::remove_file(&index);
    let (ok, e) = git(repo, &["read-tree", commit], Some(&index)).await?;
    if !ok {
        return Ok(Err(format!("read-tree: {}", e.trim())));
    }
    let before = series.prerequisites.len();
    for (i, p) in series
        .prerequisites
        .iter()
        .chain(&series.patches)
        .enumerate()
    {
        let body = super::parse_mail(&p.raw)
            .map(|m| m.body)
            .unwrap_or_default();
        let file = scratch.join(format!("{i:04}.diff"));
        std::fs::write(&file, body).map_err(|source| BaseError::Git {
            repo: scratch.display().to_string(),
            source,
        })?;
        let f = file.to_string_lossy().into_owned();
        let (ok, e) = git(repo, &["apply", "--cached", &f], Some(&index)).await?;
        if !ok {
            let why = e.lines().next().unwrap_or("does not apply").to_string();
            return Ok(Err(if i < before {
                format!("prerequisite {} ({why})", p.title)
            } else {
                format!("patch {}/{} ({why})", p.index, series.total)
            }));
        }
    }
    Ok(Ok(()))
}

/// Chooses the base of `series` in `repo` (see the module comment).
pub async fn choose(
    repo: &Path,
    series: &Series,
    candidates: &[Candidate],
    scratch: &Path,
) -> Result<BaseChoice, BaseError> {
    let mut tried = Vec::new();
    let mut why_not_trailer = String::from("no base-commit: trailer");
    if let Some(c) = &series.base_commit {
        match resolve(repo, c).await? {
            Some(full) => {
                return Ok(BaseChoice {
                    name: "base-commit".into(),
                    commit: full,
                    how: format!("the series' base-commit: {c}, found in the tree"),
                })
            }
            None => {
                why_not_trailer = format!("base-commit: {c} is not in the tree");
                tried.push(format!("base-commit {c}: not in the tree"));
            }
        }
    }
    let names: Vec<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    for (i, cand) in candidates.iter().enumerate() {
        match applies(repo, &cand.commit, series, scratch).await? {
            Ok(()) => {
                let _ = std::fs::remove_dir_all(scratch);
                return Ok(BaseChoice {
                    name: cand.name.clone(),
                    commit: cand.commit.clone(),
                    how: if i == 0 {
                        format!(
                            "{why_not_trailer}; applies on {} (the configured tree, first of the cascade {})",
                            cand.name,
                            names.join(" > ")
                        )
                    } else {
                        format!(
                            "{why_not_trailer}; does not apply on {}; applies on {} (cascade {})",
                            names[..i].join(", "),
                            cand.name,
                            names.join(" > ")
                        )
                    },
                });
            }
            Err(why) => tried.push(format!("{}: {why}", cand.name)),
        }
    }
    let _ = std::fs::remove_dir_all(scratch);
    Err(BaseError::NoBase {
        tried,
        missing_prerequisites: series.missing_prerequisites.clone(),
    })
}
