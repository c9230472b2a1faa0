//! `mmci image` on bad recipes: an unknown key (no network needed) and a
//! package Debian does not have (resolved against Debian's archive with
//! the host's apt, in the work dir's private apt state). Neither builds an
//! image.

mod common;

use std::process::Output;

use mmci::error::exit;

fn mmci(args: &[&str], work: &std::path::Path) -> Output {
    common::bin_blocking()
        .args(args)
        .env("MMCI_WORK_DIR", work)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn recipe(yaml: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("bad")).unwrap();
    std::fs::write(tmp.path().join("bad/image.yaml"), yaml).unwrap();
    tmp
}

#[test]
fn recipe_with_an_unknown_key_names_line_and_column() {
    let work = tempfile::tempdir().unwrap();
    let r = recipe("suite: bookworm\npackages: [procps]\nmirror: http://example.org/debian\n");
    let dir = r.path().join("bad");
    let o = mmci(&["image", "build", dir.to_str().unwrap()], work.path());
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("bad/image.yaml: line 3 column 1"), "{err}");
    assert!(err.contains("unknown field `mirror`"), "{err}");
    // Nothing was fetched or built.
    assert!(!work.path().join("images/apt").exists());
}

/// The work dir shared with the other integration tests, so that Debian's
/// index is fetched once per machine.
fn shared_work() -> std::path::PathBuf {
    common::work_dir().root().to_path_buf()
}

#[test]
fn missing_package_is_named_with_its_line() {
    let r = recipe("suite: bookworm\npackages:\n  - procps\n  - mmci-no-such-package\n");
    let dir = r.path().join("bad");
    let o = mmci(&["image", "build", dir.to_str().unwrap()], &shared_work());
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "bad/image.yaml: line 4: package `mmci-no-such-package` is not in Debian bookworm"
        ),
        "{err}"
    );
    assert!(
        err.contains("apt-cache policy mmci-no-such-package"),
        "{err}"
    );
}

#[test]
fn show_before_any_build_says_how_to_build() {
    let work = tempfile::tempdir().unwrap();
    let images = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../images");
    let o = mmci(
        &[
            "image",
            "show",
            "tools",
            "--images-dir",
            images.to_str().unwrap(),
        ],
        work.path(),
    );
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("mmci image build tools"),
        "{}",
        stderr(&o)
    );
}
