//! Kernel source trees as git repositories in the work dir. The offline
//! default is Debian's linux-source tarball, imported once into git (with a
//! pinned author and date, so the same tarball gives the same commit on every
//! machine) so that patches can later be applied with `git am`.

use std::path::{Path, PathBuf};

use sha2::Digest;
use tokio::process::Command;

use crate::host::paths::WorkDir;
use crate::host::process::{self, CommandError, Limits};

/// Debian's linux-source-6.12 package installs this.
pub const BUNDLED_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";

/// The default base of mm patches online: mm-stable of akpm's mm.git.
pub const MM_GIT_URL: &str = "https://git.kernel.org/pub/scm/linux/kernel/git/akpm/mm.git";
pub const MM_STABLE_REF: &str = "mm-stable";

/// A tree given by URL and ref (branch, tag or commit). Built only by
/// [`TreeSpec::parse`], which refuses what git would read as an option.
/// Shown (Debug, JSON, messages) with the URL's credentials masked.
#[derive(Clone, PartialEq, Eq)]
pub struct TreeSpec {
    pub url: String,
    pub git_ref: String,
}

impl std::fmt::Debug for TreeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeSpec")
            .field("url", &redact_url(&self.url))
            .field("git_ref", &self.git_ref)
            .finish()
    }
}

impl serde::Serialize for TreeSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("TreeSpec", 2)?;
        st.serialize_field("url", &redact_url(&self.url))?;
        st.serialize_field("git_ref", &self.git_ref)?;
        st.end()
    }
}

/// The transports git may use for a tree (`protocol.<name>.allow`); every
/// other one (ext::, ssh, plain http, ...) is refused, by [`check_url`]
/// with a clear message and by git itself (`protocol.allow=never`).
pub const PROTOCOLS: [&str; 3] = ["https", "git", "file"];

/// Why a tree URL or ref was refused before git saw it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadSpec {
    #[error("the tree URL is empty")]
    EmptyUrl,
    #[error("tree URL `{0}` starts with `-`: git would take it for an option; give an https://, git:// or file:// URL or a path")]
    UrlIsOption(String),
    #[error("tree URL `{url}`: {why}; give an https://, git:// or file:// URL or a path")]
    Url { url: String, why: String },
    #[error("ref `{0}` starts with `-`: git would take it for an option; give a branch, a tag or a commit")]
    RefIsOption(String),
    #[error("ref `{git_ref}`: {why}; give a branch, a tag or a commit")]
    Ref { git_ref: String, why: String },
}

impl BadSpec {
    /// The error is about the ref, not the URL.
    pub fn is_ref(&self) -> bool {
        matches!(self, BadSpec::RefIsOption(_) | BadSpec::Ref { .. })
    }
}

/// Refuses a tree URL git would misread: an option (`--upload-pack=...`),
/// a transport other than [`PROTOCOLS`] (`ext::`, `ssh://`, `host:path`),
/// control characters. Local paths (absolute or relative) are fine.
pub fn check_url(url: &str) -> Result<(), BadSpec> {
    let shown = || redact_url(url);
    let bad = |why: &str| BadSpec::Url {
        url: shown(),
        why: why.to_string(),
    };
    if url.is_empty() {
        return Err(BadSpec::EmptyUrl);
    }
    if url.starts_with('-') {
        return Err(BadSpec::UrlIsOption(shown()));
    }
    if url.chars().any(char::is_control) {
        return Err(bad("it holds a control character"));
    }
    if let Some((scheme, _)) = url.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        if !PROTOCOLS.contains(&scheme.as_str()) {
            return Err(bad(&format!("the {scheme}:// transport is not allowed")));
        }
        return Ok(());
    }
    // No scheme: git reads `host:path` as ssh and `name::address` as a
    // remote helper (ext:: runs a command); a path has no `:` before its
    // first `/`.
    let head = url.split('/').next().unwrap_or(url);
    if head.contains(':') {
        return Err(bad(
            "`host:path` (ssh) and `transport::address` (remote helpers) are not allowed",
        ));
    }
    Ok(())
}

