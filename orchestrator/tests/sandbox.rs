//! Trust boundaries through the real `mmci` binary: a tree URL, ref or
//! cascade entry that git would read as an option is refused before git
//! runs (probes 27-29 of the security review); credentials in a tree URL
//! never show; without a working build sandbox a series is not built
//! unless `--unsandboxed-builds`, and `doctor` fails naming why. The
//! sandbox's own walls are tested in `kernel::build`'s unit tests (as root
//! and as uid 65534).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mmci::error::exit;

mod common;

fn mmci(work: &Path, args: &[&str], path: Option<&Path>) -> Output {
    let mut cmd = common::bin_blocking();
    cmd.args(args).env("MMCI_WORK_DIR", work);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A one-patch series for the tiny tree of [`tiny_tarball`].
fn tiny_series(dir: &Path) -> PathBuf {
    let mbox = common::mbox::OnePatch {
        author: "Mallory <mallory@example.org>",
        date: "Mon, 30 Nov 2026 10:00:00 +0000",
        title: "mm: tweak",
        message_id: "tiny@example.org",
        message: "Changes the tiny tree.",
        file: "mm/vmscan.c",
        hunk: "@@ -1 +1 @@\n-int x;\n+int y;\n",
    }
    .mbox();
    let path = dir.join("tiny.mbox");
    std::fs::write(&path, mbox).unwrap();
    path
}

/// A kernel-shaped tree whose Makefile says it ran and fails: a build
/// that gets past the sandbox check ends at `make tinyconfig` (exit 4).
fn tiny_tarball(dir: &Path) -> PathBuf {
    let src = dir.join("src/linux-tiny");
    std::fs::create_dir_all(src.join("mm")).unwrap();
    std::fs::write(
        src.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\nEXTRAVERSION =\ntinyconfig:\n\t@echo tiny-make-ran\n\t@false\n",
    )
    .unwrap();
    std::fs::write(src.join("mm/vmscan.c"), "int x;\n").unwrap();
    let tarball = dir.join("linux-tiny.tar.xz");
    let st = Command::new("tar")
        .arg("-cJf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir.join("src"))
        .arg("linux-tiny")
        .status()
        .unwrap();
    assert!(st.success());
    tarball
}

/// A PATH with every program of this one but bwrap, plus `extra`
/// (name, shell script) programs.
fn path_without_bwrap(dir: &Path, extra: &[(&str, &str)]) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for d in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name();
            let link = bin.join(&name);
            if name != "bwrap" && !link.exists() && link.symlink_metadata().is_err() {
                std::os::unix::fs::symlink(e.path(), link).unwrap();
            }
        }
    }
    for (name, script) in extra {
        let p = bin.join(name);
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// Probe 28: `--tree=--upload-pack=CMD` ran CMD on the host (exit 7, the
/// file created). Now every way a URL or ref reaches git is refused with
/// the option named, exit 2, and nothing runs.
#[test]
fn option_like_tree_urls_and_refs_are_refused_before_git_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let series = tiny_series(tmp.path());
    let marker = tmp.path().join("PWNED");
    let cmd = format!("touch {};false", marker.display());
    let series_arg = series.to_str().unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![format!("--tree=--upload-pack={cmd}")],
            "--tree: tree URL `--upload-pack=touch",
        ),
        (
            vec![
                "--tree=https://example.org/linux.git".into(),
                format!("--ref=--upload-pack={cmd}"),
            ],
            "--ref: ref `--upload-pack=touch",
        ),
        (
            vec![
                "--tree=https://example.org/linux.git".into(),
                format!("--base-cascade=--upload-pack={cmd}"),
            ],
            "--base-cascade: ref `--upload-pack=touch",
        ),
        (
            vec![
                "--tree=https://example.org/linux.git".into(),
                format!("--base-cascade=file:///srv/x.git#--upload-pack={cmd}"),
            ],
            "--base-cascade: ref `--upload-pack=touch",
        ),
        (
            vec![format!("--tree=ext::sh -c touch% {}", marker.display())],
            "remote helpers) are not allowed",
        ),
        (
            vec!["--tree=ssh://example.org/linux.git".into()],
            "the ssh:// transport is not allowed",
        ),
    ];
    for (options, want) in cases {
        let mut args = vec!["series", "show"];
        args.extend(options.iter().map(String::as_str));
        args.push(series_arg);
        let o = mmci(&work, &args, None);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(exit::USAGE), "{options:?}: {out}");
        assert!(out.contains(want), "{options:?}: {out}");
        assert!(
            out.contains("give an https://") || out.contains("give a branch"),
            "{out}"
        );
        assert!(!marker.exists(), "{options:?} ran a command");
    }

    // A matrix's `tree:` and `ref:` get the same check, with file and line.
    let matrix = tmp.path().join("inject.yaml");
    for (kernel, want) in [
        (
            format!("{{name: p, tree: \"--upload-pack={cmd}\"}}"),
            "kernel `p`: `tree`: tree URL `--upload-pack=touch",
        ),
        (
            format!(
                "{{name: p, tree: \"https://example.org/x.git\", ref: \"--output={}\"}}",
                marker.display()
            ),
            "kernel `p`: `ref`: ref `--output=",
        ),
    ] {
        std::fs::write(
            &matrix,
            format!("axes:\n  threads: [1]\nkernels:\n  - name: base\n  - {kernel}\n"),
        )
        .unwrap();
        let o = mmci(&work, &["matrix", "show", matrix.to_str().unwrap()], None);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(exit::USAGE), "{out}");
        assert!(out.contains("inject.yaml: line 5"), "{out}");
        assert!(out.contains(want), "{out}");
    }
    assert!(!marker.exists());
}

