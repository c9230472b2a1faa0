//! Kernel variants: a matrix's `kernels:` entry resolved (paths next to
//! the matrix, trees and refs checked, credentials in URLs masked when
//! serialized), and the content hash of a series file for the plan's hash.

use super::*;
use crate::series::SeriesSpec;

/// A kernel variant, paths resolved.
///
/// Its manifest form (and [`Plan::fingerprint`]'s input) is
/// [`VariantRepr`]: the series source under the keys a matrix gives it,
/// `series`, `lore`, `github_pr` or `patchwork`, as manifests have always
/// had them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "VariantRepr", try_from = "VariantRepr")]
pub struct Variant {
    pub name: String,
    /// The series applied: a matrix kernel's `series:` (an absolute path),
    /// `lore:`, `github_pr:` or `patchwork:`, or the command line's.
    /// A lore thread or pull request from a matrix names the default
    /// servers; the run's `--lore-url`/`--github-api` replace them (see
    /// [`SeriesSpec::with_endpoints`]).
    pub series: Option<SeriesSpec>,
    /// Written to manifests with its credentials masked (see
    /// [`crate::kernel::tree::redact_url`]).
    pub tree: Option<String>,
    pub git_ref: Option<String>,
    /// A prebuilt image (`mmci run --kernel`).
    pub image: Option<PathBuf>,
    /// The series given on the command line (`--series`, `--lore`,
    /// `--github-pr`, `--pw-series`); `series` then only describes it.
    pub from_command_line: bool,
    /// Revision N of the series instead of the newest complete one.
    pub revision: Option<u32>,
    /// Only these patches of the series.
    pub patches: Option<crate::series::pick::PatchPick>,
    /// The kernel entry's own `expect:` (checked against the catalog):
    /// what its series claims, judged for this candidate only.
    pub expect: BTreeMap<String, Expectation>,
    /// Kernel command line parameters the kernel boots with (checked by
    /// [`check_cmdline`]).
    pub cmdline: Vec<String>,
}

/// A [`Variant`] as manifests write it: one optional key per kind of
/// series source. A GitHub token is never written; a tree URL's
/// credentials are masked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct VariantRepr {
    pub(super) name: String,
    pub(super) series: Option<PathBuf>,
    pub(super) lore: Option<String>,
    /// OWNER/REPO#N.
    #[serde(default)]
    pub(super) github_pr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) patchwork: Option<crate::series::patchwork::SeriesRef>,
    #[serde(serialize_with = "serialize_redacted_url")]
    pub(super) tree: Option<String>,
    pub(super) git_ref: Option<String>,
    pub(super) image: Option<PathBuf>,
    #[serde(default)]
    pub(super) from_command_line: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) revision: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) patches: Option<crate::series::pick::PatchPick>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) expect: BTreeMap<String, Expectation>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) cmdline: Vec<String>,
}

fn serialize_redacted_url<S: serde::Serializer>(
    url: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    url.as_deref()
        .map(crate::kernel::tree::redact_url)
        .serialize(s)
}

impl From<Variant> for VariantRepr {
    fn from(v: Variant) -> VariantRepr {
        let mut r = VariantRepr {
            name: v.name,
            series: None,
            lore: None,
            github_pr: None,
            patchwork: None,
            tree: v.tree,
            git_ref: v.git_ref,
            image: v.image,
            from_command_line: v.from_command_line,
            revision: v.revision,
            patches: v.patches,
            expect: v.expect,
            cmdline: v.cmdline,
        };
        match v.series {
            Some(SeriesSpec::Mbox(p) | SeriesSpec::PatchDir(p)) => r.series = Some(p),
            Some(SeriesSpec::Lore { message_id, .. }) => r.lore = Some(message_id),
            Some(SeriesSpec::GitHub { repo, number, .. }) => {
                r.github_pr = Some(SeriesSpec::pull_request(&repo, number))
            }
            Some(SeriesSpec::Patchwork { url, series }) => {
                r.patchwork = Some(crate::series::patchwork::SeriesRef { url, series })
            }
            None => {}
        }
        r
    }
}

impl TryFrom<VariantRepr> for Variant {
    type Error = String;

