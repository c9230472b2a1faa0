//! Checks, contexts, links and the requests a dry run prints.

use super::*;

#[test]
fn contexts_and_urls() {
    for ok in ["mmci", "mmci-mm", "mmci-x86_64-smoke"] {
        assert!(check_context(ok).is_ok(), "{ok}");
    }
    for bad in ["", "mmci-", "other", "mmci x", "mmci/mm", "mmcix"] {
        assert!(check_context(bad).is_err(), "{bad}");
    }
    assert!(check_context(&format!("mmci-{}", "a".repeat(251))).is_err());
    let long = format!("https://x.org/{}", "a".repeat(200));
    let cases: &[(&str, Option<&str>)] = &[
        ("https://github.com/o/r/actions/runs/1", None),
        ("http://localhost:8080/run/1", None),
        ("http://127.0.0.1:18000/x", None),
        ("https://[::1]/x", None),
        ("https://ci.xn--p1ai/r", None),
        (
            "https://ci/runs/1",
            Some("not a domain name with a top-level domain"),
        ),
        ("https://ci.example.c1/r", Some("not a domain name")),
        (
            "https://bad_host.example.org/r",
            Some("a label patchwork refuses"),
        ),
        (
            "https://-x.example.org/r",
            Some("a label patchwork refuses"),
        ),
        ("ftp://x.org/y", Some("not http(s)")),
        ("not a url", Some("white space")),
        ("/runs/1", Some("not a URL")),
        (&long, Some("longer than 200")),
    ];
    for (url, want) in cases {
        match (check_target_url(url), want) {
            (Ok(()), None) => {}
            (Err(e), Some(w)) => assert!(e.to_string().contains(w), "{url}: {e}"),
            (got, _) => panic!("{url}: {got:?}"),
        }
    }
}

#[test]
fn states_follow_the_verdict() {
    use crate::analysis::Status;
    let cases = [
        (Status::Pass, "success"),
        (Status::Fail, "fail"),
        (Status::Inconclusive, "warning"),
    ];
    for (s, want) in cases {
        assert_eq!(CheckState::of_verdict(s).as_str(), want);
    }
}

#[test]
fn stages_are_checks_of_their_own_under_the_context() {
    use stages::{Stage, StageOutcome};
    let url = Some("https://ci.example.org/r/1");
    let list = [
        Stage {
            name: "apply".into(),
            outcome: StageOutcome::Judged {
                state: CheckState::Fail,
                description: "mmci: patch 2/2 (mm: x) does not apply".into(),
            },
        },
        Stage {
            name: "boot".into(),
            outcome: StageOutcome::NoData("the series did not apply".into()),
        },
    ];
    let posts = stage_postings("mmci-kvm", &list, url);
    let got: Vec<(&str, &str, &str, bool)> = posts
        .iter()
        .map(|p| {
            (
                p.check.context.as_str(),
                p.check.state.as_str(),
                p.check.description.as_str(),
                p.only_over_pending,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "mmci-kvm-apply",
                "fail",
                "mmci: patch 2/2 (mm: x) does not apply",
                false
            ),
            (
                "mmci-kvm-boot",
                "warning",
                "mmci: no result for this stage: the series did not apply",
                true
            ),
        ]
    );
    assert!(posts.iter().all(|p| p.check.target_url.as_deref() == url));
    let start = start_postings("mmci", &["apply".into(), "mglru_isolation".into()], None);
    let got: Vec<(&str, CheckState, bool)> = start
        .iter()
        .map(|p| (p.check.context.as_str(), p.check.state, p.only_over_pending))
        .collect();
    assert_eq!(
        got,
        [
            ("mmci-apply", CheckState::Pending, false),
            ("mmci-mglru_isolation", CheckState::Pending, false)
        ]
    );

    // The dry run names what is posted only over a pending check,
    // then prints every POST on every patch.
    let summary = Posting::of(Check {
        state: CheckState::Fail,
        context: "mmci-kvm".into(),
        target_url: None,
        description: "d".into(),
    });
    let target = |index: u32, id: Option<u64>| Target {
        index,
        title: format!("patch {index}"),
        msgid: format!("{index}@x.org"),
        id,
    };
    let p = PatchworkPost {
        url: "https://pw.example.org".into(),
        project: None,
        targets: vec![target(1, Some(11)), target(2, None)],
        checks: std::iter::once(summary).chain(posts).collect(),
        token: None,
        limits: Default::default(),
    };
    let dry = dry_run(&p);
    assert!(
        dry.contains("# no result here for mmci-kvm-boot: each is posted only over a pending check of its context (--start)\n"),
        "{dry}"
    );
    assert_eq!(
        dry.matches("\nPOST https://pw.example.org/api/1.3/patches/11/checks/\n")
            .count(),
        3,
        "{dry}"
    );
    assert_eq!(
        dry.matches("\nPOST https://pw.example.org/api/1.3/patches/{id of <2@x.org>}/checks/\n")
            .count(),
        3,
        "{dry}"
    );
    assert_eq!(dry.matches("\nGET ").count(), 1, "{dry}");
}

#[test]
fn bodies_and_lookups() {
    let c = Check {
        state: CheckState::Warning,
        context: "mmci".into(),
        target_url: None,
        description: "d".into(),
    };
    assert_eq!(
        check_body(&c),
        json!({"state": "warning", "context": "mmci", "description": "d"})
    );
    assert_eq!(
        lookup_url("https://pw.example.org", "a+b/c@x.org", Some("linux-mm")),
        "https://pw.example.org/api/1.3/patches/?msgid=a%2Bb%2Fc%40x.org&project=linux-mm"
    );
    let e = resolve_token(None, TOKEN_ENV, |_| Some("  ".into())).unwrap_err();
    assert!(e.to_string().contains("$MMCI_PATCHWORK_TOKEN"), "{e}");
    assert_eq!(
        resolve_token(None, TOKEN_ENV, |_| Some("t0k\n".into())).unwrap(),
        "t0k"
    );
    // --patchwork-token-env names another variable: that one is read.
    let env = |k: &str| (k == "PW_BOT").then(|| "bot-token".to_string());
    assert_eq!(resolve_token(None, "PW_BOT", env).unwrap(), "bot-token");
    let e = resolve_token(None, "PW_OTHER", env).unwrap_err();
    assert!(e.to_string().contains("$PW_OTHER"), "{e}");
}
