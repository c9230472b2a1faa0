//! `mmci run`'s exit code is its verdict's (docs/commands.md, "Exit
//! codes"), through the binary. Each test replays real recorded runs
//! (tests/fixtures/smoke-matrix: 3 runs a side of the smoke cell;
//! tests/fixtures/default-matrix: 5 a side of scenario A at 64 and 192
//! threads) into a results dir of a matrix written here, so that `mmci run`
//! resumes it with every run kept: no kernel is built and no guest booted,
//! and what is left is what this tests, the comparison of the dir the
//! run wrote and the code it exits with. The runs are moved cell by cell
//! to the plan's slots (the fixtures' plans are older than today's cell
//! ids); their contents are untouched but for the splats one test adds.
//! The same code from a run that boots its guests is in matrix_runs.rs
//! (a candidate that WARNs: FAIL).

mod common;

use std::path::Path;
use std::process::Output;

use common::replay::{default_matrix, replay, run, SMOKE};
use mmci::analysis::Status;
use mmci::error::{exit, run_exit_code, verdict_exit_code};

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `mmci analyse`'s code on the same dir.
fn analyse_code(results: &Path) -> Option<i32> {
    common::bin_blocking()
        .args(["analyse", "--results"])
        .arg(results)
        .output()
        .unwrap()
        .status
        .code()
}

/// Asserts that `mmci run` resumed every run, printed `verdict` and exited
/// with `code`, which `mmci analyse` gives too.
fn assert_run(o: &Output, results: &Path, runs: usize, verdict: &str, code: i32) {
    let t = text(o);
    assert!(
        t.contains(&format!(
            "({runs} runs, {runs} kept from an earlier invocation"
        )),
        "every run kept, none booted: {t}"
    );
    assert!(t.contains(verdict), "{verdict:?} in {t}");
    assert_eq!(o.status.code(), Some(code), "{t}");
    assert_eq!(analyse_code(results), Some(code), "mmci analyse agrees");
}

#[test]
fn guards_left_at_their_floors_exit_inconclusive() {
    // Three runs a side: the guards' intervals straddle their floors.
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), SMOKE, "smoke-matrix", None);
    let o = run(tmp.path(), &matrix, &results, &[]);
    assert_run(&o, &results, 6, "verdict: INCONCLUSIVE", exit::INCONCLUSIVE);
    assert!(text(&o).contains(": at the floor: "), "{}", text(&o));
}

#[test]
fn a_new_splat_exits_fail_and_the_report_is_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), SMOKE, "smoke-matrix", None);
    common::results::add_splats(&results, "patched", 2, "mmci_warn_shrink_folio_list.txt");
    let o = run(tmp.path(), &matrix, &results, &[]);
    assert_run(&o, &results, 6, "verdict: FAIL", exit::RUN_FAILED);
    // The comparison came before the code: the runs table and the splat.
    let t = text(&o);
    assert!(t.contains("WARNING in shrink_folio_list"), "{t}");
}

#[test]
fn guards_judged_and_held_exit_pass() {
    // The recorded base was OOM-killed in most runs of both cells: a
    // matrix that calibrated it so lets the OOM guard judge them (the
    // survivors are too few for the swap guards).
    let regimes = "\
regimes:
  - when: {threads: 64}
    base_oom: most
  - when: {threads: 192}
    base_oom: most
";
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), &default_matrix(regimes), "default-matrix", None);
    let o = run(tmp.path(), &matrix, &results, &[]);
    assert_run(
        &o,
        &results,
        20,
        "verdict: PASS: no regression found in 20 runs on 2 cells",
        exit::OK,
    );
}

