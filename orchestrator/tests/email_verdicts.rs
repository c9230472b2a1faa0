//! The email of each verdict as `mmci post email` would send it, threaded
//! on the bundled series: a FAIL goes to the author and the thread with
//! 0-day's Reported-by/Closes block and a first line naming the finding;
//! a PASS goes to nobody of the thread by default (to the author alone
//! with --to-author, its Tested-by only when asked); NO VERDICT is never
//! mailed to the thread and never carries Tested-by. Every message is
//! `Auto-Submitted: auto-generated`. Synthetic results dirs (KVM), the
//! FAIL made by tripling the candidate's swap-out traffic.

mod common;

use std::path::Path;

use mmci::analysis::model::{ClaimCheck, Comparison, Finding, Status};
use mmci::analysis::synthetic::synthetic;
use mmci::analysis::verdict::verdict;
use mmci::analysis::{compare, Options};
use mmci::guest::vm::Accel;
use mmci::post::email::{self, Audience, EmailOptions};
use mmci::report::{self, email as report_email, Mail, ReportInput};
use mmci::results::dir::Manifest;

const FROM: &str = "mmci bot <mmci@ci.example.org>";
const MESSAGE_ID: &str = "mmci-1796040000-5ca1ab1e@ci.example.org";

fn bundled_series() -> mmci::series::Series {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    let mails = mmci::series::mails_from_mbox(&std::fs::read(path).unwrap());
    mmci::series::assemble(&mails, "bundled").unwrap()
}

/// The 20 synthetic runs (2 cells), edited by `edit`, compared.
fn comparison(
    edit: impl FnOnce(&mut Manifest, &mut Vec<(String, mmci::results::RunResult)>),
) -> (Comparison, Manifest) {
    let (mut m, runs, _) = synthetic(20);
    let mut runs: Vec<_> = runs.into_iter().collect();
    edit(&mut m, &mut runs);
    let runs = runs.into_iter().collect();
    let c = compare(&m, &runs, &Default::default(), vec![], &Options::default());
    (c, m)
}

/// The candidate's swap-out traffic tripled, and a cover letter claim it
/// contradicts beside one it agrees with.
fn fail() -> (Comparison, Manifest) {
    let (mut c, m) = comparison(|_, runs| {
        for (_, r) in runs.iter_mut().filter(|(id, _)| id.contains("-patched-")) {
            let x = r.metrics.mglru_mut().unwrap();
            x.pswpout = x.touches * 3;
        }
    });
    let claim = |row: &str, claimed: &str, measured: &str, finding, reason: &str| ClaimCheck {
        variant: "patched".into(),
        setup: "64 threads".into(),
        row: row.into(),
        line: 12,
        claimed: claimed.into(),
        metric: Some("pswpout_per_ktouch".into()),
        cell: Some("threads=1".into()),
        measured: Some(measured.into()),
        p: Some(0.0079),
        finding,
        by_construction: false,
        reason: reason.into(),
    };
    c.claims = vec![
        claim(
            "pswpout per 1,000 touches",
            "974 -> 746 (-23.4%)",
            "+277.1% (p=0.0079)",
            Finding::Contradicts,
            "significant the other way: claimed down, measured up, p=0.0079",
        ),
        ClaimCheck {
            metric: None,
            cell: None,
            measured: None,
            p: None,
            ..claim(
                "Tested-by: total touches",
                "246,499,132,369 -> 301,456,426,692",
                "",
                Finding::NotMeasured,
                "no metric of mmci's is this row",
            )
        },
    ];
    c.verdict = verdict(&c.cells, &c.variants, &c.splats, &c.claims);
    assert_eq!(c.verdict.status, Status::Fail);
    (c, m)
}

