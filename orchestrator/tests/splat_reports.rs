//! Kernel splats in the analysis and in every report format, on the
//! recorded smoke matrix (3 real runs a side) with the splats that real
//! consoles (tests/fixtures/splats) give put into its runs: a WARNING on
//! two of the patched kernel's runs (new: fails the verdict) and a Bad
//! rss-counter on every run (pre-existing: listed apart, not blamed).

use std::path::{Path, PathBuf};

use mmci::analysis::model::SplatStatus;
use mmci::analysis::{analyse_dir, Options, Status};
use mmci::report::{self, Format, ReportInput};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn console(name: &str) -> String {
    std::fs::read_to_string(fixture("splats").join(name)).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// The smoke matrix with splats in its runs' results.
fn dir_with_splats() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("smoke-matrix"), tmp.path());
    let warning = mmci::results::splat::detect(&console("warning_arm64.txt"));
    let rss = mmci::results::splat::detect(&console("bad_rss_and_page_map.txt"));
    for e in std::fs::read_dir(tmp.path().join("runs")).unwrap() {
        let run = e.unwrap().path().join("run.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
        let id = v["id"].as_str().unwrap().to_string();
        let mut splats = rss[..1].to_vec();
        if id.ends_with("-patched-r1") || id.ends_with("-patched-r2") {
            splats.insert(0, warning[0].clone());
        }
        v["splats"] = serde_json::to_value(&splats).unwrap();
        std::fs::write(&run, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }
    tmp
}

fn render(dir: &Path, format: Format) -> String {
    let c = analyse_dir(dir, &Default::default(), &Options::default()).unwrap();
    let m = mmci::results::dir::read_manifest(dir).unwrap().unwrap();
    report::render(format, &ReportInput::new(&c, &m))
}

/// The part of `text` from `start` to the next `end` (exclusive).
fn section<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in\n{text}"));
    let rest = &text[from..];
    let to = rest[start.len()..]
        .find(end)
        .map_or(rest.len(), |i| i + start.len());
    &rest[..to]
}

#[test]
fn a_new_splat_fails_the_verdict_a_pre_existing_one_does_not() {
    let tmp = dir_with_splats();
    let c = analyse_dir(tmp.path(), &Default::default(), &Options::default()).unwrap();
    assert_eq!(c.verdict.status, Status::Fail, "{:?}", c.verdict.reasons);
    // The finding first; after it what is undecided (3 + 3 runs leave the
    // guards at their floors).
    assert_eq!(
        c.verdict.reasons[0],
        "patched: WARNING in update_blocked_averages in 2 of 3 runs (not on base)"
    );
    for r in &c.verdict.reasons[1..] {
        assert!(r.contains(": at the floor: "), "{r}");
    }
    let s: Vec<_> = c
        .splats
        .iter()
        .map(|f| (f.title.as_str(), f.status, f.hits_text()))
        .collect();
    assert_eq!(
        s,
        [
            (
                "WARNING in update_blocked_averages",
                SplatStatus::New,
                "base: 0 of 3 runs, patched: 2 of 3 runs".to_string()
            ),
            (
                "BUG: Bad rss-counter state",
                SplatStatus::PreExisting,
                "base: 3 of 3 runs, patched: 3 of 3 runs".to_string()
            ),
        ]
    );
    assert!(c.splats[0].first_run.ends_with("-patched-r1"));
    assert_eq!(c.splats[1].first_variant, "base");

    // Only the pre-existing one: the verdict is the numbers', and 3 runs a
    // side leave the guards at their floors: undecided, never a pass.
    let tmp2 = tempfile::tempdir().unwrap();
    copy_dir(tmp.path(), tmp2.path());
    for e in std::fs::read_dir(tmp2.path().join("runs")).unwrap() {
        let run = e.unwrap().path().join("run.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
        let keep: Vec<serde_json::Value> = v["splats"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["kind"] == "bad_page")
            .cloned()
            .collect();
        v["splats"] = keep.into();
        std::fs::write(&run, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }
    let c = analyse_dir(tmp2.path(), &Default::default(), &Options::default()).unwrap();
    assert_eq!(
        c.verdict.status,
        Status::Inconclusive,
        "{:?}",
        c.verdict.reasons
    );
    assert!(
        c.verdict
            .reasons
            .iter()
            .all(|r| r.contains(": at the floor: ")),
        "{:?}",
        c.verdict.reasons
    );
    assert_eq!(c.splats.len(), 1);
    assert_eq!(c.splats[0].status, SplatStatus::PreExisting);
}

#[test]
fn every_format_shows_title_kernels_runs_and_the_excerpt() {
    let tmp = dir_with_splats();
    let excerpt_line = " newidle_balance+0x200/0x460";
    let header = "WARNING: CPU: 5 PID: 35 at kernel/sched/fair.c:3282";

    let c = analyse_dir(tmp.path(), &Default::default(), &Options::default()).unwrap();
    let term = mmci::report::comparison::render(&c);
    let term_splats = section(&term, "splat NEW", "\n+-");
    assert!(term_splats.contains(excerpt_line));
    insta::assert_snapshot!("terminal_splats", term_splats);

    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(
        json["splats"][0]["title"],
        "WARNING in update_blocked_averages"
    );
    assert_eq!(json["splats"][0]["status"], "new");
    assert_eq!(json["splats"][0]["hits"][1]["runs"], 2);
    assert!(json["splats"][0]["excerpt"]
        .as_str()
        .unwrap()
        .starts_with(header));

    let md = render(tmp.path(), Format::Markdown);
    let md_splats = section(&md, "### Kernel splats", "\n### ");
    assert!(md_splats.contains(excerpt_line) && md_splats.contains(header));
    insta::assert_snapshot!("markdown_splats", md_splats);

    let mail = render(tmp.path(), Format::Email);
    let mail_splats = section(&mail, "mmci noticed", "\nKernels:");
    assert!(
        mail_splats.contains(&format!("\n  {header}\n")),
        "{mail_splats}"
    );
    assert!(mail.contains(
        "mmci noticed \"WARNING in update_blocked_averages\" on:\n  patched (2 of 3 runs), not on base\n"
    ), "{mail}");
    // ASCII everywhere; 72 columns except the console lines quoted as
    // they are (indented by two).
    let excerpts: Vec<&str> = c.splats.iter().flat_map(|s| s.excerpt.lines()).collect();
    for l in mail.lines() {
        assert!(l.is_ascii(), "{l:?}");
        let quoted = l.strip_prefix("  ").is_some_and(|l| excerpts.contains(&l));
        assert!(l.len() <= 72 || quoted, "{l:?}");
    }
    insta::assert_snapshot!("email_splats", mail_splats);

    let html = render(tmp.path(), Format::Html);
    let html_splats = section(&html, "<h2>Kernel splats</h2>", "<h2>");
    // Escaped: `/` is `&#x2f;`.
    assert!(
        html_splats.contains(" newidle_balance+0x200&#x2f;0x460"),
        "{html_splats}"
    );
    insta::assert_snapshot!("html_splats", html_splats);
}