/// Refuses a ref git would misread as an option, or that would change the
/// refspec it is put in (`+REF:refs/mmci/...`): what `git check-ref-format`
/// forbids, besides `HEAD` and commit ids, which it allows.
pub fn check_ref(git_ref: &str) -> Result<(), BadSpec> {
    let bad = |why: &str| BadSpec::Ref {
        git_ref: git_ref.to_string(),
        why: why.to_string(),
    };
    if git_ref.is_empty() {
        return Err(bad("it is empty"));
    }
    if git_ref.starts_with('-') {
        return Err(BadSpec::RefIsOption(git_ref.to_string()));
    }
    if let Some(c) = git_ref
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || ":^~?*[\\".contains(*c))
    {
        return Err(bad(&format!("{c:?} is not allowed in a ref")));
    }
    if git_ref.contains("..") || git_ref.contains("@{") {
        return Err(bad("`..` and `@{` are not allowed in a ref"));
    }
    Ok(())
}

/// `url` with the user and password of `scheme://user:password@host/...`
/// replaced by `***`, for every message, manifest and report.
pub fn redact_url(url: &str) -> String {
    match split_userinfo(url) {
        (bare, Some(_)) => match bare.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://***@{rest}"),
            None => bare,
        },
        (bare, None) => bare,
    }
}

/// `url` without its userinfo, and the user and password it held
/// (percent-decoded, as git decodes them).
pub fn split_userinfo(url: &str) -> (String, Option<(String, String)>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..end].rfind('@') else {
        return (url.to_string(), None);
    };
    let (user, password) = match rest[..at].split_once(':') {
        Some((u, p)) => (u, p),
        None => (&rest[..at], ""),
    };
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    (
        format!("{scheme}://{}", &rest[at + 1..]),
        Some((decode(user), decode(password))),
    )
}

impl TreeSpec {
    /// `mm-stable` names akpm's tree; anything else is a git URL, checked
    /// with [`check_url`] (and the ref with [`check_ref`]).
    pub fn parse(url: &str, git_ref: Option<&str>) -> Result<TreeSpec, BadSpec> {
        let spec = if url == MM_STABLE_REF {
            TreeSpec {
                url: MM_GIT_URL.to_string(),
                git_ref: git_ref.unwrap_or(MM_STABLE_REF).to_string(),
            }
        } else {
            TreeSpec {
                url: url.to_string(),
                git_ref: git_ref.unwrap_or("HEAD").to_string(),
            }
        };
        spec.check()?;
        Ok(spec)
    }

    /// Both checks, again where git is called (the fields are public).
    pub fn check(&self) -> Result<(), BadSpec> {
        check_url(&self.url)?;
        check_ref(&self.git_ref)
    }

    /// The URL as messages and reports show it (credentials masked).
    pub fn shown_url(&self) -> String {
        redact_url(&self.url)
    }

