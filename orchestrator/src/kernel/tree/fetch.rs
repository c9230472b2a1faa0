//! Remote trees: the bare mirror a URL is fetched into (credentials through
//! a helper, never argv; only the allowed transports), and the base
//! cascade's entries (a ref of the tree, or another tree).

use std::path::Path;

use tokio::process::Command;

use super::*;

/// The shell credential helper that answers git's `get` with the user and
/// password of the URL (given in its environment, never on a command line,
/// which every user can read in /proc).
const CREDENTIAL_HELPER: &str = r#"!f() { test "$1" = get || return 0; printf 'username=%s\npassword=%s\n' "$MMCI_GIT_USERNAME" "$MMCI_GIT_PASSWORD"; }; f"#;

/// `git -C repo` set up to fetch `url`, and the URL to put on its command
/// line (after `--`): only the transports of [`PROTOCOLS`]; never a prompt
/// (stdin is not a person); the URL's credentials, if any, through a
/// credential helper instead of argv.
pub fn fetch_command(repo: &Path, url: &str) -> (Command, String) {
    let mut cmd = git(repo);
    cmd.args(["-c", "protocol.allow=never"]);
    for p in PROTOCOLS {
        cmd.arg("-c").arg(format!("protocol.{p}.allow=always"));
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0");
    let (bare, credentials) = split_userinfo(url);
    if let Some((user, password)) = credentials {
        // The empty value drops the user's own helpers, which would
        // otherwise be asked to store the token.
        cmd.args(["-c", "credential.helper="])
            .arg("-c")
            .arg(format!("credential.helper={CREDENTIAL_HELPER}"))
            .env("MMCI_GIT_USERNAME", user)
            .env("MMCI_GIT_PASSWORD", password);
    }
    (cmd, bare)
}

/// Mirrors `spec.url` into the work dir (incrementally: later calls fetch
/// only what is new) and resolves `spec.git_ref` to a commit.
pub async fn fetch_tree(spec: &TreeSpec, work: &WorkDir) -> Result<SourceTree, TreeError> {
    spec.check()?;
    let name = spec.mirror_name();
    let trees = work.trees();
    std::fs::create_dir_all(&trees).map_err(io_err(&trees))?;
    let mirror = trees.join(format!("{name}.git"));
    let _lock = process::lock_file(&work.locks(), &format!("tree-{name}"))
        .await
        .map_err(io_err(&work.locks()))?;
    let log = trees.join(format!("{name}.fetch.log"));
    let fetch_err = |source| TreeError::Fetch {
        url: spec.shown_url(),
        source,
    };
    if !mirror.join("HEAD").is_file() {
        let mut init = Command::new("git");
        init.args(["init", "-q", "--bare"]).arg(&mirror);
        process::run_logged(&mut init, &log, "git init --bare")
            .await
            .map_err(fetch_err)?;
        process::run_logged(
            git(&mirror).args(["config", "gc.auto", "0"]),
            &log,
            "git config",
        )
        .await
        .map_err(fetch_err)?;
    }
    let (mut fetch, url) = fetch_command(&mirror, &spec.url);
    fetch
        .args(["fetch", "--prune", "--force", "--"])
        .arg(&url)
        .args([
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
            "+HEAD:refs/remotes/origin/HEAD",
        ]);
    process::run_logged_with(&mut fetch, &log, "git fetch", Limits::NETWORK)
        .await
        .map_err(fetch_err)?;
    let resolve = |r: String| {
        let mirror = mirror.clone();
        async move { resolve_ref(&mirror, &r).await }
    };
    let wanted = if spec.git_ref == "HEAD" {
        "refs/remotes/origin/HEAD".to_string()
    } else {
        spec.git_ref.clone()
    };
    let mut commit = resolve(wanted.clone()).await;
    if commit.is_none()
        && spec.git_ref.len() >= 7
        && spec.git_ref.chars().all(|c| c.is_ascii_hexdigit())
    {
        // A commit no branch or tag points at: servers let us fetch it by id.
        let (mut fetch, url) = fetch_command(&mirror, &spec.url);
        fetch.args(["fetch", "--"]).arg(&url).arg(&spec.git_ref);
        let _ =
            process::run_logged_with(&mut fetch, &log, "git fetch <commit>", Limits::NETWORK).await;
        commit = resolve(spec.git_ref.clone()).await;
    }
    let commit = commit.ok_or_else(|| TreeError::UnknownRef {
        url: spec.shown_url(),
        git_ref: spec.git_ref.clone(),
    })?;
    let makefile = process::output(
        git(&mirror).args(["show", &format!("{commit}:Makefile")]),
        "git show",
        Limits::QUICK,
    )
    .await
    .map_err(git_err(&mirror))?;
    Ok(SourceTree {
        name,
        path: mirror,
        commit,
        version: makefile_version(&String::from_utf8_lossy(&makefile.stdout))
            .unwrap_or_else(|| "unknown".into()),
    })
}

/// One `--base-cascade` entry: a ref of the configured tree (`mm-unstable`),
/// or another tree by URL (`URL#REF`; REF is HEAD when left out), e.g. a
/// mainline mirror after mm.git's branches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CascadeEntry {
    Ref(String),
    Tree(TreeSpec),
}

