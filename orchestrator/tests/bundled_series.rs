//! The bundled threads in kernels/series as a maintainer's tools read them:
//! each holds its revisions in one thread, the newest is the default, and
//! an older one picked out of the thread is the very series first posted.

use std::path::{Path, PathBuf};

use mmci::series::{assemble, assemble_with, mails_from_mbox, Patch, Selection};

fn series_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series")
}

/// The bundled thread: v1, then v2 in reply to v1's cover, then v3 in
/// reply to v2's. The default is v3; `revision 1` is v1, the very patches
/// of the v1-only mbox.
#[test]
fn bundled_thread_holds_three_revisions() {
    let dir = series_dir();
    let thread = mails_from_mbox(&std::fs::read(dir.join("mglru-isolation.mbox")).unwrap());
    let v1_alone = assemble(
        &mails_from_mbox(&std::fs::read(dir.join("mglru-isolation-v1.mbox")).unwrap()),
        "v1",
    )
    .unwrap();
    let newest = assemble(&thread, "thread").unwrap();
    let pick = |n| {
        assemble_with(
            &thread,
            "thread",
            &Selection {
                requested: None,
                revision: Some(n),
            },
        )
    };
    let v1 = pick(1).unwrap();
    let v2 = pick(2).unwrap();
    assert_eq!((newest.version, newest.total), (3, 2));
    assert_eq!(
        newest.cover.as_ref().unwrap().subject,
        "[PATCH v3 0/2] mm/vmscan: account and throttle MGLRU isolation"
    );
    assert_eq!(v2.version, 2);
    assert_eq!(
        newest.base_commit.as_deref(),
        Some("2a7be210a22a8655e73e347054808314e73be671")
    );
    assert_eq!(v1.version, 1);
    assert_eq!(
        v1.hash, v1_alone.hash,
        "v1 out of the thread is v1 as posted"
    );
    assert_ne!(newest.hash, v1.hash);
    assert_ne!(newest.hash, v2.hash);
    // Patch 1 is unchanged in v2 and v3, patch 2 changes each time.
    let diff = |p: &Patch| {
        let text = String::from_utf8_lossy(&p.raw).to_string();
        text[text.find("\ndiff --git").expect("a diff")..]
            .trim_end()
            .to_string()
    };
    assert_eq!(diff(&newest.patches[0]), diff(&v1.patches[0]));
    assert_eq!(diff(&v2.patches[0]), diff(&v1.patches[0]));
    assert_ne!(diff(&newest.patches[1]), diff(&v1.patches[1]));
    assert_ne!(diff(&newest.patches[1]), diff(&v2.patches[1]));
    assert!(pick(4).is_err());
}

/// The bundled RFC thread: v1, then v2 (the review's three fixes) in
/// reply to v1's cover. The default is v2; `revision 1` is the v1-only
/// mbox's patch.
#[test]
fn bundled_rfc_thread_holds_two_revisions() {
    let dir = series_dir();
    let thread = mails_from_mbox(&std::fs::read(dir.join("noio-scan-file.mbox")).unwrap());
    let v1_alone = assemble(
        &mails_from_mbox(&std::fs::read(dir.join("noio-scan-file-v1.mbox")).unwrap()),
        "v1",
    )
    .unwrap();
    let newest = assemble(&thread, "thread").unwrap();
    let v1 = assemble_with(
        &thread,
        "thread",
        &Selection {
            requested: None,
            revision: Some(1),
        },
    )
    .unwrap();
    assert_eq!((newest.version, newest.total), (2, 1));
    assert!(newest
        .cover
        .as_ref()
        .unwrap()
        .subject
        .starts_with("[RFC PATCH v2 0/1] mm: vmscan: avoid anon scanning for GFP_NOIO"));
    assert_eq!(
        newest.base_commit.as_deref(),
        Some("2a7be210a22a8655e73e347054808314e73be671")
    );
    assert_eq!(
        v1.hash, v1_alone.hash,
        "v1 out of the thread is v1 as posted"
    );
    let text = String::from_utf8_lossy(&newest.patches[0].raw).to_string();
    for fixed in [
        "MAX_NR_ZONES - 1",
        "lruvec_page_state_local(lruvec, NR_SWAPCACHE)",
        "#ifdef CONFIG_SWAP",
    ] {
        assert!(text.contains(fixed), "{fixed}");
    }
}
