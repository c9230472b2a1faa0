//! What `--help` teaches beyond each option's own line: the headings the
//! options of `run` (and the commands sharing its argument structs) are
//! grouped under, the EXAMPLES sections of `run`, `series show`, `merge`,
//! `post *` and `watch`, and the EXIT CODES of `run` and `analyse` (each a
//! code of docs/commands.md's one table, checked by the tests below). Text
//! only; the options themselves live with their commands.

use crate::error::exit;

/// The series to apply (`--series`, `--lore`, `--github-pr`, ...).
pub const SERIES: &str = "Series";
/// The kernel tree, its config and its build.
pub const KERNEL: &str = "Kernel";
/// The matrix: which cells, how many repeats, which parameters.
pub const MATRIX: &str = "Matrix";
/// Each guest: architecture, vCPUs, RAM, accelerator, timeout.
pub const MACHINE: &str = "Machine";
/// How much runs at once, and retries.
pub const SCHEDULING: &str = "Scheduling";
/// Where results and reports go, and how they are printed.
pub const OUTPUT: &str = "Output";

/// `mmci run --help`.
pub const RUN_EXAMPLES: &str = "\
EXAMPLES:
  # The default matrix: the bundled series against its base (about 15 min on 2 cores)
  mmci run

  # Your series (an mbox, or a directory of git format-patch files)
  mmci run --series my-series.mbox --results out/

  # A series from lore, on mm-stable, a quick smoke matrix
  mmci run --lore '<20250101.1234-1-me@example.org>' --tree mm-stable \\
      --matrix matrix/smoke.yaml

  # One of four shards of a matrix, then merge and report
  mmci run --matrix matrix/mglru-v2.yaml --shard 1/4 --results shard1/
  mmci merge --results all/ shard1/ shard2/ shard3/ shard4/
  mmci report --results all/ --format email --output report.txt";

/// Every code `mmci run` can exit with, and what it means there.
pub const RUN_EXIT_CODES: &[(i32, &str)] = &[
    (
        exit::OK,
        "PASS (without a verdict: one kernel, or a shard: every run completed)",
    ),
    (
        exit::RUN_FAILED,
        "FAIL (without a verdict: a run did not complete)",
    ),
    (
        exit::USAGE,
        "bad input: an option, the matrix, a results dir of another plan",
    ),
    (
        exit::ENVIRONMENT,
        "this machine lacks something: QEMU, a compiler, a build sandbox, disk space",
    ),
    (exit::BUILD, "a kernel did not build"),
    (
        exit::INFRA,
        "QEMU or the accelerator failed, also after the retries (rerun: it resumes)",
    ),
    (
        exit::DOES_NOT_APPLY,
        "the series does not apply to its base",
    ),
    (exit::FETCH, "the series could not be fetched"),
    (exit::INCONCLUSIVE, "INCONCLUSIVE"),
    (
        exit::NO_VERDICT,
        "NO VERDICT: nothing could be judged; never a pass",
    ),
    (exit::INTERRUPTED, "interrupted (SIGINT)"),
    (exit::TERMINATED, "terminated (SIGTERM)"),
];

/// Every code `mmci analyse` can exit with.
pub const ANALYSE_EXIT_CODES: &[(i32, &str)] = &[
    (exit::OK, "PASS (with --spread: the rows were written)"),
    (exit::RUN_FAILED, "FAIL"),
    (
        exit::USAGE,
        "bad input: an option, a dir that is not a results dir, --output not written",
    ),
    (exit::INCONCLUSIVE, "INCONCLUSIVE"),
    (
        exit::NO_VERDICT,
        "NO VERDICT: nothing could be judged; never a pass",
    ),
    (exit::INTERRUPTED, "interrupted (SIGINT)"),
    (exit::TERMINATED, "terminated (SIGTERM)"),
];

/// An EXIT CODES section of `--help`.
pub fn exit_codes_text(codes: &[(i32, &str)]) -> String {
    let mut s = String::from("EXIT CODES (docs/commands.md, \"Exit codes\"):");
    for (code, what) in codes {
        s.push_str(&format!("\n  {code:>3}  {what}"));
    }
    s
}

/// `mmci run --help` after the options: the examples, the exit codes and
/// which wins when several apply.
pub fn run_after_help() -> String {
    format!(
        "{RUN_EXAMPLES}\n\n{}\n  A kernel that failed (2, 3, 4, 6, 7) comes first, then an infra failure (5), then the verdict.",
        exit_codes_text(RUN_EXIT_CODES)
    )
}

/// `mmci analyse --help` after the options.
pub fn analyse_after_help() -> String {
    exit_codes_text(ANALYSE_EXIT_CODES)
}

/// `mmci merge --help`.
pub const MERGE_EXAMPLES: &str = "\
EXAMPLES:
  # The four shards of one matrix (`mmci run --shard I/4`), then their verdict
  mmci merge --results all/ shard1/ shard2/ shard3/ shard4/
  mmci analyse --results all/";

