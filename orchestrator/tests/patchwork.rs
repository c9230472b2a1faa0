//! Patchwork through the binary and the library against a real Patchwork
//! 3.2.1 on loopback (tests/common/patchwork.rs: the upstream release, its
//! REST API, sqlite), loaded with `parsearchive` from the bundled series
//! (v1, v2 and v3) and real lore threads: `series show --patchwork`, `post
//! patchwork --send` with the checks read back through the API (refusals
//! as patchwork words them, a rerun that posts nothing again), `watch
//! --patchwork` (series-completed events in pages, the cursor across
//! restarts). What a real server will not do on demand (429, 5xx,
//! timeouts) is in patchwork_faults.rs.

mod common;

use std::path::Path;

use common::patchwork::{checks, dry_posts, gunzip, results_dir, series_id, Patchwork, PROJECT};
use common::posting::{assert_no_secret, dispatched, github, mmci, out, work, GH_TOKEN};
use serde_json::Value;

const BUNDLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../kernels/series/mglru-isolation.mbox"
);
const KMEM: &str = "clean-v3-0of3-base-commit_memcg-kmem-cache.t.mbox.gz";
const NUMA: &str = "partial-reroll-v2-cover-with-v4-4of4-then-v5-4of4_numa-cling.t.mbox.gz";
const SWAPPINESS: &str = "cover-V2-0of1-unversioned-patch-1of1_memory-reclaim-swappiness.t.mbox.gz";

fn bundled() -> Vec<u8> {
    std::fs::read(BUNDLED).unwrap()
}

fn thread(file: &str) -> Vec<u8> {
    gunzip(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/lore-threads")
            .join(file),
    )
}

#[tokio::test]
async fn series_are_read_from_a_real_patchwork() {
    let pw = Patchwork::start(&[bundled(), thread(KMEM), thread(NUMA)], 30).await;
    let (v1, v1_patches) = series_id(&pw, "MGLRU isolation", 1).await;
    let (v2, _) = series_id(&pw, "MGLRU isolation", 2).await;
    assert_ne!(v1, v2);
    let store = work();
    // Patchwork 3.2.1 serves 1.1 to 1.3; mmci speaks the newest.
    let client = mmci::series::patchwork::Client::new(&pw.base, None, Default::default()).unwrap();
    assert_eq!(client.version().await, "1.3");
    for v in ["1.1", "1.2", "1.3"] {
        let index = pw.get(&format!("/api/{v}/")).await;
        assert!(
            mmci::series::patchwork::version::serves_what_mmci_needs(&index),
            "{v}: {index}"
        );
    }

    // The library's source: the series, its cover letter (from its own
    // mbox) and its patch ids.
    let source = mmci::series::SeriesSpec::Patchwork {
        url: pw.base.clone(),
        series: v1,
    };
    let (s, origin) = mmci::series::load_source(&source, &Default::default(), store.path())
        .await
        .unwrap();
    assert_eq!((s.version, s.total), (1, 2));
    assert_eq!(
        s.cover.as_ref().unwrap().subject,
        "[PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation"
    );
    let origin = origin.unwrap();
    assert_eq!(
        (origin.series, origin.project.as_deref()),
        (v1, Some(PROJECT))
    );
    let ids: Vec<u64> = origin.patches.iter().map(|p| p.id).collect();
    assert_eq!(ids, v1_patches);
    for (o, p) in origin.patches.iter().zip(&s.patches) {
        assert_eq!(o.msgid, p.message_id.trim_matches(|c| c == '<' || c == '>'));
    }

    // `mmci series show`, text and JSON, for v2 and a real thread.
    let uri = pw.base.clone();
    let show = |id: u64, json: bool| {
        let (uri, work) = (uri.clone(), store.path().to_path_buf());
        async move {
            let id = id.to_string();
            let mut args = vec!["series", "show", "--patchwork", &uri, "--pw-series", &id];
            if json {
                args.push("--json");
            }
            mmci(&args, &[], &work).await
        }
    };
    let o = show(v2, false).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        so.starts_with(&format!("patchwork series {v2} ({uri}): v2, 2 patches\n")),
        "{so}"
    );
    assert!(
        so.contains("cover:     [PATCH v2 0/2] mm/vmscan: account and throttle MGLRU isolation\n"),
        "{so}"
    );
    let (kmem, kmem_patches) = series_id(&pw, "kmem_cache", 3).await;
    let o = show(kmem, true).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{err}");
    let json: Value = serde_json::from_str(&so).unwrap();
    let msgids: Vec<String> = json["patches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message_id"].as_str().unwrap().to_string())
        .collect();
    let mut want = vec![];
    for id in &kmem_patches {
        let p = pw.get(&format!("patches/{id}/")).await;
        want.push(
            p["msgid"]
                .as_str()
                .unwrap()
                .trim_matches(['<', '>'])
                .to_string(),
        );
    }
    assert_eq!(msgids, want);
    assert_eq!(msgids.len(), 3);

    // An unknown series: the fetch exit code and patchwork's own words.
    let o = mmci(
        &["series", "show", "--patchwork", &uri, "--pw-series", "9999"],
        &[],
        store.path(),
    )
    .await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(7), "{err}");
    assert!(
        err.contains("HTTP 404: No Series matches the given query. (no such series"),
        "{err}"
    );
}

