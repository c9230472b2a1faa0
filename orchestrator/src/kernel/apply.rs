//! Applying a series with `git am -3` onto a checkout of its base, and saying
//! precisely which patch and which file or hunk failed when it does not apply.
//!
//! This is the kernel stage's step that applies a series (read by the earlier
//! `series` stage) to a tree, not part of `series/`: it runs git in the
//! environment of [`crate::kernel::sandbox`] and works on a kernel checkout.
//!
//! The commits `git am` makes never enter the tree's object store: `git am`
//! runs in a private repository of the build's own (`<scratch>/am.git`,
//! which borrows the tree's objects through `objects/info/alternates`) with
//! the checkout as its work tree. A series' commits in the shared store
//! could later be named as a `base-commit:` by another series (their ids are
//! published in reports) and built as a trusted baseline; a commit only the
//! private repository holds cannot. The checkout's own HEAD stays at the
//! base throughout, so the tree's repository never points at an object it
//! lacks (a worktree HEAD on a missing commit makes every later `git fetch`
//! into the tree fail with "bad object").

use std::path::{Path, PathBuf};

use tokio::process::Command;

use crate::host::process::{self, CommandError, Limits};
use crate::series::Series;

/// Why a series did not apply.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ApplyFailure {
    /// 1-based index of the patch that failed, when git said.
    pub patch: Option<u32>,
    pub total: u32,
    pub title: Option<String>,
    /// "mm/vmscan.c:4535" (hunk start) or "mm/vmscan.c" (conflict).
    pub places: Vec<String>,
    /// git am's own words, for the log and the report.
    pub detail: String,
    /// The series' prerequisite-patch-ids that were found nowhere: the
    /// likeliest reason when it does not apply.
    #[serde(default)]
    pub missing_prerequisites: Vec<String>,
}

