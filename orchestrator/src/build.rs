//! Kernel builds: tinyconfig + our fragments, merged with merge_config.sh and
//! checked option by option, then `make O=<dir>`, out of tree. Each build
//! directory is named by a cache key (tree commit, fragments, arch,
//! compiler); a finished build leaves `mmci-build.json` and is reused without
//! running make.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::process::Command;

use crate::arch::Arch;
use crate::kconfig::{self, Mismatch};
use crate::paths::WorkDir;
use crate::process::{self, CommandError};
use crate::tree::SourceTree;

/// The fragments shipped in kernels/, embedded so that the default run works
/// from any directory.
pub const MM_FRAGMENT: (&str, &str) = ("mm.config", include_str!("../../kernels/mm.config"));
pub const X86_64_FRAGMENT: (&str, &str) =
    ("x86_64.config", include_str!("../../kernels/x86_64.config"));

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
pub fn default_fragments(arch: Arch) -> Result<Vec<Fragment>, BuildError> {
    let arch_fragment = match arch {
        Arch::X86_64 => X86_64_FRAGMENT,
        Arch::Arm64 => return Err(BuildError::UnsupportedArch(arch)),
    };
    Ok([MM_FRAGMENT, arch_fragment]
        .into_iter()
        .map(|(name, text)| Fragment {
            name: format!("kernels/{name}"),
            text: text.to_string(),
        })
        .collect())
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("no bundled kernel config for {0} yet; pass --config-fragment files for it")]
    UnsupportedArch(Arch),
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
    #[error("the final .config lacks {} requested option(s):\n  {}", .0.len(), .0.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("\n  "))]
    Config(Vec<Mismatch>),
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
}

/// A built kernel.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct KernelBuild {
    pub arch: Arch,
    pub key: String,
    pub dir: PathBuf,
    pub image: PathBuf,
    /// `make kernelrelease`.
    pub release: String,
    pub tree_commit: String,
    pub compiler: String,
    /// Wall time of the build that produced it.
    pub build_seconds: f64,
    /// This call found it in the cache.
    #[serde(default)]
    pub cached: bool,
}

const STAMP: &str = "mmci-build.json";

