//! Kernel variants: a matrix's `kernels:` entry resolved (paths next to
//! the matrix, trees and refs checked, credentials in URLs masked when
//! serialized), and the content hash of a series file for the plan's hash.

use super::*;

/// A kernel variant, paths resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub series: Option<PathBuf>,
    pub lore: Option<String>,
    /// OWNER/REPO#N.
    #[serde(default)]
    pub github_pr: Option<String>,
    /// A series on patchwork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patchwork: Option<crate::series::patchwork::SeriesRef>,
    /// Written to manifests with its credentials masked (see
    /// [`crate::kernel::tree::redact_url`]).
    #[serde(serialize_with = "serialize_redacted_url")]
    pub tree: Option<String>,
    pub git_ref: Option<String>,
    /// A prebuilt image (`mmci run --kernel`).
    pub image: Option<PathBuf>,
    /// The series given on the command line (`--series`, `--lore`,
    /// `--github-pr`); `series`/`lore` then only describe it.
    #[serde(default)]
    pub from_command_line: bool,
    /// Revision N of the series instead of the newest complete one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
}

pub(super) fn serialize_redacted_url<S: serde::Serializer>(
    url: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    url.as_deref()
        .map(crate::kernel::tree::redact_url)
        .serialize(s)
}

impl Variant {
    pub fn base() -> Variant {
        Variant {
            name: "base".into(),
            series: None,
            lore: None,
            github_pr: None,
            patchwork: None,
            tree: None,
            git_ref: None,
            image: None,
            from_command_line: false,
            revision: None,
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
        let revision = self
            .revision
            .map(|n| format!(" (v{n})"))
            .unwrap_or_default();
        if let Some(s) = &self.series {
            parts.push(format!("series {}{revision}", s.display()));
        }
        if let Some(l) = &self.lore {
            parts.push(format!("lore {l}{revision}"));
        }
        if let Some(pr) = &self.github_pr {
            parts.push(format!("pull request {pr}"));
        }
        if let Some(pw) = &self.patchwork {
            parts.push(format!("patchwork series {} ({})", pw.series, pw.url));
        }
        if parts.is_empty() {
            "base tree".into()
        } else {
            parts.join(", ")
        }
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
    let sources = [
        entry.series.is_some(),
        entry.lore.is_some(),
        entry.github_pr.is_some(),
        entry.patchwork.is_some(),
    ];
    if sources.iter().filter(|s| **s).count() > 1 {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!(
                "kernel `{}`: give one of `series`, `lore`, `github_pr`, `patchwork`",
                entry.name
            ),
        ));
    }
    if let Some(pr) = &entry.github_pr {
        if crate::series::fetch::parse_pull_request(pr).is_none() {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "kernel `{}`: github_pr `{pr}` is not OWNER/REPO#NUMBER",
                    entry.name
                ),
            ));
        }
    }
    let patchwork = match &entry.patchwork {
        Some(r) => Some(crate::series::patchwork::SeriesRef {
            url: crate::series::patchwork::check_url("patchwork: url:", &r.url).map_err(|e| {
                MatrixError::at(file, Some(pos), format!("kernel `{}`: {e}", entry.name))
            })?,
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
    if entry.git_ref.is_some() && entry.tree.is_none() {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!("kernel `{}`: `ref` needs `tree`", entry.name),
        ));
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
    let series = match &entry.series {
        // Absolute, so reports and manifests say which file it was.
        Some(p) => Some(confine(base_dir, "series", Path::new(p)).map_err(|e| {
            MatrixError::at(file, Some(pos), format!("kernel `{}`: {e}", entry.name))
        })?),
        None => None,
    };
    Ok(Variant {
        name: entry.name.clone(),
        series,
        lore: entry.lore.clone(),
        github_pr: entry.github_pr.clone(),
        patchwork,
        tree: entry.tree.clone(),
        git_ref: entry.git_ref.clone(),
        image: None,
        from_command_line: false,
        revision: entry.revision,
    })
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

    #[test]
    fn kernel_revisions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.mbox"), "").unwrap();
        let plan = |kernels: &str| {
            from_text(
                &format!("axes:\n  threads: [1]\nkernels:\n{kernels}"),
                "m.yaml",
                dir.path(),
                &Overrides::default(),
            )
        };
        // (kernels:, the error or the revisions of the variants)
        type Case<'a> = (&'a str, Result<&'a [Option<u32>], &'a str>);
        let cases: &[Case] = &[
            (
                "  - name: base\n  - name: v1\n    series: t.mbox\n    revision: 1\n  - name: v2\n    series: t.mbox\n",
                Ok(&[None, Some(1), None]),
            ),
            (
                "  - name: base\n  - name: v3\n    lore: x@y\n    revision: 3\n",
                Ok(&[None, Some(3)]),
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
        for (kernels, want) in cases {
            match (plan(kernels), want) {
                (Ok(p), Ok(revs)) => assert_eq!(
                    p.variants.iter().map(|v| v.revision).collect::<Vec<_>>(),
                    *revs,
                    "{kernels}"
                ),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{kernels}: {e}"),
                (got, want) => panic!("{kernels}: got {got:?}, want {want:?}"),
            }
        }
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
}
