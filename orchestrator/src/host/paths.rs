//! Where mmci keeps its caches: imported trees, kernel builds, scratch space.
//! One work dir, configurable (`--work-dir`, `MMCI_WORK_DIR`), defaulting to
//! the user's cache dir (`~/.cache/mmci`).

use std::path::{Path, PathBuf};

/// Environment variable that overrides the default work dir.
pub const WORK_DIR_ENV: &str = "MMCI_WORK_DIR";

#[derive(Clone, Debug)]
pub struct WorkDir {
    root: PathBuf,
}

impl WorkDir {
    /// `explicit` (from the command line), else `MMCI_WORK_DIR`, else the cache dir.
    pub fn resolve(explicit: Option<&Path>) -> WorkDir {
        let root = explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(WORK_DIR_ENV).map(PathBuf::from))
            .or_else(|| dirs::cache_dir().map(|d| d.join("mmci")))
            .unwrap_or_else(|| PathBuf::from(".mmci-work"));
        WorkDir { root }
    }

    pub fn new(root: impl Into<PathBuf>) -> WorkDir {
        WorkDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Git repositories of kernel trees.
    pub fn trees(&self) -> PathBuf {
        self.root.join("trees")
    }

    /// Built kernels (image, .config, System.map, log), one per cache key.
    pub fn builds(&self) -> PathBuf {
        self.root.join("builds")
    }

    /// Checkouts (git worktrees) that builds run in: one per object dir
    /// (tree, arch, configuration), reused so that switching variants
    /// touches only the files that differ.
    pub fn checkouts(&self) -> PathBuf {
        self.root.join("checkouts")
    }

    /// Object directories (make O=), one per tree, arch and configuration:
    /// base and patched builds share one, so a patched build is incremental.
    pub fn objs(&self) -> PathBuf {
        self.root.join("objs")
    }

    /// ccache's cache, used when ccache is installed.
    pub fn ccache(&self) -> PathBuf {
        self.root.join("ccache")
    }

    /// Lock files that serialize imports and builds across mmci processes.
    pub fn locks(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// Per-run scratch files (disk images, sockets) that are not results.
    pub fn scratch(&self) -> PathBuf {
        self.root.join("scratch")
    }
}
