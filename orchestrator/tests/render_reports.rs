//! The report renderers (markdown, email, HTML) on the recorded smoke
//! matrix (tests/fixtures/smoke-matrix: 3 real runs a side under TCG) and
//! on the analysis bench's synthetic 10,000 runs: snapshots, the email's
//! 72-column ASCII rule, GitHub's 65,535-byte cap, and the HTML as headless
//! Chromium draws it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mmci::analysis::synthetic::synthetic;
use mmci::analysis::{analyse_dir, compare, Options};
use mmci::matrix::file::{ExpectKind, Expectation};
use mmci::report::{self, email, markdown, Format, ReportInput};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn recorded(format: Format, cover: Option<&str>) -> String {
    recorded_dir("smoke-matrix", format, cover)
}

/// tests/fixtures/default-matrix: the default matrix (threads=64 and 192)
/// with 5 real runs a side under TCG, where the rank test reaches 0.01.
fn recorded_dir(name: &str, format: Format, cover: Option<&str>) -> String {
    let dir = fixture(name);
    let c = analyse_dir(&dir, &Default::default(), &Options::default()).unwrap();
    let m = mmci::results::dir::read_manifest(&dir).unwrap().unwrap();
    let mut input = ReportInput::new(&c, &m);
    input.results_url = Some("https://ci.example.org/mmci/20261130-131930/".into());
    input.cover_letter = cover.map(str::to_string);
    report::render(format, &input)
}

const COVER: &str = "Subject: [PATCH 0/2] mm: vmscan: throttle on isolation in MGLRU\n\n\
MGLRU does not throttle reclaimers when too many pages are isolated, which\n\
lets 192 threads pile into shrink_folio_list() and OOM a small memcg \u{2014}\n\
the classic LRU has done this since 2009. Waits are 100 \u{b5}s each.\n\n\
Patch 1 adds the check, patch 2 a tracepoint.\n\nThanks,\nA. Developer\n\
Another line\nAnd one more\n";

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(recorded(Format::Markdown, None));
}

#[test]
fn email_snapshot() {
    insta::assert_snapshot!(recorded(Format::Email, Some(COVER)));
}