/// `mmci series show --help`.
pub const SERIES_SHOW_EXAMPLES: &str = "\
EXAMPLES:
  # What would be applied from an mbox holding several revisions
  mmci series show kernels/series/mglru-isolation.mbox

  # A lore thread, revision 1, as JSON
  mmci series show --lore '<20250101.1234-1-me@example.org>' --revision 1 --json

  # And the base it would be applied on in mm-stable
  mmci series show my-series.mbox --tree https://git.kernel.org/pub/scm/linux/kernel/git/akpm/mm.git --ref mm-stable";

/// `mmci post github --help`.
pub const POST_GITHUB_EXAMPLES: &str = "\
EXAMPLES:
  # In a workflow: the check run starts, then completes with the report
  mmci post github --start --send
  mmci report --results out/ --format markdown --output report.md
  mmci post github --conclusion failure --body report.md --results out/ --pr 42 --send

  # Without --send: the requests printed, nothing sent (no token needed)
  mmci post github --conclusion success --body report.md --repo me/linux --sha $(git rev-parse HEAD)";

/// `mmci post email --help`.
pub const POST_EMAIL_EXAMPLES: &str = "\
EXAMPLES:
  # Render the reply, look at it (a dry run), then send it
  mmci report --results out/ --format email --output reply.txt
  mmci post email --body reply.txt --results out/
  mmci post email --body reply.txt --results out/ --send --smtp smtp.example.org:587 \\
      --smtp-user me --smtp-password-file ~/.smtp-pass

  # Keep it for git send-email instead
  mmci post email --body reply.txt --results out/ --output replies.mbox";

/// `mmci post patchwork --help`.
pub const POST_PATCHWORK_EXAMPLES: &str = "\
EXAMPLES:
  # The run is starting (a dry run: the requests are printed)
  mmci post patchwork --patchwork https://patchwork.kernel.org --pw-series 900123 --start

  # The verdict of a results dir, one check per patch, sent
  mmci post patchwork --results out/ --target-url https://ci.example/run/7 \\
      --patchwork-token-file ~/.pw-token --send

  # And one check per stage: mmci-apply, -build, -boot, -splats, mmci-SCENARIO
  mmci post patchwork --results out/ --stages --send";

/// `mmci watch --help`.
pub const WATCH_EXAMPLES: &str = "\
EXAMPLES:
  # One pass over linux-mm's feed, saying what would be run (no --send: a dry run)
  mmci watch --atom https://lore.kernel.org/linux-mm/new.atom --run

  # Every 10 minutes, run each new series here on the smoke matrix
  mmci watch --atom https://lore.kernel.org/linux-mm/new.atom --run --send --interval 600 \\
      --run-arg=--matrix=matrix/smoke.yaml

  # Patchwork's events, each new series dispatched to a GitHub workflow
  mmci watch --patchwork https://patchwork.kernel.org --project linux-mm \\
      --dispatch me/mmci-ci --github-token-env GITHUB_TOKEN --send";

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes of docs/commands.md's table, in its order.
    fn documented() -> Vec<i32> {
        let docs = include_str!("../../../docs/commands.md");
        let section = &docs[docs.find("### Exit codes").expect("the section")..];
        section
            .split("\n\n")
            .nth(1)
            .expect("the table")
            .lines()
            .filter_map(|l| l.strip_prefix("| "))
            .filter_map(|l| l.split(' ').next()?.parse().ok())
            .collect()
    }

    /// Each list is in the table's order, holds only documented codes,
    /// and `run`'s holds every code but posting's (9): its kernels, runs and
    /// verdict can end in any other.
    #[test]
    fn the_help_lists_the_documented_codes() {
        let table = documented();
        for (name, list) in [("run", RUN_EXIT_CODES), ("analyse", ANALYSE_EXIT_CODES)] {
            let codes: Vec<i32> = list.iter().map(|(c, _)| *c).collect();
            let in_order: Vec<i32> = table
                .iter()
                .copied()
                .filter(|c| codes.contains(c))
                .collect();
            assert_eq!(
                codes, in_order,
                "{name}: a code not in the table, or out of order"
            );
        }
        let run: Vec<i32> = RUN_EXIT_CODES.iter().map(|(c, _)| *c).collect();
        let all_but_post: Vec<i32> = table.into_iter().filter(|c| *c != exit::POST).collect();
        assert_eq!(run, all_but_post);
        let analyse: Vec<i32> = ANALYSE_EXIT_CODES.iter().map(|(c, _)| *c).collect();
        for verdict in [
            exit::OK,
            exit::RUN_FAILED,
            exit::INCONCLUSIVE,
            exit::NO_VERDICT,
        ] {
            assert!(
                analyse.contains(&verdict) && run.contains(&verdict),
                "{verdict}"
            );
        }
    }

    #[test]
    fn the_sections_name_every_code() {
        let text = analyse_after_help();
        for line in [
            "    0  PASS",
            "    1  FAIL",
            "    8  INCONCLUSIVE",
            "   10  NO VERDICT",
        ] {
            assert!(text.contains(line), "{line:?} in {text}");
        }
        assert!(run_after_help().starts_with("EXAMPLES:"));
        assert!(run_after_help().contains("\n   10  NO VERDICT"));
    }
}