/// Under TCG with 2 runs a side: nothing can be judged.
fn no_verdict() -> (Comparison, Manifest) {
    let (c, m) = comparison(|m, runs| {
        runs.retain(|(id, _)| id.ends_with("-r1") || id.ends_with("-r2"));
        for (_, r) in runs.iter_mut() {
            r.accel = Accel::Tcg;
        }
        m.plan.repeats = 2;
    });
    assert_eq!(c.verdict.status, Status::NoVerdict, "{:?}", c.verdict);
    (c, m)
}

fn pass() -> (Comparison, Manifest) {
    let (c, m) = comparison(|_, _| {});
    assert_eq!(c.verdict.status, Status::Pass);
    (c, m)
}

/// The body `mmci report --format email --from FROM --message-id ID
/// --tested-by` renders.
fn body(c: &Comparison, m: &Manifest) -> String {
    let mut input = ReportInput::new(c, m);
    input.results_url = Some("https://ci.example.org/mmci/20261130-131930/".into());
    input.mail = Mail {
        tested_by: Some(report::DEFAULT_TESTED_BY.into()),
        from: FROM.into(),
        message_id: Some(MESSAGE_ID.into()),
    };
    let text = report_email::render(&input);
    for (i, l) in text.lines().enumerate() {
        assert!(l.is_ascii(), "line {}: not ASCII: {l:?}", i + 1);
        // A trailer's URL cannot be wrapped.
        if !l.starts_with("| Closes: ") {
            assert!(
                l.len() <= report_email::WIDTH,
                "line {} is long: {l:?}",
                i + 1
            );
        }
    }
    text
}

/// What `mmci post email` prints for this verdict: the dry run, or the
/// note that it is not mailed.
fn post(status: Status, body: &str, to_author: bool) -> String {
    let opts = EmailOptions {
        from: Some(FROM.into()),
        audience: email::audience(status, to_author, false),
        message_id: email::message_id_of(None, body)
            .unwrap()
            .or(Some("fixed-for-the-snapshot@ci.example.org".into())),
        date: Some(1_796_040_000),
        ..Default::default()
    };
    if email::addressed_to_nobody(&opts) {
        return email::not_mailed(status);
    }
    let o = email::build(&bundled_series(), body, &opts).unwrap();
    email::render_dry_run(&o).replace("\r\n", "\n")
}

#[test]
fn a_fail_goes_to_the_thread_with_reported_by_and_closes() {
    let (c, m) = fail();
    let text = body(&c, &m);
    assert!(
        text.starts_with(
            "mmci noticed a 277.1% regression of pswpout_per_ktouch (swap-out traffic\n    \
             per 1,000 touches) on threads=1 (x86_64) with patched\n"
        ),
        "{text}"
    );
    assert!(text.contains(&format!(
        "kindly add following tags\n| Reported-by: {FROM}\n| Closes: https://lore.kernel.org/r/{MESSAGE_ID}\n"
    )));
    // Asked for, but a FAIL carries no Tested-by; the claim's row is not
    // a trailer either.
    assert!(!text.contains("Tested-by:"), "{text}");
    assert!(text.contains("Regression policy"), "{text}");
    assert!(
        text.contains("  contradicts: pswpout per 1,000 touches"),
        "{text}"
    );
    let out = post(Status::Fail, &text, false);
    for rcpt in [
        "mmci-dev@example.org",
        "linux-mm@kvack.org",
        "linux-kernel@vger.kernel.org",
    ] {
        assert!(out.contains(&format!("# RCPT TO:<{rcpt}>\n")), "{out}");
    }
    // The thread's lists, not its people (review M3): said.
    assert!(
        !out.contains("# RCPT TO:<akpm@linux-foundation.org>"),
        "{out}"
    );
    assert!(
        out.contains("# left out: 1 address(es) of the thread that are not a mailing list's"),
        "{out}"
    );
    // Sent under the Message-ID its Closes names.
    assert!(
        out.contains(&format!("\nMessage-ID: <{MESSAGE_ID}>\n")),
        "{out}"
    );
    assert!(out.contains("\nAuto-Submitted: auto-generated\n"), "{out}");
    assert!(out.contains(
        "\nSubject: Re: [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation\n"
    ));
    insta::assert_snapshot!(out);
}