impl std::fmt::Display for ApplyFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.patch, &self.title) {
            (Some(n), Some(t)) => write!(f, "patch {n}/{} ({t}) does not apply", self.total)?,
            (Some(n), None) => write!(f, "patch {n}/{} does not apply", self.total)?,
            // A prerequisite applied before the series.
            (None, Some(t)) => write!(f, "{t} does not apply")?,
            _ => write!(f, "the series does not apply")?,
        }
        if !self.places.is_empty() {
            write!(f, " at {}", self.places.join(", "))?;
        }
        if !self.missing_prerequisites.is_empty() {
            write!(
                f,
                " ({})",
                crate::series::prerequisite::missing_hint(&self.missing_prerequisites)
            )?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{0}")]
    DoesNotApply(ApplyFailure),
    #[error("preparing the patches")]
    Io(#[from] std::io::Error),
    #[error("git")]
    Git(#[from] CommandError),
    #[error("the private repository for git am: {0}")]
    Private(String),
}

/// Reads git am's output: the failed patch number and the files and hunks.
/// git am numbers what it was given, the prerequisites first: a number
/// within them names that prerequisite, the rest are the series' own.
pub fn parse_am_failure(output: &str, series: &Series) -> ApplyFailure {
    let mut patch: Option<u32> = None;
    let mut places: Vec<String> = Vec::new();
    for line in output.lines() {
        let line = line.trim();
        // "Patch failed at 0002 mm/vmscan: throttle ..."
        if let Some(rest) = line.strip_prefix("Patch failed at ") {
            patch = rest.split_whitespace().next().and_then(|n| n.parse().ok());
        }
        // "error: patch failed: mm/vmscan.c:4535"
        if let Some(place) = line.strip_prefix("error: patch failed: ") {
            places.push(place.to_string());
        }
        // "CONFLICT (content): Merge conflict in mm/vmscan.c"
        if let Some((_, file)) = line.split_once("Merge conflict in ") {
            places.push(file.to_string());
        }
        // "error: sha1 information is lacking or useless (mm/vmscan.c)."
        if let Some(rest) = line.strip_prefix("error: sha1 information is lacking or useless (") {
            places.push(rest.trim_end_matches('.').trim_end_matches(')').to_string());
        }
        // "error: mm/foo.c: does not exist in index"
        if let Some(rest) = line.strip_prefix("error: ") {
            if let Some(file) = rest.strip_suffix(": does not exist in index") {
                places.push(format!("{file} (missing)"));
            }
        }
    }
    places.dedup();
    let before = series.prerequisites.len() as u32;
    let (patch, title) = match patch {
        Some(n) if n >= 1 && n <= before => (
            None,
            Some(format!(
                "prerequisite {} ({})",
                series.prerequisites[n as usize - 1].title,
                series.prerequisites[n as usize - 1].message_id
            )),
        ),
        Some(n) if n > before => {
            let n = n - before;
            (
                Some(n),
                series.patches.get(n as usize - 1).map(|p| p.title.clone()),
            )
        }
        _ => (None, None),
    };
    let detail = output
        .lines()
        .filter(|l| {
            l.starts_with("error:")
                || l.starts_with("CONFLICT")
                || l.starts_with("Patch failed")
                || l.starts_with("Applying:")
        })
        .collect::<Vec<_>>()
        .join("\n");
    ApplyFailure {
        patch,
        total: series.total,
        title,
        places,
        detail,
        missing_prerequisites: series.missing_prerequisites.clone(),
    }
}

/// One mbox file per patch, in order, for `git am`: the prerequisites
/// first (`pre-NNNN.patch`), then the series.
pub fn write_patch_files(series: &Series, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    let prerequisites = series
        .prerequisites
        .iter()
        .map(|p| (format!("pre-{:04}", p.index), p));
    let own = series
        .patches
        .iter()
        .map(|p| (format!("{:04}", p.index), p));
    for (name, p) in prerequisites.chain(own) {
        let path = dir.join(format!("{name}.patch"));
        let mut bytes = b"From mmci Mon Sep 17 00:00:00 2001\n".to_vec();
        bytes.extend_from_slice(&p.raw);
        std::fs::write(&path, bytes)?;
        files.push(path);
    }
    Ok(files)
}

/// git in `checkout`, with a pinned committer: with the committer date taken
/// from the author date, the same base and series give the same commits.
/// The environment is the build's allow-list (PATH, HOME=/nonexistent, the
/// locale; see [`crate::kernel::sandbox::base_env`]): git am handles a
/// stranger's mail and runs a hook, and needs none of our tokens.
fn git(checkout: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.env_clear()
        .envs(crate::kernel::sandbox::host_env(false))
        .arg("-C")
        .arg(checkout)
        .env("GIT_COMMITTER_NAME", "mmci")
        .env("GIT_COMMITTER_EMAIL", "mmci@localhost");
    cmd
}

/// The `applypatch-msg` hook that turns the `Message-ID: <id>` line
/// `git am --message-id` appends into b4's `Link: https://lore.kernel.org/r/<id>`.
const LINK_HOOK: &str = r#"#!/bin/sh
sed -i -E 's|^Message-I[Dd]: <([^>]*)>$|Link: https://lore.kernel.org/r/\1|' "$1"
"#;

/// Writes the hooks directory for `git am` (core.hooksPath) under `scratch`.
fn link_hook(scratch: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch.join("hooks");
    std::fs::create_dir_all(&dir)?;
    let hook = dir.join("applypatch-msg");
    std::fs::write(&hook, LINK_HOOK)?;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

/// What `git am` made: the series' head commit and its tree, both held only
/// by the private repository ([`applied_repo`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub head: String,
    pub tree: String,
}

/// The private repository [`apply`] ran `git am` in, under `scratch`: its
/// HEAD is the applied series (`git --git-dir=<it> log` shows the commits).
pub fn applied_repo(scratch: &Path) -> PathBuf {
    scratch.join("am.git")
}

/// `git --git-dir=<repo> --work-tree=<checkout>`, in the allow-listed
/// environment of [`git`].
fn git_private(repo: &Path, checkout: &Path) -> Command {
    let mut cmd = git(checkout);
    cmd.arg("--git-dir")
        .arg(repo)
        .arg("--work-tree")
        .arg(checkout);
    cmd
}

/// One line of a git command's stdout.
async fn git_line(cmd: &mut Command, what: &str) -> Result<String, ApplyError> {
    let out = process::output(cmd, what, Limits::LOCAL).await?;
    if !out.status.success() {
        return Err(ApplyError::Private(format!(
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Makes the private repository for `git am` under `scratch`: a bare
/// repository borrowing the tree's objects, HEAD at the checkout's HEAD
/// (the base), its index read from it and refreshed against the checkout's
/// files (which the caller has just reset to the base).
async fn private_repo(checkout: &Path, scratch: &Path) -> Result<(PathBuf, String), ApplyError> {
    let repo = applied_repo(scratch);
    let base = git_line(
        git(checkout).args(["rev-parse", "--verify", "HEAD"]),
        "git rev-parse HEAD",
    )
    .await?;
    let common = git_line(
        git(checkout).args(["rev-parse", "--path-format=absolute", "--git-common-dir"]),
        "git rev-parse --git-common-dir",
    )
    .await?;
    git_line(
        git(scratch).args(["init", "-q", "--bare"]).arg(&repo),
        "git init",
    )
    .await?;
    std::fs::write(
        repo.join("objects/info/alternates"),
        format!("{}\n", Path::new(&common).join("objects").display()),
    )?;
    git_line(
        git_private(&repo, checkout).args(["update-ref", "HEAD", &base]),
        "git update-ref",
    )
    .await?;
    git_line(
        git_private(&repo, checkout).args(["read-tree", "HEAD"]),
        "git read-tree",
    )
    .await?;
    // Only the stat data: the content is the base's (a file that differs
    // shows up here and makes git am refuse, as in the checkout itself).
    let _ = process::output(
        git_private(&repo, checkout).args(["update-index", "-q", "--refresh"]),
        "git update-index --refresh",
        Limits::LOCAL,
    )
    .await?;
    Ok((repo, base))
}

/// `git am -3` of `series` onto the current HEAD of `checkout`, each commit
/// with a `Link:` trailer to its mail on lore, in a private repository
/// (see the module comment). On failure the am is aborted, leaving the
/// checkout's files at its base.
pub async fn apply(
    checkout: &Path,
    series: &Series,
    scratch: &Path,
    log: &Path,
) -> Result<Applied, ApplyError> {
    // What an interrupted earlier attempt left.
    if scratch.exists() {
        std::fs::remove_dir_all(scratch)?;
    }
    let files = write_patch_files(series, scratch)?;
    let hooks = link_hook(scratch)?;
    let (repo, _base) = private_repo(checkout, scratch).await?;
    let out = process::output(
        git_private(&repo, checkout)
            .arg("-c")
            .arg(format!("core.hooksPath={}", hooks.display()))
            .args([
                "am",
                "-3",
                "--message-id",
                "--empty=drop",
                "--committer-date-is-author-date",
            ])
            .args(&files),
        "git am",
        Limits::LOCAL,
    )
    .await?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        writeln!(f, "==> git am -3 ({} patches)\n{text}", files.len())?;
    }
    if out.status.success() {
        let head = git_line(
            git_private(&repo, checkout).args(["rev-parse", "--verify", "HEAD"]),
            "git rev-parse HEAD",
        )
        .await?;
        let tree = git_line(
            git_private(&repo, checkout).args(["rev-parse", "--verify", "HEAD^{tree}"]),
            "git rev-parse HEAD^{tree}",
        )
        .await?;
        return Ok(Applied { head, tree });
    }
    let mut failure = parse_am_failure(&text, series);
    // git am -3 may go straight to its 3-way fallback and only say that it
    // could not; a plain `git apply --check` of the failed patch names the
    // hunks that do not fit.
    if let Some(file) = failure.patch.and_then(|n| files.get(n as usize - 1)) {
        let check = process::output(
            git_private(&repo, checkout)
                .args(["apply", "--check"])
                .arg(file),
            "git apply --check",
            Limits::LOCAL,
        )
        .await?;
        let check_text = String::from_utf8_lossy(&check.stderr).into_owned();
        let hunks = parse_am_failure(&check_text, series).places;
        failure
            .places
            .retain(|p| !hunks.iter().any(|h| h.starts_with(p.as_str())));
        failure.places.extend(hunks);
        failure
            .detail
            .push_str(&format!("\n{}", check_text.trim_end()));
    }
    // Back to the base's files (git am -3 may have left conflict markers),
    // then the private repository goes.
    process::run_logged(
        git_private(&repo, checkout).args(["am", "--abort"]),
        log,
        "git am --abort",
    )
    .await?;
    let _ = std::fs::remove_dir_all(scratch);
    Err(ApplyError::DoesNotApply(failure))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{Patch, Series};

    fn series(titles: &[&str]) -> Series {
        Series {
            version: 1,
            total: titles.len() as u32,
            rfc: false,
            cover: None,
            patches: titles
                .iter()
                .enumerate()
                .map(|(i, t)| Patch {
                    index: i as u32 + 1,
                    title: t.to_string(),
                    subject: t.to_string(),
                    message_id: String::new(),
                    from: String::new(),
                    author: String::new(),
                    from_version: 1,
                    to: vec![],
                    cc: vec![],
                    references: vec![],
                    raw: vec![],
                })
                .collect(),
            base_commit: None,
            prerequisite_patch_ids: vec![],
            prerequisites: vec![],
            missing_prerequisites: vec![],
            versions_seen: vec![1],
            hash: "0".repeat(64),
            chosen: String::new(),
            assembly: String::new(),
            left_out: vec![],
            base: None,
        }
    }

    #[test]
    fn failure_names_patch_and_hunk() {
        // What git 2.47 prints when a hunk does not apply and the 3-way
        // fallback has no blob to merge with.
        let out = "Applying: mm: first\nApplying: mm: second\nerror: sha1 information is lacking or useless (mm/vmscan.c).\nerror: could not build fake ancestor\nhint: Use 'git am --show-current-patch=diff' to see the failed patch\nPatch failed at 0002 mm: second\n";
        let f = parse_am_failure(out, &series(&["mm: first", "mm: second"]));
        assert_eq!(f.patch, Some(2));
        assert_eq!(f.places, ["mm/vmscan.c"]);
        assert_eq!(f.title.as_deref(), Some("mm: second"));
        assert_eq!(
            f.to_string(),
            "patch 2/2 (mm: second) does not apply at mm/vmscan.c"
        );
    }

    #[test]
    fn failure_with_conflict_and_hunk_lines() {
        let out = "Applying: mm: only\nerror: patch failed: mm/vmscan.c:4535\nerror: mm/vmscan.c: patch does not apply\nUsing index info to reconstruct a base tree...\nM\tmm/vmscan.c\nFalling back to patching base and 3-way merge...\nAuto-merging mm/vmscan.c\nCONFLICT (content): Merge conflict in mm/vmscan.c\nPatch failed at 0001 mm: only\n";
        let f = parse_am_failure(out, &series(&["mm: only"]));
        assert_eq!(f.places, ["mm/vmscan.c:4535", "mm/vmscan.c"]);
        assert_eq!(
            f.to_string(),
            "patch 1/1 (mm: only) does not apply at mm/vmscan.c:4535, mm/vmscan.c"
        );
    }
}
