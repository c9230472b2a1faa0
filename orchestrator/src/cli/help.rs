//! What `--help` teaches beyond each option's own line: the headings the
//! options of `run` (and the commands sharing its argument structs) are
//! grouped under, and the EXAMPLES sections of `run`, `series show`,
//! `merge`, `post *` and `watch`. Text only; the options themselves live with
//! their commands.

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
