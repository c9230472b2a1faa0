//! Snapshot tests of the terminal report, on results recorded from real runs
//! (tests/fixtures/*/run.json, written by `mmci run`).

use std::path::Path;

fn render(fixture: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let run = mmci::results::read_run(&dir).expect("fixture run.json reads");
    mmci::report::run::render_run(&run)
}

#[test]
fn completed_run() {
    insta::assert_snapshot!(render("mglru-completed"));
}

#[test]
fn oom_killed_run() {
    insta::assert_snapshot!(render("mglru-oom"));
}

#[test]
fn boot_failure() {
    insta::assert_snapshot!(render("boot-failure"));
}

#[test]
fn scenario_b_run() {
    insta::assert_snapshot!(render("noio-completed"));
}

#[test]
fn scenario_b_not_reproduced() {
    insta::assert_snapshot!(render("noio-not-reproduced"));
}

#[test]
fn script_run() {
    // Scenario script on the patched kernel: scenario A's counters around
    // the shell repro in the tools image, then how the script ended, its
    // MMCI-METRIC values and the end of its output.
    insta::assert_snapshot!(render("script-completed"));
}