#[test]
fn matrix_kernel_variants_take_a_patchwork_series() {
    let dir = work();
    let file = dir.path().join("m.yaml");
    let yaml = |k: &str| {
        format!(
            "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - name: pw\n    patchwork: {k}\n"
        )
    };
    std::fs::write(
        &file,
        yaml("{url: 'https://patchwork.kernel.org/', series: 901234}"),
    )
    .unwrap();
    let plan = mmci::matrix::load(&file, &Default::default()).unwrap();
    let v = &plan.variants[1];
    assert_eq!(
        v.describe(),
        "patchwork series 901234 (https://patchwork.kernel.org)"
    );
    let sources = mmci::pipeline::variant_sources(
        &plan,
        &mmci::kernel::KernelSource::bundled(),
        &Default::default(),
        None,
    );
    assert_eq!(
        sources["pw"].series,
        Some(mmci::series::SeriesSpec::Patchwork {
            url: "https://patchwork.kernel.org".into(),
            series: 901234
        })
    );
    for (bad, want) in [
        (
            "{url: 'patchwork.kernel.org', series: 1}",
            "not the http(s) URL",
        ),
        ("{url: 'https://p', series: x}", "invalid u64"),
        ("{url: 'https://p', series: 1, project: a}", "project"),
    ] {
        std::fs::write(&file, yaml(bad)).unwrap();
        let e = mmci::matrix::load(&file, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want) && e.contains("m.yaml"), "{bad}: {e}");
    }
}

