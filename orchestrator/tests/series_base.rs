//! The base a series is applied on, against a file:// upstream with two
//! branches made here (a small tree, not the kernel's): mm-stable, and
//! mm-unstable = mm-stable + one commit. A series whose base-commit is only
//! on mm-unstable is applied there; one without base-commit follows the
//! cascade (mm-stable, then mm-unstable); one whose base-commit is unknown
//! falls back to the cascade too; a cascade entry may be another tree by
//! URL. Applied commits carry a lore Link: trailer.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mmci::host::paths::WorkDir;
use mmci::kernel::tree::{self, TreeSpec};
use mmci::series::{self, base};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

const VMSCAN: &str = "int a;\nint b;\nint c;\nint d;\nint e;\nint f;\n";

/// The upstream: (dir, mm-stable commit, mm-unstable commit).
fn upstream(dir: &Path) -> (String, String) {
    git(dir, &["init", "-q", "-b", "mm-stable"]);
    std::fs::create_dir_all(dir.join("mm")).unwrap();
    std::fs::write(
        dir.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 99\nSUBLEVEL = 0\n",
    )
    .unwrap();
    std::fs::write(dir.join("mm/vmscan.c"), VMSCAN).unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "base"]);
    let stable = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-qb", "mm-unstable"]);
    std::fs::write(
        dir.join("mm/vmscan.c"),
        VMSCAN.replace("int c;", "int c_unstable;"),
    )
    .unwrap();
    git(dir, &["commit", "-qam", "unstable change"]);
    let unstable = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "mm-stable"]);
    (stable, unstable)
}

/// One patch mail changing `from` into `to` in mm/vmscan.c.
fn patch_mail(id: &str, from: &str, to: &str, base_commit: Option<&str>) -> String {
    let old: Vec<&str> = from.lines().collect();
    let new: Vec<&str> = to.lines().collect();
    let mut hunk = String::new();
    for (o, n) in old.iter().zip(&new) {
        if o == n {
            hunk.push_str(&format!(" {o}\n"));
        } else {
            hunk.push_str(&format!("-{o}\n+{n}\n"));
        }
    }
    let trailer = base_commit
        .map(|c| format!("\nbase-commit: {c}\n"))
        .unwrap_or_default();
    format!(
        "From: A U Thor <a@example.org>\nSubject: [PATCH] mm/vmscan: rename\nMessage-ID: <{id}>\nDate: Tue, 1 Dec 2026 08:00:00 +0000\n\nRename a variable.\n\nSigned-off-by: A U Thor <a@example.org>\n---\ndiff --git a/mm/vmscan.c b/mm/vmscan.c\n--- a/mm/vmscan.c\n+++ b/mm/vmscan.c\n@@ -1,{n} +1,{n} @@\n{hunk}-- \n2.47.0\n{trailer}",
        n = old.len()
    )
}

/// `mmci --work-dir WORK series show ARGS SOURCE`.
fn series_show(work: &Path, args: &[&str], source: &Path) -> Output {
    common::bin_blocking()
        .arg("--work-dir")
        .arg(work)
        .args(["series", "show"])
        .args(args)
        .arg(source)
        .output()
        .unwrap()
}

/// A detached worktree of `repo` at `commit` in `dir`, and `git am` of `s`
/// there (scratch files beside it).
async fn apply_at(
    repo: &Path,
    commit: &str,
    s: &series::Series,
    dir: &Path,
) -> Result<PathBuf, mmci::kernel::apply::ApplyError> {
    git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            dir.to_str().unwrap(),
            commit,
        ],
    );
    mmci::kernel::apply::apply(
        dir,
        s,
        &dir.with_extension("am"),
        &dir.with_extension("am.log"),
    )
    .await?;
    Ok(dir.to_path_buf())
}

/// One mail as an mbox.
fn mbox_of(mail: &str) -> String {
    format!("From x Mon Sep 17 00:00:00 2001\n{mail}")
}

