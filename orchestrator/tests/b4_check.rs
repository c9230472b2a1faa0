//! `mmci b4-check` as b4 review runs it: b4's own check runner
//! (`b4.review.checks.run_perpatch_checks` / `run_series_checks`, PyPI b4)
//! is called as `b4 review` calls it, with `mmci b4-check` configured as
//! the external command, on a patch and the cover letter of a series that
//! has a results dir. b4 comes from the venv ./mmci-setup --test makes in
//! tools/b4/venv; without it the test fails saying so.
//!
//! The verdicts b4 shows are mmci's: INCONCLUSIVE from a results dir with
//! no runs, PASS and FAIL from the recorded default matrix (real runs of
//! the bundled series and its base, tests/fixtures/default-matrix).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_mmci");

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv's python with b4 importable, or a failure naming the fix.
fn b4_python() -> PathBuf {
    let py = repo_root().join("tools/b4/venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import b4.review.checks"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "b4 is not installed in {}: run ./mmci-setup --test (it makes that venv and pip-installs b4)",
        py.display()
    );
    py
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A results dir of one run of the bundled series (no runs recorded, so
/// the verdict is INCONCLUSIVE: b4 shows it as a warning).
fn results_dir(root: &Path, created_unix: u64) -> PathBuf {
    common::results::write_bundled(&root.join(format!("run-{created_unix}")), created_unix)
}

/// b4's runner, as `b4 review` calls it, on the message in `mail` with
/// `cmd` as the check command: the results it would show, as JSON.
fn b4_runs(mail: &Path, cmd: &str, series_check: bool) -> serde_json::Value {
    let script = r#"
import email.parser, json, sys
import b4
from b4.review import checks
raw = open(sys.argv[1], 'rb').read()
msg = email.parser.BytesParser(policy=b4.emlpolicy).parsebytes(raw)
msgid = msg.get('message-id', '').strip('<> ')
if sys.argv[3] == 'series':
    out = checks.run_series_checks((msgid, msg), [sys.argv[2]], '.')
else:
    out = checks.run_perpatch_checks([(msgid, msg)], [sys.argv[2]], '.')[msgid]
print(json.dumps(out))
"#;
    let o = Command::new(b4_python())
        .args(["-c", script, mail.to_str().unwrap(), cmd])
        .arg(if series_check { "series" } else { "patch" })
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

#[test]
fn b4s_check_runner_shows_the_newest_mmci_verdict_of_the_series() {
    let t = tempfile::tempdir().unwrap();
    let results = t.path().join("mmci-results");
    results_dir(&results, 100);
    let newest = results_dir(&results, 200);
    let series = common::results::bundled_series();
    let patch = &series.patches[0];
    let mail = t.path().join("patch.eml");
    std::fs::write(&mail, &patch.raw).unwrap();
    let cmd = format!(
        "{BIN} b4-check --results {} --url https://ci.example/r/1",
        results.display()
    );
    let got = b4_runs(&mail, &cmd, false);
    let list = got.as_array().unwrap_or_else(|| panic!("{got}"));
    assert_eq!(list.len(), 1, "{got}");
    let c = &list[0];
    assert_eq!(c["tool"], "mmci", "{got}");
    assert_eq!(c["status"], "warn", "INCONCLUSIVE is a warning: {got}");
    assert!(
        c["summary"].as_str().unwrap().starts_with("INCONCLUSIVE"),
        "{got}"
    );
    assert_eq!(c["url"], "https://ci.example/r/1", "{got}");
    assert!(
        c["details"]
            .as_str()
            .unwrap()
            .contains(&newest.display().to_string()),
        "the newest results dir: {got}"
    );

    // The cover letter, as the series check.
    let cover = series
        .cover
        .as_ref()
        .expect("the bundled series has a cover");
    let mbox = std::fs::read(repo_root().join("kernels/series/mglru-isolation-v1.mbox")).unwrap();
    let cover_raw = mmci::series::mails_from_mbox(&mbox)
        .into_iter()
        .find(|m| m.message_id == cover.message_id)
        .expect("the cover is in the mbox")
        .raw;
    let cover_mail = t.path().join("cover.eml");
    std::fs::write(&cover_mail, cover_raw).unwrap();
    let got = b4_runs(&cover_mail, &cmd, true);
    assert_eq!(got.as_array().map(Vec::len), Some(1), "{got}");

    // A message of no tested series: nothing shown.
    let other = t.path().join("other.eml");
    std::fs::write(
        &other,
        "Message-ID: <nobody@example.org>\nSubject: [PATCH] x\nFrom: a@b\n\nbody\n",
    )
    .unwrap();
    assert_eq!(b4_runs(&other, &cmd, false), serde_json::json!([]));

    // A missing results dir: b4 shows mmci's error as a failed check.
    let bad = format!(
        "{BIN} b4-check --results {}",
        t.path().join("nope").display()
    );
    let got = b4_runs(&mail, &bad, false);
    assert_eq!(got[0]["status"], "fail", "{got}");
    assert!(
        got[0]["details"]
            .as_str()
            .unwrap()
            .contains("no such directory"),
        "{got}"
    );
}

/// The bundled series' first patch, as b4 hands it to the check.
fn patch_mail(dir: &Path) -> PathBuf {
    let mail = dir.join("patch.eml");
    std::fs::write(&mail, &common::results::bundled_series().patches[0].raw).unwrap();
    mail
}

/// The one check b4's runner shows for the first patch with `cmd`.
fn the_check(dir: &Path, cmd: &str) -> serde_json::Value {
    let got = b4_runs(&patch_mail(dir), cmd, false);
    assert_eq!(got.as_array().map(Vec::len), Some(1), "{got}");
    let c = got[0].clone();
    assert_eq!(c["tool"], "mmci", "{got}");
    c
}

/// The recorded default matrix (real runs under TCG) as a run of the
/// bundled series: PASS and FAIL as b4 shows them. The verdicts are mmci's
/// analysis of those runs with the default matrix's expectations, and an
/// `--expect` on the check command, as a reviewer's b4 config can give it.
/// Under TCG `touches no_regression` (a throughput) is a timing, so never
/// decided: `touches=nonzero` (the workload wrote pages) is what such runs
/// can check.
#[test]
fn b4s_check_runner_shows_a_pass_and_a_fail_of_recorded_runs() {
    let t = tempfile::tempdir().unwrap();
    let results = t.path().join("mmci-results");
    let series = common::results::bundled_series();
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(common::results::recorded_default_matrix().join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        m["kernels"][1]["kernel"]["series_hash"], series.hash,
        "the recorded runs are of the bundled series"
    );
    let dir = common::results::write_recorded(&results.join("recorded"), &series, None);
    let dir = dir.display().to_string();
    let cmd = |expect: &[&str]| {
        let mut c = format!("{BIN} b4-check --results {}", results.display());
        for e in expect {
            c.push_str(&format!(" --expect {e}"));
        }
        c
    };

    // As recorded: the throughput cannot be judged under TCG.
    let c = the_check(t.path(), &cmd(&[]));
    assert_eq!(c["status"], "warn", "{c}");
    assert!(
        c["summary"].as_str().unwrap().starts_with("INCONCLUSIVE: "),
        "{c}"
    );
    let details = c["details"].as_str().unwrap();
    assert!(details.contains(&dir), "{c}");
    assert!(
        details.contains("- threads=64 patched: touches no_regression: timing metric under TCG: functional only\n"),
        "{c}"
    );

    // PASS: every expectation met, the OOM guard passed; no finding. The
    // recorded base was OOM-killed in 4 of 5 runs at 64 threads too, so
    // the swap guards there compare 1 run against 5: the cell must be one
    // the matrix calibrated for base OOM kills, where the OOM guard
    // judges it (otherwise the guards the survivors cannot decide leave
    // the verdict INCONCLUSIVE).
    let mpath = std::path::Path::new(&dir).join(mmci::results::dir::MANIFEST);
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["plan"]["cells"][0]["regime"] = "most".into();
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let c = the_check(t.path(), &cmd(&["touches=nonzero"]));
    assert_eq!(c["status"], "pass", "{c}");
    let summary = c["summary"].as_str().unwrap();
    assert_eq!(summary.split(':').next(), Some("PASS"), "{c}");
    assert!(
        summary.contains("no regression found in 20 runs on 2 cells (guards: oom_kills)"),
        "{c}"
    );
    assert!(summary.contains("expectation(s) met"), "{c}");
    assert_eq!(
        c["details"].as_str().unwrap(),
        format!("results: {dir}\n"),
        "a clean pass lists no reason: {c}"
    );

    // FAIL: a reviewer who expects the series to lower the isolation
    // peak; the patched kernel raises it in both cells (p=0.0079, 5 runs
    // a side).
    let c = the_check(
        t.path(),
        &cmd(&["touches=nonzero", "nr_isolated_peak=decrease"]),
    );
    assert_eq!(c["status"], "fail", "{c}");
    let summary = c["summary"].as_str().unwrap();
    assert_eq!(summary.split(':').next(), Some("FAIL"), "{c}");
    assert!(summary.contains("2 findings in 20 runs on 2 cells"), "{c}");
    let details = c["details"].as_str().unwrap();
    assert!(details.starts_with(&format!("results: {dir}\n")), "{c}");
    for cell in ["threads=64", "threads=192"] {
        assert!(
            details.contains(&format!(
                "- {cell} patched: nr_isolated_peak decrease: significant change the other way: 0 -> "
            )),
            "{cell}: {c}"
        );
    }
}

#[test]
fn a_message_id_can_be_given_instead_of_the_message() {
    let t = tempfile::tempdir().unwrap();
    let results = t.path().join("r");
    results_dir(&results, 1);
    let id = format!(
        "<{}>",
        common::results::bundled_series().patches[0].message_id
    );
    let o = common::bin_blocking()
        .args([
            "b4-check",
            "--results",
            results.to_str().unwrap(),
            "--message-id",
            &id,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["tool"], "mmci", "{v}");
}
