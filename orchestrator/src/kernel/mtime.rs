//! Modification times of a shared checkout, so that make rebuilds what
//! changed and no more.
//!
//! Every build on one baseline object dir shares one checkout (tree/checkout.rs,
//! build.rs: one per tree, arch and configuration). Applying a
//! series and later switching back to the base rewrites the series' files,
//! whose mtimes then say "changed" although their content is again the one
//! the baseline's objects were built from. One header a series touched
//! (include/linux/mmzone.h) made every later patched build a full one:
//! 1,165 files compiled for a one-line comment in mm/vmscan.c.
//!
//! So the baseline's object dir records which commit it was last built from,
//! in a file written just before that build's make (its mtime is the
//! build's start). When the checkout goes back to that commit, the files it
//! rewrote get that time: every object built from that content is newer (it
//! was made after), every object built from other content is older (so it
//! is still rebuilt). Without the record, or for another commit, the
//! rewritten files keep their new mtimes, as before.
//!
//! A series builds in a copy of the baseline's object dir (build.rs). The
//! kernel's own objects name their dir relatively, but objtool's build
//! under tools/ writes absolute paths into its `.cmd` files; in the copy
//! those named the baseline's dir, so objtool was rebuilt, and every object
//! objtool checks (all of them) after it. [`repoint_cmd_files`] makes them
//! name the copy.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::host::process::{self, Limits};

/// In an object dir: the commit its objects were last built from.
const BUILT_FROM: &str = ".mmci-built-from";

/// The files of `checkout` whose content differs from `commit` (committed
/// on top of it or not), as paths relative to the checkout. Empty when there
/// is no checkout yet or git cannot say: this only saves work.
pub async fn off_commit(checkout: &Path, commit: &str) -> Vec<PathBuf> {
    if !checkout.join(".git").exists() {
        return vec![];
    }
    let out = process::output(
        tokio::process::Command::new("git")
            .arg("-C")
            .arg(checkout)
            .args(["diff", "--no-renames", "--name-only", "-z", commit, "--"]),
        "git diff --name-only",
        Limits::LOCAL,
    )
    .await;
    match out {
        Ok(o) if o.status.success() => parse_names(&o.stdout),
        _ => vec![],
    }
}

/// NUL-separated names, as `git diff -z --name-only` prints them.
fn parse_names(stdout: &[u8]) -> Vec<PathBuf> {
    stdout
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| PathBuf::from(String::from_utf8_lossy(n).into_owned()))
        .collect()
}

/// Records that `objs` is about to be built from `commit`'s files.
pub fn mark_built_from(objs: &Path, commit: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(objs)?;
    // Atomic, and so never through a symlink a build left at the name.
    crate::host::fs::write_atomic(&objs.join(BUILT_FROM), format!("{commit}\n").as_bytes())
}

/// When `objs` was last built from `commit`: the time its build started.
fn built_from_at(objs: &Path, commit: &str) -> Option<SystemTime> {
    let path = objs.join(BUILT_FROM);
    let text = std::fs::read_to_string(&path).ok()?;
    (text.trim() == commit)
        .then(|| std::fs::metadata(&path).ok()?.modified().ok())
        .flatten()
}

/// Gives `files` of `checkout` (just reset to `commit`) the start time of
/// the last build of `objs` from `commit`, if there was one; how many it
/// set. Symlinks and files the reset removed are left alone.
pub fn restore(checkout: &Path, files: &[PathBuf], objs: &Path, commit: &str) -> usize {
    let Some(at) = built_from_at(objs, commit) else {
        return 0;
    };
    files
        .iter()
        .map(|f| checkout.join(f))
        .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_file()))
        .filter(|p| {
            std::fs::File::open(p)
                .and_then(|f| f.set_modified(at))
                .is_ok()
        })
        .count()
}

