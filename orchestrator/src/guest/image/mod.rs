//! Guest images (`images/<name>/image.yaml`): real Debian userspace for the
//! `script` scenario. A recipe is resolved to package versions ([`resolve`]),
//! keyed by its content and those versions, built with mmdebstrap into a
//! read-only erofs file and cached in the work dir ([`build`]); [`show`]
//! says what one holds. Images are guest userspace: `guest::vm` boots
//! them as a read-only virtio disk (`mmci_record::IMAGE_DISK_SERIAL`), and
//! guest-init mounts that disk as the script's root.

pub mod build;
pub mod recipe;
pub mod resolve;
pub mod show;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use build::{ensure, BuildOptions, Built};
pub use recipe::{Recipe, RecipeError};
pub use resolve::Package;

use crate::host::process::GroupChild;

/// Version of the image layout and build procedure: part of every key.
pub const IMAGE_FORMAT: u32 = 1;

/// The image file inside an image's cache folder.
pub const IMAGE_FILE: &str = "image.erofs";
/// Its manifest beside it.
pub const MANIFEST_FILE: &str = "manifest.json";

/// What a built image is: written beside it, copied into run results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageManifest {
    pub format: u32,
    pub name: String,
    /// The recipe folder it was built from.
    pub recipe: PathBuf,
    /// Hash of the recipe's content (with its files) and the package list.
    pub key: String,
    pub suite: String,
    pub arch: String,
    /// Every installed package and its version (from the image's dpkg status).
    pub packages: Vec<Package>,
    pub size_bytes: u64,
    /// sha256 of the image file.
    pub sha256: String,
    pub built_unix: u64,
    /// Wall time of the build.
    pub build_s: f64,
}

impl ImageManifest {
    /// The short form kept in run results: no package list beyond the
    /// versions, which is what tells two runs' userspace apart.
    pub fn summary(&self) -> String {
        format!(
            "{} ({} packages, {:.1} MiB, key {})",
            self.name,
            self.packages.len(),
            self.size_bytes as f64 / 1048576.0,
            self.key
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(transparent)]
    Recipe(#[from] RecipeError),
    #[error("{}: {}package `{package}` is not in Debian {suite} (main): check its name with `apt-cache policy {package}` on a {suite} machine, or remove it", recipe.display(), line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    MissingPackage {
        recipe: PathBuf,
        line: Option<u64>,
        package: String,
        suite: String,
    },
    #[error("{what} failed:\n{detail}\nlog: {}", log.display())]
    Apt {
        what: String,
        detail: String,
        log: PathBuf,
    },
    #[error("{tool} not found: install it with ./mmci-setup (Debian package {package})")]
    MissingTool {
        tool: &'static str,
        package: &'static str,
    },
    #[error("{what} failed{}; log: {}", if *timed_out { " (timed out)" } else { "" }, log.display())]
    Command {
        what: String,
        timed_out: bool,
        log: PathBuf,
    },
    #[error("building an image needs root (mmdebstrap --mode=root creates device nodes and file owners); run mmci image build as root, e.g. in CI")]
    NotRoot,
    #[error("no built image of {name} in {dir}: build it with `mmci image build {name}`", dir = .dir.display())]
    NotBuilt { name: String, dir: PathBuf },
    #[error("{0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
}

/// Where built images and apt's state live in the work dir.
pub fn images_root(work: &crate::host::paths::WorkDir) -> PathBuf {
    work.root().join("images")
}

/// The images folder of this source tree (where `mmci image build NAME`
/// looks for NAME), unless `--images-dir` says otherwise: `./images` when
/// it exists, else the one mmci was built from.
pub fn default_recipes_dir() -> PathBuf {
    let here = PathBuf::from("images");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../images")
}

/// Runs `cmd` in its own process group with a timeout; its output goes to
/// `log` (appended) and is returned. Ok((success, output)).
pub(crate) async fn run_captured(
    cmd: &mut tokio::process::Command,
    log: &Path,
    what: &str,
    timeout: Duration,
) -> Result<(bool, String), ImageError> {
    use tokio::io::AsyncReadExt;
    let io = |e| ImageError::Io(log.to_path_buf(), e);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env("LC_ALL", "C.UTF-8")
        .env("DEBIAN_FRONTEND", "noninteractive");
    let mut child = GroupChild::spawn(cmd).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ImageError::Command {
                what: format!("{what}: command not found"),
                timed_out: false,
                log: log.to_path_buf(),
            }
        } else {
            io(e)
        }
    })?;
    let mut out = child.child_mut().stdout.take().expect("piped");
    let mut err = child.child_mut().stderr.take().expect("piped");
    let read_out = tokio::spawn(async move {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b).await;
        b
    });
    let read_err = tokio::spawn(async move {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b).await;
        b
    });
    let fin = child
        .wait_timeout(timeout, Duration::from_secs(10))
        .await
        .map_err(io)?;
    let mut text = String::from_utf8_lossy(&read_out.await.unwrap_or_default()).into_owned();
    text.push_str(&String::from_utf8_lossy(
        &read_err.await.unwrap_or_default(),
    ));
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io)?;
        let _ = writeln!(f, "==> {what}\n{text}");
    }
    if fin.timed_out {
        return Err(ImageError::Command {
            what: what.to_string(),
            timed_out: true,
            log: log.to_path_buf(),
        });
    }
    Ok((fin.status.success(), text))
}
