//! The base a series is applied on. The cascade, in order:
//!
//! 1. the series' `base-commit:` trailer, when that commit is reached from a
//!    ref mmci fetched (the configured ref or a cascade entry: `git
//!    merge-base --is-ancestor`): the series was written there, so it is
//!    applied there and the base kernel of the comparison is that commit.
//!    Being in the tree's object store is not enough: a commit no fetched
//!    ref reaches may be one another series left (see
//!    the kernel stage's `apply`), and the base kernel is the comparison's
//!    trusted side. A base-commit that is not itself such a tip is built as
//!    untrusted ([`BaseChoice::trusted`]);
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
    /// The commit is the tip of a ref the operator configured (a
    /// candidate), not one a series' trailer picked among their ancestors:
    /// only then does its build write the object dir and ccache that later
    /// builds read. Results recorded before this field read as untrusted.
    #[serde(default)]
    pub trusted: bool,
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

/// A scratch index, and the scratch object dir the blobs `git apply
/// --cached` writes go to (borrowing the tree's objects), so that trying a
/// series leaves nothing of it in the tree's store.
struct Scratch<'a> {
    index: &'a Path,
    objects: &'a Path,
    alternate: &'a Path,
}

/// Runs git in its own process group with a timeout; (success, stderr).
async fn git(
    repo: &Path,
    args: &[&str],
    isolate: Option<&Scratch<'_>>,
) -> Result<(bool, String), BaseError> {
    let err = |source| BaseError::Git {
        repo: repo.display().to_string(),
        source,
    };
    let scratch = tempfile::NamedTempFile::new().map_err(err)?;
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo).args(args);
    if let Some(s) = isolate {
        cmd.env("GIT_INDEX_FILE", s.index)
            .env("GIT_OBJECT_DIRECTORY", s.objects)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", s.alternate);
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
    let out = rev_parse(repo, &["--verify", "-q", &format!("{rev}^{{commit}}")]).await?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
}

/// `git rev-parse ARGS` in `repo` (its own process group, a short timeout).
async fn rev_parse(repo: &Path, args: &[&str]) -> Result<std::process::Output, BaseError> {
    process::output(
        Command::new("git")
            .arg("-C")
            .arg(repo)
            .arg("rev-parse")
            .args(args),
        "git rev-parse",
        Limits::QUICK,
    )
    .await
    .map_err(|e| BaseError::Command {
        repo: repo.display().to_string(),
        source: e,
    })
}

/// The object dir of `repo` (its common dir's `objects`), absolute.
async fn objects_dir(repo: &Path) -> Result<std::path::PathBuf, BaseError> {
    let out = rev_parse(repo, &["--path-format=absolute", "--git-common-dir"]).await?;
    Ok(Path::new(String::from_utf8_lossy(&out.stdout).trim()).join("objects"))
}

/// Is `ancestor` reached from `tip` in `repo` (or is it `tip`)?
async fn is_ancestor(repo: &Path, ancestor: &str, tip: &str) -> Result<bool, BaseError> {
    let (yes, _) = git(repo, &["merge-base", "--is-ancestor", ancestor, tip], None).await?;
    Ok(yes)
}

/// How a resolved base-commit relates to the trusted candidates: the
/// candidate it is the tip of, or the first one it is an ancestor of.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Reach<'a> {
    Tip(&'a str),
    Ancestor(&'a str),
}

async fn reach<'a>(
    repo: &Path,
    commit: &str,
    candidates: &'a [Candidate],
) -> Result<Option<Reach<'a>>, BaseError> {
    if let Some(c) = candidates.iter().find(|c| c.commit == commit) {
        return Ok(Some(Reach::Tip(&c.name)));
    }
    for c in candidates {
        if is_ancestor(repo, commit, &c.commit).await? {
            return Ok(Some(Reach::Ancestor(&c.name)));
        }
    }
    Ok(None)
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
    let objects = scratch.join("objects");
    std::fs::create_dir_all(&objects).map_err(|source| BaseError::Git {
        repo: objects.display().to_string(),
        source,
    })?;
    let alternate = objects_dir(repo).await?;
    let tmp = Scratch {
        index: &index,
        objects: &objects,
        alternate: &alternate,
    };
    let (ok, e) = git(repo, &["read-tree", commit], Some(&tmp)).await?;
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
        let (ok, e) = git(repo, &["apply", "--cached", &f], Some(&tmp)).await?;
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
        let full = resolve(repo, c).await?;
        let reached = match &full {
            Some(full) => reach(repo, full, candidates).await?,
            None => None,
        };
        match (full, reached) {
            (Some(full), Some(Reach::Tip(name))) => {
                return Ok(BaseChoice {
                    name: "base-commit".into(),
                    commit: full,
                    how: format!("the series' base-commit: {c}, the tip of {name}"),
                    trusted: true,
                })
            }
            (Some(full), Some(Reach::Ancestor(name))) => {
                return Ok(BaseChoice {
                    name: "base-commit".into(),
                    commit: full,
                    how: format!(
                        "the series' base-commit: {c}, an ancestor of {name} (not a tip mmci trusts: built as untrusted, in private objects)"
                    ),
                    trusted: false,
                })
            }
            (Some(_), None) => {
                why_not_trailer = format!(
                    "base-commit: {c} is in the tree's objects but no fetched ref reaches it (ignored: only the history of {} is trusted)",
                    candidates
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                tried.push(format!("base-commit {c}: reached from no fetched ref"));
            }
            (None, _) => {
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
                    trusted: true,
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
