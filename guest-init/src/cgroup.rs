//! The workloads' memory cgroups (cgroup v2).

use std::io;
use std::path::{Path, PathBuf};

pub const ROOT: &str = "/sys/fs/cgroup";

fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// memory.max's value: a size in MiB, or "max" for none.
pub fn memory_max_value(limit_mb: u64) -> String {
    if limit_mb == 0 {
        "max".to_string()
    } else {
        format!("{}", limit_mb << 20)
    }
}

/// Enables the memory controller for children of the root and creates
/// `name` with memory.max set.
pub fn create(name: &str, limit_mb: u64) -> io::Result<PathBuf> {
    let root = Path::new(ROOT);
    write(&root.join("cgroup.subtree_control"), "+memory")?;
    let dir = root.join(name);
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
    }
    write(&dir.join("memory.max"), &memory_max_value(limit_mb))?;
    Ok(dir)
}

/// Creates `name` under the cgroup `parent` (memory controller enabled for
/// the parent's children) with memory.max set.
pub fn create_child(parent: &Path, name: &str, limit_mb: u64) -> io::Result<PathBuf> {
    write(&parent.join("cgroup.subtree_control"), "+memory")?;
    let dir = parent.join(name);
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
    }
    write(&dir.join("memory.max"), &memory_max_value(limit_mb))?;
    Ok(dir)
}

/// Moves the calling process into the cgroup at `dir`.
pub fn enter(dir: &Path) -> io::Result<()> {
    write(&dir.join("cgroup.procs"), "0")
}

#[cfg(test)]
mod tests {
    #[test]
    fn memory_max() {
        assert_eq!(super::memory_max_value(0), "max");
        assert_eq!(super::memory_max_value(16), "16777216");
    }
}