/// The cache key: everything that changes the kernel we get.
pub fn cache_key(tree_commit: &str, arch: Arch, compiler: &str, fragments: &[Fragment]) -> String {
    let mut h = Sha256::new();
    h.update(b"mmci-build-v1\0");
    for part in [tree_commit, arch.name(), compiler] {
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

/// First line of `<compiler> --version`.
pub async fn compiler_version(compiler: &str) -> Result<String, BuildError> {
    let out = Command::new(compiler)
        .arg("--version")
        .output()
        .await
        .map_err(|_| BuildError::MissingTool(compiler.to_string()))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}

/// The make command line for a step, with reproducible-build variables.
pub fn make_args(arch: Arch, out_dir: &Path, jobs: Option<usize>, targets: &[&str]) -> Vec<String> {
    let mut args = vec![
        format!("ARCH={}", arch.kernel_arch()),
        format!("O={}", out_dir.display()),
    ];
    if let Some(prefix) = arch.cross_compile() {
        args.push(format!("CROSS_COMPILE={prefix}"));
    }
    if let Some(j) = jobs {
        args.push(format!("-j{j}"));
    }
    args.extend(targets.iter().map(|t| t.to_string()));
    args
}

fn make(tree: &SourceTree, args: Vec<String>) -> Command {
    let mut cmd = Command::new("make");
    cmd.current_dir(&tree.path)
        .args(args)
        .env("KBUILD_BUILD_TIMESTAMP", "2000-01-01 00:00:00 UTC")
        .env("KBUILD_BUILD_USER", "mmci")
        .env("KBUILD_BUILD_HOST", "mmci");
    cmd
}

/// Builds (or finds in the cache) a kernel of `tree` for `req`.
pub async fn build_kernel(
    tree: &SourceTree,
    req: &BuildRequest,
    work: &WorkDir,
) -> Result<KernelBuild, BuildError> {
    let compiler = compiler_version(&req.arch.compiler()).await?;
    let key = cache_key(&tree.commit, req.arch, &compiler, &req.fragments);
    let dir = work.builds().join(format!("{}-{}", req.arch, &key[..16]));
    let _lock = process::lock_file(&work.locks(), &format!("build-{}", &key[..16]))
        .await
        .map_err(io_err(&work.locks()))?;

    if let Some(mut cached) = read_stamp(&dir) {
        cached.cached = true;
        return Ok(cached);
    }
    let start = std::time::Instant::now();
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let log = dir.join("build.log");
    let _ = std::fs::remove_file(&log);

    // 1. tinyconfig, 2. merge our fragments (-m: merge only), 3. olddefconfig
    //    resolves dependencies, 4. check that every request survived.
    process::run_logged(
        &mut make(tree, make_args(req.arch, &dir, None, &["tinyconfig"])),
        &log,
        "make tinyconfig",
    )
    .await?;
    let frag_dir = dir.join("fragments");
    std::fs::create_dir_all(&frag_dir).map_err(io_err(&frag_dir))?;
    let mut frag_paths = Vec::new();
    let mut requests = Vec::new();
    for (i, f) in req.fragments.iter().enumerate() {
        let path = frag_dir.join(format!("{i:02}.config"));
        std::fs::write(&path, &f.text).map_err(io_err(&path))?;
        frag_paths.push(path);
        requests.extend(kconfig::parse_fragment(&f.text, &f.name));
    }
    let mut merge = Command::new(tree.path.join("scripts/kconfig/merge_config.sh"));
    merge
        .current_dir(&tree.path)
        .env("ARCH", req.arch.kernel_arch())
        .arg("-m")
        .arg("-O")
        .arg(&dir)
        .arg(dir.join(".config"))
        .args(&frag_paths);
    process::run_logged(&mut merge, &log, "merge_config.sh").await?;
    process::run_logged(
        &mut make(tree, make_args(req.arch, &dir, None, &["olddefconfig"])),
        &log,
        "make olddefconfig",
    )
    .await?;
    let config_path = dir.join(".config");
    let config = std::fs::read_to_string(&config_path).map_err(io_err(&config_path))?;
    let mismatches = kconfig::check(&kconfig::parse_config(&config), &requests);
    if !mismatches.is_empty() {
        return Err(BuildError::Config(mismatches));
    }

    let (target, image_rel) = req.arch.image_target();
    process::run_logged(
        &mut make(tree, make_args(req.arch, &dir, Some(req.jobs), &[target])),
        &log,
        &format!("make {target}"),
    )
    .await?;
    let out = make(
        tree,
        make_args(req.arch, &dir, None, &["-s", "kernelrelease"]),
    )
    .output()
    .await
    .map_err(io_err(&dir))?;
    let build = KernelBuild {
        arch: req.arch,
        key,
        image: dir.join(image_rel),
        dir: dir.clone(),
        release: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        tree_commit: tree.commit.clone(),
        compiler,
        build_seconds: start.elapsed().as_secs_f64(),
        cached: false,
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

fn read_stamp(dir: &Path) -> Option<KernelBuild> {
    let text = std::fs::read_to_string(dir.join(STAMP)).ok()?;
    let build: KernelBuild = serde_json::from_str(&text).ok()?;
    build.image.is_file().then_some(build)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(text: &str) -> Fragment {
        Fragment {
            name: "f".into(),
            text: text.into(),
        }
    }

    #[test]
    fn key_changes_with_each_input() {
        let base = cache_key("abc", Arch::X86_64, "gcc 12", &[frag("CONFIG_A=y\n")]);
        assert_eq!(
            base,
            cache_key("abc", Arch::X86_64, "gcc 12", &[frag("CONFIG_A=y\n")])
        );
        for other in [
            cache_key("abd", Arch::X86_64, "gcc 12", &[frag("CONFIG_A=y\n")]),
            cache_key("abc", Arch::Arm64, "gcc 12", &[frag("CONFIG_A=y\n")]),
            cache_key("abc", Arch::X86_64, "gcc 13", &[frag("CONFIG_A=y\n")]),
            cache_key("abc", Arch::X86_64, "gcc 12", &[frag("CONFIG_A=m\n")]),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn make_command_lines() {
        assert_eq!(
            make_args(Arch::X86_64, Path::new("/w/b"), Some(2), &["bzImage"]),
            ["ARCH=x86_64", "O=/w/b", "-j2", "bzImage"]
        );
        assert_eq!(
            make_args(Arch::Arm64, Path::new("/w/b"), None, &["tinyconfig"]),
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
        let frags = default_fragments(Arch::X86_64).unwrap();
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