#[test]
fn a_pass_is_not_addressed_to_the_list() {
    let (c, m) = pass();
    let text = body(&c, &m);
    assert!(
        text.starts_with("mmci found no regression in 20 runs on 2 cells.\n"),
        "{text}"
    );
    // KVM and asked for: the Tested-by goes; no Reported-by, no Closes.
    assert!(
        text.contains("\nTested-by: mmci <mmci@kernel-ci.invalid>\n"),
        "{text}"
    );
    assert!(
        !text.contains("Reported-by") && !text.contains("Closes:"),
        "{text}"
    );
    let note = post(Status::Pass, &text, false);
    assert_eq!(
        note,
        "# not sent: the verdict is PASS, and only a FAIL is mailed to the thread.\n\
         # The verdict is in the report and the patchwork check (mmci post patchwork).\n\
         # --to-author sends it to the series' author alone; --to/--cc to whom you name.\n"
    );
    let out = post(Status::Pass, &text, true);
    let rcpts: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("# RCPT TO:"))
        .collect();
    assert_eq!(rcpts, ["# RCPT TO:<mmci-dev@example.org>"]);
    assert!(!out.contains("\nCc:"), "{out}");
    insta::assert_snapshot!(format!("{note}\n$ mmci post email ... --to-author\n{out}"));
}

#[test]
fn no_verdict_is_never_mailed_to_the_thread_nor_tested() {
    let (c, m) = no_verdict();
    let text = body(&c, &m);
    assert!(
        text.starts_with("mmci has no verdict on this series: "),
        "{text}"
    );
    assert!(!text.contains("Tested-by:"), "{text}");
    assert!(!text.contains("Reported-by"), "{text}");
    let note = post(Status::NoVerdict, &text, false);
    assert!(note.starts_with("# not sent: the verdict is NO VERDICT"));
    assert_eq!(
        email::audience(Status::NoVerdict, true, false),
        Audience::Author
    );
    insta::assert_snapshot!(format!("{note}\n$ mmci report --format email\n{text}"));
}

/// `mmci report --format email` on a FAIL picks the Message-ID its
/// `Closes:` names, and `mmci post email --body` sends under it; a
/// `--tested-by` the verdict refuses is left out with a note.
#[test]
fn the_report_names_the_message_id_post_sends_under() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-matrix");
    let tmp = tempfile::tempdir().unwrap();
    let body = tmp.path().join("report.txt");
    // Every run has 0 OOM kills: `nonzero` fails.
    let o = common::bin_blocking()
        .arg("report")
        .arg("--results")
        .arg(&dir)
        .args(["--format", "email", "--expect", "oom_kills=nonzero"])
        .args(["--from", FROM, "--tested-by", "--output"])
        .arg(&body)
        .env_remove("MMCI_EMAIL_FROM")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(
            "mmci: note: no Tested-by: in the email: the verdict is FAIL: a Tested-by: goes only with a PASS"
        ),
        "{err}"
    );
    let text = std::fs::read_to_string(&body).unwrap();
    assert!(
        text.starts_with("mmci noticed that oom_kills is not nonzero on"),
        "{text}"
    );
    assert!(!text.contains("Tested-by:"), "{text}");
    assert!(
        text.contains(&format!("\n| Reported-by: {FROM}\n")),
        "{text}"
    );
    let id = report_email::closes_id(&text).unwrap();
    assert!(
        id.starts_with("mmci-") && id.ends_with("@ci.example.org"),
        "{id}"
    );
    let mbox =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    let o = common::bin_blocking()
        .args(["post", "email", "--series"])
        .arg(&mbox)
        .arg("--body")
        .arg(&body)
        .args(["--from", FROM, "--verdict", "fail"])
        .env_remove("MMCI_EMAIL_FROM")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains(&format!("\r\nMessage-ID: <{id}>\r\n")),
        "{out}"
    );
}