    fn try_from(r: VariantRepr) -> Result<Variant, String> {
        let series = series_spec(
            r.series.as_deref(),
            r.lore.as_deref(),
            r.github_pr.as_deref(),
            r.patchwork.as_ref(),
        )?;
        Ok(Variant {
            name: r.name,
            series,
            tree: r.tree,
            git_ref: r.git_ref,
            image: r.image,
            from_command_line: r.from_command_line,
            revision: r.revision,
            patches: r.patches,
            expect: r.expect,
            cmdline: r.cmdline,
        })
    }
}

/// The one series source of a kernel entry's (or a manifest variant's)
/// `series`, `lore`, `github_pr` and `patchwork` keys; an error names the
/// key at fault. A lore thread or pull request names the default servers.
fn series_spec(
    series: Option<&Path>,
    lore: Option<&str>,
    github_pr: Option<&str>,
    patchwork: Option<&crate::series::patchwork::SeriesRef>,
) -> Result<Option<SeriesSpec>, String> {
    use crate::series::fetch;
    let given = [
        series.is_some(),
        lore.is_some(),
        github_pr.is_some(),
        patchwork.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err("give one of `series`, `lore`, `github_pr`, `patchwork`".into());
    }
    if let Some(p) = series {
        return Ok(Some(SeriesSpec::from_path(p)));
    }
    if let Some(id) = lore {
        return Ok(Some(SeriesSpec::Lore {
            message_id: id.to_string(),
            base_url: fetch::LORE_URL.to_string(),
        }));
    }
    if let Some(pr) = github_pr {
        let (repo, number) = fetch::parse_pull_request(pr)
            .ok_or_else(|| format!("github_pr `{pr}` is not OWNER/REPO#NUMBER"))?;
        return Ok(Some(SeriesSpec::GitHub {
            api: fetch::GITHUB_API.to_string(),
            repo,
            number,
            token: None,
        }));
    }
    Ok(patchwork.map(|r| SeriesSpec::Patchwork {
        url: r.url.clone(),
        series: r.series,
    }))
}

impl Variant {
    pub fn base() -> Variant {
        Variant {
            name: "base".into(),
            series: None,
            tree: None,
            git_ref: None,
            image: None,
            from_command_line: false,
            revision: None,
            patches: None,
            expect: BTreeMap::new(),
            cmdline: vec![],
        }
    }

    /// What this variant is, for reports: `base tree`, `series x.mbox`, ...
    pub fn describe(&self) -> String {
        let mut parts = vec![];
        if let Some(i) = &self.image {
            parts.push(format!("image {}", i.display()));
        }
        let tree = self.tree.as_deref().map(crate::kernel::tree::redact_url);
        match (tree, &self.git_ref) {
            (Some(t), Some(r)) => parts.push(format!("tree {t} {r}")),
            (Some(t), None) => parts.push(format!("tree {t}")),
            _ => {}
        }
        let revision = match (self.revision, &self.patches) {
            (Some(n), Some(p)) => format!(" (v{n}, patches {p})"),
            (Some(n), None) => format!(" (v{n})"),
            (None, Some(p)) => format!(" (patches {p})"),
            (None, None) => String::new(),
        };
        match &self.series {
            Some(SeriesSpec::Mbox(s) | SeriesSpec::PatchDir(s)) => {
                parts.push(format!("series {}{revision}", s.display()))
            }
            Some(SeriesSpec::Lore { message_id, .. }) => {
                parts.push(format!("lore {message_id}{revision}"))
            }
            Some(SeriesSpec::GitHub { repo, number, .. }) => parts.push(format!(
                "pull request {}{revision}",
                SeriesSpec::pull_request(repo, *number)
            )),
            Some(SeriesSpec::Patchwork { url, series }) => {
                parts.push(format!("patchwork series {series} ({url}){revision}"))
            }
            None => {}
        }
        if parts.is_empty() {
            parts.push("base tree".into());
        }
        if !self.cmdline.is_empty() {
            parts.push(format!("booted with {}", self.cmdline.join(" ")));
        }
        parts.join(", ")
    }
}

