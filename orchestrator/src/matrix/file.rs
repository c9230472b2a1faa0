//! The on-disk form of a matrix (`matrix/*.yaml`), exactly as written, with
//! the position of every value kept so that an error found after parsing
//! can still name its line and column.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

/// A matrix file.
///
/// ```yaml
/// description: MGLRU isolation, the seed thread's two repros
/// axes:
///   arch: [x86_64, arm64]
///   threads: [64, 192]
/// exclude:
///   - {arch: arm64, threads: 192}
/// include:
///   - {arch: x86_64, threads: 64, vcpus: 4}
/// repeats: 5
/// kernels:
///   - name: base
///   - name: patched
///     series: ../kernels/series/mglru-isolation-v1.mbox
/// expect:
///   throttle_isolated: nonzero
/// ```
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    #[serde(default)]
    pub description: Option<String>,
    /// Axis name -> its values. Names are the host's machine keys (arch,
    /// vcpus, memory_mb, swap_mb) or guest job parameters (threads,
    /// duration_s, ...). Their cartesian product is the matrix.
    pub axes: BTreeMap<String, Spanned<Vec<Spanned<Scalar>>>>,
    /// Combinations to drop; an entry matches a combination when all its
    /// pairs do (GitHub Actions' `exclude`).
    #[serde(default)]
    pub exclude: Vec<Spanned<BTreeMap<String, Spanned<Scalar>>>>,
    /// Pairs to add to matching combinations, or new combinations
    /// (GitHub Actions' `include`).
    #[serde(default)]
    pub include: Vec<Spanned<BTreeMap<String, Spanned<Scalar>>>>,
    /// Runs per cell and kernel. Default 1.
    #[serde(default)]
    pub repeats: Option<Spanned<u32>>,
    /// The sequential budget: runs a side a cell whose verdict is still
    /// undecided may reach (`mmci run --max-repeats` wins; 0: none).
    /// Default 15 (`matrix::plan::budget`).
    #[serde(default)]
    pub max_repeats: Option<Spanned<u32>>,
    /// Kernel variants; the first is the baseline. Default: the base tree
    /// alone, or base + patched when a series is given on the command line.
    #[serde(default)]
    pub kernels: Vec<Spanned<KernelEntry>>,
    /// Per-metric expectations of the candidates against the baseline.
    #[serde(default)]
    pub expect: BTreeMap<String, Spanned<Expectation>>,
    /// Scenario `script`: named scripts a cell selects with `script: NAME`
    /// (as an axis or in `include:`).
    #[serde(default)]
    pub scripts: BTreeMap<String, Spanned<ScriptEntry>>,
    /// The regime each cell was calibrated for, which the analysis checks
    /// on the baseline's runs: a cell gets the first entry whose `when:`
    /// pairs it has.
    #[serde(default)]
    pub regimes: Vec<Spanned<RegimeEntry>>,
}

/// One of a matrix's `regimes:`: the cells it names (`when:`, pairs a cell
/// has, after the command line's `--set`s) and how the baseline behaves
/// there in the regime the matrix was calibrated for. A cell whose
/// baseline behaved otherwise measured another regime, and the verdict
/// says so (a faster host ran the same cell out of it: docs/results.md).
///
/// ```yaml
/// regimes:
///   - when: {threads: 64}
///     base_oom: none    # no base run ends in an OOM kill
///   - when: {threads: 288}
///     base_oom: most    # more than half of base's runs do
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegimeEntry {
    pub when: BTreeMap<String, Spanned<Scalar>>,
    pub base_oom: BaseOom,
}

/// How many of a cell's baseline runs an OOM kill ends, in the regime the
/// cell was calibrated for. A regime is a rate, not a count in every set
/// of runs (on the calibration host base was killed at 288 threads in 2
/// to 4 of 5 runs, set by set): a set is out of its regime only when its
/// count would be rare in it (see [`BaseOom::out_p`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BaseOom {
    /// Few of them: at most [`BaseOom::FEW`] of the runs.
    None,
    /// Most of them: at least half.
    Most,
}

impl BaseOom {
    /// The highest share of killed runs `none` allows: 1 in 20 (on the
    /// calibration host 1 in 25 at 64 threads).
    pub const FEW: f64 = 0.05;
    /// A count this improbable in the regime is out of it.
    pub const ALPHA: f64 = 0.05;

