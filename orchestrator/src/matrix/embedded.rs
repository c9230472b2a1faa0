//! The default matrix and the series it names, both compiled in, so that
//! `mmci run` and `mmci matrix show` without `--matrix` work from any
//! directory and with a binary moved away from (or built from a deleted)
//! checkout. The matrix names its series by a path relative to itself
//! (`../kernels/series/...`); the embedded copies are written once to
//! `~/.cache/mmci/embedded/<hash>/`, and the matrix read with that folder
//! as its directory (each path named from the checkout's root), so the
//! binary always runs the series it was built with.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::file::MatrixFile;

/// `matrix/default.yaml`, compiled in: what `mmci run` runs when no
/// `--matrix` is given.
pub const DEFAULT_MATRIX: &str = include_str!("../../../matrix/default.yaml");

/// The files the default matrix's relative paths name, compiled in, by
/// their path from the checkout's root.
pub const DEFAULT_FILES: &[(&str, &[u8])] = &[(
    "kernels/series/mglru-isolation.mbox",
    include_bytes!("../../../kernels/series/mglru-isolation.mbox"),
)];

/// Where the embedded copies go: one folder per content, so that two
/// versions of mmci never share one.
fn extract_root(cache: &Path) -> PathBuf {
    let mut h = Sha256::new();
    for (path, bytes) in DEFAULT_FILES {
        h.update(path.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    let hash = hex::encode(h.finalize());
    cache.join("mmci").join("embedded").join(&hash[..16])
}

/// Writes the embedded files below `root` (those already there with the
/// same content are kept) and returns `root`.
pub fn extract(root: &Path) -> std::io::Result<PathBuf> {
    for (path, bytes) in DEFAULT_FILES {
        let dest = root.join(path);
        if std::fs::read(&dest).is_ok_and(|have| have == *bytes) {
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        crate::host::fs::write_atomic(&dest, bytes)?;
    }
    Ok(root.to_path_buf())
}

/// The default matrix as read, its files named from the checkout's root
/// (`../kernels/series/x.mbox` as `kernels/series/x.mbox`): it is read
/// with the extracted root as its directory.
pub fn default_file() -> Result<MatrixFile, String> {
    let mut m = super::file::parse(DEFAULT_MATRIX)?;
    for k in &mut m.kernels {
        if let Some(series) = &k.value.series {
            let from_root = series.strip_prefix("../").map_err(|_| {
                format!("series {}: not below the checkout's root", series.display())
            })?;
            if !DEFAULT_FILES.iter().any(|(p, _)| Path::new(p) == from_root) {
                return Err(format!(
                    "series {}: not embedded (add it to DEFAULT_FILES)",
                    series.display()
                ));
            }
            k.value.series = Some(from_root.to_path_buf());
        }
    }
    Ok(m)
}

/// Whether `root` has every file the default names, as embedded.
#[cfg(test)]
fn has_files(root: &Path) -> bool {
    DEFAULT_FILES
        .iter()
        .all(|(path, bytes)| std::fs::read(root.join(path)).is_ok_and(|have| have == *bytes))
}

/// Where the embedded default's files are: the extracted copy
/// in the cache dir ($XDG_CACHE_HOME or ~/.cache), else in the temp dir
/// when the cache dir cannot be written.
pub fn extracted_root() -> std::io::Result<PathBuf> {
    let temp = std::env::temp_dir();
    match dirs::cache_dir() {
        Some(cache) => extract(&extract_root(&cache)).or_else(|_| extract(&extract_root(&temp))),
        None => extract(&extract_root(&temp)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_names_only_embedded_files() {
        let m = default_file().unwrap();
        let named: Vec<_> = m
            .kernels
            .iter()
            .filter_map(|k| k.value.series.clone())
            .collect();
        assert!(!named.is_empty(), "the default names its series");
        for series in named {
            assert!(
                DEFAULT_FILES.iter().any(|(p, _)| Path::new(p) == series),
                "{}",
                series.display()
            );
        }
    }

    #[test]
    fn extracted_files_resolve_the_defaults_paths() {
        let t = tempfile::tempdir().unwrap();
        let root = extract_root(t.path());
        let dir = extract(&root).unwrap();
        assert!(has_files(&dir));
        // Twice is the same, and a damaged copy is rewritten.
        std::fs::write(root.join(DEFAULT_FILES[0].0), "x").unwrap();
        assert!(!has_files(&dir));
        assert_eq!(extract(&root).unwrap(), dir);
        assert!(has_files(&dir));
    }
}
