//! Getting a kernel to boot: a given image, or the bundled tree built with
//! the bundled (or given) config fragments.

pub mod apply;
pub mod build;
pub mod decode;
pub mod flavour;
pub mod kconfig;
pub mod mtime;
pub mod sandbox;
pub mod tree;
pub mod warnings;

use std::path::PathBuf;

use crate::arch::Arch;
use crate::host::paths::WorkDir;
use crate::series::{self, SeriesError, SeriesSpec};
use build::{BuildError, BuildRequest, Fragment};
pub use flavour::Flavour;
use serde::{Deserialize, Serialize};
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
    /// The series' patchwork identity (instance, series and patch ids) when
    /// it was read from patchwork: where `mmci post patchwork` puts checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patchwork: Option<series::patchwork::Origin>,
    /// The flavour's fragments were merged over the kernel's own (absent:
    /// default, as every kernel before flavours).
    #[serde(default, skip_serializing_if = "Flavour::is_default")]
    pub flavour: Flavour,
    /// The base as anyone can fetch it: the tarball's release, or the
    /// tree's URL and commit (absent for a given image, and in records
    /// written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<tree::Upstream>,
    /// The compiler that built it (the .config's CONFIG_CC_VERSION_TEXT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// The transparent hugepage mode it boots with ([`kconfig::thp_mode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<String>,
    /// The build's final .config on this host (the results dir keeps a
    /// copy, see results/kernels.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
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
    #[error("choosing the series' base")]
    Base(#[from] series::base::BaseError),
    #[error("--base-cascade {git_ref}: no such branch, tag or commit in tree {tree}")]
    BaseRef { git_ref: String, tree: String },
}

/// Where preparing a kernel stopped, as far as its error tells: kept with
/// a kernel that failed in a results dir, so that a reader can tell a
/// series that did not apply from a build that failed after applying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedStep {
    /// The series did not apply: on its base (`git am`), or on any base of
    /// the cascade.
    Apply,
    /// The series (if any) applied, then the build failed: the
    /// configuration, make, the decoding scripts.
    Build,
}

impl KernelError {
    /// The step that failed; None for a failure before any series was
    /// applied (the tree, the series' fetch, a tool, the sandbox) or one
    /// that does not say where it happened.
    pub fn failed_step(&self) -> Option<FailedStep> {
        match self {
            KernelError::Build(BuildError::Apply(_))
            | KernelError::Base(series::base::BaseError::NoBase { .. }) => Some(FailedStep::Apply),
            // Each of these comes after `git am` in build::build_kernel.
            KernelError::Build(
                BuildError::Step(_) | BuildError::Config(_) | BuildError::Decode(_),
            ) => Some(FailedStep::Build),
            _ => None,
        }
    }
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
    /// Fragments merged after those (the bundled or the given ones).
    pub flavour: Flavour,
    /// A patch series to apply on the tree before building.
    pub series: Option<SeriesSpec>,
    /// `--revision N`: this revision of the series instead of the newest.
    pub series_revision: Option<u32>,
    /// `--patches 1`: only these patches of the series.
    pub series_patches: Option<series::pick::PatchPick>,
    /// `--prerequisites MBOX`: where the patches the series'
    /// `prerequisite-patch-id:` trailers name may be, besides its thread.
    pub prerequisites: Vec<PathBuf>,
    /// Further bases to try, in order, when the series has no usable
    /// `base-commit:` and does not apply on the configured ref: refs of the
    /// tree, or other trees as `URL#REF` ([`tree::CascadeEntry`]).
    pub base_cascade: Vec<String>,
    /// The base already chosen for this kernel (a base variant follows the
    /// base its series variant was applied on).
    pub pinned_base: Option<series::base::BaseChoice>,
    /// `series` as it was read when its base was chosen: the build applies
    /// these very mails instead of fetching the thread a second time (which
    /// could bring a newer revision than the one the base was chosen for).
    pub loaded_series: Option<LoadedSeries>,
    pub jobs: usize,
    /// `--unsandboxed-builds`: build a series or a fetched tree even where
    /// the build sandbox cannot run (see [`build::Trust`]).
    pub unsandboxed_builds: bool,
    /// Compile through ccache (`MMCI_CCACHE=1`).
    pub ccache: bool,
}

/// A series as read from its source, with its patchwork identity when it
/// came from patchwork.
#[derive(Clone, Debug)]
pub struct LoadedSeries {
    pub series: series::Series,
    pub origin: Option<series::patchwork::Origin>,
}