    /// The mirror's name: the repository's name and a hash of its URL
    /// (without credentials, which may change), so two trees called
    /// linux.git do not share a mirror.
    pub fn mirror_name(&self) -> String {
        let (url, _) = split_userinfo(&self.url);
        let last = url
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("tree")
            .trim_end_matches(".git");
        let clean: String = last
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let hash = hex::encode(sha2::Sha256::digest(url.as_bytes()));
        format!("{clean}-{}", &hash[..8])
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    BadSpec(#[from] BadSpec),
    #[error("fetching {url}")]
    Fetch {
        url: String,
        #[source]
        source: CommandError,
    },
    #[error("preparing the build checkout {path}")]
    Checkout {
        path: PathBuf,
        #[source]
        source: CommandError,
    },
    #[error("ref `{git_ref}` not found in {url} (give a branch, a tag or a commit it has)")]
    UnknownRef { url: String, git_ref: String },
    #[error("kernel source tarball {0} not found: install it with ./mmci-setup (Debian package linux-source-6.12)")]
    MissingTarball(PathBuf),
    #[error("cannot prepare {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("running git in {path}")]
    Git {
        path: PathBuf,
        #[source]
        source: CommandError,
    },
    #[error("importing {tarball}")]
    Import {
        tarball: PathBuf,
        #[source]
        source: CommandError,
    },
}

/// A kernel tree checked into git.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SourceTree {
    /// Short name, e.g. "linux-source-6.12".
    pub name: String,
    pub path: PathBuf,
    /// Commit of the tree's HEAD.
    pub commit: String,
    /// `make kernelversion` of the tree, e.g. "6.12.95".
    pub version: String,
}

fn git_err(path: &Path) -> impl FnOnce(CommandError) -> TreeError + '_ {
    move |source| TreeError::Git {
        path: path.to_path_buf(),
        source,
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TreeError + '_ {
    move |source| TreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Name of the tree a tarball becomes: the file name without .tar.*.
pub fn tree_name(tarball: &Path) -> String {
    let file = tarball
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "linux".into());
    file.split(".tar").next().unwrap_or(&file).to_string()
}

/// VERSION.PATCHLEVEL.SUBLEVEL from a top-level kernel Makefile.
pub fn makefile_version(makefile: &str) -> Option<String> {
    let get = |key: &str| {
        makefile.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let extra = get("EXTRAVERSION").unwrap_or_default();
    Some(format!(
        "{}.{}.{}{}",
        get("VERSION")?,
        get("PATCHLEVEL")?,
        get("SUBLEVEL")?,
        extra
    ))
}

fn git(repo: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo);
    // Pinned identity and dates: the import commit is reproducible.
    for (k, v) in [
        ("GIT_AUTHOR_NAME", "mmci"),
        ("GIT_AUTHOR_EMAIL", "mmci@localhost"),
        ("GIT_COMMITTER_NAME", "mmci"),
        ("GIT_COMMITTER_EMAIL", "mmci@localhost"),
        ("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z"),
        ("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z"),
    ] {
        cmd.env(k, v);
    }
    cmd
}

/// Imports `tarball` (once; later calls return the existing repository).
pub async fn import_tarball(tarball: &Path, work: &WorkDir) -> Result<SourceTree, TreeError> {
    if !tarball.is_file() {
        return Err(TreeError::MissingTarball(tarball.to_path_buf()));
    }
    let name = tree_name(tarball);
    let trees = work.trees();
    std::fs::create_dir_all(&trees).map_err(io_err(&trees))?;
    let repo = trees.join(&name);
    let _lock = process::lock_file(&work.locks(), &format!("tree-{name}"))
        .await
        .map_err(io_err(&work.locks()))?;

    if !repo.join(".git").is_dir() {
        let staging = trees.join(format!(".import-{name}"));
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(io_err(&staging))?;
        }
        std::fs::create_dir_all(&staging).map_err(io_err(&staging))?;
        let log = trees.join(format!("{name}.import.log"));
        let _ = std::fs::remove_file(&log);
        let import = |source| TreeError::Import {
            tarball: tarball.to_path_buf(),
            source,
        };
        let mut tar = Command::new("tar");
        tar.arg("-xf")
            .arg(tarball)
            .arg("-C")
            .arg(&staging)
            .arg("--strip-components=1");
        process::run_logged(&mut tar, &log, "tar")
            .await
            .map_err(import)?;
        // --force: Debian's packaging adds "/*" to the top-level .gitignore,
        // and a clean release tarball holds nothing that should be left out.
        for args in [
            vec!["init", "-q"],
            vec!["config", "gc.auto", "0"],
            vec!["add", "-A", "--force"],
        ] {
            process::run_logged(git(&staging).args(&args), &log, &format!("git {}", args[0]))
                .await
                .map_err(import)?;
        }
        let message = format!("Import {}", tarball.display());
        process::run_logged(
            git(&staging).args(["commit", "-q", "--no-verify", "-m", &message]),
            &log,
            "git commit",
        )
        .await
        .map_err(import)?;
        std::fs::rename(&staging, &repo).map_err(io_err(&repo))?;
    }
    open(&repo, &name).await
}

