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

use std::collections::{BTreeMap, HashMap};
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

/// A line `git patch-id` takes for the start of another patch: an object
/// id (40 hex digits, or more for SHA-256), bare or after `commit `,
/// `From ` or `diff-tree ` (builtin/patch-id.c, `get_one_patchid`). A mail
/// body's `>From <hex>` (unquoted by the mbox reader) or a stable backport's
/// `commit <sha> upstream.` is such a line.
pub fn starts_patch(line: &[u8]) -> bool {
    let rest = [&b"commit "[..], b"From ", b"diff-tree "]
        .iter()
        .find_map(|p| line.strip_prefix(*p))
        .unwrap_or(line);
    rest.len() >= 40 && rest[..40].iter().all(u8::is_ascii_hexdigit)
}

/// The input of one `git patch-id` run for many mails, and which mail each
/// commit-id in its output stands for.
#[derive(Debug, Default)]
pub struct PatchIdInput {
    pub text: String,
    /// Commit-id written before a mail's body -> the mail's index.
    pub commits: HashMap<String, usize>,
}

/// Each mail with a diff becomes one patch, under a `From <commit-id>`
/// line of ours (as in `git log -p | git patch-id`). A body line git would
/// take for the start of a patch is prefixed with `>`: before or after the
/// diff it is ignored either way, so the mail's patch-id does not change,
/// but it can no longer start a patch of its own and get the diff that
/// follows it attributed to another mail, or to none. The commit-ids are
/// numbered from 1: git prints the all-zero id for diff text after a
/// patch's end (a second diff after prose), which then matches no mail.
pub fn patch_id_input(mails: &[&Mail]) -> PatchIdInput {
    let mut input = PatchIdInput::default();
    for (i, m) in mails.iter().enumerate() {
        if !m.has_diff() {
            continue;
        }
        let commit = format!("{:040x}", i + 1);
        let _ = writeln!(input.text, "From {commit} Mon Sep 17 00:00:00 2001");
        input.commits.insert(commit, i);
        for line in m.body.split('\n') {
            if starts_patch(line.as_bytes()) {
                input.text.push('>');
            }
            input.text.push_str(line);
            input.text.push('\n');
        }
    }
    input
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
    // One git run for all of them (a thread has hundreds of mails).
    let input = patch_id_input(mails);
    if input.commits.is_empty() {
        return Ok(BTreeMap::new());
    }
    std::fs::create_dir_all(scratch).map_err(io)?;
    let file = scratch.join("patches.txt");
    std::fs::write(&file, &input.text).map_err(io)?;
    // Run in the scratch directory: a repository around the caller's
    // directory (its patchid.* settings, its hash) plays no part.
    let out = process::output_from_file(
        Command::new("git")
            .args(["patch-id", "--stable"])
            .current_dir(scratch),
        &file,
        "git patch-id --stable",
        Limits::LOCAL,
    )
    .await;
    let _ = std::fs::remove_file(&file);
    let out = out?;
    Ok(parse_patch_ids(
        &String::from_utf8_lossy(&out.stdout),
        &input.commits,
    ))
}

