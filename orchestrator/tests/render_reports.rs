//! The report renderers (markdown, email, HTML) on the recorded smoke
//! matrix (tests/fixtures/smoke-matrix: 3 real runs a side under TCG) and
//! on the analysis bench's synthetic 10,000 runs: snapshots, the email's
//! 72-column ASCII rule, GitHub's 65,535-byte cap, and the HTML as headless
//! Chromium draws it.

mod common;

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
    // expectations. At 192 threads the baseline was OOM-killed in every run
    // before a counted touch, so its swap and fault counts cover only the
    // start of its runs: only runs without an OOM kill are compared, base
    // has none, and no row is a regression.
    let table = md.split("### scenario A").nth(1).unwrap();
    let first_row = table.lines().find(|l| l.starts_with("| threads=")).unwrap();
    assert!(
        first_row.contains("no_regression INCONCLUSIVE"),
        "{first_row}"
    );
    assert!(!table.contains("**REGRESSION**"), "{table}");
    assert!(
        table.contains("| threads=192 | pswpout (pages) | - | 44794 ± 5741 (n=5) | - | - | - | too few runs (runs without an OOM kill) |"),
        "{table}"
    );
    assert!(md.contains("mmci run --shard "), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn email_snapshot_two_cells() {
    let text = recorded_dir("default-matrix", Format::Email, None);
    assert_mail_rules(&text);
    // Not asked for, and under TCG: no Tested-by.
    assert!(!text.contains("Tested-by:"));
    insta::assert_snapshot!(text);
}

#[test]
fn html_snapshot() {
    insta::assert_snapshot!(recorded(Format::Html, None));
}

/// Every line of an email: ASCII, at most 72 columns (but the `Closes:`
/// trailer, a URL that cannot be wrapped).
fn assert_mail_rules(text: &str) {
    for (i, l) in text.lines().enumerate() {
        assert!(l.is_ascii(), "line {}: not ASCII: {l:?}", i + 1);
        if l.starts_with("| Closes: ") {
            continue;
        }
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
    // The finding first, then the cover letter quoted, transliterated and
    // cut.
    let quote = text.split_once("\n\n").unwrap().1;
    assert!(quote.starts_with("> Subject: [PATCH 0/2]"), "{text}");
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
    // Every run was under TCG: no Tested-by, even when asked for.
    assert!(!text.contains("Tested-by:"), "{text}");
    let dir = fixture("smoke-matrix");
    let c = analyse_dir(&dir, &Default::default(), &Options::default()).unwrap();
    let m = mmci::results::dir::read_manifest(&dir).unwrap().unwrap();
    let mut input = ReportInput::new(&c, &m);
    input.mail.tested_by = Some(report::DEFAULT_TESTED_BY.into());
    assert!(!email::render(&input).contains("Tested-by:"));
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
    // (200 failed expectations, and the guards undecided at 10 + 10).
    let more = format!(
        "- _and {} more, in the expectations and runs below_",
        c.verdict.reasons.len() - 10
    );
    assert!(c.verdict.reasons.len() >= 200);
    assert!(md.contains(&more), "no `{more}`");
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
fn tested_by_only_when_asked_and_on_a_pass() {
    let asked = |c, m| {
        let mut input = ReportInput::new(c, m);
        input.mail.tested_by = Some("Q. A. <qa@example.org>".into());
        input.mail.message_id = Some("<id-1@ci.example.org>".into());
        email::render(&input)
    };
    let (c, m) = synthetic_comparison(20, true);
    assert_eq!(c.verdict.status, mmci::analysis::Status::Fail);
    let text = asked(&c, &m);
    assert_mail_rules(&text);
    assert!(!text.contains("Tested-by:"), "{text}");
    assert!(text.contains("[no change; nonzero FAIL"), "{text}");
    // A FAIL: 0-day's block instead.
    assert!(text.contains(
        "\n| Reported-by: mmci <mmci@kernel-ci.invalid>\n| Closes: https://lore.kernel.org/r/id-1@ci.example.org\n"
    ));
    let (c, m) = synthetic_comparison(20, false);
    assert_eq!(
        c.verdict.status,
        mmci::analysis::Status::Pass,
        "{:?}",
        c.verdict
    );
    // Not asked for: none.
    let text = email::render(&ReportInput::new(&c, &m));
    assert_mail_rules(&text);
    assert!(!text.contains("Tested-by:"), "{text}");
    let text = asked(&c, &m);
    assert!(
        text.contains("\nTested-by: Q. A. <qa@example.org>\n"),
        "{text}"
    );
    assert!(!text.contains("Reported-by"), "{text}");
}

#[test]
fn html_is_self_contained() {
    let html = recorded(Format::Html, None);
    assert!(html.starts_with("<!DOCTYPE html>"));
    for external in ["<script", "<link", "src=\"http", "@import", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    // One strip plot per metric with values (18 in scenario A: these runs
    // were recorded before early wakes were counted, so
    // throttle_isolated_early_wake has none; and 9 per-touch ones) and
    // the nr_isolated chart with all 6 runs.
    assert_eq!(html.matches("<svg").count(), 18 + 9 + 1);
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
    let out = common::bin_blocking()
        .arg("report")
        .arg("--results")
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
    // Three runs a side: the guards' intervals straddle their floors.
    assert!(md.contains("## mmci: INCONCLUSIVE"), "{md}");
    // JSON to standard output: the comparison, format 2.
    let out = common::bin_blocking()
        .arg("report")
        .arg("--results")
        .arg(fixture("smoke-matrix"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let c: mmci::analysis::Comparison = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c.format, mmci::analysis::COMPARISON_FORMAT);
    // A bad cover letter path is a bad option (exit 2), named.
    let out = common::bin_blocking()
        .arg("report")
        .arg("--results")
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
    assert_eq!(c.anatomy.len(), 2, "base and patched");
    let base = &c.anatomy[0];
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

/// Copies a fixture dir, to edit its results.
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

/// Rewrites the JSON file at `path` with `f`.
fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// The smoke matrix with `splats` on every run of the patched kernel.
fn with_patched_splats(splats: serde_json::Value) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("smoke-matrix"), tmp.path());
    for e in std::fs::read_dir(tmp.path().join("runs")).unwrap() {
        let run = e.unwrap().path().join("run.json");
        if run.to_string_lossy().contains("-patched-") {
            edit_json(&run, |v| v["splats"] = splats.clone());
        }
    }
    tmp
}

/// Probe 40 of the security review: what a hostile kernel prints on its
/// console, what its build writes as the release and the warnings, what
/// its series says, and a message-id made to break out of the reproduce
/// line's quotes. `token` is planted in a build warning (a build that read
/// the environment).
fn hostile_dir(token: &str) -> tempfile::TempDir {
    let excerpt = [
        "WARNING: CPU: 0 PID: 1 at mm/vmscan.c:1 evil+0x0/0x10",
        "```",
        "## mmci: PASS :white_check_mark:",
        "All good, [click here](https://evil.example/phish) @torvalds <script>alert(1)</script>",
        "<!-- hide the rest",
        "Tested-by: Evil <evil@example.org>",
        "\u{1b}[2J\u{1b}[31mESC cleared the screen\r",
        "~~~",
        "````",
    ]
    .join("\n");
    let tmp = with_patched_splats(serde_json::json!([{
        "kind": "warning",
        "title": "WARNING in evil ``` @torvalds [x](https://evil.example) <!-- #1 \u{202e}txt.exe",
        "count": 1,
        "line": 1,
        "excerpt": excerpt,
    }]));
    edit_json(&tmp.path().join("manifest.json"), |m| {
        m["plan"]["description"] = "mm: fix <!-- @akpm [link](https://evil.example) \
             ![img](https://evil.example/t.png) www.evil.example"
            .into();
        let k = &mut m["kernels"][1];
        k["kernel"]["release"] = "6.12.0\n\n## mmci: PASS :white_check_mark:\n".into();
        k["description"] = "series <!-- @akpm | broken | cell".into();
        let warning =
            format!("mm/x.c:1: warning: `foo` ``` @akpm [x](https://evil.example) <!-- {token}");
        k["new_warnings"] = serde_json::json!([warning]);
        k["kernel"]["build_warnings"] = k["new_warnings"].clone();
        let v = &mut m["plan"]["variants"][1];
        v["series"] = serde_json::Value::Null;
        v["lore"] = "x'$(touch${IFS}/tmp/mmci-pwned)'`id`\"@evil".into();
    });
    tmp
}

fn render_dir(dir: &Path, format: Format) -> String {
    let c = analyse_dir(dir, &Default::default(), &Options::default()).unwrap();
    let m = mmci::results::dir::read_manifest(dir).unwrap().unwrap();
    let mut input = ReportInput::new(&c, &m);
    input.results_url = Some("https://ci.example.org/mmci/r/".into());
    report::render(format, &input)
}

/// GitHub-flavoured markdown to HTML, the way GitHub parses it (comrak
/// passes the GFM spec): tables, bare-URL links, strikethrough, task
/// lists, math; raw HTML kept so that any that gets through shows.
fn gfm(md: &str) -> String {
    let mut o = comrak::Options::default();
    o.extension.table = true;
    o.extension.autolink = true;
    o.extension.strikethrough = true;
    o.extension.tasklist = true;
    o.extension.math_dollars = true;
    o.render.r#unsafe = true;
    comrak::markdown_to_html(md, &o)
}

/// `html` without its `<pre>` and `<code>` elements (where GitHub
/// renders no mention, link or markup).
fn outside_code(html: &str) -> String {
    let re = regex::Regex::new(r"(?s)<pre>.*?</pre>|<code>.*?</code>").unwrap();
    re.replace_all(html, "").into_owned()
}

#[test]
fn hostile_text_is_inert_in_markdown() {
    let tmp = hostile_dir("tok-not-a-secret-here");
    let md = render_dir(tmp.path(), Format::Markdown);
    let html = gfm(&md);
    // One heading of level 2, the real one; the excerpt's and the
    // release's "## mmci: PASS" are text.
    let h2: Vec<&str> = html.matches("<h2>").collect();
    assert_eq!(h2.len(), 1, "{html}");
    assert!(html.contains("<h2>mmci: FAIL :x:</h2>"), "{html}");
    // The only links are the results URL's.
    for href in html.split("href=\"").skip(1) {
        assert!(
            href.starts_with("https://ci.example.org/"),
            "link {href:.60}"
        );
    }
    // The marker comment is the report's own, first; no other.
    let outside = outside_code(html.split_once('\n').unwrap().1);
    for markup in [
        "<img",
        "<script",
        "<!--",
        "<a href=\"https://evil",
        "<del>",
        "<span data-math",
    ] {
        assert!(!outside.contains(markup), "{markup} in\n{outside}");
    }
    // Outside code, no @name (GitHub mentions) and no #1 (a reference).
    let mention = regex::Regex::new(r"[@#][A-Za-z0-9]").unwrap();
    assert!(!mention.is_match(&outside), "{outside}");
    // The excerpt is one code block, all of it, after the open details.
    let pre = html
        .split("<pre><code>")
        .nth(1)
        .unwrap()
        .split("</code></pre>")
        .next()
        .unwrap();
    assert!(pre.contains("## mmci: PASS :white_check_mark:"), "{pre}");
    assert!(pre.contains("Tested-by: Evil"), "{pre}");
    assert!(pre.trim_end().ends_with("````"), "{pre}");
    // The marker comment is the report's own, first.
    assert!(md.starts_with("<!-- mmci-report "), "{md}");
    // The release is not one; the description keeps its cell.
    assert!(html.contains("<td>(invalid release)</td>"), "{html}");
    assert!(html.contains("| broken | cell</td>"), "{html}");
    // No control or bidi character reaches GitHub.
    assert!(
        !md.contains(|c: char| c.is_control() && c != '\n' || c == '\u{202e}'),
        "{md:?}"
    );
    insta::assert_snapshot!("hostile_markdown", md);
}

#[test]
fn hostile_text_is_inert_in_email_and_html() {
    let tmp = hostile_dir("tok-not-a-secret-here");
    let mail = render_dir(tmp.path(), Format::Email);
    assert!(
        !mail.contains(|c: char| c.is_control() && c != '\n'),
        "{mail:?}"
    );
    for line in mail.lines() {
        // No trailer but the report's own: this one fails, so its
        // Reported-by.
        if line == "| Reported-by: mmci <mmci@kernel-ci.invalid>" {
            continue;
        }
        let t = line.trim_start().to_ascii_lowercase();
        assert!(!t.contains("-by:") && !t.starts_with("tested-by"), "{line}");
        // Console lines are indented: none reads as the report's own.
        assert!(
            !line.starts_with("## ") && !line.starts_with("```"),
            "{line}"
        );
    }
    assert!(mail.contains("(invalid release)"), "{mail}");
    assert!(
        mail.contains("\n  Tested by: Evil <evil@example.org>\n"),
        "{mail}"
    );
    insta::assert_snapshot!("hostile_email", mail);
    let html = render_dir(tmp.path(), Format::Html);
    assert!(!html.contains("<script>alert") && html.contains("&lt;script&gt;alert"));
    assert!(!html.contains("<!-- hide") && !html.contains('\u{1b}'));
    assert!(html.contains("<td>(invalid release)</td>"));
    // The terminal reports: no escape sequence, CR or bidi override
    // reaches the terminal, and the release is not printed as it came.
    let c = analyse_dir(tmp.path(), &Default::default(), &Options::default()).unwrap();
    let m = mmci::results::dir::read_manifest(tmp.path())
        .unwrap()
        .unwrap();
    let terminal = [
        mmci::report::comparison::render(&c),
        mmci::report::runs_table::render_kernels(&m),
    ]
    .concat();
    assert!(terminal.contains("ESC cleared the screen"), "{terminal}");
    assert!(
        !terminal.contains(|c: char| c.is_control() && c != '\n' || c == '\u{202e}'),
        "{terminal:?}"
    );
    assert!(terminal.contains("(invalid release)") && !terminal.contains("6.12.0 "));
}

#[test]
fn the_reproduce_line_runs_as_one_argument() {
    let tmp = hostile_dir("tok-not-a-secret-here");
    let md = render_dir(tmp.path(), Format::Markdown);
    let command = md
        .lines()
        .find(|l| l.starts_with("mmci run "))
        .unwrap_or_else(|| panic!("{md}"));
    let canary = Path::new("/tmp/mmci-pwned");
    let _ = std::fs::remove_file(canary);
    // What a shell hands mmci when the line is pasted.
    let args = command.strip_prefix("mmci ").unwrap();
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("printf '%s\\n' {args}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let argv: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let at = argv.iter().position(|a| a == "--lore").unwrap();
    assert_eq!(argv[at + 1], "x'$(touch${IFS}/tmp/mmci-pwned)'`id`\"@evil");
    assert!(!canary.exists(), "the message-id ran a command");
}

/// Probe 39: 300 distinct new splats with 80-line excerpts.
fn three_hundred_splats() -> tempfile::TempDir {
    let splats: Vec<serde_json::Value> = (0..300)
        .map(|i| {
            let excerpt: Vec<String> = (0..80)
                .map(|j| format!("WARNING: CPU: 0 PID: {i} at mm/f{i}.c:{j} func_{i:03}+0x{j:x}/0x100 padding"))
                .collect();
            serde_json::json!({
                "kind": "warning",
                "title": format!("WARNING in func_{i:03}"),
                "count": 1,
                "line": 1,
                "excerpt": excerpt.join("\n"),
            })
        })
        .collect();
    with_patched_splats(serde_json::Value::Array(splats))
}

#[test]
fn splats_past_the_limit_are_cut_never_emptied() {
    let tmp = three_hundred_splats();
    let dir = tmp.path();
    let c = analyse_dir(dir, &Default::default(), &Options::default()).unwrap();
    assert_eq!(c.splats.len(), 300);
    let m = mmci::results::dir::read_manifest(dir).unwrap().unwrap();
    let input = ReportInput::new(&c, &m);
    let md = markdown::render(&input, markdown::CHECK_RUN_LIMIT);
    assert!(md.len() <= markdown::CHECK_RUN_LIMIT, "{} bytes", md.len());
    assert!(md.contains("## mmci: FAIL :x:"), "{md:.500}");
    // Every new splat is still listed; excerpts went, and the report says
    // how many.
    assert_eq!(md.matches("| **new** |").count(), 300);
    let kept = md.matches("<details open>").count();
    assert!(kept >= 1, "no excerpt kept");
    assert!(
        md.contains(&format!("the first occurrence of {} splat(s)", 300 - kept)),
        "{}",
        &md[md.find("Cut to fit").unwrap_or(0)..][..200]
    );
    // With a few kB, the splat rows go too; with less, the verdict alone.
    let small = markdown::render(&input, 6_000);
    assert!(
        small.len() <= 6_000 && small.contains("## mmci: FAIL :x:"),
        "{small}"
    );
    assert!(small.contains("more new splat(s)"), "{small}");
    let tiny = markdown::render(&input, 1_500);
    assert!(tiny.len() <= 1_500, "{} bytes: {tiny}", tiny.len());
    assert!(tiny.starts_with("<!-- mmci-report ") && tiny.contains("## mmci: FAIL :x:"));
    assert!(
        tiny.contains("Report too large") && tiny.contains("HTML/JSON report"),
        "{tiny}"
    );
}

#[test]
fn report_command_never_writes_an_empty_report_and_redacts_secrets() {
    let token = "ghs_test0nly0token0planted0in0a0warning";
    let tmp = hostile_dir(token);
    let out_dir = tempfile::tempdir().unwrap();
    let md = out_dir.path().join("report.md");
    let run = |dir: &Path, format: &str, output: &Path| {
        common::bin_blocking()
            .arg("report")
            .arg("--results")
            .arg(dir)
            .args(["--format", format, "--output"])
            .arg(output)
            .env("GITHUB_TOKEN", token)
            .output()
            .unwrap()
    };
    for format in ["markdown", "email", "html"] {
        let o = run(tmp.path(), format, &md);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&md).unwrap();
        assert!(
            !text.contains(token),
            "{format}: the token reached the report"
        );
        assert!(text.contains("[redacted]"), "{format}");
    }
    // Probe 39 through the binary: a non-empty FAIL, exit 0.
    let splats = three_hundred_splats();
    let o = run(splats.path(), "markdown", &md);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(!text.is_empty() && text.len() <= markdown::CHECK_RUN_LIMIT);
    assert!(text.contains("## mmci: FAIL :x:"));
}