#[tokio::test]
async fn checks_are_posted_read_back_and_never_repeated() {
    let pw = Patchwork::start(&[bundled()], 30).await;
    let (v1, patches) = series_id(&pw, "MGLRU isolation", 1).await;
    let root = work();
    let results = results_dir(root.path(), &pw, v1, true).await;
    let r = results.display().to_string();
    let secrets = [pw.token.as_str(), pw.weak_token.as_str()];
    let token = [("MMCI_PATCHWORK_TOKEN", pw.token.as_str())];
    let args = [
        "post",
        "patchwork",
        "--results",
        &r,
        "--context",
        "mmci-smoke",
        "--target-url",
        "https://github.com/mmci/linux/actions/runs/42",
    ];

    // The dry run sends nothing; --send posts exactly what it printed.
    let dry = mmci(&args, &[], root.path()).await;
    let (dry_out, err) = out(&dry);
    assert!(dry.status.success(), "{err}");
    assert!(checks(&pw, &patches).await.iter().all(Vec::is_empty));
    let send: Vec<&str> = args.iter().copied().chain(["--send"]).collect();
    let o = mmci(&send, &token, root.path()).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{err}");
    assert_no_secret(&o, &secrets);
    let posted = checks(&pw, &patches).await;
    let want = dry_posts(&dry_out);
    assert_eq!(want.len(), 2, "{dry_out}");
    for ((url, body), (id, list)) in want.iter().zip(patches.iter().zip(&posted)) {
        assert_eq!(url, &format!("{}/api/1.3/patches/{id}/checks/", pw.base));
        assert_eq!(list.len(), 1, "{list:?}");
        for k in ["state", "context", "target_url", "description"] {
            assert_eq!(list[0][k], body[k], "{k} of the check on patch {id}");
        }
        assert_eq!(list[0]["user"]["username"], "mmci-bot");
    }
    let c =
        mmci::analysis::analyse_dir(&results, &Default::default(), &Default::default()).unwrap();
    let state = mmci::post::patchwork::CheckState::of_verdict(c.verdict.status).as_str();
    assert_eq!(posted[0][0]["state"], state);
    assert!(
        so.contains(&format!("`mmci-smoke` {state} on patch {}", patches[1])),
        "{so}"
    );

    // A rerun: each patch's newest `mmci-smoke` check is read first, and
    // nothing is posted again.
    let o = mmci(&send, &token, root.path()).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(so.matches(": unchanged (").count(), 2, "{so}");
    assert_eq!(
        checks(&pw, &patches).await,
        posted,
        "the rerun posted again"
    );
    // --start after the results: the final state stays.
    let start: Vec<&str> = [
        "post",
        "patchwork",
        "--results",
        &r,
        "--context",
        "mmci-smoke",
        "--start",
        "--send",
    ]
    .to_vec();
    let o = mmci(&start, &token, root.path()).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(so.matches("not set back to pending").count(), 2, "{so}");
    assert_eq!(checks(&pw, &patches).await, posted);
    println!(
        "rerun and --start after the results: {} checks on the {} patches before, {} after",
        posted.iter().map(Vec::len).sum::<usize>(),
        patches.len(),
        checks(&pw, &patches)
            .await
            .iter()
            .map(Vec::len)
            .sum::<usize>()
    );
    // Another context is a check of its own: pending, then its result.
    let pending = [
        "post",
        "patchwork",
        "--results",
        &r,
        "--context",
        "mmci-build",
        "--start",
        "--send",
    ];
    let o = mmci(&pending, &token, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    let o = mmci(
        &[
            "post",
            "patchwork",
            "--results",
            &r,
            "--context",
            "mmci-build",
            "--state",
            "fail",
            "--description",
            "build failed",
            "--send",
        ],
        &token,
        root.path(),
    )
    .await;
    assert!(o.status.success(), "{}", out(&o).1);
    for list in checks(&pw, &patches).await {
        let states: Vec<(&str, &str)> = list
            .iter()
            .map(|c| (c["context"].as_str().unwrap(), c["state"].as_str().unwrap()))
            .collect();
        assert_eq!(
            states,
            [
                ("mmci-smoke", state),
                ("mmci-build", "pending"),
                ("mmci-build", "fail")
            ]
        );
    }

    // Refusals in patchwork's words, exit 9, no token shown (a context
    // with no check yet, so that a check is sent).
    let refused = [
        "post",
        "patchwork",
        "--results",
        &r,
        "--context",
        "mmci-other",
        "--state",
        "fail",
        "--description",
        "x",
        "--send",
    ];
    for (t, want) in [
        // 403, not 401: patchwork's session authentication comes first.
        ("BadToken0000", "HTTP 403: Invalid token. (the token was refused"),
        (pw.weak_token.as_str(), "HTTP 403: You do not have permission to perform this action. (the token's user may not add checks"),
    ] {
        let o = mmci(&refused, &[("MMCI_PATCHWORK_TOKEN", t)], root.path()).await;
        let (_, err) = out(&o);
        assert_eq!(o.status.code(), Some(9), "{err}");
        assert!(err.contains(want), "{err}");
        assert_no_secret(&o, &secrets);
    }
    let o = mmci(&send, &[], root.path()).await;
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o)
        .1
        .contains("no patchwork token: set $MMCI_PATCHWORK_TOKEN"));

    // A link patchwork would refuse is refused before anything is sent:
    // the real server answers it with 400.
    let mut bad = send.clone();
    bad[7] = "https://ci/runs/1";
    let o = mmci(&bad, &token, root.path()).await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--target-url https://ci/runs/1: patchwork would refuse it"),
        "{err}"
    );
    let r = reqwest::Client::new()
        .post(format!("{}/api/1.3/patches/{}/checks/", pw.base, patches[0]))
        .header("Authorization", format!("Token {}", pw.token))
        .header("Content-Type", "application/json")
        .body(
            serde_json::json!({"state": "success", "context": "probe", "target_url": "https://ci/runs/1"})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().await.unwrap().contains("target_url"));
}

