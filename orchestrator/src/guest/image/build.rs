//! Building an image: resolve the recipe's packages, key the image by the
//! recipe's content and those versions, and when the work dir has no image
//! of that key, bootstrap exactly those packages with mmdebstrap into a
//! directory, add the recipe's files, run its commands (chrooted, without
//! network), pack the tree into a read-only erofs file and record what is
//! in it. Every tool runs in its own process group with a timeout.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::recipe::{self, Recipe};
use super::resolve::{self, Package};
use super::{
    images_root, run_captured, ImageError, ImageManifest, IMAGE_FILE, IMAGE_FORMAT, MANIFEST_FILE,
};
use crate::host::paths::WorkDir;

/// How `ensure` may go about it.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Refresh the Debian index before resolving (false: use the last one
    /// fetched; a failed refresh falls back to it with a warning).
    pub refresh: bool,
    /// Longest a bootstrap may take.
    pub timeout: Duration,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            refresh: true,
            timeout: Duration::from_secs(45 * 60),
        }
    }
}

/// A built (or found) image.
#[derive(Clone, Debug)]
pub struct Built {
    pub path: PathBuf,
    pub manifest: ImageManifest,
    /// Found in the work dir under the same key.
    pub cached: bool,
    /// Time to resolve the package versions.
    pub resolve_s: f64,
    pub total_s: f64,
}

fn io(p: &Path) -> impl FnOnce(std::io::Error) -> ImageError + '_ {
    move |e| ImageError::Io(p.to_path_buf(), e)
}

fn sha256_file(path: &Path) -> Result<String, ImageError> {
    let mut f = std::fs::File::open(path).map_err(io(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// The cache key: the recipe's content (suite, packages, each file's
/// destination, mode and bytes, the commands) and the resolved versions.
/// The description is left out: it changes nothing in the image.
pub fn cache_key(recipe: &Recipe, resolved: &[Package]) -> Result<String, ImageError> {
    let mut h = Sha256::new();
    h.update(format!("mmci-image {IMAGE_FORMAT}\n"));
    h.update(format!(
        "suite {}\narch {}\n",
        recipe.suite,
        resolve::debian_arch()
    ));
    for (p, _) in &recipe.packages {
        h.update(format!("package {p}\n"));
    }
    for f in &recipe.files {
        let bytes = std::fs::read(&f.src).map_err(io(&f.src))?;
        h.update(format!(
            "file {} {:o} {}\n",
            f.dest,
            f.mode,
            hex::encode(Sha256::digest(&bytes))
        ));
    }
    for r in &recipe.run {
        h.update(format!("run {}\n", r.len()));
        h.update(r.as_bytes());
    }
    for p in resolved {
        h.update(format!("resolved {} {}\n", p.name, p.version));
    }
    Ok(hex::encode(h.finalize())[..16].to_string())
}

/// Installed packages in a dpkg status file (`install ok installed` only).
pub fn parse_dpkg_status(text: &str) -> Vec<Package> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
                .map(|v| v.trim().to_string())
        };
        if let (Some(name), Some(version), Some(status)) =
            (field("Package"), field("Version"), field("Status"))
        {
            if status == "install ok installed" {
                out.push(Package { name, version });
            }
        }
    }
    out.sort();
    out
}

/// `'text'` for sh, whatever it holds.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The time every image is built at (2025-01-01T00:00:00Z).
const IMAGE_EPOCH: u64 = 1_735_689_600;