/// Rewrites `from` to `to` in every `.*.cmd` file under `dir` (a copy of
/// an object dir's tools/ made at `to` from `from`), keeping each file's
/// mtime; how many it rewrote. No `dir`: nothing to do.
pub fn repoint_cmd_files(dir: &Path, from: &Path, to: &Path) -> std::io::Result<usize> {
    if !dir.is_dir() {
        return Ok(0);
    }
    let (from, to) = (from.to_string_lossy(), to.to_string_lossy());
    let mut rewritten = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !kind.is_file() || !name.starts_with('.') || !name.ends_with(".cmd") {
                continue;
            }
            let text = std::fs::read_to_string(&path)?;
            if !text.contains(from.as_ref()) {
                continue;
            }
            let mtime = entry.metadata()?.modified()?;
            std::fs::write(&path, text.replace(from.as_ref(), to.as_ref()))?;
            std::fs::File::open(&path)?.set_modified(mtime)?;
            rewritten += 1;
        }
    }
    Ok(rewritten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_cmd_files_name_the_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (base, copy) = (tmp.path().join("objs"), tmp.path().join("objs.series-1"));
        let sub = copy.join("tools/objtool/libsubcmd");
        std::fs::create_dir_all(&sub).unwrap();
        let cmd = sub.join(".help.o.cmd");
        let text = |dir: &Path| {
            format!(
                "cmd_{d}/tools/objtool/libsubcmd/help.o := gcc -o {d}/tools/objtool/libsubcmd/help.o\n",
                d = dir.display()
            )
        };
        std::fs::write(&cmd, text(&base)).unwrap();
        std::fs::write(sub.join("help.o"), base.display().to_string()).unwrap();
        std::fs::write(sub.join(".other.o.cmd"), "cmd_x := gcc x.c\n").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::open(&cmd)
            .unwrap()
            .set_modified(old)
            .unwrap();

        let n = repoint_cmd_files(&copy.join("tools"), &base, &copy).unwrap();
        assert_eq!(n, 1);
        assert_eq!(std::fs::read_to_string(&cmd).unwrap(), text(&copy));
        assert_eq!(std::fs::metadata(&cmd).unwrap().modified().unwrap(), old);
        assert_eq!(
            std::fs::read_to_string(sub.join("help.o")).unwrap(),
            base.display().to_string(),
            "objects are not touched"
        );
        assert_eq!(
            repoint_cmd_files(&tmp.path().join("none"), &base, &copy).unwrap(),
            0
        );
    }

    #[test]
    fn names_from_git_diff() {
        let cases: [(&[u8], &[&str]); 3] = [
            (b"", &[]),
            (b"mm/vmscan.c\0", &["mm/vmscan.c"]),
            (
                b"include/linux/mmzone.h\0mm/a b.c\0",
                &["include/linux/mmzone.h", "mm/a b.c"],
            ),
        ];
        for (out, want) in cases {
            let got = parse_names(out);
            let want: Vec<PathBuf> = want.iter().map(PathBuf::from).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn rewritten_files_get_the_base_build_time_only_for_its_commit() {
        let tmp = tempfile::tempdir().unwrap();
        let (checkout, objs) = (tmp.path().join("co"), tmp.path().join("objs"));
        std::fs::create_dir_all(checkout.join("mm")).unwrap();
        let file = checkout.join("mm/vmscan.c");
        let link = checkout.join("mm/link.c");
        std::fs::write(&file, "x").unwrap();
        std::os::unix::fs::symlink("vmscan.c", &link).unwrap();
        let files = [
            PathBuf::from("mm/vmscan.c"),
            PathBuf::from("mm/link.c"),
            PathBuf::from("mm/gone.c"),
        ];
        assert_eq!(restore(&checkout, &files, &objs, "abc"), 0, "no record");

        mark_built_from(&objs, "abc").unwrap();
        let marked = std::fs::metadata(objs.join(BUILT_FROM))
            .unwrap()
            .modified()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&file, "x").unwrap();
        assert!(std::fs::metadata(&file).unwrap().modified().unwrap() > marked);

        assert_eq!(
            restore(&checkout, &files, &objs, "def"),
            0,
            "another commit"
        );
        assert_eq!(restore(&checkout, &files, &objs, "abc"), 1);
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            marked
        );
    }
}