fn series_of(mail: &str) -> series::Series {
    series::assemble(&series::mails_from_mbox(mbox_of(mail).as_bytes()), "t").unwrap()
}

#[tokio::test]
async fn base_commit_then_cascade_on_a_two_branch_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("upstream");
    std::fs::create_dir_all(&up).unwrap();
    let (stable, unstable) = upstream(&up);
    let work = WorkDir::new(tmp.path().join("work"));
    let url = format!("file://{}", up.display());
    let tree = tree::fetch_tree(&TreeSpec::parse(&url, Some("mm-stable")).unwrap(), &work)
        .await
        .unwrap();
    assert_eq!(tree.commit, stable);
    let cascade = vec![
        base::Candidate {
            name: "mm-stable".into(),
            commit: stable.clone(),
        },
        base::Candidate {
            name: "mm-unstable".into(),
            commit: tree::resolve_ref(&tree.path, "mm-unstable").await.unwrap(),
        },
    ];
    let on_unstable = VMSCAN.replace("int c;", "int c_unstable;");
    let scratch = tmp.path().join("scratch");

    // base-commit only on mm-unstable: applied there.
    let s = series_of(&patch_mail(
        "1@example.org",
        &on_unstable,
        &on_unstable.replace("int e;", "int e2;"),
        Some(&unstable[..12]),
    ));
    let c = base::choose(&tree.path, &s, &cascade, &scratch)
        .await
        .unwrap();
    assert_eq!(
        (c.name.as_str(), c.commit.as_str()),
        ("base-commit", unstable.as_str())
    );
    assert_eq!(
        c.how,
        format!(
            "the series' base-commit: {}, the tip of mm-unstable",
            &unstable[..12]
        )
    );
    assert!(c.trusted, "the tip of a configured ref is trusted");

    // No base-commit; applies only on mm-unstable: the cascade's second.
    let s = series_of(&patch_mail(
        "2@example.org",
        &on_unstable,
        &on_unstable.replace("int c_unstable;", "int c_renamed;"),
        None,
    ));
    let c = base::choose(&tree.path, &s, &cascade, &scratch)
        .await
        .unwrap();
    assert_eq!(
        (c.name.as_str(), c.commit.as_str()),
        ("mm-unstable", unstable.as_str())
    );
    assert_eq!(
        c.how,
        "no base-commit: trailer; does not apply on mm-stable; applies on mm-unstable (cascade mm-stable > mm-unstable)"
    );

    // An unknown base-commit; applies on both: the configured tree.
    let s = series_of(&patch_mail(
        "3@example.org",
        VMSCAN,
        &VMSCAN.replace("int a;", "int a2;"),
        Some("0123456789ab"),
    ));
    let c = base::choose(&tree.path, &s, &cascade, &scratch)
        .await
        .unwrap();
    assert_eq!(c.name, "mm-stable");
    assert!(
        c.how
            .starts_with("base-commit: 0123456789ab is not in the tree; applies on mm-stable"),
        "{}",
        c.how
    );

    // Applies nowhere: every base tried is named.
    let s = series_of(&patch_mail("4@example.org", "x\n", "y\n", None));
    let e = base::choose(&tree.path, &s, &cascade, &scratch)
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("mm-stable: patch 1/1") && text.contains("mm-unstable: patch 1/1"),
        "{text}"
    );

    // `mmci series show --tree` names the base and why, for both kinds.
    for (id, from, to, trailer, want) in [
        (
            "6@example.org",
            on_unstable.clone(),
            on_unstable.replace("int e;", "int e3;"),
            Some(unstable.clone()),
            format!("base:      base-commit {unstable} (the series' base-commit: {unstable}, the tip of mm-unstable)"),
        ),
        (
            "7@example.org",
            on_unstable.clone(),
            on_unstable.replace("int c_unstable;", "int c3;"),
            None,
            format!("base:      mm-unstable {unstable} (no base-commit: trailer; does not apply on mm-stable; applies on mm-unstable (cascade mm-stable > mm-unstable))"),
        ),
    ] {
        let mbox = tmp.path().join(format!("{id}.mbox"));
        std::fs::write(
            &mbox,
            mbox_of(&patch_mail(id, &from, &to, trailer.as_deref())),
        )
        .unwrap();
        let out = series_show(work.root(), &["--tree", &url, "--ref", "mm-stable", "--base-cascade", "mm-unstable"], &mbox);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.lines().any(|l| l == want), "{text}");
    }

    // Another tree in the cascade, by URL: a "mainline" repository of its
    // own, unrelated to the upstream's history. A series that applies only
    // there is placed on its commit, fetched into the configured tree.
    let mainline = tmp.path().join("mainline");
    std::fs::create_dir_all(mainline.join("mm")).unwrap();
    git(&mainline, &["init", "-q", "-b", "master"]);
    let on_mainline = VMSCAN.replace("int b;", "int b_mainline;");
    std::fs::write(mainline.join("Makefile"), "VERSION = 7\n").unwrap();
    std::fs::write(mainline.join("mm/vmscan.c"), &on_mainline).unwrap();
    git(&mainline, &["add", "."]);
    git(&mainline, &["commit", "-qm", "mainline"]);
    let mainline_commit = git(&mainline, &["rev-parse", "HEAD"]);
    let mainline_entry = format!("file://{}#master", mainline.display());
    let mbox = tmp.path().join("8.mbox");
    std::fs::write(
        &mbox,
        mbox_of(&patch_mail(
            "8@example.org",
            &on_mainline,
            &on_mainline.replace("int b_mainline;", "int b8;"),
            None,
        )),
    )
    .unwrap();
    let out = series_show(
        work.root(),
        &[
            "--tree",
            &url,
            "--ref",
            "mm-stable",
            "--base-cascade",
            "mm-unstable",
            "--base-cascade",
            &mainline_entry,
        ],
        &mbox,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = format!("base:      {mainline_entry} {mainline_commit} (no base-commit: trailer; does not apply on mm-stable, mm-unstable; applies on {mainline_entry} (cascade mm-stable > mm-unstable > {mainline_entry}))");
    assert!(text.lines().any(|l| l == want), "{text}");
    // The configured tree's repository holds the commit now (the build
    // checks it out from there), under a ref of mmci's own.
    let mirror = tree.path.clone();
    let held = git(
        &mirror,
        &[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/mmci/cascade/",
        ],
    );
    assert_eq!(held, mainline_commit);
    // A URL that cannot be fetched is named.
    let unfetchable = [
        "--tree",
        url.as_str(),
        "--ref",
        "mm-stable",
        "--base-cascade",
        "file:///nonexistent/linux.git#master",
    ];
    let out = series_show(work.root(), &unfetchable, &mbox);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("file:///nonexistent/linux.git#master"),
        "{err}"
    );
    // ... but only when it is needed: a series that applies on the
    // configured ref never fetches the trees after it.
    let first = tmp.path().join("9.mbox");
    std::fs::write(
        &first,
        mbox_of(&patch_mail(
            "9@example.org",
            VMSCAN,
            &VMSCAN.replace("int d;", "int d9;"),
            None,
        )),
    )
    .unwrap();
    let out = series_show(work.root(), &unfetchable, &first);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("base:      mm-stable {stable}")),
        "{text}"
    );

    // Applied on its base with `git am`: the commit links to the mail on lore.
    let s = series_of(&patch_mail(
        "5@example.org",
        &on_unstable,
        &on_unstable.replace("int f;", "int f2;"),
        Some(&unstable),
    ));
    let checkout = apply_at(&up, &unstable, &s, &tmp.path().join("checkout"))
        .await
        .unwrap();
    let msg = git(
        &mmci::kernel::apply::applied_repo(&checkout.with_extension("am")),
        &["log", "-1", "--format=%B"],
    );
    assert!(
        msg.ends_with("Signed-off-by: A U Thor <a@example.org>\nLink: https://lore.kernel.org/r/5@example.org"),
        "{msg}"
    );
}