#[test]
fn markdown_snapshot_two_cells() {
    let md = recorded_dir("default-matrix", Format::Markdown, None);
    // What needs attention comes first: here the inconclusive touches
    // expectations. At 192 threads the baseline's workload did no work at
    // all (0 touches in every run), so its swap and fault counts cannot be
    // compared with the patched kernel's: not a regression, and no row is.
    let table = md.split("### scenario A").nth(1).unwrap();
    let first_row = table.lines().find(|l| l.starts_with("| threads=")).unwrap();
    assert!(
        first_row.contains("no_regression INCONCLUSIVE"),
        "{first_row}"
    );
    assert!(!table.contains("**REGRESSION**"), "{table}");
    assert!(
        table.contains("| threads=192 | pswpout (pages) | 5944 ± 1956 (n=5) | 44794 ± 5741 (n=5) | +653.6% [+468.0%, +839.1%] | 0.0079 | not comparable: one side did no work |"),
        "{table}"
    );
    assert!(md.contains("mmci run --shard "), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn email_snapshot_two_cells() {
    let text = recorded_dir("default-matrix", Format::Email, None);
    assert_mail_rules(&text);
    // Inconclusive: no Tested-by.
    assert!(!text.contains("Tested-by:"));
    insta::assert_snapshot!(text);
}

#[test]
fn html_snapshot() {
    insta::assert_snapshot!(recorded(Format::Html, None));
}

/// Every line of an email: ASCII, at most 72 columns.
fn assert_mail_rules(text: &str) {
    for (i, l) in text.lines().enumerate() {
        assert!(l.is_ascii(), "line {}: not ASCII: {l:?}", i + 1);
        assert!(
            l.len() <= email::WIDTH,
            "line {} has {} columns: {l:?}",
            i + 1,
            l.len()
        );
    }
}

#[test]
fn email_is_ascii_and_72_columns() {
    let text = recorded(Format::Email, Some(COVER));
    assert_mail_rules(&text);
    // The cover letter is quoted first, transliterated and cut.
    assert!(text.starts_with("> Subject: [PATCH 0/2]"), "{text}");
    // The over-long paragraph is refilled (no one-word orphan line), the
    // dash and the micro sign made ASCII.
    assert!(
        text.contains("isolated,\n> which lets 192 threads"),
        "{text}"
    );
    assert!(text.contains("> memcg - the classic LRU"), "{text}");
    assert!(text.contains("Waits are 100 us\n> each."), "{text}");
    assert!(text.contains("> [...]"), "{text}");
    assert!(!text.contains("Another line"), "{text}");
    // 0-day's columns.
    assert!(text.contains("%stddev  %change          %stddev"), "{text}");
    assert!(text.contains("Full results: https://ci.example.org/mmci/"));
    // The recorded dir passes (no expectations, every run completed).
    assert!(text.contains("\nTested-by: mmci <mmci@kernel-ci.invalid>\n"));
}

#[test]
fn wrapping_keeps_quotes_commands_and_long_words_within_72() {
    let long = format!(
        "  mmci run --matrix {} --shard 3/7 --repeats 5",
        "m/".repeat(30)
    );
    let lines = email::wrap(&long, 72);
    assert!(lines.len() > 1 && lines[0].ends_with(" \\"), "{lines:?}");
    assert!(lines.iter().all(|l| l.len() <= 72), "{lines:?}");
    let quote = format!("> {}", "word ".repeat(30));
    let lines = email::wrap(&quote, 72);
    assert!(lines.iter().all(|l| l.starts_with("> ") && l.len() <= 72));
    let word = "x".repeat(200);
    assert!(email::wrap(&word, 72).iter().all(|l| l.len() <= 72));
    assert_eq!(
        email::ascii("5 ± 2 µs → ≤ 3 — ok"),
        "5 +- 2 us -> <= 3 - ok"
    );
}

fn synthetic_comparison(
    runs: usize,
    fail: bool,
) -> (mmci::analysis::Comparison, mmci::results::dir::Manifest) {
    let (m, results, series) = synthetic(runs);
    let mut expect = m.plan.expect.clone();
    if fail {
        // Every synthetic run has oom_kills 0: `nonzero` fails everywhere.
        expect.insert("oom_kills".into(), Expectation::Kind(ExpectKind::Nonzero));
    }
    let c = compare(&m, &results, &expect, series, &Options::default());
    (c, m)
}

#[test]
fn check_run_summary_fits_githubs_limit() {
    // 200 cells: several times the limit, and quick in a debug build.
    let (c, m) = synthetic_comparison(2_000, true);
    let input = ReportInput::new(&c, &m);
    let md = markdown::render(&input, markdown::CHECK_RUN_LIMIT);
    assert!(md.len() <= markdown::CHECK_RUN_LIMIT, "{} bytes", md.len());
    assert!(md.starts_with("<!-- mmci-report "), "{}", &md[..200]);
    assert!(md.contains("## mmci: FAIL :x:"));
    assert!(md.contains("table row(s) cut to fit GitHub's 65,535-byte limit"));
    // What is kept first: the failed expectations.
    let failed = md.matches("| **FAIL** |").count();
    assert!(failed > 0, "no failed expectation kept");
    // The verdict lists its first 10 reasons of 200.
    assert!(md.contains("- _and 190 more, in the expectations and runs below_"));
    // An unlimited render has them all: the cut is real.
    let full = markdown::render(&input, usize::MAX);
    assert!(full.len() > 5 * markdown::CHECK_RUN_LIMIT, "{}", full.len());
    assert!(!full.contains("cut to fit"));
    // The reproduce command names a one-cell shard of the 200 cells.
    assert!(
        md.contains("mmci run --matrix synthetic.yaml --shard "),
        "{md}"
    );
    assert!(md.contains("/200 --repeats 5"));
}

#[test]
fn tested_by_only_on_a_pass() {
    let (c, m) = synthetic_comparison(20, true);
    assert_eq!(c.verdict.status, mmci::analysis::Status::Fail);
    let text = email::render(&ReportInput::new(&c, &m));
    assert_mail_rules(&text);
    assert!(!text.contains("Tested-by:"), "{text}");
    assert!(text.contains("[no change; nonzero FAIL]"), "{text}");
    let (c, m) = synthetic_comparison(20, false);
    assert_eq!(
        c.verdict.status,
        mmci::analysis::Status::Pass,
        "{:?}",
        c.verdict
    );
    let text = email::render(&ReportInput::new(&c, &m));
    assert_mail_rules(&text);
    assert!(text.contains("\nTested-by: mmci <mmci@kernel-ci.invalid>\n"));
}

#[test]
fn html_is_self_contained() {
    let html = recorded(Format::Html, None);
    assert!(html.starts_with("<!DOCTYPE html>"));
    for external in ["<script", "<link", "src=\"http", "@import", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    // One strip plot per metric (16 in scenario A, and 9 per-touch ones)
    // and the nr_isolated
    // chart with all 6 runs.
    assert_eq!(html.matches("<svg").count(), 16 + 9 + 1);
    assert_eq!(html.matches("<polyline").count(), 6);
}

/// Reads a PNG's width and height from its IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test]
async fn html_renders_in_headless_chromium() {
    let chromium = Path::new("/usr/bin/chromium");
    assert!(
        chromium.exists(),
        "chromium is missing: ./mmci-setup installs it (apt-get install chromium)"
    );
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let fixture = std::env::var("MMCI_SCREENSHOT_FIXTURE").unwrap_or("smoke-matrix".into());
    std::fs::write(&html, recorded_dir(&fixture, Format::Html, None)).unwrap();
    let png = std::env::var_os("MMCI_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("report.png"));
    report::screenshot::screenshot(chromium, &html, &png, (1280, 2000), Duration::from_secs(60))
        .await
        .unwrap();
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(png_size(&bytes), (1280, 2000));
    // A blank page compresses to a few kB; tables, text and 17 charts do not.
    assert!(
        bytes.len() > 60_000,
        "{} bytes: an empty page?",
        bytes.len()
    );
}

#[test]
fn scenario_b_latencies_get_histograms() {
    // No recorded scenario B matrix yet: give the recorded comparison the
    // per-run values of two of scenario B's latency metrics.
    let dir = fixture("smoke-matrix");
    let mut c = analyse_dir(&dir, &Default::default(), &Options::default()).unwrap();
    let m = mmci::results::dir::read_manifest(&dir).unwrap().unwrap();
    let cand = &mut c.cells[0].candidates[0];
    for (name, base, patched) in [
        ("noio_latency_p99_ms", [4.0, 5.5, 6.0], [21.0, 30.5, 26.0]),
        ("noio_latency_max_ms", [9.0, 12.0, 10.0], [60.0, 75.0, 90.0]),
    ] {
        let mut metric = cand.metrics[0].clone();
        metric.metric = name.into();
        metric.unit = "ms".into();
        metric.base_values = base.to_vec();
        metric.candidate_values = patched.to_vec();
        cand.metrics.push(metric);
    }
    let html = report::render(Format::Html, &ReportInput::new(&c, &m));
    assert!(html.contains("Latency of direct reclaim (scenario B)"));
    let section = html
        .split("Latency of direct reclaim")
        .nth(1)
        .unwrap()
        .split("Per-metric distributions")
        .next()
        .unwrap();
    assert_eq!(section.matches("<svg").count(), 2, "{section}");
    assert!(section.contains("<title>noio_latency_p99_ms</title>"));
    // The smoke matrix itself (scenario A) has no latency section.
    assert!(!recorded(Format::Html, None).contains("Latency of direct reclaim"));
}

#[test]
fn report_command_writes_files_and_the_job_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let summary = tmp.path().join("step-summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let email = tmp.path().join("report.txt");
    let cover = tmp.path().join("cover.txt");
    std::fs::write(&cover, COVER).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mmci"))
        .arg("report")
        .arg(fixture("smoke-matrix"))
        .args([
            "--format",
            "email",
            "--results-url",
            "https://ci.example.org/r/7",
        ])
        .arg("--output")
        .arg(&email)
        .arg("--cover-letter")
        .arg(&cover)
        .arg("--github-summary")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&email).unwrap();
    assert_eq!(
        text,
        recorded(Format::Email, Some(COVER)).replace(
            "https://ci.example.org/mmci/20261130-131930/",
            "https://ci.example.org/r/7"
        )
    );
    // Appended after the earlier step's summary, as markdown.
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("earlier step\n<!-- mmci-report series="),
        "{md}"
    );
    assert!(md.contains("## mmci: PASS"));
    // JSON to standard output: the comparison, format 2.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mmci"))
        .arg("report")
        .arg(fixture("smoke-matrix"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let c: mmci::analysis::Comparison = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c.format, mmci::analysis::COMPARISON_FORMAT);
    // A bad cover letter path is a bad option (exit 2), named.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mmci"))
        .arg("report")
        .arg(fixture("smoke-matrix"))
        .args(["--format", "email", "--cover-letter", "/nonexistent/cover"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cover-letter /nonexistent/cover"));
}

/// tests/fixtures/noio-matrix: matrix/noio.yaml run here (base vs the
/// bundled RFC, scenario B on zram, real runs under TCG; the per-call
/// records are left out, run.json keeps each run's metrics and its slowest
/// dm-bufio call). Every renderer shows that call's anatomy per kernel.
#[test]
fn scenario_b_anatomy_in_every_report() {
    let dir = fixture("noio-matrix");
    let c = analyse_dir(&dir, &Default::default(), &Options::default()).unwrap();
    assert_eq!(c.noio_anatomy.len(), 2, "base and patched");
    let base = &c.noio_anatomy[0];
    assert_eq!(base.variant, "base");
    let worst = base.worst.as_ref().expect("base has a slowest call");
    assert!(!worst.rounds.is_empty());
    assert_eq!(worst.rounds[0].round, 1);
    let terminal = mmci::report::comparison::render(&c);
    assert!(terminal.contains("anatomy: "), "{terminal}");
    let md = recorded_dir("noio-matrix", Format::Markdown, None);
    assert!(md.contains("### Anatomy of the slowest dm-bufio GFP_NOIO call"));
    assert!(md.contains("| round | priority | memcg visits |"), "{md}");
    let mail = recorded_dir("noio-matrix", Format::Email, None);
    assert_mail_rules(&mail);
    assert!(mail.contains("round    prio memcgs"), "{mail}");
    let html = recorded_dir("noio-matrix", Format::Html, None);
    assert!(html.contains("<h2>Anatomy of the slowest dm-bufio GFP_NOIO call</h2>"));
    insta::assert_snapshot!("noio_terminal", terminal);
    insta::assert_snapshot!("noio_markdown", md);
    insta::assert_snapshot!("noio_email", mail);
}