impl KernelSource {
    pub fn bundled() -> KernelSource {
        KernelSource {
            image: None,
            tarball: PathBuf::from(tree::BUNDLED_TARBALL),
            tree: None,
            fragments: vec![],
            flavour: Flavour::Default,
            series: None,
            series_revision: None,
            series_patches: None,
            prerequisites: vec![],
            base_cascade: vec![],
            pinned_base: None,
            loaded_series: None,
            jobs: crate::host::facts::cores().unwrap_or(2),
            unsandboxed_builds: false,
            ccache: false,
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
            patchwork: None,
            flavour: Flavour::Default,
            upstream: None,
            compiler: None,
            thp: None,
            config: None,
        });
    }
    let mut fragments = if source.fragments.is_empty() {
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
    // After the kernel's own: a flavour's options win where both set one.
    // Nothing for the default flavour, whose cache key stays the one of a
    // kernel without flavours.
    fragments.extend(source.flavour.fragments());
    // Read the series first: a bad series should fail before any build.
    let (mut series, patchwork) = match read_series(source, work).await? {
        Some(l) => (Some(l.series), l.origin),
        None => (None, None),
    };
    let mut tree = match &source.tree {
        Some(spec) => tree::fetch_tree(spec, work).await?,
        None => tree::import_tarball(&source.tarball, work).await?,
    };
    let imported = tree.commit.clone();
    let chosen = match (&source.pinned_base, &mut series) {
        (Some(pinned), _) => Some(pinned.clone()),
        (None, Some(s)) => Some(choose_base(source, &tree, s, work).await?),
        (None, None) => None,
    };
    let chosen_name = chosen.as_ref().map(|c| c.name.clone());
    // The tree's own tip (no series, no pinned base) is what the operator
    // configured; a chosen base is trusted only when it is such a tip.
    let trusted_base = chosen.as_ref().is_none_or(|c| c.trusted);
    if let Some(c) = chosen {
        tracing::info!(base = %c.name, commit = %c.commit, how = %c.how, "series base");
        tree.commit = c.commit.clone();
        if let Some(s) = &mut series {
            s.base = Some(c);
        }
    }
    let req = BuildRequest {
        arch,
        fragments,
        jobs: source.jobs,
        sandbox: build::SandboxPolicy {
            operator_tarball: source.tree.is_none(),
            trusted_base,
            allow_unsandboxed: source.unsandboxed_builds,
        },
        ccache: source.ccache,
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
    let upstream = tree::upstream(
        source.tree.as_ref(),
        &tree,
        &imported,
        chosen_name.as_deref(),
    )
    .await;
    // The .config the build kept: the compiler it names is the one make
    // ran, and its THP choice the mode every guest booted with.
    let config_path = built.dir.join("config");
    let config = std::fs::read_to_string(&config_path)
        .ok()
        .map(|t| kconfig::parse_config(&t));
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
        patchwork,
        flavour: source.flavour,
        upstream: Some(upstream),
        compiler: Some(
            config
                .as_ref()
                .and_then(kconfig::compiler)
                .unwrap_or(built.compiler),
        ),
        thp: config.as_ref().map(kconfig::thp_mode),
        config: config.is_some().then_some(config_path),
    })
}

/// The series of `source`: the one already read when its base was pinned,
/// else read (fetched) now; `None` without a series.
pub async fn read_series(
    source: &KernelSource,
    work: &WorkDir,
) -> Result<Option<LoadedSeries>, SeriesError> {
    if let Some(l) = &source.loaded_series {
        return Ok(Some(l.clone()));
    }
    let Some(s) = &source.series else {
        return Ok(None);
    };
    let (series, origin) = series::load_source_with(
        s,
        &series::LoadOptions {
            revision: source.series_revision,
            prerequisites: source.prerequisites.clone(),
            patches: source.series_patches.clone(),
        },
        &series::fetch::Fetcher::default(),
        &work.root().join("series"),
    )
    .await?;
    Ok(Some(LoadedSeries { series, origin }))
}