    /// How probable a count as far from the regime as `killed` of `runs`
    /// is in it (a one-sided binomial tail): at most `killed` kills when
    /// half the runs are killed (`most`), at least `killed` when 1 in 20
    /// are (`none`).
    pub fn out_p(self, killed: usize, runs: usize) -> f64 {
        use statrs::distribution::{Binomial, DiscreteCDF};
        let (killed, runs) = (killed.min(runs) as u64, runs as u64);
        let tail = |p: f64| Binomial::new(p, runs).expect("a probability in [0, 1]");
        match self {
            BaseOom::Most => tail(0.5).cdf(killed),
            BaseOom::None if killed == 0 => 1.0,
            BaseOom::None => tail(Self::FEW).sf(killed - 1),
        }
        .clamp(0.0, 1.0)
    }

    /// Whether `killed` of `runs` baseline runs ending in an OOM kill is
    /// consistent with this regime ([`BaseOom::out_p`] above
    /// [`BaseOom::ALPHA`]): with 5 runs, `most` is out only at 0 kills and
    /// `none` at 2 or more.
    pub fn holds(self, killed: usize, runs: usize) -> bool {
        self.out_p(killed, runs) > Self::ALPHA
    }

    /// The regime in words.
    pub fn text(self) -> &'static str {
        match self {
            BaseOom::None => "few or no base runs OOM-killed",
            BaseOom::Most => "base OOM-killed in most runs",
        }
    }

    /// The share of killed runs it stands for, in words.
    pub fn share(self) -> &'static str {
        match self {
            BaseOom::None => "few or none",
            BaseOom::Most => "most runs",
        }
    }
}

/// One script of a matrix: what runs in the guest image and what it reports.
///
/// ```yaml
/// scripts:
///   redis:
///     image: ../images/redis          # recipe folder, relative to the matrix
///     command: [/usr/local/bin/redis-load]
///     env: {REQUESTS: "20000"}
///     timeout_s: 600
///     metrics:
///       set_per_s: {unit: requests/s, better: higher, timing: true}
///   repro:
///     image: ../images/tools
///     file: scripts/mglru-repro.sh    # copied in, run as /bin/sh /mmci/script
/// ```
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptEntry {
    /// The image's recipe folder (`images/<name>`), relative to the matrix file.
    pub image: PathBuf,
    /// argv in the image's root; default `/bin/sh /mmci/script` (with `file`).
    #[serde(default)]
    pub command: Vec<String>,
    /// A script on the host, relative to the matrix file, copied into the
    /// guest through the initramfs (never shared: the guest gets its bytes).
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Environment on top of the job's `MMCI_*` parameters.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Kill the script's cgroup after this many seconds [default: 4 x duration_s + 60].
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// The `MMCI-METRIC:` names it prints, with their units and which way is better.
    #[serde(default)]
    pub metrics: BTreeMap<String, crate::scenario::DeclaredMetric>,
}

/// One kernel variant of a matrix.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelEntry {
    /// Short name used in run ids and reports (`base`, `patched`, ...).
    pub name: String,
    /// A series (mbox file or format-patch directory), relative to the
    /// matrix file, applied on the tree.
    #[serde(default)]
    pub series: Option<PathBuf>,
    /// A lore message-id whose thread holds the series.
    #[serde(default)]
    pub lore: Option<String>,
    /// A GitHub pull request whose commits are the series: OWNER/REPO#N.
    #[serde(default)]
    pub github_pr: Option<String>,
    /// A series on a patchwork instance: `{url: https://..., series: ID}`.
    #[serde(default)]
    pub patchwork: Option<crate::series::patchwork::SeriesRef>,
    /// A tree URL (or `mm-stable`) instead of the base tree.
    #[serde(default)]
    pub tree: Option<String>,
    /// Branch, tag or commit of `tree`.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Revision N of the series (`series` or `lore`) instead of the newest
    /// complete one, as `--revision N`: a thread's v1 and v2 side by side.
    #[serde(default)]
    pub revision: Option<u32>,
    /// Only these patches of the series (`"1"`, `"1-2"`, `"2-"`, `"1,3"`,
    /// b4's cherry-pick syntax), as `--patches`: patch 1 alone beside the
    /// whole series isolates what patch 2 does.
    #[serde(default)]
    pub patches: Option<crate::series::pick::PatchPick>,
    /// This kernel's own expectations against the baseline (what its
    /// series claims to do), over the matrix's `expect:` for this kernel
    /// only: a series given on the command line in its place has none.
    #[serde(default)]
    pub expect: BTreeMap<String, Expectation>,
    /// Kernel command line parameters this kernel boots with, after
    /// mmci's own (`numa_balancing=disable`, a test kernel's fault): two
    /// entries of one series with other parameters share one build.
    #[serde(default)]
    pub cmdline: Vec<String>,
}

/// A scalar as written in YAML: `64`, `true`, `x86_64`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Text(s) => f.write_str(s),
        }
    }
}

/// What a candidate should do to a metric, relative to the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectKind {
    Increase,
    Decrease,
    NoRegression,
    Zero,
    Nonzero,
}