#[test]
fn guards_the_survivors_cannot_judge_exit_inconclusive() {
    // The same runs where the matrix expects base to survive: the swap
    // and fault guards of the 64-thread cell compare 1 base run against
    // 5, which no test can decide, and a PASS on the OOM guard alone
    // would say nothing of them.
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(tmp.path(), &default_matrix(""), "default-matrix", None);
    let o = run(tmp.path(), &matrix, &results, &[]);
    assert_run(
        &o,
        &results,
        20,
        "verdict: INCONCLUSIVE: 3 checks could not be decided",
        exit::INCONCLUSIVE,
    );
    assert!(
        text(&o).contains("with 1 + 5 runs no outcome could reach"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_undecided_expectation_exits_inconclusive() {
    // A timing expectation under TCG cannot be decided.
    let tmp = tempfile::tempdir().unwrap();
    let (matrix, results) = replay(
        tmp.path(),
        &default_matrix("expect:\n  touches: no_regression\n"),
        "default-matrix",
        None,
    );
    let o = run(tmp.path(), &matrix, &results, &[]);
    assert_run(
        &o,
        &results,
        20,
        "verdict: INCONCLUSIVE",
        exit::INCONCLUSIVE,
    );
}

#[test]
fn a_shard_exits_with_its_runs_not_its_partial_verdict() {
    // The shard's comparison FAILs on the splat, but its code is the
    // runs' (all completed): the verdict is the merged dir's.
    let tmp = tempfile::tempdir().unwrap();
    let shard = mmci::matrix::Shard { index: 1, count: 1 };
    let (matrix, results) = replay(tmp.path(), SMOKE, "smoke-matrix", Some(shard));
    common::results::add_splats(&results, "patched", 1, "mmci_warn_shrink_folio_list.txt");
    let o = run(tmp.path(), &matrix, &results, &["--shard", "1/1"]);
    let t = text(&o);
    assert!(t.contains("verdict: FAIL"), "{t}");
    assert!(t.contains("a shard's verdict is partial"), "{t}");
    assert_eq!(o.status.code(), Some(exit::OK), "{t}");
}

#[test]
fn the_help_lists_every_code() {
    for (command, codes) in [
        ("run", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 130, 143][..]),
        ("analyse", &[0, 1, 2, 8, 10, 130, 143][..]),
    ] {
        let o = common::bin_blocking()
            .args([command, "--help"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(exit::OK));
        let help = String::from_utf8_lossy(&o.stdout);
        let section = &help[help.find("EXIT CODES").expect("the section")..];
        let listed: Vec<i32> = section
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        assert_eq!(listed, codes, "{command}: {section}");
    }
}

/// `mmci run`'s code from its runs' code and the verdict's, every
/// combination that can happen and the order between them.
#[test]
fn a_run_exits_with_the_verdict_after_kernel_and_infra_failures() {
    let v = |s| Some(verdict_exit_code(s));
    let cases: &[(&str, i32, Option<i32>, i32)] = &[
        ("one kernel, every run completed", exit::OK, None, exit::OK),
        (
            "one kernel, a crash",
            exit::RUN_FAILED,
            None,
            exit::RUN_FAILED,
        ),
        ("PASS", exit::OK, v(Status::Pass), exit::OK),
        (
            "FAIL on numbers",
            exit::OK,
            v(Status::Fail),
            exit::RUN_FAILED,
        ),
        (
            "FAIL on a crash",
            exit::RUN_FAILED,
            v(Status::Fail),
            exit::RUN_FAILED,
        ),
        (
            "INCONCLUSIVE",
            exit::OK,
            v(Status::Inconclusive),
            exit::INCONCLUSIVE,
        ),
        (
            "NO VERDICT",
            exit::OK,
            v(Status::NoVerdict),
            exit::NO_VERDICT,
        ),
        // Cannot come from the verdict rules (a run that did not
        // complete fails them), but a PASS never hides one.
        (
            "PASS beside a crash",
            exit::RUN_FAILED,
            v(Status::Pass),
            exit::RUN_FAILED,
        ),
        (
            "a crash, INCONCLUSIVE",
            exit::RUN_FAILED,
            v(Status::Inconclusive),
            exit::INCONCLUSIVE,
        ),
        (
            "the analysis refused the dir",
            exit::OK,
            Some(exit::USAGE),
            exit::USAGE,
        ),
        (
            "infra failure, PASS",
            exit::INFRA,
            v(Status::Pass),
            exit::INFRA,
        ),
        (
            "infra failure, FAIL",
            exit::INFRA,
            v(Status::Fail),
            exit::INFRA,
        ),
        (
            "infra failure, NO VERDICT",
            exit::INFRA,
            v(Status::NoVerdict),
            exit::INFRA,
        ),
        (
            "series does not apply, FAIL",
            exit::DOES_NOT_APPLY,
            v(Status::Fail),
            exit::DOES_NOT_APPLY,
        ),
        (
            "build failure, FAIL",
            exit::BUILD,
            v(Status::Fail),
            exit::BUILD,
        ),
        ("fetch failure, no verdict", exit::FETCH, None, exit::FETCH),
        (
            "base ref unknown, INCONCLUSIVE",
            exit::USAGE,
            v(Status::Inconclusive),
            exit::USAGE,
        ),
        (
            "no build sandbox, PASS",
            exit::ENVIRONMENT,
            v(Status::Pass),
            exit::ENVIRONMENT,
        ),
    ];
    for (what, runs, verdict, want) in cases {
        assert_eq!(run_exit_code(*runs, *verdict), *want, "{what}");
    }
}
