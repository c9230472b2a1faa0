//! Bad input on the command line: one-line errors that name the culprit and
//! the fix, with the documented exit codes. None of these boots a guest.

use std::process::{Command, Output};

use mmci::app::exit;

fn mmci(args: &[&str], path_env: Option<&str>) -> Output {
    let work = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mmci"));
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
    assert!(err.contains("--set treads=64"), "{err}");
    assert!(
        err.contains("unknown guest parameter `mmci.treads`"),
        "{err}"
    );
    assert!(err.contains("known parameters: scenario, threads"), "{err}");
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