/// The newest check of each context on one patch: (state, description).
fn newest(list: &[Value]) -> std::collections::BTreeMap<String, (String, String)> {
    let mut out = std::collections::BTreeMap::new();
    let mut sorted = list.to_vec();
    sorted.sort_by_key(|c| c["id"].as_u64());
    for c in sorted {
        out.insert(
            c["context"].as_str().unwrap().to_string(),
            (
                c["state"].as_str().unwrap().to_string(),
                c["description"].as_str().unwrap_or("").to_string(),
            ),
        );
    }
    out
}

/// `mmci post patchwork ARGS --stages --target-url URL` (and --send
/// with the token), which must succeed: its stdout.
async fn post_stages(pw: &Patchwork, root: &Path, args: &[&str], send: bool) -> String {
    let mut all: Vec<&str> = ["post", "patchwork"].to_vec();
    all.extend(args);
    all.extend(["--stages", "--target-url", RUN_URL]);
    let token = [("MMCI_PATCHWORK_TOKEN", pw.token.as_str())];
    if send {
        all.push("--send");
    }
    let o = mmci(&all, if send { &token } else { &[] }, root).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{all:?}: {err}\n{}", pw.log());
    assert_no_secret(&o, &[pw.token.as_str()]);
    so
}

const RUN_URL: &str = "https://github.com/mmci/linux/actions/runs/43";