/// The base of `series` in `tree` (see [`series::base`]): the configured
/// ref, then each `base_cascade` entry. Refs of the tree are resolved up
/// front (a mistyped one is an error before anything is tried); another
/// tree is fetched only when every base before it failed, since fetching
/// a mainline ref into the tree can cost gigabytes.
async fn choose_base(
    source: &KernelSource,
    tree: &tree::SourceTree,
    series: &series::Series,
    work: &WorkDir,
) -> Result<series::base::BaseChoice, KernelError> {
    let scratch = work
        .root()
        .join("series")
        .join(format!("base-check-{}", std::process::id()));
    let mut cands = vec![series::base::Candidate {
        name: source
            .tree
            .as_ref()
            .map_or_else(|| "bundled tree".to_string(), |t| t.git_ref.clone()),
        commit: tree.commit.clone(),
    }];
    let mut entries = Vec::new();
    for e in &source.base_cascade {
        let parsed = tree::CascadeEntry::parse(e).map_err(TreeError::from)?;
        let commit = match &parsed {
            tree::CascadeEntry::Ref(r) => {
                Some(tree::resolve_ref(&tree.path, r).await.ok_or_else(|| {
                    KernelError::BaseRef {
                        git_ref: r.clone(),
                        tree: tree.name.clone(),
                    }
                })?)
            }
            tree::CascadeEntry::Tree(_) => None,
        };
        // The entry names the base in reports: no credentials.
        entries.push((tree::CascadeEntry::shown(e), parsed, commit));
    }
    let mut entries = entries.into_iter().peekable();
    loop {
        // Every entry up to the next other tree costs nothing to try.
        while let Some((name, _, Some(commit))) = entries.next_if(|(_, _, c)| c.is_some()) {
            cands.push(series::base::Candidate { name, commit });
        }
        match series::base::choose(&tree.path, series, &cands, &scratch).await {
            Err(series::base::BaseError::NoBase { .. }) if entries.peek().is_some() => {
                let Some((name, tree::CascadeEntry::Tree(spec), _)) = entries.next() else {
                    unreachable!("refs were taken above")
                };
                let commit = tree::fetch_into(tree, &spec, work).await?;
                cands.push(series::base::Candidate { name, commit });
            }
            chosen => return Ok(chosen?),
        }
    }
}

/// Chooses the base of every series variant before any build, and pins the
/// variants without a series (the comparison's base kernels) on the same
/// tree to it: the base kernel is the commit the series is applied on. Each
/// series is read here once, and its build applies what was read. A
/// variant whose series cannot be read or placed is left without a pinned
/// base: its own build reports the error, and the other kernels still run.
pub async fn pin_bases(
    sources: &mut std::collections::BTreeMap<String, KernelSource>,
    work: &WorkDir,
) {
    let mut pins: Vec<(Option<tree::TreeSpec>, PathBuf, series::base::BaseChoice)> = Vec::new();
    for (name, s) in sources.iter_mut() {
        if s.series.is_none() || s.image.is_some() {
            continue;
        }
        // Read once: the build applies the very mails the base was chosen for.
        match read_series(s, work).await {
            Ok(loaded) => s.loaded_series = loaded,
            Err(e) => {
                tracing::warn!(variant = %name, error = %crate::host::error_chain(&e), "series not read ahead");
                continue;
            }
        }
        match pin_one(s, work).await {
            Ok(c) => {
                s.pinned_base = Some(c.clone());
                pins.push((s.tree.clone(), s.tarball.clone(), c));
            }
            Err(e) => {
                tracing::warn!(variant = %name, error = %crate::host::error_chain(&e), "series base not chosen ahead")
            }
        }
    }
    // Only an unambiguous base is followed: one series variant per tree.
    for s in sources.values_mut() {
        if s.series.is_some() || s.image.is_some() {
            continue;
        }
        let same: Vec<&series::base::BaseChoice> = pins
            .iter()
            .filter(|(t, tb, _)| *t == s.tree && *tb == s.tarball)
            .map(|(_, _, c)| c)
            .collect();
        if let [c] = same.as_slice() {
            s.pinned_base = Some(series::base::BaseChoice {
                name: c.name.clone(),
                commit: c.commit.clone(),
                how: format!("the base its series was applied on: {}", c.how),
                trusted: c.trusted,
            });
        }
    }
}

/// The base `series` would be applied on in `source`'s tree (for `mmci
/// series show --tree`).
pub async fn base_for(
    source: &KernelSource,
    series: &series::Series,
    work: &WorkDir,
) -> Result<series::base::BaseChoice, KernelError> {
    let tree = match &source.tree {
        Some(spec) => tree::fetch_tree(spec, work).await?,
        None => tree::import_tarball(&source.tarball, work).await?,
    };
    choose_base(source, &tree, series, work).await
}

/// The base of `s`'s series (read ahead by the caller).
async fn pin_one(
    s: &KernelSource,
    work: &WorkDir,
) -> Result<series::base::BaseChoice, KernelError> {
    let loaded = s.loaded_series.as_ref().expect("read by the caller");
    let tree = match &s.tree {
        Some(spec) => tree::fetch_tree(spec, work).await?,
        None => tree::import_tarball(&s.tarball, work).await?,
    };
    choose_base(s, &tree, &loaded.series, work).await
}
