//! Getting a kernel to boot: a given image, or the bundled tree built with
//! the bundled (or given) config fragments.

pub mod build;
pub mod kconfig;
pub mod series;
pub mod tree;
pub mod warnings;

use std::path::PathBuf;

use crate::arch::Arch;
use crate::host::paths::WorkDir;
use build::{BuildError, BuildRequest, Fragment};
use serde::{Deserialize, Serialize};
use series::{SeriesError, SeriesSource};
use tree::TreeError;

/// The kernel a run booted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelInfo {
    pub image: PathBuf,
    /// From the build, or from the guest's own uname when the image was given.
    pub release: String,
    pub tree: Option<String>,
    pub tree_commit: Option<String>,
    pub build_key: Option<String>,
    /// Hash of the series applied on the tree, if any.
    #[serde(default)]
    pub series_hash: Option<String>,
    /// The commit built (the tree's, or HEAD after `git am`).
    #[serde(default)]
    pub head_commit: Option<String>,
    /// The build ran in bubblewrap.
    #[serde(default)]
    pub build_sandboxed: Option<bool>,
    /// Compiler warnings of the build (see build::warnings).
    #[serde(default)]
    pub build_warnings: Vec<String>,
    /// The series applied, with its thread (cover letter, authors, lists):
    /// what `mmci post` replies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<series::Series>,
}

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("kernel image {0} not found (--kernel): give the path of a bzImage/Image, or leave --kernel out to build the bundled tree")]
    MissingImage(PathBuf),
    #[error("config fragment {path} (--config-fragment)")]
    Fragment {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    Series(#[from] SeriesError),
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// Where the kernel comes from.
#[derive(Clone, Debug)]
pub struct KernelSource {
    /// A prebuilt image; skips the tree and the build.
    pub image: Option<PathBuf>,
    /// The tarball to import when building (the offline default tree).
    pub tarball: PathBuf,
    /// A tree by URL and ref instead of the tarball.
    pub tree: Option<tree::TreeSpec>,
    /// Config fragments replacing the bundled ones.
    pub fragments: Vec<PathBuf>,
    /// A patch series to apply on the tree before building.
    pub series: Option<SeriesSource>,
    pub jobs: usize,
}

impl KernelSource {
    pub fn bundled() -> KernelSource {
        KernelSource {
            image: None,
            tarball: PathBuf::from(tree::BUNDLED_TARBALL),
            tree: None,
            fragments: vec![],
            series: None,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// Resolves `source` to a bootable image, building it if needed.
pub async fn prepare(
    source: &KernelSource,
    arch: Arch,
    work: &WorkDir,
) -> Result<KernelInfo, KernelError> {
    if let Some(image) = &source.image {
        if !image.is_file() {
            return Err(KernelError::MissingImage(image.clone()));
        }
        return Ok(KernelInfo {
            image: image.clone(),
            release: "unknown (given image)".into(),
            tree: None,
            tree_commit: None,
            build_key: None,
            series_hash: None,
            head_commit: None,
            build_sandboxed: None,
            build_warnings: vec![],
            series: None,
        });
    }
    let fragments = if source.fragments.is_empty() {
        build::default_fragments(arch)
    } else {
        source
            .fragments
            .iter()
            .map(|p| {
                Fragment::read(p).map_err(|e| KernelError::Fragment {
                    path: p.clone(),
                    source: e,
                })
            })
            .collect::<Result<_, _>>()?
    };
    // Read the series first: a bad series should fail before any build.
    let series = match &source.series {
        Some(s) => Some(
            series::load(
                s,
                &series::fetch::Fetcher::default(),
                &work.root().join("series"),
            )
            .await?,
        ),
        None => None,
    };
    let tree = match &source.tree {
        Some(spec) => tree::fetch_tree(spec, work).await?,
        None => tree::import_tarball(&source.tarball, work).await?,
    };
    let req = BuildRequest {
        arch,
        fragments,
        jobs: source.jobs,
    };
    let built = build::build_kernel(&tree, series.as_ref(), &req, work).await?;
    tracing::info!(
        key = &built.key[..16],
        cached = built.cached,
        seconds = format!("{:.1}", built.build_seconds),
        sandboxed = built.sandboxed,
        ccache = built.ccache,
        warnings = built.warnings.len(),
        "kernel build"
    );
    Ok(KernelInfo {
        image: built.image,
        release: built.release,
        tree: Some(tree.name),
        tree_commit: Some(tree.commit),
        build_key: Some(built.key),
        series_hash: built.series_hash,
        head_commit: Some(built.head_commit),
        build_sandboxed: Some(built.sandboxed),
        build_warnings: built.warnings,
        series: series.as_ref().map(series::Series::metadata),
    })
}