#[tokio::test]
async fn every_stage_is_a_check_of_its_own() {
    let pw = Patchwork::start(&[bundled()], 30).await;
    let root = work();
    let pending = |list: &[Value]| -> Vec<String> {
        let n = newest(list);
        assert!(n.values().all(|(s, _)| s == "pending"), "{n:?}");
        n.keys().cloned().collect()
    };

    // v1: pending on every stage before the run, then the results of the
    // recorded default matrix with a new splat on 3 of the patched runs.
    let (v1, patches) = series_id(&pw, "MGLRU isolation", 1).await;
    let results = results_dir(root.path(), &pw, v1, true).await;
    common::results::add_splats(&results, "patched", 3, "mmci_warn_shrink_folio_list.txt");
    let (base, id, r) = (
        pw.base.clone(),
        v1.to_string(),
        results.display().to_string(),
    );
    let v1_results = r.clone();
    let start = ["--patchwork", &base, "--pw-series", &id, "--start"];
    post_stages(&pw, root.path(), &start, true).await;
    for list in checks(&pw, &patches).await {
        assert_eq!(
            pending(&list),
            [
                "mmci",
                "mmci-apply",
                "mmci-boot",
                "mmci-build",
                "mmci-splats"
            ]
        );
    }
    // The dry run prints each stage's check on each patch; --send posts
    // exactly those.
    let dry = post_stages(&pw, root.path(), &["--results", &r], false).await;
    let want = dry_posts(&dry);
    assert_eq!(want.len(), 6 * patches.len(), "{dry}");
    let so = post_stages(&pw, root.path(), &["--results", &r], true).await;
    let posted = checks(&pw, &patches).await;
    for ((id, list), bodies) in patches.iter().zip(&posted).zip(want.chunks(6)) {
        let n = newest(list);
        let got: Vec<(&str, &str)> = n
            .iter()
            .map(|(c, (s, _))| (c.as_str(), s.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("mmci", "fail"),
                ("mmci-apply", "success"),
                ("mmci-boot", "success"),
                ("mmci-build", "success"),
                ("mmci-mglru_isolation", "fail"),
                ("mmci-splats", "fail"),
            ],
            "patch {id}"
        );
        assert_eq!(
            n["mmci-splats"].1,
            "mmci: new splat: WARNING in shrink_folio_list (patched: 3 of 10 runs, not on base)"
        );
        assert_eq!(n["mmci-build"].1, "mmci: patched (x86_64) built");
        assert!(n["mmci-apply"]
            .1
            .starts_with("mmci: the series applied on "));
        for (url, body) in bodies {
            assert_eq!(url, &format!("{}/api/1.3/patches/{id}/checks/", pw.base));
            let c = body["context"].as_str().unwrap();
            assert_eq!(
                n[c],
                (
                    body["state"].as_str().unwrap().into(),
                    body["description"].as_str().unwrap().into()
                )
            );
        }
    }
    assert_eq!(so.matches(" on patch ").count(), 6 * patches.len(), "{so}");
    // A rerun posts nothing for any context, nor does --start after it.
    let so = post_stages(&pw, root.path(), &["--results", &r], true).await;
    assert_eq!(
        so.matches(": unchanged (").count(),
        6 * patches.len(),
        "{so}"
    );
    let so = post_stages(&pw, root.path(), &["--results", &r, "--start"], true).await;
    assert_eq!(
        so.matches("not set back to pending").count(),
        6 * patches.len(),
        "{so}"
    );
    assert_eq!(checks(&pw, &patches).await, posted, "posted again");

    // v2's series did not apply: its manifest names no patches (they come
    // from --pw-series); apply fails naming the patch, the stages after it
    // have no result: their pending checks are closed as warnings saying
    // why, and the scenario, never started, gets none.
    let (v2, patches) = series_id(&pw, "MGLRU isolation", 2).await;
    let results = results_dir(root.path(), &pw, v2, true).await;
    let error = "patch 2/2 (mm/vmscan: throttle reclaimers on isolated MGLRU folios) does not apply at mm/vmscan.c:4535";
    common::results::not_applied(&results, "patched", error);
    let (id, r) = (v2.to_string(), results.display().to_string());
    let start = ["--patchwork", &base, "--pw-series", &id, "--start"];
    post_stages(&pw, root.path(), &start, true).await;
    let finish = ["--patchwork", &base, "--pw-series", &id, "--results", &r];
    let dry = post_stages(&pw, root.path(), &finish, false).await;
    assert!(
        dry.contains("# no result here for mmci-build, mmci-boot, mmci-splats, mmci-mglru_isolation: each is posted only over a pending check of its context (--start)"),
        "{dry}"
    );
    let so = post_stages(&pw, root.path(), &finish, true).await;
    assert_eq!(
        so.matches("`mmci-mglru_isolation` on patch").count(),
        patches.len(),
        "{so}"
    );
    assert!(
        so.contains("no result for this stage, and no pending check of it: not posted"),
        "{so}"
    );
    let posted = checks(&pw, &patches).await;
    for list in &posted {
        let n = newest(list);
        let got: Vec<(&str, &str, &str)> = n
            .iter()
            .map(|(c, (s, d))| (c.as_str(), s.as_str(), d.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("mmci", "fail", got[0].2),
                ("mmci-apply", "fail", &*format!("mmci: {error}")),
                ("mmci-boot", "warning", "mmci: no result for this stage: no run of the candidate has a result: the series did not apply"),
                ("mmci-build", "warning", "mmci: no result for this stage: the series did not apply, so no kernel of the candidate was built"),
                ("mmci-splats", "warning", "mmci: no result for this stage: no run of the candidate has a result: the series did not apply"),
            ]
        );
        assert!(got[0].2.contains("does not apply"), "{got:?}");
    }
    let so = post_stages(&pw, root.path(), &finish, true).await;
    assert_eq!(
        so.matches(": unchanged (").count(),
        5 * patches.len(),
        "{so}"
    );
    assert_eq!(checks(&pw, &patches).await, posted, "posted again");
    // v1's results are not posted on v2's patches.
    let o = mmci(
        &[
            "post",
            "patchwork",
            "--results",
            &v1_results,
            "--pw-series",
            &id,
            "--stages",
        ],
        &[],
        root.path(),
    )
    .await;
    let (_, err) = out(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--pw-series {v2}: the results dir {v1_results} tested patchwork series {v1} of {base}"
        )),
        "{err}"
    );
    println!(
        "stages: v2's {} patches hold {} checks (a start, the results), none posted again on a rerun",
        patches.len(),
        posted.iter().map(Vec::len).sum::<usize>()
    );
}