/// mmdebstrap's arguments for `recipe` with `packages` pinned, into `target`.
pub fn mmdebstrap_args(
    recipe: &Recipe,
    packages: &[Package],
    run_script: Option<&Path>,
    target: &Path,
) -> Vec<String> {
    let pins: Vec<String> = packages
        .iter()
        .map(|p| format!("{}={}", p.name, p.version))
        .collect();
    let mut a = vec![
        "--variant=custom".to_string(),
        "--mode=root".into(),
        "--format=directory".into(),
        format!("--architectures={}", resolve::debian_arch()),
        format!("--include={}", pins.join(",")),
        "--aptopt=Acquire::Retries \"3\"".into(),
        // Documentation and translations: tens of MiB no workload reads.
        // Copyright files stay (they are the packages' licences).
        "--dpkgopt=path-exclude=/usr/share/man/*".into(),
        "--dpkgopt=path-exclude=/usr/share/info/*".into(),
        "--dpkgopt=path-exclude=/usr/share/locale/*".into(),
        "--dpkgopt=path-exclude=/usr/share/doc/*".into(),
        "--dpkgopt=path-include=/usr/share/doc/*/copyright".into(),
    ];
    for f in &recipe.files {
        let parent = Path::new(&f.dest)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "/".into());
        a.push(format!(
            "--customize-hook=mkdir -p \"$1\"{}",
            sh_quote(&parent)
        ));
        a.push(format!(
            "--customize-hook=upload {} {}",
            f.src.display(),
            f.dest
        ));
        a.push(format!(
            "--customize-hook=chmod {:o} \"$1\"{}",
            f.mode,
            sh_quote(&f.dest)
        ));
    }
    if let Some(script) = run_script {
        // No network for the recipe's own commands: what is in an image
        // comes from Debian's archive and the recipe's folder only.
        a.push(format!(
            "--customize-hook=upload {} /mmci-build.sh",
            script.display()
        ));
        a.push("--customize-hook=unshare --net chroot \"$1\" /bin/sh -e /mmci-build.sh".into());
        a.push("--customize-hook=rm -f \"$1\"/mmci-build.sh".into());
    }
    // The host's resolv.conf and hostname, which mmdebstrap copies in, differ
    // between machines (and the guest has no network).
    a.push(
        "--customize-hook=rm -rf \"$1\"/var/cache/apt/archives/*.deb \"$1\"/var/lib/apt/lists/* \"$1\"/var/log/apt \"$1\"/var/cache/ldconfig/aux-cache \"$1\"/etc/resolv.conf \"$1\"/etc/hostname"
            .into(),
    );
    a.push(recipe.suite.clone());
    a.push(target.display().to_string());
    a.extend(resolve::sources(&recipe.suite));
    a
}

/// mkfs.erofs' arguments: lz4hc, fixed timestamps and UUID, so that the
/// same tree gives the same bytes.
pub fn mkfs_args(tree: &Path, out: &Path, key: &str) -> Vec<String> {
    let k = format!("{key:0<32}");
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        &k[0..8],
        &k[8..12],
        &k[12..16],
        &k[16..20],
        &k[20..32]
    );
    vec![
        "-zlz4hc".into(),
        "-T0".into(),
        format!("-U{uuid}"),
        out.display().to_string(),
        tree.display().to_string(),
    ]
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The newest built image of recipe `name` in the work dir.
pub fn latest(work: &WorkDir, name: &str) -> Result<(PathBuf, ImageManifest), ImageError> {
    let root = images_root(work);
    let mut best: Option<(PathBuf, ImageManifest)> = None;
    if let Ok(dir) = std::fs::read_dir(&root) {
        for e in dir.flatten() {
            let p = e.path();
            let Ok(text) = std::fs::read_to_string(p.join(MANIFEST_FILE)) else {
                continue;
            };
            let Ok(m) = serde_json::from_str::<ImageManifest>(&text) else {
                continue;
            };
            if m.name == name
                && p.join(IMAGE_FILE).is_file()
                && best
                    .as_ref()
                    .is_none_or(|(_, b)| m.built_unix > b.built_unix)
            {
                best = Some((p.join(IMAGE_FILE), m));
            }
        }
    }
    best.ok_or_else(|| ImageError::NotBuilt {
        name: name.to_string(),
        dir: root,
    })
}

