//! Kernel builds: tinyconfig + our fragments, merged with merge_config.sh and
//! checked option by option, then `make O=<dir>`, out of tree. Each build
//! directory is named by a cache key (tree commit, fragments, arch,
//! compiler); a finished build leaves `mmci-build.json` and is reused without
//! running make.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::process::Command;

use crate::arch::Arch;
use crate::host::paths::WorkDir;
use crate::host::process::{self, CommandError, Limits};
use crate::kernel::apply;
use crate::kernel::kconfig::{self, Mismatch};
use crate::kernel::sandbox;
use crate::kernel::tree::{self, SourceTree, TreeError};
use crate::kernel::warnings;
use crate::series::Series;

/// The fragments shipped in kernels/, embedded so that the default run works
/// from any directory.
pub const MM_FRAGMENT: (&str, &str) = ("mm.config", include_str!("../../../../kernels/mm.config"));
pub const X86_64_FRAGMENT: (&str, &str) = (
    "x86_64.config",
    include_str!("../../../../kernels/x86_64.config"),
);
pub const ARM64_FRAGMENT: (&str, &str) = (
    "arm64.config",
    include_str!("../../../../kernels/arm64.config"),
);

/// A config fragment: a name for messages and its text.
#[derive(Clone, Debug)]
pub struct Fragment {
    pub name: String,
    pub text: String,
}

impl Fragment {
    pub fn read(path: &Path) -> std::io::Result<Fragment> {
        Ok(Fragment {
            name: path.display().to_string(),
            text: std::fs::read_to_string(path)?,
        })
    }
}