#[tokio::test]
async fn a_series_from_elsewhere_is_found_by_message_id() {
    let pw = Patchwork::start(&[bundled(), thread(KMEM)], 30).await;
    let (v1, patches) = series_id(&pw, "MGLRU isolation", 1).await;
    let root = work();
    let results = results_dir(root.path(), &pw, v1, false).await;
    let r = results.display().to_string();
    let uri = pw.base.clone();
    let args = [
        "post",
        "patchwork",
        "--results",
        &r,
        "--state",
        "success",
        "--patchwork",
        &uri,
        "--project",
        PROJECT,
        "--description",
        "ok",
        "--send",
    ];
    let o = mmci(
        &args,
        &[("MMCI_PATCHWORK_TOKEN", pw.token.as_str())],
        root.path(),
    )
    .await;
    assert!(o.status.success(), "{}", out(&o).1);
    for list in checks(&pw, &patches).await {
        assert_eq!(list.len(), 1);
        assert_eq!(
            (list[0]["context"].as_str(), list[0]["state"].as_str()),
            (Some("mmci"), Some("success"))
        );
    }
    // Without an instance, the results dir cannot say where to post.
    let o = mmci(
        &[
            "post",
            "patchwork",
            "--results",
            &r,
            "--state",
            "fail",
            "--description",
            "x",
        ],
        &[],
        root.path(),
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).1.contains("give --patchwork URL"), "{}", out(&o).1);
}

/// The series-completed events of the project: (event id, date, series).
async fn completed(pw: &Patchwork) -> Vec<(u64, String, u64)> {
    pw.list(&format!(
        "events/?category=series-completed&project={PROJECT}&order=date"
    ))
    .await
    .iter()
    .map(|e| {
        (
            e["id"].as_u64().unwrap(),
            e["date"].as_str().unwrap().to_string(),
            e["payload"]["series"]["id"].as_u64().unwrap(),
        )
    })
    .collect()
}

