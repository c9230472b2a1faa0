//! A tree's base as anyone can fetch it ([`Upstream`]): the tarball's
//! release tag (`v6.12.95`, from its Makefile), or a git tree's URL
//! (credentials masked) and commit with `git describe`; what a report
//! names so that the kernel can be built again off this host.

use super::*;

/// The tag upstream gives a release: `v6.12.95` for `6.12.95`, `v6.12`
/// for `6.12.0`, `v6.13-rc3` for `6.13.0-rc3`; `None` for what is not a
/// version.
pub fn version_tag(version: &str) -> Option<String> {
    let (numbers, extra) = match version.find('-') {
        Some(i) => version.split_at(i),
        None => (version, ""),
    };
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.parse::<u32>().is_err()) {
        return None;
    }
    let numbers = if parts[2] == "0" {
        format!("{}.{}", parts[0], parts[1])
    } else {
        numbers.to_string()
    };
    Some(format!("v{numbers}{extra}"))
}

/// A kernel's base as anyone can fetch it: a release (the tarball's
/// version) or a git tree's URL and commit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Upstream {
    /// The tree's URL, credentials masked; `None`: the tarball.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The base commit (in the tarball's import: its import commit).
    pub commit: String,
    /// The tarball's release tag (`v6.12.95`, from its Makefile), or
    /// `git describe --always` of the commit in a git tree.
    pub describe: String,
}

impl Upstream {
    /// `v6.12.95`, or `URL@COMMIT (DESCRIBE)`.
    pub fn name(&self) -> String {
        match &self.url {
            None => self.describe.clone(),
            Some(url) => format!("{url}@{} ({})", self.commit, self.describe),
        }
    }
}

/// `git describe --tags --always` of `commit` in `repo` (the nearest tag
/// and the commits since, or the abbreviated commit without tags).
pub async fn describe(repo: &Path, commit: &str) -> Option<String> {
    if commit.starts_with('-') {
        return None;
    }
    let out = process::output(
        git(repo).args(["describe", "--tags", "--always", commit]),
        "git describe",
        Limits::QUICK,
    )
    .await
    .ok()?;
    let d = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !d.is_empty()).then_some(d)
}

/// The base `tree` (at `tree.commit`, the base chosen for a series) as
/// upstream names it. `spec` is the tree's URL (`None`: the tarball,
/// whose import commit is `imported`); `chosen` the base cascade entry
/// the base came from, when another tree's (`URL#REF`).
pub async fn upstream(
    spec: Option<&TreeSpec>,
    tree: &SourceTree,
    imported: &str,
    chosen: Option<&str>,
) -> Upstream {
    let url = match chosen.map(CascadeEntry::parse) {
        Some(Ok(CascadeEntry::Tree(t))) => Some(t.shown_url()),
        _ => spec.map(TreeSpec::shown_url),
    };
    let describe = match (&url, version_tag(&tree.version)) {
        (None, Some(tag)) if tree.commit == imported => tag,
        _ => describe(&tree.path, &tree.commit)
            .await
            .unwrap_or_else(|| tree.commit.chars().take(12).collect()),
    };
    Upstream {
        url,
        commit: tree.commit.clone(),
        describe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::tree::tests::sh;

    #[test]
    fn a_tarballs_base_is_its_release_tag() {
        // (top-level Makefile, the base as upstream names it)
        let cases = [
            (
                "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 95\nEXTRAVERSION =\n",
                Some("v6.12.95"),
            ),
            (
                "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n",
                Some("v6.12"),
            ),
            (
                "VERSION = 6\nPATCHLEVEL = 13\nSUBLEVEL = 0\nEXTRAVERSION = -rc3\n",
                Some("v6.13-rc3"),
            ),
            (
                "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 2\nEXTRAVERSION = -rc3\n",
                Some("v6.1.2-rc3"),
            ),
            ("VERSION = 6\nPATCHLEVEL = x\nSUBLEVEL = 2\n", None),
            ("# not a kernel Makefile\n", None),
        ];
        for (mk, want) in cases {
            let got = makefile_version(mk).and_then(|v| version_tag(&v));
            assert_eq!(got.as_deref(), want, "{mk}");
        }
        let tarball = Upstream {
            url: None,
            commit: "2a7be210a22a8655e73e347054808314e73be671".into(),
            describe: "v6.12.95".into(),
        };
        assert_eq!(tarball.name(), "v6.12.95");
        let git = Upstream {
            url: Some(redact_url("https://u:tok@example.org/mm.git")),
            describe: "v6.13-rc1-1234-g2a7be210a22a".into(),
            ..tarball
        };
        assert_eq!(
            git.name(),
            "https://***@example.org/mm.git@2a7be210a22a8655e73e347054808314e73be671 (v6.13-rc1-1234-g2a7be210a22a)"
        );
    }

    #[tokio::test]
    async fn upstream_names_a_git_trees_base_by_url_and_describe() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("t");
        std::fs::create_dir_all(&repo).unwrap();
        sh(
            &repo,
            "git init -q && printf 'VERSION = 6\\nPATCHLEVEL = 12\\nSUBLEVEL = 0\\n' > Makefile && git add . && git commit -qm a && git tag v6.12 && echo x > f && git add f && git commit -qm b",
        );
        let tree = open(&repo, "t").await.unwrap();
        let spec = TreeSpec::parse("https://u:secret@example.org/linux.git", Some("next")).unwrap();
        let up = upstream(Some(&spec), &tree, "", None).await;
        assert_eq!(up.url.as_deref(), Some("https://***@example.org/linux.git"));
        assert!(up.describe.starts_with("v6.12-1-g"), "{up:?}");
        assert!(!up.name().contains("secret"));
        // The tarball at its import commit: the Makefile's release.
        let up = upstream(None, &tree, &tree.commit, None).await;
        assert_eq!(up.name(), "v6.12");
        // A base from another tree of the cascade: that tree's URL.
        let up = upstream(
            None,
            &tree,
            "other",
            Some("https://example.org/stable.git#linux-6.12.y"),
        )
        .await;
        assert_eq!(up.url.as_deref(), Some("https://example.org/stable.git"));
    }
}
