//! Build checkouts: one git worktree per tree and slot, reset to the
//! tree's commit (keeping the mtimes of what did not change), and the refs
//! and HEAD read back from them.

use std::path::{Path, PathBuf};

use super::*;

/// A reusable checkout of `tree` for builds, reset to `tree.commit`:
/// created once as a git worktree, later switched with `git checkout`, which
/// rewrites only the files that differ (make then rebuilds only those).
/// With `objs`, the baseline object dir, the files the reset rewrote back to
/// the content that dir was last built from get that build's time
/// (mtime.rs), so that they do not look changed to make.
pub async fn prepare_checkout(
    tree: &SourceTree,
    slot: &str,
    work: &WorkDir,
    log: &Path,
    objs: Option<&Path>,
) -> Result<PathBuf, TreeError> {
    let dir = work.checkouts();
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let path = checkout_path(tree, slot, work);
    let fail = |source| TreeError::Checkout {
        path: path.clone(),
        source,
    };
    if !path.join(".git").exists() {
        let _ = std::fs::remove_dir_all(&path);
        // Forget worktrees whose directories were deleted by hand; `-f -f`
        // below also takes over one left locked by an interrupted `add`.
        process::run_logged(
            git(&tree.path).args(["worktree", "prune"]),
            log,
            "git worktree prune",
        )
        .await
        .map_err(fail)?;
        process::run_logged(
            git(&tree.path)
                .args(["worktree", "add", "-q", "-f", "-f", "--detach"])
                .arg(&path)
                .arg(&tree.commit),
            log,
            "git worktree add",
        )
        .await
        .map_err(fail)?;
        return Ok(path);
    }
    // A git killed with -9 (mmci's group killed mid-checkout) leaves its
    // index.lock, and every later git here fails on it. The caller holds
    // this checkout's slot lock, so no live git of ours owns it.
    if let Some(lock) = worktree_index_lock(&path) {
        let _ = std::fs::remove_file(lock);
    }
    // A previous failed `git am` may have left its state behind.
    let _ = process::output(
        git(&path).args(["am", "--abort"]),
        "git am --abort",
        Limits::LOCAL,
    )
    .await;
    let rewritten = match objs {
        Some(_) => crate::kernel::mtime::off_commit(&path, &tree.commit).await,
        None => vec![],
    };
    process::run_logged(
        git(&path).args(["checkout", "-q", "-f", "--detach", &tree.commit]),
        log,
        "git checkout",
    )
    .await
    .map_err(fail)?;
    // -ff: also untracked nested repositories, which a single -f keeps
    // (an untrusted build's leftovers must not reach the next build).
    process::run_logged(git(&path).args(["clean", "-ffdxq"]), log, "git clean")
        .await
        .map_err(fail)?;
    if let Some(objs) = objs.filter(|_| !rewritten.is_empty()) {
        let kept = crate::kernel::mtime::restore(&path, &rewritten, objs, &tree.commit);
        let line = format!(
            "==> {} of {} files the checkout rewrote have the time of the baseline build of {}\n",
            kept,
            rewritten.len(),
            objs.display()
        );
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
    Ok(path)
}

/// The index.lock of the linked worktree at `checkout`: its `.git` file
/// names the worktree's git dir (`gitdir: <repo>/.git/worktrees/<name>`).
fn worktree_index_lock(checkout: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(checkout.join(".git")).ok()?;
    let dir = text.lines().next()?.strip_prefix("gitdir: ")?.trim();
    Some(checkout.join(dir).join("index.lock"))
}

/// Where [`prepare_checkout`] keeps the checkout of `tree` for `slot`.
pub fn checkout_path(tree: &SourceTree, slot: &str, work: &WorkDir) -> PathBuf {
    work.checkouts().join(format!("{}-{slot}", tree.name))
}

/// The commit a branch, tag or commit id names in `repo`.
pub async fn resolve_ref(repo: &Path, r: &str) -> Option<String> {
    if r.starts_with('-') {
        return None;
    }
    let out = process::output(
        git(repo).args(["rev-parse", "--verify", "-q", &format!("{r}^{{commit}}")]),
        "git rev-parse",
        Limits::QUICK,
    )
    .await
    .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit at HEAD of a checkout.
pub async fn head(checkout: &Path) -> Result<String, TreeError> {
    let out = process::output(
        git(checkout).args(["rev-parse", "HEAD"]),
        "git rev-parse HEAD",
        Limits::QUICK,
    )
    .await
    .map_err(git_err(checkout))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::tree::tests::sh;

    #[test]
    fn a_worktrees_index_lock_is_found_through_its_git_file() {
        let tmp = tempfile::tempdir().unwrap();
        let checkout = tmp.path().join("co");
        std::fs::create_dir_all(&checkout).unwrap();
        assert_eq!(worktree_index_lock(&checkout), None, "no .git file");
        std::fs::write(checkout.join(".git"), "gitdir: /r/.git/worktrees/co\n").unwrap();
        assert_eq!(
            worktree_index_lock(&checkout),
            Some(PathBuf::from("/r/.git/worktrees/co/index.lock"))
        );
        std::fs::write(checkout.join(".git"), "gitdir: ../r/.git/worktrees/co\n").unwrap();
        assert_eq!(
            worktree_index_lock(&checkout),
            Some(checkout.join("../r/.git/worktrees/co/index.lock"))
        );
        std::fs::write(checkout.join(".git"), "not a git file\n").unwrap();
        assert_eq!(worktree_index_lock(&checkout), None);
    }

    /// What a build leaves in the shared checkout, nested repositories
    /// included, is gone after the next prepare_checkout.
    #[tokio::test]
    async fn prepare_checkout_removes_nested_repositories() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src/linux-tiny");
        std::fs::create_dir_all(src.join("mm")).unwrap();
        std::fs::write(
            src.join("Makefile"),
            "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n",
        )
        .unwrap();
        let tarball = tmp.path().join("linux-tiny.tar.xz");
        sh(tmp.path(), "tar -cJf linux-tiny.tar.xz -C src linux-tiny");
        let work = WorkDir::new(tmp.path().join("w"));
        let tree = import_tarball(&tarball, &work).await.unwrap();
        let log = tmp.path().join("log");
        let checkout = prepare_checkout(&tree, "slot", &work, &log, None)
            .await
            .unwrap();
        let nested = checkout.join("mm/planted");
        std::fs::create_dir_all(&nested).unwrap();
        sh(
            &nested,
            "git init -q . && echo 'obj-y += evil.o' > Makefile && touch ../untracked.c",
        );
        let again = prepare_checkout(&tree, "slot", &work, &log, None)
            .await
            .unwrap();
        assert_eq!(again, checkout);
        assert!(!nested.exists(), "the nested repository survived");
        assert!(!checkout.join("mm/untracked.c").exists());
        assert!(checkout.join("Makefile").is_file());
    }
}
