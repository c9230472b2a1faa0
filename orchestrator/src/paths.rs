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

    /// Kernel build directories (O=), one per cache key.
    pub fn builds(&self) -> PathBuf {
        self.root.join("builds")
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