/// Describes an existing repository.
pub async fn open(repo: &Path, name: &str) -> Result<SourceTree, TreeError> {
    let out = process::output(
        git(repo).args(["rev-parse", "HEAD"]),
        "git rev-parse HEAD",
        Limits::QUICK,
    )
    .await
    .map_err(git_err(repo))?;
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let makefile = std::fs::read_to_string(repo.join("Makefile")).map_err(io_err(repo))?;
    Ok(SourceTree {
        name: name.to_string(),
        path: repo.to_path_buf(),
        commit,
        version: makefile_version(&makefile).unwrap_or_else(|| "unknown".into()),
    })
}

mod checkout;
mod fetch;
mod upstream;

pub use checkout::*;
pub use fetch::*;
pub use upstream::*;

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn names_and_versions() {
        assert_eq!(
            tree_name(Path::new("/usr/src/linux-source-6.12.tar.xz")),
            "linux-source-6.12"
        );
        let mk = "# SPDX\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 95\nEXTRAVERSION =\nNAME = Baby Opossum Posse\n";
        assert_eq!(makefile_version(mk).as_deref(), Some("6.12.95"));
    }

    #[tokio::test]
    async fn import_is_reproducible_and_idempotent() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src/linux-tiny");
        std::fs::create_dir_all(src.join("mm")).unwrap();
        std::fs::write(
            src.join("Makefile"),
            "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 2\nEXTRAVERSION = -rc3\n",
        )
        .unwrap();
        std::fs::write(src.join("mm/vmscan.c"), "int x;\n").unwrap();
        let tarball = tmp.path().join("linux-tiny.tar.xz");
        let st = std::process::Command::new("tar")
            .arg("-cJf")
            .arg(&tarball)
            .arg("-C")
            .arg(tmp.path().join("src"))
            .arg("linux-tiny")
            .status()
            .unwrap();
        assert!(st.success());

        let a = import_tarball(&tarball, &WorkDir::new(tmp.path().join("w1")))
            .await
            .unwrap();
        let b = import_tarball(&tarball, &WorkDir::new(tmp.path().join("w2")))
            .await
            .unwrap();
        assert_eq!(a.commit, b.commit, "same tarball, same commit");
        assert_eq!(a.commit.len(), 40);
        assert_eq!(a.version, "6.1.2-rc3");
        assert!(a.path.join("mm/vmscan.c").is_file());
        let again = import_tarball(&tarball, &WorkDir::new(tmp.path().join("w1")))
            .await
            .unwrap();
        assert_eq!(again.commit, a.commit);
    }

    pub(super) fn sh(dir: &Path, script: &str) {
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.org")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.org")
            .status()
            .unwrap();
        assert!(st.success(), "{script}");
    }

    #[test]
    fn mm_stable_alias_and_mirror_names() {
        let s = TreeSpec::parse("mm-stable", None).unwrap();
        assert_eq!(
            (s.url.as_str(), s.git_ref.as_str()),
            (MM_GIT_URL, "mm-stable")
        );
        assert!(s.mirror_name().starts_with("mm-"));
        let a = TreeSpec::parse("https://example.org/a/linux.git", None)
            .unwrap()
            .mirror_name();
        let b = TreeSpec::parse("https://example.org/b/linux.git", None)
            .unwrap()
            .mirror_name();
        assert!(a.starts_with("linux-") && b.starts_with("linux-"));
        assert_ne!(a, b);
    }

    #[test]
    fn urls_and_refs_git_would_misread_are_refused() {
        // (url, ref, Ok or the error's words)
        let cases: &[(&str, Option<&str>, Result<(), &str>)] = &[
            (
                "https://git.kernel.org/pub/scm/linux/kernel/git/akpm/mm.git",
                Some("mm-stable"),
                Ok(()),
            ),
            ("git://git.kernel.org/linux.git", None, Ok(())),
            ("file:///srv/linux.git", Some("v6.12"), Ok(())),
            ("/srv/linux.git", Some("0123456789ab"), Ok(())),
            ("../linux", Some("refs/heads/next"), Ok(())),
            ("mm-stable", None, Ok(())),
            ("HTTPS://example.org/x.git", None, Ok(())),
            (
                "--upload-pack=touch /tmp/x;false",
                None,
                Err("starts with `-`: git would take it for an option"),
            ),
            ("-oProxyCommand=x", None, Err("starts with `-`")),
            ("", None, Err("empty")),
            ("ext::sh -c touch% /tmp/x", None, Err("remote helpers")),
            (
                "ssh://host/x.git",
                None,
                Err("the ssh:// transport is not allowed"),
            ),
            (
                "http://example.org/x.git",
                None,
                Err("the http:// transport is not allowed"),
            ),
            ("host:linux.git", None, Err("`host:path` (ssh)")),
            (
                "https://example.org/x\n.git",
                None,
                Err("control character"),
            ),
            (
                "https://example.org/x.git",
                Some("--output=/tmp/x"),
                Err("ref `--output=/tmp/x` starts with `-`"),
            ),
            (
                "https://example.org/x.git",
                Some("a:refs/heads/b"),
                Err("':' is not allowed in a ref"),
            ),
            (
                "https://example.org/x.git",
                Some("a b"),
                Err("not allowed in a ref"),
            ),
            ("https://example.org/x.git", Some("a..b"), Err("`..`")),
            ("https://example.org/x.git", Some(""), Err("empty")),
            ("mm-stable", Some("-x"), Err("starts with `-`")),
        ];
        for (url, r, want) in cases {
            match (TreeSpec::parse(url, *r), want) {
                (Ok(_), Ok(())) => {}
                (Err(e), Err(words)) => {
                    assert!(e.to_string().contains(words), "{url} {r:?}: {e}");
                    assert_eq!(e.is_ref(), e.to_string().starts_with("ref "), "{e}");
                }
                (got, want) => panic!("{url} {r:?}: {got:?}, wanted {want:?}"),
            }
        }
        for (entry, ok) in [
            ("mm-unstable", true),
            ("--upload-pack=x", false),
            ("https://example.org/x.git#--output=y", false),
            ("file://--upload-pack=x", true),
            ("/srv/x.git#next", true),
            ("ssh://h/x.git#next", false),
        ] {
            assert_eq!(CascadeEntry::parse(entry).is_ok(), ok, "{entry}");
        }
    }

    #[test]
    fn credentials_in_urls_are_masked() {
        for (url, shown) in [
            (
                "https://user:ghp_tok@github.com/o/r.git",
                "https://***@github.com/o/r.git",
            ),
            (
                "https://ghp_tok@github.com/o/r.git",
                "https://***@github.com/o/r.git",
            ),
            (
                "https://a:b@c@host:8443/x?y#z",
                "https://***@host:8443/x?y#z",
            ),
            ("https://github.com/o/r.git", "https://github.com/o/r.git"),
            (
                "https://host/path@not-userinfo",
                "https://host/path@not-userinfo",
            ),
            ("/srv/x@y.git", "/srv/x@y.git"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        assert_eq!(
            split_userinfo("https://x-access-token:p%40ss%3Aw@github.com/o/r.git"),
            (
                "https://github.com/o/r.git".to_string(),
                Some(("x-access-token".to_string(), "p@ss:w".to_string()))
            )
        );
        let spec = TreeSpec::parse("https://u:ghp_tok@github.com/o/r.git", None).unwrap();
        let plain = TreeSpec::parse("https://github.com/o/r.git", None).unwrap();
        assert_eq!(
            spec.mirror_name(),
            plain.mirror_name(),
            "a new token, the same mirror"
        );
        for shown in [
            format!("{spec:?}"),
            serde_json::to_string(&spec).unwrap(),
            spec.shown_url(),
            TreeSpec::parse("https://u:ghp_tok@github.com/o/r.git", Some("-x"))
                .unwrap_err()
                .to_string(),
            check_url("https://u:ghp_tok@github.com/\u{7}")
                .unwrap_err()
                .to_string(),
        ] {
            assert!(!shown.contains("ghp_tok"), "{shown}");
        }
    }

    #[tokio::test]
    async fn missing_tarball_says_how_to_get_it() {
        let tmp = tempfile::tempdir().unwrap();
        let err = import_tarball(
            Path::new("/nonexistent/linux.tar.xz"),
            &WorkDir::new(tmp.path()),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("mmci-setup"), "{err}");
    }
}