/// L8: a token in a tree URL is in no message, log or file mmci writes;
/// git gets it from a credential helper, not its command line.
#[test]
fn credentials_in_tree_urls_never_show() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let series = tiny_series(tmp.path());
    let secret = "ghp_urlsecret0123456789";
    // Port 9 (discard) on localhost: the fetch fails at once.
    let url = format!("https://x-access-token:{secret}@127.0.0.1:9/o/linux.git");
    let o = mmci(
        &work,
        &["series", "show", "--tree", &url, series.to_str().unwrap()],
        None,
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(exit::FETCH), "{out}");
    assert!(out.contains("https://***@127.0.0.1:9/o/linux.git"), "{out}");
    assert!(!out.contains(secret), "{out}");
    let leaked = Command::new("grep")
        .args(["-rl", secret])
        .arg(&work)
        .output()
        .unwrap();
    assert!(
        leaked.stdout.is_empty(),
        "the token is in {}",
        String::from_utf8_lossy(&leaked.stdout)
    );

    let matrix = tmp.path().join("m.yaml");
    std::fs::write(
        &matrix,
        format!(
            "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - {{name: c, tree: \"{url}\"}}\n"
        ),
    )
    .unwrap();
    let o = mmci(&work, &["matrix", "show", matrix.to_str().unwrap()], None);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("https://***@127.0.0.1:9/o/linux.git"), "{out}");
    assert!(!out.contains(secret), "{out}");
}

/// H3: where the sandbox cannot run (here: no bwrap on PATH), a series is
/// not built: exit 3, the reason and the fix. `--unsandboxed-builds` lets
/// it through (to the tiny tree's failing make), and the tarball's own
/// base build may go on without.
#[test]
fn without_a_sandbox_no_series_is_built() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let tarball = tiny_tarball(tmp.path());
    let series = tiny_series(tmp.path());
    let path = path_without_bwrap(tmp.path(), &[]);
    let build = |extra: &[&str]| {
        let mut args = vec![
            "kernel",
            "build",
            "--arch",
            "x86_64",
            "--jobs",
            "1",
            "--tarball",
            tarball.to_str().unwrap(),
        ];
        args.extend(extra);
        mmci(&work, &args, Some(&path))
    };

    let o = build(&["--series", series.to_str().unwrap()]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(exit::ENVIRONMENT), "{out}");
    for want in [
        "refusing to build series v1-",
        "without the build sandbox: bwrap (bubblewrap) is not installed",
        "Fix: install it with ./mmci-setup",
        "--unsandboxed-builds",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert!(!out.contains("tiny-make-ran"));

    let o = build(&["--series", series.to_str().unwrap(), "--unsandboxed-builds"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(exit::BUILD), "{out}");
    assert!(!out.contains("refusing"), "{out}");

    let o = build(&[]);
    let out = text(&o);
    assert_eq!(
        o.status.code(),
        Some(exit::BUILD),
        "the base build ran: {out}"
    );
    assert!(out.contains("building without the sandbox"), "{out}");
}

/// `mmci doctor` fails when the sandbox cannot run, with bwrap's own words:
/// here a bwrap that fails as Ubuntu's AppArmor userns restriction makes it.
#[test]
fn doctor_fails_without_a_working_sandbox() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let line = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.contains("build sandbox"))
            .unwrap_or_default()
            .to_string()
    };
    let broken = path_without_bwrap(
        tmp.path(),
        &[(
            "bwrap",
            "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
        )],
    );
    let o = mmci(&work, &["doctor"], Some(&broken));
    assert_eq!(o.status.code(), Some(exit::ENVIRONMENT), "{}", text(&o));
    let l = line(&o);
    assert!(l.starts_with("MISSING build sandbox (bwrap)"), "{l}");
    assert!(
        l.contains("setting up uid map: Permission denied") && l.contains("fix: "),
        "{l}"
    );

    // This machine's own bwrap: the line is ok (the rest of the report
    // depends on what else it has).
    let o = mmci(&work, &["doctor"], None);
    let l = line(&o);
    assert!(
        l.starts_with("ok      build sandbox (bwrap)"),
        "{l}\n{}",
        text(&o)
    );
    assert!(l.contains("uid 65534") && l.contains("no network"), "{l}");
}
