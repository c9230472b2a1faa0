//! The cover-letter claims parser on real cover letters: every table row
//! each one must yield is recorded in tests/fixtures/cover-letters/EXPECTED.tsv
//! (file, table line, patched column, row name, unpatched value, patched
//! value). The letters are real: ten from the cgroups list's public-inbox
//! archive (each file names its Message-ID), the seed thread's table as
//! ../shared/docs/workloads.md quotes it and as its author laid it out, and
//! the bundled series' own cover letter. One of them (alloc-profiling-v1)
//! has only a transposed table (a row per kernel), which the parser does
//! not read: its expectation is no rows.
mod common;

use std::path::Path;

fn dir() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cover-letters"
    ))
}

fn value(q: &mmci::series::claims::Quantity) -> String {
    match q.value {
        Some(v) => format!("{v}{}", q.unit),
        None => q.text.clone(),
    }
}

#[test]
fn real_cover_letters_yield_their_recorded_rows() {
    let mut files: Vec<_> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 12, "{} cover letters", files.len());
    let mut got = vec![];
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let tables = mmci::series::claims::parse(&std::fs::read_to_string(f).unwrap());
        if tables.is_empty() {
            got.push(format!("{name}\t-\t-\t-\t-\t-"));
        }
        for t in tables {
            for r in t.rows {
                got.push(format!(
                    "{name}\t{}\t{}\t{}\t{}\t{}",
                    t.line,
                    t.candidate_column,
                    r.name,
                    value(&r.base),
                    value(&r.candidate)
                ));
            }
        }
    }
    // MMCI_BLESS=1 rewrites the file from what the parser reads now (then
    // review its diff); every other run compares.
    if std::env::var_os("MMCI_BLESS").is_some() {
        let mut text =
            String::from("# file\ttable line\tpatched column\trow\tunpatched\tpatched\n");
        text.extend(got.iter().map(|l| format!("{l}\n")));
        std::fs::write(dir().join("EXPECTED.tsv"), text).unwrap();
    }
    let expected = std::fs::read_to_string(dir().join("EXPECTED.tsv")).unwrap();
    let want: Vec<&str> = expected.lines().filter(|l| !l.starts_with('#')).collect();
    let got: Vec<&str> = got.iter().map(String::as_str).collect();
    if want != got {
        let missing: Vec<_> = want.iter().filter(|w| !got.contains(w)).collect();
        let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).collect();
        panic!("missing rows:\n{missing:#?}\nrows not expected:\n{extra:#?}");
    }
    // Ten real letters from the archive yield rows.
    let real_with_rows = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .starts_with("Message-ID:")
        })
        .filter(|f| {
            !mmci::series::claims::parse(&std::fs::read_to_string(f).unwrap())
                .iter()
                .all(|t| t.rows.is_empty())
        })
        .count();
    assert!(real_with_rows >= 10, "{real_with_rows}");
}

/// `mmci series show` lists the claims `mmci run` will check: the bundled
/// v1 letter's two tables, row by row.
#[test]
fn series_show_lists_the_cover_letters_claims() {
    let mbox =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    let work = tempfile::tempdir().unwrap();
    let out = common::bin_blocking()
        .args(["series", "show"])
        .arg(&mbox)
        .env("MMCI_WORK_DIR", work.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "claims:    9 row(s) in 2 table(s) of the cover letter",
        "repro v1: 64 threads, 48 MB working set, 60 s (unpatched -> patched)",
        "    mm_vmscan_throttled: 0 -> 35645 (all VMSCAN_THROTTLE_ISOLATED)",
        "    total touches: 246,499,132,369 -> 301,456,426,692 (+22%)",
        "repro v2: 192 threads, 48 MB working set, 60 s (unpatched -> patched)",
        "    OOM kills: 1 (killed) -> 0",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

/// A hostile letter: a table header over a 1 MiB row of numbers and
/// spaces (every split of which a row reader could try), 100,000 lines,
/// and control characters in a row name. Parsed quickly, the long row
/// unread, no control character kept.
#[test]
fn hostile_cover_letters_are_read_in_bounded_time_and_kept_printable() {
    let mut text = String::from("        baseline   patched\n");
    text.push_str(&"1 ".repeat(512 * 1024));
    text.push('\n');
    text.push_str("        baseline   patched\n  \u{1b}[31mtouches\u{7}   10   20\n\n");
    for _ in 0..100_000 {
        text.push_str("  x   1 -> 2   3 -> 4\n");
    }
    let started = std::time::Instant::now();
    let tables = mmci::series::claims::parse(&text);
    // Generous for a debug build on a busy host; the quadratic reading this
    // guards against takes minutes.
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    let rows: Vec<_> = tables.iter().flat_map(|t| &t.rows).collect();
    assert!(rows.iter().any(|r| r.name == "[31mtouches"), "{rows:#?}");
    for r in &rows {
        assert!(!r.name.chars().any(|c| c.is_control()), "{:?}", r.name);
    }
    assert!(!rows.iter().any(|r| r.base.text.len() > 100));
}