pub(super) fn resolve_variant(
    entry: &KernelEntry,
    base_dir: &Path,
    file: &str,
    pos: Pos,
) -> Result<Variant, MatrixError> {
    let name_ok = !entry.name.is_empty()
        && entry
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if !name_ok {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!("kernel name `{}`: use letters, digits, `-`, `_` or `.` (it becomes part of run ids)", entry.name),
        ));
    }
    let at = |e: String| MatrixError::at(file, Some(pos), format!("kernel `{}`: {e}", entry.name));
    // At most one source, a pull request spelled right: checked first.
    series_spec(
        entry.series.as_deref(),
        entry.lore.as_deref(),
        entry.github_pr.as_deref(),
        entry.patchwork.as_ref(),
    )
    .map_err(at)?;
    let patchwork = match &entry.patchwork {
        Some(r) => Some(crate::series::patchwork::SeriesRef {
            url: crate::series::patchwork::check_url("patchwork: url:", &r.url)
                .map_err(|e| at(e.to_string()))?,
            series: r.series,
        }),
        None => None,
    };
    match entry.revision {
        Some(0) => {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "kernel `{}`: revision 0: revisions count from 1 (v1 is the first posting)",
                    entry.name
                ),
            ))
        }
        Some(_) if entry.series.is_none() && entry.lore.is_none() => {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "kernel `{}`: `revision` picks a revision of a thread: give it with `series` or `lore`",
                    entry.name
                ),
            ))
        }
        _ => {}
    }
    let has_series = entry.series.is_some()
        || entry.lore.is_some()
        || entry.github_pr.is_some()
        || entry.patchwork.is_some();
    if entry.patches.is_some() && !has_series {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!(
                "kernel `{}`: `patches` picks patches of a series: give it with `series`, `lore`, `github_pr` or `patchwork`",
                entry.name
            ),
        ));
    }
    if entry.git_ref.is_some() && entry.tree.is_none() {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!("kernel `{}`: `ref` needs `tree`", entry.name),
        ));
    }
    for p in &entry.cmdline {
        check_cmdline(p).map_err(|e| at(format!("cmdline `{p}`: {e}")))?;
    }
    if let Some(t) = &entry.tree {
        // The check the command line's --tree and --ref get: nothing git
        // would read as an option, only the allowed transports.
        crate::kernel::tree::TreeSpec::parse(t, entry.git_ref.as_deref()).map_err(|e| {
            let key = if e.is_ref() { "ref" } else { "tree" };
            MatrixError::at(
                file,
                Some(pos),
                format!("kernel `{}`: `{key}`: {e}", entry.name),
            )
        })?;
    }
    let path = match &entry.series {
        // Absolute, so reports and manifests say which file it was.
        Some(p) => Some(confine(base_dir, "series", p).map_err(at)?),
        None => None,
    };
    let series = series_spec(
        path.as_deref(),
        entry.lore.as_deref(),
        entry.github_pr.as_deref(),
        patchwork.as_ref(),
    )
    .map_err(at)?;
    Ok(Variant {
        name: entry.name.clone(),
        series,
        tree: entry.tree.clone(),
        git_ref: entry.git_ref.clone(),
        image: None,
        from_command_line: false,
        revision: entry.revision,
        patches: entry.patches.clone(),
        expect: entry.expect.clone(),
        cmdline: entry.cmdline.clone(),
    })
}

/// The parameters mmci's guests depend on: the console its records come
/// through, a panic ending the guest, its PID 1 and its own `mmci.*` job.
const CMDLINE_OWN: &[&str] = &["console", "panic", "oops", "init", "rdinit", "earlyprintk"];

/// A kernel command line parameter a matrix may add: one `KEY` or
/// `KEY=VALUE` word of printable ASCII, not one mmci sets itself.
pub fn check_cmdline(p: &str) -> Result<(), String> {
    if p.is_empty() || p.len() > 256 {
        return Err("give one parameter of 1 to 256 characters".into());
    }
    if !p.chars().all(|c| c.is_ascii_graphic()) {
        return Err("one word of printable ASCII: no spaces, quotes need no escaping here".into());
    }
    if p.contains('"') || p.starts_with('-') {
        return Err(
            "no quotes and no leading `-` (the kernel would read the rest as init's)".into(),
        );
    }
    let key = p.split('=').next().unwrap_or(p);
    if CMDLINE_OWN.contains(&key) || key.starts_with("mmci.") {
        return Err(format!(
            "`{key}` is mmci's own (its console, panic handling, PID 1 and guest job); set job parameters with the matrix's axes"
        ));
    }
    Ok(())
}

