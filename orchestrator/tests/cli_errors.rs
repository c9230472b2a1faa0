//! Bad input on the command line: one-line errors that name the culprit and
//! the fix, with the documented exit codes. None of these boots a guest.

mod common;

use std::process::Output;

use mmci::error::exit;

fn mmci(args: &[&str], path_env: Option<&str>) -> Output {
    let work = tempfile::tempdir().unwrap();
    let mut cmd = common::bin_blocking();
    cmd.args(args).env("MMCI_WORK_DIR", work.path());
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn unknown_guest_parameter() {
    let results = tempfile::tempdir().unwrap();
    let o = mmci(
        &[
            "run",
            "--results",
            results.path().to_str().unwrap(),
            "--set",
            "treads=64",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("command line: --set treads=64: unknown key `treads`; known keys: arch, vcpus, memory_mb, swap_mb, scenario, threads"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn missing_kernel_image() {
    let results = tempfile::tempdir().unwrap();
    let o = mmci(
        &[
            "run",
            "--results",
            results.path().to_str().unwrap(),
            "--kernel",
            "/nonexistent/bzImage",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("kernel image /nonexistent/bzImage not found (--kernel)"),
        "{err}"
    );
    assert!(err.lines().last().unwrap().starts_with("mmci: error:"));
}

#[test]
fn missing_qemu() {
    let results = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let o = mmci(
        &["run", "--results", results.path().to_str().unwrap()],
        Some(empty.path().to_str().unwrap()),
    );
    assert_eq!(o.status.code(), Some(exit::ENVIRONMENT), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("qemu-system-x86_64 not found on PATH: install QEMU with ./mmci-setup"),
        "{err}"
    );
}

#[test]
fn unwritable_results_dir() {
    // Root may write anywhere, so use a path below a regular file.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, b"").unwrap();
    let results = file.join("results");
    let o = mmci(&["run", "--results", results.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "results dir {} is not writable: choose another with --results",
            results.display()
        )),
        "{err}"
    );
}

#[test]
fn doctor_lists_what_it_checks() {
    let o = mmci(&["doctor"], None);
    let out = String::from_utf8_lossy(&o.stdout);
    for what in [
        "qemu-system-x86_64",
        "guest-init (x86_64)",
        "/dev/kvm",
        "bundled kernel tree",
    ] {
        assert!(out.contains(what), "{what} missing from:\n{out}");
    }
    assert!(out.lines().any(|l| l.starts_with("accel ")), "{out}");
}

#[test]
fn matrix_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.yaml");
    std::fs::write(&m, "axes:\n  threads: [64]\n  vcpus: [2, many]\n").unwrap();
    let results = dir.path().join("results");
    let o = mmci(
        &[
            "run",
            "--matrix",
            m.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(
        err.trim(),
        format!(
            "mmci: error: {}: line 3 column 14: vcpus: `many` is not a vCPU count from 1 to 64",
            m.display()
        )
    );
    assert!(
        !results.exists(),
        "nothing written before the plan is valid"
    );
    std::fs::write(&m, "axes:\n  threads: [64]\nrepeat: 2\n").unwrap();
    let o = mmci(&["matrix", "show", m.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(exit::USAGE));
    assert!(
        stderr(&o).contains("line 3 column 1: unknown field `repeat`, expected one of"),
        "{}",
        stderr(&o)
    );
}

/// Review L3: the values the review saw accepted are errors at their line,
/// with the bound and what to do, from `matrix show` and `run` (the
/// command line's --memory-mb too); nothing is written.
#[test]
fn matrix_values_over_their_bounds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.yaml");
    let results = dir.path().join("results");
    let mf = m.to_str().unwrap();
    let r = results.to_str().unwrap();
    for (yaml, args, want) in [
        (
            "axes:\n  threads: [64]\n  memory_mb: [100000000]\n",
            vec!["matrix", "show", mf],
            format!("{mf}: line 3 column 15: memory_mb: `100000000` is more than 65536 MiB (MAX_MEMORY_MB: "),
        ),
        (
            "axes:\n  threads: [64]\n  swap_mb: [1048576]\n",
            vec!["run", "--matrix", mf, "--results", r],
            format!("{mf}: line 3 column 13: swap_mb: `1048576` is more than 8192 MiB (MAX_SWAP_MB: "),
        ),
        (
            "axes:\n  threads: [64]\n  duration_s: [4000000000]\n",
            vec!["run", "--matrix", mf, "--results", r],
            format!("{mf}: line 3 column 16: duration_s: `4000000000` is more than 3600 s (MAX_DURATION_S: "),
        ),
        (
            "axes:\n  threads: [64]\n",
            vec!["run", "--matrix", mf, "--results", r, "--memory-mb", "70000"],
            "command line: --set memory_mb=70000: memory_mb: `70000` is more than 65536 MiB".to_string(),
        ),
    ] {
        std::fs::write(&m, yaml).unwrap();
        let o = mmci(&args, None);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(exit::USAGE), "{yaml}: {err}");
        assert!(err.contains(&want), "{yaml}: {err}");
        assert!(err.contains("give at most"), "{err}");
        assert!(!results.exists(), "nothing written before the plan is valid");
    }
}

/// Probes 25 and 26: a matrix naming a host file as its series or script
/// (or an image dir outside) is refused by `matrix show` and `run`, one
/// line naming the file, line and key; nothing of the file is printed.
#[test]
fn matrix_paths_outside_the_matrix_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("shadow");
    std::fs::write(&secret, "root:SECRET-HASH:19000:0:99999:7:::\n").unwrap();
    let sub = dir.path().join("matrices");
    std::fs::create_dir(&sub).unwrap();
    std::fs::create_dir_all(sub.join("img")).unwrap();
    std::fs::write(sub.join("img/image.yaml"), "suite: bookworm\n").unwrap();
    let m = sub.join("m.yaml");
    // (matrix text, words of the error)
    let cases = [
        (
            "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - name: p\n    series: /etc/shadow\n".to_string(),
            "line 5 column 5: kernel `p`: series /etc/shadow: /etc/shadow is outside the matrix file's directory".to_string(),
        ),
        (
            format!("scripts:\n  leak:\n    image: img\n    file: {}\naxes:\n  script: [leak]\n", secret.display()),
            format!("line 3 column 5: script `leak`: file {0}: {0} is outside the matrix file's directory", secret.display()),
        ),
        (
            "scripts:\n  leak:\n    image: img\n    file: ../shadow\naxes:\n  script: [leak]\n".to_string(),
            format!("script `leak`: file ../shadow: {} is outside", secret.display()),
        ),
        (
            "scripts:\n  r:\n    image: /usr\n    command: [x]\naxes: {}\n".to_string(),
            "script `r`: image /usr: /usr is outside the matrix file's directory".to_string(),
        ),
    ];
    for (text, words) in cases {
        std::fs::write(&m, &text).unwrap();
        for args in [
            vec!["matrix", "show", m.to_str().unwrap()],
            vec![
                "run",
                "--matrix",
                m.to_str().unwrap(),
                "--results",
                dir.path().join("r").to_str().unwrap(),
            ],
        ] {
            let o = mmci(&args, None);
            let err = stderr(&o);
            assert_eq!(
                o.status.code(),
                Some(exit::USAGE),
                "{args:?}\n{text}\n{err}"
            );
            assert!(err.contains(&words), "{text}\n{err}");
            assert!(
                err.starts_with(&format!("mmci: error: {}: ", m.display())),
                "{err}"
            );
            assert_eq!(err.trim().lines().count(), 1, "{err}");
            assert!(
                !err.contains("SECRET") && !String::from_utf8_lossy(&o.stdout).contains("SECRET")
            );
        }
    }
    assert!(!dir.path().join("r").exists(), "nothing written");
}

#[test]
fn merge_refuses_a_dir_that_is_not_a_results_dir() {
    let dir = tempfile::tempdir().unwrap();
    let o = mmci(
        &[
            "merge",
            "--results",
            dir.path().join("all").to_str().unwrap(),
            dir.path().to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no manifest.json (not an mmci results dir)"),
        "{}",
        stderr(&o)
    );
}

/// `mmci ARGS` killed after 60 s: a command that blocks fails the test
/// instead of hanging it.
fn finishing(args: &[&str]) -> Output {
    let work = tempfile::tempdir().unwrap();
    let mut child = common::bin_blocking()
        .args(args)
        .env("MMCI_WORK_DIR", work.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mmci {args:?} still running after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Small outputs: they fit the pipes, so reading after the exit is safe.
    child.wait_with_output().unwrap()
}

/// Review L3: a FIFO given as a series blocked `series show` until killed.
/// A FIFO (no writer), a device, and a patch dir holding a FIFO are
/// refused, naming the path, as `series show` and `post email --series`.
#[test]
fn series_paths_that_are_not_regular_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mkfifo = |path: &std::path::Path| {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    };
    let fifo = tmp.path().join("series.mbox");
    mkfifo(&fifo);
    let dir = tmp.path().join("patches");
    std::fs::create_dir(&dir).unwrap();
    let inner = dir.join("0001-mm-x.patch");
    mkfifo(&inner);
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, "report\n").unwrap();
    let f = fifo.to_str().unwrap();
    for (args, path, kind) in [
        (vec!["series", "show", f], fifo.clone(), "a FIFO"),
        (
            vec!["series", "show", "/dev/zero"],
            "/dev/zero".into(),
            "a character device",
        ),
        (
            vec!["series", "show", dir.to_str().unwrap()],
            inner.clone(),
            "a FIFO",
        ),
        (
            vec![
                "post",
                "email",
                "--series",
                f,
                "--verdict",
                "fail",
                "--body",
                body.to_str().unwrap(),
                "--from",
                "bot@ci.example.org",
            ],
            fifo.clone(),
            "a FIFO",
        ),
    ] {
        let o = finishing(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(exit::USAGE), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "{}: cannot read: {kind}, not a regular file; refused: save the mbox or patch to a file first",
                path.display()
            )),
            "{args:?}: {err}"
        );
    }
    // A matrix file likewise.
    let results = tmp.path().join("results");
    let o = finishing(&["run", "--matrix", f, "--results", results.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(exit::USAGE), "{err}");
    assert!(
        err.contains(&format!(
            "{f}: cannot read: a FIFO, not a regular file; refused"
        )),
        "{err}"
    );
}