/// The bundled fragments for `arch`: kernels/mm.config + kernels/<arch>.config.
pub fn default_fragments(arch: Arch) -> Vec<Fragment> {
    let arch_fragment = match arch {
        Arch::X86_64 => X86_64_FRAGMENT,
        Arch::Arm64 => ARM64_FRAGMENT,
    };
    [MM_FRAGMENT, arch_fragment]
        .into_iter()
        .map(|(name, text)| Fragment {
            name: format!("kernels/{name}"),
            text: text.to_string(),
        })
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0} not found: install it with ./mmci-setup")]
    MissingTool(String),
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("kernel build step failed")]
    Step(#[from] CommandError),
    #[error("{0}")]
    Apply(apply::ApplyFailure),
    #[error("applying the series: {0}")]
    ApplyIo(String),
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("keeping the decoding scripts")]
    Decode(#[from] super::decode::DecodeError),
    #[error("the final .config lacks {} requested option(s):\n  {}", .0.len(), .0.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("\n  "))]
    Config(Vec<Mismatch>),
    #[error("refusing to build {what} without the build sandbox: {why}. Fix: {fix}. Or pass --unsandboxed-builds to build it anyway, with this user's full access to the machine and the network")]
    NoSandbox {
        what: String,
        why: String,
        fix: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildRequest {
    pub arch: Arch,
    pub fragments: Vec<Fragment>,
    /// make -j.
    pub jobs: usize,
    /// Whether the build may run where the sandbox cannot.
    pub sandbox: SandboxPolicy,
    /// Compile through ccache when it is installed (`MMCI_CCACHE=1`, read
    /// by the command line).
    pub ccache: bool,
}

/// A built kernel.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct KernelBuild {
    pub arch: Arch,
    pub key: String,
    /// The artifacts: image, .config, System.map, build.log.
    pub dir: PathBuf,
    pub image: PathBuf,
    /// `make kernelrelease`.
    pub release: String,
    /// The base tree's commit.
    pub tree_commit: String,
    /// The series applied on it, if any.
    pub series_hash: Option<String>,
    /// HEAD after applying the series (reproducible: pinned committer).
    pub head_commit: String,
    pub compiler: String,
    /// The build ran in the sandbox (see [`sandbox`]).
    pub sandboxed: bool,
    /// ccache was used.
    pub ccache: bool,
    /// Compiler warnings of this tree in this configuration (see [`crate::kernel::warnings`]).
    pub warnings: Vec<String>,
    /// Wall time of the build that produced it.
    pub build_seconds: f64,
    /// This call found it in the cache.
    #[serde(default)]
    pub cached: bool,
    /// sha256 of each artifact kept in `dir` (file name -> hex), checked
    /// before a cached build is used: a kernel that changed after its
    /// build (a CI cache restored from elsewhere, a disk error) is built
    /// again, not booted as what this key names. A stamp without them
    /// (written before they were kept) is built again too.
    #[serde(default)]
    pub digests: std::collections::BTreeMap<String, String>,
}

/// The cache key: everything that changes the kernel we get.
pub fn cache_key(
    tree_commit: &str,
    series_hash: Option<&str>,
    arch: Arch,
    compiler: &str,
    fragments: &[Fragment],
) -> String {
    let mut h = Sha256::new();
    h.update(b"mmci-build-v2\0");
    for part in [
        tree_commit,
        series_hash.unwrap_or("-"),
        arch.name(),
        compiler,
    ] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    for f in fragments {
        // The name is for messages only: renaming a fragment keeps the key.
        h.update(f.text.as_bytes());
        h.update(b"\0");
    }
    hex::encode(h.finalize())
}

/// The key of an object directory: the configuration without the sources,
/// so that every variant of one tree shares its objects. "objs-2": object
/// dirs carry a warnings ledger since layout 2, which is only complete if
/// the dir's first build was a cold one.
pub fn config_key(arch: Arch, compiler: &str, fragments: &[Fragment]) -> String {
    cache_key("objs-2", None, arch, compiler, fragments)
}

/// The object dir trusted builds of `tree_name` in this configuration share.
pub fn object_dir(
    work: &WorkDir,
    tree_name: &str,
    arch: Arch,
    compiler: &str,
    fragments: &[Fragment],
) -> PathBuf {
    work.objs().join(format!(
        "{tree_name}-{}",
        configuration_slot(arch, compiler, fragments)
    ))
}

/// `{arch}-{config key}`: names a configuration's object dir (after the
/// tree's name) and the checkout its builds run in, so that the two pair one
/// to one.
fn configuration_slot(arch: Arch, compiler: &str, fragments: &[Fragment]) -> String {
    format!(
        "{}-{}",
        arch.name(),
        &config_key(arch, compiler, fragments)[..16]
    )
}

/// First line of `<compiler> --version`.
pub async fn compiler_version(compiler: &str) -> Result<String, BuildError> {
    let out = process::output(
        Command::new(compiler).arg("--version"),
        "compiler --version",
        Limits::QUICK,
    )
    .await
    .map_err(|_| BuildError::MissingTool(compiler.to_string()))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}

/// The make command line for a step.
pub fn make_args(
    arch: Arch,
    out_dir: &Path,
    jobs: Option<usize>,
    ccache: bool,
    targets: &[&str],
) -> Vec<String> {
    let mut args = vec![
        format!("ARCH={}", arch.kernel_arch()),
        format!("O={}", out_dir.display()),
    ];
    if let Some(prefix) = arch.cross_compile() {
        args.push(format!("CROSS_COMPILE={prefix}"));
    }
    if ccache {
        args.push(format!("CC=ccache {}", arch.compiler()));
    }
    if let Some(j) = jobs {
        args.push(format!("-j{j}"));
    }
    args.extend(targets.iter().map(|t| t.to_string()));
    args
}

mod artifacts;
mod policy;
mod step;

use artifacts::{copy_capped, file_digest, log_tail, read_stamp, STAMP};
use artifacts::{MAX_IMAGE_BYTES, MAX_TEXT_ARTIFACT_BYTES};
pub use policy::SandboxPolicy;

pub use step::sandbox_available;
use step::Step;

/// The make target and the image file a guest boots, for `arch` in the
/// configuration `config` (the final .config, parsed). An x86_64 KASAN
/// kernel boots from bzImage: under QEMU its vmlinux (the PVH entry the
/// others use) reset before printing anything, on 6.12 (measured), while
/// its bzImage booted and ran scenario A.
pub fn boot_image(
    arch: Arch,
    config: &std::collections::BTreeMap<String, String>,
) -> (&'static str, &'static str) {
    let kasan = config.get("CONFIG_KASAN").is_some_and(|v| v == "y");
    match arch {
        Arch::X86_64 if kasan => ("bzImage", "arch/x86/boot/bzImage"),
        _ => arch.image_target(),
    }
}

/// The checkout the builds of `tree` in `req`'s configuration run in.
pub async fn checkout_dir(
    tree: &SourceTree,
    req: &BuildRequest,
    work: &WorkDir,
) -> Result<PathBuf, BuildError> {
    let compiler = compiler_version(&req.arch.compiler()).await?;
    let slot = configuration_slot(req.arch, &compiler, &req.fragments);
    Ok(tree::checkout_path(tree, &slot, work))
}

/// Builds (or finds in the cache) a kernel of `tree` with `series` applied.
pub async fn build_kernel(
    tree: &SourceTree,
    series: Option<&Series>,
    req: &BuildRequest,
    work: &WorkDir,
) -> Result<KernelBuild, BuildError> {
    let compiler = compiler_version(&req.arch.compiler()).await?;
    let series_hash = series.map(|s| s.hash.clone());
    let key = cache_key(
        &tree.commit,
        series_hash.as_deref(),
        req.arch,
        &compiler,
        &req.fragments,
    );
    let dir = work.builds().join(format!("{}-{}", req.arch, &key[..16]));
    let _key_lock = process::lock_file(&work.locks(), &format!("build-{}", &key[..16]))
        .await
        .map_err(io_err(&work.locks()))?;
    if let Some(mut cached) = read_stamp(&dir) {
        cached.cached = true;
        return Ok(cached);
    }
    // Before any work: a build that may not run here fails now.
    let sandbox = match sandbox::probe().await {
        Ok(b) => Some(b),
        Err(e) if req.sandbox.allows_unsandboxed(series.is_some()) => {
            tracing::warn!(tree = %tree.name, reason = %e, "building without the sandbox");
            None
        }
        Err(e) => {
            let what = match series {
                Some(s) => format!("series {}", s.short_id()),
                None => format!("the fetched tree {}", tree.name),
            };
            return Err(BuildError::NoSandbox {
                what,
                why: e.why,
                fix: e.fix,
            });
        }
    };

    // One checkout per baseline object dir (tree, arch, configuration),
    // shared by every variant built on those objects, one build at a time.
    // Not one per tree and arch: a reset for one configuration gave the
    // files it rewrote the time of that configuration's build, which is
    // newer than another's objects, so that one's next build recompiled
    // whatever included them (1,125 files for a comment in mm/vmscan.c,
    // after a debug-flavour build had reset include/linux/mmzone.h).
    let base_objs = object_dir(work, &tree.name, req.arch, &compiler, &req.fragments);
    let shared = req.sandbox.writes_shared_objects(series.is_some());
    if series.is_some() && req.sandbox.trusted_base && !base_objs.join(".config").is_file() {
        build_baseline_first(tree, req, work).await;
    }
    let slot = configuration_slot(req.arch, &compiler, &req.fragments);
    let _slot_lock = process::lock_file(&work.locks(), &format!("checkout-{}-{slot}", tree.name))
        .await
        .map_err(io_err(&work.locks()))?;
    let start = std::time::Instant::now();
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let log = dir.join("build.log");
    let _ = std::fs::remove_file(&log);

    let checkout = tree::prepare_checkout(tree, &slot, work, &log, Some(&base_objs)).await?;
    // The commits git am makes stay in the build's own repository (see
    // apply's module comment): the checkout's HEAD stays at the base.
    let head_commit = match series {
        Some(series) => {
            let scratch = dir.join("patches");
            apply::apply(&checkout, series, &scratch, &log)
                .await
                .map_err(|e| match e {
                    apply::ApplyError::DoesNotApply(f) => BuildError::Apply(f),
                    other => BuildError::ApplyIo(other.to_string()),
                })?
                .head
        }
        None => tree::head(&checkout).await?,
    };

    // A series is untrusted, and so is a base no operator configured (a
    // series' base-commit:): its Makefiles run with write access to the
    // object dir. It gets a private copy of the baseline's, so that nothing
    // it plants there is linked into a later trusted build; the copy keeps
    // mtimes, so its build stays incremental. Removed after the build (the
    // kernel is cached by its key; the objects are not needed again).
    let objs = if shared {
        base_objs.clone()
    } else {
        let what = match &series_hash {
            Some(hash) => format!("series-{}", &hash[..hash.len().min(16)]),
            None => format!("base-{}", &tree.commit[..tree.commit.len().min(16)]),
        };
        let private = work.objs().join(format!(
            "{}.{what}",
            base_objs.file_name().expect("named").to_string_lossy(),
        ));
        seed_object_dir(&base_objs, &private, &log).await?;
        private
    };
    let _private_objs = (!shared).then(|| crate::host::fs::RemoveDirOnDrop(objs.clone()));
    std::fs::create_dir_all(&objs).map_err(io_err(&objs))?;
    // ccache is opt-in (MMCI_CCACHE=1): base and patched builds already share
    // one object dir, and on a cold cache every miss runs the preprocessor
    // and the compiler, which made cold builds about 40% slower here
    // (`mmci bench build`).
    let ccache = req.ccache && crate::host::tools::on_path("ccache").is_some();
    let ccache_dir = work.ccache();
    if ccache {
        std::fs::create_dir_all(&ccache_dir).map_err(io_err(&ccache_dir))?;
    }
    // Nor may a series, a base a series named or a fetched tree write into
    // ccache's cache, which the tarball's trusted builds read.
    let ccache_read_only = ccache && req.sandbox.ccache_read_only(series.is_some());
    // The fragments, written by us where the build cannot write (not in
    // the object dir, where a build could have planted a symlink by then).
    let inputs = dir.join("fragments");
    std::fs::create_dir_all(&inputs).map_err(io_err(&inputs))?;
    let git_dir = match tree.path.join(".git") {
        d if d.is_dir() => d,
        _ => tree.path.clone(),
    };
    let step = Step {
        checkout: &checkout,
        git_dir: Some(&git_dir),
        inputs: &inputs,
        objs: &objs,
        ccache_dir: ccache.then_some(ccache_dir.as_path()),
        ccache_read_only,
        sandbox,
        log: &log,
    };
    let make_step = |jobs, targets: &[&str]| make_args(req.arch, &objs, jobs, ccache, targets);

    // The configuration: tinyconfig, our fragments merged over it (-m: merge
    // only), olddefconfig to resolve dependencies, then every request checked.
    // An object dir keeps its .config: its name already says which fragments.
    let config_path = objs.join(".config");
    let mut requests = Vec::new();
    for f in &req.fragments {
        requests.extend(kconfig::parse_fragment(&f.text, &f.name));
    }
    if !config_path.is_file() {
        let mut args = vec![
            "-m".to_string(),
            "-O".to_string(),
            objs.display().to_string(),
        ];
        args.push(config_path.display().to_string());
        for (i, f) in req.fragments.iter().enumerate() {
            let path = inputs.join(format!("{i:02}.config"));
            std::fs::write(&path, &f.text).map_err(io_err(&path))?;
            args.push(path.display().to_string());
        }
        step.run("make", make_step(None, &["tinyconfig"]), "make tinyconfig")
            .await?;
        // In the object dir: merge_config.sh makes its temporary files in
        // its working directory, and the checkout is read-only.
        let script = checkout.join("scripts/kconfig/merge_config.sh");
        let mut merge = step.command_in(
            &objs,
            &script.display().to_string(),
            args,
            &[("ARCH", req.arch.kernel_arch())],
        );
        process::run_logged(&mut merge, &log, "merge_config.sh").await?;
    }
    step.run(
        "make",
        make_step(None, &["olddefconfig"]),
        "make olddefconfig",
    )
    .await?;
    // Everything read back from the object dir is read without following
    // a symlink the build may have put there (see sandbox::open_beneath).
    let config =
        sandbox::read_beneath(&objs, Path::new(".config")).map_err(io_err(&config_path))?;
    let options = kconfig::parse_config(&config);
    let mismatches = kconfig::check(&options, &requests);
    if !mismatches.is_empty() {
        // Do not keep a config that fails the check for the next build.
        let _ = std::fs::remove_file(&config_path);
        return Err(BuildError::Config(mismatches));
    }

    let (target, image_rel) = boot_image(req.arch, &options);
    if shared {
        // The baseline's objects are (re)made from the base's files now.
        super::mtime::mark_built_from(&objs, &tree.commit).map_err(io_err(&objs))?;
    }
    step.run(
        "make",
        make_step(Some(req.jobs), &[target]),
        &format!("make {target}"),
    )
    .await?;
    // What `make kernelrelease` prints, without another pass through the
    // Makefiles (a few seconds on 2 cores).
    let release = match sandbox::read_beneath(&objs, Path::new("include/config/kernel.release")) {
        Ok(r) => r.trim().to_string(),
        Err(_) => {
            let out = process::output(
                &mut step.command("make", make_step(None, &["-s", "kernelrelease"])),
                "make kernelrelease",
                Limits::LOCAL,
            )
            .await?;
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };

    // The last make ran the series' Makefiles, which may have rewritten
    // .config after the check above: checked again, and the copy kept is
    // the text checked.
    let final_config =
        sandbox::read_beneath(&objs, Path::new(".config")).map_err(io_err(&config_path))?;
    if final_config != config {
        let mismatches = kconfig::check(&kconfig::parse_config(&final_config), &requests);
        if !mismatches.is_empty() {
            let _ = std::fs::remove_file(&config_path);
            return Err(BuildError::Config(mismatches));
        }
        tracing::warn!(objs = %objs.display(), "the build changed .config after olddefconfig; the requested options still hold");
    }
    let kept_config = dir.join("config");
    crate::host::fs::write_atomic(&kept_config, final_config.as_bytes())
        .map_err(io_err(&kept_config))?;

    // Keep the artifacts, not the objects.
    let image_name = Path::new(image_rel).file_name().expect("image has a name");
    let mut keep = vec![
        (Path::new(image_rel), dir.join(image_name), MAX_IMAGE_BYTES),
        (
            Path::new("System.map"),
            dir.join("System.map"),
            MAX_TEXT_ARTIFACT_BYTES,
        ),
    ];
    // With debug info, what file:line in call traces needs (see
    // crate::kernel::decode): the vmlinux (arm64 boots Image) and the
    // tree's decoding scripts.
    let debug_info = super::decode::has_debug_info(&config);
    if debug_info && image_name != super::decode::VMLINUX {
        keep.push((
            Path::new(super::decode::VMLINUX),
            dir.join(super::decode::VMLINUX),
            MAX_IMAGE_BYTES,
        ));
    }
    for (from, to, cap) in &keep {
        copy_capped(&objs, from, to, *cap).map_err(io_err(&objs.join(from)))?;
    }
    let mut digests = std::collections::BTreeMap::new();
    for to in keep
        .iter()
        .map(|(_, to, _)| to.as_path())
        .chain([kept_config.as_path()])
    {
        let name = to
            .file_name()
            .expect("named")
            .to_string_lossy()
            .into_owned();
        digests.insert(name, file_digest(to).map_err(io_err(to))?);
    }
    if debug_info {
        super::decode::keep_scripts(&tree.path, &tree.commit, &dir).await?;
    }
    let log_text = log_tail(&log);
    // The object dir's ledger knows the warnings of files this incremental
    // build did not recompile (see crate::kernel::warnings). A series'
    // private copy is the build's to rewrite: its ledger is the baseline's
    // (the copy's origin), and is not written back (the copy is removed).
    let ledger_dir = if shared { &objs } else { &base_objs };
    let mut ledger = read_ledger(ledger_dir);
    warnings::update(&mut ledger, &log_text, &checkout);
    if shared {
        warnings::write_ledger(&objs, &ledger).map_err(io_err(&objs))?;
    }
    let build = KernelBuild {
        arch: req.arch,
        key,
        image: dir.join(image_name),
        dir: dir.clone(),
        release,
        tree_commit: tree.commit.clone(),
        series_hash,
        head_commit,
        compiler,
        sandboxed: sandbox.is_some(),
        ccache,
        warnings: warnings::all(&ledger),
        build_seconds: start.elapsed().as_secs_f64(),
        cached: false,
        digests,
    };
    let stamp = dir.join(STAMP);
    let tmp = dir.join(format!("{STAMP}.tmp"));
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(&build).expect("serializable"),
    )
    .map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, &stamp).map_err(io_err(&stamp))?;
    Ok(build)
}