/// `git format-patch --base` on a series made on top of a patch that is not
/// in the base: its `prerequisite-patch-id:` names that patch, which is
/// found in the thread or in a given mbox and applied first, or named as
/// missing.
#[tokio::test]
async fn prerequisites_are_found_by_patch_id_and_applied_first() {
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("upstream");
    std::fs::create_dir_all(&up).unwrap();
    let (stable, _) = upstream(&up);
    // The author's own branch: the prerequisite, then the series on it.
    let dev = tmp.path().join("dev");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "-b",
            "mm-stable",
            up.to_str().unwrap(),
            dev.to_str().unwrap(),
        ],
    );
    std::fs::write(
        dev.join("mm/vmscan.c"),
        VMSCAN.replace("int a;", "int a_pre;"),
    )
    .unwrap();
    git(&dev, &["commit", "-qam", "mm/vmscan: the prerequisite"]);
    let pre = git(&dev, &["rev-parse", "HEAD"]);
    std::fs::write(
        dev.join("mm/vmscan.c"),
        VMSCAN.replace("int a;", "int a_series;"),
    )
    .unwrap();
    git(&dev, &["commit", "-qam", "mm/vmscan: the series"]);
    let out = tmp.path().join("out");
    git(
        &dev,
        &[
            "format-patch",
            "-q",
            "--cover-letter",
            "--thread",
            "--base",
            &stable,
            "-o",
            out.to_str().unwrap(),
            &format!("{pre}..HEAD"),
        ],
    );
    git(
        &dev,
        &[
            "format-patch",
            "-q",
            "-1",
            &pre,
            "-o",
            tmp.path().join("pre").to_str().unwrap(),
        ],
    );
    let pre_mbox = std::fs::read_dir(tmp.path().join("pre"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let work = tmp.path().join("work");
    let show = |extra: &[&str]| {
        let o = series_show(&work, extra, &out);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.status.success(), "{text}");
        text
    };
    // Without the prerequisite at hand: named as missing, with the option.
    let text = show(&[]);
    let missing_line = text
        .lines()
        .find(|l| l.starts_with("prerequisite: "))
        .unwrap_or_default()
        .to_string();
    assert!(
        missing_line.ends_with("not found in the thread (give it with --prerequisites MBOX)"),
        "{text}"
    );
    // Given: applied first.
    let text = show(&["--prerequisites", pre_mbox.to_str().unwrap()]);
    assert!(
        text.contains("prerequisite: applied first: [PATCH] mm/vmscan: the prerequisite\n"),
        "{text}"
    );
    // The same in one mbox with the series (as when both are in a thread).
    let together = tmp.path().join("together.mbox");
    let mut bytes = std::fs::read(&pre_mbox).unwrap();
    for f in std::fs::read_dir(&out).unwrap() {
        bytes.extend(std::fs::read(f.unwrap().path()).unwrap());
    }
    std::fs::write(&together, &bytes).unwrap();
    let s = series::load_with(
        &series::SeriesSpec::Mbox(together.clone()),
        &Default::default(),
        &Default::default(),
        &tmp.path().join("store"),
    )
    .await
    .unwrap();
    assert_eq!(s.patches.len(), 1, "{s:?}");
    assert_eq!(s.prerequisites.len(), 1, "{s:?}");
    assert!(s.missing_prerequisites.is_empty());
    assert!(!s
        .left_out
        .iter()
        .any(|l| l.subject.contains("the prerequisite")));

    // Applied on the base with git am: the prerequisite, then the series.
    let checkout = apply_at(&up, &stable, &s, &tmp.path().join("checkout"))
        .await
        .unwrap();
    let log = git(
        &mmci::kernel::apply::applied_repo(&checkout.with_extension("am")),
        &["log", "--format=%s", &format!("{stable}..HEAD")],
    );
    assert_eq!(log, "mm/vmscan: the series\nmm/vmscan: the prerequisite");
    // Without it, the series does not apply on the base, and the refusal
    // names the missing prerequisite.
    let alone = series::load_with(
        &series::SeriesSpec::PatchDir(out.clone()),
        &Default::default(),
        &Default::default(),
        &tmp.path().join("store"),
    )
    .await
    .unwrap();
    let e = apply_at(&up, &stable, &alone, &tmp.path().join("checkout2"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("patch 1/1 (mm/vmscan: the series) does not apply"),
        "{e}"
    );
    assert!(
        e.contains("not found in the thread: give the patch(es) with --prerequisites MBOX"),
        "{e}"
    );
}

/// Issue 50, C1: a series must not pick the trusted baseline. A commit in
/// the tree's object store that no fetched ref reaches (what `git am` left
/// for an earlier series, or `git commit-tree` here) is ignored as a
/// `base-commit:`, through `mmci series show` too; an ancestor of a fetched
/// ref is used but marked untrusted; and applying a series leaves none of
/// its commits in the tree's store, so the second series of the review's
/// attack cannot even name the first's head.
#[tokio::test]
async fn a_series_cannot_name_a_commit_no_fetched_ref_reaches() {
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("upstream");
    std::fs::create_dir_all(&up).unwrap();
    let (stable, unstable) = upstream(&up);
    let work = WorkDir::new(tmp.path().join("work"));
    let url = format!("file://{}", up.display());
    let tree = tree::fetch_tree(&TreeSpec::parse(&url, Some("mm-stable")).unwrap(), &work)
        .await
        .unwrap();
    let cascade = vec![base::Candidate {
        name: "mm-stable".into(),
        commit: stable.clone(),
    }];
    let scratch = tmp.path().join("scratch");

    // The review's probe: a commit object in the tree's store that no ref
    // names, on top of mm-stable (as git am leaves its commits).
    let stray_tree = git(&tree.path, &["rev-parse", &format!("{stable}^{{tree}}")]);
    let stray = git(
        &tree.path,
        &["commit-tree", &stray_tree, "-p", &stable, "-m", "planted"],
    );
    assert_eq!(
        git(&tree.path, &["for-each-ref", "--contains", &stray]),
        "",
        "no ref reaches it"
    );
    let s = series_of(&patch_mail(
        "20@example.org",
        VMSCAN,
        &VMSCAN.replace("int a;", "int a20;"),
        Some(&stray[..12]),
    ));
    let c = base::choose(&tree.path, &s, &cascade, &scratch)
        .await
        .unwrap();
    assert_eq!(
        (c.name.as_str(), c.commit.as_str()),
        ("mm-stable", stable.as_str())
    );
    assert!(c.trusted);
    assert!(
        c.how.starts_with(&format!(
            "base-commit: {} is in the tree's objects but no fetched ref reaches it",
            &stray[..12]
        )),
        "{}",
        c.how
    );
    // The same through the binary.
    let mbox = tmp.path().join("20.mbox");
    std::fs::write(
        &mbox,
        mbox_of(&patch_mail(
            "20@example.org",
            VMSCAN,
            &VMSCAN.replace("int a;", "int a20;"),
            Some(&stray[..12]),
        )),
    )
    .unwrap();
    let out = series_show(work.root(), &["--tree", &url, "--ref", "mm-stable"], &mbox);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let base_line = text
        .lines()
        .find(|l| l.starts_with("base:"))
        .unwrap_or_default();
    assert!(
        base_line.starts_with(&format!("base:      mm-stable {stable} (base-commit: {} is in the tree's objects but no fetched ref reaches it", &stray[..12])),
        "{text}"
    );

    // An ancestor of a fetched ref: used (the series was written there),
    // but not trusted, so its build takes private objects. mm-unstable's
    // parent is mm-stable: with only mm-unstable configured, mm-stable is
    // such an ancestor.
    let only_unstable = vec![base::Candidate {
        name: "mm-unstable".into(),
        commit: unstable.clone(),
    }];
    let s = series_of(&patch_mail(
        "21@example.org",
        VMSCAN,
        &VMSCAN.replace("int a;", "int a21;"),
        Some(&stable),
    ));
    let c = base::choose(&tree.path, &s, &only_unstable, &scratch)
        .await
        .unwrap();
    assert_eq!(
        (c.name.as_str(), c.commit.as_str()),
        ("base-commit", stable.as_str())
    );
    assert!(
        !c.trusted,
        "an ancestor is not a tip the operator configured"
    );
    assert!(c.how.contains("an ancestor of mm-unstable"), "{}", c.how);

    // git am's commits stay out of the tree's store: the first series'
    // head cannot be resolved there, so a second series naming it as its
    // base-commit is placed by the cascade; and the tree still fetches
    // (a worktree HEAD on a missing object would break every fetch).
    git(
        &tree.path,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            tmp.path().join("co").to_str().unwrap(),
            &stable,
        ],
    );
    let first = series_of(&patch_mail(
        "22@example.org",
        VMSCAN,
        &VMSCAN.replace("int b;", "int b22;"),
        None,
    ));
    let applied = mmci::kernel::apply::apply(
        &tmp.path().join("co"),
        &first,
        &tmp.path().join("co.am"),
        &tmp.path().join("co.log"),
    )
    .await
    .unwrap();
    assert_ne!(applied.head, stable);
    let in_store = Command::new("git")
        .arg("-C")
        .arg(&tree.path)
        .args(["cat-file", "-e", &format!("{}^{{commit}}", applied.head)])
        .status()
        .unwrap();
    assert!(
        !in_store.success(),
        "the applied head entered the tree's object store"
    );
    assert_eq!(
        git(&tmp.path().join("co"), &["rev-parse", "HEAD"]),
        stable,
        "the checkout's HEAD stays at the base"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("co/mm/vmscan.c")).unwrap(),
        VMSCAN.replace("int b;", "int b22;"),
        "the checkout has the series' files"
    );
    let second = series_of(&patch_mail(
        "23@example.org",
        VMSCAN,
        &VMSCAN.replace("int c;", "int c23;"),
        Some(&applied.head[..12]),
    ));
    let c = base::choose(&tree.path, &second, &cascade, &scratch)
        .await
        .unwrap();
    assert_eq!((c.name.as_str(), c.trusted), ("mm-stable", true));
    assert!(c.how.contains("is not in the tree"), "{}", c.how);
    git(&up, &["commit", "-q", "--allow-empty", "-m", "later"]);
    git(&tree.path, &["fetch", "-q", &url, "mm-stable"]);
}