/// The kind as a matrix file spells it (`no_regression`), for people.
impl std::fmt::Display for ExpectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ExpectKind::Increase => "increase",
            ExpectKind::Decrease => "decrease",
            ExpectKind::NoRegression => "no_regression",
            ExpectKind::Zero => "zero",
            ExpectKind::Nonzero => "nonzero",
        })
    }
}

/// `metric: increase` or `metric: {kind: increase, threshold: 0.2}`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Expectation {
    Kind(ExpectKind),
    Detailed {
        kind: ExpectKind,
        /// Minimum relative change (0.2 = 20%) for increase/decrease, or
        /// the tolerated relative regression for no_regression.
        #[serde(default)]
        threshold: Option<f64>,
    },
}

// Thresholds are checked finite before a plan holds them
// (`plan::expectations::validate`): equality is total there, so kernel
// variants (which derive Eq) can carry expectations.
impl Eq for Expectation {}

impl Expectation {
    pub fn kind(&self) -> ExpectKind {
        match self {
            Expectation::Kind(k) | Expectation::Detailed { kind: k, .. } => *k,
        }
    }

    pub fn threshold(&self) -> Option<f64> {
        match self {
            Expectation::Kind(_) => None,
            Expectation::Detailed { threshold, .. } => *threshold,
        }
    }
}

/// Where a value was written: 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pos {
    pub line: u64,
    pub column: u64,
}

impl Pos {
    pub fn of<T>(s: &Spanned<T>) -> Pos {
        Pos {
            line: s.referenced.line(),
            column: s.referenced.column(),
        }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} column {}", self.line, self.column)
    }
}

/// Parses a matrix file's text. The error text names line and column.
pub fn parse(text: &str) -> Result<MatrixFile, String> {
    serde_saphyr::from_str(text).map_err(|e| {
        // serde-saphyr renders a source excerpt after the first line; the
        // first line already carries "line L column C: what".
        let first = e.to_string().lines().next().unwrap_or_default().to_string();
        let first = first.strip_prefix("error: ").unwrap_or(&first).to_string();
        // Untagged enums only say that nothing matched: say what would.
        first
            .replace(
                "data did not match any variant of untagged enum Expectation",
                "an expectation is one of increase, decrease, no_regression, zero, nonzero, or {kind: KIND, threshold: FRACTION}",
            )
            .replace(
                "data did not match any variant of untagged enum Scalar",
                "expected a number, true/false or a word",
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expect_kinds_print_as_the_yaml_spells_them() {
        use ExpectKind::*;
        for kind in [Increase, Decrease, NoRegression, Zero, Nonzero] {
            let yaml: ExpectKind = serde_saphyr::from_str(&kind.to_string()).unwrap();
            assert_eq!(yaml, kind, "{kind}");
        }
        assert_eq!(NoRegression.to_string(), "no_regression");
    }

    #[test]
    fn values_keep_their_positions() {
        let m = parse("axes:\n  threads: [64, 192]\n  mglru: [true]\nrepeats: 3\n").unwrap();
        let threads = &m.axes["threads"];
        assert_eq!(
            threads
                .value
                .iter()
                .map(|v| v.value.clone())
                .collect::<Vec<_>>(),
            [Scalar::Int(64), Scalar::Int(192)]
        );
        assert_eq!(
            Pos::of(&threads.value[1]),
            Pos {
                line: 2,
                column: 17
            }
        );
        assert_eq!(m.axes["mglru"].value[0].value, Scalar::Bool(true));
        assert_eq!(m.repeats.unwrap().value, 3);
    }

    #[test]
    fn unknown_fields_are_refused_with_their_position() {
        let err = parse("axes: {}\nrepeatz: 3\n").unwrap_err();
        assert!(err.starts_with("line 2 column 1"), "{err}");
        assert!(err.contains("unknown field `repeatz`"), "{err}");
        let err = parse("axes: {}\nkernels:\n  - name: base\n    seires: x.mbox\n").unwrap_err();
        assert!(err.starts_with("line 4 column 5"), "{err}");
    }

    #[test]
    fn expectations_short_and_long_forms() {
        let m = parse(
            "axes: {}\nexpect:\n  throttled_isolated: increase\n  touches: {kind: no_regression, threshold: 0.1}\n",
        )
        .unwrap();
        assert_eq!(
            m.expect["throttled_isolated"].value.kind(),
            ExpectKind::Increase
        );
        assert_eq!(m.expect["touches"].value.threshold(), Some(0.1));
        let err = parse("axes: {}\nexpect:\n  touches: up\n").unwrap_err();
        assert!(
            err.starts_with("line 3 column 12: an expectation is one of increase"),
            "{err}"
        );
    }
}