/// git patch-id's lines, "<patch-id> <commit-id>", by the index of the mail
/// `commits` maps the commit-id to; a commit-id of no mail (the all-zero
/// one) gives nothing, and the first id of a mail counts.
pub fn parse_patch_ids(out: &str, commits: &HashMap<String, usize>) -> BTreeMap<usize, String> {
    let mut ids = BTreeMap::new();
    for l in out.lines() {
        let Some((id, commit)) = l.split_once(' ') else {
            continue;
        };
        if let Some(&i) = commits.get(commit.trim()) {
            ids.entry(i).or_insert_with(|| id.to_string());
        }
    }
    ids
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
        match ids
            .iter()
            .find(|(_, id)| *id == wanted)
            .and_then(|(&i, _)| candidates.get(i))
        {
            Some(m) => found.push(as_patch(m, found.len() as u32 + 1)),
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
        // The prerequisites' own bytes too: a patch-id ignores whitespace,
        // and what is built must key the build (see super::series_hash).
        parts.extend(found.iter().map(|p| {
            let body = super::parse_mail(&p.raw)
                .map(|m| m.body)
                .unwrap_or_default();
            (p.title.clone(), body)
        }));
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

    const HEX40: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn lines_git_takes_for_a_patch_start() {
        for (line, want) in [
            (format!("From {HEX40} Mon Sep 17 00:00:00 2001"), true),
            (format!("commit {HEX40} upstream."), true),
            (format!("diff-tree {HEX40}"), true),
            (HEX40.to_string(), true),
            (HEX40.to_uppercase(), true),
            (format!("{HEX40}{HEX40}"), true),
            (format!(">From {HEX40}"), false),
            (format!(" commit {HEX40}"), false),
            (format!("From: {HEX40}"), false),
            (format!("commit {}", &HEX40[..39]), false),
            (
                "From 00000000000000000000000000000000ffffffffx".into(),
                true,
            ),
            ("deleted file mode 100644".into(), false),
            ("diff --git a/mm/x.c b/mm/x.c".into(), false),
            (String::new(), false),
        ] {
            assert_eq!(starts_patch(line.as_bytes()), want, "{line:?}");
        }
    }

    fn mail(body: &str) -> Mail {
        Mail {
            body: body.into(),
            ..Mail::default()
        }
    }

    const DIFF: &str =
        "diff --git a/mm/x.c b/mm/x.c\n--- a/mm/x.c\n+++ b/mm/x.c\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";

    #[test]
    fn only_our_lines_start_patches_in_the_input() {
        let forged = format!(
            "reply\n\nFrom 00000000000000000000000000000000ffffffff Mon Sep 17 00:00:00 2001\n{DIFF}"
        );
        let backport = format!("commit {HEX40} upstream.\n\nmsg\n---\n{DIFF}");
        let bare = format!("{HEX40}\n{DIFF}");
        let mails = [
            mail("no diff here"),
            mail(&forged),
            mail(&backport),
            mail(&bare),
        ];
        let refs: Vec<&Mail> = mails.iter().collect();
        let input = patch_id_input(&refs);
        let starts: Vec<&str> = input
            .text
            .lines()
            .filter(|l| starts_patch(l.as_bytes()))
            .collect();
        let ours: Vec<String> = (2..=4)
            .map(|i| format!("From {i:040x} Mon Sep 17 00:00:00 2001"))
            .collect();
        assert_eq!(starts, ours);
        let mut by_commit: Vec<(&String, &usize)> = input.commits.iter().collect();
        by_commit.sort();
        assert_eq!(
            by_commit,
            [
                (&format!("{:040x}", 2), &1),
                (&format!("{:040x}", 3), &2),
                (&format!("{:040x}", 4), &3)
            ]
        );
        // The forged lines are kept, quoted.
        assert!(input.text.contains(&format!(">commit {HEX40} upstream.")));
    }

    #[test]
    fn patch_id_lines_come_back_by_the_mail_their_commit_stands_for() {
        let commits: HashMap<String, usize> = [
            (format!("{:040x}", 1), 0),
            (format!("{:040x}", 4), 3),
            (format!("{:040x}", 13), 12),
        ]
        .into_iter()
        .collect();
        let zero = "0".repeat(40);
        let ff = format!("{}ffffffff", "0".repeat(32));
        for (out, want) in [
            (String::new(), vec![]),
            (
                format!(
                    "f00d {}\n",
                    commits.keys().find(|k| k.ends_with('1')).unwrap()
                ),
                vec![(0, "f00d")],
            ),
            (
                format!("aa {:040x}\nbb {:040x}\ncc {zero}\ndd {ff}\n", 4, 13),
                vec![(3, "aa"), (12, "bb")],
            ),
            // A mail's first id counts.
            (format!("aa {:040x}\nbb {:040x}\n", 4, 4), vec![(3, "aa")]),
            ("garbage\nid not-hex\n\n ".into(), vec![]),
        ] {
            let got: Vec<(usize, String)> = parse_patch_ids(&out, &commits).into_iter().collect();
            let want: Vec<(usize, String)> =
                want.into_iter().map(|(i, s)| (i, s.to_string())).collect();
            assert_eq!(got, want, "{out:?}");
        }
    }

    /// git's own patch-id of one body, fed alone.
    fn git_patch_id(body: &str) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .args(["patch-id", "--stable"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// Through git: a forged `From <hex>` line, a backport's `commit <sha>
    /// upstream.` and a bare id neither shift nor lose a diff: every mail
    /// gets the id of its own diff.
    #[test]
    fn forged_boundaries_keep_each_diff_with_its_mail() {
        let plain = format!("msg\n---\n{DIFF}");
        let other = format!("msg\n---\n{}", DIFF.replace("+c", "+d"));
        let forged = format!(
            "reply\n\nFrom 00000000000000000000000000000000ffffffff Mon Sep 17 00:00:00 2001\n{other}"
        );
        let backport = format!("commit {HEX40} upstream.\n\n{plain}");
        let bare = format!("{HEX40}\n{other}");
        let mails = [
            mail(&forged),
            mail("text only"),
            mail(&backport),
            mail(&bare),
            mail(&plain),
        ];
        let refs: Vec<&Mail> = mails.iter().collect();
        let scratch = tempfile::tempdir().unwrap();
        let ids = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(patch_ids(&refs, scratch.path()))
            .unwrap();
        let want_plain = git_patch_id(&plain);
        let want_other = git_patch_id(&other);
        assert_eq!(want_plain.len(), 40);
        assert_ne!(want_plain, want_other);
        let got: Vec<(usize, &str)> = ids.iter().map(|(i, s)| (*i, s.as_str())).collect();
        assert_eq!(
            got,
            [
                (0, want_other.as_str()),
                (2, want_plain.as_str()),
                (3, want_other.as_str()),
                (4, want_plain.as_str())
            ]
        );
    }
}