#[tokio::test]
async fn watch_follows_real_series_completed_events() {
    // Two events a page, so that the events list comes in pages.
    let pw = Patchwork::start(&[bundled(), thread(KMEM), thread(NUMA)], 2).await;
    let (v1, _) = series_id(&pw, "MGLRU isolation", 1).await;
    let (v2, _) = series_id(&pw, "MGLRU isolation", 2).await;
    let (v3, _) = series_id(&pw, "MGLRU isolation", 3).await;
    let (kmem, kmem_patches) = series_id(&pw, "kmem_cache", 3).await;
    // A maintainer took a patch of the kmem series: it is not tested.
    pw.shell(&format!(
        "from patchwork.models import Patch, State; Patch.objects.filter(id={}).update(state=State.objects.get(slug='accepted'))",
        kmem_patches[1]
    ))
    .await;
    let events = completed(&pw).await;
    assert!(events.len() >= 4, "{events:?}");
    let gh = github().await;
    let root = work();
    let state = root.path().join("state.json");
    let (st, gh_uri, base) = (state.display().to_string(), gh.uri(), pw.base.clone());
    // `Z`, as the help's ISO 8601 allows: sent as naive UTC (patchwork
    // answers a zone with HTTP 500).
    let args = [
        "watch",
        "--patchwork",
        &base,
        "--project",
        PROJECT,
        "--pw-since",
        "2020-01-01T00:00:00Z",
        "--state",
        &st,
        "--dispatch",
        "mmci/linux",
        "--github-api",
        &gh_uri,
        "--send",
    ];
    let env = [("GITHUB_TOKEN", GH_TOKEN)];
    let o = mmci(&args, &env, root.path()).await;
    let (so, err) = out(&o);
    assert!(o.status.success(), "{err}\n{}", pw.log());
    assert_no_secret(&o, &[GH_TOKEN]);
    let first = dispatched(&gh).await;
    // v3 is tested; v1 and v2, whose v3 completed in the same events, are
    // not.
    assert!(first.contains(&v3), "{first:?}\n{so}");
    assert!(!first.contains(&v1), "stale v1 dispatched: {first:?}");
    assert!(!first.contains(&v2), "stale v2 dispatched: {first:?}");
    assert!(
        err.contains("skipped: a newer revision of the series completed too (stale)"),
        "{err}"
    );
    assert!(
        !first.contains(&kmem),
        "accepted series dispatched: {first:?}"
    );
    assert!(
        err.contains("skipped: a patch of the series is settled"),
        "{err}"
    );
    let mut unique = first.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        first.len(),
        "a series dispatched twice: {first:?}"
    );
    let ids: Vec<u64> = events.iter().map(|e| e.2).collect();
    assert!(
        first.iter().all(|s| ids.contains(s)),
        "{first:?} not in {ids:?}"
    );
    // Every page of the events list was read (mmci's trace log of its
    // requests), each with the since as naive UTC.
    let pages: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("patchwork API") && l.contains("/api/1.3/events/?"))
        .collect();
    assert_eq!(pages.len(), events.len().div_ceil(2), "{pages:#?}");
    assert!(
        pages
            .iter()
            .all(|l| l.contains("since=2020-01-01T00%3A00%3A00")),
        "{pages:#?}"
    );
    // The cursor: the newest event's date and id.
    let cursor = || -> Value {
        let v: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
        v["patchwork"][format!("{base} {PROJECT}")].clone()
    };
    let last = events.last().unwrap();
    assert_eq!(cursor()["since"], last.1.as_str());
    assert_eq!(cursor()["seen"], serde_json::json!([last.0]));

    // A restart: asks from the cursor, dispatches nothing again.
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    assert_eq!(dispatched(&gh).await, first);

    // A new thread arrives: its series once, then nothing.
    pw.load(&thread(SWAPPINESS)).await;
    let more = completed(&pw).await;
    let new: Vec<u64> = more[events.len()..].iter().map(|e| e.2).collect();
    assert!(!new.is_empty(), "{more:?}");
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success(), "{}", out(&o).1);
    let second = dispatched(&gh).await;
    assert_eq!(&second[..first.len()], first.as_slice());
    assert_eq!(second[first.len()..], new[..], "{}", out(&o).0);
    let o = mmci(&args, &env, root.path()).await;
    assert!(o.status.success());
    assert_eq!(dispatched(&gh).await, second);
    println!(
        "watch against patchwork: {} series-completed events in pages of 2, {} dispatched, none twice over 4 passes",
        more.len(),
        second.len()
    );
}