/// Issue 50, M2: the review's probe through the binary. Two patches that
/// differ only in `\` against `\  ` at a Makefile line's end (make reads
/// the second as no continuation) get two series hashes, so two build keys
/// and two `watch` dedup keys.
#[test]
fn trailing_whitespace_makes_another_series_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let mail = |tail: &str| {
        format!(
            "From x Mon Sep 17 00:00:00 2001\nFrom: A <a@example.org>\nSubject: [PATCH] mm: b\nMessage-ID: <1@example.org>\nDate: Tue, 1 Dec 2026 08:00:00 +0000\n\nAdd b.\n---\ndiff --git a/mm/Makefile b/mm/Makefile\n--- a/mm/Makefile\n+++ b/mm/Makefile\n@@ -1 +1,2 @@\n-obj-y += a.o\n+obj-y += a.o \\{tail}\n+\tb.o\n"
        )
    };
    let mut hashes = Vec::new();
    for (name, tail) in [("plain.mbox", ""), ("spaces.mbox", "  ")] {
        let path = tmp.path().join(name);
        std::fs::write(&path, mail(tail)).unwrap();
        let out = series_show(&tmp.path().join("work"), &["--json"], &path);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        hashes.push(json["hash"].as_str().unwrap().to_string());
    }
    assert_eq!(hashes[0].len(), 64);
    assert_ne!(hashes[0], hashes[1]);
}
