//! `prerequisite-patch-id:` trailers, as `git format-patch --base` writes
//! them: patches the series needs under it that are not in its base commit
//! (typically another series not merged yet). Each is looked up, by git's
//! own `git patch-id --stable`, among the source's other mails that carry a
//! diff (a series posted into the same thread) and the mails of any mbox
//! given with `--prerequisites`. Found ones are applied before the series,
//! in the order of the trailers; missing ones are named, with the option
//! that supplies them.
//!
//! git computes the ids rather than code of ours: a stable patch-id ignores
//! whitespace and line numbers in ways that are easy to get subtly wrong,
//! and an id that differs from git's by one byte finds nothing.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use tokio::process::Command;

use super::{Mail, Patch, Series};
use crate::host::process::{self, CommandError, Limits};

#[derive(Debug, thiserror::Error)]
pub enum PrerequisiteError {
    #[error("computing patch-ids in {dir}")]
    Io {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("computing patch-ids")]
    Git(#[from] CommandError),
}

/// The commit-id git patch-id prints for the `i`-th input: any 40 hex
/// digits do, and the index gives the mail back.
fn fake_commit(i: usize) -> String {
    format!("{i:040x}")
}

/// Stable patch-ids of the mails' diffs, by index into `mails`; mails
/// without a diff get none.
pub async fn patch_ids(
    mails: &[&Mail],
    scratch: &Path,
) -> Result<BTreeMap<usize, String>, PrerequisiteError> {
    let io = |source| PrerequisiteError::Io {
        dir: scratch.display().to_string(),
        source,
    };
    // One git run for all of them: each patch starts with a
    // "From <commit-id>" line, as in `git log -p | git patch-id`.
    let mut input = String::new();
    for (i, m) in mails.iter().enumerate() {
        if m.has_diff() {
            let _ = writeln!(input, "From {} Mon Sep 17 00:00:00 2001", fake_commit(i));
            input.push_str(&m.body);
            input.push('\n');
        }
    }
    if input.is_empty() {
        return Ok(BTreeMap::new());
    }
    std::fs::create_dir_all(scratch).map_err(io)?;
    let file = scratch.join("patches.txt");
    std::fs::write(&file, input).map_err(io)?;
    let out = process::output_from_file(
        Command::new("git").args(["patch-id", "--stable"]),
        &file,
        "git patch-id --stable",
        Limits::LOCAL,
    )
    .await;
    let _ = std::fs::remove_file(&file);
    let out = out?;
    Ok(parse_patch_ids(&String::from_utf8_lossy(&out.stdout)))
}

/// git patch-id's lines, "<patch-id> <commit-id>", by input index.
pub fn parse_patch_ids(out: &str) -> BTreeMap<usize, String> {
    out.lines()
        .filter_map(|l| {
            let (id, commit) = l.split_once(' ')?;
            let i = usize::from_str_radix(commit.trim(), 16).ok()?;
            Some((i, id.to_string()))
        })
        .collect()
}

/// Finds the series' prerequisites among `pool` (the source's mails and
/// any given ones) and records them: `series.prerequisites` in trailer
/// order, `series.missing_prerequisites` for the rest. A series with found
/// prerequisites hashes differently (it builds a different tree), and its
/// prerequisite mails are no longer "left out".
pub async fn resolve(
    series: &mut Series,
    pool: &[Mail],
    scratch: &Path,
) -> Result<(), PrerequisiteError> {
    if series.prerequisite_patch_ids.is_empty() {
        return Ok(());
    }
    let own: Vec<&str> = series
        .patches
        .iter()
        .map(|p| p.message_id.as_str())
        .collect();
    let candidates: Vec<&Mail> = pool
        .iter()
        .filter(|m| !own.contains(&m.message_id.as_str()))
        .collect();
    let ids = patch_ids(&candidates, scratch).await?;
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for wanted in &series.prerequisite_patch_ids {
        match ids.iter().find(|(_, id)| *id == wanted) {
            Some((&i, _)) => found.push(as_patch(candidates[i], found.len() as u32 + 1)),
            None => missing.push(wanted.clone()),
        }
    }
    if !found.is_empty() {
        let mut parts = vec![("mmci-prerequisites-v1".to_string(), series.hash.clone())];
        parts.extend(
            series
                .prerequisite_patch_ids
                .iter()
                .filter(|id| !missing.contains(id))
                .map(|id| (String::new(), id.clone())),
        );
        series.hash = super::series_hash(&parts);
        series
            .left_out
            .retain(|l| !found.iter().any(|p: &Patch| p.message_id == l.message_id));
    }
    series.prerequisites = found;
    series.missing_prerequisites = missing;
    Ok(())
}

/// A prerequisite mail as a patch to apply; `index` counts prerequisites.
fn as_patch(m: &Mail, index: u32) -> Patch {
    let title = super::parse_subject(&m.subject)
        .map(|t| t.title)
        .unwrap_or_else(|| m.subject.clone());
    Patch::from_mail(m, index, title, 0)
}

/// What to tell the user about prerequisites that were not found.
pub fn missing_hint(missing: &[String]) -> String {
    format!(
        "prerequisite-patch-id {} not found in the thread: give the patch(es) with --prerequisites MBOX",
        missing.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_id_lines_come_back_by_index() {
        for (out, want) in [
            ("", vec![]),
            (
                "f00dfeed00000000000000000000000000000001 0000000000000000000000000000000000000000\n",
                vec![(0, "f00dfeed00000000000000000000000000000001")],
            ),
            (
                "aa00000000000000000000000000000000000000 0000000000000000000000000000000000000003\nbb00000000000000000000000000000000000000 000000000000000000000000000000000000000c\n",
                vec![
                    (3, "aa00000000000000000000000000000000000000"),
                    (12, "bb00000000000000000000000000000000000000"),
                ],
            ),
            ("garbage\nid not-hex\n", vec![]),
        ] {
            let got: Vec<(usize, String)> = parse_patch_ids(out).into_iter().collect();
            let want: Vec<(usize, String)> =
                want.into_iter().map(|(i, s)| (i, s.to_string())).collect();
            assert_eq!(got, want, "{out:?}");
        }
        assert_eq!(fake_commit(12), format!("{}c", "0".repeat(39)));
    }
}