/// A series is about to be built in a configuration whose baseline objects
/// do not exist yet: builds the tree alone first (cached like any base
/// kernel), so that the series' build is incremental over it. A series
/// built first compiled the whole tree into its private copy, which is
/// thrown away, and the base kernel every comparison also needs compiled it
/// all again: on a cold CI run, a one-file series took 762 s where 17 s
/// after its base would do. If the tree alone does not build, the series
/// is still built, from scratch (it may be what fixes the build).
async fn build_baseline_first(tree: &SourceTree, req: &BuildRequest, work: &WorkDir) {
    tracing::info!(tree = %tree.name, "no baseline objects in this configuration yet: the tree alone first (built, or found cached)");
    if let Err(e) = Box::pin(build_kernel(tree, None, req, work)).await {
        tracing::warn!(tree = %tree.name, error = %e, "the tree alone did not build: the series builds from scratch");
    }
}

/// Makes `private` a copy of `base` (if `base` has been configured), with
/// mtimes, so that make rebuilds only what the series changes. Reflinks
/// where the filesystem has them (btrfs, xfs): then the copy is nearly free.
async fn seed_object_dir(base: &Path, private: &Path, log: &Path) -> Result<(), BuildError> {
    if private.exists() {
        std::fs::remove_dir_all(private).map_err(io_err(private))?;
    }
    if !base.join(".config").is_file() {
        // No baseline built yet: the series builds from scratch.
        return std::fs::create_dir_all(private).map_err(io_err(private));
    }
    let mut cp = Command::new("cp");
    cp.args(["-a", "--reflink=auto"]).arg(base).arg(private);
    process::run_logged_with(
        &mut cp,
        log,
        "cp -a (seeding the object dir)",
        Limits::LOCAL,
    )
    .await?;
    let tools = private.join("tools");
    super::mtime::repoint_cmd_files(&tools, base, private).map_err(io_err(&tools))?;
    Ok(())
}