impl CascadeEntry {
    /// A URL has a scheme (`https://`, `file://`) or is an absolute path;
    /// anything else is a ref. The ref of a URL follows its last `#`, which
    /// git URLs do not otherwise contain. Both are checked as
    /// [`TreeSpec::parse`] checks them.
    pub fn parse(entry: &str) -> Result<CascadeEntry, BadSpec> {
        if !entry.contains("://") && !entry.starts_with('/') {
            check_ref(entry)?;
            return Ok(CascadeEntry::Ref(entry.to_string()));
        }
        Ok(CascadeEntry::Tree(match entry.rsplit_once('#') {
            Some((url, r)) if !r.is_empty() => TreeSpec::parse(url, Some(r))?,
            Some((url, _)) => TreeSpec::parse(url, None)?,
            None => TreeSpec::parse(entry, None)?,
        }))
    }

    /// The entry as messages and reports show it (credentials masked).
    pub fn shown(entry: &str) -> String {
        redact_url(entry)
    }
}

/// Fetches `spec`'s ref into `tree`'s own repository (under
/// `refs/mmci/cascade/`), so that the base check, the checkout and the
/// build of a series placed on another tree's commit all happen in one
/// repository; returns the commit. Only that ref's history is fetched.
pub async fn fetch_into(
    tree: &SourceTree,
    spec: &TreeSpec,
    work: &WorkDir,
) -> Result<String, TreeError> {
    spec.check()?;
    let _lock = process::lock_file(&work.locks(), &format!("tree-{}", tree.name))
        .await
        .map_err(io_err(&work.locks()))?;
    let local = format!(
        "refs/mmci/cascade/{}/{}",
        spec.mirror_name(),
        spec.git_ref
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            })
            .collect::<String>()
    );
    let log = work.trees().join(format!("{}.fetch.log", tree.name));
    let (mut fetch, url) = fetch_command(&tree.path, &spec.url);
    fetch
        .args(["fetch", "--no-tags", "--force", "--"])
        .arg(&url)
        .arg(format!("+{}:{local}", spec.git_ref));
    process::run_logged_with(
        &mut fetch,
        &log,
        "git fetch (base cascade)",
        Limits::NETWORK,
    )
    .await
    .map_err(|source| TreeError::Fetch {
        url: format!("{}#{}", spec.shown_url(), spec.git_ref),
        source,
    })?;
    resolve_ref(&tree.path, &local)
        .await
        .ok_or_else(|| TreeError::UnknownRef {
            url: spec.shown_url(),
            git_ref: spec.git_ref.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::tree::tests::sh;

    #[test]
    fn cascade_entries_are_refs_or_other_trees() {
        let tree = |url: &str, r: &str| {
            CascadeEntry::Tree(TreeSpec {
                url: url.into(),
                git_ref: r.into(),
            })
        };
        for (entry, want) in [
            ("mm-unstable", CascadeEntry::Ref("mm-unstable".into())),
            ("v6.12", CascadeEntry::Ref("v6.12".into())),
            ("a1b2c3d4", CascadeEntry::Ref("a1b2c3d4".into())),
            // A ref with a # is still a ref: only URLs carry one.
            ("topic#1", CascadeEntry::Ref("topic#1".into())),
            (
                "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git#master",
                tree(
                    "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git",
                    "master",
                ),
            ),
            (
                "file:///srv/linux.git",
                tree("file:///srv/linux.git", "HEAD"),
            ),
            (
                "file:///srv/linux.git#",
                tree("file:///srv/linux.git", "HEAD"),
            ),
            (
                "/srv/next.git#next-20261201",
                tree("/srv/next.git", "next-20261201"),
            ),
        ] {
            assert_eq!(CascadeEntry::parse(entry), Ok(want), "{entry}");
        }
    }

    #[tokio::test]
    async fn remote_trees_are_mirrored_incrementally_and_refs_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("upstream");
        std::fs::create_dir_all(&up).unwrap();
        sh(&up, "git init -q -b mm-stable && printf 'VERSION = 6\\nPATCHLEVEL = 13\\nSUBLEVEL = 0\\nEXTRAVERSION = -rc1\\n' > Makefile && git add Makefile && git commit -qm one && git tag v6.13-rc1 && git checkout -q -b mm-unstable && echo x > f && git add f && git commit -qm two && git checkout -q mm-stable");
        let url = format!("file://{}", up.display());
        let work = WorkDir::new(tmp.path().join("work"));
        let rev = |r: &str| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&up)
                .args(["rev-parse", r])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };

        let stable = fetch_tree(&TreeSpec::parse(&url, Some("mm-stable")).unwrap(), &work)
            .await
            .unwrap();
        assert_eq!(stable.commit, rev("mm-stable"));
        assert_eq!(stable.version, "6.13.0-rc1");
        let unstable = fetch_tree(&TreeSpec::parse(&url, Some("mm-unstable")).unwrap(), &work)
            .await
            .unwrap();
        assert_eq!(unstable.commit, rev("mm-unstable"));
        assert_eq!(unstable.path, stable.path, "one mirror per URL");
        let tag = fetch_tree(&TreeSpec::parse(&url, Some("v6.13-rc1")).unwrap(), &work)
            .await
            .unwrap();
        assert_eq!(tag.commit, rev("mm-stable"));
        let by_id = fetch_tree(
            &TreeSpec::parse(&url, Some(&rev("mm-unstable")[..12])).unwrap(),
            &work,
        )
        .await
        .unwrap();
        assert_eq!(by_id.commit, rev("mm-unstable"));
        let head = fetch_tree(&TreeSpec::parse(&url, None).unwrap(), &work)
            .await
            .unwrap();
        assert_eq!(head.commit, rev("mm-stable"));

        // New upstream work arrives with the next fetch.
        sh(&up, "echo y > g && git add g && git commit -qm three");
        let again = fetch_tree(&TreeSpec::parse(&url, Some("mm-stable")).unwrap(), &work)
            .await
            .unwrap();
        assert_eq!(again.commit, rev("mm-stable"));
        assert_ne!(again.commit, stable.commit);

        let err = fetch_tree(
            &TreeSpec::parse(&url, Some("no-such-branch")).unwrap(),
            &work,
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "ref `no-such-branch` not found in {url} (give a branch, a tag or a commit it has)"
            )
        );
    }

    /// The real git: the URL's credentials reach it through the helper,
    /// not its command line; only the allowed transports run.
    #[tokio::test]
    async fn git_gets_credentials_off_argv_and_only_allowed_transports() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("m.git");
        sh(tmp.path(), "git init -q --bare m.git");
        let (mut cmd, url) =
            fetch_command(&repo, "https://x-access-token:p%40ss@example.org/o/r.git");
        assert_eq!(url, "https://example.org/o/r.git");
        let argv: Vec<String> = cmd
            .as_std()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            !argv
                .iter()
                .any(|a| a.contains("p@ss") || a.contains("p%40ss")),
            "{argv:?}"
        );
        cmd.args(["credential", "fill"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"protocol=https\nhost=example.org\npath=o/r.git\n\n")
            .await
            .unwrap();
        drop(stdin);
        let out = child.wait_with_output().await.unwrap();
        let filled = String::from_utf8_lossy(&out.stdout);
        assert!(
            filled.contains("username=x-access-token\n") && filled.contains("password=p@ss\n"),
            "{filled}"
        );

        // ext:: would run a command, an option-like URL would be an option:
        // git refuses both even when our own checks are bypassed.
        let marker = tmp.path().join("PWNED");
        for url in [
            format!("ext::sh -c touch% {}", marker.display()),
            format!("--upload-pack=touch {};false", marker.display()),
        ] {
            let (mut cmd, url) = fetch_command(&repo, &url);
            cmd.args(["fetch", "--"]).arg(&url).arg("HEAD");
            let out = cmd.output().await.unwrap();
            assert!(!out.status.success());
            assert!(!marker.exists(), "{url} ran a command");
        }
        let spec = TreeSpec {
            url: format!("--upload-pack=touch {};false", marker.display()),
            git_ref: "HEAD".into(),
        };
        let err = fetch_tree(&spec, &WorkDir::new(tmp.path().join("w")))
            .await
            .unwrap_err();
        assert!(
            matches!(err, TreeError::BadSpec(BadSpec::UrlIsOption(_))),
            "{err}"
        );
        assert!(!marker.exists());
    }
}