/// Content hash of a series file (its path may differ between machines).
pub(super) fn file_digest(p: &Path) -> String {
    match std::fs::read(p) {
        Ok(bytes) => hex::encode(Sha256::digest(&bytes))[..16].to_string(),
        // A directory of patches, or unreadable: its name stands in.
        Err(_) => p.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::plan::tests::plan_of;

    /// A one-cell plan of these `kernels:` lines, read in `dir`.
    fn with_kernels(dir: &Path, kernels: &str) -> Result<Plan, MatrixError> {
        from_text(
            &format!("axes:\n  threads: [1]\nkernels:\n{kernels}"),
            "m.yaml",
            dir,
            &Overrides::default(),
        )
    }

    /// Table rows of `kernels:` lines and what each variant gets (`got`
    /// of it), or a part of the error: each checked.
    fn check_kernels<T: PartialEq<W> + std::fmt::Debug, W: std::fmt::Debug>(
        dir: &Path,
        cases: Vec<(&str, Result<Vec<W>, &str>)>,
        got: impl Fn(&Variant) -> T,
    ) {
        for (kernels, want) in cases {
            match (with_kernels(dir, kernels), want) {
                (Ok(p), Ok(want)) => {
                    assert_eq!(
                        p.variants.iter().map(&got).collect::<Vec<_>>(),
                        want,
                        "{kernels}"
                    )
                }
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{kernels}: {e}"),
                (Ok(p), Err(w)) => panic!("{kernels}: a plan of {:?}, want {w}", p.variants.len()),
                (Err(e), Ok(_)) => panic!("{kernels}: {e}"),
            }
        }
    }

    #[test]
    fn kernel_revisions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.mbox"), "").unwrap();
        let plan = |kernels: &str| with_kernels(dir.path(), kernels);
        // (kernels:, the error or the revisions of the variants)
        let cases = vec![
            (
                "  - name: base\n  - name: v1\n    series: t.mbox\n    revision: 1\n  - name: v2\n    series: t.mbox\n",
                Ok(vec![None, Some(1), None]),
            ),
            (
                "  - name: base\n  - name: v3\n    lore: x@y\n    revision: 3\n",
                Ok(vec![None, Some(3)]),
            ),
            (
                "  - name: base\n  - name: v0\n    series: t.mbox\n    revision: 0\n",
                Err("line 5 column 5: kernel `v0`: revision 0: revisions count from 1"),
            ),
            (
                "  - name: base\n    revision: 2\n",
                Err("line 4 column 5: kernel `base`: `revision` picks a revision of a thread: give it with `series` or `lore`"),
            ),
            (
                "  - name: base\n  - name: v1\n    series: t.mbox\n    revision: one\n",
                Err("line 7"),
            ),
        ];
        check_kernels(dir.path(), cases, |v| v.revision);
        // The revision is part of what the plan runs, and of how a report
        // names the kernel.
        let one =
            plan("  - name: base\n  - name: p\n    series: t.mbox\n    revision: 1\n").unwrap();
        let newest = plan("  - name: base\n  - name: p\n    series: t.mbox\n").unwrap();
        assert_ne!(one.fingerprint(), newest.fingerprint());
        assert!(
            one.variants[1].describe().ends_with("t.mbox (v1)"),
            "{}",
            one.variants[1].describe()
        );
    }

    #[test]
    fn kernel_command_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.mbox"), "").unwrap();
        let plan = |kernels: &str| with_kernels(dir.path(), kernels);
        let long_cmdline = format!(
            "  - name: base\n  - name: p\n    cmdline: [x={}]\n",
            "y".repeat(300)
        );
        // (kernels:, the error or each variant's command line)
        let cases = vec![
            (
                "  - name: base\n  - name: warn\n    series: t.mbox\n    cmdline: [mmci_test_fault=warn:300]\n  - name: off\n    cmdline: [numa_balancing=disable, nokaslr]\n",
                Ok(vec!["", "mmci_test_fault=warn:300", "numa_balancing=disable nokaslr"]),
            ),
            (
                "  - name: base\n  - name: p\n    cmdline: [\"a b\"]\n",
                Err("line 5 column 5: kernel `p`: cmdline `a b`: one word of printable ASCII"),
            ),
            (
                "  - name: base\n  - name: p\n    cmdline: [panic=0]\n",
                Err("kernel `p`: cmdline `panic=0`: `panic` is mmci's own"),
            ),
            (
                "  - name: base\n  - name: p\n    cmdline: [mmci.threads=4]\n",
                Err("`mmci.threads` is mmci's own"),
            ),
            (
                "  - name: base\n  - name: p\n    cmdline: [--, init=/bin/sh]\n",
                Err("cmdline `--`: no quotes and no leading `-`"),
            ),
            (
                "  - name: base\n  - name: p\n    cmdline: [\"\"]\n",
                Err("cmdline ``: give one parameter"),
            ),
            (
                &long_cmdline,
                Err("give one parameter of 1 to 256 characters"),
            ),
            (
                "  - name: base\n  - name: p\n    cmdline: [\"a\\tb\"]\n",
                Err("one word of printable ASCII"),
            ),
        ];
        check_kernels(dir.path(), cases, |v| v.cmdline.join(" "));
        // The command line is part of what the plan runs, of the manifest
        // and of how a report names the kernel.
        let with =
            plan("  - name: base\n  - name: p\n    series: t.mbox\n    cmdline: [nokaslr]\n")
                .unwrap();
        let without = plan("  - name: base\n  - name: p\n    series: t.mbox\n").unwrap();
        assert_ne!(with.fingerprint(), without.fingerprint());
        assert!(
            with.variants[1]
                .describe()
                .ends_with("t.mbox, booted with nokaslr"),
            "{}",
            with.variants[1].describe()
        );
        let repr = serde_json::to_value(VariantRepr::from(with.variants[1].clone())).unwrap();
        assert_eq!(repr["cmdline"], serde_json::json!(["nokaslr"]));
        let back = Variant::try_from(serde_json::from_value::<VariantRepr>(repr).unwrap()).unwrap();
        assert_eq!(back.cmdline, ["nokaslr"]);
    }

    #[test]
    fn kernel_patch_picks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.mbox"), "").unwrap();
        let plan = |kernels: &str| with_kernels(dir.path(), kernels);
        // (kernels:, the error or each variant's pick, `-` for none)
        let cases = vec![
            (
                "  - name: base\n  - name: p1\n    series: t.mbox\n    patches: \"1\"\n  - name: all\n    series: t.mbox\n",
                Ok(vec!["-", "1", "-"]),
            ),
            (
                "  - name: base\n  - name: p\n    lore: x@y\n    patches: 1-2\n",
                Ok(vec!["-", "1-2"]),
            ),
            (
                "  - name: base\n  - name: p\n    series: t.mbox\n    patches: 2-1\n",
                Err("line 7 column 14: patches `2-1`: 2-1: the range ends before it starts"),
            ),
            (
                "  - name: base\n    patches: 1\n",
                Err("line 4 column 5: kernel `base`: `patches` picks patches of a series: give it with `series`, `lore`, `github_pr` or `patchwork`"),
            ),
        ];
        check_kernels(dir.path(), cases, |v| {
            v.patches.as_ref().map_or("-".into(), |p| p.to_string())
        });

        // The pick is part of what the plan runs, of the manifest, and of
        // how a report names the kernel; a plan without one keeps its
        // fingerprint.
        let one =
            plan("  - name: base\n  - name: p\n    series: t.mbox\n    patches: \"1\"\n").unwrap();
        let whole = plan("  - name: base\n  - name: p\n    series: t.mbox\n").unwrap();
        assert_ne!(one.fingerprint(), whole.fingerprint());
        let described = one.variants[1].describe();
        assert!(described.ends_with("t.mbox (patches 1)"), "{described}");
        let json = serde_json::to_string(&one.variants[1]).unwrap();
        assert!(json.contains(r#""patches":"1""#), "{json}");
        assert_eq!(
            serde_json::from_str::<Variant>(&json).unwrap(),
            one.variants[1]
        );
        assert!(!serde_json::to_string(&whole.variants[1])
            .unwrap()
            .contains("patches"));
    }

    #[test]
    fn kernel_trees_are_checked_and_their_credentials_masked() {
        let kernel =
            |k: &str| format!("axes:\n  threads: [1]\nkernels:\n  - name: base\n  - {k}\n");
        for (k, want) in [
            (
                "{name: p, tree: \"--upload-pack=touch /tmp/x;false\"}",
                "line 5 column 5: kernel `p`: `tree`: tree URL `--upload-pack=touch /tmp/x;false` starts with `-`",
            ),
            (
                "{name: p, tree: \"https://example.org/x.git\", ref: \"--output=/tmp/x\"}",
                "kernel `p`: `ref`: ref `--output=/tmp/x` starts with `-`",
            ),
            ("{name: p, tree: \"ext::sh -c id\"}", "remote helpers"),
        ] {
            let e = plan_of(&kernel(k)).unwrap_err().to_string();
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
        let p = plan_of(&kernel(
            "{name: c, tree: \"https://u:ghp_tok@example.org/x.git\", ref: next}",
        ))
        .unwrap();
        let c = &p.variants[1];
        assert_eq!(
            c.tree.as_deref(),
            Some("https://u:ghp_tok@example.org/x.git"),
            "git needs it"
        );
        assert_eq!(c.describe(), "tree https://***@example.org/x.git next");
        let json = serde_json::to_string(&p).unwrap();
        assert!(
            json.contains("https://***@example.org/x.git") && !json.contains("ghp_tok"),
            "{json}"
        );
        let rotated = plan_of(&kernel(
            "{name: c, tree: \"https://u:ghp_new@example.org/x.git\", ref: next}",
        ))
        .unwrap();
        assert_eq!(
            p.fingerprint(),
            rotated.fingerprint(),
            "a new token resumes the plan"
        );
    }

    /// A variant of each series source kind: its manifest form (the keys
    /// `series`, `lore`, `github_pr`, `patchwork` as manifests have always
    /// had them) and the plan fingerprint, pinned so that results dirs
    /// resume and merge across mmci versions. Changed on purpose once since
    /// the sources became one type: by `GUEST_SETUP` 2 (THP set by the
    /// guest), whose old runs must not be resumed.
    #[test]
    fn series_sources_keep_their_manifest_form_and_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.mbox"), "From x\n").unwrap();
        let yaml = "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - name: m\n    series: t.mbox\n    revision: 2\n  - name: l\n    lore: a@b.example\n  - name: g\n    github_pr: o/r#5\n  - name: p\n    patchwork: {url: \"https://pw.example.org\", series: 7}\n";
        let plan = from_text(yaml, "m.yaml", dir.path(), &Overrides::default()).unwrap();
        let mbox = dir.path().join("t.mbox");
        let json: Vec<String> = plan
            .variants
            .iter()
            .map(|v| serde_json::to_string(v).unwrap())
            .collect();
        assert_eq!(
            json,
            [
                r#"{"name":"base","series":null,"lore":null,"github_pr":null,"tree":null,"git_ref":null,"image":null,"from_command_line":false}"#.to_string(),
                format!(r#"{{"name":"m","series":{},"lore":null,"github_pr":null,"tree":null,"git_ref":null,"image":null,"from_command_line":false,"revision":2}}"#, serde_json::to_string(&mbox).unwrap()),
                r#"{"name":"l","series":null,"lore":"a@b.example","github_pr":null,"tree":null,"git_ref":null,"image":null,"from_command_line":false}"#.to_string(),
                r#"{"name":"g","series":null,"lore":null,"github_pr":"o/r#5","tree":null,"git_ref":null,"image":null,"from_command_line":false}"#.to_string(),
                r#"{"name":"p","series":null,"lore":null,"github_pr":null,"patchwork":{"url":"https://pw.example.org","series":7},"tree":null,"git_ref":null,"image":null,"from_command_line":false}"#.to_string(),
            ]
        );
        for (v, j) in plan.variants.iter().zip(&json) {
            let back: Variant = serde_json::from_str(j).unwrap();
            assert_eq!(&back, v, "{j}");
        }
        // A GitHub token is never written, by a variant or a spec.
        let with_token = Variant {
            name: "g".into(),
            series: Some(SeriesSpec::GitHub {
                api: crate::series::fetch::GITHUB_API.into(),
                repo: "o/r".into(),
                number: 5,
                token: Some("t0ken".into()),
            }),
            ..Variant::base()
        };
        assert_eq!(serde_json::to_string(&with_token).unwrap(), json[3]);
        let spec = serde_json::to_string(&with_token.series).unwrap();
        assert!(!spec.contains("t0ken"), "{spec}");
        // The mbox's content, not its path, goes into the fingerprint.
        assert_eq!(plan.fingerprint(), "dd1d7ad9514a72b9");
        let one = |name: &str| {
            let mut p = plan.clone();
            p.variants.retain(|v| v.name == "base" || v.name == name);
            p.fingerprint()
        };
        assert_eq!(
            ["m", "l", "g", "p"].map(one),
            [
                "9f00a2f2a5fc472a",
                "620b22fd4373f07a",
                "4a0203e35ad46223",
                "428ac07650b5d475"
            ]
        );
    }
}