/// The warnings ledger of `objs`, not through a symlink.
fn read_ledger(objs: &Path) -> warnings::Ledger {
    sandbox::read_beneath(objs, Path::new(warnings::LEDGER_FILE))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kasan_kernels_boot_from_bzimage_on_x86_64_only() {
        let kasan = "CONFIG_X86_64=y\nCONFIG_KASAN=y\nCONFIG_KASAN_GENERIC=y\n";
        let plain = "CONFIG_X86_64=y\n# CONFIG_KASAN is not set\n";
        for (arch, config, want) in [
            (Arch::X86_64, plain, ("vmlinux", "vmlinux")),
            (Arch::X86_64, "", ("vmlinux", "vmlinux")),
            (Arch::X86_64, kasan, ("bzImage", "arch/x86/boot/bzImage")),
            (Arch::Arm64, kasan, ("Image", "arch/arm64/boot/Image")),
            (Arch::Arm64, plain, ("Image", "arch/arm64/boot/Image")),
        ] {
            let parsed = kconfig::parse_config(config);
            assert_eq!(boot_image(arch, &parsed), want, "{arch:?} {config:?}");
        }
    }

    fn frag(text: &str) -> Fragment {
        Fragment {
            name: "f".into(),
            text: text.into(),
        }
    }

    #[test]
    fn key_changes_with_each_input() {
        let a = [frag("CONFIG_A=y\n")];
        let base = cache_key("abc", None, Arch::X86_64, "gcc 12", &a);
        assert_eq!(base, cache_key("abc", None, Arch::X86_64, "gcc 12", &a));
        for other in [
            cache_key("abd", None, Arch::X86_64, "gcc 12", &a),
            cache_key("abc", Some("5e71e5"), Arch::X86_64, "gcc 12", &a),
            cache_key("abc", None, Arch::Arm64, "gcc 12", &a),
            cache_key("abc", None, Arch::X86_64, "gcc 13", &a),
            cache_key("abc", None, Arch::X86_64, "gcc 12", &[frag("CONFIG_A=m\n")]),
        ] {
            assert_ne!(base, other);
        }
        // The object dir's key is the configuration alone (no tree commit,
        // no series): it changes with the arch, the compiler and the
        // fragments, and with nothing else.
        let objs = config_key(Arch::X86_64, "gcc 12", &a);
        assert_eq!(objs.len(), 64, "a sha256 in hex: {objs}");
        for other in [
            config_key(Arch::Arm64, "gcc 12", &a),
            config_key(Arch::X86_64, "gcc 13", &a),
            config_key(Arch::X86_64, "gcc 12", &[frag("CONFIG_A=m\n")]),
        ] {
            assert_ne!(objs, other);
        }
    }

    #[test]
    fn make_command_lines() {
        assert_eq!(
            make_args(
                Arch::X86_64,
                Path::new("/w/b"),
                Some(2),
                false,
                &["bzImage"]
            ),
            ["ARCH=x86_64", "O=/w/b", "-j2", "bzImage"]
        );
        assert_eq!(
            make_args(Arch::X86_64, Path::new("/w/b"), Some(2), true, &["vmlinux"]),
            ["ARCH=x86_64", "O=/w/b", "CC=ccache gcc", "-j2", "vmlinux"]
        );
        assert_eq!(
            make_args(Arch::Arm64, Path::new("/w/b"), None, false, &["tinyconfig"]),
            [
                "ARCH=arm64",
                "O=/w/b",
                "CROSS_COMPILE=aarch64-linux-gnu-",
                "tinyconfig"
            ]
        );
    }

    #[test]
    fn bundled_fragments_ask_for_event_counters() {
        let frags = default_fragments(Arch::X86_64);
        let requests: Vec<_> = frags
            .iter()
            .flat_map(|f| kconfig::parse_fragment(&f.text, &f.name))
            .collect();
        assert!(requests
            .iter()
            .any(|r| r.name == "CONFIG_VM_EVENT_COUNTERS" && r.value == "y"));
        assert!(requests
            .iter()
            .any(|r| r.name == "CONFIG_SERIAL_8250_CONSOLE"));
    }
}