/// Finds the image of `recipe_dir` for today's package versions in the
/// work dir, or builds it.
pub async fn ensure(
    recipe_dir: &Path,
    work: &WorkDir,
    opts: &BuildOptions,
) -> Result<Built, ImageError> {
    let t0 = Instant::now();
    let recipe = recipe::load(recipe_dir)?;
    let root = images_root(work);
    std::fs::create_dir_all(&root).map_err(io(&root))?;
    let _lock = crate::host::process::lock_file(&work.locks(), &format!("image-{}", recipe.name))
        .await
        .map_err(io(&work.locks()))?;
    let log = root.join(format!("{}.log", recipe.name));
    let _ = std::fs::write(&log, "");
    let apt = root.join("apt");
    let packages = match resolve::resolve(&recipe, &apt, &log, opts.refresh).await {
        // The archive cannot be reached: resolve against the index fetched
        // last time, if there is one.
        Err(ImageError::Apt { what, detail, .. })
            if opts.refresh && what.starts_with("apt-get update") =>
        {
            tracing::warn!(%detail, "cannot refresh the Debian index; using the last one fetched");
            resolve::resolve(&recipe, &apt, &log, false).await?
        }
        other => other?,
    };
    let resolve_s = t0.elapsed().as_secs_f64();
    let key = cache_key(&recipe, &packages)?;
    let dir = root.join(format!("{}-{key}", recipe.name));
    let path = dir.join(IMAGE_FILE);
    if let Ok(text) = std::fs::read_to_string(dir.join(MANIFEST_FILE)) {
        if let Ok(manifest) = serde_json::from_str::<ImageManifest>(&text) {
            if path.is_file() {
                return Ok(Built {
                    path,
                    manifest,
                    cached: true,
                    resolve_s,
                    total_s: t0.elapsed().as_secs_f64(),
                });
            }
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(ImageError::NotRoot);
    }
    for (tool, package) in [("mmdebstrap", "mmdebstrap"), ("mkfs.erofs", "erofs-utils")] {
        if crate::host::tools::on_path(tool).is_none() {
            return Err(ImageError::MissingTool { tool, package });
        }
    }
    let staging = root.join(format!("tmp-{}-{key}-{}", recipe.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(io(&staging))?;
    let result = build_into(&recipe, &packages, &key, &staging, &log, opts).await;
    let outcome = match result {
        Ok(mut manifest) => {
            manifest.build_s = t0.elapsed().as_secs_f64();
            let out = staging.join("out");
            let text = serde_json::to_string_pretty(&manifest).expect("serializable");
            std::fs::write(out.join(MANIFEST_FILE), text).map_err(io(&out))?;
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::rename(&out, &dir).map_err(io(&dir))?;
            Ok(Built {
                path,
                manifest,
                cached: false,
                resolve_s,
                total_s: t0.elapsed().as_secs_f64(),
            })
        }
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_dir_all(&staging);
    outcome
}

async fn build_into(
    recipe: &Recipe,
    packages: &[Package],
    key: &str,
    staging: &Path,
    log: &Path,
    opts: &BuildOptions,
) -> Result<ImageManifest, ImageError> {
    let tree = staging.join("root");
    let run_script = if recipe.run.is_empty() {
        None
    } else {
        let p = staging.join("run.sh");
        let mut text = String::from(
            "set -e\nexport PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
        );
        for r in &recipe.run {
            text.push_str(r);
            text.push('\n');
        }
        std::fs::write(&p, text).map_err(io(&p))?;
        Some(p)
    };
    let mut cmd = tokio::process::Command::new("mmdebstrap");
    // A fixed time: mmdebstrap's output is then the same bytes for the same
    // packages (its documented reproducible mode), and so is the image
    // (mkfs_args fixes the times and the UUID). The image is keyed by its
    // recipe and package versions, not by when it was built. The recipe's
    // own commands see it too, and kbuild's timestamp with it.
    cmd.env("SOURCE_DATE_EPOCH", IMAGE_EPOCH.to_string())
        .env("KBUILD_BUILD_TIMESTAMP", format!("@{IMAGE_EPOCH}"));
    cmd.args(mmdebstrap_args(
        recipe,
        packages,
        run_script.as_deref(),
        &tree,
    ));
    let (ok, _) = run_captured(&mut cmd, log, "mmdebstrap", opts.timeout).await?;
    if !ok {
        return Err(ImageError::Command {
            what: format!("mmdebstrap of {}", recipe.path().display()),
            timed_out: false,
            log: log.to_path_buf(),
        });
    }
    let status_path = tree.join("var/lib/dpkg/status");
    let status = std::fs::read_to_string(&status_path).map_err(io(&status_path))?;
    let installed = parse_dpkg_status(&status);
    if installed != packages {
        tracing::warn!(
            resolved = packages.len(),
            installed = installed.len(),
            "the image's packages differ from the resolved set; the manifest lists what is installed"
        );
    }
    let out = staging.join("out");
    std::fs::create_dir_all(&out).map_err(io(&out))?;
    let image = out.join(IMAGE_FILE);
    let mut cmd = tokio::process::Command::new("mkfs.erofs");
    cmd.args(mkfs_args(&tree, &image, key));
    let (ok, _) = run_captured(&mut cmd, log, "mkfs.erofs", Duration::from_secs(600)).await?;
    if !ok {
        return Err(ImageError::Command {
            what: "mkfs.erofs".into(),
            timed_out: false,
            log: log.to_path_buf(),
        });
    }
    let size_bytes = std::fs::metadata(&image).map_err(io(&image))?.len();
    Ok(ImageManifest {
        format: IMAGE_FORMAT,
        name: recipe.name.clone(),
        recipe: recipe
            .dir
            .canonicalize()
            .unwrap_or_else(|_| recipe.dir.clone()),
        key: key.to_string(),
        suite: recipe.suite.clone(),
        arch: resolve::debian_arch().to_string(),
        packages: installed,
        size_bytes,
        sha256: sha256_file(&image)?,
        built_unix: now_unix(),
        build_s: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe(dir: &Path) -> Recipe {
        std::fs::write(dir.join("a.sh"), "echo a\n").unwrap();
        Recipe {
            name: "t".into(),
            dir: dir.to_path_buf(),
            description: Some("one".into()),
            suite: "bookworm".into(),
            packages: vec![("procps".into(), 2)],
            files: vec![recipe::File {
                src: dir.join("a.sh"),
                dest: "/usr/local/bin/a".into(),
                mode: 0o755,
            }],
            run: vec!["true".into()],
        }
    }

    fn pkg(n: &str, v: &str) -> Package {
        Package {
            name: n.into(),
            version: v.into(),
        }
    }

    #[test]
    fn key_follows_content_and_versions_not_the_description() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recipe(tmp.path());
        let resolved = vec![pkg("procps", "2:4.0.2-3")];
        let k = cache_key(&r, &resolved).unwrap();
        assert_eq!(k.len(), 16);
        let mut described = r.clone();
        described.description = Some("two".into());
        assert_eq!(cache_key(&described, &resolved).unwrap(), k);
        assert_ne!(cache_key(&r, &[pkg("procps", "2:4.0.2-4")]).unwrap(), k);
        let mut ran = r.clone();
        ran.run.push("false".into());
        assert_ne!(cache_key(&ran, &resolved).unwrap(), k);
        std::fs::write(tmp.path().join("a.sh"), "echo b\n").unwrap();
        assert_ne!(cache_key(&r, &resolved).unwrap(), k);
    }

    #[test]
    fn dpkg_status_lists_installed_packages_only() {
        let text = "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\nDescription: x\n continued\n\n\
                    Package: gone\nStatus: deinstall ok config-files\nVersion: 1\n\n\
                    Package: bash\nStatus: install ok installed\nPriority: required\nVersion: 5.2.15-2+b2\n";
        assert_eq!(
            parse_dpkg_status(text),
            [pkg("bash", "5.2.15-2+b2"), pkg("libc6", "2.36-9")]
        );
    }

    #[test]
    fn mmdebstrap_gets_pins_files_and_a_network_free_run_hook() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recipe(tmp.path());
        let a = mmdebstrap_args(
            &r,
            &[pkg("procps", "2:4.0.2-3"), pkg("bash", "5.2")],
            Some(Path::new("/s/run.sh")),
            Path::new("/t/root"),
        );
        assert!(a.contains(&"--include=procps=2:4.0.2-3,bash=5.2".to_string()));
        assert!(a.contains(&"--variant=custom".to_string()));
        assert!(
            a.iter()
                .any(|x| x.starts_with("--customize-hook=upload ")
                    && x.ends_with(" /usr/local/bin/a"))
        );
        assert!(a.contains(&"--customize-hook=chmod 755 \"$1\"'/usr/local/bin/a'".to_string()));
        assert!(a.iter().any(|x| x.contains("unshare --net chroot")));
        let tail: Vec<&str> = a.iter().rev().take(5).map(String::as_str).collect();
        assert_eq!(tail[4], "bookworm");
        assert_eq!(tail[3], "/t/root");
    }

    #[test]
    fn quoting_and_mkfs() {
        assert_eq!(sh_quote("a'b"), "'a'\\''b'");
        let m = mkfs_args(Path::new("/t"), Path::new("/o.erofs"), "0123456789abcdef");
        assert_eq!(m[2], "-U01234567-89ab-cdef-0000-000000000000");
    }
}
